/* SPDX-License-Identifier: MIT */
/*
 * Groups: anonymous and named (ura_group_named gives the same group for
 * the same name); join and leave and their return codes; a send reaches
 * every member exactly once and returns how many it reached; spawning
 * straight into a group (ura_spawn_ex, from outside and from a handler);
 * a member that stops leaves by itself; and a fan-out while members join
 * and leave from two other threads: no member gets a send twice, none gets
 * a send that started after its leave returned and ended before its next
 * join began, and every member gets every send made wholly while it was
 * a member.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

#include "tap.h"

#define A_HELLO URA_ATOM("hello")
#define A_SEQ URA_ATOM("seq")
#define A_STOP URA_ATOM("stop")
#define A_SPAWN URA_ATOM("spawn")
#define A_FAN URA_ATOM("fan")

/* ---- members ---------------------------------------------------------- */

#define MAXM 256
static _Atomic long g_hello[MAXM];     /* hellos per member index */
static _Atomic long g_hello_from_actor; /* hellos with an actor sender */

/* Fan-out test: deliveries per member and sequence number. */
#define CHURN_M 16
static long g_nseq;
static _Atomic unsigned char *g_got[CHURN_M];

typedef struct { int idx; } member;

static void m_hello(ura_ctx *cx, const ura_msg *m)
{
	member *me = ura_state(cx);
	if (me->idx >= 0 && me->idx < MAXM)
		atomic_fetch_add(&g_hello[me->idx], 1);
	if (!ura_ref_null(ura_msg_sender(m)))
		atomic_fetch_add(&g_hello_from_actor, 1);
}

static void m_seq(ura_ctx *cx, const ura_msg *m)
{
	member *me = ura_state(cx);
	int64_t s = ura_arg_i64(m, 0);
	if (me->idx >= 0 && me->idx < CHURN_M && s >= 1 && s <= g_nseq)
		atomic_fetch_add_explicit(&g_got[me->idx][s], 1, memory_order_relaxed);
}

static void m_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(member_beh,
	URA_ON(A_HELLO, "", m_hello),
	URA_ON(A_SEQ, "i", m_seq),
	URA_ON(A_STOP, "", m_stop));
static const ura_class member_class = {
	.name = "member", .state_size = sizeof(member), .initial = &member_beh,
};

static void hello_reset(void)
{
	for (int i = 0; i < MAXM; i++)
		atomic_store(&g_hello[i], 0);
	atomic_store(&g_hello_from_actor, 0);
}

static ura_ref spawn_member(ura_system *sys, int idx)
{
	ura_ref r;
	t_must(ura_spawn(sys, &member_class, &(member){ idx }, &r));
	return r;
}

/* ---- an actor that spawns into a group and sends to one --------------- */

static _Atomic int g_spawn_errors;
static _Atomic long g_fan_rc = -1;

static void sp_spawn(ura_ctx *cx, const ura_msg *m)
{
	ura_group *g = ura_arg_ptr(m, 0);
	int first = (int)ura_arg_i64(m, 1);
	ura_spawn_opts so = { .group = g };
	for (int i = 0; i < 3; i++) {
		if (ura_spawn_ex(cx, &member_class, &(member){ first + i }, &so, NULL) < 0)
			atomic_fetch_add(&g_spawn_errors, 1);
	}
}

static void sp_fan(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_fan_rc, ura_send_group(cx, (ura_group *)ura_arg_ptr(m, 0), A_HELLO));
}

URA_BEHAVIOR(spawner_beh,
	URA_ON(A_SPAWN, "pi", sp_spawn),
	URA_ON(A_FAN, "p", sp_fan));
static const ura_class spawner_class = { .name = "spawner", .initial = &spawner_beh };

/* ---- 1. names ------------------------------------------------------------ */

