/* SPDX-License-Identifier: MIT */
/*
 * "Guards! Guards!" in ura: the examples of the libcppa post, as guard
 * expressions on behavior cases.
 *
 *   on<int>().when(_x1 % 2 == 0) >> even;  on<int>() >> odd
 *   on<int>().when(_x1 == ival)          // ival copied when built
 *   on<int>().when(_x1 == gref(ival))    // ival read at each message
 *   on<anything>().when(gref(flag))      // only reads a flag
 *   on<vector<int>>().when(gcall(is_sorted, _x1))
 *   do_receive(...).until(gref(done))
 *
 * Each actor prints what it saw; main waits for quiescence between steps
 * so that the output reads in order.
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <ura.h>

#define A_N URA_ATOM("n")
#define A_VEC URA_ATOM("vec")
#define A_ADD URA_ATOM("add")
#define A_END URA_ATOM("end")
#define A_GET URA_ATOM("get")

#define IS_EVEN(x) URA_G_EQ(URA_G_MOD(x, URA_GI(2)), URA_GI(0))

/* ---- even / odd --------------------------------------------------------- */

static void even(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("  %lld is even\n", (long long)ura_arg_i64(m, 0));
}

static void odd(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("  %lld is odd\n", (long long)ura_arg_i64(m, 0));
}

URA_BEHAVIOR(parity,
	URA_ON(A_N, "i", even, URA_WHEN(IS_EVEN(URA_X(1)))),
	URA_ON(A_N, "i", odd));

/* ---- ival by value and by reference --------------------------------------- */

static int64_t ival;

static void equal_copy(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("  %lld == the copy of ival\n", (long long)ura_arg_i64(m, 0));
}

static void equal_ref(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("  %lld == gref(ival), ival being %lld now\n",
	       (long long)ura_arg_i64(m, 0), (long long)ival);
}

static void neither(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	printf("  %lld matches neither\n", (long long)ura_arg_i64(m, 0));
}

/* URA_GI(ival) takes ival's value now, so this one is built at run time;
 * ura_behavior_new copies the guards out of this function's frame. */
static int make_ival_behavior(ura_behavior **out)
{
	const ura_case cases[] = {
		URA_ON(A_N, "i", equal_copy, URA_WHEN(URA_G_EQ(URA_X(1), URA_GI(ival)))),
		URA_ON(A_N, "i", equal_ref, URA_WHEN(URA_G_EQ(URA_X(1), URA_G_REF(&ival)))),
		URA_ON(A_N, "i", neither),
	};
	return ura_behavior_new(out, cases, 3, URA_UNMATCHED_DROP);
}

/* ---- a guard that only reads a flag ---------------------------------------- */

static _Atomic bool open_door;

static void let_in(ura_ctx *cx, const ura_msg *m)
{
	char buf[80];
	(void)cx;
	ura_msg_format(m, buf, sizeof buf);
	printf("  the door is open: %s\n", buf);
}

static void knock(ura_ctx *cx, const ura_msg *m)
{
	char buf[80];
	(void)cx;
	ura_msg_format(m, buf, sizeof buf);
	printf("  closed: %s knocks\n", buf);
}

URA_BEHAVIOR(door,
	URA_ON_ANY(0, let_in, URA_WHEN(URA_G_REF(&open_door))),
	URA_ON_ANY(0, knock));

/* ---- a sorted vector, checked by a function -------------------------------- */

/* Vectors travel as bytes holding int64 values. */
static ura_value is_sorted(const ura_value *args, unsigned n)
{
	if (n != 1 || args[0].len % sizeof(int64_t))
		return ura_v_i64(0);
	const unsigned char *p = args[0].u.bytes;
	for (size_t i = sizeof(int64_t); i < args[0].len; i += sizeof(int64_t)) {
		int64_t a, b;
		memcpy(&a, p + i - sizeof a, sizeof a);
		memcpy(&b, p + i, sizeof b);
		if (a > b)
			return ura_v_i64(0);
	}
	return ura_v_i64(1);
}

static void sorted(ura_ctx *cx, const ura_msg *m)
{
	size_t len;
	(void)cx;
	ura_arg_bytes(m, 0, &len);
	printf("  a sorted vector of %zu\n", len / sizeof(int64_t));
}

static void unsorted(ura_ctx *cx, const ura_msg *m)
{
	size_t len;
	(void)cx;
	ura_arg_bytes(m, 0, &len);
	printf("  an unsorted vector of %zu\n", len / sizeof(int64_t));
}

