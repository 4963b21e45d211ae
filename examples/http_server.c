/* SPDX-License-Identifier: MIT */
/*
 * http_server: HTTP/1.1 with keep-alive and pipelining, on actors only.
 *
 *   GET  /          200 "hello from ura\n"
 *   GET  /kv/KEY    200 and the value, or 404
 *   PUT  /kv/KEY    stores the body (Content-Length): 201 new, 204 replaced
 *   HEAD            as GET, without the body
 *
 * One acceptor (serve.c, shared with echo_server) keeps a multishot
 * accept armed and spawns an actor per connection. One store actor holds
 * the key-value table; connection actors ask it with ura_request, so the
 * table needs no lock. The store runs under a supervisor (ura.h,
 * "Supervisors"), which restarts it, empty, when it crashes: it registers
 * itself under the name "kv" as it starts, connections find it by that
 * name, and a request it could not answer (in flight at the crash) gets
 * 503 with Retry-After, the connection kept. A request made while the
 * store is being restarted waits for it (a few 1 ms retries) rather than
 * fail. SIGUSR1 kills the store (URA_KILL), as a crash drill: the tests
 * do it under load. A connection actor is a small state machine with
 * at most one thing in flight: a receive (with a deadline), a send (with
 * one), a request to the store, or the close. Malformed requests get 400,
 * a head over 8 KiB 431, a body over 1 MiB 413, a method this server does
 * not allow 405 and one it does not know 501.
 *
 *   http_server [--port N] [--bind ADDR] [--workers N] [--max-conns N]
 *               [--idle-ms MS] [--head-ms MS] [--send-ms MS] [--mem-mb MB]
 *
 * What clients can hold, and for how long, so that slow or hostile ones
 * cannot starve the others:
 *   --max-conns N  connections at once (default: what RLIMIT_NOFILE
 *                  leaves, at most 16384); beyond it a new connection is
 *                  closed as soon as it is accepted, before any reply.
 *   --idle-ms MS   a connection that sends nothing for MS is closed, with
 *                  408 if it was in the middle of a request (default 5000).
 *   --head-ms MS   a request head must arrive whole within MS of its first
 *                  byte, however it trickles in, or the reply is 408 and
 *                  the connection closes (default 10000). A slow client
 *                  costs its own actor a receive per byte, and a bounded
 *                  time.
 *   --send-ms MS   a reply that cannot be written within MS, all of it,
 *                  closes the connection (default 30000): a client that
 *                  does not read, or reads a trickle, is dropped.
 *   --mem-mb MB    the memory budget (default 256): bytes held across all
 *                  connections for input kept between receives (request
 *                  heads in pieces, bodies), body receives, and replies
 *                  being sent. A request whose body would take the budget
 *                  over it is answered 503 (Retry-After: 1) and its
 *                  connection closed before the body is read; so is a GET
 *                  whose value would; small things (a head, a short
 *                  reply) always go through. A body is reserved whole when
 *                  its head arrives, so a half-sent body holds its share
 *                  but never more. The store's own limits (65536 keys,
 *                  64 MiB) are apart from it, and a PUT's body is briefly
 *                  held twice, as the store copies it.
 * A body that trickles is bounded by --idle-ms per receive and by the
 * budget, not by a deadline of its own.
 *
 * --port 0 lets the kernel pick a free port; the first line on stdout
 * names the address. SIGINT or SIGTERM shuts down cleanly.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ura.h>

#include "http_parse.h"
#include "serve.h"

#define A_RECV URA_ATOM("recv")
#define A_SENT URA_ATOM("sent")
#define A_CLOSED URA_ATOM("closed")
/* the store's protocol */
#define A_GET URA_ATOM("get")
#define A_PUT URA_ATOM("put")
#define A_VALUE URA_ATOM("value")
#define A_NONE URA_ATOM("none")
#define A_CREATED URA_ATOM("created")
#define A_REPLACED URA_ATOM("replaced")
#define A_FULL URA_ATOM("full")
#define A_BUSY URA_ATOM("busy")
/* the store's name, and its supervision */
#define A_KV URA_ATOM("kv")
#define A_KV_RETRY URA_ATOM("kv_retry")
#define KV_RETRY_NS URA_MSEC
#define KV_RETRIES 200

#define MAX_HEAD (8u << 10)      /* beyond: 431 */
#define MAX_BODY (1u << 20)      /* beyond: 413 */
#define MAX_KEY 200
/* A request head fits one receive; a body is read in bigger pieces. The
 * receive's buffer is the completion message, so an idle connection costs
 * about RECV_LEN while its receive waits. */