static void test_names(void)
{
	ura_system *sys = t_system(0);
	ura_group *a, *b, *c, *n1, *n2, *n3;
	t_rc(ura_group_new(sys, &a), 0, "names: anonymous group");
	t_rc(ura_group_new(sys, &b), 0, "names: another anonymous group");
	t_ok(a && b && a != b, "names: two anonymous groups are distinct");
	t_ok(ura_group_name(a) == NULL, "names: an anonymous group has no name");
	char name[16];
	strcpy(name, "club");
	t_rc(ura_group_named(sys, name, &n1), 0, "names: named group \"club\"");
	strcpy(name, "xxxx"); /* the name is copied */
	t_rc(ura_group_named(sys, "club", &n2), 0, "names: \"club\" again");
	t_ok(n1 && n1 == n2, "names: the same name gives the same group");
	t_streq(ura_group_name(n1), "club", "names: ura_group_name");
	t_rc(ura_group_named(sys, "other", &n3), 0, "names: named group \"other\"");
	t_ok(n3 && n3 != n1 && n3 != a && n3 != b, "names: another name, another group");
	t_rc(ura_group_named(sys, "", &c), -EINVAL, "names: empty name: -EINVAL");
	t_rc(ura_group_named(sys, NULL, &c), -EINVAL, "names: NULL name: -EINVAL");
	t_rc(ura_group_new(NULL, &c), -EINVAL, "names: NULL system: -EINVAL");
	t_rc(ura_group_named(NULL, "club", &c), -EINVAL, "names: NULL system, named: -EINVAL");
	/* A second system has its own namespace. */
	ura_system *sys2 = t_system(1);
	ura_group *m1;
	t_rc(ura_group_named(sys2, "club", &m1), 0, "names: \"club\" in a second system");
	t_ok(m1 && m1 != n1, "names: a different group in a different system");
	t_eq(ura_send_group(sys, m1, A_HELLO), -EINVAL,
	     "names: a send through another system's group: -EINVAL");
	t_destroy(sys2);
	/* Free one named group: the name can be made again. */
	t_rc(ura_group_free(n3), 0, "names: free \"other\"");
	t_rc(ura_group_named(sys, "other", &n3), 0, "names: \"other\" made again after free");
	t_streq(ura_group_name(n3), "other", "names: with its name");
	t_destroy(sys);
}

/* ---- 2. join, leave, send ---------------------------------------------- */

