/* Joining an Erlang cluster: the program starts an erl node that runs a
 * small echo server, joins it as a hidden node, talks to the server by
 * pid and by registered name, watches it stop, and sees the node go.
 * Needs erl (Debian: erlang-base) and a ura built with libei (erlang-dev);
 * without either it exits 77, which the test runner reports as a skip. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <ura.h>

#define A_MAIN URA_ATOM("main")
#define A_HELLO URA_ATOM("hello")
#define A_PING URA_ATOM("ping")
#define A_PONG URA_ATOM("pong")
#define A_STOP URA_ATOM("stop")
#define A_BYE URA_ATOM("bye")
#define A_WATCH URA_ATOM("watch")
#define A_SEEN URA_ATOM("seen")
#define A_OK URA_ATOM("ok")

#define SKIP 77 /* docs/run-example.sh reports it as a skip, not a failure */

#define CHECK(call) do {                                                    \
	long rc_ = (long)(call);                                            \
	if (rc_ < 0) {                                                      \
		fprintf(stderr, "%s: %s\n", #call, ura_strerror((int)rc_)); \
		exit(1);                                                    \
	}                                                                   \
} while (0)

/* Both nodes must have it: the handshake proves it without sending it. */
static const char *const cookie = "ura_guide";

/* ---- the Erlang side: erl -eval runs this ----------------------------- */

/* An echo server registered as echo; it says hello, with its pid, to the
 * ura actor registered as main on the ura node (%s). */
static const char *const echo_erl =
	"Echo = fun Loop() ->\n"
	"    receive\n"
	"        {ping, From, N} -> From ! {pong, 2 * N}, Loop();\n"
	"        {stop, Why} -> exit({Why, 42})\n"
	"    end\n"
	"end,\n"
	"Pid = spawn(Echo),\n"
	"register(echo, Pid),\n"
	"{main, '%s'} ! {hello, Pid}.\n";

