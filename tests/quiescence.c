/* SPDX-License-Identifier: MIT */
/*
 * ura_system_await returns only when all work is done, and always returns
 * then. A chain of actors, each spawning the next from its handler and
 * handing it the token, must have reached its end when await returns, 20
 * times over in one system; so must a fan-out. await_for gives up with
 * -ETIMEDOUT while an actor keeps itself busy, and await returns once it
 * stops; an idle system (even a paused one) is quiescent at once; several
 * threads may await at the same time; a handler may not await.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_TOKEN URA_ATOM("token")
#define A_FAN URA_ATOM("fan")
#define A_LEAF URA_ATOM("leaf")
#define A_SPIN URA_ATOM("spin")
#define A_HELLO URA_ATOM("hello")
#define A_TRY URA_ATOM("try")

#define ROUNDS 20
#define NLEAF 16

static _Atomic int g_errors;

/* ---- the chain ---------------------------------------------------------- */

static _Atomic long g_flag;      /* the round whose token reached the end */
static _Atomic long g_links;     /* chain handlers run */

static void link_token(ura_ctx *cx, const ura_msg *m);
URA_BEHAVIOR(link_beh, URA_ON(A_TOKEN, "iii", link_token));
static const ura_class link_class = { .name = "link", .initial = &link_beh };

static void link_token(ura_ctx *cx, const ura_msg *m)
{
	int64_t round = ura_arg_i64(m, 0), n = ura_arg_i64(m, 1), len = ura_arg_i64(m, 2);
	atomic_fetch_add_explicit(&g_links, 1, memory_order_relaxed);
	ura_stop(cx);
	if (n >= len) {
		atomic_store(&g_flag, (long)round);
		return;
	}
	ura_ref next;
	if (ura_spawn(cx, &link_class, NULL, &next) < 0 ||
	    ura_send(cx, next, A_TOKEN, round, n + 1, len) < 0)
		atomic_fetch_add(&g_errors, 1);
}

static void test_chain(void)
{
	long len = t_scaled(10000);
	ura_system *sys = t_system(0);
	int premature = 0, count_bad = 0, live_bad = 0, await_bad = 0;
	atomic_store(&g_errors, 0);
	for (long round = 1; round <= ROUNDS; round++) {
		ura_ref first;
		t_must(ura_spawn(sys, &link_class, NULL, &first));
		t_must(ura_send(sys, first, A_TOKEN, round, 1L, len));
		int rc = await_guarded(sys);
		long flag = atomic_load(&g_flag);
		ura_stats st;
		ura_system_stats(sys, &st);
		if (rc != 0) {
			printf("# chain round %ld: await: %s\n", round, ura_strerror(rc));
			await_bad++;
			break;
		}
		if (flag != round && premature++ < 5)
			printf("# chain round %ld: await returned before the end (flag %ld)\n",
			       round, flag);
		if (st.sent != st.received && count_bad++ < 5)
			printf("# chain round %ld: sent %llu != received %llu\n", round,
			       (unsigned long long)st.sent, (unsigned long long)st.received);
		if (st.live != 0 && live_bad++ < 5)
			printf("# chain round %ld: %llu actors live\n", round,
			       (unsigned long long)st.live);
	}
	t_eq(await_bad, 0, "chain: every await returned 0");
	t_eq(premature, 0, "chain: await never returned before the token reached the end");
	t_eq(count_bad, 0, "chain: after each await, stats sent == received");
	t_eq(live_bad, 0, "chain: after each await, every link has stopped");
	t_eq(atomic_load(&g_links), ROUNDS * len, "chain: %d rounds of %ld links ran", ROUNDS, len);
	t_eq(atomic_load(&g_errors), 0, "chain: every spawn and send accepted");
	t_destroy(sys);
}

/* ---- fan-out ------------------------------------------------------------ */

static _Atomic long g_leaves;
static ura_ref g_leaf_refs[NLEAF];

