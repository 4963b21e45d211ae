/* SPDX-License-Identifier: MIT */
/*
 * The dining philosophers, as libcppa's event-based example has them:
 * chopsticks are actors that are `available` or `taken_by(philosopher)`;
 * philosophers are actors that are thinking, hungry, denied,
 * waiting_for(the other chopstick) or eating. One `think` to the
 * dinner-club group starts them all; every state change after that is
 * driven by a delayed send.
 *
 *   dining_philosophers [--period-ms MS] [--duration S] [--philosophers N]
 *
 * Ctrl-C (SIGINT) or SIGTERM ends the dinner cleanly, as does --duration.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ura.h>

#define A_TAKE URA_ATOM("take")
#define A_PUT URA_ATOM("put")
#define A_TAKEN URA_ATOM("taken")
#define A_BUSY URA_ATOM("busy")
#define A_THINK URA_ATOM("think")
#define A_EAT URA_ATOM("eat")
#define A_LEAVE URA_ATOM("leave")

struct dinner_opts {
	uint64_t period_ns;
	double duration_s; /* 0: until a signal */
	int n;
	int quiet;
};

/* What the runtime check saw (tests read it): who holds each chopstick,
 * as the philosophers believe it when they eat. */
struct dinner_report {
	_Atomic int *holder;       /* per chopstick: philosopher + 1, or 0 */
	_Atomic long *meals;       /* per philosopher */
	_Atomic long violations;   /* a chopstick held by two at once */
	_Atomic long max_hungry_periods; /* longest wait to eat, in periods */
};

static struct dinner_report *report;

static const char *const names[] = { "Plato", "Hume", "Kant", "Nietzsche", "Descartes" };

/* ---- chopsticks ------------------------------------------------------ */

typedef struct { int id; } chopstick;

static const ura_behavior available;

static void busy(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_BUSY, ura_self(cx));
}

/* put(philos) only from the philosopher that holds it (the bound ref). */
static int from_holder(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	(void)arg;
	return ura_ref_eq(ura_arg_ref(m, 0), ura_bound(cx).u.ref);
}

static void put_back(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &available);
}

static void leave(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(taken_by,
	URA_ON(A_TAKE, "r", busy),
	URA_ON(A_PUT, "r", put_back, .guard = from_holder),
	URA_ON(A_LEAVE, "", leave));

static void take(ura_ctx *cx, const ura_msg *m)
{
	ura_ref philos = ura_arg_ref(m, 0);
	ura_send(cx, philos, A_TAKEN, ura_self(cx));
	ura_become_bound(cx, &taken_by, philos);
}

URA_BEHAVIOR(available,
	URA_ON(A_TAKE, "r", take),
	URA_ON(A_LEAVE, "", leave));

static const ura_class chopstick_class = {
	.name = "chopstick",
	.state_size = sizeof(chopstick),
	.initial = &available,
};

/* ---- philosophers ---------------------------------------------------- */

typedef struct {
	const char *name;
	int id;
	ura_ref left, right;
	int left_id, right_id;
	uint64_t period;
	int quiet;
	uint64_t hungry_since; /* when it first got hungry after its last meal */
} philosopher;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * URA_SEC + (uint64_t)ts.tv_nsec;
}

static const ura_behavior thinking, hungry, denied, waiting_for, eating;

static void say(philosopher *p, const char *fmt, const char *what)
{
	if (!p->quiet) {
		printf(fmt, p->name, what);
		fflush(stdout);
	}
}

/* thinking: eat -> hungry, ask both chopsticks */
static void get_hungry(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	(void)m;
	if (!p->hungry_since)
		p->hungry_since = now_ns();
	ura_become(cx, &hungry);
	ura_send(cx, p->left, A_TAKE, ura_self(cx));
	ura_send(cx, p->right, A_TAKE, ura_self(cx));
}


/* Back to thinking, and try again soon. The seed retries at once, which
 * spins through take/busy/put while a neighbour eats; a fifth of a period
 * of thought costs the same states and no CPU. */
static void retry(ura_ctx *cx)
{
	philosopher *p = ura_state(cx);
	ura_send_after(cx, ura_self(cx), p->period / 5, A_EAT);
	ura_become(cx, &thinking);
}

/* hungry: the first answer decides */
static void first_taken(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	ura_ref got = ura_arg_ref(m, 0);
	ura_become_bound(cx, &waiting_for, ura_ref_eq(got, p->left) ? p->right : p->left);
}

static void first_busy(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &denied);
}

