/* SPDX-License-Identifier: MIT */
/*
 * The ura side of bench/dist (run it through bench/dist/run): connects to
 * the Erlang node serving dist_bench:serve/0, then
 *  - ura -> Erlang: N one-way messages {seq, I} to {bench, Node}, at most
 *    50000 unacknowledged (the sink acks every 10000);
 *  - K round trips {ping, Self, I} -> {pong, I}, one at a time: p50, p99;
 *  - K / 10 DOWNs: a ura actor that the Erlang server monitors ({watch,
 *    Self, Victim} -> {watching, Victim}) is told to stop; the time from
 *    that order to the server's receipt of its 'DOWN' ({downat, T}, both
 *    clocks CLOCK_REALTIME on this one machine): p50, p99.
 * The same protocol as dist_bench:e2e/1, Erlang node to Erlang node.
 *   dist NODE N K   (the cookie from ~/.erlang.cookie, or $URA_COOKIE)
 *   dist --serve NAME   the server's side as a ura node NAME@host (what
 *                       dist_bench:serve/0 does), until it gets `stop` or
 *                       a signal: ura node to ura node, same protocol.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ura.h>

/* CLOCK_MONOTONIC for round trips; CLOCK_REALTIME for DOWNs, the clock
 * the Erlang side reads too (os:system_time). */
static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static uint64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }
static uint64_t real_ns(void) { return clock_ns(CLOCK_REALTIME); }

static ura_ref bench;
static long N, K;
static uint64_t t0, t1;
static uint64_t *lat, *downs;
static long D;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int finished;

/* The run is over: main may go on; the actor stops. */
static void finish(ura_ctx *cx)
{
	pthread_mutex_lock(&mu);
	finished = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	ura_stop(cx);
}

typedef struct {
	long sent, acked, pings, nd;
	uint64_t ping_t, die_t;
	ura_ref victim;
} client;

static void on_die(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}
URA_BEHAVIOR(victim_beh, URA_ON(URA_ATOM("die"), "", on_die));
static const ura_class victim_class = { .name = "victim", .initial = &victim_beh };

/* The next DOWN round: a fresh victim for the server to watch. */
static void watch(ura_ctx *cx)
{
	client *c = ura_state(cx);
	if (ura_spawn(cx, &victim_class, NULL, &c->victim) < 0) {
		fprintf(stderr, "FAIL: spawn\n");
		exit(1);
	}
	ura_send(cx, bench, URA_ATOM("watch"), ura_self(cx), c->victim);
}

static void pump(ura_ctx *cx)
{
	client *c = ura_state(cx);
	while (c->sent < N && c->sent - c->acked < 50000)
		ura_send(cx, bench, URA_ATOM("seq"), ++c->sent);
}

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	t0 = now_ns();
	ura_send(cx, bench, URA_ATOM("sink"), ura_self(cx), N);
	pump(cx);
}

static void on_ack(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	c->acked = ura_arg_i64(m, 0);
	pump(cx);
}

static void ping(ura_ctx *cx)
{
	client *c = ura_state(cx);
	c->ping_t = now_ns();
	ura_send(cx, bench, URA_ATOM("ping"), ura_self(cx), c->pings + 1);
}

static void on_done(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	t1 = now_ns();
	ping(cx);
}

static void on_pong(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	if (ura_arg_i64(m, 0) != c->pings + 1) {
		fprintf(stderr, "FAIL: pong %ld, want %ld\n", (long)ura_arg_i64(m, 0), c->pings + 1);
		exit(1);
	}
	lat[c->pings++] = now_ns() - c->ping_t;
	if (c->pings < K)
		ping(cx);
	else
		watch(cx);
}

/* The server monitors the victim now (its MONITOR_P came before this on
 * the connection): the order to stop. */
static void on_watching(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	client *c = ura_state(cx);
	c->die_t = real_ns();
	ura_send(cx, c->victim, URA_ATOM("die"));
}

static void on_downat(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	int64_t t = ura_arg_i64(m, 0);
	downs[c->nd++] = (uint64_t)t > c->die_t ? (uint64_t)t - c->die_t : 0;
	if (c->nd < D)
		watch(cx);
	else
		finish(cx);
}

URA_BEHAVIOR(client_beh,
	URA_ON(URA_ATOM("start"), "", on_start),
	URA_ON(URA_ATOM("ack"), "i", on_ack),
	URA_ON(URA_ATOM("done"), "i", on_done),
	URA_ON(URA_ATOM("pong"), "i", on_pong),
	URA_ON(URA_ATOM("watching"), "r", on_watching),
	URA_ON(URA_ATOM("downat"), "i", on_downat));
static const ura_class client_class = {
	.name = "client", .state_size = sizeof(client), .initial = &client_beh,
};

/* ---- the server, as dist_bench:serve/0 ---------------------------------- */

typedef struct {
	ura_ref from, watcher;
	long i, n;
	ura_mon mon;
} server;

static void on_sink(ura_ctx *cx, const ura_msg *m)
{
	server *s = ura_state(cx);
	s->from = ura_arg_ref(m, 0);
	s->n = ura_arg_i64(m, 1);
	s->i = 0;
}

