/* SPDX-License-Identifier: MIT */
/*
 * serve: the scaffolding echo_server and http_server share, so that each
 * file shows only its connection actor.
 *
 * serve_main() parses --port, --bind, --workers and --max-conns, listens,
 * and runs an acceptor actor that keeps one multishot accept armed and
 * spawns an actor of spec->conn_class per connection (in a group, with a
 * serve_conn as its spawn argument), then sends it SERVE_START. SIGINT or
 * SIGTERM shuts down: every connection is sent SERVE_QUIT, the accept is
 * cancelled, and serve_main returns once every actor has stopped.
 *
 * The acceptor counts live connections, from the accept to the
 * connection actor's destroy. At --max-conns it accepts and closes at
 * once: the client sees its connection end (a FIN or a reset) before any
 * reply, and nothing waits unanswered in the listen queue while those
 * already connected are served. When accept itself fails (EMFILE, ENFILE,
 * ENOBUFS) it retries every 100 ms; these failures, like the refusals at
 * the cap, are logged at most once every 10 s, with a count of those that
 * were not. (A burst can still run out of fds for a moment below the cap:
 * a multishot accept takes connections off the queue before the acceptor
 * has seen, and closed, those beyond it.)
 */
#ifndef URA_EXAMPLES_SERVE_H
#define URA_EXAMPLES_SERVE_H

#include <ura.h>

/* What a connection actor must handle: the first message it gets, and
 * the shutdown (which also goes to the actor setup names in *quit). */
#define SERVE_START URA_ATOM("start")
#define SERVE_QUIT URA_ATOM("quit")

/* The spawn argument of a connection actor. Its init calls
 * serve_conn_own() once it has taken the fd (and returns 0); from then
 * on the fd is the actor's to close, and its destroy must call
 * serve_conn_gone(), after the fd is closed. */
typedef struct {
	int fd;     /* the connection's socket, nonblocking */
	void *ctx;  /* serve_spec.ctx */
	int *owned; /* for serve_conn_own */
} serve_conn;

static inline void serve_conn_own(const serve_conn *a)
{
	*a->owned = 1;
}

/* The connection is over: one fewer toward --max-conns. Any thread. */
void serve_conn_gone(void);

typedef struct {
	const char *name;            /* starts every line the server prints */
	int port;                    /* without --port */
	const ura_class *conn_class; /* its init takes a serve_conn */
	void *ctx;                   /* the server's own, for the callbacks */
	/* The server's own options, after the common ones: a synopsis for
	 * the usage line, and lines that explain each with its default. */
	const char *usage;
	const char *help;
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

/* An option's value in milliseconds, 1 ms to a day, as nanoseconds: 0, or
 * -1 when it is not one. */
int serve_arg_ms(const char *val, uint64_t *ns);
/* A whole number in [min, max]: 0, or -1. */
int serve_arg_long(const char *val, long min, long max, long *out);

/* CLOCK_MONOTONIC, as the library's deadlines count. */
uint64_t serve_now_ns(void);

/*
 * A send with a deadline for all of it. ura_io_req.timeout_ns bounds one
 * attempt, and a short write is resumed with a fresh one, so a client
 * that reads a little now and then would keep a reply (and its copy)
 * alive for ever; a timer bounds the whole. When the deadline passes
 * first the send is cancelled: its completion comes with -ECANCELED.
 * There is one timer per serve_tx, not one per send: it is armed by a
 * send when none is pending, and when it fires while a later send is in
 * flight it is armed again for what that one has left, so a busy
 * keep-alive connection costs a clock read per send. The actor passes
 * its SERVE_LATE messages (no values) to serve_late, and calls
 * serve_sent when the send's completion arrives. One send at a time per
 * serve_tx.
 */
#define SERVE_LATE URA_ATOM("late")

typedef struct {
	ura_io op;          /* the send in flight; 0: none */
	uint64_t since;     /* when it started */
	uint64_t deadline;  /* its deadline, ns */
	int armed;          /* a SERVE_LATE is on its way */
} serve_tx;

/* ura_io_send's result; with a deadline it could not arm, the send is
 * cancelled at once (it completes with -ECANCELED). */
ura_io serve_send(ura_ctx *cx, serve_tx *tx, ura_atom tag, int fd, const void *buf,
		  size_t len, uint64_t deadline_ns);
void serve_sent(ura_ctx *cx, serve_tx *tx);
void serve_late(ura_ctx *cx, serve_tx *tx);

#endif
