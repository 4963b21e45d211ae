/* SPDX-License-Identifier: MIT */
/*
 * Sends to actors that are gone. A stopped actor's ref is stale forever
 * (-ESRCH), even after its slot holds a new incarnation; refs that never
 * existed are refused the same way; a message that raced the stop is a
 * dead letter, never delivered to anyone: handled + dead letters ==
 * accepted.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_STOP URA_ATOM("stop")
#define A_PING URA_ATOM("ping")
#define A_PROBE URA_ATOM("probe")
#define A_MAKE URA_ATOM("make")
#define A_SENDOLD URA_ATOM("sendold")
#define A_LIVE URA_ATOM("live")
#define A_CHURN URA_ATOM("churn")
#define A_HIT URA_ATOM("hit")

static uint32_t ref_idx(ura_ref r) { return (uint32_t)r.id; } /* see ura_ref */

/* Every class here counts its destroy callbacks. */
static _Atomic long g_destroyed;
static void count_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&g_destroyed, 1);
}

/* ---- 1. a stopped actor, and refs that never existed ----------------- */

static _Atomic long g_victim_pings;

static void victim_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
	/* Still alive until this handler returns: accepted, then a dead
	 * letter. */
	int rc = ura_send(cx, ura_self(cx), A_PING);
	if (rc != 0)
		printf("# send to self while stopping: %s\n", ura_strerror(rc));
}

static void victim_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_victim_pings, 1);
}

URA_BEHAVIOR(victim_beh,
	URA_ON(A_STOP, "", victim_stop),
	URA_ON(A_PING, "", victim_ping));
static const ura_class victim_class = {
	.name = "victim", .initial = &victim_beh, .destroy = count_destroy,
};

/* An actor that sends to a stale ref from a handler. */
static _Atomic int g_ctx_send_rc = 1;
static _Atomic int g_ctx_not_esrch;
static void sendold(ura_ctx *cx, const ura_msg *m)
{
	int rc = ura_send(cx, ura_arg_ref(m, 0), A_PING);
	atomic_store(&g_ctx_send_rc, rc);
	if (rc != -ESRCH)
		atomic_fetch_add(&g_ctx_not_esrch, 1);
}
URA_BEHAVIOR(sendold_beh, URA_ON(A_SENDOLD, "r", sendold));
static const ura_class sendold_class = {
	.name = "sendold", .initial = &sendold_beh, .destroy = count_destroy,
};

