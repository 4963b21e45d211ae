/* SPDX-License-Identifier: MIT */
/*
 * Links, monitors and exit signals (Erlang's semantics; ura.h has the
 * contract). Why no DOWN or EXIT is ever lost or delivered twice:
 *
 * 1. Everything is a message. A monitor, a demonitor, a link, an unlink,
 *    an exit signal, a DOWN: each is a message of its own kind
 *    (URA__MK_MONITOR ... URA__MK_DOWN, msg/msg.h), sent through the one
 *    post path (core/post.h), counted for quiescence like any message, and
 *    acted on only by the receiver, in its turn, holding its token. Each
 *    actor's link and monitor tables (struct ura__sig, in its side record)
 *    are therefore read and written by one thread at a time, and there is
 *    no lock and no new atomic here at all: the orderings that make it
 *    safe are the mailbox's (core/mailbox.h) and the generation's
 *    (core/slot.h), which the post path already has. An actor that uses
 *    none of this has no table and pays a NULL test at its stop.
 *
 * 2. The race between a signal and the death of its receiver has exactly
 *    two outcomes, and each gives exactly one answer. A monitor message M
 *    from W to T is either handled by T while alive (T records W in its
 *    table; T's stop sends W one DOWN from that table, ura__sig_stop), or
 *    not: then M is a dead letter, because T's generation moved on before
 *    T reached it, and the dead-letter path (ura__sig_dead_letter) answers
 *    it with one DOWN instead. A message is either handled by its
 *    incarnation or counted a dead letter, never both (ura__actor_turn
 *    compares its to_gen once, under the token), and a send that sees the
 *    new generation fails at once (-ESRCH), so then the caller answers
 *    itself (ura_monitor's noproc DOWN). The same holds for LINK (one exit
 *    signal back), UNLINK (one acknowledgement) and REQUEST (one
 *    URA_ERROR, request.c).
 *
 * 3. Demonitor. W deletes the monitor from its own table before it
 *    returns; a DOWN is matched against that table when W takes it from
 *    its mailbox (ura__sig_recv), so a DOWN that was already on its way is
 *    dropped there, and a DOWN already taken but stashed is removed from
 *    the stash by the demonitor itself. The DEMONITOR message only spares
 *    T the entry (T may still send a DOWN, which W drops). Monitor ids
 *    count up per watcher incarnation and are never reused, so an old DOWN
 *    never matches a newer monitor. Since nothing waits for a DEMONITOR,
 *    it may go late: a turn's demonitors of one target travel in one
 *    message, sent when the target changes, when 7 are waiting, and at
 *    the latest where the turn, the spawn's init or the stop ends
 *    (ura__sig_dem_flush), so a snapshot, which captures between turns,
 *    never sees one waiting. Half the messages of a monitor + demonitor
 *    pair go (bench/signals). A DEMONITOR that arrives after T stopped is
 *    a dead letter, and needs no answer.
 *
 * 4. Links are two-sided and both sides may link, unlink and die at once,
 *    so they follow Erlang's link protocol with unlink ids: an entry is
 *    active, or unlinking with the id of the UNLINK it sent. unlink():
 *    active -> unlinking(u), send UNLINK(u). UNLINK(u) received: active
 *    -> gone (unlinking stays), always answered with UNLINK_ACK(u).
 *    UNLINK_ACK(u): unlinking(u) -> gone. link(): gone or unlinking ->
 *    active, send LINK. LINK received: gone -> active (active and
 *    unlinking stay). An exit signal from a link is acted on only if the
 *    entry is active, and removes the entry in any state; a stop sends one
 *    to every entry. A dead letter LINK is answered with an exit signal,
 *    a dead letter UNLINK(u) with UNLINK_ACK(u). An exhaustive search of
 *    every interleaving of link, unlink, stop and delivery for a pair (up
 *    to five operations each side, with the stop cascading through a
 *    non-trapping receiver) finds: both sides always agree once nothing
 *    is in flight (both linked or both not), no side keeps a link to an
 *    actor that stopped, and each side acts on at most one exit signal
 *    per link it made. tests/stress_signals.c drives the real thing.
 *
 * 5. Order. A DOWN or EXIT must arrive after every message the dead
 *    actor sent to its receiver. The stop's signals are sent from the
 *    dying turn through the same route as its messages (the route
 *    depends only on the two actors' home nodes, core/post.h), so they
 *    queue behind them. Signals made later, about an actor already gone
 *    (a dead letter's answer, ura_monitor's noproc), need care on a
 *    NUMA system, where the dead actor's last messages may still sit in
 *    a cross-node batch: ura__die flushes its worker's outboxes before it
 *    moves the generation on, so whoever sees the new generation (every
 *    later signal's sender does, with acquire) knows those batches are in
 *    the receiver node's inbox already, and such a late signal goes
 *    through an outbox and that inbox too (ura__sig_late_home): behind
 *    them, since a node's inbox delivers batches in the order they were
 *    pushed (core/outbox.c). A dead letter whose slot was not reused yet
 *    routes from the dead actor's home, as its messages did.
 *
 * 6. Late signals learn the real reason. The stopped incarnation's exit
 *    reason stays in its slot (a tombstone in the inline state area,
 *    struct ura__tomb) until the slot is reused, so a request, monitor or
 *    link that reaches it late is answered with that reason; after the
 *    reuse, with URA_NOPROC.
 *
 * 7. The first link is inline. An actor's first active link is held in
 *    its slot (a->link1, the partner's ref id, sharing the word of the
 *    free-slot link, which a live actor does not use), further ones and
 *    every unlinking one in the table. It is an entry of the table in
 *    all but place: the same owner (the token holder), the same protocol
 *    (4.: LINK adds it if absent, an exit signal from the partner takes
 *    it and is acted on, the stop sends it one), and ura_unlink moves it
 *    into the table, where the unlink's id is kept. A partner is never
 *    in both places: every add looks in both first. The reason a stop
 *    carries lives in the turn's ctx (struct ura__why), not the record,
 *    so a linked pair that exits with a reason makes no side record at
 *    all: 0 is "none", so a null ref's link stays in the table.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/signal.h"
#include "core/post.h"

#define TAG_MONITOR URA_ATOM("_monitor")
#define TAG_DEMONITOR URA_ATOM("_demonitor")
#define TAG_LINK URA_ATOM("_link")
#define TAG_UNLINK URA_ATOM("_unlink")
#define TAG_UNLINKED URA_ATOM("_unlinked")

/* ---- the table ------------------------------------------------------- */

