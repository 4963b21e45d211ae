/* SPDX-License-Identifier: MIT */
/*
 * Asynchronous snapshots: phases, capture, records, the snapshot thread
 * and the file it writes. The design is in snap.h; the file in FORMAT.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actor/group.h"
#include "sched/sched.h"
#include "snap/file.h"
#include "snap/format.h"
#include "snap/snap_int.h"

/* Atomics: a relaxed access without a comment is to a field one thread
 * writes (a buffer's owner, or whoever holds S->lock) that orders nothing
 * else; every other ordering says what it pairs with. */

#define POKE_TAG URA_ATOM("_snappoke")
#define CHUNK_BYTES (64u << 10)
/* Message sequence numbers a turn takes at once (record_msg): the
 * default batch of messages per turn fits in one. */
#define SEQ_BLOCK 256u
/* Problems listed in a report before "and N more". */
#define REPORT_LINES 20

/* ---- counting ------------------------------------------------------- */

void ura__snap_ext_sent(ura_system *sys, const struct ura_msg *m)
{
	static _Atomic unsigned next_shard;
	static _Thread_local unsigned shard = UINT_MAX;
	if (shard == UINT_MAX)
		shard = atomic_fetch_add_explicit(&next_shard, 1, memory_order_relaxed) %
			URA__EXT_SHARDS;
	/* relaxed: the push that follows (release) and the receiver's
	 * count (release) carry it to the completion check (acquire). */
	atomic_fetch_add_explicit(&sys->snap->ext[shard].sent[ura__msg_ph(m)], 1,
				  memory_order_relaxed);
}

int ura__snap_busy(ura_system *sys)
{
	/* seq_cst: pairs with the decrement at the end of snap_main and the
	 * increment in ura_snapshot, like the other quiescence reads. */
	return sys->snap && atomic_load_explicit(&sys->snap->threads, memory_order_seq_cst) > 0;
}

/* ---- record buffers ------------------------------------------------- */

static void sbuf_drop(struct ura__sbuf *b)
{
	struct ura__schunk *c = atomic_load_explicit(&b->head, memory_order_relaxed);
	while (c) {
		struct ura__schunk *n = atomic_load_explicit(&c->next, memory_order_relaxed);
		free(c);
		c = n;
	}
	atomic_store_explicit(&b->head, NULL, memory_order_relaxed);
	b->tail = NULL;
}

/* Owner: room for a record of n bytes of snapshot `id`, at *at; publish
 * it with sbuf_commit. *at is NULL when the snapshot is over (nothing
 * wanted); -ENOMEM when no chunk could be had. Bytes written past the
 * published `used` are invisible to the reader until the commit. */
static int sbuf_reserve(struct ura__sbuf *b, uint64_t id, size_t n, unsigned char **at)
{
	*at = NULL;
	uint64_t have = atomic_load_explicit(&b->id, memory_order_relaxed);
	if (have > id)
		return 0; /* decided for a snapshot that is over: not wanted */
	if (have != id) {
		/* Left from an earlier snapshot, whose thread finished reading
		 * before this one could start (see ura_snapshot). */
		sbuf_drop(b);
		/* release: the reader that acquires id == ours sees head. */
		atomic_store_explicit(&b->id, id, memory_order_release);
	}
	struct ura__schunk *c = b->tail;
	size_t used = c ? atomic_load_explicit(&c->used, memory_order_relaxed) : 0;
	if (c && c->cap - used >= n) {
		*at = c->data + used;
		return 0;
	}
	size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;
	struct ura__schunk *nc = malloc(sizeof *nc + cap);
	if (!nc)
		return -ENOMEM;
	atomic_init(&nc->next, NULL);
	nc->cap = cap;
	atomic_init(&nc->used, 0);
	/* release: publishes the chunk (empty: used 0) to the reader, who
	 * acquires next or head, then used. */
	if (c)
		atomic_store_explicit(&c->next, nc, memory_order_release);
	else
		atomic_store_explicit(&b->head, nc, memory_order_release);
	b->tail = nc;
	*at = nc->data;
	return 0;
}

/* Owner: publishes the n bytes written at the tail chunk's end. */
static void sbuf_commit(struct ura__sbuf *b, size_t n)
{
	struct ura__schunk *c = b->tail;
	size_t used = atomic_load_explicit(&c->used, memory_order_relaxed);
	/* release: pairs with the reader's acquire of used, then it reads
	 * the bytes. */
	atomic_store_explicit(&c->used, used + n, memory_order_release);
}

/* Owner: appends one record of snapshot `id` and publishes it. */
static int sbuf_append(struct ura__sbuf *b, uint64_t id, const void *rec, size_t n)
{
	unsigned char *at;
	int rc = sbuf_reserve(b, id, n, &at);
	if (rc < 0 || !at)
		return rc;
	memcpy(at, rec, n);
	sbuf_commit(b, n);
	return 0;
}

/* ---- capture -------------------------------------------------------- */

static const struct ura__snap_reg *reg_find(struct ura__snap *S, const ura_class *cls)
{
	for (unsigned i = 0; i < S->nreg; i++)
		if (S->reg[i].cls == cls)
			return &S->reg[i];
	return NULL;
}

static void store(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
		  uint64_t id)
{
	if (rec->err || sbuf_append(buf, id, rec->p, rec->n) < 0)
		atomic_store_explicit(&S->oom, 1, memory_order_relaxed);
}

