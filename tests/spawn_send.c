/* SPDX-License-Identifier: MIT */
/*
 * spawn_send: spawning (from the system, from a handler, init/destroy
 * callbacks), sending, become with static and run-time behaviors, bound
 * values, case ordering and wildcards, and the unmatched-message policies
 * (drop and count, trace through the log sink, stash and re-deliver).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "tap.h"

#define A_ADD URA_ATOM("add")
#define A_REPORT URA_ATOM("report")
#define A_MAKE URA_ATOM("make")
#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_HELLO URA_ATOM("hello")
#define A_STOP URA_ATOM("stop")
#define A_FLIP URA_ATOM("flip")
#define A_PROBE URA_ATOM("probe")
#define A_NAME URA_ATOM("name")
#define A_LONG URA_ATOM("long")
#define A_SWITCH URA_ATOM("switch")
#define A_TAKE URA_ATOM("take")
#define A_PUT URA_ATOM("put")
#define A_X URA_ATOM("x")
#define A_Y URA_ATOM("y")
#define A_Z URA_ATOM("z")
#define A_W URA_ATOM("w")
#define A_Q URA_ATOM("q")
#define A_NOSUCH URA_ATOM("nosuch")
#define A_OPEN URA_ATOM("open")
#define A_ITEM URA_ATOM("item")
#define A_A URA_ATOM("a")
#define A_B URA_ATOM("b")
#define A_NEXT URA_ATOM("next")

static ura_stats stats_of(ura_system *sys)
{
	ura_stats st;
	memset(&st, 0, sizeof st);
	t_must(ura_system_stats(sys, &st));
	return st;
}

/* ---- 1. spawn from the system, send, state copied from arg ---------- */

typedef struct { int64_t sum, n; } counter_state;

static int64_t g_counter_sum = -1, g_counter_n = -1;

static void counter_add(ura_ctx *cx, const ura_msg *m)
{
	counter_state *s = ura_state(cx);
	s->sum += ura_arg_i64(m, 0);
	s->n++;
}

static void counter_report(ura_ctx *cx, const ura_msg *m)
{
	counter_state *s = ura_state(cx);
	(void)m;
	g_counter_sum = s->sum;
	g_counter_n = s->n;
}

URA_BEHAVIOR(counter_beh,
	URA_ON(A_ADD, "i", counter_add),
	URA_ON(A_REPORT, "", counter_report));
static const ura_class counter_class = {
	.name = "counter", .state_size = sizeof(counter_state), .initial = &counter_beh,
};

static void test_spawn_sys_send(void)
{
	ura_system *sys = t_system(2);
	ura_ref c = URA_NOREF;
	t_rc(ura_spawn(sys, &counter_class, &(counter_state){ .sum = 100 }, &c), 0,
	     "spawn from the system");
	t_ok(!ura_ref_null(c), "spawn wrote a non-null ref");
	int fails = 0;
	for (int i = 1; i <= 10; i++)
		fails += ura_send(sys, c, A_ADD, i) != 0;
	t_eq(fails, 0, "ten sends from outside accepted");
	t_rc(ura_send(sys, c, A_REPORT), 0, "send with no values");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_counter_sum, 155, "state copied from the spawn arg, then every add handled");
	t_eq(g_counter_n, 10, "each message handled once");
	ura_stats st = stats_of(sys);
	t_eq(st.spawned, 1, "stats.spawned");
	t_eq(st.live, 1, "stats.live");
	t_eq(st.sent, 11, "stats.sent counts sends from outside");
	t_eq(st.received, 11, "stats.received");
	t_eq(st.unmatched, 0, "nothing unmatched");
	t_rc(ura_send(sys, URA_NOREF, A_ADD, 1), -ESRCH, "send to the null ref: -ESRCH");
	ura_ref bogus = { c.id + 1000 };
	t_rc(ura_send(sys, bogus, A_ADD, 1), -ESRCH, "send to a ref never spawned: -ESRCH");
	t_destroy(sys);
}

/* ---- 2. spawn from inside a handler; init and destroy callbacks ------ */

typedef struct { ura_ref parent; int64_t id; int hello; } child_state;
typedef struct { int64_t pongs, idsum, made; int spawn_fail, send_fail; } parent_state;

static atomic_int g_child_init, g_child_destroy, g_child_init_ctx_ok;
static atomic_int g_child_hello_first, g_child_sender_ok;
static parent_state g_parent;

static int child_init(ura_ctx *cx, void *state, const void *arg)
{
	const child_state *a = arg;
	child_state *s = state;
	atomic_fetch_add(&g_child_init, 1);
	if (ura_state(cx) == state && !ura_ref_null(ura_self(cx)) &&
	    ura_ref_null(ura_sender(cx)))
		atomic_fetch_add(&g_child_init_ctx_ok, 1);
	s->parent = a->parent;
	s->id = a->id;
	/* A send from init: queued before the spawner's first message. */
	return ura_send(cx, ura_self(cx), A_HELLO);
}

static void child_destroy(void *state)
{
	child_state *s = state;
	if (s->id >= 0)
		atomic_fetch_add(&g_child_destroy, 1);
}

static void child_hello(ura_ctx *cx, const ura_msg *m)
{
	child_state *s = ura_state(cx);
	(void)m;
	s->hello = 1;
}

static void child_ping(ura_ctx *cx, const ura_msg *m)
{
	child_state *s = ura_state(cx);
	if (s->hello)
		atomic_fetch_add(&g_child_hello_first, 1);
	if (ura_ref_eq(ura_sender(cx), s->parent) && ura_ref_eq(ura_msg_sender(m), s->parent))
		atomic_fetch_add(&g_child_sender_ok, 1);
	ura_reply(cx, A_PONG, s->id);
	ura_stop(cx);
}

URA_BEHAVIOR(child_beh,
	URA_ON(A_HELLO, "", child_hello),
	URA_ON(A_PING, "", child_ping));
static const ura_class child_class = {
	.name = "child", .state_size = sizeof(child_state), .initial = &child_beh,
	.init = child_init, .destroy = child_destroy,
};

