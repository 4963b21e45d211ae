/* SPDX-License-Identifier: MIT */
/*
 * ura/guard.h: guard expressions on behavior cases (included by ura.h).
 *
 * libcppa writes `on<int>().when(_x1 % 2 == 0)`. C has no operator
 * overloading, so a ura guard is a small expression tree built with
 * macros, each of which yields a pointer to a constant node:
 *
 *	URA_BEHAVIOR(parity,
 *		URA_ON(A_N, "i", on_even,
 *		       URA_WHEN(URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)))),
 *		URA_ON(A_N, "i", on_odd));
 *
 * Because a guard is data, ura checks it when the behavior is checked or
 * built (ura_behavior_check, ura_behavior_new: a placeholder beyond the
 * case's values, operands of the wrong type, a malformed tree: -EINVAL),
 * prints it (ura_guard_format) and saves it (ura_guard_serialize). A
 * static behavior is checked, guards included, the first time a spawn or
 * a become meets it (that call then fails with -EINVAL; the result is
 * cached by address); ura_behavior_check() checks it earlier, at
 * start-up or in a test.
 *
 * Leaves
 *   URA_X(k)               the case's k-th value, 1..9 (libcppa's _x1)
 *   URA_GI(v) URA_GD(v)    int64 / double constant
 *   URA_GS("s") URA_GB(p, n)  string / bytes constant (copied by value
 *                          when a behavior is built at run time)
 *   URA_G_ATOM("put")      atom constant by name; works everywhere, also
 *                          in file-scope guards, where GCC cannot fold
 *                          URA_ATOM() inside the guard's compound literals
 *   URA_GA(atom)           atom constant from a value: for guards built in
 *                          a function (at file scope GCC rejects
 *                          URA_GA(URA_ATOM("x")): "initializer element is
 *                          not constant"; clang accepts it)
 *   URA_G_BOUND            the actor's bound value (ura_become_bound)
 *   URA_G_REF(&var)        lazy reference (libcppa's gref): var is read
 *                          each time the guard runs, not when it is built.
 *                          var: _Bool, int, unsigned, long, long long (and
 *                          unsigned), double, char * or const char * (a
 *                          string pointer; NULL does not match); _Atomic
 *                          versions of those too.
 *   URA_G_FIELD(T, m)      lazy reference to member m of the actor's state
 *                          (of type T), same types as URA_G_REF
 *   URA_G_CALL(fn, args...) URA_G_CALL0(fn)  calls fn (libcppa's gcall)
 * Operators (a, b: expressions)
 *   URA_G_EQ NE LT LE GT GE (a, b)  on numbers (int64 and double mix),
 *       strings and bytes (bytewise); EQ / NE also on atoms, refs, pointers
 *   URA_G_ADD SUB MUL DIV MOD (a, b), URA_G_NEG(a)  as in C on int64 and
 *       double; MOD on integers only; an integer result that C leaves
 *       undefined (overflow, x / 0, INT64_MIN / -1) makes the guard fail
 *   URA_G_AND(a, b, ...) URA_G_OR(a, b, ...) URA_G_NOT(a)  short-circuit,
 *       on int64 truth values (0 is false), like C's && || !
 *   URA_G_STARTS_WITH(s, prefix)  URA_G_SIZE(s)  URA_G_EMPTY(s)
 *   URA_G_NOT_EMPTY(s)  URA_G_FRONT(s) (first byte, as an int; an empty s
 *       fails)  on strings and bytes
 *   URA_G_IN(a, c1, c2, ...)  URA_G_NOT_IN(a, c1, ...)  a equals one of
 *       the constants (or none of them)
 *
 * A guard never crashes on a message: a missing value, a value of another
 * type than the guard expects (URA_ON_ANY cases), a NULL string, an empty
 * front(), an undefined integer result or a call returning no value makes
 * the whole guard fail, so the case does not match (as a guard that raises
 * in Erlang). Guards should not have side effects: a loop's guards
 * (URA_BEHAVIOR_UNTIL) are evaluated twice per message.
 *
 * A plain C predicate stays the escape hatch: URA_ON(..., .guard = fn,
 * .guard_arg = p) with fn an ura_guard_fn.
 *
 * Lifetimes: the macros make compound literals, static at file scope and
 * living until the end of the enclosing block in a function (so not
 * beyond one turn of a loop body); ura_behavior_new() copies a case's
 * guard (nodes and constant strings), so a run-time behavior needs none
 * of it afterwards. What URA_G_REF
 * points at must outlive every behavior that uses it; if another thread
 * writes it, it should do so with atomic stores (ura reads it with
 * relaxed atomic loads: the flag is read, nothing is published through it).
 */
