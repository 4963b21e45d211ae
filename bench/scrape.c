/* SPDX-License-Identifier: MIT */
/*
 * scrape: what a metrics scrape costs with many live actors (issue 17's
 * target: <= 10 ms with 1M actors, and a size that does not grow with
 * them). Spawns N actors of a metered class (half) and of a plain one,
 * then times ura_metrics_render R times (the median is reported) and one
 * ura_metrics_top walk, and prints the text's size at N and at N/16.
 *
 *   ./build/bench/scrape [N=1000000] [R=21]
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define A_X URA_ATOM("x")
static void on_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(idle_beh, URA_ON(A_X, "", on_x));
static const ura_class metered = { .name = "metered", .initial = &idle_beh,
				   .metrics = URA_CLASS_METRICS };
static const ura_class plain = { .name = "plain", .initial = &idle_beh };

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double render_ms(ura_system *sys, char *buf, size_t cap, int reps, int *len)
{
	double t[64];
	for (int i = 0; i < reps; i++) {
		double t0 = b_now();
		*len = ura_metrics_render(sys, URA_METRICS_PROMETHEUS, buf, cap);
		t[i] = (b_now() - t0) * 1e3;
	}
	qsort(t, (size_t)reps, sizeof *t, cmp);
	return t[reps / 2];
}

int main(int argc, char **argv)
{
	long long n = b_pos(argc, argv, 1, 1000000);
	int reps = (int)b_pos(argc, argv, 2, 21);
	if (reps > 64)
		reps = 64;
	ura_system *sys = b_system();
	static char buf[1 << 20];
	int len_small = 0, len = 0;
	double ms_small = 0;
	for (long long i = 0; i < n; i++) {
		ura_ref r;
		B_CHECK(ura_spawn(sys, i % 2 ? &plain : &metered, NULL, &r));
		if (i + 1 == n / 16)
			ms_small = render_ms(sys, buf, sizeof buf, reps, &len_small);
	}
	double ms = render_ms(sys, buf, sizeof buf, reps, &len);
	ura_actor_info top[10];
	double t0 = b_now();
	int nt = ura_metrics_top(sys, URA_TOP_MAILBOX, top, 10);
	double top_ms = (b_now() - t0) * 1e3;
	printf("bench=scrape system=ura workers=%u actors=%lld render_ms=%.3f bytes=%d "
	       "actors_small=%lld render_small_ms=%.3f bytes_small=%d top_ms=%.1f top_n=%d\n",
	       b_workers(sys), n, ms, len, n / 16, ms_small, len_small, top_ms, nt);
	ura_system_destroy(sys);
	return 0;
}
