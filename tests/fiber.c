/* SPDX-License-Identifier: MIT */
/*
 * Context-switching actors (issue 18): selective receive keeps unmatched
 * messages in order for a later receive; timeouts (0 polls once); requests
 * made and answered from a body; a body resumed on another worker keeps its
 * stack (stealing between receives), under a stress of many bodies and
 * senders; a body stopped or killed while it waits (in a receive, in an I/O
 * call) never resumes, its destroy runs and its stack goes back (the pool
 * keeps at most ura_config.stack_pool); bad input gets -EINVAL; a body
 * with a bounded mailbox gives its depth back as it takes messages (room
 * for waiting threads, DROP_OLDEST's drops), and a body whose send met a
 * full URA_FULL_MUTE mailbox is muted when it next lets go of the worker.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"

#define A_A URA_ATOM("a")
#define A_B URA_ATOM("b")
#define A_C URA_ATOM("c")
#define A_X URA_ATOM("x")
#define A_GO URA_ATOM("go")
#define A_DBL URA_ATOM("dbl")
#define A_DONE URA_ATOM("done")
#define A_PING URA_ATOM("ping")

/* ---- selective receive and timeouts -------------------------------------- */

static int64_t last;
static int timeouts;
static int sel_rc[16];
static int64_t sel_v[16];
static _Atomic int destroyed, after_wait;

static void take(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	last = ura_arg_i64(m, 0);
}
static void on_tmo(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	timeouts += ura_msg_tag(m) == URA_TIMEOUT;
}
URA_BEHAVIOR(only_a, URA_ON(A_A, "i", take));
URA_BEHAVIOR(only_b, URA_ON(A_B, "i", take));
URA_BEHAVIOR(only_x, URA_ON(A_X, "i", take));
URA_BEHAVIOR_OPTS(only_c, (.on_timeout = on_tmo), URA_ON(A_C, "i", take));

static void sel_body(ura_ctx *cx, void *st)
{
	(void)st;
	int k = 0;
	/* a(1) x(1) x(2) b(2) x(3) are queued before the body starts. */
	sel_rc[k] = ura_receive(cx, &only_b, URA_FOREVER); sel_v[k++] = last;
	sel_rc[k] = ura_receive(cx, &only_a, URA_FOREVER); sel_v[k++] = last;
	last = -1;
	sel_rc[k] = ura_receive(cx, &only_c, 0); sel_v[k++] = last;             /* poll */
	sel_rc[k] = ura_receive(cx, &only_c, 20 * URA_MSEC); sel_v[k++] = last; /* wait */
	for (int i = 0; i < 3; i++) {
		sel_rc[k] = ura_receive(cx, &only_x, 0);
		sel_v[k++] = last;
	}
	last = -1;
	sel_rc[k] = ura_receive(cx, &only_x, 0); sel_v[k++] = last; /* none left */
	/* A message that arrives while the receive waits, before its
	 * timeout: taken, and the timeout never fires later. */
	ura_send(cx, ura_self(cx), A_C, 7);
	sel_rc[k] = ura_receive(cx, &only_c, 10 * URA_SEC); sel_v[k++] = last;
}

static void count_destroy(void *st)
{
	(void)st;
	atomic_fetch_add(&destroyed, 1);
}

static const ura_class sel_class = { .name = "sel", .body = sel_body,
				     .destroy = count_destroy };

static void test_selective(void)
{
	/* Paused until all five are queued, as the body expects: x(3) comes
	 * after b, and a body started early could take b and be through its
	 * 20 ms wait and its polls for the x's before a slow main thread had
	 * sent x(3). */
	ura_system *sys;
	t_must(ura_system_new(&sys, &(ura_config){ .workers = 2, .paused = 1 }));
	ura_ref r;
	t_must(ura_spawn(sys, &sel_class, NULL, &r));
	t_must(ura_send(sys, r, A_A, 1));
	t_must(ura_send(sys, r, A_X, 1));
	t_must(ura_send(sys, r, A_X, 2));
	t_must(ura_send(sys, r, A_B, 2));
	t_must(ura_send(sys, r, A_X, 3));
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "the selective body ran to its end");
	t_eq(sel_rc[0], 0, "receive(b) took b though a came first");
	t_eq(sel_v[0], 2, "... b's value");
	t_eq(sel_rc[1], 0, "receive(a) then took a, kept since");
	t_eq(sel_v[1], 1, "... a's value");
	t_rc(sel_rc[2], -ETIMEDOUT, "timeout 0 with nothing matching: polled once");
	t_rc(sel_rc[3], -ETIMEDOUT, "a 20 ms timeout with nothing matching");
	t_eq(timeouts, 2, "on_timeout ran for both, with a URA_TIMEOUT message");
	t_eq(sel_v[4] * 100 + sel_v[5] * 10 + sel_v[6], 123,
	     "the kept x's come in the order they were sent");
	t_rc(sel_rc[7], -ETIMEDOUT, "none is left after");
	t_eq(sel_rc[8], 0, "a message that arrives while waiting is taken");
	t_eq(sel_v[8], 7, "... its value");
	t_eq(atomic_load(&destroyed), 1, "the body's end stopped the actor: destroy ran");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.fibers, 0, "no context-switching actor left");
	t_eq(st.unmatched, 0, "nothing was dropped as unmatched");
	t_rc(ura_system_destroy(sys), 0, "destroy: nothing lost");
}

