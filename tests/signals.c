/* SPDX-License-Identifier: MIT */
/*
 * Signals as messages. After ura_signal_subscribe(sys, SIGUSR1, actor), a
 * SIGUSR1 sent to the process reaches the actor as URA_SIGNAL(SIGUSR1)
 * and the process lives on; the subscription blocks the signal in the
 * calling thread and ura_signal_unsubscribe() unblocks it again (checked
 * on the signal mask and the disposition, never by letting the default
 * action kill us); several signals route to their own subscribers, and a
 * new subscription replaces the old; other signal numbers are -EINVAL.
 *
 * Before every unsubscribe, a signal ura never took is taken here with
 * sigtimedwait (and counted as a failure), so a failed check cannot turn
 * into the default action killing the test.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "tap.h"

#define A_STOP URA_ATOM("stop")

#define NREC 4
static _Atomic long g_count[NREC];
static _Atomic long g_last[NREC];
static _Atomic long g_bad; /* a URA_SIGNAL message of the wrong shape */

typedef struct { int id; } rec;

static void on_signal(ura_ctx *cx, const ura_msg *m)
{
	rec *r = ura_state(cx);
	if (ura_msg_tag(m) != URA_SIGNAL || ura_msg_count(m) != 1 ||
	    strcmp(ura_msg_types(m), "i") != 0)
		atomic_fetch_add(&g_bad, 1);
	if (r->id >= 0 && r->id < NREC) {
		atomic_store(&g_last[r->id], (long)ura_arg_i64(m, 0));
		atomic_fetch_add(&g_count[r->id], 1);
	}
}

static void do_stop(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_stop(cx);
}

URA_BEHAVIOR(rec_beh,
	URA_ON(URA_SIGNAL, "i", on_signal),
	URA_ON(A_STOP, "", do_stop));
static const ura_class rec_class = { .name = "rec", .state_size = sizeof(rec), .initial = &rec_beh };

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Waits (up to 5 s, a hang guard) until receiver id has `want` signals. */
static int wait_count(int id, long want)
{
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(&g_count[id]) >= want)
			return 1;
		sleep_ms(1);
	}
	return atomic_load(&g_count[id]) >= want;
}

/* Whether signo is pending for this thread or the process: a signal ura
 * read from its signalfd is not. */
static int pending_here(int signo)
{
	sigset_t p;
	sigemptyset(&p);
	sigpending(&p);
	return sigismember(&p, signo) == 1;
}

static int blocked_here(int signo)
{
	sigset_t cur;
	sigemptyset(&cur);
	pthread_sigmask(SIG_BLOCK, NULL, &cur);
	return sigismember(&cur, signo) == 1;
}

/* The disposition each signal had when the test started: usually SIG_DFL,
 * but a harness may start us with some ignored (nohup ignores SIGHUP).
 * ura never changes dispositions, so "default" means "as it was". */
static void (*g_initial[65])(int);
static int g_initial_saved;

static void save_initial(void)
{
	for (int s = 1; s < 65; s++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		g_initial[s] = sigaction(s, NULL, &sa) == 0 ? sa.sa_handler : SIG_DFL;
	}
	g_initial_saved = 1;
}

static int is_default(int signo)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	if (!g_initial_saved)
		save_initial();
	if (sigaction(signo, NULL, &sa) != 0)
		return 0;
	return sa.sa_handler == g_initial[signo];
}

/* Takes signo if it is pending for this thread or the process; returns
 * how many were taken (each a signal ura did not read). */
static int take_pending(int signo)
{
	int n = 0;
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, signo);
	struct timespec zero = { 0, 0 };
	/* Only while blocked: otherwise nothing can be pending. */
	if (!blocked_here(signo))
		return 0;
	while (sigtimedwait(&one, NULL, &zero) == signo)
		n++;
	return n;
}

static ura_ref spawn_rec(ura_system *sys, int id)
{
	ura_ref r;
	t_must(ura_spawn(sys, &rec_class, &(rec){ id }, &r));
	return r;
}

static void reset(void)
{
	for (int i = 0; i < NREC; i++) {
		atomic_store(&g_count[i], 0);
		atomic_store(&g_last[i], 0);
	}
	atomic_store(&g_bad, 0);
}

/* ---- 1. bad arguments ------------------------------------------------ */

