/* SPDX-License-Identifier: MIT */
/*
 * Actor I/O: from ura_io_submit to the completion message.
 *
 * Accounting for quiescence: submitting counts one message as sent (the
 * final completion, which every operation delivers exactly once), and each
 * extra completion of a multishot accept counts one more before it is
 * posted. So while an operation is in flight, sent > received and the
 * system is never quiescent; nothing else is needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/post.h"
#include "io/io.h"
#include "io/op.h"
#include "io/pool.h"

#define IOV_MAX_URA 64

/* Ids: worker (10 bits) | generation (29) | index (24); positive. */
static inline int64_t op_id(const struct ura__op *op)
{
	return (int64_t)(((uint64_t)op->owner << 53) | ((uint64_t)(op->gen & 0x1fffffff) << 24) |
			 op->idx);
}

static struct ura__op *op_get(struct ura__io *io, uint32_t idx)
{
	if (idx >= io->hwm)
		return NULL;
	return &io->chunks[idx >> URA__OPS_SHIFT][idx & (URA__OPS_CHUNK - 1)];
}

/* Owner: the live record of `id`, or NULL (completed, or never). */
static struct ura__op *op_find(struct ura__worker *w, int64_t id)
{
	uint32_t idx = (uint32_t)id & 0xffffff;
	uint32_t gen = (uint32_t)((uint64_t)id >> 24) & 0x1fffffff;
	struct ura__op *op = op_get(w->io, idx);
	return op && op->live && (op->gen & 0x1fffffff) == gen ? op : NULL;
}

static struct ura__op *op_alloc(struct ura__worker *w)
{
	struct ura__io *io = w->io;
	struct ura__op *op = io->free;
	if (op) {
		io->free = op->next;
	} else {
		if ((io->hwm & (URA__OPS_CHUNK - 1)) == 0) {
			uint32_t c = io->hwm >> URA__OPS_SHIFT;
			if (c >= URA__OPS_MAX_CHUNKS)
				return NULL;
			if (c >= io->nchunks) {
				uint32_t n = io->nchunks ? io->nchunks * 2 : 16;
				struct ura__op **nc = ura__realloc(io->chunks, n * sizeof *nc);
				if (!nc)
					return NULL;
				io->chunks = nc;
				io->nchunks = n;
			}
			io->chunks[c] = ura__calloc(URA__OPS_CHUNK, sizeof **io->chunks);
			if (!io->chunks[c])
				return NULL;
		}
		op = &io->chunks[io->hwm >> URA__OPS_SHIFT][io->hwm & (URA__OPS_CHUNK - 1)];
		op->idx = io->hwm++;
		op->owner = (uint16_t)w->id;
	}
	uint32_t gen = op->gen + 1;
	if (!(gen & 0x1fffffff))
		gen++;
	uint32_t idx = op->idx;
	uint16_t owner = op->owner;
	memset(op, 0, sizeof *op);
	op->idx = idx;
	op->owner = owner;
	op->gen = gen;
	op->live = 1;
	return op;
}

static void op_free(struct ura__worker *w, struct ura__op *op)
{
	free(op->own);
	op->own = NULL;
	op->live = 0;
	op->next = w->io->free;
	w->io->free = op;
}

/* ---- completion ----------------------------------------------------- */

static void deliver(struct ura__worker *w, struct ura__op *op, struct ura_msg *m,
		    int64_t res, int more)
{
	m->vals[0].u.i64 = res;
	if (op->rq.op == URA_IO_READ || op->rq.op == URA_IO_RECV) {
		m->vals[1].len = res > 0 ? (uint32_t)res : 0;
		m->vals[1].u.bytes = (char *)&m->vals[2];
	}
	if (more)
		m->flags |= URA__MF_MORE;
	op->delivered = 1;
	if (w->io->exiting) {
		/* The system is going down: nobody will handle it. Counted
		 * as received so the books balance. */
		ura__msg_free(&w->pool, m);
		ura__inc(&w->st.received);
		return;
	}
	ura__post_made(w, op->actor, m);
}