static inline uint32_t sent_hash(uint32_t type, uint64_t k1, uint64_t k2)
{
	uint64_t h = (k1 ^ (k2 * 0xc2b2ae3d27d4eb4full) ^ type) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 32);
}

struct ura__sent *ura__sig_find(struct ura__sig *s, uint32_t type, uint64_t k1, uint64_t k2)
{
	uint32_t mask = s->cap - 1, h = sent_hash(type, k1, k2) & mask;
	for (uint32_t i = 0; i < s->cap; i++, h = (h + 1) & mask) {
		struct ura__sent *e = &s->tab[h];
		if (e->type == URA__S_FREE)
			return NULL;
		if (e->type == type && e->k1 == k1 && e->k2 == k2)
			return e;
	}
	return NULL;
}

static void put(struct ura__sent *tab, uint32_t cap, const struct ura__sent *e)
{
	uint32_t mask = cap - 1, h = sent_hash(e->type, e->k1, e->k2) & mask;
	while (tab[h].type != URA__S_FREE)
		h = (h + 1) & mask;
	tab[h] = *e;
}

/* Rebuilds the table at `cap` slots (deleted entries go). */
static int rehash(struct ura__sig *s, uint32_t cap)
{
	struct ura__sent tmp[URA__SIG_INLINE];
	struct ura__sent *old = s->tab, *t;
	uint32_t ocap = s->cap;
	if (old == s->inl) { /* rebuilding from inl: copy it out first */
		memcpy(tmp, s->inl, sizeof tmp);
		old = tmp;
	}
	if (cap == URA__SIG_INLINE) {
		t = s->inl;
		memset(t, 0, sizeof s->inl);
	} else {
		t = ura__calloc(cap, sizeof *t);
		if (!t)
			return -ENOMEM; /* old is still whole: tmp is only a copy */
	}
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].type != URA__S_FREE && old[i].type != URA__S_TOMB)
			put(t, cap, &old[i]);
	if (old != tmp)
		free(old);
	s->tab = t;
	s->cap = cap;
	s->used = s->n;
	return 0;
}

int ura__sig_add(struct ura__sig *s, uint32_t type, uint64_t k1, uint64_t k2, uint64_t v)
{
	if (!s->used) { /* empty, no tombstones (a link's first entry): no probe */
		struct ura__sent *e = &s->tab[sent_hash(type, k1, k2) & (s->cap - 1)];
		*e = (struct ura__sent){ k1, k2, v, type, 0 };
		s->used = s->n = 1;
		return 0;
	}
	/* The inline table may fill up (a probe visits at most cap slots);
	 * a heap table stays under 3/4. */
	int full = s->cap == URA__SIG_INLINE ? s->used + 1 > s->cap
					     : (s->used + 1) * 4 > s->cap * 3;
	if (full) {
		uint32_t cap = s->cap;
		if ((s->n + 1) * 2 > cap)
			cap *= 2;
		else if (cap > URA__SIG_INLINE && (s->n + 1) * 8 < cap)
			cap /= 2;
		int rc = rehash(s, cap);
		if (rc < 0)
			return rc;
	}
	struct ura__sent e = { k1, k2, v, type, 0 };
	uint32_t mask = s->cap - 1, h = sent_hash(type, k1, k2) & mask;
	while (s->tab[h].type != URA__S_FREE && s->tab[h].type != URA__S_TOMB)
		h = (h + 1) & mask;
	if (s->tab[h].type == URA__S_FREE)
		s->used++;
	s->tab[h] = e;
	s->n++;
	return 0;
}

/* Only an entry's type tells a free slot (find, add and the stop's walk
 * read nothing else of it), so emptying the inline table is four stores,
 * not a memset of its 128 bytes. */
