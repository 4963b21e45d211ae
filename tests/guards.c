/* SPDX-License-Identifier: MIT */
/*
 * guards: guard expressions on cases (ura/guard.h). Every operator over
 * values (ura_guard_match), laziness of references, the checks made when a
 * behavior is built, hostile values and messages that must simply not
 * match, formatting, serialization round trips (and malformed input), the
 * seed post's examples ("Guards! Guards!") on real actors, the bound value,
 * state fields, copies made by ura_behavior_new, and receive loops
 * (libcppa's do_receive(...).until(gref(done))).
 */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "tap.h"

#define A_N URA_ATOM("n")
#define A_V URA_ATOM("v")
#define A_ANY URA_ATOM("any")
#define A_TAKE URA_ATOM("take")
#define A_PUT URA_ATOM("put")
#define A_ADD URA_ATOM("add")
#define A_END URA_ATOM("end")
#define A_GET URA_ATOM("get")
#define A_TICK URA_ATOM("tick")

/* ---- helpers ---------------------------------------------------------- */

static int m0(const ura_guard_node *g) { return ura_guard_match(g, NULL, 0, NULL); }
static int m1(const ura_guard_node *g, ura_value a) { return ura_guard_match(g, &a, 1, NULL); }
static int m2(const ura_guard_node *g, ura_value a, ura_value b)
{
	ura_value v[2] = { a, b };
	return ura_guard_match(g, v, 2, NULL);
}

static const char *fmt(const ura_guard_node *g)
{
	static char buf[256];
	ura_guard_format(g, buf, sizeof buf);
	return buf;
}

static int calls; /* how often counting() ran */

static ura_value counting(const ura_value *args, unsigned n)
{
	(void)args;
	(void)n;
	calls++;
	return ura_v_i64(1);
}

/* libcppa's is_sorted over a vector<int>: here bytes holding int64s. */
static ura_value sorted(const ura_value *args, unsigned n)
{
	if (n != 1 || args[0].type != URA_T_BYTES || args[0].len % 8)
		return ura_v_i64(0);
	const unsigned char *p = args[0].u.bytes;
	for (uint32_t i = 8; i < args[0].len; i += 8) {
		int64_t a, b;
		memcpy(&a, p + i - 8, 8);
		memcpy(&b, p + i, 8);
		if (a > b)
			return ura_v_i64(0);
	}
	return ura_v_i64(1);
}

static ura_value nothing(const ura_value *args, unsigned n)
{
	(void)args;
	(void)n;
	ura_value z;
	memset(&z, 0, sizeof z);
	return z;
}

static ura_value len_plus(const ura_value *args, unsigned n)
{
	uint64_t s = 0; /* wraps: hostile values may be huge */
	for (unsigned i = 0; i < n; i++)
		s += args[i].type == URA_T_STR ? args[i].len : (uint64_t)args[i].u.i64;
	return ura_v_i64((int64_t)s);
}

/* ---- operators over values ---------------------------------------------- */

static void test_placeholders(void)
{
	t_ok(m1(URA_X(1), ura_v_i64(7)), "x1 alone: true when nonzero");
	t_ok(!m1(URA_X(1), ura_v_i64(0)), "x1 alone: false when zero");
	t_ok(m2(URA_G_EQ(URA_X(2), URA_GI(5)), ura_v_i64(0), ura_v_i64(5)), "x2 is the second value");
	t_ok(!m1(URA_G_EQ(URA_X(2), URA_GI(5)), ura_v_i64(5)), "a missing x2 fails");
	t_ok(!m1(URA_G_NE(URA_X(2), URA_GI(5)), ura_v_i64(5)), "a missing x2 fails != too");
	t_ok(!m0(URA_G_NOT(URA_G_EQ(URA_X(1), URA_GI(1)))), "not() of a failure still fails");
	t_ok(!m1(URA_X(1), ura_v_str("x")), "a string is no truth value");
}

static void test_compare(void)
{
	ura_value i3 = ura_v_i64(3), d25 = ura_v_f64(2.5), nan = ura_v_f64(NAN);
	t_ok(m1(URA_G_EQ(URA_X(1), URA_GI(3)), i3) && !m1(URA_G_EQ(URA_X(1), URA_GI(4)), i3), "int ==");
	t_ok(m1(URA_G_NE(URA_X(1), URA_GI(4)), i3) && !m1(URA_G_NE(URA_X(1), URA_GI(3)), i3), "int !=");
	t_ok(m1(URA_G_LT(URA_X(1), URA_GI(4)), i3) && !m1(URA_G_LT(URA_X(1), URA_GI(3)), i3), "int <");
	t_ok(m1(URA_G_LE(URA_X(1), URA_GI(3)), i3) && !m1(URA_G_LE(URA_X(1), URA_GI(2)), i3), "int <=");
	t_ok(m1(URA_G_GT(URA_X(1), URA_GI(2)), i3) && !m1(URA_G_GT(URA_X(1), URA_GI(3)), i3), "int >");
	t_ok(m1(URA_G_GE(URA_X(1), URA_GI(3)), i3) && !m1(URA_G_GE(URA_X(1), URA_GI(4)), i3), "int >=");
	t_ok(m1(URA_G_LT(URA_X(1), URA_GI(INT64_MAX)), ura_v_i64(INT64_MAX - 1)),
	     "int64 compares exactly near the top");
	t_ok(m1(URA_G_LT(URA_X(1), URA_GI(3)), d25) && m1(URA_G_GT(URA_X(1), URA_GD(2.25)), d25) &&
	     m1(URA_G_EQ(URA_GD(3.0), URA_X(1)), i3), "double and int mix");
	t_ok(!m1(URA_G_EQ(URA_X(1), URA_X(1)), nan) && m1(URA_G_NE(URA_X(1), URA_X(1)), nan) &&
	     !m1(URA_G_LT(URA_X(1), URA_GD(1)), nan) && !m1(URA_G_GE(URA_X(1), URA_GD(1)), nan),
	     "NaN: only != holds");
	t_ok(m1(URA_G_EQ(URA_X(1), URA_GS("abc")), ura_v_str("abc")) &&
	     !m1(URA_G_EQ(URA_X(1), URA_GS("abc")), ura_v_str("abcd")), "string ==");
	t_ok(m1(URA_G_LT(URA_X(1), URA_GS("abd")), ura_v_str("abc")) &&
	     m1(URA_G_LT(URA_X(1), URA_GS("abc")), ura_v_str("ab")) &&
	     m1(URA_G_GT(URA_X(1), URA_GS("")), ura_v_str("a")), "string order: bytewise, shorter first");
	t_ok(m1(URA_G_EQ(URA_X(1), URA_GB("a\0b", 3)), ura_v_bytes("a\0b", 3)) &&
	     !m1(URA_G_EQ(URA_X(1), URA_GB("a\0c", 3)), ura_v_bytes("a\0b", 3)), "bytes == (with NULs)");
	t_ok(m1(URA_G_EQ(URA_X(1), URA_G_ATOM("put")), ura_v_atom(A_PUT)) &&
	     m1(URA_G_NE(URA_X(1), URA_GA(A_TAKE)), ura_v_atom(A_PUT)), "atoms ==, !=");
	ura_ref r = { 42 };
	t_ok(m2(URA_G_EQ(URA_X(1), URA_X(2)), ura_v_ref(r), ura_v_ref(r)) &&
	     !m2(URA_G_EQ(URA_X(1), URA_X(2)), ura_v_ref(r), ura_v_ref(URA_NOREF)), "refs ==");
	int dummy;
	t_ok(m2(URA_G_EQ(URA_X(1), URA_X(2)), ura_v_ptr(&dummy), ura_v_ptr(&dummy)), "pointers ==");
	t_ok(!m2(URA_G_LT(URA_X(1), URA_X(2)), ura_v_atom(A_PUT), ura_v_atom(A_TAKE)),
	     "atoms have no order: the guard fails");
	t_ok(!m2(URA_G_EQ(URA_X(1), URA_X(2)), ura_v_i64(1), ura_v_str("1")) &&
	     !m2(URA_G_NE(URA_X(1), URA_X(2)), ura_v_i64(1), ura_v_str("1")),
	     "an int and a string compare neither equal nor unequal");
}

