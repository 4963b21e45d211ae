/* SPDX-License-Identifier: MIT */
/* ura_send_after and ura_cancel: a message made now, posted by a worker's
 * wheel later (time/timers.c). */
#include <errno.h>
#include <stdlib.h>

#include "core/post.h"
#include "time/delay.h"

int ura__timer_own(ura_system *sys, struct ura__actor *a, ura_timer h)
{
	struct ura__actor_x *x = ura__actor_x(ura__thread_worker(sys), a);
	if (!x)
		return -ENOMEM;
	struct ura__ids *t = x->timers;
	if (t && t->n == t->cap) {
		/* Full: drop the handles of timers that already fired. */
		uint32_t k = 0;
		for (uint32_t i = 0; i < t->n; i++)
			if (ura__timer_live(sys, t->v[i]))
				t->v[k++] = t->v[i];
		t->n = k;
		/* Mostly live: grow, so that the next scan comes after at
		 * least as many arms as this one read. Kept at its size, a
		 * scan that freed a few places came again a few arms later:
		 * an actor with 1M timers pending, some firing, spent 2-5 us
		 * an arm rescanning them (bench/timer_slack at 2 workers). */
		if (k > t->cap / 2 && ura__ids_reserve(&x->timers, t->cap * 2) < 0)
			return -ENOMEM;
	}
	return ura__ids_push(&x->timers, h);
}

void ura__timers_cancel_owned(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	struct ura__ids *t = a->x ? a->x->timers : NULL;
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n; i++)
		ura__timer_cancel(sys, w, t->v[i]); /* -ENOENT: already fired */
	free(t);
	a->x->timers = NULL;
}

static ura_timer send_after(ura_system *sys, struct ura__worker *w, struct ura__actor *owner,
			    ura_ref from, ura_ref to, uint64_t delay, ura_atom tag,
			    const ura_value *vals, unsigned n)
{
	if (delay > URA_MAX_DELAY)
		return -EINVAL;
	struct ura__actor *a = NULL;
	struct ura_msg *m = NULL;
	int rc = ura__msg_make(sys, w, from, to, tag, vals, n, URA__MK_PLAIN, 0, &a, &m);
	if (rc < 0)
		return rc;
	if (!owner)
		m->flags |= URA__MF_NOSNAP; /* no actor's: snapshots leave it out */
	ura_timer h = ura__timer_arm(sys, w, to, delay, m);
	if (h < 0) {
		ura__msg_free(ura__pool_of(w), m);
		return h;
	}
	/* -ENOMEM: it still fires; it just won't be cancelled at the stop. */
	if (owner)
		(void)ura__timer_own(sys, owner, h);
	return h;
}

URA_API ura_timer ura_send_afterv_ctx(ura_ctx *cx, ura_ref to, uint64_t delay_ns,
				      ura_atom tag, const ura_value *vals,
				      unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	return send_after(cx->sys, cx->w, cx->a, ura__self_ref(cx->a), to, delay_ns, tag,
			  vals, n);
}

URA_API ura_timer ura_send_afterv_sys(ura_system *sys, ura_ref to,
				      uint64_t delay_ns, ura_atom tag,
				      const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	return send_after(sys, ura__thread_worker(sys), NULL, URA_NOREF, to, delay_ns, tag,
			  vals, n);
}

URA_API int ura_cancel(ura_system *sys, ura_timer t)
{
	if (!sys)
		return -EINVAL;
	return ura__timer_cancel(sys, ura__thread_worker(sys), t);
}
