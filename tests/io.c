/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O (ura_io_*), on whichever backend this run has: io_uring, or
 * epoll + the pool with URA_IO_URING=0 (CI runs the suite both ways).
 *
 *  1. pipe: write, then read; the bytes come back in the message;
 *  2. regular file: openat, write at an offset, fsync, read it back,
 *     readv into the actor's own buffers, writev from them, close;
 *  3. sockets: multishot accept, connect, send, recv: an echo round trip
 *     with several clients;
 *  4. errors are completions: EBADF on a closed fd, ECONNREFUSED;
 *  5. a deadline: recv with nothing to read ends with -ETIME, on time;
 *  6. ura_io_cancel: -ECANCELED; a second cancel: -ENOENT;
 *  7. an actor that stops with a recv in flight: the recv is cancelled and
 *     destroy runs once, after its completion;
 *  8. bad input returns -EINVAL/-EBADF, never a crash;
 *  9. ura_offload: the result comes back; await waits for it;
 * 10. quiescence waits for a read that completes later;
 * 11. a large write through a socket buffer completes in full;
 * 12. poll for readiness;
 * 13. more operations in flight than the CQ has room for: the surplus
 *     waits in user space, and every completion arrives;
 * 14. stress: 400 actors on two workers each start receives (some with a
 *     deadline) and stop at a random moment, wherever they were stolen
 *     to: every destroy runs exactly once, after its operations ended.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tap.h"

#define A_GO URA_ATOM("go")
#define A_W URA_ATOM("w")
#define A_R URA_ATOM("r")
#define A_DONE URA_ATOM("done")

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* ---- 1. pipe ----------------------------------------------------------- */

static int g_pipe[2];
static _Atomic int64_t g_w_res = -999, g_r_res = -999;
static char g_r_data[64];

static void p_read_done(ura_ctx *cx, const ura_msg *m)
{
	size_t n = 0;
	const void *d = ura_arg_bytes(m, 1, &n);
	atomic_store(&g_r_res, ura_arg_i64(m, 0));
	if (n < sizeof g_r_data)
		memcpy(g_r_data, d, n);
	t_ok(ura_io_id(m) > 0 && !ura_io_more(m), "completion carries its op id");
	t_ok(ura_ref_null(ura_msg_sender(m)), "a completion has no sender");
	ura_stop(cx);
}

static void p_write_done(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_w_res, ura_arg_i64(m, 0));
	ura_io r = ura_io_read(cx, A_R, g_pipe[0], 64, -1);
	if (r < 0)
		atomic_store(&g_r_res, r);
}

static void p_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_io w = ura_io_write(cx, A_W, g_pipe[1], "hello, pipe", 11, -1);
	if (w < 0)
		atomic_store(&g_w_res, w);
}

URA_BEHAVIOR(pipe_beh,
	URA_ON(A_GO, "", p_go),
	URA_ON(A_W, "i", p_write_done),
	URA_ON(A_R, "ib", p_read_done));
static const ura_class pipe_cls = { .name = "pipe", .initial = &pipe_beh };

