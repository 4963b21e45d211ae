/* SPDX-License-Identifier: MIT */
/*
 * Worker pinning: by default worker i is pinned to the i-th CPU the
 * process may use (lib/runtime/system.c, layout); ura_config.no_pinning
 * leaves the workers where the kernel puts them, and URA_PIN=0|1
 * overrides either. A handler reads its worker's affinity mask: one CPU
 * when pinned, every allowed CPU when not. With one allowed CPU both
 * look alike, so the checks are skipped there.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_LOOK URA_ATOM("look")
/* The mask size the handler saw; -1 until it ran. Release by the
 * handler, acquire by the main thread's poll. */
static atomic_int g_seen = -1;
static void on_look(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	cpu_set_t set;
	CPU_ZERO(&set);
	int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
	atomic_store_explicit(&g_seen, n, memory_order_release);
}
URA_BEHAVIOR(look_beh, URA_ON(A_LOOK, "", on_look));
static const ura_class look_class = { .name = "look", .initial = &look_beh };

/* The affinity mask size of a worker of a one-worker system. */
static int worker_cpus(int no_pinning)
{
	ura_system *sys;
	ura_ref r;
	t_must(ura_system_new(&sys, &(ura_config){ .workers = 1, .no_pinning = no_pinning }));
	t_must(ura_spawn(sys, &look_class, NULL, &r));
	atomic_store_explicit(&g_seen, -1, memory_order_relaxed);
	t_must(ura_send(sys, r, A_LOOK));
	t_wait_until(atomic_load_explicit(&g_seen, memory_order_acquire) >= 0, 30 * URA_SEC,
		     sched_yield());
	int n = atomic_load_explicit(&g_seen, memory_order_acquire);
	t_destroy(sys);
	return n;
}

int main(void)
{
	/* A simulated topology turns pinning off whatever is asked. */
	unsetenv("URA_TOPOLOGY");
	unsetenv("URA_PIN");
	cpu_set_t set;
	CPU_ZERO(&set);
	t_must(sched_getaffinity(0, sizeof set, &set) == 0 ? 0 : -errno);
	int all = CPU_COUNT(&set);
	if (all < 2) {
		t_skip("one allowed CPU: pinned and unpinned masks look alike");
		return t_done();
	}

	t_eq(worker_cpus(0), 1, "pinned by default: the worker may run on one CPU");
	t_eq(worker_cpus(1), all, "no_pinning: the worker may run on all %d allowed CPUs", all);

	setenv("URA_PIN", "0", 1);
	t_eq(worker_cpus(0), all, "URA_PIN=0 overrides the default");
	setenv("URA_PIN", "1", 1);
	t_eq(worker_cpus(1), 1, "URA_PIN=1 overrides no_pinning");
	/* A bad value is tests/misuse's, with the other variables'. */
	unsetenv("URA_PIN");
	return t_done();
}