static void test_stopped(void)
{
	ura_system *sys = t_system(0);
	ura_ref v, s;
	atomic_store(&g_destroyed, 0);
	t_must(ura_spawn(sys, &victim_class, NULL, &v));
	t_must(ura_spawn(sys, &sendold_class, NULL, &s));
	t_rc(ura_send(sys, v, A_PING), 0, "send to a live actor");
	t_rc(ura_send(sys, v, A_STOP), 0, "stop request accepted");
	t_rc(await_guarded(sys), 0, "await");
	t_eq(atomic_load(&g_victim_pings), 1, "the ping before the stop was handled");
	t_eq(atomic_load(&g_destroyed), 1, "destroy callback ran once");
	t_rc(ura_send(sys, v, A_PING), -ESRCH, "send to a stopped actor: -ESRCH");
	t_rc(ura_send(sys, v, A_PING, 42, "x"), -ESRCH, "with values too: -ESRCH");
	t_rc(ura_send(sys, (ura_ref){ 12345678 }, A_PING), -ESRCH,
	     "ref that never existed {12345678}: -ESRCH");
	t_rc(ura_send(sys, URA_NOREF, A_PING), -ESRCH, "URA_NOREF: -ESRCH");
	t_rc(ura_send(sys, (ura_ref){ UINT64_MAX }, A_PING), -ESRCH, "{UINT64_MAX}: -ESRCH");
	/* The stopped actor's slot with other generations: neither a past
	 * nor a future incarnation may be reached. */
	for (uint64_t d = 1; d <= 4; d++) {
		t_rc(ura_send(sys, (ura_ref){ v.id + (d << 32) }, A_PING), -ESRCH,
		     "stopped actor's slot, generation +%llu: -ESRCH", (unsigned long long)d);
		t_rc(ura_send(sys, (ura_ref){ v.id - (d << 32) }, A_PING), -ESRCH,
		     "stopped actor's slot, generation -%llu: -ESRCH", (unsigned long long)d);
	}
	/* A live actor's slot with another generation. */
	t_rc(ura_send(sys, (ura_ref){ s.id + (2ull << 32) }, A_PING), -ESRCH,
	     "live actor's slot, later generation: -ESRCH");
	t_rc(ura_send(sys, (ura_ref){ (uint64_t)ref_idx(s) }, A_PING), -ESRCH,
	     "live actor's slot, generation 0: -ESRCH");
	t_rc(ura_send(sys, s, A_SENDOLD, v), 0, "ask an actor to send to the stale ref");
	t_rc(await_guarded(sys), 0, "await");
	t_rc(atomic_load(&g_ctx_send_rc), -ESRCH, "from a handler, too: -ESRCH");
	t_eq(atomic_load(&g_victim_pings), 1, "nothing more reached the victim");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.dead_letters, 1, "the self-send in the stopping handler is a dead letter");
	t_eq(st.sent, st.received, "stats: sent == received");
	t_eq(st.stopped, 1, "stats: one stopped");
	t_eq(st.live, 1, "stats: one live");
	t_destroy(sys);
	t_eq(atomic_load(&g_destroyed), 2, "destroy: the live actor's callback ran");
}

/* ---- 2. slot reuse: stale refs stay stale ------------------------------ */

#define NREUSE 64
static ura_ref g_gen1[NREUSE], g_gen2[NREUSE];
static _Atomic int g_made;
static _Atomic long g_fresh_msgs;      /* messages fresh actors handled */
static _Atomic long g_wrong_target;    /* a message meant for another ref */

typedef struct { ura_ref *out; } spawner_state;

static void child_probe(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_fresh_msgs, 1);
	if (!ura_ref_eq(ura_self(cx), ura_arg_ref(m, 0)))
		atomic_fetch_add(&g_wrong_target, 1);
}
static void child_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_fetch_add(&g_fresh_msgs, 1);
	ura_stop(cx);
}
static void child_any(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	/* Anything else: a stray message. */
	atomic_fetch_add(&g_wrong_target, 1);
}
URA_BEHAVIOR(child_beh,
	URA_ON(A_PROBE, "r", child_probe),
	URA_ON(A_STOP, "", child_stop),
	URA_ON_ANY(0, child_any));
static const ura_class child_class = {
	.name = "child", .initial = &child_beh, .destroy = count_destroy,
};

static void spawner_make(ura_ctx *cx, const ura_msg *m)
{
	ura_ref *out = ura_arg_i64(m, 0) == 1 ? g_gen1 : g_gen2;
	for (int i = 0; i < NREUSE; i++) {
		int rc = ura_spawn(cx, &child_class, NULL, &out[i]);
		if (rc < 0) {
			printf("# spawn: %s\n", ura_strerror(rc));
			return;
		}
	}
	atomic_fetch_add(&g_made, 1);
}
URA_BEHAVIOR(spawner_beh, URA_ON(A_MAKE, "i", spawner_make));
static const ura_class spawner_class = { .name = "spawner", .initial = &spawner_beh };

