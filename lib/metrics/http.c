/* SPDX-License-Identifier: MIT */
/*
 * The exporter: GET /metrics over HTTP/1.1, answered by actors of the
 * system it describes, through actor I/O on their worker's ring (no
 * thread of its own). An acceptor actor holds a multishot accept; each
 * connection is an actor that reads one request head, renders, sends the
 * answer and closes.
 *
 * Hardened for a port that may face strangers: the head is at most
 * HEAD_MAX bytes and must arrive within REQ_NS (a slow or silent client
 * is dropped, not waited for), the answer must leave within REQ_NS, at
 * most MAX_CONNS connections are open at once (more are closed at their
 * accept), one request per connection, and anything but GET or HEAD of
 * /metrics is answered 4xx. Nothing of the request is echoed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/core.h"
#include "metrics/metrics.h"

#define HEAD_MAX 8192
#define REQ_NS (5 * URA_SEC)
#define MAX_CONNS 64
#define RENDER_GUESS (64 * 1024)
#define TOP_MAX 100

#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_RECV URA_ATOM("recv")
#define A_SENT URA_ATOM("sent")

/* What the acceptor and its connections share: freed by the last. */
struct srv {
	_Atomic unsigned refs;  /* acq_rel: the last drop sees every write */
	_Atomic unsigned conns; /* relaxed: a cap, not a hand-over */
};

static void srv_drop(struct srv *s)
{
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		free(s);
}

/* ---- the request head ----------------------------------------------- */

/* The query of /actors: by=..., n=...; 0 or 400. */
static int actors_query(const char *q, size_t ql, struct ura__http_req *rq)
{
	while (ql) {
		const char *amp = memchr(q, '&', ql);
		size_t l = amp ? (size_t)(amp - q) : ql;
		if (l == 10 && !memcmp(q, "by=mailbox", 10))
			rq->by = URA_TOP_MAILBOX;
		else if (l == 15 && !memcmp(q, "by=handler_time", 15))
			rq->by = URA_TOP_HANDLER_TIME;
		else if (l == 10 && !memcmp(q, "by=handled", 10))
			rq->by = URA_TOP_HANDLED;
		else if (l >= 3 && l <= 5 && !memcmp(q, "n=", 2)) {
			unsigned v = 0;
			for (size_t i = 2; i < l; i++) {
				if (q[i] < '0' || q[i] > '9')
					return 400;
				v = v * 10 + (unsigned)(q[i] - '0');
			}
			if (v < 1 || v > TOP_MAX)
				return 400;
			rq->n = v;
		} else {
			return 400;
		}
		if (!amp)
			break;
		ql -= l + 1;
		q = amp + 1;
	}
	return 0;
}

int ura__http_head(const char *h, size_t len, struct ura__http_req *rq)
{
	memset(rq, 0, sizeof *rq);
	rq->by = URA_TOP_MAILBOX;
	rq->n = 10;
	const char *end = memchr(h, '\n', len);
	if (!end)
		return 400;
	size_t ll = (size_t)(end - h);
	if (ll && h[ll - 1] == '\r')
		ll--;
	const char *sp1 = memchr(h, ' ', ll);
	if (!sp1)
		return 400;
	size_t ml = (size_t)(sp1 - h);
	const char *t = sp1 + 1;
	const char *sp2 = memchr(t, ' ', ll - ml - 1);
	if (!sp2)
		return 400;
	size_t tl = (size_t)(sp2 - t);
	const char *ver = sp2 + 1;
	size_t vl = ll - ml - 1 - tl - 1;
	if (vl != 8 || memcmp(ver, "HTTP/1.", 7) != 0 || (ver[7] != '0' && ver[7] != '1'))
		return 400;
	rq->head_only = ml == 4 && memcmp(h, "HEAD", 4) == 0;
	if (!rq->head_only && !(ml == 3 && memcmp(h, "GET", 3) == 0))
		return 405;
	const char *qm = memchr(t, '?', tl);
	size_t pl = qm ? (size_t)(qm - t) : tl;
	if (pl == 8 && !memcmp(t, "/metrics", 8)) {
		/* a query is ignored, as Prometheus's own exporters do */
	} else if (pl == 7 && !memcmp(t, "/actors", 7)) {
		rq->actors = 1;
		if (qm && actors_query(qm + 1, tl - pl - 1, rq))
			return 400;
	} else {
		return 404;
	}
	/* Header lines: only Accept matters. */
	const char *p = end + 1, *stop = h + len;
	while (p < stop) {
		const char *e = memchr(p, '\n', (size_t)(stop - p));
		size_t l = e ? (size_t)(e - p) : (size_t)(stop - p);
		if (l >= 7 && strncasecmp(p, "accept:", 7) == 0) {
			static const char want[] = "application/openmetrics-text";
			for (size_t i = 7; i + sizeof want - 1 <= l; i++)
				if (strncasecmp(p + i, want, sizeof want - 1) == 0)
					rq->om = 1;
		}
		if (!e)
			break;
		p = e + 1;
	}
	return 0;
}

