/* SPDX-License-Identifier: MIT */
/* Helpers shared by the benchmark programs (not part of libura). */
#ifndef URA_BENCH_H
#define URA_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/resource.h>
#include <unistd.h>

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

/* URA_BENCH_METERED=1: the benchmark's classes get per-class metrics
 * (ura_class.metrics), to measure what they cost (bench/README.md). */
static inline int b_metered(void)
{
	const char *e = getenv("URA_BENCH_METERED");
	return e && *e == '1';
}
static inline void b_meter(ura_class *cls)
{
	cls->metrics = URA_CLASS_METRICS;
}

static inline void b_fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	exit(1);
}

/* Peak resident set size of this process so far, in KiB (ru_maxrss). */
static inline long b_peak_rss_kb(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return -1;
	return ru.ru_maxrss;
}

/* CPU seconds this process has used so far, user and system. */
static inline double b_cpu_s(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

/* Resident set size now, in KiB (/proc/self/statm), or -1. */
static inline long b_rss_kb(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long size = 0, res = -1;
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* The worker count a system reports (after its run). */
static inline unsigned b_workers(ura_system *sys)
{
	ura_stats st;
	if (ura_system_stats(sys, &st) < 0)
		return 0;
	return st.workers;
}

/* URA_BENCH_STATS=1: the scheduler's counters on stderr, to read a run. */
static inline void b_stats(const ura_stats *st)
{
	const char *e = getenv("URA_BENCH_STATS");
	if (!e || strcmp(e, "1"))
		return;
	fprintf(stderr,
		"stats: turns=%llu received=%llu steals=%llu sleeps=%llu "
		"wakeups=%llu ring_enters=%llu spin_yields=%llu steals_remote=%llu "
		"cross_node=%llu flushes=%llu flushed=%llu alarm_sets=%llu alarm_wakes=%llu\n",
		(unsigned long long)st->turns, (unsigned long long)st->received,
		(unsigned long long)st->steals, (unsigned long long)st->sleeps,
		(unsigned long long)st->wakeups,
		(unsigned long long)st->ring_enters,
		(unsigned long long)st->spin_yields, (unsigned long long)st->steals_remote,
		(unsigned long long)st->cross_node, (unsigned long long)st->flushes,
		(unsigned long long)st->flushed, (unsigned long long)st->alarm_sets,
		(unsigned long long)st->alarm_wakes);
}

/* Positional arguments, skipping "--flags": the i-th (1-based) one. */
static inline long long b_pos(int argc, char **argv, int i, long long dflt)
{
	int k = 0;
	for (int a = 1; a < argc; a++) {
		if (argv[a][0] == '-' && argv[a][1] == '-')
			continue;
		if (++k == i)
			return b_arg(argc, argv, a, dflt);
	}
	return dflt;
}

/* "--name=N" options: N of the last one given (name includes the '='),
 * else dflt. */
static inline long long b_opt(int argc, char **argv, const char *name, long long dflt)
{
	size_t n = strlen(name);
	for (int a = 1; a < argc; a++)
		if (!strncmp(argv[a], name, n))
			dflt = atoll(argv[a] + n);
	return dflt;
}

static inline int b_flag(int argc, char **argv, const char *flag)
{
	for (int a = 1; a < argc; a++)
		if (!strcmp(argv[a], flag))
			return 1;
	return 0;
}

#endif
