/* SPDX-License-Identifier: MIT */
/*
 * The symbol table of fuzz_guard, shared with gen_seeds.c so that the
 * seeds' names resolve. Each entry has its own address: serialization
 * names a variable or function by the first entry with its address, so
 * two entries for one address would not round-trip.
 */
#ifndef FUZZ_GUARD_SYMS_H
#define FUZZ_GUARD_SYMS_H

#include <stdint.h>

#include <ura.h>

static _Bool v_flag = 1;
static int v_i32 = -7;
static unsigned v_u32 = 4000000000u;
static long long v_i64 = INT64_MIN;
static unsigned long long v_u64 = UINT64_MAX;
static double v_f64 = -0.0;
static const char *v_str = "hello";
static const char *v_null; /* a NULL string: a guard reading it fails */

/* Functions see whatever values the guard passes: they check types, as a
 * real one must. */
static ura_value f_len(const ura_value *a, unsigned n)
{
	if (n < 1 || (a[0].type != URA_T_STR && a[0].type != URA_T_BYTES))
		return (ura_value){ 0 };
	return ura_v_i64(a[0].len);
}

static ura_value f_sum(const ura_value *a, unsigned n)
{
	uint64_t s = 0; /* unsigned: wraps instead of overflowing */
	for (unsigned i = 0; i < n; i++)
		if (a[i].type == URA_T_I64)
			s += (uint64_t)a[i].u.i64;
	return ura_v_i64((int64_t)s);
}

static ura_value f_none(const ura_value *a, unsigned n)
{
	(void)a;
	(void)n;
	return (ura_value){ 0 };
}

static ura_value f_word(const ura_value *a, unsigned n)
{
	(void)a;
	return n ? ura_v_str("word") : ura_v_f64(0.25);
}

static const ura_guard_sym syms[] = {
	URA_GSYM_REF("flag", &v_flag),
	URA_GSYM_REF("i32", &v_i32),
	URA_GSYM_REF("u32", &v_u32),
	URA_GSYM_REF("i64", &v_i64),
	URA_GSYM_REF("u64", &v_u64),
	URA_GSYM_REF("f64", &v_f64),
	URA_GSYM_REF("str", &v_str),
	URA_GSYM_REF("null", &v_null),
	URA_GSYM_FN("len", f_len),
	URA_GSYM_FN("sum", f_sum),
	URA_GSYM_FN("none", f_none),
	URA_GSYM_FN("word", f_word),
};
#define NSYMS (sizeof syms / sizeof syms[0])

#endif
