/* SPDX-License-Identifier: MIT */
/*
 * fiber: context-switching actors (issue 18), beside their event-based
 * counterparts.
 *
 *   fiber switch N      the bare context switch (lib/actor/switch.S):
 *                       N round trips between two stacks, ns per switch
 *   fiber pingpong N    pingpong (as bench/pingpong) between two bodies
 *                       that receive; --event: the event-based pair, same
 *                       code path otherwise (interleave the two)
 *   fiber create N      N bodies spawned, each waiting in a receive; time,
 *                       peak RSS, and bytes resident per idle stack
 *   fiber scoped N      a scoped actor's request/reply round trips from
 *                       main to an event-based actor: p50, p99
 */
#include <sys/resource.h>
#include <unistd.h>

#include "bench.h"

#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_START URA_ATOM("start")
#define A_DBL URA_ATOM("dbl")

/* ---- the bare switch ------------------------------------------------------- */

/* lib/actor/switch.S (hidden in libura.so; linked from the static lib). */
void *ura__ctx_switch(void **save_sp, void *load_sp, void *arg);
void ura__ctx_start(void);

static void *main_sp, *co_sp;
static long long co_left;

static void co_main(void *arg)
{
	(void)arg;
	for (;;)
		ura__ctx_switch(&co_sp, main_sp, NULL);
}

/* The first frame, as lib/actor/fiber.c's ctx_make makes it. */
static void *co_make(char *top, void (*fn)(void *), void *arg)
{
	uintptr_t t = (uintptr_t)top & ~(uintptr_t)15;
#if defined(__x86_64__)
	uint64_t *sp = (uint64_t *)t;
	*--sp = (uint64_t)(uintptr_t)ura__ctx_start;
	*--sp = 0;
	*--sp = 0;
	*--sp = (uint64_t)(uintptr_t)arg;
	*--sp = (uint64_t)(uintptr_t)fn;
	*--sp = 0;
	*--sp = 0;
	return sp;
#else
	uint64_t *sp = (uint64_t *)(t - 160);
	memset(sp, 0, 160);
	sp[0] = (uint64_t)(uintptr_t)arg;
	sp[1] = (uint64_t)(uintptr_t)fn;
	sp[11] = (uint64_t)(uintptr_t)ura__ctx_start;
	return sp;
#endif
}

static int bench_switch(long long n)
{
	size_t len = 64 << 10;
	char *stack = malloc(len);
	co_sp = co_make(stack + len, co_main, NULL);
	co_left = n;
	double t0 = b_now();
	for (long long i = 0; i < n; i++)
		ura__ctx_switch(&main_sp, co_sp, NULL);
	double dt = b_now() - t0;
	free(stack);
	printf("bench=fiber_switch n=%lld switches=%lld wall_s=%.6f ns_per_switch=%.2f\n", n,
	       2 * n, dt, dt * 1e9 / (double)(2 * n));
	return 0;
}

/* ---- pingpong ---------------------------------------------------------------- */

static int64_t pongs_seen;
static ura_ref peer_of[2];

static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_PONG, ura_arg_i64(m, 0));
}
static void on_pong(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	pongs_seen++;
}
static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(pinging, URA_ON(A_PING, "i", on_ping));
URA_BEHAVIOR(ponging, URA_ON(A_PONG, "i", on_pong));
URA_BEHAVIOR(starting, URA_ON(A_START, "r", on_start));

static long long pp_n;

static void pong_body(ura_ctx *cx, void *st)
{
	(void)st;
	for (long long i = 0; i < pp_n; i++)
		ura_receive(cx, &pinging, URA_FOREVER);
}
static void ping_body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_receive(cx, &starting, URA_FOREVER);
	for (long long i = 0; i < pp_n; i++) {
		ura_send(cx, peer_of[1], A_PING, (int64_t)i);
		ura_receive(cx, &ponging, URA_FOREVER);
	}
}
static const ura_class fping = { .name = "fping", .body = ping_body, .stack_size = 64 << 10 };
static const ura_class fpong = { .name = "fpong", .body = pong_body, .stack_size = 64 << 10 };

/* The event-based pair, as bench/pingpong. */
typedef struct { int64_t left; ura_ref pong; } ping_state;
static void e_pong(ura_ctx *cx, const ura_msg *m)
{
	ping_state *s = ura_state(cx);
	(void)m;
	pongs_seen++;
	if (--s->left > 0)
		ura_send(cx, s->pong, A_PING, s->left);
	else
		ura_stop(cx);
}
static void e_start(ura_ctx *cx, const ura_msg *m)
{
	ping_state *s = ura_state(cx);
	s->pong = ura_arg_ref(m, 0);
	ura_send(cx, s->pong, A_PING, s->left);
}
URA_BEHAVIOR(e_ping_beh, URA_ON(A_PONG, "i", e_pong), URA_ON(A_START, "r", e_start));
static const ura_class eping = { .name = "eping", .state_size = sizeof(ping_state),
				 .initial = &e_ping_beh };
