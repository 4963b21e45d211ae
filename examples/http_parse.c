/* SPDX-License-Identifier: MIT */
/*
 * The request-head parser of examples/http_server (see http_parse.h).
 *
 * It walks the bytes once, byte by byte, so that a truncated head is told
 * apart from a malformed one at the first wrong byte: garbage is refused
 * as soon as it arrives, without waiting for a blank line that may never
 * come. Grammar: RFC 9112 sections 2 to 6.
 */
#include "http_parse.h"

#include <string.h>

/* RFC 9110 5.6.2: tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" /
 * "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA */
static int is_tchar(unsigned char c)
{
	if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int is_vchar(unsigned char c) { return c > 0x20 && c < 0x7f; }

/* field-value bytes: VCHAR, SP, HTAB and obs-text (0x80-0xff). */
static int is_field_char(unsigned char c)
{
	return c == ' ' || c == '\t' || (c > 0x20 && c != 0x7f);
}

static int lower(unsigned char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Does b[0..n) equal the lower-case literal s, ignoring case? */
static int ieq(const char *b, size_t n, const char *s)
{
	size_t k = strlen(s);
	if (n != k)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (lower((unsigned char)b[i]) != s[i])
			return 0;
	return 1;
}

static int method_of(const char *b, size_t n)
{
	static const char *const other[] = { "POST", "DELETE", "OPTIONS", "PATCH",
					     "TRACE", "CONNECT" };
	/* Methods are case-sensitive (RFC 9110 9.1): "get" is unknown. */
	if (n == 3 && !memcmp(b, "GET", 3))
		return HTTP_GET;
	if (n == 4 && !memcmp(b, "HEAD", 4))
		return HTTP_HEAD;
	if (n == 3 && !memcmp(b, "PUT", 3))
		return HTTP_PUT;
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
		if (strlen(other[i]) == n && !memcmp(b, other[i], n))
			return HTTP_OTHER;
	return HTTP_UNKNOWN;
}

/* Content-Length = 1*DIGIT; -1 if malformed or beyond 2^53 (no body this
 * server takes comes near it, and it keeps the arithmetic far from
 * overflow). */
static int64_t parse_length(const char *b, size_t n)
{
	int64_t v = 0;
	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (b[i] < '0' || b[i] > '9')
			return -1;
		v = v * 10 + (b[i] - '0');
		if (v > ((int64_t)1 << 53))
			return -1;
	}
	return v;
}

/* Connection is a comma-separated token list ("keep-alive, Upgrade"). */
static void connection_tokens(const char *b, size_t n, int *close, int *keep)
{
	size_t i = 0;
	while (i < n) {
		while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == ','))
			i++;
		size_t t0 = i;
		while (i < n && b[i] != ',' && b[i] != ' ' && b[i] != '\t')
			i++;
		if (ieq(b + t0, i - t0, "close"))
			*close = 1;
		else if (ieq(b + t0, i - t0, "keep-alive"))
			*keep = 1;
	}
}

