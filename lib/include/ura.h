/* SPDX-License-Identifier: MIT */
/*
 * ura.h: the one public header of ura, an actor runtime for Linux.
 *
 * Conventions, true of every function below unless its comment says
 * otherwise:
 *  - A fallible call returns 0 (or a non-negative value) on success and
 *    -errno on failure. ura_strerror() turns that into text.
 *  - A call that takes a handler and fails never calls that handler.
 *  - Values passed to a send are copied into the message before the call
 *    returns; the caller may reuse its buffers at once.
 *  - "Handler context" means: only from inside a handler (or init callback)
 *    running on a worker, with the ura_ctx the runtime passed in. A ctx is
 *    valid only until that handler returns; never store it. (Builds
 *    without NDEBUG catch a ctx used from another thread than its
 *    handler's: the call fails with -EINVAL and the log says so once.)
 *  - "Any thread" means any thread of the process, worker or not, as long as
 *    the system is not being destroyed concurrently.
 *
 * ABI. libura.so exports exactly the symbols lib/ura.map lists, in the
 * version node of the release that added them. Structs that callers fill
 * in or receive end in `reserved_` space: later releases carve new fields
 * out of it, so a struct's size never changes within a soname, and a
 * program built against an older header keeps working. Callers fill
 * structs with designated initializers (or zero them first): the library
 * refuses a struct whose reserved space is not zero with -EINVAL, so that
 * a field given meaning later can never be misread from old garbage.
 * ura_value, ura_ref and ura_msg's layout are fixed.
 */
#ifndef URA_H
#define URA_H

#include <stddef.h>
#include <stdint.h>

struct iovec;

#ifdef __cplusplus
extern "C" {
#endif

#if defined(URA_BUILDING)
#define URA_API __attribute__((visibility("default")))
#else
#define URA_API
#endif

/* The version of this header; ura_version() is the library's. */
#define URA_VERSION_MAJOR 0
#define URA_VERSION_MINOR 3
#define URA_VERSION_PATCH 0
#define URA_VERSION_STRING "0.3.0"
/* major << 16 | minor << 8 | patch, for comparisons. */
#define URA_VERSION_NUMBER ((URA_VERSION_MAJOR << 16) | (URA_VERSION_MINOR << 8) | \
			    URA_VERSION_PATCH)

/* ------------------------------------------------------------------------ */
/* Time                                                                     */

#define URA_NSEC  ((uint64_t)1)
#define URA_USEC  ((uint64_t)1000)
#define URA_MSEC  ((uint64_t)1000000)
#define URA_SEC   ((uint64_t)1000000000)

/* ------------------------------------------------------------------------ */
/* Atoms: short names packed into 64 bits, cheap to compare, printable.
 *
 * An atom holds up to 10 characters from [0-9A-Za-z_], 6 bits each (bits
 * 60..63 are zero), so URA_ATOM("take") is a constant usable in static
 * initializers (not in a switch: C only folds it there as an extension).
 * 0 is "no atom" (and the wildcard tag in a behavior case).
 *
 * ura_atom is `unsigned long long`, a type of its own for ura_send: an
 * atom given as a value (a literal or a ura_atom variable) is sent as an
 * atom, type 'a'. So an integer must not be passed as unsigned long long
 * (1ULL << 40): pass it as int, long, int64_t or uint64_t, or wrap it in
 * ura_v_i64() (a ULL value that is no atom is refused with -EINVAL).
 *
 * A character outside the set in a literal: more than 10 characters fail
 * to compile; any other bad character makes URA_ATOM("take-1") an invalid
 * atom (bit 63 set) that every call taking a tag or an atom value refuses
 * with -EINVAL (ura_send, ura_behavior_check and the behavior checks of
 * spawn and become), and that ura_atom_name prints with a '?' at the end;
 * it never becomes another, valid atom. In C++ (C++17) a bad character
 * fails to compile. ura_atom_from() validates a run-time string.
 */
typedef unsigned long long ura_atom;

#define URA__A6(c) ((uint64_t)(                                          \
	(c) >= 'a' && (c) <= 'z' ? (c) - 'a' + 38 :                      \
	(c) >= 'A' && (c) <= 'Z' ? (c) - 'A' + 11 :                      \
	(c) >= '0' && (c) <= '9' ? (c) - '0' + 1 :                       \
	(c) == '_' ? 37 : 0))
/* Bit 63 of an atom made from a literal with a character outside the set. */
#define URA__ATOM_BAD ((uint64_t)1 << 63)
/* The padding makes every index valid for any literal up to 10 chars, so
 * no compiler warns about reading past a short one. */
#define URA__AC(s, i) (URA__A6((s "\0\0\0\0\0\0\0\0\0\0")[i]) << (6 * (i)) |  \
	((i) < sizeof(s) - 1 && !URA__A6((s "\0\0\0\0\0\0\0\0\0\0")[i]) ?      \
	 URA__ATOM_BAD : 0))
#ifndef __cplusplus
#define URA_ATOM(s) (__extension__(ura_atom)(                            \
	0 * sizeof(struct { int ok; _Static_assert(sizeof(s) <= 11,      \
		"an atom has at most 10 characters"); }) +               \
	(URA__AC(s, 0) | URA__AC(s, 1) | URA__AC(s, 2) | URA__AC(s, 3) |  \
	 URA__AC(s, 4) | URA__AC(s, 5) | URA__AC(s, 6) | URA__AC(s, 7) |  \
	 URA__AC(s, 8) | URA__AC(s, 9))))
#endif
/* True for an atom that ura can send and match: no bits above the 10th
 * character, and not 0. */
static inline int ura_atom_valid(ura_atom a) { return a && !(a >> 60); }

#define URA_ATOM_MAX 10
/* Writes the atom's name (at most 10 chars + NUL) into buf and returns buf. */
URA_API const char *ura_atom_name(ura_atom a, char buf[URA_ATOM_MAX + 1]);
/* Encodes a run-time string; -EINVAL if empty, too long or a bad char. */
URA_API int ura_atom_from(const char *name, ura_atom *out);

/* ------------------------------------------------------------------------ */
/* Errors and logging                                                       */

/* The library's version (URA_VERSION_NUMBER and URA_VERSION_STRING of the
 * header it was built from): compare with the header's to detect a
 * program run against another libura than it was built with. */
URA_API unsigned ura_version(void);
URA_API const char *ura_version_string(void);

/* Text for a -errno value returned by any ura call (or a positive errno). */
URA_API const char *ura_strerror(int err);

/* 0 in ura_config.log_level means the default (warn). */
enum ura_log_level { URA_LOG_ERROR = 1, URA_LOG_WARN, URA_LOG_INFO, URA_LOG_DEBUG };
/* Called from any thread, possibly concurrently; msg has no newline. */
typedef void ura_log_fn(void *ud, int level, const char *msg);

/* ------------------------------------------------------------------------ */
/* Actor references
 *
 * A ref names one incarnation of an actor: a slot index plus the slot's
 * generation. Refs are plain values, copyable anywhere, valid forever: once
 * the actor stops, sends to the ref fail with -ESRCH (or, when the stop
 * races the send, the message is counted as a dead letter). A ref never
 * lets anyone touch freed memory.
 */
typedef struct ura_ref {
	uint64_t id; /* 0 is the null ref */
} ura_ref;

#define URA_NOREF ((ura_ref){ 0 })
static inline int ura_ref_eq(ura_ref a, ura_ref b) { return a.id == b.id; }
static inline int ura_ref_null(ura_ref a) { return a.id == 0; }

/* ------------------------------------------------------------------------ */
/* Message values                                                           */

typedef enum ura_type {
	URA_T_I64 = 'i',
	URA_T_F64 = 'd',
	URA_T_ATOM = 'a',
	URA_T_REF = 'r',
	URA_T_STR = 's', /* NUL-terminated text, copied */
	URA_T_BYTES = 'b', /* length-prefixed bytes, copied */
	URA_T_PTR = 'p', /* opaque pointer: NOT copied, NOT owned by ura, and
	                    unsafe for snapshots; the pointee's lifetime is
	                    entirely the caller's responsibility */
} ura_type;

/*
 * One typed value. In a received message, str/bytes point into the
 * message and live exactly as long as the handler call that received it.
 * When sending, they point at the caller's memory, which ura copies.
 */
typedef struct ura_value {
	uint32_t type; /* ura_type */
	uint32_t len;  /* bytes for URA_T_BYTES, strlen for URA_T_STR */
	union {
		int64_t i64;
		double f64;
		ura_atom atom;
		ura_ref ref;
		const char *str;
		const void *bytes;
		void *ptr;
	} u;
} ura_value;

static inline ura_value ura_v_i64(int64_t v)
{ ura_value x; x.type = URA_T_I64; x.len = 0; x.u.i64 = v; return x; }
static inline ura_value ura_v_f64(double v)
{ ura_value x; x.type = URA_T_F64; x.len = 0; x.u.f64 = v; return x; }
static inline ura_value ura_v_atom(ura_atom v)
{ ura_value x; x.type = URA_T_ATOM; x.len = 0; x.u.atom = v; return x; }
static inline ura_value ura_v_ref(ura_ref v)
{ ura_value x; x.type = URA_T_REF; x.len = 0; x.u.ref = v; return x; }
/* A NULL string is sent as the empty string. */
static inline ura_value ura_v_str(const char *s)
{ ura_value x; x.type = URA_T_STR; x.len = UINT32_MAX; x.u.str = s; return x; }
static inline ura_value ura_v_bytes(const void *p, size_t n)
{
	ura_value x; x.type = URA_T_BYTES;
	x.len = n > UINT32_MAX - 1 ? UINT32_MAX : (uint32_t)n; /* huge: -EMSGSIZE */
	x.u.bytes = p; return x;
}
static inline ura_value ura_v_ptr(void *p)
{ ura_value x; x.type = URA_T_PTR; x.len = 0; x.u.ptr = p; return x; }
static inline ura_value ura_v_value(ura_value v) { return v; }

/* Largest payload (all values plus copied strings/bytes) of one message. */
#define URA_MSG_MAX (64u << 20)
/* Most values in one message. */
#define URA_MAX_VALUES 16

/* ------------------------------------------------------------------------ */
/* Opaque types                                                             */

typedef struct ura_system ura_system;
typedef struct ura_ctx ura_ctx;     /* a handler's view of the runtime */
typedef struct ura_msg ura_msg;     /* a received message (read-only) */
typedef struct ura_group ura_group; /* a set of actors addressed as one */

/* ------------------------------------------------------------------------ */
/* Received messages: valid only during the handler that got them.          */

URA_API ura_atom ura_msg_tag(const ura_msg *m);
URA_API ura_ref ura_msg_sender(const ura_msg *m); /* URA_NOREF if external */
URA_API unsigned ura_msg_count(const ura_msg *m); /* number of values */
/* A copy of value i; type 0 and all-zero if i is out of range. */
URA_API ura_value ura_msg_value(const ura_msg *m, unsigned i);
/* The signature string, e.g. "ri" for (ref, int64); NUL-terminated. */
URA_API const char *ura_msg_types(const ura_msg *m);
/* Typed accessors. A wrong type or index returns 0 / 0.0 / NULL /
 * URA_NOREF; behaviors match on the signature first, so a handler only
 * sees messages of the types its case names. */
URA_API int64_t ura_arg_i64(const ura_msg *m, unsigned i);
URA_API double ura_arg_f64(const ura_msg *m, unsigned i);
URA_API ura_atom ura_arg_atom(const ura_msg *m, unsigned i);
URA_API ura_ref ura_arg_ref(const ura_msg *m, unsigned i);
URA_API const char *ura_arg_str(const ura_msg *m, unsigned i);
URA_API const void *ura_arg_bytes(const ura_msg *m, unsigned i, size_t *len);
URA_API void *ura_arg_ptr(const ura_msg *m, unsigned i);
/* Writes a one-line rendering such as `take(<3.1>, 42, "x")` into buf
 * (truncated to n) and returns the length it wanted, like snprintf. */
URA_API int ura_msg_format(const ura_msg *m, char *buf, size_t n);

/* ------------------------------------------------------------------------ */
/* Exit reasons: why an actor stopped, as an atom plus an optional value
 * (any type but URA_T_PTR: the reason outlives the actor). They reach
 * other actors in DOWN and EXIT messages (links and monitors, below) and
 * in the URA_ERROR of a request that could not be answered. */
#define URA_NORMAL URA_ATOM("normal")       /* ura_stop, ura_exit(normal) */
#define URA_SHUTDOWN URA_ATOM("shutdown")   /* asked to stop (supervisors) */
#define URA_KILL URA_ATOM("kill")           /* ura_kill's unconditional stop */
#define URA_KILLED URA_ATOM("killed")       /* the reason of an actor killed so */
#define URA_NOPROC URA_ATOM("noproc")       /* there was no such actor */
#define URA_NOREPLY URA_ATOM("noreply")     /* a request nobody can answer */
#define URA_UNMATCHED URA_ATOM("unmatched") /* a request no case took */
#define URA_NOMEM URA_ATOM("nomem")         /* the runtime ran out of memory */

/* Tags of the runtime's messages about other actors:
 *   URA_DOWN(i64 monitor, ref who, atom reason[, value])   a monitor fired
 *   URA_EXIT(ref who, atom reason[, value])   an exit signal, trapped
 *   URA_ERROR(atom reason[, value])   a request failed (continuations)
 * The value is there only when the exit gave one, so match them with
 * URA_ON_ANY(URA_DOWN, fn) and read them with the accessors below (or
 * with URA_ON(URA_DOWN, "ira", fn) where no exit carries a value). */
#define URA_DOWN URA_ATOM("_down")
#define URA_EXIT URA_ATOM("_exit")
#define URA_ERROR URA_ATOM("_error")

/* No value, for the value of an exit reason. */
#ifdef __cplusplus
#define URA_NOVALUE (ura_value{})
#else
#define URA_NOVALUE ((ura_value){ 0 })
#endif

/* Of a DOWN, EXIT or ERROR message: the reason (0 for any other message),
 * its value (type 0 if none; strings and bytes live as long as the
 * message), and the actor it is about (DOWN, EXIT; URA_NOREF for an EXIT
 * sent by ura_kill from outside, and for other messages). */
URA_API ura_atom ura_exit_reason(const ura_msg *m);
URA_API ura_value ura_exit_value(const ura_msg *m);
URA_API ura_ref ura_exit_who(const ura_msg *m);

/* A monitor's id (> 0), or -errno from ura_monitor. */
typedef int64_t ura_mon;
/* Of a DOWN message: the monitor that fired; 0 for other messages. */
URA_API ura_mon ura_down_monitor(const ura_msg *m);

/* ------------------------------------------------------------------------ */
/* Behaviors
 *
 * A behavior is an ordered list of cases. A message runs the handler of the
 * first case whose tag equals the message's tag (0 matches any tag) and
 * whose type signature equals the message's ("ri" = ref, int64; "" = no
 * values; NULL = any values), and whose guard (if any) holds.
 *
 * Behaviors are plain data. Static ones are defined with URA_BEHAVIOR
 * and URA_ON as `static const` objects; ura_behavior_new() builds one at run
 * time (validated there). A behavior must outlive every actor using it.
 * Per-actor data for a shared behavior (libcppa's `taken_by(philos)`) is
 * the bound value given to ura_become_bound(), read with ura_bound().
 */
typedef void ura_handler(ura_ctx *cx, const ura_msg *m);

/* Guards: a plain C predicate, the escape hatch. Richer guard expressions
 * (placeholders, comparisons, lazy references) build on this field. */
typedef int ura_guard_fn(ura_ctx *cx, const ura_msg *m, const void *arg);

typedef struct ura_case {
	ura_atom tag;        /* 0: any tag */
	const char *types;   /* NULL: any values */
	ura_handler *fn;
	ura_guard_fn *guard; /* NULL: always */
	const void *guard_arg;
	uint64_t sig_;       /* private: packed types, see URA_ON */
	uint64_t reserved_;  /* zero */
} ura_case;

/* What a behavior does with a message that no case matches. */
typedef enum ura_unmatched {
	URA_UNMATCHED_DEFAULT = 0, /* the class's policy (itself default DROP) */
	URA_UNMATCHED_DROP,        /* drop it and count it (stats.unmatched) */
	URA_UNMATCHED_STASH,       /* keep it; re-deliver after the next become */
} ura_unmatched;

typedef struct ura_behavior {
	const ura_case *cases;
	uint32_t ncases;
	uint32_t unmatched;  /* ura_unmatched */
	const char *name;    /* optional, for traces */
	/* Receive timeout (libcppa's after()): when timeout_ns > 0, on_timeout
	 * runs if no message matched a case within timeout_ns of the become
	 * (or spawn) or of the last matched message; each become and each
	 * matched message re-arms it. Its message has tag URA_TIMEOUT. */
	uint64_t timeout_ns;
	ura_handler *on_timeout;
	uint64_t reserved_[2]; /* zero */
} ura_behavior;

/* Packs up to 7 type chars into the low bytes; longer signatures are
 * compared as strings (private). */
#define URA__SC(s, i) ((uint64_t)(unsigned char)((s "\0\0\0\0\0\0\0\0")[i]) << (8 * (i)))
#define URA__SIG(s) (__extension__(uint64_t)(                              \
	sizeof(s) > 8 ? (uint64_t)1 << 63 :                                \
	(URA__SC(s, 0) | URA__SC(s, 1) | URA__SC(s, 2) | URA__SC(s, 3) |   \
	 URA__SC(s, 4) | URA__SC(s, 5) | URA__SC(s, 6))))

/* URA_ON(tag, "types", handler), or with a guard: URA_ON(..., handler,
 * URA_GUARD(fn, arg)) (C and C++), URA_ON(..., handler, URA_WHEN(expr))
 * (a guard expression, C: ura/guard.h), or in C also `.guard = fn,
 * .guard_arg = p`. The types must be a string literal (URA_ON_ANY takes
 * any values). C++ versions of these macros are at the end. */