static inline void inl_reset(struct ura__sig *s)
{
	for (unsigned i = 0; i < URA__SIG_INLINE; i++)
		s->inl[i].type = URA__S_FREE;
}

void ura__sig_del(struct ura__sig *s, struct ura__sent *e)
{
	e->type = URA__S_TOMB;
	s->n--;
	if (!s->n) { /* empty: start afresh, no tombstones */
		if (s->tab != s->inl)
			free(s->tab);
		s->tab = s->inl;
		s->cap = URA__SIG_INLINE;
		inl_reset(s);
		s->used = 0;
	}
}

static void table_clear(struct ura__sig *s)
{
	if (s->tab != s->inl)
		free(s->tab);
	s->tab = s->inl;
	s->cap = URA__SIG_INLINE;
	s->n = s->used = 0;
	inl_reset(s);
}

/* ---- the inline link (7.) ------------------------------------------------ */

/* Whether id is the actor's inline link (0, a null ref's id, never is:
 * link1 == 0 means none). */
static inline int link1_is(const struct ura__actor *a, uint64_t id)
{
	return id && a->link1 == id;
}

/* ---- the record -------------------------------------------------------- */

struct ura__sig *ura__sig_of(struct ura__worker *w, struct ura__actor *a)
{
	struct ura__actor_x *x = a->x;
	struct ura__sig *s;
	if (ura__likely(x && x->sig))
		return x->sig;
	if (!x) {
		/* Most side records are made for this record (a link, a
		 * monitor, an exit reason): both in one pool block, one get
		 * and one put a life (bench/signals pairs). */
		x = ura__actor_x_new_tail(w, a, sizeof *s);
		if (!x)
			return NULL;
		s = ura__actor_x_tail(x);
	} else {
		s = ura__pool_get(ura__pool_of(w), sizeof *s);
		if (!s)
			return NULL;
	}
	/* Field by field: most of the record is the inline table, whose
	 * free slots need only their type (inl_reset). */
	s->tab = s->inl;
	s->cap = URA__SIG_INLINE;
	s->n = s->used = 0;
	s->trap = s->has_reason = s->dem_n = 0;
	s->next_mon = s->next_unlink = 0;
	s->reason = 0;
	memset(&s->value, 0, sizeof s->value);
	inl_reset(s);
	x->sig = s;
	return s;
}

static void value_free(ura_value *v)
{
	if (ura__value_owns(*v))
		free(v->u.ptr);
	memset(v, 0, sizeof *v);
}

/* A copy of v that owns its string or bytes; -ENOMEM. */
static int value_copy(ura_value *out, ura_value v)
{
	*out = v;
	if (v.type == URA_T_STR) {
		const char *str = v.u.str ? v.u.str : "";
		size_t len = strlen(str);
		char *p = ura__malloc(len + 1);
		if (!p)
			return -ENOMEM;
		memcpy(p, str, len + 1);
		out->u.ptr = p;
		out->len = (uint32_t)len;
	} else if (v.type == URA_T_BYTES) {
		void *p = ura__malloc(v.len ? v.len : 1);
		if (!p)
			return -ENOMEM;
		if (v.len)
			memcpy(p, v.u.bytes, v.len);
		out->u.ptr = p;
	} else {
		out->len = 0;
	}
	return 0;
}

/* A reason's value: any type a message can carry but an opaque pointer. */
static int value_ok(ura_value v)
{
	switch (v.type) {
	case 0:
	case URA_T_I64: case URA_T_F64: case URA_T_REF: case URA_T_STR:
		return 1;
	case URA_T_ATOM:
		return !(v.u.atom >> 60);
	case URA_T_BYTES:
		return v.len <= URA_MSG_MAX && (!v.len || v.u.bytes);
	default:
		return 0;
	}
}

void ura__sig_free(struct ura__worker *w, struct ura__actor *a)
{
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	if (!s)
		return;
	if (s->tab != s->inl)
		free(s->tab);
	value_free(&s->value);
	if (!ura__sig_in_x(a->x, s)) /* else it goes with the side record */
		ura__pool_put(ura__pool_of(w), s, sizeof *s);
	a->x->sig = NULL;
}

int ura__why_set_slow(struct ura__why *y, ura_atom reason, ura_value value)
{
	ura_value copy;
	if (!value.type) { /* most reasons: an atom alone, nothing to copy */
		memset(&copy, 0, sizeof copy);
	} else if (value_copy(&copy, value) < 0) {
		return -ENOMEM;
	}
	if (y->set && ura__value_owns(y->value)) /* the old one's heap part */
		free(y->value.u.ptr);
	y->reason = reason;
	y->value = copy;
	y->set = 1;
	return 0;
}

void ura__why_clear(struct ura__why *y)
{
	if (y->set) {
		value_free(&y->value);
		y->set = 0;
		y->reason = 0;
	}
}

