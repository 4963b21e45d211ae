/*
 * io_micro.c - the kernel mechanisms under ura's actor I/O, measured
 * (kernel-notes/io.md). Sections 1-5 use liburing directly; section 6 runs
 * ura itself.
 *
 *  1. io-wq: which operations io_uring hands to its helper threads, how
 *     many "iou-wrk" threads 64 concurrent operations bring, with and
 *     without IORING_REGISTER_IOWQ_MAX_WORKERS (5.15); where they may run
 *     with and without IORING_REGISTER_IOWQ_AFF (5.14); the cost of a hop.
 *  2. accept: multishot (5.19) against one SQE per connection, for a
 *     backlog of queued connections and for a client connecting in a loop;
 *     how a multishot accept ends (cancel; a full CQ).
 *  3. cancel: N pending recvs, one IORING_ASYNC_CANCEL_ANY (5.19), one
 *     CANCEL_FD|CANCEL_ALL, or N cancels by user_data; ring exit with
 *     requests in flight.
 *  4. CQ overflow: IORING_FEAT_NODROP (5.5), what submit returns while the
 *     overflow list is not empty, and what the overflow path costs.
 *  5. linked timeouts (5.5): the CQE pair and its order, lateness, and the
 *     cost per operation (also with 2000 other deadlines armed).
 *  6. ura: a 64-byte echo round trip over a socketpair on the io_uring and
 *     the epoll backend (raw io_uring, epoll and blocking calls beside it);
 *     the CQ budget's backlog (ura_stats.io_deferred); seccomp -> epoll.
 *
 * Each io-wq case runs on a fresh thread (io-wq belongs to the submitting
 * task), pinned to CPU 0, with a ring made the way ura makes one: SQ 256,
 * CQ 4096, SINGLE_ISSUER|DEFER_TASKRUN, else COOP_TASKRUN, else plain.
 * A sampler thread counts /proc/self/task/<tid>/comm entries that start
 * with "iou-wrk" every 100 us; the peak is reported. Timed figures are
 * medians over --reps repetitions, the cases interleaved within each.
 *
 * Build: ninja -C build bench/io_micro
 * Run:   build/bench/io_micro [--reps 3] [--dir /var/tmp] [--only 1,4,6]
 * Needs 2 CPUs for the affinity rows and a disk-backed --dir for the file
 * rows (on tmpfs, fsync is free and no read is ever cold).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ura.h>

#include "seccomp.h" /* tests/: block_io_uring() */

#ifndef IORING_SETUP_SINGLE_ISSUER
#define IORING_SETUP_SINGLE_ISSUER (1U << 12)
#endif
#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

#define MAXREPS 15
#define NOPS 64          /* concurrent operations in the io-wq cases */
#define FILE_KB 64       /* bytes per file operation */

static int g_reps = 3;
static const char *g_dir = "/var/tmp";
static char g_work[512];     /* g_dir/io_micro.<pid> */
static unsigned g_only = 0x7e; /* bit i: section i */
static int g_ncpu;

/* ---- helpers ---------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median, min and max of v[0..n). */
static double med(const double *v, int n, double *lo, double *hi)
{
	double s[MAXREPS * 64];
	if (n <= 0)
		return 0;
	memcpy(s, v, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_d);
	if (lo)
		*lo = s[0];
	if (hi)
		*hi = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double pct(double *v, int n, double p)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	int i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

static void pin(int cpu)
{
	if (cpu < 0 || cpu >= g_ncpu)
		return;
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&ts, &ts) != 0)
		;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "io_micro: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static unsigned g_features;

/* The ring as ura makes it (lib/ring/ring.c): DEFER, COOP, plain. */
static const char *ring_init(struct io_uring *r, unsigned sq, unsigned cq, int plain)
{
	static const struct {
		unsigned flags;
		const char *name;
	} lad[] = {
		{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN, "defer" },
		{ IORING_SETUP_COOP_TASKRUN, "coop" },
		{ 0, "plain" },
	};
	int rc = -EINVAL;
	for (unsigned i = plain ? 2 : 0; i < 3; i++) {
		struct io_uring_params p;
		memset(&p, 0, sizeof p);
		p.flags = lad[i].flags | IORING_SETUP_CQSIZE;
		p.cq_entries = cq;
		rc = io_uring_queue_init_params(sq, r, &p);
		if (rc == 0) {
			g_features = p.features;
			return lad[i].name;
		}
		if (rc != -EINVAL)
			break;
	}
	die("io_uring_queue_init_params", rc);
	return NULL;
}

static struct io_uring_sqe *sqe_get(struct io_uring *r)
{
	struct io_uring_sqe *s = io_uring_get_sqe(r);
	if (!s) {
		io_uring_submit(r);
		s = io_uring_get_sqe(r);
	}
	if (!s)
		die("io_uring_get_sqe", EBUSY);
	return s;
}

/* Waits for one CQE and returns it (consumed); -errno on failure. */
static int wait_one(struct io_uring *r, uint64_t *ud, unsigned *flags)
{
	struct io_uring_cqe *c;
	int rc;
	do
		rc = io_uring_wait_cqe(r, &c);
	while (rc == -EINTR);
	if (rc < 0)
		return rc;
	*ud = c->user_data;
	if (flags)
		*flags = c->flags;
	int res = c->res;
	io_uring_cqe_seen(r, c);
	return res;
}

/* ---- 1. io-wq --------------------------------------------------------- */

/* Counts this process's io-wq threads; the first one's Cpus_allowed_list
 * goes to aff (if given and empty). */
static int count_iowq(char *aff, size_t affsz)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[300], comm[32];
		snprintf(p, sizeof p, "/proc/self/task/%s/comm", e->d_name);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, comm, sizeof comm - 1);
		close(fd);
		if (k < 7 || strncmp(comm, "iou-wrk", 7) != 0)
			continue;
		n++;
		if (aff && !aff[0]) {
			char st[4096];
			snprintf(p, sizeof p, "/proc/self/task/%s/status", e->d_name);
			fd = open(p, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			k = read(fd, st, sizeof st - 1);
			close(fd);
			if (k <= 0)
				continue;
			st[k] = 0;
			char *l = strstr(st, "Cpus_allowed_list:");
			if (l) {
				l += strlen("Cpus_allowed_list:");
				while (*l == ' ' || *l == '\t')
					l++;
				size_t j = 0;
				while (l[j] && l[j] != '\n' && j + 1 < affsz) {
					aff[j] = l[j];
					j++;
				}
				aff[j] = 0;
			}
		}
	}
	closedir(d);
	return n;
}

static _Atomic int samp_run;
static int samp_peak;
static char samp_aff[64];

static void *sampler(void *a)
{
	(void)a;
	while (atomic_load(&samp_run)) {
		int c = count_iowq(samp_aff, sizeof samp_aff);
		if (c > samp_peak)
			samp_peak = c;
		sleep_us(100);
	}
	return NULL;
}

static pthread_t samp_tid;
static void samp_start(void)
{
	samp_peak = 0;
	samp_aff[0] = 0;
	atomic_store(&samp_run, 1);
	pthread_create(&samp_tid, NULL, sampler, NULL);
}
static void samp_stop(void)
{
	atomic_store(&samp_run, 0);
	pthread_join(samp_tid, NULL);
}

/* Waits (up to 3 s) until no io-wq thread is left from an earlier case. */
static int iowq_settle(void)
{
	int n = 0;
	for (int i = 0; i < 300; i++) {
		n = count_iowq(NULL, 0);
		if (n == 0)
			return 0;
		sleep_us(10000);
	}
	return n;
}

enum { K_FSYNC, K_WRITE, K_WRITE1, K_READ_COLD, K_READ_WARM, K_OPEN, K_OPEN_CREAT,
       K_RECV_ASYNC };

struct wq_case {
	const char *name;
	int kind;
	unsigned cap;   /* max_workers {cap, cap}; 0: the defaults */
	int aff_cpu;    /* iowq_aff to this CPU; -1: none */
	/* results, per rep */
	double peak[MAXREPS], ms[MAXREPS];
	double resident; /* cold reads: % of pages resident before */
	char aff[64];
	unsigned lim[2]; /* the limits read back: bounded, unbounded */
};

