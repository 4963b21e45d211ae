/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous snapshots (the MPLR'19 design, adapted): the runtime side.
 *
 * Phases. The system has a phase counter (struct ura__snap.phase, a full
 * integer: the snapshot's number); ura_snapshot() increments it. Since only
 * one snapshot runs at a time and a snapshot ends only once no actor and no
 * message of the old phase is left, two neighbouring phases are all that
 * can ever coexist, so actors and messages carry only the phase's parity:
 *  - ura_system.snap_ph: the current parity, read on every turn (relaxed;
 *    a stale read only delays a capture to the next message or turn);
 *  - ura__actor.snap_ph: the parity the actor was last captured in;
 *  - URA__MF_PH in ura_msg.flags: the parity of its sender when it was
 *    sent (of the actor running the turn; of the system for a thread that
 *    is not a worker).
 * (Stamping and counting are part of the post path: core/phase.h.)
 * When no snapshot runs, all three agree and the turn loop pays one
 * predictable branch per message (the test it makes anyway to tell old
 * messages from new ones); nothing per turn but the stamp it stores.
 *
 * Capture. An actor is captured (state, behavior, bound value, stash,
 * pending delayed sends) just before it handles its first message of the
 * new phase, as in the paper: a message from an actor already captured,
 * or from outside after the flip, or a "poke". Until then it handles the
 * old messages it has as before the cut, so a backlog of them is never
 * recorded. A message of the old phase that an actor of the new phase is
 * about to handle was in flight at the cut: it is recorded, in mailbox
 * order. Idle actors are captured by the snapshot thread itself, which
 * takes their token the way a spawn takes a free slot (no message, no
 * wakeup); an actor that is busy instead gets a poke, a message of the new
 * phase that makes it capture itself and is then dropped. A child spawned
 * by an actor still in the old phase is captured at its spawn (its
 * parent's saved state may hold its ref).
 *
 * Completion. The snapshot thread waits until every poke was handled and,
 * per parity, as many messages were received as were sent (per-worker
 * counters, core/phase.h; see old_phase_over in thread.c), then persists
 * what the workers recorded in their own buffers.
 */
#ifndef URA_SNAP_H
#define URA_SNAP_H

#include "core/core.h"

/* A growable byte string; err sticks at -ENOMEM after a failed grow. */
struct ura__bytes {
	unsigned char *p;
	size_t n, cap;
	int err;
};

/* A worker's record buffer: chunks the owner appends to and publishes
 * record by record; the snapshot thread reads what was published. The
 * owner frees a snapshot's chunks when it first records for the next one
 * (by then that snapshot's thread has read them), or destroy does: they
 * outlive their snapshot by that long. */
struct ura__schunk {
	_Atomic(struct ura__schunk *) next;
	_Atomic size_t used;     /* bytes published (release by the owner) */
	size_t cap;
	unsigned char data[];
};

struct ura__sbuf {
	_Atomic(struct ura__schunk *) head; /* owner writes, release */
	struct ura__schunk *tail;           /* owner only */
	_Atomic uint64_t id;                /* the snapshot it belongs to */
};

/* Per worker (ura__worker.rec): what the worker records for the running
 * snapshot. Its phase counters are core's (core/phase.h). */
struct ura__wrec {
	struct ura__sbuf buf;        /* owner appends, the snapshot thread reads */
	struct ura__bytes scratch;   /* owner: the record being built */
	/* Owner: the block of message sequence numbers the turn numbered
	 * seq_turn (st.turns) takes from; see record_msg. */
	uint64_t seq_next, seq_end, seq_turn;
};

/* registry.c: the system's snapshot state; sets core's phase hooks. */
int ura__snap_init(ura_system *sys);
/* Cancels a running snapshot and joins its thread (destroy, before the
 * workers stop); then, with everything stopped, frees what is left. */
void ura__snap_stop(ura_system *sys);
void ura__snap_fini(ura_system *sys);

#endif
