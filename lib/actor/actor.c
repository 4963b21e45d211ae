/* SPDX-License-Identifier: MIT */
/*
 * Actor lifecycle (slots, spawn, stop), sending, matching and dispatch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/group.h"
#include "actor/guard.h"
#include "sched/sched.h"

struct ura_ctx {
	ura_system *sys;
	struct ura__worker *w;   /* NULL: init running off the workers */
	struct ura__actor *a;
	struct ura_msg *m;       /* NULL in init */
	void *req_data;
};

static inline struct ura__pool *pool_of(struct ura__worker *w)
{
	return w ? &w->pool : NULL;
}

/* The worker of this thread, if it belongs to sys: off-handler calls made
 * on a worker thread still use that worker's pool and counters. */
static inline struct ura__worker *thread_worker(ura_system *sys)
{
	struct ura__worker *w = ura__current_worker;
	return w && w->sys == sys ? w : NULL;
}

/* The actor's side record, allocated on first use (NULL: no memory). */
static struct ura__actor_x *ax(struct ura__actor *a)
{
	if (!a->x)
		a->x = calloc(1, sizeof *a->x);
	return a->x;
}

static void free_x(struct ura__actor *a)
{
	if (a->x)
		free(a->x->io);
	free(a->x);
	a->x = NULL;
}

struct ura__worker *ura__ctx_worker(ura_ctx *cx) { return cx->w; }
struct ura__actor *ura__ctx_actor(ura_ctx *cx) { return cx->a; }

int ura__actor_io_track(struct ura__actor *a, int64_t id)
{
	struct ura__actor_x *x = ax(a);
	return x ? ura__ids_push(&x->io, id) : -ENOMEM;
}

/* A final completion was taken from the mailbox: the operation is over.
 * Returns the operations still in flight. */
static uint32_t io_untrack(struct ura__actor *a, const struct ura_msg *m)
{
	struct ura__ids *l = a->x ? a->x->io : NULL;
	if (!l)
		return 0;
	if (m->flags & URA__MF_MORE)
		return l->n;
	for (uint32_t i = 0; i < l->n; i++)
		if ((uint64_t)l->v[i] == m->from.id) {
			l->v[i] = l->v[--l->n];
			break;
		}
	return l->n;
}

static void free_state(struct ura__actor *a)
{
	if (!a->inline_state)
		free(a->state);
	a->state = NULL;
	a->inline_state = 0;
}

static inline uint32_t own_gen(struct ura__actor *a)
{
	/* The token holder is the only writer, so relaxed is exact. */
	return atomic_load_explicit(&a->gen, memory_order_relaxed);
}

static inline ura_ref self_ref(struct ura__actor *a)
{
	return ura__ref_make(a->idx, own_gen(a));
}

/* ---- the slot table ------------------------------------------------- */

struct ura__actor *ura__slot_get(ura_system *sys, uint32_t idx)
{
	/* acquire: pairs with the release of idx_hwm / chunk publication
	 * in reserve(), so an index below hwm has an initialised chunk or
	 * a NULL we treat as "no such actor". */
	if (idx == 0 || idx >= atomic_load_explicit(&sys->idx_hwm, memory_order_acquire))
		return NULL;
	struct ura__actor *c = atomic_load_explicit(&sys->chunks[idx >> URA__CHUNK_SHIFT],
						    memory_order_acquire);
	return c ? &c[idx & (URA__CHUNK - 1)] : NULL;
}

/* Makes sure the chunks holding [base, base+n) exist; slot_lock held. */
static int ensure_chunks(ura_system *sys, uint32_t base, uint32_t n)
{
	for (uint32_t c = base >> URA__CHUNK_SHIFT; c <= (base + n - 1) >> URA__CHUNK_SHIFT; c++) {
		if (c >= URA__MAX_CHUNKS)
			return -ENOMEM;
		if (atomic_load_explicit(&sys->chunks[c], memory_order_relaxed))
			continue;
		struct ura__actor *chunk = calloc(URA__CHUNK, sizeof *chunk);
		if (!chunk)
			return -ENOMEM;
		for (uint32_t i = 0; i < URA__CHUNK; i++) {
			chunk[i].idx = c * URA__CHUNK + i;
			ura__mb_init(&chunk[i].mb, (struct ura_msg *)&chunk[i].stub);
		}
		/* release: publishes the initialised slots to ura__slot_get. */
		atomic_store_explicit(&sys->chunks[c], chunk, memory_order_release);
	}
	return 0;
}

/* Reserves n fresh slot indices; returns the first or 0. */
static uint32_t reserve(ura_system *sys, uint32_t n)
{
	pthread_mutex_lock(&sys->slot_lock);
	uint32_t base = atomic_load_explicit(&sys->idx_hwm, memory_order_relaxed);
	if ((uint64_t)base + n > (uint64_t)URA__MAX_CHUNKS * URA__CHUNK ||
	    ensure_chunks(sys, base, n) < 0) {
		pthread_mutex_unlock(&sys->slot_lock);
		return 0;
	}
	/* release: pairs with the acquire in ura__slot_get. */
	atomic_store_explicit(&sys->idx_hwm, base + n, memory_order_release);
	pthread_mutex_unlock(&sys->slot_lock);
	return base;
}