static void test_arith(void)
{
	ura_value i7 = ura_v_i64(7), m7 = ura_v_i64(-7);
	t_ok(m1(URA_G_EQ(URA_G_ADD(URA_X(1), URA_GI(1)), URA_GI(8)), i7), "+");
	t_ok(m1(URA_G_EQ(URA_G_SUB(URA_X(1), URA_GI(10)), URA_GI(-3)), i7), "-");
	t_ok(m1(URA_G_EQ(URA_G_MUL(URA_X(1), URA_GI(6)), URA_GI(42)), i7), "*");
	t_ok(m1(URA_G_EQ(URA_G_DIV(URA_X(1), URA_GI(2)), URA_GI(-3)), m7) &&
	     m1(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(-1)), m7), "/ and %% truncate as in C");
	t_ok(m1(URA_G_EQ(URA_G_NEG(URA_X(1)), URA_GI(7)), m7), "unary -");
	t_ok(m1(URA_G_EQ(URA_G_DIV(URA_X(1), URA_GI(2)), URA_GD(3.5)), ura_v_f64(7.0)) &&
	     m1(URA_G_EQ(URA_G_ADD(URA_X(1), URA_GD(0.5)), URA_GD(7.5)), i7), "double arithmetic, int promoted");
	t_ok(m1(URA_G_GT(URA_G_DIV(URA_X(1), URA_GD(0)), URA_GD(1e308)), ura_v_f64(1)),
	     "double / 0 is inf, as IEEE says");
	t_ok(!m1(URA_G_EQ(URA_G_DIV(URA_X(1), URA_GI(0)), URA_GI(0)), i7) &&
	     !m1(URA_G_NOT(URA_G_EQ(URA_G_DIV(URA_X(1), URA_GI(0)), URA_GI(0))), i7),
	     "int / 0 does not match, even under not()");
	t_ok(!m1(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(0)), URA_GI(0)), i7), "int %% 0 does not match");
	t_ok(!m1(URA_G_NE(URA_G_DIV(URA_X(1), URA_GI(-1)), URA_GI(0)), ura_v_i64(INT64_MIN)) &&
	     !m1(URA_G_NE(URA_G_MOD(URA_X(1), URA_GI(-1)), URA_GI(1)), ura_v_i64(INT64_MIN)),
	     "INT64_MIN / -1 and %% -1 do not match");
	t_ok(!m1(URA_G_NE(URA_G_ADD(URA_X(1), URA_GI(1)), URA_GI(0)), ura_v_i64(INT64_MAX)) &&
	     !m1(URA_G_NE(URA_G_MUL(URA_X(1), URA_GI(2)), URA_GI(0)), ura_v_i64(INT64_MAX)) &&
	     !m1(URA_G_NE(URA_G_SUB(URA_X(1), URA_GI(1)), URA_GI(0)), ura_v_i64(INT64_MIN)) &&
	     !m1(URA_G_NE(URA_G_NEG(URA_X(1)), URA_GI(0)), ura_v_i64(INT64_MIN)),
	     "int64 overflow does not match");
	t_ok(!m1(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(1)), ura_v_f64(3.0)),
	     "%% of a double (untyped case) does not match");
	t_ok(!m1(URA_G_EQ(URA_G_ADD(URA_X(1), URA_GI(1)), URA_GI(2)), ura_v_str("1")),
	     "a string plus one does not match");

	/* The fast path (a comparison at the top) and the general one (the
	 * same under not(!=)) agree with C, powers of two included. */
	static const int64_t xs[] = { 0, 1, -1, 5, -5, 7, -7, 64, -64, INT64_MAX, INT64_MIN,
				      INT64_MIN + 1 };
	static const int64_t ds[] = { 1, 2, 4, 3, -1, -2, -4, 1024, (int64_t)1 << 62, 0 };
	int agree = 1;
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
		for (size_t j = 0; j < sizeof ds / sizeof ds[0]; j++) {
			int64_t x = xs[i], d = ds[j];
			int defined = d != 0 && !(x == INT64_MIN && d == -1);
			ura_value v[3] = { ura_v_i64(x), ura_v_i64(d), ura_v_i64(defined ? x / d : 0) };
			ura_value w[3] = { v[0], v[1], ura_v_i64(defined ? x % d : 0) };
			int fq = ura_guard_match(URA_G_EQ(URA_G_DIV(URA_X(1), URA_X(2)), URA_X(3)), v, 3, NULL);
			int sq = ura_guard_match(URA_G_NOT(URA_G_NE(URA_G_DIV(URA_X(1), URA_X(2)), URA_X(3))), v, 3, NULL);
			int fr = ura_guard_match(URA_G_EQ(URA_G_MOD(URA_X(1), URA_X(2)), URA_X(3)), w, 3, NULL);
			int sr = ura_guard_match(URA_G_NOT(URA_G_NE(URA_G_MOD(URA_X(1), URA_X(2)), URA_X(3))), w, 3, NULL);
			if (fq != defined || sq != defined || fr != defined || sr != defined) {
				t_diag("%lld / %lld: %d %d %d %d", (long long)x, (long long)d, fq, sq, fr, sr);
				agree = 0;
			}
		}
	}
	t_ok(agree, "/ and %% as C computes them, on both evaluation paths");
}