static void test_membership(void)
{
	ura_system *sys = t_system(0);
	ura_group *g;
	t_must(ura_group_new(sys, &g));
	hello_reset();
	ura_ref m0 = spawn_member(sys, 0), m1 = spawn_member(sys, 1), m2 = spawn_member(sys, 2);
	ura_ref out = spawn_member(sys, 3);

	t_eq(ura_group_size(g), 0, "membership: a new group is empty");
	t_eq(ura_send_group(sys, g, A_HELLO), 0, "membership: send to an empty group reaches 0");
	t_rc(ura_group_join(g, m0), 0, "membership: join: 0");
	t_rc(ura_group_join(g, m0), 1, "membership: join again: 1 (already a member)");
	t_eq(ura_group_size(g), 1, "membership: still one member");
	t_rc(ura_group_join(g, m1), 0, "membership: join m1");
	t_rc(ura_group_join(g, m2), 0, "membership: join m2");
	t_eq(ura_group_size(g), 3, "membership: size 3");
	t_eq(ura_send_group(sys, g, A_HELLO), 3, "membership: send returns 3");
	t_rc(await_guarded(sys), 0, "membership: await");
	t_ok(atomic_load(&g_hello[0]) == 1 && atomic_load(&g_hello[1]) == 1 &&
	     atomic_load(&g_hello[2]) == 1,
	     "membership: each member got it exactly once (the double join too): %ld %ld %ld",
	     atomic_load(&g_hello[0]), atomic_load(&g_hello[1]), atomic_load(&g_hello[2]));
	t_eq(atomic_load(&g_hello[3]), 0, "membership: a non-member got nothing");
	t_eq(atomic_load(&g_hello_from_actor), 0, "membership: sent from outside: no sender");

	t_rc(ura_group_leave(g, m1), 0, "membership: leave: 0");
	t_rc(ura_group_leave(g, m1), -ENOENT, "membership: leave again: -ENOENT");
	t_rc(ura_group_leave(g, out), -ENOENT, "membership: leave by a non-member: -ENOENT");
	t_eq(ura_group_size(g), 2, "membership: size 2 after the leave");
	t_eq(ura_send_group(sys, g, A_HELLO), 2, "membership: send returns 2");
	t_rc(await_guarded(sys), 0, "membership: await");
	t_eq(atomic_load(&g_hello[1]), 1, "membership: the member that left got nothing more");
	t_eq(atomic_load(&g_hello[0]), 2, "membership: the others did");
	t_rc(ura_group_join(g, m1), 0, "membership: join after leave: 0");
	t_eq(ura_group_size(g), 3, "membership: size 3 again");

	/* Dead and made-up refs. */
	ura_ref dead = spawn_member(sys, 4);
	t_must(ura_send(sys, dead, A_STOP));
	t_rc(await_guarded(sys), 0, "membership: await a stop");
	t_rc(ura_group_join(g, dead), -ESRCH, "membership: join a stopped actor: -ESRCH");
	t_rc(ura_group_join(g, URA_NOREF), -ESRCH, "membership: join URA_NOREF: -ESRCH");
	t_rc(ura_group_join(g, (ura_ref){ (1ull << 32) | 0x7ffffff1u }), -ESRCH,
	     "membership: join a ref whose slot never existed: -ESRCH");
	/* The stopped actor's slot now holds the next (even) generation: no
	 * actor ever has an even one. */
	t_rc(ura_group_join(g, (ura_ref){ dead.id + (1ull << 32) }), -ESRCH,
	     "membership: join a made-up ref (stopped slot, current even generation): -ESRCH");
	t_eq(ura_group_size(g), 3, "membership: size still 3");
	t_rc(ura_group_join(NULL, m0), -EINVAL, "membership: join NULL group: -EINVAL");
	t_rc(ura_group_leave(NULL, m0), -EINVAL, "membership: leave NULL group: -EINVAL");
	t_eq(ura_group_size(NULL), -EINVAL, "membership: size of NULL group: -EINVAL");
	t_eq(ura_send_group(sys, (ura_group *)NULL, A_HELLO), -EINVAL, "membership: send to NULL group: -EINVAL");
	t_eq(ura_send_group(sys, g, 0), -EINVAL, "membership: tag 0: -EINVAL");

	/* Send from a handler: the sender is the actor. */
	ura_ref sp;
	t_must(ura_spawn(sys, &spawner_class, NULL, &sp));
	hello_reset();
	t_must(ura_send(sys, sp, A_FAN, (void *)g));
	t_rc(await_guarded(sys), 0, "membership: await the handler's fan-out");
	t_eq(atomic_load(&g_fan_rc), 3, "membership: ura_send_group from a handler returns 3");
	t_eq(atomic_load(&g_hello_from_actor), 3, "membership: the sender is the actor");

	/* Many members: every one exactly once. */
	ura_group *big;
	t_must(ura_group_new(sys, &big));
	hello_reset();
	for (int i = 0; i < MAXM; i++) {
		ura_ref r = spawn_member(sys, i);
		if (ura_group_join(big, r) != 0)
			printf("# join %d failed\n", i);
	}
	t_eq(ura_group_size(big), MAXM, "membership: %d members", MAXM);
	t_eq(ura_send_group(sys, big, A_HELLO), MAXM, "membership: send reaches %d", MAXM);
	t_rc(await_guarded(sys), 0, "membership: await");
	int wrong = 0;
	for (int i = 0; i < MAXM; i++)
		wrong += atomic_load(&g_hello[i]) != 1;
	t_eq(wrong, 0, "membership: each of %d got it exactly once", MAXM);
	t_destroy(sys);
}