#ifndef URA_GUARD_H
#define URA_GUARD_H

#include "../ura.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most nodes in one guard, deepest nesting, most arguments of one call. */
#define URA_GUARD_MAX_NODES 256
#define URA_GUARD_MAX_DEPTH 32
#define URA_GUARD_MAX_ARGS 8

/* A function called by URA_G_CALL with its evaluated arguments (strings
 * and bytes point into the message: valid during the call only). Returns
 * the result; a value of type 0 (or a NULL string) makes the guard fail.
 * Called on a worker thread, in handler context, possibly concurrently
 * from several workers for different actors. */
typedef ura_value ura_gcall_fn(const ura_value *args, unsigned n);

/* Node kinds. The numbers are part of the serialized form: never
 * renumber. 0 is no node, so zeroed memory never passes a check. */
enum {
	URA__G_X = 1, URA__G_CONST, URA__G_BOUND, URA__G_REF, URA__G_FIELD,
	URA__G_CALL,
	URA__G_NOT = 8, URA__G_NEG, URA__G_SIZE, URA__G_EMPTY, URA__G_NOT_EMPTY,
	URA__G_FRONT,
	URA__G_EQ = 16, URA__G_NE, URA__G_LT, URA__G_LE, URA__G_GT, URA__G_GE,
	URA__G_ADD, URA__G_SUB, URA__G_MUL, URA__G_DIV, URA__G_MOD,
	URA__G_STARTS_WITH,
	URA__G_AND = 32, URA__G_OR, URA__G_IN, URA__G_NOT_IN,
};
/* What a URA_G_REF / URA_G_FIELD points at (serialized too). */
enum {
	URA__GR_BOOL = 1, URA__GR_I32, URA__GR_U32, URA__GR_I64, URA__GR_U64,
	URA__GR_F64, URA__GR_STR,
};
/* vt of an atom constant still given by name (URA_G_ATOM). */
#define URA__GA_NAME 'n'

/* One node. Build nodes with the macros below; the fields are private. */
typedef struct ura_guard_node ura_guard_node;
struct ura_guard_node {
	uint8_t op;   /* URA__G_* */
	uint8_t vt;   /* constants: ura_type or URA__GA_NAME; refs: URA__GR_* */
	uint16_t r_;  /* reserved, 0 */
	uint32_t n;   /* placeholder number, bytes length, field offset */
	union {
		int64_t i;
		double d;
		ura_atom atom;
		const char *s;
		const void *p;
		ura_gcall_fn *fn;
		const ura_guard_node *a;  /* the (first) operand */
	} u;
	union {
		const ura_guard_node *b;             /* second operand */
		const ura_guard_node *const *list;   /* operands, NULL-terminated */
	} k;
	const char *name; /* for traces: the variable, member or function */
};

/* The guard of a case built with URA_WHEN: evaluates the expression
 * `arg` (a const ura_guard_node *) against the message. Handler context
 * (dispatch calls it). Returns 1 when the guard holds. */
URA_API int ura_guard_eval(ura_ctx *cx, const ura_msg *m, const void *arg);

/* Evaluates g over values vals[0..n) (x1 is vals[0]) outside any actor:
 * bound is the value URA_G_BOUND reads (NULL: none, so it fails), and
 * URA_G_FIELD fails. For tools and tests. Any thread. 1 holds, 0 not. */
