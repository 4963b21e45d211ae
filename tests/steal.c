/* SPDX-License-Identifier: MIT */
/*
 * Work stealing. One actor spawns 64 CPU-busy children (each spins about
 * 2 ms of real work on its first message) and sends each a message: the
 * children start on the parent's worker, so unless the idle workers steal
 * them they all run there, one after another. They must complete on more
 * than one worker, and ura_stats.steals must count the thefts. Runs with
 * more workers than CPUs too (threads then share CPUs).
 *
 * Bursts: a hub wakes 200 actors at once, 300 times over, so thieves
 * take half a run queue at a time (core/sched.c, steal_range) and then
 * are robbed themselves; every actor must handle every round's message
 * exactly once and the counts of the system must balance. Each member
 * works ~5 us, so that a burst outlasts the age a queued actor must
 * reach before a thief takes it (steal_queue_ns, 50 us): one worker
 * that keeps up with its queue is left alone (core/sched.c, queue_ripe).
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_GO URA_ATOM("go")
#define A_WORK URA_ATOM("work")

#define NCHILD 64
#define MAXW 8

static _Atomic int g_parent_worker = -1;
static _Atomic int g_child_worker[NCHILD];
static _Atomic int g_done;
static _Atomic int g_errors;
static _Atomic uint64_t g_sink; /* keeps the busy loop from being elided */

static void child_work(ura_ctx *cx, const ura_msg *m)
{
	int64_t i = ura_arg_i64(m, 0);
	uint64_t t0 = t_now_ns(), x = (uint64_t)i + 1;
	/* About 2 ms of real work (the clock only ends the loop). */
	while (t_now_ns() - t0 < 2 * URA_MSEC)
		for (int k = 0; k < 256; k++)
			x = x * 6364136223846793005u + 1442695040888963407u;
	atomic_fetch_add_explicit(&g_sink, x, memory_order_relaxed);
	if (i < 0 || i >= NCHILD) {
		atomic_fetch_add(&g_errors, 1);
		return;
	}
	atomic_store(&g_child_worker[i], (int)ura_worker_id(cx));
	atomic_fetch_add(&g_done, 1);
}
URA_BEHAVIOR(child_beh, URA_ON(A_WORK, "i", child_work));
static const ura_class child_class = { .name = "busy", .initial = &child_beh };

static void parent_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_parent_worker, (int)ura_worker_id(cx));
	for (int i = 0; i < NCHILD; i++) {
		ura_ref c;
		if (ura_spawn(cx, &child_class, NULL, &c) < 0 ||
		    ura_send(cx, c, A_WORK, i) < 0)
			atomic_fetch_add(&g_errors, 1);
	}
}
URA_BEHAVIOR(parent_beh, URA_ON(A_GO, "", parent_go));
static const ura_class parent_class = { .name = "parent", .initial = &parent_beh };

static void run(unsigned workers)
{
	atomic_store(&g_parent_worker, -1);
	atomic_store(&g_done, 0);
	atomic_store(&g_errors, 0);
	for (int i = 0; i < NCHILD; i++)
		atomic_store(&g_child_worker[i], -1);

	ura_system *sys = t_system(workers);
	ura_ref p;
	t_must(ura_spawn(sys, &parent_class, NULL, &p));
	t_must(ura_send(sys, p, A_GO));
	t_rc(await_guarded(sys), 0, "%u workers: await", workers);
	t_eq(atomic_load(&g_errors), 0, "%u workers: spawns and sends accepted", workers);
	t_eq(atomic_load(&g_done), NCHILD, "%u workers: every child ran", workers);

	int px = atomic_load(&g_parent_worker);
	int per[MAXW] = { 0 }, bad = 0, away = 0, used = 0;
	for (int i = 0; i < NCHILD; i++) {
		int wid = atomic_load(&g_child_worker[i]);
		if (wid < 0 || wid >= (int)workers || wid >= MAXW) {
			bad++;
			continue;
		}
		per[wid]++;
		away += wid != px;
	}
	for (unsigned w = 0; w < workers && w < MAXW; w++)
		used += per[w] > 0;
	t_diag("%u workers: parent on worker %d; children per worker: %d %d %d %d",
	       workers, px, per[0], per[1], per[2], per[3]);
	t_ok(px >= 0 && px < (int)workers, "%u workers: parent's ura_worker_id in range", workers);
	t_eq(bad, 0, "%u workers: children's ura_worker_id in range", workers);
	t_ok(away > 0, "%u workers: some children ran away from the parent's worker", workers);
	if (workers == 2)
		t_ok(per[0] > 0 && per[1] > 0, "2 workers: children completed on both workers");
	else
		t_ok(used >= 2, "%u workers: children completed on %d workers", workers, used);
	ura_stats st;
	t_rc(ura_system_stats(sys, &st), 0, "%u workers: stats", workers);
	t_eq(st.workers, workers, "%u workers: stats.workers", workers);
	t_ok(st.steals > 0, "%u workers: stats.steals > 0 (%llu)", workers,
	     (unsigned long long)st.steals);
	t_eq(st.sent, st.received, "%u workers: stats: sent == received", workers);
	t_destroy(sys);
}