/* Leaving with refs that can name no actor (0 is the null ref, 1 no ref
 * either) must change nothing, whatever the group's table holds (empty
 * and deleted slots included). */
static void test_leave_odd_refs(void)
{
	ura_system *sys = t_system(0);
	ura_group *g;
	t_must(ura_group_new(sys, &g));
	ura_ref m0 = spawn_member(sys, 0), m1 = spawn_member(sys, 1);
	t_must(ura_group_join(g, m0));
	t_must(ura_group_join(g, m1));
	t_rc(ura_group_leave(g, m1), 0, "odd refs: a member left (its slot is now a deleted one)");
	t_eq(ura_group_size(g), 1, "odd refs: size 1");
	t_rc(ura_group_leave(g, URA_NOREF), -ENOENT, "odd refs: leave URA_NOREF: -ENOENT");
	t_eq(ura_group_size(g), 1, "odd refs: size still 1 after leave(URA_NOREF)");
	t_rc(ura_group_leave(g, (ura_ref){ 1 }), -ENOENT, "odd refs: leave {1}: -ENOENT");
	t_eq(ura_group_size(g), 1, "odd refs: size still 1 after leave({1})");
	hello_reset();
	t_eq(ura_send_group(sys, g, A_HELLO), 1, "odd refs: send reaches the one member");
	t_rc(ura_group_join(g, m1), 0, "odd refs: rejoin");
	t_eq(ura_group_size(g), 2, "odd refs: size 2");
	t_rc(await_guarded(sys), 0, "odd refs: await");
	t_eq(atomic_load(&g_hello[0]), 1, "odd refs: the member got it");
	/* An emptied group: a bad leave must not take its count below 0. */
	ura_group *e;
	t_must(ura_group_new(sys, &e));
	t_must(ura_group_join(e, m0));
	t_rc(ura_group_leave(e, m0), 0, "odd refs: the only member left");
	t_rc(ura_group_leave(e, URA_NOREF), -ENOENT, "odd refs: empty group, leave URA_NOREF: -ENOENT");
	t_eq(ura_group_size(e), 0, "odd refs: empty group, size still 0");
	t_destroy(sys);
}

/* A made-up ref naming a slot that a worker reserved but no actor has ever
 * used (generation 0) must not join either. */
static void test_phantom(void)
{
	ura_system *sys = t_system(1);
	ura_group *g;
	t_must(ura_group_new(sys, &g));
	ura_ref sp;
	t_must(ura_spawn(sys, &spawner_class, NULL, &sp));
	/* From a handler: the worker reserves slots in blocks, so slots
	 * after the children's exist but are unused. */
	t_must(ura_send(sys, sp, A_SPAWN, (void *)g, 200));
	t_rc(await_guarded(sys), 0, "phantom: await");
	t_eq(ura_group_size(g), 3, "phantom: 3 spawned into the group from a handler");
	/* One worker, one external spawn before: the children take the
	 * first slots of the worker's block, right after the spawner's, and
	 * the rest of the block stays unused. */
	uint32_t base = (uint32_t)sp.id;
	int joined = 0;
	for (uint32_t k = 8; k < 16; k++) {
		int rc = ura_group_join(g, (ura_ref){ (uint64_t)(base + k) });
		if (rc >= 0) {
			joined++;
			printf("# join of made-up ref {idx %u, gen 0}: %d\n", base + k, rc);
		}
	}
	t_eq(joined, 0, "phantom: refs with generation 0 (never an actor) do not join");
	t_eq(ura_group_size(g), 3, "phantom: size still 3 (no phantom member)");
	t_destroy(sys);
}

/* ---- 3. spawn into a group; members that stop ----------------------------- */

