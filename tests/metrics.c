/* SPDX-License-Identifier: MIT */
/*
 * metrics: each counter moved by a known workload by the known amount
 * (ura.h's "Metrics"), on one worker so that every count is exact.
 *
 *  1. per class: N actors of a metered class spawned from outside and from
 *     a handler, K messages each, U unmatched ones, stops by ura_stop
 *     (normal) and by ura_kill (other), messages queued behind a stop
 *     (dead letters); live, spawned, received, handled and the handler
 *     histogram's count (1 in 2^shift deliveries, exactly) as computed;
 *     an unmetered class is not in the table;
 *  2. per worker: turns, received, sent, spawned, stopped, unmatched and
 *     dead letters equal ura_system_stats' (which counts them its own
 *     way), timers armed and fired by five delayed sends, their lateness
 *     histogram counts five; an idle worker's sleep and spin time grow,
 *     busy + spin + sleep is the uptime, and busy time never goes back;
 *  3. inspection: a metered actor's class, behavior name (after a
 *     become), handled count; an unmetered one has no class; a stopped
 *     ref is -ESRCH; bad arguments are -EINVAL;
 *  4. mailbox depth and top-N: with batch 8 and a worker held by a
 *     blocking handler, each actor's recorded depth + handled is what was
 *     sent to it, the class gauge is the sum of the depths, and top-N by
 *     mailbox and by handled come out in order;
 *  5. bad input: a class with unknown metrics bits, a sample shift over
 *     16, reserved words set: -EINVAL; URA_METRICS_SAMPLE=0 times every
 *     handler;
 *  6. mailbox wait: 20 plain messages from main and 10 from a handler to
 *     a held metered actor whose handler takes 2 ms, sampled 1 in 2 per
 *     sending thread: exactly 15 samples (requests to it are not
 *     sampled), their sum at least what queueing behind 2 ms handlers
 *     makes it, the same in the exporter's text; an unmetered class is
 *     -ENOENT;
 *  7. wakeups by kind: on two simulated nodes, an actor of node 0 sends
 *     to one of node 1 while node 1's worker sleeps, 20 times: node 0's
 *     worker wakes it, and each worker's MSG_RING and eventfd wakes add
 *     up to its wakes sent, all of one kind (none by MSG_RING on epoll);
 *  8. a metered class with a bounded mailbox: every message it took gives
 *     its depth back, and only stamped messages count as waits (the two
 *     flags once shared a bit: the metered turn took each counted message
 *     for a wait sample, and the depth never went down);
 *  9. a metered class with a body: its receives' cases count as handled,
 *     timed 1 in 2^shift, a message kept for a later receive counts as
 *     received and, dropped at the stop, as unmatched, the actor's record
 *     (handled, behavior) is up to date while the body waits, and its
 *     mailbox waits are sampled (before, a body's class counted nothing
 *     but its spawns);
 * 10. a metered event actor that stashes: its stashed messages, dropped
 *     at its stop, are the class's unmatched, as they are the worker's
 *     (the count goes to the class from the stop's own path).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_INC URA_ATOM("inc")
#define A_STOP URA_ATOM("stop")
#define A_OTHER URA_ATOM("other")
#define A_FLIP URA_ATOM("flip")
#define A_SPAWN URA_ATOM("spawn")
#define A_TICKS URA_ATOM("ticks")
#define A_TICK URA_ATOM("tick")
#define A_BLOCK URA_ATOM("block")
#define A_FWD URA_ATOM("fwd")

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- the classes ---------------------------------------------------- */

typedef struct { int64_t n; } cnt;

URA_BEHAVIOR_DECL(flipped);
static void on_inc(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	((cnt *)ura_state(cx))->n++;
}
static void on_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}
static void on_flip(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &flipped);
}
URA_BEHAVIOR(counting, URA_ON(A_INC, "", on_inc), URA_ON(A_STOP, "", on_stop),
	     URA_ON(A_FLIP, "", on_flip));
URA_BEHAVIOR(flipped, URA_ON(A_INC, "", on_inc), URA_ON(A_STOP, "", on_stop));

static const ura_class metered = {
	.name = "metered",
	.state_size = sizeof(cnt),
	.initial = &counting,
	.metrics = URA_CLASS_METRICS,
};
static const ura_class plain = {
	.name = "plain",
	.state_size = sizeof(cnt),
	.initial = &counting,
};

