/* SPDX-License-Identifier: MIT */
/* Snapshots: the class registry, the save callbacks' writer, and the
 * snapshot state's life. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "actor/group.h"
#include "snap/snap_int.h"

/* ---- registry ------------------------------------------------------- */

URA_API int ura_snap_register(ura_system *sys, const ura_snap_class *sc)
{
	if (!sys || !sc || !sc->cls || !sc->cls->name || !*sc->cls->name ||
	    !ura__zeroed(sc->reserved_, sizeof sc->reserved_) ||
	    !sc->cls->initial || !sc->save != !sc->load ||
	    /* A context-switching actor's stack cannot be saved. */
	    sc->cls->body ||
	    (sc->nbehaviors && !sc->behaviors) || strlen(sc->cls->name) > UINT16_MAX)
		return -EINVAL;
	/* A restored actor is put straight into one of these: each must be
	 * one spawn or become would accept. */
	for (unsigned i = 0; i < sc->nbehaviors; i++)
		if (!sc->behaviors[i] || ura__behavior_ok(sc->behaviors[i]) < 0)
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
		struct ura__snap_reg *r = ura__realloc(S->reg, cap * sizeof *r);
		if (!r) {
			rc = -ENOMEM;
			goto out;
		}
		S->reg = r;
		S->capreg = cap;
	}
	struct ura__snap_reg *r = &S->reg[S->nreg];
	r->name = ura__strdup(sc->cls->name);
	r->behaviors = NULL;
	if (sc->nbehaviors)
		r->behaviors = ura__malloc(sc->nbehaviors * sizeof *r->behaviors);
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
	struct ura__snap *S = ura__aligned_alloc(URA__CACHELINE, sizeof *S);
	if (!S)
		return -ENOMEM;
	memset(S, 0, sizeof *S);
	S->sys = sys;
	pthread_mutex_init(&S->lock, NULL);
	sys->snap = S;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		w->ph.cur = URA__MF_SNAPD; /* phase 0 */
		w->rec = ura__calloc(1, sizeof *w->rec);
		if (!w->rec)
			return -ENOMEM;
	}
	sys->hooks.phase_msg = ura__snap_msg;
	sys->hooks.capture = ura__snap_capture;
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
		struct ura__wrec *r = sys->workers[i].rec;
		if (r) {
			ura__sbuf_drop(&r->buf);
			ura__b_free(&r->scratch);
		}
		free(r);
		sys->workers[i].rec = NULL;
	}
	ura__sbuf_drop(&S->tbuf);
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
