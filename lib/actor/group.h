/* SPDX-License-Identifier: MIT */
#ifndef URA_GROUP_H
#define URA_GROUP_H

#include <pthread.h>

#include "actor/actor.h"

struct ura_group {
	ura_system *sys;
	pthread_rwlock_t lock;    /* read: fan-out; write: join, leave, prune */
	uint64_t *slots;          /* hash set of ref ids, see group.c */
	uint32_t cap, used, n;    /* slots, non-empty slots, members */
	_Atomic uint32_t dead_seen; /* stopped members met by fan-outs */
	char *name;               /* NULL: anonymous */
	uint64_t id;
	struct ura_group *next;   /* the system's list, under group_lock */
};

#endif
