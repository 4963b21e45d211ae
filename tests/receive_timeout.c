/* SPDX-License-Identifier: MIT */
/*
 * Receive timeouts (ura_behavior.timeout_ns / on_timeout, libcppa's
 * after()):
 *  1. an idle actor's on_timeout runs, with a URA_TIMEOUT message, no
 *     sooner than timeout_ns after the spawn;
 *  2. it does not run while matching messages keep coming faster than the
 *     timeout (every 2 ms for 200 ms), and runs once after they stop;
 *  3. messages that match no case do not put it off;
 *  4. a become re-arms it: becoming a behavior without a timeout cancels
 *     it (it never fires), becoming one with another timeout arms that;
 *  5. left in place, it fires again each timeout_ns while idle;
 *  6. an actor that stops takes its pending timeout with it.
 * Where ordering matters the system has one worker and the feed is armed
 * as timers on the same wheel, so the checks hold however late the
 * worker runs: they are about order, not about speed. The feed is armed
 * before the worker starts, or from the actor's own turn, so they hold
 * however late this thread runs too.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "tap.h"

#define A_PING URA_ATOM("ping")
#define A_TICK URA_ATOM("tick")
#define A_JUNK URA_ATOM("junk")
#define A_SWITCH URA_ATOM("switch")
#define A_STOP URA_ATOM("stop")

#define TIMEOUT (20 * URA_MSEC)

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / URA_SEC), (long)(ns % URA_SEC) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* What the handlers saw; reset per test. */
static _Atomic long g_fired;          /* on_timeout runs */
static _Atomic long g_fired_other;    /* on_timeout of a behavior that must not fire */
static _Atomic long g_bad_tag;        /* timeout message not URA_TIMEOUT(), no values */
static _Atomic uint64_t g_fire_at[8]; /* when on_timeout ran */
static _Atomic long g_ticks;          /* matching messages handled */
static _Atomic uint64_t g_last_tick_at;
static _Atomic long g_fired_during_feed; /* on_timeout while ticks were still due */
static _Atomic long g_after;          /* messages the quiet behavior got */
static _Atomic uint64_t g_switch_at;
static _Atomic long g_arm_failed;     /* delayed sends a handler could not arm */

static void reset(void)
{
	atomic_store(&g_fired, 0);
	atomic_store(&g_fired_other, 0);
	atomic_store(&g_bad_tag, 0);
	for (int i = 0; i < 8; i++)
		atomic_store(&g_fire_at[i], 0);
	atomic_store(&g_ticks, 0);
	atomic_store(&g_last_tick_at, 0);
	atomic_store(&g_fired_during_feed, 0);
	atomic_store(&g_after, 0);
	atomic_store(&g_switch_at, 0);
	atomic_store(&g_arm_failed, 0);
}

static void check_tag(const ura_msg *m)
{
	if (ura_msg_tag(m) != URA_TIMEOUT || ura_msg_count(m) != 0)
		atomic_fetch_add(&g_bad_tag, 1);
}

static long record_fire(const ura_msg *m)
{
	check_tag(m);
	long k = atomic_fetch_add(&g_fired, 1);
	if (k < 8)
		atomic_store(&g_fire_at[k], t_now_ns());
	return k + 1;
}

static void do_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

/* No timeout: where an actor goes after its timeout fired. Counts what
 * it gets afterwards. */
static void quiet_any(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_after, 1);
}
URA_BEHAVIOR(quiet,
	URA_ON(A_STOP, "", do_stop),
	URA_ON_ANY(0, quiet_any));

/* ---- 1. idle ----------------------------------------------------------- */

static void idle_timeout(ura_ctx *cx, const ura_msg *m)
{
	record_fire(m);
	ura_become(cx, &quiet);
}
static void idle_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR_OPTS(idle_beh, (.timeout_ns = TIMEOUT, .on_timeout = idle_timeout),
	URA_ON(A_PING, "", idle_ping));
static const ura_class idle_class = { .name = "idle", .initial = &idle_beh };