/* ---- requests from and to a body ------------------------------------------ */

static int64_t req_got, req_answer;

static void dbl(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_DBL, ura_arg_i64(m, 0) * 2);
}
URA_BEHAVIOR(doubling, URA_ON(A_DBL, "i", dbl));
static const ura_class doubler = { .name = "doubler", .initial = &doubling };

static void got_dbl(ura_ctx *cx, const ura_msg *m)
{
	req_got = ura_arg_i64(m, 0);
	ura_send(cx, ura_self(cx), A_DONE);
}
static void nop(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(done_beh, URA_ON(A_DONE, "", nop));

static void req_body(ura_ctx *cx, void *st)
{
	ura_ref *target = st;
	/* The continuation runs inside the receive that waits for DONE. */
	ura_request(cx, *target, got_dbl, NULL, A_DBL, 21);
	ura_receive(cx, &done_beh, URA_FOREVER);
	/* Then serve one request: the case replies. */
	ura_receive(cx, &doubling, URA_FOREVER);
}
static const ura_class req_class = { .name = "reqbody", .state_size = sizeof(ura_ref),
				     .body = req_body };

static void got_answer(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	req_answer = ura_msg_tag(m) == A_DBL ? ura_arg_i64(m, 0) : -1;
}
static void client_go(ura_ctx *cx, const ura_msg *m)
{
	ura_request(cx, ura_arg_ref(m, 0), got_answer, NULL, A_DBL, 50);
}
URA_BEHAVIOR(client_beh, URA_ON(A_GO, "r", client_go));
static const ura_class client_class = { .name = "client", .initial = &client_beh };

static void test_requests(void)
{
	ura_system *sys = t_system(2);
	ura_ref d, f, c;
	t_must(ura_spawn(sys, &doubler, NULL, &d));
	t_must(ura_spawn(sys, &req_class, &d, &f));
	t_must(ura_spawn(sys, &client_class, NULL, &c));
	ura_send(sys, c, A_GO, f);
	t_rc(await_guarded(sys), 0, "requests settle");
	t_eq(req_got, 42, "a body's request: its continuation ran inside a later receive");
	t_eq(req_answer, 100, "a body answered a request from a case its receive ran");
	t_rc(ura_system_destroy(sys), 0, "destroy");
}

/* ---- stealing between receives, and a stress -------------------------------- */

#define NF 32
static _Atomic long pings_seen, migrated, stack_ok;
static long per_fiber;

static void ping_sum(ura_ctx *cx, const ura_msg *m);
URA_BEHAVIOR(pinging, URA_ON(A_PING, "i", ping_sum));
static _Thread_local int64_t tl_last;
static void ping_sum(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	tl_last = ura_arg_i64(m, 0);
	/* release: the hog (below) stops spinning once it sees a ping. */
	atomic_fetch_add_explicit(&pings_seen, 1, memory_order_release);
}

/* The forced move below: before each receive the body spawns and wakes a
 * hog, which a send from a handler puts in this worker's next slot, so the
 * hog runs here, on the worker the body waits on, as soon as it waits. (A
 * fresh one each round: the last round's may still spin elsewhere, and a
 * send to a busy actor would leave it there.) */
static _Atomic int hog_each_round;
static int wake_hog(ura_ctx *cx);

static void steal_body(ura_ctx *cx, void *st)
{
	(void)st;
	/* Locals live on the body's stack: they must come through every
	 * switch and every move to another worker intact. */
	volatile int64_t sum = 0;
	char pad[512];
	memset(pad, 0x5a, sizeof pad);
	for (long i = 0; i < per_fiber; i++) {
		unsigned w0 = ura_worker_id(cx);
		if (atomic_load(&hog_each_round) && wake_hog(cx) < 0)
			return;
		if (ura_receive(cx, &pinging, URA_FOREVER) < 0)
			return;
		sum += tl_last; /* read on the thread that ran the case */
		if (ura_worker_id(cx) != w0)
			atomic_fetch_add_explicit(&migrated, 1, memory_order_relaxed);
	}
	int ok = sum == per_fiber * (per_fiber + 1) / 2;
	for (size_t i = 0; i < sizeof pad; i++)
		ok &= pad[i] == 0x5a;
	atomic_fetch_add(&stack_ok, ok);
}
static const ura_class steal_class = { .name = "stealee", .body = steal_body,
				       .stack_size = 32 << 10 };

/* An event-based sender: sends each body its pings 1..per_fiber. */
static ura_ref fibers[NF];
static void send_all(ura_ctx *cx, const ura_msg *m)
{
	long k = ura_arg_i64(m, 0);
	for (int f = (int)k; f < NF; f += 2)
		for (long i = 1; i <= per_fiber; i++)
			ura_send(cx, fibers[f], A_PING, (int64_t)i);
}
URA_BEHAVIOR(sender_beh, URA_ON(A_GO, "i", send_all));
static const ura_class sender_class = { .name = "sender", .initial = &sender_beh };

/* Keeps its worker busy until the next ping was handled, wherever (at
 * most 5 s). */
static _Atomic int hog_started;
static void hog(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	long p0 = atomic_load_explicit(&pings_seen, memory_order_acquire);
	atomic_store(&hog_started, (int)ura_worker_id(cx));
	uint64_t end = t_now_ns() + 5 * URA_SEC;
	while (atomic_load_explicit(&pings_seen, memory_order_acquire) == p0 && t_now_ns() < end)
		;
	ura_stop(cx);
}
URA_BEHAVIOR(hog_beh, URA_ON(A_GO, "", hog));
static const ura_class hog_class = { .name = "hog", .initial = &hog_beh };

static int wake_hog(ura_ctx *cx)
{
	/* On the node of the worker we run on, which after a forced move
	 * across nodes (URA_TOPOLOGY=2x1) is not our home: a child is placed
	 * on its spawner's node, and a wake from another node goes to that
	 * node's inject queue, not to this worker's next slot. */
	ura_ref h;
	int rc = ura_spawn_ex(cx, &hog_class, NULL,
			      &(ura_spawn_opts){ .worker = URA_WORKER(ura_worker_id(cx)) }, &h);
	return rc < 0 ? rc : ura_send(cx, h, A_GO);
}

static void test_steal(void)
{
	ura_system *sys = t_system(2);
	per_fiber = t_scaled(400);
	for (int f = 0; f < NF; f++)
		t_must(ura_spawn_ex(sys, &steal_class, NULL,
				    &(ura_spawn_opts){ .worker = URA_WORKER(f % 2) }, &fibers[f]));
	ura_ref s0, s1;
	t_must(ura_spawn(sys, &sender_class, NULL, &s0));
	t_must(ura_spawn(sys, &sender_class, NULL, &s1));
	/* Two senders on whatever workers; the bodies start on 0 and 1 and
	 * go wherever an idle worker takes them. */
	ura_send(sys, s0, A_GO, 0);
	ura_send(sys, s1, A_GO, 1);
	t_rc(await_guarded(sys), 0, "the stress settles");
	t_ok(atomic_load(&stack_ok) == NF, "%d bodies x %ld pings: every sum and stack intact",
	     NF, per_fiber);
	t_diag("moved between receives in the stress: %ld times", atomic_load(&migrated));

	/* A move made sure of: the body waits on one worker, a hog it woke
	 * keeps that one busy until the body ran, and the ping comes from
	 * outside (the node's inject queue): only the other worker is free
	 * to take the body. (The hog placed by a send from outside ran
	 * wherever the inject queue was popped first, under TSan on worker
	 * 0 for hundreds of rounds in a row, and the test ran out of tries.) */
	atomic_store(&migrated, 0);
	atomic_store(&stack_ok, 0);
	per_fiber = 20;
	ura_ref mover;
	atomic_store(&hog_started, -1);
	atomic_store(&hog_each_round, 1);
	t_must(ura_spawn(sys, &steal_class, NULL, &mover));
	long forced = 0;
	for (long i = 1; i <= per_fiber; i++) {
		uint64_t end = t_now_ns() + 10 * URA_SEC;
		while (atomic_load(&hog_started) < 0 && t_now_ns() < end)
			usleep(100);
		forced += atomic_load(&hog_started) == ura_actor_worker(sys, mover);
		atomic_store(&hog_started, -1);
		ura_send(sys, mover, A_PING, (int64_t)i);
	}
	t_rc(await_guarded(sys), 0, "the mover's rounds settle");
	atomic_store(&hog_each_round, 0);
	t_eq(atomic_load(&stack_ok), 1, "the mover's sum and stack came through intact");
	/* A hog may still be taken from the slot by the other worker, if
	 * the mover's turn outlasted the slot's grace (100 us; under TSan a
	 * spawn alone can take that): that round is not forced. */
	t_ok(forced >= per_fiber / 2, "the pings found the mover's worker hogged by the hog it "
	     "woke (%ld of %ld rounds)", forced, per_fiber);
	t_ok(atomic_load(&migrated) >= forced,
	     "in each such round it resumed on the other worker (%ld moves)", atomic_load(&migrated));
	ura_stats st;
	ura_system_stats(sys, &st);
	t_ok(st.fiber_switches >= (uint64_t)NF, "switches counted (%" PRIu64 ")",
	     st.fiber_switches);
	t_rc(ura_system_destroy(sys), 0, "destroy");
}

/* ---- handoff: a waiting body switches straight to the next ------------------ */

/* On one worker every pass of a token round a ring of bodies is a
 * handoff (fiber.c): the body that sent it waits, and the next one is in
 * the worker's next slot. Each body also keeps two messages no case of
 * the ring takes, and half its receives have a timeout: the kept ones
 * must come out in order at the end, and nothing may hang (a turn that
 * the handoff did not end would leave a body holding its token, never run
 * again). */
#define RB 4
typedef struct { ura_ref next; int id; long got; int order_ok; } ring_st;
static _Atomic long ring_got;
static _Atomic int ring_order_ok, ring_ended;
static int64_t ring_v;
static void ring_tok(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	ring_v = ura_arg_i64(m, 0);
}
static void ring_next(ura_ctx *cx, const ura_msg *m)
{
	ring_st *s = ura_state(cx);
	s->next = ura_arg_ref(m, 0);
}
URA_BEHAVIOR(ring_tok_beh, URA_ON(A_A, "i", ring_tok));
URA_BEHAVIOR(ring_go_beh, URA_ON(A_GO, "r", ring_next));
URA_BEHAVIOR(ring_x_beh, URA_ON(A_X, "i", ring_tok));
static void ring_body(ura_ctx *cx, void *st)
{
	ring_st *s = st;
	if (ura_receive(cx, &ring_go_beh, URA_FOREVER) < 0)
		return;
	for (;;) {
		uint64_t tmo = (s->got & 1) ? 10 * URA_SEC : URA_FOREVER;
		if (ura_receive(cx, &ring_tok_beh, tmo) < 0)
			return;
		int64_t v = ring_v;
		s->got++;
		if (v > 0)
			ura_send(cx, s->next, A_A, v - 1);
		if (v < RB)
			break; /* the last lap: RB-1 .. 0, one value each */
	}
	int ok = 1;
	for (int k = 1; k <= 2; k++) {
		ring_v = -1;
		ok &= ura_receive(cx, &ring_x_beh, 0) == 0 && ring_v == s->id * 10 + k;
	}
	ok &= ura_receive(cx, &ring_x_beh, 0) == -ETIMEDOUT;
	atomic_fetch_add(&ring_got, s->got);
	atomic_fetch_add(&ring_order_ok, ok);
	atomic_fetch_add(&ring_ended, 1);
}
static const ura_class ring_class = { .name = "ringbody", .body = ring_body,
				      .state_size = sizeof(ring_st), .stack_size = 32 << 10 };

/* A pair of bodies pingponging on one worker hands it back and forth for
 * ever: the worker's sources must still be served (a batch of handoffs at
 * most, and never past the pick's inject tick, then a pass of the loop).
 * A timer set once the pair runs ends it; with neither bound the timer
 * would not fire until the backstop (checked: 5 s, 28 M round trips).
 * The ping arms it after its first round trip: armed as the pair was
 * spawned, it fired before the first one in a TSan run beside a CI run
 * (spawning two bodies took 53 ms there), which said nothing. */
static _Atomic int pair_stop;
static _Atomic long pair_rounds, pair_seen_at;
static ura_ref pair_pong, pair_tm;
static void pair_nop(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	ring_v = ura_arg_i64(m, 0);
}
static void pair_answer(ura_ctx *cx, const ura_msg *m)
{
	ring_v = ura_arg_i64(m, 0);
	if (ring_v >= 0)
		ura_reply(cx, A_B, ring_v);
}
URA_BEHAVIOR(pair_ping_beh, URA_ON(A_PING, "i", pair_answer));
URA_BEHAVIOR(pair_pong_beh, URA_ON(A_B, "i", pair_nop));
static void pair_pong_body(ura_ctx *cx, void *st)
{
	(void)st;
	for (;;) {
		if (ura_receive(cx, &pair_ping_beh, URA_FOREVER) < 0 || ring_v < 0)
			return;
	}
}
static void pair_ping_body(ura_ctx *cx, void *st)
{
	(void)st;
	uint64_t end = t_now_ns() + 5 * URA_SEC; /* the backstop */
	long i = 0;
	while (!atomic_load(&pair_stop) && t_now_ns() < end) {
		ura_send(cx, pair_pong, A_PING, (int64_t)i);
		if (ura_receive(cx, &pair_pong_beh, URA_FOREVER) < 0 || ring_v != i)
			break;
		if (++i == 1)
			ura_send(cx, pair_tm, A_GO);
	}
	atomic_store(&pair_seen_at, atomic_load(&pair_stop) ? i : -1);
	atomic_store(&pair_rounds, i);
	ura_send(cx, pair_pong, A_PING, (int64_t)-1);
}
static const ura_class pair_ping_class = { .name = "pairping", .body = pair_ping_body,
					   .stack_size = 32 << 10 };
static const ura_class pair_pong_class = { .name = "pairpong", .body = pair_pong_body,
					   .stack_size = 32 << 10 };
static void pair_arm(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_send_after(cx, ura_self(cx), 20 * URA_MSEC, A_DONE);
}
static void pair_done(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_store(&pair_stop, 1);
}
URA_BEHAVIOR(pair_timer_beh, URA_ON(A_GO, "", pair_arm), URA_ON(A_DONE, "", pair_done));
static const ura_class pair_timer_class = { .name = "pairtimer", .initial = &pair_timer_beh };

static void test_handoff(void)
{
	ura_system *sys = t_system(1);
	long n = t_scaled(20000);
	ura_ref r[RB];
	for (int i = 0; i < RB; i++) {
		t_must(ura_spawn(sys, &ring_class, &(ring_st){ .id = i }, &r[i]));
		ura_send(sys, r[i], A_X, (int64_t)(i * 10 + 1));
		ura_send(sys, r[i], A_X, (int64_t)(i * 10 + 2));
	}
	for (int i = 0; i < RB; i++)
		ura_send(sys, r[i], A_GO, r[(i + 1) % RB]);
	ura_send(sys, r[0], A_A, (int64_t)n);
	t_rc(await_guarded(sys), 0, "a token %ld times round a ring of %d bodies: no hang", n, RB);
	t_eq(atomic_load(&ring_ended), RB, "every body ran to its end");
	t_eq(atomic_load(&ring_got), n + 1, "the token was taken %ld times, once per pass", n + 1);
	t_eq(atomic_load(&ring_order_ok), RB, "each body's kept messages came out in order, "
	     "and only those");

	ura_ref ping;
	t_must(ura_spawn(sys, &pair_timer_class, NULL, &pair_tm));
	uint64_t t0 = t_now_ns();
	t_must(ura_spawn(sys, &pair_pong_class, NULL, &pair_pong));
	t_must(ura_spawn(sys, &pair_ping_class, NULL, &ping));
	t_rc(await_guarded(sys), 0, "the pair ends");
	uint64_t dt = t_now_ns() - t0;
	t_ok(atomic_load(&pair_seen_at) > 0, "a timer fired while two bodies handed one worker "
	     "back and forth (after %ld round trips, %.1f ms)", atomic_load(&pair_rounds),
	     (double)dt / 1e6);
	t_rc(ura_system_destroy(sys), 0, "destroy");
}

/* ---- stop while blocked --------------------------------------------------- */

static void blocked_body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_receive(cx, &only_a, URA_FOREVER);
	atomic_fetch_add(&after_wait, 1); /* never: it is killed first */
}
static const ura_class blocked_class = { .name = "blocked", .body = blocked_body,
					 .destroy = count_destroy };

