/* SPDX-License-Identifier: MIT */
/*
 * slow_consumer P M [--bound=N] [--refuse] [--work-ns=W] [--rounds=R]
 * [--whole] [--quiet]: P producer actors each send M messages (CHUNK per
 * handler) to ONE consumer that spends about W ns on each (default 2000),
 * its mailbox bounded at N with URA_FULL_MUTE (0: unbounded; --refuse:
 * URA_FULL_REFUSE_MUTE, and a producer whose send is refused sends the
 * rest in its next handler). Next to it, on the same workers, a ping and
 * a pong actor do R round trips (default 20000) one at a time, whose
 * latencies give p50/p99/p99.9/max (to the ns, from a histogram);
 * --whole: the pingpong goes on until the last producer is done, so it
 * samples the whole flood, not just its first rounds. --quiet runs the
 * pingpong alone (the baseline for its p99). Verifies that the consumer
 * got P*M messages (nothing lost); rss_growth_kb is the highest RSS the
 * consumer saw (every 4096 messages, and at the end) minus the RSS before
 * the first send (the producers spawned, the latency histogram touched);
 * rss_flood_growth_kb the same minus its first sample, at 4096 messages,
 * by when every producer has run and holds its own queued go (what the
 * flood adds while it goes on, the producers' standing cost left out);
 * peak_depth is the most messages the bounded mailbox held, seen by the
 * consumer at each message it takes (0 unbounded).
 */
#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>

#include "bench.h"

#define A_X URA_ATOM("x")
#define A_GO URA_ATOM("go")
#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")

#define CHUNK 16
/* The latency histogram: a bucket a ns below HIST_NS, then one per power
 * of two (room for any run's rounds in fixed memory). */
#define HIST_NS 32768
#define HIST_LOG 48

/* Grouped by who writes them, a line each (in structs: separate statics
 * are laid out in any order). The consumer bumped `got` every message on
 * the line whose `nlat` the ping bumps every round, and each bump cost
 * the ping a miss on its next round: 1 round in 10-20 took 0.3-0.4 us
 * more, one consumer message apart (the pingpong's p99 beside the
 * producers, bench/README.md). */
static struct {
	int64_t M, P;
	uint64_t work_ns;
	ura_ref consumer;
	ura_system *sys;
	int whole;
} cfg = { .work_ns = 2000 };
static struct {
	alignas(64) _Atomic uint64_t got;
	int64_t peak_depth; /* the consumer's alone: plain */
	_Atomic long rss_peak_kb;
	long rss_first_kb; /* the consumer's alone: plain */
} cons;
/* The ping's alone (one actor: plain), read by main after the await. */
static struct {
	alignas(64) uint64_t n;
	uint64_t hist[HIST_NS + HIST_LOG];
} pp;
static struct {
	alignas(64) _Atomic int producers_left;
} done;

static void burn(uint64_t ns)
{
	uint64_t end = ura_now_ns() + ns;
	while (ura_now_ns() < end)
		;
}

static void note_rss(void)
{
	long r = b_rss_kb(), p = atomic_load(&cons.rss_peak_kb);
	while (r > p && !atomic_compare_exchange_weak(&cons.rss_peak_kb, &p, r))
		;
}

static void on_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	/* The bound's count: what is queued, and what this turn took so far
	 * (given back when the turn ends), this one included. */
	int64_t d = ura_mailbox_depth(cfg.sys, cfg.consumer);
	if (d > cons.peak_depth)
		cons.peak_depth = d;
	burn(cfg.work_ns);
	uint64_t n = atomic_fetch_add_explicit(&cons.got, 1, memory_order_relaxed) + 1;
	if (n % 4096 == 0) {
		if (!cons.rss_first_kb)
			cons.rss_first_kb = b_rss_kb();
		note_rss();
	}
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	int64_t *next = ura_state(cx);
	int64_t end = *next + CHUNK > cfg.M ? cfg.M : *next + CHUNK;
	int64_t i = *next;
	for (; i < end; i++) {
		int rc = ura_send(cx, cfg.consumer, A_X, i);
		if (rc == -EAGAIN)
			break; /* --refuse: muted now; this one goes again */
		B_CHECK(rc);
	}
	*next = i;
	if (i < cfg.M)
		B_CHECK(ura_send(cx, ura_self(cx), A_GO));
	else {
		atomic_fetch_sub(&done.producers_left, 1);
		ura_stop(cx);
	}
}

typedef struct { ura_ref pong; uint64_t t0; int64_t left; } ping_state;

static void lat_add(uint64_t ns)
{
	pp.n++;
	if (ns < HIST_NS)
		pp.hist[ns]++;
	else
		pp.hist[HIST_NS + 63 - __builtin_clzll(ns)]++;
}

/* The p-th per-mille latency in ns (a power-of-two bucket: its low end). */
static uint64_t lat_at(unsigned permille)
{
	uint64_t want = (pp.n * permille + 999) / 1000, seen = 0;
	if (!pp.n)
		return 0;
	for (uint64_t i = 0; i < HIST_NS + HIST_LOG; i++) {
		seen += pp.hist[i];
		if (seen >= want)
			return i < HIST_NS ? i : (uint64_t)1 << (i - HIST_NS);
	}
	return 0;
}

static void ping_go(ura_ctx *cx, const ura_msg *m)
{
	ping_state *s = ura_state(cx);
	s->pong = ura_arg_ref(m, 0);
	s->t0 = ura_now_ns();
	B_CHECK(ura_send(cx, s->pong, A_PING));
}

