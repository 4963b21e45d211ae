/* SPDX-License-Identifier: MIT */
/*
 * The actor layer's internal interface: lifecycle (actor/lifecycle.c),
 * the turn and dispatch (turn.c), behaviors (behavior.c), requests
 * (request.c). Handlers see all of it through ura.h's calls.
 */
#ifndef URA_ACTOR_H
#define URA_ACTOR_H

#include <string.h>

#include "core/core.h"

/* A pending request's continuation (request/response): a pool block of
 * offsetof(payload) + len bytes. */
struct ura__pending {
	struct ura__pending *next;
	ura_handler *cont;
	void *data;
	int64_t timer;  /* the reply's deadline (ura_timer), 0 if none */
	uint32_t id;
	uint16_t len;   /* payload bytes (ura_request_opts.payload) */
	uint8_t chained; /* cont answers `chain` (ura_request_opts.chain) */
	uint8_t pad_;
	ura_promise chain;
	_Alignas(16) unsigned char payload[];
};

/* Does case c take message m: tag, signature, guard? Inline: dispatch
 * runs it for every case it tries, and loops (URA_BEHAVIOR_UNTIL) match
 * exactly as dispatch does. */
static inline int ura__case_matches(const ura_case *c, ura_ctx *cx, const struct ura_msg *m)
{
	if (c->tag && c->tag != m->tag)
		return 0;
	uint64_t s = c->sig_;
	if (ura__likely(s & URA__SIG_TYPED)) {
		if (ura__unlikely(s & URA__SIG_LONG)) {
			if (m->sig != URA__SIG_LONG || strcmp(c->types, ura__msg_types(m)))
				return 0;
		} else if ((s & ~URA__SIG_TYPED) != m->sig) {
			return 0;
		}
	} else if (c->types && strcmp(c->types, ura__msg_types(m))) {
		return 0; /* a case written without URA_ON */
	}
	return !c->guard || c->guard(cx, m, c->guard_arg);
}

/* lifecycle.c */
/* Ends the incarnation (token held): timers, requests, stash, I/O; then
 * buries it, or leaves a zombie while its I/O is in flight. why: the
 * exit reason of the turn that stops it (its ctx's, taken over and left
 * empty), or NULL for normal. */
void ura__die(ura_system *sys, struct ura__worker *w, struct ura__actor *a, int call_destroy,
	      struct ura__why *why);
/* The incarnation's last act: destroy callback, memory, counters, slot.
 * why: its exit reason (moved into the tombstone), or NULL: a zombie's,
 * from its record. */
void ura__bury(ura_system *sys, struct ura__worker *w, struct ura__actor *a, int call_destroy,
	       struct ura__why *why);
/* Frees what a slot still holds at system destroy; returns the number of
 * messages that were never handled. */
uint64_t ura__actor_reclaim(ura_system *sys, struct ura__actor *a);
/* For lib/snap/restore.c: an actor made from a snapshot record (zeroed
 * state, no init), returned with its token held; then either done
 * (receive timeout re-armed if rt, token given up) or aborted (stopped,
 * destroy callback if it was filled in). */
struct ura__actor *ura__actor_restore_new(ura_system *sys, const ura_class *cls,
					  unsigned node, ura_ref *out);
void ura__actor_restore_done(ura_system *sys, struct ura__actor *a, int rt);
void ura__actor_restore_abort(ura_system *sys, struct ura__actor *a, int call_destroy);

/* turn.c */
/* Runs a's turn on w: up to a batch of messages (w holds a's token). */
void ura__actor_turn(struct ura__worker *w, struct ura__actor *a);
/* (Re)arms the receive timeout of a's current behavior. */
void ura__rt_rearm(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* Appends m to a's stash (oldest first); 0 or -ENOMEM (no side record).
 * Token holder. */
int ura__actor_stash_append(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m);

/* behavior.c: 0 when b passes ura_behavior_check (remembered, so a
 * behavior is checked once), else -EINVAL. */
int ura__behavior_ok(const ura_behavior *b);

/* request.c */
/* A reply or a request's deadline reached a: runs the continuation and
 * returns 1, or returns 0 (no pending request of that id). */
int ura__request_done(ura_ctx *cx, struct ura_msg *m);
/* The actor stops: its pending requests are dropped, deadlines cancelled. */
void ura__requests_drop(ura_system *sys, struct ura__worker *w, struct ura__actor *a);
/* After a handler ran for the current request (cx->req_open) without
 * answering it: answers it with URA_ERROR (noreply, unmatched when no
 * case matched, or the exit reason when the handler stops the actor),
 * unless m was stashed. m: the request message; NULL for a chained
 * promise's continuation. */
void ura__request_settle(ura_ctx *cx, struct ura_msg *m, int matched);

/* registry.c: the system's name registry (system new and destroy). */
int ura__names_init(ura_system *sys);
void ura__names_fini(ura_system *sys);
/* Every live name (snapshots): fn per name, with the registry locked. */
void ura__names_each(ura_system *sys, void (*fn)(void *ud, ura_atom name, ura_ref who),
		     void *ud);

#endif
