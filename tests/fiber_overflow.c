/* SPDX-License-Identifier: MIT */
/*
 * A context-switching actor that overflows its stack (issue 18): in a
 * forked child, a body recursing without end hits its guard page; the
 * child must die of SIGSEGV after printing a line that names the actor's
 * class, not run on with corrupted memory. A fault elsewhere (not in a
 * guard page) still reaches the handler that was there before.
 */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static int deep(int n)
{
	volatile char pad[256];
	pad[0] = (char)n;
	return n > 1 << 30 ? pad[0] : deep(n + 1) + pad[0];
}

#define A_GO URA_ATOM("go")
static void go(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
}
URA_BEHAVIOR(go_beh, URA_ON(A_GO, "", go));
static void body(ura_ctx *cx, void *st)
{
	(void)st;
	ura_receive(cx, &go_beh, URA_FOREVER);
	printf("%d\n", deep(0));
}
static const ura_class overflow_class = { .name = "overflower", .body = body,
					  .stack_size = URA_STACK_MIN };

static void child(void)
{
	ura_system *sys;
	if (ura_system_new(&sys, &(ura_config){ .workers = 1 }) < 0)
		_exit(3);
	ura_ref r;
	if (ura_spawn(sys, &overflow_class, NULL, &r) < 0)
		_exit(4);
	ura_send(sys, r, A_GO);
	ura_system_await_for(sys, 30 * URA_SEC);
	_exit(5); /* reached only if the overflow went unnoticed */
}

int main(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	t_skip("a sanitizer owns SIGSEGV and the stack checks");
	return t_done();
#endif
	int p[2];
	t_must(pipe(p));
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 2);
		close(p[0]);
		child();
	}
	close(p[1]);
	char buf[4096];
	size_t n = 0;
	ssize_t k;
	while (n < sizeof buf - 1 && (k = read(p[0], buf + n, sizeof buf - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = 0;
	int st = 0;
	waitpid(pid, &st, 0);
	t_ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "the child died of SIGSEGV (status %#x)",
	     st);
	t_ok(strstr(buf, "stack overflow") != NULL, "it said stack overflow");
	t_ok(strstr(buf, "overflower") != NULL, "... naming the class");
	t_diag("%s", buf);
	return t_done();
}
