/* SPDX-License-Identifier: MIT */
/*
 * mixed_case R T I (libcppa "Mixed Scenario"): R rings of 50 actors (49
 * chain links + a master). The master injects a token T; links forward it
 * and stop after forwarding 0; the master decrements it each lap and ends
 * the iteration on 0. The master runs I iterations, respawning its ring
 * each time, and at the start of each sends calc(X) to its own worker, which
 * factorizes X = 28350160440309881 = 86028157 x 329545133 with the seed's
 * naive trial division and sends the factors to ONE collector. The
 * collector waits for R*I results and R master_done messages and checks
 * every factorization and the lap count R*I*(T+1).
 *
 * The factorization (~0.3 s of CPU per number) runs inside the worker
 * actor's handler, so it holds a ura worker thread for that long, as it
 * holds a CAF worker thread (CAF starts 4 by default) and an Erlang
 * scheduler; Go's goroutines are preempted. Rate is token messages per
 * second (R*I*(T+1)*50 of them); the run time is dominated by the
 * R*I factorizations.
 *
 * --body: the chain links are context-switching actors (issue 18), each a
 * body looping on a blocking receive of the same case, as the seed's
 * stacked-actor variant of this benchmark; masters, workers and the
 * collector stay event-based.
 */
#include "bench.h"

#define RING_SIZE 50
#define FACTOR1 UINT64_C(86028157)
#define FACTOR2 UINT64_C(329545133)
#define TASK_N (FACTOR1 * FACTOR2) /* 28350160440309881 */

#define A_TOKEN URA_ATOM("token")
#define A_CALC URA_ATOM("calc")
#define A_RESULT URA_ATOM("result")
#define A_DONE URA_ATOM("done")
#define A_MDONE URA_ATOM("mdone")
#define A_START URA_ATOM("start")

/* The seed's loop, as in the peers (no sqrt cut-off, on purpose). Returns
 * the number of factors; the first two go to f[0], f[1]. */
static unsigned factorize(uint64_t n, uint64_t f[2])
{
	unsigned k = 0;
	f[0] = f[1] = 0;
	if (n <= 3) {
		f[k++] = n;
		return k;
	}
	uint64_t d = 2;
	while (d < n) {
		if (n % d == 0) {
			if (k < 2)
				f[k] = d;
			k++;
			n /= d;
		} else {
			d = d == 2 ? 3 : d + 2;
		}
	}
	if (k < 2)
		f[k] = d;
	return k + 1;
}

typedef struct { ura_ref next; } link_state;
typedef struct { ura_ref collector; } worker_state;
typedef struct {
	ura_ref collector, worker, next;
	int64_t token, iterations, iteration, laps;
} master_state;
typedef struct { int64_t results, bad, masters, laps, want_results, want_masters; } coll_state;

static coll_state report;

static void on_link_token(ura_ctx *cx, const ura_msg *m)
{
	link_state *s = ura_state(cx);
	int64_t v = ura_arg_i64(m, 0);
	B_CHECK(ura_send(cx, s->next, A_TOKEN, v));
	if (v == 0)
		ura_stop(cx);
}

static void on_calc(ura_ctx *cx, const ura_msg *m)
{
	worker_state *s = ura_state(cx);
	uint64_t f[2];
	unsigned k = factorize((uint64_t)ura_arg_i64(m, 0), f);
	B_CHECK(ura_send(cx, s->collector, A_RESULT, k, (int64_t)f[0], (int64_t)f[1]));
}

