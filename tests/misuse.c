/* SPDX-License-Identifier: MIT */
/*
 * Misuse of the API is refused, never a crash or a silent wrong answer
 * (issue 13): behaviors that would jump to NULL or never match, refs of
 * another system, double frees, a ctx kept past its handler, environment
 * variables with bad values, and who owns a spawn's resources when it
 * fails. Each case failed (crashed, hung or passed wrongly) before.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#define A_X URA_ATOM("x")
#define A_KEEP URA_ATOM("keep")
#define A_BAD URA_ATOM("bad")

static atomic_int g_x;
static void on_x(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; atomic_fetch_add(&g_x, 1); }
URA_BEHAVIOR(x_beh, URA_ON(A_X, "", on_x));
static const ura_class x_class = { .name = "x", .initial = &x_beh };

static void quiet(void *ud, int level, const char *msg) { (void)ud; (void)level; (void)msg; }

/* ---- 8: behaviors that reach an actor are checked ------------------ */

/* A case with no handler: the first message would have jumped to NULL. */
static const ura_case no_fn_cases[] = { { .tag = A_X, .types = "" } };
static const ura_behavior no_fn_beh = { .cases = no_fn_cases, .ncases = 1, .name = "no_fn" };
static const ura_class no_fn_class = { .name = "no_fn", .initial = &no_fn_beh };
/* A guard reading a placeholder the signature does not have: it would
 * have silently never matched. */
URA_BEHAVIOR(bad_guard_beh, URA_ON(A_X, "i", on_x, URA_WHEN(URA_G_EQ(URA_X(2), URA_GI(1)))));
static const ura_class bad_guard_class = { .name = "bad_guard", .initial = &bad_guard_beh };

static atomic_int g_become_rc = 1, g_bound_rc = 1, g_after = 0;
static void on_bad(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_become_rc, ura_become(cx, &no_fn_beh));
	atomic_store(&g_bound_rc, ura_become_bound(cx, &bad_guard_beh, 1));
}
static void on_still(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; atomic_fetch_add(&g_after, 1); }
URA_BEHAVIOR(switcher_beh, URA_ON(A_BAD, "", on_bad), URA_ON(A_X, "", on_still));
static const ura_class switcher_class = { .name = "switcher", .initial = &switcher_beh };

static void test_behaviors(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_rc(ura_spawn(sys, &no_fn_class, NULL, &r), -EINVAL,
	     "spawn: a case without a handler is refused");
	t_rc(ura_spawn(sys, &bad_guard_class, NULL, &r), -EINVAL,
	     "spawn: a guard that does not fit its case is refused");
	t_must(ura_spawn(sys, &switcher_class, NULL, &r));
	t_must(ura_send(sys, r, A_BAD));
	t_must(ura_send(sys, r, A_X));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(atomic_load(&g_become_rc), -EINVAL, "become: a case without a handler is refused");
	t_rc(atomic_load(&g_bound_rc), -EINVAL, "become_bound: a bad guard is refused");
	t_eq(atomic_load(&g_after), 1, "and the actor kept its behavior");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.live, 1, "the refused spawns made no actor");
	t_rc(ura_snap_register(sys, &(ura_snap_class){ .cls = &x_class,
		.behaviors = (const ura_behavior *const[]){ &no_fn_beh }, .nbehaviors = 1 }),
	     -EINVAL, "ura_snap_register: a bad behavior in the list is refused");
	t_destroy(sys);
}

/* ---- 10: a ref of another system reaches no actor here ------------- */

static void test_foreign_refs(void)
{
	ura_system *a = t_system(1), *b = t_system(1);
	ura_ref ra, rb;
	t_must(ura_spawn(a, &x_class, NULL, &ra));
	t_must(ura_spawn(b, &x_class, NULL, &rb));
	/* The two actors hold the same slot and generation in their tables:
	 * only the systems' tags tell the refs apart. */
	t_ok((uint32_t)(ra.id >> 32) == (uint32_t)(rb.id >> 32),
	     "both first actors have the same generation");
	atomic_store(&g_x, 0);
	t_rc(ura_send(b, ra, A_X), -ESRCH, "send with another system's ref: -ESRCH");
	t_rc(ura_send_after(b, ra, URA_MSEC, A_X), -ESRCH, "send_after with it: -ESRCH");
	t_rc(ura_actor_node(b, ra), -ESRCH, "ura_actor_node with it: -ESRCH");
	ura_group *g;
	t_must(ura_group_new(b, &g));
	t_rc(ura_group_join(g, ra), -ESRCH, "group join with it: -ESRCH");
	t_must(ura_send(b, rb, A_X));
	t_rc(ura_system_await(b), 0, "await");
	t_rc(ura_system_await(a), 0, "await");
	t_eq(atomic_load(&g_x), 1, "only b's own actor got a message");
	t_destroy(a);
	t_destroy(b);
}

/* ---- 11: double frees, a ctx kept past its handler, NULL buffers ---- */

static ura_ctx *g_kept;
static ura_ref g_kept_self;
static void on_keep(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	g_kept = cx;
	g_kept_self = ura_self(cx);
}
URA_BEHAVIOR(keeper_beh, URA_ON(A_KEEP, "", on_keep), URA_ON(A_X, "", on_x));
static const ura_class keeper_class = { .name = "keeper", .initial = &keeper_beh };