static void test_logic(void)
{
	ura_value t = ura_v_i64(1), f = ura_v_i64(0);
	t_ok(m2(URA_G_AND(URA_X(1), URA_X(2)), t, t) && !m2(URA_G_AND(URA_X(1), URA_X(2)), t, f) &&
	     !m2(URA_G_AND(URA_X(1), URA_X(2)), f, t), "and");
	t_ok(m2(URA_G_OR(URA_X(1), URA_X(2)), f, t) && m2(URA_G_OR(URA_X(1), URA_X(2)), t, f) &&
	     !m2(URA_G_OR(URA_X(1), URA_X(2)), f, f), "or");
	t_ok(m1(URA_G_NOT(URA_X(1)), f) && !m1(URA_G_NOT(URA_X(1)), t), "not");
	t_ok(m0(URA_G_AND(URA_GI(1), URA_GI(2), URA_GI(3))) &&
	     !m0(URA_G_AND(URA_GI(1), URA_GI(2), URA_GI(0))) &&
	     m0(URA_G_OR(URA_GI(0), URA_GI(0), URA_GI(5))), "three operands");
	calls = 0;
	t_ok(!m1(URA_G_AND(URA_X(1), URA_G_CALL(counting, URA_X(1))), f) && calls == 0,
	     "and: short-circuit (the call is not made)");
	t_ok(m1(URA_G_OR(URA_X(1), URA_G_CALL(counting, URA_X(1))), t) && calls == 0,
	     "or: short-circuit (the call is not made)");
	t_ok(m1(URA_G_NOT(URA_G_AND(URA_G_NE(URA_X(1), URA_GI(0)),
				   URA_G_EQ(URA_G_DIV(URA_GI(10), URA_X(1)), URA_GI(5)))), f),
	     "x1 != 0 && 10 / x1 == 5 is false, not a failure, for x1 = 0");
	t_ok(!m1(URA_G_AND(URA_X(1), URA_G_EQ(URA_G_DIV(URA_GI(1), URA_GI(0)), URA_GI(0))), t),
	     "an evaluated operand that fails fails the guard");
}

static void test_refs(void)
{
	static int64_t i64v = 5;
	static int iv = -3;
	static unsigned uv = 4000000000u;
	static bool bv = false;
	static double dv = 1.5;
	static const char *sv = "hello";
	static _Atomic int av = 0;
	static unsigned long long big = UINT64_MAX;
	const ura_guard_node *g = URA_G_EQ(URA_X(1), URA_G_REF(&i64v));
	t_ok(m1(g, ura_v_i64(5)), "gref(int64): the value now");
	i64v = 6;
	t_ok(!m1(g, ura_v_i64(5)) && m1(g, ura_v_i64(6)), "gref(int64): read when evaluated, not when built");
	t_ok(m1(URA_G_EQ(URA_G_REF(&iv), URA_GI(-3)), ura_v_i64(0)), "gref(int)");
	t_ok(m0(URA_G_EQ(URA_G_REF(&uv), URA_GI(4000000000))), "gref(unsigned)");
	t_ok(!m0(URA_G_REF(&bv)), "gref(bool) false");
	bv = true;
	t_ok(m0(URA_G_REF(&bv)), "gref(bool) true, later");
	t_ok(m0(URA_G_GT(URA_G_REF(&dv), URA_GD(1.25))), "gref(double)");
	t_ok(m0(URA_G_STARTS_WITH(URA_G_REF(&sv), URA_GS("he"))), "gref(string pointer)");
	sv = "world";
	t_ok(!m0(URA_G_STARTS_WITH(URA_G_REF(&sv), URA_GS("he"))), "gref(string pointer): the new string");
	sv = NULL;
	t_ok(!m0(URA_G_EMPTY(URA_G_REF(&sv))) && !m0(URA_G_NOT(URA_G_EMPTY(URA_G_REF(&sv)))),
	     "gref(NULL string) does not match");
	t_ok(!m0(URA_G_REF(&av)), "gref(atomic int) 0");
	atomic_store(&av, 1);
	t_ok(m0(URA_G_REF(&av)), "gref(atomic int) 1");
	t_ok(!m0(URA_G_GT(URA_G_REF(&big), URA_GI(0))), "gref(uint64 beyond int64) does not match");
	ura_value bound = ura_v_i64(9);
	t_ok(ura_guard_match(URA_G_EQ(URA_X(1), URA_G_BOUND), &bound, 1, &bound),
	     "bound value (ura_guard_match's)");
	t_ok(!m1(URA_G_EQ(URA_X(1), URA_G_BOUND), bound), "no bound value: no match");
	typedef struct { int x; } st;
	t_ok(!m0(URA_G_FIELD(st, x)), "a state field outside an actor: no match");
}

static void test_calls(void)
{
	int64_t up[4] = { 1, 2, 2, 9 }, down[3] = { 3, 1, 2 };
	const ura_guard_node *g = URA_G_CALL(sorted, URA_X(1));
	t_ok(m1(g, ura_v_bytes(up, sizeof up)), "gcall: sorted vector");
	t_ok(!m1(g, ura_v_bytes(down, sizeof down)), "gcall: unsorted vector");
	t_ok(m1(g, ura_v_bytes(NULL, 0)), "gcall: empty vector is sorted");
	t_ok(!m0(URA_G_CALL0(nothing)) && !m0(URA_G_NOT(URA_G_CALL0(nothing))),
	     "a call returning no value does not match");
	t_ok(m2(URA_G_EQ(URA_G_CALL(len_plus, URA_X(1), URA_GS("abcd"), URA_X(2)), URA_GI(10)),
		ura_v_str("xy"), ura_v_i64(4)),
	     "gcall over values, constants and exact string lengths");
	static int64_t seen = 40;
	t_ok(m0(URA_G_EQ(URA_G_CALL(len_plus, URA_G_REF(&seen), URA_GI(2)), URA_GI(42))),
	     "gcall over a lazy reference");
	calls = 0;
	m0(URA_G_CALL0(counting));
	m0(URA_G_CALL0(counting));
	t_eq(calls, 2, "a call runs at each evaluation");
}

static void test_strings(void)
{
	ura_value s = ura_v_str("--verbose"), e = ura_v_str(""), b = ura_v_bytes("\x7f" "ELF", 4);
	t_ok(m1(URA_G_STARTS_WITH(URA_X(1), URA_GS("--")), s) &&
	     !m1(URA_G_STARTS_WITH(URA_X(1), URA_GS("-v")), s) &&
	     m1(URA_G_STARTS_WITH(URA_X(1), URA_GS("")), e) &&
	     !m1(URA_G_STARTS_WITH(URA_X(1), URA_GS("-")), e), "starts_with on strings");
	t_ok(m1(URA_G_STARTS_WITH(URA_X(1), URA_GB("\x7f" "E", 2)), b) &&
	     m1(URA_G_STARTS_WITH(URA_X(1), URA_GS("\x7f" "EL")), b), "starts_with on bytes");
	t_ok(m1(URA_G_EQ(URA_G_SIZE(URA_X(1)), URA_GI(9)), s) &&
	     m1(URA_G_GT(URA_G_SIZE(URA_X(1)), URA_GI(3)), b) &&
	     m1(URA_G_EQ(URA_G_SIZE(URA_X(1)), URA_GI(0)), e), "size comparisons");
	t_ok(m1(URA_G_EMPTY(URA_X(1)), e) && !m1(URA_G_EMPTY(URA_X(1)), s) &&
	     m1(URA_G_NOT_EMPTY(URA_X(1)), s) && !m1(URA_G_NOT_EMPTY(URA_X(1)), e) &&
	     m1(URA_G_EMPTY(URA_X(1)), ura_v_bytes(NULL, 0)), "empty, not_empty");
	t_ok(m1(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI('-')), s) &&
	     m1(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI(0x7f)), b), "front() compared");
	t_ok(!m1(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI('-')), e) &&
	     !m1(URA_G_NE(URA_G_FRONT(URA_X(1)), URA_GI('-')), e), "front() of an empty value: no match");
	t_ok(m1(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI(0xe9)), ura_v_str("\xe9t\xe9")),
	     "front() is an unsigned byte");
	const ura_guard_node *verbs = URA_G_IN(URA_X(1), URA_GS("GET"), URA_GS("HEAD"));
	t_ok(m1(verbs, ura_v_str("HEAD")) && !m1(verbs, ura_v_str("POST")), "in a string set");
	t_ok(!m1(URA_G_NOT_IN(URA_X(1), URA_GS("GET"), URA_GS("HEAD")), ura_v_str("GET")) &&
	     m1(URA_G_NOT_IN(URA_X(1), URA_GS("GET"), URA_GS("HEAD")), ura_v_str("PUT")), "not in a string set");
	t_ok(m1(URA_G_IN(URA_X(1), URA_GI(2), URA_GI(3), URA_GD(5.5)), ura_v_f64(5.5)) &&
	     !m1(URA_G_IN(URA_X(1), URA_GI(2), URA_GI(3)), ura_v_i64(4)), "in a number set");
	t_ok(m1(URA_G_IN(URA_X(1), URA_G_ATOM("take"), URA_G_ATOM("put")), ura_v_atom(A_PUT)) &&
	     m1(URA_G_NOT_IN(URA_X(1), URA_G_ATOM("take")), ura_v_atom(A_PUT)), "in an atom set (by name)");
	t_ok(!m1(URA_G_NOT_IN(URA_X(1), URA_GI(1)), ura_v_str("1")),
	     "a value of another type is not 'not in' the set: it fails");
}

