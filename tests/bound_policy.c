/* SPDX-License-Identifier: MIT */
/*
 * Bounded mailboxes: what a full one does, per policy and kind of sender.
 * With one worker a sender's handler runs while its receiver cannot, so
 * "full" is exact: REFUSE fails the sends past the capacity with -EAGAIN
 * and keeps nothing of them; DROP_NEWEST returns URA_DROPPED and keeps
 * the first `capacity`; DROP_OLDEST keeps the last `capacity`; stats count
 * every drop and refusal. A paused system fills from outside the same
 * way; a group send skips a full member. System messages (a DOWN, a
 * kill) pass a full mailbox. Bad bounds fail the
 * spawn with -EINVAL; depth is readable; unbounded stays unbounded.
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_FLOOD URA_ATOM("flood")
#define A_WATCH URA_ATOM("watch")

#define CAP 8
#define SENT 20

static _Atomic long g_got, g_first, g_last, g_down, g_order_bad;
static _Atomic int g_rc_ok, g_rc_again, g_rc_dropped, g_rc_other;

static void sink_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	long v = (long)ura_arg_i64(m, 0);
	long n = atomic_fetch_add(&g_got, 1);
	if (n == 0)
		atomic_store(&g_first, v);
	else if (v <= atomic_load(&g_last))
		atomic_fetch_add(&g_order_bad, 1);
	atomic_store(&g_last, v);
}

static void sink_down(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_down, 1);
}

static void sink_watch(ura_ctx *cx, const ura_msg *m)
{
	ura_ref f = ura_arg_ref(m, 0);
	if (ura_monitor(cx, f) <= 0)
		atomic_fetch_add(&g_rc_other, 1);
	/* After the monitor: same pair, same order. */
	ura_send(cx, f, A_FLOOD, ura_self(cx));
}

URA_BEHAVIOR(sink_beh,
	URA_ON(A_MSG, "i", sink_msg),
	URA_ON(A_WATCH, "r", sink_watch),
	URA_ON_ANY(URA_DOWN, sink_down));

static void count_rc(int rc)
{
	if (rc == 0)
		atomic_fetch_add(&g_rc_ok, 1);
	else if (rc == -EAGAIN)
		atomic_fetch_add(&g_rc_again, 1);
	else if (rc == URA_DROPPED)
		atomic_fetch_add(&g_rc_dropped, 1);
	else
		atomic_fetch_add(&g_rc_other, 1);
}

/* Floods the sink in one handler; with `stop`, stops after (its DOWN
 * meets a full mailbox). */
static void flood(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	for (long i = 0; i < SENT; i++)
		count_rc(ura_send(cx, to, A_MSG, i));
	int *stop = ura_state(cx);
	if (*stop)
		ura_stop(cx);
}
URA_BEHAVIOR(flood_beh, URA_ON(A_FLOOD, "r", flood));
static const ura_class flood_class = { .name = "flood", .state_size = sizeof(int),
				       .initial = &flood_beh };

static void reset(void)
{
	atomic_store(&g_got, 0);
	atomic_store(&g_first, -1);
	atomic_store(&g_last, -1);
	atomic_store(&g_down, 0);
	atomic_store(&g_order_bad, 0);
	atomic_store(&g_rc_ok, 0);
	atomic_store(&g_rc_again, 0);
	atomic_store(&g_rc_dropped, 0);
	atomic_store(&g_rc_other, 0);
}

