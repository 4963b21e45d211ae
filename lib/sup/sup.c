/* SPDX-License-Identifier: MIT */
/*
 * Supervisors (ura.h, "Supervisors"): an actor of sup_class, built on the
 * public calls only (links, trapped exits, exit signals, delayed sends,
 * requests and promises). lib/README.md has the design in short.
 *
 * The supervisor is a plain actor: everything below runs in its handlers,
 * on whatever worker runs it, one handler at a time, so its state needs
 * no lock. It keeps its children in start order, in an array that only
 * grows or is compacted between operations (indices stay put while one
 * runs).
 *
 * Its one long operation is terminating children: a URA_SHUTDOWN exit
 * signal, then waiting for the child's EXIT (it is linked, and we trap
 * exits) with a deadline (a delayed send to ourselves, numbered, so a
 * late one is recognised), then URA_KILL. A handler cannot block, so an
 * operation is a small state machine: `term` marks the children still to
 * terminate, `cur` the one being waited for, and what the operation does
 * when the last is gone (op). While one runs the supervisor is in the
 * `busy` behavior, which takes exits and deadlines and stashes the rest
 * (calls, retries); the become back to `idle` re-delivers them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ura.h"

/* The protocol: requests to the supervisor, its answers, its own. */
#define A_WHICH URA_ATOM("_sup_which")
#define A_START URA_ATOM("_sup_start")
#define A_TERM URA_ATOM("_sup_term")
#define A_RESTART URA_ATOM("_sup_rest")
#define A_DELETE URA_ATOM("_sup_del")
#define A_REP URA_ATOM("_sup_rep")   /* (i64 rc, ref child) */
#define A_KIDS URA_ATOM("_sup_kids") /* (i64 n, bytes ura_sup_child[]) */
#define A_DEADLINE URA_ATOM("_sup_tmo") /* (i64 seq) */
#define A_RETRY URA_ATOM("_sup_retry")  /* (atom id): a restart that failed */
#define A_GO URA_ATOM("_sup_go")        /* a blocking call's helper starts */

_Static_assert(sizeof(ura_child_spec) == 88, "ura_child_spec grows only through reserved_");
_Static_assert(sizeof(ura_sup_spec) == 64, "ura_sup_spec grows only through reserved_");
_Static_assert(sizeof(ura_sup_child) == 48, "ura_sup_child grows only through reserved_");

enum { OP_NONE, OP_RESTART, OP_TERM_ONE, OP_SHUTDOWN };

typedef struct {
	ura_child_spec spec; /* a copy; what it points at is the caller's */
	ura_ref ref;         /* URA_NOREF: not running */
	uint64_t restarts;
	uint8_t term;        /* to terminate in the running operation */
	uint8_t again;       /* to start again when it is done */
	uint8_t died;        /* stopped by itself meanwhile: see op_done */
	uint8_t gone;        /* deleted: compacted away between operations */
	ura_atom why;        /* the reason it died with (died) */
} kid;

typedef struct {
	kid *kids;
	uint32_t n, cap;
	uint32_t strategy, intensity;
	uint64_t period;
	/* The last `intensity` restarts' times, a ring: a new restart
	 * exceeds the intensity when the ring is full and its oldest entry
	 * is within the period. */
	uint64_t *stamps;
	uint32_t nstamps, oldest;
	/* The operation running (OP_NONE: none). */
	int op;
	int32_t cur;         /* the kid being waited for; -1: none */
	uint64_t seq;        /* numbers cur's deadline */
	ura_timer timer;     /* cur's deadline; 0: none */
	ura_atom reason;     /* OP_SHUTDOWN: the supervisor's exit reason */
	ura_promise pr;      /* OP_TERM_ONE: the call it answers */
	/* ura_exit was called: the handler that called it may still be
	 * running (op_done's loop), and must start nothing more. */
	int exiting;
} sup_st;

static const ura_class sup_class;
URA_BEHAVIOR_DECL(idle);
URA_BEHAVIOR_DECL(busy);

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * URA_SEC + (uint64_t)ts.tv_nsec;
}

static int zeroed(const uint64_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (w[i])
			return 0;
	return 1;
}

/* ---- specs ----------------------------------------------------------- */

static int sup_spec_ok(const ura_sup_spec *s, int depth);

