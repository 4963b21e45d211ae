/* SPDX-License-Identifier: MIT */
/*
 * The name registry: actors under atoms, per system (Erlang's register /
 * whereis). Two open-addressing tables under one lock, by name and by
 * ref, kept in step: a name names one actor and an actor has one name.
 *
 * A name goes away by itself when its actor stops: every lookup checks
 * the actor's generation (as a send does), so a stopped actor's entry is
 * never returned, and registering its name again replaces it. No stop
 * has to visit the registry (an actor that never registers pays nothing);
 * stale entries are swept when a table would grow, as groups prune
 * theirs (actor/group.c).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "core/post.h"

struct nent {
	uint64_t key;   /* the name (by_name) or the ref id (by_ref) */
	uint64_t val;   /* the ref id (by_name) or the name (by_ref) */
	uint64_t st;    /* EMPTY, USED, DELETED */
};

struct ntab {
	struct nent *v;
	uint32_t cap, used, n;
};

struct ura__names {
	pthread_rwlock_t lock;   /* read: lookups; write: register, unregister */
	struct ntab by_name, by_ref;
};

enum { EMPTY = 0, USED = 1, DELETED = 2 };

static inline uint64_t key_of(uint64_t k) { return k; }

static inline uint32_t nhash(uint64_t k)
{
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32);
}

static struct nent *nfind(struct ntab *t, uint64_t key)
{
	if (!t->cap)
		return NULL;
	uint32_t mask = t->cap - 1, h = nhash(key) & mask;
	for (uint32_t i = 0; i < t->cap; i++, h = (h + 1) & mask) {
		if (t->v[h].st == EMPTY)
			return NULL;
		if (t->v[h].st == USED && t->v[h].key == key)
			return &t->v[h];
	}
	return NULL;
}

static int alive(ura_system *sys, uint64_t id)
{
	return ura__slot_live(sys, (ura_ref){ id }) != NULL;
}

static int nrehash(struct ntab *t, uint32_t cap)
{
	struct nent *v = ura__calloc(cap, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++) {
		if (t->v[i].st != USED)
			continue;
		uint32_t h = nhash(t->v[i].key) & (cap - 1);
		while (v[h].st != EMPTY)
			h = (h + 1) & (cap - 1);
		v[h] = t->v[i];
	}
	free(t->v);
	t->v = v;
	t->cap = cap;
	t->used = t->n;
	return 0;
}

static void ndel(struct ntab *t, struct nent *e)
{
	e->st = DELETED;
	t->n--;
}

/* Write lock held: drops the entries of stopped actors from both. */
static void sweep(ura_system *sys, struct ura__names *R)
{
	for (uint32_t i = 0; i < R->by_name.cap; i++) {
		struct nent *e = &R->by_name.v[i];
		if (e->st != USED || alive(sys, e->val))
			continue;
		struct nent *r = nfind(&R->by_ref, key_of(e->val));
		if (r)
			ndel(&R->by_ref, r);
		ndel(&R->by_name, e);
	}
}

/* Room for one more entry in t; -ENOMEM. */
static int nroom(ura_system *sys, struct ura__names *R, struct ntab *t)
{
	if ((t->used + 1) * 4 < t->cap * 3)
		return 0;
	sweep(sys, R);
	uint32_t cap = t->cap ? t->cap : 16;
	if ((t->n + 1) * 2 >= cap)
		cap *= 2;
	return nrehash(t, cap);
}

static void nput(struct ntab *t, uint64_t key, uint64_t val)
{
	uint32_t mask = t->cap - 1, h = nhash(key) & mask;
	while (t->v[h].st == USED)
		h = (h + 1) & mask;
	if (t->v[h].st == EMPTY)
		t->used++;
	t->v[h].st = USED;
	t->v[h].key = key;
	t->v[h].val = val;
	t->n++;
}

int ura__names_init(ura_system *sys)
{
	sys->names = ura__calloc(1, sizeof *sys->names);
	if (!sys->names)
		return -ENOMEM;
	pthread_rwlock_init(&sys->names->lock, NULL);
	return 0;
}

void ura__names_fini(ura_system *sys)
{
	struct ura__names *R = sys->names;
	if (!R)
		return;
	free(R->by_name.v);
	free(R->by_ref.v);
	pthread_rwlock_destroy(&R->lock);
	free(R);
	sys->names = NULL;
}

