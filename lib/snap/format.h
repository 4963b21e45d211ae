/* SPDX-License-Identifier: MIT */
/*
 * The snapshot file's pieces (FORMAT.md): record types, little-endian
 * encoding into byte strings, bounds-checked decoding, CRC32C, and a small
 * u64 -> u64 map (old refs to new ones). Shared by the writers (capture.c,
 * thread.c) and the reader (restore.c).
 */
#ifndef URA_SNAP_FORMAT_H
#define URA_SNAP_FORMAT_H

#include <string.h>

#include "snap/snap.h"

#define URA__SNAP_MAGIC "URASNAP"   /* 7 chars + NUL = 8 bytes */
#define URA__SNAP_VERSION 1u
#define URA__SNAP_HDR 64u
#define URA__SNAP_TRAILER 8u
#define URA__SNAP_END 0x21444e45u   /* "END!" little-endian */
/* The most a record, or an actor's saved state, may hold: their lengths
 * are 32 bits in the file. */
#define URA__SNAP_LEN_MAX ((size_t)UINT32_MAX)

enum {
	URA__REC_CLASS = 1,
	URA__REC_ACTOR = 2,
	URA__REC_GROUP = 3,
	URA__REC_MSG = 4,
	/* Only in the workers' buffers, never in a file: */
	URA__REC_FAIL = 100, /* text: why the snapshot fails */
	URA__REC_SKIP = 101, /* text: what was left out */
};

/* Actor record flags. */
enum {
	URA__AF_RT = 1,    /* a receive timeout was pending */
	URA__AF_BOUND = 2, /* a bound value follows */
};

/* Tags of typed values written by ura_snap_put_ref & co. */
enum { URA__ST_REF = 'R', URA__ST_TIMER = 'T', URA__ST_GROUP = 'G' };

int ura__b_grow(struct ura__bytes *b, size_t more);
static inline void ura__b_put(struct ura__bytes *b, const void *p, size_t n)
{
	if (b->cap - b->n < n && ura__b_grow(b, n) < 0)
		return;
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}
static inline void ura__b_u8(struct ura__bytes *b, uint8_t v) { ura__b_put(b, &v, 1); }
static inline void ura__b_u16(struct ura__bytes *b, uint16_t v) { ura__b_put(b, &v, 2); }
static inline void ura__b_u32(struct ura__bytes *b, uint32_t v) { ura__b_put(b, &v, 4); }
static inline void ura__b_u64(struct ura__bytes *b, uint64_t v) { ura__b_put(b, &v, 8); }
/* Overwrites a u32 written earlier at offset off (a length). */
static inline void ura__b_patch32(struct ura__bytes *b, size_t off, uint32_t v)
{
	if (!b->err && off + 4 <= b->n)
		memcpy(b->p + off, &v, 4);
}
void ura__b_free(struct ura__bytes *b);

/* Decoding: every read is bounds-checked; the first short read sets err
 * (-EINVAL) and later reads return zeros. */
struct ura__rd {
	const unsigned char *p;
	size_t n, off;
	int err;
};
const void *ura__rd_take(struct ura__rd *r, size_t n);
static inline uint64_t ura__rd_uN(struct ura__rd *r, size_t n)
{
	uint64_t v = 0;
	const void *p = ura__rd_take(r, n);
	if (p)
		memcpy(&v, p, n);
	return v;
}
#define ura__rd_u8(r) ((uint8_t)ura__rd_uN((r), 1))
#define ura__rd_u16(r) ((uint16_t)ura__rd_uN((r), 2))
#define ura__rd_u32(r) ((uint32_t)ura__rd_uN((r), 4))
#define ura__rd_u64(r) ura__rd_uN((r), 8)

uint32_t ura__crc32c(uint32_t crc, const void *p, size_t n);

/* Open addressing, keys != 0 (a put of 0 is -EINVAL). */
struct ura__map {
	uint64_t *k, *v;
	size_t cap, n;
};
int ura__map_put(struct ura__map *m, uint64_t k, uint64_t v);
int ura__map_get(const struct ura__map *m, uint64_t k, uint64_t *v);
void ura__map_free(struct ura__map *m);

/* A message's tag, sender, kind, request id and values (FORMAT.md). */
void ura__snap_put_msg(struct ura__bytes *b, const struct ura_msg *m);
/* The same encoding straight into memory the caller sized: _len bytes,
 * _raw writes them at p and returns p + _len (no pointer values). */
size_t ura__snap_msg_len(const struct ura_msg *m);
unsigned char *ura__snap_put_msg_raw(unsigned char *p, const struct ura_msg *m);
/* Index + 1 of the first opaque pointer among m's values, else 0. */
unsigned ura__msg_ptr_at(const struct ura_msg *m);
/* Decodes a message into vals (strings and bytes point into the file);
 * -EINVAL on a malformed one. */
struct ura__smsg {
	ura_atom tag;
	uint64_t from;
	uint8_t kind, n;
	uint32_t req;
	ura_value vals[URA_MAX_VALUES];
};
int ura__snap_get_msg(struct ura__rd *r, struct ura__smsg *out);
void ura__snap_put_value(struct ura__bytes *b, const ura_value *v);
int ura__snap_get_value(struct ura__rd *r, ura_value *v);

#endif
