/* SPDX-License-Identifier: MIT */
/*
 * Per-worker hierarchical timing wheel. The worker sleeps in its poller
 * until ura__wheel_next() and then calls ura__wheel_expire(): one kernel
 * wait bounds every pending timer, so arming or cancelling a timer never
 * makes a syscall and never allocates.
 *
 * Time is CLOCK_MONOTONIC nanoseconds, cut into ticks of a power of two
 * (the slack). A timer is due at the first tick boundary at or after its
 * deadline, so it never fires early and fires less than one tick late
 * when the owner wakes at ura__wheel_next().
 *
 * Seven levels of 64 slots, each level's slot 64 times wider than the one
 * below, cover 2^42 ticks (52 days at 1024 ns ticks); farther timers wait
 * in an overflow list that is looked at again only when the wheel reaches
 * the 2^42-tick window holding its earliest timer. Cascading a slot moves
 * each of its timers down at least one level, so a timer inside that
 * span is moved at most six times between arm and fire (one more per
 * overflow pass beyond it), never once per elapsed tick: idle stretches
 * are crossed with one bitmap scan per level.
 *
 * Cascading a coarse slot at once stalled its owner: a level-2 slot of a
 * wheel holding 1M timers over 10 s is 54k timers, 10 ms of cache misses,
 * and every timer due meanwhile was that late (bench/timer_slack). So the
 * next slot of level 2 or above is cascaded ahead of time, a bounded
 * number of timers per expire() (the pre-cascade, wheel.c): its timers go
 * to a second bank of the levels below it, placed as they will be when the
 * cursor reaches the slot, and reaching it only flips those levels' banks.
 *
 * Single-threaded: the owning worker alone touches a wheel and its timers.
 */
#ifndef URA_TIME_WHEEL_H
#define URA_TIME_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#define URA__WHEEL_BITS 6
#define URA__WHEEL_SLOTS (1u << URA__WHEEL_BITS)
#define URA__WHEEL_LEVELS 7

/* The slots come in two banks per level (the live one and the one a
 * pre-cascade fills). Lists after them: two for timers armed already due
 * (the one that fills while expire() drains the other, so a timer that
 * keeps re-arming itself in the past cannot hold expire() forever), and
 * the overflow. */
enum {
	URA__WHEEL_DUE0 = 2 * URA__WHEEL_LEVELS * URA__WHEEL_SLOTS,
	URA__WHEEL_DUE1,
	URA__WHEEL_OVERFLOW,
	URA__WHEEL_NLISTS
};

struct ura__timer {              /* embedded in the owner's record */
	struct ura__timer *next, *prev;   /* slot list; prev == NULL when not armed */
	uint64_t deadline;                /* ns, CLOCK_MONOTONIC */
	uint32_t list;                    /* internal: which list holds it */
};

/* A list keeps FIFO order for free (the head's prev is the tail), so
 * timers due in the same tick fire in the order they were armed. `lo` is
 * a lower bound of the ticks in the list, exact unless its earliest timer
 * was cancelled; it lets next() answer for a coarse slot without walking
 * it, and lets expire() jump straight to it. */
struct ura__wheel_list {
	struct ura__timer *head;
	uint64_t lo;
	size_t n; /* timers in it: paces a pre-cascade (wheel.c) */
};

struct ura__wheel {
	/* Non-empty slots, one word a level, per bank. */
	uint64_t bits[2][URA__WHEEL_LEVELS];
	uint8_t bank[URA__WHEEL_LEVELS]; /* each level's live bank */
	uint64_t cur;     /* tick reached: all due at or before it have fired */
	unsigned shift;   /* tick = 1 << shift ns */
	unsigned due;     /* which due list takes new already-due timers */
	size_t count;
	/* The pre-cascade (wheel.c): the slot it empties (a list index, or
	 * URA__WHEEL_NLISTS for none), its level and digit, its first tick. */
	uint32_t pre;
	unsigned pre_level, pre_slot;
	uint64_t pre_base;
	uint64_t pre_lo;  /* lower bound of the ticks it has placed */
	size_t moved_max; /* most timers one expire() moved: tests read it */
	struct ura__wheel_list list[URA__WHEEL_NLISTS];
};

/* tick_ns is the slack: rounded down to a power of two, so timers are
 * never later than asked; below 1 us counts as 1 us. */
void ura__wheel_init(struct ura__wheel *w, uint64_t now_ns, uint64_t tick_ns);
/* t->deadline is set by the caller. Arming an armed timer moves it.
 * Already-due deadlines fire at the next expire(); from inside a fire
 * callback that means the next call, not the running one. */
void ura__wheel_add(struct ura__wheel *w, struct ura__timer *t);
/* O(1); a no-op if t is not armed (never armed, fired or cancelled). */
void ura__wheel_del(struct ura__wheel *w, struct ura__timer *t);
int ura__wheel_armed(const struct ura__timer *t);
/* The first instant at which expire() fires something: the tick boundary
 * at or after the earliest deadline (<= the last expire()'s now if some
 * timer is already due), or UINT64_MAX when empty. A few bitmap scans.
 * Exact, except that after cancelling the earliest timer of a coarse slot
 * it may be early: that wakeup cascades the slot and fires nothing. */
uint64_t ura__wheel_next(struct ura__wheel *w);
/* Unlinks and fires, in deadline order (FIFO within a tick), every timer
 * whose tick boundary is <= now_ns. fire() may add and del timers of this
 * wheel, itself included, but must not call expire(). Returns the count. */
size_t ura__wheel_expire(struct ura__wheel *w, uint64_t now_ns,
			 void (*fire)(struct ura__timer *t, void *ud), void *ud);
size_t ura__wheel_count(const struct ura__wheel *w);
/* Whether expire() has work now that fires nothing: a pre-cascade to
 * begin or go on. The owner that arms calls expire() soon after (its
 * next pass), rather than at the next deadline, which may be the slot
 * itself. */
int ura__wheel_busy(const struct ura__wheel *w);

static inline uint64_t ura__wheel_tick(const struct ura__wheel *w)
{
	return (uint64_t)1 << w->shift;
}

#endif
