/* SPDX-License-Identifier: MIT */
/*
 * The scheduling loop of a worker: its run queue, the LIFO "next" slot,
 * stealing, spinning, sleeping in the poller, waking peers, and the
 * quiescence check.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"

_Thread_local struct ura__worker *ura__current_worker;
#if defined(__SANITIZE_THREAD__)
_Atomic int ura__fence_dummy;
#endif

/* After this many next-slot runs in a row, the run queue goes first: two
 * actors ping-ponging through the slot must not starve the queue. */
#define NEXT_STREAK_MAX 32
/* Every this many picks, look at the inject queue before local work, so
 * sends from outside are served even on a saturated worker (Go: 61). */
#define INJECT_EVERY 61

/* ---- run queue ------------------------------------------------------ */

static inline uint32_t rq_len(struct ura__runq *q)
{
	uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);
	return t - h;
}

/* Owner only. */
static inline int rq_push(struct ura__runq *q, struct ura__actor *a)
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
static inline struct ura__actor *rq_pop(struct ura__runq *q)
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

/* ---- waking --------------------------------------------------------- */

int ura__wake(struct ura__worker *self, struct ura__worker *v)
{
	if (!atomic_load_explicit(&v->sleeping, memory_order_seq_cst))
		return 0;
	/* One wake per sleep: the sleeper clears wake_pending when it gets
	 * up, so a second waker finds it set and leaves it to the first. */
	if (atomic_exchange_explicit(&v->wake_pending, 1, memory_order_acq_rel))
		return 1;
	if (self) {
		ura__poller_wake_from(&self->poller, &v->poller);
		ura__inc(&self->st.wakeups);
	} else {
		ura__poller_wake(&v->poller);
	}
	return 1;
}

/* Wakes the first sleeper among workers [first, first + count), looking
 * from `start` on (the waker's neighbours first: same node, warm caches). */
static void wake_among(ura_system *sys, struct ura__worker *self, unsigned first,
		       unsigned count, unsigned start)
{
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v != self && ura__wake(self, v))
			return;
	}
}

/* There is stealable work: make sure someone will come for it. */
static inline void maybe_wake(ura_system *sys, struct ura__worker *self)
{
	/* seq_cst fence: pairs with the fence after a sleeper's store to
	 * its `sleeping` flag (worker_sleep). Either we see the flag, or the
	 * sleeper's recheck sees our work: never neither (Dekker). */
	ura__fence_seq_cst();
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	/* A spinning worker finds the work itself; waking a sleeper as well
	 * would pay a wake (tens of us on a VM) for nothing. */
	if (atomic_load_explicit(&sys->nspinning, memory_order_relaxed))
		return;
	wake_among(sys, self, 0, sys->nworkers, self ? self->id + 1 : 0);
}

/* ---- scheduling ----------------------------------------------------- */

static void push_local(struct ura__worker *w, struct ura__actor *a)
{
	if (!w->ovf_head && rq_push(&w->rq, a)) {
		maybe_wake(w->sys, w);
		return;
	}
	/* Full ring: the overflow list is private; it refills the ring as
	 * the ring drains (see pick). */
	a->link = NULL;
	if (w->ovf_tail)
		w->ovf_tail->link = a;
	else
		w->ovf_head = a;
	w->ovf_tail = a;
}

/* Wakes one sleeping worker of node `nd` (none if one of them spins). */
static void wake_node(ura_system *sys, struct ura__worker *self, unsigned nd)
{
	ura__fence_seq_cst(); /* pairs with worker_sleep's fence (see maybe_wake) */
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	wake_among(sys, self, sys->nodes[nd].first, sys->nodes[nd].count, 0);
}

/* Makes `a` runnable on its home node from a thread of another node, or
 * from a thread that is not a worker. */
