/* SPDX-License-Identifier: MIT */
/*
 * The timing wheel alone (lib/time/wheel.c), on a simulated clock: the
 * checks are about which timers fire at which "now", so real time would
 * only make them slow and flaky. The one wall-clock check is that
 * crossing a long idle stretch costs nothing like the ticks it spans.
 */
#include "tap.h"

#include "time/wheel.h"

#define TICK 1024u /* a power of two, so the requested tick is the tick */
#define T0 ((uint64_t)1000 * URA_SEC) /* a clock that has run a while */

struct rec {
	struct ura__timer t;
	uint64_t fired_at; /* simulated now when fired, 0 if not */
	unsigned fires;
};

/* What the fire callback checks, for every timer it sees. */
struct run {
	uint64_t now, prev_now; /* this expire's now, the one before */
	uint64_t last_tick;     /* tick boundary of the last fired timer */
	uint64_t tick;
	size_t fired, early, late, unordered, stale;
	int strict_late;        /* lateness must be < one tick (woke at next) */
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* splitmix64: deterministic, so a failure replays. */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t boundary(uint64_t dl, uint64_t tick)
{
	return (dl + tick - 1) / tick * tick;
}

static void on_fire(struct ura__timer *t, void *ud)
{
	struct run *r = ud;
	struct rec *x = (struct rec *)t;
	uint64_t b = boundary(t->deadline, r->tick);

	x->fired_at = r->now;
	x->fires++;
	r->fired++;
	if (t->deadline > r->now)
		r->early++;
	if (r->strict_late ? r->now - t->deadline >= r->tick : b <= r->prev_now)
		r->late++;
	if (b < r->last_tick)
		r->unordered++;
	r->last_tick = b;
	if (ura__wheel_armed(t))
		r->stale++; /* must be unlinked before fire() */
}

/* Wake exactly at next() every time, as a worker does. */
static size_t run_at_next(struct ura__wheel *w, struct run *r, size_t *idle)
{
	uint64_t nx;
	size_t calls = 0;

	*idle = 0;
	while ((nx = ura__wheel_next(w)) != UINT64_MAX) {
		size_t n;
		if (nx > r->now) {
			r->prev_now = r->now;
			r->now = nx;
		}
		n = ura__wheel_expire(w, r->now, on_fire, r);
		if (!n)
			(*idle)++;
		if (++calls > 100000000)
			break;
	}
	return calls;
}

static void test_sizes(void)
{
	t_diag("sizeof(struct ura__timer) = %zu, sizeof(struct ura__wheel) = %zu",
	       sizeof(struct ura__timer), sizeof(struct ura__wheel));
	t_ok(sizeof(struct ura__timer) <= 32, "timer node is at most 32 bytes (%zu)",
	     sizeof(struct ura__timer));
}

static void test_empty(void)
{
	struct ura__wheel w;
	struct run r = { .now = T0, .tick = TICK };

	ura__wheel_init(&w, T0, TICK);
	t_eq(ura__wheel_tick(&w), TICK, "tick is the requested power of two");
	t_ok(ura__wheel_next(&w) == UINT64_MAX, "empty wheel: next is UINT64_MAX");
	t_eq(ura__wheel_expire(&w, T0 + 1000 * URA_SEC, on_fire, &r), 0,
	     "empty wheel: expire fires nothing");
	t_eq(ura__wheel_count(&w), 0, "empty wheel: count 0");
	ura__wheel_init(&w, T0, 1500);
	t_eq(ura__wheel_tick(&w), 1024, "tick 1500 rounds down to 1024");
	ura__wheel_init(&w, T0, 1);
	t_ok(ura__wheel_tick(&w) >= 512 && ura__wheel_tick(&w) <= 1000,
	     "tick below 1 us is raised to 1 us, then rounded down");
}

/* 100k random deadlines within `range` of now, woken at next() each
 * time: nothing early, nothing a tick late, tick order, and almost no
 * wakeup that fires nothing: only the steps of a pre-cascade that no
 * fire carried (time/wheel.c: at most one per 512 timers it moves, and
 * a timer is pre-cascaded at most once per level from 2 up). */
static void test_order_at_next(uint64_t range, const char *name, size_t n)
{
	struct ura__wheel w;
	struct rec *v = calloc(n, sizeof(*v));
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
	size_t i, idle, calls, lost = 0;

	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < n; i++) {
		v[i].t.deadline = T0 + 1 + rnd() % range;
		ura__wheel_add(&w, &v[i].t);
	}
	t_eq(ura__wheel_count(&w), n, "%s: count after %zu adds", name, n);
	calls = run_at_next(&w, &r, &idle);
	for (i = 0; i < n; i++)
		lost += v[i].fires != 1;
	t_eq(r.fired, n, "%s: all fired", name);
	t_eq(lost, 0, "%s: each exactly once", name);
	t_eq(r.early, 0, "%s: none early", name);
	t_eq(r.late, 0, "%s: none a tick or more late", name);
	t_eq(r.unordered, 0, "%s: in deadline (tick) order", name);
	t_eq(r.stale, 0, "%s: unlinked before fire", name);
	t_ok(idle <= n / 64, "%s: %zu wakeups without a timer of %zu, at most %zu", name, idle,
	     calls, n / 64);
	t_eq(ura__wheel_count(&w), 0, "%s: count 0 after", name);
	free(v);
}

