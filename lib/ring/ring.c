/* SPDX-License-Identifier: MIT */
/*
 * io_uring backend, with the epoll fallback beside it. See
 * kernel-notes/io_uring.md and kernel-notes/wakeups.md for the choices.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "ring/ring.h"
#include "util/util.h"

#define UD_WAKE 1ull     /* the eventfd poll fired */
#define UD_MSG_WAKE 2ull /* a peer's MSG_RING arrived */
#define UD_IGNORE 3ull   /* our own MSG_RING failed: the CQE says why */
#define UD_WATCH 16ull   /* + bit: a user watch (ura__poller_watch) */

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

static int uring_init(struct ura__poller *p)
{
	int err = -ENOSYS;
	for (size_t i = 0; i < URA__ARRAY_LEN(ladder); i++) {
		struct io_uring_params prm;
		memset(&prm, 0, sizeof prm);
		prm.flags = ladder[i].flags;
		err = io_uring_queue_init_params(64, &p->ring, &prm);
		if (err == 0) {
			p->name = ladder[i].name;
			break;
		}
		/* EINVAL: flags unknown to this kernel, try the next rung.
		 * Anything else (ENOSYS, EPERM, ENOMEM) refuses io_uring as
		 * a whole. */
		if (err != -EINVAL)
			return err;
	}
	if (err)
		return err;
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

static int epoll_init(struct ura__poller *p)
{
	p->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->epfd < 0)
		return -errno;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UD_WAKE };
	if (epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->efd, &ev) < 0) {
		int err = -errno;
		close(p->epfd);
		p->epfd = -1;
		return err;
	}
	p->kind = URA__BACKEND_EPOLL;
	p->name = "epoll";
	return 0;
}

int ura__poller_init(struct ura__poller *p, int want_uring, int *fell_back,
		     int *uring_err)
{
	memset(p, 0, sizeof *p);
	p->epfd = -1;
	*fell_back = 0;
	*uring_err = 0;
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (p->efd < 0)
		return -errno;
	if (want_uring) {
		int err = uring_init(p);
		if (err == 0)
			return 0;
		*fell_back = 1;
		*uring_err = err;
	}
	int err = epoll_init(p);
	if (err) {
		close(p->efd);
		p->efd = -1;
	}
	return err;
}

static void drain_eventfd(struct ura__poller *p)
{
	uint64_t v;
	/* Non-blocking: a wake that raced this read leaves a count that
	 * makes the next wait return at once, never a lost wake. */
	while (read(p->efd, &v, sizeof v) < 0 && errno == EINTR)
		;
}

static int uring_wait(struct ura__poller *p, uint64_t timeout_ns)
{
	struct io_uring_cqe *cqe;
	struct __kernel_timespec ts = {
		.tv_sec = (long long)(timeout_ns / URA_SEC),
		.tv_nsec = (long long)(timeout_ns % URA_SEC),
	};
	if (!p->poll_armed)
		arm_wake_poll(p);
	/* One enter: submits anything queued, then sleeps until a CQE or
	 * the EXT_ARG deadline (5.11), with no timeout SQE to cancel. */
	int ret = io_uring_submit_and_wait_timeout(&p->ring, &cqe, 1, &ts, NULL);
	if (ret < 0 && ret != -ETIME && ret != -EINTR && ret != -EBUSY)
		return ret;
	unsigned head, seen = 0;
	io_uring_for_each_cqe(&p->ring, head, cqe) {
		seen++;
		if (cqe->user_data == UD_WAKE) {
			drain_eventfd(p);
			/* A multishot poll ends (no F_MORE) on overflow or
			 * error; arm it again before the next sleep. */
			if (!(cqe->flags & IORING_CQE_F_MORE))
				p->poll_armed = 0;
		} else if (cqe->user_data >= UD_WATCH && cqe->user_data < UD_WATCH + 16) {
			unsigned bit = (unsigned)(cqe->user_data - UD_WATCH);
			p->events |= 1u << bit;
			if (!(cqe->flags & IORING_CQE_F_MORE))
				p->watch_dead |= 1u << bit;
		}
	}
	/* Re-arm watches whose multishot poll ended. */
	while (p->watch_dead) {
		unsigned bit = (unsigned)__builtin_ctz(p->watch_dead);
		p->watch_dead &= ~(1u << bit);
		struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
		if (!sqe)
			break;
		io_uring_prep_poll_multishot(sqe, p->watch_fd[bit], POLLIN);
		io_uring_sqe_set_data64(sqe, UD_WATCH + bit);
	}
	io_uring_cq_advance(&p->ring, seen);
	return 0;
}

