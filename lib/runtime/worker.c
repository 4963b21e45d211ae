/* SPDX-License-Identifier: MIT */
/*
 * The worker loop: pick an actor (core/sched.h) and run its turn
 * (actor/), poll the sources of work that are not actors, spin and steal
 * when idle, sleep in the poller when there is nothing, and the start and
 * stop of the worker threads.
 *
 * Sources. Timers, the cross-node inbox, signals and actor I/O are polled
 * through one small interface, which each implements in its own folder's
 * header (Seastar's reactor polls a list of pollers the same way):
 *
 *	int      ura__<src>_pending(w)          cheap owner-side test: may
 *	                                        there be work? (no clock read)
 *	int      ura__<src>_due(w, &now)        is it due now? (reads the
 *	                                        clock through ura__clock)
 *	int      ura__<src>_service(w, &now, idle)  does it; > 0 when actors
 *	                                        may have become runnable
 *	int      ura__<src>_visible(w)          before sleeping, after the
 *	                                        seq_cst fence: did another
 *	                                        thread hand it work?
 *	uint64_t ura__<src>_deadline(w)         the earliest time it must run
 *	                                        (UINT64_MAX: none)
 *
 * SOURCES lists them in the order a pass services them. The list is
 * expanded at compile time, so every call is direct and inlined: a pass
 * with nothing to do costs a few loads, as when the loop named each
 * subsystem's fields itself.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "core/metrics.h"
#include "core/outbox.h"
#include "core/quiesce.h"
#include "core/sched.h"
#include "io/io.h"
#include "io/signals.h"
#include "runtime/runtime.h"
#include "runtime/sources.h"
#include "time/timers.h"

/* The node's count of idle workers (core/core.h, ura__node.nidle), with
 * two nodes or more. relaxed: a heuristic for other nodes' senders
 * (core/outbox.c); one that misses a change batches as before, and the
 * turn's end still hands its outbox over. */
static inline void node_idle(struct ura__worker *w, int on)
{
	ura_system *sys = w->sys;
	if (sys->nnodes < 2)
		return;
	if (on)
		atomic_fetch_add_explicit(&sys->nodes[w->node].nidle, 1, memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&sys->nodes[w->node].nidle, 1, memory_order_relaxed);
}

/* Idle from now (from busy, or at the start). */
static inline void set_idle(struct ura__worker *w)
{
	if (!atomic_load_explicit(&w->idle, memory_order_relaxed))
		node_idle(w, 1);
	/* seq_cst: see ura__quiescent. */
	atomic_store_explicit(&w->idle, 1, memory_order_seq_cst);
}

static inline void set_busy(struct ura__worker *w)
{
	node_idle(w, 0);
	/* seq_cst both: a quiescence checker that saw us idle must see the
	 * epoch move (see ura__quiescent). */
	atomic_fetch_add_explicit(&w->idle_epoch, 1, memory_order_seq_cst);
	atomic_store_explicit(&w->idle, 0, memory_order_seq_cst);
	ura__timers_busy(w);
}

static inline void mark_busy(struct ura__worker *w)
{
	if (atomic_load_explicit(&w->idle, memory_order_relaxed))
		set_busy(w);
}

/* What this worker posted to other nodes goes now. Every path that may
 * have posted (a turn, a source's service, a sleep that reaped
 * completions) ends here before the worker looks for more work or
 * sleeps: a completion for an actor of another node (its operation was
 * submitted here before the actor went home) sat in the outbox of a
 * worker that then slept, and nothing else would have flushed it. */
static inline void flush_outbox(struct ura__worker *w)
{
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
}

