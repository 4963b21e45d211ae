/* SPDX-License-Identifier: MIT */
/*
 * The deterministic build (meson -Ddeterministic=true; nothing of this
 * file is compiled otherwise). One thread, the scheduler, runs every
 * worker: at each step it lists what could happen next -- a turn on a
 * worker, a steal by an idle worker, a service of one of a worker's
 * sources (runtime/sources.h: the cross-node inbox, timers, signals, I/O
 * completions) -- and a generator seeded by the system's seed picks one.
 * How many messages the turn may take (its batch) is picked too. Time is
 * virtual (util/util.h): the clock moves only when nothing can run, and
 * then straight to the earliest deadline, so timers and delayed sends
 * fire at seeded points of the run, never by wall time. I/O completions
 * are delivered only when the scheduler picks a worker's I/O source (or
 * when nothing else can run). The steps are those of Pony's systematic
 * testing: the interleavings that the real workers produce by racing are
 * produced here by the seed, one at a time, and a seed that fails fails
 * again.
 *
 * The trace: every turn mixes (worker, actor slot and generation, tag of
 * the first message) into a hash, logged at info level by
 * ura_system_destroy ("deterministic: seed S: N turns, trace H"). Equal
 * seeds give equal traces when the program's threads outside the runtime
 * do the same, at the same points: the scheduler holds back while such a
 * thread may still be setting up, and runs while one waits in
 * ura_system_await (or after HOLD_NS of wall time without one, so a
 * program that waits by other means still runs, only not replayably).
 * A program that prepares a paused system and then awaits it replays
 * exactly. What the kernel decides is not replayed: which I/O has
 * completed when the scheduler looks, and I/O deadlines, which stay in
 * wall time on both backends (io_uring's are the kernel's link timeouts;
 * the epoll emulation's read ura__wall_ns to match).
 *
 * Hooks elsewhere: ura__workers_start (worker.c) calls ura__det_start;
 * system.c calls init and fini and reads the await timeout by wall time;
 * util/util.h makes ura__now_ns the virtual clock.
 */
#ifdef URA_DETERMINISTIC

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "core/quiesce.h"
#include "core/sched.h"
#include "msg/msg.h"
#include "runtime/runtime.h"
#include "runtime/sources.h"
#include "util/env.h"

/* An outside thread has this long to finish what it does before the
 * scheduler runs without an awaiter (wall time). */
#define HOLD_NS (20 * URA_MSEC)
/* The scheduler's nap when nothing can run and no I/O is in flight. */
#define NAP_NS (200 * URA_USEC)
/* Each system's virtual clock starts at a multiple of this, so the timer
 * wheel's tick and level boundaries fall alike in every run. */
#define EPOCH_NS ((uint64_t)1 << 40)

/* What a step may do on a worker: one of its sources, a turn of an actor
 * from its own queues, or a steal. */
enum {
#define X(s, sends) K_##s,
	SOURCES(X)
#undef X
	K_TURN,
	K_STEAL,
	K_N
};

struct choice {
	uint32_t w, kind;
};

