/* SPDX-License-Identifier: MIT */
/*
 * The turn: an actor's messages taken from its mailbox (a batch at most),
 * each matched against the current behavior and handed to its case, the
 * stash re-offered after a become, the receive timeout re-armed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "actor/fiber.h"
#include "actor/scoped.h"
#include "actor/signal.h"
#include "core/metrics.h"
#include "core/post.h"
#include "io/io.h"
#include "time/timers.h"


static void trace_unmatched(struct ura_ctx *cx, const struct ura_msg *m, const char *what)
{
	char buf[200];
	ura_msg_format(m, buf, sizeof buf);
	ura__log(&cx->sys->log, URA_LOG_WARN, "%s: actor %s <%u.%u> (behavior %s): %s",
		 what, cx->a->cls->name, ura__idx_no(cx->a->idx), ura__own_gen(cx->a),
		 cx->a->beh && cx->a->beh->name ? cx->a->beh->name : "-", buf);
}

/* Runs the first matching case; otherwise applies the unmatched policy
 * (for STASH it only flags m: the caller moves it to the stash). */
static int dispatch(struct ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	const ura_behavior *b = a->beh;
	for (uint32_t i = 0; i < b->ncases; i++) {
		const ura_case *c = &b->cases[i];
		if (ura__case_matches(c, cx, m)) {
			c->fn(cx, m);
			return 1;
		}
	}
	uint32_t policy = b->unmatched ? b->unmatched : a->cls->unmatched;
	if (policy == URA_UNMATCHED_STASH) {
		m->flags |= URA__MF_STASH;
		ura__inc(&cx->w->st.stashed);
		return 0;
	}
	ura__inc(&cx->w->st.unmatched);
	ura__mx_unmatched(cx->w, cx->a, 1);
	if (cx->sys->trace_unmatched)
		trace_unmatched(cx, m, "unmatched message dropped");
	return 0;
}

/* Returns 0, or -ENOMEM (no side record): then the caller drops m. */
int ura__actor_stash_append(struct ura__worker *w, struct ura__actor *a, struct ura_msg *m)
{
	struct ura__actor_x *x = ura__actor_x(w, a);
	if (!x)
		return -ENOMEM;
	atomic_store_explicit(&m->next, NULL, memory_order_relaxed);
	if (x->stash_tail)
		atomic_store_explicit(&x->stash_tail->next, m, memory_order_relaxed);
	else
		x->stash = m;
	x->stash_tail = m;
	return 0;
}

/* A node stopped being the mailbox tail: free it, or stash it. */
static inline void retire(struct ura__worker *w, struct ura__actor *a, struct ura_msg *r)
{
	if (r == (struct ura_msg *)&a->stub)
		return;
	if (ura__unlikely(r->flags & URA__MF_STASH) && a->state_kind == URA__A_ALIVE) {
		if (ura__actor_stash_append(w, a, r) == 0)
			return;
		/* No side record for the stash: a request is told so. */
		ura__request_orphan(w->sys, w, a, r, URA_NOMEM, (ura_value){ 0 });
	}
	ura__msg_free(&w->pool, r);
}

/* The kinds other than plain messages: the runtime's own, rare next to
 * plain sends, kept off deliver's path. */
static __attribute__((noinline)) int deliver_kind(struct ura_ctx *cx, struct ura_msg *m)
{
	struct ura__actor *a = cx->a;
	switch (m->kind) {
	case URA__MK_TIMEOUT:
		/* Only the latest arming counts: an older one raced a match
		 * or a become and lost. */
		if (!a->x || m->req != a->x->rt_seq || !a->x->rt || !a->beh->on_timeout)
			return 0;
		a->x->rt = 0;
		a->beh->on_timeout(cx, m);
		return 1;
	case URA__MK_IO:
		ura__io_untrack(a, m); /* then matched like any message */
		return dispatch(cx, m);
	case URA__MK_REQUEST: {
		/* The current request, until answered (actor/request.c). */
		cx->req_from = m->from;
		cx->req_id = m->req;
		cx->req_open = 1;
		cx->req_promised = 0;
		int matched = dispatch(cx, m);
		ura__request_settle(cx, m, matched);
		cx->req_open = 0;
		return matched;
	}
	case URA__MK_RESPONSE:
	case URA__MK_ERROR:
	case URA__MK_REQ_TIMEOUT:
		/* Whichever comes first, the answer or its deadline, runs the
		 * continuation; the other finds no pending request. */
		if (ura__request_done(cx, m))
			return 1;
		if (m->kind == URA__MK_REQ_TIMEOUT)
			return 0; /* the answer won; its deadline lost the race */
		if (a->beh == &ura__scoped_beh)
			return dispatch(cx, m); /* a scoped actor's own request */
		ura__inc(&cx->w->st.unmatched);
		ura__mx_unmatched(cx->w, cx->a, 1);
		if (cx->sys->trace_unmatched)
			trace_unmatched(cx, m, "answer to no pending request dropped");
		return 0;
	default: {
		/* Links, monitors, exit signals (actor/signal.c): acted on
		 * there, or a DOWN or trapped EXIT for the behavior. */
		struct ura_msg *d = ura__sig_recv(cx, m);
		if (!d)
			return 0;
		if (d == m)
			return dispatch(cx, m);
		/* A trapped EXIT in its own block, not a mailbox node:
		 * retired now, into the stash if the behavior kept it (after
		 * what was kept before it, which its pop retired). */
		cx->m = d;
		int matched = dispatch(cx, d);
		cx->m = m;
		retire(cx->w, a, d);
		return matched;
	}
	}
}

