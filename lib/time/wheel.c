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
#define W_NONE ((uint32_t)URA__WHEEL_NLISTS) /* no pre-cascade */

/*
 * The pre-cascade. The slot it empties, X on level L, is the first
 * non-empty slot after the cursor on the lowest level from 2 up. Its
 * timers share every digit from L up with X's first tick, `pre_base`,
 * whose lower digits are 0; each is placed as the cursor will place it
 * there: on the level of its highest digit that differs from pre_base's,
 * in the spare bank of that level. Meanwhile:
 *  - the live banks below L hold only timers earlier than pre_base (they
 *    share digit L with the cursor, which is below X's), so when expire()
 *    reaches X they are empty: the cursor goes to pre_base exactly, the
 *    banks of the levels below L flip, and every timer is where it should
 *    be, with none moved then and no slot under the cursor filled (each
 *    pre-placed timer differs from pre_base in a nonzero digit, except
 *    one due at pre_base itself, on level 0, which expire() drains next);
 *  - a timer armed for X's range goes straight to the spare bank;
 *  - X counts as non-empty (next_event) until reached, even once its own
 *    list is empty, so nothing sleeps past pre_base;
 *  - an earlier slot that appears on level L (or below) is cascaded as
 *    before, when reached: it lies before pre_base, and its timers go to
 *    the live banks.
 * Each expire() moves at most PRE_STEP timers (more when pre_base is
 * near), and next() asks to be called again a tick later while X still
 * holds timers, so the move is spread over the slot before X, which is
 * 64^(L-1) ticks long at least.
 */
#define PRE_STEP 512

static inline uint32_t lidx(unsigned bank, unsigned lvl, unsigned slot)
{
	return (uint32_t)((bank * W_LEVELS + lvl) * W_SLOTS + slot);
}

/* Level of a slot list (idx < URA__WHEEL_DUE0). */
static inline unsigned l_level(uint32_t idx)
{
	return (idx / W_SLOTS) % W_LEVELS;
}

static inline uint64_t *l_bits(struct ura__wheel *w, uint32_t idx)
{
	return &w->bits[idx / (W_LEVELS * W_SLOTS)][l_level(idx)];
}

static inline uint64_t lo_mask(unsigned bits)
{
	return ((uint64_t)1 << bits) - 1;
}

/* The level of a tick that differs from a base tick in the bits x. */
static inline unsigned level_of(uint64_t x)
{
	return x ? (unsigned)(63 - __builtin_clzll(x)) / W_BITS : 0;
}

/* Level lvl's live slots after the cursor's digit; ~1 << 63 is 0, no UB. */
static inline uint64_t slots_after(const struct ura__wheel *w, unsigned lvl)
{
	unsigned d = (unsigned)(w->cur >> (lvl * W_BITS)) & (W_SLOTS - 1);
	return w->bits[w->bank[lvl]][lvl] & (~(uint64_t)1 << d);
}

