/* SPDX-License-Identifier: MIT */
/*
 * Run queues: the LIFO "next" slot, a stealable ring per worker with a
 * private overflow, per-node inject queues for wakes from other nodes and
 * from outside; stealing (node first), and waking sleeping peers.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/sched.h"

_Thread_local struct ura__worker *ura__current_worker;
#if defined(__SANITIZE_THREAD__)
_Atomic int ura__fence_dummy;
#endif

/* ---- waking --------------------------------------------------------- */

int ura__wake(struct ura__worker *self, struct ura__worker *v)
{
	if (!atomic_load_explicit(&v->sleeping, memory_order_seq_cst))
		return 0;
	/* One wake per sleep: the sleeper clears wake_pending when it gets
	 * up, so a second waker finds it set and leaves it to the first. */
	if (atomic_exchange_explicit(&v->wake_pending, 1, memory_order_acq_rel))
		return 1;
	if (self) {
		ura__poller_wake_from(&self->poller, &v->poller);
		ura__inc(&self->st.wakeups);
	} else {
		ura__poller_wake(&v->poller);
	}
	return 1;
}

/* Wakes the first sleeper among workers [first, first + count), looking
 * from `start` on (the waker's neighbours first: same node, warm caches). */
static void wake_among(ura_system *sys, struct ura__worker *self, unsigned first,
		       unsigned count, unsigned start)
{
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v != self && ura__wake(self, v))
			return;
	}
}

/* There is stealable work: make sure someone will come for it. */
static inline void maybe_wake(ura_system *sys, struct ura__worker *self)
{
	/* seq_cst fence: pairs with the fence after a sleeper's store to
	 * its `sleeping` flag (runtime/worker.c). Either we see the flag, or
	 * the sleeper's recheck sees our work: never neither (Dekker). */
	ura__fence_seq_cst();
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	/* A spinning worker finds the work itself; waking a sleeper as well
	 * would pay a wake (tens of us on a VM) for nothing. */
	if (atomic_load_explicit(&sys->nspinning, memory_order_relaxed))
		return;
	wake_among(sys, self, 0, sys->nworkers, self ? self->id + 1 : 0);
}

/* ---- scheduling ----------------------------------------------------- */

void ura__push_local(struct ura__worker *w, struct ura__actor *a)
{
	if (!w->ovf_head && ura__rq_push(&w->rq, a)) {
		maybe_wake(w->sys, w);
		return;
	}
	/* Full ring: the overflow list is private; it refills the ring as
	 * the ring drains (see ura__pick). */
	a->link = NULL;
	if (w->ovf_tail)
		w->ovf_tail->link = a;
	else
		w->ovf_head = a;
	w->ovf_tail = a;
}

/* Wakes one sleeping worker of node `nd` (none if one of them spins). */
static void wake_node(ura_system *sys, struct ura__worker *self, unsigned nd)
{
	ura__fence_seq_cst(); /* pairs with the sleeper's fence (see maybe_wake) */
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	wake_among(sys, self, sys->nodes[nd].first, sys->nodes[nd].count, 0);
}

/* Makes `a` runnable on its home node from a thread of another node, or
 * from a thread that is not a worker. */
static void inject(ura_system *sys, struct ura__worker *self, struct ura__actor *a,
		   unsigned nd)
{
	struct ura__node *n = &sys->nodes[nd];
	a->link = NULL;
	pthread_mutex_lock(&n->inject_lock);
	if (n->inject_tail)
		n->inject_tail->link = a;
	else
		n->inject_head = a;
	n->inject_tail = a;
	atomic_fetch_add_explicit(&n->inject_len, 1, memory_order_relaxed);
	pthread_mutex_unlock(&n->inject_lock);
	/* Not a->home_node: once queued, the actor is no longer ours to read. */
	wake_node(sys, self, nd);
}