static void test_reuse(void)
{
	/* One worker: every stopped slot lands on the free list the next
	 * spawn takes from, so the second generation reuses the slots. */
	ura_system *sys = t_system(1);
	ura_ref sp, so;
	atomic_store(&g_destroyed, 0);
	t_must(ura_spawn(sys, &spawner_class, NULL, &sp));
	t_must(ura_spawn(sys, &sendold_class, NULL, &so));
	t_must(ura_send(sys, sp, A_MAKE, 1));
	t_rc(await_guarded(sys), 0, "reuse: await first spawns");
	t_eq(atomic_load(&g_made), 1, "reuse: %d actors spawned", NREUSE);
	int ok = 1;
	for (int i = 0; i < NREUSE; i++)
		ok &= ura_send(sys, g_gen1[i], A_STOP) == 0;
	t_ok(ok, "reuse: stop sent to each");
	t_rc(await_guarded(sys), 0, "reuse: await stops");
	t_eq(atomic_load(&g_destroyed), NREUSE, "reuse: every destroy callback ran");
	ok = 1;
	for (int i = 0; i < NREUSE; i++)
		ok &= ura_send(sys, g_gen1[i], A_PROBE, g_gen1[i]) == -ESRCH;
	t_ok(ok, "reuse: stopped refs are stale (-ESRCH)");

	t_must(ura_send(sys, sp, A_MAKE, 2));
	t_rc(await_guarded(sys), 0, "reuse: await second spawns");
	t_eq(atomic_load(&g_made), 2, "reuse: %d more spawned", NREUSE);
	int reused = 0, same = 0;
	for (int i = 0; i < NREUSE; i++)
		for (int j = 0; j < NREUSE; j++) {
			reused += ref_idx(g_gen2[i]) == ref_idx(g_gen1[j]);
			same += ura_ref_eq(g_gen2[i], g_gen1[j]);
		}
	t_diag("reuse: %d of %d new actors live in an old slot", reused, NREUSE);
	t_ok(reused > 0, "reuse: the new actors reuse old slots (else this tests nothing)");
	t_eq(same, 0, "reuse: no new ref equals an old one");

	long before = atomic_load(&g_fresh_msgs);
	ok = 1;
	for (int i = 0; i < NREUSE; i++)
		ok &= ura_send(sys, g_gen1[i], A_PROBE, g_gen1[i]) == -ESRCH;
	t_ok(ok, "reuse: old refs still stale after reuse (-ESRCH)");
	atomic_store(&g_ctx_not_esrch, 0);
	for (int i = 0; i < NREUSE; i++)
		t_must(ura_send(sys, so, A_SENDOLD, g_gen1[i]));
	t_rc(await_guarded(sys), 0, "reuse: await");
	t_eq(atomic_load(&g_ctx_not_esrch), 0, "reuse: from a handler too (-ESRCH)");
	t_eq(atomic_load(&g_fresh_msgs), before, "reuse: the new actors got nothing");
	ok = 1;
	for (int i = 0; i < NREUSE; i++)
		ok &= ura_send(sys, g_gen2[i], A_PROBE, g_gen2[i]) == 0;
	t_ok(ok, "reuse: new refs work");
	t_rc(await_guarded(sys), 0, "reuse: await");
	t_eq(atomic_load(&g_fresh_msgs), before + NREUSE, "reuse: each new actor got its probe");
	t_eq(atomic_load(&g_wrong_target), 0, "reuse: no message reached the wrong incarnation");
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.dead_letters, 0, "reuse: no dead letters");
	t_eq(st.sent, st.received, "reuse: stats: sent == received");
	t_destroy(sys);
	t_eq(atomic_load(&g_destroyed), 2 * NREUSE + 1, "reuse: destroy callbacks: once each");
}

/* ---- 3. churn: stale sends racing stops and reuse ----------------------- */

static _Atomic int g_errors_reuse;

#define REFRING 4096
static _Atomic uint64_t g_refs[REFRING];
static _Atomic long g_nrefs;
static _Atomic int g_churn_done;
static _Atomic long g_probe_handled;

typedef struct { long left; } churn_state;

