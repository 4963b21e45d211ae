/* SPDX-License-Identifier: MIT */
/*
 * values: every value type round-trips through a message; strings and
 * bytes are copied at send; long signatures (8+ values) match; message
 * introspection (types, count, format); wrong-type accessors; the send
 * errors for bad values, oversized payloads and tag 0; atoms.
 */
#include <errno.h>
#include <math.h>

#include "tap.h"

#define A_ALL URA_ATOM("all")
#define A_STR URA_ATOM("str")
#define A_BYTES URA_ATOM("bytes")
#define A_LONG URA_ATOM("long")
#define A_FMT URA_ATOM("take")
#define A_WRONG URA_ATOM("wrong")
#define A_COPY URA_ATOM("copy")
#define A_RELAY URA_ATOM("relay")
#define A_SEVEN URA_ATOM("seven")
#define A_X URA_ATOM("x")

/* ---- what the receiver saw ------------------------------------------ */

static struct {
	int ran;
	char types[32];
	unsigned count;
	int64_t imin, imax, izero;
	uint64_t nan_bits, negz_bits, one_bits;
	int is_nan, negz_signbit;
	double dbl;
	ura_atom atom;
	ura_ref ref;
	void *ptr;
	char s_text[64], s_empty[8], s_null[8];
	int s_empty_ok, s_null_ok;
	uint32_t s_len, s_empty_len, s_null_len;
	unsigned char b[16];
	size_t b_len, b0_len;
	int b_ok, b0_ok;
	uint32_t b_vlen;
} got;

static int g_marker;

static void on_all(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	got.ran++;
	snprintf(got.types, sizeof got.types, "%s", ura_msg_types(m));
	got.count = ura_msg_count(m);
	got.imin = ura_arg_i64(m, 0);
	got.imax = ura_arg_i64(m, 1);
	got.izero = ura_arg_i64(m, 2);
	double d = ura_arg_f64(m, 3);
	got.is_nan = isnan(d);
	memcpy(&got.nan_bits, &d, 8);
	d = ura_arg_f64(m, 4);
	got.negz_signbit = signbit(d) != 0;
	memcpy(&got.negz_bits, &d, 8);
	got.dbl = ura_arg_f64(m, 5);
	got.atom = ura_arg_atom(m, 6);
	got.ref = ura_arg_ref(m, 7);
	got.ptr = ura_arg_ptr(m, 8);
	const char *s = ura_arg_str(m, 9);
	snprintf(got.s_text, sizeof got.s_text, "%s", s ? s : "(null)");
	got.s_len = ura_msg_value(m, 9).len;
	s = ura_arg_str(m, 10);
	got.s_empty_ok = s && !*s;
	got.s_empty_len = ura_msg_value(m, 10).len;
	s = ura_arg_str(m, 11);
	got.s_null_ok = s && !*s;
	got.s_null_len = ura_msg_value(m, 11).len;
	const void *b = ura_arg_bytes(m, 12, &got.b_len);
	got.b_ok = b && got.b_len <= sizeof got.b;
	if (got.b_ok)
		memcpy(got.b, b, got.b_len);
	got.b_vlen = ura_msg_value(m, 12).len;
	got.b0_len = 99;
	ura_arg_bytes(m, 13, &got.b0_len);
	got.b0_ok = !strcmp(ura_msg_types(m) + 13, "b");
}

/* Copies: strings and bytes from a sender that overwrites its buffers. */
static char g_copy_s[64];
static unsigned char g_copy_b[64];
static size_t g_copy_b_len;
static int g_copy_ran;
static void on_copy(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	const char *s = ura_arg_str(m, 0);
	snprintf(g_copy_s, sizeof g_copy_s, "%s", s ? s : "(null)");
	const void *b = ura_arg_bytes(m, 1, &g_copy_b_len);
	if (b && g_copy_b_len <= sizeof g_copy_b)
		memcpy(g_copy_b, b, g_copy_b_len);
	g_copy_ran++;
}

/* A handler that sends from a buffer it overwrites at once. */
static void on_relay(ura_ctx *cx, const ura_msg *m)
{
	char buf[32];
	unsigned char bytes[8] = { 1, 0, 2, 0, 3, 0, 4, 0 };
	strcpy(buf, "from-handler");
	ura_send(cx, ura_arg_ref(m, 0), A_COPY, buf, ura_v_bytes(bytes, sizeof bytes));
	memset(buf, 'X', sizeof buf - 1);
	buf[sizeof buf - 1] = 0;
	memset(bytes, 0xee, sizeof bytes);
}