static pid_t erl_start(const char *sname, const char *eval)
{
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		/* Killed when this program ends, however it ends (a failed
		 * check, a timeout), so no erl node is left behind; the
		 * getppid() catches an end before the prctl. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(1);
		dup2(2, 1); /* erl's output is not the program's */
		execlp("erl", "erl", "-sname", sname, "-setcookie", cookie, "-noshell",
		       "-noinput", "-eval", eval, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* ---- the ura side: a watcher, and main with a scoped actor ------------ */

static void on_watch(ura_ctx *cx, const ura_msg *m)
{
	ura_monitor(cx, ura_arg_ref(m, 0));
	ura_reply(cx, A_OK); /* the monitor is in place */
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	char reason[URA_ATOM_MAX + 1];
	ura_value v = ura_exit_value(m);
	printf("  DOWN: %s", ura_atom_name(ura_exit_reason(m), reason));
	if (v.type == URA_T_I64)
		printf(" %lld", (long long)v.u.i64);
	printf("\n");
	ura_send_name(cx, A_MAIN, A_SEEN);
}

URA_BEHAVIOR(watching,
	URA_ON(A_WATCH, "r", on_watch),
	URA_ON_ANY(URA_DOWN, on_down));

static const ura_class watcher_class = { .name = "watcher", .initial = &watching };

/* The next message to main, which must be `tag`; every wait has a limit. */
static const ura_msg *expect(ura_scoped *me, ura_atom tag, uint64_t timeout_ns)
{
	const ura_msg *m;
	char name[URA_ATOM_MAX + 1];
	int rc = ura_scoped_receive(me, timeout_ns, &m);
	if (rc < 0 || ura_msg_tag(m) != tag) {
		fprintf(stderr, "waiting for %s: %s\n", ura_atom_name(tag, name),
			rc < 0 ? ura_strerror(rc) : "another message came");
		exit(1);
	}
	return m;
}

static void watch(ura_scoped *me, ura_ref watcher, ura_ref r)
{
	const ura_msg *m;
	CHECK(ura_scoped_request(me, watcher, 10 * URA_SEC, &m, A_WATCH, r));
}

int main(void)
{
	if (system("command -v erl >/dev/null && command -v epmd >/dev/null") != 0) {
		fprintf(stderr, "erl is not installed (Debian: apt-get install erlang-base)\n");
		return SKIP;
	}
	ura_system *sys;
	CHECK(ura_system_new(&sys, NULL));

	/* Names from the pid: two runs at once must not meet at epmd. */
	char name[32], sname[32], peer[300], eval[1024];
	snprintf(name, sizeof name, "ura%d", (int)getpid());
	snprintf(sname, sizeof sname, "echo%d", (int)getpid());
	ura_dist_opts opts = { .name = name, .cookie = cookie };
	ura_dist *d;
	int rc = ura_dist_start(sys, &opts, &d);
	if (rc == -ECONNREFUSED) {
		/* No epmd on this host yet: start one, as erl would. It serves
		 * every node on the host, so it stays when this program ends. */
		if (system("epmd -daemon") != 0) {
			fprintf(stderr, "epmd -daemon failed\n");
			exit(1);
		}
		for (int i = 0; i < 100 && rc == -ECONNREFUSED; i++) {
			nanosleep(&(struct timespec){ .tv_nsec = 100000000 }, NULL);
			rc = ura_dist_start(sys, &opts, &d);
		}
	}
	if (rc == -ENOTSUP) {
		fprintf(stderr, "ura is built without distribution (libei, from erlang-dev)\n");
		ura_system_destroy(sys);
		return SKIP;
	}
	CHECK(rc);
	snprintf(peer, sizeof peer, "%s%s", sname, strchr(ura_dist_name(d), '@'));

	ura_scoped *me;
	ura_ref watcher;
	CHECK(ura_scoped_new(sys, &me));
	CHECK(ura_register(sys, A_MAIN, ura_scoped_ref(me))); /* for {main, Node} */
	CHECK(ura_spawn(sys, &watcher_class, NULL, &watcher));

	/* The erl node connects to us when it sends its hello. */
	snprintf(eval, sizeof eval, echo_erl, ura_dist_name(d));
	pid_t erl = erl_start(sname, eval);
	const ura_msg *m = expect(me, A_HELLO, 30 * URA_SEC);
	ura_ref echo = ura_arg_ref(m, 0); /* a proxy actor for the process */
	printf("the erl node said hello: its echo server's pid is a ref here\n");

	/* The reply comes to the pid that the ref in the message became. */
	CHECK(ura_scoped_send(me, echo, A_PING, ura_scoped_ref(me), 20));
	m = expect(me, A_PONG, 10 * URA_SEC);
	printf("ping 20 to the pid: pong %lld\n", (long long)ura_arg_i64(m, 0));

	/* {echo, Node} ! Msg: a proxy for the name, kept for later sends. */
	ura_ref by_name;
	CHECK(ura_dist_whereis(d, peer, "echo", &by_name));
	CHECK(ura_scoped_send(me, by_name, A_PING, ura_scoped_ref(me), 1));
	m = expect(me, A_PONG, 10 * URA_SEC);
	printf("ping 1 to {echo, Node}: pong %lld\n", (long long)ura_arg_i64(m, 0));

	/* A monitor of the proxy watches the process; one of the
	 * connection watches the node (Erlang's monitor_node). */
	watch(me, watcher, echo);
	watch(me, watcher, ura_dist_node_ref(d, peer));

	printf("echo is told to stop; it exits with {bye, 42}:\n");
	CHECK(ura_scoped_send(me, echo, A_STOP, A_BYE));
	expect(me, A_SEEN, 10 * URA_SEC);
	rc = ura_scoped_send(me, echo, A_PING, ura_scoped_ref(me), 1);
	printf("  a send to its proxy now: %s\n", ura_strerror(rc));

	printf("the erl node is killed:\n");
	kill(erl, SIGKILL);
	waitpid(erl, NULL, 0);
	expect(me, A_SEEN, 10 * URA_SEC);

	/* ura_dist_stop returns at once; the listener and the connections
	 * stop on the workers, and the destroy must come after them. */
	CHECK(ura_dist_stop(d));
	ura_scoped_free(me);
	CHECK(ura_system_await_for(sys, 10 * URA_SEC));
	CHECK(ura_system_destroy(sys));
	return 0;
}
