/* SPDX-License-Identifier: MIT */
/*
 * Delayed sends and their cancellation (ura_send_after, ura_cancel).
 *
 *  1. precision: 200 sequential self-sends of 1 ms and of 10 ms; the
 *     lateness (delivery - intended deadline, CLOCK_MONOTONIC) is printed
 *     as p50/p99 diagnostics; only generous bounds are asserted (p50 <
 *     50 ms, p99 < 1 s), and a timer is never early;
 *  2. delayed sends from outside any actor;
 *  3. cancel: before expiry (never delivered, 0), after delivery
 *     (-ENOENT, nothing changes), twice (second -ENOENT), garbage handles
 *     (-EINVAL or -ENOENT, never a crash), from a handler;
 *  4. cancels racing the expiry, from another thread: each message is
 *     delivered at most once and delivered + successful cancels == armed;
 *  5. bad delays: over URA_MAX_DELAY, a negative one cast to uint64_t;
 *  6. a target that stops before the delivery: a dead letter;
 *  7. the timers an actor armed are cancelled when it stops;
 *  8. quiescence waits for pending delayed sends.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_TICK URA_ATOM("tick")
#define A_GO URA_ATOM("go")
#define A_HIT URA_ATOM("hit")
#define A_PING URA_ATOM("ping")
#define A_STOP URA_ATOM("stop")
#define A_ARM URA_ATOM("arm")
#define A_ARMSTOP URA_ATOM("armstop")
#define A_BAD URA_ATOM("bad")

static _Atomic long g_errors;

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / URA_SEC), (long)(ns % URA_SEC) };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- the sink: counts hits per index ---------------------------------- */

#define MAXIDX 200000
static _Atomic unsigned char g_hits[MAXIDX];
static _Atomic long g_hit_total;
static _Atomic long g_ping_total;
static _Atomic int g_ping_external; /* pings whose sender was URA_NOREF */
static int64_t g_ping_late[64];

static void sink_hit(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t i = ura_arg_i64(m, 0);
	if (i >= 0 && i < MAXIDX)
		atomic_fetch_add_explicit(&g_hits[i], 1, memory_order_relaxed);
	else
		atomic_fetch_add(&g_errors, 1);
	atomic_fetch_add(&g_hit_total, 1);
}

/* ping(index, intended deadline) */
static void sink_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t now = (int64_t)t_now_ns();
	int64_t i = ura_arg_i64(m, 0);
	if (i >= 0 && i < 64)
		g_ping_late[i] = now - ura_arg_i64(m, 1);
	if (ura_ref_null(ura_msg_sender(m)))
		atomic_fetch_add(&g_ping_external, 1);
	atomic_fetch_add(&g_ping_total, 1);
}

static void do_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(sink_beh,
	URA_ON(A_HIT, "i", sink_hit),
	URA_ON(A_PING, "ii", sink_ping),
	URA_ON(A_STOP, "", do_stop));
static const ura_class sink_class = { .name = "sink", .initial = &sink_beh };

static void hits_reset(void)
{
	for (long i = 0; i < MAXIDX; i++)
		atomic_store_explicit(&g_hits[i], 0, memory_order_relaxed);
	atomic_store(&g_hit_total, 0);
	atomic_store(&g_ping_total, 0);
	atomic_store(&g_ping_external, 0);
}

/* ---- 1. precision ------------------------------------------------------ */

#define PREC_N 200
static int64_t g_late[PREC_N];
static _Atomic int g_nlate;
static uint64_t g_prec_delay;

static void prec_arm(ura_ctx *cx)
{
	int64_t deadline = (int64_t)(t_now_ns() + g_prec_delay);
	ura_timer h = ura_send_after(cx, ura_self(cx), g_prec_delay, A_TICK, deadline);
	if (h <= 0)
		atomic_fetch_add(&g_errors, 1);
}

static void prec_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	prec_arm(cx);
}

static void prec_tick(ura_ctx *cx, const ura_msg *m)
{
	int64_t now = (int64_t)t_now_ns();
	int i = atomic_load(&g_nlate);
	if (i < PREC_N)
		g_late[i] = now - ura_arg_i64(m, 0);
	atomic_store(&g_nlate, i + 1);
	if (i + 1 < PREC_N)
		prec_arm(cx);
}

URA_BEHAVIOR(prec_beh,
	URA_ON(A_GO, "", prec_go),
	URA_ON(A_TICK, "i", prec_tick));