/* Spawns a metered child from a handler (the worker's own counters). */
static void on_spawn(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_ref r;
	if (ura_spawn(cx, &metered, NULL, &r) == 0)
		ura_send(cx, r, A_INC);
}
/* Five delayed sends to itself; forwards to another actor. */
static void on_ticks(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int i = 0; i < 5; i++)
		ura_send_after(cx, ura_self(cx), (uint64_t)(i + 1) * URA_MSEC, A_TICK);
}
static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
static void on_fwd(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_INC);
}
/* A stop with messages queued behind it: sent in one turn of ours, on
 * the only worker, so all of them are in the mailbox before the target
 * runs (from main's thread, the target could stop before the last send,
 * which then fails). */
#define DEAD 4
static void on_doom(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	ura_send(cx, to, A_STOP);
	for (int d = 0; d < DEAD; d++)
		ura_send(cx, to, A_INC);
}
static sem_t g_block_in, g_block_out;
static void on_block(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	sem_post(&g_block_in);
	while (sem_wait(&g_block_out) != 0)
		;
}
URA_BEHAVIOR(helping, URA_ON(A_SPAWN, "", on_spawn), URA_ON(A_TICKS, "", on_ticks),
	     URA_ON(A_TICK, "", on_tick), URA_ON(A_FWD, "r", on_fwd),
	     URA_ON(A_BLOCK, "", on_block), URA_ON(URA_ATOM("doom"), "r", on_doom));
static const ura_class helper = {
	.name = "helper",
	.initial = &helping,
};

static ura_class_metrics class_of(ura_system *sys, const ura_class *cls, int *found)
{
	ura_class_metrics cm[URA_METRICS_CLASSES];
	int n = ura_metrics_classes(sys, cm, URA_METRICS_CLASSES, NULL);
	*found = 0;
	for (int i = 0; i < n; i++)
		if (cm[i].cls == cls) {
			*found = 1;
			return cm[i];
		}
	ura_class_metrics z;
	memset(&z, 0, sizeof z);
	return z;
}

static ura_worker_metrics worker0(ura_system *sys)
{
	ura_worker_metrics wm;
	t_eq(ura_metrics_workers(sys, &wm, 1), 1, "one worker");
	return wm;
}

/* ---- 1 and 2 -------------------------------------------------------- */

#define N 10
#define K 100
#define U 7