static void resubmit(struct ura__worker *w, struct ura__op *op);

/* One of many completions (a multishot accept): a message of its own,
 * a copy of the prepared one. */
static void deliver_extra(struct ura__worker *w, struct ura__op *op, int64_t res)
{
	size_t size = sizeof(struct ura_msg) + sizeof(ura_value);
	struct ura_msg *m = ura__msg_alloc(&w->pool, size);
	if (!m) {
		/* No memory for the message: the connection is refused
		 * rather than leaked (as with EMFILE). */
		if (res >= 0)
			close((int)res);
		ura__log(&w->sys->log, URA_LOG_ERROR, "accept: connection dropped: %s",
			 ura_strerror(-ENOMEM));
		return;
	}
	uint8_t cls = m->cls;
	memcpy(m, op->m, size);
	m->cls = cls;
	/* Counted before the push, like every send. */
	ura__inc(&w->st.sent);
	deliver(w, op, m, res, 1);
}

/* The attempt is over (its CQE and its timer's, if any). */
static void attempt_done(struct ura__worker *w, struct ura__op *op, int64_t res)
{
	if (op->timer_fired && (res == -ECANCELED || res == -EINTR))
		res = -ETIME;
	int op_kind = op->rq.op;
	if ((op_kind == URA_IO_WRITE || op_kind == URA_IO_SEND) && res >= 0) {
		op->done += (size_t)res;
		/* A cancel that came while the attempt was completing
		 * found nothing in the kernel to cancel: it ends the
		 * operation here instead, or the rest of a write to a
		 * peer that reads nothing would wait forever. */
		if (res > 0 && (size_t)res < op->rq.len && op->cancelled) {
			op->done = 0;
			res = -ECANCELED;
		} else if (res > 0 && (size_t)res < op->rq.len && !w->io->exiting) {
			/* A short write: the rest goes out before we report,
			 * so the caller sees all of it or an error. */
			op->rq.buf = (char *)op->rq.buf + res;
			op->rq.len -= (size_t)res;
			if (op->rq.off != -1 && op_kind == URA_IO_WRITE)
				op->rq.off += res;
			resubmit(w, op);
			return;
		}
		if (res >= 0)
			res = (int64_t)op->done;
	}
	/* An error after some bytes went out: the error wins; the caller
	 * must not assume any of it arrived. */
	if (op->rearm && !w->io->exiting &&
	    (res >= 0 || res == -ECONNABORTED || res == -EINTR || res == -EAGAIN)) {
		/* Accept without kernel multishot (or a multishot the kernel
		 * ended): deliver and go again. */
		if (res >= 0)
			deliver_extra(w, op, res);
		resubmit(w, op);
		return;
	}
	struct ura_msg *m = op->m;
	op->m = NULL;
	ura__inc(&w->st.io_completed);
	deliver(w, op, m, res, 0);
	op_free(w, op);
}

static void resubmit(struct ura__worker *w, struct ura__op *op)
{
	/* The deadline is the whole operation's: a resumed short write (or
	 * a re-armed accept) gets what is left of it, not a fresh one, so a
	 * peer that reads a trickle cannot keep a send alive forever. A
	 * deadline already passed still makes one attempt, at 1 ns. */
	if (op->deadline) {
		uint64_t now = ura__wall_ns();
		op->rq.timeout_ns = op->deadline > now ? op->deadline - now : 1;
	}
	op->ncqe = op->rq.timeout_ns ? 2 : 1;
	op->timer_fired = 0;
	int rc = ura__poller_submit(&w->poller, &op->rq);
	if (rc < 0) {
		op->rearm = 0;
		op->done = 0;
		attempt_done(w, op, rc);
	}
}

