/* SPDX-License-Identifier: MIT */
/* Bounded mailboxes: admission, the receiver's count, mutes and waits
 * (core/bound.h has the design). */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/bound.h"
#include "core/post.h"

/* Orderings not said at their use: the counters of sys->bpst are stats
 * (relaxed, they order nothing); `signalled` and `owed` are relaxed: the
 * first only keeps the overload signal to one per crossing (a race sends
 * at most one more), the second is taken by CAS and read with the counted
 * message it belongs to, which the mailbox push published. */

int ura__bp_init(ura_system *sys)
{
	sys->bps = ura__calloc(URA__MAX_CHUNKS, sizeof *sys->bps);
	return sys->bps ? 0 : -ENOMEM;
}

void ura__bp_fini(ura_system *sys)
{
	if (!sys->bps)
		return;
	for (uint32_t c = 0; c < sys->chunk_top; c++) {
		_Atomic(struct ura__bp *) *page =
			atomic_load_explicit(&sys->bps[c], memory_order_relaxed);
		if (!page)
			continue;
		for (uint32_t i = 0; i < URA__CHUNK; i++) {
			struct ura__bp *bp = atomic_load_explicit(&page[i], memory_order_relaxed);
			if (bp) {
				pthread_mutex_destroy(&bp->lock);
				free(bp);
			}
		}
		free(page);
	}
	free(sys->bps);
	sys->bps = NULL;
}

int ura__bp_check(const ura_mailbox_opts *o)
{
	if (!o)
		return 0;
	/* Opts given mean a bound: a capacity of 0 is refused, not taken
	 * for "unbounded" (that is no opts). */
	if (!ura__zeroed(o->reserved_, sizeof o->reserved_) || o->reserved0_ || !o->capacity ||
	    o->capacity > URA_MAILBOX_MAX || o->full > URA_FULL_REFUSE_MUTE)
		return -EINVAL;
	if ((o->low_water && o->low_water >= o->capacity) || o->high_water > o->capacity)
		return -EINVAL;
	return 0;
}

/* The record of slot a, made if needed (slot_lock held). */
static struct ura__bp *bp_make(ura_system *sys, struct ura__actor *a)
{
	uint32_t i = a->idx & URA__IDX_MASK;
	_Atomic(struct ura__bp *) *page =
		atomic_load_explicit(&sys->bps[i >> URA__CHUNK_SHIFT], memory_order_relaxed);
	if (!page) {
		page = ura__calloc(URA__CHUNK, sizeof *page);
		if (!page)
			return NULL;
		/* release: pairs with the acquire in ura__bp_of. */
		atomic_store_explicit(&sys->bps[i >> URA__CHUNK_SHIFT], page, memory_order_release);
	}
	struct ura__bp *bp = atomic_load_explicit(&page[i & (URA__CHUNK - 1)], memory_order_relaxed);
	if (bp)
		return bp;
	bp = aligned_alloc(URA__CACHELINE, sizeof *bp);
	if (!bp)
		return NULL;
	memset(bp, 0, sizeof *bp);
	pthread_mutex_init(&bp->lock, NULL);
	/* No sender can count yet: none has seen the bounded bit of this
	 * slot. The bytes held an earlier incarnation's inline state;
	 * from now on they are the count's (core/slot.h). relaxed: the
	 * record's release below publishes it. */
	a->bp_slot = 1;
	bp->depth = ura__bp_depth(a);
	atomic_store_explicit(bp->depth, 0, memory_order_relaxed);
	/* release: pairs with the acquire in ura__bp_of. */
	atomic_store_explicit(&page[i & (URA__CHUNK - 1)], bp, memory_order_release);
	return bp;
}