static const ura_class prec_class = { .name = "pacer", .initial = &prec_beh };

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static void test_precision(void)
{
	static const uint64_t delays[] = { 1 * URA_MSEC, 10 * URA_MSEC };
	ura_system *sys = t_system(0);
	for (size_t d = 0; d < sizeof delays / sizeof delays[0]; d++) {
		ura_ref p;
		g_prec_delay = delays[d];
		atomic_store(&g_nlate, 0);
		atomic_store(&g_errors, 0);
		t_must(ura_spawn(sys, &prec_class, NULL, &p));
		t_must(ura_send(sys, p, A_GO));
		t_rc(await_guarded(sys), 0, "precision %llu ms: await",
		     (unsigned long long)(delays[d] / URA_MSEC));
		t_eq(atomic_load(&g_nlate), PREC_N, "precision %llu ms: %d sequential delayed sends delivered",
		     (unsigned long long)(delays[d] / URA_MSEC), PREC_N);
		t_eq(atomic_load(&g_errors), 0, "precision: every arm returned a handle");
		int n = atomic_load(&g_nlate);
		if (n > PREC_N)
			n = PREC_N;
		if (n == 0)
			continue;
		int64_t v[PREC_N];
		memcpy(v, g_late, (size_t)n * sizeof v[0]);
		qsort(v, (size_t)n, sizeof v[0], cmp_i64);
		int64_t p50 = v[n / 2], p99 = v[(n * 99) / 100], mn = v[0], mx = v[n - 1];
		t_diag("delay %llu ms: lateness min %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us",
		       (unsigned long long)(delays[d] / URA_MSEC), mn / 1e3, p50 / 1e3,
		       p99 / 1e3, mx / 1e3);
		t_ok(mn >= -(int64_t)URA_MSEC, "delay %llu ms: never early by 1 ms or more (min %lld ns)",
		     (unsigned long long)(delays[d] / URA_MSEC), (long long)mn);
		/* A systematic lateness (a coarse wheel, a deadline that waits
		 * for an unrelated wake) moves the median; a loaded machine's
		 * stalls move only the tail, so the tail gets a bound that
		 * only a lost or parked timer breaks (precision is measured in
		 * bench/, not asserted here). */
		t_ok(p50 < 50 * (int64_t)URA_MSEC, "delay %llu ms: p50 lateness %lld ns < 50 ms",
		     (unsigned long long)(delays[d] / URA_MSEC), (long long)p50);
		t_ok(p99 < (int64_t)URA_SEC, "delay %llu ms: p99 lateness %lld ns < 1 s",
		     (unsigned long long)(delays[d] / URA_MSEC), (long long)p99);
	}
	ura_stats st = stats(sys);
	t_eq(st.timers_pending, 0, "precision: no timer pending after await");
	t_destroy(sys);
}

/* ---- 2. delayed sends from outside any actor ------------------------- */

static void test_external(void)
{
	ura_system *sys = t_system(0);
	ura_ref s;
	hits_reset();
	t_must(ura_spawn(sys, &sink_class, NULL, &s));
	ura_stats st0 = stats(sys);
	int bad = 0;
	for (int i = 0; i < 64; i++) {
		uint64_t delay = (uint64_t)(i % 16) * 500 * URA_USEC + URA_MSEC;
		int64_t deadline = (int64_t)(t_now_ns() + delay);
		ura_timer h = ura_send_after(sys, s, delay, A_PING, i, deadline);
		if (h <= 0) {
			printf("# send_after from outside: %s\n", ura_strerror((int)h));
			bad++;
		}
	}
	t_eq(bad, 0, "external: 64 ura_send_after(sys, ...) return handles > 0");
	ura_stats st1 = stats(sys);
	t_ok(st1.timers_armed - st0.timers_armed == 64,
	     "external: stats.timers_armed grew by 64 (by %llu)",
	     (unsigned long long)(st1.timers_armed - st0.timers_armed));
	t_rc(await_guarded(sys), 0, "external: await");
	t_eq(atomic_load(&g_ping_total), 64, "external: all 64 delivered");
	t_eq(atomic_load(&g_ping_external), 64, "external: sender is URA_NOREF");
	int64_t mn = INT64_MAX, mx = INT64_MIN;
	for (int i = 0; i < 64; i++) {
		if (g_ping_late[i] < mn)
			mn = g_ping_late[i];
		if (g_ping_late[i] > mx)
			mx = g_ping_late[i];
	}
	t_diag("external: lateness min %.1f us, max %.1f us", mn / 1e3, mx / 1e3);
	t_ok(mn >= -(int64_t)URA_MSEC, "external: never early (min %lld ns)", (long long)mn);
	ura_stats st2 = stats(sys);
	t_eq(st2.timers_fired - st0.timers_fired, 64, "external: stats.timers_fired grew by 64");
	t_eq(st2.timers_pending, 0, "external: none pending");
	t_destroy(sys);
}

/* ---- 3. cancel semantics ---------------------------------------------- */

static _Atomic int g_cx_cancel_rc = 1, g_cx_cancel2_rc = 1;
static _Atomic int64_t g_cx_handle;

