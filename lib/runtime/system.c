/* SPDX-License-Identifier: MIT */
/*
 * The system's life: new (configuration, then layout, then allocation,
 * with one cleanup path), start, await, shutdown, destroy, stats.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "actor/fiber.h"
#include "actor/group.h"
#include "core/bound.h"
#include "core/metrics.h"
#include "core/outbox.h"
#include "core/quiesce.h"
#include "core/sched.h"
#include "core/topo.h"
#include "io/io.h"
#include "io/pool.h"
#include "io/signals.h"
#include "runtime/runtime.h"
#include "snap/snap.h"
#include "time/timers.h"
#include "util/env.h"
#include "util/liveset.h"

#define MAX_WORKERS 1024

/* Every system not yet destroyed: a second ura_system_destroy is -EINVAL,
 * not a free of freed memory. */
static struct ura__liveset live_systems = URA__LIVESET_INIT;

/* ---- configuration --------------------------------------------------- */

/* Everything a system is made from, checked: the config and the
 * environment (which overrides it), before anything is allocated. */
struct params {
	struct ura__logger log;
	unsigned workers;        /* 0: one per usable CPU */
	unsigned batch;
	uint64_t idle_wait_ns, spin_ns, timer_slack_ns, steal_remote_ns;
	unsigned pool_threads, io_wq_max, outbox_batch, mx_shift;
	uint64_t stack_pool;
	int pin, want_uring, trace_unmatched, numa_batch, paused;
};

static const char *const log_words[] = { "error", "warn", "info", "debug", NULL };
static const char *const trace_words[] = { "unmatched", NULL };

static int params_get(struct params *p, const ura_config *cfg)
{
	/* The deterministic build takes its seed in reserved_[0] (det.c). */
#ifdef URA_DETERMINISTIC
	enum { RSV0 = 1 };
#else
	enum { RSV0 = 0 };
#endif
	if (cfg->workers > MAX_WORKERS || cfg->log_level < 0 || cfg->log_level > URA_LOG_DEBUG ||
	    !ura__zeroed(cfg->reserved_ + RSV0, sizeof cfg->reserved_ - RSV0 * sizeof(uint64_t)) ||
	    !ura__zeroed(cfg->reserved3_, sizeof cfg->reserved3_) ||
	    !ura__zeroed(cfg->reserved7_, sizeof cfg->reserved7_) || cfg->metrics_sample_log2 > 16)
		return -EINVAL;
	memset(p, 0, sizeof *p);
	p->log.fn = cfg->log;
	p->log.ud = cfg->log_ud;
	p->log.level = cfg->log_level ? cfg->log_level : URA_LOG_WARN;
	/* 1 in 256: a sample is two clock reads (~55 ns on kvm-clock), so
	 * that it stays under 1% of the cheapest message (bench/README.md,
	 * issue 17). */
	p->mx_shift = cfg->metrics_sample_log2 ? (unsigned)cfg->metrics_sample_log2 : 8;
	const struct ura__logger *lg = &p->log;
	unsigned u = 0;
	int rc, b;
	if ((rc = ura__env_word(lg, "URA_LOG", log_words, &u)) < 0)
		return rc;
	if (rc)
		p->log.level = URA_LOG_ERROR + (int)u;
	p->workers = cfg->workers;
	p->batch = cfg->batch ? cfg->batch : 64;
	p->idle_wait_ns = cfg->idle_wait_ns ? cfg->idle_wait_ns : UINT64_MAX; /* no backstop */
	p->spin_ns = cfg->spin_ns ? cfg->spin_ns : 50 * URA_USEC;
	p->timer_slack_ns = cfg->timer_slack_ns ? cfg->timer_slack_ns : URA_TIMER_SLACK_DEFAULT;
	p->steal_remote_ns = cfg->steal_remote_ns ? cfg->steal_remote_ns : 200 * URA_USEC;
	p->pool_threads = cfg->pool_threads ? cfg->pool_threads : 2;
	p->io_wq_max = cfg->io_wq_max ? cfg->io_wq_max : 4;
	p->stack_pool = cfg->stack_pool ? cfg->stack_pool : 64;
	p->outbox_batch = cfg->numa_batch ? cfg->numa_batch : 32;
	p->numa_batch = !cfg->no_numa_batching;
	p->pin = !cfg->no_pinning;
	p->want_uring = 1;
	p->trace_unmatched = cfg->trace_unmatched;
	p->paused = cfg->paused;
	if ((rc = ura__env_uint(lg, "URA_WORKERS", 1, MAX_WORKERS, &p->workers)) < 0 ||
	    (rc = ura__env_uint(lg, "URA_BATCH", 1, 1u << 20, &p->batch)) < 0 ||
	    (rc = ura__env_uint(lg, "URA_POOL_THREADS", 1, 1024, &p->pool_threads)) < 0)
		return rc;
	if ((rc = ura__env_uint(lg, "URA_TIMER_SLACK_US", 1, 1000000, &u)) < 0)
		return rc;
	if (rc)
		p->timer_slack_ns = u * URA_USEC;
	if ((rc = ura__env_uint(lg, "URA_SPIN_US", 1, 1000000, &u)) < 0)
		return rc;
	if (rc)
		p->spin_ns = u * URA_USEC;
	if ((rc = ura__env_uint(lg, "URA_METRICS_SAMPLE", 0, 16, &u)) < 0)
		return rc;
	if (rc)
		p->mx_shift = u;
	if ((rc = ura__env_uint(lg, "URA_STEAL_REMOTE_US", 1, 10000000, &u)) < 0)
		return rc;
	if (rc)
		p->steal_remote_ns = u * URA_USEC;
	if ((rc = ura__env_uint(lg, "URA_NUMA_BATCH", 0, 1u << 16, &u)) < 0)
		return rc;
	if (rc) {
		p->numa_batch = u > 0;
		if (u)
			p->outbox_batch = u;
	}
	if ((rc = ura__env_bool(lg, "URA_IO_URING", &b)) < 0)
		return rc;
	if (rc)
		p->want_uring = b;
	if ((rc = ura__env_bool(lg, "URA_PIN", &b)) < 0)
		return rc;
	if (rc)
		p->pin = b;
	if ((rc = ura__env_words(lg, "URA_TRACE", trace_words, &u)) < 0)
		return rc;
	if (rc && (u & 1))
		p->trace_unmatched = 1;
	return 0;
}

