/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O: operation records, their ids, completions as messages, and
 * the per-node thread pool (ura_offload, and files on the epoll backend).
 *
 * An operation belongs to the worker whose ring (or epoll) carries it: its
 * record lives in that worker's table and only that worker touches it.
 * Other threads reach it by id: cancels from other workers go through the
 * owner's cancel inbox, finished pool jobs through its done stack.
 */
#ifndef URA_IO_H
#define URA_IO_H

#include <pthread.h>

#include "ring/ring.h"
#include "util/util.h"

struct ura__worker;
struct ura__actor;
struct ura_msg;

#define URA__OP_OFFLOAD 100     /* a ura_offload job (not a ring op) */

struct ura__op {
	struct ura__ioreq rq;       /* what the backend sees (stays put) */
	struct ura__op *next;       /* free list, pool queue, done stack */
	ura_ref actor;              /* whom completions go to */
	ura_atom tag;
	struct ura_msg *m;          /* the completion message, made at submit */
	void *own;                  /* WRITE/SEND copy, iovec copy, path copy */
	size_t done;                /* WRITE/SEND: bytes written so far */
	ura_work_fn *fn;            /* OFFLOAD */
	void *arg;
	int64_t res;                /* pool: the result */
	int32_t first_res;          /* the attempt's own CQE, until its timer's */
	uint32_t idx, gen;
	uint16_t owner;             /* worker */
	uint8_t live;
	uint8_t ncqe;               /* CQEs of this attempt still to come */
	uint8_t timer_fired;        /* its linked timeout said -ETIME */
	uint8_t rearm;              /* accept without kernel multishot */
	uint8_t delivered;          /* completions delivered so far (any) */
};

/* Per worker. */
struct ura__io {
	struct ura__op **chunks;    /* 1024 records each; never move */
	uint32_t nchunks, hwm;
	struct ura__op *free;
	unsigned tick;
	uint64_t last_poll;         /* when the owner last entered to reap */
	int exiting;                /* completions are dropped, not posted */
	/* Pool jobs that finished: a stack, pushed by pool threads (CAS),
	 * taken whole by the owner (exchange). */
	_Atomic(struct ura__op *) done;
	/* Cancels asked by other workers (ids), under cancel_lock. */
	pthread_mutex_t cancel_lock;
	uint64_t *cancels;
	unsigned ncancel, capcancel;
	_Atomic int cancel_req;
};

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

int ura__io_init(struct ura__worker *w);
void ura__io_fini(struct ura__worker *w);
/* Owner: finished pool jobs, cross-worker cancels, and (if active) a
 * non-blocking poll of the ring. Returns completions handled. */
int ura__io_service(struct ura__worker *w, int poll);
/* An actor stops: cancel every operation it has in flight. */
void ura__io_cancel_all(struct ura__worker *w, struct ura__actor *a);
/* Owner, at exit: cancel everything and wait for the kernel to let go. */
void ura__io_worker_exit(struct ura__worker *w);

int ura__pools_init(struct ura_system *sys, unsigned threads);
void ura__pools_fini(struct ura_system *sys);

#endif
