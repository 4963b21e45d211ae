/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O (io/io.c): operations on the worker's ring, their ids, and
 * completions as messages. io/ alone keeps an actor's list of operations
 * in flight (ura__actor_x.io).
 */
#ifndef URA_IO_H
#define URA_IO_H

#include "core/core.h"
#include "io/op.h"

/* Per worker (ura__worker.io) and the node pools; fini frees both. */
int ura__io_init(ura_system *sys);
void ura__io_fini(ura_system *sys);
/* On the worker thread, once its poller is up: completions reach io/. */
void ura__io_worker_start(struct ura__worker *w);
/* Owner, at exit: cancel everything and wait for the kernel to let go. */
void ura__io_worker_exit(struct ura__worker *w);
/* An actor stops: cancel every operation it has in flight. */
void ura__io_cancel_all(struct ura__worker *w, struct ura__actor *a);
/* Token holder: the actor took completion m from its mailbox; if it was
 * its operation's final one, the operation is over. Returns the
 * operations it still has in flight. */
uint32_t ura__io_untrack(struct ura__actor *a, const struct ura_msg *m);

/* Actor I/O as a source of the worker loop (runtime/worker.c). */
static inline int ura__io_pending(struct ura__worker *w)
{
	/* relaxed peeks: what they announce is taken with acquire later. */
	return ura__poller_io_active(&w->poller) ||
	       atomic_load_explicit(&w->io->done, memory_order_relaxed) ||
	       atomic_load_explicit(&w->io->cancel_req, memory_order_relaxed);
}
static inline int ura__io_due(struct ura__worker *w, uint64_t *now)
{
	(void)w;
	(void)now;
	return 1; /* ura__io_service paces its own polling */
}
/* Returns true when completions may have made actors runnable. */
int ura__io_service(struct ura__worker *w, uint64_t *now, int idle);
static inline int ura__io_visible(struct ura__worker *w)
{
	/* seq_cst: pairs with the pool's push and a cancel's flag store,
	 * against our store to `sleeping` (Dekker). */
	return atomic_load_explicit(&w->io->done, memory_order_seq_cst) ||
	       atomic_load_explicit(&w->io->cancel_req, memory_order_seq_cst);
}
static inline uint64_t ura__io_deadline(struct ura__worker *w)
{
	(void)w;
	return UINT64_MAX; /* the epoll backend's deadlines live in its wait */
}

#endif