/* ---- checks when a behavior is built ----------------------------------- */

static void h_nop(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}

/* A chain of `depth` NOTs over x1, built at run time. */
static ura_guard_node chain[64];
static const ura_guard_node *not_chain(unsigned depth)
{
	chain[0] = (ura_guard_node){ .op = URA__G_X, .n = 1 };
	for (unsigned i = 1; i <= depth; i++)
		chain[i] = (ura_guard_node){ .op = URA__G_NOT, .u.a = &chain[i - 1] };
	return &chain[depth];
}

static const ura_guard_node *wide_or(unsigned n)
{
	static const ura_guard_node *list[400];
	static ura_guard_node top, one = { .op = URA__G_CONST, .vt = URA_T_I64, .u.i = 1 };
	for (unsigned i = 0; i < n; i++)
		list[i] = &one;
	list[n] = NULL;
	top = (ura_guard_node){ .op = URA__G_OR, .k.list = list };
	return &top;
}

URA_BEHAVIOR(bad_static,
	URA_ON(A_N, "i", h_nop),
	URA_ON(A_N, "r", h_nop, URA_WHEN(URA_G_EQ(URA_X(1), URA_GI(0)))));
URA_BEHAVIOR(good_static,
	URA_ON(A_N, "r", h_nop, URA_WHEN(URA_G_EQ(URA_X(1), URA_G_BOUND))),
	URA_ON_ANY(A_N, h_nop, URA_WHEN(URA_G_EQ(URA_X(9), URA_GS("x")))));
URA_BEHAVIOR_UNTIL(bad_loop, URA_G_EQ(URA_GI(1), URA_GI(1)), NULL,
	URA_ON(A_N, "i", h_nop, URA_WHEN(URA_G_EQ(URA_X(2), URA_GI(0)))));

static int new_rc(const ura_guard_node *g, const char *types)
{
	ura_case c = { .tag = A_N, .types = types, .fn = h_nop, URA_WHEN(g) };
	ura_behavior *b = NULL;
	int rc = ura_behavior_new(&b, &c, 1, URA_UNMATCHED_DROP);
	ura_behavior_free(b);
	return rc;
}

static void test_validation(void)
{
	t_rc(ura_guard_check(URA_G_EQ(URA_X(1), URA_GI(0)), "i"), 0, "a good guard checks");
	t_rc(new_rc(URA_G_EQ(URA_X(2), URA_GI(0)), "i"), -EINVAL, "x2 on a one-value case: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(0), URA_GI(0)), "i"), -EINVAL, "x0: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(10), URA_GI(0)), NULL), -EINVAL, "x10: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(9), URA_GI(0)), NULL), 0, "x9 on an any-values case: checked at run time");
	t_rc(new_rc(URA_G_EQ(URA_X(1), URA_GI(0)), "r"), -EINVAL, "ref == int: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(1), URA_GS("a")), "a"), -EINVAL, "atom == string: -EINVAL");
	t_rc(new_rc(URA_G_LT(URA_X(1), URA_G_ATOM("a")), "a"), -EINVAL, "atom < atom: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_G_ADD(URA_X(1), URA_GI(1)), URA_GI(2)), "s"), -EINVAL, "string + 1: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)), "d"), -EINVAL, "double %% 2: -EINVAL");
	t_rc(new_rc(URA_G_STARTS_WITH(URA_X(1), URA_GS("a")), "i"), -EINVAL, "starts_with(int): -EINVAL");
	t_rc(new_rc(URA_G_GT(URA_G_SIZE(URA_X(1)), URA_GI(0)), "r"), -EINVAL, "size(ref): -EINVAL");
	t_rc(new_rc(URA_G_NOT(URA_X(1)), "d"), -EINVAL, "not(double): -EINVAL");
	t_rc(new_rc(URA_X(1), "s"), -EINVAL, "a string is no guard: -EINVAL");
	t_rc(new_rc(URA_G_ADD(URA_X(1), URA_GI(1)), "i"), 0, "an int is (nonzero: true)");
	t_rc(new_rc(URA_G_IN(URA_X(1), URA_X(1)), "i"), -EINVAL, "a set of non-constants: -EINVAL");
	t_rc(new_rc(URA_G_IN(URA_X(1), URA_GI(1), URA_GS("1")), "i"), -EINVAL, "a mixed set: -EINVAL");
	t_rc(new_rc(URA_G_IN(URA_X(1), URA_GS("1")), "i"), -EINVAL, "int in a string set: -EINVAL");
	t_rc(new_rc(URA_G_CALL(counting, URA_X(1), URA_X(1), URA_X(1), URA_X(1), URA_X(1),
			       URA_X(1), URA_X(1), URA_X(1), URA_X(1)), "i"), -EINVAL, "9 call arguments: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(1), URA_G_ATOM("no-dash")), "a"), -EINVAL, "a bad atom name: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(1), URA_GS(NULL)), "s"), -EINVAL, "a NULL string constant: -EINVAL");
	t_rc(new_rc(URA_G_EQ(URA_X(1), (const ura_guard_node *)NULL), "i"), -EINVAL, "a missing operand: -EINVAL");
	t_rc(new_rc(&(ura_guard_node){ .op = 99 }, "i"), -EINVAL, "an unknown node: -EINVAL");
	t_rc(new_rc(&(ura_guard_node){ .op = URA__G_X, .n = 1, .r_ = 1 }, "i"), -EINVAL, "reserved bits: -EINVAL");
	t_rc(new_rc(URA_G_AND((const ura_guard_node *)NULL), "i"), -EINVAL, "an empty and(): -EINVAL");
	t_rc(new_rc(not_chain(URA_GUARD_MAX_DEPTH), "i"), 0, "nesting at the limit");
	t_rc(new_rc(not_chain(40), "i"), -EINVAL, "nesting past the limit: -EINVAL");
	t_ok(!ura_guard_match(not_chain(40), (ura_value[]){ ura_v_i64(0) }, 1, NULL) &&
	     !ura_guard_match(not_chain(41), (ura_value[]){ ura_v_i64(0) }, 1, NULL),
	     "too deep, unchecked: evaluation stops (no match, no crash)");
	t_rc(new_rc(wide_or(URA_GUARD_MAX_NODES - 1), "i"), 0, "nodes at the limit");
	t_rc(new_rc(wide_or(300), "i"), -EINVAL, "too many nodes: -EINVAL");
	t_rc(ura_guard_check(URA_X(1), "iz"), -EINVAL, "a bad signature: -EINVAL");
	t_rc(ura_behavior_check(&bad_static), -EINVAL, "ura_behavior_check sees a bad static guard");
	t_rc(ura_behavior_check(&good_static), 0, "ura_behavior_check: good static guards");
	t_rc(ura_behavior_check(&bad_loop), -EINVAL, "ura_behavior_check looks inside loops");
}