static void counters(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref a[N], p, h;
	for (int i = 0; i < N; i++)
		t_must(ura_spawn(sys, &metered, NULL, &a[i]));
	t_must(ura_spawn(sys, &plain, NULL, &p));
	t_must(ura_spawn(sys, &helper, NULL, &h));
	for (int i = 0; i < N; i++)
		for (int k = 0; k < K; k++)
			t_must(ura_send(sys, a[i], A_INC));
	for (int u = 0; u < U; u++)
		t_must(ura_send(sys, a[0], A_OTHER));
	t_must(ura_send(sys, p, A_INC));
	/* From a handler: one spawn and its one message; one forward. */
	t_must(ura_send(sys, h, A_SPAWN));
	t_must(ura_send(sys, h, A_FWD, a[1]));
	t_must(ura_system_await(sys));
	/* Three stop normally, the third with DEAD messages queued behind
	 * its stop (sent before the stop was handled: dead letters); two
	 * are killed. */
	t_must(ura_send(sys, a[2], A_STOP));
	t_must(ura_send(sys, a[3], A_STOP));
	t_must(ura_send(sys, h, URA_ATOM("doom"), a[4]));
	t_must(ura_kill(sys, a[5], URA_KILL));
	t_must(ura_kill(sys, a[6], URA_KILL));
	t_must(ura_system_await(sys));

	int found;
	ura_class_metrics c = class_of(sys, &metered, &found);
	t_ok(found, "the metered class is in the table");
	t_streq(c.name, "metered", "its name");
	t_eq(c.spawned, N + 1, "spawned: N from outside, one from a handler");
	t_eq(c.stopped_normal, 3, "stopped normally: three ura_stop");
	t_eq(c.stopped_other, 2, "stopped otherwise: two kills");
	t_eq(c.live, N + 1 - 5, "live = spawned - stopped");
	/* Received: N*K incs, U others, 1 from the child's spawn, 1
	 * forwarded, 3 stops, DEAD dead letters (kills are signals the
	 * turn takes too: they are received, not handled). */
	uint64_t handled = (uint64_t)N * K + 1 + 1 + 3;
	t_eq(c.handled, handled, "handled: every inc and stop");
	t_eq(c.unmatched, U, "unmatched: the U others");
	t_eq(c.dead_letters, DEAD, "dead letters: what waited behind a stop");
	t_eq(c.received, handled + U + DEAD + 2, "received: handled + unmatched + dead + 2 kills");
	t_eq(c.sample_every, 256, "default sampling: 1 in 256");
	/* The tick counts deliveries (handled, unmatched and the kills'
	 * exit signals: each reaches deliver once); dead letters never
	 * reach a handler. One worker: the count is exact. */
	t_eq(c.handler.count, (handled + U + 2) / 256, "handler histogram: 1 in 256 deliveries");
	uint64_t in_buckets = 0;
	for (int i = 0; i < URA_HIST_BUCKETS; i++)
		in_buckets += c.handler.bucket[i];
	t_ok(in_buckets <= c.handler.count, "buckets hold at most the count");
	t_eq(c.mailbox, 0, "mailbox gauge: nothing waits once quiescent");
	class_of(sys, &plain, &found);
	t_ok(!found, "an unmetered class is not in the table");
	uint64_t overflow = 99;
	t_eq(ura_metrics_classes(sys, NULL, 0, &overflow), 1, "one metered class");
	t_eq(overflow, 0, "no overflow");

	/* 2. The worker's counters, against ura_system_stats. */
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	ura_worker_metrics w = worker0(sys);
	t_eq(w.id, 0, "worker id");
	t_eq(w.turns, st.turns, "turns");
	t_eq(w.received, st.received, "received");
	t_eq(w.spawned, 1, "spawned on the worker: the child");
	t_eq(w.sent, 2 + 1 + DEAD, "sent by the worker: the child's inc, the forward, the doom");
	t_eq(w.stopped, 5, "stopped on the worker");
	t_eq(w.unmatched, U, "unmatched");
	t_eq(w.dead_letters, DEAD, "dead letters");
	t_eq(w.runq, 0, "empty run queue");

	uint64_t armed0 = w.timers_armed, fired0 = w.timers_fired;
	uint64_t late0 = w.timer_late.count;
	t_must(ura_send(sys, h, A_TICKS));
	t_must(ura_system_await(sys));
	w = worker0(sys);
	t_eq(w.timers_armed - armed0, 5, "five timers armed");
	t_eq(w.timers_fired - fired0, 5, "five fired");
	t_eq(w.timer_late.count - late0, 5, "five lateness samples");

	/* Idle: sleeps, spin and sleep time grow; busy never goes back. */
	ura_worker_metrics w1 = worker0(sys);
	sleep_ms(30);
	ura_worker_metrics w2 = worker0(sys);
	t_ok(w2.sleep_ns + w2.spin_ns > w1.sleep_ns + w1.spin_ns, "idle time grows while idle");
	t_ok(w2.busy_ns >= w1.busy_ns, "busy time never goes back");
	t_ok(w2.busy_ns + w2.spin_ns + w2.sleep_ns == w2.uptime_ns, "busy + spin + sleep = uptime");
	t_ok(w2.sleeps >= 1 && w2.sleep_ns > 0, "it slept");
	uint64_t woken0 = w2.woken;
	t_must(ura_send(sys, a[0], A_INC)); /* wakes it (or finds it spinning) */
	t_must(ura_system_await(sys));
	ura_worker_metrics w3 = worker0(sys);
	t_ok(w3.woken - woken0 <= 1, "at most one wake for one send");
	t_ok(w3.woken <= w3.sleeps, "woken <= sleeps");

	/* 3. Inspection. */
	ura_actor_info ai;
	t_must(ura_send(sys, a[1], A_FLIP));
	t_must(ura_system_await(sys));
	t_must(ura_actor_inspect(sys, a[1], &ai));
	t_ok(ai.cls == &metered, "inspect: the class");
	t_streq(ai.name, "metered", "inspect: its name");
	t_streq(ai.behavior, "flipped", "inspect: the behavior after the become");
	t_eq(ai.handled, K + 2, "inspect: handled (K, the forward, the flip)");
	t_eq(ai.mailbox, 0, "inspect: nothing waiting");
	t_eq(ai.worker, 0, "inspect: worker");
	t_eq(ai.node, 0, "inspect: node");
	t_ok(ai.ref.id == a[1].id, "inspect: the ref");
	t_must(ura_actor_inspect(sys, p, &ai));
	t_ok(ai.cls == NULL && ai.name == NULL, "inspect: an unmetered actor has no class");
	t_rc(ura_actor_inspect(sys, a[2], &ai), -ESRCH, "inspect: a stopped actor");
	t_rc(ura_actor_inspect(sys, URA_NOREF, &ai), -ESRCH, "inspect: no ref");
	t_rc(ura_actor_inspect(NULL, a[1], &ai), -EINVAL, "inspect: no system");
	t_rc(ura_actor_inspect(sys, a[1], NULL), -EINVAL, "inspect: no out");
	t_must(ura_system_destroy(sys));
}

/* ---- 4 -------------------------------------------------------------- */