static void leaf(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	/* A little work (about 20 us), so that idle workers wake up and
	 * steal leaves while the fan's worker is still running others. */
	uint64_t t0 = t_now_ns();
	while (t_now_ns() - t0 < 20 * URA_USEC)
		;
	atomic_fetch_add(&g_leaves, 1);
}
static void fan(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int i = 0; i < NLEAF; i++)
		if (ura_send(cx, g_leaf_refs[i], A_LEAF) < 0)
			atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(leaf_beh, URA_ON(A_LEAF, "", leaf));
URA_BEHAVIOR(fan_beh, URA_ON(A_FAN, "", fan));
static const ura_class leaf_class = { .name = "leaf", .initial = &leaf_beh };
static const ura_class fan_class = { .name = "fan", .initial = &fan_beh };

static void test_fan(void)
{
	long rounds = t_scaled(2000);
	ura_system *sys = t_system(0);
	ura_ref f;
	int premature = 0, await_bad = 0;
	atomic_store(&g_errors, 0);
	for (int i = 0; i < NLEAF; i++)
		t_must(ura_spawn(sys, &leaf_class, NULL, &g_leaf_refs[i]));
	t_must(ura_spawn(sys, &fan_class, NULL, &f));
	long r;
	for (r = 1; r <= rounds; r++) {
		t_must(ura_send(sys, f, A_FAN));
		int rc = await_guarded(sys);
		if (rc != 0) {
			printf("# fan round %ld: await: %s\n", r, ura_strerror(rc));
			await_bad++;
			break;
		}
		long got = atomic_load(&g_leaves);
		if (got != r * NLEAF && premature++ < 5)
			printf("# fan round %ld: %ld leaves done, want %ld\n", r, got, r * NLEAF);
	}
	t_eq(await_bad, 0, "fan-out: every await returned 0 (%ld rounds)", r - 1);
	t_eq(premature, 0, "fan-out: await never returned before all leaves ran");
	t_eq(atomic_load(&g_errors), 0, "fan-out: every send accepted");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.sent, st.received, "fan-out: stats: sent == received");
	t_destroy(sys);
}

/* ---- a busy actor: await_for times out -------------------------------- */

static _Atomic int g_stop;
static _Atomic long g_spins;

