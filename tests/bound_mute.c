/* SPDX-License-Identifier: MIT */
/*
 * URA_FULL_MUTE from handlers. Producers that each send a burst of
 * messages per handler (more than the capacity) to a consumer with a small
 * bounded mailbox: nothing is lost, everything arrives in order per
 * producer, the producers get muted, and the depth never passes capacity
 * + one burst per producer (the handler whose send finds the mailbox full
 * finishes, then the producer is muted). sent == received.
 *
 * Mute cycles: actors that flood each other (2 and 3 in a ring), every
 * mailbox bounded and muting. By the rule in ura.h an actor is never
 * muted on a muted receiver, so no cycle of mutes forms: the system
 * reaches quiescence with every message handled, and the sends that
 * would have closed a cycle are counted as accepted over the bound.
 *
 * URA_FULL_REFUSE_MUTE: the same producers, whose send that finds the
 * mailbox full is refused (-EAGAIN) and who are muted: the depth never
 * passes the capacity, nothing is lost (a refused producer sends the rest
 * later), nothing goes over. And the same rings: no deadlock, every
 * accepted message handled.
 *
 * Paced releases: senders muted on a held mailbox that send nothing once
 * let go are all let go when the receiver drains, so each runs again.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_GO URA_ATOM("go")
#define A_PEER URA_ATOM("peer")
#define A_HIT URA_ATOM("hit")

#define CAP 8
#define PRODUCERS 8
#define BURST 16

static _Atomic long g_got, g_bad_order, g_max_depth, g_errors, g_refusals;
static long g_last[PRODUCERS];
static ura_ref g_prods[PRODUCERS];

static void sink_msg(ura_ctx *cx, const ura_msg *m)
{
	long p = (long)ura_arg_i64(m, 0), v = (long)ura_arg_i64(m, 1);
	if (p >= 0 && p < PRODUCERS) {
		if (v != g_last[p] + 1)
			atomic_fetch_add(&g_bad_order, 1);
		g_last[p] = v;
	}
	atomic_fetch_add(&g_got, 1);
	int64_t d = ura_mailbox_depth(ura_ctx_system(cx), ura_self(cx));
	long mx = atomic_load(&g_max_depth);
	while (d > mx && !atomic_compare_exchange_weak(&g_max_depth, &mx, (long)d))
		;
}
URA_BEHAVIOR(sink_beh, URA_ON(A_MSG, "ii", sink_msg));

struct prod {
	ura_ref to;
	long id, n, i;
};

static void prod_go(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct prod *p = ura_state(cx);
	for (int k = 0; k < BURST && p->i < p->n; k++, p->i++)
		if (ura_send(cx, p->to, A_MSG, p->id, p->i) != 0)
			atomic_fetch_add(&g_errors, 1);
	if (p->i < p->n)
		ura_send(cx, ura_self(cx), A_GO);
	else
		ura_stop(cx);
}
URA_BEHAVIOR(prod_beh, URA_ON(A_GO, "", prod_go));
static const ura_class prod_class = { .name = "prod", .state_size = sizeof(struct prod),
				      .initial = &prod_beh };

/* A sink bounded at CAP with policy `full`, and PRODUCERS of class pc
 * sending it n each, started; every count reset. */
