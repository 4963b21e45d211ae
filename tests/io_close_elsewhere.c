/* SPDX-License-Identifier: MIT */
/*
 * A close made on one worker reaches the waits of another (the epoll
 * fallback, forced here: io_uring's requests hold their file, epoll's
 * waiters are kept by fd number, per worker). An actor starts a recv on
 * worker X, X is then kept busy, and the actor, woken from outside, runs
 * on the other worker and closes the fd there. Before the fd map of
 * ring/epoll_io.c the recv stayed in X's table: it never completed (the
 * await below timed out), and once the number was reused by a new socket
 * X's stale waiter stood ready to read that socket's bytes. Now it ends
 * with -EBADF, as a waiter on the closing worker does, the close runs
 * after X has let the fd go, and a new socket on the same number gets its
 * own bytes. Rounds where the close ran on X itself count for nothing;
 * the test needs at least one that moved.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tap.h"

#define A_START URA_ATOM("start")
#define A_CLOSE URA_ATOM("close")
#define A_SPIN URA_ATOM("spin")
#define A_RX URA_ATOM("rx")
#define A_RX2 URA_ATOM("rx2")
#define A_CLOSED URA_ATOM("closed")
#define A_RECV URA_ATOM("recv")
#define ROUNDS 10

static int g_fd;                       /* the fd under test this round */
static _Atomic int g_recv_w = -1;      /* worker the recv started on */
static _Atomic int g_close_w = -1;     /* worker the close was asked on */
static _Atomic int g_started, g_close_asked;
static _Atomic int64_t g_rx_res, g_close_res, g_rx2_res;
static _Atomic int g_rx_done, g_close_done, g_rx2_done;
static char g_rx2_buf[16];
static ura_ref g_spinner;

static void on_spin(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	/* Keeps the recv's worker busy until the close was asked for
	 * elsewhere (at most 2 s): the actor must run on the other one. */
	uint64_t end = t_now_ns() + 2 * URA_SEC;
	while (!atomic_load(&g_close_asked) && t_now_ns() < end)
		;
}
URA_BEHAVIOR(spin_beh, URA_ON(A_SPIN, "", on_spin));
static const ura_class spin_cls = { .name = "spinner", .initial = &spin_beh };

static void on_start(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_recv_w, (int)ura_worker_id(cx));
	ura_io id = ura_io_recv(cx, A_RX, g_fd, 8, 0);
	if (id < 0)
		atomic_store(&g_rx_res, id), atomic_store(&g_rx_done, 1);
	ura_send(cx, g_spinner, A_SPIN);
	atomic_store(&g_started, 1);
}
static void on_close(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	atomic_store(&g_close_w, (int)ura_worker_id(cx));
	ura_io id = ura_io_submit(cx, A_CLOSED, &(ura_io_req){ .op = URA_IO_CLOSE, .fd = g_fd });
	if (id < 0)
		atomic_store(&g_close_res, id), atomic_store(&g_close_done, 1);
	atomic_store(&g_close_asked, 1);
}
static void on_rx(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	atomic_store(&g_rx_res, ura_arg_i64(m, 0));
	atomic_store(&g_rx_done, 1);
}
static void on_closed(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	atomic_store(&g_close_res, ura_arg_i64(m, 0));
	atomic_store(&g_close_done, 1);
}
static void on_recv(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_io id = ura_io_recv(cx, A_RX2, g_fd, sizeof g_rx2_buf, 0);
	if (id < 0)
		atomic_store(&g_rx2_res, id), atomic_store(&g_rx2_done, 1);
}
static void on_rx2(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	int64_t n = ura_arg_i64(m, 0);
	size_t len;
	const void *d = ura_arg_bytes(m, 1, &len);
	if (d && len < sizeof g_rx2_buf)
		memcpy(g_rx2_buf, d, len);
	atomic_store(&g_rx2_res, n);
	atomic_store(&g_rx2_done, 1);
}
URA_BEHAVIOR(user_beh,
	URA_ON(A_START, "", on_start),
	URA_ON(A_CLOSE, "", on_close),
	URA_ON(A_RX, "ib", on_rx),
	URA_ON(A_CLOSED, "i", on_closed),
	URA_ON(A_RECV, "", on_recv),
	URA_ON(A_RX2, "ib", on_rx2));
