/* SPDX-License-Identifier: MIT */
/*
 * Node-local pools of message blocks (msg/msg.h): one reservation, a slice
 * per worker, blocks returned to their owner in batches.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <numaif.h>

#include "msg/msg.h"

static const uint32_t class_size[URA__POOL_CLASSES] = { 64, 128, 256, 512, 1024, 2048 };

static inline unsigned size_class(size_t size)
{
	if (size <= 64)
		return 0;
	if (size > 2048)
		return URA__POOL_BIG;
	/* 65..128 -> 1, 129..256 -> 2, ... */
	return (unsigned)(64 - __builtin_clzll((uint64_t)(size - 1))) - 6;
}

/* ---- the arena --------------------------------------------------------- */

/* Linux 5.14 (uapi asm-generic/mman-common.h); Debian 12's headers have
 * it, older ones may not. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/*
 * A pool that outgrows its first FILL_CHUNK of a class has its next pages
 * populated a chunk at a time, in one madvise, instead of one fault per
 * page as the bump pointer reaches them. A flood of messages that outruns
 * its receiver (20 sender threads into one actor: 18k faults for 77 MB)
 * spent 30% of its CPU in faults on this VM, where a fault costs about
 * 11 us and a page populated in a chunk of 16 about 6 (kernel-notes/
 * memory.md). The first chunk is faulted as before, so a program that
 * sends little keeps its few pages.
 */
#define FILL_CHUNK ((size_t)64 << 10)

/* 1 while MADV_POPULATE_WRITE works here, 0 once it failed with EINVAL
 * (a kernel before 5.14). relaxed: every thread that races the first
 * failure finds the same answer. */
static _Atomic int populate_ok = 1;

static void fill_ahead(struct ura__pool *p, unsigned c)
{
	char *from = p->filled[c];
	size_t len = (size_t)(p->end[c] - from) < FILL_CHUNK ? (size_t)(p->end[c] - from)
							      : FILL_CHUNK;
	p->filled[c] = from + len;
	if (!atomic_load_explicit(&populate_ok, memory_order_relaxed))
		return;
	/* Any other failure (ENOMEM) leaves the pages to their faults, as
	 * without the call. */
	int e = errno;
	if (madvise(from, len, MADV_POPULATE_WRITE) < 0 && errno == EINVAL)
		atomic_store_explicit(&populate_ok, 0, memory_order_relaxed);
	errno = e;
}

/*
 * Per pool and class: 1/8 of the pool's slice (6 classes used). A class
 * whose slice is used up takes its blocks from malloc, one fault a page
 * and 16 bytes a block more. With 256 MiB a slice (32 MiB a class),
 * 20 sender actors queueing 2M messages on one worker overflowed it after
 * 512k: 27.7k faults, 45% of the run's CPU in the kernel, 2.9M messages/s
 * (bench/mailbox --actors); with 2 GiB, 266 faults and 6.0M. Address space
 * costs nothing untouched, so the slices are as large as the process may
 * map: 2 GiB each where it can (260 GiB of address space for 2 workers
 * and the 128 outside pools), else 256 MiB (an address-space limit, a
 * sanitizer's or valgrind's layout, strict overcommit), else none.
 */
static const unsigned slice_shifts[] = { 31, 28 };