struct ura__actor *ura__inject_pop(struct ura__worker *w)
{
	struct ura__node *n = &w->sys->nodes[w->node];
	if (!atomic_load_explicit(&n->inject_len, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&n->inject_lock);
	struct ura__actor *a = n->inject_head;
	if (a) {
		n->inject_head = a->link;
		if (!n->inject_head)
			n->inject_tail = NULL;
		atomic_fetch_sub_explicit(&n->inject_len, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&n->inject_lock);
	return a;
}

void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	unsigned home = ura__home(a); /* we hold its token: exact */
	if (!w || w->node != home) {
		/* Woken from another node: the actor goes home. */
		inject(sys, w, a, home);
		return;
	}
	/* The woken actor runs next on this worker, where the message it got
	 * is still in cache; whoever held the slot goes to the queue, where
	 * an idle peer may steal it (LIFO: the newest wake is the one whose
	 * message is hottest, and a DOWN or reply runs at once). A thief
	 * only ever empties the slot, so a slot seen empty stays empty until
	 * we fill it: the common case (pingpong, rings: the pick emptied it)
	 * is a plain store. Taking an occupied slot's holder over is an
	 * exchange, which races a thief's CAS; NULL back means the thief won
	 * it, and there is nothing to queue. release (both): publishes the
	 * actor to a thief that takes it (acquire CAS in steal_next). */
	if (atomic_load_explicit(&w->next, memory_order_relaxed)) {
		struct ura__actor *old =
			atomic_exchange_explicit(&w->next, a, memory_order_acq_rel);
		if (old)
			ura__push_local(w, old);
		return;
	}
	atomic_store_explicit(&w->next, a, memory_order_release);
	/* Someone must look at the slot if our turn goes on: wake one
	 * sleeper to watch it, once per busy period (idle_epoch moves on
	 * every idle -> busy), unless a worker spins or watches already.
	 * relaxed loads: a heuristic; a watch missed costs latency, never
	 * the actor, which runs here after the turn. */
	if (sys->nworkers > 1 && w->watch_woke != ura__ld(&w->idle_epoch) &&
	    atomic_load_explicit(&sys->nsleeping, memory_order_relaxed) &&
	    !atomic_load_explicit(&sys->nspinning, memory_order_relaxed) &&
	    !atomic_load_explicit(&sys->nwatching, memory_order_relaxed)) {
		w->watch_woke = ura__ld(&w->idle_epoch);
		wake_among(sys, w, 0, sys->nworkers, w->id + 1);
	}
}

void ura__schedule_back(struct ura__worker *w, struct ura__actor *a)
{
	ura__push_local(w, a);
}

/* Refills the ring from the private overflow list, oldest first, so the
 * overflow becomes stealable and nothing waits behind later arrivals. */
void ura__refill(struct ura__worker *w)
{
	while (w->ovf_head && ura__rq_push(&w->rq, w->ovf_head)) {
		w->ovf_head = w->ovf_head->link;
		if (!w->ovf_head)
			w->ovf_tail = NULL;
	}
}

static struct ura__actor *steal_range(struct ura__worker *w, unsigned first,
				      unsigned count)
{
	ura_system *sys = w->sys;
	w->rng = w->rng * 1103515245u + 12345u;
	unsigned start = count ? (w->rng >> 16) % count : 0;
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v == w || !ura__rq_len(&v->rq))
			continue; /* known empty: no CAS, no cache-line steal */
		struct ura__actor *a = ura__rq_pop(&v->rq);
		if (a)
			return a;
	}
	return NULL;
}

/*
 * The next slot of a peer stuck in one turn. A busy owner's slot is
 * taken only when its turn count has not moved for steal_next_ns: the
 * same turn has been running that long, and the actor in the slot has
 * waited for it. The thief watches one peer at a time (watch_*): the
 * peer, its turn count, since when. The CAS (acquire: pairs with the
 * owner's release store of the slot) races the owner's exchange in
 * ura__pick; exactly one of them gets the actor.
 */
