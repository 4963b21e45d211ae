/* SPDX-License-Identifier: MIT */
/*
 * An idle worker's spin gives its CPU away once it finds another thread
 * wants that CPU (lib/runtime/worker.c, find_work): a spin that was
 * preempted yields at each look for a while, and counts it in
 * ura_stats.spin_yields and the worker's metrics. Here a busy thread runs
 * on every CPU while the one worker spins (spin_ns long, so each spin
 * lasts many scheduler slices): the kernel must preempt the spin for the
 * other thread on its CPU, and the spin must then yield. Whatever the
 * machine's load, a CPU with two runnable threads is shared, so the spin
 * is preempted; without the detection spin_yields stays 0.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_HI URA_ATOM("hi")
static atomic_int g_hi;
static void on_hi(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_hi, 1);
}
URA_BEHAVIOR(hi_beh, URA_ON(A_HI, "", on_hi));
static const ura_class hi_class = { .name = "hi", .initial = &hi_beh };

static atomic_int g_stop;
static void *hog(void *arg)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET((int)(long)arg, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	volatile unsigned long x = 0;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed))
		x++;
	return NULL;
}

int main(void)
{
	ura_system *sys;
	/* One worker whose spins last 200 ms: many slices of a shared CPU. */
	ura_config cfg = { .workers = 1, .spin_ns = 200 * URA_MSEC };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref r;
	t_must(ura_spawn(sys, &hi_class, NULL, &r));
	ura_stats st;

	/* A busy thread on each CPU we may use (the worker's among them,
	 * pinned or not). */
	cpu_set_t set;
	CPU_ZERO(&set);
	t_must(sched_getaffinity(0, sizeof set, &set) == 0 ? 0 : -errno);
	pthread_t th[CPU_SETSIZE];
	int nth = 0;
	for (long c = 0; c < CPU_SETSIZE && nth < 64; c++)
		if (CPU_ISSET(c, &set) && pthread_create(&th[nth], NULL, hog, (void *)c) == 0)
			nth++;
	t_ok(nth > 0, "%d busy threads, one per CPU", nth);

	/* Each send starts a 200 ms spin after its turn. */
	int sent = 0;
	uint64_t t0 = t_now_ns();
	do {
		t_must(ura_send(sys, r, A_HI));
		sent++;
		usleep(50 * 1000);
		st = stats(sys);
	} while (!st.spin_yields && t_now_ns() - t0 < 20 * URA_SEC);
	atomic_store(&g_stop, 1);
	for (int i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	t_ok(st.spin_yields > 0, "a spin preempted by a busy thread yields: %llu yields after %d sends",
	     (unsigned long long)st.spin_yields, sent);

	t_rc(await_guarded(sys), 0, "await");
	t_eq(atomic_load(&g_hi), sent, "every message handled");
	ura_worker_metrics wm;
	memset(&wm, 0, sizeof wm);
	t_eq(ura_metrics_workers(sys, &wm, 1), 1, "one worker");
	st = stats(sys);
	t_ok(wm.spin_yields > 0 && wm.spin_yields <= st.spin_yields,
	     "the worker's metrics count them too (%llu of %llu)",
	     (unsigned long long)wm.spin_yields, (unsigned long long)st.spin_yields);
	t_destroy(sys);
	return t_done();
}