/* Returns a slot whose token we hold, or NULL (-ENOMEM). */
static struct ura__actor *slot_take(ura_system *sys, struct ura__worker *w)
{
	struct ura__actor *a;
	if (w) {
		a = w->free_slots;
		if (a) {
			w->free_slots = a->free_link;
			/* A stale send may have scheduled the dead slot; then
			 * leave it on the list and take a fresh one. */
			if (ura__mb_claim(&a->mb))
				return a;
			a->free_link = w->free_slots;
			w->free_slots = a;
		}
		if (w->idx_next == w->idx_end) {
			uint32_t base = reserve(sys, 64);
			if (!base)
				return NULL;
			w->idx_next = base;
			w->idx_end = base + 64;
		}
		a = ura__slot_get(sys, w->idx_next++);
	} else {
		pthread_mutex_lock(&sys->slot_lock);
		a = sys->ext_free;
		if (a && ura__mb_claim(&a->mb)) {
			sys->ext_free = a->free_link;
			pthread_mutex_unlock(&sys->slot_lock);
			return a;
		}
		pthread_mutex_unlock(&sys->slot_lock);
		uint32_t base = reserve(sys, 1);
		a = base ? ura__slot_get(sys, base) : NULL;
	}
	if (a && !ura__mb_claim(&a->mb))
		a = NULL; /* cannot happen: a fresh slot is idle and unknown */
	return a;
}

static void slot_free(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (w) {
		a->free_link = w->free_slots;
		w->free_slots = a;
	} else {
		pthread_mutex_lock(&sys->slot_lock);
		a->free_link = sys->ext_free;
		sys->ext_free = a;
		pthread_mutex_unlock(&sys->slot_lock);
	}
}

/* ---- stop ----------------------------------------------------------- */

static void free_stash_and_pending(ura_system *sys, struct ura__worker *w,
				   struct ura__actor *a, uint64_t *lost)
{
	struct ura__actor_x *x = a->x;
	if (!x)
		return;
	for (struct ura_msg *m = x->stash, *n; m; m = n) {
		n = atomic_load_explicit(&m->next, memory_order_relaxed);
		ura__msg_free(pool_of(w), m);
		++*lost;
	}
	x->stash = x->stash_tail = NULL;
	for (struct ura__pending *p = x->pending, *n; p; p = n) {
		n = p->next;
		if (p->timer)
			ura__timer_cancel(sys, w, p->timer);
		ura__pool_put(pool_of(w), p, sizeof *p);
	}
	x->pending = NULL;
}

static void cancel_actor_timers(ura_system *sys, struct ura__worker *w,
				struct ura__actor *a);
static void rt_rearm(ura_system *sys, struct ura__worker *w, struct ura__actor *a);

/* The incarnation's last act: destroy callback, memory, counters, slot
 * (token still held; the slot keeps its mailbox). */
static void bury(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
		 int call_destroy)
{
	a->state_kind = URA__A_FREE;
	if (call_destroy && a->cls->destroy)
		a->cls->destroy(a->state);
	free_state(a);
	free_x(a);
	a->beh = NULL;
	/* A failed init (no destroy callback) was never counted as spawned,
	 * so it is not counted as stopped either. */
	if (call_destroy) {
		if (w)
			ura__inc(&w->st.stopped);
		else
			atomic_fetch_add_explicit(&sys->ext_stopped, 1, memory_order_relaxed);
	}
	/* Safe while we hold the token: a spawner's claim fails until the
	 * mailbox is idle again. */
	slot_free(sys, w, a);
}

/* Ends the incarnation. */
static void die(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
		int call_destroy)
{
	uint64_t lost = 0;
	/* With I/O in flight the kernel may still write to the actor's
	 * buffers: cancel, and bury it when the last one completed (see
	 * URA__A_ZOMBIE and ura__actor_turn). */
	int zombie = call_destroy && w && a->x && a->x->io && a->x->io->n;
	a->state_kind = zombie ? URA__A_ZOMBIE : URA__A_FREE;
	a->stopping = 0;
	/* release: a sender that sees the new generation refuses to send;
	 * one that raced us carries the old one and becomes a dead letter. */
	atomic_store_explicit(&a->gen, own_gen(a) + 1, memory_order_release);
	cancel_actor_timers(sys, w, a);
	free_stash_and_pending(sys, w, a, &lost);
	/* Stashed messages that never matched are counted with the unmatched
	 * ones: they were handled, by being dropped now. */
	if (w)
		ura__add(&w->st.unmatched, lost);
	if (zombie) {
		a->beh = NULL;
		ura__io_cancel_all(w, a);
		return;
	}
	bury(sys, w, a, call_destroy);
}

/* ---- spawn ---------------------------------------------------------- */

/* A new incarnation of class cls on `node`, zeroed state, its token held
 * and its ref valid (*ref); NULL when there is no memory. Spawn runs init
 * next; a restore fills the state from a snapshot. */
static struct ura__actor *incarnate(ura_system *sys, struct ura__worker *w,
				    const ura_class *cls, unsigned node, ura_ref *ref)
{
	struct ura__actor *a = slot_take(sys, w);
	if (!a)
		return NULL;
	void *state = NULL;
	free_x(a); /* a stopped incarnation freed it; a fresh slot has none */
	a->inline_state = cls->state_size <= sizeof a->inl;
	if (a->inline_state) {
		memset(a->inl, 0, sizeof a->inl);
		state = cls->state_size ? a->inl : NULL;
	} else {
		state = calloc(1, cls->state_size);
		if (!state) {
			slot_free(sys, w, a);
			if (!ura__mb_mark_idle(&a->mb))
				ura__schedule(sys, w, a);
			return NULL;
		}
	}
	a->cls = cls;
	a->beh = cls->initial;
	a->state = state;
	a->stopping = a->became = 0;
	atomic_store_explicit(&a->home_node, (uint16_t)node, memory_order_relaxed);
	atomic_store_explicit(&a->last_worker, (uint16_t)(w ? w->id : sys->nodes[node].first),
			      memory_order_relaxed);
	a->state_kind = URA__A_ALIVE;
	uint32_t gen = own_gen(a) + 1;
	/* release: pairs with the acquire in make_msg; the fields above are
	 * published to senders' messages' handler through the token anyway,
	 * this only makes the ref valid. */
	atomic_store_explicit(&a->gen, gen, memory_order_release);
	*ref = ura__ref_make(a->idx, gen);
	return a;
}