/* One worker: the flooder's handler runs to its end before the sink. */
static void from_handler(ura_full full, const char *name)
{
	reset();
	ura_system *sys = t_system(1);
	ura_mailbox_opts mb = { .capacity = CAP, .full = full };
	ura_class sink_class = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref sink, fl;
	int stop = 0;
	t_must(ura_spawn(sys, &sink_class, NULL, &sink));
	t_must(ura_spawn(sys, &flood_class, &stop, &fl));
	t_must(ura_send(sys, fl, A_FLOOD, sink));
	t_rc(await_guarded(sys), 0, "%s: quiescent", name);
	ura_stats st = stats(sys);
	switch (full) {
	case URA_FULL_REFUSE:
		t_eq(atomic_load(&g_rc_ok), CAP, "refuse: the first %d accepted", CAP);
		t_eq(atomic_load(&g_rc_again), SENT - CAP, "refuse: the rest -EAGAIN");
		t_eq(atomic_load(&g_got), CAP, "refuse: the sink got the accepted ones");
		t_eq(atomic_load(&g_last), CAP - 1, "refuse: the first ones");
		t_eq(st.mb_refused, SENT - CAP, "refuse: stats count refusals");
		break;
	case URA_FULL_DROP_NEWEST:
		t_eq(atomic_load(&g_rc_ok), CAP, "drop newest: the first %d accepted", CAP);
		t_eq(atomic_load(&g_rc_dropped), SENT - CAP, "drop newest: the rest URA_DROPPED");
		t_eq(atomic_load(&g_got), CAP, "drop newest: the sink got %d", CAP);
		t_eq(atomic_load(&g_last), CAP - 1, "drop newest: the oldest kept");
		t_eq(st.mb_dropped, SENT - CAP, "drop newest: stats count drops");
		break;
	case URA_FULL_DROP_OLDEST:
		t_eq(atomic_load(&g_rc_ok), SENT, "drop oldest: every send accepted");
		t_eq(atomic_load(&g_got), CAP, "drop oldest: the sink got %d", CAP);
		t_eq(atomic_load(&g_first), SENT - CAP, "drop oldest: the newest kept");
		t_eq(atomic_load(&g_last), SENT - 1, "drop oldest: up to the last");
		t_eq(st.mb_dropped, SENT - CAP, "drop oldest: stats count drops");
		break;
	default:
		break;
	}
	t_eq(atomic_load(&g_order_bad), 0, "%s: in order", name);
	t_eq(atomic_load(&g_rc_other), 0, "%s: no other results", name);
	t_eq(st.sent, st.received, "%s: sent == received", name);
	t_eq(ura_mailbox_depth(sys, sink), 0, "%s: depth back to 0", name);
	t_destroy(sys);
}

/* A paused system fills from outside; nothing drains until the start. */
static void from_outside(void)
{
	reset();
	ura_config cfg = { .workers = 1, .paused = 1 };
	ura_system *sys;
	t_must(ura_system_new(&sys, &cfg));
	ura_mailbox_opts mb = { .capacity = CAP };
	ura_class sink_class = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref sink;
	t_must(ura_spawn(sys, &sink_class, NULL, &sink));
	int again = 0, ok = 0;
	for (long i = 0; i < SENT; i++) {
		int rc = ura_send(sys, sink, A_MSG, i);
		ok += rc == 0;
		again += rc == -EAGAIN;
	}
	t_eq(ok, CAP, "outside, refuse: %d accepted", CAP);
	t_eq(again, SENT - CAP, "outside, refuse: the rest -EAGAIN");
	t_eq(ura_mailbox_depth(sys, sink), CAP, "outside: depth is the capacity");
	/* A group send skips the full member and reaches the other. */
	ura_class plain = { .name = "plain", .initial = &sink_beh };
	ura_ref other;
	ura_group *g;
	t_must(ura_spawn(sys, &plain, NULL, &other));
	t_must(ura_group_new(sys, &g));
	t_must(ura_group_join(g, sink));
	t_must(ura_group_join(g, other));
	t_eq(ura_send_group(sys, g, A_MSG, 1000L), 1, "group send: the full member skipped");
	/* Not bounded: a kill (an exit signal) to a full mailbox. */
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "outside: quiescent");
	t_eq(atomic_load(&g_got), CAP + 1, "outside: the sink got the accepted ones");
	t_must(ura_group_free(g));
	t_rc(ura_kill(sys, sink, URA_KILLED), 0, "a kill passes a mailbox bound");
	t_rc(await_guarded(sys), 0, "killed: quiescent");
	t_rc((int)ura_mailbox_depth(sys, sink), -ESRCH, "depth of a stopped actor: -ESRCH");
	t_destroy(sys);
}

/* A DOWN meets a full mailbox: it passes. */
static void system_messages(void)
{
	reset();
	ura_system *sys = t_system(1);
	ura_mailbox_opts mb = { .capacity = CAP };
	ura_class sink_class = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref sink, fl;
	int stop = 1;
	t_must(ura_spawn(sys, &sink_class, NULL, &sink));
	t_must(ura_spawn(sys, &flood_class, &stop, &fl));
	t_must(ura_send(sys, sink, A_WATCH, fl));
	t_rc(await_guarded(sys), 0, "down: quiescent");
	t_eq(atomic_load(&g_rc_again), SENT - CAP, "down: the mailbox was full");
	t_eq(atomic_load(&g_down), 1, "down: the DOWN passed the full mailbox");
	t_destroy(sys);
}