#define RECV_LEN 4096u
#define BODY_RECV_MAX (64u << 10)
/* Lingering close: after a reply that ends the connection, half-close and
 * read what the client still sends for a while before closing, so that
 * unread input does not turn our FIN into a RST that destroys the reply
 * in flight (nginx's lingering_close, RFC 9112 9.6). */
#define LINGER_NS (500 * URA_MSEC)
#define LINGER_READS 16
#define KV_MAX_KEYS 65536
#define KV_MAX_BYTES (64u << 20)

static const char hello[] = "hello from ura\n";

/* ---- the store ------------------------------------------------------- */

typedef struct kv_entry {
	struct kv_entry *next;
	uint64_t hash;
	size_t klen, vlen;
	char data[]; /* the key, then the value */
} kv_entry;

/* What every connection and the store share: serve_spec.ctx. */
typedef struct {
	void *self;  /* &self is the store's spawn argument: lives as long */
	ura_ref sup; /* the store's supervisor */
	uint64_t idle_ns, head_ns, send_ns;
	size_t budget;
	/* Bytes of the budget taken, by connections on every worker and by
	 * the store. relaxed throughout: a count, that hands no memory over
	 * (what it counts is each actor's own). */
	atomic_size_t held;
} shared;

/* Takes n bytes of the budget; fails rather than go over it unless must,
 * for what a connection needs to go on at all (bounded per connection). */
static int budget_take(shared *sh, size_t n, int must)
{
	if (!n)
		return 0;
	size_t was = atomic_fetch_add_explicit(&sh->held, n, memory_order_relaxed);
	if (!must && was + n > sh->budget) {
		atomic_fetch_sub_explicit(&sh->held, n, memory_order_relaxed);
		return -1;
	}
	return 0;
}

static void budget_give(shared *sh, size_t n)
{
	if (n)
		atomic_fetch_sub_explicit(&sh->held, n, memory_order_relaxed);
}

typedef struct {
	kv_entry **tab; /* chained; made on the first put */
	size_t cap, count, bytes;
	shared *sh;
} kv_store;

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 1469598103934665603u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211u;
	return h;
}

static kv_entry **kv_slot(kv_store *s, const void *k, size_t kl, uint64_t h)
{
	kv_entry **e = &s->tab[h & (s->cap - 1)];
	while (*e && !((*e)->hash == h && (*e)->klen == kl && !memcmp((*e)->data, k, kl)))
		e = &(*e)->next;
	return e;
}

static int kv_grow(kv_store *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	kv_entry **tab = calloc(cap, sizeof *tab);
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		for (kv_entry *e = s->tab[i], *next; e; e = next) {
			next = e->next;
			e->next = tab[e->hash & (cap - 1)];
			tab[e->hash & (cap - 1)] = e;
		}
	free(s->tab);
	s->tab = tab;
	s->cap = cap;
	return 0;
}

static void kv_get(ura_ctx *cx, const ura_msg *m)
{
	kv_store *s = ura_state(cx);
	size_t kl;
	const void *k = ura_arg_bytes(m, 0, &kl);
	kv_entry *e = s->tab ? *kv_slot(s, k, kl, fnv1a(k, kl)) : NULL;
	if (!e) {
		ura_reply(cx, A_NONE);
		return;
	}
	/* The value is charged before it is copied into the reply, so that
	 * many GETs at once cannot pile up copies the budget never saw; the
	 * connection takes the charge over with the reply, and keeps it
	 * while the value is sent. (A reply that cannot reach its
	 * connection gives it back here; one that reaches a connection
	 * stopping before it reads it leaves it behind, and as a connection
	 * waiting for the store stops only for the quit, that is at
	 * shutdown, where it no longer matters.) */
	if (budget_take(s->sh, e->vlen, 0) < 0) {
		ura_reply(cx, A_BUSY);
		return;
	}
	if (ura_reply(cx, A_VALUE, ura_v_bytes(e->data + e->klen, e->vlen)) < 0)
		budget_give(s->sh, e->vlen);
}