static void stop_in_case(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}
URA_BEHAVIOR(stop_beh, URA_ON(A_A, "i", stop_in_case));
static void stopping_body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_receive(cx, &stop_beh, URA_FOREVER);
	atomic_fetch_add(&after_wait, 1); /* never: the case stopped it */
}
static const ura_class stopping_class = { .name = "stopping", .body = stopping_body,
					  .destroy = count_destroy };

static int io_fds[2];
static void io_body(ura_ctx *cx, void *st)
{
	(void)st;
	char buf[64];
	ura_call_recv(cx, io_fds[0], buf, sizeof buf, 0);
	atomic_fetch_add(&after_wait, 1); /* never */
}
static const ura_class io_class = { .name = "ioblocked", .body = io_body,
				    .destroy = count_destroy };

static void test_stop(void)
{
	ura_system *sys;
	t_must(ura_system_new(&sys, &(ura_config){ .workers = 2, .stack_pool = 8 }));
	atomic_store(&destroyed, 0);
	enum { N = 40 };
	ura_ref r[N];
	for (int i = 0; i < N; i++)
		t_must(ura_spawn(sys, &blocked_class, NULL, &r[i]));
	t_rc(await_guarded(sys), 0, "%d bodies wait in a receive: the system is quiescent", N);
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.fibers, N, "all alive, waiting");
	t_eq(st.stacks_mapped, N, "one stack each");
	for (int i = 0; i < N; i++)
		ura_kill(sys, r[i], URA_KILL);
	t_rc(await_guarded(sys), 0, "killed while they wait");
	ura_system_stats(sys, &st);
	t_eq(atomic_load(&destroyed), N, "every destroy ran");
	t_eq(atomic_load(&after_wait), 0, "no body resumed past its receive");
	t_eq(st.fibers, 0, "none alive");
	t_eq(st.stacks_pooled, 8, "the pool keeps ura_config.stack_pool stacks");
	t_eq(st.stacks_mapped, 8, "... and the others were unmapped");
	t_rc(ura_send(sys, r[0], A_A, 1), -ESRCH, "the ref is stale");

	ura_ref s;
	t_must(ura_spawn(sys, &stopping_class, NULL, &s));
	ura_system_stats(sys, &st);
	t_eq(st.stacks_pooled, 7, "a spawn takes a pooled stack");
	ura_send(sys, s, A_A, 1);
	t_rc(await_guarded(sys), 0, "ura_stop in a case a receive ran");
	t_eq(atomic_load(&destroyed), N + 1, "... stopped it: destroy ran");

	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, io_fds));
	ura_ref io;
	t_must(ura_spawn(sys, &io_class, NULL, &io));
	/* Its receive in flight keeps the system busy: wait for it. */
	for (int i = 0; i < 5000; i++) {
		ura_system_stats(sys, &st);
		if (st.io_inflight)
			break;
		usleep(1000);
	}
	t_eq(st.io_inflight, 1, "a body waits in ura_call_recv");
	ura_kill(sys, io, URA_KILL);
	t_rc(await_guarded(sys), 0, "killed in an I/O call");
	t_eq(atomic_load(&destroyed), N + 2, "its destroy ran once the receive was cancelled");
	t_eq(atomic_load(&after_wait), 0, "no body resumed");
	close(io_fds[0]);
	close(io_fds[1]);
	ura_system_stats(sys, &st);
	t_eq(st.fibers, 0, "none alive at the end");
	t_rc(ura_system_destroy(sys), 0, "destroy");
}