/* ura__io_cb: every CQE of an operation (and of its timer) lands here. */
static void on_io(void *ctx, struct ura__ioreq *r, int res, int more, int timer)
{
	struct ura__worker *w = ctx;
	struct ura__op *op = (struct ura__op *)r; /* rq is the first member */
	if (timer) {
		if (res == -ETIME)
			op->timer_fired = 1;
	} else if (more) {
		deliver_extra(w, op, res);
		return;
	} else {
		op->first_res = res;
		if (res == -EINVAL && op->rq.op == URA_IO_ACCEPT &&
		    (op->rq.flags & URA_IO_MULTISHOT) && !op->delivered && !op->rearm) {
			/* A kernel without multishot accept (before 5.19):
			 * accept one at a time, re-arming after each. */
			op->rearm = 1;
			op->rq.flags &= ~URA_IO_MULTISHOT;
			if (op->ncqe == 1) {
				resubmit(w, op);
				return;
			}
		} else if (!op->rearm && op->rq.op == URA_IO_ACCEPT &&
			   (op->rq.flags & URA_IO_MULTISHOT) && res >= 0) {
			/* The kernel ended a multishot accept with a success
			 * (CQ pressure): deliver it and arm again. */
			op->rearm = 1;
		}
	}
	if (--op->ncqe)
		return;
	attempt_done(w, op, op->first_res);
}


/* ---- submit --------------------------------------------------------- */

static int check_req(const ura_io_req *r)
{
	if (!ura__zeroed(r->reserved_, sizeof r->reserved_))
		return -EINVAL;
	switch (r->op) {
	case URA_IO_READ: case URA_IO_RECV:
		if (r->len > URA_IO_MAX_LEN)
			return -EINVAL;
		break;
	case URA_IO_WRITE: case URA_IO_SEND:
		if (r->len > URA_IO_MAX_LEN || (r->len && !r->buf))
			return -EINVAL;
		break;
	case URA_IO_READV: case URA_IO_WRITEV:
		if (!r->iov || r->iovcnt < 1 || r->iovcnt > IOV_MAX_URA)
			return -EINVAL;
		for (int i = 0; i < r->iovcnt; i++)
			if (r->iov[i].iov_len && !r->iov[i].iov_base)
				return -EINVAL;
		break;
	case URA_IO_ACCEPT:
		if (r->flags & ~(SOCK_NONBLOCK | SOCK_CLOEXEC | URA_IO_MULTISHOT))
			return -EINVAL;
		if ((r->flags & URA_IO_MULTISHOT) && r->timeout_ns)
			return -EINVAL;
		break;
	case URA_IO_CONNECT:
		if (!r->addr || r->addrlen < sizeof(sa_family_t) ||
		    r->addrlen > sizeof(struct sockaddr_storage))
			return -EINVAL;
		break;
	case URA_IO_OPENAT:
		if (!r->path)
			return -EINVAL;
		if (strnlen(r->path, PATH_MAX) >= PATH_MAX)
			return -ENAMETOOLONG;
		return r->fd < 0 && r->fd != AT_FDCWD ? -EBADF : 0;
	case URA_IO_CLOSE: case URA_IO_FSYNC:
		if (r->op == URA_IO_FSYNC && (r->flags & ~URA_IO_DATASYNC))
			return -EINVAL;
		break;
	case URA_IO_POLL:
		if (!r->events)
			return -EINVAL;
		break;
	default:
		return -EINVAL;
	}
	if (r->op != URA_IO_RECV && r->op != URA_IO_SEND && r->op != URA_IO_ACCEPT &&
	    r->op != URA_IO_FSYNC && r->flags && r->op != URA_IO_OPENAT)
		return -EINVAL;
	if (r->offset < -1)
		return -EINVAL;
	if (r->timeout_ns > URA_MAX_DELAY)
		return -EINVAL;
	return r->fd < 0 ? -EBADF : 0;
}

/* The completion message, made now so that a completion never needs
 * memory: "ib" with room for len bytes, or "i". */
