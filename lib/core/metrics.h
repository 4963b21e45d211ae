/* SPDX-License-Identifier: MIT */
/*
 * Metrics, as the workers write them (ura.h's "Metrics"; lib/metrics
 * reads them): histograms, per-class counters per worker, and a record
 * per actor of a metered class.
 *
 * Everything here has one writer: a worker's own counters are written by
 * that worker, an actor's record by the actor's token holder. Writes are
 * relaxed atomic stores of a plain load + add (ura__inc: no locked
 * instruction, no fence), so a reader on another thread, loading relaxed,
 * gets each counter whole and never torn; it may see one counter a few
 * events ahead of another, which a metrics reader accepts. Nothing is
 * ordered through these words: no reader acts on a counter's value but to
 * print it. The two exceptions say so where they are: the publication of
 * a per-worker class block and of a record chunk (release/acquire), so a
 * reader never follows a pointer to memory not yet initialised.
 *
 * Off the workers (a spawn from main's thread, a stop at a paused
 * system's restore) there is no single writer: those go to the system's
 * `ext` blocks with relaxed fetch_adds.
 */
#ifndef URA_CORE_METRICS_H
#define URA_CORE_METRICS_H

#include <pthread.h>
#include <string.h>

#include "core/core.h"

/* The seqlock's fences (ura__mx_state). TSan does not model fences (GCC
 * warns, -Wtsan); there they go, and a reader may at worst read a torn
 * idle time, which TSan builds accept: every access is still atomic. */
#if defined(__SANITIZE_THREAD__)
#define ura__mx_fence_rel() ((void)0)
#define ura__mx_fence_acq() ((void)0)
#else
#define ura__mx_fence_rel() atomic_thread_fence(memory_order_release)
#define ura__mx_fence_acq() atomic_thread_fence(memory_order_acquire)
#endif

/* ---- histograms ----------------------------------------------------- */

struct ura__hist {
	_Atomic uint64_t count, sum;
	_Atomic uint64_t b[URA_HIST_BUCKETS];
};

/* Bucket of v ns: the first i with v <= 64 << i; URA_HIST_BUCKETS when
 * above the last bound (counted in count and sum only). */
static inline unsigned ura__hist_idx(uint64_t v)
{
	if (v <= 64)
		return 0;
	unsigned i = (unsigned)(64 - __builtin_clzll(v - 1)) - 6;
	return i > URA_HIST_BUCKETS ? URA_HIST_BUCKETS : i;
}

/* One writer (see the top). */
static inline void ura__hist_add(struct ura__hist *h, uint64_t v)
{
	unsigned i = ura__hist_idx(v);
	ura__inc(&h->count);
	ura__add(&h->sum, v);
	if (i < URA_HIST_BUCKETS)
		ura__inc(&h->b[i]);
}

/* ---- per class ------------------------------------------------------ */

/* A class's counters on one worker (or, for `ext`, off the workers). */
struct ura__cstat {
	_Atomic uint64_t spawned, stopped_normal, stopped_other;
	_Atomic uint64_t received, handled, unmatched, dead_letters;
	/* Mailbox depths as its actors' turns last saw them: the turns that
	 * saw them change add the difference here; a sum over workers is
	 * the gauge (one worker's share may be negative: an actor that grew
	 * here and drained on a thief). */
	_Atomic int64_t mailbox;
	struct ura__hist handler;
	struct ura__hist wait;   /* sampled: from the send to the turn's pop */
};

#define URA__MX_CACHE 32 /* per-worker class lookups: direct-mapped */