static void test_pipe(ura_system *sys)
{
	t_must(pipe2(g_pipe, O_CLOEXEC));
	ura_ref a;
	t_must(ura_spawn(sys, &pipe_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "pipe: await");
	t_eq(atomic_load(&g_w_res), 11, "pipe: write wrote 11 bytes");
	t_eq(atomic_load(&g_r_res), 11, "pipe: read got 11 bytes");
	t_streq(g_r_data, "hello, pipe", "pipe: the bytes came back in the message");
	close(g_pipe[0]);
	close(g_pipe[1]);
}

/* ---- 2. file ----------------------------------------------------------- */

struct file_st {
	int fd;
	int step;
	char a[4], b[8];
};
static char g_path[64];
static _Atomic int g_file_fail;
static int64_t g_file_res[10];
static char g_file_read[32], g_file_v[16], g_file_w[32];

#define A_F URA_ATOM("f")

static void f_step(ura_ctx *cx, const ura_msg *m)
{
	struct file_st *s = ura_state(cx);
	int64_t res = ura_arg_i64(m, 0);
	if (s->step < 10)
		g_file_res[s->step] = res;
	if (res < 0) {
		atomic_store(&g_file_fail, s->step + 1);
		ura_stop(cx);
		return;
	}
	ura_io rc = 0;
	switch (s->step++) {
	case 0: { /* opened */
		s->fd = (int)res;
		rc = ura_io_write(cx, A_F, s->fd, "0123456789abcdef", 16, 0);
		break;
	}
	case 1:
		rc = ura_io_write(cx, A_F, s->fd, "XY", 2, 4); /* at an offset */
		break;
	case 2:
		rc = ura_io_submit(cx, A_F, &(ura_io_req){ .op = URA_IO_FSYNC, .fd = s->fd });
		break;
	case 3:
		rc = ura_io_submit(cx, A_F, &(ura_io_req){ .op = URA_IO_READ, .fd = s->fd,
							    .len = 32, .offset = 0 });
		break;
	case 4: {
		size_t n = 0;
		const void *d = ura_arg_bytes(m, 1, &n);
		memcpy(g_file_read, d, n < 31 ? n : 31);
		struct iovec iov[2] = { { s->a, sizeof s->a }, { s->b, sizeof s->b } };
		rc = ura_io_submit(cx, A_F, &(ura_io_req){ .op = URA_IO_READV, .fd = s->fd,
							    .iov = iov, .iovcnt = 2, .offset = 2 });
		break;
	}
	case 5: {
		memcpy(g_file_v, s->a, 4);
		memcpy(g_file_v + 4, s->b, 8);
		/* Gathered from the actor's own buffers, appended at 16. */
		memcpy(s->a, "WXYZ", 4);
		memcpy(s->b, "wxyz0123", 8);
		struct iovec iov[2] = { { s->a, sizeof s->a }, { s->b, sizeof s->b } };
		rc = ura_io_submit(cx, A_F, &(ura_io_req){ .op = URA_IO_WRITEV, .fd = s->fd,
							    .iov = iov, .iovcnt = 2, .offset = 16 });
		break;
	}
	case 6:
		rc = ura_io_read(cx, A_F, s->fd, 64, 12);
		break;
	case 7: {
		size_t n = 0;
		const void *d = ura_arg_bytes(m, 1, &n);
		memcpy(g_file_w, d, n < 31 ? n : 31);
		rc = ura_io_close(cx, A_F, s->fd);
		break;
	}
	default:
		ura_stop(cx);
		return;
	}
	if (rc < 0) {
		atomic_store(&g_file_fail, 100 + s->step);
		ura_stop(cx);
	}
}

static void f_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_io rc = ura_io_submit(cx, A_F, &(ura_io_req){
		.op = URA_IO_OPENAT, .fd = AT_FDCWD, .path = g_path,
		.flags = O_RDWR | O_CREAT | O_TRUNC, .mode = 0600 });
	if (rc < 0)
		atomic_store(&g_file_fail, 99);
}

/* READ completions are "ib", the others "i": one case each. */
URA_BEHAVIOR(file_beh,
	URA_ON(A_GO, "", f_go),
	URA_ON(A_F, "i", f_step),
	URA_ON(A_F, "ib", f_step));
static const ura_class file_cls = { .name = "file", .initial = &file_beh,
				    .state_size = sizeof(struct file_st) };

static void test_file(ura_system *sys)
{
	snprintf(g_path, sizeof g_path, "/tmp/ura-io-test-%d", (int)getpid());
	ura_ref a;
	t_must(ura_spawn(sys, &file_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "file: await");
	t_eq(atomic_load(&g_file_fail), 0, "file: every step succeeded (failed at step %d: %lld)",
	     atomic_load(&g_file_fail),
	     (long long)(atomic_load(&g_file_fail) ? g_file_res[(atomic_load(&g_file_fail) - 1) % 10] : 0));
	t_eq(g_file_res[1], 16, "file: write returned 16");
	t_eq(g_file_res[2], 2, "file: write at offset 4 returned 2");
	t_eq(g_file_res[4], 16, "file: read returned 16");
	t_streq(g_file_read, "0123XY6789abcdef", "file: positioned write landed at offset 4");
	t_eq(g_file_res[5], 12, "file: readv filled 12 bytes");
	t_ok(memcmp(g_file_v, "23XY6789abcd", 12) == 0, "file: readv scattered into the actor's buffers");
	t_eq(g_file_res[6], 12, "file: writev wrote 12 bytes");
	t_eq(g_file_res[7], 16, "file: read from 12 returned the last 16 bytes");
	t_streq(g_file_w, "cdefWXYZwxyz0123", "file: writev gathered the actor's buffers at offset 16");
	t_eq(g_file_res[8], 0, "file: close returned 0");
	unlink(g_path);
}

/* ---- 3. sockets: accept, connect, send, recv ------------------------------ */

#define A_ACC URA_ATOM("acc")
#define A_CONN URA_ATOM("conn")
#define A_SENT URA_ATOM("sent")
#define A_RECV URA_ATOM("recv")
#define NCLIENTS 8

static int g_lfd;
static struct sockaddr_in g_addr;
static _Atomic int g_echoed, g_accepted, g_client_err;

/* Echo connection: recv -> send -> recv; stops at EOF. */
struct econn { int fd; };
static void ec_recv(ura_ctx *cx, const ura_msg *m)
{
	struct econn *s = ura_state(cx);
	int64_t n = ura_arg_i64(m, 0);
	if (n <= 0) {
		close(s->fd);
		ura_stop(cx);
		return;
	}
	size_t len;
	const void *d = ura_arg_bytes(m, 1, &len);
	ura_io_send(cx, A_SENT, s->fd, d, len);
}
static void ec_sent(ura_ctx *cx, const ura_msg *m)
{
	struct econn *s = ura_state(cx);
	if (ura_arg_i64(m, 0) < 0) {
		close(s->fd);
		ura_stop(cx);
		return;
	}
	ura_io_recv(cx, A_RECV, s->fd, 4096, 0);
}
static void ec_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct econn *s = ura_state(cx);
	ura_io_recv(cx, A_RECV, s->fd, 4096, 0);
}
URA_BEHAVIOR(econn_beh,
	URA_ON(A_GO, "", ec_go),
	URA_ON(A_RECV, "ib", ec_recv),
	URA_ON(A_SENT, "i", ec_sent));
