/* SPDX-License-Identifier: MIT */
/* Helpers shared by the snapshot tests: wait for a snapshot's report. */
#ifndef URA_SNAP_UTIL_H
#define URA_SNAP_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

struct t_snap {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	ura_snap_info info;      /* strings copied below */
	char error[4096], skipped[4096], path[512];
};

static inline void t_snap_init(struct t_snap *s)
{
	memset(s, 0, sizeof *s);
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
}

static inline void t_snap_done_cb(void *ud, const ura_snap_info *info)
{
	struct t_snap *s = ud;
	pthread_mutex_lock(&s->lock);
	s->info = *info;
	snprintf(s->error, sizeof s->error, "%s", info->error ? info->error : "");
	snprintf(s->skipped, sizeof s->skipped, "%s", info->skipped ? info->skipped : "");
	snprintf(s->path, sizeof s->path, "%s", info->path ? info->path : "");
	s->info.error = s->error;
	s->info.skipped = s->skipped;
	s->info.path = s->path;
	s->done++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

/* Starts a snapshot reporting to s; returns ura_snapshot's result. */
static inline int t_snap_start(ura_system *sys, const char *path, struct t_snap *s, int skip)
{
	pthread_mutex_lock(&s->lock);
	s->done = 0;
	pthread_mutex_unlock(&s->lock);
	ura_snap_opts o = { .done = t_snap_done_cb, .ud = s, .skip_unsupported = skip };
	return ura_snapshot(sys, path, &o);
}

/* Waits (30 s at most) for the report; returns its status, or -ETIMEDOUT. */
static inline int t_snap_wait(struct t_snap *s)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 30;
	pthread_mutex_lock(&s->lock);
	int rc = 0;
	while (!s->done && rc == 0)
		rc = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
	int st = s->done ? s->info.status : -ETIMEDOUT;
	pthread_mutex_unlock(&s->lock);
	return st;
}

/* A fresh directory for this test's files (removed by t_rmdir). */
static inline char *t_tmpdir(void)
{
	static char dir[64];
	snprintf(dir, sizeof dir, "/tmp/ura-snap-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		exit(1);
	}
	return dir;
}

static inline void t_rmdir(const char *dir)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		t_diag("could not remove %s", dir);
}

/* A log sink that keeps the last warning or error, and a check of it (for
 * tests of what a failure says). */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_log[1024];

static inline void sink(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level > URA_LOG_WARN)
		return;
	pthread_mutex_lock(&log_lock);
	snprintf(last_log, sizeof last_log, "%s", msg);
	pthread_mutex_unlock(&log_lock);
}

static inline int logged(const char *what)
{
	pthread_mutex_lock(&log_lock);
	int yes = strstr(last_log, what) != NULL;
	if (!yes)
		t_diag("log: \"%s\", wanted \"%s\"", last_log, what);
	last_log[0] = 0;
	pthread_mutex_unlock(&log_lock);
	return yes;
}

#endif
