/*
 * wakeup.c - how fast can one io_uring worker wake a peer that sleeps in
 * io_uring_submit_and_wait_timeout()?
 *
 * Two threads ping-pong N round trips.  Each owns a ring (created on its
 * own thread; SINGLE_ISSUER|DEFER_TASKRUN, falling back to COOP_TASKRUN,
 * then 0) and sleeps in a bounded wait (default 50 ms).  Wake mechanisms:
 *
 *   eventfd : write(2) to the peer's eventfd; the peer keeps a multishot
 *             POLL_ADD (POLLIN) armed on it and drains it non-blockingly
 *             when the CQE arrives (re-arming if IORING_CQE_F_MORE is clear).
 *   msgring : IORING_OP_MSG_RING from the waker's own ring to the peer's
 *             ring fd, IOSQE_CQE_SKIP_SUCCESS, io_uring_submit().
 *
 * Sleep protocol (as a runtime would do it):
 *   sleeper: sleeping = 1 (seq_cst); recheck turn; wait (bounded)
 *   waker  : turn = v (release); fence(seq_cst);
 *            if (sleeping && xchg(sleeping, 0)) signal
 *
 * Placements: cross-CPU (CPU 0 / CPU 1) and same-CPU (both on CPU 0).
 * Per mode: p50 / p99 ns per round trip (each round trip timed with
 * CLOCK_MONOTONIC), signals sent per round trip, backstop timeouts, and
 * the waker-side cost of one signal when the target is awake (target
 * spins in io_uring_get_events() + drain; cross-CPU only).  Each mode runs
 * --reps times (default 3); medians are printed.
 *
 * Build: gcc -O2 -std=c11 -D_GNU_SOURCE bench/wakeup.c -o /tmp/wakeup -luring -lpthread
 * Run:   /tmp/wakeup [--n 20000] [--reps 3] [--k 20000] [--wait-ms 50]
 *                    [--setup defer|coop|plain] [--pollidle] [--verbose]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif
#ifndef IORING_SETUP_COOP_TASKRUN
#define IORING_SETUP_COOP_TASKRUN (1U << 8)
#endif

enum { TAG_EFD_POLL = 1, TAG_MSG_RECV = 2, TAG_MSG_SEND = 3 };
enum { MECH_EVENTFD = 0, MECH_MSGRING = 1 };
enum { SETUP_DEFER = 0, SETUP_COOP = 1, SETUP_PLAIN = 2 };

static const char *const setup_names[] = {
	"SINGLE_ISSUER|DEFER_TASKRUN", "COOP_TASKRUN", "none (flags=0)"
};
static const char *const mech_names[] = { "eventfd+mshot-poll", "msg_ring" };

/* ---- options ---------------------------------------------------------- */
static long opt_n = 20000;
static int opt_reps = 3;
static long opt_k = 20000;
static long opt_wait_ms = 50;
static int opt_setup = SETUP_DEFER;
static int opt_pollidle;
static int opt_verbose;

/* ---- per-thread / shared state --------------------------------------- */
struct side {
	struct io_uring ring;
	int ring_ok;
	int setup_used;
	int efd;
	int cpu;
	_Atomic int sleeping;
	/* stats */
	long signals;   /* signals this side sent */
	long timeouts;  /* backstop expiries while waiting */
	long wakeups;   /* returns from the wait */
	long recv_msgs; /* MSG_RING CQEs received */
	long poll_rearms;
	char pad[64];
};

struct run {
	int mech;
	int measure_signal; /* also do the awake-target signal cost phase */
	struct side s[2];
	_Atomic uint64_t turn;
	_Atomic int spin_ready;
	_Atomic int spin_stop;
	_Atomic int fatal;
	pthread_barrier_t bar;
	uint64_t *samples; /* round-trip ns, filled by side 0 */
	long nsamples;
	double sig_ns; /* median over batches of ns/signal */
	long sig_sent;
	long sig_recv;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "wakeup: %s: %s\n", what, strerror(err));
	exit(1);
}

static void pin_to(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int r = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (r)
		die("pthread_setaffinity_np", r);
}

/* Ring setup ladder, starting at `start`. Returns the level used or -errno. */
static int setup_ring(struct io_uring *ring, int start)
{
	static const unsigned flags[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int last = -EINVAL;
	for (int lvl = start; lvl <= SETUP_PLAIN; lvl++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof(p));
		p.flags = flags[lvl] | IORING_SETUP_CQSIZE;
		p.cq_entries = 8192;
		int r = io_uring_queue_init_params(256, ring, &p);
		if (r == 0)
			return lvl;
		last = r;
	}
	return last;
}