static char g_buf[FILE_KB * 1024];
static char g_rbuf[NOPS][FILE_KB * 1024];

static void file_path(char *p, size_t n, const char *pre, int i)
{
	snprintf(p, n, "%s/%s%02d", g_work, pre, i);
}

static double resident_pct(int *fds)
{
	size_t pages = FILE_KB * 1024 / (size_t)sysconf(_SC_PAGESIZE), in = 0, all = 0;
	unsigned char vec[64];
	for (int i = 0; i < NOPS; i++) {
		void *m = mmap(NULL, FILE_KB * 1024, PROT_READ, MAP_SHARED, fds[i], 0);
		if (m == MAP_FAILED)
			return -1;
		if (mincore(m, FILE_KB * 1024, vec) == 0)
			for (size_t j = 0; j < pages && j < sizeof vec; j++) {
				in += vec[j] & 1;
				all++;
			}
		munmap(m, FILE_KB * 1024);
	}
	return all ? 100.0 * (double)in / (double)all : -1;
}

static void *wq_case_thread(void *arg)
{
	struct wq_case *c = arg;
	pin(0);
	struct io_uring ring;
	ring_init(&ring, 256, 4096, 0);
	if (c->cap) {
		unsigned v[2] = { c->cap, c->cap };
		int rc = io_uring_register_iowq_max_workers(&ring, v);
		if (rc < 0)
			die("io_uring_register_iowq_max_workers", rc);
	}
	if (c->aff_cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(c->aff_cpu, &s);
		int rc = io_uring_register_iowq_aff(&ring, sizeof s, &s);
		if (rc < 0)
			die("io_uring_register_iowq_aff", rc);
	}
	int fds[NOPS], peer[NOPS];
	char p[600];
	for (int i = 0; i < NOPS; i++) {
		fds[i] = peer[i] = -1;
		if (c->kind == K_RECV_ASYNC) {
			int sv[2];
			if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
				die("socketpair", errno);
			fds[i] = sv[0];
			peer[i] = sv[1];
		} else if (c->kind != K_OPEN && c->kind != K_OPEN_CREAT) {
			file_path(p, sizeof p, "f", c->kind == K_WRITE1 ? 0 : i);
			fds[i] = open(p, O_RDWR | O_CLOEXEC);
			if (fds[i] < 0)
				die(p, errno);
		}
	}
	/* Preparation, outside the measured window. */
	if (c->kind == K_FSYNC) {
		for (int i = 0; i < NOPS; i++)
			if (pwrite(fds[i], g_buf, sizeof g_buf, 0) != (ssize_t)sizeof g_buf)
				die("pwrite", errno);
	} else if (c->kind == K_READ_COLD || c->kind == K_READ_WARM) {
		for (int i = 0; i < NOPS; i++) {
			if (c->kind == K_READ_COLD) {
				fdatasync(fds[i]);
				posix_fadvise(fds[i], 0, 0, POSIX_FADV_DONTNEED);
			} else if (pread(fds[i], g_rbuf[i], sizeof g_rbuf[i], 0) < 0) {
				die("pread", errno);
			}
		}
		c->resident = resident_pct(fds);
	} else if (c->kind == K_OPEN_CREAT) {
		for (int i = 0; i < NOPS; i++) {
			file_path(p, sizeof p, "n", i);
			unlink(p);
		}
	}
	static char paths[NOPS][600];
	for (int i = 0; i < NOPS; i++)
		file_path(paths[i], sizeof paths[i], c->kind == K_OPEN_CREAT ? "n" : "f", i);

	samp_start();
	uint64_t t0 = now_ns();
	for (int i = 0; i < NOPS; i++) {
		struct io_uring_sqe *s = sqe_get(&ring);
		switch (c->kind) {
		case K_FSYNC:
			io_uring_prep_fsync(s, fds[i], 0);
			break;
		case K_WRITE:
			io_uring_prep_write(s, fds[i], g_buf, sizeof g_buf, 0);
			break;
		case K_WRITE1:
			io_uring_prep_write(s, fds[i], g_buf, sizeof g_buf,
					    (uint64_t)i * sizeof g_buf);
			break;
		case K_READ_COLD:
		case K_READ_WARM:
			io_uring_prep_read(s, fds[i], g_rbuf[i], sizeof g_rbuf[i], 0);
			break;
		case K_OPEN:
			io_uring_prep_openat(s, AT_FDCWD, paths[i], O_RDONLY | O_CLOEXEC, 0);
			break;
		case K_OPEN_CREAT:
			io_uring_prep_openat(s, AT_FDCWD, paths[i],
					     O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			break;
		case K_RECV_ASYNC:
			io_uring_prep_recv(s, fds[i], g_rbuf[i], 64, 0);
			s->flags |= IOSQE_ASYNC;
			break;
		}
		io_uring_sqe_set_data64(s, (uint64_t)i);
	}
	int rc = io_uring_submit(&ring);
	if (rc < 0)
		die("submit", rc);
	if (c->kind == K_RECV_ASYNC) {
		/* Let io-wq pick them up, then make them complete. */
		io_uring_get_events(&ring);
		sleep_us(20000);
		for (int i = 0; i < NOPS; i++)
			if (write(peer[i], "x", 1) != 1)
				die("write", errno);
	}
	int bad = 0;
	for (int i = 0; i < NOPS; i++) {
		uint64_t ud;
		int res = wait_one(&ring, &ud, NULL);
		if (res < 0)
			bad = res;
		if (c->kind == K_OPEN || c->kind == K_OPEN_CREAT) {
			if (res >= 0)
				close(res);
		}
	}
	uint64_t t1 = now_ns();
	samp_stop();
	if (bad)
		fprintf(stderr, "io_micro: %s: an operation failed: %s\n", c->name, strerror(-bad));
	c->ms[0] = (double)(t1 - t0) / 1e6;
	c->peak[0] = samp_peak;
	snprintf(c->aff, sizeof c->aff, "%s", samp_aff);
	unsigned v[2] = { 0, 0 };
	if (io_uring_register_iowq_max_workers(&ring, v) == 0) {
		c->lim[0] = v[0];
		c->lim[1] = v[1];
	}
	io_uring_queue_exit(&ring);
	for (int i = 0; i < NOPS; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		if (peer[i] >= 0)
			close(peer[i]);
		if (c->kind == K_OPEN_CREAT) {
			file_path(p, sizeof p, "n", i);
			unlink(p);
		}
	}
	return NULL;
}

/* Runs case c once on a fresh thread; its figures land in slot rep. */
static void wq_run(struct wq_case *c, int rep)
{
	int left = iowq_settle();
	if (left)
		fprintf(stderr, "io_micro: %d io-wq threads still alive before %s\n", left, c->name);
	pthread_t t;
	pthread_create(&t, NULL, wq_case_thread, c);
	pthread_join(t, NULL);
	c->ms[rep] = c->ms[0];
	c->peak[rep] = c->peak[0];
}

/* Round trips of a NOP through io_uring: inline, or punted to io-wq
 * (IOSQE_ASYNC), the io-wq thread on the submitter's CPU or (iowq_aff)
 * the other one. */
struct hop {
	int async, aff_cpu, n;
	double first_us, ns;
};

static void *hop_thread(void *arg)
{
	struct hop *h = arg;
	pin(0);
	struct io_uring ring;
	ring_init(&ring, 256, 4096, 0);
	if (h->aff_cpu >= 0) {
		cpu_set_t s;
		CPU_ZERO(&s);
		CPU_SET(h->aff_cpu, &s);
		io_uring_register_iowq_aff(&ring, sizeof s, &s);
	}
	uint64_t start = 0;
	for (int i = 0; i <= h->n; i++) {
		uint64_t t0 = now_ns();
		struct io_uring_sqe *s = sqe_get(&ring);
		io_uring_prep_nop(s);
		if (h->async)
			s->flags |= IOSQE_ASYNC;
		io_uring_submit_and_wait(&ring, 1);
		uint64_t ud;
		wait_one(&ring, &ud, NULL);
		uint64_t t1 = now_ns();
		if (i == 0) {
			h->first_us = (double)(t1 - t0) / 1e3;
			start = now_ns(); /* the timed part */
		}
	}
	h->ns = (double)(now_ns() - start) / (double)h->n;
	io_uring_queue_exit(&ring);
	return NULL;
}

static void hop_run(struct hop *h)
{
	iowq_settle();
	pthread_t t;
	pthread_create(&t, NULL, hop_thread, h);
	pthread_join(t, NULL);
}

static void section_iowq(void)
{
	printf("\n== 1. io-wq: helper threads for %d concurrent operations (SQ 256, CQ 4096, "
	       "submitter on CPU 0) ==\n", NOPS);
	char p[600];
	for (int i = 0; i < NOPS; i++) {
		file_path(p, sizeof p, "f", i);
		int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			die(p, errno);
		/* Room for the one-file case: NOPS blocks in f00. */
		size_t blocks = i == 0 ? NOPS : 1;
		for (size_t b = 0; b < blocks; b++)
			if (pwrite(fd, g_buf, sizeof g_buf, (off_t)(b * sizeof g_buf)) < 0)
				die("pwrite", errno);
		fsync(fd);
		close(fd);
	}
	static struct wq_case cases[] = {
		{ .name = "fsync, 64 files (64 KiB dirty each)", .kind = K_FSYNC, .cap = 0, .aff_cpu = -1 },
		{ .name = "fsync, 64 files", .kind = K_FSYNC, .cap = 4, .aff_cpu = -1 },
		{ .name = "fsync, 64 files", .kind = K_FSYNC, .cap = 1, .aff_cpu = -1 },
		{ .name = "buffered write 64 KiB, 64 files", .kind = K_WRITE, .cap = 0, .aff_cpu = -1 },
		{ .name = "buffered write 64 KiB, 64 files", .kind = K_WRITE, .cap = 4, .aff_cpu = -1 },
		{ .name = "buffered write 64 KiB, 1 file", .kind = K_WRITE1, .cap = 0, .aff_cpu = -1 },
		{ .name = "read 64 KiB, 64 cold files", .kind = K_READ_COLD, .cap = 0, .aff_cpu = -1 },
		{ .name = "read 64 KiB, 64 cached files", .kind = K_READ_WARM, .cap = 0, .aff_cpu = -1 },
		{ .name = "openat O_RDONLY, cached path", .kind = K_OPEN, .cap = 0, .aff_cpu = -1 },
		{ .name = "openat O_CREAT, new file", .kind = K_OPEN_CREAT, .cap = 0, .aff_cpu = -1 },
		{ .name = "recv + IOSQE_ASYNC, 64 sockets", .kind = K_RECV_ASYNC, .cap = 0, .aff_cpu = -1 },
		{ .name = "recv + IOSQE_ASYNC, 64 sockets", .kind = K_RECV_ASYNC, .cap = 4, .aff_cpu = -1 },
	};
	const int nc = (int)(sizeof cases / sizeof cases[0]);
	for (int r = 0; r < g_reps; r++)
		for (int i = 0; i < nc; i++)
			wq_run(&cases[i], r);
	printf("%-40s %-9s %-14s %-9s %s\n", "operation x64", "cap", "iou-wrk peak",
	       "wall ms", "note");
	for (int i = 0; i < nc; i++) {
		struct wq_case *c = &cases[i];
		double lo, hi, pk = med(c->peak, g_reps, &lo, &hi);
		char cap[32], pks[32], note[64] = "";
		if (c->cap)
			snprintf(cap, sizeof cap, "{%u,%u}", c->cap, c->cap);
		else
			snprintf(cap, sizeof cap, "default");
		snprintf(pks, sizeof pks, lo == hi ? "%.0f" : "%.0f (%.0f-%.0f)", pk, lo, hi);
		if (c->kind == K_READ_COLD || c->kind == K_READ_WARM)
			snprintf(note, sizeof note, "%.0f%% resident before", c->resident);
		if (c->kind == K_RECV_ASYNC)
			snprintf(note, sizeof note, "incl. 20 ms before the data is sent");
		if (i == 0)
			snprintf(note, sizeof note, "limits read back {%u,%u}", c->lim[0], c->lim[1]);
		printf("%-40s %-9s %-14s %-9.2f %s\n", c->name, cap, pks,
		       med(c->ms, g_reps, NULL, NULL), note);
	}

	if (g_ncpu >= 2) {
		struct wq_case a0 = { .name = "fsync x64, no iowq_aff", .kind = K_FSYNC, .cap = 0, .aff_cpu = -1 };
		struct wq_case a1 = { .name = "fsync x64, iowq_aff {1}", .kind = K_FSYNC, .cap = 0, .aff_cpu = 1 };
		wq_run(&a0, 0);
		wq_run(&a1, 0);
		printf("Cpus_allowed_list of the io-wq threads, submitter pinned to CPU 0: "
		       "no iowq_aff \"%s\"; iowq_aff {1} \"%s\"\n", a0.aff, a1.aff);
	}

	/* The hop: a NOP inline against one through io-wq. */
	double in[MAXREPS], as[MAXREPS], ax[MAXREPS], fi[MAXREPS];
	for (int r = 0; r < g_reps; r++) {
		struct hop h0 = { 0, -1, 20000, 0, 0 }, h1 = { 1, -1, 5000, 0, 0 },
			   h2 = { 1, 1, 5000, 0, 0 };
		hop_run(&h0);
		hop_run(&h1);
		if (g_ncpu >= 2)
			hop_run(&h2);
		in[r] = h0.ns;
		as[r] = h1.ns;
		ax[r] = h2.ns;
		fi[r] = h1.first_us;
	}
	printf("NOP round trip (submit_and_wait 1): inline %.0f ns; IOSQE_ASYNC via io-wq "
	       "%.0f ns (worker on the submitter's CPU), %.0f ns (iowq_aff: other CPU); "
	       "first punt of a thread (creates the worker) %.0f us\n",
	       med(in, g_reps, NULL, NULL), med(as, g_reps, NULL, NULL),
	       g_ncpu >= 2 ? med(ax, g_reps, NULL, NULL) : 0.0, med(fi, g_reps, NULL, NULL));
	for (int i = 0; i < NOPS; i++) {
		file_path(p, sizeof p, "f", i);
		unlink(p);
	}
}

/* ---- 2. accept -------------------------------------------------------- */

static int listen_tcp(struct sockaddr_in *a)
{
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	memset(a, 0, sizeof *a);
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(l, (struct sockaddr *)a, sizeof *a) < 0 || listen(l, 4096) < 0)
		die("listen", errno);
	socklen_t len = sizeof *a;
	getsockname(l, (struct sockaddr *)a, &len);
	return l;
}

