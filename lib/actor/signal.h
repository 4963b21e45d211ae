/* SPDX-License-Identifier: MIT */
/*
 * Links, monitors, exit reasons and open promises (actor/signal.c): the
 * actor layer's part of fault tolerance. The design, and why no DOWN or
 * EXIT is ever lost or delivered twice, is at the top of signal.c.
 */
#ifndef URA_ACTOR_SIGNAL_H
#define URA_ACTOR_SIGNAL_H

#include "actor/actor.h"

/* One entry of an actor's signal table. */
enum {
	URA__S_FREE = 0,
	URA__S_MON = 1,     /* a monitor it holds: k1 = monitor id, v = target ref */
	URA__S_WATCH = 2,   /* a monitor on it: k1 = watcher ref, k2 = monitor id */
	URA__S_LINK = 3,    /* a link: k1 = partner ref; v = 0 active, else the
	                       id of the unlink in progress */
	URA__S_PROMISE = 4, /* an open promise: k1 = requester ref, k2 = request id */
	URA__S_TOMB = 255,  /* deleted */
};

struct ura__sent {
	uint64_t k1, k2, v;
	uint32_t type;
	uint32_t aux;
};

#define URA__SIG_INLINE 4
#define URA__DEM_MAX 7

/* x->sig: made on first use (a monitor, a link, trap_exit, a promise, an
 * exit reason other than normal), freed when the actor stops; token
 * holder only, like every field of the slot. */
struct ura__sig {
	/* Open addressing over (type, k1, k2), linear probing: `tab` is
	 * `inl` until it outgrows URA__SIG_INLINE entries. */
	struct ura__sent *tab;
	uint32_t cap, n, used;  /* slots, live entries, live + deleted */
	uint8_t trap;           /* ura_trap_exit */
	uint8_t has_reason;     /* reason/value set: a zombie's (ura__sig_keep_reason) */
	uint8_t dem_n;          /* demonitors not yet told to dem_to */
	uint64_t next_mon;      /* monitor ids: 1, 2, ... per incarnation */
	uint64_t next_unlink;   /* unlink ids */
	ura_atom reason;        /* the exit reason, when has_reason */
	ura_value value;        /* its value; strings and bytes: a heap copy */
	struct ura__sent inl[URA__SIG_INLINE];
	/* Demonitors of one target, told in one DEMONITOR at the end of the
	 * turn (or when the target changes or this is full): see 3. in
	 * signal.c. Fills the record's pool block (256 bytes). */
	ura_ref dem_to;
	uint64_t dem_ids[URA__DEM_MAX];
};
_Static_assert(sizeof(struct ura__sig) <= 256, "a signal record is one 256-byte pool block");

/* The exit reason of a stopped incarnation, kept in its slot's `inl`
 * (free once the state is gone) until the slot is reused: a request, a
 * monitor or a link that reaches the slot late still learns the real
 * reason (see "late signals" in signal.c). a->tomb says it is there. */
struct ura__tomb {
	uint32_t gen;           /* the incarnation's generation */
	uint32_t pad_;          /* never written: maybe a mailbox's count (core/slot.h) */
	ura_atom reason;
	ura_value value;        /* strings and bytes: a heap copy, owned */
};
_Static_assert(sizeof(struct ura__tomb) <= sizeof(((struct ura__actor *)0)->inl),
	       "a tombstone fits the inline state");
_Static_assert(offsetof(struct ura__tomb, pad_) == URA__BP_DEPTH,
	       "a tombstone leaves a bounded mailbox's count alone");

/* Whether s lives in its side record's block, after the record (made
 * so by ura__sig_of): it goes with the record, not on its own. */
static inline int ura__sig_in_x(struct ura__actor_x *x, const struct ura__sig *s)
{
	return x->tail >= sizeof *s && (const void *)s == ura__actor_x_tail(x);
}

/* The signal record, made on first use; NULL without memory. Token. */
struct ura__sig *ura__sig_of(struct ura__worker *w, struct ura__actor *a);
/* Frees the record (the actor's stop, a failed spawn, destroy). */
void ura__sig_free(struct ura__worker *w, struct ura__actor *a);
/* Table: the entry of (type, k1, k2) or NULL; add one (-ENOMEM); delete. */
struct ura__sent *ura__sig_find(struct ura__sig *s, uint32_t type, uint64_t k1, uint64_t k2);
int ura__sig_add(struct ura__sig *s, uint32_t type, uint64_t k1, uint64_t k2, uint64_t v);
void ura__sig_del(struct ura__sig *s, struct ura__sent *e);

/* Whether a reason's value (or its copy) has a heap part. */
static inline int ura__value_owns(ura_value v)
{
	return v.type == URA_T_STR || v.type == URA_T_BYTES;
}

/* A turn's exit reason (struct ura__why, in its ctx): set (value
 * copied; -ENOMEM), cleared (back to normal), read. */
int ura__why_set_slow(struct ura__why *y, ura_atom reason, ura_value value);
void ura__why_clear(struct ura__why *y);
static inline int ura__why_set(struct ura__why *y, ura_atom reason, ura_value value)
{
	/* Inline: most reasons are an atom alone, replacing none. */
	if (value.type || y->set)
		return ura__why_set_slow(y, reason, value);
	y->reason = reason;
	memset(&y->value, 0, sizeof y->value);
	y->set = 1;
	return 0;
}
static inline void ura__why_get(const struct ura__why *y, ura_atom *reason, ura_value *value)
{
	if (y->set) {
		*reason = y->reason;
		*value = y->value;
		return;
	}
	*reason = URA_NORMAL;
	memset(value, 0, sizeof *value);
}
/* A zombie's reason (a stop that waits for its I/O, ura__die) goes into
 * its record for the dead letters and the burial to come; y is emptied. */
