/* SPDX-License-Identifier: MIT */
/*
 * http_slowloris: examples/http_server against a slowloris attack, with
 * real sockets on 127.0.0.1. The server runs with 128 fds (as under
 * `ulimit -n 128`); more attack connections than that open at once, and
 * each sends a request head one byte a second, never finishing it (well
 * inside --idle-ms, which each byte restarts). Meanwhile a normal client
 * keeps trying GET /: it must be answered within a bound, while the attack
 * goes on, because the head deadline (--head-ms, from a head's first
 * byte) ends each attack connection with 408, and the connection cap
 * (from the fd limit) closes the excess at once instead of leaving
 * everyone else in the listen queue behind an EMFILE. Every attack
 * connection must end on the server's side. The attack does not
 * reconnect: that keeps the bound deterministic.
 *
 *   test_http_slowloris PATH/TO/http_server
 *
 * meson runs it on io_uring and with URA_IO_URING=0 (epoll).
 */
#include <pthread.h>

#include "net.h"

#define NOFILE 128
#define ATTACK 150      /* connections, more than the server has fds */
#define HEAD_MS 2000
#define IDLE_MS 5000    /* the trickle (1 byte/s) never lets it fire */
#define ATTACK_MS 10000 /* how long the attack trickles */
/* The normal client is answered within this of the attack's start: the
 * head deadline plus a loaded machine's slack (not a timing check). */
#define BOUND_MS (HEAD_MS + 6000)

struct attacker {
	int port;
	int fds[ATTACK];
	int opened, closed, got_408;
	uint64_t t0;
	double worst_s; /* longest an accepted one lived after its first byte */
};

/* The head of a request that never ends: the trickle adds header bytes
 * forever (8 KiB would take over two hours at this rate). */
static const char trickle[] = "GET / HTTP/1.1\r\nHost: slow\r\nX-Slow: ";

static void *attack(void *arg)
{
	struct attacker *at = arg;
	uint64_t first[ATTACK];
	size_t sent[ATTACK];
	int done[ATTACK];
	char buf[512];
	for (int i = 0; i < ATTACK; i++) {
		at->fds[i] = t_connect(at->port);
		done[i] = at->fds[i] < 0;
		sent[i] = 0;
		first[i] = t_now_ns();
		if (at->fds[i] >= 0) {
			at->opened++;
			fcntl(at->fds[i], F_SETFL, O_NONBLOCK);
			/* The first byte: the head's deadline starts here. */
			if (send(at->fds[i], trickle, 1, MSG_NOSIGNAL) == 1)
				sent[i] = 1;
		}
	}
	uint64_t end = at->t0 + (uint64_t)ATTACK_MS * URA_MSEC;
	while (t_now_ns() < end) {
		/* A second between bytes, watching for the server's close. */
		uint64_t next = t_now_ns() + URA_SEC;
		while (t_now_ns() < next) {
			struct pollfd p[ATTACK];
			for (int i = 0; i < ATTACK; i++) {
				p[i].fd = done[i] ? -1 : at->fds[i];
				p[i].events = POLLIN;
			}
			int wait = (int)((next - t_now_ns()) / URA_MSEC) + 1;
			if (poll(p, ATTACK, wait) <= 0)
				continue;
			for (int i = 0; i < ATTACK; i++) {
				if (p[i].fd < 0 || !p[i].revents)
					continue;
				ssize_t r = recv(at->fds[i], buf, sizeof buf - 1, 0);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r > 0) {
					buf[r] = 0;
					at->got_408 += !strncmp(buf, "HTTP/1.1 408 ", 13);
					continue; /* the close follows */
				}
				done[i] = 1;
				at->closed++;
				double s = (double)(t_now_ns() - first[i]) / 1e9;
				if (s > at->worst_s)
					at->worst_s = s;
			}
		}
		for (int i = 0; i < ATTACK; i++) {
			if (done[i])
				continue;
			const char *b = sent[i] < sizeof trickle - 1 ? trickle + sent[i] : "a";
			if (send(at->fds[i], b, 1, MSG_NOSIGNAL) == 1)
				sent[i]++;
		}
	}
	return NULL;
}

