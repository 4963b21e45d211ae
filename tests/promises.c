/* SPDX-License-Identifier: MIT */
/*
 * Requests that end, and promises: every request that was sent ends
 * exactly once, with the reply; URA_ERROR with a reason (the handler
 * failed it, returned without answering, no case took it, the target
 * stopped with it in hand, queued, stashed or promised); URA_TIMEOUT; or
 * never, when the requester stops first. A promise taken and fulfilled
 * from a later handler; forward; a chain A -> B -> C answering A from B's
 * continuation; the continuation's payload.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_ECHO URA_ATOM("echo")
#define A_VAL URA_ATOM("val")
#define A_NOREPLY URA_ATOM("noreply")
#define A_FAIL URA_ATOM("fail")
#define A_DIE URA_ATOM("die")
#define A_TAKE URA_ATOM("take")
#define A_GIVE URA_ATOM("give")
#define A_FWD URA_ATOM("fwd")
#define A_CHAIN URA_ATOM("chain")
#define A_NOSUCH URA_ATOM("nosuch")
#define A_GO URA_ATOM("go")
#define A_STOP URA_ATOM("stop")
#define A_CRASH URA_ATOM("crash")
#define A_OPEN URA_ATOM("open")

/* What each request's continuation saw, by request number. */
#define MAXR 64
static struct res {
	_Atomic int conts;
	ura_atom tag, reason;
	ura_ref sender;
	int64_t val;
	int payload_ok;
} g_res[MAXR];
static _Atomic int g_rc[16];

struct payload {
	int64_t idx;
	char name[24];
	double x;
};

static void cont(ura_ctx *cx, const ura_msg *m)
{
	size_t len = 0;
	struct payload *p = ura_request_payload(cx, &len);
	if (!p || len != sizeof *p)
		return;
	struct res *r = &g_res[p->idx];
	r->tag = ura_msg_tag(m);
	r->reason = ura_exit_reason(m);
	r->sender = ura_msg_sender(m);
	r->val = ura_msg_count(m) && ura_msg_value(m, 0).type == URA_T_I64 ? ura_arg_i64(m, 0) : -1;
	char want[24];
	snprintf(want, sizeof want, "request %lld", (long long)p->idx);
	r->payload_ok = !strcmp(p->name, want) && p->x == 0.5 * (double)p->idx;
	atomic_fetch_add(&r->conts, 1);
}

static void go(ura_ctx *cx, int64_t idx, ura_ref to, ura_atom tag, int64_t ms, ura_ref arg)
{
	struct payload p = { .idx = idx, .x = 0.5 * (double)idx };
	snprintf(p.name, sizeof p.name, "request %lld", (long long)p.idx);
	ura_request_opts o = {
		.timeout_ns = (uint64_t)ms * URA_MSEC,
		.payload = &p,
		.payload_len = sizeof p,
	};
	int rc = ura_request_ex(cx, to, cont, &o, tag, arg);
	atomic_store(&g_rc[p.idx % 16], rc);
}
/* The client: go(int idx, ref to, atom tag, int timeout_ms, ref arg). */
static void c_go(ura_ctx *cx, const ura_msg *m)
{
	go(cx, ura_arg_i64(m, 0), ura_arg_ref(m, 1), ura_arg_atom(m, 2), ura_arg_i64(m, 3),
	   ura_arg_ref(m, 4));
}
/* go2(int idx, ref to): die (idx), then echo (idx + 1), in one turn. */
#define A_GO2 URA_ATOM("go2")
static _Atomic int g_go2_done;
static void c_go2(ura_ctx *cx, const ura_msg *m)
{
	int64_t i = ura_arg_i64(m, 0);
	go(cx, i, ura_arg_ref(m, 1), URA_ATOM("die"), 0, URA_NOREF);
	go(cx, i + 1, ura_arg_ref(m, 1), URA_ATOM("echo"), 0, URA_NOREF);
	/* release: pairs with main's acquire; both requests are queued. */
	atomic_store_explicit(&g_go2_done, 1, memory_order_release);
}
static void c_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
URA_BEHAVIOR(client_beh,
	URA_ON(A_GO, "iraia", c_go),
	URA_ON(A_GO, "irair", c_go),
	URA_ON(A_GO2, "ir", c_go2),
	URA_ON(A_STOP, "", c_stop));
static const ura_class client_class = { .name = "client", .initial = &client_beh };

