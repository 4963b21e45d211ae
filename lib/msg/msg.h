/* SPDX-License-Identifier: MIT */
/*
 * Messages: one allocation holding the header, the typed values and the
 * copied strings/bytes. The first field is the mailbox link, so a message is
 * its own queue node (intrusive MPSC, see actor/mailbox.h).
 */
#ifndef URA_MSG_H
#define URA_MSG_H

#include "util/util.h"

enum {
	URA__MK_PLAIN = 0,
	URA__MK_REQUEST = 1,  /* carries req; the reply becomes a RESPONSE */
	URA__MK_RESPONSE = 2, /* routed to the requester's continuation */
	URA__MK_TIMEOUT = 3,  /* receive timeout; req = the actor's rt_seq */
	URA__MK_REQ_TIMEOUT = 4, /* a request's reply is late; req = its id */
	URA__MK_IO = 5,       /* an I/O completion; `from` holds the op id */
	/* Fault tolerance (actor/signal.c, actor/request.c). Signals travel
	 * the post path like any message, so they keep the per-pair order. */
	URA__MK_ERROR = 6,    /* a request failed: to the continuation; req = its id */
	URA__MK_MONITOR = 7,  /* watcher -> target: (i64 monitor id) */
	URA__MK_DEMONITOR = 8, /* watcher -> target: (i64 monitor id) */
	URA__MK_LINK = 9,     /* no values */
	URA__MK_UNLINK = 10,  /* (i64 unlink id) */
	URA__MK_UNLINK_ACK = 11, /* (i64 unlink id) */
	URA__MK_EXIT = 12,    /* an exit signal: URA_EXIT(atom reason[, v]) from m->from
	                         (a trapper gets the documented form: actor/signal.c,
	                         exit_trapped); req: URA__EXIT_LINK or URA__EXIT_KILL */
	URA__MK_DOWN = 13,    /* URA_DOWN(i64 mon, ref who, atom reason[, v]) */
};

/* What sent an exit signal (ura_msg.req of URA__MK_EXIT). */
enum { URA__EXIT_LINK = 1, URA__EXIT_KILL = 2 };

enum {
	URA__MF_STASH = 1, /* retire into the actor's stash, don't free */
	URA__MF_MORE = 2,  /* I/O: more completions of this operation follow */
	/* Snapshots (lib/snap/snap.h), clear of bit 1 (lib/io's MORE): the
	 * parity of the sender's phase; a poke (the snapshot thread asking a
	 * busy actor to capture itself); "never record" (an input from
	 * outside: a delayed send armed outside a handler, a message built
	 * elsewhere than make_msg); stamped by make_msg (the others are
	 * stamped when delivered, see ura__deliver_timer). */
	URA__MF_PH = 4,
	URA__MF_POKE = 8,
	URA__MF_NOSNAP = 16,
	URA__MF_SNAPD = 32,
	/* Counted in its receiver's bounded mailbox (core/bound.h). */
	URA__MF_BP = 64,
	/* A plain message whose req holds the time it was sent, ns >> 10
	 * (core/metrics.h: a mailbox-wait sample, URA_CLASS_METRICS_WAIT).
	 * (It was 64 too, once: a bounded mailbox's counted messages then
	 * read as wait samples in a metered turn, which cleared the bit, and
	 * the depth never went down.) Every flag is declared here, one bit
	 * each: flags is a uint8_t, and this is the last bit. */
	URA__MF_WAIT = 128,
};

struct ura_msg {
	_Atomic(struct ura_msg *) next; /* mailbox link; stash link once retired */
	ura_atom tag;
	ura_ref from;
	uint64_t sig;      /* the type chars packed little-endian (so, for
	                      n <= 7, also a NUL-terminated string), or
	                      URA__SIG_LONG for more values */
	uint32_t to_gen;   /* incarnation it was sent to: a mismatch is a dead letter */
	uint32_t req;      /* request id (REQUEST / RESPONSE) */
	uint8_t n;         /* values (<= URA_MAX_VALUES) */
	uint8_t kind;      /* URA__MK_* */
	uint8_t flags;     /* URA__MF_* */
	uint8_t cls;       /* pool size class, or URA__POOL_BIG */
	uint32_t to_idx;   /* target slot: cross-node batches carry it */
	ura_value vals[];  /* then, if n > 7, n+1 type chars; then payload */
};

/* Size classes of the per-worker pools: 64 B .. 2 KiB; bigger messages
 * come straight from malloc. */
#define URA__POOL_CLASSES 6
#define URA__POOL_BIG 255
#define URA__POOL_KEEP 4096 /* blocks a pool keeps per class before freeing */

/*
 * Node-local pools. Each worker carves its blocks from its own slice of
 * one reservation (an arena), so a block's owner and size class follow
 * from its address alone: no header, no lookup table. The worker touches
 * its blocks first (and the slice is mbind'ed to its node on a real NUMA
 * machine), so they live on its node. A block freed by another worker goes
 * back to its owner in batches: one CAS per URA__POOL_RETURN blocks.
 */
#define URA__POOL_RETURN 32

struct ura__arena {
	char *base;
	size_t per;            /* bytes per worker slice; power of two */
	unsigned shift;        /* log2(per) */
	unsigned cshift;       /* log2 of a class's part of a slice: shift - 3 */
	unsigned n;            /* workers */
	/* Per worker: blocks other workers gave back (a stack, via word 0). */
	struct ura__arena_inbox { alignas(URA__CACHELINE) _Atomic(void *) head; } *inbox;
};

