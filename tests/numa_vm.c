/* SPDX-License-Identifier: MIT */
/*
 * NUMA on a real multi-node kernel: meson runs this inside
 * ../shared/numa-vm/run (qemu, 2 nodes x 1 and x 2 CPUs). Natively, on a
 * one-node machine, it skips. Checks: the topology is read from the
 * kernel; an actor placed on node 1 lives and runs there; the memory its
 * worker allocates (its message pool) is on node 1; a node-0 producer
 * flooding a node-1 actor delivers everything in order, in batches; a
 * single cross-node message arrives; actor I/O on node 1: the read's
 * bytes land in node-1 memory, and ura_offload runs on node 1's pool.
 * (VM timings are emulated: only counts are asserted.)
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <unistd.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "tap.h"

#define A_GO URA_ATOM("go")
#define A_N URA_ATOM("n")
#define A_PROBE URA_ATOM("probe")

static _Atomic long g_got, g_bad;
static _Atomic int g_msg_node = -2, g_heap_node = -2, g_ran_node = -2;
static ura_system *g_sys;

static int node_of_addr(const void *p)
{
	int node = -1;
	if (get_mempolicy(&node, NULL, 0, (void *)p, MPOL_F_NODE | MPOL_F_ADDR) < 0)
		return -errno;
	return node;
}

typedef struct { long next; } sink;

/* Blocks of the flood, sampled: the node their pages are on (they come
 * from the node-0 sender's pool, which populates its pages ahead in
 * chunks once it outgrows its first 64 KiB: kernel-notes/memory.md). */
static _Atomic long g_sampled, g_off_node;

static void on_n(ura_ctx *cx, const ura_msg *m)
{
	sink *s = ura_state(cx);
	if (s->next % 64 == 0) {
		atomic_fetch_add(&g_sampled, 1);
		if (node_of_addr(m) != 0)
			atomic_fetch_add(&g_off_node, 1);
	}
	if (ura_arg_i64(m, 0) != s->next)
		atomic_fetch_add(&g_bad, 1);
	s->next++;
	atomic_fetch_add(&g_got, 1);
}

/* Sent by the node-1 actor to itself: the message block comes from the
 * node-1 worker's pool. */
static void on_probe(ura_ctx *cx, const ura_msg *m)
{
	size_t len;
	const void *b = ura_arg_bytes(m, 0, &len);
	atomic_store(&g_msg_node, node_of_addr(b));
	char *heap = malloc(1 << 20);
	if (heap) {
		for (size_t i = 0; i < (1 << 20); i += 4096)
			heap[i] = 1;
		atomic_store(&g_heap_node, node_of_addr(heap + (1 << 19)));
		free(heap);
	}
	atomic_store(&g_ran_node, ura_worker_node(g_sys, ura_worker_id(cx)));
}

static void on_go_probe(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	static char blob[512];
	ura_send(cx, ura_self(cx), A_PROBE, ura_v_bytes(blob, sizeof blob));
}

URA_BEHAVIOR(sink_beh, URA_ON(A_N, "i", on_n), URA_ON(A_PROBE, "b", on_probe),
	     URA_ON(A_GO, "", on_go_probe));
static const ura_class sink_class = { .name = "sink", .state_size = sizeof(sink), .initial = &sink_beh };

typedef struct { ura_ref to; long left, sent; } source;

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	source *s = ura_state(cx);
	(void)m;
	for (int k = 0; k < 500 && s->left > 0; k++, s->left--)
		ura_send(cx, s->to, A_N, s->sent++);
	if (s->left > 0)
		ura_send(cx, ura_self(cx), A_GO);
}
URA_BEHAVIOR(source_beh, URA_ON(A_GO, "", on_go));
static const ura_class source_class = { .name = "source", .state_size = sizeof(source), .initial = &source_beh };

/* ---- actor I/O on node 1 ---------------------------------------------- */

#define A_IOGO URA_ATOM("iogo")
#define A_RD URA_ATOM("rd")
#define A_WR URA_ATOM("wr")
#define A_OFF URA_ATOM("off")
static int g_pipe[2];
static _Atomic int g_io_left;
static _Atomic int g_data_node = -2, g_pool_node = -2, g_io_worker_node = -2;
static _Atomic long g_rd = -1;

