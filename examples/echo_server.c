/* SPDX-License-Identifier: MIT */
/*
 * echo_server: every byte a client sends comes back to it.
 *
 * Actors only. An acceptor keeps one multishot accept armed on the
 * listening socket and spawns an actor per connection; a connection actor
 * receives, sends back what it got, receives again, and when the client is
 * done closes its socket and stops itself. No actor ever blocks a worker:
 * each step is one operation on the worker's ring whose completion comes
 * back as a message.
 *
 *   echo_server [--port N] [--bind ADDR] [--workers N]
 *
 * --port 0 lets the kernel pick a free port; the first line on stdout
 * names the address listened on. SIGINT or SIGTERM shuts down cleanly:
 * the accept is cancelled, every connection actor stops (the runtime
 * cancels its I/O in flight, then its destroy closes the socket), and
 * main returns once nothing is left to run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ura.h>

#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_REARM URA_ATOM("rearm")
#define A_RECV URA_ATOM("recv")
#define A_SENT URA_ATOM("sent")
#define A_CLOSED URA_ATOM("closed")
#define A_QUIT URA_ATOM("quit")

/* One receive's worth: the completion message carries the bytes, so this
 * is also the most a connection holds between a receive and its echo. */
#define RECV_LEN 16384

/* ---- a connection ---------------------------------------------------- */

typedef struct {
	int fd; /* -1 once handed to a close */
} conn;

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
	URA_ON(A_START, "", on_start),
	URA_ON(A_RECV, "ib", on_recv),
	URA_ON(A_SENT, "i", on_sent),
	URA_ON(A_CLOSED, "i", on_closed),
	URA_ON(A_QUIT, "", on_quit));

static const ura_class conn_class = {
	.name = "echo_conn",
	.state_size = sizeof(conn),
	.initial = &echoing,
	.destroy = conn_destroy,
};

/* ---- the acceptor ---------------------------------------------------- */

typedef struct {
	int lfd;
	ura_group *conns; /* every live connection, for the quit */
	ura_io op;        /* the armed accept; 0 when none */
	int stopping;
} acceptor;

static void arm(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	a->op = ura_io_accept(cx, A_ACCEPTED, a->lfd, URA_IO_MULTISHOT | SOCK_NONBLOCK);
	if (a->op < 0) {
		fprintf(stderr, "echo_server: accept: %s\n", ura_strerror((int)a->op));
		a->op = 0;
		ura_send_after(cx, ura_self(cx), 100 * URA_MSEC, A_REARM);
	}
}

static void acc_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	arm(cx);
}

static void acc_rearm(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	(void)m;
	if (!a->stopping && !a->op)
		arm(cx);
}

static void spawn_conn(ura_ctx *cx, int fd)
{
	acceptor *a = ura_state(cx);
	ura_ref r = URA_NOREF;
	/* Echoes are small writes answered at once: don't let Nagle hold
	 * one back waiting for the client's delayed ACK. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	int rc = ura_spawn_ex(cx, &conn_class, &(conn){ .fd = fd },
			      &(ura_spawn_opts){ .group = a->conns }, &r);
	if (rc < 0 || (rc = ura_send(cx, r, A_START)) < 0) {
		fprintf(stderr, "echo_server: connection actor: %s\n", ura_strerror(rc));
		if (ura_ref_null(r))
			close(fd); /* else its destroy closes it */
	}
}

static void acc_accepted(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	if (res >= 0) {
		if (a->stopping)
			close((int)res); /* accepted as the cancel raced it */
		else
			spawn_conn(cx, (int)res);
	} else if (res != -ECANCELED) {
		fprintf(stderr, "echo_server: accept: %s\n", ura_strerror((int)res));
	}
	if (ura_io_more(m))
		return;
	/* This accept is over: cancelled for the shutdown, or ended by the
	 * kernel (an error such as EMFILE ends a multishot accept). */
	a->op = 0;
	if (a->stopping)
		ura_stop(cx);
	else if (res < 0) /* out of fds: let some connections close first */
		ura_send_after(cx, ura_self(cx), 100 * URA_MSEC, A_REARM);
	else
		arm(cx);
}

static void acc_signal(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	if (a->stopping)
		return;
	a->stopping = 1;
	fprintf(stderr, "echo_server: signal %lld, shutting down\n",
		(long long)ura_arg_i64(m, 0));
	ura_send_group(cx, a->conns, A_QUIT);
	/* Wait for the accept's last completion before stopping, so that a
	 * connection accepted in the meantime is closed, not leaked. */
	if (!a->op || ura_io_cancel(cx, a->op) < 0)
		ura_stop(cx);
}

static void acc_destroy(void *state)
{
	acceptor *a = state;
	close(a->lfd);
}

URA_BEHAVIOR(accepting,
	URA_ON(A_START, "", acc_start),
	URA_ON(A_REARM, "", acc_rearm),
	URA_ON(A_ACCEPTED, "i", acc_accepted),
	URA_ON(URA_SIGNAL, "i", acc_signal));

static const ura_class acceptor_class = {
	.name = "echo_acceptor",
	.state_size = sizeof(acceptor),
	.initial = &accepting,
	.destroy = acc_destroy,
};

/* ---- main ------------------------------------------------------------ */

static int listen_on(const char *addr, int port, int *bound)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t sl = sizeof sa;
	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 4096) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*bound = ntohs(sa.sin_port);
	return fd;
}

/* One fd per connection: take all the hard limit allows. */
static void raise_nofile(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--port N] [--bind ADDR] [--workers N]\n", argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	int port = 7000;
	unsigned workers = 0;
	const char *addr = "0.0.0.0";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--bind") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = (unsigned)atoi(argv[++i]);
		else
			usage(argv[0]);
	}
	if (port < 0 || port > 65535)
		usage(argv[0]);
	raise_nofile();

	int bound = 0, lfd = listen_on(addr, port, &bound);
	if (lfd < 0) {
		fprintf(stderr, "echo_server: listen on %s:%d: %s\n", addr, port, ura_strerror(lfd));
		return 1;
	}
	ura_system *sys;
	int rc = ura_system_new(&sys, &(ura_config){ .workers = workers });
	if (rc < 0) {
		fprintf(stderr, "echo_server: %s\n", ura_strerror(rc));
		close(lfd);
		return 1;
	}
	ura_group *conns;
	ura_ref acc = URA_NOREF;
	if ((rc = ura_group_new(sys, &conns)) < 0 ||
	    (rc = ura_spawn(sys, &acceptor_class, &(acceptor){ .lfd = lfd, .conns = conns },
			    &acc)) < 0 ||
	    (rc = ura_signal_subscribe(sys, SIGINT, acc)) < 0 ||
	    (rc = ura_signal_subscribe(sys, SIGTERM, acc)) < 0) {
		fprintf(stderr, "echo_server: %s\n", ura_strerror(rc));
		if (ura_ref_null(acc))
			close(lfd);
		ura_system_destroy(sys);
		return 1;
	}
	ura_stats st;
	ura_system_stats(sys, &st);
	printf("echo_server: listening on %s:%d, %u workers, backend %s\n", addr, bound,
	       st.workers, st.backend);
	fflush(stdout);

	ura_send(sys, acc, A_START);
	/* An armed accept keeps the system busy: this returns after the
	 * shutdown, once every actor has stopped. */
	ura_system_await(sys);
	ura_signal_unsubscribe(sys, SIGINT);
	ura_signal_unsubscribe(sys, SIGTERM);
	rc = ura_system_destroy(sys);
	if (rc < 0)
		fprintf(stderr, "echo_server: destroy: %s\n", ura_strerror(rc));
	return rc < 0;
}