/* The top N as text: one line per actor, a header line first. */
static int render_actors(ura_system *sys, const struct ura__http_req *rq, char **out)
{
	static const char *const by[] = { "mailbox", "handler_time", "handled" };
	ura_actor_info top[TOP_MAX];
	int n = ura_metrics_top(sys, rq->by, top, rq->n);
	if (n < 0)
		return n;
	size_t cap = 128 + (size_t)n * 256;
	char *b = malloc(cap);
	if (!b)
		return -ENOMEM;
	size_t len = (size_t)snprintf(b, cap, "# top %u by %s: ref class behavior node worker "
				      "mailbox handled handler_ns\n", rq->n, by[rq->by]);
	for (int i = 0; i < n && len < cap; i++) {
		const ura_actor_info *a = &top[i];
		/* Names are the program's: printed up to a space or control
		 * character, so a line stays one line of fields. */
		char cls[64], beh[64];
		snprintf(cls, sizeof cls, "%s", a->name ? a->name : "-");
		snprintf(beh, sizeof beh, "%s", a->behavior ? a->behavior : "-");
		for (char *c = cls; *c; c++)
			if ((unsigned char)*c <= ' ')
				*c = '_';
		for (char *c = beh; *c; c++)
			if ((unsigned char)*c <= ' ')
				*c = '_';
		len += (size_t)snprintf(b + len, cap - len, "<%u.%u> %s %s %u %u %llu %llu %llu\n",
					ura__idx_no((uint32_t)a->ref.id),
					(unsigned)(a->ref.id >> 32), cls, beh, a->node, a->worker,
					(unsigned long long)a->mailbox,
					(unsigned long long)a->handled,
					(unsigned long long)a->handler_ns);
	}
	if (len >= cap)
		len = cap - 1;
	*out = b;
	return (int)len;
}

/* ---- a connection ---------------------------------------------------- */

typedef struct {
	int fd;
	struct srv *srv;
	uint64_t since;      /* when the request started */
	size_t have;
	char head[HEAD_MAX];
} conn;

typedef struct {
	int fd;
	struct srv *srv;
} conn_arg;

static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	conn *c = state;
	const conn_arg *a = arg;
	c->fd = a->fd;
	c->srv = a->srv;
	c->since = ura__now_ns();
	return 0;
}

static void conn_destroy(void *state)
{
	conn *c = state;
	close(c->fd);
	atomic_fetch_sub_explicit(&c->srv->conns, 1, memory_order_relaxed);
	srv_drop(c->srv);
}

static void conn_read(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	uint64_t spent = ura__now_ns() - c->since;
	if (spent >= REQ_NS ||
	    ura_io_recv(cx, A_RECV, c->fd, HEAD_MAX - c->have, REQ_NS - spent) < 0)
		ura_stop(cx);
}

