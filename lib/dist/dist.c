/* SPDX-License-Identifier: MIT */
/*
 * A ura system as a hidden Erlang node (ura.h, "Distribution").
 *
 * Three kinds of actor, all built on the public API:
 *  - the listener keeps a multishot accept armed on the node's socket and
 *    spawns a connection actor per peer that connects;
 *  - a connection actor owns one socket: the handshake (erl_dist_protocol,
 *    version 6, both sides), the 4-byte framing, the ticks, decoding what
 *    arrives (every term bounds-checked by term.c first, then libei) and
 *    writing what its proxies hand it, one send in flight at a time. It
 *    traps exits; it monitors the local actors that Erlang processes
 *    monitor, and answers their DOWNs with MONITOR_P_EXIT;
 *  - a proxy stands for one Erlang process (or one {Name, Node}): a send
 *    to it is encoded and handed to its connection; it is linked to the
 *    connection, traps exits, and (for a pid) monitors its process on the
 *    remote node, so it stops with the process's exit reason, or with
 *    URA_NOCONNECTION when the connection goes. Local monitors and links
 *    of the proxy therefore watch the process.
 * The node's tables (local actors' pids, proxies' pids, peers) are shared
 * by those actors and the API's callers, under one mutex; every actor
 * holds a reference on the node, which is freed with the last.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ei.h>

#include "core/core.h"
#include "dist/dist.h"
#include "util/alloc.h"
#include "util/log.h"

/* libei's own MD5 (eimd5.c), which its handshake uses; not in ei.h. The
 * context is three words of state and a 64-byte block: 88 bytes, given
 * room to spare. */
typedef struct { _Alignas(8) unsigned char b[256]; } md5_ctx;
void ei_MD5Init(md5_ctx *c);
void ei_MD5Update(md5_ctx *c, unsigned char *p, unsigned int n);
void ei_MD5Final(unsigned char out[16], md5_ctx *c);

/* Distribution flags (erl_dist_protocol). */
#define F_EXTENDED_REFERENCES 0x4ull
#define F_DIST_MONITOR 0x8ull
#define F_FUN_TAGS 0x10ull
#define F_DIST_MONITOR_NAME 0x20ull
#define F_NEW_FUN_TAGS 0x80ull
#define F_EXTENDED_PIDS_PORTS 0x100ull
#define F_EXPORT_PTR_TAG 0x200ull
#define F_BIT_BINARIES 0x400ull
#define F_NEW_FLOATS 0x800ull
#define F_SMALL_ATOM_TAGS 0x4000ull
#define F_UTF8_ATOMS 0x10000ull
#define F_MAP_TAG 0x20000ull
#define F_BIG_CREATION 0x40000ull
#define F_SEND_SENDER 0x80000ull
#define F_EXIT_PAYLOAD 0x400000ull
#define F_FRAGMENTS 0x800000ull
#define F_HANDSHAKE_23 0x1000000ull
/* What we offer. No atom cache (we send pass-through frames, 112, and a
 * peer sends those or headers with no atom cache references), fragments
 * both ways (a large message does not hold up small ones behind it), the
 * old unlink protocol (OTP 25 still takes it). */
#define OUR_FLAGS (F_EXTENDED_REFERENCES | F_DIST_MONITOR | F_FUN_TAGS |          \
		   F_DIST_MONITOR_NAME | F_NEW_FUN_TAGS | F_EXTENDED_PIDS_PORTS | \
		   F_EXPORT_PTR_TAG | F_BIT_BINARIES | F_NEW_FLOATS |             \
		   F_SMALL_ATOM_TAGS | F_UTF8_ATOMS | F_MAP_TAG | F_BIG_CREATION |  \
		   F_SEND_SENDER | F_EXIT_PAYLOAD | F_FRAGMENTS | F_HANDSHAKE_23)
/* What a peer must offer: the terms we decode assume them. */
#define NEED_FLAGS (F_EXTENDED_REFERENCES | F_EXTENDED_PIDS_PORTS | F_UTF8_ATOMS | \
		    F_NEW_FLOATS | F_BIG_CREATION | F_HANDSHAKE_23)

/* Control messages (erl_dist_protocol, "Protocol between connected
 * nodes"). */
enum {
	OP_LINK = 1, OP_SEND = 2, OP_EXIT = 3, OP_UNLINK = 4, OP_REG_SEND = 6,
	OP_EXIT2 = 8, OP_SEND_TT = 12, OP_EXIT_TT = 13, OP_REG_SEND_TT = 16,
	OP_EXIT2_TT = 18, OP_MONITOR_P = 19, OP_DEMONITOR_P = 20,
	OP_MONITOR_P_EXIT = 21, OP_SEND_SENDER = 22, OP_SEND_SENDER_TT = 23,
	OP_PAYLOAD_EXIT = 24, OP_PAYLOAD_EXIT_TT = 25, OP_PAYLOAD_EXIT2 = 26,
	OP_PAYLOAD_EXIT2_TT = 27, OP_PAYLOAD_MONITOR_P_EXIT = 28,
};

#define EPMD_PORT 4369
#define RECV_LEN 65536
#define OUT_MAX (64u << 20)     /* output a connection may hold */
/* Output over HOLD_HIGH holds the connection's proxies (their senders
 * are muted), under HOLD_LOW lets them go: Erlang's default
 * dist_buf_busy_limit is 1 MiB too. */
#define HOLD_HIGH (1u << 20)
#define HOLD_LOW (256u << 10)
/* A proxy's mailbox: a sender faster than its encoding is muted too. */
#define PROXY_MAILBOX 4096
#define SEND_CHUNK (4u << 20)   /* most bytes handed to one send */
#define HS_MAX 2048             /* longest handshake message */
#define LOG_REFUSED_MAX 10      /* refused messages logged per connection */
/* Fragments (erl_ext_dist, "Distribution Header for fragmented
 * messages"): the size we cut a large message into, and what a peer's
 * fragmented messages may hold at once before the connection is closed
 * as hostile: sequences in progress, and their bytes together. */
#define FRAG_SIZE (64u << 10)
#define FRAG_SEQ_MAX 64
#define FRAG_BYTES_MAX (64u << 20)

/* Internal tags: a leading '_' like the runtime's own. */
#define T_START URA_ATOM("_dstart")
#define T_ACCEPT URA_ATOM("_daccept")
#define T_RECV URA_ATOM("_drecv")
#define T_SENT URA_ATOM("_dsent")
#define T_TICK URA_ATOM("_dtick")
#define T_OUT URA_ATOM("_dout")
#define T_QUIT URA_ATOM("_dquit")
#define T_RDOWN URA_ATOM("_drdown")
#define T_RELAY URA_ATOM("_drelay")
#define T_HELD URA_ATOM("_dheld")
#define T_WAKE URA_ATOM("_dwake")
#define A_OTHER URA_ATOM("other")

/* ---- maps: u64 -> u64, linear probing, keys != 0 ----------------------- */

struct map {
	uint64_t *k, *v;
	size_t cap, n; /* cap: a power of two, or 0 */
};

static size_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k;
}

static int map_get(const struct map *m, uint64_t k, uint64_t *v)
{
	if (!m->cap)
		return 0;
	for (size_t i = mix(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->k[i] == k) {
			*v = m->v[i];
			return 1;
		}
		if (!m->k[i])
			return 0;
	}
}

static int map_put(struct map *m, uint64_t k, uint64_t v)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		uint64_t *nk = ura__calloc(cap, sizeof *nk), *nv = ura__calloc(cap, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t j = mix(m->k[i]) & (cap - 1);
			while (nk[j])
				j = (j + 1) & (cap - 1);
			nk[j] = m->k[i];
			nv[j] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = cap;
	}
	size_t i = mix(k) & (m->cap - 1);
	while (m->k[i] && m->k[i] != k)
		i = (i + 1) & (m->cap - 1);
	if (!m->k[i])
		m->n++;
	m->k[i] = k;
	m->v[i] = v;
	return 0;
}

static void map_del(struct map *m, uint64_t k)
{
	if (!m->cap)
		return;
	size_t i = mix(k) & (m->cap - 1);
	while (m->k[i] != k) {
		if (!m->k[i])
			return;
		i = (i + 1) & (m->cap - 1);
	}
	/* Backward shift: no tombstones, lookups stay short. */
	for (size_t j = i;;) {
		m->k[i] = 0;
		for (;;) {
			j = (j + 1) & (m->cap - 1);
			if (!m->k[j]) {
				m->n--;
				return;
			}
			size_t h = mix(m->k[j]) & (m->cap - 1);
			/* Is h cyclically in (i, j]? Then k[j] stays. */
			if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
				continue;
			break;
		}
		m->k[i] = m->k[j];
		m->v[i] = m->v[j];
		i = j;
	}
}

