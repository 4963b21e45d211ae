/* SPDX-License-Identifier: MIT */
/*
 * The runtime's data: the system, its NUMA nodes and workers, and the
 * handler context. Every layer above core reads these; what a layer above
 * keeps per system or per worker hangs off them as a pointer to a type
 * that layer defines (forward-declared here, never included), so core
 * knows nothing of timers, I/O or snapshots but where their state is.
 */
#ifndef URA_CORE_H
#define URA_CORE_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "core/phase.h"
#include "core/slot.h"
#include "msg/msg.h"
#include "ring/ring.h"

/* State of the layers above, per worker or per system (each defined and
 * owned by its own folder). */
struct ura__timers;      /* time/timers.h: a worker's timer table and wheel */
struct ura__timesys;     /* time/timers.h: arms from outside the workers */
struct ura__io;          /* io/io.h: a worker's operations */
struct ura__pool_threads; /* io/pool.h: a node's offload threads */
struct ura__sigs;        /* io/signals.h: signal subscriptions */
struct ura__groups;      /* actor/group.h: the system's groups */
struct ura__names;       /* actor/registry.c: the name registry */
struct ura__snap;        /* snap/snap.h: snapshots */
struct ura__wrec;        /* snap/snap.h: a worker's snapshot records */
struct ura__bp;          /* core/bound.h: a bounded mailbox's record */
struct ura__fibsys;      /* actor/fiber.h: stacks of context-switching actors */
struct ura__wmx;         /* core/metrics.h: a worker's metrics */
struct ura__mx;          /* core/metrics.h: the system's metrics */

/* A worker's stealable run queue: a ring of actor pointers (Go's local
 * run queue, read and rewritten). The owner pushes at tail; the owner and
 * thieves take from head with a CAS, so a thief steals the oldest actor. */
#define URA__RQ_SIZE 256u

struct ura__runq {
	_Atomic uint32_t head;  /* CAS by the owner and by thieves */
	_Atomic uint32_t tail;  /* stored by the owner only (release) */
	_Atomic(struct ura__actor *) buf[URA__RQ_SIZE];
};

/* A NUMA node: its workers are sys->workers[first .. first + count). */
struct ura__node {
	/* Actors made runnable here by threads of other nodes, or by threads
	 * that are not workers. */
	alignas(URA__CACHELINE) pthread_mutex_t inject_lock;
	struct ura__actor *inject_head, *inject_tail;
	_Atomic uint32_t inject_len;
	/* Pops so far: a worker of another node that sees the queue hold
	 * work while this count stands still for steal_remote_ns takes it
	 * (core/sched.c, steal_inject). Written under inject_lock; read
	 * without it, relaxed (a look; the pop decides). */
	_Atomic uint32_t inject_pops;
	/* inject_pops when a remote watcher was last woken for this queue:
	 * once per pop (an exchange by the injector, relaxed: a heuristic). */
	_Atomic uint32_t remote_woke;
	unsigned first, count;
	int id;                        /* the kernel's node number */
	/* Messages from other nodes' workers: a stack of batches, newest
	 * first (see core/outbox.c). One CAS per batch pushed; drained by
	 * one of the node's workers at a time (`draining`). */
	alignas(URA__CACHELINE) _Atomic(struct ura_msg *) inbox;
	_Atomic int draining;
	/* Workers of this node that are idle (spinning for work, or
	 * asleep): a sender of another node hands its outbox over at once
	 * while all of them are (core/outbox.c). Its own line: it moves only
	 * when a worker goes idle or busy (and only with two nodes or more),
	 * and senders read it on every cross-node message. */
	alignas(URA__CACHELINE) _Atomic unsigned nidle;
	/* Batches of free slots that its workers had no room for (core/
	 * slots.c): a worker that stops more actors than it spawns gives
	 * them here, one that spawns more takes them. Under depot_lock;
	 * depot_n is also read without it (relaxed: a look, the lock
	 * decides). */
	alignas(URA__CACHELINE) pthread_mutex_t depot_lock;
	struct ura__slot_batch *depot;
	_Atomic uint32_t depot_n;
	uint32_t depot_cap;
};

