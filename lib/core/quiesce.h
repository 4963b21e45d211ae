/* SPDX-License-Identifier: MIT */
/*
 * Quiescence: no actor runnable or running, no message in flight, nothing
 * pending (core/quiesce.c). Workers count what they send and take from
 * mailboxes (ura__wstats.sent / received); threads that are not workers
 * count into one sharded counter, by phase parity (core/phase.h), which
 * lib/snap reads as well.
 */
#ifndef URA_CORE_QUIESCE_H
#define URA_CORE_QUIESCE_H

#include "core/core.h"

/* A thread that is not a worker sends m: counted before the push. */
void ura__ext_count(ura_system *sys, const struct ura_msg *m);
/* ... the same, from the thread that holds xp (core/send.c). */
static inline void ura__ext_count_in(struct ura__extpool *xp, const struct ura_msg *m)
{
	_Atomic uint64_t *c = &xp->sent[ura__msg_ph(m)];
	/* relaxed, single writer: see ura__quiescent for why the push's
	 * release is what publishes it. */
	ura__inc(c);
}
/* ... or starts other work that a later receive balances (a delayed send
 * armed from outside: it counts as received when it fires or is
 * cancelled). */
void ura__ext_count_other(ura_system *sys);
/* Everything counted from outside; and the messages of one parity. */
uint64_t ura__ext_sent(ura_system *sys);
uint64_t ura__ext_phase_sent(ura_system *sys, unsigned ph);
/* True when, at one instant, every worker was idle, every message sent
 * had been taken from a mailbox and nothing was held outside (sys->held). */
int ura__quiescent(ura_system *sys);
/* Wakes every thread in ura_system_await to look again. */
void ura__await_wake(ura_system *sys);

#endif
