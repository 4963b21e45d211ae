/* SPDX-License-Identifier: MIT */
/*
 * Scoped actors (issue 18): main makes requests and gets the replies (and
 * URA_ERROR when the target stops without answering, -ESRCH when it is
 * gone, -ETIMEDOUT when no answer comes); messages to it wait in order
 * while a request waits; receive polls (0) and times out; its eventfd,
 * polled from an epoll loop, is readable exactly while a message waits;
 * a body's request/reply with it; actors monitor it and see it go; misuse:
 * from a worker (-EDEADLK), a request sent to it (URA_ERROR unmatched).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "tap.h"

#define A_DBL URA_ATOM("dbl")
#define A_ECHO URA_ATOM("echo")
#define A_LATER URA_ATOM("later")
#define A_QUIT URA_ATOM("quit")
#define A_NEW URA_ATOM("new")
#define A_ASK URA_ATOM("ask")
#define A_SILENT URA_ATOM("silent")

static void dbl(ura_ctx *cx, const ura_msg *m)
{
	ura_reply(cx, A_DBL, ura_arg_i64(m, 0) * 2);
}
/* Echoes a number to the sender, then later answers the request. */
static void echo(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_sender(cx), A_ECHO, ura_arg_i64(m, 0));
}
static void later(ura_ctx *cx, const ura_msg *m)
{
	/* Two plain messages to the requester, then the reply. */
	ura_send(cx, ura_sender(cx), A_ECHO, (int64_t)1);
	ura_send(cx, ura_sender(cx), A_ECHO, (int64_t)2);
	ura_reply(cx, A_LATER, ura_arg_i64(m, 0));
}
static void quit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx); /* without answering */
}
static void silent(ura_ctx *cx, const ura_msg *m)
{
	static ura_promise p; /* taken, never answered (until the stop) */
	(void)m;
	ura_promise_take(cx, &p);
}
static int new_rc = 1, ask_rc = 1;
static ura_atom ask_reason;
static void on_ask_answer(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	ask_reason = ura_exit_reason(m);
}
static void make_new(ura_ctx *cx, const ura_msg *m)
{
	ura_scoped *s;
	(void)m;
	new_rc = ura_scoped_new(ura_ctx_system(cx), &s);
	ask_rc = ura_request(cx, ura_arg_ref(m, 0), on_ask_answer, NULL, A_ASK);
}
URA_BEHAVIOR(server_beh,
	URA_ON(A_DBL, "i", dbl), URA_ON(A_ECHO, "i", echo), URA_ON(A_LATER, "i", later),
	URA_ON(A_QUIT, "", quit), URA_ON(A_SILENT, "", silent), URA_ON(A_NEW, "r", make_new));
static const ura_class server = { .name = "server", .initial = &server_beh };

/* A context-switching server: answers requests in a loop. */
static void body(ura_ctx *cx, void *st)
{
	(void)st;
	while (ura_receive(cx, &server_beh, URA_FOREVER) == 0)
		;
}
static const ura_class bserver = { .name = "bserver", .body = body };

static void test_requests(ura_system *sys)
{
	ura_scoped *s;
	t_must(ura_scoped_new(sys, &s));
	t_ok(!ura_ref_null(ura_scoped_ref(s)), "a scoped actor has a ref");
	ura_ref srv, bsrv;
	t_must(ura_spawn(sys, &server, NULL, &srv));
	t_must(ura_spawn(sys, &bserver, NULL, &bsrv));
	const ura_msg *m = NULL;
	t_rc(ura_scoped_request(s, srv, 5 * URA_SEC, &m, A_DBL, 21), 0, "request from main");
	t_ok(m && ura_msg_tag(m) == A_DBL && ura_arg_i64(m, 0) == 42, "... the reply: 42");
	t_rc(ura_scoped_request(s, bsrv, 5 * URA_SEC, &m, A_DBL, 5), 0,
	     "request to a context-switching actor");
	t_ok(m && ura_arg_i64(m, 0) == 10, "... its reply: 10");
	t_rc(ura_scoped_request(s, srv, 5 * URA_SEC, &m, A_LATER, 9), 0,
	     "a request whose target sends us two messages before the reply");
	t_ok(m && ura_msg_tag(m) == A_LATER && ura_arg_i64(m, 0) == 9, "... got the reply");
	t_rc(ura_scoped_receive(s, 0, &m), 0, "the messages waited: first");
	t_ok(m && ura_msg_tag(m) == A_ECHO && ura_arg_i64(m, 0) == 1, "... 1, in order");
	t_ok(ura_ref_eq(ura_msg_sender(m), srv), "... from the server");
	t_rc(ura_scoped_receive(s, 0, &m), 0, "second");
	t_ok(m && ura_arg_i64(m, 0) == 2, "... 2");
	t_rc(ura_scoped_receive(s, 0, &m), -ETIMEDOUT, "then nothing: a poll returns at once");
	t_rc(ura_scoped_receive(s, 20 * URA_MSEC, &m), -ETIMEDOUT, "a 20 ms receive times out");
	t_rc(ura_scoped_send(s, srv, A_ECHO, 77), 0, "a send with our ref as the sender");
	t_rc(ura_scoped_receive(s, 5 * URA_SEC, &m), 0, "... the server's echo comes to us");
	t_ok(m && ura_arg_i64(m, 0) == 77, "... 77");
	t_rc(ura_scoped_request(s, srv, 20 * URA_MSEC, &m, A_SILENT), -ETIMEDOUT,
	     "a request nobody answers in time: -ETIMEDOUT");
	t_rc(ura_scoped_request(s, srv, 5 * URA_SEC, &m, A_QUIT), 0,
	     "a request whose target stops without answering");
	t_ok(m && ura_msg_tag(m) == URA_ERROR && ura_exit_reason(m) == URA_NORMAL,
	     "... ends in URA_ERROR(normal)");
	t_rc(ura_scoped_receive(s, 0, &m), -ETIMEDOUT,
	     "the late answer of the timed-out request was dropped");
	t_rc(ura_scoped_request(s, srv, 5 * URA_SEC, &m, A_DBL, 1), -ESRCH,
	     "a request to a stopped actor: -ESRCH");
	ura_kill(sys, bsrv, URA_KILL);
	ura_scoped_free(s);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles after the free");
}