void ura__sig_keep_reason(struct ura__worker *w, struct ura__actor *a, struct ura__why *y)
{
	if (!y->set)
		return;
	struct ura__sig *s = ura__sig_of(w, a);
	if (!s) {
		/* No memory for the record: late signals will say normal. */
		ura__why_clear(y);
		return;
	}
	if (s->has_reason)
		value_free(&s->value);
	s->reason = y->reason;
	s->value = y->value; /* moved */
	s->has_reason = 1;
	memset(&y->value, 0, sizeof y->value);
	y->set = 0;
}

/* ---- sending --------------------------------------------------------- */

int ura__sig_send(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		  ura_ref to, ura_atom tag, const ura_value *vals, unsigned n, uint8_t kind,
		  uint32_t req)
{
	int rc = ura__send_msg(sys, w, home, from, to, tag, vals, n, kind, req);
	if (ura__unlikely(rc < 0 && rc != -ESRCH && rc != -ESHUTDOWN)) {
		char name[URA_ATOM_MAX + 1];
		ura__log(&sys->log, URA_LOG_ERROR, "signal %s to <%u.%u> lost: %s",
			 ura_atom_name(tag, name), ura__idx_no(ura__ref_idx(to)),
			 ura__ref_gen(to), ura_strerror(rc));
	}
	return rc;
}

unsigned ura__sig_late_home(ura_system *sys, struct ura__worker *w, ura_ref to, unsigned home)
{
	/* Any node but the receiver's makes ura__post batch the signal
	 * through w's outbox for the receiver's node (the receiver's own
	 * node included), so it reaches the node's inbox behind every batch
	 * pushed there before: see 5. at the top. */
	if (!w || !sys->numa_batch || sys->nnodes < 2)
		return home;
	struct ura__actor *t = ura__slot_get(sys, ura__ref_idx(to));
	unsigned node = t ? ura__home(t) : 0;
	return (node + 1) % sys->nnodes;
}

int ura__request_fail(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		      ura_ref requester, uint32_t req, ura_atom reason, ura_value value)
{
	ura_value v[2];
	unsigned n = ura__reason_vals(v, reason, value);
	return ura__sig_send(sys, w, home, from, requester, URA_ERROR, v, n, URA__MK_ERROR, req);
}

void ura__request_orphan(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			 struct ura_msg *m, ura_atom reason, ura_value value)
{
	if (m->kind != URA__MK_REQUEST)
		return;
	ura__request_fail(sys, w, ura__home(a), ura__ref_make(a->idx, m->to_gen), m->from, m->req,
			  reason, value);
}

static int send_down(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref who,
		     ura_ref watcher, uint64_t mon, ura_atom reason, ura_value value)
{
	ura_value v[4];
	v[0] = ura_v_i64((int64_t)mon);
	v[1] = ura_v_ref(who);
	unsigned n = 2 + ura__reason_vals(v + 2, reason, value);
	return ura__sig_send(sys, w, home, who, watcher, URA_DOWN, v, n, URA__MK_DOWN, 0);
}

static int send_exit(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref who,
		     ura_ref to, uint32_t via, ura_atom reason, ura_value value)
{
	ura_value v[2]; /* who is the sender: expanded for a trapper (exit_trapped) */
	unsigned n = ura__reason_vals(v, reason, value);
	return ura__sig_send(sys, w, home, who, to, URA_EXIT, v, n, URA__MK_EXIT, via);
}

static int send_id(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		   ura_ref to, ura_atom tag, uint8_t kind, uint64_t id)
{
	ura_value v = ura_v_i64((int64_t)id);
	return ura__sig_send(sys, w, home, from, to, tag, &v, 1, kind, 0);
}

/* ---- the stop ------------------------------------------------------------ */

void ura__sig_dem_flush(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			ura_ref self)
{
	struct ura__sig *s = a->x->sig;
	ura_value v[URA__DEM_MAX];
	for (unsigned i = 0; i < s->dem_n; i++)
		v[i] = ura_v_i64((int64_t)s->dem_ids[i]);
	/* -ESRCH: the target is gone, and with it the entries (3.). */
	ura__sig_send(sys, w, ura__home(a), self, s->dem_to, TAG_DEMONITOR, v, s->dem_n,
		      URA__MK_DEMONITOR, 0);
	s->dem_n = 0;
}

void ura__sig_stop_walk(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
			ura_ref self, ura_atom reason, ura_value value)
{
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	unsigned home = ura__home(a);
	if (a->link1) { /* the inline link (7.) */
		send_exit(sys, w, home, self, (ura_ref){ a->link1 }, URA__EXIT_LINK, reason, value);
		a->link1 = 0;
	}
	if (!s)
		return;
	if (s->dem_n)
		ura__sig_dem_flush(sys, w, a, self);
	if (!s->n)
		return;
	for (uint32_t i = 0; i < s->cap; i++) {
		struct ura__sent *e = &s->tab[i];
		switch (e->type) {
		case URA__S_WATCH:
			send_down(sys, w, home, self, (ura_ref){ e->k1 }, e->k2, reason, value);
			break;
		case URA__S_LINK:
			/* Unlinking too: the partner may not have seen our
			 * UNLINK yet, and drops this if it has (4. above). */
			send_exit(sys, w, home, self, (ura_ref){ e->k1 }, URA__EXIT_LINK, reason,
				  value);
			break;
		case URA__S_MON:
			send_id(sys, w, home, self, (ura_ref){ e->v }, TAG_DEMONITOR,
				URA__MK_DEMONITOR, e->k1);
			break;
		case URA__S_PROMISE:
			ura__request_fail(sys, w, home, self, (ura_ref){ e->k1 }, (uint32_t)e->k2,
					  reason, value);
			break;
		default:
			break;
		}
	}
	table_clear(s);
}