/* A chain of free slots (free_link) and its length. */
struct ura__slot_batch {
	struct ura__actor *head;
	uint32_t n;
};

/* A worker's outbox for one other node: newest message first. */
struct ura__outbox {
	struct ura_msg *head, *tail;
	unsigned count;
	unsigned eager;        /* handed over at once in the turn ... */
	uint64_t eager_turn;   /* ... numbered so (the worker's st.turns) */
};

/* Counters a worker bumps with plain stores (ura__inc) and anyone reads. */
struct ura__wstats {
	_Atomic uint64_t spawned, stopped, sent, received, unmatched, stashed,
		dead_letters, turns, steals, sleeps, wakeups, ring_enters,
		timers_armed, timers_fired, timers_cancelled,
		signals, steals_remote, cross_node, flushes, flushed,
		io_submitted, io_completed,
		wakeups_ring,             /* of wakeups: by IORING_OP_MSG_RING */
		fiber_switches,           /* actor/fiber.c */
		timers_stolen,            /* time/timers.c, ura__timers_steal */
		spin_yields,              /* runtime/worker.c, find_work */
		alarm_sets,               /* core/sched.c, ura__alarm_set */
		alarm_wakes;              /* runtime/worker.c, worker_sleep */
};

struct ura__worker {
	/* Owner only: the hot state of the scheduling loop. */
	ura_system *sys;
	unsigned id;
	unsigned node;                 /* dense node index */
	int cpu;                       /* pinned CPU, -1 if none */
	uint64_t local_dry_since;      /* local victims empty since (0: no) */
	/* Whether another node's run queue is worth taking from before its
	 * actors have waited (core/sched.c, remote_measure): how long the
	 * queue must have waited (0: any queued actor), and the clock and
	 * turn count at the last take from one, 0 once measured. */
	uint64_t remote_grace;
	uint64_t rsteal_since, rsteal_turns;
	/* While short: when a take may probe whether the turns got long,
	 * and the gap to the probe after (doubling while they stay short). */
	uint64_t rprobe_at, rprobe_gap;
	struct ura__outbox *outbox;    /* per node; NULL with one node */
	unsigned outbox_dirty;         /* outboxes holding messages */
	unsigned next_streak;          /* next-slot runs in a row */
	/* The running turn is a stop's: the actors its signals wake run
	 * right after it here, and wake no peer to watch them (core/
	 * sched.c, ura__schedule). */
	uint8_t turn_ends;
	/* The worker loop is between turns (runtime/worker.c): an actor put
	 * in the next slot now runs next, and wakes no watcher. */
	uint8_t between_turns;
	/* A peer's next slot this worker watches (core/sched.c, steal_next):
	 * the peer, its turn count when first seen, since when, and how
	 * long the watcher sleeps between looks. */
	int watch_v;                   /* -1: none */
	uint64_t watch_turns, watch_since, watch_wait;
	uint64_t watch_look;           /* when it last read the peers' slots */
	uint64_t tsteal_look;          /* ... and their timers (time/timers.c) */
	/* The busy peer whose timers a sleep is bounded for, its turn count
	 * then, and how far apart such wakes are while it keeps turning
	 * (ura__timers_steal_wait). */
	int twatch_v;
	uint64_t twatch_turns, twatch_back;
	uint64_t watch_woke;           /* idle_epoch of the last watch wake sent */
	uint32_t watch_woke_taken;     /* and next_taken then */
	/* Its alarm (ring/ring.h; -1 without one: core/sched.c) and when it
	 * is set to fire (0: disarmed; a moment past: it fired). */
	int alarm_fd;
	uint64_t alarm_at;
	/* Another node's inject queue this worker watches (steal_inject):
	 * the node (-1: none), its pop count when first seen, since when. */
	int iwatch_n;
	uint32_t iwatch_pops;
	uint64_t iwatch_since;
	/* A peer's run queue this worker watches (core/sched.c,
	 * queue_ripe): the peer (-1: none), its tail when the watch began,
	 * since when, for how long. Its actors are taken only once those
	 * queued then have waited steal_queue_ns (remote_grace for a peer
	 * on another node). */
	int qwatch_v;
	uint32_t qwatch_tail;
	uint64_t qwatch_since, qwatch_wait;
	/* Until when the spin gives its CPU away at each look (runtime/
	 * worker.c, find_work): set when a spin found it had been preempted. */
	uint64_t polite_until;
	unsigned tick;                 /* turns, for the inject-queue check */
	uint32_t rng;
	struct ura__actor *ovf_head, *ovf_tail; /* run-queue overflow */
	/* Stopped actors' slots, reusable: a list of free_n, and one full
	 * batch more (spare_n); beyond that, batches go to the node's depot
	 * (core/slots.c). */
	struct ura__actor *free_slots, *free_spare;
	uint32_t free_n, spare_n;
	uint32_t idx_next, idx_end;    /* fresh slot indices reserved */
	struct ura__pool pool;         /* message and record blocks */
	struct ura__timers *tm;        /* time/ */
	struct ura__io *io;            /* io/ */
	struct ura__wrec *rec;         /* snap/ */
	/* A send of the running turn's actor met a full URA_FULL_MUTE (or
	 * REFUSE_MUTE) mailbox (core/bound.h): the receiver and its
	 * generation, and the sender's ref (the turn mutes only its own
	 * actor). */
	struct ura__actor *mute_on;
	uint32_t mute_gen;
	uint64_t mute_from;
	struct ura__wmx *mx;           /* core/metrics.h */
	pthread_t thread;
	int started;

