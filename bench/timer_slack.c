/* SPDX-License-Identifier: MIT */
/*
 * timer_slack [N] [SPREAD_MS] [--split]: the cost of timer coalescing. One
 * actor arms N delayed sends to itself (--split: to a second actor, so that
 * what the timers wait for is another actor's handler: the arming slices),
 * deadlines spread uniformly over SPREAD_MS, and
 * records how late each arrives. Reports lateness p50/p99/p99.9, process CPU
 * time, and the workers' io_uring_enter calls (ura_stats.ring_enters). Run it
 * with URA_TIMER_SLACK_US=... to compare slack settings (kernel-notes/timers.md),
 * and with URA_WORKERS=N for more than its one worker.
 *
 * Lateness is the delivery in the handler minus the deadline the runtime was
 * given: the intended one, or the arming instant for a timer whose intended
 * deadline had already passed when the arming loop got to it (the first
 * deadlines come 20 ms after the loop starts, and arming 1M takes longer:
 * counted as armed_late, not as lateness, which the runtime cannot help).
 */
#include <stdlib.h>

#include "bench.h"

#define A_ARM URA_ATOM("arm")
#define A_TICK URA_ATOM("tick")

static long n_total, n_got;
static int64_t *late;
static uint64_t t_base;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	late[n_got++] = (int64_t)(now_ns() - (uint64_t)ura_arg_i64(m, 0));
}

static long n_armed, armed_late;
static ura_ref target; /* the arming actor itself, or the receiver (--split) */
static uint64_t spread, arm_start, arm_end;
static unsigned seed = 42;

/* Arms in slices of 1000, so timers already due fire between slices
 * instead of waiting for the whole arming loop. */
static void on_arm(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (!n_armed) {
		arm_start = now_ns();
		t_base = arm_start + 20 * URA_MSEC;
	}
	for (int k = 0; k < 1000 && n_armed < n_total; k++, n_armed++) {
		seed = seed * 1103515245u + 12345u;
		uint64_t at = t_base + (uint64_t)((double)(seed >> 8) / (1 << 24) * (double)spread);
		uint64_t now = now_ns();
		if (at <= now)
			armed_late++;
		ura_timer h = ura_send_after(cx, ura_ref_null(target) ? ura_self(cx) : target, at > now ? at - now : 0, A_TICK,
					     (int64_t)(at > now ? at : now));
		if (h < 0) {
			fprintf(stderr, "ura_send_after: %s\n", ura_strerror((int)h));
			exit(1);
		}
	}
	if (n_armed < n_total)
		ura_send(cx, ura_self(cx), A_ARM, (int64_t)0);
	else
		arm_end = now_ns();
}

URA_BEHAVIOR(ticker, URA_ON(A_ARM, "i", on_arm), URA_ON(A_TICK, "i", on_tick));
static const ura_class ticker_class = { .name = "ticker", .initial = &ticker };
URA_BEHAVIOR(receiver, URA_ON(A_TICK, "i", on_tick));
static const ura_class receiver_class = { .name = "receiver", .initial = &receiver };

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	n_total = (long)b_arg(argc, argv, 1, 100000);
	long spread_ms = (long)b_arg(argc, argv, 2, 1000);
	late = calloc((size_t)n_total, sizeof *late);
	if (!late)
		b_fail("out of memory");
	ura_system *sys;
	B_CHECK(ura_system_new(&sys, &(ura_config){ .workers = 1 }));
	ura_ref t;
	B_CHECK(ura_spawn(sys, &ticker_class, NULL, &t));
	int split = 0;
	for (int a = 1; a < argc; a++)
		split |= !strcmp(argv[a], "--split");
	if (split)
		B_CHECK(ura_spawn(sys, &receiver_class, NULL, &target));
	double cpu0 = b_cpu_s();
	ura_stats s0, s1;
	ura_system_stats(sys, &s0);
	double t0 = b_now();
	spread = (uint64_t)spread_ms * 1000000;
	B_CHECK(ura_send(sys, t, A_ARM, (int64_t)0));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	double cpu = b_cpu_s() - cpu0;
	ura_system_stats(sys, &s1);
	unsigned workers = b_workers(sys);
	ura_system_destroy(sys);
	if (n_got != n_total)
		b_fail("not every timer fired");
	qsort(late, (size_t)n_total, sizeof *late, cmp);
	const char *slack = getenv("URA_TIMER_SLACK_US");
	printf("bench=timer_slack system=ura workers=%u split=%d n=%ld spread_ms=%ld slack_us=%s late_min_us=%.1f "
	       "late_p50_us=%.1f late_p99_us=%.1f late_p999_us=%.1f late_max_us=%.1f armed_late=%ld "
	       "cpu_s=%.3f ring_enters=%llu arm_ns=%.0f wall_s=%.3f rate=%.0f\n",
	       workers, split, n_total, spread_ms, slack ? slack : "default", late[0] / 1e3,
	       late[n_total / 2] / 1e3, late[n_total * 99 / 100] / 1e3,
	       late[n_total * 999 / 1000] / 1e3, late[n_total - 1] / 1e3, armed_late, cpu,
	       (unsigned long long)(s1.ring_enters - s0.ring_enters),
	       (double)(arm_end - arm_start) / (double)n_total, dt, (double)n_total / dt);
	return 0;
}