static int child_spec_ok(const ura_child_spec *c, int depth)
{
	if (!c || !ura_atom_valid(c->id) || c->reserved0_ ||
	    !zeroed(c->reserved_, sizeof c->reserved_ / sizeof c->reserved_[0]))
		return -EINVAL;
	if (!c->cls == !c->sup || c->kind > URA_TEMPORARY)
		return -EINVAL;
	if (c->shutdown_ns > URA_MAX_DELAY && c->shutdown_ns != URA_SHUTDOWN_INFINITY &&
	    c->shutdown_ns != URA_SHUTDOWN_BRUTAL)
		return -EINVAL;
	/* A nested spec is checked now, so that a bad one fails this start
	 * whole rather than at the child's. The depth bounds a spec that
	 * (wrongly) contains itself. */
	return c->sup ? sup_spec_ok(c->sup, depth + 1) : 0;
}

static int sup_spec_ok(const ura_sup_spec *s, int depth)
{
	if (!s || depth > 64 || s->strategy > URA_REST_FOR_ONE || s->reserved0_ ||
	    !zeroed(s->reserved_, sizeof s->reserved_ / sizeof s->reserved_[0]) ||
	    s->intensity > URA_SUP_MAX_INTENSITY || s->period_ns > URA_MAX_DELAY ||
	    s->nchildren > URA_SUP_MAX_CHILDREN || (s->nchildren && !s->children))
		return -EINVAL;
	for (uint32_t i = 0; i < s->nchildren; i++) {
		int rc = child_spec_ok(&s->children[i], depth);
		if (rc < 0)
			return rc;
		for (uint32_t j = 0; j < i; j++)
			if (s->children[j].id == s->children[i].id)
				return -EINVAL;
	}
	return 0;
}

/* ---- children -------------------------------------------------------- */

static kid *find_ref(sup_st *s, ura_ref r)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->kids[i].gone && ura_ref_eq(s->kids[i].ref, r) && !ura_ref_null(r))
			return &s->kids[i];
	return NULL;
}

static kid *find_id(sup_st *s, ura_atom id)
{
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->kids[i].gone && s->kids[i].spec.id == id)
			return &s->kids[i];
	return NULL;
}

static int add_kid(sup_st *s, const ura_child_spec *c)
{
	if (s->n == s->cap) {
		uint32_t cap = s->cap ? s->cap * 2 : 4;
		kid *k = realloc(s->kids, cap * sizeof *k);
		if (!k)
			return -ENOMEM;
		s->kids = k;
		s->cap = cap;
	}
	kid *k = &s->kids[s->n++];
	memset(k, 0, sizeof *k);
	k->spec = *c;
	return 0;
}

/* Drops deleted children; only between operations, when no index is
 * held. */
static void compact(sup_st *s)
{
	uint32_t j = 0;
	for (uint32_t i = 0; i < s->n; i++)
		if (!s->kids[i].gone)
			s->kids[j++] = s->kids[i];
	s->n = j;
}

static int start_kid(ura_ctx *cx, kid *k)
{
	ura_spawn_opts o = { .link = 1, .node = k->spec.node, .worker = k->spec.worker };
	const ura_class *cls = k->spec.cls ? k->spec.cls : &sup_class;
	const void *arg = k->spec.cls ? k->spec.arg : k->spec.sup;
	ura_ref r;
	int rc = ura_spawn_ex_ctx(cx, cls, arg, &o, &r);
	if (rc < 0)
		return rc;
	k->ref = r;
	return 0;
}

static uint64_t shutdown_of(const kid *k)
{
	if (k->spec.shutdown_ns)
		return k->spec.shutdown_ns;
	return k->spec.sup ? URA_SHUTDOWN_INFINITY : URA_SUP_SHUTDOWN_DEFAULT;
}

/* ---- operations ------------------------------------------------------ */

static void child_died(ura_ctx *cx, kid *k, ura_atom why);
static void shut_down(ura_ctx *cx, ura_atom reason);

static void reply_rc(ura_ctx *cx, long rc, ura_ref child)
{
	(void)ura_reply(cx, A_REP, ura_v_i64(rc), child);
}

/* A failed restart is tried again from a message of its own, so that
 * each try counts toward the intensity and other messages run between. */