	/* Read by thieves. The next slot runs next on this worker (where
	 * the message it got is still in cache); the owner fills it only
	 * when empty (release) and empties it with an exchange, and a thief
	 * may take it with a CAS (acquire) once the owner has been in one
	 * turn for steal_next_ns: a woken actor must not wait for its
	 * waker's long handler while a worker idles (core/sched.c). */
	alignas(URA__CACHELINE) _Atomic(struct ura__actor *) next;
	/* Bumped by a thief that took the slot (on the line its CAS just
	 * took): the owner may wake a watcher again in the same busy period
	 * (ura__wake_watcher). */
	_Atomic uint32_t next_taken;
	/* Its own line: the owner writes the slot on every wake, and a
	 * spinning thief reads the queue's head and tail in a loop. */
	alignas(URA__CACHELINE) struct ura__runq rq;

	/* Sleep/wake and quiescence: written by the owner, read by wakers
	 * and by whoever checks for quiescence. */
	alignas(URA__CACHELINE) _Atomic int sleeping;  /* in or near poller_wait */
	_Atomic int wake_pending;      /* a wake was sent and not consumed */
	/* While `sleeping`: when this sleep ends at the latest, after which
	 * the worker reads the busy peers' deadlines again; UINT64_MAX while
	 * unknown or unbounded (time/timers.c, watch_due). */
	_Atomic uint64_t tlook;
	_Atomic int idle;              /* looking for work, no turn running */
	_Atomic uint64_t idle_epoch;   /* bumped on every idle -> busy */
	struct ura__wstats st;         /* also the quiescence counters */
	struct ura__wphase ph;         /* snapshot phase counters */

	alignas(URA__CACHELINE) struct ura__poller poller;
};

/* What core calls in the layers above, on branches that are rare (the
 * snapshot machinery, core/phase.h): set by those layers at init, so core
 * depends on none of them. */
struct ura__hooks {
	/* A message whose parity differs from its actor's, or a poke: counts
	 * it (with *same, the turn's count so far); true when it was a poke,
	 * consumed. Token holder. */
	int (*phase_msg)(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m,
			 unsigned *same);
	/* a (token held) is of another phase than the system: capture it. */
	void (*capture)(struct ura__worker *w, struct ura__actor *a);
};

