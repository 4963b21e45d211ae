/* SPDX-License-Identifier: MIT */
/* The slot table (core/slot.h): chunks of slots that never move. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/bound.h"
#include "core/core.h"

struct ura__actor *ura__slot_live(ura_system *sys, ura_ref r)
{
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(r));
	uint32_t gen = ura__ref_gen(r);
	/* acquire: pairs with the release stores of gen at spawn and stop. */
	return a && (gen & 1) && atomic_load_explicit(&a->gen, memory_order_acquire) == gen ?
		       a : NULL;
}

/* Makes sure the chunks holding [base, base+n) exist; slot_lock held. */
static int ensure_chunks(ura_system *sys, uint32_t base, uint32_t n)
{
	for (uint32_t c = base >> URA__CHUNK_SHIFT; c <= (base + n - 1) >> URA__CHUNK_SHIFT; c++) {
		if (c >= URA__MAX_CHUNKS)
			return -ENOMEM;
		if (atomic_load_explicit(&sys->chunks[c], memory_order_relaxed))
			continue;
		/* Pages of its own: aligned to the slot's size (from malloc, a
		 * chunk of 128 KiB is mmapped by glibc 16 bytes into a page, so
		 * every slot spanned three lines, and its first, the mailbox
		 * head every sender writes, held the tail of the slot before
		 * it: a pingpong beside a consumer fed by both workers took a
		 * cross-core miss on 0.6-2% of its sends, bench/README.md,
		 * slow_consumer), zeroed by the kernel, and populated in one
		 * call: the loop below writes every slot, and its 32 faults a
		 * chunk were a third of actor_creation's CPU on this VM
		 * (kernel-notes/memory.md). */
		struct ura__actor *chunk = ura__map_populated(URA__CHUNK * sizeof *chunk);
		if (!chunk)
			return -ENOMEM;
		for (uint32_t i = 0; i < URA__CHUNK; i++) {
			chunk[i].idx = sys->tag << URA__IDX_BITS | (c * URA__CHUNK + i);
			ura__mb_init(&chunk[i].mb, (struct ura_msg *)&chunk[i].stub);
		}
		/* release: publishes the initialised slots to ura__slot_get. */
		atomic_store_explicit(&sys->chunks[c], chunk, memory_order_release);
		if (c >= sys->chunk_top)
			sys->chunk_top = c + 1;
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

/*
 * Free slots between workers. A worker's list of free slots used to grow
 * without end when it stopped the actors another worker spawned (a
 * spawner on one worker, its children stolen and stopped on the other:
 * bench/signals' pairs at 2 workers grew 28 bytes a pair, 339 MB in 12M
 * pairs), while the spawner reserved fresh slots. Now a worker keeps a
 * list of up to URA__SLOT_BATCH and one full batch more; the next full
 * batch goes to its node's depot, and a worker whose list and spare are
 * empty takes a batch from its node's depot, then from another node's,
 * and reserves fresh indices only when every depot is empty: the slots
 * in use plus at most two batches a worker and a depot's worth of them
 * (what the stops beyond the spawns left), never the slots ever made.
 * A lock per node, taken once per batch (URA__SLOT_BATCH spawns or
 * stops). Which node's memory a slot is on is not tracked
 * (kernel-notes/numa.md).
 */
static int depot_push(struct ura__node *nd, struct ura__actor *head, uint32_t n)
{
	pthread_mutex_lock(&nd->depot_lock);
	uint32_t k = atomic_load_explicit(&nd->depot_n, memory_order_relaxed);
	if (k == nd->depot_cap) {
		uint32_t cap = nd->depot_cap ? 2 * nd->depot_cap : 16;
		struct ura__slot_batch *d = realloc(nd->depot, cap * sizeof *d);
		if (!d) {
			pthread_mutex_unlock(&nd->depot_lock);
			return -ENOMEM;
		}
		nd->depot = d;
		nd->depot_cap = cap;
	}
	nd->depot[k] = (struct ura__slot_batch){ head, n };
	/* relaxed: under the lock; the peek in depot_take only skips. */
	atomic_store_explicit(&nd->depot_n, k + 1, memory_order_relaxed);
	pthread_mutex_unlock(&nd->depot_lock);
	return 0;
}

static int depot_take(struct ura__node *nd, struct ura__slot_batch *out)
{
	if (!atomic_load_explicit(&nd->depot_n, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&nd->depot_lock);
	uint32_t k = atomic_load_explicit(&nd->depot_n, memory_order_relaxed);
	if (k) {
		*out = nd->depot[k - 1];
		atomic_store_explicit(&nd->depot_n, k - 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&nd->depot_lock);
	return k != 0;
}

/* A batch from the depot of node `first`, else of the next ones in turn;
 * 0 if every depot is empty. */
static int depot_take_any(ura_system *sys, unsigned first, struct ura__slot_batch *out)
{
	for (unsigned i = 0; i < sys->nnodes; i++)
		if (depot_take(&sys->nodes[(first + i) % sys->nnodes], out))
			return 1;
	return 0;
}

void ura__slot_depot_init(struct ura__node *nd)
{
	pthread_mutex_init(&nd->depot_lock, NULL);
	nd->depot = NULL;
	nd->depot_cap = 0;
	atomic_store_explicit(&nd->depot_n, 0, memory_order_relaxed);
}

void ura__slot_depot_fini(struct ura__node *nd)
{
	/* The slots are in the chunks, freed with them. */
	free(nd->depot);
	nd->depot = NULL;
	pthread_mutex_destroy(&nd->depot_lock);
}

void ura__slot_batch_full(ura_system *sys, struct ura__worker *w)
{
	if (w->free_spare &&
	    depot_push(&sys->nodes[w->node], w->free_spare, w->spare_n) < 0)
		return; /* no memory for the depot: the list grows, as it did */
	w->free_spare = w->free_slots;
	w->spare_n = w->free_n;
	w->free_slots = NULL;
	w->free_n = 0;
}

/* An empty list refilled from the spare or a depot; 0 if all are empty. */
static int refill(ura_system *sys, struct ura__worker *w)
{
	struct ura__slot_batch b = { NULL, 0 };
	if (w->free_spare) {
		b = (struct ura__slot_batch){ w->free_spare, w->spare_n };
		w->free_spare = NULL;
		w->spare_n = 0;
	} else if (!depot_take_any(sys, w->node, &b)) {
		return 0;
	}
	w->free_slots = b.head;
	w->free_n = b.n;
	return 1;
}

struct ura__actor *ura__slot_take_slow(ura_system *sys, struct ura__worker *w)
{
	struct ura__actor *a;
	if (w) {
		/* The list is empty, or its head was scheduled by a stale
		 * send (see ura__slot_take): a batch set aside, or fresh
		 * indices. */
		if (!w->free_slots && refill(sys, w)) {
			a = w->free_slots;
			if (ura__mb_claim(&a->mb)) {
				w->free_slots = a->free_link;
				w->free_n--;
				return a;
			}
		}
		if (w->idx_next == w->idx_end) {
			uint32_t base = reserve(sys, 64);
			if (!base)
				return NULL;
			w->idx_next = base;
			w->idx_end = base + 64;
		}
		a = ura__slot_at(sys, w->idx_next++);
	} else {
		struct ura__slot_batch b = { NULL, 0 };
		pthread_mutex_lock(&sys->slot_lock);
		if (!sys->ext_free) {
			/* Spawns from outside that stop on the workers leave
			 * their slots there: take a batch of them back. */
			pthread_mutex_unlock(&sys->slot_lock);
			int got = depot_take_any(sys, 0, &b);
			pthread_mutex_lock(&sys->slot_lock);
			if (got) {
				struct ura__actor *t = b.head;
				while (t->free_link) /* once a batch */
					t = t->free_link;
				t->free_link = sys->ext_free;
				sys->ext_free = b.head;
			}
		}
		a = sys->ext_free;
		if (a && ura__mb_claim(&a->mb)) {
			sys->ext_free = a->free_link;
			pthread_mutex_unlock(&sys->slot_lock);
			return a;
		}
		pthread_mutex_unlock(&sys->slot_lock);
		uint32_t base = reserve(sys, 1);
		a = base ? ura__slot_at(sys, base) : NULL;
	}
	if (a && !ura__mb_claim(&a->mb))
		a = NULL; /* cannot happen: a fresh slot is idle and unknown */
	return a;
}

void ura__slot_free_ext(ura_system *sys, struct ura__actor *a)
{
	pthread_mutex_lock(&sys->slot_lock);
	a->free_link = sys->ext_free;
	sys->ext_free = a;
	pthread_mutex_unlock(&sys->slot_lock);
}

/* From the worker's pool, not malloc: an actor that links, monitors or
 * arms a timer makes one per incarnation, and its stop often runs on
 * another worker, where glibc's free of a block from a foreign thread's
 * arena costs several times a pool's batched return (bench/signals: a
 * linked pair made two records and spent 600 instructions in malloc and
 * free). */
struct ura__actor_x *ura__actor_x_new(struct ura__worker *w, struct ura__actor *a)
{
	return ura__actor_x_new_tail(w, a, 0);
}

struct ura__actor_x *ura__actor_x_new_tail(struct ura__worker *w, struct ura__actor *a,
					   uint32_t tail)
{
	struct ura__actor_x *x = ura__pool_get(ura__pool_of(w), URA__X_HEAD + tail);
	if (x) {
		memset(x, 0, sizeof *x);
		x->tail = tail;
	}
	a->x = x;
	return x;
}

void ura__actor_x_drop(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (a->x->io)
		free(a->x->io);
	if (a->x->timers)
		free(a->x->timers);
	if (w)
		ura__pool_put(&w->pool, a->x, URA__X_HEAD + a->x->tail);
	else /* off the workers (a failed spawn from outside, destroy): an
	      * arena block cannot go into a pool here; it goes with the arena */
		ura__arena_drop(&sys->arena, a->x, 0);
	a->x = NULL;
}

int ura__slots_init(ura_system *sys)
{
	/* A tag per system, in every ref it makes: a ref of one system names
	 * no actor in another (-ESRCH), unless 63 systems were made between
	 * the two. relaxed: a counter, it orders nothing. */
	static _Atomic uint32_t systems;
	sys->tag = atomic_fetch_add_explicit(&systems, 1, memory_order_relaxed) % URA__TAGS + 1;
	sys->chunks = ura__calloc(URA__MAX_CHUNKS, sizeof *sys->chunks);
	if (!sys->chunks)
		return -ENOMEM;
	if (ura__bp_init(sys) < 0) {
		free(sys->chunks);
		sys->chunks = NULL;
		return -ENOMEM;
	}
	atomic_store_explicit(&sys->idx_hwm, 1, memory_order_relaxed); /* 0: the null ref */
	pthread_mutex_init(&sys->slot_lock, NULL);
	return 0;
}

void ura__slots_fini(ura_system *sys)
{
	if (!sys->chunks)
		return;
	ura__bp_fini(sys);
	/* Only the chunks made (a loop over all 64 Ki pointers cost 10 ms
	 * a destroy under ASan). */
	for (uint32_t c = 0; c < sys->chunk_top; c++)
		ura__unmap(atomic_load_explicit(&sys->chunks[c], memory_order_relaxed),
			   URA__CHUNK * sizeof(struct ura__actor));
	free(sys->chunks);
	sys->chunks = NULL;
	pthread_mutex_destroy(&sys->slot_lock);
}