/* A worker's metrics state (worker->mx). */
struct ura__wmx {
	/* Owner only: class -> its block, the turn's one lookup. */
	struct {
		const ura_class *cls;
		struct ura__cstat *st;
	} cache[URA__MX_CACHE];
	uint32_t left;         /* owner: handled messages until one is timed */
	uint32_t mask;         /* 2^shift - 1: left starts again at mask + 1 */
	uint64_t fire_now;     /* owner: the clock of the timer expiry running */
	/* Written by the owner, read by anyone (see the top). */
	_Atomic uint64_t start_ns, woken;
	/* Idle accounting under the sequence lock iseq (ura__mx_state). */
	_Atomic uint32_t iseq, state;
	_Atomic uint64_t since, spin_ns, sleep_ns;
	struct ura__hist timer_late;
	/* The owner's block per class id: made on its first use, published
	 * with release (pairs with the reader's acquire), never freed before
	 * the system. */
	_Atomic(struct ura__cstat *) cs[URA_METRICS_CLASSES];
};

/* An actor's record (one per slot of a metered class): written by the
 * token holder, read by anyone (see the top). The slot's own fields are
 * the token holder's alone; these are what others may read. */
struct ura__amx {
	_Atomic(const ura_class *) cls; /* NULL: none (never, or stopped) */
	_Atomic(const char *) beh;      /* its behavior's name */
	_Atomic uint32_t gen;           /* the incarnation described */
	_Atomic uint32_t mailbox;       /* depth when its last turn ended */
	_Atomic uint64_t handled, handler_ns; /* handler_ns: sampled, scaled */
	/* The token holder's alone, never read by others: the class's block
	 * on worker csw (NULL: none yet), where a turn of this actor last
	 * ended, so that the next turn there needs no lookup (9 of the
	 * metered turn's instructions, bench/README.md, issue 17). */
	struct ura__cstat *cs;
	const struct ura__worker *csw;
};

/* The system's metrics state (sys->mx). */
struct ura__mx {
	pthread_mutex_t lock;  /* registering a class, making a record chunk */
	/* Class ids: cls[0 .. ncls). Written under lock; ncls stored with
	 * release after cls[ncls] (pairs with the readers' acquire). */
	_Atomic(const ura_class *) cls[URA_METRICS_CLASSES];
	_Atomic unsigned ncls;
	_Atomic uint64_t overflow;     /* spawns of classes past the table */
	unsigned shift;                /* sample 1 in 2^shift */
	struct ura__cstat ext[URA_METRICS_CLASSES]; /* off the workers */
	/* Record chunks, parallel to the slot chunks (URA__CHUNK records
	 * each): made on the first metered spawn in that chunk, published
	 * with release (pairs with readers' acquire), freed with the system. */
	_Atomic(struct ura__amx *) *amx; /* URA__MAX_CHUNKS pointers */
};

/* A metered actor's record, also kept in the last 8 bytes of its slot's
 * inline state (a metered class's state is inline only up to
 * URA__AMX_INL bytes, actor/lifecycle.c): the turn's end finds it in a
 * line it has touched anyway instead of by the chunk lookup (13 of the
 * metered turn's instructions, bench/README.md, issue 17). Token holder
 * only: set at its spawn (NULL: no record), cleared at its stop, so a
 * turn that ends after a stop finds NULL; the stop's tombstone (actor/
 * signal.h) fits in the bytes before (asserted in actor/lifecycle.c),
 * and a state in the slot is at most URA__AMX_INL bytes. */
#define URA__AMX_INL (sizeof(((struct ura__actor *)0)->inl) - sizeof(struct ura__amx *))
static inline struct ura__amx *ura__amx_own(const struct ura__actor *a)
{
	struct ura__amx *r;
	memcpy(&r, a->inl + URA__AMX_INL, sizeof r);
	return r;
}
static inline void ura__amx_own_set(struct ura__actor *a, struct ura__amx *r)
{
	memcpy(a->inl + URA__AMX_INL, &r, sizeof r);
}
/* System life (runtime/system.c): 0 or -ENOMEM. */
int ura__mx_init(ura_system *sys, unsigned shift);
void ura__mx_fini(ura_system *sys);

/* Out of line: the lookup's miss, and a record chunk's making. */
struct ura__cstat *ura__cstat_slow(ura_system *sys, struct ura__worker *w,
				   const ura_class *cls);
