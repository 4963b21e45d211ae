/* Behaviors and guards: a turnstile that is `locked` or `unlocked`, and
 * switches between the two with ura_become. */
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_COIN URA_ATOM("coin")
#define A_PUSH URA_ATOM("push")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

typedef struct {
	int passed;
} turnstile;

/* Each behavior names the other, so one is declared ahead. */
URA_BEHAVIOR_DECL(unlocked);

static void too_small(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("locked: %lld cents is too small\n", (long long)ura_arg_i64(m, 0));
}

static void pay(ura_ctx *cx, const ura_msg *m)
{
	printf("locked: %lld cents, unlocked\n", (long long)ura_arg_i64(m, 0));
	ura_become(cx, &unlocked); /* from the next message on */
}

static void refuse(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	printf("locked: push refused\n");
}

/* Cases are tried in order; a guard (ura/guard.h) is data that ura
 * checks and evaluates: here "the first value is at least 50". */
URA_BEHAVIOR(locked,
	URA_ON(A_COIN, "i", pay, URA_WHEN(URA_G_GE(URA_X(1), URA_GI(50)))),
	URA_ON(A_COIN, "i", too_small),
	URA_ON(A_PUSH, "", refuse));

static void give_back(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("unlocked: %lld cents returned\n", (long long)ura_arg_i64(m, 0));
}

static void pass(ura_ctx *cx, const ura_msg *m)
{
	turnstile *t = ura_state(cx);
	(void)m;
	t->passed++;
	printf("unlocked: push, locked again (%d passed)\n", t->passed);
	ura_become(cx, &locked);
}

URA_BEHAVIOR(unlocked,
	URA_ON(A_COIN, "i", give_back),
	URA_ON(A_PUSH, "", pass));

static const ura_class turnstile_class = {
	.name = "turnstile",
	.state_size = sizeof(turnstile),
	.initial = &locked,
};

int main(void)
{
	/* A spawn or become checks a static behavior, guards included, the
	 * first time it meets one; checking here says what is wrong before
	 * anything runs (a guard on a value the case lacks: -EINVAL). */
	CHECK(ura_behavior_check(&locked));
	CHECK(ura_behavior_check(&unlocked));

	ura_system *sys;
	ura_ref t;
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_spawn(sys, &turnstile_class, NULL, &t));

	/* One sender's messages to one actor arrive in the order sent. */
	CHECK(ura_send(sys, t, A_COIN, 20));
	CHECK(ura_send(sys, t, A_PUSH));
	CHECK(ura_send(sys, t, A_COIN, 50));
	CHECK(ura_send(sys, t, A_COIN, 100));
	CHECK(ura_send(sys, t, A_PUSH));
	CHECK(ura_send(sys, t, A_PUSH));
	/* No case takes a string: the message is dropped and counted. */
	CHECK(ura_send(sys, t, A_COIN, "a button"));
	CHECK(ura_system_await(sys));

	ura_stats st;
	CHECK(ura_system_stats(sys, &st));
	printf("unmatched messages: %llu\n", (unsigned long long)st.unmatched);
	CHECK(ura_system_destroy(sys));
	return 0;
}
