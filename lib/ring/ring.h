/* SPDX-License-Identifier: MIT */
/*
 * The small internal interface every OS backend implements (Redis's aeApi
 * idea): a worker sleeps in its poller with a bounded wait, and any thread
 * wakes it. Two backends: io_uring (uring.c) and epoll+eventfd (epoll.c),
 * dispatched in poller.c.
 * Timers and actor I/O extend this interface; nothing above lib/ring
 * touches io_uring or epoll directly.
 */
#ifndef URA_RING_H
#define URA_RING_H

#include <liburing.h>
#include <stdint.h>

enum { URA__BACKEND_URING = 1, URA__BACKEND_EPOLL = 2 };

#include <sys/socket.h>
#include <sys/uio.h>

/*
 * One I/O operation as a backend sees it. It lives in its owner's op table
 * (lib/io) and stays put until its final completion, so backends keep
 * pointers to it. Completions go to p->on_io(p->io_ctx, r, res, more):
 * never from inside submit, always from poll/wait on the owner thread. An
 * operation with a deadline completes twice: once for itself and once for
 * its timer (`timer` 1, res -ETIME if the timer fired, else -ECANCELED or
 * -ENOENT), in either order.
 */
struct ura__ioreq {
	int op;                    /* enum ura_io_op */
	int fd;
	int flags;
	unsigned events, mode;
	void *buf;                 /* READ/RECV: destination; WRITE/SEND: source */
	size_t len;
	int64_t off;
	struct iovec *iov;
	int iovcnt;
	const char *path;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	uint64_t timeout_ns;
	/* Backend-private. */
	struct __kernel_timespec ts;   /* io_uring: the linked timeout */
	struct ura__ioreq *bk_next;    /* backlog / epoll waiter list */
	struct ura__ioreq *tm_next, *tm_prev; /* epoll: deadline list */
	uint64_t deadline;             /* epoll: absolute, CLOCK_MONOTONIC */
	int saved_fl;                  /* epoll connect: fd flags to restore */
	int res;                       /* epoll: result waiting in the done list */
	uint8_t more;                  /* epoll: ... and whether more follow */
	uint8_t state;                 /* epoll: URA__EPS_* */
	uint8_t dir;                   /* epoll: 0 in, 1 out */
	uint8_t timer_live;            /* epoll: deadline not yet reported */
	/* epoll: handed to the pool; QUEUED -> RUNNING by the pool thread,
	 * QUEUED -> CANCELLED by the owner (a deadline or a cancel). */
	_Atomic int job_state;
	/* epoll CLOSE that waits for other workers to forget its fd: one
	 * count per worker asked, one for the owner's own hold; whoever
	 * drops the last hands it to the pool as its owner's (park_ctx, the
	 * owner's io_ctx: epoll_io.c's park_release). */
	_Atomic unsigned park_holds;
	void *park_ctx;
};
enum { URA__JOB_QUEUED = 1, URA__JOB_RUNNING, URA__JOB_CANCELLED };

/* Ring sizes: SQEs per submit batch; CQ room for every op in flight. */
#define URA__SQ_ENTRIES 256
#define URA__CQ_ENTRIES 4096

/* io_uring user_data of an operation: its ioreq's address with bit 63
 * set (user-space addresses stay below 2^47); bit 62 marks its linked
 * timeout. An address is reused only after its final completion, and a
 * cancel is queued before any SQE of a reuse, so a cancel never hits the
 * wrong operation. */
#define URA__UD_IO (1ull << 63)
#define URA__UD_LT (1ull << 62)

typedef void ura__io_cb(void *ctx, struct ura__ioreq *r, int res, int more, int timer);
/* Files and blocking calls of the epoll backend go to a thread pool
 * (lib/io/pool.c); the backend hands them over through this hook, and the
 * pool reports back through ura__poller_pool_done. */
typedef void ura__pool_cb(void *ctx, struct ura__ioreq *r);
/* The epoll backend's CLOSE of an fd other workers may wait on (their bit,
 * worker id % 64, in `workers`): the hook asks each of them to forget the
 * fd (ura__poller_forget, on their thread), adding one to r->park_holds
 * per worker asked before it asks. */
typedef void ura__forget_cb(void *ctx, uint64_t workers, struct ura__ioreq *r);

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
	/* Peers' alarms this poller watches (ura__poller_alarms), owner. */
	const int *alarm_fd;
	unsigned alarm_n;
	uint8_t *alarm_dead;       /* io_uring: its multishot poll ended */
	int alarm_redo;            /* io_uring: some alarm_dead is set */
	int alarmed;               /* a peer's alarm fired since it was cleared */
	/* Actor I/O. */
	ura__io_cb *on_io;
	ura__pool_cb *to_pool;
	ura__forget_cb *forget;
	void *io_ctx;
	unsigned id;               /* the owner's worker id: its bit is id % 64 */
	uint8_t id_shared;         /* more than 64 workers: bits are shared */
	unsigned io_inflight;      /* io_uring: ops (and timers) in the kernel */
	unsigned io_limit;         /* most of them at once: CQ room */
	unsigned io_sq_pending;    /* SQEs queued, not yet submitted */
	struct ura__ioreq *backlog, *backlog_tail; /* waiting for CQ room */
	_Atomic uint64_t io_deferred; /* ops that waited in the backlog (stats) */
	struct ura__epio *ep;      /* epoll backend state (epoll_io.c) */
	struct io_uring ring;
};

