/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions (ura/guard.h): the type check of a tree against a
 * case's signature.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_int.h"

/* ---- static types -------------------------------------------------------
 * The message types ('i' 'd' 'a' 'r' 's' 'b' 'p'), plus 'B' (a truth value,
 * an int64 0/1 at run time) and '?' (known only at run time: a value of an
 * URA_ON_ANY case, the bound value, a call's result).
 */

static int t_num(char t) { return t == 'i' || t == 'd' || t == 'B' || t == '?'; }
static int t_truth(char t) { return t == 'i' || t == 'B' || t == '?'; }
static int t_seq(char t) { return t == 's' || t == 'b' || t == '?'; }

/* The family a value compares within: numbers, byte strings, or itself. */
static char t_family(char t)
{
	if (t == 'i' || t == 'd' || t == 'B')
		return 'n';
	if (t == 's' || t == 'b')
		return 's';
	return t;
}

static int t_eq_ok(char a, char b)
{
	return a == '?' || b == '?' || t_family(a) == t_family(b);
}

static int t_ord_ok(char a, char b)
{
	if (!(t_num(a) || t_seq(a)) || !(t_num(b) || t_seq(b)))
		return 0;
	return t_eq_ok(a, b);
}

static char t_of_ref(unsigned kind)
{
	switch (kind) {
	case URA__GR_BOOL: return 'B';
	case URA__GR_I32: case URA__GR_U32: case URA__GR_I64: case URA__GR_U64:
		return 'i';
	case URA__GR_F64: return 'd';
	case URA__GR_STR: return 's';
	}
	return 0;
}

/* ---- checking ------------------------------------------------------------ */

struct ck {
	const char *types; /* NULL: any values */
	size_t ntypes;
	unsigned nodes;
};

static int ck(struct ck *k, const ura_guard_node *g, unsigned depth, char *t);

static int ck_list(struct ck *k, const ura_guard_node *const *list, unsigned depth,
		   size_t min, size_t max, int (*ok)(char))
{
	if (!list)
		return -EINVAL;
	size_t i = 0;
	for (; list[i]; i++) {
		char t;
		if (i >= max || ck(k, list[i], depth + 1, &t) || (ok && !ok(t)))
			return -EINVAL;
	}
	return i < min ? -EINVAL : 0;
}

static int ck(struct ck *k, const ura_guard_node *g, unsigned depth, char *t)
{
	char a, b;
	if (!g || depth > URA_GUARD_MAX_DEPTH || ++k->nodes > URA_GUARD_MAX_NODES || g->r_)
		return -EINVAL;
	switch (g->op) {
	case URA__G_X:
		if (g->n < 1 || g->n > 9)
			return -EINVAL;
		if (!k->types) {
			*t = '?';
			return 0;
		}
		if (g->n > k->ntypes)
			return -EINVAL;
		*t = k->types[g->n - 1];
		return 0;
	case URA__G_CONST:
		switch (g->vt) {
		case URA_T_I64: case URA_T_F64: case URA_T_ATOM:
			*t = (char)g->vt;
			return 0;
		case URA__GA_NAME: {
			ura_atom x;
			if (!ura__guard_atom_encode(g->u.s, &x) || strlen(g->u.s) != g->n)
				return -EINVAL;
			*t = 'a';
			return 0;
		}
		case URA_T_STR:
			*t = 's';
			return g->u.s ? 0 : -EINVAL;
		case URA_T_BYTES:
			*t = 'b';
			return g->u.p || !g->n ? 0 : -EINVAL;
		}
		return -EINVAL;
	case URA__G_BOUND:
		*t = '?';
		return 0;
	case URA__G_REF:
		if (!g->u.p)
			return -EINVAL;
		/* fall through */
	case URA__G_FIELD:
		*t = t_of_ref(g->vt);
		return *t ? 0 : -EINVAL;
	case URA__G_CALL:
		*t = '?';
		if (!g->u.fn)
			return -EINVAL;
		return ck_list(k, g->k.list, depth, 0, URA_GUARD_MAX_ARGS, NULL);
	case URA__G_NOT: case URA__G_NEG: case URA__G_SIZE: case URA__G_EMPTY:
	case URA__G_NOT_EMPTY: case URA__G_FRONT:
		if (ck(k, g->u.a, depth + 1, &a))
			return -EINVAL;
		switch (g->op) {
		case URA__G_NOT:
			*t = 'B';
			return t_truth(a) ? 0 : -EINVAL;
		case URA__G_NEG:
			*t = a == 'B' ? 'i' : a;
			return t_num(a) ? 0 : -EINVAL;
		default:
			*t = g->op == URA__G_EMPTY || g->op == URA__G_NOT_EMPTY ? 'B' : 'i';
			return t_seq(a) ? 0 : -EINVAL;
		}
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: case URA__G_STARTS_WITH:
		if (ck(k, g->u.a, depth + 1, &a) || ck(k, g->k.b, depth + 1, &b))
			return -EINVAL;
		switch (g->op) {
		case URA__G_EQ: case URA__G_NE:
			*t = 'B';
			return t_eq_ok(a, b) ? 0 : -EINVAL;
		case URA__G_LT: case URA__G_LE: case URA__G_GT: case URA__G_GE:
			*t = 'B';
			return t_ord_ok(a, b) ? 0 : -EINVAL;
		case URA__G_STARTS_WITH:
			*t = 'B';
			return t_seq(a) && t_seq(b) ? 0 : -EINVAL;
		case URA__G_MOD:
			*t = 'i';
			return t_truth(a) && t_truth(b) ? 0 : -EINVAL;
		default:
			*t = a == 'd' || b == 'd' ? 'd' : a == '?' || b == '?' ? '?' : 'i';
			return t_num(a) && t_num(b) ? 0 : -EINVAL;
		}
	case URA__G_AND: case URA__G_OR:
		*t = 'B';
		return ck_list(k, g->k.list, depth, 1, SIZE_MAX, t_truth);
	case URA__G_IN: case URA__G_NOT_IN: {
		*t = 'B';
		if (ck(k, g->u.a, depth + 1, &a) || !g->k.list || !g->k.list[0])
			return -EINVAL;
		char fam = 0;
		for (const ura_guard_node *const *e = g->k.list; *e; e++) {
			/* A constant set, of one family: so a value of another
			 * type fails at the first element, whatever the order. */
			if ((*e)->op != URA__G_CONST || ck(k, *e, depth + 1, &b) ||
			    !t_eq_ok(a, b) || (fam && t_family(b) != fam))
				return -EINVAL;
			fam = t_family(b);
		}
		return 0;
	}
	}
	return -EINVAL;
}

URA_API int ura_guard_check(const ura_guard_node *g, const char *types)
{
	struct ck k = { types, 0, 0 };
	if (types) {
		k.ntypes = strlen(types);
		if (k.ntypes > URA_MAX_VALUES || strspn(types, "idarsbp") != k.ntypes)
			return -EINVAL;
	}
	char t;
	if (ck(&k, g, 0, &t) || !t_truth(t))
		return -EINVAL;
	return 0;
}

