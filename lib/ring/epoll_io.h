/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O on the epoll backend: readiness for sockets, pipes and
 * terminals; a thread pool for what epoll cannot wait on (regular files)
 * and for calls that block (openat, close, fsync).
 */
#ifndef URA_EPOLL_IO_H
#define URA_EPOLL_IO_H

#include "ring/ring.h"

int ura__epio_submit(struct ura__poller *p, struct ura__ioreq *r);
void ura__epio_cancel(struct ura__poller *p, struct ura__ioreq *r);
/* An fd became ready (events from epoll). */
void ura__epio_ready(struct ura__poller *p, int fd, uint32_t events);
/* Deadlines and completions made inside submit; returns completions. */
int ura__epio_service(struct ura__poller *p, uint64_t now);
/* Nanoseconds until the earliest deadline (UINT64_MAX: none). */
uint64_t ura__epio_next(struct ura__poller *p, uint64_t now);
void ura__epio_fini(struct ura__poller *p);
/* Pool thread: performs r's system call, blocking. Returns res. */
int ura__epio_blocking(struct ura__ioreq *r);

#endif