int ura__bp_setup(ura_system *sys, struct ura__actor *a, const ura_mailbox_opts *o)
{
	if (!o || ura__bp_check(o) < 0)
		return 0;
	pthread_mutex_lock(&sys->slot_lock);
	struct ura__bp *bp = bp_make(sys, a);
	pthread_mutex_unlock(&sys->slot_lock);
	if (!bp)
		return -ENOMEM;
	/* relaxed: published with the generation (release) at spawn; a
	 * sender racing a respawn reads either incarnation's settings. */
	atomic_store_explicit(&bp->cap, o->capacity, memory_order_relaxed);
	atomic_store_explicit(&bp->low, o->low_water ? o->low_water : o->capacity / 2,
			      memory_order_relaxed);
	atomic_store_explicit(&bp->high, o->high_water ? o->high_water : o->capacity,
			      memory_order_relaxed);
	atomic_store_explicit(&bp->full, o->full, memory_order_relaxed);
	atomic_store_explicit(&bp->overload, o->overload ? 1 : 0, memory_order_relaxed);
	atomic_store_explicit(&bp->owed, 0, memory_order_relaxed);
	atomic_store_explicit(&bp->signalled, 0, memory_order_relaxed);
	atomic_store_explicit(&bp->held, 0, memory_order_relaxed);
	bp->taken_since = bp->rel_depth = bp->rel_n = bp->burst = 0;
	return (int)URA__HOME_BOUNDED;
}

