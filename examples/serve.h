/* SPDX-License-Identifier: MIT */
/*
 * serve: the scaffolding echo_server and http_server share, so that each
 * file shows only its connection actor.
 *
 * serve_main() parses --port, --bind and --workers, listens, and runs an
 * acceptor actor that keeps one multishot accept armed and spawns an
 * actor of spec->conn_class per connection (in a group, with a serve_conn
 * as its spawn argument), then sends it SERVE_START. SIGINT or SIGTERM
 * shuts down: every connection is sent SERVE_QUIT, the accept is
 * cancelled, and serve_main returns once every actor has stopped.
 */
#ifndef URA_EXAMPLES_SERVE_H
#define URA_EXAMPLES_SERVE_H

#include <ura.h>

/* What a connection actor must handle: the first message it gets, and
 * the shutdown (which also goes to the actor setup names in *quit). */
#define SERVE_START URA_ATOM("start")
#define SERVE_QUIT URA_ATOM("quit")

/* The spawn argument of a connection actor. */
typedef struct {
	int fd;    /* the connection's socket, nonblocking; the actor's to close */
	void *ctx; /* serve_spec.ctx */
} serve_conn;

typedef struct {
	const char *name;            /* starts every line the server prints */
	int port;                    /* without --port */
	const ura_class *conn_class; /* its init takes a serve_conn */
	void *ctx;                   /* the server's own, for the callbacks */
	/* The server's own options, after the common ones in the usage. */
	const char *usage;
	/* Takes one of the server's own options and its value: 0, or -1 when
	 * it is not one or the value is bad (then the usage, exit 2). NULL:
	 * none. Runs before anything else. */
	int (*option)(void *ctx, const char *opt, const char *val);
	/* Spawns what the connections share, once the system runs and before
	 * the first accept; an actor it puts in *quit is sent SERVE_QUIT at
	 * shutdown. NULL: nothing. Returns 0 or -errno (then exit 1). */
	int (*setup)(ura_system *sys, void *ctx, ura_ref *quit);
} serve_spec;

/* Runs the server; returns main's exit status. spec must live until then. */
int serve_main(int argc, char **argv, const serve_spec *spec);

#endif