static void reply(ura_ctx *cx, int status, const struct ura__http_req *rq)
{
	conn *c = ura_state(cx);
	ura_system *sys = ura_ctx_system(cx);
	const char *reason = status == 200 ? "OK" : status == 400 ? "Bad Request"
			     : status == 404 ? "Not Found" : status == 405 ? "Method Not Allowed"
			     : status == 431 ? "Request Header Fields Too Large"
					     : "Internal Server Error";
	int om = rq && rq->om && !rq->actors, head_only = rq && rq->head_only;
	const char *type = om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
			      : "text/plain; version=0.0.4; charset=utf-8";
	char *body = NULL;
	int blen = 0;
	if (status == 200 && rq->actors) {
		type = "text/plain; charset=utf-8";
		blen = render_actors(sys, rq, &body);
		if (blen < 0) {
			status = 500;
			reason = "Internal Server Error";
			blen = 0;
		}
	} else if (status == 200) {
		size_t cap = RENDER_GUESS;
		for (int tries = 0; tries < 3; tries++) {
			free(body);
			body = malloc(cap);
			if (!body) {
				blen = -ENOMEM;
				break;
			}
			blen = ura_metrics_render(sys, om ? URA_METRICS_OPENMETRICS
							  : URA_METRICS_PROMETHEUS, body, cap);
			if (blen < 0 || (size_t)blen < cap)
				break;
			cap = (size_t)blen + 4096; /* grew: a class appeared meanwhile */
		}
		if (blen < 0 || (size_t)blen >= URA_IO_MAX_LEN - 512) {
			status = 500;
			reason = "Internal Server Error";
			blen = 0;
		}
	}
	if (status != 200) {
		type = "text/plain; charset=utf-8";
		free(body);
		body = NULL;
		blen = 0;
	}
	char hdr[256];
	int hl = snprintf(hdr, sizeof hdr,
			  "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
			  "Connection: close\r\n%s\r\n",
			  status, reason, type, blen,
			  status == 405 ? "Allow: GET, HEAD\r\n" : "");
	size_t total = (size_t)hl + (head_only ? 0 : (size_t)blen);
	char *msg = malloc(total);
	if (!msg) {
		free(body);
		ura_stop(cx);
		return;
	}
	memcpy(msg, hdr, (size_t)hl);
	if (!head_only && blen)
		memcpy(msg + hl, body, (size_t)blen);
	free(body);
	ura_io_req r = { .op = URA_IO_SEND, .fd = c->fd, .buf = msg, .len = total,
			 .timeout_ns = REQ_NS };
	ura_io op = ura_io_submit(cx, A_SENT, &r); /* copies msg */
	free(msg);
	if (op < 0)
		ura_stop(cx);
}

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	conn_read(cx);
}

static void on_recv(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	size_t len = 0;
	int64_t res = ura_arg_i64(m, 0);
	const void *data = ura_arg_bytes(m, 1, &len);
	if (res <= 0 || !data || len > HEAD_MAX - c->have) {
		ura_stop(cx); /* closed, failed, or past the deadline */
		return;
	}
	memcpy(c->head + c->have, data, len);
	size_t from = c->have > 3 ? c->have - 3 : 0;
	c->have += len;
	for (size_t i = from; i + 1 < c->have; i++) {
		/* The head ends at an empty line (CRLF CRLF, or bare LFs). */
		if (c->head[i] == '\n' &&
		    (c->head[i + 1] == '\n' ||
		     (c->head[i + 1] == '\r' && i + 2 < c->have && c->head[i + 2] == '\n'))) {
			struct ura__http_req rq;
			int rc = ura__http_head(c->head, i + 1, &rq);
			reply(cx, rc ? rc : 200, rc ? NULL : &rq);
			return;
		}
	}
	if (c->have == HEAD_MAX) {
		reply(cx, 431, NULL);
		return;
	}
	conn_read(cx);
}

static void on_sent(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	conn *c = ura_state(cx);
	/* Said all we will: a FIN now, so the client reads the end of the
	 * answer instead of a reset when it closes with data unread. */
	shutdown(c->fd, SHUT_WR);
	ura_stop(cx);
}