static void mortal_live(ura_ctx *cx, const ura_msg *m)
{
	int64_t n = ura_arg_i64(m, 0);
	if (n > 0)
		ura_send(cx, ura_self(cx), A_LIVE, n - 1);
	else
		ura_stop(cx);
}
static void mortal_probe(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_probe_handled, 1);
	if (!ura_ref_eq(ura_self(cx), ura_arg_ref(m, 0)))
		atomic_fetch_add(&g_wrong_target, 1);
}
URA_BEHAVIOR(mortal_beh,
	URA_ON(A_LIVE, "i", mortal_live),
	URA_ON(A_PROBE, "r", mortal_probe),
	URA_ON_ANY(0, child_any));
static const ura_class mortal_class = {
	.name = "mortal", .initial = &mortal_beh, .destroy = count_destroy,
};

static void churn(ura_ctx *cx, const ura_msg *m)
{
	churn_state *s = ura_state(cx);
	(void)m;
	for (int k = 0; k < 16 && s->left > 0; k++, s->left--) {
		ura_ref r;
		int rc = ura_spawn(cx, &mortal_class, NULL, &r);
		if (rc < 0) {
			printf("# churn spawn: %s\n", ura_strerror(rc));
			s->left = 0;
			break;
		}
		long i = atomic_load_explicit(&g_nrefs, memory_order_relaxed);
		atomic_store_explicit(&g_refs[i % REFRING], r.id, memory_order_relaxed);
		atomic_store_explicit(&g_nrefs, i + 1, memory_order_release);
		ura_send(cx, r, A_LIVE, (int64_t)(i % 4));
	}
	if (s->left > 0)
		ura_send(cx, ura_self(cx), A_CHURN);
	else
		atomic_store(&g_churn_done, 1);
}
URA_BEHAVIOR(churn_beh, URA_ON(A_CHURN, "", churn));
static const ura_class churn_class = {
	.name = "churn", .state_size = sizeof(churn_state), .initial = &churn_beh,
};

struct prober {
	pthread_t th;
	ura_system *sys;
	unsigned seed;
	long accepted, stale, errors;
};

/* Probes recent refs: some are live, some have just stopped, some slots
 * already hold a new incarnation. At most PROBES_PER_SPAWN probes per new
 * actor: unpaced, probes queued ahead of a mortal's own messages keep it
 * alive to be probed more, and the backlog feeds itself. */
#define PROBES_PER_SPAWN 4
static void *prober_main(void *arg)
{
	struct prober *p = arg;
	long last_n = 0, budget = 0;
	uint64_t deadline = t_now_ns() + 60 * URA_SEC; /* hang guard */
	while (!atomic_load(&g_churn_done)) {
		if (t_now_ns() > deadline) {
			printf("# prober: the churn never finished\n");
			p->errors++;
			break;
		}
		long n = atomic_load_explicit(&g_nrefs, memory_order_acquire);
		if (n != last_n) {
			budget += (n - last_n) * PROBES_PER_SPAWN;
			last_n = n;
		}
		if (n == 0 || budget <= 0) {
			sched_yield();
			continue;
		}
		budget--;
		p->seed = p->seed * 1103515245u + 12345u;
		long back = (long)((p->seed >> 16) % 8);
		long i = n - 1 - (back < n ? back : 0);
		ura_ref r = { atomic_load_explicit(&g_refs[i % REFRING], memory_order_relaxed) };
		int rc = ura_send(p->sys, r, A_PROBE, r);
		if (rc == 0)
			p->accepted++;
		else if (rc == -ESRCH)
			p->stale++;
		else if (p->errors++ == 0)
			printf("# probe: %s\n", ura_strerror(rc));
	}
	return NULL;
}

/* The same probing from a handler: sends from a worker take other paths
 * in the library than sends from outside. */
typedef struct {
	long last_n, budget, accepted, stale, errors;
	unsigned seed;
} aprober_state;
static _Atomic long g_aprobe_accepted = -1, g_aprobe_stale, g_aprobe_errors;
#define A_AGAIN URA_ATOM("again")

