/* SPDX-License-Identifier: MIT */
/*
 * floor N [--threads | --ring [--fence]]: the per-message floor that ura's figures are quoted
 * against. No runtime: a bare intrusive MPSC queue (Vyukov's, the push/pop
 * idea of ura's mailbox, copied here: one atomic exchange per push, no
 * read-modify-write per pop, the popped node stays as the stub until the
 * next pop) plus one indirect call per message through a handler table
 * looked up by the message's tag, and a free list for the 64-byte nodes
 * (ura's per-worker pool). What it leaves out is what a runtime adds:
 * ref checks, typed values, scheduling, the idle handshake, stats.
 *
 * Default: one thread sends a message, takes it out and dispatches it, N
 * times (the cost ura pays per message when sender and receiver share a
 * worker). --threads: one producer thread pushes and one consumer thread
 * pops and dispatches, spinning when empty, each pinned to its own CPU:
 * the cross-core floor (the cache
 * lines of the queue's head and of each message move between cores; nodes
 * are recycled through a fixed ring, not malloc'd).
 * --ring: the same two pinned threads, but the producer writes each
 * message into the next 64-byte slot of a ring it alone writes and
 * publishes its tail with a plain release store, no read-modify-write and
 * no barrier; the consumer reads the slots in order, copies each into a
 * node of its own free list (as a worker would post it locally) and
 * dispatches it. The floor of a per-thread ring of sends (bench/README.md,
 * "Sends from threads"). --ring --fence: a full barrier after each
 * publish, as a doorbell check costs when the sender pays its store-load
 * order itself.
 * Verifies the count and the sum of the payloads.
 */
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>

#include "bench.h"

struct node {
	_Atomic(struct node *) next;
	uint64_t tag;
	int64_t val;
	char pad[64 - 24];
};

struct queue {
	_Atomic(struct node *) head; /* last pushed; written by producers */
	char pad[56];
	struct node *tail;           /* last popped (the stub); consumer only */
};

static void q_init(struct queue *q, struct node *stub)
{
	atomic_store_explicit(&stub->next, NULL, memory_order_relaxed);
	q->tail = stub;
	atomic_store_explicit(&q->head, stub, memory_order_relaxed);
}

static inline void q_push(struct queue *q, struct node *n)
{
	atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
	struct node *prev = atomic_exchange_explicit(&q->head, n, memory_order_acq_rel);
	atomic_store_explicit(&prev->next, n, memory_order_release);
}

