/* SPDX-License-Identifier: MIT */
/*
 * Snapshot files on disk (file.h): the durable replacement the snapshot
 * thread does, and the careful read restore does. kernel-notes/
 * durable-files.md says why each step is there and what it costs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "snap/file.h"
#include "util/alloc.h"

/* Tries at a free temporary name before giving up (-EEXIST): only a
 * directory someone fills with our prefix on purpose runs out. */
#define NAME_TRIES 64

static const char *errtext(int err)
{
	/* Not strerror(): it is not thread-safe for codes glibc lacks. */
	const char *d = strerrordesc_np(err < 0 ? -err : err);
	return d ? d : "unknown error";
}

static int fail(char *why, size_t whylen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int err, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* Short and independent of the target's name, so a target of NAME_MAX
 * bytes still has a temporary; random, so two snapshots (two systems, or
 * two processes) never pick the same one, and nobody can plant a file
 * at the next name in advance. O_EXCL settles any collision anyway. */
static void tmp_name(char name[32])
{
	uint64_t r;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
		/* No entropy yet (early boot): unique in this process by the
		 * counter, and unlikely to collide with another's. */
		static _Atomic uint64_t n;
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		r = ((uint64_t)getpid() << 40) ^ ((uint64_t)ts.tv_sec << 30) ^
		    (uint64_t)ts.tv_nsec ^
		    atomic_fetch_add_explicit(&n, 0x9e3779b97f4a7c15ull, memory_order_relaxed);
	}
	snprintf(name, 32, ".urasnap.%016" PRIx64, r);
}

static const char *kind(mode_t m)
{
	return S_ISLNK(m) ? "symbolic link" : S_ISDIR(m) ? "directory" : S_ISFIFO(m) ? "FIFO" :
	       S_ISSOCK(m) ? "socket" : S_ISCHR(m) ? "character device" :
	       S_ISBLK(m) ? "block device" : "special file";
}

static int write_all(int fd, const struct iovec *parts, int nparts)
{
	for (int i = 0; i < nparts; i++) {
		const unsigned char *p = parts[i].iov_base;
		size_t left = parts[i].iov_len;
		while (left) {
			ssize_t k = write(fd, p, left);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -errno;
			if (k == 0)
				return -EIO; /* a regular file never says this */
			p += k;
			left -= (size_t)k;
		}
	}
	return 0;
}

/* Where the environment asks for the named temporary. */
static int tmpfile_allowed(void)
{
	const char *e = getenv("URA_SNAP_TMPFILE");
	return !e || !*e || !(e[0] == '0' || !strcmp(e, "false") || !strcmp(e, "no") ||
			      !strcmp(e, "off"));
}

/* A new named temporary in dfd; its name in name. */
static int open_named(int dfd, char name[32], int *fd)
{
	for (int i = 0; i < NAME_TRIES; i++) {
		tmp_name(name);
		/* O_EXCL refuses any existing name, a symlink included (it
		 * is never followed); O_NOFOLLOW says so again for NFS before
		 * v3, where O_EXCL is not atomic. */
		*fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			     0644);
		if (*fd >= 0)
			return 0;
		if (errno != EEXIST && errno != ELOOP)
			break;
	}
	int rc = errno == ELOOP ? -EEXIST : -errno;
	name[0] = 0; /* not ours: never to be unlinked */
	return rc;
}

/* Gives the unnamed file fd a name in dfd (into name). The /proc link
 * with AT_SYMLINK_FOLLOW needs no privilege; AT_EMPTY_PATH, tried when
 * /proc is not mounted, needs CAP_DAC_READ_SEARCH. -ENOENT: neither
 * works here. */