static void kv_put(ura_ctx *cx, const ura_msg *m)
{
	kv_store *s = ura_state(cx);
	size_t kl, vl;
	const void *k = ura_arg_bytes(m, 0, &kl), *v = ura_arg_bytes(m, 1, &vl);
	uint64_t h = fnv1a(k, kl);
	if ((!s->tab || s->count >= s->cap / 4 * 3) && s->count < KV_MAX_KEYS && kv_grow(s) < 0) {
		ura_reply(cx, A_FULL);
		return;
	}
	kv_entry **slot = kv_slot(s, k, kl, h), *old = *slot;
	size_t bytes = s->bytes - (old ? old->vlen : 0) + vl + (old ? 0 : kl);
	if ((!old && s->count >= KV_MAX_KEYS) || bytes > KV_MAX_BYTES) {
		ura_reply(cx, A_FULL);
		return;
	}
	kv_entry *e = malloc(sizeof *e + kl + vl);
	if (!e) {
		ura_reply(cx, A_FULL);
		return;
	}
	e->next = old ? old->next : NULL;
	e->hash = h;
	e->klen = kl;
	e->vlen = vl;
	memcpy(e->data, k, kl);
	memcpy(e->data + kl, v, vl);
	*slot = e;
	s->bytes = bytes;
	if (old)
		free(old);
	else
		s->count++;
	ura_reply(cx, old ? A_REPLACED : A_CREATED);
}

static void kv_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

static int kv_init(ura_ctx *cx, void *state, const void *arg)
{
	kv_store *s = state;
	s->sh = *(shared *const *)arg;
	/* The name goes with the actor when it stops, so a restarted store
	 * takes it again here. */
	return ura_register(ura_ctx_system(cx), A_KV, ura_self(cx));
}

static void kv_destroy(void *state)
{
	kv_store *s = state;
	for (size_t i = 0; i < s->cap; i++)
		for (kv_entry *e = s->tab[i], *next; e; e = next) {
			next = e->next;
			free(e);
		}
	free(s->tab);
}

URA_BEHAVIOR(storing,
	URA_ON(A_GET, "b", kv_get),
	URA_ON(A_PUT, "bb", kv_put),
	URA_ON(SERVE_QUIT, "", kv_quit));

static const ura_class kv_class = {
	.name = "kv_store",
	.state_size = sizeof(kv_store),
	.initial = &storing,
	.init = kv_init,
	.destroy = kv_destroy,
};

/* ---- building replies ------------------------------------------------ */

/* Replies are built in a per-thread scratch buffer and handed to a send,
 * which copies them before it returns: a handler never leaves anything in
 * it for the next one. Only a reply bigger than the scratch (a large
 * value) takes a heap buffer, freed after the send. */
static _Thread_local char tl_scratch[16384];

typedef struct {
	char *p;
	size_t len, cap;
	int failed; /* out of memory: the connection is dropped */
} outbuf;

static void ob_init(outbuf *o)
{
	o->p = tl_scratch;
	o->len = 0;
	o->cap = sizeof tl_scratch;
	o->failed = 0;
}

static void ob_free(outbuf *o)
{
	if (o->p != tl_scratch)
		free(o->p);
	ob_init(o);
}

static int ob_room(outbuf *o, size_t more)
{
	if (o->failed)
		return -1;
	if (o->len + more <= o->cap)
		return 0;
	size_t cap = o->cap * 2 > o->len + more ? o->cap * 2 : o->len + more;
	char *p = o->p == tl_scratch ? malloc(cap) : realloc(o->p, cap);
	if (!p) {
		o->failed = 1;
		return -1;
	}
	if (o->p == tl_scratch)
		memcpy(p, o->p, o->len);
	o->p = p;
	o->cap = cap;
	return 0;
}

static void ob_put(outbuf *o, const void *p, size_t n)
{
	if (ob_room(o, n) == 0) {
		memcpy(o->p + o->len, p, n);
		o->len += n;
	}
}

__attribute__((format(printf, 2, 3)))
static void ob_printf(outbuf *o, const char *fmt, ...)
{
	va_list ap;
	for (int tries = 0; tries < 2; tries++) {
		va_start(ap, fmt);
		int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->failed = 1;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		if (ob_room(o, (size_t)n + 1) < 0)
			return;
	}
}

/* RFC 9110 6.6.1: an origin server with a clock sends Date. Formatting it
 * once a second per thread keeps it off the per-request path. */
static const char *http_date(void)
{
	static _Thread_local time_t at;
	static _Thread_local char text[40];
	time_t now = time(NULL);
	if (now != at) {
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(text, sizeof text, "%a, %d %b %Y %H:%M:%S GMT", &tm);
		at = now;
	}
	return text;
}

enum { R_CLOSE = 1 }; /* reply(..., close): the last reply on the connection */