#ifndef __cplusplus
#define URA_ON(tag_, types_, ...)                                          \
	{ .tag = (tag_), .types = (types_),                                \
	  .sig_ = URA__SIG(types_) | ((uint64_t)1 << 62), .fn = __VA_ARGS__ }
#define URA_ON_ANY(tag_, ...)                                              \
	{ .tag = (tag_), .types = NULL, .sig_ = 0, .fn = __VA_ARGS__ }
#define URA_GUARD(fn_, arg_) .guard = (fn_), .guard_arg = (arg_)

/*
 * Defines a file-scope behavior `name` (static const):
 *
 *	URA_BEHAVIOR_DECL(available);            // forward, if needed
 *	URA_BEHAVIOR(available,
 *		URA_ON(A_TAKE, "r", take));
 *
 * URA_BEHAVIOR_OPTS(name, (.unmatched = URA_UNMATCHED_STASH), cases...)
 * sets behavior fields too. (A definer rather than an initializer: GCC
 * folds atoms in a plain array initializer, not in a compound literal.)
 */
#define URA__UNPAREN(...) __VA_ARGS__
#define URA_BEHAVIOR_DECL(name_) static const ura_behavior name_
#define URA_BEHAVIOR_OPTS(name_, opts_, ...)                               \
	static const ura_case name_##__ura_cases[] = { __VA_ARGS__ };      \
	static const ura_behavior name_ = {                                \
		.cases = name_##__ura_cases,                               \
		.ncases = (uint32_t)(sizeof(name_##__ura_cases) /          \
				     sizeof(ura_case)),                    \
		.name = #name_, URA__UNPAREN opts_ }
#define URA_BEHAVIOR(name_, ...) URA_BEHAVIOR_OPTS(name_, (.unmatched = 0), __VA_ARGS__)
#endif

/* Builds a behavior at run time: copies `cases` (types strings included),
 * validates every case (a handler is set, types use only "idarsbp" and at
 * most URA_MAX_VALUES of them), and returns it in *out. -EINVAL on a bad
 * case, -ENOMEM. Free it with ura_behavior_free() once no actor uses it.
 * Any thread. */
URA_API int ura_behavior_new(ura_behavior **out, const ura_case *cases,
			     size_t ncases, ura_unmatched unmatched);
URA_API void ura_behavior_free(ura_behavior *b);
/* Checks a (static) behavior the way ura_behavior_new() does. */
URA_API int ura_behavior_check(const ura_behavior *b);

/* ------------------------------------------------------------------------ */
/* Actor classes                                                            */

typedef struct ura_class {
	const char *name;            /* for traces and errors; required */
	size_t state_size;           /* bytes of per-actor state, zeroed */
	const ura_behavior *initial; /* required */
	/* Called once, on the spawning thread, before spawn returns. `arg`
	 * is the spawn argument. Without init, a non-NULL arg is copied into
	 * the state (state_size bytes). Returning -errno fails the spawn
	 * (init cleans up after itself: destroy is not called). */
	int (*init)(ura_ctx *cx, void *state, const void *arg);
	/* Called once when the actor stops or the system is destroyed, on
	 * the thread doing that; exactly when the spawn succeeded (a spawn
	 * that returns an error never calls it). Must not send. */
	void (*destroy)(void *state);
	uint32_t unmatched;          /* ura_unmatched; default DROP */
	/* A bounded mailbox for every actor of the class (see "Bounded
	 * mailboxes" below); NULL: unbounded. Read at each spawn; must
	 * outlive the spawn calls only. */
	const struct ura_mailbox_opts *mailbox;
	uint64_t reserved_[1];       /* zero */
	/* URA_CLASS_METRICS: count this class's actors and messages, and
	 * keep a record per actor for ura_actor_inspect / ura_metrics_top
	 * (see "Metrics"); | URA_CLASS_METRICS_WAIT (which implies the
	 * first): sample its mailbox wait too (ura_metrics_class_wait: each
	 * send to it pays a test, 1 in sample_every a clock read); 0: not
	 * counted (the default). A metered actor's state is kept in its
	 * slot up to 32 bytes (40 unmetered), allocated beyond. */
	uint64_t metrics;
	/* A context-switching actor (see "Context-switching actors"): its
	 * body runs on a stack of its own once the spawn returned, and
	 * calls ura_receive(); `initial` may then be NULL. NULL: an
	 * event-based actor. */
	void (*body)(ura_ctx *cx, void *state);
	/* Its stack's size in bytes, rounded up to pages; 0:
	 * URA_STACK_DEFAULT; below URA_STACK_MIN or above URA_STACK_MAX:
	 * -EINVAL at spawn. Only with body. */
	size_t stack_size;
	/* URA_CLASS_UNMUTED: its actors are never muted (see "Bounded
	 * mailboxes"); other bits: zero (-EINVAL at spawn). */
	uint64_t flags;
} ura_class;

/* ura_class.flags: a send of this class's actors to a full URA_FULL_MUTE
 * (or REFUSE_MUTE) mailbox is accepted over the bound instead of muting
 * the sender, as a send from outside any actor is: for an actor that
 * others wait on to keep running -- one that drains a socket or a device,
 * whose stall would stall its own receivers' drain (a mute cycle through
 * I/O that the mute rule cannot see). */
#define URA_CLASS_UNMUTED 0x1ull

/* ------------------------------------------------------------------------ */
/* System                                                                   */

typedef struct ura_config {
	/* Worker threads; 0: one per CPU this process may run on. The
	 * environment variable URA_WORKERS overrides it. */
	unsigned workers;
	/* Messages an actor may handle per turn before it goes to the back
	 * of the run queue; 0: 64. URA_BATCH overrides it. */
	unsigned batch;
	/* Longest a sleeping worker waits without being woken, a backstop
	 * against a kernel that loses wakeups; 0: none (the default: an idle
	 * worker sleeps until woken, so an idle system makes no wakeups;
	 * lib/runtime/worker.c says why no wakeup is lost). */
	uint64_t idle_wait_ns;
	/* How long an idle worker spins and tries to steal before sleeping,
	 * and a scoped actor's thread spins before it sleeps in a wait;
	 * 0: 50 us. */
	uint64_t spin_ns;
	/* Timer resolution: deadlines within one slack interval fire together
	 * (coalescing); 0: URA_TIMER_SLACK_DEFAULT. URA_TIMER_SLACK_US
	 * overrides it. */
	uint64_t timer_slack_ns;
	/* Don't start the workers yet: see ura_system_start(). Messages sent
	 * before the start wait for it. */
	int paused;
	/* Pin worker i to the i-th allowed CPU (default on). */
	int no_pinning;
	/* An idle worker steals from another node only after its own node's
	 * workers had nothing to steal for this long; 0: 200 us. */
	uint64_t steal_remote_ns;
	/* Send messages to other nodes one at a time instead of in batches
	 * (the default batches; URA_NUMA_BATCH=0 also turns it off). */
	int no_numa_batching;
	/* Messages an outbox holds before it is flushed early; 0: 32. Every
	 * outbox is also flushed at the end of each turn, and a message to
	 * a node whose workers are all idle goes at once, with the rest of
	 * that turn's to the node (at most 16 a turn; core/outbox.c). */
	unsigned numa_batch;
	/* Trace every unmatched message through the log (also URA_TRACE=
	 * unmatched). */
	int trace_unmatched;
	/* Log sink; NULL: stderr, with "ura: " in front. */
	ura_log_fn *log;
	void *log_ud;
	/* Least important level the default sink prints (URA_LOG_ERROR ..
	 * URA_LOG_DEBUG); 0: warn. The environment variable
	 * URA_LOG=error|warn|info|debug overrides it. A custom sink gets
	 * every level. */
	int log_level;
	/* io_uring's own helper threads (io-wq), per worker ring: they run
	 * on the worker's node and at most this many at once for blocking
	 * work (regular files); 0: 4. */
	unsigned io_wq_max;
	/* Threads per node for ura_offload() (and, on the epoll backend, for
	 * file I/O); started on first use; 0: 2. URA_POOL_THREADS overrides
	 * it. */
	unsigned pool_threads;
	/* Zero. (A library built with -Ddeterministic=true, for tests, reads
	 * reserved_[0] as its seed: lib/README.md.) */
	uint64_t reserved_[2];
	/* Metrics: one handled message in 2^metrics_sample_log2 of each
	 * metered class (ura_class.metrics) has its handler timed; 0: 1 in
	 * 256 (8; URA_METRICS_SAMPLE); at most 16. Timing costs two clock
	 * reads (27 ns each on kvm-clock): at 1 in 16 they were 8% of an
	 * empty handler's message (bench/README.md, issue 17). */
	uint64_t metrics_sample_log2;
	uint64_t reserved3_[3]; /* zero */
	/* Stacks of context-switching actors the system keeps mapped for
	 * later spawns once their actors stopped (each keeps the pages it
	 * touched); 0: 64. */
	uint64_t stack_pool;
	uint64_t reserved7_[9]; /* zero */
} ura_config;

/* Creates a system and (unless cfg->paused) starts its workers. cfg may be
 * NULL for defaults. Returns -EINVAL on a bad config or environment
 * variable, -ENOMEM, or the error of a failed thread start. Any thread. */
URA_API int ura_system_new(ura_system **out, const ura_config *cfg);
/* Starts the workers of a system created paused; 0 if already started. */
URA_API int ura_system_start(ura_system *sys);
/* Blocks until the system is quiescent: no actor runnable or running, no
 * message in flight, nothing pending on any worker's ring. Starts a paused
 * system. Returns 0, or -EDEADLK when called from a worker thread. Any
 * non-worker thread; several may wait at once. Actors stay alive: a new
 * message from outside starts them again. */
URA_API int ura_system_await(ura_system *sys);
/* Like ura_system_await, but gives up after timeout_ns with -ETIMEDOUT. */
URA_API int ura_system_await_for(ura_system *sys, uint64_t timeout_ns);
/* Stops the workers after the turns they are running. From then on every
 * send and spawn fails with -ESHUTDOWN. Idempotent; 0 on success,
 * -EDEADLK from a worker thread. */
URA_API int ura_system_shutdown(ura_system *sys);
/* Shuts down if needed, runs the destroy callback of every live actor,
 * frees every message, actor and worker, and the system itself. Returns 0
 * when nothing was lost, or -EBUSY when accepted messages were never
 * handled (still in mailboxes, or stashed and never matched): they are
 * freed too, and what was lost is logged at warn level. -EDEADLK from a
 * worker thread (nothing is freed then). */
URA_API int ura_system_destroy(ura_system *sys);

/* Counters, summed over workers; a snapshot, not atomic as a whole. */
typedef struct ura_stats {
	unsigned workers;
	const char *backend;   /* e.g. "io_uring(single_issuer,defer_taskrun)"
	                          or "epoll"; static storage */
	uint64_t spawned;      /* actors spawned */
	uint64_t stopped;      /* actors stopped */
	uint64_t live;         /* actors alive now */
	uint64_t sent;         /* messages accepted by a send */
	uint64_t received;     /* taken from mailboxes (handled, unmatched,
	                          stashed, or dead letters) */
	uint64_t unmatched;    /* dropped because no case matched */
	uint64_t stashed;      /* stashed because no case matched */
	uint64_t dead_letters; /* reached an actor that had stopped */
	uint64_t turns;        /* actor turns run */
	uint64_t steals;       /* actors taken from another worker */
	uint64_t steals_remote; /* of which from another node */
	unsigned nodes;        /* NUMA nodes with workers */
	uint64_t cross_node;   /* messages sent by a worker to another node */
	uint64_t flushes;      /* outbox batches handed to another node */
	uint64_t flushed;      /* messages in those batches (mean = /flushes) */
	int simulated_topology; /* URA_TOPOLOGY is in effect */
	uint64_t sleeps;       /* times a worker went to sleep */
	uint64_t wakeups;      /* wakeups sent to sleeping workers */
	uint64_t ring_enters;  /* io_uring_enter / epoll_wait calls */
	uint64_t timers_armed;     /* delayed sends and receive timeouts armed */
	uint64_t timers_fired;
	uint64_t timers_cancelled;
	uint64_t timers_pending;   /* armed now */
	uint64_t io_submitted;     /* I/O operations and offloads started */
	uint64_t io_completed;     /* their completion messages */
	uint64_t io_inflight;      /* started and not finally completed */
	uint64_t io_deferred;      /* waited in user space for CQ room */
	/* Bounded mailboxes: */
	uint64_t mb_dropped;       /* dropped by DROP_NEWEST or DROP_OLDEST */
	uint64_t mb_refused;       /* sends refused with -EAGAIN (or timed out) */
	uint64_t mb_mutes;         /* times a sending actor was muted */
	uint64_t mb_waits;         /* sends from outside that had to wait */
	uint64_t mb_overloads;     /* URA_OVERLOAD signals sent */
	uint64_t mb_over;          /* accepted over the bound (see URA_FULL_MUTE) */
	uint64_t spin_yields;      /* CPU given away by idle spins (sched_yield)
	                              after a spin was preempted */
	uint64_t slots;            /* actor slots made, 128 bytes each: the
	                              actors alive and the free ones kept for
	                              reuse (see ura_system_stats(3)) */
	uint64_t timers_stolen;    /* of timers_fired: fired by an idle worker
	                              for the busy one that armed them */
	uint64_t alarm_sets;       /* timerfd_settime calls of the workers'
	                              alarms: a deadline of a busy worker's
	                              timer that an idle peer must not miss */
	/* Context-switching actors: alive now; switches into their bodies;
	 * stacks mapped now (running, waiting, or kept in the pool); of
	 * those, kept in the pool for the next spawn. */
	uint64_t fibers;
	uint64_t fiber_switches;
	uint64_t stacks_mapped;
	uint64_t stacks_pooled;
	uint64_t alarm_wakes;      /* sleeps in which a busy peer's alarm
	                              fired (its turn outlasted a deadline) */
	uint64_t reserved2_[17];   /* written as zero */
} ura_stats;
URA_API int ura_system_stats(ura_system *sys, ura_stats *out);

/* ------------------------------------------------------------------------ */
/* Metrics: what the workers, classes and actors are doing, for a person
 * looking at a running system (the exporter below serves it to Prometheus).
 *
 * Every worker keeps its own counters, written only by itself with plain
 * stores; a reader sums them. A read is a snapshot, not atomic as a whole:
 * each counter is exact and never torn, but two of them may be a few
 * events apart. Counters only grow (the gauges say so).
 *
 * Per-class metrics are opt-in (ura_class.metrics = URA_CLASS_METRICS),
 * as CAF labels by actor type: they are summed per class, never per
 * actor, so their size grows with classes and workers, never with actors.
 * A metered class also gets a record per actor, which ura_actor_inspect
 * and ura_metrics_top read. At most URA_METRICS_CLASSES classes are
 * metered per system; later ones are counted in ura_metrics_classes'
 * overflow and otherwise run unmetered. A class with a body is metered as
 * any other: a case that one of its receives runs counts as a handler,
 * and its record is brought up to date whenever the body lets go of its
 * worker (a receive that waits, an I/O call, a batch taken).
 *
 * Histograms are of nanoseconds in URA_HIST_BUCKETS power-of-two buckets:
 * bucket[i] counts values in (64 << (i-1), 64 << i] (bucket[0]: <= 64 ns);
 * values above the last bound are in count but in no bucket. Not
 * cumulative here; the exporter makes them so.
 */
#define URA_HIST_BUCKETS 28
#define URA_HIST_BOUND(i) (64ull << (i)) /* ns: bucket i's upper bound */
#define URA_METRICS_CLASSES 64
#define URA_CLASS_METRICS 1ull
#define URA_CLASS_METRICS_WAIT 2ull

typedef struct ura_hist {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t bucket[URA_HIST_BUCKETS];
} ura_hist;

typedef struct ura_worker_metrics {
	unsigned id;
	unsigned node;             /* dense node index */
	int cpu;                   /* pinned CPU, -1 if none */
	unsigned runq;             /* gauge: actors in its stealable queue */
	uint64_t uptime_ns;        /* since the worker started */
	uint64_t busy_ns;          /* neither spinning nor sleeping */
	uint64_t spin_ns;          /* idle, spinning and stealing */
	uint64_t sleep_ns;         /* asleep in the poller */
	uint64_t turns, received, sent, spawned, stopped;
	uint64_t unmatched, dead_letters;
	uint64_t steals, steals_remote;
	uint64_t sleeps;           /* times it went to sleep */
	uint64_t woken;            /* sleeps a wake ended (the rest: timeouts,
	                              I/O completions, deadlines) */
	uint64_t wakeups_sent;     /* wakes it sent to sleeping peers */
	uint64_t ring_enters;      /* io_uring_enter / epoll_wait for sleep */
	uint64_t timers_armed, timers_fired, timers_cancelled;
	uint64_t io_submitted, io_completed;
	uint64_t cross_node;       /* messages it sent to another node */
	uint64_t flushes, flushed; /* outbox batches, and their messages */
	ura_hist timer_late;       /* how late its timers fired */
	/* Of wakeups_sent, by kind: an IORING_OP_MSG_RING on the peer's
	 * ring, or a write to its eventfd (the epoll backend, or a kernel
	 * without MSG_RING). Wakes from threads that are not workers are
	 * eventfd writes, counted by no worker. */
	uint64_t wakeups_msg_ring, wakeups_eventfd;
	uint64_t spin_yields;      /* sched_yield calls of its idle spins (a
	                              spin that was preempted yields a while) */
	uint64_t alarm_sets;       /* sets of its alarm (timerfd_settime) */
	uint64_t alarm_wakes;      /* its sleeps in which a peer's alarm fired */
	uint64_t reserved_[3];     /* written as zero */
} ura_worker_metrics;

typedef struct ura_class_metrics {
	const ura_class *cls;
	const char *name;          /* cls->name */
	uint64_t live;             /* gauge: spawned - stopped */
	uint64_t spawned;
	uint64_t stopped_normal;   /* exit reason URA_NORMAL */
	uint64_t stopped_other;    /* any other reason (errors, kills) */
	uint64_t received;         /* taken from its actors' mailboxes */
	uint64_t handled;          /* of which a handler ran for */
	uint64_t unmatched;        /* of which dropped: no case matched */
	uint64_t dead_letters;     /* of which reached a stopped actor */
	/* Gauge: messages waiting in its actors' mailboxes, as each actor
	 * last saw them when its turn ended (an actor counts at most
	 * URA_METRICS_DEPTH_MAX). */
	int64_t mailbox;
	uint32_t sample_every;     /* 1 in this many handlers is timed */
	uint32_t reserved0_;
	ura_hist handler;          /* sampled handler times */
	uint64_t reserved_[8];     /* written as zero */
} ura_class_metrics;
#define URA_METRICS_DEPTH_MAX 4096

/* Fills out[0 .. min(n, workers)) and returns the number of workers (call
 * with n = 0 to size the array). -EINVAL without sys, or out with n > 0.
 * Any thread, at any time while the system exists. */
URA_API int ura_metrics_workers(ura_system *sys, ura_worker_metrics *out, unsigned n);
/* Fills out[0 .. min(n, classes)) with the metered classes, in the order
 * they were first spawned, and returns how many there are. *overflow, if
 * not NULL, gets how many spawns of classes past URA_METRICS_CLASSES went
 * unmetered. Errors and threads as ura_metrics_workers. */
URA_API int ura_metrics_classes(ura_system *sys, ura_class_metrics *out, unsigned n,
				uint64_t *overflow);
/* The mailbox wait of class cls (metrics URA_CLASS_METRICS_WAIT; zero
 * for a class metered without it), into *out: how long its plain
 * messages waited from the send to the start of the turn that took them,
 * in ~1 us steps (ns >> 10), sampled as its handler times are (1 in
 * sample_every sends from each thread; requests, replies, timers and
 * system messages are not sampled). For a body (ura_class.body) the wait
 * ends when a receive takes the message from the mailbox. 0; -ENOENT: cls
 * is not among ura_metrics_classes (not metered, or not spawned yet);
 * -EINVAL. Any thread. */
URA_API int ura_metrics_class_wait(ura_system *sys, const ura_class *cls, ura_hist *out);

/* One actor, as ura_actor_inspect and ura_metrics_top see it. */
typedef struct ura_actor_info {
	ura_ref ref;
	const ura_class *cls;      /* NULL: not of a metered class */
	const char *name;          /* cls->name, or NULL */
	const char *behavior;      /* its current behavior's name, or NULL
	                              (metered classes only); valid as long as
	                              the behavior is */
	unsigned node;             /* dense node index it lives on */
	unsigned worker;           /* worker it last ran on */
	uint64_t mailbox;          /* messages waiting when its last turn ended */
	uint64_t handled;          /* messages a handler ran for */
	uint64_t handler_ns;       /* estimated handler time: sampled times
	                              scaled by the sample rate */
	uint64_t reserved_[4];     /* written as zero */
} ura_actor_info;

/* What r is doing: 0, or -ESRCH when r is not a live actor of sys,
 * -EINVAL without sys or out. For an actor of an unmetered class only
 * ref, node and worker are filled (cls is NULL). Any thread; the values
 * are read while the actor runs (each exact, together a snapshot). */
URA_API int ura_actor_inspect(ura_system *sys, ura_ref r, ura_actor_info *out);

enum ura_top_by {
	URA_TOP_MAILBOX = 0,       /* deepest mailboxes first */
	URA_TOP_HANDLER_TIME = 1,  /* most (estimated) handler time first */
	URA_TOP_HANDLED = 2,       /* most messages handled first */
};
/* The top n live actors of metered classes by `by`, best first, into out;
 * returns how many it filled (<= n; ties in any order). It walks the
 * records of every slot once, on the calling thread and off the workers'
 * path (bench/scrape: 0.2 s for a million slots on a loaded 2-CPU
 * machine): call it on demand, never per message. -EINVAL on a bad
 * argument. Any thread. */
URA_API int ura_metrics_top(ura_system *sys, int by, ura_actor_info *out, unsigned n);

enum ura_metrics_format {
	URA_METRICS_PROMETHEUS = 0, /* text/plain; version=0.0.4 */
	URA_METRICS_OPENMETRICS = 1, /* application/openmetrics-text; version=1.0.0 */
};
/* Renders every metric (workers, classes, the system) in `format` into
 * buf (NUL-terminated when cap > 0), and returns its length without the
 * NUL: when that is >= cap the text was cut, call again with more room
 * (as snprintf). Its size grows with workers and classes, never with
 * actors. -EINVAL on a bad argument. Any thread. */
URA_API int ura_metrics_render(ura_system *sys, int format, char *buf, size_t cap);

/* Serves the metrics over HTTP/1.1 at GET /metrics on addr:port (addr
 * NULL: 127.0.0.1; port 0: any free port, told in *bound), from an actor
 * of sys that uses actor I/O: its worker's ring accepts, reads and
 * writes. Prometheus text, or OpenMetrics when the request's Accept names
 * application/openmetrics-text. GET /actors?by=mailbox|handler_time|
 * handled&n=1..100 (default mailbox, 10) answers ura_metrics_top as text,
 * one actor a line: "<index.gen> class behavior node worker mailbox
 * handled handler_ns" (it walks the actor table: on demand). Requests are read with a 5 s deadline and
 * at most 8 KiB of head; anything but GET/HEAD of those gets a 4xx; one
 * request per connection (Connection: close); at most 64 connections at
 * once (more are closed at accept). The acceptor's ref goes to *out
 * (NULL: not wanted); ura_kill(sys, ref, URA_KILL) stops it and closes the
 * port, as does the system's destroy. Its accept is an operation in
 * flight like any other: while it serves, the system is never quiescent
 * (ura_system_await waits), so a program that awaits stops it first.
 * Returns 0, or -errno from socket, bind or listen (-EADDRINUSE) or from
 * the spawn; -EINVAL on a bad argument (no sys, a port outside 0..65535,
 * an addr that is not dotted IPv4). Any thread, handlers included. */
URA_API int ura_metrics_serve(ura_system *sys, const char *addr, int port, int *bound,
			      ura_ref *out);

/* ------------------------------------------------------------------------ */
/* Handler context (valid only inside a handler or init callback)          */

URA_API ura_ref ura_self(ura_ctx *cx);
URA_API ura_ref ura_sender(ura_ctx *cx);     /* of the current message */
URA_API void *ura_state(ura_ctx *cx);         /* the actor's state */
URA_API ura_system *ura_ctx_system(ura_ctx *cx);
/* Worker index running this handler (0-based). */
URA_API unsigned ura_worker_id(ura_ctx *cx);
/* Switches to behavior b for the next message (the running handler
 * finishes first). Re-delivers stashed messages. -EINVAL if b is NULL. */
URA_API int ura_become(ura_ctx *cx, const ura_behavior *b);
/* Same, and sets the bound value read by ura_bound(). */
URA_API int ura_become_with(ura_ctx *cx, const ura_behavior *b, ura_value bound);
URA_API ura_value ura_bound(ura_ctx *cx);
/* Stops the actor once the running handler returns: its destroy callback
 * runs, later messages become dead letters, its ref goes stale. The exit
 * reason is URA_NORMAL: ura_exit(cx, URA_NORMAL, URA_NOVALUE). */
URA_API void ura_stop(ura_ctx *cx);

/* ------------------------------------------------------------------------ */
/* Spawning. `x` is a ura_ctx* (inside a handler: the child starts on the
 * same worker) or a ura_system* (any thread). */

URA_API int ura_spawn_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			  ura_ref *out);
URA_API int ura_spawn_sys(ura_system *sys, const ura_class *cls,
			  const void *arg, ura_ref *out);

/* A node or a worker named for placement: URA_NODE(k), URA_WORKER(k), k
 * numbered from 0 as everywhere else (ura_actor_node, ura_worker_node,
 * ura_worker_id). The zeroed value means "not given"; a plain integer
 * does not convert to these, so `.node = 1` does not compile (it would
 * have meant node 0). The field is private. */
typedef struct ura_node_pick { int k1_; } ura_node_pick;
typedef struct ura_worker_pick { int k1_; } ura_worker_pick;
#ifdef __cplusplus
#define URA_NODE(k) (ura_node_pick{ (int)(k) + 1 })
#define URA_WORKER(k) (ura_worker_pick{ (int)(k) + 1 })
#else
#define URA_NODE(k) ((ura_node_pick){ (int)(k) + 1 })
#define URA_WORKER(k) ((ura_worker_pick){ (int)(k) + 1 })
#endif

/* Options for ura_spawn_ex; a zeroed struct means the defaults. */
typedef struct ura_spawn_opts {
	/* Join this group before spawn returns (before any message can reach
	 * the actor through the group). */
	ura_group *group;
	/* Placement: the node the actor lives on, or the node of a worker.
	 * Default: the spawner's node (node 0 from a thread that is not a
	 * worker). A node or worker that does not exist: -EINVAL. The actor
	 * runs on its node's workers; it may be stolen by another node's
	 * idle worker, and goes home on its next wake. */
	ura_node_pick node;
	ura_worker_pick worker;
	/* Link the new actor to the spawning actor (Erlang's spawn_link),
	 * and/or monitor it, writing the monitor's id to *monitor
	 * (spawn_monitor): both are in place before spawn returns and
	 * before the child handles anything, so no exit can slip between
	 * the spawn and the link. Only from a ura_ctx (-EINVAL from a
	 * ura_system*: there is no spawning actor). A spawn that fails
	 * leaves neither behind (and sends no EXIT or DOWN). */
	int link;
	uint32_t reserved0_;   /* zero */
	ura_mon *monitor;
	/* This actor's mailbox bound, instead of its class's (copied at
	 * spawn; see "Bounded mailboxes"). NULL: the class's. */
	const struct ura_mailbox_opts *mailbox;
	uint64_t reserved_[3]; /* zero */
} ura_spawn_opts;

/* Where an actor lives: its node (0-based) and the worker that ran it
 * last. -ESRCH for a stopped actor. Any thread. */
URA_API int ura_actor_node(ura_system *sys, ura_ref r);
URA_API int ura_actor_worker(ura_system *sys, ura_ref r);
/* Nodes with workers, and the node of a worker (0-based). */
URA_API int ura_system_nodes(ura_system *sys);
URA_API int ura_worker_node(ura_system *sys, unsigned worker);
URA_API int ura_spawn_ex_ctx(ura_ctx *cx, const ura_class *cls, const void *arg,
			     const ura_spawn_opts *opts, ura_ref *out);
URA_API int ura_spawn_ex_sys(ura_system *sys, const ura_class *cls,
			     const void *arg, const ura_spawn_opts *opts,
			     ura_ref *out);

/* ------------------------------------------------------------------------ */
/* Sending. vals/n are copied. Returns 0, -ESRCH (the target has stopped or
 * never existed), -EINVAL (bad tag or value), -EMSGSIZE (over URA_MSG_MAX),
 * -ENOMEM, or -ESHUTDOWN. On failure nothing was sent. To a bounded
 * mailbox that is full (below), also -EAGAIN or URA_DROPPED, or the call
 * waits (from outside the workers, URA_FULL_MUTE and
 * URA_FULL_REFUSE_MUTE). */

URA_API int ura_sendv_ctx(ura_ctx *cx, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n);
URA_API int ura_sendv_sys(ura_system *sys, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n);

/* ------------------------------------------------------------------------ */
/* Bounded mailboxes (backpressure).
 *
 * A mailbox is unbounded unless its class (ura_class.mailbox) or its spawn
 * (ura_spawn_opts.mailbox) gives it a capacity. A bounded mailbox counts
 * the messages senders put in it and not yet taken by the actor (its
 * depth, ura_mailbox_depth); when the depth is at the capacity, a new
 * message meets the mailbox's policy, `full`:
 *
 *                      | from a handler       | from another thread
 *  URA_FULL_REFUSE     | -EAGAIN              | -EAGAIN
 *  URA_FULL_DROP_NEWEST| dropped: URA_DROPPED | dropped: URA_DROPPED
 *  URA_FULL_DROP_OLDEST| accepted; the oldest queued message is dropped
 *  URA_FULL_MUTE       | accepted; the sender | waits until there is room
 *                      | is muted (below)     | (ura_sendv_wait: a deadline)
 *  URA_FULL_REFUSE_MUTE| -EAGAIN, and the     | waits until there is room
 *                      | sender is muted      | (ura_sendv_wait: a deadline)
 *
 * -EAGAIN: nothing was accepted, the caller keeps its values and may try
 * again. URA_DROPPED (1, not an error): the call succeeded but the
 * message was dropped, and counted (ura_stats.mb_dropped). DROP_OLDEST
 * drops when the actor next takes a message (its turn), so the queue may
 * exceed the capacity until then; a dropped request is answered with
 * URA_ERROR(URA_DROPPED_REASON). A request meeting DROP_NEWEST is refused
 * with -EAGAIN instead (a request that was sent always ends).
 *
 * Muting (Pony's): the message is accepted, no message is lost and no
 * worker blocks; the sending actor finishes the handler it is in, and is
 * then not scheduled again until the receiver has drained to its low-water
 * mark (or stopped). There the receiver lets its muted senders go oldest
 * first, about as many at each take as its free room holds at what one
 * sender added last time, and all of them once it is empty: 1000
 * producers do not all wake for 512 free places. Messages to a muted
 * actor wait in its mailbox. A send on a worker thread by no actor
 * (ura_sendv_sys from a handler) is accepted over the bound
 * (ura_stats.mb_over): a worker never blocks.
 * The rule that keeps mutes from deadlocking: an actor is never muted on
 * a receiver that is muted itself; that send is accepted over the bound
 * instead. So muted actors form chains, never cycles, and the head of a
 * chain is not muted: it runs, drains, and releases the rest. While a
 * receiver is muted its mailbox may therefore exceed its capacity.
 *
 * URA_FULL_REFUSE_MUTE is the mute with the bound kept exactly: the send
 * that finds the mailbox full is refused (-EAGAIN, the caller keeps its
 * values) and the sender is muted as above, so a producer that meets it
 * puts its work back (a message to itself, say) and returns; it runs
 * again once the receiver has drained to low water. With MUTE each
 * producer can add what it sends in one handler over the capacity (1000
 * producers of 16 sends a handler: 16000 over a capacity of 1024); with
 * REFUSE_MUTE the depth never passes the capacity. The cycle rule holds
 * for it too: to a receiver that is muted itself the send is accepted over
 * the bound instead, and its sender is not muted. From a worker thread by
 * no actor, -EAGAIN (nothing to mute, and a worker never blocks).
 *
 * Context-switching actors (ura_class.body) take part on both sides: a
 * message counts as taken (the depth goes down, DROP_OLDEST drops it if
 * one is owed) when a receive takes it from the mailbox, kept for later
 * or not; and a body whose send is muted goes on to its next receive (or
 * ura_io_call), where an event-based sender's handler would have ended,
 * and is muted there; the receive goes on once it is released.
 *
 * A group send (ura_send_group) skips a member whose mailbox refuses or
 * drops it: that member is not counted as reached; the others get it (a
 * member's REFUSE_MUTE mutes the sending actor as a plain send would).
 *
 * Never bounded: system messages (DOWN, EXIT, links and monitors), replies
 * and request errors, timeouts, I/O completions, OS signals, URA_OVERLOAD
 * itself. They neither count in the depth nor meet the policy.
 *
 * The overload signal: with `overload` set, the actor is sent
 * URA_OVERLOAD(i64 depth) when its depth reaches high_water; once more
 * only after the depth fell to low_water. It is an ordinary message for
 * the behavior (unmatched: dropped like any).
 *
 * Stopped actors, snapshots and quiescence: a receiver that stops releases
 * the actors muted on it and wakes the threads waiting for it (they get
 * -ESRCH); a muted actor is not quiescent (the receiver it waits for has
 * messages, so the system is not idle) and is captured by a snapshot when
 * it runs again, which the rule above guarantees.
 */
typedef enum ura_full {
	URA_FULL_REFUSE = 0,
	URA_FULL_DROP_NEWEST,
	URA_FULL_DROP_OLDEST,
	URA_FULL_MUTE,
	URA_FULL_REFUSE_MUTE,
} ura_full;

/* The largest capacity. */
#define URA_MAILBOX_MAX (1u << 24)
/* What a send returns when DROP_NEWEST dropped its message. */
#define URA_DROPPED 1
#define URA_OVERLOAD URA_ATOM("_overload")
/* The reason of the URA_ERROR a request dropped by DROP_OLDEST gets. */
#define URA_DROPPED_REASON URA_ATOM("dropped")

typedef struct ura_mailbox_opts {
	uint32_t capacity;   /* 1 .. URA_MAILBOX_MAX (unbounded: no opts) */
	uint32_t full;       /* ura_full */
	/* Muted senders resume and waiting threads wake when the depth falls
	 * to this; 0: capacity / 2. Must be below capacity. */
	uint32_t low_water;
	/* The overload signal's depth; 0: capacity. At most capacity. */
	uint32_t high_water;
	uint32_t overload;   /* nonzero: send URA_OVERLOAD (above) */
	uint32_t reserved0_; /* zero */
	uint64_t reserved_[2]; /* zero */
} ura_mailbox_opts;
/* Spawn checks the opts (the class's and the spawn's): a capacity of 0 or
 * beyond URA_MAILBOX_MAX, a policy out of range, low_water >= capacity,
 * high_water > capacity, or reserved words not zero: -EINVAL. */

/* Like ura_sendv_sys, from a thread that is not a worker, waiting while
 * the target's bounded mailbox is full, whatever its policy, until there
 * is room or `deadline_ns` (CLOCK_MONOTONIC, ura_now_ns) passes: then
 * -ETIMEDOUT and nothing is sent. A deadline in the past tries once.
 * -ESRCH also when the target stops while we wait, -ESHUTDOWN when the
 * system shuts down; -EDEADLK from a worker thread. To an unbounded
 * mailbox it is ura_sendv_sys. */
URA_API int ura_sendv_wait(ura_system *sys, ura_ref to, uint64_t deadline_ns,
			   ura_atom tag, const ura_value *vals, unsigned n);
/* CLOCK_MONOTONIC in nanoseconds, for deadlines. Any thread. */
URA_API uint64_t ura_now_ns(void);
/* Holds (on nonzero) or lets go of (0) the calling actor's own bounded
 * mailbox: while held it counts as full, so new messages meet its policy
 * (a sending actor is muted, a thread waits, REFUSE refuses) though the
 * actor goes on taking what is queued; let go, the depth is the real one
 * again, and at low water the muted senders resume. For an actor whose
 * own output is what is slow (a socket, a device): it holds while its
 * output is over a high mark and lets go under a low one, and its
 * producers keep its pace with nothing lost and no worker blocked.
 * Idempotent; a stop lets go. 0, -ENOTSUP for an unbounded mailbox,
 * -EINVAL for a NULL cx. */
URA_API int ura_mailbox_hold(ura_ctx *cx, int on);
/* The depth of r's bounded mailbox (messages accepted and not yet taken);
 * -ENOTSUP for an unbounded mailbox (it keeps no count, for speed),
 * -ESRCH for a stopped actor. Any thread; a moment's view. */
URA_API int64_t ura_mailbox_depth(ura_system *sys, ura_ref r);
/* ------------------------------------------------------------------------ */
/* Requests that end. A request is a send whose answer goes to a
 * continuation of the requester instead of its behavior:
 *
 *	ura_request(cx, store, on_value, NULL, A_GET, key);
 *	static void on_value(ura_ctx *cx, const ura_msg *m)
 *	{ if (ura_msg_tag(m) == URA_ERROR) ...; else use ura_arg_*(m, 0); }
 *
 * Every request that was sent (the call returned 0) ends exactly once:
 * `cont` runs once, with
 *  - the reply: the target's ura_reply() in the handler that got the
 *    request, or later, from any handler of the target, through a promise
 *    (ura_promise_take / ura_promise_reply), or from another actor the
 *    request was forwarded to (ura_forward);
 *  - URA_ERROR(atom reason[, value]): the request failed, and
 *    ura_exit_reason(m) / ura_exit_value(m) say why: the target stopped
 *    before answering (its exit reason: URA_NORMAL for ura_stop,
 *    URA_KILLED, URA_SHUTDOWN, its own; URA_NOPROC when it was gone
 *    before the request reached it and its slot was reused), the handler
 *    returned without answering and without taking a promise
 *    (URA_NOREPLY: nobody could answer it any more), no case took the
 *    request (URA_UNMATCHED; a stashed request waits, it is not
 *    unmatched), the target failed it (ura_reply_error), or the runtime
 *    ran out of memory for it (URA_NOMEM);
 *  - URA_TIMEOUT (no values), with a deadline, if neither came in time;
 *    an answer arriving later is dropped;
 * or never, when the requester stops first: its pending requests are
 * cancelled (their deadlines too), and a late answer is a dead letter.
 * A target that is already dead when the request is made fails the call
 * itself at once with -ESRCH (and cont never runs, as for every failed
 * call). Inside cont, ura_sender() is the actor that answered (for an
 * error, the target).
 */
/* Sends to the sender of the current message. In a handler that got a
 * request, or a continuation given a promise to answer (.chain below),
 * it answers that request: once; a second answer is -EALREADY, and a
 * requester that has stopped meanwhile -ESRCH (the request is over
 * either way). -ESRCH with no sender (a message from outside, init). */
URA_API int ura_replyv(ura_ctx *cx, ura_atom tag, const ura_value *vals,
		       unsigned n);
/* Answers the current request with URA_ERROR(reason[, value]): its
 * continuation sees ura_exit_reason(m) == reason. Value: any type but
 * URA_T_PTR (URA_NOVALUE for none). -ENOENT when there is no open
 * request (not a request, or already answered), -EINVAL for a bad reason
 * or value. */
URA_API int ura_reply_error(ura_ctx *cx, ura_atom reason, ura_value value);
/* Request/response: sends like ura_sendv_ctx, and routes the answer to
 * `cont` on this actor, bypassing its behavior. ura_request_data() there
 * returns `data`. If this call fails, cont is never called. Handler
 * context. */
URA_API int ura_requestv(ura_ctx *cx, ura_ref to, ura_handler *cont,
			 void *data, ura_atom tag, const ura_value *vals,
			 unsigned n);
/* In a continuation: its request's `data`, and its payload (below). */
URA_API void *ura_request_data(ura_ctx *cx);
/* The continuation's copy of ura_request_opts.payload (len bytes, 16-byte
 * aligned, writable), valid until the continuation returns; NULL (and
 * *len 0) without one. len may be NULL. */
URA_API void *ura_request_payload(ura_ctx *cx, size_t *len);
/* Same as ura_requestv, with a deadline for the answer: if none came
 * within timeout_ns, `cont` runs once with a message tagged URA_TIMEOUT
 * (no values) instead, and an answer arriving later is dropped. 0: no
 * deadline. -EINVAL over URA_MAX_DELAY. */
URA_API int ura_requestv_for(ura_ctx *cx, ura_ref to, uint64_t timeout_ns,
			     ura_handler *cont, void *data, ura_atom tag,
			     const ura_value *vals, unsigned n);

/* A request's answer, taken to give later (CAF's response_promise,
 * Erlang's gen_server:reply/2): plain data, copyable, kept in the actor's
 * state. Fields private; zeroed: none. */
typedef struct ura_promise {
	ura_ref to_;
	uint64_t id_;
} ura_promise;

/* Most bytes of ura_request_opts.payload. */
#define URA_REQUEST_PAYLOAD_MAX 256u

/* Options of ura_requestv_ex; a zeroed struct is ura_requestv's defaults. */
typedef struct ura_request_opts {
	uint64_t timeout_ns;        /* as ura_requestv_for's; 0: none */
	void *data;                 /* ura_request_data() in cont */
	/* Copied with the request (payload_len bytes, at most
	 * URA_REQUEST_PAYLOAD_MAX, else -EINVAL): what cont needs besides
	 * the answer, without packing it into `data`. Read it in cont with
	 * ura_request_payload(). */
	const void *payload;
	size_t payload_len;
	/* A promise of this actor's that cont answers: inside cont, ura_reply
	 * (and ura_reply_error, ura_forward, ura_promise_take) act on it as
	 * on the current request, and a cont that returns without answering
	 * it fails it with URA_NOREPLY. So a chain A -> B -> C answers A
	 * from B's continuation of C's answer. The promise stays B's (its
	 * stop fails it) until cont runs; *chain is copied. */
	const ura_promise *chain;
	uint64_t reserved_[4];      /* zero */
} ura_request_opts;
URA_API int ura_requestv_ex(ura_ctx *cx, ura_ref to, ura_handler *cont,
			    const ura_request_opts *opts, ura_atom tag,
			    const ura_value *vals, unsigned n);

/* Takes the current request (of a handler that got one, or a
 * continuation's chained promise) to answer it later, from any handler of
 * this actor, with ura_promise_reply / ura_promise_fail /
 * ura_promise_forward. The handler may then return without answering.
 * The promise is the actor's until answered: if the actor stops first,
 * the requester gets URA_ERROR with the actor's exit reason. 0;
 * -ENOENT with no open request (not a request, or already answered or
 * taken); -ENOMEM. */
URA_API int ura_promise_take(ura_ctx *cx, ura_promise *out);
/* Answer a promise this actor holds, and zero *p. -EINVAL for a zeroed
 * promise; -ENOENT for one this actor does not hold (answered already, or
 * another actor's: nothing is sent); -ESRCH when the requester has
 * stopped (the promise is over); the errors of a send otherwise (then the
 * promise is still held). Handler context. */
URA_API int ura_promise_replyv(ura_ctx *cx, ura_promise *p, ura_atom tag,
			       const ura_value *vals, unsigned n);
URA_API int ura_promise_fail(ura_ctx *cx, ura_promise *p, ura_atom reason,
			     ura_value value);
/* Hands the request over to `to`, as a request of the original
 * requester's (CAF's delegate): `to` sees it with ura_sender() == the
 * requester, and its ura_reply (or promise, or stop) answers the
 * requester directly. The promise (or the current request, for
 * ura_forwardv) is no longer this actor's once this returns 0; on an
 * error (-ESRCH: `to` is gone) it still is. */
URA_API int ura_promise_forwardv(ura_ctx *cx, ura_promise *p, ura_ref to,
				 ura_atom tag, const ura_value *vals, unsigned n);
URA_API int ura_forwardv(ura_ctx *cx, ura_ref to, ura_atom tag,
			 const ura_value *vals, unsigned n);

/* ------------------------------------------------------------------------ */
/* Links, monitors, exits (Erlang's, as its reference manual's "Processes"
 * chapter has them; CAF's monitor / link_to, down_msg / exit_msg).
 *
 * Signals travel with messages: a DOWN or an EXIT from actor X arrives
 * after every message X sent to the receiver before (per pair, as
 * messages keep their order), and a link, unlink, monitor or demonitor
 * takes effect at the other actor after the messages sent to it before.
 * An actor that uses none of this pays nothing for it: no memory, no
 * work on its sends or its stop.
 *
 * Monitors are one-way and many per pair, each with its own id: when the
 * monitored actor stops, the watcher gets one URA_DOWN(mon, who, reason
 * [, value]). Links are two-way, one per pair: when either side stops,
 * the other gets an exit signal with the reason. An exit signal (from a
 * link, or from ura_kill) arrives at an actor:
 *  - reason URA_KILL from ura_kill: the actor stops, reason URA_KILLED,
 *    whatever it traps;
 *  - trapping exits (ura_trap_exit): as a message URA_EXIT(who, reason
 *    [, value]);
 *  - else reason URA_NORMAL: ignored (ura_kill(self, normal) excepted);
 *  - else: the actor stops with the same reason (and value), and its own
 *    links carry it on.
 * The signal takes effect when the actor reaches it in its mailbox: after
 * the messages that were queued before it.
 *
 * Actors that do not exist (stopped, never spawned, URA_NOREF, a ref of
 * another system): monitoring or linking one is not an error: the DOWN,
 * or the exit signal, comes at once with reason URA_NOPROC. A monitor or
 * link that reaches its target only after the target stopped gets the
 * target's exit reason (or URA_NOPROC, if its slot was reused meanwhile).
 * Every call here: handler context (init included), unless it says
 * otherwise.
 */
/* Monitors `who`: returns the monitor's id (> 0), or -EINVAL (ctx, or
 * monitoring oneself), -ENOMEM, -ESHUTDOWN. */
URA_API ura_mon ura_monitor(ura_ctx *cx, ura_ref who);
/* Removes a monitor of this actor's. Once it returns 0, no DOWN of that
 * monitor is handled: one already queued (or stashed) is dropped. 0; or
 * -ENOENT for an id this actor does not hold (never made, removed, or its
 * DOWN was handled already: nothing changes). */
URA_API int ura_demonitor(ura_ctx *cx, ura_mon mon);
/* Links this actor and `who`. 0 (also when already linked); -EINVAL for
 * oneself; -ENOMEM; -ESHUTDOWN. */
URA_API int ura_link(ura_ctx *cx, ura_ref who);
/* Removes the link. Once it returns, no exit signal of that link affects
 * this actor: one still in the mailbox is dropped when reached (only a
 * trapped URA_EXIT already taken into the stash may still be handled).
 * The partner drops the link when the unlink reaches it. 0, or -ENOENT
 * when there was no link (or its exit signal was handled already). */
URA_API int ura_unlink(ura_ctx *cx, ura_ref who);
/* Exit signals as messages (on) or not (off, the default). Returns the
 * previous setting (0 or 1), or -EINVAL, -ENOMEM. */
URA_API int ura_trap_exit(ura_ctx *cx, int on);
/* Stops this actor once the running handler returns, with this reason
 * (a valid atom) and value (URA_NOVALUE for none; not URA_T_PTR; strings
 * and bytes are copied). Of several ura_exit / ura_stop calls in one
 * handler the last counts. -EINVAL, -ENOMEM (then nothing changes). */
URA_API int ura_exit(ura_ctx *cx, ura_atom reason, ura_value value);
/* Sends `to` an exit signal with this reason (see above; URA_KILL stops
 * it unconditionally). x: a ura_ctx* (the signal is from the actor) or a
 * ura_system* (from outside: who is URA_NOREF; any thread). 0, -ESRCH
 * when `to` is gone, -EINVAL, -ENOMEM, -ESHUTDOWN. */
URA_API int ura_kill_ctx(ura_ctx *cx, ura_ref to, ura_atom reason, ura_value value);
URA_API int ura_kill_sys(ura_system *sys, ura_ref to, ura_atom reason, ura_value value);

/* ------------------------------------------------------------------------ */
/* Names: a registry of actors under atoms, per system. A name goes away
 * by itself when its actor stops (a lookup no longer finds it at once,
 * and registering the name again succeeds). Every call: any thread. */
/* Registers `who` under `name`. 0; -EEXIST when the name is taken by a
 * live actor (`who` itself included); -EBUSY when `who` has another
 * name already (one name per actor); -ESRCH when `who` has stopped;
 * -EINVAL (a bad atom, no system); -ENOMEM. */
URA_API int ura_register(ura_system *sys, ura_atom name, ura_ref who);
/* 0, or -ENOENT when no live actor has the name. */
URA_API int ura_unregister(ura_system *sys, ura_atom name);
/* The live actor registered under name, or URA_NOREF. */
URA_API ura_ref ura_whereis(ura_system *sys, ura_atom name);
/* The name of a live actor, or 0. */
URA_API ura_atom ura_name_of(ura_system *sys, ura_ref who);
/* Sends to the actor registered under name: as ura_send, or -ESRCH when
 * no live actor has it. */
URA_API int ura_send_namedv_ctx(ura_ctx *cx, ura_atom name, ura_atom tag,
				const ura_value *vals, unsigned n);
URA_API int ura_send_namedv_sys(ura_system *sys, ura_atom name, ura_atom tag,
				const ura_value *vals, unsigned n);

/* ------------------------------------------------------------------------ */
/* Supervisors (Erlang/OTP's supervisor behaviour, as a library on the
 * calls above: lib/sup/ uses nothing but this header).
 *
 * A supervisor is an actor that starts children from specs, links them,
 * traps their exits, and restarts them by a strategy when they stop:
 *  - URA_ONE_FOR_ONE: only the child that stopped is restarted;
 *  - URA_ONE_FOR_ALL: the others are terminated (last started first),
 *    then all are started again, in spec order;
 *  - URA_REST_FOR_ONE: the children started after it are terminated
 *    (last first), then it and they are started again, in order.
 * Whether a child that stopped is restarted depends on its kind:
 * URA_PERMANENT always, URA_TRANSIENT only when its reason is neither
 * URA_NORMAL nor URA_SHUTDOWN (then it stays in the supervisor, not
 * running), URA_TEMPORARY never (its spec is dropped when it stops, and a
 * temporary child terminated by a sibling's restart is not started
 * again). A child stopped with ura_sup_terminate_child_* is not
 * restarted, by its own exit or a sibling's.
 *
 * Restart intensity: a restart (of one child, or of the set a strategy
 * restarts, counting once) that would be more than `intensity` within
 * `period_ns` makes the supervisor give up instead: it terminates every
 * child and stops with reason URA_MAXRESTART. Its own supervisor (if
 * any) then applies its strategy: a failure escalates up the tree.
 *
 * Terminating a child (a restart's siblings, a terminate call, the
 * supervisor's own stop): the supervisor sends it an exit signal
 * URA_SHUTDOWN (ura_kill_ctx) and waits for its exit up to its
 * shutdown_ns; a child that is still alive then (it traps exits and
 * stays) is sent URA_KILL. Children are terminated one at a time, last
 * started first. While it waits, the supervisor handles the exits of
 * children and stashes calls, answering them once the termination is
 * done.
 *
 * The supervisor stops, after terminating its children so, when it gets
 * an exit signal with a reason other than URA_NORMAL from an actor that
 * is not its child (its parent's link, or ura_kill(x, sup, URA_SHUTDOWN)
 * from anywhere), with that reason; or when the intensity is exceeded,
 * with URA_MAXRESTART. ura_kill(x, sup, URA_KILL) stops it at once: its
 * children then get the exit signal URA_KILLED through their links (and
 * stop, unless they trap exits). Supervisors supervise supervisors: a
 * child spec with .sup (instead of .cls) starts one.
 *
 * Lifetimes: a ura_sup_spec and its children array are copied when a
 * supervisor starts (and a ura_child_spec by start_child); the classes,
 * spawn arguments and nested ura_sup_specs they point at are read again
 * at every restart and must outlive the supervisor (static data, as a
 * rule). Supervisors are not saved by snapshots (their class is not
 * registered; with skip_unsupported they are left out and listed).
 */
typedef enum ura_sup_strategy {
	URA_ONE_FOR_ONE = 0,
	URA_ONE_FOR_ALL,
	URA_REST_FOR_ONE,
} ura_sup_strategy;

typedef enum ura_child_kind {
	URA_PERMANENT = 0,
	URA_TRANSIENT,
	URA_TEMPORARY,
} ura_child_kind;

/* The reason of a supervisor that gave up (restart intensity). */
#define URA_MAXRESTART URA_ATOM("maxrestart")
/* ura_child_spec.shutdown_ns: wait for ever (the default for a child
 * supervisor, which needs the time to stop its own children), or kill at
 * once, without a URA_SHUTDOWN first (OTP's brutal_kill). */
#define URA_SHUTDOWN_INFINITY UINT64_MAX
#define URA_SHUTDOWN_BRUTAL (UINT64_MAX - 1)
/* Default shutdown_ns of a worker child, intensity and period. */
#define URA_SUP_SHUTDOWN_DEFAULT (5 * URA_SEC)
#define URA_SUP_INTENSITY_DEFAULT 3u
#define URA_SUP_PERIOD_DEFAULT (5 * URA_SEC)
/* Most children of one supervisor, and the largest intensity. */
#define URA_SUP_MAX_CHILDREN 4096u
#define URA_SUP_MAX_INTENSITY 65536u

typedef struct ura_sup_spec ura_sup_spec;

/* One child. A zeroed field is its default. */
typedef struct ura_child_spec {
	/* Names the child in its supervisor (a valid atom, unique there). */
	ura_atom id;
	/* What to start: an actor of cls with spawn argument arg, or (cls
	 * NULL) a supervisor of sup. Neither or both: -EINVAL. */
	const ura_class *cls;
	const void *arg;
	const ura_sup_spec *sup;
	/* Placement, as ura_spawn_opts has it; default: the supervisor's
	 * node. */
	ura_node_pick node;
	ura_worker_pick worker;
	uint32_t kind;           /* ura_child_kind; default permanent */
	uint32_t reserved0_;     /* zero */
	/* How long a terminated child may take to stop before it is killed
	 * (at most URA_MAX_DELAY), or URA_SHUTDOWN_INFINITY, or
	 * URA_SHUTDOWN_BRUTAL; 0: URA_SUP_SHUTDOWN_DEFAULT for a worker,
	 * infinity for a supervisor. */
	uint64_t shutdown_ns;
	uint64_t reserved_[4];   /* zero */
} ura_child_spec;

struct ura_sup_spec {
	uint32_t strategy;       /* ura_sup_strategy */
	/* At most `intensity` restarts within `period_ns` (1 ..
	 * URA_SUP_MAX_INTENSITY, and at most URA_MAX_DELAY); 0: the
	 * defaults. (A child that must never be restarted is temporary.) */
	uint32_t intensity;
	uint64_t period_ns;
	/* The children, started in this order when the supervisor starts
	 * (at most URA_SUP_MAX_CHILDREN; NULL when nchildren is 0). */
	const ura_child_spec *children;
	uint32_t nchildren;
	uint32_t reserved0_;     /* zero */
	uint64_t reserved_[4];   /* zero */
};

/* Starts a supervisor, and in its init (before this returns) each child
 * in spec order, linked to it. x: a ura_ctx* (handler context; the
 * supervisor's parent is the calling actor, and opts->link links them,
 * as a supervisor's parent should be) or a ura_system* (any thread).
 * opts: as for ura_spawn_ex (NULL: defaults). 0 and the supervisor's ref
 * in *out; or -EINVAL for a bad spec (a child with no class and no sup,
 * a bad kind, id, shutdown or strategy, two children with one id,
 * reserved words not zero; also a nested spec's), -ENOMEM, -ESHUTDOWN,
 * or the error of a child's start (its spawn, its init's -errno); then
 * the children already started were killed, and nothing is left. */
URA_API int ura_sup_start_ctx(ura_ctx *cx, const ura_sup_spec *spec,
			      const ura_spawn_opts *opts, ura_ref *out);
URA_API int ura_sup_start_sys(ura_system *sys, const ura_sup_spec *spec,
			      const ura_spawn_opts *opts, ura_ref *out);

/* A child, as ura_sup_which_* lists it. */
typedef struct ura_sup_child {
	ura_atom id;
	ura_ref ref;             /* URA_NOREF: not running */
	uint32_t kind;           /* ura_child_kind */
	uint32_t supervisor;     /* 1: a supervisor */
	uint64_t restarts;       /* times the supervisor restarted it */
	uint64_t reserved_[2];   /* written as zero */
} ura_sup_child;

/* Calls to a running supervisor (OTP's which_children, start_child,
 * terminate_child, restart_child, delete_child). Each comes in two
 * forms:
 *  - _sys: blocks the calling thread until the supervisor answers and
 *    returns the answer. Any thread that is not a worker (-EDEADLK from
 *    one), while the system runs and is not being shut down; a paused
 *    system is started.
 *  - _ctx: handler context; sends the call as a request and returns at
 *    once (-ESRCH when sup is gone, -EINVAL, -ENOMEM); cont runs later,
 *    as a request's continuation, with the answer: read it there with
 *    ura_sup_result (and ura_sup_children). ura_request_data() in cont
 *    returns data.
 * The answers (-errno, or 0 or more):
 *  - which: the number of children (written: the first `max` of them, in
 *    start order, to out, which may be NULL with max 0);
 *  - start_child: 0 and the child's ref; -EINVAL (a bad spec, checked
 *    before anything is sent), -EEXIST (the id is taken), -ENOSPC
 *    (URA_SUP_MAX_CHILDREN), or the error of its start (then the spec is
 *    not kept);
 *  - terminate_child: 0 once the child has stopped (also when it was not
 *    running); its spec stays, for restart_child. -ENOENT: no such id;
 *  - restart_child: 0 and the new ref, for a child that is not running;
 *    -EBUSY when it runs, -ENOENT, or its start's error;
 *  - delete_child: 0, the spec is dropped; -EBUSY when it runs, -ENOENT;
 *  - every one: -ESRCH when sup is not a live supervisor (or stopped
 *    before answering), -EINVAL (no system, a bad id atom).
 * The child spec is copied before the call returns. */
URA_API long ura_sup_which_sys(ura_system *sys, ura_ref sup, ura_sup_child *out,
			       size_t max);
URA_API int ura_sup_start_child_sys(ura_system *sys, ura_ref sup,
				    const ura_child_spec *spec, ura_ref *child);
URA_API int ura_sup_terminate_child_sys(ura_system *sys, ura_ref sup, ura_atom id);
URA_API int ura_sup_restart_child_sys(ura_system *sys, ura_ref sup, ura_atom id,
				      ura_ref *child);
URA_API int ura_sup_delete_child_sys(ura_system *sys, ura_ref sup, ura_atom id);

URA_API int ura_sup_which_ctx(ura_ctx *cx, ura_ref sup, ura_handler *cont, void *data);
URA_API int ura_sup_start_child_ctx(ura_ctx *cx, ura_ref sup, const ura_child_spec *spec,
				    ura_handler *cont, void *data);
URA_API int ura_sup_terminate_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
					ura_handler *cont, void *data);
