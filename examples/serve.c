/* SPDX-License-Identifier: MIT */
/*
 * serve: the acceptor and main() of echo_server and http_server (serve.h).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve.h"

#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_REARM URA_ATOM("rearm")

/* After a failed accept (out of fds): let some connections close first. */
#define REARM_NS (100 * URA_MSEC)
/* A failure that lasts is one line per this, not one per retry. */
#define LOG_EVERY_NS (10 * URA_SEC)
/* Left to the library and to what the server opens besides connections,
 * when --max-conns comes from the fd limit. */
#define FD_SPARE 32
#define MAX_CONNS_DEFAULT 16384
/* With I/O in flight each look of an idle worker's spin is an
 * io_uring_enter that runs the network's task work, so the spin's length
 * only decides how soon a worker with nothing to do sleeps and leaves
 * CPUs the server may share with its clients or other programs. 5 us
 * instead of the library's 50 cut the p99 latency under wrk on the same
 * 2 CPUs by about a tenth, at the same requests/s (bench/README.md, HTTP:
 * the example servers spin 5 us). */
#define SPIN_US_DEFAULT 5

uint64_t serve_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * URA_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- rate-limited logging --------------------------------------------- */

typedef struct {
	uint64_t last; /* when the last line went out; 0: never */
	unsigned long quiet; /* events since then that were not logged */
} loglimit;

/* Whether this event gets a line; if so, *quiet is how many before it did
 * not (since the previous line). */
static int log_now(loglimit *l, unsigned long *quiet)
{
	uint64_t now = serve_now_ns();
	if (l->last && now - l->last < LOG_EVERY_NS) {
		l->quiet++;
		return 0;
	}
	*quiet = l->quiet;
	l->quiet = 0;
	l->last = now;
	return 1;
}

/* The events have stopped: returns how many went unlogged since the last
 * line, for the line that says so, and counts afresh from here. */
static unsigned long log_flush(loglimit *l)
{
	unsigned long q = l->quiet;
	l->quiet = 0;
	return q;
}

/* ---- the acceptor ---------------------------------------------------- */

/* Connections from their accept to their actor's destroy, which may run
 * on any worker (or at the system's destroy, on main's thread). */
static atomic_long live_conns;

void serve_conn_gone(void)
{
	/* relaxed: a count; no memory is handed over through it. */
	atomic_fetch_sub_explicit(&live_conns, 1, memory_order_relaxed);
}

typedef struct {
	const serve_spec *spec;
	int lfd;
	long max_conns;
	ura_group *conns; /* every live connection, for the quit */
	ura_ref quit;     /* quit with them (serve_spec.setup) */
	ura_ref metrics;  /* the exporter (--metrics-port), stopped with us */
	ura_io op;        /* the armed accept; 0 when none */
	int stopping;
	int last_err;     /* of the accept failures being counted */
	loglimit acc_log, cap_log;
} acceptor;

static void accept_failed(acceptor *a, int err)
{
	unsigned long quiet;
	if (log_now(&a->acc_log, &quiet)) {
		if (quiet)
			fprintf(stderr, "%s: accept: %s (and %lu more failures in the last %llu s)\n",
				a->spec->name, ura_strerror(err), quiet,
				(unsigned long long)(LOG_EVERY_NS / URA_SEC));
		else
			fprintf(stderr, "%s: accept: %s (retrying every %llu ms; repeats are counted, "
				"logged at most every %llu s)\n", a->spec->name, ura_strerror(err),
				(unsigned long long)(REARM_NS / URA_MSEC),
				(unsigned long long)(LOG_EVERY_NS / URA_SEC));
	}
	a->last_err = err;
}

static void accept_works(acceptor *a)
{
	if (!a->acc_log.quiet)
		return;
	fprintf(stderr, "%s: accept works again, after %lu more failures (%s)\n", a->spec->name,
		log_flush(&a->acc_log), ura_strerror(a->last_err));
}

static void shut_down(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	if (a->stopping)
		return;
	a->stopping = 1;
	ura_send_group(cx, a->conns, SERVE_QUIT);
	if (!ura_ref_null(a->quit))
		ura_send(cx, a->quit, SERVE_QUIT);
	/* Its accept would keep the system from ever being done. */
	if (!ura_ref_null(a->metrics))
		ura_kill(cx, a->metrics, URA_KILL);
	/* Wait for the accept's last completion before stopping, so that a
	 * connection accepted in the meantime is closed, not leaked. */
	if (!a->op || ura_io_cancel(cx, a->op) < 0)
		ura_stop(cx);
}

static void retry_later(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	ura_timer t = ura_send_after(cx, ura_self(cx), REARM_NS, A_REARM);
	if (t < 0) {
		/* Nothing would ever accept again: better an exit that says
		 * so than a server that looks alive. */
		fprintf(stderr, "%s: cannot retry the accept (%s): shutting down\n", a->spec->name,
			ura_strerror((int)t));
		shut_down(cx);
	}
}