/* Long signatures. */
static int g_long8, g_long9, g_long16, g_seven, g_long_wrong;
static char g_long_types[32];
static unsigned g_long_count;
static int64_t g_long_sum;
static void on_long8(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	g_long8++;
	snprintf(g_long_types, sizeof g_long_types, "%s", ura_msg_types(m));
	g_long_count = ura_msg_count(m);
	g_long_sum = 0;
	for (unsigned i = 0; i < 8; i++)
		g_long_sum += ura_arg_i64(m, i);
}
static void on_long9(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (ura_msg_count(m) == 9 && !strcmp(ura_arg_str(m, 8), "ninth") &&
	    ura_arg_atom(m, 1) == A_X && ura_arg_f64(m, 2) == 2.5)
		g_long9++;
}
static void on_long16(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t sum = 0;
	for (unsigned i = 0; i < 16; i++)
		sum += ura_arg_i64(m, i);
	if (ura_msg_count(m) == 16 && sum == 136 && strlen(ura_msg_types(m)) == 16)
		g_long16++;
}
static void on_seven(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (ura_msg_count(m) == 7 && !strcmp(ura_msg_types(m), "iiiiiii"))
		g_seven++;
}
static void on_long_wrong(ura_ctx *cx, const ura_msg *m)
{
	(void)cx; (void)m;
	g_long_wrong++;
}

/* Format. */
static char g_fmt[128], g_fmt_trunc[8];
static int g_fmt_len, g_fmt_len_null, g_fmt_len_trunc;
static char g_fmt_empty[32];
static void on_fmt(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (ura_msg_count(m) == 0) {
		ura_msg_format(m, g_fmt_empty, sizeof g_fmt_empty);
		return;
	}
	g_fmt_len = ura_msg_format(m, g_fmt, sizeof g_fmt);
	g_fmt_len_null = ura_msg_format(m, NULL, 0);
	memset(g_fmt_trunc, '#', sizeof g_fmt_trunc);
	g_fmt_len_trunc = ura_msg_format(m, g_fmt_trunc, sizeof g_fmt_trunc);
}

/* Wrong-type accessors on an ("i") message. */
static struct {
	int ran;
	double f;
	ura_atom a;
	ura_ref r;
	const char *s;
	const void *b;
	size_t blen;
	void *p;
	int64_t i_oob;
	ura_value v_oob;
	int64_t i_ok;
} wr;
static void on_wrong(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	wr.ran++;
	wr.f = ura_arg_f64(m, 0);
	wr.a = ura_arg_atom(m, 0);
	wr.r = ura_arg_ref(m, 0);
	wr.s = ura_arg_str(m, 0);
	wr.blen = 77;
	wr.b = ura_arg_bytes(m, 0, &wr.blen);
	wr.p = ura_arg_ptr(m, 0);
	wr.i_oob = ura_arg_i64(m, 1);
	wr.v_oob = ura_msg_value(m, 5);
	wr.i_ok = ura_arg_i64(m, 0);
}

URA_BEHAVIOR(recv_beh,
	URA_ON(A_ALL, "iiidddarpsssbb", on_all),
	URA_ON(A_COPY, "sb", on_copy),
	URA_ON(A_RELAY, "r", on_relay),
	URA_ON(A_LONG, "iiiiiiii", on_long8),
	URA_ON(A_LONG, "iaddiiiis", on_long9),
	URA_ON(A_LONG, "iiiiiiiiiiiiiiii", on_long16),
	URA_ON(A_LONG, "iiiiiii", on_seven),
	URA_ON_ANY(A_LONG, on_long_wrong),
	URA_ON_ANY(A_FMT, on_fmt),
	URA_ON(A_WRONG, "i", on_wrong));
static const ura_class recv_class = { .name = "recv", .initial = &recv_beh };

static ura_system *paused_system(void)
{
	ura_system *sys;
	ura_config cfg = { .workers = 2, .paused = 1 };
	t_must(ura_system_new(&sys, &cfg));
	return sys;
}