/* The first tick of slot s of level lvl, in the cursor's span above it. */
static inline uint64_t slot_start(const struct ura__wheel *w, unsigned lvl, unsigned s)
{
	unsigned sh = lvl * W_BITS;
	return (w->cur & ~lo_mask(sh + W_BITS)) | ((uint64_t)s << sh);
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
	l->n++;
	if (tick < l->lo)
		l->lo = tick;
	if (!h) {
		l->head = t;
		t->prev = t;
		if (idx < URA__WHEEL_DUE0)
			*l_bits(w, idx) |= (uint64_t)1 << (idx % W_SLOTS);
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

	l->n--;
	if (t == h) {
		struct ura__timer *n = t->next;
		if (n) {
			n->prev = t->prev;
			l->head = n;
		} else {
			l->head = NULL;
			l->lo = UINT64_MAX;
			if (idx < URA__WHEEL_DUE0)
				*l_bits(w, idx) &= ~((uint64_t)1 << (idx % W_SLOTS));
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

/* A timer of the pre-cascaded slot, in the spare banks (see above). */
static inline void pre_place(struct ura__wheel *w, struct ura__timer *t, uint64_t tick)
{
	unsigned lvl = level_of(tick ^ w->pre_base);
	if (tick < w->pre_lo)
		w->pre_lo = tick;
	unsigned slot = (unsigned)(tick >> (lvl * W_BITS)) & (W_SLOTS - 1);
	push(w, lidx(w->bank[lvl] ^ 1u, lvl, slot), t, tick);
}

/* tick >= cur. */
static inline void place(struct ura__wheel *w, struct ura__timer *t, uint64_t tick)
{
	uint64_t x = tick ^ w->cur;
	uint32_t idx;

	if (x >> W_SPAN) {
		idx = URA__WHEEL_OVERFLOW;
	} else {
		unsigned lvl = level_of(x);
		idx = lidx(w->bank[lvl], lvl, (unsigned)(tick >> (lvl * W_BITS)) & (W_SLOTS - 1));
		if (idx == w->pre) {
			pre_place(w, t, tick);
			return;
		}
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
	w->pre = W_NONE;
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
		uint64_t m = slots_after(w, lvl);
		if (w->pre != W_NONE && lvl == w->pre_level)
			m |= (uint64_t)1 << w->pre_slot; /* reached only at pre_base */
		if (m) {
			unsigned s = (unsigned)__builtin_ctzll(m);
			*at = slot_start(w, lvl, s);
			return (int)lidx(w->bank[lvl], lvl, s);
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
	if ((uint32_t)idx == w->pre) {
		/* Its earliest timer, moved or not; its first tick if every
		 * one was cancelled (reaching it ends the pre-cascade). */
		if (w->pre_lo < lo)
			lo = w->pre_lo;
		if (lo == UINT64_MAX)
			lo = at;
	}
	if (lo < at)
		lo = at;
	/* A pre-cascade with timers left to move: its steps spread over
	 * the first half of the time left, a step a wakeup (when nothing
	 * fires then: in a busy wheel most steps ride on fires). */
	if (w->pre != W_NONE && w->list[w->pre].n) {
		uint64_t steps = (w->list[w->pre].n + PRE_STEP - 1) / PRE_STEP;
		uint64_t gap = (w->pre_base - w->cur) / (2 * steps + 1);
		uint64_t step_at = w->cur + (gap ? gap : 1);
		if (step_at < lo)
			lo = step_at;
	}
	return lo << w->shift;
}

int ura__wheel_busy(const struct ura__wheel *w)
{
	if (w->pre != W_NONE)
		return w->list[w->pre].n != 0;
	for (unsigned lvl = 2; lvl < W_LEVELS; lvl++)
		if (w->bits[w->bank[lvl]][lvl])
			return 1;
	return 0;
}

/* Moves up to n timers of the pre-cascaded slot to the spare banks. */
static size_t pre_move(struct ura__wheel *w, size_t n)
{
	struct ura__wheel_list *l = &w->list[w->pre];
	size_t k = 0;
	struct ura__timer *t;

	while (k < n && (t = l->head)) {
		if (t->next)
			__builtin_prefetch(t->next);
		unlink_timer(w, t);
		pre_place(w, t, to_tick(w, t->deadline));
		k++;
	}
	return k;
}

/* The next slot to pre-cascade, if none is: the first non-empty one
 * after the cursor on the lowest level from 2 up. */
static void pre_begin(struct ura__wheel *w)
{
	for (unsigned lvl = 2; lvl < W_LEVELS; lvl++) {
		uint64_t m = slots_after(w, lvl);
		if (m) {
			unsigned s = (unsigned)__builtin_ctzll(m);
			w->pre = lidx(w->bank[lvl], lvl, s);
			w->pre_level = lvl;
			w->pre_slot = s;
			w->pre_base = slot_start(w, lvl, s);
			w->pre_lo = UINT64_MAX;
			return;
		}
	}
}

/* expire() reached the pre-cascaded slot: what is left moves now, the
 * cursor goes to its first tick, and the levels below flip banks. */
static size_t pre_land(struct ura__wheel *w)
{
	size_t k = pre_move(w, SIZE_MAX);
	w->cur = w->pre_base;
	for (unsigned lvl = 0; lvl < w->pre_level; lvl++)
		w->bank[lvl] ^= 1u;
	w->pre = W_NONE;
	return k;
}

/* Called with the cursor inside the list's range and at or before its
 * earliest timer, so each timer lands on a lower level (or back in the
 * overflow, for the overflow's later windows). */
static size_t cascade(struct ura__wheel *w, uint32_t idx)
{
	struct ura__wheel_list *l = &w->list[idx];
	struct ura__timer *t = l->head;
	size_t k = 0;

	l->head = NULL;
	l->lo = UINT64_MAX;
	l->n = 0;
	if (idx < URA__WHEEL_DUE0)
		*l_bits(w, idx) &= ~((uint64_t)1 << (idx % W_SLOTS));
	while (t) {
		struct ura__timer *n = t->next;
		if (n)
			__builtin_prefetch(n);
		place(w, t, to_tick(w, t->deadline));
		t = n;
		k++;
	}
	return k;
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
	size_t n = 0, moved = 0;

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
		if ((uint32_t)idx == w->pre) {
			moved += pre_land(w); /* the cursor is at pre_base */
		} else {
			/* Nothing lies between the cursor and the list's
			 * earliest timer: go straight there (or to now, if
			 * that is sooner), which spares the cascades through
			 * the levels in between. */
			lo = w->list[idx].lo;
			if (lo < at)
				lo = at;
			w->cur = lo < now ? lo : now;
			if ((uint32_t)idx >= URA__WHEEL_DUE0 || l_level((uint32_t)idx) > 0)
				moved += cascade(w, (uint32_t)idx);
		}
		idx = (int)lidx(w->bank[0], 0, (unsigned)(w->cur & (W_SLOTS - 1)));
		if (w->list[idx].head)
			n += drain(w, (uint32_t)idx, fire, ud);
	}
	/* After the fires, so they do not wait for it: a step of the
	 * pre-cascade, larger as its slot nears (whatever is left when the
	 * cursor gets there moves then). */
	if (w->pre == W_NONE)
		pre_begin(w);
	if (w->pre != W_NONE) {
		uint64_t left = w->pre_base - w->cur;
		moved += pre_move(w, left > W_SLOTS ? PRE_STEP : left > 4 ? 8 * PRE_STEP : SIZE_MAX);
	}
	if (moved > w->moved_max)
		w->moved_max = moved;
	return n;
}