static int spawn(ura_system *sys, struct ura__worker *w, const ura_class *cls,
		 const void *arg, const ura_spawn_opts *opts, ura_ref *out)
{
	if (!sys || !cls || !cls->initial || !cls->name)
		return -EINVAL;
	if (atomic_load_explicit(&sys->shutdown, memory_order_relaxed))
		return -ESHUTDOWN;
	/* Placement: a named worker's node, a named node, else the
	 * spawner's node (node 0 for threads that are not workers). */
	unsigned node = w ? w->node : 0;
	if (opts && opts->worker) {
		if (opts->worker < 0 || (unsigned)opts->worker > sys->nworkers)
			return -EINVAL;
		node = sys->workers[opts->worker - 1].node;
	} else if (opts && opts->node) {
		if (opts->node < 0 || (unsigned)opts->node > sys->nnodes)
			return -EINVAL;
		node = (unsigned)opts->node - 1;
	}
	ura_ref ref;
	struct ura__actor *a = incarnate(sys, w, cls, node, &ref);
	if (!a)
		return -ENOMEM;
	void *state = a->state;

	if (cls->init) {
		struct ura_ctx cx = { sys, w, a, NULL, NULL };
		int rc = cls->init(&cx, state, arg);
		if (rc < 0) {
			/* init failed: it cleans up after itself, so no
			 * destroy callback; the ref it may have leaked to
			 * others is stale from here on. */
			die(sys, w, a, 0);
			if (!ura__mb_mark_idle(&a->mb))
				ura__schedule(sys, w, a);
			return rc;
		}
	} else if (arg && state) {
		memcpy(state, arg, cls->state_size);
	}
	if (w)
		ura__inc(&w->st.spawned);
	else
		atomic_fetch_add_explicit(&sys->ext_spawned, 1, memory_order_relaxed);
	if (opts && opts->group) {
		int rc = ura_group_join(opts->group, ref);
		if (rc < 0) {
			die(sys, w, a, 1);
			if (!ura__mb_mark_idle(&a->mb))
				ura__schedule(sys, w, a);
			return rc;
		}
	}
	/* ura_stop() from init: stopped before anyone could reach it; what
	 * init sent to itself becomes dead letters. */
	if (a->stopping)
		die(sys, w, a, 1);
	else if (a->beh->timeout_ns || a->became)
		rt_rearm(sys, w, a);
	a->became = 0;
	if (a->state_kind == URA__A_ALIVE)
		ura__snap_spawned(sys, w, a); /* its phase: lib/snap */
	/* Give the token up; messages sent by init (or stale ones for an
	 * earlier incarnation) make that fail, and then we schedule it. */
	if (!ura__mb_mark_idle(&a->mb))
		ura__schedule(sys, w, a);
	if (out)
		*out = ref;
	return 0;
}


URA_API int ura_spawn_ex_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			     const ura_spawn_opts *opts, ura_ref *out)
{
	if (!cx)
		return -EINVAL;
	return spawn(cx->sys, cx->w, cls, arg, opts, out);
}

URA_API int ura_spawn_ex_sys(ura_system *sys, const ura_class *cls,
			     const void *arg, const ura_spawn_opts *opts,
			     ura_ref *out)
{
	if (!sys)
		return -EINVAL;
	return spawn(sys, thread_worker(sys), cls, arg, opts, out);
}

URA_API int ura_spawn_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			  ura_ref *out)
{
	return ura_spawn_ex_ctx(cx, cls, arg, NULL, out);
}

URA_API int ura_spawn_sys(ura_system *sys, const ura_class *cls,
			  const void *arg, ura_ref *out)
{
	return ura_spawn_ex_sys(sys, cls, arg, NULL, out);
}

/* ---- send ----------------------------------------------------------- */

/* Checks a send and builds its message; nothing is counted or pushed. */
static int make_msg(ura_system *sys, struct ura__worker *w, ura_ref from,
		    ura_ref to, ura_atom tag, const ura_value *vals, unsigned n,
		    uint8_t kind, uint32_t req, struct ura__actor **ap,
		    struct ura_msg **mp)
{
	if (ura__unlikely(!sys || !tag))
		return -EINVAL;
	long size = ura__msg_size(vals, n);
	if (ura__unlikely(size < 0))
		return (int)size;
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(to));
	uint32_t gen = ura__ref_gen(to);
	/* acquire: pairs with the release stores of gen in spawn/die. */
	if (ura__unlikely(!a || !(gen & 1) ||
			  atomic_load_explicit(&a->gen, memory_order_acquire) != gen))
		return -ESRCH;
	if (ura__unlikely(atomic_load_explicit(&sys->shutdown, memory_order_relaxed)))
		return -ESHUTDOWN;
	struct ura_msg *m = ura__msg_alloc(pool_of(w), (size_t)size);
	if (ura__unlikely(!m))
		return -ENOMEM;
	ura__msg_fill(m, tag, from, vals, n);
	m->to_gen = gen;
	m->kind = kind;
	m->req = req;
	/* The sender's phase (lib/snap/snap.h): the turn's actor on a worker,
	 * the system's elsewhere. */
	m->flags = w ? w->snap.cur : ura__snap_stamp(sys);
	*ap = a;
	*mp = m;
	return 0;
}

/* `home` is the sending actor's node (the worker's when no actor sends).
 * Whether a message is batched depends only on the sender's and the
 * target's homes, never on where the sender happens to run: a stolen
 * actor keeps routing as it did at home, so its messages to one target
 * never take two paths and overtake each other. */
static inline void post(ura_system *sys, struct ura__worker *w, unsigned home,
			struct ura__actor *a, struct ura_msg *m)
{
	/* To another node: batched through this worker's outbox. */
	unsigned to_node = ura__home(a);
	if (w && to_node != home && sys->numa_batch) {
		ura__outbox_add(w, to_node, a, m);
		return;
	}
	if (ura__mb_push(&a->mb, m))
		ura__schedule(sys, w, a);
}

