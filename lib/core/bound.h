/* SPDX-License-Identifier: MIT */
/*
 * Bounded mailboxes (ura.h, "Bounded mailboxes"): the count of what
 * senders put in a mailbox, the policy a full one applies, muted senders
 * and waiting threads.
 *
 * The cost of bounds is paid by bounded actors only. An actor is bounded
 * when its home_node word carries URA__HOME_BOUNDED (core/slot.h): the
 * post path reads that word anyway, so an unbounded send pays one test of
 * a bit already loaded. Its record (struct ura__bp) sits in a side table
 * by slot index, made on the slot's first bounded spawn and kept for the
 * system's life: a send racing a stop and respawn always finds valid
 * memory, as with slots.
 *
 * The count. A sender that admits a message (the only ones that count:
 * plain sends and requests) adds one to `depth` and sets URA__MF_BP on
 * the message; the turn counts the URA__MF_BP messages it took and
 * subtracts them once, at its end (ura__bp_taken). So `depth` is exactly
 * the counted messages queued or in the turn, for this slot, across
 * incarnations; it is never reset. It lives in the slot, beside the
 * mailbox's head (core/slot.h, URA__BP_DEPTH), not in the record: a send
 * then brings one contended line to its CPU, not two (1.4x on 20 threads
 * sending into a mailbox bounded at 1024, bench/README.md). Those bytes
 * belong to the count for the slot's life, whatever its later
 * incarnations are, since a sender that read the bounded bit may count
 * after the slot moved on.
 *
 * Muting, and the one Dekker handshake it needs. A muted sender keeps its
 * own token (it is runnable but held by the receiver's mute list, never in
 * a run queue). The sender, at the end of its turn, with the list's lock:
 * adds itself, bumps `nmuted` (seq_cst), reads `depth` (seq_cst), and
 * leaves again if the depth is already down to low water. The receiver
 * subtracts from `depth` (seq_cst), then reads `nmuted` (seq_cst). Of the
 * two, at least one sees the other's write: either the sender sees the
 * low depth and does not stay muted, or the receiver sees it listed and
 * releases it. (While the depth is above low water the receiver has
 * messages and runs again, so it checks again.) Waiting threads do the
 * same with `nwait` and the record's futex word `room`.
 *
 * The release is paced: at a take that leaves the depth at or below low
 * water the receiver lets go of the oldest muted senders, as many as the
 * room left would take at what one released sender added last time
 * (ura__bp_taken), and of all of them at a depth of 0. Every take at or
 * below low water lets at least one go, and a depth above 0 means a take
 * is still to come, so no sender stays muted on a receiver that drained.
 *
 * A hold (ura_mailbox_hold) adds the capacity to `depth` and a let-go
 * takes it off as a turn's take would (ura__bp_taken), so senders and
 * the handshake above see one number and need no second test.
 *
 * No cycles: an actor mutes only after setting URA__HOME_MUTED in its own
 * home word and seeing it clear in the receiver's (both seq_cst). Of a
 * would-be cycle, the actor that set its bit last sees its receiver's bit
 * set, and is not muted.
 */
#ifndef URA_CORE_BOUND_H
#define URA_CORE_BOUND_H

#include "core/core.h"

struct ura__bp {
	/* Senders and the receiver. The count, in the slot's first line
	 * (core/slot.h, ura__bp_depth): fixed when the record is made. */
	alignas(URA__CACHELINE) _Atomic uint32_t *depth;
	_Atomic uint32_t owed;      /* DROP_OLDEST: messages the receiver drops */
	_Atomic uint32_t nmuted;    /* actors on `muted` (Dekker with depth) */
	_Atomic uint32_t nwait;     /* threads waiting for room */
	_Atomic uint32_t signalled; /* an overload signal was sent, not re-armed */
	_Atomic uint32_t room;      /* futex word of the waiters: bumped on room */
	/* The settings: written at spawn by the token holder, read by
	 * senders (relaxed: a sender racing a respawn applies either
	 * incarnation's, and the message is a dead letter anyway). */
	_Atomic uint32_t cap, low, high, full, overload;
	/* ura_mailbox_hold: what the hold added to `depth` (0: not held).
	 * Written by the token holder (the actor, or its stop); relaxed:
	 * the depth it stands in carries the ordering. */
	_Atomic uint32_t held;
	pthread_mutex_t lock;
	/* Under lock: the muted senders, oldest first, linked through
	 * ->link. */
	struct ura__actor *muted, *muted_tail;
	/* The receiver's (its token holder's, ura__bp_taken): the pace of
	 * releases. Counted messages taken since the last release, the
	 * depth then and how many senders it let go, and what one released
	 * sender has added before it was muted again (a running estimate,
	 * 0: none yet). */
	uint64_t taken_since;
	uint32_t rel_depth, rel_n, burst;
};

