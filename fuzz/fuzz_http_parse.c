/* SPDX-License-Identifier: MIT */
/*
 * fuzz_http_parse: the request-head parser of examples/http_server
 * (examples/http_parse.c) on any bytes.
 *
 * The parser keeps no state between calls: a server calls it again with
 * all the bytes received so far. So "incremental" means here that a
 * connection delivering the same bytes in any chunks must see the same
 * requests, and be refused at the same request with the same status. The
 * input is one connection's byte stream, cut into requests as
 * http_server.c does (a head, its Content-Length bytes of body, the next
 * head), and fed three ways: all at once, in chunks whose sizes come from
 * a hash of the input, and one byte at a time for its first bytes; the
 * three must agree. Besides, once a head gets an answer other than
 * "incomplete", every longer prefix must get the same answer (garbage is
 * refused at its first wrong byte, http_parse.h), every answer must be one
 * the header lists, and a parsed head must lie inside the buffer and
 * max_head. Each of these runs twice: with the server's max_head, and with
 * a small one (from the hash) so that 431 is reached too.
 *
 * The bytes given to the parser always end at the end of a heap block, and
 * under ASan the block's unused start is poisoned: a read one byte outside
 * [buf, buf + len) is an error even when more of the input follows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../examples/http_parse.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif
#ifdef FUZZ_ASAN
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SERVER_MAX_HEAD (8u << 10) /* examples/http_server.c's MAX_HEAD */
#define MAX_REQS 64                /* requests followed per connection */
#define BYTEWISE 128               /* bytes fed one at a time (more costs a
                                      parse per byte: 5x slower at 512) */

#define FAIL(...) do {                                                       \
	fprintf(stderr, "fuzz_http_parse: " __VA_ARGS__);                    \
	fputc('\n', stderr);                                                 \
	abort();                                                             \
} while (0)

/* The parser's input: len bytes ending at the end of blk. */
static unsigned char *blk;
static size_t blk_cap;

static int parse_tail(const uint8_t *src, size_t len, size_t max_head,
		      http_request *rq, const char **base)
{
	unsigned char *p = blk + blk_cap - len;
	memmove(p, src, len);
	ASAN_POISON_MEMORY_REGION(blk, blk_cap - len);
	int r = http_parse((const char *)p, len, max_head, rq);
	ASAN_UNPOISON_MEMORY_REGION(blk, blk_cap - len);
	*base = (const char *)p;
	return r;
}

/* A request as the trace compares it: the target as an offset. */
struct req {
	size_t at, target_off;
	http_request rq;
};

struct trace {
	struct req r[MAX_REQS];
	int n;
	int end;        /* 0: input ended inside a head; -1: inside a body;
	                   -2: MAX_REQS reached; else the refusal status */
	size_t end_at;  /* where the last head started */
};

static int is_vchar(unsigned char c) { return c > 0x20 && c < 0x7f; }

static void check_refusal(int r)
{
	if (r != 400 && r != 431 && r != 501 && r != 505 && r != 417)
		FAIL("http_parse returned %d, which http_parse.h does not list", r);
	if (!strcmp(http_reason(r), "Unknown"))
		FAIL("no reason phrase for %d", r);
}

/* What http_parse.h promises about a head it accepted. */
static void check_head(const http_request *rq, const char *base, size_t len, size_t max_head)
{
	if (rq->head_len > len || rq->head_len > max_head)
		FAIL("head_len %zu beyond the %zu bytes given / max_head %zu", rq->head_len,
		     len, max_head);
	if (rq->head_len < 4 || memcmp(base + rq->head_len - 4, "\r\n\r\n", 4))
		FAIL("a head of %zu bytes that does not end with a blank line", rq->head_len);
	if (rq->method < HTTP_GET || rq->method > HTTP_UNKNOWN)
		FAIL("method %d", rq->method);
	if (!rq->target || rq->target < base || rq->target_len == 0 ||
	    rq->target_len > rq->head_len ||
	    (size_t)(rq->target - base) > rq->head_len - rq->target_len)
		FAIL("the target is not inside the head");
	if (rq->target[0] != '/')
		FAIL("a target that is not origin-form");
	for (size_t i = 0; i < rq->target_len; i++)
		if (!is_vchar((unsigned char)rq->target[i]))
			FAIL("byte 0x%02x in the target", (unsigned char)rq->target[i]);
	if (rq->minor < 0 || rq->minor > 9)
		FAIL("HTTP/1.%d", rq->minor);
	if ((rq->keep_alive | rq->expect_continue | rq->has_length) & ~1)
		FAIL("a flag that is neither 0 nor 1");
	if ((!rq->has_length && rq->content_length) || rq->content_length > ((uint64_t)1 << 53))
		FAIL("content_length %llu (has_length %d)",
		     (unsigned long long)rq->content_length, rq->has_length);
}

static int req_eq(const struct req *a, const struct req *b)
{
	return a->at == b->at && a->target_off == b->target_off &&
	       a->rq.method == b->rq.method && a->rq.target_len == b->rq.target_len &&
	       a->rq.minor == b->rq.minor && a->rq.keep_alive == b->rq.keep_alive &&
	       a->rq.expect_continue == b->rq.expect_continue &&
	       a->rq.has_length == b->rq.has_length &&
	       a->rq.content_length == b->rq.content_length &&
	       a->rq.head_len == b->rq.head_len;
}