/* The same, on a clock that moves by random steps, unrelated to next():
 * a timer fires at the first expire at or after its tick boundary. */
static void test_order_random_steps(uint64_t range, uint64_t max_step,
				    const char *name, size_t n)
{
	struct ura__wheel w;
	struct rec *v = calloc(n, sizeof(*v));
	struct run r = { .now = T0, .prev_now = 0, .tick = TICK };
	size_t i;

	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < n; i++) {
		v[i].t.deadline = T0 + rnd() % range;
		ura__wheel_add(&w, &v[i].t);
	}
	while (ura__wheel_count(&w)) {
		/* Sometimes a step of 0: an expire in the same tick. */
		r.prev_now = r.now;
		r.now += rnd() % (max_step + 1);
		ura__wheel_expire(&w, r.now, on_fire, &r);
	}
	t_eq(r.fired, n, "%s: all fired", name);
	t_eq(r.early, 0, "%s: none early", name);
	t_eq(r.late, 0, "%s: none due at an earlier expire", name);
	t_eq(r.unordered, 0, "%s: in deadline (tick) order", name);
	free(v);
}

/* Cancel half before they are due: they never fire, the rest do. */
static void test_del(void)
{
	enum { N = 20000 };
	struct ura__wheel w;
	struct rec *v = calloc(N, sizeof(*v));
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
	size_t i, idle, bad = 0, armed_bad = 0;

	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < N; i++) {
		v[i].t.deadline = T0 + 1 + rnd() % (600 * URA_SEC);
		ura__wheel_add(&w, &v[i].t);
	}
	for (i = 0; i < N; i += 2) {
		ura__wheel_del(&w, &v[i].t);
		armed_bad += ura__wheel_armed(&v[i].t) != 0;
		ura__wheel_del(&w, &v[i].t); /* twice: no-op */
	}
	t_eq(armed_bad, 0, "del: cancelled timers are not armed");
	t_eq(ura__wheel_count(&w), N / 2, "del: count halves");
	run_at_next(&w, &r, &idle);
	for (i = 0; i < N; i++)
		bad += v[i].fires != (i % 2 ? 1u : 0u);
	t_eq(bad, 0, "del: cancelled never fire, the others fire once");
	t_eq(r.early + r.late + r.unordered, 0, "del: the rest on time, in order");
	t_diag("del: %zu early wakeups (cancelled earliest of a coarse slot)", idle);

	/* del of a fired timer, of a never-armed one: no-ops. */
	v[1].t.deadline = r.now + 5 * URA_SEC;
	ura__wheel_add(&w, &v[1].t);
	ura__wheel_del(&w, &v[3].t);
	t_eq(ura__wheel_count(&w), 1, "del of a fired timer: no-op");
	ura__wheel_del(&w, &v[1].t);
	t_ok(ura__wheel_next(&w) == UINT64_MAX, "del of the last timer empties it");
	free(v);
}