URA_API int ura_guard_match(const ura_guard_node *g, const ura_value *vals,
			    unsigned n, const ura_value *bound);

/* Checks g as the guard of a case with signature `types` (NULL: any
 * values, so placeholders are typed at run time only): 0, or -EINVAL for
 * a placeholder outside 1..9 or beyond the signature, operands of the
 * wrong type, a malformed or too large tree, a bad atom name. Any thread. */
URA_API int ura_guard_check(const ura_guard_node *g, const char *types);

/* Writes g as one line, e.g. `x1 % 2 == 0 && x2 == gref(ival)`, into buf
 * (truncated to n bytes, NUL-terminated when n > 0) and returns the
 * length it wanted, like snprintf. Any thread. */
URA_API int ura_guard_format(const ura_guard_node *g, char *buf, size_t n);

/*
 * Serialization. Constants are saved by value, placeholders, operators
 * and URA_G_FIELD (by offset and type) as they are. A URA_G_REF variable
 * and a URA_G_CALL function are saved by name: the name an entry of
 * `syms` gives that address; one that no entry names fails with -EINVAL.
 * Loading resolves the names through the same kind of table, and also
 * checks that a variable has the type the guard was built with; traces of
 * a loaded guard show the table's names (so name entries after the
 * variables). A URA_G_FIELD read is checked against the actor's state
 * size at run time, so a loaded guard cannot read outside the state.
 * The format is little-endian, versioned by its first 4 bytes ("URG1").
 */
typedef struct ura_guard_sym {
	const char *name;
	const void *ref;   /* a variable of URA_G_REF, or NULL */
	ura_gcall_fn *fn;  /* a function of URA_G_CALL, or NULL */
	uint32_t kind;     /* URA__GR_* of ref (set by URA_GSYM_REF) */
} ura_guard_sym;

/* Writes g into buf if it fits in n bytes (else writes nothing) and
 * returns the bytes it needs, or -EINVAL (malformed g, or a reference or
 * function that syms does not name). Any thread. */
URA_API long ura_guard_serialize(const ura_guard_node *g,
				 const ura_guard_sym *syms, size_t nsyms,
				 void *buf, size_t n);
/* Reads a guard written by ura_guard_serialize into one allocation that
 * *out points at; free it with ura_guard_free(). -EINVAL for malformed
 * input (every byte is checked; the result passes ura_guard_check(g,
 * NULL)) or an unknown name, -ENOMEM. Any thread. */
URA_API int ura_guard_deserialize(const void *buf, size_t n,
				  const ura_guard_sym *syms, size_t nsyms,
				  ura_guard_node **out);
URA_API void ura_guard_free(ura_guard_node *g);

/*
 * Loops: libcppa's `do_receive(cases...).until(gref(done))`.
 *
 * An event-based actor has no loop to leave, so the loop is a behavior:
 *
 *	URA_BEHAVIOR_UNTIL(summing, URA_G_FIELD(adder, done), &reporting,
 *		URA_ON(A_ADD, "i", add),
 *		URA_ON(A_END, "", end));     // end() sets state->done
 *
 * summing handles messages with its cases (in order, guards included);
 * after each handled message it evaluates the condition, and once that
 * holds the loop is over: the actor becomes `next` with its bound value
 * kept (which replaces a become made by that handler), or stops if next
 * is NULL. As in libcppa the condition is tested after each message, so
 * a flag set from outside takes effect after the next message handled.
 * A message no case matches goes to the behavior's unmatched policy.
 * URA_BEHAVIOR_UNTIL_OPTS(name, (fields), cond, next, cases...) sets
 * behavior fields as URA_BEHAVIOR_OPTS does.
 */
typedef struct ura_until {
	const ura_case *cases;
	uint32_t ncases;
	const ura_guard_node *cond;
	const ura_behavior *next; /* NULL: stop */
} ura_until;

/* The guard and the body of a loop's one case, as URA_BEHAVIOR_UNTIL
 * writes them: exported for the macro; not to be called otherwise. */
