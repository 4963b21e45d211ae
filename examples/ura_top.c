/* SPDX-License-Identifier: MIT */
/*
 * ura_top: a terminal view of a running ura program, from its exporter
 * (ura_metrics_serve: /metrics and /actors). Workers as rows (busy, spin
 * and sleep as shares of the last interval, run queue, rates), metered
 * classes as rows (live, rates, mailbox, handler-time percentiles over the
 * interval), and the actors with the deepest mailboxes. Refreshed every
 * interval; rates are differences of two scrapes.
 *
 *   ./build/examples/ura_top [--host 127.0.0.1] --port N [--interval MS]
 *   ./build/examples/ura_top --demo [--once]   (a system of its own, with
 *                                               a workload, watching itself)
 *
 * It speaks plain HTTP/1.1 over a blocking socket: a viewer, not part of
 * the program it views.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <ura.h>

#define MAXW 256
#define MAXC 64
#define NB URA_HIST_BUCKETS

typedef struct {
	double busy, spin, sleep, turns, recv, steals, woken, wakes, sleeps;
	double runq;
	int seen;
} wrow;

typedef struct {
	char name[64];
	double live, spawned, handled, mailbox;
	double b[NB + 1]; /* cumulative; [NB]: +Inf */
} crow;

typedef struct {
	wrow w[MAXW];
	crow c[MAXC];
	int nw, nc;
	char backend[96];
	double actors;
} frame;

static char g_buf[1 << 20];

/* GET path from host:port into g_buf (the body); length or -1. */
static long http_get(const char *host, int port, const char *path)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	char req[256];
	int rl = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
			  path, host);
	if (send(fd, req, (size_t)rl, MSG_NOSIGNAL) != rl) {
		close(fd);
		return -1;
	}
	size_t len = 0;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, 5000) <= 0)
			break;
		ssize_t r = recv(fd, g_buf + len, sizeof g_buf - 1 - len, 0);
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof g_buf - 1)
			break;
	}
	close(fd);
	g_buf[len] = 0;
	char *body = strstr(g_buf, "\r\n\r\n");
	if (strncmp(g_buf, "HTTP/1.1 200", 12) || !body)
		return -1;
	body += 4;
	len -= (size_t)(body - g_buf);
	memmove(g_buf, body, len + 1);
	return (long)len;
}

/* The value of label `key` in a sample's labels, into out. */
static int label(const char *l, const char *key, char *out, size_t cap)
{
	char pat[32];
	snprintf(pat, sizeof pat, "%s=\"", key);
	const char *p = strstr(l, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	size_t n = 0;
	while (*p && *p != '"' && n + 1 < cap) {
		if (*p == '\\' && p[1])
			p++;
		out[n++] = *p++;
	}
	out[n] = 0;
	return 1;
}

static crow *class_row(frame *f, const char *name)
{
	for (int i = 0; i < f->nc; i++)
		if (!strcmp(f->c[i].name, name))
			return &f->c[i];
	if (f->nc == MAXC)
		return NULL;
	crow *c = &f->c[f->nc++];
	memset(c, 0, sizeof *c);
	size_t n = strlen(name);
	if (n >= sizeof c->name)
		n = sizeof c->name - 1;
	memcpy(c->name, name, n);
	c->name[n] = 0;
	return c;
}

static void parse(frame *f, char *text)
{
	memset(f, 0, sizeof *f);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		if (*l == '#')
			continue;
		char *sp = strrchr(l, ' ');
		if (!sp)
			continue;
		double v = strtod(sp + 1, NULL);
		char lab[96];
		if (!strncmp(l, "ura_info{", 9) && label(l, "backend", lab, sizeof lab))
			snprintf(f->backend, sizeof f->backend, "%s", lab);
		if (!strncmp(l, "ura_actors_live ", 16))
			f->actors = v;
		if (!strncmp(l, "ura_worker_", 11) && label(l, "worker", lab, sizeof lab)) {
			int id = atoi(lab);
			if (id < 0 || id >= MAXW)
				continue;
			wrow *w = &f->w[id];
			w->seen = 1;
			if (id >= f->nw)
				f->nw = id + 1;
			const char *n = l + 11;
#define F(s, fld) if (!strncmp(n, s "{", sizeof s)) w->fld = v;
			F("busy_seconds_total", busy) F("spin_seconds_total", spin)
			F("sleep_seconds_total", sleep) F("turns_total", turns)
			F("messages_received_total", recv) F("steals_total", steals)
			F("woken_total", woken) F("wakeups_sent_total", wakes)
			F("sleeps_total", sleeps) F("runq", runq)
#undef F
		}
		if (!strncmp(l, "ura_class_", 10) && label(l, "class", lab, sizeof lab)) {
			crow *c = class_row(f, lab);
			if (!c)
				continue;
			const char *n = l + 10;
			if (!strncmp(n, "live{", 5))
				c->live = v;
			else if (!strncmp(n, "spawned_total{", 14))
				c->spawned = v;
			else if (!strncmp(n, "messages_handled_total{", 23))
				c->handled = v;
			else if (!strncmp(n, "mailbox_messages{", 17))
				c->mailbox = v;
			else if (!strncmp(n, "handler_seconds_bucket{", 23) &&
				 label(l, "le", lab, sizeof lab)) {
				if (!strcmp(lab, "+Inf")) {
					c->b[NB] = v;
				} else {
					double le = strtod(lab, NULL) * 1e9;
					for (int i = 0; i < NB; i++)
						if ((double)URA_HIST_BOUND(i) == le)
							c->b[i] = v;
				}
			}
		}
	}
}