/* splitmix64: chunk sizes that depend on the input only, so a crash
 * replays. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

enum feed { ALL, CHUNKS, BYTES };

static size_t chunk(enum feed f, size_t have, uint64_t *rs)
{
	if (f == ALL)
		return SIZE_MAX;
	if (f == BYTES && have < BYTEWISE)
		return 1;
	uint64_t r = next_rand(rs);
	/* Mostly small reads, as a slow client's; now and then a big one. */
	return r % 8 == 0 ? 1 + (size_t)(r >> 8) % 4096 : 1 + (size_t)(r >> 8) % 16;
}

/* Longer prefixes of a head that got an answer get the same answer. */
static void check_longer(const uint8_t *d, size_t avail, size_t len, size_t max_head,
			 int r, const struct req *got, uint64_t *rs)
{
	for (int k = 0; k < 3 && len < avail; k++) {
		size_t more = len + 1 + (size_t)(next_rand(rs) % (avail - len));
		if (k == 0)
			more = avail;
		http_request rq;
		const char *base;
		int r2 = parse_tail(d, more, max_head, &rq, &base);
		if (r2 != r)
			FAIL("a %zu-byte prefix gives %d, the %zu-byte one gave %d", more, r2, len, r);
		if (r == 1) {
			struct req x = { got->at, (size_t)(rq.target - base), rq };
			if (!req_eq(&x, got))
				FAIL("a %zu-byte prefix parses differently from the %zu-byte one",
				     more, len);
		}
	}
	if (r == 1) {
		/* Exactly the head is enough, one byte less is not. */
		http_request rq;
		const char *base;
		size_t h = got->rq.head_len;
		if (parse_tail(d, h, max_head, &rq, &base) != 1 || rq.head_len != h)
			FAIL("the head alone (%zu bytes) does not parse as it did", h);
		int r2 = parse_tail(d, h - 1, max_head, &rq, &base);
		if (r2 != HTTP_INCOMPLETE)
			FAIL("the head less its last byte gives %d, not incomplete", r2);
	}
}

static void run(const uint8_t *d, size_t n, size_t max_head, enum feed f, uint64_t seed,
		struct trace *t)
{
	uint64_t rs = seed;
	size_t off = 0, have = 0;
	memset(t, 0, sizeof *t);
	for (;;) {
		if (t->n == MAX_REQS) {
			t->end = -2;
			return;
		}
		http_request rq;
		const char *base;
		int r = parse_tail(d + off, have - off, max_head, &rq, &base);
		if (r == HTTP_INCOMPLETE) {
			if (have == n) {
				t->end = 0;
				t->end_at = off;
				return;
			}
			size_t c = chunk(f, have, &rs);
			have = c > n - have ? n : have + c;
			continue;
		}
		struct req x = { .at = off };
		if (r != 1) {
			check_refusal(r);
			if (f == CHUNKS)
				check_longer(d + off, n - off, have - off, max_head, r, &x, &rs);
			t->end = r;
			t->end_at = off;
			return;
		}
		check_head(&rq, base, have - off, max_head);
		x.target_off = (size_t)(rq.target - base);
		x.rq = rq;
		x.rq.target = NULL;
		if (f == CHUNKS)
			check_longer(d + off, n - off, have - off, max_head, 1, &x, &rs);
		t->r[t->n++] = x;
		/* The body: the server reads Content-Length bytes, whatever
		 * they are, then parses the next head after them. */
		uint64_t need = rq.head_len + rq.content_length;
		if (need > n - off) {
			t->end = -1;
			t->end_at = off;
			return;
		}
		off += (size_t)need;
		if (have < off)
			have = off;
	}
}

static void same(const struct trace *a, const struct trace *b, const char *how, size_t max_head)
{
	int n = a->n < b->n ? a->n : b->n;
	for (int i = 0; i < n; i++)
		if (!req_eq(&a->r[i], &b->r[i]))
			FAIL("max_head %zu: request %d at offset %zu parses differently %s",
			     max_head, i, a->r[i].at, how);
	if (a->n != b->n || a->end != b->end || a->end_at != b->end_at)
		FAIL("max_head %zu: %d requests then %d at %zu all at once, but %d then %d at %zu %s",
		     max_head, a->n, a->end, a->end_at, b->n, b->end, b->end_at, how);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* FNV-1a of the input seeds the chunk sizes and the small max_head. */
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 0x100000001b3u;
	blk_cap = size ? size : 1;
	blk = malloc(blk_cap);
	if (!blk)
		return 0;
	static struct trace all, part;
	size_t heads[2] = { SERVER_MAX_HEAD, 1 + (size_t)(h % 300) };
	for (int k = 0; k < 2; k++) {
		run(data, size, heads[k], ALL, h, &all);
		run(data, size, heads[k], CHUNKS, h, &part);
		same(&all, &part, "in chunks", heads[k]);
		run(data, size, heads[k], BYTES, h, &part);
		same(&all, &part, "byte by byte", heads[k]);
	}
	free(blk);
	blk = NULL;
	return 0;
}
