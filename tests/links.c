/* SPDX-License-Identifier: MIT */
/*
 * Links and trap-exit: a non-normal exit stops the linked actor with the
 * same reason (and on down a chain); a normal one does not; a trapping
 * actor gets URA_EXIT(who, reason[, value]) instead and lives; ura_kill
 * with URA_KILL stops even a trapping actor (reason killed); unlink
 * before the partner's exit spares the actor; spawn_link; linking to
 * oneself (-EINVAL) and to actors that do not exist (noproc); the EXIT
 * after every message of the partner. A trapped EXIT in its documented
 * form wherever it is taken: matched by signature ("ra", "ras"), kept in
 * the stash and offered again after a become, and received by a
 * context-switching body (kept, then taken; and taken at once). An exit
 * signal travels without its `who` (actor/signal.h): these fail if the
 * expansion loses the sender, the reason or a string value's bytes.
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_LINK URA_ATOM("link")
#define A_UNLINK URA_ATOM("unlink")
#define A_TRAP URA_ATOM("trap")
#define A_EXITV URA_ATOM("exitv")
#define A_EXIT0 URA_ATOM("exit0")
#define A_KILL URA_ATOM("kill")
#define A_WATCH URA_ATOM("watch")
#define A_BURST URA_ATOM("burst")
#define A_MSG URA_ATOM("msg")
#define A_SPAWNL URA_ATOM("spawnl")
#define A_CRASH URA_ATOM("crash")
#define A_OTHER URA_ATOM("other")

/* Events seen by any actor: EXIT and DOWN messages. */
#define MAXE 64
static struct ev {
	ura_atom tag, reason;
	ura_ref at, who;
	uint32_t vtype;
	int64_t msgs; /* A_MSG the receiver had seen when it came */
	int n;
} g_ev[MAXE];
static _Atomic int g_nev;
static _Atomic int g_rc[8];

typedef struct {
	int64_t msgs;
	int events;
	int late; /* A_MSG after an EXIT */
} node_st;

static void record(ura_ctx *cx, const ura_msg *m)
{
	node_st *st = ura_state(cx);
	st->events++;
	int i = atomic_fetch_add(&g_nev, 1);
	if (i >= MAXE)
		return;
	g_ev[i].tag = ura_msg_tag(m);
	g_ev[i].reason = ura_exit_reason(m);
	g_ev[i].at = ura_self(cx);
	g_ev[i].who = ura_exit_who(m);
	g_ev[i].vtype = ura_exit_value(m).type;
	g_ev[i].msgs = st->msgs;
	g_ev[i].n = (int)ura_msg_count(m);
}
static void on_link(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_rc[0], ura_link(cx, ura_arg_ref(m, 0)));
}
static void on_unlink(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_rc[1], ura_unlink(cx, ura_arg_ref(m, 0)));
	atomic_store(&g_rc[2], ura_unlink(cx, ura_arg_ref(m, 0)));
}
static void on_trap(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_rc[3], ura_trap_exit(cx, (int)ura_arg_i64(m, 0)));
}
static void on_exitv(ura_ctx *cx, const ura_msg *m)
{
	ura_exit(cx, ura_arg_atom(m, 0), ura_v_i64(ura_arg_i64(m, 1)));
}
static void on_exit0(ura_ctx *cx, const ura_msg *m)
{
	ura_exit(cx, ura_arg_atom(m, 0), URA_NOVALUE);
}
static void on_kill(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_rc[4], ura_kill(cx, ura_arg_ref(m, 0), ura_arg_atom(m, 1)));
}
static void on_watch(ura_ctx *cx, const ura_msg *m)
{
	ura_mon id = ura_monitor(cx, ura_arg_ref(m, 0));
	atomic_store(&g_rc[5], id > 0 ? 0 : (int)id);
}
static void on_burst(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	for (int64_t i = 0; i < ura_arg_i64(m, 1); i++)
		ura_send(cx, to, A_MSG, i);
	ura_exit(cx, A_CRASH, URA_NOVALUE);
}
static void on_msg(ura_ctx *cx, const ura_msg *m)
{
	node_st *st = ura_state(cx);
	(void)m;
	st->msgs++;
	if (st->events)
		st->late++;
}
static ura_ref g_child;
static void on_spawnl(ura_ctx *cx, const ura_msg *m);
URA_BEHAVIOR(node_beh,
	URA_ON_ANY(URA_EXIT, record),
	URA_ON_ANY(URA_DOWN, record),
	URA_ON(A_LINK, "r", on_link),
	URA_ON(A_UNLINK, "r", on_unlink),
	URA_ON(A_TRAP, "i", on_trap),
	URA_ON(A_EXITV, "ai", on_exitv),
	URA_ON(A_EXIT0, "a", on_exit0),
	URA_ON(A_KILL, "ra", on_kill),
	URA_ON(A_WATCH, "r", on_watch),
	URA_ON(A_BURST, "ri", on_burst),
	URA_ON(A_MSG, "i", on_msg),
	URA_ON(A_SPAWNL, "", on_spawnl));
