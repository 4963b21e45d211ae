/* SPDX-License-Identifier: MIT */
/*
 * thread_ring R N (Savina ThreadRing): R actors in a ring pass a token
 * whose value is decremented on every hop; the actor that receives 0 sends
 * a stop message around the ring. Every actor records how many tokens it
 * received; the sum must be N+1 (values N..0), and all R must report.
 * Same shape and check as ../shared/peers' thread_ring.
 */
#include <stdatomic.h>

#include "bench.h"

#define A_NEXT URA_ATOM("next")
#define A_TOKEN URA_ATOM("token")
#define A_STOP URA_ATOM("stop")

typedef struct { ura_ref next; int64_t idx, len, got; } ring_state;

static int64_t *received;
static _Atomic int64_t reports;

static void finish(ura_ctx *cx, ring_state *s)
{
	received[s->idx] = s->got;
	atomic_fetch_add(&reports, 1);
	ura_stop(cx);
}

static void on_next(ura_ctx *cx, const ura_msg *m)
{
	ring_state *s = ura_state(cx);
	s->next = ura_arg_ref(m, 0);
}

static void on_token(ura_ctx *cx, const ura_msg *m)
{
	ring_state *s = ura_state(cx);
	int64_t left = ura_arg_i64(m, 0);
	s->got++;
	if (left > 0) {
		B_CHECK(ura_send(cx, s->next, A_TOKEN, left - 1));
	} else {
		if (s->len > 1)
			B_CHECK(ura_send(cx, s->next, A_STOP, s->len - 1));
		finish(cx, s);
	}
}

static void on_stop(ura_ctx *cx, const ura_msg *m)
{
	ring_state *s = ura_state(cx);
	int64_t remaining = ura_arg_i64(m, 0);
	if (remaining > 1)
		B_CHECK(ura_send(cx, s->next, A_STOP, remaining - 1));
	finish(cx, s);
}

URA_BEHAVIOR(ring_beh,
	URA_ON(A_NEXT, "r", on_next),
	URA_ON(A_TOKEN, "i", on_token),
	URA_ON(A_STOP, "i", on_stop));
static ura_class ring_class = { /* not const: URA_BENCH_METERED (bench.h) */ .name = "ring", .state_size = sizeof(ring_state), .initial = &ring_beh };

int main(int argc, char **argv)
{
	int64_t R = b_pos(argc, argv, 1, 100);
	int64_t N = b_pos(argc, argv, 2, 1000000);
	ura_ref *ring = calloc((size_t)R, sizeof *ring);
	received = calloc((size_t)R, sizeof *received);
	if (!ring || !received)
		b_fail("out of memory");
	for (int64_t i = 0; i < R; i++)
		received[i] = -1;
	if (b_metered())
		b_meter(&ring_class);
	ura_system *sys = b_system();
	double t0 = b_now();
	for (int64_t i = 0; i < R; i++)
		B_CHECK(ura_spawn(sys, &ring_class, &(ring_state){ .idx = i, .len = R }, &ring[i]));
	for (int64_t i = 0; i < R; i++)
		B_CHECK(ura_send(sys, ring[i], A_NEXT, ring[(i + 1) % R]));
	B_CHECK(ura_send(sys, ring[0], A_TOKEN, N));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	unsigned workers = b_workers(sys);
	int rc = ura_system_destroy(sys);
	int64_t total = 0;
	int missing = 0;
	for (int64_t i = 0; i < R; i++) {
		if (received[i] < 0)
			missing++;
		else
			total += received[i];
	}
	if (total != N + 1 || missing || atomic_load(&reports) != R || rc < 0) {
		fprintf(stderr, "tokens=%lld want %lld, %d of %lld missing, destroy=%d\n",
			(long long)total, (long long)(N + 1), missing, (long long)R, rc);
		b_fail("thread_ring");
	}
	printf("bench=thread_ring system=ura workers=%u ring=%lld n=%lld hops=%lld wall_s=%.6f rate=%.0f\n",
	       workers, (long long)R, (long long)N, (long long)N, dt, (double)N / dt);
	free(ring);
	free(received);
	return 0;
}
