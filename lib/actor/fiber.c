/* SPDX-License-Identifier: MIT */
/*
 * Context-switching actors: stacks, the switch, the blocking selective
 * receive, blocking-style I/O, and the stack overflow handler. The design
 * is in fiber.h; the costs in kernel-notes/stacks.md.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "actor/fiber.h"
#include "actor/signal.h"
#include "core/post.h"
#include "core/sched.h"
#include "io/io.h"
#include "time/timers.h"

/* Sanitizers must be told about stacks they did not make (ASan: which
 * stack is current, so that it checks and unpoisons the right one; TSan:
 * which fiber runs, so that it keeps one shadow call stack per fiber). */
#if defined(__SANITIZE_ADDRESS__)
#define URA__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define URA__ASAN 1
#endif
#endif
/* URA__TSAN: util/util.h. */
#ifdef URA__ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
				     size_t *size_old);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#endif
#ifdef URA__TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif

/* switch.S */
void *ura__ctx_switch(void **save_sp, void *load_sp, void *arg);
void ura__ctx_start(void);

enum { F_NEW, F_RUN, F_WAIT, F_MORE, F_DONE };

struct ura__fiber {
	void *sp;                 /* the body's stack pointer while switched out */
	void *ret_sp;             /* the worker's, while the body runs */
	char *map;                /* the mapping: guard page, then the stack */
	size_t map_len;
	struct ura__fiber *next;  /* the pool's list */
	struct ura_ctx cx;        /* the body's ctx, valid across receives */
	unsigned status;          /* F_* */
	unsigned slice;           /* messages taken since switched in */
	unsigned same;            /* of them, of the actor's phase (turn.c) */
	unsigned busy;            /* in a handler a receive runs: no receive */
	unsigned chain;           /* bodies handed the worker over since it switched one in */
	const ura_behavior *beh_ok; /* the last behavior a receive checked */
	/* A bounded mailbox's counted messages taken and not yet given back
	 * (core/bound.h): given back before the body lets go of the worker
	 * (stint_end), as a turn gives them back at its end. */
	struct ura__bp *bp;
	unsigned bpn;
	/* A metered class (core/metrics.h): the stint's start (mx.cs
	 * NULL: not metered) and what it handled; they go to the class and
	 * the actor's record when the body lets go of the worker
	 * (stint_end), as a turn's do at its end. */
	struct ura__mx_mark mx;
	uint64_t handled;
	/* The last message taken and kept (it is still the mailbox's tail,
	 * so not in the stash yet: the next pop retires it there). */
	struct ura_msg *kept;
	/* The message next_msg returned last when it is not a mailbox node
	 * (a trapped EXIT, actor/signal.h): take() frees it after its case,
	 * or stashes it at once, since no pop will retire it. */
	struct ura_msg *detached;
#ifdef URA__ASAN
	void *asan_fake;
	const void *ret_lo;       /* the worker's stack, for switching back */
	size_t ret_size;
#endif
#ifdef URA__TSAN
	void *tsan_fiber, *tsan_ret;
#endif
};

struct ura__fibsys {
	pthread_mutex_t lock;
	struct ura__fiber *pool;  /* stopped actors' stacks, newest first */
	uint64_t npool;
	_Atomic uint64_t live, mapped;
};

const ura_behavior ura__fiber_nobeh = { .name = "(body)" };

static size_t page_size(void)
{
	static size_t ps;
	if (!ps)
		ps = (size_t)sysconf(_SC_PAGESIZE);
	return ps;
}

/* The fiber running on this thread (the overflow handler's question),
 * set around each switch in; no body code reads it, so a body that moves
 * to another thread never sees another thread's value. */
static _Thread_local struct ura__fiber *cur_fiber;

/* ---- stack overflow --------------------------------------------------- */

static struct sigaction old_segv;
static pthread_once_t segv_once = PTHREAD_ONCE_INIT;
static pthread_key_t alt_key;
static _Thread_local int alt_done;
#define ALT_SIZE ((size_t)64 << 10)

static void put_str(char *buf, size_t *n, size_t cap, const char *s)
{
	while (*s && *n < cap)
		buf[(*n)++] = *s++;
}
static void put_u(char *buf, size_t *n, size_t cap, uint64_t v)
{
	char t[24];
	int k = 0;
	do
		t[k++] = (char)('0' + v % 10);
	while ((v /= 10));
	while (k && *n < cap)
		buf[(*n)++] = t[--k];
}

