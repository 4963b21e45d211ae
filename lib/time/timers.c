/* SPDX-License-Identifier: MIT */
/* Delayed sends, cancellation and receive timeouts: see timers.h. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"
#include "core/post.h"
#include "time/timers.h"

#define WORKER_BITS 10
#define IDX_BITS 22
#define GEN_MASK 0x3fffffffu /* 30 bits: state = gen << 2 | kind */

static inline ura_timer handle_make(uint32_t gen, unsigned worker, uint32_t idx)
{
	return (ura_timer)(((uint64_t)gen << 32) | ((uint64_t)worker << IDX_BITS) | idx);
}

static inline struct ura__trec *rec_at(struct ura__timers *T, uint32_t idx)
{
	uint32_t c = idx >> URA__TCHUNK_SHIFT;
	if (c >= URA__TCHUNKS)
		return NULL;
	/* acquire: pairs with the release publication in grow(). */
	struct ura__trec *chunk = atomic_load_explicit(&T->chunks[c], memory_order_acquire);
	return chunk ? &chunk[idx & (URA__TCHUNK - 1)] : NULL;
}

/* The wheel lock (timers.h). acquire: pairs with wl_unlock's release, so
 * the last holder's wheel, free list and record links are ours. */
static inline void wl_lock(struct ura__timers *T)
{
	while (atomic_exchange_explicit(&T->wlock, 1, memory_order_acquire))
		while (atomic_load_explicit(&T->wlock, memory_order_relaxed))
			ura__cpu_relax();
}

static inline int wl_trylock(struct ura__timers *T)
{
	return !atomic_load_explicit(&T->wlock, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&T->wlock, 1, memory_order_acquire);
}

static inline void wl_unlock(struct ura__timers *T)
{
	atomic_store_explicit(&T->wlock, 0, memory_order_release);
}

static int timers_init(struct ura__timers *T, uint64_t now, uint64_t slack)
{
	memset(T, 0, sizeof *T);
	T->chunks = ura__calloc(URA__TCHUNKS, sizeof *T->chunks);
	if (!T->chunks)
		return -ENOMEM;
	pthread_mutex_init(&T->lock, NULL);
	ura__wheel_init(&T->wheel, now, slack);
	atomic_store_explicit(&T->next_due, UINT64_MAX, memory_order_relaxed);
	return 0;
}

/* Adds a chunk; its records go to *list. T->lock held. */
static int grow(struct ura__timers *T, struct ura__trec **list, uint32_t flags)
{
	uint32_t c = atomic_load_explicit(&T->nchunks, memory_order_relaxed);
	if (c >= URA__TCHUNKS)
		return -ENOMEM;
	/* Zeroed pages populated in one call: the loop below writes every
	 * record, and took a fault a page (64 a chunk) as it went. */
	struct ura__trec *chunk = ura__map_populated(URA__TCHUNK * sizeof *chunk);
	if (!chunk)
		return -ENOMEM;
	for (uint32_t i = URA__TCHUNK; i-- > 0;) {
		struct ura__trec *r = &chunk[i];
		r->idx = (c << URA__TCHUNK_SHIFT | i) | flags;
		atomic_store_explicit(&r->state, 1u << 2 | URA__T_FREE, memory_order_relaxed);
		r->link = *list;
		*list = r;
	}
	/* release: a canceller that reads the chunk sees initialised records. */
	atomic_store_explicit(&T->chunks[c], chunk, memory_order_release);
	atomic_store_explicit(&T->nchunks, c + 1, memory_order_relaxed);
	return 0;
}

static struct ura__trec *rec_get(struct ura__timers *T, int external)
{
	struct ura__trec *r;
	pthread_mutex_t *lk = &T->lock;
	if (!external && T->free) {
		r = T->free;
		T->free = r->link;
		return r;
	}
	pthread_mutex_lock(lk);
	struct ura__trec **list = external ? &T->ext_free : &T->free;
	if (!*list && grow(T, list, external ? URA__T_EXT_BIT : 0) < 0) {
		pthread_mutex_unlock(lk);
		return NULL;
	}
	r = *list;
	*list = r->link;
	pthread_mutex_unlock(lk);
	return r;
}