int ura__arena_init(struct ura__arena *a, unsigned workers)
{
	memset(a, 0, sizeof *a);
	size_t per = 0;
	void *base = MAP_FAILED;
	int err = ENOMEM;
	unsigned shift = 0;
	for (size_t i = 0; base == MAP_FAILED && i < sizeof slice_shifts / sizeof *slice_shifts;
	     i++) {
		shift = slice_shifts[i];
		per = (size_t)1 << shift;
		/* Address space only: MAP_NORESERVE commits nothing until a
		 * worker touches a page, and that first touch places it on
		 * its node. */
		base = mmap(NULL, per * workers, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (base == MAP_FAILED)
			err = errno;
	}
	if (base == MAP_FAILED)
		return -err;
	a->inbox = aligned_alloc(URA__CACHELINE, workers * sizeof *a->inbox);
	if (!a->inbox) {
		munmap(base, per * workers);
		return -ENOMEM;
	}
	memset(a->inbox, 0, workers * sizeof *a->inbox);
	a->base = base;
	a->per = per;
	a->shift = shift;
	a->cshift = shift - 3;
	a->n = workers;
	return 0;
}

void ura__arena_fini(struct ura__arena *a)
{
	if (a->base)
		munmap(a->base, a->per * a->n);
	free(a->inbox);
	memset(a, 0, sizeof *a);
}

int ura__arena_bind(struct ura__arena *a, unsigned w, int node)
{
	if (node < 0 || node >= (int)(8 * sizeof(unsigned long)))
		return -EINVAL;
	unsigned long mask = 1ul << node;
	/* MPOL_PREFERRED, not BIND: a full node spills over instead of
	 * failing an allocation. */
	if (mbind(a->base + (size_t)w * a->per, a->per, MPOL_PREFERRED, &mask,
		  8 * sizeof mask, 0) < 0)
		return -errno;
	return 0;
}

/* Owner worker of p, or -1 when p is not an arena block. */
static inline int arena_owner(const struct ura__arena *a, const void *p)
{
	if (!a || (const char *)p < a->base)
		return -1;
	size_t off = (size_t)((const char *)p - a->base);
	size_t w = off >> a->shift;
	return w < a->n ? (int)w : -1;
}

static inline unsigned arena_class(const struct ura__arena *a, const void *p)
{
	size_t off = (size_t)((const char *)p - a->base) & (a->per - 1);
	return (unsigned)(off >> a->cshift);
}

int ura__pool_init(struct ura__pool *p, struct ura__arena *a, unsigned owner)
{
	memset(p, 0, sizeof *p);
	if (!a)
		return 0;
	p->ret = ura__calloc(a->n, sizeof *p->ret);
	if (!p->ret)
		return -ENOMEM;
	p->arena = a;
	p->owner = owner;
	char *slice = a->base + (size_t)owner * a->per;
	for (unsigned c = 0; c < URA__POOL_CLASSES; c++) {
		p->bump[c] = slice + ((size_t)c << a->cshift);
		p->end[c] = p->bump[c] + ((size_t)1 << a->cshift);
		p->filled[c] = p->bump[c] + FILL_CHUNK;
	}
	return 0;
}

static void give_back(struct ura__pool *p, unsigned owner)
{
	struct ura__pool_ret *r = &p->ret[owner];
	_Atomic(void *) *top = &p->arena->inbox[owner].head;
	void *old = atomic_load_explicit(top, memory_order_relaxed);
	do {
		*(void **)r->tail = old;
		/* release: the owner's exchange (acquire) sees the links. */
	} while (!atomic_compare_exchange_weak_explicit(top, &old, r->head, memory_order_release,
						       memory_order_relaxed));
	r->head = r->tail = NULL;
	r->n = 0;
	p->ret_dirty--;
}

void ura__pool_flush(struct ura__pool *p)
{
	for (unsigned w = 0; p->ret_dirty && p->arena && w < p->arena->n; w++)
		if (p->ret[w].head)
			give_back(p, w);
}

/*
 * The next block of class c from what other threads gave back, or NULL.
 * The chain is taken whole but sorted one block at a time, as blocks are
 * wanted: sorting it all at once touched every block (a cache miss each,
 * for blocks their receivers freed on other cores) and then touched each
 * again when it was popped, by which time a long chain had left the
 * cache. Here each block costs one touch, and that one is prefetched a
 * block ahead, while the caller fills the block it got: a thread that
 * only sends (fjthrput's main thread) spent 64% of its allocation in
 * the sort and 35% in the pop (bench/README.md).
 */
static void *take_returned(struct ura__pool *p, unsigned c)
{
	for (;;) {
		void *b = p->pend;
		if (!b) {
			/* relaxed: a peek that spares the exchange its RMW on
			 * an empty inbox; acquire on the exchange pairs with
			 * the release CAS in give_back. */
			if (!atomic_load_explicit(&p->arena->inbox[p->owner].head,
						  memory_order_relaxed))
				return NULL;
			b = atomic_exchange_explicit(&p->arena->inbox[p->owner].head, NULL,
						     memory_order_acquire);
		}
		p->pend = *(void **)b;
		__builtin_prefetch(p->pend, 1);
		unsigned bc = arena_class(p->arena, b);
		if (bc == c)
			return b;
		*(void **)b = p->free[bc];
		p->free[bc] = b;
		p->count[bc]++;
	}
}

/* The pool's free list is empty: what was given back, or fresh blocks. */
static __attribute__((noinline)) void *pool_refill(struct ura__pool *pool, unsigned c)
{
	if (pool->arena) {
		void *p = take_returned(pool, c);
		if (p)
			return p;
		if (pool->bump[c] + class_size[c] <= pool->end[c]) {
			p = pool->bump[c];
			if (ura__unlikely((char *)p >= pool->filled[c]))
				fill_ahead(pool, c);
			pool->bump[c] += class_size[c];
			return p;
		}
	}
	return ura__malloc(class_size[c]); /* this class's slice is used up */
}

static inline __attribute__((always_inline)) void *pool_get(struct ura__pool *pool,
							    size_t size, unsigned c)
{
	if (c == URA__POOL_BIG || !pool)
		return ura__malloc(c == URA__POOL_BIG ? size : class_size[c]);
	void *p = pool->free[c];
	if (ura__unlikely(!p))
		return pool_refill(pool, c);
	pool->free[c] = *(void **)p;
	pool->count[c]--;
	return p;
}

void *ura__pool_get(struct ura__pool *pool, size_t size)
{
	return pool_get(pool, size, size_class(size));
}

void ura__pool_put(struct ura__pool *pool, void *p, size_t size)
{
	unsigned c = size_class(size);
	if (c == URA__POOL_BIG) {
		free(p);
		return;
	}
	int owner = pool ? arena_owner(pool->arena, p) : -1;
	if (owner < 0) {
		/* A malloc block: from a thread that is not a worker, or a
		 * class slice that was full. (Without a pool, callers know the
		 * block is not an arena block; destroy uses ura__arena_drop.) */
		if (pool && pool->count[c] < URA__POOL_KEEP) {
			*(void **)p = pool->free[c];
			pool->free[c] = p;
			pool->count[c]++;
		} else {
			free(p);
		}
		return;
	}
	if ((unsigned)owner == pool->owner) {
		*(void **)p = pool->free[c];
		pool->free[c] = p;
		pool->count[c]++;
		return;
	}
	/* Another worker's block: home in a batch. */
	struct ura__pool_ret *r = &pool->ret[owner];
	*(void **)p = r->head;
	r->head = p;
	if (!r->tail) {
		r->tail = p;
		pool->ret_dirty++;
	}
	if (++r->n >= URA__POOL_RETURN)
		give_back(pool, (unsigned)owner);
}

void ura__arena_drop(const struct ura__arena *a, void *p, int is_msg)
{
	if (is_msg && ((struct ura_msg *)p)->cls == URA__POOL_BIG) {
		free(p);
		return;
	}
	if (arena_owner(a, p) < 0)
		free(p);
	/* else: an arena block, gone with the arena */
}

void ura__pool_drain(struct ura__pool *pool)
{
	/* Arena blocks go with the arena; only malloc blocks are freed. */
	for (unsigned c = 0; c < URA__POOL_CLASSES; c++) {
		while (pool->free[c]) {
			void *p = pool->free[c];
			pool->free[c] = *(void **)p;
			if (arena_owner(pool->arena, p) < 0)
				free(p);
		}
		pool->count[c] = 0;
	}
	free(pool->ret);
	pool->ret = NULL;
}

struct ura_msg *ura__msg_alloc(struct ura__pool *pool, size_t size)
{
	unsigned c = size_class(size);
	struct ura_msg *m = pool_get(pool, size, c);
	if (m)
		m->cls = (uint8_t)c;
	return m;
}

void ura__msg_free(struct ura__pool *pool, struct ura_msg *m)
{
	if (m->cls == URA__POOL_BIG) {
		free(m);
		return;
	}
	ura__pool_put(pool, m, class_size[m->cls]);
}