/* On the alternate stack: a fault in the guard page (or just below it:
 * a big frame jumps over a page) of the running fiber is an overflow;
 * anything else goes to whoever handled SIGSEGV before us. Only
 * async-signal-safe calls. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	struct ura__fiber *f = cur_fiber;
	char *addr = si->si_addr;
	size_t ps = page_size();
	if (f && addr < f->map + ps && addr + (64u << 10) >= f->map) {
		char buf[256];
		size_t n = 0;
		put_str(buf, &n, sizeof buf, "ura: stack overflow in a context-switching actor of class ");
		put_str(buf, &n, sizeof buf, f->cx.a->cls->name);
		put_str(buf, &n, sizeof buf, " <");
		put_u(buf, &n, sizeof buf, ura__idx_no(f->cx.a->idx));
		put_str(buf, &n, sizeof buf, ".");
		put_u(buf, &n, sizeof buf, ura__own_gen(f->cx.a));
		put_str(buf, &n, sizeof buf, "> (stack ");
		put_u(buf, &n, sizeof buf, f->map_len - ps);
		put_str(buf, &n, sizeof buf, " bytes: raise ura_class.stack_size)\n");
		ssize_t wr = write(2, buf, n);
		(void)wr;
		/* The fault repeats on return, now with the default action:
		 * the process ends by SIGSEGV (a core dump shows the frames). */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigaction(SIGSEGV, &dfl, NULL);
		return;
	}
	if (old_segv.sa_flags & SA_SIGINFO) {
		old_segv.sa_sigaction(sig, si, uc);
	} else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN) {
		old_segv.sa_handler(sig);
	} else {
		sigaction(SIGSEGV, &old_segv, NULL); /* the fault repeats: default */
	}
}

static void alt_free(void *p)
{
	stack_t ss;
	memset(&ss, 0, sizeof ss);
	ss.ss_flags = SS_DISABLE;
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == p)
		sigaltstack(&ss, NULL);
	munmap(p, ALT_SIZE);
}

static void segv_install(void)
{
	pthread_key_create(&alt_key, alt_free);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, &old_segv);
}

/* A handler that runs on the overflowing stack would fault again: each
 * worker thread gets an alternate stack the first time it runs a body
 * (unless it has one), freed when the thread ends. */
static void alt_ensure(void)
{
	if (ura__likely(alt_done))
		return;
	alt_done = 1;
	pthread_once(&segv_once, segv_install);
	stack_t cur;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
		return; /* someone's (a sanitizer's): it serves */
	void *p = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return;
	stack_t ss = { .ss_sp = p, .ss_size = ALT_SIZE, .ss_flags = 0 };
	if (sigaltstack(&ss, NULL) < 0) {
		munmap(p, ALT_SIZE);
		return;
	}
	pthread_setspecific(alt_key, p);
}

/* ---- stacks ------------------------------------------------------------ */

int ura__fiber_class_ok(const ura_class *cls)
{
	if (cls->flags & ~URA_CLASS_UNMUTED)
		return -EINVAL;
	if (!cls->body)
		return cls->stack_size ? -EINVAL : 0;
	if (cls->stack_size && (cls->stack_size < URA_STACK_MIN || cls->stack_size > URA_STACK_MAX))
		return -EINVAL;
	return 0;
}