static const ura_class node_class = {
	.name = "node", .state_size = sizeof(node_st), .initial = &node_beh,
};
static void on_spawnl(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_rc[6], ura_spawn_ex(cx, &node_class, NULL,
					    &(ura_spawn_opts){ .link = 1 }, &g_child));
}

static void reset(void)
{
	atomic_store(&g_nev, 0);
	memset(g_ev, 0, sizeof g_ev);
	for (int i = 0; i < 8; i++)
		atomic_store(&g_rc[i], 1);
}

static int live(ura_system *sys, ura_ref r) { return ura_actor_node(sys, r) >= 0; }

static ura_ref spawn_node(ura_system *sys)
{
	ura_ref r;
	t_must(ura_spawn(sys, &node_class, NULL, &r));
	return r;
}

static void settle(ura_system *sys) { t_rc(await_guarded(sys), 0, "await"); }

/* A - B - C linked in a chain, D monitors C: A crashes, B and C stop with
 * its reason and value, D's DOWN says so. */
static void test_cascade(unsigned workers)
{
	ura_system *sys = t_system(workers);
	reset();
	ura_ref a = spawn_node(sys), b = spawn_node(sys), c = spawn_node(sys), d = spawn_node(sys);
	t_must(ura_send(sys, a, A_LINK, b));
	settle(sys);
	t_rc(atomic_load(&g_rc[0]), 0, "ura_link: 0");
	t_must(ura_send(sys, b, A_LINK, c));
	t_must(ura_send(sys, c, A_LINK, b)); /* linked already from the other side */
	t_must(ura_send(sys, d, A_WATCH, c));
	settle(sys);
	t_rc(atomic_load(&g_rc[0]), 0, "ura_link of a pair linked already: 0");
	t_must(ura_send(sys, a, A_EXITV, A_CRASH, 42));
	settle(sys);
	t_ok(!live(sys, a) && !live(sys, b) && !live(sys, c),
	     "%u workers: a crash stops every actor down the chain of links", workers);
	t_ok(live(sys, d), "the watcher lives");
	t_eq(atomic_load(&g_nev), 1, "one event: the watcher's DOWN");
	t_eq(g_ev[0].tag, URA_DOWN, "a DOWN");
	t_eq(g_ev[0].reason, A_CRASH, "with the first actor's reason, carried down the chain");
	t_eq(g_ev[0].vtype, URA_T_I64, "and its value");
	ura_stats st = stats(sys);
	t_eq(st.live, 1, "one actor left");
	t_destroy(sys);
}

