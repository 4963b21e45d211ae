/* SPDX-License-Identifier: MIT */
/*
 * Hierarchical timing wheel (see wheel.h). Placement follows the highest
 * base-64 digit in which a timer's tick differs from the cursor `cur`:
 * a timer on level L shares every digit above L with `cur`, and its digit
 * L is larger. Two facts follow, and everything below leans on them:
 *  - every timer on a level is later than every timer on the levels
 *    below it, so the earliest timer is in the first non-empty slot after
 *    the cursor's digit on the lowest non-empty level;
 *  - while no slot lies between two ticks, moving the cursor from one to
 *    the other keeps every timer's placement valid, so idle time is
 *    skipped in one step rather than walked.
 * The slot under the cursor's digit is empty on every level, except on
 * level 0 for the moment expire() drains it.
 */
#include "time/wheel.h"

#define W_BITS URA__WHEEL_BITS
#define W_SLOTS URA__WHEEL_SLOTS
#define W_LEVELS URA__WHEEL_LEVELS
#define W_SPAN (W_BITS * W_LEVELS) /* tick bits the levels cover */

static inline uint64_t lo_mask(unsigned bits)
{
	return ((uint64_t)1 << bits) - 1;
}

/* Rounds up, so that a timer due at its tick boundary is never early.
 * The last tick saturates so that tick << shift cannot wrap. */
static inline uint64_t to_tick(const struct ura__wheel *w, uint64_t ns)
{
	uint64_t t = ns >> w->shift, max = UINT64_MAX >> w->shift;
	if ((ns & lo_mask(w->shift)) && t < max)
		t++;
	return t;
}

static inline void push(struct ura__wheel *w, uint32_t idx,
			struct ura__timer *t, uint64_t tick)
{
	struct ura__wheel_list *l = &w->list[idx];
	struct ura__timer *h = l->head;

	t->next = NULL;
	t->list = idx;
	if (tick < l->lo)
		l->lo = tick;
	if (!h) {
		l->head = t;
		t->prev = t;
		if (idx < URA__WHEEL_DUE0)
			w->bits[idx / W_SLOTS] |= (uint64_t)1 << (idx % W_SLOTS);
	} else {
		t->prev = h->prev;
		h->prev->next = t;
		h->prev = t;
	}
}

static inline void unlink_timer(struct ura__wheel *w, struct ura__timer *t)
{
	uint32_t idx = t->list;
	struct ura__wheel_list *l = &w->list[idx];
	struct ura__timer *h = l->head;

	if (t == h) {
		struct ura__timer *n = t->next;
		if (n) {
			n->prev = t->prev;
			l->head = n;
		} else {
			l->head = NULL;
			l->lo = UINT64_MAX;
			if (idx < URA__WHEEL_DUE0)
				w->bits[idx / W_SLOTS] &=
					~((uint64_t)1 << (idx % W_SLOTS));
		}
	} else {
		t->prev->next = t->next;
		if (t->next)
			t->next->prev = t->prev;
		else
			h->prev = t->prev;
	}
	t->next = NULL;
	t->prev = NULL;
}

/* tick >= cur. */
static inline void place(struct ura__wheel *w, struct ura__timer *t, uint64_t tick)
{
	uint64_t x = tick ^ w->cur;
	uint32_t idx;

	if (x >> W_SPAN) {
		idx = URA__WHEEL_OVERFLOW;
	} else {
		unsigned lvl = x ? (unsigned)(63 - __builtin_clzll(x)) / W_BITS : 0;
		idx = lvl * W_SLOTS + (uint32_t)((tick >> (lvl * W_BITS)) & (W_SLOTS - 1));
	}
	push(w, idx, t, tick);
}

void ura__wheel_init(struct ura__wheel *w, uint64_t now_ns, uint64_t tick_ns)
{
	unsigned i;

	if (tick_ns < 1000)
		tick_ns = 1000;
	*w = (struct ura__wheel){ 0 };
	w->shift = (unsigned)(63 - __builtin_clzll(tick_ns));
	w->cur = now_ns >> w->shift;
	for (i = 0; i < URA__WHEEL_NLISTS; i++)
		w->list[i].lo = UINT64_MAX;
}

void ura__wheel_add(struct ura__wheel *w, struct ura__timer *t)
{
	uint64_t tick;

	if (t->prev)
		unlink_timer(w, t);
	else
		w->count++;
	tick = to_tick(w, t->deadline);
	if (tick <= w->cur)
		push(w, URA__WHEEL_DUE0 + w->due, t, tick);
	else
		place(w, t, tick);
}

void ura__wheel_del(struct ura__wheel *w, struct ura__timer *t)
{
	if (!t->prev)
		return;
	unlink_timer(w, t);
	w->count--;
}