/* ---- bursts ---- */
#define A_ROUND URA_ATOM("round")
#define A_DONE URA_ATOM("done")
#define BURST 200
#define ROUNDS 300
static _Atomic int g_seen[BURST];
static _Atomic int g_rounds_done;
static ura_ref g_member[BURST];
typedef struct { int64_t dones, round; } hub_state;

static void member_round(ura_ctx *cx, const ura_msg *m)
{
	int64_t i = ura_arg_i64(m, 0);
	if (i < 0 || i >= BURST) {
		atomic_fetch_add(&g_errors, 1);
		return;
	}
	atomic_fetch_add(&g_seen[i], 1);
	uint64_t t0 = t_now_ns(), x = (uint64_t)i;
	while (t_now_ns() - t0 < 5 * URA_USEC)
		x = x * 6364136223846793005u + 1;
	atomic_fetch_add_explicit(&g_sink, x, memory_order_relaxed);
	if (ura_reply(cx, A_DONE) < 0)
		atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(member_beh, URA_ON(A_ROUND, "i", member_round));
static const ura_class member_class = { .name = "member", .initial = &member_beh };

static void hub_round(ura_ctx *cx)
{
	hub_state *h = ura_state(cx);
	/* One turn wakes them all: the first runs next here, the rest
	 * queue on this worker for the thieves. */
	for (int i = 0; i < BURST; i++)
		if (ura_send(cx, g_member[i], A_ROUND, i) < 0)
			atomic_fetch_add(&g_errors, 1);
	h->round++;
}
static void hub_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	hub_round(cx);
}
static void hub_done(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	hub_state *h = ura_state(cx);
	if (++h->dones % BURST)
		return;
	atomic_fetch_add(&g_rounds_done, 1);
	if (h->round < ROUNDS)
		hub_round(cx);
}
URA_BEHAVIOR(hub_beh, URA_ON(A_GO, "", hub_go), URA_ON(A_DONE, "", hub_done));
static const ura_class hub_class = { .name = "hub", .state_size = sizeof(hub_state),
				     .initial = &hub_beh };

static void bursts(unsigned workers)
{
	atomic_store(&g_errors, 0);
	atomic_store(&g_rounds_done, 0);
	for (int i = 0; i < BURST; i++)
		atomic_store(&g_seen[i], 0);
	ura_system *sys = t_system(workers);
	for (int i = 0; i < BURST; i++)
		t_must(ura_spawn(sys, &member_class, NULL, &g_member[i]));
	ura_ref hub;
	t_must(ura_spawn(sys, &hub_class, NULL, &hub));
	t_must(ura_send(sys, hub, A_GO));
	t_rc(await_guarded(sys), 0, "bursts, %u workers: await", workers);
	t_eq(atomic_load(&g_errors), 0, "bursts, %u workers: sends and replies accepted", workers);
	t_eq(atomic_load(&g_rounds_done), ROUNDS, "bursts, %u workers: every round ended", workers);
	int wrong = 0;
	for (int i = 0; i < BURST; i++)
		wrong += atomic_load(&g_seen[i]) != ROUNDS;
	t_eq(wrong, 0, "bursts, %u workers: each actor handled each round once", workers);
	ura_stats st;
	t_rc(ura_system_stats(sys, &st), 0, "bursts, %u workers: stats", workers);
	t_eq(st.sent, st.received, "bursts, %u workers: sent == received", workers);
	t_ok(st.steals > 0, "bursts, %u workers: actors were stolen (%llu)", workers,
	     (unsigned long long)st.steals);
	t_diag("bursts, %u workers: %llu steals in %llu turns", workers,
	       (unsigned long long)st.steals, (unsigned long long)st.turns);
	t_destroy(sys);
}

int main(void)
{
	if (getenv("URA_WORKERS")) {
		t_skip("URA_WORKERS set: it overrides the worker counts under test");
		return t_done();
	}
	run(2);
	run(4);
	bursts(2);
	bursts(4);
	bursts(8);
	return t_done();
}
