/* Requests: a calculator answers at once, later (a promise), with an
 * error, never (a deadline ends it), or by crashing; each request ends
 * exactly once, in the requester's continuation. */
#include <stdio.h>
#include <stdlib.h>
#include <ura.h>

#define A_DIV URA_ATOM("div")
#define A_LATER URA_ATOM("later")
#define A_HOLD URA_ATOM("hold")
#define A_RELEASE URA_ATOM("release")
#define A_CRASH URA_ATOM("crash")
#define A_READY URA_ATOM("ready")
#define A_OK URA_ATOM("ok")
#define A_DIVZERO URA_ATOM("divzero")
#define A_TOOLATE URA_ATOM("toolate")
#define A_GO URA_ATOM("go")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* ---- the calculator ---------------------------------------------------- */

typedef struct {
	ura_promise later, held; /* answers taken to give later */
	int64_t value;
} calc;

static void on_div(ura_ctx *cx, const ura_msg *m)
{
	int64_t a = ura_arg_i64(m, 0), b = ura_arg_i64(m, 1);
	if (b == 0)
		ura_reply_error(cx, A_DIVZERO, ura_v_i64(a));
	else
		ura_reply(cx, A_OK, a / b);
}

/* Takes the request and answers it from another handler. */
static void on_later(ura_ctx *cx, const ura_msg *m)
{
	calc *c = ura_state(cx);
	c->value = ura_arg_i64(m, 0);
	ura_promise_take(cx, &c->later);
	ura_send_after(cx, ura_self(cx), 5 * URA_MSEC, A_READY);
}

static void on_ready(ura_ctx *cx, const ura_msg *m)
{
	calc *c = ura_state(cx);
	(void)m;
	ura_promise_reply(cx, &c->later, A_OK, c->value * 2);
}

static void on_hold(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_promise_take(cx, &((calc *)ura_state(cx))->held);
}

static void on_release(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	/* The requester's deadline passed already: this answer is dropped. */
	ura_promise_fail(cx, &((calc *)ura_state(cx))->held, A_TOOLATE, URA_NOVALUE);
}

static void on_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_CRASH, ura_v_str("asked to"));
}

URA_BEHAVIOR(calculating,
	URA_ON(A_DIV, "ii", on_div),
	URA_ON(A_LATER, "i", on_later),
	URA_ON(A_READY, "", on_ready),
	URA_ON(A_HOLD, "", on_hold),
	URA_ON(A_RELEASE, "", on_release),
	URA_ON(A_CRASH, "", on_crash));

static const ura_class calc_class = {
	.name = "calc",
	.state_size = sizeof(calc),
	.initial = &calculating,
};

/* ---- the client ---------------------------------------------------------- */

typedef struct {
	ura_ref calc;
	int step;
} client;

static void next_step(ura_ctx *cx);

static void answered(ura_ctx *cx, const ura_msg *m)
{
	const char *what = ura_request_data(cx);
	char reason[URA_ATOM_MAX + 1];
	if (ura_msg_tag(m) == URA_ERROR) {
		ura_value v = ura_exit_value(m);
		printf("%s: error %s", what, ura_atom_name(ura_exit_reason(m), reason));
		if (v.type == URA_T_I64)
			printf(" (%lld)", (long long)v.u.i64);
		if (v.type == URA_T_STR)
			printf(" (\"%s\")", v.u.str);
		printf("\n");
	} else if (ura_msg_tag(m) == URA_TIMEOUT) {
		printf("%s: no answer within 20 ms\n", what);
	} else {
		printf("%s = %lld\n", what, (long long)ura_arg_i64(m, 0));
	}
	next_step(cx);
}

/* One request at a time, each sent from the last one's continuation. */
static void next_step(ura_ctx *cx)
{
	client *c = ura_state(cx);
	switch (c->step++) {
	case 0:
		ura_request(cx, c->calc, answered, "84 / 2", A_DIV, 84, 2);
		break;
	case 1:
		ura_request(cx, c->calc, answered, "1 / 0", A_DIV, 1, 0);
		break;
	case 2:
		ura_request(cx, c->calc, answered, "later(21)", A_LATER, 21);
		break;
	case 3:
		ura_request_for(cx, c->calc, 20 * URA_MSEC, answered, "hold", A_HOLD);
		break;
	case 4:
		ura_send(cx, c->calc, A_RELEASE);
		ura_request(cx, c->calc, answered, "crash", A_CRASH);
		break;
	default: {
		/* A target that is gone fails the call itself; cont never runs. */
		int rc = ura_request(cx, c->calc, answered, "7 / 7", A_DIV, 7, 7);
		printf("7 / 7: %s\n", ura_strerror(rc));
		ura_stop(cx);
	}
	}
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	((client *)ura_state(cx))->calc = ura_arg_ref(m, 0);
	next_step(cx);
}

URA_BEHAVIOR(asking, URA_ON(A_GO, "r", on_go));

static const ura_class client_class = {
	.name = "client",
	.state_size = sizeof(client),
	.initial = &asking,
};

int main(void)
{
	ura_system *sys;
	ura_ref c, cl;
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_spawn(sys, &calc_class, NULL, &c));
	CHECK(ura_spawn(sys, &client_class, NULL, &cl));
	CHECK(ura_send(sys, cl, A_GO, c));
	CHECK(ura_system_await(sys));
	CHECK(ura_system_destroy(sys));
	return 0;
}