static void test_double_free_and_stale_ctx(void)
{
	ura_system *sys;
	t_must(ura_system_new(&sys, &(ura_config){ .workers = 2, .log = quiet }));
	ura_group *g;
	t_must(ura_group_new(sys, &g));
	t_rc(ura_group_free(g), 0, "ura_group_free");
	t_rc(ura_group_free(g), -EINVAL, "ura_group_free again: -EINVAL, no crash");
	ura_group *g2;
	t_must(ura_group_new(sys, &g2)); /* freed by destroy below */
	ura_ref k;
	t_must(ura_spawn(sys, &keeper_class, NULL, &k));
	atomic_store(&g_x, 0);
	t_must(ura_send(sys, k, A_KEEP));
	t_rc(ura_system_await(sys), 0, "await");
#ifdef NDEBUG
	t_skip("a kept ctx is detected in builds without NDEBUG only");
	t_skip("(idem)");
#else
	t_rc(ura_send(g_kept, g_kept_self, A_X), -EINVAL,
	     "a ctx kept past its handler, used from another thread: -EINVAL");
	t_ok(ura_ref_null(ura_self(g_kept)) && ura_state(g_kept) == NULL,
	     "and its accessors answer nothing");
	/* (In a later turn on the same worker the kept pointer may name that
	 * turn's own ctx, the same stack slot: not something a check can tell
	 * from a right use. ura.h says so.) */
#endif
	t_eq(atomic_load(&g_x), 0, "nothing was sent through it");
	t_rc(ura_system_destroy(sys), 0, "destroy");
	t_rc(ura_system_destroy(sys), -EINVAL, "destroy again: -EINVAL, no crash");
	t_rc(ura_group_free(g2), -EINVAL, "a group the destroy freed: -EINVAL");
	char buf[URA_ATOM_MAX + 1];
	t_streq(ura_atom_name(URA_ATOM("hi"), NULL), "hi", "ura_atom_name with a NULL buffer");
	t_streq(ura_atom_name(URA_ATOM("hi"), buf), "hi", "and with one");
}

/* ---- 14: every environment variable is validated the same way ------- */

static void test_env(void)
{
	static const char *const bad[][2] = {
		{ "URA_LOG", "verbose" }, { "URA_TRACE", "bogus" }, { "URA_TRACE", "unmatched,x" },
		{ "URA_IO_URING", "maybe" }, { "URA_WORKERS", "abc" }, { "URA_NUMA_BATCH", "-1" },
		{ "URA_BATCH", "0" }, { "URA_TIMER_SLACK_US", " 5" }, { "URA_POOL_THREADS", "2x" },
		{ "URA_STEAL_REMOTE_US", "99999999999" },
		{ "URA_SPIN_US", "0" }, { "URA_METRICS_SAMPLE", "17" },
		{ "URA_TOPOLOGY", "2y1" }, { "URA_PIN", "sometimes" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		const char *old = getenv(bad[i][0]);
		char *keep = old ? strdup(old) : NULL;
		setenv(bad[i][0], bad[i][1], 1);
		ura_system *sys = (ura_system *)&keep;
		t_rc(ura_system_new(&sys, &(ura_config){ .paused = 1, .log = quiet }), -EINVAL,
		     "%s=%s: -EINVAL", bad[i][0], bad[i][1]);
		t_ok(sys == NULL, "and no system");
		if (keep)
			setenv(bad[i][0], keep, 1);
		else
			unsetenv(bad[i][0]);
		free(keep);
	}
	setenv("URA_LOG", "debug", 1);
	setenv("URA_TRACE", "unmatched", 1);
	setenv("URA_IO_URING", "yes", 1);
	ura_system *sys;
	t_rc(ura_system_new(&sys, &(ura_config){ .paused = 1, .log = quiet }), 0,
	     "URA_LOG=debug URA_TRACE=unmatched URA_IO_URING=yes: accepted");
	t_destroy(sys);
	setenv("URA_LOG", "warn", 1);
	unsetenv("URA_TRACE");
	unsetenv("URA_IO_URING");
}

/* ---- spawn: destroy runs exactly when the spawn succeeded ------------ */

static atomic_int g_inits, g_destroys;
static int init_count(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	(void)state;
	(void)arg;
	atomic_fetch_add(&g_inits, 1);
	return 0;
}
static void destroy_count(void *state) { (void)state; atomic_fetch_add(&g_destroys, 1); }
static const ura_class owned_class = { .name = "owned", .initial = &x_beh,
				       .init = init_count, .destroy = destroy_count };

static void test_spawn_ownership(void)
{
	ura_system *a = t_system(1), *b = t_system(1);
	ura_group *ga;
	t_must(ura_group_new(a, &ga));
	ura_group_free(ga); /* a freed group: the join fails */
	ura_group *gb;
	t_must(ura_group_new(b, &gb));
	ura_ref r;
	/* A group of another system: the join refuses the ref (-ESRCH). */
	t_rc(ura_spawn_ex(a, &owned_class, NULL, &(ura_spawn_opts){ .group = gb }, &r), -ESRCH,
	     "spawn into a group of another system fails");
	t_eq(atomic_load(&g_inits), 0, "without running init");
	t_eq(atomic_load(&g_destroys), 0, "so without destroy either");
	t_must(ura_spawn(a, &owned_class, NULL, &r));
	t_destroy(a);
	t_destroy(b);
	t_eq(atomic_load(&g_inits), 1, "a spawn that succeeded ran init");
	t_eq(atomic_load(&g_destroys), 1, "and destroy, once");
}

int main(void)
{
	test_behaviors();
	test_foreign_refs();
	test_double_free_and_stale_ctx();
	test_env();
	test_spawn_ownership();
	return t_done();
}
