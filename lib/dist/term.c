/* SPDX-License-Identifier: MIT */
/*
 * The bounds check of the external term format, run over every term a
 * peer sends before libei decodes it: libei's decoders take no buffer
 * length and trust the lengths inside a term, so a hostile term could
 * make them read (or copy) past the frame. Each term must end inside its
 * buffer, nest at most DEPTH_MAX deep, and use only the tags a node
 * without an atom cache may send (erl_ext_dist).
 */
#include <stdint.h>
#include <string.h>

#include "dist/dist.h"

#define DEPTH_MAX 64

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Advances *pos past the term at *pos; -1 if it does not fit or is not a
 * term. `need` reserves bytes and fails when they are not there. */
#define NEED(k)                                                              \
	do {                                                                 \
		if ((size_t)(k) > n - *pos)                                  \
			return -1;                                           \
	} while (0)

static int term(const uint8_t *p, size_t n, size_t *pos, int depth);

static int atom(const uint8_t *p, size_t n, size_t *pos)
{
	NEED(1);
	uint8_t t = p[(*pos)++];
	size_t len;
	switch (t) {
	case 100: /* ATOM_EXT */
	case 118: /* ATOM_UTF8_EXT */
		NEED(2);
		len = (size_t)p[*pos] << 8 | p[*pos + 1];
		*pos += 2;
		break;
	case 115: /* SMALL_ATOM_EXT */
	case 119: /* SMALL_ATOM_UTF8_EXT */
		NEED(1);
		len = p[(*pos)++];
		break;
	default:
		return -1;
	}
	/* libei's atom buffers hold 255 characters of up to 4 bytes. */
	if (len > 255 * 4)
		return -1;
	NEED(len);
	*pos += len;
	return 0;
}

static int terms(const uint8_t *p, size_t n, size_t *pos, uint64_t k, int depth)
{
	/* Every term takes a byte at least: a count past the rest is a lie. */
	if (k > n - *pos)
		return -1;
	for (uint64_t i = 0; i < k; i++)
		if (term(p, n, pos, depth + 1) < 0)
			return -1;
	return 0;
}

static int term(const uint8_t *p, size_t n, size_t *pos, int depth)
{
	if (depth > DEPTH_MAX)
		return -1;
	NEED(1);
	uint8_t t = p[*pos];
	size_t len;
	switch (t) {
	case 100: case 115: case 118: case 119:
		return atom(p, n, pos);
	}
	(*pos)++;
	switch (t) {
	case 97: /* SMALL_INTEGER_EXT */
		NEED(1); *pos += 1; return 0;
	case 98: /* INTEGER_EXT */
		NEED(4); *pos += 4; return 0;
	case 70: /* NEW_FLOAT_EXT */
		NEED(8); *pos += 8; return 0;
	case 99: /* FLOAT_EXT */
		NEED(31); *pos += 31; return 0;
	case 106: /* NIL_EXT */
		return 0;
	case 104: /* SMALL_TUPLE_EXT */
		NEED(1);
		len = p[(*pos)++];
		return terms(p, n, pos, len, depth);
	case 105: /* LARGE_TUPLE_EXT */
		NEED(4);
		len = be32(p + *pos);
		*pos += 4;
		return terms(p, n, pos, len, depth);
	case 107: /* STRING_EXT */
		NEED(2);
		len = (size_t)p[*pos] << 8 | p[*pos + 1];
		*pos += 2;
		NEED(len); *pos += len; return 0;
	case 108: /* LIST_EXT: elements, then the tail */
		NEED(4);
		len = be32(p + *pos);
		*pos += 4;
		return terms(p, n, pos, (uint64_t)len + 1, depth);
	case 109: /* BINARY_EXT */
		NEED(4);
		len = be32(p + *pos);
		*pos += 4;
		NEED(len); *pos += len; return 0;
	case 77: /* BIT_BINARY_EXT */
		NEED(5);
		len = be32(p + *pos);
		*pos += 5;
		NEED(len); *pos += len; return 0;
	case 110: /* SMALL_BIG_EXT */
		NEED(2);
		len = p[*pos];
		*pos += 2;
		NEED(len); *pos += len; return 0;
	case 111: /* LARGE_BIG_EXT */
		NEED(5);
		len = be32(p + *pos);
		*pos += 5;
		NEED(len); *pos += len; return 0;
	case 88: /* NEW_PID_EXT */
		if (atom(p, n, pos) < 0)
			return -1;
		NEED(12); *pos += 12; return 0;
	case 103: /* PID_EXT */
		if (atom(p, n, pos) < 0)
			return -1;
		NEED(9); *pos += 9; return 0;
	case 89: /* NEW_PORT_EXT */
		if (atom(p, n, pos) < 0)
			return -1;
		NEED(8); *pos += 8; return 0;
	case 120: /* V4_PORT_EXT */
		if (atom(p, n, pos) < 0)
			return -1;
		NEED(12); *pos += 12; return 0;
	case 102: /* PORT_EXT */
		if (atom(p, n, pos) < 0)
			return -1;
		NEED(5); *pos += 5; return 0;
	case 90: /* NEWER_REFERENCE_EXT */
	case 114: /* NEW_REFERENCE_EXT */
		NEED(2);
		len = (size_t)p[*pos] << 8 | p[*pos + 1];
		*pos += 2;
		if (len > 5) /* libei's erlang_ref holds five words */
			return -1;
		if (atom(p, n, pos) < 0)
			return -1;
		NEED((t == 90 ? 4 : 1) + 4 * len);
		*pos += (t == 90 ? 4 : 1) + 4 * len;
		return 0;
	case 116: /* MAP_EXT */
		NEED(4);
		len = be32(p + *pos);
		*pos += 4;
		return terms(p, n, pos, 2 * (uint64_t)len, depth);
	case 113: /* EXPORT_EXT: module, function, arity */
		return terms(p, n, pos, 3, depth);
	case 112: /* NEW_FUN_EXT: its size counts itself */
		NEED(4);
		len = be32(p + *pos);
		if (len < 4)
			return -1;
		NEED(len);
		*pos += len;
		return 0;
	default: /* ATOM_CACHE_REF (no cache was agreed), old FUN_EXT, ... */
		return -1;
	}
}

int ura__dist_term_check(const uint8_t *p, size_t n, size_t *pos)
{
	if (*pos >= n || p[*pos] != 131) /* the version magic */
		return -1;
	(*pos)++;
	return term(p, n, pos, 0);
}

int ura__dist_term_check_bare(const uint8_t *p, size_t n, size_t *pos)
{
	return term(p, n, pos, 0);
}