static const ura_class econn_cls = { .name = "econn", .initial = &econn_beh,
				     .state_size = sizeof(struct econn) };

static _Atomic int64_t g_acc_id;
static void acc_new(ura_ctx *cx, const ura_msg *m)
{
	int64_t fd = ura_arg_i64(m, 0);
	if (fd < 0) {
		if (fd != -ECANCELED)
			atomic_store(&g_client_err, (int)fd);
		ura_stop(cx);
		return;
	}
	t_ok(ura_io_more(m), "multishot accept: more connections will follow");
	struct econn st = { (int)fd };
	ura_ref c;
	if (ura_spawn(cx, &econn_cls, &st, &c) == 0)
		ura_send(cx, c, A_GO);
	if (atomic_fetch_add(&g_accepted, 1) + 1 == NCLIENTS)
		ura_io_cancel(cx, atomic_load(&g_acc_id));
}
static void acc_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_acc_id, ura_io_accept(cx, A_ACC, g_lfd, URA_IO_MULTISHOT));
}
URA_BEHAVIOR(acc_beh, URA_ON(A_GO, "", acc_go), URA_ON(A_ACC, "i", acc_new));
static const ura_class acc_cls = { .name = "acceptor", .initial = &acc_beh };

/* Client: socket, connect, send "ping-<k>", expect it back, close. */
struct client { int fd; int k; char want[32]; size_t got; };
static void cl_fail(ura_ctx *cx, int64_t err)
{
	struct client *s = ura_state(cx);
	atomic_store(&g_client_err, (int)err);
	close(s->fd);
	ura_stop(cx);
}
static void cl_conn(ura_ctx *cx, const ura_msg *m)
{
	struct client *s = ura_state(cx);
	if (ura_arg_i64(m, 0) < 0)
		{ cl_fail(cx, ura_arg_i64(m, 0)); return; }
	snprintf(s->want, sizeof s->want, "ping-%d", s->k);
	ura_io_send(cx, A_SENT, s->fd, s->want, strlen(s->want));
}
static void cl_sent(ura_ctx *cx, const ura_msg *m)
{
	struct client *s = ura_state(cx);
	if (ura_arg_i64(m, 0) != (int64_t)strlen(s->want))
		{ cl_fail(cx, -EIO); return; }
	ura_io_recv(cx, A_RECV, s->fd, 64, 5 * URA_SEC);
}
static void cl_recv(ura_ctx *cx, const ura_msg *m)
{
	struct client *s = ura_state(cx);
	int64_t n = ura_arg_i64(m, 0);
	if (n <= 0)
		{ cl_fail(cx, n ? n : -EPIPE); return; }
	size_t len;
	const char *d = ura_arg_bytes(m, 1, &len);
	if (memcmp(d, s->want + s->got, len) != 0)
		{ cl_fail(cx, -EILSEQ); return; }
	s->got += len;
	if (s->got < strlen(s->want)) {
		ura_io_recv(cx, A_RECV, s->fd, 64, 5 * URA_SEC);
		return;
	}
	atomic_fetch_add(&g_echoed, 1);
	close(s->fd);
	ura_stop(cx);
}
static void cl_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct client *s = ura_state(cx);
	s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ura_io r = ura_io_submit(cx, A_CONN, &(ura_io_req){
		.op = URA_IO_CONNECT, .fd = s->fd, .addr = &g_addr, .addrlen = sizeof g_addr });
	if (r < 0)
		cl_fail(cx, r);
}
URA_BEHAVIOR(client_beh,
	URA_ON(A_GO, "", cl_go),
	URA_ON(A_CONN, "i", cl_conn),
	URA_ON(A_SENT, "i", cl_sent),
	URA_ON(A_RECV, "ib", cl_recv));
static const ura_class client_cls = { .name = "client", .initial = &client_beh,
				      .state_size = sizeof(struct client) };

static int listen_any(struct sockaddr_in *out)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof a;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &l) < 0)
		return -errno;
	*out = a;
	return fd;
}

static void test_sockets(ura_system *sys)
{
	g_lfd = listen_any(&g_addr);
	t_must(g_lfd);
	ura_ref acc;
	t_must(ura_spawn(sys, &acc_cls, NULL, &acc));
	t_must(ura_send(sys, acc, A_GO));
	for (int k = 0; k < NCLIENTS; k++) {
		struct client c = { .k = k };
		ura_ref r;
		t_must(ura_spawn(sys, &client_cls, &c, &r));
		t_must(ura_send(sys, r, A_GO));
	}
	t_rc(await_guarded(sys), 0, "sockets: await (the acceptor is cancelled after %d)", NCLIENTS);
	t_eq(atomic_load(&g_client_err), 0, "sockets: no client saw an error");
	t_eq(atomic_load(&g_accepted), NCLIENTS, "sockets: multishot accept took every connection");
	t_eq(atomic_load(&g_echoed), NCLIENTS, "sockets: every client got its bytes back");
	close(g_lfd);
}

