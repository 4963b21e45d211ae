/* SPDX-License-Identifier: MIT */
/*
 * Two actors play ping-pong: the smallest complete ura program.
 *
 *   ./build/examples/pingpong [ROUNDS]
 */
#include <stdio.h>
#include <stdlib.h>

#include <ura.h>

#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_SERVE URA_ATOM("serve")

typedef struct { long rounds, left; } player;

static void hit(ura_ctx *cx, const ura_msg *m)
{
	player *p = ura_state(cx);
	long n = (long)ura_arg_i64(m, 0);
	if (n % (p->rounds / 4 ? p->rounds / 4 : 1) == 0)
		printf("%s %ld\n", ura_msg_tag(m) == A_PING ? "ping" : "pong", n);
	if (n == p->rounds) {
		printf("done after %ld rounds\n", n);
		return;
	}
	ura_reply(cx, ura_msg_tag(m) == A_PING ? A_PONG : A_PING, n + 1);
}

static void serve(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_PING, 1);
}

URA_BEHAVIOR(playing,
	URA_ON(A_PING, "i", hit),
	URA_ON(A_PONG, "i", hit),
	URA_ON(A_SERVE, "r", serve));

static const ura_class player_class = {
	.name = "player",
	.state_size = sizeof(player),
	.initial = &playing,
};

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 1000000;
	if (rounds < 1) {
		fprintf(stderr, "usage: %s [ROUNDS >= 1]\n", argv[0]);
		return 2;
	}
	ura_system *sys;
	int rc = ura_system_new(&sys, NULL);
	if (rc < 0) {
		fprintf(stderr, "ura: %s\n", ura_strerror(rc));
		return 1;
	}
	ura_ref a, b;
	player init = { rounds, rounds };
	if ((rc = ura_spawn(sys, &player_class, &init, &a)) < 0 ||
	    (rc = ura_spawn(sys, &player_class, &init, &b)) < 0 ||
	    (rc = ura_send(sys, a, A_SERVE, b)) < 0) {
		fprintf(stderr, "ura: %s\n", ura_strerror(rc));
		ura_system_destroy(sys);
		return 1;
	}
	ura_system_await(sys); /* until nothing is left to do */
	ura_stats st;
	ura_system_stats(sys, &st);
	printf("%llu messages on %u workers (%s)\n", (unsigned long long)st.received,
	       st.workers, st.backend);
	return ura_system_destroy(sys) < 0;
}