static void depth_and_top(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1, .batch = 8, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	static const int sent[3] = { 100, 30, 5 };
	ura_ref a[3], h;
	for (int i = 0; i < 3; i++)
		t_must(ura_spawn(sys, &metered, NULL, &a[i]));
	t_must(ura_spawn(sys, &helper, NULL, &h));
	for (int i = 0; i < 3; i++)
		for (int k = 0; k < sent[i]; k++)
			t_must(ura_send(sys, a[i], A_INC));
	t_must(ura_send(sys, h, A_BLOCK));
	sem_init(&g_block_in, 0, 0);
	sem_init(&g_block_out, 0, 0);
	t_must(ura_system_start(sys));
	while (sem_wait(&g_block_in) != 0)
		;
	/* The only worker is held: nothing moves until we let it go. */
	int64_t sum = 0;
	int ran = 0;
	for (int i = 0; i < 3; i++) {
		ura_actor_info ai;
		t_must(ura_actor_inspect(sys, a[i], &ai));
		sum += (int64_t)ai.mailbox;
		if (ai.handled) {
			ran++;
			t_eq(ai.mailbox + ai.handled, sent[i],
			     "actor %d: depth + handled = what was sent", i);
		}
	}
	t_ok(ran >= 1, "some actor ran before the block");
	int found;
	ura_class_metrics c = class_of(sys, &metered, &found);
	t_eq(c.mailbox, sum, "class gauge = the sum of the depths");
	ura_actor_info top[4];
	int n = ura_metrics_top(sys, URA_TOP_MAILBOX, top, 4);
	t_ok(n >= 1 && n <= 3, "top by mailbox: some (%d)", n);
	for (int i = 1; i < n; i++)
		t_ok(top[i - 1].mailbox >= top[i].mailbox, "top by mailbox: in order (%d)", i);
	sem_post(&g_block_out);
	t_must(ura_system_await(sys));

	n = ura_metrics_top(sys, URA_TOP_HANDLED, top, 4);
	t_eq(n, 3, "top by handled: the three metered actors");
	for (int i = 0; i < 3 && i < n; i++) {
		t_ok(top[i].ref.id == a[i].id, "top by handled: #%d is the one sent %d", i, sent[i]);
		t_eq(top[i].handled, sent[i], "top by handled: #%d's count", i);
	}
	n = ura_metrics_top(sys, URA_TOP_HANDLED, top, 1);
	t_ok(n == 1 && top[0].ref.id == a[0].id, "top 1 by handled");
	n = ura_metrics_top(sys, URA_TOP_MAILBOX, top, 4);
	for (int i = 0; i < n; i++)
		t_eq(top[i].mailbox, 0, "all drained (%d)", i);
	n = ura_metrics_top(sys, URA_TOP_HANDLER_TIME, top, 4);
	t_eq(n, 3, "top by handler time: three");
	t_rc(ura_metrics_top(sys, 7, top, 4), -EINVAL, "top: a bad key");
	t_rc(ura_metrics_top(sys, URA_TOP_MAILBOX, NULL, 4), -EINVAL, "top: no out");
	t_eq(ura_metrics_top(sys, URA_TOP_MAILBOX, NULL, 0), 0, "top: n = 0");
	t_must(ura_system_destroy(sys));
	sem_destroy(&g_block_in);
	sem_destroy(&g_block_out);
}

/* ---- 5 -------------------------------------------------------------- */