struct ura__amx *ura__amx_make(ura_system *sys, uint32_t index);

/* ---- mailbox wait ------------------------------------------------------ */

/* A send to an actor whose class asked for its mailbox wait
 * (URA_CLASS_METRICS_WAIT, so URA__HOME_METERED in its home word), 1 in
 * 2^shift of them: the plain message carries the time it was sent in its
 * req (unused by plain messages), and the receiver's metered turn counts
 * the wait when it pops it (ura__mx_waited). Requests carry their id
 * there and go unsampled. The clock is CLOCK_MONOTONIC on every thread,
 * so a message that crossed workers or nodes still measures true; ns >>
 * 10 in 32 bits wraps every 73 minutes, and a difference taken modulo
 * 2^32 is right for any wait shorter than that. */
uint32_t ura__mx_ext_tick(void);
static inline void ura__mx_stamp(ura_system *sys, struct ura__worker *w, struct ura_msg *m)
{
	if (m->kind != URA__MK_PLAIN)
		return;
	/* On a worker its count of sends is the sampling counter: it moves
	 * by one per send, so n sends in a row sample n / 2^shift of them. */
	if (w ? ura__ld(&w->st.sent) & w->mx->mask
	      : ura__mx_ext_tick() & ((1u << sys->mx->shift) - 1))
		return;
	m->req = (uint32_t)(ura__now_ns() >> 10);
	m->flags |= URA__MF_WAIT;
}
/* The turn's pop of a stamped message: counted (cs NULL: the class went
 * unmetered, the table being full), and the stamp cleared (req means
 * nothing to a plain message after this). */
static inline void ura__mx_waited(struct ura__cstat *cs, struct ura_msg *m)
{
	if (cs) {
		uint32_t d = (uint32_t)(ura__now_ns() >> 10) - m->req;
		ura__hist_add(&cs->wait, (uint64_t)d << 10);
	}
	m->req = 0;
	m->flags &= (uint8_t)~URA__MF_WAIT;
}

/* Whether actors of cls are metered. */
static inline int ura__metered(const ura_class *cls)
{
	return cls && ura__unlikely(cls->metrics != 0);
}

/* The block where w (NULL: off the workers) counts cls, or NULL (the
 * class table is full, or no memory: then the class goes unmetered).
 * Only for a metered class. */
static inline struct ura__cstat *ura__cstat_of(ura_system *sys, struct ura__worker *w,
					       const ura_class *cls)
{
	if (w) {
		unsigned h = (unsigned)((uintptr_t)cls >> 6) & (URA__MX_CACHE - 1);
		if (ura__likely(w->mx->cache[h].cls == cls))
			return w->mx->cache[h].st;
	}
	return ura__cstat_slow(sys, w, cls);
}

/* The record of table index `index` if its chunk exists, else NULL. Any
 * thread: acquire pairs with the chunk's publication. */
static inline struct ura__amx *ura__amx_at(ura_system *sys, uint32_t index)
{
	struct ura__amx *c = atomic_load_explicit(&sys->mx->amx[index >> URA__CHUNK_SHIFT],
						  memory_order_acquire);
	return c ? &c[index & (URA__CHUNK - 1)] : NULL;
}

/* Counter updates from w, or from off the workers (w NULL: a relaxed
 * fetch_add, since threads that are not workers share `ext`). */