static void inject(ura_system *sys, struct ura__worker *self, struct ura__actor *a,
		   unsigned nd)
{
	struct ura__node *n = &sys->nodes[nd];
	a->link = NULL;
	pthread_mutex_lock(&n->inject_lock);
	if (n->inject_tail)
		n->inject_tail->link = a;
	else
		n->inject_head = a;
	n->inject_tail = a;
	atomic_fetch_add_explicit(&n->inject_len, 1, memory_order_relaxed);
	pthread_mutex_unlock(&n->inject_lock);
	/* Not a->home_node: once queued, the actor is no longer ours to read. */
	wake_node(sys, self, nd);
}

static struct ura__actor *inject_pop(struct ura__worker *w)
{
	struct ura__node *n = &w->sys->nodes[w->node];
	if (!atomic_load_explicit(&n->inject_len, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&n->inject_lock);
	struct ura__actor *a = n->inject_head;
	if (a) {
		n->inject_head = a->link;
		if (!n->inject_head)
			n->inject_tail = NULL;
		atomic_fetch_sub_explicit(&n->inject_len, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&n->inject_lock);
	return a;
}

void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	unsigned home = ura__home(a); /* we hold its token: exact */
	if (!w || w->node != home) {
		/* Woken from another node: the actor goes home. */
		inject(sys, w, a, home);
		return;
	}
	/* The woken actor runs next on this worker, where the message it got
	 * is still in cache; whoever held the slot goes to the queue, where
	 * an idle peer may steal it. */
	struct ura__actor *old = w->next;
	w->next = a;
	if (old)
		push_local(w, old);
}

void ura__schedule_back(struct ura__worker *w, struct ura__actor *a)
{
	push_local(w, a);
}

/* Refills the ring from the private overflow list, oldest first, so the
 * overflow becomes stealable and nothing waits behind later arrivals. */
static void refill(struct ura__worker *w)
{
	while (w->ovf_head && rq_push(&w->rq, w->ovf_head)) {
		w->ovf_head = w->ovf_head->link;
		if (!w->ovf_head)
			w->ovf_tail = NULL;
	}
}

static struct ura__actor *pick(struct ura__worker *w)
{
	struct ura__actor *a;
	if (w->ovf_head)
		refill(w);
	if (++w->tick % INJECT_EVERY == 0 && (a = inject_pop(w)))
		return a;
	if (w->next) {
		if (w->next_streak < NEXT_STREAK_MAX || !rq_len(&w->rq)) {
			a = w->next;
			w->next = NULL;
			w->next_streak++;
			return a;
		}
		push_local(w, w->next);
		w->next = NULL;
	}
	w->next_streak = 0;
	if ((a = rq_pop(&w->rq)))
		return a;
	return inject_pop(w);
}

static struct ura__actor *steal_range(struct ura__worker *w, unsigned first,
				      unsigned count)
{
	ura_system *sys = w->sys;
	w->rng = w->rng * 1103515245u + 12345u;
	unsigned start = count ? (w->rng >> 16) % count : 0;
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v == w || !rq_len(&v->rq))
			continue; /* known empty: no CAS, no cache-line steal */
		struct ura__actor *a = rq_pop(&v->rq);
		if (a)
			return a;
	}
	return NULL;
}

/* Same node first; other nodes only once this node has had nothing to
 * steal for steal_remote_ns (a remote actor drags its memory along). */
static struct ura__actor *steal(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	struct ura__node *n = &sys->nodes[w->node];
	struct ura__actor *a = steal_range(w, n->first, n->count);
	if (a) {
		ura__inc(&w->st.steals);
		w->local_dry_since = 0;
		return a;
	}
	if (sys->nnodes == 1)
		return NULL;
	if (!w->local_dry_since) {
		w->local_dry_since = now;
		return NULL;
	}
	if (now - w->local_dry_since < sys->steal_remote_ns)
		return NULL;
	for (unsigned k = 1; k < sys->nnodes; k++) {
		struct ura__node *r = &sys->nodes[(w->node + k) % sys->nnodes];
		if ((a = steal_range(w, r->first, r->count))) {
			ura__inc(&w->st.steals);
			ura__inc(&w->st.steals_remote);
			return a;
		}
	}
	return NULL;
}

