/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions: evaluation against a message.
 *
 * Evaluation is written so that nothing a message carries can crash it:
 * every value's type is tested where it is used, every failure (missing
 * value, wrong type, undefined integer result) makes the whole guard fail,
 * and recursion is bounded by URA_GUARD_MAX_DEPTH even for a guard that
 * was never checked (static behaviors are checked only if someone calls
 * ura_behavior_check).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_int.h"

/* ---- evaluation ---------------------------------------------------------- */

struct env {
	const ura_value *v;
	unsigned n;
	ura_ctx *cx;              /* NULL outside an actor */
	const ura_value *bound;   /* ura_guard_match's; NULL: ask cx */
};

static inline void set_i64(ura_value *out, int64_t i)
{
	out->type = URA_T_I64;
	out->len = 0;
	out->u.i64 = i;
}

static inline void set_f64(ura_value *out, double d)
{
	out->type = URA_T_F64;
	out->len = 0;
	out->u.f64 = d;
}

/* Strings and bytes as (pointer, length); 0 for anything else. A string
 * made by ura_v_str() has len UINT32_MAX ("count it"). */
static inline int seq_of(const ura_value *v, const unsigned char **p, size_t *len)
{
	if (v->type == URA_T_STR) {
		if (!v->u.str)
			return 0;
		*p = (const unsigned char *)v->u.str;
		*len = v->len == UINT32_MAX ? strlen(v->u.str) : v->len;
		return 1;
	}
	if (v->type == URA_T_BYTES) {
		if ((!v->u.bytes && v->len) || v->len == UINT32_MAX)
			return 0;
		*p = v->u.bytes;
		*len = v->len;
		return 1;
	}
	return 0;
}

/* 1: an int64 in *i; 2: a double in *d; 0: not a number. */
static inline int num_of(const ura_value *v, int64_t *i, double *d)
{
	if (v->type == URA_T_I64) {
		*i = v->u.i64;
		*d = (double)v->u.i64;
		return 1;
	}
	if (v->type == URA_T_F64) {
		*d = v->u.f64;
		return 2;
	}
	return 0;
}

#define CMP_UNORDERED 2 /* a NaN was compared */

/* Sets *c to -1, 0, 1 or CMP_UNORDERED; returns 0 when a and b cannot be
 * compared (that way, if `ordered`), which fails the guard. */
static int compare(const ura_value *a, const ura_value *b, int ordered, int *c)
{
	int64_t ia, ib;
	double da, db;
	if (a->type == URA_T_I64 && b->type == URA_T_I64) {
		*c = (a->u.i64 > b->u.i64) - (a->u.i64 < b->u.i64);
		return 1;
	}
	int ka = num_of(a, &ia, &da), kb = num_of(b, &ib, &db);
	if (ka && kb) {
		*c = da < db ? -1 : da > db ? 1 : da == db ? 0 : CMP_UNORDERED;
		return 1;
	}
	if (ka || kb)
		return 0;
	const unsigned char *pa, *pb;
	size_t la, lb;
	if (seq_of(a, &pa, &la) && seq_of(b, &pb, &lb)) {
		size_t m = la < lb ? la : lb;
		int r = m ? memcmp(pa, pb, m) : 0;
		*c = r ? (r < 0 ? -1 : 1) : (la > lb) - (la < lb);
		return 1;
	}
	if (ordered || a->type != b->type)
		return 0;
	switch (a->type) {
	case URA_T_ATOM: *c = a->u.atom != b->u.atom; return 1;
	case URA_T_REF: *c = a->u.ref.id != b->u.ref.id; return 1;
	case URA_T_PTR: *c = a->u.ptr != b->u.ptr; return 1;
	}
	return 0;
}

/* An int64 operation as C computes it; 0 where C leaves the result
 * undefined (overflow, x / 0, INT64_MIN / -1), which fails the guard. */