static void map_free(struct map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- the node ---------------------------------------------------------- */

/* A node we know: connected, connecting, or once connected (entries are
 * kept until the node goes, so callers may hold them without a count). */
struct peer {
	char name[MAXATOMLEN_UTF8];
	ura_ref conn;     /* the connection actor; NOREF when none */
	uint64_t flags;   /* the peer's, once up */
	int up;
	int result;       /* of a connect: 1 pending, 0 up, -errno */
	/* Its connection's output is over HOLD_HIGH: a proxy that sees it
	 * holds its mailbox. Written by the connection actor, read by the
	 * proxies; relaxed: a hint, the T_HELD/T_WAKE exchange with the
	 * connection (serial in its turns) is what no wake-up is lost by. */
	_Atomic int busy;
	struct peer *next;
};

/* An Erlang process a proxy stands for. */
struct rproc {
	char *node;
	uint32_t num, serial, creation;
};

struct ura_dist {
	ura_system *sys;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	_Atomic int refs;
	char node[MAXATOMLEN_UTF8];
	char cookie[512];
	uint32_t creation;
	int epmd_fd, listen_fd;
	unsigned port;
	uint64_t tick_ns;
	ura_ref listener;
	int stopping;
	/* Local pids: index num | serial << 15 (28 bits, as without
	 * DFLAG_V4_NC) -> ref; and ref -> index + 1. Under mu. Never
	 * shrinks: a pid is given out for the life of the node. */
	ura_ref *pids;
	uint32_t npids, pids_cap;
	struct map local;
	/* Proxies: ref -> struct rproc * (pid proxies only). Under mu. */
	struct map rproxy;
	struct peer *peers;
	uint32_t next_ref;
};

static void dlog(const struct ura_dist *d, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void dlog(const struct ura_dist *d, int level, const char *fmt, ...)
{
	char buf[768];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ura__log(&d->sys->log, level, "dist %s: %s", d->node, buf);
}

static void node_free(struct ura_dist *d)
{
	for (size_t i = 0; i < d->rproxy.cap; i++)
		if (d->rproxy.k[i]) {
			struct rproc *rp = (struct rproc *)(uintptr_t)d->rproxy.v[i];
			free(rp->node);
			free(rp);
		}
	map_free(&d->rproxy);
	map_free(&d->local);
	free(d->pids);
	while (d->peers) {
		struct peer *p = d->peers;
		d->peers = p->next;
		free(p);
	}
	if (d->epmd_fd >= 0)
		close(d->epmd_fd);
	pthread_cond_destroy(&d->cv);
	pthread_mutex_destroy(&d->mu);
	free(d);
}

static void node_hold(struct ura_dist *d)
{
	/* Relaxed: a holder already has a reference to copy. */
	atomic_fetch_add_explicit(&d->refs, 1, memory_order_relaxed);
}

static void node_drop(struct ura_dist *d)
{
	/* acq_rel: the last dropper sees every other holder's writes. */
	if (atomic_fetch_sub_explicit(&d->refs, 1, memory_order_acq_rel) == 1)
		node_free(d);
}

/* The pid index of local actor r, allocated on first use; -ENOMEM. */
static int64_t pid_of_locked(struct ura_dist *d, ura_ref r)
{
	uint64_t v;
	if (map_get(&d->local, r.id, &v))
		return (int64_t)v - 1;
	if (d->npids >= (1u << 28))
		return -ENOMEM;
	if (d->npids == d->pids_cap) {
		uint32_t cap = d->pids_cap ? 2 * d->pids_cap : 256;
		ura_ref *np = ura__realloc(d->pids, cap * sizeof *np);
		if (!np)
			return -ENOMEM;
		d->pids = np;
		d->pids_cap = cap;
	}
	if (map_put(&d->local, r.id, (uint64_t)d->npids + 1) < 0)
		return -ENOMEM;
	d->pids[d->npids] = r;
	return d->npids++;
}

static int local_pid(struct ura_dist *d, ura_ref r, erlang_pid *out)
{
	pthread_mutex_lock(&d->mu);
	int64_t i = pid_of_locked(d, r);
	pthread_mutex_unlock(&d->mu);
	if (i < 0)
		return (int)i;
	strcpy(out->node, d->node);
	out->num = (unsigned)i & 0x7fff;
	out->serial = (unsigned)(i >> 15);
	out->creation = d->creation;
	return 0;
}

/* A pid to encode for ref r: a proxy's process, else r's own pid. */
static int pid_for_ref(struct ura_dist *d, ura_ref r, erlang_pid *out)
{
	uint64_t v;
	pthread_mutex_lock(&d->mu);
	if (map_get(&d->rproxy, r.id, &v)) {
		const struct rproc *rp = (const struct rproc *)(uintptr_t)v;
		snprintf(out->node, sizeof out->node, "%s", rp->node);
		out->num = rp->num;
		out->serial = rp->serial;
		out->creation = rp->creation;
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	pthread_mutex_unlock(&d->mu);
	return local_pid(d, r, out);
}

/* The local actor with pid p; URA_NOREF for none (or another node's). */
static ura_ref ref_of_pid(struct ura_dist *d, const erlang_pid *p)
{
	ura_ref r = URA_NOREF;
	if (strcmp(p->node, d->node) || p->creation != d->creation || p->num > 0x7fff ||
	    p->serial > 0x1fff)
		return r;
	uint32_t i = p->num | p->serial << 15;
	pthread_mutex_lock(&d->mu);
	if (i < d->npids)
		r = d->pids[i];
	pthread_mutex_unlock(&d->mu);
	return r;
}

static struct peer *peer_find_locked(struct ura_dist *d, const char *name)
{
	for (struct peer *p = d->peers; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

static struct peer *peer_get_locked(struct ura_dist *d, const char *name)
{
	struct peer *p = peer_find_locked(d, name);
	if (p)
		return p;
	p = ura__calloc(1, sizeof *p);
	if (!p)
		return NULL;
	snprintf(p->name, sizeof p->name, "%s", name);
	p->next = d->peers;
	d->peers = p;
	return p;
}

static void digest(const struct ura_dist *d, uint32_t challenge, unsigned char out[16])
{
	char num[16];
	int n = snprintf(num, sizeof num, "%u", challenge);
	md5_ctx c;
	ei_MD5Init(&c);
	ei_MD5Update(&c, (unsigned char *)(uintptr_t)d->cookie, (unsigned)strlen(d->cookie));
	ei_MD5Update(&c, (unsigned char *)num, (unsigned)n);
	ei_MD5Final(out, &c);
}

static uint32_t random32(void)
{
	uint32_t v = 0;
	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = (uint32_t)ura__now_ns() * 2654435761u;
	return v;
}

/* ---- encoding ---------------------------------------------------------- */

static void put16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static uint32_t get16(const uint8_t *p) { return (uint32_t)p[0] << 8 | p[1]; }
static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A frame under construction: [length 4][112][131 control][131 message]. */
static int frame_begin(ei_x_buff *x)
{
	static const char hdr[5] = { 0, 0, 0, 0, 112 };
	if (ei_x_new(x) < 0)
		return -ENOMEM;
	if (ei_x_append_buf(x, hdr, 5) < 0 || ei_x_encode_version(x) < 0) {
		ei_x_free(x);
		return -ENOMEM;
	}
	return 0;
}

static void frame_end(ei_x_buff *x)
{
	put32((uint8_t *)x->buff, (uint32_t)(x->index - 4));
}

/* A ura atom is at most URA_ATOM_MAX of [0-9A-Za-z_]: ASCII, so its
 * SMALL_ATOM_UTF8_EXT is its bytes as they are. Written here rather than
 * by ei_x_encode_atom, which measures and converts each one from Latin-1
 * (14% of a proxy's send, perf: bench/README.md, issue 19). The peer
 * takes UTF-8 atoms (F_UTF8_ATOMS is in NEED_FLAGS). */
static int enc_atom(ei_x_buff *x, ura_atom a)
{
	char b[2 + URA_ATOM_MAX + 1];
	if (a == URA_NOCONNECTION)
		return ei_x_encode_atom(x, "noconnection");
	ura_atom_name(a, b + 2);
	size_t n = strlen(b + 2);
	b[0] = (char)ERL_SMALL_ATOM_UTF8_EXT;
	b[1] = (char)n;
	return ei_x_append_buf(x, b, (int)n + 2);
}

static int enc_value(struct ura_dist *d, ei_x_buff *x, const ura_value *v)
{
	erlang_pid pid;
	switch (v->type) {
	case URA_T_I64:
		return ei_x_encode_longlong(x, v->u.i64);
	case URA_T_F64:
		return ei_x_encode_double(x, v->u.f64);
	case URA_T_ATOM:
		return enc_atom(x, v->u.atom);
	case URA_T_REF:
		if (pid_for_ref(d, v->u.ref, &pid) < 0)
			return -1;
		return ei_x_encode_pid(x, &pid);
	case URA_T_STR:
		return ei_x_encode_binary(x, v->u.str, (int)v->len);
	case URA_T_BYTES:
		return ei_x_encode_binary(x, v->u.bytes, (int)v->len);
	default:
		return -1;
	}
}

/* An exit reason: an atom, or {Atom, Value}. */
static int enc_reason(struct ura_dist *d, ei_x_buff *x, ura_atom reason, const ura_value *v)
{
	if (!v || !v->type)
		return enc_atom(x, reason);
	if (ei_x_encode_tuple_header(x, 2) < 0 || enc_atom(x, reason) < 0)
		return -1;
	return enc_value(d, x, v);
}

/* ---- decoding ---------------------------------------------------------- */

/* Room for the strings of one decoded message: they must be NUL-ended
 * copies; binaries are pointed at in the frame itself. */
struct scratch {
	char *p;
	size_t len, cap;
};

static int scratch_reserve(struct scratch *s, size_t n)
{
	s->len = 0;
	if (n <= s->cap)
		return 0;
	char *np = ura__realloc(s->p, n);
	if (!np)
		return -ENOMEM;
	s->p = np;
	s->cap = n;
	return 0;
}

/* An iolist's bytes appended at *out (bounded by the frame it came from,
 * which the scratch holds room for). -1 if it is no iolist. */
static int iolist(const char *buf, int *idx, char *out, size_t *len, size_t cap, int depth)
{
	int type, size;
	if (depth > 16 || ei_get_type(buf, idx, &type, &size) < 0)
		return -1;
	switch (type) {
	case ERL_NIL_EXT:
		(*idx)++;
		return 0;
	case ERL_STRING_EXT:
		if ((size_t)size > cap - *len)
			return -1;
		memcpy(out + *len, buf + *idx + 3, (size_t)size);
		*len += (size_t)size;
		*idx += 3 + size;
		return 0;
	case ERL_BINARY_EXT:
		if ((size_t)size > cap - *len)
			return -1;
		memcpy(out + *len, buf + *idx + 5, (size_t)size);
		*len += (size_t)size;
		*idx += 5 + size;
		return 0;
	case ERL_LIST_EXT: {
		int arity;
		if (ei_decode_list_header(buf, idx, &arity) < 0)
			return -1;
		for (int i = 0; i < arity; i++) {
			long long c;
			int t2, s2;
			if (ei_get_type(buf, idx, &t2, &s2) < 0)
				return -1;
			if (t2 == ERL_SMALL_INTEGER_EXT || t2 == ERL_INTEGER_EXT) {
				if (ei_decode_longlong(buf, idx, &c) < 0 || c < 0 || c > 255 ||
				    *len >= cap)
					return -1;
				out[(*len)++] = (char)c;
			} else if (iolist(buf, idx, out, len, cap, depth + 1) < 0) {
				return -1;
			}
		}
		/* The tail: [] or a binary (an improper iolist). */
		return iolist(buf, idx, out, len, cap, depth + 1);
	}
	default:
		return -1;
	}
}

struct conn;
static ura_ref proxy_for(ura_ctx *cx, struct conn *c, const erlang_pid *p);

/* One value of a message; NULL, or why it does not map. */
static const char *dec_value(ura_ctx *cx, struct conn *c, const char *buf, int *idx,
			     struct scratch *s, ura_value *v);

/* ---- connection actor -------------------------------------------------- */

enum phase {
	P_A_NAME,      /* acceptor: waiting for the initiator's name */
	P_A_REPLY,     /* acceptor: waiting for the challenge reply */
	P_I_STATUS,    /* initiator: waiting for the status */
	P_I_CHALLENGE, /* initiator: waiting for the challenge */
	P_I_ACK,       /* initiator: waiting for the acknowledgement */
	P_UP,
};

/* A monitor an Erlang process holds on a local actor: the encoded terms
 * of the MONITOR_P, sent back raw in its MONITOR_P_EXIT. */
struct emon {
	ura_mon mon;
	uint8_t *raw; /* from, to, ref, back to back */
	uint32_t from_len, to_len, ref_len;
};

/* A link an Erlang process made to a local actor. The connection holds
 * the local end itself (one ura link per local actor, however many
 * processes link to it), so that the link is in place before anything
 * the process sends after its link/1 reaches anyone here. */
struct elink {
	ura_ref local;
	uint32_t num, serial, creation; /* the process, on our peer */
};

struct conn {
	struct ura_dist *d;
	struct peer *peer; /* once the peer's name is known */
	int fd;
	int phase;
	int sending;       /* a send in flight */
	int closing;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_cap;
	uint64_t peer_flags;
	uint32_t peer_creation;
	uint32_t my_challenge, peer_challenge;
	char peer_name[MAXATOMLEN_UTF8];
	uint64_t last_rx;
	int sent_since_tick;
	unsigned refused;
	struct map proxies;   /* pid key -> proxy ref */
	struct map proxy_key; /* proxy ref -> pid key */
	struct emon *emons;
	size_t nemons, emons_cap;
	struct elink *elinks;
	size_t nelinks, elinks_cap;
	struct scratch scr;
	/* A peer's fragmented messages being put together, and their bytes
	 * (at most FRAG_SEQ_MAX and FRAG_BYTES_MAX). */
	struct rfrag {
		uint64_t seq, next;   /* next: the fragment id expected */
		uint8_t *buf;         /* [112][131][control][131][message] so far */
		size_t len, cap;
	} rfrags[FRAG_SEQ_MAX];
	unsigned nrfrags;
	size_t rfrag_bytes;
	int frag_seen;        /* logged once */
	uint8_t *whole;       /* a header frame made pass-through (frame_hdr) */
	size_t whole_cap;
	/* Our large messages, sent a fragment per send so that small ones
	 * go between them, and the frames of their senders that came after
	 * (a sender's messages keep their order); big_bytes is counted in
	 * OUT_MAX with out_len. */
	struct bigmsg *bigq, *bigq_tail;
	size_t big_bytes;
	uint64_t next_seq;
	/* Back-pressure: busy while the output is over HOLD_HIGH until it is
	 * under HOLD_LOW; the proxies that held meanwhile, woken after. */
	int busy;
	ura_ref *held;
	size_t nheld, held_cap;
};

/* A frame in the header form ([131][68][0][control][message]) that waits
 * in the connection's big queue: a large one (frag) goes out a fragment
 * at a time; another waits behind its sender's large one. */
struct bigmsg {
	struct bigmsg *next;
	uint8_t *p;        /* the frame's payload, without its length */
	size_t n, ctl_end; /* ctl_end: where the message term starts in p */
	size_t at;         /* frag: message bytes of p already sent */
	uint64_t seq, left; /* frag: its sequence, fragments still to send */
	ura_ref from;
	int frag;
};

struct conn_arg {
	struct ura_dist *d;
	int fd;
	int initiator;
	struct peer *peer; /* initiator: the node connected to */
};

struct proxy {
	struct ura_dist *d;
	struct peer *peer; /* its node (busy); NULL: never held */
	ura_ref self;
	ura_ref conn;
	int held;          /* ura_mailbox_hold on, until the connection's T_WAKE */
	uint64_t peer_flags;
	int named;
	char name[MAXATOMLEN_UTF8]; /* named: the registered name */
	char node[MAXATOMLEN_UTF8];
	uint32_t num, serial, creation; /* a pid proxy's process */
	/* The frame each send is encoded into, kept from one to the next
	 * (index 0: unused yet); and the encoded control tuple for the last
	 * sender (a local pid never changes: bench/README.md, issue 19). */
	ei_x_buff out, ctl;
	ura_ref ctl_from;
	int have_out, have_ctl;
};

struct proxy_arg {
	struct ura_dist *d;
	struct peer *peer;
	ura_ref conn;
	uint64_t peer_flags;
	const char *name; /* named */
	const char *node;
	uint32_t num, serial, creation;
};

static void conn_lost(ura_ctx *cx, const char *why);

static int out_put(ura_ctx *cx, struct conn *c, const void *p, size_t n);
static int frags_on(const struct conn *c);

/* Room for n bytes at *buf (capacity *cap: `first` at first, then
 * doubled); 0 or -ENOMEM. The connection's buffers all grow this way. */
static int grow(uint8_t **buf, size_t *cap, size_t n, size_t first)
{
	if (n <= *cap)
		return 0;
	size_t c = *cap ? *cap : first;
	while (c < n)
		c *= 2;
	uint8_t *nb = ura__realloc(*buf, c);
	if (!nb)
		return -ENOMEM;
	*buf = nb;
	*cap = c;
	return 0;
}

/* Whether n more bytes of output fit OUT_MAX; if not, the connection
 * goes (a peer that does not read). */
static int out_room(ura_ctx *cx, struct conn *c, size_t n)
{
	if (c->out_len + c->big_bytes + n <= OUT_MAX)
		return 0;
	conn_lost(cx, "peer not reading: output over 64 MiB");
	return -ENOBUFS;
}

static void big_pop(struct conn *c)
{
	struct bigmsg *b = c->bigq;
	c->bigq = b->next;
	if (!c->bigq)
		c->bigq_tail = NULL;
	c->big_bytes -= b->n;
	free(b->p);
	free(b);
}

/* The next piece of the big queue onto the output: the head's next
 * fragment (the first carries the control term: erl_ext_dist), then
 * the frames that waited behind it, once it is all sent. One fragment
 * per send, so whatever small frames came meanwhile go between. */
static void big_next(ura_ctx *cx, struct conn *c)
{
	while (c->bigq && !c->closing) {
		struct bigmsg *b = c->bigq;
		if (!b->frag) {
			uint8_t len[4];
			put32(len, (uint32_t)b->n);
			if (out_put(cx, c, len, 4) < 0 || out_put(cx, c, b->p, b->n) < 0)
				return;
			big_pop(c);
			continue;
		}
		size_t msg = b->n - b->ctl_end;
		size_t take = msg - b->at < FRAG_SIZE ? msg - b->at : FRAG_SIZE;
		/* The first: [131][69][seq][id][0 atom cache refs][control]
		 * [message...]; the next: [131][70][seq][id][message...]. */
		int first = b->at == 0;
		size_t hn = first ? 4 + 19 : 4 + 18, ctl = first ? b->ctl_end - 3 : 0;
		uint8_t h[4 + 19];
		put32(h, (uint32_t)(hn - 4 + ctl + take));
		h[4] = 131;
		h[5] = first ? 69 : 70;
		put32(h + 6, (uint32_t)(b->seq >> 32));
		put32(h + 10, (uint32_t)b->seq);
		put32(h + 14, (uint32_t)(b->left >> 32));
		put32(h + 18, (uint32_t)b->left);
		h[22] = 0; /* the first's atom cache refs; the next's is past hn */
		if (out_put(cx, c, h, hn) < 0 || (ctl && out_put(cx, c, b->p + 3, ctl) < 0))
			return;
		if (out_put(cx, c, b->p + b->ctl_end + b->at, take) < 0)
			return;
		b->at += take;
		b->left--;
		if (b->left == 0)
			big_pop(c);
		return;
	}
}

static void conn_flush(ura_ctx *cx, struct conn *c)
{
	if (c->sending || c->fd < 0)
		return;
	if (c->bigq)
		big_next(cx, c);
	if (!c->out_len || c->closing)
		return;
	size_t n = c->out_len < SEND_CHUNK ? c->out_len : SEND_CHUNK;
	ura_io_req r = { .op = URA_IO_SEND, .fd = c->fd, .buf = c->out, .len = n,
			 .timeout_ns = c->d->tick_ns };
	ura_io id = ura_io_submit(cx, T_SENT, &r);
	if (id < 0) {
		conn_lost(cx, "send failed");
		return;
	}
	/* The submit copied the bytes: drop them now. */
	memmove(c->out, c->out + n, c->out_len - n);
	c->out_len -= n;
	c->sending = 1;
	c->sent_since_tick = 1;
}

/* Appends to the output, without a flush. */
static int out_put(ura_ctx *cx, struct conn *c, const void *p, size_t n)
{
	if (c->closing)
		return -ENOTCONN;
	int rc = out_room(cx, c, n);
	if (rc < 0)
		return rc;
	if (grow(&c->out, &c->out_cap, c->out_len + n, 65536) < 0) {
		conn_lost(cx, "out of memory");
		return -ENOMEM;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return 0;
}

static int big_waits(const struct conn *c, ura_ref from)
{
	if (ura_ref_null(from))
		return 0;
	for (const struct bigmsg *b = c->bigq; b; b = b->next)
		if (ura_ref_eq(b->from, from))
			return 1;
	return 0;
}

/* A frame ([length 4][payload]) from `from` (URA_NOREF: the connection's
 * own, or one no order ties to a sender). To a peer with F_FRAGMENTS a
 * message goes in the header form, which it expects once fragments are
 * agreed ([112][131 ctl][131 msg] becomes [131][68][0][ctl][msg]); one
 * whose message is over FRAG_SIZE, or one whose sender has a large one
 * queued, waits in the big queue. */
static int conn_write_from(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n,
			   ura_ref from)
{
	if (c->closing)
		return -ENOTCONN;
	if (c->phase != P_UP || !frags_on(c) || n < 7 || p[4] != 112) {
		int rc = out_put(cx, c, p, n);
		if (rc == 0)
			conn_flush(cx, c);
		return rc;
	}
	/* Our own encoding: the control term is well formed, and a message
	 * term follows it with its version byte, or nothing does. */
	size_t pos = 5;
	if (ura__dist_term_check(p, n, &pos) < 0 || (pos < n && p[pos] != 131)) {
		dlog(c->d, URA_LOG_ERROR, "a frame of ours that is not a term: dropped");
		return -EINVAL;
	}
	/* The header form is a byte longer when there is no message term
	 * (a signal): its version byte is gone, 3 header bytes for 2. */
	size_t ctl = pos - 6, msg = pos < n ? n - pos - 1 : 0, plen = 3 + ctl + msg;
	int big = msg > FRAG_SIZE;
	if (!big && !big_waits(c, from)) {
		uint8_t h[7] = { 0, 0, 0, 0, 131, 68, 0 };
		put32(h, (uint32_t)plen);
		int rc = out_put(cx, c, h, 7);
		if (rc == 0)
			rc = out_put(cx, c, p + 6, ctl);
		if (rc == 0 && msg)
			rc = out_put(cx, c, p + pos + 1, msg);
		if (rc == 0)
			conn_flush(cx, c);
		return rc;
	}
	int rc = out_room(cx, c, plen);
	if (rc < 0)
		return rc;
	struct bigmsg *b = ura__calloc(1, sizeof *b);
	uint8_t *q = b ? ura__malloc(plen) : NULL;
	if (!q) {
		free(b);
		conn_lost(cx, "out of memory");
		return -ENOMEM;
	}
	q[0] = 131;
	q[1] = 68;
	q[2] = 0;
	memcpy(q + 3, p + 6, ctl);
	if (msg)
		memcpy(q + 3 + ctl, p + pos + 1, msg);
	b->p = q;
	b->n = plen;
	b->ctl_end = 3 + ctl;
	b->from = from;
	b->frag = big;
	if (big) {
		b->seq = ++c->next_seq;
		b->left = (plen - b->ctl_end + FRAG_SIZE - 1) / FRAG_SIZE;
	}
	if (c->bigq_tail)
		c->bigq_tail->next = b;
	else
		c->bigq = b;
	c->bigq_tail = b;
	c->big_bytes += plen;
	conn_flush(cx, c);
	return 0;
}

static int conn_write(ura_ctx *cx, struct conn *c, const void *p, size_t n)
{
	return conn_write_from(cx, c, p, n, URA_NOREF);
}

/* A handshake message: 2-byte length, then the bytes. */
static void hs_write(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n)
{
	uint8_t len[2];
	put16(len, (uint32_t)n);
	if (conn_write(cx, c, len, 2) == 0)
		conn_write(cx, c, p, n);
}

static size_t name_msg(struct conn *c, uint8_t *b, int challenge)
{
	size_t nl = strlen(c->d->node), k = 0;
	b[k++] = 'N';
	put32(b + k, (uint32_t)(OUR_FLAGS >> 32));
	put32(b + k + 4, (uint32_t)OUR_FLAGS);
	k += 8;
	if (challenge) {
		put32(b + k, c->my_challenge);
		k += 4;
	}
	put32(b + k, c->d->creation);
	k += 4;
	put16(b + k, (uint32_t)nl);
	k += 2;
	memcpy(b + k, c->d->node, nl);
	return k + nl;
}

static void connect_result(struct conn *c, int rc)
{
	struct ura_dist *d = c->d;
	if (!c->peer)
		return;
	pthread_mutex_lock(&d->mu);
	if (c->peer->result == 1)
		c->peer->result = rc;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
}

static void conn_lost(ura_ctx *cx, const char *why)
{
	struct conn *c = ura_state(cx);
	if (c->closing)
		return;
	c->closing = 1;
	/* Warn: a lost node, a malformed frame or a refused peer is news
	 * to whoever runs this node; our own stop is not. */
	if (c->phase == P_UP)
		dlog(c->d, strcmp(why, "distribution stopped") ? URA_LOG_WARN : URA_LOG_INFO,
		     "connection to %s lost: %s", c->peer_name, why);
	else
		dlog(c->d, URA_LOG_WARN, "handshake with %s failed: %s",
		     c->peer_name[0] ? c->peer_name : "a peer", why);
	connect_result(c, c->phase == P_I_ACK ? -EACCES : -ECONNREFUSED);
	/* The exit reaches every proxy (linked): each stops with it. The
	 * runtime cancels our receive and send; destroy closes the fd. */
	ura_exit(cx, URA_NOCONNECTION, URA_NOVALUE);
}

static int hs_up(ura_ctx *cx, struct conn *c)
{
	struct ura_dist *d = c->d;
	pthread_mutex_lock(&d->mu);
	struct peer *p = c->peer ? c->peer : peer_get_locked(d, c->peer_name);
	if (p) {
		p->conn = ura_self(cx);
		p->flags = c->peer_flags;
		p->up = 1;
		if (p->result == 1)
			p->result = 0;
		pthread_cond_broadcast(&d->cv);
	}
	pthread_mutex_unlock(&d->mu);
	if (!p)
		return -ENOMEM;
	c->peer = p;
	c->phase = P_UP;
	dlog(d, URA_LOG_INFO, "connected to %s", c->peer_name);
	return 0;
}

/* One handshake message (without its length); 0, or -1 after conn_lost. */
/* The peer's answer to our challenge, against ours: 0, or -1 with the
 * connection lost (a wrong cookie). */
static int hs_digest_ok(ura_ctx *cx, struct conn *c, const uint8_t *got)
{
	unsigned char dg[16];
	digest(c->d, c->my_challenge, dg);
	if (!memcmp(dg, got, 16))
		return 0;
	conn_lost(cx, "wrong cookie (its digest does not match ours): refused");
	return -1;
}

/* The flags of the peer's name or challenge message (at p + 1): 0, or -1
 * with the connection lost when it lacks one this node needs. */
static int hs_flags(ura_ctx *cx, struct conn *c, const uint8_t *p)
{
	c->peer_flags = (uint64_t)get32(p + 1) << 32 | get32(p + 5);
	if ((c->peer_flags & NEED_FLAGS) == NEED_FLAGS)
		return 0;
	conn_lost(cx, "the peer lacks flags this node needs");
	return -1;
}

static int hs_msg(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n)
{
	struct ura_dist *d = c->d;
	uint8_t b[HS_MAX];
	switch (c->phase) {
	case P_A_NAME: {
		if (n >= 1 && p[0] == 'n') {
			conn_lost(cx, "the peer speaks the old handshake (version 5) only");
			return -1;
		}
		if (n < 15 || p[0] != 'N') {
			conn_lost(cx, "malformed name message");
			return -1;
		}
		c->peer_creation = get32(p + 9);
		size_t nl = get16(p + 13);
		if (nl + 15 > n || nl >= sizeof c->peer_name) {
			conn_lost(cx, "malformed name message");
			return -1;
		}
		memcpy(c->peer_name, p + 15, nl);
		c->peer_name[nl] = 0;
		if (hs_flags(cx, c, p) < 0)
			return -1;
		pthread_mutex_lock(&d->mu);
		struct peer *pe = peer_find_locked(d, c->peer_name);
		int busy = pe && (pe->up || pe->result == 1);
		pthread_mutex_unlock(&d->mu);
		if (busy) {
			hs_write(cx, c, (const uint8_t *)"snok", 4);
			conn_lost(cx, "already connected");
			return -1;
		}
		hs_write(cx, c, (const uint8_t *)"sok", 3);
		c->my_challenge = random32();
		hs_write(cx, c, b, name_msg(c, b, 1));
		c->phase = P_A_REPLY;
		return 0;
	}
	case P_A_REPLY:
		if (n != 21 || p[0] != 'r') {
			conn_lost(cx, "malformed challenge reply");
			return -1;
		}
		if (hs_digest_ok(cx, c, p + 5) < 0)
			return -1;
		c->peer_challenge = get32(p + 1);
		b[0] = 'a';
		digest(d, c->peer_challenge, b + 1);
		hs_write(cx, c, b, 17);
		return hs_up(cx, c) < 0 ? (conn_lost(cx, "out of memory"), -1) : 0;
	case P_I_STATUS:
		if (n < 3 || p[0] != 's') {
			conn_lost(cx, "malformed status");
			return -1;
		}
		if (!(n == 3 && !memcmp(p, "sok", 3)) && !(n == 16 && !memcmp(p + 1, "ok_simultaneous", 15))) {
			conn_lost(cx, "the peer refused the connection (status not ok)");
			return -1;
		}
		c->phase = P_I_CHALLENGE;
		return 0;
	case P_I_CHALLENGE: {
		if (n < 19 || p[0] != 'N') {
			conn_lost(cx, "malformed challenge");
			return -1;
		}
		c->peer_challenge = get32(p + 9);
		c->peer_creation = get32(p + 13);
		if (hs_flags(cx, c, p) < 0)
			return -1;
		c->my_challenge = random32();
		b[0] = 'r';
		put32(b + 1, c->my_challenge);
		digest(d, c->peer_challenge, b + 5);
		hs_write(cx, c, b, 21);
		c->phase = P_I_ACK;
		return 0;
	}
	case P_I_ACK:
		if (n != 17 || p[0] != 'a') {
			conn_lost(cx, "malformed acknowledgement");
			return -1;
		}
		if (hs_digest_ok(cx, c, p + 1) < 0)
			return -1;
		return hs_up(cx, c) < 0 ? (conn_lost(cx, "out of memory"), -1) : 0;
	}
	conn_lost(cx, "handshake message after the handshake");
	return -1;
}

/* Drops message `what` with a log line (the first few per connection). */
static void refuse(struct conn *c, const char *why)
{
	if (c->refused++ < LOG_REFUSED_MAX)
		dlog(c->d, URA_LOG_WARN, "message from %s dropped: %s%s", c->peer_name, why,
		     c->refused == LOG_REFUSED_MAX ? " (no more such lines for this connection)" : "");
}

static const char *dec_value(ura_ctx *cx, struct conn *c, const char *buf, int *idx,
			     struct scratch *s, ura_value *v)
{
	int type, size;
	if (ei_get_type(buf, idx, &type, &size) < 0)
		return "undecodable value";
	memset(v, 0, sizeof *v);
	switch (type) {
	case ERL_SMALL_INTEGER_EXT:
	case ERL_INTEGER_EXT:
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT: {
		long long x;
		if (ei_decode_longlong(buf, idx, &x) < 0)
			return "an integer outside int64";
		*v = ura_v_i64(x);
		return NULL;
	}
	case ERL_FLOAT_EXT:
	case NEW_FLOAT_EXT: {
		double x;
		if (ei_decode_double(buf, idx, &x) < 0)
			return "undecodable float";
		*v = ura_v_f64(x);
		return NULL;
	}
	case ERL_ATOM_EXT:
	case ERL_SMALL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT: {
		char a[MAXATOMLEN_UTF8];
		ura_atom at;
		if (ei_decode_atom(buf, idx, a) < 0)
			return "undecodable atom";
		if (!strcmp(a, "noconnection"))
			at = URA_NOCONNECTION;
		else if (ura_atom_from(a, &at) < 0)
			return "an atom that is no ura atom (over 10 characters, or not [0-9A-Za-z_])";
		*v = ura_v_atom(at);
		return NULL;
	}
	case ERL_PID_EXT:
	case ERL_NEW_PID_EXT: {
		erlang_pid p;
		if (ei_decode_pid(buf, idx, &p) < 0)
			return "undecodable pid";
		ura_ref r;
		if (!strcmp(p.node, c->d->node))
			r = ref_of_pid(c->d, &p);
		else if (!strcmp(p.node, c->peer_name))
			r = proxy_for(cx, c, &p);
		else
			return "a pid of a third node";
		if (ura_ref_null(r) && strcmp(p.node, c->d->node))
			return "no proxy for a pid (out of memory)";
		*v = ura_v_ref(r);
		return NULL;
	}
	case ERL_BINARY_EXT:
		*v = ura_v_bytes(buf + *idx + 5, (size_t)size);
		*idx += 5 + size;
		return NULL;
	case ERL_NIL_EXT:
	case ERL_STRING_EXT:
	case ERL_LIST_EXT: {
		char *out = s->p + s->len;
		size_t len = 0, cap = s->cap - s->len;
		if (!cap || iolist(buf, idx, out, &len, cap - 1, 0) < 0)
			return "a list that is no string or iolist";
		out[len] = 0;
		s->len += len + 1;
		if (memchr(out, 0, len))
			*v = ura_v_bytes(out, len);
		else
			*v = ura_v_str(out);
		return NULL;
	}
	default:
		return "a term ura has no value for (tuple, map, fun, ref, port, ...)";
	}
}

/* The message term at *idx as tag and values; NULL, or why not. */
static const char *dec_msg(ura_ctx *cx, struct conn *c, const char *buf, int *idx,
			   ura_atom *tag, ura_value *vals, unsigned *n)
{
	int type, size, arity;
	char a[MAXATOMLEN_UTF8];
	if (ei_get_type(buf, idx, &type, &size) < 0)
		return "undecodable";
	if (type == ERL_ATOM_EXT || type == ERL_SMALL_ATOM_EXT || type == ERL_ATOM_UTF8_EXT ||
	    type == ERL_SMALL_ATOM_UTF8_EXT) {
		arity = 1;
	} else if (type == ERL_SMALL_TUPLE_EXT || type == ERL_LARGE_TUPLE_EXT) {
		if (ei_decode_tuple_header(buf, idx, &arity) < 0 || arity < 1)
			return "an empty tuple";
		if (arity > URA_MAX_VALUES + 1)
			return "a tuple of more than 17 elements";
	} else {
		return "neither an atom nor a tuple {Atom, ...}";
	}
	if (ei_get_type(buf, idx, &type, &size) < 0 ||
	    !(type == ERL_ATOM_EXT || type == ERL_SMALL_ATOM_EXT || type == ERL_ATOM_UTF8_EXT ||
	      type == ERL_SMALL_ATOM_UTF8_EXT) ||
	    ei_decode_atom(buf, idx, a) < 0)
		return "a tuple whose first element is no atom";
	if (ura_atom_from(a, tag) < 0)
		return "a tag that is no ura atom (over 10 characters, or not [0-9A-Za-z_])";
	*n = (unsigned)arity - 1;
	for (unsigned i = 0; i < *n; i++) {
		const char *why = dec_value(cx, c, buf, idx, &c->scr, &vals[i]);
		if (why)
			return why;
	}
	return NULL;
}

/* An exit reason: an atom, {Atom, Value}, else `other` with the text. */
static void dec_reason(ura_ctx *cx, struct conn *c, const char *buf, int *idx,
		       ura_atom *reason, ura_value *value, char **text)
{
	int start = *idx, type, size, arity;
	char a[MAXATOMLEN_UTF8];
	*text = NULL;
	memset(value, 0, sizeof *value);
	/* Room for a string value; a longer one (or none, without memory:
	 * the scratch stays as it was, bounded) arrives as `other`. */
	(void)scratch_reserve(&c->scr, 65536);
	if (ei_get_type(buf, idx, &type, &size) == 0) {
		if ((type == ERL_ATOM_EXT || type == ERL_SMALL_ATOM_EXT || type == ERL_ATOM_UTF8_EXT ||
		     type == ERL_SMALL_ATOM_UTF8_EXT) && ei_decode_atom(buf, idx, a) == 0) {
			if (!strcmp(a, "noconnection")) {
				*reason = URA_NOCONNECTION;
				return;
			}
			if (ura_atom_from(a, reason) == 0)
				return;
		} else if ((type == ERL_SMALL_TUPLE_EXT) && size == 2 &&
			   ei_decode_tuple_header(buf, idx, &arity) == 0 &&
			   ei_decode_atom(buf, idx, a) == 0 && ura_atom_from(a, reason) == 0 &&
			   !dec_value(cx, c, buf, idx, &c->scr, value)) {
			return;
		}
	}
	*idx = start;
	*reason = A_OTHER;
	memset(value, 0, sizeof *value);
	if (ei_s_print_term(text, buf, idx) >= 0 && *text)
		*value = ura_v_str(*text);
	*idx = start;
	ei_skip_term(buf, idx);
}

/* Sends a frame of control tuple `op` with payload reason (EXIT_PAYLOAD
 * form if the peer has it) from pid `from` to pid `to`. */
/* The frame of an exit signal from `from` to `to`, into x (freed on
 * failure): 0, -ENOMEM or -EINVAL. */
static int enc_exitish(struct ura_dist *d, ei_x_buff *x, uint64_t peer_flags, int op_payload,
		       int op_old, const erlang_pid *from, const erlang_pid *to, ura_atom reason,
		       const ura_value *value)
{
	if (frame_begin(x) < 0)
		return -ENOMEM;
	int payload = (peer_flags & F_EXIT_PAYLOAD) != 0;
	int rc = ei_x_encode_tuple_header(x, payload ? 3 : 4) |
		 ei_x_encode_long(x, payload ? op_payload : op_old) |
		 ei_x_encode_pid(x, from) | ei_x_encode_pid(x, to);
	if (!payload)
		rc |= enc_reason(d, x, reason, value);
	else
		rc |= ei_x_encode_version(x) | enc_reason(d, x, reason, value);
	if (rc < 0) {
		ei_x_free(x);
		return -EINVAL;
	}
	frame_end(x);
	return 0;
}

static int send_exitish(ura_ctx *cx, struct ura_dist *d, ura_ref conn, uint64_t peer_flags,
			int op_payload, int op_old, const erlang_pid *from, const erlang_pid *to,
			ura_atom reason, const ura_value *value)
{
	ei_x_buff x;
	int rc = enc_exitish(d, &x, peer_flags, op_payload, op_old, from, to, reason, value);
	if (rc < 0)
		return rc;
	rc = ura_send(cx, conn, T_OUT, ura_v_bytes(x.buff, (size_t)x.index));
	ei_x_free(&x);
	return rc;
}

static ura_ref proxy_spawn(ura_ctx *cx, ura_system *sys, const struct proxy_arg *a);

static uint64_t pid_key(const erlang_pid *p)
{
	return 1ull << 63 | (uint64_t)p->creation << 28 | (uint64_t)(p->serial & 0x1fff) << 15 |
	       (p->num & 0x7fff);
}

static ura_ref proxy_find(struct conn *c, const erlang_pid *p)
{
	uint64_t v;
	if (map_get(&c->proxies, pid_key(p), &v))
		return (ura_ref){ v };
	return URA_NOREF;
}

/* A signal frame (p, n) about local actor `who` for process `to` of our
 * peer (a DOWN for its monitor, an EXIT for its link). Erlang delivers a
 * signal after every message its sender sent the process before it; who's
 * messages to `to` went through to's proxy (a local send: in order with
 * who's stop, which sent us the DOWN or EXIT we are turning into this), so
 * the signal goes the same way: the proxy passes it back as its next T_OUT,
 * after theirs. Straight out when the process has no proxy (then nothing
 * of who's can be on its way to it). */
static void conn_signal(ura_ctx *cx, struct conn *c, const erlang_pid *to, ura_ref who,
			const void *p, size_t n)
{
	ura_ref px = proxy_find(c, to);
	ura_value v[2] = { ura_v_bytes(p, n), ura_v_ref(who) };
	if (!ura_ref_null(px) && ura_sendv_ctx(cx, px, T_RELAY, v, 2) == 0)
		return;
	conn_write_from(cx, c, p, n, who);
}

/* MONITOR_P from proxy px of process p: written by the connection as it
 * makes the proxy, so that the monitor is on the wire before anything
 * sent after the pid arrived here (the proxy would send it only once it
 * ran, after what others may have sent meanwhile). */
static void proxy_monitor(ura_ctx *cx, struct conn *c, ura_ref px, const erlang_pid *p)
{
	struct ura_dist *d = c->d;
	erlang_pid self;
	erlang_ref ref;
	if (local_pid(d, px, &self) < 0)
		return;
	memset(&ref, 0, sizeof ref);
	snprintf(ref.node, sizeof ref.node, "%s", d->node);
	ref.len = 3;
	pthread_mutex_lock(&d->mu);
	ref.n[0] = ++d->next_ref & 0x3ffff;
	pthread_mutex_unlock(&d->mu);
	ref.n[1] = (unsigned)px.id;
	ref.n[2] = (unsigned)(px.id >> 32);
	ref.creation = d->creation;
	ei_x_buff x;
	if (frame_begin(&x) < 0)
		return;
	int rc = ei_x_encode_tuple_header(&x, 4) | ei_x_encode_long(&x, OP_MONITOR_P) |
		 ei_x_encode_pid(&x, &self) | ei_x_encode_pid(&x, p) | ei_x_encode_ref(&x, &ref);
	if (rc == 0) {
		frame_end(&x);
		conn_write(cx, c, x.buff, (size_t)x.index);
	}
	ei_x_free(&x);
}

/* The proxy of process p of our peer, made on first sight. */
static ura_ref proxy_for(ura_ctx *cx, struct conn *c, const erlang_pid *p)
{
	ura_ref r = proxy_find(c, p);
	if (!ura_ref_null(r) || p->num > 0x7fff || p->serial > 0x1fff)
		return r;
	struct proxy_arg a = { .d = c->d, .peer = c->peer, .conn = ura_self(cx),
			       .peer_flags = c->peer_flags, .node = c->peer_name, .num = p->num,
			       .serial = p->serial,
			       .creation = p->creation };
	r = proxy_spawn(cx, NULL, &a);
	if (ura_ref_null(r))
		return r;
	if (map_put(&c->proxies, pid_key(p), r.id) < 0 ||
	    map_put(&c->proxy_key, r.id, pid_key(p)) < 0) {
		map_del(&c->proxies, pid_key(p));
		ura_kill(cx, r, URA_KILL);
		return URA_NOREF;
	}
	proxy_monitor(cx, c, r, p);
	return r;
}

/* The local actor a control message names: a pid, or a registered name. */
static ura_ref dec_target(struct conn *c, const char *buf, int *idx)
{
	int type, size;
	if (ei_get_type(buf, idx, &type, &size) < 0)
		return URA_NOREF;
	if (type == ERL_PID_EXT || type == ERL_NEW_PID_EXT) {
		erlang_pid p;
		if (ei_decode_pid(buf, idx, &p) < 0)
			return URA_NOREF;
		return ref_of_pid(c->d, &p);
	}
	char a[MAXATOMLEN_UTF8];
	ura_atom at;
	if (ei_decode_atom(buf, idx, a) < 0) {
		ei_skip_term(buf, idx);
		return URA_NOREF;
	}
	if (ura_atom_from(a, &at) < 0)
		return URA_NOREF;
	return ura_whereis(c->d->sys, at);
}

static void deliver(ura_ctx *cx, struct conn *c, ura_ref to, const char *buf, int *idx,
		    size_t msg_room)
{
	ura_atom tag;
	ura_value vals[URA_MAX_VALUES];
	unsigned n = 0;
	if (ura_ref_null(to)) {
		/* Erlang drops a send to a dead pid or a free name silently. */
		return;
	}
	if (scratch_reserve(&c->scr, msg_room + 1) < 0) {
		refuse(c, "out of memory");
		return;
	}
	const char *why = dec_msg(cx, c, buf, idx, &tag, vals, &n);
	if (why) {
		refuse(c, why);
		return;
	}
	int rc = ura_sendv_ctx(cx, to, tag, vals, n);
	if (rc < 0 && rc != -ESRCH)
		refuse(c, ura_strerror(rc));
}

static int emon_add(struct conn *c, ura_mon mon, const char *buf, int from, int to, int ref,
		    int end)
{
	if (c->nemons == c->emons_cap) {
		size_t cap = c->emons_cap ? 2 * c->emons_cap : 16;
		struct emon *ne = ura__realloc(c->emons, cap * sizeof *ne);
		if (!ne)
			return -ENOMEM;
		c->emons = ne;
		c->emons_cap = cap;
	}
	struct emon *e = &c->emons[c->nemons];
	e->raw = ura__malloc((size_t)(end - from));
	if (!e->raw)
		return -ENOMEM;
	memcpy(e->raw, buf + from, (size_t)(end - from));
	e->mon = mon;
	e->from_len = (uint32_t)(to - from);
	e->to_len = (uint32_t)(ref - to);
	e->ref_len = (uint32_t)(end - ref);
	c->nemons++;
	return 0;
}

static void emon_del(struct conn *c, size_t i)
{
	free(c->emons[i].raw);
	c->emons[i] = c->emons[--c->nemons];
}

static int elink_add(ura_ctx *cx, struct conn *c, ura_ref local, const erlang_pid *p)
{
	int held = 0;
	for (size_t i = 0; i < c->nelinks; i++) {
		struct elink *e = &c->elinks[i];
		if (e->local.id != local.id)
			continue;
		held = 1;
		if (e->num == p->num && e->serial == p->serial && e->creation == p->creation)
			return 0; /* linked already */
	}
	if (c->nelinks == c->elinks_cap) {
		size_t cap = c->elinks_cap ? 2 * c->elinks_cap : 8;
		struct elink *ne = ura__realloc(c->elinks, cap * sizeof *ne);
		if (!ne)
			return -ENOMEM;
		c->elinks = ne;
		c->elinks_cap = cap;
	}
	if (!held && ura_link(cx, local) < 0)
		return -ENOMEM;
	c->elinks[c->nelinks++] = (struct elink){ .local = local, .num = p->num,
						   .serial = p->serial, .creation = p->creation };
	return 0;
}

/* Drops the link of process p to local; 1 if there was one. */
static int elink_del(ura_ctx *cx, struct conn *c, ura_ref local, const erlang_pid *p)
{
	int found = 0, left = 0;
	for (size_t i = 0; i < c->nelinks;) {
		struct elink *e = &c->elinks[i];
		if (e->local.id == local.id && e->num == p->num && e->serial == p->serial &&
		    e->creation == p->creation) {
			*e = c->elinks[--c->nelinks];
			found = 1;
			continue;
		}
		left |= e->local.id == local.id;
		i++;
	}
	if (found && !left)
		ura_unlink(cx, local);
	return found;
}

/* Tells a proxy that its process went, with this reason. */
static void send_rdown(ura_ctx *cx, ura_ref px, ura_atom reason, const ura_value *value)
{
	ura_value v[2] = { ura_v_atom(reason), *value };
	ura_sendv_ctx(cx, px, T_RDOWN, v, value->type ? 2 : 1);
}

/* The control message of one frame; 0, or -1 for a malformed one. */
static int control(ura_ctx *cx, struct conn *c, const char *buf, int len, int msg_at)
{
	struct ura_dist *d = c->d;
	int idx = 0, ver, arity;
	long op;
	if (ei_decode_version(buf, &idx, &ver) < 0 || ei_decode_tuple_header(buf, &idx, &arity) < 0 ||
	    arity < 1 || ei_decode_long(buf, &idx, &op) < 0)
		return -1;
	int has_msg = msg_at < len;
	int midx = msg_at;
	erlang_pid from, to;
	ura_atom reason;
	ura_value value;
	char *text = NULL;
	switch (op) {
	case OP_SEND:
	case OP_SEND_TT:
	case OP_SEND_SENDER:
	case OP_SEND_SENDER_TT: {
		if (arity < 3 || !has_msg || ei_skip_term(buf, &idx) < 0)
			return -1;
		ura_ref target = dec_target(c, buf, &idx);
		if (ei_decode_version(buf, &midx, &ver) < 0)
			return -1;
		deliver(cx, c, target, buf, &midx, (size_t)(len - msg_at));
		return 0;
	}
	case OP_REG_SEND:
	case OP_REG_SEND_TT: {
		if (arity < 4 || !has_msg || ei_skip_term(buf, &idx) < 0 || ei_skip_term(buf, &idx) < 0)
			return -1;
		ura_ref target = dec_target(c, buf, &idx);
		if (ei_decode_version(buf, &midx, &ver) < 0)
			return -1;
		deliver(cx, c, target, buf, &midx, (size_t)(len - msg_at));
		return 0;
	}
	case OP_MONITOR_P: {
		/* {19, FromPid, ToProc, Ref} */
		if (arity != 4)
			return -1;
		int f0 = idx;
		if (ei_skip_term(buf, &idx) < 0)
			return -1;
		int t0 = idx;
		ura_ref target = dec_target(c, buf, &idx);
		idx = t0;
		if (ei_skip_term(buf, &idx) < 0)
			return -1;
		int r0 = idx;
		if (ei_skip_term(buf, &idx) < 0)
			return -1;
		ura_mon mon = ura_monitor(cx, target);
		if (mon < 0 || emon_add(c, mon, buf, f0, t0, r0, idx) < 0) {
			if (mon > 0)
				ura_demonitor(cx, mon);
			refuse(c, "a monitor: out of memory");
		}
		return 0;
	}
	case OP_DEMONITOR_P: {
		if (arity != 4 || ei_skip_term(buf, &idx) < 0 || ei_skip_term(buf, &idx) < 0)
			return -1;
		int r0 = idx;
		if (ei_skip_term(buf, &idx) < 0)
			return -1;
		for (size_t i = 0; i < c->nemons; i++) {
			struct emon *e = &c->emons[i];
			if (e->ref_len == (uint32_t)(idx - r0) &&
			    !memcmp(e->raw + e->from_len + e->to_len, buf + r0, e->ref_len)) {
				ura_demonitor(cx, e->mon);
				emon_del(c, i);
				break;
			}
		}
		return 0;
	}
	case OP_MONITOR_P_EXIT:
	case OP_PAYLOAD_MONITOR_P_EXIT: {
		/* {21, FromProc, ToPid, Ref, Reason} or {28, ...} + Reason:
		 * a proxy's process went. */
		if (ei_skip_term(buf, &idx) < 0 || ei_decode_pid(buf, &idx, &to) < 0 ||
		    ei_skip_term(buf, &idx) < 0)
			return -1;
		if (op == OP_MONITOR_P_EXIT) {
			if (arity != 5)
				return -1;
		} else {
			if (arity != 4 || !has_msg || ei_decode_version(buf, &midx, &ver) < 0)
				return -1;
			idx = midx;
		}
		ura_ref px = ref_of_pid(d, &to);
		dec_reason(cx, c, buf, &idx, &reason, &value, &text);
		if (!ura_ref_null(px))
			send_rdown(cx, px, reason, &value);
		free(text);
		return 0;
	}
	case OP_LINK:
	case OP_UNLINK: {
		if (arity != 3 || ei_decode_pid(buf, &idx, &from) < 0 || ei_decode_pid(buf, &idx, &to) < 0)
			return -1;
		ura_ref local = ref_of_pid(d, &to);
		if (op == OP_UNLINK) {
			elink_del(cx, c, local, &from);
			return 0;
		}
		if (ura_ref_null(local) || elink_add(cx, c, local, &from) < 0)
			send_exitish(cx, d, ura_self(cx), c->peer_flags, OP_PAYLOAD_EXIT, OP_EXIT, &to,
				     &from, ura_ref_null(local) ? URA_NOPROC : URA_NOMEM, NULL);
		return 0;
	}
	case OP_EXIT:
	case OP_EXIT_TT:
	case OP_PAYLOAD_EXIT:
	case OP_PAYLOAD_EXIT_TT:
	case OP_EXIT2:
	case OP_EXIT2_TT:
	case OP_PAYLOAD_EXIT2:
	case OP_PAYLOAD_EXIT2_TT: {
		int payload = op >= OP_PAYLOAD_EXIT;
		if (ei_decode_pid(buf, &idx, &from) < 0 || ei_decode_pid(buf, &idx, &to) < 0)
			return -1;
		if (op == OP_EXIT_TT || op == OP_EXIT2_TT || op == OP_PAYLOAD_EXIT_TT ||
		    op == OP_PAYLOAD_EXIT2_TT)
			if (ei_skip_term(buf, &idx) < 0)
				return -1;
		if (payload) {
			if (!has_msg || ei_decode_version(buf, &midx, &ver) < 0)
				return -1;
			idx = midx;
		}
		dec_reason(cx, c, buf, &idx, &reason, &value, &text);
		ura_ref local = ref_of_pid(d, &to);
		if (op == OP_EXIT || op == OP_EXIT_TT || op == OP_PAYLOAD_EXIT ||
		    op == OP_PAYLOAD_EXIT_TT) {
			/* A link broke: its process went. The local end gets
			 * the exit signal (trappable, as a link's is). */
			if (elink_del(cx, c, local, &from))
				ura_kill_ctx(cx, local, reason == URA_KILL ? URA_KILLED : reason, value);
			ura_ref px = proxy_find(c, &from);
			if (!ura_ref_null(px))
				send_rdown(cx, px, reason, &value);
		} else if (!ura_ref_null(local)) {
			/* exit(Pid, Reason) */
			ura_kill_ctx(cx, local, reason, value);
		}
		free(text);
		return 0;
	}
	default:
		/* Spawn requests, aliases, ...: not offered, so not expected. */
		refuse(c, "a control message this node does not take");
		return 0;
	}
}

/* One frame after the handshake (without its length); 0, or -1 after
 * conn_lost. */
static int frame_pt(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n);

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

/* The body after a distribution header with no atom cache references:
 * the control term and the message term without their version bytes.
 * Made into the pass-through layout the decoder takes, at *out; `more`:
 * a first fragment, whose message goes on in the next ones (its version
 * byte is written even when none of it is here yet). */
static int hdr_to_pt(const uint8_t *body, size_t n, int more, uint8_t **out, size_t *cap,
		     size_t *len)
{
	size_t pos = 0;
	if (ura__dist_term_check_bare(body, n, &pos) < 0)
		return -EPROTO;
	size_t ctl = pos;
	if (grow(out, cap, n + 3, 4096) < 0)
		return -ENOMEM;
	uint8_t *o = *out;
	o[0] = 112;
	o[1] = 131;
	memcpy(o + 2, body, ctl);
	*len = 2 + ctl;
	if (ctl < n || more) {
		o[*len] = 131;
		memcpy(o + *len + 1, body + ctl, n - ctl);
		*len += 1 + n - ctl;
	}
	return 0;
}

/* A whole message after a header (68, or 69 of one fragment). */
static int frame_whole(ura_ctx *cx, struct conn *c, const uint8_t *body, size_t n)
{
	size_t len;
	if (hdr_to_pt(body, n, 0, &c->whole, &c->whole_cap, &len) < 0) {
		conn_lost(cx, "malformed control term");
		return -1;
	}
	return frame_pt(cx, c, c->whole, len);
}

static struct rfrag *rfrag_find(struct conn *c, uint64_t seq)
{
	for (unsigned i = 0; i < c->nrfrags; i++)
		if (c->rfrags[i].seq == seq)
			return &c->rfrags[i];
	return NULL;
}

static void rfrag_end(struct conn *c, struct rfrag *f)
{
	c->rfrag_bytes -= f->len;
	free(f->buf);
	*f = c->rfrags[--c->nrfrags];
	memset(&c->rfrags[c->nrfrags], 0, sizeof c->rfrags[0]);
}

/* A frame that starts with a distribution header (a peer that has our
 * F_FRAGMENTS may send them): 68, a whole message; 69, the first
 * fragment of one; 70, the next. We offered no atom cache, so a header
 * that references one is malformed. Fragments are put together per
 * sequence, within FRAG_SEQ_MAX sequences and FRAG_BYTES_MAX bytes; the
 * whole message then goes the pass-through way. */
static int frame_hdr(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n)
{
	/* The header's length: [131][68][refs], [131][69][seq][id][refs],
	 * [131][70][seq][id]. */
	size_t hl = p[1] == 68 ? 3 : p[1] == 69 ? 19 : p[1] == 70 ? 18 : 0;
	const char *bad = NULL;
	if (!hl || n < hl) {
		bad = "malformed frame (neither pass-through nor a distribution header)";
	} else if (p[1] != 70 && p[hl - 1] != 0) {
		bad = "malformed frame (an atom cache reference, which we never offered)";
	} else if (p[1] == 68) {
		return frame_whole(cx, c, p + hl, n - hl);
	} else if (p[1] == 69) {
		uint64_t seq = get64(p + 2), id = get64(p + 10);
		if (id == 0 || rfrag_find(c, seq))
			bad = "malformed fragment (a fragment id of 0, or a sequence already open)";
		else if (id == 1) /* one fragment: a whole message */
			return frame_whole(cx, c, p + hl, n - hl);
		else if (c->nrfrags == FRAG_SEQ_MAX)
			bad = "over 64 fragmented messages in progress at once";
		else {
			/* The first fragment holds the whole control term and the
			 * message's start: laid out as pass-through now. */
			struct rfrag *f = &c->rfrags[c->nrfrags];
			size_t len = 0;
			int rc = hdr_to_pt(p + hl, n - hl, 1, &f->buf, &f->cap, &len);
			if (rc < 0)
				bad = rc == -ENOMEM ? "out of memory" : "malformed first fragment";
			else if (c->rfrag_bytes + len > FRAG_BYTES_MAX)
				bad = "fragmented messages over 64 MiB in progress at once";
			if (bad) {
				free(f->buf);
				memset(f, 0, sizeof *f);
			} else {
				if (!c->frag_seen) {
					c->frag_seen = 1;
					dlog(c->d, URA_LOG_INFO, "%s sends large messages in fragments "
					     "(the first in %llu)", c->peer_name, (unsigned long long)id);
				}
				f->seq = seq;
				f->next = id - 1;
				f->len = len;
				c->rfrag_bytes += len;
				c->nrfrags++;
				return 0;
			}
		}
	} else {
		uint64_t seq = get64(p + 2), id = get64(p + 10);
		struct rfrag *f = rfrag_find(c, seq);
		size_t k = n - hl;
		if (!f || id != f->next)
			bad = "malformed fragment (no such sequence, or out of order)";
		else if (f->len + k > URA_MSG_MAX + 8 || c->rfrag_bytes + k > FRAG_BYTES_MAX)
			bad = "a fragmented message over URA_MSG_MAX, or over 64 MiB in progress";
		else if (grow(&f->buf, &f->cap, f->len + k, 4096) < 0)
			bad = "out of memory";
		else {
			memcpy(f->buf + f->len, p + hl, k);
			f->len += k;
			c->rfrag_bytes += k;
			f->next--;
			if (f->next > 0)
				return 0;
			/* The last one: the message is whole. Taken out of
			 * the table first (the frame may close the connection). */
			uint8_t *buf = f->buf;
			size_t len = f->len;
			f->buf = NULL;
			f->len = 0;
			rfrag_end(c, f);
			int rc = frame_pt(cx, c, buf, len);
			free(buf);
			return rc;
		}
	}
	conn_lost(cx, bad);
	return -1;
}

/* Fragments agreed: both offered them. */
static int frags_on(const struct conn *c)
{
	return (c->peer_flags & OUR_FLAGS & F_FRAGMENTS) != 0;
}

static int frame(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n)
{
	if (n >= 2 && p[0] == 131 && frags_on(c))
		return frame_hdr(cx, c, p, n);
	return frame_pt(cx, c, p, n);
}

static int frame_pt(ura_ctx *cx, struct conn *c, const uint8_t *p, size_t n)
{
	if (n > (size_t)INT32_MAX || n < 2 || p[0] != 112) {
		conn_lost(cx, "malformed frame (not a pass-through message)");
		return -1;
	}
	size_t pos = 1;
	if (ura__dist_term_check(p, n, &pos) < 0) {
		conn_lost(cx, "malformed control term");
		return -1;
	}
	size_t msg_at = pos;
	if (pos < n && (ura__dist_term_check(p, n, &pos) < 0 || pos != n)) {
		conn_lost(cx, "malformed message term");
		return -1;
	}
	if (control(cx, c, (const char *)p + 1, (int)(n - 1), (int)(msg_at - 1)) < 0) {
		conn_lost(cx, "malformed control message");
		return -1;
	}
	return 0;
}

static void conn_recv(ura_ctx *cx, struct conn *c)
{
	if (c->closing)
		return;
	if (ura_io_recv(cx, T_RECV, c->fd, RECV_LEN, 0) < 0)
		conn_lost(cx, "receive failed");
}

static void on_conn_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct conn *c = ura_state(cx);
	ura_trap_exit(cx, 1);
	c->last_rx = ura__now_ns();
	if (c->phase == P_I_STATUS) {
		uint8_t b[HS_MAX];
		hs_write(cx, c, b, name_msg(c, b, 0));
	}
	conn_recv(cx, c);
	ura_send_after(cx, ura_self(cx), c->d->tick_ns / 4, T_TICK);
}

static void on_conn_recv(ura_ctx *cx, const ura_msg *m)
{
	struct conn *c = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	size_t len;
	const void *data = ura_arg_bytes(m, 1, &len);
	if (c->closing)
		return;
	if (res <= 0) {
		conn_lost(cx, c->phase == P_I_ACK ? "the peer closed the connection on our digest: "
			      "a wrong cookie, most likely" : res == 0 ? "closed by the peer"
			      : ura_strerror((int)res));
		return;
	}
	c->last_rx = ura__now_ns();
	if (grow(&c->in, &c->in_cap, c->in_len + len, RECV_LEN * 2) < 0) {
		conn_lost(cx, "out of memory");
		return;
	}
	memcpy(c->in + c->in_len, data, len);
	c->in_len += len;
	size_t at = 0;
	for (;;) {
		size_t left = c->in_len - at;
		const uint8_t *p = c->in + at;
		if (c->phase != P_UP) {
			if (left < 2)
				break;
			size_t fl = get16(p);
			if (fl == 0 || fl > HS_MAX) {
				conn_lost(cx, "malformed handshake length");
				return;
			}
			if (left < 2 + fl)
				break;
			if (hs_msg(cx, c, p + 2, fl) < 0)
				return;
			at += 2 + fl;
		} else {
			if (left < 4)
				break;
			size_t fl = get32(p);
			if (fl > URA_MSG_MAX) {
				conn_lost(cx, "frame over URA_MSG_MAX");
				return;
			}
			if (left < 4 + fl)
				break;
			if (fl && frame(cx, c, p + 4, fl) < 0)
				return;
			at += 4 + fl;
		}
	}
	memmove(c->in, c->in + at, c->in_len - at);
	c->in_len -= at;
	conn_recv(cx, c);
}

/* Back-pressure on a busy link (ura.h): over HOLD_HIGH of output the
 * proxies hold their mailboxes (each as it next forwards, told by
 * peer->busy) and their senders are muted; under HOLD_LOW the ones that
 * held are woken. The connection itself is never muted (URA_CLASS_UNMUTED):
 * it is what drains the output they wait for. */
static void conn_pressure(ura_ctx *cx, struct conn *c)
{
	size_t out = c->out_len + c->big_bytes;
	if (!c->busy && out > HOLD_HIGH) {
		c->busy = 1;
		if (c->peer)
			atomic_store_explicit(&c->peer->busy, 1, memory_order_relaxed);
	} else if (c->busy && out <= HOLD_LOW) {
		c->busy = 0;
		if (c->peer)
			atomic_store_explicit(&c->peer->busy, 0, memory_order_relaxed);
		for (size_t i = 0; i < c->nheld; i++)
			ura_send(cx, c->held[i], T_WAKE);
		c->nheld = 0;
	}
}

/* A proxy holds (it saw peer->busy): woken when the output is low again,
 * or now if it is already. */
static void on_conn_held(ura_ctx *cx, const ura_msg *m)
{
	struct conn *c = ura_state(cx);
	ura_ref px = ura_arg_ref(m, 0);
	if (!c->busy || c->closing) {
		ura_send(cx, px, T_WAKE);
		return;
	}
	if (c->nheld == c->held_cap) {
		size_t cap = c->held_cap ? 2 * c->held_cap : 16;
		ura_ref *h = ura__realloc(c->held, cap * sizeof *h);
		if (!h) {
			ura_send(cx, px, T_WAKE); /* unheld rather than stuck */
			return;
		}
		c->held = h;
		c->held_cap = cap;
	}
	c->held[c->nheld++] = px;
}

static void on_conn_sent(ura_ctx *cx, const ura_msg *m)
{
	struct conn *c = ura_state(cx);
	c->sending = 0;
	if (ura_arg_i64(m, 0) < 0) {
		conn_lost(cx, ura_arg_i64(m, 0) == -ETIME ? "a send timed out (peer not reading)"
							   : "send failed");
		return;
	}
	conn_flush(cx, c);
	conn_pressure(cx, c);
}

static void on_conn_tick(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct conn *c = ura_state(cx);
	if (c->closing)
		return;
	if (ura__now_ns() - c->last_rx > c->d->tick_ns) {
		conn_lost(cx, "no tick from the peer for net_ticktime");
		return;
	}
	if (c->phase == P_UP && !c->sent_since_tick && !c->sending && !c->out_len) {
		static const uint8_t tick[4];
		conn_write(cx, c, tick, 4);
	}
	c->sent_since_tick = 0;
	ura_send_after(cx, ura_self(cx), c->d->tick_ns / 4, T_TICK);
}

static void on_conn_out(ura_ctx *cx, const ura_msg *m)
{
	struct conn *c = ura_state(cx);
	size_t len;
	const void *p = ura_arg_bytes(m, 0, &len);
	/* A proxy's message names its sender (its order is per sender). */
	ura_ref from = ura_msg_count(m) > 1 ? ura_arg_ref(m, 1) : URA_NOREF;
	if (c->phase == P_UP) {
		conn_write_from(cx, c, p, len, from);
		conn_pressure(cx, c);
	}
}

static void on_conn_down(ura_ctx *cx, const ura_msg *m)
{
	struct conn *c = ura_state(cx);
	ura_mon mon = ura_down_monitor(m);
	ura_value v = ura_exit_value(m);
	for (size_t i = 0; i < c->nemons; i++) {
		struct emon *e = &c->emons[i];
		if (e->mon != mon)
			continue;
		ei_x_buff x;
		if (frame_begin(&x) == 0) {
			/* {28, ToProc (as monitored), FromPid, Ref} + Reason:
			 * the MONITOR_P's own terms, from and to swapped. */
			int payload = (c->peer_flags & F_EXIT_PAYLOAD) != 0;
			int rc = ei_x_encode_tuple_header(&x, payload ? 4 : 5) |
				 ei_x_encode_long(&x, payload ? OP_PAYLOAD_MONITOR_P_EXIT
							      : OP_MONITOR_P_EXIT) |
				 ei_x_append_buf(&x, (const char *)e->raw + e->from_len, (int)e->to_len) |
				 ei_x_append_buf(&x, (const char *)e->raw, (int)e->from_len) |
				 ei_x_append_buf(&x, (const char *)e->raw + e->from_len + e->to_len,
						 (int)e->ref_len);
			if (payload)
				rc |= ei_x_encode_version(&x);
			rc |= enc_reason(c->d, &x, ura_exit_reason(m), &v);
			erlang_pid watcher;
			int at = 0;
			if (rc == 0 && ei_decode_pid((const char *)e->raw, &at, &watcher) == 0) {
				frame_end(&x);
				conn_signal(cx, c, &watcher, ura_exit_who(m), x.buff,
					    (size_t)x.index);
			}
			ei_x_free(&x);
		}
		emon_del(c, i);
		return;
	}
}

static void on_conn_exit(ura_ctx *cx, const ura_msg *m)
{
	/* A proxy of ours stopped (its process went): forget it. Or a
	 * local actor that Erlang processes linked to stopped: EXIT to each. */
	struct conn *c = ura_state(cx);
	ura_ref who = ura_exit_who(m);
	uint64_t key;
	if (map_get(&c->proxy_key, who.id, &key)) {
		map_del(&c->proxy_key, who.id);
		map_del(&c->proxies, key);
		return;
	}
	ura_value v = ura_exit_value(m);
	erlang_pid from, to;
	if (local_pid(c->d, who, &from) < 0)
		return;
	snprintf(to.node, sizeof to.node, "%s", c->peer_name);
	for (size_t i = 0; i < c->nelinks;) {
		struct elink *e = &c->elinks[i];
		if (e->local.id != who.id) {
			i++;
			continue;
		}
		to.num = e->num;
		to.serial = e->serial;
		to.creation = e->creation;
		*e = c->elinks[--c->nelinks];
		ei_x_buff x;
		if (enc_exitish(c->d, &x, c->peer_flags, OP_PAYLOAD_EXIT, OP_EXIT, &from, &to,
				ura_exit_reason(m), &v) == 0) {
			conn_signal(cx, c, &to, who, x.buff, (size_t)x.index);
			ei_x_free(&x);
		}
	}
}

static void on_conn_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	conn_lost(cx, "distribution stopped");
}

URA_BEHAVIOR(conn_beh,
	URA_ON(T_START, "", on_conn_start),
	URA_ON(T_RECV, "ib", on_conn_recv),
	URA_ON(T_SENT, "i", on_conn_sent),
	URA_ON(T_TICK, "", on_conn_tick),
	URA_ON(T_OUT, "b", on_conn_out),
	URA_ON(T_OUT, "br", on_conn_out),
	URA_ON(T_HELD, "r", on_conn_held),
	URA_ON_ANY(URA_DOWN, on_conn_down),
	URA_ON_ANY(URA_EXIT, on_conn_exit),
	URA_ON(T_QUIT, "", on_conn_quit));

static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	const struct conn_arg *a = arg;
	struct conn *c = state;
	c->d = a->d;
	c->fd = a->fd;
	c->peer = a->peer;
	c->phase = a->initiator ? P_I_STATUS : P_A_NAME;
	if (a->peer)
		snprintf(c->peer_name, sizeof c->peer_name, "%s", a->peer->name);
	node_hold(c->d);
	return 0;
}

static void conn_destroy(void *state)
{
	struct conn *c = state;
	struct ura_dist *d = c->d;
	if (c->fd >= 0)
		close(c->fd);
	pthread_mutex_lock(&d->mu);
	if (c->peer && c->phase == P_UP) {
		c->peer->up = 0;
		c->peer->conn = URA_NOREF;
	}
	if (c->peer && c->peer->result == 1)
		c->peer->result = -ECONNREFUSED;
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&d->mu);
	while (c->nemons)
		emon_del(c, c->nemons - 1);
	free(c->emons);
	free(c->elinks);
	map_free(&c->proxies);
	map_free(&c->proxy_key);
	free(c->in);
	free(c->out);
	free(c->scr.p);
	while (c->nrfrags)
		rfrag_end(c, &c->rfrags[0]);
	while (c->bigq)
		big_pop(c);
	free(c->whole);
	free(c->held);
	if (c->peer)
		atomic_store_explicit(&c->peer->busy, 0, memory_order_relaxed);
	node_drop(d);
}

static const ura_class conn_class = {
	.name = "ura_dist_conn",
	.state_size = sizeof(struct conn),
	.initial = &conn_beh,
	.init = conn_init,
	.destroy = conn_destroy,
	/* It delivers to local actors, and a mute on one of them would stop
	 * its output's drain, which held proxies and their muted senders
	 * may wait for: a cycle the mute rule cannot see. */
	.flags = URA_CLASS_UNMUTED,
};

/* ---- proxy actor ------------------------------------------------------- */

static int proxy_pid(struct proxy *px, erlang_pid *out)
{
	snprintf(out->node, sizeof out->node, "%s", px->node);
	out->num = px->num;
	out->serial = px->serial;
	out->creation = px->creation;
	return 0;
}

static void on_proxy_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct proxy *px = ura_state(cx);
	ura_trap_exit(cx, 1);
	/* The connection's exit (noconnection) reaches us as an EXIT. */
	ura_link(cx, px->conn);
}

/* The control tuple of a send from `sender` to px's process, into
 * px->ctl: kept while the sender stays the same (a plain SEND names no
 * sender, so one serves all). -1: no memory, or no pid for the sender. */
static int proxy_ctl(struct proxy *px, ura_ref sender)
{
	int any = !px->named && !(px->peer_flags & F_SEND_SENDER);
	if (px->have_ctl && (any || ura_ref_eq(sender, px->ctl_from)))
		return 0;
	erlang_pid from, to;
	if (!any && local_pid(px->d, sender, &from) < 0)
		return -1;
	if (!px->have_ctl) {
		if (ei_x_new(&px->ctl) < 0)
			return -1;
		px->have_ctl = 1;
	}
	ei_x_buff *x = &px->ctl;
	x->index = 0;
	int rc;
	if (px->named) {
		/* {6, FromPid, '', ToName} */
		rc = ei_x_encode_tuple_header(x, 4) | ei_x_encode_long(x, OP_REG_SEND) |
		     ei_x_encode_pid(x, &from) | ei_x_encode_atom(x, "") |
		     ei_x_encode_atom(x, px->name);
	} else if (!any) {
		proxy_pid(px, &to);
		rc = ei_x_encode_tuple_header(x, 3) | ei_x_encode_long(x, OP_SEND_SENDER) |
		     ei_x_encode_pid(x, &from) | ei_x_encode_pid(x, &to);
	} else {
		proxy_pid(px, &to);
		rc = ei_x_encode_tuple_header(x, 3) | ei_x_encode_long(x, OP_SEND) |
		     ei_x_encode_atom(x, "") | ei_x_encode_pid(x, &to);
	}
	if (rc < 0) {
		px->have_ctl = 0;
		ei_x_free(x);
		return -1;
	}
	px->ctl_from = sender;
	return 0;
}

/* The link is busy: hold our mailbox, so that our senders are muted,
 * and tell the connection, which wakes us when it drained. */
static void proxy_maybe_hold(ura_ctx *cx, struct proxy *px)
{
	if (px->held || !px->peer ||
	    !atomic_load_explicit(&px->peer->busy, memory_order_relaxed))
		return;
	if (ura_mailbox_hold(cx, 1) == 0 && ura_send(cx, px->conn, T_HELD, px->self) == 0)
		px->held = 1;
	else
		ura_mailbox_hold(cx, 0);
}

static void on_proxy_msg(ura_ctx *cx, const ura_msg *m)
{
	struct proxy *px = ura_state(cx);
	struct ura_dist *d = px->d;
	ura_ref sender = ura_sender(cx);
	if (proxy_ctl(px, ura_ref_null(sender) ? ura_self(cx) : sender) < 0)
		return;
	/* [length 4][112][131 control][131 message], in the kept buffer. */
	static const char hdr[6] = { 0, 0, 0, 0, 112, (char)131 /* version */ };
	if (!px->have_out) {
		if (ei_x_new(&px->out) < 0)
			return;
		px->have_out = 1;
	}
	ei_x_buff x = px->out;
	x.index = 0;
	int rc = ei_x_append_buf(&x, hdr, 6) | ei_x_append_buf(&x, px->ctl.buff, px->ctl.index);
	unsigned n = ura_msg_count(m);
	rc |= ei_x_encode_version(&x);
	if (n)
		rc |= ei_x_encode_tuple_header(&x, n + 1);
	rc |= enc_atom(&x, ura_msg_tag(m));
	for (unsigned i = 0; i < n && rc == 0; i++) {
		ura_value v = ura_msg_value(m, i);
		rc |= enc_value(d, &x, &v);
	}
	if (rc < 0) {
		char txt[160];
		ura_msg_format(m, txt, sizeof txt);
		dlog(d, URA_LOG_WARN, "message %s to %s dropped: a value that Erlang has no term for"
		     " (a pointer)", txt, px->node);
	} else {
		frame_end(&x);
		ura_send(cx, px->conn, T_OUT, ura_v_bytes(x.buff, (size_t)x.index),
			 ura_v_ref(ura_ref_null(sender) ? ura_self(cx) : sender));
	}
	/* Kept for the next send (it may have grown), unless one big
	 * message made it big: then it goes, and the next starts small. */
	px->out = x;
	if (x.buffsz > 65536) {
		ei_x_free(&px->out);
		px->have_out = 0;
	}
	proxy_maybe_hold(cx, px);
}

/* Whether m, with one of our connection's internal tags, is from our
 * connection; if not, it is someone's message of that shape, and goes to
 * the process like any other. */
static int from_conn(ura_ctx *cx, struct proxy *px, const ura_msg *m)
{
	if (ura_ref_eq(ura_sender(cx), px->conn))
		return 1;
	on_proxy_msg(cx, m);
	return 0;
}

/* From the connection: a signal about a local actor (who) for our
 * process, after what who sent it through us (conn_signal). */
static void on_proxy_relay(ura_ctx *cx, const ura_msg *m)
{
	struct proxy *px = ura_state(cx);
	if (!from_conn(cx, px, m))
		return;
	size_t len;
	const void *p = ura_arg_bytes(m, 0, &len);
	ura_send(cx, px->conn, T_OUT, ura_v_bytes(p, len), ura_v_ref(ura_arg_ref(m, 1)));
}

/* The link drained (or whoever sent it): let go unless it is busy still. */
static void on_proxy_wake(ura_ctx *cx, const ura_msg *m)
{
	struct proxy *px = ura_state(cx);
	if (!from_conn(cx, px, m))
		return;
	if (!px->held)
		return;
	px->held = 0;
	ura_mailbox_hold(cx, 0);
	proxy_maybe_hold(cx, px);
}

static void on_proxy_exit(ura_ctx *cx, const ura_msg *m)
{
	struct proxy *px = ura_state(cx);
	ura_ref who = ura_exit_who(m);
	ura_value v = ura_exit_value(m);
	if (ura_ref_eq(who, px->conn)) {
		ura_exit(cx, URA_NOCONNECTION, URA_NOVALUE);
		return;
	}
	if (px->named || ura_ref_null(who))
		return;
	/* A local actor linked to this proxy (ura_link) stopped. The process
	 * knows nothing of that link: exit/2 acts on it as a link would (a
	 * normal reason is ignored unless it traps exits). */
	erlang_pid from, to;
	if (local_pid(px->d, who, &from) < 0)
		return;
	proxy_pid(px, &to);
	send_exitish(cx, px->d, px->conn, px->peer_flags, OP_PAYLOAD_EXIT2, OP_EXIT2, &from, &to,
		     ura_exit_reason(m), &v);
}

static void on_proxy_rdown(ura_ctx *cx, const ura_msg *m)
{
	if (!from_conn(cx, ura_state(cx), m))
		return;
	ura_value v = ura_msg_count(m) > 1 ? ura_msg_value(m, 1) : URA_NOVALUE;
	ura_exit(cx, ura_arg_atom(m, 0), v);
}

URA_BEHAVIOR(proxy_beh,
	URA_ON(T_START, "", on_proxy_start),
	URA_ON_ANY(URA_EXIT, on_proxy_exit),
	URA_ON_ANY(T_RDOWN, on_proxy_rdown),
	URA_ON(T_RELAY, "br", on_proxy_relay),
	URA_ON_ANY(T_WAKE, on_proxy_wake),
	URA_ON_ANY(0, on_proxy_msg));

static int proxy_init(ura_ctx *cx, void *state, const void *arg)
{
	const struct proxy_arg *a = arg;
	struct proxy *px = state;
	px->d = a->d;
	px->peer = a->peer;
	px->self = ura_self(cx);
	px->conn = a->conn;
	px->peer_flags = a->peer_flags;
	px->named = a->name != NULL;
	if (a->name)
		snprintf(px->name, sizeof px->name, "%s", a->name);
	snprintf(px->node, sizeof px->node, "%s", a->node);
	px->num = a->num;
	px->serial = a->serial;
	px->creation = a->creation;
	node_hold(px->d);
	return 0;
}

static void proxy_destroy(void *state)
{
	struct proxy *px = state;
	struct ura_dist *d = px->d;
	uint64_t v;
	if (px->have_out)
		ei_x_free(&px->out);
	if (px->have_ctl)
		ei_x_free(&px->ctl);
	pthread_mutex_lock(&d->mu);
	if (map_get(&d->rproxy, px->self.id, &v)) {
		struct rproc *rp = (struct rproc *)(uintptr_t)v;
		map_del(&d->rproxy, px->self.id);
		free(rp->node);
		free(rp);
	}
	pthread_mutex_unlock(&d->mu);
	node_drop(d);
}

/* Muting: a sender faster than the proxy's encoding, or than the link
 * (held, above), keeps its pace with nothing lost. */
static const ura_mailbox_opts proxy_mailbox = { .capacity = PROXY_MAILBOX,
						.full = URA_FULL_MUTE };

static const ura_class proxy_class = {
	.name = "ura_dist_proxy",
	.state_size = sizeof(struct proxy),
	.mailbox = &proxy_mailbox,
	.initial = &proxy_beh,
	.init = proxy_init,
	.destroy = proxy_destroy,
};

/* Spawns a proxy (from cx, or sys when cx is NULL) and starts it. A pid
 * proxy's process joins the node's table of proxies first, so that a
 * ref to it in a message encodes as its pid from the start. */
static ura_ref proxy_spawn(ura_ctx *cx, ura_system *sys, const struct proxy_arg *a)
{
	ura_ref r;
	struct ura_dist *d = a->d;
	struct rproc *rp = NULL;
	if (!a->name) {
		rp = ura__calloc(1, sizeof *rp);
		if (!rp || !(rp->node = ura__strdup(a->node))) {
			free(rp);
			return URA_NOREF;
		}
		rp->num = a->num;
		rp->serial = a->serial;
		rp->creation = a->creation;
	}
	int rc = cx ? ura_spawn(cx, &proxy_class, a, &r) : ura_spawn(sys, &proxy_class, a, &r);
	if (rc < 0)
		goto fail;
	if (rp) {
		pthread_mutex_lock(&d->mu);
		rc = map_put(&d->rproxy, r.id, (uint64_t)(uintptr_t)rp);
		pthread_mutex_unlock(&d->mu);
		if (rc < 0) {
			cx ? ura_kill(cx, r, URA_KILL) : ura_kill(sys, r, URA_KILL);
			goto fail;
		}
	}
	rc = cx ? ura_send(cx, r, T_START) : ura_send(sys, r, T_START);
	return rc < 0 ? URA_NOREF : r;
fail:
	if (rp) {
		free(rp->node);
		free(rp);
	}
	return URA_NOREF;
}

/* ---- listener ---------------------------------------------------------- */

struct listener {
	struct ura_dist *d;
	int fd;
};

static int spawn_conn(ura_ctx *cx, ura_system *sys, const struct conn_arg *a, ura_ref *out)
{
	ura_ref r;
	int rc = cx ? ura_spawn(cx, &conn_class, a, &r) : ura_spawn(sys, &conn_class, a, &r);
	if (rc < 0)
		return rc;
	rc = cx ? ura_send(cx, r, T_START) : ura_send(sys, r, T_START);
	if (out)
		*out = r;
	return rc;
}

static void on_listen_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct listener *l = ura_state(cx);
	if (ura_io_accept(cx, T_ACCEPT, l->fd, URA_IO_MULTISHOT) < 0) {
		dlog(l->d, URA_LOG_ERROR, "cannot accept connections");
		ura_stop(cx);
	}
}