/* Re-arm inside fire(), and cancel another timer from inside fire(). */
struct periodic {
	struct rec r;
	struct ura__wheel *w;
	uint64_t period;
	unsigned left;
	struct rec *victim;
	struct run *run;
};

static void on_periodic(struct ura__timer *t, void *ud)
{
	struct periodic *p = (struct periodic *)t;
	on_fire(t, ud);
	if (p->victim) {
		ura__wheel_del(p->w, &p->victim->t);
		p->victim = NULL;
	}
	if (--p->left) {
		t->deadline += p->period;
		ura__wheel_add(p->w, t);
	}
}

static void test_rearm(void)
{
	struct ura__wheel w;
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
	struct periodic p = { .w = &w, .period = 3 * URA_MSEC + 7, .left = 100 };
	struct rec victim = { .t.deadline = 0 };
	size_t n;
	uint64_t nx;

	ura__wheel_init(&w, T0, TICK);
	p.r.t.deadline = T0 + URA_MSEC;
	ura__wheel_add(&w, &p.r.t);
	while ((nx = ura__wheel_next(&w)) != UINT64_MAX) {
		r.prev_now = r.now;
		r.now = nx > r.now ? nx : r.now;
		ura__wheel_expire(&w, r.now, on_periodic, &r);
	}
	t_eq(p.r.fires, 100, "re-arm in fire: fired 100 times");
	t_eq(r.early + r.late + r.unordered, 0, "re-arm in fire: on time, in order");
	t_eq(r.now, boundary(T0 + URA_MSEC + 99 * p.period, TICK),
	     "re-arm in fire: last at its 100th period");

	/* One expire spanning many periods fires them all, in that call. */
	p.left = 50;
	p.r.fires = 0;
	p.r.t.deadline = r.now + URA_MSEC;
	ura__wheel_add(&w, &p.r.t);
	n = ura__wheel_expire(&w, r.now + URA_SEC, on_periodic, &r);
	t_eq(n, 50, "re-arm in fire: one long expire fires every period");

	/* Re-arming in the past from fire(): next expire, not this one. */
	r.now += URA_SEC;
	p.left = 1000;
	p.period = 0;
	p.r.fires = 0;
	p.r.t.deadline = r.now - URA_SEC;
	ura__wheel_add(&w, &p.r.t);
	n = ura__wheel_expire(&w, r.now, on_periodic, &r);
	t_eq(n, 1, "re-arm in the past from fire(): once per expire call");
	n = ura__wheel_expire(&w, r.now, on_periodic, &r);
	t_eq(n, 1, "... and again at the next call");
	ura__wheel_del(&w, &p.r.t);

	/* Cancel another timer due in the same expire, from fire(). */
	r = (struct run){ .now = r.now, .prev_now = r.now, .tick = TICK };
	p.left = 1;
	p.r.fires = 0;
	p.r.t.deadline = r.now + 10 * URA_MSEC;
	victim.t.deadline = r.now + 20 * URA_MSEC;
	p.victim = &victim;
	ura__wheel_add(&w, &victim.t);
	ura__wheel_add(&w, &p.r.t);
	n = ura__wheel_expire(&w, r.now + URA_SEC, on_periodic, &r);
	t_eq(n, 1, "cancel from fire(): only the canceller fired");
	t_eq(victim.fires, 0, "cancel from fire(): the victim never fires");
	t_eq(ura__wheel_count(&w), 0, "cancel from fire(): wheel empty");

	/* Same tick: the victim is right behind in the same slot. */
	r.now += URA_SEC;
	p.left = 1;
	p.r.t.deadline = r.now + 10 * URA_MSEC;
	victim.t.deadline = p.r.t.deadline;
	p.victim = &victim;
	ura__wheel_add(&w, &p.r.t);
	ura__wheel_add(&w, &victim.t);
	n = ura__wheel_expire(&w, r.now + URA_SEC, on_periodic, &r);
	t_eq(n + victim.fires, 1, "cancel from fire(), same tick: victim never fires");
}