static void aprober_again(ura_ctx *cx, const ura_msg *m)
{
	aprober_state *p = ura_state(cx);
	(void)m;
	if (atomic_load(&g_churn_done)) {
		atomic_store(&g_aprobe_stale, p->stale);
		atomic_store(&g_aprobe_errors, p->errors);
		atomic_store(&g_aprobe_accepted, p->accepted);
		ura_stop(cx);
		return;
	}
	long n = atomic_load_explicit(&g_nrefs, memory_order_acquire);
	p->budget += (n - p->last_n) * PROBES_PER_SPAWN;
	p->last_n = n;
	for (int k = 0; k < 8 && p->budget > 0 && n > 0; k++, p->budget--) {
		p->seed = p->seed * 1103515245u + 12345u;
		long back = (long)((p->seed >> 16) % 8);
		long i = n - 1 - (back < n ? back : 0);
		ura_ref r = { atomic_load_explicit(&g_refs[i % REFRING], memory_order_relaxed) };
		int rc = ura_send(cx, r, A_PROBE, r);
		if (rc == 0)
			p->accepted++;
		else if (rc == -ESRCH)
			p->stale++;
		else if (p->errors++ == 0)
			printf("# actor probe: %s\n", ura_strerror(rc));
	}
	if (ura_send(cx, ura_self(cx), A_AGAIN) < 0)
		p->errors++;
}
URA_BEHAVIOR(aprober_beh, URA_ON(A_AGAIN, "", aprober_again));
static const ura_class aprober_class = {
	.name = "aprober", .state_size = sizeof(aprober_state), .initial = &aprober_beh,
};

static void test_churn(void)
{
	long n = t_scaled(200000);
	ura_system *sys = t_system(0);
	ura_ref c;
	ura_stats st0, st;
	atomic_store(&g_destroyed, 0);
	atomic_store(&g_wrong_target, 0);
	t_must(ura_spawn(sys, &churn_class, &(churn_state){ .left = n }, &c));
	ura_ref ap;
	atomic_store(&g_aprobe_accepted, -1);
	t_must(ura_spawn(sys, &aprober_class, &(aprober_state){ .seed = 3 }, &ap));
	t_must(ura_system_stats(sys, &st0));
	t_must(ura_send(sys, ap, A_AGAIN));
	struct prober p[2];
	for (int i = 0; i < 2; i++) {
		p[i] = (struct prober){ .sys = sys, .seed = 7u + (unsigned)i };
		if (pthread_create(&p[i].th, NULL, prober_main, &p[i]))
			t_must(-EAGAIN);
	}
	t_must(ura_send(sys, c, A_CHURN));
	long accepted = 0, stale = 0, errors = 0;
	for (int i = 0; i < 2; i++) {
		pthread_join(p[i].th, NULL);
		accepted += p[i].accepted;
		stale += p[i].stale;
		errors += p[i].errors;
	}
	t_rc(await_guarded(sys), 0, "churn: await");
	ura_system_stats(sys, &st);
	long aacc = atomic_load(&g_aprobe_accepted);
	t_ok(aacc >= 0, "churn: the probing actor finished");
	if (aacc > 0)
		accepted += aacc;
	stale += atomic_load(&g_aprobe_stale);
	errors += atomic_load(&g_aprobe_errors);
	long handled = atomic_load(&g_probe_handled);
	uint64_t dead = st.dead_letters - st0.dead_letters;
	t_diag("churn: %ld actors, probes: %ld accepted (%ld handled, %llu dead letters), %ld stale",
	       n, accepted, handled, (unsigned long long)dead, stale);
	t_eq(errors, 0, "churn: every probe either accepted or -ESRCH");
	t_eq(atomic_load(&g_wrong_target), 0,
	     "churn: no probe reached an incarnation it was not sent to");
	t_eq(handled + (long)dead, accepted, "churn: handled + dead letters == accepted");
	t_eq(atomic_load(&g_destroyed), n, "churn: every mortal's destroy ran once");
	t_eq(st.sent, st.received, "churn: stats: sent == received");
	t_eq(st.live, 1, "churn: only the churn actor is live");
	t_diag("churn: %llu steals", (unsigned long long)st.steals);
	t_destroy(sys);
}