static int send_msg(ura_system *sys, struct ura__worker *w, unsigned home,
		    ura_ref from, ura_ref to, ura_atom tag, const ura_value *vals,
		    unsigned n, uint8_t kind, uint32_t req)
{
	struct ura__actor *a = NULL;
	struct ura_msg *m = NULL;
	int rc = make_msg(sys, w, from, to, tag, vals, n, kind, req, &a, &m);
	if (ura__unlikely(rc < 0))
		return rc;
	/* Count before the push: the receiver may handle it at once, and
	 * the quiescence check must never see handled > sent. */
	if (w) {
		ura__inc(&w->st.sent);
		ura__snap_sent(&w->snap, m);
	} else {
		ura__ext_sent_inc(sys);
		ura__snap_ext_sent(sys, m);
	}
	post(sys, w, home, a, m);
	return 0;
}

void ura__deliver_timer(struct ura__worker *w, ura_ref to, struct ura_msg *m)
{
	struct ura__actor *a = ura__slot_get(w->sys, ura__ref_idx(to));
	if (!a) { /* cannot happen: refs are checked at arm time */
		ura__msg_free(&w->pool, m);
		ura__inc(&w->st.received);
		ura__inc(&w->st.dead_letters);
		return;
	}
	/* A target that stopped meanwhile drops it as a dead letter (its
	 * generation no longer matches m->to_gen). A delayed send counts in
	 * its phase when it fires; a message not made by make_msg is an
	 * input from outside, stamped now (lib/snap/snap.h). */
	if (ura__unlikely(!(m->flags & URA__MF_SNAPD)))
		m->flags |= ura__snap_stamp(w->sys) | URA__MF_NOSNAP;
	ura__snap_sent(&w->snap, m);
	post(w->sys, w, w->node, a, m);
}

/* ---- timers owned by actors ----------------------------------------- */

static void track_timer(struct ura_ctx *cx, ura_timer h)
{
	struct ura__actor_x *x = ax(cx->a);
	if (!x)
		return; /* it still fires; it just won't be cancelled at stop */
	struct ura__ids *t = x->timers;
	if (t && t->n == t->cap) {
		/* Full: drop the handles of timers that already fired. */
		uint32_t k = 0;
		for (uint32_t i = 0; i < t->n; i++)
			if (ura__timer_live(cx->sys, t->v[i]))
				t->v[k++] = t->v[i];
		t->n = k;
	}
	/* -ENOMEM: it still fires; it just won't be cancelled at stop. */
	(void)ura__ids_push(&x->timers, h);
}

static void cancel_actor_timers(ura_system *sys, struct ura__worker *w,
				struct ura__actor *a)
{
	struct ura__actor_x *x = a->x;
	if (!x)
		return;
	if (x->rt) {
		ura__timer_cancel(sys, w, x->rt);
		x->rt = 0;
	}
	struct ura__ids *t = x->timers;
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		ura__timer_cancel(sys, w, t->v[i]); /* -ENOENT: already fired */
	free(t);
	x->timers = NULL;
}

/* (Re)arms the receive timeout of a's current behavior. */
static void rt_rearm(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (a->x && a->x->rt) {
		ura__timer_cancel(sys, w, a->x->rt);
		a->x->rt = 0;
	}
	const ura_behavior *b = a->beh;
	if (!b || !b->timeout_ns || !b->on_timeout || a->stopping)
		return;
	struct ura__actor_x *x = ax(a);
	if (!x) {
		ura__log(sys, URA_LOG_ERROR, "actor %s: receive timeout not armed: %s",
			 a->cls->name, ura_strerror(-ENOMEM));
		return;
	}
	ura_ref self = self_ref(a);
	struct ura__actor *ta = NULL;
	struct ura_msg *m = NULL;
	uint32_t seq = ++x->rt_seq;
	uint64_t delay = b->timeout_ns > URA_MAX_DELAY ? URA_MAX_DELAY : b->timeout_ns;
	if (make_msg(sys, w, self, self, URA_TIMEOUT, NULL, 0, URA__MK_TIMEOUT, seq,
		     &ta, &m) < 0)
		return;
	ura_timer h = ura__timer_arm(sys, w, self, delay, m);
	if (h < 0) {
		ura__msg_free(pool_of(w), m);
		ura__log(sys, URA_LOG_ERROR, "actor %s: receive timeout not armed: %s",
			 a->cls->name, ura_strerror((int)h));
		return;
	}
	x->rt = h;
}

static ura_timer send_after(ura_system *sys, struct ura__worker *w,
			    struct ura_ctx *cx, ura_ref from, ura_ref to,
			    uint64_t delay, ura_atom tag, const ura_value *vals,
			    unsigned n)
{
	if (delay > URA_MAX_DELAY)
		return -EINVAL;
	struct ura__actor *a = NULL;
	struct ura_msg *m = NULL;
	int rc = make_msg(sys, w, from, to, tag, vals, n, URA__MK_PLAIN, 0, &a, &m);
	if (rc < 0)
		return rc;
	if (!cx)
		m->flags |= URA__MF_NOSNAP; /* no actor's: snapshots leave it out */
	ura_timer h = ura__timer_arm(sys, w, to, delay, m);
	if (h < 0) {
		ura__msg_free(pool_of(w), m);
		return h;
	}
	if (cx)
		track_timer(cx, h);
	return h;
}

URA_API ura_timer ura_send_afterv_ctx(ura_ctx *cx, ura_ref to, uint64_t delay_ns,
				      ura_atom tag, const ura_value *vals,
				      unsigned n)
{
	if (!cx)
		return -EINVAL;
	return send_after(cx->sys, cx->w, cx, self_ref(cx->a), to, delay_ns, tag,
			  vals, n);
}

URA_API ura_timer ura_send_afterv_sys(ura_system *sys, ura_ref to,
				      uint64_t delay_ns, ura_atom tag,
				      const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	return send_after(sys, thread_worker(sys), NULL, URA_NOREF, to, delay_ns,
			  tag, vals, n);
}

