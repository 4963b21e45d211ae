/* SPDX-License-Identifier: MIT */
/*
 * serve_cap: --max-conns of the example servers (serve.c's acceptor),
 * with real sockets on 127.0.0.1. With a cap of 20, 40 clients connect
 * and each asks once (GET / or an echo): 20 are answered and stay, 20 are
 * closed without a reply. The 20 keep being served; when 5 of them leave,
 * 5 new clients get in. The refusals are logged in a line or two, not
 * one per connection. Then the common options' bad values: the usage and
 * exit status 2.
 *
 *   test_serve_cap PATH/TO/http_server|PATH/TO/echo_server
 *
 * meson runs it for both servers, on io_uring and on epoll.
 */
#include "net.h"

#define CAP 20
#define CLIENTS 40

static int is_http;

/* Sends the probe; the reply must follow. */
static void ask(int fd)
{
	const char *q = is_http ? "GET / HTTP/1.1\r\nHost: a\r\n\r\n" : "ping\n";
	t_send_all(fd, q, strlen(q));
}

/* 1: answered; 0: closed without an answer; -1: neither within
 * timeout_ms. */
static int answer(int fd, int timeout_ms)
{
	char buf[1024];
	int closed;
	const char *want = is_http ? "ura\n" : "ping\n";
	t_recv_until(fd, buf, sizeof buf, want, timeout_ms, &closed);
	if (strstr(buf, want))
		return 1;
	return closed ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("1..0 # SKIP usage: %s PATH/TO/SERVER\n", argv[0]);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	t_nofile_max();
	is_http = strstr(argv[1], "http_server") != NULL;
	char err[] = "/tmp/ura-serve-cap-XXXXXX", cap[16];
	int efd = mkstemp(err);
	if (efd < 0) {
		printf("1..0 # SKIP mkstemp: %s\n", strerror(errno));
		return 0;
	}
	close(efd);
	snprintf(cap, sizeof cap, "%d", CAP);
	const char *sargv[] = { argv[1], "--max-conns", cap, "--idle-ms", "60000", NULL };
	t_server s;
	t_must(t_server_start_ex(&s, sargv, &(t_server_opts){ .err_path = err }));
	t_ok(t_backend_as_asked(&s), "%s runs on %s (URA_IO_URING=%s)", is_http ? "http_server" :
	     "echo_server", s.backend, getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset");

	int fd[CLIENTS], state[CLIENTS], served = 0, refused = 0;
	for (int i = 0; i < CLIENTS; i++)
		if ((fd[i] = t_connect(s.port)) >= 0)
			ask(fd[i]);
	for (int i = 0; i < CLIENTS; i++) {
		state[i] = fd[i] >= 0 ? answer(fd[i], 5000) : -1;
		served += state[i] == 1;
		refused += state[i] == 0;
	}
	t_eq(served, CAP, "%d clients at once, --max-conns %d: %d are answered", CLIENTS, CAP,
	     CAP);
	t_eq(refused, CLIENTS - CAP, "... the other %d are closed without a reply", CLIENTS - CAP);

	int again = 0;
	for (int i = 0; i < CLIENTS; i++)
		if (state[i] == 1) {
			ask(fd[i]);
			again += answer(fd[i], 5000) == 1;
		}
	t_eq(again, served, "the connections within the cap are served again");

	/* Five leave; as their closes reach the server, new clients get in
	 * (a try that comes too early is closed, and retried). */
	int left = 0;
	for (int i = 0; i < CLIENTS && left < 5; i++)
		if (state[i] == 1) {
			close(fd[i]);
			fd[i] = -1;
			state[i] = -1;
			left++;
		}
	int fresh[5], in = 0;
	uint64_t end = t_now_ns() + 15 * URA_SEC;
	while (in < 5 && t_now_ns() < end) {
		int f = t_connect(s.port);
		if (f >= 0) {
			ask(f);
			if (answer(f, 3000) == 1) {
				fresh[in++] = f;
				continue;
			}
			close(f);
		}
		usleep(100 * 1000);
	}
	t_eq(in, 5, "after 5 of them leave, 5 new clients are served");
	int f = t_connect(s.port);
	if (f >= 0)
		ask(f);
	t_eq(f >= 0 ? answer(f, 5000) : -1, 0, "... and with the cap reached again, one more is "
	     "closed without a reply");
	if (f >= 0)
		close(f);
	for (int i = 0; i < in; i++)
		close(fresh[i]);
	for (int i = 0; i < CLIENTS; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: the server exits 0");
	int lines = t_file_lines(err, "--max-conns");
	t_ok(lines >= 1 && lines <= 3, "%d refusals logged in %d lines", CLIENTS - CAP + 1, lines);
	if (lines < 1 || lines > 3)
		t_file_diag(err, 20);
	unlink(err);

	/* A value out of range is refused with the usage and status 2, before
	 * anything listens; --help names the options. */
	static const char *const bad[][2] = {
		{ "--max-conns", "0" }, { "--spin-us", "0" }, { "--spin-us", "1000001" },
		{ "--workers", "x" }, { "--port", "65536" },
	};
	char cmd[512], out[4096];
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(cmd, sizeof cmd, "'%s' %s %s 2>&1", argv[1], bad[i][0], bad[i][1]);
		int st = t_run(cmd, out, sizeof out);
		t_ok(st == 2 && strstr(out, "usage:"), "%s %s: usage, exit status %d", bad[i][0],
		     bad[i][1], st);
	}
	snprintf(cmd, sizeof cmd, "'%s' --help 2>&1", argv[1]);
	int st = t_run(cmd, out, sizeof out);
	t_ok(st == 0 && strstr(out, "--spin-us N") && strstr(out, "--max-conns N"),
	     "--help: exit status %d, names --spin-us and --max-conns", st);
	return t_done();
}