/* Runs on the owning worker thread (SINGLE_ISSUER rings belong to the
 * thread that creates them). `want_uring` 0 forces epoll. Returns 0 or
 * -errno; *fell_back tells whether io_uring was refused. */
int ura__poller_init(struct ura__poller *p, int want_uring, int *fell_back,
		     int *uring_err);
/* Owner only: sleep until woken or timeout_ns passes (UINT64_MAX: until
 * woken). Returns 0 or -errno (never -EINTR or -ETIME: those are normal
 * returns). */
int ura__poller_wait(struct ura__poller *p, uint64_t timeout_ns);
/* Owner only: watch fd for readability; when it is readable, a wait sets
 * bit `bit` (< 16) of p->events and returns. The watch stays armed. */
int ura__poller_watch(struct ura__poller *p, int fd, unsigned bit);
/* Owner only: starts r (completion through p->on_io later). 0 or -errno
 * (then r never completes). */
int ura__poller_submit(struct ura__poller *p, struct ura__ioreq *r);
/* Owner only: asks for r to end early (it still completes, once). */
void ura__poller_cancel(struct ura__poller *p, struct ura__ioreq *r);
/* Owner only: submits what is queued and delivers the completions that
 * are ready, without sleeping. Returns completions delivered. */
int ura__poller_poll(struct ura__poller *p);
/* True when the poller has I/O in flight or queued (worth polling). */
static inline int ura__poller_io_active(const struct ura__poller *p)
{
	return p->io_inflight || p->io_sq_pending || p->backlog;
}
/* Owner: another worker's CLOSE r (epoll) asks us to forget its fd: our
 * waiters on it end with -EBADF and epoll lets it go, then r may run. */
void ura__poller_forget(struct ura__poller *p, struct ura__ioreq *r);
/* Owner: a pool job the backend handed out has finished (res in r). */
void ura__poller_pool_done(struct ura__poller *p, struct ura__ioreq *r, int res);
/* Owner, at exit: cancels every operation in flight and waits (at most
 * `wait_ns`) for their completions. Returns how many never completed. */
unsigned ura__poller_drain(struct ura__poller *p, uint64_t wait_ns);
/* Binds io_uring's helper threads (io-wq) to `cpus` and caps them. */
void ura__poller_iowq(struct ura__poller *p, const void *cpuset, size_t setsize,
		      unsigned max_workers);
/* Any thread: wake the owner (or make its next wait return at once). */
void ura__poller_wake(struct ura__poller *p);
/* From the owner of `from` (a worker): wake `to`, by MSG_RING from ring to
 * ring where both have it (then 1), else through `to`'s eventfd (0). */
int ura__poller_wake_from(struct ura__poller *from, struct ura__poller *to);
/*
 * A worker's alarm (time/timers.c, watch_due): a timerfd that its owner
 * sets to the moment its earliest timer becomes a peer's to fire, and
 * that every peer's poller watches. If the owner is still in a turn then,
 * the peers asleep wake and fire it; if it is not, it moved or disarmed
 * the alarm first and nobody woke. Any thread may set it; sets of one
 * alarm must not race (its owner alone sets it).
 */
int ura__alarm_open(void);                   /* the fd, or -errno */
/* at_ns: CLOCK_MONOTONIC, absolute (a moment past fires at once); 0
 * disarms. 0 or -errno. */
int ura__alarm_arm(int fd, uint64_t at_ns);
void ura__alarm_close(int fd);
/* Owner only, once, before its first wait: watch these peers' alarms;
 * a wait that sees one fire sets p->alarmed. `dead`, n bytes, is the
 * backend's to write; both arrays are the caller's, and outlive the
 * poller. The first `near` fds are peers whose every sleeper can fire
 * their timers as soon as any (same node): on epoll a fire of one wakes
 * only one of those sleepers (EPOLLEXCLUSIVE), where one suffices; the
 * ring wakes all (kernel-notes/timers.md). 0 or -errno. */
int ura__poller_alarms(struct ura__poller *p, const int *fds, uint8_t *dead, unsigned n,
		       unsigned near);
/* Owner thread, when it exits: the ring (or epoll fd) goes. */
void ura__poller_fini(struct ura__poller *p);
/* Once no thread can wake the poller any more: the wake fd goes. Kept
 * apart so that a late waker never writes to a closed (or reused) fd. */
void ura__poller_close(struct ura__poller *p);

#endif