/* A FAIL record (or SKIP, with skip_unsupported): one line of text. */
static void problem(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
		    uint64_t id, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void problem(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
		    uint64_t id, const char *fmt, ...)
{
	char line[300];
	va_list ap;
	va_start(ap, fmt);
	int len = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof line)
		len = sizeof line - 1;
	rec->n = 0;
	rec->err = 0;
	ura__b_u32(rec, atomic_load_explicit(&S->skip, memory_order_relaxed) ?
		   URA__REC_SKIP : URA__REC_FAIL);
	ura__b_u32(rec, (uint32_t)len);
	ura__b_put(rec, line, (size_t)len);
	store(S, buf, rec, id);
}

static const char *why_value(uint32_t type)
{
	return type == URA_T_PTR ? "an opaque pointer" :
	       type == URA_T_STR ? "a string" : "bytes";
}

/* The actor's record (FORMAT.md); `a` is ours (token) and alive. */
static void capture_actor(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
			  struct ura__actor *a, unsigned P, uint64_t id)
{
	ura_system *sys = S->sys;
	uint32_t gen = atomic_load_explicit(&a->gen, memory_order_relaxed);
	const char *cname = a->cls->name;
	const struct ura__snap_reg *rg = reg_find(S, a->cls);
	struct ura__actor_x *x = a->x;
	if (!rg) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: class not registered (ura_snap_register)",
			cname, a->idx, gen);
		return;
	}
	int32_t beh = -1;
	if (a->beh != a->cls->initial) {
		for (unsigned i = 0; i < rg->sc.nbehaviors && beh < 0; i++)
			if (rg->sc.behaviors[i] == a->beh)
				beh = (int32_t)i;
		if (beh < 0) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: in behavior %s, not in its class's "
				"ura_snap_class.behaviors", cname, a->idx, gen,
				a->beh->name ? a->beh->name : "(unnamed)");
			return;
		}
	}
	if (x && x->pending) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: has requests awaiting replies "
			"(their continuations cannot be saved)", cname, a->idx, gen);
		return;
	}
	uint32_t bt = x ? x->bound.type : 0;
	if (bt == URA_T_PTR || bt == URA_T_STR || bt == URA_T_BYTES) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: its bound value is %s", cname, a->idx,
			gen, why_value(bt));
		return;
	}
	for (struct ura_msg *m = x ? x->stash : NULL; m;
	     m = atomic_load_explicit(&m->next, memory_order_relaxed)) {
		unsigned at = ura__msg_ptr_at(m);
		if (at) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: a stashed message holds an "
				"opaque pointer (value %u)", cname, a->idx, gen, at - 1);
			return;
		}
	}

	rec->n = 0;
	rec->err = 0;
	ura__b_u32(rec, URA__REC_ACTOR);
	ura__b_u32(rec, 0); /* length, patched below */
	ura__b_u64(rec, ura__ref_make(a->idx, gen).id);
	ura__b_u32(rec, (uint32_t)(rg - S->reg));
	ura__b_u16(rec, (uint16_t)ura__home(a));
	ura__b_u16(rec, (uint16_t)((x && x->rt ? URA__AF_RT : 0) | (bt ? URA__AF_BOUND : 0)));
	ura__b_u32(rec, (uint32_t)beh);
	if (bt)
		ura__snap_put_value(rec, &x->bound);
	size_t at = rec->n;
	ura__b_u32(rec, 0); /* state length */
	if (rg->sc.save) {
		ura_snap_out out = { rec, rec->n, 0 };
		int rc = rg->sc.save(&out, a->state);
		if (out.big) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: its saved state is over %zu "
				"bytes, the most a snapshot holds for one actor", cname, a->idx, gen,
				URA__SNAP_LEN_MAX);
			return;
		}
		if (rc < 0) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: save callback failed: %s", cname,
				a->idx, gen, ura_strerror(rc));
			return;
		}
	} else {
		if (a->state && a->cls->state_size > URA__SNAP_LEN_MAX) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: its state is %zu bytes, over "
				"the %zu a snapshot holds for one actor", cname, a->idx, gen,
				a->cls->state_size, URA__SNAP_LEN_MAX);
			return;
		}
		ura__b_put(rec, a->state, a->state ? a->cls->state_size : 0);
	}
	ura__b_patch32(rec, at, (uint32_t)(rec->n - at - 4));
	uint32_t nstash = 0;
	for (struct ura_msg *m = x ? x->stash : NULL; m;
	     m = atomic_load_explicit(&m->next, memory_order_relaxed))
		nstash++;
	ura__b_u32(rec, nstash);
	for (struct ura_msg *m = x ? x->stash : NULL; m;
	     m = atomic_load_explicit(&m->next, memory_order_relaxed))
		ura__snap_put_msg(rec, m);
	/* Pending delayed sends: part of the state, re-armed on restore with
	 * what they had left. Restamped to the new phase, so one firing
	 * later is never also recorded as a message in flight. */
	at = rec->n;
	ura__b_u32(rec, 0);
	uint32_t ntimers = 0;
	uint64_t now = ura__now_ns();
	for (uint32_t i = 0; x && x->timers && i < x->timers->n; i++) {
		ura_timer h = x->timers->v[i];
		struct ura_msg *m;
		uint64_t deadline;
		ura_ref to;
		if (ura__timer_snap_lock(sys, h, &m, &deadline, &to) < 0)
			continue; /* fired or cancelled before the cut */
		unsigned pat = ura__msg_ptr_at(m);
		if (pat) {
			ura__timer_snap_unlock(sys, h);
			problem(S, buf, rec, id, "actor %s <%u.%u>: a delayed send holds an opaque "
				"pointer (value %u)", cname, a->idx, gen, pat - 1);
			return;
		}
		ura__b_u64(rec, (uint64_t)h);
		ura__b_u64(rec, deadline > now ? deadline - now : 0);
		ura__b_u64(rec, to.id);
		ura__snap_put_msg(rec, m);
		m->flags = (uint8_t)((m->flags & ~URA__MF_PH) | (P ? URA__MF_PH : 0));
		ura__timer_snap_unlock(sys, h);
		ntimers++;
	}
	ura__b_patch32(rec, at, ntimers);
	if (rec->n - 8 > URA__SNAP_LEN_MAX) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: its state, stash and delayed sends "
			"are over %zu bytes, the most a snapshot holds for one actor", cname,
			a->idx, gen, URA__SNAP_LEN_MAX);
		return;
	}
	ura__b_patch32(rec, 4, (uint32_t)(rec->n - 8));
	atomic_fetch_add_explicit(&S->ntimers, ntimers, memory_order_relaxed);
	store(S, buf, rec, id);
}