/* A message counted in its receiver's depth carries URA__MF_BP (declared
 * with the other flags in msg/msg.h). */

/* A kind bit for ura__send_msg: a system message sent as a plain one (an
 * OS signal), which no bound refuses. */
#define URA__MK_NOBOUND 0x80

/* The record of a slot that was ever bounded, else NULL. Any thread. */
static inline struct ura__bp *ura__bp_of(ura_system *sys, uint32_t idx)
{
	uint32_t i = idx & URA__IDX_MASK;
	/* acquire: pairs with the release stores in ura__bp_setup. */
	_Atomic(struct ura__bp *) *page =
		atomic_load_explicit(&sys->bps[i >> URA__CHUNK_SHIFT], memory_order_acquire);
	if (!page)
		return NULL;
	return atomic_load_explicit(&page[i & (URA__CHUNK - 1)], memory_order_acquire);
}

/* -EINVAL for opts a spawn must refuse (ura.h). */
int ura__bp_check(const ura_mailbox_opts *o);
/* Spawn, token held, before the generation is published: sets a's bound
 * (o NULL, or not valid: none) and returns the home bits to store with
 * its node; -ENOMEM. */
int ura__bp_setup(ura_system *sys, struct ura__actor *a, const ura_mailbox_opts *o);
/* A plain send or request m from `from` (URA_NOREF: no actor) to bounded
 * actor a: 0 (admitted; m counted), URA_DROPPED, -EAGAIN, or, waiting
 * until `deadline` (0: never wait; only off the workers), -ETIMEDOUT,
 * -ESRCH, -ESHUTDOWN. On a result other than 0 the caller frees m. */
int ura__bp_admit(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
		  struct ura__actor *a, struct ura_msg *m, uint64_t deadline);
/* The receiver's turn took a counted message: true when DROP_OLDEST owes
 * a drop, and this message is it (the caller drops it as handled). */
int ura__bp_owed(ura_system *sys, struct ura__bp *bp);
/* A pop of a counted message (URA__MF_BP), on the turn's rare branch
 * (actor/turn.c), and on a body's receive (actor/fiber.c), which keeps
 * the turn's rules: the slot's record is found once (*bp) and the message
 * counted (*bpn), both given back once, when the turn or the body's stint
 * ends (ura__bp_taken). True when DROP_OLDEST owes a drop and this message
 * is it: the caller drops it as handled. */
static inline int ura__bp_took(ura_system *sys, uint32_t idx, struct ura__bp **bp,
			       unsigned *bpn)
{
	if (!*bp)
		*bp = ura__bp_of(sys, idx);
	if (ura__unlikely(!*bp))
		return 0; /* never: a counted message's receiver has a record */
	++*bpn;
	/* relaxed: a hint; ura__bp_owed takes it with a CAS. */
	return atomic_load_explicit(&(*bp)->owed, memory_order_relaxed) && ura__bp_owed(sys, *bp);
}
/* The receiver's turn took n counted messages: the depth goes down, and
 * below low water muted senders are released and waiters woken. */
void ura__bp_taken(ura_system *sys, struct ura__worker *w, struct ura__bp *bp, unsigned n);
/* The end of a turn whose actor a asked to be muted (w->mute_on): true
 * when a is muted now (its token is the mute list's). */
int ura__bp_mute(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* Actor a stops (after its generation moved on): senders muted on it go,
 * threads waiting for it wake. */
void ura__bp_stop(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* Shutdown: every waiting thread wakes (a walk of the records). */
void ura__bp_wake_all(ura_system *sys);
int ura__bp_init(ura_system *sys);
void ura__bp_fini(ura_system *sys);

#endif
