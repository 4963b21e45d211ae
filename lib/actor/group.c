/* SPDX-License-Identifier: MIT */
/*
 * Groups: a set of actor refs that a send reaches as a whole.
 *
 * Members live in an open-addressing hash set keyed by ref id, so join,
 * leave and the duplicate check are O(1) and a fan-out is one pass over
 * the table. A fan-out holds the read lock for its whole pass and join and
 * leave take the write lock, so every send sees a membership that no join
 * or leave changes under it: a member that left before a send started
 * never gets it, and no member gets it twice. A stopped member fails its
 * generation check (the send skips it), which is how it "leaves by
 * itself"; the table drops it at the next write.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/group.h"
#include "core/post.h"
#include "util/liveset.h"

#define EMPTY 0u
#define TOMB 1u /* ref ids are >= 2^32 + 1 (odd generation), never 0 or 1 */

static int set_grow(struct ura_group *g, uint32_t cap)
{
	uint64_t *t = ura__calloc(cap, sizeof *t);
	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < g->cap; i++) {
		uint64_t k = g->slots[i];
		if (k <= TOMB)
			continue;
		uint32_t h = (uint32_t)(k * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
		while (t[h])
			h = (h + 1) & (cap - 1);
		t[h] = k;
	}
	free(g->slots);
	g->slots = t;
	g->cap = cap;
	g->used = g->n;
	return 0;
}

/* Slot holding k, or the insertion slot (-1 if k is absent and !insert). */
static long set_find(struct ura_group *g, uint64_t k, int insert)
{
	if (!g->cap)
		return -1;
	uint32_t mask = g->cap - 1;
	uint32_t h = (uint32_t)(k * 0x9e3779b97f4a7c15ull >> 32) & mask;
	long tomb = -1;
	for (uint32_t i = 0; i <= mask; i++, h = (h + 1) & mask) {
		uint64_t s = g->slots[h];
		if (s == k)
			return h;
		if (s == TOMB && tomb < 0)
			tomb = h;
		if (s == EMPTY)
			return insert ? (tomb >= 0 ? tomb : (long)h) : -1;
	}
	return insert ? tomb : -1;
}

/* The same check a send makes: odd generation (alive), and current. */
static int alive(ura_system *sys, uint64_t id)
{
	ura_ref r = { id };
	uint32_t gen = ura__ref_gen(r);
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(r));
	return a && (gen & 1) && atomic_load_explicit(&a->gen, memory_order_acquire) == gen;
}

/* Write lock held: drop stopped members. */
static void prune(struct ura_group *g)
{
	for (uint32_t i = 0; i < g->cap; i++) {
		if (g->slots[i] > TOMB && !alive(g->sys, g->slots[i])) {
			g->slots[i] = TOMB;
			g->n--;
		}
	}
	atomic_store_explicit(&g->dead_seen, 0, memory_order_relaxed);
}

/* Every group not yet freed, of every system: a second ura_group_free
 * (or one of a group its system's destroy already freed) is -EINVAL, not
 * a free of freed memory. */
static struct ura__liveset live_groups = URA__LIVESET_INIT;

static int group_make(ura_system *sys, const char *name, struct ura_group **out)
{
	struct ura_group *g = ura__calloc(1, sizeof *g);
	if (!g)
		return -ENOMEM;
	if ((name && !(g->name = ura__strdup(name))) || ura__live_add(&live_groups, g) < 0) {
		free(g->name);
		free(g);
		return -ENOMEM;
	}
	g->sys = sys;
	pthread_rwlock_init(&g->lock, NULL);
	g->next = sys->groups->list;
	sys->groups->list = g;
	g->id = ++sys->groups->ids;
	*out = g;
	return 0;
}

URA_API int ura_group_new(ura_system *sys, ura_group **out)
{
	if (!sys || !out)
		return -EINVAL;
	pthread_mutex_lock(&sys->groups->lock);
	int rc = group_make(sys, NULL, out);
	pthread_mutex_unlock(&sys->groups->lock);
	return rc;
}

URA_API int ura_group_named(ura_system *sys, const char *name, ura_group **out)
{
	if (!sys || !out || !name || !*name)
		return -EINVAL;
	pthread_mutex_lock(&sys->groups->lock);
	for (struct ura_group *g = sys->groups->list; g; g = g->next) {
		if (g->name && !strcmp(g->name, name)) {
			*out = g;
			pthread_mutex_unlock(&sys->groups->lock);
			return 0;
		}
	}
	int rc = group_make(sys, name, out);
	pthread_mutex_unlock(&sys->groups->lock);
	return rc;
}

URA_API const char *ura_group_name(const ura_group *g)
{
	return g ? g->name : NULL;
}

