/* SPDX-License-Identifier: MIT */
/*
 * Delayed sends and receive timeouts on a worker's timer wheel.
 *
 * A pending timer is a 64-byte record in its worker's table plus the
 * message it will deliver (copied at arm time). Its handle names the
 * record and its generation, so a stale handle can never touch a reused
 * record. Who may touch what:
 *  - the owning worker alone arms (into its wheel), fires and frees;
 *  - any thread may cancel: one CAS on the record's state decides between
 *    the canceller and the firing owner, so the message is delivered at
 *    most once; a canceller that is not the owner hands the record to the
 *    owner through a lock-free stack, and the owner unlinks it at once;
 *  - a thread that is not a worker arms through the same kind of stack
 *    (the record comes from a locked free list of its own).
 * Quiescence: arming counts as a send, and firing (the delivered message
 * is then counted when handled) or cancelling counts as its receipt.
 */
#ifndef URA_TIMERS_H
#define URA_TIMERS_H

#include <pthread.h>

#include "ring/wheel.h"
#include "util/util.h"

struct ura_msg;

struct ura__trec {
	struct ura__timer t;        /* wheel link; t.next also links the arm inbox */
	struct ura_msg *msg;        /* what to deliver */
	ura_ref to;
	/* gen << 2 | URA__T_*. CAS by the owner (fire) and cancellers. */
	_Atomic uint32_t state;
	uint32_t idx;               /* bit 31: came from the external free list */
	struct ura__trec *link;     /* free list, or the cancel stack */
};

/* SNAP: a snapshot reads the pending message (lib/snap); the owner's fire
 * and a cancel wait for it to be ARMED again (it holds it for a copy). */
enum { URA__T_FREE = 0, URA__T_ARMED = 1, URA__T_BUSY = 2, URA__T_SNAP = 3 };

#define URA__TCHUNK_SHIFT 12
#define URA__TCHUNK (1u << URA__TCHUNK_SHIFT)
#define URA__TCHUNKS 1024u          /* 4 Mi pending timers per worker */
#define URA__T_EXT_BIT 0x80000000u

struct ura__timers {
	/* Owner only. */
	struct ura__wheel wheel;
	struct ura__trec *free;       /* the owner's free records */
	uint64_t next_due;            /* cached ura__wheel_next() */
	/* Chunks: published with release, read by cancellers (acquire). */
	_Atomic(struct ura__trec *) *chunks;
	_Atomic uint32_t nchunks;     /* under lock for growth */
	pthread_mutex_t lock;         /* chunk growth and ext_free */
	struct ura__trec *ext_free;   /* records for non-worker arms */
	/* Pushed by other threads, drained by the owner. */
	alignas(URA__CACHELINE) _Atomic(struct ura__trec *) inbox;  /* via t.next */
	_Atomic(struct ura__trec *) cancels;                       /* via link */
};

#endif
