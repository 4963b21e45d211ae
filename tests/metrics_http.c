/* SPDX-License-Identifier: MIT */
/*
 * metrics_http: the exporter (ura_metrics_serve), scraped by curl and
 * checked by promtool, in the system it describes.
 *
 *  1. GET /metrics: 200, Prometheus text's content type, the families of
 *     workers and of a metered class with the counts a known workload
 *     gave them; `promtool check metrics` accepts it (skipped, saying so,
 *     when promtool is missing: Debian's `prometheus` package);
 *  2. Accept: application/openmetrics-text: OpenMetrics, ending in # EOF,
 *     which promtool also accepts;
 *  3. counters are monotonic across two scrapes with work in between, and
 *     histograms cumulative (each _bucket >= the one before, +Inf =
 *     _count);
 *  4. HEAD: the headers alone, with the body's length; /actors lists the
 *     top N with their class, behavior and counts; a bad query is 400;
 *  5. hardening: another path is 404, POST is 405, garbage is 400, a head
 *     past 8 KiB is 431, a client that sends nothing is dropped (the
 *     server does not wait forever: the test waits up to 10 s for it);
 *  6. the scrape's size grows with classes, not with actors: 1000 more
 *     actors of the metered class leave its length within a few digits;
 *  7. bad arguments: -EINVAL; a port in use: -EADDRINUSE.
 */
#include <errno.h>
#include <stdatomic.h>

#include "net.h"

#define A_INC URA_ATOM("inc")

static void on_inc(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(counting, URA_ON(A_INC, "", on_inc));
static const ura_class metered = {
	.name = "metered \"quoted\"",
	.initial = &counting,
	.metrics = URA_CLASS_METRICS,
};

static char g_body[1 << 20], g_body2[1 << 20];

/* The exporter's accept keeps the system from quiescence (ura.h): wait
 * for the work by its counts instead of ura_system_await. */
static void wait_handled(ura_system *sys, uint64_t n)
{
	for (int i = 0; i < 10000; i++) {
		ura_class_metrics c;
		if (ura_metrics_classes(sys, &c, 1, NULL) == 1 && c.handled >= n)
			return;
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	t_ok(0, "the work was done within 10 s");
}

/* A metric's value in a scrape (the first sample whose line starts with
 * `prefix`), or -1. */
static double value_of(const char *text, const char *prefix)
{
	size_t pl = strlen(prefix);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, prefix, pl)) {
			const char *v = strchr(p + pl, ' ');
			return v ? strtod(v + 1, NULL) : -1;
		}
	}
	return -1;
}

/* Every counter sample of `a` is <= its value in `b` (same line name). */
static int monotonic(const char *a, const char *b, int *checked)
{
	*checked = 0;
	for (const char *p = a; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (*p == '#' || strncmp(p, "ura_", 4))
			continue;
		const char *sp = strchr(p, ' ');
		if (!sp || !(memmem(p, (size_t)(sp - p), "_total", 6) ||
			     memmem(p, (size_t)(sp - p), "_count", 6)))
			continue;
		char key[512];
		size_t kl = (size_t)(sp - p);
		if (kl >= sizeof key)
			continue;
		memcpy(key, p, kl);
		key[kl] = 0;
		double va = strtod(sp + 1, NULL), vb = value_of(b, key);
		if (vb < va) {
			printf("# %s went from %f to %f\n", key, va, vb);
			return 0;
		}
		++*checked;
	}
	return 1;
}

/* Within each histogram series the buckets never fall, and +Inf is the
 * count. */
static int cumulative(const char *text, int *series)
{
	double prev = -1;
	*series = 0;
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		const char *b = strstr(p, "_bucket{");
		const char *nl = strchr(p, '\n');
		if (!b || (nl && b > nl))
			continue;
		const char *sp = strrchr(p, '}');
		double v = sp ? strtod(sp + 2, NULL) : -1;
		if (strstr(p, "le=\"0.000000064\"") && strstr(p, "le=\"0.000000064\"") < nl)
			prev = -1; /* a new series starts */
		if (v < prev)
			return 0;
		prev = v;
		if (strstr(p, "le=\"+Inf\"") && strstr(p, "le=\"+Inf\"") < nl)
			++*series;
	}
	return 1;
}

static int scrape(int port, const char *extra, char *out, size_t cap)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "curl -sS -m 10 -D - %s http://127.0.0.1:%d/metrics 2>&1", extra,
		 port);
	return t_run(cmd, out, cap);
}

/* Raw request, the answer's first line in *line. */
static void raw(int port, const char *req, size_t len, char *line, size_t cap)
{
	int fd = t_connect(port);
	line[0] = 0;
	if (fd < 0)
		return;
	t_send_all(fd, req, len);
	static char buf[1 << 16];
	int closed;
	t_recv_until(fd, buf, sizeof buf, NULL, 10000, &closed);
	close(fd);
	char *e = strstr(buf, "\r\n");
	size_t n = e ? (size_t)(e - buf) : strlen(buf);
	if (n >= cap)
		n = cap - 1;
	memcpy(line, buf, n);
	line[n] = 0;
}

