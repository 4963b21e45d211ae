/* SPDX-License-Identifier: MIT */
/*
 * Guard expressions: the serialized form (ura_guard_serialize,
 * ura_guard_deserialize).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard/guard_int.h"

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
			ura__guard_atom_encode(g->u.s, &a);
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
	size_t n = ura__guard_list_len(g->k.list);
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

static const ura_guard_node *des(struct rd *r, struct ura__garena *A, unsigned depth, int *err);

/* A u32 count and that many operands, into d->k.list. */
static int des_list(struct rd *r, struct ura__garena *A, ura_guard_node *d, unsigned depth, int *err)
{
	uint64_t v;
	if (!r_u(r, 4, &v) || v > URA_GUARD_MAX_NODES)
		return *err = -EINVAL;
	const ura_guard_node **sl = ura__garena_slots(A, v + 1);
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
static const ura_guard_node *des(struct rd *r, struct ura__garena *A, unsigned depth, int *err)
{
	uint64_t op, vt, n, v;
	const unsigned char *s;
	size_t len;
	if (depth > URA_GUARD_MAX_DEPTH || ++r->nodes > URA_GUARD_MAX_NODES ||
	    !r_u(r, 1, &op) || !r_u(r, 1, &vt) || !r_u(r, 4, &n))
		goto bad;
	/* Only constants and references carry a value type: any other byte
	 * there would load, and then not serialize back to what was read. */
	if (vt && op != URA__G_CONST && op != URA__G_REF && op != URA__G_FIELD)
		goto bad;
	ura_guard_node *d = ura__garena_node(A);
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
				d->u.s = ura__garena_bytes(A, s, len);
			else
				ura__garena_bytes(A, s, len);
			break;
		case URA_T_BYTES:
			if (!r_bytes(r, n, &s))
				goto bad;
			if (d)
				d->u.p = ura__garena_bytes(A, s, n);
			else
				ura__garena_bytes(A, s, n);
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
		const char *name = len ? ura__garena_bytes(A, s, len) : NULL;
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
	struct ura__garena A = { 0 };
	int err = 0;
	des(&r, &A, 0, &err);
	if (err || r.off != n)
		return -EINVAL;
	void *mem = calloc(1, ura__garena_size(&A));
	if (!mem)
		return -ENOMEM;
	ura__garena_place(&A, mem);
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