/* ---- 4-6, 12. errors, deadlines, cancel, poll ------------------------------ */

#define A_E1 URA_ATOM("e1")
#define A_E2 URA_ATOM("e2")
#define A_E3 URA_ATOM("e3")
#define A_E4 URA_ATOM("e4")
#define A_E5 URA_ATOM("e5")
static _Atomic int64_t g_ebadf = 1, g_refused = 1, g_etime = 1, g_ecancel = 1, g_cancel2 = 1,
		       g_poll = -1;
static uint64_t g_t0, g_t_etime;
static int g_sp[2], g_pp[2];
static _Atomic int g_err_left;

static void e_done(ura_ctx *cx)
{
	if (atomic_fetch_sub(&g_err_left, 1) == 1)
		ura_stop(cx);
}
static void e_badf(ura_ctx *cx, const ura_msg *m) { atomic_store(&g_ebadf, ura_arg_i64(m, 0)); e_done(cx); }
static void e_ref(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_refused, ura_arg_i64(m, 0));
	e_done(cx);
}
static void e_time(ura_ctx *cx, const ura_msg *m)
{
	g_t_etime = t_now_ns() - g_t0;
	atomic_store(&g_etime, ura_arg_i64(m, 0));
	e_done(cx);
}
static void e_cancel(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_ecancel, ura_arg_i64(m, 0));
	atomic_store(&g_cancel2, ura_io_cancel(cx, ura_io_id(m)));
	e_done(cx);
}
static void e_poll(ura_ctx *cx, const ura_msg *m) { atomic_store(&g_poll, ura_arg_i64(m, 0)); e_done(cx); }

static int g_refused_fd = -1;
static void e_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_err_left, 5);
	/* An fd that is not open (high enough that nothing opened in the
	 * meantime takes its number): -EBADF as a completion. */
	int fd = 900;
	while (fcntl(fd, F_GETFD) >= 0)
		fd++;
	ura_io_read(cx, A_E1, fd, 16, -1);
	/* A port nobody listens on: -ECONNREFUSED. */
	struct sockaddr_in a;
	int l = listen_any(&a);
	close(l);
	g_refused_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ura_io_submit(cx, A_E2, &(ura_io_req){ .op = URA_IO_CONNECT, .fd = g_refused_fd,
					       .addr = &a, .addrlen = sizeof a });
	/* Nothing to read within 50 ms: -ETIME. */
	g_t0 = t_now_ns();
	ura_io_recv(cx, A_E3, g_sp[0], 16, 50 * URA_MSEC);
	/* Cancelled at once: -ECANCELED. */
	ura_io id = ura_io_recv(cx, A_E4, g_sp[1], 16, 0);
	t_rc(ura_io_cancel(cx, id), 0, "cancel of an operation in flight: 0");
	/* Readable pipe: POLLIN. */
	ura_io_submit(cx, A_E5, &(ura_io_req){ .op = URA_IO_POLL, .fd = g_pp[0], .events = POLLIN });
}
URA_BEHAVIOR(err_beh,
	URA_ON(A_GO, "", e_go),
	URA_ON(A_E1, "ib", e_badf),
	URA_ON(A_E2, "i", e_ref),
	URA_ON(A_E3, "ib", e_time),
	URA_ON(A_E4, "ib", e_cancel),
	URA_ON(A_E5, "i", e_poll));
static const ura_class err_cls = { .name = "errors", .initial = &err_beh };

static void test_errors(ura_system *sys)
{
	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_sp));
	t_must(pipe2(g_pp, O_CLOEXEC));
	t_ok(write(g_pp[1], "x", 1) == 1, "pipe primed");
	ura_ref a;
	t_must(ura_spawn(sys, &err_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "errors: await");
	t_eq(atomic_load(&g_ebadf), -EBADF, "read on a closed fd completes with -EBADF");
	t_eq(atomic_load(&g_refused), -ECONNREFUSED, "connect to a closed port: -ECONNREFUSED");
	t_eq(atomic_load(&g_etime), -ETIME, "recv past its deadline: -ETIME");
	t_ok(g_t_etime >= 45 * URA_MSEC && g_t_etime < 2 * URA_SEC,
	     "the deadline fired after ~50 ms (%.1f ms)", g_t_etime / 1e6);
	t_eq(atomic_load(&g_ecancel), -ECANCELED, "cancelled recv: -ECANCELED");
	t_eq(atomic_load(&g_cancel2), -ENOENT, "cancel after completion: -ENOENT");
	t_ok(atomic_load(&g_poll) > 0 && (atomic_load(&g_poll) & POLLIN), "poll: POLLIN (%lld)",
	     (long long)atomic_load(&g_poll));
	close(g_sp[0]);
	close(g_sp[1]);
	close(g_pp[0]);
	close(g_pp[1]);
	close(g_refused_fd);
}

