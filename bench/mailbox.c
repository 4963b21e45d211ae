/* SPDX-License-Identifier: MIT */
/*
 * mailbox S M [--actors] (libcppa "Mailbox Part 2", N:1): S senders each
 * send the integers 1..M to ONE receiving actor, which counts them and sums
 * them. The senders are OS threads sending from outside the runtime (as in
 * the seed and in ../shared/peers' CAF version); with --actors they are S
 * actors, each sending its M messages from one handler. Verifies count ==
 * S*M and sum == S*M(M+1)/2.
 *
 * ura's mailboxes are unbounded: senders that outrun the receiver are never
 * blocked, the queue grows (peak_rss_kb shows by how much; sent_s is when
 * the last sender thread finished). Go's channel in the peer is bounded
 * (1024), its senders block instead.
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
	for (int64_t i = 1; i <= M; i++) {
		int rc = ura_send(cx, receiver, A_X, i);
		if (rc < 0) {
			fprintf(stderr, "send: %s\n", ura_strerror(rc));
			exit(1);
		}
	}
	ura_stop(cx);
}

URA_BEHAVIOR(recv_beh, URA_ON(A_X, "i", on_x));
URA_BEHAVIOR(sender_beh, URA_ON(A_GO, "", on_go));
static const ura_class recv_class = { .name = "receiver", .state_size = sizeof(recv_state), .initial = &recv_beh };
static const ura_class sender_class = { .name = "sender", .initial = &sender_beh };

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
	uint64_t total = (uint64_t)S * (uint64_t)M;
	pthread_t *th = calloc((size_t)S, sizeof *th);
	if (!th)
		b_fail("out of memory");
	sys = b_system();
	double t0 = b_now();
	B_CHECK(ura_spawn(sys, &recv_class, &(recv_state){ .total = total }, &receiver));
	if (actors) {
		for (int64_t s = 0; s < S; s++) {
			ura_ref r;
			B_CHECK(ura_spawn(sys, &sender_class, NULL, &r));
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
	int rc = ura_system_destroy(sys);
	uint64_t want_sum = (uint64_t)S * ((uint64_t)M * (uint64_t)(M + 1) / 2);
	if (got_count != total || got_sum != want_sum || rc < 0) {
		fprintf(stderr, "count=%llu sum=%llu want %llu/%llu destroy=%d\n",
			(unsigned long long)got_count, (unsigned long long)got_sum,
			(unsigned long long)total, (unsigned long long)want_sum, rc);
		b_fail("mailbox");
	}
	printf("bench=mailbox system=ura workers=%u senders=%lld m=%lld mode=%s msgs=%llu "
	       "peak_rss_kb=%ld sent_s=%.6f wall_s=%.6f rate=%.0f\n",
	       workers, (long long)S, (long long)M, actors ? "actors" : "threads",
	       (unsigned long long)total, b_peak_rss_kb(), actors ? 0.0 : t_sent, dt,
	       (double)total / dt);
	free(th);
	return 0;
}
