/* SPDX-License-Identifier: MIT */
/*
 * fjthrput A N (Savina Fork-Join Throughput, defaults A=60 actors, N=10000
 * messages each): the main thread sends N rounds of one message to each of
 * A actors (from outside the runtime, as Savina's driver does); each
 * message costs a sin() and a multiply (Savina's performComputation(37.2)).
 * Every actor must handle exactly N. Rate: messages per second (A*N).
 * --bound=C: each actor's mailbox holds at most C (URA_FULL_MUTE: the main
 * thread waits for room). Unbounded, a sender faster than the workers
 * queues what they cannot take, and past the caches they take it at the
 * speed of memory (bench/README.md, "A cheaper sender, a colder receiver").
 */
#include <math.h>
#include <stdatomic.h>

#include "bench.h"

#define A_MSG URA_ATOM("msg")

typedef struct { int64_t idx, n, seen; } thr_state;

static int64_t *handled;
static _Atomic int64_t finished;
static volatile double theta = 37.2;

static void compute(void)
{
	double s = sin(theta), res = s * s;
	if (res <= 0)
		b_fail("unrealistic result");
}

static void on_msg(ura_ctx *cx, const ura_msg *m)
{
	thr_state *s = ura_state(cx);
	(void)m;
	s->seen++;
	compute();
	if (s->seen == s->n) {
		handled[s->idx] = s->seen;
		atomic_fetch_add(&finished, 1);
		ura_stop(cx);
	}
}

URA_BEHAVIOR(thr_beh, URA_ON(A_MSG, "", on_msg));
static const ura_class thr_class = { .name = "throughput", .state_size = sizeof(thr_state), .initial = &thr_beh };

int main(int argc, char **argv)
{
	int64_t A = b_pos(argc, argv, 1, 60);
	int64_t N = b_pos(argc, argv, 2, 10000);
	long long bound = b_opt(argc, argv, "--bound=", 0);
	ura_mailbox_opts mb = { .capacity = (uint32_t)bound, .full = URA_FULL_MUTE };
	ura_spawn_opts so = { .mailbox = bound > 0 ? &mb : NULL };
	ura_ref *actors = calloc((size_t)A, sizeof *actors);
	handled = calloc((size_t)A, sizeof *handled);
	if (!actors || !handled)
		b_fail("out of memory");
	ura_system *sys = b_system();
	double t0 = b_now();
	for (int64_t i = 0; i < A; i++)
		B_CHECK(ura_spawn_ex(sys, &thr_class, &(thr_state){ .idx = i, .n = N }, &so,
				     &actors[i]));
	for (int64_t m = 0; m < N; m++)
		for (int64_t i = 0; i < A; i++)
			B_CHECK(ura_send(sys, actors[i], A_MSG));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	unsigned workers = b_workers(sys);
	ura_stats st;
	if (ura_system_stats(sys, &st) == 0)
		b_stats(&st);
	int rc = ura_system_destroy(sys);
	int bad = 0;
	for (int64_t i = 0; i < A; i++)
		bad += handled[i] != N;
	if (bad || atomic_load(&finished) != A || rc < 0) {
		fprintf(stderr, "%d of %lld actors did not handle %lld messages, destroy=%d\n",
			bad, (long long)A, (long long)N, rc);
		b_fail("fjthrput");
	}
	printf("bench=fjthrput system=ura workers=%u actors=%lld n=%lld bound=%lld msgs=%lld wall_s=%.6f "
	       "rate=%.0f peak_rss_kb=%ld\n",
	       workers, (long long)A, (long long)N, bound, (long long)(A * N), dt,
	       (double)(A * N) / dt, b_peak_rss_kb());
	free(actors);
	free(handled);
	return 0;
}
