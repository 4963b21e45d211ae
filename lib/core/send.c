/* SPDX-License-Identifier: MIT */
/* Sends (ura_send) and the post of messages made ahead of time. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/post.h"

#ifndef NDEBUG
int ura__ctx_stale(const struct ura_ctx *cx)
{
	static _Atomic int said;
	(void)cx;
	/* A kept ctx points into a stack frame that is gone: nothing of it
	 * is read, not even its system. The log is this thread's worker's
	 * system's, or the default one off the workers. relaxed: a
	 * once-only flag, it orders nothing. */
	struct ura__worker *w = ura__current_worker;
	if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
		ura__log(w ? &w->sys->log : NULL, URA_LOG_ERROR,
			 "a ura_ctx was used outside its handler (from another thread, or "
			 "after the handler returned): the call fails with -EINVAL");
	return 1;
}
#endif

URA_API int ura_sendv_ctx(ura_ctx *cx, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n)
{
	if (ura__ctx_bad(cx))
		return -EINVAL;
	return ura__send_msg(cx->sys, cx->w, ura__home(cx->a), ura__self_ref(cx->a), to, tag,
			     vals, n, URA__MK_PLAIN, 0);
}

/* ---- sends from threads that are not workers ---------------------- */

/* A thread that found every pool taken: it mallocs. */
#define EXT_NONE ((void *)1)

static void ext_release(void *p)
{
	/* release: pairs with the claim's acquire CAS; the next thread to
	 * take this pool sees every write of ours to it. */
	if (p != EXT_NONE)
		atomic_store_explicit(&((struct ura__extpool *)p)->taken, 0, memory_order_release);
}

int ura__ext_init(ura_system *sys)
{
	if (!sys->arena.base || sys->arena.n <= sys->nworkers)
		return 0;
	unsigned n = sys->arena.n - sys->nworkers;
	/* Zeroed: a pool is made by the first thread that claims it, so a
	 * system nobody sends to from outside pays nothing more. */
	sys->extp = aligned_alloc(URA__CACHELINE, n * sizeof *sys->extp);
	if (!sys->extp)
		return -ENOMEM;
	memset(sys->extp, 0, n * sizeof *sys->extp);
	if (pthread_key_create(&sys->ext_key, ext_release) != 0) {
		/* No key left in the process: sends from outside malloc. */
		free(sys->extp);
		sys->extp = NULL;
		return 0;
	}
	sys->nextp = n;
	return 0;
}

void ura__ext_fini(ura_system *sys)
{
	if (!sys->extp)
		return;
	/* From here on no thread's exit touches sys. */
	pthread_key_delete(sys->ext_key);
	for (unsigned k = 0; k < sys->nextp; k++)
		if (sys->extp[k].pool.arena)
			ura__pool_drain(&sys->extp[k].pool);
	free(sys->extp);
	sys->extp = NULL;
	sys->nextp = 0;
}

static __attribute__((noinline)) struct ura__extpool *ext_claim(ura_system *sys)
{
	for (unsigned k = 0; k < sys->nextp; k++) {
		int free_ = 0;
		/* acquire: pairs with ext_release (the pool's last owner). */
		if (!atomic_load_explicit(&sys->extp[k].taken, memory_order_relaxed) &&
		    atomic_compare_exchange_strong_explicit(&sys->extp[k].taken, &free_, 1,
							    memory_order_acquire,
							    memory_order_relaxed)) {
			struct ura__pool *p = &sys->extp[k].pool;
			if ((!p->arena && ura__pool_init(p, &sys->arena, sys->nworkers + k) < 0) ||
			    pthread_setspecific(sys->ext_key, &sys->extp[k]) != 0) {
				ext_release(&sys->extp[k]);
				return NULL;
			}
			/* release: pairs with the acquire in pool_sent
			 * (core/quiesce.c); this pool's counts are summed from
			 * now on. */
			unsigned hi = atomic_load_explicit(&sys->extp_hi, memory_order_relaxed);
			while (hi < k + 1 &&
			       !atomic_compare_exchange_weak_explicit(&sys->extp_hi, &hi, k + 1,
								      memory_order_release,
								      memory_order_relaxed))
				;
			return &sys->extp[k];
		}
	}
	(void)pthread_setspecific(sys->ext_key, EXT_NONE);
	return NULL;
}

struct ura__extpool *ura__ext_pool(ura_system *sys)
{
	if (!sys->nextp)
		return NULL;
	void *p = pthread_getspecific(sys->ext_key);
	if (ura__likely(p))
		return p == EXT_NONE ? NULL : p;
	return ext_claim(sys);
}

/* A send from a thread that is not a worker: its message from the
 * thread's pool; deadline as ura__bp_admit's (0: the policy decides). */
