/* SPDX-License-Identifier: MIT */
/* Delayed sends an actor owns (time/delay.c): time/ alone keeps the
 * actor's list of them (ura__actor_x.timers). */
#ifndef URA_TIME_DELAY_H
#define URA_TIME_DELAY_H

#include "time/timers.h"

/* Token holder: h belongs to a (cancelled when it stops). 0 or -ENOMEM:
 * without memory it still fires, it just is not cancelled at the stop. */
int ura__timer_own(ura_system *sys, struct ura__actor *a, ura_timer h);
/* Token holder, a stops: cancels every delayed send it armed. */
void ura__timers_cancel_owned(ura_system *sys, struct ura__worker *w, struct ura__actor *a);

#endif