static void parent_make(ura_ctx *cx, const ura_msg *m)
{
	parent_state *s = ura_state(cx);
	int64_t n = ura_arg_i64(m, 0);
	for (int64_t i = 0; i < n; i++) {
		ura_ref r = URA_NOREF;
		child_state arg = { .parent = ura_self(cx), .id = i };
		if (ura_spawn(cx, &child_class, &arg, &r) < 0 || ura_ref_null(r)) {
			s->spawn_fail++;
			continue;
		}
		s->made++;
		if (ura_send(cx, r, A_PING) < 0)
			s->send_fail++;
	}
}

static void parent_pong(ura_ctx *cx, const ura_msg *m)
{
	parent_state *s = ura_state(cx);
	s->pongs++;
	s->idsum += ura_arg_i64(m, 0);
	g_parent = *s;
}

URA_BEHAVIOR(parent_beh,
	URA_ON(A_MAKE, "i", parent_make),
	URA_ON(A_PONG, "i", parent_pong));
static const ura_class parent_class = {
	.name = "parent", .state_size = sizeof(parent_state), .initial = &parent_beh,
};

static void test_spawn_from_handler(void)
{
	ura_system *sys = t_system(2);
	ura_ref p;
	const int64_t n = 50;
	t_must(ura_spawn(sys, &parent_class, NULL, &p));
	t_rc(ura_send(sys, p, A_MAKE, n), 0, "send make");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_parent.spawn_fail, 0, "every spawn from a handler succeeded");
	t_eq(g_parent.send_fail, 0, "every send from a handler succeeded");
	t_eq(g_parent.pongs, n, "every child answered its parent");
	t_eq(g_parent.idsum, n * (n - 1) / 2, "each child got its own init arg");
	t_eq(atomic_load(&g_child_init), n, "init ran once per child");
	t_eq(atomic_load(&g_child_init_ctx_ok), n, "init's ctx: state, self, no sender");
	t_eq(atomic_load(&g_child_hello_first), n, "a message sent by init comes first");
	t_eq(atomic_load(&g_child_sender_ok), n, "sender of a handler's send is the parent");
	t_eq(atomic_load(&g_child_destroy), n, "destroy ran once per stopped child");
	ura_stats st = stats_of(sys);
	t_eq(st.spawned, n + 1, "stats.spawned");
	t_eq(st.stopped, n, "stats.stopped");
	t_eq(st.live, 1, "stats.live");
	t_destroy(sys);
}

/* ---- 3. a failing init fails the spawn and counts nothing ----------- */

static atomic_int g_bad_destroy;
static int g_bad_spawn_rc = 1;

static int bad_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx; (void)state; (void)arg;
	return -ENOENT;
}
static void bad_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&g_bad_destroy, 1);
}
static void noop(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
URA_BEHAVIOR(noop_beh, URA_ON_ANY(0, noop));
static const ura_class bad_class = {
	.name = "bad", .state_size = 16, .initial = &noop_beh,
	.init = bad_init, .destroy = bad_destroy,
};

static void spawn_bad(ura_ctx *cx, const ura_msg *m)
{
	ura_ref r = URA_NOREF;
	(void)m;
	g_bad_spawn_rc = ura_spawn(cx, &bad_class, NULL, &r);
}
URA_BEHAVIOR(spawn_bad_beh, URA_ON(A_MAKE, "", spawn_bad));
static const ura_class spawn_bad_class = { .name = "spawnbad", .initial = &spawn_bad_beh };

static void test_init_failure(void)
{
	ura_system *sys = t_system(2);
	ura_ref r = URA_NOREF;
	t_rc(ura_spawn(sys, &bad_class, NULL, &r), -ENOENT,
	     "spawn returns the error of a failed init");
	ura_stats st = stats_of(sys);
	t_eq(st.spawned, 0, "a failed spawn is not counted as spawned");
	t_eq(st.live, 0, "a failed spawn leaves stats.live at 0");

	ura_ref s;
	t_must(ura_spawn(sys, &spawn_bad_class, NULL, &s));
	t_must(ura_send(sys, s, A_MAKE));
	t_rc(ura_system_await(sys), 0, "await");
	t_rc(g_bad_spawn_rc, -ENOENT, "spawn from a handler returns init's error too");
	st = stats_of(sys);
	t_eq(st.spawned, 1, "only the good actor counted as spawned");
	t_eq(st.live, 1, "stats.live counts only the good actor");
	t_eq(atomic_load(&g_bad_destroy), 0, "no destroy callback after a failed init");
	t_destroy(sys);
	t_eq(atomic_load(&g_bad_destroy), 0, "no destroy callback at system destroy either");
}

/* ---- 4. stop: destroy callback, -ESRCH, dead letters ---------------- */

static atomic_int g_stopper_x, g_stopper_destroyed;
static void stopper_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
static void stopper_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	atomic_fetch_add(&g_stopper_x, 1);
}
static void stopper_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&g_stopper_destroyed, 1);
}
URA_BEHAVIOR(stopper_beh,
	URA_ON(A_STOP, "", stopper_stop),
	URA_ON(A_X, "", stopper_x));
static const ura_class stopper_class = {
	.name = "stopper", .state_size = 8, .initial = &stopper_beh, .destroy = stopper_destroy,
};

static void test_stop(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref r, alive;
	t_must(ura_spawn(sys, &stopper_class, NULL, &r));
	t_must(ura_spawn(sys, &stopper_class, NULL, &alive));
	t_rc(ura_send(sys, r, A_STOP), 0, "send stop");
	t_rc(ura_send(sys, r, A_X), 0, "send after stop is queued (not yet handled)");
	t_rc(ura_send(sys, r, A_X), 0, "send after stop is queued (2)");
	t_rc(ura_system_await(sys), 0, "await starts the paused system");
	t_eq(atomic_load(&g_stopper_x), 0, "messages behind a stop are never handled");
	t_eq(atomic_load(&g_stopper_destroyed), 1, "destroy callback ran once");
	t_rc(ura_send(sys, r, A_X), -ESRCH, "send to a stopped actor: -ESRCH");
	ura_stats st = stats_of(sys);
	t_eq(st.dead_letters, 2, "the two queued messages became dead letters");
	t_eq(st.stopped, 1, "stats.stopped");
	t_eq(st.live, 1, "stats.live");
	t_destroy(sys);
	t_eq(atomic_load(&g_stopper_destroyed), 2,
	     "system destroy ran the live actor's destroy callback, not the stopped one's again");
}