static inline __attribute__((always_inline)) int
int_arith(unsigned op, int64_t a, int64_t b, int64_t *r)
{
	switch (op) {
	case URA__G_ADD: return !__builtin_add_overflow(a, b, r);
	case URA__G_SUB: return !__builtin_sub_overflow(a, b, r);
	case URA__G_MUL: return !__builtin_mul_overflow(a, b, r);
	}
	if (b > 0 && !(b & (b - 1))) {
		/* By a power of two (x % 2, x / 4): shifts on the magnitude,
		 * truncating as C does. A 64-bit idiv costs tens of cycles,
		 * most of a guard's budget. */
		uint64_t mag = a < 0 ? 0 - (uint64_t)a : (uint64_t)a;
		uint64_t q = mag >> __builtin_ctzll((uint64_t)b), m = mag & (uint64_t)(b - 1);
		if (op == URA__G_DIV)
			*r = (int64_t)(a < 0 ? 0 - q : q);
		else
			*r = a < 0 ? -(int64_t)m : (int64_t)m;
		return 1;
	}
	if (b == 0 || (a == INT64_MIN && b == -1))
		return 0;
	*r = op == URA__G_DIV ? a / b : a % b;
	return 1;
}

static int arith(unsigned op, const ura_value *a, const ura_value *b, ura_value *out)
{
	int64_t ia, ib, r;
	double da, db;
	int ka = num_of(a, &ia, &da), kb = num_of(b, &ib, &db);
	if (!ka || !kb)
		return 0;
	if (ka == 1 && kb == 1) {
		if (!int_arith(op, ia, ib, &r))
			return 0;
		set_i64(out, r);
		return 1;
	}
	switch (op) {
	case URA__G_ADD: set_f64(out, da + db); return 1;
	case URA__G_SUB: set_f64(out, da - db); return 1;
	case URA__G_MUL: set_f64(out, da * db); return 1;
	case URA__G_DIV: set_f64(out, da / db); return 1;
	}
	return 0; /* MOD of a double */
}

/* Reads a referenced variable: atomically (relaxed: only this variable is
 * read, nothing is published through it) for URA_G_REF, whose variable
 * another thread may store to; plainly for a member of the actor's own
 * state, which only this actor touches and which may be unaligned. */
static int read_var(const void *p, unsigned kind, int atomic, ura_value *out)
{
#define READ(T, x) do {                                                      \
	if (atomic)                                                          \
		__atomic_load((T const *)p, &(x), __ATOMIC_RELAXED);         \
	else                                                                 \
		memcpy(&(x), p, sizeof(x));                                  \
} while (0)
	switch (kind) {
	case URA__GR_BOOL: { _Bool x; READ(_Bool, x); set_i64(out, x); return 1; }
	case URA__GR_I32: { int32_t x; READ(int32_t, x); set_i64(out, x); return 1; }
	case URA__GR_U32: { uint32_t x; READ(uint32_t, x); set_i64(out, x); return 1; }
	case URA__GR_I64: { int64_t x; READ(int64_t, x); set_i64(out, x); return 1; }
	case URA__GR_U64: {
		uint64_t x;
		READ(uint64_t, x);
		if (x > INT64_MAX)
			return 0;
		set_i64(out, (int64_t)x);
		return 1;
	}
	case URA__GR_F64: { double x; READ(double, x); set_f64(out, x); return 1; }
	case URA__GR_STR: {
		const char *x;
		READ(const char *, x);
		if (!x)
			return 0;
		out->type = URA_T_STR;
		out->len = UINT32_MAX;
		out->u.str = x;
		return 1;
	}
	}
	return 0;
#undef READ
}

static size_t var_size(unsigned kind)
{
	switch (kind) {
	case URA__GR_BOOL: return sizeof(_Bool);
	case URA__GR_I32: case URA__GR_U32: return 4;
	case URA__GR_STR: return sizeof(const char *);
	}
	return 8;
}