void ura__snap_capture(struct ura__worker *w, struct ura__actor *a)
{
	ura_system *sys = w->sys;
	struct ura__snap *S = sys->snap;
	/* acquire: pairs with the flip in snap_main; the registry, the
	 * snapshot's id and options are set before it. */
	unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
	if (a->snap_ph == P)
		return;
	a->snap_ph = P & 1;
	/* acquire: as above (the state is set before the flip). */
	uint64_t st = atomic_load_explicit(&S->state, memory_order_acquire);
	if (a->state_kind != URA__A_ALIVE || !(st & 1) || ((st >> 1) & 1) != P)
		return;
	capture_actor(S, &w->snap.buf, &w->snap.scratch, a, P, st >> 1);
}

void ura__snap_spawned(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	/* seq_cst fence: pairs with the one after the flip in snap_main
	 * (Dekker). Either we see the new phase, or the snapshot thread's
	 * scan sees this actor alive: never neither. */
	ura__fence_seq_cst();
	unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
	if (!w) { /* from outside: the system's phase */
		a->snap_ph = P & 1;
		return;
	}
	/* Spawned in a turn: part of that actor's phase. An old-phase actor's
	 * child exists in the cut (its parent's saved state may hold its
	 * ref): captured now, as init left it. */
	a->snap_ph = (w->snap.cur & URA__MF_PH) ? 1 : 0;
	if (a->snap_ph != P)
		ura__snap_capture(w, a);
}

/* An old-phase message handled by an actor already in the new phase: it
 * was in flight at the cut. */
static void record_msg(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m,
		       uint64_t id)
{
	struct ura__snap *S = w->sys->snap;
	struct ura__bytes *rec = &w->snap.scratch;
	unsigned at = ura__msg_ptr_at(m);
	if (at) {
		char name[URA_ATOM_MAX + 1];
		problem(S, &w->snap.buf, rec, id, "message %s(...) to actor %s <%u.%u>: holds an "
			"opaque pointer (value %u)", ura_atom_name(m->tag, name), a->cls->name,
			a->idx, m->to_gen, at - 1);
		return;
	}
	/* Serialized straight into the worker's chunk (one copy: ~1M of
	 * these when a cut falls inside a long sending turn, bench/README.md). */
	size_t n = 24 + ura__snap_msg_len(m);
	unsigned char *p;
	if (sbuf_reserve(&w->snap.buf, id, n, &p) < 0) {
		atomic_store_explicit(&S->oom, 1, memory_order_relaxed);
		return;
	}
	if (!p)
		return; /* that snapshot is over */
	uint32_t hdr[2] = { URA__REC_MSG, (uint32_t)(n - 8) };
	/* Sequence numbers by the block, one RMW per turn rather than per
	 * message: a turn numbers its records from a block it took itself
	 * (a new turn on this worker, st.turns moved, or a spent block takes
	 * the next one). Numbers increase within a turn; one actor's next
	 * turn, anywhere, takes a block after this one's; each worker's
	 * buffer stays in order (order_msgs merges runs). Gaps are fine:
	 * the numbers only order the records (restore ignores them). */
	struct ura__wsnap *ws = &w->snap;
	/* relaxed: our own counter, bumped at the start of every turn
	 * (ura__actor_turn); only this thread writes it. */
	uint64_t turn = ura__ld(&w->st.turns);
	if (ws->seq_turn != turn || ws->seq_next == ws->seq_end) {
		/* relaxed: one actor's turns are ordered by the token's
		 * release/acquire chain, which orders these RMWs on S->seq
		 * too (coherence): a later turn's block is a later one. */
		ws->seq_next = atomic_fetch_add_explicit(&S->seq, SEQ_BLOCK,
							 memory_order_relaxed);
		ws->seq_end = ws->seq_next + SEQ_BLOCK;
		ws->seq_turn = turn;
	}
	uint64_t seq = ws->seq_next++;
	uint64_t to = ura__ref_make(a->idx, m->to_gen).id;
	memcpy(p, hdr, 8);
	memcpy(p + 8, &seq, 8);
	memcpy(p + 16, &to, 8);
	ura__snap_put_msg_raw(p + 24, m);
	sbuf_commit(&w->snap.buf, n);
}

