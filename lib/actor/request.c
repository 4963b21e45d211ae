/* SPDX-License-Identifier: MIT */
/*
 * Requests that end. A request carries an id; its answer (a RESPONSE, an
 * ERROR, or the deadline's REQ_TIMEOUT, whichever comes first) is routed
 * to the requester's continuation for that id instead of its behavior.
 *
 * Why every request ends exactly once: on the requester's side the
 * pending record is taken out of the list by the first answer, and the
 * others find nothing (ura__request_done). On the target's side a request
 * is, at every moment, in exactly one place that answers it when it goes:
 *  - in the mailbox: a dead letter if the target stops first, answered
 *    with its exit reason (actor/signal.c's dead-letter path);
 *  - in the stash: answered when the stop frees the stash;
 *  - the current request of a handler (or of a continuation, for a
 *    chained promise): the handler answers it, takes it as a promise or
 *    forwards it; one that returns having done none of those answers it
 *    with URA_NOREPLY (or, when the handler stops the actor, its exit
 *    reason): ura__request_settle;
 *  - an open promise, in the actor's signal table: answered once by
 *    ura_promise_*, or with the exit reason when the actor stops
 *    (ura__sig_stop);
 *  - forwarded: a request message of another actor's, where all of the
 *    above applies again.
 * Each step moves it from one place to the next, under the token of the
 * actor that holds it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/signal.h"
#include "core/post.h"
#include "time/timers.h"

static size_t pending_size(const struct ura__pending *p)
{
	return offsetof(struct ura__pending, payload) + p->len;
}

/* The answer of the current request: a message of `kind` to its
 * requester. Closes it when sent (or when the requester is gone). */
static int answer(ura_ctx *cx, uint8_t kind, ura_atom tag, const ura_value *vals, unsigned n)
{
	struct ura__actor *a = cx->a;
	int rc = ura__send_msg(cx->sys, cx->w, ura__home(a), ura__self_ref(a), cx->req_from, tag,
			       vals, n, kind, cx->req_id);
	if (rc == 0 || rc == -ESRCH) {
		cx->req_open = 0;
		if (cx->req_promised) {
			struct ura__sig *s = a->x ? a->x->sig : NULL;
			struct ura__sent *e = s ? ura__sig_find(s, URA__S_PROMISE, cx->req_from.id,
								cx->req_id) : NULL;
			if (e)
				ura__sig_del(s, e);
		}
	}
	return rc;
}

void ura__request_settle(ura_ctx *cx, struct ura_msg *m, int matched)
{
	if (!cx->req_open)
		return;
	struct ura__actor *a = cx->a;
	if (m && (m->flags & URA__MF_STASH)) {
		cx->req_open = 0; /* stashed: answered when it is handled, or dropped */
		return;
	}
	if (cx->req_promised) {
		/* A chained promise answered meanwhile by ura_promise_reply:
		 * nothing left to do. */
		struct ura__sig *s = a->x ? a->x->sig : NULL;
		if (!s || !ura__sig_find(s, URA__S_PROMISE, cx->req_from.id, cx->req_id)) {
			cx->req_open = 0;
			return;
		}
	}
	ura_atom reason = matched ? URA_NOREPLY : URA_UNMATCHED;
	ura_value value;
	memset(&value, 0, sizeof value);
	if (a->stopping)
		ura__why_get(&cx->why, &reason, &value);
	ura_value v[2];
	unsigned n = ura__reason_vals(v, reason, value);
	if (answer(cx, URA__MK_ERROR, URA_ERROR, v, n) < 0) {
		/* No memory even for the error: the requester's deadline, if
		 * any, ends it; say so. */
		ura__log(&cx->sys->log, URA_LOG_ERROR, "actor %s: a request's error answer was lost",
			 a->cls->name);
		cx->req_open = 0;
	}
}

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
		cx->req_payload = p->len ? p->payload : NULL;
		cx->req_payload_len = p->len;
		if (p->timer && m->kind != URA__MK_REQ_TIMEOUT)
			ura__timer_cancel(cx->sys, cx->w, p->timer);
		if (p->chained) {
			/* The chained promise is the continuation's current
			 * request, if this actor still holds it. */
			struct ura__sig *s = a->x ? a->x->sig : NULL;
			if (s && ura__sig_find(s, URA__S_PROMISE, p->chain.to_.id, p->chain.id_)) {
				cx->req_from = p->chain.to_;
				cx->req_id = (uint32_t)p->chain.id_;
				cx->req_open = 1;
				cx->req_promised = 1;
			}
		}
		p->cont(cx, m);
		ura__request_settle(cx, NULL, 1);
		cx->req_open = 0;
		cx->req_promised = 0;
		cx->req_payload = NULL;
		cx->req_payload_len = 0;
		ura__pool_put(&cx->w->pool, p, pending_size(p));
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
		ura__pool_put(ura__pool_of(w), p, pending_size(p));
	}
	x->pending = NULL;
}

