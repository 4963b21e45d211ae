/* SPDX-License-Identifier: MIT */
/*
 * Message blocks go home and come back intact. Three plain threads send
 * messages of every size class (a few bytes up to past the largest
 * class, 2 KiB) to relay actors spread over the workers; each relay
 * checks the payload and forwards a copy twice more, to relays picked
 * by the sequence number. So blocks are allocated on one thread and
 * freed on another all the time, go home in batches (msg/pool.c,
 * give_back), and are taken back, mixed in size, from one chain that
 * is sorted a block at a time as blocks are wanted (take_returned). And
 * they are taken back at all: the run's RSS stays within what its window
 * holds, far below what its messages would take without reuse.
 *
 * Each payload is a pattern of its origin, sequence and hop. A block
 * handed out twice, or of a smaller class than asked for (its writer
 * then runs into the next block), shows as a payload that does not
 * match, or as a count that does not add up. The senders stay a window
 * ahead of the relays, so blocks are reused many times over.
 *
 * And a pool that outgrows its first 64 KiB of a class has its next
 * pages populated a chunk at a time (MADV_POPULATE_WRITE, Linux 5.14)
 * rather than faulted one by one: a handler queues FLOOD messages of the
 * 64-byte class for another actor, and the pages past the highest block
 * it got, which no block has touched, must be resident (mincore) within
 * its chunk (the highest block sits mid-chunk: 2500 x 64 B).
 *
 * The pools' reservation takes 2 GiB of address space a pool where the
 * process may map it, else 256 MiB, else none (blocks from malloc, and a
 * warning): each rung under an address-space limit (RLIMIT_AS) that
 * leaves room for it and not for the one above, with messages flowing.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tap.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define A_HOP URA_ATOM("hop")
#define NTHR 3
#define NRELAY 16
#define HOPS 3
#define MAXLEN 3000 /* past the 2048-byte class: the malloc'd ones too */
#define WINDOW 2048

static ura_ref g_relay[NRELAY];
static _Atomic long g_done[NTHR];  /* messages at their last hop */
static _Atomic long g_bad;         /* payloads that did not match */
static _Atomic long g_errors;      /* sends refused */

static size_t len_of(int64_t origin, int64_t seq)
{
	return (size_t)((seq * 37 + origin * 101) % MAXLEN);
}

static void fill(unsigned char *p, size_t n, int64_t origin, int64_t seq, int64_t hop)
{
	for (size_t k = 0; k < n; k++)
		p[k] = (unsigned char)(origin * 131 + seq * 17 + hop * 7 + (int64_t)k);
}

static int matches(const unsigned char *p, size_t n, int64_t origin, int64_t seq, int64_t hop)
{
	for (size_t k = 0; k < n; k++)
		if (p[k] != (unsigned char)(origin * 131 + seq * 17 + hop * 7 + (int64_t)k))
			return 0;
	return 1;
}

