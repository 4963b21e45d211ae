/* SPDX-License-Identifier: MIT */
/*
 * Workers, run queues, stealing, sleep/wake and quiescence.
 */
#ifndef URA_SCHED_H
#define URA_SCHED_H

#include <pthread.h>

#include "actor/actor.h"
#include "io/io.h"
#include "ring/ring.h"
#include "sched/timers.h"
#include "snap/snap.h"

/* A worker's stealable run queue: a ring of actor pointers (Go's local
 * run queue, read and rewritten). The owner pushes at tail; the owner and
 * thieves take from head with a CAS, so a thief steals the oldest actor. */
#define URA__RQ_SIZE 256u

struct ura__runq {
	_Atomic uint32_t head;  /* CAS by the owner and by thieves */
	_Atomic uint32_t tail;  /* stored by the owner only (release) */
	_Atomic(struct ura__actor *) buf[URA__RQ_SIZE];
};

#define URA__EXT_SHARDS 16

/* A NUMA node: its workers are sys->workers[first .. first + count). */
struct ura__node {
	/* Actors made runnable here by threads of other nodes, or by threads
	 * that are not workers. */
	alignas(URA__CACHELINE) pthread_mutex_t inject_lock;
	struct ura__actor *inject_head, *inject_tail;
	_Atomic uint32_t inject_len;
	unsigned first, count;
	int id;                        /* the kernel's node number */
	/* Messages from other nodes' workers: a stack of batches, newest
	 * first (see numa/outbox.c). One CAS per batch pushed; drained by
	 * one of the node's workers at a time (`draining`). */
	alignas(URA__CACHELINE) _Atomic(struct ura_msg *) inbox;
	_Atomic int draining;
};

/* A worker's outbox for one other node: newest message first. */
struct ura__outbox {
	struct ura_msg *head, *tail;
	unsigned count;
};

/* Counters a worker bumps with plain stores (ura__inc) and anyone reads. */
struct ura__wstats {
	_Atomic uint64_t spawned, stopped, sent, received, unmatched, stashed,
		dead_letters, turns, steals, sleeps, wakeups, ring_enters,
		timers_armed, timers_fired, timers_cancelled,
		signals, steals_remote, cross_node, flushes, flushed,
		io_submitted, io_completed;
};

struct ura__worker {
	/* Owner only: the hot state of the scheduling loop. */
	ura_system *sys;
	unsigned id;
	unsigned node;                 /* dense node index */
	int cpu;                       /* pinned CPU, -1 if none */
	uint64_t local_dry_since;      /* local victims empty since (0: no) */
	struct ura__outbox *outbox;    /* per node; NULL with one node */
	unsigned outbox_dirty;         /* outboxes holding messages */
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
	struct ura__wsnap snap;        /* snapshot phase counters and records */

	alignas(URA__CACHELINE) struct ura__poller poller;
	int sig_watching;              /* worker 0: signalfd armed */
	struct ura__io io;             /* actor I/O (lib/io) */

	/* Timers: the wheel is the owner's; stacks take other threads'. */
	alignas(URA__CACHELINE) struct ura__timers tm;
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
	/* Snapshots (lib/snap): the current phase's parity, read every turn
	 * (relaxed); the rest of their state. */
	_Atomic uint8_t snap_ph;
	struct ura__snap *snap;
	ura_log_fn *log;
	void *log_ud;
	struct ura__worker *workers;   /* nworkers, each cache-aligned */
	const char *backend;

	/* Flags everyone reads. */
	alignas(URA__CACHELINE) _Atomic int shutdown;
	_Atomic int started;
	_Atomic int nsleeping;         /* workers in the sleep path */
	_Atomic int nspinning;         /* workers spinning for work */

	/* Sends and spawns from non-worker threads (quiescence counters). */
	/* Sharded by sending thread: one shared counter cost a contended
	 * locked add per send with 20 sender threads (bench/mailbox). */
	struct ura__ext_shard { alignas(URA__CACHELINE) _Atomic uint64_t sent; }
		ext_sent[URA__EXT_SHARDS];
	_Atomic uint64_t ext_spawned;
	_Atomic uint64_t ext_stopped;

	/* Actors scheduled by non-worker threads. */
	struct ura__node *nodes;       /* nnodes, cache-aligned */
	struct ura__arena arena;       /* the workers' pool slices */
	unsigned nnodes;
	int simulated;                 /* URA_TOPOLOGY layout, nothing bound */
	uint64_t steal_remote_ns;      /* local victims empty this long first */
	int numa_batch;                /* cross-node messages go through outboxes */
	unsigned outbox_batch;         /* flush an outbox at this many */

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

	/* Timers armed from non-worker threads. */
	uint64_t timer_slack_ns;
	_Atomic unsigned ext_timer_rr;
	_Atomic uint64_t ext_timers_armed;

	/* Signals (sched/signals.c): read by worker 0 from a signalfd. */
	pthread_mutex_t sig_lock;
	int sig_fd;                    /* -1 until a subscription */
	_Atomic int sig_req;           /* worker 0 should arm the signalfd */
	ura_ref sig_sub[65];           /* under sig_lock */

	/* Actor I/O (lib/io): per-node thread pools, io-wq cap. */
	struct ura__pool_threads *pools; /* nnodes */
	unsigned pool_threads;
	unsigned io_wq_max;

	/* Groups (actor/group.c). */
	pthread_mutex_t group_lock;
	struct ura_group *groups;
	uint64_t group_ids;
};

