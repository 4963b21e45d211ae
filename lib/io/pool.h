/* SPDX-License-Identifier: MIT */
/* Per-node thread pools (io/pool.c): ura_offload, and the blocking calls
 * of the epoll backend (regular files, openat, close, fsync). */
#ifndef URA_IO_POOL_H
#define URA_IO_POOL_H

#include "core/core.h"

/* Per node: threads for ura_offload and epoll-backend file work. */
struct ura__pool_threads {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ura__op *head, *tail;
	pthread_t *threads;
	unsigned n, want;
	int stop;
	int started;
	struct ura_system *sys;
	unsigned node;
};

int ura__pools_init(ura_system *sys, unsigned threads);
/* Stops the threads after the jobs they run; jobs not started are dropped. */
void ura__pools_fini(ura_system *sys);
/* Owner: hands an operation (an offload or an epoll backend job) to its
 * node's pool; it comes back through the owner's done stack. Matches
 * ring.h's ura__pool_cb. */
void ura__pool_queue(void *worker, struct ura__ioreq *r);

#endif