static int connect_tcp(const struct sockaddr_in *a)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (const struct sockaddr *)a, sizeof *a) < 0)
		die("connect", errno);
	return s;
}

/* Closes with a reset: no TIME_WAIT left to exhaust the ports. */
static void close_rst(int s)
{
	struct linger lg = { 1, 0 };
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
	close(s);
}

#define BURST 1000
#define UD_MS 7

/* Accepts `want` connections: one SQE each (re-armed after each CQE), or
 * one multishot SQE. Returns ns per accept; *enters: enter calls. The
 * accepted fds are closed. */
static double accept_n(struct io_uring *ring, int l, int want, int multi, long *enters,
		       int *fds)
{
	int got = 0;
	*enters = 0;
	uint64_t t0 = now_ns();
	if (multi) {
		struct io_uring_sqe *s = sqe_get(ring);
		io_uring_prep_multishot_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
		io_uring_sqe_set_data64(s, UD_MS);
	}
	while (got < want) {
		if (!multi) {
			struct io_uring_sqe *s = sqe_get(ring);
			io_uring_prep_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
			io_uring_sqe_set_data64(s, 1);
		}
		io_uring_submit_and_wait(ring, 1);
		(*enters)++;
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(ring, head, c) {
			seen++;
			if (c->res >= 0) {
				if (fds)
					fds[got] = c->res;
				else
					close(c->res);
				got++;
			} else {
				die("accept", c->res);
			}
			if (multi && !(c->flags & IORING_CQE_F_MORE))
				die("multishot accept ended early", EIO);
		}
		io_uring_cq_advance(ring, seen);
	}
	uint64_t t1 = now_ns();
	if (fds)
		for (int i = 0; i < got; i++)
			close(fds[i]);
	return (double)(t1 - t0) / got;
}