/* ---- answering -------------------------------------------------------------- */

URA_API int ura_replyv(ura_ctx *cx, ura_atom tag, const ura_value *vals,
		       unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	if (cx->req_open)
		return answer(cx, URA__MK_RESPONSE, tag, vals, n);
	struct ura_msg *m = cx->m;
	if ((m && m->kind == URA__MK_REQUEST) || cx->req_promised)
		return -EALREADY; /* answered (or taken, or forwarded) already */
	ura_ref to = m ? ura__msg_sender(m) : URA_NOREF;
	if (ura_ref_null(to))
		return -ESRCH;
	return ura__send_msg(cx->sys, cx->w, ura__home(cx->a), ura__self_ref(cx->a), to, tag, vals,
			     n, URA__MK_PLAIN, 0);
}

/* A reason and value a request may be failed with. */
static int reason_ok(ura_atom reason, ura_value value)
{
	return ura_atom_valid(reason) && value.type != URA_T_PTR &&
	       ura__msg_size(&value, value.type ? 1 : 0) >= 0;
}

URA_API int ura_reply_error(ura_ctx *cx, ura_atom reason, ura_value value)
{
	if (ura__ctx_bad(cx) || !reason_ok(reason, value))
		return -EINVAL;
	if (!cx->req_open)
		return -ENOENT;
	ura_value v[2];
	unsigned n = ura__reason_vals(v, reason, value);
	return answer(cx, URA__MK_ERROR, URA_ERROR, v, n);
}

URA_API int ura_forwardv(ura_ctx *cx, ura_ref to, ura_atom tag, const ura_value *vals,
			 unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	if (!cx->req_open)
		return -ENOENT;
	struct ura__actor *a = cx->a;
	/* From the requester: `to` answers it directly. */
	int rc = ura__send_msg(cx->sys, cx->w, ura__home(a), cx->req_from, to, tag, vals, n,
			       URA__MK_REQUEST, cx->req_id);
	if (rc == 0) {
		cx->req_open = 0;
		if (cx->req_promised) {
			struct ura__sig *s = a->x ? a->x->sig : NULL;
			struct ura__sent *e = s ? ura__sig_find(s, URA__S_PROMISE, cx->req_from.id,
								cx->req_id) : NULL;
			if (e)
				ura__sig_del(s, e);
		}
	}
	return rc;
}

URA_API int ura_promise_take(ura_ctx *cx, ura_promise *out)
{
	if (ura__ctx_bad(cx) || !out)
		return -EINVAL;
	if (!cx->req_open)
		return -ENOENT;
	if (!cx->req_promised) {
		struct ura__sig *s = ura__sig_of(cx->w, cx->a);
		if (!s || ura__sig_add(s, URA__S_PROMISE, cx->req_from.id, cx->req_id, 0) < 0)
			return -ENOMEM;
	}
	out->to_ = cx->req_from;
	out->id_ = cx->req_id;
	cx->req_open = 0;
	return 0;
}

/* The open promise p names, or NULL. */
static struct ura__sent *promise_find(ura_ctx *cx, const ura_promise *p, struct ura__sig **sp)
{
	struct ura__sig *s = cx->a->x ? cx->a->x->sig : NULL;
	*sp = s;
	return s ? ura__sig_find(s, URA__S_PROMISE, p->to_.id, p->id_) : NULL;
}

/* Sends p's answer (kind, from `from`, to `to`); closes p when it went
 * (or the requester is gone, for an answer). */
static int promise_send(ura_ctx *cx, ura_promise *p, uint8_t kind, ura_ref from, ura_ref to,
			ura_atom tag, const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx) || !p)
		return -EINVAL;
	if (!p->to_.id)
		return -EINVAL;
	struct ura__sig *s;
	struct ura__sent *e = promise_find(cx, p, &s);
	if (!e)
		return -ENOENT;
	int rc = ura__send_msg(cx->sys, cx->w, ura__home(cx->a), from, to, tag, vals, n, kind,
			       (uint32_t)p->id_);
	if (rc == 0 || (rc == -ESRCH && kind != URA__MK_REQUEST)) {
		/* The table may have been rebuilt by nothing in between (the
		 * send does not touch it): e is still the entry. */
		ura__sig_del(s, e);
		memset(p, 0, sizeof *p);
	}
	return rc;
}

URA_API int ura_promise_replyv(ura_ctx *cx, ura_promise *p, ura_atom tag,
			       const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx) || !p)
		return -EINVAL;
	return promise_send(cx, p, URA__MK_RESPONSE, ura__self_ref(cx->a), p->to_, tag, vals, n);
}

URA_API int ura_promise_fail(ura_ctx *cx, ura_promise *p, ura_atom reason, ura_value value)
{
	if (ura__ctx_bad(cx) || !p || !reason_ok(reason, value))
		return -EINVAL;
	ura_value v[2];
	unsigned n = ura__reason_vals(v, reason, value);
	return promise_send(cx, p, URA__MK_ERROR, ura__self_ref(cx->a), p->to_, URA_ERROR, v, n);
}

