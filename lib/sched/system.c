/* SPDX-License-Identifier: MIT */
/* System life cycle: create, start, await, shut down, destroy, stats. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "numa/topo.h"
#include "sched/sched.h"

#define MAX_WORKERS 1024

static int parse_uint_env(ura_system *sys, const char *name, unsigned lo,
			  unsigned hi, unsigned *out)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(e, &end, 10);
	if (errno || *end || e[0] == '-' || v < lo || v > hi) {
		ura__log(sys, URA_LOG_ERROR, "%s=%s: expected a whole number from %u to %u",
			 name, e, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 1;
}

static int env_flag(const char *name, int dflt)
{
	const char *e = getenv(name);
	if (!e || !*e)
		return dflt;
	return !(e[0] == '0' || !strcmp(e, "false") || !strcmp(e, "no") || !strcmp(e, "off"));
}

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
	if (cfg->workers > MAX_WORKERS || cfg->log_level < 0 ||
	    cfg->log_level > URA_LOG_DEBUG)
		return -EINVAL;
	ura_system *sys = calloc(1, sizeof *sys);
	if (!sys)
		return -ENOMEM;
	sys->log = cfg->log;
	sys->log_ud = cfg->log_ud;
	sys->log_level = ura__log_level_from_env(cfg->log_level ? cfg->log_level : URA_LOG_WARN);
	sys->batch = cfg->batch ? cfg->batch : 64;
	sys->idle_wait_ns = cfg->idle_wait_ns ? cfg->idle_wait_ns : 50 * URA_MSEC;
	sys->spin_ns = cfg->spin_ns ? cfg->spin_ns : 50 * URA_USEC;
	sys->timer_slack_ns = cfg->timer_slack_ns ? cfg->timer_slack_ns : URA_TIMER_SLACK_DEFAULT;
	sys->sig_fd = -1;
	sys->pin = !cfg->no_pinning;
	sys->want_uring = env_flag("URA_IO_URING", 1);
	const char *tr = getenv("URA_TRACE");
	sys->trace_unmatched = cfg->trace_unmatched || (tr && strstr(tr, "unmatched"));
	sys->backend = "none";

	struct ura__topo topo;
	char why[200] = "";
	unsigned workers = 0, slack_us = 0, steal_us = 0;
	sys->pool_threads = cfg->pool_threads ? cfg->pool_threads : 2;
	sys->io_wq_max = cfg->io_wq_max ? cfg->io_wq_max : 4;
	int rc = ura__topo_discover(&topo, why, sizeof why);
	if (rc < 0) {
		if (*why)
			ura__log(sys, URA_LOG_ERROR, "%s", why);
		free(sys);
		return rc;
	}
	workers = cfg->workers ? cfg->workers : (unsigned)topo.n;
	if ((rc = parse_uint_env(sys, "URA_WORKERS", 1, MAX_WORKERS, &workers)) < 0 ||
	    (rc = parse_uint_env(sys, "URA_BATCH", 1, 1u << 20, &sys->batch)) < 0 ||
	    (rc = parse_uint_env(sys, "URA_TIMER_SLACK_US", 1, 1000000, &slack_us)) < 0 ||
	    (rc = parse_uint_env(sys, "URA_STEAL_REMOTE_US", 1, 10000000, &steal_us)) < 0 ||
	    (rc = parse_uint_env(sys, "URA_POOL_THREADS", 1, 1024, &sys->pool_threads)) < 0)
		goto fail_topo;
	if (slack_us)
		sys->timer_slack_ns = slack_us * URA_USEC;
	sys->steal_remote_ns = steal_us ? steal_us * URA_USEC :
			       cfg->steal_remote_ns ? cfg->steal_remote_ns : 200 * URA_USEC;
	unsigned nb = cfg->numa_batch ? cfg->numa_batch : 32;
	sys->numa_batch = !cfg->no_numa_batching;
	const char *nbenv = getenv("URA_NUMA_BATCH");
	if (nbenv && *nbenv) {
		unsigned v = 0;
		if ((rc = parse_uint_env(sys, "URA_NUMA_BATCH", 0, 1u << 16, &v)) < 0)
			goto fail_topo;
		sys->numa_batch = v > 0;
		if (v)
			nb = v;
	}
	sys->outbox_batch = nb;
	sys->nworkers = workers;
	sys->simulated = topo.simulated;
	rc = -ENOMEM;
	sys->workers = aligned_alloc(URA__CACHELINE, workers * sizeof *sys->workers);
	sys->chunks = calloc(URA__MAX_CHUNKS, sizeof *sys->chunks);
	sys->nodes = aligned_alloc(URA__CACHELINE, (size_t)topo.nnodes * sizeof *sys->nodes);
	if (!sys->workers || !sys->chunks || !sys->nodes)
		goto fail_alloc;
	memset(sys->workers, 0, workers * sizeof *sys->workers);
	memset(sys->nodes, 0, (size_t)topo.nnodes * sizeof *sys->nodes);
	/* Worker i takes topology entry i * n / workers: with fewer workers
	 * than CPUs they spread over the nodes, with more they share CPUs;
	 * either way a node's workers stay adjacent (entries are sorted by
	 * node), so worker order is nearest-first for stealing. */
	int last = -1;
	for (unsigned i = 0; i < workers; i++) {
		struct ura__worker *w = &sys->workers[i];
		int e = (int)((uint64_t)i * (unsigned)topo.n / workers);
		w->sys = sys;
		w->id = i;
		w->cpu = sys->pin && !topo.simulated ? topo.cpu[e] : -1;
		w->rng = 0x9e3779b9u * (i + 1);
		w->poller.efd = w->poller.epfd = -1;
		if (topo.node[e] != last) {
			last = topo.node[e];
			struct ura__node *nd = &sys->nodes[sys->nnodes++];
			nd->first = i;
			nd->id = topo.node_id[last];
			pthread_mutex_init(&nd->inject_lock, NULL);
		}
		w->node = sys->nnodes - 1;
		sys->nodes[w->node].count++;
	}
	if (sys->nnodes < 2)
		sys->numa_batch = 0; /* nothing is remote */
	if (ura__pools_init(sys, sys->pool_threads) < 0) {
		rc = -ENOMEM;
		goto fail_alloc;
	}
	for (unsigned i = 0; sys->numa_batch && i < workers; i++) {
		sys->workers[i].outbox = calloc(sys->nnodes, sizeof(struct ura__outbox));
		if (!sys->workers[i].outbox) {
			for (unsigned k = 0; k < i; k++)
				free(sys->workers[k].outbox);
			rc = -ENOMEM;
			goto fail_alloc;
		}
	}
	/* Node-local pools: one reservation, a slice per worker, bound to
	 * the worker's node where the topology is real. Without it (say an
	 * address-space limit), pools fall back to malloc blocks. */
	int arc = ura__arena_init(&sys->arena, workers);
	if (arc < 0)
		ura__log(sys, URA_LOG_WARN, "no pool arena (%s): message blocks come from malloc",
			 ura_strerror(arc));
	for (unsigned i = 0; i < workers; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (ura__pool_init(&w->pool, sys->arena.base ? &sys->arena : NULL, i) < 0) {
			rc = -ENOMEM;
			goto fail_alloc;
		}
		if (sys->arena.base && !topo.simulated && sys->nnodes > 1 &&
		    ura__topo_mem_allowed(sys->nodes[w->node].id)) {
			int brc = ura__arena_bind(&sys->arena, i, sys->nodes[w->node].id);
			if (brc < 0)
				ura__log(sys, URA_LOG_DEBUG, "mbind worker %u's pool: %s", i,
					 ura_strerror(brc));
		}
	}
	if (topo.simulated)
		ura__log(sys, URA_LOG_INFO, "URA_TOPOLOGY: %u simulated node(s); "
			 "pinning and memory binding are skipped", sys->nnodes);
	ura__topo_free(&topo);
	uint64_t now = ura__now_ns();
	for (unsigned i = 0; i < workers; i++) {
		if (ura__timers_init(&sys->workers[i].tm, now, sys->timer_slack_ns) < 0) {
			for (unsigned k = 0; k < i; k++)
				ura__timers_fini(&sys->workers[k]);
			ura__pools_fini(sys);
			for (unsigned k = 0; k < sys->nnodes; k++)
				pthread_mutex_destroy(&sys->nodes[k].inject_lock);
			free(sys->workers);
			free(sys->chunks);
			free(sys->nodes);
			free(sys);
			return -ENOMEM;
		}
	}
	atomic_store(&sys->idx_hwm, 1); /* index 0 is the null ref */
	pthread_mutex_init(&sys->slot_lock, NULL);
	pthread_mutex_init(&sys->q_lock, NULL);
	pthread_mutex_init(&sys->group_lock, NULL);
	pthread_mutex_init(&sys->sig_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sys->q_cond, &ca);
	pthread_condattr_destroy(&ca);
	if ((rc = ura__snap_init(sys)) < 0) {
		ura_system_destroy(sys);
		return rc;
	}

	if (!cfg->paused) {
		rc = ura_system_start(sys);
		if (rc < 0) {
			ura_system_destroy(sys);
			return rc;
		}
	}
	*out = sys;
	return 0;