/* Ends the multishot accept with a cancel; returns its final CQE's res and
 * whether F_MORE was clear on it. Connections accepted meanwhile (CQEs
 * with F_MORE) are closed. */
static int accept_cancel(struct io_uring *ring, int *more_clear)
{
	struct io_uring_sqe *s = sqe_get(ring);
	io_uring_prep_cancel64(s, UD_MS, 0);
	io_uring_sqe_set_data64(s, 99);
	io_uring_submit(ring);
	int res = 0, cancel_seen = 0, final_seen = 0;
	*more_clear = 0;
	while (!cancel_seen || !final_seen) {
		uint64_t ud;
		unsigned fl;
		int r = wait_one(ring, &ud, &fl);
		if (ud == 99) {
			cancel_seen = 1;
		} else if (ud == UD_MS && (fl & IORING_CQE_F_MORE)) {
			if (r >= 0)
				close(r);
		} else if (ud == UD_MS) {
			res = r;
			*more_clear = 1;
			final_seen = 1;
			if (r >= 0)
				close(r);
		}
	}
	return res;
}

struct client {
	struct sockaddr_in a;
	_Atomic int stop;
	long made;
};

static void *client_loop(void *arg)
{
	struct client *c = arg;
	pin(1);
	while (!atomic_load(&c->stop)) {
		close_rst(connect_tcp(&c->a));
		c->made++;
	}
	return NULL;
}

