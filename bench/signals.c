/* SPDX-License-Identifier: MIT */
/*
 * Links and monitors (issue 15), three figures:
 *   mon     monitor + demonitor of a live actor on another worker: ns per
 *           pair in the calling handler, and per pair until quiescence
 *           (the target's side included);
 *   down    a DOWN's latency, from the target's last handler to the
 *           watcher's DOWN handler (p50, p99). The watcher is idle, so
 *           it runs where the DOWN wakes it: on the target's worker, or,
 *           under URA_TOPOLOGY=2x1 (target on node 1, watcher on node
 *           0), on the other node's worker, which the DOWN must wake.
 *           Twice: rounds driven by the main thread (each awaits
 *           quiescence, so the workers sleep between rounds, and the
 *           main thread shares the 2 CPUs with them), then rounds the
 *           watcher drives itself (it spawns the next monitored target
 *           on worker 1 from its DOWN handler: only the workers run);
 *   pairs   spawn + link + exit of N linked pairs (a links b and exits
 *           with a reason in its init; b stops on the exit signal) against
 *           spawn + stop of N unlinked pairs (a stops in its init; b is
 *           told to stop): pairs per second each, and the ratio; and the
 *           same with Erlang's spawn_link (b's init spawns a with .link,
 *           a exits in its init), one message a pair like the unlinked.
 * Usage: signals [mon_n] [down_rounds] [pairs] [only [reps]]
 */
#include <errno.h>
#include <stdatomic.h>

#include "bench.h"

#define A_GO URA_ATOM("go")
#define A_STOP URA_ATOM("stop")
#define A_WATCH URA_ATOM("watch")
#define A_CRASH URA_ATOM("crash")

static double now_ns(void) { return b_now() * 1e9; }

/* ---- mon ---- */
static void t_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
static _Atomic double g_t0;
static void t_stop_timed(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_t0, now_ns());
	ura_stop(cx);
}
URA_BEHAVIOR(target_beh, URA_ON(A_STOP, "", t_stop), URA_ON(A_GO, "", t_stop_timed));
static const ura_class target_class = { .name = "target", .initial = &target_beh };

/* 64 pairs a turn, then the rest in a later turn: the target drains its
 * mailbox in between (a million queued signals would measure the pool's
 * growth instead). */
static double g_in_handler;
static long g_pairs;
static void w_mon(ura_ctx *cx, const ura_msg *m)
{
	ura_ref t = ura_arg_ref(m, 0);
	long n = (long)ura_arg_i64(m, 1), k = n < 64 ? n : 64;
	double t0 = now_ns();
	for (long i = 0; i < k; i++) {
		ura_mon id = ura_monitor(cx, t);
		if (id <= 0 || ura_demonitor(cx, id) != 0)
			b_fail("monitor/demonitor");
	}
	g_in_handler += now_ns() - t0;
	g_pairs += k;
	if (n > k)
		ura_send(cx, ura_self(cx), A_GO, t, (int64_t)(n - k));
}
static double g_lat[100000];
static _Atomic long g_nlat;
static void w_watch(ura_ctx *cx, const ura_msg *m) { ura_monitor(cx, ura_arg_ref(m, 0)); }
static void w_down(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	double t = now_ns();
	long i = atomic_fetch_add(&g_nlat, 1);
	if (i < 100000)
		g_lat[i] = t - atomic_load(&g_t0);
}
URA_BEHAVIOR(watcher_beh, URA_ON(A_GO, "ri", w_mon), URA_ON(A_WATCH, "r", w_watch),
	     URA_ON_ANY(URA_DOWN, w_down));
static const ura_class watcher_class = { .name = "watcher", .initial = &watcher_beh };

