/* SPDX-License-Identifier: MIT */
/*
 * Supervisors (ura.h, "Supervisors"; issue 15): each strategy, each child
 * kind, restart intensity exceeded (the supervisor stops with
 * URA_MAXRESTART), supervisors supervising supervisors (a failure
 * escalates, a shutdown goes down the tree), ordered shutdown (last
 * started first) with a child that traps exits and is killed after its
 * timeout, the runtime calls (which, start, terminate, restart, delete)
 * from a thread and from a handler, and bad specs and calls.
 *
 * Children are actors of `kid_class`: each start and stop of child i is
 * counted, and a watcher actor monitors refs and logs each DOWN (who,
 * reason) in order, so the tests see who stopped, why and in what order.
 * A storm of random crashes on every worker, during restarts, checks that
 * each child runs at most once at a time and all stop in the end. Every
 * step waits for quiescence (ura_system_await), never for a time.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "tap.h"

#define A_CRASH URA_ATOM("crash")
#define A_QUIT URA_ATOM("quit")
#define A_BOOM URA_ATOM("boom")
#define A_WATCH URA_ATOM("watch")
#define A_GO URA_ATOM("go")

enum { NKIDS = 16 };
_Static_assert(NKIDS > 8, "the storm uses 9");

typedef struct {
	int idx;
	int trap;     /* traps exits and ignores a shutdown */
	int fail;     /* init fails with this -errno */
} kid_arg;

static atomic_int starts[NKIDS], stops[NKIDS];

static void kid_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_BOOM, URA_NOVALUE);
}

static void kid_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

static void kid_exit_sig(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m; /* a trapper that stays: only a kill stops it */
}

URA_BEHAVIOR(kid_beh,
	URA_ON(A_CRASH, "", kid_crash),
	URA_ON(A_QUIT, "", kid_quit),
	URA_ON_ANY(URA_EXIT, kid_exit_sig));

static int kid_init(ura_ctx *cx, void *state, const void *arg)
{
	const kid_arg *a = arg;
	if (a->fail)
		return a->fail;
	*(int *)state = a->idx;
	if (a->trap)
		ura_trap_exit(cx, 1);
	atomic_fetch_add(&starts[a->idx], 1);
	return 0;
}

static void kid_destroy(void *state)
{
	atomic_fetch_add(&stops[*(int *)state], 1);
}

static const ura_class kid_class = {
	.name = "kid",
	.state_size = sizeof(int),
	.initial = &kid_beh,
	.init = kid_init,
	.destroy = kid_destroy,
};

static kid_arg args[NKIDS];

static void args_init(void)
{
	for (int i = 0; i < NKIDS; i++)
		args[i].idx = i;
}

/* ---- the watcher: monitors refs, logs DOWNs in order ------------------ */

typedef struct {
	ura_ref who;
	ura_atom why;
} down;

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static down downs[256];
static int ndowns;

static void w_watch(ura_ctx *cx, const ura_msg *m)
{
	ura_monitor(cx, ura_arg_ref(m, 0));
}

static void w_down(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&log_mu);
	if (ndowns < 256)
		downs[ndowns++] = (down){ .who = ura_exit_who(m), .why = ura_exit_reason(m) };
	pthread_mutex_unlock(&log_mu);
}

URA_BEHAVIOR(watching,
	URA_ON(A_WATCH, "r", w_watch),
	URA_ON_ANY(URA_DOWN, w_down));

static const ura_class watcher_class = {
	.name = "watcher",
	.initial = &watching,
};

static ura_ref watcher;

static void watch(ura_system *sys, ura_ref r)
{
	ura_send(sys, watcher, A_WATCH, r);
}

static void log_reset(void)
{
	pthread_mutex_lock(&log_mu);
	ndowns = 0;
	pthread_mutex_unlock(&log_mu);
}

/* The reason `who` stopped with, and its place in the log; -1 if not. */
static int down_of(ura_ref who, ura_atom *why)
{
	int at = -1;
	pthread_mutex_lock(&log_mu);
	for (int i = 0; i < ndowns; i++)
		if (ura_ref_eq(downs[i].who, who)) {
			at = i;
			if (why)
				*why = downs[i].why;
		}
	pthread_mutex_unlock(&log_mu);
	return at;
}

/* ---- helpers --------------------------------------------------------- */

static void reset_counts(void)
{
	for (int i = 0; i < NKIDS; i++) {
		atomic_store(&starts[i], 0);
		atomic_store(&stops[i], 0);
	}
}

