/* SPDX-License-Identifier: MIT */
/*
 * http_parse: a small, strict HTTP/1.x request-head parser for
 * examples/http_server. It knows no sockets and allocates nothing: give it
 * the bytes received so far and it says "need more", "here is a request
 * head", or which status to refuse the request with.
 *
 * Strict where leniency has caused request smuggling: CRLF line ends
 * only, no obs-fold, no whitespace before a header's colon, one Host in
 * HTTP/1.1, Content-Length as plain digits (repeats must agree), and any
 * Transfer-Encoding refused (this server does not do chunked bodies).
 */
#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

enum http_method {
	HTTP_GET = 1,
	HTTP_HEAD,
	HTTP_PUT,
	HTTP_OTHER,   /* a registered method this server does not allow: 405 */
	HTTP_UNKNOWN, /* any other token: 501 */
};

typedef struct http_request {
	int method;             /* enum http_method */
	const char *target;     /* into the buffer; not NUL-terminated */
	size_t target_len;
	int minor;              /* HTTP/1.<minor> (0 or 1) */
	int keep_alive;         /* the connection may carry another request */
	int expect_continue;    /* Expect: 100-continue */
	int has_length;         /* a Content-Length was given */
	uint64_t content_length;
	size_t head_len;        /* bytes up to and including the blank line */
} http_request;

#define HTTP_INCOMPLETE 0

/*
 * Parses the request head at the start of buf[0..len). Returns
 * HTTP_INCOMPLETE when the head is not complete yet (and nothing seen so
 * far is wrong), 1 with *req filled when it is, or the status code to
 * refuse it with: 400 (malformed), 431 (the head would exceed max_head
 * bytes), 501 (Transfer-Encoding), 505 (not HTTP/1.x), 417 (an Expect
 * other than 100-continue). A refused request cannot be framed, so the
 * connection should be closed after the reply.
 */
int http_parse(const char *buf, size_t len, size_t max_head, http_request *req);

/* The reason phrase of a status code ("Not Found"); "Unknown" if none. */
const char *http_reason(int status);

#endif