static void test_spawn_into(void)
{
	ura_system *sys = t_system(0);
	ura_group *g;
	t_must(ura_group_named(sys, "spawned", &g));
	hello_reset();
	ura_ref r[4];
	for (int i = 0; i < 4; i++) {
		ura_spawn_opts so = { .group = g };
		t_rc(ura_spawn_ex(sys, &member_class, &(member){ i }, &so, &r[i]), 0,
		     "spawn_ex: member %d straight into the group", i);
	}
	t_eq(ura_group_size(g), 4, "spawn_ex: size 4");
	t_rc(ura_group_join(g, r[0]), 1, "spawn_ex: it is a member already (join returns 1)");
	ura_ref plain;
	ura_spawn_opts none = { .group = NULL };
	t_rc(ura_spawn_ex(sys, &member_class, &(member){ 10 }, &none, &plain), 0,
	     "spawn_ex: with no group");
	t_rc(ura_spawn_ex(sys, &member_class, &(member){ 11 }, NULL, NULL), 0,
	     "spawn_ex: with NULL opts");
	t_eq(ura_group_size(g), 4, "spawn_ex: those did not join");

	ura_ref sp;
	t_must(ura_spawn(sys, &spawner_class, NULL, &sp));
	t_must(ura_send(sys, sp, A_SPAWN, (void *)g, 20));
	t_rc(await_guarded(sys), 0, "spawn_ex: await the handler's spawns");
	t_eq(atomic_load(&g_spawn_errors), 0, "spawn_ex from a handler: no error");
	t_eq(ura_group_size(g), 7, "spawn_ex from a handler: size 7");
	t_eq(ura_send_group(sys, g, A_HELLO), 7, "spawn_ex: send reaches 7");
	t_rc(await_guarded(sys), 0, "spawn_ex: await");
	int ok = 1;
	for (int i = 0; i < 4; i++)
		ok &= atomic_load(&g_hello[i]) == 1;
	for (int i = 20; i < 23; i++)
		ok &= atomic_load(&g_hello[i]) == 1;
	t_ok(ok, "spawn_ex: every member got it once");
	t_eq(atomic_load(&g_hello[10]) + atomic_load(&g_hello[11]), 0, "spawn_ex: non-members got nothing");

	/* A member that stops leaves by itself. */
	ura_stats st0 = stats(sys);
	t_must(ura_send(sys, r[1], A_STOP));
	t_must(ura_send(sys, r[2], A_STOP));
	t_rc(await_guarded(sys), 0, "stopped members: await");
	t_eq(ura_group_size(g), 5, "stopped members: size drops to 5");
	t_eq(ura_send_group(sys, g, A_HELLO), 5, "stopped members: send reaches 5");
	t_rc(await_guarded(sys), 0, "stopped members: await");
	ura_stats st1 = stats(sys);
	t_ok(atomic_load(&g_hello[1]) == 1 && atomic_load(&g_hello[2]) == 1,
	     "stopped members: got nothing after they stopped");
	t_eq(atomic_load(&g_hello[0]), 2, "stopped members: the others got it");
	t_eq(st1.dead_letters - st0.dead_letters, 0, "stopped members: no dead letters (skipped)");
	t_rc(ura_group_leave(g, r[1]), -ENOENT, "stopped members: leave after the stop: -ENOENT");
	/* Stop every member: an empty group. */
	for (int i = 0; i < 4; i++)
		ura_send(sys, r[i], A_STOP);
	t_rc(await_guarded(sys), 0, "stopped members: await");
	t_eq(ura_group_size(g), 3, "stopped members: the handler's 3 remain");
	t_rc(ura_group_free(g), 0, "ura_group_free");
	t_destroy(sys);
}

/* ---- 4. fan-out while members join and leave -------------------------------- */

/* What one churn thread saw of one member, in order: each leave and join
 * with the send sequence number read just before and just after it. */
struct ev {
	int join;       /* 1 join, 0 leave */
	long before, after;
};

#define MAXEV 16384

struct track {
	ura_ref ref;
	int member;     /* 1 while joined, per the churn thread */
	struct ev *ev;
	long nev;
};

