/* SPDX-License-Identifier: MIT */
/*
 * Run queues: the LIFO "next" slot, a stealable ring per worker with a
 * private overflow, per-node inject queues for wakes from other nodes and
 * from outside; stealing (node first), and waking sleeping peers.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/sched.h"
#include "ring/ring.h"
#include "util/alloc.h"
#include "util/log.h"

_Thread_local struct ura__worker *ura__current_worker;
#if defined(__SANITIZE_THREAD__)
_Atomic int ura__fence_dummy;
#endif

/* ---- waking --------------------------------------------------------- */

int ura__wake(struct ura__worker *self, struct ura__worker *v)
{
	if (!atomic_load_explicit(&v->sleeping, memory_order_seq_cst))
		return 0;
	/* One wake per sleep: the sleeper clears wake_pending when it gets
	 * up, so a second waker finds it set and leaves it to the first. */
	if (atomic_exchange_explicit(&v->wake_pending, 1, memory_order_acq_rel))
		return 1;
	if (self) {
		if (ura__poller_wake_from(&self->poller, &v->poller))
			ura__inc(&self->st.wakeups_ring);
		ura__inc(&self->st.wakeups);
	} else {
		ura__poller_wake(&v->poller);
	}
	return 1;
}

/* Wakes the first sleeper among workers [first, first + count), looking
 * from `start` on (the waker's neighbours first: same node, warm caches). */
static int wake_among(ura_system *sys, struct ura__worker *self, unsigned first,
		      unsigned count, unsigned start)
{
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v != self && ura__wake(self, v))
			return 1;
	}
	return 0;
}

/* There is stealable work: make sure someone will come for it. */
static inline void maybe_wake(ura_system *sys, struct ura__worker *self)
{
	/* seq_cst fence: pairs with the fence after a sleeper's store to
	 * its `sleeping` flag (runtime/worker.c). Either we see the flag, or
	 * the sleeper's recheck sees our work: never neither (Dekker). */
	ura__fence_seq_cst();
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return;
	/* A spinning worker finds the work itself; waking a sleeper as well
	 * would pay a wake (tens of us on a VM) for nothing. A watching one
	 * looks within its watch (a run queue's within steal_queue_ns), and
	 * takes nothing younger: the owner runs what it queued meanwhile. */
	if (atomic_load_explicit(&sys->nspinning, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nwatching, memory_order_relaxed))
		return;
	wake_among(sys, self, 0, sys->nworkers, self ? self->id + 1 : 0);
}

/* ---- scheduling ----------------------------------------------------- */

void ura__push_local(struct ura__worker *w, struct ura__actor *a)
{
	if (!w->ovf_head && ura__rq_push(&w->rq, a)) {
		maybe_wake(w->sys, w);
		return;
	}
	/* Full ring: the overflow list is private; it refills the ring as
	 * the ring drains (see ura__pick). */
	a->link = NULL;
	if (w->ovf_tail)
		w->ovf_tail->link = a;
	else
		w->ovf_head = a;
	w->ovf_tail = a;
}

/* Wakes one sleeping worker of node `nd`; 0 if none slept. */
static int wake_node(ura_system *sys, struct ura__worker *self, unsigned nd)
{
	ura__fence_seq_cst(); /* pairs with the sleeper's fence (see maybe_wake) */
	if (!atomic_load_explicit(&sys->nsleeping, memory_order_relaxed))
		return 0;
	return wake_among(sys, self, sys->nodes[nd].first, sys->nodes[nd].count, 0);
}

/* An actor queued on node nd, none of whose workers slept: if they are
 * all busy (none idle, spinning or about to sleep), a worker of another
 * node is woken to watch the queue, and takes the actor if nobody there
 * has popped for steal_remote_ns (steal_inject): a long handler on one
 * node must not stall the actors it woke while another node idles. Once
 * per pop of that queue, and not when a worker spins or watches anywhere
 * already. Relaxed loads: a heuristic; a watch missed costs latency,
 * never the actor, which its own node runs after the turn. */
