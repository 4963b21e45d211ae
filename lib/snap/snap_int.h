/* SPDX-License-Identifier: MIT */
/* The system's snapshot state, for the files of lib/snap only. */
#ifndef URA_SNAP_INT_H
#define URA_SNAP_INT_H

#include <pthread.h>

#include "core/post.h"
#include "snap/format.h"

struct ura__snap_reg {
	const ura_class *cls;
	ura_snap_class sc;             /* behaviors -> our copy below */
	char *name;
	const ura_behavior **behaviors;
};

struct ura__snap_thr {
	struct ura__snap *S;
	pthread_t t;
	_Atomic int finished;          /* set last (release); then joinable fast */
	struct ura__snap_thr *next;    /* under S->lock */
};

struct ura_snap_out {
	struct ura__bytes *b;
	size_t start;                  /* where the state begins in b */
	int big;                       /* a put would pass URA__SNAP_LEN_MAX */
};

struct ura__snap {
	ura_system *sys;
	/* Registration and triggering. The registry only changes while no
	 * snapshot runs; captures read it after acquiring the phase flip. */
	pthread_mutex_t lock;
	struct ura__snap_reg *reg;
	unsigned nreg, capreg;
	uint64_t phase;                /* under lock: the last snapshot's id */
	struct ura__snap_thr *thr;     /* under lock: threads to join */

	/* The running snapshot: set by ura_snapshot before its thread starts
	 * (so, before the flip every reader acquires). */
	char *path;
	ura_snap_opts opts;
	uint64_t t0, id;
	/* id << 1 | collecting: which snapshot records go to, and whether
	 * it still takes them, read in one load (a worker that decided to
	 * record for snapshot k must never write into k + 1's buffer). */
	_Atomic uint64_t state;
	_Atomic int skip;              /* opts.skip_unsupported of that one */

	_Atomic int active;            /* from ura_snapshot to the report */
	_Atomic int cancel;            /* destroy: give up */
	_Atomic int oom;               /* a record was lost */
	_Atomic uint64_t pokes;        /* pokes not yet handled */
	_Atomic uint64_t seq;          /* order of recorded messages */
	_Atomic uint64_t ntimers;      /* delayed sends saved */

	/* The snapshot thread's own captures (idle actors). */
	struct ura__sbuf tbuf;
	struct ura__bytes scratch;

};

/* capture.c: frees a record buffer. */
void ura__sbuf_drop(struct ura__sbuf *b);
/* capture.c: core's phase hooks (struct ura__hooks). */
void ura__snap_capture(struct ura__worker *w, struct ura__actor *a);
int ura__snap_msg(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m,
		  unsigned *same);
/* capture.c: the actor's record, into buf (the worker's, or the thread's
 * for idle actors); a is ours (token) and alive. */
void ura__snap_capture_actor(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
			     struct ura__actor *a, unsigned P, uint64_t id);

#endif
