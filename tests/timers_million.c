/* SPDX-License-Identifier: MIT */
/*
 * A million pending timers on one worker: one actor arms t_scaled(1000000)
 * delayed sends to itself from one handler, with delays spread at random
 * over about a second (less when URA_TEST_SCALE shrinks the count). All are delivered, each exactly once, in deadline
 * order within the timer slack; the memory each pending timer costs is
 * printed; and the worker's kernel waits (stats.ring_enters) stay far
 * below the number of timers: no system call per timer.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "tap.h"

#define A_GO URA_ATOM("go")
#define A_TICK URA_ATOM("tick")

/* The deadlines spread over SPREAD_NS for a million timers; scaled-down
 * runs (URA_TEST_SCALE) shrink the spread with the count, down to 100 ms,
 * so the timers per slack interval (and so what coalescing can save)
 * stay about the same. */
#define SPREAD_NS (1 * URA_SEC)
#define SPREAD_MIN_NS (100 * URA_MSEC)

static long g_n;
static uint64_t g_spread;
static uint64_t g_slack;
static uint32_t *g_offset;      /* per timer: delay in ns (< SPREAD_NS) */
static uint32_t *g_span;        /* per timer: ns the arm call took */
static unsigned char *g_seen;   /* per timer: deliveries */

/* Written by the actor (one worker), read after await. */
static long g_armed, g_arm_errors;
static long g_delivered, g_dups, g_bad_index;
static long g_order_bad;        /* out of order beyond the slack, even
                                   allowing for the time each arm took */
static long g_order_strict;     /* out of order beyond the slack, taking
                                   the deadline carried at face value */
static int64_t g_worst;         /* worst backwards step seen (ns) */
static int64_t g_max_deadline;
static long g_rss_before, g_rss_after; /* pages */
static uint64_t g_arm_ns;
static int64_t g_first_late = INT64_MIN, g_max_late = INT64_MIN, g_min_late = INT64_MAX;

static long rss_pages(void)
{
	long size = 0, resident = -1;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident;
}

static void go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	g_rss_before = rss_pages();
	uint64_t t0 = t_now_ns();
	for (long i = 0; i < g_n; i++) {
		uint64_t before = t_now_ns();
		int64_t deadline = (int64_t)(before + g_offset[i]);
		ura_timer h = ura_send_after(cx, ura_self(cx), g_offset[i], A_TICK, deadline, i);
		uint64_t span = t_now_ns() - before;
		g_span[i] = span > UINT32_MAX ? UINT32_MAX : (uint32_t)span;
		if (h <= 0) {
			if (g_arm_errors++ < 3)
				printf("# arm %ld: %s\n", i, ura_strerror((int)h));
		} else {
			g_armed++;
		}
	}
	g_arm_ns = t_now_ns() - t0;
	g_rss_after = rss_pages();
	g_max_deadline = INT64_MIN;
}

static void tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t now = (int64_t)t_now_ns();
	int64_t deadline = ura_arg_i64(m, 0);
	long i = (long)ura_arg_i64(m, 1);
	if (i < 0 || i >= g_n) {
		g_bad_index++;
		return;
	}
	if (g_seen[i]++)
		g_dups++;
	int64_t late = now - deadline;
	if (g_first_late == INT64_MIN)
		g_first_late = late;
	if (late > g_max_late)
		g_max_late = late;
	if (late < g_min_late)
		g_min_late = late;
	if (g_delivered > 0) {
		/* The runtime's own deadline lies between the carried one and
		 * the carried one plus the time the arm call took. */
		int64_t floor = g_max_deadline - (int64_t)g_slack;
		if (deadline < floor) {
			g_order_strict++;
			if (g_max_deadline - deadline > g_worst)
				g_worst = g_max_deadline - deadline;
		}
		if (deadline + (int64_t)g_span[i] < floor) {
			if (g_order_bad++ < 5)
				printf("# out of order: #%ld deadline %lld after %lld (slack %llu)\n",
				       g_delivered, (long long)deadline, (long long)g_max_deadline,
				       (unsigned long long)g_slack);
		}
	}
	if (deadline > g_max_deadline)
		g_max_deadline = deadline;
	g_delivered++;
}

URA_BEHAVIOR(million_beh,
	URA_ON(A_GO, "", go),
	URA_ON(A_TICK, "ii", tick));
static const ura_class million_class = { .name = "million", .initial = &million_beh };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