static struct ura__fibsys *fibsys(ura_system *sys)
{
	/* acquire: pairs with the release CAS below, so the lock is made. */
	struct ura__fibsys *fs = __atomic_load_n(&sys->fib, __ATOMIC_ACQUIRE);
	if (fs)
		return fs;
	fs = ura__calloc(1, sizeof *fs);
	if (!fs)
		return NULL;
	pthread_mutex_init(&fs->lock, NULL);
	struct ura__fibsys *none = NULL;
	/* release: publishes the initialised record; acquire on failure:
	 * pairs with the winner's release. */
	if (!__atomic_compare_exchange_n(&sys->fib, &none, fs, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		pthread_mutex_destroy(&fs->lock);
		free(fs);
		fs = none;
	}
	return fs;
}

/* Linux 6.13's guard regions (uapi asm-generic/mman-common.h): a range
 * whose access faults with SIGSEGV, marked in the page tables rather than
 * by a VMA of its own. Debian 12's headers predate it. */
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/* Whether madvise(MADV_GUARD_INSTALL) works here: -1 not tried yet, 1
 * yes, 0 no (an older kernel: EINVAL). relaxed: each thread that races
 * the first try finds the same answer. */
static _Atomic int guard_madv = -1;

/* The guard page at m: a guard region where the kernel has them, so the
 * stack stays one VMA with its neighbours' (adjacent anonymous mappings
 * of equal flags merge, and vm.max_map_count, 65530 by default, stops
 * limiting how many bodies can live); else PROT_NONE, which splits the
 * mapping in two VMAs (about 32 000 live bodies at most). 0 or -1. */
static int guard(char *m, size_t ps)
{
	int g = atomic_load_explicit(&guard_madv, memory_order_relaxed);
	if (g != 0) {
		if (madvise(m, ps, MADV_GUARD_INSTALL) == 0) {
			if (g < 0)
				atomic_store_explicit(&guard_madv, 1, memory_order_relaxed);
			return 0;
		}
		if (errno != EINVAL)
			return -1;
		atomic_store_explicit(&guard_madv, 0, memory_order_relaxed);
	}
	return mprotect(m, ps, PROT_NONE);
}

/* The fiber record lives at the top of its own stack (the page the body
 * touches first anyway): no allocation besides the mapping. */
static struct ura__fiber *map_stack(struct ura__fibsys *fs, size_t len)
{
	size_t ps = page_size();
	/* MAP_NORESERVE: no commit charge for the whole stack; pages are
	 * committed when touched. The guard page below (guard()). */
	char *m = mmap(NULL, len + ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (guard(m, ps) < 0) {
		munmap(m, len + ps);
		return NULL;
	}
	struct ura__fiber *f = (struct ura__fiber *)(m + len + ps - sizeof *f);
	f = (struct ura__fiber *)((uintptr_t)f & ~(uintptr_t)63);
	f->map = m;
	f->map_len = len + ps;
	/* relaxed: a counter for stats. */
	atomic_fetch_add_explicit(&fs->mapped, 1, memory_order_relaxed);
	return f;
}

static void unmap_stack(struct ura__fibsys *fs, struct ura__fiber *f)
{
	atomic_fetch_sub_explicit(&fs->mapped, 1, memory_order_relaxed);
	munmap(f->map, f->map_len);
}

/* The new frame ura__ctx_switch returns into: it "returns" to
 * ura__ctx_start with fn and arg in the registers switch.S names. */
static void *ctx_make(char *top, void (*fn)(void *), void *arg)
{
	uintptr_t t = (uintptr_t)top & ~(uintptr_t)15;
#if defined(__x86_64__)
	uint64_t *sp = (uint64_t *)t;
	/* After the ret, rsp = t: 16-aligned, as before a call. */
	*--sp = (uint64_t)(uintptr_t)ura__ctx_start; /* return address */
	*--sp = 0;                             /* rbp */
	*--sp = 0;                             /* rbx */
	*--sp = (uint64_t)(uintptr_t)arg;      /* r12 */
	*--sp = (uint64_t)(uintptr_t)fn;       /* r13 */
	*--sp = 0;                             /* r14 */
	*--sp = 0;                             /* r15 */
	return sp;
#elif defined(__aarch64__)
	uint64_t *sp = (uint64_t *)(t - 160);
	memset(sp, 0, 160);
	sp[0] = (uint64_t)(uintptr_t)arg;      /* x19 */
	sp[1] = (uint64_t)(uintptr_t)fn;       /* x20 */
	sp[11] = (uint64_t)(uintptr_t)ura__ctx_start; /* x30 */
	return sp;
#endif
}

static void fiber_main(void *arg);

int ura__fiber_new(ura_system *sys, struct ura__actor *a)
{
	struct ura__fibsys *fs = fibsys(sys);
	struct ura__actor_x *x = ura__actor_x(ura__thread_worker(sys), a);
	if (!fs || !x)
		return -ENOMEM;
	size_t ps = page_size();
	size_t len = a->cls->stack_size ? a->cls->stack_size : URA_STACK_DEFAULT;
	len = (len + ps - 1) & ~(ps - 1);
	struct ura__fiber *f = NULL, **pp;
	pthread_mutex_lock(&fs->lock);
	for (pp = &fs->pool; *pp; pp = &(*pp)->next)
		if ((*pp)->map_len == len + ps) {
			f = *pp;
			*pp = f->next;
			fs->npool--;
			break;
		}
	pthread_mutex_unlock(&fs->lock);
	if (!f && !(f = map_stack(fs, len)))
		return -ENOMEM;
	char *map = f->map;
	size_t map_len = f->map_len;
	memset(f, 0, sizeof *f);
	f->map = map;
	f->map_len = map_len;
	f->cx.sys = sys;
	f->cx.a = a;
	f->status = F_NEW;
	f->sp = ctx_make((char *)f, fiber_main, f);
#ifdef URA__TSAN
	f->tsan_fiber = __tsan_create_fiber(0);
#endif
	x->fib = f;
	atomic_fetch_add_explicit(&fs->live, 1, memory_order_relaxed);
	return 0;
}

void ura__fiber_free(ura_system *sys, struct ura__actor *a)
{
	struct ura__fiber *f = a->x ? a->x->fib : NULL;
	if (!f)
		return;
	a->x->fib = NULL;
	struct ura__fibsys *fs = sys->fib;
	atomic_fetch_sub_explicit(&fs->live, 1, memory_order_relaxed);
#ifdef URA__TSAN
	__tsan_destroy_fiber(f->tsan_fiber);
#endif
#ifdef URA__ASAN
	/* The dropped frames' redzones would poison the next body's. */
	__asan_unpoison_memory_region(f->map + page_size(), f->map_len - page_size());
#endif
	pthread_mutex_lock(&fs->lock);
	if (fs->npool < sys->stack_pool) {
		f->next = fs->pool;
		fs->pool = f;
		fs->npool++;
		f = NULL;
	}
	pthread_mutex_unlock(&fs->lock);
	if (f)
		unmap_stack(fs, f);
}

void ura__fibers_fini(ura_system *sys)
{
	struct ura__fibsys *fs = sys->fib;
	if (!fs)
		return;
	while (fs->pool) {
		struct ura__fiber *f = fs->pool;
		fs->pool = f->next;
		unmap_stack(fs, f);
	}
	pthread_mutex_destroy(&fs->lock);
	free(fs);
	sys->fib = NULL;
}

void ura__fibers_stats(ura_system *sys, uint64_t *live, uint64_t *mapped, uint64_t *pooled)
{
	struct ura__fibsys *fs = __atomic_load_n(&sys->fib, __ATOMIC_ACQUIRE);
	*live = *mapped = *pooled = 0;
	if (!fs)
		return;
	*live = atomic_load_explicit(&fs->live, memory_order_relaxed);
	*mapped = atomic_load_explicit(&fs->mapped, memory_order_relaxed);
	pthread_mutex_lock(&fs->lock);
	*pooled = fs->npool;
	pthread_mutex_unlock(&fs->lock);
}

/* ---- the switch -------------------------------------------------------- */

/* Worker side: runs the body until it switches back; returns the body
 * that did: f, or one that f (or a successor) handed the worker over to. */
static struct ura__fiber *switch_in(struct ura__fiber *f)
{
#ifdef URA__TSAN
	f->tsan_ret = __tsan_get_current_fiber();
	__tsan_switch_to_fiber(f->tsan_fiber, 0);
#endif
#ifdef URA__ASAN
	void *fake = NULL;
	__sanitizer_start_switch_fiber(&fake, f->map + page_size(), f->map_len - page_size());
#endif
	struct ura__fiber *back = ura__ctx_switch(&f->ret_sp, f->sp, NULL);
#ifdef URA__ASAN
	__sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
	return back;
}

/* Body side, first thing after a switch back in. prev: the body that
 * handed us the worker (handoff), whose turn is ours to end now that
 * nothing runs on its stack any more; NULL: the worker switched us in. */
static inline void resumed(struct ura__fiber *f, struct ura__fiber *prev)
{
#ifdef URA__ASAN
	const void *lo;
	size_t size;
	__sanitizer_finish_switch_fiber(f->asan_fake, &lo, &size);
	if (!prev) { /* else lo is prev's stack; ret_lo came with the worker */
		f->ret_lo = lo;
		f->ret_size = size;
	}
#endif
	f->status = F_RUN;
	if (prev) {
		/* As ura__fiber_turn ends the turn of a body that waits. Its
		 * token is ours until the CAS gives it up: nothing of prev's
		 * is read after. */
		struct ura__actor *pa = prev->cx.a;
		if (!ura__mb_mark_idle(&pa->mb))
			ura__schedule_back(prev->cx.w, pa);
	}
}

/* The end of the body's stint on a worker, before every switch away from
 * it (switch_out, handoff), as a turn's end: the counted messages of a
 * bounded mailbox that it took go back (the depth goes down: muted
 * senders and waiting threads may go on), so that a body that waits, is
 * taken over or ends never keeps a bounded mailbox full (the depth is
 * never reset, not even by a stop: core/bound.h); and a metered class's
 * counts of the stint go to the class and the actor's record. */
static inline void stint_end(struct ura__fiber *f)
{
	struct ura__worker *w = f->cx.w;
	if (ura__unlikely(f->bpn)) {
		ura__bp_taken(w->sys, w, f->bp, f->bpn);
		f->bpn = 0;
	}
	if (ura__unlikely(f->mx.cs != NULL)) {
		ura__mx_end(w, f->cx.a, &f->mx, f->handled);
		f->mx.cs = NULL;
	}
}

/* Body side: back to the worker; returns when switched in again (never
 * for F_DONE). noinline: what calls it must not keep a thread-local
 * address across it (the body may wake on another thread). */
static __attribute__((noinline)) void switch_out(struct ura__fiber *f, unsigned status)
{
	stint_end(f);
	f->status = status;
#ifdef URA__TSAN
	__tsan_switch_to_fiber(f->tsan_ret, 0);
#endif
#ifdef URA__ASAN
	__sanitizer_start_switch_fiber(status == F_DONE ? NULL : &f->asan_fake, f->ret_lo,
				       f->ret_size);
#endif
	struct ura__fiber *prev = ura__ctx_switch(&f->sp, f->ret_sp, f);
	resumed(f, prev);
}

static __attribute__((noreturn)) void fiber_exit(struct ura__fiber *f)
{
	switch_out(f, F_DONE);
	__builtin_unreachable();
}

static void fiber_main(void *arg)
{
	struct ura__fiber *f = arg;
#ifdef URA__ASAN
	__sanitizer_finish_switch_fiber(NULL, &f->ret_lo, &f->ret_size);
#endif
	f->status = F_RUN;
	struct ura__actor *a = f->cx.a;
	a->cls->body(&f->cx, a->state);
	fiber_exit(f);
}

/* A body's turn starts on w (w holds its token). */
static inline void fiber_begin(struct ura__worker *w, struct ura__fiber *f)
{
	struct ura__actor *a = f->cx.a;
	atomic_store_explicit(&a->last_worker, (uint16_t)w->id, memory_order_relaxed);
	ura__inc(&w->st.turns);
	ura__inc(&w->st.fiber_switches);
	f->cx.w = w;
	f->cx.turn = ura__ld(&w->st.turns);
	f->slice = 0;
	f->same = 0;
	w->ph.cur = (uint8_t)(URA__MF_SNAPD | (a->snap_ph ? URA__MF_PH : 0));
	if (ura__unlikely(ura__metered(a->cls))) {
		ura__mx_begin(w->sys, w, a->cls, &f->mx);
		f->handled = 0;
	}
}

#ifndef URA_DETERMINISTIC
/* Out of line: the thread-local's address is taken on this thread, before
 * the caller switches (a body may resume on another). */
static __attribute__((noinline)) void set_cur_fiber(struct ura__fiber *f)
{
	cur_fiber = f;
}
#endif

/*
 * Handoff. A body whose receive finds nothing to take would switch back
 * to the worker, which would end its turn, look at its sources, and pick
 * the actor in its next slot: in a pingpong of two bodies, the other one,
 * which the message just sent woke. When the pick would take a waiting
 * body from the slot now, the body switches to it directly instead: one
 * switch per message instead of two, and no pass of the worker's loop.
 * The woken body ends the first one's turn (resumed: the token is given up
 * only once nothing runs on that stack). What the loop would do between
 * the two turns is respected or the handoff is not made: the pick's
 * fairness (the inject queue's tick, the next slot's streak, the
 * overflow), cross-node batches and demonitors to hand over (they are the
 * worker's end of a turn), a mute; and the worker's sources wait for at
 * most a batch of handoffs (sys->batch), as they wait for a turn that
 * takes a batch. Not in the deterministic build, whose scheduler picks
 * each turn itself. 0: not made (the caller switches out).
 */
static __attribute__((noinline)) int handoff(struct ura__fiber *f)
{
#ifdef URA_DETERMINISTIC
	(void)f;
	return 0;
#else
	struct ura__worker *w = f->cx.w;
	struct ura__actor *a = f->cx.a;
	if (f->chain >= w->sys->batch || !ura__pick_takes_next(w) || w->outbox_dirty ||
	    ura__unlikely(w->mute_on) || ura__unlikely(ura__sig_dem_pending(a)))
		return 0;
	/* relaxed (both), as ura__pick's: only this thread fills the slot,
	 * and the actor in it is ours (we scheduled it), nothing to acquire;
	 * the exchange races a thief's CAS (core/sched.c, steal_next), and
	 * one of the two gets the actor. */
	if (!atomic_load_explicit(&w->next, memory_order_relaxed))
		return 0;
	struct ura__actor *b = atomic_exchange_explicit(&w->next, NULL, memory_order_relaxed);
	if (!b)
		return 0;
	struct ura__fiber *g = b->x ? b->x->fib : NULL;
	if (!g || b->state_kind != URA__A_ALIVE || g->status != F_WAIT) {
		/* Not a waiting body: back in the slot, which we emptied and
		 * only we fill, for the worker's pick. release: as
		 * ura__schedule's store, for a thief's acquire CAS. */
		atomic_store_explicit(&w->next, b, memory_order_release);
		return 0;
	}
	ura__pick_took_next(w);
	stint_end(f);
	/* f's turn ends as ura__fiber_turn ends it (the token: in resumed). */
	ura__phase_recv(&w->ph, a->snap_ph, f->same);
	fiber_begin(w, g);
	g->chain = f->chain + 1;
	g->ret_sp = f->ret_sp; /* g switches out to where f would have */
	set_cur_fiber(g);
	f->status = F_WAIT;
#ifdef URA__TSAN
	g->tsan_ret = f->tsan_ret;
	__tsan_switch_to_fiber(g->tsan_fiber, 0);
#endif
#ifdef URA__ASAN
	g->ret_lo = f->ret_lo;
	g->ret_size = f->ret_size;
	__sanitizer_start_switch_fiber(&f->asan_fake, g->map + page_size(),
				       g->map_len - page_size());
#endif
	struct ura__fiber *prev = ura__ctx_switch(&f->sp, g->sp, f);
	resumed(f, prev);
	return 1;
#endif
}

void ura__fiber_turn(struct ura__worker *w, struct ura__actor *a)
{
	ura_system *sys = w->sys;
	struct ura__fiber *f = a->x->fib;
	if (f->status == F_NEW)
		ura__inc(&w->st.received); /* the start spawn counted as sent */
	alt_ensure();
	fiber_begin(w, f);
	f->chain = 0;
	cur_fiber = f;
	/* What comes back may be another body: f handed over (handoff). */
	f = switch_in(f);
	a = f->cx.a;
	cur_fiber = NULL;
	ura__phase_recv(&w->ph, a->snap_ph, f->same);
	if (ura__unlikely(ura__sig_dem_pending(a)) && f->status != F_DONE)
		ura__sig_dem_flush(sys, w, a, ura__self_ref(a)); /* F_DONE: the stop's */
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	/* A send met a full URA_FULL_MUTE (or REFUSE_MUTE) mailbox: the
	 * body, which let go of the worker at its next receive (next_msg),
	 * is muted as an event-based sender is at the end of its handler;
	 * the receiver's mute list holds the token now, and the receive goes
	 * on when the body runs again. A body that ended is not muted. */
	if (ura__unlikely(w->mute_on)) {
		if (f->status == F_DONE)
			w->mute_on = NULL;
		else if (ura__bp_mute(sys, w, a))
			return;
	}
	if (f->status == F_DONE) {
		/* Back on the worker's stack: the body's can go. */
		w->turn_ends = 1; /* core/core.h */
		ura__die(sys, w, a, 1, &f->cx.why);
		w->turn_ends = 0;
		if (!ura__mb_mark_idle(&a->mb))
			ura__schedule_back(w, a); /* dead letters, in a plain turn */
		return;
	}
	if (f->status == F_WAIT && ura__mb_mark_idle(&a->mb))
		return;
	ura__schedule_back(w, a);
}

/* ---- the receive ------------------------------------------------------- */

/* What a wait takes: a case of a behavior, or one I/O completion. */
struct want {
	const ura_behavior *b;
	ura_io op;
	const ura_case *c;        /* the case that matched */
};

static inline __attribute__((always_inline)) int wanted(struct ura__fiber *f, struct want *wt, struct ura_msg *m)
{
	if (!wt->b)
		return m->kind == URA__MK_IO && ura_io_id(m) == wt->op;
	for (uint32_t i = 0; i < wt->b->ncases; i++)
		if (ura__case_matches(&wt->b->cases[i], &f->cx, m)) {
			wt->c = &wt->b->cases[i];
			return 1;
		}
	return 0;
}

/* A message leaves the mailbox's tail: freed, or (kept) into the stash. */
static void retire(struct ura__fiber *f, struct ura_msg *r)
{
	struct ura__actor *a = f->cx.a;
	struct ura__worker *w = f->cx.w;
	if (r == (struct ura_msg *)&a->stub)
		return;
	if (r == f->kept)
		f->kept = NULL;
	if (r->flags & URA__MF_STASH) {
		if (ura__actor_stash_append(w, a, r) == 0)
			return;
		ura__request_orphan(w->sys, w, a, r, URA_NOMEM, (ura_value){ 0 });
	}
	ura__msg_free(&w->pool, r);
}

/* The next message a receive may take, or NULL when the mailbox is empty.
 * What is the runtime's own (answers to requests, signals) is acted on
 * here, as a turn does; a stop it brings ends the body. Reads w afresh:
 * the body may have moved since the last call. */
static struct ura_msg *next_msg(struct ura__fiber *f)
{
	struct ura__actor *a = f->cx.a;
	struct ura_msg *m, *r;
	for (;;) {
		struct ura__worker *w = f->cx.w;
		ura_system *sys = w->sys;
		if (f->slice >= sys->batch || ura__unlikely(w->mute_on)) {
			/* A batch taken: others get the worker (the turn's rule).
			 * Or a send of this body met a full URA_FULL_MUTE (or
			 * REFUSE_MUTE) mailbox: a receive is where an
			 * event-based sender's handler would have ended, so the
			 * body lets go of the worker here, to be muted
			 * (ura__fiber_turn). */
			switch_out(f, F_MORE);
			continue;
		}
		if (!(m = ura__mb_pop(&a->mb, &r)))
			return NULL;
		retire(f, r);
		f->slice++;
		ura__inc(&w->st.received);
		if (ura__unlikely(m->flags & URA__MF_WAIT))
			ura__mx_waited(f->mx.cs, m); /* its mailbox wait, as a turn's pop */
		unsigned aph = a->snap_ph ? URA__MF_PH : 0;
		int drop = 0;
		/* Counted in a bounded mailbox's depth, as in a turn: given
		 * back by stint_end; DROP_OLDEST may owe this one as a drop. */
		if (ura__unlikely(m->flags & URA__MF_BP))
			drop = ura__bp_took(sys, a->idx, &f->bp, &f->bpn);
		if (ura__likely((m->flags & (URA__MF_PH | URA__MF_POKE)) == aph)) {
			f->same++;
		} else {
			int poke = sys->hooks.phase_msg ? sys->hooks.phase_msg(w, a, m, &f->same) : 0;
			w->ph.cur = (uint8_t)(URA__MF_SNAPD | (a->snap_ph ? URA__MF_PH : 0));
			if (poke)
				continue;
		}
		if (ura__unlikely(drop)) {
			/* DROP_OLDEST: this one goes so that a newer one could
			 * be accepted; a request that was sent still ends. */
			if (m->kind == URA__MK_REQUEST)
				ura__request_orphan(sys, w, a, m, URA_DROPPED_REASON,
						    (ura_value){ 0 });
			continue;
		}
		if (ura__unlikely(m->to_gen != ura__own_gen(a))) {
			if (m->kind != URA__MK_PLAIN)
				ura__sig_dead_letter(w, a, m);
			ura__inc(&w->st.dead_letters);
			ura__mx_dead(w, a);
			continue;
		}
		f->cx.m = m;
		f->cx.req_data = NULL;
		switch (m->kind) {
		case URA__MK_PLAIN:
		case URA__MK_REQUEST:
		case URA__MK_TIMEOUT:
			return m;
		case URA__MK_IO:
			ura__io_untrack(a, m);
			return m;
		case URA__MK_RESPONSE:
		case URA__MK_ERROR:
		case URA__MK_REQ_TIMEOUT:
			f->busy++;
			if (ura__request_done(&f->cx, m))
				f->handled += f->mx.cs != NULL; /* a continuation ran */
			else if (m->kind != URA__MK_REQ_TIMEOUT) {
				ura__inc(&w->st.unmatched);
				ura__mx_unmatched(w, a, 1);
			}
			f->busy--;
			break;
		default: {
			/* A DOWN, or a trapped EXIT: for a case. The EXIT
			 * comes in its own block (actor/signal.h), which the
			 * taker owns: see f->detached. */
			struct ura_msg *d = ura__sig_recv(&f->cx, m);
			if (!d)
				break;
			if (d != m) {
				f->detached = d;
				f->cx.m = d;
			}
			return d;
		}
		}
		if (a->stopping)
			fiber_exit(f);
	}
}

/* Runs the matched case of a receive on m (the current message). */
static void run_case(struct ura__fiber *f, const ura_case *c, struct ura_msg *m)
{
	ura_ctx *cx = &f->cx;
	cx->m = m;
	cx->req_data = NULL;
	f->busy++;
	/* A metered class: counted, and 1 in 2^shift timed (the turn's
	 * sampling, actor/turn.c). The stint may end inside the case (it
	 * waits in an I/O call or a request): what is timed then goes with
	 * the stint the case ends in. */
	uint64_t t0 = 0;
	if (ura__unlikely(f->mx.cs != NULL)) {
		f->handled++;
		struct ura__worker *w = cx->w;
		if (ura__unlikely(!--w->mx->left)) {
			w->mx->left = w->mx->mask + 1;
			t0 = ura__now_ns();
		}
	}
	if (m->kind == URA__MK_REQUEST) {
		cx->req_from = m->from;
		cx->req_id = m->req;
		cx->req_open = 1;
		cx->req_promised = 0;
		c->fn(cx, m);
		ura__request_settle(cx, m, 1);
		cx->req_open = 0;
	} else {
		c->fn(cx, m);
	}
	if (ura__unlikely(t0) && f->mx.cs) {
		uint64_t dt = ura__now_ns() - t0;
		ura__hist_add(&f->mx.cs->handler, dt);
		ura__mx_timed(cx->sys, cx->a, dt);
	}
	f->busy--;
	cx->m = NULL;
}

/* Takes what wt wants into *out, from the kept messages first (oldest
 * first), then from the mailbox, waiting up to timeout_ns. 1: taken (a
 * kept one is unlinked: *unlinked set, the caller frees it); 0: timed out
 * (*out: the timeout message, or NULL). */
static inline __attribute__((always_inline)) int take(struct ura__fiber *f, struct want *wt, uint64_t timeout_ns,
		struct ura_msg **out, int *unlinked)
{
	struct ura__actor *a = f->cx.a;
	struct ura__actor_x *x = a->x;
	*unlinked = 0;
	*out = NULL;
	for (struct ura_msg *m = x->stash, *prev = NULL; m;
	     prev = m, m = atomic_load_explicit(&m->next, memory_order_relaxed)) {
		if (!wanted(f, wt, m))
			continue;
		struct ura_msg *n = atomic_load_explicit(&m->next, memory_order_relaxed);
		if (prev)
			atomic_store_explicit(&prev->next, n, memory_order_relaxed);
		else
			x->stash = n;
		if (x->stash_tail == m)
			x->stash_tail = prev;
		*unlinked = 1;
		*out = m;
		return 1;
	}
	if (f->kept && wanted(f, wt, f->kept)) {
		struct ura_msg *m = f->kept;
		m->flags &= (uint8_t)~URA__MF_STASH; /* the next pop frees it */
		f->kept = NULL;
		*out = m;
		return 1;
	}
	uint32_t seq = 0;
	int armed = 0;
	for (;;) {
		struct ura_msg *m = next_msg(f);
		if (!m) {
			if (timeout_ns == 0)
				return 0;
			if (!armed && timeout_ns != URA_FOREVER) {
				struct ura__worker *w = f->cx.w;
				ura_ref self = ura__self_ref(a);
				struct ura__actor *ta = NULL;
				struct ura_msg *tm = NULL;
				seq = ++x->rt_seq;
				uint64_t d = timeout_ns > URA_MAX_DELAY ? URA_MAX_DELAY : timeout_ns;
				if (ura__msg_make(w->sys, w, self, self, URA_TIMEOUT, NULL, 0,
						  URA__MK_TIMEOUT, seq, &ta, &tm) == 0) {
					ura_timer h = ura__timer_arm(w->sys, w, self, d, tm);
					if (h > 0)
						x->rt = h;
					else
						ura__msg_free(&w->pool, tm);
				}
				armed = 1;
				if (!x->rt)
					return 0; /* no timer: better early than never */
			}
			if (!handoff(f))
				switch_out(f, F_WAIT);
			continue;
		}
		if (m->kind == URA__MK_TIMEOUT) {
			if (armed && m->req == seq) {
				x->rt = 0;
				*out = m;
				return 0;
			}
			continue; /* an earlier receive's, which lost its race */
		}
		int detached = m == f->detached;
		f->detached = NULL;
		if (wanted(f, wt, m)) {
			if (armed && x->rt) {
				ura__timer_cancel(f->cx.w->sys, f->cx.w, x->rt);
				x->rt = 0;
			}
			*unlinked = detached; /* the caller frees it */
			*out = m;
			return 1;
		}
		m->flags |= URA__MF_STASH;
		if (detached)
			retire(f, m); /* after the kept one, which its pop retired */
		else
			f->kept = m;
	}
}

/* The fiber whose body (or a handler its receive runs) calls, or NULL. */
static struct ura__fiber *calling_fiber(ura_ctx *cx)
{
	if (ura__ctx_bad(cx) || !ura__is_fiber(cx->a))
		return NULL;
	struct ura__fiber *f = cx->a->x->fib;
	/* An init callback of the class has the actor but not the stack. */
	return cx == &f->cx && cur_fiber == f && !f->busy ? f : NULL;
}

URA_API int ura_receive(ura_ctx *cx, const ura_behavior *b, uint64_t timeout_ns)
{
	struct ura__fiber *f = calling_fiber(cx);
	/* A body receives with the same behavior again and again: checked
	 * once while it stays the same, as ura__behavior_ok's own cache
	 * keeps a checked behavior by its address. */
	if (!f || !b || (b != f->beh_ok && ura__behavior_ok(b) < 0))
		return -EINVAL;
	f->beh_ok = b;
	struct want wt = { .b = b };
	struct ura_msg *m;
	int unlinked, rc = 0;
	if (take(f, &wt, timeout_ns, &m, &unlinked)) {
		run_case(f, wt.c, m);
		if (unlinked)
			ura__msg_free(&f->cx.w->pool, m);
	} else {
		rc = -ETIMEDOUT;
		if (b->on_timeout) {
			/* Polled, or no timer: a timeout message of our own. */
			struct ura_msg tm = { .tag = URA_TIMEOUT, .kind = URA__MK_TIMEOUT };
			if (!m)
				m = &tm;
			cx->m = m;
			f->busy++;
			b->on_timeout(cx, m);
			f->busy--;
			cx->m = NULL;
		}
	}
	if (f->cx.a->stopping)
		fiber_exit(f);
	return rc;
}

#define IOCALL_TAG URA_ATOM("_iocall")

URA_API int64_t ura_io_call(ura_ctx *cx, const ura_io_req *r, void *buf, size_t cap)
{
	struct ura__fiber *f = calling_fiber(cx);
	if (!f || !r || (r->op == URA_IO_ACCEPT && (r->flags & URA_IO_MULTISHOT)))
		return -EINVAL;
	int reads = r->op == URA_IO_READ || r->op == URA_IO_RECV;
	if (reads && !buf && cap)
		return -EINVAL;
	ura_io op = ura_io_submit(cx, IOCALL_TAG, r);
	if (op < 0)
		return op;
	struct want wt = { .op = op };
	struct ura_msg *m;
	int unlinked;
	take(f, &wt, URA_FOREVER, &m, &unlinked);
	int64_t res = ura_arg_i64(m, 0);
	if (reads && res > 0) {
		size_t len = 0;
		const void *data = ura_arg_bytes(m, 1, &len);
		size_t n = len < cap ? len : cap;
		if (n)
			memcpy(buf, data, n);
		res = (int64_t)n;
	}
	if (unlinked)
		ura__msg_free(&f->cx.w->pool, m);
	cx->m = NULL;
	return res;
}