static void test_idle(void)
{
	ura_system *sys = t_system(0);
	reset();
	ura_stats st0 = stats(sys);
	uint64_t t0 = t_now_ns();
	ura_ref a;
	t_must(ura_spawn(sys, &idle_class, NULL, &a));
	t_rc(await_guarded(sys), 0, "idle: await (returns once the timeout fired)");
	ura_stats st1 = stats(sys);
	t_eq(atomic_load(&g_fired), 1, "idle: on_timeout ran once");
	t_eq(atomic_load(&g_bad_tag), 0, "idle: its message is URA_TIMEOUT() with no values");
	uint64_t at = atomic_load(&g_fire_at[0]);
	t_ok(at >= t0 + TIMEOUT, "idle: not before timeout_ns (fired after %.2f ms)",
	     (double)(at - t0) / 1e6);
	t_diag("idle: on_timeout ran %.2f ms after the spawn (timeout 20 ms)", (double)(at - t0) / 1e6);
	t_ok(st1.timers_armed - st0.timers_armed >= 1, "idle: counted in stats.timers_armed");
	t_eq(st1.timers_fired - st0.timers_fired, 1, "idle: counted in stats.timers_fired");
	t_eq(st1.timers_pending, 0, "idle: none pending after the become");
	sleep_ns(3 * TIMEOUT);
	t_rc(await_guarded(sys), 0, "idle: await");
	t_eq(atomic_load(&g_fired), 1, "idle: no second timeout after becoming a behavior without one");
	t_destroy(sys);
}

/* ---- 2. fed faster than the timeout ------------------------------------ */

#define FEED_N 100
#define FEED_EVERY (2 * URA_MSEC)

static void fed_timeout(ura_ctx *cx, const ura_msg *m)
{
	if (atomic_load(&g_ticks) < FEED_N)
		atomic_fetch_add(&g_fired_during_feed, 1);
	record_fire(m);
	ura_become(cx, &quiet);
}
static void fed_tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_store(&g_last_tick_at, t_now_ns());
	atomic_fetch_add(&g_ticks, 1);
}
URA_BEHAVIOR_OPTS(fed_beh, (.timeout_ns = TIMEOUT, .on_timeout = fed_timeout),
	URA_ON(A_TICK, "i", fed_tick));
/* Until the first tick, no timeout: the window starts there, however
 * long this thread took to arm the feed after the spawn. */
static void fed_first(ura_ctx *cx, const ura_msg *m)
{
	fed_tick(cx, m);
	ura_become(cx, &fed_beh);
}
URA_BEHAVIOR(fed_wait, URA_ON(A_TICK, "i", fed_first));
static const ura_class fed_class = { .name = "fed", .initial = &fed_wait };

/* Arms the feed at absolute deadlines base + k * every: a late arm call
 * cannot open a gap in it. Returns how many arms failed. */
static int feed(ura_system *sys, ura_ref to, ura_atom tag, int n, uint64_t every)
{
	uint64_t base = t_now_ns() + 2 * URA_MSEC;
	int bad = 0;
	for (int k = 1; k <= n; k++) {
		uint64_t due = base + (uint64_t)k * every, now = t_now_ns();
		ura_timer h = ura_send_after(sys, to, due > now ? due - now : 0, tag, k);
		bad += h <= 0;
	}
	return bad;
}

static void test_fed(void)
{
	/* Paused while the feed is armed: a running worker could handle a
	 * tick, and time out 20 ms later, while this thread, preempted in
	 * the middle of the feed, had not armed the next one yet. */
	ura_config cfg = { .workers = 1, .paused = 1 };
	ura_system *sys;
	t_must(ura_system_new(&sys, &cfg));
	reset();
	ura_ref a;
	t_must(ura_spawn(sys, &fed_class, NULL, &a));
	t_eq(feed(sys, a, A_TICK, FEED_N, FEED_EVERY), 0,
	     "fed: %d ticks armed every 2 ms over 200 ms", FEED_N);
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "fed: await");
	t_eq(atomic_load(&g_ticks), FEED_N, "fed: every tick handled");
	t_eq(atomic_load(&g_fired_during_feed), 0, "fed: no timeout while the ticks kept coming");
	t_eq(atomic_load(&g_fired), 1, "fed: one timeout after the last tick");
	t_eq(atomic_load(&g_bad_tag), 0, "fed: its message is URA_TIMEOUT()");
	uint64_t last = atomic_load(&g_last_tick_at), at = atomic_load(&g_fire_at[0]);
	t_ok(at >= last + TIMEOUT, "fed: the timeout came >= 20 ms after the last tick (%.2f ms)",
	     at > last ? (double)(at - last) / 1e6 : -(double)(last - at) / 1e6);
	t_ok(at < last + 2 * URA_SEC, "fed: and within 2 s of it");
	t_diag("fed: timeout %.2f ms after the last tick", at > last ? (double)(at - last) / 1e6 : 0.0);
	t_destroy(sys);
}

/* ---- 3. unmatched messages do not put it off ---------------------------- */

static void junk_timeout(ura_ctx *cx, const ura_msg *m)
{
	record_fire(m);
	ura_become(cx, &quiet);
}
URA_BEHAVIOR_OPTS(junk_beh, (.timeout_ns = TIMEOUT, .on_timeout = junk_timeout),
	URA_ON(A_PING, "", idle_ping));