static ura_child_spec kid(ura_atom id, int idx, ura_child_kind kind)
{
	return (ura_child_spec){ .id = id, .cls = &kid_class, .arg = &args[idx], .kind = kind };
}

/* The refs of a supervisor's children, by position; URA_NOREF past the
 * end. Returns the count. */
static long kids_of(ura_system *sys, ura_ref sup, ura_sup_child *out, size_t max)
{
	memset(out, 0, max * sizeof *out);
	return ura_sup_which_sys(sys, sup, out, max);
}

static int alive(ura_system *sys, ura_ref r)
{
	return ura_actor_node(sys, r) >= 0;
}

#define ID_A URA_ATOM("a")
#define ID_B URA_ATOM("b")
#define ID_C URA_ATOM("c")

/* ---- strategies ------------------------------------------------------ */

static void test_strategy(ura_system *sys, ura_sup_strategy st, const char *name)
{
	ura_child_spec cs[3] = { kid(ID_A, 0, URA_PERMANENT), kid(ID_B, 1, URA_PERMANENT),
				 kid(ID_C, 2, URA_PERMANENT) };
	ura_sup_spec spec = { .strategy = st, .intensity = 10, .period_ns = 60 * URA_SEC,
			      .children = cs, .nchildren = 3 };
	ura_ref sup;
	ura_sup_child before[4], after[4];
	reset_counts();
	log_reset();
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "%s: starts with three children", name);
	t_eq(kids_of(sys, sup, before, 4), 3, "%s: which lists three", name);
	t_ok(before[0].id == ID_A && before[1].id == ID_B && before[2].id == ID_C &&
	     !ura_ref_null(before[0].ref) && !ura_ref_null(before[2].ref),
	     "%s: in spec order, running", name);
	for (int i = 0; i < 3; i++)
		watch(sys, before[i].ref);
	await_guarded(sys);
	ura_send(sys, before[1].ref, A_CRASH);
	await_guarded(sys);
	t_eq(kids_of(sys, sup, after, 4), 3, "%s: still three children after b crashed", name);
	int same[3];
	for (int i = 0; i < 3; i++)
		same[i] = ura_ref_eq(before[i].ref, after[i].ref);
	t_ok(!same[1] && alive(sys, after[1].ref) && after[1].restarts == 1,
	     "%s: b restarted (new ref, restarts 1)", name);
	ura_atom why = 0;
	down_of(before[1].ref, &why);
	t_eq(why, A_BOOM, "%s: b stopped with its own reason", name);
	if (st == URA_ONE_FOR_ONE) {
		t_ok(same[0] && same[2], "one_for_one: a and c untouched");
		t_ok(atomic_load(&starts[0]) == 1 && atomic_load(&starts[2]) == 1,
		     "one_for_one: a and c started once");
	} else if (st == URA_ONE_FOR_ALL) {
		t_ok(!same[0] && !same[2] && alive(sys, after[0].ref) && alive(sys, after[2].ref),
		     "one_for_all: a and c restarted too");
		ura_atom wa = 0, wc = 0;
		int pa = down_of(before[0].ref, &wa), pc = down_of(before[2].ref, &wc);
		t_ok(pc >= 0 && pa > pc, "one_for_all: c terminated before a (last started first)");
		t_ok(wa == URA_SHUTDOWN && wc == URA_SHUTDOWN, "one_for_all: with reason shutdown");
		t_ok(after[0].restarts == 0 && after[2].restarts == 0,
		     "one_for_all: only b counts a restart");
	} else {
		t_ok(same[0], "rest_for_one: a (before b) untouched");
		t_ok(!same[2] && alive(sys, after[2].ref), "rest_for_one: c (after b) restarted");
		ura_atom wc = 0;
		down_of(before[2].ref, &wc);
		t_eq(wc, URA_SHUTDOWN, "rest_for_one: c terminated with shutdown");
	}
	/* The watcher monitors on its own turn: wait for it, or the kill can
	 * come first and the DOWN says noproc. */
	watch(sys, sup);
	await_guarded(sys);
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	ura_atom ws = 0;
	int ps = down_of(sup, &ws);
	t_ok(ps >= 0 && ws == URA_SHUTDOWN, "%s: a shutdown stops the supervisor (shutdown)", name);
	int balanced = 1;
	for (int i = 0; i < 3; i++)
		balanced &= atomic_load(&starts[i]) == atomic_load(&stops[i]);
	t_ok(balanced, "%s: and every child it started has stopped", name);
}

