/* SPDX-License-Identifier: MIT */
/*
 * The HTTP server's key-value store under its supervisor
 * (examples/http_server.c): wrk PUTs to /kv/ on 50 connections for 4 s
 * while the store is killed (SIGUSR1, the server's crash drill: URA_KILL
 * to the store) five times. The server must keep answering: no socket
 * errors, and no more error replies (503) than requests that can have
 * been in flight at the kills (one per connection per kill); requests
 * go on succeeding after the last kill; a key stored before the kills is
 * gone (each kill did restart the store, empty); the store answers
 * afterwards; SIGTERM still shuts the server down cleanly.
 *
 *   test_http_supervised PATH/TO/http_server
 *
 * Without wrk or curl it prints "1..0 # SKIP" (CI installs both: scripts/deps).
 */
#include <pthread.h>

#include "net.h"

enum { CONNS = 50, KILLS = 5 };

static int curl(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "curl -sS --max-time 10 %s 2>&1", args);
	return t_run(cmd, out, cap);
}

typedef struct {
	int port;
	const char *script;
	int rc;
	char out[16384];
} wrk_run;

static void *run_wrk(void *p)
{
	wrk_run *w = p;
	char cmd[512];
	snprintf(cmd, sizeof cmd,
		 /* --timeout 10s, as in tests/http_server.c: a slow reply
		  * under a sanitizer and load is not a lost one. */
		 "timeout 60 wrk -t2 -c%d -d4s --timeout 10s -s %s http://127.0.0.1:%d/kv/load 2>&1",
		 CONNS,
		 w->script, w->port);
	w->rc = t_run(cmd, w->out, sizeof w->out);
	return NULL;
}

static long field(const char *out, const char *name)
{
	const char *p = strstr(out, name);
	return p ? atol(p + strlen(name)) : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s PATH/TO/http_server\n", argv[0]);
		return 2;
	}
	if (!t_have("wrk") || !t_have("curl")) {
		printf("1..0 # SKIP wrk or curl not installed (scripts/deps installs them)\n");
		return 0;
	}
	char script[] = "/tmp/ura_wrk_put_XXXXXX";
	int sfd = mkstemp(script);
	const char lua[] = "wrk.method = \"PUT\"\nwrk.body = \"value\"\n";
	if (sfd < 0 || write(sfd, lua, sizeof lua - 1) != (ssize_t)(sizeof lua - 1)) {
		printf("1..0 # SKIP cannot write the wrk script\n");
		return 0;
	}
	close(sfd);

	t_server s;
	const char *args[] = { argv[1], NULL };
	if (t_server_start(&s, args) < 0) {
		t_ok(0, "the server starts");
		unlink(script);
		return t_done();
	}
	char out[512], a[256];
	snprintf(a, sizeof a, "-X PUT --data-binary before -w ' %%{http_code}' "
		 "http://127.0.0.1:%d/kv/marker", s.port);
	curl(a, out, sizeof out);
	t_streq(out, " 201", "PUT /kv/marker before the kills: 201");

	wrk_run w = { .port = s.port, .script = script };
	pthread_t th;
	pthread_create(&th, NULL, run_wrk, &w);
	usleep(800 * 1000);
	for (int i = 0; i < KILLS; i++) {
		kill(s.pid, SIGUSR1);
		usleep(400 * 1000);
	}
	pthread_join(th, NULL);
	unlink(script);

	long reqs = field(w.out, "requests in");
	const char *total = strstr(w.out, " requests in ");
	if (total) {
		/* "  12345 requests in 4.00s": the number before it */
		const char *b = total;
		while (b > w.out && (b[-1] >= '0' && b[-1] <= '9'))
			b--;
		reqs = atol(b);
	}
	long non2xx = field(w.out, "Non-2xx or 3xx responses: ");
	t_ok(w.rc == 0 && reqs > 0, "wrk ran: %ld requests with %d kills of the store", reqs, KILLS);
	t_ok(!strstr(w.out, "Socket errors"), "no socket errors: every connection kept being served");
	t_ok(non2xx <= CONNS * KILLS,
	     "errors only for requests in flight at a kill: %ld 503s <= %d connections x %d kills",
	     non2xx, CONNS, KILLS);
	t_ok(reqs > 10 * non2xx, "the rest succeeded (%ld of %ld)", reqs - non2xx, reqs);
	if (w.rc != 0 || strstr(w.out, "Socket errors") || non2xx > CONNS * KILLS)
		for (char *l = strtok(w.out, "\n"); l; l = strtok(NULL, "\n"))
			printf("#   %s\n", l);

	snprintf(a, sizeof a, "-o /dev/null -w '%%{http_code}' http://127.0.0.1:%d/kv/marker", s.port);
	curl(a, out, sizeof out);
	t_streq(out, "404", "the marker is gone: the store was restarted, empty");
	snprintf(a, sizeof a, "-w ' %%{http_code}' http://127.0.0.1:%d/kv/load", s.port);
	curl(a, out, sizeof out);
	t_streq(out, "value 200", "GET /kv/load after the kills: the restarted store answers");
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: the server shuts down cleanly (exit 0)");
	return t_done();
}
