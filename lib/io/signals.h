/* SPDX-License-Identifier: MIT */
/*
 * Signals as messages (io/signals.c): a signalfd watched by worker 0's
 * poller, read like any other event on the ring and turned into a
 * message; nothing runs in signal context.
 */
#ifndef URA_IO_SIGNALS_H
#define URA_IO_SIGNALS_H

#include "core/core.h"

#define URA__NSIGNALS 6
/* The signals ura can deliver: workers always block them. */
extern const int ura__signals_handled[URA__NSIGNALS];
#define URA__EV_SIGNAL 0  /* poller user event bit: the signalfd */

struct ura__sigs {
	pthread_mutex_t lock;
	int fd;                        /* -1 until a subscription; under lock */
	_Atomic int req;               /* worker 0 should arm the signalfd */
	int watching;                  /* worker 0 only: the watch is armed */
	ura_ref sub[65];               /* by signal number, under lock */
};

int ura__signals_init(ura_system *sys);
void ura__signals_fini(ura_system *sys);

/* Signals as a source of the worker loop (runtime/worker.c): worker 0
 * arms the watch when asked and reads the signalfd when it fires. */
static inline int ura__signals_pending(struct ura__worker *w)
{
	/* relaxed: a hint, exchanged with acquire by the service. */
	return w->poller.events ||
	       (w->id == 0 && atomic_load_explicit(&w->sys->sigs->req, memory_order_relaxed));
}
static inline int ura__signals_due(struct ura__worker *w, uint64_t *now)
{
	(void)now;
	return ura__signals_pending(w);
}
int ura__signals_service(struct ura__worker *w, uint64_t *now, int idle);
static inline int ura__signals_visible(struct ura__worker *w)
{
	/* seq_cst: pairs with the subscriber's seq_cst store of req before
	 * it looks at `sleeping` (Dekker). */
	/* events: a watch that fired in a poll of the owner's own (an idle
	 * I/O poll reaps it too); a sleep on it would wait for the next
	 * one, where the backend reports a readiness once (io_uring). */
	return w->poller.events ||
	       (w->id == 0 && atomic_load_explicit(&w->sys->sigs->req, memory_order_seq_cst));
}
static inline uint64_t ura__signals_deadline(struct ura__worker *w)
{
	(void)w;
	return UINT64_MAX;
}

#endif
