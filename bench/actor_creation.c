/* SPDX-License-Identifier: MIT */
/*
 * actor_creation N (libcppa "Actor Creation Overhead"): recursive spreading.
 * An actor getting spread(n > 0) spawns two children, sends each
 * spread(n-1), waits for their two result(x) and answers result(x1 + x2) to
 * its parent; spread(0) answers result(1). The root's result must be 2^N;
 * 2^(N+1)-1 actors are spawned in all.
 *
 * Memory: peak_rss_kb is getrusage's ru_maxrss for the whole run; live_peak
 * is the most actors alive at once (sampled from ura_system_stats every
 * 100 us by a helper thread), and bytes_per_live_actor the RSS growth over
 * the tree run divided by live_peak. Before that, untimed, in a forked
 * child (a clean heap), a system spawns `idle` = 2^N actors that never run
 * (bytes_per_idle_actor: RSS growth per actor, slot + state) and sends each
 * one message that it handles (bytes_per_idle_actor_after_msg: an actor
 * keeps its last message as the mailbox's stub node until the next one
 * arrives).
 *
 * --body: the spreading actors are context-switching actors (issue 18),
 * libcppa's stacked actors of the seed's version: each body receives its
 * spread(n), spawns its two children, receives their two results and
 * answers, as sequential code; its stack (16 KiB reserved, URA_STACK_MIN)
 * comes from the system's pool and goes back when the body returns. The
 * idle-actor measurement is the event-based one's (bench/fiber create
 * measures idle bodies).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "bench.h"

#define A_SPREAD URA_ATOM("spread")
#define A_RESULT URA_ATOM("result")
#define A_SPAWN URA_ATOM("spawn")
#define A_POKE URA_ATOM("poke")

typedef struct { ura_ref parent; int64_t acc; int got; } spread_state;

static int64_t result = -1;

static void answer(ura_ctx *cx, ura_ref parent, int64_t v)
{
	if (ura_ref_null(parent))
		result = v;
	else
		B_CHECK(ura_send(cx, parent, A_RESULT, v));
	ura_stop(cx);
}

static const ura_class spread_class;

static void on_spread(ura_ctx *cx, const ura_msg *m)
{
	spread_state *s = ura_state(cx);
	int64_t n = ura_arg_i64(m, 0);
	if (n == 0) {
		answer(cx, s->parent, 1);
		return;
	}
	spread_state child = { .parent = ura_self(cx) };
	for (int i = 0; i < 2; i++) {
		ura_ref c;
		B_CHECK(ura_spawn(cx, &spread_class, &child, &c));
		B_CHECK(ura_send(cx, c, A_SPREAD, n - 1));
	}
}

static void on_result(ura_ctx *cx, const ura_msg *m)
{
	spread_state *s = ura_state(cx);
	s->acc += ura_arg_i64(m, 0);
	if (++s->got == 2)
		answer(cx, s->parent, s->acc);
}

URA_BEHAVIOR(spread_beh,
	URA_ON(A_SPREAD, "i", on_spread),
	URA_ON(A_RESULT, "i", on_result));
static const ura_class spread_class = { .name = "spreading", .state_size = sizeof(spread_state), .initial = &spread_beh };

/* ---- --body: the same tree, as sequential code ------------------------- */

typedef struct { ura_ref parent; int64_t n, acc; } body_state;

static void body_spread(ura_ctx *cx, const ura_msg *m)
{
	((body_state *)ura_state(cx))->n = ura_arg_i64(m, 0);
}
static void body_result(ura_ctx *cx, const ura_msg *m)
{
	((body_state *)ura_state(cx))->acc += ura_arg_i64(m, 0);
}
URA_BEHAVIOR(body_spreading, URA_ON(A_SPREAD, "i", body_spread));
URA_BEHAVIOR(body_collecting, URA_ON(A_RESULT, "i", body_result));

static const ura_class spread_body_class;

static void spread_body(ura_ctx *cx, void *st)
{
	body_state *s = st;
	B_CHECK(ura_receive(cx, &body_spreading, URA_FOREVER));
	int64_t v = 1;
	if (s->n > 0) {
		body_state child = { .parent = ura_self(cx) };
		for (int i = 0; i < 2; i++) {
			ura_ref c;
			B_CHECK(ura_spawn(cx, &spread_body_class, &child, &c));
			B_CHECK(ura_send(cx, c, A_SPREAD, s->n - 1));
		}
		for (int i = 0; i < 2; i++)
			B_CHECK(ura_receive(cx, &body_collecting, URA_FOREVER));
		v = s->acc;
	}
	if (ura_ref_null(s->parent))
		result = v;
	else
		B_CHECK(ura_send(cx, s->parent, A_RESULT, v));
	/* Returning stops the actor (URA_NORMAL); its stack goes back. */
}
static const ura_class spread_body_class = { .name = "spreading_body",
					     .state_size = sizeof(body_state),
					     .body = spread_body, .stack_size = URA_STACK_MIN };

/* ---- the idle-actor measurement ---------------------------------------- */

static ura_ref *idle_refs;
static int64_t idle_n;

static void on_idle_poke(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
URA_BEHAVIOR(idle_beh, URA_ON(A_POKE, "", on_idle_poke));
static const ura_class idle_class = { .name = "idle", .state_size = sizeof(spread_state), .initial = &idle_beh };

static void on_spawn(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int64_t i = 0; i < idle_n; i++)
		B_CHECK(ura_spawn(cx, &idle_class, NULL, &idle_refs[i]));
}