static int link_tmpfile(int fd, int dfd, char name[32])
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	for (int i = 0; i < NAME_TRIES; i++) {
		tmp_name(name);
		if (linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno == ENOENT && linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	int rc = -errno;
	name[0] = 0; /* not ours: never to be unlinked */
	return rc;
}

int ura__snap_file_write(const char *path, const struct iovec *parts, int nparts,
			 char *why, size_t whylen)
{
	if (why && whylen)
		why[0] = 0;
	if (!path || !*path || nparts < 0 || (nparts && !parts))
		return fail(why, whylen, -EINVAL, "no path");
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	if (!*base)
		return fail(why, whylen, -EISDIR, "the path ends in '/': it names a directory");
	if (strlen(base) > NAME_MAX)
		return fail(why, whylen, -ENAMETOOLONG, "the file name is over %d bytes",
			    NAME_MAX);
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
			  : ura__strdup(".");
	if (!dir)
		return fail(why, whylen, -ENOMEM, "out of memory");
	/* Everything below is relative to this one directory, so a rename
	 * of a directory above it mid-way cannot split the steps. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		int rc = fail(why, whylen, -errno, "cannot open the directory %s: %s", dir,
			      errtext(errno));
		free(dir);
		return rc;
	}
	int rc = 0, fd = -1, named = !tmpfile_allowed();
	char name[32] = "";
	/* The rename would replace a symlink, a device node or a FIFO as
	 * readily as a file, and a directory cannot take a file's place.
	 * Only a regular file is ours to replace. Someone who can write to
	 * the directory can swap what is there after this check, but the
	 * rename still only replaces a name: it never writes through it. */
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode))
			rc = fail(why, whylen, S_ISLNK(st.st_mode) ? -ELOOP :
				  S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL, "the path is a %s, "
				  "left as it is: a snapshot replaces only a regular file",
				  kind(st.st_mode));
	} else if (errno != ENOENT) {
		rc = fail(why, whylen, -errno, "cannot stat the path: %s", errtext(errno));
	}
	if (rc)
		goto out;
again:
	if (!named) {
		/* Unnamed until it is complete: a crash or kill -9 while it is
		 * written leaves nothing to clean up, and no other process
		 * can open it. */
		fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
		/* EISDIR: a kernel before 3.11 (O_TMPFILE includes
		 * O_DIRECTORY); EOPNOTSUPP: a filesystem without it. */
		if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL))
			named = 1;
		else if (fd < 0) {
			rc = fail(why, whylen, -errno, "cannot create a temporary file in %s: %s",
				  dir, errtext(errno));
			goto out;
		}
	}
	if (named) {
		rc = open_named(dfd, name, &fd);
		if (rc) {
			rc = fail(why, whylen, rc, "cannot create a temporary file in %s: %s", dir,
				  errtext(rc));
			goto out;
		}
	}
	rc = write_all(fd, parts, nparts);
	if (rc) {
		fail(why, whylen, rc, "writing the file: %s", errtext(rc));
		goto drop;
	}
	/* Before it has a name: then the name never points at a file whose
	 * data is not on disk (ext4's delayed allocation, XFS, btrfs). */
	if (fsync(fd) < 0) {
		rc = fail(why, whylen, -errno, "fsync of the file: %s", errtext(errno));
		goto drop;
	}
	if (!named) {
		/* linkat cannot replace a name, so the finished file gets a
		 * temporary one, and the rename below replaces the target. */
		rc = link_tmpfile(fd, dfd, name);
		if (rc == -ENOENT) {
			/* Neither link works here: write it again, named. */
			close(fd);
			fd = -1;
			named = 1;
			rc = 0;
			goto again;
		}
		if (rc) {
			fail(why, whylen, rc, "cannot link the temporary file: %s", errtext(rc));
			goto drop;
		}
	}
	/* Straight after the link: a kill -9 between the two leaves the
	 * named file behind, so that window holds nothing else. */
	if (renameat(dfd, name, dfd, base) < 0) {
		rc = fail(why, whylen, -errno, "cannot rename the file into place: %s",
			  errtext(errno));
		goto drop;
	}
	name[0] = 0;
	/* After the fsync, close has nothing left to write back (not even
	 * on NFS), so it cannot report a lost write. */
	close(fd);
	fd = -1;
	/* The rename itself is durable once the directory is. Some
	 * filesystems refuse fsync on a directory (EINVAL): nothing more
	 * can be done there. */
	if (fsync(dfd) < 0 && errno != EINVAL)
		rc = fail(why, whylen, -errno, "fsync of the directory %s: %s", dir,
			  errtext(errno));
	goto out;
