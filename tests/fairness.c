/* SPDX-License-Identifier: MIT */
/*
 * Fairness on one worker. A flooder handles each of its messages by
 * sending itself two more (up to a bound), so its mailbox is never empty;
 * meanwhile two other actors play a fixed number of ping-pong rounds. The
 * ping-pong must finish while the flood is still going (the flooder does
 * not starve it), the flooder must make progress during the ping-pong (the
 * ping-pong does not starve it), and no turn of the flooder handles more
 * than ura_config.batch messages.
 *
 * Late arrivals: a turn takes the messages present when it began, and,
 * when nothing else can run on its worker, those that arrived meanwhile
 * (still at most batch). An actor's first handler waits until the main
 * thread has sent it LATE more messages: all of them are handled in that
 * same turn, unless the handler woke another actor, which then runs
 * first.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_FLOOD URA_ATOM("flood")
#define A_START URA_ATOM("start")
#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")

#define ROUNDS 1000

/* All handlers run on the single worker; atomics only so that the main
 * thread's reads after await are race-free for TSan. */
enum { WHO_NONE, WHO_FLOOD, WHO_PP };
static _Atomic long g_flood_limit;     /* flood messages to issue */
static _Atomic long g_flood_issued;
static _Atomic long g_flood_handled;
static _Atomic int g_last;             /* who ran the previous handler */
static _Atomic long g_run, g_max_run;  /* consecutive flood messages */
static _Atomic int g_pp_active;
static _Atomic long g_pp_rounds;
static _Atomic long g_flood_at_start, g_flood_at_done;
static _Atomic int g_send_errors;

static void flood(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	long h = atomic_load_explicit(&g_flood_handled, memory_order_relaxed) + 1;
	atomic_store_explicit(&g_flood_handled, h, memory_order_relaxed);
	if (atomic_load_explicit(&g_pp_active, memory_order_relaxed)) {
		long run = atomic_load_explicit(&g_last, memory_order_relaxed) == WHO_FLOOD ?
			   atomic_load_explicit(&g_run, memory_order_relaxed) + 1 : 1;
		atomic_store_explicit(&g_run, run, memory_order_relaxed);
		if (run > atomic_load_explicit(&g_max_run, memory_order_relaxed))
			atomic_store_explicit(&g_max_run, run, memory_order_relaxed);
	}
	atomic_store_explicit(&g_last, WHO_FLOOD, memory_order_relaxed);
	long issued = atomic_load_explicit(&g_flood_issued, memory_order_relaxed);
	if (issued < atomic_load_explicit(&g_flood_limit, memory_order_relaxed)) {
		for (int i = 0; i < 2; i++)
			if (ura_send(cx, ura_self(cx), A_FLOOD) < 0)
				atomic_fetch_add(&g_send_errors, 1);
		atomic_store_explicit(&g_flood_issued, issued + 2, memory_order_relaxed);
	}
}
URA_BEHAVIOR(flood_beh, URA_ON(A_FLOOD, "", flood));
static const ura_class flood_class = { .name = "flooder", .initial = &flood_beh };

typedef struct { ura_ref peer; long rounds; } pinger_state;

static void pp_start(ura_ctx *cx, const ura_msg *m)
{
	pinger_state *s = ura_state(cx);
	s->peer = ura_arg_ref(m, 0);
	atomic_store_explicit(&g_flood_at_start,
			      atomic_load_explicit(&g_flood_handled, memory_order_relaxed),
			      memory_order_relaxed);
	atomic_store_explicit(&g_pp_active, 1, memory_order_relaxed);
	atomic_store_explicit(&g_last, WHO_PP, memory_order_relaxed);
	if (ura_send(cx, s->peer, A_PING) < 0)
		atomic_fetch_add(&g_send_errors, 1);
}