static void bad_input(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1, .metrics_sample_log2 = 17 };
	t_rc(ura_system_new(&sys, &cfg), -EINVAL, "sample shift over 16");
	ura_config cfg2 = { .workers = 1 };
	cfg2.reserved3_[0] = 1;
	t_rc(ura_system_new(&sys, &cfg2), -EINVAL, "a reserved config word set");
	ura_config cfg3 = { .workers = 1, .metrics_sample_log2 = 1 };
	t_must(ura_system_new(&sys, &cfg3));
	ura_class bad = metered;
	bad.metrics = 4;
	ura_ref r;
	t_rc(ura_spawn(sys, &bad, NULL, &r), -EINVAL, "unknown metrics bits");
	ura_class bad2 = metered;
	bad2.flags = 1ull << 40;
	t_rc(ura_spawn(sys, &bad2, NULL, &r), -EINVAL, "a reserved class word set");
	t_must(ura_spawn(sys, &metered, NULL, &r));
	for (int i = 0; i < 10; i++)
		t_must(ura_send(sys, r, A_INC));
	t_must(ura_system_await(sys));
	int found;
	ura_class_metrics c = class_of(sys, &metered, &found);
	t_eq(c.sample_every, 2, "sampling 1 in 2");
	t_eq(c.handler.count, 5, "ten deliveries, five timed");
	t_rc(ura_metrics_workers(NULL, NULL, 0), -EINVAL, "workers: no system");
	t_rc(ura_metrics_workers(sys, NULL, 1), -EINVAL, "workers: no out");
	t_rc(ura_metrics_classes(sys, NULL, 1, NULL), -EINVAL, "classes: no out");
	t_rc(ura_metrics_render(sys, 9, NULL, 0), -EINVAL, "render: a bad format");
	t_rc(ura_metrics_render(sys, URA_METRICS_PROMETHEUS, NULL, 10), -EINVAL, "render: no buf");
	int len = ura_metrics_render(sys, URA_METRICS_PROMETHEUS, NULL, 0);
	t_ok(len > 0, "render: sizing call (%d)", len);
	char small[32];
	t_eq(ura_metrics_render(sys, URA_METRICS_PROMETHEUS, small, sizeof small), len,
	     "render: cut text still returns the whole length");
	t_eq(strlen(small), sizeof small - 1, "render: cut text is NUL-terminated");
	t_must(ura_system_destroy(sys));

	/* URA_METRICS_SAMPLE overrides the config: 0 times every handler. */
	setenv("URA_METRICS_SAMPLE", "0", 1);
	t_must(ura_system_new(&sys, &cfg3));
	unsetenv("URA_METRICS_SAMPLE");
	t_must(ura_spawn(sys, &metered, NULL, &r));
	for (int i = 0; i < 10; i++)
		t_must(ura_send(sys, r, A_INC));
	t_must(ura_system_await(sys));
	c = class_of(sys, &metered, &found);
	t_eq(c.sample_every, 1, "URA_METRICS_SAMPLE=0: every handler timed");
	t_eq(c.handler.count, 10, "ten deliveries, ten timed");
	t_must(ura_system_destroy(sys));
}

/* ---- 6 -------------------------------------------------------------- */

#define A_ASK URA_ATOM("ask")
static void on_slow(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	sleep_ms(2);
}
static void on_ask(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_reply(cx, A_ASK);
}
/* Holds the worker until main has queued everything (a loaded machine
 * may stop main between two sends for longer than the handlers take). */
static sem_t g_queued;
static void on_hold(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	while (sem_timedwait(&g_queued, &ts) != 0 && errno == EINTR)
		;
}
URA_BEHAVIOR(slow_beh, URA_ON(A_INC, "", on_slow), URA_ON(A_ASK, "", on_ask),
	     URA_ON(A_BLOCK, "", on_hold));
static const ura_class slow_class = { .name = "slow", .initial = &slow_beh,
				      .metrics = URA_CLASS_METRICS_WAIT };
static _Atomic int g_answers;
static void on_answer(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (ura_msg_tag(m) == A_ASK)
		atomic_fetch_add(&g_answers, 1);
}
static void on_fwd_slow(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	for (int i = 0; i < 10; i++)
		ura_send(cx, to, A_INC);
	for (int i = 0; i < 4; i++)
		ura_request(cx, to, on_answer, NULL, A_ASK);
}
URA_BEHAVIOR(fwd_beh, URA_ON(A_FWD, "r", on_fwd_slow));
static const ura_class fwd_class = { .name = "fwd", .initial = &fwd_beh };