URA_API int ura_cancel(ura_system *sys, ura_timer t)
{
	if (!sys)
		return -EINVAL;
	return ura__timer_cancel(sys, thread_worker(sys), t);
}

URA_API int ura_sendv_ctx(ura_ctx *cx, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n)
{
	if (ura__unlikely(!cx))
		return -EINVAL;
	return send_msg(cx->sys, cx->w, ura__home(cx->a), self_ref(cx->a), to, tag, vals, n,
			URA__MK_PLAIN, 0);
}

URA_API int ura_sendv_sys(ura_system *sys, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	struct ura__worker *w = thread_worker(sys);
	return send_msg(sys, w, w ? w->node : 0, URA_NOREF, to, tag, vals, n,
			URA__MK_PLAIN, 0);
}

int ura__send(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
	      ura_atom tag, const ura_value *vals, unsigned n)
{
	unsigned home = w ? w->node : 0;
	if (w && !ura_ref_null(from)) {
		struct ura__actor *fa = ura__slot_get(sys, ura__ref_idx(from));
		if (fa)
			home = ura__home(fa); /* the sender holds its own token */
	}
	return send_msg(sys, w, home, from, to, tag, vals, n, URA__MK_PLAIN, 0);
}

URA_API long ura_send_groupv_ctx(ura_ctx *cx, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n)
{
	if (!cx)
		return -EINVAL;
	return ura__group_send(g, cx->w, self_ref(cx->a), tag, vals, n);
}

URA_API long ura_send_groupv_sys(ura_system *sys, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n)
{
	if (!sys || !g || g->sys != sys)
		return -EINVAL;
	return ura__group_send(g, thread_worker(sys), URA_NOREF, tag, vals, n);
}

URA_API int ura_replyv(ura_ctx *cx, ura_atom tag, const ura_value *vals,
		       unsigned n)
{
	if (!cx)
		return -EINVAL;
	struct ura_msg *m = cx->m;
	ura_ref to = m ? ura__msg_sender(m) : URA_NOREF;
	if (ura_ref_null(to))
		return -ESRCH;
	int req = m->kind == URA__MK_REQUEST;
	return send_msg(cx->sys, cx->w, ura__home(cx->a), self_ref(cx->a), to, tag, vals, n,
			req ? URA__MK_RESPONSE : URA__MK_PLAIN, req ? m->req : 0);
}

URA_API int ura_requestv_for(ura_ctx *cx, ura_ref to, uint64_t timeout_ns,
			     ura_handler *cont, void *data, ura_atom tag,
			     const ura_value *vals, unsigned n)
{
	if (!cx || !cont || timeout_ns > URA_MAX_DELAY)
		return -EINVAL;
	struct ura__actor *a = cx->a;
	struct ura__actor_x *x = ax(a);
	struct ura__pending *p = x ? ura__pool_get(pool_of(cx->w), sizeof *p) : NULL;
	if (!p)
		return -ENOMEM;
	uint32_t id = ++x->next_req;
	if (!id)
		id = ++x->next_req;
	ura_timer tmo = 0;
	if (timeout_ns) {
		/* The deadline is a message to ourselves, armed before the
		 * request leaves: if arming fails, nothing was sent. */
		struct ura__actor *ta = NULL;
		struct ura_msg *tm = NULL;
		ura_ref self = self_ref(a);
		int rc = make_msg(cx->sys, cx->w, self, self, URA_TIMEOUT, NULL, 0,
				  URA__MK_REQ_TIMEOUT, id, &ta, &tm);
		if (rc == 0) {
			tmo = ura__timer_arm(cx->sys, cx->w, self, timeout_ns, tm);
			if (tmo < 0) {
				rc = (int)tmo;
				ura__msg_free(pool_of(cx->w), tm);
			}
		}
		if (rc < 0) {
			ura__pool_put(pool_of(cx->w), p, sizeof *p);
			return rc;
		}
	}
	int rc = send_msg(cx->sys, cx->w, ura__home(a), self_ref(a), to, tag, vals, n,
			  URA__MK_REQUEST, id);
	if (rc < 0) {
		if (tmo > 0)
			ura__timer_cancel(cx->sys, cx->w, tmo);
		ura__pool_put(pool_of(cx->w), p, sizeof *p);
		return rc;
	}
	/* The reply can only be handled in a later turn of this actor,
	 * whose token we hold, so registering after the send is safe. */
	p->id = id;
	p->cont = cont;
	p->data = data;
	p->timer = tmo;
	p->next = x->pending;
	x->pending = p;
	return 0;
}

URA_API int ura_requestv(ura_ctx *cx, ura_ref to, ura_handler *cont,
			 void *data, ura_atom tag, const ura_value *vals,
			 unsigned n)
{
	return ura_requestv_for(cx, to, 0, cont, data, tag, vals, n);
}

URA_API void *ura_request_data(ura_ctx *cx) { return cx ? cx->req_data : NULL; }

static struct ura__actor *live_actor(ura_system *sys, ura_ref r)
{
	if (!sys)
		return NULL;
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(r));
	uint32_t gen = ura__ref_gen(r);
	return a && (gen & 1) && atomic_load_explicit(&a->gen, memory_order_acquire) == gen ?
		       a : NULL;
}

URA_API int ura_actor_node(ura_system *sys, ura_ref r)
{
	struct ura__actor *a = live_actor(sys, r);
	/* A racing stop and respawn of the slot may show the next
	 * incarnation's node: the answer is as stale as any for an actor
	 * that stops while we ask. */
	return a ? (int)ura__home(a) : (sys ? -ESRCH : -EINVAL);
}

URA_API int ura_actor_worker(ura_system *sys, ura_ref r)
{
	struct ura__actor *a = live_actor(sys, r);
	return a ? (int)atomic_load_explicit(&a->last_worker, memory_order_relaxed) :
		   (sys ? -ESRCH : -EINVAL);
}