/* Message pools of threads that are not workers (core/send.c): each a
 * slice of the arena after the workers' (msg/msg.h), claimed by a thread
 * on its first send and given back when it exits; workers return its
 * blocks in batches, as between workers. */
#define URA__EXT_POOLS 128
struct ura__extpool {
	alignas(URA__CACHELINE) struct ura__pool pool;
	_Atomic int taken;
	/* What the thread holding this pool sent, by phase parity: written
	 * by that thread alone, so a send counts with a plain store, not a
	 * locked add (core/quiesce.c says why that is enough). A thread
	 * that takes the pool next goes on from the last count. */
	_Atomic uint64_t sent[2];
};

/* Sends from threads that are not workers and hold no extpool (every
 * pool taken, or no arena), the snapshot thread's and restore's, counted
 * for quiescence and by phase (lib/snap): one counter, sharded by sending
 * thread, since one shared counter cost a contended locked add per send
 * with 20 sender threads (bench/mailbox). */
#define URA__EXT_SHARDS 16
struct ura__ext_shard {
	alignas(URA__CACHELINE) _Atomic uint64_t msgs[2]; /* messages, by parity */
	_Atomic uint64_t other;   /* other work counted as sent (a timer armed) */
};

struct ura_system {
	/* Read-mostly configuration. */
	unsigned nworkers;
	unsigned batch;
	uint64_t idle_wait_ns;
	uint64_t spin_ns;
	uint64_t timer_slack_ns;
	unsigned pool_threads;         /* io/: offload threads per node */
	unsigned io_wq_max;            /* io/: io-wq cap per ring */
	int pin;
	int want_uring;
	int trace_unmatched;
	/* Snapshots: the current phase's parity, read every turn (relaxed;
	 * core/phase.h). */
	_Atomic uint8_t snap_ph;
	struct ura__logger log;
	struct ura__hooks hooks;
	struct ura__worker *workers;   /* nworkers, each cache-aligned */
	const char *backend;

	/* Flags everyone reads: every send and every pass of a worker's
	 * loop reads shutdown. */
	alignas(URA__CACHELINE) _Atomic int shutdown;
	_Atomic int started;

	/* Counts the idle paths write (a worker about to spin or sleep), on
	 * a line of their own: beside shutdown, each spin of an idle worker
	 * cost a busy one a miss on its next send. */
	alignas(URA__CACHELINE) _Atomic int nsleeping; /* workers in the sleep path */
	_Atomic int nspinning;         /* workers spinning for work */
	_Atomic int nwatching;         /* workers asleep watching a peer */
	_Atomic unsigned in_loop;      /* workers in their loop (shutdown order) */
	/* Work held by threads that are not workers (a snapshot thread):
	 * the system is not quiescent while it is non-zero. */
	_Atomic int held;

	struct ura__ext_shard ext[URA__EXT_SHARDS];
	_Atomic uint64_t ext_spawned;
	_Atomic uint64_t ext_stopped;

	struct ura__node *nodes;       /* nnodes, cache-aligned */
	struct ura__arena arena;       /* the workers' pool slices, then extp's */
	struct ura__extpool *extp;     /* nextp; NULL without an arena */
	unsigned nextp;
	_Atomic unsigned extp_hi;      /* 1 + the highest extp ever claimed */
	pthread_key_t ext_key;         /* a thread's extp (or none), when nextp */
	unsigned nnodes;
	int simulated;                 /* URA_TOPOLOGY layout, nothing bound */
	uint64_t steal_remote_ns;      /* local victims empty this long first */
	uint64_t steal_next_ns;        /* a busy peer's next slot after this */
	uint64_t steal_queue_ns;       /* a peer's queued actors after this */
	int numa_batch;                /* cross-node messages go through outboxes */
	unsigned outbox_batch;         /* flush an outbox at this many */