static void test_normal_and_trap(void)
{
	ura_system *sys = t_system(2);
	reset();
	ura_ref a = spawn_node(sys), b = spawn_node(sys), c = spawn_node(sys);
	t_must(ura_send(sys, a, A_LINK, b));
	t_must(ura_send(sys, a, A_LINK, c));
	settle(sys);
	t_must(ura_send(sys, a, A_EXIT0, URA_NORMAL));
	settle(sys);
	t_ok(live(sys, b) && live(sys, c), "a normal exit does not stop linked actors");
	t_eq(atomic_load(&g_nev), 0, "and non-trapping ones see nothing");

	reset();
	ura_ref p = spawn_node(sys), q = spawn_node(sys);
	t_must(ura_send(sys, p, A_TRAP, 1));
	settle(sys);
	t_rc(atomic_load(&g_rc[3]), 0, "ura_trap_exit(1): was off (0)");
	t_must(ura_send(sys, p, A_TRAP, 1));
	settle(sys);
	t_rc(atomic_load(&g_rc[3]), 1, "ura_trap_exit(1) again: was on (1)");
	t_must(ura_send(sys, p, A_LINK, q));
	settle(sys);
	t_must(ura_send(sys, q, A_EXITV, A_CRASH, 7));
	settle(sys);
	t_ok(live(sys, p), "a trapping actor lives through its partner's crash");
	t_eq(atomic_load(&g_nev), 1, "and gets one message");
	t_eq(g_ev[0].tag, URA_EXIT, "URA_EXIT");
	t_eq(g_ev[0].who.id, q.id, "naming the partner");
	t_eq(g_ev[0].reason, A_CRASH, "with its reason");
	t_eq(g_ev[0].n, 3, "EXIT(who, reason, value)");

	/* Trapped normal exits arrive too. */
	reset();
	ura_ref r = spawn_node(sys);
	t_must(ura_send(sys, p, A_LINK, r));
	settle(sys);
	t_must(ura_send(sys, r, A_EXIT0, URA_NORMAL));
	settle(sys);
	t_eq(atomic_load(&g_nev), 1, "a trapping actor gets a partner's normal exit");
	t_eq(g_ev[0].reason, URA_NORMAL, "reason normal");
	t_eq(g_ev[0].n, 2, "EXIT(who, reason)");
	t_destroy(sys);
}

static void test_kill(void)
{
	ura_system *sys = t_system(2);
	reset();
	ura_ref p = spawn_node(sys), w = spawn_node(sys), k = spawn_node(sys);
	t_must(ura_send(sys, p, A_TRAP, 1));
	t_must(ura_send(sys, w, A_WATCH, p));
	settle(sys);
	/* An exit signal with a reason other than kill, to a trapping actor:
	 * a message from the killer. */
	t_must(ura_send(sys, k, A_KILL, p, A_OTHER));
	settle(sys);
	t_rc(atomic_load(&g_rc[4]), 0, "ura_kill from an actor: 0");
	t_ok(live(sys, p), "ura_kill(other) to a trapping actor: it lives");
	t_eq(atomic_load(&g_nev), 1, "it gets an EXIT");
	t_eq(g_ev[0].who.id, k.id, "from the killer");
	t_eq(g_ev[0].reason, A_OTHER, "with the reason");
	/* URA_KILL: unconditional. */
	reset();
	t_rc(ura_kill(sys, p, URA_KILL), 0, "ura_kill(sys, kill): 0");
	settle(sys);
	t_ok(!live(sys, p), "kill stops a trapping actor");
	t_eq(atomic_load(&g_nev), 1, "its watcher gets one DOWN");
	t_eq(g_ev[0].reason, URA_KILLED, "reason killed");
	t_rc(ura_kill(sys, p, URA_KILL), -ESRCH, "ura_kill of a stopped actor: -ESRCH");
	/* A non-trapping actor stops with the reason; normal is ignored, but
	 * from itself stops it (Erlang's exit(self(), normal)). */
	reset();
	ura_ref n = spawn_node(sys);
	t_must(ura_send(sys, w, A_WATCH, n));
	settle(sys);
	t_must(ura_kill(sys, n, URA_NORMAL));
	settle(sys);
	t_ok(live(sys, n), "ura_kill(normal) of a non-trapping actor: ignored");
	t_must(ura_send(sys, n, A_KILL, n, URA_NORMAL));
	settle(sys);
	t_ok(!live(sys, n), "ura_kill(self, normal): stops");
	t_eq(atomic_load(&g_nev), 1, "one DOWN");
	t_eq(g_ev[0].reason, URA_NORMAL, "reason normal");
	reset();
	ura_ref o = spawn_node(sys);
	t_must(ura_send(sys, w, A_WATCH, o));
	settle(sys);
	t_must(ura_kill(sys, o, A_OTHER));
	settle(sys);
	t_ok(!live(sys, o), "ura_kill(other) of a non-trapping actor stops it");
	t_eq(g_ev[0].reason, A_OTHER, "with that reason");
	t_rc(ura_kill(sys, o, URA_ATOM("bad-atom")), -EINVAL, "ura_kill with a bad atom: -EINVAL");
	t_rc(ura_kill_sys(sys, w, A_OTHER, ura_v_ptr(sys)), -EINVAL,
	     "ura_kill with a pointer value: -EINVAL");
	t_rc(ura_kill_sys(NULL, w, A_OTHER, URA_NOVALUE), -EINVAL, "ura_kill(NULL system): -EINVAL");
	t_destroy(sys);
}

