/* SPDX-License-Identifier: MIT */
/*
 * Request/response: a request carries an id; the reply (ura_reply to a
 * request) is routed to the requester's continuation for that id instead
 * of its behavior, and an optional deadline is a message to itself.
 */
#include <errno.h>
#include <stdlib.h>

#include "actor/actor.h"
#include "core/post.h"
#include "time/timers.h"

int ura__request_done(ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	for (struct ura__pending **pp = a->x ? &a->x->pending : NULL; pp && *pp;
	     pp = &(*pp)->next) {
		struct ura__pending *p = *pp;
		if (p->id != m->req)
			continue;
		*pp = p->next;
		cx->req_data = p->data;
		ura_handler *cont = p->cont;
		if (p->timer && m->kind == URA__MK_RESPONSE)
			ura__timer_cancel(cx->sys, cx->w, p->timer);
		ura__pool_put(&cx->w->pool, p, sizeof *p);
		cont(cx, m);
		return 1;
	}
	return 0;
}

void ura__requests_drop(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	struct ura__actor_x *x = a->x;
	if (!x)
		return;
	for (struct ura__pending *p = x->pending, *n; p; p = n) {
		n = p->next;
		if (p->timer)
			ura__timer_cancel(sys, w, p->timer);
		ura__pool_put(ura__pool_of(w), p, sizeof *p);
	}
	x->pending = NULL;
}

URA_API int ura_replyv(ura_ctx *cx, ura_atom tag, const ura_value *vals,
		       unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	struct ura_msg *m = cx->m;
	ura_ref to = m ? ura__msg_sender(m) : URA_NOREF;
	if (ura_ref_null(to))
		return -ESRCH;
	int req = m->kind == URA__MK_REQUEST;
	return ura__send_msg(cx->sys, cx->w, ura__home(cx->a), ura__self_ref(cx->a), to, tag, vals, n,
			req ? URA__MK_RESPONSE : URA__MK_PLAIN, req ? m->req : 0);
}

URA_API int ura_requestv_for(ura_ctx *cx, ura_ref to, uint64_t timeout_ns,
			     ura_handler *cont, void *data, ura_atom tag,
			     const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx) || !cont || timeout_ns > URA_MAX_DELAY)
		return -EINVAL;
	struct ura__actor *a = cx->a;
	struct ura__actor_x *x = ura__actor_x(a);
	struct ura__pending *p = x ? ura__pool_get(ura__pool_of(cx->w), sizeof *p) : NULL;
	if (!p)
		return -ENOMEM;
	uint32_t id = ++x->next_req;
	if (!id)
		id = ++x->next_req;
	ura_timer tmo = 0;
	if (timeout_ns) {
		/* The deadline is a message to ourselves, armed before the
		 * request leaves: if arming fails, nothing was sent. */
		struct ura__actor *ta = NULL;
		struct ura_msg *tm = NULL;
		ura_ref self = ura__self_ref(a);
		int rc = ura__msg_make(cx->sys, cx->w, self, self, URA_TIMEOUT, NULL, 0,
				  URA__MK_REQ_TIMEOUT, id, &ta, &tm);
		if (rc == 0) {
			tmo = ura__timer_arm(cx->sys, cx->w, self, timeout_ns, tm);
			if (tmo < 0) {
				rc = (int)tmo;
				ura__msg_free(ura__pool_of(cx->w), tm);
			}
		}
		if (rc < 0) {
			ura__pool_put(ura__pool_of(cx->w), p, sizeof *p);
			return rc;
		}
	}
	int rc = ura__send_msg(cx->sys, cx->w, ura__home(a), ura__self_ref(a), to, tag, vals, n,
			  URA__MK_REQUEST, id);
	if (rc < 0) {
		if (tmo > 0)
			ura__timer_cancel(cx->sys, cx->w, tmo);
		ura__pool_put(ura__pool_of(cx->w), p, sizeof *p);
		return rc;
	}
	/* The reply can only be handled in a later turn of this actor,
	 * whose token we hold, so registering after the send is safe. */
	p->id = id;
	p->cont = cont;
	p->data = data;
	p->timer = tmo;
	p->next = x->pending;
	x->pending = p;
	return 0;
}

URA_API int ura_requestv(ura_ctx *cx, ura_ref to, ura_handler *cont,
			 void *data, ura_atom tag, const ura_value *vals,
			 unsigned n)
{
	return ura_requestv_for(cx, to, 0, cont, data, tag, vals, n);
}

URA_API void *ura_request_data(ura_ctx *cx) { return ura__ctx_bad(cx) ? NULL : cx->req_data; }