/* ---- bad input ----------------------------------------------------------------- */

static int ev_rc = 1, ev_io_rc = 1, become_rc = 1, null_rc = 1, nested_rc = 1, init_rc = 1;

static void ev_try(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ev_rc = ura_receive(cx, &only_a, 0);
	char b[4];
	ev_io_rc = (int)ura_call_read(cx, 0, b, sizeof b, -1);
}
URA_BEHAVIOR(ev_beh, URA_ON(A_GO, "", ev_try));
static const ura_class ev_class = { .name = "evented", .initial = &ev_beh };

static void nested(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	nested_rc = ura_receive(cx, &only_b, 0);
}
URA_BEHAVIOR(nest_beh, URA_ON(A_A, "i", nested));
static void bad_body(ura_ctx *cx, void *st)
{
	(void)st;
	become_rc = ura_become(cx, &only_a);
	null_rc = ura_receive(cx, NULL, 0);
	ura_receive(cx, &nest_beh, URA_FOREVER);
}
static int bad_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	(void)arg;
	init_rc = ura_receive(cx, &only_a, 0);
	return 0;
}
static const ura_class bad_class = { .name = "bad", .body = bad_body, .init = bad_init };

static void test_bad(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &ev_class, NULL, &r));
	ura_send(sys, r, A_GO);
	t_must(ura_spawn(sys, &bad_class, NULL, &r));
	ura_send(sys, r, A_A, 1);
	t_rc(await_guarded(sys), 0, "no hang");
	t_rc(ev_rc, -EINVAL, "ura_receive from an event-based handler: -EINVAL");
	t_rc(ev_io_rc, -EINVAL, "ura_io_call from an event-based handler: -EINVAL");
	t_rc(init_rc, -EINVAL, "ura_receive from a body's init: -EINVAL");
	t_rc(become_rc, -EINVAL, "ura_become from a body: -EINVAL");
	t_rc(null_rc, -EINVAL, "ura_receive without a behavior: -EINVAL");
	t_rc(nested_rc, -EINVAL, "ura_receive inside a case a receive runs: -EINVAL");

	ura_class small = { .name = "small", .body = bad_body, .stack_size = URA_STACK_MIN - 1 };
	t_rc(ura_spawn(sys, &small, NULL, &r), -EINVAL, "a stack below URA_STACK_MIN: -EINVAL");
	ura_class huge = { .name = "huge", .body = bad_body, .stack_size = URA_STACK_MAX + 1 };
	t_rc(ura_spawn(sys, &huge, NULL, &r), -EINVAL, "a stack above URA_STACK_MAX: -EINVAL");
	ura_class nobody = { .name = "nobody", .initial = &only_a, .stack_size = 1 << 20 };
	t_rc(ura_spawn(sys, &nobody, NULL, &r), -EINVAL, "a stack size without a body: -EINVAL");
	ura_class neither = { .name = "neither" };
	t_rc(ura_spawn(sys, &neither, NULL, &r), -EINVAL, "neither a behavior nor a body: -EINVAL");
	ura_class res = { .name = "res", .body = bad_body, .flags = 1ull << 40 };
	t_rc(ura_spawn(sys, &res, NULL, &r), -EINVAL, "reserved space not zero: -EINVAL");
	t_rc(ura_snap_register(sys, &(ura_snap_class){ .cls = &bad_class }), -EINVAL,
	     "ura_snap_register of a class with a body: -EINVAL");
	ura_class ok = { .name = "ok", .body = bad_body, .stack_size = URA_STACK_MIN };
	t_rc(ura_spawn(sys, &ok, NULL, &r), 0, "URA_STACK_MIN itself is fine");
	ura_send(sys, r, A_A, 1);
	t_rc(await_guarded(sys), 0, "settles");
	atomic_store(&destroyed, 0);
	t_must(ura_spawn(sys, &blocked_class, NULL, &r));
	t_rc(await_guarded(sys), 0, "a body waits");
	t_rc(ura_system_destroy(sys), 0, "destroy with a body still waiting: nothing lost");
	t_eq(atomic_load(&destroyed), 1, "... and its destroy ran");
}

