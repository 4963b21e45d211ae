/* SPDX-License-Identifier: MIT */
/*
 * Snapshot phases as the post path sees them (the design is in
 * lib/snap/snap.h). Every message carries the parity of its sender's
 * phase, and every worker counts, by parity, the messages it sent and
 * took from mailboxes; the snapshot thread reads those counts to know
 * when the old phase is over. Stamping and counting are part of sending,
 * so they live here, below every source of messages; the snapshot itself
 * (capture, records, the file) lives in lib/snap.
 */
#ifndef URA_CORE_PHASE_H
#define URA_CORE_PHASE_H

#include "msg/msg.h"

/* Per worker. The counters are by parity, since the system started. */
struct ura__wphase {
	/* Messages sent with each parity (delayed sends count when they
	 * fire). Owner, relaxed: a reader orders them through recv. */
	_Atomic uint64_t sent[2];
	/* Messages taken from mailboxes, by their parity. Owner, release:
	 * pairs with the acquire in the completion check, so a receive it
	 * sees implies the send before it (and any record of it) is seen. */
	_Atomic uint64_t recv[2];
	/* Owner: the stamp ura__msg_make puts on a message this worker
	 * sends: URA__MF_SNAPD and the phase of the actor whose turn runs. */
	uint8_t cur;
};

static inline unsigned ura__msg_ph(const struct ura_msg *m)
{
	return (m->flags & URA__MF_PH) ? 1u : 0u;
}

/* Counts a send by a worker, before the push. */
static inline void ura__phase_sent(struct ura__wphase *s, const struct ura_msg *m)
{
	ura__inc(&s->sent[ura__msg_ph(m)]);
}

/* Counts n messages of parity ph received (end of a turn). */
static inline void ura__phase_recv(struct ura__wphase *s, unsigned ph, uint64_t n)
{
	atomic_store_explicit(&s->recv[ph], atomic_load_explicit(&s->recv[ph],
			      memory_order_relaxed) + n, memory_order_release);
}

/* The stamp of a message sent by a thread that is not running a turn:
 * the system's phase (relaxed: any phase is consistent for an input from
 * outside; the counting that follows uses the stamp, whatever it is). */
static inline uint8_t ura__phase_stamp_of(const _Atomic uint8_t *sys_ph)
{
	return (uint8_t)(URA__MF_SNAPD |
			 (atomic_load_explicit(sys_ph, memory_order_relaxed) ? URA__MF_PH : 0));
}

#endif