/*
 * The evaluator returns a pointer to the value of a node: into the
 * message for a placeholder (no copy), else to the caller's `tmp`; NULL
 * when the guard fails.
 */
static const ura_value *ev(const struct env *e, const ura_guard_node *g, unsigned depth,
			   ura_value *tmp);

/* Placeholders and int constants inline: most guards are `x1 op const`,
 * and the calls saved are a good part of a guard's cost. */
static inline __attribute__((always_inline)) const ura_value *
operand(const struct env *e, const ura_guard_node *g, unsigned depth, ura_value *tmp)
{
	if (ura__likely(g != NULL)) {
		if (g->op == URA__G_X) {
			unsigned k = g->n - 1u;
			return ura__likely(k < e->n) ? &e->v[k] : NULL;
		}
		if (g->op == URA__G_CONST && g->vt == URA_T_I64) {
			set_i64(tmp, g->u.i);
			return tmp;
		}
	}
	return ev(e, g, depth + 1, tmp);
}

/* Whether comparison op holds for c = -1, 0 or 1: bit c + 1 of a mask,
 * rather than a branch per operator. */
static inline int cmp_holds(unsigned op, int c)
{
	static const uint8_t mask[6] = {
		[URA__G_EQ - URA__G_EQ] = 2, [URA__G_NE - URA__G_EQ] = 5,
		[URA__G_LT - URA__G_EQ] = 1, [URA__G_LE - URA__G_EQ] = 3,
		[URA__G_GT - URA__G_EQ] = 4, [URA__G_GE - URA__G_EQ] = 6,
	};
	return (mask[op - URA__G_EQ] >> (c + 1)) & 1;
}

/*
 * The fast path: a comparison of int64 leaves or of one arithmetic step on
 * them (x1 % 2 == 0, x1 < 10, x1 + x2 > x3), the bulk of real guards, is
 * computed here without a call. It only ever says "handled" for what the
 * general path would compute the same way; anything else (other types,
 * a failure such as x / 0) goes the general way.
 */
static inline __attribute__((always_inline)) int
leaf_i64(const struct env *e, const ura_guard_node *g, int64_t *v)
{
	if (!g)
		return 0;
	if (g->op == URA__G_X) {
		unsigned k = g->n - 1u;
		if (k >= e->n || e->v[k].type != URA_T_I64)
			return 0;
		*v = e->v[k].u.i64;
		return 1;
	}
	if (g->op == URA__G_CONST && g->vt == URA_T_I64) {
		*v = g->u.i;
		return 1;
	}
	return 0;
}

static inline __attribute__((always_inline)) int
fast_int(const struct env *e, const ura_guard_node *g, int64_t *v)
{
	int64_t a, b;
	if (leaf_i64(e, g, v))
		return 1;
	return g && g->op >= URA__G_ADD && g->op <= URA__G_MOD &&
	       leaf_i64(e, g->u.a, &a) && leaf_i64(e, g->k.b, &b) && int_arith(g->op, a, b, v);
}

static inline __attribute__((always_inline)) int
fast_cmp(const struct env *e, const ura_guard_node *g, int *x)
{
	int64_t a, b;
	if (!g || g->op < URA__G_EQ || g->op > URA__G_GE ||
	    !fast_int(e, g->u.a, &a) || !fast_int(e, g->k.b, &b))
		return 0;
	*x = cmp_holds(g->op, (a > b) - (a < b));
	return 1;
}

static inline int truth(const ura_value *v, int *t)
{
	if (!v || v->type != URA_T_I64)
		return 0;
	*t = v->u.i64 != 0;
	return 1;
}