/* ---- 7. stop with I/O in flight ------------------------------------------ */

static _Atomic int g_zombie_destroyed;
static _Atomic int g_zombie_seen_inflight = -1;
static ura_system *g_sys;
struct zst { char buf[256]; };
static void z_destroy(void *st)
{
	(void)st;
	/* By now the kernel has let go of buf: the readv was cancelled
	 * and its completion taken. */
	ura_stats s = stats(g_sys);
	atomic_store(&g_zombie_seen_inflight, (int)s.io_inflight);
	atomic_fetch_add(&g_zombie_destroyed, 1);
}
static void z_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct zst *s = ura_state(cx);
	struct iovec iov = { s->buf, sizeof s->buf };
	ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_READV, .fd = g_sp[0], .iov = &iov,
					      .iovcnt = 1 });
	/* A reason, kept through the wait for the cancelled read (the
	 * zombie's record) into the slot's tombstone. */
	ura_exit(cx, URA_ATOM("boom"), ura_v_i64(7));
}
static _Atomic uint64_t g_z_reason;
static _Atomic int64_t g_z_value;
static void zw_answer(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	atomic_store(&g_z_value, ura_exit_value(m).u.i64);
	atomic_store(&g_z_reason, ura_msg_tag(m) == URA_ERROR ? ura_exit_reason(m) : 1);
}
/* GO to the actor, and a request right behind it: the request reaches
 * it after its stop, while its read is being cancelled (a zombie), and
 * is answered with the reason the stop kept in the zombie's record. */
static void zw_go(ura_ctx *cx, const ura_msg *m)
{
	ura_ref z = ura_arg_ref(m, 0);
	if (ura_send(cx, z, A_GO) == 0)
		ura_request(cx, z, zw_answer, NULL, A_GO);
}
URA_BEHAVIOR(zw_beh, URA_ON(A_GO, "r", zw_go));
static const ura_class zw_cls = { .name = "zwatch", .initial = &zw_beh };
static void z_never(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
URA_BEHAVIOR(z_beh, URA_ON(A_GO, "", z_go), URA_ON_ANY(0, z_never));
static const ura_class z_cls = { .name = "zombie", .initial = &z_beh,
				 .state_size = sizeof(struct zst), .destroy = z_destroy };

static void test_stop_inflight(ura_system *sys)
{
	g_sys = sys;
	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_sp));
	ura_ref a;
	t_must(ura_spawn(sys, &z_cls, NULL, &a));
	ura_ref w;
	t_must(ura_spawn(sys, &zw_cls, NULL, &w));
	t_must(ura_send(sys, w, A_GO, a));
	t_rc(await_guarded(sys), 0, "stop in flight: await (the recv was cancelled)");
	char zn[URA_ATOM_MAX + 1];
	t_ok(atomic_load(&g_z_reason) == URA_ATOM("boom") && atomic_load(&g_z_value) == 7,
	     "a request that reached it after its stop, during the cancel: its reason (%s %lld)",
	     ura_atom_name(atomic_load(&g_z_reason), zn), (long long)atomic_load(&g_z_value));
	t_eq(atomic_load(&g_zombie_destroyed), 1, "destroy ran once");
	t_eq(atomic_load(&g_zombie_seen_inflight), 0, "destroy ran after the op's completion");
	t_rc(ura_send(sys, a, A_GO), -ESRCH, "its ref is stale");
	close(g_sp[0]);
	close(g_sp[1]);
}

/* ---- 8. bad input ------------------------------------------------------- */

static _Atomic int g_bad_ok;
static void b_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	int ok = 1;
	ok &= ura_io_read(cx, A_R, -1, 16, 0) == -EBADF;
	ok &= ura_io_read(cx, A_R, 0, URA_IO_MAX_LEN + 1, 0) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = 999, .fd = 0 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_ACCEPT, .fd = 0,
						    .flags = URA_IO_MULTISHOT,
						    .timeout_ns = URA_SEC }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_READV, .fd = 0 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_WRITE, .fd = 1, .len = 4 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_CONNECT, .fd = 0 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_OPENAT, .fd = AT_FDCWD }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_READ, .fd = 0, .len = 1,
						    .timeout_ns = URA_MAX_DELAY + 1 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_READ, .fd = 0, .len = 1,
						    .offset = -2 }) == -EINVAL;
	ok &= ura_io_submit(cx, 0, &(ura_io_req){ .op = URA_IO_READ, .fd = 0 }) == -EINVAL;
	ok &= ura_io_submit(cx, A_R, NULL) == -EINVAL;
	ok &= ura_io_cancel(cx, 12345) == -ENOENT;
	ok &= ura_io_cancel(cx, -1) == -EINVAL;
	ok &= ura_offload(cx, A_R, NULL, NULL) == -EINVAL;
	atomic_store(&g_bad_ok, ok ? 1 : -1);
	ura_stop(cx);
}
URA_BEHAVIOR(bad_beh, URA_ON(A_GO, "", b_go));
static const ura_class bad_cls = { .name = "bad", .initial = &bad_beh };