/* Appends one reply. rq is NULL for a request that could not be parsed. */
static void reply(outbuf *o, const http_request *rq, int status, const char *ctype,
		  const void *body, size_t blen, int close, const char *extra)
{
	ob_printf(o, "HTTP/1.1 %d %s\r\nServer: ura\r\nDate: %s\r\n", status,
		  http_reason(status), http_date());
	if (ctype)
		ob_printf(o, "Content-Type: %s\r\n", ctype);
	/* RFC 9110 8.6: no Content-Length in a 204. */
	if (status != 204)
		ob_printf(o, "Content-Length: %zu\r\n", blen);
	if (extra)
		ob_printf(o, "%s", extra);
	if (close)
		ob_printf(o, "Connection: close\r\n");
	else if (rq && rq->minor == 0)
		ob_printf(o, "Connection: keep-alive\r\n");
	ob_put(o, "\r\n", 2);
	if (!(rq && rq->method == HTTP_HEAD) && blen)
		ob_put(o, body, blen);
}

static void reply_text(outbuf *o, const http_request *rq, int status, int close,
		       const char *extra)
{
	char body[64];
	int n = snprintf(body, sizeof body, "%d %s\n", status, http_reason(status));
	reply(o, rq, status, "text/plain", body, (size_t)n, close, extra);
}

/* ---- a connection ---------------------------------------------------- */

typedef struct {
	int fd;                 /* -1 once handed to a close */
	shared *sh;
	char *in;               /* unconsumed input kept between handlers */
	uint32_t in_len, in_cap;
	uint32_t want;          /* body bytes still missing, sizes the receive */
	uint64_t head_from;     /* when the head in c->in began; 0: not known yet */
	/* What this connection has taken of the budget (held), and what for:
	 * the pending request's whole size once its body is awaited, a body
	 * receive's buffer, the reply being sent. c->in's capacity counts
	 * too, as far as it exceeds body_res. */
	size_t held, body_res, recv_held, send_held;
	serve_tx tx;
	uint8_t close_after;    /* the last reply ends the connection */
	uint8_t wait_kv;        /* a request to the store is in flight */
	uint8_t continued;      /* 100 Continue sent for the pending request */
	uint8_t lingering;
	uint8_t linger_left;
	uint8_t kv_tries;       /* retries while the store restarts */
	ura_ref kv;             /* the store, as last looked up by name */
} conn;

static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	const serve_conn *a = arg;
	conn *c = state;
	(void)cx;
	c->fd = a->fd;
	c->sh = a->ctx;
	serve_conn_own(a);
	return 0;
}

/* Brings the connection's share of the budget to what it holds now.
 * Growth fails over the budget unless must (then nothing changes, and
 * the caller undoes what it meant to hold). */
static int settle(conn *c, int must)
{
	size_t in = c->in_cap > c->body_res ? c->in_cap : c->body_res;
	size_t now = in + c->recv_held + c->send_held;
	if (now > c->held && budget_take(c->sh, now - c->held, must) < 0)
		return -1;
	if (now < c->held)
		budget_give(c->sh, c->held - now);
	c->held = now;
	return 0;
}

static void conn_destroy(void *state)
{
	conn *c = state;
	/* Runs once every operation of ours has completed or been
	 * cancelled: nothing in the kernel still uses the fd. */
	if (c->fd >= 0)
		close(c->fd);
	free(c->in);
	budget_give(c->sh, c->held);
	serve_conn_gone();
}

static void conn_close(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	int fd = c->fd;
	/* The fd is the close's now: a quit that stops us first must not
	 * have destroy close a number that may already be reused. */
	c->fd = -1;
	if (fd < 0 || ura_io_close(cx, A_CLOSED, fd) < 0) {
		if (fd >= 0)
			close(fd);
		ura_stop(cx);
	}
}

static void timed_out(ura_ctx *cx);

static void conn_recv(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	size_t len = RECV_LEN;
	uint64_t deadline = c->sh->idle_ns;
	if (c->want > len)
		len = c->want < BODY_RECV_MAX ? c->want : BODY_RECV_MAX;
	if (c->in_len && !c->want) {
		/* A head in pieces. Its deadline runs from its first byte,
		 * and a byte now and then does not move it: only the idle
		 * deadline restarts with each receive. (A head that came
		 * behind pipelined requests is timed from when they were
		 * answered; each of those was a whole request.) */
		uint64_t now = serve_now_ns();
		if (!c->head_from)
			c->head_from = now;
		uint64_t end = c->head_from + c->sh->head_ns;
		if (now >= end) {
			timed_out(cx);
			return;
		}
		if (end - now < deadline)
			deadline = end - now;
	}
	/* A head's receive is the connection's fixed cost (--max-conns
	 * bounds those); a body's, up to 64 KiB, is charged. */
	c->recv_held = len > RECV_LEN ? len : 0;
	settle(c, 1);
	if (ura_io_recv(cx, A_RECV, c->fd, len, deadline) < 0)
		conn_close(cx);
}