drop:
	if (fd >= 0)
		close(fd);
	if (name[0])
		unlinkat(dfd, name, 0);
out:
	close(dfd);
	free(dir);
	return rc;
}

static int read_at(int fd, unsigned char *p, size_t n, size_t *got)
{
	*got = 0;
	while (*got < n) {
		ssize_t k = read(fd, p + *got, n - *got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		*got += (size_t)k;
	}
	return 0;
}

int ura__snap_file_read(const char *path, size_t hdrlen, ura__snap_hdr_fn *check,
			void *ud, uint64_t max_size, unsigned char **out, size_t *outlen,
			char *why, size_t whylen)
{
	*out = NULL;
	*outlen = 0;
	if (why && whylen)
		why[0] = 0;
	if (!path || !check || hdrlen > 4096)
		return fail(why, whylen, -EINVAL, "bad arguments");
	/* stat first: opening a device can have effects of its own (a tape
	 * rewinds); O_NONBLOCK: a FIFO put there after the stat must not
	 * block the open until someone writes to it. */
	struct stat st;
	if (stat(path, &st) < 0)
		return fail(why, whylen, -errno, "cannot stat it: %s", errtext(errno));
	if (!S_ISREG(st.st_mode))
		return fail(why, whylen, -EINVAL, "refused: a %s, not a regular file",
			    kind(st.st_mode));
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return fail(why, whylen, -errno, "cannot open it: %s", errtext(errno));
	int rc = 0;
	unsigned char *buf = NULL;
	if (fstat(fd, &st) < 0) {
		rc = fail(why, whylen, -errno, "fstat: %s", errtext(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		rc = fail(why, whylen, -EINVAL, "refused: a %s, not a regular file",
			  kind(st.st_mode));
		goto out;
	}
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		rc = fail(why, whylen, -errno, "fcntl: %s", errtext(errno));
		goto out;
	}
	uint64_t size = (uint64_t)st.st_size;
	unsigned char hdr[4096];
	size_t n = 0;
	rc = read_at(fd, hdr, size < hdrlen ? (size_t)size : hdrlen, &n);
	if (rc) {
		fail(why, whylen, rc, "read: %s", errtext(rc));
		goto out;
	}
	/* Judged on the header and the size alone: nothing is allocated
	 * for what the file claims until the claim is checked. */
	int64_t want = check(ud, hdr, n, size);
	if (want < 0) {
		rc = (int)want;
		goto out;
	}
	if ((uint64_t)want > size || (uint64_t)want < n) {
		rc = fail(why, whylen, -EINVAL, "refused: the header check asked for %" PRId64
			  " bytes of a %" PRIu64 "-byte file", want, size);
		goto out;
	}
	if ((uint64_t)want > max_size || (uint64_t)want > SIZE_MAX) {
		rc = fail(why, whylen, -ENOMEM, "refused: %" PRId64 " bytes, more than the "
			  "%" PRIu64 " it may take in memory", want, max_size);
		goto out;
	}
	buf = ura__malloc(want ? (size_t)want : 1);
	if (!buf) {
		rc = fail(why, whylen, -ENOMEM, "out of memory for %" PRId64 " bytes", want);
		goto out;
	}
	memcpy(buf, hdr, n);
	size_t got = 0;
	rc = read_at(fd, buf + n, (size_t)want - n, &got);
	if (rc) {
		fail(why, whylen, rc, "read: %s", errtext(rc));
		goto out;
	}
	if (got != (size_t)want - n) {
		rc = fail(why, whylen, -EINVAL, "refused: the file shrank while it was read");
		goto out;
	}
	*out = buf;
	*outlen = (size_t)want;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