static void section_accept(void)
{
	printf("\n== 2. accept: multishot (5.19) vs one SQE per connection (TCP, loopback) ==\n");
	pin(0);
	struct io_uring ring;
	const char *kind = ring_init(&ring, 256, 4096, 0);
	double bns[2][MAXREPS], ben[2][MAXREPS], sns[2][MAXREPS], scpu[2][MAXREPS],
		sen[2][MAXREPS];
	static int cfd[BURST], afd[BURST];
	const int steady = 3000;
	int endres = 0, endclear = 0;
	for (int r = 0; r < g_reps; r++) {
		for (int multi = 0; multi < 2; multi++) {
			/* Burst: BURST connections already queued on the listener. */
			struct sockaddr_in a;
			int l = listen_tcp(&a);
			for (int i = 0; i < BURST; i++)
				cfd[i] = connect_tcp(&a);
			long en;
			bns[multi][r] = accept_n(&ring, l, BURST, multi, &en, afd);
			ben[multi][r] = (double)en / BURST;
			if (multi)
				endres = accept_cancel(&ring, &endclear);
			for (int i = 0; i < BURST; i++)
				close_rst(cfd[i]);
			close(l);

			/* Steady: a client thread on CPU 1 connects in a loop. */
			struct client cl;
			memset(&cl, 0, sizeof cl);
			l = listen_tcp(&cl.a);
			pthread_t t;
			pthread_create(&t, NULL, client_loop, &cl);
			uint64_t c0 = thread_cpu_ns();
			sns[multi][r] = accept_n(&ring, l, steady, multi, &en, NULL);
			scpu[multi][r] = (double)(thread_cpu_ns() - c0) / steady;
			sen[multi][r] = (double)en / steady;
			atomic_store(&cl.stop, 1);
			if (multi)
				accept_cancel(&ring, &endclear);
			pthread_join(t, NULL);
			/* What the client connected after we stopped accepting. */
			int s;
			fcntl(l, F_SETFL, O_NONBLOCK);
			while ((s = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0)
				close(s);
			close(l);
		}
	}
	printf("ring: %s\n", kind);
	printf("%-34s %-12s %-12s %-14s %s\n", "case", "ns/accept", "enters/acc",
	       "server CPU ns", "");
	for (int multi = 0; multi < 2; multi++) {
		double lo, hi, m = med(bns[multi], g_reps, &lo, &hi);
		printf("%-34s %-12.0f %-12.3f %-14s (min-max %.0f-%.0f)\n",
		       multi ? "backlog of 1000, multishot" : "backlog of 1000, one SQE each", m,
		       med(ben[multi], g_reps, NULL, NULL), "-", lo, hi);
	}
	for (int multi = 0; multi < 2; multi++) {
		double lo, hi, m = med(sns[multi], g_reps, &lo, &hi);
		printf("%-34s %-12.0f %-12.3f %-14.0f (min-max %.0f-%.0f; accept+close, client "
		       "connect+RST on CPU 1)\n",
		       multi ? "client loop, multishot" : "client loop, one SQE each", m,
		       med(sen[multi], g_reps, NULL, NULL), med(scpu[multi], g_reps, NULL, NULL),
		       lo, hi);
	}
	printf("multishot ended by a cancel: final CQE res %d (%s), F_MORE %s\n", endres,
	       endres < 0 ? strerror(-endres) : "fd", endclear ? "clear" : "SET");
	io_uring_queue_exit(&ring);

	/* A multishot accept on a CQ of 8 with 32 connections queued. */
	struct io_uring small;
	const char *skind = ring_init(&small, 8, 8, 0);
	struct sockaddr_in a;
	int l = listen_tcp(&a);
	int cs[32];
	for (int i = 0; i < 32; i++)
		cs[i] = connect_tcp(&a);
	struct io_uring_sqe *s = sqe_get(&small);
	io_uring_prep_multishot_accept(s, l, NULL, NULL, SOCK_CLOEXEC);
	io_uring_sqe_set_data64(s, UD_MS);
	io_uring_submit(&small);
	sleep_us(10000);
	io_uring_get_events(&small);
	int with_more = 0, final_res = -9999, total = 0, ovf = io_uring_cq_has_overflow(&small);
	for (int round = 0; round < 8 && final_res == -9999; round++) {
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&small, head, c) {
			seen++;
			total++;
			if (c->res >= 0)
				close(c->res);
			if (c->flags & IORING_CQE_F_MORE)
				with_more++;
			else
				final_res = c->res;
		}
		io_uring_cq_advance(&small, seen);
		io_uring_get_events(&small);
	}
	int left = 0, x;
	fcntl(l, F_SETFL, O_NONBLOCK);
	while ((x = accept4(l, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		left++;
		close(x);
	}
	printf("multishot on a CQ of 8 (%s ring), 32 connections queued: %d CQEs with F_MORE, "
	       "then a final CQE res %d%s without F_MORE (overflow flag %s when first "
	       "looked); %d connections left in the backlog for the next accept\n",
	       skind, with_more, final_res, final_res >= 0 ? " (an fd: a success)" : "",
	       ovf ? "set" : "clear", left);
	for (int i = 0; i < 32; i++)
		close_rst(cs[i]);
	close(l);
	io_uring_queue_exit(&small);
}

/* ---- 3. cancel -------------------------------------------------------- */

static char g_sink[64];

static void arm_recvs(struct io_uring *r, int fd, int n)
{
	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *s = sqe_get(r);
		io_uring_prep_recv(s, fd, g_sink, sizeof g_sink, 0);
		io_uring_sqe_set_data64(s, 1000 + (uint64_t)i);
	}
	io_uring_submit(r);
	io_uring_get_events(r);
}

/* mode 0: N cancels by user_data (CQE_SKIP_SUCCESS, as ura), 1: one
 * CANCEL_ANY, 2: one CANCEL_FD|CANCEL_ALL. Returns ns for all N to be
 * reaped; *cres: the cancel's own res (modes 1, 2). */
static double cancel_n(int n, int mode, int *cres, int *ecanceled)
{
	struct io_uring ring;
	ring_init(&ring, 256, 4096, 0); /* ura's ring */
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	arm_recvs(&ring, sv[0], n);
	uint64_t t0 = now_ns();
	if (mode == 0) {
		for (int i = 0; i < n; i++) {
			struct io_uring_sqe *s = sqe_get(&ring);
			io_uring_prep_cancel64(s, 1000 + (uint64_t)i, 0);
			s->flags |= IOSQE_CQE_SKIP_SUCCESS;
			io_uring_sqe_set_data64(s, 2);
		}
	} else {
		struct io_uring_sqe *s = sqe_get(&ring);
		if (mode == 1)
			io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
		else
			io_uring_prep_cancel_fd(s, sv[0], IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(s, 2);
	}
	io_uring_submit(&ring);
	int got = 0, need = n + (mode != 0);
	*ecanceled = 0;
	while (got < need) {
		io_uring_submit_and_wait(&ring, 1);
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, c) {
			seen++;
			if (c->user_data == 2)
				*cres = c->res;
			else if (c->res == -ECANCELED)
				(*ecanceled)++;
		}
		io_uring_cq_advance(&ring, seen);
		got += (int)seen;
	}
	uint64_t t1 = now_ns();
	io_uring_queue_exit(&ring);
	close(sv[0]);
	close(sv[1]);
	return (double)(t1 - t0);
}

static void section_cancel(void)
{
	printf("\n== 3. cancelling N pending recvs (one socket; ura's ring: SQ 256, CQ 4096) ==\n");
	pin(0);
	static const int ns[] = { 1000, 2000, 4000 };
	static const char *names[] = { "N x cancel64 (by user_data)", "1 x ASYNC_CANCEL_ANY",
				       "1 x CANCEL_FD|CANCEL_ALL" };
	double t[3][3][MAXREPS];
	int cres[3][3], ecn[3][3];
	for (int r = 0; r < g_reps; r++)
		for (int i = 0; i < 3; i++)
			for (int m = 0; m < 3; m++)
				t[i][m][r] = cancel_n(ns[i], m, &cres[i][m], &ecn[i][m]);
	printf("%-30s %-6s %-10s %-11s %-14s %s\n", "how", "N", "total us", "ns per op",
	       "cancel res", "-ECANCELED CQEs");
	for (int i = 0; i < 3; i++)
		for (int m = 0; m < 3; m++) {
			double v = med(t[i][m], g_reps, NULL, NULL);
			char cr[32] = "skipped (0)";
			if (m)
				snprintf(cr, sizeof cr, "%d", cres[i][m]);
			printf("%-30s %-6d %-10.0f %-11.0f %-14s %d\n", names[m], ns[i], v / 1e3,
			       v / ns[i], cr, ecn[i][m]);
		}

	/* Ring exit with 1000 recvs in flight. */
	double ex[MAXREPS];
	int still = 0;
	for (int r = 0; r < g_reps; r++) {
		struct io_uring ring;
		ring_init(&ring, 256, 4096, 0);
		int sv[2];
		socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
		arm_recvs(&ring, sv[0], 1000);
		uint64_t t0 = now_ns();
		io_uring_queue_exit(&ring);
		ex[r] = (double)(now_ns() - t0);
		sleep_us(20000);
		if (write(sv[1], "z", 1) != 1)
			die("write", errno);
		sleep_us(1000);
		char b;
		if (recv(sv[0], &b, 1, MSG_DONTWAIT) == 1)
			still++;
		close(sv[0]);
		close(sv[1]);
	}
	printf("io_uring_queue_exit with 1000 recvs in flight: %.0f us; a byte sent 20 ms later "
	       "was still in the socket for a plain recv in %d of %d runs (no CQE is ever "
	       "seen for them)\n", med(ex, g_reps, NULL, NULL) / 1e3, still, g_reps);
}

/* ---- 4. CQ overflow --------------------------------------------------- */

static void overflow_demo(int plain)
{
	struct io_uring ring;
	const char *kind = ring_init(&ring, 8, 8, plain);
	int rets[4];
	int flag_after[4];
	for (int k = 0; k < 4; k++) {
		for (int i = 0; i < 8; i++) {
			struct io_uring_sqe *s = sqe_get(&ring);
			io_uring_prep_nop(s);
			io_uring_sqe_set_data64(s, (uint64_t)(k * 8 + i));
		}
		rets[k] = io_uring_submit(&ring);
		flag_after[k] = io_uring_cq_has_overflow(&ring);
	}
	/* Without reaping: does a submit while the overflow list is not empty
	 * fail? And a wait? */
	struct io_uring_sqe *s = sqe_get(&ring);
	io_uring_prep_nop(s);
	io_uring_sqe_set_data64(s, 32);
	int extra = io_uring_submit(&ring);
	/* A wait (GETEVENTS) while the CQ is still full: the overflow list
	 * cannot be flushed. */
	int ge = io_uring_get_events(&ring);
	int got = 0, enters = 0;
	uint64_t seen_mask[2] = { 0, 0 };
	while (got < 33 && enters < 64) {
		struct io_uring_cqe *c;
		unsigned head, seen = 0;
		io_uring_for_each_cqe(&ring, head, c) {
			seen++;
			if (c->user_data < 64)
				seen_mask[c->user_data / 64] |= 1ull << (c->user_data % 64);
		}
		io_uring_cq_advance(&ring, seen);
		got += (int)seen;
		if (got < 33) {
			io_uring_get_events(&ring); /* flushes the overflow list */
			enters++;
		}
	}
	int distinct = __builtin_popcountll(seen_mask[0]);
	printf("%-6s CQ 8: 4 submits of 8 NOPs -> %d %d %d %d (overflow flag after each: %d %d "
	       "%d %d); a 5th submit -> %d; get_events with the CQ full -> %d; reaped %d of 33 CQEs (%d distinct), %d "
	       "get_events to flush; dropped (*koverflow) %u\n",
	       kind, rets[0], rets[1], rets[2], rets[3], flag_after[0], flag_after[1],
	       flag_after[2], flag_after[3], extra, ge, got, distinct, enters,
	       ring.cq.koverflow ? *ring.cq.koverflow : 0);
	io_uring_queue_exit(&ring);
}

/* ns per NOP, 8 per submit, 32 submits before reaping. */
static double overflow_cost(unsigned cq)
{
	struct io_uring ring;
	ring_init(&ring, 8, cq, 0);
	const int rounds = 250;
	uint64_t t0 = now_ns();
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 32; k++) {
			for (int i = 0; i < 8; i++) {
				struct io_uring_sqe *s = io_uring_get_sqe(&ring);
				io_uring_prep_nop(s);
			}
			io_uring_submit(&ring);
		}
		int got = 0;
		while (got < 256) {
			struct io_uring_cqe *c;
			unsigned head, seen = 0;
			io_uring_for_each_cqe(&ring, head, c)
				seen++;
			io_uring_cq_advance(&ring, seen);
			got += (int)seen;
			if (got < 256)
				io_uring_get_events(&ring);
		}
	}
	double ns = (double)(now_ns() - t0) / (rounds * 256.0);
	io_uring_queue_exit(&ring);
	return ns;
}

static void section_overflow(void)
{
	printf("\n== 4. CQ overflow (IORING_FEAT_NODROP) ==\n");
	pin(0);
	struct io_uring probe;
	ring_init(&probe, 8, 8, 0);
	io_uring_queue_exit(&probe);
	printf("IORING_FEAT_NODROP: %s\n", g_features & IORING_FEAT_NODROP ? "yes" : "no");
	overflow_demo(0);
	overflow_demo(1);
	double a[MAXREPS], b[MAXREPS];
	for (int r = 0; r < g_reps; r++) {
		a[r] = overflow_cost(256);
		b[r] = overflow_cost(8);
	}
	printf("256 NOPs per reap (8 per submit): %.0f ns/NOP with CQ 256 (no overflow), %.0f "
	       "ns/NOP with CQ 8 (248 of 256 through the overflow list)\n",
	       med(a, g_reps, NULL, NULL), med(b, g_reps, NULL, NULL));
}

/* ---- 5. linked timeouts ---------------------------------------------- */

/* recv (ud 1) linked to a timeout (ud 2). Returns the order as "1,2" or
 * "2,1" and the results. */
