/* Actor I/O: an echo server and its client, both actors, on loopback.
 * Every accept, connect, recv, send and close goes on the ring of the
 * worker running the actor (or epoll where io_uring is refused), and its
 * result comes back as a message. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <ura.h>

#define A_START URA_ATOM("start")
#define A_ACCEPTED URA_ATOM("accepted")
#define A_CONNECTED URA_ATOM("connected")
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

static const char greeting[] = "hello, ring";

/* ---- one connection, on the server side: echo until the client's FIN ---- */

typedef struct {
	int fd;
} conn;

static void conn_close(ura_ctx *cx)
{
	conn *c = ura_state(cx);
	if (ura_io_close(cx, A_CLOSED, c->fd) < 0) {
		close(c->fd);
		ura_stop(cx);
	}
}

static void conn_start(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	(void)m;
	/* at most 4096 bytes, or -ETIME after 5 s of silence */
	if (ura_io_recv(cx, A_RECV, c->fd, 4096, 5 * URA_SEC) < 0)
		conn_close(cx);
}

static void conn_recv(ura_ctx *cx, const ura_msg *m)
{
	conn *c = ura_state(cx);
	size_t len;
	const void *data = ura_arg_bytes(m, 1, &len); /* lives in the message */
	if (ura_arg_i64(m, 0) <= 0 || ura_io_send(cx, A_SENT, c->fd, data, len) < 0)
		conn_close(cx); /* 0: the client closed; < 0: -errno */
}

static void conn_sent(ura_ctx *cx, const ura_msg *m)
{
	if (ura_arg_i64(m, 0) < 0)
		conn_close(cx);
	else
		conn_start(cx, m); /* the next recv */
}

static void conn_closed(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(echoing,
	URA_ON(A_START, "", conn_start),
	URA_ON(A_RECV, "ib", conn_recv),
	URA_ON(A_SENT, "i", conn_sent),
	URA_ON(A_CLOSED, "i", conn_closed));

static const ura_class conn_class = {
	.name = "conn",
	.state_size = sizeof(conn),
	.initial = &echoing,
};

/* ---- the server: accepts one connection and hands it to an actor ---- */

static void server_start(ura_ctx *cx, const ura_msg *m)
{
	int *lfd = ura_state(cx);
	(void)m;
	/* URA_IO_MULTISHOT as the flags would keep accepting */
	if (ura_io_accept(cx, A_ACCEPTED, *lfd, 0) < 0)
		ura_stop(cx);
}

static void server_accepted(ura_ctx *cx, const ura_msg *m)
{
	int fd = (int)ura_arg_i64(m, 0); /* the new fd, or -errno */
	ura_ref c;
	if (fd >= 0 && ura_spawn(cx, &conn_class, &fd, &c) == 0)
		ura_send(cx, c, A_START);
	else if (fd >= 0)
		close(fd);
	ura_stop(cx);
}

URA_BEHAVIOR(serving,
	URA_ON(A_START, "", server_start),
	URA_ON(A_ACCEPTED, "i", server_accepted));

static const ura_class server_class = {
	.name = "server",
	.state_size = sizeof(int),
	.initial = &serving,
};

/* ---- the client: connect, send, read the echo back, close ---- */

typedef struct {
	int fd;
	struct sockaddr_in addr;
	char got[64];
	size_t have;
} client;

static void client_start(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	(void)m;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 ||
	    ura_io_submit(cx, A_CONNECTED, &(ura_io_req){
		    .op = URA_IO_CONNECT, .fd = c->fd,
		    .addr = &c->addr, .addrlen = sizeof c->addr,
		    .timeout_ns = 5 * URA_SEC }) < 0) {
		printf("client: cannot connect\n");
		ura_stop(cx);
	}
}

static void client_connected(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	if (res < 0) {
		printf("client: connect: %s\n", ura_strerror((int)res));
		ura_io_close(cx, A_CLOSED, c->fd);
		return;
	}
	ura_io_send(cx, A_SENT, c->fd, greeting, strlen(greeting));
}

static void client_sent(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	(void)m;
	ura_io_recv(cx, A_RECV, c->fd, sizeof c->got - 1 - c->have, 5 * URA_SEC);
}

/* TCP is a byte stream: the echo may come back in more than one piece. */
static void client_recv(ura_ctx *cx, const ura_msg *m)
{
	client *c = ura_state(cx);
	size_t len;
	const void *data = ura_arg_bytes(m, 1, &len);
	if (ura_arg_i64(m, 0) > 0) {
		memcpy(c->got + c->have, data, len);
		c->have += len;
		if (c->have < strlen(greeting)) {
			client_sent(cx, m);
			return;
		}
	}
	printf("client got back \"%.*s\"\n", (int)c->have, c->got);
	ura_io_close(cx, A_CLOSED, c->fd);
}

URA_BEHAVIOR(connecting,
	URA_ON(A_START, "", client_start),
	URA_ON(A_CONNECTED, "i", client_connected),
	URA_ON(A_SENT, "i", client_sent),
	URA_ON(A_RECV, "ib", client_recv),
	URA_ON(A_CLOSED, "i", conn_closed));

static const ura_class client_class = {
	.name = "client",
	.state_size = sizeof(client),
	.initial = &connecting,
};

int main(void)
{
	/* A listening socket on 127.0.0.1 and a port the kernel picks. */
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof addr;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 ||
	    listen(lfd, 16) < 0 || getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
		perror("listen");
		return 1;
	}

	ura_system *sys;
	ura_ref srv, cl;
	CHECK(ura_system_new(&sys, NULL));
	CHECK(ura_spawn(sys, &server_class, &lfd, &srv));
	CHECK(ura_spawn(sys, &client_class, &(client){ .addr = addr }, &cl));
	/* I/O starts in handlers: a spawn's init on this thread has no ring. */
	CHECK(ura_send(sys, srv, A_START));
	CHECK(ura_send(sys, cl, A_START));
	CHECK(ura_system_await(sys)); /* operations in flight keep it busy */

	ura_stats st;
	CHECK(ura_system_stats(sys, &st));
	fprintf(stderr, "backend: %s\n", st.backend); /* io_uring(...) or epoll */
	printf("every I/O operation completed: %s\n",
	       st.io_submitted == st.io_completed && st.io_inflight == 0 ? "yes" : "no");
	close(lfd);
	CHECK(ura_system_destroy(sys));
	return 0;
}