static void retry_later(ura_ctx *cx, kid *k)
{
	if (ura_send(cx, ura_self(cx), A_RETRY, ura_v_atom(k->spec.id)) < 0)
		shut_down(cx, URA_NOMEM);
}

/* The operation's end: every child marked has stopped. */
static void op_done(ura_ctx *cx)
{
	sup_st *s = ura_state(cx);
	int op = s->op;
	s->op = OP_NONE;
	s->cur = -1;
	switch (op) {
	case OP_SHUTDOWN:
		s->exiting = 1;
		(void)ura_exit(cx, s->reason, URA_NOVALUE);
		return;
	case OP_TERM_ONE:
		(void)ura_promise_reply(cx, &s->pr, A_REP, ura_v_i64(0), URA_NOREF);
		break;
	case OP_RESTART:
		for (uint32_t i = 0; i < s->n; i++) {
			kid *k = &s->kids[i];
			if (!k->again)
				continue;
			k->again = 0;
			if (k->spec.kind == URA_TEMPORARY) {
				k->gone = 1;
				continue;
			}
			if (start_kid(cx, k) < 0)
				retry_later(cx, k);
		}
		break;
	}
	(void)ura_become(cx, &idle);
	/* Children that stopped by themselves while it ran get their due
	 * now; one of them may start the next operation, which sees to the
	 * rest when it is done. */
	for (uint32_t i = 0; i < s->n && s->op == OP_NONE && !s->exiting; i++)
		if (s->kids[i].died) {
			s->kids[i].died = 0;
			child_died(cx, &s->kids[i], s->kids[i].why);
		}
	if (s->op == OP_NONE)
		compact(s);
}

/* Terminates the next marked child (the last started first), or ends
 * the operation when none is left. */
static void step(ura_ctx *cx)
{
	sup_st *s = ura_state(cx);
	for (int32_t i = (int32_t)s->n - 1; i >= 0; i--) {
		kid *k = &s->kids[i];
		if (!k->term)
			continue;
		if (ura_ref_null(k->ref)) {
			k->term = 0;
			continue;
		}
		s->cur = i;
		s->seq++;
		s->timer = 0;
		uint64_t t = shutdown_of(k);
		if (t == URA_SHUTDOWN_BRUTAL) {
			(void)ura_kill(cx, k->ref, URA_KILL);
			return;
		}
		/* -ESRCH: it is stopping already; its EXIT comes all the
		 * same, through the link. */
		(void)ura_kill(cx, k->ref, URA_SHUTDOWN);
		if (t != URA_SHUTDOWN_INFINITY) {
			ura_timer tm = ura_send_after(cx, ura_self(cx), t, A_DEADLINE,
						      ura_v_i64((int64_t)s->seq));
			if (tm > 0)
				s->timer = tm;
			else /* no deadline to be had: do not wait for ever */
				(void)ura_kill(cx, k->ref, URA_KILL);
		}
		return;
	}
	op_done(cx);
}

static void op_begin(ura_ctx *cx, int op)
{
	sup_st *s = ura_state(cx);
	s->op = op;
	s->cur = -1;
	(void)ura_become(cx, &busy);
	step(cx);
}

static void shut_down(ura_ctx *cx, ura_atom reason)
{
	sup_st *s = ura_state(cx);
	if (s->op == OP_SHUTDOWN)
		return; /* the first reason stays */
	for (uint32_t i = 0; i < s->n; i++) {
		s->kids[i].term = !ura_ref_null(s->kids[i].ref);
		s->kids[i].again = 0;
	}
	s->reason = reason;
	if (s->op != OP_NONE) {
		/* Turn the running operation into the shutdown: cur is still
		 * awaited, and the call it would have answered learns of the
		 * stop from the promise (URA_ERROR with our reason). */
		s->op = OP_SHUTDOWN;
		return;
	}
	op_begin(cx, OP_SHUTDOWN);
}

/* 1 when one more restart now stays within the intensity (and is
 * counted), 0 when it would exceed it. */
static int intensity_ok(sup_st *s)
{
	uint64_t now = now_ns();
	if (s->nstamps == s->intensity) {
		if (now - s->stamps[s->oldest] < s->period)
			return 0;
		s->stamps[s->oldest] = now;
		s->oldest = (s->oldest + 1) % s->intensity;
		return 1;
	}
	s->stamps[(s->oldest + s->nstamps) % s->intensity] = now;
	s->nstamps++;
	return 1;
}

