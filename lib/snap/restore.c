/* SPDX-License-Identifier: MIT */
/*
 * Restore: read a snapshot file (FORMAT.md), check all of it, then make
 * the system it describes, or nothing at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actor/actor.h"
#include "actor/group.h"
#include "core/metrics.h"
#include "snap/file.h"
#include "snap/snap_int.h"
#include "time/delay.h"

struct ura_snap_map {
	struct ura__map refs;
};

struct rclass {
	const struct ura__snap_reg *reg;
};

struct ractor {
	uint64_t old;
	uint32_t cls;
	uint16_t node, flags;
	int32_t beh;
	ura_value bound;
	struct ura__rd state;             /* the saved state's bytes */
	struct ura__rd stash;             /* nstash messages */
	uint32_t nstash;
	struct ura__rd timers;            /* ntimers entries */
	uint32_t ntimers;
	struct ura__actor *a;             /* made; token held until commit */
	ura_ref ref;
	int loaded;
};

struct rgroup {
	uint64_t id;
	char *name;                       /* NULL: anonymous */
	struct ura__rd members;
	uint32_t n;
	ura_group *g;
	int created;
};

struct rmsg {
	struct ura__rd r;                 /* the encoded message */
	uint64_t to;
	struct ura_msg *m;                /* built, not yet queued */
	struct ura__actor *a;
};

struct restore {
	ura_system *sys;
	const char *path;
	unsigned char *file;
	size_t size;
	struct rclass *classes;
	size_t nclasses, capc;
	struct ractor *actors;
	size_t nactors, capa;
	struct rgroup *groups;
	size_t ngroups, capg;
	struct rmsg *msgs;
	size_t nmsgs, capm;
	struct ura__map refs;             /* old ref -> new ref */
	struct ura__map timers;           /* old handle -> new handle */
	struct ura__map gids;             /* old group id -> ura_group * */
	ura_timer *armed;
	size_t narmed;
};

struct ura_snap_in {
	struct ura__rd rd;
	struct restore *R;
	ura_ref self;
};

