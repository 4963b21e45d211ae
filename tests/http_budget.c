/* SPDX-License-Identifier: MIT */
/*
 * http_budget: examples/http_server's memory budget (--mem-mb) against
 * clients that make it hold memory, with real sockets on 127.0.0.1. The
 * server runs with an 8 MiB budget, and deadlines long enough never to
 * fire here.
 *  - 100 clients send a PUT head for a 1 MiB body, then half the body,
 *    and stall: the server reserves whole bodies while the budget lasts
 *    (7 of them), answers the rest 503 at once and closes them; its peak
 *    memory grows by about the budget, not by what the clients sent. A
 *    normal client is answered meanwhile.
 *  - Once they are gone, 7 such PUTs are all reserved again (nothing of
 *    the budget leaked), and complete (201) when their bodies come.
 *  - 50 clients that never read each pipeline GETs of a 1 MiB value:
 *    replies beyond the budget are 503 (and close), the server's peak
 *    memory stays bounded.
 *
 *   test_http_budget PATH/TO/http_server
 *
 * meson runs it on io_uring and with URA_IO_URING=0 (epoll).
 */
#include "net.h"

#define BUDGET_MB 8
#define BODY (1u << 20)
#define HALF (BODY / 2)
#define PUTS 100
#define FIT 7           /* whole 1 MiB bodies (and their receives) in 8 MiB */
#define READERS 50
/* Peak memory may grow by the budget and what the allocator keeps
 * around it; a server without a budget grows by about what the clients
 * sent (50 MiB and more here). */
#define GROWTH_KB ((BUDGET_MB + 24) * 1024L)

static long slack_kb(void)
{
	return GROWTH_KB * (t_scaled(1000) < 1000 ? 4 : 1); /* sanitizers */
}

static int get_hello(int port)
{
	char buf[1024];
	int closed, fd = t_connect(port);
	if (fd < 0)
		return 0;
	const char *g = "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n";
	t_send_all(fd, g, strlen(g));
	t_recv_until(fd, buf, sizeof buf, "ura\n", 5000, &closed);
	close(fd);
	return strstr(buf, "HTTP/1.1 200 ") && strstr(buf, "hello from ura");
}

static char body[BODY];

/* Opens n connections and sends each a PUT head for a 1 MiB body and the
 * first `bytes` of it, as fast as the server takes them, for up to
 * timeout_ms; a connection the server closes or refuses stops there.
 * Returns how many sent all of it. */
static int put_heads(int port, t_drained *d, int n, int first_key, size_t bytes, int timeout_ms)
{
	static struct pollfd p[PUTS];
	static size_t sent[PUTS], hl[PUTS];
	static char head[PUTS][128];
	static int done[PUTS];
	int all = 0, left = 0;
	for (int i = 0; i < n; i++) {
		d[i] = (t_drained){ .fd = t_connect(port) };
		hl[i] = (size_t)snprintf(head[i], sizeof head[i],
					 "PUT /kv/h%d HTTP/1.1\r\nHost: a\r\nContent-Length: %u\r\n\r\n",
					 first_key + i, BODY);
		sent[i] = 0;
		done[i] = d[i].fd < 0;
		left += !done[i];
		if (d[i].fd >= 0)
			fcntl(d[i].fd, F_SETFL, O_NONBLOCK);
	}
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	while (left && t_now_ns() < end) {
		for (int i = 0; i < n; i++) {
			p[i].fd = done[i] ? -1 : d[i].fd;
			p[i].events = POLLOUT;
		}
		if (poll(p, (nfds_t)n, 100) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			ssize_t w;
			if (sent[i] < hl[i])
				w = send(d[i].fd, head[i] + sent[i], hl[i] - sent[i], MSG_NOSIGNAL);
			else
				w = send(d[i].fd, body + (sent[i] - hl[i]), hl[i] + bytes - sent[i],
					 MSG_NOSIGNAL);
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (w > 0)
				sent[i] += (size_t)w;
			if (w <= 0 || sent[i] == hl[i] + bytes) {
				done[i] = 1;
				left--;
				all += w > 0;
			}
		}
	}
	return all;
}

/* Sends the rest of the bodies put_heads began; returns the 201s. */
static int put_rest(t_drained *d, int n, size_t from)
{
	char buf[512];
	int created = 0, closed;
	for (int i = 0; i < n; i++) {
		if (d[i].fd < 0)
			continue;
		fcntl(d[i].fd, F_SETFL, fcntl(d[i].fd, F_GETFL) & ~O_NONBLOCK);
		t_send_all(d[i].fd, body + from, BODY - from);
		t_recv_until(d[i].fd, buf, sizeof buf, "\r\n\r\n", 5000, &closed);
		created += !strncmp(buf, "HTTP/1.1 201 ", 13) || !strncmp(buf, "HTTP/1.1 204 ", 13);
	}
	return created;
}

