/* SPDX-License-Identifier: MIT */
/* Batched cross-node mailboxes (core/outbox.c). */
#ifndef URA_CORE_OUTBOX_H
#define URA_CORE_OUTBOX_H

#include "core/core.h"

/* Owner: queues m for actor a on node `node` (a batch is flushed when
 * full; the worker flushes the rest at the end of its pass). */
void ura__outbox_add(struct ura__worker *w, unsigned node, struct ura__actor *a,
		     struct ura_msg *m);
void ura__outbox_flush_all(struct ura__worker *w);
/* Per worker: the outboxes (with more than one node and batching on). */
int ura__outboxes_init(ura_system *sys);
/* At destroy, workers stopped: frees what is still queued; returns how
 * many messages that was (accepted, never handled). */
uint64_t ura__outboxes_fini(ura_system *sys);

/* The node inbox as a source of the worker loop (core/source.h). */
int ura__inbox_drain(struct ura__worker *w);
static inline int ura__inbox_pending(struct ura__worker *w)
{
	/* relaxed peek: the drain's exchange is what synchronizes. */
	return atomic_load_explicit(&w->sys->nodes[w->node].inbox, memory_order_relaxed) != NULL;
}
static inline int ura__inbox_due(struct ura__worker *w, uint64_t *now)
{
	(void)now;
	return ura__inbox_pending(w);
}
static inline int ura__inbox_service(struct ura__worker *w, uint64_t *now, int idle)
{
	(void)now;
	(void)idle;
	return ura__inbox_drain(w);
}
static inline int ura__inbox_visible(struct ura__worker *w)
{
	/* seq_cst: pairs with the flush's seq_cst CAS against our store to
	 * `sleeping` (Dekker, as in core/sched.c's maybe_wake). */
	return atomic_load_explicit(&w->sys->nodes[w->node].inbox, memory_order_seq_cst) != NULL;
}
static inline uint64_t ura__inbox_deadline(struct ura__worker *w)
{
	(void)w;
	return UINT64_MAX;
}

#endif