static int work_visible(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	if (atomic_load_explicit(&sys->nodes[w->node].inject_len, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nodes[w->node].inbox, memory_order_seq_cst))
		return 1;
	if (atomic_load_explicit(&w->tm.inbox, memory_order_relaxed) ||
	    atomic_load_explicit(&w->tm.cancels, memory_order_relaxed) ||
	    /* seq_cst: pairs with the pool's push and a cancel's flag
	     * store, against our store to `sleeping` (Dekker, as in
	     * maybe_wake). */
	    atomic_load_explicit(&w->io.done, memory_order_seq_cst) ||
	    atomic_load_explicit(&w->io.cancel_req, memory_order_seq_cst) ||
	    (w->id == 0 && atomic_load_explicit(&sys->sig_req, memory_order_relaxed)))
		return 1;
	for (unsigned i = 0; i < sys->nworkers; i++)
		if (rq_len(&sys->workers[i].rq))
			return 1;
	return 0;
}

/* Timers, remote cancels and arms, poller events, signal setup: work
 * that is not an actor. Cheap when there is none (no clock read). */
/* Actor I/O to look at: completions from the pool or cancels from other
 * workers (always), or a ring with operations in flight. A busy worker
 * enters the ring when IO_POLL_BATCH SQEs are queued or IO_POLL_NS passed
 * since it last did (clock read every 8 passes): one enter submits many
 * and reaps many, and a completion never waits long behind busy actors.
 * An idle worker polls at once (find_work). */
#define IO_POLL_BATCH 16
#define IO_POLL_NS (20 * URA_USEC)
static inline int io_maybe(struct ura__worker *w)
{
	/* relaxed peeks: what they announce is taken with acquire later
	 * (ura__io_service); a stale zero only delays it one pass. */
	return ura__poller_io_active(&w->poller) ||
	       atomic_load_explicit(&w->io.done, memory_order_relaxed) ||
	       atomic_load_explicit(&w->io.cancel_req, memory_order_relaxed);
}

static inline int internal_maybe(struct ura__worker *w)
{
	return w->tm.wheel.count || w->poller.events || ura__inbox_ready(w) ||
	       atomic_load_explicit(&w->tm.inbox, memory_order_relaxed) ||
	       atomic_load_explicit(&w->tm.cancels, memory_order_relaxed) ||
	       (w->id == 0 && atomic_load_explicit(&w->sys->sig_req, memory_order_relaxed));
}

static inline int internal_due(struct ura__worker *w, uint64_t now)
{
	return w->poller.events || ura__inbox_ready(w) || ura__timers_pending_work(w, now) ||
	       (w->id == 0 && atomic_load_explicit(&w->sys->sig_req, memory_order_relaxed));
}


/* ---- quiescence ----------------------------------------------------- */

void ura__ext_sent_inc(ura_system *sys)
{
	static _Atomic unsigned next_shard;
	static _Thread_local unsigned shard = UINT32_MAX;
	if (shard == UINT32_MAX)
		shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
			URA__EXT_SHARDS;
	/* seq_cst: the count must be visible before the push it precedes,
	 * to whoever sums the shards after reading the receive counters. */
	atomic_fetch_add_explicit(&sys->ext_sent[shard].sent, 1, memory_order_seq_cst);
}

uint64_t ura__ext_sent_sum(ura_system *sys)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < URA__EXT_SHARDS; i++)
		n += atomic_load_explicit(&sys->ext_sent[i].sent, memory_order_seq_cst);
	return n;
}

/*
 * True when, at one instant, every worker was idle and every message sent
 * had been taken from a mailbox. Counters only change while a worker is
 * busy; the two passes over (idle, idle_epoch) prove no worker was busy in
 * between, so the counter sums read in between are exact. Messages from
 * non-worker threads are counted (ext_sent) before they are pushed.
 */