/* ---- snapshots ------------------------------------------------------------- */

static int snap_status = 1;
static char snap_error[512];
static void snap_done(void *ud, const ura_snap_info *info)
{
	(void)ud;
	snap_status = info->status;
	snprintf(snap_error, sizeof snap_error, "%s", info->error ? info->error : "");
}

static void test_snapshot(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &blocked_class, NULL, &r));
	t_rc(await_guarded(sys), 0, "a body waits");
	char path[] = "/tmp/ura_fiber_snapXXXXXX";
	int fd = mkstemp(path);
	close(fd);
	t_rc(ura_snapshot(sys, path, &(ura_snap_opts){ .done = snap_done }), 0, "snapshot started");
	t_rc(await_guarded(sys), 0, "... and done");
	t_rc(snap_status, -EINVAL, "a snapshot with a body alive fails");
	t_ok(strstr(snap_error, "context-switching") && strstr(snap_error, "blocked"),
	     "... naming it as a context-switching actor: %s", snap_error);
	unlink(path);
	ura_kill(sys, r, URA_KILL);
	t_rc(await_guarded(sys), 0, "settles");
	t_rc(ura_system_destroy(sys), 0, "destroy");
}

/* A body not started yet is work to do: an await right after spawns
 * from outside waits for every body to start (and park). Before the start
 * was counted (lifecycle.c), the await could return while the bodies sat
 * in the inject queue with every worker idle: 0 of 64 had started. */