static void test_bad(ura_system *sys, ura_ref a)
{
	static const int bad[] = { 0, -1, SIGKILL, SIGSTOP, SIGSEGV, SIGCHLD, SIGALRM, 64, 65, 1000 };
	int wrong = 0;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int rc = ura_signal_subscribe(sys, bad[i], a);
		if (rc != -EINVAL) {
			printf("# subscribe(%d): %d (%s)\n", bad[i], rc, ura_strerror(rc));
			wrong++;
		}
		rc = ura_signal_unsubscribe(sys, bad[i]);
		if (rc != -EINVAL) {
			printf("# unsubscribe(%d): %d (%s)\n", bad[i], rc, ura_strerror(rc));
			wrong++;
		}
	}
	t_eq(wrong, 0, "bad signal numbers (0, -1, SIGKILL, SIGSTOP, SIGSEGV, SIGCHLD, SIGALRM, 64, "
	     "65, 1000): subscribe and unsubscribe -EINVAL");
	t_rc(ura_signal_subscribe(sys, SIGUSR1, URA_NOREF), -EINVAL, "subscribe URA_NOREF: -EINVAL");
	t_rc(ura_signal_subscribe(NULL, SIGUSR1, a), -EINVAL, "subscribe with a NULL system: -EINVAL");
	t_rc(ura_signal_unsubscribe(NULL, SIGUSR1), -EINVAL, "unsubscribe with a NULL system: -EINVAL");
	t_ok(!blocked_here(SIGUSR1), "bad calls left SIGUSR1 unblocked");
}

/* ---- 2. SIGUSR1 to the process ---------------------------------------- */

static void test_usr1(ura_system *sys, ura_ref a, ura_ref b)
{
	reset();
	t_ok(!blocked_here(SIGUSR1) && is_default(SIGUSR1),
	     "before: SIGUSR1 unblocked, default action");
	t_rc(ura_signal_subscribe(sys, SIGUSR1, a), 0, "subscribe SIGUSR1");
	t_ok(blocked_here(SIGUSR1), "subscribe blocked SIGUSR1 in this thread");
	t_rc(kill(getpid(), SIGUSR1), 0, "kill(getpid(), SIGUSR1)");
	t_ok(wait_count(0, 1), "the subscriber got a message (and we are alive)");
	t_eq(atomic_load(&g_last[0]), SIGUSR1, "its value is SIGUSR1");
	t_eq(atomic_load(&g_bad), 0, "its shape is URA_SIGNAL(int64)");

	/* Again, one at a time: the watch stays armed. */
	int all = 1;
	for (long k = 2; k <= 4; k++) {
		kill(getpid(), SIGUSR1);
		all &= wait_count(0, k);
	}
	t_ok(all, "three more, one at a time: each delivered (%ld in all)", atomic_load(&g_count[0]));
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "await");
	t_eq(atomic_load(&g_count[0]), 4, "exactly 4 messages for 4 signals");

	/* A second signal, another subscriber. */
	t_rc(ura_signal_subscribe(sys, SIGUSR2, b), 0, "subscribe SIGUSR2 to another actor");
	t_ok(blocked_here(SIGUSR1) && blocked_here(SIGUSR2), "both blocked now");
	kill(getpid(), SIGUSR2);
	t_ok(wait_count(1, 1), "SIGUSR2 reached its subscriber");
	t_eq(atomic_load(&g_last[1]), SIGUSR2, "with value SIGUSR2");
	kill(getpid(), SIGUSR1);
	t_ok(wait_count(0, 5), "SIGUSR1 still reaches the first");
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "await");
	t_ok(atomic_load(&g_count[0]) == 5 && atomic_load(&g_count[1]) == 1,
	     "no cross-talk: %ld SIGUSR1, %ld SIGUSR2", atomic_load(&g_count[0]),
	     atomic_load(&g_count[1]));

	/* A new subscription replaces the old one. */
	t_rc(ura_signal_subscribe(sys, SIGUSR1, b), 0, "subscribe SIGUSR1 to the second actor");
	kill(getpid(), SIGUSR1);
	t_ok(wait_count(1, 2), "SIGUSR1 now reaches the second actor");
	t_eq(atomic_load(&g_last[1]), SIGUSR1, "with value SIGUSR1");
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "await");
	t_eq(atomic_load(&g_count[0]), 5, "and no longer the first");

	/* Unsubscribe: unblocked, default action, nothing left pending. */
	t_eq(take_pending(SIGUSR1) + take_pending(SIGUSR2), 0, "no signal was left unread");
	t_rc(ura_signal_unsubscribe(sys, SIGUSR1), 0, "unsubscribe SIGUSR1");
	t_ok(!blocked_here(SIGUSR1), "SIGUSR1 unblocked again in this thread");
	t_ok(is_default(SIGUSR1), "SIGUSR1 has its default action");
	t_ok(blocked_here(SIGUSR2), "SIGUSR2 still blocked (still subscribed)");
	kill(getpid(), SIGUSR2);
	t_ok(wait_count(1, 3), "SIGUSR2 still delivered after SIGUSR1's unsubscribe");
	t_eq(take_pending(SIGUSR2), 0, "no SIGUSR2 left unread");
	t_rc(ura_signal_unsubscribe(sys, SIGUSR2), 0, "unsubscribe SIGUSR2");
	t_ok(!blocked_here(SIGUSR2) && is_default(SIGUSR2), "SIGUSR2 unblocked, default action");
}