static int bad_init(ura_ctx *cx, void *st, const void *arg)
{
	(void)st;
	(void)arg;
	/* Off the workers there is no ring: refused, not crashed. */
	return ura_io_read(cx, A_R, 0, 1, 0) == -EPERM ? 0 : -EIO;
}
static const ura_class bad_init_cls = { .name = "bad_init", .initial = &bad_beh,
					.init = bad_init };

static void test_bad_input(ura_system *sys)
{
	ura_ref a;
	t_must(ura_spawn(sys, &bad_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "bad input: await");
	t_eq(atomic_load(&g_bad_ok), 1, "bad input: every bad request refused with the right code");
	t_rc(ura_spawn(sys, &bad_init_cls, NULL, &a), 0, "I/O from init off the workers: -EPERM");
	t_rc(ura_io_submit(NULL, A_R, NULL), -EINVAL, "NULL ctx: -EINVAL");
	t_ok(ura_io_id(NULL) == 0 && ura_io_more(NULL) == 0, "accessors take NULL");
	t_rc(await_guarded(sys), 0, "bad input: settle");
}

/* ---- 9, 10. offload and quiescence --------------------------------------- */

static _Atomic int64_t g_off_res;
static _Atomic int g_off_thread_ok;
static pthread_t g_main_thread;
static int64_t work(void *arg)
{
	sleep_ms(50);
	atomic_store(&g_off_thread_ok, !pthread_equal(pthread_self(), g_main_thread));
	return (int64_t)(intptr_t)arg * 2 + ((int64_t)1 << 40);
}
static void o_done(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_off_res, ura_arg_i64(m, 0));
	ura_stop(cx);
}
static void o_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_io id = ura_offload(cx, A_DONE, work, (void *)(intptr_t)21);
	if (id < 0)
		atomic_store(&g_off_res, id);
}
URA_BEHAVIOR(off_beh, URA_ON(A_GO, "", o_go), URA_ON(A_DONE, "i", o_done));
static const ura_class off_cls = { .name = "offload", .initial = &off_beh };

static int g_late[2];
static _Atomic int64_t g_late_res;
static void *late_writer(void *arg)
{
	(void)arg;
	sleep_ms(150);
	if (write(g_late[1], "late", 4) != 4)
		abort();
	return NULL;
}
static void l_done(ura_ctx *cx, const ura_msg *m) { atomic_store(&g_late_res, ura_arg_i64(m, 0)); ura_stop(cx); }
static void l_go(ura_ctx *cx, const ura_msg *m) { (void)m; ura_io_read(cx, A_R, g_late[0], 16, -1); }
URA_BEHAVIOR(late_beh, URA_ON(A_GO, "", l_go), URA_ON(A_R, "ib", l_done));
static const ura_class late_cls = { .name = "late", .initial = &late_beh };

static void test_offload_and_await(ura_system *sys)
{
	g_main_thread = pthread_self();
	ura_ref a;
	t_must(ura_spawn(sys, &off_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "offload: await waits for the function");
	t_eq(atomic_load(&g_off_res), 42 + ((int64_t)1 << 40), "offload: the 64-bit result came back");
	t_eq(atomic_load(&g_off_thread_ok), 1, "offload: ran on a pool thread");

	t_must(pipe2(g_late, O_CLOEXEC));
	pthread_t th;
	t_must(ura_spawn(sys, &late_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	/* Before the writer starts: it writes 150 ms after this at the
	 * earliest, however late this thread gets the CPU back. */
	uint64_t t0 = t_now_ns();
	pthread_create(&th, NULL, late_writer, NULL);
	t_rc(await_guarded(sys), 0, "await with a read in flight");
	uint64_t dt = t_now_ns() - t0;
	t_eq(atomic_load(&g_late_res), 4, "await returned only after the read completed");
	t_ok(dt >= 100 * URA_MSEC, "await waited for the I/O (%.0f ms)", dt / 1e6);
	pthread_join(th, NULL);
	close(g_late[0]);
	close(g_late[1]);
}

/* ---- 11. a big send completes in full ------------------------------------- */

#define BIG (4u << 20)
static _Atomic int64_t g_big_res;
static void *big_reader(void *arg)
{
	int fd = *(int *)arg;
	static char buf[65536];
	size_t total = 0;
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		total += (size_t)n;
	return (void *)(uintptr_t)total;
}
static void big_done(ura_ctx *cx, const ura_msg *m)
{
	atomic_store(&g_big_res, ura_arg_i64(m, 0));
	close(g_sp[1]);
	ura_stop(cx);
}
static void big_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	char *p = malloc(BIG);
	memset(p, 'z', BIG);
	ura_io_send(cx, A_W, g_sp[1], p, BIG);
	free(p); /* copied: ours again at once */
}
URA_BEHAVIOR(big_beh, URA_ON(A_GO, "", big_go), URA_ON(A_W, "i", big_done));
static const ura_class big_cls = { .name = "big", .initial = &big_beh };

static void test_big_send(ura_system *sys)
{
	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_sp));
	pthread_t th;
	pthread_create(&th, NULL, big_reader, &g_sp[0]);
	ura_ref a;
	t_must(ura_spawn(sys, &big_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "big send: await");
	void *got;
	pthread_join(th, &got);
	t_eq(atomic_load(&g_big_res), BIG, "a 4 MiB send reports every byte");
	t_eq((uint64_t)(uintptr_t)got, BIG, "and the peer read every byte");
	close(g_sp[0]);
}

/* ---- 13. beyond the CQ ---------------------------------------------------- */

#define MANY 5000
static int g_many[2];
static _Atomic int g_many_done, g_many_bad;
static void m_done(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	if (!(ura_arg_i64(m, 0) & POLLIN))
		atomic_fetch_add(&g_many_bad, 1);
	if (atomic_fetch_add(&g_many_done, 1) + 1 == MANY)
		ura_stop(cx);
}
static void m_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	for (int i = 0; i < MANY; i++)
		if (ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_POLL, .fd = g_many[0],
							   .events = POLLIN }) < 0)
			atomic_fetch_add(&g_many_bad, 1);
	/* All of them pending; now make them all complete at once. */
	if (write(g_many[1], "x", 1) != 1)
		atomic_fetch_add(&g_many_bad, 1);
}
URA_BEHAVIOR(many_beh, URA_ON(A_GO, "", m_go), URA_ON(A_R, "i", m_done));
static const ura_class many_cls = { .name = "many", .initial = &many_beh };