static void test_round_trip(void)
{
	ura_system *sys = t_system(2);
	ura_ref r, other;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	t_must(ura_spawn(sys, &recv_class, NULL, &other));
	const unsigned char bytes[5] = { 'a', 0, 'b', 0, 'c' };
	double nan = NAN;
	uint64_t nan_bits;
	memcpy(&nan_bits, &nan, 8);
	double negz = -0.0;
	uint64_t negz_bits;
	memcpy(&negz_bits, &negz, 8);
	ura_value vals[] = {
		ura_v_i64(INT64_MIN), ura_v_i64(INT64_MAX), ura_v_i64(0),
		ura_v_f64(nan), ura_v_f64(negz), ura_v_f64(-1.25e300),
		ura_v_atom(URA_ATOM("Zz_09")), ura_v_ref(other), ura_v_ptr(&g_marker),
		ura_v_str("hello, world"), ura_v_str(""), ura_v_str(NULL),
		ura_v_bytes(bytes, sizeof bytes), ura_v_bytes(NULL, 0),
	};
	t_rc(ura_sendv_sys(sys, r, A_ALL, vals, 14), 0, "send 14 values of every type");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(got.ran, 1, "the 14-type case matched once");
	t_streq(got.types, "iiidddarpsssbb", "ura_msg_types of a 14-value message");
	t_eq(got.count, 14, "ura_msg_count");
	t_ok(got.imin == INT64_MIN, "INT64_MIN round-trips");
	t_ok(got.imax == INT64_MAX, "INT64_MAX round-trips");
	t_eq(got.izero, 0, "0 round-trips");
	t_ok(got.is_nan, "NaN stays NaN");
	t_ok(got.nan_bits == nan_bits, "NaN bits preserved");
	t_ok(got.negz_signbit && got.negz_bits == negz_bits, "-0.0 keeps its sign");
	t_ok(got.dbl == -1.25e300, "a large double round-trips");
	t_ok(got.atom == URA_ATOM("Zz_09"), "atom round-trips");
	t_ok(ura_ref_eq(got.ref, other), "ref round-trips");
	t_ok(got.ptr == (void *)&g_marker, "opaque pointer round-trips unchanged");
	t_streq(got.s_text, "hello, world", "string round-trips");
	t_eq(got.s_len, 12, "received string's len is its strlen");
	t_ok(got.s_empty_ok, "empty string round-trips as \"\"");
	t_eq(got.s_empty_len, 0, "empty string len 0");
	t_ok(got.s_null_ok, "NULL string arrives as \"\"");
	t_eq(got.s_null_len, 0, "NULL string len 0");
	t_ok(got.b_ok && got.b_len == 5 && !memcmp(got.b, bytes, 5),
	     "bytes with embedded zeros round-trip (len %zu)", got.b_len);
	t_eq(got.b_vlen, 5, "ura_msg_value().len of bytes");
	t_eq(got.b0_len, 0, "zero-length bytes arrive with length 0");
	t_ok(got.b0_ok, "zero-length bytes keep their type");
	t_destroy(sys);
}

static void test_copies(void)
{
	/* Paused: the receiver certainly runs after the sender scribbled. */
	ura_system *sys = paused_system();
	ura_ref r;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	char *s = malloc(64);
	unsigned char *b = malloc(16);
	if (!s || !b) {
		t_ok(0, "malloc");
		return;
	}
	strcpy(s, "original text");
	for (int i = 0; i < 16; i++)
		b[i] = (unsigned char)(i % 3 == 0 ? 0 : i);
	unsigned char want_b[16];
	memcpy(want_b, b, 16);
	t_rc(ura_send(sys, r, A_COPY, s, ura_v_bytes(b, 16)), 0, "send string and bytes");
	memset(s, 'Z', 63);
	s[63] = 0;
	memset(b, 0xff, 16);
	free(s);
	free(b);
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_copy_ran, 1, "handled");
	t_streq(g_copy_s, "original text", "string was copied at send");
	t_ok(g_copy_b_len == 16 && !memcmp(g_copy_b, want_b, 16), "bytes were copied at send");

	/* The same from a handler's send. */
	ura_ref relay;
	t_must(ura_spawn(sys, &recv_class, NULL, &relay));
	t_must(ura_send(sys, relay, A_RELAY, r));
	t_rc(ura_system_await(sys), 0, "await");
	const unsigned char want8[8] = { 1, 0, 2, 0, 3, 0, 4, 0 };
	t_eq(g_copy_ran, 2, "relayed copy handled");
	t_streq(g_copy_s, "from-handler", "string sent by a handler was copied");
	t_ok(g_copy_b_len == 8 && !memcmp(g_copy_b, want8, 8), "bytes sent by a handler were copied");
	t_destroy(sys);
}