/* ---- 4. stops sent from outside, slots respawned at once ------------- */

/* The main thread sends `stop` to idle victims (so its send schedules
 * them from outside, and nothing else it does synchronizes with what the
 * worker does next); each victim, as it stops, asks the factory for a
 * replacement, which on one worker takes the slot just freed. A prober
 * thread meanwhile probes the victims: probes racing a stop are dead
 * letters, and none may reach the new incarnation in the old one's slot. */
#define NVICT 32
#define A_DEAD URA_ATOM("dead")
#define A_START URA_ATOM("start")
static _Atomic uint64_t g_vref[NVICT];
static _Atomic long g_respawns, g_vprobes;
static ura_ref g_factory;

typedef struct { int64_t i; } victim2_state;
static void victim2_stop(ura_ctx *cx, const ura_msg *m)
{
	victim2_state *s = ura_state(cx);
	(void)m;
	if (ura_send(cx, g_factory, A_DEAD, s->i) < 0)
		atomic_fetch_add(&g_errors_reuse, 1);
	ura_stop(cx);
}
static void victim2_probe(ura_ctx *cx, const ura_msg *m)
{
	atomic_fetch_add(&g_vprobes, 1);
	if (!ura_ref_eq(ura_self(cx), ura_arg_ref(m, 0)))
		atomic_fetch_add(&g_wrong_target, 1);
}
URA_BEHAVIOR(victim2_beh,
	URA_ON(A_STOP, "", victim2_stop),
	URA_ON(A_PROBE, "r", victim2_probe),
	URA_ON_ANY(0, child_any));
static const ura_class victim2_class = {
	.name = "victim2", .state_size = sizeof(victim2_state),
	.initial = &victim2_beh, .destroy = count_destroy,
};

static void factory_make(ura_ctx *cx, int64_t i)
{
	ura_ref r;
	if (ura_spawn(cx, &victim2_class, &(victim2_state){ i }, &r) < 0) {
		atomic_fetch_add(&g_errors_reuse, 1);
		return;
	}
	atomic_store_explicit(&g_vref[i], r.id, memory_order_release);
}
static void factory_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int64_t i = 0; i < NVICT; i++)
		factory_make(cx, i);
}
static void factory_dead(ura_ctx *cx, const ura_msg *m)
{
	int64_t i = ura_arg_i64(m, 0);
	if (i < 0 || i >= NVICT) {
		atomic_fetch_add(&g_errors_reuse, 1);
		return;
	}
	atomic_fetch_add(&g_respawns, 1);
	factory_make(cx, i);
}
URA_BEHAVIOR(factory_beh,
	URA_ON(A_START, "", factory_start),
	URA_ON(A_DEAD, "i", factory_dead));
static const ura_class factory_class = { .name = "factory", .initial = &factory_beh };

static _Atomic long g_stops;
static _Atomic int g_stops_done;

static void *vprober_main(void *arg)
{
	struct prober *p = arg;
	long budget = 0, last_stops = 0;
	while (!atomic_load(&g_stops_done)) {
		long n = atomic_load_explicit(&g_stops, memory_order_relaxed);
		budget += 2 * (n - last_stops); /* paced: two probes per stop */
		last_stops = n;
		if (budget <= 0) {
			sched_yield();
			continue;
		}
		budget--;
		p->seed = p->seed * 1103515245u + 12345u;
		int i = (int)((p->seed >> 16) % NVICT);
		ura_ref r = { atomic_load_explicit(&g_vref[i], memory_order_acquire) };
		if (!r.id)
			continue;
		int rc = ura_send(p->sys, r, A_PROBE, r);
		if (rc == 0)
			p->accepted++;
		else if (rc == -ESRCH)
			p->stale++;
		else if (p->errors++ == 0)
			printf("# probe: %s\n", ura_strerror(rc));
	}
	return NULL;
}