static void on_listen_accept(ura_ctx *cx, const ura_msg *m)
{
	struct listener *l = ura_state(cx);
	int64_t fd = ura_arg_i64(m, 0);
	if (fd < 0) {
		if (fd != -ECANCELED)
			dlog(l->d, URA_LOG_WARN, "accept: %s", ura_strerror((int)fd));
		if (!ura_io_more(m) && fd != -ECANCELED)
			on_listen_start(cx, m);
		return;
	}
	int one = 1;
	setsockopt((int)fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	struct conn_arg a = { .d = l->d, .fd = (int)fd };
	if (spawn_conn(cx, NULL, &a, NULL) < 0) {
		dlog(l->d, URA_LOG_WARN, "cannot start a connection");
		close((int)fd);
	}
	if (!ura_io_more(m))
		on_listen_start(cx, m);
}

static void on_listen_quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(listen_beh,
	URA_ON(T_START, "", on_listen_start),
	URA_ON(T_ACCEPT, "i", on_listen_accept),
	URA_ON(T_QUIT, "", on_listen_quit));

static int listen_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	struct listener *l = state;
	l->d = (struct ura_dist *)(uintptr_t)arg;
	l->fd = l->d->listen_fd;
	node_hold(l->d);
	return 0;
}

static void listen_destroy(void *state)
{
	struct listener *l = state;
	close(l->fd);
	node_drop(l->d);
}

