/* SPDX-License-Identifier: MIT */
/*
 * A slot that was ever bounded keeps its mailbox's count in its first
 * line, in bytes its inline state would otherwise use (core/slot.h,
 * URA__BP_DEPTH), for good: every later incarnation, bounded or not,
 * keeps its inline state clear of it, and so does the tombstone of a
 * stopped one, while stale senders may still count there.
 *
 * Two threads send without pause to whichever actor a driver actor last
 * spawned, while it spawns and kills, two of each in turn, a bounded and
 * an unbounded class (both with a 24-byte state, the most a bounded slot
 * keeps inline) in the few slots that free up, killing each with a string
 * reason (a tombstone with a heap copy). Every handler checks its state's
 * pattern: a bounded actor's own count would break it at once if the state
 * overlapped the count, and a stale count could break an unbounded one.
 * At the end, idle, the bounded actors in reused slots show a depth of 0
 * (no count was lost to a tombstone or a state) and take their capacity.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_ROUND URA_ATOM("round")
#define A_FINAL URA_ATOM("final")
#define ROUNDS 400
#define SENDERS 2
#define MAGIC 0x5bd1e9955bd1e995ull

struct pat {
	uint64_t w[3]; /* 24 bytes: inline in a bounded slot, which keeps 16 */
};

static ura_system *g_sys;
static _Atomic uint64_t g_target;
static _Atomic int g_done;
static _Atomic long g_bad, g_got, g_sent;

static void fill(struct pat *p, ura_ref self)
{
	for (int i = 0; i < 3; i++)
		p->w[i] = MAGIC ^ (self.id + (uint64_t)i);
}

static int pat_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)arg;
	fill(state, ura_self(cx));
	return 0;
}

static void pat_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct pat want, *p = ura_state(cx);
	fill(&want, ura_self(cx));
	if (memcmp(p, &want, sizeof want))
		atomic_fetch_add(&g_bad, 1);
	atomic_fetch_add(&g_got, 1);
}

URA_BEHAVIOR(pat_beh, URA_ON(A_MSG, "", pat_msg));

static void *sender(void *arg)
{
	(void)arg;
	long n = 0;
	while (!atomic_load(&g_done)) {
		ura_ref r = { atomic_load(&g_target) };
		if (ura_send(g_sys, r, A_MSG) == 0)
			n++;
	}
	atomic_fetch_add(&g_sent, n);
	return NULL;
}

static ura_mailbox_opts g_mb = { .capacity = 4 };
static const ura_class g_bounded = { .name = "bounded", .initial = &pat_beh, .init = pat_init,
				     .state_size = sizeof(struct pat), .mailbox = &g_mb };
static const ura_class g_plain = { .name = "plain", .initial = &pat_beh, .init = pat_init,
				   .state_size = sizeof(struct pat) };

/* Slot indices (the ref's low half) that held a bounded actor. */
static uint8_t g_was_bounded[1 << 16];
static uint32_t slot_of(ura_ref r)
{
	return (uint32_t)r.id & 0xffff;
}
static int g_reused, g_spawn_rc;

/* The driver: a round kills the last child and spawns the next, on the
 * worker, so the slots it frees come back to its spawns. */
struct driver {
	ura_ref prev;
	int round;
};

static void drive(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct driver *d = ura_state(cx);
	if (!ura_ref_null(d->prev))
		ura_kill_ctx(cx, d->prev, URA_ATOM("gone"), ura_v_str("a tombstone's own string"));
	d->prev = URA_NOREF;
	if (d->round == ROUNDS || g_spawn_rc) {
		atomic_store(&g_done, 1);
		return;
	}
	/* Two of each in turn: a slot freed by round r's kill (in round
	 * r + 1) is the first taken again, by round r + 2 (a worker's free
	 * slots are a stack), which is then of the other class. */
	int b = d->round++ / 2 % 2 == 0;
	ura_ref a;
	g_spawn_rc = ura_spawn(cx, b ? &g_bounded : &g_plain, NULL, &a);
	if (!g_spawn_rc) {
		if (b)
			g_was_bounded[slot_of(a)] = 1;
		else if (g_was_bounded[slot_of(a)])
			g_reused++;
		atomic_store(&g_target, a.id);
		d->prev = a;
	}
	/* A moment for the senders to hit it. */
	ura_send_after(cx, ura_self(cx), 20 * URA_USEC, A_ROUND);
}

static _Atomic int g_final;
static int g_checked, g_depth_bad, g_full_bad;

static void final(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int i = 0; i < 64 && g_checked < 8; i++) {
		ura_ref a;
		if (ura_spawn(cx, &g_bounded, NULL, &a) || !g_was_bounded[slot_of(a)])
			continue;
		g_checked++;
		if (ura_mailbox_depth(ura_ctx_system(cx), a) != 0)
			g_depth_bad++;
		for (int k = 0; k < 4; k++)
			if (ura_send(cx, a, A_MSG) != 0)
				g_full_bad++;
	}
	atomic_store(&g_final, 1);
}

URA_BEHAVIOR(driver_beh, URA_ON(A_ROUND, "", drive), URA_ON(A_FINAL, "", final));

int main(void)
{
	/* One worker: the kills free slots where the driver spawns (a
	 * worker's own cache), so reuse does not depend on placement. */
	ura_config cfg = { .workers = 1 };
	t_must(ura_system_new(&g_sys, &cfg));
	t_must(ura_system_start(g_sys));
	pthread_t th[SENDERS];
	for (int i = 0; i < SENDERS; i++)
		pthread_create(&th[i], NULL, sender, NULL);
	ura_class dc = { .name = "driver", .initial = &driver_beh,
			 .state_size = sizeof(struct driver) };
	ura_ref drv;
	t_must(ura_spawn(g_sys, &dc, NULL, &drv));
	t_must(ura_send(g_sys, drv, A_ROUND));
	t_wait_until(atomic_load(&g_done), 60 * URA_SEC, usleep(1000));
	int finished = atomic_load(&g_done), reused = g_reused, spawn_rc = g_spawn_rc;
	atomic_store(&g_done, 1); /* the senders stop either way */
	for (int i = 0; i < SENDERS; i++)
		pthread_join(th[i], NULL);
	t_rc(spawn_rc, 0, "%d rounds of spawn and kill", ROUNDS);
	t_ok(finished, "the driver finished");
	t_rc(await_guarded(g_sys), 0, "quiescent");
	t_ok(reused > 0, "unbounded actors reused bounded slots (%d of %d)", reused,
	     ROUNDS / 2);
	t_ok(atomic_load(&g_got) > 0, "messages were handled (%ld of %ld sent)",
	     atomic_load(&g_got), atomic_load(&g_sent));
	t_eq(atomic_load(&g_bad), 0, "no state was written by a mailbox's count");

	/* Bounded again in the slots the loop used (spawned by the driver,
	 * on its worker): each count is back to 0, and the mailbox takes its
	 * capacity. */
	t_must(ura_send(g_sys, drv, A_FINAL));
	t_wait_until(atomic_load(&g_final), 60 * URA_SEC, usleep(1000));
	t_ok(g_checked > 0 && g_depth_bad == 0, "reused bounded slots count from 0 (%d checked)",
	     g_checked);
	t_eq(g_full_bad, 0, "each takes its capacity again");
	t_rc(await_guarded(g_sys), 0, "quiescent again");
	t_destroy(g_sys);
	return t_done();
}