/* Owner: the record is done (fired or cancelled); bump its generation so
 * every handle to it goes stale, and reuse it. */
static void rec_put(struct ura__timers *T, struct ura__trec *r)
{
	uint32_t gen = atomic_load_explicit(&r->state, memory_order_relaxed) >> 2;
	gen = (gen + 1) & GEN_MASK;
	if (!gen)
		gen = 1;
	/* release: a canceller's CAS against the old generation fails. */
	atomic_store_explicit(&r->state, gen << 2 | URA__T_FREE, memory_order_release);
	r->msg = NULL;
	if (r->idx & URA__T_EXT_BIT) {
		pthread_mutex_lock(&T->lock);
		r->link = T->ext_free;
		T->ext_free = r;
		pthread_mutex_unlock(&T->lock);
	} else {
		r->link = T->free;
		T->free = r;
	}
}

/* True when it moved the earliest deadline earlier (see watch_due). */
static inline int wheel_add(struct ura__timers *T, struct ura__trec *r)
{
	ura__wheel_add(&T->wheel, &r->t);
	/* The wheel fires at the tick boundary at or after the deadline:
	 * waking for the raw deadline would fire nothing. */
	uint64_t tick = ura__wheel_tick(&T->wheel);
	uint64_t due = (r->t.deadline + tick - 1) & ~(tick - 1);
	/* A coarse slot to cascade ahead of time (time/wheel.h): the next
	 * pass expires, rather than the next deadline, which may be that
	 * slot's. */
	if (ura__wheel_busy(&T->wheel))
		due = 0;
	/* relaxed: under wlock (timers.h). */
	if (due >= atomic_load_explicit(&T->next_due, memory_order_relaxed))
		return 0;
	atomic_store_explicit(&T->next_due, due, memory_order_relaxed);
	return 1;
}

/* Whether workers fire each other's timers: not alone, nor in the
 * deterministic build (det.c, which zeroes steal_queue_ns). */
static inline int steal_on(const ura_system *sys)
{
	return sys->nworkers > 1 && sys->steal_queue_ns;
}

/* How long a's due timers wait before b fires them (ura__timers_steal),
 * or the other way round: longer across nodes. */
static inline uint64_t steal_grace(const ura_system *sys, const struct ura__worker *a,
				   const struct ura__worker *b)
{
	return a->node == b->node ? sys->steal_next_ns : sys->steal_remote_ns;
}

/*
 * A sleep is bounded so that the worker looks when a busy peer's earliest
 * timer has waited the grace period. A peer that turns on and fires its
 * own timers would wake us for nothing at each of its deadlines, so each
 * wake that finds it has turned since doubles the next interval (up to
 * TWATCH_BACK_MAX); a steal resets it. A peer stuck in one turn is then
 * looked at within that bound: a timer of a worker stuck after a long
 * healthy run waits at most TWATCH_BACK_MAX plus the grace.
 */
#define TWATCH_BACK_MAX (10 * URA_MSEC)

