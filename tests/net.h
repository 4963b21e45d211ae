/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the tests that drive the example servers with real clients
 * on 127.0.0.1 (tests/echo_server.c, tests/http_*.c, tests/serve_*.c):
 * start a server binary on a free port (with a low fd limit, its stderr
 * kept in a file), raw sockets with deadlines, read many connections to
 * their end, run a command and capture its output (and a process's
 * memory, t_proc_kb, is in tap.h). Each server runs as a child process,
 * so a crash in it fails the test instead of killing it.
 */
#ifndef URA_TEST_NET_H
#define URA_TEST_NET_H

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

typedef struct {
	pid_t pid;
	int port;
	int out;           /* the server's stdout */
	char backend[96];  /* as the server printed it */
} t_server;

static inline int t_wait_readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int rc;
	do
		rc = poll(&p, 1, timeout_ms);
	while (rc < 0 && errno == EINTR);
	return rc;
}

/* How t_server_start_ex starts a server. */
typedef struct {
	long nofile;          /* its RLIMIT_NOFILE (soft and hard); 0: ours */
	const char *err_path; /* its stderr goes to this file; NULL: ours */
} t_server_opts;

/*
 * Starts argv[0] with --port 0 --bind 127.0.0.1 appended to argv, and
 * waits (up to 10 s) for its first line, "NAME: listening on ADDR:PORT,
 * ..., backend BACKEND": the socket is listening once it is printed. Its
 * stderr stays ours, so what it logs lands in the test's log, unless
 * o->err_path says otherwise.
 */
