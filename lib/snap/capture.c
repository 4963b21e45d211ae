/* SPDX-License-Identifier: MIT */
/*
 * Snapshots, the workers' side (the design is in snap.h): capturing an
 * actor before its first message of the new phase, recording the
 * messages in flight at the cut, into per-worker record buffers.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor/signal.h"
#include "snap/snap_int.h"
#include "time/timers.h"

/* Atomics: a relaxed access without a comment is to a field one thread
 * writes (a buffer's owner, or whoever holds S->lock) that orders nothing
 * else; every other ordering says what it pairs with. */

#define CHUNK_BYTES (64u << 10)
/* Message sequence numbers a turn takes at once (record_msg): the
 * default batch of messages per turn fits in one. */
#define SEQ_BLOCK 256u

/* ---- record buffers ------------------------------------------------- */

void ura__sbuf_drop(struct ura__sbuf *b)
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
		ura__sbuf_drop(b);
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
	struct ura__schunk *nc = ura__malloc(sizeof *nc + cap);
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
void ura__snap_capture_actor(struct ura__snap *S, struct ura__sbuf *buf, struct ura__bytes *rec,
			  struct ura__actor *a, unsigned P, uint64_t id)
{
	ura_system *sys = S->sys;
	uint32_t gen = atomic_load_explicit(&a->gen, memory_order_relaxed);
	const char *cname = a->cls->name;
	const struct ura__snap_reg *rg = reg_find(S, a->cls);
	struct ura__actor_x *x = a->x;
	if (a->cls->body) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: a context-switching actor (its stack "
			"cannot be saved)", cname, ura__idx_no(a->idx), gen);
		return;
	}
	if (!rg) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: class not registered (ura_snap_register)",
			cname, ura__idx_no(a->idx), gen);
		return;
	}
	int32_t beh = -1;
	if (a->beh != a->cls->initial) {
		for (unsigned i = 0; i < rg->sc.nbehaviors && beh < 0; i++)
			if (rg->sc.behaviors[i] == a->beh)
				beh = (int32_t)i;
		if (beh < 0) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: in behavior %s, not in its class's "
				"ura_snap_class.behaviors", cname, ura__idx_no(a->idx), gen,
				a->beh->name ? a->beh->name : "(unnamed)");
			return;
		}
	}
	if (x && x->pending) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: has requests awaiting replies "
			"(their continuations cannot be saved)", cname, ura__idx_no(a->idx), gen);
		return;
	}
	struct ura__sig *sg = x ? x->sig : NULL;
	if (a->link1 || (sg && (sg->n || sg->trap))) {
		unsigned k[5] = { 0 };
		k[URA__S_LINK] = a->link1 != 0; /* the inline link (actor/signal.c 7.) */
		for (uint32_t i = 0; sg && i < sg->cap; i++)
			if (sg->tab[i].type >= URA__S_MON && sg->tab[i].type <= URA__S_PROMISE)
				k[sg->tab[i].type]++;
		problem(S, buf, rec, id, "actor %s <%u.%u>: has %u monitor(s), %u watcher(s), "
			"%u link(s), %u open promise(s)%s (snapshots do not save links, monitors, "
			"promises or trap_exit: restore could not re-create their DOWN and EXIT "
			"guarantees with the other side)", cname, ura__idx_no(a->idx), gen,
			k[URA__S_MON], k[URA__S_WATCH], k[URA__S_LINK], k[URA__S_PROMISE],
			sg && sg->trap ? ", traps exits" : "");
		return;
	}
	uint32_t bt = x ? x->bound.type : 0;
	if (bt == URA_T_PTR || bt == URA_T_STR || bt == URA_T_BYTES) {
		problem(S, buf, rec, id, "actor %s <%u.%u>: its bound value is %s", cname, ura__idx_no(a->idx),
			gen, why_value(bt));
		return;
	}
	for (struct ura_msg *m = x ? x->stash : NULL; m;
	     m = atomic_load_explicit(&m->next, memory_order_relaxed)) {
		unsigned at = ura__msg_ptr_at(m);
		if (at) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: a stashed message holds an "
				"opaque pointer (value %u)", cname, ura__idx_no(a->idx), gen, at - 1);
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
				"bytes, the most a snapshot holds for one actor", cname, ura__idx_no(a->idx), gen,
				URA__SNAP_LEN_MAX);
			return;
		}
		if (rc < 0) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: save callback failed: %s", cname,
				ura__idx_no(a->idx), gen, ura_strerror(rc));
			return;
		}
	} else {
		if (a->state && a->cls->state_size > URA__SNAP_LEN_MAX) {
			problem(S, buf, rec, id, "actor %s <%u.%u>: its state is %zu bytes, over "
				"the %zu a snapshot holds for one actor", cname, ura__idx_no(a->idx), gen,
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
				"pointer (value %u)", cname, ura__idx_no(a->idx), gen, pat - 1);
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
			ura__idx_no(a->idx), gen, URA__SNAP_LEN_MAX);
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
	/* acquire: pairs with the flip in ura_snapshot; the registry, the
	 * snapshot's id and options are set before it. */
	unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
	if (a->snap_ph == P)
		return;
	a->snap_ph = P & 1;
	/* acquire: as above (the state is set before the flip). */
	uint64_t st = atomic_load_explicit(&S->state, memory_order_acquire);
	if (a->state_kind != URA__A_ALIVE || !(st & 1) || ((st >> 1) & 1) != P)
		return;
	ura__snap_capture_actor(S, &w->rec->buf, &w->rec->scratch, a, P, st >> 1);
}

