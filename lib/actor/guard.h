/* SPDX-License-Identifier: MIT */
/*
 * What actor.c and guard.c ask of each other: checking and copying the
 * guards of cases (guard.c), and matching one case (actor.c), which loops
 * reuse so that they match exactly as dispatch does, and the actor's
 * state for URA_G_FIELD.
 */
#ifndef URA_ACTOR_GUARD_H
#define URA_ACTOR_GUARD_H

#include "msg/msg.h"

/* 0, or -EINVAL when c's guard is a guard expression (or a loop) that
 * does not fit c's signature. Other guards are opaque: 0. */
int ura__guard_check_case(const ura_case *c);
/* Bytes (a multiple of 16) that a copy of c's guard expression needs;
 * 0 when c has none. c must have passed ura__guard_check_case. */
size_t ura__guard_case_size(const ura_case *c);
/* Copies c's guard expression into mem (ura__guard_case_size bytes,
 * 8-aligned), re-points c->guard_arg at the copy and returns the bytes
 * used. */
size_t ura__guard_case_copy(ura_case *c, void *mem);

/* actor.c: does case c take message m (tag, signature, guard)? */
int ura__case_matches(const ura_case *c, ura_ctx *cx, const struct ura_msg *m);
/* actor.c: the actor's state and its size (0 without state), so that a
 * URA_G_FIELD read past the end of the state fails instead of reading on. */
void *ura__state_bytes(ura_ctx *cx, size_t *size);

#endif