URA_BEHAVIOR(conn_beh,
	URA_ON(A_START, "", on_start),
	URA_ON(A_RECV, "ib", on_recv),
	URA_ON(A_SENT, "i", on_sent));

static const ura_class conn_class = {
	.name = "ura_metrics_conn",
	.state_size = sizeof(conn),
	.initial = &conn_beh,
	.init = conn_init,
	.destroy = conn_destroy,
};

/* ---- the acceptor ---------------------------------------------------- */

typedef struct {
	int lfd;
	struct srv *srv;
	ura_io op;
} acceptor;

static int acc_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	acceptor *a = state;
	a->lfd = *(const int *)arg;
	a->srv = ura__calloc(1, sizeof *a->srv);
	if (!a->srv)
		return -ENOMEM;
	atomic_init(&a->srv->refs, 1);
	atomic_init(&a->srv->conns, 0);
	return 0;
}

static void acc_destroy(void *state)
{
	acceptor *a = state;
	close(a->lfd);
	srv_drop(a->srv);
}

static void arm(ura_ctx *cx)
{
	acceptor *a = ura_state(cx);
	a->op = ura_io_accept(cx, A_ACCEPTED, a->lfd, URA_IO_MULTISHOT | SOCK_CLOEXEC);
	if (a->op < 0)
		ura_stop(cx); /* cannot serve: the ref goes stale, as documented */
}

static void acc_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	arm(cx);
}

static void acc_accepted(ura_ctx *cx, const ura_msg *m)
{
	acceptor *a = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	if (res >= 0) {
		int fd = (int)res;
		/* relaxed: only we add; a connection ending meanwhile makes
		 * the cap one too strict, once. */
		if (atomic_load_explicit(&a->srv->conns, memory_order_relaxed) >= MAX_CONNS) {
			close(fd);
		} else {
			atomic_fetch_add_explicit(&a->srv->conns, 1, memory_order_relaxed);
			atomic_fetch_add_explicit(&a->srv->refs, 1, memory_order_relaxed);
			conn_arg ca = { .fd = fd, .srv = a->srv };
			ura_ref r;
			int rc = ura_spawn(cx, &conn_class, &ca, &r);
			if (rc < 0) {
				/* init never ran (it cannot fail): ours to undo */
				close(fd);
				atomic_fetch_sub_explicit(&a->srv->conns, 1, memory_order_relaxed);
				srv_drop(a->srv);
			} else if (ura_send(cx, r, A_START) < 0) {
				ura_kill(cx, r, URA_KILL);
			}
		}
	}
	if (ura_io_more(m))
		return;
	/* The multishot accept ended (an error such as EMFILE ends it):
	 * accept again, unless the listener itself is broken. */
	a->op = 0;
	if (res == -EBADF || res == -EINVAL || res == -ENOTSOCK)
		ura_stop(cx);
	else
		arm(cx);
}

URA_BEHAVIOR(acc_beh,
	URA_ON(A_START, "", acc_start),
	URA_ON(A_ACCEPTED, "i", acc_accepted));

static const ura_class acceptor_class = {
	.name = "ura_metrics_http",
	.state_size = sizeof(acceptor),
	.initial = &acc_beh,
	.init = acc_init,
	.destroy = acc_destroy,
};

URA_API int ura_metrics_serve(ura_system *sys, const char *addr, int port, int *bound,
			      ura_ref *out)
{
	if (!sys || port < 0 || port > 65535)
		return -EINVAL;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t sl = sizeof sa;
	if (inet_pton(AF_INET, addr ? addr : "127.0.0.1", &sa.sin_addr) != 1)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	ura_ref r;
	int rc = ura_spawn(sys, &acceptor_class, &fd, &r);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	/* From here the actor owns fd (its destroy closes it). */
	if ((rc = ura_send(sys, r, A_START)) < 0) {
		ura_kill(sys, r, URA_KILL);
		return rc;
	}
	if (bound)
		*bound = ntohs(sa.sin_port);
	if (out)
		*out = r;
	return 0;
}