static void restart(ura_ctx *cx, kid *k)
{
	sup_st *s = ura_state(cx);
	if (s->exiting)
		return;
	if (!intensity_ok(s)) {
		shut_down(cx, URA_MAXRESTART);
		return;
	}
	k->restarts++;
	if (s->strategy == URA_ONE_FOR_ONE) {
		if (start_kid(cx, k) < 0)
			retry_later(cx, k);
		return;
	}
	uint32_t from = 0, at = (uint32_t)(k - s->kids);
	if (s->strategy == URA_REST_FOR_ONE)
		from = at;
	for (uint32_t i = from; i < s->n; i++) {
		kid *o = &s->kids[i];
		if (o->gone)
			continue;
		if (i == at || !ura_ref_null(o->ref)) {
			o->again = 1;
			o->term = !ura_ref_null(o->ref);
		}
	}
	op_begin(cx, OP_RESTART);
}

/* A child stopped by itself, outside any operation. */
static void child_died(ura_ctx *cx, kid *k, ura_atom why)
{
	k->ref = URA_NOREF;
	if (k->spec.kind == URA_TEMPORARY) {
		k->gone = 1; /* compacted by the caller, between operations */
		return;
	}
	if (k->spec.kind == URA_TRANSIENT && (why == URA_NORMAL || why == URA_SHUTDOWN))
		return;
	restart(cx, k);
}

/* ---- handlers -------------------------------------------------------- */

static void on_exit_sig(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	ura_atom why = ura_exit_reason(m);
	kid *k = find_ref(s, ura_exit_who(m));
	if (s->exiting)
		return;
	if (!k) {
		/* Not a child: the parent's link, or a stop asked from
		 * anywhere. A normal exit of another linked actor means
		 * nothing to us (Erlang ignores it too, for a trapper). */
		if (why != URA_NORMAL)
			shut_down(cx, why);
		return;
	}
	if (s->op == OP_NONE) {
		child_died(cx, k, why);
		if (s->op == OP_NONE)
			compact(s);
		return;
	}
	k->ref = URA_NOREF;
	if (s->cur >= 0 && k == &s->kids[s->cur]) {
		k->term = 0;
		if (s->timer > 0)
			(void)ura_cancel(ura_ctx_system(cx), s->timer);
		s->timer = 0;
		s->cur = -1;
		step(cx);
	} else if (k->term) {
		k->term = 0; /* went before its turn: one fewer to wait for */
	} else if (!k->again) {
		k->died = 1;
		k->why = why;
	}
}

static void on_deadline(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	if (s->cur < 0 || (uint64_t)ura_arg_i64(m, 0) != s->seq)
		return; /* the child stopped in time; this one is stale */
	s->timer = 0;
	(void)ura_kill(cx, s->kids[s->cur].ref, URA_KILL);
}

static void on_retry(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	kid *k = find_id(s, ura_arg_atom(m, 0));
	if (k && ura_ref_null(k->ref))
		restart(cx, k);
}

static void on_which(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	(void)m;
	uint32_t n = 0;
	ura_sup_child *out = calloc(s->n ? s->n : 1, sizeof *out);
	if (!out) {
		(void)ura_reply_error(cx, URA_NOMEM, URA_NOVALUE);
		return;
	}
	for (uint32_t i = 0; i < s->n; i++) {
		const kid *k = &s->kids[i];
		if (k->gone)
			continue;
		out[n++] = (ura_sup_child){
			.id = k->spec.id,
			.ref = k->ref,
			.kind = k->spec.kind,
			.supervisor = k->spec.sup != NULL,
			.restarts = k->restarts,
		};
	}
	(void)ura_reply(cx, A_KIDS, ura_v_i64(n), ura_v_bytes(out, n * sizeof *out));
	free(out);
}