int main(void)
{
	g_n = t_scaled(1000000);
	g_spread = (uint64_t)((double)SPREAD_NS * (double)g_n / 1e6);
	if (g_spread < SPREAD_MIN_NS)
		g_spread = SPREAD_MIN_NS;
	if (g_spread > SPREAD_NS)
		g_spread = SPREAD_NS;
	g_slack = URA_TIMER_SLACK_DEFAULT;
	const char *e = getenv("URA_TIMER_SLACK_US");
	if (e && atol(e) > 0)
		g_slack = (uint64_t)atol(e) * URA_USEC;
	g_offset = malloc((size_t)g_n * sizeof *g_offset);
	g_span = malloc((size_t)g_n * sizeof *g_span);
	g_seen = malloc((size_t)g_n);
	if (!g_offset || !g_span || !g_seen) {
		printf("Bail out! no memory\n");
		return 1;
	}
	/* Touch everything now, so the RSS growth while arming is ura's. */
	for (long i = 0; i < g_n; i++)
		g_offset[i] = (uint32_t)(rng() % g_spread);
	memset(g_span, 0, (size_t)g_n * sizeof *g_span);
	memset(g_seen, 0, (size_t)g_n);

	ura_system *sys;
	ura_config cfg = { .workers = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref a;
	t_must(ura_spawn(sys, &million_class, NULL, &a));
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "idle before the run");
	ura_stats st0;
	ura_system_stats(sys, &st0);
	uint64_t t0 = t_now_ns();
	t_must(ura_send(sys, a, A_GO));
	int rc = ura_system_await_for(sys, 100 * URA_SEC);
	uint64_t took = t_now_ns() - t0;
	ura_stats st1;
	ura_system_stats(sys, &st1);
	t_rc(rc, 0, "await: every timer fired and was handled");

	t_eq(g_arm_errors, 0, "every arm returned a handle");
	t_eq(g_armed, g_n, "%ld timers armed", g_n);
	t_eq(g_delivered, g_n, "%ld deliveries", g_n);
	long missing = 0;
	for (long i = 0; i < g_n; i++)
		missing += !g_seen[i];
	t_eq(missing, 0, "every timer delivered");
	t_eq(g_dups, 0, "no timer delivered twice");
	t_eq(g_bad_index, 0, "no message with a bad index");
	t_eq(g_order_bad, 0, "deliveries in deadline order within the slack (%llu us)",
	     (unsigned long long)(g_slack / URA_USEC));
	t_diag("taking the carried deadline at face value: %ld step(s) back by more than the "
	       "slack, worst %.1f us", g_order_strict, g_worst / 1e3);
	t_ok(g_min_late >= -(int64_t)URA_MSEC, "no timer early (min lateness %.1f us)",
	     g_min_late / 1e3);
	t_diag("lateness: min %.1f us, max %.1f ms (the arming handler held the only worker "
	       "for %.1f ms)", g_min_late / 1e3, g_max_late / 1e6, g_arm_ns / 1e6);

	uint64_t fired = st1.timers_fired - st0.timers_fired;
	uint64_t enters = st1.ring_enters - st0.ring_enters;
	t_eq(fired, g_n, "stats.timers_fired grew by %ld", g_n);
	t_eq(st1.timers_pending, 0, "stats.timers_pending is 0 at the end");
	t_ok(enters < (uint64_t)g_n / 10,
	     "ring_enters during the run (%llu) < timers / 10 (%ld): no system call per timer",
	     (unsigned long long)enters, g_n / 10);
	t_diag("deadlines spread over %.0f ms after each arm, timer slack %llu us",
	       g_spread / 1e6, (unsigned long long)(g_slack / URA_USEC));
	t_diag("run: %.2f s, arming %ld timers took %.1f ms (%.0f ns each), %llu ring_enters, "
	       "%llu sleeps, backend %s", took / 1e9, g_n, g_arm_ns / 1e6,
	       (double)g_arm_ns / (double)g_n, (unsigned long long)enters,
	       (unsigned long long)(st1.sleeps - st0.sleeps), st1.backend);
	long page = sysconf(_SC_PAGESIZE);
	if (g_rss_before > 0 && g_rss_after > 0) {
		double per = (double)(g_rss_after - g_rss_before) * (double)page / (double)g_n;
		t_diag("memory per pending timer: %.1f bytes (RSS %ld -> %ld KiB for %ld timers)",
		       per, g_rss_before * page / 1024, g_rss_after * page / 1024, g_n);
		t_ok(per > 0, "RSS grew while arming (%.1f bytes per timer)", per);
	} else {
		t_skip("/proc/self/statm unreadable");
	}
	t_rc(ura_system_destroy(sys), 0, "destroy: nothing leaked, nothing lost");
	free(g_offset);
	free(g_span);
	free(g_seen);
	return t_done();
}