static void bad_input(void)
{
	ura_system *sys = t_system(1);
	ura_ref r;
	struct { ura_mailbox_opts o; const char *what; } bad[] = {
		{ { .capacity = URA_MAILBOX_MAX + 1 }, "capacity beyond URA_MAILBOX_MAX" },
		{ { .capacity = 4, .full = URA_FULL_REFUSE_MUTE + 1 }, "an unknown policy" },
		{ { .capacity = 4, .low_water = 4 }, "low water at the capacity" },
		{ { .capacity = 4, .high_water = 5 }, "high water over the capacity" },
		{ { .capacity = 0, .full = URA_FULL_MUTE }, "a policy without a capacity" },
		{ { .capacity = 0 }, "a capacity of 0" },
		{ { .capacity = 4, .reserved0_ = 1 }, "reserved0_ set" },
		{ { .capacity = 4, .reserved_ = { 0, 1 } }, "reserved_ set" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ura_class c = { .name = "bad", .initial = &sink_beh, .mailbox = &bad[i].o };
		t_rc(ura_spawn(sys, &c, NULL, &r), -EINVAL, "class: %s: -EINVAL", bad[i].what);
		ura_class plain = { .name = "plain", .initial = &sink_beh };
		ura_spawn_opts so = { .mailbox = &bad[i].o };
		t_rc(ura_spawn_ex(sys, &plain, NULL, &so, &r), -EINVAL, "spawn opts: %s: -EINVAL",
		     bad[i].what);
	}
	/* The largest capacity is fine; spawn opts override the class. */
	ura_mailbox_opts big = { .capacity = URA_MAILBOX_MAX }, small = { .capacity = 2 };
	ura_class c = { .name = "big", .initial = &sink_beh, .mailbox = &big };
	t_rc(ura_spawn(sys, &c, NULL, &r), 0, "capacity URA_MAILBOX_MAX: spawned");
	t_eq(ura_mailbox_depth(sys, r), 0, "a fresh bounded mailbox: depth 0");
	ura_spawn_opts so = { .mailbox = &small };
	ura_ref r2;
	t_must(ura_spawn_ex(sys, &c, NULL, &so, &r2));
	ura_class plain = { .name = "plain", .initial = &sink_beh };
	ura_ref u;
	t_must(ura_spawn(sys, &plain, NULL, &u));
	t_rc((int)ura_mailbox_depth(sys, u), -ENOTSUP, "unbounded: depth -ENOTSUP");
	t_rc((int)ura_mailbox_depth(NULL, u), -EINVAL, "depth, no system: -EINVAL");
	t_rc(await_guarded(sys), 0, "bad input: quiescent");
	t_destroy(sys);
}

static void spawn_opts_override(void)
{
	/* The class says 2, the spawn 2 too but DROP_NEWEST: the spawn's. */
	reset();
	ura_config cfg = { .workers = 1, .paused = 1 };
	ura_system *sys;
	t_must(ura_system_new(&sys, &cfg));
	ura_mailbox_opts cm = { .capacity = 100 }, sm = { .capacity = 2, .full = URA_FULL_DROP_NEWEST };
	ura_class c = { .name = "sink", .initial = &sink_beh, .mailbox = &cm };
	ura_spawn_opts so = { .mailbox = &sm };
	ura_ref r;
	t_must(ura_spawn_ex(sys, &c, NULL, &so, &r));
	t_rc(ura_send(sys, r, A_MSG, 1), 0, "override: 1 accepted");
	t_rc(ura_send(sys, r, A_MSG, 2), 0, "override: 2 accepted");
	t_rc(ura_send(sys, r, A_MSG, 3), URA_DROPPED, "override: 3 dropped (the spawn's policy)");
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "override: quiescent");
	t_eq(atomic_load(&g_got), 2, "override: 2 received");
	t_destroy(sys);
}

int main(void)
{
	from_handler(URA_FULL_REFUSE, "refuse");
	from_handler(URA_FULL_DROP_NEWEST, "drop newest");
	from_handler(URA_FULL_DROP_OLDEST, "drop oldest");
	from_outside();
	system_messages();
	bad_input();
	spawn_opts_override();
	return t_done();
}