int ura__snap_msg(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m,
		  unsigned *same)
{
	ura_system *sys = w->sys;
	struct ura__snap *S = sys->snap;
	unsigned mph = ura__msg_ph(m);
	int alive = a->state_kind == URA__A_ALIVE &&
		    m->to_gen == atomic_load_explicit(&a->gen, memory_order_relaxed);
	if (m->flags & URA__MF_POKE) {
		if (alive && a->snap_ph != mph) {
			ura__snap_recv(&w->snap, a->snap_ph, *same);
			*same = 0;
			ura__snap_capture(w, a);
		}
		ura__snap_recv(&w->snap, mph, 1);
		/* release: the capture above is published before the snapshot
		 * thread (acquire) sees the last poke handled. */
		atomic_fetch_sub_explicit(&S->pokes, 1, memory_order_release);
		return 1;
	}
	if (mph != a->snap_ph) {
		/* acquire: as in ura__snap_capture. */
		unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
		/* acquire: pairs with the release of the state in snap_main. */
		uint64_t st = atomic_load_explicit(&S->state, memory_order_acquire);
		if (mph == P) {
			/* From the new phase: capture first, it is not in the cut. */
			ura__snap_recv(&w->snap, a->snap_ph, *same);
			*same = 0;
			ura__snap_capture(w, a);
		} else if (alive && !(m->flags & URA__MF_NOSNAP) &&
			   (m->kind == URA__MK_PLAIN || m->kind == URA__MK_REQUEST ||
			    m->kind == URA__MK_RESPONSE) &&
			   (st & 1) && ((st >> 1) & 1) == (mph ^ 1u)) {
			/* Old for the snapshot collecting now: in flight at
			 * its cut. */
			record_msg(w, a, m, st >> 1);
		}
		/* Receive timeouts and request deadlines are not recorded:
		 * restore re-arms the former, and requests are refused. */
	}
	/* After the record: a receive the snapshot thread counts has its
	 * record visible. */
	ura__snap_recv(&w->snap, mph, 1);
	return 0;
}

/* ---- the snapshot thread -------------------------------------------- */

static void poke(struct ura__snap *S, struct ura__actor *a, uint32_t gen, unsigned P)
{
	ura_system *sys = S->sys;
	struct ura_msg *m = ura__msg_alloc(NULL, sizeof *m);
	if (!m) {
		atomic_store_explicit(&S->oom, 1, memory_order_relaxed);
		return;
	}
	ura__msg_fill(m, POKE_TAG, URA_NOREF, NULL, 0);
	m->to_gen = gen;
	m->flags = (uint8_t)(URA__MF_SNAPD | URA__MF_POKE | (P ? URA__MF_PH : 0));
	atomic_fetch_add_explicit(&S->pokes, 1, memory_order_relaxed);
	ura__ext_sent_inc(sys);
	ura__snap_ext_sent(sys, m);
	if (ura__mb_push(&a->mb, m))
		ura__schedule(sys, NULL, a);
}

/* Every actor alive now: captured here if idle (we take its token the way
 * a spawn takes a free slot), else poked. */
static void scan(struct ura__snap *S, unsigned P)
{
	ura_system *sys = S->sys;
	/* acquire: pairs with the release of idx_hwm in reserve() (actor.c). */
	uint32_t hwm = atomic_load_explicit(&sys->idx_hwm, memory_order_acquire);
	for (uint32_t idx = 1; idx < hwm; idx++) {
		struct ura__actor *a = ura__slot_get(sys, idx);
		if (!a)
			continue;
		/* acquire: pairs with the release of gen in spawn. */
		uint32_t gen = atomic_load_explicit(&a->gen, memory_order_acquire);
		if (!(gen & 1))
			continue;
		if (!ura__mb_claim(&a->mb)) {
			poke(S, a, gen, P);
			continue;
		}
		if (a->state_kind == URA__A_ALIVE && a->snap_ph != P) {
			a->snap_ph = P & 1;
			capture_actor(S, &S->tbuf, &S->scratch, a, P, S->id);
		}
		if (!ura__mb_mark_idle(&a->mb))
			ura__schedule(sys, NULL, a);
	}
}

/*
 * The old phase is over when every poke was handled (so every actor is in
 * the new phase: see snap.h) and as many old-phase messages were received
 * as were sent. Receives are read first, with acquire: a receive seen
 * implies its send is seen, so equal sums mean every send counted was
 * received; sends not counted yet can only come from threads that are not
 * actors, inputs that land after the cut.
 */
static int old_phase_over(struct ura__snap *S, unsigned old)
{
	ura_system *sys = S->sys;
	/* acquire: pairs with the release decrement after each capture. */
	if (atomic_load_explicit(&S->pokes, memory_order_acquire))
		return 0;
	uint64_t r = 0, s = 0;
	for (unsigned i = 0; i < sys->nworkers; i++)
		r += atomic_load_explicit(&sys->workers[i].snap.recv[old], memory_order_acquire);
	for (unsigned i = 0; i < sys->nworkers; i++)
		s += atomic_load_explicit(&sys->workers[i].snap.sent[old], memory_order_relaxed);
	for (unsigned i = 0; i < URA__EXT_SHARDS; i++)
		s += atomic_load_explicit(&S->ext[i].sent[old], memory_order_relaxed);
	return r == s;
}

struct span {
	const unsigned char *p; /* the record, from its type field */
	size_t n;               /* header included */
	uint64_t seq, to;
};

struct gather {
	struct span *actors, *msgs;
	size_t nactors, nmsgs, capa, capm;
	size_t *runs, nruns;    /* where each buffer's messages start */
	size_t bytes;           /* of the actor and message records */
	struct ura__bytes fails, skips;
	uint64_t nfails, nskips;
	struct ura__map refs;   /* actor ref -> 1 */
	int err;
};

static int span_add(struct span **v, size_t *n, size_t *cap, struct span s)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 256;
		struct span *nv = realloc(*v, c * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = s;
	return 0;
}

static void text_add(struct ura__bytes *t, uint64_t *count, const unsigned char *p, size_t n)
{
	if (++*count > REPORT_LINES)
		return;
	if (t->n)
		ura__b_u8(t, '\n');
	ura__b_put(t, p, n);
}

