/* SPDX-License-Identifier: MIT */
/*
 * Context-switching actors (ura.h's "Context-switching actors"): the
 * actor layer's interface to them. fiber.c owns the stacks (a per-system
 * pool of guarded, lazily committed mappings), the switch into and out of
 * a body (switch.S), the blocking receive and ura_io_call, and the
 * overflow handler.
 *
 * How a body runs: the actor's turn (ura__actor_turn) hands a
 * context-switching actor to ura__fiber_turn, which switches to its stack;
 * the body runs until a receive finds nothing to take (the fiber switches
 * back: the turn gives the token up, as any turn does, and the next
 * message schedules the actor again; or, when the worker would run a
 * waiting body from its next slot at once, the fiber switches to that one
 * directly, which ends the first one's turn: fiber.c's handoff), until it
 * has taken a batch of messages (back of the run queue, like a turn that
 * used its batch), or until it ends or is stopped (the turn, back on the
 * worker's own stack, kills it: its stack is never freed while running on
 * it). The actor is only ever switched into by the holder of its token,
 * so every field of the fiber is the token holder's, like the rest of the
 * slot (a handoff passes the worker, and with it the token of the body
 * switched to, from one body to the next; the first body's token is given
 * up by the second, once off its stack).
 */
#ifndef URA_ACTOR_FIBER_H
#define URA_ACTOR_FIBER_H

#include "actor/actor.h"

/* The behavior of a context-switching actor whose class has none. */
extern const ura_behavior ura__fiber_nobeh;

/* Checks a class's body fields: 0, or -EINVAL. */
int ura__fiber_class_ok(const ura_class *cls);
/* Gives a (just incarnated) actor of a class with a body its stack:
 * 0, or -ENOMEM. */
int ura__fiber_new(ura_system *sys, struct ura__actor *a);
/* Runs a context-switching actor's body until it waits (w holds the
 * token; a is alive and has a fiber). */
void ura__fiber_turn(struct ura__worker *w, struct ura__actor *a);
/* The actor is buried (or reclaimed at destroy): its stack goes back to
 * the pool. Never on that stack. */
void ura__fiber_free(ura_system *sys, struct ura__actor *a);
/* System destroy: the pool's stacks are unmapped. */
void ura__fibers_fini(ura_system *sys);
/* For ura_system_stats. */
void ura__fibers_stats(ura_system *sys, uint64_t *live, uint64_t *mapped, uint64_t *pooled);

static inline int ura__is_fiber(const struct ura__actor *a)
{
	return a->x && a->x->fib;
}

#endif