/* ---- kinds ----------------------------------------------------------- */

static void test_kinds(ura_system *sys)
{
	ura_child_spec cs[5] = {
		kid(URA_ATOM("perm"), 0, URA_PERMANENT),
		kid(URA_ATOM("trans_n"), 1, URA_TRANSIENT),
		kid(URA_ATOM("trans_c"), 2, URA_TRANSIENT),
		kid(URA_ATOM("temp"), 3, URA_TEMPORARY),
		kid(URA_ATOM("trans_s"), 4, URA_TRANSIENT),
	};
	ura_sup_spec spec = { .intensity = 10, .period_ns = 60 * URA_SEC, .children = cs,
			      .nchildren = 5 };
	ura_ref sup;
	ura_sup_child k[6];
	reset_counts();
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "kinds: supervisor starts");
	kids_of(sys, sup, k, 6);
	ura_send(sys, k[0].ref, A_QUIT);  /* permanent, normal exit */
	ura_send(sys, k[1].ref, A_QUIT);  /* transient, normal exit */
	ura_send(sys, k[2].ref, A_CRASH); /* transient, crash */
	ura_send(sys, k[3].ref, A_CRASH); /* temporary, crash */
	ura_kill(sys, k[4].ref, URA_SHUTDOWN); /* transient, shutdown */
	await_guarded(sys);
	ura_sup_child a[6];
	long n = kids_of(sys, sup, a, 6);
	t_eq(n, 4, "kinds: the temporary child is gone from the list");
	t_ok(a[0].id == URA_ATOM("perm") && !ura_ref_null(a[0].ref) && a[0].restarts == 1,
	     "permanent: restarted after a normal exit");
	t_ok(a[1].id == URA_ATOM("trans_n") && ura_ref_null(a[1].ref) && a[1].restarts == 0,
	     "transient: not restarted after a normal exit, kept, not running");
	t_ok(a[2].id == URA_ATOM("trans_c") && !ura_ref_null(a[2].ref) && a[2].restarts == 1,
	     "transient: restarted after a crash");
	t_ok(a[3].id == URA_ATOM("trans_s") && ura_ref_null(a[3].ref),
	     "transient: not restarted after a shutdown");
	t_eq(atomic_load(&starts[3]), 1, "temporary: never restarted");
	t_rc(ura_sup_restart_child_sys(sys, sup, URA_ATOM("trans_n"), &a[1].ref), 0,
	     "restart_child starts the stopped transient child");
	t_ok(alive(sys, a[1].ref), "restart_child: its new ref is alive");
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	int balanced = 1;
	for (int i = 0; i < 5; i++)
		balanced &= atomic_load(&starts[i]) == atomic_load(&stops[i]);
	t_ok(balanced, "kinds: every child stopped with the supervisor");
}

/* ---- intensity ------------------------------------------------------- */

static void test_intensity(ura_system *sys)
{
	ura_child_spec cs[2] = { kid(ID_A, 0, URA_PERMANENT), kid(ID_B, 1, URA_PERMANENT) };
	ura_sup_spec spec = { .intensity = 2, .period_ns = 3600 * URA_SEC, .children = cs,
			      .nchildren = 2 };
	ura_ref sup;
	ura_sup_child k[2];
	reset_counts();
	log_reset();
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "intensity: starts (2 restarts per hour)");
	watch(sys, sup);
	for (int i = 0; i < 2; i++) {
		kids_of(sys, sup, k, 2);
		ura_send(sys, k[1].ref, A_CRASH);
		await_guarded(sys);
	}
	t_ok(alive(sys, sup), "intensity: two restarts are within it");
	t_eq(atomic_load(&starts[1]), 3, "intensity: b started three times");
	kids_of(sys, sup, k, 2);
	ura_send(sys, k[1].ref, A_CRASH);
	await_guarded(sys);
	ura_atom why = 0;
	t_ok(down_of(sup, &why) >= 0 && why == URA_MAXRESTART,
	     "intensity: the third restart stops the supervisor with maxrestart");
	t_ok(atomic_load(&starts[0]) == atomic_load(&stops[0]) &&
	     atomic_load(&starts[1]) == atomic_load(&stops[1]),
	     "intensity: its children stopped with it");
	t_eq(kids_of(sys, sup, k, 2), -ESRCH, "which on a stopped supervisor: -ESRCH");
}

