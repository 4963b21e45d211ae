// The public header from C++17: atoms, behaviors with cases and guards,
// spawning with placement, sends of every value type (atoms as atoms),
// request/reply, delayed sends, become with a bound value, a stash
// behavior built with URA_BEHAVIOR_OPTS, a supervisor. Runs a real system.
#include <ura.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string_view>

static int failures, tests;
static void ok(bool c, const char *what)
{
	++tests;
	std::printf("%sok %d - %s\n", c ? "" : "not ", tests, what);
	if (!c)
		++failures;
}

#define A_PING URA_ATOM("ping")
#define A_ALL URA_ATOM("all")
#define A_ASK URA_ATOM("ask")
#define A_ANSWER URA_ATOM("answer")
#define A_BIG URA_ATOM("big")
#define A_LATER URA_ATOM("later")
#define A_SWITCH URA_ATOM("switch")
#define A_ODD URA_ATOM("odd")
#define A_KEPT URA_ATOM("kept")
#define A_DONE URA_ATOM("done")

// What the actors saw, checked by main after await.
static std::atomic<int> g_pings, g_guarded, g_all_ok, g_answer, g_big_ok,
	g_later, g_bound_ok, g_kept;

static int big_enough(ura_ctx *, const ura_msg *m, const void *arg)
{
	return ura_arg_i64(m, 0) > *static_cast<const int64_t *>(arg);
}
static const int64_t g_limit = 10;

static void on_small(ura_ctx *, const ura_msg *) { g_pings++; }
static void on_large(ura_ctx *, const ura_msg *) { g_guarded++; }

// (int64, double, atom, ref, string, bytes) in one message.
static void on_all(ura_ctx *cx, const ura_msg *m)
{
	size_t n = 0;
	const void *b = ura_arg_bytes(m, 5, &n);
	bool good = std::string_view(ura_msg_types(m)) == "idarsb" &&
		    ura_arg_i64(m, 0) == -7 && ura_arg_f64(m, 1) == 2.5 &&
		    ura_arg_atom(m, 2) == A_PING && ura_ref_eq(ura_arg_ref(m, 3), ura_self(cx)) &&
		    std::string_view(ura_arg_str(m, 4)) == "text" && n == 3 &&
		    std::memcmp(b, "xyz", 3) == 0;
	g_all_ok = good ? 1 : 2;
}

static void on_ask(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_ANSWER, ura_arg_i64(m, 0) * 2);
}

// URA_MAX_VALUES values through ura_send.
static void on_big(ura_ctx *, const ura_msg *m)
{
	bool good = ura_msg_count(m) == URA_MAX_VALUES;
	for (unsigned i = 0; good && i < URA_MAX_VALUES; i++)
		good = ura_arg_i64(m, i) == (int64_t)i;
	g_big_ok = good ? 1 : 2;
}

static void on_later(ura_ctx *, const ura_msg *) { g_later++; }

URA_BEHAVIOR_DECL(bound_beh);
static void on_switch(ura_ctx *cx, const ura_msg *m)
{
	ura_become_bound(cx, &bound_beh, ura_arg_atom(m, 0));
}
static void on_bound_odd(ura_ctx *cx, const ura_msg *)
{
	ura_value b = ura_bound(cx);
	g_bound_ok = b.type == URA_T_ATOM && b.u.atom == A_ODD ? 1 : 2;
}

URA_BEHAVIOR(worker_beh,
	     URA_ON(A_PING, "i", on_large, URA_GUARD(big_enough, &g_limit)),
	     URA_ON(A_PING, "i", on_small),
	     URA_ON(A_ALL, "idarsb", on_all),
	     URA_ON(A_ASK, "i", on_ask),
	     URA_ON_ANY(A_BIG, on_big),
	     URA_ON(A_LATER, "", on_later),
	     URA_ON(A_SWITCH, "a", on_switch));
URA_BEHAVIOR(bound_beh, URA_ON(A_ODD, "", on_bound_odd));

// C++17 has no designated initializers: a class in declaration order.
static const ura_class worker_class = { "cxx_worker", 0, &worker_beh, nullptr, nullptr, 0, nullptr, {}, 0, nullptr, 0, 0 };

// A requester: asks, and its continuation records the answer.
static void got_answer(ura_ctx *, const ura_msg *m) { g_answer = (int)ura_arg_i64(m, 0); }
static void on_go(ura_ctx *cx, const ura_msg *m)
{
	if (ura_request(cx, ura_arg_ref(m, 0), got_answer, nullptr, A_ASK, 21) < 0)
		g_answer = -1;
}
URA_BEHAVIOR(asker_beh, URA_ON(URA_ATOM("go"), "r", on_go));
static const ura_class asker_class = { "cxx_asker", 0, &asker_beh, nullptr, nullptr, 0, nullptr, {}, 0, nullptr, 0, 0 };

// A stash behavior (URA_BEHAVIOR_OPTS): A_KEPT waits until A_DONE.
URA_BEHAVIOR_DECL(open_beh);
static void on_kept(ura_ctx *, const ura_msg *) { g_kept++; }
static void on_done(ura_ctx *cx, const ura_msg *) { ura_become(cx, &open_beh); }
URA_BEHAVIOR_OPTS(closed_beh, (.unmatched = URA_UNMATCHED_STASH, .name = "closed"),
		  URA_ON(A_DONE, "", on_done));
