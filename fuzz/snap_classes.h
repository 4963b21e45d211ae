/* SPDX-License-Identifier: MIT */
/*
 * What fuzz_snapshot and gen_seeds.c share: the actor classes registered
 * for snapshots (so that the seeds restore into the fuzzer's systems), and
 * the snapshot file's frame (lib/snap/FORMAT.md): header, trailer and
 * their CRC32C, written here from the format description, not taken from
 * lib/, so that the fuzzer tests the reader against the document.
 *
 * Classes:
 *   counter  save/load callbacks: an int64, then a ref, a timer and a
 *            group through the typed puts; four behaviors (a stashing one,
 *            one with a receive timeout), bound values; its load refuses
 *            stray bytes and fails with -EIO on count 13, so that restores
 *            also fail halfway and roll back
 *   blob     save/load callbacks: a length, then that many bytes
 *   cell     no callbacks: its 24 state bytes as they are
 *   nil      no callbacks, no state
 * Handlers run only in gen_seeds (the fuzzer never starts a system).
 */
#ifndef FUZZ_SNAP_CLASSES_H
#define FUZZ_SNAP_CLASSES_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <ura.h>

#define A_SET URA_ATOM("set")
#define A_PEER URA_ATOM("peer")
#define A_LATER URA_ATOM("later")
#define A_JOIN URA_ATOM("join")
#define A_ANON URA_ATOM("anon")
#define A_BECOME URA_ATOM("become")
#define A_NAP URA_ATOM("nap")
#define A_MIX URA_ATOM("mix")
#define A_UNSTASH URA_ATOM("unstash")
#define A_PUT URA_ATOM("put")

/* ---- the file's frame --------------------------------------------------- */

#define SNAP_HDR 64u
#define SNAP_TRAILER 8u
#define SNAP_END 0x21444e45u /* "END!" */

/* CRC32C (Castagnoli, reflected 0x82f63b78, ~0 in and out), bitwise: the
 * fuzzer's inputs are small, and a table would be one more thing to get
 * wrong. crc32c(0, "123456789", 9) == 0xe3069283. */
static inline uint32_t snap_crc32c(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1)));
	}
	return ~crc;
}

static inline void snap_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void snap_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Writes header, body and trailer into out (n + 72 bytes): a file that
 * passes checks 1 to 7 of FORMAT.md whatever the body holds. The header's
 * id, time and counts are informational (restore does not read them). */
static inline size_t snap_frame(unsigned char *out, const void *body, size_t n)
{
	memset(out, 0, SNAP_HDR);
	memcpy(out, "URASNAP", 8);
	snap_le32(out + 8, 1);
	snap_le32(out + 12, SNAP_HDR);
	snap_le64(out + 16, n);
	snap_le64(out + 24, 1);
	snap_le32(out + 56, snap_crc32c(0, out, 56));
	if (n)
		memcpy(out + SNAP_HDR, body, n);
	snap_le32(out + SNAP_HDR + n, snap_crc32c(0, body, n));
	snap_le32(out + SNAP_HDR + n + 4, SNAP_END);
	return SNAP_HDR + n + SNAP_TRAILER;
}

/* ---- classes ------------------------------------------------------------ */

/* Load callbacks that succeeded, and destroy callbacks run: every actor
 * whose load succeeded is destroyed exactly once, by the rollback of a
 * restore that fails later or by ura_system_destroy. */
static _Atomic long snap_loads, snap_destroys;

typedef struct counter {
	int64_t count;
	ura_ref peer;
	ura_timer timer;
	ura_group *group;
} counter;

static void c_set(ura_ctx *cx, const ura_msg *m)
{
	((counter *)ura_state(cx))->count = ura_arg_i64(m, 0);
}

static void c_peer(ura_ctx *cx, const ura_msg *m)
{
	((counter *)ura_state(cx))->peer = ura_arg_ref(m, 0);
}

/* later(to, ns): a delayed send that is still pending at the snapshot. */
static void c_later(ura_ctx *cx, const ura_msg *m)
{
	counter *c = ura_state(cx);
	c->timer = ura_send_after(cx, ura_arg_ref(m, 0), (uint64_t)ura_arg_i64(m, 1), A_SET,
				  (int64_t)7);
}