/* ---- nested ---------------------------------------------------------- */

static void test_nested(ura_system *sys)
{
	ura_child_spec inner[2] = { kid(URA_ATOM("y"), 1, URA_PERMANENT),
				    kid(URA_ATOM("z"), 2, URA_PERMANENT) };
	ura_sup_spec ispec = { .strategy = URA_ONE_FOR_ALL, .intensity = 1,
			       .period_ns = 3600 * URA_SEC, .children = inner, .nchildren = 2 };
	ura_child_spec outer[2] = {
		kid(URA_ATOM("x"), 0, URA_PERMANENT),
		{ .id = URA_ATOM("inner"), .sup = &ispec },
	};
	ura_sup_spec ospec = { .intensity = 5, .period_ns = 3600 * URA_SEC, .children = outer,
			       .nchildren = 2 };
	ura_ref top;
	ura_sup_child o[2], i1[2], i2[2], o2[2];
	reset_counts();
	log_reset();
	t_rc(ura_sup_start(sys, &ospec, NULL, &top), 0, "nested: a supervisor of a supervisor");
	kids_of(sys, top, o, 2);
	t_ok(o[1].supervisor == 1 && o[0].supervisor == 0, "nested: which marks the supervisor");
	t_eq(kids_of(sys, o[1].ref, i1, 2), 2, "nested: the inner one has its two children");
	watch(sys, o[1].ref);
	await_guarded(sys);
	ura_send(sys, i1[0].ref, A_CRASH);
	await_guarded(sys);
	kids_of(sys, o[1].ref, i2, 2);
	t_ok(!ura_ref_eq(i1[0].ref, i2[0].ref) && !ura_ref_eq(i1[1].ref, i2[1].ref),
	     "nested: the inner one_for_all restarted y and z");
	kids_of(sys, top, o2, 2);
	t_ok(ura_ref_eq(o[0].ref, o2[0].ref) && ura_ref_eq(o[1].ref, o2[1].ref),
	     "nested: the top one saw nothing");
	ura_send(sys, i2[1].ref, A_CRASH); /* the inner's second restart: over */
	await_guarded(sys);
	ura_atom why = 0;
	t_ok(down_of(o[1].ref, &why) >= 0 && why == URA_MAXRESTART,
	     "nested: the inner one gives up (maxrestart)");
	kids_of(sys, top, o2, 2);
	t_ok(!ura_ref_eq(o[1].ref, o2[1].ref) && alive(sys, o2[1].ref) && o2[1].restarts == 1,
	     "nested: and the top one restarts it");
	t_ok(ura_ref_eq(o[0].ref, o2[0].ref), "nested: x untouched (one_for_one)");
	t_eq(kids_of(sys, o2[1].ref, i2, 2), 2, "nested: the new inner one has y and z again");
	t_eq(atomic_load(&starts[1]), 3, "nested: y started 3 times (start, its restart, the new inner)");
	log_reset();
	watch(sys, top);
	watch(sys, o2[1].ref);
	watch(sys, i2[0].ref);
	watch(sys, i2[1].ref);
	watch(sys, o2[0].ref);
	await_guarded(sys);
	ura_kill(sys, top, URA_SHUTDOWN);
	await_guarded(sys);
	int pz = down_of(i2[1].ref, NULL), py = down_of(i2[0].ref, NULL);
	int pi = down_of(o2[1].ref, NULL), px = down_of(o2[0].ref, NULL), pt = down_of(top, NULL);
	t_ok(pz >= 0 && pz < py && py < pi && pi < px && px < pt,
	     "nested: shutdown goes down the tree, last started first: z y inner x top "
	     "(%d %d %d %d %d)", pz, py, pi, px, pt);
	int balanced = 1;
	for (int i = 0; i < 3; i++)
		balanced &= atomic_load(&starts[i]) == atomic_load(&stops[i]);
	t_ok(balanced, "nested: every child of both stopped");
}

/* ---- ordered shutdown with a child that will not stop ----------------- */

