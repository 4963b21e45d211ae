/* SPDX-License-Identifier: MIT */
/*
 * The poller interface (ring.h), dispatched to the backend a worker got
 * (io_uring, or epoll where io_uring is refused), and the wake eventfd
 * both backends share.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "ring/backend.h"
#include "ring/epoll_io.h"

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
		int err = ura__uring_init(p);
		if (err == 0)
			return 0;
		*fell_back = 1;
		*uring_err = err;
	}
	int err = ura__epoll_init(p);
	if (err) {
		close(p->efd);
		p->efd = -1;
	}
	return err;
}

void ura__poller_drain_eventfd(struct ura__poller *p)
{
	uint64_t v;
	/* Non-blocking: a wake that raced this read leaves a count that
	 * makes the next wait return at once, never a lost wake. */
	while (read(p->efd, &v, sizeof v) < 0 && errno == EINTR)
		;
}

int ura__poller_submit(struct ura__poller *p, struct ura__ioreq *r)
{
	return p->kind == URA__BACKEND_URING ? ura__uring_submit(p, r) : ura__epio_submit(p, r);
}

void ura__poller_cancel(struct ura__poller *p, struct ura__ioreq *r)
{
	if (p->kind == URA__BACKEND_URING)
		ura__uring_cancel(p, r);
	else
		ura__epio_cancel(p, r);
}

int ura__poller_poll(struct ura__poller *p)
{
	if (p->kind == URA__BACKEND_URING)
		return ura__uring_poll(p);
	if (!p->io_inflight)
		return 0;
	uint64_t before = p->io_inflight;
	int rc = ura__epoll_wait(p, 0);
	return rc < 0 ? rc : (int)(before - p->io_inflight);
}

unsigned ura__poller_drain(struct ura__poller *p, uint64_t wait_ns)
{
	if (p->kind != URA__BACKEND_URING) {
		/* Nothing of ours is in the kernel: waiters are forgotten by
		 * the caller, pool jobs come back through the pool. */
		return 0;
	}
	return ura__uring_drain(p, wait_ns);
}

void ura__poller_iowq(struct ura__poller *p, const void *cpuset, size_t setsize,
		      unsigned max_workers)
{
	if (p->kind == URA__BACKEND_URING)
		ura__uring_iowq(p, cpuset, setsize, max_workers);
}

int ura__poller_watch(struct ura__poller *p, int fd, unsigned bit)
{
	if (bit >= 16)
		return -EINVAL;
	p->watch_fd[bit] = fd;
	return p->kind == URA__BACKEND_URING ? ura__uring_watch(p, fd, bit)
					     : ura__epoll_watch(p, fd, bit);
}

int ura__poller_wait(struct ura__poller *p, uint64_t timeout_ns)
{
	return p->kind == URA__BACKEND_URING ? ura__uring_wait(p, timeout_ns)
					     : ura__epoll_wait(p, timeout_ns);
}

void ura__poller_wake(struct ura__poller *p)
{
	uint64_t one = 1;
	/* EAGAIN means the counter is saturated: the owner is woken anyway. */
	while (write(p->efd, &one, sizeof one) < 0 && errno == EINTR)
		;
}

int ura__poller_wake_from(struct ura__poller *from, struct ura__poller *to)
{
	if (from->kind == URA__BACKEND_URING && from->msg_ring &&
	    to->kind == URA__BACKEND_URING && to->msg_ring && ura__uring_msg_wake(from, to))
		return 1;
	ura__poller_wake(to);
	return 0;
}

/* A timerfd (2.6.25) rather than a timeout on the owner's ring: that
 * ring is DEFER_TASKRUN, whose timeouts complete only when its owner
 * enters the kernel, which a worker stuck in a turn does not; and a
 * timerfd is set by one syscall from the thread that owns the deadline,
 * watched by the peers' rings as any fd (kernel-notes/timers.md). */
int ura__alarm_open(void)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ura__alarm_arm(int fd, uint64_t at_ns)
{
	struct itimerspec its;
	memset(&its, 0, sizeof its);
	its.it_value.tv_sec = (time_t)(at_ns / URA_SEC);
	its.it_value.tv_nsec = (long)(at_ns % URA_SEC);
	/* Setting it also clears expirations nobody read: no peer has to
	 * read the fd, and the next expiry is the next wake. */
	return timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL) < 0 ? -errno : 0;
}

void ura__alarm_close(int fd)
{
	if (fd >= 0)
		close(fd);
}

int ura__poller_alarms(struct ura__poller *p, const int *fds, uint8_t *dead, unsigned n,
		       unsigned near)
{
	if (!n)
		return 0;
	p->alarm_fd = fds;
	p->alarm_dead = dead;
	p->alarm_n = n;
	return p->kind == URA__BACKEND_URING ? ura__uring_alarms(p)
					     : ura__epoll_alarms(p, near < n ? near : n);
}

void ura__poller_fini(struct ura__poller *p)
{
	p->alarm_fd = NULL;
	p->alarm_dead = NULL;
	p->alarm_n = 0;
	ura__epio_fini(p);
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
