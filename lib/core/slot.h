/* SPDX-License-Identifier: MIT */
/*
 * Actor slots. Actors live in slots of a table that only grows. A slot is
 * reused by later incarnations (each with a new generation) but never
 * freed before the system, so a stale ref always finds valid memory: the
 * generation check turns it into -ESRCH, and a send that races the stop
 * carries the old generation in the message, which the receiver drops as
 * a dead letter.
 *
 * The slot is the runtime's data (core); the layers above own some of its
 * fields, marked below. Each layer reads and writes only its own fields,
 * and only while it holds the actor's token (core/mailbox.h).
 */
#ifndef URA_CORE_SLOT_H
#define URA_CORE_SLOT_H

#include <errno.h>
#include <stddef.h>

#include "core/mailbox.h"

struct ura__pending;  /* actor/: a request awaiting its reply */
struct ura__sig;      /* actor/signal.h: links, monitors, promises, exit reason */
struct ura__fiber;    /* actor/fiber.h: a context-switching actor's stack */

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
	uint8_t state_kind;      /* URA__A_* (actor/) */
	uint8_t stopping;        /* ura_stop() called in this turn (actor/) */
	uint8_t became;          /* become in this turn: re-deliver stash (actor/) */
	uint8_t inline_state : 1;  /* state lives in `inl` (actor/) */
	uint8_t snap_ph : 1;       /* phase parity it was captured in (core/phase.h) */
	uint8_t tomb : 1;          /* stopped: `inl` holds its exit reason (actor/signal.h) */
	uint8_t bp_slot : 1;       /* was ever bounded: inl's bytes 4-7 are its
	                              mailbox's count, for good (below) */
	_Atomic uint16_t last_worker; /* where it last ran (ura_actor_worker) */
	/* The node it lives on (placement). Written at spawn by the token
	 * holder, read by senders that do not hold the token (routing):
	 * relaxed, since a read that races a respawn of the slot only
	 * misroutes a message the generation check turns into a dead letter. */
	_Atomic uint16_t home_node;
	const ura_class *cls;        /* actor/ */
	/* States up to this size live here: no second allocation, and an
	 * idle actor with a small state fits in two cache lines. Aligned as
	 * malloc aligns (max_align_t), so any state type fits. A slot
	 * that was ever bounded keeps 16 bytes of it (URA__BP_INL). */
	_Alignas(16) unsigned char inl[40];
	const ura_behavior *beh;     /* actor/ */
	void *state;                 /* `inl`, or a heap block for big states */
	struct ura__actor *link;     /* run-queue overflow or inject queue */
	union {
		/* Free: the free-slot list (a separate link: a free slot
		 * can still be scheduled by a stale send, see
		 * ura__actor_turn). */
		struct ura__actor *free_link;
		/* Alive: one active link's partner (its ref's id), 0 for
		 * none (actor/signal.c). Most linked actors have one link,
		 * and keep it here with no side record. Token holder. */
		uint64_t link1;
	};
	struct ura__actor_x *x;      /* what few actors use; NULL until then */
};

/* The parts of an actor most never use, allocated on first use
 * (ura__actor_x) and freed when it stops (ura__actor_x_free): the slot
 * stays at 128 bytes (bench/actor_creation's bytes per idle actor). Each
 * field belongs to the layer named beside it. */
struct ura__actor_x {
	ura_value bound;                    /* actor/: ura_become_bound */
	struct ura_msg *stash, *stash_tail; /* actor/: stashed, oldest first */
	struct ura__pending *pending;       /* actor/: requests awaiting replies */
	int64_t rt;                         /* actor/: pending receive timeout, or 0 */
	uint32_t next_req;                  /* actor/ */
	uint32_t rt_seq;                    /* actor/: receive-timeout generation */
	struct ura__ids *timers;            /* time/: delayed sends it armed */
	struct ura__ids *io;                /* io/: operations in flight */
	struct ura__sig *sig;               /* actor/: links, monitors, promises, its
	                                       exit reason; freed by actor/ before
	                                       the record (ura__sig_free) */
	struct ura__fiber *fib;             /* actor/fiber.h: a context-switching
	                                       actor's stack; freed by actor/ before
	                                       the record (ura__fiber_free) */
	uint32_t tail;                      /* bytes after the record, in its block
	                                       (ura__actor_x_new_tail), 0 for none */
};

