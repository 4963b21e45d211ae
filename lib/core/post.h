/* SPDX-License-Identifier: MIT */
/*
 * THE post path. Every message enters a mailbox through ura__post: a send
 * from a handler or from any thread (core/send.c), a delayed send firing
 * (time/), an I/O completion or signal (io/), a group's fan-out and a
 * request's reply (actor/), a snapshot's poke and a restore's queued
 * messages (snap/). The hot same-node path (ura__msg_make, the counts,
 * ura__post) is inline here: a send costs what it did when it was one
 * file.
 */
#ifndef URA_CORE_POST_H
#define URA_CORE_POST_H

#include "core/bound.h"
#include "core/metrics.h"
#include "core/outbox.h"
#include "core/quiesce.h"
#include "core/sched.h"

/* Checks a send to `to` and builds its message: nothing is counted or
 * pushed. -EINVAL (no tag, or an invalid one), the value errors of ura__msg_size, -ESRCH
 * (`to` is not alive), -ESHUTDOWN, -ENOMEM. */
static inline int ura__msg_make_in(ura_system *sys, struct ura__worker *w,
				   struct ura__pool *ext, ura_ref from, ura_ref to, ura_atom tag,
				   const ura_value *vals, unsigned n, uint8_t kind, uint32_t req,
				   struct ura__actor **ap, struct ura_msg **mp)
{
	if (ura__unlikely(!sys || !ura_atom_valid(tag)))
		return -EINVAL;
	uint64_t sig = 0;
	long size = (long)ura__msg_scalar(vals, n, &sig);
	if (ura__unlikely(!size)) {
		size = ura__msg_size(vals, n);
		if (ura__unlikely(size < 0))
			return (int)size;
	}
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(to));
	uint32_t gen = ura__ref_gen(to);
	/* acquire: pairs with the release stores of gen at spawn and stop. */
	if (ura__unlikely(!a || !(gen & 1) ||
			  atomic_load_explicit(&a->gen, memory_order_acquire) != gen))
		return -ESRCH;
	if (ura__unlikely(atomic_load_explicit(&sys->shutdown, memory_order_relaxed)))
		return -ESHUTDOWN;
	/* ext: the pool off the workers (a constant NULL in ura__msg_make,
	 * so that nothing is computed early and kept across the calls). */
	struct ura_msg *m = ura__msg_alloc(w ? &w->pool : ext, (size_t)size);
	if (ura__unlikely(!m))
		return -ENOMEM;
	if (ura__likely(sig || !n))
		ura__msg_fill_scalar(m, tag, from, vals, n, sig);
	else
		ura__msg_fill(m, tag, from, vals, n);
	m->to_gen = gen;
	m->kind = kind;
	m->req = req;
	/* The sender's phase (core/phase.h): the turn's actor on a worker,
	 * the system's elsewhere. */
	m->flags = w ? w->ph.cur : ura__phase_stamp(sys);
	*ap = a;
	*mp = m;
	return 0;
}

/* The same, from w's pool (malloc off the workers). */
static inline int ura__msg_make(ura_system *sys, struct ura__worker *w, ura_ref from,
				ura_ref to, ura_atom tag, const ura_value *vals, unsigned n,
				uint8_t kind, uint32_t req, struct ura__actor **ap,
				struct ura_msg **mp)
{
	return ura__msg_make_in(sys, w, NULL, from, to, tag, vals, n, kind, req, ap, mp);
}

/* Counts a message as sent, by whoever sends it, before it is posted: the
 * receiver may handle it at once, and the quiescence check must never see
 * handled > sent. */
static inline void ura__count_sent(ura_system *sys, struct ura__worker *w,
				   const struct ura_msg *m)
{
	if (w) {
		ura__inc(&w->st.sent);
		ura__phase_sent(&w->ph, m);
	} else {
		ura__ext_count(sys, m);
	}
}

/* The last step of every post: into the mailbox, and the push that finds
 * it idle schedules the actor (on w, or through its node's inject queue
 * with w NULL). A caller that holds a's token pushes without scheduling
 * (the mailbox is not idle while the token is held). */
