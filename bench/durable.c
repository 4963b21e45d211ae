/* SPDX-License-Identifier: MIT */
/*
 * durable [DIR]: what it costs to replace a file durably the way a snapshot
 * is written, for 64 KiB, 1 MiB and 48 MiB (bench/snapshot's count writes
 * 48 MB), medians of 7, the methods interleaved round by round:
 *  - old: the way snapshots were written before issue #13: PATH.tmp.PID
 *    opened O_CREAT|O_TRUNC, write, fsync, close, rename, fsync the
 *    directory (each step timed);
 *  - tmpfile: the steps of lib/snap/file.c, each timed: O_TMPFILE, write,
 *    fsync, linkat through /proc/self/fd, close, renameat, fsync the
 *    directory;
 *  - lib, lib_named: ura__snap_file_write itself (compiled in), end to end,
 *    with O_TMPFILE and with URA_SNAP_TMPFILE=0 (a random name, O_EXCL).
 * kernel-notes/durable-files.md has the figures. No libura.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snap/file.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define REPS 7
/* Steps: open, write, fsync, link, close, rename, dir fsync, total. */
#define STEPS 8

static void write_all(int fd, const char *buf, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t k = write(fd, buf + off, n - off);
		if (k < 0) {
			perror("write");
			exit(1);
		}
		off += (size_t)k;
	}
}

static void dir_fsync(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

static void old_way(const char *dir, const char *path, const char *buf, size_t n, double *t)
{
	char tmp[4200];
	snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
	double t0 = now_ms();
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror(tmp);
		exit(1);
	}
	double t1 = now_ms();
	write_all(fd, buf, n);
	double t2 = now_ms();
	if (fsync(fd) < 0)
		perror("fsync");
	double t3 = now_ms();
	close(fd);
	double t4 = now_ms();
	if (rename(tmp, path) < 0)
		perror("rename");
	double t5 = now_ms();
	dir_fsync(dir);
	double t6 = now_ms();
	double v[STEPS] = { t1 - t0, t2 - t1, t3 - t2, 0, t4 - t3, t5 - t4, t6 - t5, t6 - t0 };
	memcpy(t, v, sizeof v);
}

static void tmpfile_way(const char *dir, const char *path, const char *buf, size_t n,
			double *t)
{
	char tmp[4200], proc[64];
	snprintf(tmp, sizeof tmp, "%s/.urasnap.bench", dir);
	double t0 = now_ms();
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		perror("O_TMPFILE");
		exit(1);
	}
	double t1 = now_ms();
	write_all(fd, buf, n);
	double t2 = now_ms();
	if (fsync(fd) < 0)
		perror("fsync");
	double t3 = now_ms();
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0)
		perror("linkat");
	double t4 = now_ms();
	close(fd);
	double t5 = now_ms();
	if (rename(tmp, path) < 0)
		perror("rename");
	double t6 = now_ms();
	dir_fsync(dir);
	double t7 = now_ms();
	double v[STEPS] = { t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5, t7 - t6, t7 - t0 };
	memcpy(t, v, sizeof v);
}

static void lib_way(const char *path, const char *buf, size_t n, int named, double *t)
{
	if (named)
		setenv("URA_SNAP_TMPFILE", "0", 1);
	else
		unsetenv("URA_SNAP_TMPFILE");
	struct iovec part = { (void *)buf, n };
	char why[256];
	double t0 = now_ms();
	if (ura__snap_file_write(path, &part, 1, why, sizeof why) < 0) {
		fprintf(stderr, "ura__snap_file_write: %s\n", why);
		exit(1);
	}
	memset(t, 0, STEPS * sizeof *t);
	t[STEPS - 1] = now_ms() - t0;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/var/tmp";
	static const size_t sizes[] = { 64u << 10, 1u << 20, 48u << 20 };
	static const char *const names[] = { "old", "tmpfile", "lib", "lib_named" };
	char *buf = malloc(48u << 20);
	if (!buf)
		return 1;
	memset(buf, 'x', 48u << 20);
	char path[4096];
	snprintf(path, sizeof path, "%s/ura-durable.snap", dir);
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		static double t[4][STEPS][REPS];
		for (int i = 0; i < REPS; i++) {
			double v[STEPS];
			for (int m = 0; m < 4; m++) {
				if (m == 0)
					old_way(dir, path, buf, sizes[s], v);
				else if (m == 1)
					tmpfile_way(dir, path, buf, sizes[s], v);
				else
					lib_way(path, buf, sizes[s], m == 3, v);
				for (int k = 0; k < STEPS; k++)
					t[m][k][i] = v[k];
			}
		}
		for (int m = 0; m < 4; m++) {
			double med[STEPS];
			for (int k = 0; k < STEPS; k++) {
				qsort(t[m][k], REPS, sizeof t[m][k][0], cmp);
				med[k] = t[m][k][REPS / 2];
			}
			printf("bench=durable method=%s size_kib=%zu total_ms=%.3f", names[m],
			       sizes[s] >> 10, med[7]);
			if (m < 2)
				printf(" open_ms=%.3f write_ms=%.3f fsync_ms=%.3f link_ms=%.3f "
				       "close_ms=%.3f rename_ms=%.3f dir_fsync_ms=%.3f", med[0], med[1],
				       med[2], med[3], med[4], med[5], med[6]);
			printf("\n");
		}
	}
	unlink(path);
	free(buf);
	return 0;
}