int http_parse(const char *buf, size_t len, size_t max_head, http_request *req)
{
	const unsigned char *b = (const unsigned char *)buf;
	/* Only the first max_head bytes can belong to an acceptable head;
	 * running out of them is 431, running out of input is "more". */
	size_t n = len < max_head ? len : max_head;
	int more = len >= max_head ? 431 : HTTP_INCOMPLETE;
	size_t i = 0;

#define NEED() do { if (i >= n) return more; } while (0)

	memset(req, 0, sizeof *req);
	/* RFC 9112 2.2: a server SHOULD ignore empty lines before the
	 * request-line (some clients send a CRLF after a POST body). */
	while (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n')
		i += 2;
	if (i + 1 == n && b[i] == '\r')
		return more;

	/* request-line = method SP request-target SP HTTP-version CRLF */
	size_t m0 = i;
	while (i < n && is_tchar(b[i]))
		i++;
	NEED();
	if (b[i] != ' ' || i == m0)
		return 400;
	req->method = method_of(buf + m0, i - m0);
	size_t t0 = ++i;
	while (i < n && is_vchar(b[i]))
		i++;
	NEED();
	if (b[i] != ' ' || i == t0)
		return 400;
	/* origin-form only: this server is nobody's proxy. */
	if (b[t0] != '/')
		return 400;
	req->target = buf + t0;
	req->target_len = i - t0;
	i++;
	for (const char *v = "HTTP/"; *v; v++, i++) {
		NEED();
		if (b[i] != (unsigned char)*v)
			return 400;
	}
	NEED();
	if (b[i] < '0' || b[i] > '9')
		return 400;
	int major = b[i++] - '0';
	NEED();
	if (b[i++] != '.')
		return 400;
	NEED();
	if (b[i] < '0' || b[i] > '9')
		return 400;
	int minor = b[i++] - '0';
	NEED();
	if (b[i++] != '\r')
		return 400;
	NEED();
	if (b[i++] != '\n')
		return 400;
	if (major != 1)
		return 505;
	req->minor = minor;

	/* field-line = field-name ":" OWS field-value OWS CRLF */
	int hosts = 0, te = 0, close = 0, keep = 0, expect_other = 0;
	for (;;) {
		NEED();
		if (b[i] == '\r') {
			i++;
			NEED();
			if (b[i++] != '\n')
				return 400;
			break;
		}
		size_t f0 = i;
		/* A line that starts with SP or HTAB is obs-fold, and a
		 * space before the colon is forbidden (RFC 9112 5.1): both
		 * end the name early and fail the colon test. */
		while (i < n && is_tchar(b[i]))
			i++;
		NEED();
		if (b[i] != ':' || i == f0)
			return 400;
		size_t fl = i - f0;
		i++;
		while (i < n && (b[i] == ' ' || b[i] == '\t'))
			i++;
		size_t v0 = i;
		while (i < n && is_field_char(b[i]))
			i++;
		NEED();
		if (b[i] != '\r')
			return 400;
		size_t v1 = i;
		while (v1 > v0 && (b[v1 - 1] == ' ' || b[v1 - 1] == '\t'))
			v1--;
		i++;
		NEED();
		if (b[i++] != '\n')
			return 400;

		const char *name = buf + f0, *val = buf + v0;
		size_t vl = v1 - v0;
		if (ieq(name, fl, "host")) {
			hosts++;
		} else if (ieq(name, fl, "content-length")) {
			int64_t v = parse_length(val, vl);
			if (v < 0 || (req->has_length && (uint64_t)v != req->content_length))
				return 400;
			req->has_length = 1;
			req->content_length = (uint64_t)v;
		} else if (ieq(name, fl, "transfer-encoding")) {
			te = 1;
		} else if (ieq(name, fl, "connection")) {
			connection_tokens(val, vl, &close, &keep);
		} else if (ieq(name, fl, "expect")) {
			if (ieq(val, vl, "100-continue"))
				req->expect_continue = 1;
			else
				expect_other = 1;
		}
	}
#undef NEED

	/* Both framings at once is the classic smuggling vector (RFC 9112
	 * 6.1): refuse it outright. TE alone is well-formed but unsupported. */
	if (te)
		return req->has_length ? 400 : 501;
	/* RFC 9112 3.2: a 1.1 request without exactly one Host is a 400. */
	if ((minor >= 1 && hosts != 1) || hosts > 1)
		return 400;
	if (expect_other)
		return 417;
	req->keep_alive = minor >= 1 ? !close : keep && !close;
	req->head_len = i;
	return 1;
}

const char *http_reason(int status)
{
	switch (status) {
	case 100: return "Continue";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 411: return "Length Required";
	case 413: return "Content Too Large";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 505: return "HTTP Version Not Supported";
	case 507: return "Insufficient Storage";
	}
	return "Unknown";
}