static void on_poke_all(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int64_t i = 0; i < idle_n; i++)
		B_CHECK(ura_send(cx, idle_refs[i], A_POKE));
}

URA_BEHAVIOR(spawner_beh,
	URA_ON(A_SPAWN, "", on_spawn),
	URA_ON(A_POKE, "", on_poke_all));
static const ura_class spawner_class = { .name = "spawner", .initial = &spawner_beh };

/* Untimed, in a child process forked before anything else ran, so that
 * its RSS figures start from a clean heap: spawns n actors that never run,
 * then sends each one message. Writes the two bytes-per-actor figures. */
static void measure_idle(int64_t n, double out[2])
{
	int fd[2];
	out[0] = out[1] = -1;
	if (pipe(fd) < 0)
		return;
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		close(fd[0]);
		idle_n = n;
		idle_refs = malloc((size_t)idle_n * sizeof *idle_refs);
		if (!idle_refs)
			_exit(1);
		for (int64_t i = 0; i < idle_n; i++)
			idle_refs[i] = URA_NOREF; /* touch it before the baseline */
		ura_system *sys = b_system();
		ura_ref sp;
		B_CHECK(ura_spawn(sys, &spawner_class, NULL, &sp));
		B_CHECK(ura_system_await(sys));
		long i0 = b_rss_kb();
		B_CHECK(ura_send(sys, sp, A_SPAWN));
		B_CHECK(ura_system_await(sys));
		long i1 = b_rss_kb();
		B_CHECK(ura_send(sys, sp, A_POKE));
		B_CHECK(ura_system_await(sys));
		long i2 = b_rss_kb();
		ura_stats st;
		ura_system_stats(sys, &st);
		if (st.live != (uint64_t)idle_n + 1 || ura_system_destroy(sys) < 0)
			_exit(1);
		double r[2] = { (double)(i1 - i0) * 1024.0 / (double)idle_n,
				(double)(i2 - i0) * 1024.0 / (double)idle_n };
		if (write(fd[1], r, sizeof r) != (ssize_t)sizeof r)
			_exit(1);
		_exit(0);
	}
	close(fd[1]);
	double r[2];
	if (read(fd[0], r, sizeof r) == (ssize_t)sizeof r) {
		out[0] = r[0];
		out[1] = r[1];
	}
	close(fd[0]);
	int status;
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		b_fail("idle-actor measurement");
}

/* ---- live-actor sampler ------------------------------------------------- */

static _Atomic int sampling;
static uint64_t live_peak;

static void *sampler(void *arg)
{
	ura_system *sys = arg;
	struct timespec ts = { 0, 100000 };
	while (atomic_load(&sampling)) {
		ura_stats st;
		if (ura_system_stats(sys, &st) == 0 && st.live > live_peak)
			live_peak = st.live;
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int64_t N = b_pos(argc, argv, 1, 19);
	if (N > 30)
		b_fail("N too large (at most 30)");
	int body = b_flag(argc, argv, "--body");
	double idle[2];
	measure_idle((int64_t)1 << N, idle);
	ura_system *sys = b_system();
	long rss0 = b_rss_kb();
	pthread_t th;
	atomic_store(&sampling, 1);
	if (pthread_create(&th, NULL, sampler, sys))
		b_fail("pthread_create");
	double t0 = b_now();
	ura_ref root;
	if (body)
		B_CHECK(ura_spawn(sys, &spread_body_class, &(body_state){ .parent = URA_NOREF },
				  &root));
	else
		B_CHECK(ura_spawn(sys, &spread_class, &(spread_state){ .parent = URA_NOREF },
				  &root));
	B_CHECK(ura_send(sys, root, A_SPREAD, N));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	atomic_store(&sampling, 0);
	pthread_join(th, NULL);
	long peak_kb = b_peak_rss_kb();
	ura_stats st;
	ura_system_stats(sys, &st);
	unsigned workers = st.workers;
	int rc = ura_system_destroy(sys);
	int64_t want = (int64_t)1 << N, actors = 2 * want - 1;
	if (result != want || rc < 0 || st.spawned != (uint64_t)actors) {
		fprintf(stderr, "result=%lld want 2^%lld=%lld spawned=%llu destroy=%d\n",
			(long long)result, (long long)N, (long long)want,
			(unsigned long long)st.spawned, rc);
		b_fail("actor_creation");
	}
	double per_live = live_peak ? (double)(peak_kb - rss0) * 1024.0 / (double)live_peak : 0;

	printf("bench=actor_creation system=ura workers=%u actors_are=%s n=%lld actors=%lld "
	       "live_peak=%llu stacks_mapped_end=%llu "
	       "peak_rss_kb=%ld bytes_per_live_actor=%.0f idle=%lld bytes_per_idle_actor=%.0f "
	       "bytes_per_idle_actor_after_msg=%.0f wall_s=%.6f rate=%.0f\n",
	       workers, body ? "bodies" : "event", (long long)N, (long long)actors,
	       (unsigned long long)live_peak, (unsigned long long)st.stacks_mapped,
	       peak_kb, per_live, (long long)want, idle[0], idle[1], dt,
	       (double)actors / dt);
	return 0;
}