/* Returns true when a handler ran (which re-arms the receive timeout). */
static inline int deliver(struct ura_ctx *cx, struct ura_msg *m)
{
	cx->m = m;
	cx->req_data = NULL;
	if (ura__likely(m->kind == URA__MK_PLAIN))
		return dispatch(cx, m);
	return deliver_kind(cx, m);
}

/* A metered turn's timed message, 1 in 2^shift (core/metrics.h): the
 * handler's time to the class's histogram and, scaled, to the actor's
 * record. Out of line: the loop keeps one test for it. */
static __attribute__((noinline)) int deliver_timed(struct ura_ctx *cx, struct ura_msg *m)
{
	uint64_t t0 = ura__now_ns();
	int matched = deliver(cx, m);
	uint64_t dt = ura__now_ns() - t0;
	struct ura__cstat *cs = ura__mx_cs(cx->w, cx->a);
	if (cs) {
		ura__hist_add(&cs->handler, dt);
		ura__mx_timed(cx->sys, cx->a, dt);
	}
	return matched;
}

/* After a become: offer the stash to the new behavior, oldest first. */
static void redeliver_stash(struct ura_ctx *cx)
{
	struct ura__actor *a = cx->a;
	while (a->became && a->x && a->x->stash && !a->stopping) {
		a->became = 0;
		struct ura_msg *list = a->x->stash;
		a->x->stash = a->x->stash_tail = NULL;
		while (list) {
			struct ura_msg *m = list;
			list = atomic_load_explicit(&m->next, memory_order_relaxed);
			if (a->stopping) {
				ura_atom reason;
				ura_value value;
				ura__why_get(&cx->why, &reason, &value);
				ura__request_orphan(cx->sys, cx->w, a, m, reason, value);
				ura__inc(&cx->w->st.unmatched);
				ura__mx_unmatched(cx->w, cx->a, 1);
				ura__msg_free(&cx->w->pool, m);
				continue;
			}
			m->flags &= (uint8_t)~URA__MF_STASH;
			deliver(cx, m);
			if (m->flags & URA__MF_STASH)
				ura__actor_stash_append(cx->w, a, m);
			else
				ura__msg_free(&cx->w->pool, m);
			if (a->became && list) {
				/* Behavior changed again: the rest waits behind
				 * what was just re-stashed, and all of it is
				 * offered to the newest behavior. */
				while (list) {
					struct ura_msg *k = list;
					list = atomic_load_explicit(&k->next, memory_order_relaxed);
					ura__actor_stash_append(cx->w, a, k);
				}
			}
		}
	}
	a->became = 0;
}

/* The turn, made twice (see ura__actor_turn): `metered` is a constant
 * in each, so the plain one carries none of the metrics' code. */
/*
 * The turn has reached the newest message present when it began, which
 * bounds what an actor that floods itself takes. With nothing else to run
 * on this worker, it goes on with what arrived since (still at most the
 * batch): returns the new newest message, or 0 to end the turn. A
 * receiver fed from other threads that just keeps up found one message
 * at each start, and ran a turn per message (bench/mailbox --bound=1024:
 * 5.45M turns for 6M messages), each paying the turn's fixed costs and,
 * bounded, a give-back on the line every sender's admission writes.
 * acquire: pairs with the pushes' exchange, as at the turn's start.
 */
static inline uintptr_t more_since(struct ura__worker *w, struct ura__actor *a)
{
	if (ura__has_local(w))
		return 0;
	return atomic_load_explicit(&a->mb.head, memory_order_acquire) & ~URA__MB_IDLE;
}

