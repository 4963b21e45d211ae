/* SPDX-License-Identifier: MIT */
/*
 * ticker [PERIOD_US] [TICKS] [--hold]: what a periodic timer costs the
 * workers that have nothing to do. One actor re-arms a delayed send to
 * itself every PERIOD_US (default 20000) until it has ticked TICKS times
 * (default 100); with --hold it also keeps a 1 h timeout pending (a
 * connection's keep-alive), so its wheel is never empty. Each tick's
 * turn makes its worker busy with a deadline pending, and the sleeping
 * peer must be able to fire that deadline should the turn run long
 * (time/timers.c, watch_due): the wakes that costs are what this
 * measures. Prints wakeups (sent by the workers) and
 * sleeps per tick, and the process's CPU microseconds per tick (the
 * main thread's wait included: one sleep and a few looks).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define A_TICK URA_ATOM("tick")
#define A_KEEP URA_ATOM("keep")

static uint64_t g_period;
static _Atomic long g_ticks;

static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	int64_t left = ura_arg_i64(m, 0);
	atomic_fetch_add(&g_ticks, 1);
	if (left > 1 && ura_send_after(cx, ura_self(cx), g_period, A_TICK, left - 1) < 0)
		b_fail("ura_send_after");
}

static void on_keep(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_send_after(cx, ura_self(cx), 3600 * URA_SEC, A_KEEP) < 0)
		b_fail("ura_send_after");
}

URA_BEHAVIOR(ticker_beh, URA_ON(A_TICK, "i", on_tick), URA_ON(A_KEEP, "", on_keep));
static const ura_class ticker_class = { .name = "ticker", .initial = &ticker_beh };

int main(int argc, char **argv)
{
	int hold = argc > 1 && !strcmp(argv[argc - 1], "--hold");
	if (hold)
		argc--;
	long long period_us = b_arg(argc, argv, 1, 20000);
	long ticks = (long)b_arg(argc, argv, 2, 100);
	g_period = (uint64_t)period_us * URA_USEC;
	ura_system *sys = b_system();
	ura_ref t;
	B_CHECK(ura_spawn(sys, &ticker_class, NULL, &t));
	B_CHECK(ura_system_await(sys));
	if (hold)
		B_CHECK(ura_send(sys, t, A_KEEP));
	ura_stats s0, s1;
	ura_system_stats(sys, &s0);
	double c0 = b_cpu_s(), t0 = b_now();
	B_CHECK(ura_send(sys, t, A_TICK, (int64_t)ticks));
	/* Not ura_system_await: the held timeout keeps the system busy.
	 * One sleep for the ticks, then a few looks: a look every
	 * millisecond from the start would cost more CPU than the ticks. */
	uint64_t all = g_period * (uint64_t)(ticks - 1);
	struct timespec ts = { (time_t)(all / URA_SEC), (long)(all % URA_SEC) };
	nanosleep(&ts, NULL);
	ts = (struct timespec){ 0, 1000 * 1000 };
	while (atomic_load(&g_ticks) < ticks)
		nanosleep(&ts, NULL);
	double wall = b_now() - t0, c = b_cpu_s() - c0;
	ura_system_stats(sys, &s1);
	printf("bench=ticker system=ura workers=%u period_us=%lld hold=%d msgs=%ld "
	       "wakeups_per_tick=%.2f alarm_wakes_per_tick=%.2f alarm_sets_per_tick=%.2f "
	       "sleeps_per_tick=%.2f cpu_us_per_tick=%.1f wall_s=%.6f rate=%.1f\n",
	       s1.workers, period_us, hold, ticks, (double)(s1.wakeups - s0.wakeups) / ticks,
	       (double)(s1.alarm_wakes - s0.alarm_wakes) / ticks,
	       (double)(s1.alarm_sets - s0.alarm_sets) / ticks,
	       (double)(s1.sleeps - s0.sleeps) / ticks, c / ticks * 1e6, wall, ticks / wall);
	/* The held timeout is still pending: destroy drops it. */
	ura_system_destroy(sys);
	return 0;
}