static void lt_pair(struct io_uring *r, int fd, int peer, int data, long tmo_ns, char *order,
		    int *res1, int *res2, double *elapsed_ns)
{
	struct __kernel_timespec ts = { 0, tmo_ns };
	if (data && write(peer, "d", 1) != 1)
		die("write", errno);
	uint64_t t0 = now_ns();
	struct io_uring_sqe *s = sqe_get(r);
	io_uring_prep_recv(s, fd, g_sink, sizeof g_sink, 0);
	s->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(s, 1);
	s = sqe_get(r);
	io_uring_prep_link_timeout(s, &ts, 0);
	io_uring_sqe_set_data64(s, 2);
	io_uring_submit(r);
	for (int k = 0; k < 2; k++) {
		uint64_t ud;
		int res = wait_one(r, &ud, NULL);
		order[k * 2] = (char)('0' + (int)ud);
		order[k * 2 + 1] = k ? 0 : ',';
		if (ud == 1) {
			*res1 = res;
			*elapsed_ns = (double)(now_ns() - t0);
		} else {
			*res2 = res;
		}
	}
}

/* Per op: arm a recv (nothing to read yet) [+ a 10 s linked timeout],
 * write one byte from the peer, reap. `others`: deadlines armed on other
 * recvs meanwhile. */
static double lt_cost(int with_lt, int others, int n)
{
	struct io_uring ring;
	ring_init(&ring, 4096, 8192, 0);
	int sv[2], ov[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ov);
	struct __kernel_timespec ts = { 10, 0 };
	for (int i = 0; i < others; i++) {
		struct io_uring_sqe *s = sqe_get(&ring);
		io_uring_prep_recv(s, ov[0], g_sink, sizeof g_sink, 0);
		s->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(s, 10);
		s = sqe_get(&ring);
		io_uring_prep_link_timeout(s, &ts, 0);
		io_uring_sqe_set_data64(s, 11);
	}
	io_uring_submit(&ring);
	char b[8];
	uint64_t t0 = 0;
	for (int i = -200; i < n; i++) {
		if (i == 0)
			t0 = now_ns();
		struct io_uring_sqe *s = sqe_get(&ring);
		io_uring_prep_recv(s, sv[0], b, sizeof b, 0);
		io_uring_sqe_set_data64(s, 1);
		if (with_lt) {
			s->flags |= IOSQE_IO_LINK;
			s = sqe_get(&ring);
			io_uring_prep_link_timeout(s, &ts, 0);
			io_uring_sqe_set_data64(s, 2);
		}
		io_uring_submit(&ring);
		if (write(sv[1], "d", 1) != 1)
			die("write", errno);
		for (int k = 0; k < 1 + with_lt; k++) {
			uint64_t ud;
			wait_one(&ring, &ud, NULL);
		}
	}
	double ns = (double)(now_ns() - t0) / n;
	io_uring_queue_exit(&ring);
	close(sv[0]);
	close(sv[1]);
	close(ov[0]);
	close(ov[1]);
	return ns;
}

static void section_linked(void)
{
	printf("\n== 5. linked timeouts (IOSQE_IO_LINK + IORING_OP_LINK_TIMEOUT) ==\n");
	pin(0);
	struct io_uring ring;
	const char *kind = ring_init(&ring, 256, 4096, 0);
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	char o1[8], o2[8], first1[8] = "", first2[8] = "";
	int r1, r2, d1, d2, same1 = 1, same2 = 1;
	double el, late[100];
	const int nl = 100;
	for (int i = 0; i < nl; i++) {
		lt_pair(&ring, sv[0], sv[1], 0, 1000000, o1, &r1, &r2, &el);
		late[i] = el - 1e6;
		if (!first1[0])
			strcpy(first1, o1);
		same1 &= !strcmp(first1, o1);
	}
	for (int i = 0; i < 20; i++) {
		lt_pair(&ring, sv[0], sv[1], 1, 1000000, o2, &d1, &d2, &el);
		if (!first2[0])
			strcpy(first2, o2);
		same2 &= !strcmp(first2, o2);
	}
	printf("ring: %s\n", kind);
	printf("deadline passes (1 ms, nothing to read): CQEs in order %s (1 = recv res %d %s, "
	       "2 = timeout res %d %s)%s\n", first1, r1, strerror(-r1), r2, strerror(-r2),
	       same1 ? ", every time of 100" : ", ORDER VARIED");
	printf("data ready first: CQEs in order %s (recv res %d, timeout res %d %s)%s\n",
	       first2, d1, d2, strerror(-d2), same2 ? ", every time of 20" : ", ORDER VARIED");
	double p50 = pct(late, nl, 0.5), p90 = pct(late, nl, 0.9), p99 = pct(late, nl, 0.99);
	printf("lateness of a 1 ms linked timeout (recv's CQE reaped - deadline), %d runs: "
	       "p50 %.1f us, p90 %.1f us, max %.1f us\n", nl, p50 / 1e3, p90 / 1e3, p99 / 1e3);
	io_uring_queue_exit(&ring);
	close(sv[0]);
	close(sv[1]);

	double c0[MAXREPS], c1[MAXREPS], c2[MAXREPS];
	const int n = 20000;
	for (int r = 0; r < g_reps; r++) {
		c0[r] = lt_cost(0, 0, n);
		c1[r] = lt_cost(1, 0, n);
		c2[r] = lt_cost(1, 2000, n);
	}
	printf("per op (arm recv, peer writes 1 byte, reap): no deadline %.0f ns; + linked "
	       "timeout %.0f ns; + linked timeout with 2000 other deadlines armed %.0f ns\n",
	       med(c0, g_reps, NULL, NULL), med(c1, g_reps, NULL, NULL),
	       med(c2, g_reps, NULL, NULL));
}

/* ---- 6. ura ----------------------------------------------------------- */

#define A_GO URA_ATOM("go")
#define A_SENT URA_ATOM("sent")
#define A_GOT URA_ATOM("got")
#define A_EGOT URA_ATOM("egot")
#define A_ESENT URA_ATOM("esent")
#define A_TMO URA_ATOM("tmo")

static struct {
	int fa, fb;
	long n, rt;
	size_t got;
	int sends; /* in flight */
	uint64_t t0, t1;
	int err;
} E;
static char g_msg[64] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";

static void e_round(ura_ctx *cx)
{
	ura_io s = ura_io_send(cx, A_SENT, E.fa, g_msg, sizeof g_msg);
	ura_io r = ura_io_recv(cx, A_GOT, E.fa, sizeof g_msg, 0);
	if (s < 0 || r < 0)
		E.err = (int)(s < 0 ? s : r);
	E.sends++;
}

static void e_maybe_done(ura_ctx *cx)
{
	if (E.rt == E.n && E.sends == 0) {
		shutdown(E.fa, SHUT_WR);
		ura_stop(cx);
	}
}

static void e_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	E.t0 = now_ns();
	e_round(cx);
}

static void e_sent(ura_ctx *cx, const ura_msg *m)
{
	if (ura_arg_i64(m, 0) != (int64_t)sizeof g_msg)
		E.err = (int)ura_arg_i64(m, 0);
	E.sends--;
	e_maybe_done(cx);
}

static void e_got(ura_ctx *cx, const ura_msg *m)
{
	int64_t res = ura_arg_i64(m, 0);
	if (res <= 0) {
		E.err = res ? (int)res : -EPIPE;
		ura_stop(cx);
		return;
	}
	E.got += (size_t)res;
	if (E.got < sizeof g_msg) {
		ura_io_recv(cx, A_GOT, E.fa, sizeof g_msg - E.got, 0);
		return;
	}
	E.got = 0;
	if (++E.rt < E.n) {
		e_round(cx);
		return;
	}
	E.t1 = now_ns();
	e_maybe_done(cx);
}

URA_BEHAVIOR(pinger, URA_ON(A_GO, "", e_go), URA_ON(A_SENT, "i", e_sent),
	     URA_ON(A_GOT, "ib", e_got));
static const ura_class pinger_class = { .name = "pinger", .initial = &pinger };

static void b_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_io_recv(cx, A_EGOT, E.fb, sizeof g_msg, 0);
}

