/* SPDX-License-Identifier: MIT */
/* Actor lifecycle: spawn (incarnate, init), stop (die, bury), the
 * reclaim at system destroy, and the incarnations a restore makes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/fiber.h"
#include "actor/group.h"
#include "actor/signal.h"
#include "core/metrics.h"
#include "core/post.h"
#include "io/io.h"
#include "time/delay.h"

/* A stopped metered actor's turn finds its record pointer cleared: the
 * tombstone written at its stop must leave those bytes alone. */
_Static_assert(sizeof(struct ura__tomb) <= URA__AMX_INL,
	       "a tombstone leaves the record pointer (core/metrics.h) alone");

static void free_state(struct ura__actor *a)
{
	if (!a->inline_state)
		free(a->state);
	a->state = NULL;
	a->inline_state = 0;
}

/* Gives the token up after a spawn, restore or failed spawn; messages
 * that arrived meanwhile (from init, or stale ones for an earlier
 * incarnation) make that fail, and then the actor is scheduled. */
static void release(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (!ura__mb_mark_idle(&a->mb))
		ura__schedule(sys, w, a);
}

/* ---- stop ----------------------------------------------------------- */

/* The stash goes with the actor; a stashed request is answered with the
 * exit reason (actor/request.c). */
static void free_stash(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
		       uint64_t *lost, const struct ura__why *r)
{
	struct ura__actor_x *x = a->x;
	if (!x)
		return;
	for (struct ura_msg *m = x->stash, *n; m; m = n) {
		n = atomic_load_explicit(&m->next, memory_order_relaxed);
		ura__request_orphan(sys, w, a, m, r->reason, r->value);
		ura__msg_free(ura__pool_of(w), m);
		++*lost;
	}
	x->stash = x->stash_tail = NULL;
}

void ura__bury(ura_system *sys, struct ura__worker *w, struct ura__actor *a, int call_destroy,
	       struct ura__why *why)
{
	a->state_kind = URA__A_FREE;
	if (call_destroy && a->cls->destroy)
		a->cls->destroy(a->state);
	free_state(a);
	/* The exit reason into the slot (the state is gone), for signals
	 * that arrive late (actor/signal.c). */
	ura__sig_bury(w, a, why);
	if (a->x && a->x->fib) /* most have none: no call */
		ura__fiber_free(sys, a);
	ura__actor_x_free(sys, w, a);
	a->beh = NULL;
	/* A failed init (no destroy callback) was never counted as spawned,
	 * so it is not counted as stopped either. */
	if (call_destroy) {
		if (w)
			ura__inc(&w->st.stopped);
		else
			atomic_fetch_add_explicit(&sys->ext_stopped, 1, memory_order_relaxed);
	}
	/* Safe while we hold the token: a spawner's claim fails until the
	 * mailbox is idle again. */
	ura__slot_free(sys, w, a);
}