int ura__quiescent(ura_system *sys)
{
	uint64_t e1 = 0, e2 = 0, recv = 0, sent = 0;
	unsigned n = sys->nworkers;
	if (!atomic_load_explicit(&sys->started, memory_order_acquire))
		return 0;
	if (ura__snap_busy(sys)) /* a snapshot being taken is pending work */
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct ura__worker *w = &sys->workers[i];
		/* seq_cst: pairs with the seq_cst stores of idle/idle_epoch
		 * in worker_main; acquire is what carries the counters. */
		if (!atomic_load_explicit(&w->idle, memory_order_seq_cst))
			return 0;
		e1 += atomic_load_explicit(&w->idle_epoch, memory_order_seq_cst);
	}
	for (unsigned i = 0; i < n; i++)
		recv += ura__ld(&sys->workers[i].st.received);
	for (unsigned i = 0; i < n; i++)
		sent += ura__ld(&sys->workers[i].st.sent);
	sent += ura__ext_sent_sum(sys);
	for (unsigned i = 0; i < n; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (!atomic_load_explicit(&w->idle, memory_order_seq_cst))
			return 0;
		e2 += atomic_load_explicit(&w->idle_epoch, memory_order_seq_cst);
	}
	return e1 == e2 && recv == sent;
}

void ura__await_wake(ura_system *sys)
{
	pthread_mutex_lock(&sys->q_lock);
	sys->q_gen++;
	pthread_cond_broadcast(&sys->q_cond);
	pthread_mutex_unlock(&sys->q_lock);
}

/* ---- the loop ------------------------------------------------------- */

static inline void set_busy(struct ura__worker *w)
{
	/* seq_cst both: a quiescence checker that saw us idle must see the
	 * epoch move (see ura__quiescent). */
	atomic_fetch_add_explicit(&w->idle_epoch, 1, memory_order_seq_cst);
	atomic_store_explicit(&w->idle, 0, memory_order_seq_cst);
}

static void worker_sleep(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	if (atomic_load_explicit(&sys->awaiters, memory_order_seq_cst) &&
	    ura__quiescent(sys))
		ura__await_wake(sys);
	atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&sys->nsleeping, 1, memory_order_seq_cst);
	/* seq_cst fence: pairs with the fence in maybe_wake (see there). */
	ura__fence_seq_cst();
	/* The earliest timer bounds the sleep: one deadline in the kernel for
	 * all of them, never a kernel timer per timer. */
	uint64_t wait = sys->idle_wait_ns, now = 0;
	if (w->tm.wheel.count) {
		now = ura__now_ns();
		uint64_t due = w->tm.next_due;
		wait = due <= now ? 0 : (due - now < wait ? due - now : wait);
	}
	if (wait && !work_visible(w) &&
	    !atomic_load_explicit(&sys->shutdown, memory_order_relaxed)) {
		ura__inc(&w->st.sleeps);
		ura__inc(&w->st.ring_enters);
		int rc = ura__poller_wait(&w->poller, wait);
		if (rc < 0)
			ura__log(sys, URA_LOG_ERROR, "worker %u: wait failed: %s",
				 w->id, ura_strerror(rc));
	}
	atomic_fetch_sub_explicit(&sys->nsleeping, 1, memory_order_seq_cst);
	atomic_store_explicit(&w->sleeping, 0, memory_order_seq_cst);
	atomic_store_explicit(&w->wake_pending, 0, memory_order_release);
}

static int service_io(struct ura__worker *w, int force);

/* Actors runnable on this worker (an I/O completion schedules here). */
static inline int has_local(struct ura__worker *w)
{
	return w->next || w->ovf_head || rq_len(&w->rq);
}

/* Idle: spin (stealing) for a while, then sleep. Returns an actor, or
 * NULL when there is internal work (timers, events) or on shutdown. */
