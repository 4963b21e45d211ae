/* SPDX-License-Identifier: MIT */
/*
 * An idle system makes no wakeups: once every worker sleeps with nothing
 * pending, none wakes again until there is work (the 50 ms backstop made
 * each worker wake 20 times a second; issue 14). And work that arrives
 * after a long sleep is still served: every kind of source wakes a
 * sleeping worker (lib/runtime/worker.c says why none can be lost).
 * And a periodic timer wakes no idle peer: its worker, busy for a moment
 * each period, sets its alarm rather than waking the sleeper that would
 * fire its deadline should the turn run long (time/timers.c, watch_due),
 * and the message it fires, between turns, runs there next and wakes no
 * watcher (core/sched.c, ura__schedule); each period woke the peer.
 */
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_HI URA_ATOM("hi")
#define A_LATER URA_ATOM("later")
#define A_TICK URA_ATOM("tick")
#define TICKS 40
static atomic_int g_hi, g_later, g_ticks;
static void on_hi(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; atomic_fetch_add(&g_hi, 1); }
static void on_later(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_later, 1);
}
static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	int64_t left = ura_arg_i64(m, 0);
	atomic_fetch_add(&g_ticks, 1);
	if (left > 1 && ura_send_after(cx, ura_self(cx), 5 * URA_MSEC, A_TICK, left - 1) < 0)
		ura_stop(cx); /* counted short: the test fails */
}
URA_BEHAVIOR(hi_beh, URA_ON(A_HI, "", on_hi), URA_ON(A_LATER, "", on_later),
	     URA_ON(A_TICK, "i", on_tick));
static const ura_class hi_class = { .name = "hi", .initial = &hi_beh };

static uint64_t sleeps(ura_system *sys)
{
	ura_stats st;
	ura_system_stats(sys, &st);
	return st.sleeps;
}

/* Every worker asleep (they spin for a while after the last work). */
static void settle(void) { usleep(100 * 1000); }

int main(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &hi_class, NULL, &r));
	t_must(ura_send(sys, r, A_HI));
	t_rc(ura_system_await(sys), 0, "await");
	settle();
	/* No backstop on either backend: no wakeups at all. */
	ura_stats st;
	ura_system_stats(sys, &st);
	uint64_t s0 = sleeps(sys);
	usleep(2500 * 1000);
	uint64_t s1 = sleeps(sys);
	t_ok(s1 == s0, "idle for 2.5 s: %llu wakeups on %s (%llu sleeps before)",
	     (unsigned long long)(s1 - s0), st.backend, (unsigned long long)s0);
	/* Each source still wakes a sleeper: a send from outside, a delayed
	 * send armed from outside, one armed by a handler. */
	t_must(ura_send(sys, r, A_HI));
	t_rc(await_guarded(sys), 0, "a send after a long sleep is served");
	t_eq(atomic_load(&g_hi), 2, "both sends handled");
	settle();
	t_ok(ura_send_after(sys, r, 50 * URA_MSEC, A_LATER) > 0, "a delayed send from outside");
	t_rc(await_guarded(sys), 0, "and it fires while the workers sleep");
	t_eq(atomic_load(&g_later), 1, "it was handled");
	settle();
	s0 = sleeps(sys);
	usleep(300 * 1000);
	t_ok(sleeps(sys) - s0 == 0, "idle again: no wakeups");
	/* A timer re-armed every 5 ms: the wakes the workers send. Before,
	 * one a period; a few may come from elsewhere (a run queue's
	 * wake), so the bound is a quarter. */
	ura_system_stats(sys, &st);
	uint64_t w0 = st.wakeups, a0 = st.alarm_wakes, as0 = st.alarm_sets;
	t_must(ura_send(sys, r, A_TICK, (int64_t)TICKS));
	t_rc(await_guarded(sys), 0, "a periodic timer ticks %d times", TICKS);
	t_eq(atomic_load(&g_ticks), TICKS, "every tick handled");
	ura_system_stats(sys, &st);
	t_ok(st.wakeups - w0 <= TICKS / 4, "a periodic timer: %llu wakes sent in %d periods",
	     (unsigned long long)(st.wakeups - w0), TICKS);
	/* What spares the wake is the alarm (time/timers.c, watch_due): the
	 * re-arm sets it, since the peer sleeps past the next deadline. It
	 * fires, waking the peer, only if the owner is late by the grace
	 * (100 us), which a loaded or sanitized run often is: counted, not
	 * bounded. The deterministic build (URA_SEED) has no alarm. */
	t_diag("a periodic timer: %llu alarm sets, %llu alarm wakes",
	       (unsigned long long)(st.alarm_sets - as0), (unsigned long long)(st.alarm_wakes - a0));
	if (getenv("URA_SEED"))
		t_ok(1, "a periodic timer: no alarm in the deterministic build");
	else
		t_ok(st.alarm_sets - as0 > 0, "a periodic timer: the re-arms set the alarm");
	t_destroy(sys);
	return t_done();
}