static void gather_buf(struct gather *g, struct ura__sbuf *b, uint64_t id)
{
	/* acquire: pairs with the owner's release of id and head. */
	if (atomic_load_explicit(&b->id, memory_order_acquire) != id)
		return;
	g->runs[g->nruns++] = g->nmsgs;
	for (struct ura__schunk *c = atomic_load_explicit(&b->head, memory_order_acquire); c;
	     c = atomic_load_explicit(&c->next, memory_order_acquire)) {
		size_t used = atomic_load_explicit(&c->used, memory_order_acquire);
		for (size_t off = 0; off + 8 <= used;) {
			uint32_t type, len;
			memcpy(&type, c->data + off, 4);
			memcpy(&len, c->data + off + 4, 4);
			const unsigned char *p = c->data + off;
			struct span s = { p, (size_t)len + 8, 0, 0 };
			int rc = 0;
			if (type == URA__REC_ACTOR || type == URA__REC_MSG)
				g->bytes += s.n;
			if (type == URA__REC_ACTOR) {
				memcpy(&s.to, p + 8, 8);
				rc = span_add(&g->actors, &g->nactors, &g->capa, s);
				if (!rc)
					rc = ura__map_put(&g->refs, s.to, 1);
			} else if (type == URA__REC_MSG) {
				memcpy(&s.seq, p + 8, 8);
				memcpy(&s.to, p + 16, 8);
				rc = span_add(&g->msgs, &g->nmsgs, &g->capm, s);
			} else if (type == URA__REC_FAIL) {
				text_add(&g->fails, &g->nfails, p + 8, len);
			} else if (type == URA__REC_SKIP) {
				text_add(&g->skips, &g->nskips, p + 8, len);
			}
			if (rc)
				g->err = rc;
			off += (size_t)len + 8;
		}
	}
}

