/* SPDX-License-Identifier: MIT */
/*
 * fjcreate N (Savina Fork-Join Creation, default N=40000): the main thread
 * spawns N actors and sends each one message; each handles it with a sin()
 * and a multiply (performComputation(37.2)) and stops. All N must have run
 * and stopped. Rate: actors per second (spawn + one message + stop).
 */
#include <math.h>
#include <stdatomic.h>

#include "bench.h"

#define A_MSG URA_ATOM("msg")

static _Atomic int64_t done;
static volatile double theta = 37.2;

static void on_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	double s = sin(theta), res = s * s;
	if (res <= 0)
		b_fail("unrealistic result");
	atomic_fetch_add_explicit(&done, 1, memory_order_relaxed);
	ura_stop(cx);
}

URA_BEHAVIOR(fj_beh, URA_ON(A_MSG, "", on_msg));
static const ura_class fj_class = { .name = "forkjoin", .initial = &fj_beh };

int main(int argc, char **argv)
{
	int64_t N = b_pos(argc, argv, 1, 40000);
	ura_system *sys = b_system();
	double t0 = b_now();
	for (int64_t i = 0; i < N; i++) {
		ura_ref r;
		B_CHECK(ura_spawn(sys, &fj_class, NULL, &r));
		B_CHECK(ura_send(sys, r, A_MSG));
	}
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);
	if (atomic_load(&done) != N || st.stopped != (uint64_t)N || st.live != 0 || rc < 0) {
		fprintf(stderr, "done=%lld stopped=%llu live=%llu want %lld destroy=%d\n",
			(long long)atomic_load(&done), (unsigned long long)st.stopped,
			(unsigned long long)st.live, (long long)N, rc);
		b_fail("fjcreate");
	}
	printf("bench=fjcreate system=ura workers=%u n=%lld wall_s=%.6f rate=%.0f\n",
	       st.workers, (long long)N, dt, (double)N / dt);
	return 0;
}