static inline __attribute__((always_inline)) void turn(struct ura__worker *w,
							struct ura__actor *a, const int metered)
{
	ura_system *sys = w->sys;
	struct ura_ctx cx;
	ura__ctx_init(&cx, sys, w, a);
	struct ura_msg *m, *r;
	unsigned n = 0;

	/* A context-switching actor's turn is its body's (actor/fiber.c). */
	if (ura__unlikely(a->x && a->x->fib) && a->state_kind == URA__A_ALIVE) {
		ura__fiber_turn(w, a);
		return;
	}
	atomic_store_explicit(&a->last_worker, (uint16_t)w->id, memory_order_relaxed);
	ura__inc(&w->st.turns);
	cx.turn = ura__ld(&w->st.turns);
	URA_PROBE2(turn_start, a->idx, w->id);
	/* Snapshots (lib/snap/snap.h): the actor is captured before it
	 * handles its first message of a new phase (the per-message test
	 * below); messages of the turn are counted by phase (core/phase.h). */
	unsigned same = 0, aph = a->snap_ph ? URA__MF_PH : 0;
	w->ph.cur = (uint8_t)(URA__MF_SNAPD | aph);
	/* The turn stops at the newest message present on entry, so an actor
	 * that floods itself cannot keep the worker. acquire: pairs with the
	 * pushes' exchange, as the pops below do. */
	uintptr_t entry = atomic_load_explicit(&a->mb.head, memory_order_acquire) &
			  ~URA__MB_IDLE;
	/* A bounded mailbox's record, and the counted messages this turn
	 * took (core/bound.h): given back once, at the end. */
	struct ura__bp *bp = NULL;
	unsigned bpn = 0;
	/* Metered classes (core/metrics.h): what the turn takes and handles
	 * counted in registers, to the class at the end (ura__mx_turn); the
	 * rare unmatched and dead letters by their own paths; a countdown in
	 * a register picks the message whose handler is timed. */
	uint32_t took = 0, handled = 0, left = 0;
	if (metered)
		left = w->mx->left;
	/* A stamped message (URA__MF_WAIT) takes the rare branch below in a
	 * metered turn: the common case stays one test. */
	const unsigned rare = URA__MF_PH | URA__MF_POKE | URA__MF_BP | (metered ? URA__MF_WAIT : 0);