static int send_ext(ura_system *sys, ura_ref to, ura_atom tag, const ura_value *vals,
		    unsigned n, uint64_t deadline)
{
	struct ura__extpool *xp = ura__ext_pool(sys);
	struct ura__pool *pool = xp ? &xp->pool : NULL;
	struct ura__actor *a = NULL;
	struct ura_msg *m = NULL;
	int rc = ura__msg_make_in(sys, NULL, pool, URA_NOREF, to, tag, vals, n, URA__MK_PLAIN,
				  0, &a, &m);
	if (rc < 0)
		return rc;
	if (!a)
		__builtin_unreachable();
	uint16_t hn = atomic_load_explicit(&a->home_node, memory_order_relaxed);
	if (hn & (URA__HOME_BOUNDED | URA__HOME_METERED)) {
		rc = ura__send_gate(sys, NULL, URA_NOREF, to, a, m, hn, deadline);
		if (rc) {
			ura__msg_free(pool, m);
			return rc;
		}
	}
	if (ura__likely(xp != NULL))
		ura__ext_count_in(xp, m);
	else
		ura__ext_count(sys, m);
	ura__post(sys, NULL, 0, a, m);
	return 0;
}

int ura__send_gate(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
		   struct ura__actor *a, struct ura_msg *m, uint16_t hn, uint64_t deadline)
{
	if (hn & URA__HOME_METERED)
		ura__mx_stamp(sys, w, m);
	return hn & URA__HOME_BOUNDED ? ura__bp_admit(sys, w, from, to, a, m, deadline) : 0;
}

URA_API int ura_sendv_sys(ura_system *sys, ura_ref to, ura_atom tag,
			  const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	struct ura__worker *w = ura__thread_worker(sys);
	if (!w)
		return send_ext(sys, to, tag, vals, n, 0);
	return ura__send_msg(sys, w, w->node, URA_NOREF, to, tag, vals, n, URA__MK_PLAIN, 0);
}

int ura__send(ura_system *sys, struct ura__worker *w, ura_ref from, ura_ref to,
	      ura_atom tag, const ura_value *vals, unsigned n)
{
	unsigned home = w ? w->node : 0;
	if (w && !ura_ref_null(from)) {
		struct ura__actor *fa = ura__slot_get(sys, ura__ref_idx(from));
		if (fa)
			home = ura__home(fa); /* the sender holds its own token */
	}
	return ura__send_msg(sys, w, home, from, to, tag, vals, n, URA__MK_PLAIN, 0);
}

void ura__post_made(struct ura__worker *w, ura_ref to, struct ura_msg *m)
{
	struct ura__actor *a = ura__slot_get(w->sys, ura__ref_idx(to));
	if (!a) { /* cannot happen: refs are checked when the message is made */
		ura__msg_free(&w->pool, m);
		ura__inc(&w->st.received);
		ura__inc(&w->st.dead_letters);
		return;
	}
	/* A delayed send counts in its phase when it fires; a message not
	 * made by ura__msg_make is an input from outside, stamped now
	 * (core/phase.h). */
	if (ura__unlikely(!(m->flags & URA__MF_SNAPD)))
		m->flags |= ura__phase_stamp(w->sys) | URA__MF_NOSNAP;
	ura__phase_sent(&w->ph, m);
	ura__post(w->sys, w, w->node, a, m);
}

URA_API int ura_sendv_wait(ura_system *sys, ura_ref to, uint64_t deadline_ns,
			   ura_atom tag, const ura_value *vals, unsigned n)
{
	if (!sys)
		return -EINVAL;
	if (ura__current_worker)
		return -EDEADLK;
	/* 1: a deadline in the past still tries once. */
	return send_ext(sys, to, tag, vals, n, deadline_ns ? deadline_ns : 1);
}

URA_API uint64_t ura_now_ns(void)
{
	return ura__now_ns();
}

URA_API int64_t ura_mailbox_depth(ura_system *sys, ura_ref r)
{
	if (!sys)
		return -EINVAL;
	struct ura__actor *a = ura__slot_get(sys, ura__ref_idx(r));
	uint32_t gen = ura__ref_gen(r);
	/* acquire: pairs with the release stores of gen at spawn and stop. */
	if (!a || !(gen & 1) || atomic_load_explicit(&a->gen, memory_order_acquire) != gen)
		return -ESRCH;
	if (!(atomic_load_explicit(&a->home_node, memory_order_relaxed) & URA__HOME_BOUNDED))
		return -ENOTSUP;
	struct ura__bp *bp = ura__bp_of(sys, a->idx);
	if (!bp)
		return -ENOTSUP;
	/* relaxed both: a moment's view; a hold's part is not messages. */
	uint32_t d = atomic_load_explicit(bp->depth, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&bp->held, memory_order_relaxed);
	return d >= h ? (int64_t)(d - h) : 0;
}