static void test_many(ura_system *sys)
{
	t_must(pipe2(g_many, O_CLOEXEC));
	ura_stats before = stats(sys);
	ura_ref a;
	t_must(ura_spawn(sys, &many_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "%d polls in flight: await", MANY);
	t_eq(atomic_load(&g_many_done), MANY, "every one of %d completions arrived", MANY);
	t_eq(atomic_load(&g_many_bad), 0, "each said POLLIN");
	ura_stats after = stats(sys);
	if (strncmp(after.backend, "io_uring", 8) == 0)
		t_ok(after.io_deferred > before.io_deferred,
		     "the surplus over the CQ budget waited in user space (%llu)",
		     (unsigned long long)(after.io_deferred - before.io_deferred));
	close(g_many[0]);
	close(g_many[1]);
}

/* ---- 14. stop with I/O in flight, under stealing ------------------------ */

#define NSTRESS 400
#define A_QUIT URA_ATOM("quit")
static int g_st_sp[2];
static _Atomic int g_st_destroyed, g_st_early;
static _Atomic int g_st_once[NSTRESS];
struct sst { int id; int ops; char buf[64]; };
static void st_destroy(void *p)
{
	struct sst *s = p;
	if (s->id < 0 || s->id >= NSTRESS || atomic_fetch_add(&g_st_once[s->id], 1))
		atomic_fetch_add(&g_st_early, 1); /* twice, or garbage */
	atomic_fetch_add(&g_st_destroyed, 1);
}
static void st_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct sst *s = ura_state(cx);
	/* A readv into the state (pinned until the op ends), a recv, and a
	 * recv with a deadline that may or may not pass first. */
	struct iovec iov = { s->buf, sizeof s->buf };
	ura_io_submit(cx, A_R, &(ura_io_req){ .op = URA_IO_READV, .fd = g_st_sp[0], .iov = &iov,
					      .iovcnt = 1 });
	ura_io_recv(cx, A_R, g_st_sp[0], 16, 0);
	ura_io_recv(cx, A_R, g_st_sp[0], 16, (uint64_t)(s->id % 7) * 100 * URA_USEC + 1);
	ura_send_after(cx, ura_self(cx), (uint64_t)(s->id % 11) * 50 * URA_USEC, A_QUIT);
}
static void st_any(ura_ctx *cx, const ura_msg *m) { (void)cx; (void)m; }
static void st_quit(ura_ctx *cx, const ura_msg *m) { (void)m; ura_stop(cx); }
URA_BEHAVIOR(st_beh, URA_ON(A_GO, "", st_go), URA_ON(A_QUIT, "", st_quit),
	     URA_ON_ANY(A_R, st_any));
static const ura_class st_cls = { .name = "stress", .initial = &st_beh,
				  .state_size = sizeof(struct sst), .destroy = st_destroy };

static void test_stress_stop(ura_system *sys)
{
	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_st_sp));
	long n = t_scaled(NSTRESS);
	for (long i = 0; i < n; i++) {
		struct sst st = { .id = (int)i };
		ura_ref a;
		t_must(ura_spawn(sys, &st_cls, &st, &a));
		t_must(ura_send(sys, a, A_GO));
	}
	t_rc(await_guarded(sys), 0, "stress: await (every operation cancelled)");
	t_eq(atomic_load(&g_st_destroyed), n, "stress: every destroy ran");
	t_eq(atomic_load(&g_st_early), 0, "stress: each exactly once");
	t_eq(stats(sys).io_inflight, 0, "stress: nothing left in flight");
	close(g_st_sp[0]);
	close(g_st_sp[1]);
}