/*
 * This worker, busy, has a deadline pending that it cannot fire while
 * its turn runs: it has just turned busy with one (ura__timers_busy), or
 * moved its earliest one earlier in a turn (an arm, or one from another
 * thread drained between turns). An idle peer fires it once it has
 * waited the grace (ura__timers_steal), but a sleeping one bounds
 * its sleep by it only if it read it (ura__timers_steal_wait), and one
 * that went to sleep while we idled read none of ours: sleepers leave an
 * idle worker's timers to it (steal_at). So we make sure that every
 * sleeping peer either looks at our deadlines by then on its own (it
 * sleeps until no later than the deadline, the grace and a watch
 * back-off: its `tlook`) or is woken then by our alarm (ring/ring.h), a
 * timerfd every peer's poller watches, set to the deadline plus the
 * grace. A peer that spins, or is busy, is not counted on: it reads our
 * deadlines as it goes to sleep (below), whenever that is.
 *
 * The alarm wakes nobody unless our turn is still running then: before
 * the moment, we fire the deadline ourselves, asleep or not, and every
 * pass of ours over the wheel moves the alarm on to the next deadline
 * or disarms it (alarm_fit). It stays set across busy periods, so a
 * deadline that stays (a keep-alive timeout) costs one timerfd_settime,
 * once; a periodic timer costs two a period (the disarm as it fires,
 * the set as it is armed again), where it woke the sleeping peer at
 * every period (bench/ticker). When it does fire, every sleeping peer
 * wakes, and one fires the timers; a peer on another node, woken before
 * its longer grace, bounds its sleep by what it read.
 *
 * It used to be a wake, sent at once to a sleeper that would not look in
 * time, which then slept until the deadline; before that, a wake only
 * for a deadline within TWATCH_BACK_MAX, or none while a peer watched a
 * run queue. Each woke a peer for every periodic timer, and the last two
 * held timers for a whole turn ("armed 60 ms ahead" in
 * tests/timer_steal). The wake also counted on a spinner to look, which
 * with three workers could turn busy first while a third slept
 * unbounded (bench/README.md); the alarm wakes whoever sleeps at its
 * moment, so a spinner needs no trust. A wake is still what a worker
 * without an alarm sends (the kernel refused the fd).
 *
 * Why no peer sleeps past the deadline unwarned, with our publication
 * (the store of next_due under wlock, or the seq_cst store of `idle` =
 * 0 in set_busy) and the fence below on one side, and on the sleeper's
 * its store of tlook = UINT64_MAX before its seq_cst store of
 * `sleeping`, its fence, and only then its reads of our `idle` and
 * next_due (runtime/worker.c, worker_sleep). If we read its `idle` or
 * `sleeping` as 0, or a horizon it wrote in an earlier round than the
 * one it is in, then its fence of that round follows ours in the total
 * order (else we would read what it wrote before it), and its look sees
 * what we published. If we read the horizon of this very sleep, it
 * looks again by then, and that next round's fence follows ours for the
 * same reason. Otherwise the alarm is set, before we return, to a moment
 * we read the clock before (or found it set so, the clock read after
 * the fence): the peer's wake comes from the kernel after that moment,
 * and our publication, fenced before it, is what the look that follows
 * reads. A wake that comes before the peer enters its wait is a CQE or
 * an epoll event queued for that wait, never lost.
 */
static void watch_due(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	struct ura__timers *T = w->tm;
	/* relaxed: our own, stored under wlock by this thread. */
	uint64_t due = atomic_load_explicit(&T->next_due, memory_order_relaxed);
	if (due == UINT64_MAX || !steal_on(sys))
		return;
	ura__fence_seq_cst(); /* pairs with worker_sleep's (see above) */
	/* Set already, to a moment not yet come and not past ours: it wakes
	 * whoever sleeps then. The nearest grace (a peer on our node):
	 * one on another node woken early finds nothing yet and bounds its
	 * sleep by what it read. */
	uint64_t at = due + sys->steal_next_ns;
	if (ura__alarm_covers(w, at, ura__now_ns()))
		return;
	/* Nobody asleep: every peer spins or runs (relaxed after the fence;
	 * a sleeper counts itself before its fence, as it stores tlook). */
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	struct ura__worker *cold = NULL;
	for (unsigned i = 1; i < sys->nworkers && !cold; i++) {
		struct ura__worker *v = &sys->workers[(w->id + i) % sys->nworkers];
		/* relaxed, after the fence: the argument above. acquire on
		 * `sleeping`: pairs with the seq_cst store that publishes the
		 * reset of tlook. */
		if (!atomic_load_explicit(&v->idle, memory_order_relaxed) ||
		    !atomic_load_explicit(&v->sleeping, memory_order_acquire))
			continue;
		if (atomic_load_explicit(&v->tlook, memory_order_relaxed) >
		    due + steal_grace(sys, w, v) + TWATCH_BACK_MAX)
			cold = v;
	}
	/* Without an alarm (none could be made, or the kernel refused to
	 * set it): the sleeper is woken now, looks and bounds its sleep. */
	if (cold && ura__alarm_set(w, at) < 0)
		ura__wake(w, cold);
}

/* After the owner's own pass over its wheel (idle or busy): an alarm
 * still to come moves on to the next deadline, or is disarmed, or it
 * would wake the peers for one the owner has fired. */