URA_API int ura_sup_restart_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
				      ura_handler *cont, void *data);
URA_API int ura_sup_delete_child_ctx(ura_ctx *cx, ura_ref sup, ura_atom id,
				     ura_handler *cont, void *data);
/* In the continuation of a _ctx call: its answer as above (-ESRCH for a
 * supervisor that stopped first, -ETIMEDOUT never: these calls have no
 * deadline), and for start_child and restart_child the child's ref in
 * *child (may be NULL). -EINVAL for a message that is no such answer. */
URA_API long ura_sup_result(const ura_msg *m, ura_ref *child);
/* In the continuation of ura_sup_which_ctx: copies up to max children
 * into out and returns how many the supervisor has (or -errno, as
 * ura_sup_result). */
URA_API long ura_sup_children(const ura_msg *m, ura_sup_child *out, size_t max);

/* ------------------------------------------------------------------------ */
/* Time: delayed sends and their cancellation.
 *
 * A delayed send copies the message now and delivers it after delay_ns
 * (CLOCK_MONOTONIC), give or take the timer slack (ura_config.timer_slack_ns,
 * default below). Timers live in the arming worker's timer wheel; the
 * wheel's earliest deadline bounds that worker's sleep, so a million
 * pending timers cost no system call each. From inside a handler the timer
 * belongs to the actor: it is cancelled when the actor stops.
 *
 * Returns a handle (> 0) for ura_cancel(), or -errno: -EINVAL for a delay
 * over URA_MAX_DELAY (a negative delay cast to uint64_t is one), -ESRCH if
 * the target is gone now, -ENOMEM without memory or when the worker that
 * would hold it has URA_MAX_TIMERS pending already (a handler's delayed
 * sends live on its worker; those armed from outside are spread over the
 * workers), and the errors of ura_send. A target that stops
 * before the delivery turns the message into a dead letter.
 */