static int bad(struct restore *R, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct restore *R, const char *fmt, ...)
{
	char msg[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	ura__log(&R->sys->log, URA_LOG_ERROR, "restore %s: refused: %s", R->path, msg);
	return -EINVAL;
}

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 64;
	void *nv = ura__realloc(*v, c * size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

/* Steps 1 to 5 of FORMAT.md's checks, on the header alone: f holds the
 * first min(64, size) bytes of a file of size bytes. */
static int check_header(struct restore *R, const unsigned char *f, uint64_t size)
{
	if (size < URA__SNAP_HDR + URA__SNAP_TRAILER)
		return bad(R, "truncated: %" PRIu64 " bytes, a snapshot has at least %u", size,
			   URA__SNAP_HDR + URA__SNAP_TRAILER);
	if (memcmp(f, URA__SNAP_MAGIC, 8))
		return bad(R, "not a ura snapshot (bad magic)");
	uint32_t version, hlen, hcrc;
	uint64_t blen;
	memcpy(&version, f + 8, 4);
	memcpy(&hlen, f + 12, 4);
	memcpy(&blen, f + 16, 8);
	memcpy(&hcrc, f + 56, 4);
	if (version != URA__SNAP_VERSION)
		return bad(R, "format version %u; this build reads version %u", version,
			   URA__SNAP_VERSION);
	if (ura__crc32c(0, f, 56) != hcrc)
		return bad(R, "header checksum mismatch: the file is corrupt");
	if (hlen != URA__SNAP_HDR)
		return bad(R, "header of %u bytes, want %u", hlen, URA__SNAP_HDR);
	if (blen != size - URA__SNAP_HDR - URA__SNAP_TRAILER)
		return bad(R, "truncated or extended: the header says %" PRIu64 " body bytes, "
			   "the file holds %" PRIu64, blen, size - URA__SNAP_HDR - URA__SNAP_TRAILER);
	return 0;
}

static int64_t header_ok(void *ud, const unsigned char *hdr, size_t n, uint64_t size)
{
	(void)n; /* 64 unless size is under 72, which check_header refuses first */
	int rc = check_header(ud, hdr, size);
	return rc < 0 ? rc : (int64_t)size;
}

static int read_file(struct restore *R)
{
	/* Restore holds the file and the system made from it at once: a
	 * file bigger than the machine's memory cannot be restored, and a
	 * header claiming one is not worth an allocation. */
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t max = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : UINT64_MAX;
	char why[512];
	int rc = ura__snap_file_read(R->path, URA__SNAP_HDR, header_ok, R, max, &R->file,
				     &R->size, why, sizeof why);
	if (rc < 0 && why[0])
		ura__log(&R->sys->log, URA_LOG_ERROR, "restore %s: %s", R->path, why);
	return rc;
}

/* Header, sizes, version and checksums (FORMAT.md). */
static int check_file(struct restore *R, struct ura__rd *body)
{
	const unsigned char *f = R->file;
	int rc = check_header(R, f, R->size);
	if (rc < 0)
		return rc;
	uint32_t bcrc, end;
	uint64_t blen = R->size - URA__SNAP_HDR - URA__SNAP_TRAILER;
	memcpy(&bcrc, f + R->size - 8, 4);
	memcpy(&end, f + R->size - 4, 4);
	if (end != URA__SNAP_END)
		return bad(R, "no end marker: the file is truncated or corrupt");
	uint32_t got = ura__crc32c(0, f + URA__SNAP_HDR, (size_t)blen);
	if (got != bcrc)
		return bad(R, "checksum mismatch (file says %08x, content gives %08x): the file "
			   "is corrupt", bcrc, got);
	body->p = f + URA__SNAP_HDR;
	body->n = (size_t)blen;
	body->off = 0;
	body->err = 0;
	return 0;
}

static const struct ura__snap_reg *reg_by_name(struct ura__snap *S, const char *name, size_t n)
{
	for (unsigned i = 0; i < S->nreg; i++)
		if (strlen(S->reg[i].name) == n && !memcmp(S->reg[i].name, name, n))
			return &S->reg[i];
	return NULL;
}

static int bound_ok(const ura_value *v)
{
	return v->type == URA_T_I64 || v->type == URA_T_F64 || v->type == URA_T_ATOM ||
	       v->type == URA_T_REF;
}

/* Skips n encoded messages (checking them); -EINVAL if malformed. With
 * timers, each comes after its handle, which keys R->timers: a handle of
 * 0 (never a timer's, and the map's empty key) is malformed too. */
static int check_msgs(struct ura__rd *r, uint32_t n, int timers)
{
	struct ura__smsg m;
	for (uint32_t i = 0; i < n; i++) {
		if (timers && (ura__rd_u64(r) == 0 || !ura__rd_take(r, 16)))
			return -EINVAL;
		if (ura__snap_get_msg(r, &m) < 0)
			return -EINVAL;
	}
	return r->err;
}

static int parse_class(struct restore *R, struct ura__rd *r)
{
	struct ura__snap *S = R->sys->snap;
	uint32_t idx = ura__rd_u32(r);
	uint64_t state_size = ura__rd_u64(r);
	uint32_t nbeh = ura__rd_u32(r);
	uint8_t saved = ura__rd_u8(r);
	uint16_t nlen = ura__rd_u16(r);
	const char *name = ura__rd_take(r, nlen);
	if (r->err || idx != R->nclasses)
		return bad(R, "malformed class record");
	const struct ura__snap_reg *reg = reg_by_name(S, name, nlen);
	if (!reg)
		return bad(R, "class '%.*s' is not registered (ura_snap_register)", (int)nlen, name);
	if (!!reg->sc.save != !!saved)
		return bad(R, "class '%.*s' was saved %s callbacks but is registered %s",
			   (int)nlen, name, saved ? "with" : "without", reg->sc.save ? "with" : "without");
	if (!saved && state_size != reg->cls->state_size)
		return bad(R, "class '%.*s' had %" PRIu64 "-byte states, now %zu", (int)nlen, name,
			   state_size, reg->cls->state_size);
	(void)nbeh; /* each actor's behavior index is checked against ours */
	if (grow((void **)&R->classes, &R->capc, R->nclasses, sizeof *R->classes) < 0)
		return -ENOMEM;
	R->classes[R->nclasses++].reg = reg;
	return 0;
}

static int parse_actor(struct restore *R, struct ura__rd *r)
{
	if (grow((void **)&R->actors, &R->capa, R->nactors, sizeof *R->actors) < 0)
		return -ENOMEM;
	struct ractor *x = &R->actors[R->nactors];
	memset(x, 0, sizeof *x);
	x->old = ura__rd_u64(r);
	x->cls = ura__rd_u32(r);
	x->node = ura__rd_u16(r);
	x->flags = ura__rd_u16(r);
	x->beh = (int32_t)ura__rd_u32(r);
	if (r->err || x->cls >= R->nclasses || !x->old)
		return bad(R, "malformed actor record");
	const struct ura__snap_reg *reg = R->classes[x->cls].reg;
	if (x->beh < -1 || x->beh >= (int32_t)reg->sc.nbehaviors)
		return bad(R, "an actor of class '%s' is in behavior %d; the class lists %u",
			   reg->name, x->beh, reg->sc.nbehaviors);
	if ((x->flags & URA__AF_BOUND) &&
	    (ura__snap_get_value(r, &x->bound) < 0 || !bound_ok(&x->bound)))
		return bad(R, "malformed bound value of an actor of class '%s'", reg->name);
	uint32_t slen = ura__rd_u32(r);
	const void *sp = ura__rd_take(r, slen);
	if (r->err || (!reg->sc.save && slen != (reg->cls->state_size ? reg->cls->state_size : 0)))
		return bad(R, "malformed state of an actor of class '%s'", reg->name);
	x->state = (struct ura__rd){ sp, slen, 0, 0 };
	x->nstash = ura__rd_u32(r);
	size_t at = r->off;
	if (check_msgs(r, x->nstash, 0) < 0)
		return bad(R, "malformed stash of an actor of class '%s'", reg->name);
	x->stash = (struct ura__rd){ r->p + at, r->off - at, 0, 0 };
	x->ntimers = ura__rd_u32(r);
	at = r->off;
	if (check_msgs(r, x->ntimers, 1) < 0)
		return bad(R, "malformed delayed sends of an actor of class '%s'", reg->name);
	x->timers = (struct ura__rd){ r->p + at, r->off - at, 0, 0 };
	if (ura__map_get(&R->refs, x->old, NULL))
		return bad(R, "actor <%u.%u> appears twice", (uint32_t)x->old,
			   (uint32_t)(x->old >> 32));
	if (ura__map_put(&R->refs, x->old, 0) < 0)
		return -ENOMEM;
	R->nactors++;
	return 0;
}

static int parse_group(struct restore *R, struct ura__rd *r)
{
	if (grow((void **)&R->groups, &R->capg, R->ngroups, sizeof *R->groups) < 0)
		return -ENOMEM;
	struct rgroup *g = &R->groups[R->ngroups];
	memset(g, 0, sizeof *g);
	g->id = ura__rd_u64(r);
	uint16_t nlen = ura__rd_u16(r);
	const char *name = ura__rd_take(r, nlen);
	g->n = ura__rd_u32(r);
	const void *mem = ura__rd_take(r, (size_t)g->n * 8);
	if (r->err || !g->id || (nlen && memchr(name, 0, nlen)))
		return bad(R, "malformed group record");
	g->members = (struct ura__rd){ mem, (size_t)g->n * 8, 0, 0 };
	if (nlen && !(g->name = strndup(name, nlen)))
		return -ENOMEM;
	R->ngroups++;
	return 0;
}

static int parse_msg(struct restore *R, struct ura__rd *r)
{
	if (grow((void **)&R->msgs, &R->capm, R->nmsgs, sizeof *R->msgs) < 0)
		return -ENOMEM;
	struct rmsg *m = &R->msgs[R->nmsgs];
	memset(m, 0, sizeof *m);
	(void)ura__rd_u64(r); /* seq: the records are in that order */
	m->to = ura__rd_u64(r);
	size_t at = r->off;
	struct ura__smsg sm;
	if (ura__snap_get_msg(r, &sm) < 0)
		return bad(R, "malformed message record");
	m->r = (struct ura__rd){ r->p + at, r->off - at, 0, 0 };
	R->nmsgs++;
	return 0;
}

static int parse(struct restore *R, struct ura__rd *body)
{
	while (body->off < body->n) {
		size_t at = body->off;
		uint32_t type = ura__rd_u32(body);
		uint32_t len = ura__rd_u32(body);
		const void *p = ura__rd_take(body, len);
		if (!p)
			return bad(R, "record at offset %zu runs past the end", at);
		struct ura__rd r = { p, len, 0, 0 };
		int rc;
		switch (type) {
		case URA__REC_CLASS: rc = parse_class(R, &r); break;
		case URA__REC_ACTOR: rc = parse_actor(R, &r); break;
		case URA__REC_GROUP: rc = parse_group(R, &r); break;
		case URA__REC_MSG: rc = parse_msg(R, &r); break;
		default: return bad(R, "unknown record type %u at offset %zu", type, at);
		}
		if (rc < 0)
			return rc;
		if (r.off != r.n)
			return bad(R, "record at offset %zu has %zu stray bytes", at, r.n - r.off);
	}
	/* Messages and group members must name actors of the file. */
	for (size_t i = 0; i < R->nmsgs; i++)
		if (!ura__map_get(&R->refs, R->msgs[i].to, NULL))
			return bad(R, "a message is addressed to an actor the file does not hold");
	return 0;
}

/* ---- making the system ---------------------------------------------- */

static uint64_t map_ref(struct restore *R, uint64_t old)
{
	uint64_t v = 0;
	return ura__map_get(&R->refs, old, &v) ? v : 0;
}

/* A message from its encoding, refs rewritten; NULL: -ENOMEM. */
static struct ura_msg *build(struct restore *R, struct ura__rd *r, ura_ref to, int *err)
{
	struct ura__smsg sm;
	if (ura__snap_get_msg(r, &sm) < 0) { /* checked before: cannot happen */
		*err = -EINVAL;
		return NULL;
	}
	for (unsigned i = 0; i < sm.n; i++)
		if (sm.vals[i].type == URA_T_REF)
			sm.vals[i].u.ref.id = map_ref(R, sm.vals[i].u.ref.id);
	long size = ura__msg_size(sm.vals, sm.n);
	struct ura_msg *m = size < 0 ? NULL : ura__msg_alloc(NULL, (size_t)size);
	if (!m) {
		*err = size < 0 ? (int)size : -ENOMEM;
		return NULL;
	}
	ura_ref from = { map_ref(R, sm.from) };
	ura__msg_fill(m, sm.tag, from, sm.vals, sm.n);
	m->to_gen = ura__ref_gen(to);
	m->kind = sm.kind;
	m->req = sm.req;
	m->flags = ura__phase_stamp(R->sys);
	return m;
}

static int arm_timers(struct restore *R, struct ractor *x)
{
	struct ura__rd r = x->timers;
	for (uint32_t i = 0; i < x->ntimers; i++) {
		uint64_t old = ura__rd_u64(&r), left = ura__rd_u64(&r), to = ura__rd_u64(&r);
		ura_ref nto = { map_ref(R, to) };
		int err = 0;
		if (!nto.id) { /* its target is not in the snapshot: it would be
			          a dead letter */
			struct ura__smsg skip;
			ura__snap_get_msg(&r, &skip);
			continue;
		}
		struct ura_msg *m = build(R, &r, nto, &err);
		if (!m)
			return err;
		if (left > URA_MAX_DELAY)
			left = URA_MAX_DELAY;
		ura_timer h = ura__timer_arm(R->sys, NULL, nto, left, m);
		if (h < 0) {
			ura__msg_free(NULL, m);
			return (int)h;
		}
		R->armed[R->narmed++] = h;
		if (ura__map_put(&R->timers, old, (uint64_t)h) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int fill_actor(struct restore *R, struct ractor *x)
{
	const struct ura__snap_reg *reg = R->classes[x->cls].reg;
	struct ura__actor *a = x->a;
	struct ura_snap_in in = { x->state, R, x->ref };
	if (reg->sc.load) {
		int rc = reg->sc.load(&in, a->state);
		if (rc < 0) {
			ura__log(&R->sys->log, URA_LOG_ERROR, "restore %s: load callback of class '%s' "
				 "failed: %s", R->path, reg->name, ura_strerror(rc));
			return rc;
		}
	} else if (x->state.n) {
		memcpy(a->state, x->state.p, x->state.n);
	}
	x->loaded = 1;
	if (x->beh >= 0) {
		a->beh = reg->sc.behaviors[x->beh];
		if (ura__metered(a->cls))
			ura__mx_beh(R->sys, a);
	}
	if (!(x->flags & URA__AF_BOUND) && !x->nstash)
		return 0;
	struct ura__actor_x *ax = ura__actor_x(NULL, a); /* off the workers */
	if (!ax)
		return -ENOMEM;
	if (x->flags & URA__AF_BOUND) {
		ax->bound = x->bound;
		if (ax->bound.type == URA_T_REF)
			ax->bound.u.ref.id = map_ref(R, ax->bound.u.ref.id);
	}
	struct ura__rd r = x->stash;
	for (uint32_t i = 0; i < x->nstash; i++) {
		int err = 0;
		struct ura_msg *m = build(R, &r, x->ref, &err);
		if (!m)
			return err;
		m->flags |= URA__MF_STASH;
		ura__actor_stash_append(NULL, a, m); /* ax exists: cannot fail */
	}
	return 0;
}

/* The actor's own delayed sends: cancelled when it stops, as if it had
 * armed them. */
static int track_timers(struct restore *R, struct ractor *x)
{
	struct ura__rd r = x->timers;
	for (uint32_t i = 0; i < x->ntimers; i++) {
		uint64_t old = ura__rd_u64(&r), h = 0;
		(void)ura__rd_take(&r, 16);
		struct ura__smsg skip;
		ura__snap_get_msg(&r, &skip);
		if (!ura__map_get(&R->timers, old, &h) || !h)
			continue; /* its target was not in the snapshot */
		if (ura__timer_own(R->sys, x->a, (ura_timer)h) < 0)
			return -ENOMEM;
	}
	return 0;
}

static int join_groups(struct restore *R)
{
	for (size_t i = 0; i < R->ngroups; i++) {
		struct rgroup *g = &R->groups[i];
		struct ura__rd r = g->members;
		for (uint32_t k = 0; k < g->n; k++) {
			ura_ref who = { map_ref(R, ura__rd_u64(&r)) };
			if (!who.id)
				continue; /* not an actor of the file: it had stopped */
			int rc = ura_group_join(g->g, who);
			if (rc < 0)
				return rc;
		}
	}
	return 0;
}

static int make_groups(struct restore *R)
{
	ura_system *sys = R->sys;
	for (size_t i = 0; i < R->ngroups; i++) {
		struct rgroup *g = &R->groups[i];
		int rc;
		if (g->name) {
			pthread_mutex_lock(&sys->groups->lock);
			int exists = 0;
			for (struct ura_group *e = sys->groups->list; e && !exists; e = e->next)
				exists = e->name && !strcmp(e->name, g->name);
			pthread_mutex_unlock(&sys->groups->lock);
			g->created = !exists;
			rc = ura_group_named(sys, g->name, &g->g);
		} else {
			g->created = 1;
			rc = ura_group_new(sys, &g->g);
		}
		if (rc < 0) {
			g->created = 0;
			return rc;
		}
		if (ura__map_put(&R->gids, g->id, (uint64_t)(uintptr_t)g->g) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Nothing happened: undo everything made so far. No worker has ever run
 * (the system was never started), so the timer stacks are ours to drain. */
static void rollback(struct restore *R)
{
	ura_system *sys = R->sys;
	for (size_t i = 0; i < R->narmed; i++)
		ura__timer_cancel(sys, NULL, R->armed[i]);
	for (unsigned i = 0; i < sys->nworkers; i++)
		ura__timers_drain(&sys->workers[i]);
	for (size_t i = 0; i < R->nmsgs; i++)
		if (R->msgs[i].m)
			ura__msg_free(NULL, R->msgs[i].m);
	for (size_t i = 0; i < R->nactors; i++)
		if (R->actors[i].a)
			ura__actor_restore_abort(sys, R->actors[i].a, R->actors[i].loaded);
	for (size_t i = 0; i < R->ngroups; i++)
		if (R->groups[i].created)
			ura_group_free(R->groups[i].g);
}

static long make(struct restore *R)
{
	ura_system *sys = R->sys;
	int rc = 0;
	size_t ntimers = 0;
	for (size_t i = 0; i < R->nactors; i++)
		ntimers += R->actors[i].ntimers;
	R->armed = ura__malloc((ntimers ? ntimers : 1) * sizeof *R->armed);
	if (!R->armed)
		return -ENOMEM;
	/* Slots first: every old ref gets its new value. */
	for (size_t i = 0; i < R->nactors && !rc; i++) {
		struct ractor *x = &R->actors[i];
		const struct ura__snap_reg *reg = R->classes[x->cls].reg;
		unsigned node = x->node < sys->nnodes ? x->node : 0;
		x->a = ura__actor_restore_new(sys, reg->cls, node, &x->ref);
		if (!x->a)
			rc = -ENOMEM;
		else if (ura__map_put(&R->refs, x->old, x->ref.id) < 0)
			rc = -ENOMEM;
	}
	if (!rc)
		rc = make_groups(R);
	for (size_t i = 0; i < R->nmsgs && !rc; i++) {
		struct rmsg *m = &R->msgs[i];
		ura_ref to = { map_ref(R, m->to) };
		m->a = ura__slot_get(sys, ura__ref_idx(to));
		m->m = build(R, &m->r, to, &rc);
	}
	for (size_t i = 0; i < R->nactors && !rc; i++)
		rc = arm_timers(R, &R->actors[i]);
	for (size_t i = 0; i < R->nactors && !rc; i++)
		rc = fill_actor(R, &R->actors[i]);
	for (size_t i = 0; i < R->nactors && !rc; i++)
		rc = track_timers(R, &R->actors[i]);
	if (!rc)
		rc = join_groups(R);
	if (rc < 0) {
		rollback(R);
		return rc;
	}
	/* Nothing can fail from here on. The messages go first, in the
	 * order they were about to be handled; then the tokens. */
	for (size_t i = 0; i < R->nmsgs; i++) {
		struct rmsg *m = &R->msgs[i];
		ura__ext_count(sys, m->m);
		ura__deliver(sys, NULL, m->a, m->m); /* we hold its token: not scheduled */
		m->m = NULL;
	}
	for (size_t i = 0; i < R->nactors; i++) {
		struct ractor *x = &R->actors[i];
		ura__actor_restore_done(sys, x->a, x->flags & URA__AF_RT);
		x->a = NULL;
	}
	return (long)R->nactors;
}

URA_API long ura_restore(ura_system *sys, const char *path, ura_snap_map **map)
{
	if (map)
		*map = NULL;
	if (!sys || !path || !*path)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	/* acquire: pairs with the release of started in ura__workers_start
	 * and of idx_hwm in reserve(): a spawn or a start we can see. */
	if (atomic_load_explicit(&sys->started, memory_order_acquire) ||
	    atomic_load_explicit(&sys->idx_hwm, memory_order_acquire) != 1) {
		ura__log(&sys->log, URA_LOG_ERROR, "restore %s: the system must be new: created paused, "
			 "nothing spawned", path);
		return -EBUSY;
	}
	struct restore R;
	memset(&R, 0, sizeof R);
	R.sys = sys;
	R.path = path;
	struct ura__rd body;
	ura_snap_map *out = NULL;
	long rc = read_file(&R);
	if (rc == 0)
		rc = check_file(&R, &body);
	if (rc == 0)
		rc = parse(&R, &body);
	if (rc == 0 && map && !(out = ura__calloc(1, sizeof *out)))
		rc = -ENOMEM;
	if (rc == 0)
		rc = make(&R);
	if (rc >= 0 && out) {
		out->refs = R.refs; /* now old -> new */
		memset(&R.refs, 0, sizeof R.refs);
		*map = out;
	} else {
		free(out);
	}
	for (size_t i = 0; i < R.ngroups; i++)
		free(R.groups[i].name);
	free(R.groups);
	free(R.actors);
	free(R.msgs);
	free(R.classes);
	free(R.armed);
	free(R.file);
	ura__map_free(&R.refs);
	ura__map_free(&R.timers);
	ura__map_free(&R.gids);
	return rc;
}

URA_API ura_ref ura_snap_map_ref(const ura_snap_map *map, ura_ref old)
{
	uint64_t v = 0;
	if (!map || !ura__map_get(&map->refs, old.id, &v))
		return URA_NOREF;
	ura_ref r = { v };
	return r;
}

URA_API void ura_snap_map_free(ura_snap_map *map)
{
	if (!map)
		return;
	ura__map_free(&map->refs);
	free(map);
}

/* ---- load callbacks' reader ----------------------------------------- */

URA_API int ura_snap_get(ura_snap_in *in, void *p, size_t n)
{
	if (!in || (n && !p))
		return -EINVAL;
	const void *s = ura__rd_take(&in->rd, n);
	if (!s)
		return -EINVAL;
	if (n)
		memcpy(p, s, n);
	return 0;
}

static int get_tagged(ura_snap_in *in, uint8_t tag, uint64_t *v)
{
	if (!in)
		return -EINVAL;
	uint8_t t = ura__rd_u8(&in->rd);
	*v = ura__rd_u64(&in->rd);
	return in->rd.err || t != tag ? -EINVAL : 0;
}

URA_API int ura_snap_get_ref(ura_snap_in *in, ura_ref *r)
{
	uint64_t v;
	int rc = get_tagged(in, URA__ST_REF, &v);
	if (rc == 0 && r)
		r->id = map_ref(in->R, v);
	return rc;
}

URA_API int ura_snap_get_timer(ura_snap_in *in, ura_timer *t)
{
	uint64_t v, h = 0;
	int rc = get_tagged(in, URA__ST_TIMER, &v);
	if (rc == 0 && t)
		*t = ura__map_get(&in->R->timers, v, &h) ? (ura_timer)h : 0;
	return rc;
}

URA_API int ura_snap_get_group(ura_snap_in *in, ura_group **g)
{
	uint64_t v, p = 0;
	int rc = get_tagged(in, URA__ST_GROUP, &v);
	if (rc == 0 && g)
		*g = ura__map_get(&in->R->gids, v, &p) ? (ura_group *)(uintptr_t)p : NULL;
	return rc;
}

URA_API ura_ref ura_snap_self(ura_snap_in *in)
{
	return in ? in->self : URA_NOREF;
}

URA_API size_t ura_snap_left(ura_snap_in *in)
{
	return in && !in->rd.err ? in->rd.n - in->rd.off : 0;
}