/* ---- hostile values: nothing crashes, nothing matches by accident ------- */

static uint64_t rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static ura_value hostile(void)
{
	static const char *strs[] = { "", "a", "--x", "\xff\xfe", NULL };
	static const unsigned char bytes[8] = { 0, 1, 2, 3 };
	ura_value v;
	memset(&v, 0, sizeof v);
	switch (rnd() % 10) {
	case 0: return ura_v_i64((int64_t)rnd());
	case 1: return ura_v_i64((int64_t[]){ 0, -1, INT64_MIN, INT64_MAX }[rnd() % 4]);
	case 2: return ura_v_f64((double[]){ 0.0, -0.0, NAN, INFINITY, 1e300 }[rnd() % 5]);
	case 3: return ura_v_str(strs[rnd() % 5]);
	case 4: return ura_v_bytes(rnd() % 2 ? bytes : NULL, rnd() % 2 ? 0 : 4);
	case 5: v = ura_v_bytes(bytes, 4); v.len = UINT32_MAX; return v;
	case 6: return ura_v_atom(rnd() % 2 ? A_PUT : 0);
	case 7: return ura_v_ref(URA_NOREF);
	case 8: return ura_v_ptr(NULL);
	default: v.type = (uint32_t)(rnd() % 256); v.len = (uint32_t)rnd(); return v;
	}
}

static void test_hostile(void)
{
	static int64_t iref = 3;
	const ura_guard_node *gs[] = {
		URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)),
		URA_G_OR(URA_G_LT(URA_X(1), URA_X(2)), URA_G_GE(URA_X(2), URA_X(3))),
		URA_G_NOT(URA_G_EQ(URA_G_DIV(URA_X(1), URA_X(2)), URA_G_MUL(URA_X(3), URA_GD(2)))),
		URA_G_AND(URA_G_STARTS_WITH(URA_X(1), URA_X(2)), URA_G_NOT_EMPTY(URA_X(3))),
		URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_G_SIZE(URA_X(2))),
		URA_G_IN(URA_X(1), URA_GS(""), URA_GS("a")),
		URA_G_NOT_IN(URA_X(2), URA_GI(0), URA_GD(NAN)),
		URA_G_EQ(URA_G_NEG(URA_X(1)), URA_G_SUB(URA_X(2), URA_G_REF(&iref))),
		URA_G_CALL(sorted, URA_X(1)),
		URA_G_CALL(len_plus, URA_X(1), URA_X(2)),
		URA_G_EMPTY(URA_X(3)),
		URA_G_EQ(URA_X(1), URA_G_ATOM("put")),
		URA_G_NE(URA_X(1), URA_G_BOUND),
	};
	long runs = t_scaled(200000), matched = 0;
	for (long i = 0; i < runs; i++) {
		ura_value v[3] = { hostile(), hostile(), hostile() };
		ura_value bound = hostile();
		const ura_guard_node *g = gs[rnd() % (sizeof gs / sizeof gs[0])];
		int r = ura_guard_match(g, v, (unsigned)(rnd() % 4), rnd() % 2 ? &bound : NULL);
		matched += r == 1;
		if (r != 0 && r != 1)
			break;
	}
	t_ok(1, "%ld hostile evaluations, no crash (%ld matched)", runs, matched);
	t_ok(!m2(URA_G_STARTS_WITH(URA_X(1), URA_X(2)), ura_v_str(NULL), ura_v_str("")) &&
	     !m1(URA_G_SIZE(URA_X(1)), (ura_value){ .type = URA_T_BYTES, .len = 5 }),
	     "a NULL string, bytes with a length and no pointer: no match");
	t_ok(!ura_guard_match(NULL, NULL, 0, NULL) && !ura_guard_match(URA_X(1), NULL, 5, NULL),
	     "NULL guard, NULL values: no match");
}

/* ---- formatting ----------------------------------------------------------- */

static void test_format(void)
{
	static int64_t ival = 2;
	typedef struct { bool done; } st;
	t_streq(fmt(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0))), "x1 % 2 == 0", "format: even");
	t_streq(fmt(URA_G_EQ(URA_X(1), URA_G_REF(&ival))), "x1 == gref(ival)", "format: gref");
	t_streq(fmt(URA_G_AND(URA_G_STARTS_WITH(URA_X(1), URA_GS("--")),
			      URA_G_GT(URA_G_SIZE(URA_X(1)), URA_GI(2)))),
		"starts_with(x1, \"--\") && size(x1) > 2", "format: strings, and");
	t_streq(fmt(URA_G_NOT(URA_G_OR(URA_G_LT(URA_X(1), URA_GI(0)), URA_G_GT(URA_X(1), URA_GI(9))))),
		"!(x1 < 0 || x1 > 9)", "format: not, or, parentheses");
	t_streq(fmt(URA_G_AND(URA_G_OR(URA_X(1), URA_X(2)), URA_X(3))), "(x1 || x2) && x3",
		"format: or inside and");
	t_streq(fmt(URA_G_EQ(URA_G_MUL(URA_G_ADD(URA_X(1), URA_GI(1)), URA_GI(2)),
			     URA_G_SUB(URA_X(2), URA_G_SUB(URA_X(3), URA_GI(3))))),
		"(x1 + 1) * 2 == x2 - (x3 - 3)", "format: arithmetic precedence");
	t_streq(fmt(URA_G_EQ(URA_G_NEG(URA_GI(-3)), URA_GD(2.0))), "-(-3) == 2.0", "format: negatives, doubles");
	t_streq(fmt(URA_G_LT(URA_X(1), URA_GD(0.1))), "x1 < 0.1", "format: shortest double");
	t_streq(fmt(URA_G_IN(URA_X(1), URA_G_ATOM("put"), URA_GA(A_TAKE))), "x1 in {'put', 'take'}",
		"format: in, atoms");
	t_streq(fmt(URA_G_NOT_IN(URA_X(1), URA_GS("a\"b\n"), URA_GB("\x01z", 2))),
		"x1 not in {\"a\\\"b\\x0a\", b\"\\x01z\"}", "format: not in, escapes");
	t_streq(fmt(URA_G_AND(URA_G_CALL(sorted, URA_X(1)), URA_G_FIELD(st, done), URA_G_EQ(URA_X(2), URA_G_BOUND))),
		"sorted(x1) && state.done && x2 == bound", "format: call, field, bound");
	t_streq(fmt(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI('a'))), "front(x1) == 97", "format: front");
	t_streq(fmt(URA_G_LE(URA_G_SIZE(URA_X(1)), URA_GI(3))), "size(x1) <= 3", "format: size");
	char small[8];
	const ura_guard_node *g = URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0));
	int want = ura_guard_format(g, small, sizeof small);
	t_ok(want == 11 && !strcmp(small, "x1 % 2 "), "format: truncated like snprintf (%d, \"%s\")", want, small);
	t_eq(ura_guard_format(g, NULL, 0), 11, "format: length only");
}

