/* SPDX-License-Identifier: MIT */
/*
 * request: ura_request routes the target's ura_reply to the continuation
 * (with its data), not to the behavior; many outstanding requests each get
 * their own continuation, whatever the order of the replies; a plain
 * message's reply goes to the sender's behavior; ura_reply without a sender
 * is -ESRCH; a request that fails never calls its continuation.
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_ASK URA_ATOM("ask")
#define A_ANS URA_ATOM("ans")
#define A_TWICE URA_ATOM("twice")
#define A_PLAIN URA_ATOM("plain")
#define A_EXT URA_ATOM("ext")
#define A_OPEN URA_ATOM("open")
#define A_STOP URA_ATOM("stop")
#define A_GO URA_ATOM("go")
#define A_MANY URA_ATOM("many")
#define A_PLAINGO URA_ATOM("plaingo")
#define A_DEAD URA_ATOM("dead")
#define A_ORDER URA_ATOM("order")
#define A_CHAIN URA_ATOM("chain")
#define A_TWICEGO URA_ATOM("twicego")
#define A_SELF URA_ATOM("self")
#define A_ASKSTOP URA_ATOM("askstop")

/* ---- the server ------------------------------------------------------ */

static atomic_int g_reply_fail;
static int g_ext_reply_rc = 1, g_init_reply_rc = 1;

static void srv_ask(ura_ctx *cx, const ura_msg *m)
{
	if (ura_reply(cx, A_ANS, 2 * ura_arg_i64(m, 0)) != 0)
		atomic_fetch_add(&g_reply_fail, 1);
}
static void srv_twice(ura_ctx *cx, const ura_msg *m)
{
	if (ura_reply(cx, A_ANS, ura_arg_i64(m, 0)) != 0 ||
	    ura_reply(cx, A_ANS, ura_arg_i64(m, 0) + 1) != 0)
		atomic_fetch_add(&g_reply_fail, 1);
}
static void srv_ext(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	g_ext_reply_rc = ura_reply(cx, A_ANS, 1);
}
static void srv_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }

URA_BEHAVIOR(srv_beh,
	URA_ON(A_ASK, "i", srv_ask),
	URA_ON(A_PLAIN, "i", srv_ask),
	URA_ON(A_TWICE, "i", srv_twice),
	URA_ON(A_EXT, "", srv_ext),
	URA_ON(A_STOP, "", srv_stop));
static const ura_class srv_class = { .name = "server", .initial = &srv_beh };

/* A server that stashes everything until it is opened. */
static void lazy_open(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &srv_beh); }
URA_BEHAVIOR_OPTS(lazy_closed, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_OPEN, "", lazy_open));
static const ura_class lazy_class = { .name = "lazy", .initial = &lazy_closed };

/* ura_reply in init: there is no current message. */
static int replier_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)state; (void)arg;
	g_init_reply_rc = ura_reply(cx, A_ANS, 1);
	return 0;
}
static const ura_class replier_class = { .name = "replier", .initial = &srv_beh,
					 .init = replier_init };

/* ---- the client ------------------------------------------------------ */

typedef struct { ura_ref lazy; int chain; } client_state;

static int g_marker;
static int g_go_rc = 1;
static atomic_int g_cont_one, g_cont_one_ok, g_behavior_ans, g_behavior_ans_nodata;
static int64_t g_cont_one_val, g_behavior_ans_val;
static atomic_int g_never;

static void cont_one(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_cont_one, 1);
	g_cont_one_val = ura_arg_i64(m, 0);
	if (ura_request_data(cx) == &g_marker && ura_msg_tag(m) == A_ANS &&
	    !ura_ref_null(ura_sender(cx)) && ura_ref_eq(ura_msg_sender(m), ura_sender(cx)))
		atomic_fetch_add(&g_cont_one_ok, 1);
}
static void cont_never(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	atomic_fetch_add(&g_never, 1);
}

static void cli_go(ura_ctx *cx, const ura_msg *m)
{
	g_go_rc = ura_request(cx, ura_arg_ref(m, 0), cont_one, &g_marker, A_ASK, 21);
}
static void cli_ans(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_behavior_ans, 1);
	g_behavior_ans_val = ura_arg_i64(m, 0);
	if (ura_request_data(cx) == NULL)
		atomic_fetch_add(&g_behavior_ans_nodata, 1);
}

