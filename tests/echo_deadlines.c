/* SPDX-License-Identifier: MIT */
/*
 * echo_deadlines: examples/echo_server's --idle-ms and --send-ms, with
 * real sockets on 127.0.0.1.
 *  - A client that connects and says nothing is closed after --idle-ms.
 *  - A client that sends a byte every 500 ms and reads its echoes stays,
 *    well past --idle-ms.
 *  - A client that sends and never reads (a small window, so the echoes
 *    back up at once) is closed by the send deadline, on a server whose
 *    idle deadline is far off: the echo waiting for it is dropped, not
 *    kept for as long as the client stays connected.
 *
 *   test_echo_deadlines PATH/TO/echo_server
 *
 * meson runs it on io_uring and with URA_IO_URING=0 (epoll).
 */
#include "net.h"

#define IDLE_MS 1500
#define SEND_MS 2000

/* Sends as much as the connection takes within ms (nothing is read);
 * returns the bytes sent. */
static size_t flood(int fd, int ms)
{
	static char buf[16384];
	size_t sent = 0;
	memset(buf, 'e', sizeof buf);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	uint64_t end = t_now_ns() + (uint64_t)ms * URA_MSEC;
	while (t_now_ns() < end) {
		ssize_t w = send(fd, buf, sizeof buf, MSG_NOSIGNAL);
		if (w > 0) {
			sent += (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			break;
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		poll(&p, 1, 50);
	}
	return sent;
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
	char idle[16], send_ms[16];
	snprintf(idle, sizeof idle, "%d", IDLE_MS);
	snprintf(send_ms, sizeof send_ms, "%d", SEND_MS);
	const char *sargv[] = { argv[1], "--idle-ms", idle, NULL };
	t_server s;
	t_must(t_server_start(&s, sargv));
	t_ok(t_backend_as_asked(&s), "the server runs on %s (URA_IO_URING=%s)", s.backend,
	     getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset");

	int fd = t_connect(s.port);
	uint64_t t0 = t_now_ns();
	t_recv_until(fd, buf, sizeof buf, NULL, IDLE_MS + 8000, &closed);
	double took = (double)(t_now_ns() - t0) / 1e9;
	t_ok(closed && took > IDLE_MS / 1e3 * 0.8,
	     "a silent client is closed after the idle deadline (%.2f s, --idle-ms %d)%s", took,
	     IDLE_MS, closed ? "" : " (still open)");
	if (fd >= 0)
		close(fd);

	fd = t_connect(s.port);
	int echoed = 0, rounds = (2 * IDLE_MS + 1000) / 500;
	for (int i = 0; i < rounds && fd >= 0; i++) {
		t_send_all(fd, "k", 1);
		t_recv_until(fd, buf, sizeof buf, "k", 3000, &closed);
		echoed += !strcmp(buf, "k");
		usleep(500 * 1000);
	}
	t_eq(echoed, rounds, "a client sending a byte every 500 ms is echoed for %.1f s, past "
	     "the idle deadline", rounds * 0.5);
	if (fd >= 0)
		close(fd);
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: that server exits 0");

	const char *sargv2[] = { argv[1], "--idle-ms", "60000", "--send-ms", send_ms, NULL };
	t_must(t_server_start(&s, sargv2));
	t_drained d = { .fd = t_connect_rcvbuf(s.port, 4096) };
	size_t sent = d.fd >= 0 ? flood(d.fd, 1000) : 0;
	t_ok(sent > 0, "a client sends %zu bytes it never reads, until the connection takes no "
	     "more", sent);
	usleep((SEND_MS + 2000) * 1000);
	t_drain(&d, 1, 10000);
	t_ok(d.closed && d.got < sent,
	     "... the server closed it at the send deadline (--send-ms %d; %zu bytes came back)%s",
	     SEND_MS, d.got, d.closed ? "" : " (still open)");
	if (d.fd >= 0)
		close(d.fd);
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: that server exits 0");
	return t_done();
}