static void on_start_child(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	size_t len;
	const void *p = ura_arg_bytes(m, 0, &len);
	ura_child_spec c;
	if (len != sizeof c) {
		reply_rc(cx, -EINVAL, URA_NOREF);
		return;
	}
	memcpy(&c, p, sizeof c);
	int rc = child_spec_ok(&c, 0);
	if (rc == 0 && find_id(s, c.id))
		rc = -EEXIST;
	if (rc == 0 && s->n >= URA_SUP_MAX_CHILDREN)
		rc = -ENOSPC;
	if (rc == 0)
		rc = add_kid(s, &c);
	if (rc == 0 && (rc = start_kid(cx, &s->kids[s->n - 1])) < 0)
		s->n--;
	reply_rc(cx, rc, rc == 0 ? s->kids[s->n - 1].ref : URA_NOREF);
}

static void on_terminate(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	kid *k = find_id(s, ura_arg_atom(m, 0));
	if (!k) {
		reply_rc(cx, -ENOENT, URA_NOREF);
		return;
	}
	if (ura_ref_null(k->ref)) {
		reply_rc(cx, 0, URA_NOREF);
		return;
	}
	if (ura_promise_take(cx, &s->pr) < 0) {
		reply_rc(cx, -ENOMEM, URA_NOREF);
		return;
	}
	k->term = 1;
	op_begin(cx, OP_TERM_ONE);
}

static void on_restart(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	kid *k = find_id(s, ura_arg_atom(m, 0));
	int rc = !k ? -ENOENT : !ura_ref_null(k->ref) ? -EBUSY : start_kid(cx, k);
	reply_rc(cx, rc, rc == 0 ? k->ref : URA_NOREF);
}

static void on_delete(ura_ctx *cx, const ura_msg *m)
{
	sup_st *s = ura_state(cx);
	kid *k = find_id(s, ura_arg_atom(m, 0));
	int rc = !k ? -ENOENT : !ura_ref_null(k->ref) ? -EBUSY : 0;
	if (rc == 0) {
		k->gone = 1;
		compact(s);
	}
	reply_rc(cx, rc, URA_NOREF);
}

URA_BEHAVIOR(idle,
	URA_ON_ANY(URA_EXIT, on_exit_sig),
	URA_ON(A_DEADLINE, "i", on_deadline),
	URA_ON(A_RETRY, "a", on_retry),
	URA_ON(A_WHICH, "", on_which),
	URA_ON(A_START, "b", on_start_child),
	URA_ON(A_TERM, "a", on_terminate),
	URA_ON(A_RESTART, "a", on_restart),
	URA_ON(A_DELETE, "a", on_delete));

/* During an operation: exits and deadlines now, the rest once it is
 * done (the become to idle re-delivers the stash, in order). */
URA_BEHAVIOR_OPTS(busy, (.unmatched = URA_UNMATCHED_STASH),
	URA_ON_ANY(URA_EXIT, on_exit_sig),
	URA_ON(A_DEADLINE, "i", on_deadline));

/* ---- the supervisor's life ------------------------------------------- */

static void sup_free(sup_st *s)
{
	free(s->kids);
	free(s->stamps);
}

static int sup_init(ura_ctx *cx, void *state, const void *arg)
{
	sup_st *s = state;
	const ura_sup_spec *spec = arg;
	int rc = sup_spec_ok(spec, 0);
	if (rc < 0)
		return rc;
	s->strategy = spec->strategy;
	s->intensity = spec->intensity ? spec->intensity : URA_SUP_INTENSITY_DEFAULT;
	s->period = spec->period_ns ? spec->period_ns : URA_SUP_PERIOD_DEFAULT;
	s->cur = -1;
	s->stamps = calloc(s->intensity, sizeof *s->stamps);
	if (!s->stamps)
		return -ENOMEM;
	if ((rc = ura_trap_exit(cx, 1)) < 0) {
		sup_free(s);
		return rc;
	}
	for (uint32_t i = 0; i < spec->nchildren; i++) {
		if ((rc = add_kid(s, &spec->children[i])) < 0 ||
		    (rc = start_kid(cx, &s->kids[i])) < 0) {
			/* Take back what started, last first. There is no
			 * waiting in an init: they are killed. */
			for (uint32_t j = i; j-- > 0;)
				(void)ura_kill(cx, s->kids[j].ref, URA_KILL);
			sup_free(s);
			return rc;
		}
	}
	return 0;
}

static void sup_destroy(void *state)
{
	sup_free(state);
}

