/* SPDX-License-Identifier: MIT */
/*
 * Environment variables, all read and validated the same way: unset or
 * empty means "not given" (0); a value that does not parse is logged,
 * naming the variable and what it accepts, and fails with -EINVAL; a good
 * one returns 1 and sets *out.
 */
#ifndef URA_UTIL_ENV_H
#define URA_UTIL_ENV_H

#include "util/log.h"

/* A whole number in [lo, hi]. */
int ura__env_uint(const struct ura__logger *lg, const char *name, unsigned lo,
		  unsigned hi, unsigned *out);
/* 1/0, true/false, yes/no, on/off. */
int ura__env_bool(const struct ura__logger *lg, const char *name, int *out);
/* One of the NULL-terminated words: *out is its index. */
int ura__env_word(const struct ura__logger *lg, const char *name,
		  const char *const *words, unsigned *out);
/* A comma-separated set of the words: bit i of *out for words[i]. */
int ura__env_words(const struct ura__logger *lg, const char *name,
		   const char *const *words, unsigned *out);

#endif