static void b_got(ura_ctx *cx, const ura_msg *m)
{
	int64_t res = ura_arg_i64(m, 0);
	if (res <= 0) {
		ura_stop(cx);
		return;
	}
	size_t len = 0;
	const void *d = ura_arg_bytes(m, 1, &len);
	ura_io_send(cx, A_ESENT, E.fb, d, len);
	ura_io_recv(cx, A_EGOT, E.fb, sizeof g_msg, 0);
}

static void b_sent(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (ura_arg_i64(m, 0) < 0)
		E.err = (int)ura_arg_i64(m, 0);
}

URA_BEHAVIOR(echoer, URA_ON(A_GO, "", b_go), URA_ON(A_EGOT, "ib", b_got),
	     URA_ON(A_ESENT, "i", b_sent));
static const ura_class echoer_class = { .name = "echoer", .initial = &echoer };

static void *echo_thread(void *arg)
{
	int fd = *(int *)arg;
	pin(1);
	char b[256];
	for (;;) {
		ssize_t n = read(fd, b, sizeof b);
		if (n <= 0)
			break;
		if (write(fd, b, (size_t)n) != n)
			break;
	}
	return NULL;
}

static void quiet_log(void *ud, int level, const char *msg)
{
	if (ud && level <= URA_LOG_WARN)
		snprintf(ud, 200, "%s", msg);
}

static struct ura_system *new_sys(int uring, char *logbuf)
{
	setenv("URA_IO_URING", uring ? "1" : "0", 1);
	ura_config cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.workers = 1;
	cfg.log = quiet_log;
	cfg.log_ud = logbuf;
	ura_system *sys;
	int rc = ura_system_new(&sys, &cfg);
	if (rc < 0)
		die("ura_system_new", rc);
	return sys;
}

/* One run: `n` round trips; echo by an actor on the same worker (thread 0)
 * or by a plain thread on CPU 1 (thread 1). ns per round trip. */
static double ura_echo(int uring, int thread, long n, const char **backend, double *enters)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	memset(&E, 0, sizeof E);
	E.fa = sv[0];
	E.fb = sv[1];
	E.n = n;
	ura_system *sys = new_sys(uring, NULL);
	pthread_t t;
	ura_ref a, b;
	if (thread)
		pthread_create(&t, NULL, echo_thread, &sv[1]);
	else {
		ura_spawn(sys, &echoer_class, NULL, &b);
		ura_send(sys, b, A_GO);
	}
	ura_spawn(sys, &pinger_class, NULL, &a);
	ura_send(sys, a, A_GO);
	ura_system_await(sys);
	ura_stats st;
	ura_system_stats(sys, &st);
	*backend = st.backend;
	*enters = (double)st.ring_enters / (double)n;
	ura_system_destroy(sys);
	if (thread)
		pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	if (E.err || E.rt != n) {
		fprintf(stderr, "io_micro: ura echo: %ld of %ld round trips, error %s\n", E.rt, n,
			strerror(-E.err));
		return 0;
	}
	return (double)(E.t1 - E.t0) / (double)n;
}

/* The same round trip without ura, against the echo thread. */
static double raw_echo(int how, long n)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	pthread_t t;
	pthread_create(&t, NULL, echo_thread, &sv[1]);
	char b[64];
	struct io_uring ring;
	int ep = -1;
	if (how == 0)
		ring_init(&ring, 256, 4096, 0);
	if (how == 1) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0 };
		fcntl(sv[0], F_SETFL, O_NONBLOCK);
		epoll_ctl(ep, EPOLL_CTL_ADD, sv[0], &ev);
	}
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		size_t got = 0;
		if (how == 0) {
			struct io_uring_sqe *s = sqe_get(&ring);
			io_uring_prep_send(s, sv[0], g_msg, sizeof g_msg, MSG_NOSIGNAL);
			io_uring_sqe_set_data64(s, 1);
			while (got < sizeof g_msg) {
				s = sqe_get(&ring);
				io_uring_prep_recv(s, sv[0], b, sizeof b - got, 0);
				io_uring_sqe_set_data64(s, 2);
				io_uring_submit(&ring);
				for (;;) {
					uint64_t ud;
					int res = wait_one(&ring, &ud, NULL);
					if (ud == 2) {
						if (res <= 0)
							die("recv", res ? res : EPIPE);
						got += (size_t)res;
						break;
					}
				}
			}
		} else {
			if (send(sv[0], g_msg, sizeof g_msg, MSG_NOSIGNAL) != (ssize_t)sizeof g_msg)
				die("send", errno);
			while (got < sizeof g_msg) {
				ssize_t k = recv(sv[0], b, sizeof b - got, 0);
				if (k < 0 && errno == EAGAIN) {
					struct epoll_event ev;
					epoll_wait(ep, &ev, 1, -1);
					continue;
				}
				if (k <= 0)
					die("recv", k ? errno : EPIPE);
				got += (size_t)k;
			}
		}
	}
	double ns = (double)(now_ns() - t0) / (double)n;
	if (how == 0) {
		/* The send CQEs may be left: drain them with the ring. */
		io_uring_queue_exit(&ring);
	}
	if (ep >= 0)
		close(ep);
	shutdown(sv[0], SHUT_WR);
	pthread_join(t, NULL);
	close(sv[0]);
	close(sv[1]);
	return ns;
}

/* The CQ budget: 5000 recvs with a 20 ms deadline each, nothing to read. */
static struct {
	int fd, n, done, etime;
	uint64_t t0, t1;
} B;

static void c_tmo(ura_ctx *cx, const ura_msg *m)
{
	if (ura_arg_i64(m, 0) == -ETIME)
		B.etime++;
	if (++B.done == B.n) {
		B.t1 = now_ns();
		ura_stop(cx);
	}
}

static void c_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	B.t0 = now_ns();
	for (int i = 0; i < B.n; i++)
		if (ura_io_recv(cx, A_TMO, B.fd, 16, 20 * 1000000ull) < 0)
			B.done++;
}

URA_BEHAVIOR(budget, URA_ON(A_GO, "", c_go), URA_ON(A_TMO, "ib", c_tmo));
static const ura_class budget_class = { .name = "budget", .initial = &budget };

static void ura_budget(int uring, double *ms, uint64_t *deferred, int *etime, uint64_t *enters)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
	memset(&B, 0, sizeof B);
	B.fd = sv[0];
	B.n = 5000;
	ura_system *sys = new_sys(uring, NULL);
	ura_ref c;
	ura_spawn(sys, &budget_class, NULL, &c);
	ura_send(sys, c, A_GO);
	ura_system_await(sys);
	ura_stats st;
	ura_system_stats(sys, &st);
	*deferred = st.io_deferred;
	*enters = st.ring_enters;
	ura_system_destroy(sys);
	*ms = (double)(B.t1 - B.t0) / 1e6;
	*etime = B.etime;
	close(sv[0]);
	close(sv[1]);
}

/* What ura's ring costs in pinned memory, whether RLIMIT_MEMLOCK still
 * limits it, and the io_uring_disabled sysctl. */