static const ura_class listen_class = {
	.name = "ura_dist_listener",
	.state_size = sizeof(struct listener),
	.initial = &listen_beh,
	.init = listen_init,
	.destroy = listen_destroy,
};

/* ---- epmd and the API -------------------------------------------------- */

static int read_full(int fd, void *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ECONNRESET;
		got += (size_t)r;
	}
	return 0;
}

static int write_full(int fd, const void *p, size_t n)
{
	size_t put = 0;
	while (put < n) {
		ssize_t r = send(fd, (const char *)p + put, n - put, MSG_NOSIGNAL);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		put += (size_t)r;
	}
	return 0;
}

static int tcp_connect(const char *host, unsigned port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char ps[16];
	snprintf(ps, sizeof ps, "%u", port);
	if (getaddrinfo(host, ps, &hints, &res))
		return -EHOSTUNREACH;
	int rc = -ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			rc = -errno;
			continue;
		}
		struct timeval tv = { .tv_sec = 5 };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		rc = -errno;
		close(fd);
	}
	freeaddrinfo(res);
	return rc;
}

/* ALIVE2_REQ; keeps the socket (the registration lives as long). */
static int epmd_register(struct ura_dist *d)
{
	int fd = tcp_connect("127.0.0.1", EPMD_PORT);
	if (fd < 0)
		return fd;
	const char *alive = d->node;
	size_t al = strcspn(alive, "@");
	uint8_t b[300];
	size_t k = 2;
	b[k++] = 120;
	put16(b + k, d->port); k += 2;
	b[k++] = 72;  /* hidden node */
	b[k++] = 0;   /* TCP/IPv4 */
	put16(b + k, 6); k += 2;
	put16(b + k, 6); k += 2;
	put16(b + k, (uint32_t)al); k += 2;
	memcpy(b + k, alive, al); k += al;
	put16(b + k, 0); k += 2;
	put16(b, (uint32_t)(k - 2));
	int rc = write_full(fd, b, k);
	if (rc == 0)
		rc = read_full(fd, b, 2);
	if (rc == 0 && b[0] == 118) { /* ALIVE2_X_RESP */
		rc = read_full(fd, b + 2, 4);
		d->creation = get32(b + 2);
	} else if (rc == 0 && b[0] == 121) { /* ALIVE2_RESP */
		rc = read_full(fd, b + 2, 2);
		d->creation = get16(b + 2);
	} else if (rc == 0) {
		rc = -EPROTO;
	}
	if (rc == 0 && b[1] != 0)
		rc = -EADDRINUSE;
	if (rc < 0) {
		close(fd);
		return rc;
	}
	struct timeval tv = { 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	d->epmd_fd = fd;
	return 0;
}

/* PORT_PLEASE2_REQ: the port of node alive@host. */
static int epmd_port(const char *alive, size_t al, const char *host)
{
	int fd = tcp_connect(host, EPMD_PORT);
	if (fd < 0)
		return fd;
	uint8_t b[300];
	put16(b, (uint32_t)al + 1);
	b[2] = 122;
	memcpy(b + 3, alive, al);
	int rc = write_full(fd, b, al + 3);
	if (rc == 0)
		rc = read_full(fd, b, 2);
	if (rc == 0 && (b[0] != 119 || b[1] != 0))
		rc = -EHOSTUNREACH;
	if (rc == 0)
		rc = read_full(fd, b, 2);
	close(fd);
	return rc < 0 ? rc : (int)get16(b);
}

static int read_cookie(char *out, size_t n)
{
	const char *home = getenv("HOME");
	char path[512];
	if (!home)
		return -ENOENT;
	snprintf(path, sizeof path, "%s/.erlang.cookie", home);
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(out, (int)n, f))
		out[0] = 0;
	fclose(f);
	out[strcspn(out, "\r\n \t")] = 0;
	return out[0] ? 0 : -ENOENT;
}