/* Many outstanding requests. */
#define MANY 200
static int g_slot[MANY];
static int g_seen[MANY];
static int g_many_bad, g_many_rc_fail;
static void cont_many(ura_ctx *cx, const ura_msg *m)
{
	int *slot = ura_request_data(cx);
	if (!slot || slot < g_slot || slot >= g_slot + MANY ||
	    ura_arg_i64(m, 0) != 2 * (int64_t)*slot) {
		g_many_bad++;
		return;
	}
	g_seen[*slot]++;
}
static void cli_many(ura_ctx *cx, const ura_msg *m)
{
	ura_ref s1 = ura_arg_ref(m, 0), s2 = ura_arg_ref(m, 1);
	for (int i = 0; i < MANY; i++) {
		g_slot[i] = i;
		if (ura_request(cx, i % 2 ? s1 : s2, cont_many, &g_slot[i], A_ASK, i) != 0)
			g_many_rc_fail++;
	}
}

/* A plain message: its reply goes to the behavior. */
static int g_plain_rc = 1;
static void cli_plaingo(ura_ctx *cx, const ura_msg *m)
{
	g_plain_rc = ura_send(cx, ura_arg_ref(m, 0), A_PLAIN, 50);
}

/* Requests that fail. */
static int g_dead_rc = 1, g_noref_rc = 1, g_tag0_rc = 1, g_nocont_rc = 1, g_after_rc = 1;
static void cli_dead(ura_ctx *cx, const ura_msg *m)
{
	g_dead_rc = ura_request(cx, ura_arg_ref(m, 0), cont_never, NULL, A_ASK, 1);
	g_noref_rc = ura_request(cx, URA_NOREF, cont_never, NULL, A_ASK, 1);
	g_tag0_rc = ura_request(cx, ura_arg_ref(m, 1), cont_never, NULL, 0, 1);
	g_nocont_rc = ura_requestv(cx, ura_arg_ref(m, 1), NULL, NULL, A_ASK,
				   (const ura_value[]){ ura_v_i64(1) }, 1);
	/* A good request after the failures still works. */
	g_after_rc = ura_request(cx, ura_arg_ref(m, 1), cont_one, &g_marker, A_ASK, 21);
}

/* Replies out of order. */
static int g_order[4], g_order_n;
static int64_t g_order_val[4];
static void cont_lazy(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (g_order_n < 4) {
		g_order_val[g_order_n] = ura_arg_i64(m, 0);
		g_order[g_order_n++] = 'l';
	}
}
static void cont_quick(ura_ctx *cx, const ura_msg *m)
{
	client_state *s = ura_state(cx);
	if (g_order_n < 4) {
		g_order_val[g_order_n] = ura_arg_i64(m, 0);
		g_order[g_order_n++] = 'q';
	}
	/* Only now may the lazy server answer the first request. */
	ura_send(cx, s->lazy, A_OPEN);
}
static void cli_order(ura_ctx *cx, const ura_msg *m)
{
	client_state *s = ura_state(cx);
	s->lazy = ura_arg_ref(m, 0);
	if (ura_request(cx, s->lazy, cont_lazy, NULL, A_ASK, 1) != 0 ||
	    ura_request(cx, ura_arg_ref(m, 1), cont_quick, NULL, A_ASK, 2) != 0)
		g_order_n = -100;
}

/* A chain: each continuation makes the next request. */
static int64_t g_chain_last;
static int g_chain_n, g_chain_bad;
static void cont_chain(ura_ctx *cx, const ura_msg *m)
{
	client_state *s = ura_state(cx);
	int64_t v = ura_arg_i64(m, 0);
	g_chain_n++;
	if (v != 2 * (int64_t)s->chain || ura_request_data(cx) != (void *)&g_chain_n)
		g_chain_bad++;
	g_chain_last = v;
	if (++s->chain < 10 &&
	    ura_request(cx, ura_sender(cx), cont_chain, &g_chain_n, A_ASK, s->chain) != 0)
		g_chain_bad++;
}
static void cli_chain(ura_ctx *cx, const ura_msg *m)
{
	client_state *s = ura_state(cx);
	s->chain = 0;
	if (ura_request(cx, ura_arg_ref(m, 0), cont_chain, &g_chain_n, A_ASK, 0) != 0)
		g_chain_bad++;
}

