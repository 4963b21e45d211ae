/* SPDX-License-Identifier: MIT */
/*
 * Sends from outside the workers that wait for room in a bounded mailbox.
 * In a paused system nothing drains, so a full mailbox stays full: a
 * ura_send_wait with a deadline gives up with -ETIMEDOUT (and one with a
 * deadline in the past at once), and keeps nothing; a waiter with a far
 * deadline gets in once the system starts; a shutdown wakes a waiter with
 * -ESHUTDOWN. Then many threads push through a URA_FULL_MUTE mailbox, and
 * through a URA_FULL_REFUSE_MUTE one,
 * ura_send waiting: every message arrives, in order per thread, and the
 * depth the receiver sees never passes the capacity. From a handler the
 * wait is -EDEADLK.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_TRY URA_ATOM("try")

#define CAP 16
#define THREADS 8

static ura_system *g_sys;
static ura_ref g_sink;
static _Atomic long g_got, g_bad_order, g_max_depth, g_deadlk;
static long g_last[THREADS];

static void sink_msg(ura_ctx *cx, const ura_msg *m)
{
	long t = (long)ura_arg_i64(m, 0), v = (long)ura_arg_i64(m, 1);
	if (t >= 0 && t < THREADS) {
		if (v != g_last[t] + 1)
			atomic_fetch_add(&g_bad_order, 1);
		g_last[t] = v;
	}
	atomic_fetch_add(&g_got, 1);
	int64_t d = ura_mailbox_depth(ura_ctx_system(cx), ura_self(cx));
	long mx = atomic_load(&g_max_depth);
	while (d > mx && !atomic_compare_exchange_weak(&g_max_depth, &mx, (long)d))
		;
}

static void sink_try(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_send_wait(ura_ctx_system(cx), ura_self(cx), ura_now_ns(), A_MSG, -1L, 0L) ==
	    -EDEADLK)
		atomic_fetch_add(&g_deadlk, 1);
}

URA_BEHAVIOR(sink_beh, URA_ON(A_MSG, "ii", sink_msg), URA_ON(A_TRY, "", sink_try));

static void reset(void)
{
	atomic_store(&g_got, 0);
	atomic_store(&g_bad_order, 0);
	atomic_store(&g_max_depth, 0);
	for (int i = 0; i < THREADS; i++)
		g_last[i] = -1;
}

struct waiter {
	pthread_t th;
	uint64_t deadline;
	int rc;
};

static void *wait_one(void *p)
{
	struct waiter *wt = p;
	wt->rc = ura_send_wait(g_sys, g_sink, wt->deadline, A_MSG, -1L, 0L);
	return NULL;
}

static void deadlines(void)
{
	reset();
	ura_config cfg = { .workers = 1, .paused = 1 };
	t_must(ura_system_new(&g_sys, &cfg));
	ura_mailbox_opts mb = { .capacity = CAP };
	ura_class c = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	t_must(ura_spawn(g_sys, &c, NULL, &g_sink));
	for (long i = 0; i < CAP; i++)
		t_must(ura_send_wait(g_sys, g_sink, ura_now_ns() + URA_SEC, A_MSG, -1L, 0L));
	t_rc(ura_send_wait(g_sys, g_sink, 0, A_MSG, -1L, 0L), -ETIMEDOUT,
	     "full, deadline 0 (the past): -ETIMEDOUT at once");
	t_rc(ura_send_wait(g_sys, g_sink, ura_now_ns() - URA_SEC, A_MSG, -1L, 0L), -ETIMEDOUT,
	     "full, a deadline in the past: -ETIMEDOUT");
	t_rc(ura_send_wait(g_sys, g_sink, ura_now_ns() + 20 * URA_MSEC, A_MSG, -1L, 0L),
	     -ETIMEDOUT, "full, nothing drains: -ETIMEDOUT at the deadline");
	t_eq(ura_mailbox_depth(g_sys, g_sink), CAP, "nothing of the refused sends kept");
	/* A waiter with a far deadline gets in once the system runs. */
	struct waiter wt = { .deadline = ura_now_ns() + 60 * URA_SEC };
	pthread_create(&wt.th, NULL, wait_one, &wt);
	t_must(ura_system_start(g_sys));
	pthread_join(wt.th, NULL);
	t_rc(wt.rc, 0, "a waiter gets in when the receiver drains");
	t_rc(await_guarded(g_sys), 0, "deadlines: quiescent");
	t_eq(atomic_load(&g_got), CAP + 1, "every accepted message arrived");
	ura_stats st = stats(g_sys);
	t_ok(st.mb_waits >= 3, "stats count waits (%llu)", (unsigned long long)st.mb_waits);
	t_eq(st.mb_refused, 3, "stats count the timed-out sends");
	t_must(ura_send(g_sys, g_sink, A_TRY));
	t_rc(await_guarded(g_sys), 0, "try: quiescent");
	t_eq(atomic_load(&g_deadlk), 1, "ura_send_wait in a handler: -EDEADLK");
	t_destroy(g_sys);
}