/* ---- 12. hardening: huge fds, and deadlines of resumed writes --------- */

/* An fd number no process has open, far above any table: the epoll
 * backend sized its table by the fd's value and doubled past INT_MAX,
 * looping forever (issue 13, item 7); io_uring says -EBADF. */
#define A_HUGE URA_ATOM("huge")
#define A_HUGE2 URA_ATOM("huge2")
static _Atomic int64_t g_huge = 1, g_huge2 = 1;
static void h_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	if (ura_io_recv(cx, A_HUGE, 1 << 30, 16, 0) <= 0)
		atomic_store(&g_huge, -999);
	if (ura_io_read(cx, A_HUGE2, INT_MAX - 1, 16, -1) <= 0)
		atomic_store(&g_huge2, -999);
}
static void h_done(ura_ctx *cx, const ura_msg *m) { (void)cx; atomic_store(&g_huge, ura_arg_i64(m, 0)); }
static void h_done2(ura_ctx *cx, const ura_msg *m) { (void)cx; atomic_store(&g_huge2, ura_arg_i64(m, 0)); }
URA_BEHAVIOR(huge_beh, URA_ON(A_GO, "", h_go), URA_ON(A_HUGE, "ib", h_done),
	     URA_ON(A_HUGE2, "ib", h_done2));
static const ura_class huge_cls = { .name = "huge_fd", .initial = &huge_beh };

/* A send with a deadline to a peer that reads a trickle: each short
 * write resumed got a fresh deadline, so the send lived as long as the
 * trickle (3.8 s for 1 MiB here) instead of ending with -ETIME. */
#define A_SLOW URA_ATOM("slow")
static _Atomic int64_t g_slow = 1;
static _Atomic int g_trickle_stop;
static int g_tr[2];
static void *trickle(void *arg)
{
	(void)arg;
	char buf[16 << 10];
	while (!atomic_load(&g_trickle_stop)) {
		if (read(g_tr[1], buf, sizeof buf) <= 0)
			break;
		usleep(50 * 1000);
	}
	return NULL;
}
static void slow_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	static char big[1 << 20];
	if (ura_io_submit(cx, A_SLOW, &(ura_io_req){ .op = URA_IO_SEND, .fd = g_tr[0],
			  .buf = big, .len = sizeof big, .timeout_ns = 300 * URA_MSEC }) <= 0)
		atomic_store(&g_slow, -999);
}
static void slow_done(ura_ctx *cx, const ura_msg *m) { (void)cx; atomic_store(&g_slow, ura_arg_i64(m, 0)); }
URA_BEHAVIOR(slow_beh, URA_ON(A_GO, "", slow_go), URA_ON(A_SLOW, "i", slow_done));
static const ura_class slow_cls = { .name = "slow_send", .initial = &slow_beh };

static void test_hardening(ura_system *sys)
{
	ura_ref a;
	t_must(ura_spawn(sys, &huge_cls, NULL, &a));
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "huge fds: await (the worker did not hang)");
	t_eq(atomic_load(&g_huge), -EBADF, "recv on fd 1 << 30: -EBADF");
	t_eq(atomic_load(&g_huge2), -EBADF, "read on fd INT_MAX - 1: -EBADF");

	t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, g_tr));
	pthread_t th;
	t_must(-pthread_create(&th, NULL, trickle, NULL));
	t_must(ura_spawn(sys, &slow_cls, NULL, &a));
	uint64_t t0 = t_now_ns();
	t_must(ura_send(sys, a, A_GO));
	t_rc(await_guarded(sys), 0, "trickle send: await");
	uint64_t took = t_now_ns() - t0;
	t_eq(atomic_load(&g_slow), -ETIME,
	     "a send whose peer reads a trickle ends at its deadline: -ETIME");
	t_diag("it ended after %.1f ms (deadline 300 ms)", took / 1e6);
	atomic_store(&g_trickle_stop, 1);
	shutdown(g_tr[0], SHUT_RDWR);
	pthread_join(th, NULL);
	close(g_tr[0]);
	close(g_tr[1]);
}

int main(void)
{
	ura_system *sys = t_system(2);
	t_diag("backend: %s", stats(sys).backend);
	test_pipe(sys);
	test_file(sys);
	test_sockets(sys);
	test_errors(sys);
	test_stop_inflight(sys);
	test_bad_input(sys);
	test_offload_and_await(sys);
	test_big_send(sys);
	test_many(sys);
	test_stress_stop(sys);
	test_hardening(sys);
	ura_stats st = stats(sys);
	t_eq(st.io_inflight, 0, "nothing in flight at the end (%llu submitted)",
	     (unsigned long long)st.io_submitted);
	t_destroy(sys);
	return t_done();
}
