/* SPDX-License-Identifier: MIT */
/*
 * snapshot: the cost of asynchronous snapshots (issue 8), as the MPLR'19
 * paper measures it.
 *
 *   snapshot iters [--reps R] [--dir D] [--only NAME]
 *     (1) pingpong, thread_ring, count and mixed (mixed_case's shape:
 *         token rings plus factorization work), run `iters` iterations
 *         in one system, with a snapshot started at the beginning of every
 *         second iteration, or none. The time of an iteration is the
 *         workload's own (start message to its final message), so the
 *         snapshot's file write counts only where it takes CPU from the
 *         workers; the first iteration warms up and is not counted.
 *         Runs alternate (none, snap, none, ...); medians of R runs.
 *   snapshot --service [rate] [n] [--reps R] [--dir D]
 *     (2) a request/response service under steady load: a driver thread
 *         sends `rate` requests per second (paced, open loop) to 4 server
 *         actors, which reply to a sink that records each latency; with a
 *         snapshot every 1000 requests, or none. p50/p99/max, medians.
 *
 * Prints one logfmt line per figure; SNAP_VERBOSE=1 also prints every
 * iteration's time to stderr.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "bench.h"

#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_TOK URA_ATOM("tok")
#define A_INC URA_ATOM("inc")
#define A_GET URA_ATOM("get")
#define A_CALC URA_ATOM("calc")
#define A_REQ URA_ATOM("req")
#define A_RESP URA_ATOM("resp")

static _Atomic uint64_t t_end;      /* when the running workload finished */
static _Atomic int64_t check;       /* its result, checked */