static void spin(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_fetch_add_explicit(&g_spins, 1, memory_order_relaxed);
	if (!atomic_load(&g_stop) && ura_send(cx, ura_self(cx), A_SPIN) < 0)
		atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(spin_beh, URA_ON(A_SPIN, "", spin));
static const ura_class spin_class = { .name = "spinner", .initial = &spin_beh };

struct awaiter {
	pthread_t th;
	ura_system *sys;
	int rc;
	long flag_at_return;
};
static _Atomic int g_awaiting;

static void *awaiter_main(void *arg)
{
	struct awaiter *a = arg;
	atomic_fetch_add(&g_awaiting, 1);
	a->rc = ura_system_await_for(a->sys, 30 * URA_SEC);
	a->flag_at_return = atomic_load(&g_flag);
	return NULL;
}

static void test_busy(void)
{
	ura_system *sys = t_system(0);
	ura_ref s;
	atomic_store(&g_errors, 0);
	atomic_store(&g_stop, 0);
	t_must(ura_spawn(sys, &spin_class, NULL, &s));
	t_must(ura_send(sys, s, A_SPIN));
	t_rc(ura_system_await_for(sys, 20 * URA_MSEC), -ETIMEDOUT,
	     "busy: await_for(20 ms) times out while an actor keeps itself busy");
	t_rc(ura_system_await_for(sys, 0), -ETIMEDOUT, "busy: await_for(0) too");
	/* Its message in flight already keeps the system busy; the first turn
	 * may come later than 20 ms on a loaded machine. */
	t_wait_until(atomic_load(&g_spins) != 0, 10 * URA_SEC, sched_yield());
	t_ok(atomic_load(&g_spins) > 0, "busy: the spinner is running");

	/* Several awaiters while it spins; they return once it stops. */
	struct awaiter a[4];
	atomic_store(&g_awaiting, 0);
	for (int i = 0; i < 4; i++) {
		a[i] = (struct awaiter){ .sys = sys, .rc = 1 };
		if (pthread_create(&a[i].th, NULL, awaiter_main, &a[i]))
			t_must(-EAGAIN);
	}
	while (atomic_load(&g_awaiting) < 4)
		sched_yield();
	atomic_store(&g_stop, 1);
	t_rc(await_guarded(sys), 0, "busy: await returns 0 once the flag stops the spinner");
	int all = 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(a[i].th, NULL);
		if (a[i].rc != 0) {
			printf("# awaiter %d: %s\n", i, ura_strerror(a[i].rc));
			all = 0;
		}
	}
	t_ok(all, "busy: 4 concurrent awaiters all returned 0");
	long spins = atomic_load(&g_spins);
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.sent, st.received, "busy: stats: sent == received");
	t_eq(atomic_load(&g_spins), spins, "busy: nothing ran after await returned");
	t_eq(atomic_load(&g_errors), 0, "busy: every send accepted");
	/* And it starts again on a new message. */
	atomic_store(&g_stop, 1);
	t_rc(ura_send(sys, s, A_SPIN), 0, "busy: the actor stays alive after await");
	t_rc(await_guarded(sys), 0, "busy: await again");
	t_eq(atomic_load(&g_spins), spins + 1, "busy: it handled the new message");
	t_destroy(sys);
}

/* ---- concurrent awaiters on a chain ----------------------------------- */

static void test_concurrent(void)
{
	long len = t_scaled(10000);
	ura_system *sys = t_system(0);
	struct awaiter a[6];
	int ok = 1, seen = 1;
	atomic_store(&g_errors, 0);
	for (long round = 101; round <= 105; round++) {
		ura_ref first;
		t_must(ura_spawn(sys, &link_class, NULL, &first));
		t_must(ura_send(sys, first, A_TOKEN, round, 1L, len));
		for (int i = 0; i < 6; i++) {
			a[i] = (struct awaiter){ .sys = sys, .rc = 1 };
			if (pthread_create(&a[i].th, NULL, awaiter_main, &a[i]))
				t_must(-EAGAIN);
		}
		for (int i = 0; i < 6; i++) {
			pthread_join(a[i].th, NULL);
			ok &= a[i].rc == 0;
			seen &= a[i].flag_at_return == round;
			if (a[i].rc != 0 || a[i].flag_at_return != round)
				printf("# round %ld awaiter %d: %s, flag %ld\n", round, i,
				       ura_strerror(a[i].rc), a[i].flag_at_return);
		}
	}
	t_ok(ok, "concurrent: 6 threads awaiting at once all return 0 (5 rounds)");
	t_ok(seen, "concurrent: each saw the chain finished when it returned");
	t_eq(atomic_load(&g_errors), 0, "concurrent: every spawn and send accepted");
	t_destroy(sys);
}

/* ---- external senders: await after they are done --------------------- */

#define NTARGET 8
#define NEXT_SENDERS 4
static _Atomic long g_ext_handled;
static ura_ref g_targets[NTARGET];

static void target_hit(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add_explicit(&g_ext_handled, 1, memory_order_relaxed);
}
URA_BEHAVIOR(target_beh, URA_ON(A_LEAF, "i", target_hit));
static const ura_class target_class = { .name = "target", .initial = &target_beh };

struct ext_sender {
	pthread_t th;
	ura_system *sys;
	long n, accepted;
	int id;
};

static void *ext_sender_main(void *arg)
{
	struct ext_sender *e = arg;
	for (long i = 0; i < e->n; i++)
		if (ura_send(e->sys, g_targets[(i + e->id) % NTARGET], A_LEAF, i) == 0)
			e->accepted++;
	return NULL;
}