URA_BEHAVIOR(vectors,
	URA_ON(A_VEC, "b", sorted, URA_WHEN(URA_G_CALL(is_sorted, URA_X(1)))),
	URA_ON(A_VEC, "b", unsorted));

/* ---- do_receive(...).until(gref(done)) ------------------------------------- */

typedef struct { int64_t sum; bool done; } adder;

static void add(ura_ctx *cx, const ura_msg *m)
{
	adder *s = ura_state(cx);
	s->sum += ura_arg_i64(m, 0);
}

static void end(ura_ctx *cx, const ura_msg *m)
{
	adder *s = ura_state(cx);
	(void)m;
	s->done = true;
}

static void get(ura_ctx *cx, const ura_msg *m)
{
	adder *s = ura_state(cx);
	(void)m;
	printf("  the loop is over; the sum is %lld\n", (long long)s->sum);
}

static const ura_behavior reporting;
URA_BEHAVIOR_UNTIL(summing, URA_G_FIELD(adder, done), &reporting,
	URA_ON(A_ADD, "i", add),
	URA_ON(A_END, "", end));
URA_BEHAVIOR(reporting, URA_ON(A_GET, "", get));

/* ---- main ------------------------------------------------------------------ */

static const ura_class parity_class = { .name = "parity", .initial = &parity };
static const ura_class door_class = { .name = "door", .initial = &door };
static const ura_class vectors_class = { .name = "vectors", .initial = &vectors };
static const ura_class adder_class = { .name = "adder", .state_size = sizeof(adder),
				       .initial = &summing };

static void show(const char *what, const ura_behavior *b, uint32_t i)
{
	char buf[160];
	ura_guard_format(b->cases[i].guard_arg, buf, sizeof buf);
	printf("%s  [when %s]\n", what, buf);
}

#define CHECK(call) do {                                                     \
	int rc_ = (call);                                                    \
	if (rc_ < 0) {                                                       \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror(rc_));       \
		return 1;                                                    \
	}                                                                    \
} while (0)

int main(void)
{
	ura_system *sys;
	ura_ref a;
	CHECK(ura_system_new(&sys, &(ura_config){ .workers = 2 }));

	show("even / odd", &parity, 0);
	CHECK(ura_spawn(sys, &parity_class, NULL, &a));
	for (int i = 1; i <= 4; i++)
		ura_send(sys, a, A_N, i);
	ura_system_await(sys);

	ival = 2;
	ura_behavior *byval;
	CHECK(make_ival_behavior(&byval));
	show("ival by value", byval, 0);
	show("ival by reference", byval, 1);
	ura_class ival_class = { .name = "ival", .initial = byval };
	CHECK(ura_spawn(sys, &ival_class, NULL, &a));
	ura_send(sys, a, A_N, 2);
	ura_system_await(sys);
	ival = 3;
	ura_send(sys, a, A_N, 3);
	ura_send(sys, a, A_N, 2);
	ura_send(sys, a, A_N, 5);
	ura_system_await(sys);

	show("a flag only", &door, 0);
	CHECK(ura_spawn(sys, &door_class, NULL, &a));
	ura_send(sys, a, A_N, 1);
	ura_system_await(sys);
	atomic_store(&open_door, true);
	ura_send(sys, a, A_N, 2);
	ura_send(sys, a, A_GET, "anything", 2.5);
	ura_system_await(sys);

	show("gcall", &vectors, 0);
	int64_t up[] = { 1, 2, 3, 5, 8 }, down[] = { 3, 1, 2 };
	CHECK(ura_spawn(sys, &vectors_class, NULL, &a));
	ura_send(sys, a, A_VEC, ura_v_bytes(up, sizeof up));
	ura_send(sys, a, A_VEC, ura_v_bytes(down, sizeof down));
	ura_system_await(sys);

	printf("do_receive(add, end).until(gref(done)), then get\n");
	CHECK(ura_spawn(sys, &adder_class, NULL, &a));
	for (int i = 1; i <= 4; i++)
		ura_send(sys, a, A_ADD, i);
	ura_send(sys, a, A_END);
	ura_send(sys, a, A_GET);
	ura_system_await(sys);

	int rc = ura_system_destroy(sys);
	ura_behavior_free(byval);
	return rc < 0;
}
