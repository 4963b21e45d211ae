/* A small service: a hit counter over HTTP. A supervisor keeps a store
 * (node 0) and an acceptor (the last node) running; the acceptor spawns
 * an actor per connection on its node; the metrics go out at /metrics.
 * main is the client: it counts hits, crashes the store, watches the
 * supervisor restart it, scrapes the metrics, and shuts it all down.
 *
 *   GET /hit/NAME   200, the count of NAME so far
 *   GET /crash      the store crashes; this request gets a 500
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <ura.h>

#define A_STORE URA_ATOM("store")
#define A_ACCEPTOR URA_ATOM("acceptor")
#define A_HIT URA_ATOM("hit")
#define A_CRASH URA_ATOM("crash")
#define A_OK URA_ATOM("ok")
#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_RECV URA_ATOM("recv")
#define A_SENT URA_ATOM("sent")
#define A_CLOSED URA_ATOM("closed")

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* ---- the store: counts per name, registered as "store" ----------------- */

enum { NAMES = 16, NAME_MAX_LEN = 15 };

typedef struct {
	struct { char name[NAME_MAX_LEN + 1]; int64_t n; } e[NAMES];
} store;

static void store_hit(ura_ctx *cx, const ura_msg *m)
{
	store *s = ura_state(cx);
	const char *name = ura_arg_str(m, 0);
	for (int i = 0; i < NAMES; i++) {
		if (!s->e[i].name[0])
			snprintf(s->e[i].name, sizeof s->e[i].name, "%s", name);
		if (!strcmp(s->e[i].name, name)) {
			ura_reply(cx, A_OK, ++s->e[i].n);
			return;
		}
	}
	ura_reply_error(cx, URA_ATOM("full"), URA_NOVALUE);
}

static void store_crash(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_exit(cx, A_CRASH, URA_NOVALUE); /* the request is failed with it */
}

URA_BEHAVIOR(storing,
	URA_ON(A_HIT, "s", store_hit),
	URA_ON(A_CRASH, "", store_crash));

static int store_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)state;
	(void)arg;
	return ura_register(ura_ctx_system(cx), A_STORE, ura_self(cx));
}

static const ura_class store_class = {
	.name = "store",
	.state_size = sizeof(store),
	.initial = &storing,
	.init = store_init,
	.metrics = URA_CLASS_METRICS,
};

/* ---- a connection: read one request, ask the store, answer, close ------ */

typedef struct {
	int fd;
	size_t have;
	char req[1024];
	char resp[256];
} conn;

static void conn_close(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	if (ura_io_close(cx, A_CLOSED, c->fd) < 0) {
		close(c->fd);
		ura_stop(cx);
	}
}

static void respond(ura_ctx *cx, int code, const char *body)
{
	conn *c = ura_state(cx);
	int n = snprintf(c->resp, sizeof c->resp,
			 "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 code, code == 200 ? "OK" : "Error", strlen(body), body);
	if (ura_io_send(cx, A_SENT, c->fd, c->resp, (size_t)n) < 0)
		conn_close(cx);
}

static void answered(ura_ctx *cx, const ura_msg *m)
{
	char body[64], reason[URA_ATOM_MAX + 1];
	if (ura_msg_tag(m) == URA_ERROR) {
		snprintf(body, sizeof body, "store failed: %s",
			 ura_atom_name(ura_exit_reason(m), reason));
		respond(cx, 500, body);
	} else if (ura_msg_tag(m) == URA_TIMEOUT) {
		respond(cx, 504, "store too slow");
	} else {
		snprintf(body, sizeof body, "%lld", (long long)ura_arg_i64(m, 0));
		respond(cx, 200, body);
	}
}

static void conn_request(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	char name[NAME_MAX_LEN + 1];
	ura_ref st = ura_whereis(ura_ctx_system(cx), A_STORE);
	if (ura_ref_null(st))
		respond(cx, 503, "no store"); /* between a crash and its restart */
	else if (!strncmp(c->req, "GET /crash ", 11))
		ura_request_for(cx, st, URA_SEC, answered, NULL, A_CRASH);
	else if (sscanf(c->req, "GET /hit/%15[A-Za-z0-9_] ", name) == 1)
		ura_request_for(cx, st, URA_SEC, answered, NULL, A_HIT, name);
	else
		respond(cx, 404, "no such page");
}

static void conn_start(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	(void)m;
	if (ura_io_recv(cx, A_RECV, c->fd, sizeof c->req - 1 - c->have, 5 * URA_SEC) < 0)
		conn_close(cx);
}

static void conn_recv(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	size_t len;
	const void *data = ura_arg_bytes(m, 1, &len);
	if (ura_arg_i64(m, 0) <= 0) {
		conn_close(cx);
		return;
	}
	memcpy(c->req + c->have, data, len);
	c->have += len;
	c->req[c->have] = 0;
	if (strstr(c->req, "\r\n\r\n"))
		conn_request(cx);
	else if (c->have + 1 < sizeof c->req)
		conn_start(cx, m);
	else
		respond(cx, 431, "too long");
}

static void conn_sent(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	conn_close(cx);
}

static void conn_closed(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(talking,
	URA_ON(A_START, "", conn_start),
	URA_ON(A_RECV, "ib", conn_recv),
	URA_ON(A_SENT, "i", conn_sent),
	URA_ON(A_CLOSED, "i", conn_closed));

/* The spawn argument is the fd: an init, since without one the argument
 * would be copied as a whole state. */
static int conn_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	((conn *)state)->fd = *(const int *)arg;
	return 0;
}

static const ura_class conn_class = {
	.name = "conn",
	.state_size = sizeof(conn),
	.initial = &talking,
	.init = conn_init,
	.metrics = URA_CLASS_METRICS,
};

/* ---- the acceptor: one multishot accept, an actor per connection ------- */

static void acceptor_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_io_accept(cx, A_ACCEPTED, *(int *)ura_state(cx), URA_IO_MULTISHOT) < 0)
		ura_exit(cx, URA_ATOM("noaccept"), URA_NOVALUE); /* for a restart */
}

