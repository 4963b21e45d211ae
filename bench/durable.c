/* SPDX-License-Identifier: MIT */
/*
 * durable [DIR]: what it costs to replace a file durably the way a snapshot
 * is written (lib/snap/snap.c write_file): write a temporary file, fsync
 * it, rename it over the old one, fsync the directory. For 64 KiB, 1 MiB
 * and 48 MiB (bench/snapshot's count writes 48 MB), medians of 7.
 * kernel-notes/durable-files.md has the figures. No libura.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/var/tmp";
	static const size_t sizes[] = { 64u << 10, 1u << 20, 48u << 20 };
	char *buf = malloc(48u << 20);
	if (!buf)
		return 1;
	memset(buf, 'x', 48u << 20);
	char tmp[4096], path[4096];
	snprintf(tmp, sizeof tmp, "%s/ura-durable.tmp", dir);
	snprintf(path, sizeof path, "%s/ura-durable.snap", dir);
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		double w[REPS], f[REPS], c[REPS], r[REPS], d[REPS];
		for (int i = 0; i < REPS; i++) {
			double t0 = now_ms();
			int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0) {
				perror(tmp);
				return 1;
			}
			for (size_t off = 0; off < sizes[s];) {
				ssize_t k = write(fd, buf + off, sizes[s] - off);
				if (k < 0) {
					perror("write");
					return 1;
				}
				off += (size_t)k;
			}
			double t1 = now_ms();
			if (fsync(fd) < 0)
				perror("fsync");
			double t2 = now_ms();
			close(fd);
			double t2c = now_ms();
			if (rename(tmp, path) < 0)
				perror("rename");
			double t3 = now_ms();
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				fsync(dfd);
				close(dfd);
			}
			double t4 = now_ms();
			w[i] = t1 - t0;
			f[i] = t2 - t1;
			c[i] = t2c - t2;
			r[i] = t3 - t2c;
			d[i] = t4 - t3;
		}
		qsort(w, REPS, sizeof w[0], cmp);
		qsort(f, REPS, sizeof f[0], cmp);
		qsort(c, REPS, sizeof c[0], cmp);
		qsort(r, REPS, sizeof r[0], cmp);
		qsort(d, REPS, sizeof d[0], cmp);
		printf("bench=durable size_kib=%zu write_ms=%.2f fsync_ms=%.2f close_ms=%.3f "
		       "rename_ms=%.3f dir_fsync_ms=%.2f fsync_min_ms=%.2f fsync_max_ms=%.2f\n",
		       sizes[s] >> 10, w[REPS / 2], f[REPS / 2], c[REPS / 2], r[REPS / 2],
		       d[REPS / 2], f[0], f[REPS - 1]);
	}
	unlink(path);
	free(buf);
	return 0;
}