/* Where a tail starts in the record's block (ura__actor_x_tail). */
#define URA__X_HEAD ((sizeof(struct ura__actor_x) + 15) & ~(size_t)15)

_Static_assert(sizeof(struct ura__actor) == 128, "an idle actor is 128 bytes");
_Static_assert(offsetof(struct ura__actor, inl) % 16 == 0, "inline state aligned as malloc's");

/*
 * The count of a bounded mailbox (core/bound.h) lives in the slot of
 * every incarnation once one was bounded (bp_slot), in inl's bytes 4-7:
 * in the line whose mailbox head every sender exchanges anyway, so a
 * sender's admission and its push take one contended line, not two
 * (bench/README.md, "The count in the mailbox's line"). A stale sender
 * may still count there after the slot's incarnation changed, so nothing
 * else ever writes those bytes of such a slot: its inline states start at
 * URA__BP_INL, a tombstone leaves its pad_ alone (actor/signal.h).
 */
#define URA__BP_DEPTH 4u
#define URA__BP_INL 16u /* after the count, aligned as malloc aligns */
_Static_assert(offsetof(struct ura__actor, inl) + URA__BP_DEPTH + 4 <= 64 &&
		       offsetof(struct ura__actor, mb) == 0,
	       "a bounded mailbox's count shares the line of its head");
static inline _Atomic uint32_t *ura__bp_depth(struct ura__actor *a)
{
	return (_Atomic uint32_t *)(void *)(a->inl + URA__BP_DEPTH);
}

/* home_node's top bits (core/bound.h): the actor's mailbox is bounded;
 * the actor is muted (on a full mailbox); its class asked for its mailbox
 * wait (URA_CLASS_METRICS_WAIT), so sends sample it (core/metrics.h: the
 * send path tests one word for both). Nodes fit in the rest. */
#define URA__HOME_BOUNDED 0x8000u
#define URA__HOME_MUTED 0x4000u
#define URA__HOME_METERED 0x2000u
#define URA__HOME_NODE 0x1fffu

static inline unsigned ura__home(struct ura__actor *a)
{
	return atomic_load_explicit(&a->home_node, memory_order_relaxed) & URA__HOME_NODE;
}

/* Slots come in chunks; chunk pointers never move. A chunk starts on a
 * multiple of the slot's size, so a slot is exactly two whole lines (and
 * one pair of the adjacent-line prefetcher's), shared with no other. */
#define URA__SLOT_ALIGN 128u
_Static_assert(sizeof(struct ura__actor) == URA__SLOT_ALIGN,
	       "a slot is two cache lines; its chunks are aligned to it");
#define URA__CHUNK_SHIFT 10
#define URA__CHUNK (1u << URA__CHUNK_SHIFT)
#define URA__MAX_CHUNKS (1u << 16) /* 64 Mi actor slots */
/* A slot's idx (and a ref's low word) is the system's tag (1..63) above
 * the table index, so a ref of another system finds no actor here. */
#define URA__IDX_BITS URA__REF_INDEX_BITS
#define URA__IDX_MASK URA__REF_INDEX_MASK
#define URA__TAGS 63u
_Static_assert((uint64_t)URA__MAX_CHUNKS * URA__CHUNK <= (1ull << URA__IDX_BITS),
	       "table indices fit below the tag");

static inline ura_ref ura__ref_make(uint32_t idx, uint32_t gen)
{
	ura_ref r = { ((uint64_t)gen << 32) | idx };
	return r;
}
static inline uint32_t ura__ref_idx(ura_ref r) { return (uint32_t)r.id; }
/* The table index alone, for logs (without the system tag). */
static inline uint32_t ura__idx_no(uint32_t idx) { return idx & URA__IDX_MASK; }
static inline uint32_t ura__ref_gen(ura_ref r) { return (uint32_t)(r.id >> 32); }

/* Token holder: the generation (it is the only writer, so relaxed is
 * exact) and the ref of the current incarnation. */
static inline uint32_t ura__own_gen(struct ura__actor *a)
{
	return atomic_load_explicit(&a->gen, memory_order_relaxed);
}
static inline ura_ref ura__self_ref(struct ura__actor *a)
{
	return ura__ref_make(a->idx, ura__own_gen(a));
}

#endif
