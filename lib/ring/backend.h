/* SPDX-License-Identifier: MIT */
/* What the backends of lib/ring share (poller.c dispatches to them);
 * nothing outside the folder includes it. */
#ifndef URA_RING_BACKEND_H
#define URA_RING_BACKEND_H

#include "ring/ring.h"
#include "util/util.h"

#define UD_WAKE 1ull     /* the eventfd poll fired */
#define UD_MSG_WAKE 2ull /* a peer's MSG_RING arrived */
#define UD_IGNORE 3ull   /* our own MSG_RING failed: the CQE says why */
#define UD_WATCH 16ull   /* + bit: a user watch (ura__poller_watch) */
#define UD_ALARM (1ull << 32) /* + index: a peer's alarm (ura__poller_alarms) */

/* poller.c */
void ura__poller_drain_eventfd(struct ura__poller *p);

/* uring.c */
int ura__uring_init(struct ura__poller *p);
int ura__uring_reap(struct ura__poller *p);
int ura__uring_wait(struct ura__poller *p, uint64_t timeout_ns);
int ura__uring_submit(struct ura__poller *p, struct ura__ioreq *r);
int ura__uring_poll(struct ura__poller *p);
void ura__uring_cancel(struct ura__poller *p, struct ura__ioreq *r);
unsigned ura__uring_drain(struct ura__poller *p, uint64_t wait_ns);
void ura__uring_iowq(struct ura__poller *p, const void *cpuset, size_t setsize,
		     unsigned max_workers);
int ura__uring_watch(struct ura__poller *p, int fd, unsigned bit);
int ura__uring_msg_wake(struct ura__poller *from, struct ura__poller *to);
int ura__uring_alarms(struct ura__poller *p);

/* epoll.c */
int ura__epoll_init(struct ura__poller *p);
int ura__epoll_wait(struct ura__poller *p, uint64_t timeout_ns);
int ura__epoll_watch(struct ura__poller *p, int fd, unsigned bit);
int ura__epoll_alarms(struct ura__poller *p, unsigned near);

#endif