static void linger(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	c->lingering = 1;
	c->linger_left = LINGER_READS;
	/* Nothing more is read for a request: what was kept is let go. */
	free(c->in);
	c->in = NULL;
	c->in_len = c->in_cap = 0;
	c->body_res = 0;
	c->recv_held = 0;
	settle(c, 1);
	/* The FIN goes out now, after the reply, so the client sees the end
	 * of it without waiting for our close. */
	shutdown(c->fd, SHUT_WR);
	if (ura_io_recv(cx, A_RECV, c->fd, RECV_LEN, LINGER_NS) < 0)
		conn_close(cx);
}

static int in_append(conn *c, const char *p, size_t n)
{
	size_t need = (size_t)c->in_len + n;
	if (need > MAX_HEAD + MAX_BODY + BODY_RECV_MAX)
		return -1;
	if (need > c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap : RECV_LEN;
		while (cap < need)
			cap *= 2;
		/* A reserved body is allocated once, as reserved: doubling
		 * would hold up to twice what the budget was charged. */
		if (need <= c->body_res)
			cap = c->body_res;
		char *in = realloc(c->in, cap);
		if (!in)
			return -1;
		c->in = in;
		c->in_cap = (uint32_t)cap;
		/* Within a reservation, or a head's worth: never refused. */
		settle(c, 1);
	}
	memcpy(c->in + c->in_len, p, n);
	c->in_len = (uint32_t)need;
	return 0;
}

/* Keeps v[used..n) for the next handler (v is c->in or the message's
 * bytes); an empty buffer is freed, so an idle connection holds none. */
static int keep_rest(conn *c, const char *v, size_t n, size_t used)
{
	if (c->close_after)
		used = n; /* nothing after the last reply is read */
	if (v == c->in) {
		if (used && used < n)
			memmove(c->in, c->in + used, n - used);
		c->in_len = (uint32_t)(n - used);
	} else if (used < n && in_append(c, v + used, n - used) < 0) {
		return -1;
	}
	if (c->in_len == 0) {
		free(c->in);
		c->in = NULL;
		c->in_cap = 0;
		settle(c, 1);
	}
	return 0;
}

static void on_kv_reply(ura_ctx *cx, const ura_msg *m);

/* Asks the store for rq (at the front of what the connection holds): 0
 * when the request was sent, or a retry armed because the store is being
 * restarted (its name is not taken yet); -1 when there is no store to be
 * had (shut down, or not back in KV_RETRIES ms). */
static int kv_ask(ura_ctx *cx, const http_request *rq, const char *body)
{
	conn *c = ura_state(cx);
	const char *key = rq->target + 4;
	const char *q = memchr(rq->target, '?', rq->target_len);
	size_t klen = (q ? (size_t)(q - rq->target) : rq->target_len) - 4;
	for (int look = 0; look < 2; look++) {
		if (look || ura_ref_null(c->kv))
			c->kv = ura_whereis(ura_ctx_system(cx), A_KV);
		if (ura_ref_null(c->kv))
			break;
		int rc = rq->method == HTTP_PUT
			? ura_request(cx, c->kv, on_kv_reply, NULL, A_PUT, ura_v_bytes(key, klen),
				      ura_v_bytes(body, (size_t)rq->content_length))
			: ura_request(cx, c->kv, on_kv_reply, NULL, A_GET, ura_v_bytes(key, klen));
		if (rc == 0) {
			c->kv_tries = 0;
			return 0;
		}
		if (rc != -ESRCH)
			return -1;
	}
	if (c->kv_tries++ >= KV_RETRIES ||
	    ura_send_after(cx, ura_self(cx), KV_RETRY_NS, A_KV_RETRY) < 0) {
		c->kv_tries = 0;
		return -1;
	}
	return 0;
}

static int valid_key(const char *k, size_t n)
{
	if (n == 0 || n > MAX_KEY)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)k[i];
		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		      (ch >= 'A' && ch <= 'Z') || ch == '-' || ch == '.' || ch == '_' || ch == '~'))
			return 0;
	}
	return 1;
}

/* Answers one complete request, or starts the store's part of it.
 * Returns 1 when answered, 0 when it must wait: for the store's reply, or
 * for the replies before it to go out first (one thing in flight). */
