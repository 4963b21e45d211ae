/* SPDX-License-Identifier: MIT */
/*
 * The io_uring backend: setup, the one enter that sleeps, submission with
 * a user-space backlog when the CQ has no room, cancels, MSG_RING wakes.
 * See kernel-notes/io_uring.md and kernel-notes/wakeups.md for the
 * choices.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ring/backend.h"

static int uring_submit_backlog(struct ura__poller *p);

/* The setup ladder: newest flags first. DEFER_TASKRUN (6.1) runs
 * completions only when we enter the kernel, which suits a worker that
 * only enters to sleep; SINGLE_ISSUER (6.0) is required with it and true
 * for us anyway; COOP_TASKRUN (5.19) avoids IPIs for task work. */
static const struct {
	unsigned flags;
	const char *name;
} ladder[] = {
	{ IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
	  "io_uring(single_issuer,defer_taskrun)" },
	{ IORING_SETUP_COOP_TASKRUN, "io_uring(coop_taskrun)" },
	{ 0, "io_uring" },
};

static int arm_wake_poll(struct ura__poller *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
	if (!sqe)
		return -EBUSY;
	/* Multishot poll (5.13) rather than a READ: one SQE serves every
	 * wake, and a READ on an eventfd hung on 6.15.4 (libxev c6d1f45). */
	io_uring_prep_poll_multishot(sqe, p->efd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD_WAKE);
	p->poll_armed = 1;
	return 0;
}

int ura__uring_init(struct ura__poller *p)
{
	int err = -ENOSYS;
	unsigned sq = URA__SQ_ENTRIES, cq = URA__CQ_ENTRIES;
	for (size_t i = 0; i < URA__ARRAY_LEN(ladder); i++) {
		struct io_uring_params prm;
		memset(&prm, 0, sizeof prm);
		/* A large CQ: every operation in flight may complete at once.
		 * CQSIZE is 5.5, as old as EXT_ARG's 5.11 floor. */
		prm.flags = ladder[i].flags | IORING_SETUP_CQSIZE;
		prm.cq_entries = cq;
		err = io_uring_queue_init_params(sq, &p->ring, &prm);
		if (err == 0) {
			p->name = ladder[i].name;
			break;
		}
		/* ENOMEM before 5.12 is RLIMIT_MEMLOCK (64 KiB by default)
		 * counting ring memory: the full rings take 84 KiB, a small
		 * pair fits, and a small ring beats no ring. */
		if (err == -ENOMEM && cq > 256) {
			sq = 64;
			cq = 256;
			i--;
			continue;
		}
		/* EINVAL: flags unknown to this kernel, try the next rung.
		 * Anything else (ENOSYS, EPERM, ENOMEM) refuses io_uring as
		 * a whole. */
		if (err != -EINVAL)
			return err;
	}
	if (err)
		return err;
	/* Room kept for the wake poll, watches and MSG_RING wakes: the rest
	 * of the CQ bounds the operations in flight, so a burst of
	 * completions never overflows it (the kernel's overflow list, NODROP
	 * since 5.5, would keep them, but makes submits fail with -EBUSY). */
	p->io_limit = p->ring.cq.ring_entries - 64;
	/* A fork()ed child must never touch a worker's ring. */
	io_uring_ring_dontfork(&p->ring);
	struct io_uring_probe *probe = io_uring_get_probe_ring(&p->ring);
	if (probe) {
		p->msg_ring = io_uring_opcode_supported(probe, IORING_OP_MSG_RING);
		io_uring_free_probe(probe);
	}
	err = arm_wake_poll(p);
	if (err == 0)
		err = io_uring_submit(&p->ring) < 0 ? -errno : 0;
	if (err) {
		io_uring_queue_exit(&p->ring);
		return err;
	}
	p->kind = URA__BACKEND_URING;
	return 0;
}

/* An SQE, submitting what is queued first if the SQ is full; NULL only
 * if the submit left no room either. */
