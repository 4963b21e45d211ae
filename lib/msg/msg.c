/* SPDX-License-Identifier: MIT */
/* Messages: their size and layout, filling them, and the accessors and
 * rendering of received messages. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "msg/msg.h"

uint64_t ura__sig_pack(const char *types, size_t n)
{
	if (n > 7)
		return URA__SIG_LONG;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s |= (uint64_t)(unsigned char)types[i] << (8 * i);
	return s;
}

long ura__msg_size(const ura_value *vals, unsigned n)
{
	if (n > URA_MAX_VALUES || (n && !vals))
		return -EINVAL;
	size_t size = sizeof(struct ura_msg) + n * sizeof(ura_value);
	if (n > 7)
		size += n + 1;
	for (unsigned i = 0; i < n; i++) {
		const ura_value *v = &vals[i];
		switch (v->type) {
		case URA_T_I64: case URA_T_F64: case URA_T_REF: case URA_T_PTR:
			break;
		case URA_T_ATOM:
			/* 0 is allowed as a value ("no atom"); bits no atom has
			 * are not (a bad literal, or an integer passed as
			 * unsigned long long). */
			if (v->u.atom >> 60)
				return -EINVAL;
			break;
		case URA_T_STR: {
			size_t len = v->u.str ? strlen(v->u.str) : 0;
			if (len > URA_MSG_MAX)
				return -EMSGSIZE;
			size += len + 1;
			break;
		}
		case URA_T_BYTES:
			if (v->len > URA_MSG_MAX)
				return -EMSGSIZE;
			if (v->len && !v->u.bytes)
				return -EINVAL;
			size += v->len;
			break;
		default:
			return -EINVAL;
		}
		if (size > URA_MSG_MAX + sizeof(struct ura_msg))
			return -EMSGSIZE;
	}
	return (long)size;
}

void ura__msg_fill(struct ura_msg *m, ura_atom tag, ura_ref from,
		   const ura_value *vals, unsigned n)
{
	atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
	m->tag = tag;
	m->from = from;
	m->to_gen = 0;
	m->req = 0;
	m->n = (uint8_t)n;
	m->kind = URA__MK_PLAIN;
	m->flags = 0;
	char *types = n > 7 ? (char *)&m->vals[n] : NULL;
	char *payload = (char *)&m->vals[n] + (n > 7 ? n + 1 : 0);
	uint64_t sig = 0;
	for (unsigned i = 0; i < n; i++) {
		ura_value v = vals[i];
		if (v.type == URA_T_STR) {
			size_t len = v.u.str ? strlen(v.u.str) : 0;
			memcpy(payload, v.u.str ? v.u.str : "", len + 1);
			v.u.str = payload;
			v.len = (uint32_t)len;
			payload += len + 1;
		} else if (v.type == URA_T_BYTES) {
			if (v.len)
				memcpy(payload, v.u.bytes, v.len);
			v.u.bytes = payload;
			payload += v.len;
		} else {
			v.len = 0;
		}
		m->vals[i] = v;
		if (types)
			types[i] = (char)v.type;
		else
			sig |= (uint64_t)v.type << (8 * i);
	}
	if (types) {
		types[n] = 0;
		sig = URA__SIG_LONG;
	}
	m->sig = sig;
}

/* ---- accessors ---------------------------------------------------------- */

URA_API ura_atom ura_msg_tag(const ura_msg *m) { return m ? m->tag : 0; }
URA_API ura_ref ura_msg_sender(const ura_msg *m)
{
	return m ? ura__msg_sender(m) : URA_NOREF;
}
URA_API unsigned ura_msg_count(const ura_msg *m) { return m ? m->n : 0; }
URA_API const char *ura_msg_types(const ura_msg *m) { return m ? ura__msg_types(m) : ""; }

URA_API ura_value ura_msg_value(const ura_msg *m, unsigned i)
{
	if (!m || i >= m->n) {
		ura_value z;
		memset(&z, 0, sizeof z);
		return z;
	}
	return m->vals[i];
}

static inline const ura_value *arg(const ura_msg *m, unsigned i, uint32_t type)
{
	if (ura__unlikely(!m || i >= m->n || m->vals[i].type != type))
		return NULL;
	return &m->vals[i];
}

URA_API int64_t ura_arg_i64(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_I64); return v ? v->u.i64 : 0; }
URA_API double ura_arg_f64(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_F64); return v ? v->u.f64 : 0.0; }
URA_API ura_atom ura_arg_atom(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_ATOM); return v ? v->u.atom : 0; }
URA_API ura_ref ura_arg_ref(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_REF); return v ? v->u.ref : URA_NOREF; }
URA_API const char *ura_arg_str(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_STR); return v ? v->u.str : NULL; }
URA_API void *ura_arg_ptr(const ura_msg *m, unsigned i)
{ const ura_value *v = arg(m, i, URA_T_PTR); return v ? v->u.ptr : NULL; }

URA_API const void *ura_arg_bytes(const ura_msg *m, unsigned i, size_t *len)
{
	const ura_value *v = arg(m, i, URA_T_BYTES);
	if (len)
		*len = v ? v->len : 0;
	return v ? v->u.bytes : NULL;
}

URA_API int ura_msg_format(const ura_msg *m, char *buf, size_t n)
{
	if (!m)
		return snprintf(buf, n, "(null)");
	char name[URA_ATOM_MAX + 1];
	size_t off = 0;
	int want = 0;
#define OUT(...) do {                                                         \
	int k_ = snprintf(buf ? buf + (off < n ? off : n) : NULL,             \
			  off < n ? n - off : 0, __VA_ARGS__);                \
	if (k_ > 0) { off += (size_t)k_; want += k_; }                        \
} while (0)
	OUT("%s(", ura_atom_name(m->tag, name));
	for (unsigned i = 0; i < m->n; i++) {
		const ura_value *v = &m->vals[i];
		const char *sep = i ? ", " : "";
		switch (v->type) {
		case URA_T_I64: OUT("%s%" PRId64, sep, v->u.i64); break;
		case URA_T_F64: OUT("%s%g", sep, v->u.f64); break;
		case URA_T_ATOM: OUT("%s'%s'", sep, ura_atom_name(v->u.atom, name)); break;
		case URA_T_REF:
			OUT("%s<%" PRIu32 ".%" PRIu32 ">", sep, (uint32_t)v->u.ref.id & URA__REF_INDEX_MASK,
			    (uint32_t)(v->u.ref.id >> 32));
			break;
		case URA_T_STR: OUT("%s\"%.40s%s\"", sep, v->u.str, v->len > 40 ? "..." : ""); break;
		case URA_T_BYTES: OUT("%s<%" PRIu32 " bytes>", sep, v->len); break;
		case URA_T_PTR: OUT("%s%p", sep, v->u.ptr); break;
		}
	}
	OUT(")");
#undef OUT
	return want;
}