static const ura_class sup_class = {
	.name = "ura_supervisor",
	.state_size = sizeof(sup_st),
	.initial = &idle,
	.init = sup_init,
	.destroy = sup_destroy,
};

URA_API int ura_sup_start_ctx(ura_ctx *cx, const ura_sup_spec *spec,
			      const ura_spawn_opts *opts, ura_ref *out)
{
	int rc = sup_spec_ok(spec, 0);
	if (rc < 0)
		return rc;
	return ura_spawn_ex_ctx(cx, &sup_class, spec, opts, out);
}

URA_API int ura_sup_start_sys(ura_system *sys, const ura_sup_spec *spec,
			      const ura_spawn_opts *opts, ura_ref *out)
{
	int rc = sup_spec_ok(spec, 0);
	if (rc < 0)
		return rc;
	return ura_spawn_ex_sys(sys, &sup_class, spec, opts, out);
}

/* ---- calls from a handler -------------------------------------------- */

URA_API int ura_sup_which_ctx(ura_ctx *cx, ura_ref sup, ura_handler *cont, void *data)
{
	return ura_request(cx, sup, cont, data, A_WHICH);
}

URA_API int ura_sup_start_child_ctx(ura_ctx *cx, ura_ref sup, const ura_child_spec *spec,
				    ura_handler *cont, void *data)
{
	int rc = child_spec_ok(spec, 0);
	if (rc < 0)
		return rc;
	return ura_request(cx, sup, cont, data, A_START, ura_v_bytes(spec, sizeof *spec));
}

static int id_call(ura_ctx *cx, ura_ref sup, ura_atom tag, ura_atom id, ura_handler *cont,
		   void *data)
{
	if (!ura_atom_valid(id))
		return -EINVAL;
	return ura_request(cx, sup, cont, data, tag, ura_v_atom(id));
}

URA_API int ura_sup_terminate_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
					ura_handler *cont, void *data)
{
	return id_call(cx, sup, A_TERM, id, cont, data);
}

URA_API int ura_sup_restart_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
				      ura_handler *cont, void *data)
{
	return id_call(cx, sup, A_RESTART, id, cont, data);
}

URA_API int ura_sup_delete_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
				     ura_handler *cont, void *data)
{
	return id_call(cx, sup, A_DELETE, id, cont, data);
}

URA_API long ura_sup_result(const ura_msg *m, ura_ref *child)
{
	if (child)
		*child = URA_NOREF;
	if (!m)
		return -EINVAL;
	ura_atom t = ura_msg_tag(m);
	if (t == URA_ERROR)
		return ura_exit_reason(m) == URA_NOMEM ? -ENOMEM : -ESRCH;
	if (t == URA_TIMEOUT)
		return -ETIMEDOUT;
	if (t == A_KIDS && !strcmp(ura_msg_types(m), "ib"))
		return (long)ura_arg_i64(m, 0);
	if (t != A_REP || strcmp(ura_msg_types(m), "ir"))
		return -EINVAL;
	if (child)
		*child = ura_arg_ref(m, 1);
	return (long)ura_arg_i64(m, 0);
}

URA_API long ura_sup_children(const ura_msg *m, ura_sup_child *out, size_t max)
{
	long n = ura_sup_result(m, NULL);
	if (n < 0 || ura_msg_tag(m) != A_KIDS)
		return n < 0 ? n : -EINVAL;
	size_t len;
	const void *p = ura_arg_bytes(m, 1, &len);
	size_t have = len / sizeof *out;
	if (max > have)
		max = have;
	if (out && max)
		memcpy(out, p, max * sizeof *out);
	return n;
}

/* ---- blocking calls from other threads ------------------------------- */

/* A blocking call runs through a helper actor: the thread spawns it with
 * the call on its own stack, the helper makes the request and, in the
 * continuation, writes the answer and wakes the thread, which waits on
 * the condition variable. The mutex orders the helper's writes before
 * the thread's reads; the helper touches the call for the last time
 * before it unlocks, so the thread may return (and its stack go) as soon
 * as it sees done. */
typedef struct {
	ura_atom tag;
	ura_ref sup;
	ura_atom id;
	const ura_child_spec *spec;
	ura_sup_child *out;
	size_t max;
	long rc;
	ura_ref child;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int done;
} call;