static void test_shutdown_timeout(ura_system *sys)
{
	static kid_arg trap_arg = { .idx = 5, .trap = 1 };
	ura_child_spec cs[3] = {
		kid(ID_A, 4, URA_PERMANENT),
		{ .id = URA_ATOM("stubborn"), .cls = &kid_class, .arg = &trap_arg,
		  .shutdown_ns = 50 * URA_MSEC },
		kid(ID_C, 6, URA_PERMANENT),
	};
	ura_sup_spec spec = { .children = cs, .nchildren = 3 };
	ura_ref sup;
	ura_sup_child k[3];
	reset_counts();
	log_reset();
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "shutdown: starts a, stubborn, c");
	kids_of(sys, sup, k, 3);
	for (int i = 0; i < 3; i++)
		watch(sys, k[i].ref);
	watch(sys, sup);
	await_guarded(sys);
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	ura_atom wa = 0, wt = 0, wc = 0, ws = 0;
	int pa = down_of(k[0].ref, &wa), pt = down_of(k[1].ref, &wt);
	int pc = down_of(k[2].ref, &wc), ps = down_of(sup, &ws);
	t_ok(pc >= 0 && pc < pt && pt < pa && pa < ps,
	     "shutdown: c, then stubborn, then a, then the supervisor");
	t_eq(wt, URA_KILLED, "shutdown: the trapping child is killed after its timeout");
	t_ok(wa == URA_SHUTDOWN && wc == URA_SHUTDOWN, "shutdown: the others stop with shutdown");
	t_eq(ws, URA_SHUTDOWN, "shutdown: the supervisor stops with the reason it was given");

	/* terminate_child: the same, for one child, at run time. */
	ura_ref s2;
	ura_sup_start(sys, &spec, NULL, &s2);
	kids_of(sys, s2, k, 3);
	log_reset();
	watch(sys, k[1].ref);
	await_guarded(sys);
	t_rc(ura_sup_terminate_child_sys(sys, s2, URA_ATOM("stubborn")), 0,
	     "terminate_child returns once the child has stopped");
	/* The call returns at the stop; the watcher's DOWN is its own
	 * message, which may still be on its way (CI, TSan). */
	await_guarded(sys);
	ura_atom w = 0;
	down_of(k[1].ref, &w);
	t_ok(!alive(sys, k[1].ref) && w == URA_KILLED, "terminate_child: killed after the timeout");
	ura_sup_child k2[3];
	kids_of(sys, s2, k2, 3);
	t_ok(ura_ref_null(k2[1].ref) && ura_ref_eq(k[0].ref, k2[0].ref) &&
	     ura_ref_eq(k[2].ref, k2[2].ref), "terminate_child: not restarted, the others untouched");
	t_rc(ura_sup_terminate_child_sys(sys, s2, URA_ATOM("stubborn")), 0,
	     "terminate_child of a stopped child: 0");
	t_rc(ura_sup_restart_child_sys(sys, s2, ID_A, NULL), -EBUSY,
	     "restart_child of a running child: -EBUSY");
	t_rc(ura_sup_delete_child_sys(sys, s2, ID_A), -EBUSY, "delete_child of a running one: -EBUSY");
	t_rc(ura_sup_delete_child_sys(sys, s2, URA_ATOM("stubborn")), 0, "delete_child: 0");
	t_eq(kids_of(sys, s2, k2, 3), 2, "delete_child: the spec is gone");
	t_rc(ura_sup_delete_child_sys(sys, s2, URA_ATOM("stubborn")), -ENOENT,
	     "delete_child again: -ENOENT");
	ura_child_spec extra = kid(URA_ATOM("extra"), 7, URA_PERMANENT);
	ura_ref er;
	t_rc(ura_sup_start_child_sys(sys, s2, &extra, &er), 0, "start_child adds a child");
	t_ok(alive(sys, er), "start_child: it runs");
	t_rc(ura_sup_start_child_sys(sys, s2, &extra, NULL), -EEXIST,
	     "start_child with a taken id: -EEXIST");
	t_eq(kids_of(sys, s2, k2, 3), 3, "which: a, c, extra");
	t_ok(k2[2].id == URA_ATOM("extra") && ura_ref_eq(k2[2].ref, er), "start_child: last in order");
	ura_kill(sys, s2, URA_SHUTDOWN);
	await_guarded(sys);
	t_ok(!alive(sys, er) && atomic_load(&starts[7]) == atomic_load(&stops[7]),
	     "the added child stops with the supervisor");
}

/* ---- calls from a handler -------------------------------------------- */

static _Atomic long ctx_rc[4];
static ura_ref ctx_child;

static void on_which(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	ura_sup_child k[4];
	atomic_store(&ctx_rc[1], ura_sup_children(m, k, 4));
}