static void acceptor_accepted(ura_ctx *cx, const ura_msg *m)
{
	int fd = (int)ura_arg_i64(m, 0);
	ura_ref c;
	if (fd >= 0 && ura_spawn(cx, &conn_class, &fd, &c) == 0) /* on our node */
		ura_send(cx, c, A_START);
	else if (fd >= 0)
		close(fd);
	if (!ura_io_more(m)) /* the kernel ended the multishot: arm again */
		acceptor_start(cx, m);
}

URA_BEHAVIOR(accepting,
	URA_ON(A_START, "", acceptor_start),
	URA_ON(A_ACCEPTED, "i", acceptor_accepted));

/* A supervisor starts its children in its own init, on the thread that
 * starts it, where there is no ring: the accept starts in a handler. */
static int acceptor_init(ura_ctx *cx, void *state, const void *arg)
{
	*(int *)state = *(const int *)arg;
	return ura_send(cx, ura_self(cx), A_START);
}

static const ura_class acceptor_class = {
	.name = "acceptor",
	.state_size = sizeof(int),
	.initial = &accepting,
	.init = acceptor_init,
};

/* ---- main: set up, then be the client ---------------------------------- */

static int listen_fd; /* the acceptor's spawn argument, read at each restart */

static int listen_loopback(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    listen(listen_fd, 64) < 0 || getsockname(listen_fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("listen");
		exit(1);
	}
	return ntohs(a.sin_port);
}

/* The whole answer to GET path, into buf. */
static void http_get(int port, const char *path, char *buf, size_t cap)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	size_t have = 0;
	char req[128];
	int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    write(fd, req, (size_t)n) != n) {
		perror("http_get");
		exit(1);
	}
	for (ssize_t got; have + 1 < cap && (got = read(fd, buf + have, cap - 1 - have)) > 0;)
		have += (size_t)got;
	buf[have] = 0;
	close(fd);
}

static void get(int port, const char *path)
{
	char buf[512];
	http_get(port, path, buf, sizeof buf);
	const char *body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.1 ", 9) || !body)
		printf("GET %-11s -> no answer\n", path);
	else
		printf("GET %-11s -> %.3s %s\n", path, buf + 9, body + 4);
}

static ura_sup_child child(ura_system *sys, ura_ref sup, int i)
{
	ura_sup_child kids[2] = { 0 };
	if (ura_sup_which_sys(sys, sup, kids, 2) < 2)
		exit(1);
	return kids[i];
}

int main(void)
{
	setenv("URA_TOPOLOGY", "2x1", 0); /* two nodes, even on a laptop */
	int port = listen_loopback();

	ura_system *sys;
	CHECK(ura_system_new(&sys, NULL));
	int last = ura_system_nodes(sys) - 1;

	ura_child_spec children[] = {
		{ .id = A_STORE, .cls = &store_class, .node = URA_NODE(0) },
		{ .id = A_ACCEPTOR, .cls = &acceptor_class, .arg = &listen_fd,
		  .node = URA_NODE(last) },
	};
	/* Copied at the start; the classes and arguments are not. */
	ura_sup_spec spec = { .strategy = URA_ONE_FOR_ONE, .children = children,
			      .nchildren = 2 };
	ura_ref sup;
	CHECK(ura_sup_start(sys, &spec, NULL, &sup));
	printf("store on node 0: %s; acceptor on the last node: %s\n",
	       ura_actor_node(sys, child(sys, sup, 0).ref) == 0 ? "yes" : "no",
	       ura_actor_node(sys, child(sys, sup, 1).ref) == last ? "yes" : "no");

	int mport;
	ura_ref exporter;
	CHECK(ura_metrics_serve(sys, "127.0.0.1", 0, &mport, &exporter));

	get(port, "/hit/apple");
	get(port, "/hit/apple");
	get(port, "/hit/pear");
	get(port, "/nowhere");
	get(port, "/crash");
	/* The restart runs in the supervisor, beside this thread: wait for
	 * it (this system never becomes quiescent while it accepts). */
	for (int i = 0; i < 5000 && (child(sys, sup, 0).restarts < 1 ||
				     ura_ref_null(ura_whereis(sys, A_STORE))); i++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	printf("store restarts: %llu\n", (unsigned long long)child(sys, sup, 0).restarts);
	get(port, "/hit/apple"); /* a new store: counting starts again */

	static char page[1 << 20];
	http_get(mport, "/metrics", page, sizeof page);
	printf("/metrics has the store's and the connections' counters: %s\n",
	       strstr(page, "{class=\"store\"}") && strstr(page, "{class=\"conn\"}") ? "yes" : "no");

	/* The supervisor stops its children (last started first), then
	 * itself; the acceptor's accept is cancelled as it stops. */
	CHECK(ura_kill(sys, sup, URA_SHUTDOWN));
	CHECK(ura_kill(sys, exporter, URA_KILL));
	CHECK(ura_system_await(sys));
	printf("shut down: %s\n", ura_actor_node(sys, sup) == -ESRCH ? "yes" : "no");
	CHECK(ura_system_destroy(sys));
	close(listen_fd);
	return 0;
}