#define JUNK_N 150
/* No timeout until a ping; its turn arms the junk, one every 2 ms over
 * 300 ms. The timeout is armed at the end of this turn, after the junk:
 * the first junk (due < 20 ms after its arm) comes before it and the last
 * after it, whenever the worker runs (one worker, one wheel). Each delay
 * counts from its own arm, so a stall in this loop moves only the later
 * junk, later still. (Armed from outside, the junk ran on this thread's
 * clock: preempted for the 300 ms, it had all come before the timeout.) */
static void junk_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &junk_beh);
	for (int k = 1; k <= JUNK_N; k++)
		if (ura_send_after(cx, ura_self(cx), (uint64_t)k * FEED_EVERY, A_JUNK, (int64_t)k) <= 0)
			atomic_fetch_add(&g_arm_failed, 1);
}
URA_BEHAVIOR(junk_wait, URA_ON(A_PING, "", junk_start));
static const ura_class junk_class = { .name = "junk", .initial = &junk_wait };

static void test_unmatched(void)
{
	ura_config cfg = { .workers = 1 };
	ura_system *sys;
	t_must(ura_system_new(&sys, &cfg));
	reset();
	ura_ref a;
	t_must(ura_spawn(sys, &junk_class, NULL, &a));
	ura_stats st0 = stats(sys);
	/* The ping arms 150 unmatched messages over 300 ms: the timeout
	 * (20 ms after the ping) comes in the middle of them, and the rest
	 * reach the quiet behavior. */
	t_must(ura_send(sys, a, A_PING));
	t_rc(await_guarded(sys), 0, "unmatched: await");
	ura_stats st1 = stats(sys);
	t_eq(atomic_load(&g_arm_failed), 0, "unmatched: %d junk messages armed", JUNK_N);
	t_eq(atomic_load(&g_fired), 1, "unmatched: the timeout fired once");
	long after = atomic_load(&g_after);
	t_ok(after > 0 && after < JUNK_N,
	     "unmatched: it fired while junk kept coming (%ld of %d came after it)", after, JUNK_N);
	t_eq((long)(st1.unmatched - st0.unmatched) + after, JUNK_N,
	     "unmatched: the junk before it was dropped as unmatched");
	t_destroy(sys);
}

/* ---- 4. become re-arms it ---------------------------------------------- */

static void a_timeout(ura_ctx *cx, const ura_msg *m)
{
	check_tag(m);
	atomic_fetch_add(&g_fired_other, 1);
	ura_become(cx, &quiet);
}
static void switch_to_quiet(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_switch_at, t_now_ns());
	ura_become(cx, &quiet);
}
/* 30 s, not TIMEOUT: case a. counts the cancel, which only a timer that
 * has not expired yet can have. The switch is handled first (below), but
 * a worker that starts more than 20 ms after the spawn (a loaded machine:
 * seen once beside two CPU hogs) fires a 20 ms timer on its first pass,
 * before its first turn; the timeout message then arrives stale behind
 * the switch and is dropped, and nothing is left to cancel. */
URA_BEHAVIOR_OPTS(a_to_quiet, (.timeout_ns = 30 * URA_SEC, .on_timeout = a_timeout),
	URA_ON(A_SWITCH, "", switch_to_quiet));
static const ura_class a_quiet_class = { .name = "a_quiet", .initial = &a_to_quiet };

static void c_timeout(ura_ctx *cx, const ura_msg *m)
{
	record_fire(m);
	ura_become(cx, &quiet);
}
URA_BEHAVIOR_OPTS(c_beh, (.timeout_ns = 3 * TIMEOUT, .on_timeout = c_timeout),
	URA_ON(A_PING, "", idle_ping));
static void switch_to_c(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_switch_at, t_now_ns());
	ura_become(cx, &c_beh);
}
URA_BEHAVIOR_OPTS(a_to_c, (.timeout_ns = TIMEOUT, .on_timeout = a_timeout),
	URA_ON(A_SWITCH, "", switch_to_c));
static const ura_class a_c_class = { .name = "a_c", .initial = &a_to_c };

/* A paused system: the switch is in the mailbox before the worker starts,
 * so it is handled before a timeout message can be, however slow we are
 * (the timer itself may still fire first: see a_to_quiet). */
static ura_system *paused_system(void)
{
	ura_config cfg = { .workers = 1, .paused = 1 };
	ura_system *sys;
	t_must(ura_system_new(&sys, &cfg));
	return sys;
}

