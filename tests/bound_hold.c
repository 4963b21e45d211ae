/* SPDX-License-Identifier: MIT */
/*
 * ura_mailbox_hold and URA_CLASS_UNMUTED.
 *
 * Held: a pump holds its own bounded mailbox from init; a producer's one
 * burst then finds it full, so the producer is muted after that handler
 * and sends nothing more while the pump stays held, though the pump takes
 * the burst (its depth reads 0 with the hold on). Let go, the producer
 * resumes and every message arrives, in order. A hold is idempotent.
 *
 * A held pump that stops releases its muted producer (whose next sends
 * get -ESRCH), and the system goes quiescent. A thread waiting to send to
 * a held mailbox times out. Holding an unbounded mailbox: -ENOTSUP.
 *
 * Unmuted: the same flood of a small muting mailbox from a producer class
 * with URA_CLASS_UNMUTED mutes nobody (its sends go over the bound), and
 * from one without the flag it mutes: the check cannot pass by accident.
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_GO URA_ATOM("go")
#define A_LET URA_ATOM("let")
#define A_STOP URA_ATOM("stop")

#define CAP 64
#define BURST 16

static _Atomic long g_sent, g_got, g_bad_order, g_errors, g_esrch, g_at_let = -1,
	g_depth_at_let = -1, g_hold_rc[4];
static long g_last;

struct pump {
	int stop_after_burst;
};

static int pump_init(ura_ctx *cx, void *state, const void *arg)
{
	struct pump *p = state;
	p->stop_after_burst = arg != NULL;
	atomic_store(&g_hold_rc[0], ura_mailbox_hold(cx, 1));
	atomic_store(&g_hold_rc[1], ura_mailbox_hold(cx, 1)); /* idempotent */
	return 0;
}

static void pump_msg(ura_ctx *cx, const ura_msg *m)
{
	struct pump *p = ura_state(cx);
	long v = (long)ura_arg_i64(m, 0);
	if (v != g_last + 1)
		atomic_fetch_add(&g_bad_order, 1);
	g_last = v;
	/* After the first burst: a while for the producer to send more if it
	 * were not muted, then let go (or stop). Timeouts meet no bound. */
	if (atomic_fetch_add(&g_got, 1) + 1 == BURST)
		ura_send_after(cx, ura_self(cx), 100 * URA_MSEC,
			       p->stop_after_burst ? A_STOP : A_LET);
}

static void pump_let(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_at_let, atomic_load(&g_sent));
	atomic_store(&g_depth_at_let, (long)ura_mailbox_depth(ura_ctx_system(cx), ura_self(cx)));
	atomic_store(&g_hold_rc[2], ura_mailbox_hold(cx, 0));
	atomic_store(&g_hold_rc[3], ura_mailbox_hold(cx, 0)); /* idempotent */
}

static void pump_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_at_let, atomic_load(&g_sent));
	ura_stop(cx);
}

URA_BEHAVIOR(pump_beh, URA_ON(A_MSG, "i", pump_msg), URA_ON(A_LET, "", pump_let),
	     URA_ON(A_STOP, "", pump_stop));

struct prod {
	ura_ref to;
	long n, i;
};

static void prod_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct prod *p = ura_state(cx);
	for (int k = 0; k < BURST && p->i < p->n; k++, p->i++) {
		int rc = ura_send(cx, p->to, A_MSG, p->i);
		if (rc == -ESRCH) {
			atomic_fetch_add(&g_esrch, 1);
			ura_stop(cx);
			return;
		}
		if (rc != 0)
			atomic_fetch_add(&g_errors, 1);
		else
			atomic_fetch_add(&g_sent, 1);
	}
	if (p->i < p->n)
		ura_send(cx, ura_self(cx), A_GO);
	else
		ura_stop(cx);
}
URA_BEHAVIOR(prod_beh, URA_ON(A_GO, "", prod_go));
static const ura_class prod_class = { .name = "prod", .state_size = sizeof(struct prod),
				      .initial = &prod_beh };
static const ura_class prod_unmuted = { .name = "prod_u", .state_size = sizeof(struct prod),
					.initial = &prod_beh, .flags = URA_CLASS_UNMUTED };

static const ura_mailbox_opts mute_mb = { .capacity = CAP, .full = URA_FULL_MUTE };
static const ura_class pump_class = { .name = "pump", .state_size = sizeof(struct pump),
				      .initial = &pump_beh, .init = pump_init,
				      .mailbox = &mute_mb };

static void reset(void)
{
	atomic_store(&g_sent, 0);
	atomic_store(&g_got, 0);
	atomic_store(&g_bad_order, 0);
	atomic_store(&g_errors, 0);
	atomic_store(&g_esrch, 0);
	atomic_store(&g_at_let, -1);
	atomic_store(&g_depth_at_let, -1);
	for (int i = 0; i < 4; i++)
		atomic_store(&g_hold_rc[i], -1);
	g_last = -1;
}

static ura_ref producer(ura_system *sys, const ura_class *c, ura_ref to, long n)
{
	struct prod p = { .to = to, .n = n };
	ura_ref r;
	t_must(ura_spawn(sys, c, &p, &r));
	t_must(ura_send(sys, r, A_GO));
	return r;
}