static void mark(philosopher *p, int take_them)
{
	if (!report)
		return;
	int me = p->id + 1;
	int sticks[2] = { p->left_id, p->right_id };
	for (int i = 0; i < 2; i++) {
		int expect = take_them ? 0 : me;
		if (!atomic_compare_exchange_strong(&report->holder[sticks[i]], &expect,
						    take_them ? me : 0))
			atomic_fetch_add(&report->violations, 1);
	}
	if (take_them) {
		atomic_fetch_add(&report->meals[p->id], 1);
		long w = (long)((now_ns() - p->hungry_since + p->period - 1) / p->period);
		long cur = atomic_load(&report->max_hungry_periods);
		while (w > cur && !atomic_compare_exchange_weak(&report->max_hungry_periods, &cur, w))
			;
	}
}

/* waiting_for(other): the other chopstick answered */
static int is_awaited(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	(void)arg;
	return ura_ref_eq(ura_arg_ref(m, 0), ura_bound(cx).u.ref);
}

static void second_taken(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	(void)m;
	mark(p, 1);
	p->hungry_since = 0;
	if (!p->quiet)
		printf("%s has picked up chopsticks with IDs %d and %d and starts to eat\n",
		       p->name, p->left_id, p->right_id);
	ura_send_after(cx, ura_self(cx), p->period, A_THINK);
	ura_become(cx, &eating);
}

static void second_busy(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	ura_ref held = ura_ref_eq(ura_arg_ref(m, 0), p->left) ? p->right : p->left;
	ura_send(cx, held, A_PUT, ura_self(cx));
	retry(cx);
}

/* denied: whatever the second answer is, give up for now */
static void denied_taken(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_PUT, ura_self(cx));
	retry(cx);
}

static void denied_busy(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	retry(cx);
}

/* eating: think -> put both down, think for a period */
static void stop_eating(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	(void)m;
	mark(p, 0);
	ura_send(cx, p->left, A_PUT, ura_self(cx));
	ura_send(cx, p->right, A_PUT, ura_self(cx));
	ura_send_after(cx, ura_self(cx), p->period, A_EAT);
	say(p, "%s puts down his chopsticks and starts to think%s\n", "");
	ura_become(cx, &thinking);
}

/* The first think (from the dinner-club group). */
static void start_thinking(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	(void)m;
	say(p, "%s starts to think%s\n", "");
	ura_send_after(cx, ura_self(cx), p->period, A_EAT);
	ura_become(cx, &thinking);
}

static void philosopher_leave(ura_ctx *cx, const ura_msg *m)
{
	philosopher *p = ura_state(cx);
	(void)m;
	/* Leaving mid-meal: the chopsticks go back first. */
	if (report && ura_bound(cx).type == 0 && report->holder[p->left_id] == p->id + 1)
		mark(p, 0);
	ura_stop(cx); /* its pending eat/think timers are cancelled with it */
}

URA_BEHAVIOR(init_state,
	URA_ON(A_THINK, "", start_thinking),
	URA_ON(A_LEAVE, "", philosopher_leave));
URA_BEHAVIOR(thinking,
	URA_ON(A_EAT, "", get_hungry),
	URA_ON(A_LEAVE, "", philosopher_leave));
URA_BEHAVIOR(hungry,
	URA_ON(A_TAKEN, "r", first_taken),
	URA_ON(A_BUSY, "r", first_busy),
	URA_ON(A_LEAVE, "", philosopher_leave));
URA_BEHAVIOR(waiting_for,
	URA_ON(A_TAKEN, "r", second_taken, .guard = is_awaited),
	URA_ON(A_BUSY, "r", second_busy, .guard = is_awaited),
	URA_ON(A_LEAVE, "", philosopher_leave));
URA_BEHAVIOR(denied,
	URA_ON(A_TAKEN, "r", denied_taken),
	URA_ON(A_BUSY, "r", denied_busy),
	URA_ON(A_LEAVE, "", philosopher_leave));
URA_BEHAVIOR(eating,
	URA_ON(A_THINK, "", stop_eating),
	URA_ON(A_LEAVE, "", philosopher_leave));

static const ura_class philosopher_class = {
	.name = "philosopher",
	.state_size = sizeof(philosopher),
	.initial = &init_state,
};

/* ---- the host: ends the dinner on a signal or after --duration ------ */

typedef struct {
	ura_group *club, *sticks;
	int quiet;
	int ended;
} host;

static void end_dinner(ura_ctx *cx, const ura_msg *m)
{
	host *h = ura_state(cx);
	if (h->ended)
		return;
	h->ended = 1;
	if (!h->quiet && ura_msg_tag(m) == URA_SIGNAL)
		printf("(signal %lld: the dinner ends)\n", (long long)ura_arg_i64(m, 0));
	ura_send_group(cx, h->club, A_LEAVE);
	ura_send_group(cx, h->sticks, A_LEAVE);
	ura_stop(cx);
}