static int valid_alive(const char *s, size_t n)
{
	if (!n || n > 200)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

URA_API int ura_dist_start(ura_system *sys, const ura_dist_opts *o, ura_dist **out)
{
	if (!sys || !o || !out || !o->name)
		return -EINVAL;
	for (size_t i = 0; i < sizeof o->reserved_ / sizeof o->reserved_[0]; i++)
		if (o->reserved_[i])
			return -EINVAL;
	if (o->port > 65535)
		return -EINVAL;
	const char *at = strchr(o->name, '@');
	if (!valid_alive(o->name, at ? (size_t)(at - o->name) : strlen(o->name)) ||
	    (at && (!at[1] || strlen(at) > 250)))
		return -EINVAL;
	struct ura_dist *d = ura__calloc(1, sizeof *d);
	if (!d)
		return -ENOMEM;
	d->sys = sys;
	d->epmd_fd = -1;
	d->listen_fd = -1;
	atomic_init(&d->refs, 1);
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	d->tick_ns = o->tick_ns ? o->tick_ns : 60 * URA_SEC;
	int rc;
	if (at) {
		snprintf(d->node, sizeof d->node, "%s", o->name);
	} else {
		char host[256];
		if (gethostname(host, sizeof host) < 0) {
			rc = -errno;
			goto fail;
		}
		host[sizeof host - 1] = 0;
		if (!o->long_names)
			host[strcspn(host, ".")] = 0;
		snprintf(d->node, sizeof d->node, "%s@%s", o->name, host);
	}
	if (o->cookie) {
		if (!o->cookie[0] || strlen(o->cookie) >= sizeof d->cookie) {
			rc = -EINVAL;
			goto fail;
		}
		snprintf(d->cookie, sizeof d->cookie, "%s", o->cookie);
	} else if ((rc = read_cookie(d->cookie, sizeof d->cookie)) < 0) {
		goto fail;
	}
	ei_init();
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto fail;
	}
	d->listen_fd = fd;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	socklen_t sl = sizeof sa;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
		rc = -errno;
		goto fail;
	}
	d->port = ntohs(sa.sin_port);
	if ((rc = epmd_register(d)) < 0)
		goto fail;
	rc = ura_spawn(sys, &listen_class, d, &d->listener);
	if (rc < 0)
		goto fail;
	d->listen_fd = -1; /* the listener's now */
	ura_send(sys, d->listener, T_START);
	dlog(d, URA_LOG_INFO, "listening on port %u, creation %u", d->port, d->creation);
	*out = d;
	return 0;