void ura__die(ura_system *sys, struct ura__worker *w, struct ura__actor *a, int call_destroy,
	      struct ura__why *why)
{
	uint64_t lost = 0;
	/* With I/O in flight the kernel may still write to the actor's
	 * buffers: cancel, and bury it when the last one completed (see
	 * URA__A_ZOMBIE and ura__actor_turn). */
	int zombie = call_destroy && w && a->x && a->x->io && a->x->io->n;
	ura_ref self = ura__self_ref(a);
	/* The reason, read only where it is used (most stops are normal and
	 * use it nowhere): r, never NULL. */
	static const struct ura__why normal = { .reason = URA_NORMAL, .set = 1 };
	struct ura__why noproc;
	if (!call_destroy) { /* a spawn that failed: it never was */
		if (why)
			ura__why_clear(why);
		noproc = (struct ura__why){ .reason = URA_NOPROC, .set = 1 };
		why = &noproc;
	}
	const struct ura__why *r = why && why->set ? why : &normal;
	/* This turn's cross-node batches go before the generation moves on:
	 * whoever sees the new generation knows every message of ours is in
	 * its receiver's mailbox or node inbox already (the order of late
	 * signals, actor/signal.c 5.). */
	if (w && w->outbox_dirty)
		ura__outbox_flush_all(w);
	if (call_destroy && ura__metered(a->cls))
		ura__mx_stopped(sys, w, a, r->reason == URA_NORMAL);
	if (call_destroy)
		URA_PROBE3(stop, (uint32_t)self.id, a->cls->name, r->reason);
	a->state_kind = zombie ? URA__A_ZOMBIE : URA__A_FREE;
	a->stopping = 0;
	/* release: a sender that sees the new generation refuses to send;
	 * one that raced us carries the old one and becomes a dead letter. */
	atomic_store_explicit(&a->gen, ura__own_gen(a) + 1, memory_order_release);
	/* Senders muted on it, threads waiting for it: released. */
	ura__bp_stop(sys, w, a);
	if (a->x && a->x->rt) {
		ura__timer_cancel(sys, w, a->x->rt);
		a->x->rt = 0;
	}
	if (a->x && a->x->timers) /* most have none: no call */
		ura__timers_cancel_owned(sys, w, a);
	free_stash(sys, w, a, &lost, r);
	if (a->x && a->x->pending) /* most have none: no call */
		ura__requests_drop(sys, w, a);
	/* Watchers, links, monitors held, open promises (actor/signal.c). */
	ura__sig_stop(sys, w, a, self, r);
	/* Stashed messages that never matched are counted with the unmatched
	 * ones: they were handled, by being dropped now. */
	if (w) {
		ura__add(&w->st.unmatched, lost);
		if (lost)
			ura__mx_unmatched(w, a, lost);
	}
	if (zombie) {
		/* Dead letters meanwhile, and the burial, read it there. */
		if (why)
			ura__sig_keep_reason(w, a, why);
		a->beh = NULL;
		ura__io_cancel_all(w, a);
		return;
	}
	ura__bury(sys, w, a, call_destroy, why);
}

/* ---- spawn ---------------------------------------------------------- */

/* A new incarnation of class cls on `node`, zeroed state, its token held
 * and its ref valid (*ref); NULL when there is no memory. Spawn runs init
 * next; a restore fills the state from a snapshot. */
static struct ura__actor *incarnate(ura_system *sys, struct ura__worker *w,
				    const ura_class *cls, const ura_mailbox_opts *mbo,
				    unsigned node, ura_ref *ref)
{
	struct ura__actor *a = ura__slot_take(sys, w);
	if (!a)
		return NULL;
	a->link1 = 0; /* was the free list's link */
	void *state = NULL;
	/* A stopped incarnation freed its side record; a fresh slot has
	 * none. Its tombstone goes now. */
	ura__tomb_free(a);
	if (a->x) {
		ura__sig_free(w, a);
		ura__actor_x_free(sys, w, a);
	}
	/* The mailbox's bound (core/bound.h): its bit goes with the node. */
	int hb = ura__bp_setup(sys, a, mbo);
	if (hb < 0) {
		ura__slot_free(sys, w, a);
		release(sys, w, a);
		return NULL;
	}
	/* A metered class keeps its record's pointer in inl's last bytes
	 * (core/metrics.h), and a slot that was ever bounded its mailbox's
	 * count in the first (core/slot.h): inline states are smaller
	 * there. */
	int metered = ura__metered(cls);
	size_t off = a->bp_slot ? URA__BP_INL : 0;
	a->inline_state = cls->state_size <= (metered ? URA__AMX_INL : sizeof a->inl) - off;
	if (a->inline_state || metered)
		memset(a->inl + off, 0, sizeof a->inl - off); /* the record: none yet */
	if (a->inline_state) {
		state = cls->state_size ? a->inl + off : NULL;
	} else {
		state = ura__calloc(1, cls->state_size);
		if (!state) {
			ura__slot_free(sys, w, a);
			release(sys, w, a);
			return NULL;
		}
	}
	a->cls = cls;
	a->beh = cls->initial;
	a->state = state;
	a->stopping = a->became = 0;
	/* Sends to a class that asked sample its mailbox wait (core/metrics.h);
	 * a body's receive counts it as a turn's pop does (actor/fiber.c). */
	if (cls->metrics & URA_CLASS_METRICS_WAIT)
		hb |= (int)URA__HOME_METERED;
	atomic_store_explicit(&a->home_node, (uint16_t)(node | (unsigned)hb), memory_order_relaxed);
	atomic_store_explicit(&a->last_worker, (uint16_t)(w ? w->id : sys->nodes[node].first),
			      memory_order_relaxed);
	a->state_kind = URA__A_ALIVE;
	uint32_t gen = ura__own_gen(a) + 1;
	/* release: pairs with the acquire in ura__msg_make; the fields above
	 * are published to senders' messages' handler through the token
	 * anyway, this only makes the ref valid. */
	atomic_store_explicit(&a->gen, gen, memory_order_release);
	*ref = ura__ref_make(a->idx, gen);
	return a;
}