static void on_started(ura_ctx *cx, const ura_msg *m)
{
	ura_ref r;
	atomic_store(&ctx_rc[2], ura_sup_result(m, &r));
	ctx_child = r;
	ura_sup_which_ctx(cx, *(ura_ref *)ura_state(cx), on_which, NULL);
}

static void client_go(ura_ctx *cx, const ura_msg *m)
{
	ura_ref sup = ura_arg_ref(m, 0);
	static const ura_child_spec bad = { .id = URA_ATOM("bad") };
	static const ura_child_spec good = { .id = URA_ATOM("good"), .cls = &kid_class,
					     .arg = &args[8] };
	*(ura_ref *)ura_state(cx) = sup;
	atomic_store(&ctx_rc[0], ura_sup_start_child_ctx(cx, sup, &bad, on_started, NULL));
	ura_sup_start_child_ctx(cx, sup, &good, on_started, NULL);
}

static void on_gone(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	atomic_store(&ctx_rc[3], ura_sup_result(m, NULL));
}

static void client_stale(ura_ctx *cx, const ura_msg *m)
{
	/* A supervisor that stops before it answers: -ESRCH. */
	ura_ref sup = ura_arg_ref(m, 0);
	ura_kill(cx, sup, URA_KILL);
	atomic_store(&ctx_rc[3], 1);
	if (ura_sup_which_ctx(cx, sup, on_gone, NULL) < 0)
		atomic_store(&ctx_rc[3], -ESRCH);
}

URA_BEHAVIOR(client_beh,
	URA_ON(A_GO, "r", client_go),
	URA_ON(A_CRASH, "r", client_stale));

static const ura_class client_class = {
	.name = "client",
	.state_size = sizeof(ura_ref),
	.initial = &client_beh,
};

static void test_ctx_calls(ura_system *sys)
{
	ura_child_spec cs[1] = { kid(ID_A, 9, URA_PERMANENT) };
	ura_sup_spec spec = { .children = cs, .nchildren = 1 };
	ura_ref sup, cl;
	reset_counts();
	ura_sup_start(sys, &spec, NULL, &sup);
	ura_spawn(sys, &client_class, NULL, &cl);
	ura_send(sys, cl, A_GO, sup);
	await_guarded(sys);
	t_eq(atomic_load(&ctx_rc[0]), -EINVAL, "start_child_ctx: a null class fails the call");
	t_eq(atomic_load(&ctx_rc[2]), 0, "start_child_ctx: the continuation gets 0");
	t_ok(alive(sys, ctx_child), "start_child_ctx: and the child's ref");
	t_eq(atomic_load(&ctx_rc[1]), 2, "which_ctx: two children");
	ura_ref cl2;
	ura_spawn(sys, &client_class, NULL, &cl2);
	ura_send(sys, cl2, A_CRASH, sup);
	await_guarded(sys);
	t_eq(atomic_load(&ctx_rc[3]), -ESRCH, "a call to a supervisor that stops first: -ESRCH");
	ura_kill(sys, cl, URA_KILL);
	ura_kill(sys, cl2, URA_KILL);
	await_guarded(sys);
	t_ok(atomic_load(&starts[9]) == atomic_load(&stops[9]) &&
	     atomic_load(&starts[8]) == atomic_load(&stops[8]),
	     "a killed supervisor's children stop through their links");
}

/* ---- bad specs and calls --------------------------------------------- */

