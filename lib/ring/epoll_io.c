/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O where io_uring is refused: the same operations and the same
 * completion protocol as uring.c, made of epoll readiness plus non-blocking
 * system calls, and a thread pool for files and blocking calls.
 *
 * An fd is registered level-triggered while operations wait on it, and
 * removed when the last one is done: two epoll_ctl per wait, but an fd is
 * never left registered in some worker's epoll when its owner closes it
 * (an actor moves between workers, and close(2) from another thread
 * racing an epoll_ctl on the same fd is a real race; TSan says so).
 *
 * Waiters are kept by fd number, per worker, so a CLOSE must reach every
 * worker that waits on the fd, not only its own: an actor's recv waits in
 * the epoll of the worker it ran on, and the actor may run on another
 * worker when it closes. A waiter left behind would hang, and once the
 * number is reused by another connection it would read that connection's
 * bytes. So a process-wide map keeps, per fd, which workers wait on it
 * (fd_workers); a CLOSE asks each of them to forget the fd (their waiters
 * end with -EBADF, as the closing worker's own do), and the close(2)
 * itself runs only after the last of them has answered (park_release).
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ring/epoll_io.h"
#include "util/util.h"

/* EPS_PARK: a CLOSE waiting for other workers to forget its fd. */
enum { EPS_IDLE = 0, EPS_WAIT, EPS_POOL, EPS_DONE, EPS_PARK };

/* fd -> the workers waiting on it (bit: worker id % 64), process-wide as
 * fd numbers are. Two levels, so that only the fd ranges in use take
 * memory: 4096 segments of 4096 words cover 16 Mi fds; a higher fd is not
 * tracked (its close asks nobody, as before this map). Segments are never
 * freed: a pointer reached through the static array stays valid. */
#define FDMAP_SHIFT 12
#define FDMAP_SEGS 4096
static _Atomic(_Atomic uint64_t *) fdmap[FDMAP_SEGS];

/* The word of fd, made if `make` (NULL: not tracked, or no memory). */
static _Atomic uint64_t *fd_workers(int fd, int make)
{
	unsigned seg = (unsigned)fd >> FDMAP_SHIFT;
	if (fd < 0 || seg >= FDMAP_SEGS)
		return NULL;
	/* acquire: pairs with the release CAS that published the segment
	 * (its zeroed words). */
	_Atomic uint64_t *w = atomic_load_explicit(&fdmap[seg], memory_order_acquire);
	if (!w && make) {
		_Atomic uint64_t *n = ura__calloc(1u << FDMAP_SHIFT, sizeof *n);
		if (!n)
			return NULL;
		/* acq_rel: publishes our zeroed segment, or (we lost) takes
		 * the winner's, which we read through w. */
		if (atomic_compare_exchange_strong_explicit(&fdmap[seg], &w, n,
							    memory_order_acq_rel,
							    memory_order_acquire))
			w = n;
		else
			free(n);
	}
	return w ? &w[fd & ((1 << FDMAP_SHIFT) - 1)] : NULL;
}

/* Our worker starts (on) or stops waiting on fd. The reader is a CLOSE
 * that happens after our submit (through the actor's token, or the
 * caller's own ordering), so coherence shows it our bit or a later value.
 * Set: relaxed (a closer that sees it asks us, and our answer orders our
 * epoll_ctl calls before its close(2): park_release). Cleared: release,
 * after the EPOLL_CTL_DEL that let the fd go; pairs with the closer's
 * acquire load, so a closer that sees the bit clear and asks nobody
 * still closes after our DEL (TSan saw close(2) race that DEL when the
 * clear was relaxed). With more than 64 workers a bit is shared and is
 * never cleared: extra asks find nothing and cost a wake. */
static void fd_mark(struct ura__poller *p, int fd, int on)
{
	_Atomic uint64_t *w = fd_workers(fd, 0);
	uint64_t bit = 1ull << (p->id & 63);
	if (!w)
		return;
	if (on)
		atomic_fetch_or_explicit(w, bit, memory_order_relaxed);
	else if (!p->id_shared)
		atomic_fetch_and_explicit(w, ~bit, memory_order_release);
}

struct ep_fd {
	struct ura__ioreq *head[2], *tail[2]; /* waiters: in, out */
	uint32_t reg;                         /* events registered, 0: none */
};

struct ura__epio {
	struct ep_fd *fds;
	int cap;
	struct ura__ioreq *done, *done_tail;  /* completions made in submit */
	struct ura__ioreq *timed;             /* operations with a deadline */
};

static struct ura__epio *ep_get(struct ura__poller *p)
{
	if (!p->ep)
		p->ep = ura__calloc(1, sizeof *p->ep);
	return p->ep;
}

/* The table is indexed by the fd's value, so it only grows for an fd
 * that is open (an fd number picked at random, say 1 << 30, is -EBADF at
 * once, as io_uring says, not a table of a billion entries or a doubling
 * that overflows). *err: -EBADF or -ENOMEM when NULL is returned. */
static struct ep_fd *fd_slot(struct ura__epio *e, int fd, int *err)
{
	if (fd < 0) {
		*err = -EBADF;
		return NULL;
	}
	if (fd >= e->cap) {
		if (fcntl(fd, F_GETFD) < 0) {
			*err = -errno;
			return NULL;
		}
		size_t cap = e->cap ? (size_t)e->cap : 64;
		while (cap <= (size_t)fd)
			cap *= 2; /* size_t: 2 * 2^31 does not overflow */
		if (cap > INT_MAX)
			cap = (size_t)INT_MAX;
		struct ep_fd *n = ura__realloc(e->fds, cap * sizeof *n);
		if (!n) {
			*err = -ENOMEM;
			return NULL;
		}
		memset(n + e->cap, 0, (cap - (size_t)e->cap) * sizeof *n);
		e->fds = n;
		e->cap = (int)cap;
	}
	return &e->fds[fd];
}

static void timed_del(struct ura__epio *e, struct ura__ioreq *r)
{
	if (!r->timer_live)
		return;
	if (r->tm_prev)
		r->tm_prev->tm_next = r->tm_next;
	else
		e->timed = r->tm_next;
	if (r->tm_next)
		r->tm_next->tm_prev = r->tm_prev;
	r->tm_next = r->tm_prev = NULL;
}

/* The final completion of r (and of its deadline, if still armed). */
static void finish(struct ura__poller *p, struct ura__ioreq *r, int res)
{
	struct ura__epio *e = p->ep;
	r->state = EPS_IDLE;
	if (r->timer_live) {
		timed_del(e, r);
		r->timer_live = 0;
		p->on_io(p->io_ctx, r, -ECANCELED, 0, 1);
	}
	p->on_io(p->io_ctx, r, res, 0, 0);
}

/* Completion decided inside submit: delivered at the next poll, never
 * from inside the call that started the operation. */
static void defer_done(struct ura__poller *p, struct ura__ioreq *r, int res)
{
	struct ura__epio *e = p->ep;
	r->res = res;
	r->state = EPS_DONE;
	r->bk_next = NULL;
	if (e->done_tail)
		e->done_tail->bk_next = r;
	else
		e->done = r;
	e->done_tail = r;
	p->io_inflight++;
}

static int dir_of(const struct ura__ioreq *r)
{
	switch (r->op) {
	case URA_IO_WRITE: case URA_IO_WRITEV: case URA_IO_SEND: case URA_IO_CONNECT:
		return 1;
	case URA_IO_POLL:
		return (r->events & (POLLIN | POLLPRI | POLLRDHUP)) ? 0 : 1;
	default:
		return 0;
	}
}

/* Makes epoll watch f for what its waiters need (nothing: removed).
 * -EPERM: epoll cannot wait on this fd (a regular file): the pool takes
 * it. */
static int rearm(struct ura__poller *p, int fd, struct ep_fd *f)
{
	uint32_t want = (f->head[0] ? EPOLLIN | EPOLLRDHUP : 0) | (f->head[1] ? EPOLLOUT : 0);
	if (want == f->reg)
		return 0;
	struct epoll_event ev = { .events = want, .data.u64 = URA__UD_IO | (uint64_t)fd };
	int op = !want ? EPOLL_CTL_DEL : f->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
	if (epoll_ctl(p->epfd, op, fd, &ev) < 0) {
		/* EEXIST: registered behind our back (a dup'ed file);
		 * ENOENT: closed and gone from epoll already. */
		if (op == EPOLL_CTL_ADD && errno == EEXIST)
			op = EPOLL_CTL_MOD;
		else if (op == EPOLL_CTL_MOD && errno == ENOENT)
			op = EPOLL_CTL_ADD;
		else if (op == EPOLL_CTL_DEL)
			op = -1;
		else
			return -errno;
		if (op >= 0 && epoll_ctl(p->epfd, op, fd, &ev) < 0)
			return -errno;
	}
	if (!want != !f->reg)
		fd_mark(p, fd, want != 0);
	f->reg = want;
	return 0;
}

/* Every waiter on fd ends with res, and epoll lets the fd go first: a
 * final completion may let its actor close the fd itself (a destroy
 * callback's close(2)), which must come after our last epoll_ctl on it. */
static void end_waiters(struct ura__poller *p, int fd, struct ep_fd *f, int res)
{
	struct ura__ioreq *done[2] = { f->head[0], f->head[1] };
	f->head[0] = f->head[1] = f->tail[0] = f->tail[1] = NULL;
	rearm(p, fd, f);
	for (int d = 0; d < 2; d++)
		while (done[d]) {
			struct ura__ioreq *q = done[d];
			done[d] = q->bk_next;
			p->io_inflight--;
			if (q->op == URA_IO_CONNECT && q->saved_fl >= 0)
				fcntl(fd, F_SETFL, q->saved_fl);
			finish(p, q, res);
		}
}

/* Drops one hold on a parked CLOSE; the last one hands it to the pool of
 * its owner (park_ctx), never to ours: its record is the owner's. */
static void park_release(struct ura__poller *p, struct ura__ioreq *r)
{
	/* acq_rel: each asked worker's forgetting (its epoll_ctl DEL) happens
	 * before the last release, which the pool's mutex then orders
	 * before close(2). */
	if (atomic_fetch_sub_explicit(&r->park_holds, 1, memory_order_acq_rel) != 1)
		return;
	/* relaxed: the pool's mutex publishes it with the job. The owner
	 * never looks at job_state while the close is parked. */
	atomic_store_explicit(&r->job_state, URA__JOB_QUEUED, memory_order_relaxed);
	p->to_pool(r->park_ctx, r);
}

static void waiter_add(struct ep_fd *f, struct ura__ioreq *r)
{
	int d = r->dir;
	r->bk_next = NULL;
	if (f->tail[d])
		f->tail[d]->bk_next = r;
	else
		f->head[d] = r;
	f->tail[d] = r;
}

static int waiter_del(struct ep_fd *f, struct ura__ioreq *r)
{
	int d = r->dir;
	struct ura__ioreq *prev = NULL;
	for (struct ura__ioreq *q = f->head[d]; q; prev = q, q = q->bk_next) {
		if (q != r)
			continue;
		if (prev)
			prev->bk_next = q->bk_next;
		else
			f->head[d] = q->bk_next;
		if (f->tail[d] == q)
			f->tail[d] = prev;
		return 1;
	}
	return 0;
}

static int to_pool(struct ura__poller *p, struct ura__ioreq *r)
{
	r->state = EPS_POOL;
	/* relaxed: the pool's mutex publishes it with the job. */
	atomic_store_explicit(&r->job_state, URA__JOB_QUEUED, memory_order_relaxed);
	p->to_pool(p->io_ctx, r);
	return 0;
}

/* One non-blocking attempt. Returns the result, or -EAGAIN to wait.
 * *more is set for a multishot accept that should keep going. */
static int attempt(struct ura__ioreq *r, uint32_t revents)
{
	ssize_t n;
	switch (r->op) {
	case URA_IO_RECV:
		n = recv(r->fd, r->buf, r->len, r->flags | MSG_DONTWAIT);
		break;
	case URA_IO_SEND:
		n = send(r->fd, r->buf, r->len, r->flags | MSG_DONTWAIT | MSG_NOSIGNAL);
		break;
	/* Pollable fds that are not files (pipes, terminals, eventfds,
	 * sockets) have no position: the offset is ignored, as io_uring
	 * does for them. Only called after readiness. */
	case URA_IO_READ:
		n = read(r->fd, r->buf, r->len);
		break;
	case URA_IO_WRITE:
		n = write(r->fd, r->buf, r->len);
		break;
	case URA_IO_READV:
		n = readv(r->fd, r->iov, r->iovcnt);
		break;
	case URA_IO_WRITEV:
		n = writev(r->fd, r->iov, r->iovcnt);
		break;
	case URA_IO_ACCEPT:
		n = accept4(r->fd, NULL, NULL, (r->flags & SOCK_NONBLOCK) | SOCK_CLOEXEC);
		break;
	case URA_IO_CONNECT: {
		int err = 0;
		socklen_t l = sizeof err;
		if (getsockopt(r->fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
			err = errno;
		if (r->saved_fl >= 0)
			fcntl(r->fd, F_SETFL, r->saved_fl);
		return -err;
	}
	case URA_IO_POLL: {
		int ev = (int)(revents & (r->events | POLLERR | POLLHUP));
		return ev ? ev : -EAGAIN;
	}
	default:
		return -EINVAL;
	}
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : (errno == EINTR ? -EAGAIN : -errno);
	return (int)n;
}

int ura__epio_submit(struct ura__poller *p, struct ura__ioreq *r)
{
	struct ura__epio *e = ep_get(p);
	if (!e)
		return -ENOMEM;
	r->timer_live = 0;
	r->tm_next = r->tm_prev = NULL;
	if (r->timeout_ns) {
		r->deadline = ura__wall_ns() + r->timeout_ns;
		r->timer_live = 1;
		r->tm_next = e->timed;
		if (e->timed)
			e->timed->tm_prev = r;
		e->timed = r;
	}
	switch (r->op) {
	case URA_IO_OPENAT: case URA_IO_CLOSE: case URA_IO_FSYNC:
		if (r->op != URA_IO_CLOSE)
			return to_pool(p, r);
		/* Waiters on a closing fd end now, as they would hang
		 * forever once epoll forgets the fd: ours here, other
		 * workers' when they are asked. */
		if (r->fd < e->cap && r->fd >= 0)
			end_waiters(p, r->fd, &e->fds[r->fd], -EBADF);
		_Atomic uint64_t *fw = fd_workers(r->fd, 0);
		/* acquire: pairs with the release clear in fd_mark. */
		uint64_t others = fw ? atomic_load_explicit(fw, memory_order_acquire) : 0;
		if (!p->id_shared)
			others &= ~(1ull << (p->id & 63));
		if (!others || !p->forget)
			return to_pool(p, r);
		r->state = EPS_PARK;
		r->park_ctx = p->io_ctx;
		/* relaxed: ours alone until the hook hands r out. */
		atomic_store_explicit(&r->park_holds, 1, memory_order_relaxed);
		p->forget(p->io_ctx, others, r);
		park_release(p, r);
		return 0;
	default:
		break;
	}
	int ferr = 0;
	struct ep_fd *f = fd_slot(e, r->fd, &ferr);
	if (!f) {
		if (ferr == -ENOMEM) {
			timed_del(e, r);
			return -ENOMEM;
		}
		defer_done(p, r, ferr); /* a completion, as io_uring gives it */
		return 0;
	}
	r->dir = (uint8_t)dir_of(r);
	if (r->op == URA_IO_CONNECT) {
		/* A blocking connect would stall the worker: made
		 * non-blocking for the call, restored at completion. */
		r->saved_fl = fcntl(r->fd, F_GETFL);
		if (r->saved_fl < 0) {
			defer_done(p, r, -errno);
			return 0;
		}
		if (!(r->saved_fl & O_NONBLOCK))
			fcntl(r->fd, F_SETFL, r->saved_fl | O_NONBLOCK);
		else
			r->saved_fl = -1;
		int c = connect(r->fd, (struct sockaddr *)&r->addr, r->addrlen);
		if (c == 0 || errno != EINPROGRESS) {
			int res = c == 0 ? 0 : -errno;
			if (r->saved_fl >= 0)
				fcntl(r->fd, F_SETFL, r->saved_fl);
			defer_done(p, r, res);
			return 0;
		}
	} else if (r->op == URA_IO_ACCEPT) {
		/* Several workers may wait on one listener: only a
		 * non-blocking accept is safe after a shared readiness. */
		int fl = fcntl(r->fd, F_GETFL);
		if (fl >= 0 && !(fl & O_NONBLOCK))
			fcntl(r->fd, F_SETFL, fl | O_NONBLOCK);
	} else if (r->op == URA_IO_SEND || r->op == URA_IO_RECV) {
		/* Sockets take MSG_DONTWAIT: try at once, wait only if
		 * that would block (a send mostly succeeds). */
		int res = attempt(r, 0);
		if (res != -EAGAIN) {
			defer_done(p, r, res);
			return 0;
		}
	}
	if (fd_workers(r->fd, 1) == NULL && (unsigned)r->fd >> FDMAP_SHIFT < FDMAP_SEGS) {
		defer_done(p, r, -ENOMEM); /* no room to say we wait on it */
		return 0;
	}
	waiter_add(f, r);
	r->state = EPS_WAIT;
	int rc = rearm(p, r->fd, f);
	if (rc < 0) {
		waiter_del(f, r);
		if (rc == -EPERM) /* a regular file: epoll cannot wait on it */
			return to_pool(p, r);
		defer_done(p, r, rc);
		return 0;
	}
	p->io_inflight++;
	return 0;
}

void ura__epio_ready(struct ura__poller *p, int fd, uint32_t events)
{
	struct ura__epio *e = p->ep;
	if (!e || fd >= e->cap)
		return;
	struct ep_fd *f = &e->fds[fd];
	/* Final completions wait until epoll was told (rearm): one may let
	 * its actor close the fd with close(2) (a destroy callback), and
	 * that must not race our epoll_ctl on it (TSan saw it). */
	struct ura__ioreq *done = NULL, **done_tail = &done;
	for (int d = 0; d < 2; d++) {
		uint32_t mask = d ? EPOLLOUT : EPOLLIN | EPOLLRDHUP;
		if (!(events & (mask | EPOLLERR | EPOLLHUP)))
			continue;
		while (f->head[d]) {
			struct ura__ioreq *r = f->head[d];
			int res = attempt(r, events);
			if (res == -EAGAIN)
				break;
			if (r->op == URA_IO_ACCEPT && (r->flags & URA_IO_MULTISHOT) && res >= 0) {
				p->on_io(p->io_ctx, r, res, 1, 0);
				continue; /* keep accepting until EAGAIN */
			}
			f->head[d] = r->bk_next;
			if (!f->head[d])
				f->tail[d] = NULL;
			r->res = res;
			r->bk_next = NULL;
			*done_tail = r;
			done_tail = &r->bk_next;
		}
	}
	rearm(p, fd, f);
	while (done) {
		struct ura__ioreq *r = done;
		done = r->bk_next;
		p->io_inflight--;
		finish(p, r, r->res);
	}
}

int ura__epio_service(struct ura__poller *p, uint64_t now)
{
	struct ura__epio *e = p->ep;
	int n = 0;
	if (!e)
		return 0;
	while (e->done) {
		struct ura__ioreq *r = e->done;
		e->done = r->bk_next;
		if (!e->done)
			e->done_tail = NULL;
		p->io_inflight--;
		finish(p, r, r->res);
		n++;
	}
	for (struct ura__ioreq *r = e->timed, *next; r; r = next) {
		next = r->tm_next;
		if (r->deadline > now)
			continue;
		timed_del(e, r);
		r->timer_live = 0;
		p->on_io(p->io_ctx, r, -ETIME, 0, 1);
		ura__epio_cancel(p, r);
		n++;
	}
	return n;
}

uint64_t ura__epio_next(struct ura__poller *p, uint64_t now)
{
	struct ura__epio *e = p->ep;
	if (!e)
		return UINT64_MAX;
	if (e->done)
		return 0;
	uint64_t best = UINT64_MAX;
	for (struct ura__ioreq *r = e->timed; r; r = r->tm_next)
		if (r->deadline - now < best || r->deadline <= now)
			best = r->deadline <= now ? 0 : r->deadline - now;
	return best;
}

void ura__epio_cancel(struct ura__poller *p, struct ura__ioreq *r)
{
	struct ura__epio *e = p->ep;
	if (!e)
		return;
	if (r->state == EPS_WAIT) {
		struct ep_fd *f = &e->fds[r->fd];
		if (waiter_del(f, r)) {
			p->io_inflight--;
			if (r->op == URA_IO_CONNECT && r->saved_fl >= 0)
				fcntl(r->fd, F_SETFL, r->saved_fl);
			rearm(p, r->fd, f);
			finish(p, r, -ECANCELED);
		}
	} else if (r->state == EPS_POOL) {
		int q = URA__JOB_QUEUED;
		/* acq_rel: pairs with the pool thread's CAS to RUNNING; the
		 * loser of the two leaves the operation to the winner. The
		 * job still comes back through the pool, as -ECANCELED. */
		atomic_compare_exchange_strong_explicit(&r->job_state, &q, URA__JOB_CANCELLED,
							memory_order_acq_rel, memory_order_acquire);
	}
	/* EPS_DONE: its result is decided and on its way. EPS_PARK: a close
	 * is not taken back once asked for; it completes when it ran. */
}

void ura__poller_forget(struct ura__poller *p, struct ura__ioreq *r)
{
	struct ura__epio *e = p->ep;
	if (e && r->fd >= 0 && r->fd < e->cap)
		end_waiters(p, r->fd, &e->fds[r->fd], -EBADF);
	park_release(p, r);
}

void ura__poller_pool_done(struct ura__poller *p, struct ura__ioreq *r, int res)
{
	finish(p, r, res);
}

int ura__epio_blocking(struct ura__ioreq *r)
{
	int q = URA__JOB_QUEUED;
	/* acq_rel: pairs with the owner's CAS to CANCELLED (epio_cancel). */
	if (!atomic_compare_exchange_strong_explicit(&r->job_state, &q, URA__JOB_RUNNING,
						     memory_order_acq_rel, memory_order_acquire))
		return -ECANCELED;
	ssize_t n;
	/* -1: the file position, as with io_uring (and read(2)). */
	int pos = r->off != -1;
	switch (r->op) {
	case URA_IO_READ:
		n = pos ? pread(r->fd, r->buf, r->len, r->off) : read(r->fd, r->buf, r->len);
		break;
	case URA_IO_WRITE:
		n = pos ? pwrite(r->fd, r->buf, r->len, r->off) : write(r->fd, r->buf, r->len);
		break;
	case URA_IO_READV:
		n = pos ? preadv(r->fd, r->iov, r->iovcnt, r->off) : readv(r->fd, r->iov, r->iovcnt);
		break;
	case URA_IO_WRITEV:
		n = pos ? pwritev(r->fd, r->iov, r->iovcnt, r->off) : writev(r->fd, r->iov, r->iovcnt);
		break;
	case URA_IO_RECV:
		n = recv(r->fd, r->buf, r->len, r->flags);
		break;
	case URA_IO_SEND:
		n = send(r->fd, r->buf, r->len, r->flags | MSG_NOSIGNAL);
		break;
	case URA_IO_OPENAT:
		n = openat(r->fd, r->path, r->flags | O_CLOEXEC, (mode_t)r->mode);
		break;
	case URA_IO_CLOSE:
		n = close(r->fd);
		/* Linux closes the fd even when close reports EINTR. */
		if (n < 0 && errno == EINTR)
			n = 0;
		break;
	case URA_IO_FSYNC:
		n = (r->flags & URA_IO_DATASYNC) ? fdatasync(r->fd) : fsync(r->fd);
		break;
	case URA_IO_POLL: {
		struct pollfd pf = { .fd = r->fd, .events = (short)r->events };
		n = poll(&pf, 1, -1);
		if (n >= 0)
			n = pf.revents;
		break;
	}
	default:
		errno = EINVAL;
		n = -1;
	}
	return n < 0 ? -errno : (int)n;
}

void ura__epio_fini(struct ura__poller *p)
{
	if (!p->ep)
		return;
	free(p->ep->fds);
	free(p->ep);
	p->ep = NULL;
}
