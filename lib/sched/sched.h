/* SPDX-License-Identifier: MIT */
/*
 * Workers, run queues, stealing, sleep/wake and quiescence.
 */
#ifndef URA_SCHED_H
#define URA_SCHED_H

#include <pthread.h>

#include "actor/actor.h"
#include "ring/ring.h"

/* A worker's stealable run queue: a ring of actor pointers (Go's local
 * run queue, read and rewritten). The owner pushes at tail; the owner and
 * thieves take from head with a CAS, so a thief steals the oldest actor. */
#define URA__RQ_SIZE 256u

struct ura__runq {
	_Atomic uint32_t head;  /* CAS by the owner and by thieves */
	_Atomic uint32_t tail;  /* stored by the owner only (release) */
	_Atomic(struct ura__actor *) buf[URA__RQ_SIZE];
};

/* Counters a worker bumps with plain stores (ura__inc) and anyone reads. */
struct ura__wstats {
	_Atomic uint64_t spawned, stopped, sent, received, unmatched, stashed,
		dead_letters, turns, steals, sleeps, wakeups, ring_enters;
};

struct ura__worker {
	/* Owner only: the hot state of the scheduling loop. */
	ura_system *sys;
	unsigned id;
	int cpu;                       /* pinned CPU, -1 if none */
	struct ura__actor *next;       /* LIFO slot: runs next, never stolen */
	unsigned next_streak;          /* next-slot runs in a row */
	unsigned tick;                 /* turns, for the inject-queue check */
	uint32_t rng;
	struct ura__actor *ovf_head, *ovf_tail; /* run-queue overflow */
	struct ura__actor *free_slots; /* stopped actors' slots, reusable */
	uint32_t idx_next, idx_end;    /* fresh slot indices reserved */
	struct ura__pool pool;         /* message and record blocks */
	pthread_t thread;
	int started;

	/* Read by thieves. */
	alignas(URA__CACHELINE) struct ura__runq rq;

	/* Sleep/wake and quiescence: written by the owner, read by wakers
	 * and by whoever checks for quiescence. */
	alignas(URA__CACHELINE) _Atomic int sleeping;  /* in or near poller_wait */
	_Atomic int wake_pending;      /* a wake was sent and not consumed */
	_Atomic int idle;              /* looking for work, no turn running */
	_Atomic uint64_t idle_epoch;   /* bumped on every idle -> busy */
	struct ura__wstats st;         /* also the quiescence counters */

	alignas(URA__CACHELINE) struct ura__poller poller;
};

struct ura_system {
	/* Read-mostly configuration. */
	unsigned nworkers;
	unsigned batch;
	uint64_t idle_wait_ns;
	uint64_t spin_ns;
	int pin;
	int want_uring;
	int trace_unmatched;
	int log_level;
	ura_log_fn *log;
	void *log_ud;
	int *cpus;                     /* nworkers entries */
	struct ura__worker *workers;   /* nworkers, each cache-aligned */
	const char *backend;

	/* Flags everyone reads. */
	alignas(URA__CACHELINE) _Atomic int shutdown;
	_Atomic int started;
	_Atomic int nsleeping;         /* workers in the sleep path */
	_Atomic int nspinning;         /* workers spinning for work */

	/* Sends and spawns from non-worker threads (quiescence counters). */
	alignas(URA__CACHELINE) _Atomic uint64_t ext_sent;
	_Atomic uint64_t ext_spawned;
	_Atomic uint64_t ext_stopped;

	/* Actors scheduled by non-worker threads. */
	alignas(URA__CACHELINE) pthread_mutex_t inject_lock;
	struct ura__actor *inject_head, *inject_tail;
	_Atomic uint32_t inject_len;

	/* The slot table. */
	alignas(URA__CACHELINE) pthread_mutex_t slot_lock;
	_Atomic(struct ura__actor *) *chunks;  /* URA__MAX_CHUNKS pointers */
	_Atomic uint32_t idx_hwm;      /* slot indices handed out so far */
	struct ura__actor *ext_free;   /* under slot_lock */

	/* Quiescence waiters. */
	alignas(URA__CACHELINE) pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	_Atomic int awaiters;
	uint64_t q_gen;                /* under q_lock */
	void *start_sync;              /* during ura__workers_start */
};

/* The worker running on this thread, if any (for -EDEADLK checks). */
extern _Thread_local struct ura__worker *ura__current_worker;

/* sched/worker.c */
/* Makes a newly woken actor runnable: on worker w (the caller's, which
 * runs it next) or, with w NULL, through the inject queue. */
void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* Puts an actor that used up its turn at the back of w's run queue. */
void ura__schedule_back(struct ura__worker *w, struct ura__actor *a);
int ura__workers_start(ura_system *sys);
void ura__workers_stop(ura_system *sys);
int ura__quiescent(ura_system *sys);

/* actor/actor.c */
struct ura__actor *ura__slot_get(ura_system *sys, uint32_t idx);
void ura__actor_turn(struct ura__worker *w, struct ura__actor *a);
/* Frees what a slot still holds at system destroy; returns the number of
 * messages that were never handled. */
uint64_t ura__actor_reclaim(ura_system *sys, struct ura__actor *a);

#endif
