/* SPDX-License-Identifier: MIT */
/*
 * Actors live in slots of a table that only grows. A slot is reused by later
 * incarnations (each with a new generation) but never freed before the
 * system, so a stale ref always finds valid memory: the generation check
 * turns it into -ESRCH, and a send that races the stop carries the old
 * generation in the message, which the receiver drops as a dead letter.
 */
#ifndef URA_ACTOR_H
#define URA_ACTOR_H

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "actor/mailbox.h"

struct ura__worker;

/* A pending request's continuation (request/response). */
struct ura__pending {
	struct ura__pending *next;
	ura_handler *cont;
	void *data;
	int64_t timer;  /* the reply's deadline (ura_timer), 0 if none */
	uint32_t id;
};

enum {
	URA__A_FREE = 0, /* no incarnation (never spawned, or stopped) */
	URA__A_ALIVE = 1,
	/* Stopped with I/O in flight: its ref is stale, its operations are
	 * being cancelled, and its destroy callback waits for their final
	 * completions (the kernel may still write to its buffers). */
	URA__A_ZOMBIE = 2,
};

struct ura__actor {
	struct ura__mailbox mb;
	/* The stub node of an actor that never received a message. */
	_Atomic(struct ura_msg *) stub;
	/* Odd while alive: bumped at spawn and at stop. Read by senders
	 * (acquire), written by the token holder (release). */
	_Atomic uint32_t gen;
	uint32_t idx;
	/* Fields below: only the token holder. */
	uint8_t state_kind;      /* URA__A_* */
	uint8_t stopping;        /* ura_stop() called in this turn */
	uint8_t became;          /* become in this turn: re-deliver stash */
	uint8_t inline_state : 1;  /* state lives in `inl` */
	uint8_t snap_ph : 1;       /* phase parity it was captured in (lib/snap) */
	_Atomic uint16_t last_worker; /* where it last ran (ura_actor_worker) */
	/* The node it lives on (placement). Written at spawn by the token
	 * holder, read by senders that do not hold the token (routing):
	 * relaxed, since a read that races a respawn of the slot only
	 * misroutes a message the generation check turns into a dead letter. */
	_Atomic uint16_t home_node;
	const ura_class *cls;
	/* States up to this size live here: no second allocation, and an
	 * idle actor with a small state fits in two cache lines. Aligned as
	 * malloc aligns (max_align_t), so any state type fits. */
	_Alignas(16) unsigned char inl[40];
	const ura_behavior *beh;
	void *state;                 /* `inl`, or a heap block for big states */
	struct ura__actor *link;     /* run-queue overflow or inject queue */
	struct ura__actor *free_link; /* free-slot list (a separate link: a
	                                 free slot can still be scheduled by
	                                 a stale send, see ura__actor_turn) */
	struct ura__actor_x *x;      /* what few actors use; NULL until then */
};

/* The parts of an actor most never use (bound values, stash, requests,
 * timers), allocated on first use and freed when it stops: the slot stays
 * at 128 bytes (bench/actor_creation's bytes per idle actor). */
struct ura__actor_x {
	ura_value bound;
	struct ura_msg *stash, *stash_tail; /* stashed messages, oldest first */
	struct ura__pending *pending;       /* requests awaiting replies */
	struct ura__ids *timers;            /* delayed sends it armed */
	int64_t rt;                         /* pending receive timeout, or 0 */
	uint32_t next_req;
	uint32_t rt_seq;                    /* receive-timeout generation */
	struct ura__ids *io;                /* I/O operations in flight */
};

/* A growable list of 64-bit ids: the handles of an actor's delayed sends
 * (cancelled when it stops), the ids of its I/O operations in flight. */
struct ura__ids {
	uint32_t n, cap;
	int64_t v[];
};

/* Appends v, growing the list (4, 8, 16, ...). 0 or -ENOMEM (then the list
 * is as it was). */
static inline int ura__ids_push(struct ura__ids **lp, int64_t v)
{
	struct ura__ids *l = *lp;
	if (!l || l->n == l->cap) {
		uint32_t cap = l ? l->cap * 2 : 4;
		struct ura__ids *n = (struct ura__ids *)realloc(l, sizeof *l + cap * sizeof l->v[0]);
		if (!n)
			return -ENOMEM;
		if (!l)
			n->n = 0;
		n->cap = cap;
		*lp = l = n;
	}
	l->v[l->n++] = v;
	return 0;
}

_Static_assert(sizeof(struct ura__actor) == 128, "an idle actor is 128 bytes");
_Static_assert(offsetof(struct ura__actor, inl) % 16 == 0, "inline state aligned as malloc's");

static inline unsigned ura__home(struct ura__actor *a)
{
	return atomic_load_explicit(&a->home_node, memory_order_relaxed);
}

/* Slots come in chunks; chunk pointers never move. */
#define URA__CHUNK_SHIFT 10
#define URA__CHUNK (1u << URA__CHUNK_SHIFT)
#define URA__MAX_CHUNKS (1u << 16) /* 64 Mi actor slots */

static inline ura_ref ura__ref_make(uint32_t idx, uint32_t gen)
{
	ura_ref r = { ((uint64_t)gen << 32) | idx };
	return r;
}
static inline uint32_t ura__ref_idx(ura_ref r) { return (uint32_t)r.id; }
static inline uint32_t ura__ref_gen(ura_ref r) { return (uint32_t)(r.id >> 32); }

#endif