/* ---- 4b. ura_stop in init ---------------------------------------------- */

static atomic_int g_init_stop_handled, g_init_stop_destroyed;
static int init_stop(ura_ctx *cx, void *state, const void *arg)
{
	(void)state; (void)arg;
	ura_stop(cx);
	return 0;
}
static void init_stop_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	atomic_fetch_add(&g_init_stop_handled, 1);
}
static void init_stop_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&g_init_stop_destroyed, 1);
}
URA_BEHAVIOR(init_stop_beh, URA_ON(A_X, "", init_stop_x));
static const ura_class init_stop_class = {
	.name = "initstop", .state_size = 8, .initial = &init_stop_beh,
	.init = init_stop, .destroy = init_stop_destroy,
};

static void test_stop_in_init(void)
{
	ura_system *sys = t_system(2);
	ura_ref r = URA_NOREF, quiet = URA_NOREF;
	/* ura_stop is allowed in init ("handler context"); whatever spawn
	 * returns, the actor must be stopped once init returns: a later
	 * message is refused or becomes a dead letter, never handled. */
	int rc = ura_spawn(sys, &init_stop_class, NULL, &r);
	int rc2 = ura_spawn(sys, &init_stop_class, NULL, &quiet);
	t_diag("spawn of actors whose init calls ura_stop returned %d, %d", rc, rc2);
	int src = rc == 0 ? ura_send(sys, r, A_X) : -ESRCH;
	t_ok(src == 0 || src == -ESRCH, "send after it: accepted or -ESRCH (%d)", src);
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_init_stop_handled), 0,
	     "an actor stopped in init handles no message");
	ura_stats st = stats_of(sys);
	t_eq(st.live, 0, "actors stopped in init are not live after await (one never got a message)");
	t_rc(ura_send(sys, quiet, A_X), -ESRCH, "the one that got no message has a stale ref");
	t_rc(ura_system_await(sys), 0, "await");
	t_destroy(sys);
	t_ok(atomic_load(&g_init_stop_destroyed) <= 2, "destroy callback at most once each");
}

/* ---- 4c. slot reuse: a stale ref stays stale ----------------------------- */

static ura_ref g_first_child, g_second_child;
static int g_stale_rc = 1, g_second_rc = 1;
static atomic_int g_reuse_x;
static void reuse_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	atomic_fetch_add(&g_reuse_x, 1);
}
URA_BEHAVIOR(reuse_child_beh,
	URA_ON(A_STOP, "", stopper_stop),
	URA_ON(A_X, "", reuse_x));
static const ura_class reuse_child_class = { .name = "reusechild", .initial = &reuse_child_beh };
static void reuse_make1(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_spawn(cx, &reuse_child_class, NULL, &g_first_child) == 0)
		ura_send(cx, g_first_child, A_STOP);
}
static void reuse_make2(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_spawn(cx, &reuse_child_class, NULL, &g_second_child) < 0)
		return;
	g_stale_rc = ura_send(cx, g_first_child, A_X);
	g_second_rc = ura_send(cx, g_second_child, A_X);
}
URA_BEHAVIOR(reuse_parent_beh,
	URA_ON(A_MAKE, "i", reuse_make1),
	URA_ON(A_MAKE, "", reuse_make2));
static const ura_class reuse_parent_class = { .name = "reuseparent", .initial = &reuse_parent_beh };

static void test_slot_reuse(void)
{
	/* One worker: the stopped child's slot is the next one handed out. */
	ura_system *sys = t_system(1);
	ura_ref p;
	t_must(ura_spawn(sys, &reuse_parent_class, NULL, &p));
	t_must(ura_send(sys, p, A_MAKE, 1));
	t_rc(ura_system_await(sys), 0, "await: first child spawned and stopped");
	t_must(ura_send(sys, p, A_MAKE));
	t_rc(ura_system_await(sys), 0, "await: second child spawned");
	t_ok(!ura_ref_eq(g_first_child, g_second_child), "a new incarnation gets a new ref");
	t_rc(g_stale_rc, -ESRCH, "send to the stopped child's ref from a handler: -ESRCH");
	t_rc(g_second_rc, 0, "send to the new child");
	t_rc(ura_send(sys, g_first_child, A_X), -ESRCH, "stale ref from outside: -ESRCH");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_reuse_x), 1, "only the message for the new child was handled");
	t_destroy(sys);
}

/* ---- 4d. slots stopped on another worker are reused ------------------ */

/* A spawner on worker 0 makes children on worker 1, where they stop:
 * their slots are freed on worker 1 and must come back to the spawner,
 * or the slots made grow with every spawn (they did: a worker kept what
 * it freed for ever). 200 rounds of 1000, each awaited: at most 1000
 * alive at once. */
#define XW_ROUNDS 200
#define XW_BATCH 1000
static void xw_round(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int i = 0; i < XW_BATCH; i++) {
		ura_ref c;
		if (ura_spawn_ex(cx, &reuse_child_class, NULL,
				 &(ura_spawn_opts){ .worker = URA_WORKER(1) }, &c) < 0 ||
		    ura_send(cx, c, A_STOP) < 0)
			return; /* the test sees it in spawned */
	}
}
URA_BEHAVIOR(xw_beh, URA_ON(A_MAKE, "", xw_round));
static const ura_class xw_class = { .name = "xw", .initial = &xw_beh };

