/* SPDX-License-Identifier: MIT */
/*
 * The mailbox: an intrusive Vyukov MPSC queue whose head pointer also
 * carries the actor's "idle" state in its low bit (Pony's messageq, read
 * and rewritten for ura).
 *
 *  - push: one atomic exchange, O(1), wait-free; no walk of the queue.
 *    The push that replaces an idle-marked head returns true, and only
 *    that sender schedules the actor: exactly once per idle period.
 *  - pop: no read-modify-write at all; only the holder of the "scheduled"
 *    token (whoever scheduled the actor, or claimed its slot) pops.
 *  - mark_idle: one CAS, which fails if a push got in first; then the
 *    actor stays scheduled and whoever holds the token keeps it.
 *
 * The token is also what makes it safe to touch an actor's fields: a slot
 * is only ever read or written by the thread that holds it.
 *
 * A popped message stays the queue's tail (its node is the new stub) until
 * the next pop retires it, so a handler's message lives exactly until the
 * next message is taken.
 */
#ifndef URA_CORE_MAILBOX_H
#define URA_CORE_MAILBOX_H

#include "msg/msg.h"

struct ura__mailbox {
	/* Written by every sender: the last node pushed, bit 0 = idle. */
	_Atomic(uintptr_t) head;
	/* Only the token holder: the last node popped (or the stub). */
	struct ura_msg *tail;
};

#define URA__MB_IDLE ((uintptr_t)1)

static inline void ura__mb_init(struct ura__mailbox *q, struct ura_msg *stub)
{
	atomic_store_explicit(&stub->next, NULL, memory_order_relaxed);
	q->tail = stub;
	atomic_store_explicit(&q->head, (uintptr_t)stub | URA__MB_IDLE,
			      memory_order_relaxed);
}

/* Returns true when the mailbox was idle: the caller must schedule it. */
static inline int ura__mb_push(struct ura__mailbox *q, struct ura_msg *m)
{
	atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
	/* acq_rel: release publishes m's contents (and the store above) to
	 * the consumer that will follow prev->next; acquire orders us after
	 * the previous pusher so that prev is a node we may link. */
	uintptr_t prev = atomic_exchange_explicit(&q->head, (uintptr_t)m,
						  memory_order_acq_rel);
	struct ura_msg *p = (struct ura_msg *)(prev & ~URA__MB_IDLE);
	/* release: pairs with the acquire load of ->next in ura__mb_pop. */
	atomic_store_explicit(&p->next, m, memory_order_release);
	return (int)(prev & URA__MB_IDLE);
}

/* Token holder only. Returns the next message or NULL; *retired is set to
 * the node that stopped being the tail (to be freed or stashed). */
static inline struct ura_msg *ura__mb_pop(struct ura__mailbox *q,
					  struct ura_msg **retired)
{
	struct ura_msg *t = q->tail;
	/* acquire: pairs with the release store of ->next in ura__mb_push,
	 * so the message's contents are visible. */
	struct ura_msg *n = atomic_load_explicit(&t->next, memory_order_acquire);
	if (!n)
		return NULL;
	q->tail = n;
	*retired = t;
	return n;
}

/* Token holder only. True when nothing is queued or being pushed. */
static inline int ura__mb_empty(struct ura__mailbox *q)
{
	struct ura_msg *t = q->tail;
	return !atomic_load_explicit(&t->next, memory_order_acquire) &&
	       atomic_load_explicit(&q->head, memory_order_acquire) ==
		       (uintptr_t)t;
}

/* Token holder only. Gives the token up when the mailbox is empty; false
 * if a message is queued or a push is half done (the token is kept). */
static inline int ura__mb_mark_idle(struct ura__mailbox *q)
{
	uintptr_t t = (uintptr_t)q->tail;
	if (atomic_load_explicit(&q->tail->next, memory_order_acquire))
		return 0;
	/* acq_rel: release hands every write made while holding the token
	 * to the next holder (who wins the exchange in push and reads the
	 * idle bit with acquire); acquire on failure is harmless. */
	return atomic_compare_exchange_strong_explicit(
		&q->head, &t, t | URA__MB_IDLE, memory_order_acq_rel,
		memory_order_acquire);
}

/* Takes the token of an idle mailbox without pushing (slot reuse). */
static inline int ura__mb_claim(struct ura__mailbox *q)
{
	uintptr_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	if (!(h & URA__MB_IDLE))
		return 0;
	/* acquire: pairs with the release in ura__mb_mark_idle, so every
	 * write of the last holder is visible to us. */
	return atomic_compare_exchange_strong_explicit(
		&q->head, &h, h & ~URA__MB_IDLE, memory_order_acquire,
		memory_order_relaxed);
}

#endif
