/* SPDX-License-Identifier: MIT */
/*
 * Signals as messages: a signalfd (2.6.22) watched by worker 0's poller,
 * so a signal is read like any other event on the ring and turned into a
 * message; nothing runs in signal context.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/post.h"
#include "io/signals.h"

const int ura__signals_handled[URA__NSIGNALS] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };

static int handled(int signo)
{
	for (size_t i = 0; i < URA__ARRAY_LEN(ura__signals_handled); i++)
		if (ura__signals_handled[i] == signo)
			return 1;
	return 0;
}

static int update(ura_system *sys, int signo, ura_ref actor, int add)
{
	if (!sys || !sys->sigs || !handled(signo))
		return -EINVAL;
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, signo);
	pthread_mutex_lock(&sys->sigs->lock);
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < URA__ARRAY_LEN(ura__signals_handled); i++) {
		int s = ura__signals_handled[i];
		if (s == signo ? add : !ura_ref_null(sys->sigs->sub[s]))
			sigaddset(&set, s);
	}
	if (add) {
		/* Block before the signalfd exists: a signal arriving in
		 * between waits, pending, for the fd instead of killing us. */
		pthread_sigmask(SIG_BLOCK, &one, NULL);
	}
	int fd = signalfd(sys->sigs->fd, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		pthread_mutex_unlock(&sys->sigs->lock);
		return err;
	}
	int fresh = sys->sigs->fd < 0;
	sys->sigs->fd = fd;
	sys->sigs->sub[signo] = add ? actor : URA_NOREF;
	pthread_mutex_unlock(&sys->sigs->lock);
	if (!add)
		pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	if (fresh) {
		/* Worker 0 arms its watch on the next pass. seq_cst: pairs
		 * with its sleep-time look at sig_req (work_visible). */
		atomic_store_explicit(&sys->sigs->req, 1, memory_order_seq_cst);
		struct ura__worker *w0 = &sys->workers[0];
		if (atomic_load_explicit(&w0->sleeping, memory_order_seq_cst) &&
		    w0->poller.efd >= 0)
			ura__poller_wake(&w0->poller);
	}
	return 0;
}

URA_API int ura_signal_subscribe(ura_system *sys, int signo, ura_ref actor)
{
	if (sys && ura_ref_null(actor))
		return -EINVAL;
	return update(sys, signo, actor, 1);
}

URA_API int ura_signal_unsubscribe(ura_system *sys, int signo)
{
	return update(sys, signo, URA_NOREF, 0);
}

int ura__signals_service(struct ura__worker *w, uint64_t *now, int idle)
{
	(void)now;
	(void)idle;
	ura_system *sys = w->sys;
	if (w->id != 0)
		return 0;
	if (atomic_load_explicit(&sys->sigs->req, memory_order_relaxed) &&
	    atomic_exchange_explicit(&sys->sigs->req, 0, memory_order_acquire) &&
	    !sys->sigs->watching) {
		/* Armed under the lock: a later subscribe changes the fd's
		 * mask (signalfd on the same fd), and the two must not overlap
		 * on one fd (TSan's fd model says so too). */
		pthread_mutex_lock(&sys->sigs->lock);
		int rc = ura__poller_watch(&w->poller, sys->sigs->fd, URA__EV_SIGNAL);
		pthread_mutex_unlock(&sys->sigs->lock);
		if (rc < 0)
			ura__log(&sys->log, URA_LOG_ERROR, "signals: cannot watch the signalfd: %s",
				 ura_strerror(rc));
		else
			sys->sigs->watching = 1;
	}
	if (!(w->poller.events & (1u << URA__EV_SIGNAL)))
		return 0;
	w->poller.events &= ~(1u << URA__EV_SIGNAL);
	struct signalfd_siginfo si[8];
	for (;;) {
		/* Under the lock: a subscribe may be changing the fd's mask
		 * (signalfd on the same fd) right now. */
		pthread_mutex_lock(&sys->sigs->lock);
		ssize_t n = read(sys->sigs->fd, si, sizeof si);
		ura_ref to[8];
		int k = n > 0 ? (int)(n / (ssize_t)sizeof si[0]) : 0;
		for (int i = 0; i < k; i++)
			to[i] = si[i].ssi_signo > 0 && si[i].ssi_signo <= 64 ?
					sys->sigs->sub[si[i].ssi_signo] : URA_NOREF;
		pthread_mutex_unlock(&sys->sigs->lock);
		for (int i = 0; i < k; i++) {
			int signo = (int)si[i].ssi_signo;
			ura__inc(&w->st.signals);
			if (ura_ref_null(to[i]))
				continue;
			ura_value v = ura_v_i64(signo);
			/* A system message: no mailbox bound refuses it. */
			int rc = ura__send_msg(sys, w, w->node, URA_NOREF, to[i], URA_SIGNAL, &v, 1,
					       URA__MK_PLAIN | URA__MK_NOBOUND, 0);
			if (rc < 0)
				ura__log(&sys->log, URA_LOG_WARN, "signal %d: subscriber gone (%s)",
					 signo, ura_strerror(rc));
		}
		if (k < (int)URA__ARRAY_LEN(si))
			break;
	}
	return 1;
}

int ura__signals_init(ura_system *sys)
{
	sys->sigs = ura__calloc(1, sizeof *sys->sigs);
	if (!sys->sigs)
		return -ENOMEM;
	sys->sigs->fd = -1;
	pthread_mutex_init(&sys->sigs->lock, NULL);
	return 0;
}

void ura__signals_fini(ura_system *sys)
{
	if (!sys->sigs)
		return;
	if (sys->sigs->fd >= 0)
		close(sys->sigs->fd);
	pthread_mutex_destroy(&sys->sigs->lock);
	free(sys->sigs);
	sys->sigs = NULL;
}