/* From a handler: arm a long timer to itself, cancel it at once. */
static void canceller_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_timer h = ura_send_after(cx, ura_self(cx), 30 * URA_SEC, A_HIT, 7);
	atomic_store(&g_cx_handle, h);
	if (h <= 0)
		return;
	atomic_store(&g_cx_cancel_rc, ura_cancel(ura_ctx_system(cx), h));
	atomic_store(&g_cx_cancel2_rc, ura_cancel(ura_ctx_system(cx), h));
}

URA_BEHAVIOR(canceller_beh,
	URA_ON(A_GO, "", canceller_go),
	URA_ON(A_HIT, "i", sink_hit));
static const ura_class canceller_class = { .name = "canceller", .initial = &canceller_beh };

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_cancel(void)
{
	ura_system *sys = t_system(0);
	ura_ref s;
	hits_reset();
	t_must(ura_spawn(sys, &sink_class, NULL, &s));

	/* Before expiry. */
	ura_stats st0 = stats(sys);
	ura_timer h = ura_send_after(sys, s, 500 * URA_MSEC, A_HIT, 1);
	t_ok(h > 0, "cancel: armed a 500 ms timer (handle %lld)", (long long)h);
	t_rc(ura_cancel(sys, h), 0, "cancel before expiry: 0");
	t_rc(await_guarded(sys), 0, "cancel: await");
	ura_stats st1 = stats(sys);
	t_eq(st1.timers_cancelled - st0.timers_cancelled, 1, "cancel: stats.timers_cancelled grew by 1");
	t_eq(st1.timers_pending, 0, "cancel: nothing pending");
	sleep_ns(600 * URA_MSEC);
	t_rc(await_guarded(sys), 0, "cancel: await after the deadline passed");
	t_eq(atomic_load(&g_hits[1]), 0, "cancelled message never delivered (checked past its deadline)");
	t_rc(ura_cancel(sys, h), -ENOENT, "cancel of a cancelled timer: -ENOENT");

	/* Twice in a row, before expiry. */
	h = ura_send_after(sys, s, 30 * URA_SEC, A_HIT, 2);
	t_ok(h > 0, "cancel twice: armed");
	t_rc(ura_cancel(sys, h), 0, "cancel twice: first 0");
	t_rc(ura_cancel(sys, h), -ENOENT, "cancel twice: second -ENOENT");

	/* After delivery. */
	h = ura_send_after(sys, s, 1 * URA_MSEC, A_HIT, 3);
	t_ok(h > 0, "cancel after delivery: armed 1 ms");
	t_rc(await_guarded(sys), 0, "cancel after delivery: await");
	t_eq(atomic_load(&g_hits[3]), 1, "cancel after delivery: delivered once");
	ura_stats st2 = stats(sys);
	t_rc(ura_cancel(sys, h), -ENOENT, "cancel after delivery: -ENOENT");
	t_rc(await_guarded(sys), 0, "cancel after delivery: await");
	ura_stats st3 = stats(sys);
	t_eq(atomic_load(&g_hits[3]), 1, "cancel after delivery: still delivered exactly once");
	t_ok(st3.timers_cancelled == st2.timers_cancelled && st3.timers_fired == st2.timers_fired &&
	     st3.sent == st2.sent && st3.received == st2.received,
	     "cancel after delivery: no counter moved");

	/* A record reused by a later timer: the old handle must not cancel
	 * the new timer. One worker, so the record is reused for sure. */
	ura_system *one = t_system(1);
	ura_ref s1;
	t_must(ura_spawn(one, &sink_class, NULL, &s1));
	ura_timer old = ura_send_after(one, s1, 30 * URA_SEC, A_HIT, 4);
	t_rc(ura_cancel(one, old), 0, "stale handle: first timer cancelled");
	t_rc(await_guarded(one), 0, "stale handle: await");
	ura_timer fresh = ura_send_after(one, s1, 30 * URA_MSEC, A_HIT, 5);
	t_ok(fresh > 0 && fresh != old, "stale handle: a new timer has a new handle");
	t_rc(ura_cancel(one, old), -ENOENT, "stale handle: cancel with the old one: -ENOENT");
	t_rc(await_guarded(one), 0, "stale handle: await");
	t_eq(atomic_load(&g_hits[5]), 1, "stale handle: the new timer still fired");
	t_destroy(one);

	/* Garbage handles. */
	t_rc(ura_cancel(sys, 0), -EINVAL, "cancel(0): -EINVAL");
	t_rc(ura_cancel(sys, -1), -EINVAL, "cancel(-1): -EINVAL");
	t_rc(ura_cancel(sys, INT64_MIN), -EINVAL, "cancel(INT64_MIN): -EINVAL");
	t_rc(ura_cancel(NULL, h), -EINVAL, "cancel with a NULL system: -EINVAL");
	static const int64_t odd[] = {
		1, INT64_MAX, (int64_t)1 << 32, ((int64_t)1 << 32) | 1,
		((int64_t)1 << 32) | ((int64_t)1023 << 22), ((int64_t)1 << 32) | 0x3fffff,
		(int64_t)1 << 62, ((int64_t)0x3fffffff << 32) | 5, 0x7fffffff,
	};
	int badrc = 0;
	for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
		int rc = ura_cancel(sys, odd[i]);
		if (rc != -EINVAL && rc != -ENOENT) {
			printf("# cancel(%#llx): %d (%s)\n", (unsigned long long)odd[i], rc,
			       ura_strerror(rc));
			badrc++;
		}
	}
	t_eq(badrc, 0, "cancel of odd handles: -EINVAL or -ENOENT");
	badrc = 0;
	long nfuzz = t_scaled(200000);
	for (long i = 0; i < nfuzz; i++) {
		uint64_t r = rng();
		/* Half fully random, half with small worker/index fields. */
		if (i & 1)
			r &= 0x00000fff00c00fffull;
		int rc = ura_cancel(sys, (int64_t)r);
		if (rc != -EINVAL && rc != -ENOENT) {
			if (badrc++ < 5)
				printf("# cancel(%#llx): %d (%s)\n", (unsigned long long)r, rc,
				       ura_strerror(rc));
		}
	}
	t_eq(badrc, 0, "cancel of %ld random handles: -EINVAL or -ENOENT, no crash", nfuzz);
	t_rc(await_guarded(sys), 0, "garbage cancels: await");
	t_eq(atomic_load(&g_hit_total), 2, "garbage cancels: nothing else delivered");

	/* From a handler. */
	ura_ref c;
	t_must(ura_spawn(sys, &canceller_class, NULL, &c));
	ura_stats st4 = stats(sys);
	t_must(ura_send(sys, c, A_GO));
	t_rc(await_guarded(sys), 0, "cancel from a handler: await");
	ura_stats st5 = stats(sys);
	t_ok(atomic_load(&g_cx_handle) > 0, "cancel from a handler: armed");
	t_rc(atomic_load(&g_cx_cancel_rc), 0, "cancel from a handler: 0");
	t_rc(atomic_load(&g_cx_cancel2_rc), -ENOENT, "cancel from a handler, again: -ENOENT");
	t_eq(st5.timers_cancelled - st4.timers_cancelled, 1, "cancel from a handler: counted");
	t_eq(atomic_load(&g_hits[7]), 0, "cancel from a handler: not delivered");
	t_destroy(sys);
}