static void alarm_fit(struct ura__worker *w, uint64_t now)
{
	if (w->alarm_at <= now)
		return;
	/* relaxed: our own, under wlock, or a thief's that made it later. */
	uint64_t due = atomic_load_explicit(&w->tm->next_due, memory_order_relaxed);
	uint64_t at = due == UINT64_MAX ? 0 : due + w->sys->steal_next_ns;
	if (at != w->alarm_at)
		(void)ura__alarm_set(w, at); /* refused: a wake for nothing */
}

static void push_stack(_Atomic(struct ura__trec *) *top, struct ura__trec *r, int via_link)
{
	struct ura__trec *old = atomic_load_explicit(top, memory_order_relaxed);
	do {
		if (via_link)
			r->link = old;
		else
			r->t.next = (struct ura__timer *)old;
	} while (!atomic_compare_exchange_weak_explicit(top, &old, r, memory_order_seq_cst,
						       memory_order_relaxed));
}

ura_timer ura__timer_arm(ura_system *sys, struct ura__worker *w, ura_ref to,
			 uint64_t delay, struct ura_msg *m)
{
	struct ura__worker *owner = w;
	if (!owner) {
		/* Spread arms from outside over the workers. */
		unsigned k = atomic_fetch_add_explicit(&sys->time->rr, 1, memory_order_relaxed);
		owner = &sys->workers[k % sys->nworkers];
	}
	struct ura__timers *T = owner->tm;
	if (w)
		wl_lock(T); /* the free list and the wheel: a thief may fire */
	struct ura__trec *r = rec_get(T, w == NULL);
	if (!r) {
		if (w)
			wl_unlock(T);
		return -ENOMEM;
	}
	r->msg = m;
	r->to = to;
	r->t.deadline = ura__now_ns() + delay;
	uint32_t gen = atomic_load_explicit(&r->state, memory_order_relaxed) >> 2;
	atomic_store_explicit(&r->state, gen << 2 | URA__T_ARMED, memory_order_release);
	ura_timer h = handle_make(gen, owner->id, r->idx & ~URA__T_EXT_BIT);
	if (w) {
		ura__inc(&w->st.sent);
		ura__inc(&w->st.timers_armed);
		int earlier = wheel_add(T, r);
		wl_unlock(T);
		if (earlier)
			watch_due(w);
	} else {
		/* Count before the owner can see it (quiescence). */
		ura__ext_count_other(sys);
		atomic_fetch_add_explicit(&sys->time->armed, 1, memory_order_relaxed);
		push_stack(&T->inbox, r, 0);
		/* seq_cst push, then ura__wake's seq_cst look at `sleeping`:
		 * pairs with the sleeper's store to it and its later look at
		 * the stacks (Dekker). */
		ura__wake(NULL, owner);
	}
	return h;
}

/* The owner finishes a cancelled record: the message is dropped, and
 * counts as received. */
static void finish_cancel(struct ura__worker *w, struct ura__trec *r)
{
	ura__wheel_del(&w->tm->wheel, &r->t);
	ura__msg_free(&w->pool, r->msg);
	ura__inc(&w->st.received);
	ura__inc(&w->st.timers_cancelled);
	rec_put(w->tm, r);
}

/* A handle's generation, owning worker and record: -EINVAL for a handle
 * no arm could have made, -ENOENT for one naming no record. */
static int handle_decode(ura_system *sys, ura_timer h, uint32_t *gen,
			 struct ura__worker **owner, struct ura__trec **rec)
{
	if (h <= 0)
		return -EINVAL;
	*gen = (uint32_t)((uint64_t)h >> 32);
	unsigned wid = (unsigned)((uint64_t)h >> IDX_BITS) & ((1u << WORKER_BITS) - 1);
	if (*gen > GEN_MASK || !*gen)
		return -EINVAL;
	if (wid >= sys->nworkers)
		return -ENOENT;
	*owner = &sys->workers[wid];
	*rec = rec_at((*owner)->tm, (uint32_t)h & ((1u << IDX_BITS) - 1));
	return *rec ? 0 : -ENOENT;
}