static struct ura__tomb *tomb_of(struct ura__actor *a)
{
	return (struct ura__tomb *)(void *)a->inl;
}

void ura__tomb_free_value(struct ura__actor *a)
{
	value_free(&tomb_of(a)->value);
	a->tomb = 0;
}

void ura__sig_bury_slow(struct ura__worker *w, struct ura__actor *a, struct ura__why *y)
{
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	struct ura__why kept;
	if (!y && s && s->has_reason) { /* a zombie's, from its record */
		kept = (struct ura__why){ s->reason, s->value, 1 };
		memset(&s->value, 0, sizeof s->value);
		s->has_reason = 0;
		y = &kept;
	}
	/* No tombstone to free: incarnate took the last one before the state
	 * (which shares its bytes) was made. */
	if (y && y->set) {
		if (y->reason != URA_NORMAL || y->value.type) {
			/* The state is gone (ura__bury freed it first): `inl`
			 * is free until the slot's next incarnation. The
			 * value's copy moves into the tombstone. */
			struct ura__tomb *t = tomb_of(a);
			t->gen = ura__own_gen(a) - 1;
			/* Not pad_: it may be a bounded mailbox's count
			 * (core/slot.h, URA__BP_DEPTH). */
			t->reason = y->reason;
			t->value = y->value;
			a->tomb = 1;
		}
		memset(&y->value, 0, sizeof y->value);
		y->set = 0;
	}
	if (s)
		ura__sig_free(w, a);
}

/* ---- signals received --------------------------------------------------- */

/* A trapped exit signal as its documented message, URA_EXIT(who, reason
 * [, value]), from w's pool; the value's bytes are copied, so m may go.
 * Without memory for it, m itself, as it came (reason[, value]): the
 * readers (ura_exit_who, _reason, _value) take both forms, a case of
 * signature "ra" misses it, and nothing is lost. */
static struct ura_msg *exit_trapped(ura_ctx *cx, struct ura_msg *m)
{
	ura_value v[3];
	v[0] = ura_v_ref(m->from);
	unsigned n = 1;
	for (unsigned i = 0; i < m->n && i < 2; i++)
		v[n++] = m->vals[i];
	long size = ura__msg_size(v, n);
	struct ura_msg *d = size > 0 ? ura__msg_alloc(&cx->w->pool, (size_t)size) : NULL;
	if (!d) {
		d = m;
	} else {
		ura__msg_fill(d, URA_EXIT, m->from, v, n);
		d->to_gen = m->to_gen;
		d->to_idx = m->to_idx;
		d->flags = m->flags & (uint8_t)~URA__MF_STASH;
	}
	d->kind = URA__MK_PLAIN;
	d->req = 1; /* a runtime EXIT (ura_demonitor's stash check) */
	return d;
}

static struct ura_msg *exit_signal(ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	/* (reason[, value]): the sender is m->from (send_exit). */
	ura_atom reason = m->n && m->vals[0].type == URA_T_ATOM ? m->vals[0].u.atom : URA_NORMAL;
	ura_value value;
	memset(&value, 0, sizeof value);
	if (m->n > 1)
		value = m->vals[1];
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	if (m->req == URA__EXIT_KILL && reason == URA_KILL) {
		(void)ura__why_set(&cx->why, URA_KILLED, (ura_value){ 0 }); /* copies nothing */
		a->stopping = 1;
		return NULL;
	}
	if (s && s->trap)
		return exit_trapped(cx, m);
	if (reason == URA_NORMAL) {
		/* Erlang's exit(self(), normal) stops the caller. */
		if (m->req == URA__EXIT_KILL && m->from.id == ura__self_ref(a).id) {
			ura__why_clear(&cx->why);
			a->stopping = 1;
		}
		return NULL;
	}
	/* Without memory for the value's copy, the reason alone. */
	if (ura__why_set(&cx->why, reason, value) < 0)
		(void)ura__why_set(&cx->why, reason, (ura_value){ 0 });
	a->stopping = 1;
	return NULL;
}