fail:
	if (d->listen_fd >= 0)
		close(d->listen_fd);
	node_free(d);
	return rc;
}

URA_API const char *ura_dist_name(const ura_dist *d)
{
	return d ? d->node : NULL;
}

URA_API int ura_dist_stop(ura_dist *d)
{
	if (!d)
		return -EINVAL;
	pthread_mutex_lock(&d->mu);
	if (d->stopping) {
		pthread_mutex_unlock(&d->mu);
		return -EALREADY;
	}
	d->stopping = 1;
	if (d->epmd_fd >= 0) {
		close(d->epmd_fd); /* epmd forgets the name */
		d->epmd_fd = -1;
	}
	for (struct peer *p = d->peers; p; p = p->next)
		if (!ura_ref_null(p->conn))
			ura_send(d->sys, p->conn, T_QUIT);
	pthread_mutex_unlock(&d->mu);
	ura_send(d->sys, d->listener, T_QUIT);
	node_drop(d);
	return 0;
}

URA_API ura_ref ura_dist_node_ref(ura_dist *d, const char *node)
{
	ura_ref r = URA_NOREF;
	if (!d || !node)
		return r;
	pthread_mutex_lock(&d->mu);
	struct peer *p = peer_find_locked(d, node);
	if (p && p->up)
		r = p->conn;
	pthread_mutex_unlock(&d->mu);
	return r;
}