static void test_slot_reuse_across_workers(void)
{
	ura_system *sys = t_system(2);
	ura_ref p;
	ura_stats st;
	t_must(ura_spawn_ex(sys, &xw_class, NULL, &(ura_spawn_opts){ .worker = URA_WORKER(0) },
			    &p));
	for (int r = 0; r < XW_ROUNDS; r++) {
		t_must(ura_send(sys, p, A_MAKE));
		t_must(ura_system_await(sys));
	}
	t_must(ura_system_stats(sys, &st));
	t_eq(st.spawned, 1 + XW_ROUNDS * XW_BATCH, "every child spawned");
	t_eq(st.live, 1, "and stopped");
	/* A spawn takes fresh indices only when its worker's list, spare
	 * and every depot are empty: then the slots made are the 1000 of a
	 * round, the other worker's list and spare (2 x 1024) and 64 fresh
	 * indices each, at most 3177; 100k and more if nothing comes back. */
	t_ok(st.slots <= XW_BATCH + 2 * 1024 + 2 * 64 + 1,
	     "slots stay near the most alive at once: %llu for %d spawns",
	     (unsigned long long)st.slots, XW_ROUNDS * XW_BATCH);
	t_diag("steals %llu", (unsigned long long)st.steals);

	/* From a thread that is not a worker: the children stop on the
	 * workers, and their slots come back to the next spawns from here. */
	uint64_t before = st.slots;
	for (int i = 0; i < XW_ROUNDS * XW_BATCH / 4; i++) {
		ura_ref c;
		t_must(ura_spawn(sys, &reuse_child_class, NULL, &c));
		t_must(ura_send(sys, c, A_STOP));
		if (i % XW_BATCH == XW_BATCH - 1)
			t_must(ura_system_await(sys));
	}
	t_must(ura_system_await(sys));
	t_must(ura_system_stats(sys, &st));
	t_ok(st.slots <= before + XW_BATCH + 2 * 1024,
	     "spawns from outside reuse the slots stopped on workers: %llu (were %llu)",
	     (unsigned long long)st.slots, (unsigned long long)before);
	t_destroy(sys);
}

/* ---- 5. become with static behaviors -------------------------------- */

static int g_toggle_log[8];
static int g_toggle_n;

static const ura_behavior toggle_on;
static void off_flip(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &toggle_on); }
static void off_probe(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	if (g_toggle_n < 8)
		g_toggle_log[g_toggle_n++] = 0;
}
URA_BEHAVIOR(toggle_off,
	URA_ON(A_FLIP, "", off_flip),
	URA_ON(A_PROBE, "", off_probe));
static void on_flip(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &toggle_off); }
static void on_probe(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	if (g_toggle_n < 8)
		g_toggle_log[g_toggle_n++] = 1;
}
URA_BEHAVIOR(toggle_on,
	URA_ON(A_FLIP, "", on_flip),
	URA_ON(A_PROBE, "", on_probe));
static const ura_class toggle_class = { .name = "toggle", .initial = &toggle_off };

static void test_become(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &toggle_class, NULL, &r));
	ura_atom seq[] = { A_PROBE, A_FLIP, A_PROBE, A_PROBE, A_FLIP, A_PROBE, A_FLIP, A_PROBE };
	for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++)
		t_must(ura_sendv_sys(sys, r, seq[i], NULL, 0));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_toggle_n, 5, "five probes handled");
	int want[] = { 0, 1, 1, 0, 1 };
	int same = g_toggle_n == 5;
	for (int i = 0; i < 5 && same; i++)
		same = g_toggle_log[i] == want[i];
	t_ok(same, "become switches behavior for the next message: off,on,on,off,on");
	t_destroy(sys);
}

/* ---- 6. a behavior built at run time -------------------------------- */

static int64_t g_rt_sum;
static char g_rt_name[32];
static int64_t g_rt_long;
static int g_rt_switched;

static void rt_add(ura_ctx *cx, const ura_msg *m) { (void)cx; g_rt_sum += ura_arg_i64(m, 0); }
static void rt_name(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	snprintf(g_rt_name, sizeof g_rt_name, "%s", ura_arg_str(m, 0));
}
static void rt_long(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	for (unsigned i = 0; i < ura_msg_count(m); i++)
		g_rt_long += ura_arg_i64(m, i);
}
static void rt_switch(ura_ctx *cx, const ura_msg *m)
{
	const ura_behavior *b = ura_arg_ptr(m, 0);
	g_rt_switched = ura_become(cx, b) == 0;
}
URA_BEHAVIOR(rt_boot, URA_ON(A_SWITCH, "p", rt_switch));
static const ura_class rt_class = { .name = "rt", .initial = &rt_boot };