URA_BEHAVIOR(hosting,
	URA_ON(URA_SIGNAL, "i", end_dinner),
	URA_ON(A_LEAVE, "", end_dinner));

static const ura_class host_class = {
	.name = "host",
	.state_size = sizeof(host),
	.initial = &hosting,
};

/* Runs one dinner to its end; returns 0 or -errno. */
static int dinner(const struct dinner_opts *o)
{
	ura_system *sys;
	int rc = ura_system_new(&sys, NULL);
	if (rc < 0)
		return rc;
	ura_group *club, *sticks;
	ura_ref *stick = calloc((size_t)o->n, sizeof *stick);
	char **names_made = calloc((size_t)o->n, sizeof *names_made);
	if (!stick || !names_made) {
		free(stick);
		free(names_made);
		ura_system_destroy(sys);
		return -ENOMEM;
	}
	ura_ref h;
	if ((rc = ura_group_named(sys, "dinner-club", &club)) < 0 ||
	    (rc = ura_group_new(sys, &sticks)) < 0 ||
	    (rc = ura_spawn(sys, &host_class, &(host){ club, sticks, o->quiet, 0 }, &h)) < 0)
		goto out;
	for (int i = 0; i < o->n; i++) {
		ura_spawn_opts so = { .group = sticks };
		if ((rc = ura_spawn_ex(sys, &chopstick_class, &(chopstick){ i }, &so, &stick[i])) < 0)
			goto out;
	}
	for (int i = 0; i < o->n; i++) {
		char *name = NULL;
		if (i >= 5) {
			size_t len = strlen(names[i % 5]) + 16;
			name = names_made[i] = malloc(len);
			if (name)
				snprintf(name, len, "%s %d", names[i % 5], i / 5 + 1);
		}
		philosopher p = {
			.name = name ? name : names[i % 5], .id = i,
			.left = stick[i], .right = stick[(i + 1) % o->n],
			.left_id = i, .right_id = (i + 1) % o->n,
			.period = o->period_ns, .quiet = o->quiet,
		};
		ura_spawn_opts so = { .group = club };
		if ((rc = ura_spawn_ex(sys, &philosopher_class, &p, &so, NULL)) < 0)
			goto out;
	}
	/* Ctrl-C and SIGTERM reach the host as messages. */
	if ((rc = ura_signal_subscribe(sys, SIGINT, h)) < 0 ||
	    (rc = ura_signal_subscribe(sys, SIGTERM, h)) < 0)
		goto out;
	if (o->duration_s > 0 &&
	    (rc = (int)ura_send_after(sys, h, (uint64_t)(o->duration_s * 1e9), A_LEAVE)) < 0)
		goto out;
	if ((rc = (int)ura_send_group(sys, club, A_THINK)) < 0)
		goto out;
	rc = ura_system_await(sys);
out:
	ura_signal_unsubscribe(sys, SIGINT);
	ura_signal_unsubscribe(sys, SIGTERM);
	int drc = ura_system_destroy(sys);
	for (int i = 0; i < o->n; i++)
		free(names_made[i]);
	free(names_made);
	free(stick);
	return rc < 0 ? rc : drc;
}

#ifndef DINING_PHILOSOPHERS_NO_MAIN

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--period-ms MS] [--duration S] [--philosophers N]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	struct dinner_opts o = { .period_ns = 5000 * URA_MSEC, .duration_s = 0, .n = 5 };
	for (int i = 1; i < argc; i++) {
		char *end = NULL;
		if (!strcmp(argv[i], "--period-ms") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 1)
				usage(argv[0]);
			o.period_ns = (uint64_t)v * URA_MSEC;
		} else if (!strcmp(argv[i], "--duration") && i + 1 < argc) {
			o.duration_s = strtod(argv[++i], &end);
			if (*end || o.duration_s <= 0)
				usage(argv[0]);
		} else if (!strcmp(argv[i], "--philosophers") && i + 1 < argc) {
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 2 || v > 100000)
				usage(argv[0]);
			o.n = (int)v;
		} else if (!strcmp(argv[i], "--quiet")) {
			o.quiet = 1;
		} else {
			usage(argv[0]);
		}
	}
	int rc = dinner(&o);
	if (rc < 0) {
		fprintf(stderr, "dining_philosophers: %s\n", ura_strerror(rc));
		return 1;
	}
	return 0;
}
#endif
