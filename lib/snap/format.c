/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "snap/format.h"

int ura__b_grow(struct ura__bytes *b, size_t more)
{
	if (b->err)
		return b->err;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->n < more) {
		if (cap > SIZE_MAX / 2) {
			b->err = -ENOMEM;
			return b->err;
		}
		cap *= 2;
	}
	unsigned char *p = ura__realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return b->err;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void ura__b_free(struct ura__bytes *b)
{
	free(b->p);
	memset(b, 0, sizeof *b);
}

const void *ura__rd_take(struct ura__rd *r, size_t n)
{
	if (r->err || n > r->n - r->off) {
		r->err = -EINVAL;
		return NULL;
	}
	const void *p = r->p + r->off;
	r->off += n;
	return p;
}

/* ---- CRC32C (Castagnoli, reflected 0x82f63b78), slicing by 8 ---------- */

static uint32_t crc_tab[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static int crc_hw_ok;

#if defined(__x86_64__)
/* SSE4.2's crc32 computes CRC32C itself: ~10x the tables' speed, which
 * matters for a snapshot holding a million messages. */
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
	uint64_t c = crc;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *p++);
	return (uint32_t)c;
}
#endif

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_tab[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xff];
#if defined(__x86_64__)
	crc_hw_ok = __builtin_cpu_supports("sse4.2");
#endif
}

/* crc: 0 to start; feed the previous result to continue. */
uint32_t ura__crc32c(uint32_t crc, const void *buf, size_t n)
{
	pthread_once(&crc_once, crc_init);
	const unsigned char *p = buf;
	crc = ~crc;
#if defined(__x86_64__)
	if (crc_hw_ok)
		return ~crc_hw(crc, p, n);
#endif
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		v ^= crc;
		crc = crc_tab[7][v & 0xff] ^ crc_tab[6][(v >> 8) & 0xff] ^
		      crc_tab[5][(v >> 16) & 0xff] ^ crc_tab[4][(v >> 24) & 0xff] ^
		      crc_tab[3][(v >> 32) & 0xff] ^ crc_tab[2][(v >> 40) & 0xff] ^
		      crc_tab[1][(v >> 48) & 0xff] ^ crc_tab[0][v >> 56];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ crc_tab[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

/* ---- u64 map -------------------------------------------------------- */

static inline size_t hash64(uint64_t k, size_t mask)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 32) & mask;
}

int ura__map_put(struct ura__map *m, uint64_t k, uint64_t v)
{
	if (!k) /* the empty slot's key: it would vanish and corrupt n */
		return -EINVAL;
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		uint64_t *nk = ura__calloc(cap, sizeof *nk), *nv = ura__calloc(cap, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->k[i])
				continue;
			size_t h = hash64(m->k[i], cap - 1);
			while (nk[h])
				h = (h + 1) & (cap - 1);
			nk[h] = m->k[i];
			nv[h] = m->v[i];
		}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = cap;
	}
	size_t h = hash64(k, m->cap - 1);
	while (m->k[h] && m->k[h] != k)
		h = (h + 1) & (m->cap - 1);
	if (!m->k[h])
		m->n++;
	m->k[h] = k;
	m->v[h] = v;
	return 0;
}

int ura__map_get(const struct ura__map *m, uint64_t k, uint64_t *v)
{
	if (!m->cap || !k)
		return 0;
	size_t h = hash64(k, m->cap - 1);
	while (m->k[h]) {
		if (m->k[h] == k) {
			if (v)
				*v = m->v[h];
			return 1;
		}
		h = (h + 1) & (m->cap - 1);
	}
	return 0;
}