static void test_behavior_new(void)
{
	char t_i[8], t_s[8], t_long[16];
	strcpy(t_i, "i");
	strcpy(t_s, "s");
	strcpy(t_long, "iiiiiiiii"); /* 9 values: a long signature */
	ura_case cases[] = {
		{ .tag = A_ADD, .types = t_i, .fn = rt_add },
		{ .tag = A_NAME, .types = t_s, .fn = rt_name },
		{ .tag = 0, .types = t_long, .fn = rt_long },
	};
	ura_behavior *b = NULL;
	t_rc(ura_behavior_new(&b, cases, 3, URA_UNMATCHED_DEFAULT), 0, "ura_behavior_new");
	t_ok(b != NULL, "behavior returned");
	if (!b)
		return;
	t_rc(ura_behavior_check(b), 0, "a built behavior passes ura_behavior_check");
	/* The types strings were copied: scribbling on ours changes nothing. */
	strcpy(t_i, "d");
	strcpy(t_s, "b");
	strcpy(t_long, "ddddddddd");
	cases[0].fn = NULL;

	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &rt_class, NULL, &r));
	t_must(ura_send(sys, r, A_SWITCH, (void *)b));
	t_must(ura_send(sys, r, A_ADD, 40));
	t_must(ura_send(sys, r, A_ADD, 2));
	t_must(ura_send(sys, r, A_ADD, 1.5)); /* "d": no case */
	t_must(ura_send(sys, r, A_NAME, "runtime"));
	t_must(ura_send(sys, r, A_Q, 1, 2, 3, 4, 5, 6, 7, 8, 9));
	t_must(ura_send(sys, r, A_Q, 1, 2, 3, 4, 5, 6, 7, 8)); /* 8 values: no case */
	t_rc(ura_system_await(sys), 0, "await");
	t_ok(g_rt_switched, "became the run-time behavior");
	t_eq(g_rt_sum, 42, "run-time case \"i\" matched both int adds, not the double");
	t_streq(g_rt_name, "runtime", "run-time case \"s\" matched");
	t_eq(g_rt_long, 45, "run-time case with a 9-type signature matched (any tag)");
	ura_stats st = stats_of(sys);
	t_eq(st.unmatched, 2, "the double and the 8-value message were unmatched");
	t_destroy(sys);
	ura_behavior_free(b);

	/* Bad cases. */
	ura_behavior *bad = (ura_behavior *)&bad;
	ura_case nofn[] = { { .tag = A_ADD, .types = "i", .fn = NULL } };
	t_rc(ura_behavior_new(&bad, nofn, 1, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: NULL handler -> -EINVAL");
	ura_case badc[] = { { .tag = A_ADD, .types = "i", .fn = rt_add },
			    { .tag = A_ADD, .types = "ix", .fn = rt_add } };
	t_rc(ura_behavior_new(&bad, badc, 2, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: bad type char -> -EINVAL");
	ura_case upper[] = { { .tag = A_ADD, .types = "I", .fn = rt_add } };
	t_rc(ura_behavior_new(&bad, upper, 1, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: type char 'I' -> -EINVAL");
	ura_case many[] = { { .tag = A_ADD, .types = "iiiiiiiiiiiiiiiii", .fn = rt_add } };
	t_rc(ura_behavior_new(&bad, many, 1, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: 17 types -> -EINVAL");
	t_ok(bad == (ura_behavior *)&bad, "failed behavior_new leaves *out alone");
	ura_case max[] = { { .tag = A_ADD, .types = "iiiiiiiiiiiiiiii", .fn = rt_add } };
	ura_behavior *ok16 = NULL;
	t_rc(ura_behavior_new(&ok16, max, 1, URA_UNMATCHED_DEFAULT), 0,
	     "behavior_new: 16 types is allowed");
	ura_behavior_free(ok16);
	t_rc(ura_behavior_new(NULL, max, 1, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: NULL out -> -EINVAL");
	t_rc(ura_behavior_new(&bad, NULL, 1, URA_UNMATCHED_DEFAULT), -EINVAL,
	     "behavior_new: NULL cases with ncases 1 -> -EINVAL");
	t_rc(ura_behavior_new(&bad, max, 1, (ura_unmatched)7), -EINVAL,
	     "behavior_new: unknown unmatched policy -> -EINVAL");
	ura_behavior *empty = NULL;
	t_rc(ura_behavior_new(&empty, NULL, 0, URA_UNMATCHED_STASH), 0,
	     "behavior_new: no cases is allowed");
	ura_behavior_free(empty);

	t_rc(ura_behavior_check(&counter_beh), 0, "behavior_check: a static behavior");
	static const ura_case raw_bad[] = { { .tag = A_ADD, .types = "iz", .fn = rt_add } };
	static const ura_behavior raw = { .cases = raw_bad, .ncases = 1 };
	t_rc(ura_behavior_check(&raw), -EINVAL, "behavior_check: bad type char");
	static const ura_case raw_nofn[] = { { .tag = A_ADD, .types = "i", .fn = NULL } };
	static const ura_behavior raw2 = { .cases = raw_nofn, .ncases = 1 };
	t_rc(ura_behavior_check(&raw2), -EINVAL, "behavior_check: no handler");
}

/* ---- 7. become_bound / bound: taken_by(philos) ---------------------- */

enum { EV_TAKEN = 1, EV_BUSY, EV_PUT, EV_WRONG_PUT };
typedef struct { int id; } stick_state;
typedef struct { int ev; uint64_t who, bound; uint32_t bound_type; } stick_event;
static stick_event g_stick[2][8];
static int g_stick_n[2];

static void stick_log(ura_ctx *cx, int ev, ura_ref who)
{
	stick_state *s = ura_state(cx);
	ura_value b = ura_bound(cx);
	if (s->id < 0 || s->id > 1 || g_stick_n[s->id] >= 8)
		return;
	g_stick[s->id][g_stick_n[s->id]++] = (stick_event){
		ev, who.id, b.type == URA_T_REF ? b.u.ref.id : 0, b.type };
}

static const ura_behavior stick_taken;
static void avail_take(ura_ctx *cx, const ura_msg *m)
{
	ura_ref philo = ura_arg_ref(m, 0);
	stick_log(cx, EV_TAKEN, philo);
	ura_become_bound(cx, &stick_taken, philo);
}
URA_BEHAVIOR(stick_available, URA_ON(A_TAKE, "r", avail_take));

static int by_owner(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	ura_value b = ura_bound(cx);
	(void)arg;
	return b.type == URA_T_REF && ura_ref_eq(b.u.ref, ura_arg_ref(m, 0));
}
static void taken_take(ura_ctx *cx, const ura_msg *m) { stick_log(cx, EV_BUSY, ura_arg_ref(m, 0)); }
static void taken_put(ura_ctx *cx, const ura_msg *m)
{
	stick_log(cx, EV_PUT, ura_arg_ref(m, 0));
	ura_become(cx, &stick_available);
}
static void taken_wrong_put(ura_ctx *cx, const ura_msg *m)
{
	stick_log(cx, EV_WRONG_PUT, ura_arg_ref(m, 0));
}
URA_BEHAVIOR(stick_taken,
	URA_ON(A_TAKE, "r", taken_take),
	URA_ON(A_PUT, "r", taken_put, .guard = by_owner),
	URA_ON(A_PUT, "r", taken_wrong_put));
static const ura_class stick_class = {
	.name = "chopstick", .state_size = sizeof(stick_state), .initial = &stick_available,
};

static int stick_matches(int id, const stick_event *want, int n)
{
	if (g_stick_n[id] != n)
		return 0;
	for (int i = 0; i < n; i++) {
		const stick_event *g = &g_stick[id][i];
		if (g->ev != want[i].ev || g->who != want[i].who ||
		    g->bound != want[i].bound || g->bound_type != want[i].bound_type) {
			t_diag("stick %d event %d: ev %d who %llu bound %llu type %u", id, i,
			       g->ev, (unsigned long long)g->who,
			       (unsigned long long)g->bound, g->bound_type);
			return 0;
		}
	}
	return 1;
}

static void test_bound(void)
{
	ura_system *sys = t_system(2);
	ura_ref s0, s1;
	t_must(ura_spawn(sys, &stick_class, &(stick_state){ 0 }, &s0));
	t_must(ura_spawn(sys, &stick_class, &(stick_state){ 1 }, &s1));
	ura_ref p1 = { 0x100000011ull }, p2 = { 0x300000022ull };
	/* Stick 0: taken by p1, p2 gets busy, p2's put is refused, p1 puts. */
	t_must(ura_send(sys, s0, A_TAKE, p1));
	t_must(ura_send(sys, s0, A_TAKE, p2));
	t_must(ura_send(sys, s0, A_PUT, p2));
	t_must(ura_send(sys, s0, A_PUT, p1));
	t_must(ura_send(sys, s0, A_TAKE, p2));
	/* Stick 1, same behaviors, bound to p2 instead. */
	t_must(ura_send(sys, s1, A_TAKE, p2));
	t_must(ura_send(sys, s1, A_PUT, p1));
	t_must(ura_send(sys, s1, A_PUT, p2));
	t_rc(ura_system_await(sys), 0, "await");
	const stick_event want0[] = {
		{ EV_TAKEN, p1.id, 0, 0 },
		{ EV_BUSY, p2.id, p1.id, URA_T_REF },
		{ EV_WRONG_PUT, p2.id, p1.id, URA_T_REF },
		{ EV_PUT, p1.id, p1.id, URA_T_REF },
		{ EV_TAKEN, p2.id, 0, 0 },
	};
	const stick_event want1[] = {
		{ EV_TAKEN, p2.id, 0, 0 },
		{ EV_WRONG_PUT, p1.id, p2.id, URA_T_REF },
		{ EV_PUT, p2.id, p2.id, URA_T_REF },
	};
	t_ok(stick_matches(0, want0, 5),
	     "bound value is per actor, read by a guard; plain become clears it (stick 0)");
	t_ok(stick_matches(1, want1, 3), "the same shared behaviors bound to another ref (stick 1)");
	t_destroy(sys);
}

/* ---- 8. first match wins, wildcards, guards fall through ------------ */

enum { H_FIRST = 1, H_SECOND, H_GUARDED, H_ANYTAG_INT, H_Z_ANY, H_ANY };
static int g_match[16];
static unsigned g_match_count[16];
static int g_match_n;
static void mlog(int h, const ura_msg *m)
{
	if (g_match_n < 16) {
		g_match_count[g_match_n] = ura_msg_count(m);
		g_match[g_match_n++] = h;
	}
}
static void h_first(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_FIRST, m); }
static void h_second(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_SECOND, m); }
static void h_guarded(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_GUARDED, m); }
static void h_anytag_int(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_ANYTAG_INT, m); }
static void h_z_any(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_Z_ANY, m); }
static void h_any(ura_ctx *cx, const ura_msg *m) { (void)cx; mlog(H_ANY, m); }
static int is_even(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	(void)cx;
	return ura_arg_i64(m, 0) % 2 == 0 && arg == (const void *)&g_match;
}
URA_BEHAVIOR(matcher,
	URA_ON(A_X, "i", h_first),
	URA_ON(A_X, "i", h_second),
	URA_ON(A_Y, "i", h_guarded, .guard = is_even, .guard_arg = &g_match),
	URA_ON(0, "i", h_anytag_int),
	URA_ON_ANY(A_Z, h_z_any),
	URA_ON_ANY(0, h_any));
static const ura_class matcher_class = { .name = "matcher", .initial = &matcher };

static void test_match_order(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &matcher_class, NULL, &r));
	t_must(ura_send(sys, r, A_X, 1));       /* first, not second */
	t_must(ura_send(sys, r, A_Y, 2));       /* guard holds */
	t_must(ura_send(sys, r, A_Y, 3));       /* guard fails: next case */
	t_must(ura_send(sys, r, A_W, 5));       /* tag wildcard with types */
	t_must(ura_send(sys, r, A_Z));          /* any values, no values */
	t_must(ura_send(sys, r, A_Z, "s", 1));  /* any values */
	t_must(ura_send(sys, r, A_X, "s"));     /* wrong types: wildcard */
	t_must(ura_send(sys, r, A_W));          /* wildcard */
	t_must(ura_send(sys, r, A_X, 1, 2));    /* "ii" is not "i" */
	t_rc(ura_system_await(sys), 0, "await");
	const int want[] = { H_FIRST, H_GUARDED, H_ANYTAG_INT, H_ANYTAG_INT, H_Z_ANY,
			     H_Z_ANY, H_ANY, H_ANY, H_ANY };
	const unsigned wantc[] = { 1, 1, 1, 1, 0, 2, 1, 0, 2 };
	t_eq(g_match_n, 9, "every message ran exactly one handler");
	int same = g_match_n == 9;
	for (int i = 0; i < 9 && same; i++) {
		same = g_match[i] == want[i] && g_match_count[i] == wantc[i];
		if (!same)
			t_diag("message %d: handler %d (want %d), %u values (want %u)", i,
			       g_match[i], want[i], g_match_count[i], wantc[i]);
	}
	t_ok(same, "first matching case wins; guards fall through; wildcards match the rest");
	ura_stats st = stats_of(sys);
	t_eq(st.unmatched, 0, "a trailing URA_ON_ANY(0) leaves nothing unmatched");
	t_destroy(sys);
}

/* ---- 9. unmatched: drop and count, trace through the log sink ------- */

static int g_only_x;
static void only_x(ura_ctx *cx, const ura_msg *m) { (void)cx; g_only_x += (int)ura_arg_i64(m, 0); }
URA_BEHAVIOR(only_x_beh, URA_ON(A_X, "i", only_x));
static const ura_class only_x_class = { .name = "tracer", .initial = &only_x_beh };

static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_log_unmatched, g_log_level = -1, g_log_ud_ok;
static char g_log_line[512];

static void sink(void *ud, int level, const char *msg)
{
	pthread_mutex_lock(&g_log_lock);
	if (strstr(msg, "unmatched")) {
		g_log_unmatched++;
		g_log_level = level;
		g_log_ud_ok = ud == (void *)&g_log_line;
		snprintf(g_log_line, sizeof g_log_line, "%s", msg);
	}
	pthread_mutex_unlock(&g_log_lock);
}

static void sink_reset(void)
{
	pthread_mutex_lock(&g_log_lock);
	g_log_unmatched = 0;
	g_log_level = -1;
	g_log_ud_ok = 0;
	g_log_line[0] = 0;
	pthread_mutex_unlock(&g_log_lock);
}

/* Runs the tracer with cfg; returns the stats.unmatched it saw. */
static uint64_t run_tracer(const ura_config *cfg)
{
	ura_system *sys;
	ura_ref r;
	g_only_x = 0;
	t_must(ura_system_new(&sys, cfg));
	t_must(ura_spawn(sys, &only_x_class, NULL, &r));
	t_must(ura_send(sys, r, A_NOSUCH, 7));
	t_must(ura_send(sys, r, A_X, 1));
	t_rc(ura_system_await(sys), 0, "await");
	uint64_t n = stats_of(sys).unmatched;
	t_eq(g_only_x, 1, "the actor still handles what matches");
	t_destroy(sys);
	return n;
}

static void test_unmatched_drop_trace(void)
{
	/* Default: dropped and counted, not traced. */
	sink_reset();
	ura_config cfg = { .workers = 2, .log = sink, .log_ud = &g_log_line };
	const char *old_trace = getenv("URA_TRACE");
	char saved[128] = "";
	if (old_trace)
		snprintf(saved, sizeof saved, "%s", old_trace);
	unsetenv("URA_TRACE");
	t_eq(run_tracer(&cfg), 1, "unmatched message dropped and counted");
	t_eq(g_log_unmatched, 0, "not traced by default");

	/* trace_unmatched in the config. */
	sink_reset();
	cfg.trace_unmatched = 1;
	t_eq(run_tracer(&cfg), 1, "traced: still counted");
	t_eq(g_log_unmatched, 1, "trace_unmatched: one line reached the custom sink");
	t_eq(g_log_level, URA_LOG_WARN, "at warn level");
	t_ok(g_log_ud_ok, "the sink got its log_ud");
	t_ok(strstr(g_log_line, "nosuch(7)") != NULL, "the line shows the message: %s", g_log_line);
	t_ok(strstr(g_log_line, "tracer") != NULL, "the line names the class");
	t_ok(strstr(g_log_line, "only_x_beh") != NULL, "the line names the behavior");

	/* URA_TRACE=unmatched in the environment. */
	sink_reset();
	cfg.trace_unmatched = 0;
	setenv("URA_TRACE", "unmatched", 1);
	t_eq(run_tracer(&cfg), 1, "URA_TRACE: still counted");
	t_eq(g_log_unmatched, 1, "URA_TRACE=unmatched: one line reached the custom sink");
	t_ok(strstr(g_log_line, "nosuch(7)") != NULL, "URA_TRACE line shows the message");
	if (old_trace)
		setenv("URA_TRACE", saved, 1);
	else
		unsetenv("URA_TRACE");
}

/* ---- 10. stash: class-level, behavior-level, re-delivery order ------ */

static int64_t g_items[32];
static int g_items_n;
static void item_log(int64_t v)
{
	if (g_items_n < 32)
		g_items[g_items_n++] = v;
}

static void open_item(ura_ctx *cx, const ura_msg *m) { (void)cx; item_log(ura_arg_i64(m, 0)); }
URA_BEHAVIOR(opened, URA_ON(A_ITEM, "i", open_item));
static void closed_open(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &opened); }
URA_BEHAVIOR(closed, URA_ON(A_OPEN, "", closed_open));
static const ura_class stash_class = {
	.name = "stasher", .initial = &closed, .unmatched = URA_UNMATCHED_STASH,
};

static int items_are(const int64_t *want, int n)
{
	int ok = g_items_n == n;
	for (int i = 0; i < n && ok; i++)
		ok = g_items[i] == want[i];
	if (!ok) {
		char buf[256];
		size_t off = 0;
		for (int i = 0; i < g_items_n && off < sizeof buf; i++)
			off += (size_t)snprintf(buf + off, sizeof buf - off, " %lld",
						(long long)g_items[i]);
		t_diag("got%s", g_items_n ? buf : " nothing");
	}
	return ok;
}

static void test_stash_class(int paused)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = paused };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref r;
	g_items_n = 0;
	t_must(ura_spawn(sys, &stash_class, NULL, &r));
	for (int i = 1; i <= 3; i++)
		t_must(ura_send(sys, r, A_ITEM, i));
	t_must(ura_send(sys, r, A_OPEN));
	for (int i = 4; i <= 5; i++)
		t_must(ura_send(sys, r, A_ITEM, i));
	t_rc(ura_system_await(sys), 0, "await");
	const int64_t want[] = { 1, 2, 3, 4, 5 };
	t_ok(items_are(want, 5), "class STASH (%s): stashed items re-delivered in order, "
	     "before later ones", paused ? "one turn" : "running");
	ura_stats st = stats_of(sys);
	t_eq(st.stashed, 3, "stats.stashed");
	t_eq(st.unmatched, 0, "nothing dropped");
	t_destroy(sys);
}

