/* SPDX-License-Identifier: MIT */
/*
 * Per-node thread pools: ura_offload jobs, and the calls the epoll backend
 * cannot wait on (regular files) or that block (openat, close, fsync).
 * Started on first use; a finished job goes home to its owner worker.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/sched.h"
#include "io/op.h"
#include "io/pool.h"
#include "ring/epoll_io.h"


/* A finished job goes home to its owner: a stack the owner takes whole
 * (ura__io_service). seq_cst: pairs with the owner's fence before it
 * sleeps (worker_sleep, work_visible): either it sees the job, or the
 * wake that follows sees it asleep. */
static void done_push(struct ura__worker *w, struct ura__op *op)
{
	/* relaxed: only the CAS publishes. */
	struct ura__op *old = atomic_load_explicit(&w->io->done, memory_order_relaxed);
	do
		op->next = old;
	while (!atomic_compare_exchange_weak_explicit(&w->io->done, &old, op,
						      memory_order_seq_cst,
						      memory_order_relaxed));
}

static void *pool_main(void *arg)
{
	struct ura__pool_threads *pt = arg;
	ura_system *sys = pt->sys;
	/* Blocking calls may be interrupted; signals ura delivers as
	 * messages are never ours to take. */
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&pt->lock);
	for (;;) {
		while (!pt->head && !pt->stop)
			pthread_cond_wait(&pt->cond, &pt->lock);
		if (!pt->head)
			break; /* stop, and nothing queued */
		struct ura__op *op = pt->head;
		pt->head = op->next;
		if (!pt->head)
			pt->tail = NULL;
		pthread_mutex_unlock(&pt->lock);
		if (op->rq.op == URA__OP_OFFLOAD) {
			int q = URA__JOB_QUEUED;
			/* acq_rel: pairs with a cancel's CAS (ura_io_cancel). */
			if (atomic_compare_exchange_strong_explicit(&op->rq.job_state, &q,
								    URA__JOB_RUNNING,
								    memory_order_acq_rel,
								    memory_order_acquire))
				op->res = op->fn(op->arg);
			else
				op->res = -ECANCELED;
		} else {
			op->res = ura__epio_blocking(&op->rq);
		}
		struct ura__worker *w = &sys->workers[op->owner];
		done_push(w, op);
		ura__wake(NULL, w);
		pthread_mutex_lock(&pt->lock);
	}
	pthread_mutex_unlock(&pt->lock);
	return NULL;
}

static int pool_start(ura_system *sys, struct ura__pool_threads *pt)
{
	pt->threads = ura__calloc(pt->want, sizeof *pt->threads);
	if (!pt->threads)
		return -ENOMEM;
	/* The node's CPUs, so the pool's memory traffic stays home. */
	cpu_set_t set;
	int any = ura__node_cpuset(sys, pt->node, &set);
	for (unsigned i = 0; i < pt->want; i++) {
		pthread_attr_t at;
		pthread_attr_init(&at);
		if (any)
			pthread_attr_setaffinity_np(&at, sizeof set, &set);
		int rc = pthread_create(&pt->threads[i], &at, pool_main, pt);
		pthread_attr_destroy(&at);
		if (rc) {
			if (!pt->n)
				return -rc;
			break; /* fewer threads, still a pool */
		}
		pt->n++;
	}
	return 0;
}

void ura__pool_queue(void *ctx, struct ura__ioreq *r)
{
	struct ura__worker *w = ctx;
	struct ura__op *op = (struct ura__op *)r;
	struct ura__pool_threads *pt = &w->sys->pools[w->node];
	pthread_mutex_lock(&pt->lock);
	if (!pt->started) {
		/* Started on first use: most programs never offload. */
		pt->started = 1;
		int rc = pool_start(w->sys, pt);
		if (rc < 0)
			ura__log(&w->sys->log, URA_LOG_ERROR, "node %u: pool threads: %s", pt->node,
				 ura_strerror(rc));
	}
	if (!pt->n) {
		pthread_mutex_unlock(&pt->lock);
		/* No thread to run it: it fails, as a completion. */
		op->res = -EAGAIN;
		/* relaxed: owner-only here (no pool thread ever saw it); the
		 * owner pushes to its own stack, which it reads later. */
		atomic_store_explicit(&r->job_state, URA__JOB_CANCELLED, memory_order_relaxed);
		done_push(w, op);
		return;
	}
	op->next = NULL;
	if (pt->tail)
		pt->tail->next = op;
	else
		pt->head = op;
	pt->tail = op;
	pthread_cond_signal(&pt->cond);
	pthread_mutex_unlock(&pt->lock);
}

int ura__pools_init(ura_system *sys, unsigned threads)
{
	sys->pools = ura__calloc(sys->nnodes, sizeof *sys->pools);
	if (!sys->pools)
		return -ENOMEM;
	for (unsigned i = 0; i < sys->nnodes; i++) {
		struct ura__pool_threads *pt = &sys->pools[i];
		pthread_mutex_init(&pt->lock, NULL);
		pthread_cond_init(&pt->cond, NULL);
		pt->want = threads;
		pt->sys = sys;
		pt->node = i;
	}
	return 0;
}

void ura__pools_fini(ura_system *sys)
{
	if (!sys->pools)
		return;
	for (unsigned i = 0; i < sys->nnodes; i++) {
		struct ura__pool_threads *pt = &sys->pools[i];
		pthread_mutex_lock(&pt->lock);
		pt->stop = 1;
		/* Jobs not started are dropped (their records go with the
		 * workers' tables); running ones finish first. */
		pt->head = pt->tail = NULL;
		pthread_cond_broadcast(&pt->cond);
		pthread_mutex_unlock(&pt->lock);
		for (unsigned k = 0; k < pt->n; k++)
			pthread_join(pt->threads[k], NULL);
		free(pt->threads);
		pthread_mutex_destroy(&pt->lock);
		pthread_cond_destroy(&pt->cond);
	}
	free(sys->pools);
	sys->pools = NULL;
}