static void wake_remote_watcher(ura_system *sys, struct ura__worker *self, unsigned nd)
{
	if (sys->nnodes < 2 || !atomic_load_explicit(&sys->nsleeping, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nspinning, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nwatching, memory_order_relaxed))
		return;
	struct ura__node *n = &sys->nodes[nd];
	for (unsigned i = 0; i < n->count; i++)
		if (atomic_load_explicit(&sys->workers[n->first + i].idle, memory_order_relaxed))
			return; /* it finds the actor itself */
	uint32_t pops = atomic_load_explicit(&n->inject_pops, memory_order_relaxed);
	if (atomic_exchange_explicit(&n->remote_woke, pops, memory_order_relaxed) == pops)
		return;
	for (unsigned k = 1; k < sys->nnodes; k++) {
		struct ura__node *r = &sys->nodes[(nd + k) % sys->nnodes];
		if (wake_among(sys, self, r->first, r->count, 0))
			return;
	}
}

/* Makes `a` runnable on its home node from a thread of another node, or
 * from a thread that is not a worker. */
static void inject(ura_system *sys, struct ura__worker *self, struct ura__actor *a,
		   unsigned nd)
{
	struct ura__node *n = &sys->nodes[nd];
	a->link = NULL;
	pthread_mutex_lock(&n->inject_lock);
	if (n->inject_tail)
		n->inject_tail->link = a;
	else
		n->inject_head = a;
	n->inject_tail = a;
	atomic_fetch_add_explicit(&n->inject_len, 1, memory_order_relaxed);
	pthread_mutex_unlock(&n->inject_lock);
	/* Not a->home_node: once queued, the actor is no longer ours to read. */
	if (!wake_node(sys, self, nd))
		wake_remote_watcher(sys, self, nd);
}