static void test_unlink(void)
{
	ura_system *sys = t_system(2);
	reset();
	ura_ref a = spawn_node(sys), b = spawn_node(sys), t = spawn_node(sys);
	t_must(ura_send(sys, a, A_LINK, b));
	settle(sys);
	t_must(ura_send(sys, a, A_UNLINK, b));
	settle(sys);
	t_rc(atomic_load(&g_rc[1]), 0, "ura_unlink: 0");
	t_rc(atomic_load(&g_rc[2]), -ENOENT, "ura_unlink again: -ENOENT");
	t_must(ura_send(sys, b, A_EXITV, A_CRASH, 0));
	settle(sys);
	t_ok(live(sys, a), "an unlinked actor lives through its old partner's crash");
	/* Unlink from the other side, then the unlinker crashes. */
	ura_ref c = spawn_node(sys);
	t_must(ura_send(sys, a, A_LINK, c));
	settle(sys);
	t_must(ura_send(sys, c, A_UNLINK, a));
	t_must(ura_send(sys, c, A_EXITV, A_CRASH, 0));
	settle(sys);
	t_ok(live(sys, a), "nor when the partner unlinked, then crashed");
	/* A trapping actor that unlinks: no EXIT of that link afterwards. */
	t_must(ura_send(sys, t, A_TRAP, 1));
	ura_ref d = spawn_node(sys);
	t_must(ura_send(sys, t, A_LINK, d));
	settle(sys);
	t_must(ura_send(sys, t, A_UNLINK, d));
	settle(sys);
	t_must(ura_send(sys, d, A_EXITV, A_CRASH, 0));
	settle(sys);
	t_eq(atomic_load(&g_nev), 0, "a trapping actor that unlinked gets no EXIT");
	t_destroy(sys);
}

static void test_bad(void)
{
	ura_system *sys = t_system(2), *other = t_system(1);
	ura_ref gone = spawn_node(sys), foreign;
	t_must(ura_spawn(other, &node_class, NULL, &foreign));
	t_must(ura_send(sys, gone, A_EXIT0, URA_NORMAL));
	settle(sys);
	reset();
	ura_ref s = spawn_node(sys);
	t_must(ura_send(sys, s, A_LINK, s));
	settle(sys);
	t_rc(atomic_load(&g_rc[0]), -EINVAL, "ura_link to oneself: -EINVAL");
	t_rc(ura_link(NULL, s), -EINVAL, "ura_link(NULL ctx): -EINVAL");
	t_rc(ura_unlink(NULL, s), -EINVAL, "ura_unlink(NULL ctx): -EINVAL");
	t_rc(ura_trap_exit(NULL, 1), -EINVAL, "ura_trap_exit(NULL ctx): -EINVAL");
	ura_ref bad[4] = { gone, URA_NOREF, { 0x123456789ull }, foreign };
	const char *what[4] = { "a stopped actor", "URA_NOREF", "a ref never made",
				"another system's actor" };
	ura_ref p = spawn_node(sys);
	t_must(ura_send(sys, p, A_TRAP, 1));
	for (int i = 0; i < 4; i++) {
		reset();
		t_must(ura_send(sys, p, A_LINK, bad[i]));
		settle(sys);
		t_rc(atomic_load(&g_rc[0]), 0, "link to %s: 0", what[i]);
		t_eq(atomic_load(&g_nev), 1, "link to %s: an EXIT at once (trapped)", what[i]);
		t_eq(g_ev[0].reason, URA_NOPROC, "link to %s: reason noproc", what[i]);
		t_eq(g_ev[0].who.id, bad[i].id, "link to %s: who is the ref given", what[i]);
	}
	/* A non-trapping actor that links to nothing stops with noproc, as
	 * in Erlang. */
	reset();
	ura_ref n = spawn_node(sys), w = spawn_node(sys);
	t_must(ura_send(sys, w, A_WATCH, n));
	settle(sys);
	t_must(ura_send(sys, n, A_LINK, gone));
	settle(sys);
	t_ok(!live(sys, n), "a non-trapping actor linking to a stopped one stops");
	t_eq(g_ev[0].reason, URA_NOPROC, "with reason noproc");
	t_destroy(sys);
	t_destroy(other);
}