/* The q-quantile of the samples between two cumulative histograms, as
 * the bucket's upper bound, in a human unit. */
static void quantile(const crow *a, const crow *b, double q, char *out, size_t cap)
{
	double total = b->b[NB] - (a ? a->b[NB] : 0);
	if (total <= 0) {
		snprintf(out, cap, "-");
		return;
	}
	for (int i = 0; i < NB; i++) {
		double c = b->b[i] - (a ? a->b[i] : 0);
		if (c >= q * total) {
			double ns = (double)URA_HIST_BOUND(i);
			if (ns < 1e3)
				snprintf(out, cap, "%.0fns", ns);
			else if (ns < 1e6)
				snprintf(out, cap, "%.0fus", ns / 1e3);
			else
				snprintf(out, cap, "%.0fms", ns / 1e6);
			return;
		}
	}
	snprintf(out, cap, ">8.6s");
}

static const crow *find_class(const frame *f, const char *name)
{
	for (int i = 0; i < f->nc; i++)
		if (!strcmp(f->c[i].name, name))
			return &f->c[i];
	return NULL;
}

static void draw(const frame *a, const frame *b, double dt, const char *where, int clear,
		 const char *top)
{
	if (clear)
		printf("\033[H\033[2J");
	printf("ura_top  %s  every %.1f s  %s  %.0f actors live\n\n", where, dt, b->backend,
	       b->actors);
	printf("%-7s %6s %6s %6s %5s %10s %10s %8s %8s %8s\n", "worker", "busy%", "spin%",
	       "sleep%", "runq", "turns/s", "msgs/s", "steals/s", "wakes/s", "sleeps/s");
	for (int i = 0; i < b->nw; i++) {
		const wrow *x = &a->w[i], *y = &b->w[i];
		if (!y->seen)
			continue;
		double all = (y->busy - x->busy) + (y->spin - x->spin) + (y->sleep - x->sleep);
		if (all <= 0)
			all = 1;
		printf("w%-6d %6.1f %6.1f %6.1f %5.0f %10.0f %10.0f %8.0f %8.0f %8.0f\n", i,
		       100 * (y->busy - x->busy) / all, 100 * (y->spin - x->spin) / all,
		       100 * (y->sleep - x->sleep) / all, y->runq, (y->turns - x->turns) / dt,
		       (y->recv - x->recv) / dt, (y->steals - x->steals) / dt,
		       (y->woken - x->woken) / dt, (y->sleeps - x->sleeps) / dt);
	}
	printf("\n%-16s %8s %10s %10s %8s %8s %8s\n", "class", "live", "spawned/s", "handled/s",
	       "mailbox", "p50", "p99");
	for (int i = 0; i < b->nc; i++) {
		const crow *y = &b->c[i], *x = find_class(a, y->name);
		char p50[16], p99[16];
		quantile(x, y, 0.5, p50, sizeof p50);
		quantile(x, y, 0.99, p99, sizeof p99);
		printf("%-16.16s %8.0f %10.0f %10.0f %8.0f %8s %8s\n", y->name, y->live,
		       (y->spawned - (x ? x->spawned : 0)) / dt,
		       (y->handled - (x ? x->handled : 0)) / dt, y->mailbox, p50, p99);
	}
	printf("\ntop actors by mailbox\n%-12s %-16s %-12s %4s %6s %8s %10s\n", "actor", "class",
	       "behavior", "node", "worker", "mailbox", "handled");
	char *save = NULL;
	for (char *l = strtok_r((char *)top, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char ref[32], cls[64], beh[64];
		unsigned node, worker;
		unsigned long long mb, handled, ns;
		if (*l == '<' && sscanf(l, "%31s %63s %63s %u %u %llu %llu %llu", ref, cls, beh,
					&node, &worker, &mb, &handled, &ns) == 8)
			printf("%-12s %-16.16s %-12.12s %4u %6u %8llu %10llu\n", ref, cls, beh, node,
			       worker, mb, handled);
	}
	fflush(stdout);
}

/* ---- --demo: a workload to look at ------------------------------------ */

#define A_PING URA_ATOM("ping")
#define A_WORK URA_ATOM("work")
#define A_FEED URA_ATOM("feed")

static void ping(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), A_PING, ura_self(cx));
}
URA_BEHAVIOR(volleying, URA_ON(A_PING, "r", ping));
static const ura_class player_class = {
	.name = "player", .initial = &volleying, .metrics = URA_CLASS_METRICS,
};