static _Atomic int bodies_up;
static void up_body(ura_ctx *cx, void *st)
{
	(void)st;
	atomic_fetch_add(&bodies_up, 1);
	ura_receive(cx, &pinging, URA_FOREVER);
}
static const ura_class up_class = { .name = "up", .body = up_body, .stack_size = 32 << 10 };

static void test_start_counted(void)
{
	ura_system *sys = t_system(2);
	int ok = 1;
	for (int round = 0; round < 20 && ok; round++) {
		ura_ref b[64];
		atomic_store(&bodies_up, 0);
		for (int i = 0; i < 64; i++)
			t_must(ura_spawn(sys, &up_class, NULL, &b[i]));
		if (await_guarded(sys) < 0)
			t_diag("round %d: await timed out", round);
		ok = atomic_load(&bodies_up) == 64;
		if (!ok)
			t_diag("round %d: %d of 64 bodies had started when await returned", round,
			       atomic_load(&bodies_up));
		for (int i = 0; i < 64; i++) /* each body ends on its ping */
			t_must(ura_send(sys, b[i], A_PING, (int64_t)i));
		if (await_guarded(sys) < 0)
			ok = 0;
	}
	t_ok(ok, "await returns only once every spawned body started");
	t_destroy(sys);
}

/* ---- bounded mailboxes ---------------------------------------------------- */

