/* SPDX-License-Identifier: MIT */
/*
 * ura_request_for: a request with a deadline for its reply. The
 * continuation runs exactly once: with the reply if it comes in time, or
 * with a URA_TIMEOUT message if not (a later reply is dropped).
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_ASK URA_ATOM("ask")
#define A_ANS URA_ATOM("ans")
#define A_GO URA_ATOM("go")
#define A_LATE URA_ATOM("late")

static _Atomic int g_conts, g_timeouts, g_replies, g_bad_data;
static _Atomic int g_rc = 1;
static int g_token;

/* The server answers at once, after `delay_ms`, or never (-1). To
 * answer later, or never, it takes the request as a promise (a handler
 * that returns without answering and without a promise fails the
 * request at once with URA_NOREPLY: tests/requests.c). */
typedef struct { long delay_ms, waits; ura_promise p; } server;

static void on_ask(ura_ctx *cx, const ura_msg *m)
{
	server *s = ura_state(cx);
	(void)m;
	if (s->delay_ms == 0) {
		ura_reply(cx, A_ANS, 42);
		return;
	}
	if (ura_promise_take(cx, &s->p) != 0)
		printf("# ura_promise_take failed\n");
	if (s->delay_ms > 0)
		ura_send_after(cx, ura_self(cx), (uint64_t)s->delay_ms * URA_MSEC, A_LATE);
}

static void on_late(ura_ctx *cx, const ura_msg *m)
{
	server *s = ura_state(cx);
	(void)m;
	/* Too late: not before the requester's continuation saw its deadline
	 * pass (10 s at most), since the deadline's timer and this one may be
	 * on two workers, and one preempted worker could fire its timer after
	 * the other's; the answer is dropped. */
	if (atomic_load(&g_timeouts) == 0 && ++s->waits < 10000) {
		ura_send_after(cx, ura_self(cx), URA_MSEC, A_LATE);
		return;
	}
	ura_promise_reply(cx, &s->p, A_ANS, 42);
}

URA_BEHAVIOR(server_beh, URA_ON(A_ASK, "", on_ask), URA_ON(A_LATE, "", on_late));
static const ura_class server_class = { .name = "server", .state_size = sizeof(server), .initial = &server_beh };

static void cont(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_conts, 1);
	if (ura_request_data(cx) != &g_token)
		atomic_fetch_add(&g_bad_data, 1);
	if (ura_msg_tag(m) == URA_TIMEOUT)
		atomic_fetch_add(&g_timeouts, 1);
	else if (ura_msg_tag(m) == A_ANS && ura_arg_i64(m, 0) == 42)
		atomic_fetch_add(&g_replies, 1);
}

typedef struct { ura_ref server; uint64_t timeout; } client;

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	(void)m;
	atomic_store(&g_rc, ura_request_for(cx, c->server, c->timeout, cont, &g_token, A_ASK));
}

static _Atomic int g_stray;
static void on_stray(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_stray, 1);
}

URA_BEHAVIOR(client_beh, URA_ON(A_GO, "", on_go), URA_ON(A_ANS, "i", on_stray));
static const ura_class client_class = { .name = "client", .state_size = sizeof(client), .initial = &client_beh };

static void reset(void)
{
	atomic_store(&g_conts, 0);
	atomic_store(&g_timeouts, 0);
	atomic_store(&g_replies, 0);
	atomic_store(&g_stray, 0);
	atomic_store(&g_rc, 1);
}

static void run(ura_system *sys, long server_delay_ms, uint64_t timeout, const char *what)
{
	ura_ref s, c;
	reset();
	t_must(ura_spawn(sys, &server_class, &(server){ .delay_ms = server_delay_ms }, &s));
	t_must(ura_spawn(sys, &client_class, &(client){ s, timeout }, &c));
	t_must(ura_send(sys, c, A_GO));
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "%s: await", what);
	t_rc(atomic_load(&g_rc), 0, "%s: ura_request_for accepted", what);
	t_eq(atomic_load(&g_conts), 1, "%s: the continuation ran exactly once", what);
}

int main(void)
{
	ura_system *sys = t_system(0);

	/* A deadline past run's 30 s await: the reply is in time however
	 * slow the machine, and a deadline not cancelled fails the await. */
	run(sys, 0, 60 * URA_SEC, "in time");
	t_eq(atomic_load(&g_replies), 1, "in time: it got the reply");
	t_eq(atomic_load(&g_timeouts), 0, "in time: no timeout");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.timers_pending, 0, "in time: the deadline was cancelled");

	uint64_t t0 = t_now_ns();
	run(sys, -1, 20 * URA_MSEC, "never answered");
	t_eq(atomic_load(&g_timeouts), 1, "never answered: the continuation saw URA_TIMEOUT");
	t_ok(t_now_ns() - t0 >= 20 * URA_MSEC, "never answered: not before the deadline");

	run(sys, 100, 20 * URA_MSEC, "answered late");
	t_eq(atomic_load(&g_timeouts), 1, "answered late: timeout first");
	t_eq(atomic_load(&g_replies), 0, "answered late: no reply reached the continuation");

	reset();
	ura_ref s, c;
	t_must(ura_spawn(sys, &server_class, &(server){ 0 }, &s));
	t_must(ura_spawn(sys, &client_class, &(client){ s, URA_MAX_DELAY + 1 }, &c));
	t_must(ura_send(sys, c, A_GO));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(atomic_load(&g_rc), -EINVAL, "a deadline over URA_MAX_DELAY: -EINVAL");
	t_eq(atomic_load(&g_conts), 0, "and the continuation never runs");
	t_eq(atomic_load(&g_bad_data), 0, "every continuation saw its data pointer");
	t_destroy(sys);
	return t_done();
}
