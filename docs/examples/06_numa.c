/* NUMA placement: an actor per node, and a child that lives where its
 * parent does. On a one-node machine the program simulates two nodes. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_SPAWN URA_ATOM("spawn")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

static _Atomic uint64_t child_id;

/* A behavior with no cases: the child only has to exist. */
static const ura_behavior nothing = { .name = "nothing" };
static const ura_class idle_class = { .name = "idle", .initial = &nothing };

static void on_spawn(ura_ctx *cx, const ura_msg *m)
{
	ura_ref child;
	(void)m;
	/* No .node: a spawn from a handler places the child on our node. */
	if (ura_spawn(cx, &idle_class, NULL, &child) == 0)
		atomic_store(&child_id, child.id);
}

URA_BEHAVIOR(parenting, URA_ON(A_SPAWN, "", on_spawn));

static const ura_class parent_class = { .name = "parent", .initial = &parenting };

int main(void)
{
	/* URA_TOPOLOGY=NODESxCPUS makes ura lay its workers out as on such a
	 * machine (nothing is pinned then): the placement and batching code
	 * runs as it would on real nodes. Unless one is given already. */
	setenv("URA_TOPOLOGY", "2x1", 0);

	ura_system *sys;
	CHECK(ura_system_new(&sys, NULL));
	int nodes = ura_system_nodes(sys);
	CHECK(nodes);
	printf("nodes: %s\n", nodes >= 2 ? "2 or more" : "1");

	ura_ref last = URA_NOREF;
	for (int k = 0; k < nodes; k++) {
		ura_ref r;
		CHECK(ura_spawn_ex(sys, &parent_class, NULL,
				   &(ura_spawn_opts){ .node = URA_NODE(k) }, &r));
		if (ura_actor_node(sys, r) != k)
			printf("the actor for node %d is on node %d\n", k, ura_actor_node(sys, r));
		last = r;
	}
	printf("one actor placed on each node: done\n");

	/* A node that does not exist is refused, not rounded. */
	ura_ref r;
	int rc = ura_spawn_ex(sys, &parent_class, NULL,
			      &(ura_spawn_opts){ .node = URA_NODE(nodes) }, &r);
	printf("a spawn on a node past the last: %s\n", ura_strerror(rc));

	CHECK(ura_send(sys, last, A_SPAWN));
	CHECK(ura_system_await(sys));
	ura_ref child = { atomic_load(&child_id) };
	printf("the child lives on its parent's node: %s\n",
	       ura_actor_node(sys, child) == ura_actor_node(sys, last) ? "yes" : "no");

	ura_stats st;
	CHECK(ura_system_stats(sys, &st));
	fprintf(stderr, "simulated: %d, cross-node messages: %llu\n",
		st.simulated_topology, (unsigned long long)st.cross_node);
	CHECK(ura_system_destroy(sys));
	return 0;
}