	/* The slot table (core/slots.c). */
	alignas(URA__CACHELINE) pthread_mutex_t slot_lock;
	_Atomic(struct ura__actor *) *chunks;  /* URA__MAX_CHUNKS pointers */
	_Atomic uint32_t idx_hwm;      /* slot indices handed out so far */
	uint32_t tag;                  /* in every slot's idx: refs say whose */
	uint32_t chunk_top;            /* chunks made: [0, chunk_top), under slot_lock */
	struct ura__actor *ext_free;   /* under slot_lock */
	/* Bounded mailboxes (core/bound.h): per chunk of slots, a page of
	 * records, made on the chunk's first bounded spawn (under slot_lock). */
	_Atomic(_Atomic(struct ura__bp *) *) *bps;

	/* Bounded mailboxes' counters (core/bound.c; ura_stats.mb_*). */
	alignas(URA__CACHELINE) struct ura__bpstats {
		_Atomic uint64_t dropped, refused, mutes, waits, overloads, over;
	} bpst;

	/* Quiescence waiters (core/quiesce.c). */
	alignas(URA__CACHELINE) pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	_Atomic int awaiters;
	uint64_t q_gen;                /* under q_lock */
	void *start_sync;              /* during ura__workers_start */
	/* Per worker, nworkers - 1 of each: the peers' alarm fds its poller
	 * watches and that poller's re-arm marks (core/sched.c,
	 * ura__alarms_init; made before any worker starts, which then
	 * allocates nothing). */
	int *alarm_peers;
	uint8_t *alarm_dead;

	/* The layers above: each allocates and frees its own. */
	struct ura__timesys *time;
	struct ura__pool_threads *pools; /* nnodes */
	struct ura__sigs *sigs;
	struct ura__groups *groups;
	struct ura__names *names;
	struct ura__snap *snap;
#ifdef URA_DETERMINISTIC
	struct ura__det *det;          /* runtime/det.c */
#endif
	struct ura__fibsys *fib;         /* actor/fiber.c; made at the first such spawn */
	uint64_t stack_pool;             /* actor/fiber.c: ura_config.stack_pool */
	struct ura__mx *mx;            /* core/metrics.h */
};

/* A handler's view of the runtime (ura.h's ura_ctx). */
/* An exit reason on its way to the stop (actor/signal.c): set by
 * ura_exit, an exit signal or a kill in a turn, read by the stop that
 * ends that turn (ura__die), which moves it into the slot's tombstone. */
struct ura__why {
	ura_atom reason;
	ura_value value;         /* strings and bytes: a heap copy, owned */
	uint8_t set;             /* 0: normal */
};

struct ura_ctx {
	ura_system *sys;
	struct ura__worker *w;   /* NULL: init running off the workers */
	struct ura__actor *a;
	struct ura_msg *m;       /* NULL in init */
	void *req_data;
	uint64_t turn;           /* w's st.turns when made, or off the workers
	                            the making thread's ura__ctx_tag() (debug
	                            check) */
	/* actor/request.c: the request this handler answers, if any (a
	 * request message, or a continuation's chained promise): who asked
	 * and its id; req_open until it is replied to, failed, forwarded or
	 * taken as a promise; req_promised when it is one of the actor's
	 * open promises already (a chained one). */
	ura_ref req_from;
	uint32_t req_id;
	uint8_t req_open;
	uint8_t req_promised;
	/* actor/request.c: a continuation's payload (ura_request_payload). */
	uint32_t req_payload_len;
	void *req_payload;
	/* actor/signal.c: the exit reason of this turn's stop. Here, not in
	 * the actor's side record: a stop always ends the turn that asked
	 * for it, and most actors that exit with a reason need no record
	 * for anything else (bench/signals' linked pairs). Last, so that
	 * ura__ctx_init zeroes the rest and sets only why.set. */
	struct ura__why why;
};

/* A ctx for a turn or an init: like `= { .sys, .w, .a }`, without
 * zeroing why's 32 bytes on every turn (only `set` is read before a
 * reason is written). */
static inline void ura__ctx_init(struct ura_ctx *cx, ura_system *sys, struct ura__worker *w,
				 struct ura__actor *a)
{
	memset(cx, 0, offsetof(struct ura_ctx, why));
	cx->sys = sys;
	cx->w = w;
	cx->a = a;
	cx->why.set = 0;
}

