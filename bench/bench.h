/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmark programs (not part of libura). */
#ifndef URA_BENCH_H
#define URA_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ura.h>

static inline double b_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline long long b_arg(int argc, char **argv, int i, long long dflt)
{
	if (i >= argc)
		return dflt;
	char *end;
	long long v = strtoll(argv[i], &end, 10);
	if (*end || v <= 0) {
		fprintf(stderr, "bad argument '%s': expected a positive number\n", argv[i]);
		exit(2);
	}
	return v;
}

static inline ura_system *b_system(void)
{
	ura_system *sys;
	int rc = ura_system_new(&sys, NULL);
	if (rc < 0) {
		fprintf(stderr, "ura_system_new: %s\n", ura_strerror(rc));
		exit(1);
	}
	return sys;
}

#define B_CHECK(call) do {                                                   \
	int rc_ = (call);                                                    \
	if (rc_ < 0) {                                                       \
		fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,  \
			ura_strerror(rc_));                                  \
		exit(1);                                                     \
	}                                                                    \
} while (0)

static inline void b_fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	exit(1);
}

#endif
