/* SPDX-License-Identifier: MIT */
/*
 * Scoped actors (ura.h): a thread that is no worker talks to actors
 * through a proxy actor of its own. The proxy is an ordinary event-based
 * actor on the workers whose one wildcard case copies each message out of
 * the runtime into the handle's queue (a mutex, a condition variable for
 * the thread's own waits, an eventfd for a foreign event loop's); answers
 * to the handle's requests reach that case too (turn.c hands the proxy an
 * answer no continuation waits for). The thread sends with the proxy's ref
 * as the sender, and makes a request by sending a request message of its
 * own numbering, so the answer comes back to the proxy as any answer
 * comes. Once ura_scoped_fd was asked for, the eventfd's counter is
 * non-zero exactly while the queue is not empty (both change under the
 * lock); before, nobody can poll it, and the two system calls per message
 * that keep it (a write when the queue fills, a read when it empties:
 * 2 of the scoped round trip's ~14 us here) are not made.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "actor/actor.h"
#include "actor/scoped.h"
#include "core/post.h"

#define SC_MAGIC 0x73636f7065640a01ull
#define SC_STOP URA_ATOM("_scstop")

struct ura_scoped {
	uint64_t magic;          /* debug builds: a freed handle is caught */
	ura_system *sys;
	ura_ref ref;
	int efd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ura_msg *head, *tail; /* copies, oldest first (lock) */
	int waiting;             /* the thread waits on cond (lock) */
	/* Moved by every message queued (under lock, relaxed): the thread
	 * spins on it before it sleeps (sc_spin), and takes under the lock. */
	_Atomic uint32_t queued;
	int fd_used;             /* ura_scoped_fd was called: keep efd (lock) */
	struct ura_msg *cur;     /* handed out last; the thread's */
	uint32_t next_req;       /* the thread's */
	/* The handle and the proxy each hold one; the last one frees. */
	_Atomic int refs;
	/* Debug builds: threads inside a call (two at once is misuse). */
	_Atomic int users;
};