static void futex_wake(_Atomic uint32_t *word, int n)
{
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/* Waits while *word == val, until the absolute CLOCK_MONOTONIC deadline
 * (UINT64_MAX: none). */
static void futex_wait_until(_Atomic uint32_t *word, uint32_t val, uint64_t deadline)
{
	struct timespec ts, *tp = NULL;
	if (deadline != UINT64_MAX) {
		ts.tv_sec = (time_t)(deadline / URA_SEC);
		ts.tv_nsec = (long)(deadline % URA_SEC);
		tp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
	syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_BITSET_PRIVATE, val, tp, NULL,
		FUTEX_BITSET_MATCH_ANY);
}

/* Room was made in bp's mailbox: wakes n of its waiters (INT_MAX: all). */
static void room_made(struct ura__bp *bp, int n)
{
	/* seq_cst: pairs with the waiter's load of `room` before it reads
	 * the depth (a bump after its read wakes it, one before it is
	 * seen). */
	atomic_fetch_add_explicit(&bp->room, 1, memory_order_seq_cst);
	futex_wake(&bp->room, n);
}

void ura__bp_wake_all(ura_system *sys)
{
	/* Shutdown: every mailbox that has waiters (they see -ESHUTDOWN). */
	pthread_mutex_lock(&sys->slot_lock);
	for (uint32_t c = 0; sys->bps && c < sys->chunk_top; c++) {
		_Atomic(struct ura__bp *) *page =
			atomic_load_explicit(&sys->bps[c], memory_order_acquire);
		for (uint32_t i = 0; page && i < URA__CHUNK; i++) {
			struct ura__bp *bp = atomic_load_explicit(&page[i], memory_order_acquire);
			if (bp && atomic_load_explicit(&bp->nwait, memory_order_seq_cst))
				room_made(bp, INT_MAX);
		}
	}
	pthread_mutex_unlock(&sys->slot_lock);
}

/* Takes one unit of depth if it stays within the capacity. order: of the
 * first load (seq_cst for a waiter: its half of the handshake). */
static int reserve(struct ura__bp *bp, uint32_t cap, uint32_t *after, memory_order order)
{
	/* relaxed otherwise: the count orders nothing by itself; the
	 * message is published by the mailbox push. */
	uint32_t d = atomic_load_explicit(bp->depth, order);
	while (d < cap) {
		if (atomic_compare_exchange_weak_explicit(bp->depth, &d, d + 1,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			*after = d + 1;
			return 1;
		}
	}
	return 0;
}

/* Sends URA_OVERLOAD(depth) to a once per crossing of high water. */
static void overload(ura_system *sys, struct ura__worker *w, struct ura__bp *bp,
		     struct ura__actor *a, ura_ref to, uint32_t depth)
{
	if (!atomic_load_explicit(&bp->overload, memory_order_relaxed) ||
	    depth < atomic_load_explicit(&bp->high, memory_order_relaxed) ||
	    atomic_load_explicit(&bp->signalled, memory_order_relaxed) ||
	    atomic_exchange_explicit(&bp->signalled, 1, memory_order_relaxed))
		return;
	ura_value v = { .type = URA_T_I64, .u.i64 = depth };
	if (ura__send_msg(sys, w, w ? w->node : ura__home(a), URA_NOREF, to, URA_OVERLOAD, &v,
			  1, URA__MK_PLAIN | URA__MK_NOBOUND, 0) == 0)
		atomic_fetch_add_explicit(&sys->bpst.overloads, 1, memory_order_relaxed);
}

/* Counts m in, over the capacity. */
static void admit_over(struct ura__bp *bp, struct ura_msg *m, uint32_t *after)
{
	*after = atomic_fetch_add_explicit(bp->depth, 1, memory_order_relaxed) + 1;
	m->flags |= URA__MF_BP;
}

/* The turn's actor `from` is to be muted on a when its turn ends
 * (ura__bp_mute). The first receiver of the turn is the one it waits for. */
static void want_mute(struct ura__worker *w, struct ura__actor *a, ura_ref from, ura_ref to)
{
	if (!w->mute_on) {
		w->mute_on = a;
		w->mute_gen = ura__ref_gen(to);
		w->mute_from = from.id;
	}
}

int ura__bp_admit(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
		  struct ura__actor *a, struct ura_msg *m, uint64_t deadline)
{
	struct ura__bp *bp = ura__bp_of(sys, a->idx);
	if (!bp)
		return 0; /* cannot happen: the bit is only set with a record */
	uint32_t cap = atomic_load_explicit(&bp->cap, memory_order_relaxed), after = 0;
	if (ura__likely(reserve(bp, cap, &after, memory_order_relaxed))) {
		m->flags |= URA__MF_BP;
		overload(sys, w, bp, a, to, after);
		return 0;
	}
	uint32_t full = atomic_load_explicit(&bp->full, memory_order_relaxed);
	if (!deadline) {
		switch (full) {
		case URA_FULL_DROP_NEWEST:
			if (m->kind == URA__MK_REQUEST)
				break; /* a request that was sent always ends: refused */
			atomic_fetch_add_explicit(&sys->bpst.dropped, 1, memory_order_relaxed);
			return URA_DROPPED;
		case URA_FULL_DROP_OLDEST:
			admit_over(bp, m, &after);
			/* relaxed: the receiver reads it with its counted
			 * message, pushed after this (release). */
			atomic_fetch_add_explicit(&bp->owed, 1, memory_order_relaxed);
			return 0;
		case URA_FULL_MUTE:
			if (w && !ura_ref_null(from)) {
				admit_over(bp, m, &after);
				want_mute(w, a, from, to);
				return 0;
			}
			if (w) {
				admit_over(bp, m, &after);
				atomic_fetch_add_explicit(&sys->bpst.over, 1, memory_order_relaxed);
				return 0;
			}
			deadline = UINT64_MAX; /* a thread is muted by waiting */
			break;
		case URA_FULL_REFUSE_MUTE:
			if (w && !ura_ref_null(from)) {
				/* The cycle rule at the send (the turn's end
				 * checks it again, ura__bp_mute): to a receiver
				 * that is muted itself, or from a class that is
				 * never muted, over the bound, as URA_FULL_MUTE
				 * lets it. seq_cst: as there. */
				struct ura__actor *f = ura__slot_get(sys, ura__ref_idx(from));
				if ((atomic_load_explicit(&a->home_node, memory_order_seq_cst) &
				     URA__HOME_MUTED) ||
				    (f && f->cls && (f->cls->flags & URA_CLASS_UNMUTED))) {
					admit_over(bp, m, &after);
					atomic_fetch_add_explicit(&sys->bpst.over, 1,
								  memory_order_relaxed);
					return 0;
				}
				want_mute(w, a, from, to);
				break; /* refused: the sender keeps its values */
			}
			if (!w)
				deadline = UINT64_MAX; /* a thread waits, as for MUTE */
			break;
		default:
			break;
		}
		if (!deadline) {
			atomic_fetch_add_explicit(&sys->bpst.refused, 1, memory_order_relaxed);
			return -EAGAIN;
		}
	}
	/* Off the workers: wait for room (core/bound.h's handshake). */
	atomic_fetch_add_explicit(&sys->bpst.waits, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&bp->nwait, 1, memory_order_seq_cst);
	int rc;
	for (;;) {
		/* seq_cst: pairs with room_made's bump (see there). */
		uint32_t seen = atomic_load_explicit(&bp->room, memory_order_seq_cst);
		if (reserve(bp, cap, &after, memory_order_seq_cst)) {
			m->flags |= URA__MF_BP;
			rc = 0;
			break;
		}
		/* acquire: pairs with the release store of gen at stop. */
		if (atomic_load_explicit(&a->gen, memory_order_acquire) != ura__ref_gen(to)) {
			rc = -ESRCH;
			break;
		}
		if (atomic_load_explicit(&sys->shutdown, memory_order_relaxed)) {
			rc = -ESHUTDOWN;
			break;
		}
		if (ura__now_ns() >= deadline) {
			atomic_fetch_add_explicit(&sys->bpst.refused, 1, memory_order_relaxed);
			rc = -ETIMEDOUT;
			break;
		}
		futex_wait_until(&bp->room, seen, deadline);
	}
	/* The baton: a crossing wakes one waiter, and each waiter that
	 * leaves wakes the next while there is room, so waiters wake one
	 * after another as long as they find room, not as a herd. seq_cst:
	 * as the receiver's read of nwait. */
	if (atomic_fetch_sub_explicit(&bp->nwait, 1, memory_order_seq_cst) > 1 &&
	    atomic_load_explicit(bp->depth, memory_order_seq_cst) < cap)
		room_made(bp, 1);
	if (rc == 0)
		overload(sys, w, bp, a, to, after);
	return rc;
}

int ura__bp_owed(ura_system *sys, struct ura__bp *bp)
{
	uint32_t o = atomic_load_explicit(&bp->owed, memory_order_relaxed);
	while (o) {
		if (atomic_compare_exchange_weak_explicit(&bp->owed, &o, o - 1,
							  memory_order_relaxed,
							  memory_order_relaxed)) {
			atomic_fetch_add_explicit(&sys->bpst.dropped, 1, memory_order_relaxed);
			return 1;
		}
	}
	return 0;
}

/* Makes muted actor s runnable again (its token: from the list to a run
 * queue). */
static void unmute(ura_system *sys, struct ura__worker *w, struct ura__actor *s)
{
	/* seq_cst: pairs with the sender's read of its receiver's bit (the
	 * cycle rule); cleared before it can run and mute again. */
	atomic_fetch_and_explicit(&s->home_node, (uint16_t)~URA__HOME_MUTED,
				  memory_order_seq_cst);
	ura__schedule(sys, w, s);
}

/* Lets go of the `max` oldest muted senders (UINT32_MAX: all); returns
 * how many. */
static uint32_t release(ura_system *sys, struct ura__worker *w, struct ura__bp *bp, uint32_t max)
{
	pthread_mutex_lock(&bp->lock);
	struct ura__actor *list = bp->muted, *last = NULL;
	uint32_t n = 0;
	for (struct ura__actor *s = list; s && n < max; s = s->link, n++)
		last = s;
	if (last) {
		bp->muted = last->link;
		last->link = NULL;
		if (!bp->muted)
			bp->muted_tail = NULL;
	}
	/* relaxed: under the lock; the Dekker pair is the sender's add and
	 * our read of it (ura__bp_taken). */
	atomic_fetch_sub_explicit(&bp->nmuted, n, memory_order_relaxed);
	pthread_mutex_unlock(&bp->lock);
	while (list) {
		struct ura__actor *s = list;
		list = s->link;
		s->link = NULL;
		unmute(sys, w, s);
	}
	return n;
}

static void release_all(ura_system *sys, struct ura__worker *w, struct ura__bp *bp)
{
	release(sys, w, bp, UINT32_MAX);
}

/*
 * A take left the depth d at or below low water, with senders muted: let
 * go of as many as the room (cap - d) takes at what one released sender
 * added last time (one message before any release was measured), and of
 * all at a depth of 0, after which no take may come. Releasing all 1000
 * producers of bench/slow_consumer at each crossing scheduled them all
 * for the 512 places that 32 of them fill, and with URA_FULL_REFUSE_MUTE
 * the rest were refused and muted again: 0.9 mutes a message. The
 * estimate counts what every sender added since the last release, so it
 * errs high (fewer released), which the next take at low water makes up.
 */
static void release_paced(ura_system *sys, struct ura__worker *w, struct ura__bp *bp,
			  uint32_t d)
{
	uint32_t cap = atomic_load_explicit(&bp->cap, memory_order_relaxed);
	if (bp->rel_n) {
		/* d = rel_depth + added - taken_since (a hold's let-go counts
		 * as a take of what the hold added: the sum stays >= 0, and
		 * is clamped should a stop's hold ever break it). */
		int64_t added = (int64_t)d + (int64_t)bp->taken_since - (int64_t)bp->rel_depth;
		uint64_t per = added > 0 ? (uint64_t)added / bp->rel_n : 0;
		per = per < 1 ? 1 : per > cap ? cap : per;
		bp->burst = bp->burst ? (uint32_t)((3ull * bp->burst + per + 3) / 4) : (uint32_t)per;
	}
	/* Until a release has been seen through, one message a sender. */
	uint32_t max = UINT32_MAX, b = bp->burst ? bp->burst : 1;
	if (d) {
		max = (cap > d ? cap - d : 0) / b;
		if (!max)
			max = 1;
	}
	bp->rel_n = release(sys, w, bp, max);
	bp->rel_depth = d;
	bp->taken_since = 0;
}

void ura__bp_taken(ura_system *sys, struct ura__worker *w, struct ura__bp *bp, unsigned n)
{
	/* seq_cst: the receiver's half of the handshakes in core/bound.h. */
	uint32_t d = atomic_fetch_sub_explicit(bp->depth, n, memory_order_seq_cst) - n;
	uint32_t low = atomic_load_explicit(&bp->low, memory_order_relaxed);
	bp->taken_since += n;
	if (d > low)
		return;
	if (atomic_load_explicit(&bp->signalled, memory_order_relaxed))
		atomic_store_explicit(&bp->signalled, 0, memory_order_relaxed);
	if (atomic_load_explicit(&bp->nmuted, memory_order_seq_cst))
		release_paced(sys, w, bp, d);
	/* Waiters wake when the depth crosses low water, once: a waiter
	 * sleeps only after it saw the mailbox full (above low water), so
	 * the crossing after that wakes one, which passes the baton on
	 * (ura__bp_admit); more wakes would only cost syscalls and a herd. */
	if (d + n > low && atomic_load_explicit(&bp->nwait, memory_order_seq_cst))
		room_made(bp, 1);
}

int ura__bp_mute(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	struct ura__actor *r = w->mute_on;
	uint32_t gen = w->mute_gen;
	uint64_t from = w->mute_from;
	w->mute_on = NULL;
	if (from != ura__self_ref(a).id || r == a || a->state_kind != URA__A_ALIVE)
		return 0;
	if (a->cls && (a->cls->flags & URA_CLASS_UNMUTED)) {
		atomic_fetch_add_explicit(&sys->bpst.over, 1, memory_order_relaxed);
		return 0;
	}
	struct ura__bp *bp = ura__bp_of(sys, r->idx);
	if (!bp)
		return 0;
	/* The cycle rule: our bit first, then the receiver's (seq_cst both:
	 * of two actors muting on each other, one sees the other's bit). */
	atomic_fetch_or_explicit(&a->home_node, (uint16_t)URA__HOME_MUTED, memory_order_seq_cst);
	int muted = 0;
	if (!(atomic_load_explicit(&r->home_node, memory_order_seq_cst) & URA__HOME_MUTED)) {
		pthread_mutex_lock(&bp->lock);
		/* A receiver that stopped released its list under this lock
		 * after its generation moved on: we see the new one. */
		if (atomic_load_explicit(&r->gen, memory_order_acquire) == gen) {
			/* At the end: released oldest first. */
			struct ura__actor *prev = bp->muted_tail;
			a->link = NULL;
			if (prev)
				prev->link = a;
			else
				bp->muted = a;
			bp->muted_tail = a;
			atomic_fetch_add_explicit(&bp->nmuted, 1, memory_order_seq_cst);
			if (atomic_load_explicit(bp->depth, memory_order_seq_cst) <=
			    atomic_load_explicit(&bp->low, memory_order_relaxed)) {
				/* Drained already: not muted after all. */
				if (prev)
					prev->link = NULL;
				else
					bp->muted = NULL;
				bp->muted_tail = prev;
				atomic_fetch_sub_explicit(&bp->nmuted, 1, memory_order_relaxed);
			} else {
				muted = 1;
			}
		}
		pthread_mutex_unlock(&bp->lock);
	}
	if (!muted) {
		atomic_fetch_and_explicit(&a->home_node, (uint16_t)~URA__HOME_MUTED,
					  memory_order_seq_cst);
		/* A MUTE send went over and stays over; a REFUSE_MUTE one was
		 * refused, and its sender just runs again. */
		if (atomic_load_explicit(&bp->full, memory_order_relaxed) == URA_FULL_MUTE)
			atomic_fetch_add_explicit(&sys->bpst.over, 1, memory_order_relaxed);
		return 0;
	}
	atomic_fetch_add_explicit(&sys->bpst.mutes, 1, memory_order_relaxed);
	return 1;
}

void ura__bp_stop(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (!(atomic_load_explicit(&a->home_node, memory_order_relaxed) & URA__HOME_BOUNDED))
		return;
	struct ura__bp *bp = ura__bp_of(sys, a->idx);
	if (!bp)
		return;
	uint32_t held = atomic_exchange_explicit(&bp->held, 0, memory_order_relaxed);
	if (held)
		atomic_fetch_sub_explicit(bp->depth, held, memory_order_seq_cst);
	release_all(sys, w, bp);
	if (atomic_load_explicit(&bp->nwait, memory_order_seq_cst))
		room_made(bp, INT_MAX);
}

URA_API int ura_mailbox_hold(ura_ctx *cx, int on)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	struct ura__actor *a = cx->a;
	if (!(atomic_load_explicit(&a->home_node, memory_order_relaxed) & URA__HOME_BOUNDED))
		return -ENOTSUP;
	struct ura__bp *bp = ura__bp_of(cx->sys, a->idx);
	if (!bp)
		return -ENOTSUP;
	uint32_t held = atomic_load_explicit(&bp->held, memory_order_relaxed);
	if (!on == !held)
		return 0;
	if (on) {
		/* The capacity: any sender's reserve() then fails, whatever the
		 * real depth. seq_cst: as a sender's add, for the handshake. */
		uint32_t cap = atomic_load_explicit(&bp->cap, memory_order_relaxed);
		atomic_store_explicit(&bp->held, cap, memory_order_relaxed);
		atomic_fetch_add_explicit(bp->depth, cap, memory_order_seq_cst);
		return 0;
	}
	atomic_store_explicit(&bp->held, 0, memory_order_relaxed);
	/* As a take of `held` messages: below low water, muted senders go
	 * and a waiting thread wakes (core/bound.h's handshake). */
	ura__bp_taken(cx->sys, cx->w, bp, held);
	return 0;
}