#define URA_MAX_DELAY (366 * 24 * 3600 * URA_SEC) /* one year */
#define URA_MAX_TIMERS (4u << 20) /* pending delayed sends per worker */
#define URA_TIMER_SLACK_DEFAULT (256 * URA_USEC)
typedef int64_t ura_timer;

URA_API ura_timer ura_send_afterv_ctx(ura_ctx *cx, ura_ref to, uint64_t delay_ns,
				      ura_atom tag, const ura_value *vals,
				      unsigned n);
URA_API ura_timer ura_send_afterv_sys(ura_system *sys, ura_ref to,
				      uint64_t delay_ns, ura_atom tag,
				      const ura_value *vals, unsigned n);
/* Cancels a pending delayed send. Returns 0 when the message will never
 * be delivered; -ENOENT when it was already delivered, or cancelled, or the
 * handle is unknown (then nothing changes); -EINVAL for a malformed handle.
 * Of a cancel racing the expiry, exactly one wins: the message is
 * delivered at most once. Any thread. */
URA_API int ura_cancel(ura_system *sys, ura_timer t);

/* The tag of receive-timeout messages (see ura_behavior.timeout_ns). */
#define URA_TIMEOUT URA_ATOM("_timeout")

/* ------------------------------------------------------------------------ */
/* Groups: send to all members at once.
 *
 * A group is a set of actor refs. A send to a group reaches every member
 * exactly once; a member that left before the send started never gets it.
 * A member that stops leaves by itself. Groups live until ura_group_free
 * or the system's destroy. Every call here: any thread.
 */
