/* SPDX-License-Identifier: MIT */
/*
 * ura_system_destroy: with live idle actors it returns 0 and runs every
 * actor's destroy callback exactly once (stopped ones ran theirs at the
 * stop, never again); with accepted messages never handled (a paused
 * system that never started, or stashed messages that never matched) it
 * returns -EBUSY, logs a warning and still frees everything, strings and
 * bytes included (run under ASan or valgrind to see that); from a handler
 * it returns -EDEADLK and leaves the system working.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_HELLO URA_ATOM("hello")
#define A_STOP URA_ATOM("stop")
#define A_SPAWN URA_ATOM("spawn")
#define A_KILL URA_ATOM("kill")
#define A_GO URA_ATOM("go")
#define A_DATA URA_ATOM("data")

#define MAXA 512

/* Per-actor destroy callback counts, by the index in the actor's state. */
static _Atomic int g_calls[MAXA];
static _Atomic int g_bad_state;
static _Atomic long g_hellos;
static _Atomic int g_next_idx;

typedef struct {
	int idx;
	char *heap; /* the state may own memory: destroy frees it */
} keeper;

static void reset_calls(void)
{
	for (int i = 0; i < MAXA; i++)
		atomic_store(&g_calls[i], 0);
	atomic_store(&g_bad_state, 0);
	atomic_store(&g_next_idx, 0);
}

/* Checks that actors [0, n) had their callback run exactly once. */
static int calls_once(int n, const char *what)
{
	int ok = 1;
	for (int i = 0; i < MAXA; i++) {
		int c = atomic_load(&g_calls[i]);
		if (c != (i < n)) {
			if (ok)
				printf("# %s: actor %d: destroy callback ran %d times\n", what, i, c);
			ok = 0;
		}
	}
	return ok;
}

static int keeper_init(ura_ctx *cx, void *state, const void *arg)
{
	keeper *k = state;
	(void)cx;
	(void)arg;
	k->idx = atomic_fetch_add(&g_next_idx, 1);
	k->heap = malloc(64);
	if (!k->heap)
		return -ENOMEM;
	snprintf(k->heap, 64, "keeper %d", k->idx);
	return 0;
}

static void keeper_destroy(void *state)
{
	keeper *k = state;
	char want[64];
	if (!k || k->idx < 0 || k->idx >= MAXA) {
		atomic_fetch_add(&g_bad_state, 1);
		return;
	}
	snprintf(want, sizeof want, "keeper %d", k->idx);
	if (!k->heap || strcmp(k->heap, want))
		atomic_fetch_add(&g_bad_state, 1);
	free(k->heap);
	k->heap = NULL;
	atomic_fetch_add(&g_calls[k->idx], 1);
}

static void keeper_hello(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_hellos, 1);
}
static void keeper_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}
static const ura_class keeper_class;
static void keeper_spawn(ura_ctx *cx, const ura_msg *m)
{
	int64_t n = ura_arg_i64(m, 0);
	for (int64_t i = 0; i < n; i++) {
		ura_ref r;
		if (ura_spawn(cx, &keeper_class, NULL, &r) < 0 ||
		    ura_send(cx, r, A_HELLO, "from a handler") < 0)
			atomic_fetch_add(&g_bad_state, 1);
	}
}
/* Strings and bytes of any size, any number of values. */
static void keeper_data(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_hellos, 1);
}
URA_BEHAVIOR(keeper_beh,
	URA_ON(A_HELLO, "s", keeper_hello),
	URA_ON(A_HELLO, "", keeper_hello),
	URA_ON(A_STOP, "", keeper_stop),
	URA_ON(A_SPAWN, "i", keeper_spawn),
	URA_ON_ANY(A_DATA, keeper_data));
static const ura_class keeper_class = {
	.name = "keeper", .state_size = sizeof(keeper), .initial = &keeper_beh,
	.init = keeper_init, .destroy = keeper_destroy,
};

/* A class without a destroy callback, to mix in. */
static const ura_class plain_class = { .name = "plain", .initial = &keeper_beh };

/* Log sink: counts warnings and errors. */
static _Atomic int g_warnings;
static void count_log(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level <= URA_LOG_WARN) {
		atomic_fetch_add(&g_warnings, 1);
		printf("# log: %s\n", msg);
	}
}

static ura_system *new_system(int paused)
{
	ura_system *sys;
	ura_config cfg = { .paused = paused, .log = count_log };
	t_must(ura_system_new(&sys, &cfg));
	atomic_store(&g_warnings, 0);
	return sys;
}

/* ---- 1. live idle actors ---------------------------------------------- */

