/* SPDX-License-Identifier: MIT */
/*
 * det: the deterministic build (meson -Ddeterministic=true; lib/README.md).
 * One seed run twice gives the same trace hash and the same outcome, other
 * seeds give other interleavings; time is virtual (an hour's timers fire at
 * once, in deadline order). Then stop versus send, over many seeds: a
 * victim is stopped (ura_kill, an exit reason of its own, or ura_stop in
 * its handler) at a seeded point while senders send to it and make
 * requests of it. Every accepted message is handled or is a dead letter,
 * exactly once; every accepted request ends exactly once, with the reply
 * when its handler ran and with an error when it did not. A failing seed
 * is printed; URA_SEED=N runs that one alone, and it fails again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define A_GO URA_ATOM("go")
#define A_PING URA_ATOM("ping")
#define A_ASK URA_ATOM("ask")
#define A_ANS URA_ATOM("ans")
#define A_QUIT URA_ATOM("quit")
#define A_TICK URA_ATOM("tick")
#define A_BYE URA_ATOM("bye")

/* ---- the trace hash, from destroy's log line ------------------------ */

static uint64_t g_hash;
static int g_hash_seen;

static void sink(void *ud, int level, const char *msg)
{
	(void)ud;
	unsigned long long seed, turns, h;
	if (sscanf(msg, "deterministic: seed %llu: %llu turns, trace %llx", &seed, &turns,
		   &h) == 3) {
		g_hash = h;
		g_hash_seen = 1;
	} else if (level <= URA_LOG_WARN) {
		fprintf(stderr, "ura: %s\n", msg);
	}
}

static ura_system *det_system(uint64_t seed, unsigned workers)
{
	ura_system *sys;
	ura_config cfg = { .workers = workers, .paused = 1, .log = sink };
	cfg.reserved_[0] = seed; /* the deterministic build's seed */
	t_must(ura_system_new(&sys, &cfg));
	return sys;
}

/* ---- stop versus send ------------------------------------------------ */

#define NSEND 3
#define NOPS 12 /* per sender: pings and requests, alternately */

struct req {
	int accepted, ended, replies, errors;
};

static struct {
	ura_ref victim;
	int mode;            /* how the victim stops */
	int stop_after;      /* stopper's rounds before it stops the victim */
	int ping_accepted, ask_accepted;
	int ping_handled[NSEND][NOPS];
	int ask_handled;
	struct req req[NSEND][NOPS];
	int stop_rc;
} g;

static void v_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t id = ura_arg_i64(m, 0);
	g.ping_handled[id / NOPS][id % NOPS]++;
}
static void v_ask(ura_ctx *cx, const ura_msg *m)
{
	g.ask_handled++;
	if (ura_reply(cx, A_ANS, ura_arg_i64(m, 0)) != 0)
		g.stop_rc = -1000; /* the requester is alive: must work */
}
static void v_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}
URA_BEHAVIOR(victim_beh,
	URA_ON(A_PING, "i", v_ping),
	URA_ON(A_ASK, "i", v_ask),
	URA_ON(A_QUIT, "", v_quit));
static const ura_class victim_class = { .name = "victim", .initial = &victim_beh };

static void on_ans(ura_ctx *cx, const ura_msg *m)
{
	struct req *r = ura_request_data(cx);
	r->ended++;
	if (ura_msg_tag(m) == URA_ERROR)
		r->errors++;
	else
		r->replies++;
}

/* A sender does its operations over several turns: two per round. */
static void s_go(ura_ctx *cx, const ura_msg *m)
{
	int j = (int)ura_arg_i64(m, 0), k = (int)ura_arg_i64(m, 1);
	for (int n = 0; n < 2 && k < NOPS; n++, k++) {
		int64_t id = j * NOPS + k;
		if (k % 2 == 0) {
			if (ura_send(cx, g.victim, A_PING, id) == 0)
				g.ping_accepted++;
		} else {
			struct req *r = &g.req[j][k];
			if (ura_request(cx, g.victim, on_ans, r, A_ASK, id) == 0) {
				r->accepted = 1;
				g.ask_accepted++;
			}
		}
	}
	if (k < NOPS)
		ura_send(cx, ura_self(cx), A_GO, (int64_t)j, (int64_t)k);
}
URA_BEHAVIOR(sender_beh, URA_ON(A_GO, "ii", s_go));
static const ura_class sender_class = { .name = "sender", .initial = &sender_beh };