/* A new anonymous group. */
URA_API int ura_group_new(ura_system *sys, ura_group **out);
/* The group called `name` (copied), created on first use. */
URA_API int ura_group_named(ura_system *sys, const char *name, ura_group **out);
URA_API const char *ura_group_name(const ura_group *g); /* NULL: anonymous */
/* Returns 0, or 1 when already a member (still one delivery per send),
 * -ESRCH if the actor has stopped. */
URA_API int ura_group_join(ura_group *g, ura_ref who);
/* 0, or -ENOENT when not a member. */
URA_API int ura_group_leave(ura_group *g, ura_ref who);
/* Members still alive. */
URA_API long ura_group_size(ura_group *g);
/* Frees the group; no send or join may use it any more. */
URA_API int ura_group_free(ura_group *g);
/* Send to every member; returns how many it reached (>= 0) or -errno. */
URA_API long ura_send_groupv_ctx(ura_ctx *cx, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n);
URA_API long ura_send_groupv_sys(ura_system *sys, ura_group *g, ura_atom tag,
				 const ura_value *vals, unsigned n);

/* ------------------------------------------------------------------------ */
/* Signals: SIGINT, SIGTERM (and SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) as
 * messages.
 *
 * After ura_signal_subscribe(sys, signo, actor), each delivery of signo
 * sends `actor` a message URA_SIGNAL(int64 signo). The signal is read from a
 * signalfd on a worker's ring, so nothing runs in signal context. Call it
 * from the main thread before starting other threads of your own: it
 * blocks signo in the calling thread (workers always block these), and a
 * thread that does not block it would still take the default action.
 * ura_signal_unsubscribe() restores that default. Returns 0 or -errno
 * (-EINVAL for another signal).
 *
 * Only process-directed signals arrive (kill(2), a terminal's Ctrl-C, a
 * service manager's SIGTERM). A signal aimed at one thread with raise(3)
 * or pthread_kill(3) stays pending on that thread, which blocks it.
 */
#define URA_SIGNAL URA_ATOM("_signal")
URA_API int ura_signal_subscribe(ura_system *sys, int signo, ura_ref actor);
URA_API int ura_signal_unsubscribe(ura_system *sys, int signo);

/* ------------------------------------------------------------------------ */
/* Actor I/O: the kernel's I/O as messages.
 *
 * ura_io_submit() (and the wrappers below) starts one operation on the ring
 * of the worker running the handler, on behalf of the calling actor, and
 * returns at once: an operation id (> 0) or -errno (-EINVAL for a bad
 * request, -ENOMEM; nothing was started then). Exactly one completion
 * message per operation (several for a multishot accept) comes back to the
 * actor, tagged with the caller's tag:
 *
 *   URA_IO_READ, URA_IO_RECV    tag(int64 res, bytes data)  types "ib"
 *   every other operation       tag(int64 res)              types "i"
 *
 * `res` is what the system call would have returned (bytes moved, a new
 * fd, 0) or -errno: a closed fd gives -EBADF, a refused connect
 * -ECONNREFUSED, a deadline that passed -ETIME, a cancel -ECANCELED.
 * Errors are completions, never crashes. ura_io_id(m) tells which
 * operation a completion belongs to; ura_io_more(m) whether more
 * completions of it will follow.
 *
 * Buffers:
 *  - READ and RECV read into memory ura owns (the completion message
 *    itself): `data` holds the `res` bytes read, valid during the handler.
 *  - WRITE and SEND copy `buf` before the call returns, like a send; they
 *    complete when all `len` bytes are written (a short write is resumed),
 *    or with -errno.
 *  - READV and WRITEV use the caller's iovecs in place (zero copy): the
 *    memory they point at must stay valid until the completion arrives or
 *    the actor's destroy callback has run. The iovec array itself is
 *    copied.
 * When an actor stops, its operations in flight are cancelled, and its
 * destroy callback runs only once every one of them has completed: the
 * kernel never touches its buffers after that. Operations in flight count
 * toward quiescence (ura_system_await waits for them, and an armed
 * multishot accept keeps a system busy).
 *
 * Backends: the worker's io_uring ring; or, where io_uring is refused
 * (seccomp, io_uring_disabled, an old kernel, URA_IO_URING=0), epoll for
 * sockets, pipes and terminals plus a small per-node thread pool for
 * regular files, openat, close and fsync. Same API, same messages. (On
 * epoll a listening socket given to URA_IO_ACCEPT is made non-blocking,
 * and a connect runs non-blocking; closing an fd with URA_IO_CLOSE ends
 * the operations still waiting on it with -EBADF, on every worker, before
 * the fd is closed. Close such an fd only with URA_IO_CLOSE: close(2)
 * leaves waiters of other workers behind.)
 * Handler context only, for every call here: an init callback that
 * ura_spawn_sys runs on the calling thread has no ring (-EPERM; send the
 * actor a message and start its I/O from the handler).
 */
typedef int64_t ura_io;

enum ura_io_op {
	URA_IO_READ = 1,  /* fd, len (most bytes), offset */
	URA_IO_WRITE,     /* fd, buf, len, offset */
	URA_IO_READV,     /* fd, iov, iovcnt, offset */
	URA_IO_WRITEV,    /* fd, iov, iovcnt, offset */
	URA_IO_RECV,      /* fd, len, flags (MSG_*) */
	URA_IO_SEND,      /* fd, buf, len, flags (MSG_*; MSG_NOSIGNAL always) */
	URA_IO_ACCEPT,    /* fd, flags (SOCK_NONBLOCK; SOCK_CLOEXEC always),
	                     URA_IO_MULTISHOT: one completion per connection */
	URA_IO_CONNECT,   /* fd, addr, addrlen */
	URA_IO_OPENAT,    /* dirfd, path (copied), flags (O_*), mode */
	URA_IO_CLOSE,     /* fd */
	URA_IO_FSYNC,     /* fd, flags URA_IO_DATASYNC for fdatasync */
	URA_IO_POLL,      /* fd, events (POLLIN...): res is the revents */
};

#define URA_IO_MULTISHOT 0x40000000 /* accept: keep accepting */
#define URA_IO_DATASYNC  1          /* fsync: fdatasync */
#define URA_IO_MAX_LEN   (16u << 20) /* most bytes one read/write moves */

typedef struct ura_io_req {
	int op;                     /* enum ura_io_op */
	int fd;                     /* the fd; openat: the dirfd (AT_FDCWD) */
	const void *buf;            /* WRITE, SEND: the bytes (copied) */
	size_t len;                 /* READ, RECV: most bytes; WRITE, SEND:
	                               bytes; <= URA_IO_MAX_LEN */
	const struct iovec *iov;    /* READV, WRITEV */
	int iovcnt;                 /* 1 .. 64 */
	int flags;                  /* see enum ura_io_op */
	int64_t offset;             /* READ..WRITEV; -1: the file position
	                               (sockets and pipes ignore it) */
	const char *path;           /* OPENAT */
	unsigned mode;              /* OPENAT with O_CREAT */
	unsigned events;            /* POLL */
	const void *addr;           /* CONNECT: a struct sockaddr */
	unsigned addrlen;
	/* Deadline: if the operation has not completed within timeout_ns, it
	 * is cancelled and completes with -ETIME (an io_uring linked
	 * timeout). 0: none. Not with URA_IO_MULTISHOT. */
	uint64_t timeout_ns;
	uint64_t reserved_[4];      /* zero */
} ura_io_req;

URA_API ura_io ura_io_submit(ura_ctx *cx, ura_atom tag, const ura_io_req *r);
/* Asks for the operation to end early: it completes (once, as always) with
 * -ECANCELED, or with its result if that came first. 0, or -ENOENT when it
 * already completed (or is not this actor's). */
URA_API int ura_io_cancel(ura_ctx *cx, ura_io op);
/* Of a completion message: its operation's id, and whether more
 * completions of it follow (a multishot accept). 0 for other messages. */
URA_API ura_io ura_io_id(const ura_msg *m);
URA_API int ura_io_more(const ura_msg *m);