static void test_spawn_link(void)
{
	ura_system *sys = t_system(2);
	reset();
	ura_ref p = spawn_node(sys);
	t_must(ura_send(sys, p, A_TRAP, 1));
	t_must(ura_send(sys, p, A_SPAWNL));
	settle(sys);
	t_rc(atomic_load(&g_rc[6]), 0, "spawn_link: 0");
	t_must(ura_send(sys, g_child, A_EXITV, A_CRASH, 1));
	settle(sys);
	t_eq(atomic_load(&g_nev), 1, "the child's crash reaches its trapping parent");
	t_eq(g_ev[0].who.id, g_child.id, "as an EXIT from the child");
	t_rc(ura_spawn_ex(sys, &node_class, NULL, &(ura_spawn_opts){ .link = 1 }, NULL), -EINVAL,
	     "spawn_link from outside: -EINVAL");
	/* A non-trapping parent goes with its child. */
	ura_ref q = spawn_node(sys);
	t_must(ura_send(sys, q, A_SPAWNL));
	settle(sys);
	t_must(ura_send(sys, q, A_EXITV, A_CRASH, 1));
	settle(sys);
	t_ok(!live(sys, g_child), "a linked child goes with its parent");
	t_destroy(sys);
}

/* The EXIT comes after every message the partner sent. */
static void test_order(void)
{
	ura_system *sys = t_system(2);
	int nodes = ura_system_nodes(sys);
	reset();
	ura_ref p, q;
	t_must(ura_spawn_ex(sys, &node_class, NULL, &(ura_spawn_opts){ .worker = URA_WORKER(0) },
			    &p));
	t_must(ura_spawn_ex(sys, &node_class, NULL, &(ura_spawn_opts){ .worker = URA_WORKER(1) },
			    &q));
	t_must(ura_send(sys, p, A_TRAP, 1));
	t_must(ura_send(sys, p, A_LINK, q));
	settle(sys);
	long n = t_scaled(20000);
	t_must(ura_send(sys, q, A_BURST, p, n));
	settle(sys);
	t_eq(atomic_load(&g_nev), 1, "one EXIT (%d node(s))", nodes);
	t_eq(g_ev[0].msgs, n, "after all %ld messages of the partner", n);
	t_destroy(sys);
}

/* ---- a trapped EXIT's documented form, in every place it is taken ---- */

#define A_QUIT URA_ATOM("quit")
#define A_OPEN URA_ATOM("open")
#define A_GO URA_ATOM("go")
static void on_quit(ura_ctx *cx, const ura_msg *m)
{
	const char *s = ura_arg_str(m, 1);
	ura_exit(cx, ura_arg_atom(m, 0), s ? ura_v_str(s) : URA_NOVALUE);
}
URA_BEHAVIOR(quitter_beh, URA_ON(A_QUIT, "as", on_quit), URA_ON(A_QUIT, "a", on_quit));
static const ura_class quitter_class = { .name = "quitter", .initial = &quitter_beh };