static struct ura_msg *make_completion(struct ura__worker *w, struct ura__actor *a,
				       const ura_io_req *r, ura_atom tag, int64_t id)
{
	int data = r->op == URA_IO_READ || r->op == URA_IO_RECV;
	ura_value v[2] = { ura_v_i64(0), ura_v_bytes(NULL, 0) };
	size_t size = sizeof(struct ura_msg) + (data ? 2 : 1) * sizeof(ura_value) +
		      (data ? r->len : 0);
	struct ura_msg *m = ura__msg_alloc(&w->pool, size);
	if (!m)
		return NULL;
	ura__msg_fill(m, tag, URA_NOREF, v, data ? 2 : 1);
	m->from.id = (uint64_t)id;
	m->kind = URA__MK_IO;
	/* relaxed: the token holder is gen's only writer. */
	m->to_gen = atomic_load_explicit(&a->gen, memory_order_relaxed);
	return m;
}

/* The common start of every operation: checks that this handler can
 * start one, takes a record and makes its completion message. */
static int op_begin(ura_ctx *cx, ura_atom tag, const ura_io_req *r, struct ura__op **out)
{
	struct ura__worker *w = cx->w;
	/* An init callback run by ura_spawn_sys has no worker, so no ring:
	 * start I/O from a handler (send yourself a message from init). */
	if (!w)
		return -EPERM;
	/* relaxed: a hint; an operation that races the shutdown is
	 * cancelled by the worker's exit like any other. */
	if (atomic_load_explicit(&w->sys->shutdown, memory_order_relaxed))
		return -ESHUTDOWN;
	struct ura__op *op = op_alloc(w);
	if (!op)
		return -ENOMEM;
	op->m = make_completion(w, cx->a, r, tag, op_id(op));
	if (!op->m) {
		op_free(w, op);
		return -ENOMEM;
	}
	*out = op;
	return 0;
}

/* Undoes op_begin (nothing was started). */
static void op_abort(struct ura__worker *w, struct ura__op *op)
{
	ura__msg_free(&w->pool, op->m);
	op_free(w, op);
}

/* The operation is the actor's from here: tracked, and its final
 * completion counted as sent (see the top). Returns its id or -errno. */
static int64_t op_commit(ura_ctx *cx, struct ura__op *op, ura_atom tag, unsigned ncqe)
{
	struct ura__worker *w = cx->w;
	int64_t id = op_id(op);
	/* The actor's list of operations in flight is ours (io/): its stop
	 * cancels them, and its turn untracks each final completion. */
	struct ura__actor_x *x = ura__actor_x(cx->w, cx->a);
	int rc = x ? ura__ids_push(&x->io, id) : -ENOMEM;
	if (rc < 0) {
		op_abort(w, op);
		return rc;
	}
	op->actor = ura__self_ref(cx->a);
	op->tag = tag;
	op->ncqe = (uint8_t)ncqe;
	ura__inc(&w->st.sent);
	ura__inc(&w->st.io_submitted);
	return id;
}