/* promtool check metrics reads the Prometheus text format: an
 * OpenMetrics text parses (its # EOF is a comment there), but its lint
 * asks for HELP under the sample's name, which OpenMetrics spells without
 * _total: for it, only a parse error (exit 1) fails. */
static void promtool(const char *text, const char *what, int om)
{
	if (!t_have("promtool")) {
		t_skip("promtool not installed (Debian package prometheus): not validated");
		return;
	}
	const char *path = "metrics_http.promtool.txt";
	FILE *f = fopen(path, "w");
	const char *body = strstr(text, "\r\n\r\n");
	if (!f || !body) {
		t_ok(0, "%s: saved for promtool", what);
		if (f)
			fclose(f);
		return;
	}
	fputs(body + 4, f);
	fclose(f);
	char cmd[256], out[8192];
	snprintf(cmd, sizeof cmd, "promtool check metrics < %s 2>&1", path);
	int rc = t_run(cmd, out, sizeof out);
	if (om)
		t_ok(rc == 0 || rc == 3, "%s: promtool parses it (exit %d)", what, rc);
	else
		t_eq(rc, 0, "%s: promtool check metrics accepts it", what);
	if (rc && !om)
		printf("# %s\n", out);
	remove(path);
}

int main(void)
{
	if (!t_have("curl")) {
		t_skip("curl not installed");
		return t_done();
	}
	ura_system *sys;
	ura_config cfg = { .workers = 2 };
	t_must(ura_system_new(&sys, &cfg));
	int port = 0;
	ura_ref srv;
	t_must(ura_metrics_serve(sys, NULL, 0, &port, &srv));
	t_ok(port > 0, "bound to a port (%d)", port);
	ura_ref r[10];
	for (int i = 0; i < 10; i++) {
		t_must(ura_spawn(sys, &metered, NULL, &r[i]));
		for (int k = 0; k < 10; k++)
			t_must(ura_send(sys, r[i], A_INC));
	}
	wait_handled(sys, 100);

	/* 1. */
	t_eq(scrape(port, "", g_body, sizeof g_body), 0, "curl GET /metrics");
	t_ok(!strncmp(g_body, "HTTP/1.1 200", 12), "200 OK");
	t_ok(strstr(g_body, "Content-Type: text/plain; version=0.0.4") != NULL,
	     "Prometheus text's content type");
	t_ok(strstr(g_body, "# TYPE ura_worker_turns_total counter") != NULL, "a worker counter family");
	t_eq(value_of(g_body, "ura_class_spawned_total{class=\"metered \\\"quoted\\\"\"}"), 10,
	     "the class's spawns, its name escaped");
	t_eq(value_of(g_body, "ura_class_messages_handled_total{class=\"metered \\\"quoted\\\"\"}"),
	     100, "its messages handled");
	t_eq(value_of(g_body, "ura_class_live{class=\"metered \\\"quoted\\\"\"}"), 10, "live");
	/* (its node label is 1 under URA_TOPOLOGY=2x1) */
	t_ok(value_of(g_body, "ura_worker_busy_seconds_total{worker=\"1\",node=\"") >= 0,
	     "worker 1's busy time");
	t_ok(strstr(g_body, "ura_class_handler_seconds_bucket{class=") != NULL, "a class histogram");
	promtool(g_body, "Prometheus text", 0);

	/* 3. Monotonic and cumulative. */
	for (int i = 0; i < 10; i++)
		t_must(ura_send(sys, r[i], A_INC));
	wait_handled(sys, 110);
	t_eq(scrape(port, "", g_body2, sizeof g_body2), 0, "a second scrape");
	int checked = 0, series = 0;
	t_ok(monotonic(g_body, g_body2, &checked) && checked > 50,
	     "counters never fall between scrapes (%d checked)", checked);
	t_eq(value_of(g_body2, "ura_class_messages_handled_total{class=\"metered \\\"quoted\\\"\"}"),
	     110, "and moved by the work in between");
	t_ok(cumulative(g_body2, &series) && series >= 3, "histograms cumulative (%d series)",
	     series);

	/* 2. OpenMetrics. */
	t_eq(scrape(port, "-H 'Accept: application/openmetrics-text; version=1.0.0'", g_body2,
		    sizeof g_body2), 0, "curl with an OpenMetrics Accept");
	t_ok(strstr(g_body2, "Content-Type: application/openmetrics-text") != NULL,
	     "OpenMetrics content type");
	size_t bl = strlen(g_body2);
	t_ok(bl > 6 && !strcmp(g_body2 + bl - 6, "# EOF\n"), "ends with # EOF");
	t_ok(strstr(g_body2, "# TYPE ura_worker_turns counter") != NULL,
	     "a counter family without _total");
	promtool(g_body2, "OpenMetrics", 1);

	/* 4. HEAD. */
	char out[4096];
	t_eq(t_run(t_have("curl") ? "true" : "false", out, sizeof out), 0, "shell");
	char cmd[256];
	snprintf(cmd, sizeof cmd, "curl -sS -m 10 -I http://127.0.0.1:%d/metrics 2>&1", port);
	t_eq(t_run(cmd, out, sizeof out), 0, "curl HEAD");
	t_ok(!strncmp(out, "HTTP/1.1 200", 12) && strstr(out, "Content-Length: ") &&
		     !strstr(out, "# TYPE"),
	     "HEAD: headers, no body");

	/* The top N, at /actors. */
	snprintf(cmd, sizeof cmd, "curl -sS -m 10 'http://127.0.0.1:%d/actors?by=handled&n=3' 2>&1",
		 port);
	t_eq(t_run(cmd, out, sizeof out), 0, "curl GET /actors");
	int lines = 0, elevens = 0;
	for (char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		lines++;
		if (*l != '<')
			continue;
		char cls[64], beh[64];
		unsigned node, worker;
		unsigned long long mb, handled, ns;
		if (sscanf(l, "<%*u.%*u> %63s %63s %u %u %llu %llu %llu", cls, beh, &node, &worker,
			   &mb, &handled, &ns) == 7 &&
		    !strcmp(cls, "metered_\"quoted\"") && !strcmp(beh, "counting") && handled == 11)
			elevens++;
	}
	t_eq(lines, 4, "/actors?n=3: a header and three actors");
	t_eq(elevens, 3, "each: its class, behavior and 11 handled");
	static const char bad_q[] = "GET /actors?n=0 HTTP/1.1\r\n\r\n";
	char line0[256];
	raw(port, bad_q, sizeof bad_q - 1, line0, sizeof line0);
	t_streq(line0, "HTTP/1.1 400 Bad Request", "/actors?n=0: 400");

	/* 5. Hardening. */
	char line[256];
	static const char get_other[] = "GET /other HTTP/1.1\r\nHost: x\r\n\r\n";
	raw(port, get_other, sizeof get_other - 1, line, sizeof line);
	t_streq(line, "HTTP/1.1 404 Not Found", "another path: 404");
	static const char post[] = "POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	raw(port, post, sizeof post - 1, line, sizeof line);
	t_streq(line, "HTTP/1.1 405 Method Not Allowed", "POST: 405");
	static const char junk[] = "\x01\x02 garbage\r\n\r\n";
	raw(port, junk, sizeof junk - 1, line, sizeof line);
	t_streq(line, "HTTP/1.1 400 Bad Request", "garbage: 400");
	static char big[9000];
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	memset(big + 26, 'a', sizeof big - 26);
	raw(port, big, sizeof big, line, sizeof line);
	t_streq(line, "HTTP/1.1 431 Request Header Fields Too Large", "a head past 8 KiB: 431");
	{
		int fd = t_connect(port);
		int closed = 0;
		uint64_t t0 = t_now_ns();
		if (fd >= 0) {
			t_recv_until(fd, out, sizeof out, NULL, 10000, &closed);
			close(fd);
		}
		t_ok(closed, "a silent client is dropped (after %.1f s)",
		     (double)(t_now_ns() - t0) / 1e9);
	}

	/* 6. Size independent of actors. */
	int len1 = ura_metrics_render(sys, URA_METRICS_PROMETHEUS, NULL, 0);
	for (int i = 0; i < 1000; i++) {
		ura_ref x;
		t_must(ura_spawn(sys, &metered, NULL, &x));
	}
	int len2 = ura_metrics_render(sys, URA_METRICS_PROMETHEUS, NULL, 0);
	t_ok(len1 > 0 && len2 - len1 < 64, "1000 more actors: %d -> %d bytes", len1, len2);

	/* 7. */
	t_rc(ura_metrics_serve(NULL, NULL, 0, NULL, NULL), -EINVAL, "no system");
	t_rc(ura_metrics_serve(sys, NULL, 70000, NULL, NULL), -EINVAL, "port out of range");
	t_rc(ura_metrics_serve(sys, "not an address", 0, NULL, NULL), -EINVAL, "bad address");
	t_rc(ura_metrics_serve(sys, NULL, port, NULL, NULL), -EADDRINUSE, "port in use");

	t_must(ura_kill(sys, srv, URA_KILL));
	t_must(ura_system_await(sys));
	t_ok(t_connect(port) < 0, "the server's actor gone: nothing listens");
	t_must(ura_system_destroy(sys));
	return t_done();
}