struct ura_msg *ura__sig_recv(ura_ctx *cx, struct ura_msg *m)
{
	ura_system *sys = cx->sys;
	struct ura__worker *w = cx->w;
	struct ura__actor *a = cx->a;
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	ura_ref from = m->from, self = ura__self_ref(a);
	uint64_t id = m->n && m->vals[0].type == URA_T_I64 ? (uint64_t)m->vals[0].u.i64 : 0;
	struct ura__sent *e;
	switch (m->kind) {
	case URA__MK_MONITOR:
		s = ura__sig_of(w, a);
		if (!s || ura__sig_add(s, URA__S_WATCH, from.id, id, 0) < 0)
			/* Cannot keep it: fire now rather than never. */
			send_down(sys, w, ura__home(a), self, from, id, URA_NOMEM, (ura_value){ 0 });
		return NULL;
	case URA__MK_DEMONITOR: /* one or more ids (3.) */
		for (unsigned i = 0; s && i < m->n; i++)
			if (m->vals[i].type == URA_T_I64 &&
			    (e = ura__sig_find(s, URA__S_WATCH, from.id, (uint64_t)m->vals[i].u.i64)))
				ura__sig_del(s, e);
		return NULL;
	case URA__MK_LINK:
		if (link1_is(a, from.id) || (s && ura__sig_find(s, URA__S_LINK, from.id, 0)))
			return NULL; /* active stays; unlinking stays (4.) */
		if (!a->link1 && from.id) { /* the first: inline (7.) */
			a->link1 = from.id;
			return NULL;
		}
		s = ura__sig_of(w, a);
		if (!s || ura__sig_add(s, URA__S_LINK, from.id, 0, 0) < 0)
			/* Cannot keep it: break it now, as a stop would. */
			send_exit(sys, w, ura__home(a), self, from, URA__EXIT_LINK, URA_NOMEM,
				  (ura_value){ 0 });
		return NULL;
	case URA__MK_UNLINK:
		if (link1_is(a, from.id)) /* inline: always active (7.) */
			a->link1 = 0;
		else if (s && (e = ura__sig_find(s, URA__S_LINK, from.id, 0)) && e->v == 0)
			ura__sig_del(s, e);
		send_id(sys, w, ura__home(a), self, from, TAG_UNLINKED, URA__MK_UNLINK_ACK, id);
		return NULL;
	case URA__MK_UNLINK_ACK:
		if (s && (e = ura__sig_find(s, URA__S_LINK, from.id, 0)) && e->v == id)
			ura__sig_del(s, e);
		return NULL;
	case URA__MK_EXIT:
		if (m->req == URA__EXIT_LINK && link1_is(a, from.id)) {
			a->link1 = 0; /* inline: active (7.) */
		} else if (m->req == URA__EXIT_LINK) {
			if (!s || !(e = ura__sig_find(s, URA__S_LINK, from.id, 0)))
				return NULL; /* unlinked: no effect (the unlink guarantee) */
			int active = e->v == 0;
			ura__sig_del(s, e);
			if (!active)
				return NULL;
		}
		return exit_signal(cx, m);
	case URA__MK_DOWN:
		if (!s || !(e = ura__sig_find(s, URA__S_MON, id, 0)))
			return NULL; /* demonitored: dropped (3.) */
		ura__sig_del(s, e);
		m->kind = URA__MK_PLAIN;
		m->req = 1; /* a runtime DOWN (ura_demonitor's stash check) */
		return m;
	default:
		return NULL;
	}
}

void ura__sig_dead_letter(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m)
{
	uint8_t k = m->kind;
	if (k != URA__MK_REQUEST && k != URA__MK_MONITOR && k != URA__MK_LINK &&
	    k != URA__MK_UNLINK)
		return;
	ura_system *sys = w->sys;
	ura_ref dead = ura__ref_make(a->idx, m->to_gen);
	ura_atom reason = URA_NOPROC;
	ura_value value;
	memset(&value, 0, sizeof value);
	unsigned home;
	if (a->state_kind != URA__A_ALIVE && m->to_gen + 1 == ura__own_gen(a)) {
		/* The slot's last incarnation, not reused: its reason (6.),
		 * routed from its home as its messages were (5.). */
		if (a->state_kind == URA__A_ZOMBIE)
			ura__sig_reason(a, &reason, &value);
		else if (a->tomb && tomb_of(a)->gen == m->to_gen) {
			reason = tomb_of(a)->reason;
			value = tomb_of(a)->value;
		} else
			reason = URA_NORMAL;
		home = ura__home(a);
	} else {
		home = ura__sig_late_home(sys, w, m->from, w->node);
	}
	uint64_t id = m->n && m->vals[0].type == URA_T_I64 ? (uint64_t)m->vals[0].u.i64 : 0;
	switch (k) {
	case URA__MK_REQUEST:
		ura__request_fail(sys, w, home, dead, m->from, m->req, reason, value);
		break;
	case URA__MK_MONITOR:
		send_down(sys, w, home, dead, m->from, id, reason, value);
		break;
	case URA__MK_LINK:
		send_exit(sys, w, home, dead, m->from, URA__EXIT_LINK, reason, value);
		break;
	case URA__MK_UNLINK:
		send_id(sys, w, home, dead, m->from, TAG_UNLINKED, URA__MK_UNLINK_ACK, id);
		break;
	}
}

/* ---- the calls ------------------------------------------------------------ */