static void ring_limits(void)
{
	struct io_uring_params p;
	struct io_uring r;
	memset(&p, 0, sizeof p);
	p.flags = IORING_SETUP_CQSIZE;
	p.cq_entries = 4096;
	int rc = io_uring_queue_init_params(256, &r, &p);
	if (rc < 0)
		die("io_uring_queue_init_params", rc);
	size_t sq = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cq = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	size_t rings = (p.features & IORING_FEAT_SINGLE_MMAP) ? (sq > cq ? sq : cq) : sq + cq;
	size_t sqes = p.sq_entries * sizeof(struct io_uring_sqe);
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (rings + pg - 1) / pg + (sqes + pg - 1) / pg;
	io_uring_queue_exit(&r);
	int pfd[2];
	if (pipe(pfd) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		int res = setrlimit(RLIMIT_MEMLOCK, &rl) < 0 ? -errno : 0;
		if (res == 0) {
			memset(&p, 0, sizeof p);
			p.flags = IORING_SETUP_CQSIZE;
			p.cq_entries = 4096;
			res = io_uring_queue_init_params(256, &r, &p);
		}
		ssize_t w = write(pfd[1], &res, sizeof res);
		(void)w;
		_exit(0);
	}
	close(pfd[1]);
	int res = -1;
	if (read(pfd[0], &res, sizeof res) != (ssize_t)sizeof res)
		res = -EIO;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	char dis[16] = "absent";
	int fd = open("/proc/sys/kernel/io_uring_disabled", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, dis, sizeof dis - 1);
		dis[k > 0 ? k : 0] = 0;
		if (k > 0 && dis[k - 1] == '\n')
			dis[k - 1] = 0;
		close(fd);
	}
	printf("ura's ring (SQ 256, CQ 4096): %zu B of rings + %zu B of SQEs = %zu pages (%zu "
	       "KiB) pinned; with RLIMIT_MEMLOCK = 0 its setup %s%s; "
	       "kernel.io_uring_disabled = %s\n",
	       rings, sqes, pages, pages * pg / 1024, res == 0 ? "succeeds" : "fails: ",
	       res == 0 ? "" : strerror(-res), dis);
}

/* In a child under a seccomp filter like Docker's: which backend, and what
 * ura says. */
static void seccomp_check(void)
{
	int pfd[2];
	if (pipe(pfd) < 0)
		return;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		char out[512], logbuf[200] = "";
		int rc = block_io_uring();
		if (rc < 0) {
			snprintf(out, sizeof out, "cannot install a seccomp filter: %s", strerror(-rc));
		} else {
			unsetenv("URA_IO_URING");
			ura_config cfg;
			memset(&cfg, 0, sizeof cfg);
			cfg.workers = 1;
			cfg.log = quiet_log;
			cfg.log_ud = logbuf;
			ura_system *sys;
			rc = ura_system_new(&sys, &cfg);
			ura_stats st;
			if (rc == 0) {
				ura_system_stats(sys, &st);
				snprintf(out, sizeof out, "backend %s; logged once: \"%s\"", st.backend,
					 logbuf);
				ura_system_destroy(sys);
			} else {
				snprintf(out, sizeof out, "ura_system_new: %s", strerror(-rc));
			}
		}
		ssize_t w = write(pfd[1], out, strlen(out) + 1);
		(void)w;
		_exit(0);
	}
	close(pfd[1]);
	char buf[512] = "";
	ssize_t k = read(pfd[0], buf, sizeof buf - 1);
	if (k > 0)
		buf[k] = 0;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	printf("io_uring_setup -> EPERM by seccomp (Docker's default since 25.0): %s\n", buf);
}

static void section_ura(void)
{
	printf("\n== 6. ura: 64-byte echo round trip over an AF_UNIX socketpair, 1 worker (CPU 0) "
	       "==\n");
	const long n_same = 10000, n_thr = 2000;
	double same[2][MAXREPS], thr[2][MAXREPS], raw[3][MAXREPS], en_same[2][MAXREPS],
		en_thr[2][MAXREPS];
	const char *bk[2] = { "?", "?" };
	for (int r = 0; r < g_reps; r++) {
		for (int u = 1; u >= 0; u--) {
			/* Alternate which backend goes first in each rep. */
			int uring = (r % 2) ? !u : u;
			same[uring][r] = ura_echo(uring, 0, n_same, &bk[uring], &en_same[uring][r]);
			thr[uring][r] = ura_echo(uring, 1, n_thr, &bk[uring], &en_thr[uring][r]);
		}
		pin(0);
		for (int h = 0; h < 3; h++)
			raw[h][r] = raw_echo(h, n_thr);
		/* Unpin main again (ura pins its own workers). */
		cpu_set_t all;
		CPU_ZERO(&all);
		for (int c = 0; c < g_ncpu; c++)
			CPU_SET(c, &all);
		pthread_setaffinity_np(pthread_self(), sizeof all, &all);
	}
	printf("%-56s %-13s %s\n", "echo by; client", "ns/round trip", "sleeps/rt (min-max ns)");
	for (int u = 1; u >= 0; u--) {
		double lo, hi, m = med(same[u], g_reps, &lo, &hi);
		char name[96];
		snprintf(name, sizeof name, "actor, same worker; ura %s", bk[u]);
		printf("%-56s %-13.0f %.2f (%.0f-%.0f)\n", name, m,
		       med(en_same[u], g_reps, NULL, NULL), lo, hi);
	}
	for (int u = 1; u >= 0; u--) {
		double lo, hi, m = med(thr[u], g_reps, &lo, &hi);
		char name[96];
		snprintf(name, sizeof name, "thread on CPU 1; ura %s", bk[u]);
		printf("%-56s %-13.0f %.2f (%.0f-%.0f)\n", name, m,
		       med(en_thr[u], g_reps, NULL, NULL), lo, hi);
	}
	static const char *rn[3] = { "thread on CPU 1; raw io_uring send+recv SQEs",
				     "thread on CPU 1; raw epoll + non-blocking recv",
				     "thread on CPU 1; raw blocking send/recv" };
	for (int h = 0; h < 3; h++) {
		double lo, hi, m = med(raw[h], g_reps, &lo, &hi);
		printf("%-56s %-13.0f - (%.0f-%.0f)\n", rn[h], m, lo, hi);
	}

	for (int u = 1; u >= 0; u--) {
		double ms;
		uint64_t def, en;
		int et;
		ura_budget(u, &ms, &def, &et, &en);
		printf("5000 recvs with a 20 ms deadline from one handler, ura %s: all done in "
		       "%.1f ms, %d with -ETIME, io_deferred %llu, ring_enters %llu\n",
		       u ? bk[1] : bk[0], ms, et, (unsigned long long)def, (unsigned long long)en);
	}
	unsetenv("URA_IO_URING");
	ring_limits();
	seccomp_check();
}

/* ---- main ------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr, "usage: io_micro [--reps N (1-%d)] [--dir DIR] [--only 1,2,...]\n",
		MAXREPS);
	exit(2);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
			g_reps = atoi(argv[++i]);
			if (g_reps < 1 || g_reps > MAXREPS)
				usage();
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc) {
			g_dir = argv[++i];
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			g_only = 0;
			for (const char *p = argv[++i]; *p; p++)
				if (*p >= '1' && *p <= '6')
					g_only |= 1u << (*p - '0');
		} else {
			usage();
		}
	}
	/* 2000+ sockets at once in section 2. */
	struct rlimit nof;
	if (getrlimit(RLIMIT_NOFILE, &nof) == 0 && nof.rlim_cur < nof.rlim_max) {
		nof.rlim_cur = nof.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nof);
	}
	cpu_set_t cs;
	sched_getaffinity(0, sizeof cs, &cs);
	g_ncpu = CPU_COUNT(&cs);
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < sizeof g_buf; i++)
		g_buf[i] = (char)('a' + i % 26);

	struct utsname u;
	uname(&u);
	struct statfs sf;
	snprintf(g_work, sizeof g_work, "%s/io_micro.%d", g_dir, (int)getpid());
	if (mkdir(g_work, 0700) < 0)
		die(g_work, errno);
	statfs(g_work, &sf);
	const char *fs = sf.f_type == 0xEF53 ? "ext4" : sf.f_type == 0x01021994 ? "tmpfs" :
			 sf.f_type == 0x58465342 ? "xfs" : sf.f_type == 0x9123683E ? "btrfs" :
			 "other";
	printf("io_micro: kernel %s, %d CPUs, %d reps, files in %s (%s)\n", u.release, g_ncpu,
	       g_reps, g_work, fs);
	uint64_t t0 = now_ns();
	if (g_only & (1u << 1))
		section_iowq();
	if (g_only & (1u << 2))
		section_accept();
	if (g_only & (1u << 3))
		section_cancel();
	if (g_only & (1u << 4))
		section_overflow();
	if (g_only & (1u << 5))
		section_linked();
	if (g_only & (1u << 6))
		section_ura();
	rmdir(g_work);
	printf("\ntotal %.1f s\n", (double)(now_ns() - t0) / 1e9);
	return 0;
}