static struct ura__actor *steal_next(struct ura__worker *w, unsigned first, unsigned count,
				     uint64_t now)
{
	ura_system *sys = w->sys;
	/* A few looks per grace period are enough, and each one reads
	 * lines the busy owner writes on every wake: a spinning thief that
	 * looked on every pass cost thread_ring ~10% at 2 workers. */
	if (now - w->watch_look < sys->steal_next_ns / 4)
		return NULL;
	w->watch_look = now;
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + i];
		if (v == w)
			continue;
		/* relaxed: a look; the CAS decides. */
		struct ura__actor *a = atomic_load_explicit(&v->next, memory_order_relaxed);
		if (!a || atomic_load_explicit(&v->idle, memory_order_relaxed))
			continue;
		uint64_t turns = ura__ld(&v->st.turns);
		if (w->watch_v != (int)v->id || w->watch_turns != turns) {
			/* A new turn: its waiting starts now. */
			if (w->watch_v == (int)v->id && w->watch_wait < 3 * sys->steal_next_ns)
				w->watch_wait *= 2; /* it moves on: look less often */
			else if (w->watch_v != (int)v->id)
				w->watch_wait = sys->steal_next_ns;
			w->watch_v = (int)v->id;
			w->watch_turns = turns;
			w->watch_since = now;
			return NULL;
		}
		if (now - w->watch_since < sys->steal_next_ns)
			return NULL;
		if (atomic_compare_exchange_strong_explicit(&v->next, &a, NULL,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			w->watch_v = -1;
			return a;
		}
		return NULL;
	}
	w->watch_v = -1; /* nothing to watch */
	return NULL;
}

/* How long a worker about to sleep may sleep before it looks at the next
 * slot it watches again; 0: it watches none (sleep until woken). */
uint64_t ura__watch_wait(struct ura__worker *w, uint64_t now)
{
	if (w->watch_v < 0)
		return 0;
	struct ura__worker *v = &w->sys->workers[w->watch_v];
	if (!atomic_load_explicit(&v->next, memory_order_relaxed) ||
	    atomic_load_explicit(&v->idle, memory_order_relaxed)) {
		w->watch_v = -1;
		return 0;
	}
	uint64_t due = w->watch_since + w->watch_wait;
	return due > now ? due - now : 1;
}

/* Same node first; other nodes only once this node has had nothing to
 * steal for steal_remote_ns (a remote actor drags its memory along). */
static struct ura__actor *steal(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	struct ura__node *n = &sys->nodes[w->node];
	struct ura__actor *a = steal_range(w, n->first, n->count);
	if (!a && sys->nworkers > 1)
		a = steal_next(w, n->first, n->count, now);
	if (a) {
		ura__inc(&w->st.steals);
		URA_PROBE2(steal, w->id, 0); /* USDT: thief, remote */
		w->local_dry_since = 0;
		return a;
	}
	if (sys->nnodes == 1)
		return NULL;
	if (!w->local_dry_since) {
		w->local_dry_since = now;
		return NULL;
	}
	if (now - w->local_dry_since < sys->steal_remote_ns)
		return NULL;
	for (unsigned k = 1; k < sys->nnodes; k++) {
		struct ura__node *r = &sys->nodes[(w->node + k) % sys->nnodes];
		if ((a = steal_range(w, r->first, r->count))) {
			ura__inc(&w->st.steals);
			ura__inc(&w->st.steals_remote);
			URA_PROBE2(steal, w->id, 1);
			return a;
		}
	}
	return NULL;
}

struct ura__actor *ura__find_stealable(struct ura__worker *w, uint64_t now)
{
	struct ura__actor *a = ura__inject_pop(w);
	return a ? a : steal(w, now);
}

int ura__has_local(struct ura__worker *w)
{
	return atomic_load_explicit(&w->next, memory_order_relaxed) || w->ovf_head ||
	       ura__rq_len(&w->rq);
}

int ura__sched_visible(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	if (atomic_load_explicit(&sys->nodes[w->node].inject_len, memory_order_relaxed))
		return 1;
	for (unsigned i = 0; i < sys->nworkers; i++)
		if (ura__rq_len(&sys->workers[i].rq))
			return 1;
	return 0;
}
