/* SPDX-License-Identifier: MIT */
/*
 * Snapshot files on disk: replacing one without ever exposing another
 * file to the write, and reading one without trusting it. Nothing here
 * knows the format (FORMAT.md) beyond "a fixed-size header says how big
 * the rest is", and nothing logs: a failure is a -errno and one line of
 * text in `why` (whylen bytes; NULL or 0 for none), for the caller to
 * report.
 */
#ifndef URA_SNAP_FILE_H
#define URA_SNAP_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * Makes `path` a regular file holding parts[0..nparts) end to end,
 * created or replacing the file there, durably: the bytes go to a
 * temporary file of this call's own in path's directory (O_TMPFILE,
 * else a random 25-byte name opened O_CREAT|O_EXCL|O_NOFOLLOW), which is
 * fsynced, renamed over path, and the directory fsynced. A crash at any
 * point leaves the old file or the new one at path. Only a regular file
 * is ever replaced: if path is a symlink (-ELOOP), a directory (-EISDIR)
 * or a device, FIFO or socket (-EINVAL), it is refused and left as it
 * is. Otherwise 0 or the -errno of the call that failed.
 *
 * What a kill -9 can leave in the directory: with O_TMPFILE, nothing,
 * unless it lands in the tens of microseconds of the linkat that names
 * the finished file just before the rename (linkat cannot replace a
 * name): then that complete file; with a named temporary, that file,
 * whole or not, from its creation to the rename. Either is named
 * ".urasnap.<16 hex digits>".
 * URA_SNAP_TMPFILE=0 in the environment forces the named temporary.
 */
int ura__snap_file_write(const char *path, const struct iovec *parts, int nparts,
			 char *why, size_t whylen);

/*
 * Judges a file by its first bytes: hdr holds n = min(hdrlen, size) of
 * them, size is the file's. Returns how many bytes of the file to read
 * (at most size), or a -errno to refuse it (saying why itself).
 */
typedef int64_t ura__snap_hdr_fn(void *ud, const unsigned char *hdr, size_t n,
				 uint64_t size);

/*
 * Reads path into *out (malloc'd, the caller frees it), *outlen bytes.
 * The file is opened O_NONBLOCK, so a FIFO cannot block the open, and
 * anything but a regular file is refused (-EINVAL) before a byte is read.
 * Then its first hdrlen bytes go to check, and only the size check
 * returns is allocated and read, if it is at most max_size (else
 * -ENOMEM, saying so). A file that shrinks while it is read is -EINVAL. -errno of
 * the failing call otherwise.
 */
int ura__snap_file_read(const char *path, size_t hdrlen, ura__snap_hdr_fn *check,
			void *ud, uint64_t max_size, unsigned char **out, size_t *outlen,
			char *why, size_t whylen);

#endif