URA_API ura_io ura_io_submit(ura_ctx *cx, ura_atom tag, const ura_io_req *r)
{
	if (ura__ctx_bad(cx) || !r || !ura_atom_valid(tag))
		return -EINVAL;
	int rc = check_req(r);
	struct ura__op *op = NULL;
	if (rc < 0 || (rc = op_begin(cx, tag, r, &op)) < 0)
		return rc;
	struct ura__worker *w = cx->w;
	struct ura__ioreq *q = &op->rq;
	q->op = r->op;
	q->fd = r->fd;
	q->flags = r->flags;
	q->events = r->events;
	q->mode = r->mode;
	q->off = r->offset;
	q->timeout_ns = r->timeout_ns;
	q->len = r->len;
	switch (r->op) {
	case URA_IO_READ: case URA_IO_RECV:
		q->buf = (char *)&op->m->vals[2];
		break;
	case URA_IO_WRITE: case URA_IO_SEND:
		/* Copied, like the values of a send: the caller's buffer is
		 * free again when we return. */
		if (r->len) {
			op->own = ura__malloc(r->len);
			if (!op->own)
				rc = -ENOMEM;
			else
				memcpy(op->own, r->buf, r->len);
		}
		q->buf = op->own;
		break;
	case URA_IO_READV: case URA_IO_WRITEV:
		/* The array is copied; the memory it points at is the
		 * actor's, pinned until the completion (or its destroy). */
		op->own = ura__malloc((size_t)r->iovcnt * sizeof(struct iovec));
		if (!op->own) {
			rc = -ENOMEM;
			break;
		}
		memcpy(op->own, r->iov, (size_t)r->iovcnt * sizeof(struct iovec));
		q->iov = op->own;
		q->iovcnt = r->iovcnt;
		break;
	case URA_IO_OPENAT:
		op->own = ura__strdup(r->path);
		if (!op->own)
			rc = -ENOMEM;
		q->path = op->own;
		break;
	case URA_IO_CONNECT:
		memcpy(&q->addr, r->addr, r->addrlen);
		q->addrlen = r->addrlen;
		break;
	default:
		break;
	}
	if (rc < 0) {
		op_abort(w, op);
		return rc;
	}
	if (r->timeout_ns)
		op->deadline = ura__wall_ns() + r->timeout_ns;
	int64_t id = op_commit(cx, op, tag, r->timeout_ns ? 2 : 1);
	if (id < 0)
		return id;
	rc = ura__poller_submit(&w->poller, q);
	if (rc < 0) {
		/* Refused before it started: it completes with the error,
		 * as a message, like any other failure of the operation. */
		op->ncqe = 1;
		op->timer_fired = 0;
		attempt_done(w, op, rc);
	}
	return id;
}

/* ---- offload -------------------------------------------------------- */

URA_API ura_io ura_offload(ura_ctx *cx, ura_atom tag, ura_work_fn *fn, void *arg)
{
	if (ura__ctx_bad(cx) || !fn || !ura_atom_valid(tag))
		return -EINVAL;
	ura_io_req fake = URA__ZERO;
	fake.op = URA__OP_OFFLOAD;
	struct ura__op *op = NULL;
	int rc = op_begin(cx, tag, &fake, &op);
	if (rc < 0)
		return rc;
	op->rq.op = URA__OP_OFFLOAD;
	op->fn = fn;
	op->arg = arg;
	int64_t id = op_commit(cx, op, tag, 1);
	if (id < 0)
		return id;
	/* relaxed: the pool's mutex publishes it with the job. */
	atomic_store_explicit(&op->rq.job_state, URA__JOB_QUEUED, memory_order_relaxed);
	ura__pool_queue(cx->w, &op->rq);
	return id;
}

/* ---- cancel --------------------------------------------------------- */

static void cancel_local(struct ura__worker *w, int64_t id)
{
	struct ura__op *op = op_find(w, id);
	if (!op)
		return;
	if (op->rq.op == URA__OP_OFFLOAD) {
		int q = URA__JOB_QUEUED;
		/* acq_rel: pairs with the pool thread's CAS to RUNNING. */
		atomic_compare_exchange_strong_explicit(&op->rq.job_state, &q, URA__JOB_CANCELLED,
							memory_order_acq_rel, memory_order_acquire);
		return;
	}
	op->rearm = 0;
	op->cancelled = 1;
	/* Last: the backend may complete (and free) the operation here. */
	ura__poller_cancel(&w->poller, &op->rq);
}

/* w's inbox (cancels, forgets) has news: w looks at it in its next pass,
 * or wakes for it. */
static void inbox_tell(struct ura__worker *self, struct ura__worker *w)
{
	/* seq_cst: pairs with the owner's fence before it sleeps. */
	atomic_store_explicit(&w->io->cancel_req, 1, memory_order_seq_cst);
	ura__wake(self, w);
}