/* ---- 4. cancels racing the expiry -------------------------------------- */

struct race {
	ura_system *sys;
	long n;
	_Atomic int64_t *handles;
	_Atomic long published;
	unsigned char *won;      /* cancel returned 0 */
	_Atomic long bad_rc;
	long wins;
};

static struct race g_race;

static void *race_canceller(void *arg)
{
	struct race *r = arg;
	for (long i = 0; i < r->n; i++) {
		while (atomic_load_explicit(&r->published, memory_order_acquire) <= i)
			sched_yield();
		int64_t h = atomic_load_explicit(&r->handles[i], memory_order_relaxed);
		int rc = ura_cancel(r->sys, h);
		if (rc == 0) {
			r->won[i] = 1;
			r->wins++;
		} else if (rc != -ENOENT) {
			if (atomic_fetch_add(&r->bad_rc, 1) < 5)
				printf("# racing cancel: %s\n", ura_strerror(rc));
		}
	}
	return NULL;
}

/* arm(sink, from, count): arms count tiny timers, then the next batch. */
static void armer_arm(ura_ctx *cx, const ura_msg *m)
{
	ura_ref sink = ura_arg_ref(m, 0);
	long from = (long)ura_arg_i64(m, 1), k = (long)ura_arg_i64(m, 2);
	struct race *r = &g_race;
	long end = from + k < r->n ? from + k : r->n;
	for (long i = from; i < end; i++) {
		uint64_t delay = (uint64_t)(i % 5) * 50 * URA_USEC;
		ura_timer h = ura_send_after(cx, sink, delay, A_HIT, i);
		if (h <= 0)
			atomic_fetch_add(&g_errors, 1);
		atomic_store_explicit(&r->handles[i], h, memory_order_relaxed);
		atomic_store_explicit(&r->published, i + 1, memory_order_release);
	}
	if (end < r->n)
		ura_send(cx, ura_self(cx), A_ARM, sink, end, k);
}

URA_BEHAVIOR(armer_beh, URA_ON(A_ARM, "rii", armer_arm));
static const ura_class armer_class = { .name = "armer", .initial = &armer_beh };