static const ura_class user_cls = { .name = "user", .initial = &user_beh };

static void wait_flag(_Atomic int *f)
{
	uint64_t end = t_now_ns() + 10 * URA_SEC;
	while (!atomic_load(f) && t_now_ns() < end)
		usleep(1000);
}

int main(void)
{
	if (getenv("URA_WORKERS")) {
		t_skip("URA_WORKERS set: it overrides the worker count under test");
		return t_done();
	}
	/* The fd map is the epoll fallback's (see the top). */
	setenv("URA_IO_URING", "0", 1);
	ura_system *sys = t_system(2);
	t_streq(stats(sys).backend, "epoll", "the epoll fallback is in use");
	t_must(ura_spawn(sys, &spin_cls, NULL, &g_spinner));
	int moved = 0, ebadf = 0, closed_ok = 0, reused = 0, reuse_ok = 0, hung = 0, done = 0;
	for (int r = 0; r < ROUNDS && !hung; r++) {
		int sp[2];
		t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp));
		g_fd = sp[0];
		atomic_store(&g_started, 0);
		atomic_store(&g_close_asked, 0);
		atomic_store(&g_rx_done, 0);
		atomic_store(&g_close_done, 0);
		atomic_store(&g_rx2_done, 0);
		ura_ref u;
		t_must(ura_spawn(sys, &user_cls, NULL, &u));
		t_must(ura_send(sys, u, A_START));
		wait_flag(&g_started);
		/* Woken from outside while the recv's worker spins: the other
		 * worker takes it (mostly; see the top). */
		usleep(20000);
		t_must(ura_send(sys, u, A_CLOSE));
		if (await_guarded(sys) < 0) {
			t_diag("round %d: recv on worker %d, close on %d: hung", r,
			       atomic_load(&g_recv_w), atomic_load(&g_close_w));
			hung = 1;
			break;
		}
		done++;
		int m = atomic_load(&g_recv_w) != atomic_load(&g_close_w);
		moved += m;
		if (m && atomic_load(&g_rx_done) && atomic_load(&g_rx_res) == -EBADF)
			ebadf++;
		if (atomic_load(&g_close_done) && atomic_load(&g_close_res) == 0)
			closed_ok++;
		/* The number again, for a new socket: its bytes are its own. */
		int np[2];
		t_must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, np));
		if (np[0] == sp[0] && m) {
			reused++;
			memset(g_rx2_buf, 0, sizeof g_rx2_buf);
			t_must(ura_send(sys, u, A_RECV));
			usleep(5000);
			t_ok(write(np[1], "fresh", 5) == 5, "round %d: wrote to the new socket", r);
			if (await_guarded(sys) < 0) {
				hung = 1;
			} else if (atomic_load(&g_rx2_res) == 5 && !memcmp(g_rx2_buf, "fresh", 5)) {
				reuse_ok++;
			}
		}
		t_must(ura_kill_sys(sys, u, URA_ATOM("kill"), URA_NOVALUE));
		t_rc(await_guarded(sys), 0, "round %d: the actor went", r);
		close(sp[1]);
		close(np[0]);
		close(np[1]);
	}
	t_ok(!hung, "no round hung (a recv left on the other worker never ends)");
	t_diag("%d of %d rounds closed on the other worker; fd reused in %d", moved, ROUNDS,
	       reused);
	t_ok(moved > 0, "some rounds closed on another worker than the recv's (%d)", moved);
	t_eq(ebadf, moved, "each such recv ended with -EBADF");
	t_eq(closed_ok, done, "every close completed with 0");
	t_eq(reuse_ok, reused, "a new socket on the reused number got its own bytes");
	t_destroy(sys);
	return t_done();
}