/* ---- layout ---------------------------------------------------------- */

/* Worker i takes topology entry i * n / workers: with fewer workers than
 * CPUs they spread over the nodes, with more they share CPUs; either way
 * a node's workers stay adjacent (entries are sorted by node), so worker
 * order is nearest-first for stealing. */
static void lay_out(ura_system *sys, const struct ura__topo *topo)
{
	int last = -1;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		int e = (int)((uint64_t)i * (unsigned)topo->n / sys->nworkers);
		w->sys = sys;
		w->id = i;
		w->cpu = sys->pin && !topo->simulated ? topo->cpu[e] : -1;
		w->rng = 0x9e3779b9u * (i + 1);
		w->watch_v = -1;
		w->iwatch_n = -1;
		w->qwatch_v = -1;
		w->twatch_v = -1;
		w->remote_grace = sys->steal_remote_ns;
		w->poller.efd = w->poller.epfd = -1;
		if (topo->node[e] != last) {
			last = topo->node[e];
			struct ura__node *nd = &sys->nodes[sys->nnodes++];
			nd->first = i;
			nd->id = topo->node_id[last];
			pthread_mutex_init(&nd->inject_lock, NULL);
			ura__slot_depot_init(nd);
		}
		w->node = sys->nnodes - 1;
		sys->nodes[w->node].count++;
	}
	if (sys->nnodes < 2)
		sys->numa_batch = 0; /* nothing is remote */
}

/* Node-local message pools: one reservation, a slice per worker, bound to
 * the worker's node where the topology is real. Without it (say an
 * address-space limit), pools fall back to malloc blocks. */
static int pools_init(ura_system *sys)
{
	/* After the workers' slices, one per pool of a thread that sends
	 * from outside (core/send.c). */
	int arc = ura__arena_init(&sys->arena, sys->nworkers + URA__EXT_POOLS);
	if (arc < 0)
		ura__log(&sys->log, URA_LOG_WARN,
			 "no pool arena (%s): message blocks come from malloc", ura_strerror(arc));
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (ura__pool_init(&w->pool, sys->arena.base ? &sys->arena : NULL, i) < 0)
			return -ENOMEM;
		if (sys->arena.base && !sys->simulated && sys->nnodes > 1 &&
		    ura__topo_mem_allowed(sys->nodes[w->node].id)) {
			int brc = ura__arena_bind(&sys->arena, i, sys->nodes[w->node].id);
			if (brc < 0)
				ura__log(&sys->log, URA_LOG_DEBUG, "mbind worker %u's pool: %s", i,
					 ura_strerror(brc));
		}
	}
	return ura__ext_init(sys);
}

/* ---- teardown: the one way down -------------------------------------- */

