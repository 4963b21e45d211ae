/* Blocking actors and the scoped actor: a context-switching actor whose
 * body is plain sequential code waiting in ura_receive, and main talking
 * to it through a scoped actor of its own. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_HELLO URA_ATOM("hello")
#define A_DOUBLE URA_ATOM("double")
#define A_NOTE URA_ATOM("note")
#define A_QUIT URA_ATOM("quit")
#define A_OK URA_ATOM("ok")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

typedef struct {
	int quit;
} server;

static void on_hello(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	printf("server: hello\n");
}

static void on_double(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_OK, 2 * ura_arg_i64(m, 0));
}

static void on_note(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("server: note \"%s\"\n", ura_arg_str(m, 0));
}

static void on_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	((server *)ura_state(cx))->quit = 1;
}

URA_BEHAVIOR(greeted, URA_ON(A_HELLO, "", on_hello));
URA_BEHAVIOR(serving,
	URA_ON(A_DOUBLE, "i", on_double),
	URA_ON(A_NOTE, "s", on_note),
	URA_ON(A_QUIT, "", on_quit));

/* Runs on a stack of its own; while it waits, its worker runs others. */
static void body(ura_ctx *cx, void *state)
{
	server *s = state;
	/* A selective receive: only `hello` matches; other messages wait in
	 * the mailbox, in order, for a later receive. */
	if (ura_receive(cx, &greeted, 20 * URA_MSEC) == -ETIMEDOUT)
		printf("server: no hello within 20 ms\n");
	while (!s->quit && ura_receive(cx, &serving, URA_FOREVER) == 0)
		;
	printf("server: done\n"); /* returning stops the actor (normal) */
}

static const ura_class server_class = {
	.name = "server",
	.state_size = sizeof(server),
	.body = body, /* no .initial needed */
};

int main(void)
{
	ura_system *sys;
	ura_ref srv;
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_spawn(sys, &server_class, NULL, &srv));

	/* Any thread that is not a worker: a ref of its own, sends,
	 * requests and receives that block this thread only. */
	ura_scoped *me;
	const ura_msg *m;
	CHECK(ura_scoped_new(sys, &me));
	CHECK(ura_scoped_send(me, srv, A_NOTE, "waits for the receive after hello"));
	CHECK(ura_scoped_request(me, srv, 5 * URA_SEC, &m, A_DOUBLE, 21));
	printf("main: double(21) = %lld\n", (long long)ura_arg_i64(m, 0));
	CHECK(ura_scoped_send(me, srv, A_QUIT));
	CHECK(ura_system_await(sys));

	/* The server is gone; a request says so at once. */
	int rc = ura_scoped_request(me, srv, 5 * URA_SEC, &m, A_DOUBLE, 1);
	printf("main: a request to the stopped server: %s\n", ura_strerror(rc));
	ura_scoped_free(me);
	CHECK(ura_system_destroy(sys));
	return 0;
}