static ura_system *start_producers(unsigned workers, uint32_t full, const ura_class *pc, long n)
{
	atomic_store(&g_got, 0);
	atomic_store(&g_bad_order, 0);
	atomic_store(&g_max_depth, 0);
	atomic_store(&g_errors, 0);
	atomic_store(&g_refusals, 0);
	for (int i = 0; i < PRODUCERS; i++)
		g_last[i] = -1;
	ura_system *sys = t_system(workers);
	/* Static: the sink's class must outlive this call (its actor points
	 * at it until the system goes). */
	static ura_mailbox_opts mb;
	static ura_class c;
	mb = (ura_mailbox_opts){ .capacity = CAP, .full = full };
	c = (ura_class){ .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref sink;
	t_must(ura_spawn(sys, &c, NULL, &sink));
	for (long i = 0; i < PRODUCERS; i++) {
		struct prod p = { .to = sink, .id = i, .n = n };
		t_must(ura_spawn(sys, pc, &p, &g_prods[i]));
		t_must(ura_send(sys, g_prods[i], A_GO));
	}
	return sys;
}

/* The run ends, with no send failed (but by -EAGAIN, which the refusing
 * producers take), and every message arrived, in order per producer. */
static void all_delivered(ura_system *sys, unsigned workers, const char *what, long n)
{
	t_rc(await_guarded(sys), 0, "%s, %u workers: quiescent", what, workers);
	t_eq(atomic_load(&g_errors), 0, "%s: no send failed", what);
	t_eq(atomic_load(&g_got), PRODUCERS * n, "%s: nothing lost", what);
	t_eq(atomic_load(&g_bad_order), 0, "%s: in order per producer", what);
}

static void producers(unsigned workers)
{
	long n = t_scaled(20000);
	ura_system *sys = start_producers(workers, URA_FULL_MUTE, &prod_class, n);
	all_delivered(sys, workers, "mute", n);
	/* A producer mutes after a handler whose sends went over the bound;
	 * one whose burst found room (the sink's turn ended mid-burst and
	 * gave its count back) is not muted, so its next burst may go over
	 * too: two handlers' sends per producer at most. Unmuted, the depth
	 * would reach most of PRODUCERS * n. */
	t_ok(atomic_load(&g_max_depth) <= CAP + 2 * PRODUCERS * BURST,
	     "mute: depth within capacity + two handlers' sends per producer (%ld)",
	     atomic_load(&g_max_depth));
	ura_stats st = stats(sys);
	t_ok(st.mb_mutes > 0, "mute: producers were muted (%llu)", (unsigned long long)st.mb_mutes);
	t_eq(st.sent, st.received, "mute: sent == received");
	t_eq(st.live, 1, "mute: only the sink left");
	t_destroy(sys);
}

/* ---- URA_FULL_REFUSE_MUTE: the same producers, the bound kept exactly -- */

/* On -EAGAIN the producer keeps its place and asks itself to go on: it
 * runs again once muting lets it. */
static void prod_go_refuse(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct prod *p = ura_state(cx);
	for (int k = 0; k < BURST && p->i < p->n; k++) {
		int rc = ura_send(cx, p->to, A_MSG, p->id, p->i);
		if (rc == -EAGAIN) {
			atomic_fetch_add(&g_refusals, 1);
			break;
		}
		if (rc != 0)
			atomic_fetch_add(&g_errors, 1);
		p->i++;
	}
	if (p->i < p->n)
		ura_send(cx, ura_self(cx), A_GO);
	else
		ura_stop(cx);
}
URA_BEHAVIOR(prod_refuse_beh, URA_ON(A_GO, "", prod_go_refuse));
static const ura_class prod_refuse_class = { .name = "prod_refuse",
					     .state_size = sizeof(struct prod),
					     .initial = &prod_refuse_beh };

static void refuse_producers(unsigned workers)
{
	long n = t_scaled(20000);
	ura_system *sys = start_producers(workers, URA_FULL_REFUSE_MUTE, &prod_refuse_class, n);
	all_delivered(sys, workers, "refuse+mute", n);
	/* URA_FULL_MUTE lets each producer's handler go over (above); here
	 * the send that finds the mailbox full is refused. */
	t_ok(atomic_load(&g_max_depth) <= CAP, "refuse+mute: depth never past the capacity (%ld)",
	     atomic_load(&g_max_depth));
	ura_stats st = stats(sys);
	long refusals = atomic_load(&g_refusals);
	t_ok(refusals > 0, "refuse+mute: sends were refused (%ld)", refusals);
	t_eq(st.mb_refused, (uint64_t)refusals, "refuse+mute: each refusal counted");
	t_eq(st.mb_over, 0, "refuse+mute: nothing over the bound");
	/* A refused producer is muted (unless the sink drained to low water
	 * before its handler ended): not run again until there is room. One
	 * that was not muted would retry at once, and refusals would run to
	 * many per message delivered. */
	t_ok(st.mb_mutes > 0 && (long)st.mb_mutes * 4 >= refusals,
	     "refuse+mute: refused producers were muted (%llu mutes, %ld refusals)",
	     (unsigned long long)st.mb_mutes, refusals);
	t_eq(st.sent, st.received, "refuse+mute: sent == received");
	t_eq(st.live, 1, "refuse+mute: only the sink left");
	t_destroy(sys);
}

/* ---- a drained receiver lets every muted sender go ----------------------- */

#define A_HOLD URA_ATOM("hold")
#define A_LETGO URA_ATOM("letgo")
#define SMALL_CAP 2

static _Atomic long g_pinged;
static _Atomic int g_held;

/* The sink holds its mailbox (full to senders) until a delayed send lets
 * go: every producer's burst goes over the bound and every producer is
 * muted. A delayed send is not bounded, so the let-go arrives. */
static void hsink_hold(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	t_must(ura_mailbox_hold(cx, 1));
	atomic_store(&g_held, 1);
}
static void hsink_letgo(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	t_must(ura_mailbox_hold(cx, 0));
}
static void hsink_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_got, 1);
}
URA_BEHAVIOR(hsink_beh, URA_ON(A_HOLD, "", hsink_hold), URA_ON(A_LETGO, "", hsink_letgo),
	     URA_ON(A_MSG, "ii", hsink_msg));

