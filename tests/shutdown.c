/* SPDX-License-Identifier: MIT */
/*
 * Shutting down mid-flight, many times: a hub that 200 clients keep
 * requesting from, on 4 workers, shut down 10 to 50 ms in, while every
 * worker is busy and waking the others. A worker that left its loop used
 * to close its ring while a peer could still MSG_RING it (TSan: 2 of 10
 * runs; issue 13, item 9). Run under TSan in CI.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define A_ASK URA_ATOM("ask")
#define A_GO URA_ATOM("go")
#define A_ANS URA_ATOM("ans")

static atomic_long g_answers;

static void hub_ask(ura_ctx *cx, const ura_msg *m) { ura_reply(cx, A_ANS, ura_arg_i64(m, 0) + 1); }
URA_BEHAVIOR(hub_beh, URA_ON(A_ASK, "i", hub_ask));
static const ura_class hub_class = { .name = "hub", .initial = &hub_beh };

typedef struct { ura_ref hub; int64_t n; } client;

static void got(ura_ctx *cx, const ura_msg *m);
static void ask(ura_ctx *cx)
{
	client *c = ura_state(cx);
	ura_request(cx, c->hub, got, NULL, A_ASK, c->n);
}
static void got(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	c->n = ura_arg_i64(m, 0);
	atomic_fetch_add_explicit(&g_answers, 1, memory_order_relaxed);
	ask(cx);
}
static void client_go(ura_ctx *cx, const ura_msg *m) { (void)m; ask(cx); }
URA_BEHAVIOR(client_beh, URA_ON(A_GO, "", client_go));
static const ura_class client_class = { .name = "client", .state_size = sizeof(client),
					.initial = &client_beh };

int main(void)
{
	long rounds = t_scaled(40);
	if (rounds < 10)
		rounds = 10;
	unsigned seed = (unsigned)time(NULL);
	t_diag("%ld rounds, seed %u", rounds, seed);
	int bad = 0;
	long answered = 0;
	for (long r = 0; r < rounds; r++) {
		ura_system *sys;
		t_must(ura_system_new(&sys, &(ura_config){ .workers = 4 }));
		ura_ref hub;
		t_must(ura_spawn(sys, &hub_class, NULL, &hub));
		for (int i = 0; i < 200; i++) {
			ura_ref c;
			client st = { hub, 0 };
			t_must(ura_spawn(sys, &client_class, &st, &c));
			t_must(ura_send(sys, c, A_GO));
		}
		usleep(10000 + (useconds_t)(rand_r(&seed) % 40000));
		int s = ura_system_shutdown(sys);
		int d = ura_system_destroy(sys);
		/* Requests in flight at the shutdown are accepted messages
		 * never handled: -EBUSY is the truthful answer. */
		if (s != 0 || (d != 0 && d != -EBUSY)) {
			t_diag("round %ld: shutdown %d, destroy %d", r, s, d);
			bad = 1;
		}
	}
	answered = atomic_load(&g_answers);
	t_ok(!bad, "%ld shutdowns mid-flight: each returned 0 and destroy 0 or -EBUSY", rounds);
	t_ok(answered > 0, "the clients were busy when it happened (%ld answers)", answered);
	return t_done();
}