static struct io_uring_sqe *sqe_get(struct ura__poller *p)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
	if (!sqe) {
		io_uring_submit(&p->ring);
		p->io_sq_pending = 0;
		sqe = io_uring_get_sqe(&p->ring);
	}
	return sqe;
}

static int arm_alarms(struct ura__poller *p, int dead);

/* Delivers every CQE that is ready; returns how many were I/O. */
int ura__uring_reap(struct ura__poller *p)
{
	struct io_uring_cqe *cqe;
	unsigned head, seen = 0;
	int io = 0;
	io_uring_for_each_cqe(&p->ring, head, cqe) {
		seen++;
		uint64_t ud = cqe->user_data;
		if (ud & URA__UD_IO) {
			struct ura__ioreq *r = (struct ura__ioreq *)(uintptr_t)(ud & ~(URA__UD_IO | URA__UD_LT));
			int more = (cqe->flags & IORING_CQE_F_MORE) != 0;
			if (!more)
				p->io_inflight--;
			io++;
			p->on_io(p->io_ctx, r, cqe->res, more, (ud & URA__UD_LT) != 0);
		} else if (ud == UD_WAKE) {
			ura__poller_drain_eventfd(p);
			/* A multishot poll ends (no F_MORE) on overflow or
			 * error; arm it again before the next sleep. */
			if (!(cqe->flags & IORING_CQE_F_MORE))
				p->poll_armed = 0;
		} else if (ud >= UD_WATCH && ud < UD_WATCH + 16) {
			unsigned bit = (unsigned)(ud - UD_WATCH);
			p->events |= 1u << bit;
			if (!(cqe->flags & IORING_CQE_F_MORE))
				p->watch_dead |= 1u << bit;
		} else if (ud >= UD_ALARM && ud < UD_ALARM + p->alarm_n) {
			if (cqe->res > 0)
				p->alarmed = 1;
			if (!(cqe->flags & IORING_CQE_F_MORE)) {
				p->alarm_dead[ud - UD_ALARM] = 1;
				p->alarm_redo = 1;
			}
		}
	}
	io_uring_cq_advance(&p->ring, seen);
	if (p->alarm_redo)
		arm_alarms(p, 1);
	/* Re-arm watches whose multishot poll ended. */
	while (p->watch_dead) {
		unsigned bit = (unsigned)__builtin_ctz(p->watch_dead);
		p->watch_dead &= ~(1u << bit);
		struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
		if (!sqe)
			break;
		io_uring_prep_poll_multishot(sqe, p->watch_fd[bit], POLLIN);
		io_uring_sqe_set_data64(sqe, UD_WATCH + bit);
		p->io_sq_pending++;
	}
	return io;
}

int ura__uring_wait(struct ura__poller *p, uint64_t timeout_ns)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {
		.tv_sec = (long long)(timeout_ns / URA_SEC),
		.tv_nsec = (long long)(timeout_ns % URA_SEC),
	};
	if (!p->poll_armed)
		arm_wake_poll(p);
	p->io_sq_pending = 0;
	/* One enter: submits anything queued, then sleeps until a CQE or
	 * the EXT_ARG deadline (5.11), with no timeout SQE to cancel; no
	 * deadline at all for an idle worker with no timer (UINT64_MAX). */
	int ret = io_uring_submit_and_wait_timeout(&p->ring, &cqe, 1,
						   timeout_ns == UINT64_MAX ? NULL : &ts, NULL);
	if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EBUSY)
		return ret;
	ura__uring_reap(p);
	if (p->backlog)
		uring_submit_backlog(p);
	return 0;
}