/* What the trapper saw: by which case, who, the reason, the string. */
static struct tform {
	int how; /* 1: "ra", 2: "ras", 3: the stash after a become, 4/5: a body */
	ura_ref who;
	ura_atom reason;
	char str[16];
	size_t len;
	int n;
} g_tf[8];
/* A string past the pools' biggest class (2 KiB): its EXIT block comes
 * from malloc, so LSan (the ASan build) sees one that is never freed. */
static char g_big[3000];
static _Atomic int g_ntf;
static void tf_note(int how, const ura_msg *m, ura_ref who, ura_atom reason, const char *s)
{
	int i = atomic_fetch_add(&g_ntf, 1);
	if (i >= 8)
		return;
	g_tf[i].how = how;
	g_tf[i].who = who;
	g_tf[i].reason = reason;
	snprintf(g_tf[i].str, sizeof g_tf[i].str, "%s", s ? s : "");
	g_tf[i].len = s ? strlen(s) : 0;
	g_tf[i].n = (int)ura_msg_count(m);
}
static void on_ra(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	tf_note(1, m, ura_arg_ref(m, 0), ura_arg_atom(m, 1), NULL);
}
static void on_ras(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	tf_note(2, m, ura_arg_ref(m, 0), ura_arg_atom(m, 1), ura_arg_str(m, 2));
}
static void on_stashed(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	tf_note(3, m, ura_exit_who(m), ura_exit_reason(m), ura_exit_value(m).u.str);
}
static void t_link(ura_ctx *cx, const ura_msg *m)
{
	ura_trap_exit(cx, 1);
	atomic_store(&g_rc[0], ura_link(cx, ura_arg_ref(m, 0)));
}
URA_BEHAVIOR(opened_beh, URA_ON(URA_EXIT, "ras", on_stashed));
static void t_open(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &opened_beh);
}
URA_BEHAVIOR(sig_trapper_beh, URA_ON(A_LINK, "r", t_link), URA_ON(URA_EXIT, "ra", on_ra),
	     URA_ON(URA_EXIT, "ras", on_ras));
URA_BEHAVIOR_OPTS(closed_beh, (.unmatched = URA_UNMATCHED_STASH), URA_ON(A_LINK, "r", t_link),
		  URA_ON(A_OPEN, "", t_open));
static const ura_class sig_trapper_class = { .name = "sig_trapper", .initial = &sig_trapper_beh };
static const ura_class closed_class = { .name = "closed", .initial = &closed_beh };

/* A body: traps, links a quitter that exits before it looks (the EXIT is
 * kept while it waits for GO), then takes that EXIT from the stash, then
 * a second one as it arrives. */
static void body_exit(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	tf_note(g_ntf < 1 ? 4 : 5, m, ura_arg_ref(m, 0), ura_arg_atom(m, 1), ura_arg_str(m, 2));
}
static void body_go(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
URA_BEHAVIOR(body_exit_beh, URA_ON(URA_EXIT, "ras", body_exit));
URA_BEHAVIOR(body_go_beh, URA_ON(A_GO, "", body_go));
static ura_ref g_q[2];
static void trap_body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_trap_exit(cx, 1);
	for (int k = 0; k < 2; k++) {
		if (ura_spawn_ex(cx, &quitter_class, NULL, &(ura_spawn_opts){ .link = 1 }, &g_q[k]) < 0)
			return;
		ura_send(cx, g_q[k], A_QUIT, A_CRASH, g_big + k);
		if (k == 0) /* GO comes once the EXIT is here: it is kept meanwhile */
			atomic_store(&g_rc[1], ura_receive(cx, &body_go_beh, URA_FOREVER));
		atomic_store(&g_rc[2 + k], ura_receive(cx, &body_exit_beh, URA_FOREVER));
	}
}
static const ura_class trap_body_class = { .name = "trap_body", .body = trap_body };

