/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions: one-line rendering for traces (ura_guard_format).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_int.h"

/* ---- formatting ---------------------------------------------------------- */

struct out {
	char *buf;
	size_t n, off;
	int want;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(o->buf && o->off < o->n ? o->buf + o->off : NULL,
			  o->buf && o->off < o->n ? o->n - o->off : 0, fmt, ap);
	va_end(ap);
	if (k > 0) {
		o->off += (size_t)k;
		o->want += k;
	}
}

static void put_quoted(struct out *o, const char *pre, const unsigned char *p, size_t n)
{
	put(o, "%s\"", pre);
	for (size_t i = 0; i < n; i++) {
		unsigned ch = p[i];
		if (ch == '"' || ch == '\\')
			put(o, "\\%c", ch);
		else if (ch >= 0x20 && ch < 0x7f)
			put(o, "%c", ch);
		else
			put(o, "\\x%02x", ch);
	}
	put(o, "\"");
}

static void put_double(struct out *o, double d)
{
	char b[40];
	snprintf(b, sizeof b, "%.15g", d);
	if (strtod(b, NULL) != d && d == d)
		snprintf(b, sizeof b, "%.17g", d);
	/* Keep a double looking like one: 2.0, not 2. */
	put(o, "%s%s", b, strpbrk(b, ".eni") ? "" : ".0");
}

static void put_const(struct out *o, const ura_guard_node *g)
{
	char name[URA_ATOM_MAX + 1];
	switch (g->vt) {
	case URA_T_I64: put(o, "%" PRId64, g->u.i); return;
	case URA_T_F64: put_double(o, g->u.d); return;
	case URA_T_ATOM: put(o, "'%s'", ura_atom_name(g->u.atom, name)); return;
	case URA__GA_NAME:
		put(o, "'%.*s'", g->u.s ? (int)strnlen(g->u.s, URA_ATOM_MAX + 1) : 0,
		    g->u.s ? g->u.s : "");
		return;
	case URA_T_STR:
		if (g->u.s)
			put_quoted(o, "", (const unsigned char *)g->u.s, strlen(g->u.s));
		else
			put(o, "<null>");
		return;
	case URA_T_BYTES:
		put_quoted(o, "b", g->u.p, g->u.p ? g->n : 0);
		return;
	}
	put(o, "<const %u>", g->vt);
}

static int prec(const ura_guard_node *g)
{
	switch (g->op) {
	case URA__G_OR: return 1;
	case URA__G_AND: return 2;
	case URA__G_EQ: case URA__G_NE: return 3;
	case URA__G_LT: case URA__G_LE: case URA__G_GT: case URA__G_GE:
	case URA__G_IN: case URA__G_NOT_IN: return 4;
	case URA__G_ADD: case URA__G_SUB: return 5;
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: return 6;
	case URA__G_NOT: case URA__G_NEG: return 7;
	}
	return 8;
}

static const char *const binop[] = {
	[URA__G_EQ] = "==", [URA__G_NE] = "!=", [URA__G_LT] = "<",
	[URA__G_LE] = "<=", [URA__G_GT] = ">", [URA__G_GE] = ">=",
	[URA__G_ADD] = "+", [URA__G_SUB] = "-", [URA__G_MUL] = "*",
	[URA__G_DIV] = "/", [URA__G_MOD] = "%",
};

static void fmt(struct out *o, const ura_guard_node *g, int min, unsigned depth);

static void fmt_list(struct out *o, const ura_guard_node *const *l, const char *sep,
		     int min, unsigned depth)
{
	if (!l) {
		put(o, "<null>");
		return;
	}
	for (size_t i = 0; l[i]; i++) {
		if (i)
			put(o, "%s", sep);
		if (i == URA_GUARD_MAX_NODES) {
			put(o, "...");
			return;
		}
		fmt(o, l[i], min, depth + 1);
	}
}

static void fmt(struct out *o, const ura_guard_node *g, int min, unsigned depth)
{
	if (!g) {
		put(o, "<null>");
		return;
	}
	if (depth > URA_GUARD_MAX_DEPTH) {
		put(o, "...");
		return;
	}
	int p = prec(g), paren = p < min;
	const char *name = g->name;
	if (paren)
		put(o, "(");
	switch (g->op) {
	case URA__G_X: put(o, "x%" PRIu32, g->n); break;
	case URA__G_CONST: put_const(o, g); break;
	case URA__G_BOUND: put(o, "bound"); break;
	case URA__G_REF:
		if (name && *name == '&')
			name++;
		put(o, "gref(%s)", name && *name ? name : "?");
		break;
	case URA__G_FIELD:
		if (name && *name)
			put(o, "state.%s", name);
		else
			put(o, "state@%" PRIu32, g->n);
		break;
	case URA__G_CALL:
		put(o, "%s(", name && *name ? name : "gcall");
		fmt_list(o, g->k.list, ", ", 0, depth);
		put(o, ")");
		break;
	case URA__G_NOT:
		put(o, "!");
		fmt(o, g->u.a, 7, depth + 1);
		break;
	case URA__G_NEG: {
		/* -(-x) and -(-3), never --x */
		const ura_guard_node *a = g->u.a;
		int neg = a && (a->op == URA__G_NEG ||
				(a->op == URA__G_CONST && ((a->vt == URA_T_I64 && a->u.i < 0) ||
							   (a->vt == URA_T_F64 && a->u.d < 0))));
		put(o, "-");
		fmt(o, a, neg ? 9 : 7, depth + 1);
		break;
	}
	case URA__G_SIZE: case URA__G_EMPTY: case URA__G_NOT_EMPTY: case URA__G_FRONT:
		put(o, "%s(", g->op == URA__G_SIZE ? "size" : g->op == URA__G_EMPTY ? "empty" :
			      g->op == URA__G_NOT_EMPTY ? "not_empty" : "front");
		fmt(o, g->u.a, 0, depth + 1);
		put(o, ")");
		break;
	case URA__G_STARTS_WITH:
		put(o, "starts_with(");
		fmt(o, g->u.a, 0, depth + 1);
		put(o, ", ");
		fmt(o, g->k.b, 0, depth + 1);
		put(o, ")");
		break;
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD:
		/* Arithmetic is left-associative; comparisons get parentheses
		 * on both sides when nested. */
		fmt(o, g->u.a, p <= 4 ? p + 1 : p, depth + 1);
		put(o, " %s ", binop[g->op]);
		fmt(o, g->k.b, p + 1, depth + 1);
		break;
	case URA__G_AND: case URA__G_OR:
		fmt_list(o, g->k.list, g->op == URA__G_AND ? " && " : " || ", p + 1, depth);
		break;
	case URA__G_IN: case URA__G_NOT_IN:
		fmt(o, g->u.a, p + 1, depth + 1);
		put(o, g->op == URA__G_IN ? " in {" : " not in {");
		fmt_list(o, g->k.list, ", ", 0, depth);
		put(o, "}");
		break;
	default:
		put(o, "<op %u>", g->op);
		break;
	}
	if (paren)
		put(o, ")");
}

URA_API int ura_guard_format(const ura_guard_node *g, char *buf, size_t n)
{
	struct out o = { buf, n, 0, 0 };
	if (buf && n)
		buf[0] = 0;
	fmt(&o, g, 0, 0);
	return o.want;
}

