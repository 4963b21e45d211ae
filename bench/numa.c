/* SPDX-License-Identifier: MIT */
/*
 * numa [P C M]: P producer actors on node 0 each send M messages, round
 * robin, to C consumer actors on node 1; run with cross-node batching on
 * and then off (same process, interleaved REPS times, medians). Prints the
 * rates, the mean batch, remote atomic operations per cross-node message
 * (one CAS per batch when on; one exchange on a remote mailbox per
 * message when off) and the on/off ratio. Needs 2 nodes: run it with
 * URA_TOPOLOGY=2x1 here, or in ../shared/numa-vm/run (there, quote counts,
 * not times: the VM is emulated).
 */
#include <stdatomic.h>

#include "bench.h"

#define A_GO URA_ATOM("go")
#define A_N URA_ATOM("n")

static long g_total;
static _Atomic long g_got;

typedef struct { ura_ref *to; int nto; long left, i; } producer;

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	producer *p = ura_state(cx);
	(void)m;
	for (int k = 0; k < 256 && p->left > 0; k++, p->left--, p->i++)
		ura_send(cx, p->to[p->i % p->nto], A_N, p->i);
	if (p->left > 0)
		ura_send(cx, ura_self(cx), A_GO);
}

static void on_n(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add_explicit(&g_got, 1, memory_order_relaxed);
}

URA_BEHAVIOR(producer_beh, URA_ON(A_GO, "", on_go));
URA_BEHAVIOR(consumer_beh, URA_ON(A_N, "i", on_n));
static const ura_class producer_class = { .name = "producer", .state_size = sizeof(producer), .initial = &producer_beh };
static const ura_class consumer_class = { .name = "consumer", .initial = &consumer_beh };

struct result { double rate, mean_batch, atomics_per_msg; };

static struct result run(int batched, int P, int C, long M)
{
	ura_system *sys;
	B_CHECK(ura_system_new(&sys, &(ura_config){ .no_numa_batching = !batched }));
	ura_stats st;
	ura_system_stats(sys, &st);
	if (st.nodes < 2) {
		fprintf(stderr, "numa: needs 2 nodes (try URA_TOPOLOGY=2x1)\n");
		exit(2);
	}
	ura_ref *cons = calloc((size_t)C, sizeof *cons);
	ura_ref *prod = calloc((size_t)P, sizeof *prod);
	for (int i = 0; i < C; i++)
		B_CHECK(ura_spawn_ex(sys, &consumer_class, NULL, &(ura_spawn_opts){ .node = URA_NODE(1) }, &cons[i]));
	for (int i = 0; i < P; i++)
		B_CHECK(ura_spawn_ex(sys, &producer_class, &(producer){ cons, C, M, (long)i },
				     &(ura_spawn_opts){ .node = URA_NODE(0) }, &prod[i]));
	atomic_store(&g_got, 0);
	g_total = (long)P * M;
	double t0 = b_now();
	for (int i = 0; i < P; i++)
		B_CHECK(ura_send(sys, prod[i], A_GO));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_system_stats(sys, &st);
	B_CHECK(ura_system_destroy(sys));
	if (atomic_load(&g_got) != g_total)
		b_fail("numa: messages lost");
	struct result r = { (double)g_total / dt, 0, 1.0 };
	if (batched) {
		r.mean_batch = st.flushes ? (double)st.flushed / (double)st.flushes : 0;
		r.atomics_per_msg = st.cross_node ? (double)st.flushes / (double)st.cross_node : 1;
	}
	free(cons);
	free(prod);
	return r;
}

static int cmpd(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int P = (int)b_arg(argc, argv, 1, 4), C = (int)b_arg(argc, argv, 2, 4);
	long M = (long)b_arg(argc, argv, 3, 250000);
	enum { REPS = 5 };
	double on[REPS], off[REPS], batch = 0, atomics = 0;
	for (int r = 0; r < REPS; r++) {
		struct result a = run(1, P, C, M), b = run(0, P, C, M);
		on[r] = a.rate;
		off[r] = b.rate;
		batch += a.mean_batch / REPS;
		atomics += a.atomics_per_msg / REPS;
	}
	qsort(on, REPS, sizeof on[0], cmpd);
	qsort(off, REPS, sizeof off[0], cmpd);
	ura_stats st;
	(void)st;
	printf("bench=numa system=ura producers=%d consumers=%d m=%ld mean_batch=%.1f "
	       "remote_atomics_per_msg=%.3f rate_off=%.0f on_off_ratio=%.2f rate=%.0f\n",
	       P, C, M, batch, atomics, off[REPS / 2], on[REPS / 2] / off[REPS / 2], on[REPS / 2]);
	return 0;
}