/* The server. */
typedef struct {
	ura_promise p;
} srv_st;
static _Atomic int g_take[4], g_give[4], g_fwd, g_chain[3];

static void s_echo(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_rc[15], ura_reply(cx, A_VAL, (int64_t)7));
	/* A second answer is refused. */
	atomic_store(&g_rc[14], ura_reply(cx, A_VAL, (int64_t)8));
	atomic_store(&g_rc[13], ura_reply_error(cx, A_CRASH, URA_NOVALUE));
}
static void s_noreply(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
static void s_fail(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_reply_error(cx, A_CRASH, ura_v_i64(5));
}
static void s_die(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_CRASH, URA_NOVALUE);
}
static void s_take(ura_ctx *cx, const ura_msg *m)
{
	srv_st *st = ura_state(cx);
	ura_promise q;
	(void)m;
	atomic_store(&g_take[0], ura_promise_take(cx, &st->p));
	atomic_store(&g_take[1], ura_promise_take(cx, &q));
	atomic_store(&g_take[2], ura_reply(cx, A_VAL, (int64_t)1));
	atomic_store(&g_take[3], ura_promise_take(NULL, &q));
}
static void s_give(ura_ctx *cx, const ura_msg *m)
{
	srv_st *st = ura_state(cx);
	(void)m;
	ura_promise copy = st->p;
	atomic_store(&g_give[0], ura_promise_reply(cx, &st->p, A_VAL, (int64_t)99));
	atomic_store(&g_give[1], ura_promise_reply(cx, &st->p, A_VAL, (int64_t)98));
	atomic_store(&g_give[2], ura_promise_reply(cx, &copy, A_VAL, (int64_t)97));
	ura_promise zero = { 0 };
	atomic_store(&g_give[3], ura_promise_fail(cx, &zero, A_CRASH, URA_NOVALUE));
}
static void s_fwd(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_fwd, ura_forward(cx, ura_arg_ref(m, 0), A_ECHO, URA_NOREF));
}
/* chain(ref c): ask c, and answer our requester from the continuation. */
static void chain_cont(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_chain[1], ura_reply(cx, A_VAL, ura_arg_i64(m, 0) + 100));
	atomic_store(&g_chain[2], ura_reply(cx, A_VAL, (int64_t)0));
}
static void s_chain(ura_ctx *cx, const ura_msg *m)
{
	srv_st *st = ura_state(cx);
	ura_promise_take(cx, &st->p);
	atomic_store(&g_chain[0],
		     ura_request_ex(cx, ura_arg_ref(m, 0), chain_cont,
				    URA_REQUEST_OPTS(.chain = &st->p), A_ECHO, URA_NOREF));
}
static void s_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, URA_SHUTDOWN, URA_NOVALUE);
}
/* gate: keeps the server's token until main opens it, so that what is
 * sent meanwhile waits in its mailbox, whatever the workers do. */
#define A_GATE URA_ATOM("gate")
static _Atomic int g_gate; /* 1 in the handler, 2 opened */
static void s_gate(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	/* release: pairs with main's acquire load that waits for 1;
	 * acquire: pairs with main's release store of 2. */
	atomic_store_explicit(&g_gate, 1, memory_order_release);
	while (atomic_load_explicit(&g_gate, memory_order_acquire) != 2)
		sched_yield();
}
URA_BEHAVIOR(srv_beh,
	URA_ON(A_ECHO, "r", s_echo),
	URA_ON(A_NOREPLY, "r", s_noreply),
	URA_ON(A_FAIL, "r", s_fail),
	URA_ON(A_DIE, "r", s_die),
	URA_ON(A_TAKE, "r", s_take),
	URA_ON(A_GIVE, "", s_give),
	URA_ON(A_FWD, "r", s_fwd),
	URA_ON(A_CHAIN, "r", s_chain),
	URA_ON(A_GATE, "", s_gate),
	URA_ON(A_STOP, "", s_stop));
static const ura_class srv_class = {
	.name = "srv", .state_size = sizeof(srv_st), .initial = &srv_beh,
};
/* A server that stashes what it does not take: a request waits there. */
static void st_open(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &srv_beh); }
URA_BEHAVIOR_OPTS(stash_beh, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_OPEN, "", st_open),
	URA_ON(A_STOP, "", s_stop));
static const ura_class stash_class = {
	.name = "stasher", .state_size = sizeof(srv_st), .initial = &stash_beh,
};

static ura_system *sys;
static ura_ref client;
static int next_idx;