/* The self-driven rounds: the next target from the DOWN's handler. */
static long g_chase_left;
static void c_next(ura_ctx *cx)
{
	if (g_chase_left-- <= 0)
		return;
	ura_ref t;
	ura_mon id;
	B_CHECK(ura_spawn_ex(cx, &target_class, NULL,
			     &(ura_spawn_opts){ .worker = URA_WORKER(1), .monitor = &id }, &t));
	B_CHECK(ura_send(cx, t, A_GO));
}
static void c_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	c_next(cx);
}
static void c_down(ura_ctx *cx, const ura_msg *m)
{
	w_down(cx, m);
	c_next(cx);
}
URA_BEHAVIOR(chaser_beh, URA_ON(A_GO, "", c_go), URA_ON_ANY(URA_DOWN, c_down));
static const ura_class chaser_class = { .name = "chaser", .initial = &chaser_beh };

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void print_lat(const char *what)
{
	long nl = atomic_load(&g_nlat);
	if (nl > 100000)
		nl = 100000;
	qsort(g_lat, (size_t)nl, sizeof *g_lat, cmp);
	if (nl)
		printf("down: DOWN latency %s p50 %.1f us, p99 %.1f us, max %.1f us "
		       "(rounds=%ld)\n", what, g_lat[nl / 2] / 1e3, g_lat[nl * 99 / 100] / 1e3,
		       g_lat[nl - 1] / 1e3, nl);
}

/* ---- pairs ---- */
static int a_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	const ura_ref *b = arg;
	if (ura_link(cx, *b) < 0)
		return -ENOMEM;
	return ura_exit(cx, A_CRASH, URA_NOVALUE);
}
static int a0_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	(void)arg;
	ura_stop(cx);
	return 0;
}
static int a2_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	(void)arg;
	return ura_exit(cx, A_CRASH, URA_NOVALUE);
}
URA_BEHAVIOR(none_beh, URA_ON(A_STOP, "", t_stop));
static const ura_class a_class = { .name = "a", .initial = &none_beh, .init = a_init };
static const ura_class a0_class = { .name = "a0", .initial = &none_beh, .init = a0_init };
static const ura_class a2_class = { .name = "a2", .initial = &none_beh, .init = a2_init };
static const ura_class b_class = { .name = "b", .initial = &none_beh };
/* Erlang's spawn_link: b's init spawns a linked to it (.link: no LINK
 * message, the link is in both tables before a runs); a exits. */
static int b2_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	(void)arg;
	return ura_spawn_ex(cx, &a2_class, NULL, &(ura_spawn_opts){ .link = 1 }, NULL) < 0
		       ? -ENOMEM : 0;
}
static const ura_class b2_class = { .name = "b2", .initial = &none_beh, .init = b2_init };

static long g_left;
static void d_go(ura_ctx *cx, const ura_msg *m)
{
	int linked = (int)ura_arg_i64(m, 0);
	for (int i = 0; i < 1000 && g_left > 0; i++, g_left--) {
		ura_ref b;
		if (linked == 2) {
			B_CHECK(ura_spawn(cx, &b2_class, NULL, NULL));
			continue;
		}
		B_CHECK(ura_spawn(cx, &b_class, NULL, &b));
		if (linked) {
			B_CHECK(ura_spawn(cx, &a_class, &b, NULL));
		} else {
			B_CHECK(ura_spawn(cx, &a0_class, NULL, NULL));
			B_CHECK(ura_send(cx, b, A_STOP));
		}
	}
	if (g_left > 0)
		ura_send(cx, ura_self(cx), A_GO, (int64_t)linked);
}
URA_BEHAVIOR(driver_beh, URA_ON(A_GO, "i", d_go));
static const ura_class driver_class = { .name = "driver", .initial = &driver_beh };

static double pairs_rate(ura_system *sys, int linked, long n)
{
	ura_ref d;
	g_left = n;
	B_CHECK(ura_spawn(sys, &driver_class, NULL, &d));
	double t0 = b_now();
	B_CHECK(ura_send(sys, d, A_GO, (int64_t)linked));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	B_CHECK(ura_send(sys, d, A_STOP));
	/* Its stop handled before a destroy, which refuses (-EBUSY) to lose
	 * an accepted message. */
	B_CHECK(ura_system_await(sys));
	return (double)n / dt;
}