URA_API int ura_promise_forwardv(ura_ctx *cx, ura_promise *p, ura_ref to, ura_atom tag,
				 const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx) || !p)
		return -EINVAL;
	return promise_send(cx, p, URA__MK_REQUEST, p->to_, to, tag, vals, n);
}

/* ---- asking ------------------------------------------------------------------ */

URA_API int ura_requestv_ex(ura_ctx *cx, ura_ref to, ura_handler *cont,
			    const ura_request_opts *opts, ura_atom tag,
			    const ura_value *vals, unsigned n)
{
	static const ura_request_opts none;
	if (!opts)
		opts = &none;
	if (ura__ctx_bad(cx) || !cont || opts->timeout_ns > URA_MAX_DELAY ||
	    opts->payload_len > URA_REQUEST_PAYLOAD_MAX || (opts->payload_len && !opts->payload) ||
	    !ura__zeroed(opts->reserved_, sizeof opts->reserved_))
		return -EINVAL;
	struct ura__actor *a = cx->a;
	if (opts->chain) {
		struct ura__sig *s;
		if (!opts->chain->to_.id)
			return -EINVAL;
		if (!promise_find(cx, opts->chain, &s))
			return -ENOENT; /* not a promise this actor holds */
	}
	struct ura__actor_x *x = ura__actor_x(cx->w, a);
	size_t size = offsetof(struct ura__pending, payload) + opts->payload_len;
	struct ura__pending *p = x ? ura__pool_get(ura__pool_of(cx->w), size) : NULL;
	if (!p)
		return -ENOMEM;
	uint32_t id = ++x->next_req;
	if (!id)
		id = ++x->next_req;
	ura_timer tmo = 0;
	if (opts->timeout_ns) {
		/* The deadline is a message to ourselves, armed before the
		 * request leaves: if arming fails, nothing was sent. */
		struct ura__actor *ta = NULL;
		struct ura_msg *tm = NULL;
		ura_ref self = ura__self_ref(a);
		int rc = ura__msg_make(cx->sys, cx->w, self, self, URA_TIMEOUT, NULL, 0,
				       URA__MK_REQ_TIMEOUT, id, &ta, &tm);
		if (rc == 0) {
			tmo = ura__timer_arm(cx->sys, cx->w, self, opts->timeout_ns, tm);
			if (tmo < 0) {
				rc = (int)tmo;
				ura__msg_free(ura__pool_of(cx->w), tm);
			}
		}
		if (rc < 0) {
			ura__pool_put(ura__pool_of(cx->w), p, size);
			return rc;
		}
	}
	int rc = ura__send_msg(cx->sys, cx->w, ura__home(a), ura__self_ref(a), to, tag, vals, n,
			       URA__MK_REQUEST, id);
	if (rc < 0) {
		if (tmo > 0)
			ura__timer_cancel(cx->sys, cx->w, tmo);
		ura__pool_put(ura__pool_of(cx->w), p, size);
		return rc;
	}
	/* The answer can only be handled in a later turn of this actor,
	 * whose token we hold, so registering after the send is safe. */
	p->id = id;
	p->cont = cont;
	p->data = opts->data;
	p->timer = tmo;
	p->len = (uint16_t)opts->payload_len;
	p->chained = opts->chain != NULL;
	if (opts->chain)
		p->chain = *opts->chain;
	else
		memset(&p->chain, 0, sizeof p->chain);
	if (opts->payload_len)
		memcpy(p->payload, opts->payload, opts->payload_len);
	p->next = x->pending;
	x->pending = p;
	return 0;
}

URA_API int ura_requestv_for(ura_ctx *cx, ura_ref to, uint64_t timeout_ns,
			     ura_handler *cont, void *data, ura_atom tag,
			     const ura_value *vals, unsigned n)
{
	ura_request_opts o;
	memset(&o, 0, sizeof o);
	o.timeout_ns = timeout_ns;
	o.data = data;
	return ura_requestv_ex(cx, to, cont, &o, tag, vals, n);
}

URA_API int ura_requestv(ura_ctx *cx, ura_ref to, ura_handler *cont,
			 void *data, ura_atom tag, const ura_value *vals,
			 unsigned n)
{
	return ura_requestv_for(cx, to, 0, cont, data, tag, vals, n);
}

URA_API void *ura_request_data(ura_ctx *cx) { return ura__ctx_bad(cx) ? NULL : cx->req_data; }

URA_API void *ura_request_payload(ura_ctx *cx, size_t *len)
{
	int ok = !ura__ctx_bad(cx) && cx->req_payload;
	if (len)
		*len = ok ? cx->req_payload_len : 0;
	return ok ? cx->req_payload : NULL;
}