/* The target replies twice: one continuation call. */
static atomic_int g_twice_cont;
static void cont_twice(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	atomic_fetch_add(&g_twice_cont, 1);
}
static void cli_twicego(ura_ctx *cx, const ura_msg *m)
{
	ura_request(cx, ura_arg_ref(m, 0), cont_twice, NULL, A_TWICE, 7);
}

/* A request to oneself. */
static int64_t g_self_val;
static int g_self_n;
static void cont_self(ura_ctx *cx, const ura_msg *m)
{
	if (ura_ref_eq(ura_sender(cx), ura_self(cx)))
		g_self_n++;
	g_self_val = ura_arg_i64(m, 0);
}
static void cli_self(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_request(cx, ura_self(cx), cont_self, NULL, A_ASK, 5);
}

/* The requester stops before the reply comes. */
static void cli_askstop(ura_ctx *cx, const ura_msg *m)
{
	ura_request(cx, ura_arg_ref(m, 0), cont_never, NULL, A_ASK, 3);
	ura_stop(cx);
}

URA_BEHAVIOR(cli_beh,
	URA_ON(A_GO, "r", cli_go),
	URA_ON(A_ANS, "i", cli_ans),
	URA_ON(A_MANY, "rr", cli_many),
	URA_ON(A_PLAINGO, "r", cli_plaingo),
	URA_ON(A_DEAD, "rr", cli_dead),
	URA_ON(A_ORDER, "rr", cli_order),
	URA_ON(A_CHAIN, "r", cli_chain),
	URA_ON(A_TWICEGO, "r", cli_twicego),
	URA_ON(A_SELF, "", cli_self),
	URA_ON(A_ASK, "i", srv_ask),
	URA_ON(A_ASKSTOP, "r", cli_askstop));
static const ura_class cli_class = {
	.name = "client", .state_size = sizeof(client_state), .initial = &cli_beh,
};

/* ---- tests ----------------------------------------------------------- */

static void reset_counters(void)
{
	atomic_store(&g_cont_one, 0);
	atomic_store(&g_cont_one_ok, 0);
	atomic_store(&g_behavior_ans, 0);
	atomic_store(&g_behavior_ans_nodata, 0);
	atomic_store(&g_never, 0);
	g_cont_one_val = g_behavior_ans_val = 0;
}

static void test_basic(void)
{
	ura_system *sys = t_system(2);
	ura_ref srv, cli;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &srv));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, cli, A_GO, srv));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_go_rc, 0, "ura_request returned 0");
	t_eq(atomic_load(&g_cont_one), 1, "the continuation ran once");
	t_eq(g_cont_one_val, 42, "with the reply's value");
	t_eq(atomic_load(&g_cont_one_ok), 1,
	     "ura_request_data is the data; tag and sender are the reply's");
	t_eq(atomic_load(&g_behavior_ans), 0, "the behavior's case for the reply tag did not run");
	t_eq(atomic_load(&g_reply_fail), 0, "ura_reply to a request returned 0");
	t_destroy(sys);
}

static void test_many(void)
{
	ura_system *sys = t_system(2);
	ura_ref s1, s2, cli;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &s1));
	t_must(ura_spawn(sys, &srv_class, NULL, &s2));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, cli, A_MANY, s1, s2));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_many_rc_fail, 0, "%d outstanding requests from one actor all sent", MANY);
	t_eq(g_many_bad, 0, "every reply reached the continuation with its own data");
	int once = 0;
	for (int i = 0; i < MANY; i++)
		once += g_seen[i] == 1;
	t_eq(once, MANY, "each request's continuation ran exactly once");
	t_eq(atomic_load(&g_behavior_ans), 0, "no reply leaked into the behavior");
	t_destroy(sys);
}

static void test_out_of_order(void)
{
	ura_system *sys = t_system(2);
	ura_ref lazy, quick, cli;
	t_must(ura_spawn(sys, &lazy_class, NULL, &lazy));
	t_must(ura_spawn(sys, &srv_class, NULL, &quick));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, cli, A_ORDER, lazy, quick));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_order_n, 2, "both continuations ran");
	t_ok(g_order_n == 2 && g_order[0] == 'q' && g_order[1] == 'l',
	     "the second request's reply came first and went to its own continuation");
	t_ok(g_order_val[0] == 4 && g_order_val[1] == 2, "each continuation got its own reply");
	t_destroy(sys);
}