static int route(ura_ctx *cx, const http_request *rq, const char *body, outbuf *o)
{
	conn *c = ura_state(cx);
	const char *path = rq->target;
	const char *q = memchr(path, '?', rq->target_len);
	size_t plen = q ? (size_t)(q - path) : rq->target_len;

	if (rq->method == HTTP_UNKNOWN) {
		reply_text(o, rq, 501, R_CLOSE, NULL);
		c->close_after = 1;
		return 1;
	}
	if (plen == 1) {
		if (rq->method == HTTP_GET || rq->method == HTTP_HEAD)
			reply(o, rq, 200, "text/plain", hello, sizeof hello - 1, !rq->keep_alive, NULL);
		else
			reply_text(o, rq, 405, !rq->keep_alive, "Allow: GET, HEAD\r\n");
		return 1;
	}
	if (plen < 4 || memcmp(path, "/kv/", 4) != 0) {
		reply_text(o, rq, 404, !rq->keep_alive, NULL);
		return 1;
	}
	const char *key = path + 4;
	size_t klen = plen - 4;
	if (rq->method == HTTP_OTHER) {
		reply_text(o, rq, 405, !rq->keep_alive, "Allow: GET, HEAD, PUT\r\n");
		return 1;
	}
	if (!valid_key(key, klen)) {
		reply_text(o, rq, 400, !rq->keep_alive, NULL);
		return 1;
	}
	if (rq->method == HTTP_PUT && !rq->has_length) {
		reply_text(o, rq, 411, !rq->keep_alive, NULL);
		return 1;
	}
	if (o->len)
		return 0;
	(void)key;
	(void)klen;
	if (kv_ask(cx, rq, body) < 0) { /* no store: we are shutting down */
		reply_text(o, rq, 503, R_CLOSE, NULL);
		c->close_after = 1;
		return 1;
	}
	c->wait_kv = 1;
	return 0;
}

/* Answers every complete request in v[0..n) that can be answered now and
 * returns the bytes consumed. Stops at an incomplete request, at one that
 * waits (route), or after a reply that ends the connection. */
static size_t serve(ura_ctx *cx, const char *v, size_t n, outbuf *o)
{
	conn *c = ura_state(cx);
	size_t off = 0;
	c->want = 0;
	while (!c->close_after && !c->wait_kv && off < n) {
		http_request rq;
		int r = http_parse(v + off, n - off, MAX_HEAD, &rq);
		if (r == HTTP_INCOMPLETE)
			break;
		if (r != 1 || (rq.has_length && rq.content_length > MAX_BODY)) {
			reply_text(o, NULL, r != 1 ? r : 413, R_CLOSE, NULL);
			c->close_after = 1;
			break;
		}
		size_t total = rq.head_len + (size_t)rq.content_length;
		if (n - off < total) {
			/* The whole request is reserved before any more of it
			 * is read (and before a 100 Continue asks for it), so
			 * that half-sent bodies cannot add up past the budget. */
			if (!c->body_res) {
				c->body_res = total;
				if (settle(c, 0) < 0) {
					c->body_res = 0;
					reply_text(o, &rq, 503, R_CLOSE, "Retry-After: 1\r\n");
					c->close_after = 1;
					break;
				}
			}
			/* RFC 9110 10.1.1: never a 100 to an HTTP/1.0 client. */
			if (rq.expect_continue && rq.minor >= 1 && !c->continued) {
				ob_put(o, "HTTP/1.1 100 Continue\r\n\r\n", 25);
				c->continued = 1;
			}
			c->want = (uint32_t)(total - (n - off));
			break;
		}
		if (!route(cx, &rq, v + off + rq.head_len, o))
			break;
		off += total;
		c->continued = 0;
		/* Its reservation ends with it; c->in's capacity stays
		 * charged until keep_rest lets the buffer go. */
		c->body_res = 0;
		c->head_from = 0;
		if (!rq.keep_alive)
			c->close_after = 1;
	}
	return off;
}

/* Sends what was built, or moves on to the next step when nothing was. */
static void finish(ura_ctx *cx, outbuf *o)
{
	conn *c = ura_state(cx);
	if (o->failed) {
		ob_free(o);
		conn_close(cx);
		return;
	}
	if (o->len) {
		/* A big reply (a value) was charged by the store; the rest
		 * is small and goes out whatever the budget says. */
		c->send_held = o->len;
		settle(c, 1);
		ura_io r = serve_send(cx, &c->tx, A_SENT, c->fd, o->p, o->len, c->sh->send_ns);
		ob_free(o); /* copied by the send */
		if (r < 0)
			conn_close(cx);
		return;
	}
	if (c->wait_kv)
		return;
	if (c->close_after)
		linger(cx);
	else
		conn_recv(cx);
}

/* Serves v (the message's bytes, or c->in) and keeps what is left. */
static void serve_and_finish(ura_ctx *cx, const char *v, size_t n)
{
	conn *c = ura_state(cx);
	outbuf o;
	ob_init(&o);
	size_t used = serve(cx, v, n, &o);
	if (keep_rest(c, v, n, used) < 0)
		o.failed = 1;
	finish(cx, &o);
}