URA_API int ura_until_match(ura_ctx *cx, const ura_msg *m, const void *until);
URA_API void ura_until_run(ura_ctx *cx, const ura_msg *m, const ura_until *u);

#ifdef __cplusplus
}
#endif

/* ------------------------------------------------------------------------ */
/* The macros (C only). Each expression macro is one parenthesized pointer
 * expression, so guards nest inside user macros without comma trouble. */
#ifndef __cplusplus

#define URA__GN(...) (&(const ura_guard_node){ __VA_ARGS__ })
#define URA__GLIST(...) ((const ura_guard_node *const[]){ __VA_ARGS__, NULL })
#define URA__G1(op_, x_) URA__GN(.op = (op_), .u.a = (x_))
#define URA__G2(op_, x_, y_) URA__GN(.op = (op_), .u.a = (x_), .k.b = (y_))

/* The ref kind from the variable's type; lvalue conversion drops const
 * and _Atomic, so both are accepted. Any other type does not compile. */
#define URA__GREF_KIND(lv_) _Generic((lv_),                                 \
	_Bool: URA__GR_BOOL, int: URA__GR_I32, unsigned: URA__GR_U32,       \
	long: (sizeof(long) == 8 ? URA__GR_I64 : URA__GR_I32),              \
	unsigned long: (sizeof(long) == 8 ? URA__GR_U64 : URA__GR_U32),     \
	long long: URA__GR_I64, unsigned long long: URA__GR_U64,            \
	double: URA__GR_F64, char *: URA__GR_STR, const char *: URA__GR_STR)

/* (Parameter names end in _ so that none is also a field designator.) */
#define URA_X(k_) URA__GN(.op = URA__G_X, .n = (k_))
#define URA_GI(v_) URA__GN(.op = URA__G_CONST, .vt = URA_T_I64, .u.i = (v_))
#define URA_GD(v_) URA__GN(.op = URA__G_CONST, .vt = URA_T_F64, .u.d = (v_))
#define URA_GA(v_) URA__GN(.op = URA__G_CONST, .vt = URA_T_ATOM, .u.atom = (v_))
#define URA_GS(v_) URA__GN(.op = URA__G_CONST, .vt = URA_T_STR, .u.s = (v_))
#define URA_GB(v_, len_)                                                    \
	URA__GN(.op = URA__G_CONST, .vt = URA_T_BYTES, .u.p = (v_),         \
		.n = (uint32_t)(len_))
#define URA_G_ATOM(v_)                                                      \
	URA__GN(.op = URA__G_CONST, .vt = URA__GA_NAME, .u.s = "" v_ "",    \
		.n = (__extension__(uint32_t)(sizeof(v_) - 1 +              \
		0 * sizeof(struct { int ok; _Static_assert(sizeof(v_) <= 11, \
			"an atom has at most 10 characters"); }))))