static void on_worker_done(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(link_beh, URA_ON(A_TOKEN, "i", on_link_token));
URA_BEHAVIOR(worker_beh,
	URA_ON(A_CALC, "i", on_calc),
	URA_ON(A_DONE, "", on_worker_done));
static const ura_class link_class = { .name = "chain_link", .state_size = sizeof(link_state), .initial = &link_beh };

/* --body: a link's loop. on_link_token stops it after forwarding 0; the
 * receive after that never returns (ura_receive's contract). */
static void link_body(ura_ctx *cx, void *st)
{
	(void)st;
	for (;;)
		if (ura_receive(cx, &link_beh, URA_FOREVER) < 0) {
			fprintf(stderr, "receive failed\n");
			exit(1);
		}
}
static const ura_class link_body_class = { .name = "chain_link_body",
					    .state_size = sizeof(link_state), .body = link_body };
static const ura_class *link_cls = &link_class;
static const ura_class worker_class = { .name = "worker", .state_size = sizeof(worker_state), .initial = &worker_beh };

static void new_ring(ura_ctx *cx, master_state *s)
{
	B_CHECK(ura_send(cx, s->worker, A_CALC, (int64_t)TASK_N));
	ura_ref next = ura_self(cx);
	for (int i = 1; i < RING_SIZE; i++) {
		ura_ref l;
		B_CHECK(ura_spawn(cx, link_cls, &(link_state){ next }, &l));
		next = l;
	}
	s->next = next;
	B_CHECK(ura_send(cx, next, A_TOKEN, s->token));
}

static void on_master_start(ura_ctx *cx, const ura_msg *m)
{
	master_state *s = ura_state(cx);
	(void)m;
	B_CHECK(ura_spawn(cx, &worker_class, &(worker_state){ s->collector }, &s->worker));
	s->iteration = 1;
	new_ring(cx, s);
}

static void on_master_token(ura_ctx *cx, const ura_msg *m)
{
	master_state *s = ura_state(cx);
	int64_t v = ura_arg_i64(m, 0);
	s->laps++;
	if (v != 0) {
		B_CHECK(ura_send(cx, s->next, A_TOKEN, v - 1));
	} else if (s->iteration < s->iterations) {
		s->iteration++;
		new_ring(cx, s);
	} else {
		B_CHECK(ura_send(cx, s->worker, A_DONE));
		B_CHECK(ura_send(cx, s->collector, A_MDONE, s->laps));
		ura_stop(cx);
	}
}

URA_BEHAVIOR(master_beh,
	URA_ON(A_START, "", on_master_start),
	URA_ON(A_TOKEN, "i", on_master_token));
static const ura_class master_class = { .name = "chain_master", .state_size = sizeof(master_state), .initial = &master_beh };

static void maybe_done(ura_ctx *cx, coll_state *s)
{
	if (s->results == s->want_results && s->masters == s->want_masters) {
		report = *s;
		ura_stop(cx);
	}
}

static void on_coll_result(ura_ctx *cx, const ura_msg *m)
{
	coll_state *s = ura_state(cx);
	s->results++;
	if (ura_arg_i64(m, 0) != 2 || (uint64_t)ura_arg_i64(m, 1) != FACTOR1 ||
	    (uint64_t)ura_arg_i64(m, 2) != FACTOR2)
		s->bad++;
	maybe_done(cx, s);
}

static void on_coll_mdone(ura_ctx *cx, const ura_msg *m)
{
	coll_state *s = ura_state(cx);
	s->masters++;
	s->laps += ura_arg_i64(m, 0);
	maybe_done(cx, s);
}

URA_BEHAVIOR(coll_beh,
	URA_ON(A_RESULT, "iii", on_coll_result),
	URA_ON(A_MDONE, "i", on_coll_mdone));
static const ura_class coll_class = { .name = "collector", .state_size = sizeof(coll_state), .initial = &coll_beh };

int main(int argc, char **argv)
{
	int64_t R = b_pos(argc, argv, 1, 20);
	int64_t T = b_pos(argc, argv, 2, 1000);
	int64_t I = b_pos(argc, argv, 3, 5);
	int body = b_flag(argc, argv, "--body");
	if (body)
		link_cls = &link_body_class;
	ura_system *sys = b_system();
	double t0 = b_now();
	ura_ref coll;
	B_CHECK(ura_spawn(sys, &coll_class,
			  &(coll_state){ .want_results = R * I, .want_masters = R }, &coll));
	for (int64_t r = 0; r < R; r++) {
		ura_ref mr;
		B_CHECK(ura_spawn(sys, &master_class,
				  &(master_state){ .collector = coll, .token = T, .iterations = I },
				  &mr));
		B_CHECK(ura_send(sys, mr, A_START));
	}
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	unsigned workers = b_workers(sys);
	int rc = ura_system_destroy(sys);
	int64_t want_laps = R * I * (T + 1);
	if (report.results != R * I || report.bad != 0 || report.masters != R ||
	    report.laps != want_laps || rc < 0) {
		fprintf(stderr, "results=%lld bad=%lld masters=%lld laps=%lld want_laps=%lld destroy=%d\n",
			(long long)report.results, (long long)report.bad,
			(long long)report.masters, (long long)report.laps,
			(long long)want_laps, rc);
		b_fail("mixed_case");
	}
	int64_t token_msgs = want_laps * RING_SIZE;
	printf("bench=mixed_case system=ura workers=%u links=%s rings=%lld token=%lld iterations=%lld "
	       "factorizations=%lld token_msgs=%lld actors_spawned=%lld wall_s=%.6f rate=%.0f\n",
	       workers, body ? "body" : "event", (long long)R, (long long)T, (long long)I,
	       (long long)report.results,
	       (long long)token_msgs, (long long)(R * (1 + 1 + I * (RING_SIZE - 1)) + 1),
	       dt, (double)token_msgs / dt);
	return 0;
}