/* Counts a send from a thread that is not a worker (before the push). */
void ura__ext_sent_inc(ura_system *sys);
uint64_t ura__ext_sent_sum(ura_system *sys);

/* The worker running on this thread, if any (for -EDEADLK checks). */
extern _Thread_local struct ura__worker *ura__current_worker;

/* sched/worker.c */
/* Makes a newly woken actor runnable: on worker w (the caller's, which
 * runs it next) or, with w NULL, through the inject queue. */
void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* Wakes v if it is asleep (one wake per sleep); self: the waking worker,
 * NULL off the workers. True if v sleeps (and is, or was, woken). */
int ura__wake(struct ura__worker *self, struct ura__worker *v);
/* Puts an actor that used up its turn at the back of w's run queue. */
void ura__schedule_back(struct ura__worker *w, struct ura__actor *a);
int ura__workers_start(ura_system *sys);
void ura__workers_stop(ura_system *sys);
int ura__quiescent(ura_system *sys);
/* Wakes every thread in ura_system_await to look again. */
void ura__await_wake(ura_system *sys);

/* actor/actor.c */
struct ura__actor *ura__slot_get(ura_system *sys, uint32_t idx);
void ura__actor_turn(struct ura__worker *w, struct ura__actor *a);
/* The one send path: checks, copies, counts, pushes, schedules. */
int ura__send(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
	      ura_atom tag, const ura_value *vals, unsigned n);
/* Pushes a fired timer's message (already counted as sent); also I/O
 * completions. */
void ura__deliver_timer(struct ura__worker *w, ura_ref to, struct ura_msg *m);
/* The handler context's worker and actor (lib/io). */
struct ura__worker *ura__ctx_worker(ura_ctx *cx);
struct ura__actor *ura__ctx_actor(ura_ctx *cx);
/* Actor I/O bookkeeping on the actor (token holder): an operation id
 * starts or ends (its final completion was handled). */
int ura__actor_io_track(struct ura__actor *a, int64_t id);
/* sched/timers.c */
int ura__timers_init(struct ura__timers *T, uint64_t now, uint64_t slack);
uint64_t ura__timers_fini(struct ura__worker *w);
ura_timer ura__timer_arm(ura_system *sys, struct ura__worker *w, ura_ref to,
			 uint64_t delay, struct ura_msg *m);
int ura__timer_cancel(ura_system *sys, struct ura__worker *self, ura_timer h);
int ura__timer_live(ura_system *sys, ura_timer h);
/* lib/snap: holds a pending delayed send (state SNAP) so its message can
 * be copied and restamped; -ENOENT if it is no longer pending. */
int ura__timer_snap_lock(ura_system *sys, ura_timer h, struct ura_msg **m,
			 uint64_t *deadline, ura_ref *to);
void ura__timer_snap_unlock(ura_system *sys, ura_timer h);
int ura__timers_pending_work(struct ura__worker *w, uint64_t now);
void ura__timers_service(struct ura__worker *w, uint64_t now);
/* numa/outbox.c */
void ura__outbox_add(struct ura__worker *w, unsigned node, struct ura__actor *a,
		     struct ura_msg *m);
void ura__outbox_flush_all(struct ura__worker *w);
int ura__inbox_drain(struct ura__worker *w);
static inline int ura__inbox_ready(struct ura__worker *w)
{
	return atomic_load_explicit(&w->sys->nodes[w->node].inbox, memory_order_relaxed) != NULL;
}
/* sched/signals.c */
void ura__signals_service(struct ura__worker *w);
void ura__signals_fini(ura_system *sys);
extern const int ura__signals_handled[6];
#define URA__EV_SIGNAL 0  /* poller user event bit: the signalfd */
/* actor/group.c */
long ura__group_send(ura_group *g, struct ura__worker *w, ura_ref from,
		     ura_atom tag, const ura_value *vals, unsigned n);
void ura__groups_destroy(ura_system *sys);
/* Frees what a slot still holds at system destroy; returns the number of
 * messages that were never handled. */
uint64_t ura__actor_reclaim(ura_system *sys, struct ura__actor *a);
/* actor/actor.c, for lib/snap/restore.c: an actor made from a snapshot
 * record (zeroed state, no init), returned with its token held; then
 * either done (receive timeout re-armed if rt, token given up) or
 * aborted (stopped, destroy callback if it was filled in). */
struct ura__actor *ura__actor_restore_new(ura_system *sys, const ura_class *cls,
					  unsigned node, ura_ref *out);
struct ura__actor_x *ura__actor_x(struct ura__actor *a);
/* Appends m to the actor's stash (oldest first); 0 or -ENOMEM (no side
 * record). Token holder. */
int ura__actor_stash_append(struct ura__actor *a, struct ura_msg *m);
void ura__actor_restore_done(ura_system *sys, struct ura__actor *a, int rt);
void ura__actor_restore_abort(ura_system *sys, struct ura__actor *a, int call_destroy);
/* The stamp of a message sent by a thread that is not running a turn:
 * the system's phase (relaxed: any phase is consistent for an input from
 * outside; the counting that follows uses the stamp, whatever it is). */
static inline uint8_t ura__snap_stamp(ura_system *sys)
{
	return (uint8_t)(URA__MF_SNAPD |
			 (atomic_load_explicit(&sys->snap_ph, memory_order_relaxed) ? URA__MF_PH : 0));
}
/* snap/snap.c: a child's phase (its spawner's), after its gen is out. */
void ura__snap_spawned(ura_system *sys, struct ura__worker *w, struct ura__actor *a);

#endif