static void pp_pong(ura_ctx *cx, const ura_msg *m)
{
	pinger_state *s = ura_state(cx);
	(void)m;
	atomic_store_explicit(&g_last, WHO_PP, memory_order_relaxed);
	atomic_store_explicit(&g_pp_rounds, ++s->rounds, memory_order_relaxed);
	if (s->rounds < ROUNDS) {
		if (ura_send(cx, s->peer, A_PING) < 0)
			atomic_fetch_add(&g_send_errors, 1);
		return;
	}
	atomic_store_explicit(&g_pp_active, 0, memory_order_relaxed);
	atomic_store_explicit(&g_flood_at_done,
			      atomic_load_explicit(&g_flood_handled, memory_order_relaxed),
			      memory_order_relaxed);
}

static void pp_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store_explicit(&g_last, WHO_PP, memory_order_relaxed);
	if (ura_reply(cx, A_PONG) < 0)
		atomic_fetch_add(&g_send_errors, 1);
}

URA_BEHAVIOR(pinger_beh,
	URA_ON(A_START, "r", pp_start),
	URA_ON(A_PONG, "", pp_pong));
URA_BEHAVIOR(ponger_beh, URA_ON(A_PING, "", pp_ping));
static const ura_class pinger_class = {
	.name = "pinger", .state_size = sizeof(pinger_state), .initial = &pinger_beh,
};
static const ura_class ponger_class = { .name = "ponger", .initial = &ponger_beh };

#define A_FIRST URA_ATOM("first")
#define A_LATE URA_ATOM("late")
#define A_HI URA_ATOM("hi")
#define LATE 32

static _Atomic int g_in_first, g_sent_all;
static _Atomic long g_late_handled, g_hi;
static _Atomic uint64_t g_late_turn_start; /* st.turns seen in `first` */
static ura_system *g_sys;

static void late_first(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_in_first, 1);
	/* The main thread's sends land while this turn runs (30 s: a hang
	 * guard, not a timing). */
	t_wait_until(atomic_load(&g_sent_all), 30 * URA_SEC, sched_yield());
	ura_stats st;
	if (ura_system_stats(g_sys, &st) == 0)
		atomic_store(&g_late_turn_start, st.turns);
	if (!ura_ref_null(ura_arg_ref(m, 0)) && ura_send(cx, ura_arg_ref(m, 0), A_HI) < 0)
		atomic_fetch_add(&g_send_errors, 1);
}
static void late_one(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_late_handled, 1);
}
static void late_hi(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_hi, 1);
}
URA_BEHAVIOR(late_beh, URA_ON(A_FIRST, "r", late_first), URA_ON(A_LATE, "", late_one));
URA_BEHAVIOR(hi_beh, URA_ON(A_HI, "", late_hi));
static const ura_class late_class = { .name = "late", .initial = &late_beh };
static const ura_class hi_class = { .name = "hi", .initial = &hi_beh };

/* wake: the first handler sends to another actor, which then waits to
 * run: the turn ends at the first message, and the late ones take a turn
 * of their own after it (2 turns after the first). Else none. */
static void run_late(int wake)
{
	const char *what = wake ? "late arrivals, another actor woken" : "late arrivals";
	atomic_store(&g_in_first, 0);
	atomic_store(&g_sent_all, 0);
	atomic_store(&g_late_handled, 0);
	atomic_store(&g_hi, 0);
	atomic_store(&g_send_errors, 0);
	ura_system *sys = t_system(1);
	g_sys = sys;
	ura_ref r, q = { 0 };
	t_must(ura_spawn(sys, &late_class, NULL, &r));
	if (wake)
		t_must(ura_spawn(sys, &hi_class, NULL, &q));
	t_must(ura_send(sys, r, A_FIRST, q));
	t_wait_until(atomic_load(&g_in_first), 30 * URA_SEC, sched_yield());
	int errs = 0;
	for (int i = 0; i < LATE; i++)
		errs += ura_send(sys, r, A_LATE) < 0;
	atomic_store(&g_sent_all, 1);
	t_rc(await_guarded(sys), 0, "%s: await", what);
	t_eq(errs + atomic_load(&g_send_errors), 0, "%s: every send accepted", what);
	t_eq(atomic_load(&g_late_handled), LATE, "%s: all %d handled", what, LATE);
	t_eq(atomic_load(&g_hi), wake, "%s: the woken actor ran", what);
	uint64_t more = stats(sys).turns - atomic_load(&g_late_turn_start);
	/* The deterministic build (URA_SEED, scripts/det-seeds) picks each
	 * turn's batch at random: the count is the real scheduler's. */
	if (getenv("URA_SEED"))
		t_skip("the deterministic build picks each turn's batch");
	else
		t_eq(more, (uint64_t)(wake ? 2 : 0), "%s: turns after the first one's", what);
	t_destroy(sys);
}