static struct ura__actor *inject_pop_node(struct ura__node *n)
{
	if (!atomic_load_explicit(&n->inject_len, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&n->inject_lock);
	struct ura__actor *a = n->inject_head;
	if (a) {
		n->inject_head = a->link;
		if (!n->inject_head)
			n->inject_tail = NULL;
		atomic_fetch_sub_explicit(&n->inject_len, 1, memory_order_relaxed);
		/* relaxed: under the lock; watchers only look (steal_inject). */
		atomic_store_explicit(&n->inject_pops,
				      atomic_load_explicit(&n->inject_pops, memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&n->inject_lock);
	return a;
}

struct ura__actor *ura__inject_pop(struct ura__worker *w)
{
	return inject_pop_node(&w->sys->nodes[w->node]);
}

void ura__schedule(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	unsigned home = ura__home(a); /* we hold its token: exact */
	if (!w || w->node != home) {
		/* Woken from another node: the actor goes home. */
		inject(sys, w, a, home);
		return;
	}
	/* The woken actor runs next on this worker, where the message it got
	 * is still in cache; whoever held the slot goes to the queue, where
	 * an idle peer may steal it (LIFO: the newest wake is the one whose
	 * message is hottest, and a DOWN or reply runs at once). A thief
	 * only ever empties the slot, so a slot seen empty stays empty until
	 * we fill it: the common case (pingpong, rings: the pick emptied it)
	 * is a plain store. Taking an occupied slot's holder over is an
	 * exchange, which races a thief's CAS; NULL back means the thief won
	 * it, and there is nothing to queue. release (both): publishes the
	 * actor to a thief that takes it (acquire CAS in steal_next). */
	if (atomic_load_explicit(&w->next, memory_order_relaxed)) {
		struct ura__actor *old =
			atomic_exchange_explicit(&w->next, a, memory_order_acq_rel);
		if (old)
			ura__push_local(w, old);
		return;
	}
	atomic_store_explicit(&w->next, a, memory_order_release);
	/* Someone must look at the slot if our turn goes on. Between turns
	 * (a timer fired, an I/O completion, a batch from another node) no
	 * turn goes on: the loop picks the slot next, and wakes a watcher
	 * itself if its pick left it (runtime/worker.c). A periodic timer's
	 * message woke the sleeping peer at every period (bench/ticker). */
	if (!w->between_turns)
		ura__wake_watcher(w);
}

void ura__wake_watcher(struct ura__worker *w)
{
	/* Once per busy period (idle_epoch moves on every idle -> busy),
	 * and once more after each time a thief took the slot: that thief
	 * ran the actor, may have gone back to sleep before we refilled the
	 * slot, and watches nothing then (one handler that woke the same
	 * actor again and again kept it for its whole turn: bench/count
	 * under 2x1, issue 14). Never while a worker spins or watches
	 * already. relaxed loads: a heuristic; a watch missed costs
	 * latency, never the work, which runs here after the turn. */
	ura_system *sys = w->sys;
	/* The owner's own lines first (the slot's line was just written):
	 * the shared counts, which every sleep and wake writes, are read
	 * only on the first fill of a busy period or after a take. */
	uint64_t epoch = ura__ld(&w->idle_epoch);
	uint32_t taken = atomic_load_explicit(&w->next_taken, memory_order_relaxed);
	if ((w->watch_woke == epoch && w->watch_woke_taken == taken) ||
	    sys->nworkers < 2 || w->turn_ends ||
	    !atomic_load_explicit(&sys->nsleeping, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nspinning, memory_order_relaxed) ||
	    atomic_load_explicit(&sys->nwatching, memory_order_relaxed))
		return;
	w->watch_woke = epoch;
	w->watch_woke_taken = taken;
	wake_among(sys, w, 0, sys->nworkers, w->id + 1);
}

int ura__alarm_set(struct ura__worker *w, uint64_t at)
{
	if (w->alarm_fd < 0)
		return -EBADF;
	int rc = ura__alarm_arm(w->alarm_fd, at);
	ura__inc(&w->st.alarm_sets);
	if (rc == 0)
		w->alarm_at = at;
	return rc;
}

int ura__alarms_init(ura_system *sys)
{
	/* Every alarm_fd is -1 until here (ura_system_new). */
#ifndef URA_DETERMINISTIC
	unsigned n = sys->nworkers;
	/* Alone, nobody takes a worker's work. */
	if (n < 2)
		return 0;
	sys->alarm_peers = ura__calloc((size_t)n * (n - 1), sizeof *sys->alarm_peers);
	sys->alarm_dead = ura__calloc((size_t)n * (n - 1), sizeof *sys->alarm_dead);
	if (!sys->alarm_peers || !sys->alarm_dead)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		int fd = ura__alarm_open();
		if (fd < 0) {
			ura__log(&sys->log, URA_LOG_WARN,
				 "worker %u: no alarm (%s): peers are woken at once instead",
				 i, ura_strerror(fd));
			continue;
		}
		sys->workers[i].alarm_fd = fd;
	}
#else
	(void)sys;
#endif
	return 0;
}

void ura__alarms_fini(ura_system *sys)
{
	for (unsigned i = 0; sys->workers && i < sys->nworkers; i++) {
		ura__alarm_close(sys->workers[i].alarm_fd);
		sys->workers[i].alarm_fd = -1;
	}
	free(sys->alarm_peers);
	free(sys->alarm_dead);
	sys->alarm_peers = NULL;
	sys->alarm_dead = NULL;
}

int ura__alarms_watch(struct ura__worker *w)
{
	ura_system *sys = w->sys;
	if (!sys->alarm_peers)
		return 0;
	size_t at = (size_t)w->id * (sys->nworkers - 1);
	int *fds = sys->alarm_peers + at;
	unsigned n = 0, near = 0;
	/* Our node's peers first (ura__poller_alarms: `near`). */
	for (int far = 0; far < 2; far++) {
		for (unsigned i = 0; i < sys->nworkers; i++)
			if (i != w->id && sys->workers[i].alarm_fd >= 0 &&
			    (sys->workers[i].node != w->node) == far)
				fds[n++] = sys->workers[i].alarm_fd;
		if (!far)
			near = n;
	}
	return ura__poller_alarms(&w->poller, fds, sys->alarm_dead + at, n, near);
}

void ura__schedule_back(struct ura__worker *w, struct ura__actor *a)
{
	ura__push_local(w, a);
}

/* Refills the ring from the private overflow list, oldest first, so the
 * overflow becomes stealable and nothing waits behind later arrivals. */
void ura__refill(struct ura__worker *w)
{
	while (w->ovf_head && ura__rq_push(&w->rq, w->ovf_head)) {
		w->ovf_head = w->ovf_head->link;
		if (!w->ovf_head)
			w->ovf_tail = NULL;
	}
}

/* Half a victim's run queue in one CAS (at most this many), the oldest
 * to run now and the rest queued here: one steal's fixed costs (the
 * spinning count, the victim's head line, set_busy) are paid once for
 * a batch of woken actors, as Go's runqsteal does. */
#define URA__STEAL_MAX (URA__RQ_SIZE / 2)

/*
 * Whether w may take from the run queue of v, a peer of its node: only
 * actors that have waited steal_queue_ns. A thief that took whatever was
 * queued moved actors that their owner was about to run, a cross-core
 * trip for the actor and for every message of the partners it left
 * behind: at 2 workers, contention ran at 0.25x and chameneos at 0.22x
 * of one worker on a host whose cores are 240 ns apart (bench/README.md,
 * issue 14). A queue whose owner keeps up empties within that time;
 * one that does not (a long handler, more work than one worker does)
 * is taken from, half at a time.
 *
 * The thief watches one peer at a time (qwatch_*): the tail it saw and
 * when. Until steal_queue_ns has passed it does not read that peer's
 * lines again, which the owner writes on every push and pop. Then, if
 * the head has not passed that tail, the actors queued then still wait:
 * ripe. If it has, the owner kept up, and the watch ends (the next look
 * starts another, at whichever peer has a queue). Relaxed loads: a
 * heuristic; the CAS in ura__rq_grab decides what is taken, and what is
 * not taken runs on its owner.
 */
static uint64_t queue_grace(const struct ura__worker *w, const struct ura__worker *v)
{
	return v->node == w->node ? w->sys->steal_queue_ns : w->remote_grace;
}

/* One watch at a time, and a queue of our own node before another's: a
 * watch of another node's queue (steal_remote_ns) gives way to a queued
 * peer of ours, which would otherwise wait out that longer watch. */
static void local_first(struct ura__worker *w, struct ura__worker *v)
{
	if (w->qwatch_v >= 0 && v->node == w->node &&
	    w->sys->workers[w->qwatch_v].node != w->node && ura__rq_len(&v->rq))
		w->qwatch_v = -1;
}

static int queue_ripe(struct ura__worker *w, struct ura__worker *v, uint64_t now)
{
	ura_system *sys = w->sys;
	if (!sys->steal_queue_ns) /* the deterministic build's (det.c) */
		return ura__rq_len(&v->rq) != 0;
	local_first(w, v);
	if (w->qwatch_v >= 0) {
		if (now - w->qwatch_since < w->qwatch_wait)
			return 0; /* one watch at a time, and no look meanwhile */
		if (w->qwatch_v == (int)v->id) {
			uint32_t h = atomic_load_explicit(&v->rq.head, memory_order_relaxed);
			w->qwatch_v = -1;
			if ((int32_t)(h - w->qwatch_tail) < 0)
				return 1;
		}
	}
	uint32_t h = atomic_load_explicit(&v->rq.head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&v->rq.tail, memory_order_relaxed);
	if (h != t && w->qwatch_v < 0) {
		w->qwatch_v = (int)v->id;
		w->qwatch_tail = t;
		w->qwatch_since = now;
		w->qwatch_wait = queue_grace(w, v);
	}
	return 0;
}

static struct ura__actor *steal_range(struct ura__worker *w, unsigned first,
				      unsigned count, int remote, uint64_t now)
{
	ura_system *sys = w->sys;
	w->rng = w->rng * 1103515245u + 12345u;
	unsigned start = count ? (w->rng >> 16) % count : 0;
	for (unsigned i = 0; i < count; i++) {
		struct ura__worker *v = &sys->workers[first + (start + i) % count];
		if (v == w)
			continue;
		/* Another node's queue is taken only after steal_remote_ns
		 * without local work (steal), and, unless its turns were
		 * long the last time (remote_measure), only what has waited
		 * there remote_grace (queue_ripe). */
		if (remote && (!w->remote_grace || now >= w->rprobe_at)
			    ? !ura__rq_len(&v->rq) : !queue_ripe(w, v, now))
			continue; /* known empty, or not ripe: no CAS */
		struct ura__actor *got[URA__STEAL_MAX];
		uint32_t n = ura__rq_grab(&v->rq, got, URA__STEAL_MAX);
		if (!n)
			continue;
		/* The thief is idle: its queues are empty, so the rest fit
		 * its ring (push_local would take an overflow anyway). */
		for (uint32_t k = 1; k < n; k++)
			if (w->ovf_head || !ura__rq_push(&w->rq, got[k]))
				ura__push_local(w, got[k]);
		if (n > 1) {
			/* Counted here, the first by the caller: a steal is an
			 * actor moved. A third worker may come for the rest. */
			ura__add(&w->st.steals, n - 1);
			if (remote)
				ura__add(&w->st.steals_remote, n - 1);
			maybe_wake(sys, w);
		}
		return got[0];
	}
	return NULL;
}

/*
 * The next slot of a peer stuck in one turn. A busy owner's slot is
 * taken only when its turn count has not moved for a grace period:
 * steal_next_ns on the thief's node, steal_remote_ns on another (the
 * actor's memory stays behind). The same turn has been running that
 * long, and the actor in the slot has waited for it. The thief watches
 * one peer at a time (watch_*): the peer, its turn count, since when;
 * its own node's peers come first. The CAS (acquire: pairs with the
 * owner's release store of the slot) races the owner's exchange in
 * ura__pick; exactly one of them gets the actor.
 */
static struct ura__actor *steal_next(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	for (unsigned k = 0; k < sys->nnodes; k++) {
		const struct ura__node *nd = &sys->nodes[(w->node + k) % sys->nnodes];
		uint64_t grace = k ? sys->steal_remote_ns : sys->steal_next_ns;
		for (unsigned i = 0; i < nd->count; i++) {
			struct ura__worker *v = &sys->workers[nd->first + i];
			if (v == w)
				continue;
			/* relaxed: a look; the CAS decides. */
			struct ura__actor *a = atomic_load_explicit(&v->next, memory_order_relaxed);
			if (!a || atomic_load_explicit(&v->idle, memory_order_relaxed))
				continue;
			uint64_t turns = ura__ld(&v->st.turns);
			if (w->watch_v != (int)v->id || w->watch_turns != turns) {
				/* A new turn: its waiting starts now. */
				if (w->watch_v == (int)v->id && w->watch_wait < 3 * grace)
					w->watch_wait *= 2; /* it moves on: look less often */
				else if (w->watch_v != (int)v->id)
					w->watch_wait = grace;
				w->watch_v = (int)v->id;
				w->watch_turns = turns;
				w->watch_since = now;
				return NULL;
			}
			if (now - w->watch_since < grace)
				return NULL;
			if (atomic_compare_exchange_strong_explicit(&v->next, &a, NULL,
								    memory_order_acquire,
								    memory_order_relaxed)) {
				w->watch_v = -1;
				/* relaxed: a count for the owner's next
				 * wake_watcher, a heuristic (see there). */
				atomic_fetch_add_explicit(&v->next_taken, 1,
							  memory_order_relaxed);
				return a;
			}
			return NULL;
		}
	}
	w->watch_v = -1; /* nothing to watch */
	return NULL;
}

/* Watches node nd's inject queue from now, at pop count `pops`. */
static void iwatch_begin(struct ura__worker *w, unsigned nd, uint32_t pops, uint64_t now)
{
	w->iwatch_n = (int)nd;
	w->iwatch_pops = pops;
	w->iwatch_since = now;
}

/* Another node's inject queue, when it holds actors and none of its
 * workers has popped one for steal_remote_ns: they are all stuck in long
 * turns (wake_remote_watcher woke us to look). */
static struct ura__actor *steal_inject(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	for (unsigned k = 1; k < sys->nnodes; k++) {
		unsigned nd = (w->node + k) % sys->nnodes;
		struct ura__node *n = &sys->nodes[nd];
		if (!atomic_load_explicit(&n->inject_len, memory_order_relaxed))
			continue;
		uint32_t pops = atomic_load_explicit(&n->inject_pops, memory_order_relaxed);
		if (w->iwatch_n != (int)nd || w->iwatch_pops != pops) {
			iwatch_begin(w, nd, pops, now);
			return NULL;
		}
		if (now - w->iwatch_since < sys->steal_remote_ns)
			return NULL;
		w->iwatch_n = -1;
		return inject_pop_node(n);
	}
	w->iwatch_n = -1;
	return NULL;
}

/* How long a worker about to sleep may sleep before it looks at the next
 * slot or inject queue it watches again; 0: it watches none (sleep until
 * woken). */
uint64_t ura__watch_wait(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	uint64_t wait = 0;
	if (w->watch_v >= 0) {
		struct ura__worker *v = &sys->workers[w->watch_v];
		if (!atomic_load_explicit(&v->next, memory_order_relaxed) ||
		    atomic_load_explicit(&v->idle, memory_order_relaxed)) {
			w->watch_v = -1;
		} else {
			uint64_t due = w->watch_since + w->watch_wait;
			wait = due > now ? due - now : 1;
		}
	}
	if (w->iwatch_n >= 0) {
		struct ura__node *n = &sys->nodes[w->iwatch_n];
		if (!atomic_load_explicit(&n->inject_len, memory_order_relaxed) ||
		    atomic_load_explicit(&n->inject_pops, memory_order_relaxed) != w->iwatch_pops) {
			w->iwatch_n = -1;
		} else {
			uint64_t due = w->iwatch_since + sys->steal_remote_ns;
			uint64_t t = due > now ? due - now : 1;
			if (!wait || t < wait)
				wait = t;
		}
	}
	return wait;
}

uint64_t ura__watch_begin(struct ura__worker *w, uint64_t now)
{
	/* A waker that fills a slot or queues on a busy node wakes nobody
	 * when some worker spins (it will look), and a spinner's last look
	 * may have come just before: it then sleeps here, and the actor
	 * would wait for the busy turn (busy_wake's 50 ms outliers; 1 of 10
	 * busy_handler rounds on one node; tests/fiber under 2x1 once waited
	 * out its 5 s hog). For an inject the seq_cst loads pair with
	 * wake_node's fence before it reads nspinning, against our fence
	 * after `sleeping` (Dekker); a slot is filled with a release store
	 * and no fence (a fence on every wake would tax the hot path), so
	 * there this narrows the window rather than closing it: a watch
	 * missed costs latency, never the actor, which its owner runs after
	 * the turn. (Taken back once, in da0836b: more actors moved with
	 * epoll I/O in flight and met the epoll close race, fixed since in
	 * ring/epoll_io.c.) */
	ura_system *sys = w->sys;
	if (sys->nworkers < 2)
		return 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *v = &sys->workers[i];
		if (v == w || !atomic_load_explicit(&v->next, memory_order_seq_cst) ||
		    atomic_load_explicit(&v->idle, memory_order_seq_cst))
			continue;
		uint64_t grace = v->node == w->node ? sys->steal_next_ns : sys->steal_remote_ns;
		w->watch_v = (int)v->id;
		w->watch_turns = ura__ld(&v->st.turns);
		w->watch_since = now;
		w->watch_wait = grace;
		return grace;
	}
	for (unsigned k = 1; k < sys->nnodes; k++) {
		unsigned nd = (w->node + k) % sys->nnodes;
		struct ura__node *n = &sys->nodes[nd];
		if (!atomic_load_explicit(&n->inject_len, memory_order_seq_cst))
			continue;
		iwatch_begin(w, nd, atomic_load_explicit(&n->inject_pops, memory_order_relaxed), now);
		return sys->steal_remote_ns;
	}
	return 0;
}

/*
 * A take from another node's run queue moves actors away from their
 * memory and from their partners, whose messages then cross nodes: worth
 * it for turns long enough to pay for that, not for a chatter of short
 * turns. Under 2x1, with every actor homed on node 0, taking whatever was
 * queued there made big, chameneos and contention 3-5x slower than
 * leaving node 1 idle, and mailbox_actors (turns of 256 sends) 2x faster
 * (bench/README.md, issue 14). So the thief times what it took, from the
 * take to its next look for work, over the turns it ran meanwhile: long
 * turns on average, and it takes from another node's queue whenever
 * something is queued there (remote_grace 0); short ones, and only what
 * has waited steal_remote_ns there (queue_ripe), which an owner that
 * keeps up never lets happen; but a take now and then, 1 ms after the
 * last and twice as long after each that found short turns (at most
 * 64 ms), finds out whether they got long. Measured again at each take.
 */
#define URA__REMOTE_TURN_NS (2 * URA_USEC)
#define URA__RPROBE_MIN_NS (1 * URA_MSEC)
#define URA__RPROBE_MAX_NS (64 * URA_MSEC)
static void remote_measure(struct ura__worker *w, uint64_t now)
{
	if (!w->rsteal_since)
		return;
	uint64_t turns = ura__ld(&w->st.turns) - w->rsteal_turns;
	uint64_t per = (now - w->rsteal_since) / (turns ? turns : 1);
	w->rsteal_since = 0;
	if (per >= URA__REMOTE_TURN_NS) {
		w->remote_grace = 0;
		w->rprobe_gap = URA__RPROBE_MIN_NS;
		return;
	}
	w->remote_grace = w->sys->steal_remote_ns;
	w->rprobe_gap = w->rprobe_gap ? w->rprobe_gap * 2 : URA__RPROBE_MIN_NS;
	if (w->rprobe_gap > URA__RPROBE_MAX_NS)
		w->rprobe_gap = URA__RPROBE_MAX_NS;
	w->rprobe_at = now + w->rprobe_gap;
}

/* Same node first; other nodes' run queues only once this node has had
 * nothing to steal for steal_remote_ns (a remote actor drags its memory
 * along). A stuck peer's next slot or a stuck node's inject queue is
 * watched with a grace of its own (above). */
static struct ura__actor *steal(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	remote_measure(w, now);
	struct ura__node *n = &sys->nodes[w->node];
	struct ura__actor *a = steal_range(w, n->first, n->count, 0, now);
	int remote = 0;
	/* A few looks per grace period are enough, and each one reads
	 * lines the busy owners write on every wake: a spinning thief that
	 * looked on every pass cost thread_ring ~10% at 2 workers. */
	if (!a && sys->nworkers > 1 && now - w->watch_look >= sys->steal_next_ns / 4) {
		w->watch_look = now;
		a = steal_next(w, now);
		if (a)
			remote = ura__home(a) != w->node;
		else if (sys->nnodes > 1 && (a = steal_inject(w, now)))
			remote = 1;
	}
	if (a) {
		ura__inc(&w->st.steals);
		if (remote)
			ura__inc(&w->st.steals_remote);
		URA_PROBE2(steal, w->id, remote); /* USDT: thief, remote */
		w->local_dry_since = 0;
		return a;
	}
	if (sys->nnodes == 1)
		return NULL;
	if (!w->local_dry_since) {
		w->local_dry_since = now;
		return NULL;
	}
	if (now - w->local_dry_since < sys->steal_remote_ns)
		return NULL;
	for (unsigned k = 1; k < sys->nnodes; k++) {
		struct ura__node *r = &sys->nodes[(w->node + k) % sys->nnodes];
		if ((a = steal_range(w, r->first, r->count, 1, now))) {
			w->rsteal_since = now ? now : 1;
			w->rsteal_turns = ura__ld(&w->st.turns);
			ura__inc(&w->st.steals);
			ura__inc(&w->st.steals_remote);
			URA_PROBE2(steal, w->id, 1);
			return a;
		}
	}
	return NULL;
}

struct ura__actor *ura__find_stealable(struct ura__worker *w, uint64_t now)
{
	struct ura__actor *a = ura__inject_pop(w);
	return a ? a : steal(w, now);
}

uint64_t ura__sched_visible(struct ura__worker *w, uint64_t now)
{
	ura_system *sys = w->sys;
	if (atomic_load_explicit(&sys->nodes[w->node].inject_len, memory_order_relaxed))
		return 1;
	/* A watch whose queue has emptied is over: the sleep that follows
	 * is an idle one (and the wake from it spins as usual). */
	if (w->qwatch_v >= 0 && !ura__rq_len(&sys->workers[w->qwatch_v].rq))
		w->qwatch_v = -1;
	uint64_t wait = 0;
	for (unsigned i = 0; i < sys->nworkers; i++) {
		struct ura__worker *v = &sys->workers[i];
		if (v == w || !ura__rq_len(&v->rq))
			continue;
		if (v->node != w->node && (!sys->steal_queue_ns || !w->remote_grace))
			return 1; /* taken as soon as seen (steal_range) */
		/* A peer's young queue: its owner runs it, or we take it once
		 * ripe (queue_ripe), in a sleep bounded by the watch. */
		local_first(w, v);
		if (w->qwatch_v < 0) {
			w->qwatch_v = (int)v->id;
			w->qwatch_tail = atomic_load_explicit(&v->rq.tail, memory_order_relaxed);
			w->qwatch_since = now;
			w->qwatch_wait = queue_grace(w, v);
		}
		uint64_t due = w->qwatch_since + w->qwatch_wait;
		if (due <= now)
			return 1;
		wait = due - now;
	}
	return wait;
}
