/* SPDX-License-Identifier: MIT */
/*
 * Every allocation of the library goes through these, so a test build
 * (meson -Dfault_injection=true) can make the n-th one fail and check that
 * each failure path frees what it took. Without the option they are the
 * libc calls themselves.
 */
#ifndef URA_UTIL_ALLOC_H
#define URA_UTIL_ALLOC_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#ifdef URA_FAULT_INJECTION
/* True when the allocation being made must fail (see util/alloc.c). */
int ura__alloc_fail(void);
/* Tests: fail the n-th allocation from now on this thread's count, and
 * every one after it if `sticky`; n 0 turns it off. Returns the number of
 * allocations counted since the last call. */
unsigned long ura__alloc_fail_at(unsigned long n, int sticky);
#define URA__FAIL() ura__alloc_fail()
#else
#define URA__FAIL() 0
#endif

static inline void *ura__malloc(size_t n) { return URA__FAIL() ? NULL : malloc(n); }
static inline void *ura__calloc(size_t k, size_t n) { return URA__FAIL() ? NULL : calloc(k, n); }
static inline void *ura__realloc(void *p, size_t n) { return URA__FAIL() ? NULL : realloc(p, n); }
/* C11 wants the size a multiple of the alignment (a power of two). */
static inline void *ura__aligned_alloc(size_t a, size_t n)
{
	return URA__FAIL() ? NULL : aligned_alloc(a, (n + a - 1) & ~(a - 1));
}
static inline char *ura__strdup(const char *s) { return URA__FAIL() ? NULL : strdup(s); }
/* n bytes of fresh zeroed pages, populated writable in the call
 * (MAP_POPULATE): one call for what would be a fault a page. NULL on
 * failure; ura__unmap gives them back. */
static inline void *ura__map_populated(size_t n)
{
	if (URA__FAIL())
		return NULL;
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
		       -1, 0);
	return p == MAP_FAILED ? NULL : p;
}
static inline void ura__unmap(void *p, size_t n)
{
	if (p)
		munmap(p, n);
}

#endif
