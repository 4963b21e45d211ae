/* SPDX-License-Identifier: MIT */
/*
 * bad_input: NULL and invalid arguments give -EINVAL; sends and spawns
 * after shutdown give -ESHUTDOWN; bad URA_WORKERS / URA_BATCH make
 * ura_system_new fail; the blocking calls refuse to run on a worker
 * (-EDEADLK); a paused system runs nothing until started; ura_strerror.
 */
#include <errno.h>
#include <stdatomic.h>
#include <time.h>

#include "tap.h"

#define A_X URA_ATOM("x")
#define A_PROBE URA_ATOM("probe")
#define A_LOOP URA_ATOM("loop")

static atomic_int g_x;
static void on_x(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; atomic_fetch_add(&g_x, 1); }
URA_BEHAVIOR(x_beh, URA_ON(A_X, "", on_x));
static const ura_class x_class = { .name = "x", .initial = &x_beh };

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* ---- NULL and invalid arguments outside handlers ---------------------- */

static void test_null_args(void)
{
	ura_system *sys = (ura_system *)&sys;
	ura_config cfg;
	memset(&cfg, 0, sizeof cfg);

	t_rc(ura_system_new(NULL, NULL), -EINVAL, "ura_system_new(NULL, ..)");
	cfg.workers = 100000;
	t_rc(ura_system_new(&sys, &cfg), -EINVAL, "ura_system_new: 100000 workers");
	t_ok(sys == NULL, "a failed ura_system_new sets *out to NULL");
	cfg.workers = 1;
	cfg.log_level = URA_LOG_DEBUG + 1;
	t_rc(ura_system_new(&sys, &cfg), -EINVAL, "ura_system_new: log_level past debug");
	cfg.log_level = -1;
	t_rc(ura_system_new(&sys, &cfg), -EINVAL, "ura_system_new: negative log_level");

	t_rc(ura_system_start(NULL), -EINVAL, "ura_system_start(NULL)");
	t_rc(ura_system_await(NULL), -EINVAL, "ura_system_await(NULL)");
	t_rc(ura_system_await_for(NULL, 1), -EINVAL, "ura_system_await_for(NULL)");
	t_rc(ura_system_shutdown(NULL), -EINVAL, "ura_system_shutdown(NULL)");
	t_rc(ura_system_destroy(NULL), -EINVAL, "ura_system_destroy(NULL)");
	ura_stats st;
	t_rc(ura_system_stats(NULL, &st), -EINVAL, "ura_system_stats(NULL, ..)");

	sys = t_system(2);
	t_rc(ura_system_stats(sys, NULL), -EINVAL, "ura_system_stats(sys, NULL)");
	ura_ref r = URA_NOREF, keep = { 0x1234 };
	t_rc(ura_spawn(sys, NULL, NULL, &r), -EINVAL, "ura_spawn: NULL class");
	static const ura_class no_initial = { .name = "noinit" };
	t_rc(ura_spawn(sys, &no_initial, NULL, &r), -EINVAL, "ura_spawn: class without initial behavior");
	static const ura_class no_name = { .initial = &x_beh };
	t_rc(ura_spawn(sys, &no_name, NULL, &r), -EINVAL, "ura_spawn: class without a name");
	r = keep;
	t_rc(ura_spawn((ura_system *)NULL, &x_class, NULL, &r), -EINVAL, "ura_spawn: NULL system");
	t_rc(ura_spawn((ura_ctx *)NULL, &x_class, NULL, &r), -EINVAL, "ura_spawn: NULL ctx");
	t_ok(ura_ref_eq(r, keep), "failed spawns leave the ref alone");

	t_must(ura_spawn(sys, &x_class, NULL, &r));
	t_rc(ura_send((ura_system *)NULL, r, A_X), -EINVAL, "ura_send: NULL system");
	t_rc(ura_send((ura_ctx *)NULL, r, A_X), -EINVAL, "ura_send: NULL ctx");
	t_rc(ura_sendv_sys(sys, r, A_X, NULL, 1), -EINVAL, "ura_sendv: NULL values with n 1");
	ura_value many[URA_MAX_VALUES + 1];
	for (int i = 0; i <= URA_MAX_VALUES; i++)
		many[i] = ura_v_i64(i);
	t_rc(ura_sendv_sys(sys, r, A_X, many, URA_MAX_VALUES + 1), -EINVAL,
	     "ura_sendv: more than URA_MAX_VALUES values");
	t_rc(ura_sendv_sys(sys, r, 0, NULL, 0), -EINVAL, "ura_sendv: tag 0");
	t_rc(ura_replyv(NULL, A_X, NULL, 0), -EINVAL, "ura_replyv(NULL, ..)");
	t_rc(ura_requestv(NULL, r, on_x, NULL, A_X, NULL, 0), -EINVAL, "ura_requestv(NULL, ..)");
	t_rc(ura_become(NULL, &x_beh), -EINVAL, "ura_become(NULL, b)");
	t_rc(ura_become_with(NULL, &x_beh, ura_v_i64(1)), -EINVAL, "ura_become_with(NULL, ..)");
	t_rc(ura_behavior_check(NULL), -EINVAL, "ura_behavior_check(NULL)");
	static const ura_behavior bad_unmatched = { .cases = NULL, .ncases = 0, .unmatched = 9 };
	t_rc(ura_behavior_check(&bad_unmatched), -EINVAL, "ura_behavior_check: unknown policy");
	static const ura_behavior no_cases = { .cases = NULL, .ncases = 2 };
	t_rc(ura_behavior_check(&no_cases), -EINVAL, "ura_behavior_check: ncases with no cases");
	ura_behavior_free(NULL);

	/* The ctx accessors tolerate NULL. */
	ura_value bv = ura_bound(NULL);
	t_ok(ura_ref_null(ura_self(NULL)) && ura_ref_null(ura_sender(NULL)) &&
	     ura_state(NULL) == NULL && ura_ctx_system(NULL) == NULL &&
	     ura_request_data(NULL) == NULL && bv.type == 0 &&
	     ura_worker_id(NULL) == (unsigned)-1,
	     "ctx accessors return null values for a NULL ctx");
	ura_stop(NULL);
	char buf[16];
	ura_value mv = ura_msg_value(NULL, 0);
	size_t blen = 5;
	t_ok(ura_msg_tag(NULL) == 0 && ura_ref_null(ura_msg_sender(NULL)) &&
	     ura_msg_count(NULL) == 0 && mv.type == 0 && ura_msg_types(NULL) != NULL &&
	     ura_arg_i64(NULL, 0) == 0 && ura_arg_str(NULL, 0) == NULL &&
	     ura_arg_bytes(NULL, 0, &blen) == NULL && blen == 0,
	     "message accessors return null values for a NULL message");
	t_ok(ura_msg_format(NULL, buf, sizeof buf) > 0 && buf[0] != 0,
	     "ura_msg_format(NULL) writes a placeholder: %s", buf);

	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_x), 0, "nothing was delivered by the failed calls");
	t_must(ura_system_stats(sys, &st));
	t_eq(st.sent, 0, "no failed send was counted");
	t_eq(st.spawned, 1, "no failed spawn was counted");
	t_destroy(sys);
}