/* Behavior-level stash, with a become during re-delivery. */
static void s3_b(ura_ctx *cx, const ura_msg *m) { (void)cx; item_log(200 + ura_arg_i64(m, 0)); }
static void s3_a(ura_ctx *cx, const ura_msg *m) { (void)cx; item_log(300 + ura_arg_i64(m, 0)); }
URA_BEHAVIOR(stage3,
	URA_ON(A_B, "i", s3_b),
	URA_ON(A_A, "i", s3_a));
static void s2_a(ura_ctx *cx, const ura_msg *m) { (void)cx; item_log(100 + ura_arg_i64(m, 0)); }
static void s2_next(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &stage3); }
URA_BEHAVIOR_OPTS(stage2, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_A, "i", s2_a),
	URA_ON(A_NEXT, "", s2_next));
static void gate_open(ura_ctx *cx, const ura_msg *m) { (void)m; ura_become(cx, &stage2); }
URA_BEHAVIOR_OPTS(gate, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_OPEN, "", gate_open));
static const ura_class gate_class = { .name = "gate", .initial = &gate };

static void test_stash_behavior(int paused)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = paused };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref r;
	g_items_n = 0;
	t_must(ura_spawn(sys, &gate_class, NULL, &r));
	t_must(ura_send(sys, r, A_B, 1));
	t_must(ura_send(sys, r, A_A, 1));
	t_must(ura_send(sys, r, A_NEXT));
	t_must(ura_send(sys, r, A_B, 2));
	t_must(ura_send(sys, r, A_A, 2));
	t_must(ura_send(sys, r, A_OPEN));
	t_must(ura_send(sys, r, A_A, 3));
	t_must(ura_send(sys, r, A_B, 3));
	t_rc(ura_system_await(sys), 0, "await");
	/* gate stashes b1 a1 next b2 a2; open -> stage2 takes a1, re-stashes
	 * b1, next -> stage3 gets b1 b2 a2 in order, then a3 b3. */
	const int64_t want[] = { 101, 201, 202, 302, 303, 203 };
	t_ok(items_are(want, 6), "behavior STASH (%s): order kept across a become "
	     "during re-delivery", paused ? "one turn" : "running");
	ura_stats st = stats_of(sys);
	t_ok(st.stashed >= 5, "stats.stashed counts the stashed messages (%llu)",
	     (unsigned long long)st.stashed);
	t_eq(st.unmatched, 0, "nothing dropped");
	t_destroy(sys);
}

