/* SPDX-License-Identifier: MIT */
/*
 * Logging and error texts. A logger is a value the caller owns (the
 * system embeds one), so nothing here knows what a system is.
 */
#ifndef URA_UTIL_LOG_H
#define URA_UTIL_LOG_H

#include "ura.h"

struct ura__logger {
	ura_log_fn *fn;  /* NULL: stderr, "ura: " in front */
	void *ud;
	int level;       /* least important level printed (URA_LOG_*) */
};

/* Formats one line and hands it to lg's sink if lg prints that level.
 * lg NULL: stderr at the level URA_LOG asks for (default warn). A user
 * sink gets every level: it filters for itself. Any thread. */
void ura__log(const struct ura__logger *lg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
