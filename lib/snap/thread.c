/* SPDX-License-Identifier: MIT */
/*
 * Snapshots, the snapshot thread's side (the design is in snap.h): the
 * phase flip, idle actors captured and busy ones poked, the wait for the
 * end of the old phase, and the file built from what was recorded.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/uio.h>

#include "actor/group.h"
#include "snap/file.h"
#include "snap/snap_int.h"

#define POKE_TAG URA_ATOM("_snappoke")
/* Problems listed in a report before "and N more". */
#define REPORT_LINES 20

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
	ura__ext_count(sys, m);
	ura__deliver(sys, NULL, a, m);
}

/* Every actor alive now: captured here if idle (we take its token the way
 * a spawn takes a free slot), else poked. */
static void scan(struct ura__snap *S, unsigned P)
{
	ura_system *sys = S->sys;
	/* acquire: pairs with the release of idx_hwm in core/slots.c. */
	uint32_t hwm = atomic_load_explicit(&sys->idx_hwm, memory_order_acquire);
	for (uint32_t idx = 1; idx < hwm; idx++) {
		struct ura__actor *a = ura__slot_at(sys, idx);
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
			ura__snap_capture_actor(S, &S->tbuf, &S->scratch, a, P, S->id);
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
		r += atomic_load_explicit(&sys->workers[i].ph.recv[old], memory_order_acquire);
	for (unsigned i = 0; i < sys->nworkers; i++)
		s += atomic_load_explicit(&sys->workers[i].ph.sent[old], memory_order_relaxed);
	s += ura__ext_phase_sent(sys, old);
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
		struct span *nv = ura__realloc(*v, c * sizeof *nv);
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
	struct span *out = ura__malloc(g->nmsgs * sizeof *out);
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
	pthread_mutex_lock(&sys->groups->lock);
	for (struct ura_group *gr = sys->groups->list; gr; gr = gr->next) {
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
	pthread_mutex_unlock(&sys->groups->lock);
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
		*error = ura__strdup(why);
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
	g.runs = ura__malloc((sys->nworkers + 1) * sizeof *g.runs);
	if (!g.runs)
		return -ENOMEM;
	for (unsigned i = 0; i < sys->nworkers; i++)
		gather_buf(&g, &sys->workers[i].rec->buf, S->id);
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
			*error = ura__strdup("a group has more members than a snapshot record holds");
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

	/* ura_snapshot moved the phase before it let go of S->lock: taking
	 * the lock orders us after that flip (and after everything it
	 * published), so the scan below sees the new phase. */
	pthread_mutex_lock(&S->lock);
	pthread_mutex_unlock(&S->lock);
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
		ura__log(&sys->log, URA_LOG_WARN, "snapshot %" PRIu64 " (%s) failed: %s", S->id, S->path,
			 info.error ? info.error : ura_strerror(rc));
	else
		ura__log(&sys->log, URA_LOG_DEBUG, "snapshot %" PRIu64 ": %s, %" PRIu64 " actors, %"
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
	/* seq_cst: pairs with the load in ura__quiescent. */
	atomic_fetch_sub_explicit(&sys->held, 1, memory_order_seq_cst);
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
	if (!sys || !path || !*path ||
	    (opts && !ura__zeroed(opts->reserved_, sizeof opts->reserved_)))
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
	char *p = ura__strdup(path);
	struct ura__snap_thr *t = ura__calloc(1, sizeof *t);
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
	atomic_fetch_add_explicit(&sys->held, 1, memory_order_seq_cst);
	t->S = S;
	int rc = pthread_create(&t->t, NULL, snap_main, t);
	if (rc) {
		/* Nothing started, and the phase has not moved: the id goes back. */
		S->phase--;
		S->id = S->phase;
		free(S->path);
		S->path = NULL;
		atomic_store_explicit(&S->active, 0, memory_order_relaxed);
		atomic_fetch_sub_explicit(&sys->held, 1, memory_order_seq_cst);
		pthread_mutex_unlock(&S->lock);
		free(t);
		return -rc;
	}
	t->next = S->thr;
	S->thr = t;
	/* The new phase starts here, before we return, as the header says:
	 * a caller that returns from ura_snapshot knows the cut is made, so
	 * whatever it does afterwards is after the cut (the thread, which may
	 * not run for a while on a loaded machine, only collects). Moved only
	 * once the thread exists: nothing has to be taken back. seq_cst
	 * store, then a seq_cst fence: pairs with the fence in
	 * phase_of_child (actor/lifecycle.c, Dekker); and the store is the
	 * release that workers' acquire of snap_ph pairs with (the registry,
	 * id and options above it are theirs to read). */
	atomic_store_explicit(&S->state, S->id << 1 | 1, memory_order_relaxed);
	atomic_store_explicit(&sys->snap_ph, (uint8_t)(S->id & 1), memory_order_seq_cst);
	ura__fence_seq_cst();
	pthread_mutex_unlock(&S->lock);
	return 0;
}

