/* SPDX-License-Identifier: MIT */
/*
 * Metrics, the readers' side: workers, classes, one actor, the top N.
 * Every load here is relaxed (core/metrics.h says why that is enough)
 * except the pointers the writers publish with release.
 */
#include <errno.h>
#include <string.h>

#include "core/metrics.h"
#include "core/sched.h"
#include "metrics/metrics.h"

static void hist_read(ura_hist *out, struct ura__hist *h)
{
	out->count = ura__ld(&h->count);
	out->sum_ns = ura__ld(&h->sum);
	for (unsigned i = 0; i < URA_HIST_BUCKETS; i++)
		out->bucket[i] = ura__ld(&h->b[i]);
}

static void hist_sum(ura_hist *out, struct ura__hist *h)
{
	out->count += ura__ld(&h->count);
	out->sum_ns += ura__ld(&h->sum);
	for (unsigned i = 0; i < URA_HIST_BUCKETS; i++)
		out->bucket[i] += ura__ld(&h->b[i]);
}

static void worker_read(ura_system *sys, struct ura__worker *w, ura_worker_metrics *o,
			uint64_t now)
{
	struct ura__wstats *s = &w->st;
	struct ura__wmx *m = w->mx;
	memset(o, 0, sizeof *o);
	o->id = w->id;
	o->node = w->node;
	o->cpu = w->cpu;
	uint32_t rq = ura__rq_len(&w->rq);
	o->runq = rq > URA__RQ_SIZE ? URA__RQ_SIZE : rq; /* head and tail read apart */
	/* The idle times and the state in progress, consistent (the
	 * sequence lock of ura__mx_state): acquire loads of the sequence and
	 * an acquire fence pair with the writer's release fence and store. */
	uint64_t spin, sleep, since;
	uint32_t st, seq;
	for (;;) {
		seq = atomic_load_explicit(&m->iseq, memory_order_acquire);
		spin = ura__ld(&m->spin_ns);
		sleep = ura__ld(&m->sleep_ns);
		since = ura__ld(&m->since);
		st = ura__ld(&m->state);
		ura__mx_fence_acq();
		if (!(seq & 1) && ura__ld(&m->iseq) == seq)
			break;
		ura__cpu_relax();
	}
	now = ura__now_ns(); /* after the read: the state in progress ends no earlier */
	if (st == URA__MX_SPIN && now > since)
		spin += now - since;
	else if (st == URA__MX_SLEEP && now > since)
		sleep += now - since;
	uint64_t start = ura__ld(&m->start_ns);
	o->uptime_ns = start && now > start ? now - start : 0;
	o->spin_ns = spin;
	o->sleep_ns = sleep;
	o->busy_ns = o->uptime_ns > spin + sleep ? o->uptime_ns - spin - sleep : 0;
	o->turns = ura__ld(&s->turns);
	o->received = ura__ld(&s->received);
	o->sent = ura__ld(&s->sent);
	o->spawned = ura__ld(&s->spawned);
	o->stopped = ura__ld(&s->stopped);
	o->unmatched = ura__ld(&s->unmatched);
	o->dead_letters = ura__ld(&s->dead_letters);
	o->steals = ura__ld(&s->steals);
	o->steals_remote = ura__ld(&s->steals_remote);
	o->sleeps = ura__ld(&s->sleeps);
	o->woken = ura__ld(&m->woken);
	o->wakeups_sent = ura__ld(&s->wakeups);
	o->wakeups_msg_ring = ura__ld(&s->wakeups_ring);
	/* The two are read apart, and the kind is bumped first: a read may
	 * see a MSG_RING wake its total does not have yet. */
	o->wakeups_eventfd = o->wakeups_sent > o->wakeups_msg_ring
				     ? o->wakeups_sent - o->wakeups_msg_ring : 0;
	o->ring_enters = ura__ld(&s->ring_enters);
	o->spin_yields = ura__ld(&s->spin_yields);
	o->alarm_sets = ura__ld(&s->alarm_sets);
	o->alarm_wakes = ura__ld(&s->alarm_wakes);
	o->timers_armed = ura__ld(&s->timers_armed);
	o->timers_fired = ura__ld(&s->timers_fired);
	o->timers_cancelled = ura__ld(&s->timers_cancelled);
	o->io_submitted = ura__ld(&s->io_submitted);
	o->io_completed = ura__ld(&s->io_completed);
	o->cross_node = ura__ld(&s->cross_node);
	o->flushes = ura__ld(&s->flushes);
	o->flushed = ura__ld(&s->flushed);
	hist_read(&o->timer_late, &m->timer_late);
	(void)sys;
}

