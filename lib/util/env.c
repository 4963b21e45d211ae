/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/env.h"

static const char *value(const char *name)
{
	const char *e = getenv(name);
	return e && *e ? e : NULL;
}

int ura__env_uint(const struct ura__logger *lg, const char *name, unsigned lo,
		  unsigned hi, unsigned *out)
{
	const char *e = value(name);
	if (!e)
		return 0;
	char *end;
	errno = 0;
	unsigned long v = strtoul(e, &end, 10);
	/* strtoul takes "-1" and " 5" as numbers: neither is one here. */
	if (errno || *end || e[0] < '0' || e[0] > '9' || v < lo || v > hi) {
		ura__log(lg, URA_LOG_ERROR, "%s=%s: expected a whole number from %u to %u",
			 name, e, lo, hi);
		return -EINVAL;
	}
	*out = (unsigned)v;
	return 1;
}

static void list_words(char *buf, size_t n, const char *const *words, const char *sep)
{
	size_t off = 0;
	buf[0] = 0;
	for (unsigned i = 0; words[i] && off < n; i++) {
		int k = snprintf(buf + off, n - off, "%s%s", i ? sep : "", words[i]);
		if (k < 0)
			break;
		off += (size_t)k;
	}
}

static int find(const char *const *words, const char *s, size_t len)
{
	for (int i = 0; words[i]; i++)
		if (strlen(words[i]) == len && !memcmp(words[i], s, len))
			return i;
	return -1;
}

int ura__env_word(const struct ura__logger *lg, const char *name,
		  const char *const *words, unsigned *out)
{
	const char *e = value(name);
	if (!e)
		return 0;
	int i = find(words, e, strlen(e));
	if (i < 0) {
		char list[200];
		list_words(list, sizeof list, words, "|");
		ura__log(lg, URA_LOG_ERROR, "%s=%s: expected one of %s", name, e, list);
		return -EINVAL;
	}
	*out = (unsigned)i;
	return 1;
}

int ura__env_bool(const struct ura__logger *lg, const char *name, int *out)
{
	static const char *const words[] = { "0", "1", "false", "true", "no", "yes",
					     "off", "on", NULL };
	unsigned i;
	int rc = ura__env_word(lg, name, words, &i);
	if (rc > 0)
		*out = (int)(i & 1);
	return rc;
}

int ura__env_words(const struct ura__logger *lg, const char *name,
		   const char *const *words, unsigned *out)
{
	const char *e = value(name);
	if (!e)
		return 0;
	unsigned set = 0;
	for (const char *p = e;;) {
		size_t len = strcspn(p, ",");
		int i = find(words, p, len);
		if (i < 0) {
			char list[200];
			list_words(list, sizeof list, words, ",");
			ura__log(lg, URA_LOG_ERROR, "%s=%s: expected a comma-separated list of %s",
				 name, e, list);
			return -EINVAL;
		}
		set |= 1u << i;
		if (!p[len])
			break;
		p += len + 1;
	}
	*out = set;
	return 1;
}