static void close_all(t_drained *d, int n)
{
	for (int i = 0; i < n; i++)
		if (d[i].fd >= 0)
			close(d[i].fd);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("1..0 # SKIP usage: %s PATH/TO/http_server\n", argv[0]);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	t_nofile_max();
	char mb[16];
	snprintf(mb, sizeof mb, "%d", BUDGET_MB);
	const char *sargv[] = { argv[1], "--mem-mb", mb, "--idle-ms", "60000", "--head-ms",
				"60000", "--send-ms", "60000", NULL };
	t_server s;
	t_must(t_server_start(&s, sargv));
	t_ok(t_backend_as_asked(&s), "the server runs on %s (URA_IO_URING=%s)", s.backend,
	     getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset");
	for (unsigned i = 0; i < BODY; i++)
		body[i] = (char)('a' + i % 26);
	t_ok(get_hello(s.port), "GET / is answered");

	/* Half-sent bodies. */
	static t_drained d[PUTS];
	long hwm0 = t_proc_kb(s.pid, "VmHWM");
	put_heads(s.port, d, PUTS, 0, HALF, 10000);
	usleep(500 * 1000);
	long hwm1 = t_proc_kb(s.pid, "VmHWM");
	t_ok(get_hello(s.port), "%d clients stall halfway through a 1 MiB PUT body; GET / is "
	     "still answered", PUTS);
	t_drain(d, PUTS, 2000);
	int refused = 0, held = 0;
	for (int i = 0; i < PUTS; i++) {
		refused += d[i].closed && !strncmp(d[i].head, "HTTP/1.1 503 ", 13);
		held += !d[i].closed && d[i].got == 0;
	}
	t_ok(held >= 1 && held <= FIT + 1, "... the server holds %d of them (the %d MiB budget "
	     "fits %d whole bodies)", held, BUDGET_MB, FIT);
	t_ok(refused >= PUTS - FIT - 1 && refused + held == PUTS,
	     "... and refused the other %d with 503, closing them", refused);
	t_ok(hwm1 > 0 && hwm1 - hwm0 < slack_kb(),
	     "... its peak memory grew by %ld kB (< %ld kB), while they tried to send %u MiB", hwm1 - hwm0,
	     slack_kb(), PUTS * HALF >> 20);
	close_all(d, PUTS);

	/* All of the budget is back once they are gone: as many bodies as
	 * fit are reserved again (retried while the closes are noticed). */
	int again = 0;
	uint64_t end = t_now_ns() + 15 * URA_SEC;
	while (t_now_ns() < end) {
		usleep(300 * 1000);
		put_heads(s.port, d, FIT, 1000, HALF, 5000);
		t_drain(d, FIT, 500);
		again = 0;
		for (int i = 0; i < FIT; i++)
			again += !d[i].closed && d[i].got == 0;
		if (again == FIT)
			break;
		close_all(d, FIT);
	}
	t_eq(again, FIT, "after they close, %d half-sent PUTs are all held again: nothing of "
	     "the budget leaked", FIT);
	t_eq(put_rest(d, FIT, HALF), FIT, "... and each gets 201 once its body is complete");
	close_all(d, FIT);

	/* Replies: GETs of a 1 MiB value by clients that never read. The
	 * kernel's buffers take the first replies whole, so each pipelines
	 * several and the later ones wait in the server. */
	static t_drained r[READERS];
	const char *g = "GET /kv/h1000 HTTP/1.1\r\nHost: a\r\n\r\n";
	long hwm2 = t_proc_kb(s.pid, "VmHWM");
	for (int i = 0; i < READERS; i++) {
		r[i] = (t_drained){ .fd = t_connect_rcvbuf(s.port, 4096) };
		for (int k = 0; k < 4 && r[i].fd >= 0; k++)
			t_send_all(r[i].fd, g, strlen(g));
	}
	usleep(2000 * 1000);
	long hwm3 = t_proc_kb(s.pid, "VmHWM");
	t_ok(get_hello(s.port), "%d clients that never read pipeline GETs of a 1 MiB value; "
	     "GET / is still answered", READERS);
	t_ok(hwm3 > 0 && hwm3 - hwm2 < slack_kb(),
	     "... the server's peak memory grew by %ld kB (< %ld kB)", hwm3 - hwm2, slack_kb());
	int shed = t_drain(r, READERS, 5000);
	t_ok(shed >= READERS - FIT - 1 && shed < READERS,
	     "... it answered 503 and closed %d, and kept the %d it could hold", shed,
	     READERS - shed);
	close_all(r, READERS);

	usleep(500 * 1000);
	t_ok(get_hello(s.port), "after all that, GET / is answered");
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: the server exits 0");
	return t_done();
}
