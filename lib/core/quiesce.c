/* SPDX-License-Identifier: MIT */
#include <limits.h>

#include "core/quiesce.h"

static inline struct ura__ext_shard *shard_of(ura_system *sys)
{
	static _Atomic unsigned next_shard;
	static _Thread_local unsigned shard = UINT_MAX;
	if (shard == UINT_MAX)
		shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
			URA__EXT_SHARDS;
	return &sys->ext[shard];
}

void ura__ext_count(ura_system *sys, const struct ura_msg *m)
{
	/* seq_cst: the count must be visible before the push it precedes,
	 * to whoever sums the shards after reading the receive counters
	 * (ura__quiescent); the snapshot thread's completion check orders
	 * it through the receiver's release of its count instead. */
	atomic_fetch_add_explicit(&shard_of(sys)->msgs[ura__msg_ph(m)], 1, memory_order_seq_cst);
}

void ura__ext_count_other(ura_system *sys)
{
	/* seq_cst: as above. */
	atomic_fetch_add_explicit(&shard_of(sys)->other, 1, memory_order_seq_cst);
}

/* The counts of the extpools ever claimed (core/send.c), of parity ph, or
 * of both with ph 2: one pass over the pools either way. acquire: pairs
 * with the release that raised extp_hi in ext_claim; a count written
 * after that store is then visible under the same rule as the others. */
static uint64_t pool_sent(ura_system *sys, unsigned ph)
{
	uint64_t n = 0;
	unsigned hi = atomic_load_explicit(&sys->extp_hi, memory_order_acquire);
	for (unsigned k = 0; k < hi; k++)
		n += ph == 2 ? ura__ld(&sys->extp[k].sent[0]) + ura__ld(&sys->extp[k].sent[1])
			     : ura__ld(&sys->extp[k].sent[ph]);
	return n;
}

uint64_t ura__ext_sent(ura_system *sys)
{
	uint64_t n = pool_sent(sys, 2);
	for (unsigned i = 0; i < URA__EXT_SHARDS; i++) {
		/* seq_cst: pairs with the increments above. */
		n += atomic_load_explicit(&sys->ext[i].msgs[0], memory_order_seq_cst);
		n += atomic_load_explicit(&sys->ext[i].msgs[1], memory_order_seq_cst);
		n += atomic_load_explicit(&sys->ext[i].other, memory_order_seq_cst);
	}
	return n;
}

uint64_t ura__ext_phase_sent(ura_system *sys, unsigned ph)
{
	uint64_t n = pool_sent(sys, ph);
	/* relaxed: the snapshot thread reads the receives first, with
	 * acquire (lib/snap: a receive seen implies its send is seen). */
	for (unsigned i = 0; i < URA__EXT_SHARDS; i++)
		n += atomic_load_explicit(&sys->ext[i].msgs[ph], memory_order_relaxed);
	return n;
}

/*
 * True when, at one instant, every worker was idle and every message sent
 * had been taken from a mailbox. Counters only change while a worker is
 * busy; the two passes over (idle, idle_epoch) prove no worker was busy in
 * between, so the counter sums read in between are exact. Messages from
 * non-worker threads are counted (ext) before they are pushed.
 *
 * A thread that holds an extpool counts with a relaxed store of its own
 * counter (ura__ext_count_in), no locked add. That is enough because the
 * receive counters are read before the send counts: a message whose
 * receive was counted was popped with acquire from the push's release,
 * which follows the sender's count; the worker that popped it then
 * stored its idle flag (seq_cst), which this check read, so the count is
 * visible here. A message pushed and not yet received leaves a worker
 * busy, or its actor not yet scheduled: then the check and the send are
 * concurrent, and reading the system as quiescent before that send is a
 * true answer at that instant (as for any send that races the check).
 */
int ura__quiescent(ura_system *sys)
{
	uint64_t e1 = 0, e2 = 0, recv = 0, sent = 0;
	unsigned n = sys->nworkers;
	if (!atomic_load_explicit(&sys->started, memory_order_acquire))
		return 0;
	/* seq_cst: pairs with the increment and decrement of whoever holds
	 * work outside the workers (a snapshot thread). */
	if (atomic_load_explicit(&sys->held, memory_order_seq_cst))
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct ura__worker *w = &sys->workers[i];
		/* seq_cst: pairs with the seq_cst stores of idle/idle_epoch
		 * in the worker loop; acquire is what carries the counters. */
		if (!atomic_load_explicit(&w->idle, memory_order_seq_cst))
			return 0;
		e1 += atomic_load_explicit(&w->idle_epoch, memory_order_seq_cst);
	}
	for (unsigned i = 0; i < n; i++)
		recv += ura__ld(&sys->workers[i].st.received);
	for (unsigned i = 0; i < n; i++)
		sent += ura__ld(&sys->workers[i].st.sent);
	sent += ura__ext_sent(sys);
	for (unsigned i = 0; i < n; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (!atomic_load_explicit(&w->idle, memory_order_seq_cst))
			return 0;
		e2 += atomic_load_explicit(&w->idle_epoch, memory_order_seq_cst);
	}
	return e1 == e2 && recv == sent;
}

void ura__await_wake(ura_system *sys)
{
	pthread_mutex_lock(&sys->q_lock);
	sys->q_gen++;
	pthread_cond_broadcast(&sys->q_cond);
	pthread_mutex_unlock(&sys->q_lock);
}