/* ---- serialization -------------------------------------------------------- */

static int64_t s_ival = 7;
static _Atomic int s_flag;
static const ura_guard_sym syms[] = {
	URA_GSYM_REF("s_ival", &s_ival),
	URA_GSYM_REF("s_flag", &s_flag),
	URA_GSYM_FN("sorted", sorted),
};

static void test_serialize(void)
{
	typedef struct { int pad; double avg; } st;
	const ura_guard_node *gs[] = {
		URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)),
		URA_G_AND(URA_G_EQ(URA_X(1), URA_G_REF(&s_ival)), URA_G_NOT(URA_G_REF(&s_flag))),
		URA_G_OR(URA_G_CALL(sorted, URA_X(2)), URA_G_LT(URA_G_NEG(URA_X(1)), URA_GD(-2.5))),
		URA_G_AND(URA_G_STARTS_WITH(URA_X(3), URA_GS("a\0b")), URA_G_NOT_EMPTY(URA_X(3)),
			  URA_G_EQ(URA_G_FRONT(URA_X(3)), URA_GI('a')), URA_G_GE(URA_G_SIZE(URA_X(3)), URA_GI(1))),
		URA_G_IN(URA_X(1), URA_GI(1), URA_GI(8), URA_GD(9.5)),
		URA_G_NOT_IN(URA_X(4), URA_G_ATOM("put"), URA_GA(A_TAKE)),
		URA_G_EQ(URA_X(2), URA_GB("\0\1\2", 3)),
		URA_G_AND(URA_G_GT(URA_G_FIELD(st, avg), URA_GD(1)), URA_G_EQ(URA_X(1), URA_G_BOUND)),
		URA_G_EQ(URA_G_SUB(URA_G_DIV(URA_X(1), URA_GI(3)), URA_G_MUL(URA_X(1), URA_GI(2))), URA_GI(-4)),
	};
	int64_t up[2] = { 1, 2 };
	ura_value samples[][4] = {
		{ ura_v_i64(8), ura_v_bytes(up, 16), ura_v_str("abc"), ura_v_atom(A_PUT) },
		{ ura_v_i64(7), ura_v_bytes("\0\1\2", 3), ura_v_str(""), ura_v_atom(A_N) },
		{ ura_v_f64(3), ura_v_i64(1), ura_v_str("a"), ura_v_i64(0) },
		{ ura_v_i64(3), ura_v_str("x"), ura_v_bytes("ab", 2), ura_v_atom(A_TAKE) },
	};
	ura_value bound = ura_v_i64(8);
	int all = 1;
	for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
		unsigned char buf[512];
		char f1[256], f2[256];
		ura_guard_node *back = NULL;
		long n = ura_guard_serialize(gs[i], syms, 3, buf, sizeof buf);
		int rc = n > 0 ? ura_guard_deserialize(buf, (size_t)n, syms, 3, &back) : (int)n;
		if (rc) {
			t_diag("guard %zu: %ld %d", i, n, rc);
			all = 0;
			continue;
		}
		ura_guard_format(gs[i], f1, sizeof f1);
		ura_guard_format(back, f2, sizeof f2);
		int same = !strcmp(f1, f2);
		for (size_t s = 0; s < sizeof samples / sizeof samples[0]; s++)
			same &= ura_guard_match(gs[i], samples[s], 4, &bound) ==
				ura_guard_match(back, samples[s], 4, &bound);
		if (!same)
			t_diag("guard %zu differs: %s / %s", i, f1, f2);
		all &= same;
		/* Every truncation and every single-byte change: refused or a
		 * checked guard, never a crash. */
		for (long k = 0; k < n; k++) {
			ura_guard_node *x = NULL;
			if (ura_guard_deserialize(buf, (size_t)k, syms, 3, &x) != -EINVAL)
				all = 0, t_diag("guard %zu: prefix %ld accepted", i, k);
			ura_guard_free(x);
			unsigned char save = buf[k];
			buf[k] ^= (unsigned char)(1u << (rnd() % 8));
			x = NULL;
			if (ura_guard_deserialize(buf, (size_t)n, syms, 3, &x) == 0) {
				if (ura_guard_check(x, NULL))
					all = 0, t_diag("guard %zu: flip at %ld gave a bad guard", i, k);
				for (size_t s = 0; s < 4; s++)
					ura_guard_match(x, samples[s], 4, &bound);
				ura_guard_free(x);
			}
			buf[k] = save;
		}
		ura_guard_free(back);
	}
	t_ok(all, "round trip of %zu guards: same text, same verdicts; truncated and damaged input refused or checked",
	     sizeof gs / sizeof gs[0]);
	unsigned char junk[300];
	int fuzz_ok = 1;
	for (int i = 0; i < 2000; i++) {
		size_t n = 4 + rnd() % 64;
		memcpy(junk, "URG1", 4);
		for (size_t k = 4; k < n; k++)
			junk[k] = (unsigned char)(rnd() % 8 ? rnd() % 40 : rnd());
		ura_guard_node *x = NULL;
		if (ura_guard_deserialize(junk, n, syms, 3, &x) == 0) {
			fuzz_ok &= ura_guard_check(x, NULL) == 0;
			ura_guard_free(x);
		}
	}
	t_ok(fuzz_ok, "random input: refused, or a checked guard");

	static int64_t other;
	unsigned char buf[256];
	t_rc((int)ura_guard_serialize(URA_G_EQ(URA_X(1), URA_G_REF(&other)), syms, 3, buf, sizeof buf),
	     -EINVAL, "an unnamed reference does not serialize");
	t_rc((int)ura_guard_serialize(URA_G_CALL(len_plus, URA_X(1)), syms, 3, buf, sizeof buf),
	     -EINVAL, "an unnamed function does not serialize");
	t_ok(ura_guard_serialize(URA_G_EQ(URA_X(1), URA_GI(0)), NULL, 0, buf, sizeof buf) > 0,
	     "no table needed without references");
	long n = ura_guard_serialize(gs[1], syms, 3, buf, sizeof buf);
	ura_guard_node *x = NULL;
	t_rc(ura_guard_deserialize(buf, (size_t)n, syms, 1, &x), -EINVAL, "a name the table lacks: -EINVAL");
	static const ura_guard_sym wrong[] = {
		{ .name = "s_ival", .ref = &s_ival, .kind = URA__GR_F64 },
		URA_GSYM_REF("s_flag", &s_flag),
	};
	t_rc(ura_guard_deserialize(buf, (size_t)n, wrong, 2, &x), -EINVAL,
	     "a variable of another type: -EINVAL");
	memset(buf, 0xaa, sizeof buf);
	long want = ura_guard_serialize(gs[0], NULL, 0, buf, 3);
	t_ok(want > 3 && buf[0] == 0xaa, "too small a buffer: the size, nothing written (%ld)", want);
	t_rc(ura_guard_deserialize("XXXX", 4, NULL, 0, &x), -EINVAL, "bad magic: -EINVAL");
}

