/* SPDX-License-Identifier: MIT */
/*
 * busy_wake [R MS K [REMOTE]]: a handler wakes K idle actors and then computes for
 * MS milliseconds; how long until each woken actor starts? R rounds.
 * With two workers the second one idles, so the answer should be "about
 * as long as a steal takes", not MS: the scaling issue's "a busy handler
 * never stalls anyone" (its target: within 1 ms). Prints the median, p99
 * and max of the start delay over all R*K wakes.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"

#define A_GO URA_ATOM("go")
#define A_WAKE URA_ATOM("wake")

#define MAX_K 64

static _Atomic long g_started;
static double g_sent;                 /* written before the sends */
static double *g_delay;               /* R*K start delays, seconds */
static _Atomic long g_n;

static void on_wake(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	double d = b_now() - g_sent;
	long i = atomic_fetch_add(&g_n, 1);
	g_delay[i] = d;
	atomic_fetch_add(&g_started, 1);
}

URA_BEHAVIOR(sleeper_beh, URA_ON(A_WAKE, "", on_wake));
static const ura_class sleeper_class = { .name = "sleeper", .initial = &sleeper_beh };

typedef struct { ura_ref kids[MAX_K]; int k; double ms; } waker;

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	waker *w = ura_state(cx);
	g_sent = b_now();
	for (int i = 0; i < w->k; i++)
		ura_send(cx, w->kids[i], A_WAKE);
	/* The long handler: spins, as a CPU-heavy handler would. */
	while (b_now() - g_sent < w->ms / 1e3)
		;
}

URA_BEHAVIOR(waker_beh, URA_ON(A_GO, "", on_go));
static const ura_class waker_class = { .name = "waker", .state_size = sizeof(waker),
				       .initial = &waker_beh };

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int r = (int)b_arg(argc, argv, 1, 20);
	double ms = (double)b_arg(argc, argv, 2, 50);
	int k = (int)b_arg(argc, argv, 3, 1);
	/* 1: the woken actors live on node 1, the waker on node 0 (with two
	 * nodes: URA_TOPOLOGY=2x1): its wakes cross nodes. */
	int remote = (int)b_arg(argc, argv, 4, 0);
	if (k < 1 || k > MAX_K || r < 1)
		b_fail("usage: busy_wake [ROUNDS MS K<=64 [REMOTE 0|1]]");
	g_delay = calloc((size_t)r * (size_t)k, sizeof *g_delay);
	ura_system *sys = b_system();
	waker w = { .k = k, .ms = ms };
	/* The woken actors and the waker all start on worker 0: spawned
	 * from outside, they go where ura puts them; the first round's
	 * wakes are what is measured anyway (each round re-wakes them). */
	int two = remote && ura_system_nodes(sys) > 1;
	if (remote && !two)
		fprintf(stderr, "busy_wake: one node: REMOTE ignored\n");
	ura_spawn_opts kid_at = { .node = URA_NODE(1) };
	ura_spawn_opts waker_at = { .node = URA_NODE(0) };
	for (int i = 0; i < k; i++)
		B_CHECK(ura_spawn_ex(sys, &sleeper_class, NULL, two ? &kid_at : NULL, &w.kids[i]));
	ura_ref a;
	B_CHECK(ura_spawn_ex(sys, &waker_class, &w, two ? &waker_at : NULL, &a));
	B_CHECK(ura_system_await(sys));
	ura_stats s0, s1;
	ura_system_stats(sys, &s0);
	for (int i = 0; i < r; i++) {
		B_CHECK(ura_send(sys, a, A_GO));
		B_CHECK(ura_system_await(sys));
	}
	ura_system_stats(sys, &s1);
	long n = atomic_load(&g_n);
	if (n != (long)r * k)
		b_fail("not every woken actor ran");
	qsort(g_delay, (size_t)n, sizeof *g_delay, cmp);
	printf("bench=busy_wake system=ura workers=%u rounds=%d handler_ms=%.0f woken=%d "
	       "p50_us=%.1f p99_us=%.1f max_us=%.1f steals=%llu sleeps=%llu\n",
	       s1.workers, r, ms, k, g_delay[n / 2] * 1e6, g_delay[(n * 99) / 100 < n ? (n * 99) / 100 : n - 1] * 1e6,
	       g_delay[n - 1] * 1e6, (unsigned long long)(s1.steals - s0.steals),
	       (unsigned long long)(s1.sleeps - s0.sleeps));
	free(g_delay);
	return ura_system_destroy(sys) < 0;
}