static void on_seq(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	server *s = ura_state(cx);
	if (++s->i % 10000 == 0 && s->i < s->n)
		ura_send(cx, s->from, URA_ATOM("ack"), s->i);
	if (s->i == s->n)
		ura_send(cx, s->from, URA_ATOM("done"), s->n);
}

static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), URA_ATOM("pong"), ura_arg_i64(m, 1));
}

static void on_watch(ura_ctx *cx, const ura_msg *m)
{
	server *s = ura_state(cx);
	s->watcher = ura_arg_ref(m, 0);
	ura_ref victim = ura_arg_ref(m, 1);
	s->mon = ura_monitor(cx, victim);
	ura_send(cx, s->watcher, URA_ATOM("watching"), victim);
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	server *s = ura_state(cx);
	ura_send(cx, s->watcher, URA_ATOM("downat"), (int64_t)real_ns());
}

static void on_srv_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	finish(cx);
}

URA_BEHAVIOR(server_beh,
	URA_ON(URA_ATOM("sink"), "ri", on_sink),
	URA_ON(URA_ATOM("seq"), "i", on_seq),
	URA_ON(URA_ATOM("ping"), "ri", on_ping),
	URA_ON(URA_ATOM("watch"), "rr", on_watch),
	URA_ON_ANY(URA_DOWN, on_down),
	URA_ON(URA_ATOM("stop"), "", on_srv_stop));
static const ura_class server_class = {
	.name = "server", .state_size = sizeof(server), .initial = &server_beh,
};

static int serve(const char *name)
{
	ura_system *sys;
	ura_dist *d;
	if (ura_system_new(&sys, NULL) < 0)
		return 1;
	int rc = ura_dist_start(sys, &(ura_dist_opts){ .name = name, .cookie = getenv("URA_COOKIE") }, &d);
	if (rc < 0) {
		fprintf(stderr, "FAIL: ura_dist_start: %s\n", ura_strerror(rc));
		return 1;
	}
	ura_ref r;
	if (ura_spawn(sys, &server_class, NULL, &r) < 0 ||
	    ura_register(sys, URA_ATOM("bench"), r) < 0) {
		fprintf(stderr, "FAIL: the server actor\n");
		return 1;
	}
	pthread_mutex_lock(&mu);
	while (!finished)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	ura_dist_stop(d);
	ura_system_await_for(sys, 10 * URA_SEC);
	ura_system_destroy(sys);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--serve"))
		return serve(argv[2]);
	if (argc != 4) {
		fprintf(stderr, "usage: dist NODE N K | dist --serve NAME\n");
		return 2;
	}
	N = atol(argv[2]);
	K = atol(argv[3]);
	D = K / 10 > 0 ? K / 10 : 1;
	lat = calloc((size_t)K, sizeof *lat);
	downs = calloc((size_t)D, sizeof *downs);
	ura_system *sys;
	ura_dist *d;
	char name[32];
	snprintf(name, sizeof name, "urab%d", (int)getpid());
	if (ura_system_new(&sys, NULL) < 0)
		return 1;
	int rc = ura_dist_start(sys, &(ura_dist_opts){ .name = name, .cookie = getenv("URA_COOKIE") }, &d);
	if (rc < 0) {
		fprintf(stderr, "FAIL: ura_dist_start: %s\n", ura_strerror(rc));
		return 1;
	}
	if ((rc = ura_dist_connect(d, argv[1], 0)) < 0 ||
	    (rc = ura_dist_whereis(d, argv[1], "bench", &bench)) < 0) {
		fprintf(stderr, "FAIL: connect to %s: %s\n", argv[1], ura_strerror(rc));
		return 1;
	}
	ura_ref c;
	ura_spawn(sys, &client_class, NULL, &c);
	ura_send(sys, c, URA_ATOM("start"));
	pthread_mutex_lock(&mu);
	while (!finished)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	qsort(lat, (size_t)K, sizeof *lat, cmp);
	qsort(downs, (size_t)D, sizeof *downs, cmp);
	/* The Erlang side's ranks: lists:nth(max(1, K div 2)) and
	 * lists:nth(max(1, K * 99 div 100)), 1-based. */
#define RANK(n, num, den) ((n) * (num) / (den) > 0 ? (n) * (num) / (den) - 1 : 0)
	printf("bench=dist system=ura n=%ld rate=%.0f rtt_p50_us=%.1f rtt_p99_us=%.1f "
	       "down_p50_us=%.1f down_p99_us=%.1f\n", N,
	       (double)N * 1e9 / (double)(t1 - t0), lat[RANK(K, 1, 2)] / 1e3,
	       lat[RANK(K, 99, 100)] / 1e3, downs[RANK(D, 1, 2)] / 1e3,
	       downs[RANK(D, 99, 100)] / 1e3);
	ura_dist_stop(d);
	ura_system_await_for(sys, 10 * URA_SEC);
	ura_system_destroy(sys);
	free(lat);
	free(downs);
	return 0;
}