static void k_tick(ura_ctx *cx, const ura_msg *m)
{
	int64_t r = ura_arg_i64(m, 0);
	if (r < g.stop_after) {
		ura_send(cx, ura_self(cx), A_TICK, r + 1);
		return;
	}
	if (g.mode == 0)
		g.stop_rc = ura_kill(cx, g.victim, URA_KILL);
	else if (g.mode == 1)
		g.stop_rc = ura_kill(cx, g.victim, A_BYE);
	else
		g.stop_rc = ura_send(cx, g.victim, A_QUIT);
}
URA_BEHAVIOR(stopper_beh, URA_ON(A_TICK, "i", k_tick));
static const ura_class stopper_class = { .name = "stopper", .initial = &stopper_beh };

struct outcome {
	uint64_t hash;
	int pings, asks, dead, replies, errors;
	int ok;              /* every property held */
	char why[160];
};

static void run_stop(uint64_t seed, struct outcome *o)
{
	memset(&g, 0, sizeof g);
	memset(o, 0, sizeof *o);
	g.mode = (int)(seed % 3);
	g.stop_after = (int)(seed / 3 % 8);
	g_hash_seen = 0;
	ura_system *sys = det_system(seed, 2 + (unsigned)(seed % 2));
	ura_ref s[NSEND], k;
	t_must(ura_spawn(sys, &victim_class, NULL, &g.victim));
	for (int j = 0; j < NSEND; j++)
		t_must(ura_spawn(sys, &sender_class, NULL, &s[j]));
	t_must(ura_spawn(sys, &stopper_class, NULL, &k));
	for (int j = 0; j < NSEND; j++)
		t_must(ura_send(sys, s[j], A_GO, (int64_t)j, (int64_t)0));
	t_must(ura_send(sys, k, A_TICK, (int64_t)0));
	int arc = await_guarded(sys);
	ura_stats st = stats(sys);
	int drc = ura_system_destroy(sys);

	o->hash = g_hash;
	o->asks = g.ask_handled;
	o->dead = (int)st.dead_letters;
	for (int j = 0; j < NSEND; j++)
		for (int n = 0; n < NOPS; n++) {
			o->pings += g.ping_handled[j][n];
			o->replies += g.req[j][n].replies;
			o->errors += g.req[j][n].errors;
		}
#define CHECK(cond, ...)                                                   \
	if (o->ok == 0 && !(cond)) {                                       \
		snprintf(o->why, sizeof o->why, __VA_ARGS__);              \
		o->ok = -1;                                                \
	}
	CHECK(arc == 0, "await: %d", arc);
	CHECK(drc == 0, "destroy: %d (accepted messages never handled)", drc);
	CHECK(g_hash_seen, "no trace hash logged");
	CHECK(g.stop_rc == 0, "the stop (mode %d) returned %d", g.mode, g.stop_rc);
	CHECK(st.stopped == 1 && st.unmatched == 0, "stopped %" PRIu64 ", unmatched %" PRIu64,
	      st.stopped, st.unmatched);
	/* Each accepted message to the victim: handled, or a dead letter
	 * (the stop's own signal is neither: it stopped the victim). */
	CHECK(o->pings + o->asks + o->dead == g.ping_accepted + g.ask_accepted,
	      "handled %d + %d, dead letters %d, accepted %d + %d", o->pings, o->asks, o->dead,
	      g.ping_accepted, g.ask_accepted);
	for (int j = 0; j < NSEND; j++)
		for (int n = 0; n < NOPS; n++) {
			struct req *r = &g.req[j][n];
			CHECK(g.ping_handled[j][n] <= 1, "ping %d/%d handled %d times", j, n,
			      g.ping_handled[j][n]);
			CHECK(r->ended == r->accepted, "request %d/%d: accepted %d, ended %d times",
			      j, n, r->accepted, r->ended);
		}
	/* A handled request got its reply; the others an error. */
	CHECK(o->replies == o->asks && o->errors == g.ask_accepted - o->asks,
	      "replies %d for %d handled, errors %d for %d not handled", o->replies, o->asks,
	      o->errors, g.ask_accepted - o->asks);
#undef CHECK
	if (o->ok == 0)
		o->ok = 1;
}

static void explore(long nseeds)
{
	long bad = 0, some_dead = 0, all_handled = 0, some_err = 0;
	uint64_t first_bad = 0;
	char why[160] = "";
	for (long i = 1; i <= nseeds; i++) {
		struct outcome o;
		run_stop((uint64_t)i, &o);
		if (o.ok < 0) {
			if (!bad++) {
				first_bad = (uint64_t)i;
				snprintf(why, sizeof why, "%s", o.why);
			}
			t_diag("seed %ld fails: %s (replay: URA_SEED=%ld test_det)", i, o.why, i);
		}
		some_dead += o.dead > 0;
		all_handled += o.dead == 0;
		some_err += o.errors > 0;
	}
	t_ok(bad == 0, "stop vs send, %ld seeds: every message handled or dead once, every "
	     "request ended once", nseeds);
	if (bad)
		t_diag("%ld seeds failed; the first, seed %" PRIu64 ": %s", bad, first_bad, why);
	/* The seeds must reach both sides of the race, or nothing was
	 * explored. */
	t_ok(some_dead > 0 && all_handled > 0 && some_err > 0,
	     "the seeds explore the race: %ld runs with dead letters, %ld without, %ld with "
	     "failed requests", some_dead, all_handled, some_err);
}