static void test_live(void)
{
	ura_system *sys = new_system(0);
	ura_ref r[100], spawner, p;
	reset_calls();
	for (int i = 0; i < 100; i++)
		t_must(ura_spawn(sys, &keeper_class, NULL, &r[i]));
	t_must(ura_spawn(sys, &plain_class, NULL, &p));
	/* The first 30 get a message, the next 20 stop themselves. */
	for (int i = 0; i < 30; i++)
		t_must(ura_send(sys, r[i], A_HELLO, "a string that stays the mailbox's tail"));
	for (int i = 30; i < 50; i++)
		t_must(ura_send(sys, r[i], A_STOP));
	t_must(ura_send(sys, p, A_HELLO));
	t_rc(await_guarded(sys), 0, "live: await");
	int stopped_once = 1;
	for (int i = 0; i < 100; i++)
		stopped_once &= atomic_load(&g_calls[i]) == (i >= 30 && i < 50);
	t_ok(stopped_once, "live: the stopped actors' callbacks ran at the stop, no others");
	/* 50 more spawned from a handler, on the workers. */
	t_must(ura_spawn(sys, &keeper_class, NULL, &spawner));
	t_must(ura_send(sys, spawner, A_SPAWN, 50));
	t_rc(await_guarded(sys), 0, "live: await spawns from a handler");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.live, 100 - 20 + 1 + 1 + 50, "live: stats.live");
	t_eq(atomic_load(&g_next_idx), 151, "live: 151 keepers were spawned");
	t_rc(ura_system_destroy(sys), 0, "live: destroy with live idle actors returns 0");
	t_ok(calls_once(151, "live"), "live: every destroy callback ran exactly once");
	t_eq(atomic_load(&g_bad_state), 0, "live: each callback saw its own intact state");
	t_eq(atomic_load(&g_warnings), 0, "live: nothing logged at warn level");
}

/* ---- 2. a paused system with queued messages --------------------------- */

static char g_big[100000];

static int send_data(ura_system *sys, ura_ref to, int i)
{
	int rc = 0;
	rc |= ura_send(sys, to, A_HELLO, "short");
	rc |= ura_send(sys, to, A_DATA, (int64_t)i, g_big); /* big string */
	rc |= ura_send(sys, to, A_DATA, ura_v_bytes(g_big, 3000 + (size_t)i));
	rc |= ura_send(sys, to, A_DATA, ura_v_bytes(g_big, 40), "x", 1.5, to,
		       ura_v_bytes(g_big, 10), "y", "z", 3, 4, 5); /* 10 values */
	rc |= ura_send(sys, to, A_DATA, ura_v_bytes(NULL, 0), "");
	return rc;
}

static void test_paused(void)
{
	ura_system *sys = new_system(1);
	ura_ref r[20];
	reset_calls();
	memset(g_big, 'b', sizeof g_big - 1);
	for (int i = 0; i < 20; i++)
		t_must(ura_spawn(sys, &keeper_class, NULL, &r[i]));
	int ok = 1;
	for (int i = 0; i < 20; i++)
		ok &= send_data(sys, r[i], i) == 0;
	t_ok(ok, "paused: strings, bytes and many values queued");
	atomic_store(&g_hellos, 0);
	t_rc(ura_system_destroy(sys), -EBUSY,
	     "paused: destroy with queued messages, never started: -EBUSY");
	t_eq(atomic_load(&g_hellos), 0, "paused: no handler ran");
	t_ok(calls_once(20, "paused"), "paused: every destroy callback ran exactly once");
	t_eq(atomic_load(&g_bad_state), 0, "paused: each callback saw its own intact state");
	t_ok(atomic_load(&g_warnings) > 0, "paused: the loss was logged at warn level");

	/* Paused, actors, nothing queued: nothing lost. */
	sys = new_system(1);
	reset_calls();
	for (int i = 0; i < 5; i++)
		t_must(ura_spawn(sys, &keeper_class, NULL, &r[i]));
	t_rc(ura_system_destroy(sys), 0, "paused, nothing queued: destroy returns 0");
	t_ok(calls_once(5, "paused, nothing queued"), "paused, nothing queued: callbacks once");
	t_eq(atomic_load(&g_warnings), 0, "paused, nothing queued: nothing logged at warn level");
}

/* ---- 3. stashed messages that never match ------------------------------ */

static _Atomic long g_gos;
static void stasher_go(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_gos, 1);
}
URA_BEHAVIOR_OPTS(stasher_beh, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_GO, "", stasher_go));
static const ura_class stasher_class = { .name = "stasher", .initial = &stasher_beh };

static void test_stashed(void)
{
	ura_system *sys = new_system(0);
	ura_ref s[4];
	for (int i = 0; i < 4; i++)
		t_must(ura_spawn(sys, &stasher_class, NULL, &s[i]));
	int ok = 1;
	for (int i = 0; i < 4; i++) {
		ok &= send_data(sys, s[i], i) == 0;
		ok &= ura_send(sys, s[i], A_GO) == 0;
	}
	t_ok(ok, "stashed: messages sent");
	t_rc(await_guarded(sys), 0, "stashed: await");
	t_eq(atomic_load(&g_gos), 4, "stashed: the matching messages ran");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.stashed, 4 * 5, "stashed: the others were stashed");
	t_rc(ura_system_destroy(sys), -EBUSY,
	     "stashed: destroy with stashed, never matched messages: -EBUSY");
	t_ok(atomic_load(&g_warnings) > 0, "stashed: the loss was logged at warn level");
}