static void test_long_signatures(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	t_must(ura_send(sys, r, A_LONG, 1, 2, 3, 4, 5, 6, 7, 8));
	t_must(ura_send(sys, r, A_LONG, 1, ura_v_atom(A_X), 2.5, 2.5, 5, 6, 7, 8, "ninth"));
	t_must(ura_send(sys, r, A_LONG, 1, 2, 3, 4, 5, 6, 7));
	/* 8 values differing from the 8-int case only in the last type. */
	t_must(ura_send(sys, r, A_LONG, 1, 2, 3, 4, 5, 6, 7, 8.0));
	/* 9 ints: no 9-int case. */
	t_must(ura_send(sys, r, A_LONG, 1, 2, 3, 4, 5, 6, 7, 8, 9));
	ura_value v16[16];
	for (int i = 0; i < 16; i++)
		v16[i] = ura_v_i64(i + 1);
	t_rc(ura_sendv_sys(sys, r, A_LONG, v16, 16), 0, "send 16 values (URA_MAX_VALUES)");
	ura_value v17[17];
	for (int i = 0; i < 17; i++)
		v17[i] = ura_v_i64(i);
	t_rc(ura_sendv_sys(sys, r, A_LONG, v17, 17), -EINVAL, "17 values: -EINVAL");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_long8, 1, "8 ints matched the 8-type case once");
	t_streq(g_long_types, "iiiiiiii", "ura_msg_types of an 8-value message");
	t_eq(g_long_count, 8, "ura_msg_count of an 8-value message");
	t_eq(g_long_sum, 36, "8 values read back");
	t_eq(g_long9, 1, "a 9-value mixed message matched its 9-type case");
	t_eq(g_long16, 1, "16 values matched the 16-type case");
	t_eq(g_seven, 1, "7 values matched the 7-type case (not a long one)");
	t_eq(g_long_wrong, 2, "8 values with a different last type, and 9 ints, fell through");
	t_destroy(sys);
}

static void test_format(void)
{
	ura_system *sys = t_system(2);
	ura_ref r, other;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	t_must(ura_spawn(sys, &recv_class, NULL, &other));
	const unsigned char three[3] = { 0, 1, 2 };
	t_must(ura_send(sys, r, A_FMT, other, 42, "x", 1.5, ura_v_atom(URA_ATOM("ok")),
			ura_v_bytes(three, 3), -7));
	t_must(ura_send(sys, r, A_FMT));
	t_rc(ura_system_await(sys), 0, "await");
	char want[128];
	/* A ref prints as <slot.generation>; the low word's top 6 bits are
	 * the system's tag (lib/core/slot.h), not part of the slot number. */
	snprintf(want, sizeof want, "take(<%u.%u>, 42, \"x\", 1.5, 'ok', <3 bytes>, -7)",
		 (unsigned)(uint32_t)other.id & ((1u << 26) - 1),
		 (unsigned)(uint32_t)(other.id >> 32));
	t_streq(g_fmt, want, "ura_msg_format renders tag and every value");
	t_eq(g_fmt_len, (int)strlen(want), "it returns the length it wrote");
	t_eq(g_fmt_len_null, (int)strlen(want), "with no buffer, the length it wants");
	t_eq(g_fmt_len_trunc, (int)strlen(want), "truncated: still the full length");
	t_ok(!memcmp(g_fmt_trunc, want, 7) && g_fmt_trunc[7] == 0,
	     "truncated output is a NUL-terminated prefix");
	t_streq(g_fmt_empty, "take()", "a message with no values");
	t_destroy(sys);
}

