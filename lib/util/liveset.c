/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/alloc.h"
#include "util/liveset.h"

static const char tomb;
#define TOMB ((const void *)&tomb)

static size_t hash(const void *p, size_t cap)
{
	return (size_t)(((uintptr_t)p >> 4) * 0x9e3779b97f4a7c15ull >> 32) & (cap - 1);
}

/* The slot of p, or where it would go (insert), or cap (absent). */
static size_t find(const struct ura__liveset *s, const void *p, int insert)
{
	size_t tomb_at = s->cap;
	for (size_t i = 0, h = hash(p, s->cap); i < s->cap; i++, h = (h + 1) & (s->cap - 1)) {
		if (s->slot[h] == p)
			return h;
		if (s->slot[h] == TOMB && tomb_at == s->cap)
			tomb_at = h;
		if (!s->slot[h])
			return insert ? (tomb_at < s->cap ? tomb_at : h) : s->cap;
	}
	return insert ? tomb_at : s->cap;
}

static int grow(struct ura__liveset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 16;
	const void **slot = ura__calloc(cap, sizeof *slot);
	if (!slot)
		return -ENOMEM;
	struct ura__liveset n = { .slot = slot, .cap = cap };
	for (size_t i = 0; i < s->cap; i++)
		if (s->slot[i] && s->slot[i] != TOMB) {
			n.slot[find(&n, s->slot[i], 1)] = s->slot[i];
			n.used++;
		}
	free(s->slot);
	s->slot = slot;
	s->cap = cap;
	s->used = n.used;
	return 0;
}

int ura__live_add(struct ura__liveset *s, const void *p)
{
	pthread_mutex_lock(&s->lock);
	int rc = 0;
	if ((s->used + 1) * 4 > s->cap * 3)
		rc = grow(s);
	if (rc == 0) {
		size_t h = find(s, p, 1);
		if (!s->slot[h])
			s->used++;
		if (s->slot[h] != p)
			s->n++;
		s->slot[h] = p;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int ura__live_del(struct ura__liveset *s, const void *p)
{
	pthread_mutex_lock(&s->lock);
	size_t h = s->cap ? find(s, p, 0) : 0;
	int rc = -ENOENT;
	if (s->cap && h < s->cap) {
		s->slot[h] = TOMB;
		s->n--;
		rc = 0;
		if (!s->n) { /* the last one: give the table back */
			free(s->slot);
			s->slot = NULL;
			s->cap = s->used = 0;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}
