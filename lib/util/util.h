/* SPDX-License-Identifier: MIT */
/* Small internal helpers shared by every part of libura (the lowest
 * layer: it includes nothing of ura but the public header). */
#ifndef URA_UTIL_H
#define URA_UTIL_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "ura.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/probe.h"

#define ura__likely(x) __builtin_expect(!!(x), 1)
#define ura__unlikely(x) __builtin_expect(!!(x), 0)
#define URA__CACHELINE 64
#define URA__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Relaxed loads and stores: for counters with one writer and racy readers
 * (stats), where a torn or stale read is fine but a data race is not. */
#define ura__ld(p) atomic_load_explicit((p), memory_order_relaxed)
#define ura__st(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
/* One-writer increment: no locked instruction. As C11 writes it, a
 * relaxed load, an add and a relaxed store: three instructions, since
 * compilers do not fuse atomic accesses. On x86-64 it is one `add` to
 * memory instead (as Linux's this_cpu_add): without a lock prefix its
 * load and store are still each one aligned access, which x86 makes
 * single-copy atomic, so a reader's relaxed load sees the old value or
 * the new one, never a torn one; the one writer never races itself. The
 * asm's "+m" tells the compiler the word is read and written there, so
 * its own accesses to it stay in order. Not under TSan, which must see
 * every access as atomic (it would report the asm's store as a race).
 * Pingpong's turn and send do eight of these a message; the metered
 * turn three more (bench/README.md, issue 17). */
/* A TSan build, gcc's or clang's (actor/fiber.c tells TSan of its stacks). */
#if defined(__SANITIZE_THREAD__)
#define URA__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define URA__TSAN 1
#endif
#endif
#if defined(__x86_64__) && !defined(URA__TSAN)
/* may_alias: the asm's operand names the counter as a plain word, and
 * type-based alias analysis must not take it for another object than
 * the _Atomic one the relaxed loads read (and move a load across it). */
typedef uint64_t __attribute__((may_alias)) ura__u64_alias;
typedef uint32_t __attribute__((may_alias)) ura__u32_alias;
static inline void ura__add8(void *p, uint64_t n)
{
	__asm__ volatile("addq %1, %0" : "+m"(*(ura__u64_alias *)p) : "er"(n));
}
static inline void ura__add4(void *p, uint32_t n)
{
	__asm__ volatile("addl %1, %0" : "+m"(*(ura__u32_alias *)p) : "er"(n));
}
/* By the counter's size, known at compile time: the other words (none
 * today) take the C11 way. */
#define ura__add(p, n)                                                          \
	__extension__({                                                         \
		__typeof__(p) ura__p_ = (p);                                    \
		if (sizeof(*ura__p_) == 8)                                      \
			ura__add8((void *)ura__p_, (uint64_t)(n));              \
		else if (sizeof(*ura__p_) == 4)                                 \
			ura__add4((void *)ura__p_, (uint32_t)(n));              \
		else                                                            \
			ura__st(ura__p_, ura__ld(ura__p_) + (n));               \
	})
#define ura__inc(p) ura__add((p), 1)
#else
#define ura__inc(p) ura__st((p), ura__ld(p) + 1)
#define ura__add(p, n) ura__st((p), ura__ld(p) + (n))
#endif

/* A full (seq_cst) fence for the Dekker-style sleep/wake handshakes.
 * TSan does not model fences (GCC warns, -Wtsan); there a seq_cst RMW on
 * a shared dummy stands in, which TSan does treat as synchronisation. */
#if defined(__SANITIZE_THREAD__)
extern _Atomic int ura__fence_dummy;
#define ura__fence_seq_cst() \
	((void)atomic_fetch_add_explicit(&ura__fence_dummy, 0, memory_order_seq_cst))
#else
#define ura__fence_seq_cst() atomic_thread_fence(memory_order_seq_cst)
#endif

/* For a debug check that reads memory which may be stale on purpose (a
 * ura_ctx kept past its handler: ura__ctx_bad): the sanitizers would
 * report the very misuse the check is there to catch. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define ura__no_sanitize __attribute__((no_sanitize("address", "thread")))
#else
#define ura__no_sanitize
#endif

static inline void ura__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* Wall time: what a caller outside the runtime waits by (a timeout of
 * ura_system_await_for, a drain at shutdown). */
static inline uint64_t ura__wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * URA_SEC + (uint64_t)ts.tv_nsec;
}

#ifdef URA_DETERMINISTIC
/* The deterministic build (runtime/det.c): the runtime's time is virtual,
 * moved only by the scheduler thread when nothing else can run, so a
 * timer fires at the same point of every run with the same seed. One for
 * the process (util/clock.c); relaxed: it is written by the one scheduler
 * thread, and a thread outside that reads it late arms a timer early by as
 * much, as if it had been slower. */
extern _Atomic uint64_t ura__vclock;
static inline uint64_t ura__now_ns(void)
{
	return atomic_load_explicit(&ura__vclock, memory_order_relaxed);
}
#else
/* The runtime's time: timers, deadlines, spin and steal intervals. */
static inline uint64_t ura__now_ns(void)
{
	return ura__wall_ns();
}
#endif

/* True when a struct's reserved words (sizeof bytes at p) are all zero. */
static inline int ura__zeroed(const uint64_t *p, size_t bytes)
{
	uint64_t any = 0;
	for (size_t i = 0; i < bytes / sizeof *p; i++)
		any |= p[i];
	return !any;
}

/* The clock, read at most once per pass: *now is 0 until someone needed
 * it. */
static inline uint64_t ura__clock(uint64_t *now)
{
	if (!*now)
		*now = ura__now_ns();
	return *now;
}

/* A growable list of 64-bit ids (an actor's delayed sends, its I/O
 * operations in flight): whoever owns a list's field owns its memory. */
struct ura__ids {
	uint32_t n, cap;
	int64_t v[];
};

/* Appends v, growing the list (4, 8, 16, ...). 0 or -ENOMEM (then the list
 * is as it was). */
int ura__ids_push(struct ura__ids **lp, int64_t v);
/* Room for at least `want` ids (capacity doubled as often as needed). */
int ura__ids_reserve(struct ura__ids **lp, uint32_t want);
/* Removes one v (order not kept); returns the ids left. */
uint32_t ura__ids_del(struct ura__ids *l, int64_t v);

#endif