static void finish(int64_t result)
{
	atomic_store(&check, result);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	atomic_store(&t_end, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* ---- pingpong ------------------------------------------------------- */

typedef struct { int64_t left; ura_ref peer; } pp_state;

static void pp_hit(ura_ctx *cx, const ura_msg *m)
{
	pp_state *s = ura_state(cx);
	if (ura_msg_tag(m) == A_PING) {
		ura_reply(cx, A_PONG);
		if (ura_arg_i64(m, 0) == 0)
			ura_stop(cx);
		return;
	}
	if (--s->left < 0) {
		finish(1);
		ura_stop(cx);
		return;
	}
	ura_send(cx, s->peer, A_PING, s->left);
}
URA_BEHAVIOR(pp_beh, URA_ON(A_PING, "i", pp_hit), URA_ON(A_PONG, "", pp_hit));
static const ura_class pp_class = { .name = "pp", .state_size = sizeof(pp_state), .initial = &pp_beh };

static void pingpong(ura_system *sys, int64_t n)
{
	ura_ref a, b;
	B_CHECK(ura_spawn(sys, &pp_class, &(pp_state){ 0 }, &b));
	B_CHECK(ura_spawn(sys, &pp_class, &(pp_state){ .left = n, .peer = b }, &a));
	B_CHECK(ura_send(sys, a, A_PONG));
}

/* ---- thread_ring ---------------------------------------------------- */

typedef struct { ura_ref next; } ring_state;

static void ring_tok(ura_ctx *cx, const ura_msg *m)
{
	ring_state *s = ura_state(cx);
	int64_t left = ura_arg_i64(m, 0);
	if (left < 0) { /* the stop wave */
		if (left == -1)
			finish(2);
		else
			ura_send(cx, s->next, A_TOK, left + 1);
		ura_stop(cx);
		return;
	}
	ura_send(cx, s->next, A_TOK, left ? left - 1 : -503);
}
static void ring_link(ura_ctx *cx, const ura_msg *m)
{
	((ring_state *)ura_state(cx))->next = ura_arg_ref(m, 0);
}
URA_BEHAVIOR(ring_beh2, URA_ON(A_TOK, "i", ring_tok), URA_ON(A_PONG, "r", ring_link));
static const ura_class ring_class = { .name = "ring", .state_size = sizeof(ring_state), .initial = &ring_beh2 };

static void thread_ring(ura_system *sys, int64_t n)
{
	ura_ref r[503];
	for (int i = 502; i >= 0; i--)
		B_CHECK(ura_spawn(sys, &ring_class, &(ring_state){ i == 502 ? URA_NOREF : r[i + 1] }, &r[i]));
	B_CHECK(ura_send(sys, r[502], A_PONG, r[0]));
	B_CHECK(ura_send(sys, r[0], A_TOK, n));
}

/* ---- count ---------------------------------------------------------- */

typedef struct { int64_t n; } counter_state;

static void cnt_inc(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	((counter_state *)ura_state(cx))->n++;
}
static void cnt_get(ura_ctx *cx, const ura_msg *m)
{
	finish(((counter_state *)ura_state(cx))->n == ura_arg_i64(m, 0) ? 3 : -3);
	ura_stop(cx);
}
URA_BEHAVIOR(cnt_beh, URA_ON(A_INC, "", cnt_inc), URA_ON(A_GET, "i", cnt_get));
static const ura_class cnt_class = { .name = "counter", .state_size = sizeof(counter_state), .initial = &cnt_beh };

typedef struct { int64_t n; ura_ref c; } prod_state;
static void prod_go(ura_ctx *cx, const ura_msg *m)
{
	prod_state *s = ura_state(cx);
	(void)m;
	for (int64_t i = 0; i < s->n; i++)
		ura_send(cx, s->c, A_INC);
	ura_send(cx, s->c, A_GET, s->n);
	ura_stop(cx);
}
URA_BEHAVIOR(prod_beh, URA_ON(A_PING, "", prod_go));
static const ura_class prod_class = { .name = "producer", .state_size = sizeof(prod_state), .initial = &prod_beh };

static void count(ura_system *sys, int64_t n)
{
	ura_ref c, p;
	B_CHECK(ura_spawn(sys, &cnt_class, NULL, &c));
	B_CHECK(ura_spawn(sys, &prod_class, &(prod_state){ n, c }, &p));
	B_CHECK(ura_send(sys, p, A_PING));
}

/* ---- mixed: rings passing tokens, plus factorization work ------------- */

typedef struct { int64_t done, want; } coll_state;
static void coll_done(ura_ctx *cx, const ura_msg *m)
{
	coll_state *s = ura_state(cx);
	(void)m;
	if (++s->done == s->want) {
		finish(4);
		ura_stop(cx);
	}
}
URA_BEHAVIOR(coll_beh, URA_ON(A_PONG, "", coll_done));
static const ura_class coll_class = { .name = "collector", .state_size = sizeof(coll_state), .initial = &coll_beh };

typedef struct { ura_ref next, coll; int64_t id; } link_state;
static _Atomic uint64_t fsink; /* keeps the factorization from being optimized out */
static uint64_t factor(uint64_t n)
{
	uint64_t f = 0;
	for (uint64_t d = 2; d * d <= n; d++)
		while (n % d == 0) { f += d; n /= d; }
	return f + (n > 1 ? n : 0);
}
static void link_tok(ura_ctx *cx, const ura_msg *m)
{
	link_state *s = ura_state(cx);
	int64_t left = ura_arg_i64(m, 0);
	if (left % 8 == 0) /* some work now and then */
		atomic_store_explicit(&fsink, factor(86028121u + (uint64_t)left), memory_order_relaxed);
	if (left == 0) {
		ura_send(cx, s->coll, A_PONG);
		return;
	}
	ura_send(cx, s->next, A_TOK, left - 1);
}
static void link_set(ura_ctx *cx, const ura_msg *m)
{
	((link_state *)ura_state(cx))->next = ura_arg_ref(m, 0);
}
static void link_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
URA_BEHAVIOR(link_beh, URA_ON(A_TOK, "i", link_tok), URA_ON(A_PONG, "r", link_set),
	     URA_ON(A_GET, "", link_stop));
static const ura_class link_class = { .name = "link", .state_size = sizeof(link_state), .initial = &link_beh };

static ura_ref mixed_links[8][100];
static void mixed(ura_system *sys, int64_t n)
{
	ura_ref coll;
	B_CHECK(ura_spawn(sys, &coll_class, &(coll_state){ 0, 8 * 4 }, &coll));
	for (int r = 0; r < 8; r++) {
		for (int i = 0; i < 100; i++)
			B_CHECK(ura_spawn(sys, &link_class, &(link_state){ .coll = coll, .id = i }, &mixed_links[r][i]));
		for (int i = 0; i < 100; i++)
			B_CHECK(ura_send(sys, mixed_links[r][i], A_PONG, mixed_links[r][(i + 1) % 100]));
		for (int t = 0; t < 4; t++)
			B_CHECK(ura_send(sys, mixed_links[r][t * 25], A_TOK, n / 32));
	}
}
static void mixed_cleanup(ura_system *sys)
{
	for (int r = 0; r < 8; r++)
		for (int i = 0; i < 100; i++)
			ura_send(sys, mixed_links[r][i], A_GET);
}

/* ---- (1) run times -------------------------------------------------- */

static const ura_class *const all_classes[] = {
	&pp_class, &ring_class, &cnt_class, &prod_class, &coll_class, &link_class,
};

static ura_system *new_system(void)
{
	ura_system *sys = b_system();
	for (size_t i = 0; i < sizeof all_classes / sizeof all_classes[0]; i++) {
		/* The states' bytes: this benchmark never restores, so refs
		 * need no rewriting. */
		B_CHECK(ura_snap_register(sys, &(ura_snap_class){ .cls = all_classes[i] }));
	}
	return sys;
}

struct snapfig {
	pthread_mutex_t lock;
	double capture_ms[4096], total_ms[4096], msgs[4096], mb[4096], actors[4096];
	int n, failed;
};
static struct snapfig figs = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void on_done(void *ud, const ura_snap_info *info)
{
	(void)ud;
	pthread_mutex_lock(&figs.lock);
	if (info->status < 0) {
		if (!figs.failed++)
			fprintf(stderr, "snapshot failed: %s\n", info->error ? info->error : "?");
	} else if (figs.n < 4096) {
		figs.msgs[figs.n] = (double)info->messages;
		figs.actors[figs.n] = (double)info->actors;
		figs.mb[figs.n] = (double)info->bytes / 1e6;
		figs.capture_ms[figs.n] = (double)info->capture_ns / 1e6;
		figs.total_ms[figs.n++] = (double)info->duration_ns / 1e6;
	}
	pthread_mutex_unlock(&figs.lock);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct workload {
	const char *name;
	void (*start)(ura_system *, int64_t);
	int64_t n, want;
	void (*cleanup)(ura_system *);
};

static double run_once(const struct workload *wl, int iters, int snaps, const char *path)
{
	ura_system *sys = new_system();
	double total = 0;
	for (int it = 0; it < iters; it++) {
		atomic_store(&t_end, 0);
		atomic_store(&check, 0);
		double t0 = b_now();
		wl->start(sys, wl->n);
		if (snaps && it % 2 == 1) {
			int rc = ura_snapshot(sys, path, &(ura_snap_opts){ .done = on_done });
			if (rc < 0)
				fprintf(stderr, "ura_snapshot: %s\n", ura_strerror(rc));
		}
		B_CHECK(ura_system_await(sys));
		uint64_t end = atomic_load(&t_end);
		if (!end || atomic_load(&check) != wl->want)
			b_fail(wl->name);
		if (it) /* iteration 0 warms up (pools, pages, caches) */
			total += (double)end * 1e-9 - t0;
		if (getenv("SNAP_VERBOSE"))
			fprintf(stderr, "%s iter %d snap=%d %.2f ms\n", wl->name, it, snaps && it % 2 == 1,
				((double)end * 1e-9 - t0) * 1e3);
		if (wl->cleanup) {
			wl->cleanup(sys);
			B_CHECK(ura_system_await(sys));
		}
	}
	if (ura_system_destroy(sys) < 0)
		b_fail("destroy");
	return total;
}

static void times(int iters, int reps, const char *dir, const char *only)
{
	static const struct workload wls[] = {
		{ "pingpong", pingpong, 600000, 1, NULL },
		{ "thread_ring", thread_ring, 1500000, 2, NULL },
		{ "count", count, 1000000, 3, NULL },
		{ "mixed", mixed, 80000, 4, mixed_cleanup },
	};
	char path[512];
	snprintf(path, sizeof path, "%s/ura-bench.snap", dir);
	for (size_t w = 0; w < sizeof wls / sizeof wls[0]; w++) {
		if (only && strcmp(only, wls[w].name))
			continue;
		double none[64], snap[64];
		figs.n = figs.failed = 0;
		for (int r = 0; r < reps && r < 64; r++) {
			none[r] = run_once(&wls[w], iters, 0, path);
			snap[r] = run_once(&wls[w], iters, 1, path);
		}
		int nf = figs.n;
		double cap = median(figs.capture_ms, nf), tot = median(figs.total_ms, nf);
		double mn = median(none, reps), ms = median(snap, reps);
		double msgs = median(figs.msgs, nf), mb = median(figs.mb, nf);
		double actors = median(figs.actors, nf);
		printf("bench=snapshot workload=%s iters=%d reps=%d none_s=%.4f snap_s=%.4f ratio=%.3f "
		       "snapshots=%d failed=%d capture_ms_p50=%.2f written_ms_p50=%.2f "
		       "actors_saved_p50=%.0f msgs_saved_p50=%.0f file_mb_p50=%.2f\n",
		       wls[w].name, iters, reps, mn, ms, ms / mn, nf, figs.failed, cap, tot, actors,
		       msgs, mb);
		fflush(stdout);
	}
	unlink(path);
}

/* ---- (2) a service under steady load --------------------------------- */

#define NSERVERS 4
typedef struct { int64_t served; uint64_t kv[64]; } server_state;
typedef struct { int64_t got; } sink_state;

static uint64_t *lat;      /* per request, ns */
static _Atomic int64_t got;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void srv_req(ura_ctx *cx, const ura_msg *m)
{
	server_state *s = ura_state(cx);
	int64_t id = ura_arg_i64(m, 0);
	s->served++;
	s->kv[(uint64_t)id % 64] += (uint64_t)id; /* a little state to save */
	ura_send(cx, ura_arg_ref(m, 2), A_RESP, id, ura_arg_i64(m, 1));
}
URA_BEHAVIOR(srv_beh, URA_ON(A_REQ, "iir", srv_req));
static const ura_class srv_class = { .name = "server", .state_size = sizeof(server_state), .initial = &srv_beh };

static void sink_resp(ura_ctx *cx, const ura_msg *m)
{
	sink_state *s = ura_state(cx);
	int64_t id = ura_arg_i64(m, 0);
	lat[id] = now_ns() - (uint64_t)ura_arg_i64(m, 1);
	s->got++;
	atomic_fetch_add_explicit(&got, 1, memory_order_relaxed);
}
URA_BEHAVIOR(sink_beh, URA_ON(A_RESP, "ii", sink_resp));
static const ura_class sink_class = { .name = "sink", .state_size = sizeof(sink_state), .initial = &sink_beh };

static int cmp_u(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void service_once(int64_t rate, int64_t n, int snaps, const char *path, double out[3],
			 int *taken, int *busy)
{
	ura_system *sys = b_system();
	B_CHECK(ura_snap_register(sys, &(ura_snap_class){ .cls = &srv_class }));
	B_CHECK(ura_snap_register(sys, &(ura_snap_class){ .cls = &sink_class }));
	ura_ref srv[NSERVERS], sink;
	for (int i = 0; i < NSERVERS; i++)
		B_CHECK(ura_spawn(sys, &srv_class, NULL, &srv[i]));
	B_CHECK(ura_spawn(sys, &sink_class, NULL, &sink));
	atomic_store(&got, 0);
	uint64_t t0 = now_ns(), gap = 1000000000u / (uint64_t)rate;
	*taken = *busy = 0;
	for (int64_t i = 0; i < n; i++) {
		/* Sleep, not spin, until the request is due: a spinning driver
		 * takes a CPU from the workers on a small machine. */
		uint64_t due = t0 + (uint64_t)i * gap;
		if (now_ns() < due) {
			struct timespec ts = { (time_t)(due / 1000000000u), (long)(due % 1000000000u) };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		B_CHECK(ura_send(sys, srv[i % NSERVERS], A_REQ, i, (int64_t)now_ns(), sink));
		if (snaps && i % 1000 == 999) {
			int rc = ura_snapshot(sys, path, &(ura_snap_opts){ .done = on_done });
			if (rc == -EBUSY)
				++*busy; /* the previous one is still being written */
			else if (rc < 0)
				fprintf(stderr, "ura_snapshot: %s\n", ura_strerror(rc));
			else
				++*taken;
		}
	}
	B_CHECK(ura_system_await(sys));
	if (atomic_load(&got) != n)
		b_fail("service: lost replies");
	if (ura_system_destroy(sys) < 0)
		b_fail("destroy");
	/* The first 10% warm up. */
	int64_t skip = n / 10, k = n - skip;
	qsort(lat + skip, (size_t)k, sizeof *lat, cmp_u);
	out[0] = (double)lat[skip + k / 2] / 1e3;
	out[1] = (double)lat[skip + (k * 99) / 100] / 1e3;
	out[2] = (double)lat[n - 1] / 1e3;
}

static void service(int64_t rate, int64_t n, int reps, const char *dir)
{
	char path[512];
	snprintf(path, sizeof path, "%s/ura-service.snap", dir);
	lat = calloc((size_t)n, sizeof *lat);
	if (!lat)
		b_fail("memory");
	double f[2][3][64];
	int taken = 0, busy = 0;
	figs.n = figs.failed = 0;
	for (int r = 0; r < reps && r < 64; r++) {
		for (int s = 0; s < 2; s++) {
			double o[3];
			int t, b;
			service_once(rate, n, s, path, o, &t, &b);
			for (int q = 0; q < 3; q++)
				f[s][q][r] = o[q];
			if (s) {
				taken += t;
				busy += b;
			}
		}
	}
	const char *names[2] = { "none", "every1000" };
	double base[3];
	for (int s = 0; s < 2; s++) {
		double p50 = median(f[s][0], reps), p99 = median(f[s][1], reps), mx = median(f[s][2], reps);
		if (!s) {
			base[0] = p50;
			base[1] = p99;
			base[2] = mx;
		}
		printf("bench=snapshot_service snapshots=%s rate=%lld n=%lld reps=%d p50_us=%.1f p99_us=%.1f "
		       "max_us=%.1f p50_ratio=%.3f p99_ratio=%.3f",
		       names[s], (long long)rate, (long long)n, reps, p50, p99, mx, p50 / base[0],
		       p99 / base[1]);
		if (s)
			printf(" taken=%d skipped_busy=%d failed=%d capture_ms_p50=%.2f written_ms_p50=%.2f",
			       taken, busy, figs.failed, median(figs.capture_ms, figs.n),
			       median(figs.total_ms, figs.n));
		printf("\n");
	}
	free(lat);
	unlink(path);
}

int main(int argc, char **argv)
{
	int reps = 5;
	const char *dir = "/tmp", *only = NULL;
	for (int a = 1; a + 1 < argc; a++) {
		if (!strcmp(argv[a], "--reps"))
			reps = atoi(argv[a + 1]);
		else if (!strcmp(argv[a], "--dir"))
			dir = argv[a + 1];
		else if (!strcmp(argv[a], "--only"))
			only = argv[a + 1];
	}
	if (reps < 1)
		reps = 1;
	if (b_flag(argc, argv, "--service")) {
		int64_t rate = 0, n = 0;
		int k = 0;
		for (int a = 1; a < argc; a++) {
			if (argv[a][0] == '-') {
				a += strcmp(argv[a], "--service") != 0;
				continue;
			}
			if (k++ == 0)
				rate = atoll(argv[a]);
			else
				n = atoll(argv[a]);
		}
		service(rate > 0 ? rate : 20000, n > 0 ? n : 100000, reps, dir);
		return 0;
	}
	int iters = 0;
	for (int a = 1; a < argc; a++) {
		if (argv[a][0] == '-') {
			a++;
			continue;
		}
		iters = atoi(argv[a]);
		break;
	}
	times(iters > 0 ? iters : 10, reps, dir, only);
	return 0;
}