/* One pass over the sources, from the loop. */
static inline void service_sources(struct ura__worker *w)
{
	uint64_t now = 0;
#define X(s, sends)                                                        \
	if (ura__unlikely(ura__##s##_pending(w)) && ura__##s##_due(w, &now)) { \
		if (sends)                                                 \
			mark_busy(w);                                      \
		ura__##s##_service(w, &now, 0);                            \
	}
	SOURCES(X)
#undef X
	flush_outbox(w);
}

/* Idle: is there work that is not an actor? Sources that send are left
 * for the loop, which marks the worker busy first; the others are
 * serviced here at once (I/O: an idle worker polls its ring). */
static inline int sources_ready(struct ura__worker *w, uint64_t *now)
{
/* (What a service made runnable is looked for whatever it returned: a
 * multishot accept's completion leaves nothing in flight less, so the
 * epoll backend counts it as no completion, yet it schedules its actor
 * here.) */
#define X(s, sends)                                                        \
	if (ura__##s##_pending(w)) {                                       \
		if (sends) {                                               \
			if (ura__##s##_due(w, now))                        \
				return 1;                                  \
		} else {                                                   \
			ura__##s##_service(w, now, 1);                     \
			flush_outbox(w);                                   \
			if (ura__has_local(w))                             \
				return 1;                                  \
		}                                                          \
	}
	SOURCES(X)
#undef X
	return 0;
}

static inline int sources_visible(struct ura__worker *w)
{
#define X(s, sends) || ura__##s##_visible(w)
	return 0 SOURCES(X);
#undef X
}

static inline uint64_t sources_deadline(struct ura__worker *w)
{
	uint64_t d = UINT64_MAX, t;
#define X(s, sends)                                                        \
	if ((t = ura__##s##_deadline(w)) < d)                              \
		d = t;
	SOURCES(X)
#undef X
	return d;
}

/*
 * Sleeping without a backstop. An idle worker with no timer sleeps until
 * woken, so an idle system makes no wakeups at all; nothing but the
 * protocol below keeps a wake from being lost, so here is why none is.
 *
 * Every way work reaches a worker is one of: a push to a run queue or a
 * node's inject queue (core/sched.c), a batch on its node's inbox
 * (core/outbox.c), an arm or cancel on its timer stacks (time/timers.c),
 * a finished pool job or a cancel request for its I/O (io/), a signal
 * request (worker 0, io/signals.c), or the shutdown flag. Each producer
 * makes its work visible with a seq_cst atomic (push, CAS or store, or a
 * release store followed by a seq_cst fence), and only then reads the
 * target's `sleeping` flag (or the system's nsleeping / nspinning, which
 * move with seq_cst RMWs on the same path) and wakes it if it sleeps.
 * The sleeper below stores `sleeping` (seq_cst), bumps nsleeping
 * (seq_cst), issues a seq_cst fence, and only then looks at every source
 * (ura__sched_visible and each source's _visible, all seq_cst loads),
 * and at its own queues: a service it ran itself may have scheduled an
 * actor there (an I/O completion while it polled idle).
 * In the single total order of those seq_cst operations, either the
 * producer's publication comes before the sleeper's look (the look sees
 * the work and the worker does not sleep), or the sleeper's store of
 * `sleeping` comes before the producer's read of it (the producer wakes
 * it). Never neither: that is Dekker's argument, once per source.
 *
 * A wake that lands before the sleeper enters the kernel is not lost
 * either: it is an eventfd count or a MSG_RING completion already queued
 * on the ring, and the wait returns at once. wake_pending makes it one
 * wake per sleep: a waker that finds it set leaves the wake to the one
 * that set it. It is cleared before `sleeping` is set, at the start of
 * every sleep, and not only when the sleep ends: a waker that read
 * `sleeping` late (still 1 from the sleep before) could set it after that
 * clear and send its wake to a worker already awake, which took the wake
 * (an eventfd read or a MSG_RING CQE in an idle poll) and slept again with
 * wake_pending still 1, so every waker of that sleep skipped it
 * (http_supervised on two nodes hung in about one run in three; the
 * "EMFILE storm" hang on epoll was the same). Cleared first, a late
 * waker's flag is either wiped before this sleep (its wake spurious) or
 * set after the clear, and then its wake is sent after it and lands in
 * this sleep: no reap runs between the clear and the wait. The one producer that
 * skips the wake is core/sched.c's maybe_wake, when another worker spins
 * or watches. A spinner's own path to sleep passes the same fence and
 * look, so it finds the work. A watcher sleeps no longer than its watch
 * (a busy peer's next slot, a stuck inject queue, or a peer's young run
 * queue, which ura__sched_visible turns into a bounded sleep instead of
 * none) and then looks again. Either way the work itself is on its
 * pusher's own run queue, which that worker runs before it sleeps (the
 * has_local look below): a skipped wake costs parallelism for at most
 * a watch, never an actor. tests/idle checks that an idle system stays
 * asleep, and the shutdown and stress tests that nothing hangs;
 * ura_config.idle_wait_ns brings a backstop back for a kernel that
 * loses wakes.
 */
static void worker_sleep(struct ura__worker *w, uint64_t watch)
{
	ura_system *sys = w->sys;
	if (atomic_load_explicit(&sys->awaiters, memory_order_seq_cst) &&
	    ura__quiescent(sys))
		ura__await_wake(sys);
	/* relaxed: ordered before a waker's exchange by the seq_cst store of
	 * `sleeping` that it must read first (see above). */
	atomic_store_explicit(&w->wake_pending, 0, memory_order_relaxed);
	/* Unknown until the look below: relaxed, published by the seq_cst
	 * store of `sleeping` (a release) to a busy peer that reads
	 * `sleeping` (acquire) then this; before the fence, so a peer that
	 * reads a horizon of an earlier sleep also knows that our next look
	 * comes after its fence (time/timers.c, watch_due). */
	atomic_store_explicit(&w->tlook, UINT64_MAX, memory_order_relaxed);
	atomic_store_explicit(&w->sleeping, 1, memory_order_seq_cst);
	atomic_fetch_add_explicit(&sys->nsleeping, 1, memory_order_seq_cst);
	/* seq_cst fence: pairs with the fence in core/sched.c's maybe_wake
	 * (and with the seq_cst pushes of every source): see above. */
	ura__fence_seq_cst();
	/* The earliest deadline bounds the sleep: one deadline in the kernel
	 * for all timers, never a kernel timer per timer. */
	uint64_t wait = sys->idle_wait_ns;
	uint64_t due = sources_deadline(w);
	if (due != UINT64_MAX) {
		uint64_t now = ura__now_ns();
		wait = due <= now ? 0 : (due - now < wait ? due - now : wait);
	}
	/* Watching a busy peer's next slot or a stuck node's inject queue
	 * (core/sched.c): back to look at it in time. One that appeared
	 * since the spin's last look is watched from now. Counted so that
	 * the peer wakes no other watcher. relaxed: a heuristic count (see
	 * ura__schedule). */
	uint64_t now = ura__now_ns();
	if (!watch && w->watch_v < 0 && w->iwatch_n < 0)
		watch = ura__watch_begin(w, now);
	/* A peer's young run queue: looked at again once it may be ripe
	 * (core/sched.c, queue_ripe); its owner wakes nobody meanwhile. */
	uint64_t vis = ura__sched_visible(w, now);
	if (vis > 1 && (!watch || vis < watch))
		watch = vis;
	/* A busy peer's timers, ours to fire once they wait (time/timers.c):
	 * a bound on the sleep, not a watch (watchers make others skip
	 * wakes for run-queue work). */
	uint64_t tw = ura__timers_steal_wait(w, now);
	if (tw && tw < wait)
		wait = tw;
	if (watch) {
		if (watch < wait)
			wait = watch;
		atomic_fetch_add_explicit(&sys->nwatching, 1, memory_order_relaxed);
	}
	/* relaxed: see the store of UINT64_MAX above. */
	atomic_store_explicit(&w->tlook, wait > UINT64_MAX - now ? UINT64_MAX : now + wait,
			      memory_order_relaxed);
	if (wait && vis != 1 && !ura__has_local(w) && !sources_visible(w) &&
	    !atomic_load_explicit(&sys->shutdown, memory_order_seq_cst)) {
		ura__inc(&w->st.sleeps);
		ura__inc(&w->st.ring_enters);
		ura__mx_state(w, URA__MX_SLEEP, ura__now_ns()); /* metrics */
		w->poller.alarmed = 0;
		URA_PROBE2(sleep, w->id, wait);
		int rc = ura__poller_wait(&w->poller, wait);
		URA_PROBE2(wake, w->id, rc);
		if (rc < 0)
			ura__log(&sys->log, URA_LOG_ERROR, "worker %u: wait failed: %s",
				 w->id, ura_strerror(rc));
		ura__mx_state(w, URA__MX_SPIN, ura__now_ns());
		/* relaxed: only counted; a wake that set it is what ended the
		 * sleep, or is about to. */
		if (atomic_load_explicit(&w->wake_pending, memory_order_relaxed))
			ura__mx_woken(w);
		if (w->poller.alarmed)
			ura__inc(&w->st.alarm_wakes);
	}
	if (watch)
		atomic_fetch_sub_explicit(&sys->nwatching, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&sys->nsleeping, 1, memory_order_seq_cst);
	atomic_store_explicit(&w->sleeping, 0, memory_order_seq_cst);
	atomic_store_explicit(&w->wake_pending, 0, memory_order_release);
}

/* A look of the spin that took longer than this was preempted; the spin
 * then yields its CPU at each look for URA__SPIN_POLITE_NS (1 ms gave the
 * sender of fjthrput less, 100 ms no more; bench/README.md). */
#define URA__SPIN_PREEMPTED_NS (20 * URA_USEC)
#define URA__SPIN_POLITE_NS (10 * URA_MSEC)

/* A busy peer's due timers, fired here if there are any (then 1: busy,
 * and the actors they woke are ours to run, the loop picks). Busy before
 * the fires: they move quiescence counters. `spinning`: we count in
 * sys->nspinning, and stop. */
static int steal_timers(struct ura__worker *w, uint64_t now, int spinning)
{
	w->tsteal_look = now;
	if (!ura__timers_steal(w, now, 1))
		return 0;
	if (spinning)
		atomic_fetch_sub_explicit(&w->sys->nspinning, 1, memory_order_seq_cst);
	mark_busy(w);
	ura__mx_state(w, URA__MX_BUSY, now);
	ura__timers_steal(w, now, 0);
	return 1;
}

/* Idle: spin (stealing) for a while, then sleep. Returns an actor, or
 * NULL when there is work that is not an actor, or on shutdown. */
static struct ura__actor *find_work(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	struct ura__actor *a;
	/* One look before going idle: a peer's queued actor (most often one
	 * its turn just woke) is taken without the idle round trip, the
	 * seq_cst idle store, the two RMWs of the shared spinning count and
	 * the busy epoch's, which cost more than the steal itself at 2
	 * workers (bench/README.md, contention). A worker busy meanwhile only
	 * makes the quiescence check wait: conservative. */
	if (sys->nworkers > 1 && !atomic_load_explicit(&w->idle, memory_order_relaxed) &&
	    (a = ura__find_stealable(w, ura__now_ns())))
		return a;
	/* Idle from here until we hold work again, whatever emptied our
	 * queues (our own turns, or a thief). */
	set_idle(w);
	uint64_t spin = sys->spin_ns;
	for (;;) {
		atomic_fetch_add_explicit(&sys->nspinning, 1, memory_order_seq_cst);
		uint64_t now = ura__now_ns(), until = now + spin;
		ura__mx_state(w, URA__MX_SPIN, now); /* metrics */
		do {
			if ((a = ura__find_stealable(w, now)) || sources_ready(w, &now)) {
				atomic_fetch_sub_explicit(&sys->nspinning, 1, memory_order_seq_cst);
				ura__mx_state(w, URA__MX_BUSY, now);
				return a;
			}
			/* A busy peer's due timers, a few looks per grace period
			 * (each reads lines the peer writes as it arms). */
			if (now - w->tsteal_look >= sys->steal_next_ns / 4 &&
			    steal_timers(w, now, 1))
				return NULL;
			/* A spin that was preempted (a look that took far
			 * longer than a look) shares its CPU with a thread
			 * that wants it: a thread that sends from outside, a
			 * client on the same machine, another program. For a
			 * while after, the spin gives the CPU away at each
			 * look (sched_yield: ~1.1 us here when nobody else
			 * is runnable) instead of taking it for the rest of
			 * its slice: fjthrput at 2 workers on 2 CPUs ran at
			 * 0.5 of 1 worker (its sender got half a CPU), HTTP
			 * with wrk on the same CPUs gained 19% (bench/README.md,
			 * issue 14). Where no other thread runs, no spin is
			 * preempted and nothing changes. */
			uint64_t prev = now;
			if (now < w->polite_until) {
				sched_yield();
				ura__inc(&w->st.spin_yields);
			} else {
				for (int i = 0; i < 32; i++)
					ura__cpu_relax();
			}
			now = ura__now_ns();
			if (now - prev > URA__SPIN_PREEMPTED_NS)
				w->polite_until = now + URA__SPIN_POLITE_NS;
		} while (now < until &&
			 !atomic_load_explicit(&sys->shutdown, memory_order_relaxed));
		atomic_fetch_sub_explicit(&sys->nspinning, 1, memory_order_seq_cst);
		if (atomic_load_explicit(&sys->shutdown, memory_order_acquire))
			return NULL;
		/* Blocks of other workers' pools go home before we sleep. */
		if (w->pool.ret_dirty)
			ura__pool_flush(&w->pool);
		flush_outbox(w);
		worker_sleep(w, ura__watch_wait(w, ura__now_ns()));
		/* The sleep itself may have delivered I/O completions, to
		 * this node's actors or (through the outbox) another's. */
		flush_outbox(w);
		/* A watcher's timed wake is for one look at the slot it
		 * watches, not a spin: spinning there polled the busy peer's
		 * queue and slot lines while it wrote them (thread_ring at 2
		 * workers lost 11%). So is a wake by a busy peer's alarm for
		 * its deadlines (time/timers.c, watch_due): the look fires
		 * them, and a spin after it cost more than the wake
		 * (bench/ticker). Work that comes later wakes us as ever. */
		int alarmed = w->poller.alarmed;
		w->poller.alarmed = 0;
		spin = alarmed || w->watch_v >= 0 || w->iwatch_n >= 0 || w->qwatch_v >= 0 ?
			       0 : sys->spin_ns;
		/* Woken by an alarm: its timers before any other work that
		 * ended the same wait. On epoll the fire woke only us of our
		 * node (ring/epoll.c), and a turn taken first would hold them
		 * for its length while the others sleep on. */
		if (alarmed && steal_timers(w, ura__now_ns(), 0))
			return NULL;
		now = 0;
		if (ura__has_local(w) || sources_ready(w, &now)) {
			ura__mx_state(w, URA__MX_BUSY, ura__now_ns());
			return NULL;
		}
	}
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
	cpu_set_t set;
	int any = ura__node_cpuset(w->sys, w->node, &set);
	ura__poller_iowq(&w->poller, any ? &set : NULL, sizeof set, w->sys->io_wq_max);
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

	/* top -H and perf tell the workers apart: ura-w3/n1 (15 chars). */
	char name[16];
	snprintf(name, sizeof name, "ura-w%u/n%u", w->id, w->node);
	pthread_setname_np(pthread_self(), name);
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
		if (rc)
			ura__log(&sys->log, URA_LOG_DEBUG, "worker %u: pin to cpu %d: %s",
				 w->id, w->cpu, ura_strerror(rc));
	}
	/* The ring is created here, on its owner thread: SINGLE_ISSUER and
	 * DEFER_TASKRUN tie it to its creator, and its memory is first
	 * touched on the worker's node. */
	int fell_back = 0, uerr = 0;
	int rc = ura__poller_init(&w->poller, sys->want_uring, &fell_back, &uerr);
	/* Every peer's alarm fd exists (core/sched.c, ura__alarms_init):
	 * its poller watches them from its first wait. */
	if (rc == 0 && (rc = ura__alarms_watch(w)) < 0)
		ura__poller_fini(&w->poller);
	pthread_mutex_lock(&ss->lock);
	if (rc < 0 && !ss->err)
		ss->err = rc;
	if (rc == 0 && w->id == 0) {
		sys->backend = w->poller.name;
		static _Atomic int said_fallback;
		if (fell_back && !atomic_exchange(&said_fallback, 1))
			ura__log(&sys->log, URA_LOG_WARN,
				 "io_uring unavailable (%s): using epoll+eventfd",
				 ura_strerror(uerr));
		ura__log(&sys->log, URA_LOG_INFO, "%u workers, backend %s",
			 sys->nworkers, w->poller.name);
	}
	/* Idle before "ready": ura_system_new must not return while a worker
	 * that never ran still looks busy to the quiescence check. */
	set_idle(w);
	/* relaxed: read only after the start's lock and joins order it. */
	if (rc == 0)
		atomic_fetch_add_explicit(&sys->in_loop, 1, memory_order_relaxed);
	ss->ready++;
	pthread_cond_broadcast(&ss->cond);
	pthread_mutex_unlock(&ss->lock);
	if (rc < 0)
		return NULL;
	ura__io_worker_start(w);
	iowq_setup(w);
	uint64_t t = ura__now_ns(); /* metrics: uptime, busy */
	ura__st(&w->mx->since, t);
	ura__st(&w->mx->start_ns, t);

	while (!atomic_load_explicit(&sys->shutdown, memory_order_acquire)) {
		w->between_turns = 1;
		service_sources(w);
		struct ura__actor *a = ura__pick(w);
		if (!a) {
			a = find_work(w);
			if (!a)
				continue;
		}
		w->between_turns = 0;
		mark_busy(w);
		/* An actor put in the next slot between turns woke no watcher
		 * (core/sched.c, ura__schedule): the pick took it, unless the
		 * inject queue's turn came first, and then it waits for this
		 * turn as one put there by a turn would. relaxed: our slot. */
		if (ura__unlikely(atomic_load_explicit(&w->next, memory_order_relaxed) != NULL))
			ura__wake_watcher(w);
		ura__actor_turn(w, a);
		/* End of the pass: no cross-node message waits longer. */
		flush_outbox(w);
	}
	/* Nothing of an actor's may be in the kernel once destroy runs. */
	ura__io_worker_exit(w);
	/* A peer still in its loop may wake us with a MSG_RING to our ring's
	 * fd: the ring goes only once every worker is out of its loop (and
	 * so sends no more wakes), or the wake would hit a closed, or worse
	 * a reused, fd (TSan saw it at shutdown under load). acq_rel: our
	 * loop's last wake happens before a peer that sees the count drop
	 * to zero closes its ring; the loads pair with it. */
	atomic_fetch_sub_explicit(&sys->in_loop, 1, memory_order_acq_rel);
	for (unsigned spin = 0; atomic_load_explicit(&sys->in_loop, memory_order_acquire); spin++) {
		if (spin < 64) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 100 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	ura__poller_fini(&w->poller);
	return NULL;
}

int ura__workers_start(ura_system *sys)
{
#ifdef URA_DETERMINISTIC
	return ura__det_start(sys); /* one thread runs them all (det.c) */
#endif
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