static void uring_prep(struct io_uring_sqe *sqe, struct ura__ioreq *r)
{
	unsigned len = (unsigned)r->len;
	switch (r->op) {
	case URA_IO_READ:
		io_uring_prep_read(sqe, r->fd, r->buf, len, (uint64_t)r->off);
		break;
	case URA_IO_WRITE:
		io_uring_prep_write(sqe, r->fd, r->buf, len, (uint64_t)r->off);
		break;
	case URA_IO_READV:
		io_uring_prep_readv(sqe, r->fd, r->iov, (unsigned)r->iovcnt, (uint64_t)r->off);
		break;
	case URA_IO_WRITEV:
		io_uring_prep_writev(sqe, r->fd, r->iov, (unsigned)r->iovcnt, (uint64_t)r->off);
		break;
	case URA_IO_RECV:
		io_uring_prep_recv(sqe, r->fd, r->buf, r->len, r->flags);
		break;
	case URA_IO_SEND:
		/* MSG_NOSIGNAL: a peer that went away is -EPIPE, never a
		 * SIGPIPE that kills the process. */
		io_uring_prep_send(sqe, r->fd, r->buf, r->len, r->flags | MSG_NOSIGNAL);
		break;
	case URA_IO_ACCEPT: {
		int fl = (r->flags & SOCK_NONBLOCK) | SOCK_CLOEXEC;
		if (r->flags & URA_IO_MULTISHOT)
			io_uring_prep_multishot_accept(sqe, r->fd, NULL, NULL, fl);
		else
			io_uring_prep_accept(sqe, r->fd, NULL, NULL, fl);
		break;
	}
	case URA_IO_CONNECT:
		io_uring_prep_connect(sqe, r->fd, (struct sockaddr *)&r->addr, r->addrlen);
		break;
	case URA_IO_OPENAT:
		io_uring_prep_openat(sqe, r->fd, r->path, r->flags | O_CLOEXEC, r->mode);
		break;
	case URA_IO_CLOSE:
		io_uring_prep_close(sqe, r->fd);
		break;
	case URA_IO_FSYNC:
		io_uring_prep_fsync(sqe, r->fd,
				    (r->flags & URA_IO_DATASYNC) ? IORING_FSYNC_DATASYNC : 0);
		break;
	case URA_IO_POLL:
		io_uring_prep_poll_add(sqe, r->fd, r->events);
		break;
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)r | URA__UD_IO);
}

/* Queues r's SQE(s); -EBUSY when the SQ or the CQ budget has no room. */
static int uring_queue(struct ura__poller *p, struct ura__ioreq *r, uint64_t timeout)
{
	unsigned need = r->timeout_ns ? 2 : 1;
	if (p->io_inflight + need > p->io_limit)
		return -EBUSY;
	if (io_uring_sq_space_left(&p->ring) < need) {
		int rc = io_uring_submit(&p->ring);
		p->io_sq_pending = 0;
		if (rc < 0 && rc != -EBUSY)
			return rc;
		if (io_uring_sq_space_left(&p->ring) < need)
			return -EBUSY;
	}
	struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
	uring_prep(sqe, r);
	if (r->timeout_ns) {
		/* A linked timeout (5.5) rather than one of our wheel's
		 * timers: the kernel cancels the operation itself. */
		sqe->flags |= IOSQE_IO_LINK;
		r->ts.tv_sec = (long long)(timeout / URA_SEC);
		r->ts.tv_nsec = (long long)(timeout % URA_SEC);
		struct io_uring_sqe *t = io_uring_get_sqe(&p->ring);
		io_uring_prep_link_timeout(t, &r->ts, 0);
		io_uring_sqe_set_data64(t, (uint64_t)(uintptr_t)r | URA__UD_IO | URA__UD_LT);
	}
	p->io_inflight += need;
	p->io_sq_pending += need;
	return 0;
}

static void backlog_add(struct ura__poller *p, struct ura__ioreq *r)
{
	/* The deadline runs from the submit, not from leaving the backlog. */
	if (r->timeout_ns)
		r->deadline = ura__wall_ns() + r->timeout_ns;
	r->bk_next = NULL;
	if (p->backlog_tail)
		p->backlog_tail->bk_next = r;
	else
		p->backlog = r;
	p->backlog_tail = r;
	ura__inc(&p->io_deferred);
}