URA_API int ura_worker_node(ura_system *sys, unsigned worker)
{
	if (!sys || worker >= sys->nworkers)
		return -EINVAL;
	return (int)sys->workers[worker].node;
}

URA_API int ura_system_nodes(ura_system *sys)
{
	return sys ? (int)sys->nnodes : -EINVAL;
}

/* ---- handler context ------------------------------------------------ */

URA_API ura_ref ura_self(ura_ctx *cx) { return cx ? self_ref(cx->a) : URA_NOREF; }
URA_API ura_ref ura_sender(ura_ctx *cx)
{
	return cx && cx->m ? ura__msg_sender(cx->m) : URA_NOREF;
}
URA_API void *ura_state(ura_ctx *cx) { return cx ? cx->a->state : NULL; }
URA_API ura_system *ura_ctx_system(ura_ctx *cx) { return cx ? cx->sys : NULL; }
URA_API unsigned ura_worker_id(ura_ctx *cx)
{
	return cx && cx->w ? cx->w->id : (unsigned)-1;
}
URA_API ura_value ura_bound(ura_ctx *cx)
{
	if (!cx) {
		ura_value z;
		memset(&z, 0, sizeof z);
		return z;
	}
	if (!cx->a->x) {
		ura_value z;
		memset(&z, 0, sizeof z);
		return z;
	}
	return cx->a->x->bound;
}

URA_API int ura_become_with(ura_ctx *cx, const ura_behavior *b, ura_value bound)
{
	if (!cx || !b)
		return -EINVAL;
	if (bound.type || cx->a->x) {
		struct ura__actor_x *x = ax(cx->a);
		if (!x)
			return -ENOMEM;
		x->bound = bound;
	}
	cx->a->beh = b;
	cx->a->became = 1;
	return 0;
}

URA_API int ura_become(ura_ctx *cx, const ura_behavior *b)
{
	ura_value none;
	memset(&none, 0, sizeof none);
	return ura_become_with(cx, b, none);
}

URA_API void ura_stop(ura_ctx *cx)
{
	if (cx)
		cx->a->stopping = 1;
}

/* ---- matching and dispatch ------------------------------------------ */

static inline int case_matches(const ura_case *c, ura_ctx *cx, const struct ura_msg *m)
{
	if (c->tag && c->tag != m->tag)
		return 0;
	uint64_t s = c->sig_;
	if (ura__likely(s & URA__SIG_TYPED)) {
		if (ura__unlikely(s & URA__SIG_LONG)) {
			if (m->sig != URA__SIG_LONG || strcmp(c->types, ura__msg_types(m)))
				return 0;
		} else if ((s & ~URA__SIG_TYPED) != m->sig) {
			return 0;
		}
	} else if (c->types && strcmp(c->types, ura__msg_types(m))) {
		return 0; /* a case written without URA_ON */
	}
	return !c->guard || c->guard(cx, m, c->guard_arg);
}

int ura__case_matches(const ura_case *c, ura_ctx *cx, const struct ura_msg *m)
{
	return case_matches(c, cx, m);
}

void *ura__state_bytes(ura_ctx *cx, size_t *size)
{
	*size = cx->a->state ? cx->a->cls->state_size : 0;
	return cx->a->state;
}

static void trace_unmatched(struct ura_ctx *cx, const struct ura_msg *m, const char *what)
{
	char buf[200];
	ura_msg_format(m, buf, sizeof buf);
	ura__log(cx->sys, URA_LOG_WARN, "%s: actor %s <%u.%u> (behavior %s): %s",
		 what, cx->a->cls->name, cx->a->idx, own_gen(cx->a),
		 cx->a->beh && cx->a->beh->name ? cx->a->beh->name : "-", buf);
}

/* Runs the first matching case; otherwise applies the unmatched policy
 * (for STASH it only flags m: the caller moves it to the stash). */
static int dispatch(struct ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	const ura_behavior *b = a->beh;
	for (uint32_t i = 0; i < b->ncases; i++) {
		const ura_case *c = &b->cases[i];
		if (case_matches(c, cx, m)) {
			c->fn(cx, m);
			return 1;
		}
	}
	uint32_t policy = b->unmatched ? b->unmatched : a->cls->unmatched;
	if (policy == URA_UNMATCHED_STASH) {
		m->flags |= URA__MF_STASH;
		ura__inc(&cx->w->st.stashed);
		return 0;
	}
	ura__inc(&cx->w->st.unmatched);
	if (cx->sys->trace_unmatched)
		trace_unmatched(cx, m, "unmatched message dropped");
	return 0;
}

/* Returns 0, or -ENOMEM (no side record): then the caller drops m. */
int ura__actor_stash_append(struct ura__actor *a, struct ura_msg *m)
{
	struct ura__actor_x *x = ax(a);
	if (!x)
		return -ENOMEM;
	atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
	if (x->stash_tail)
		atomic_store_explicit(&x->stash_tail->next, m, memory_order_relaxed);
	else
		x->stash = m;
	x->stash_tail = m;
	return 0;
}

/* A node stopped being the mailbox tail: free it, or stash it. */
static inline void retire(struct ura__worker *w, struct ura__actor *a, struct ura_msg *r)
{
	if (r == (struct ura_msg *)&a->stub)
		return;
	if ((r->flags & URA__MF_STASH) && a->state_kind == URA__A_ALIVE &&
	    ura__actor_stash_append(a, r) == 0)
		return;
	ura__msg_free(&w->pool, r);
}

