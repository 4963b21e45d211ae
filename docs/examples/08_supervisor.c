/* A supervisor (lib/sup): two counters under one_for_one; the one that
 * crashes is restarted, fresh, under its registered name; crash it too
 * often and the supervisor gives up. */
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_INC URA_ATOM("inc")
#define A_SHOW URA_ATOM("show")
#define A_CRASH URA_ATOM("crash")
#define A_HITS URA_ATOM("hits")
#define A_MISSES URA_ATOM("misses")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

typedef struct {
	ura_atom name;
	long n;
} counter;

static void on_inc(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	((counter *)ura_state(cx))->n++;
}

static void on_show(ura_ctx *cx, const ura_msg *m)
{
	counter *c = ura_state(cx);
	char name[URA_ATOM_MAX + 1];
	(void)m;
	printf("  %s = %ld\n", ura_atom_name(c->name, name), c->n);
}

static void on_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_CRASH, URA_NOVALUE);
}

URA_BEHAVIOR(counting,
	URA_ON(A_INC, "", on_inc),
	URA_ON(A_SHOW, "", on_show),
	URA_ON(A_CRASH, "", on_crash));

/* Runs at every start, restarts included: the new incarnation takes the
 * name, so senders that go by the name never hold a stale ref. */
static int counter_init(ura_ctx *cx, void *state, const void *arg)
{
	counter *c = state;
	c->name = *(const ura_atom *)arg;
	return ura_register(ura_ctx_system(cx), c->name, ura_self(cx));
}

static const ura_class counter_class = {
	.name = "counter",
	.state_size = sizeof(counter),
	.initial = &counting,
	.init = counter_init,
};

/* Read again at every restart: static. */
static const ura_atom hits = A_HITS, misses = A_MISSES;
static const ura_child_spec children[] = {
	{ .id = A_HITS, .cls = &counter_class, .arg = &hits },
	{ .id = A_MISSES, .cls = &counter_class, .arg = &misses },
};
static const ura_sup_spec spec = {
	.strategy = URA_ONE_FOR_ONE,
	.intensity = 2, /* at most 2 restarts ... */
	.period_ns = 10 * URA_SEC, /* ... in 10 s */
	.children = children,
	.nchildren = 2,
};

static void show_children(ura_system *sys, ura_ref sup)
{
	ura_sup_child kids[4];
	long n = ura_sup_which_sys(sys, sup, kids, 4);
	if (n < 0) {
		printf("  the supervisor: %s\n", ura_strerror((int)n));
		return;
	}
	for (long i = 0; i < n; i++) {
		char id[URA_ATOM_MAX + 1];
		printf("  child %s: %s, restarts: %llu\n", ura_atom_name(kids[i].id, id),
		       ura_ref_null(kids[i].ref) ? "not running" : "running",
		       (unsigned long long)kids[i].restarts);
	}
}

/* One actor's output at a time: two actors print in either order. */
static void show(ura_system *sys, ura_atom name)
{
	CHECK(ura_send_name(sys, name, A_SHOW));
	CHECK(ura_system_await(sys));
}

int main(void)
{
	ura_system *sys;
	ura_ref sup;
	CHECK(ura_system_new(&sys, NULL));
	/* The children are started, in order, before this returns. */
	CHECK(ura_sup_start(sys, &spec, NULL, &sup));
	printf("started:\n");
	show_children(sys, sup);

	for (int i = 0; i < 3; i++)
		CHECK(ura_send_name(sys, A_HITS, A_INC));
	CHECK(ura_send_name(sys, A_MISSES, A_INC));
	show(sys, A_HITS);
	show(sys, A_MISSES);

	printf("hits crashes:\n");
	ura_ref old = ura_whereis(sys, A_HITS);
	CHECK(ura_send_name(sys, A_HITS, A_CRASH));
	CHECK(ura_system_await(sys));
	show_children(sys, sup);
	printf("  the old ref: %s\n", ura_strerror(ura_send(sys, old, A_SHOW)));
	/* The restart began from the spec: the count is gone, the other
	 * child kept its own (a real store would reload it). */
	show(sys, A_HITS);
	show(sys, A_MISSES);

	printf("hits crashes twice more:\n");
	for (int i = 0; i < 2; i++) {
		CHECK(ura_send_name(sys, A_HITS, A_CRASH));
		CHECK(ura_system_await(sys));
	}
	/* A third restart within the period: it stopped its children and
	 * itself, with reason maxrestart, for its own supervisor to see. */
	show_children(sys, sup);
	printf("  misses by name: %s\n", ura_strerror(ura_send_name(sys, A_MISSES, A_SHOW)));

	CHECK(ura_system_destroy(sys));
	return 0;
}
