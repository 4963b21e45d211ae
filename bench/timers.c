/* SPDX-License-Identifier: MIT */
/*
 * timers.c - the per-worker timing wheel alone (lib/time/wheel.c), on a
 * simulated clock, so that only the data structure is measured.
 *
 * For 1k, 100k and 1M pending timers, each in a 64-byte record (a delayed
 * message with its timer embedded), deadlines uniform over the next
 * --range-ms (default 10 s), tick --tick-ns (default 1024):
 *   add_ns    arming each timer into a wheel already holding the earlier ones
 *   del_ns    cancelling every timer, in random order
 *   expire_ns firing every timer the way a worker does: sleep until
 *             next(), expire(); cascades and next() included
 *   bulk_ns   firing every timer with one expire() far in the future
 * Each figure is the median of --runs (default 5). bytes_per_timer is
 * the timer node plus the wheel's fixed size shared out.
 *
 * Build: gcc -O2 -std=c11 -D_GNU_SOURCE -Ilib/include -Ilib bench/timers.c lib/time/wheel.c -o /tmp/timers
 * Run:   /tmp/timers [--runs 5] [--range-ms 10000] [--tick-ns 1024]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "time/wheel.h"

#define T0 ((uint64_t)1000000000000ull) /* a clock that has run a while */

struct rec {
	struct ura__timer t;
	char payload[64 - sizeof(struct ura__timer)];
};

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_fire(struct ura__timer *t, void *ud)
{
	/* Touch the record, as delivering the message would. */
	struct rec *r = (struct rec *)t;
	r->payload[0]++;
	++*(size_t *)ud;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fail(const char *what)
{
	fprintf(stderr, "FAIL: %s\n", what);
	exit(1);
}

struct figures {
	double add, del, expire, bulk;
	double wakeups; /* expire() calls per timer in the worker-style run */
};

static void arm_all(struct ura__wheel *w, struct rec *v, const uint64_t *dl, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		v[i].t.deadline = dl[i];
		ura__wheel_add(w, &v[i].t);
	}
}

static void one_run(size_t n, uint64_t range, uint64_t tick, struct figures *f)
{
	struct ura__wheel *w = malloc(sizeof(*w));
	struct rec *v = malloc(n * sizeof(*v));
	uint64_t *dl = malloc(n * sizeof(*dl));
	size_t *perm = malloc(n * sizeof(*perm));
	size_t i, fired = 0, calls = 0;
	uint64_t now, nx;
	double t0;

	if (!w || !v || !dl || !perm)
		fail("out of memory");
	/* Fault the records in first: a runtime arms timers in records
	 * that already exist, and page faults are not the wheel's cost. */
	for (i = 0; i < n; i++) {
		memset(&v[i], (int)(i & 0x7f), sizeof(v[i]));
		v[i].t.prev = NULL;
	}
	for (i = 0; i < n; i++) {
		dl[i] = T0 + 1 + rnd() % range;
		perm[i] = i;
	}
	for (i = n; i > 1; i--) { /* Fisher-Yates */
		size_t j = rnd() % i, x = perm[i - 1];
		perm[i - 1] = perm[j];
		perm[j] = x;
	}

	ura__wheel_init(w, T0, tick);
	t0 = now_s();
	arm_all(w, v, dl, n);
	f->add = (now_s() - t0) * 1e9 / (double)n;
	if (ura__wheel_count(w) != n)
		fail("count after add");

	t0 = now_s();
	for (i = 0; i < n; i++)
		ura__wheel_del(w, &v[perm[i]].t);
	f->del = (now_s() - t0) * 1e9 / (double)n;
	if (ura__wheel_count(w) != 0 || ura__wheel_next(w) != UINT64_MAX)
		fail("not empty after del");

	arm_all(w, v, dl, n);
	now = T0;
	t0 = now_s();
	while ((nx = ura__wheel_next(w)) != UINT64_MAX) {
		if (nx > now)
			now = nx;
		ura__wheel_expire(w, now, on_fire, &fired);
		calls++;
	}
	f->expire = (now_s() - t0) * 1e9 / (double)n;
	f->wakeups = (double)calls / (double)n;
	if (fired != n)
		fail("expire did not fire every timer");

	ura__wheel_init(w, T0, tick);
	arm_all(w, v, dl, n);
	fired = 0;
	t0 = now_s();
	ura__wheel_expire(w, T0 + range + tick, on_fire, &fired);
	f->bulk = (now_s() - t0) * 1e9 / (double)n;
	if (fired != n)
		fail("bulk expire did not fire every timer");

	free(perm);
	free(dl);
	free(v);
	free(w);
}

static long long arg(int argc, char **argv, const char *name, long long dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], name)) {
			char *end;
			long long x = strtoll(argv[i + 1], &end, 10);
			if (*end || x <= 0) {
				fprintf(stderr, "bad %s '%s'\n", name, argv[i + 1]);
				exit(2);
			}
			return x;
		}
	return dflt;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 1000, 100000, 1000000 };
	enum { MAX_RUNS = 64 };
	int runs = (int)arg(argc, argv, "--runs", 5);
	uint64_t range = (uint64_t)arg(argc, argv, "--range-ms", 10000) * 1000000u;
	uint64_t tick = (uint64_t)arg(argc, argv, "--tick-ns", 1024);

	if (runs > MAX_RUNS)
		runs = MAX_RUNS;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double add[MAX_RUNS], del[MAX_RUNS], exp[MAX_RUNS], bulk[MAX_RUNS];
		double wk[MAX_RUNS];
		struct ura__wheel probe;
		size_t n = sizes[s];

		for (int r = 0; r < runs; r++) {
			struct figures f;
			one_run(n, range, tick, &f);
			add[r] = f.add;
			del[r] = f.del;
			exp[r] = f.expire;
			bulk[r] = f.bulk;
			wk[r] = f.wakeups;
		}
		ura__wheel_init(&probe, T0, tick);
		printf("bench=timers n=%zu add_ns=%.1f del_ns=%.1f expire_ns=%.1f "
		       "bulk_ns=%.1f wakeups_per_timer=%.3f bytes_per_timer=%.2f "
		       "tick_ns=%llu range_ms=%llu runs=%d\n",
		       n, median(add, runs), median(del, runs), median(exp, runs),
		       median(bulk, runs), median(wk, runs),
		       (double)sizeof(struct ura__timer) +
			       (double)sizeof(struct ura__wheel) / (double)n,
		       (unsigned long long)ura__wheel_tick(&probe),
		       (unsigned long long)(range / 1000000u), runs);
		fflush(stdout);
	}
	return 0;
}