void ura__sig_keep_reason(struct ura__worker *w, struct ura__actor *a, struct ura__why *y);
/* A zombie's exit reason, kept in its record: normal unless set. */
static inline void ura__sig_reason(struct ura__actor *a, ura_atom *reason, ura_value *value)
{
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	if (s && s->has_reason) {
		*reason = s->reason;
		*value = s->value;
		return;
	}
	*reason = URA_NORMAL;
	memset(value, 0, sizeof *value);
}

/* The stop (from ura__die, token held, after the generation moved on):
 * a DOWN to every watcher, an exit signal to every link, a demonitor
 * for every monitor it held, URA_ERROR for every open promise; then the
 * tables go. `self` is the stopped incarnation's ref. */
void ura__sig_stop_walk(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			ura_ref self, ura_atom reason, ura_value value);
static inline void ura__sig_stop(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
				 ura_ref self, const struct ura__why *r)
{
	/* Inline: most stops have no link, no record, or an empty one (a
	 * link's survivor, whose exit signal took the entry), and pay no
	 * call. */
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	if (a->link1 || (s && (s->n || s->dem_n)))
		ura__sig_stop_walk(sys, w, a, self, r->reason, r->value);
}
/* The burial: the exit reason (y's, moved; NULL: the record's, for a
 * zombie) into the slot's tombstone if it is not a plain normal, and the
 * record freed. */
void ura__sig_bury_slow(struct ura__worker *w, struct ura__actor *a, struct ura__why *y);
static inline void ura__sig_bury(struct ura__worker *w, struct ura__actor *a, struct ura__why *y)
{
	/* Inline: most stops have neither a reason nor a record. */
	if ((y && y->set) || (a->x && a->x->sig))
		ura__sig_bury_slow(w, a, y);
}
/* Sends the DEMONITOR the actor's demonitors of this turn wait for (from
 * `self`), if any. Token; on a worker. The end of a turn, of a spawn's
 * init, a stop. */
void ura__sig_dem_flush(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			ura_ref self);
static inline int ura__sig_dem_pending(const struct ura__actor *a)
{
	return a->x && a->x->sig && a->x->sig->dem_n;
}
/* Frees a slot's tombstone (its reuse, destroy). */
void ura__tomb_free_value(struct ura__actor *a);
static inline void ura__tomb_free(struct ura__actor *a)
{
	/* Most slots have none, and most reasons are an atom alone: no
	 * call but for a string's or bytes' copy. */
	if (a->tomb) {
		const struct ura__tomb *t = (const struct ura__tomb *)(const void *)a->inl;
		if (ura__value_owns(t->value))
			ura__tomb_free_value(a);
		a->tomb = 0;
	}
}

/* A signal (kind MONITOR .. DOWN) reached a live actor in a turn: acted
 * on here (NULL), or a message for the behavior to match: m itself (a
 * DOWN of a monitor still held; m->kind is PLAIN then), or, for a
 * trapped EXIT, a new PLAIN message of w's pool in the documented form
 * URA_EXIT(who, reason[, value]), which the caller owns (frees or
 * stashes once matched) while m stays the mailbox's node. An exit signal
 * travels without `who` (its sender: m->from), so the common one, a
 * reason without a value, is a 64-byte block; only an actor that traps
 * pays for the longer form (bench/README.md, 2026-12-04). */
struct ura_msg *ura__sig_recv(ura_ctx *cx, struct ura_msg *m);
/* A message reached an incarnation that had stopped (a dead letter):
 * answers what expects an answer (a request, a monitor, a link, an
 * unlink) with the stopped one's exit reason. Token holder, on a worker. */
void ura__sig_dead_letter(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m);

/* Sends a runtime signal from `from` (an actor of w's, or URA_NOREF),
 * routed from node `home`: the post path, counted, in per-pair order.
 * Errors are the send's (-ESRCH for a target gone). */
int ura__sig_send(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		  ura_ref to, ura_atom tag, const ura_value *vals, unsigned n, uint8_t kind,
		  uint32_t req);
/* The route for a signal about an actor that is gone, to actor `to`
 * (see "noproc order" in signal.c). */
unsigned ura__sig_late_home(ura_system *sys, struct ura__worker *w, ura_ref to,
			    unsigned home);
/* URA_ERROR(reason[, value]) for request `req` of `requester`, from
 * `from`. */
int ura__request_fail(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		      ura_ref requester, uint32_t req, ura_atom reason, ura_value value);
/* A request message that will never be handled (stashed when its actor
 * stopped, dropped): answered with URA_ERROR(reason). */
void ura__request_orphan(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			 struct ura_msg *m, ura_atom reason, ura_value value);

/* The values of an exit reason, for a message: (.., atom reason[, value]);
 * returns how many it wrote at v (1 or 2). */
static inline unsigned ura__reason_vals(ura_value *v, ura_atom reason, ura_value value)
{
	v[0] = ura_v_atom(reason);
	if (!value.type)
		return 1;
	v[1] = value;
	return 2;
}

#endif