/* One GET / on a new connection; 1 when answered 200 within timeout_ms. */
static int get_once(int port, int timeout_ms)
{
	char buf[1024];
	int closed, fd = t_connect(port);
	if (fd < 0)
		return 0;
	const char *g = "GET / HTTP/1.1\r\nHost: normal\r\nConnection: close\r\n\r\n";
	t_send_all(fd, g, strlen(g));
	t_recv_until(fd, buf, sizeof buf, "ura\n", timeout_ms, &closed);
	close(fd);
	return !strncmp(buf, "HTTP/1.1 200 ", 13) && strstr(buf, "hello from ura");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		printf("1..0 # SKIP usage: %s PATH/TO/http_server\n", argv[0]);
		return 0;
	}
	signal(SIGPIPE, SIG_IGN);
	if (t_nofile_max() < ATTACK + 64) {
		printf("1..0 # SKIP RLIMIT_NOFILE below %d\n", ATTACK + 64);
		return 0;
	}
	char head[16], idle[16];
	snprintf(head, sizeof head, "%d", HEAD_MS);
	snprintf(idle, sizeof idle, "%d", IDLE_MS);
	const char *sargv[] = { argv[1], "--head-ms", head, "--idle-ms", idle, NULL };
	t_server s;
	t_must(t_server_start_ex(&s, sargv, &(t_server_opts){ .nofile = NOFILE }));
	t_ok(t_backend_as_asked(&s), "the server runs on %s (URA_IO_URING=%s), %d fds", s.backend,
	     getenv("URA_IO_URING") ? getenv("URA_IO_URING") : "unset", NOFILE);
	t_ok(get_once(s.port, 5000), "before the attack: GET / is answered");

	static struct attacker at;
	at.port = s.port;
	at.t0 = t_now_ns();
	pthread_t th;
	if (pthread_create(&th, NULL, attack, &at) != 0) {
		t_ok(0, "the attack thread starts");
		return t_done();
	}
	/* The normal client: a try every 250 ms for as long as the attack
	 * lasts, each given 2 s to be answered. */
	usleep(500 * 1000);
	double first_ok = -1;
	int tries = 0, ok = 0, tries_after = 0, ok_after = 0;
	while (t_now_ns() - at.t0 < (uint64_t)(ATTACK_MS - 2500) * URA_MSEC) {
		int r = get_once(s.port, 2000);
		double t = (double)(t_now_ns() - at.t0) / 1e9;
		tries++;
		ok += r;
		if (first_ok >= 0) {
			tries_after++;
			ok_after += r;
		} else if (r) {
			first_ok = t;
		}
		usleep(250 * 1000);
	}
	pthread_join(th, NULL);

	t_eq(at.opened, ATTACK, "%d attack connections open at once (the server has %d fds)",
	     ATTACK, NOFILE);
	t_ok(first_ok >= 0 && first_ok * 1000 < BOUND_MS,
	     "during the attack a normal client is answered within %.1f s of its start "
	     "(first answer at %.2f s; head deadline %.1f s)",
	     BOUND_MS / 1e3, first_ok, HEAD_MS / 1e3);
	t_ok(tries_after > 0 && ok_after == tries_after,
	     "... and every later try is answered too (%d of %d; %d of %d in all)", ok_after,
	     tries_after, ok, tries);
	t_eq(at.closed, ATTACK, "the server ended every attack connection while it trickled");
	t_ok(at.got_408 > 0, "... those it had accepted with 408 Request Timeout (%d did)",
	     at.got_408);
	t_ok(at.worst_s < HEAD_MS / 1e3 + 6,
	     "... none lived past the head deadline and some slack (longest %.2f s)", at.worst_s);
	for (int i = 0; i < ATTACK; i++)
		if (at.fds[i] >= 0)
			close(at.fds[i]);
	t_ok(get_once(s.port, 5000), "after the attack: GET / is answered");
	t_eq(t_server_stop(&s, SIGTERM, 10000), 0, "SIGTERM: the server exits 0");
	return t_done();
}