/* The idle or the head deadline passed with a request begun: say why
 * before closing. */
static void timed_out(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	outbuf o;
	ob_init(&o);
	reply_text(&o, NULL, 408, R_CLOSE, NULL);
	c->close_after = 1;
	c->in_len = 0;
	finish(cx, &o);
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
	const char *data = ura_arg_bytes(m, 1, &len);
	if (c->lingering) {
		if (res > 0 && c->linger_left-- > 0 &&
		    ura_io_recv(cx, A_RECV, c->fd, RECV_LEN, LINGER_NS) >= 0)
			return;
		conn_close(cx);
		return;
	}
	c->recv_held = 0; /* the buffer is this message, freed after us */
	if (res == -ETIME && c->in_len) {
		timed_out(cx);
		return;
	}
	if (res <= 0) { /* EOF, the idle deadline (-ETIME), or an error */
		conn_close(cx);
		return;
	}
	if (c->in_len == 0) {
		c->head_from = 0; /* a new request: conn_recv starts its clock */
		/* The usual case, a whole request in one receive: parse it
		 * where it lies, in the message, and copy nothing. */
		serve_and_finish(cx, data, len);
		return;
	}
	if (in_append(c, data, len) < 0) {
		conn_close(cx);
		return;
	}
	serve_and_finish(cx, c->in, c->in_len);
}

static void on_sent(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	serve_sent(cx, &c->tx);
	c->send_held = 0;
	settle(c, 1);
	if (ura_arg_i64(m, 0) < 0) { /* -ECANCELED: the send deadline */
		conn_close(cx);
		return;
	}
	if (c->close_after) {
		linger(cx);
		return;
	}
	/* Requests may be waiting in c->in: pipelined ones behind a store
	 * request, or a body after its 100 Continue. */
	serve_and_finish(cx, c->in, c->in_len);
}

/* The continuation of a request to the store; the request it answers is
 * still at the front of c->in. */
static void on_kv_reply(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	http_request rq;
	outbuf o;
	ob_init(&o);
	c->wait_kv = 0;
	if (http_parse(c->in, c->in_len, MAX_HEAD, &rq) != 1) {
		conn_close(cx); /* cannot happen: it parsed before */
		return;
	}
	ura_atom t = ura_msg_tag(m);
	if (t == A_VALUE) {
		size_t vl;
		const void *v = ura_arg_bytes(m, 0, &vl);
		c->held += vl; /* the store's charge, ours now (finish settles) */
		reply(&o, &rq, 200, "application/octet-stream", v, vl, !rq.keep_alive, NULL);
	} else if (t == A_BUSY) {
		reply_text(&o, &rq, 503, R_CLOSE, "Retry-After: 1\r\n");
		c->close_after = 1;
	} else if (t == A_CREATED) {
		reply(&o, &rq, 201, NULL, NULL, 0, !rq.keep_alive, NULL);
	} else if (t == A_REPLACED) {
		reply(&o, &rq, 204, NULL, NULL, 0, !rq.keep_alive, NULL);
	} else if (t == A_NONE) {
		reply_text(&o, &rq, 404, !rq.keep_alive, NULL);
	} else if (t == URA_ERROR) {
		/* The store stopped before it answered (a crash: its
		 * supervisor is restarting it). Only this request is lost. */
		c->kv = URA_NOREF;
		reply_text(&o, &rq, 503, !rq.keep_alive, "Retry-After: 1\r\n");
	} else {
		reply_text(&o, &rq, 507, !rq.keep_alive, NULL);
	}
	size_t used = rq.head_len + (size_t)rq.content_length;
	c->continued = 0;
	c->body_res = 0;
	c->head_from = 0;
	if (!rq.keep_alive)
		c->close_after = 1;
	used += serve(cx, c->in + used, c->in_len - used, &o);
	if (keep_rest(c, c->in, c->in_len, used) < 0)
		o.failed = 1;
	finish(cx, &o);
}

/* The store was being restarted: ask again (the request is still at
 * the front of c->in, as on_kv_reply expects). */