static void test_bad(ura_system *sys)
{
	ura_ref sup = URA_NOREF;
	ura_child_spec c = kid(ID_A, 10, URA_PERMANENT);
	ura_sup_spec spec = { .children = &c, .nchildren = 1 };
	reset_counts();

	c.cls = NULL;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "a child spec with a null class: -EINVAL");
	ura_sup_spec empty = { 0 };
	c = (ura_child_spec){ .id = ID_A, .cls = &kid_class, .arg = &args[10], .sup = &empty };
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "both a class and a sup: -EINVAL");
	c = kid(0, 10, URA_PERMANENT);
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "no id: -EINVAL");
	c = kid(ID_A, 10, 7);
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "a bad kind: -EINVAL");
	c = kid(ID_A, 10, URA_PERMANENT);
	c.reserved_[2] = 1;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "child spec reserved_ not zero: -EINVAL");
	c = kid(ID_A, 10, URA_PERMANENT);
	c.shutdown_ns = URA_MAX_DELAY + 1;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "a shutdown over URA_MAX_DELAY: -EINVAL");
	c = kid(ID_A, 10, URA_PERMANENT);
	c.node = URA_NODE(99);
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL,
	     "placement on a node that does not exist: the spawn's -EINVAL");
	c = kid(ID_A, 10, URA_PERMANENT);
	c.worker = URA_WORKER(3);
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "placement on worker 3: starts");
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	reset_counts();
	c = kid(ID_A, 10, URA_PERMANENT);
	spec.reserved_[0] = 1;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "sup spec reserved_ not zero: -EINVAL");
	spec.reserved_[0] = 0;
	spec.strategy = 3;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "a bad strategy: -EINVAL");
	spec.strategy = 0;
	spec.intensity = URA_SUP_MAX_INTENSITY + 1;
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), -EINVAL, "intensity over the max: -EINVAL");
	spec.intensity = 0;
	ura_child_spec two[2] = { kid(ID_A, 10, URA_PERMANENT), kid(ID_A, 11, URA_PERMANENT) };
	ura_sup_spec dup = { .children = two, .nchildren = 2 };
	t_rc(ura_sup_start(sys, &dup, NULL, &sup), -EINVAL, "two children with one id: -EINVAL");
	ura_child_spec nb = { .id = ID_B };
	ura_sup_spec inner_bad = { .children = &nb, .nchildren = 1 };
	ura_child_spec nest = { .id = ID_A, .sup = &inner_bad };
	ura_sup_spec outer = { .children = &nest, .nchildren = 1 };
	t_rc(ura_sup_start(sys, &outer, NULL, &sup), -EINVAL, "a nested spec with a null class: -EINVAL");
	t_rc(ura_sup_start(sys, (const ura_sup_spec *)NULL, NULL, &sup), -EINVAL, "no spec: -EINVAL");
	ura_sup_spec nokids = { .nchildren = 1 };
	t_rc(ura_sup_start(sys, &nokids, NULL, &sup), -EINVAL, "nchildren without children: -EINVAL");
	t_eq(atomic_load(&starts[10]), 0, "no child of a bad spec was started");

	static kid_arg failing = { .idx = 12, .fail = -ENOTSUP };
	ura_child_spec f2[3] = { kid(ID_A, 10, URA_PERMANENT), kid(ID_B, 11, URA_PERMANENT),
				 { .id = ID_C, .cls = &kid_class, .arg = &failing } };
	ura_sup_spec fspec = { .children = f2, .nchildren = 3 };
	t_rc(ura_sup_start(sys, &fspec, NULL, &sup), -ENOTSUP,
	     "a child whose init fails fails the start with its error");
	await_guarded(sys);
	t_ok(atomic_load(&starts[10]) == 1 && atomic_load(&stops[10]) == 1 &&
	     atomic_load(&starts[11]) == 1 && atomic_load(&stops[11]) == 1,
	     "and the children started before it are stopped");

	ura_sup_spec ok = { .children = &c, .nchildren = 1 };
	t_rc(ura_sup_start(sys, &ok, NULL, &sup), 0, "a good spec starts");
	ura_child_spec nul = { .id = ID_B };
	t_rc(ura_sup_start_child_sys(sys, sup, &nul, NULL), -EINVAL,
	     "start_child with a null class: -EINVAL");
	t_rc(ura_sup_start_child_sys(sys, sup, NULL, NULL), -EINVAL, "start_child of NULL: -EINVAL");
	t_rc(ura_sup_terminate_child_sys(sys, sup, ID_B), -ENOENT, "terminate an unknown id: -ENOENT");
	t_rc(ura_sup_restart_child_sys(sys, sup, ID_B, NULL), -ENOENT, "restart an unknown id: -ENOENT");
	t_rc(ura_sup_terminate_child_sys(sys, sup, 0), -EINVAL, "terminate id 0: -EINVAL");
	t_eq(ura_sup_which_sys(sys, sup, NULL, 3), -EINVAL, "which: out NULL with max > 0: -EINVAL");
	t_eq(ura_sup_which_sys(sys, sup, NULL, 0), 1, "which with max 0 counts");
	t_eq(ura_sup_which_sys(sys, watcher, NULL, 0), -ESRCH, "which on an actor that is no supervisor: -ESRCH");
	t_eq(ura_sup_which_sys(sys, URA_NOREF, NULL, 0), -ESRCH, "which on the null ref: -ESRCH");
	t_eq(ura_sup_which_sys(NULL, sup, NULL, 0), -EINVAL, "which without a system: -EINVAL");
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	t_eq(ura_sup_which_sys(sys, sup, NULL, 0), -ESRCH, "which on a stopped supervisor: -ESRCH");
}