/* Past deadlines fire at the next expire, even in the same tick, and
 * before anything due later; arming an armed timer moves it. */
static void test_past_and_move(void)
{
	struct ura__wheel w;
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK };
	struct rec a = { .t.deadline = 0 }, b = { .t.deadline = 0 };
	struct rec c = { .t.deadline = 0 };
	uint64_t now = T0 + 10 * URA_SEC;

	ura__wheel_init(&w, T0, TICK);
	r.now = now;
	t_eq(ura__wheel_expire(&w, now, on_fire, &r), 0, "advance to now");
	a.t.deadline = now - 5 * URA_SEC;
	b.t.deadline = now - 1;
	c.t.deadline = 1; /* the far past */
	ura__wheel_add(&w, &a.t);
	ura__wheel_add(&w, &b.t);
	ura__wheel_add(&w, &c.t);
	t_ok(ura__wheel_next(&w) <= now, "past deadline: next is not in the future");
	t_eq(ura__wheel_expire(&w, now, on_fire, &r), 3,
	     "past deadlines fire at the next expire, same now");
	t_eq(r.early, 0, "past deadlines: not early");

	a.t.deadline = now + 50 * URA_MSEC;
	ura__wheel_add(&w, &a.t);
	a.t.deadline = now + 10 * URA_MSEC;
	ura__wheel_add(&w, &a.t); /* move while armed */
	t_eq(ura__wheel_count(&w), 1, "add of an armed timer moves it");
	t_eq(ura__wheel_next(&w), boundary(now + 10 * URA_MSEC, TICK),
	     "moved timer: next is its new boundary");
	r.now = now + 10 * URA_MSEC;
	t_eq(ura__wheel_expire(&w, r.now, on_fire, &r), 0,
	     "not fired before its tick boundary");
	r.now = boundary(now + 10 * URA_MSEC, TICK);
	t_eq(ura__wheel_expire(&w, r.now, on_fire, &r), 1, "fired at its boundary");
	t_eq(a.fired_at, r.now, "fired once, at its boundary");
}

struct seq {
	size_t next;
	size_t bad;
};

static void on_seq(struct ura__timer *t, void *ud)
{
	struct seq *s = ud;
	struct rec *x = (struct rec *)t;
	if (x->fires != s->next)
		s->bad++;
	s->next++;
}

/* Same tick: fire in the order armed, also across cascades. */
static void test_fifo_order(void)
{
	enum { N = 64 };
	struct ura__wheel w;
	struct rec v[N];
	struct seq s = { 0, 0 };
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK };
	uint64_t dl = T0 + 90 * URA_SEC;
	size_t i;

	memset(v, 0, sizeof(v));
	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < N; i++) {
		v[i].fires = (unsigned)i; /* reused as the expected position */
		v[i].t.deadline = dl - (i % 3);
		ura__wheel_add(&w, &v[i].t);
		if (i == N / 2)
			ura__wheel_expire(&w, dl - 3 * URA_SEC, on_fire, &r);
	}
	t_eq(ura__wheel_expire(&w, dl, on_seq, &s), N, "fifo: all fire");
	t_eq(s.bad, 0, "fifo: same tick fires in arm order, across cascades");
}

/* One timer far ahead: next() says exactly when, and expire() gets
 * there in a handful of steps, not one per tick. */
