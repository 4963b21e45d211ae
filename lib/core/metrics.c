/* SPDX-License-Identifier: MIT */
/*
 * Metrics, the writers' side (core/metrics.h): the class table, the
 * per-worker blocks, the per-actor records.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics.h"

int ura__mx_init(ura_system *sys, unsigned shift)
{
	struct ura__mx *mx = ura__calloc(1, sizeof *mx);
	if (!mx)
		return -ENOMEM;
	pthread_mutex_init(&mx->lock, NULL);
	mx->shift = shift;
	sys->mx = mx;
	/* 512 KiB of address space, touched only where records are made. */
	mx->amx = ura__calloc(URA__MAX_CHUNKS, sizeof *mx->amx);
	if (!mx->amx)
		return -ENOMEM;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__wmx *wm = ura__calloc(1, sizeof *wm);
		if (!wm)
			return -ENOMEM; /* ura__mx_fini frees what was made */
		wm->mask = (1u << shift) - 1;
		wm->left = wm->mask + 1;
		sys->workers[i].mx = wm;
	}
	return 0;
}

/* Off the workers a thread counts its own sends to classes that sample
 * their wait, so that no two threads share a sampling counter's line. */
uint32_t ura__mx_ext_tick(void)
{
	static _Thread_local uint32_t tick;
	return ++tick;
}

void ura__mx_fini(ura_system *sys)
{
	struct ura__mx *mx = sys->mx;
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		struct ura__wmx *wm = sys->workers[i].mx;
		if (!wm)
			continue;
		for (unsigned c = 0; c < URA_METRICS_CLASSES; c++)
			free(atomic_load_explicit(&wm->cs[c], memory_order_relaxed));
		free(wm);
		sys->workers[i].mx = NULL;
	}
	if (!mx)
		return;
	if (mx->amx) {
		for (unsigned c = 0; c < URA__MAX_CHUNKS; c++)
			free(atomic_load_explicit(&mx->amx[c], memory_order_relaxed));
		free(mx->amx);
	}
	pthread_mutex_destroy(&mx->lock);
	free(mx);
	sys->mx = NULL;
}

/* The class's id, registering it; -1 when the table is full. */
static int class_id(struct ura__mx *mx, const ura_class *cls)
{
	/* acquire: pairs with the release below, so cls[0 .. n) are set. */
	unsigned n = atomic_load_explicit(&mx->ncls, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (atomic_load_explicit(&mx->cls[i], memory_order_relaxed) == cls)
			return (int)i;
	int id = -1;
	pthread_mutex_lock(&mx->lock);
	n = atomic_load_explicit(&mx->ncls, memory_order_relaxed);
	for (unsigned i = 0; i < n && id < 0; i++)
		if (atomic_load_explicit(&mx->cls[i], memory_order_relaxed) == cls)
			id = (int)i;
	if (id < 0 && n < URA_METRICS_CLASSES) {
		atomic_store_explicit(&mx->cls[n], cls, memory_order_relaxed);
		/* release: readers that see the count see the class. */
		atomic_store_explicit(&mx->ncls, n + 1, memory_order_release);
		id = (int)n;
	}
	pthread_mutex_unlock(&mx->lock);
	return id;
}

struct ura__cstat *ura__cstat_slow(ura_system *sys, struct ura__worker *w,
				   const ura_class *cls)
{
	struct ura__mx *mx = sys->mx;
	int id = class_id(mx, cls);
	if (id < 0)
		return NULL;
	if (!w)
		return &mx->ext[id];
	struct ura__wmx *wm = w->mx;
	struct ura__cstat *st = atomic_load_explicit(&wm->cs[id], memory_order_relaxed);
	if (!st) {
		st = ura__calloc(1, sizeof *st);
		if (!st)
			return NULL;
		/* release: a reader that loads the pointer (acquire) sees the
		 * zeroed block. */
		atomic_store_explicit(&wm->cs[id], st, memory_order_release);
	}
	unsigned h = (unsigned)((uintptr_t)cls >> 6) & (URA__MX_CACHE - 1);
	wm->cache[h].cls = cls;
	wm->cache[h].st = st;
	return st;
}

struct ura__amx *ura__amx_make(ura_system *sys, uint32_t index)
{
	struct ura__mx *mx = sys->mx;
	struct ura__amx *r = ura__amx_at(sys, index);
	if (r)
		return r;
	pthread_mutex_lock(&mx->lock);
	_Atomic(struct ura__amx *) *cp = &mx->amx[index >> URA__CHUNK_SHIFT];
	struct ura__amx *c = atomic_load_explicit(cp, memory_order_relaxed);
	if (!c) {
		c = ura__calloc(URA__CHUNK, sizeof *c);
		/* release: pairs with ura__amx_at's acquire. */
		if (c)
			atomic_store_explicit(cp, c, memory_order_release);
	}
	pthread_mutex_unlock(&mx->lock);
	return c ? &c[index & (URA__CHUNK - 1)] : NULL;
}

void ura__mx_spawned(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	struct ura__cstat *cs = ura__cstat_of(sys, w, a->cls);
	if (!cs) {
		atomic_fetch_add_explicit(&sys->mx->overflow, 1, memory_order_relaxed);
		return;
	}
	ura__cs_add(w, &cs->spawned, 1);
	struct ura__amx *r = ura__amx_make(sys, ura__idx_no(a->idx));
	ura__amx_own_set(a, r);
	if (!r)
		return; /* counted, not inspectable */
	ura__st(&r->mailbox, 0);
	ura__st(&r->handled, 0);
	ura__st(&r->handler_ns, 0);
	ura__st(&r->beh, a->beh ? a->beh->name : NULL);
	ura__st(&r->gen, ura__own_gen(a));
	ura__st(&r->cls, a->cls);
	r->cs = w ? cs : NULL;
	r->csw = w;
}

struct ura__cstat *ura__mx_cs_slow(struct ura__worker *w, struct ura__actor *a,
				   struct ura__amx *r)
{
	struct ura__cstat *cs = ura__cstat_of(w->sys, w, a->cls);
	if (cs && r) {
		r->cs = cs;
		r->csw = w;
	}
	return cs;
}

void ura__mx_stopped(ura_system *sys, struct ura__worker *w, struct ura__actor *a,
		     int normal)
{
	struct ura__cstat *cs = ura__cstat_of(sys, w, a->cls);
	if (!cs)
		return;
	ura__cs_add(w, normal ? &cs->stopped_normal : &cs->stopped_other, 1);
	ura__amx_own_set(a, NULL);
	struct ura__amx *r = ura__amx_at(sys, ura__idx_no(a->idx));
	if (!r || !ura__ld(&r->cls))
		return;
	uint32_t d = ura__ld(&r->mailbox);
	if (d) {
		if (w)
			ura__st(&cs->mailbox, ura__ld(&cs->mailbox) - (int64_t)d);
		else
			atomic_fetch_sub_explicit(&cs->mailbox, (int64_t)d, memory_order_relaxed);
		ura__st(&r->mailbox, 0);
	}
	ura__st(&r->cls, NULL);
}