#define URA_G_BOUND URA__GN(.op = URA__G_BOUND)
#define URA_G_REF(v_)                                                       \
	URA__GN(.op = URA__G_REF, .vt = URA__GREF_KIND(*(v_)), .u.p = (v_), \
		.name = #v_)
#define URA_G_FIELD(type_, member_)                                         \
	URA__GN(.op = URA__G_FIELD,                                         \
		.vt = URA__GREF_KIND(((type_ *)0)->member_),                \
		.n = (uint32_t)offsetof(type_, member_), .name = #member_)
#define URA_G_CALL(fn_, ...)                                                \
	URA__GN(.op = URA__G_CALL, .u.fn = (fn_),                           \
		.k.list = URA__GLIST(__VA_ARGS__), .name = #fn_)
#define URA_G_CALL0(fn_)                                                    \
	URA__GN(.op = URA__G_CALL, .u.fn = (fn_),                           \
		.k.list = ((const ura_guard_node *const[]){ NULL }), .name = #fn_)

#define URA_G_EQ(x_, y_) URA__G2(URA__G_EQ, x_, y_)
#define URA_G_NE(x_, y_) URA__G2(URA__G_NE, x_, y_)
#define URA_G_LT(x_, y_) URA__G2(URA__G_LT, x_, y_)
#define URA_G_LE(x_, y_) URA__G2(URA__G_LE, x_, y_)
#define URA_G_GT(x_, y_) URA__G2(URA__G_GT, x_, y_)
#define URA_G_GE(x_, y_) URA__G2(URA__G_GE, x_, y_)
#define URA_G_ADD(x_, y_) URA__G2(URA__G_ADD, x_, y_)
#define URA_G_SUB(x_, y_) URA__G2(URA__G_SUB, x_, y_)
#define URA_G_MUL(x_, y_) URA__G2(URA__G_MUL, x_, y_)
#define URA_G_DIV(x_, y_) URA__G2(URA__G_DIV, x_, y_)
#define URA_G_MOD(x_, y_) URA__G2(URA__G_MOD, x_, y_)
#define URA_G_NEG(x_) URA__G1(URA__G_NEG, x_)
#define URA_G_NOT(x_) URA__G1(URA__G_NOT, x_)
#define URA_G_AND(...) URA__GN(.op = URA__G_AND, .k.list = URA__GLIST(__VA_ARGS__))
#define URA_G_OR(...) URA__GN(.op = URA__G_OR, .k.list = URA__GLIST(__VA_ARGS__))
#define URA_G_STARTS_WITH(x_, prefix_) URA__G2(URA__G_STARTS_WITH, x_, prefix_)
#define URA_G_SIZE(x_) URA__G1(URA__G_SIZE, x_)
#define URA_G_EMPTY(x_) URA__G1(URA__G_EMPTY, x_)
#define URA_G_NOT_EMPTY(x_) URA__G1(URA__G_NOT_EMPTY, x_)
#define URA_G_FRONT(x_) URA__G1(URA__G_FRONT, x_)
#define URA_G_IN(x_, ...)                                                   \
	URA__GN(.op = URA__G_IN, .u.a = (x_), .k.list = URA__GLIST(__VA_ARGS__))
#define URA_G_NOT_IN(x_, ...)                                               \
	URA__GN(.op = URA__G_NOT_IN, .u.a = (x_), .k.list = URA__GLIST(__VA_ARGS__))

/* In a case: URA_ON(tag, "types", handler, URA_WHEN(expr)). */
#define URA_WHEN(e_) .guard = ura_guard_eval, .guard_arg = (e_)

/* Entries of a ura_guard_sym table. */
#define URA_GSYM_REF(name_, v_)                                             \
	{ .name = (name_), .ref = (v_), .kind = URA__GREF_KIND(*(v_)) }
#define URA_GSYM_FN(name_, fn_) { .name = (name_), .fn = (fn_) }

#define URA_BEHAVIOR_UNTIL_OPTS(name_, opts_, cond_, next_, ...)            \
	static const ura_case name_##__ura_loop[] = { __VA_ARGS__ };        \
	static const ura_until name_##__ura_until = {                       \
		.cases = name_##__ura_loop,                                 \
		.ncases = (uint32_t)(sizeof(name_##__ura_loop) /            \
				     sizeof(ura_case)),                     \
		.cond = (cond_), .next = (next_) };                         \
	static void name_##__ura_run(ura_ctx *cx_, const ura_msg *m_)      \
	{                                                                   \
		ura_until_run(cx_, m_, &name_##__ura_until);               \
	}                                                                   \
	URA_BEHAVIOR_OPTS(name_, opts_, URA_ON_ANY(0, name_##__ura_run,     \
		.guard = ura_until_match, .guard_arg = &name_##__ura_until))
#define URA_BEHAVIOR_UNTIL(name_, cond_, next_, ...)                        \
	URA_BEHAVIOR_UNTIL_OPTS(name_, (.unmatched = 0), cond_, next_, __VA_ARGS__)

#endif /* !__cplusplus */

#endif /* URA_GUARD_H */