URA_API int ura_dist_whereis(ura_dist *d, const char *node, const char *name, ura_ref *out)
{
	ura_atom check;
	if (!d || !node || !name || !out || !name[0] || strlen(name) >= MAXATOMLEN)
		return -EINVAL;
	(void)check;
	pthread_mutex_lock(&d->mu);
	struct peer *p = peer_find_locked(d, node);
	ura_ref conn = p && p->up ? p->conn : URA_NOREF;
	uint64_t flags = p ? p->flags : 0;
	pthread_mutex_unlock(&d->mu);
	if (ura_ref_null(conn))
		return -ENOTCONN;
	struct proxy_arg a = { .d = d, .peer = p, .conn = conn, .peer_flags = flags,
			       .name = name, .node = node };
	ura_ref r = proxy_spawn(NULL, d->sys, &a);
	if (ura_ref_null(r))
		return -ENOMEM;
	*out = r;
	return 0;
}

URA_API int ura_dist_connect(ura_dist *d, const char *node, uint64_t timeout_ns)
{
	if (!d || !node)
		return -EINVAL;
	const char *at = strchr(node, '@');
	if (!at || !valid_alive(node, (size_t)(at - node)) || !at[1] ||
	    strlen(node) >= MAXATOMLEN)
		return -EINVAL;
	if (!timeout_ns)
		timeout_ns = 10 * URA_SEC;
	pthread_mutex_lock(&d->mu);
	struct peer *p = peer_get_locked(d, node);
	if (!p) {
		pthread_mutex_unlock(&d->mu);
		return -ENOMEM;
	}
	if (p->up) {
		pthread_mutex_unlock(&d->mu);
		return 0;
	}
	int pending = p->result == 1;
	if (!pending)
		p->result = 1;
	pthread_mutex_unlock(&d->mu);
	int rc = 0;
	if (!pending) {
		int port = epmd_port(node, (size_t)(at - node), at + 1);
		int fd = port < 0 ? port : tcp_connect(at + 1, (unsigned)port);
		if (fd >= 0) {
			int one = 1;
			struct timeval tv = { 0 };
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
			setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
			struct conn_arg a = { .d = d, .fd = fd, .initiator = 1, .peer = p };
			rc = spawn_conn(NULL, d->sys, &a, NULL);
			if (rc < 0)
				close(fd);
		} else {
			rc = fd;
		}
		if (rc < 0) {
			pthread_mutex_lock(&d->mu);
			p->result = rc;
			pthread_mutex_unlock(&d->mu);
			return rc;
		}
	}
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	uint64_t ns = (uint64_t)dl.tv_nsec + timeout_ns;
	dl.tv_sec += (time_t)(ns / URA_SEC);
	dl.tv_nsec = (long)(ns % URA_SEC);
	pthread_mutex_lock(&d->mu);
	while (p->result == 1 && !p->up)
		if (pthread_cond_timedwait(&d->cv, &d->mu, &dl) == ETIMEDOUT)
			break;
	rc = p->up ? 0 : p->result == 1 ? -ETIMEDOUT : p->result;
	pthread_mutex_unlock(&d->mu);
	return rc;
}