static void run(unsigned batch)
{
	unsigned eff = batch ? batch : 64; /* ura.h: 0 means 64 */
	long limit = t_scaled(1000000);
	char what[32];
	snprintf(what, sizeof what, "batch %u", eff);
	atomic_store(&g_flood_limit, limit & ~1L);
	atomic_store(&g_flood_issued, 0);
	atomic_store(&g_flood_handled, 0);
	atomic_store(&g_last, WHO_NONE);
	atomic_store(&g_run, 0);
	atomic_store(&g_max_run, 0);
	atomic_store(&g_pp_active, 0);
	atomic_store(&g_pp_rounds, 0);
	atomic_store(&g_flood_at_start, -1);
	atomic_store(&g_flood_at_done, -1);
	atomic_store(&g_send_errors, 0);
	long total = 1 + (limit & ~1L);

	ura_system *sys;
	/* Paused: both first messages wait in the inject queue, so the
	 * flood cannot get ahead by the main thread being descheduled. */
	ura_config cfg = { .workers = 1, .batch = batch, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	ura_ref f, pi, po;
	t_must(ura_spawn(sys, &flood_class, NULL, &f));
	t_must(ura_spawn(sys, &pinger_class, NULL, &pi));
	t_must(ura_spawn(sys, &ponger_class, NULL, &po));
	t_must(ura_send(sys, f, A_FLOOD));
	t_must(ura_send(sys, pi, A_START, po));
	t_rc(await_guarded(sys), 0, "%s: await (starts the system)", what);

	long at_start = atomic_load(&g_flood_at_start), at_done = atomic_load(&g_flood_at_done);
	t_diag("%s: flood handled %ld at ping-pong start, %ld at its end, %ld in all; "
	       "longest flood run during ping-pong: %ld", what, at_start, at_done,
	       atomic_load(&g_flood_handled), atomic_load(&g_max_run));
	t_eq(atomic_load(&g_send_errors), 0, "%s: every send accepted", what);
	t_eq(atomic_load(&g_pp_rounds), ROUNDS, "%s: ping-pong played all its rounds", what);
	t_eq(atomic_load(&g_flood_handled), total, "%s: flooder handled all its messages", what);
	t_ok(at_done >= 0 && at_done < total,
	     "%s: ping-pong finished while the flood was still running", what);
	t_ok(at_start >= 0 && at_done > at_start,
	     "%s: the flooder made progress during the ping-pong", what);
	t_ok(atomic_load(&g_max_run) >= 1 && atomic_load(&g_max_run) <= (long)eff,
	     "%s: no flooder turn handled more than batch messages (longest run %ld)",
	     what, atomic_load(&g_max_run));
	ura_stats st;
	t_rc(ura_system_stats(sys, &st), 0, "%s: stats", what);
	t_eq(st.workers, 1, "%s: one worker", what);
	t_diag("%s: received %llu, turns %llu", what, (unsigned long long)st.received,
	       (unsigned long long)st.turns);
	t_ok(st.turns >= st.received / eff,
	     "%s: turns >= received / batch (%llu >= %llu)", what,
	     (unsigned long long)st.turns, (unsigned long long)(st.received / eff));
	t_eq(st.sent, st.received, "%s: stats: sent == received", what);
	t_destroy(sys);
}

int main(void)
{
	if (getenv("URA_BATCH") || getenv("URA_WORKERS")) {
		t_skip("URA_BATCH / URA_WORKERS set: they override the config under test");
		return t_done();
	}
	run(1);
	run(8);
	run(0);
	run_late(0);
	run_late(1);
	return t_done();
}