int ura__timer_cancel(ura_system *sys, struct ura__worker *self, ura_timer h)
{
	uint32_t gen;
	struct ura__worker *owner;
	struct ura__trec *r;
	int rc = handle_decode(sys, h, &gen, &owner, &r);
	if (rc < 0)
		return rc;
	uint32_t want = gen << 2 | URA__T_ARMED;
	/* acq_rel: whoever wins this CAS (here, or the owner's fire) owns
	 * the record's outcome; acquire makes its fields ours to read. */
	while (!atomic_compare_exchange_strong_explicit(&r->state, &want, gen << 2 | URA__T_BUSY,
							memory_order_acq_rel, memory_order_relaxed)) {
		if (want != (gen << 2 | URA__T_SNAP))
			return -ENOENT;
		sched_yield(); /* a snapshot copies its message: still pending */
		want = gen << 2 | URA__T_ARMED;
	}
	if (self == owner) {
		wl_lock(owner->tm);
		int armed = ura__wheel_armed(&r->t);
		if (armed)
			finish_cancel(owner, r);
		wl_unlock(owner->tm);
		if (armed)
			return 0;
	}
	/* Not ours, or still in the arm inbox: the owner finishes it. */
	push_stack(&owner->tm->cancels, r, 1);
	ura__wake(self, owner); /* as for the arm inbox */
	return 0;
}

/* Who fires: the worker that posts (the owner, or a thief), and the
 * owner's tables, which get the record back. */
struct fire_ctx {
	struct ura__worker *w;
	struct ura__timers *T;
};

static void fire(struct ura__timer *t, void *ud)
{
	struct fire_ctx *fc = ud;
	struct ura__worker *w = fc->w;
	struct ura__trec *r = (struct ura__trec *)t;
	uint32_t s = atomic_load_explicit(&r->state, memory_order_relaxed);
	while ((s & 3) == URA__T_SNAP) {
		/* A snapshot copies the message: it is still due, wait for it
		 * (acquire: pairs with the release in ura__timer_snap_unlock). */
		sched_yield();
		s = atomic_load_explicit(&r->state, memory_order_acquire);
	}
	if ((s & 3) != URA__T_ARMED ||
	    !atomic_compare_exchange_strong_explicit(&r->state, &s, (s & ~3u) | URA__T_BUSY,
						     memory_order_acq_rel, memory_order_relaxed))
		return; /* a canceller won: its cancel-stack entry finishes it */
	ura__inc(&w->st.timers_fired);
	uint64_t due = r->t.deadline, now = w->mx->fire_now; /* metrics */
	ura__hist_add(&w->mx->timer_late, now > due ? now - due : 0);
	ura__post_made(w, r->to, r->msg);
	rec_put(fc->T, r);
}

/* Owner: adopts arms from other threads and finishes remote cancels;
 * true when an adopted arm moved the earliest deadline earlier. */
static int drain_stacks(struct ura__worker *w)
{
	int earlier = 0;
	struct ura__timers *T = w->tm;
	/* Take the cancels first, then the inbox: an arm always precedes
	 * its cancel, so every cancelled record we hold has been adopted (or
	 * is in the inbox we take next) before we free it. acquire: pairs
	 * with the seq_cst CAS in push_stack. */
	struct ura__trec *c = atomic_exchange_explicit(&T->cancels, NULL, memory_order_acquire);
	struct ura__trec *in = atomic_exchange_explicit(&T->inbox, NULL, memory_order_acquire);
	while (in) {
		struct ura__trec *r = in;
		in = (struct ura__trec *)r->t.next;
		r->t.prev = NULL;
		/* Cancelled before adoption: leave it out of the wheel. */
		if ((atomic_load_explicit(&r->state, memory_order_acquire) & 3) == URA__T_ARMED)
			earlier |= wheel_add(T, r);
	}
	while (c) {
		struct ura__trec *r = c;
		c = r->link;
		finish_cancel(w, r);
	}
	return earlier;
}

static inline int stacks_pending(struct ura__timers *T)
{
	return atomic_load_explicit(&T->inbox, memory_order_relaxed) ||
	       atomic_load_explicit(&T->cancels, memory_order_relaxed);
}

void ura__timers_drain(struct ura__worker *w)
{
	struct ura__timers *T = w->tm;
	if (stacks_pending(T)) {
		wl_lock(T);
		(void)drain_stacks(w);
		wl_unlock(T);
	}
}

