/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

/* The level URA_LOG asks for, for messages that no system's logger
 * carries (a system validates URA_LOG itself and refuses a bad one). */
static int env_level(void)
{
	const char *e = getenv("URA_LOG");
	for (int i = 0; e && i < (int)URA__ARRAY_LEN(level_names); i++)
		if (!strcmp(e, level_names[i]))
			return URA_LOG_ERROR + i;
	return URA_LOG_WARN;
}

static void stderr_sink(void *ud, int level, const char *msg)
{
	(void)ud;
	/* One fprintf per line: stdio locks the stream, so lines from
	 * concurrent workers never interleave. */
	fprintf(stderr, "ura: %s%s\n", level <= URA_LOG_WARN ?
		(level == URA_LOG_ERROR ? "error: " : "warning: ") : "", msg);
}

void ura__log(const struct ura__logger *lg, int level, const char *fmt, ...)
{
	ura_log_fn *fn = stderr_sink;
	void *ud = NULL;
	int min = lg ? lg->level : env_level();
	if (lg && lg->fn) {
		fn = lg->fn;
		ud = lg->ud;
		min = URA_LOG_DEBUG; /* a user sink filters for itself */
	}
	if (level > min)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fn(ud, level, buf);
}
