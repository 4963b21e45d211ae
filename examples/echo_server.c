/* SPDX-License-Identifier: MIT */
/*
 * echo_server: every byte a client sends comes back to it.
 *
 * Actors only. An acceptor (serve.c, shared with http_server) keeps one
 * multishot accept armed on the listening socket and spawns an actor per
 * connection; a connection actor receives, sends back what it got,
 * receives again, and when the client is done closes its socket and stops
 * itself. No actor ever blocks a worker: each step is one operation on the
 * worker's ring whose completion comes back as a message.
 *
 *   echo_server [--port N] [--bind ADDR] [--workers N] [--max-conns N]
 *               [--idle-ms MS] [--send-ms MS]
 *
 * What a client can hold, and for how long:
 *   --max-conns N  connections at once (default: what RLIMIT_NOFILE
 *                  leaves, at most 16384); beyond it a new connection is
 *                  closed as soon as it is accepted.
 *   --idle-ms MS   a connection that sends nothing for MS is closed
 *                  (default 60000).
 *   --send-ms MS   an echo that cannot be written within MS, all of it,
 *                  closes the connection (default 30000): a client that
 *                  sends and never reads is dropped, not kept.
 * There is no memory budget to set: a connection holds at most one
 * receive and one echo (RECV_LEN each, 16 KiB), and never reads while its
 * echo waits, so memory is bounded by --max-conns times 32 KiB.
 *
 * --port 0 lets the kernel pick a free port; the first line on stdout
 * names the address listened on. SIGINT or SIGTERM shuts down cleanly:
 * the accept is cancelled, every connection actor stops (the runtime
 * cancels its I/O in flight, then its destroy closes the socket), and
 * main returns once nothing is left to run.
 */
#include <string.h>
#include <unistd.h>

#include <ura.h>

#include "serve.h"

#define A_RECV URA_ATOM("recv")
#define A_SENT URA_ATOM("sent")
#define A_CLOSED URA_ATOM("closed")

/* One receive's worth: the completion message carries the bytes, so this
 * is also the most a connection holds between a receive and its echo. */
#define RECV_LEN 16384

/* ---- a connection ---------------------------------------------------- */

typedef struct {
	uint64_t idle_ns, send_ns;
} config;

typedef struct {
	int fd; /* -1 once handed to a close */
	const config *cf;
	serve_tx tx;
} conn;

static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	const serve_conn *a = arg;
	conn *c = state;
	(void)cx;
	c->fd = a->fd;
	c->cf = a->ctx;
	serve_conn_own(a);
	return 0;
}

static void conn_close(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	int fd = c->fd;
	/* The fd belongs to the close from here on: should a quit stop us
	 * before it completes, destroy must not close a number the kernel
	 * may already have given to the next connection. */
	c->fd = -1;
	if (ura_io_close(cx, A_CLOSED, fd) < 0) {
		close(fd);
		ura_stop(cx);
	}
}

static void conn_recv(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	if (ura_io_recv(cx, A_RECV, c->fd, RECV_LEN, c->cf->idle_ns) < 0)
		conn_close(cx);
}

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	conn_recv(cx);
}

static void on_recv(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	size_t len;
	const void *data = ura_arg_bytes(m, 1, &len);
	/* 0 is the client's FIN; -ETIME the idle deadline; -ECONNRESET and
	 * friends end it too. */
	if (res <= 0) {
		conn_close(cx);
		return;
	}
	/* The send copies the bytes, and the next receive waits for its
	 * completion: one send in flight at a time keeps the echo in order
	 * (a resumed short write cannot interleave with a later one), and a
	 * client that does not read stops being read, and is closed when
	 * its echo misses the send deadline. */
	if (serve_send(cx, &c->tx, A_SENT, c->fd, data, len, c->cf->send_ns) < 0)
		conn_close(cx);
}

static void on_sent(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	serve_sent(cx, &c->tx);
	if (ura_arg_i64(m, 0) < 0) /* -ECANCELED: the send deadline */
		conn_close(cx);
	else
		conn_recv(cx);
}

static void on_late(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	(void)m;
	serve_late(cx, &c->tx);
}

static void on_closed(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

static void on_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

static void conn_destroy(void *state)
{
	conn *c = state;
	/* Runs after every operation of ours has completed or been
	 * cancelled, so no receive can still be using the fd. */
	if (c->fd >= 0)
		close(c->fd);
	serve_conn_gone();
}

URA_BEHAVIOR(echoing,
	URA_ON(SERVE_START, "", on_start),
	URA_ON(A_RECV, "ib", on_recv),
	URA_ON(A_SENT, "i", on_sent),
	URA_ON(SERVE_LATE, "", on_late),
	URA_ON(A_CLOSED, "i", on_closed),
	URA_ON(SERVE_QUIT, "", on_quit));

static const ura_class conn_class = {
	.name = "echo_conn",
	.state_size = sizeof(conn),
	.initial = &echoing,
	.init = conn_init,
	.destroy = conn_destroy,
};

/* ---- main ------------------------------------------------------------ */

static int option(void *ctx, const char *opt, const char *val)
{
	config *cf = ctx;
	if (!strcmp(opt, "--idle-ms"))
		return serve_arg_ms(val, &cf->idle_ns);
	if (!strcmp(opt, "--send-ms"))
		return serve_arg_ms(val, &cf->send_ns);
	return -1;
}

int main(int argc, char **argv)
{
	config cf = { .idle_ns = 60000 * URA_MSEC, .send_ns = 30000 * URA_MSEC };
	return serve_main(argc, argv, &(serve_spec){
		.name = "echo_server",
		.port = 7000,
		.conn_class = &conn_class,
		.ctx = &cf,
		.usage = "[--idle-ms MS] [--send-ms MS]",
		.help = "  --idle-ms MS     close a connection silent for MS (default 60000)\n"
			"  --send-ms MS     close a connection whose echo is not all written\n"
			"                   within MS (default 30000)\n",
		.option = option,
	});
}