/*
 * Frees whatever of sys exists, in the reverse order of new, after the
 * workers stopped (or never ran). Every step tolerates a part that was
 * never made, so a failed ura_system_new and ura_system_destroy share
 * it. Returns the accepted messages that were never handled; *live the
 * actors still alive.
 */
static uint64_t teardown(ura_system *sys, uint64_t *live)
{
	uint64_t lost = 0;
	*live = 0;
	/* Offloaded functions still running finish before any actor's
	 * destroy callback runs (they may use its state). */
	ura__pools_fini(sys);
	if (sys->chunks) {
		uint32_t hwm = atomic_load_explicit(&sys->idx_hwm, memory_order_relaxed);
		for (uint32_t idx = 1; idx < hwm; idx++) {
			struct ura__actor *a = ura__slot_at(sys, idx);
			if (!a)
				continue;
			*live += a->state_kind == URA__A_ALIVE;
			lost += ura__actor_reclaim(sys, a);
		}
	}
	ura__slots_fini(sys);
	/* Cross-node messages still in outboxes or inboxes were never
	 * handled either (a worker stopped in the middle of a pass). */
	lost += ura__outboxes_fini(sys);
	lost += ura__time_fini(sys);
	ura__alarms_fini(sys);
	ura__io_fini(sys);
	ura__ext_fini(sys);
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		ura__pool_drain(&sys->workers[i].pool);
		ura__poller_close(&sys->workers[i].poller);
	}
	ura__arena_fini(&sys->arena);
	ura__signals_fini(sys);
	ura__groups_fini(sys);
	ura__names_fini(sys);
	ura__snap_fini(sys);
	ura__fibers_fini(sys);
	ura__mx_fini(sys);
	for (unsigned k = 0; sys->nodes && k < sys->nnodes; k++) {
		pthread_mutex_destroy(&sys->nodes[k].inject_lock);
		ura__slot_depot_fini(&sys->nodes[k]);
	}
	free(sys->nodes);
	free(sys->workers);
	pthread_mutex_destroy(&sys->q_lock);
	pthread_cond_destroy(&sys->q_cond);
#ifdef URA_DETERMINISTIC
	ura__det_fini(sys);
#endif
	return lost;
}

/* ---- new ------------------------------------------------------------- */

URA_API int ura_system_new(ura_system **out, const ura_config *cfg)
{
	ura_config dflt;
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!cfg) {
		memset(&dflt, 0, sizeof dflt);
		cfg = &dflt;
	}
	/* Configuration: nothing allocated yet. */
	struct params p;
	int rc = params_get(&p, cfg);
	if (rc < 0)
		return rc;
	struct ura__topo topo;
	char why[200] = "";
	rc = ura__topo_discover(&topo, why, sizeof why);
	if (rc < 0) {
		if (*why)
			ura__log(&p.log, URA_LOG_ERROR, "%s", why);
		return rc;
	}
	unsigned workers = p.workers ? p.workers : (unsigned)topo.n;

	/* Allocation: the system and its tables, then each layer's part. */
	/* Aligned as its members ask (malloc gives 16): each section that
	 * claims a line of its own then has one. */
	ura_system *sys = ura__aligned_alloc(URA__CACHELINE, sizeof *sys);
	if (!sys) {
		ura__topo_free(&topo);
		return -ENOMEM;
	}
	memset(sys, 0, sizeof *sys);
	sys->log = p.log;
	sys->nworkers = workers;
	sys->batch = p.batch;
	sys->idle_wait_ns = p.idle_wait_ns;
	sys->spin_ns = p.spin_ns;
	sys->timer_slack_ns = p.timer_slack_ns;
	sys->steal_remote_ns = p.steal_remote_ns;
	/* Longer than nearly every handler (so an actor is not moved away
	 * from its cache for nothing), short enough that a woken actor
	 * starts within a millisecond while its waker computes. */
	sys->steal_next_ns = 100 * URA_USEC;
	/* Long enough for an owner that keeps up to drain what it queued
	 * (20, 50 and 100 us measured alike on contention; bench/README.md),
	 * short against the 1 ms a woken actor may wait. */
	sys->steal_queue_ns = 50 * URA_USEC;
	sys->pool_threads = p.pool_threads;
	sys->stack_pool = p.stack_pool;
	sys->io_wq_max = p.io_wq_max;
	sys->outbox_batch = p.outbox_batch;
	sys->numa_batch = p.numa_batch;
	sys->pin = p.pin;
	sys->want_uring = p.want_uring;
	sys->trace_unmatched = p.trace_unmatched;
	sys->simulated = topo.simulated;
	sys->backend = "none";
	pthread_mutex_init(&sys->q_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sys->q_cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = -ENOMEM;
	sys->workers = ura__aligned_alloc(URA__CACHELINE, workers * sizeof *sys->workers);
	if (sys->workers) {
		memset(sys->workers, 0, workers * sizeof *sys->workers);
		for (unsigned i = 0; i < workers; i++)
			sys->workers[i].alarm_fd = -1; /* teardown closes none */
	}
	sys->nodes = ura__aligned_alloc(URA__CACHELINE, (size_t)topo.nnodes * sizeof *sys->nodes);
	if (sys->nodes)
		memset(sys->nodes, 0, (size_t)topo.nnodes * sizeof *sys->nodes);
	if (sys->workers && sys->nodes) {
		/* Layout: workers on CPUs and nodes. */
		lay_out(sys, &topo);
		if (topo.simulated)
			ura__log(&sys->log, URA_LOG_INFO, "URA_TOPOLOGY: %u simulated node(s); "
				 "pinning and memory binding are skipped", sys->nnodes);
		if ((rc = ura__slots_init(sys)) == 0 &&
		    (rc = ura__mx_init(sys, p.mx_shift)) == 0 &&
		    (rc = ura__outboxes_init(sys)) == 0 &&
		    (rc = pools_init(sys)) == 0 &&
		    (rc = ura__alarms_init(sys)) == 0 &&
		    (rc = ura__time_init(sys)) == 0 &&
		    (rc = ura__io_init(sys)) == 0 &&
		    (rc = ura__signals_init(sys)) == 0 &&
		    (rc = ura__groups_init(sys)) == 0 &&
		    (rc = ura__names_init(sys)) == 0)
			rc = ura__snap_init(sys);
	}
#ifdef URA_DETERMINISTIC
	if (rc == 0)
		rc = ura__det_init(sys, cfg);
#endif
	ura__topo_free(&topo);
	if (rc == 0)
		rc = ura__live_add(&live_systems, sys);
	if (rc == 0 && !p.paused && (rc = ura_system_start(sys)) < 0)
		(void)ura__live_del(&live_systems, sys);
	if (rc < 0) {
		/* A failed start has stopped the workers it started. */
		uint64_t live;
		teardown(sys, &live);
		free(sys);
		return rc;
	}
	*out = sys;
	return 0;
}

