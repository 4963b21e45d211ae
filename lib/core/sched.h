/* SPDX-License-Identifier: MIT */
/*
 * Run queues, stealing and wakeups (core/sched.c). The loop that drives
 * them is lib/runtime/worker.c.
 */
#ifndef URA_CORE_SCHED_H
#define URA_CORE_SCHED_H

#include "core/core.h"

/* Makes a newly woken actor runnable: on worker w (the caller's, which
 * runs it next) or, with w NULL or of another node, through its home
 * node's inject queue. The caller holds the actor's token and gives it
 * to the run queue. */
void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* From a turn that left work only this worker will do unless another
 * looks (an actor in its next slot): wakes a sleeping peer to watch,
 * once per busy period. */
void ura__wake_watcher(struct ura__worker *w);

/*
 * A worker's alarm (ring/ring.h): set to the moment its earliest timer
 * becomes a peer's to fire, when no sleeping peer would look by then
 * (time/timers.c, watch_due), and moved on as the owner fires its own.
 * A peer asleep at that moment wakes; if the owner fired it first,
 * nobody does.
 */
/* At start, per worker (none in the deterministic build, or if the
 * kernel refuses: the wakes they replace are sent instead). 0. */
int ura__alarms_init(ura_system *sys);
void ura__alarms_fini(ura_system *sys);
/* Owner, before its first wait: its poller watches the peers' alarms. */
int ura__alarms_watch(struct ura__worker *w);
/* Owner: the alarm will fire by `at`, still to come at `now`. */
static inline int ura__alarm_covers(const struct ura__worker *w, uint64_t at, uint64_t now)
{
	return w->alarm_at && w->alarm_at <= at && w->alarm_at > now;
}
/* Owner: set to fire at `at` (0: disarm). 0, or -errno (-EBADF: no
 * alarm), and then the caller wakes a peer itself. */
int ura__alarm_set(struct ura__worker *w, uint64_t at);

/* Puts an actor that used up its turn at the back of w's run queue. */
void ura__schedule_back(struct ura__worker *w, struct ura__actor *a);
/* Wakes v if it is asleep (one wake per sleep); self: the waking worker,
 * NULL off the workers. True if v sleeps (and is, or was, woken). */
int ura__wake(struct ura__worker *self, struct ura__worker *v);
/* Owner, idle: an actor from the node's inject queue or stolen from a
 * peer (same node first; other nodes after steal_remote_ns), or NULL. */
struct ura__actor *ura__find_stealable(struct ura__worker *w, uint64_t now);
/* Owner, about to sleep: how long before it must look at the busy
 * peer's next slot it watches (see steal_next), or 0 for none. */
uint64_t ura__watch_wait(struct ura__worker *w, uint64_t now);
/* Owner, watching nothing, after its seq_cst fence before sleeping: a
 * watch begun on a busy peer's filled next slot or on another node's
 * non-empty inject queue, and how long to sleep before looking; 0: none
 * to watch. */
uint64_t ura__watch_begin(struct ura__worker *w, uint64_t now);
/* Owner, after its seq_cst fence before sleeping: whether another
 * thread made work visible to the run queues: 0 none, 1 some to take now
 * (the inject queue, another node's queue, a ripe peer queue), or else
 * how long to sleep at most before a peer's queue, watched, may ripen
 * (queue_ripe in core/sched.c). */
uint64_t ura__sched_visible(struct ura__worker *w, uint64_t now);

/* After this many next-slot runs in a row, the run queue goes first: two
 * actors ping-ponging through the slot must not starve the queue. */
#define URA__NEXT_STREAK_MAX 32
/* Every this many picks, look at the inject queue before local work, so
 * sends from outside are served even on a saturated worker (Go: 61). */
#define URA__INJECT_EVERY 61

/* ---- run queue ------------------------------------------------------ */

static inline uint32_t ura__rq_len(struct ura__runq *q)
{
	uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
	return t - h;
}

/* Owner: actors runnable on this worker. Inline: a turn that reaches
 * its last message asks (actor/turn.c). relaxed: only the owner fills
 * the slot; a thief that empties it only makes the answer stale. */
static inline int ura__has_local(struct ura__worker *w)
{
	return atomic_load_explicit(&w->next, memory_order_relaxed) || w->ovf_head ||
	       ura__rq_len(&w->rq);
}