/* A child's phase (its spawner's), after its gen is out (core/phase.h). */
static void phase_of_child(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	/* seq_cst fence: pairs with the one after the flip in lib/snap
	 * (Dekker). Either we see the new phase, or the snapshot thread's
	 * scan sees this actor alive: never neither. */
	ura__fence_seq_cst();
	unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
	if (!w) { /* from outside: the system's phase */
		a->snap_ph = P & 1;
		return;
	}
	/* Spawned in a turn: part of that actor's phase. An old-phase actor's
	 * child exists in the cut (its parent's saved state may hold its
	 * ref): captured now, as init left it. */
	a->snap_ph = (w->ph.cur & URA__MF_PH) ? 1 : 0;
	if (a->snap_ph != P && sys->hooks.capture)
		sys->hooks.capture(w, a);
}

/* spawn_link and spawn_monitor: the parent's (its token is held: it is
 * the actor running the handler or init that spawns) and the child's
 * (incarnated, not released) entries are made here, before the child can
 * run, so no signal is needed and no exit can slip in between. */
static int spawn_watch(struct ura__worker *w, struct ura__actor *parent, struct ura__actor *a,
		       ura_ref ref, const ura_spawn_opts *opts, uint64_t *mon)
{
	ura_ref pref = ura__self_ref(parent);
	if (opts->link) {
		/* The child's first link is inline (a->link1, fresh), and
		 * so is the parent's if it has none yet: no side record for
		 * either (actor/signal.c 7.). */
		if (parent->link1) {
			struct ura__sig *ps = ura__sig_of(w, parent);
			if (!ps || ura__sig_add(ps, URA__S_LINK, ref.id, 0, 0) < 0)
				return -ENOMEM;
		} else {
			parent->link1 = ref.id;
		}
		a->link1 = pref.id;
	}
	if (opts->monitor) {
		struct ura__sig *ps = ura__sig_of(w, parent), *cs = ura__sig_of(w, a);
		if (!ps || !cs)
			return -ENOMEM;
		uint64_t id = ps->next_mon + 1;
		if (ura__sig_add(ps, URA__S_MON, id, 0, ref.id) < 0)
			return -ENOMEM;
		if (ura__sig_add(cs, URA__S_WATCH, pref.id, id, 0) < 0) {
			ura__sig_del(ps, ura__sig_find(ps, URA__S_MON, id, 0));
			return -ENOMEM;
		}
		ps->next_mon = id;
		*mon = id;
	}
	return 0;
}

/* Takes back what spawn_watch made, without a signal: the spawn failed. */
static void spawn_unwatch(struct ura__actor *parent, struct ura__actor *a, ura_ref ref,
			  const ura_spawn_opts *opts, uint64_t mon)
{
	ura_ref pref = ura__self_ref(parent);
	struct ura__sig *ps = parent->x ? parent->x->sig : NULL;
	struct ura__sig *cs = a->x ? a->x->sig : NULL;
	struct ura__sent *e;
	if (opts->link) {
		if (parent->link1 == ref.id)
			parent->link1 = 0;
		else if (ps && (e = ura__sig_find(ps, URA__S_LINK, ref.id, 0)))
			ura__sig_del(ps, e);
		a->link1 = 0;
	}
	if (mon) {
		if (ps && (e = ura__sig_find(ps, URA__S_MON, mon, 0)))
			ura__sig_del(ps, e);
		if (cs && (e = ura__sig_find(cs, URA__S_WATCH, pref.id, mon)))
			ura__sig_del(cs, e);
	}
}