static void cancel_id(struct ura__worker *self, ura_system *sys, int64_t id)
{
	unsigned owner = (unsigned)((uint64_t)id >> 53);
	if (owner >= sys->nworkers)
		return;
	struct ura__worker *w = &sys->workers[owner];
	if (w == self) {
		cancel_local(w, id);
		return;
	}
	pthread_mutex_lock(&w->io->cancel_lock);
	int rc = ura__ids_push(&w->io->cancels, id);
	pthread_mutex_unlock(&w->io->cancel_lock);
	if (rc < 0)
		/* No room for the id: the owner sweeps instead and cancels
		 * every operation of an actor that stopped, so a stopping
		 * actor's destroy never waits forever. (An ura_io_cancel of
		 * a live actor's operation is lost then: the operation just
		 * runs to its end.) */
		atomic_store_explicit(&w->io->cancel_sweep, 1, memory_order_relaxed);
	inbox_tell(self, w);
}

/* ura__forget_cb: an epoll CLOSE on `self` asks the workers in `workers`
 * to forget its fd before it runs (ring/epoll_io.c says why). */
static void io_forget(void *ctx, uint64_t workers, struct ura__ioreq *r)
{
	struct ura__worker *self = ctx;
	ura_system *sys = self->sys;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		if (i == self->id || !((workers >> (i & 63)) & 1))
			continue;
		struct ura__worker *w = &sys->workers[i];
		struct ura__io *io = w->io;
		int asked = 0, nomem = 0;
		pthread_mutex_lock(&io->cancel_lock);
		if (!io->forget_closed) {
			if (ura__ids_push(&io->forgets, (int64_t)(uintptr_t)r) == 0) {
				/* relaxed: the worker sees r only once we let go
				 * of the lock, which hands the hold over too. */
				atomic_fetch_add_explicit(&r->park_holds, 1, memory_order_relaxed);
				asked = 1;
			} else {
				nomem = 1;
			}
		}
		pthread_mutex_unlock(&io->cancel_lock);
		if (nomem)
			/* The close goes ahead without this worker's answer,
			 * as it did before the fd map: its waiters on the fd
			 * (if any) are left to the actor's stop. */
			ura__log(&sys->log, URA_LOG_ERROR, "close of fd %d: worker %u not told: %s",
				 r->fd, i, ura_strerror(-ENOMEM));
		if (asked)
			inbox_tell(self, w);
	}
}

/* Owner: takes up to 64 entries of one of its inbox lists (cancels,
 * forgets), newest first, under cancel_lock: a bounded batch at a time,
 * never an allocation, and never the work under the lock (a cancel or a
 * forget may complete an operation). Returns how many. */
static unsigned inbox_take(struct ura__io *io, struct ura__ids **lp, int64_t out[64])
{
	pthread_mutex_lock(&io->cancel_lock);
	struct ura__ids *l = *lp; /* NULL until the first push */
	unsigned k = !l ? 0 : l->n < 64 ? l->n : 64;
	if (k) {
		l->n -= k;
		memcpy(out, l->v + l->n, k * sizeof *out);
	}
	pthread_mutex_unlock(&io->cancel_lock);
	return k;
}

/* Owner: answers the forget requests queued for us. */
static void forget_all(struct ura__worker *w)
{
	int64_t rs[64];
	unsigned k;
	while ((k = inbox_take(w->io, &w->io->forgets, rs)))
		for (unsigned i = 0; i < k; i++)
			ura__poller_forget(&w->poller, (struct ura__ioreq *)(uintptr_t)rs[i]);
}

URA_API int ura_io_cancel(ura_ctx *cx, ura_io id)
{
	if (ura__ctx_bad(cx) || id <= 0)
		return -EINVAL;
	struct ura__actor *a = cx->a;
	struct ura__ids *l = a->x ? a->x->io : NULL;
	for (uint32_t i = 0; l && i < l->n; i++)
		if (l->v[i] == id) {
			cancel_id(cx->w, cx->sys, id);
			return 0;
		}
	return -ENOENT;
}

