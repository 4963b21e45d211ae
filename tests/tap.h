/* SPDX-License-Identifier: MIT */
/*
 * A tiny TAP producer for ura's tests (one program per feature). Typed
 * asserts print both values, like libuv's ASSERT_EQ. Tests end with
 * t_done(), which prints the plan and exits non-zero on any failure.
 */
#ifndef URA_TAP_H
#define URA_TAP_H

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <unistd.h>

#include <ura.h>

static int t_count, t_failed;

static inline void t_ok_(int ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline void t_ok_(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	t_count++;
	if (!ok)
		t_failed++;
	printf("%sok %d - ", ok ? "" : "not ", t_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!ok)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
}

#define t_ok(cond, ...) t_ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* Integers (any type that fits in long long), printing both on failure. */
#define t_eq(a, b, ...) do {                                                 \
	long long a_ = (long long)(a), b_ = (long long)(b);                  \
	t_ok_(a_ == b_, __FILE__, __LINE__, __VA_ARGS__);                    \
	if (a_ != b_)                                                        \
		printf("#   got %lld, want %lld (%s == %s)\n", a_, b_, #a, #b); \
} while (0)

/* A -errno result compared to an expected one, printing both names. */
#define t_rc(rc, want, ...) do {                                             \
	int r_ = (rc), w_ = (want);                                          \
	t_ok_(r_ == w_, __FILE__, __LINE__, __VA_ARGS__);                    \
	if (r_ != w_)                                                        \
		printf("#   got %d (%s), want %d (%s)\n", r_, ura_strerror(r_), \
		       w_, ura_strerror(w_));                                \
} while (0)

#define t_streq(a, b, ...) do {                                              \
	const char *a_ = (a), *b_ = (b);                                     \
	int ok_ = a_ && b_ && !strcmp(a_, b_);                               \
	t_ok_(ok_, __FILE__, __LINE__, __VA_ARGS__);                         \
	if (!ok_)                                                            \
		printf("#   got \"%s\", want \"%s\"\n", a_ ? a_ : "(null)",    \
		       b_ ? b_ : "(null)");                                  \
} while (0)

/* A known bug not fixed yet: reported, not failing the suite. */
static inline void t_todo(int ok, const char *what, const char *why)
{
	t_count++;
	printf("%sok %d - %s # TODO %s\n", ok ? "" : "not ", t_count, what, why);
	fflush(stdout);
}

static inline void t_skip(const char *why)
{
	t_count++;
	printf("ok %d # SKIP %s\n", t_count, why);
}

static inline void t_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void t_diag(const char *fmt, ...)
{
	va_list ap;
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* Fatal: setup that the rest of the test cannot do without. */
#define t_must(call) do {                                                    \
	int rc_ = (call);                                                    \
	if (rc_ < 0) {                                                       \
		printf("not ok %d - %s\n#   %s\nBail out! setup failed\n",    \
		       ++t_count, #call, ura_strerror(rc_));                 \
		exit(1);                                                     \
	}                                                                    \
} while (0)

static inline int t_done(void)
{
	printf("1..%d\n", t_count);
	/* Flush now: a sanitizer that ends the process at exit would
	 * otherwise lose the plan line. */
	fflush(stdout);
	return t_failed ? 1 : 0;
}

/* Stress sizes shrink under sanitizers and valgrind: URA_TEST_SCALE=N
 * divides them (the sanitizer CI jobs set it). */
static inline long t_scaled(long n)
{
	const char *e = getenv("URA_TEST_SCALE");
	long d = e ? atol(e) : 1;
	if (d < 1)
		d = 1;
	return n / d > 0 ? n / d : 1;
}

static inline uint64_t t_clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline uint64_t t_now_ns(void) { return t_clock_ns(CLOCK_MONOTONIC); }
/* CPU time of the calling thread: for a bound on how much work a piece
 * of code does, which a loaded machine's preemptions must not move (the
 * wall clock counts the time the thread waited for a CPU). */
static inline uint64_t t_thread_cpu_ns(void) { return t_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

/* Runs `pause` until `cond` holds or `limit_ns` have passed; the caller
 * checks cond afterwards. A test orders its events by a condition, not a
 * sleep: a loaded machine then only makes it wait longer. */
#define t_wait_until(cond, limit_ns, pause) do {                             \
	uint64_t t_w0_ = t_now_ns();                                         \
	while (!(cond) && t_now_ns() - t_w0_ < (uint64_t)(limit_ns))         \
		pause;                                                       \
} while (0)

/* A system with n workers (0: default), failing the test on error. */
static inline ura_system *t_system(unsigned workers)
{
	ura_system *sys;
	ura_config cfg = { .workers = workers };
	t_must(ura_system_new(&sys, &cfg));
	return sys;
}

/* Hang guard, not a timing check: a hung await fails the test instead of
 * hanging it (before meson's timeout); after one hang the others give up
 * sooner. */
static int t_hung_;
static inline int await_guarded(ura_system *sys)
{
	int rc = ura_system_await_for(sys, (t_hung_ ? 3 : 30) * URA_SEC);
	if (rc == -ETIMEDOUT)
		t_hung_ = 1;
	return rc;
}

static inline ura_stats stats(ura_system *sys)
{
	ura_stats st;
	memset(&st, 0, sizeof st);
	ura_system_stats(sys, &st);
	return st;
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define T_SANITIZED 1
#else
#define T_SANITIZED 0
#endif

/* A field of /proc/PID/status in kB (VmRSS, VmHWM), or -1. */
static inline long t_proc_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	size_t fl = strlen(field);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, field, fl) && line[fl] == ':')
			kb = atol(line + fl + 1);
	fclose(f);
	return kb;
}

/* Lowers the address-space limit to what is mapped now plus `extra`,
 * keeping the old one in *old; 0 when it cannot (not under the
 * sanitizers: they map terabytes of shadow). */
static inline int t_limit_as(struct rlimit *old, uint64_t extra)
{
	if (T_SANITIZED)
		return 0;
	long kb = t_proc_kb(getpid(), "VmSize");
	if (kb <= 0 || getrlimit(RLIMIT_AS, old) < 0)
		return 0;
	struct rlimit nl = { (rlim_t)kb * 1024 + extra, old->rlim_max };
	return setrlimit(RLIMIT_AS, &nl) == 0;
}

/* Every test ends here: destroy must report nothing lost. */
static inline void t_destroy(ura_system *sys)
{
	t_rc(ura_system_destroy(sys), 0, "destroy: nothing leaked, nothing lost");
}

#endif