/* Returns the next node or NULL; *retired: the old stub, now free. */
static inline struct node *q_pop(struct queue *q, struct node **retired)
{
	struct node *t = q->tail;
	struct node *n = atomic_load_explicit(&t->next, memory_order_acquire);
	if (!n)
		return NULL;
	q->tail = n;
	*retired = t;
	return n;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- dispatch ----------------------------------------------------------- */

typedef struct { uint64_t count, sum; } recv_state;
typedef void handler_fn(recv_state *s, const struct node *m);

static void on_x(recv_state *s, const struct node *m)
{
	s->count++;
	s->sum += (uint64_t)m->val;
}

static void on_other(recv_state *s, const struct node *m)
{
	(void)s;
	(void)m;
	b_fail("unexpected tag");
}

#define TAG_X 1u
static handler_fn *const table[4] = { on_other, on_x, on_other, on_other };
/* Through a volatile pointer, so the call stays indirect. */
static handler_fn *const *volatile dispatch = table;

static inline void deliver(recv_state *s, const struct node *m)
{
	dispatch[m->tag & 3](s, m);
}

/* ---- one thread ---------------------------------------------------------- */

/* Frees a free list of nodes, linked through ->next. */
static void free_nodes(struct node *list)
{
	while (list) {
		struct node *k = list;
		list = atomic_load_explicit(&k->next, memory_order_relaxed);
		free(k);
	}
}

static void run_single(int64_t n, recv_state *s)
{
	struct queue q;
	struct node *stub = calloc(1, sizeof *stub), *free_list = NULL;
	if (!stub)
		b_fail("out of memory");
	q_init(&q, stub);
	for (int64_t i = 1; i <= n; i++) {
		struct node *m = free_list;
		if (m)
			free_list = (struct node *)atomic_load_explicit(&m->next, memory_order_relaxed);
		else if (!(m = malloc(sizeof *m)))
			b_fail("out of memory");
		m->tag = TAG_X;
		m->val = i;
		q_push(&q, m);
		struct node *r, *got = q_pop(&q, &r);
		if (!got)
			b_fail("lost a message");
		deliver(s, got);
		atomic_store_explicit(&r->next, free_list, memory_order_relaxed);
		free_list = r;
	}
	free(q.tail);
	free_nodes(free_list);
}

/* ---- two threads --------------------------------------------------------- */

/* Nodes come from a fixed ring of RING_NODES, reused in order: node k is
 * reused for message k + RING_NODES once the consumer has popped past it
 * (it publishes its count every 256 pops). No malloc per message, so what
 * is measured is the queue and the cache lines it moves between cores. */
#define RING_NODES 65536
static struct queue q2;
static int64_t n2;
static struct node *ring_nodes;
static _Atomic int64_t popped;

/* Pins the calling thread to the k-th CPU the process may run on (if there
 * are two), so that producer and consumer really sit on two cores. The
 * set is read once, before anyone pins: a thread created after its parent
 * pinned itself inherits the parent's one CPU, and reading the set there
 * (as this did until 2026-12-04) found one CPU and left both threads on
 * it, time-sharing: the "cross-core" figures before that date measured
 * one core. */
static cpu_set_t allowed;
static int allowed_read;

static void pin_to(int k)
{
	if (!allowed_read) {
		if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
			CPU_ZERO(&allowed);
		allowed_read = 1;
	}
	if (CPU_COUNT(&allowed) < 2)
		return;
	for (int c = 0, seen = 0; c < CPU_SETSIZE; c++) {
		if (!CPU_ISSET(c, &allowed) || seen++ != k)
			continue;
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		pthread_setaffinity_np(pthread_self(), sizeof one, &one);
		return;
	}
}

static void *producer(void *arg)
{
	(void)arg;
	int64_t seen = 0;
	pin_to(1);
	for (int64_t i = 1; i <= n2; i++) {
		while (i - seen >= RING_NODES - 512) {
			seen = atomic_load_explicit(&popped, memory_order_acquire);
			if (i - seen >= RING_NODES - 512)
				relax();
		}
		struct node *m = &ring_nodes[i % RING_NODES];
		m->tag = TAG_X;
		m->val = i;
		q_push(&q2, m);
	}
	return NULL;
}

static void run_threads(int64_t n, recv_state *s)
{
	struct node *stub = calloc(1, sizeof *stub);
	ring_nodes = aligned_alloc(64, RING_NODES * sizeof *ring_nodes);
	if (!stub || !ring_nodes)
		b_fail("out of memory");
	memset(ring_nodes, 0, RING_NODES * sizeof *ring_nodes);
	q_init(&q2, stub);
	n2 = n;
	pin_to(0);
	pthread_t th;
	if (pthread_create(&th, NULL, producer, NULL))
		b_fail("pthread_create");
	while (s->count < (uint64_t)n) {
		struct node *r, *got = q_pop(&q2, &r);
		if (!got) {
			relax();
			continue;
		}
		deliver(s, got);
		if ((s->count & 255) == 0)
			atomic_store_explicit(&popped, (int64_t)s->count - 1, memory_order_release);
	}
	pthread_join(th, NULL);
	free(stub);
	free(ring_nodes);
}

/* ---- a ring per sender ------------------------------------------------- */

#define RING_SLOTS 1024 /* a power of two */
struct slot {
	uint64_t tag;
	int64_t val;
	char pad[64 - 16];
};
static struct slot *slots;
static struct {
	alignas(64) _Atomic uint64_t tail; /* the producer's */
	alignas(64) _Atomic uint64_t head; /* the consumer's */
	alignas(64) _Atomic int sleeping;  /* the doorbell's flag: never set here */
} rg;
static int ring_fence;

static void *ring_producer(void *arg)
{
	(void)arg;
	uint64_t head = 0;
	pin_to(1);
	for (int64_t i = 1; i <= n2; i++) {
		uint64_t t = (uint64_t)i - 1;
		while (t - head >= RING_SLOTS) {
			/* acquire: the consumer is done with the slots it passed. */
			head = atomic_load_explicit(&rg.head, memory_order_acquire);
			if (t - head >= RING_SLOTS)
				relax();
		}
		struct slot *sl = &slots[t & (RING_SLOTS - 1)];
		sl->tag = TAG_X;
		sl->val = i;
		/* release: the slot's contents before the tail that shows it. */
		atomic_store_explicit(&rg.tail, t + 1, memory_order_release);
		if (ring_fence)
			atomic_thread_fence(memory_order_seq_cst);
		/* relaxed: the doorbell's check, which a real ring makes here. */
		if (atomic_load_explicit(&rg.sleeping, memory_order_relaxed))
			b_fail("nobody sleeps here");
	}
	return NULL;
}

static void run_ring(int64_t n, recv_state *s)
{
	slots = aligned_alloc(64, RING_SLOTS * sizeof *slots);
	if (!slots)
		b_fail("out of memory");
	memset(slots, 0, RING_SLOTS * sizeof *slots);
	struct node *free_list = NULL;
	for (int k = 0; k < 64; k++) {
		struct node *m = aligned_alloc(64, sizeof *m);
		if (!m)
			b_fail("out of memory");
		atomic_store_explicit(&m->next, free_list, memory_order_relaxed);
		free_list = m;
	}
	n2 = n;
	pin_to(0);
	pthread_t th;
	if (pthread_create(&th, NULL, ring_producer, NULL))
		b_fail("pthread_create");
	uint64_t head = 0;
	while (s->count < (uint64_t)n) {
		/* acquire: pairs with the producer's release of its tail. */
		uint64_t tail = atomic_load_explicit(&rg.tail, memory_order_acquire);
		if (tail == head) {
			relax();
			continue;
		}
		for (; head != tail; head++) {
			const struct slot *sl = &slots[head & (RING_SLOTS - 1)];
			struct node *m = free_list;
			free_list = atomic_load_explicit(&m->next, memory_order_relaxed);
			m->tag = sl->tag;
			m->val = sl->val;
			deliver(s, m);
			atomic_store_explicit(&m->next, free_list, memory_order_relaxed);
			free_list = m;
		}
		/* release: the slots read before the head that frees them. */
		atomic_store_explicit(&rg.head, head, memory_order_release);
	}
	pthread_join(th, NULL);
	free_nodes(free_list);
	free(slots);
}

int main(int argc, char **argv)
{
	int64_t n = b_pos(argc, argv, 1, 10000000);
	int threads = b_flag(argc, argv, "--threads");
	int ring = b_flag(argc, argv, "--ring");
	ring_fence = b_flag(argc, argv, "--fence");
	recv_state s = { 0, 0 };
	double t0 = b_now();
	if (ring)
		run_ring(n, &s);
	else if (threads)
		run_threads(n, &s);
	else
		run_single(n, &s);
	double dt = b_now() - t0;
	uint64_t want_sum = (uint64_t)n * (uint64_t)(n + 1) / 2;
	if (s.count != (uint64_t)n || s.sum != want_sum) {
		fprintf(stderr, "count=%llu sum=%llu want %lld/%llu\n",
			(unsigned long long)s.count, (unsigned long long)s.sum,
			(long long)n, (unsigned long long)want_sum);
		b_fail("floor");
	}
	printf("bench=floor system=ura workers=%d n=%lld mode=%s ns_per_msg=%.2f wall_s=%.6f rate=%.0f\n",
	       threads || ring ? 2 : 1, (long long)n,
	       ring ? (ring_fence ? "ring_fence" : "ring") : threads ? "threads" : "single",
	       dt * 1e9 / (double)n, dt, (double)n / dt);
	return 0;
}