static void relay_hop(ura_ctx *cx, const ura_msg *m)
{
	int64_t origin = ura_arg_i64(m, 0), seq = ura_arg_i64(m, 1), hop = ura_arg_i64(m, 2);
	size_t n = 0;
	const unsigned char *p = ura_arg_bytes(m, 3, &n);
	if (origin < 0 || origin >= NTHR || hop < 0 || hop >= HOPS ||
	    n != len_of(origin, seq) || (n && !p) || !matches(p, n, origin, seq, hop)) {
		atomic_fetch_add(&g_bad, 1);
		return;
	}
	if (hop == HOPS - 1) {
		atomic_fetch_add(&g_done[origin], 1);
		return;
	}
	unsigned char buf[MAXLEN];
	fill(buf, n, origin, seq, hop + 1);
	ura_ref to = g_relay[(seq * 7 + hop + 1) % NRELAY];
	if (ura_send(cx, to, A_HOP, origin, seq, hop + 1, ura_v_bytes(buf, n)) < 0)
		atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(relay_beh, URA_ON(A_HOP, "iiib", relay_hop));
static const ura_class relay_class = { .name = "relay", .initial = &relay_beh };

struct sender {
	ura_system *sys;
	int64_t origin, n;
	pthread_t th;
};

static void *send_all(void *arg)
{
	struct sender *s = arg;
	unsigned char buf[MAXLEN];
	uint64_t t0 = t_now_ns();
	for (int64_t seq = 0; seq < s->n; seq++) {
		/* A pace, not a timing: the relays drain what the window
		 * holds, and the give-up only keeps a hang from hanging. */
		while (seq - atomic_load(&g_done[s->origin]) > WINDOW &&
		       t_now_ns() - t0 < 60 * URA_SEC)
			sched_yield();
		size_t n = len_of(s->origin, seq);
		fill(buf, n, s->origin, seq, 0);
		ura_ref to = g_relay[(seq + s->origin) % NRELAY];
		if (ura_send(s->sys, to, A_HOP, s->origin, seq, (int64_t)0, ura_v_bytes(buf, n)) < 0)
			atomic_fetch_add(&g_errors, 1);
	}
	return NULL;
}

/*
 * Blocks that went home were handed out again: had a batch, or part of
 * one, been dropped on the way (msg/pool.c), every message would have
 * taken fresh memory. With the senders a window ahead, the run's RSS
 * grows by at most what the window holds at every hop in the largest
 * class, and the pages populated ahead (64 KiB a class and pool); the
 * payloads of all its messages in the pool classes take far more, unless
 * the run is scaled down (then there is nothing to tell apart). Not under
 * the sanitizers: ASan keeps freed malloc blocks in quarantine.
 */
static void blocks_came_back(unsigned workers, long n, long rss0)
{
	long rss = t_proc_kb(getpid(), "VmRSS");
	uint64_t all = 0; /* bytes of the pool classes' payloads, every hop */
	for (int64_t o = 0; o < NTHR; o++)
		for (int64_t q = 0; q < n; q++)
			if (len_of(o, q) <= 1900)
				all += HOPS * len_of(o, q);
	uint64_t bound = (uint64_t)NTHR * WINDOW * HOPS * 2048 + (8u << 20);
	if (T_SANITIZED || all < 2 * bound) {
		t_skip("blocks come back: RSS under a sanitizer or a scaled-down run");
		return;
	}
	t_ok(rss0 > 0 && rss > 0 && (uint64_t)(rss - rss0) * 1024 < bound,
	     "%u workers: blocks come back: RSS grew %ld kB (< %" PRIu64 "; without reuse > %"
	     PRIu64 ")", workers, rss - rss0, bound >> 10, all >> 10);
}

static void run(unsigned workers, long n)
{
	for (int i = 0; i < NTHR; i++)
		atomic_store(&g_done[i], 0);
	atomic_store(&g_bad, 0);
	atomic_store(&g_errors, 0);
	long rss0 = t_proc_kb(getpid(), "VmRSS");
	ura_system *sys = t_system(workers);
	for (int i = 0; i < NRELAY; i++)
		t_must(ura_spawn(sys, &relay_class, NULL, &g_relay[i]));
	struct sender s[NTHR];
	for (int i = 0; i < NTHR; i++) {
		s[i] = (struct sender){ .sys = sys, .origin = i, .n = n };
		t_must(-pthread_create(&s[i].th, NULL, send_all, &s[i]));
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(s[i].th, NULL);
	t_rc(await_guarded(sys), 0, "%u workers: await", workers);
	blocks_came_back(workers, n, rss0);
	t_eq(atomic_load(&g_errors), 0, "%u workers: every send accepted", workers);
	t_eq(atomic_load(&g_bad), 0, "%u workers: every payload intact at every hop", workers);
	long done = 0;
	for (int i = 0; i < NTHR; i++)
		done += atomic_load(&g_done[i]);
	t_eq(done, NTHR * n, "%u workers: every message made its %d hops", workers, HOPS);
	ura_stats st = stats(sys);
	t_eq(st.sent, st.received, "%u workers: stats: sent == received", workers);
	t_eq(st.received, (uint64_t)(NTHR * n * HOPS), "%u workers: stats: received", workers);
	t_destroy(sys);
}

/* ---- pages populated ahead ------------------------------------------ */

#define A_X URA_ATOM("x")
#define A_FLOOD URA_ATOM("flood")
#define FLOOD 2500

static uintptr_t g_lo = UINTPTR_MAX, g_hi; /* the sink's alone, read after await */
static long g_got;
static ura_ref g_sink;

static void sink_x(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	uintptr_t a = (uintptr_t)m;
	if (a < g_lo)
		g_lo = a;
	if (a > g_hi)
		g_hi = a;
	g_got++;
}
URA_BEHAVIOR(sink_beh, URA_ON(A_X, "i", sink_x));
static const ura_class sink_class = { .name = "sink", .initial = &sink_beh };

/* All FLOOD queue before the sink runs (one worker, one handler): the
 * pool has to bump through fresh blocks for them. */
static void flood(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int64_t i = 0; i < FLOOD; i++)
		if (ura_send(cx, g_sink, A_X, i) < 0)
			atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(flooder_beh, URA_ON(A_FLOOD, "", flood));
static const ura_class flooder_class = { .name = "flooder", .initial = &flooder_beh };

/* Resident pages among the n after the one holding a. */
static int resident_after(uintptr_t a, size_t ps, size_t n)
{
	unsigned char v[16];
	uintptr_t from = (a & ~(uintptr_t)(ps - 1)) + ps;
	if (n > sizeof v || mincore((void *)from, n * ps, v) < 0)
		return -errno;
	int r = 0;
	for (size_t i = 0; i < n; i++)
		r += v[i] & 1;
	return r;
}

static void flood_once(ura_system *sys, const char *how)
{
	atomic_store(&g_errors, 0);
	g_got = 0;
	g_lo = UINTPTR_MAX;
	g_hi = 0;
	ura_ref f;
	t_must(ura_spawn(sys, &sink_class, NULL, &g_sink));
	t_must(ura_spawn(sys, &flooder_class, NULL, &f));
	t_must(ura_send(sys, f, A_FLOOD));
	t_rc(await_guarded(sys), 0, "%s: await the flood", how);
	t_eq(atomic_load(&g_errors), 0, "%s: every send accepted", how);
	t_eq(g_got, FLOOD, "%s: the sink got all %d", how, FLOOD);
}

static void populated(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	/* The kernel's answer first: before 5.14 the pool faults as it
	 * always did, and there is nothing to see. */
	void *probe = mmap(NULL, ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = probe != MAP_FAILED && madvise(probe, ps, MADV_POPULATE_WRITE) == 0;
	int e = errno;
	if (probe != MAP_FAILED)
		munmap(probe, ps);
	if (!ok) {
		t_diag("MADV_POPULATE_WRITE: %s", strerror(e));
		t_skip("no MADV_POPULATE_WRITE here (Linux 5.14): the pool faults page by page");
		return;
	}
	ura_system *sys = t_system(1);
	flood_once(sys, "flood");
	t_ok(g_hi - g_lo >= (uintptr_t)(FLOOD - 1) * 64, "flood: %d blocks of 64 B, %zu KiB apart",
	     FLOOD, (size_t)(g_hi - g_lo) >> 10);
	/* Three pages past the highest block's: within its chunk, which
	 * ends 7-8 pages on; no block touched them. */
	int r = resident_after(g_hi, ps, 3);
	t_eq(r, 3, "the pages past the flood's highest block are populated ahead (%d of 3)", r);
	t_destroy(sys);
}

/* ---- the reservation's ladder ---------------------------------------- */

static _Atomic int g_noarena;

static void sink_log(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level <= URA_LOG_WARN && strstr(msg, "no pool arena"))
		atomic_fetch_add(&g_noarena, 1);
}

/* The largest mapping of the process, in bytes. */
static uint64_t largest_mapping(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t best = 0;
	while (f && fgets(line, sizeof line, f)) {
		unsigned long long lo, hi;
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && hi - lo > best)
			best = hi - lo;
	}
	if (f)
		fclose(f);
	return best;
}

/* A one-worker system made under `extra` bytes more address space than
 * is mapped now (0: no limit): its largest mapping, and whether it
 * warned that it has no arena. Messages must flow either way. */
static uint64_t arena_under(uint64_t extra, const char *how, int *warned)
{
	struct rlimit old;
	if (extra && !t_limit_as(&old, extra))
		return 0;
	atomic_store(&g_noarena, 0);
	ura_system *sys;
	int rc = ura_system_new(&sys, &(ura_config){ .workers = 1, .log = sink_log });
	uint64_t big = rc == 0 ? largest_mapping() : 0;
	if (extra)
		setrlimit(RLIMIT_AS, &old);
	t_rc(rc, 0, "%s: the system is made", how);
	if (rc < 0)
		return 0;
	flood_once(sys, how);
	t_destroy(sys);
	*warned = atomic_load(&g_noarena);
	return big;
}

static void ladder(void)
{
	/* 1 worker and the outside threads' pools. */
	const uint64_t pools = 1 + 128, small = pools << 28, large = pools << 31;
	if (T_SANITIZED) {
		t_skip("reservation ladder: the sanitizers map terabytes of shadow");
		return;
	}
	int warned = 0;
	/* A neighbouring mapping of the same flags may merge with it: the
	 * size, give or take 64 MiB. */
#define NEAR(x, want) ((x) >= (want) && (x) < (want) + (64u << 20))
	uint64_t big = arena_under(0, "no limit", &warned);
	/* Strict overcommit (mode 2) charges even MAP_NORESERVE, and may
	 * leave room for the smaller rung only; an inherited limit, too. */
	FILE *oc = fopen("/proc/sys/vm/overcommit_memory", "r");
	int mode = -1;
	if (!oc || fscanf(oc, "%d", &mode) != 1)
		mode = -1;
	if (oc)
		fclose(oc);
	struct rlimit as;
	int free_as = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur == RLIM_INFINITY;
	if (mode != 2 && free_as)
		t_ok(NEAR(big, large), "no limit: a reservation of 2 GiB a pool (%" PRIu64 " MiB)",
		     big >> 20);
	else
		t_ok(NEAR(big, large) || NEAR(big, small),
		     "overcommit %d, RLIMIT_AS %s: 2 GiB or 256 MiB a pool (%" PRIu64 " MiB)", mode,
		     free_as ? "none" : "set", big >> 20);
	t_eq(warned, 0, "no limit: no warning");
	/* Room for 256 MiB a pool, not for 2 GiB. */
	big = arena_under(small + (8ull << 30), "256 MiB rung", &warned);
	t_ok(NEAR(big, small), "under a limit below 2 GiB a pool: 256 MiB a pool (%" PRIu64 " MiB)",
	     big >> 20);
	t_eq(warned, 0, "256 MiB rung: no warning");
	/* Room for neither: malloc, said once. */
	big = arena_under(4ull << 30, "no arena", &warned);
	t_ok(big < small, "under a limit below 256 MiB a pool: no reservation (largest %" PRIu64
	     " MiB)", big >> 20);
	t_eq(warned, 1, "no arena: warned once");
}

int main(void)
{
	long n = t_scaled(40000);
	run(1, n);
	run(2, n);
	run(4, n);
	populated();
	ladder();
	return t_done();
}