static int spawn(ura_system *sys, struct ura__worker *w, struct ura__actor *parent,
		 const ura_class *cls, const void *arg, const ura_spawn_opts *opts, ura_ref *out)
{
	if (!sys || !cls || (!cls->initial && !cls->body) || !cls->name ||
	    ura__fiber_class_ok(cls) < 0)
		return -EINVAL;
	if (atomic_load_explicit(&sys->shutdown, memory_order_relaxed))
		return -ESHUTDOWN;
	/* Placement: a named worker's node, a named node, else the
	 * spawner's node (node 0 for threads that are not workers): the
	 * spawning actor's home, not the worker's node, which differs when
	 * another node's worker took the actor over (a stuck node's inject
	 * queue or next slot, core/sched.c) -- its children would otherwise
	 * be born where it happened to run. We hold parent's token, so its
	 * home is exact. */
	unsigned node = parent ? ura__home(parent) : w ? w->node : 0;
	if (opts && (!ura__zeroed(opts->reserved_, sizeof opts->reserved_) || opts->reserved0_))
		return -EINVAL;
	int watch = opts && (opts->link || opts->monitor);
	if (watch && !parent)
		return -EINVAL; /* spawn_link from outside: there is no one to link */
	if (!ura__zeroed(cls->reserved_, sizeof cls->reserved_) ||
	    (cls->metrics & ~(URA_CLASS_METRICS | URA_CLASS_METRICS_WAIT)) ||
	    cls->unmatched > URA_UNMATCHED_STASH ||
	    (cls->initial && ura__behavior_ok(cls->initial) < 0))
		return -EINVAL;
	/* The spawn's bound replaces the class's; both are checked. */
	const ura_mailbox_opts *mbo = opts && opts->mailbox ? opts->mailbox : cls->mailbox;
	if (ura__bp_check(cls->mailbox) < 0 || (opts && ura__bp_check(opts->mailbox) < 0))
		return -EINVAL;
	if (opts && opts->worker.k1_) {
		if (opts->worker.k1_ < 0 || (unsigned)opts->worker.k1_ > sys->nworkers)
			return -EINVAL;
		node = sys->workers[opts->worker.k1_ - 1].node;
	} else if (opts && opts->node.k1_) {
		if (opts->node.k1_ < 0 || (unsigned)opts->node.k1_ > sys->nnodes)
			return -EINVAL;
		node = (unsigned)opts->node.k1_ - 1;
	}
	ura_ref ref;
	struct ura__actor *a = incarnate(sys, w, cls, mbo, node, &ref);
	if (!a)
		return -ENOMEM;
	void *state = a->state;
	if (cls->body) {
		if (!a->beh)
			a->beh = &ura__fiber_nobeh;
		int rc = ura__fiber_new(sys, a);
		if (rc < 0) {
			ura__die(sys, w, a, 0, NULL);
			release(sys, w, a);
			return rc;
		}
	}
	/* The group first, before init: a spawn that fails must not have run
	 * init without its destroy, nor destroy after a successful init (so
	 * a class that hands resources over in `arg` knows the one rule:
	 * destroy runs exactly when spawn succeeded). A group send that
	 * reaches the actor now waits in its mailbox until init is done. */
	if (opts && opts->group) {
		int rc = ura_group_join(opts->group, ref);
		if (rc < 0) {
			ura__die(sys, w, a, 0, NULL);
			release(sys, w, a);
			return rc;
		}
	}

	uint64_t mon = 0;
	if (watch) {
		int rc = spawn_watch(w, parent, a, ref, opts, &mon);
		if (rc < 0) {
			spawn_unwatch(parent, a, ref, opts, mon);
			if (opts->group)
				(void)ura_group_leave(opts->group, ref);
			ura__die(sys, w, a, 0, NULL);
			release(sys, w, a);
			return rc;
		}
	}

	/* Init's ctx: its exit reason, if it stops, lives there until the
	 * stop below. Made only for an init (a spawn without one pays no
	 * zeroing of it). */
	struct ura_ctx cx;
	if (cls->init) {
		ura__ctx_init(&cx, sys, w, a);
		cx.turn = w ? ura__ld(&w->st.turns) : ura__ctx_tag();
		int rc = cls->init(&cx, state, arg);
		if (rc < 0) {
			/* init failed: it cleans up after itself, so no
			 * destroy callback; the ref it may have leaked to
			 * others is stale from here on. The spawner's link
			 * and monitor go without a signal; links and monitors
			 * init made itself see it stop (noproc). */
			if (watch)
				spawn_unwatch(parent, a, ref, opts, mon);
			if (opts && opts->group)
				(void)ura_group_leave(opts->group, ref);
			ura__die(sys, w, a, 0, &cx.why); /* a reason init set: freed */
			release(sys, w, a);
			return rc;
		}
		/* Init's demonitors, and what it sent across nodes, go now:
		 * the child may run on another worker before this turn ends,
		 * and its own messages must not overtake these. */
		if (w && ura__unlikely(ura__sig_dem_pending(a)) && !a->stopping)
			ura__sig_dem_flush(sys, w, a, ref);
		if (w && w->outbox_dirty)
			ura__outbox_flush_all(w);
	} else if (arg && state) {
		memcpy(state, arg, cls->state_size);
	}
	if (opts && opts->monitor)
		*opts->monitor = (ura_mon)mon;
	if (w)
		ura__inc(&w->st.spawned);
	else
		atomic_fetch_add_explicit(&sys->ext_spawned, 1, memory_order_relaxed);
	if (ura__metered(cls))
		ura__mx_spawned(sys, w, a);
	URA_PROBE3(spawn, (uint32_t)ref.id, cls->name, w ? (int)w->id : -1);
	/* ura_stop() from init: stopped before anyone could reach it; what
	 * init sent to itself becomes dead letters. */
	if (a->stopping) /* only an init sets it */
		ura__die(sys, w, a, 1, &cx.why);
	else if (a->beh->timeout_ns || a->became)
		ura__rt_rearm(sys, w, a);
	a->became = 0;
	if (a->state_kind == URA__A_ALIVE)
		phase_of_child(sys, w, a);
	/* A body starts as a first turn would: scheduled with the token,
	 * and counted as a message sent that its first turn takes
	 * (ura__fiber_turn), so that the system is not quiescent while the
	 * body waits to start: all workers may be idle then, the actor in
	 * an inject queue (tests/fiber read where a body ran before it had). */
	if (a->state_kind == URA__A_ALIVE && cls->body) {
		if (w)
			ura__inc(&w->st.sent);
		else
			ura__ext_count_other(sys); /* before the push, as a send's */
		ura__schedule(sys, w, a);
	}
	else
		release(sys, w, a);
	if (out)
		*out = ref;
	return 0;
}