static void c_join(ura_ctx *cx, const ura_msg *m)
{
	counter *c = ura_state(cx);
	if (ura_group_named(ura_ctx_system(cx), ura_arg_str(m, 0), &c->group) == 0)
		(void)ura_group_join(c->group, ura_self(cx));
}

static void c_anon(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	counter *c = ura_state(cx);
	if (ura_group_new(ura_ctx_system(cx), &c->group) == 0)
		(void)ura_group_join(c->group, ura_self(cx));
}

/* mix(): every value type a snapshot keeps, to the peer. */
static void c_mix(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	counter *c = ura_state(cx);
	static const unsigned char raw[] = { 0, 1, 0xfe, 0xff };
	ura_send(cx, c->peer, A_MIX, (int64_t)-1, 2.5, ura_v_atom(A_PUT), ura_self(cx),
		 "text", ura_v_bytes(raw, sizeof raw), ura_v_bytes(NULL, 0), "");
}

/* gen_seeds' handshake for messages in flight at the cut: nap waits until
 * the snapshot has started, then sends to its peer, which the snapshot
 * thread has saved meanwhile (it was idle). */
static _Atomic int nap_in, nap_go;
static void c_nap(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&nap_in, 1);
	for (int i = 0; i < 10000 && !atomic_load(&nap_go); i++)
		usleep(1000);
	usleep((useconds_t)ura_arg_i64(m, 0));
	c_mix(cx, m);
	ura_send(cx, ((counter *)ura_state(cx))->peer, A_SET, (int64_t)42);
}

static const ura_behavior counter_idle, counter_busy, counter_stash, counter_wait;
static const ura_behavior *const counter_behs[] = { &counter_busy, &counter_stash,
						    &counter_wait };

/* become(k, bound kind): behavior k of counter_behs (-1: idle), bound
 * 0 none, 1 int, 2 double, 3 atom, 4 a ref (self). */
static void c_become(ura_ctx *cx, const ura_msg *m)
{
	int64_t k = ura_arg_i64(m, 0), kind = ura_arg_i64(m, 1);
	const ura_behavior *b = k >= 0 && k < 3 ? counter_behs[k] : &counter_idle;
	ura_value v[5] = { { 0 }, ura_v_i64(-5), ura_v_f64(0.125), ura_v_atom(A_PEER),
			   ura_v_ref(ura_self(cx)) };
	if (kind > 0 && kind < 5)
		ura_become_with(cx, b, v[kind]);
	else
		ura_become(cx, b);
}

static void c_unstash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_become(cx, &counter_idle);
}

static void c_nop(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}

#define COUNTER_CASES                                                       \
	URA_ON(A_SET, "i", c_set), URA_ON(A_PEER, "r", c_peer),             \
	URA_ON(A_LATER, "ri", c_later), URA_ON(A_JOIN, "s", c_join),        \
	URA_ON(A_ANON, "", c_anon), URA_ON(A_MIX, "", c_mix),               \
	URA_ON(A_NAP, "i", c_nap), URA_ON(A_BECOME, "ii", c_become),        \
	URA_ON_ANY(A_MIX, c_nop)
URA_BEHAVIOR(counter_idle, COUNTER_CASES);
URA_BEHAVIOR(counter_busy, COUNTER_CASES);
/* Keeps everything but unstash for after its next become. */
URA_BEHAVIOR_OPTS(counter_stash, (.unmatched = URA_UNMATCHED_STASH),
		  URA_ON(A_UNSTASH, "", c_unstash));
/* A receive timeout an hour away: pending at any snapshot. */
URA_BEHAVIOR_OPTS(counter_wait, (.timeout_ns = 3600 * URA_SEC, .on_timeout = c_nop),
		  COUNTER_CASES);

static int counter_save(ura_snap_out *out, const void *state)
{
	const counter *c = state;
	int rc = ura_snap_put(out, &c->count, sizeof c->count);
	if (!rc)
		rc = ura_snap_put_ref(out, c->peer);
	if (!rc)
		rc = ura_snap_put_timer(out, c->timer);
	if (!rc)
		rc = ura_snap_put_group(out, c->group);
	return rc;
}

