/* SPDX-License-Identifier: MIT */
/*
 * The stress test of links and monitors (issue 15): at least a million
 * randomized rounds (URA_TEST_SCALE divides it) of spawn (plain, linked,
 * monitored), monitor, demonitor, link, unlink, stop (with a reason) and
 * kill, by actors on every worker, on one node and on two (the meson
 * suite runs it again with URA_TOPOLOGY=2x1), racing each other's deaths.
 *
 * Every actor traps exits and keeps a model of its monitors and links;
 * every DOWN and EXIT is checked against it and accounted for:
 *  - a DOWN names a monitor the watcher holds (none twice, none after a
 *    demonitor that returned 0), and removes it;
 *  - an EXIT from a link comes from a partner the model has linked;
 *  - monitors made == DOWNs + demonitors + monitors of watchers that
 *    stopped + monitors held at the end, and every monitor held at the
 *    end is of a live actor (no DOWN lost);
 *  - at the end every live actor's links are to live actors, and each of
 *    them has the link back (no EXIT lost, both sides agree).
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_STEP URA_ATOM("step")
#define A_REPORT URA_ATOM("report")
#define A_LINKCHK URA_ATOM("linkchk")
#define A_LINKEDBY URA_ATOM("linkedby")
#define A_UNLINKEDBY URA_ATOM("unlinkedby")
#define A_CRASH URA_ATOM("crash")
#define A_KX URA_ATOM("kx") /* ura_kill's reason: never an exit reason */

#define MAXM 12
#define MAXL 64  /* links held, its own and others' */
#define MINE 8   /* links an actor makes itself */
#define TABLE 512  /* refs that actors pick their targets from */
#define POP_MIN 64
#define POP_MAX 400

typedef struct {
	uint64_t rng;
	int nmon, nlink;
	ura_mon mon[MAXM];
	ura_ref mtgt[MAXM];
	int nmine;
	ura_ref link[MAXL];
	uint8_t mine[MAXL];
} st;

static _Atomic uint64_t g_table[TABLE];
static _Atomic long g_ops, g_target, g_live;
static _Atomic long g_made, g_downs, g_demon, g_abandoned, g_held, g_exits, g_kills;
static _Atomic long g_bad_down, g_bad_exit, g_bad_demon, g_bad_unlink, g_lost_down,
	g_lost_exit, g_asym, g_spawns, g_full;
static _Atomic uint64_t *g_all; /* every actor spawned, for the report */
static long g_all_cap;
static _Atomic long g_nall;