/* The worker running on this thread, if any (for -EDEADLK checks). */
extern _Thread_local struct ura__worker *ura__current_worker;

/* A word no other live thread has: the ctx of an init run off the
 * workers carries it in `turn` (the debug check of ura__ctx_bad). */
static inline uint64_t ura__ctx_tag(void)
{
	return (uint64_t)(uintptr_t)&ura__current_worker;
}

/* A ctx the caller may not use: NULL, or (in builds without NDEBUG) one
 * kept past its handler: used from another thread, or in a later turn.
 * Such a use is undefined in ura.h's terms; debug builds catch it, say so
 * once in the log, and make the call fail (-EINVAL, or its empty value). */
#ifdef NDEBUG
#define ura__ctx_bad(cx) (ura__unlikely(!(cx)))
#else
int ura__ctx_stale(const struct ura_ctx *cx);
ura__no_sanitize static inline int ura__ctx_bad(const struct ura_ctx *cx)
{
	if (ura__unlikely(!cx))
		return 1;
	/* Off the workers w is NULL, and so may be the garbage of a dead
	 * frame: the thread's tag tells them apart (tests/misuse crashed in
	 * one run in ten on two nodes without it). */
	if (ura__likely(cx->w == ura__current_worker &&
			cx->turn == (cx->w ? ura__ld(&cx->w->st.turns) : ura__ctx_tag())))
		return 0;
	return ura__ctx_stale(cx);
}
#endif

/* The worker of this thread if it belongs to sys: calls made on a worker
 * thread outside a handler still use that worker's pool and counters. */
static inline struct ura__worker *ura__thread_worker(ura_system *sys)
{
	struct ura__worker *w = ura__current_worker;
	return w && w->sys == sys ? w : NULL;
}

static inline struct ura__pool *ura__pool_of(struct ura__worker *w)
{
	return w ? &w->pool : NULL;
}

/* core/send.c: this thread's pool and counts for sends into sys (not a
 * worker of it), or NULL: malloc and the shared count. Used only by the
 * sends from outside, which free what they made into it again on
 * failure. */
struct ura__extpool *ura__ext_pool(ura_system *sys);
/* runtime/system.c, after the arena and before the workers' pools go. */
int ura__ext_init(ura_system *sys);
void ura__ext_fini(ura_system *sys);

/* The actor's state and its size (0 without state); URA_G_FIELD reads it
 * and must not read past its end. */
static inline void *ura__ctx_state(const ura_ctx *cx, size_t *size)
{
	*size = cx->a->state ? cx->a->cls->state_size : 0;
	return cx->a->state;
}

/* The bound value (ura_become_bound); type 0 if none. */
static inline ura_value ura__ctx_bound(const ura_ctx *cx)
{
	if (cx->a->x)
		return cx->a->x->bound;
	ura_value z;
	z.type = 0;
	z.len = 0;
	z.u.i64 = 0;
	return z;
}

/* The phase stamp for a message a thread that runs no turn sends. */
static inline uint8_t ura__phase_stamp(ura_system *sys)
{
	return ura__phase_stamp_of(&sys->snap_ph);
}

/* core/topo.c: the CPUs node's workers are pinned to; 0 when there are
 * none to bind to (no pinning, or a simulated topology). */
int ura__node_cpuset(const ura_system *sys, unsigned node, cpu_set_t *set);

/* The slot of table index `index` (no tag), or NULL (never handed out).
 * Any thread. acquire: pairs with the release of idx_hwm and of the
 * chunk's publication in core/slots.c, so an index below hwm has an
 * initialised chunk or a NULL we treat as "no such actor". */
static inline struct ura__actor *ura__slot_at(ura_system *sys, uint32_t index)
{
	if (index == 0 || index >= atomic_load_explicit(&sys->idx_hwm, memory_order_acquire))
		return NULL;
	struct ura__actor *c = atomic_load_explicit(&sys->chunks[index >> URA__CHUNK_SHIFT],
						    memory_order_acquire);
	return c ? &c[index & (URA__CHUNK - 1)] : NULL;
}