static void test_sparse_jump(void)
{
	static const struct {
		uint64_t ahead;
		const char *name;
	} cases[] = {
		{ 3600 * URA_SEC, "1 hour" },
		{ 30 * 86400 * URA_SEC, "30 days" },
		{ 400 * 86400 * URA_SEC, "400 days (overflow)" },
		{ 40 * 365 * 86400 * URA_SEC, "40 years (overflow)" },
	};
	size_t c;

	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		struct ura__wheel w;
		struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
		struct rec a = { .t.deadline = T0 + cases[c].ahead + 12345 };
		uint64_t t0, t1, nx;
		size_t n, idle;

		ura__wheel_init(&w, T0, TICK);
		ura__wheel_add(&w, &a.t);
		nx = ura__wheel_next(&w);
		t_eq(nx, boundary(a.t.deadline, TICK), "%s: next is exact", cases[c].name);
		t0 = t_thread_cpu_ns();
		r.now = nx - 1;
		n = ura__wheel_expire(&w, r.now, on_fire, &r);
		t_eq(n, 0, "%s: not a ns early", cases[c].name);
		t_eq(ura__wheel_next(&w), nx, "%s: next unchanged after", cases[c].name);
		run_at_next(&w, &r, &idle);
		t1 = t_thread_cpu_ns();
		t_eq(a.fires, 1, "%s: fired", cases[c].name);
		t_eq(r.early + r.late, 0, "%s: on time", cases[c].name);
		t_ok(t1 - t0 < 5 * URA_MSEC, "%s: jumped in %" PRIu64 " ns",
		     cases[c].name, t1 - t0);
	}

	/* A worker idle for two hours, waking every second, one timer at
	 * the end: cheap per wakeup, whatever the ticks in between. */
	{
		struct ura__wheel w;
		struct run r = { .now = T0, .prev_now = T0, .tick = TICK };
		struct rec a = { .t.deadline = T0 + 7200 * URA_SEC };
		uint64_t t0, t1;
		size_t n = 0;

		ura__wheel_init(&w, T0, TICK);
		ura__wheel_add(&w, &a.t);
		t0 = t_thread_cpu_ns();
		while (!n) {
			r.prev_now = r.now;
			r.now += URA_SEC;
			n = ura__wheel_expire(&w, r.now, on_fire, &r);
		}
		t1 = t_thread_cpu_ns();
		t_eq(a.fires, 1, "2 h idle, 1 s wakeups: fired");
		t_eq(r.now, T0 + 7200 * URA_SEC, "2 h idle: at the first wakeup after");
		t_ok(t1 - t0 < 50 * URA_MSEC, "2 h idle: 7200 wakeups in %" PRIu64 " ns",
		     t1 - t0);
	}
}

/* Overflow timers in several windows, and wheel timers beside them. */
static void test_overflow_mix(void)
{
	enum { N = 2000 };
	struct ura__wheel w;
	struct rec *v = calloc(N, sizeof(*v));
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
	size_t i, idle, calls;

	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < N; i++) {
		uint64_t span = i % 2 ? 3 * 365 * 86400 * URA_SEC : 60 * URA_SEC;
		v[i].t.deadline = T0 + rnd() % span;
		ura__wheel_add(&w, &v[i].t);
	}
	calls = run_at_next(&w, &r, &idle);
	t_eq(r.fired, N, "overflow mix: all fired");
	t_eq(r.early + r.late + r.unordered, 0, "overflow mix: on time, in order");
	t_diag("overflow mix: %zu wakeups, %zu without a timer", calls, idle);
	free(v);
}

/* Random add, move, del and expire, also from inside fire(), checked
 * against a plain array: every fire is of an armed, due timer, and every
 * armed timer fires once its boundary has passed. */
enum { CHURN_N = 4096 };