static void race_check(ura_system *sys, const char *how, ura_stats *st0)
{
	struct race *r = &g_race;
	t_rc(await_guarded(sys), 0, "race (%s): await", how);
	ura_stats st1 = stats(sys);
	long dup = 0, both = 0, neither = 0, delivered = 0;
	for (long i = 0; i < r->n; i++) {
		int h = atomic_load(&g_hits[i]);
		delivered += h;
		if (h > 1)
			dup++;
		if (h && r->won[i])
			both++;
		if (!h && !r->won[i])
			neither++;
	}
	t_diag("race (%s): %ld armed, %ld delivered, %ld cancelled", how, r->n, delivered, r->wins);
	t_eq(atomic_load(&r->bad_rc), 0, "race (%s): every cancel returned 0 or -ENOENT", how);
	t_eq(dup, 0, "race (%s): no message delivered twice", how);
	t_eq(both, 0, "race (%s): no message both delivered and cancelled", how);
	t_eq(neither, 0, "race (%s): no message lost (neither delivered nor cancelled)", how);
	t_eq(delivered + r->wins, r->n, "race (%s): delivered + cancelled == armed", how);
	t_eq((long)(st1.timers_cancelled - st0->timers_cancelled), r->wins,
	     "race (%s): stats.timers_cancelled == successful cancels", how);
	t_eq((long)(st1.timers_fired - st0->timers_fired), delivered,
	     "race (%s): stats.timers_fired == deliveries", how);
	t_eq(st1.timers_pending, 0, "race (%s): none pending", how);
}

static void race_setup(ura_system *sys, long n)
{
	struct race *r = &g_race;
	free(r->handles);
	free(r->won);
	memset(r, 0, sizeof *r);
	r->sys = sys;
	r->n = n;
	r->handles = calloc((size_t)n, sizeof *r->handles);
	r->won = calloc((size_t)n, 1);
	if (!r->handles || !r->won) {
		printf("Bail out! no memory\n");
		exit(1);
	}
	hits_reset();
	atomic_store(&g_errors, 0);
}

static void test_race(void)
{
	long n = t_scaled(50000);
	if (n > MAXIDX)
		n = MAXIDX;
	ura_system *sys = t_system(0);
	ura_ref s;
	t_must(ura_spawn(sys, &sink_class, NULL, &s));

	/* a. Armed from this thread, cancelled from another. */
	race_setup(sys, n);
	ura_stats st0 = stats(sys);
	pthread_t th;
	t_must(-pthread_create(&th, NULL, race_canceller, &g_race));
	for (long i = 0; i < n; i++) {
		uint64_t delay = (uint64_t)(i % 5) * 50 * URA_USEC;
		ura_timer h = ura_send_after(sys, s, delay, A_HIT, i);
		if (h <= 0)
			atomic_fetch_add(&g_errors, 1);
		atomic_store_explicit(&g_race.handles[i], h, memory_order_relaxed);
		atomic_store_explicit(&g_race.published, i + 1, memory_order_release);
		if (i % 64 == 63)
			sched_yield(); /* let some fire before their cancel */
	}
	pthread_join(th, NULL);
	t_eq(atomic_load(&g_errors), 0, "race (external arm): every arm returned a handle");
	race_check(sys, "external arm", &st0);

	/* b. Armed from a handler (the timers belong to the armer and live in
	 * its worker's wheel), cancelled from another thread. */
	race_setup(sys, n);
	ura_ref a;
	t_must(ura_spawn(sys, &armer_class, NULL, &a));
	st0 = stats(sys);
	t_must(-pthread_create(&th, NULL, race_canceller, &g_race));
	t_must(ura_send(sys, a, A_ARM, s, 0, 64));
	pthread_join(th, NULL);
	t_eq(atomic_load(&g_errors), 0, "race (handler arm): every arm returned a handle");
	race_check(sys, "handler arm", &st0);

	free(g_race.handles);
	free(g_race.won);
	g_race.handles = NULL;
	g_race.won = NULL;
	t_destroy(sys);
}

/* ---- 5. bad delays ------------------------------------------------------ */

static _Atomic int64_t g_bad_over = 1, g_bad_neg = 1, g_bad_max = 0;

static void bad_delays(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_bad_over, ura_send_after(cx, ura_self(cx), URA_MAX_DELAY + 1, A_HIT, 1));
	atomic_store(&g_bad_neg, ura_send_after(cx, ura_self(cx), (uint64_t)(int64_t)-5000000,
						A_HIT, 1));
	ura_timer h = ura_send_after(cx, ura_self(cx), URA_MAX_DELAY, A_HIT, 1);
	atomic_store(&g_bad_max, h);
	if (h > 0 && ura_cancel(ura_ctx_system(cx), h) != 0)
		atomic_fetch_add(&g_errors, 1);
}