URA_API int ura_spawn_ex_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			     const ura_spawn_opts *opts, ura_ref *out)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	return spawn(cx->sys, cx->w, cx->a, cls, arg, opts, out);
}

URA_API int ura_spawn_ex_sys(ura_system *sys, const ura_class *cls,
			     const void *arg, const ura_spawn_opts *opts,
			     ura_ref *out)
{
	if (!sys)
		return -EINVAL;
	return spawn(sys, ura__thread_worker(sys), NULL, cls, arg, opts, out);
}

URA_API int ura_spawn_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			  ura_ref *out)
{
	return ura_spawn_ex_ctx(cx, cls, arg, NULL, out);
}

URA_API int ura_spawn_sys(ura_system *sys, const ura_class *cls,
			  const void *arg, ura_ref *out)
{
	return ura_spawn_ex_sys(sys, cls, arg, NULL, out);
}

/* ---- destroy -------------------------------------------------------- */

uint64_t ura__actor_reclaim(ura_system *sys, struct ura__actor *a)
{
	uint64_t lost = 0;
	struct ura_msg *m, *r;
	ura__tomb_free(a);
	while ((m = ura__mb_pop(&a->mb, &r))) {
		if (r != (struct ura_msg *)&a->stub)
			ura__arena_drop(&sys->arena, r, 1);
		/* I/O completions cancelled by the shutdown were never
		 * messages anyone accepted: not lost. */
		if (a->state_kind == URA__A_ALIVE && m->to_gen == ura__own_gen(a) &&
		    m->kind != URA__MK_IO)
			lost++;
	}
	if (a->mb.tail != (struct ura_msg *)&a->stub) {
		if (a->mb.tail->flags & URA__MF_STASH)
			lost++;
		ura__arena_drop(&sys->arena, a->mb.tail, 1);
		a->mb.tail = (struct ura_msg *)&a->stub;
	}
	if (a->state_kind == URA__A_ALIVE || a->state_kind == URA__A_ZOMBIE) {
		/* The workers drained their rings before this: no operation
		 * of the actor's is in the kernel any more. */
		if (a->cls->destroy)
			a->cls->destroy(a->state);
		free_state(a);
		a->state_kind = URA__A_FREE;
	}
	ura__fiber_free(sys, a);
	struct ura__actor_x *x = a->x;
	if (x) {
		for (struct ura_msg *m2 = x->stash, *n2; m2; m2 = n2) {
			n2 = atomic_load_explicit(&m2->next, memory_order_relaxed);
			ura__arena_drop(&sys->arena, m2, 1);
			lost++;
		}
		for (struct ura__pending *p = x->pending, *n2; p; p = n2) {
			n2 = p->next;
			ura__arena_drop(&sys->arena, p, 0);
		}
		/* Links and monitors: the system goes as a whole, nobody is
		 * left to tell. */
		if (x->sig) {
			struct ura__sig *s = x->sig;
			x->sig = NULL;
			if (s->tab != s->inl)
				free(s->tab);
			if (ura__value_owns(s->value))
				free(s->value.u.ptr);
			if (!ura__sig_in_x(x, s))
				ura__arena_drop(&sys->arena, s, 0);
		}
		/* Pending timers themselves are freed (and counted) with the
		 * workers' timer tables. */
		ura__actor_x_free(sys, NULL, a);
	}
	return lost;
}