struct churn {
	struct ura__wheel *w;
	struct rec v[CHURN_N];
	int armed[CHURN_N];
	int in_fire, armed_in_fire[CHURN_N];
	uint64_t now;
	size_t fired, bad_fire, early;
};

static void churn_op(struct churn *c)
{
	size_t i = rnd() % CHURN_N;
	uint64_t k = rnd() % 8;

	if (k < 4) {
		/* Mostly near, some far, a few in the past. */
		uint64_t r = rnd() % 100;
		uint64_t ahead = r < 70 ? rnd() % (20 * URA_MSEC)
			       : r < 95 ? rnd() % (600 * URA_SEC)
			       : rnd() % (200 * 86400 * URA_SEC);
		c->v[i].t.deadline = r < 3 ? c->now - rnd() % URA_SEC : c->now + ahead;
		ura__wheel_add(c->w, &c->v[i].t);
		c->armed[i] = 1;
		c->armed_in_fire[i] = c->in_fire;
	} else if (k < 7) {
		ura__wheel_del(c->w, &c->v[i].t);
		c->armed[i] = 0;
	}
}

static void on_churn(struct ura__timer *t, void *ud)
{
	struct churn *c = ud;
	size_t i = (size_t)((struct rec *)t - c->v);

	c->fired++;
	if (!c->armed[i] || ura__wheel_armed(t))
		c->bad_fire++;
	if (t->deadline > c->now)
		c->early++;
	c->armed[i] = 0;
	if (rnd() % 4 == 0) {
		c->in_fire = 1;
		churn_op(c);
		c->in_fire = 0;
	}
}

static void test_churn(void)
{
	static struct churn c;
	struct ura__wheel w;
	size_t round, i, armed, missed = 0, count_bad = 0, overdue = 0;

	memset(&c, 0, sizeof(c));
	c.w = &w;
	c.now = T0;
	ura__wheel_init(&w, T0, TICK);
	for (round = 0; round < (size_t)t_scaled(200000); round++) {
		churn_op(&c);
		if (rnd() % 8 == 0) {
			uint64_t r = rnd() % 100;
			c.now += r < 90 ? rnd() % (2 * URA_MSEC)
			       : r < 99 ? rnd() % (60 * URA_SEC)
			       : rnd() % (30 * 86400 * URA_SEC);
			ura__wheel_expire(&w, c.now, on_churn, &c);
			/* Anything armed and due by now has fired, except
			 * what fire() armed in the past (next call). */
			for (i = 0, armed = 0; i < CHURN_N; i++) {
				armed += c.armed[i];
				overdue += c.armed[i] && !c.armed_in_fire[i] &&
					   boundary(c.v[i].t.deadline, TICK) <= c.now;
			}
			count_bad += armed != ura__wheel_count(&w);
		}
	}
	c.now += 400 * 86400 * URA_SEC;
	ura__wheel_expire(&w, c.now, on_churn, &c);
	ura__wheel_expire(&w, c.now, on_churn, &c); /* past re-arms from fire() */
	/* fire() keeps arming a few; let it settle (bounded: a lost timer
	 * must fail the test, not hang it). */
	for (round = 0; ura__wheel_count(&w) && round < 1000; round++)
		ura__wheel_expire(&w, c.now += 400 * 86400 * URA_SEC, on_churn, &c);
	for (i = 0; i < CHURN_N; i++)
		missed += c.armed[i];
	t_eq(c.bad_fire, 0, "churn: only armed timers fire, unlinked (%zu fired)", c.fired);
	t_eq(c.early, 0, "churn: none early");
	t_eq(count_bad, 0, "churn: count matches the model");
	t_eq(overdue, 0, "churn: nothing due is left after an expire");
	t_eq(missed, 0, "churn: nothing armed is left behind");
}