/* One burst, then idle (alive, nothing more to send). */
static void prod_go_once(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct prod *p = ura_state(cx);
	for (int k = 0; k < BURST; k++)
		if (ura_send(cx, p->to, A_MSG, p->id, (long)k) != 0)
			atomic_fetch_add(&g_errors, 1);
}
static void prod_ping(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	atomic_fetch_add(&g_pinged, 1);
}
URA_BEHAVIOR(prod_once_beh, URA_ON(A_GO, "", prod_go_once), URA_ON(A_HIT, "", prod_ping));
static const ura_class prod_once_class = { .name = "prod_once",
					   .state_size = sizeof(struct prod),
					   .initial = &prod_once_beh };

/* Releases are paced (core/bound.h): at a take, about as many senders go
 * as the room takes, here at most SMALL_CAP of the PRODUCERS. Senders that
 * send nothing more make no further take, so a receiver that drains to 0
 * must let all the rest go. One left muted has no work pending, so the
 * system looks quiescent; a message to it then waits for ever (and the
 * second await times out). */
static void drained_releases_all(unsigned workers)
{
	atomic_store(&g_got, 0);
	atomic_store(&g_errors, 0);
	atomic_store(&g_pinged, 0);
	ura_system *sys = t_system(workers);
	ura_mailbox_opts mb = { .capacity = SMALL_CAP, .full = URA_FULL_MUTE };
	ura_class c = { .name = "hsink", .initial = &hsink_beh, .mailbox = &mb };
	ura_ref sink;
	t_must(ura_spawn(sys, &c, NULL, &sink));
	atomic_store(&g_held, 0);
	t_must(ura_send(sys, sink, A_HOLD));
	while (!atomic_load(&g_held))
		sched_yield();
	for (long i = 0; i < PRODUCERS; i++) {
		struct prod p = { .to = sink, .id = i };
		t_must(ura_spawn(sys, &prod_once_class, &p, &g_prods[i]));
		t_must(ura_send(sys, g_prods[i], A_GO));
	}
	/* Every producer muted (a count, no timing), then the let-go. */
	uint64_t give_up = ura_now_ns() + 30 * URA_SEC;
	while (stats(sys).mb_mutes < PRODUCERS && ura_now_ns() < give_up)
		sched_yield();
	t_must(ura_send_after(sys, sink, URA_MSEC, A_LETGO));
	t_rc(await_guarded(sys), 0, "drained, %u workers: quiescent", workers);
	t_eq(atomic_load(&g_errors), 0, "drained: every send accepted");
	t_eq(atomic_load(&g_got), PRODUCERS * BURST, "drained: nothing lost");
	ura_stats st = stats(sys);
	t_eq(st.mb_mutes, PRODUCERS, "drained: every producer was muted (%llu)",
	     (unsigned long long)st.mb_mutes);
	for (int i = 0; i < PRODUCERS; i++)
		t_must(ura_send(sys, g_prods[i], A_HIT));
	t_rc(await_guarded(sys), 0, "drained: every producer runs again (none left muted)");
	t_eq(atomic_load(&g_pinged), PRODUCERS, "drained: every producer took its message");
	t_destroy(sys);
}