/* Returns true when a handler ran (which re-arms the receive timeout). */
static int deliver(struct ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	cx->m = m;
	cx->req_data = NULL;
	if (ura__unlikely(m->kind == URA__MK_TIMEOUT)) {
		/* Only the latest arming counts: an older one raced a match
		 * or a become and lost. */
		if (!a->x || m->req != a->x->rt_seq || !a->x->rt || !a->beh->on_timeout)
			return 0;
		a->x->rt = 0;
		a->beh->on_timeout(cx, m);
		return 1;
	}
	if (ura__unlikely(m->kind == URA__MK_IO))
		io_untrack(a, m); /* then matched like any message */
	else if (ura__unlikely(m->kind == URA__MK_RESPONSE || m->kind == URA__MK_REQ_TIMEOUT)) {
		/* Whichever comes first, the reply or its deadline, runs the
		 * continuation; the other finds no pending request. */
		for (struct ura__pending **pp = a->x ? &a->x->pending : NULL; pp && *pp;
		     pp = &(*pp)->next) {
			struct ura__pending *p = *pp;
			if (p->id != m->req)
				continue;
			*pp = p->next;
			cx->req_data = p->data;
			ura_handler *cont = p->cont;
			if (p->timer && m->kind == URA__MK_RESPONSE)
				ura__timer_cancel(cx->sys, cx->w, p->timer);
			ura__pool_put(&cx->w->pool, p, sizeof *p);
			cont(cx, m);
			return 1;
		}
		if (m->kind == URA__MK_REQ_TIMEOUT)
			return 0; /* the reply won; its deadline lost the race */
		ura__inc(&cx->w->st.unmatched);
		if (cx->sys->trace_unmatched)
			trace_unmatched(cx, m, "reply to no pending request dropped");
		return 0;
	}
	return dispatch(cx, m);
}

/* After a become: offer the stash to the new behavior, oldest first. */
static void redeliver_stash(struct ura_ctx *cx)
{
	struct ura__actor *a = cx->a;
	while (a->became && a->x && a->x->stash && !a->stopping) {
		a->became = 0;
		struct ura_msg *list = a->x->stash;
		a->x->stash = a->x->stash_tail = NULL;
		while (list) {
			struct ura_msg *m = list;
			list = atomic_load_explicit(&m->next, memory_order_relaxed);
			if (a->stopping) {
				ura__inc(&cx->w->st.unmatched);
				ura__msg_free(&cx->w->pool, m);
				continue;
			}
			m->flags &= (uint8_t)~URA__MF_STASH;
			deliver(cx, m);
			if (m->flags & URA__MF_STASH)
				ura__actor_stash_append(a, m);
			else
				ura__msg_free(&cx->w->pool, m);
			if (a->became && list) {
				/* Behavior changed again: the rest waits behind
				 * what was just re-stashed, and all of it is
				 * offered to the newest behavior. */
				while (list) {
					struct ura_msg *k = list;
					list = atomic_load_explicit(&k->next, memory_order_relaxed);
					ura__actor_stash_append(a, k);
				}
			}
		}
	}
	a->became = 0;
}

void ura__actor_turn(struct ura__worker *w, struct ura__actor *a)
{
	ura_system *sys = w->sys;
	struct ura_ctx cx = { sys, w, a, NULL, NULL };
	struct ura_msg *m, *r;
	unsigned n = 0;

	atomic_store_explicit(&a->last_worker, (uint16_t)w->id, memory_order_relaxed);
	ura__inc(&w->st.turns);
	/* Snapshots (lib/snap/snap.h): the actor is captured before it
	 * handles its first message of a new phase (the per-message test
	 * below); messages of the turn are counted by phase. */
	unsigned same = 0, aph = a->snap_ph ? URA__MF_PH : 0;
	w->snap.cur = (uint8_t)(URA__MF_SNAPD | aph);
	/* The turn stops at the newest message present on entry, so an actor
	 * that floods itself cannot keep the worker. acquire: pairs with the
	 * pushes' exchange, as the pops below do. */
	uintptr_t entry = atomic_load_explicit(&a->mb.head, memory_order_acquire) &
			  ~URA__MB_IDLE;

	while ((m = ura__mb_pop(&a->mb, &r))) {
		retire(w, a, r);
		ura__inc(&w->st.received);
		if (ura__likely((m->flags & (URA__MF_PH | URA__MF_POKE)) == aph)) {
			same++;
		} else {
			int poke = ura__snap_msg(w, a, m, &same);
			aph = a->snap_ph ? URA__MF_PH : 0;
			w->snap.cur = (uint8_t)(URA__MF_SNAPD | aph);
			if (poke) {
				if ((uintptr_t)m == entry || ++n >= sys->batch)
					break;
				continue;
			}
		}
		if (ura__unlikely(a->state_kind != URA__A_ALIVE || m->to_gen != own_gen(a))) {
			/* Sent to an incarnation that has stopped. Keep going
			 * until the mailbox is empty: nobody else will. */
			if (a->state_kind == URA__A_ZOMBIE && m->kind == URA__MK_IO &&
			    m->to_gen + 1 == own_gen(a) && io_untrack(a, m) == 0)
				bury(sys, w, a, 1);
			ura__inc(&w->st.dead_letters);
			if (++n >= sys->batch)
				break;
			continue;
		}
		int matched = deliver(&cx, m);
		int became = a->became;
		if (became)
			redeliver_stash(&cx);
		if (ura__unlikely(a->stopping)) {
			die(sys, w, a, 1);
			if (++n >= sys->batch)
				break;
			continue;
		}
		if ((matched || became) && ((a->x && a->x->rt) || a->beh->timeout_ns))
			rt_rearm(sys, w, a);
		if ((uintptr_t)m == entry || ++n >= sys->batch)
			break;
	}
	ura__snap_recv(&w->snap, a->snap_ph, same);
	/* Hand this turn's cross-node batches over before the actor can run
	 * anywhere else: a thief must not overtake them. */
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	if (ura__mb_mark_idle(&a->mb))
		return;
	/* More messages (or a push half done): back of the queue. */
	ura__schedule_back(w, a);
}

/* ---- behaviors ------------------------------------------------------ */