/* ---- the seed's examples on actors --------------------------------------- */

static _Atomic int evens, odds, by_value, by_ref, others, flagged, unflagged, sorted_n, unsorted_n;
static _Atomic int flag_on;
static int64_t ival;

static void on_even(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; evens++; }
static void on_odd(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; odds++; }

/* on<int>().when(_x1 % 2 == 0) >> even, on<int>() >> odd */
URA_BEHAVIOR(parity,
	URA_ON(A_N, "i", on_even, URA_WHEN(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)))),
	URA_ON(A_N, "i", on_odd));

static void on_value(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; by_value++; }
static void on_ref(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; by_ref++; }
static void on_other(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; others++; }

static void on_flagged(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; flagged++; }
static void on_unflagged(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; unflagged++; }
/* A guard that reads only a flag: matches anything while the flag holds. */
URA_BEHAVIOR(flag_reader,
	URA_ON_ANY(0, on_flagged, URA_WHEN(URA_G_REF(&flag_on))),
	URA_ON_ANY(0, on_unflagged));

static void on_sorted(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; sorted_n++; }
static void on_unsorted(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; unsorted_n++; }
URA_BEHAVIOR(vectors,
	URA_ON(A_V, "b", on_sorted, URA_WHEN(URA_G_CALL(sorted, URA_X(1)))),
	URA_ON(A_V, "b", on_unsorted));

static const ura_class parity_class = { .name = "parity", .initial = &parity };
static const ura_class flag_class = { .name = "flag", .initial = &flag_reader };
static const ura_class vectors_class = { .name = "vectors", .initial = &vectors };

/* Built at run time inside a function: ura_behavior_new must copy it. */
static ura_behavior *make_ival_behavior(void)
{
	ura_case cs[] = {
		/* _x1 == ival: ival copied now */
		URA_ON(A_N, "i", on_value, URA_WHEN(URA_G_EQ(URA_X(1), URA_GI(ival)))),
		/* _x1 == gref(ival): ival read at each message */
		URA_ON(A_N, "i", on_ref, URA_WHEN(URA_G_EQ(URA_X(1), URA_G_REF(&ival)))),
		URA_ON_ANY(0, on_other),
	};
	ura_behavior *b = NULL;
	t_must(ura_behavior_new(&b, cs, 3, URA_UNMATCHED_DROP));
	return b;
}

/* Scribbles over the stack where make_ival_behavior's literals were. */
static __attribute__((noinline)) unsigned scribble(void)
{
	volatile unsigned char junk[4096];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = 0xa5;
	return junk[100];
}

static void test_seed(void)
{
	ura_system *sys = t_system(2);
	ura_ref a;
	t_must(ura_spawn(sys, &parity_class, NULL, &a));
	for (int i = 0; i < 10; i++)
		ura_send(sys, a, A_N, i);
	ura_system_await(sys);
	t_ok(evens == 5 && odds == 5, "even/odd dispatch (%d even, %d odd)", evens, odds);

	ival = 2;
	ura_behavior *b = make_ival_behavior();
	scribble();
	t_rc(ura_behavior_check(b), 0, "the copied behavior checks");
	ura_class ival_class = { .name = "ival", .initial = b };
	t_must(ura_spawn(sys, &ival_class, NULL, &a));
	ura_send(sys, a, A_N, 2);  /* both would match: the first case wins */
	ura_system_await(sys);
	ival = 3;                  /* the by-value guard still wants 2 */
	ura_send(sys, a, A_N, 3);  /* only gref(ival) sees 3 */
	ura_send(sys, a, A_N, 2);  /* the copy of 2 */
	ura_send(sys, a, A_N, 4);  /* neither */
	ura_system_await(sys);
	t_ok(by_value == 2 && by_ref == 1 && others == 1,
	     "ival by value vs gref(ival): value %d, ref %d, neither %d", by_value, by_ref, others);

	t_must(ura_spawn(sys, &flag_class, NULL, &a));
	ura_send(sys, a, A_N, 1);
	ura_send(sys, a, A_V, "x", 2.5);
	ura_system_await(sys);
	atomic_store(&flag_on, 1);
	ura_send(sys, a, A_N, 1);
	ura_send(sys, a, A_V, "x", 2.5);
	ura_send(sys, a, A_END);
	ura_system_await(sys);
	t_ok(unflagged == 2 && flagged == 3, "a flag-only guard matches anything while it holds (%d, %d)",
	     flagged, unflagged);

	t_must(ura_spawn(sys, &vectors_class, NULL, &a));
	int64_t up[5] = { -4, 0, 0, 3, 100 }, down[3] = { 1, 3, 2 };
	ura_send(sys, a, A_V, ura_v_bytes(up, sizeof up));
	ura_send(sys, a, A_V, ura_v_bytes(down, sizeof down));
	ura_send(sys, a, A_V, ura_v_bytes(NULL, 0));
	ura_system_await(sys);
	t_ok(sorted_n == 2 && unsorted_n == 1, "sorted vector by gcall (%d sorted, %d not)", sorted_n, unsorted_n);
	t_destroy(sys);
	ura_behavior_free(b);
}

/* ---- bound value, state fields and hostile messages on actors ----------- */

static _Atomic int taken, busy_n, put_ok, ignored, field_hits, any_hits;

static const ura_behavior available;
static void busy(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; busy_n++; }
static void put_back(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	put_ok++;
	ura_become(cx, &available);
}
static void ignore(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; ignored++; }
/* libcppa's taken_by(philos): on(atom("put"), philos) */
URA_BEHAVIOR(taken_by,
	URA_ON(A_TAKE, "r", busy),
	URA_ON(A_PUT, "r", put_back, URA_WHEN(URA_G_EQ(URA_X(1), URA_G_BOUND))),
	URA_ON(A_PUT, "r", ignore));
static void take(ura_ctx *cx, const ura_msg *m)
{
	taken++;
	ura_become_bound(cx, &taken_by, ura_arg_ref(m, 0));
}
URA_BEHAVIOR(available, URA_ON(A_TAKE, "r", take));
static const ura_class chopstick_class = { .name = "chopstick", .initial = &available };

typedef struct { int64_t limit; int64_t seen; } lim_state;
static void on_field(ura_ctx *cx, const ura_msg *m)
{
	lim_state *s = ura_state(cx);
	(void)m;
	s->seen++;
	field_hits++;
}
/* Matches while x1 is below the actor's own limit (a state field). */
URA_BEHAVIOR(limited,
	URA_ON(A_N, "i", on_field, URA_WHEN(URA_G_LT(URA_X(1), URA_G_FIELD(lim_state, limit)))),
	URA_ON(A_N, "i", on_other));