/* ---- NULL and invalid arguments inside a handler, and -EDEADLK -------- */

static int g_become_null = 1, g_become_with_null = 1, g_request_nocont = 1;
static int g_await_rc = 1, g_await_for_rc = 1, g_shutdown_rc = 1, g_destroy_rc = 1;
static int g_worker_ok;
static int g_probe_old;

static void probe_old(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; g_probe_old++; }
static void on_try(ura_ctx *cx, const ura_msg *m)
{
	ura_system *sys = ura_ctx_system(cx);
	ura_stats st;
	(void)m;
	g_become_null = ura_become(cx, NULL);
	g_become_with_null = ura_become_with(cx, NULL, ura_v_i64(1));
	g_request_nocont = ura_requestv(cx, ura_self(cx), NULL, NULL, A_X, NULL, 0);
	g_await_rc = ura_system_await(sys);
	g_await_for_rc = ura_system_await_for(sys, URA_MSEC);
	g_shutdown_rc = ura_system_shutdown(sys);
	g_destroy_rc = ura_system_destroy(sys);
	g_worker_ok = ura_system_stats(sys, &st) == 0 && ura_worker_id(cx) < st.workers;
}
URA_BEHAVIOR(try_beh,
	URA_ON(A_X, "", on_try),
	URA_ON(A_PROBE, "", probe_old));