static void call_end(ura_ctx *cx, call *c, long rc, ura_ref child)
{
	pthread_mutex_lock(&c->mu);
	c->rc = rc;
	c->child = child;
	c->done = 1;
	pthread_cond_signal(&c->cv);
	pthread_mutex_unlock(&c->mu);
	ura_stop(cx);
}

static void call_answer(ura_ctx *cx, const ura_msg *m)
{
	call *c = *(call **)ura_state(cx);
	ura_ref child;
	long rc = c->tag == A_WHICH ? ura_sup_children(m, c->out, c->max)
				    : ura_sup_result(m, &child);
	call_end(cx, c, rc, c->tag == A_WHICH ? URA_NOREF : child);
}

static void call_go(ura_ctx *cx, const ura_msg *m)
{
	call *c = *(call **)ura_state(cx);
	(void)m;
	int rc;
	if (c->tag == A_WHICH)
		rc = ura_request(cx, c->sup, call_answer, NULL, A_WHICH);
	else if (c->tag == A_START)
		rc = ura_request(cx, c->sup, call_answer, NULL, A_START,
				 ura_v_bytes(c->spec, sizeof *c->spec));
	else
		rc = ura_request(cx, c->sup, call_answer, NULL, c->tag, ura_v_atom(c->id));
	if (rc < 0)
		call_end(cx, c, rc, URA_NOREF);
}

URA_BEHAVIOR(calling, URA_ON(A_GO, "", call_go));

static const ura_class call_class = {
	.name = "ura_sup_call",
	.state_size = sizeof(call *),
	.initial = &calling,
};

static long call_sys(ura_system *sys, call *c)
{
	if (!sys)
		return -EINVAL;
	/* The one public way to tell a worker thread: await refuses one
	 * (a zero timeout makes it a check; it also starts a paused
	 * system, which the call needs anyway). */
	int rc = ura_system_await_for(sys, 0);
	if (rc == -EDEADLK || rc == -ESHUTDOWN || rc == -EINVAL)
		return rc;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	ura_ref helper;
	call *cp = c;
	rc = ura_spawn(sys, &call_class, &cp, &helper);
	if (rc == 0 && (rc = ura_send(sys, helper, A_GO)) < 0)
		(void)ura_kill(sys, helper, URA_KILL);
	long out = rc;
	if (rc == 0) {
		pthread_mutex_lock(&c->mu);
		while (!c->done)
			pthread_cond_wait(&c->cv, &c->mu);
		pthread_mutex_unlock(&c->mu);
		out = c->rc;
	}
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	return out;
}

URA_API long ura_sup_which_sys(ura_system *sys, ura_ref sup, ura_sup_child *out, size_t max)
{
	if (!out && max)
		return -EINVAL;
	call c = { .tag = A_WHICH, .sup = sup, .out = out, .max = max };
	return call_sys(sys, &c);
}

URA_API int ura_sup_start_child_sys(ura_system *sys, ura_ref sup,
				    const ura_child_spec *spec, ura_ref *child)
{
	int rc = child_spec_ok(spec, 0);
	if (rc < 0)
		return rc;
	call c = { .tag = A_START, .sup = sup, .spec = spec };
	rc = (int)call_sys(sys, &c);
	if (child)
		*child = rc == 0 ? c.child : URA_NOREF;
	return rc;
}

static int id_sys(ura_system *sys, ura_ref sup, ura_atom tag, ura_atom id, ura_ref *child)
{
	if (!ura_atom_valid(id))
		return -EINVAL;
	call c = { .tag = tag, .sup = sup, .id = id };
	int rc = (int)call_sys(sys, &c);
	if (child)
		*child = rc == 0 ? c.child : URA_NOREF;
	return rc;
}

URA_API int ura_sup_terminate_child_sys(ura_system *sys, ura_ref sup, ura_atom id)
{
	return id_sys(sys, sup, A_TERM, id, NULL);
}

URA_API int ura_sup_restart_child_sys(ura_system *sys, ura_ref sup, ura_atom id,
				      ura_ref *child)
{
	return id_sys(sys, sup, A_RESTART, id, child);
}

URA_API int ura_sup_delete_child_sys(ura_system *sys, ura_ref sup, ura_atom id)
{
	return id_sys(sys, sup, A_DELETE, id, NULL);
}