static const ura_value *ev_const(const ura_guard_node *g, ura_value *out)
{
	out->len = 0;
	switch (g->vt) {
	case URA_T_I64: set_i64(out, g->u.i); return out;
	case URA_T_F64: set_f64(out, g->u.d); return out;
	case URA_T_ATOM:
		out->type = URA_T_ATOM;
		out->u.atom = g->u.atom;
		return out;
	case URA__GA_NAME:
		out->type = URA_T_ATOM;
		return ura__guard_atom_encode(g->u.s, &out->u.atom) ? out : NULL;
	case URA_T_STR:
		if (!g->u.s)
			return NULL;
		out->type = URA_T_STR;
		out->len = UINT32_MAX;
		out->u.str = g->u.s;
		return out;
	case URA_T_BYTES:
		if (!g->u.p && g->n)
			return NULL;
		out->type = URA_T_BYTES;
		out->len = g->n;
		out->u.bytes = g->u.p;
		return out;
	}
	return NULL;
}

/* The callee gets only values a message could hold, with exact lengths
 * whatever made them (ura_guard_match takes any ura_value). */
static int sane_arg(ura_value *v)
{
	const unsigned char *p;
	size_t len;
	switch (v->type) {
	case URA_T_STR: case URA_T_BYTES:
		if (!seq_of(v, &p, &len) || len >= UINT32_MAX)
			return 0;
		v->len = (uint32_t)len;
		return 1;
	case URA_T_I64: case URA_T_F64: case URA_T_ATOM: case URA_T_REF: case URA_T_PTR:
		return 1;
	}
	return 0;
}

/* Out of line: its argument array would bloat every ev() frame. */
static __attribute__((noinline)) const ura_value *
ev_call(const struct env *e, const ura_guard_node *g, unsigned depth, ura_value *out)
{
	ura_value args[URA_GUARD_MAX_ARGS];
	unsigned n = 0;
	if (!g->u.fn || !g->k.list)
		return NULL;
	for (const ura_guard_node *const *a = g->k.list; *a; a++) {
		const ura_value *v;
		if (n == URA_GUARD_MAX_ARGS || !(v = operand(e, *a, depth, &args[n])))
			return NULL;
		args[n] = *v;
		if (!sane_arg(&args[n]))
			return NULL;
		n++;
	}
	*out = g->u.fn(args, n);
	if (out->type == URA_T_STR && !out->u.str)
		return NULL;
	return out->type ? out : NULL;
}