static uint64_t rnd(st *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static ura_ref pick(st *s)
{
	return (ura_ref){ atomic_load_explicit(&g_table[rnd(s) % TABLE], memory_order_relaxed) };
}

struct arg {
	uint64_t seed;
	ura_ref parent;
	int linked;
};

static int init(ura_ctx *cx, void *state, const void *argp)
{
	st *s = state;
	const struct arg *a = argp;
	s->rng = a->seed | 1;
	if (ura_trap_exit(cx, 1) < 0)
		return -ENOMEM;
	if (a->linked)
		s->link[s->nlink++] = a->parent; /* the parent's link: not ours */
	atomic_fetch_add(&g_live, 1);
	ura_ref self = ura_self(cx);
	atomic_store_explicit(&g_table[rnd(s) % TABLE], self.id, memory_order_relaxed);
	long i = atomic_fetch_add(&g_nall, 1);
	if (i < g_all_cap)
		atomic_store_explicit(&g_all[i], self.id, memory_order_relaxed);
	return 0;
}

static void destroy(void *state)
{
	st *s = state;
	atomic_fetch_add(&g_abandoned, s->nmon);
	atomic_fetch_sub(&g_live, 1);
}

static const ura_class node_class;

static int linked_to(st *s, ura_ref r)
{
	for (int i = 0; i < s->nlink; i++)
		if (s->link[i].id == r.id)
			return i;
	return -1;
}

static void add_link(st *s, ura_ref r, int mine)
{
	if (s->nlink >= MAXL) {
		atomic_fetch_add(&g_full, 1);
		return;
	}
	s->mine[s->nlink] = (uint8_t)mine;
	s->link[s->nlink++] = r;
	s->nmine += mine;
}

static void del_link(st *s, int i)
{
	s->nmine -= s->mine[i];
	s->link[i] = s->link[--s->nlink];
	s->mine[i] = s->mine[s->nlink];
}

static void op(ura_ctx *cx, st *s)
{
	ura_ref self = ura_self(cx);
	switch (rnd(s) % 16) {
	case 0: case 1: case 2: { /* monitor */
		ura_ref t = pick(s);
		if (s->nmon >= MAXM || t.id == self.id)
			break;
		ura_mon id = ura_monitor(cx, t);
		if (id > 0) {
			s->mon[s->nmon] = id;
			s->mtgt[s->nmon++] = t;
			atomic_fetch_add(&g_made, 1);
		}
		break;
	}
	case 3: case 4: { /* demonitor */
		if (!s->nmon)
			break;
		int i = (int)(rnd(s) % (uint64_t)s->nmon);
		int rc = ura_demonitor(cx, s->mon[i]);
		if (rc != 0)
			atomic_fetch_add(&g_bad_demon, 1);
		s->mon[i] = s->mon[--s->nmon];
		s->mtgt[i] = s->mtgt[s->nmon];
		atomic_fetch_add(&g_demon, 1);
		break;
	}
	case 5: case 6: case 7: { /* link */
		/* One side of a pair links and unlinks it (the lower ref, or a
		 * spawn_link's parent) and tells the other, which models what
		 * its runtime does with the LINK and UNLINK just before. */
		ura_ref t = pick(s);
		if (s->nmine >= MINE || t.id <= self.id || linked_to(s, t) >= 0)
			break;
		if (ura_link(cx, t) == 0) {
			add_link(s, t, 1);
			ura_send(cx, t, A_LINKEDBY);
		}
		break;
	}
	case 8: case 9: { /* unlink */
		if (!s->nmine)
			break;
		int i = (int)(rnd(s) % (uint64_t)s->nlink);
		while (!s->mine[i])
			i = (i + 1) % s->nlink;
		ura_ref t = s->link[i];
		if (ura_unlink(cx, t) != 0)
			atomic_fetch_add(&g_bad_unlink, 1);
		del_link(s, i);
		ura_send(cx, t, A_UNLINKEDBY);
		break;
	}
	case 10: case 11: case 12: { /* spawn, plain, linked or monitored */
		if (atomic_load(&g_live) >= POP_MAX)
			break;
		uint64_t r = rnd(s);
		int link = (r & 1) && s->nmine < MINE, mon = (r & 2) && s->nmon < MAXM;
		struct arg a = { .seed = rnd(s), .parent = self, .linked = link };
		ura_mon id = 0;
		ura_ref c;
		ura_spawn_opts o = { .link = link, .monitor = mon ? &id : NULL,
				     .worker = URA_WORKER((unsigned)(r >> 8) % 2) };
		if (ura_spawn_ex(cx, &node_class, &a, &o, &c) < 0)
			break;
		atomic_fetch_add(&g_spawns, 1);
		if (link)
			add_link(s, c, 1);
		if (mon) {
			s->mon[s->nmon] = id;
			s->mtgt[s->nmon++] = c;
			atomic_fetch_add(&g_made, 1);
		}
		break;
	}
	case 13: case 14: /* stop */
		if (atomic_load(&g_live) > POP_MIN)
			ura_exit(cx, rnd(s) & 1 ? A_CRASH : URA_NORMAL, URA_NOVALUE);
		break;
	case 15: { /* kill: an EXIT to trap, or rarely the unconditional one */
		ura_ref t = pick(s);
		int hard = rnd(s) % 8 == 0 && atomic_load(&g_live) > POP_MIN;
		if (t.id != self.id && ura_kill(cx, t, hard ? URA_KILL : A_KX) == 0)
			atomic_fetch_add(&g_kills, 1);
		break;
	}
	}
}

static void on_step(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	(void)m;
	int k = 1 + (int)(rnd(s) % 4);
	for (int i = 0; i < k; i++)
		op(cx, s);
	if (atomic_fetch_add(&g_ops, k) + k >= atomic_load(&g_target))
		return;
	/* Pass the step on: to a random actor, else to ourselves. */
	for (int i = 0; i < 4; i++)
		if (ura_send(cx, pick(s), A_STEP) == 0)
			return;
	ura_send(cx, ura_self(cx), A_STEP);
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	ura_mon id = ura_down_monitor(m);
	for (int i = 0; i < s->nmon; i++) {
		if (s->mon[i] != id)
			continue;
		if (s->mtgt[i].id != ura_exit_who(m).id)
			atomic_fetch_add(&g_bad_down, 1);
		s->mon[i] = s->mon[--s->nmon];
		s->mtgt[i] = s->mtgt[s->nmon];
		atomic_fetch_add(&g_downs, 1);
		return;
	}
	atomic_fetch_add(&g_bad_down, 1); /* twice, after a demonitor, or never made */
	(void)cx;
}

static void on_exit_sig(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	(void)cx;
	if (ura_exit_reason(m) == A_KX)
		return; /* a trapped ura_kill */
	int i = linked_to(s, ura_exit_who(m));
	if (i < 0) {
		atomic_fetch_add(&g_bad_exit, 1);
		return;
	}
	del_link(s, i);
	atomic_fetch_add(&g_exits, 1);
}

static void on_linkedby(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	(void)cx;
	if (linked_to(s, ura_msg_sender(m)) >= 0)
		atomic_fetch_add(&g_bad_exit, 1); /* the pair has one linking side */
	else
		add_link(s, ura_msg_sender(m), 0);
}

static void on_unlinkedby(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	(void)cx;
	int i = linked_to(s, ura_msg_sender(m));
	if (i >= 0)
		del_link(s, i);
	/* else: its EXIT came first? It cannot: the sender lives. */
	else
		atomic_fetch_add(&g_bad_exit, 1);
}

static void on_report(ura_ctx *cx, const ura_msg *m)
{
	st *s = ura_state(cx);
	ura_system *sys = ura_ctx_system(cx);
	(void)m;
	atomic_fetch_add(&g_held, s->nmon);
	for (int i = 0; i < s->nmon; i++)
		if (ura_actor_node(sys, s->mtgt[i]) < 0)
			atomic_fetch_add(&g_lost_down, 1);
	for (int i = 0; i < s->nlink; i++) {
		if (ura_actor_node(sys, s->link[i]) < 0)
			atomic_fetch_add(&g_lost_exit, 1);
		else
			ura_send(cx, s->link[i], A_LINKCHK);
	}
}

static void on_linkchk(ura_ctx *cx, const ura_msg *m)
{
	if (linked_to(ura_state(cx), ura_msg_sender(m)) < 0)
		atomic_fetch_add(&g_asym, 1);
}

URA_BEHAVIOR(node_beh,
	URA_ON(A_STEP, "", on_step),
	URA_ON_ANY(URA_DOWN, on_down),
	URA_ON_ANY(URA_EXIT, on_exit_sig),
	URA_ON(A_REPORT, "", on_report),
	URA_ON(A_LINKCHK, "", on_linkchk),
	URA_ON(A_LINKEDBY, "", on_linkedby),
	URA_ON(A_UNLINKEDBY, "", on_unlinkedby));
static const ura_class node_class = {
	.name = "node", .state_size = sizeof(st), .initial = &node_beh,
	.init = init, .destroy = destroy,
};

static void run(unsigned workers, long target)
{
	ura_system *sys = t_system(workers);
	int nodes = ura_system_nodes(sys);
	atomic_store(&g_ops, 0);
	atomic_store(&g_target, target);
	atomic_store(&g_nall, 0);
	g_all_cap = target / 2 + 1000;
	g_all = calloc((size_t)g_all_cap, sizeof *g_all);
	if (!g_all)
		abort();
	_Atomic long *ctr[] = { &g_live, &g_made, &g_downs, &g_demon, &g_abandoned, &g_held,
				&g_exits, &g_kills, &g_bad_down, &g_bad_exit, &g_bad_demon,
				&g_bad_unlink, &g_lost_down, &g_lost_exit, &g_asym, &g_spawns,
				&g_full };
	for (size_t i = 0; i < sizeof ctr / sizeof *ctr; i++)
		atomic_store(ctr[i], 0);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int hung = 0;
	while (atomic_load(&g_ops) < target && !hung) {
		/* Top the population up, then set 32 steps going. */
		for (int i = 0; atomic_load(&g_live) < POP_MIN && i < POP_MIN; i++) {
			struct arg a = { .seed = seed += 0x2545f4914f6cdd1dull };
			ura_ref r;
			t_must(ura_spawn_ex(sys, &node_class, &a,
					    &(ura_spawn_opts){ .worker = URA_WORKER((unsigned)i % 2) },
					    &r));
		}
		int sent = 0;
		for (long i = atomic_load(&g_nall) - 1; i >= 0 && sent < 32; i--) {
			if (i >= g_all_cap)
				continue;
			ura_ref r = { atomic_load(&g_all[i]) };
			sent += ura_send(sys, r, A_STEP) == 0;
		}
		hung = await_guarded(sys) != 0;
	}
	t_ok(!hung, "%u workers, %d node(s): %ld rounds ran to quiescence", workers, nodes,
	     atomic_load(&g_ops));
	long n = atomic_load(&g_nall) < g_all_cap ? atomic_load(&g_nall) : g_all_cap;
	for (long i = 0; i < n; i++)
		ura_send(sys, (ura_ref){ atomic_load(&g_all[i]) }, A_REPORT);
	t_rc(await_guarded(sys), 0, "await the report");
	t_diag("spawned %ld, monitors %ld, DOWNs %ld, demonitors %ld, link EXITs %ld, kills %ld",
	       atomic_load(&g_spawns), atomic_load(&g_made), atomic_load(&g_downs),
	       atomic_load(&g_demon), atomic_load(&g_exits), atomic_load(&g_kills));
	t_eq(atomic_load(&g_bad_down), 0, "every DOWN was of a monitor held (none twice, none "
	     "after its demonitor)");
	t_eq(atomic_load(&g_bad_demon), 0, "every demonitor of a monitor held returned 0");
	t_eq(atomic_load(&g_bad_exit), 0, "every link EXIT was from a partner linked");
	t_eq(atomic_load(&g_bad_unlink), 0, "every unlink of a partner linked returned 0");
	t_eq(atomic_load(&g_made), atomic_load(&g_downs) + atomic_load(&g_demon) +
	     atomic_load(&g_abandoned) + atomic_load(&g_held),
	     "monitors made == DOWNs + demonitors + watchers' stops + held at the end");
	t_eq(atomic_load(&g_lost_down), 0, "no monitor of a stopped actor left without its DOWN");
	t_eq(atomic_load(&g_lost_exit), 0, "no link to a stopped actor left without its EXIT");
	t_eq(atomic_load(&g_asym), 0, "every link held on both sides");
	t_eq(atomic_load(&g_full), 0, "(the test's own tables never filled up)");
	t_ok(atomic_load(&g_downs) > 0 && atomic_load(&g_exits) > 0, "DOWNs and EXITs happened");
	ura_stats sst = stats(sys);
	t_eq(sst.sent, sst.received, "every signal counted, sent and received");
	t_destroy(sys);
	t_eq(atomic_load(&g_live), 0, "destroy: every actor's destroy ran");
	free(g_all);
}

int main(void)
{
	long rounds = t_scaled(1000000);
	run(2, rounds / 2);
	run(4, rounds / 2);
	return t_done();
}