static void test_ext_reuse(void)
{
	long target = t_scaled(20000);
	ura_system *sys = t_system(1);
	ura_stats st0, st;
	uint64_t last[NVICT] = { 0 };
	long stops = 0, errors = 0, reused = 0;
	uint64_t deadline = t_now_ns() + 60 * URA_SEC; /* hang guard */
	struct prober pr = { .sys = sys, .seed = 99 };
	atomic_store(&g_destroyed, 0);
	atomic_store(&g_wrong_target, 0);
	atomic_store(&g_errors_reuse, 0);
	for (int i = 0; i < NVICT; i++)
		atomic_store(&g_vref[i], 0);
	t_must(ura_spawn(sys, &factory_class, NULL, &g_factory));
	t_must(ura_system_stats(sys, &st0));
	t_must(ura_send(sys, g_factory, A_START));
	atomic_store(&g_stops, 0);
	atomic_store(&g_stops_done, 0);
	if (pthread_create(&pr.th, NULL, vprober_main, &pr))
		t_must(-EAGAIN);
	while (stops < target && t_now_ns() < deadline) {
		int sent = 0;
		for (int i = 0; i < NVICT && stops < target; i++) {
			uint64_t id = atomic_load_explicit(&g_vref[i], memory_order_acquire);
			if (!id || id == last[i])
				continue; /* not (re)spawned yet */
			reused += last[i] && (uint32_t)id == (uint32_t)last[i];
			last[i] = id;
			ura_ref r = { id };
			int rc = ura_send(sys, r, A_STOP);
			if (rc != 0) {
				if (errors++ == 0)
					printf("# stop: %s\n", ura_strerror(rc));
				continue;
			}
			stops++;
			atomic_store_explicit(&g_stops, stops, memory_order_relaxed);
			sent = 1;
		}
		if (!sent)
			sched_yield();
	}
	atomic_store(&g_stops_done, 1);
	pthread_join(pr.th, NULL);
	long probes = pr.accepted, stale = pr.stale;
	errors += pr.errors;
	t_rc(await_guarded(sys), 0, "ext reuse: await");
	ura_system_stats(sys, &st);
	long handled = atomic_load(&g_vprobes);
	long dead = (long)(st.dead_letters - st0.dead_letters);
	t_diag("ext reuse: %ld stops, %ld slots reused at once, probes: %ld accepted "
	       "(%ld handled, %ld dead letters), %ld stale", stops, reused, probes, handled,
	       dead, stale);
	t_eq(stops, target, "ext reuse: every stop sent");
	t_eq(errors + atomic_load(&g_errors_reuse), 0, "ext reuse: no unexpected error");
	t_ok(reused > 0, "ext reuse: respawns took the freed slots (else this tests nothing)");
	t_eq(atomic_load(&g_wrong_target), 0, "ext reuse: no probe reached a new incarnation");
	t_eq(handled + dead, probes, "ext reuse: handled + dead letters == accepted probes");
	t_eq(atomic_load(&g_respawns), stops, "ext reuse: one death per stop");
	t_eq(atomic_load(&g_destroyed), stops, "ext reuse: destroy callbacks: once per death");
	t_eq(st.sent, st.received, "ext reuse: stats: sent == received");
	t_destroy(sys);
}

/* ---- 5. a sender hammering an actor that stops mid-stream -------------- */

typedef struct { long left; } hammered_state;
static _Atomic long g_hits;

static void hammered_hit(ura_ctx *cx, const ura_msg *m)
{
	hammered_state *s = ura_state(cx);
	(void)m;
	atomic_fetch_add(&g_hits, 1);
	if (--s->left == 0)
		ura_stop(cx);
}