static void mailbox_wait(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1, .metrics_sample_log2 = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref slow, fwd;
	t_must(ura_spawn(sys, &slow_class, NULL, &slow));
	t_must(ura_spawn(sys, &fwd_class, NULL, &fwd));
	/* 20 sends from main (a hold and 19 incs): 10 sampled whatever its
	 * counter's parity from the tests above. */
	sem_init(&g_queued, 0, 0);
	t_must(ura_send(sys, slow, A_BLOCK));
	for (int i = 0; i < 19; i++)
		t_must(ura_send(sys, slow, A_INC));
	t_must(ura_send(sys, fwd, A_FWD, slow));
	sem_post(&g_queued);
	t_must(ura_system_await(sys));
	sem_destroy(&g_queued);
	t_eq(atomic_load(&g_answers), 4, "the four requests answered");
	ura_hist h;
	t_must(ura_metrics_class_wait(sys, &slow_class, &h));
	t_eq(h.count, 15, "15 of 30 plain sends sampled (10 from main, 5 from a handler)");
	/* Queued before the hold ended, taken 2 ms apart: main's k-th inc
	 * waits at least 2(k-1) ms, and every other one is sampled, so at
	 * least 2 * (0 + 2 + ... + 16) = 144 ms in all. */
	t_ok(h.sum_ns >= 140 * 1000000ull, "they waited in the mailbox: %.1f ms in all",
	     (double)h.sum_ns / 1e6);
	uint64_t in_buckets = 0;
	for (unsigned i = 0; i < URA_HIST_BUCKETS; i++)
		in_buckets += h.bucket[i];
	t_ok(in_buckets <= h.count, "buckets hold at most the count");
	ura_hist none;
	t_rc(ura_metrics_class_wait(sys, &fwd_class, &none), -ENOENT, "an unmetered class: -ENOENT");
	/* Metered without the wait: counted, never stamped. */
	static const ura_class plain_metered = { .name = "pmet", .initial = &slow_beh,
						 .metrics = URA_CLASS_METRICS };
	ura_ref pm;
	t_must(ura_spawn(sys, &plain_metered, NULL, &pm));
	for (int i = 0; i < 8; i++)
		t_must(ura_send(sys, pm, A_INC));
	t_must(ura_system_await(sys));
	t_must(ura_metrics_class_wait(sys, &plain_metered, &none));
	t_eq(none.count, 0, "a class metered without URA_CLASS_METRICS_WAIT: no wait samples");
	t_rc(ura_metrics_class_wait(sys, NULL, &none), -EINVAL, "no class: -EINVAL");
	t_rc(ura_metrics_class_wait(NULL, &slow_class, &none), -EINVAL, "no system: -EINVAL");
	static char text[1 << 16];
	int len = ura_metrics_render(sys, URA_METRICS_PROMETHEUS, text, sizeof text);
	t_ok(len > 0 && len < (int)sizeof text, "rendered (%d bytes)", len);
	t_ok(strstr(text, "ura_class_mailbox_wait_seconds_count{class=\"slow\"} 15\n") != NULL,
	     "the exporter shows the same count");
	t_must(ura_system_destroy(sys));
}

/* ---- 7 -------------------------------------------------------------- */