struct ura__det {
	uint64_t seed, rng, hash, turns;
	unsigned batch;            /* the configured batch: a turn's most */
	int open;                  /* running without an awaiter */
	uint64_t held_since;       /* wall time work was first held back */
	struct choice *ch;         /* nworkers * K_N */
	/* The start's handshake with ura__det_start. */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int ready, err;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* splitmix64: small, and every seed gives its own stream. */
static uint64_t rnd(struct ura__det *d)
{
	d->rng += 0x9e3779b97f4a7c15ull;
	return mix64(d->rng);
}

static uint64_t rnd_below(struct ura__det *d, uint64_t n)
{
	return n ? rnd(d) % n : 0;
}

int ura__det_init(ura_system *sys, const ura_config *cfg)
{
	unsigned u = 1;
	uint64_t seed = cfg->reserved_[0];
	if (!seed) {
		int rc = ura__env_uint(&sys->log, "URA_SEED", 0, UINT32_MAX, &u);
		if (rc < 0)
			return rc;
		seed = u;
	}
	struct ura__det *d = ura__calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->ch = ura__calloc((size_t)sys->nworkers * K_N, sizeof *d->ch);
	if (!d->ch) {
		free(d);
		return -ENOMEM;
	}
	d->seed = seed;
	d->rng = seed;
	d->hash = mix64(seed);
	d->batch = sys->batch;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	sys->det = d;
	/* The clock stands still while anything can run, so a queue's age
	 * would never reach steal_queue_ns and an idle worker would never
	 * take a busy peer's queue. Here the seed chooses when a steal
	 * happens (K_STEAL): that choice is the wait. 0: ripe when queued
	 * (core/sched.c, queue_ripe). */
	sys->steal_queue_ns = 0;
	/* Stealing's victim order comes from each worker's generator. */
	for (unsigned i = 0; i < sys->nworkers; i++)
		sys->workers[i].rng = (unsigned)mix64(seed + i + 1);
	/* A fresh epoch of the clock (monotonic: never back). relaxed: the
	 * clock carries no other data (util/util.h). */
	uint64_t v = atomic_load_explicit(&ura__vclock, memory_order_relaxed);
	uint64_t e;
	do
		e = (v / EPOCH_NS + 1) * EPOCH_NS;
	while (!atomic_compare_exchange_weak_explicit(&ura__vclock, &v, e, memory_order_relaxed,
						      memory_order_relaxed));
	ura__log(&sys->log, URA_LOG_DEBUG, "deterministic: seed %llu", (unsigned long long)seed);
	return 0;
}

void ura__det_fini(ura_system *sys)
{
	struct ura__det *d = sys->det;
	if (!d)
		return;
	ura__log(&sys->log, URA_LOG_INFO, "deterministic: seed %llu: %llu turns, trace %016llx",
		 (unsigned long long)d->seed, (unsigned long long)d->turns,
		 (unsigned long long)d->hash);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d->ch);
	free(d);
	sys->det = NULL;
}

static void clock_to(uint64_t t)
{
	/* Only this thread moves it forward; another system's scheduler may
	 * too, hence the CAS (relaxed: see util/util.h). */
	uint64_t v = atomic_load_explicit(&ura__vclock, memory_order_relaxed);
	while (v < t && !atomic_compare_exchange_weak_explicit(&ura__vclock, &v, t,
							       memory_order_relaxed,
							       memory_order_relaxed))
		;
}

static inline void set_busy(struct ura__worker *w)
{
	/* seq_cst both, as in worker.c: a quiescence checker that saw the
	 * worker idle must see the epoch move. */
	atomic_fetch_add_explicit(&w->idle_epoch, 1, memory_order_seq_cst);
	atomic_store_explicit(&w->idle, 0, memory_order_seq_cst);
}

static inline void set_idle(struct ura__worker *w)
{
	/* seq_cst: pairs with ura__quiescent's loads. */
	atomic_store_explicit(&w->idle, 1, memory_order_seq_cst);
}

static int stealable_from_other(ura_system *sys, struct ura__worker *w)
{
	for (unsigned i = 0; i < sys->nworkers; i++)
		if (&sys->workers[i] != w && ura__rq_len(&sys->workers[i].rq))
			return 1;
	return 0;
}

/* What could happen now. Returns the number of choices; *work those that
 * are not an I/O poll (which is a choice only beside other work). */
static unsigned collect(ura_system *sys, struct ura__det *d, unsigned *work)
{
	unsigned n = 0, io = 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		uint64_t now = 0;
		ura__current_worker = w; /* a source's test may read it */
#define X(s, sends)                                                        \
		if (ura__##s##_pending(w) && ura__##s##_due(w, &now)) {    \
			d->ch[n++] = (struct choice){ .w = i, .kind = K_##s }; \
			io += K_##s == K_io;                               \
		}
		SOURCES(X)
#undef X
		if (ura__has_local(w) ||
		    atomic_load_explicit(&sys->nodes[w->node].inject_len, memory_order_relaxed))
			d->ch[n++] = (struct choice){ .w = i, .kind = K_TURN };
		else if (sys->nworkers > 1 && stealable_from_other(sys, w))
			d->ch[n++] = (struct choice){ .w = i, .kind = K_STEAL };
	}
	*work = n - io;
	return n;
}