/*
 * A dense wheel woken at next(), as a worker is: 1M timers over 10 s at a
 * 1 us tick put 27k in each level-3 slot (268 ms), which one expire()
 * used to cascade at once, and every timer due meanwhile waited for it.
 * The pre-cascade moves them a step at a time before the slot is reached:
 * no expire() moves more than its largest step (8 x 512, in the slot's
 * last 64 ticks), plus a level-1 slot's cascade (64 ticks of timers, ~1
 * here). All fire once, in order, none early or a tick late.
 */
static void test_precascade(void)
{
	const size_t n = 1000000;
	struct ura__wheel w;
	struct rec *v = calloc(n, sizeof(*v));
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK, .strict_late = 1 };
	size_t i, idle, lost = 0;

	ura__wheel_init(&w, T0, TICK);
	for (i = 0; i < n; i++) {
		v[i].t.deadline = T0 + 1 + rnd() % (10 * URA_SEC);
		ura__wheel_add(&w, &v[i].t);
	}
	run_at_next(&w, &r, &idle);
	for (i = 0; i < n; i++)
		lost += v[i].fires != 1;
	t_eq(lost, 0, "pre-cascade: each fired once");
	t_eq(r.early + r.late + r.unordered, 0, "pre-cascade: in order, none early or a tick late");
	t_ok(w.moved_max <= 8 * 512 + 64, "pre-cascade: at most %d timers moved in one expire (%zu)",
	     8 * 512 + 64, w.moved_max);
	t_diag("pre-cascade: %zu wakeups fired nothing", idle);
	free(v);
}

/* A million armed, one expire to fire them all. */
static void test_million(void)
{
	size_t n = (size_t)t_scaled(1000000), i, lost = 0;
	struct ura__wheel w;
	struct rec *v = calloc(n, sizeof(*v));
	struct run r = { .now = T0, .prev_now = T0, .tick = TICK };
	uint64_t t0, t1, t2;

	ura__wheel_init(&w, T0, TICK);
	t0 = t_now_ns();
	for (i = 0; i < n; i++) {
		v[i].t.deadline = T0 + rnd() % (10 * URA_SEC);
		ura__wheel_add(&w, &v[i].t);
	}
	t1 = t_now_ns();
	t_eq(ura__wheel_count(&w), n, "1M: count after adds");
	r.now = T0 + 10 * URA_SEC;
	t_eq(ura__wheel_expire(&w, r.now, on_fire, &r), n, "1M: one expire fires all");
	t2 = t_now_ns();
	for (i = 0; i < n; i++)
		lost += v[i].fires != 1;
	t_eq(lost, 0, "1M: each once");
	t_eq(r.unordered + r.early, 0, "1M: in order, none early");
	t_eq(ura__wheel_count(&w), 0, "1M: count 0 after");
	t_diag("1M: %zu timers, add %.1f ns each, expire %.1f ns each", n,
	       (double)(t1 - t0) / (double)n, (double)(t2 - t1) / (double)n);
	free(v);
}

int main(void)
{
	size_t n = (size_t)t_scaled(100000);

	test_sizes();
	test_empty();
	test_order_at_next(200 * URA_USEC, "200 us", n);
	test_order_at_next(50 * URA_MSEC, "50 ms", n);
	test_order_at_next(5 * URA_SEC, "5 s", n);
	test_order_at_next(600 * URA_SEC, "10 min", n);
	test_order_at_next(6 * 3600 * URA_SEC, "6 h", n);
	test_order_at_next(90 * 86400 * URA_SEC, "90 days", n);
	test_order_random_steps(20 * URA_MSEC, 37 * URA_USEC, "20 ms, steps <= 37 us", n);
	test_order_random_steps(30 * URA_SEC, 3 * URA_MSEC, "30 s, steps <= 3 ms", n);
	test_order_random_steps(3 * 3600 * URA_SEC, URA_SEC, "3 h, steps <= 1 s", n);
	test_del();
	test_rearm();
	test_past_and_move();
	test_fifo_order();
	test_sparse_jump();
	test_overflow_mix();
	test_churn();
	test_million();
	test_precascade();
	return t_done();
}
