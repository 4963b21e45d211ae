/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched/sched.h"
#include "util/util.h"

static const char *const level_names[] = { "error", "warn", "info", "debug" };

int ura__log_level_from_env(int dflt)
{
	const char *e = getenv("URA_LOG");
	if (!e || !*e)
		return dflt;
	for (int i = 0; i < (int)URA__ARRAY_LEN(level_names); i++)
		if (!strcmp(e, level_names[i]))
			return i;
	return dflt;
}

static void stderr_sink(void *ud, int level, const char *msg)
{
	(void)ud;
	/* One fprintf per line: stdio locks the stream, so lines from
	 * concurrent workers never interleave. */
	fprintf(stderr, "ura: %s%s\n", level <= URA_LOG_WARN ?
		(level == URA_LOG_ERROR ? "error: " : "warning: ") : "", msg);
}

void ura__log(ura_system *sys, int level, const char *fmt, ...)
{
	ura_log_fn *fn = stderr_sink;
	void *ud = NULL;
	int min = ura__log_level_from_env(URA_LOG_WARN);

	if (sys) {
		min = sys->log_level;
		if (sys->log) {
			fn = sys->log;
			ud = sys->log_ud;
			min = URA_LOG_DEBUG; /* a user sink filters for itself */
		}
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

URA_API const char *ura_strerror(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case 0: return "success";
	case ESRCH: return "no such actor (it has stopped, or the ref is stale)";
	case ESHUTDOWN: return "the actor system is shut down";
	case EDEADLK: return "not allowed from a worker thread";
	case EMSGSIZE: return "message too large";
	case EBUSY: return "work was lost: accepted messages were never handled";
	case ETIMEDOUT: return "timed out";
	case EINVAL: return "invalid argument";
	case ENOMEM: return "out of memory";
	default: {
		/* Not strerror(): for codes glibc does not know it formats into
		 * a per-thread buffer that the next call reuses. */
		const char *d = strerrordesc_np(err);
		return d ? d : "unknown error";
	}
	}
}