URA_BEHAVIOR(open_beh, URA_ON(A_KEPT, "", on_kept));
static const ura_class stash_class = { "cxx_stash", 0, &closed_beh, nullptr, nullptr, 0, nullptr, {}, 0, nullptr, 0, 0 };

int main()
{
	static_assert(URA_ATOM("take") == URA_ATOM("take"), "atoms are constants");
	char name[URA_ATOM_MAX + 1];
	ura_atom a = 0;
	ok(ura_atom_from("take", &a) == 0 && a == URA_ATOM("take") &&
	       std::string_view(ura_atom_name(a, name)) == "take",
	   "URA_ATOM and ura_atom_from agree");
	ok(ura_behavior_check(&worker_beh) == 0 && ura_behavior_check(&closed_beh) == 0,
	   "C++ behaviors pass ura_behavior_check");
	ok(closed_beh.unmatched == URA_UNMATCHED_STASH && std::string_view(closed_beh.name) ==
	   "closed", "URA_BEHAVIOR_OPTS sets the options");

	ura_system *sys = nullptr;
	ura_config cfg{};
	cfg.workers = 2;
	if (ura_system_new(&sys, &cfg) < 0) {
		std::printf("not ok 1 - ura_system_new\n1..1\n");
		return 1;
	}
	ura_ref w, w2, q, st;
	ura_spawn_opts o{};
	o.node = URA_NODE(0);
	ok(ura_spawn_ex(sys, &worker_class, nullptr, &o, &w) == 0, "ura_spawn_ex with URA_NODE(0)");
	ok(ura_actor_node(sys, w) == 0, "on node 0");
	ok(ura_spawn(sys, &asker_class, nullptr, &q) == 0 &&
	       ura_spawn(sys, &stash_class, nullptr, &st) == 0 &&
	       ura_spawn(sys, &worker_class, nullptr, &w2) == 0, "ura_spawn");

	ok(ura_send(sys, w, A_PING, 3) == 0 && ura_send(sys, w, A_PING, 30) == 0,
	   "ura_send of an int");
	ok(ura_send(sys, w, A_ALL, -7, 2.5, A_PING, w, "text", ura_v_bytes("xyz", 3)) == 0,
	   "ura_send of int, double, atom, ref, string, bytes");
	ok(ura_send(sys, w, A_BIG, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) == 0,
	   "ura_send of URA_MAX_VALUES values");
	ok(ura_send(sys, q, URA_ATOM("go"), w) == 0, "a request from C++");
	ok(ura_send_after(sys, w, 2 * URA_MSEC, A_LATER) > 0, "ura_send_after");
	ura_atom odd = A_ODD;
	ok(ura_send(sys, w2, A_SWITCH, odd) == 0 && ura_send(sys, w2, A_ODD) == 0,
	   "an atom variable sent as an atom");
	ok(ura_send(sys, st, A_KEPT) == 0 && ura_send(sys, st, A_DONE) == 0, "to the stash actor");
	ok(ura_system_await(sys) == 0, "await");

	ok(g_pings == 1 && g_guarded == 1, "the guard picked the case");
	ok(g_all_ok == 1, "every value arrived with its type");
	ok(g_big_ok == 1, "URA_MAX_VALUES values arrived");
	ok(g_answer == 42, "the reply reached the continuation");
	ok(g_later == 1, "the delayed send arrived");
	ok(g_bound_ok == 1, "become_bound with an atom: ura_bound reads it");
	ok(g_kept == 1, "the stashed message came back after the become");
	{
		// A supervisor from C++: ura_sup_start on a ura_system*.
		ura_child_spec kid{};
		kid.id = URA_ATOM("w");
		kid.cls = &worker_class;
		ura_sup_spec spec{};
		spec.children = &kid;
		spec.nchildren = 1;
		ura_ref sup;
		ura_sup_child k{};
		ok(ura_sup_start(sys, &spec, nullptr, &sup) == 0 &&
		   ura_sup_which_sys(sys, sup, &k, 1) == 1 && !ura_ref_null(k.ref),
		   "ura_sup_start and which from C++");
		ok(ura_kill(sys, sup, URA_SHUTDOWN) == 0 && ura_system_await(sys) == 0,
		   "the supervisor shuts down");
	}

	// Scoped actors (issue 18): the C++ forms of their variadic macros.
	ura_scoped *sc = nullptr;
	const ura_msg *reply = nullptr;
	ok(ura_scoped_new(sys, &sc) == 0, "a scoped actor");
	ok(ura_scoped_request(sc, w, 5 * URA_SEC, &reply, A_ASK, 4) == 0 && reply &&
	   ura_arg_i64(reply, 0) == 8, "ura_scoped_request from C++: the reply");
	ok(ura_scoped_send(sc, w, A_PING, 1) == 0, "ura_scoped_send from C++");
	ura_scoped_free(sc);
	ok(ura_system_await(sys) == 0, "await");
	ok(ura_system_destroy(sys) == 0, "destroy: nothing lost");
	std::printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
