/* SPDX-License-Identifier: MIT */
/*
 * big W N (Savina Big, defaults W=120 actors, N=20000 pings each): every
 * actor sends N pings, one at a time, each to a neighbour picked by
 * Savina's PseudoRandom(id) (possibly itself), and waits for the pong,
 * checking it came from that neighbour; after its N-th pong it tells the
 * sink, and when all W have, the sink stops everyone. Verifies W exits,
 * W*N pings answered and no pong from the wrong actor. Rate: messages per
 * second (2*W*N pings and pongs).
 */
#include "bench.h"

#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_EXIT URA_ATOM("exit")

typedef struct {
	int64_t id, pings, expected, w, n;
	int64_t rng, pongs, wrong;
	ura_ref sink;
} big_state;
typedef struct { int64_t exits, w; } sink_state;

static ura_ref *actors; /* written before the first message */
static int64_t *pongs_of, *wrong_of; /* per actor, written at exit */
static int64_t sink_exits;

static int64_t next_rand(big_state *s, int64_t max)
{
	s->rng = ((s->rng * 1309) + 13849) & 65535;
	return (int64_t)(int32_t)s->rng % max;
}

static void send_ping(ura_ctx *cx, big_state *s)
{
	int64_t target = next_rand(s, s->w);
	s->expected = target;
	B_CHECK(ura_send(cx, actors[target], A_PING, s->id));
}

static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	big_state *s = ura_state(cx);
	B_CHECK(ura_send(cx, actors[ura_arg_i64(m, 0)], A_PONG, s->id));
}

static void on_pong(ura_ctx *cx, const ura_msg *m)
{
	big_state *s = ura_state(cx);
	int64_t from = ura_arg_i64(m, 0);
	if (from >= 0) {
		s->pongs++;
		if (from != s->expected)
			s->wrong++;
	}
	if (s->pings == s->n) {
		B_CHECK(ura_send(cx, s->sink, A_EXIT));
	} else {
		send_ping(cx, s);
		s->pings++;
	}
}

static void on_exit_msg(ura_ctx *cx, const ura_msg *m)
{
	big_state *s = ura_state(cx);
	(void)m;
	pongs_of[s->id] = s->pongs;
	wrong_of[s->id] = s->wrong;
	ura_stop(cx);
}

static void on_sink_exit(ura_ctx *cx, const ura_msg *m)
{
	sink_state *s = ura_state(cx);
	(void)m;
	if (++s->exits == s->w) {
		for (int64_t i = 0; i < s->w; i++)
			B_CHECK(ura_send(cx, actors[i], A_EXIT));
		sink_exits = s->exits;
		ura_stop(cx);
	}
}

URA_BEHAVIOR(big_beh,
	URA_ON(A_PING, "i", on_ping),
	URA_ON(A_PONG, "i", on_pong),
	URA_ON(A_EXIT, "", on_exit_msg));
URA_BEHAVIOR(sink_beh, URA_ON(A_EXIT, "", on_sink_exit));
static const ura_class big_class = { .name = "big", .state_size = sizeof(big_state), .initial = &big_beh };
static const ura_class sink_class = { .name = "sink", .state_size = sizeof(sink_state), .initial = &sink_beh };

int main(int argc, char **argv)
{
	int64_t W = b_pos(argc, argv, 1, 120);
	int64_t N = b_pos(argc, argv, 2, 20000);
	actors = calloc((size_t)W, sizeof *actors);
	pongs_of = calloc((size_t)W, sizeof *pongs_of);
	wrong_of = calloc((size_t)W, sizeof *wrong_of);
	if (!actors || !pongs_of || !wrong_of)
		b_fail("out of memory");
	ura_system *sys = b_system();
	double t0 = b_now();
	ura_ref sink;
	B_CHECK(ura_spawn(sys, &sink_class, &(sink_state){ .w = W }, &sink));
	for (int64_t i = 0; i < W; i++)
		B_CHECK(ura_spawn(sys, &big_class,
				  &(big_state){ .id = i, .w = W, .n = N, .rng = i, .expected = -1, .sink = sink },
				  &actors[i]));
	for (int64_t i = 0; i < W; i++)
		B_CHECK(ura_send(sys, actors[i], A_PONG, (int64_t)-1));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	b_stats(&st);
	int rc = ura_system_destroy(sys);
	int64_t pongs = 0, wrong = 0;
	for (int64_t i = 0; i < W; i++) {
		pongs += pongs_of[i];
		wrong += wrong_of[i];
	}
	if (sink_exits != W || pongs != W * N || wrong || rc < 0) {
		fprintf(stderr, "exits=%lld pongs=%lld want %lld, wrong senders=%lld destroy=%d\n",
			(long long)sink_exits, (long long)pongs, (long long)(W * N),
			(long long)wrong, rc);
		b_fail("big");
	}
	printf("bench=big system=ura workers=%u actors=%lld n=%lld msgs=%lld wall_s=%.6f rate=%.0f\n",
	       st.workers, (long long)W, (long long)N, (long long)(2 * W * N), dt,
	       (double)(2 * W * N) / dt);
	free(actors);
	free(pongs_of);
	free(wrong_of);
	return 0;
}
