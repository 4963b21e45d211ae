/* SPDX-License-Identifier: MIT */
/*
 * Operation records, private to lib/io (io.c and pool.c). An operation
 * belongs to the worker whose ring (or epoll) carries it: its record lives
 * in that worker's table and only that worker touches it. Other threads
 * reach it by id: cancels from other workers go through the owner's cancel
 * inbox, finished pool jobs through its done stack.
 */
#ifndef URA_IO_OP_H
#define URA_IO_OP_H

#include "core/core.h"

#define URA__OPS_SHIFT 10
#define URA__OPS_CHUNK (1u << URA__OPS_SHIFT)
#define URA__OPS_MAX_CHUNKS (1u << 14)   /* 16 Mi operations per worker */

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
	uint64_t deadline;          /* CLOCK_MONOTONIC ns of the whole op, 0: none */
	int32_t first_res;          /* the attempt's own CQE, until its timer's */
	uint32_t idx, gen;
	uint16_t owner;             /* worker */
	uint8_t live;
	uint8_t ncqe;               /* CQEs of this attempt still to come */
	uint8_t timer_fired;        /* its linked timeout said -ETIME */
	uint8_t rearm;              /* accept without kernel multishot */
	uint8_t delivered;          /* completions delivered so far (any) */
	uint8_t cancelled;          /* ura_io_cancel'ed: no further attempt */
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
	struct ura__ids *cancels;
	/* Epoll CLOSEs of other workers asking us to forget their fd
	 * (ura__poller_forget): their ura__ioreq addresses, under
	 * cancel_lock too. forget_closed: we exited and answer no more; an
	 * asker counts us as answered. */
	struct ura__ids *forgets;
	int forget_closed;
	_Atomic int cancel_req;
	_Atomic int cancel_sweep;   /* an id did not fit: sweep (io.c) */
};

#endif