/* Stash with guards and bound values: a chopstick that queues takers. */
static const ura_behavior stick2_taken;
static void a2_take(ura_ctx *cx, const ura_msg *m)
{
	ura_ref who = ura_arg_ref(m, 0);
	stick_log(cx, EV_TAKEN, who);
	ura_become_bound(cx, &stick2_taken, who);
}
URA_BEHAVIOR(stick2_available, URA_ON(A_TAKE, "r", a2_take));
static void t2_put(ura_ctx *cx, const ura_msg *m)
{
	stick_log(cx, EV_PUT, ura_arg_ref(m, 0));
	ura_become(cx, &stick2_available);
}
URA_BEHAVIOR_OPTS(stick2_taken, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_PUT, "r", t2_put, .guard = by_owner));
static const ura_class stick2_class = {
	.name = "queuestick", .state_size = sizeof(stick_state), .initial = &stick2_available,
};

static void test_stash_guard_bound(int paused)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = paused };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref s;
	ura_ref p1 = { 0x100000001ull }, p2 = { 0x100000002ull }, p3 = { 0x100000003ull };
	g_stick_n[0] = 0;
	t_must(ura_spawn(sys, &stick2_class, &(stick_state){ 0 }, &s));
	t_must(ura_send(sys, s, A_TAKE, p1));
	t_must(ura_send(sys, s, A_TAKE, p2));
	t_must(ura_send(sys, s, A_TAKE, p3));
	t_must(ura_send(sys, s, A_PUT, p2)); /* not the owner: stashed */
	t_must(ura_send(sys, s, A_PUT, p1));
	t_rc(ura_system_await(sys), 0, "await");
	const stick_event want[] = {
		{ EV_TAKEN, p1.id, 0, 0 },
		{ EV_PUT, p1.id, p1.id, URA_T_REF },
		{ EV_TAKEN, p2.id, 0, 0 },
		{ EV_PUT, p2.id, p2.id, URA_T_REF },
		{ EV_TAKEN, p3.id, 0, 0 },
	};
	t_ok(stick_matches(0, want, 5), "stash + guard on the bound value (%s): takers served "
	     "in order, a stashed put matches once its sender owns the stick",
	     paused ? "one turn" : "running");
	ura_stats st = stats_of(sys);
	t_eq(st.unmatched, 0, "nothing dropped");
	t_destroy(sys);
}

