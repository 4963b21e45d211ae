/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions (ura/guard.h): the type check against a case's
 * signature, evaluation, formatting, deep copies for ura_behavior_new,
 * (de)serialization, and receive loops (URA_BEHAVIOR_UNTIL).
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

#include "actor/guard.h"

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

static int atom_encode(const char *s, ura_atom *out)
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
			if (!atom_encode(g->u.s, &x) || strlen(g->u.s) != g->n)
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
		return atom_encode(g->u.s, &out->u.atom) ? out : NULL;
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
			*out = ura_bound(e->cx);
		else
			return NULL;
		return out->type ? out : NULL;
	case URA__G_REF:
		return g->u.p && read_var(g->u.p, g->vt, 1, out) ? out : NULL;
	case URA__G_FIELD: {
		size_t size = 0;
		char *state = e->cx ? ura__state_bytes(e->cx, &size) : NULL;
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

/* ---- arenas: deep copies and loaded guards --------------------------------
 * One allocation: the nodes (root first), then the operand lists, then the
 * bytes of strings. Filled in two passes over the same code: the first
 * (base == NULL) only counts.
 */

struct arena {
	char *base;
	ura_guard_node *nodes;
	const ura_guard_node **slots;
	char *bytes;
	size_t nn, ns, nb;
};

#define ALIGN16(x) (((x) + 15) & ~(size_t)15)

static size_t arena_size(const struct arena *A)
{
	return ALIGN16(A->nn * sizeof(ura_guard_node) + A->ns * sizeof(void *) + A->nb);
}

/* Lays out a counted arena in mem and rewinds it for the second pass. */
static void arena_place(struct arena *A, void *mem)
{
	A->base = mem;
	A->nodes = mem;
	A->slots = (const ura_guard_node **)(void *)(A->nodes + A->nn);
	A->bytes = (char *)(A->slots + A->ns);
	A->nn = A->ns = A->nb = 0;
}

static ura_guard_node *arena_node(struct arena *A)
{
	return A->base ? &A->nodes[A->nn++] : (A->nn++, NULL);
}

static const ura_guard_node **arena_slots(struct arena *A, size_t n)
{
	const ura_guard_node **s = A->base ? &A->slots[A->ns] : NULL;
	A->ns += n;
	return s;
}

/* Copies n bytes and a NUL. */
static const char *arena_bytes(struct arena *A, const void *p, size_t n)
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

static size_t list_len(const ura_guard_node *const *l)
{
	size_t n = 0;
	while (l[n])
		n++;
	return n;
}

/* Deep copy of a checked tree. Atom names become atoms on the way. */
static const ura_guard_node *copy(struct arena *A, const ura_guard_node *g)
{
	ura_guard_node *d = arena_node(A);
	if (d)
		*d = *g;
	if (g->name) {
		const char *s = arena_bytes(A, g->name, strlen(g->name));
		if (d)
			d->name = s;
	}
	switch (g->op) {
	case URA__G_CONST:
		if (g->vt == URA_T_STR) {
			const char *s = arena_bytes(A, g->u.s, strlen(g->u.s));
			if (d)
				d->u.s = s;
		} else if (g->vt == URA_T_BYTES) {
			const char *s = arena_bytes(A, g->u.p, g->n);
			if (d)
				d->u.p = s;
		} else if (g->vt == URA__GA_NAME && d) {
			d->vt = URA_T_ATOM;
			atom_encode(g->u.s, &d->u.atom);
		}
		break;
	case URA__G_NOT: case URA__G_NEG: case URA__G_SIZE: case URA__G_EMPTY:
	case URA__G_NOT_EMPTY: case URA__G_FRONT: {
		const ura_guard_node *a = copy(A, g->u.a);
		if (d)
			d->u.a = a;
		break;
	}
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: case URA__G_STARTS_WITH: {
		const ura_guard_node *a = copy(A, g->u.a);
		const ura_guard_node *b = copy(A, g->k.b);
		if (d) {
			d->u.a = a;
			d->k.b = b;
		}
		break;
	}
	case URA__G_IN: case URA__G_NOT_IN: case URA__G_CALL:
	case URA__G_AND: case URA__G_OR: {
		if (g->op == URA__G_IN || g->op == URA__G_NOT_IN) {
			const ura_guard_node *a = copy(A, g->u.a);
			if (d)
				d->u.a = a;
		}
		size_t n = list_len(g->k.list);
		const ura_guard_node **s = arena_slots(A, n + 1);
		for (size_t i = 0; i < n; i++) {
			const ura_guard_node *c = copy(A, g->k.list[i]);
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
	struct arena A = { 0 };
	copy(&A, c->guard_arg);
	return arena_size(&A);
}

size_t ura__guard_case_copy(ura_case *c, void *mem)
{
	if (c->guard != ura_guard_eval || !c->guard_arg)
		return 0;
	struct arena A = { 0 };
	copy(&A, c->guard_arg);
	size_t size = arena_size(&A);
	arena_place(&A, mem);
	c->guard_arg = copy(&A, c->guard_arg);
	return size;
}

/* Nested loops are checked recursively; a hand-made cycle must not be. */
static _Thread_local unsigned check_nesting;

int ura__guard_check_case(const ura_case *c)
{
	if (c->guard == ura_guard_eval)
		return ura_guard_check(c->guard_arg, c->types);
	if (c->guard != ura__until_match)
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

/* ---- serialization ----------------------------------------------------------
 * Little-endian: "URG1", then the nodes in preorder, each as
 *   u8 op, u8 vt, u32 n, then by op:
 *     CONST   i64 / f64 bits / atom: 8 bytes; string: u32 len + bytes;
 *             bytes: n bytes (atom names are saved as atoms)
 *     REF     u32 len + symbol name      FIELD   u32 len + member name
 *     CALL    u32 len + symbol name, u32 argc, the arguments
 *     unary   the operand                binary  both operands
 *     AND OR  u32 count, the operands    IN      the value, u32 count, the set
 */

static const char magic[4] = { 'U', 'R', 'G', '1' };

struct wr {
	unsigned char *p; /* NULL: count only */
	size_t off;
};

static void w_bytes(struct wr *w, const void *s, size_t n)
{
	if (w->p && n)
		memcpy(w->p + w->off, s, n);
	w->off += n;
}

static void w_u(struct wr *w, uint64_t v, unsigned size)
{
	unsigned char b[8];
	for (unsigned i = 0; i < size; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	w_bytes(w, b, size);
}

static void w_str(struct wr *w, const char *s, size_t n)
{
	w_u(w, n, 4);
	w_bytes(w, s, n);
}

static const char *sym_name(const ura_guard_sym *syms, size_t nsyms, const ura_guard_node *g)
{
	for (size_t i = 0; syms && i < nsyms; i++) {
		if (!syms[i].name)
			continue;
		if (g->op == URA__G_REF ? syms[i].ref == g->u.p && syms[i].kind == g->vt
					: syms[i].fn && syms[i].fn == g->u.fn)
			return syms[i].name;
	}
	return NULL;
}

/* g has been checked, so the recursion is bounded. */
static int ser(struct wr *w, const ura_guard_node *g, const ura_guard_sym *syms, size_t nsyms)
{
	uint8_t vt = g->vt == URA__GA_NAME ? URA_T_ATOM : g->vt;
	w_u(w, g->op, 1);
	w_u(w, vt, 1);
	w_u(w, g->n, 4);
	switch (g->op) {
	case URA__G_CONST:
		switch (g->vt) {
		case URA_T_I64: w_u(w, (uint64_t)g->u.i, 8); break;
		case URA_T_F64: {
			uint64_t bits;
			memcpy(&bits, &g->u.d, 8);
			w_u(w, bits, 8);
			break;
		}
		case URA_T_ATOM: w_u(w, g->u.atom, 8); break;
		case URA__GA_NAME: {
			ura_atom a = 0;
			atom_encode(g->u.s, &a);
			w_u(w, a, 8);
			break;
		}
		case URA_T_STR:
			if (strlen(g->u.s) >= UINT32_MAX)
				return -EINVAL;
			w_str(w, g->u.s, strlen(g->u.s));
			break;
		case URA_T_BYTES: w_bytes(w, g->u.p, g->n); break;
		}
		return 0;
	case URA__G_REF: case URA__G_CALL: {
		const char *s = sym_name(syms, nsyms, g);
		if (!s || strlen(s) > UINT32_MAX)
			return -EINVAL;
		w_str(w, s, strlen(s));
		if (g->op == URA__G_REF)
			return 0;
		break;
	}
	case URA__G_FIELD:
		w_str(w, g->name ? g->name : "", g->name ? strlen(g->name) : 0);
		return 0;
	case URA__G_NOT: case URA__G_NEG: case URA__G_SIZE: case URA__G_EMPTY:
	case URA__G_NOT_EMPTY: case URA__G_FRONT:
		return ser(w, g->u.a, syms, nsyms);
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: case URA__G_STARTS_WITH:
		if (ser(w, g->u.a, syms, nsyms))
			return -EINVAL;
		return ser(w, g->k.b, syms, nsyms);
	case URA__G_IN: case URA__G_NOT_IN:
		if (ser(w, g->u.a, syms, nsyms))
			return -EINVAL;
		break;
	case URA__G_AND: case URA__G_OR:
		break;
	default:
		return 0; /* X, BOUND */
	}
	size_t n = list_len(g->k.list);
	w_u(w, n, 4);
	for (size_t i = 0; i < n; i++)
		if (ser(w, g->k.list[i], syms, nsyms))
			return -EINVAL;
	return 0;
}

URA_API long ura_guard_serialize(const ura_guard_node *g,
				 const ura_guard_sym *syms, size_t nsyms,
				 void *buf, size_t n)
{
	if (ura_guard_check(g, NULL))
		return -EINVAL;
	struct wr w = { NULL, 0 };
	w_bytes(&w, magic, 4);
	if (ser(&w, g, syms, nsyms))
		return -EINVAL;
	size_t size = w.off;
	if (buf && size <= n) {
		w.p = buf;
		w.off = 0;
		w_bytes(&w, magic, 4);
		ser(&w, g, syms, nsyms);
	}
	return (long)size;
}

struct rd {
	const unsigned char *p;
	size_t n, off;
	const ura_guard_sym *syms;
	size_t nsyms;
	unsigned nodes;
};

static int r_u(struct rd *r, unsigned size, uint64_t *v)
{
	if (r->n - r->off < size)
		return 0;
	*v = 0;
	for (unsigned i = 0; i < size; i++)
		*v |= (uint64_t)r->p[r->off + i] << (8 * i);
	r->off += size;
	return 1;
}

static int r_bytes(struct rd *r, size_t n, const unsigned char **s)
{
	if (r->n - r->off < n)
		return 0;
	*s = r->p + r->off;
	r->off += n;
	return 1;
}

static int r_str(struct rd *r, const unsigned char **s, size_t *len)
{
	uint64_t n;
	if (!r_u(r, 4, &n) || !r_bytes(r, n, s))
		return 0;
	*len = n;
	/* Names and strings are C strings once loaded: no NUL inside. */
	return !memchr(*s, 0, n);
}

static const ura_guard_sym *sym_find(struct rd *r, const unsigned char *s, size_t len, int fn)
{
	for (size_t i = 0; r->syms && i < r->nsyms; i++) {
		const ura_guard_sym *y = &r->syms[i];
		if (y->name && strlen(y->name) == len && !memcmp(y->name, s, len) &&
		    (fn ? y->fn != NULL : y->ref != NULL))
			return y;
	}
	return NULL;
}

static const ura_guard_node *des(struct rd *r, struct arena *A, unsigned depth, int *err);

/* A u32 count and that many operands, into d->k.list. */
static int des_list(struct rd *r, struct arena *A, ura_guard_node *d, unsigned depth, int *err)
{
	uint64_t v;
	if (!r_u(r, 4, &v) || v > URA_GUARD_MAX_NODES)
		return *err = -EINVAL;
	const ura_guard_node **sl = arena_slots(A, v + 1);
	for (uint64_t i = 0; i < v; i++) {
		const ura_guard_node *c = des(r, A, depth + 1, err);
		if (!c && *err)
			return *err;
		if (sl)
			sl[i] = c;
	}
	if (d) {
		sl[v] = NULL;
		d->k.list = sl;
	}
	return 0;
}

/* Reads one node and its operands into the arena (counting on the first
 * pass); returns it, or NULL (with *err set) for malformed input. */
static const ura_guard_node *des(struct rd *r, struct arena *A, unsigned depth, int *err)
{
	uint64_t op, vt, n, v;
	const unsigned char *s;
	size_t len;
	if (depth > URA_GUARD_MAX_DEPTH || ++r->nodes > URA_GUARD_MAX_NODES ||
	    !r_u(r, 1, &op) || !r_u(r, 1, &vt) || !r_u(r, 4, &n))
		goto bad;
	ura_guard_node *d = arena_node(A);
	if (d) {
		memset(d, 0, sizeof *d);
		d->op = (uint8_t)op;
		d->vt = (uint8_t)vt;
		d->n = (uint32_t)n;
	}
	switch (op) {
	case URA__G_X: case URA__G_BOUND:
		break;
	case URA__G_CONST:
		switch (vt) {
		case URA_T_I64: case URA_T_F64: case URA_T_ATOM:
			if (!r_u(r, 8, &v))
				goto bad;
			if (d)
				memcpy(&d->u, &v, 8);
			break;
		case URA_T_STR:
			if (!r_str(r, &s, &len))
				goto bad;
			if (d)
				d->u.s = arena_bytes(A, s, len);
			else
				arena_bytes(A, s, len);
			break;
		case URA_T_BYTES:
			if (!r_bytes(r, n, &s))
				goto bad;
			if (d)
				d->u.p = arena_bytes(A, s, n);
			else
				arena_bytes(A, s, n);
			break;
		default:
			goto bad;
		}
		break;
	case URA__G_REF: case URA__G_CALL: case URA__G_FIELD: {
		const ura_guard_sym *y = NULL;
		if (!r_str(r, &s, &len))
			goto bad;
		if (op != URA__G_FIELD) {
			y = sym_find(r, s, len, op == URA__G_CALL);
			if (!y || (op == URA__G_REF && y->kind != vt))
				goto bad;
		}
		const char *name = len ? arena_bytes(A, s, len) : NULL;
		if (d) {
			d->name = name;
			if (op == URA__G_REF)
				d->u.p = y->ref;
			else if (op == URA__G_CALL)
				d->u.fn = y->fn;
		}
		if (op == URA__G_CALL && des_list(r, A, d, depth, err))
			return NULL;
		break;
	}
	case URA__G_IN: case URA__G_NOT_IN: {
		const ura_guard_node *a = des(r, A, depth + 1, err);
		if (!a && *err)
			return NULL;
		if (d)
			d->u.a = a;
		if (des_list(r, A, d, depth, err))
			return NULL;
		break;
	}
	case URA__G_AND: case URA__G_OR:
		if (des_list(r, A, d, depth, err))
			return NULL;
		break;
	case URA__G_NOT: case URA__G_NEG: case URA__G_SIZE: case URA__G_EMPTY:
	case URA__G_NOT_EMPTY: case URA__G_FRONT: {
		const ura_guard_node *a = des(r, A, depth + 1, err);
		if (!a && *err)
			return NULL;
		if (d)
			d->u.a = a;
		break;
	}
	case URA__G_EQ: case URA__G_NE: case URA__G_LT: case URA__G_LE:
	case URA__G_GT: case URA__G_GE: case URA__G_ADD: case URA__G_SUB:
	case URA__G_MUL: case URA__G_DIV: case URA__G_MOD: case URA__G_STARTS_WITH: {
		const ura_guard_node *a = des(r, A, depth + 1, err);
		if (!a && *err)
			return NULL;
		const ura_guard_node *b = des(r, A, depth + 1, err);
		if (!b && *err)
			return NULL;
		if (d) {
			d->u.a = a;
			d->k.b = b;
		}
		break;
	}
	default:
		goto bad;
	}
	return d;
bad:
	*err = -EINVAL;
	return NULL;
}

URA_API int ura_guard_deserialize(const void *buf, size_t n,
				  const ura_guard_sym *syms, size_t nsyms,
				  ura_guard_node **out)
{
	if (!out || !buf || n < 4 || memcmp(buf, magic, 4))
		return -EINVAL;
	struct rd r = { buf, n, 4, syms, nsyms, 0 };
	struct arena A = { 0 };
	int err = 0;
	des(&r, &A, 0, &err);
	if (err || r.off != n)
		return -EINVAL;
	void *mem = calloc(1, arena_size(&A));
	if (!mem)
		return -ENOMEM;
	arena_place(&A, mem);
	r.off = 4;
	r.nodes = 0;
	des(&r, &A, 0, &err);
	/* The bytes were well-formed; now the tree must be a valid guard. */
	if (err || ura_guard_check(mem, NULL)) {
		free(mem);
		return -EINVAL;
	}
	*out = mem;
	return 0;
}

URA_API void ura_guard_free(ura_guard_node *g) { free(g); }

/* ---- loops ---------------------------------------------------------------- */

URA_API int ura__until_match(ura_ctx *cx, const ura_msg *m, const void *arg)
{
	const ura_until *u = arg;
	if (!u || !m || (u->ncases && !u->cases))
		return 0;
	for (uint32_t i = 0; i < u->ncases; i++)
		if (ura__case_matches(&u->cases[i], cx, m))
			return 1;
	return 0;
}

URA_API void ura__until_run(ura_ctx *cx, const ura_msg *m, const ura_until *u)
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