static struct track g_tr[CHURN_M];
static _Atomic long g_cur_seq;    /* the send in progress (stored before it starts) */
static _Atomic int g_churn_done;
static _Atomic long g_churn_badrc;
/* Joins and leaves so far; relaxed both sides: a progress count the sender
 * polls, the events themselves are read after pthread_join. */
static _Atomic long g_churn_nev;

static void spin(int k)
{
	for (volatile int i = 0; i < k; i++)
		;
}

struct churn_arg {
	ura_group *g;
	int first;      /* members first, first + 2, ... */
	uint32_t rng;
};

static void *churn(void *p)
{
	struct churn_arg *a = p;
	while (!atomic_load(&g_churn_done)) {
		a->rng = a->rng * 1103515245u + 12345u;
		int i = a->first + 2 * (int)((a->rng >> 16) % (CHURN_M / 2));
		struct track *t = &g_tr[i];
		if (t->nev >= MAXEV - 1 && t->member)
			continue; /* this one stays a member from now on */
		struct ev *e = &t->ev[t->nev];
		e->join = !t->member;
		e->before = atomic_load(&g_cur_seq);
		int rc = e->join ? ura_group_join(a->g, t->ref) : ura_group_leave(a->g, t->ref);
		e->after = atomic_load(&g_cur_seq);
		if (rc != 0) {
			if (atomic_fetch_add(&g_churn_badrc, 1) < 5)
				printf("# %s member %d: %d\n", e->join ? "join" : "leave", i, rc);
		}
		t->member = !t->member;
		t->nev++;
		atomic_fetch_add_explicit(&g_churn_nev, 1, memory_order_relaxed);
		spin((int)((a->rng >> 8) % 2000));
	}
	return NULL;
}

