/* SPDX-License-Identifier: MIT */
/*
 * timeout_churn [N] [CHAIN]: the cost of a request timeout armed and
 * cancelled by a busy actor. CHAIN actors (default 1) each take N
 * requests (default 1000000), sent to themselves one after another; each
 * request arms a 1 s delayed send (its timeout) and cancels it (its
 * reply came), so the worker's wheel goes empty and non-empty once a
 * request. With two workers and one busy chain the other worker has
 * nothing to do: an arm that moves a busy worker's earliest deadline
 * earlier wakes a sleeping peer to watch it unless one will look in
 * time anyway (time/timers.c, watch_due),
 * and how often that happens is what this measures: wakeups (sent by
 * the workers), the sleeps of all workers, requests/s and the process's
 * CPU seconds per million requests.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"

#define A_REQ URA_ATOM("req")
#define A_TIMEOUT URA_ATOM("timeout")

static _Atomic long g_done, g_timeouts;

static void on_req(ura_ctx *cx, const ura_msg *m)
{
	int64_t left = ura_arg_i64(m, 0);
	ura_timer t = ura_send_after(cx, ura_self(cx), URA_SEC, A_TIMEOUT);
	if (t < 0)
		b_fail("ura_send_after");
	if (ura_cancel(ura_ctx_system(cx), t) < 0)
		b_fail("ura_cancel");
	if (left > 1)
		ura_send(cx, ura_self(cx), A_REQ, left - 1);
	else
		atomic_fetch_add(&g_done, 1);
}

static void on_timeout(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_timeouts, 1);
}

URA_BEHAVIOR(server_beh, URA_ON(A_REQ, "i", on_req), URA_ON(A_TIMEOUT, "", on_timeout));
static const ura_class server_class = { .name = "server", .initial = &server_beh };

int main(int argc, char **argv)
{
	long n = (long)b_arg(argc, argv, 1, 1000000);
	int chains = (int)b_arg(argc, argv, 2, 1);
	if (n < 1 || chains < 1 || chains > 1024)
		b_fail("usage: timeout_churn [N>=1 [CHAIN 1..1024]]");
	ura_system *sys = b_system();
	ura_ref *s = calloc((size_t)chains, sizeof *s);
	for (int i = 0; i < chains; i++)
		B_CHECK(ura_spawn(sys, &server_class, NULL, &s[i]));
	B_CHECK(ura_system_await(sys));
	ura_stats s0, s1;
	ura_system_stats(sys, &s0);
	double c0 = b_cpu_s(), t0 = b_now();
	for (int i = 0; i < chains; i++)
		B_CHECK(ura_send(sys, s[i], A_REQ, (int64_t)n));
	B_CHECK(ura_system_await(sys));
	double t = b_now() - t0, c = b_cpu_s() - c0;
	ura_system_stats(sys, &s1);
	if (atomic_load(&g_done) != chains || atomic_load(&g_timeouts))
		b_fail("a chain did not finish, or a cancelled timeout fired");
	double reqs = (double)n * chains;
	printf("bench=timeout_churn system=ura workers=%u chains=%d msgs=%.0f cpu_s_per_m=%.3f "
	       "wakeups=%llu sleeps=%llu wall_s=%.6f rate=%.0f\n",
	       s1.workers, chains, reqs, c / reqs * 1e6,
	       (unsigned long long)(s1.wakeups - s0.wakeups),
	       (unsigned long long)(s1.sleeps - s0.sleeps), t, reqs / t);
	free(s);
	return ura_system_destroy(sys) < 0;
}