/* ---- snapshots (lib/snap/restore.c) --------------------------------- */

struct ura__actor *ura__actor_restore_new(ura_system *sys, const ura_class *cls,
					  unsigned node, ura_ref *out)
{
	const ura_mailbox_opts *mbo = ura__bp_check(cls->mailbox) == 0 ? cls->mailbox : NULL;
	struct ura__actor *a = incarnate(sys, NULL, cls, mbo, node, out);
	/* relaxed: a restore fills a paused system; no snapshot is running
	 * to move the phase. */
	if (a)
		a->snap_ph = atomic_load_explicit(&sys->snap_ph, memory_order_relaxed) & 1;
	return a;
}

void ura__actor_restore_done(ura_system *sys, struct ura__actor *a, int rt)
{
	atomic_fetch_add_explicit(&sys->ext_spawned, 1, memory_order_relaxed);
	if (ura__metered(a->cls))
		ura__mx_spawned(sys, NULL, a);
	if (rt)
		ura__rt_rearm(sys, NULL, a);
	release(sys, NULL, a);
}

void ura__actor_restore_abort(ura_system *sys, struct ura__actor *a, int call_destroy)
{
	/* Never counted as spawned: die() must not count it as stopped. */
	if (call_destroy && a->cls->destroy)
		a->cls->destroy(a->state);
	ura__die(sys, NULL, a, 0, NULL);
	release(sys, NULL, a);
}