static const ura_class try_class = { .name = "try", .initial = &try_beh };

static void test_in_handler(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &try_class, NULL, &r));
	t_must(ura_send(sys, r, A_X));
	t_must(ura_send(sys, r, A_PROBE));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_become_null, -EINVAL, "ura_become(cx, NULL): -EINVAL");
	t_rc(g_become_with_null, -EINVAL, "ura_become_with(cx, NULL, v): -EINVAL");
	t_eq(g_probe_old, 1, "the behavior is unchanged after the failed becomes");
	t_rc(g_request_nocont, -EINVAL, "ura_request without a continuation: -EINVAL");
	t_rc(g_await_rc, -EDEADLK, "ura_system_await from a handler: -EDEADLK");
	t_rc(g_await_for_rc, -EDEADLK, "ura_system_await_for from a handler: -EDEADLK");
	t_rc(g_shutdown_rc, -EDEADLK, "ura_system_shutdown from a handler: -EDEADLK");
	t_rc(g_destroy_rc, -EDEADLK, "ura_system_destroy from a handler: -EDEADLK");
	t_ok(g_worker_ok, "ura_worker_id in a handler is below stats.workers");
	/* The system still works after all that. */
	atomic_store(&g_x, 0);
	ura_ref x;
	t_must(ura_spawn(sys, &x_class, NULL, &x));
	t_rc(ura_send(sys, x, A_X), 0, "the system still accepts sends");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_x), 1, "and still runs handlers");
	t_destroy(sys);
}

/* ---- after shutdown ---------------------------------------------------- */

static void test_after_shutdown(void)
{
	ura_system *sys = t_system(2);
	ura_ref r, r2 = { 0x77 };
	atomic_store(&g_x, 0);
	t_must(ura_spawn(sys, &x_class, NULL, &r));
	t_must(ura_send(sys, r, A_X));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(ura_system_shutdown(sys), 0, "shutdown");
	t_rc(ura_system_shutdown(sys), 0, "shutdown again: idempotent");
	t_rc(ura_send(sys, r, A_X), -ESHUTDOWN, "send to a live actor after shutdown: -ESHUTDOWN");
	t_rc(ura_spawn(sys, &x_class, NULL, &r2), -ESHUTDOWN, "spawn after shutdown: -ESHUTDOWN");
	t_ok(r2.id == 0x77, "the failed spawn left the ref alone");
	t_rc(ura_system_start(sys), 0, "start after shutdown of a started system: 0 (already started)");
	int rc = ura_system_await(sys);
	t_ok(rc == 0 || rc == -ESHUTDOWN, "await after shutdown returns (%d)", rc);
	t_eq(atomic_load(&g_x), 1, "only the message before shutdown was handled");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.sent, 1, "refused sends were not counted");
	t_destroy(sys);

	/* A paused system shut down before it started. */
	ura_config cfg = { .workers = 2, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	t_must(ura_spawn(sys, &x_class, NULL, &r));
	t_rc(ura_system_shutdown(sys), 0, "shutdown of a never-started system");
	t_rc(ura_system_start(sys), -ESHUTDOWN, "start after shutdown: -ESHUTDOWN");
	t_rc(ura_send(sys, r, A_X), -ESHUTDOWN, "send: -ESHUTDOWN");
	t_destroy(sys);

	/* Accepted but never handled: destroy says so. */
	t_must(ura_system_new(&sys, &cfg));
	t_must(ura_spawn(sys, &x_class, NULL, &r));
	t_rc(ura_send(sys, r, A_X), 0, "send to a paused system");
	t_rc(ura_system_shutdown(sys), 0, "shutdown without ever starting");
	t_rc(ura_system_destroy(sys), -EBUSY, "destroy: the accepted message was lost -> -EBUSY");
	t_eq(atomic_load(&g_x), 1, "the message was never handled");
}