/* An old-phase message handled by an actor already in the new phase: it
 * was in flight at the cut. */
static void record_msg(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m,
		       uint64_t id)
{
	struct ura__snap *S = w->sys->snap;
	struct ura__bytes *rec = &w->rec->scratch;
	if (m->kind >= URA__MK_ERROR) {
		/* A monitor, link, exit signal, DOWN or a request's error in
		 * flight: restore could not keep its once-only guarantee (the
		 * actors' tables it belongs to are not saved either). */
		char name[URA_ATOM_MAX + 1];
		problem(S, &w->rec->buf, rec, id, "message %s(...) to actor %s <%u.%u>: a link, "
			"monitor or exit signal in flight at the cut (snapshots do not save them)",
			ura_atom_name(m->tag, name), a->cls->name, ura__idx_no(a->idx), m->to_gen);
		return;
	}
	unsigned at = ura__msg_ptr_at(m);
	if (at) {
		char name[URA_ATOM_MAX + 1];
		problem(S, &w->rec->buf, rec, id, "message %s(...) to actor %s <%u.%u>: holds an "
			"opaque pointer (value %u)", ura_atom_name(m->tag, name), a->cls->name,
			ura__idx_no(a->idx), m->to_gen, at - 1);
		return;
	}
	/* Serialized straight into the worker's chunk (one copy: ~1M of
	 * these when a cut falls inside a long sending turn, bench/README.md). */
	size_t n = 24 + ura__snap_msg_len(m);
	unsigned char *p;
	if (sbuf_reserve(&w->rec->buf, id, n, &p) < 0) {
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
	struct ura__wrec *ws = w->rec;
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
	sbuf_commit(&w->rec->buf, n);
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
			ura__phase_recv(&w->ph, a->snap_ph, *same);
			*same = 0;
			ura__snap_capture(w, a);
		}
		ura__phase_recv(&w->ph, mph, 1);
		/* release: the capture above is published before the snapshot
		 * thread (acquire) sees the last poke handled. */
		atomic_fetch_sub_explicit(&S->pokes, 1, memory_order_release);
		return 1;
	}
	if (mph != a->snap_ph) {
		/* acquire: as in ura__snap_capture. */
		unsigned P = atomic_load_explicit(&sys->snap_ph, memory_order_acquire);
		/* acquire: read after snap_ph's acquire, which pairs with
		 * the flip in ura_snapshot (state is stored before it). */
		uint64_t st = atomic_load_explicit(&S->state, memory_order_acquire);
		if (mph == P) {
			/* From the new phase: capture first, it is not in the cut. */
			ura__phase_recv(&w->ph, a->snap_ph, *same);
			*same = 0;
			ura__snap_capture(w, a);
		} else if (alive && !(m->flags & URA__MF_NOSNAP) &&
			   (m->kind == URA__MK_PLAIN || m->kind == URA__MK_REQUEST ||
			    m->kind == URA__MK_RESPONSE || m->kind >= URA__MK_ERROR) &&
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
	ura__phase_recv(&w->ph, mph, 1);
	return 0;
}

