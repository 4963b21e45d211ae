/* SPDX-License-Identifier: MIT */
/*
 * The epoll backend: epoll + eventfd where io_uring is refused, with
 * actor I/O emulated on readiness (epoll_io.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "ring/backend.h"
#include "ring/epoll_io.h"

int ura__epoll_init(struct ura__poller *p)
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

int ura__epoll_wait(struct ura__poller *p, uint64_t timeout_ns)
{
	struct epoll_event ev[64];
	if (p->ep) {
		uint64_t io_next = ura__epio_next(p, ura__wall_ns());
		if (io_next < timeout_ns)
			timeout_ns = io_next;
	}
	struct timespec ts = {
		.tv_sec = (time_t)(timeout_ns / URA_SEC),
		.tv_nsec = (long)(timeout_ns % URA_SEC),
	};
	/* epoll_pwait2 (5.11) takes nanoseconds; plain epoll_wait rounds up
	 * to milliseconds and is the fallback for older kernels. UINT64_MAX:
	 * no deadline (an idle worker with no timer). */
	int forever = timeout_ns == UINT64_MAX;
	int n = epoll_pwait2(p->epfd, ev, 64, forever ? NULL : &ts, NULL);
	if (n < 0 && errno == ENOSYS)
		n = epoll_wait(p->epfd, ev, 64,
			       forever ? -1 : (int)((timeout_ns + URA_MSEC - 1) / URA_MSEC));
	if (n < 0 && errno != EINTR)
		return -errno;
	for (int i = 0; i < n; i++) {
		uint64_t ud = ev[i].data.u64;
		if (ud & URA__UD_IO)
			ura__epio_ready(p, (int)(ud & 0x7fffffff), ev[i].events);
		else if (ud == UD_WAKE)
			ura__poller_drain_eventfd(p);
		else if (ud >= UD_WATCH && ud < UD_WATCH + 16)
			p->events |= 1u << (ud - UD_WATCH);
		else if (ud >= UD_ALARM && ud < UD_ALARM + p->alarm_n)
			p->alarmed = 1;
	}
	if (p->ep)
		ura__epio_service(p, ura__wall_ns());
	return 0;
}

int ura__epoll_watch(struct ura__poller *p, int fd, unsigned bit)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = UD_WATCH + bit };
	return epoll_ctl(p->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int ura__epoll_alarms(struct ura__poller *p, unsigned near)
{
	for (unsigned i = 0; i < p->alarm_n; i++) {
		/* Edge-triggered: one event per expiry, and nobody reads the
		 * fd (its owner's next set clears it); level-triggered, an
		 * expired alarm would end every wait until then.
		 * Exclusive for a peer of our node: a fire then wakes the
		 * first of the epolls registered so whose owner is in a wait
		 * (one with no waiter does not count, and later ones are not
		 * even told), so one sleeper of the node fires the timers
		 * instead of all of them. Not for a peer of another node: a
		 * sleeper there, woken before its longer grace, only bounds
		 * its sleep, so ours must wake too (they are woken first, as
		 * non-exclusive waiters). */
		struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.u64 = UD_ALARM + i };
		if (i < near)
			ev.events |= EPOLLEXCLUSIVE;
		int rc = epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->alarm_fd[i], &ev);
		if (rc < 0 && errno == EINVAL && (ev.events & EPOLLEXCLUSIVE)) {
			/* Before 4.5: every sleeper wakes, as on the ring. */
			ev.events &= ~(uint32_t)EPOLLEXCLUSIVE;
			rc = epoll_ctl(p->epfd, EPOLL_CTL_ADD, p->alarm_fd[i], &ev);
		}
		if (rc < 0)
			return -errno;
	}
	return 0;
}