static _Atomic int64_t bb_got, bb_sum, bb_first;

static void bb_take(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t v = ura_arg_i64(m, 0);
	if (atomic_fetch_add(&bb_got, 1) == 0)
		atomic_store(&bb_first, v);
	atomic_fetch_add(&bb_sum, v);
}
URA_BEHAVIOR(bb_beh, URA_ON(A_X, "i", bb_take));

static void bb_body(ura_ctx *cx, void *st)
{
	(void)st;
	for (;;)
		ura_receive(cx, &bb_beh, URA_FOREVER);
}
static const ura_class bb_class = { .name = "bb", .body = bb_body, .stack_size = 32 << 10 };
static const ura_class bb_event = { .name = "bb_event", .initial = &bb_beh };

/* A body that sends `n` x(i) to `to` in chunks of 16, each followed by a
 * message to itself that it receives: that receive, which finds its
 * message at once, is where a mute takes effect. */
static ura_ref bb_to;
static int64_t bb_n;
static void bb_take_go(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(bb_go, URA_ON(A_GO, "", bb_take_go));
static void bb_sender(ura_ctx *cx, void *st)
{
	(void)st;
	for (int64_t i = 1; i <= bb_n; i++) {
		if (ura_send(cx, bb_to, A_X, i) < 0)
			return;
		if (i % 16 == 0) {
			ura_send(cx, ura_self(cx), A_GO);
			ura_receive(cx, &bb_go, URA_FOREVER);
		}
	}
}
static const ura_class bb_sender_class = { .name = "bb_sender", .body = bb_sender,
					   .stack_size = 32 << 10 };

static void bb_reset(void)
{
	atomic_store(&bb_got, 0);
	atomic_store(&bb_sum, 0);
	atomic_store(&bb_first, 0);
}

static void test_bounded(void)
{
	/* 1. Threads waiting for room in a body's mailbox: the room comes
	 * as the body takes messages (before, the depth never went down
	 * and the first full mailbox kept its senders waiting forever). */
	ura_system *sys = t_system(2);
	ura_mailbox_opts mute8 = { .capacity = 8, .full = URA_FULL_MUTE };
	ura_ref r;
	bb_reset();
	t_must(ura_spawn_ex(sys, &bb_class, NULL, &(ura_spawn_opts){ .mailbox = &mute8 }, &r));
	int64_t n = t_scaled(20000), sent = 0;
	int rc = 0;
	for (int64_t i = 1; i <= n && rc == 0; i++) {
		rc = ura_sendv_wait(sys, r, ura_now_ns() + 10 * URA_SEC, A_X,
				    (ura_value[]){ ura_v_i64(i) }, 1);
		sent += rc == 0;
	}
	t_rc(rc, 0, "%lld sends that waited for room in a body's mailbox of 8", (long long)n);
	t_rc(await_guarded(sys), 0, "await");
	t_eq(atomic_load(&bb_got), sent, "the body took every one");
	t_eq(atomic_load(&bb_sum), sent * (sent + 1) / 2, "each once");
	t_eq(ura_mailbox_depth(sys, r), 0, "and its depth is back to 0");
	ura_stats st = stats(sys);
	t_ok(st.mb_waits > 0, "senders did wait (%llu waits)", (unsigned long long)st.mb_waits);

	/* 2. REFUSE: a body that drained its mailbox has room again. */
	ura_mailbox_opts refuse4 = { .capacity = 4, .full = URA_FULL_REFUSE };
	bb_reset();
	t_must(ura_spawn_ex(sys, &bb_class, NULL, &(ura_spawn_opts){ .mailbox = &refuse4 }, &r));
	int refused = 0;
	for (int round = 0; round < 50; round++) {
		for (int64_t i = 0; i < 4; i++)
			refused += ura_send(sys, r, A_X, (int64_t)1) != 0;
		if (await_guarded(sys) != 0)
			break;
	}
	t_eq(refused, 0, "50 rounds of 4 sends to a body's mailbox of 4, drained between: none refused");
	t_eq(atomic_load(&bb_got), 200, "all 200 taken");
	t_destroy(sys);

	/* 3. DROP_OLDEST: the drops a body owes are made as it takes
	 * messages, oldest first. The system is paused while the sends
	 * overrun the bound, so the body cannot take any before. */
	ura_config cfg = { .workers = 1, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_mailbox_opts oldest4 = { .capacity = 4, .full = URA_FULL_DROP_OLDEST };
	bb_reset();
	t_must(ura_spawn_ex(sys, &bb_class, NULL, &(ura_spawn_opts){ .mailbox = &oldest4 }, &r));
	for (int64_t i = 1; i <= 10; i++)
		t_rc(ura_send(sys, r, A_X, i), 0, "DROP_OLDEST: send %lld accepted", (long long)i);
	t_must(ura_system_start(sys));
	t_rc(await_guarded(sys), 0, "await");
	st = stats(sys);
	t_eq(st.mb_dropped, 6, "six of ten dropped");
	t_eq(atomic_load(&bb_got), 4, "four taken");
	t_eq(atomic_load(&bb_first), 7, "the newest four: the first taken is 7");
	t_eq(atomic_load(&bb_sum), 7 + 8 + 9 + 10, "then 8, 9, 10");
	t_eq(ura_mailbox_depth(sys, r), 0, "depth 0");
	t_destroy(sys);

	/* 4. A body that sends into a full URA_FULL_MUTE mailbox is muted
	 * at its next receive (before: never, and its worker's next turn
	 * inherited the mute). One worker: the receiver runs only when the
	 * body lets go, so every chunk of 16 overruns the 8. */
	sys = t_system(1);
	bb_reset();
	t_must(ura_spawn_ex(sys, &bb_event, NULL, &(ura_spawn_opts){ .mailbox = &mute8 }, &bb_to));
	bb_n = t_scaled(20000);
	ura_ref snd;
	t_must(ura_spawn(sys, &bb_sender_class, NULL, &snd));
	t_rc(await_guarded(sys), 0, "await");
	st = stats(sys);
	t_eq(atomic_load(&bb_got), bb_n, "a muted body's %lld sends all arrived", (long long)bb_n);
	t_eq(atomic_load(&bb_sum), bb_n * (bb_n + 1) / 2, "each once");
	t_eq(st.mb_mutes, bb_n / 16, "the body was muted at each chunk's receive (%llu mutes)",
	     (unsigned long long)st.mb_mutes);
	t_eq(ura_mailbox_depth(sys, bb_to), 0, "the receiver's depth is back to 0");
	t_destroy(sys);
}

/* ---- more live bodies than the map count allows guarded VMAs ------------- */

/* Whether this kernel has guard regions (MADV_GUARD_INSTALL, 6.13). */
static int kernel_has_guard_regions(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)ps * 2, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	int ok = madvise(m, (size_t)ps, 102 /* MADV_GUARD_INSTALL */) == 0;
	munmap(m, (size_t)ps * 2);
	return ok;
}

static void test_many_live(void)
{
	/* A stack guarded by PROT_NONE is two VMAs, so vm.max_map_count
	 * (65530 by default) capped live bodies near 32 000 (the spawn
	 * after that: -ENOMEM); with guard regions a stack merges with its
	 * neighbours' mappings. 40 000 bodies, all waiting at once. */
	if (!kernel_has_guard_regions()) {
		t_skip("no MADV_GUARD_INSTALL in this kernel: stacks are two VMAs each");
		return;
	}
#if defined(__SANITIZE_THREAD__)
	/* TSan makes a thread of each fiber and dies past 8128 of them. */
	t_skip("TSan: a fiber is one of its 8128 threads, too few for this count");
	return;
#endif
	static const ura_class tiny = { .name = "tiny", .body = up_body,
					.stack_size = URA_STACK_MIN };
	ura_system *sys = t_system(2);
	long n = t_scaled(40000), made = 0;
	int rc = 0;
	atomic_store(&bodies_up, 0);
	ura_ref *r = calloc((size_t)n, sizeof *r);
	for (long i = 0; i < n && r; i++) {
		if ((rc = ura_spawn(sys, &tiny, NULL, &r[i])) < 0)
			break;
		made++;
	}
	t_rc(await_guarded(sys), 0, "await");
	t_eq(made, n, "%ld bodies spawned, all waiting at once (%s)", n,
	     rc ? ura_strerror(rc) : "no error");
	t_eq(atomic_load(&bodies_up), made, "every one started");
	for (long i = 0; i < made; i++) /* each ends on its ping */
		ura_send(sys, r[i], A_PING, (int64_t)i);
	t_rc(await_guarded(sys), 0, "await: all ended");
	free(r);
	t_destroy(sys);
}

int main(void)
{
	test_start_counted();
	test_selective();
	test_requests();
	test_steal();
	test_handoff();
	test_stop();
	test_bad();
	test_snapshot();
	test_bounded();
	test_many_live();
	return t_done();
}