/* Runs fn(arg) on a small thread pool of the actor's node, off the
 * workers, for blocking or CPU-heavy C code. Its return value comes back
 * as tag(int64 result). Counts as an operation in flight (the actor's
 * destroy waits for it; it cannot be cancelled once running). */
typedef int64_t ura_work_fn(void *arg);
URA_API ura_io ura_offload(ura_ctx *cx, ura_atom tag, ura_work_fn *fn, void *arg);

/* Wrappers for the common cases. */
#ifdef __cplusplus
#define URA__ZERO {}
#else
#define URA__ZERO { 0 }
#endif
static inline ura_io ura_io_read(ura_ctx *cx, ura_atom tag, int fd, size_t len,
				 int64_t offset)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_READ; r.fd = fd; r.len = len; r.offset = offset;
	return ura_io_submit(cx, tag, &r);
}
static inline ura_io ura_io_write(ura_ctx *cx, ura_atom tag, int fd,
				  const void *buf, size_t len, int64_t offset)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_WRITE; r.fd = fd; r.buf = buf; r.len = len; r.offset = offset;
	return ura_io_submit(cx, tag, &r);
}
static inline ura_io ura_io_recv(ura_ctx *cx, ura_atom tag, int fd, size_t len,
				 uint64_t timeout_ns)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_RECV; r.fd = fd; r.len = len; r.timeout_ns = timeout_ns;
	return ura_io_submit(cx, tag, &r);
}
static inline ura_io ura_io_send(ura_ctx *cx, ura_atom tag, int fd,
				 const void *buf, size_t len)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_SEND; r.fd = fd; r.buf = buf; r.len = len;
	return ura_io_submit(cx, tag, &r);
}
static inline ura_io ura_io_accept(ura_ctx *cx, ura_atom tag, int fd, int flags)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_ACCEPT; r.fd = fd; r.flags = flags;
	return ura_io_submit(cx, tag, &r);
}
static inline ura_io ura_io_close(ura_ctx *cx, ura_atom tag, int fd)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_CLOSE; r.fd = fd;
	return ura_io_submit(cx, tag, &r);
}

/* ------------------------------------------------------------------------ */
/* Context-switching actors (libcppa's, Erlang's processes): an actor whose
 * class has a `body` runs it as ordinary sequential code on a stack of its
 * own, and waits for messages with a blocking, selective receive:
 *
 *	static void body(ura_ctx *cx, void *state)
 *	{
 *		while (ura_receive(cx, &serving, URA_FOREVER) == 0)
 *			;   // a case of `serving` ran
 *	}
 *
 * The body starts on a worker after the spawn returned (after init, as a
 * first turn would). While it waits in ura_receive (or ura_io_call), the
 * worker runs other actors, and an idle worker may steal the waiting actor:
 * the body may resume on another thread than it blocked on, so it must not
 * keep thread-local state (a __thread variable, errno, a lock) across a
 * receive, nor leave the floating-point control modes (fesetround, MXCSR)
 * changed across one: they are the thread's, not the stack's (the switch
 * does not save them; kernel-notes/stacks.md says why). A waiting actor
 * costs its stack (what it touched of it) and its slot. Its ura_ctx stays valid from the body's start to its end, across
 * receives; handlers that a receive runs get the same ctx. Sends, spawns,
 * requests (their continuations run inside a later receive or I/O call),
 * timers, groups, links, monitors and ura_stop work as in a handler;
 * ura_become does not apply (-EINVAL).
 *
 * The actor stops when the body returns (reason URA_NORMAL unless ura_exit
 * set one), or when it is stopped or killed while it waits, or at its next
 * receive after ura_stop / ura_exit: then the receive never returns: the
 * stack is dropped as it is (C has no unwinding: code after the receive
 * does not run, so keep what must be freed in the state, and free it in the
 * class's destroy callback, which runs as for any actor), and the stack's
 * memory goes back to the pool.
 *
 * Stacks come from a per-system pool, with a guard page below each (a
 * guard region where the kernel has them, Linux 6.13, else PROT_NONE,
 * which costs a second VMA per stack: vm.max_map_count then caps live
 * bodies near 32 000) and memory committed on first touch (MAP_NORESERVE):
 * an idle actor costs the pages its body touched. Running into the guard page ends the
 * process with a message naming the actor's class (a SIGSEGV handler on an
 * alternate signal stack, installed once), rather than corrupting the
 * memory below. kernel-notes/stacks.md has the costs.
 *
 * Snapshots: a context-switching actor cannot be saved (its stack holds
 * code addresses and pointers); ura_snapshot reports it as unsaveable (or
 * skips it), and ura_snap_register refuses its class (-EINVAL).
 */
#define URA_STACK_MIN ((size_t)16 << 10)      /* 16 KiB */
#define URA_STACK_DEFAULT ((size_t)256 << 10) /* 256 KiB, reserved not committed */
#define URA_STACK_MAX ((size_t)1 << 30)
/* No timeout: wait until a message matches. */
#define URA_FOREVER UINT64_MAX

/* Waits until a message matching a case of b is in the mailbox, runs that
 * case's handler (on this stack, with the same ctx), and returns 0.
 * Messages that match no case stay in the mailbox, in order, for a later
 * receive (selective receive: each receive scans them from the oldest),
 * whatever b->unmatched says. timeout_ns: give up after this long with
 * -ETIMEDOUT, having run b->on_timeout (if set) with a URA_TIMEOUT
 * message; 0: poll once (take a matching message if one is there, never
 * wait); URA_FOREVER: no timeout. b->timeout_ns is not used. Requests are
 * matched as in a handler (the case may ura_reply; an unanswered one gets
 * URA_ERROR(noreply)); answers to this actor's own requests run their
 * continuations as they arrive, then the receive goes on waiting. Only in
 * the body of a context-switching actor: -EINVAL from an event-based
 * actor's handler, from an init, from a case or continuation a receive
 * runs (a receive does not nest: the outer case's message would be freed
 * under it), or for a bad behavior; never a hang. Does not return when the actor is stopped
 * while it waits (see above). */
URA_API int ura_receive(ura_ctx *cx, const ura_behavior *b, uint64_t timeout_ns);

/* Blocking-style I/O on the ring: submits r on this worker's ring as
 * ura_io_submit does and suspends the actor until its completion (the
 * worker runs others meanwhile), then returns what the completion's res
 * says: bytes moved, a new fd, 0, or -errno (a deadline r->timeout_ns
 * that passed: -ETIME). READ and RECV copy at most `cap` bytes of what was
 * read into buf (r->len bytes are asked for; give len <= cap). Messages
 * that arrive meanwhile wait in the mailbox for a later receive. Threads:
 * as ura_receive. -EINVAL outside a context-switching actor's body (as
 * ura_receive), for a multishot accept, or a
 * READ/RECV without buf; the errors of ura_io_submit. Does not return
 * when the actor is stopped while it waits (the operation is cancelled;
 * READV/WRITEV memory on the stack stays mapped until it completed). */
URA_API int64_t ura_io_call(ura_ctx *cx, const ura_io_req *r, void *buf, size_t cap);

static inline int64_t ura_call_read(ura_ctx *cx, int fd, void *buf, size_t len,
				    int64_t offset)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_READ; r.fd = fd; r.len = len; r.offset = offset;
	return ura_io_call(cx, &r, buf, len);
}
static inline int64_t ura_call_write(ura_ctx *cx, int fd, const void *buf, size_t len,
				     int64_t offset)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_WRITE; r.fd = fd; r.buf = buf; r.len = len; r.offset = offset;
	return ura_io_call(cx, &r, NULL, 0);
}
static inline int64_t ura_call_recv(ura_ctx *cx, int fd, void *buf, size_t len,
				    uint64_t timeout_ns)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_RECV; r.fd = fd; r.len = len; r.timeout_ns = timeout_ns;
	return ura_io_call(cx, &r, buf, len);
}
static inline int64_t ura_call_send(ura_ctx *cx, int fd, const void *buf, size_t len)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_SEND; r.fd = fd; r.buf = buf; r.len = len;
	return ura_io_call(cx, &r, NULL, 0);
}
static inline int64_t ura_call_accept(ura_ctx *cx, int fd, int flags)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_ACCEPT; r.fd = fd; r.flags = flags;
	return ura_io_call(cx, &r, NULL, 0);
}
static inline int64_t ura_call_connect(ura_ctx *cx, int fd, const void *addr,
				       unsigned addrlen)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_CONNECT; r.fd = fd; r.addr = addr; r.addrlen = addrlen;
	return ura_io_call(cx, &r, NULL, 0);
}
static inline int64_t ura_call_close(ura_ctx *cx, int fd)
{
	ura_io_req r = URA__ZERO;
	r.op = URA_IO_CLOSE; r.fd = fd;
	return ura_io_call(cx, &r, NULL, 0);
}

/* ------------------------------------------------------------------------ */
/* Scoped actors (CAF's scoped_actor, Akka's ask): a handle any thread that
 * is not a worker makes to talk to actors: it has a ref of its own, so
 * actors can send (and reply) to it; it sends, makes requests and waits for
 * messages with a timeout; and its fd (an eventfd) is readable while a
 * message waits for it, so a foreign event loop (epoll, libuv, GLib) can
 * poll it and call ura_scoped_receive(..., 0) when it fires.
 *
 * One thread at a time uses a scoped actor (any thread, one after the
 * other); two at once is undefined, and builds without NDEBUG catch it
 * (the second call fails with -EBUSY and the log says so). Use after
 * ura_scoped_free is undefined (debug builds: -EINVAL for a freed handle
 * that was not yet reused). Not from a worker thread: its waits would block
 * the worker (-EDEADLK). Messages to it are copied out of the runtime
 * when they arrive; a request sent to it is answered at once with
 * URA_ERROR(unmatched) (it has no handler to answer it). */
typedef struct ura_scoped ura_scoped;

/* Makes one, with a ref (live until ura_scoped_free) and an eventfd.
 * -EINVAL (no system), -EDEADLK (a worker thread), -ENOMEM, -EMFILE,
 * -ESHUTDOWN. */
URA_API int ura_scoped_new(ura_system *sys, ura_scoped **out);
/* Stops its actor (links and monitors see URA_NORMAL), closes the fd,
 * frees the messages still waiting. Before ura_system_destroy. */
URA_API void ura_scoped_free(ura_scoped *s);
URA_API ura_ref ura_scoped_ref(ura_scoped *s);
/* Readable (EPOLLIN) while a message waits; never read it yourself. */
URA_API int ura_scoped_fd(ura_scoped *s);
/* As ura_sendv_sys, with the scoped actor as the sender. */
URA_API int ura_scoped_sendv(ura_scoped *s, ura_ref to, ura_atom tag,
			     const ura_value *vals, unsigned n);
/* The oldest waiting message, in *out, valid until the next receive,
 * request or free on s; waits up to timeout_ns for one (0: poll once;
 * URA_FOREVER). 0, -ETIMEDOUT, -EINVAL. A wait (here and in
 * ura_scoped_requestv) spins first, for as long as an idle worker would
 * (ura_config.spin_ns) or the timeout allows, then sleeps: an answer
 * that comes within microseconds is taken without a thread wakeup. */
URA_API int ura_scoped_receive(ura_scoped *s, uint64_t timeout_ns, const ura_msg **out);
/* Sends a request (the target sees it as any request, answers it with
 * ura_reply or a promise) and waits up to timeout_ns (URA_FOREVER: no
 * limit) for its answer, which *out then holds as ura_scoped_receive's
 * message does: the reply, or URA_ERROR(reason[, value]) when the request
 * failed (ura_exit_reason). Other messages arriving meanwhile wait for a
 * later receive. 0; -ETIMEDOUT (a late answer is dropped); the errors of
 * a send (-ESRCH: the target is gone). */
URA_API int ura_scoped_requestv(ura_scoped *s, ura_ref to, uint64_t timeout_ns,
				const ura_msg **out, ura_atom tag,
				const ura_value *vals, unsigned n);

/* ------------------------------------------------------------------------ */
/* Snapshots: save a running system to a file without stopping it, and
 * restore a system from one (lib/snap/FORMAT.md has the file format).
 *
 * ura_snapshot() starts a new phase and returns at once. Each actor's
 * state is saved before its first message of the new phase (an idle actor
 * is saved by the snapshot thread), and every message sent in the old
 * phase that is handled after its receiver was saved is saved too, in
 * mailbox order: the file holds one consistent cut of the system (the
 * MPLR'19 asynchronous-snapshot algorithm). No worker ever waits for
 * another. Once no actor and no message of the old phase is left, a
 * snapshot thread writes the file (a temporary name, fsync, rename, fsync
 * of the directory: a crash mid-write leaves the previous file intact) and
 * reports it. One snapshot at a time; ura_system_await() waits for the one
 * running.
 *
 * What is saved: every actor whose class was registered with
 * ura_snap_register (its state through the class's save callback; its
 * current behavior, as an index into the class's behaviors; its bound
 * value; its stash; its receive timeout, re-armed in full on restore), its
 * pending delayed sends (re-armed with the time they had left), the
 * messages in flight, and the groups with their members (read when the
 * snapshot completes: a join or leave racing the snapshot may or may not
 * be in it). Not saved: delayed sends armed outside a handler
 * (ura_send_after(sys, ...): inputs from outside, like a send from another
 * thread after the snapshot), signal subscriptions, and actor I/O: an
 * operation in flight, and its completion, are inputs from outside too
 * (fds do not survive a restore); a restored actor starts its I/O again.
 *
 * What cannot be saved fails the snapshot (status -EINVAL, with a message
 * naming the actors or messages) or, with skip_unsupported, is left out and
 * listed: an actor of an unregistered class, in a behavior its class did
 * not list, with a string/bytes/pointer bound value, or with requests
 * awaiting replies (continuations are code and data pointers); a message
 * holding an opaque pointer (URA_T_PTR).
 *
 * Fault tolerance (links, monitors, promises, names) is not saved yet,
 * and never silently: an actor with links, monitors (held or on it), open
 * promises or trap_exit on is an actor that cannot be saved (the message
 * counts each kind), and so is a link, monitor, exit signal, DOWN or
 * request error in flight at the cut. Why: each of them is one half of a
 * two-sided agreement whose once-only DOWN/EXIT guarantee (see Links,
 * monitors, exits) spans both actors and the messages between them; a
 * restore that re-created one half, or re-created both with refs
 * rewritten but without the in-flight signals, could lose or duplicate a
 * DOWN. A pending request (continuations are code) fails its requester
 * as before. Registered names are not saved either: a restored system
 * starts with an empty registry (register names again after ura_restore).
 */
typedef struct ura_snap_out ura_snap_out; /* what a save callback writes to */
typedef struct ura_snap_in ura_snap_in;   /* what a load callback reads from */

typedef struct ura_snap_class {
	const ura_class *cls;        /* required */
	/* Writes the state with ura_snap_put*(). Runs between two turns of
	 * the actor, with its token, on a worker or on the snapshot thread:
	 * it may read the state, and must not send, spawn or block. A
	 * -errno fails the snapshot (or skips the actor). */
	int (*save)(ura_snap_out *out, const void *state);
	/* Reads, with ura_snap_get*() in the same order, what save wrote,
	 * into `state` (state_size bytes, zeroed). Runs in ura_restore(). A
	 * -errno fails the restore. The class's destroy callback runs when
	 * the restored actor stops, as for a spawned one. */
	int (*load)(ura_snap_in *in, void *state);
	/* Without save and load, the state is saved as its state_size bytes:
	 * only for states without refs, pointers or handles. */
	/* The behaviors an actor of this class may be in besides `initial`
	 * (ura_become targets); NULL: initial only. */
	const ura_behavior *const *behaviors;
	unsigned nbehaviors;
	uint64_t reserved_[4];       /* zero */
} ura_snap_class;

/* Registers a class for snapshots and restores of sys, under cls->name
 * (copied; names are unique per system). *sc is copied. -EINVAL (no
 * class or name, save without load or the reverse), -EEXIST (the name is
 * taken), -EBUSY (a snapshot is running), -ENOMEM. Any thread. */
URA_API int ura_snap_register(ura_system *sys, const ura_snap_class *sc);

/* Inside save: append n bytes, a ref, a timer handle or a group (mapped to
 * their new values on restore). 0 or -ENOMEM (then fail the save). */
URA_API int ura_snap_put(ura_snap_out *out, const void *p, size_t n);
URA_API int ura_snap_put_ref(ura_snap_out *out, ura_ref r);
URA_API int ura_snap_put_timer(ura_snap_out *out, ura_timer t);
URA_API int ura_snap_put_group(ura_snap_out *out, const ura_group *g);
/* Inside load: read what the put calls wrote, in order. -EINVAL when the
 * saved state runs short or holds something else there. A ref to an actor
 * the snapshot does not hold reads as URA_NOREF; a timer that was no
 * longer pending reads as 0; a group as NULL when none was saved. */
URA_API int ura_snap_get(ura_snap_in *in, void *p, size_t n);
URA_API int ura_snap_get_ref(ura_snap_in *in, ura_ref *r);
URA_API int ura_snap_get_timer(ura_snap_in *in, ura_timer *t);
URA_API int ura_snap_get_group(ura_snap_in *in, ura_group **g);
/* Inside load: the restored actor's new ref, and bytes left to read. */
URA_API ura_ref ura_snap_self(ura_snap_in *in);
URA_API size_t ura_snap_left(ura_snap_in *in);

/* What a snapshot did, given to the done callback (valid during it). */
typedef struct ura_snap_info {
	int status;            /* 0, or -errno: -EINVAL (see error), the
	                          errno of a failed write, -ECANCELED (the
	                          system was destroyed first) */
	const char *path;
	const char *error;     /* why it failed; NULL on success */
	const char *skipped;   /* with skip_unsupported: what was left out,
	                          one per line; NULL if nothing */
	uint64_t id;           /* 1, 2, ...: the snapshot's phase */
	uint64_t actors;       /* actors saved */
	uint64_t messages;     /* messages in flight saved */
	uint64_t timers;       /* pending delayed sends saved */
	uint64_t groups;
	uint64_t nskipped;     /* actors and messages left out */
	uint64_t bytes;        /* the file's size */
	uint64_t capture_ns;   /* from ura_snapshot() to the end of the old phase */
	uint64_t duration_ns;  /* from ura_snapshot() to the rename */
	uint64_t reserved_[8]; /* zero: later fields go here */
} ura_snap_info;

