/* SPDX-License-Identifier: MIT */
/*
 * The fallback ladder with io_uring really refused: a seccomp filter makes
 * io_uring_setup fail with EPERM, the way Docker's default profile does
 * (moby#46762). ura must pick epoll+eventfd, say so once, and run
 * messages, timers and wakeups as before. A second system in the same
 * process must not say it again.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp.h"
#include "tap.h"

#define A_TICK URA_ATOM("tick")

static _Atomic int g_ticks, g_fallback_lines;

static void sink(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level <= URA_LOG_WARN && strstr(msg, "io_uring unavailable"))
		atomic_fetch_add(&g_fallback_lines, 1);
}

static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	long n = (long)ura_arg_i64(m, 0);
	atomic_fetch_add(&g_ticks, 1);
	if (n > 0)
		ura_send_after(cx, ura_self(cx), 1 * URA_MSEC, A_TICK, n - 1);
}
URA_BEHAVIOR(ticker, URA_ON(A_TICK, "i", on_tick));
static const ura_class ticker_class = { .name = "ticker", .initial = &ticker };

static void run_one(int round)
{
	ura_system *sys;
	t_must(ura_system_new(&sys, &(ura_config){ .log = sink }));
	ura_stats st;
	ura_system_stats(sys, &st);
	t_streq(st.backend, "epoll", "round %d: the epoll backend was chosen", round);
	ura_ref t;
	atomic_store(&g_ticks, 0);
	t_must(ura_spawn(sys, &ticker_class, NULL, &t));
	t_must(ura_send(sys, t, A_TICK, 20));
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "round %d: await", round);
	t_eq(atomic_load(&g_ticks), 21, "round %d: messages and 20 delayed sends all ran", round);
	t_destroy(sys);
}

int main(void)
{
	/* This test is about io_uring being refused, not switched off: the
	 * suite's epoll run (URA_IO_URING=0) must not skip the ladder. */
	unsetenv("URA_IO_URING");
	int rc = block_io_uring();
	if (rc < 0) {
		t_skip("cannot install a seccomp filter here");
		return t_done();
	}
	t_ok(1, "seccomp filter installed: io_uring_setup now fails with EPERM");
	long r = syscall(__NR_io_uring_setup, 4, NULL);
	t_ok(r < 0 && errno == EPERM, "io_uring_setup refused (%s)", strerror(errno));
	run_one(1);
	t_eq(atomic_load(&g_fallback_lines), 1, "the fallback was said exactly once");
	run_one(2);
	t_eq(atomic_load(&g_fallback_lines), 1, "and not again for a second system");
	return t_done();
}