URA_API int ura_system_start(ura_system *sys)
{
	if (!sys)
		return -EINVAL;
	if (atomic_load(&sys->started))
		return 0;
	if (atomic_load(&sys->shutdown))
		return -ESHUTDOWN;
	pthread_mutex_lock(&sys->q_lock);
	int rc = atomic_load(&sys->started) ? 0 : ura__workers_start(sys);
	pthread_mutex_unlock(&sys->q_lock);
	return rc;
}

URA_API int ura_system_await_for(ura_system *sys, uint64_t timeout_ns)
{
	if (!sys)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	int rc = ura_system_start(sys);
	if (rc < 0)
		return rc;
	uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : ura__wall_ns() + timeout_ns;
	atomic_fetch_add_explicit(&sys->awaiters, 1, memory_order_seq_cst);
	rc = 0;
	for (;;) {
		if (ura__quiescent(sys))
			break;
		if (atomic_load(&sys->shutdown)) {
			rc = -ESHUTDOWN;
			break;
		}
		uint64_t now = ura__wall_ns();
		if (now >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		/* Workers signal when the last of them goes to sleep idle; the
		 * 10 ms poll is a backstop, not the mechanism. */
		uint64_t until = now + 10 * URA_MSEC;
		if (until > deadline)
			until = deadline;
		struct timespec ts = { (time_t)(until / URA_SEC), (long)(until % URA_SEC) };
		pthread_mutex_lock(&sys->q_lock);
		uint64_t gen = sys->q_gen;
		while (sys->q_gen == gen &&
		       pthread_cond_timedwait(&sys->q_cond, &sys->q_lock, &ts) == 0)
			;
		pthread_mutex_unlock(&sys->q_lock);
	}
	atomic_fetch_sub_explicit(&sys->awaiters, 1, memory_order_seq_cst);
	return rc;
}

URA_API int ura_system_await(ura_system *sys)
{
	return ura_system_await_for(sys, UINT64_MAX);
}

URA_API int ura_system_shutdown(ura_system *sys)
{
	if (!sys)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	ura__workers_stop(sys);
	/* Wake anyone still awaiting: they return -ESHUTDOWN; so do threads
	 * waiting for room in a bounded mailbox. */
	ura__await_wake(sys);
	ura__bp_wake_all(sys);
	return 0;
}

URA_API int ura_system_destroy(ura_system *sys)
{
	if (!sys)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	/* Out of the set before anything of sys is read: of two destroys
	 * (even racing ones) exactly one goes on. */
	if (ura__live_del(&live_systems, sys) < 0)
		return -EINVAL;
	ura__snap_stop(sys); /* a snapshot still running is cancelled */
	ura_system_shutdown(sys);
	struct ura__logger log = sys->log;
	uint64_t live;
	uint64_t lost = teardown(sys, &live);
	free(sys);
	if (lost) {
		ura__log(&log, URA_LOG_WARN,
			 "destroy: %llu accepted message(s) were never handled "
			 "(%llu actor(s) still alive were destroyed)",
			 (unsigned long long)lost, (unsigned long long)live);
		return -EBUSY;
	}
	if (live)
		ura__log(&log, URA_LOG_DEBUG, "destroy: %llu idle actor(s) destroyed",
			 (unsigned long long)live);
	return 0;
}

/* ---- stats ----------------------------------------------------------- */

URA_API int ura_system_stats(ura_system *sys, ura_stats *out)
{
	if (!sys || !out)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->workers = sys->nworkers;
	out->nodes = sys->nnodes;
	out->simulated_topology = sys->simulated;
	out->backend = sys->backend;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__wstats *s = &sys->workers[i].st;
		out->spawned += ura__ld(&s->spawned);
		out->stopped += ura__ld(&s->stopped);
		out->sent += ura__ld(&s->sent);
		out->received += ura__ld(&s->received);
		out->unmatched += ura__ld(&s->unmatched);
		out->stashed += ura__ld(&s->stashed);
		out->dead_letters += ura__ld(&s->dead_letters);
		out->turns += ura__ld(&s->turns);
		out->steals += ura__ld(&s->steals);
		out->steals_remote += ura__ld(&s->steals_remote);
		out->cross_node += ura__ld(&s->cross_node);
		out->flushes += ura__ld(&s->flushes);
		out->flushed += ura__ld(&s->flushed);
		out->sleeps += ura__ld(&s->sleeps);
		out->wakeups += ura__ld(&s->wakeups);
		out->ring_enters += ura__ld(&s->ring_enters);
		out->timers_armed += ura__ld(&s->timers_armed);
		out->timers_fired += ura__ld(&s->timers_fired);
		out->timers_cancelled += ura__ld(&s->timers_cancelled);
		out->io_submitted += ura__ld(&s->io_submitted);
		out->io_completed += ura__ld(&s->io_completed);
		out->fiber_switches += ura__ld(&s->fiber_switches);
		out->spin_yields += ura__ld(&s->spin_yields);
		out->timers_stolen += ura__ld(&s->timers_stolen);
		out->alarm_sets += ura__ld(&s->alarm_sets);
		out->alarm_wakes += ura__ld(&s->alarm_wakes);
		out->io_deferred += ura__ld(&sys->workers[i].poller.io_deferred);
	}
	out->mb_dropped = ura__ld(&sys->bpst.dropped);
	out->mb_refused = ura__ld(&sys->bpst.refused);
	out->mb_mutes = ura__ld(&sys->bpst.mutes);
	out->mb_waits = ura__ld(&sys->bpst.waits);
	out->mb_overloads = ura__ld(&sys->bpst.overloads);
	out->mb_over = ura__ld(&sys->bpst.over);
	ura__fibers_stats(sys, &out->fibers, &out->stacks_mapped, &out->stacks_pooled);
	out->io_inflight = out->io_submitted > out->io_completed ?
				   out->io_submitted - out->io_completed : 0;
	/* Armed from outside: counted once, when armed. (Summing workers'
	 * adoptions and subtracting them from this again raced an adoption
	 * between the two reads, and undercounted.) */
	out->timers_armed += atomic_load_explicit(&sys->time->armed, memory_order_relaxed);
	uint64_t done = out->timers_fired + out->timers_cancelled;
	out->timers_pending = out->timers_armed > done ? out->timers_armed - done : 0;
	out->spawned += atomic_load_explicit(&sys->ext_spawned, memory_order_relaxed);
	out->stopped += atomic_load_explicit(&sys->ext_stopped, memory_order_relaxed);
	out->sent += ura__ext_sent(sys);
	out->live = out->spawned - out->stopped;
	/* relaxed: a gauge; index 0 is the null ref, never a slot. */
	out->slots = atomic_load_explicit(&sys->idx_hwm, memory_order_relaxed) - 1;
	return 0;
}