static void settle(void) { t_rc(await_guarded(sys), 0, "await"); }

/* Sends one request; returns its number. */
static int ask(ura_ref to, ura_atom tag, int timeout_ms, ura_ref arg)
{
	int i = next_idx++;
	t_must(ura_send(sys, client, A_GO, (int64_t)i, to, tag, (int64_t)timeout_ms, arg));
	return i;
}

static ura_ref spawn(const ura_class *c)
{
	ura_ref r;
	t_must(ura_spawn(sys, c, NULL, &r));
	return r;
}

static void check(int i, ura_atom tag, ura_atom reason, const char *what)
{
	t_eq(atomic_load(&g_res[i].conts), 1, "%s: the continuation ran once", what);
	t_eq(g_res[i].tag, tag, "%s: tag", what);
	if (reason)
		t_eq(g_res[i].reason, reason, "%s: reason", what);
	t_ok(g_res[i].payload_ok, "%s: with its payload", what);
}

int main(void)
{
	sys = t_system(2);
	client = spawn(&client_class);
	ura_ref s = spawn(&srv_class), c = spawn(&srv_class);

	int i = ask(s, A_ECHO, 0, URA_NOREF);
	settle();
	check(i, A_VAL, 0, "a reply");
	t_eq(g_res[i].val, 7, "the reply's value");
	t_eq(g_res[i].sender.id, s.id, "from the target");
	t_rc(atomic_load(&g_rc[15]), 0, "ura_reply: 0");
	t_rc(atomic_load(&g_rc[14]), -EALREADY, "a second ura_reply: -EALREADY");
	t_rc(atomic_load(&g_rc[13]), -ENOENT, "ura_reply_error after the reply: -ENOENT");

	i = ask(s, A_NOREPLY, 0, URA_NOREF);
	settle();
	check(i, URA_ERROR, URA_NOREPLY, "a handler that does not answer");
	i = ask(s, A_FAIL, 0, URA_NOREF);
	settle();
	check(i, URA_ERROR, A_CRASH, "ura_reply_error");
	t_eq(g_res[i].val, -1, "the error's first value is the reason atom");
	i = ask(s, A_NOSUCH, 0, URA_NOREF);
	settle();
	check(i, URA_ERROR, URA_UNMATCHED, "a request no case takes");

	/* A promise taken, fulfilled from a later handler. */
	i = ask(s, A_TAKE, 0, URA_NOREF);
	settle();
	t_rc(atomic_load(&g_take[0]), 0, "ura_promise_take: 0");
	t_rc(atomic_load(&g_take[1]), -ENOENT, "taken twice: -ENOENT");
	t_rc(atomic_load(&g_take[2]), -EALREADY, "ura_reply after the take: -EALREADY");
	t_rc(atomic_load(&g_take[3]), -EINVAL, "ura_promise_take(NULL): -EINVAL");
	t_eq(atomic_load(&g_res[i].conts), 0, "a taken promise is not answered by the handler's return");
	t_must(ura_send(sys, s, A_GIVE));
	settle();
	check(i, A_VAL, 0, "a promise fulfilled later");
	t_eq(g_res[i].val, 99, "with the later reply");
	t_rc(atomic_load(&g_give[0]), 0, "ura_promise_reply: 0");
	t_rc(atomic_load(&g_give[1]), -EINVAL, "again, with the promise zeroed: -EINVAL");
	t_rc(atomic_load(&g_give[2]), -ENOENT, "a copy of an answered promise: -ENOENT");
	t_rc(atomic_load(&g_give[3]), -EINVAL, "a zeroed promise: -EINVAL");

	/* Forward: c answers the client directly. */
	i = ask(s, A_FWD, 0, c);
	settle();
	check(i, A_VAL, 0, "a forwarded request");
	t_eq(g_res[i].sender.id, c.id, "answered by the actor it was forwarded to");
	t_rc(atomic_load(&g_fwd), 0, "ura_forward: 0");

	/* Chain: client -> s -> c; s's continuation answers the client. */
	i = ask(s, A_CHAIN, 0, c);
	settle();
	check(i, A_VAL, 0, "a chain A -> B -> C");
	t_eq(g_res[i].val, 107, "with B's answer made from C's");
	t_rc(atomic_load(&g_chain[0]), 0, "ura_request_ex(.chain): 0");
	t_rc(atomic_load(&g_chain[1]), 0, "ura_reply in the chained continuation: 0");
	t_rc(atomic_load(&g_chain[2]), -EALREADY, "a second one: -EALREADY");

	/* The target stops with the request in hand, in its mailbox, with a
	 * promise, in its stash. */
	ura_ref d = spawn(&srv_class);
	i = ask(d, A_DIE, 0, URA_NOREF);
	settle();
	check(i, URA_ERROR, A_CRASH, "the handler stops the actor without answering");
	ura_ref e = spawn(&srv_class);
	int i1 = next_idx;
	next_idx += 2;
	/* e is held in a handler while the client queues both requests: the
	 * second is in its mailbox when the first stops it (without the gate,
	 * e could stop before the second is sent, which then fails). */
	t_must(ura_send(sys, e, A_GATE));
	while (atomic_load_explicit(&g_gate, memory_order_acquire) != 1)
		sched_yield();
	t_must(ura_send(sys, client, A_GO2, (int64_t)i1, e));
	while (!atomic_load_explicit(&g_go2_done, memory_order_acquire))
		sched_yield();
	atomic_store_explicit(&g_gate, 2, memory_order_release);
	settle();
	t_rc(atomic_load(&g_rc[(i1 + 1) % 16]), 0, "the request behind the stop was sent");
	check(i1, URA_ERROR, A_CRASH, "the first of two requests stops the actor");
	check(i1 + 1, URA_ERROR, A_CRASH, "a request queued behind the stop (a dead letter)");
	ura_ref f = spawn(&srv_class);
	i = ask(f, A_TAKE, 0, URA_NOREF);
	settle();
	t_must(ura_send(sys, f, A_STOP));
	settle();
	check(i, URA_ERROR, URA_SHUTDOWN, "an open promise of an actor that stops");
	ura_ref g = spawn(&stash_class);
	i = ask(g, A_ECHO, 0, URA_NOREF);
	settle();
	t_eq(atomic_load(&g_res[i].conts), 0, "a stashed request waits");
	t_must(ura_send(sys, g, A_STOP));
	settle();
	check(i, URA_ERROR, URA_SHUTDOWN, "a stashed request of an actor that stops");
	ura_ref h = spawn(&stash_class);
	i = ask(h, A_ECHO, 0, URA_NOREF);
	settle();
	t_must(ura_send(sys, h, A_OPEN));
	settle();
	check(i, A_VAL, 0, "a stashed request answered after a become");

	/* The target is gone before the request is made: the call fails. */
	i = ask(d, A_ECHO, 0, URA_NOREF);
	settle();
	t_rc(atomic_load(&g_rc[i % 16]), -ESRCH, "a request to a stopped actor: -ESRCH");
	t_eq(atomic_load(&g_res[i].conts), 0, "and its continuation never runs");

	/* A deadline: the promise is never answered in time. */
	ura_ref k = spawn(&srv_class);
	i = ask(k, A_TAKE, 20, URA_NOREF);
	settle();
	check(i, URA_TIMEOUT, 0, "a deadline passed");
	t_must(ura_send(sys, k, A_GIVE));
	settle();
	t_rc(atomic_load(&g_give[0]), 0, "the late answer is sent");
	t_eq(atomic_load(&g_res[i].conts), 1, "and dropped: the continuation ran once");

	/* The requester stops first: its request is cancelled. */
	ura_ref l = spawn(&srv_class), c2;
	t_must(ura_spawn(sys, &client_class, NULL, &c2));
	int j = next_idx++;
	t_must(ura_send(sys, c2, A_GO, (int64_t)j, l, A_TAKE, (int64_t)0, URA_NOREF));
	settle();
	t_must(ura_send(sys, c2, A_STOP));
	settle();
	t_must(ura_send(sys, l, A_GIVE));
	settle();
	t_rc(atomic_load(&g_give[0]), -ESRCH, "a promise whose requester stopped: -ESRCH");
	t_eq(atomic_load(&g_res[j].conts), 0, "its continuation never runs");

	/* Bad input. */
	t_rc(ura_requestv_ex(NULL, s, cont, NULL, A_ECHO, NULL, 0), -EINVAL,
	     "ura_requestv_ex(NULL ctx): -EINVAL");
	t_eq(ura_request_payload(NULL, NULL) == NULL, 1, "ura_request_payload(NULL): NULL");
	ura_stats st = stats(sys);
	t_eq(st.sent, st.received, "every request and answer counted");
	t_destroy(sys);
	return t_done();
}
