/* Snapshots: save a running system to a file without stopping it, and
 * restore it into a new one. The counters are mid-way through their
 * messages at the cut; the restored system finishes them. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <ura.h>

#define A_INC URA_ATOM("inc")
#define A_SHOW URA_ATOM("show")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

typedef struct {
	int64_t n;
} counter;

static void on_inc(ura_ctx *cx, const ura_msg *m)
{
	((counter *)ura_state(cx))->n += ura_arg_i64(m, 0);
}

static void on_show(ura_ctx *cx, const ura_msg *m)
{
	printf("  counter %lld: %lld\n", (long long)ura_arg_i64(m, 0),
	       (long long)((counter *)ura_state(cx))->n);
}

URA_BEHAVIOR(counting, URA_ON(A_INC, "i", on_inc), URA_ON(A_SHOW, "i", on_show));

static const ura_class counter_class = {
	.name = "counter",
	.state_size = sizeof(counter),
	.initial = &counting,
};

/* Without save and load callbacks the state is saved as its bytes: right
 * for a state without pointers, refs or fds. */
static const ura_snap_class counter_snap = { .cls = &counter_class };

/* The done callback runs on the snapshot thread. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int done, status;

static void snapped(void *ud, const ura_snap_info *info)
{
	(void)ud;
	pthread_mutex_lock(&mu);
	status = info->status;
	done = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
}

enum { COUNTERS = 3, INCS = 1000 };

int main(void)
{
	char path[256];
	const char *dir = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/ura-guide-%d.snap", dir ? dir : "/tmp", (int)getpid());

	ura_system *sys;
	ura_ref c[COUNTERS];
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_snap_register(sys, &counter_snap));
	for (int i = 0; i < COUNTERS; i++)
		CHECK(ura_spawn(sys, &counter_class, NULL, &c[i]));
	for (int k = 0; k < INCS; k++)
		for (int i = 0; i < COUNTERS; i++)
			CHECK(ura_send(sys, c[i], A_INC, i + 1));

	/* Returns at once; the workers go on. Each counter's state is cut
	 * before the first message it gets after this call, and the
	 * messages sent before the cut that it has not handled yet are
	 * saved with it. */
	CHECK(ura_snapshot(sys, path, &(ura_snap_opts){ .done = snapped }));
	pthread_mutex_lock(&mu);
	while (!done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	CHECK(status);
	printf("snapshot written\n");
	CHECK(ura_system_await(sys));
	CHECK(ura_system_destroy(sys));

	/* A new system, paused, with the same classes registered. */
	CHECK(ura_system_new(&sys, &(ura_config){ .paused = 1 }));
	CHECK(ura_snap_register(sys, &counter_snap));
	ura_snap_map *map;
	long n = ura_restore(sys, path, &map);
	CHECK(n);
	printf("restored %ld actors\n", n);
	CHECK(ura_system_start(sys));
	/* Whatever the cut caught in the states, the rest was in flight:
	 * the restored counters end where the old ones did. */
	for (int i = 0; i < COUNTERS; i++) {
		ura_ref now = ura_snap_map_ref(map, c[i]); /* old ref -> new */
		CHECK(ura_send(sys, now, A_SHOW, i + 1));
		CHECK(ura_system_await(sys));
	}
	ura_snap_map_free(map);
	CHECK(ura_system_destroy(sys));
	unlink(path);
	return 0;
}