static int epoll_wait_ns(struct ura__poller *p, uint64_t timeout_ns)
{
	struct epoll_event ev[4];
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / URA_SEC),
		.tv_nsec = (long)(timeout_ns % URA_SEC),
	};
	/* epoll_pwait2 (5.11) takes nanoseconds; plain epoll_wait rounds up
	 * to milliseconds and is the fallback for older kernels. */
	int n = epoll_pwait2(p->epfd, ev, 4, &ts, NULL);
	if (n < 0 && errno == ENOSYS)
		n = epoll_wait(p->epfd, ev, 4, (int)((timeout_ns + URA_MSEC - 1) / URA_MSEC));
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == UD_WAKE)
			drain_eventfd(p);
		else if (ev[i].data.u64 >= UD_WATCH && ev[i].data.u64 < UD_WATCH + 16)
			p->events |= 1u << (ev[i].data.u64 - UD_WATCH);
	}
	return 0;
}

int ura__poller_watch(struct ura__poller *p, int fd, unsigned bit)
{
	if (bit >= 16)
		return -EINVAL;
	p->watch_fd[bit] = fd;
	if (p->kind == URA__BACKEND_URING) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&p->ring);
		if (!sqe) {
			io_uring_submit(&p->ring);
			sqe = io_uring_get_sqe(&p->ring);
			if (!sqe)
				return -EBUSY;
		}
		io_uring_prep_poll_multishot(sqe, fd, POLLIN);
		io_uring_sqe_set_data64(sqe, UD_WATCH + bit);
		int rc = io_uring_submit(&p->ring);
		return rc < 0 ? rc : 0;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UD_WATCH + bit };
	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int ura__poller_wait(struct ura__poller *p, uint64_t timeout_ns)
{
	return p->kind == URA__BACKEND_URING ? uring_wait(p, timeout_ns)
					     : epoll_wait_ns(p, timeout_ns);
}

void ura__poller_wake(struct ura__poller *p)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is saturated: the owner is woken anyway. */
	while (write(p->efd, &one, sizeof one) < 0 && errno == EINTR)
		;
}

void ura__poller_wake_from(struct ura__poller *from, struct ura__poller *to)
{
	if (from->kind == URA__BACKEND_URING && from->msg_ring &&
	    to->kind == URA__BACKEND_URING && to->msg_ring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&from->ring);
		if (sqe) {
			/* MSG_RING (5.18) posts a CQE straight into the
			 * sleeper's ring: about 10 us faster per wake than an
			 * eventfd on DEFER_TASKRUN rings here
			 * (kernel-notes/wakeups.md). CQE_SKIP_SUCCESS (5.17):
			 * no CQE for us unless it failed. */
			io_uring_prep_msg_ring(sqe, to->ring.ring_fd, 0, UD_MSG_WAKE, 0);
			sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
			io_uring_sqe_set_data64(sqe, UD_IGNORE);
			if (io_uring_submit(&from->ring) >= 0)
				return;
		}
	}
	ura__poller_wake(to);
}

void ura__poller_fini(struct ura__poller *p)
{
	if (p->kind == URA__BACKEND_URING)
		io_uring_queue_exit(&p->ring);
	if (p->epfd >= 0)
		close(p->epfd);
	p->kind = 0;
	p->epfd = -1;
}

void ura__poller_close(struct ura__poller *p)
{
	if (p->efd >= 0)
		close(p->efd);
	p->efd = -1;
}
