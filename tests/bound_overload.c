/* SPDX-License-Identifier: MIT */
/*
 * The overload signal. With one worker a flooder's handler fills the
 * receiver before it runs: the receiver gets URA_OVERLOAD(i64 depth) once
 * per crossing of its high-water mark, the depth it carries is that mark,
 * it comes before the message that reached the mark (it is sent on the
 * way in), and it is sent again only after the depth fell to low water.
 * It passes a full mailbox (it is not bounded), the receiver reads its
 * depth in a handler, and stats count the signals. Without `overload`
 * nothing is sent.
 */
#include <errno.h>
#include <stdatomic.h>

#include "tap.h"

#define A_MSG URA_ATOM("msg")
#define A_FLOOD URA_ATOM("flood")

#define CAP 16
#define HIGH 12
#define LOW 2

static _Atomic long g_got, g_over, g_over_depth, g_over_at, g_first_depth;

static void sink_msg(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	long n = atomic_fetch_add(&g_got, 1);
	if (n == 0)
		atomic_store(&g_first_depth, (long)ura_mailbox_depth(ura_ctx_system(cx),
								       ura_self(cx)));
}

static void sink_over(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	atomic_fetch_add(&g_over, 1);
	atomic_store(&g_over_depth, (long)ura_arg_i64(m, 0));
	atomic_store(&g_over_at, atomic_load(&g_got) % CAP);
}

URA_BEHAVIOR(sink_beh, URA_ON(A_MSG, "i", sink_msg), URA_ON(URA_OVERLOAD, "i", sink_over));

static void flood(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	for (long i = 0; i < CAP + 4; i++)
		ura_send(cx, to, A_MSG, i);
}
URA_BEHAVIOR(flood_beh, URA_ON(A_FLOOD, "r", flood));
static const ura_class flood_class = { .name = "flood", .initial = &flood_beh };

static void run(int overload)
{
	atomic_store(&g_got, 0);
	atomic_store(&g_over, 0);
	atomic_store(&g_over_depth, 0);
	atomic_store(&g_over_at, -1);
	ura_system *sys = t_system(1);
	ura_mailbox_opts mb = { .capacity = CAP, .low_water = LOW, .high_water = HIGH,
				.overload = (uint32_t)overload };
	ura_class c = { .name = "sink", .initial = &sink_beh, .mailbox = &mb };
	ura_ref sink, fl;
	t_must(ura_spawn(sys, &c, NULL, &sink));
	t_must(ura_spawn(sys, &flood_class, NULL, &fl));
	for (int round = 1; round <= 2; round++) {
		t_must(ura_send(sys, fl, A_FLOOD, sink));
		t_rc(await_guarded(sys), 0, "round %d: quiescent", round);
		t_eq(atomic_load(&g_got), round * CAP, "round %d: the capacity's worth arrived",
		     round);
		if (!overload)
			continue;
		t_eq(atomic_load(&g_over), round, "round %d: one overload signal per crossing",
		     round);
		t_eq(atomic_load(&g_over_depth), HIGH, "round %d: it carries the high-water depth",
		     round);
		t_eq(atomic_load(&g_over_at), HIGH - 1,
		     "round %d: it came before the message that reached the mark", round);
	}
	ura_stats st = stats(sys);
	if (overload) {
		t_eq(st.mb_overloads, 2, "stats count overload signals");
		t_eq(atomic_load(&g_first_depth), CAP, "a handler sees its depth (the full turn)");
	} else {
		t_eq(atomic_load(&g_over), 0, "without overload: no signal");
		t_eq(st.mb_overloads, 0, "without overload: none counted");
	}
	t_eq(st.mb_refused, 8, "the sends past the capacity were refused");
	t_destroy(sys);
}

int main(void)
{
	run(1);
	run(0);
	return t_done();
}