URA_BEHAVIOR(bad_beh,
	URA_ON(A_BAD, "", bad_delays),
	URA_ON(A_HIT, "i", sink_hit),
	URA_ON(A_STOP, "", do_stop));
static const ura_class bad_class = { .name = "bad", .initial = &bad_beh };

static void test_bad_delay(void)
{
	ura_system *sys = t_system(0);
	ura_ref s, b;
	hits_reset();
	atomic_store(&g_errors, 0);
	t_must(ura_spawn(sys, &sink_class, NULL, &s));
	t_must(ura_spawn(sys, &bad_class, NULL, &b));
	ura_stats st0 = stats(sys);
	t_eq(ura_send_after(sys, s, URA_MAX_DELAY + 1, A_HIT, 1), -EINVAL,
	     "delay URA_MAX_DELAY + 1: -EINVAL");
	t_eq(ura_send_after(sys, s, UINT64_MAX, A_HIT, 1), -EINVAL, "delay UINT64_MAX: -EINVAL");
	t_eq(ura_send_after(sys, s, (uint64_t)(int64_t)-1, A_HIT, 1), -EINVAL,
	     "delay (uint64_t)-1: -EINVAL");
	t_eq(ura_send_after(sys, s, (uint64_t)(int64_t)-(int64_t)URA_SEC, A_HIT, 1), -EINVAL,
	     "delay (uint64_t)-1 s: -EINVAL");
	ura_stats st1 = stats(sys);
	t_ok(st1.timers_armed == st0.timers_armed && st1.sent == st0.sent,
	     "bad delays: nothing armed, nothing counted as sent");
	ura_timer h = ura_send_after(sys, s, URA_MAX_DELAY, A_HIT, 1);
	t_ok(h > 0, "delay exactly URA_MAX_DELAY: accepted (%lld)", (long long)h);
	t_rc(ura_cancel(sys, h), 0, "URA_MAX_DELAY timer: cancelled");
	h = ura_send_after(sys, s, 0, A_HIT, 2);
	t_ok(h > 0, "delay 0: accepted");
	t_must(ura_send(sys, b, A_BAD));
	t_rc(await_guarded(sys), 0, "bad delays: await");
	t_eq(atomic_load(&g_hits[2]), 1, "delay 0: delivered");
	t_eq(atomic_load(&g_bad_over), -EINVAL, "from a handler: URA_MAX_DELAY + 1: -EINVAL");
	t_eq(atomic_load(&g_bad_neg), -EINVAL, "from a handler: negative delay: -EINVAL");
	t_ok(atomic_load(&g_bad_max) > 0, "from a handler: URA_MAX_DELAY accepted");
	t_eq(atomic_load(&g_errors), 0, "from a handler: URA_MAX_DELAY timer cancelled");
	t_eq(atomic_load(&g_hits[1]), 0, "no bad-delay message was delivered");
	/* Gone target, and bad arguments. */
	t_must(ura_send(sys, s, A_STOP));
	t_rc(await_guarded(sys), 0, "stop the sink: await");
	t_eq(ura_send_after(sys, s, URA_MSEC, A_HIT, 1), -ESRCH, "to a stopped actor: -ESRCH");
	t_eq(ura_send_after(sys, URA_NOREF, URA_MSEC, A_HIT, 1), -ESRCH, "to URA_NOREF: -ESRCH");
	t_eq(ura_send_after(sys, b, URA_MSEC, 0, 1), -EINVAL, "tag 0: -EINVAL");
	t_eq(ura_send_afterv_sys(NULL, b, URA_MSEC, A_HIT, NULL, 0), -EINVAL, "NULL system: -EINVAL");
	t_eq(ura_send_afterv_ctx(NULL, b, URA_MSEC, A_HIT, NULL, 0), -EINVAL, "NULL ctx: -EINVAL");
	ura_stats st2 = stats(sys);
	t_eq(st2.timers_pending, 0, "bad delays: none pending");
	t_destroy(sys);
}

/* ---- 6. a target that stops before the delivery ---------------------- */

/* delay(to, delay_ns, index): a delayed hit owned by this (live) actor. */
static void delayer_delay(ura_ctx *cx, const ura_msg *m)
{
	ura_timer h = ura_send_after(cx, ura_arg_ref(m, 0), (uint64_t)ura_arg_i64(m, 1),
				     A_HIT, ura_arg_i64(m, 2));
	if (h <= 0)
		atomic_fetch_add(&g_errors, 1);
}
/* The same, then the target is told to stop: it stops after the arm,
 * whatever order the workers run the two actors in (a stop sent by the
 * test beside the arm raced it on a loaded machine). Then, on a system
 * of one worker, the turn holds that worker until the test has armed its
 * own delayed send (10 s at most): the target, its stop queued before
 * either hit can come, cannot stop before both are armed. */