static int uring_submit_backlog(struct ura__poller *p)
{
	while (p->backlog) {
		struct ura__ioreq *r = p->backlog;
		uint64_t left = 0;
		if (r->timeout_ns) {
			uint64_t now = ura__wall_ns();
			left = r->deadline > now ? r->deadline - now : 1;
		}
		if (uring_queue(p, r, left) < 0)
			break;
		p->backlog = r->bk_next;
		if (!p->backlog)
			p->backlog_tail = NULL;
	}
	return 0;
}

int ura__uring_submit(struct ura__poller *p, struct ura__ioreq *r)
{
	/* Behind the backlog, never before it: order of submission is the
	 * order of calls (a send queued behind another stays behind it). */
	if (!p->backlog && uring_queue(p, r, r->timeout_ns) == 0)
		return 0;
	backlog_add(p, r);
	return 0;
}

int ura__uring_poll(struct ura__poller *p)
{
	if (p->io_sq_pending || p->io_inflight) {
		p->io_sq_pending = 0;
		/* With DEFER_TASKRUN completions are only posted when we
		 * enter with GETEVENTS: this is that enter, and the submit
		 * rides along. */
		int rc = io_uring_submit_and_get_events(&p->ring);
		if (rc < 0 && rc != -EBUSY && rc != -EINTR)
			return rc;
	}
	int n = ura__uring_reap(p);
	if (p->backlog)
		uring_submit_backlog(p);
	return n;
}

void ura__uring_cancel(struct ura__poller *p, struct ura__ioreq *r)
{
	int in_backlog = 0;
	for (struct ura__ioreq **pp = &p->backlog; *pp; pp = &(*pp)->bk_next) {
		if (*pp != r)
			continue;
		*pp = r->bk_next;
		if (p->backlog_tail == r) {
			p->backlog_tail = NULL;
			for (struct ura__ioreq *q = p->backlog; q; q = q->bk_next)
				p->backlog_tail = q;
		}
		in_backlog = 1;
		break;
	}
	if (in_backlog) {
		/* Never reached the kernel: complete it here, as the kernel
		 * would, timer first. Deferred through the CQ is not possible,
		 * so report now; callers allow completion from cancel. */
		if (r->timeout_ns)
			p->on_io(p->io_ctx, r, -ECANCELED, 0, 1);
		p->on_io(p->io_ctx, r, -ECANCELED, 0, 0);
		return;
	}
	struct io_uring_sqe *sqe = sqe_get(p);
	if (!sqe)
		return; /* cannot happen: the submit emptied the SQ */
	/* Cancels (5.5) complete with a CQE of their own, which we skip on
	 * success (5.17); the operation's CQE reports -ECANCELED. */
	io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)r | URA__UD_IO, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data64(sqe, UD_IGNORE);
	p->io_sq_pending++;
}

/* Waits (at most wait_ns) for every operation in flight to complete. */
unsigned ura__uring_drain(struct ura__poller *p, uint64_t wait_ns)
{
	/* The caller has cancelled every operation one by one: a cancel
	 * per op costs ~0.5 us, where one CANCEL_ANY (5.19) grew with the
	 * square of the ops in flight (72 ms for 4000 here,
	 * kernel-notes/io.md). Ring exit alone is not enough: it returns
	 * before the kernel lets go of the buffers. */
	while (p->backlog)
		ura__uring_cancel(p, p->backlog);
	uint64_t until = ura__wall_ns() + wait_ns;
	while (p->io_inflight) {
		uint64_t now = ura__wall_ns();
		if (now >= until)
			break;
		struct io_uring_cqe *cqe;
		uint64_t left = until - now;
		struct __kernel_timespec ts = {
			.tv_sec = (long long)(left / URA_SEC),
			.tv_nsec = (long long)(left % URA_SEC),
		};
		int ret = io_uring_submit_and_wait_timeout(&p->ring, &cqe, 1, &ts, NULL);
		if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EBUSY)
			break;
		ura__uring_reap(p);
	}
	return p->io_inflight;
}