static void held(unsigned workers)
{
	reset();
	ura_system *sys = t_system(workers);
	ura_ref pump;
	t_must(ura_spawn(sys, &pump_class, NULL, &pump));
	long n = t_scaled(20000);
	producer(sys, &prod_class, pump, n);
	t_rc(await_guarded(sys), 0, "held, %u workers: quiescent", workers);
	t_eq(atomic_load(&g_hold_rc[0]), 0, "held: hold returns 0");
	t_eq(atomic_load(&g_hold_rc[1]), 0, "held: a second hold returns 0");
	t_eq(atomic_load(&g_at_let), BURST,
	     "held: the producer sent one burst, then was muted until the let-go");
	t_eq(atomic_load(&g_depth_at_let), 0, "held: the depth leaves the hold out");
	t_eq(atomic_load(&g_hold_rc[2]), 0, "held: let go returns 0");
	t_eq(atomic_load(&g_hold_rc[3]), 0, "held: a second let-go returns 0");
	t_eq(atomic_load(&g_got), n, "held: nothing lost after the let-go");
	t_eq(atomic_load(&g_bad_order), 0, "held: in order");
	t_eq(atomic_load(&g_errors), 0, "held: every send accepted");
	ura_stats st = stats(sys);
	t_ok(st.mb_mutes > 0, "held: the producer was muted (%llu)",
	     (unsigned long long)st.mb_mutes);
	t_eq(ura_mailbox_depth(sys, pump), 0, "held: drained, depth 0");
	t_destroy(sys);
}

static void stop_held(unsigned workers)
{
	reset();
	ura_system *sys = t_system(workers);
	ura_ref pump;
	t_must(ura_spawn(sys, &pump_class, (void *)1, &pump));
	producer(sys, &prod_class, pump, t_scaled(20000));
	t_rc(await_guarded(sys), 0, "stop held, %u workers: quiescent", workers);
	t_eq(atomic_load(&g_at_let), BURST, "stop held: muted until the pump stopped");
	t_eq(atomic_load(&g_esrch), 1, "stop held: released, the producer's next send: -ESRCH");
	t_eq(stats(sys).live, 0, "stop held: nothing left");
	/* The slot's count lost the hold at the stop: a new bounded actor
	 * (which may take the slot) starts at depth 0. */
	static const ura_mailbox_opts mb = { .capacity = 4, .full = URA_FULL_REFUSE };
	static const ura_class plain = { .name = "plain", .initial = &pump_beh, .mailbox = &mb };
	ura_ref r;
	t_must(ura_spawn(sys, &plain, NULL, &r));
	t_eq(ura_mailbox_depth(sys, r), 0, "stop held: a new bounded actor starts at depth 0");
	t_destroy(sys);
}

static void thread_waits(void)
{
	reset();
	ura_system *sys = t_system(1);
	ura_ref pump;
	t_must(ura_spawn(sys, &pump_class, NULL, &pump));
	ura_value v = ura_v_i64(0);
	t_rc(ura_sendv_wait(sys, pump, ura_now_ns() + 50 * URA_MSEC, A_MSG, &v, 1), -ETIMEDOUT,
	     "a thread's wait for a held mailbox times out");
	t_eq(ura_mailbox_depth(sys, pump), 0, "nothing was sent");
	t_destroy(sys);
}

static _Atomic long g_unbounded_rc = 1;
static void ub_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_unbounded_rc, ura_mailbox_hold(cx, 1));
}
URA_BEHAVIOR(ub_beh, URA_ON(A_GO, "", ub_go));

static void errors(void)
{
	ura_system *sys = t_system(1);
	static const ura_class ub = { .name = "ub", .initial = &ub_beh };
	ura_ref r;
	t_must(ura_spawn(sys, &ub, NULL, &r));
	t_must(ura_send(sys, r, A_GO));
	t_rc(await_guarded(sys), 0, "unbounded: quiescent");
	t_eq(atomic_load(&g_unbounded_rc), -ENOTSUP, "hold on an unbounded mailbox: -ENOTSUP");
	t_rc(ura_mailbox_hold(NULL, 1), -EINVAL, "hold with no ctx: -EINVAL");
	static const ura_class badflags = { .name = "bf", .initial = &ub_beh,
					    .flags = 0x2ull };
	t_rc(ura_spawn(sys, &badflags, NULL, &r), -EINVAL, "an unknown class flag: -EINVAL");
	t_destroy(sys);
}

/* A small muting sink flooded by producers with and without the flag. */
static void sink_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_got, 1);
}
URA_BEHAVIOR(sink_beh, URA_ON(A_MSG, "i", sink_msg));

static void unmuted(unsigned workers, int flag)
{
	reset();
	ura_system *sys = t_system(workers);
	static const ura_mailbox_opts mb = { .capacity = 4, .full = URA_FULL_MUTE };
	static const ura_class sink = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref s;
	t_must(ura_spawn(sys, &sink, NULL, &s));
	long n = t_scaled(20000);
	for (int i = 0; i < 4; i++)
		producer(sys, flag ? &prod_unmuted : &prod_class, s, n);
	t_rc(await_guarded(sys), 0, "%s, %u workers: quiescent", flag ? "unmuted" : "muted",
	     workers);
	ura_stats st = stats(sys);
	t_eq(atomic_load(&g_got), 4 * n, "%s: nothing lost", flag ? "unmuted" : "muted");
	if (flag) {
		t_eq(st.mb_mutes, 0, "unmuted: no producer was muted");
		t_ok(st.mb_over > 0, "unmuted: its sends went over the bound (%llu)",
		     (unsigned long long)st.mb_over);
	} else {
		t_ok(st.mb_mutes > 0, "muted (control): producers were muted (%llu)",
		     (unsigned long long)st.mb_mutes);
	}
	t_destroy(sys);
}

int main(void)
{
	held(1);
	held(2);
	stop_held(1);
	stop_held(2);
	thread_waits();
	errors();
	unmuted(2, 1);
	unmuted(2, 0);
	return t_done();
}