URA_API int ura_metrics_workers(ura_system *sys, ura_worker_metrics *out, unsigned n)
{
	if (!sys || (n && !out))
		return -EINVAL;
	uint64_t now = ura__now_ns();
	for (unsigned i = 0; i < n && i < sys->nworkers; i++)
		worker_read(sys, &sys->workers[i], &out[i], now);
	return (int)sys->nworkers;
}

static void cstat_sum(ura_class_metrics *o, struct ura__cstat *c)
{
	o->spawned += ura__ld(&c->spawned);
	o->stopped_normal += ura__ld(&c->stopped_normal);
	o->stopped_other += ura__ld(&c->stopped_other);
	o->received += ura__ld(&c->received);
	o->handled += ura__ld(&c->handled);
	o->unmatched += ura__ld(&c->unmatched);
	o->dead_letters += ura__ld(&c->dead_letters);
	o->mailbox += ura__ld(&c->mailbox);
	hist_sum(&o->handler, &c->handler);
}

/* Class id's block on worker i, or NULL (none made yet). acquire: pairs
 * with the block's publication. */
static struct ura__cstat *cstat_at(ura_system *sys, unsigned i, unsigned id)
{
	return atomic_load_explicit(&sys->workers[i].mx->cs[id], memory_order_acquire);
}

void ura__metrics_class_wait_id(ura_system *sys, unsigned id, ura_hist *out)
{
	memset(out, 0, sizeof *out);
	hist_sum(out, &sys->mx->ext[id].wait);
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__cstat *c = cstat_at(sys, i, id);
		if (c)
			hist_sum(out, &c->wait);
	}
}

URA_API int ura_metrics_class_wait(ura_system *sys, const ura_class *cls, ura_hist *out)
{
	if (!sys || !cls || !out)
		return -EINVAL;
	struct ura__mx *mx = sys->mx;
	/* acquire: pairs with the release that registered the class. */
	unsigned ncls = atomic_load_explicit(&mx->ncls, memory_order_acquire);
	for (unsigned id = 0; id < ncls; id++)
		if (atomic_load_explicit(&mx->cls[id], memory_order_relaxed) == cls) {
			ura__metrics_class_wait_id(sys, id, out);
			return 0;
		}
	return -ENOENT;
}

URA_API int ura_metrics_classes(ura_system *sys, ura_class_metrics *out, unsigned n,
				uint64_t *overflow)
{
	if (!sys || (n && !out))
		return -EINVAL;
	struct ura__mx *mx = sys->mx;
	/* acquire: pairs with the release that registered the class. */
	unsigned ncls = atomic_load_explicit(&mx->ncls, memory_order_acquire);
	for (unsigned id = 0; id < n && id < ncls; id++) {
		ura_class_metrics *o = &out[id];
		memset(o, 0, sizeof *o);
		o->cls = atomic_load_explicit(&mx->cls[id], memory_order_relaxed);
		o->name = o->cls->name;
		o->sample_every = 1u << mx->shift;
		cstat_sum(o, &mx->ext[id]);
		for (unsigned i = 0; i < sys->nworkers; i++) {
			struct ura__cstat *c = cstat_at(sys, i, id);
			if (c)
				cstat_sum(o, c);
		}
		uint64_t stopped = o->stopped_normal + o->stopped_other;
		o->live = o->spawned > stopped ? o->spawned - stopped : 0;
		if (o->mailbox < 0)
			o->mailbox = 0; /* turns on two workers read at different times */
	}
	if (overflow)
		*overflow = atomic_load_explicit(&mx->overflow, memory_order_relaxed);
	return (int)ncls;
}

/* The actor at table index `index` as *out, if it is live (of generation
 * gen when gen != 0) ; 1 when filled, 0 otherwise. */