typedef void ura_snap_done_fn(void *ud, const ura_snap_info *info);

/* The tag of the completion message: (int64 status, string path, int64
 * actors, int64 messages, int64 bytes, int64 duration_ns), types "isiiii". */
#define URA_SNAP_DONE URA_ATOM("_snapdone")

typedef struct ura_snap_opts {
	/* Called once, on the snapshot thread, when the snapshot is written
	 * or has failed. It may start the next snapshot; it must not call
	 * ura_system_await (which waits for it) or destroy the system. */
	ura_snap_done_fn *done;
	void *ud;
	/* And/or a message to this actor (tag URA_SNAP_DONE unless set). */
	ura_ref notify;
	ura_atom tag;
	/* Leave out and list what cannot be saved instead of failing. */
	int skip_unsupported;
	uint64_t reserved_[4];       /* zero */
} ura_snap_opts;

/* Starts a snapshot of sys into the file `path` (copied) and returns at
 * once: 0, -EBUSY while another one runs, -EINVAL (no path), -ESHUTDOWN,
 * -ENOMEM, or a thread start's error. Completion is reported through opts
 * (NULL: only the log, on failure). Any thread, a handler included.
 * The file is written to a temporary file of its own in path's directory
 * (O_TMPFILE, else a random .urasnap.* name made with O_EXCL|O_NOFOLLOW),
 * then renamed over path: nothing is ever written through a symlink, and
 * snapshots of two systems to one path each leave a whole file. Only a
 * regular file is replaced: if path is a symlink (status -ELOOP), a
 * directory (-EISDIR), or a device, FIFO or socket (-EINVAL), the snapshot
 * fails and leaves it as it is; info->error says why. A kill -9 leaves no
 * temporary file being written behind (with O_TMPFILE; where a filesystem
 * lacks it, a .urasnap.* file can remain). An actor's saved state is at
 * most UINT32_MAX bytes: ura_snap_put refuses a put past that (-EFBIG) and
 * the snapshot fails, naming the actor. */
URA_API int ura_snapshot(ura_system *sys, const char *path, const ura_snap_opts *opts);

/* Old refs to new: returned by ura_restore. */
typedef struct ura_snap_map ura_snap_map;

/*
 * Restores the snapshot in `path` into sys, which must be new: created
 * paused (ura_config.paused), never started, nothing spawned (else
 * -EBUSY). Every class in the file must be registered first. The file is
 * read and checked whole before anything is made; then every actor is
 * recreated (load callbacks, refs rewritten), groups rejoined, delayed
 * sends re-armed and the saved messages queued in their original order;
 * ura_system_start() (or await) runs it. Returns the number of actors
 * restored, and in *map (optional; free it with ura_snap_map_free) the
 * old refs' new values; or -errno with nothing made: -ENOENT and the
 * like for the file, -EINVAL for a file that is corrupt, truncated, of
 * another format version or names a class not registered (the log says
 * which), a load callback's error, -ENOMEM. Any non-worker thread.
 */
URA_API long ura_restore(ura_system *sys, const char *path, ura_snap_map **map);
/* The restored actor that was `old` in the snapshot; URA_NOREF if none. */
URA_API ura_ref ura_snap_map_ref(const ura_snap_map *map, ura_ref old);
URA_API void ura_snap_map_free(ura_snap_map *map);

/* ------------------------------------------------------------------------ */
/* Distribution: this system joins an Erlang cluster as a hidden node
 * (Erlang's erl_dist_protocol, OTP 23+ handshake with the digest
 * challenge; terms in the external format, coded by OTP's libei).
 *
 * ura_dist_start registers the node with the local epmd and listens;
 * Erlang nodes connect to it (net_adm:ping('ura@host'), or a send to
 * {Name, 'ura@host'}), and ura_dist_connect connects to one. Each
 * connection is an actor of its own, whose socket I/O, framing and ticks
 * run on the workers' rings like any actor I/O; no call here blocks a
 * worker.
 *
 * Addressing. Every local actor that is sent to, or that sends, across a
 * connection gets a pid of this node. An Erlang process is a ref here: a
 * proxy actor, made when its pid first arrives in a message (or by
 * ura_dist_whereis for {Name, Node}); a send to the proxy goes to the
 * process, and the proxy stops when the process exits (with its exit
 * reason) or when the connection is lost (URA_NOCONNECTION). So
 * ura_monitor and ura_link on a proxy watch the Erlang process, with its
 * real exit reason. An Erlang process reaches a ura actor by its pid, or
 * as {Name, 'ura@host'} ! Msg through the names registry (ura_register).
 * Erlang's monitors and links of ura actors fire with the actor's exit
 * reason; its exit(Pid, Reason) reaches the actor as ura_kill. The
 * connection actor holds the ura end of Erlang's links and monitors (so
 * they are in place before anything the process sends after link/1 or
 * monitor/2): an exit signal from a linked Erlang process names the
 * connection as ura_exit_who(). A ura actor's DOWN or EXIT for an
 * Erlang process goes out through the process's proxy, after every
 * message the actor sent it (Erlang's order of signals); messages sent
 * by name ({Name, Node}) go through a proxy of their own and are not
 * ordered with them.
 * ura_dist_node_ref gives the connection actor: ura_monitor on it is
 * Erlang's monitor_node (DOWN with URA_NOCONNECTION).
 *
 * Messages. A ura message tag(v1, ...) is the tuple {tag, V1, ...}, and
 * tag() the atom tag; an Erlang message is delivered when it is an atom
 * or a tuple {Atom, ...} of at most URA_MAX_VALUES mappable values, with
 * the connection actor as ura_sender(). Values:
 *   ura                   Erlang
 *   int64             <-> integer (a bignum outside int64: refused)
 *   double            <-> float
 *   atom              <-> atom (an Erlang atom that is no ura atom --
 *                         over 10 characters, or outside [0-9A-Za-z_] --
 *                         is refused, never truncated)
 *   ref               <-> pid (a proxy's ref is its process's pid)
 *   string            --> binary
 *   bytes             <-> binary
 *   string            <-- a string, a list of bytes or an iolist (bytes
 *                         if it holds a NUL)
 *   pointer: refused.
 * A message that does not map is dropped and logged (warn, the first
 * ones); it never closes the connection. With a peer that takes
 * fragments (OTP 22+), a message over 64 KiB goes out in fragments of
 * 64 KiB, one per socket send, so the small messages sent meanwhile go
 * between them instead of waiting for the whole; a sender's own later
 * messages wait behind its large one (its order holds). A peer's
 * fragmented messages are put together, at most 64 at once and 64 MiB
 * in all (more closes the connection with a log line). Exit reasons: an atom, or
 * {Atom, Value} with a value; an Erlang reason of another shape arrives
 * as URA_ATOM("other") with its printed text as the value. ura keeps no
 * atom table, so remote data never grows one.
 *
 * Failures. A peer with another cookie is refused and logged (warn);
 * nothing else is affected. A malformed frame or term (checked against
 * its frame's bounds before libei decodes it; frames of at most
 * URA_MSG_MAX bytes) closes that connection with a log line. A peer
 * silent for tick_ns, or a closed socket, is node loss: every proxy of
 * that node stops with URA_NOCONNECTION, so every monitor and link over
 * it fires.
 *
 * Back-pressure. A proxy's mailbox is bounded (4096, URA_FULL_MUTE), and
 * while a connection's output waiting for the socket is over 1 MiB
 * (Erlang's default dist_buf_busy_limit) every proxy of that node holds
 * its mailbox (ura_mailbox_hold) as it next forwards: actors sending to
 * the node are muted, threads sending to it wait, nothing is lost and
 * no worker blocks; under 256 KiB they go on. The connection itself is
 * never muted (URA_CLASS_UNMUTED): it keeps reading and delivering. A
 * peer that stops reading is dropped once a send has waited for tick_ns,
 * or once 64 MiB of output wait (only messages larger than the socket's
 * buffers and the mark together reach that).
 */
/* Erlang's noconnection, which has more than 10 characters: the two
 * map to each other, in messages and in exit reasons. */
#define URA_NOCONNECTION URA_ATOM("noconnect")

typedef struct ura_dist ura_dist;

typedef struct ura_dist_opts {
	/* "name" (the host is added: short names) or "name@host". */
	const char *name;
	/* NULL: the first line of ~/.erlang.cookie, as Erlang reads it. */
	const char *cookie;
	/* TCP port to listen on (loopback and every interface); 0: any. */
	unsigned port;
	/* Use the full host name, as erl -name does. */
	int long_names;
	/* net_ticktime: a peer silent this long is lost; ticks go out at a
	 * quarter of it. 0: 60 s, Erlang's default. */
	uint64_t tick_ns;
	uint64_t reserved_[4]; /* zero */
} ura_dist_opts;

/* Starts distribution on sys: listens, registers with the epmd on
 * 127.0.0.1:4369 (the registration lasts as long as the distribution),
 * and writes the handle to *out. -EINVAL (no name, a bad one, reserved
 * words set), -ECONNREFUSED (no epmd), -EADDRINUSE (epmd has the name),
 * -ENOENT (no cookie file), -ENOTSUP (built without libei), -ENOMEM, or
 * a socket call's error. Any non-worker thread: it waits for epmd. */
URA_API int ura_dist_start(ura_system *sys, const ura_dist_opts *opts,
			   ura_dist **out);
/* Unregisters from epmd, stops the listener and every connection (their
 * proxies stop with URA_NOCONNECTION) and frees d once they are gone.
 * It returns at once: the listener and connections stop on the workers,
 * so wait for them (ura_system_await) before ura_system_destroy, which
 * otherwise may return -EBUSY. Any non-worker thread. */
URA_API int ura_dist_stop(ura_dist *d);
/* This node's name ("ura@host"), valid until ura_dist_stop. */
URA_API const char *ura_dist_name(const ura_dist *d);
/* Connects to an Erlang node ("name@host") through its host's epmd and
 * waits for the handshake, at most timeout_ns (0: 10 s). 0 (also when
 * connected already); -EHOSTUNREACH (epmd does not know the node),
 * -EACCES (the cookie was refused), -ETIMEDOUT, -ECONNREFUSED. Any
 * non-worker thread. */
URA_API int ura_dist_connect(ura_dist *d, const char *node, uint64_t timeout_ns);
/* The connection actor of a connected node (monitor it for node loss),
 * or URA_NOREF. Any thread. */
URA_API ura_ref ura_dist_node_ref(ura_dist *d, const char *node);
/* A proxy for {name, node}: sends to it are Erlang's {Name, Node} ! Msg.
 * It is not tied to one process (a monitor of it fires on node loss
 * only); keep the ref rather than calling this per send. -ENOTCONN when
 * node is not connected, -EINVAL for a bad name. Any thread. */
URA_API int ura_dist_whereis(ura_dist *d, const char *node, const char *name,
			     ura_ref *out);

/* ------------------------------------------------------------------------ */
/* Conveniences: ura_send(x, to, TAG, values...) with x a ura_ctx* or a
 * ura_system*, and at most URA_MAX_VALUES values, each of type
 * int/long/long long/unsigned/unsigned long and the shorter integer types
 * (int64), float/double, ura_atom (unsigned long long: an atom, see
 * Atoms), ura_ref, char * / const char * (string), void * (opaque pointer)
 * or an explicit ura_value (ura_v_bytes(p, n), ura_v_i64(x)). The same in
 * C (C11 _Generic) and C++ (overloads): see the end of this header. */
#ifndef __cplusplus

#define URA_V(x) _Generic((x),                                             \
	int: ura_v_i64, long: ura_v_i64, long long: ura_v_i64,             \
	unsigned: ura_v_i64, unsigned long: ura_v_i64,                     \
	ura_atom: ura_v_atom, short: ura_v_i64,                            \
	unsigned short: ura_v_i64, signed char: ura_v_i64,                 \
	unsigned char: ura_v_i64, char: ura_v_i64, _Bool: ura_v_i64,       \
	float: ura_v_f64, double: ura_v_f64,                               \
	ura_ref: ura_v_ref, char *: ura_v_str, const char *: ura_v_str,    \
	void *: ura_v_ptr, ura_value: ura_v_value)(x)

/* The count of (tag, values...): 1 .. URA_MAX_VALUES + 1. */
#define URA__N(...) URA__N_(__VA_ARGS__, 17, 16, 15, 14, 13, 12, 11, 10,  \
	9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define URA__N_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13,   \
	a14, a15, a16, a17, n, ...) n
#define URA__CAT(a, b) URA__CAT_(a, b)
#define URA__CAT_(a, b) a##b
#define URA__M0()
#define URA__M1(a) URA_V(a)
#define URA__M2(a, ...) URA_V(a), URA__M1(__VA_ARGS__)
#define URA__M3(a, ...) URA_V(a), URA__M2(__VA_ARGS__)
#define URA__M4(a, ...) URA_V(a), URA__M3(__VA_ARGS__)
#define URA__M5(a, ...) URA_V(a), URA__M4(__VA_ARGS__)
#define URA__M6(a, ...) URA_V(a), URA__M5(__VA_ARGS__)
#define URA__M7(a, ...) URA_V(a), URA__M6(__VA_ARGS__)
#define URA__M8(a, ...) URA_V(a), URA__M7(__VA_ARGS__)
#define URA__M9(a, ...) URA_V(a), URA__M8(__VA_ARGS__)
#define URA__M10(a, ...) URA_V(a), URA__M9(__VA_ARGS__)
#define URA__M11(a, ...) URA_V(a), URA__M10(__VA_ARGS__)
#define URA__M12(a, ...) URA_V(a), URA__M11(__VA_ARGS__)
#define URA__M13(a, ...) URA_V(a), URA__M12(__VA_ARGS__)
#define URA__M14(a, ...) URA_V(a), URA__M13(__VA_ARGS__)
#define URA__M15(a, ...) URA_V(a), URA__M14(__VA_ARGS__)
#define URA__M16(a, ...) URA_V(a), URA__M15(__VA_ARGS__)

/* (tag, v...) -> tag, (const ura_value[]){v...}, n; the tag position is
 * always an atom. With no values: tag, NULL, 0. More than URA_MAX_VALUES
 * values do not compile (URA__N has no count for them). */
#define URA__TV(...) URA__CAT(URA__TV, URA__N(__VA_ARGS__))(__VA_ARGS__)
#define URA__TV1(t) (t), NULL, 0u
#define URA__TVN(t, n, ...) (t), (const ura_value[]){ URA__CAT(URA__M, n)(__VA_ARGS__) }, (n)
#define URA__TV2(t, ...) URA__TVN(t, 1, __VA_ARGS__)
#define URA__TV3(t, ...) URA__TVN(t, 2, __VA_ARGS__)
#define URA__TV4(t, ...) URA__TVN(t, 3, __VA_ARGS__)
#define URA__TV5(t, ...) URA__TVN(t, 4, __VA_ARGS__)
#define URA__TV6(t, ...) URA__TVN(t, 5, __VA_ARGS__)
#define URA__TV7(t, ...) URA__TVN(t, 6, __VA_ARGS__)
#define URA__TV8(t, ...) URA__TVN(t, 7, __VA_ARGS__)
#define URA__TV9(t, ...) URA__TVN(t, 8, __VA_ARGS__)
#define URA__TV10(t, ...) URA__TVN(t, 9, __VA_ARGS__)
#define URA__TV11(t, ...) URA__TVN(t, 10, __VA_ARGS__)
#define URA__TV12(t, ...) URA__TVN(t, 11, __VA_ARGS__)
#define URA__TV13(t, ...) URA__TVN(t, 12, __VA_ARGS__)
#define URA__TV14(t, ...) URA__TVN(t, 13, __VA_ARGS__)
#define URA__TV15(t, ...) URA__TVN(t, 14, __VA_ARGS__)
#define URA__TV16(t, ...) URA__TVN(t, 15, __VA_ARGS__)
#define URA__TV17(t, ...) URA__TVN(t, 16, __VA_ARGS__)

#define ura_send(x, to, ...) _Generic((x),                                 \
	ura_ctx *: ura_sendv_ctx, ura_system *: ura_sendv_sys)(            \
	(x), (to), URA__TV(__VA_ARGS__))
#define ura_reply(cx, ...) ura_replyv((cx), URA__TV(__VA_ARGS__))
/* ura_send_wait(sys, to, deadline_ns, TAG, values...): ura_sendv_wait. */
#define ura_send_wait(sys, to, deadline, ...)                              \
	ura_sendv_wait((sys), (to), (deadline), URA__TV(__VA_ARGS__))
#define ura_request(cx, to, cont, data, ...)                               \
	ura_requestv((cx), (to), (cont), (data), URA__TV(__VA_ARGS__))
#define ura_request_for(cx, to, timeout, cont, data, ...)                  \
	ura_requestv_for((cx), (to), (timeout), (cont), (data), URA__TV(__VA_ARGS__))
/* Scoped actors: ura_scoped_send(s, to, TAG, v...), and
 * ura_scoped_request(s, to, timeout, &reply, TAG, v...). */
#define ura_scoped_send(s, to, ...) ura_scoped_sendv((s), (to), URA__TV(__VA_ARGS__))
#define ura_scoped_request(s, to, timeout, out, ...)                       \
	ura_scoped_requestv((s), (to), (timeout), (out), URA__TV(__VA_ARGS__))
/* ura_spawn(x, &cls, arg, &ref): variadic only so that a compound literal
 * argument with commas, &(point){ 1, 2 }, passes through the macro. */
