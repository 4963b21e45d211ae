/* SPDX-License-Identifier: MIT */
/*
 * Batched cross-node mailboxes. A worker's message to an actor living on
 * another node is not pushed into the actor's mailbox (a cache line on the
 * other node, one remote atomic per message); it goes into the worker's
 * outbox for that node. An outbox is handed over when it holds
 * numa_batch messages or at the end of the sender's turn, whichever comes
 * first, so no message waits longer than one turn: one CAS onto the
 * node's inbox and at most one wakeup per batch. A worker of that node
 * drains the inbox into the local mailboxes. When every worker of the
 * target node is idle (spinning for work, or asleep), a message is handed
 * over at once instead: its batch would reach them only when the
 * sender's turn ends, and a long handler's sends would wait for all of
 * it while that node idles (busy_wake with the woken actors on the other
 * node); an idle node has the time to take batches of one. Once a turn
 * has handed one over so, its next ones to that node go at once too,
 * busy node or not (the first woken actor keeps the node busy while the
 * handler sends the next), up to OUTBOX_EAGER a turn: a flood in one
 * turn would otherwise go as batches of one (tests/numa: 2.6 per batch
 * where 8 is the floor, into a node whose workers sleep while another
 * node's worker steals its actors).
 *
 * Order: an outbox is built newest-first, and the inbox is a stack of such
 * batches, so the whole inbox reads newest-first; the drainer reverses it
 * once. Batches from one sender are pushed in the order it flushed them,
 * and only one worker drains a node at a time, so per-sender order holds.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/outbox.h"
#include "core/post.h"
#include "core/sched.h"

#define OUTBOX_EAGER 16

static void flush(struct ura__worker *w, unsigned nd)
{
	ura_system *sys = w->sys;
	struct ura__outbox *o = &w->outbox[nd];
	struct ura__node *n = &sys->nodes[nd];
	struct ura_msg *old = atomic_load_explicit(&n->inbox, memory_order_relaxed);
	do {
		atomic_store_explicit(&o->tail->next, old, memory_order_relaxed);
		/* release: the batch's messages (and links) are visible to the
		 * drainer's acquire exchange; seq_cst for the Dekker pairing
		 * with a sleeper's look at the inbox (work_visible). */
	} while (!atomic_compare_exchange_weak_explicit(&n->inbox, &old, o->head,
						       memory_order_seq_cst,
						       memory_order_relaxed));
	ura__inc(&w->st.flushes);
	ura__add(&w->st.flushed, o->count);
	o->head = o->tail = NULL;
	o->count = 0;
	w->outbox_dirty--;
	/* At most one wakeup per batch, and none if one of that node's
	 * workers is awake (it drains at its next pass). */
	if (atomic_load_explicit(&sys->nsleeping, memory_order_relaxed)) {
		for (unsigned i = 0; i < n->count; i++) {
			struct ura__worker *v = &sys->workers[n->first + i];
			if (!atomic_load_explicit(&v->sleeping, memory_order_seq_cst))
				return; /* awake: it will see the inbox */
		}
		ura__wake(w, &sys->workers[n->first]);
	}
}

void ura__outbox_add(struct ura__worker *w, unsigned nd, struct ura__actor *a,
		     struct ura_msg *m)
{
	struct ura__outbox *o = &w->outbox[nd];
	m->to_idx = a->idx;
	atomic_store_explicit(&m->next, o->head, memory_order_relaxed);
	o->head = m;
	if (!o->tail) {
		o->tail = m;
		w->outbox_dirty++;
	}
	ura_system *sys = w->sys;
	if (++o->count >= sys->outbox_batch) {
		flush(w, nd);
		return;
	}
	struct ura__node *n = &sys->nodes[nd];
	/* Sends outside a turn (a timer, an I/O completion) count as the
	 * turn before them. */
	uint64_t turn = ura__ld(&w->st.turns);
	if (o->eager_turn != turn) {
		o->eager_turn = turn;
		o->eager = 0;
	}
	/* relaxed: a look (see the top); count is constant per node. */
	if (o->eager < OUTBOX_EAGER &&
	    (o->eager || atomic_load_explicit(&n->nidle, memory_order_relaxed) == n->count)) {
		o->eager++;
		flush(w, nd);
	}
}

void ura__outbox_flush_all(struct ura__worker *w)
{
	for (unsigned nd = 0; w->outbox_dirty && nd < w->sys->nnodes; nd++)
		if (w->outbox[nd].head)
			flush(w, nd);
}

int ura__inbox_drain(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	struct ura__node *n = &sys->nodes[w->node];
	/* One drainer per node: two could interleave one sender's batches. */
	if (atomic_exchange_explicit(&n->draining, 1, memory_order_acquire))
		return 0;
	/* acquire: pairs with the CAS in flush(). */
	struct ura_msg *m = atomic_exchange_explicit(&n->inbox, NULL, memory_order_acquire);
	struct ura_msg *prev = NULL;
	while (m) { /* newest-first -> oldest-first */
		struct ura_msg *next = atomic_load_explicit(&m->next, memory_order_relaxed);
		atomic_store_explicit(&m->next, prev, memory_order_relaxed);
		prev = m;
		m = next;
	}
	int got = 0;
	for (m = prev; m; got++) {
		struct ura_msg *next = atomic_load_explicit(&m->next, memory_order_relaxed);
		struct ura__actor *a = ura__slot_get(sys, m->to_idx);
		/* The slot exists (the sender checked it); if its actor has
		 * stopped since, the generation in m makes it a dead letter. */
		ura__deliver(sys, w, a, m);
		m = next;
	}
	/* release: our pushes happen before the next drainer's. */
	atomic_store_explicit(&n->draining, 0, memory_order_release);
	return got;
}

int ura__outboxes_init(ura_system *sys)
{
	for (unsigned i = 0; sys->numa_batch && i < sys->nworkers; i++) {
		sys->workers[i].outbox = ura__calloc(sys->nnodes, sizeof(struct ura__outbox));
		if (!sys->workers[i].outbox)
			return -ENOMEM;
	}
	return 0;
}

uint64_t ura__outboxes_fini(ura_system *sys)
{
	uint64_t lost = 0;
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		for (unsigned nd = 0; w->outbox && nd < sys->nnodes; nd++) {
			for (struct ura_msg *m = w->outbox[nd].head, *nx; m; m = nx) {
				nx = atomic_load_explicit(&m->next, memory_order_relaxed);
				ura__arena_drop(&sys->arena, m, 1);
				lost++;
			}
		}
		free(w->outbox);
		w->outbox = NULL;
	}
	for (unsigned k = 0; sys->nodes && k < sys->nnodes; k++) {
		struct ura_msg *m = atomic_load_explicit(&sys->nodes[k].inbox, memory_order_relaxed);
		for (struct ura_msg *nx; m; m = nx) {
			nx = atomic_load_explicit(&m->next, memory_order_relaxed);
			ura__arena_drop(&sys->arena, m, 1);
			lost++;
		}
		atomic_store_explicit(&sys->nodes[k].inbox, NULL, memory_order_relaxed);
	}
	return lost;
}