void ura__io_cancel_all(struct ura__worker *w, struct ura__actor *a)
{
	struct ura__ids *l = a->x ? a->x->io : NULL;
	if (!l)
		return;
	/* The list itself, no copy: a local cancel may complete an
	 * operation at once, but its completion message is posted, and only
	 * the actor's later turn takes the id off the list. */
	for (uint32_t i = 0; i < l->n; i++)
		cancel_id(w, w->sys, l->v[i]);
}

URA_API ura_io ura_io_id(const ura_msg *m)
{
	return m && m->kind == URA__MK_IO ? (ura_io)m->from.id : 0;
}

URA_API int ura_io_more(const ura_msg *m)
{
	return m && m->kind == URA__MK_IO && (m->flags & URA__MF_MORE);
}

/* ---- the worker's side ---------------------------------------------- */

/* Cancels every operation whose actor has stopped (a cancel request was
 * lost for want of memory: see cancel_id). */
static void cancel_stopped(struct ura__worker *w)
{
	for (uint32_t i = 0; i < w->io->hwm; i++) {
		struct ura__op *op = op_get(w->io, i);
		if (op->live && !ura__slot_live(w->sys, op->actor))
			cancel_local(w, op_id(op));
	}
}

/* Owner: finished pool jobs, cross-worker cancels, and (if poll) a
 * non-blocking poll of the ring. Returns completions handled. */
static int io_service(struct ura__worker *w, int poll)
{
	struct ura__io *io = w->io;
	int n = 0;
	/* relaxed peek; the exchange below is what synchronizes. */
	if (atomic_load_explicit(&io->done, memory_order_relaxed)) {
		/* acquire: pairs with the pool threads' pushes. */
		struct ura__op *list = atomic_exchange_explicit(&io->done, NULL,
								memory_order_acquire);
		while (list) {
			struct ura__op *op = list;
			list = op->next;
			n++;
			if (op->rq.op == URA__OP_OFFLOAD) {
				op->ncqe = 1;
				attempt_done(w, op, op->res);
			} else {
				ura__poller_pool_done(&w->poller, &op->rq, (int)op->res);
			}
		}
	}
	/* relaxed both: the ids travel under cancel_lock. The flag is
	 * cleared before the lock is taken, so a cancel appended after we
	 * let go of the lock sets it again (its store follows its append). */
	if (atomic_load_explicit(&io->cancel_req, memory_order_relaxed)) {
		atomic_store_explicit(&io->cancel_req, 0, memory_order_relaxed);
		/* relaxed: set before the seq_cst store of cancel_req that we
		 * just read (the store orders it for us). */
		if (atomic_exchange_explicit(&io->cancel_sweep, 0, memory_order_relaxed))
			cancel_stopped(w);
		/* Taken without an allocation: a cancel must not be lost
		 * for want of memory (a stopping actor's destroy waits for
		 * it). */
		int64_t ids[64];
		unsigned k;
		while ((k = inbox_take(io, &io->cancels, ids)))
			for (unsigned i = 0; i < k; i++)
				cancel_local(w, ids[i]);
		forget_all(w);
	}
	if (poll && ura__poller_io_active(&w->poller)) {
		int rc = ura__poller_poll(&w->poller);
		if (rc > 0)
			n += rc;
	}
	return n;
}

/* A busy worker enters the ring when IO_POLL_BATCH SQEs are queued or
 * IO_POLL_NS passed since it last did (clock read every 8 passes): one
 * enter submits many and reaps many, and a completion never waits long
 * behind busy actors. An idle worker polls at once. */
#define IO_POLL_BATCH 16
#define IO_POLL_NS (20 * URA_USEC)

