/* SPDX-License-Identifier: MIT */
/*
 * chameneos C M (Savina Chameneos, defaults C=100 chameneos, M=200000
 * meetings): a mall pairs chameneos that ask to meet; paired chameneos
 * swap complement colors and ask again, until M meetings have happened,
 * then every request is answered with exit and each chameneo reports its
 * meeting count. The counts must add up to 2*M. Rate: messages per second
 * (each meeting costs 4: two meet requests, one forwarded meet, one change).
 */
#include "bench.h"

#define A_START URA_ATOM("start")
#define A_MEET URA_ATOM("meet")
#define A_CHANGE URA_ATOM("change")
#define A_EXIT URA_ATOM("exit")
#define A_COUNT URA_ATOM("count")

enum { RED, YELLOW, BLUE, FADED };

static int complement(int a, int b)
{
	if (a == FADED || b == FADED)
		return FADED;
	if (a == b)
		return a;
	return 3 - a - b; /* the third color */
}

typedef struct { ura_ref mall; int64_t color, meetings; } cham_state;
typedef struct {
	ura_ref waiting;
	int64_t n, chameneos, faded, sum;
} mall_state;

static mall_state report;

static const ura_class cham_class;

static void on_mall_start(ura_ctx *cx, const ura_msg *m)
{
	mall_state *s = ura_state(cx);
	(void)m;
	for (int64_t i = 0; i < s->chameneos; i++) {
		ura_ref c;
		B_CHECK(ura_spawn(cx, &cham_class,
				  &(cham_state){ .mall = ura_self(cx), .color = i % 3 }, &c));
		B_CHECK(ura_send(cx, c, A_START));
	}
}

static void on_mall_meet(ura_ctx *cx, const ura_msg *m)
{
	mall_state *s = ura_state(cx);
	ura_ref from = ura_arg_ref(m, 1);
	if (s->n > 0) {
		if (ura_ref_null(s->waiting)) {
			s->waiting = from;
		} else {
			s->n--;
			B_CHECK(ura_send(cx, s->waiting, A_MEET, ura_arg_i64(m, 0), from));
			s->waiting = URA_NOREF;
		}
	} else {
		B_CHECK(ura_send(cx, from, A_EXIT, ura_self(cx)));
	}
}

static void on_mall_count(ura_ctx *cx, const ura_msg *m)
{
	mall_state *s = ura_state(cx);
	s->faded++;
	s->sum += ura_arg_i64(m, 0);
	if (s->faded == s->chameneos) {
		report = *s;
		ura_stop(cx);
	}
}

static void on_cham_start(ura_ctx *cx, const ura_msg *m)
{
	cham_state *s = ura_state(cx);
	(void)m;
	B_CHECK(ura_send(cx, s->mall, A_MEET, s->color, ura_self(cx)));
}

static void on_cham_meet(ura_ctx *cx, const ura_msg *m)
{
	cham_state *s = ura_state(cx);
	s->color = complement((int)s->color, (int)ura_arg_i64(m, 0));
	s->meetings++;
	B_CHECK(ura_send(cx, ura_arg_ref(m, 1), A_CHANGE, s->color));
	B_CHECK(ura_send(cx, s->mall, A_MEET, s->color, ura_self(cx)));
}

static void on_cham_change(ura_ctx *cx, const ura_msg *m)
{
	cham_state *s = ura_state(cx);
	s->color = ura_arg_i64(m, 0);
	s->meetings++;
	B_CHECK(ura_send(cx, s->mall, A_MEET, s->color, ura_self(cx)));
}

static void on_cham_exit(ura_ctx *cx, const ura_msg *m)
{
	cham_state *s = ura_state(cx);
	s->color = FADED;
	B_CHECK(ura_send(cx, ura_arg_ref(m, 0), A_COUNT, s->meetings));
	ura_stop(cx);
}

URA_BEHAVIOR(mall_beh,
	URA_ON(A_START, "", on_mall_start),
	URA_ON(A_MEET, "ir", on_mall_meet),
	URA_ON(A_COUNT, "i", on_mall_count));
URA_BEHAVIOR(cham_beh,
	URA_ON(A_START, "", on_cham_start),
	URA_ON(A_MEET, "ir", on_cham_meet),
	URA_ON(A_CHANGE, "i", on_cham_change),
	URA_ON(A_EXIT, "r", on_cham_exit));
static const ura_class mall_class = { .name = "mall", .state_size = sizeof(mall_state), .initial = &mall_beh };
static const ura_class cham_class = { .name = "chameneo", .state_size = sizeof(cham_state), .initial = &cham_beh };

int main(int argc, char **argv)
{
	int64_t C = b_pos(argc, argv, 1, 100);
	int64_t M = b_pos(argc, argv, 2, 200000);
	ura_system *sys = b_system();
	double t0 = b_now();
	ura_ref mall;
	B_CHECK(ura_spawn(sys, &mall_class, &(mall_state){ .n = M, .chameneos = C }, &mall));
	B_CHECK(ura_send(sys, mall, A_START));
	B_CHECK(ura_system_await(sys));
	double dt = b_now() - t0;
	ura_stats st;
	ura_system_stats(sys, &st);
	int rc = ura_system_destroy(sys);
	if (report.faded != C || report.sum != 2 * M || rc < 0) {
		fprintf(stderr, "faded=%lld sum=%lld want %lld/%lld destroy=%d\n",
			(long long)report.faded, (long long)report.sum, (long long)C,
			(long long)(2 * M), rc);
		b_fail("chameneos");
	}
	printf("bench=chameneos system=ura workers=%u chameneos=%lld meetings=%lld msgs=%llu "
	       "wall_s=%.6f rate=%.0f\n",
	       st.workers, (long long)C, (long long)M, (unsigned long long)st.sent, dt,
	       (double)st.sent / dt);
	return 0;
}