static struct io_uring_sqe *get_sqe(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!sqe) {
		io_uring_submit(ring);
		sqe = io_uring_get_sqe(ring);
	}
	if (!sqe)
		die("io_uring_get_sqe", EBUSY);
	return sqe;
}

static void arm_efd_poll(struct side *me)
{
	struct io_uring_sqe *sqe = get_sqe(&me->ring);
	io_uring_prep_poll_multishot(sqe, me->efd, POLLIN);
	io_uring_sqe_set_data64(sqe, TAG_EFD_POLL);
}

/* Reap every CQE currently visible. Re-arms the eventfd poll if needed. */
static void drain_cqes(struct run *R, struct side *me)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	int rearm = 0;
	io_uring_for_each_cqe(&me->ring, head, cqe) {
		n++;
		switch (cqe->user_data) {
		case TAG_EFD_POLL: {
			if (cqe->res < 0) {
				fprintf(stderr, "wakeup: eventfd poll CQE res=%d (%s)\n",
					cqe->res, strerror(-cqe->res));
				atomic_store(&R->fatal, 1);
			}
			uint64_t v;
			ssize_t rr = read(me->efd, &v, sizeof(v));
			(void)rr; /* EAGAIN is fine: already drained */
			if (!(cqe->flags & IORING_CQE_F_MORE))
				rearm = 1;
			break;
		}
		case TAG_MSG_RECV:
			me->recv_msgs++;
			break;
		case TAG_MSG_SEND:
			/* only failures produce a CQE (CQE_SKIP_SUCCESS) */
			if (cqe->res < 0) {
				fprintf(stderr, "wakeup: MSG_RING send failed: %s\n",
					strerror(-cqe->res));
				atomic_store(&R->fatal, 1);
			}
			break;
		default:
			break; /* LIBURING_UDATA_TIMEOUT on old kernels, etc. */
		}
	}
	io_uring_cq_advance(&me->ring, n);
	if (rearm && !atomic_load(&R->fatal)) {
		me->poll_rearms++;
		arm_efd_poll(me);
		io_uring_submit(&me->ring);
	}
}