int ura__wheel_armed(const struct ura__timer *t)
{
	return t->prev != NULL;
}

size_t ura__wheel_count(const struct ura__wheel *w)
{
	return w->count;
}

/* The next place where something happens after the cursor: a slot's
 * first tick (a level-0 slot fires there, a higher one cascades), or the
 * overflow's earliest window. Returns the list index, or -1 if none. */
static int next_event(const struct ura__wheel *w, uint64_t *at)
{
	uint64_t cur = w->cur;
	unsigned lvl;

	for (lvl = 0; lvl < W_LEVELS; lvl++) {
		unsigned sh = lvl * W_BITS;
		unsigned d = (unsigned)(cur >> sh) & (W_SLOTS - 1);
		/* Slots after the cursor's digit; ~1 << 63 is 0, no UB. */
		uint64_t m = w->bits[lvl] & (~(uint64_t)1 << d);
		if (m) {
			unsigned s = (unsigned)__builtin_ctzll(m);
			*at = (cur & ~lo_mask(sh + W_BITS)) | ((uint64_t)s << sh);
			return (int)(lvl * W_SLOTS + s);
		}
	}
	if (w->list[URA__WHEEL_OVERFLOW].head) {
		uint64_t win = ((cur >> W_SPAN) + 1) << W_SPAN;
		uint64_t lo = w->list[URA__WHEEL_OVERFLOW].lo & ~lo_mask(W_SPAN);
		*at = lo > win ? lo : win;
		return URA__WHEEL_OVERFLOW;
	}
	return -1;
}

uint64_t ura__wheel_next(struct ura__wheel *w)
{
	uint64_t at, lo;
	int idx;

	if (w->list[URA__WHEEL_DUE0].head || w->list[URA__WHEEL_DUE1].head)
		return w->cur << w->shift;
	idx = next_event(w, &at);
	if (idx < 0)
		return UINT64_MAX;
	lo = w->list[idx].lo;
	return (lo > at ? lo : at) << w->shift;
}

/* Called with the cursor inside the list's range and at or before its
 * earliest timer, so each timer lands on a lower level (or back in the
 * overflow, for the overflow's later windows). */
static void cascade(struct ura__wheel *w, uint32_t idx)
{
	struct ura__wheel_list *l = &w->list[idx];
	struct ura__timer *t = l->head;

	l->head = NULL;
	l->lo = UINT64_MAX;
	if (idx < URA__WHEEL_DUE0)
		w->bits[idx / W_SLOTS] &= ~((uint64_t)1 << (idx % W_SLOTS));
	while (t) {
		struct ura__timer *n = t->next;
		if (n)
			__builtin_prefetch(n);
		place(w, t, to_tick(w, t->deadline));
		t = n;
	}
}

/* Pops one at a time rather than detaching the list, so that fire() can
 * cancel any timer still waiting in it. Nothing armed meanwhile can join
 * this list: already-due timers go to the other due list, and a level-0
 * slot under the cursor takes only timers due exactly now, which add()
 * sends to the due list. */
static size_t drain(struct ura__wheel *w, uint32_t idx,
		    void (*fire)(struct ura__timer *, void *), void *ud)
{
	struct ura__wheel_list *l = &w->list[idx];
	struct ura__timer *t;
	size_t n = 0;

	while ((t = l->head)) {
		unlink_timer(w, t);
		w->count--;
		n++;
		fire(t, ud);
	}
	return n;
}

size_t ura__wheel_expire(struct ura__wheel *w, uint64_t now_ns,
			 void (*fire)(struct ura__timer *t, void *ud), void *ud)
{
	uint64_t now = now_ns >> w->shift;
	uint32_t due = URA__WHEEL_DUE0 + w->due;
	size_t n = 0;

	/* Already-due timers are earlier than anything still in the wheel. */
	w->due ^= 1;
	if (w->list[due].head)
		n += drain(w, due, fire, ud);

	while (w->cur < now) {
		uint64_t at, lo;
		int idx = next_event(w, &at);

		if (idx < 0 || at > now) {
			w->cur = now;
			break;
		}
		/* Nothing lies between the cursor and the list's earliest
		 * timer: go straight there (or to now, if that is sooner),
		 * which spares the cascades through the levels in between. */
		lo = w->list[idx].lo;
		if (lo < at)
			lo = at;
		w->cur = lo < now ? lo : now;
		if (idx >= (int)W_SLOTS)
			cascade(w, (uint32_t)idx);
		idx = (int)(w->cur & (W_SLOTS - 1));
		if (w->list[idx].head)
			n += drain(w, (uint32_t)idx, fire, ud);
	}
	return n;
}