static void arm(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	a->op = ura_io_accept(cx, A_ACCEPTED, a->lfd, URA_IO_MULTISHOT | SOCK_NONBLOCK);
	if (a->op < 0) {
		accept_failed(a, (int)a->op);
		a->op = 0;
		retry_later(cx);
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
	unsigned long quiet;
	/* relaxed: only the acceptor adds, and a connection that ends while
	 * we look is counted as live for one more accept at most. */
	long live = atomic_load_explicit(&live_conns, memory_order_relaxed);
	if (live >= a->max_conns) {
		/* Closed before anything is read: the client learns at once,
		 * instead of waiting in the listen queue, and the connections
		 * we have keep their share. */
		close(fd);
		if (!log_now(&a->cap_log, &quiet))
			return;
		if (quiet)
			fprintf(stderr, "%s: %ld connections, the most --max-conns allows: closed "
				"this one and %lu more since the last line\n", a->spec->name, live,
				quiet);
		else
			fprintf(stderr, "%s: %ld connections, the most --max-conns allows: closing "
				"new ones (counted, logged at most every %llu s)\n", a->spec->name,
				live, (unsigned long long)(LOG_EVERY_NS / URA_SEC));
		return;
	}
	if (a->cap_log.quiet)
		fprintf(stderr, "%s: below --max-conns again, after closing %lu more\n",
			a->spec->name, log_flush(&a->cap_log));
	/* An echo or a reply is one small send answered at once: let it leave
	 * rather than wait for the client's delayed ACK of the previous one
	 * (as nginx's tcp_nodelay). */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	atomic_fetch_add_explicit(&live_conns, 1, memory_order_relaxed);
	int owned = 0;
	serve_conn arg = { .fd = fd, .ctx = a->spec->ctx, .owned = &owned };
	int rc = ura_spawn_ex(cx, a->spec->conn_class, &arg,
			      &(ura_spawn_opts){ .group = a->conns }, &r);
	if (rc < 0 || (rc = ura_send(cx, r, SERVE_START)) < 0) {
		fprintf(stderr, "%s: connection actor: %s\n", a->spec->name, ura_strerror(rc));
		/* Once its init took the fd, the actor's destroy closes it
		 * and counts it gone (a spawn can fail after init). */
		if (!owned) {
			close(fd);
			serve_conn_gone();
		}
	}
}

static void acc_accepted(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	if (res >= 0) {
		accept_works(a);
		if (a->stopping)
			close((int)res); /* accepted as the cancel raced it */
		else
			spawn_conn(cx, (int)res);
	} else if (res != -ECANCELED) {
		accept_failed(a, (int)res);
	}
	if (ura_io_more(m))
		return;
	/* This accept is over: cancelled for the shutdown, or ended by the
	 * kernel (an error such as EMFILE ends a multishot accept). */
	a->op = 0;
	if (a->stopping)
		ura_stop(cx);
	else if (res < 0)
		retry_later(cx);
	else
		arm(cx);
}

static void acc_signal(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	if (a->stopping)
		return;
	fprintf(stderr, "%s: signal %lld, shutting down\n", a->spec->name,
		(long long)ura_arg_i64(m, 0));
	shut_down(cx);
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

/* ---- sends with a deadline ------------------------------------------ */

/* Arms tx's timer for delay, or cancels its send: none goes without. */
static void late_arm(ura_ctx *cx, serve_tx *tx, uint64_t delay)
{
	if (ura_send_after(cx, ura_self(cx), delay, SERVE_LATE) > 0)
		tx->armed = 1;
	else
		ura_io_cancel(cx, tx->op);
}

ura_io serve_send(ura_ctx *cx, serve_tx *tx, ura_atom tag, int fd, const void *buf,
		  size_t len, uint64_t deadline_ns)
{
	ura_io op = ura_io_send(cx, tag, fd, buf, len);
	if (op < 0)
		return op;
	tx->op = op;
	tx->since = serve_now_ns();
	tx->deadline = deadline_ns;
	/* A pending timer fires no later than this send's deadline: it was
	 * armed for at most deadline_ns, before now. */
	if (!tx->armed)
		late_arm(cx, tx, deadline_ns);
	return op;
}

void serve_sent(ura_ctx *cx, serve_tx *tx)
{
	(void)cx;
	tx->op = 0; /* the timer, if pending, finds nothing to do */
}

void serve_late(ura_ctx *cx, serve_tx *tx)
{
	tx->armed = 0;
	if (!tx->op)
		return;
	uint64_t spent = serve_now_ns() - tx->since;
	if (spent < tx->deadline) {
		late_arm(cx, tx, tx->deadline - spent); /* a later send's turn */
		return;
	}
	/* -ENOENT: it has just completed, and its completion is on the way
	 * (in time, or nearly: either way it is served). */
	ura_io_cancel(cx, tx->op);
}

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

/* The fds open now, the listener and the library's included. */
static long fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = -1; /* the directory's own fd */
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n - 2; /* . and .. */
}

/* Every connection takes an fd: past what the limit leaves, accepts fail
 * with EMFILE and new clients wait unanswered in the listen queue, so the
 * cap stays below it. */
static long default_max_conns(void)
{
	struct rlimit rl;
	long open = fds_open();
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return MAX_CONNS_DEFAULT;
	if (open < 0)
		open = 64; /* no /proc: a guess at the library's share */
	long left = (long)rl.rlim_cur - open - FD_SPARE;
	if (left > MAX_CONNS_DEFAULT)
		return MAX_CONNS_DEFAULT;
	return left > 1 ? left : 1;
}

int serve_arg_long(const char *val, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(val, &end, 10);
	if (errno || end == val || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int serve_arg_ms(const char *val, uint64_t *ns)
{
	long ms;
	if (serve_arg_long(val, 1, 24L * 3600 * 1000, &ms) < 0)
		return -1;
	*ns = (uint64_t)ms * URA_MSEC;
	return 0;
}

static void usage(const char *argv0, const serve_spec *spec, int status)
{
	FILE *f = status ? stderr : stdout;
	fprintf(f, "usage: %s [--port N] [--bind ADDR] [--workers N] [--max-conns N]%s%s\n"
		"  --port N         listen on port N (default %d; 0: any free port)\n"
		"  --bind ADDR      the IPv4 address to listen on (default 0.0.0.0)\n"
		"  --workers N      worker threads (default: one per CPU)\n"
		"  --max-conns N    connections at once; beyond, new ones are closed as soon\n"
		"                   as accepted (default: what RLIMIT_NOFILE leaves, at most %d)\n"
		"  --spin-us N      how long an idle worker spins before it sleeps, in\n"
		"                   microseconds (default %d; URA_SPIN_US overrides it)\n"
		"  --metrics-port N serve the runtime's metrics at http://ADDR:N/metrics\n"
		"                   (Prometheus; the top actors at /actors; see examples/ura_top)\n"
		"%s", argv0, spec->usage ? " " : "", spec->usage ? spec->usage : "", spec->port,
		MAX_CONNS_DEFAULT, SPIN_US_DEFAULT, spec->help ? spec->help : "");
	exit(status);
}

int serve_main(int argc, char **argv, const serve_spec *spec)
{
	const char *name = spec->name;
	long port = spec->port, workers = 0, max_conns = 0, metrics_port = -1;
	long spin_us = SPIN_US_DEFAULT;
	const char *addr = "0.0.0.0";
	/* Every option takes a value, so the loop steps in pairs. */
	for (int i = 1; i < argc; i += 2) {
		const char *o = argv[i], *v = argv[i + 1]; /* argv[argc] is NULL */
		int ok;
		if (!strcmp(o, "--help") || !strcmp(o, "-h"))
			usage(argv[0], spec, 0);
		if (!v)
			usage(argv[0], spec, 2);
		if (!strcmp(o, "--port"))
			ok = serve_arg_long(v, 0, 65535, &port) == 0;
		else if (!strcmp(o, "--bind"))
			ok = (addr = v) != NULL;
		else if (!strcmp(o, "--workers"))
			ok = serve_arg_long(v, 0, 4096, &workers) == 0;
		else if (!strcmp(o, "--max-conns"))
			ok = serve_arg_long(v, 1, 1L << 30, &max_conns) == 0;
		else if (!strcmp(o, "--spin-us"))
			ok = serve_arg_long(v, 1, 1000000, &spin_us) == 0;
		else if (!strcmp(o, "--metrics-port"))
			ok = serve_arg_long(v, 0, 65535, &metrics_port) == 0;
		else
			ok = spec->option && spec->option(spec->ctx, o, v) == 0;
		if (!ok)
			usage(argv[0], spec, 2);
	}
	raise_nofile();

	int bound = 0, lfd = listen_on(addr, (int)port, &bound);
	if (lfd < 0) {
		fprintf(stderr, "%s: listen on %s:%ld: %s\n", name, addr, port, ura_strerror(lfd));
		return 1;
	}
	ura_system *sys;
	int rc = ura_system_new(&sys, &(ura_config){ .workers = (unsigned)workers,
						      .spin_ns = (uint64_t)spin_us * URA_USEC });
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", name, ura_strerror(rc));
		close(lfd);
		return 1;
	}
	/* Counted now that the listener and the library's fds are open. */
	if (!max_conns)
		max_conns = default_max_conns();
	ura_group *conns;
	ura_ref quit = URA_NOREF, acc = URA_NOREF, metrics = URA_NOREF;
	int mbound = 0;
	if ((rc = ura_group_new(sys, &conns)) < 0 ||
	    (metrics_port >= 0 &&
	     (rc = ura_metrics_serve(sys, addr, (int)metrics_port, &mbound, &metrics)) < 0) ||
	    (spec->setup && (rc = spec->setup(sys, spec->ctx, &quit)) < 0) ||
	    (rc = ura_spawn(sys, &acceptor_class,
			    &(acceptor){ .spec = spec, .lfd = lfd, .max_conns = max_conns,
					  .conns = conns, .quit = quit, .metrics = metrics },
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
	printf("%s: listening on %s:%d, %u workers, at most %ld connections, backend %s\n",
	       name, addr, bound, st.workers, max_conns, st.backend);
	if (metrics_port >= 0)
		printf("%s: metrics at http://%s:%d/metrics\n", name, addr, mbound);
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