static void on_poke(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_INC);
}
static void on_nothing(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(poke_beh, URA_ON(A_FWD, "r", on_poke), URA_ON(A_INC, "", on_nothing));
static const ura_class poke_class = { .name = "poke", .initial = &poke_beh };

static void wakeups_by_kind(void)
{
	const char *old = getenv("URA_TOPOLOGY");
	char *saved = old ? strdup(old) : NULL;
	setenv("URA_TOPOLOGY", "2x1", 1);
	ura_system *sys;
	ura_config cfg = { .workers = 2 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref a, b;
	t_must(ura_spawn_ex(sys, &poke_class, NULL, &(ura_spawn_opts){ .node = URA_NODE(0) }, &a));
	t_must(ura_spawn_ex(sys, &poke_class, NULL, &(ura_spawn_opts){ .node = URA_NODE(1) }, &b));
	for (int i = 0; i < 20; i++) {
		sleep_ms(5); /* long enough for both workers to go to sleep */
		t_must(ura_send(sys, a, A_FWD, b));
		t_must(ura_system_await(sys));
	}
	ura_worker_metrics w[2];
	t_eq(ura_metrics_workers(sys, w, 2), 2, "two workers");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	uint64_t sent = 0, ring = 0;
	for (int i = 0; i < 2; i++) {
		t_eq(w[i].wakeups_msg_ring + w[i].wakeups_eventfd, w[i].wakeups_sent,
		     "worker %d: MSG_RING + eventfd wakes = wakes sent (%llu)", i,
		     (unsigned long long)w[i].wakeups_sent);
		sent += w[i].wakeups_sent;
		ring += w[i].wakeups_msg_ring;
	}
	t_ok(sent >= 1, "the sleeping node was woken by a worker (%llu wakes)",
	     (unsigned long long)sent);
	if (strncmp(st.backend, "io_uring", 8) != 0)
		t_eq(ring, 0, "on %s no wake is a MSG_RING", st.backend);
	else if (strstr(st.backend, "defer_taskrun")) /* 6.1: MSG_RING (5.18) is there */
		t_eq(ring, sent, "on %s every wake is a MSG_RING", st.backend);
	else /* an older kernel: MSG_RING probed, all or none */
		t_ok(ring == sent || ring == 0, "on %s all by one kind (%llu of %llu by MSG_RING)",
		     st.backend, (unsigned long long)ring, (unsigned long long)sent);
	t_must(ura_system_destroy(sys));
	if (saved)
		setenv("URA_TOPOLOGY", saved, 1);
	else
		unsetenv("URA_TOPOLOGY");
	free(saved);
}

/* ---- 8. a metered class with a bounded mailbox ---------------------------- */

static const ura_mailbox_opts refuse4 = { .capacity = 4, .full = URA_FULL_REFUSE };
static const ura_class metered_bounded = {
	.name = "metered_bounded",
	.state_size = sizeof(cnt),
	.initial = &counting,
	.mailbox = &refuse4,
	.metrics = URA_CLASS_METRICS_WAIT,
};

static void bounded_metered(void)
{
	ura_system *sys;
	/* Every send from a thread is sampled (1 in 2^0 is not a setting:
	 * 1 in 2, over rounds of 4 sends from main). */
	ura_config cfg = { .workers = 1, .metrics_sample_log2 = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref b;
	t_must(ura_spawn(sys, &metered_bounded, NULL, &b));
	int refused = 0;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 4; i++)
			refused += ura_send(sys, b, A_INC) != 0;
		if (await_guarded(sys) != 0)
			break;
	}
	t_eq(refused, 0, "20 rounds of 4 sends to a metered mailbox of 4, drained between: "
	     "none refused");
	t_eq(ura_mailbox_depth(sys, b), 0, "its depth is back to 0");
	ura_hist h;
	t_must(ura_metrics_class_wait(sys, &metered_bounded, &h));
	t_eq(h.count, 40, "40 waits: 1 in 2 of the 80 sends, no counted message taken for one");
	t_must(ura_system_destroy(sys));
}

/* ---- 9. a metered class with a body ------------------------------------- */

static void body_counting(ura_ctx *cx, void *st)
{
	(void)st;
	for (;;)
		ura_receive(cx, &counting, URA_FOREVER);
}
static const ura_class metered_body = {
	.name = "metered_body",
	.state_size = sizeof(cnt),
	.body = body_counting,
	.stack_size = 32 << 10,
	.metrics = URA_CLASS_METRICS_WAIT,
};

static void bodies(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1, .metrics_sample_log2 = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref b;
	t_must(ura_spawn(sys, &metered_body, NULL, &b));
	/* An `other` first: no case of `counting` takes it, so the body
	 * keeps it for a later receive (neither handled nor unmatched). */
	t_must(ura_send(sys, b, A_OTHER));
	for (int i = 0; i < 40; i++)
		t_must(ura_send(sys, b, A_INC));
	t_rc(await_guarded(sys), 0, "await: the body waits");
	ura_actor_info ai;
	t_must(ura_actor_inspect(sys, b, &ai));
	t_ok(ai.cls == &metered_body, "a body of a metered class is inspected with its class");
	t_eq(ai.handled, 40, "its record has its 40 handled messages while it waits");
	t_ok(ai.behavior && !strcmp(ai.behavior, "(body)"), "and its behavior (%s)",
	     ai.behavior ? ai.behavior : "null");
	t_must(ura_send(sys, b, A_STOP));
	t_rc(await_guarded(sys), 0, "await: stopped");
	ura_class_metrics cm[4];
	uint64_t ov;
	int n = ura_metrics_classes(sys, cm, 4, &ov);
	t_eq(n, 1, "one metered class");
	t_eq(cm[0].spawned, 1, "spawned 1");
	t_eq(cm[0].stopped_normal, 1, "stopped normally 1");
	t_eq(cm[0].received, 42, "received 42: the kept one, 40 incs, the stop");
	t_eq(cm[0].handled, 41, "handled 41: a case ran for each but the kept one");
	/* The kept one is dropped at the stop: unmatched, as an event
	 * actor's stash is then (and as the worker counts it). */
	t_eq(cm[0].unmatched, 1, "unmatched 1: the kept message, dropped at the stop");
	t_eq(cm[0].handler.count, 41 / 2, "handler times: 1 in 2 cases timed (%llu)",
	     (unsigned long long)cm[0].handler.count);
	ura_hist h;
	t_must(ura_metrics_class_wait(sys, &metered_body, &h));
	t_eq(h.count, 21, "mailbox waits sampled 1 in 2 of main's 42 sends (%llu)",
	     (unsigned long long)h.count);
	t_must(ura_system_destroy(sys));
}

/* ---- 10. the record's pointer in the slot (core/metrics.h) ----------- */

/* A metered actor keeps its record's pointer in the last 8 bytes of the
 * slot's inline state: a 40-byte state moves to the heap for a metered
 * class, 32 bytes stay inline; both keep every byte, and an unmetered
 * class keeps all 40 inline. */
#define A_CHECK URA_ATOM("check")
static _Atomic int g_state_ok[3];
static void fill_inc(ura_ctx *cx, const ura_msg *m)
{
	int64_t *v = ura_state(cx);
	int64_t n = ura_arg_i64(m, 0);
	for (int i = 0; i < n; i++)
		v[i] += i + 1;
}
/* check(k, words, slot): v[i] == k * (i + 1) for every word. */
static void fill_check(ura_ctx *cx, const ura_msg *m)
{
	int64_t *v = ura_state(cx);
	int64_t k = ura_arg_i64(m, 0), n = ura_arg_i64(m, 1);
	int ok = 1;
	for (int i = 0; i < n; i++)
		ok &= v[i] == k * (i + 1);
	atomic_store(&g_state_ok[ura_arg_i64(m, 2)], ok ? 1 : -1);
}
URA_BEHAVIOR(fill_beh, URA_ON(A_INC, "i", fill_inc), URA_ON(A_CHECK, "iii", fill_check),
	     URA_ON(A_STOP, "", on_stop));
static const ura_class fill40_metered = {
	.name = "fill40m", .state_size = 40, .initial = &fill_beh, .metrics = URA_CLASS_METRICS,
};
static const ura_class fill32_metered = {
	.name = "fill32m", .state_size = 32, .initial = &fill_beh, .metrics = URA_CLASS_METRICS,
};
static const ura_class fill40_plain = { .name = "fill40", .state_size = 40, .initial = &fill_beh };

#define KF 300
static void record_in_slot(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1 };
	t_must(ura_system_new(&sys, &cfg));
	const ura_class *cls[3] = { &fill40_metered, &fill32_metered, &fill40_plain };
	const int64_t words[3] = { 5, 4, 5 };
	for (int round = 0; round < 2; round++) {
		ura_ref r[3];
		for (int c = 0; c < 3; c++) {
			t_must(ura_spawn(sys, cls[c], NULL, &r[c]));
			atomic_store(&g_state_ok[c], 0);
			for (int i = 0; i < KF; i++)
				t_must(ura_send(sys, r[c], A_INC, words[c]));
			t_must(ura_send(sys, r[c], A_CHECK, (int64_t)KF, words[c], (int64_t)c));
		}
		t_rc(await_guarded(sys), 0, "round %d: await", round);
		for (int c = 0; c < 3; c++)
			t_eq(atomic_load(&g_state_ok[c]), 1, "round %d: %s: every state byte kept",
			     round, cls[c]->name);
		for (int c = 0; c < 2; c++) {
			ura_actor_info ai;
			t_must(ura_actor_inspect(sys, r[c], &ai));
			t_eq(ai.handled, KF + 1, "round %d: %s: its record counted %d", round,
			     cls[c]->name, KF + 1);
		}
		ura_class_metrics cm[8];
		int nc = ura_metrics_classes(sys, cm, 8, NULL);
		uint64_t h40 = 0;
		for (int c = 0; c < nc && c < 8; c++)
			if (cm[c].cls == &fill40_metered)
				h40 = cm[c].handled;
		/* each earlier round: KF incs, the check, the stop */
		t_eq(h40, (uint64_t)round * (KF + 2) + KF + 1,
		     "round %d: the class counted every handled message", round);
		/* Stopped: the slots go back, to be taken by the next round's
		 * spawns with the classes in another order of need. */
		for (int c = 0; c < 3; c++)
			t_must(ura_send(sys, r[c], A_STOP));
		t_rc(await_guarded(sys), 0, "round %d: stopped", round);
	}
	t_must(ura_system_destroy(sys));
}