struct hammer {
	pthread_t th;
	ura_system *sys;
	ura_ref to;
	long accepted, errors;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	for (int64_t i = 0;; i++) {
		/* A string, so that dead letters own memory to free. */
		int rc = ura_send(h->sys, h->to, A_HIT, i, "payload");
		if (rc == -ESRCH)
			break;
		if (rc == 0) {
			h->accepted++;
		} else {
			if (h->errors++ == 0)
				printf("# hammer: %s\n", ura_strerror(rc));
			break;
		}
	}
	return NULL;
}

URA_BEHAVIOR(hammered_s_beh, URA_ON(A_HIT, "is", hammered_hit));
static const ura_class hammered_s_class = {
	.name = "hammered", .state_size = sizeof(hammered_state),
	.initial = &hammered_s_beh, .destroy = count_destroy,
};

static void test_hammer(void)
{
	int rounds = (int)t_scaled(40) < 10 ? 10 : (int)t_scaled(40);
	ura_system *sys = t_system(0);
	ura_stats st0, st;
	int bad_sum = 0, bad_hits = 0, errors = 0, done = 0;
	long total_acc = 0, total_dead = 0;
	atomic_store(&g_destroyed, 0);
	for (int r = 0; r < rounds; r++) {
		long k = 1 + (r * 797) % 3000;
		int nth = 1 + r % 4;
		struct hammer h[4];
		ura_ref v;
		atomic_store(&g_hits, 0);
		t_must(ura_system_stats(sys, &st0));
		t_must(ura_spawn(sys, &hammered_s_class, &(hammered_state){ .left = k }, &v));
		for (int i = 0; i < nth; i++) {
			h[i] = (struct hammer){ .sys = sys, .to = v };
			if (pthread_create(&h[i].th, NULL, hammer_main, &h[i]))
				t_must(-EAGAIN);
		}
		long acc = 0;
		for (int i = 0; i < nth; i++) {
			pthread_join(h[i].th, NULL);
			acc += h[i].accepted;
			errors += h[i].errors > 0;
		}
		int rc = await_guarded(sys);
		if (rc != 0) {
			t_rc(rc, 0, "hammer round %d: await", r);
			break;
		}
		done++;
		ura_system_stats(sys, &st);
		long hits = atomic_load(&g_hits);
		long dead = (long)(st.dead_letters - st0.dead_letters);
		if (hits != k) {
			if (bad_hits++ < 5)
				printf("# round %d: handled %ld, want %ld\n", r, hits, k);
		}
		if (hits + dead != acc) {
			if (bad_sum++ < 5)
				printf("# round %d: handled %ld + dead %ld != accepted %ld\n",
				       r, hits, dead, acc);
		}
		total_acc += acc;
		total_dead += dead;
	}
	t_diag("hammer: %d rounds, %ld accepted, %ld dead letters", done, total_acc, total_dead);
	t_eq(done, rounds, "hammer: every round's await returned");
	t_eq(errors, 0, "hammer: sends only ever succeed or fail with -ESRCH");
	t_eq(bad_hits, 0, "hammer: each actor handled exactly its quota, then stopped");
	t_eq(bad_sum, 0, "hammer: handled + dead letters == accepted, every round");
	if (done == rounds)
		t_eq(atomic_load(&g_destroyed), rounds, "hammer: destroy callbacks: once per actor");
	else
		t_skip("hammer: destroy callbacks: a round's await failed");
	ura_system_stats(sys, &st);
	t_eq(st.sent, st.received, "hammer: stats: sent == received");
	t_eq(st.live, 0, "hammer: no actor left");
	t_destroy(sys);
}

int main(void)
{
	test_stopped();
	test_reuse();
	test_churn();
	test_ext_reuse();
	test_hammer();
	return t_done();
}