#define A_GOSTOP URA_ATOM("gostop")
static _Atomic int g_stop_queued, g_ext_armed;
static void delayer_delay_stop(ura_ctx *cx, const ura_msg *m)
{
	delayer_delay(cx, m);
	if (ura_send(cx, ura_arg_ref(m, 0), A_STOP) < 0)
		atomic_fetch_add(&g_errors, 1);
	atomic_store(&g_stop_queued, 1);
	t_wait_until(atomic_load(&g_ext_armed), 10 * URA_SEC, usleep(100));
}
URA_BEHAVIOR(delayer_beh, URA_ON(A_GO, "rii", delayer_delay),
	     URA_ON(A_GOSTOP, "rii", delayer_delay_stop));
static const ura_class delayer_class = { .name = "delayer", .initial = &delayer_beh };

static void test_dead_target(void)
{
	/* One worker, for delayer_delay_stop's hold, which orders the stop
	 * before both hits: a time margin (300 ms) let an external hit in
	 * first when the worker that owned it ran while d's was slow. */
	ura_system *sys = t_system(1);
	ura_ref x, d;
	hits_reset();
	atomic_store(&g_errors, 0);
	atomic_store(&g_stop_queued, 0);
	atomic_store(&g_ext_armed, 0);
	t_must(ura_spawn(sys, &sink_class, NULL, &x));
	t_must(ura_spawn(sys, &delayer_class, NULL, &d));
	ura_stats st0 = stats(sys);
	t_must(ura_send(sys, d, A_GOSTOP, x, (int64_t)URA_MSEC, 2));
	t_wait_until(atomic_load(&g_stop_queued), 10 * URA_SEC, usleep(100));
	t_ok(atomic_load(&g_stop_queued), "dead target: the stop is queued before the external arm");
	ura_timer h = ura_send_after(sys, x, URA_MSEC, A_HIT, 1);
	atomic_store(&g_ext_armed, 1);
	t_ok(h > 0, "dead target: external delayed send armed");
	t_rc(await_guarded(sys), 0, "dead target: await");
	ura_stats st1 = stats(sys);
	t_eq(atomic_load(&g_errors), 0, "dead target: the actor's delayed send armed");
	t_eq(atomic_load(&g_hit_total), 0, "dead target: nothing delivered to the stopped actor");
	t_eq(st1.dead_letters - st0.dead_letters, 2, "dead target: both counted as dead letters");
	t_eq(st1.timers_fired - st0.timers_fired, 2, "dead target: both timers fired");
	t_eq(st1.sent, st1.received, "dead target: sent == received");
	t_rc(ura_cancel(sys, h), -ENOENT, "dead target: cancel after it fired: -ENOENT");
	t_destroy(sys);
}

/* ---- 7. an actor's timers are cancelled when it stops --------------------- */

static void owner_arm(ura_ctx *cx, const ura_msg *m)
{
	ura_ref sink = ura_arg_ref(m, 0);
	long n = (long)ura_arg_i64(m, 1);
	for (long i = 0; i < n; i++) {
		/* Half to itself, half to another actor: ownership is by who
		 * armed the timer, not by its target. */
		ura_ref to = i & 1 ? sink : ura_self(cx);
		ura_timer h = ura_send_after(cx, to, 60 * URA_SEC + (uint64_t)i * URA_MSEC, A_HIT, i);
		if (h <= 0)
			atomic_fetch_add(&g_errors, 1);
	}
}

static void owner_armstop(ura_ctx *cx, const ura_msg *m)
{
	owner_arm(cx, m);
	ura_stop(cx);
}

URA_BEHAVIOR(owner_beh,
	URA_ON(A_ARM, "ri", owner_arm),
	URA_ON(A_ARMSTOP, "ri", owner_armstop),
	URA_ON(A_HIT, "i", sink_hit),
	URA_ON(A_STOP, "", do_stop));
static const ura_class owner_class = { .name = "owner", .initial = &owner_beh };

static void owned_round(ura_system *sys, ura_ref sink, int same_handler)
{
	const char *how = same_handler ? "arm+stop in one handler" : "stop in a later turn";
	ura_ref o;
	t_must(ura_spawn(sys, &owner_class, NULL, &o));
	ura_stats st0 = stats(sys);
	if (same_handler) {
		t_must(ura_send(sys, o, A_ARMSTOP, sink, 100));
	} else {
		t_must(ura_send(sys, o, A_ARM, sink, 100));
		t_must(ura_send(sys, o, A_STOP));
	}
	uint64_t t0 = t_now_ns();
	/* The timers are 60 s away: an await that waited for them would hit
	 * this 20 s guard. */
	int rc = ura_system_await_for(sys, 20 * URA_SEC);
	uint64_t took = t_now_ns() - t0;
	t_rc(rc, 0, "owned timers (%s): await returns before the timers' deadline", how);
	t_diag("owned timers (%s): await took %.2f ms", how, took / 1e6);
	ura_stats st1 = stats(sys);
	t_eq(st1.timers_armed - st0.timers_armed, 100, "owned timers (%s): 100 armed", how);
	t_eq(st1.timers_cancelled - st0.timers_cancelled, 100,
	     "owned timers (%s): stats.timers_cancelled grew by 100", how);
	t_eq(st1.timers_pending, 0, "owned timers (%s): none pending", how);
	t_eq(atomic_load(&g_hit_total), 0, "owned timers (%s): nothing delivered", how);
	t_rc(ura_send(sys, o, A_HIT, 1), -ESRCH, "owned timers (%s): the owner is gone", how);
}

