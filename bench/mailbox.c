/* SPDX-License-Identifier: MIT */
/*
 * mailbox S M [--actors] [--bound=N] [--body] (libcppa "Mailbox Part 2", N:1): S senders each
 * send the integers 1..M to ONE receiving actor, which counts them and sums
 * them. The senders are OS threads sending from outside the runtime (as in
 * the seed and in ../shared/peers' CAF version); with --actors they are S
 * actors, each sending its M messages from one handler. Verifies count ==
 * S*M and sum == S*M(M+1)/2.
 *
 * By default ura's mailbox is unbounded: senders that outrun the receiver
 * are never blocked, the queue grows (peak_rss_kb shows by how much;
 * sent_s is when the last sender thread finished). Go's channel in the
 * peer is bounded (1024), its senders block instead. With --bound=N the
 * receiver's mailbox holds N (URA_FULL_MUTE): sender threads wait for
 * room as Go's do, and sender actors are muted; they then send in
 * handlers of CHUNK messages each (a mute takes effect when the handler
 * that sent returns, so one handler of M would overrun any bound).
 *
 * With --body the receiver is a context-switching actor (issue 18): its
 * body loops on a blocking ura_receive of the same case, as libcppa's
 * stacked receiver of the seed's benchmark does; everything else is the
 * same, so the two runs compare the receive loop with the turn loop.
 */
#include <pthread.h>

#include "bench.h"

#define A_X URA_ATOM("x")
#define A_GO URA_ATOM("go")

typedef struct { uint64_t count, sum, total; } recv_state;

static uint64_t got_count, got_sum;
static ura_system *sys;
static ura_ref receiver;
static int64_t M;
static int bounded;
#define CHUNK 256

static void on_x(ura_ctx *cx, const ura_msg *m)
{
	recv_state *s = ura_state(cx);
	s->count++;
	s->sum += (uint64_t)ura_arg_i64(m, 0);
	if (s->count == s->total) {
		got_count = s->count;
		got_sum = s->sum;
		ura_stop(cx);
	}
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	int64_t *next = ura_state(cx);
	int64_t end = bounded ? *next + CHUNK : M + 1;
	if (end > M + 1)
		end = M + 1;
	for (int64_t i = *next ? *next : 1; i < end; i++) {
		int rc = ura_send(cx, receiver, A_X, i);
		if (rc < 0) {
			fprintf(stderr, "send: %s\n", ura_strerror(rc));
			exit(1);
		}
	}
	*next = end;
	if (end <= M)
		B_CHECK(ura_send(cx, ura_self(cx), A_GO));
	else
		ura_stop(cx);
}

URA_BEHAVIOR(recv_beh, URA_ON(A_X, "i", on_x));

/* --body: the receiver's loop. on_x stops the actor on its last message;
 * the receive after that never returns (ura_receive's contract). */
static void recv_body(ura_ctx *cx, void *st)
{
	(void)st;
	for (;;)
		if (ura_receive(cx, &recv_beh, URA_FOREVER) < 0) {
			fprintf(stderr, "receive failed\n");
			exit(1);
		}
}
URA_BEHAVIOR(sender_beh, URA_ON(A_GO, "", on_go));
static const ura_class recv_class = { .name = "receiver", .state_size = sizeof(recv_state), .initial = &recv_beh };
static const ura_class recv_body_class = { .name = "receiver_body",
					    .state_size = sizeof(recv_state), .body = recv_body };
static const ura_class sender_class = { .name = "sender", .state_size = sizeof(int64_t),
					 .initial = &sender_beh };

static void *sender_thread(void *arg)
{
	(void)arg;
	for (int64_t i = 1; i <= M; i++) {
		int rc = ura_send(sys, receiver, A_X, i);
		if (rc < 0) {
			fprintf(stderr, "send: %s\n", ura_strerror(rc));
			exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int64_t S = b_pos(argc, argv, 1, 20);
	M = b_pos(argc, argv, 2, 1000000);
	int actors = b_flag(argc, argv, "--actors");
	int body = b_flag(argc, argv, "--body");
	long long bound = b_opt(argc, argv, "--bound=", 0);
	/* The low-water mark (0: the default, half the bound). */
	long long low = b_opt(argc, argv, "--low=", 0);
	bounded = bound > 0;
	ura_mailbox_opts mb = { .capacity = (uint32_t)bound, .full = URA_FULL_MUTE,
				.low_water = (uint32_t)low };
	ura_spawn_opts so = { .mailbox = bounded ? &mb : NULL };
	uint64_t total = (uint64_t)S * (uint64_t)M;
	pthread_t *th = calloc((size_t)S, sizeof *th);
	if (!th)
		b_fail("out of memory");
	sys = b_system();
	double t0 = b_now();
	B_CHECK(ura_spawn_ex(sys, body ? &recv_body_class : &recv_class,
			     &(recv_state){ .total = total }, &so, &receiver));
	if (actors) {
		for (int64_t s = 0; s < S; s++) {
			ura_ref r;
			B_CHECK(ura_spawn(sys, &sender_class, &(int64_t){ 1 }, &r));
			B_CHECK(ura_send(sys, r, A_GO));
		}
	} else {
		for (int64_t s = 0; s < S; s++)
			if (pthread_create(&th[s], NULL, sender_thread, NULL))
				b_fail("pthread_create");
		for (int64_t s = 0; s < S; s++)
			pthread_join(th[s], NULL);
	}
	double t_sent = b_now() - t0; /* threads: all sends returned */
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	unsigned workers = b_workers(sys);
	ura_stats st = { 0 };
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);
	uint64_t want_sum = (uint64_t)S * ((uint64_t)M * (uint64_t)(M + 1) / 2);
	if (got_count != total || got_sum != want_sum || rc < 0) {
		fprintf(stderr, "count=%llu sum=%llu want %llu/%llu destroy=%d\n",
			(unsigned long long)got_count, (unsigned long long)got_sum,
			(unsigned long long)total, (unsigned long long)want_sum, rc);
		b_fail("mailbox");
	}
	printf("bench=mailbox system=ura workers=%u senders=%lld m=%lld mode=%s receiver=%s bound=%lld msgs=%llu "
	       "peak_rss_kb=%ld sent_s=%.6f wall_s=%.6f rate=%.0f waits=%llu mutes=%llu turns=%llu sleeps=%llu\n",
	       workers, (long long)S, (long long)M, actors ? "actors" : "threads",
	       body ? "body" : "event", bound,
	       (unsigned long long)total, b_peak_rss_kb(), actors ? 0.0 : t_sent, dt,
	       (double)total / dt, (unsigned long long)st.mb_waits,
	       (unsigned long long)st.mb_mutes, (unsigned long long)st.turns,
	       (unsigned long long)st.sleeps);
	free(th);
	return 0;
}