URA_API int ura_register(ura_system *sys, ura_atom name, ura_ref who)
{
	if (!sys || !ura_atom_valid(name))
		return -EINVAL;
	if (!alive(sys, who.id))
		return -ESRCH;
	struct ura__names *R = sys->names;
	pthread_rwlock_wrlock(&R->lock);
	int rc = 0;
	struct nent *e = nfind(&R->by_name, key_of(name));
	struct nent *r = nfind(&R->by_ref, key_of(who.id));
	if (e && alive(sys, e->val)) {
		rc = -EEXIST;
	} else if (r && alive(sys, who.id)) {
		rc = -EBUSY; /* one name per actor: it has another */
	} else {
		if (e) { /* a stopped actor's name: replaced */
			struct nent *old = nfind(&R->by_ref, key_of(e->val));
			if (old)
				ndel(&R->by_ref, old);
			ndel(&R->by_name, e);
		}
		/* `who` stopped since the check above, with a name: that
		 * name's entries go, or by_ref would hold its key twice. */
		if (r && (r = nfind(&R->by_ref, key_of(who.id)))) {
			struct nent *on = nfind(&R->by_name, key_of(r->val));
			if (on && on->val == who.id)
				ndel(&R->by_name, on);
			ndel(&R->by_ref, r);
		}
		if ((rc = nroom(sys, R, &R->by_name)) == 0 && (rc = nroom(sys, R, &R->by_ref)) == 0) {
			nput(&R->by_name, key_of(name), who.id);
			nput(&R->by_ref, key_of(who.id), name);
		}
	}
	pthread_rwlock_unlock(&R->lock);
	/* Registered while it stops: the entry is stale at once, and the
	 * next register of the name replaces it; the actor is gone either
	 * way. */
	return rc;
}

URA_API int ura_unregister(ura_system *sys, ura_atom name)
{
	if (!sys || !ura_atom_valid(name))
		return -EINVAL;
	struct ura__names *R = sys->names;
	pthread_rwlock_wrlock(&R->lock);
	int rc = -ENOENT;
	struct nent *e = nfind(&R->by_name, key_of(name));
	if (e) {
		if (alive(sys, e->val))
			rc = 0;
		struct nent *r = nfind(&R->by_ref, key_of(e->val));
		if (r)
			ndel(&R->by_ref, r);
		ndel(&R->by_name, e);
	}
	pthread_rwlock_unlock(&R->lock);
	return rc;
}

URA_API ura_ref ura_whereis(ura_system *sys, ura_atom name)
{
	if (!sys || !ura_atom_valid(name))
		return URA_NOREF;
	struct ura__names *R = sys->names;
	pthread_rwlock_rdlock(&R->lock);
	struct nent *e = nfind(&R->by_name, key_of(name));
	ura_ref r = { e ? e->val : 0 };
	pthread_rwlock_unlock(&R->lock);
	/* Checked outside the lock, as a send checks: stale at once when
	 * the actor stops. */
	return r.id && alive(sys, r.id) ? r : URA_NOREF;
}

URA_API ura_atom ura_name_of(ura_system *sys, ura_ref who)
{
	if (!sys || !alive(sys, who.id))
		return 0;
	struct ura__names *R = sys->names;
	pthread_rwlock_rdlock(&R->lock);
	struct nent *e = nfind(&R->by_ref, key_of(who.id));
	ura_atom name = e ? e->val : 0;
	pthread_rwlock_unlock(&R->lock);
	return name;
}

/* Every live name, for snapshots (lib/snap): calls fn for each; read
 * lock held meanwhile. */
void ura__names_each(ura_system *sys, void (*fn)(void *ud, ura_atom name, ura_ref who),
		     void *ud)
{
	struct ura__names *R = sys->names;
	pthread_rwlock_rdlock(&R->lock);
	for (uint32_t i = 0; i < R->by_name.cap; i++) {
		struct nent *e = &R->by_name.v[i];
		if (e->st == USED && alive(sys, e->val))
			fn(ud, e->key, (ura_ref){ e->val });
	}
	pthread_rwlock_unlock(&R->lock);
}

URA_API int ura_send_namedv_ctx(ura_ctx *cx, ura_atom name, ura_atom tag,
				const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	ura_ref to = ura_whereis(cx->sys, name);
	if (ura_ref_null(to))
		return ura_atom_valid(name) ? -ESRCH : -EINVAL;
	return ura_sendv_ctx(cx, to, tag, vals, n);
}

URA_API int ura_send_namedv_sys(ura_system *sys, ura_atom name, ura_atom tag,
				const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	ura_ref to = ura_whereis(sys, name);
	if (ura_ref_null(to))
		return ura_atom_valid(name) ? -ESRCH : -EINVAL;
	return ura_sendv_sys(sys, to, tag, vals, n);
}