static void on_kv_retry(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	http_request rq;
	(void)m;
	if (http_parse(c->in, c->in_len, MAX_HEAD, &rq) != 1) {
		conn_close(cx); /* cannot happen: it parsed before */
		return;
	}
	if (kv_ask(cx, &rq, c->in + rq.head_len) == 0)
		return;
	outbuf o;
	ob_init(&o);
	reply_text(&o, &rq, 503, R_CLOSE, NULL);
	c->close_after = 1;
	c->wait_kv = 0;
	c->in_len = 0;
	finish(cx, &o);
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

URA_BEHAVIOR(serving,
	URA_ON(SERVE_START, "", on_start),
	URA_ON(A_RECV, "ib", on_recv),
	URA_ON(A_SENT, "i", on_sent),
	URA_ON(SERVE_LATE, "", on_late),
	URA_ON(A_KV_RETRY, "", on_kv_retry),
	URA_ON(A_CLOSED, "i", on_closed),
	URA_ON(SERVE_QUIT, "", on_quit));

static const ura_class conn_class = {
	.name = "http_conn",
	.state_size = sizeof(conn),
	.initial = &serving,
	.init = conn_init,
	.destroy = conn_destroy,
	.metrics = URA_CLASS_METRICS, /* per-class metrics at --metrics-port */
};

/* ---- main ------------------------------------------------------------ */

static int option(void *ctx, const char *opt, const char *val)
{
	shared *sh = ctx;
	long mb;
	if (!strcmp(opt, "--idle-ms"))
		return serve_arg_ms(val, &sh->idle_ns);
	if (!strcmp(opt, "--head-ms"))
		return serve_arg_ms(val, &sh->head_ns);
	if (!strcmp(opt, "--send-ms"))
		return serve_arg_ms(val, &sh->send_ns);
	if (!strcmp(opt, "--mem-mb")) {
		if (serve_arg_long(val, 1, 1L << 20, &mb) < 0)
			return -1;
		sh->budget = (size_t)mb << 20;
		return 0;
	}
	return -1;
}

/* ---- the store's supervision ----------------------------------------- */

/* Stands for the supervisor at shutdown (serve.c sends it SERVE_QUIT),
 * and takes SIGUSR1, the crash drill. */
static void keeper_quit(ura_ctx *cx, const ura_msg *m)
{
	shared *sh = *(shared **)ura_state(cx);
	(void)m;
	/* The supervisor stops the store, then itself. */
	(void)ura_kill(cx, sh->sup, URA_SHUTDOWN);
	ura_stop(cx);
}

static void keeper_drill(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_ref kv = ura_whereis(ura_ctx_system(cx), A_KV);
	if (!ura_ref_null(kv))
		(void)ura_kill(cx, kv, URA_KILL);
}

URA_BEHAVIOR(keeping,
	URA_ON(SERVE_QUIT, "", keeper_quit),
	URA_ON(URA_SIGNAL, "i", keeper_drill));

static const ura_class keeper_class = {
	.name = "kv_keeper",
	.state_size = sizeof(shared *),
	.initial = &keeping,
};

static int spawn_store(ura_system *sys, void *ctx, ura_ref *quit)
{
	shared *sh = ctx;
	sh->self = sh;
	/* At most 100 crashes in 10 s, then the supervisor gives up and the
	 * store stays down (requests get 503). */
	static ura_child_spec kv_child = {
		.id = A_KV,
		.cls = &kv_class,
		.shutdown_ns = URA_SEC,
	};
	kv_child.arg = &sh->self;
	static const ura_sup_spec kv_sup = {
		.strategy = URA_ONE_FOR_ONE,
		.intensity = 100,
		.period_ns = 10 * URA_SEC,
		.children = &kv_child,
		.nchildren = 1,
	};
	ura_ref keeper = URA_NOREF;
	int rc = ura_sup_start(sys, &kv_sup, NULL, &sh->sup);
	if (rc == 0)
		rc = ura_spawn(sys, &keeper_class, &sh, &keeper);
	if (rc == 0)
		rc = ura_signal_subscribe(sys, SIGUSR1, keeper);
	*quit = keeper;
	return rc;
}

int main(int argc, char **argv)
{
	shared sh = {
		.idle_ns = 5000 * URA_MSEC,
		.head_ns = 10000 * URA_MSEC,
		.send_ns = 30000 * URA_MSEC,
		.budget = (size_t)256 << 20,
	};
	return serve_main(argc, argv, &(serve_spec){
		.name = "http_server",
		.port = 8080,
		.conn_class = &conn_class,
		.ctx = &sh,
		.usage = "[--idle-ms MS] [--head-ms MS] [--send-ms MS] [--mem-mb MB]",
		.help = "  --idle-ms MS     close a connection silent for MS (default 5000)\n"
			"  --head-ms MS     a request head must arrive whole within MS of its\n"
			"                   first byte, or 408 and close (default 10000)\n"
			"  --send-ms MS     close a connection whose reply is not all written\n"
			"                   within MS (default 30000)\n"
			"  --mem-mb MB      request bodies, their receives and replies held at\n"
			"                   once, all connections together; beyond, 503 and\n"
			"                   close (default 256)\n",
		.option = option,
		.setup = spawn_store,
	});
}
