/* SPDX-License-Identifier: MIT */
/*
 * guards [N] [RUNS]: what a guard costs per message. One actor on one
 * worker sends itself N messages n(even int64), handled by a case that is
 *   plain    URA_ON(A_N, "i", h)
 *   guarded  URA_ON(A_N, "i", h, URA_WHEN(x1 % 2 == 0))
 *   cpred    URA_ON(A_N, "i", h, .guard = <the same test in C>)
 * The variants run interleaved, RUNS rounds of one run each; the medians
 * are reported, and guard_ns is the median over the rounds of the guarded
 * time per message minus the plain one (the target is <= 10 ns). eval_ns
 * is ura_guard_match alone, in a loop.
 */
#include "bench.h"

#define A_N URA_ATOM("n")

typedef struct { int64_t left; } loop_state;

static int64_t handled;

static void on_n(ura_ctx *cx, const ura_msg *m)
{
	loop_state *s = ura_state(cx);
	handled++;
	if (--s->left > 0)
		ura_send(cx, ura_self(cx), A_N, ura_arg_i64(m, 0) + 2);
	else
		ura_stop(cx);
}

static int even_c(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	(void)cx;
	(void)arg;
	return ura_arg_i64(m, 0) % 2 == 0;
}

#define EVEN URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0))

URA_BEHAVIOR(plain, URA_ON(A_N, "i", on_n));
URA_BEHAVIOR(guarded, URA_ON(A_N, "i", on_n, URA_WHEN(EVEN)));
URA_BEHAVIOR(cpred, URA_ON(A_N, "i", on_n, .guard = even_c));

static const ura_class classes[3] = {
	{ .name = "plain", .state_size = sizeof(loop_state), .initial = &plain },
	{ .name = "guarded", .state_size = sizeof(loop_state), .initial = &guarded },
	{ .name = "cpred", .state_size = sizeof(loop_state), .initial = &cpred },
};

/* Nanoseconds per message of one run. */
static double run(ura_system *sys, const ura_class *cls, int64_t n)
{
	ura_ref a;
	handled = 0;
	double t0 = b_now();
	B_CHECK(ura_spawn(sys, cls, &(loop_state){ .left = n }, &a));
	B_CHECK(ura_send(sys, a, A_N, 0));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	if (handled != n)
		b_fail("a message was not handled by its case");
	return dt * 1e9 / (double)n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int64_t n = b_arg(argc, argv, 1, 2000000);
	int runs = (int)b_arg(argc, argv, 2, 7);
	if (runs > 64)
		runs = 64;
	ura_system *sys;
	B_CHECK(ura_system_new(&sys, &(ura_config){ .workers = 1 }));
	for (int c = 0; c < 3; c++)
		B_CHECK(ura_behavior_check(classes[c].initial));
	for (int c = 0; c < 3; c++) /* warm the pools and the caches */
		run(sys, &classes[c], n / 10 + 1);

	double ns[3][64];
	/* Interleaved, in a rotating order, so that drift (frequency,
	 * neighbours) spreads over all three variants. */
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < 3; k++) {
			int c = (k + r) % 3;
			ns[c][r] = run(sys, &classes[c], n);
		}
	/* The difference is taken within each round, whose three runs are
	 * back to back, and then its median: drift between rounds (a busy
	 * neighbour, the clock) cancels out better than in medians apart. */
	double dg[64], dc[64], med[3];
	for (int r = 0; r < runs; r++) {
		dg[r] = ns[1][r] - ns[0][r];
		dc[r] = ns[2][r] - ns[0][r];
	}
	double guard_ns = median(dg, runs), cpred_guard_ns = median(dc, runs);
	for (int c = 0; c < 3; c++) {
		med[c] = median(ns[c], runs);
		printf("# %-8s %8.2f ns/msg  %10.0f msg/s  (median of %d runs of %lld)\n",
		       classes[c].name, med[c], 1e9 / med[c], runs, (long long)n);
	}
	printf("# the guard adds %.2f ns per message (the C predicate %.2f), median of the "
	       "differences within each round\n", guard_ns, cpred_guard_ns);

	/* The evaluator alone, over the same value. */
	const ura_guard_node *g = EVEN;
	ura_value v = ura_v_i64(42);
	long iters = 20000000, hits = 0;
	double t0 = b_now();
	for (long i = 0; i < iters; i++) {
		v.u.i64 = i * 2;
		hits += ura_guard_match(g, &v, 1, NULL);
	}
	double eval_ns = (b_now() - t0) * 1e9 / (double)iters;
	if (hits != iters)
		b_fail("the guard did not hold");

	if (ura_system_destroy(sys) < 0)
		b_fail("destroy");
	printf("bench=guards system=ura workers=1 n=%lld runs=%d plain_ns=%.2f guarded_ns=%.2f "
	       "cpred_ns=%.2f plain_rate=%.0f guarded_rate=%.0f guard_ns=%.2f cpred_guard_ns=%.2f "
	       "eval_ns=%.2f\n",
	       (long long)n, runs, med[0], med[1], med[2], 1e9 / med[0], 1e9 / med[1],
	       guard_ns, cpred_guard_ns, eval_ns);
	return 0;
}