static void test_wrong_accessors(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	t_must(ura_send(sys, r, A_WRONG, 12345));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(wr.ran, 1, "handled");
	t_eq(wr.i_ok, 12345, "the right accessor reads the value");
	t_ok(wr.f == 0.0, "ura_arg_f64 on an int: 0.0");
	t_ok(wr.a == 0, "ura_arg_atom on an int: 0");
	t_ok(ura_ref_null(wr.r), "ura_arg_ref on an int: URA_NOREF");
	t_ok(wr.s == NULL, "ura_arg_str on an int: NULL");
	t_ok(wr.b == NULL && wr.blen == 0, "ura_arg_bytes on an int: NULL, length 0");
	t_ok(wr.p == NULL, "ura_arg_ptr on an int: NULL");
	t_eq(wr.i_oob, 0, "ura_arg_i64 past the end: 0");
	t_ok(wr.v_oob.type == 0 && wr.v_oob.len == 0 && wr.v_oob.u.i64 == 0,
	     "ura_msg_value past the end: all zero");
	t_destroy(sys);
}

static void test_send_errors(void)
{
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &recv_class, NULL, &r));
	ura_value bad = ura_v_i64(1);
	bad.type = 'x';
	t_rc(ura_sendv_sys(sys, r, A_X, &bad, 1), -EINVAL, "unknown value type: -EINVAL");
	bad.type = 0;
	t_rc(ura_sendv_sys(sys, r, A_X, &bad, 1), -EINVAL, "value type 0: -EINVAL");
	ura_value nullbytes = ura_v_bytes(NULL, 4);
	t_rc(ura_sendv_sys(sys, r, A_X, &nullbytes, 1), -EINVAL, "NULL bytes with a length: -EINVAL");
	t_rc(ura_sendv_sys(sys, r, A_X, NULL, 2), -EINVAL, "NULL vals with n > 0: -EINVAL");
	t_rc(ura_send(sys, r, 0, 1), -EINVAL, "tag 0: -EINVAL");
	t_rc(ura_send(sys, r, 0), -EINVAL, "tag 0, no values: -EINVAL");
	size_t big = (size_t)URA_MSG_MAX + 1;
	unsigned char *p = malloc(big); /* never touched: the send must refuse first */
	if (p) {
		t_rc(ura_send(sys, r, A_X, ura_v_bytes(p, big)), -EMSGSIZE,
		     "bytes over URA_MSG_MAX: -EMSGSIZE");
		ura_value two[2] = { ura_v_bytes(p, URA_MSG_MAX / 2 + 1),
				     ura_v_bytes(p, URA_MSG_MAX / 2 + 1) };
		t_rc(ura_sendv_sys(sys, r, A_X, two, 2), -EMSGSIZE,
		     "two values together over URA_MSG_MAX: -EMSGSIZE");
		free(p);
	} else {
		t_skip("no memory for an oversized buffer");
		t_skip("no memory for an oversized buffer");
	}
	t_rc(ura_send(sys, r, A_X, ura_v_bytes(&r, (size_t)UINT32_MAX + 10)), -EMSGSIZE,
	     "a length beyond 32 bits: -EMSGSIZE");
	t_rc(ura_system_await(sys), 0, "await");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.sent, 0, "no failed send was accepted");
	t_eq(st.received, 0, "nothing arrived");
	t_destroy(sys);
}

