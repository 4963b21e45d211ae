/* SPDX-License-Identifier: MIT */
/* Scoped actors (actor/scoped.c): the proxy's behavior, which the turn
 * hands the answers to the handle's requests (no continuation waits for
 * them on the proxy). */
#ifndef URA_ACTOR_SCOPED_H
#define URA_ACTOR_SCOPED_H

#include "actor/actor.h"

extern const ura_behavior ura__scoped_beh;

#endif