/* The raw signal, no protocol. */
static void send_signal(struct run *R, struct side *me, struct side *peer)
{
	if (R->mech == MECH_EVENTFD) {
		uint64_t one = 1;
		if (write(peer->efd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			die("eventfd write", errno);
	} else {
		struct io_uring_sqe *sqe = get_sqe(&me->ring);
		io_uring_prep_msg_ring(sqe, peer->ring.ring_fd, 0, TAG_MSG_RECV, 0);
		io_uring_sqe_set_data64(sqe, TAG_MSG_SEND);
		sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
		int r = io_uring_submit(&me->ring);
		if (r < 0)
			die("io_uring_submit(msg_ring)", -r);
	}
}

/* Waker side of the protocol. */
static void publish_and_wake(struct run *R, struct side *me, struct side *peer,
			     uint64_t v)
{
	atomic_store_explicit(&R->turn, v, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&peer->sleeping, memory_order_relaxed) &&
	    atomic_exchange_explicit(&peer->sleeping, 0, memory_order_acq_rel)) {
		me->signals++;
		send_signal(R, me, peer);
	}
}

/* Sleeper side: return once turn == want. Never spins before sleeping. */
static void wait_turn(struct run *R, struct side *me, uint64_t want)
{
	struct __kernel_timespec ts = {
		.tv_sec = opt_wait_ms / 1000,
		.tv_nsec = (opt_wait_ms % 1000) * 1000000L,
	};
	for (;;) {
		if (atomic_load_explicit(&R->turn, memory_order_acquire) == want)
			return;
		if (atomic_load_explicit(&R->fatal, memory_order_relaxed))
			return;
		atomic_store(&me->sleeping, 1); /* seq_cst */
		if (atomic_load(&R->turn) == want) { /* seq_cst recheck */
			atomic_store(&me->sleeping, 0);
			return;
		}
		struct io_uring_cqe *cqe = NULL;
		int r = io_uring_submit_and_wait_timeout(&me->ring, &cqe, 1, &ts, NULL);
		atomic_store(&me->sleeping, 0);
		me->wakeups++;
		if (r == -ETIME) {
			me->timeouts++;
		} else if (r < 0 && r != -EINTR && r != -EAGAIN) {
			fprintf(stderr, "wakeup: submit_and_wait_timeout: %s\n",
				strerror(-r));
			atomic_store(&R->fatal, 1);
			return;
		}
		drain_cqes(R, me);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

struct targ {
	struct run *R;
	int idx;
};

static void *thread_main(void *p)
{
	struct targ *ta = p;
	struct run *R = ta->R;
	int idx = ta->idx;
	struct side *me = &R->s[idx], *peer = &R->s[1 - idx];

	pin_to(me->cpu);
	/* Ring is created on its owner thread (SINGLE_ISSUER). */
	int lvl = setup_ring(&me->ring, opt_setup);
	if (lvl < 0) {
		fprintf(stderr, "wakeup: io_uring_queue_init_params: %s\n", strerror(-lvl));
		atomic_store(&R->fatal, 1);
	} else {
		me->ring_ok = 1;
		me->setup_used = lvl;
	}
	me->efd = -1;
	if (me->ring_ok && R->mech == MECH_EVENTFD) {
		me->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (me->efd < 0)
			die("eventfd", errno);
		arm_efd_poll(me);
		int r = io_uring_submit(&me->ring);
		if (r < 0)
			die("io_uring_submit(poll)", -r);
	}
	pthread_barrier_wait(&R->bar); /* fds and rings visible to peer */
	if (atomic_load(&R->fatal))
		goto out;

	/* ---- phase 1: ping-pong with sleeping peers ---- */
	long warm = opt_n / 10 < 500 ? 500 : opt_n / 10;
	long total = warm + opt_n;
	for (long i = 0; i < total && !atomic_load(&R->fatal); i++) {
		uint64_t base = 2 * (uint64_t)i;
		if (idx == 0) {
			uint64_t t0 = now_ns();
			publish_and_wake(R, me, peer, base + 1);
			wait_turn(R, me, base + 2);
			uint64_t t1 = now_ns();
			if (i >= warm)
				R->samples[R->nsamples++] = t1 - t0;
		} else {
			wait_turn(R, me, base + 1);
			publish_and_wake(R, me, peer, base + 2);
		}
	}
	pthread_barrier_wait(&R->bar);

	/* ---- phase 2: signal cost to an awake, spinning target ---- */
	if (R->measure_signal && !atomic_load(&R->fatal)) {
		if (idx == 1) {
			/* target: spin, running task_work and draining */
			long before = me->recv_msgs;
			atomic_store(&R->spin_ready, 1);
			while (!atomic_load_explicit(&R->spin_stop, memory_order_acquire)) {
				io_uring_get_events(&me->ring);
				drain_cqes(R, me);
			}
			/* collect stragglers (MSG_RING: one CQE per signal) */
			if (R->mech == MECH_MSGRING) {
				uint64_t deadline = now_ns() + 200000000ull;
				while (me->recv_msgs - before < R->sig_sent &&
				       now_ns() < deadline) {
					io_uring_get_events(&me->ring);
					drain_cqes(R, me);
				}
			}
			R->sig_recv = me->recv_msgs - before;
		} else {
			while (!atomic_load(&R->spin_ready))
				;
			enum { BATCH = 500 };
			long nb = opt_k / BATCH < 1 ? 1 : opt_k / BATCH;
			double *per = calloc((size_t)nb, sizeof(*per));
			if (!per)
				die("calloc", ENOMEM);
			for (int w = 0; w < BATCH; w++) /* warm-up */
				send_signal(R, me, peer);
			long sent = BATCH;
			for (long b = 0; b < nb; b++) {
				uint64_t t0 = now_ns();
				for (int j = 0; j < BATCH; j++)
					send_signal(R, me, peer);
				uint64_t t1 = now_ns();
				per[b] = (double)(t1 - t0) / BATCH;
				sent += BATCH;
			}
			qsort(per, (size_t)nb, sizeof(*per), cmp_dbl);
			R->sig_ns = per[nb / 2];
			R->sig_sent = sent;
			free(per);
			/* pick up any sender-side failure CQEs */
			io_uring_get_events(&me->ring);
			drain_cqes(R, me);
			atomic_store_explicit(&R->spin_stop, 1, memory_order_release);
		}
	}
	pthread_barrier_wait(&R->bar);
out:
	if (me->ring_ok)
		io_uring_queue_exit(&me->ring);
	if (me->efd >= 0)
		close(me->efd);
	return NULL;
}

struct result {
	double p50, p99, sig_per_rt, timeouts, sig_ns;
	int setup_used;
	int ok;
};

static struct result run_once(int mech, int cpu0, int cpu1)
{
	struct result res;
	memset(&res, 0, sizeof(res));
	struct run *R = aligned_alloc(64, (sizeof(struct run) + 63) / 64 * 64);
	if (!R)
		die("aligned_alloc", ENOMEM);
	memset(R, 0, sizeof(*R));
	R->mech = mech;
	R->measure_signal = cpu0 != cpu1;
	R->s[0].cpu = cpu0;
	R->s[1].cpu = cpu1;
	R->samples = calloc((size_t)opt_n, sizeof(uint64_t));
	if (!R->samples)
		die("calloc", ENOMEM);
	pthread_barrier_init(&R->bar, NULL, 2);

	pthread_t th[2];
	struct targ ta[2] = { { R, 0 }, { R, 1 } };
	for (int i = 0; i < 2; i++) {
		int r = pthread_create(&th[i], NULL, thread_main, &ta[i]);
		if (r)
			die("pthread_create", r);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);

	if (!atomic_load(&R->fatal) && R->nsamples > 0) {
		qsort(R->samples, (size_t)R->nsamples, sizeof(uint64_t), cmp_u64);
		res.p50 = (double)R->samples[R->nsamples * 50 / 100];
		res.p99 = (double)R->samples[R->nsamples * 99 / 100];
		long warm = opt_n / 10 < 500 ? 500 : opt_n / 10;
		long rts = warm + opt_n;
		res.sig_per_rt = (double)(R->s[0].signals + R->s[1].signals) / (double)rts;
		res.timeouts = (double)(R->s[0].timeouts + R->s[1].timeouts);
		res.sig_ns = R->measure_signal ? R->sig_ns : -1;
		res.setup_used = R->s[0].setup_used;
		res.ok = 1;
		if (mech == MECH_MSGRING && R->measure_signal && R->sig_recv != R->sig_sent)
			fprintf(stderr, "wakeup: warning: %ld MSG_RING signals sent, %ld received\n",
				R->sig_sent, R->sig_recv);
		if (opt_verbose)
			fprintf(stderr,
				"  [%s cpus %d,%d] p50 %.0f p99 %.0f sig/rt %.2f timeouts %.0f "
				"wakeups %ld+%ld rearms %ld+%ld sig_ns %.0f\n",
				mech_names[mech], cpu0, cpu1, res.p50, res.p99, res.sig_per_rt,
				res.timeouts, R->s[0].wakeups, R->s[1].wakeups,
				R->s[0].poll_rearms, R->s[1].poll_rearms, res.sig_ns);
	}
	pthread_barrier_destroy(&R->bar);
	free(R->samples);
	free(R);
	return res;
}

static double median3(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_dbl);
	return v[n / 2];
}

/* Probe MSG_RING support: opcode probe plus a real message to ourselves. */
static int msg_ring_supported(void)
{
	struct io_uring ring;
	if (io_uring_queue_init(8, &ring, 0) < 0)
		return 0;
	int ok = 0;
	struct io_uring_probe *pr = io_uring_get_probe_ring(&ring);
	if (pr && io_uring_opcode_supported(pr, IORING_OP_MSG_RING)) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
		io_uring_prep_msg_ring(sqe, ring.ring_fd, 7, 42, 0);
		io_uring_sqe_set_data64(sqe, 1);
		io_uring_submit(&ring);
		struct io_uring_cqe *cqe;
		int seen = 0;
		for (int i = 0; i < 2; i++) {
			struct __kernel_timespec ts = { .tv_sec = 0, .tv_nsec = 100000000 };
			if (io_uring_wait_cqe_timeout(&ring, &cqe, &ts) < 0)
				break;
			if (cqe->user_data == 1 && cqe->res < 0) {
				seen = -1;
				io_uring_cqe_seen(&ring, cqe);
				break;
			}
			if (cqe->user_data == 42 && cqe->res == 7)
				seen = 1;
			io_uring_cqe_seen(&ring, cqe);
		}
		ok = seen == 1;
	}
	if (pr)
		io_uring_free_probe(pr);
	io_uring_queue_exit(&ring);
	return ok;
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [--n N] [--reps R] [--k K] [--wait-ms MS]\n"
		"          [--setup defer|coop|plain] [--pollidle] [--verbose]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--n") && v) {
			opt_n = atol(v); i++;
		} else if (!strcmp(a, "--reps") && v) {
			opt_reps = atoi(v); i++;
		} else if (!strcmp(a, "--k") && v) {
			opt_k = atol(v); i++;
		} else if (!strcmp(a, "--wait-ms") && v) {
			opt_wait_ms = atol(v); i++;
		} else if (!strcmp(a, "--setup") && v) {
			if (!strcmp(v, "defer")) opt_setup = SETUP_DEFER;
			else if (!strcmp(v, "coop")) opt_setup = SETUP_COOP;
			else if (!strcmp(v, "plain")) opt_setup = SETUP_PLAIN;
			else usage(argv[0]);
			i++;
		} else if (!strcmp(a, "--pollidle")) {
			opt_pollidle = 1;
		} else if (!strcmp(a, "--verbose") || !strcmp(a, "-v")) {
			opt_verbose = 1;
		} else {
			usage(argv[0]);
		}
	}
	if (opt_n < 1 || opt_reps < 1 || opt_reps > 99 || opt_k < 1 || opt_wait_ms < 1)
		usage(argv[0]);

	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int cross_ok = ncpu >= 2;

	int dma_fd = -1;
	if (opt_pollidle) {
		int32_t zero = 0;
		dma_fd = open("/dev/cpu_dma_latency", O_WRONLY | O_CLOEXEC);
		if (dma_fd < 0 || write(dma_fd, &zero, sizeof(zero)) != (ssize_t)sizeof(zero)) {
			fprintf(stderr, "wakeup: /dev/cpu_dma_latency: %s (continuing with default idle)\n",
				strerror(errno));
			if (dma_fd >= 0)
				close(dma_fd);
			dma_fd = -1;
		}
	}

	struct utsname u;
	uname(&u);
	struct io_uring probe_ring;
	int lvl = setup_ring(&probe_ring, opt_setup);
	if (lvl < 0) {
		printf("SKIP all: io_uring setup failed: %s\n", strerror(-lvl));
		return 0;
	}
	io_uring_queue_exit(&probe_ring);
	printf("kernel %s, %ld CPUs, ring setup: %s, wait backstop %ld ms, idle: %s\n",
	       u.release, ncpu, setup_names[lvl], opt_wait_ms,
	       dma_fd >= 0 ? "poll (cpu_dma_latency=0)" : "default");
	printf("n=%ld round trips x %d reps (medians shown), awake-signal k=%ld\n\n",
	       opt_n, opt_reps, opt_k);
	printf("%-20s %-5s %9s %9s %8s %8s %8s %12s\n", "mechanism", "cpus",
	       "p50_ns", "p99_ns", "p50_min", "p50_max", "sig/rt", "awake_sig_ns");

	int have_msg = msg_ring_supported();
	for (int mech = 0; mech < 2; mech++) {
		for (int pl = 0; pl < 2; pl++) {
			int c0 = 0, c1 = pl == 0 ? 1 : 0;
			const char *cpus = pl == 0 ? "0,1" : "0,0";
			if (pl == 0 && !cross_ok) {
				printf("%-20s %-5s SKIP (only one CPU online)\n", mech_names[mech], cpus);
				continue;
			}
			if (mech == MECH_MSGRING && !have_msg) {
				printf("%-20s %-5s SKIP (IORING_OP_MSG_RING unsupported)\n",
				       mech_names[mech], cpus);
				continue;
			}
			double p50[99], p99[99], spr[99], tmo[99], sig[99];
			int ok = 0;
			for (int r = 0; r < opt_reps; r++) {
				struct result x = run_once(mech, c0, c1);
				if (!x.ok)
					continue;
				p50[ok] = x.p50;
				p99[ok] = x.p99;
				spr[ok] = x.sig_per_rt;
				tmo[ok] = x.timeouts;
				sig[ok] = x.sig_ns;
				ok++;
			}
			if (!ok) {
				printf("%-20s %-5s SKIP (run failed)\n", mech_names[mech], cpus);
				continue;
			}
			double tsum = 0;
			for (int r = 0; r < ok; r++)
				tsum += tmo[r];
			double mn = p50[0], mx = p50[0];
			for (int r = 1; r < ok; r++) {
				if (p50[r] < mn) mn = p50[r];
				if (p50[r] > mx) mx = p50[r];
			}
			double ms = median3(sig, ok);
			char sigbuf[32];
			if (ms < 0)
				snprintf(sigbuf, sizeof(sigbuf), "-");
			else
				snprintf(sigbuf, sizeof(sigbuf), "%.0f", ms);
			printf("%-20s %-5s %9.0f %9.0f %8.0f %8.0f %8.2f %12s%s\n",
			       mech_names[mech], cpus, median3(p50, ok), median3(p99, ok),
			       mn, mx, median3(spr, ok), sigbuf,
			       tsum > 0 ? "  (backstop timeouts seen!)" : "");
			if (tsum > 0)
				printf("%-20s %-5s   %.0f backstop timeouts over %d reps\n", "", "",
				       tsum, ok);
		}
	}
	if (dma_fd >= 0)
		close(dma_fd);
	return 0;
}
