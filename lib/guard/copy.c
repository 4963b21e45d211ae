/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions: deep copies into one allocation (ura_behavior_new
 * copies its cases' guards; ura_guard_deserialize builds into the same
 * kind of arena).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_int.h"

/* ---- arenas: deep copies and loaded guards --------------------------------
 * One allocation: the nodes (root first), then the operand lists, then the
 * bytes of strings. Filled in two passes over the same code: the first
 * (base == NULL) only counts.
 */

#define ALIGN16(x) (((x) + 15) & ~(size_t)15)

size_t ura__garena_size(const struct ura__garena *A)
{
	return ALIGN16(A->nn * sizeof(ura_guard_node) + A->ns * sizeof(void *) + A->nb);
}

/* Lays out a counted arena in mem and rewinds it for the second pass. */
void ura__garena_place(struct ura__garena *A, void *mem)
{
	A->base = mem;
	A->nodes = mem;
	A->slots = (const ura_guard_node **)(void *)(A->nodes + A->nn);
	A->bytes = (char *)(A->slots + A->ns);
	A->nn = A->ns = A->nb = 0;
}

ura_guard_node *ura__garena_node(struct ura__garena *A)
{
	return A->base ? &A->nodes[A->nn++] : (A->nn++, NULL);
}

const ura_guard_node **ura__garena_slots(struct ura__garena *A, size_t n)
{
	const ura_guard_node **s = A->base ? &A->slots[A->ns] : NULL;
	A->ns += n;
	return s;
}

/* Copies n bytes and a NUL. */
const char *ura__garena_bytes(struct ura__garena *A, const void *p, size_t n)
{
	char *d = A->base ? &A->bytes[A->nb] : NULL;
	if (d) {
		if (n)
			memcpy(d, p, n);
		d[n] = 0;
	}
	A->nb += n + 1;
	return d;
}

/* Deep copy of a checked tree. Atom names become atoms on the way. */
const ura_guard_node *ura__guard_copy(struct ura__garena *A, const ura_guard_node *g)
{
	ura_guard_node *d = ura__garena_node(A);
	if (d)
		*d = *g;
	if (g->name) {
		const char *s = ura__garena_bytes(A, g->name, strlen(g->name));
		if (d)
			d->name = s;
	}
	switch (g->op) {
	case URA__G_CONST:
		if (g->vt == URA_T_STR) {
			const char *s = ura__garena_bytes(A, g->u.s, strlen(g->u.s));
			if (d)
				d->u.s = s;
		} else if (g->vt == URA_T_BYTES) {
			const char *s = ura__garena_bytes(A, g->u.p, g->n);
			if (d)
				d->u.p = s;
		} else if (g->vt == URA__GA_NAME && d) {
			d->vt = URA_T_ATOM;
			ura__guard_atom_encode(g->u.s, &d->u.atom);
		}
		break;
	case URA__G_NOT: case URA__G_NEG: case URA__G_SIZE: case URA__G_EMPTY:
	case URA__G_NOT_EMPTY: case URA__G_FRONT: {
		const ura_guard_node *a  = ura__guard_copy(A, g->u.a);
		if (d)
			d->u.a = a;
		break;
	}
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: case URA__G_STARTS_WITH: {
		const ura_guard_node *a  = ura__guard_copy(A, g->u.a);
		const ura_guard_node *b  = ura__guard_copy(A, g->k.b);
		if (d) {
			d->u.a = a;
			d->k.b = b;
		}
		break;
	}
	case URA__G_IN: case URA__G_NOT_IN: case URA__G_CALL:
	case URA__G_AND: case URA__G_OR: {
		if (g->op == URA__G_IN || g->op == URA__G_NOT_IN) {
			const ura_guard_node *a  = ura__guard_copy(A, g->u.a);
			if (d)
				d->u.a = a;
		}
		size_t n = ura__guard_list_len(g->k.list);
		const ura_guard_node **s = ura__garena_slots(A, n + 1);
		for (size_t i = 0; i < n; i++) {
			const ura_guard_node *c  = ura__guard_copy(A, g->k.list[i]);
			if (s)
				s[i] = c;
		}
		if (s) {
			s[n] = NULL;
			d->k.list = s;
		}
		break;
	}
	}
	return d;
}

size_t ura__guard_case_size(const ura_case *c)
{
	if (c->guard != ura_guard_eval || !c->guard_arg)
		return 0;
	struct ura__garena A = { 0 };
	ura__guard_copy(&A, c->guard_arg);
	return ura__garena_size(&A);
}

size_t ura__guard_case_copy(ura_case *c, void *mem)
{
	if (c->guard != ura_guard_eval || !c->guard_arg)
		return 0;
	struct ura__garena A = { 0 };
	ura__guard_copy(&A, c->guard_arg);
	size_t size = ura__garena_size(&A);
	ura__garena_place(&A, mem);
	c->guard_arg = ura__guard_copy(&A, c->guard_arg);
	return size;
}