/* wlock held: fires what is due on T's wheel at *now, posted by w. */
static size_t expire_locked(struct ura__worker *w, struct ura__timers *T, uint64_t now)
{
	struct fire_ctx fc = { w, T };
	w->mx->fire_now = now; /* fire's lateness, without a clock read each */
	size_t n = ura__wheel_expire(&T->wheel, now, fire, &fc);
	/* relaxed: under wlock (timers.h). */
	atomic_store_explicit(&T->next_due, T->wheel.count ? ura__wheel_next(&T->wheel) : UINT64_MAX,
			      memory_order_relaxed);
	return n;
}

int ura__timers_service(struct ura__worker *w, uint64_t *now, int idle)
{
	struct ura__timers *T = w->tm;
	int due = ura__clock(now) >= atomic_load_explicit(&T->next_due, memory_order_relaxed);
	if (!due && !stacks_pending(T))
		return 0;
	wl_lock(T);
	int earlier = 0;
	if (stacks_pending(T))
		earlier = drain_stacks(w);
	size_t n = 0;
	if (T->wheel.count && ura__clock(now) >= atomic_load_explicit(&T->next_due,
									memory_order_relaxed))
		n = expire_locked(w, T, *now);
	else if (!T->wheel.count)
		atomic_store_explicit(&T->next_due, UINT64_MAX, memory_order_relaxed);
	wl_unlock(T);
	if (w->alarm_at)
		alarm_fit(w, *now);
	/* Between turns, an arm from another thread is as one of ours (see
	 * ura__timer_arm); idle, we fire our own. */
	if (earlier && !idle)
		watch_due(w);
	return n > 0;
}

/* When peer v's due timers become w's to fire: its earliest deadline
 * plus the grace (*grace); UINT64_MAX if never: v is w, or idle (it
 * fires its own), or its wheel is empty. Not wheel.count: the owner's,
 * under wlock; next_due is UINT64_MAX while the wheel is empty. */
static inline uint64_t steal_at(const struct ura__worker *w, struct ura__worker *v,
				uint64_t *grace)
{
	const ura_system *sys = w->sys;
	if (v == w || atomic_load_explicit(&v->idle, memory_order_relaxed))
		return UINT64_MAX;
	uint64_t due = atomic_load_explicit(&v->tm->next_due, memory_order_relaxed);
	*grace = steal_grace(sys, v, w);
	return due == UINT64_MAX ? UINT64_MAX : due + *grace;
}

static inline int stealable(const struct ura__worker *w, struct ura__worker *v, uint64_t now)
{
	uint64_t grace;
	return now >= steal_at(w, v, &grace);
}

int ura__timers_steal(struct ura__worker *w, uint64_t now, int look)
{
	ura_system *sys = w->sys;
	int found = 0;
	if (!steal_on(sys))
		return 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *v = &sys->workers[(w->id + 1 + i) % sys->nworkers];
		if (!stealable(w, v, now))
			continue;
		if (look)
			return 1;
		/* Taken only if free: the owner holds it only to arm or fire,
		 * and then it is not stuck. */
		if (!wl_trylock(v->tm))
			continue;
		size_t n = 0;
		if (stealable(w, v, now))
			n = expire_locked(w, v->tm, now);
		wl_unlock(v->tm);
		if (n) {
			ura__add(&w->st.timers_stolen, n);
			w->twatch_back = 0;
			found = 1;
		}
	}
	return found;
}

uint64_t ura__timers_steal_wait(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	uint64_t wait = 0;
	if (!steal_on(sys))
		return 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *v = &sys->workers[i];
		uint64_t grace, due = steal_at(w, v, &grace);
		if (due == UINT64_MAX)
			continue;
		uint64_t turns = ura__ld(&v->st.turns);
		if (w->twatch_v != (int)v->id) {
			w->twatch_v = (int)v->id;
			w->twatch_back = 0;
		} else if (w->twatch_turns != turns) {
			uint64_t b = w->twatch_back ? 2 * w->twatch_back : grace;
			w->twatch_back = b < TWATCH_BACK_MAX ? b : TWATCH_BACK_MAX;
		}
		w->twatch_turns = turns;
		uint64_t t = due > now ? due - now : 1;
		if (t < w->twatch_back)
			t = w->twatch_back;
		if (!wait || t < wait)
			wait = t;
	}
	return wait;
}