static void test_atoms(void)
{
	char buf[URA_ATOM_MAX + 1];
	t_streq(ura_atom_name(URA_ATOM("take"), buf), "take", "URA_ATOM(\"take\") decodes to take");
	t_streq(ura_atom_name(URA_ATOM("abcdefghij"), buf), "abcdefghij", "10-char atom decodes");
	t_streq(ura_atom_name(URA_ATOM("Z9_zA0b1c2"), buf), "Z9_zA0b1c2",
		"10 chars from every class decode");
	t_streq(ura_atom_name(0, buf), "", "atom 0 decodes to \"\"");
	ura_atom a = 0;
	t_rc(ura_atom_from("take", &a), 0, "ura_atom_from(\"take\")");
	t_ok(a == URA_ATOM("take"), "run-time atom equals the compile-time one");
	t_rc(ura_atom_from("_0aZ_9zA_1", &a), 0, "ura_atom_from of 10 chars");
	t_ok(a == URA_ATOM("_0aZ_9zA_1"), "10-char run-time atom equals URA_ATOM");
	t_streq(ura_atom_name(a, buf), "_0aZ_9zA_1", "and decodes back");
	const char *names[] = { "a", "z", "A", "Z", "0", "9", "_", "Hello_42", "zzzzzzzzzz", "0000000000" };
	int rt_ok = 1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		ura_atom x = 0;
		if (ura_atom_from(names[i], &x) || x == 0 || strcmp(ura_atom_name(x, buf), names[i])) {
			t_diag("round trip of \"%s\" failed", names[i]);
			rt_ok = 0;
		}
	}
	t_ok(rt_ok, "ura_atom_from / ura_atom_name round-trip");
	ura_atom before = 12345;
	a = before;
	t_rc(ura_atom_from("", &a), -EINVAL, "\"\": -EINVAL");
	t_rc(ura_atom_from("abcdefghijk", &a), -EINVAL, "11 chars: -EINVAL");
	t_rc(ura_atom_from("ta-ke", &a), -EINVAL, "'-': -EINVAL");
	t_rc(ura_atom_from("a b", &a), -EINVAL, "' ': -EINVAL");
	t_rc(ura_atom_from("caf\xc3\xa9", &a), -EINVAL, "non-ASCII: -EINVAL");
	t_rc(ura_atom_from("x.", &a), -EINVAL, "'.': -EINVAL");
	t_ok(a == before, "failed ura_atom_from leaves *out alone");
	t_rc(ura_atom_from(NULL, &a), -EINVAL, "NULL name: -EINVAL");
	t_rc(ura_atom_from("ok", NULL), -EINVAL, "NULL out: -EINVAL");
	t_ok(URA_ATOM("take") != URA_ATOM("taken") && URA_ATOM("ab") != URA_ATOM("ba") &&
	     URA_ATOM("a") != URA_ATOM("A"), "distinct names give distinct atoms");
}

/* Atoms and refs survive a message: compared in the receiver too. */
static ura_atom g_seen_atom;
static void on_atom(ura_ctx *cx, const ura_msg *m) { (void)cx; g_seen_atom = ura_arg_atom(m, 0); }
URA_BEHAVIOR(atom_beh, URA_ON(URA_ATOM("abcdefghij"), "a", on_atom));
static const ura_class atom_class = { .name = "atoms", .initial = &atom_beh };

static void test_atom_tags(void)
{
	ura_system *sys = t_system(1);
	ura_ref r;
	ura_atom tag = 0, val = 0;
	t_must(ura_spawn(sys, &atom_class, NULL, &r));
	t_must(ura_atom_from("abcdefghij", &tag));
	t_must(ura_atom_from("Zyx_9", &val));
	t_rc(ura_send(sys, r, tag, ura_v_atom(val)), 0, "send with a run-time 10-char tag");
	t_rc(ura_system_await(sys), 0, "await");
	t_ok(g_seen_atom == URA_ATOM("Zyx_9"), "run-time tag matched the URA_ATOM case; atom value arrived");
	t_destroy(sys);
}


/* The header's traps, closed: an atom given to ura_send travels as an
 * atom (a literal or a variable); URA_MAX_VALUES values go through the
 * macro; a literal with a bad character is an invalid atom that every
 * send refuses and no behavior accepts, never another, valid atom. */
#define A_TRAP URA_ATOM("trap")
static char g_trap_types[URA_MAX_VALUES + 1];
static ura_atom g_trap_atom;
static unsigned g_trap_n;
static void on_trap(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	snprintf(g_trap_types, sizeof g_trap_types, "%s", ura_msg_types(m));
	g_trap_n = ura_msg_count(m);
	g_trap_atom = ura_arg_atom(m, 0);
}
URA_BEHAVIOR(trap_beh, URA_ON_ANY(A_TRAP, on_trap));
static const ura_class trap_class = { .name = "traps", .initial = &trap_beh };
URA_BEHAVIOR(bad_tag_beh, URA_ON(URA_ATOM("take-1"), "", on_trap));