static void test_churn(void)
{
	g_nseq = t_scaled(20000);
	ura_system *sys = t_system(0);
	ura_group *g;
	t_must(ura_group_new(sys, &g));
	for (int i = 0; i < CHURN_M; i++) {
		g_got[i] = calloc((size_t)g_nseq + 1, 1);
		g_tr[i].ev = calloc(MAXEV, sizeof(struct ev));
		if (!g_got[i] || !g_tr[i].ev) {
			printf("Bail out! no memory\n");
			exit(1);
		}
		g_tr[i].ref = spawn_member(sys, i);
		g_tr[i].member = 1;
		g_tr[i].nev = 0;
		t_must(ura_group_join(g, g_tr[i].ref));
	}
	atomic_store(&g_cur_seq, 0);
	atomic_store(&g_churn_done, 0);
	atomic_store(&g_churn_nev, 0);
	struct churn_arg ca[2] = { { g, 0, 1 }, { g, 1, 7 } };
	pthread_t th[2];
	for (int k = 0; k < 2; k++)
		t_must(-pthread_create(&th[k], NULL, churn, &ca[k]));
	long bad_send = 0, reached_sum = 0, reached_min = CHURN_M + 1, reached_max = -1;
	for (long s = 1; s <= g_nseq; s++) {
		atomic_store(&g_cur_seq, s);
		/* On a loaded machine (or a small URA_TEST_SCALE) the sends can
		 * all end before a churn thread first runs: halfway, wait for
		 * some churn so the test checks what it is about. */
		if (s == g_nseq / 2)
			for (int w = 0; w < 20000 &&
			     atomic_load_explicit(&g_churn_nev, memory_order_relaxed) < 32; w++)
				usleep(500);
		long n = ura_send_group(sys, g, A_SEQ, s);
		if (n < 0 || n > CHURN_M) {
			if (bad_send++ < 5)
				printf("# send %ld: %ld\n", s, n);
			continue;
		}
		reached_sum += n;
		if (n < reached_min)
			reached_min = n;
		if (n > reached_max)
			reached_max = n;
	}
	/* The last send is over: later reads see a sequence past it. */
	atomic_store(&g_cur_seq, g_nseq + 1);
	atomic_store(&g_churn_done, 1);
	for (int k = 0; k < 2; k++)
		pthread_join(th[k], NULL);
	t_rc(await_guarded(sys), 0, "churn: await");
	t_eq(bad_send, 0, "churn: every send returned 0..%d", CHURN_M);
	t_eq(atomic_load(&g_churn_badrc), 0, "churn: every join returned 0 and every leave 0");

	long last_ev = 0;
	for (int i = 0; i < CHURN_M; i++)
		if (g_tr[i].nev && g_tr[i].ev[g_tr[i].nev - 1].after > last_ev)
			last_ev = g_tr[i].ev[g_tr[i].nev - 1].after;
	t_diag("churn: the last join or leave was during send %ld of %ld", last_ev, g_nseq);
	long dups = 0, forbidden = 0, missing = 0, delivered = 0, nev = 0, checked_req = 0;
	signed char *status = malloc((size_t)g_nseq + 2); /* 1 required, -1 forbidden, 0 either */
	if (!status) {
		printf("Bail out! no memory\n");
		exit(1);
	}
	for (int i = 0; i < CHURN_M; i++) {
		struct track *t = &g_tr[i];
		nev += t->nev;
		memset(status, 0, (size_t)g_nseq + 2);
		/* Member from before send 1. */
		long joined_after = 0, left_after = -1;
		int in = 1;
		for (long k = 0; k <= t->nev; k++) {
			int last = k == t->nev;
			const struct ev *e = last ? NULL : &t->ev[k];
			if (in) {
				/* Required: sends that began after the join
				 * returned and ended before the leave began. */
				long end = last ? g_nseq + 1 : e->before;
				for (long s = joined_after + 1; s < end && s <= g_nseq; s++)
					status[s] = 1;
				if (!last)
					left_after = e->after;
			} else {
				/* Forbidden: sends that began after the leave
				 * returned and ended before the join began. */
				long end = last ? g_nseq + 1 : e->before;
				for (long s = left_after + 1; s < end && s <= g_nseq; s++)
					status[s] = -1;
				if (!last)
					joined_after = e->after;
			}
			in = !in;
		}
		for (long s = 1; s <= g_nseq; s++) {
			int got = atomic_load_explicit(&g_got[i][s], memory_order_relaxed);
			delivered += got;
			if (got > 1 && dups++ < 5)
				printf("# member %d got send %ld %d times\n", i, s, got);
			if (got && status[s] < 0 && forbidden++ < 5)
				printf("# member %d got send %ld after its leave returned\n", i, s);
			if (status[s] > 0) {
				checked_req++;
				if (!got && missing++ < 5)
					printf("# member %d missed send %ld while a member\n", i, s);
			}
		}
	}
	free(status);
	t_diag("churn: %ld sends, %ld joins+leaves, %ld deliveries (reached min %ld, max %ld, "
	       "avg %.2f); %ld member-sends had to arrive", g_nseq, nev, delivered, reached_min,
	       reached_max, (double)reached_sum / (double)g_nseq, checked_req);
	t_ok(nev > 10, "churn: members did join and leave during the sends (%ld times)", nev);
	t_eq(delivered, reached_sum, "churn: deliveries == sum of what the sends returned");
	t_eq(dups, 0, "churn: no member got a send twice");
	t_eq(forbidden, 0, "churn: no member got a send that began after its leave returned");
	t_eq(missing, 0, "churn: every member got every send made while it was a member");
	for (int i = 0; i < CHURN_M; i++) {
		free(g_got[i]);
		free(g_tr[i].ev);
		g_got[i] = NULL;
		g_tr[i].ev = NULL;
	}
	t_destroy(sys);
}

int main(void)
{
	test_names();
	test_membership();
	test_leave_odd_refs();
	test_phantom();
	test_spawn_into();
	test_churn();
	return t_done();
}