/* Owner only. */
static inline int ura__rq_push(struct ura__runq *q, struct ura__actor *a)
{
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	/* acquire: pairs with the CAS on head by consumers, so the slot we
	 * are about to overwrite was read before they advanced head. */
	uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	if (t - h >= URA__RQ_SIZE)
		return 0;
	atomic_store_explicit(&q->buf[t % URA__RQ_SIZE], a, memory_order_relaxed);
	/* release: publishes the slot (and, through the token chain, the
	 * actor) to consumers that acquire tail. */
	atomic_store_explicit(&q->tail, t + 1, memory_order_release);
	return 1;
}

/* Owner or thief: takes the oldest entry. */
static inline struct ura__actor *ura__rq_pop(struct ura__runq *q)
{
	for (;;) {
		uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
		uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
		if (h == t)
			return NULL;
		if (t - h > URA__RQ_SIZE)
			continue; /* torn read of a moving queue */
		/* This read may see a slot the owner is reusing, but only when
		 * head has moved past h, and then the CAS below fails. */
		struct ura__actor *a = atomic_load_explicit(&q->buf[h % URA__RQ_SIZE],
							    memory_order_relaxed);
		/* acq_rel: release orders our read of the slot before the
		 * owner may overwrite it (pairs with its acquire of head). */
		if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + 1,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return a;
	}
}

/* Thief only: takes up to half of q's entries (rounded up, at most
 * max), oldest first, with one CAS on head, into out[] (Go's
 * runqgrab); returns how many, 0 if q is empty. Each entry read is the
 * thief's only if the CAS succeeds: the owner cannot overwrite slots in
 * [h, t) before head has moved past them, and then the CAS fails. */
static inline uint32_t ura__rq_grab(struct ura__runq *q, struct ura__actor **out, uint32_t max)
{
	for (;;) {
		/* acquire (both): as in ura__rq_pop. */
		uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
		uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
		uint32_t n = t - h;
		if (!n)
			return 0;
		if (n > URA__RQ_SIZE)
			continue; /* torn read of a moving queue */
		n -= n / 2;
		if (n > max)
			n = max;
		for (uint32_t i = 0; i < n; i++)
			out[i] = atomic_load_explicit(&q->buf[(h + i) % URA__RQ_SIZE],
						      memory_order_relaxed);
		/* acq_rel: release orders the reads of the slots before the
		 * owner may overwrite them (pairs with its acquire of head in
		 * ura__rq_push), as in ura__rq_pop. */
		if (atomic_compare_exchange_weak_explicit(&q->head, &h, h + n,
							  memory_order_acq_rel,
							  memory_order_relaxed))
			return n;
	}
}

/* Out of line, for the rare branches of ura__pick. */
void ura__refill(struct ura__worker *w);
struct ura__actor *ura__inject_pop(struct ura__worker *w);
void ura__push_local(struct ura__worker *w, struct ura__actor *a);

/* Owner: the next actor to run from w's own queues (the next slot, the
 * run queue, the node's inject queue), or NULL. Inline: once per turn. */
static inline struct ura__actor *ura__pick(struct ura__worker *w)
{
	struct ura__actor *a;
	if (w->ovf_head)
		ura__refill(w);
	if (++w->tick % URA__INJECT_EVERY == 0 && (a = ura__inject_pop(w)))
		return a;
	/* relaxed: only this thread fills the slot; a thief may have
	 * emptied it, which the exchange finds out. The exchange (relaxed:
	 * the actor is ours, nothing to acquire) races a thief's CAS: one
	 * of the two gets the actor (core/sched.c, steal_next). */
	if (atomic_load_explicit(&w->next, memory_order_relaxed) &&
	    (a = atomic_exchange_explicit(&w->next, NULL, memory_order_relaxed))) {
		if (w->next_streak < URA__NEXT_STREAK_MAX || !ura__rq_len(&w->rq)) {
			w->next_streak++;
			return a;
		}
		ura__push_local(w, a);
	}
	w->next_streak = 0;
	if ((a = ura__rq_pop(&w->rq)))
		return a;
	return ura__inject_pop(w);
}

/* Whether ura__pick's next call would take the next slot's actor first
 * (no overflow to refill, not the inject queue's turn, the slot's streak
 * not over), for a caller that takes it in pick's place (actor/fiber.c's
 * handoff) and then counts it with ura__pick_took_next. Kept beside
 * ura__pick: the two must agree. Owner. */
static inline int ura__pick_takes_next(struct ura__worker *w)
{
	return !w->ovf_head && (w->tick + 1) % URA__INJECT_EVERY != 0 &&
	       (w->next_streak < URA__NEXT_STREAK_MAX || !ura__rq_len(&w->rq));
}
static inline void ura__pick_took_next(struct ura__worker *w)
{
	w->tick++;
	w->next_streak++;
}

#endif
