/* SPDX-License-Identifier: MIT */
/*
 * ring [N T H]: N actors in a ring, actor i on node i % nodes (so every
 * hop crosses nodes on a 2-node topology), T tokens started at actors
 * spread around it (token k at actor k*N/T + k%2, so that with an even
 * spacing half the tokens still start on each node), each passed H hops.
 * Prints hops/s. The scaling issue's figure: the 32-token ring under
 * URA_TOPOLOGY=2x1 against the same on one node.
 */
#include <stdatomic.h>

#include "bench.h"

#define A_TOK URA_ATOM("tok")
#define A_LINK URA_ATOM("link")

typedef struct { ura_ref next; } hop;
static _Atomic long g_done;

static void on_link(ura_ctx *cx, const ura_msg *m)
{
	((hop *)ura_state(cx))->next = ura_arg_ref(m, 0);
}

/* tok(left) */
static void on_tok(ura_ctx *cx, const ura_msg *m)
{
	int64_t left = ura_arg_i64(m, 0);
	if (left > 0)
		ura_send(cx, ((hop *)ura_state(cx))->next, A_TOK, left - 1);
	else
		atomic_fetch_add_explicit(&g_done, 1, memory_order_relaxed);
}

URA_BEHAVIOR(hop_beh, URA_ON(A_TOK, "i", on_tok), URA_ON(A_LINK, "r", on_link));
static const ura_class hop_class = { .name = "hop", .state_size = sizeof(hop),
				     .initial = &hop_beh };

int main(int argc, char **argv)
{
	int n = (int)b_arg(argc, argv, 1, 64);
	int t = (int)b_arg(argc, argv, 2, 32);
	long long h = b_arg(argc, argv, 3, 200000);
	ura_system *sys = b_system();
	int nodes = ura_system_nodes(sys);
	ura_ref *refs = calloc((size_t)n, sizeof *refs);
	for (int i = 0; i < n; i++) {
#ifdef URA_VERSION_STRING
		ura_spawn_opts o = { .node = URA_NODE(i % nodes) };
#else
		ura_spawn_opts o = { .node = URA_NODE(i % nodes) };
#endif
		B_CHECK(ura_spawn_ex(sys, &hop_class, NULL, &o, &refs[i]));
	}
	for (int i = 0; i < n; i++)
		B_CHECK(ura_send(sys, refs[i], A_LINK, refs[(i + 1) % n]));
	B_CHECK(ura_system_await(sys));
	ura_stats s0;
	ura_system_stats(sys, &s0);
	double t0 = b_now();
	for (int k = 0; k < t; k++)
		B_CHECK(ura_send(sys, refs[((k * n) / t + (k & 1)) % n], A_TOK, (int64_t)h));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats s1;
	ura_system_stats(sys, &s1);
	if (atomic_load(&g_done) != t)
		b_fail("not every token finished");
	double hops = (double)t * (double)h;
	printf("bench=ring system=ura workers=%u nodes=%d n=%d tokens=%d hops=%.0f "
	       "sleeps=%llu wakeups=%llu flushes=%llu turns=%llu steals=%llu steals_remote=%llu "
	       "wall_s=%.3f rate=%.0f\n",
	       s1.workers, nodes, n, t, hops,
	       (unsigned long long)(s1.sleeps - s0.sleeps),
	       (unsigned long long)(s1.wakeups - s0.wakeups),
	       (unsigned long long)(s1.flushes - s0.flushes),
	       (unsigned long long)(s1.turns - s0.turns), (unsigned long long)(s1.steals - s0.steals),
	       (unsigned long long)(s1.steals_remote - s0.steals_remote), dt, hops / dt);
	free(refs);
	return ura_system_destroy(sys) < 0;
}
