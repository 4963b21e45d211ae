/* SPDX-License-Identifier: MIT */
/*
 * pingpong N (Savina PingPong): ping sends one ping at a time to pong,
 * which answers each; N round trips, 2N messages. Same shape and check as
 * the pingpong of ../shared/peers.
 */
#include "bench.h"

#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_START URA_ATOM("start")

typedef struct { int64_t left, pongs; ura_ref pong; } ping_state;
typedef struct { int64_t pings; } pong_state;

static int64_t result_pings, result_pongs;

static void on_pong(ura_ctx *cx, const ura_msg *m)
{
	ping_state *s = ura_state(cx);
	(void)m;
	s->pongs++;
	if (--s->left > 0) {
		ura_send(cx, s->pong, A_PING, s->left);
	} else {
		result_pongs = s->pongs;
		ura_stop(cx);
	}
}

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	ping_state *s = ura_state(cx);
	s->pong = ura_arg_ref(m, 0);
	ura_send(cx, s->pong, A_PING, s->left);
}

static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	pong_state *s = ura_state(cx);
	s->pings++;
	result_pings = s->pings;
	ura_reply(cx, A_PONG, ura_arg_i64(m, 0));
}

URA_BEHAVIOR(ping_beh,
	URA_ON(A_PONG, "i", on_pong),
	URA_ON(A_START, "r", on_start));
URA_BEHAVIOR(pong_beh, URA_ON(A_PING, "i", on_ping));
/* Not const: URA_BENCH_METERED=1 turns the per-class metrics on (issue 17). */
static ura_class ping_class = { .name = "ping", .state_size = sizeof(ping_state), .initial = &ping_beh };
static ura_class pong_class = { .name = "pong", .state_size = sizeof(pong_state), .initial = &pong_beh };

int main(int argc, char **argv)
{
	int64_t n = b_arg(argc, argv, 1, 1000000);
	if (b_metered())
		b_meter(&ping_class), b_meter(&pong_class);
	ura_system *sys = b_system();
	ura_ref ping, pong;
	double t0 = b_now();
	B_CHECK(ura_spawn(sys, &pong_class, NULL, &pong));
	B_CHECK(ura_spawn(sys, &ping_class, &(ping_state){ .left = n }, &ping));
	B_CHECK(ura_send(sys, ping, A_START, pong));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);
	if (result_pings != n || result_pongs != n || rc < 0) {
		fprintf(stderr, "pings=%lld pongs=%lld want %lld, destroy=%d\n",
			(long long)result_pings, (long long)result_pongs, (long long)n, rc);
		b_fail("pingpong");
	}
	printf("bench=pingpong system=ura workers=%u n=%lld msgs=%lld steals=%llu sleeps=%llu wall_s=%.6f rate=%.0f\n",
	       st.workers, (long long)n, (long long)(2 * n), (unsigned long long)st.steals,
	       (unsigned long long)st.sleeps, dt, (double)(2 * n) / dt);
	return 0;
}