static int actor_read(ura_system *sys, uint32_t index, uint32_t want_gen, ura_actor_info *out)
{
	struct ura__actor *a = ura__slot_at(sys, index);
	if (!a)
		return 0;
	/* acquire: pairs with the release of gen at spawn and stop. */
	uint32_t gen = atomic_load_explicit(&a->gen, memory_order_acquire);
	if (!(gen & 1) || (want_gen && gen != want_gen))
		return 0;
	memset(out, 0, sizeof *out);
	out->ref = ura__ref_make(a->idx, gen);
	out->node = ura__home(a);
	out->worker = atomic_load_explicit(&a->last_worker, memory_order_relaxed);
	struct ura__amx *r = ura__amx_at(sys, index);
	if (!r)
		return 1;
	const ura_class *cls = ura__ld(&r->cls);
	if (!cls || ura__ld(&r->gen) != gen)
		return 1;
	out->cls = cls;
	out->name = cls->name;
	out->behavior = ura__ld(&r->beh);
	out->mailbox = ura__ld(&r->mailbox);
	out->handled = ura__ld(&r->handled);
	out->handler_ns = ura__ld(&r->handler_ns);
	/* The record may have moved on to a next incarnation while we read:
	 * then what we read is partly its, and the actor we were asked about
	 * is gone. acquire: keeps the loads above before this one. */
	if (atomic_load_explicit(&a->gen, memory_order_acquire) != gen ||
	    ura__ld(&r->gen) != gen)
		out->cls = NULL, out->name = NULL, out->behavior = NULL;
	return 1;
}

URA_API int ura_actor_inspect(ura_system *sys, ura_ref r, ura_actor_info *out)
{
	if (!sys || !out)
		return -EINVAL;
	uint32_t idx = ura__ref_idx(r), gen = ura__ref_gen(r);
	if (idx >> URA__IDX_BITS != sys->tag || !(gen & 1))
		return -ESRCH;
	return actor_read(sys, idx & URA__IDX_MASK, gen, out) ? 0 : -ESRCH;
}

static uint64_t key_of(const ura_actor_info *i, int by)
{
	return by == URA_TOP_MAILBOX ? i->mailbox
	       : by == URA_TOP_HANDLER_TIME ? i->handler_ns
					     : i->handled;
}

URA_API int ura_metrics_top(ura_system *sys, int by, ura_actor_info *out, unsigned n)
{
	if (!sys || (n && !out) || by < URA_TOP_MAILBOX || by > URA_TOP_HANDLED)
		return -EINVAL;
	unsigned have = 0;
	/* acquire: pairs with the release of idx_hwm (core/slots.c). */
	uint32_t hwm = atomic_load_explicit(&sys->idx_hwm, memory_order_acquire);
	for (uint32_t base = 0; base < hwm && n; base += URA__CHUNK) {
		struct ura__amx *chunk =
			atomic_load_explicit(&sys->mx->amx[base >> URA__CHUNK_SHIFT],
					     memory_order_acquire);
		if (!chunk)
			continue; /* no metered actor was ever spawned here */
		for (uint32_t k = 0; k < URA__CHUNK && base + k < hwm; k++) {
			struct ura__amx *rec = &chunk[k];
			if (!ura__ld(&rec->cls))
				continue;
			/* The key from the record alone first: most actors do
			 * not make the top, and their slots stay untouched. */
			uint64_t pre = by == URA_TOP_MAILBOX ? ura__ld(&rec->mailbox)
				       : by == URA_TOP_HANDLER_TIME ? ura__ld(&rec->handler_ns)
								    : ura__ld(&rec->handled);
			if (have == n && pre <= key_of(&out[n - 1], by))
				continue;
			ura_actor_info cand;
			if (!actor_read(sys, base + k, 0, &cand) || !cand.cls)
				continue;
			uint64_t key = key_of(&cand, by);
			if (have == n && key <= key_of(&out[n - 1], by))
				continue;
			/* Insertion into the sorted top n (n is small). */
			unsigned j = have < n ? have++ : n - 1;
			while (j > 0 && key_of(&out[j - 1], by) < key) {
				out[j] = out[j - 1];
				j--;
			}
			out[j] = cand;
		}
	}
	return (int)have;
}