/* One seed, as a failure report names it: twice, and the second run must
 * repeat the first. */
static void replay_one(uint64_t seed)
{
	struct outcome a, b;
	run_stop(seed, &a);
	run_stop(seed, &b);
	t_diag("seed %" PRIu64 ": trace %016" PRIx64 ", pings %d, asks %d, dead %d, replies %d, "
	       "errors %d%s%s", seed, a.hash, a.pings, a.asks, a.dead, a.replies, a.errors,
	       a.ok < 0 ? ": " : "", a.ok < 0 ? a.why : "");
	t_ok(a.ok > 0, "seed %" PRIu64 ": properties hold%s%s", seed, a.ok < 0 ? ": " : "",
	     a.ok < 0 ? a.why : "");
	t_ok(a.hash == b.hash && a.pings == b.pings && a.asks == b.asks && a.dead == b.dead &&
	     a.ok == b.ok, "seed %" PRIu64 ": run again, the same trace and outcome", seed);
}

/* ---- replay and variety ---------------------------------------------- */

static void test_replay(void)
{
	struct outcome a, b;
	run_stop(42, &a);
	run_stop(42, &b);
	t_ok(a.hash && a.hash == b.hash, "seed 42 twice: equal trace hashes (%016" PRIx64
	     ", %016" PRIx64 ")", a.hash, b.hash);
	t_ok(a.pings == b.pings && a.asks == b.asks && a.dead == b.dead && a.errors == b.errors,
	     "seed 42 twice: the same outcome (%d/%d handled, %d dead)", a.pings, a.asks, a.dead);
	/* Same mode and stop point (seed % 3, seed / 3 % 8 equal: seeds 24
	 * apart), same workers (parity): only the interleaving differs. */
	uint64_t h[8];
	int distinct = 0;
	for (int i = 0; i < 8; i++) {
		struct outcome o;
		run_stop(42 + 24 * (uint64_t)(i + 1), &o);
		h[i] = o.hash;
		int seen = o.hash == a.hash;
		for (int j = 0; j < i; j++)
			seen |= h[j] == o.hash;
		distinct += !seen;
	}
	t_ok(distinct >= 6, "8 other seeds, same program: %d new traces", distinct);
}

/* ---- virtual time ----------------------------------------------------- */

static int64_t g_fired[4];
static int g_nfired;

static void t_tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (g_nfired < 4)
		g_fired[g_nfired++] = ura_arg_i64(m, 0);
}
URA_BEHAVIOR(ticker_beh, URA_ON(A_TICK, "i", t_tick));
static const ura_class ticker_class = { .name = "ticker", .initial = &ticker_beh };

static void test_virtual_time(void)
{
	ura_system *sys = det_system(7, 2);
	ura_ref t;
	t_must(ura_spawn(sys, &ticker_class, NULL, &t));
	g_nfired = 0;
	/* An hour, a second, half an hour: by the wall clock the await's
	 * guard would give up long before the first. */
	t_ok(ura_send_after(sys, t, 3600 * URA_SEC, A_TICK, (int64_t)3) > 0, "arm 1 h");
	t_ok(ura_send_after(sys, t, URA_SEC, A_TICK, (int64_t)1) > 0, "arm 1 s");
	t_ok(ura_send_after(sys, t, 1800 * URA_SEC, A_TICK, (int64_t)2) > 0, "arm 30 min");
	t_rc(await_guarded(sys), 0, "virtual time: an hour of timers, awaited");
	t_eq(g_nfired, 3, "all three fired");
	t_ok(g_fired[0] == 1 && g_fired[1] == 2 && g_fired[2] == 3,
	     "in deadline order (%lld %lld %lld)", (long long)g_fired[0],
	     (long long)g_fired[1], (long long)g_fired[2]);
	t_destroy(sys);
}

int main(void)
{
	const char *e = getenv("URA_SEED");
	if (e && *e) {
		/* A failure's replay: that seed alone, verbosely. */
		replay_one(strtoull(e, NULL, 10));
		return t_done();
	}
	test_replay();
	test_virtual_time();
	explore(t_scaled(300));
	return t_done();
}