void ura__uring_iowq(struct ura__poller *p, const void *cpuset, size_t setsize,
		     unsigned max_workers)
{
	/* io-wq runs the blocking parts of operations (regular file I/O
	 * without NOWAIT support, openat, fsync) in kernel threads: keep
	 * them on this worker's node (5.14) and few (5.15). Best effort:
	 * an older kernel leaves io-wq as it is. */
	if (cpuset)
		io_uring_register_iowq_aff(&p->ring, setsize, cpuset);
	unsigned vals[2] = { max_workers, max_workers };
	io_uring_register_iowq_max_workers(&p->ring, vals);
}

/* Multishot polls (5.13) on the peers' alarms: all of them, or only
 * those whose poll ended (`dead`, after an overflow or an error). A full
 * SQ is submitted and refilled; what still finds none waits for the next
 * reap. */
static int arm_alarms(struct ura__poller *p, int dead)
{
	p->alarm_redo = 0;
	for (unsigned i = 0; i < p->alarm_n; i++) {
		if (dead && !p->alarm_dead[i])
			continue;
		struct io_uring_sqe *sqe = sqe_get(p);
		if (!sqe) {
			p->alarm_redo = 1;
			if (!dead)
				return -EBUSY;
			p->alarm_dead[i] = 1;
			continue;
		}
		p->alarm_dead[i] = 0;
		io_uring_prep_poll_multishot(sqe, p->alarm_fd[i], POLLIN);
		io_uring_sqe_set_data64(sqe, UD_ALARM + i);
		p->io_sq_pending++;
	}
	return 0;
}

int ura__uring_alarms(struct ura__poller *p)
{
	/* Each may post a CQE at any time: their room comes off the I/O's
	 * (a quarter of the CQ at most; past that the kernel's overflow
	 * list holds the rest, as it would any burst). */
	unsigned room = p->alarm_n < p->ring.cq.ring_entries / 4 ? p->alarm_n
								  : p->ring.cq.ring_entries / 4;
	p->io_limit -= room;
	int rc = arm_alarms(p, 0);
	if (rc == 0) {
		rc = io_uring_submit(&p->ring);
		rc = rc < 0 ? rc : 0;
	}
	p->io_sq_pending = 0;
	return rc;
}

int ura__uring_watch(struct ura__poller *p, int fd, unsigned bit)
{
	struct io_uring_sqe *sqe = sqe_get(p);
	if (!sqe)
		return -EBUSY;
	io_uring_prep_poll_multishot(sqe, fd, POLLIN);
	io_uring_sqe_set_data64(sqe, UD_WATCH + bit);
	int rc = io_uring_submit(&p->ring);
	p->io_sq_pending = 0;
	return rc < 0 ? rc : 0;
}

/* MSG_RING from `from`'s ring into `to`'s; false if it could not be
 * sent (then the caller uses the eventfd). */
int ura__uring_msg_wake(struct ura__poller *from, struct ura__poller *to)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&from->ring);
	if (!sqe)
		return 0;
	/* MSG_RING (5.18) posts a CQE straight into the sleeper's ring:
	 * about 10 us faster per wake than an eventfd on DEFER_TASKRUN rings
	 * here (kernel-notes/wakeups.md). CQE_SKIP_SUCCESS (5.17): no CQE
	 * for us unless it failed. */
	io_uring_prep_msg_ring(sqe, to->ring.ring_fd, 0, UD_MSG_WAKE, 0);
	sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
	io_uring_sqe_set_data64(sqe, UD_IGNORE);
	int rc = io_uring_submit(&from->ring);
	from->io_sq_pending = 0;
	return rc >= 0;
}