/* A consumer slower than its producer: its mailbox grows, then drains. */
static void work(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 20000);
}
URA_BEHAVIOR(working, URA_ON(A_WORK, "", work));
static const ura_class slow_class = {
	.name = "slow_consumer", .initial = &working, .metrics = URA_CLASS_METRICS,
};
/* Bursts: for 2 s it asks for 60 ms of work every 50 ms, then rests 2 s. */
static void feed(ura_ctx *cx, const ura_msg *m)
{
	long *tick = ura_state(cx);
	ura_ref to = ura_arg_ref(m, 0);
	if ((*tick)++ / 40 % 2 == 0)
		for (int i = 0; i < 3000; i++)
			ura_send(cx, to, A_WORK);
	ura_send_after(cx, ura_self(cx), URA_SEC / 20, A_FEED, to);
}
URA_BEHAVIOR(feeding, URA_ON(A_FEED, "r", feed));
static const ura_class feeder_class = {
	.name = "feeder", .state_size = sizeof(long), .initial = &feeding,
	.metrics = URA_CLASS_METRICS,
};

static int demo(ura_system **out, int *port)
{
	ura_system *sys;
	/* Errors only: its destroy drops the work still queued, on purpose. */
	int rc = ura_system_new(&sys, &(ura_config){ .log_level = URA_LOG_ERROR });
	if (rc < 0)
		return rc;
	for (int i = 0; i < 4 && rc == 0; i++) {
		ura_ref a, b;
		if ((rc = ura_spawn(sys, &player_class, NULL, &a)) == 0 &&
		    (rc = ura_spawn(sys, &player_class, NULL, &b)) == 0)
			rc = ura_send(sys, a, A_PING, b);
	}
	for (int i = 0; i < 3 && rc == 0; i++) {
		ura_ref s, f;
		if ((rc = ura_spawn(sys, &slow_class, NULL, &s)) == 0 &&
		    (rc = ura_spawn(sys, &feeder_class, NULL, &f)) == 0)
			rc = ura_send(sys, f, A_FEED, s);
	}
	if (rc == 0)
		rc = ura_metrics_serve(sys, NULL, 0, port, NULL);
	if (rc < 0) {
		ura_system_destroy(sys);
		return rc;
	}
	*out = sys;
	return 0;
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1";
	int port = 0, once = 0, is_demo = 0;
	long interval = 1000;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--host") && i + 1 < argc)
			host = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--interval") && i + 1 < argc)
			interval = atol(argv[++i]);
		else if (!strcmp(argv[i], "--once"))
			once = 1;
		else if (!strcmp(argv[i], "--demo"))
			is_demo = 1;
		else {
			fprintf(stderr, "usage: %s [--host ADDR] --port N [--interval MS] [--once]\n"
				"       %s --demo [--interval MS] [--once]\n", argv[0], argv[0]);
			return 2;
		}
	}
	if (interval < 100 || interval > 60000 || (!is_demo && (port <= 0 || port > 65535))) {
		fprintf(stderr, "%s: need --port 1..65535 (or --demo), --interval 100..60000\n",
			argv[0]);
		return 2;
	}
	ura_system *sys = NULL;
	if (is_demo) {
		int rc = demo(&sys, &port);
		if (rc < 0) {
			fprintf(stderr, "%s: demo: %s\n", argv[0], ura_strerror(rc));
			return 1;
		}
	}
	char where[128];
	snprintf(where, sizeof where, "%s:%d", host, port);
	static frame f[2];
	static char top[1 << 16];
	int cur = 0;
	if (http_get(host, port, "/metrics") < 0) {
		fprintf(stderr, "%s: no metrics at http://%s/metrics\n", argv[0], where);
		if (sys)
			ura_system_destroy(sys);
		return 1;
	}
	parse(&f[cur], g_buf);
	for (;;) {
		struct timespec ts = { interval / 1000, (interval % 1000) * 1000000L };
		nanosleep(&ts, NULL);
		if (http_get(host, port, "/metrics") < 0)
			break;
		parse(&f[cur ^ 1], g_buf);
		top[0] = 0;
		long tl = http_get(host, port, "/actors?by=mailbox&n=5");
		if (tl >= 0) {
			size_t n = (size_t)tl < sizeof top - 1 ? (size_t)tl : sizeof top - 1;
			memcpy(top, g_buf, n);
			top[n] = 0;
		}
		draw(&f[cur], &f[cur ^ 1], (double)interval / 1000, where, !once, top);
		cur ^= 1;
		if (once)
			break;
	}
	/* The demo's exporter and feeders would keep it alive: kill them
	 * all with the system. */
	if (sys) {
		ura_system_shutdown(sys);
		ura_system_destroy(sys);
	}
	return 0;
}