/* ---- 3. raise(): a signal for this very thread -------------------------- */

/* ura.h documents that only process-directed signals arrive: a raise()d
 * signal stays pending on the raising thread, which blocks it. Check
 * exactly that (and that nothing is delivered twice or lost silently:
 * the pending one is taken back here, before unsubscribe would let its
 * default action kill us). */
static void test_raise(ura_system *sys, ura_ref a)
{
	reset();
	t_rc(ura_signal_subscribe(sys, SIGUSR1, a), 0, "raise: subscribe SIGUSR1");
	t_rc(raise(SIGUSR1), 0, "raise(SIGUSR1)");
	sleep_ms(200); /* a delivery, were there one, takes well under this */
	int got = atomic_load(&g_count[0]) >= 1;
	int left = take_pending(SIGUSR1);
	t_ok(!got && left == 1,
	     "raise: a thread-directed signal stays pending on its thread (documented), "
	     "got=%d pending=%d", got, left);
	t_rc(ura_signal_unsubscribe(sys, SIGUSR1), 0, "raise: unsubscribe");
	t_ok(!blocked_here(SIGUSR1), "raise: SIGUSR1 unblocked again");
}

/* ---- 4. every signal ura handles ------------------------------------------ */

static void test_all(ura_system *sys, ura_ref a)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	const int n = (int)(sizeof sigs / sizeof sigs[0]);
	reset();
	int ok = 1;
	for (int i = 0; i < n; i++)
		ok &= ura_signal_subscribe(sys, sigs[i], a) == 0 && blocked_here(sigs[i]);
	t_ok(ok, "all six (INT, TERM, HUP, QUIT, USR1, USR2) subscribed and blocked");
	int delivered = 1;
	for (int i = 0; i < n; i++) {
		kill(getpid(), sigs[i]);
		delivered &= wait_count(0, i + 1) && atomic_load(&g_last[0]) == sigs[i];
	}
	t_ok(delivered, "each delivered with its own number (%ld messages)", atomic_load(&g_count[0]));
	int left = 0;
	for (int i = 0; i < n; i++)
		left += take_pending(sigs[i]);
	t_eq(left, 0, "none left unread");
	ok = 1;
	for (int i = 0; i < n; i++)
		ok &= ura_signal_unsubscribe(sys, sigs[i]) == 0 && !blocked_here(sigs[i]) &&
		      is_default(sigs[i]);
	t_ok(ok, "all six unsubscribed: unblocked, default action");
}

/* ---- 5. a subscriber that has stopped ----------------------------------- */

static void test_gone(ura_system *sys)
{
	reset();
	ura_ref c = spawn_rec(sys, 2);
	t_rc(ura_signal_subscribe(sys, SIGUSR2, c), 0, "gone: subscribe SIGUSR2");
	t_must(ura_send(sys, c, A_STOP));
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "gone: the subscriber stopped");
	kill(getpid(), SIGUSR2);
	/* Worker 0 reads it between turns, which on a loaded machine may be
	 * any time: wait (10 s at most) until it is no longer pending. */
	t_wait_until(!pending_here(SIGUSR2), 10 * URA_SEC, sleep_ms(1));
	t_eq(take_pending(SIGUSR2), 0, "gone: the signal was still read (and dropped)");
	t_eq(atomic_load(&g_count[2]), 0, "gone: nothing delivered");
	t_rc(ura_signal_unsubscribe(sys, SIGUSR2), 0, "gone: unsubscribe");
	t_ok(!blocked_here(SIGUSR2), "gone: unblocked");
}

int main(void)
{
	save_initial();
	/* A clean start, whatever the parent left blocked. */
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);

	ura_system *sys = t_system(0);
	ura_ref a = spawn_rec(sys, 0), b = spawn_rec(sys, 1);
	test_bad(sys, a);
	test_usr1(sys, a, b);
	test_raise(sys, a);
	test_all(sys, a);
	test_gone(sys);
	t_rc(ura_system_await_for(sys, 10 * URA_SEC), 0, "await");
	t_destroy(sys);
	return t_done();
}