/* ---- a storm: crashes on every worker while operations run ----------- */

/* Children on all four workers, crashed at random from this thread while
 * the supervisor is terminating and restarting others (exits arrive in
 * the middle of its operations), with calls in between. Afterwards every
 * child runs once, and everything started has stopped once the supervisor
 * is shut down. */
static void test_storm(ura_system *sys, ura_sup_strategy st, const char *name)
{
	enum { N = 8 };
	static kid_arg trap_arg = { .idx = N, .trap = 1 };
	ura_child_spec cs[N + 1];
	for (int i = 0; i < N; i++) {
		cs[i] = kid(URA_ATOM("k"), i, i % 3 == 2 ? URA_TRANSIENT : URA_PERMANENT);
		char nm[4] = { 'k', (char)('a' + i), 0, 0 };
		ura_atom_from(nm, &cs[i].id);
		cs[i].worker = URA_WORKER(i % 4);
	}
	cs[N] = (ura_child_spec){ .id = URA_ATOM("trapper"), .cls = &kid_class, .arg = &trap_arg,
				  .shutdown_ns = URA_MSEC };
	ura_sup_spec spec = { .strategy = st, .intensity = URA_SUP_MAX_INTENSITY, .period_ns = 1,
			      .children = cs, .nchildren = N + 1 };
	ura_ref sup;
	ura_sup_child k[N + 1];
	reset_counts();
	t_rc(ura_sup_start(sys, &spec, NULL, &sup), 0, "storm %s: starts %d children", name, N + 1);
	unsigned seed = 12345;
	long rounds = t_scaled(2000), calls_ok = 0;
	for (long r = 0; r < rounds; r++) {
		if (r % 50 == 0) {
			if (kids_of(sys, sup, k, N + 1) == N + 1)
				calls_ok++;
		}
		seed = seed * 1103515245u + 12345u;
		unsigned i = (seed >> 16) % (N + 1);
		/* Stale refs fail with -ESRCH; that is part of the storm. */
		if (i == N)
			ura_kill(sys, k[i].ref, URA_KILL);
		else
			ura_send(sys, k[i].ref, (seed >> 8) & 1 ? A_CRASH : A_QUIT);
	}
	await_guarded(sys);
	long n = kids_of(sys, sup, k, N + 1);
	int all = n == N + 1;
	for (int i = 0; i < N + 1 && all; i++)
		all = i % 3 == 2 && i < N ? 1 : alive(sys, k[i].ref);
	t_ok(all && alive(sys, sup), "storm %s: the supervisor and its permanent children run "
	     "(%ld calls answered in the storm)", name, calls_ok);
	int once = 1;
	for (int i = 0; i < N + 1; i++)
		once &= atomic_load(&starts[i]) - atomic_load(&stops[i]) == !ura_ref_null(k[i].ref);
	t_ok(once, "storm %s: each child runs at most once at a time", name);
	ura_kill(sys, sup, URA_SHUTDOWN);
	await_guarded(sys);
	int balanced = 1;
	for (int i = 0; i < N + 1; i++)
		balanced &= atomic_load(&starts[i]) == atomic_load(&stops[i]);
	t_ok(balanced && !alive(sys, sup), "storm %s: all stopped after the shutdown", name);
}

int main(void)
{
	args_init();
	ura_system *sys = t_system(4);
	t_must(ura_spawn(sys, &watcher_class, NULL, &watcher));
	test_bad(sys);
	test_strategy(sys, URA_ONE_FOR_ONE, "one_for_one");
	test_strategy(sys, URA_ONE_FOR_ALL, "one_for_all");
	test_strategy(sys, URA_REST_FOR_ONE, "rest_for_one");
	test_kinds(sys);
	test_intensity(sys);
	test_nested(sys);
	test_shutdown_timeout(sys);
	test_ctx_calls(sys);
	test_storm(sys, URA_ONE_FOR_ONE, "one_for_one");
	test_storm(sys, URA_ONE_FOR_ALL, "one_for_all");
	test_storm(sys, URA_REST_FOR_ONE, "rest_for_one");
	ura_kill(sys, watcher, URA_KILL);
	await_guarded(sys);
	t_destroy(sys);
	return t_done();
}
