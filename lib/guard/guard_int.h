/* SPDX-License-Identifier: MIT */
/* What the files of lib/guard share; nothing outside the folder includes it. */
#ifndef URA_GUARD_INT_H
#define URA_GUARD_INT_H

#include "guard/guard.h"

static inline int ura__guard_atom_encode(const char *s, ura_atom *out)
{
	size_t len = s ? strnlen(s, URA_ATOM_MAX + 1) : 0;
	if (len == 0 || len > URA_ATOM_MAX)
		return 0;
	ura_atom a = 0;
	for (size_t i = 0; i < len; i++) {
		uint64_t v = URA__A6((unsigned char)s[i]);
		if (!v)
			return 0;
		a |= v << (6 * i);
	}
	*out = a;
	return 1;
}

static inline size_t ura__guard_list_len(const ura_guard_node *const *l)
{
	size_t n = 0;
	while (l[n])
		n++;
	return n;
}

/* copy.c: arenas. One allocation: the nodes (root first), then the
 * operand lists, then the bytes of strings, filled in two passes over the
 * same code: the first (base == NULL) only counts. */
struct ura__garena {
	char *base;
	ura_guard_node *nodes;
	const ura_guard_node **slots;
	char *bytes;
	size_t nn, ns, nb;
};

size_t ura__garena_size(const struct ura__garena *A);
void ura__garena_place(struct ura__garena *A, void *mem);
ura_guard_node *ura__garena_node(struct ura__garena *A);
const ura_guard_node **ura__garena_slots(struct ura__garena *A, size_t n);
const char *ura__garena_bytes(struct ura__garena *A, const void *p, size_t n);
/* Deep copy of a checked tree into A (counts only on the first pass). */
const ura_guard_node *ura__guard_copy(struct ura__garena *A, const ura_guard_node *g);

#endif