static inline void ura__deliver(ura_system *sys, struct ura__worker *w,
				struct ura__actor *a, struct ura_msg *m)
{
	if (ura__mb_push(&a->mb, m))
		ura__schedule(sys, w, a);
}

/* Posts a counted message m to actor a. `home` is the sending actor's node
 * (the worker's when no actor sends). Whether a message is batched depends
 * only on the sender's and the target's homes, never on where the sender
 * happens to run: a stolen actor keeps routing as it did at home, so its
 * messages to one target never take two paths and overtake each other. */
static inline void ura__post(ura_system *sys, struct ura__worker *w, unsigned home,
			     struct ura__actor *a, struct ura_msg *m)
{
	/* To another node: batched through this worker's outbox (or pushed
	 * one at a time with batching off; counted either way). */
	unsigned to_node = ura__home(a);
	if (w && ura__unlikely(to_node != home)) {
		ura__inc(&w->st.cross_node);
		if (sys->numa_batch) {
			ura__outbox_add(w, to_node, a, m);
			return;
		}
	}
	ura__deliver(sys, w, a, m);
}

/* make + count + post: a send of values. */
/* core/send.c, out of line so that the inline send stays small: for a
 * target whose home word `hn` asks, the mailbox-wait sample, then the
 * bounded mailbox's admission (ura__bp_admit's result, deadline as its;
 * m is the caller's to free on a refusal). Every send of values from a
 * handler or from outside goes through it. */
int ura__send_gate(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
		   struct ura__actor *a, struct ura_msg *m, uint16_t hn, uint64_t deadline);

/* Always inline: with the scalar fill inside, gcc made it a call from
 * every send (pingpong 591.8 Ir/msg inlined, 609.4 called), for 9 KiB of
 * text over its 15 callers. */
static inline __attribute__((always_inline)) int
ura__send_msg(ura_system *sys, struct ura__worker *w, unsigned home,
				ura_ref from, ura_ref to, ura_atom tag,
				const ura_value *vals, unsigned n, uint8_t kind, uint32_t req)
{
	struct ura__actor *a = NULL;
	struct ura_msg *m = NULL;
	int rc = ura__msg_make(sys, w, from, to, tag, vals, n, (uint8_t)(kind & ~URA__MK_NOBOUND), req,
			       &a, &m);
	if (ura__unlikely(rc < 0))
		return rc;
	/* A bounded mailbox (core/bound.h) admits plain sends and requests;
	 * system messages pass. A class with URA_CLASS_METRICS_WAIT has its
	 * mailbox wait sampled (core/metrics.h); one test of the word covers
	 * both. kind is a
	 * constant in most callers. (make set a: saying so keeps gcc from
	 * warning about a NULL load.) */
	if (!a)
		__builtin_unreachable();
	uint16_t hn;
	if (kind <= URA__MK_REQUEST &&
	    ura__unlikely((hn = atomic_load_explicit(&a->home_node, memory_order_relaxed)) &
			  (URA__HOME_BOUNDED | URA__HOME_METERED))) {
		rc = ura__send_gate(sys, w, from, to, a, m, hn, 0);
		if (rc) {
			ura__msg_free(ura__pool_of(w), m);
			return rc;
		}
	}
	ura__count_sent(sys, w, m);
	/* USDT (util/probe.h): sender's and target's table index, tag. */
	URA_PROBE3(send, (uint32_t)from.id, (uint32_t)to.id, tag);
	ura__post(sys, w, home, a, m);
	return 0;
}

/* core/send.c */
/* A send on behalf of `from` (an actor of w's, or URA_NOREF), routed from
 * from's home node (w's node without one): groups, signals. */
int ura__send(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
	      ura_atom tag, const ura_value *vals, unsigned n);
/* Posts a message made earlier and already counted as sent (a delayed
 * send firing, an I/O completion) from worker w to `to`. A target that
 * stopped meanwhile drops it as a dead letter (its generation no longer
 * matches m->to_gen). */
void ura__post_made(struct ura__worker *w, ura_ref to, struct ura_msg *m);

#endif