static void test_trap_forms(void)
{
	ura_system *sys = t_system(2);
	atomic_store(&g_ntf, 0);
	reset();
	memset(g_big, 'x', sizeof g_big - 1);
	memcpy(g_big, "kfirst", 6); /* g_big + 1: "first...", + 0: "kfirst..." */
	ura_ref t, q1, q2;
	t_must(ura_spawn(sys, &sig_trapper_class, NULL, &t));
	t_must(ura_spawn(sys, &quitter_class, NULL, &q1));
	t_must(ura_spawn(sys, &quitter_class, NULL, &q2));
	t_must(ura_send(sys, t, A_LINK, q1));
	t_must(ura_send(sys, t, A_LINK, q2));
	settle(sys);
	t_must(ura_send(sys, q1, A_QUIT, A_CRASH));
	settle(sys);
	t_must(ura_send(sys, q2, A_QUIT, A_OTHER, "bytes"));
	settle(sys);
	t_eq(atomic_load(&g_ntf), 2, "two trapped EXITs");
	t_eq(g_tf[0].how, 1, "a reason alone matches \"ra\"");
	t_eq(g_tf[0].who.id, q1.id, "who: the partner");
	t_eq(g_tf[0].reason, A_CRASH, "its reason");
	t_eq(g_tf[1].how, 2, "a reason and a string match \"ras\"");
	t_eq(g_tf[1].who.id, q2.id, "who: the second partner");
	t_eq(g_tf[1].reason, A_OTHER, "its reason");
	t_streq(g_tf[1].str, "bytes", "and the string's bytes");

	/* Unmatched: into the stash, offered again after a become. */
	atomic_store(&g_ntf, 0);
	ura_ref c, q3;
	t_must(ura_spawn(sys, &closed_class, NULL, &c));
	t_must(ura_spawn(sys, &quitter_class, NULL, &q3));
	t_must(ura_send(sys, c, A_LINK, q3));
	settle(sys);
	t_must(ura_send(sys, q3, A_QUIT, A_CRASH, g_big));
	settle(sys);
	t_eq(atomic_load(&g_ntf), 0, "a trapped EXIT no case takes waits in the stash");
	t_must(ura_send(sys, c, A_OPEN));
	settle(sys);
	t_eq(atomic_load(&g_ntf), 1, "and is taken after the become");
	t_eq(g_tf[0].how, 3, "by the new behavior's \"ras\"");
	t_eq(g_tf[0].who.id, q3.id, "who: the partner");
	t_eq(g_tf[0].reason, A_CRASH, "its reason");
	t_ok(!strncmp(g_tf[0].str, "kfirst", 6) && g_tf[0].len == sizeof g_big - 1,
	     "and its %zu-byte string, after the signal's block went", g_tf[0].len);

	/* A context-switching body. */
	atomic_store(&g_ntf, 0);
	ura_ref b;
	t_must(ura_spawn(sys, &trap_body_class, NULL, &b));
	settle(sys);
	t_eq(atomic_load(&g_ntf), 0, "a body waiting for GO keeps the EXIT");
	t_must(ura_send(sys, b, A_GO));
	settle(sys);
	t_rc(atomic_load(&g_rc[1]), 0, "the body's receive of GO");
	t_rc(atomic_load(&g_rc[2]), 0, "its receive of the kept EXIT");
	t_rc(atomic_load(&g_rc[3]), 0, "its receive of an EXIT as it comes");
	t_eq(atomic_load(&g_ntf), 2, "two EXITs taken by the body");
	t_eq(g_tf[0].who.id, g_q[0].id, "the kept one: who");
	t_ok(!strncmp(g_tf[0].str, "kfirst", 6) && g_tf[0].len == sizeof g_big - 1,
	     "its string");
	t_eq(g_tf[1].who.id, g_q[1].id, "the second: who");
	t_eq(g_tf[1].reason, A_CRASH, "its reason");
	t_ok(!strncmp(g_tf[1].str, "first", 5) && g_tf[1].len == sizeof g_big - 2,
	     "its string");
	t_destroy(sys);
}

int main(void)
{
	test_cascade(1);
	test_cascade(2);
	test_normal_and_trap();
	test_kill();
	test_unlink();
	test_bad();
	test_spawn_link();
	test_order();
	test_trap_forms();
	return t_done();
}
