/* SPDX-License-Identifier: MIT */
/*
 * contention --pingers P --count N: the Swift actor contention bug
 * (swiftlang/swift#68299). One pingable actor holds a counter; P pingers
 * each make N/P request/response calls (the first N%P one more), awaiting
 * each reply before the next. Reports calls/s and per-call latency
 * (p50/p99/max). Verifies the counter equals N.
 * Also accepts the peers' positional form: contention P N.
 */
#include <math.h>
#include <stdalign.h>

#include "bench.h"

#define A_INC URA_ATOM("inc")
#define A_GO URA_ATOM("go")
#define A_VAL URA_ATOM("val")

/* Latency histogram: 8 sub-buckets per power of two of nanoseconds. */
#define HB 512
/* One per worker, written only by that worker's thread (a pinger records
 * into the histogram of the worker running it): a per-pinger histogram
 * (4 KiB each) made the bench itself miss the cache at P=4096. */
typedef struct { alignas(64) uint64_t n[HB]; uint64_t max; } hist;

static inline unsigned h_bucket(uint64_t ns)
{
	if (ns < 8)
		return (unsigned)ns;
	unsigned e = 63u - (unsigned)__builtin_clzll(ns);
	unsigned b = (e - 2) * 8 + (unsigned)((ns >> (e - 3)) & 7);
	return b < HB ? b : HB - 1;
}
static inline double h_value(unsigned b)
{
	if (b < 8)
		return b;
	unsigned e = b / 8 + 2, s = b % 8;
	return ldexp(1.0 + (s + 0.5) / 8.0, (int)e);
}

typedef struct {
	int64_t left;
	uint64_t t0;
	ura_ref target;
	hist *h; /* the workers' histograms */
} pinger;

typedef struct { int64_t counter; int64_t *out; } pingable;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void call(ura_ctx *cx, pinger *s);

static void on_reply(ura_ctx *cx, const ura_msg *m)
{
	pinger *s = ura_state(cx);
	(void)m;
	uint64_t d = now_ns() - s->t0;
	hist *h = &s->h[ura_worker_id(cx)];
	h->n[h_bucket(d)]++;
	if (d > h->max)
		h->max = d;
	if (--s->left > 0)
		call(cx, s);
	else
		ura_stop(cx);
}

static void call(ura_ctx *cx, pinger *s)
{
	s->t0 = now_ns();
	int rc = ura_request(cx, s->target, on_reply, NULL, A_INC);
	if (rc < 0) {
		fprintf(stderr, "request: %s\n", ura_strerror(rc));
		exit(1);
	}
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	call(cx, ura_state(cx));
}

static void on_inc(ura_ctx *cx, const ura_msg *m)
{
	pingable *s = ura_state(cx);
	(void)m;
	*s->out = ++s->counter;
	ura_reply(cx, A_VAL, s->counter);
}

URA_BEHAVIOR(pinger_beh, URA_ON(A_GO, "", on_go));
URA_BEHAVIOR(pingable_beh, URA_ON(A_INC, "", on_inc));
static const ura_class pinger_class = { .name = "pinger", .state_size = sizeof(pinger), .initial = &pinger_beh };
static const ura_class pingable_class = { .name = "pingable", .state_size = sizeof(pingable), .initial = &pingable_beh };

int main(int argc, char **argv)
{
	long long P = 1, N = 1000000;
	int pos = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pingers") && i + 1 < argc)
			P = b_arg(argc, argv, ++i, 1);
		else if (!strcmp(argv[i], "--count") && i + 1 < argc)
			N = b_arg(argc, argv, ++i, 1000000);
		else if (pos == 0 && (++pos, 1))
			P = b_arg(argc, argv, i, 1);
		else
			N = b_arg(argc, argv, i, 1000000);
	}
	if (P > N)
		P = N;
	ura_system *sys = b_system();
	unsigned nw = b_workers(sys);
	hist *h = aligned_alloc(64, (size_t)nw * sizeof *h);
	ura_ref *pr = calloc((size_t)P, sizeof *pr);
	if (!h || !pr)
		b_fail("out of memory");
	/* Touch every page now, through volatile stores (GCC turns
	 * malloc+memset into calloc, which touches nothing): first-touch
	 * faults inside the timed run, 2 MiB at a time with THP, showed up
	 * as 10 ms latency spikes. */
	memset(h, 0, (size_t)nw * sizeof *h);
	for (size_t off = 0; off < (size_t)nw * sizeof *h; off += 4096)
		((volatile char *)h)[off] = 0;
	int64_t counter = 0;
	ura_ref target;
	B_CHECK(ura_spawn(sys, &pingable_class, &(pingable){ 0, &counter }, &target));
	for (long long i = 0; i < P; i++) {
		pinger init = { .left = N / P + (i < N % P), .target = target, .h = h };
		B_CHECK(ura_spawn(sys, &pinger_class, &init, &pr[i]));
	}
	double t0 = b_now();
	for (long long i = 0; i < P; i++)
		B_CHECK(ura_send(sys, pr[i], A_GO));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);

	static uint64_t all[HB];
	uint64_t calls = 0, max = 0;
	for (unsigned i = 0; i < nw; i++) {
		for (unsigned b = 0; b < HB; b++) {
			all[b] += h[i].n[b];
			calls += h[i].n[b];
		}
		if (h[i].max > max)
			max = h[i].max;
	}
	double p50 = 0, p99 = 0;
	uint64_t acc = 0;
	for (unsigned b = 0; b < HB; b++) {
		acc += all[b];
		if (!p50 && acc * 2 >= calls)
			p50 = h_value(b);
		if (!p99 && acc * 100 >= calls * 99) {
			p99 = h_value(b);
			break;
		}
	}
	if (counter != N || (long long)calls != N || rc < 0) {
		fprintf(stderr, "counter=%lld calls=%llu want %lld destroy=%d\n",
			(long long)counter, (unsigned long long)calls, N, rc);
		b_fail("contention");
	}
	printf("bench=contention system=ura workers=%u pingers=%lld count=%lld steals=%llu "
	       "sleeps=%llu p50_lat_us=%.1f p99_lat_us=%.1f max_lat_us=%.1f wall_s=%.6f rate=%.0f\n",
	       st.workers, P, N, (unsigned long long)st.steals, (unsigned long long)st.sleeps,
	       p50 / 1e3, p99 / 1e3, (double)max / 1e3, dt, (double)N / dt);
	free(h);
	free(pr);
	return 0;
}
