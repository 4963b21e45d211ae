/* Monitors and links: who hears of a stop, and what a stop takes along. */
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_WATCH URA_ATOM("watch")
#define A_LINKTO URA_ATOM("linkto")
#define A_CRASH URA_ATOM("crash")
#define A_QUIT URA_ATOM("quit")
#define A_CHILD URA_ATOM("child")
#define A_BOOM URA_ATOM("boom")
#define A_BAD URA_ATOM("bad")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* ---- a worker that crashes, quits or links on request ------------------ */

static void w_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_BOOM, ura_v_str("disk full")); /* a reason and a value */
}

static void w_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx); /* reason normal */
}

static void w_linkto(ura_ctx *cx, const ura_msg *m)
{
	ura_link(cx, ura_arg_ref(m, 0));
}

URA_BEHAVIOR(working,
	URA_ON(A_CRASH, "", w_crash),
	URA_ON(A_QUIT, "", w_quit),
	URA_ON(A_LINKTO, "r", w_linkto));

static const ura_class worker_class = { .name = "worker", .initial = &working };

/* ---- the watcher: monitors on request, traps the exits of its links ---- */

/* Names for the refs, for the printout: main fills it before it sends. */
static ura_ref named[8];
static const char *const names = "abcdefgh";

static char name_of(ura_ref r)
{
	for (int i = 0; i < 8; i++)
		if (ura_ref_eq(named[i], r))
			return names[i];
	return '?';
}

static void print_reason(const char *what, const ura_msg *m)
{
	char reason[URA_ATOM_MAX + 1];
	ura_value v = ura_exit_value(m);
	printf("%s from %c: %s", what, name_of(ura_exit_who(m)),
	       ura_atom_name(ura_exit_reason(m), reason));
	if (v.type == URA_T_STR)
		printf(" \"%s\"", v.u.str);
	printf("\n");
}

static void on_watch(ura_ctx *cx, const ura_msg *m)
{
	ura_monitor(cx, ura_arg_ref(m, 0));
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	print_reason("  DOWN", m);
}

/* Spawns a linked child (Erlang's spawn_link) and makes it crash. */
static void on_child(ura_ctx *cx, const ura_msg *m)
{
	ura_ref child;
	(void)m;
	if (ura_spawn_ex(cx, &worker_class, NULL, &(ura_spawn_opts){ .link = 1 }, &child) == 0)
		ura_send(cx, child, A_CRASH);
}

static void on_exit_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	print_reason("  EXIT", m);
}

/* DOWN and EXIT carry a value only when the exit gave one: any types. */
URA_BEHAVIOR(watching,
	URA_ON(A_WATCH, "r", on_watch),
	URA_ON(A_CHILD, "", on_child),
	URA_ON_ANY(URA_DOWN, on_down),
	URA_ON_ANY(URA_EXIT, on_exit_msg));

static int watcher_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)state;
	(void)arg;
	/* Exit signals from links come as URA_EXIT messages instead of
	 * stopping the watcher. */
	return ura_trap_exit(cx, 1) < 0 ? -1 : 0;
}

static const ura_class watcher_class = {
	.name = "watcher",
	.initial = &watching,
	.init = watcher_init,
};

static ura_system *sys;
static ura_ref watcher;

static ura_ref spawn_watched(int i)
{
	ura_ref r;
	CHECK(ura_spawn(sys, &worker_class, NULL, &r));
	named[i] = r;
	CHECK(ura_send(sys, watcher, A_WATCH, r));
	CHECK(ura_system_await(sys)); /* the monitor is in place */
	return r;
}

int main(void)
{
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_spawn(sys, &watcher_class, NULL, &watcher));

	printf("a monitored worker crashes:\n");
	ura_ref a = spawn_watched(0);
	CHECK(ura_send(sys, a, A_CRASH));
	CHECK(ura_system_await(sys));

	printf("a linked child (?) crashes, its parent traps exits:\n");
	CHECK(ura_send(sys, watcher, A_CHILD));
	CHECK(ura_system_await(sys));

	printf("b is linked to c; c is told to stop with reason bad:\n");
	ura_ref b = spawn_watched(1), c = spawn_watched(2);
	CHECK(ura_send(sys, b, A_LINKTO, c));
	CHECK(ura_system_await(sys));
	CHECK(ura_kill(sys, c, A_BAD)); /* an exit signal from outside */
	CHECK(ura_system_await(sys));

	printf("d is linked to e; e stops normally:\n");
	ura_ref d = spawn_watched(3), e = spawn_watched(4);
	CHECK(ura_send(sys, d, A_LINKTO, e));
	CHECK(ura_system_await(sys));
	CHECK(ura_send(sys, e, A_QUIT));
	CHECK(ura_system_await(sys));
	printf("  d is %s\n", ura_actor_node(sys, d) >= 0 ? "still alive" : "gone");

	printf("d is killed:\n");
	CHECK(ura_kill(sys, d, URA_KILL)); /* stops it even if it traps */
	CHECK(ura_system_await(sys));

	printf("watching an actor that is gone already:\n");
	CHECK(ura_send(sys, watcher, A_WATCH, a));
	CHECK(ura_system_await(sys));

	CHECK(ura_system_destroy(sys));
	return 0;
}
