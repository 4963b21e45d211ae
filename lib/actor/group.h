/* SPDX-License-Identifier: MIT */
/* Groups: a set of actor refs a send reaches as a whole (actor/group.c). */
#ifndef URA_ACTOR_GROUP_H
#define URA_ACTOR_GROUP_H

#include <pthread.h>

#include "core/core.h"

struct ura_group {
	ura_system *sys;
	pthread_rwlock_t lock;    /* read: fan-out; write: join, leave, prune */
	uint64_t *slots;          /* hash set of ref ids, see group.c */
	uint32_t cap, used, n;    /* slots, non-empty slots, members */
	_Atomic uint32_t dead_seen; /* stopped members met by fan-outs */
	char *name;               /* NULL: anonymous */
	uint64_t id;
	struct ura_group *next;   /* the system's list, under its lock */
};

/* The system's groups (actor/group.c). */
struct ura__groups {
	pthread_mutex_t lock;     /* the list and ids */
	struct ura_group *list;
	uint64_t ids;             /* a group's id in snapshots */
};

int ura__groups_init(ura_system *sys);
/* Frees every group (system destroy). */
void ura__groups_fini(ura_system *sys);

#endif
