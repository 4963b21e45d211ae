/* SPDX-License-Identifier: MIT */
/*
 * The small internal interface every OS backend implements (Redis's aeApi
 * idea): a worker sleeps in its poller with a bounded wait, and any thread
 * wakes it. Two backends: io_uring (ring.c) and epoll+eventfd (epoll.c).
 * Timers and actor I/O extend this interface; nothing above lib/ring
 * touches io_uring or epoll directly.
 */
#ifndef URA_RING_H
#define URA_RING_H

#include <liburing.h>
#include <stdint.h>

enum { URA__BACKEND_URING = 1, URA__BACKEND_EPOLL = 2 };

struct ura__poller {
	int kind;          /* URA__BACKEND_* */
	int efd;           /* wake eventfd, written by wakers */
	int epfd;          /* epoll backend */
	int poll_armed;    /* io_uring: multishot poll on efd is live */
	int msg_ring;      /* io_uring: IORING_OP_MSG_RING works (5.18) */
	const char *name;  /* static text for stats and logs */
	unsigned events;   /* user watches that fired (bit per watch), owner */
	unsigned watch_dead; /* io_uring: watches whose multishot poll ended */
	int watch_fd[16];
	struct io_uring ring;
};

/* Runs on the owning worker thread (SINGLE_ISSUER rings belong to the
 * thread that creates them). `want_uring` 0 forces epoll. Returns 0 or
 * -errno; *fell_back tells whether io_uring was refused. */
int ura__poller_init(struct ura__poller *p, int want_uring, int *fell_back,
		     int *uring_err);
/* Owner only: sleep until woken or timeout_ns passes. Returns 0 or -errno
 * (never -EINTR or -ETIME: those are normal returns). */
int ura__poller_wait(struct ura__poller *p, uint64_t timeout_ns);
/* Owner only: watch fd for readability; when it is readable, a wait sets
 * bit `bit` (< 16) of p->events and returns. The watch stays armed. */
int ura__poller_watch(struct ura__poller *p, int fd, unsigned bit);
/* Any thread: wake the owner (or make its next wait return at once). */
void ura__poller_wake(struct ura__poller *p);
/* From the owner of `from` (a worker): wake `to`, by MSG_RING from ring to
 * ring where both have it, else through `to`'s eventfd. */
void ura__poller_wake_from(struct ura__poller *from, struct ura__poller *to);
/* Owner thread, when it exits: the ring (or epoll fd) goes. */
void ura__poller_fini(struct ura__poller *p);
/* Once no thread can wake the poller any more: the wake fd goes. Kept
 * apart so that a late waker never writes to a closed (or reused) fd. */
void ura__poller_close(struct ura__poller *p);

#endif