#define ura_spawn(x, cls, ...) _Generic((x),                               \
	ura_ctx *: ura_spawn_ctx, ura_system *: ura_spawn_sys)(            \
	(x), (cls), __VA_ARGS__)
#define ura_become_bound(cx, b, v) ura_become_with((cx), (b), URA_V(v))
/* ura_spawn_ex(x, &cls, arg, &opts, &ref) (variadic like ura_spawn) */
#define ura_spawn_ex(x, cls, ...) _Generic((x),                            \
	ura_ctx *: ura_spawn_ex_ctx, ura_system *: ura_spawn_ex_sys)(      \
	(x), (cls), __VA_ARGS__)
/* ura_send_after(x, to, delay_ns, TAG, values...) -> ura_timer */
#define ura_send_after(x, to, delay, ...) _Generic((x),                    \
	ura_ctx *: ura_send_afterv_ctx, ura_system *: ura_send_afterv_sys)( \
	(x), (to), (delay), URA__TV(__VA_ARGS__))
/* ura_send_group(x, group, TAG, values...) -> members reached */
#define ura_send_group(x, g, ...) _Generic((x),                            \
	ura_ctx *: ura_send_groupv_ctx, ura_system *: ura_send_groupv_sys)( \
	(x), (g), URA__TV(__VA_ARGS__))
/* ura_send_name(x, name, TAG, values...): to the actor registered so */
#define ura_send_name(x, name, ...) _Generic((x),                          \
	ura_ctx *: ura_send_namedv_ctx, ura_system *: ura_send_namedv_sys)( \
	(x), (name), URA__TV(__VA_ARGS__))
/* ura_kill(x, to, reason): an exit signal without a value */
#define ura_kill(x, to, reason) _Generic((x),                              \
	ura_ctx *: ura_kill_ctx, ura_system *: ura_kill_sys)(              \
	(x), (to), (reason), URA_NOVALUE)
/* ura_request_ex(cx, to, cont, opts, TAG, values...). A compound literal
 * for opts goes through URA_REQUEST_OPTS(.payload = &p, ...), whose
 * parentheses keep its commas from the macro. */
#define ura_request_ex(cx, to, cont, opts, ...)                            \
	ura_requestv_ex((cx), (to), (cont), (opts), URA__TV(__VA_ARGS__))
#define URA_REQUEST_OPTS(...) (&(ura_request_opts){ __VA_ARGS__ })
#define ura_forward(cx, to, ...) ura_forwardv((cx), (to), URA__TV(__VA_ARGS__))
#define ura_promise_reply(cx, p, ...)                                      \
	ura_promise_replyv((cx), (p), URA__TV(__VA_ARGS__))
#define ura_promise_forward(cx, p, to, ...)                                \
	ura_promise_forwardv((cx), (p), (to), URA__TV(__VA_ARGS__))
/* ura_sup_start(x, &spec, opts, &ref): x a ura_ctx* or a ura_system* */
#define ura_sup_start(x, spec, opts, out) _Generic((x),                    \
	ura_ctx *: ura_sup_start_ctx, ura_system *: ura_sup_start_sys)(    \
	(x), (spec), (opts), (out))

#endif /* !__cplusplus */

#ifdef __cplusplus
}
#endif

#include "ura/guard.h" /* guard expressions on cases */

/* ------------------------------------------------------------------------ */
/* C++ (C++17): the same macros, built from constexpr functions, overloads
 * and templates instead of C11's _Generic and designated initializers.
 *
 *	URA_BEHAVIOR(player, URA_ON(A_PING, "ir", hit),
 *		     URA_ON(A_PONG, "ir", hit, URA_GUARD(pred, &arg)));
 *	ura_send(cx, peer, A_PONG, n + 1, ura_self(cx));
 *
 * Differences from C: a case's plain C guard is written URA_GUARD(fn,
 * arg), which C accepts too, not `.guard = fn, .guard_arg = arg`; guard
 * expressions (URA_WHEN, URA_G_*) are C only (they are compound
 * literals); URA_BEHAVIOR_OPTS takes its options as one parenthesized
 * list of `.field = value` items, up to 8; a behavior used before its
 * definition is declared with URA_BEHAVIOR_DECL(name) (C++ has no
 * tentative definitions). URA_ATOM with a character outside
 * [0-9A-Za-z_] does not compile. */
#ifdef __cplusplus

namespace ura_detail {

constexpr ura_atom a6(char c)
{
	return c >= 'a' && c <= 'z' ? (ura_atom)(c - 'a' + 38) :
	       c >= 'A' && c <= 'Z' ? (ura_atom)(c - 'A' + 11) :
	       c >= '0' && c <= '9' ? (ura_atom)(c - '0' + 1) :
	       c == '_' ? (ura_atom)37 : (ura_atom)0;
}

/* Throws on a bad literal: evaluated as a template argument below, a
 * throw is not a constant expression, so the program does not compile. */
constexpr ura_atom atom(const char *s, unsigned long n)
{
	if (n == 0 || n > URA_ATOM_MAX)
		throw "an atom has 1 to 10 characters";
	ura_atom a = 0;
	for (unsigned long i = 0; i < n; i++) {
		if (!a6(s[i]))
			throw "an atom has only the characters [0-9A-Za-z_]";
		a |= a6(s[i]) << (6 * i);
	}
	return a;
}

template <ura_atom A> struct atom_c {
	static constexpr ura_atom value = A;
};

struct guard_t {
	ura_guard_fn *fn;
	const void *arg;
};

constexpr ura_case on(ura_atom tag, const char *types, uint64_t sig, ura_handler *fn)
{
	return ura_case{ tag, types, fn, nullptr, nullptr, sig, 0 };
}

constexpr ura_case on(ura_atom tag, const char *types, uint64_t sig, ura_handler *fn,
		      guard_t g)
{
	return ura_case{ tag, types, fn, g.fn, g.arg, sig, 0 };
}

inline ura_value v(int x) { return ura_v_i64(x); }
inline ura_value v(long x) { return ura_v_i64(x); }
inline ura_value v(long long x) { return ura_v_i64(x); }
inline ura_value v(unsigned x) { return ura_v_i64((int64_t)x); }
inline ura_value v(unsigned long x) { return ura_v_i64((int64_t)x); }
inline ura_value v(short x) { return ura_v_i64(x); }
inline ura_value v(unsigned short x) { return ura_v_i64(x); }
inline ura_value v(signed char x) { return ura_v_i64(x); }
inline ura_value v(unsigned char x) { return ura_v_i64(x); }
inline ura_value v(char x) { return ura_v_i64(x); }
inline ura_value v(bool x) { return ura_v_i64(x); }
inline ura_value v(float x) { return ura_v_f64(x); }
inline ura_value v(double x) { return ura_v_f64(x); }
inline ura_value v(ura_atom x) { return ura_v_atom(x); }
inline ura_value v(ura_ref x) { return ura_v_ref(x); }
inline ura_value v(const char *x) { return ura_v_str(x); }
inline ura_value v(char *x) { return ura_v_str(x); }
inline ura_value v(void *x) { return ura_v_ptr(x); }
inline ura_value v(ura_value x) { return x; }

inline int sendv(ura_ctx *x, ura_ref to, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_sendv_ctx(x, to, t, vs, n); }
inline int sendv(ura_system *x, ura_ref to, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_sendv_sys(x, to, t, vs, n); }
inline ura_timer afterv(ura_ctx *x, ura_ref to, uint64_t d, ura_atom t,
			const ura_value *vs, unsigned n)
{ return ura_send_afterv_ctx(x, to, d, t, vs, n); }
inline ura_timer afterv(ura_system *x, ura_ref to, uint64_t d, ura_atom t,
			const ura_value *vs, unsigned n)
{ return ura_send_afterv_sys(x, to, d, t, vs, n); }
inline long groupv(ura_ctx *x, ura_group *g, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_send_groupv_ctx(x, g, t, vs, n); }
inline long groupv(ura_system *x, ura_group *g, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_send_groupv_sys(x, g, t, vs, n); }
inline int spawn(ura_ctx *x, const ura_class *c, const void *arg, ura_ref *out)
{ return ura_spawn_ctx(x, c, arg, out); }
inline int spawn(ura_system *x, const ura_class *c, const void *arg, ura_ref *out)
{ return ura_spawn_sys(x, c, arg, out); }
inline int spawn_ex(ura_ctx *x, const ura_class *c, const void *arg,
		    const ura_spawn_opts *o, ura_ref *out)
{ return ura_spawn_ex_ctx(x, c, arg, o, out); }
inline int spawn_ex(ura_system *x, const ura_class *c, const void *arg,
		    const ura_spawn_opts *o, ura_ref *out)
{ return ura_spawn_ex_sys(x, c, arg, o, out); }

/* The values of one call, on the caller's stack. */
template <class... A> struct vals {
	static_assert(sizeof...(A) <= URA_MAX_VALUES, "at most URA_MAX_VALUES values");
	ura_value a[sizeof...(A) ? sizeof...(A) : 1];
	explicit vals(A... x) : a{ v(x)... } {}
	const ura_value *p() const { return sizeof...(A) ? a : nullptr; }
	static constexpr unsigned n = sizeof...(A);
};

template <class X, class... A> int send(X *x, ura_ref to, ura_atom t, A... a)
{ vals<A...> vs(a...); return sendv(x, to, t, vs.p(), vs.n); }
template <class... A>
int send_wait(ura_system *x, ura_ref to, uint64_t dl, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_sendv_wait(x, to, dl, t, vs.p(), vs.n); }
template <class... A> int reply(ura_ctx *cx, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_replyv(cx, t, vs.p(), vs.n); }
template <class... A>
int request(ura_ctx *cx, ura_ref to, ura_handler *cont, void *data, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_requestv(cx, to, cont, data, t, vs.p(), vs.n); }
template <class... A>
int request_for(ura_ctx *cx, ura_ref to, uint64_t tmo, ura_handler *cont, void *data,
		ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_requestv_for(cx, to, tmo, cont, data, t, vs.p(), vs.n); }
template <class X, class... A> ura_timer after(X *x, ura_ref to, uint64_t d, ura_atom t, A... a)
{ vals<A...> vs(a...); return afterv(x, to, d, t, vs.p(), vs.n); }
template <class X, class... A> long group(X *x, ura_group *g, ura_atom t, A... a)
{ vals<A...> vs(a...); return groupv(x, g, t, vs.p(), vs.n); }
template <class T> int become_bound(ura_ctx *cx, const ura_behavior *b, T x)
{ return ura_become_with(cx, b, v(x)); }
inline int kill(ura_ctx *x, ura_ref to, ura_atom r) { return ura_kill_ctx(x, to, r, ura_value{}); }
inline int kill(ura_system *x, ura_ref to, ura_atom r) { return ura_kill_sys(x, to, r, ura_value{}); }
inline int namedv(ura_ctx *x, ura_atom nm, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_send_namedv_ctx(x, nm, t, vs, n); }
inline int namedv(ura_system *x, ura_atom nm, ura_atom t, const ura_value *vs, unsigned n)
{ return ura_send_namedv_sys(x, nm, t, vs, n); }
template <class X, class... A> int send_name(X *x, ura_atom nm, ura_atom t, A... a)
{ vals<A...> vs(a...); return namedv(x, nm, t, vs.p(), vs.n); }
template <class... A>
int request_ex(ura_ctx *cx, ura_ref to, ura_handler *cont, const ura_request_opts *o,
	       ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_requestv_ex(cx, to, cont, o, t, vs.p(), vs.n); }
template <class... A> int forward(ura_ctx *cx, ura_ref to, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_forwardv(cx, to, t, vs.p(), vs.n); }
template <class... A> int promise_reply(ura_ctx *cx, ura_promise *p, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_promise_replyv(cx, p, t, vs.p(), vs.n); }
template <class... A>
int promise_forward(ura_ctx *cx, ura_promise *p, ura_ref to, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_promise_forwardv(cx, p, to, t, vs.p(), vs.n); }

inline int sup_start(ura_ctx *x, const ura_sup_spec *s, const ura_spawn_opts *o, ura_ref *r)
{ return ura_sup_start_ctx(x, s, o, r); }
inline int sup_start(ura_system *x, const ura_sup_spec *s, const ura_spawn_opts *o, ura_ref *r)
{ return ura_sup_start_sys(x, s, o, r); }
template <class... A> int scoped_send(ura_scoped *s, ura_ref to, ura_atom t, A... a)
{ vals<A...> vs(a...); return ura_scoped_sendv(s, to, t, vs.p(), vs.n); }
template <class... A>
int scoped_request(ura_scoped *s, ura_ref to, uint64_t tmo, const ura_msg **out, ura_atom t,
		   A... a)
{ vals<A...> vs(a...); return ura_scoped_requestv(s, to, tmo, out, t, vs.p(), vs.n); }

} /* namespace ura_detail */

#define URA_ATOM(s) (::ura_detail::atom_c<::ura_detail::atom(s, sizeof(s) - 1)>::value)
#define URA_ON(tag_, types_, ...)                                          \
	::ura_detail::on((tag_), (types_),                                 \
			 URA__SIG(types_) | ((uint64_t)1 << 62), __VA_ARGS__)
#define URA_ON_ANY(tag_, ...)                                              \
	::ura_detail::on((tag_), nullptr, 0, __VA_ARGS__)
#define URA_GUARD(fn_, arg_) (::ura_detail::guard_t{ (fn_), (arg_) })
#define URA_BEHAVIOR_DECL(name_) extern const ura_behavior name_
#define URA__BO1(b, o) b o;
#define URA__BO2(b, o, ...) b o; URA__BO1(b, __VA_ARGS__)
#define URA__BO3(b, o, ...) b o; URA__BO2(b, __VA_ARGS__)
#define URA__BO4(b, o, ...) b o; URA__BO3(b, __VA_ARGS__)
#define URA__BO5(b, o, ...) b o; URA__BO4(b, __VA_ARGS__)
#define URA__BO6(b, o, ...) b o; URA__BO5(b, __VA_ARGS__)
#define URA__BO7(b, o, ...) b o; URA__BO6(b, __VA_ARGS__)
#define URA__BO8(b, o, ...) b o; URA__BO7(b, __VA_ARGS__)
#define URA__BON(...) URA__BON_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define URA__BON_(a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#define URA__BOPTS(b, ...) URA__CAT(URA__BO, URA__BON(__VA_ARGS__))(b, __VA_ARGS__)
#define URA__CAT(a, b) URA__CAT_(a, b)
#define URA__CAT_(a, b) a##b
#define URA__UNPAREN(...) __VA_ARGS__
#define URA_BEHAVIOR_OPTS(name_, opts_, ...)                               \
	static const ura_case name_##__ura_cases[] = { __VA_ARGS__ };      \
	const ura_behavior name_ = [] {                                    \
		ura_behavior b_{};                                         \
		b_.cases = name_##__ura_cases;                             \
		b_.ncases = (uint32_t)(sizeof(name_##__ura_cases) /        \
				       sizeof(ura_case));                  \
		b_.name = #name_;                                          \
		URA__BOPTS(b_, URA__UNPAREN opts_)                         \
		return b_;                                                 \
	}()
#define URA_BEHAVIOR(name_, ...)                                           \
	static const ura_case name_##__ura_cases[] = { __VA_ARGS__ };      \
	const ura_behavior name_ = { name_##__ura_cases,                   \
		(uint32_t)(sizeof(name_##__ura_cases) / sizeof(ura_case)), \
		0, #name_, 0, nullptr, { 0, 0 } }

#define ura_send(x, to, ...) ::ura_detail::send((x), (to), __VA_ARGS__)
#define ura_scoped_send(s, to, ...) ::ura_detail::scoped_send((s), (to), __VA_ARGS__)
#define ura_scoped_request(s, to, timeout, out, ...)                       \
	::ura_detail::scoped_request((s), (to), (timeout), (out), __VA_ARGS__)
#define ura_reply(cx, ...) ::ura_detail::reply((cx), __VA_ARGS__)
#define ura_send_wait(sys, to, deadline, ...)                              \
	::ura_detail::send_wait((sys), (to), (deadline), __VA_ARGS__)
#define ura_request(cx, to, cont, data, ...)                               \
	::ura_detail::request((cx), (to), (cont), (data), __VA_ARGS__)
#define ura_request_for(cx, to, timeout, cont, data, ...)                  \
	::ura_detail::request_for((cx), (to), (timeout), (cont), (data), __VA_ARGS__)
#define ura_spawn(x, cls, ...) ::ura_detail::spawn((x), (cls), __VA_ARGS__)
#define ura_spawn_ex(x, cls, ...) ::ura_detail::spawn_ex((x), (cls), __VA_ARGS__)
#define ura_become_bound(cx, b, x) ::ura_detail::become_bound((cx), (b), (x))
#define ura_send_after(x, to, delay, ...)                                  \
	::ura_detail::after((x), (to), (delay), __VA_ARGS__)
#define ura_send_group(x, g, ...) ::ura_detail::group((x), (g), __VA_ARGS__)
#define ura_send_name(x, name, ...) ::ura_detail::send_name((x), (name), __VA_ARGS__)
#define ura_kill(x, to, reason) ::ura_detail::kill((x), (to), (reason))
#define ura_request_ex(cx, to, cont, opts, ...)                            \
	::ura_detail::request_ex((cx), (to), (cont), (opts), __VA_ARGS__)
#define ura_forward(cx, to, ...) ::ura_detail::forward((cx), (to), __VA_ARGS__)
#define ura_promise_reply(cx, p, ...) ::ura_detail::promise_reply((cx), (p), __VA_ARGS__)
#define ura_sup_start(x, spec, opts, out) ::ura_detail::sup_start((x), (spec), (opts), (out))
#define ura_promise_forward(cx, p, to, ...)                                \
	::ura_detail::promise_forward((cx), (p), (to), __VA_ARGS__)

#endif /* __cplusplus */

#endif /* URA_H */