static void test_become(void)
{
	/* a. To a behavior without a timeout: cancelled. */
	ura_system *sys = paused_system();
	reset();
	ura_ref a;
	t_must(ura_spawn(sys, &a_quiet_class, NULL, &a));
	t_must(ura_send(sys, a, A_SWITCH));
	ura_stats st0 = stats(sys);
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "become, no timeout: await (nothing left pending)");
	ura_stats st1 = stats(sys);
	t_ok(atomic_load(&g_switch_at) != 0, "become, no timeout: switched");
	t_eq(st1.timers_pending, 0, "become, no timeout: no timer pending");
	t_ok(st1.timers_cancelled > st0.timers_cancelled,
	     "become, no timeout: the old timeout was cancelled (stats.timers_cancelled %llu -> %llu)",
	     (unsigned long long)st0.timers_cancelled, (unsigned long long)st1.timers_cancelled);
	sleep_ns(3 * TIMEOUT);
	t_rc(await_guarded(sys), 0, "become, no timeout: await");
	t_eq(atomic_load(&g_fired_other), 0, "become, no timeout: the old on_timeout never ran");
	t_eq(atomic_load(&g_after), 0, "become, no timeout: no stray message arrived");
	t_destroy(sys);

	/* b. To a behavior with a longer timeout: that one counts, from the
	 * become. */
	sys = paused_system();
	reset();
	t_must(ura_spawn(sys, &a_c_class, NULL, &a));
	t_must(ura_send(sys, a, A_SWITCH));
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "become, new timeout: await");
	uint64_t sw = atomic_load(&g_switch_at), at = atomic_load(&g_fire_at[0]);
	t_eq(atomic_load(&g_fired_other), 0, "become, new timeout: the old on_timeout never ran");
	t_eq(atomic_load(&g_fired), 1, "become, new timeout: the new on_timeout ran once");
	t_ok(sw && at >= sw + 3 * TIMEOUT,
	     "become, new timeout: 60 ms after the become, not 20 (%.2f ms)",
	     at > sw ? (double)(at - sw) / 1e6 : 0.0);
	t_destroy(sys);
}

/* ---- 5. it fires again while idle ---------------------------------------- */

static void rep_timeout(ura_ctx *cx, const ura_msg *m)
{
	if (record_fire(m) >= 3)
		ura_become(cx, &quiet);
}
URA_BEHAVIOR_OPTS(rep_beh, (.timeout_ns = TIMEOUT, .on_timeout = rep_timeout),
	URA_ON(A_PING, "", idle_ping));
static const ura_class rep_class = { .name = "rep", .initial = &rep_beh };

static void test_repeat(void)
{
	ura_system *sys = t_system(0);
	reset();
	uint64_t t0 = t_now_ns();
	ura_ref a;
	t_must(ura_spawn(sys, &rep_class, NULL, &a));
	t_rc(await_guarded(sys), 0, "repeat: await");
	t_eq(atomic_load(&g_fired), 3, "repeat: on_timeout ran 3 times, then the become ended it");
	uint64_t prev = t0;
	int gaps_ok = 1;
	for (int i = 0; i < 3; i++) {
		uint64_t at = atomic_load(&g_fire_at[i]);
		if (at < prev + TIMEOUT)
			gaps_ok = 0;
		t_diag("repeat: timeout %d at +%.2f ms", i + 1, at > t0 ? (double)(at - t0) / 1e6 : 0.0);
		prev = at;
	}
	t_ok(gaps_ok, "repeat: each one >= 20 ms after the one before");
	t_destroy(sys);
}

/* ---- 6. stop takes the pending timeout with it ---------------------------- */

static void long_timeout(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	record_fire(m);
}
URA_BEHAVIOR_OPTS(long_beh, (.timeout_ns = 60 * URA_SEC, .on_timeout = long_timeout),
	URA_ON(A_STOP, "", do_stop));
static const ura_class long_class = { .name = "long", .initial = &long_beh };

static void test_stop(void)
{
	ura_system *sys = t_system(0);
	reset();
	ura_ref a;
	t_must(ura_spawn(sys, &long_class, NULL, &a));
	t_rc(ura_system_await_for(sys, 50 * URA_MSEC), -ETIMEDOUT,
	     "stop: a pending 60 s receive timeout keeps the system from quiescence");
	ura_stats st0 = stats(sys);
	t_must(ura_send(sys, a, A_STOP));
	t_rc(ura_system_await_for(sys, 20 * URA_SEC), 0,
	     "stop: once the actor stops, await returns (long before 60 s)");
	ura_stats st1 = stats(sys);
	t_ok(st1.timers_cancelled > st0.timers_cancelled, "stop: the timeout was cancelled");
	t_eq(st1.timers_pending, 0, "stop: none pending");
	t_eq(atomic_load(&g_fired), 0, "stop: on_timeout never ran");
	t_destroy(sys);
}

int main(void)
{
	test_idle();
	test_fed();
	test_unmatched();
	test_become();
	test_repeat();
	test_stop();
	return t_done();
}
