/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdatomic.h>

#include "util/util.h"

int ura__ids_reserve(struct ura__ids **lp, uint32_t want)
{
	struct ura__ids *l = *lp;
	if (l && l->cap >= want)
		return 0;
	uint32_t cap = l ? l->cap : 4;
	while (cap < want) {
		if (cap > UINT32_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	struct ura__ids *n = ura__realloc(l, sizeof *l + (size_t)cap * sizeof l->v[0]);
	if (!n)
		return -ENOMEM;
	if (!l)
		n->n = 0;
	n->cap = cap;
	*lp = n;
	return 0;
}

int ura__ids_push(struct ura__ids **lp, int64_t v)
{
	struct ura__ids *l = *lp;
	if (!l || l->n == l->cap) {
		int rc = ura__ids_reserve(lp, l ? l->n + 1 : 1);
		if (rc < 0)
			return rc;
		l = *lp;
	}
	l->v[l->n++] = v;
	return 0;
}

uint32_t ura__ids_del(struct ura__ids *l, int64_t v)
{
	if (!l)
		return 0;
	for (uint32_t i = 0; i < l->n; i++)
		if (l->v[i] == v) {
			l->v[i] = l->v[--l->n];
			break;
		}
	return l->n;
}

#ifdef URA_FAULT_INJECTION
/* A countdown shared by every thread: a test arms it, then makes one call
 * (ura_system_new, say) whose allocations it counts. relaxed: the counter
 * orders nothing; a test runs the call it measures on its own. */
static _Atomic unsigned long count, fail_at;
static _Atomic int sticky_fail;

int ura__alloc_fail(void)
{
	unsigned long n = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1;
	unsigned long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
	if (!at)
		return 0;
	return n == at || (n > at && atomic_load_explicit(&sticky_fail, memory_order_relaxed));
}

unsigned long ura__alloc_fail_at(unsigned long n, int sticky)
{
	unsigned long was = atomic_exchange_explicit(&count, 0, memory_order_relaxed);
	atomic_store_explicit(&sticky_fail, sticky, memory_order_relaxed);
	atomic_store_explicit(&fail_at, n, memory_order_relaxed);
	return was;
}
#endif