static void ping_pong(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ping_state *s = ura_state(cx);
	lat_add(ura_now_ns() - s->t0);
	/* --whole: relaxed, a flag; it is written 1000 times a run. */
	if (--s->left <= 0 &&
	    (!cfg.whole || !atomic_load_explicit(&done.producers_left, memory_order_relaxed))) {
		ura_stop(cx);
		return;
	}
	s->t0 = ura_now_ns();
	B_CHECK(ura_send(cx, s->pong, A_PING));
}

static void pong_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	B_CHECK(ura_reply(cx, A_PONG));
}

URA_BEHAVIOR(cons_beh, URA_ON(A_X, "i", on_x));
URA_BEHAVIOR(prod_beh, URA_ON(A_GO, "", on_go));
URA_BEHAVIOR(ping_beh, URA_ON(A_GO, "r", ping_go), URA_ON(A_PONG, "", ping_pong));
URA_BEHAVIOR(pong_beh, URA_ON(A_PING, "", pong_ping));
static const ura_class prod_class = { .name = "prod", .state_size = sizeof(int64_t),
				      .initial = &prod_beh };
static const ura_class ping_class = { .name = "ping", .state_size = sizeof(ping_state),
				      .initial = &ping_beh };
static const ura_class pong_class = { .name = "pong", .initial = &pong_beh };

int main(int argc, char **argv)
{
	cfg.P = b_pos(argc, argv, 1, 1000);
	cfg.M = b_pos(argc, argv, 2, 1000);
	long long bound = b_opt(argc, argv, "--bound=", 0);
	int quiet = b_flag(argc, argv, "--quiet");
	int refuse = b_flag(argc, argv, "--refuse");
	cfg.work_ns = (uint64_t)b_opt(argc, argv, "--work-ns=", (long long)cfg.work_ns);
	/* Touched now: its pages, filled by the pingpong during the run,
	 * would count in the growth. */
	memset(pp.hist, 0, sizeof pp.hist);
	cfg.whole = b_flag(argc, argv, "--whole");
	ura_system *sys = b_system();
	cfg.sys = sys;
	ura_mailbox_opts mb = { .capacity = (uint32_t)bound,
				.full = refuse ? URA_FULL_REFUSE_MUTE : URA_FULL_MUTE };
	ura_class cons_class = { .name = "consumer", .initial = &cons_beh,
				 .mailbox = bound > 0 ? &mb : NULL };
	B_CHECK(ura_spawn(sys, &cons_class, NULL, &cfg.consumer));
	/* The pingpong: a count of rounds (at least, with --whole). */
	int64_t rounds = b_opt(argc, argv, "--rounds=", 20000);
	ura_ref ping, pong;
	B_CHECK(ura_spawn(sys, &pong_class, NULL, &pong));
	B_CHECK(ura_spawn(sys, &ping_class, &(ping_state){ .left = rounds }, &ping));
	/* The producers exist before the baseline: the growth is what the
	 * flood queues, not their slots. */
	ura_ref *prods = calloc((size_t)cfg.P, sizeof *prods);
	if (!prods)
		b_fail("out of memory");
	for (int64_t p = 0; !quiet && p < cfg.P; p++)
		B_CHECK(ura_spawn(sys, &prod_class, &(int64_t){ 0 }, &prods[p]));
	long rss0 = b_rss_kb();
	atomic_store(&cons.rss_peak_kb, rss0);
	atomic_store(&done.producers_left, quiet ? 0 : (int)cfg.P);
	double t0 = b_now();
	B_CHECK(ura_send(sys, ping, A_GO, pong));
	for (int64_t p = 0; !quiet && p < cfg.P; p++)
		B_CHECK(ura_send(sys, prods[p], A_GO));
	free(prods);
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	note_rss();
	ura_stats st = { 0 };
	ura_system_stats(sys, &st);
	B_CHECK(ura_system_destroy(sys));
	uint64_t want = quiet ? 0 : (uint64_t)(cfg.P * cfg.M);
	if (atomic_load(&cons.got) != want)
		b_fail("the consumer did not get every message");
	printf("bench=slow_consumer system=ura producers=%lld m=%lld bound=%lld refuse=%d "
	       "work_ns=%llu quiet=%d msgs=%llu lost=0 rounds=%llu p50_us=%.3f p99_us=%.3f "
	       "p999_us=%.3f max_us=%.3f "
	       "peak_depth=%lld rss_growth_kb=%ld rss_flood_growth_kb=%ld peak_rss_kb=%ld mutes=%llu "
	       "over=%llu wall_s=%.3f\n",
	       (long long)cfg.P, (long long)cfg.M, bound, refuse, (unsigned long long)cfg.work_ns, quiet,
	       (unsigned long long)want, (unsigned long long)pp.n, lat_at(500) / 1e3, lat_at(990) / 1e3,
	       lat_at(999) / 1e3, lat_at(1000) / 1e3,
	       (long long)cons.peak_depth, atomic_load(&cons.rss_peak_kb) - rss0,
	       cons.rss_first_kb ? atomic_load(&cons.rss_peak_kb) - cons.rss_first_kb : 0,
	       b_peak_rss_kb(),
	       (unsigned long long)st.mb_mutes, (unsigned long long)st.mb_over, dt);
	return 0;
}
