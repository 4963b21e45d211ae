/* SPDX-License-Identifier: MIT */
/*
 * echo_blocking: examples/echo_server written as sequential code. Each
 * connection is a context-switching actor whose body reads, writes back,
 * and reads again with calls that look blocking (ura_call_recv,
 * ura_call_send) but are operations on the worker's ring: while one
 * connection waits for its socket, the worker runs the others. Same
 * acceptor (serve.c), same options and limits as echo_server, same
 * tests (tests/echo_server.c runs against both).
 *
 *   echo_blocking [--port N] [--bind ADDR] [--workers N] [--max-conns N]
 *                 [--idle-ms MS] [--send-ms MS]
 *
 * The shutdown (SERVE_QUIT) is a message, and messages wait in the
 * mailbox while the body is in an I/O call: so the body receives in
 * ticks of TICK_MS and polls for the quit between them (a receive with
 * timeout 0). A connection's memory is its stack: the 16 KiB buffer and
 * the frames, what it touched of its 64 KiB.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <ura.h>

#include "serve.h"

#define RECV_LEN 16384
#define TICK_MS 100

typedef struct {
	uint64_t idle_ns, send_ns;
} config;

typedef struct {
	int fd; /* -1 once closed */
	const config *cf;
	int quit;
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

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}

static void on_quit(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	(void)m;
	c->quit = 1;
}

URA_BEHAVIOR(starting, URA_ON(SERVE_START, "", on_start), URA_ON(SERVE_QUIT, "", on_quit));
URA_BEHAVIOR(quitting, URA_ON(SERVE_QUIT, "", on_quit));

static void conn_body(ura_ctx *cx, void *state)
{
	conn *c = state;
	char buf[RECV_LEN];
	uint64_t idle = 0;
	ura_receive(cx, &starting, URA_FOREVER);
	while (!c->quit) {
		int64_t n = ura_call_recv(cx, c->fd, buf, sizeof buf, TICK_MS * URA_MSEC);
		if (n == -ETIME) { /* a tick without bytes */
			idle += TICK_MS * URA_MSEC;
			if (idle >= c->cf->idle_ns)
				break;
			ura_receive(cx, &quitting, 0);
			continue;
		}
		if (n <= 0) /* the client's FIN, or an error */
			break;
		idle = 0;
		/* All of it, within the send deadline: a client that sends
		 * and never reads is dropped. */
		ura_io_req w = { .op = URA_IO_SEND, .fd = c->fd, .buf = buf, .len = (size_t)n,
				 .timeout_ns = c->cf->send_ns };
		if (ura_io_call(cx, &w, NULL, 0) < 0)
			break;
		ura_receive(cx, &quitting, 0);
	}
	int fd = c->fd;
	c->fd = -1;
	if (ura_call_close(cx, fd) < 0)
		close(fd);
}

static void conn_destroy(void *state)
{
	conn *c = state;
	/* Stopped while waiting (the system went down): still ours. */
	if (c->fd >= 0)
		close(c->fd);
	serve_conn_gone();
}

static const ura_class conn_class = {
	.name = "echo_blocking_conn",
	.state_size = sizeof(conn),
	.init = conn_init,
	.destroy = conn_destroy,
	.body = conn_body,
	.stack_size = 64 << 10,
};

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
		.name = "echo_blocking",
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