static struct ura__actor *find_work(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	struct ura__actor *a;
	/* Idle from here until we hold work again, whatever emptied our
	 * queues (our own turns, or a thief). seq_cst: see ura__quiescent. */
	atomic_store_explicit(&w->idle, 1, memory_order_seq_cst);
	for (;;) {
		atomic_fetch_add_explicit(&sys->nspinning, 1, memory_order_seq_cst);
		uint64_t now = ura__now_ns(), until = now + sys->spin_ns;
		do {
			if ((a = inject_pop(w)) || (a = steal(w, now)) ||
			    (internal_maybe(w) && internal_due(w, now)) ||
			    (io_maybe(w) && service_io(w, 1) && has_local(w))) {
				atomic_fetch_sub_explicit(&sys->nspinning, 1, memory_order_seq_cst);
				return a;
			}
			for (int i = 0; i < 32; i++)
				ura__cpu_relax();
			now = ura__now_ns();
		} while (now < until &&
			 !atomic_load_explicit(&sys->shutdown, memory_order_relaxed));
		atomic_fetch_sub_explicit(&sys->nspinning, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&sys->shutdown, memory_order_acquire))
			return NULL;
		/* Blocks of other workers' pools go home before we sleep. */
		if (w->pool.ret_dirty)
			ura__pool_flush(&w->pool);
		worker_sleep(w);
		/* The sleep itself may have delivered I/O completions. */
		if (has_local(w) || (internal_maybe(w) && internal_due(w, ura__now_ns())) ||
		    (io_maybe(w) && service_io(w, 1) && has_local(w)))
			return NULL;
	}
}

/* Returns true when I/O completions may have made actors runnable. */
static int service_io(struct ura__worker *w, int force)
{
	int poll = force || w->poller.io_sq_pending >= IO_POLL_BATCH;
	if (!poll && (++w->io.tick & 7) == 0)
		poll = ura__now_ns() - w->io.last_poll >= IO_POLL_NS;
	if (poll)
		w->io.last_poll = ura__now_ns();
	/* relaxed peeks, as in io_maybe. */
	if (!poll && !atomic_load_explicit(&w->io.done, memory_order_relaxed) &&
	    !atomic_load_explicit(&w->io.cancel_req, memory_order_relaxed))
		return 0;
	/* No set_busy: completions move no quiescence counter that matters.
	 * Each operation counted its final completion as sent when it was
	 * submitted (busy), so sent > received until the actor has taken
	 * it, busy again; a multishot's extra messages only add to sent
	 * while that final one is still owed. */
	int n = ura__io_service(w, poll);
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	return n > 0;
}

static void service_internal(struct ura__worker *w)
{
	uint64_t now = ura__now_ns();
	if (!internal_due(w, now))
		return;
	/* Firing timers and reading signals send messages: busy first, so
	 * the quiescence counters only move while we are visibly busy. */
	if (atomic_load_explicit(&w->idle, memory_order_relaxed))
		set_busy(w);
	if (ura__inbox_ready(w))
		ura__inbox_drain(w);
	ura__timers_service(w, now);
	if (w->id == 0 || w->poller.events)
		ura__signals_service(w);
	/* Timers and signals may have sent to other nodes. */
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
}

struct start_sync {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned ready;
	int err;
};

/* io-wq threads of this worker's ring run on its node's CPUs, capped. */
static void iowq_setup(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	cpu_set_t set;
	CPU_ZERO(&set);
	int any = 0;
	for (unsigned i = 0; i < sys->nworkers; i++)
		if (sys->workers[i].node == w->node && sys->workers[i].cpu >= 0) {
			CPU_SET(sys->workers[i].cpu, &set);
			any = 1;
		}
	ura__poller_iowq(&w->poller, any && !sys->simulated ? &set : NULL, sizeof set,
			 sys->io_wq_max);
}

