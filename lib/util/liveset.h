/* SPDX-License-Identifier: MIT */
/*
 * A set of live objects by address (util/liveset.c): what ura hands out
 * and a caller frees, so that a second free (ura_system_destroy twice,
 * ura_group_free twice) is told apart from the first without touching
 * freed memory. A small locked hash set; the calls are not hot.
 */
#ifndef URA_UTIL_LIVESET_H
#define URA_UTIL_LIVESET_H

#include <pthread.h>
#include <stddef.h>

struct ura__liveset {
	pthread_mutex_t lock;
	const void **slot;      /* open addressing; NULL empty, TOMB deleted */
	size_t cap, used, n;
};

#define URA__LIVESET_INIT { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, 0 }

/* 0, or -ENOMEM (then p is not in the set). */
int ura__live_add(struct ura__liveset *s, const void *p);
/* 0 when p was in the set (and is no more), -ENOENT when it was not. */
int ura__live_del(struct ura__liveset *s, const void *p);

#endif