static void trace_turn(struct ura__det *d, struct ura__worker *w, struct ura__actor *a)
{
	/* The token is ours: the first message is stable. acquire: pairs
	 * with the push's release of ->next, as ura__mb_pop. */
	struct ura_msg *m = atomic_load_explicit(&a->mb.tail->next, memory_order_acquire);
	uint64_t who = (uint64_t)(a->idx & URA__REF_INDEX_MASK) |
		       (uint64_t)ura__own_gen(a) << 32;
	d->hash = mix64(d->hash ^ w->id);
	d->hash = mix64(d->hash ^ who);
	d->hash = mix64(d->hash ^ (m ? (uint64_t)m->tag : 0));
	d->turns++;
}

static void step(ura_system *sys, struct ura__det *d, struct choice c)
{
	struct ura__worker *w = &sys->workers[c.w];
	struct ura__actor *a = NULL;
	uint64_t now = 0;
	ura__current_worker = w;
	set_busy(w);
	switch (c.kind) {
#define X(s, sends)                                                        \
	case K_##s:                                                        \
		ura__##s##_service(w, &now, K_##s == K_io);                \
		break;
		SOURCES(X)
#undef X
	case K_TURN:
		a = ura__pick(w);
		break;
	case K_STEAL:
		a = ura__find_stealable(w, ura__now_ns());
		break;
	}
	if (a) {
		/* Half the turns take one message, the rest up to the
		 * configured batch: more interleavings of the messages of
		 * several senders. Only this thread runs turns, so the shared
		 * field is ours to set. */
		sys->batch = (rnd(d) & 1) ? 1 : 1 + (unsigned)rnd_below(d, d->batch);
		trace_turn(d, w, a);
		ura__actor_turn(w, a);
	}
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	set_idle(w);
}

/* Nothing can run: polls I/O, wakes awaiters, moves the clock, or naps.
 * Returns 1 when it found or made work. */
static int idle(ura_system *sys, struct ura__det *d)
{
	uint64_t now = 0, due = UINT64_MAX;
	struct ura__worker *iow = NULL;
	int made = 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		ura__current_worker = w;
		if (w->pool.ret_dirty)
			ura__pool_flush(&w->pool);
		if (ura__io_pending(w)) {
			ura__io_service(w, &now, 1);
			made |= ura__has_local(w);
			if (!iow && ura__poller_io_active(&w->poller))
				iow = w;
		}
#define X(s, sends)                                                        \
		{                                                          \
			uint64_t t = ura__##s##_deadline(w);               \
			if (t < due)                                       \
				due = t;                                   \
		}
		SOURCES(X)
#undef X
	}
	if (made)
		return 1;
	/* seq_cst: pairs with the increment in ura_system_await_for. */
	if (atomic_load_explicit(&sys->awaiters, memory_order_seq_cst) && ura__quiescent(sys))
		ura__await_wake(sys);
	if (iow) {
		/* Real I/O in flight: give the kernel a little wall time
		 * before the clock jumps past what it would have done. */
		ura__current_worker = iow;
		int rc = ura__poller_wait(&iow->poller, URA_MSEC);
		if (rc < 0)
			ura__log(&sys->log, URA_LOG_ERROR, "deterministic: wait failed: %s",
				 ura_strerror(rc));
		if (ura__has_local(iow))
			return 1;
		/* The gate stays open: what comes next is the kernel's,
		 * not an outside thread's still setting up. */
		if (due == UINT64_MAX)
			return 0;
	}
	if (due != UINT64_MAX) {
		clock_to(due);
		return 1;
	}
	/* Truly idle: the next work comes from outside, replayably only
	 * while an awaiter holds the gate open. */
	d->open = 0;
	d->held_since = 0;
	/* In worker 0's poller, where signals are watched (io/signals.c):
	 * the nap notices one. */
	struct ura__worker *w0 = &sys->workers[0];
	ura__current_worker = w0;
	int rc = ura__poller_wait(&w0->poller, NAP_NS);
	if (rc < 0)
		ura__log(&sys->log, URA_LOG_ERROR, "deterministic: wait failed: %s",
			 ura_strerror(rc));
	return 0;
}