void ura__timers_busy(struct ura__worker *w)
{
	watch_due(w);
}

/* At destroy (workers stopped): frees pending records' messages and the
 * tables; returns how many were pending. */
static uint64_t timers_fini(ura_system *sys, struct ura__timers *T)
{
	uint64_t pending = 0;
	if (!T || !T->chunks)
		return 0;
	uint32_t n = atomic_load_explicit(&T->nchunks, memory_order_relaxed);
	for (uint32_t c = 0; c < n; c++) {
		struct ura__trec *chunk = atomic_load_explicit(&T->chunks[c], memory_order_relaxed);
		for (uint32_t i = 0; i < URA__TCHUNK; i++) {
			struct ura__trec *r = &chunk[i];
			uint32_t st = atomic_load_explicit(&r->state, memory_order_relaxed) & 3;
			if (st != URA__T_FREE && r->msg) {
				ura__arena_drop(&sys->arena, r->msg, 1);
				pending++;
			}
		}
		ura__unmap(chunk, URA__TCHUNK * sizeof *chunk);
	}
	free(T->chunks);
	T->chunks = NULL;
	pthread_mutex_destroy(&T->lock);
	return pending;
}

int ura__time_init(ura_system *sys)
{
	sys->time = ura__calloc(1, sizeof *sys->time);
	if (!sys->time)
		return -ENOMEM;
	uint64_t now = ura__now_ns();
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		/* Its own cache lines: the stacks other threads push to are
		 * apart from the wheel the owner walks. */
		w->tm = ura__aligned_alloc(URA__CACHELINE, sizeof *w->tm);
		if (!w->tm)
			return -ENOMEM;
		if (timers_init(w->tm, now, sys->timer_slack_ns) < 0) {
			free(w->tm);
			w->tm = NULL;
			return -ENOMEM;
		}
	}
	return 0;
}

uint64_t ura__time_fini(ura_system *sys)
{
	uint64_t pending = 0;
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		pending += timers_fini(sys, w->tm);
		free(w->tm);
		w->tm = NULL;
	}
	free(sys->time);
	sys->time = NULL;
	return pending;
}

int ura__timer_live(ura_system *sys, ura_timer h)
{
	uint32_t gen;
	struct ura__worker *owner;
	struct ura__trec *r;
	if (handle_decode(sys, h, &gen, &owner, &r) < 0)
		return 0;
	uint32_t s = atomic_load_explicit(&r->state, memory_order_acquire);
	return s == (gen << 2 | URA__T_ARMED) || s == (gen << 2 | URA__T_SNAP);
}

/* ---- snapshots (lib/snap) ------------------------------------------- */

int ura__timer_snap_lock(ura_system *sys, ura_timer h, struct ura_msg **m,
			 uint64_t *deadline, ura_ref *to)
{
	uint32_t gen;
	struct ura__worker *owner;
	struct ura__trec *r;
	if (handle_decode(sys, h, &gen, &owner, &r) < 0)
		return -ENOENT;
	uint32_t want = gen << 2 | URA__T_ARMED;
	/* acquire: pairs with the release that armed it (msg, deadline);
	 * while SNAP, neither the owner's fire nor a cancel touches them. */
	if (!atomic_compare_exchange_strong_explicit(&r->state, &want, gen << 2 | URA__T_SNAP,
						     memory_order_acquire, memory_order_relaxed))
		return -ENOENT; /* fired, cancelled, or being so */
	*m = r->msg;
	*deadline = r->t.deadline;
	*to = r->to;
	return 0;
}

void ura__timer_snap_unlock(ura_system *sys, ura_timer h)
{
	uint32_t gen;
	struct ura__worker *owner;
	struct ura__trec *r;
	if (handle_decode(sys, h, &gen, &owner, &r) == 0)
		/* release: the message's new phase is seen by the fire or
		 * cancel that follows (their acquire). */
		atomic_store_explicit(&r->state, gen << 2 | URA__T_ARMED, memory_order_release);
}
