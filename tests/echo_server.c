/* SPDX-License-Identifier: MIT */
/*
 * echo_server: examples/echo_server driven by raw clients on 127.0.0.1.
 * One client gets its bytes back; one sends 4 MiB while reading (more
 * than the socket buffers hold, so the server must keep up both ways);
 * 200 clients at once each get exactly their own bytes back, in order; a
 * client's FIN closes its connection; SIGINT (Ctrl-C) with clients still
 * connected ends the server cleanly (exit 0) and closes them.
 *
 *   test_echo_server PATH/TO/echo_server
 *
 * meson runs it twice: on io_uring and with URA_IO_URING=0 (epoll).
 */
#include "net.h"

/* The byte at offset i of client c's stream: a different stream per
 * client, so a reply crossed between connections shows. */
static unsigned char pattern(int c, size_t i)
{
	return (unsigned char)((i * 131u + (size_t)c * 7919u + (i >> 9)) ^ (size_t)c);
}

struct client {
	int fd;
	size_t sent, got;
	int bad;
};

/* Drives n nonblocking clients, each sending `bytes` in pieces of at most
 * `piece`, and reading everything back; returns how many got all their
 * bytes back intact within timeout_ms. */
static int run_clients(int port, int n, size_t bytes, size_t piece, int timeout_ms)
{
	struct client *c = calloc((size_t)n, sizeof *c);
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	unsigned char *buf = malloc(65536);
	int done = 0, ok = 0;
	for (int i = 0; i < n; i++) {
		c[i].fd = t_connect(port);
		if (c[i].fd < 0) {
			c[i].bad = 1;
			done++;
			continue;
		}
		fcntl(c[i].fd, F_SETFL, O_NONBLOCK);
	}
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	while (done < n && t_now_ns() < end) {
		for (int i = 0; i < n; i++) {
			int live = !c[i].bad && c[i].got < bytes;
			p[i].fd = live ? c[i].fd : -1;
			p[i].events = POLLIN | (live && c[i].sent < bytes ? POLLOUT : 0);
		}
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			struct client *k = &c[i];
			if (p[i].fd < 0)
				continue;
			if ((p[i].revents & POLLOUT) && k->sent < bytes) {
				size_t len = bytes - k->sent < piece ? bytes - k->sent : piece;
				for (size_t j = 0; j < len; j++)
					buf[j] = pattern(i, k->sent + j);
				ssize_t w = send(k->fd, buf, len, MSG_NOSIGNAL);
				if (w > 0)
					k->sent += (size_t)w;
			}
			if (p[i].revents & (POLLIN | POLLHUP | POLLERR)) {
				ssize_t r = recv(k->fd, buf, 65536, 0);
				if (r <= 0 && !(r < 0 && errno == EAGAIN)) {
					k->bad = 1;
				} else if (r > 0) {
					for (ssize_t j = 0; j < r; j++)
						if (buf[j] != pattern(i, k->got + (size_t)j))
							k->bad = 1;
					k->got += (size_t)r;
				}
				if (k->bad || k->got >= bytes) {
					done++;
					ok += !k->bad && k->got == bytes;
				}
			}
		}
	}
	for (int i = 0; i < n; i++)
		if (c[i].fd >= 0)
			close(c[i].fd);
	free(buf);
	free(p);
	free(c);
	return ok;
}

int main(int argc, char **argv)
{
	char buf[4096];
	int closed;
	if (argc < 2) {
		printf("1..0 # SKIP usage: %s PATH/TO/echo_server\n", argv[0]);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	t_nofile_max();
	const char *sargv[] = { argv[1], NULL };
	t_server s;
	t_must(t_server_start(&s, sargv));
	t_ok(t_backend_as_asked(&s), "the server runs on %s (URA_IO_URING=%s)", s.backend,
	     getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset");

	int fd = t_connect(s.port);
	t_ok(fd >= 0, "connect");
	t_send_all(fd, "hello, ura\n", 11);
	t_recv_until(fd, buf, sizeof buf, "\n", 3000, &closed);
	t_streq(buf, "hello, ura\n", "one line comes back");
	t_send_all(fd, "again", 5);
	t_recv_until(fd, buf, sizeof buf, "again", 3000, &closed);
	t_streq(buf, "again", "the same connection echoes again");
	/* Our FIN: the server sees EOF, closes, and we see its FIN. */
	shutdown(fd, SHUT_WR);
	t_recv_until(fd, buf, sizeof buf, NULL, 3000, &closed);
	t_ok(closed && !buf[0], "after our FIN the server closes its side");
	close(fd);

	t_eq(run_clients(s.port, 1, 4u << 20, 65536, 20000), 1,
	     "4 MiB through one connection, sent while reading, comes back intact");
	int n = (int)t_scaled(200);
	t_eq(run_clients(s.port, n, 64u << 10, 4096, 30000), n,
	     "%d clients at once, 64 KiB each: every byte back, in order, on its own connection", n);

	/* Shutdown with clients connected and idle: they see the close. */
	int idle[10];
	for (int i = 0; i < 10; i++)
		idle[i] = t_connect(s.port);
	t_send_all(idle[9], "x", 1);
	t_recv_until(idle[9], buf, sizeof buf, "x", 3000, &closed); /* all accepted by now */
	uint64_t t0 = t_now_ns();
	t_eq(t_server_stop(&s, SIGINT, 10000), 0, "SIGINT with 10 clients connected: exit 0");
	t_ok(t_now_ns() - t0 < 5 * URA_SEC, "... within 5 s (%.2f s)", (double)(t_now_ns() - t0) / 1e9);
	int eofs = 0;
	for (int i = 0; i < 10; i++) {
		if (idle[i] < 0)
			continue;
		t_recv_until(idle[i], buf, sizeof buf, NULL, 2000, &closed);
		eofs += closed;
		close(idle[i]);
	}
	t_eq(eofs, 10, "... and every client sees its connection closed");
	return t_done();
}