/* May the scheduler run now? See the file's comment. */
static int gate(ura_system *sys, struct ura__det *d)
{
	if (d->open)
		return 1;
	/* seq_cst: pairs with the increment in ura_system_await_for. */
	if (atomic_load_explicit(&sys->awaiters, memory_order_seq_cst))
		return d->open = 1;
	uint64_t t = ura__wall_ns();
	if (!d->held_since)
		d->held_since = t;
	if (t - d->held_since >= HOLD_NS)
		return d->open = 1;
	struct timespec ts = { 0, NAP_NS };
	nanosleep(&ts, NULL);
	return 0;
}

static void *det_main(void *arg)
{
	ura_system *sys = arg;
	struct ura__det *d = sys->det;
	/* As worker_main: signals ura delivers as messages are never taken
	 * by the runtime's threads. */
	sigset_t sigs;
	sigemptyset(&sigs);
	for (size_t i = 0; i < URA__ARRAY_LEN(ura__signals_handled); i++)
		sigaddset(&sigs, ura__signals_handled[i]);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	pthread_setname_np(pthread_self(), "ura-det");

	/* Every ring is made here: this thread is each one's single issuer. */
	int rc = 0;
	for (unsigned i = 0; i < sys->nworkers && rc == 0; i++) {
		struct ura__worker *w = &sys->workers[i];
		int fell_back = 0, uerr = 0;
		rc = ura__poller_init(&w->poller, sys->want_uring, &fell_back, &uerr);
		if (rc == 0 && i == 0) {
			sys->backend = w->poller.name;
			static _Atomic int said_fallback; /* as worker_main */
			if (fell_back && !atomic_exchange(&said_fallback, 1))
				ura__log(&sys->log, URA_LOG_WARN,
					 "io_uring unavailable (%s): using epoll+eventfd",
					 ura_strerror(uerr));
			ura__log(&sys->log, URA_LOG_INFO,
				 "%u workers on one deterministic thread, backend %s, seed %llu",
				 sys->nworkers, w->poller.name, (unsigned long long)d->seed);
		}
		/* Idle before "ready", as worker_main. */
		set_idle(w);
	}
	pthread_mutex_lock(&d->lock);
	d->err = rc;
	d->ready = 1;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	if (rc < 0)
		return NULL;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		ura__current_worker = &sys->workers[i];
		ura__io_worker_start(&sys->workers[i]);
	}

	while (!atomic_load_explicit(&sys->shutdown, memory_order_acquire)) {
		unsigned work;
		unsigned n = collect(sys, d, &work);
		if (!work) {
			/* The clock moves only with the gate open. */
			uint64_t due = UINT64_MAX;
			for (unsigned i = 0; i < sys->nworkers; i++) {
#define X(s, sends)                                                        \
				{                                                  \
					uint64_t t = ura__##s##_deadline(&sys->workers[i]); \
					if (t < due)                               \
						due = t;                           \
				}
				SOURCES(X)
#undef X
			}
			if (due == UINT64_MAX || gate(sys, d))
				idle(sys, d);
			continue;
		}
		if (!gate(sys, d))
			continue;
		step(sys, d, d->ch[rnd_below(d, n)]);
	}
	sys->batch = d->batch;
	/* As worker_main: nothing of an actor's may be in the kernel once
	 * destroy runs; with one thread, no peer can wake a closed ring. */
	for (unsigned i = 0; i < sys->nworkers; i++) {
		ura__current_worker = &sys->workers[i];
		ura__io_worker_exit(&sys->workers[i]);
	}
	for (unsigned i = 0; i < sys->nworkers; i++)
		ura__poller_fini(&sys->workers[i].poller);
	ura__current_worker = NULL;
	return NULL;
}

int ura__det_start(ura_system *sys)
{
	struct ura__det *d = sys->det;
	struct ura__worker *w0 = &sys->workers[0];
	int rc = pthread_create(&w0->thread, NULL, det_main, sys);
	if (rc)
		return -rc;
	pthread_mutex_lock(&d->lock);
	while (!d->ready)
		pthread_cond_wait(&d->cond, &d->lock);
	rc = d->err;
	pthread_mutex_unlock(&d->lock);
	if (rc < 0) {
		pthread_join(w0->thread, NULL);
		return rc;
	}
	/* ura__workers_stop joins it as worker 0's thread. */
	w0->started = 1;
	atomic_store_explicit(&sys->started, 1, memory_order_release);
	return 0;
}

#else
/* ISO C wants a translation unit to declare something. */
typedef int ura__det_unused;
#endif