	while ((m = ura__mb_pop(&a->mb, &r))) {
		retire(w, a, r);
		ura__inc(&w->st.received);
		if (metered)
			took++;
		/* One test for the common case: same phase, no poke, not a
		 * bounded mailbox's (URA__MF_BP, core/bound.h), no stamp. */
		if (ura__likely((m->flags & rare) == aph)) {
			same++;
		} else {
			int drop = 0;
			if (metered && (m->flags & URA__MF_WAIT))
				ura__mx_waited(ura__mx_cs(w, a), m);
			if (m->flags & URA__MF_BP)
				drop = ura__bp_took(sys, a->idx, &bp, &bpn);
			if ((m->flags & (URA__MF_PH | URA__MF_POKE)) == aph) {
				same++;
			} else {
				int poke = sys->hooks.phase_msg ? sys->hooks.phase_msg(w, a, m, &same)
								: 0;
				aph = a->snap_ph ? URA__MF_PH : 0;
				w->ph.cur = (uint8_t)(URA__MF_SNAPD | aph);
				if (poke) {
					if ((uintptr_t)m == entry || ++n >= sys->batch)
						break;
					continue;
				}
			}
			if (ura__unlikely(drop)) {
				/* DROP_OLDEST: this one goes so that a newer
				 * one could be accepted; a request that was
				 * sent still ends. */
				if (m->kind == URA__MK_REQUEST && a->state_kind == URA__A_ALIVE)
					ura__request_orphan(sys, w, a, m, URA_DROPPED_REASON,
							    (ura_value){ 0 });
				if ((uintptr_t)m == entry || ++n >= sys->batch)
					break;
				continue;
			}
		}
		if (ura__unlikely(a->state_kind != URA__A_ALIVE || m->to_gen != ura__own_gen(a))) {
			/* Sent to an incarnation that has stopped. Keep going
			 * until the mailbox is empty: nobody else will. */
			if (a->state_kind == URA__A_ZOMBIE && m->kind == URA__MK_IO &&
			    m->to_gen + 1 == ura__own_gen(a) && ura__io_untrack(a, m) == 0)
				ura__bury(sys, w, a, 1, NULL);
			else if (m->kind != URA__MK_PLAIN)
				/* A request, monitor or link that came too
				 * late: answered with the exit reason. */
				ura__sig_dead_letter(w, a, m);
			ura__inc(&w->st.dead_letters);
			if (metered)
				ura__mx_dead(w, a);
			if (++n >= sys->batch)
				break;
			continue;
		}
		int matched;
		if (!metered) {
			matched = deliver(&cx, m);
		} else if (ura__unlikely(!--left)) {
			left = w->mx->mask + 1;
			matched = deliver_timed(&cx, m);
			handled += (uint32_t)matched;
		} else {
			matched = deliver(&cx, m);
			handled += (uint32_t)matched;
		}
		int became = a->became;
		if (became)
			redeliver_stash(&cx);
		if (ura__unlikely(a->stopping)) {
			/* Its DOWNs and EXITs wake actors that run right
			 * after this turn, here: a peer woken to watch them
			 * would cost their wait a wake (bench/signals' DOWN:
			 * 7 us at p50 without a spinning peer). */
			w->turn_ends = 1;
			ura__die(sys, w, a, 1, &cx.why);
			w->turn_ends = 0;
			if (++n >= sys->batch)
				break;
			continue;
		}
		if ((matched || became) && ((a->x && a->x->rt) || a->beh->timeout_ns))
			ura__rt_rearm(sys, w, a);
		/* A send met a full URA_FULL_MUTE (or REFUSE_MUTE) mailbox:
		 * the turn ends here. */
		if (++n >= sys->batch || ura__unlikely(w->mute_on))
			break;
		if ((uintptr_t)m == entry && !(entry = more_since(w, a)))
			break;
	}
	ura__phase_recv(&w->ph, a->snap_ph, same);
	if (ura__unlikely(bpn))
		ura__bp_taken(sys, w, bp, bpn);
	URA_PROBE3(turn_end, a->idx, w->id, n);
	if (metered) {
		w->mx->left = left;
		ura__mx_turn(w, a, took, handled);
	}
	/* The turn's demonitors (actor/signal.c 3.), into this turn's
	 * batches. */
	if (ura__unlikely(ura__sig_dem_pending(a)))
		ura__sig_dem_flush(sys, w, a, ura__self_ref(a));
	/* Hand this turn's cross-node batches over before the actor can run
	 * anywhere else: a thief must not overtake them. */
	if (w->outbox_dirty)
		ura__outbox_flush_all(w);
	/* Muted: the receiver's mute list holds the token now. */
	if (ura__unlikely(w->mute_on)) {
		if (metered)
			ura__mx_left(w, a);
		if (ura__bp_mute(sys, w, a))
			return;
	}
	if (ura__mb_mark_idle(&a->mb))
		return;
	if (metered)
		ura__mx_left(w, a);
	/* More messages (or a push half done): back of the queue. */
	ura__schedule_back(w, a);
}

void ura__actor_turn(struct ura__worker *w, struct ura__actor *a)
{
	/* One test per turn for the metrics (core/metrics.h): a metered
	 * class runs the copy of the turn that counts. */
	if (ura__unlikely(ura__metered(a->cls)))
		turn(w, a, 1);
	else
		turn(w, a, 0);
}


void ura__rt_rearm(ura_system *sys, struct ura__worker *w, struct ura__actor *a)
{
	if (a->x && a->x->rt) {
		ura__timer_cancel(sys, w, a->x->rt);
		a->x->rt = 0;
	}
	const ura_behavior *b = a->beh;
	if (!b || !b->timeout_ns || !b->on_timeout || a->stopping)
		return;
	struct ura__actor_x *x = ura__actor_x(w, a);
	if (!x) {
		ura__log(&sys->log, URA_LOG_ERROR, "actor %s: receive timeout not armed: %s",
			 a->cls->name, ura_strerror(-ENOMEM));
		return;
	}
	ura_ref self = ura__self_ref(a);
	struct ura__actor *ta = NULL;
	struct ura_msg *m = NULL;
	uint32_t seq = ++x->rt_seq;
	uint64_t delay = b->timeout_ns > URA_MAX_DELAY ? URA_MAX_DELAY : b->timeout_ns;
	if (ura__msg_make(sys, w, self, self, URA_TIMEOUT, NULL, 0, URA__MK_TIMEOUT, seq,
		     &ta, &m) < 0)
		return;
	ura_timer h = ura__timer_arm(sys, w, self, delay, m);
	if (h < 0) {
		ura__msg_free(ura__pool_of(w), m);
		ura__log(&sys->log, URA_LOG_ERROR, "actor %s: receive timeout not armed: %s",
			 a->cls->name, ura_strerror((int)h));
		return;
	}
	x->rt = h;
}