/* ---- 4. destroy from a handler ----------------------------------------- */

static _Atomic int g_rc_destroy = 1, g_rc_shutdown = 1;
static void killer(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_rc_destroy, ura_system_destroy(ura_ctx_system(cx)));
	atomic_store(&g_rc_shutdown, ura_system_shutdown(ura_ctx_system(cx)));
}
URA_BEHAVIOR(killer_beh,
	URA_ON(A_KILL, "", killer),
	URA_ON(A_HELLO, "", keeper_hello));
static const ura_class killer_class = { .name = "killer", .initial = &killer_beh };

static void test_from_handler(void)
{
	ura_system *sys = new_system(0);
	ura_ref k;
	t_must(ura_spawn(sys, &killer_class, NULL, &k));
	t_must(ura_send(sys, k, A_KILL));
	t_rc(await_guarded(sys), 0, "handler: await");
	t_rc(atomic_load(&g_rc_destroy), -EDEADLK, "handler: destroy from a handler: -EDEADLK");
	t_rc(atomic_load(&g_rc_shutdown), -EDEADLK, "handler: shutdown from a handler: -EDEADLK");
	atomic_store(&g_hellos, 0);
	t_rc(ura_send(sys, k, A_HELLO), 0, "handler: the system still takes messages");
	t_rc(await_guarded(sys), 0, "handler: await again");
	t_eq(atomic_load(&g_hellos), 1, "handler: and still runs them");
	t_destroy(sys);
}

/* ---- 5. destroy while actors are busy ----------------------------------- */

/* Each busy actor keeps a message (with a string) in its own mailbox and
 * sends more to a neighbour, so at destroy messages sit in mailboxes of
 * actors that are running, queued, in the next slot or in the inject
 * queue. */
#define NBUSY 64
static ura_ref g_busy[NBUSY];
static _Atomic long g_busy_turns;
static void busy_go(ura_ctx *cx, const ura_msg *m)
{
	int64_t i = ura_arg_i64(m, 0);
	atomic_fetch_add_explicit(&g_busy_turns, 1, memory_order_relaxed);
	ura_send(cx, ura_self(cx), A_GO, i, "self, with a string");
	if ((i & 7) == 0)
		ura_send(cx, g_busy[(i + 1) % NBUSY], A_GO, (i + 1) % NBUSY,
			 "to a neighbour, with a longer string so it takes a bigger block");
}
URA_BEHAVIOR(busy_beh, URA_ON(A_GO, "is", busy_go));
static const ura_class busy_class = {
	.name = "busy", .state_size = sizeof(keeper), .initial = &busy_beh,
	.init = keeper_init, .destroy = keeper_destroy,
};

static void test_busy(void)
{
	ura_system *sys = new_system(0);
	reset_calls();
	atomic_store(&g_busy_turns, 0);
	for (int i = 0; i < NBUSY; i++)
		t_must(ura_spawn(sys, &busy_class, NULL, &g_busy[i]));
	for (int i = 0; i < NBUSY; i++)
		t_must(ura_send(sys, g_busy[i], A_GO, i, "go"));
	/* Not a timing check: wait until they are all going. */
	while (atomic_load(&g_busy_turns) < 10 * NBUSY)
		sched_yield();
	t_rc(ura_system_await_for(sys, 0), -ETIMEDOUT, "busy: not quiescent");
	t_rc(ura_system_destroy(sys), -EBUSY,
	     "busy: destroy while actors keep themselves busy: -EBUSY (their queued messages)");
	t_ok(calls_once(NBUSY, "busy"), "busy: every destroy callback ran exactly once");
	t_eq(atomic_load(&g_bad_state), 0, "busy: each callback saw its own intact state");
	t_ok(atomic_load(&g_warnings) > 0, "busy: the loss was logged at warn level");
}

/* ---- 6. shutdown, then destroy ------------------------------------------ */

static void test_shutdown(void)
{
	ura_system *sys = new_system(0);
	ura_ref r;
	reset_calls();
	t_must(ura_spawn(sys, &keeper_class, NULL, &r));
	t_must(ura_send(sys, r, A_HELLO, "x"));
	t_rc(await_guarded(sys), 0, "shutdown: await");
	t_rc(ura_system_shutdown(sys), 0, "shutdown: 0");
	t_rc(ura_system_shutdown(sys), 0, "shutdown: again, 0 (idempotent)");
	t_rc(ura_send(sys, r, A_HELLO), -ESHUTDOWN, "shutdown: send: -ESHUTDOWN");
	ura_ref r2;
	t_rc(ura_spawn(sys, &keeper_class, NULL, &r2), -ESHUTDOWN, "shutdown: spawn: -ESHUTDOWN");
	t_rc(ura_system_destroy(sys), 0, "shutdown: destroy after shutdown: 0");
	t_ok(calls_once(1, "shutdown"), "shutdown: the actor's callback ran once");
}

int main(void)
{
	test_live();
	test_paused();
	test_stashed();
	test_from_handler();
	test_busy();
	test_shutdown();
	return t_done();
}