static void test_owned(void)
{
	ura_system *sys = t_system(0);
	ura_ref s;
	hits_reset();
	atomic_store(&g_errors, 0);
	t_must(ura_spawn(sys, &sink_class, NULL, &s));
	owned_round(sys, s, 0);
	owned_round(sys, s, 1);
	t_eq(atomic_load(&g_errors), 0, "owned timers: every arm returned a handle");
	/* Destroy must find nothing pending (it reports pending timers as
	 * lost messages). */
	t_destroy(sys);
}

/* ---- 8. quiescence waits for pending delayed sends ---------------------- */

static void test_quiescence(void)
{
	ura_system *sys = t_system(0);
	ura_ref s, d;
	hits_reset();
	atomic_store(&g_errors, 0);
	t_must(ura_spawn(sys, &sink_class, NULL, &s));
	t_must(ura_spawn(sys, &delayer_class, NULL, &d));

	uint64_t t0 = t_now_ns();
	ura_timer h = ura_send_after(sys, s, 50 * URA_MSEC, A_HIT, 1);
	t_ok(h > 0, "quiescence: 50 ms delayed send from outside armed");
	t_rc(await_guarded(sys), 0, "quiescence: await");
	uint64_t took = t_now_ns() - t0;
	t_eq(atomic_load(&g_hits[1]), 1, "quiescence: await returned after the delayed message was handled");
	t_ok(took >= 50 * URA_MSEC, "quiescence: await took %.2f ms >= 50 ms", took / 1e6);

	t0 = t_now_ns();
	t_must(ura_send(sys, d, A_GO, s, (int64_t)(50 * URA_MSEC), 2));
	t_rc(await_guarded(sys), 0, "quiescence: await (armed from a handler)");
	took = t_now_ns() - t0;
	t_eq(atomic_load(&g_hits[2]), 1,
	     "quiescence: await returned after the handler's delayed message was handled");
	t_ok(took >= 50 * URA_MSEC, "quiescence: await took %.2f ms >= 50 ms", took / 1e6);

	/* await_for gives up while a delayed send is still pending. */
	h = ura_send_after(sys, s, 300 * URA_MSEC, A_HIT, 3);
	t_rc(ura_system_await_for(sys, 20 * URA_MSEC), -ETIMEDOUT,
	     "quiescence: await_for(20 ms) with a 300 ms timer pending: -ETIMEDOUT");
	t_rc(await_guarded(sys), 0, "quiescence: then await");
	t_eq(atomic_load(&g_hits[3]), 1, "quiescence: the 300 ms message was handled");
	t_eq(atomic_load(&g_errors), 0, "quiescence: handler arm returned a handle");
	t_destroy(sys);

	/* Destroy with delayed sends still pending: they are accepted
	 * messages never handled, so -EBUSY, and freed (ASan: no leak). */
	sys = t_system(0);
	t_must(ura_spawn(sys, &sink_class, NULL, &s));
	t_must(ura_spawn(sys, &delayer_class, NULL, &d));
	h = ura_send_after(sys, s, 60 * URA_SEC, A_PING, "a copied string to free", 4);
	t_ok(h > 0, "pending at destroy: a 60 s delayed send from outside, with a string");
	t_must(ura_send(sys, d, A_GO, s, (int64_t)(60 * URA_SEC), 5));
	t_rc(ura_system_await_for(sys, 50 * URA_MSEC), -ETIMEDOUT, "pending at destroy: not quiescent");
	/* d arms the second in its handler, which a loaded machine may not
	 * have run within the 50 ms above. */
	t_wait_until(stats(sys).timers_pending >= 2, 10 * URA_SEC, usleep(100));
	ura_stats st = stats(sys);
	t_eq(st.timers_pending, 2, "pending at destroy: stats.timers_pending == 2");
	t_rc(ura_system_destroy(sys), -EBUSY, "pending at destroy: destroy returns -EBUSY");
}

int main(void)
{
	test_precision();
	test_external();
	test_cancel();
	test_race();
	test_bad_delay();
	test_dead_target();
	test_owned();
	test_quiescence();
	return t_done();
}