static int check_case(const ura_case *c)
{
	if (!c->fn)
		return -EINVAL;
	if (!c->types)
		return c->sig_ & URA__SIG_TYPED ? -EINVAL : ura__guard_check_case(c);
	size_t len = strlen(c->types);
	if (len > URA_MAX_VALUES || strspn(c->types, "idarsbp") != len)
		return -EINVAL;
	if ((c->sig_ & URA__SIG_TYPED) &&
	    (c->sig_ & ~URA__SIG_TYPED) != ura__sig_pack(c->types, len))
		return -EINVAL;
	return ura__guard_check_case(c);
}

URA_API int ura_behavior_check(const ura_behavior *b)
{
	if (!b || (b->ncases && !b->cases) || b->unmatched > URA_UNMATCHED_STASH)
		return -EINVAL;
	for (uint32_t i = 0; i < b->ncases; i++) {
		int rc = check_case(&b->cases[i]);
		if (rc)
			return rc;
	}
	return 0;
}

URA_API int ura_behavior_new(ura_behavior **out, const ura_case *cases,
			     size_t ncases, ura_unmatched unmatched)
{
	if (!out || (ncases && !cases) || ncases > UINT32_MAX ||
	    (unsigned)unmatched > URA_UNMATCHED_STASH)
		return -EINVAL;
	size_t strbytes = 0, gbytes = 0;
	for (size_t i = 0; i < ncases; i++) {
		ura_case c = cases[i];
		c.sig_ = 0; /* recomputed below */
		int rc = check_case(&c);
		if (rc)
			return rc;
		if (c.types)
			strbytes += strlen(c.types) + 1;
		gbytes += ura__guard_case_size(&c);
	}
	/* Guard expressions are copied too: one built in the caller's
	 * function lives only until that function returns. */
	size_t size = sizeof(ura_behavior) + ncases * sizeof(ura_case) + gbytes + strbytes;
	ura_behavior *b = calloc(1, size);
	if (!b)
		return -ENOMEM;
	ura_case *cs = (ura_case *)(b + 1);
	char *gmem = (char *)(cs + ncases);
	char *str = gmem + gbytes;
	for (size_t i = 0; i < ncases; i++) {
		cs[i] = cases[i];
		cs[i].sig_ = 0;
		gmem += ura__guard_case_copy(&cs[i], gmem);
		if (cases[i].types) {
			size_t len = strlen(cases[i].types);
			memcpy(str, cases[i].types, len + 1);
			cs[i].types = str;
			cs[i].sig_ = URA__SIG_TYPED | ura__sig_pack(str, len);
			str += len + 1;
		}
	}
	b->cases = cs;
	b->ncases = (uint32_t)ncases;
	b->unmatched = unmatched;
	*out = b;
	return 0;
}

URA_API void ura_behavior_free(ura_behavior *b) { free(b); }

/* ---- destroy -------------------------------------------------------- */

uint64_t ura__actor_reclaim(ura_system *sys, struct ura__actor *a)
{
	uint64_t lost = 0;
	struct ura_msg *m, *r;
	while ((m = ura__mb_pop(&a->mb, &r))) {
		if (r != (struct ura_msg *)&a->stub)
			ura__arena_drop(&sys->arena, r, 1);
		/* I/O completions cancelled by the shutdown were never
		 * messages anyone accepted: not lost. */
		if (a->state_kind == URA__A_ALIVE && m->to_gen == own_gen(a) &&
		    m->kind != URA__MK_IO)
			lost++;
	}
	if (a->mb.tail != (struct ura_msg *)&a->stub) {
		if (a->mb.tail->flags & URA__MF_STASH)
			lost++;
		ura__arena_drop(&sys->arena, a->mb.tail, 1);
		a->mb.tail = (struct ura_msg *)&a->stub;
	}
	if (a->state_kind == URA__A_ALIVE || a->state_kind == URA__A_ZOMBIE) {
		/* The workers drained their rings before this: no operation
		 * of the actor's is in the kernel any more. */
		if (a->cls->destroy)
			a->cls->destroy(a->state);
		free_state(a);
		a->state_kind = URA__A_FREE;
	}
	struct ura__actor_x *x = a->x;
	if (x) {
		for (struct ura_msg *m2 = x->stash, *n2; m2; m2 = n2) {
			n2 = atomic_load_explicit(&m2->next, memory_order_relaxed);
			ura__arena_drop(&sys->arena, m2, 1);
			lost++;
		}
		for (struct ura__pending *p = x->pending, *n2; p; p = n2) {
			n2 = p->next;
			ura__arena_drop(&sys->arena, p, 0);
		}
		/* Pending timers themselves are freed (and counted) with the
		 * workers' timer tables. */
		free(x->timers);
		free_x(a);
	}
	return lost;
}

/* ---- snapshots (lib/snap/restore.c) --------------------------------- */

struct ura__actor_x *ura__actor_x(struct ura__actor *a)
{
	return ax(a);
}

struct ura__actor *ura__actor_restore_new(ura_system *sys, const ura_class *cls,
					  unsigned node, ura_ref *out)
{
	struct ura__actor *a = incarnate(sys, NULL, cls, node, out);
	/* relaxed: a restore fills a paused system; no snapshot is running
	 * to move the phase. */
	if (a)
		a->snap_ph = atomic_load_explicit(&sys->snap_ph, memory_order_relaxed) & 1;
	return a;
}

void ura__actor_restore_done(ura_system *sys, struct ura__actor *a, int rt)
{
	atomic_fetch_add_explicit(&sys->ext_spawned, 1, memory_order_relaxed);
	if (rt)
		rt_rearm(sys, NULL, a);
	if (!ura__mb_mark_idle(&a->mb))
		ura__schedule(sys, NULL, a);
}

void ura__actor_restore_abort(ura_system *sys, struct ura__actor *a, int call_destroy)
{
	/* Never counted as spawned: die() must not count it as stopped. */
	if (call_destroy && a->cls->destroy)
		a->cls->destroy(a->state);
	die(sys, NULL, a, 0);
	if (!ura__mb_mark_idle(&a->mb))
		ura__schedule(sys, NULL, a);
}