/* ---- environment ------------------------------------------------------- */

static void test_env(void)
{
	const char *old = getenv("URA_WORKERS");
	char saved[64] = "";
	if (old)
		snprintf(saved, sizeof saved, "%s", old);
	static const char *const bad[] = { "abc", "0", "100000", "-1", "3x", "1025" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ura_system *sys = (ura_system *)&sys;
		setenv("URA_WORKERS", bad[i], 1);
		int rc = ura_system_new(&sys, NULL);
		t_rc(rc, -EINVAL, "URA_WORKERS=%s: -EINVAL", bad[i]);
		t_ok(sys == NULL, "URA_WORKERS=%s: *out is NULL", bad[i]);
		if (rc == 0 && sys)
			ura_system_destroy(sys);
	}
	/* It overrides the config. */
	setenv("URA_WORKERS", "1", 1);
	ura_system *sys = NULL;
	ura_config cfg = { .workers = 2 };
	t_rc(ura_system_new(&sys, &cfg), 0, "URA_WORKERS=1 accepted");
	if (sys) {
		ura_stats st;
		t_must(ura_system_stats(sys, &st));
		t_eq(st.workers, 1, "URA_WORKERS overrides cfg.workers");
		t_destroy(sys);
	}
	if (old)
		setenv("URA_WORKERS", saved, 1);
	else
		unsetenv("URA_WORKERS");

	old = getenv("URA_BATCH");
	saved[0] = 0;
	if (old)
		snprintf(saved, sizeof saved, "%s", old);
	static const char *const badb[] = { "0", "abc", "99999999" };
	for (size_t i = 0; i < sizeof badb / sizeof badb[0]; i++) {
		sys = NULL;
		setenv("URA_BATCH", badb[i], 1);
		int rc = ura_system_new(&sys, &cfg);
		t_rc(rc, -EINVAL, "URA_BATCH=%s: -EINVAL", badb[i]);
		if (rc == 0 && sys)
			ura_system_destroy(sys);
	}
	if (old)
		setenv("URA_BATCH", saved, 1);
	else
		unsetenv("URA_BATCH");

	sys = NULL;
	t_rc(ura_system_new(&sys, NULL), 0, "ura_system_new(&sys, NULL): defaults");
	if (sys)
		t_destroy(sys);
}

/* ---- paused ------------------------------------------------------------ */

static atomic_int g_inits;
static int count_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx; (void)state; (void)arg;
	atomic_fetch_add(&g_inits, 1);
	return 0;
}
static const ura_class counted_class = { .name = "counted", .initial = &x_beh, .init = count_init };

static void test_paused(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = 1 };
	ura_ref r;
	atomic_store(&g_x, 0);
	t_must(ura_system_new(&sys, &cfg));
	t_rc(ura_spawn(sys, &counted_class, NULL, &r), 0, "spawn on a paused system");
	t_eq(atomic_load(&g_inits), 1, "init runs at spawn, even paused");
	for (int i = 0; i < 3; i++)
		t_must(ura_send(sys, r, A_X));
	sleep_ms(30); /* a chance to misbehave; nothing may run */
	t_eq(atomic_load(&g_x), 0, "a paused system runs no handler");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.turns, 0, "no turns while paused");
	t_eq(st.received, 0, "nothing received while paused");
	t_eq(st.sent, 3, "the sends were accepted");
	t_rc(ura_system_start(sys), 0, "ura_system_start");
	t_rc(ura_system_start(sys), 0, "ura_system_start again: 0");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_x), 3, "after start, the messages were handled");
	t_destroy(sys);

	/* await starts a paused system. */
	atomic_store(&g_x, 0);
	t_must(ura_system_new(&sys, &cfg));
	t_must(ura_spawn(sys, &x_class, NULL, &r));
	t_must(ura_send(sys, r, A_X));
	t_must(ura_send(sys, r, A_X));
	sleep_ms(10);
	t_eq(atomic_load(&g_x), 0, "still paused before await");
	t_rc(ura_system_await(sys), 0, "ura_system_await on a paused system");
	t_eq(atomic_load(&g_x), 2, "await started it and waited for the work");
	t_destroy(sys);
}