/* The slot a ref's index names (its system tag checked), or NULL. Inline:
 * every send looks its target up here. */
static inline struct ura__actor *ura__slot_get(ura_system *sys, uint32_t idx)
{
	if (ura__unlikely(idx >> URA__IDX_BITS != sys->tag))
		return NULL;
	return ura__slot_at(sys, idx & URA__IDX_MASK);
}

/* core/slots.c */
/* Free slots a worker keeps in its list before it sets a batch aside. */
#define URA__SLOT_BATCH 1024u
/* Out of line: the rare paths of the inline calls below. */
struct ura__actor *ura__slot_take_slow(ura_system *sys, struct ura__worker *w);
void ura__slot_free_ext(ura_system *sys, struct ura__actor *a);
void ura__slot_batch_full(ura_system *sys, struct ura__worker *w);
/* The nodes' depots of free slots: made with the nodes, gone with them. */
void ura__slot_depot_init(struct ura__node *nd);
void ura__slot_depot_fini(struct ura__node *nd);
struct ura__actor_x *ura__actor_x_new(struct ura__worker *w, struct ura__actor *a);
/* The side record with `tail` bytes after it in the same block, for the
 * layer that made it to use (ura__actor_x_tail): one allocation where
 * the record is made for that layer's sake (actor/signal.c's record). */
struct ura__actor_x *ura__actor_x_new_tail(struct ura__worker *w, struct ura__actor *a,
					   uint32_t tail);
void ura__actor_x_drop(ura_system *sys, struct ura__worker *w, struct ura__actor *a);

/* A slot whose token the caller then holds, or NULL (-ENOMEM); w: the
 * calling worker (its free list), NULL off the workers. Inline: a spawn's
 * fast path is the worker's free list. */
static inline struct ura__actor *ura__slot_take(ura_system *sys, struct ura__worker *w)
{
	struct ura__actor *a = w ? w->free_slots : NULL;
	if (a) {
		w->free_slots = a->free_link;
		/* A stale send may have scheduled the dead slot; then leave
		 * it on the list and take a fresh one. */
		if (ura__likely(ura__mb_claim(&a->mb))) {
			w->free_n--;
			return a;
		}
		a->free_link = w->free_slots;
		w->free_slots = a;
	}
	return ura__slot_take_slow(sys, w);
}
/* Gives a stopped actor's slot back (token still held). */
static inline void ura__slot_free(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (!w) {
		ura__slot_free_ext(sys, a);
		return;
	}
	a->free_link = w->free_slots;
	w->free_slots = a;
	/* A worker that stops what others spawn would keep their slots for
	 * ever while the spawners took fresh ones: a full list moves on. */
	if (ura__unlikely(++w->free_n >= URA__SLOT_BATCH))
		ura__slot_batch_full(sys, w);
}
/* The live actor r names, or NULL (stopped, stale, never). Any thread. */
struct ura__actor *ura__slot_live(ura_system *sys, ura_ref r);
/* The side record, made on first use; NULL without memory. Token holder;
 * w: the worker it runs on (its pool), NULL off the workers (malloc). */
static inline struct ura__actor_x *ura__actor_x(struct ura__worker *w, struct ura__actor *a)
{
	return a->x ? a->x : ura__actor_x_new(w, a);
}
/* The bytes after the record (x->tail of them), aligned as malloc's. */
static inline void *ura__actor_x_tail(struct ura__actor_x *x)
{
	return (char *)x + URA__X_HEAD;
}
/* Frees the side record and the lists of every layer in it; w as above. */
static inline void ura__actor_x_free(ura_system *sys, struct ura__worker *w,
				     struct ura__actor *a)
{
	if (a->x)
		ura__actor_x_drop(sys, w, a);
}
/* System life: the table (and, at destroy, its chunks). */
int ura__slots_init(ura_system *sys);
void ura__slots_fini(ura_system *sys);

#endif
