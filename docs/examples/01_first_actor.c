/* A first actor: a greeter that prints what it is sent, then stops. */
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_HELLO URA_ATOM("hello")
#define A_BYE URA_ATOM("bye")

/* Every fallible ura call returns 0 (or more) or -errno. */
#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* The actor's own memory: ura zeroes state_size bytes at spawn and hands
 * the same block to every handler of this actor, one at a time. */
typedef struct {
	int greeted;
} greeter;

static void on_hello(ura_ctx *cx, const ura_msg *m)
{
	greeter *g = ura_state(cx);
	g->greeted++;
	printf("hello, %s (visit %lld, greeting %d)\n", ura_arg_str(m, 0),
	       (long long)ura_arg_i64(m, 1), g->greeted);
}

static void on_bye(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	printf("bye after %d greetings\n", ((greeter *)ura_state(cx))->greeted);
	ura_stop(cx);
}

/* A message is a tag (an atom) and typed values: "si" is (string, int64).
 * A case runs only for its tag with exactly its types. */
URA_BEHAVIOR(greeting,
	URA_ON(A_HELLO, "si", on_hello),
	URA_ON(A_BYE, "", on_bye));

static const ura_class greeter_class = {
	.name = "greeter",
	.state_size = sizeof(greeter),
	.initial = &greeting,
};

int main(void)
{
	ura_system *sys;
	ura_ref g;
	CHECK(ura_system_new(&sys, NULL)); /* one worker thread per CPU */
	CHECK(ura_spawn(sys, &greeter_class, NULL, &g));

	char name[16] = "world";
	CHECK(ura_send(sys, g, A_HELLO, name, 1));
	name[0] = 'W'; /* the send copied the string: the actor sees "world" */
	CHECK(ura_send(sys, g, A_HELLO, "ura", 2));
	CHECK(ura_send(sys, g, A_BYE));

	/* Returns once no actor can run and nothing is in flight. */
	CHECK(ura_system_await(sys));

	/* The ref names that one actor: now that it stopped, a send says so
	 * instead of reaching some other actor in its slot. */
	int rc = ura_send(sys, g, A_HELLO, "anyone", 3);
	printf("a send to the stopped greeter: %s\n", ura_strerror(rc));

	CHECK(ura_system_destroy(sys));
	return 0;
}