/* ---- cycles ------------------------------------------------------------ */

static _Atomic long g_budget, g_hits, g_accepted;

struct peer {
	ura_ref next;
};

static void peer_set(ura_ctx *cx, const ura_msg *m)
{
	struct peer *p = ura_state(cx);
	p->next = ura_arg_ref(m, 0);
}

/* Each hit sends two to the next: a flood around the ring, until the
 * budget is spent. */
static void peer_hit(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	struct peer *p = ura_state(cx);
	atomic_fetch_add(&g_hits, 1);
	for (int i = 0; i < 2; i++) {
		if (atomic_fetch_sub(&g_budget, 1) <= 0)
			return;
		int rc = ura_send(cx, p->next, A_HIT);
		if (rc == -EAGAIN) { /* REFUSE_MUTE: the hit goes back */
			atomic_fetch_add(&g_budget, 1);
			return;
		}
		if (rc != 0)
			atomic_fetch_add(&g_errors, 1);
		else
			atomic_fetch_add(&g_accepted, 1);
	}
}
URA_BEHAVIOR(peer_beh, URA_ON(A_PEER, "r", peer_set), URA_ON(A_HIT, "", peer_hit));

static void cycle(unsigned workers, int k, uint32_t full)
{
	atomic_store(&g_errors, 0);
	atomic_store(&g_hits, 0);
	atomic_store(&g_accepted, 0);
	long budget = t_scaled(200000);
	atomic_store(&g_budget, budget);
	ura_system *sys = t_system(workers);
	if (full != URA_FULL_MUTE)
		t_diag("rings into URA_FULL_REFUSE_MUTE mailboxes");
	ura_mailbox_opts mb = { .capacity = 8, .full = full };
	ura_class c = { .name = "peer", .initial = &peer_beh, .state_size = sizeof(struct peer),
			.mailbox = &mb };
	ura_ref r[3];
	for (int i = 0; i < k; i++)
		t_must(ura_spawn(sys, &c, NULL, &r[i]));
	for (int i = 0; i < k; i++)
		t_must(ura_send(sys, r[i], A_PEER, r[(i + 1) % k]));
	t_rc(await_guarded(sys), 0, "setup: quiescent");
	for (int i = 0; i < k; i++)
		t_must(ura_send(sys, r[i], A_HIT));
	t_rc(await_guarded(sys), 0, "cycle of %d, %u workers: no deadlock (quiescent)", k,
	     workers);
	ura_stats st = stats(sys);
	t_eq(atomic_load(&g_errors), 0, "cycle of %d: no error but -EAGAIN", k);
	t_eq(atomic_load(&g_hits), atomic_load(&g_accepted) + k,
	     "cycle of %d: every accepted message handled", k);
	if (full == URA_FULL_MUTE)
		t_eq(atomic_load(&g_accepted), budget, "cycle of %d: every send accepted", k);
	t_eq(st.sent, st.received, "cycle of %d: sent == received", k);
	if (full == URA_FULL_MUTE)
		t_ok(st.mb_over > 0, "cycle of %d: sends that would close a cycle went over (%llu)",
		     k, (unsigned long long)st.mb_over);
	t_diag("cycle of %d: mutes %llu, over %llu", k, (unsigned long long)st.mb_mutes,
	       (unsigned long long)st.mb_over);
	t_destroy(sys);
}

int main(void)
{
	producers(1);
	producers(2);
	refuse_producers(1);
	refuse_producers(2);
	drained_releases_all(1);
	drained_releases_all(2);
	cycle(1, 2, URA_FULL_MUTE);
	cycle(2, 2, URA_FULL_MUTE);
	cycle(2, 3, URA_FULL_MUTE);
	cycle(1, 2, URA_FULL_REFUSE_MUTE);
	cycle(2, 2, URA_FULL_REFUSE_MUTE);
	cycle(2, 3, URA_FULL_REFUSE_MUTE);
	return t_done();
}