URA_API ura_mon ura_monitor(ura_ctx *cx, ura_ref who)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	ura_system *sys = cx->sys;
	struct ura__worker *w = cx->w;
	struct ura__actor *a = cx->a;
	ura_ref self = ura__self_ref(a);
	if (who.id == self.id)
		return -EINVAL;
	struct ura__sig *s = ura__sig_of(w, a);
	if (!s)
		return -ENOMEM;
	uint64_t mon = s->next_mon + 1;
	if (ura__sig_add(s, URA__S_MON, mon, 0, who.id) < 0)
		return -ENOMEM;
	s->next_mon = mon;
	int rc = send_id(sys, w, ura__home(a), self, who, TAG_MONITOR, URA__MK_MONITOR, mon);
	if (rc == -ESRCH) /* no such actor: the DOWN now, behind its last messages (5.) */
		rc = send_down(sys, w, ura__sig_late_home(sys, w, self, ura__home(a)), who, self, mon,
			       URA_NOPROC, (ura_value){ 0 });
	if (rc < 0) {
		struct ura__sent *e = ura__sig_find(s, URA__S_MON, mon, 0);
		if (e)
			ura__sig_del(s, e);
		return rc;
	}
	return (ura_mon)mon;
}

/* Removes a DOWN of monitor `mon` from the stash; true if there was one. */
static int stash_drop_down(struct ura__worker *w, struct ura__actor *a, uint64_t mon)
{
	struct ura__actor_x *x = a->x;
	struct ura_msg *prev = NULL;
	for (struct ura_msg *m = x ? x->stash : NULL; m;
	     prev = m, m = atomic_load_explicit(&m->next, memory_order_relaxed)) {
		if (m->tag != URA_DOWN || m->req != 1 || !m->n || m->vals[0].type != URA_T_I64 ||
		    (uint64_t)m->vals[0].u.i64 != mon)
			continue;
		struct ura_msg *next = atomic_load_explicit(&m->next, memory_order_relaxed);
		if (prev)
			atomic_store_explicit(&prev->next, next, memory_order_relaxed);
		else
			x->stash = next;
		if (x->stash_tail == m)
			x->stash_tail = prev;
		ura__msg_free(ura__pool_of(w), m);
		return 1;
	}
	return 0;
}

URA_API int ura_demonitor(ura_ctx *cx, ura_mon mon)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	struct ura__actor *a = cx->a;
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	struct ura__sent *e = s && mon > 0 ? ura__sig_find(s, URA__S_MON, (uint64_t)mon, 0) : NULL;
	if (e) {
		ura_ref target = { e->v };
		ura__sig_del(s, e);
		/* Spares the target its entry, later in the turn (3.); if it
		 * is gone, or stops before it sees this, its DOWN finds no
		 * monitor here. Off the workers (an init run by a thread that
		 * is not one) no turn ends to send it: now. */
		if (!cx->w) {
			send_id(cx->sys, NULL, ura__home(a), ura__self_ref(a), target, TAG_DEMONITOR,
				URA__MK_DEMONITOR, (uint64_t)mon);
			return 0;
		}
		if (s->dem_n && (s->dem_to.id != target.id || s->dem_n == URA__DEM_MAX))
			ura__sig_dem_flush(cx->sys, cx->w, a, ura__self_ref(a));
		s->dem_to = target;
		s->dem_ids[s->dem_n++] = (uint64_t)mon;
		return 0;
	}
	if (mon > 0 && stash_drop_down(cx->w, a, (uint64_t)mon))
		return 0;
	return -ENOENT;
}

URA_API int ura_link(ura_ctx *cx, ura_ref who)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	ura_system *sys = cx->sys;
	struct ura__worker *w = cx->w;
	struct ura__actor *a = cx->a;
	ura_ref self = ura__self_ref(a);
	if (who.id == self.id)
		return -EINVAL;
	if (link1_is(a, who.id))
		return 0; /* linked already (inline: active, 7.) */
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	struct ura__sent *e = s ? ura__sig_find(s, URA__S_LINK, who.id, 0) : NULL;
	if (e && e->v == 0)
		return 0; /* linked already */
	uint64_t was = e ? e->v : 0;
	int inl = 0;
	if (e) {
		e->v = 0; /* unlinking: active again (4.) */
	} else if (!a->link1 && who.id) { /* (0 means none: a null ref's link goes below) */
		a->link1 = who.id; /* the first: inline (7.) */
		inl = 1;
	} else if (!(s = ura__sig_of(w, a)) || ura__sig_add(s, URA__S_LINK, who.id, 0, 0) < 0) {
		return -ENOMEM;
	}
	int rc = ura__sig_send(sys, w, ura__home(a), self, who, TAG_LINK, NULL, 0, URA__MK_LINK, 0);
	if (rc == -ESRCH) /* no such actor: its exit signal now (5.) */
		rc = send_exit(sys, w, ura__sig_late_home(sys, w, self, ura__home(a)), who, self,
			       URA__EXIT_LINK, URA_NOPROC, (ura_value){ 0 });
	if (rc < 0) {
		if (inl)
			a->link1 = 0;
		else if ((e = ura__sig_find(s, URA__S_LINK, who.id, 0))) {
			if (was)
				e->v = was;
			else
				ura__sig_del(s, e);
		}
		return rc;
	}
	return 0;
}