static const ura_value *ev(const struct env *e, const ura_guard_node *g, unsigned depth,
			   ura_value *out)
{
	ura_value ta, tb;
	const ura_value *a, *b;
	const unsigned char *p, *q;
	size_t n, m;
	int c, x;

	if (ura__unlikely(!g || depth > URA_GUARD_MAX_DEPTH))
		return NULL;
	switch (g->op) {
	case URA__G_X:
		return g->n - 1u < e->n ? &e->v[g->n - 1] : NULL;
	case URA__G_CONST:
		return ev_const(g, out);
	case URA__G_BOUND:
		if (e->bound)
			*out = *e->bound;
		else if (e->cx)
			*out = ura__ctx_bound(e->cx);
		else
			return NULL;
		return out->type ? out : NULL;
	case URA__G_REF:
		return g->u.p && read_var(g->u.p, g->vt, 1, out) ? out : NULL;
	case URA__G_FIELD: {
		size_t size = 0;
		char *state = e->cx ? ura__ctx_state(e->cx, &size) : NULL;
		return state && g->n <= size && size - g->n >= var_size(g->vt) &&
		       read_var(state + g->n, g->vt, 0, out) ? out : NULL;
	}
	case URA__G_CALL:
		return ev_call(e, g, depth, out);
	case URA__G_NOT:
		if (!truth(operand(e, g->u.a, depth, &ta), &x))
			return NULL;
		set_i64(out, !x);
		return out;
	case URA__G_NEG:
		if (!(a = operand(e, g->u.a, depth, &ta)))
			return NULL;
		if (a->type == URA_T_I64 && a->u.i64 != INT64_MIN)
			set_i64(out, -a->u.i64);
		else if (a->type == URA_T_F64)
			set_f64(out, -a->u.f64);
		else
			return NULL;
		return out;
	case URA__G_SIZE: case URA__G_EMPTY: case URA__G_NOT_EMPTY: case URA__G_FRONT:
		if (!(a = operand(e, g->u.a, depth, &ta)) || !seq_of(a, &p, &n))
			return NULL;
		switch (g->op) {
		case URA__G_SIZE: set_i64(out, (int64_t)n); return out;
		case URA__G_EMPTY: set_i64(out, n == 0); return out;
		case URA__G_NOT_EMPTY: set_i64(out, n != 0); return out;
		}
		if (!n)
			return NULL; /* front() of nothing */
		set_i64(out, p[0]);
		return out;
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE:
		if (!(a = operand(e, g->u.a, depth, &ta)) || !(b = operand(e, g->k.b, depth, &tb)))
			return NULL;
		if (ura__likely(a->type == URA_T_I64 && b->type == URA_T_I64))
			c = (a->u.i64 > b->u.i64) - (a->u.i64 < b->u.i64);
		else if (!compare(a, b, g->op >= URA__G_LT, &c))
			return NULL;
		/* NaN: only != holds, as in C */
		set_i64(out, c == CMP_UNORDERED ? g->op == URA__G_NE : cmp_holds(g->op, c));
		return out;
	case URA__G_ADD: case URA__G_SUB: case URA__G_MUL: case URA__G_DIV:
	case URA__G_MOD:
		if (!(a = operand(e, g->u.a, depth, &ta)) || !(b = operand(e, g->k.b, depth, &tb)))
			return NULL;
		return arith(g->op, a, b, out) ? out : NULL;
	case URA__G_STARTS_WITH:
		if (!(a = operand(e, g->u.a, depth, &ta)) || !(b = operand(e, g->k.b, depth, &tb)) ||
		    !seq_of(a, &p, &n) || !seq_of(b, &q, &m))
			return NULL;
		set_i64(out, m <= n && (!m || !memcmp(p, q, m)));
		return out;
	case URA__G_AND: case URA__G_OR: {
		/* Short-circuit: the operands after the deciding one are
		 * never evaluated, so they cannot fail the guard either. */
		int want = g->op == URA__G_OR;
		if (!g->k.list)
			return NULL;
		for (const ura_guard_node *const *l = g->k.list; *l; l++) {
			if (!fast_cmp(e, *l, &x) && !truth(operand(e, *l, depth, &ta), &x))
				return NULL;
			if (x == want) {
				set_i64(out, want);
				return out;
			}
		}
		set_i64(out, !want);
		return out;
	}
	case URA__G_IN: case URA__G_NOT_IN: {
		int found = 0;
		if (!(a = operand(e, g->u.a, depth, &ta)) || !g->k.list)
			return NULL;
		for (const ura_guard_node *const *l = g->k.list; *l && !found; l++) {
			if (!(b = operand(e, *l, depth, &tb)) || !compare(a, b, 0, &c))
				return NULL;
			found = c == 0;
		}
		set_i64(out, g->op == URA__G_IN ? found : !found);
		return out;
	}
	}
	return NULL;
}

static inline int holds(const struct env *e, const ura_guard_node *g)
{
	ura_value tmp;
	int x;
	if (fast_cmp(e, g, &x))
		return x;
	const ura_value *v = operand(e, g, 0, &tmp);
	return v && v->type == URA_T_I64 && v->u.i64 != 0;
}

URA_API int ura_guard_eval(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	if (ura__unlikely(!m))
		return 0;
	struct env e = { m->vals, m->n, cx, NULL };
	return holds(&e, arg);
}

URA_API int ura_guard_match(const ura_guard_node *g, const ura_value *vals,
			    unsigned n, const ura_value *bound)
{
	struct env e = { vals, vals ? n : 0, NULL, bound };
	return holds(&e, g);
}