static const ura_class epong = { .name = "epong", .initial = &pinging };

static int bench_pingpong(long long n, int event)
{
	ura_system *sys = b_system();
	pp_n = n;
	ura_ref ping, pong;
	double t0 = b_now();
	if (event) {
		B_CHECK(ura_spawn(sys, &epong, NULL, &pong));
		B_CHECK(ura_spawn(sys, &eping, &(ping_state){ .left = n }, &ping));
	} else {
		B_CHECK(ura_spawn(sys, &fpong, NULL, &pong));
		B_CHECK(ura_spawn(sys, &fping, NULL, &ping));
		peer_of[1] = pong;
	}
	B_CHECK(ura_send(sys, ping, A_START, pong));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);
	if (pongs_seen != n || rc < 0)
		b_fail("pingpong");
	printf("bench=fiber_pingpong kind=%s workers=%u n=%lld msgs=%lld steals=%llu wall_s=%.6f "
	       "rate=%.0f\n", event ? "event" : "fiber", st.workers, n, 2 * n,
	       (unsigned long long)st.steals, dt, (double)(2 * n) / dt);
	return 0;
}

/* ---- creation ---------------------------------------------------------------- */

static void idle_body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_receive(cx, &pinging, URA_FOREVER);
}
static const ura_class idler = { .name = "idler", .body = idle_body, .stack_size = 64 << 10 };

static int bench_create(long long n)
{
	ura_system *sys = b_system();
	long rss0 = b_rss_kb();
	double t0 = b_now();
	for (long long i = 0; i < n; i++) {
		int rc = ura_spawn(sys, &idler, NULL, NULL);
		if (rc < 0) {
			fprintf(stderr, "spawn %lld: %s (vm.max_map_count: each stack and its "
				"guard page are two mappings)\n", i, ura_strerror(rc));
			n = i;
			break;
		}
	}
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	long rss1 = b_rss_kb();
	ura_stats st;
	ura_system_stats(sys, &st);
	double t1 = b_now();
	int rc = ura_system_destroy(sys);
	double dd = b_now() - t1;
	if (rc < 0 || st.fibers != (uint64_t)n)
		b_fail("create");
	printf("bench=fiber_create n=%lld wall_s=%.6f us_per_actor=%.3f destroy_s=%.6f "
	       "peak_rss_kb=%ld bytes_per_idle=%.0f\n", n, dt, dt * 1e6 / (double)n, dd,
	       b_peak_rss_kb(), (double)(rss1 - rss0) * 1024.0 / (double)n);
	return 0;
}

/* ---- scoped round trips -------------------------------------------------------- */

static void dbl(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_DBL, ura_arg_i64(m, 0) * 2);
}
URA_BEHAVIOR(dbl_beh, URA_ON(A_DBL, "i", dbl));
static const ura_class dbl_class = { .name = "dbl", .initial = &dbl_beh };

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int bench_scoped(long long n)
{
	ura_system *sys = b_system();
	ura_scoped *s;
	ura_ref d;
	B_CHECK(ura_scoped_new(sys, &s));
	B_CHECK(ura_spawn(sys, &dbl_class, NULL, &d));
	double *lat = malloc((size_t)n * sizeof *lat);
	for (long long i = 0; i < n; i++) {
		const ura_msg *m;
		double t0 = b_now();
		B_CHECK(ura_scoped_request(s, d, 10 * URA_SEC, &m, A_DBL, (int64_t)i));
		lat[i] = (b_now() - t0) * 1e6;
		if (ura_arg_i64(m, 0) != 2 * i)
			b_fail("scoped reply");
	}
	double total = 0;
	for (long long i = 0; i < n; i++)
		total += lat[i];
	qsort(lat, (size_t)n, sizeof *lat, cmp_d);
	/* rate= and *_lat_us= as bench/contention's, for bench/ab. */
	printf("bench=fiber_scoped n=%lld p50_us=%.2f p90_us=%.2f p99_us=%.2f "
	       "rate=%.0f p50_lat_us=%.2f p99_lat_us=%.2f max_lat_us=%.2f\n", n,
	       lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], (double)n / (total / 1e6),
	       lat[n / 2], lat[n * 99 / 100], lat[n - 1]);
	free(lat);
	ura_scoped_free(s);
	B_CHECK(ura_system_await(sys));
	return ura_system_destroy(sys) < 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";
	long long n = b_pos(argc, argv, 2, 100000);
	if (!strcmp(what, "switch"))
		return bench_switch(b_pos(argc, argv, 2, 10000000));
	if (!strcmp(what, "pingpong"))
		return bench_pingpong(b_pos(argc, argv, 2, 1000000), b_flag(argc, argv, "--event"));
	if (!strcmp(what, "create"))
		return bench_create(b_pos(argc, argv, 2, 16384));
	if (!strcmp(what, "scoped"))
		return bench_scoped(n);
	fprintf(stderr, "usage: fiber switch|pingpong|create|scoped N [--event]\n");
	return 2;
}