URA_API int ura_unlink(ura_ctx *cx, ura_ref who)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	struct ura__actor *a = cx->a;
	struct ura__sig *s = a->x ? a->x->sig : NULL;
	struct ura__sent *e;
	if (link1_is(a, who.id)) {
		/* The inline link is always active: unlinking moves it into
		 * the table, which keeps the unlink's id (4., 7.). */
		if (!(s = ura__sig_of(cx->w, a)) || ura__sig_add(s, URA__S_LINK, who.id, 0, 0) < 0)
			return -ENOMEM;
		a->link1 = 0;
	}
	e = s ? ura__sig_find(s, URA__S_LINK, who.id, 0) : NULL;
	if (!e || e->v)
		return -ENOENT; /* not linked (or unlinking already) */
	uint64_t u = ++s->next_unlink;
	e->v = u;
	int rc = send_id(cx->sys, cx->w, ura__home(a), ura__self_ref(a), who, TAG_UNLINK,
			 URA__MK_UNLINK, u);
	if (rc == -ESRCH) {
		/* The partner is gone and keeps nothing: whatever exit signal
		 * of it is on its way finds no link here. */
		ura__sig_del(s, e);
		return 0;
	}
	if (rc < 0) {
		e->v = 0;
		return rc;
	}
	return 0;
}

URA_API int ura_trap_exit(ura_ctx *cx, int on)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	struct ura__sig *s = cx->a->x ? cx->a->x->sig : NULL;
	if (!s && !on)
		return 0;
	if (!s && !(s = ura__sig_of(cx->w, cx->a)))
		return -ENOMEM;
	int was = s->trap;
	s->trap = on ? 1 : 0;
	return was;
}

URA_API int ura_exit(ura_ctx *cx, ura_atom reason, ura_value value)
{
	if (ura__ctx_bad(cx) || !ura_atom_valid(reason) || !value_ok(value))
		return -EINVAL;
	if (reason == URA_NORMAL && !value.type) {
		ura__why_clear(&cx->why);
	} else {
		int rc = ura__why_set(&cx->why, reason, value);
		if (rc < 0)
			return rc;
	}
	cx->a->stopping = 1;
	return 0;
}

URA_API void ura_stop(ura_ctx *cx)
{
	if (ura__ctx_bad(cx))
		return;
	ura__why_clear(&cx->why);
	cx->a->stopping = 1;
}

static int kill_send(ura_system *sys, struct ura__worker *w, unsigned home, ura_ref from,
		     ura_ref to, ura_atom reason, ura_value value)
{
	if (!ura_atom_valid(reason) || !value_ok(value))
		return -EINVAL;
	ura_value v[2]; /* as send_exit's: who is the sender */
	unsigned n = ura__reason_vals(v, reason, value);
	return ura__send_msg(sys, w, home, from, to, URA_EXIT, v, n, URA__MK_EXIT, URA__EXIT_KILL);
}

URA_API int ura_kill_ctx(ura_ctx *cx, ura_ref to, ura_atom reason, ura_value value)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	return kill_send(cx->sys, cx->w, ura__home(cx->a), ura__self_ref(cx->a), to, reason, value);
}

URA_API int ura_kill_sys(ura_system *sys, ura_ref to, ura_atom reason, ura_value value)
{
	if (!sys)
		return -EINVAL;
	struct ura__worker *w = ura__thread_worker(sys);
	return kill_send(sys, w, w ? w->node : 0, URA_NOREF, to, reason, value);
}

/* ---- reading DOWN, EXIT and ERROR messages --------------------------------- */

/* The index of the reason in m's values, or -1. */
static int reason_at(const ura_msg *m)
{
	if (!m)
		return -1;
	int i = -1;
	if (m->tag == URA_DOWN)
		i = 2;
	else if (m->tag == URA_EXIT)
		/* 0 for an EXIT without its `who`: the signal as it travels,
		 * delivered so only when there was no memory for its
		 * expansion (exit_trapped). */
		i = m->n && m->vals[0].type == URA_T_REF;
	else if (m->tag == URA_ERROR)
		i = 0;
	return i >= 0 && i < m->n && m->vals[i].type == URA_T_ATOM ? i : -1;
}

URA_API ura_atom ura_exit_reason(const ura_msg *m)
{
	int i = reason_at(m);
	return i < 0 ? 0 : m->vals[i].u.atom;
}

URA_API ura_value ura_exit_value(const ura_msg *m)
{
	int i = reason_at(m);
	ura_value v;
	memset(&v, 0, sizeof v);
	if (i >= 0 && i + 1 < m->n)
		v = m->vals[i + 1];
	return v;
}

URA_API ura_ref ura_exit_who(const ura_msg *m)
{
	int i = reason_at(m);
	if (i == 0 && m->tag == URA_EXIT)
		return m->from; /* the signal's own form (exit_trapped) */
	if (i < 1 || m->vals[i - 1].type != URA_T_REF)
		return URA_NOREF;
	return m->vals[i - 1].u.ref;
}

URA_API ura_mon ura_down_monitor(const ura_msg *m)
{
	if (!m || m->tag != URA_DOWN || !m->n || m->vals[0].type != URA_T_I64)
		return 0;
	return m->vals[0].u.i64;
}
