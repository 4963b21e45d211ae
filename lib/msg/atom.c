/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "util/util.h"

/* Same code as URA__A6, as a table for decoding. Index 0 ends the name. */
static const char alphabet[64] =
	"\0" "0123456789" "ABCDEFGHIJKLMNOPQRSTUVWXYZ" "_" "abcdefghijklmnopqrstuvwxyz";

URA_API const char *ura_atom_name(ura_atom a, char buf[URA_ATOM_MAX + 1])
{
	/* No buffer: a per-thread one, valid until this thread's next call. */
	static _Thread_local char own[URA_ATOM_MAX + 1];
	if (!buf)
		buf = own;
	int n = 0;
	for (int i = 0; i < URA_ATOM_MAX; i++) {
		unsigned c = (unsigned)(a >> (6 * i)) & 63;
		if (!c)
			break;
		buf[n++] = alphabet[c];
	}
	/* Not an atom ura made (a bad character in a literal, or bits no
	 * name has): the name is marked, never passed off as a valid one.
	 * An invalid literal stops at its bad character, so the mark fits. */
	if (a >> 60 && n < URA_ATOM_MAX)
		buf[n++] = '?';
	buf[n] = 0;
	return buf;
}

URA_API int ura_atom_from(const char *name, ura_atom *out)
{
	if (!name || !out)
		return -EINVAL;
	size_t len = strlen(name);
	if (len == 0 || len > URA_ATOM_MAX)
		return -EINVAL;
	ura_atom a = 0;
	for (size_t i = 0; i < len; i++) {
		const char *p = memchr(alphabet + 1, name[i], 63);
		if (!p)
			return -EINVAL;
		a |= (ura_atom)(p - alphabet) << (6 * i);
	}
	*out = a;
	return 0;
}