static inline int t_server_start_ex(t_server *s, const char *const *argv,
				    const t_server_opts *o)
{
	const char *args[32];
	int n = 0, pfd[2];
	while (argv[n] && n < 28) {
		args[n] = argv[n];
		n++;
	}
	args[n++] = "--port";
	args[n++] = "0";
	args[n++] = "--bind";
	args[n++] = "127.0.0.1";
	args[n] = NULL;
	memset(s, 0, sizeof *s);
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	fflush(stdout);
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		dup2(pfd[1], 1);
		if (o && o->err_path) {
			int e = open(o->err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (e < 0 || dup2(e, 2) < 0)
				_exit(126);
		}
		if (o && o->nofile) {
			struct rlimit rl = { (rlim_t)o->nofile, (rlim_t)o->nofile };
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				_exit(126);
		}
		execv(args[0], (char *const *)args);
		_exit(127);
	}
	close(pfd[1]);
	s->out = pfd[0];
	char line[256];
	size_t len = 0;
	uint64_t end = t_now_ns() + 10 * URA_SEC;
	while (len < sizeof line - 1 && !memchr(line, '\n', len)) {
		uint64_t now = t_now_ns();
		if (now >= end || t_wait_readable(s->out, (int)((end - now) / URA_MSEC) + 1) <= 0)
			break;
		ssize_t r = read(s->out, line + len, sizeof line - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	line[len] = 0;
	const char *at = strstr(line, "listening on ");
	const char *colon = at ? strchr(at + 13, ':') : NULL;
	const char *be = strstr(line, "backend ");
	if (!colon || !be) {
		printf("# server said: %s\n", line);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
		return -EPROTO;
	}
	s->port = atoi(colon + 1);
	size_t bl = strcspn(be + 8, "\n");
	if (bl >= sizeof s->backend)
		bl = sizeof s->backend - 1;
	memcpy(s->backend, be + 8, bl);
	s->backend[bl] = 0;
	return 0;
}

static inline int t_server_start(t_server *s, const char *const *argv)
{
	return t_server_start_ex(s, argv, NULL);
}

/* Sends sig and waits up to timeout_ms for the exit: the exit status,
 * 128 + the signal that killed it, or -ETIMEDOUT (then it is killed). */
static inline int t_server_stop(t_server *s, int sig, int timeout_ms)
{
	int st = 0;
	if (!s->pid)
		return -ESRCH;
	kill(s->pid, sig);
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	pid_t r;
	while ((r = waitpid(s->pid, &st, WNOHANG)) == 0 && t_now_ns() < end)
		usleep(10000);
	if (r == 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &st, 0);
		s->pid = 0;
		close(s->out);
		return -ETIMEDOUT;
	}
	s->pid = 0;
	close(s->out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A blocking TCP connection to 127.0.0.1:port, or -errno. */
static inline int t_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	return fd;
}

/* Same, with a receive buffer of rcvbuf bytes set before the connect (so
 * that the window is small from the start): a client that reads little
 * or nothing makes the server's sends wait soon. */
static inline int t_connect_rcvbuf(int port, int rcvbuf)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
	return fd;
}

static inline int t_send_all(int fd, const void *p, size_t n)
{
	const char *b = p;
	while (n) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Reads into buf (NUL-terminated, cap - 1 bytes at most) until the peer
 * closes, until `until` appears (NULL: no such stop), or until timeout_ms
 * passes. Returns the bytes read; *closed says whether EOF (or a reset)
 * was seen. */
static inline size_t t_recv_until(int fd, char *buf, size_t cap, const char *until,
				  int timeout_ms, int *closed)
{
	size_t len = 0;
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	if (closed)
		*closed = 0;
	buf[0] = 0;
	while (len < cap - 1) {
		uint64_t now = t_now_ns();
		if (now >= end || t_wait_readable(fd, (int)((end - now) / URA_MSEC) + 1) <= 0)
			break;
		ssize_t r = recv(fd, buf + len, cap - 1 - len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (closed)
				*closed = 1;
			break;
		}
		len += (size_t)r;
		buf[len] = 0;
		if (until && memmem(buf, len, until, strlen(until)))
			break;
	}
	buf[len] = 0;
	return len;
}

/* One connection being read to its end by t_drain. */
typedef struct {
	int fd;         /* < 0: skipped */
	size_t got;     /* bytes read */
	int closed;     /* EOF or a reset seen */
	char head[64];  /* the first bytes, NUL-terminated */
} t_drained;

/* Reads n connections at once, as fast as they deliver, until each is
 * closed by the peer or timeout_ms passes; the fds stay open. Returns how
 * many were seen closed. */
static inline int t_drain(t_drained *d, int n, int timeout_ms)
{
	struct pollfd *p = calloc((size_t)n, sizeof *p);
	static char buf[65536];
	int closed = 0;
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	if (!p)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		if (d[i].fd >= 0)
			fcntl(d[i].fd, F_SETFL, fcntl(d[i].fd, F_GETFL) | O_NONBLOCK);
	for (;;) {
		int open = 0;
		for (int i = 0; i < n; i++) {
			p[i].fd = d[i].fd >= 0 && !d[i].closed ? d[i].fd : -1;
			p[i].events = POLLIN;
			open += p[i].fd >= 0;
		}
		uint64_t now = t_now_ns();
		if (!open || now >= end)
			break;
		if (poll(p, (nfds_t)n, (int)((end - now) / URA_MSEC) + 1) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			ssize_t r = recv(d[i].fd, buf, sizeof buf, 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0) {
				d[i].closed = 1;
				closed++;
				continue;
			}
			if (d[i].got < sizeof d[i].head - 1) {
				size_t k = sizeof d[i].head - 1 - d[i].got;
				memcpy(d[i].head + d[i].got, buf, (size_t)r < k ? (size_t)r : k);
			}
			d[i].got += (size_t)r;
		}
	}
	free(p);
	return closed;
}

/* Lines of the file at path that contain needle, or -1. */
static inline int t_file_lines(const char *path, const char *needle)
{
	char line[1024];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* Copies the file at path into the test's log, each line a comment. */
static inline void t_file_diag(const char *path, int max_lines)
{
	char line[1024];
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	for (int i = 0; i < max_lines && fgets(line, sizeof line, f); i++)
		printf("#   | %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

/* Is prog on PATH? */
static inline int t_have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* Runs a shell command, capturing stdout (and stderr, if the command says
 * 2>&1) into out; returns its exit status, or -1. */
static inline int t_run(const char *cmd, char *out, size_t cap)
{
	fflush(stdout);
	FILE *p = popen(cmd, "r");
	size_t len = 0;
	if (!p)
		return -1;
	while (len < cap - 1) {
		size_t r = fread(out + len, 1, cap - 1 - len, p);
		if (r == 0)
			break;
		len += r;
	}
	out[len] = 0;
	char sink[4096];
	while (fread(sink, 1, sizeof sink, p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* How many TCP connections the server on 127.0.0.1:port still holds open
 * (its side ESTABLISHED or CLOSE_WAIT in /proc/net/tcp), or -1. Unlike a
 * client's read, looking does not move the server along: a client that
 * reads to find out whether it was closed lets blocked replies finish. */
static inline int t_server_conns(int port)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/net/tcp", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		unsigned lport, st;
		if (sscanf(line, " %*d: %*x:%x %*x:%*x %x", &lport, &st) == 2 &&
		    (int)lport == port && (st == 0x01 || st == 0x08))
			n++;
	}
	fclose(f);
	return n;
}

/* Waits until the server holds at most `want` connections; returns how
 * many it holds then. */
static inline int t_server_conns_wait(int port, int want, int timeout_ms)
{
	uint64_t end = t_now_ns() + (uint64_t)timeout_ms * URA_MSEC;
	int n;
	while ((n = t_server_conns(port)) > want && t_now_ns() < end)
		usleep(50 * 1000);
	return n;
}

/* Takes all the fds the hard limit allows; returns the new soft limit. */
static inline long t_nofile_max(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return (long)rl.rlim_cur;
}

/* Does the server run on the backend the environment asked for? */
static inline int t_backend_as_asked(const t_server *s)
{
	const char *e = getenv("URA_IO_URING");
	if (e && !strcmp(e, "0"))
		return !strncmp(s->backend, "epoll", 5);
	/* io_uring, unless this kernel refuses it (then the fallback is
	 * right too, and ura said so in the log). */
	return !strncmp(s->backend, "io_uring", 8) || !strncmp(s->backend, "epoll", 5);
}

#endif