static void test_header_traps(void)
{
	ura_system *sys = t_system(1);
	ura_ref r;
	char buf[URA_ATOM_MAX + 1];
	t_must(ura_spawn(sys, &trap_class, NULL, &r));
	t_must(ura_send(sys, r, A_TRAP, URA_ATOM("x")));
	t_rc(ura_system_await(sys), 0, "await");
	t_streq(g_trap_types, "a", "an atom literal passed to ura_send arrives as an atom");
	t_ok(g_trap_atom == URA_ATOM("x"), "with its value");
	ura_atom v = URA_ATOM("yz");
	t_must(ura_send(sys, r, A_TRAP, v, (uint64_t)7, 7ul));
	t_rc(ura_system_await(sys), 0, "await");
	t_streq(g_trap_types, "aii", "a ura_atom variable is an atom; uint64_t and unsigned long are int64");
	t_must(ura_send(sys, r, A_TRAP, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_trap_n, URA_MAX_VALUES, "ura_send takes URA_MAX_VALUES values");
	ura_atom bad = URA_ATOM("take-1");
	t_ok(bad != URA_ATOM("take") && !ura_atom_valid(bad),
	     "URA_ATOM(\"take-1\") is not \"take\": it is an invalid atom");
	t_streq(ura_atom_name(bad, buf), "take?", "and prints marked as such");
	t_streq(ura_atom_name(URA_ATOM("take"), NULL), "take", "ura_atom_name with no buffer");
	t_rc(ura_send(sys, r, bad), -EINVAL, "an invalid atom as a tag: -EINVAL");
	t_rc(ura_send(sys, r, A_TRAP, bad), -EINVAL, "an invalid atom as a value: -EINVAL");
	t_rc(ura_send(sys, r, A_TRAP, 1ULL << 62), -EINVAL,
	     "an unsigned long long that is no atom: -EINVAL");
	t_rc(ura_behavior_check(&bad_tag_beh), -EINVAL, "a case tagged with it fails the check");
	t_rc(ura_send_after(sys, r, URA_MSEC, bad), -EINVAL, "ura_send_after with it: -EINVAL");
	ura_stats st;
	t_must(ura_system_stats(sys, &st));
	t_eq(st.sent, 3, "none of the refused sends was accepted");
	t_destroy(sys);
}

/* Payloads across the allocator's size classes, up to a big one. */
#define A_SIZED URA_ATOM("sized")
static int g_sized_ok, g_sized_bad;
static void on_sized(ura_ctx *cx, const ura_msg *m)
{
	size_t len = 0;
	const unsigned char *p = ura_arg_bytes(m, 1, &len);
	const char *s = ura_arg_str(m, 2);
	int ok = (int64_t)len == ura_arg_i64(m, 0) && s && strlen(s) == len % 100;
	(void)cx;
	for (size_t i = 0; ok && i < len; i++)
		ok = p[i] == (unsigned char)(i * 7 + len);
	for (size_t i = 0; ok && s[i]; i++)
		ok = s[i] == 'a' + (char)(i % 26);
	if (ok)
		g_sized_ok++;
	else
		g_sized_bad++;
}
URA_BEHAVIOR(sized_beh, URA_ON(A_SIZED, "ibs", on_sized));
static const ura_class sized_class = { .name = "sized", .initial = &sized_beh };

static void test_sizes(void)
{
	static const size_t sizes[] = { 0, 1, 7, 8, 15, 16, 17, 31, 63, 64, 65, 127, 128,
		129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024, 1025, 1900, 2000, 2047,
		2048, 2049, 4096, 65537, 1u << 20 };
	const int n = (int)(sizeof sizes / sizeof sizes[0]);
	ura_system *sys = t_system(2);
	ura_ref r;
	t_must(ura_spawn(sys, &sized_class, NULL, &r));
	unsigned char *buf = malloc(1u << 20);
	char str[128];
	int fails = 0;
	if (!buf) {
		t_ok(0, "malloc");
		return;
	}
	for (int k = 0; k < n; k++) {
		size_t len = sizes[k];
		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)(i * 7 + len);
		size_t sl = len % 100;
		for (size_t i = 0; i < sl; i++)
			str[i] = (char)('a' + (char)(i % 26));
		str[sl] = 0;
		fails += ura_send(sys, r, A_SIZED, (int64_t)len, ura_v_bytes(buf, len), str) != 0;
		memset(buf, 0, len);
	}
	free(buf);
	t_eq(fails, 0, "sends of every size accepted");
	t_rc(ura_system_await(sys), 0, "await");
	t_eq(g_sized_ok, n, "payloads of every size class arrive intact");
	t_eq(g_sized_bad, 0, "no payload corrupted");
	t_destroy(sys);
}

int main(void)
{
	test_round_trip();
	test_copies();
	test_long_signatures();
	test_format();
	test_wrong_accessors();
	test_sizes();
	test_send_errors();
	test_atoms();
	test_atom_tags();
	test_header_traps();
	return t_done();
}