struct ura__pool_ret {
	void *head, *tail;
	unsigned n;
};

struct ura__pool {
	void *free[URA__POOL_CLASSES];
	uint32_t count[URA__POOL_CLASSES];
	struct ura__arena *arena;   /* NULL: plain malloc blocks only */
	unsigned owner;             /* this pool's worker */
	char *bump[URA__POOL_CLASSES], *end[URA__POOL_CLASSES];
	/* Where the pages populated ahead end (pool.c, fill_ahead). */
	char *filled[URA__POOL_CLASSES];
	struct ura__pool_ret *ret;  /* per owner: blocks to give back */
	unsigned ret_dirty;
	void *pend;                 /* taken back, not yet sorted (pool.c) */
};

int ura__arena_init(struct ura__arena *a, unsigned workers);
void ura__arena_fini(struct ura__arena *a);
/* Binds worker w's slice to a NUMA node (real topology only). */
int ura__arena_bind(struct ura__arena *a, unsigned w, int node);
int ura__pool_init(struct ura__pool *p, struct ura__arena *a, unsigned owner);
/* Hands every partial return batch back to its owner. */
void ura__pool_flush(struct ura__pool *p);
/* At destroy, with the workers stopped: frees p unless it lives in the
 * arena (which goes as a whole). is_msg: p is a struct ura_msg. */
void ura__arena_drop(const struct ura__arena *a, void *p, int is_msg);

/* Allocation works from any thread; `pool` is NULL off the workers. */
struct ura_msg *ura__msg_alloc(struct ura__pool *pool, size_t size);
void ura__msg_free(struct ura__pool *pool, struct ura_msg *m);
void ura__pool_drain(struct ura__pool *pool);
/* Pool blocks for small internal records (request continuations). */
void *ura__pool_get(struct ura__pool *pool, size_t size);
void ura__pool_put(struct ura__pool *pool, void *p, size_t size);

/* Checks vals and returns the message size they need, or -errno. */
long ura__msg_size(const ura_value *vals, unsigned n);
/* Builds a message of `size` bytes (from ura__msg_size) holding vals. */
void ura__msg_fill(struct ura_msg *m, ura_atom tag, ura_ref from,
		   const ura_value *vals, unsigned n);

/* The common message: at most 7 values, every one a scalar (i, d, a, r,
 * p: nothing to copy beyond the value itself, nothing to measure). One
 * pass checks them and packs the signature; the general pair above is
 * two calls and two passes with a switch each (104 of pingpong's 645
 * instructions a message). Returns the message's size and *sig, or 0:
 * then ura__msg_size decides (strings, bytes, more values, or an error,
 * which it names). */
#define URA__SCALAR_TYPES                                                           \
	((1u << (URA_T_I64 - 96)) | (1u << (URA_T_F64 - 96)) | (1u << (URA_T_ATOM - 96)) | \
	 (1u << (URA_T_REF - 96)) | (1u << (URA_T_PTR - 96)))
static inline size_t ura__msg_scalar(const ura_value *vals, unsigned n, uint64_t *sig)
{
	if (n > 7 || (n && !vals))
		return 0;
	uint64_t s = 0;
	for (unsigned i = 0; i < n; i++) {
		uint32_t t = vals[i].type - 96;
		if (t >= 32 || !((URA__SCALAR_TYPES >> t) & 1))
			return 0;
		/* An atom with bits no atom has: ura__msg_size's -EINVAL. */
		if (vals[i].type == URA_T_ATOM && (vals[i].u.atom >> 60))
			return 0;
		s |= (uint64_t)vals[i].type << (8 * i);
	}
	*sig = s;
	return sizeof(struct ura_msg) + n * sizeof(ura_value);
}
/* ura__msg_fill for what ura__msg_scalar took, less the fields every
 * caller sets after it (to_gen, kind, req, flags). */
static inline void ura__msg_fill_scalar(struct ura_msg *m, ura_atom tag, ura_ref from,
					const ura_value *vals, unsigned n, uint64_t sig)
{
	atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
	m->tag = tag;
	m->from = from;
	m->n = (uint8_t)n;
	m->sig = sig;
	for (unsigned i = 0; i < n; i++) {
		m->vals[i].type = vals[i].type;
		m->vals[i].len = 0;
		m->vals[i].u = vals[i].u;
	}
}

/* A ref's low word: the system's tag above the slot's table index
 * (core/slot.h); printed refs show the index alone. */
#define URA__REF_INDEX_BITS 26
#define URA__REF_INDEX_MASK ((1u << URA__REF_INDEX_BITS) - 1)

/* Packs a type string the way URA__SIG does (bit 62 set: "typed"). */
uint64_t ura__sig_pack(const char *types, size_t n);
#define URA__SIG_TYPED ((uint64_t)1 << 62)
#define URA__SIG_LONG ((uint64_t)1 << 63)

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "ura_msg.sig doubles as a string on little-endian machines");
_Static_assert(sizeof(struct ura_msg) == 48, "a one-value message fits 64 B");

/* Who sent m: URA_NOREF for an I/O completion, whose `from` holds its
 * operation id instead (the header has no other 64-bit room). */
static inline ura_ref ura__msg_sender(const struct ura_msg *m)
{
	return m->kind == URA__MK_IO ? URA_NOREF : m->from;
}

static inline const char *ura__msg_types(const struct ura_msg *m)
{
	return m->n <= 7 ? (const char *)&m->sig : (const char *)&m->vals[m->n];
}

#endif