/* A behavior's DROP overrides its class's STASH. */
URA_BEHAVIOR_OPTS(dropper, (.unmatched = URA_UNMATCHED_DROP), URA_ON(A_X, "i", only_x));
static const ura_class dropper_class = {
	.name = "dropper", .initial = &dropper, .unmatched = URA_UNMATCHED_STASH,
};

static void test_stash_override(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	g_only_x = 0;
	t_must(ura_spawn(sys, &dropper_class, NULL, &r));
	t_must(ura_send(sys, r, A_Q, 1));
	t_must(ura_send(sys, r, A_X, 5));
	t_rc(ura_system_await(sys), 0, "await");
	ura_stats st = stats_of(sys);
	t_eq(st.unmatched, 1, "behavior DROP beats class STASH: dropped");
	t_eq(st.stashed, 0, "and not stashed");
	t_eq(g_only_x, 5, "matching message handled");
	t_destroy(sys);
}

/* Stashed and never matched: destroy reports the loss. */
static void test_stash_lost(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	g_items_n = 0;
	t_must(ura_spawn(sys, &stash_class, NULL, &r));
	t_must(ura_send(sys, r, A_ITEM, 1));
	t_must(ura_send(sys, r, A_ITEM, 2));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_items_n, 0, "stashed items not handled without a become");
	t_eq(stats_of(sys).stashed, 2, "both stashed");
	t_rc(ura_system_destroy(sys), -EBUSY, "destroy: stashed, never matched -> -EBUSY");
}

/* An actor that stops with messages in its stash: they are dropped and
 * counted as unmatched, freed, and not reported as lost. */
static void stash_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
URA_BEHAVIOR_OPTS(stash_then_stop, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON(A_STOP, "", stash_stop));
static const ura_class stash_stop_class = { .name = "stashstop", .initial = &stash_then_stop };

static void test_stash_then_stop(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &stash_stop_class, NULL, &r));
	t_must(ura_send(sys, r, A_ITEM, 1));
	t_must(ura_send(sys, r, A_ITEM, "two"));
	t_must(ura_send(sys, r, A_STOP));
	t_rc(ura_system_await(sys), 0, "await");
	ura_stats st = stats_of(sys);
	t_eq(st.stashed, 2, "two messages stashed");
	t_eq(st.unmatched, 2, "stopping dropped them, counted as unmatched");
	t_eq(st.live, 0, "the actor stopped");
	t_destroy(sys);
}

int main(void)
{
	test_spawn_sys_send();
	test_spawn_from_handler();
	test_init_failure();
	test_stop();
	test_stop_in_init();
	test_slot_reuse();
	test_slot_reuse_across_workers();
	test_become();
	test_behavior_new();
	test_bound();
	test_match_order();
	test_unmatched_drop_trace();
	test_stash_class(1);
	test_stash_class(0);
	test_stash_behavior(1);
	test_stash_behavior(0);
	test_stash_guard_bound(1);
	test_stash_guard_bound(0);
	test_stash_override();
	test_stash_then_stop();
	test_stash_lost();
	return t_done();
}
