/* SPDX-License-Identifier: MIT */
/*
 * The name registry: register, whereis, name_of, send to a name; a taken
 * name (-EEXIST), a second name (-EBUSY), a stopped actor (-ESRCH); the
 * name goes when its actor stops, and can be taken again; unregister;
 * bad atoms; many names (the tables grow and sweep); registering and
 * looking up from several threads while actors stop.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "tap.h"

#define A_PING URA_ATOM("ping")
#define A_STOP URA_ATOM("stop")
#define A_RELAY URA_ATOM("relay")

static _Atomic int g_pings;
static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_pings, 1);
}
static void on_stop(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
static _Atomic int g_relay_rc = 1;
/* relay(atom name): sends ping to the name, from a handler. */
static void on_relay(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_relay_rc, ura_send_name(cx, ura_arg_atom(m, 0), A_PING));
}
URA_BEHAVIOR(beh,
	URA_ON(A_PING, "", on_ping),
	URA_ON(A_STOP, "", on_stop),
	URA_ON(A_RELAY, "a", on_relay));
static const ura_class cls = { .name = "named", .initial = &beh };

static ura_system *sys;

static ura_atom atom_of(const char *s)
{
	ura_atom a = 0;
	if (ura_atom_from(s, &a) < 0)
		abort();
	return a;
}

static ura_ref spawn(void)
{
	ura_ref r;
	t_must(ura_spawn(sys, &cls, NULL, &r));
	return r;
}

#define NT 4
static _Atomic int g_bad;
static void *hammer(void *arg)
{
	long t = (long)arg;
	char nm[16];
	for (long i = 0; i < t_scaled(2000); i++) {
		snprintf(nm, sizeof nm, "h%ld", i % 8);
		ura_atom name = atom_of(nm);
		ura_ref r;
		if (ura_spawn(sys, &cls, NULL, &r) < 0)
			continue;
		int rc = ura_register(sys, name, r);
		if (rc != 0 && rc != -EEXIST)
			atomic_fetch_add(&g_bad, 1);
		ura_ref w = ura_whereis(sys, name);
		if (rc == 0 && ura_ref_null(w) && ura_actor_node(sys, r) >= 0)
			atomic_fetch_add(&g_bad, 1);
		if (!ura_ref_null(w) && ura_name_of(sys, w) != name && ura_actor_node(sys, w) >= 0)
			atomic_fetch_add(&g_bad, 1);
		ura_send(sys, r, A_STOP);
		(void)t;
	}
	return NULL;
}

int main(void)
{
	sys = t_system(2);
	ura_ref a = spawn(), b = spawn(), c = spawn();
	ura_atom A = URA_ATOM("alpha"), B = URA_ATOM("beta");
	t_rc(ura_register(sys, A, a), 0, "ura_register: 0");
	t_eq(ura_whereis(sys, A).id, a.id, "ura_whereis finds it");
	t_eq(ura_name_of(sys, a), A, "ura_name_of names it");
	t_rc(ura_register(sys, A, b), -EEXIST, "a taken name: -EEXIST");
	t_rc(ura_register(sys, A, a), -EEXIST, "the same name again, same actor: -EEXIST");
	t_rc(ura_register(sys, B, a), -EBUSY, "a second name for one actor: -EBUSY");
	t_rc(ura_send_name(sys, A, A_PING), 0, "ura_send_name from outside: 0");
	t_must(ura_send(sys, b, A_RELAY, A));
	t_rc(await_guarded(sys), 0, "await");
	t_rc(atomic_load(&g_relay_rc), 0, "ura_send_name from a handler: 0");
	t_eq(atomic_load(&g_pings), 2, "both reached the named actor");
	t_rc(ura_send_name(sys, B, A_PING), -ESRCH, "ura_send_name of a free name: -ESRCH");
	t_must(ura_send(sys, b, A_RELAY, B));
	t_rc(await_guarded(sys), 0, "await");
	t_rc(atomic_load(&g_relay_rc), -ESRCH, "and from a handler: -ESRCH");

	/* The name goes with its actor. */
	t_must(ura_send(sys, a, A_STOP));
	t_rc(await_guarded(sys), 0, "await");
	t_eq(ura_whereis(sys, A).id, URA_NOREF.id, "a stopped actor's name is gone");
	t_eq(ura_name_of(sys, a), 0, "a stopped actor has no name");
	t_rc(ura_send_name(sys, A, A_PING), -ESRCH, "sending to it: -ESRCH");
	t_rc(ura_register(sys, A, b), 0, "the name can be taken again");
	t_eq(ura_whereis(sys, A).id, b.id, "by the new actor");
	t_rc(ura_register(sys, B, a), -ESRCH, "registering a stopped actor: -ESRCH");

	t_rc(ura_unregister(sys, A), 0, "ura_unregister: 0");
	t_rc(ura_unregister(sys, A), -ENOENT, "again: -ENOENT");
	t_eq(ura_whereis(sys, A).id, URA_NOREF.id, "an unregistered name is gone");
	t_rc(ura_register(sys, B, b), 0, "the actor may take another name then");

	t_rc(ura_register(NULL, A, c), -EINVAL, "ura_register(NULL): -EINVAL");
	t_rc(ura_register(sys, 0, c), -EINVAL, "ura_register(atom 0): -EINVAL");
	t_rc(ura_register(sys, URA_ATOM("bad-atom"), c), -EINVAL, "a bad atom: -EINVAL");
	t_rc(ura_register(sys, A, URA_NOREF), -ESRCH, "ura_register(URA_NOREF): -ESRCH");
	t_rc(ura_unregister(sys, 0), -EINVAL, "ura_unregister(atom 0): -EINVAL");
	t_eq(ura_whereis(NULL, A).id, URA_NOREF.id, "ura_whereis(NULL): URA_NOREF");
	t_rc(ura_send_name(sys, (ura_atom)0, A_PING), -EINVAL, "ura_send_name(atom 0): -EINVAL");

	/* Many names, half of whose actors stop: the tables grow and sweep. */
	enum { N = 2000 };
	static ura_ref many[N];
	int bad = 0;
	for (int i = 0; i < N; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "n%d", i);
		many[i] = spawn();
		bad += ura_register(sys, atom_of(nm), many[i]) != 0;
		if (i % 2)
			ura_send(sys, many[i], A_STOP);
	}
	t_rc(await_guarded(sys), 0, "await");
	for (int i = 0; i < N; i++) {
		char nm[16];
		snprintf(nm, sizeof nm, "n%d", i);
		ura_ref w = ura_whereis(sys, atom_of(nm));
		bad += i % 2 ? !ura_ref_null(w) : w.id != many[i].id;
	}
	t_eq(bad, 0, "%d names: each found while its actor lives, gone after", N);

	pthread_t th[NT];
	for (long i = 0; i < NT; i++)
		pthread_create(&th[i], NULL, hammer, (void *)i);
	for (int i = 0; i < NT; i++)
		pthread_join(th[i], NULL);
	t_rc(await_guarded(sys), 0, "await");
	t_eq(atomic_load(&g_bad), 0, "%d threads registering, looking up, stopping: consistent", NT);
	t_destroy(sys);
	return t_done();
}
