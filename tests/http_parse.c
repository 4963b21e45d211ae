/* SPDX-License-Identifier: MIT */
/*
 * http_parse: the request-head parser of examples/http_server, alone (no
 * runtime, no sockets). Every prefix of a valid head is "incomplete",
 * garbage is refused at its first wrong byte, and each strictness rule
 * (CRLF only, no obs-fold, one Host, agreeing Content-Lengths, no
 * Transfer-Encoding) gives the status the server sends.
 */
#include "../examples/http_parse.h"

#include "tap.h"

static int parse(const char *s, http_request *rq)
{
	return http_parse(s, strlen(s), 8192, rq);
}

static int status_of(const char *s)
{
	http_request rq;
	return parse(s, &rq);
}

int main(void)
{
	http_request rq;
	const char *get = "GET /kv/x?y=1 HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\n\r\n";

	t_eq(parse(get, &rq), 1, "a GET head parses");
	t_eq(rq.method, HTTP_GET, "its method");
	t_ok(rq.target_len == 9 && !memcmp(rq.target, "/kv/x?y=1", 9), "its target");
	t_eq(rq.minor, 1, "HTTP/1.1");
	t_eq(rq.keep_alive, 1, "1.1 keeps the connection by default");
	t_eq(rq.head_len, strlen(get), "head_len covers the blank line");
	t_eq(rq.has_length, 0, "no Content-Length");

	int bad = 0;
	for (size_t n = 0; n < strlen(get); n++)
		if (http_parse(get, n, 8192, &rq) != HTTP_INCOMPLETE)
			bad++;
	t_eq(bad, 0, "every prefix of a valid head is incomplete, not an error");

	char two[256];
	snprintf(two, sizeof two, "%sPUT /kv/k HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", get);
	t_eq(parse(two, &rq), 1, "pipelined: the first head");
	t_eq(parse(two + rq.head_len, &rq), 1, "pipelined: the second head after head_len");
	t_eq(rq.method, HTTP_PUT, "PUT");
	t_ok(rq.has_length && rq.content_length == 3, "Content-Length 3");

	t_eq(status_of("garbage\r\n\r\n"), 400, "garbage: 400");
	t_eq(status_of("\x16\x03\x01\x02\x00"), 400, "a TLS hello is refused at its first byte");
	t_eq(status_of("GET  / HTTP/1.1\r\n"), 400, "two spaces after the method");
	t_eq(status_of("GET / HTTP/1.1\nHost: a\n\n"), 400, "bare LF line ends");
	t_eq(status_of("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"), 400, "obs-fold");
	t_eq(status_of("GET / HTTP/1.1\r\nHost : a\r\n\r\n"), 400, "space before the colon");
	t_eq(status_of("GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n"), 400, "a control byte in a value");
	t_eq(status_of("GET / HTTP/1.1\r\n\r\n"), 400, "1.1 without Host");
	t_eq(status_of("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"), 400, "two Hosts");
	t_eq(status_of("GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n"), 400, "absolute-form");
	t_eq(status_of("GET / HTTX/1.1\r\n"), 400, "not HTTP");
	t_eq(status_of("GET / HTTP/2.0\r\nHost: a\r\n\r\n"), 505, "HTTP/2.0: 505");
	t_eq(status_of("GET / HTTP/1.1x\r\n"), 400, "junk after the version");

	t_eq(parse("GET / HTTP/1.0\r\n\r\n", &rq), 1, "1.0 without Host is fine");
	t_eq(rq.keep_alive, 0, "1.0 closes by default");
	t_eq(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &rq), 1, "1.0 keep-alive");
	t_eq(rq.keep_alive, 1, "... keeps it");
	t_eq(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, close\r\n\r\n", &rq), 1,
	     "Connection list");
	t_eq(rq.keep_alive, 0, "... with close closes");
	t_eq(parse("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", &rq), 1, "a leading CRLF is skipped");
	t_eq(http_parse("\r", 1, 8192, &rq), HTTP_INCOMPLETE, "half a leading CRLF is incomplete");

	t_eq(parse("PUT /kv/a HTTP/1.1\r\nHost: a\r\nContent-Length: 5  \r\n\r\n", &rq), 1,
	     "OWS after a value is trimmed");
	t_eq(rq.content_length, 5, "Content-Length 5");
	t_eq(parse("PUT /kv/a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n",
		   &rq), 1, "repeated equal Content-Lengths");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
	     400, "Content-Lengths that disagree");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"), 400,
	     "a negative Content-Length");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n"),
	     400, "an overflowing Content-Length");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), 501,
	     "Transfer-Encoding: 501");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		       "Content-Length: 3\r\n\r\n"), 400, "Transfer-Encoding with Content-Length: 400");
	t_eq(parse("PUT /kv/a HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
		   &rq), 1, "Expect: 100-continue");
	t_eq(rq.expect_continue, 1, "... is flagged");
	t_eq(status_of("PUT /kv/a HTTP/1.1\r\nHost: a\r\nExpect: coffee\r\n\r\n"), 417,
	     "another expectation: 417");

	t_eq(parse("POST / HTTP/1.1\r\nHost: a\r\n\r\n", &rq), 1, "POST parses");
	t_eq(rq.method, HTTP_OTHER, "... as a method not allowed here");
	t_eq(parse("get / HTTP/1.1\r\nHost: a\r\n\r\n", &rq), 1, "lower-case get parses");
	t_eq(rq.method, HTTP_UNKNOWN, "... as an unknown method (methods are case-sensitive)");
	t_eq(parse("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", &rq), 1, "HEAD");
	t_eq(rq.method, HTTP_HEAD, "... is HEAD");

	/* The 8 KiB limit: a head of exactly 8192 bytes passes, one more
	 * byte is 431, whether or not its end has arrived. */
	static char big[10000];
	const char *pre = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
	size_t pl = strlen(pre);
	memcpy(big, pre, pl);
	memset(big + pl, 'a', 8192 - pl - 4);
	memcpy(big + 8192 - 4, "\r\n\r\n", 4);
	t_eq(http_parse(big, 8192, 8192, &rq), 1, "a head of exactly 8 KiB");
	t_eq(rq.head_len, 8192, "... all of it");
	memset(big + pl, 'a', 8193 - pl - 4);
	memcpy(big + 8193 - 4, "\r\n\r\n", 4);
	t_eq(http_parse(big, 8193, 8192, &rq), 431, "one byte more: 431");
	t_eq(http_parse(big, 8192, 8192, &rq), 431, "431 before the end of the head arrives");
	t_eq(http_parse(big, 8191, 8192, &rq), HTTP_INCOMPLETE, "under the limit: incomplete");

	t_streq(http_reason(431), "Request Header Fields Too Large", "reason of 431");
	t_streq(http_reason(299), "Unknown", "reason of an unknown status");
	return t_done();
}