static void test_plain_reply(void)
{
	ura_system *sys = t_system(2);
	ura_ref srv, cli;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &srv));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, cli, A_PLAINGO, srv));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_plain_rc, 0, "plain send from a handler");
	t_eq(atomic_load(&g_behavior_ans), 1, "reply to a plain message went to the sender's behavior");
	t_eq(g_behavior_ans_val, 100, "with the reply's value");
	t_eq(atomic_load(&g_behavior_ans_nodata), 1, "ura_request_data is NULL in a behavior handler");
	t_eq(atomic_load(&g_cont_one), 0, "no continuation involved");

	/* From outside: no sender. */
	t_must(ura_send(sys, srv, A_EXT));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_ext_reply_rc, -ESRCH, "ura_reply to a message from outside: -ESRCH");

	/* In init: no message at all. */
	ura_ref rep;
	t_must(ura_spawn(sys, &replier_class, NULL, &rep));
	t_rc(g_init_reply_rc, -ESRCH, "ura_reply in init: -ESRCH");
	t_rc(ura_system_await(sys), 0, "await");
	t_destroy(sys);
}

static void test_failed_requests(void)
{
	ura_system *sys = t_system(2);
	ura_ref victim, srv, cli;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &victim));
	t_must(ura_spawn(sys, &srv_class, NULL, &srv));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, victim, A_STOP));
	t_rc(ura_system_await(sys), 0, "await the victim's stop");
	t_must(ura_send(sys, cli, A_DEAD, victim, srv));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_dead_rc, -ESRCH, "ura_request to a stopped actor: -ESRCH");
	t_rc(g_noref_rc, -ESRCH, "ura_request to the null ref: -ESRCH");
	t_rc(g_tag0_rc, -EINVAL, "ura_request with tag 0: -EINVAL");
	t_rc(g_nocont_rc, -EINVAL, "ura_request without a continuation: -EINVAL");
	t_eq(atomic_load(&g_never), 0, "no failed request's continuation ever ran");
	t_rc(g_after_rc, 0, "a request after the failures succeeds");
	t_eq(atomic_load(&g_cont_one), 1, "and its continuation ran");
	t_eq(g_cont_one_val, 42, "with its reply");
	t_destroy(sys);
}

static void test_chain_twice_self(void)
{
	ura_system *sys = t_system(2);
	ura_ref srv, cli, cli2, cli3;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &srv));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli2));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli3));
	t_must(ura_send(sys, cli, A_CHAIN, srv));
	t_must(ura_send(sys, cli2, A_TWICEGO, srv));
	t_must(ura_send(sys, cli3, A_SELF));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_chain_n, 10, "a request made in a continuation gets its own continuation (10 deep)");
	t_eq(g_chain_bad, 0, "each link saw its own reply and data");
	t_eq(g_chain_last, 18, "last link's value");
	t_eq(atomic_load(&g_twice_cont), 1, "a second reply to one request does not run the continuation again");
	t_eq(atomic_load(&g_behavior_ans), 0, "nor the behavior");
	t_eq(g_self_n, 1, "a request to oneself is answered through the continuation");
	t_eq(g_self_val, 10, "with the reply");
	t_destroy(sys);
}

static void test_requester_stops(void)
{
	ura_system *sys = t_system(2);
	ura_ref srv, cli;
	reset_counters();
	t_must(ura_spawn(sys, &srv_class, NULL, &srv));
	t_must(ura_spawn(sys, &cli_class, NULL, &cli));
	t_must(ura_send(sys, cli, A_ASKSTOP, srv));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_never), 0, "a requester that stopped never runs the continuation");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.live, 1, "the requester stopped");
	t_rc(ura_send(sys, cli, A_GO, srv), -ESRCH, "its ref is stale");
	t_destroy(sys);
}

int main(void)
{
	test_basic();
	test_many();
	test_out_of_order();
	test_plain_reply();
	test_failed_requests();
	test_chain_twice_self();
	test_requester_stops();
	return t_done();
}
