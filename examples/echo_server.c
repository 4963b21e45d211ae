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
 *   echo_server [--port N] [--bind ADDR] [--workers N]
 *
 * --port 0 lets the kernel pick a free port; the first line on stdout
 * names the address listened on. SIGINT or SIGTERM shuts down cleanly:
 * the accept is cancelled, every connection actor stops (the runtime
 * cancels its I/O in flight, then its destroy closes the socket), and
 * main returns once nothing is left to run.
 */
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
	int fd; /* -1 once handed to a close */
} conn;

static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	conn *c = state;
	(void)cx;
	c->fd = ((const serve_conn *)arg)->fd;
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
	if (ura_io_recv(cx, A_RECV, c->fd, RECV_LEN, 0) < 0)
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
	/* 0 is the client's FIN; -ECONNRESET and friends end it too. */
	if (res <= 0) {
		conn_close(cx);
		return;
	}
	/* The send copies the bytes, and the next receive waits for its
	 * completion: one send in flight at a time keeps the echo in order
	 * (a resumed short write cannot interleave with a later one), and a
	 * client that does not read stops being read. */
	if (ura_io_send(cx, A_SENT, c->fd, data, len) < 0)
		conn_close(cx);
}

static void on_sent(ura_ctx *cx, const ura_msg *m)
{
	if (ura_arg_i64(m, 0) < 0)
		conn_close(cx);
	else
		conn_recv(cx);
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
}

URA_BEHAVIOR(echoing,
	URA_ON(SERVE_START, "", on_start),
	URA_ON(A_RECV, "ib", on_recv),
	URA_ON(A_SENT, "i", on_sent),
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

int main(int argc, char **argv)
{
	return serve_main(argc, argv, &(serve_spec){
		.name = "echo_server",
		.port = 7000,
		.conn_class = &conn_class,
	});
}