static int64_t where_am_i(void *arg)
{
	(void)arg;
	return numa_node_of_cpu(sched_getcpu());
}
static void io_one_done(ura_ctx *cx)
{
	if (atomic_fetch_sub(&g_io_left, 1) == 1)
		ura_stop(cx);
}
static void on_rd(ura_ctx *cx, const ura_msg *m)
{
	size_t n = 0;
	const void *d = ura_arg_bytes(m, 1, &n);
	atomic_store(&g_rd, (long)ura_arg_i64(m, 0));
	atomic_store(&g_data_node, node_of_addr(d));
	atomic_store(&g_io_worker_node, ura_worker_node(g_sys, ura_worker_id(cx)));
	io_one_done(cx);
}
static void on_wr(ura_ctx *cx, const ura_msg *m) { (void)m; io_one_done(cx); }
static void on_off(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_pool_node, (int)ura_arg_i64(m, 0));
	io_one_done(cx);
}
static void on_iogo(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_io_left, 3);
	ura_io_read(cx, A_RD, g_pipe[0], 64, -1);
	ura_io_write(cx, A_WR, g_pipe[1], "numa", 4, -1);
	ura_offload(cx, A_OFF, where_am_i, NULL);
}
URA_BEHAVIOR(io_beh,
	URA_ON(A_IOGO, "", on_iogo),
	URA_ON(A_RD, "ib", on_rd),
	URA_ON(A_WR, "i", on_wr),
	URA_ON(A_OFF, "i", on_off));
static const ura_class io_class = { .name = "io_node1", .initial = &io_beh };

static void test_io_node1(ura_system *sys)
{
	t_must(pipe2(g_pipe, O_CLOEXEC));
	ura_ref a;
	t_must(ura_spawn_ex(sys, &io_class, NULL, &(ura_spawn_opts){ .node = URA_NODE(1) }, &a));
	t_must(ura_send(sys, a, A_IOGO));
	t_rc(ura_system_await(sys), 0, "await the node-1 I/O");
	t_eq(atomic_load(&g_rd), 4, "a node-1 actor's read got the 4 bytes");
	t_eq(atomic_load(&g_io_worker_node), 1, "its completion ran on a node-1 worker");
	t_eq(atomic_load(&g_data_node), 1, "the bytes were read into node-1 memory");
	t_eq(atomic_load(&g_pool_node), 1, "ura_offload ran on node 1's pool");
	close(g_pipe[0]);
	close(g_pipe[1]);
}

int main(void)
{
	if (!getenv("NUMA_VM")) {
		t_skip("not inside ../shared/numa-vm/run (a real multi-node kernel)");
		return t_done();
	}
	/* Remote stealing waits for a long dry spell here: under emulation
	 * 200 us pass in no time, and an idle node-0 worker would take the
	 * node-1 actor (legitimately) before the locality checks run. */
	ura_system *sys;
	t_must(ura_system_new(&sys, &(ura_config){ .steal_remote_ns = 10 * URA_SEC }));
	g_sys = sys;
	ura_stats st;
	ura_system_stats(sys, &st);
	int want = atoi(getenv("NUMA_VM_NODES") ? getenv("NUMA_VM_NODES") : "2");
	t_eq(st.nodes, want, "the kernel's %d nodes are read (backend %s)", want, st.backend);
	t_ok(!st.simulated_topology, "not simulated");
	ura_ref dst, src;
	t_must(ura_spawn_ex(sys, &sink_class, NULL, &(ura_spawn_opts){ .node = URA_NODE(1) }, &dst));
	t_eq(ura_actor_node(sys, dst), 1, "an actor spawned on node 1 lives on node 1");
	t_must(ura_send(sys, dst, A_GO));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(atomic_load(&g_ran_node), 1, "it ran on a node-1 worker");
	t_eq(atomic_load(&g_msg_node), 1, "its worker's message pool is on node 1 (get_mempolicy)");
	t_eq(atomic_load(&g_heap_node), 1, "memory its handler touches first is on node 1");

	long n = 20000;
	t_must(ura_spawn_ex(sys, &source_class, &(source){ dst, n, 0 },
			    &(ura_spawn_opts){ .node = URA_NODE(0) }, &src));
	ura_stats s0;
	ura_system_stats(sys, &s0);
	t_must(ura_send(sys, src, A_GO));
	t_rc(ura_system_await(sys), 0, "await the flood");
	t_eq(atomic_load(&g_got), n, "node 0 -> node 1 flood: every message arrived");
	t_eq(atomic_load(&g_bad), 0, "in per-sender order");
	t_eq(atomic_load(&g_off_node), 0,
	     "every sampled block of the flood (%ld) is in its node-0 sender's memory",
	     atomic_load(&g_sampled));
	ura_system_stats(sys, &st);
	uint64_t cross = st.cross_node - s0.cross_node, fl = st.flushes - s0.flushes;
	t_eq(cross, n, "all of them through the outbox");
	t_diag("%llu cross-node messages in %llu batches (mean %.1f)", (unsigned long long)cross,
	       (unsigned long long)fl, fl ? (double)cross / (double)fl : 0.0);
	t_ok(fl && cross / fl >= 8, "mean batch >= 8");

	atomic_store(&g_got, 0);
	t_must(ura_spawn_ex(sys, &source_class, &(source){ dst, 1, n },
			    &(ura_spawn_opts){ .node = URA_NODE(0) }, &src));
	t_must(ura_send(sys, src, A_GO));
	t_rc(ura_system_await(sys), 0, "await one message");
	t_eq(atomic_load(&g_got), 1, "a single cross-node message under no load arrives");
	test_io_node1(sys);
	t_destroy(sys);
	return t_done();
}
