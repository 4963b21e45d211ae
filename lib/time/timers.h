/* SPDX-License-Identifier: MIT */
/*
 * Delayed sends and receive timeouts on a worker's timer wheel.
 *
 * A pending timer is a 64-byte record in its worker's table plus the
 * message it will deliver (copied at arm time). Its handle names the
 * record and its generation, so a stale handle can never touch a reused
 * record. Who may touch what:
 *  - the owning worker arms (into its wheel), fires and frees, under its
 *    wheel lock `wlock`, which an idle worker takes in its place to fire
 *    the due timers of an owner stuck in a long turn (ura__timers_steal):
 *    a timer must not wait for a handler of another actor;
 *  - any thread may cancel: one CAS on the record's state decides between
 *    the canceller and the firing owner, so the message is delivered at
 *    most once; a canceller that is not the owner hands the record to the
 *    owner through a lock-free stack, and the owner unlinks it at once;
 *  - a thread that is not a worker arms through the same kind of stack
 *    (the record comes from a locked free list of its own).
 * Quiescence: arming counts as a send, and firing (the delivered message
 * is then counted when handled) or cancelling counts as its receipt.
 */
#ifndef URA_TIME_TIMERS_H
#define URA_TIME_TIMERS_H

#include <pthread.h>

#include "core/core.h"
#include "time/wheel.h"

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
/* URA_MAX_TIMERS (4 Mi) pending timers per worker: an arm beyond that
 * returns -ENOMEM (ura.h, ura_send_after). */
#define URA__TCHUNKS 1024u
_Static_assert(URA__TCHUNKS * URA__TCHUNK == URA_MAX_TIMERS, "ura.h says what the cap is");
#define URA__T_EXT_BIT 0x80000000u

struct ura__timers {
	/* Owner only. */
	struct ura__wheel wheel;      /* under wlock, as are `free`, the records'
	                                 wheel links and next_due's stores */
	struct ura__trec *free;       /* the owner's free records */
	/* Cached ura__wheel_next(); read without the lock by the owner
	 * (relaxed: its own stores, or a thief's under wlock, which can only
	 * make it later or UINT64_MAX) and by thieves (a look). */
	_Atomic uint64_t next_due;
	/* 0 free, 1 held: the owner, or a thief that fires for it. */
	_Atomic int wlock;
	/* Chunks: published with release, read by cancellers (acquire). */
	_Atomic(struct ura__trec *) *chunks;
	_Atomic uint32_t nchunks;     /* under lock for growth */
	pthread_mutex_t lock;         /* chunk growth and ext_free */
	struct ura__trec *ext_free;   /* records for non-worker arms */
	/* Pushed by other threads, drained by the owner. */
	alignas(URA__CACHELINE) _Atomic(struct ura__trec *) inbox;  /* via t.next */
	_Atomic(struct ura__trec *) cancels;                       /* via link */
};

/* Per system: arms from threads that are not workers. */
struct ura__timesys {
	_Atomic unsigned rr;           /* spreads them over the workers */
	_Atomic uint64_t armed;        /* stats: counted once, when armed */
};

/* Per-worker tables and the system's part; time_fini returns how many
 * timers were still pending (their messages are freed). */
int ura__time_init(ura_system *sys);
uint64_t ura__time_fini(ura_system *sys);

/* Arms m (made for `to`, counted here as sent) to be posted after delay
 * on w's wheel, or, with w NULL, on a worker chosen round-robin. Returns
 * a handle or -ENOMEM. */
ura_timer ura__timer_arm(ura_system *sys, struct ura__worker *w, ura_ref to,
			 uint64_t delay, struct ura_msg *m);
/* ura_cancel: 0, -ENOENT, -EINVAL (see ura.h). self: the caller's worker. */
int ura__timer_cancel(ura_system *sys, struct ura__worker *self, ura_timer h);
/* True while h is pending. */
int ura__timer_live(ura_system *sys, ura_timer h);
/* lib/snap: holds a pending delayed send (state SNAP) so its message can
 * be copied and restamped; -ENOENT if it is no longer pending. */
int ura__timer_snap_lock(ura_system *sys, ura_timer h, struct ura_msg **m,
			 uint64_t *deadline, ura_ref *to);
void ura__timer_snap_unlock(ura_system *sys, ura_timer h);
/* Owner: adopts arms and finishes cancels other threads handed over. */
void ura__timers_drain(struct ura__worker *w);

/* The timers as a source of the worker loop (runtime/worker.c). */
static inline int ura__timers_pending(struct ura__worker *w)
{
	struct ura__timers *T = w->tm;
	/* relaxed peeks: the drain's exchanges synchronize. */
	/* next_due, not wheel.count: a thief may be firing (under wlock);
	 * it is UINT64_MAX while the wheel is empty. */
	return atomic_load_explicit(&T->next_due, memory_order_relaxed) != UINT64_MAX ||
	       atomic_load_explicit(&T->inbox, memory_order_relaxed) ||
	       atomic_load_explicit(&T->cancels, memory_order_relaxed);
}
static inline int ura__timers_due(struct ura__worker *w, uint64_t *now)
{
	struct ura__timers *T = w->tm;
	return atomic_load_explicit(&T->inbox, memory_order_relaxed) ||
	       atomic_load_explicit(&T->cancels, memory_order_relaxed) ||
	       ura__clock(now) >= atomic_load_explicit(&T->next_due, memory_order_relaxed);
}
int ura__timers_service(struct ura__worker *w, uint64_t *now, int idle);
/* An idle worker w: the due timers of peers that have not fired them for
 * a grace period (sys->steal_next_ns; steal_remote_ns on another node),
 * fired by w, their messages posted as w's. `look` only tells whether
 * there are some (w then marks itself busy and calls it again to fire).
 * Returns whether it found (or fired) any. */
int ura__timers_steal(struct ura__worker *w, uint64_t now, int look);
/* How long an idle worker may sleep before a busy peer's timers become
 * its to fire (ura__timers_steal); 0: no such peer. */
uint64_t ura__timers_steal_wait(struct ura__worker *w, uint64_t now);
/* The owner, idle until now, turns busy: with a deadline of its own
 * pending, it makes sure an idle peer will look at it in time, setting
 * its alarm if no peer would (time/timers.c, watch_due). */
void ura__timers_busy(struct ura__worker *w);
static inline int ura__timers_visible(struct ura__worker *w)
{
	/* seq_cst: the arm and cancel stacks are pushed with seq_cst CASes
	 * before their pushers look at `sleeping` (Dekker). */
	return atomic_load_explicit(&w->tm->inbox, memory_order_seq_cst) ||
	       atomic_load_explicit(&w->tm->cancels, memory_order_seq_cst);
}
static inline uint64_t ura__timers_deadline(struct ura__worker *w)
{
	return atomic_load_explicit(&w->tm->next_due, memory_order_relaxed);
}

#endif