static void shutdown_wakes(void)
{
	reset();
	ura_config cfg = { .workers = 1, .paused = 1 };
	t_must(ura_system_new(&g_sys, &cfg));
	ura_mailbox_opts mb = { .capacity = 2, .full = URA_FULL_MUTE };
	ura_class c = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	t_must(ura_spawn(g_sys, &c, NULL, &g_sink));
	t_must(ura_send(g_sys, g_sink, A_MSG, -1L, 0L));
	t_must(ura_send(g_sys, g_sink, A_MSG, -1L, 0L));
	struct waiter wt = { .deadline = UINT64_MAX };
	pthread_create(&wt.th, NULL, wait_one, &wt);
	/* Until the waiter is in (no timing: its count says so). */
	while (stats(g_sys).mb_waits == 0)
		sched_yield();
	t_must(ura_system_shutdown(g_sys));
	pthread_join(wt.th, NULL);
	t_rc(wt.rc, -ESHUTDOWN, "shutdown wakes a waiter: -ESHUTDOWN");
	t_rc(ura_system_destroy(g_sys), -EBUSY, "destroy: the two never handled are lost");
}

struct pusher {
	pthread_t th;
	long id, n;
	int errors;
};

static void *push(void *p)
{
	struct pusher *pu = p;
	for (long i = 0; i < pu->n; i++)
		if (ura_send(g_sys, g_sink, A_MSG, pu->id, i) != 0)
			pu->errors++;
	return NULL;
}

/* Threads wait whichever of the two mutes the mailbox has (a thread is
 * muted by waiting): a send from a thread is never refused for them. */
static void many_threads(uint32_t full, const char *name)
{
	reset();
	g_sys = t_system(2);
	t_diag("threads into a %s mailbox", name);
	ura_mailbox_opts mb = { .capacity = CAP, .full = full };
	ura_class c = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	t_must(ura_spawn(g_sys, &c, NULL, &g_sink));
	long n = t_scaled(20000);
	struct pusher pu[THREADS];
	for (long i = 0; i < THREADS; i++) {
		pu[i] = (struct pusher){ .id = i, .n = n };
		pthread_create(&pu[i].th, NULL, push, &pu[i]);
	}
	int errors = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(pu[i].th, NULL);
		errors += pu[i].errors;
	}
	t_rc(await_guarded(g_sys), 0, "threads: quiescent");
	t_eq(errors, 0, "threads: every ura_send to a muting mailbox succeeded");
	t_eq(atomic_load(&g_got), THREADS * n, "threads: every message arrived");
	t_eq(atomic_load(&g_bad_order), 0, "threads: in order per thread");
	t_ok(atomic_load(&g_max_depth) <= CAP, "threads: depth never over the capacity (%ld)",
	     atomic_load(&g_max_depth));
	ura_stats st = stats(g_sys);
	t_eq(st.mb_over, 0, "threads: nothing accepted over the bound");
	t_diag("waits %llu", (unsigned long long)st.mb_waits);
	t_destroy(g_sys);
}

int main(void)
{
	deadlines();
	shutdown_wakes();
	many_threads(URA_FULL_MUTE, "URA_FULL_MUTE");
	many_threads(URA_FULL_REFUSE_MUTE, "URA_FULL_REFUSE_MUTE");
	return t_done();
}
