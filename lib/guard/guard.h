/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions (ura/guard.h), as the layers above use them: the
 * actor layer checks and copies its cases' guards (lib/actor/behavior.c)
 * and dispatch evaluates them through ura_guard_eval. Guards read the
 * handler's message and, for URA_G_FIELD and URA_G_BOUND, the actor's
 * state and bound value (core's ura_ctx), nothing else.
 */
#ifndef URA_GUARD_H_INT
#define URA_GUARD_H_INT

#include "core/core.h"

/* Bytes (a multiple of 16) that a copy of c's guard expression needs;
 * 0 when c has none. c's guard must have passed ura_guard_check. */
size_t ura__guard_case_size(const ura_case *c);
/* Copies c's guard expression into mem (ura__guard_case_size bytes,
 * 8-aligned), re-points c->guard_arg at the copy and returns the bytes
 * used. */
size_t ura__guard_case_copy(ura_case *c, void *mem);

#endif