static int by_seq(const void *x, const void *y)
{
	const struct span *a = x, *b = y;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The messages in sequence order. Each buffer's run is in order already
 * (a worker takes its sequence numbers as it appends), so a merge of the
 * few runs does it; qsort only for many workers. */
static int order_msgs(struct gather *g)
{
	if (g->nruns <= 1 || g->nmsgs < 2)
		return 0;
	if (g->nruns > 16) {
		qsort(g->msgs, g->nmsgs, sizeof *g->msgs, by_seq);
		return 0;
	}
	struct span *out = malloc(g->nmsgs * sizeof *out);
	if (!out)
		return -ENOMEM;
	size_t at[17], end[17];
	for (size_t r = 0; r < g->nruns; r++) {
		at[r] = g->runs[r];
		end[r] = r + 1 < g->nruns ? g->runs[r + 1] : g->nmsgs;
	}
	for (size_t k = 0; k < g->nmsgs; k++) {
		size_t best = SIZE_MAX;
		for (size_t r = 0; r < g->nruns; r++)
			if (at[r] < end[r] &&
			    (best == SIZE_MAX || g->msgs[at[r]].seq < g->msgs[at[best]].seq))
				best = r;
		out[k] = g->msgs[at[best]++];
	}
	free(g->msgs);
	g->msgs = out;
	return 0;
}

static void put_groups(ura_system *sys, struct gather *g, struct ura__bytes *body,
		       uint64_t *ngroups)
{
	pthread_mutex_lock(&sys->group_lock);
	for (struct ura_group *gr = sys->groups; gr; gr = gr->next) {
		pthread_rwlock_rdlock(&gr->lock);
		size_t start = body->n;
		size_t nlen = gr->name ? strlen(gr->name) : 0;
		ura__b_u32(body, URA__REC_GROUP);
		ura__b_u32(body, 0);
		ura__b_u64(body, gr->id);
		ura__b_u16(body, (uint16_t)nlen);
		ura__b_put(body, gr->name, nlen);
		size_t at = body->n;
		ura__b_u32(body, 0);
		uint32_t n = 0;
		for (uint32_t i = 0; i < gr->cap; i++) {
			uint64_t k = gr->slots[i];
			/* Members the snapshot holds; stopped ones are not. */
			if (k > 1 && ura__map_get(&g->refs, k, NULL)) {
				ura__b_u64(body, k);
				n++;
			}
		}
		pthread_rwlock_unlock(&gr->lock);
		ura__b_patch32(body, at, n);
		if (body->n - start - 8 > URA__SNAP_LEN_MAX && !body->err)
			body->err = -EFBIG; /* 512M members: persist says so */
		ura__b_patch32(body, start + 4, (uint32_t)(body->n - start - 8));
		++*ngroups;
	}
	pthread_mutex_unlock(&sys->group_lock);
}

/* Writes path durably (snap/file.c); *error says why it failed. */
static int write_file(const char *path, const struct ura__bytes *hdr,
		      const struct ura__bytes *body, const struct ura__bytes *tail,
		      char **error)
{
	struct iovec parts[3] = {
		{ hdr->p, hdr->n }, { body->p, body->n }, { tail->p, tail->n },
	};
	char why[512];
	int rc = ura__snap_file_write(path, parts, 3, why, sizeof why);
	if (rc < 0 && why[0])
		*error = strdup(why);
	return rc;
}

/* Builds the file from what the workers and this thread recorded. */
/* The lines gathered in b (the first REPORT_LINES of n), as one string
 * the caller owns, with a count of the rest; NULL without memory. */
static char *report_text(struct ura__bytes *b, uint64_t n)
{
	if (n > REPORT_LINES) {
		char more[64];
		snprintf(more, sizeof more, "\n... and %" PRIu64 " more", n - REPORT_LINES);
		ura__b_put(b, more, strlen(more));
	}
	ura__b_u8(b, 0);
	char *text = b->err ? NULL : (char *)b->p;
	b->p = NULL;
	return text;
}

static int persist(struct ura__snap *S, ura_snap_info *info, char **error, char **skipped)
{
	ura_system *sys = S->sys;
	struct gather g;
	memset(&g, 0, sizeof g);
	g.runs = malloc((sys->nworkers + 1) * sizeof *g.runs);
	if (!g.runs)
		return -ENOMEM;
	for (unsigned i = 0; i < sys->nworkers; i++)
		gather_buf(&g, &sys->workers[i].snap.buf, S->id);
	gather_buf(&g, &S->tbuf, S->id);
	int rc = g.err ? g.err : atomic_load_explicit(&S->oom, memory_order_relaxed) ? -ENOMEM : 0;
	if (g.nskips)
		*skipped = report_text(&g.skips, g.nskips);
	info->nskipped = g.nskips;
	if (g.nfails && !rc) {
		*error = report_text(&g.fails, g.nfails);
		rc = -EINVAL;
	}
	struct ura__bytes hdr = { 0 }, body = { 0 }, tail = { 0 };
	if (!rc)
		rc = order_msgs(&g);
	if (rc)
		goto out;
	/* One allocation for the records; classes and groups are small. */
	ura__b_grow(&body, g.bytes + 4096);
	/* Classes: every registered one (an actor names its class by index). */
	for (unsigned i = 0; i < S->nreg; i++) {
		const struct ura__snap_reg *r = &S->reg[i];
		size_t start = body.n, nlen = strlen(r->name);
		ura__b_u32(&body, URA__REC_CLASS);
		ura__b_u32(&body, 0);
		ura__b_u32(&body, i);
		ura__b_u64(&body, r->cls->state_size);
		ura__b_u32(&body, r->sc.nbehaviors);
		ura__b_u8(&body, r->sc.save ? 1 : 0);
		ura__b_u16(&body, (uint16_t)nlen);
		ura__b_put(&body, r->name, nlen);
		ura__b_patch32(&body, start + 4, (uint32_t)(body.n - start - 8));
	}
	for (size_t i = 0; i < g.nactors; i++)
		ura__b_put(&body, g.actors[i].p, g.actors[i].n);
	put_groups(sys, &g, &body, &info->groups);
	/* In-flight messages, in the order they were about to be handled;
	 * those to actors not in the cut (spawned by the new phase) or left
	 * out are dropped. */
	for (size_t i = 0; i < g.nmsgs; i++) {
		if (!ura__map_get(&g.refs, g.msgs[i].to, NULL))
			continue;
		ura__b_put(&body, g.msgs[i].p, g.msgs[i].n);
		info->messages++;
	}
	info->actors = g.nactors;
	info->timers = atomic_load_explicit(&S->ntimers, memory_order_relaxed);
	if (body.err) {
		rc = body.err;
		if (rc == -EFBIG)
			*error = strdup("a group has more members than a snapshot record holds");
		goto out;
	}
	/* Header (FORMAT.md). */
	char magic[8] = URA__SNAP_MAGIC;
	ura__b_put(&hdr, magic, 8);
	ura__b_u32(&hdr, URA__SNAP_VERSION);
	ura__b_u32(&hdr, URA__SNAP_HDR);
	ura__b_u64(&hdr, body.n);
	ura__b_u64(&hdr, S->id);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ura__b_u64(&hdr, (uint64_t)ts.tv_sec * URA_SEC + (uint64_t)ts.tv_nsec);
	ura__b_u64(&hdr, info->actors);
	ura__b_u64(&hdr, info->messages);
	ura__b_u32(&hdr, ura__crc32c(0, hdr.p, hdr.n));
	ura__b_u32(&hdr, 0);
	ura__b_u32(&tail, ura__crc32c(0, body.p, body.n));
	ura__b_u32(&tail, URA__SNAP_END);
	if (hdr.err || tail.err) {
		rc = -ENOMEM;
		goto out;
	}
	rc = write_file(S->path, &hdr, &body, &tail, error);
	if (!rc)
		info->bytes = hdr.n + body.n + tail.n;
out:
	ura__b_free(&hdr);
	ura__b_free(&body);
	ura__b_free(&tail);
	ura__b_free(&g.fails);
	ura__b_free(&g.skips);
	free(g.actors);
	free(g.msgs);
	free(g.runs);
	ura__map_free(&g.refs);
	return rc;
}

static void *snap_main(void *arg)
{
	struct ura__snap_thr *self = arg;
	struct ura__snap *S = self->S;
	ura_system *sys = S->sys;
	unsigned P = (unsigned)(S->id & 1), old = P ^ 1;
	ura_snap_info info;
	memset(&info, 0, sizeof info);
	char *error = NULL, *skipped = NULL;
	int rc = 0;

	/* The new phase starts here. seq_cst store, then a seq_cst fence:
	 * pairs with the fence in ura__snap_spawned (see there); and the
	 * store is the release that workers' acquire of snap_ph pairs with
	 * (the registry, id and options above it are theirs to read). */
	atomic_store_explicit(&S->state, S->id << 1 | 1, memory_order_relaxed);
	atomic_store_explicit(&sys->snap_ph, (uint8_t)P, memory_order_seq_cst);
	ura__fence_seq_cst();
	scan(S, P);
	unsigned nap = 20;
	while (!old_phase_over(S, old)) {
		/* acquire: pairs with the release in ura__snap_stop. */
		if (atomic_load_explicit(&S->cancel, memory_order_acquire) ||
		    atomic_load_explicit(&sys->shutdown, memory_order_acquire)) {
			rc = -ECANCELED;
			break;
		}
		struct timespec ts = { 0, (long)nap * 1000 };
		nanosleep(&ts, NULL);
		if (nap < 1000)
			nap *= 2;
	}
	/* release: a worker that still sees us collecting is one whose
	 * record the old phase did not need (an input from outside, after
	 * the cut); we read only what was counted. */
	atomic_store_explicit(&S->state, S->id << 1, memory_order_release);
	info.capture_ns = ura__now_ns() - S->t0;
	if (!rc)
		rc = persist(S, &info, &error, &skipped);
	info.status = rc;
	info.path = S->path;
	info.id = S->id;
	info.error = rc < 0 && error ? error : rc < 0 ? ura_strerror(rc) : NULL;
	info.skipped = skipped;
	info.duration_ns = ura__now_ns() - S->t0;
	if (rc < 0)
		ura__log(sys, URA_LOG_WARN, "snapshot %" PRIu64 " (%s) failed: %s", S->id, S->path,
			 info.error ? info.error : ura_strerror(rc));
	else
		ura__log(sys, URA_LOG_DEBUG, "snapshot %" PRIu64 ": %s, %" PRIu64 " actors, %"
			 PRIu64 " messages, %" PRIu64 " bytes, %.3f ms", S->id, S->path,
			 info.actors, info.messages, info.bytes, (double)info.duration_ns / 1e6);
	if (!ura_ref_null(S->opts.notify) && rc != -ECANCELED) {
		ura_value v[6] = {
			ura_v_i64(rc), ura_v_str(S->path), ura_v_i64((int64_t)info.actors),
			ura_v_i64((int64_t)info.messages), ura_v_i64((int64_t)info.bytes),
			ura_v_i64((int64_t)info.duration_ns),
		};
		ura_sendv_sys(sys, S->opts.notify, S->opts.tag ? S->opts.tag : URA_SNAP_DONE, v, 6);
	}
	/* The done callback may start the next snapshot, which takes over
	 * the path and options: it gets copies. */
	char *path = S->path;
	S->path = NULL;
	ura_snap_opts opts = S->opts;
	info.path = path;
	pthread_mutex_lock(&S->lock);
	/* release: pairs with the acquire in ura_snapshot; we are done with
	 * every buffer. */
	atomic_store_explicit(&S->active, 0, memory_order_release);
	pthread_mutex_unlock(&S->lock);
	if (opts.done)
		opts.done(opts.ud, &info);
	free(path);
	free(error);
	free(skipped);
	pthread_mutex_lock(&S->lock);
	/* seq_cst: pairs with the load in ura__snap_busy (quiescence). */
	atomic_fetch_sub_explicit(&S->threads, 1, memory_order_seq_cst);
	/* release: pairs with the acquire in reap(); nothing of ours is
	 * touched after it but the lock. */
	atomic_store_explicit(&self->finished, 1, memory_order_release);
	pthread_mutex_unlock(&S->lock);
	/* Awaiters may find the system quiescent now. sys outlives us:
	 * destroy joins this thread first. */
	ura__await_wake(sys);
	return NULL;
}

/* Joins finished snapshot threads (not the caller's own). S->lock held. */
static void reap(struct ura__snap *S, int all)
{
	for (struct ura__snap_thr **pp = &S->thr; *pp;) {
		struct ura__snap_thr *t = *pp;
		if ((all || atomic_load_explicit(&t->finished, memory_order_acquire)) &&
		    !pthread_equal(t->t, pthread_self())) {
			*pp = t->next;
			pthread_join(t->t, NULL);
			free(t);
		} else {
			pp = &t->next;
		}
	}
}

URA_API int ura_snapshot(ura_system *sys, const char *path, const ura_snap_opts *opts)
{
	if (!sys || !path || !*path)
		return -EINVAL;
	struct ura__snap *S = sys->snap;
	if (atomic_load_explicit(&sys->shutdown, memory_order_relaxed))
		return -ESHUTDOWN;
	pthread_mutex_lock(&S->lock);
	/* acquire: pairs with the release at the end of the last snapshot,
	 * after which its thread touches no buffer. */
	if (atomic_load_explicit(&S->active, memory_order_acquire)) {
		pthread_mutex_unlock(&S->lock);
		return -EBUSY;
	}
	reap(S, 0);
	char *p = strdup(path);
	struct ura__snap_thr *t = calloc(1, sizeof *t);
	if (!p || !t) {
		pthread_mutex_unlock(&S->lock);
		free(p);
		free(t);
		return -ENOMEM;
	}
	S->path = p;
	if (opts)
		S->opts = *opts;
	else
		memset(&S->opts, 0, sizeof S->opts);
	S->t0 = ura__now_ns();
	S->id = ++S->phase;
	atomic_store_explicit(&S->skip, S->opts.skip_unsupported, memory_order_relaxed);
	atomic_store_explicit(&S->pokes, 0, memory_order_relaxed);
	atomic_store_explicit(&S->oom, 0, memory_order_relaxed);
	atomic_store_explicit(&S->ntimers, 0, memory_order_relaxed);
	atomic_store_explicit(&S->active, 1, memory_order_relaxed);
	/* seq_cst: a quiescence check after this sees the snapshot. */
	atomic_fetch_add_explicit(&S->threads, 1, memory_order_seq_cst);
	t->S = S;
	int rc = pthread_create(&t->t, NULL, snap_main, t);
	if (rc) {
		/* Nothing started: the phase only moves in the thread. */
		S->phase--;
		S->id = S->phase;
		free(S->path);
		S->path = NULL;
		atomic_store_explicit(&S->active, 0, memory_order_relaxed);
		atomic_fetch_sub_explicit(&S->threads, 1, memory_order_seq_cst);
		pthread_mutex_unlock(&S->lock);
		free(t);
		return -rc;
	}
	t->next = S->thr;
	S->thr = t;
	pthread_mutex_unlock(&S->lock);
	return 0;
}

/* ---- registry ------------------------------------------------------- */

URA_API int ura_snap_register(ura_system *sys, const ura_snap_class *sc)
{
	if (!sys || !sc || !sc->cls || !sc->cls->name || !*sc->cls->name ||
	    !sc->cls->initial || !sc->save != !sc->load ||
	    (sc->nbehaviors && !sc->behaviors) || strlen(sc->cls->name) > UINT16_MAX)
		return -EINVAL;
	for (unsigned i = 0; i < sc->nbehaviors; i++)
		if (!sc->behaviors[i])
			return -EINVAL;
	struct ura__snap *S = sys->snap;
	pthread_mutex_lock(&S->lock);
	int rc = 0;
	if (atomic_load_explicit(&S->active, memory_order_relaxed)) {
		rc = -EBUSY;
		goto out;
	}
	for (unsigned i = 0; i < S->nreg; i++) {
		if (S->reg[i].cls == sc->cls || !strcmp(S->reg[i].name, sc->cls->name)) {
			rc = -EEXIST;
			goto out;
		}
	}
	if (S->nreg == S->capreg) {
		unsigned cap = S->capreg ? S->capreg * 2 : 8;
		struct ura__snap_reg *r = realloc(S->reg, cap * sizeof *r);
		if (!r) {
			rc = -ENOMEM;
			goto out;
		}
		S->reg = r;
		S->capreg = cap;
	}
	struct ura__snap_reg *r = &S->reg[S->nreg];
	r->name = strdup(sc->cls->name);
	r->behaviors = NULL;
	if (sc->nbehaviors)
		r->behaviors = malloc(sc->nbehaviors * sizeof *r->behaviors);
	if (!r->name || (sc->nbehaviors && !r->behaviors)) {
		free(r->name);
		free(r->behaviors);
		rc = -ENOMEM;
		goto out;
	}
	r->cls = sc->cls;
	r->sc = *sc;
	for (unsigned i = 0; i < sc->nbehaviors; i++)
		r->behaviors[i] = sc->behaviors[i];
	r->sc.behaviors = r->behaviors;
	S->nreg++;
out:
	pthread_mutex_unlock(&S->lock);
	return rc;
}

/* ---- save callbacks' writer ----------------------------------------- */

/* Refuses a put that would make the state longer than its 32-bit length
 * field says, before anything is copied (the state need not fit in
 * memory twice to be refused). */
static int put_room(ura_snap_out *out, size_t n)
{
	if (n > URA__SNAP_LEN_MAX - (out->b->n - out->start)) {
		out->big = 1;
		return -EFBIG;
	}
	return 0;
}

URA_API int ura_snap_put(ura_snap_out *out, const void *p, size_t n)
{
	if (!out || (n && !p))
		return -EINVAL;
	if (put_room(out, n) < 0)
		return -EFBIG;
	ura__b_put(out->b, p, n);
	return out->b->err;
}

static int put_tagged(ura_snap_out *out, uint8_t tag, uint64_t v)
{
	if (!out)
		return -EINVAL;
	if (put_room(out, 9) < 0)
		return -EFBIG;
	ura__b_u8(out->b, tag);
	ura__b_u64(out->b, v);
	return out->b->err;
}

URA_API int ura_snap_put_ref(ura_snap_out *out, ura_ref r)
{
	return put_tagged(out, URA__ST_REF, r.id);
}

URA_API int ura_snap_put_timer(ura_snap_out *out, ura_timer t)
{
	return put_tagged(out, URA__ST_TIMER, (uint64_t)t);
}

URA_API int ura_snap_put_group(ura_snap_out *out, const ura_group *g)
{
	return put_tagged(out, URA__ST_GROUP, g ? g->id : 0);
}

/* ---- life cycle ----------------------------------------------------- */

int ura__snap_init(ura_system *sys)
{
	struct ura__snap *S = aligned_alloc(URA__CACHELINE, sizeof *S);
	if (!S)
		return -ENOMEM;
	memset(S, 0, sizeof *S);
	S->sys = sys;
	pthread_mutex_init(&S->lock, NULL);
	for (unsigned i = 0; i < sys->nworkers; i++)
		sys->workers[i].snap.cur = URA__MF_SNAPD; /* phase 0 */
	sys->snap = S;
	return 0;
}

void ura__snap_stop(ura_system *sys)
{
	struct ura__snap *S = sys->snap;
	if (!S)
		return;
	/* release: pairs with the acquire in snap_main's wait. */
	atomic_store_explicit(&S->cancel, 1, memory_order_release);
	pthread_mutex_lock(&S->lock);
	struct ura__snap_thr *list = S->thr;
	S->thr = NULL;
	pthread_mutex_unlock(&S->lock);
	/* Joined unlocked: a finishing thread takes the lock once more. */
	while (list) {
		struct ura__snap_thr *t = list;
		list = t->next;
		pthread_join(t->t, NULL);
		free(t);
	}
}

void ura__snap_fini(ura_system *sys)
{
	struct ura__snap *S = sys->snap;
	if (!S)
		return;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		sbuf_drop(&sys->workers[i].snap.buf);
		ura__b_free(&sys->workers[i].snap.scratch);
	}
	sbuf_drop(&S->tbuf);
	ura__b_free(&S->scratch);
	for (unsigned i = 0; i < S->nreg; i++) {
		free(S->reg[i].name);
		free(S->reg[i].behaviors);
	}
	free(S->reg);
	free(S->path);
	pthread_mutex_destroy(&S->lock);
	free(S);
	sys->snap = NULL;
}