/* ---- 10. a stash dropped at the stop ------------------------------------ */

static const ura_class metered_stash = {
	.name = "metered_stash",
	.state_size = sizeof(cnt),
	.initial = &counting,
	.unmatched = URA_UNMATCHED_STASH,
	.metrics = URA_CLASS_METRICS,
};

static void stash_dropped(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref a;
	t_must(ura_spawn(sys, &metered_stash, NULL, &a));
	for (int i = 0; i < 3; i++)
		t_must(ura_send(sys, a, A_OTHER));
	t_must(ura_send(sys, a, A_INC));
	t_must(ura_system_await(sys));
	int found;
	ura_class_metrics c = class_of(sys, &metered_stash, &found);
	t_eq(c.unmatched, 0, "stash: 3 stashed, none unmatched yet");
	t_eq(c.handled, 1, "stash: the inc handled");
	t_must(ura_send(sys, a, A_STOP));
	t_must(ura_system_await(sys));
	c = class_of(sys, &metered_stash, &found);
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(c.unmatched, 3, "stash: the 3 dropped at the stop are the class's unmatched");
	t_eq(st.unmatched, 3, "and the worker's");
	t_eq(c.received, 5, "received: 3 stashed, the inc, the stop");
	t_eq(c.handled, 2, "handled: the inc and the stop");
	t_must(ura_system_destroy(sys));
}

int main(void)
{
	counters();
	depth_and_top();
	bad_input();
	mailbox_wait();
	wakeups_by_kind();
	bounded_metered();
	bodies();
	record_in_slot();
	stash_dropped();
	return t_done();
}