static void test_external(void)
{
	long n = t_scaled(20000);
	int rounds = 20, premature = 0, await_bad = 0, r;
	ura_system *sys = t_system(0);
	long want = 0;
	for (int i = 0; i < NTARGET; i++)
		t_must(ura_spawn(sys, &target_class, NULL, &g_targets[i]));
	for (r = 0; r < rounds; r++) {
		struct ext_sender e[NEXT_SENDERS];
		for (int i = 0; i < NEXT_SENDERS; i++) {
			e[i] = (struct ext_sender){ .sys = sys, .n = n, .id = i };
			if (pthread_create(&e[i].th, NULL, ext_sender_main, &e[i]))
				t_must(-EAGAIN);
		}
		for (int i = 0; i < NEXT_SENDERS; i++) {
			pthread_join(e[i].th, NULL);
			want += e[i].accepted;
		}
		int rc = await_guarded(sys);
		if (rc != 0) {
			printf("# external round %d: await: %s\n", r, ura_strerror(rc));
			await_bad++;
			break;
		}
		long got = atomic_load(&g_ext_handled);
		if (got != want && premature++ < 5)
			printf("# external round %d: %ld handled, want %ld\n", r, got, want);
	}
	t_eq(await_bad, 0, "external: every await returned 0 (%d rounds)", r);
	t_eq(premature, 0, "external: await never returned before every message ran");
	t_eq(want, (long)r * NEXT_SENDERS * n, "external: every send accepted");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.sent, st.received, "external: stats: sent == received");
	t_destroy(sys);
}

/* ---- idle systems, and await from a handler --------------------------- */

static _Atomic int g_hello;
static _Atomic int g_rc_await = 1, g_rc_await_for = 1;

static void hello(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_hello, 1);
}
static void try_await(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_rc_await, ura_system_await(ura_ctx_system(cx)));
	atomic_store(&g_rc_await_for, ura_system_await_for(ura_ctx_system(cx), URA_MSEC));
}
URA_BEHAVIOR(hello_beh,
	URA_ON(A_HELLO, "", hello),
	URA_ON(A_TRY, "", try_await));
static const ura_class hello_class = { .name = "hello", .initial = &hello_beh };

static void test_idle(void)
{
	ura_system *sys = t_system(0);
	t_rc(await_guarded(sys), 0, "idle: await on a new system with no actors returns 0");
	t_rc(await_guarded(sys), 0, "idle: and again");
	t_destroy(sys);

	ura_config cfg = { .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	t_rc(await_guarded(sys), 0, "idle: await on a paused system with no actors returns 0");
	t_destroy(sys);

	t_must(ura_system_new(&sys, &cfg));
	ura_ref h;
	t_must(ura_spawn(sys, &hello_class, NULL, &h));
	t_must(ura_send(sys, h, A_HELLO));
	t_must(ura_send(sys, h, A_HELLO));
	t_eq(atomic_load(&g_hello), 0, "paused: nothing runs before the start");
	t_rc(await_guarded(sys), 0, "paused: await starts the system");
	t_eq(atomic_load(&g_hello), 2, "paused: and returns after the queued messages ran");
	t_rc(ura_send(sys, h, A_TRY), 0, "await from a handler: sent");
	t_rc(await_guarded(sys), 0, "await from a handler: await");
	t_rc(atomic_load(&g_rc_await), -EDEADLK, "ura_system_await in a handler: -EDEADLK");
	t_rc(atomic_load(&g_rc_await_for), -EDEADLK, "ura_system_await_for in a handler: -EDEADLK");
	t_destroy(sys);
}

int main(void)
{
	test_idle();
	test_chain();
	test_fan();
	test_busy();
	test_external();
	test_concurrent();
	return t_done();
}