int ura__io_service(struct ura__worker *w, uint64_t *now, int idle)
{
	struct ura__io *io = w->io;
	int poll = idle || w->poller.io_sq_pending >= IO_POLL_BATCH;
	if (!poll && (++io->tick & 7) == 0)
		poll = ura__clock(now) - io->last_poll >= IO_POLL_NS;
	if (poll)
		io->last_poll = ura__clock(now);
	/* relaxed peeks, as in ura__io_pending. */
	if (!poll && !atomic_load_explicit(&io->done, memory_order_relaxed) &&
	    !atomic_load_explicit(&io->cancel_req, memory_order_relaxed))
		return 0;
	/* The worker is not marked busy for this: completions move no
	 * quiescence counter that matters. Each operation counted its final
	 * completion as sent when it was submitted (busy), so sent >
	 * received until the actor has taken it, busy again; a multishot's
	 * extra messages only add to sent while that final one is still
	 * owed. */
	int n = io_service(w, poll);
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	return n > 0;
}

uint32_t ura__io_untrack(struct ura__actor *a, const struct ura_msg *m)
{
	struct ura__ids *l = a->x ? a->x->io : NULL;
	if (!l)
		return 0;
	if (m->flags & URA__MF_MORE)
		return l->n;
	return ura__ids_del(l, (int64_t)m->from.id);
}

void ura__io_worker_start(struct ura__worker *w)
{
	w->poller.on_io = on_io;
	w->poller.to_pool = ura__pool_queue;
	w->poller.forget = io_forget;
	w->poller.io_ctx = w;
	w->poller.id = w->id;
	w->poller.id_shared = w->sys->nworkers > 64;
}

void ura__io_worker_exit(struct ura__worker *w)
{
	struct ura__io *io = w->io;
	io->exiting = 1;
	/* Closes that asked us to forget their fd run once we answer: every
	 * request queued so far, and none after (an asker counts us as
	 * answered). */
	pthread_mutex_lock(&io->cancel_lock);
	io->forget_closed = 1;
	pthread_mutex_unlock(&io->cancel_lock);
	forget_all(w);
	/* By index, not through any list: a cancel may complete (and free)
	 * an operation at once. */
	for (uint32_t i = 0; i < io->hwm; i++) {
		struct ura__op *op = op_get(io, i);
		if (op->live && op->rq.op != URA__OP_OFFLOAD) {
			op->rearm = 0;
			ura__poller_cancel(&w->poller, &op->rq);
		}
	}
	unsigned left = ura__poller_drain(&w->poller, 2 * URA_SEC);
	if (left)
		ura__log(&w->sys->log, URA_LOG_ERROR,
			 "worker %u: %u I/O operations did not finish at shutdown; "
			 "their buffers are leaked, not freed", w->id, left);
	/* Readiness waiters of the epoll backend never reached the kernel:
	 * their records go with the table. */
}

int ura__io_init(ura_system *sys)
{
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		/* Its own cache lines: pool threads and other workers write
		 * `done` and the cancel inbox. */
		w->io = ura__aligned_alloc(URA__CACHELINE, sizeof *w->io);
		if (!w->io)
			return -ENOMEM;
		memset(w->io, 0, sizeof *w->io);
		pthread_mutex_init(&w->io->cancel_lock, NULL);
	}
	return ura__pools_init(sys, sys->pool_threads);
}

static void io_fini(ura_system *sys, struct ura__io *io)
{
	/* Pool jobs that came back after the worker stopped: their records
	 * are freed with the table below. */
	(void)atomic_exchange_explicit(&io->done, NULL, memory_order_acquire);
	for (uint32_t i = 0; i < io->hwm; i++) {
		struct ura__op *op = op_get(io, i);
		if (!op->live)
			continue;
		if (op->m)
			ura__arena_drop(&sys->arena, op->m, 1);
		free(op->own);
	}
	for (uint32_t c = 0; c < (io->hwm + URA__OPS_CHUNK - 1) >> URA__OPS_SHIFT; c++)
		free(io->chunks[c]);
	free(io->chunks);
	free(io->cancels);
	free(io->forgets);
	pthread_mutex_destroy(&io->cancel_lock);
}

void ura__io_fini(ura_system *sys)
{
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		struct ura__worker *w = &sys->workers[i];
		if (w->io)
			io_fini(sys, w->io);
		free(w->io);
		w->io = NULL;
	}
}
