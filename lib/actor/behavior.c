/* SPDX-License-Identifier: MIT */
/*
 * Behaviors: checking static ones and building run-time ones (their cases'
 * guards are checked and copied by lib/guard), become, and receive loops
 * (URA_BEHAVIOR_UNTIL).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "core/metrics.h"
#include "guard/guard.h"


/* Nested loops are checked recursively; a hand-made cycle must not be. */
static _Thread_local unsigned check_nesting;

static int check_guard(const ura_case *c)
{
	if (c->guard == ura_guard_eval)
		return ura_guard_check(c->guard_arg, c->types);
	if (c->guard != ura_until_match)
		return 0;
	const ura_until *u = c->guard_arg;
	if (!u || !u->cond || (u->ncases && !u->cases) || check_nesting >= 8 ||
	    ura_guard_check(u->cond, NULL))
		return -EINVAL;
	ura_behavior inner = { .cases = u->cases, .ncases = u->ncases };
	check_nesting++;
	int rc = ura_behavior_check(&inner);
	check_nesting--;
	return rc;
}


static int check_case(const ura_case *c)
{
	if (c->reserved_ || c->tag >> 60)
		return -EINVAL;
	if (!c->fn)
		return -EINVAL;
	if (!c->types)
		return c->sig_ & URA__SIG_TYPED ? -EINVAL : check_guard(c);
	size_t len = strlen(c->types);
	if (len > URA_MAX_VALUES || strspn(c->types, "idarsbp") != len)
		return -EINVAL;
	if ((c->sig_ & URA__SIG_TYPED) &&
	    (c->sig_ & ~URA__SIG_TYPED) != ura__sig_pack(c->types, len))
		return -EINVAL;
	return check_guard(c);
}

URA_API int ura_behavior_check(const ura_behavior *b)
{
	if (!b || (b->ncases && !b->cases) || b->unmatched > URA_UNMATCHED_STASH ||
	    !ura__zeroed(b->reserved_, sizeof b->reserved_))
		return -EINVAL;
	for (uint32_t i = 0; i < b->ncases; i++) {
		int rc = check_case(&b->cases[i]);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Every behavior that reaches an actor (its class's initial one at spawn,
 * each become) passes ura_behavior_check once: a case without a handler
 * would jump to NULL, and a guard that does not fit its signature would
 * never match. Checked behaviors are remembered by address in a small
 * cache shared by all systems (behaviors are static data or made by
 * ura_behavior_new, which checks and enters them; ura_behavior_free takes
 * them out), so a become costs one lookup. A collision only means a
 * check again. relaxed everywhere: an entry is a hint that b passed; a
 * stale read costs a check, never a skipped one for another address.
 */
#define CHECKED 256
static _Atomic(const ura_behavior *) checked[CHECKED];

static inline size_t checked_slot(const ura_behavior *b)
{
	return (size_t)(((uintptr_t)b >> 4) * 0x9e3779b97f4a7c15ull >> 56) & (CHECKED - 1);
}

int ura__behavior_ok(const ura_behavior *b)
{
	size_t h = checked_slot(b);
	if (ura__likely(atomic_load_explicit(&checked[h], memory_order_relaxed) == b))
		return 0;
	int rc = ura_behavior_check(b);
	if (rc == 0)
		atomic_store_explicit(&checked[h], b, memory_order_relaxed);
	return rc;
}

URA_API int ura_behavior_new(ura_behavior **out, const ura_case *cases,
			     size_t ncases, ura_unmatched unmatched)
{
	if (!out || (ncases && !cases) || ncases > UINT32_MAX ||
	    (unsigned)unmatched > URA_UNMATCHED_STASH)
		return -EINVAL;
	size_t strbytes = 0, gbytes = 0;
	for (size_t i = 0; i < ncases; i++) {
		ura_case c = cases[i];
		c.sig_ = 0; /* recomputed below */
		int rc = check_case(&c);
		if (rc)
			return rc;
		if (c.types)
			strbytes += strlen(c.types) + 1;
		gbytes += ura__guard_case_size(&c);
	}
	/* Guard expressions are copied too: one built in the caller's
	 * function lives only until that function returns. */
	size_t size = sizeof(ura_behavior) + ncases * sizeof(ura_case) + gbytes + strbytes;
	ura_behavior *b = ura__calloc(1, size);
	if (!b)
		return -ENOMEM;
	ura_case *cs = (ura_case *)(b + 1);
	char *gmem = (char *)(cs + ncases);
	char *str = gmem + gbytes;
	for (size_t i = 0; i < ncases; i++) {
		cs[i] = cases[i];
		cs[i].sig_ = 0;
		gmem += ura__guard_case_copy(&cs[i], gmem);
		if (cases[i].types) {
			size_t len = strlen(cases[i].types);
			memcpy(str, cases[i].types, len + 1);
			cs[i].types = str;
			cs[i].sig_ = URA__SIG_TYPED | ura__sig_pack(str, len);
			str += len + 1;
		}
	}
	b->cases = cs;
	b->ncases = (uint32_t)ncases;
	b->unmatched = unmatched;
	atomic_store_explicit(&checked[checked_slot(b)], b, memory_order_relaxed);
	*out = b;
	return 0;
}

URA_API void ura_behavior_free(ura_behavior *b)
{
	if (!b)
		return;
	/* Its address may come back for another behavior: not checked. */
	const ura_behavior *was = b;
	atomic_compare_exchange_strong_explicit(&checked[checked_slot(b)], &was, NULL,
						memory_order_relaxed, memory_order_relaxed);
	free(b);
}


URA_API int ura_become_with(ura_ctx *cx, const ura_behavior *b, ura_value bound)
{
	if (ura__ctx_bad(cx) || !b || ura__behavior_ok(b) < 0)
		return -EINVAL;
	/* A context-switching actor receives with the behavior it names. */
	if (cx->a->x && cx->a->x->fib)
		return -EINVAL;
	if (bound.type || cx->a->x) {
		struct ura__actor_x *x = ura__actor_x(cx->w, cx->a);
		if (!x)
			return -ENOMEM;
		x->bound = bound;
	}
	cx->a->beh = b;
	cx->a->became = 1;
	if (ura__unlikely(ura__metered(cx->a->cls)))
		ura__mx_beh(cx->sys, cx->a);
	return 0;
}

URA_API int ura_become(ura_ctx *cx, const ura_behavior *b)
{
	ura_value none;
	memset(&none, 0, sizeof none);
	return ura_become_with(cx, b, none);
}


/* ---- loops: URA_BEHAVIOR_UNTIL (ura/guard.h) ----------------------------- */

URA_API int ura_until_match(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	const ura_until *u = arg;
	if (!u || !m || (u->ncases && !u->cases))
		return 0;
	for (uint32_t i = 0; i < u->ncases; i++)
		if (ura__case_matches(&u->cases[i], cx, m))
			return 1;
	return 0;
}

URA_API void ura_until_run(ura_ctx *cx, const ura_msg *m, const ura_until *u)
{
	for (uint32_t i = 0; i < u->ncases; i++) {
		const ura_case *c = &u->cases[i];
		if (!ura__case_matches(c, cx, m))
			continue;
		c->fn(cx, m);
		/* do { receive } while (!cond): tested after each message. */
		if (u->cond && ura_guard_eval(cx, m, u->cond)) {
			if (u->next)
				ura_become_with(cx, u->next, ura_bound(cx));
			else
				ura_stop(cx);
		}
		return;
	}
}