static inline void ura__cs_add(struct ura__worker *w, _Atomic uint64_t *c, uint64_t n)
{
	if (w)
		ura__add(c, n);
	else
		atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Messages waiting behind the mailbox's tail, up to URA_METRICS_DEPTH_MAX.
 * Token holder only (the nodes it walks are its own until it pops them;
 * acquire pairs with the pushes' release of ->next, as ura__mb_pop). */
static inline uint32_t ura__mb_depth(struct ura__mailbox *q)
{
	uint32_t n = 0;
	struct ura_msg *m = atomic_load_explicit(&q->tail->next, memory_order_acquire);
	while (m && n < URA_METRICS_DEPTH_MAX) {
		n++;
		m = atomic_load_explicit(&m->next, memory_order_acquire);
	}
	return n;
}

/* The worker loop's hooks (runtime/worker.c), owner only: the worker
 * enters state `st` at `now`. Idle time is kept under a sequence lock so
 * a reader gets the completed times and the state in progress together,
 * and computes busy time that only grows (a reader that saw only the
 * completed intervals would see busy time jump back when a long sleep
 * ends). Only the idle path moves it, never a turn. Writer: odd sequence,
 * release fence, the data (relaxed), even sequence with release; the
 * reader (lib/metrics/read.c) pairs with acquire loads and an acquire
 * fence (Boehm's seqlock with C11 atomics). */
enum { URA__MX_BUSY = 0, URA__MX_SPIN = 1, URA__MX_SLEEP = 2 };
static inline void ura__mx_state(struct ura__worker *w, unsigned st, uint64_t now)
{
	struct ura__wmx *m = w->mx;
	uint32_t seq = ura__ld(&m->iseq);
	ura__st(&m->iseq, seq + 1);
	ura__mx_fence_rel();
	uint64_t since = ura__ld(&m->since);
	unsigned old = ura__ld(&m->state);
	if (old == URA__MX_SPIN && now > since)
		ura__add(&m->spin_ns, now - since);
	else if (old == URA__MX_SLEEP && now > since)
		ura__add(&m->sleep_ns, now - since);
	ura__st(&m->since, now);
	ura__st(&m->state, st);
	atomic_store_explicit(&m->iseq, seq + 2, memory_order_release);
}
static inline void ura__mx_woken(struct ura__worker *w)
{
	ura__inc(&w->mx->woken);
}

/* Spawn, stop and turn end of an actor of a metered class (token holder). */
void ura__mx_spawned(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
void ura__mx_stopped(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
		     int normal);
/* Out of line: ura__mx_cs's lookup, when the actor's record (r, NULL:
 * none) does not hold w's block (the first turn on w), kept in r. */
struct ura__cstat *ura__mx_cs_slow(struct ura__worker *w, struct ura__actor *a,
				   struct ura__amx *r);

/* The class block on w of metered actor a: the record's when it holds
 * w's, else by the lookup. NULL: the class went unmetered (the class
 * table is full). Token holder. (ura__mx_turn tests the record as this
 * does, then needs no NULL test of a block the record held.) */
static inline struct ura__cstat *ura__mx_cs(struct ura__worker *w, struct ura__actor *a)
{
	struct ura__amx *r = ura__amx_own(a);
	if (ura__likely(r != NULL && r->csw == w))
		return r->cs;
	return ura__mx_cs_slow(w, a, r);
}

/* d, the depth an actor leaves behind, to its record and the class.
 * Token holder. */
static inline void ura__mx_depth_set(struct ura__amx *r, struct ura__cstat *cs, uint32_t d)
{
	uint32_t old = ura__ld(&r->mailbox);
	if (d != old) {
		ura__st(&cs->mailbox, ura__ld(&cs->mailbox) + (int64_t)d - (int64_t)old);
		ura__st(&r->mailbox, d);
	}
}

/* The end of a metered turn on w (or a body's stint): what it took from
 * the mailbox and handled, to the class and the actor's record. The depth
 * it leaves is kept exact without a walk in the common case. A record
 * that says 0 stays so unless the caller's ura__mb_mark_idle fails (then
 * ura__mx_left walks); one that says more is walked here, before the
 * token can go (a mark_idle that succeeds must find the record at 0).
 * Token holder. */
static inline void ura__mx_turn(struct ura__worker *w, struct ura__actor *a,
				uint64_t received, uint64_t handled)
{
	struct ura__amx *r = ura__amx_own(a);
	struct ura__cstat *cs;
	if (ura__likely(r != NULL && r->csw == w))
		cs = r->cs;
	else if (!(cs = ura__mx_cs_slow(w, a, r)))
		return;
	ura__add(&cs->received, received);
	ura__add(&cs->handled, handled);
	if (!r)
		return; /* no record (no memory at its spawn), or stopped */
	ura__add(&r->handled, handled);
	/* The behavior's name is stored where it changes (ura__mx_beh), not
	 * here: 5 instructions of every turn (bench/README.md, issue 17). */
	if (ura__unlikely(ura__ld(&r->mailbox) != 0))
		ura__mx_depth_set(r, cs, ura__mb_depth(&a->mb));
}
/* A metered turn's end found messages waiting after all (its mark_idle
 * failed), or gives its token to a mute list: the depth it leaves, walked
 * unless ura__mx_turn just did (the record says not 0 only then). After
 * ura__mx_turn on the same worker, so the record holds the block. Token
 * holder. */
static inline void ura__mx_left(struct ura__worker *w, struct ura__actor *a)
{
	struct ura__amx *r = ura__amx_own(a);
	if (r && r->csw == w && ura__ld(&r->mailbox) == 0)
		ura__mx_depth_set(r, r->cs, ura__mb_depth(&a->mb));
}
/* A timed handler's time, scaled by the sampling, to the actor's record
 * (unless it stopped in that handler). Token holder. */
static inline void ura__mx_timed(ura_system *sys, struct ura__actor *a, uint64_t ns)
{
	struct ura__amx *r = ura__amx_own(a);
	if (r)
		ura__add(&r->handler_ns, ns << sys->mx->shift);
}
/* The rare counts of a metered actor, from their own paths (a turn's or
 * a body's), so that no turn counts them in its loop: nothing for other
 * classes, one test. */
static inline void ura__mx_unmatched(struct ura__worker *w, const struct ura__actor *a,
				     uint64_t n)
{
	struct ura__cstat *c;
	if (ura__unlikely(ura__metered(a->cls)) && (c = ura__cstat_of(w->sys, w, a->cls)))
		ura__add(&c->unmatched, n);
}
static inline void ura__mx_dead(struct ura__worker *w, const struct ura__actor *a)
{
	struct ura__cstat *c;
	if (ura__unlikely(ura__metered(a->cls)) && (c = ura__cstat_of(w->sys, w, a->cls)))
		ura__inc(&c->dead_letters);
}
/* A metered actor's behavior changed (become, restore): its record says
 * so. Token holder. */
static inline void ura__mx_beh(ura_system *sys, struct ura__actor *a)
{
	struct ura__amx *r = ura__amx_at(sys, ura__idx_no(a->idx));
	if (r && ura__ld(&r->cls) != NULL)
		ura__st(&r->beh, a->beh ? a->beh->name : NULL);
}

/* A body's stint on a worker (actor/fiber.c), metered: the class's block
 * on this worker, and the worker's count of messages taken at the start.
 * That count moves only for this actor until the end, so the difference
 * is its own. (An event turn counts in registers instead: actor/turn.c;
 * unmatched and dead letters go by their own paths in both.) cs NULL: not
 * metered (or the class table is full). */
struct ura__mx_mark {
	struct ura__cstat *cs;
	uint64_t recv0;
};
static inline void ura__mx_begin(ura_system *sys, struct ura__worker *w,
				 const ura_class *cls, struct ura__mx_mark *k)
{
	k->cs = ura__cstat_of(sys, w, cls);
	k->recv0 = ura__ld(&w->st.received);
}
/* The end: the difference, with what the caller counted (handled), to
 * the class and the actor's record, and the depth left behind. (Timed
 * handlers went to the record as they ended: ura__mx_timed.) */
static inline void ura__mx_end(struct ura__worker *w, struct ura__actor *a,
			       const struct ura__mx_mark *k, uint64_t handled)
{
	ura__mx_turn(w, a, ura__ld(&w->st.received) - k->recv0, handled);
	ura__mx_left(w, a);
}
#endif
