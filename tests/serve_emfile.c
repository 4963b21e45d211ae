/* SPDX-License-Identifier: MIT */
/*
 * serve_emfile: an EMFILE storm's log, for the example servers (serve.c's
 * acceptor), with real sockets on 127.0.0.1. The server runs with 64 fds
 * (as under `ulimit -n 64`) and a --max-conns above that, so accept
 * itself fails: 100 clients connect and stay for 4 s while it retries
 * every 100 ms. The log must say so in a line or two, with a count of the
 * failures it did not log (not one line per retry); once the clients
 * leave, accept works again and a new client is served.
 *
 *   test_serve_emfile PATH/TO/http_server|PATH/TO/echo_server
 *
 * meson runs it for both servers, on io_uring and on epoll.
 */
#include "net.h"

#define NOFILE 64
#define CLIENTS 100
#define STORM_MS 4000

static int is_http;

static int served_once(int port, int timeout_ms)
{
	char buf[1024];
	int closed, fd = t_connect(port);
	if (fd < 0)
		return 0;
	const char *q = is_http ? "GET / HTTP/1.1\r\nHost: a\r\n\r\n" : "ping\n";
	const char *want = is_http ? "ura\n" : "ping\n";
	t_send_all(fd, q, strlen(q));
	t_recv_until(fd, buf, sizeof buf, want, timeout_ms, &closed);
	close(fd);
	return strstr(buf, want) != NULL;
}

/* The largest count in "after N more failures" or "and N more failures"
 * lines of the log, or -1. */
static long counted(const char *path)
{
	char line[1024];
	long most = -1;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		const char *p = strstr(line, " more failures");
		if (!p)
			continue;
		while (p > line && p[-1] >= '0' && p[-1] <= '9')
			p--;
		long n = atol(p);
		if (n > most)
			most = n;
	}
	fclose(f);
	return most;
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
	char err[] = "/tmp/ura-serve-emfile-XXXXXX";
	int efd = mkstemp(err);
	if (efd < 0) {
		printf("1..0 # SKIP mkstemp: %s\n", strerror(errno));
		return 0;
	}
	close(efd);
	const char *sargv[] = { argv[1], "--max-conns", "1000", "--idle-ms", "60000", NULL };
	t_server s;
	t_must(t_server_start_ex(&s, sargv, &(t_server_opts){ .nofile = NOFILE, .err_path = err }));
	t_ok(t_backend_as_asked(&s), "%s runs on %s (URA_IO_URING=%s), %d fds",
	     is_http ? "http_server" : "echo_server", s.backend,
	     getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset", NOFILE);
	t_ok(served_once(s.port, 5000), "a client is served");

	int fd[CLIENTS], opened = 0;
	for (int i = 0; i < CLIENTS; i++)
		opened += (fd[i] = t_connect(s.port)) >= 0;
	t_eq(opened, CLIENTS, "%d clients connect to a server with %d fds", CLIENTS, NOFILE);
	usleep(STORM_MS * 1000);
	t_ok(t_file_lines(err, "accept") >= 1,
	     "after %.0f s out of fds the server has said so", STORM_MS / 1e3);
	for (int i = 0; i < CLIENTS; i++)
		if (fd[i] >= 0)
			close(fd[i]);

	int ok = 0;
	uint64_t end = t_now_ns() + 15 * URA_SEC;
	while (!ok && t_now_ns() < end)
		if (!(ok = served_once(s.port, 2000)))
			usleep(200 * 1000);
	t_ok(ok, "once they leave, a new client is served");
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: the server exits 0");

	int lines = t_file_lines(err, "accept");
	long n = counted(err);
	t_ok(lines >= 1 && lines <= 3,
	     "%.0f s of EMFILE, retried every 100 ms: %d log lines about accept", STORM_MS / 1e3,
	     lines);
	t_ok(n >= 10, "... which count the failures they did not log (%ld)", n);
	if (lines < 1 || lines > 3 || n < 10)
		t_file_diag(err, 12);
	unlink(err);
	return t_done();
}