/* ---- await_for --------------------------------------------------------- */

static atomic_int g_loop_stop, g_loops;
static void on_loop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_fetch_add(&g_loops, 1);
	if (atomic_load(&g_loop_stop))
		ura_stop(cx);
	else
		ura_send(cx, ura_self(cx), A_LOOP);
}
URA_BEHAVIOR(loop_beh, URA_ON(A_LOOP, "", on_loop));
static const ura_class loop_class = { .name = "looper", .initial = &loop_beh };

static void test_await_for(void)
{
	/* A new system has no work: it is quiescent, and await_for(0) checks
	 * that before looking at the clock. Several tries, as the workers'
	 * start races the check. */
	int timeouts = 0, last = 0;
	for (int i = 0; i < 20; i++) {
		ura_system *s = t_system(2);
		int rc = ura_system_await_for(s, 0);
		if (rc != 0) {
			timeouts++;
			last = rc;
		}
		ura_system_destroy(s);
	}
	t_eq(timeouts, 0, "await_for(0) right after ura_system_new: 0 every time (last error %d)", last);
	ura_system *sys = t_system(2);
	ura_ref r;
	t_rc(ura_system_await(sys), 0, "await on an idle system");
	t_rc(ura_system_await_for(sys, 0), 0, "await_for(0) once the workers are up: 0");
	t_must(ura_spawn(sys, &loop_class, NULL, &r));
	t_must(ura_send(sys, r, A_LOOP));
	t_rc(ura_system_await_for(sys, 2 * URA_MSEC), -ETIMEDOUT,
	     "await_for on a system that never goes quiet: -ETIMEDOUT");
	atomic_store(&g_loop_stop, 1);
	t_rc(ura_system_await(sys), 0, "await once the looper stops");
	t_ok(atomic_load(&g_loops) > 0, "the looper ran");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.live, 0, "the looper stopped");
	t_destroy(sys);
}

/* ---- ura_strerror ------------------------------------------------------ */

static int nonempty(const char *s) { return s && *s; }

static void test_strerror(void)
{
	t_ok(nonempty(ura_strerror(-ESRCH)), "ura_strerror(-ESRCH): %s", ura_strerror(-ESRCH));
	t_ok(nonempty(ura_strerror(-ESHUTDOWN)), "ura_strerror(-ESHUTDOWN): %s",
	     ura_strerror(-ESHUTDOWN));
	t_ok(nonempty(ura_strerror(-EINVAL)), "ura_strerror(-EINVAL): %s", ura_strerror(-EINVAL));
	t_ok(nonempty(ura_strerror(-EDEADLK)), "ura_strerror(-EDEADLK): %s", ura_strerror(-EDEADLK));
	t_ok(nonempty(ura_strerror(-EMSGSIZE)), "ura_strerror(-EMSGSIZE): %s", ura_strerror(-EMSGSIZE));
	t_ok(nonempty(ura_strerror(ENOENT)), "ura_strerror(ENOENT) (positive): %s", ura_strerror(ENOENT));
	t_streq(ura_strerror(-ENOENT), ura_strerror(ENOENT), "-ENOENT and ENOENT read the same");
	t_streq(ura_strerror(-ESRCH), ura_strerror(ESRCH), "-ESRCH and ESRCH read the same");
	t_ok(strcmp(ura_strerror(-ESRCH), ura_strerror(-EINVAL)) != 0, "different errors, different text");
	/* An errno glibc does not know: its text must stay valid like the
	 * others' (t_rc prints two ura_strerror results in one printf). */
	const char *u1 = ura_strerror(-123456);
	char copy[128];
	snprintf(copy, sizeof copy, "%s", u1 ? u1 : "");
	t_ok(nonempty(copy), "an unknown error still has text: %s", copy);
	const char *u2 = ura_strerror(-123457);
	t_ok(nonempty(u2), "a second unknown error has text too");
	t_streq(u1, copy, "the first text is still valid after another ura_strerror call");
}

int main(void)
{
	test_null_args();
	test_in_handler();
	test_after_shutdown();
	test_env();
	test_paused();
	test_await_for();
	test_strerror();
	return t_done();
}