static void test_epoll(ura_system *sys)
{
	ura_scoped *s;
	t_must(ura_scoped_new(sys, &s));
	ura_ref srv;
	t_must(ura_spawn(sys, &server, NULL, &srv));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	t_must(epoll_ctl(ep, EPOLL_CTL_ADD, ura_scoped_fd(s), &ev));
	struct epoll_event out;
	t_eq(epoll_wait(ep, &out, 1, 0), 0, "the fd is not readable with nothing waiting");
	enum { N = 100 };
	for (int i = 0; i < N; i++)
		ura_scoped_send(s, srv, A_ECHO, i);
	/* A foreign event loop: wait on the fd, drain with polls. */
	int got = 0, inorder = 1, loops = 0;
	uint64_t end = t_now_ns() + 30 * URA_SEC;
	while (got < N && t_now_ns() < end) {
		if (epoll_wait(ep, &out, 1, 1000) != 1)
			continue;
		loops++;
		const ura_msg *m;
		while (ura_scoped_receive(s, 0, &m) == 0) {
			inorder &= ura_arg_i64(m, 0) == got;
			got++;
		}
	}
	t_eq(got, N, "an epoll loop got every echo through the fd");
	t_ok(inorder, "... in order (%d wakeups)", loops);
	t_eq(epoll_wait(ep, &out, 1, 0), 0, "drained: the fd is not readable");
	close(ep);
	ura_scoped_free(s);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles");

	/* The fd asked for late: messages that came before make it
	 * readable at once (the counter is kept only from the first
	 * ura_scoped_fd on: scoped.c). */
	t_must(ura_scoped_new(sys, &s));
	ura_scoped_send(s, srv, A_ECHO, 1);
	ura_scoped_send(s, srv, A_ECHO, 2);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "two echoes queued, no fd yet");
	ep = epoll_create1(EPOLL_CLOEXEC);
	t_must(epoll_ctl(ep, EPOLL_CTL_ADD, ura_scoped_fd(s), &ev));
	t_eq(epoll_wait(ep, &out, 1, 0), 1, "asked for late, the fd is readable at once");
	const ura_msg *m;
	t_rc(ura_scoped_receive(s, 0, &m), 0, "the first echo");
	t_eq(epoll_wait(ep, &out, 1, 0), 1, "... still readable with one left");
	t_rc(ura_scoped_receive(s, 0, &m), 0, "the second echo");
	t_eq(epoll_wait(ep, &out, 1, 0), 0, "drained: not readable");
	ura_scoped_send(s, srv, A_ECHO, 3);
	t_eq(epoll_wait(ep, &out, 1, 10000), 1, "a new echo makes it readable again");
	t_rc(ura_scoped_receive(s, 0, &m), 0, "... and is there");
	close(ep);
	ura_scoped_free(s);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles");
}

static void test_misuse(ura_system *sys)
{
	ura_scoped *s;
	t_must(ura_scoped_new(sys, &s));
	ura_ref srv;
	t_must(ura_spawn(sys, &server, NULL, &srv));
	ura_send(sys, srv, A_NEW, ura_scoped_ref(s));
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles");
	t_rc(new_rc, -EDEADLK, "ura_scoped_new from a worker: -EDEADLK");
	t_rc(ask_rc, 0, "an actor's request to a scoped actor is sent");
	t_eq(ask_reason, URA_UNMATCHED, "... and answered URA_ERROR(unmatched)");
	const ura_msg *m;
	t_rc(ura_scoped_receive(s, 0, &m), -ETIMEDOUT, "... and not queued for the thread");
	t_rc(ura_scoped_new(NULL, &s), -EINVAL, "no system: -EINVAL");
	t_rc(ura_scoped_receive(NULL, 0, &m), -EINVAL, "no handle: -EINVAL");
	ura_scoped_free(s);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles");
}

/* Round trips from main, for the record (bench/scoped has the figure). */
static void test_many(ura_system *sys)
{
	ura_scoped *s;
	t_must(ura_scoped_new(sys, &s));
	ura_ref srv;
	t_must(ura_spawn(sys, &server, NULL, &srv));
	long n = t_scaled(2000), ok = 0;
	for (long i = 0; i < n; i++) {
		const ura_msg *m;
		if (ura_scoped_request(s, srv, 10 * URA_SEC, &m, A_DBL, i) == 0 &&
		    ura_arg_i64(m, 0) == 2 * i)
			ok++;
	}
	t_eq(ok, n, "%ld request/reply round trips from main", n);
	ura_scoped_free(s);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "settles");
}

int main(void)
{
	ura_system *sys = t_system(2);
	test_requests(sys);
	test_epoll(sys);
	test_misuse(sys);
	test_many(sys);
	t_rc(ura_system_destroy(sys), 0, "destroy");
	return t_done();
}