static void *worker_main(void *arg)
{
	struct ura__worker *w = arg;
	ura_system *sys = w->sys;
	struct start_sync *ss = sys->start_sync;
	ura__current_worker = w;

	/* Signals ura can deliver as messages are never taken by a worker:
	 * unsubscribed, they go to a thread of the program (default action);
	 * subscribed, the program's thread blocks them and worker 0 reads
	 * them from a signalfd. */
	sigset_t sigs;
	sigemptyset(&sigs);
	for (size_t i = 0; i < URA__ARRAY_LEN(ura__signals_handled); i++)
		sigaddset(&sigs, ura__signals_handled[i]);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
		if (rc)
			ura__log(sys, URA_LOG_DEBUG, "worker %u: pin to cpu %d: %s",
				 w->id, w->cpu, ura_strerror(rc));
	}
	/* The ring is created here, on its owner thread: SINGLE_ISSUER and
	 * DEFER_TASKRUN tie it to its creator, and its memory is first
	 * touched on the worker's node. */
	int fell_back = 0, uerr = 0;
	int rc = ura__poller_init(&w->poller, sys->want_uring, &fell_back, &uerr);
	pthread_mutex_lock(&ss->lock);
	if (rc < 0 && !ss->err)
		ss->err = rc;
	if (rc == 0 && w->id == 0) {
		sys->backend = w->poller.name;
		static _Atomic int said_fallback;
		if (fell_back && !atomic_exchange(&said_fallback, 1))
			ura__log(sys, URA_LOG_WARN,
				 "io_uring unavailable (%s): using epoll+eventfd",
				 ura_strerror(uerr));
		ura__log(sys, URA_LOG_INFO, "%u workers, backend %s",
			 sys->nworkers, w->poller.name);
	}
	/* Idle before "ready": ura_system_new must not return while a worker
	 * that never ran still looks busy to the quiescence check. */
	atomic_store_explicit(&w->idle, 1, memory_order_seq_cst);
	ss->ready++;
	pthread_cond_broadcast(&ss->cond);
	pthread_mutex_unlock(&ss->lock);
	if (rc < 0)
		return NULL;
	ura__io_init(w);
	iowq_setup(w);

	while (!atomic_load_explicit(&sys->shutdown, memory_order_acquire)) {
		if (ura__unlikely(internal_maybe(w)))
			service_internal(w);
		if (ura__unlikely(io_maybe(w)))
			service_io(w, 0);
		struct ura__actor *a = pick(w);
		if (!a) {
			a = find_work(w);
			if (!a)
				continue;
		}
		if (atomic_load_explicit(&w->idle, memory_order_relaxed))
			set_busy(w);
		ura__actor_turn(w, a);
		/* End of the pass: no cross-node message waits longer. */
		if (w->outbox_dirty)
			ura__outbox_flush_all(w);
	}
	/* Nothing of an actor's may be in the kernel once destroy runs. */
	ura__io_worker_exit(w);
	ura__poller_fini(&w->poller);
	return NULL;
}

int ura__workers_start(ura_system *sys)
{
	struct start_sync ss = { .ready = 0, .err = 0 };
	pthread_mutex_init(&ss.lock, NULL);
	pthread_cond_init(&ss.cond, NULL);
	sys->start_sync = &ss;
	unsigned made = 0;
	int err = 0;
	for (; made < sys->nworkers; made++) {
		struct ura__worker *w = &sys->workers[made];
		int rc = pthread_create(&w->thread, NULL, worker_main, w);
		if (rc) {
			err = -rc;
			break;
		}
		w->started = 1;
	}
	pthread_mutex_lock(&ss.lock);
	while (ss.ready < made)
		pthread_cond_wait(&ss.cond, &ss.lock);
	if (!err)
		err = ss.err;
	pthread_mutex_unlock(&ss.lock);
	sys->start_sync = NULL;
	pthread_mutex_destroy(&ss.lock);
	pthread_cond_destroy(&ss.cond);
	if (err) {
		ura__workers_stop(sys);
		return err;
	}
	atomic_store_explicit(&sys->started, 1, memory_order_release);
	return 0;
}

void ura__workers_stop(ura_system *sys)
{
	atomic_store_explicit(&sys->shutdown, 1, memory_order_seq_cst);
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (w->poller.efd >= 0)
			ura__poller_wake(&w->poller);
	}
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (w->started) {
			pthread_join(w->thread, NULL);
			w->started = 0;
		}
	}
}
