/* SPDX-License-Identifier: MIT */
/*
 * serve: the acceptor and main() of echo_server and http_server (serve.h).
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

#include "serve.h"

#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_REARM URA_ATOM("rearm")

/* ---- the acceptor ---------------------------------------------------- */

typedef struct {
	const serve_spec *spec;
	int lfd;
	ura_group *conns; /* every live connection, for the quit */
	ura_ref quit;     /* quit with them (serve_spec.setup) */
	ura_io op;        /* the armed accept; 0 when none */
	int stopping;
} acceptor;

static void arm(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	a->op = ura_io_accept(cx, A_ACCEPTED, a->lfd, URA_IO_MULTISHOT | SOCK_NONBLOCK);
	if (a->op < 0) {
		fprintf(stderr, "%s: accept: %s\n", a->spec->name, ura_strerror((int)a->op));
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
	/* An echo or a reply is one small send answered at once: let it leave
	 * rather than wait for the client's delayed ACK of the previous one
	 * (as nginx's tcp_nodelay). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	serve_conn arg = { .fd = fd, .ctx = a->spec->ctx };
	int rc = ura_spawn_ex(cx, a->spec->conn_class, &arg,
			      &(ura_spawn_opts){ .group = a->conns }, &r);
	if (rc < 0 || (rc = ura_send(cx, r, SERVE_START)) < 0) {
		fprintf(stderr, "%s: connection actor: %s\n", a->spec->name, ura_strerror(rc));
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
		fprintf(stderr, "%s: accept: %s\n", a->spec->name, ura_strerror((int)res));
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
	fprintf(stderr, "%s: signal %lld, shutting down\n", a->spec->name,
		(long long)ura_arg_i64(m, 0));
	ura_send_group(cx, a->conns, SERVE_QUIT);
	if (!ura_ref_null(a->quit))
		ura_send(cx, a->quit, SERVE_QUIT);
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
	.name = "acceptor",
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

static void usage(const char *argv0, const serve_spec *spec)
{
	fprintf(stderr, "usage: %s [--port N] [--bind ADDR] [--workers N]%s%s\n", argv0,
		spec->usage ? " " : "", spec->usage ? spec->usage : "");
	exit(2);
}

int serve_main(int argc, char **argv, const serve_spec *spec)
{
	const char *name = spec->name;
	int port = spec->port;
	unsigned workers = 0;
	const char *addr = "0.0.0.0";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--bind") && i + 1 < argc)
			addr = argv[++i];
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = (unsigned)atoi(argv[++i]);
		else if (spec->option && i + 1 < argc &&
			 spec->option(spec->ctx, argv[i], argv[i + 1]) == 0)
			i++;
		else
			usage(argv[0], spec);
	}
	if (port < 0 || port > 65535)
		usage(argv[0], spec);
	raise_nofile();

	int bound = 0, lfd = listen_on(addr, port, &bound);
	if (lfd < 0) {
		fprintf(stderr, "%s: listen on %s:%d: %s\n", name, addr, port, ura_strerror(lfd));
		return 1;
	}
	ura_system *sys;
	int rc = ura_system_new(&sys, &(ura_config){ .workers = workers });
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", name, ura_strerror(rc));
		close(lfd);
		return 1;
	}
	ura_group *conns;
	ura_ref quit = URA_NOREF, acc = URA_NOREF;
	if ((rc = ura_group_new(sys, &conns)) < 0 ||
	    (spec->setup && (rc = spec->setup(sys, spec->ctx, &quit)) < 0) ||
	    (rc = ura_spawn(sys, &acceptor_class,
			    &(acceptor){ .spec = spec, .lfd = lfd, .conns = conns, .quit = quit },
			    &acc)) < 0 ||
	    (rc = ura_signal_subscribe(sys, SIGINT, acc)) < 0 ||
	    (rc = ura_signal_subscribe(sys, SIGTERM, acc)) < 0) {
		fprintf(stderr, "%s: %s\n", name, ura_strerror(rc));
		if (ura_ref_null(acc))
			close(lfd);
		ura_system_destroy(sys);
		return 1;
	}
	ura_stats st;
	ura_system_stats(sys, &st);
	printf("%s: listening on %s:%d, %u workers, backend %s\n", name, addr, bound,
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
		fprintf(stderr, "%s: destroy: %s\n", name, ura_strerror(rc));
	return rc < 0;
}