static void group_free(struct ura_group *g)
{
	(void)ura__live_del(&live_groups, g);
	pthread_rwlock_destroy(&g->lock);
	free(g->slots);
	free(g->name);
	free(g);
}

URA_API int ura_group_free(ura_group *g)
{
	/* Taken out of the set before anything of g is read: of two frees
	 * (even racing ones) exactly one goes on. */
	if (!g || ura__live_del(&live_groups, g) < 0)
		return -EINVAL;
	ura_system *sys = g->sys;
	pthread_mutex_lock(&sys->groups->lock);
	struct ura_group **pp = &sys->groups->list;
	while (*pp && *pp != g)
		pp = &(*pp)->next;
	if (*pp)
		*pp = g->next;
	pthread_mutex_unlock(&sys->groups->lock);
	group_free(g);
	return 0;
}

int ura__groups_init(ura_system *sys)
{
	sys->groups = ura__calloc(1, sizeof *sys->groups);
	if (!sys->groups)
		return -ENOMEM;
	pthread_mutex_init(&sys->groups->lock, NULL);
	return 0;
}

void ura__groups_fini(ura_system *sys)
{
	if (!sys->groups)
		return;
	for (struct ura_group *g = sys->groups->list, *n; g; g = n) {
		n = g->next;
		group_free(g);
	}
	pthread_mutex_destroy(&sys->groups->lock);
	free(sys->groups);
	sys->groups = NULL;
}

URA_API int ura_group_join(ura_group *g, ura_ref who)
{
	if (!g)
		return -EINVAL;
	if (!alive(g->sys, who.id))
		return -ESRCH;
	pthread_rwlock_wrlock(&g->lock);
	int rc = 0;
	if (atomic_load_explicit(&g->dead_seen, memory_order_relaxed) > g->n / 2)
		prune(g);
	if ((g->used + 1) * 4 >= g->cap * 3)
		rc = set_grow(g, g->cap ? (g->n * 2 >= g->cap ? g->cap * 2 : g->cap) : 8);
	if (rc == 0) {
		long h = set_find(g, who.id, 1);
		if (g->slots[h] == who.id) {
			rc = 1; /* already a member: still exactly one delivery */
		} else {
			if (g->slots[h] == EMPTY)
				g->used++;
			g->slots[h] = who.id;
			g->n++;
		}
	}
	pthread_rwlock_unlock(&g->lock);
	return rc;
}

URA_API int ura_group_leave(ura_group *g, ura_ref who)
{
	if (!g)
		return -EINVAL;
	if (who.id <= TOMB)
		return -ENOENT; /* would match an empty or deleted slot */
	pthread_rwlock_wrlock(&g->lock);
	long h = set_find(g, who.id, 0);
	int rc = -ENOENT;
	if (h >= 0) {
		g->slots[h] = TOMB;
		g->n--;
		rc = 0;
	}
	pthread_rwlock_unlock(&g->lock);
	return rc;
}

URA_API long ura_group_size(ura_group *g)
{
	if (!g)
		return -EINVAL;
	pthread_rwlock_wrlock(&g->lock);
	prune(g);
	long n = g->n;
	pthread_rwlock_unlock(&g->lock);
	return n;
}

static long group_send(ura_group *g, struct ura__worker *w, ura_ref from,
		     ura_atom tag, const ura_value *vals, unsigned n)
{
	if (!g)
		return -EINVAL;
	long reached = 0;
	int err = 0;
	pthread_rwlock_rdlock(&g->lock);
	for (uint32_t i = 0; i < g->cap; i++) {
		uint64_t k = g->slots[i];
		if (k <= TOMB)
			continue;
		ura_ref to = { k };
		int rc = ura__send(g->sys, w, from, to, tag, vals, n);
		if (rc == 0) {
			reached++;
		} else if (rc == -ESRCH) {
			atomic_fetch_add_explicit(&g->dead_seen, 1, memory_order_relaxed);
		} else if (rc == -EAGAIN || rc == URA_DROPPED) {
			/* A full bounded member (counted in ura_stats): not
			 * reached, and the others still get it. */
		} else {
			err = rc; /* bad message, no memory, shut down: stop */
			break;
		}
	}
	pthread_rwlock_unlock(&g->lock);
	return err ? err : reached;
}

URA_API long ura_send_groupv_ctx(ura_ctx *cx, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx) || !g || g->sys != cx->sys)
		return -EINVAL;
	return group_send(g, cx->w, ura__self_ref(cx->a), tag, vals, n);
}

URA_API long ura_send_groupv_sys(ura_system *sys, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n)
{
	if (!sys || !g || g->sys != sys)
		return -EINVAL;
	return group_send(g, ura__thread_worker(sys), URA_NOREF, tag, vals, n);
}