fail_alloc:
	ura__pools_fini(sys);
	if (sys->workers)
		for (unsigned i = 0; i < workers; i++)
			free(sys->workers[i].pool.ret);
	ura__arena_fini(&sys->arena);
	free(sys->workers);
	free(sys->chunks);
	free(sys->nodes);
fail_topo:
	ura__topo_free(&topo);
	free(sys);
	return rc;
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
	uint64_t deadline = timeout_ns == UINT64_MAX ? UINT64_MAX : ura__now_ns() + timeout_ns;
	atomic_fetch_add_explicit(&sys->awaiters, 1, memory_order_seq_cst);
	rc = 0;
	for (;;) {
		if (ura__quiescent(sys))
			break;
		if (atomic_load(&sys->shutdown)) {
			rc = -ESHUTDOWN;
			break;
		}
		uint64_t now = ura__now_ns();
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
	/* Wake anyone still awaiting: they return -ESHUTDOWN. */
	ura__await_wake(sys);
	return 0;
}

URA_API int ura_system_destroy(ura_system *sys)
{
	if (!sys)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	ura__snap_stop(sys); /* a snapshot still running is cancelled */
	ura_system_shutdown(sys);
	/* Offloaded functions still running finish before any actor's
	 * destroy callback runs (they may use its state). */
	ura__pools_fini(sys);
	uint64_t lost = 0, live = 0;
	uint32_t hwm = atomic_load(&sys->idx_hwm);
	for (uint32_t idx = 1; idx < hwm; idx++) {
		struct ura__actor *a = ura__slot_get(sys, idx);
		if (!a)
			continue;
		live += a->state_kind == URA__A_ALIVE;
		lost += ura__actor_reclaim(sys, a);
	}
	for (uint32_t c = 0; c < URA__MAX_CHUNKS; c++)
		free(atomic_load_explicit(&sys->chunks[c], memory_order_relaxed));
	/* Cross-node messages still in outboxes or inboxes were never
	 * handled either (a worker stopped in the middle of a pass). */
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		for (unsigned nd = 0; w->outbox && nd < sys->nnodes; nd++) {
			for (struct ura_msg *m = w->outbox[nd].head, *nx; m; m = nx) {
				nx = atomic_load_explicit(&m->next, memory_order_relaxed);
				ura__arena_drop(&sys->arena, m, 1);
				lost++;
			}
		}
		free(w->outbox);
		w->outbox = NULL;
	}
	for (unsigned k = 0; k < sys->nnodes; k++) {
		struct ura_msg *m = atomic_load(&sys->nodes[k].inbox);
		for (struct ura_msg *nx; m; m = nx) {
			nx = atomic_load_explicit(&m->next, memory_order_relaxed);
			ura__arena_drop(&sys->arena, m, 1);
			lost++;
		}
	}
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		lost += ura__timers_fini(w);
		ura__io_fini(w);
		ura__pool_drain(&w->pool);
		ura__poller_close(&w->poller);
	}
	ura__arena_fini(&sys->arena);
	ura__signals_fini(sys);
	int rc = 0;
	if (lost) {
		ura__log(sys, URA_LOG_WARN,
			 "destroy: %llu accepted message(s) were never handled "
			 "(%llu actor(s) still alive were destroyed)",
			 (unsigned long long)lost, (unsigned long long)live);
		rc = -EBUSY;
	} else if (live) {
		ura__log(sys, URA_LOG_DEBUG, "destroy: %llu idle actor(s) destroyed",
			 (unsigned long long)live);
	}
	for (unsigned k = 0; k < sys->nnodes; k++)
		pthread_mutex_destroy(&sys->nodes[k].inject_lock);
	free(sys->nodes);
	pthread_mutex_destroy(&sys->slot_lock);
	pthread_mutex_destroy(&sys->q_lock);
	ura__groups_destroy(sys);
	pthread_mutex_destroy(&sys->group_lock);
	ura__snap_fini(sys);
	pthread_cond_destroy(&sys->q_cond);
	free(sys->chunks);
	free(sys->workers);
	free(sys);
	return rc;
}

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
		out->io_deferred += ura__ld(&sys->workers[i].poller.io_deferred);
	}
	out->io_inflight = out->io_submitted > out->io_completed ?
				   out->io_submitted - out->io_completed : 0;
	/* Armed from outside: counted once, when armed. (Summing workers'
	 * adoptions and subtracting them from this again raced an adoption
	 * between the two reads, and undercounted.) */
	out->timers_armed += atomic_load_explicit(&sys->ext_timers_armed, memory_order_relaxed);
	uint64_t done = out->timers_fired + out->timers_cancelled;
	out->timers_pending = out->timers_armed > done ? out->timers_armed - done : 0;
	out->spawned += atomic_load_explicit(&sys->ext_spawned, memory_order_relaxed);
	out->stopped += atomic_load_explicit(&sys->ext_stopped, memory_order_relaxed);
	out->sent += ura__ext_sent_sum(sys);
	out->live = out->spawned - out->stopped;
	return 0;
}