int main(int argc, char **argv)
{
	long mon_n = (long)b_arg(argc, argv, 1, 1000000);
	long rounds = (long)b_arg(argc, argv, 2, 20000);
	long pairs = (long)b_arg(argc, argv, 3, 1000000);
	ura_system *sys;
	ura_config cfg = { .workers = 2 };
	B_CHECK(ura_system_new(&sys, &cfg));

	/* `only`: one kind of pair, once (1 unlinked, 2 link, 3 spawn_link),
	 * for an instruction count of one kind (bench/README.md). */
	if (argc > 4) {
		long only = (long)b_arg(argc, argv, 4, 1);
		if (only > 3)
			b_fail("usage: signals mon_n rounds pairs [only: 1 2 3]");
		long reps = (long)b_arg(argc, argv, 5, 1);
		for (long r = 0; r < reps; r++)
			printf("pairs: kind %ld %.0f/s (n=%ld)\n", only,
			       pairs_rate(sys, (int)only - 1, pairs), pairs);
		B_CHECK(ura_system_destroy(sys));
		return 0;
	}

	ura_ref t, w;
	B_CHECK(ura_spawn_ex(sys, &watcher_class, NULL, &(ura_spawn_opts){ .worker = URA_WORKER(0) },
			     &w));
	/* The target on the watcher's worker (the calls alone: it runs after
	 * the handler), then on the other one (each MONITOR may wake it). */
	for (unsigned tw = 0; tw < 2; tw++) {
		B_CHECK(ura_spawn_ex(sys, &target_class, NULL,
				     &(ura_spawn_opts){ .worker = URA_WORKER(tw) }, &t));
		g_in_handler = 0;
		g_pairs = 0;
		double t0 = b_now();
		B_CHECK(ura_send(sys, w, A_GO, t, (int64_t)mon_n));
		B_CHECK(ura_system_await(sys));
		double total = (b_now() - t0) * 1e9 / (double)mon_n;
		printf("mon: target on %s worker: monitor+demonitor %.1f ns in the handler, "
		       "%.1f ns to quiescence (n=%ld)\n", tw ? "the other" : "the same",
		       g_in_handler / (double)g_pairs, total, mon_n);
		B_CHECK(ura_send(sys, t, A_STOP));
		B_CHECK(ura_system_await(sys));
	}

	for (long i = 0; i < rounds; i++) {
		B_CHECK(ura_spawn_ex(sys, &target_class, NULL,
				     &(ura_spawn_opts){ .worker = URA_WORKER(1) }, &t));
		B_CHECK(ura_send(sys, w, A_WATCH, t));
		B_CHECK(ura_system_await(sys));
		B_CHECK(ura_send(sys, t, A_GO));
		B_CHECK(ura_system_await(sys));
	}
	print_lat("to an idle watcher, rounds from main");
	ura_ref c;
	B_CHECK(ura_spawn_ex(sys, &chaser_class, NULL, &(ura_spawn_opts){ .worker = URA_WORKER(0) },
			     &c));
	atomic_store(&g_nlat, 0);
	g_chase_left = rounds;
	B_CHECK(ura_send(sys, c, A_GO));
	B_CHECK(ura_system_await(sys));
	print_lat("to an idle watcher, rounds it drives");

	double r0 = pairs_rate(sys, 0, pairs), r1 = pairs_rate(sys, 1, pairs);
	double r2 = pairs_rate(sys, 2, pairs);
	double r0b = pairs_rate(sys, 0, pairs), r1b = pairs_rate(sys, 1, pairs);
	double r2b = pairs_rate(sys, 2, pairs);
	printf("pairs: spawn+stop %.0f/s %.0f/s, spawn+link+exit %.0f/s %.0f/s, ratio %.2f %.2f "
	       "(n=%ld)\n", r0, r0b, r1, r1b, r1 / r0, r1b / r0b, pairs);
	printf("pairs: spawn_link+exit %.0f/s %.0f/s, ratio %.2f %.2f (n=%ld)\n", r2, r2b,
	       r2 / r0, r2b / r0b, pairs);
	B_CHECK(ura_system_destroy(sys));
	return 0;
}