void ura__map_free(struct ura__map *m)
{
	free(m->k);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* ---- values and messages -------------------------------------------- */

void ura__snap_put_value(struct ura__bytes *b, const ura_value *v)
{
	ura__b_u8(b, (uint8_t)v->type);
	switch (v->type) {
	case URA_T_I64: case URA_T_F64: case URA_T_ATOM: case URA_T_REF:
		ura__b_put(b, &v->u, 8);
		break;
	case URA_T_STR:
		ura__b_u32(b, v->len);
		ura__b_put(b, v->u.str, (size_t)v->len + 1); /* with its NUL */
		break;
	case URA_T_BYTES:
		ura__b_u32(b, v->len);
		ura__b_put(b, v->u.bytes, v->len);
		break;
	default: /* pointers are refused before we get here */
		break;
	}
}

int ura__snap_get_value(struct ura__rd *r, ura_value *v)
{
	memset(v, 0, sizeof *v);
	v->type = ura__rd_u8(r);
	switch (v->type) {
	case URA_T_I64: case URA_T_F64: case URA_T_ATOM: case URA_T_REF: {
		const void *p = ura__rd_take(r, 8);
		if (p)
			memcpy(&v->u, p, 8);
		break;
	}
	case URA_T_STR: {
		uint32_t len = ura__rd_u32(r);
		const char *s = len < URA_MSG_MAX ? ura__rd_take(r, (size_t)len + 1) : NULL;
		/* One NUL, at the end: a string never holds one (strlen). */
		if (!s || s[len] || memchr(s, 0, len))
			return -EINVAL;
		v->len = len;
		v->u.str = s;
		break;
	}
	case URA_T_BYTES: {
		uint32_t len = ura__rd_u32(r);
		const void *p = len <= URA_MSG_MAX ? ura__rd_take(r, len) : NULL;
		if (!p && len)
			return -EINVAL;
		v->len = len;
		v->u.bytes = p;
		break;
	}
	default:
		return -EINVAL;
	}
	return r->err;
}

unsigned ura__msg_ptr_at(const struct ura_msg *m)
{
	for (unsigned i = 0; i < m->n; i++)
		if (m->vals[i].type == URA_T_PTR)
			return i + 1;
	return 0;
}

size_t ura__snap_msg_len(const struct ura_msg *m)
{
	size_t n = 24;
	for (unsigned i = 0; i < m->n; i++) {
		const ura_value *v = &m->vals[i];
		n += 1;
		switch (v->type) {
		case URA_T_I64: case URA_T_F64: case URA_T_ATOM: case URA_T_REF:
			n += 8;
			break;
		case URA_T_STR:
			n += 4 + (size_t)v->len + 1;
			break;
		case URA_T_BYTES:
			n += 4 + (size_t)v->len;
			break;
		default:
			break;
		}
	}
	return n;
}

/* The one encoder of a message (ura__snap_put_value's encoding of each
 * value): exactly ura__snap_msg_len(m) bytes at p. */
unsigned char *ura__snap_put_msg_raw(unsigned char *p, const struct ura_msg *m)
{
	uint64_t u64;
	uint32_t u32;
	u64 = m->tag;
	memcpy(p, &u64, 8);
	u64 = m->from.id;
	memcpy(p + 8, &u64, 8);
	p[16] = m->kind;
	p[17] = m->n;
	p[18] = p[19] = 0;
	/* A mailbox-wait stamp (core/metrics.h) is this run's clock: not saved. */
	u32 = m->flags & URA__MF_WAIT ? 0 : m->req;
	memcpy(p + 20, &u32, 4);
	p += 24;
	for (unsigned i = 0; i < m->n; i++) {
		const ura_value *v = &m->vals[i];
		*p++ = (uint8_t)v->type;
		switch (v->type) {
		case URA_T_I64: case URA_T_F64: case URA_T_ATOM: case URA_T_REF:
			memcpy(p, &v->u, 8);
			p += 8;
			break;
		case URA_T_STR:
			u32 = v->len;
			memcpy(p, &u32, 4);
			memcpy(p + 4, v->u.str, (size_t)v->len + 1); /* with its NUL */
			p += 4 + (size_t)v->len + 1;
			break;
		case URA_T_BYTES:
			u32 = v->len;
			memcpy(p, &u32, 4);
			if (v->len)
				memcpy(p + 4, v->u.bytes, v->len);
			p += 4 + (size_t)v->len;
			break;
		default: /* pointers are refused before we get here */
			break;
		}
	}
	return p;
}

void ura__snap_put_msg(struct ura__bytes *b, const struct ura_msg *m)
{
	size_t n = ura__snap_msg_len(m);
	if (b->cap - b->n < n && ura__b_grow(b, n) < 0)
		return;
	ura__snap_put_msg_raw(b->p + b->n, m);
	b->n += n;
}

int ura__snap_get_msg(struct ura__rd *r, struct ura__smsg *out)
{
	out->tag = ura__rd_u64(r);
	out->from = ura__rd_u64(r);
	out->kind = ura__rd_u8(r);
	out->n = ura__rd_u8(r);
	(void)ura__rd_u16(r);
	out->req = ura__rd_u32(r);
	if (r->err || !out->tag || out->n > URA_MAX_VALUES ||
	    (out->kind != URA__MK_PLAIN && out->kind != URA__MK_REQUEST &&
	     out->kind != URA__MK_RESPONSE))
		return -EINVAL;
	for (unsigned i = 0; i < out->n; i++)
		if (ura__snap_get_value(r, &out->vals[i]) < 0)
			return -EINVAL;
	return ura__msg_size(out->vals, out->n) < 0 ? -EINVAL : 0;
}