static int counter_load(ura_snap_in *in, void *state)
{
	counter *c = state;
	if (ura_ref_null(ura_snap_self(in)))
		return -EFAULT; /* the fuzzer treats it as a bug */
	int rc = ura_snap_get(in, &c->count, sizeof c->count);
	if (!rc)
		rc = ura_snap_get_ref(in, &c->peer);
	if (!rc)
		rc = ura_snap_get_timer(in, &c->timer);
	if (!rc)
		rc = ura_snap_get_group(in, &c->group);
	if (!rc && ura_snap_left(in))
		rc = -EINVAL;
	if (!rc && c->count == 13)
		rc = -EIO;
	if (!rc)
		atomic_fetch_add(&snap_loads, 1);
	return rc;
}

static void counter_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&snap_destroys, 1);
}

static const ura_class counter_class = {
	.name = "counter", .state_size = sizeof(counter), .initial = &counter_idle,
	.destroy = counter_destroy,
};

typedef struct blob {
	uint32_t len;
	unsigned char data[60];
} blob;

static void b_put(ura_ctx *cx, const ura_msg *m)
{
	blob *b = ura_state(cx);
	size_t n;
	const void *p = ura_arg_bytes(m, 0, &n);
	b->len = n < sizeof b->data ? (uint32_t)n : (uint32_t)sizeof b->data;
	if (b->len)
		memcpy(b->data, p, b->len);
}

URA_BEHAVIOR(blob_beh, URA_ON(A_PUT, "b", b_put));

static int blob_save(ura_snap_out *out, const void *state)
{
	const blob *b = state;
	int rc = ura_snap_put(out, &b->len, sizeof b->len);
	return rc ? rc : ura_snap_put(out, b->data, b->len);
}

static int blob_load(ura_snap_in *in, void *state)
{
	blob *b = state;
	int rc = ura_snap_get(in, &b->len, sizeof b->len);
	if (rc)
		return rc;
	if (b->len > sizeof b->data || b->len != ura_snap_left(in))
		return -EINVAL;
	rc = ura_snap_get(in, b->data, b->len);
	if (!rc)
		atomic_fetch_add(&snap_loads, 1);
	return rc;
}

static void blob_destroy(void *state)
{
	(void)state;
	atomic_fetch_add(&snap_destroys, 1);
}

static const ura_class blob_class = {
	.name = "blob", .state_size = sizeof(blob), .initial = &blob_beh,
	.destroy = blob_destroy,
};

typedef struct cell {
	int64_t a;
	double b;
	uint64_t c;
} cell;

static void cell_set(ura_ctx *cx, const ura_msg *m)
{
	cell *s = ura_state(cx);
	s->a = ura_arg_i64(m, 0);
	s->b = (double)s->a / 3;
	s->c = ~(uint64_t)s->a;
}

URA_BEHAVIOR(cell_beh, URA_ON(A_SET, "i", cell_set));
static const ura_class cell_class = { .name = "cell", .state_size = sizeof(cell),
				      .initial = &cell_beh };

URA_BEHAVIOR(nil_beh, URA_ON_ANY(0, c_nop));
static const ura_class nil_class = { .name = "nil", .state_size = 0, .initial = &nil_beh };

static const ura_snap_class snap_classes[] = {
	{ .cls = &counter_class, .save = counter_save, .load = counter_load,
	  .behaviors = counter_behs, .nbehaviors = 3 },
	{ .cls = &blob_class, .save = blob_save, .load = blob_load },
	{ .cls = &cell_class },
	{ .cls = &nil_class },
};
#define NSNAP_CLASSES (sizeof snap_classes / sizeof snap_classes[0])

static inline int snap_register_all(ura_system *sys)
{
	for (size_t i = 0; i < NSNAP_CLASSES; i++) {
		int rc = ura_snap_register(sys, &snap_classes[i]);
		if (rc < 0)
			return rc;
	}
	return 0;
}

#endif
