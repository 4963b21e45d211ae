/* SPDX-License-Identifier: MIT */
/*
 * count N (Savina Counting Actor): a producer sends N increment messages to
 * a counting actor from one handler, then retrieve; the counter answers
 * with its count, which must be N. Rate: increments per second.
 */
#include "bench.h"

#define A_GO URA_ATOM("go")
#define A_INCR URA_ATOM("incr")
#define A_GET URA_ATOM("retrieve")
#define A_RESULT URA_ATOM("result")

typedef struct { ura_ref counter; int64_t n; } producer_state;
typedef struct { int64_t count; } counter_state;

static int64_t result = -1;

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	producer_state *s = ura_state(cx);
	(void)m;
	for (int64_t i = 0; i < s->n; i++)
		B_CHECK(ura_send(cx, s->counter, A_INCR));
	B_CHECK(ura_send(cx, s->counter, A_GET));
}

static void on_result(ura_ctx *cx, const ura_msg *m)
{
	result = ura_arg_i64(m, 0);
	ura_stop(cx);
}

static void on_incr(ura_ctx *cx, const ura_msg *m)
{
	counter_state *s = ura_state(cx);
	(void)m;
	s->count++;
}

static void on_get(ura_ctx *cx, const ura_msg *m)
{
	counter_state *s = ura_state(cx);
	(void)m;
	B_CHECK(ura_reply(cx, A_RESULT, s->count));
	ura_stop(cx);
}

URA_BEHAVIOR(producer_beh,
	URA_ON(A_GO, "", on_go),
	URA_ON(A_RESULT, "i", on_result));
URA_BEHAVIOR(counter_beh,
	URA_ON(A_INCR, "", on_incr),
	URA_ON(A_GET, "", on_get));
static const ura_class producer_class = { .name = "producer", .state_size = sizeof(producer_state), .initial = &producer_beh };
static const ura_class counter_class = { .name = "counter", .state_size = sizeof(counter_state), .initial = &counter_beh };

int main(int argc, char **argv)
{
	int64_t N = b_pos(argc, argv, 1, 1000000);
	ura_system *sys = b_system();
	double t0 = b_now();
	ura_ref counter, producer;
	B_CHECK(ura_spawn(sys, &counter_class, NULL, &counter));
	B_CHECK(ura_spawn(sys, &producer_class, &(producer_state){ counter, N }, &producer));
	B_CHECK(ura_send(sys, producer, A_GO));
	B_CHECK(ura_system_await(sys));
	ura_stats st;
	if (ura_system_stats(sys, &st) == 0)
		b_stats(&st);
	double dt = b_now() - t0;
	unsigned workers = b_workers(sys);
	int rc = ura_system_destroy(sys);
	if (result != N || rc < 0) {
		fprintf(stderr, "count=%lld want %lld destroy=%d\n", (long long)result, (long long)N, rc);
		b_fail("count");
	}
	printf("bench=count system=ura workers=%u n=%lld peak_rss_kb=%ld wall_s=%.6f rate=%.0f\n",
	       workers, (long long)N, b_peak_rss_kb(), dt, (double)N / dt);
	return 0;
}
