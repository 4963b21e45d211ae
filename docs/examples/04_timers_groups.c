/* Time and groups: a ticker driven by delayed sends, a timer cancelled,
 * a receive timeout, and one send reaching every member of a group. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_START URA_ATOM("start")
#define A_TICK URA_ATOM("tick")
#define A_NEVER URA_ATOM("never")
#define A_NEWS URA_ATOM("news")
#define A_PING URA_ATOM("ping")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* ---- a ticker: three ticks 10 ms apart ------------------------------------ */

typedef struct {
	int ticks;
} ticker;

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	/* A timer armed and cancelled: the message is never delivered. */
	ura_timer t = ura_send_after(cx, ura_self(cx), URA_SEC, A_NEVER);
	printf("cancel: %s\n", ura_cancel(ura_ctx_system(cx), t) == 0 ? "done" : "too late");
	ura_send_after(cx, ura_self(cx), 10 * URA_MSEC, A_TICK);
}

static void on_tick(ura_ctx *cx, const ura_msg *m)
{
	ticker *t = ura_state(cx);
	(void)m;
	printf("tick %d\n", ++t->ticks);
	if (t->ticks < 3)
		ura_send_after(cx, ura_self(cx), 10 * URA_MSEC, A_TICK);
	else
		ura_stop(cx); /* a timer still pending would be cancelled */
}

static void on_never(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	printf("the cancelled timer fired!\n");
}

URA_BEHAVIOR(ticking,
	URA_ON(A_START, "", on_start),
	URA_ON(A_TICK, "", on_tick),
	URA_ON(A_NEVER, "", on_never));

static const ura_class ticker_class = {
	.name = "ticker",
	.state_size = sizeof(ticker),
	.initial = &ticking,
};

/* ---- a receive timeout: 30 ms without a message ----------------------------- */

static void on_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	printf("ping\n");
}

static void on_quiet(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	printf("nothing for 30 ms after the ping: stopping\n");
	ura_stop(cx);
}

URA_BEHAVIOR_OPTS(waiting, (.timeout_ns = 30 * URA_MSEC, .on_timeout = on_quiet),
	URA_ON(A_PING, "", on_ping));

static const ura_class waiter_class = { .name = "waiter", .initial = &waiting };

/* ---- a group of listeners ---------------------------------------------------- */

enum { LISTENERS = 3 };
static atomic_int heard[LISTENERS];

static void on_news(ura_ctx *cx, const ura_msg *m)
{
	int *idx = ura_state(cx);
	(void)m;
	atomic_fetch_add(&heard[*idx], 1);
}

URA_BEHAVIOR(listening, URA_ON(A_NEWS, "s", on_news));

/* Without init, the spawn argument is copied into the state. */
static const ura_class listener_class = {
	.name = "listener",
	.state_size = sizeof(int),
	.initial = &listening,
};

int main(void)
{
	ura_system *sys;
	ura_ref r;
	CHECK(ura_system_new(&sys, NULL));

	CHECK(ura_spawn(sys, &ticker_class, NULL, &r));
	CHECK(ura_send(sys, r, A_START));
	CHECK(ura_system_await(sys)); /* pending timers keep it busy */

	CHECK(ura_spawn(sys, &waiter_class, NULL, &r));
	CHECK(ura_send(sys, r, A_PING));
	CHECK(ura_system_await(sys));

	ura_group *news;
	CHECK(ura_group_named(sys, "news", &news));
	for (int i = 0; i < LISTENERS; i++) {
		/* .group joins it before the actor can miss a message */
		CHECK(ura_spawn_ex(sys, &listener_class, &i,
				   &(ura_spawn_opts){ .group = news }, &r));
	}
	long reached = ura_send_group(sys, news, A_NEWS, "ura 0.3");
	CHECK(reached);
	CHECK(ura_system_await(sys));
	printf("the news reached %ld listeners:", reached);
	for (int i = 0; i < LISTENERS; i++)
		printf(" %d", atomic_load(&heard[i]));
	printf("\n");

	CHECK(ura_system_destroy(sys)); /* frees the group too */
	return 0;
}
