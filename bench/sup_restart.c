/* SPDX-License-Identifier: MIT */
/*
 * sup_restart: a supervisor's restart of a crashed child (issue 15's
 * target: <= 5 us), as a round trip a driver actor times:
 *
 *   driver --crash--> child   (it exits with reason "boom")
 *   child  --EXIT---> supervisor (link, trapped)   restart: spawn + link
 *   new child's init --up(ref)--> driver           one round
 *
 * and, for scale, the same round without a supervisor ("bare"): the
 * driver itself spawns the child with a monitor and, on its DOWN, spawns
 * the next one; the child's init reports as above. The difference is what
 * supervision adds to a crash, an exit and a spawn.
 *
 *   sup_restart [rounds [mode]]    mode: sup (default) or bare
 *
 * Prints the rate of rounds and the p50/p99 of one round (crash sent to
 * up received), as logfmt.
 */
#include "bench.h"

#define A_CRASH URA_ATOM("crash")
#define A_UP URA_ATOM("up")
#define A_BOOM URA_ATOM("boom")

static ura_ref driver;
static long rounds, done;
static uint64_t *lat;
static uint64_t t_sent;
static int bare;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void kid_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_BOOM, URA_NOVALUE);
}

URA_BEHAVIOR(kid_beh, URA_ON(A_CRASH, "", kid_crash));

static int kid_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)state;
	(void)arg;
	return ura_send(cx, driver, A_UP, ura_self(cx));
}

static const ura_class kid_class = {
	.name = "kid",
	.initial = &kid_beh,
	.init = kid_init,
};

static void crash(ura_ctx *cx, ura_ref kid)
{
	t_sent = now_ns();
	ura_send(cx, kid, A_CRASH);
}

static void on_up(ura_ctx *cx, const ura_msg *m)
{
	if (t_sent)
		lat[done++] = now_ns() - t_sent;
	if (done == rounds) {
		ura_stop(cx);
		return;
	}
	crash(cx, ura_arg_ref(m, 0));
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_mon mon;
	if (done < rounds)
		ura_spawn_ex(cx, &kid_class, NULL, &(ura_spawn_opts){ .monitor = &mon }, NULL);
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_mon mon;
	if (bare)
		ura_spawn_ex(cx, &kid_class, NULL, &(ura_spawn_opts){ .monitor = &mon }, NULL);
}

URA_BEHAVIOR(driver_beh,
	URA_ON(URA_ATOM("go"), "", on_go),
	URA_ON(A_UP, "r", on_up),
	URA_ON_ANY(URA_DOWN, on_down));

static const ura_class driver_class = {
	.name = "driver",
	.initial = &driver_beh,
};

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	rounds = b_arg(argc, argv, 1, 200000);
	bare = argc > 2 && !strcmp(argv[2], "bare");
	lat = calloc((size_t)rounds, sizeof *lat);
	ura_system *sys = b_system();
	B_CHECK(ura_spawn(sys, &driver_class, NULL, &driver));
	static const ura_child_spec kid = { .id = URA_ATOM("kid"), .cls = &kid_class };
	/* Unbounded in effect: more than URA_SUP_MAX_INTENSITY restarts
	 * within 1 ns cannot happen. */
	static const ura_sup_spec spec = { .intensity = URA_SUP_MAX_INTENSITY, .period_ns = 1,
					   .children = &kid, .nchildren = 1 };
	ura_ref sup = URA_NOREF;
	double t0 = b_now();
	if (bare)
		B_CHECK(ura_send(sys, driver, URA_ATOM("go")));
	else
		B_CHECK(ura_sup_start(sys, &spec, NULL, &sup));
	B_CHECK(ura_system_await(sys));
	double wall = b_now() - t0;
	if (done != rounds)
		b_fail("not every round finished");
	if (!bare) {
		ura_sup_child k;
		if (ura_sup_which_sys(sys, sup, &k, 1) != 1 || k.restarts != (uint64_t)rounds)
			b_fail("the supervisor did not count every restart");
		ura_kill(sys, sup, URA_SHUTDOWN);
		ura_system_await(sys);
	}
	ura_stats st;
	ura_system_stats(sys, &st);
	double sum = 0;
	for (long i = 0; i < rounds; i++)
		sum += (double)lat[i];
	qsort(lat, (size_t)rounds, sizeof *lat, cmp);
	printf("bench=sup_restart system=ura mode=%s workers=%u n=%ld wall_s=%.3f rate=%.0f "
	       "ns_per_round=%.0f mean_ns=%.0f p50_ns=%llu p99_ns=%llu max_ns=%llu\n",
	       bare ? "bare" : "sup", st.workers, rounds, wall, rounds / wall, wall * 1e9 / rounds, sum / rounds,
	       (unsigned long long)lat[rounds / 2], (unsigned long long)lat[rounds * 99 / 100],
	       (unsigned long long)lat[rounds - 1]);
	free(lat);
	return ura_system_destroy(sys) < 0;
}