static const ura_class limited_class = { .name = "limited", .state_size = sizeof(lim_state),
					 .initial = &limited };

static void on_any_hit(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; any_hits++; }
/* Untyped cases: whatever a message carries, the guard decides. */
URA_BEHAVIOR(untyped,
	URA_ON_ANY(A_ANY, on_any_hit,
		   URA_WHEN(URA_G_AND(URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI('o')),
				      URA_G_GT(URA_G_ADD(URA_X(2), URA_GI(1)), URA_GI(2)),
				      URA_G_EQ(URA_G_DIV(URA_GI(100), URA_X(3)), URA_GI(50))))),
	URA_ON_ANY(0, h_nop));
static const ura_class untyped_class = { .name = "untyped", .initial = &untyped };

static void test_actors(void)
{
	ura_system *sys = t_system(2);
	ura_ref stick, p1, p2, lim, u;
	t_must(ura_spawn(sys, &chopstick_class, NULL, &stick));
	t_must(ura_spawn(sys, &chopstick_class, NULL, &p1)); /* any refs will do */
	t_must(ura_spawn(sys, &chopstick_class, NULL, &p2));
	ura_send(sys, stick, A_TAKE, p1);
	ura_send(sys, stick, A_TAKE, p2);
	ura_send(sys, stick, A_PUT, p2);  /* not the holder */
	ura_send(sys, stick, A_PUT, p1);  /* the holder */
	ura_send(sys, stick, A_TAKE, p2);
	ura_system_await(sys);
	t_ok(taken == 2 && busy_n == 1 && ignored == 1 && put_ok == 1,
	     "put only from the bound holder (taken %d, busy %d, ignored %d, put %d)",
	     taken, busy_n, ignored, put_ok);

	t_must(ura_spawn(sys, &limited_class, &(lim_state){ .limit = 3 }, &lim));
	for (int i = 0; i < 6; i++)
		ura_send(sys, lim, A_N, i);
	ura_system_await(sys);
	t_ok(field_hits == 3, "a guard on a state field (%d of 6 below the limit)", field_hits);

	t_must(ura_spawn(sys, &untyped_class, NULL, &u));
	ura_send(sys, u, A_ANY, "ok", 2, 2);            /* matches */
	ura_send(sys, u, A_ANY, "ok", 2);               /* x3 missing */
	ura_send(sys, u, A_ANY);                        /* nothing at all */
	ura_send(sys, u, A_ANY, "", 2, 2);              /* empty front */
	ura_send(sys, u, A_ANY, 7, 2, 2);               /* front of an int */
	ura_send(sys, u, A_ANY, "ok", "2", 2);          /* "2" + 1 */
	ura_send(sys, u, A_ANY, "ok", INT64_MAX, 2);    /* overflow */
	ura_send(sys, u, A_ANY, "ok", 2, 0);            /* 100 / 0 */
	ura_send(sys, u, A_ANY, "ok", 2.5, 2);          /* double + 1 > 2: fine */
	ura_send(sys, u, A_ANY, ura_v_bytes("o", 1), 2, 2); /* bytes front */
	ura_send(sys, u, A_ANY, ura_v_bytes(NULL, 0), 2, 2);
	ura_send(sys, u, A_ANY, ura_v_atom(A_PUT), ura_v_ref(stick), (void *)0);
	ura_system_await(sys);
	t_eq(any_hits, 3, "hostile messages: only the well-formed ones match");
	t_destroy(sys);
}

/* ---- loops: do_receive(...).until(gref(done)) ----------------------------- */

typedef struct { int64_t sum; bool done; int64_t ticks; } adder;
static _Atomic int64_t reported = -1;
static _Atomic int report_n, loop_ticks;
static _Atomic int ext_done;

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
static void report(ura_ctx *cx, const ura_msg *m)
{
	adder *s = ura_state(cx);
	(void)m;
	reported = s->sum;
	report_n++;
}

static const ura_behavior reporting;
/* bool done = false;
 * do_receive(on(atom("add"), arg_match) >> [&](int x) { sum += x; },
 *            on(atom("end")) >> [&] { done = true; })
 * .until(gref(done));
 * then: receive(on(atom("get")) >> ...) */
URA_BEHAVIOR_UNTIL(summing, URA_G_FIELD(adder, done), &reporting,
	URA_ON(A_ADD, "i", add),
	URA_ON(A_END, "", end));
URA_BEHAVIOR(reporting,
	URA_ON(A_GET, "", report),
	URA_ON(A_ADD, "i", h_nop)); /* the loop is over: adds no longer count */
static const ura_class adder_class = { .name = "adder", .state_size = sizeof(adder),
				       .initial = &summing };

static void tick(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	loop_ticks++;
}
/* A flag from outside, and no next behavior: the actor stops. */
URA_BEHAVIOR_UNTIL_OPTS(ticking, (.unmatched = URA_UNMATCHED_DROP), URA_G_REF(&ext_done), NULL,
	URA_ON(A_TICK, "", tick));
static const ura_class ticker_class = { .name = "ticker", .initial = &ticking };

static void test_until(void)
{
	ura_system *sys = t_system(2);
	ura_ref a, t;
	t_rc(ura_behavior_check(&summing), 0, "a loop checks");
	t_must(ura_spawn(sys, &adder_class, NULL, &a));
	ura_send(sys, a, A_ADD, 1);
	ura_send(sys, a, A_GET);     /* no case of the loop: dropped */
	ura_send(sys, a, A_ADD, 2);
	ura_send(sys, a, A_ADD, 39);
	ura_send(sys, a, A_END);     /* done: becomes `reporting` right after */
	ura_send(sys, a, A_ADD, 100);
	ura_send(sys, a, A_GET);
	ura_system_await(sys);
	t_ok(reported == 42 && report_n == 1, "until(done): the loop summed 42 and handed over (got %lld, %d)",
	     (long long)reported, report_n);
	ura_stats st;
	ura_system_stats(sys, &st);
	t_eq(st.unmatched, 1, "the loop's unmatched message went to its policy");

	t_must(ura_spawn(sys, &ticker_class, NULL, &t));
	ura_send(sys, t, A_TICK);
	ura_send(sys, t, A_TICK);
	ura_system_await(sys);
	atomic_store(&ext_done, 1);
	t_rc(ura_send(sys, t, A_TICK), 0, "the flag is set, the loop still runs until a message");
	ura_system_await(sys);
	int rc = ura_send(sys, t, A_TICK);
	t_ok(loop_ticks == 3 && rc == -ESRCH, "a loop with no next behavior stops (ticks %d, send %d)",
	     loop_ticks, rc);
	t_destroy(sys);
}

int main(void)
{
	test_placeholders();
	test_compare();
	test_arith();
	test_logic();
	test_refs();
	test_calls();
	test_strings();
	test_validation();
	test_hostile();
	test_format();
	test_serialize();
	test_seed();
	test_actors();
	test_until();
	return t_done();
}