static void sc_unref(struct ura_scoped *s)
{
	/* acq_rel: the last one sees every write of the other before it
	 * frees (release by the first, acquire by the last). */
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (struct ura_msg *m = s->head, *n; m; m = n) {
		n = atomic_load_explicit(&m->next, memory_order_relaxed);
		free(m);
	}
	free(s->cur);
	close(s->efd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	s->magic = 0;
	free(s);
}

/* ---- the proxy (a worker runs it) ------------------------------------- */

struct proxy { struct ura_scoped *s; };

/* The queue went from empty to not (lock held): the eventfd's counter
 * 0 -> 1, which cannot overflow. */
static void efd_raise(struct ura_scoped *s)
{
	uint64_t one = 1;
	ssize_t wr = write(s->efd, &one, sizeof one);
	(void)wr;
}

static void proxy_msg(ura_ctx *cx, const ura_msg *m)
{
	struct ura_scoped *s = ((struct proxy *)ura_state(cx))->s;
	if (m->kind == URA__MK_PLAIN && m->tag == SC_STOP &&
	    ura_ref_eq(m->from, s->ref)) {
		ura_stop(cx);
		return;
	}
	/* Nobody here can answer a request. */
	if (m->kind == URA__MK_REQUEST) {
		(void)ura_reply_error(cx, URA_UNMATCHED, URA_NOVALUE);
		return;
	}
	long size = ura__msg_size(m->vals, m->n);
	struct ura_msg *c = size > 0 ? ura__malloc((size_t)size) : NULL;
	if (!c) {
		ura__log(&cx->sys->log, URA_LOG_ERROR, "scoped actor: a message lost: %s",
			 ura_strerror(size < 0 ? (int)size : -ENOMEM));
		return;
	}
	ura__msg_fill(c, m->tag, m->from, m->vals, m->n);
	c->kind = m->kind;
	c->req = m->req;
	c->cls = URA__POOL_BIG;
	pthread_mutex_lock(&s->lock);
	int was_empty = !s->head;
	if (s->tail)
		atomic_store_explicit(&s->tail->next, c, memory_order_relaxed);
	else
		s->head = c;
	s->tail = c;
	atomic_store_explicit(&s->queued, atomic_load_explicit(&s->queued, memory_order_relaxed) + 1,
			      memory_order_relaxed);
	if (was_empty && s->fd_used)
		efd_raise(s);
	if (s->waiting)
		pthread_cond_signal(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static int proxy_init(ura_ctx *cx, void *state, const void *arg)
{
	(void)cx;
	((struct proxy *)state)->s = (struct ura_scoped *)(uintptr_t)arg;
	return 0;
}

static void proxy_destroy(void *state)
{
	sc_unref(((struct proxy *)state)->s);
}

static const ura_case proxy_cases[] = {
	{ .tag = 0, .types = NULL, .fn = proxy_msg },
};
const ura_behavior ura__scoped_beh = {
	.cases = proxy_cases, .ncases = 1, .name = "scoped",
};
static const ura_class proxy_class = {
	.name = "ura_scoped",
	.state_size = sizeof(struct proxy),
	.initial = &ura__scoped_beh,
	.init = proxy_init,
	.destroy = proxy_destroy,
};

/* ---- the handle (the thread) ------------------------------------------ */

/* Debug builds: a freed handle, or two threads at once. */
static int sc_enter(struct ura_scoped *s)
{
	if (!s)
		return -EINVAL;
#ifndef NDEBUG
	if (s->magic != SC_MAGIC)
		return -EINVAL;
	/* relaxed: a misuse detector; the lock orders the real work. */
	if (atomic_fetch_add_explicit(&s->users, 1, memory_order_relaxed)) {
		atomic_fetch_sub_explicit(&s->users, 1, memory_order_relaxed);
		ura__log(&s->sys->log, URA_LOG_ERROR,
			 "scoped actor <%u.%u> used from two threads at once",
			 ura__idx_no(ura__ref_idx(s->ref)), ura__ref_gen(s->ref));
		return -EBUSY;
	}
#endif
	return 0;
}
static void sc_leave(struct ura_scoped *s)
{
#ifndef NDEBUG
	atomic_fetch_sub_explicit(&s->users, 1, memory_order_relaxed);
#else
	(void)s;
#endif
}

URA_API int ura_scoped_new(ura_system *sys, ura_scoped **out)
{
	if (!sys || !out)
		return -EINVAL;
	if (ura__thread_worker(sys))
		return -EDEADLK;
	struct ura_scoped *s = ura__calloc(1, sizeof *s);
	if (!s)
		return -ENOMEM;
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->efd < 0) {
		int e = -errno;
		free(s);
		return e;
	}
	s->magic = SC_MAGIC;
	s->sys = sys;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->cond, &ca);
	pthread_condattr_destroy(&ca);
	atomic_store_explicit(&s->refs, 2, memory_order_relaxed);
	int rc = ura_spawn_sys(sys, &proxy_class, s, &s->ref);
	if (rc < 0) {
		atomic_store_explicit(&s->refs, 1, memory_order_relaxed);
		sc_unref(s);
		return rc;
	}
	*out = s;
	return 0;
}

URA_API void ura_scoped_free(ura_scoped *s)
{
	if (sc_enter(s) < 0)
		return;
	s->magic = 0;
	/* The proxy stops on this, after what was sent to it before. */
	(void)ura__send_msg(s->sys, NULL, 0, s->ref, s->ref, SC_STOP, NULL, 0, URA__MK_PLAIN, 0);
	sc_leave(s);
	sc_unref(s);
}

URA_API ura_ref ura_scoped_ref(ura_scoped *s)
{
	return s ? s->ref : URA_NOREF;
}

URA_API int ura_scoped_fd(ura_scoped *s)
{
	if (!s)
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	if (!s->fd_used) {
		/* From now on the counter follows the queue: start it at
		 * what the queue holds (the counter is 0: never written). */
		s->fd_used = 1;
		if (s->head)
			efd_raise(s);
	}
	pthread_mutex_unlock(&s->lock);
	return s->efd;
}

URA_API int ura_scoped_sendv(ura_scoped *s, ura_ref to, ura_atom tag,
			     const ura_value *vals, unsigned n)
{
	int rc = sc_enter(s);
	if (rc < 0)
		return rc;
	struct ura__worker *w = ura__thread_worker(s->sys);
	rc = ura__send_msg(s->sys, w, w ? w->node : 0, s->ref, to, tag, vals, n,
			   URA__MK_PLAIN, 0);
	sc_leave(s);
	return rc;
}

/* Under the lock: unlinks and returns the oldest message that `req`
 * wants (0: any message but a stray answer, which is dropped). */
static struct ura_msg *sc_take(struct ura_scoped *s, uint32_t req)
{
	struct ura_msg *m, *prev = NULL;
	for (m = s->head; m;) {
		struct ura_msg *n = atomic_load_explicit(&m->next, memory_order_relaxed);
		int answer = m->kind == URA__MK_RESPONSE || m->kind == URA__MK_ERROR;
		int want = req ? answer && m->req == req : !answer;
		if (want || (!req && answer)) {
			if (prev)
				atomic_store_explicit(&prev->next, n, memory_order_relaxed);
			else
				s->head = n;
			if (s->tail == m)
				s->tail = prev;
			if (want)
				break;
			free(m); /* an answer that came after its request gave up */
			m = n;
			continue;
		}
		prev = m;
		m = n;
	}
	if (!s->head && s->fd_used) {
		uint64_t v;
		ssize_t rd = read(s->efd, &v, sizeof v);
		(void)rd; /* -EAGAIN when it was 0 already */
	}
	return m;
}

/*
 * Before the thread sleeps on its condition variable it spins (lock let
 * go) until a message is queued, for at most the workers' own idle spin
 * (ura_config.spin_ns) or what is left of its timeout. A round trip is
 * then one hop each way with no thread to wake: the worker that answers
 * is still spinning from the last one, and the reply is seen without a
 * futex wake and the kernel's context switch, which cost 3-7 us each on
 * this machine's VM (bench/README.md: scoped round trip, p50 13 -> 2 us).
 * Whether anything came or not, the caller looks again under the lock
 * (the spin only reads a hint). 1: something was queued.
 */
static int sc_spin(struct ura_scoped *s, uint64_t until)
{
	/* relaxed: a hint; the caller takes under the lock. */
	uint32_t q0 = atomic_load_explicit(&s->queued, memory_order_relaxed);
	pthread_mutex_unlock(&s->lock);
	int got = 0;
	while (!got && ura__now_ns() < until) {
		for (int k = 0; k < 32; k++)
			ura__cpu_relax();
		got = atomic_load_explicit(&s->queued, memory_order_relaxed) != q0;
	}
	pthread_mutex_lock(&s->lock);
	return got;
}

static int sc_wait(struct ura_scoped *s, uint32_t req, uint64_t timeout_ns, const ura_msg **out)
{
	uint64_t spin = s->sys->spin_ns < timeout_ns ? s->sys->spin_ns : timeout_ns;
	uint64_t spin_until = spin ? ura__now_ns() + spin : 0;
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	if (timeout_ns != URA_FOREVER) {
		uint64_t t = (uint64_t)dl.tv_nsec + timeout_ns % URA_SEC;
		dl.tv_sec += (time_t)(timeout_ns / URA_SEC + t / URA_SEC);
		dl.tv_nsec = (long)(t % URA_SEC);
	}
	free(s->cur);
	s->cur = NULL;
	int rc = 0;
	pthread_mutex_lock(&s->lock);
	struct ura_msg *m;
	while (!(m = sc_take(s, req))) {
		if (timeout_ns == 0) {
			rc = -ETIMEDOUT;
			break;
		}
		if (spin_until) {
			sc_spin(s, spin_until);
			spin_until = 0; /* once; then look again, then sleep */
			continue;
		}
		s->waiting = 1;
		int e = timeout_ns == URA_FOREVER ? pthread_cond_wait(&s->cond, &s->lock) :
						    pthread_cond_timedwait(&s->cond, &s->lock, &dl);
		s->waiting = 0;
		if (e == ETIMEDOUT) {
			if ((m = sc_take(s, req)))
				break;
			rc = -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
	s->cur = m;
	*out = m;
	return rc;
}

URA_API int ura_scoped_receive(ura_scoped *s, uint64_t timeout_ns, const ura_msg **out)
{
	int rc = sc_enter(s);
	if (rc < 0)
		return rc;
	if (!out) {
		sc_leave(s);
		return -EINVAL;
	}
	if (timeout_ns && ura__thread_worker(s->sys))
		rc = -EDEADLK;
	else
		rc = sc_wait(s, 0, timeout_ns, out);
	sc_leave(s);
	return rc;
}

URA_API int ura_scoped_requestv(ura_scoped *s, ura_ref to, uint64_t timeout_ns,
				const ura_msg **out, ura_atom tag,
				const ura_value *vals, unsigned n)
{
	int rc = sc_enter(s);
	if (rc < 0)
		return rc;
	if (!out) {
		sc_leave(s);
		return -EINVAL;
	}
	if (ura__thread_worker(s->sys)) {
		sc_leave(s);
		return -EDEADLK;
	}
	uint32_t id = ++s->next_req;
	if (!id)
		id = ++s->next_req;
	rc = ura__send_msg(s->sys, NULL, 0, s->ref, to, tag, vals, n, URA__MK_REQUEST, id);
	if (rc == 0)
		rc = sc_wait(s, id, timeout_ns, out);
	sc_leave(s);
	return rc;
}
