/* SPDX-License-Identifier: MIT */
/*
 * Message blocks go home and come back intact. Three plain threads send
 * messages of every size class (a few bytes up to past the largest
 * class, 2 KiB) to relay actors spread over the workers; each relay
 * checks the payload and forwards a copy twice more, to relays picked
 * by the sequence number. So blocks are allocated on one thread and
 * freed on another all the time, go home in batches (msg/pool.c,
 * give_back), and are taken back, mixed in size, from one chain that
 * is sorted a block at a time as blocks are wanted (take_returned).
 *
 * Each payload is a pattern of its origin, sequence and hop. A block
 * handed out twice, or of a smaller class than asked for (its writer
 * then runs into the next block), shows as a payload that does not
 * match, or as a count that does not add up. The senders stay a window
 * ahead of the relays, so blocks are reused many times over.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "tap.h"

#define A_HOP URA_ATOM("hop")
#define NTHR 3
#define NRELAY 16
#define HOPS 3
#define MAXLEN 3000 /* past the 2048-byte class: the malloc'd ones too */
#define WINDOW 2048

static ura_ref g_relay[NRELAY];
static _Atomic long g_done[NTHR];  /* messages at their last hop */
static _Atomic long g_bad;         /* payloads that did not match */
static _Atomic long g_errors;      /* sends refused */

static size_t len_of(int64_t origin, int64_t seq)
{
	return (size_t)((seq * 37 + origin * 101) % MAXLEN);
}

static void fill(unsigned char *p, size_t n, int64_t origin, int64_t seq, int64_t hop)
{
	for (size_t k = 0; k < n; k++)
		p[k] = (unsigned char)(origin * 131 + seq * 17 + hop * 7 + (int64_t)k);
}

static int matches(const unsigned char *p, size_t n, int64_t origin, int64_t seq, int64_t hop)
{
	for (size_t k = 0; k < n; k++)
		if (p[k] != (unsigned char)(origin * 131 + seq * 17 + hop * 7 + (int64_t)k))
			return 0;
	return 1;
}

static void relay_hop(ura_ctx *cx, const ura_msg *m)
{
	int64_t origin = ura_arg_i64(m, 0), seq = ura_arg_i64(m, 1), hop = ura_arg_i64(m, 2);
	size_t n = 0;
	const unsigned char *p = ura_arg_bytes(m, 3, &n);
	if (origin < 0 || origin >= NTHR || hop < 0 || hop >= HOPS ||
	    n != len_of(origin, seq) || (n && !p) || !matches(p, n, origin, seq, hop)) {
		atomic_fetch_add(&g_bad, 1);
		return;
	}
	if (hop == HOPS - 1) {
		atomic_fetch_add(&g_done[origin], 1);
		return;
	}
	unsigned char buf[MAXLEN];
	fill(buf, n, origin, seq, hop + 1);
	ura_ref to = g_relay[(seq * 7 + hop + 1) % NRELAY];
	if (ura_send(cx, to, A_HOP, origin, seq, hop + 1, ura_v_bytes(buf, n)) < 0)
		atomic_fetch_add(&g_errors, 1);
}
URA_BEHAVIOR(relay_beh, URA_ON(A_HOP, "iiib", relay_hop));
static const ura_class relay_class = { .name = "relay", .initial = &relay_beh };

struct sender {
	ura_system *sys;
	int64_t origin, n;
	pthread_t th;
};

static void *send_all(void *arg)
{
	struct sender *s = arg;
	unsigned char buf[MAXLEN];
	uint64_t t0 = t_now_ns();
	for (int64_t seq = 0; seq < s->n; seq++) {
		/* A pace, not a timing: the relays drain what the window
		 * holds, and the give-up only keeps a hang from hanging. */
		while (seq - atomic_load(&g_done[s->origin]) > WINDOW &&
		       t_now_ns() - t0 < 60 * URA_SEC)
			sched_yield();
		size_t n = len_of(s->origin, seq);
		fill(buf, n, s->origin, seq, 0);
		ura_ref to = g_relay[(seq + s->origin) % NRELAY];
		if (ura_send(s->sys, to, A_HOP, s->origin, seq, (int64_t)0, ura_v_bytes(buf, n)) < 0)
			atomic_fetch_add(&g_errors, 1);
	}
	return NULL;
}

static void run(unsigned workers, long n)
{
	for (int i = 0; i < NTHR; i++)
		atomic_store(&g_done[i], 0);
	atomic_store(&g_bad, 0);
	atomic_store(&g_errors, 0);
	ura_system *sys = t_system(workers);
	for (int i = 0; i < NRELAY; i++)
		t_must(ura_spawn(sys, &relay_class, NULL, &g_relay[i]));
	struct sender s[NTHR];
	for (int i = 0; i < NTHR; i++) {
		s[i] = (struct sender){ .sys = sys, .origin = i, .n = n };
		t_must(-pthread_create(&s[i].th, NULL, send_all, &s[i]));
	}
	for (int i = 0; i < NTHR; i++)
		pthread_join(s[i].th, NULL);
	t_rc(await_guarded(sys), 0, "%u workers: await", workers);
	t_eq(atomic_load(&g_errors), 0, "%u workers: every send accepted", workers);
	t_eq(atomic_load(&g_bad), 0, "%u workers: every payload intact at every hop", workers);
	long done = 0;
	for (int i = 0; i < NTHR; i++)
		done += atomic_load(&g_done[i]);
	t_eq(done, NTHR * n, "%u workers: every message made its %d hops", workers, HOPS);
	ura_stats st = stats(sys);
	t_eq(st.sent, st.received, "%u workers: stats: sent == received", workers);
	t_eq(st.received, (uint64_t)(NTHR * n * HOPS), "%u workers: stats: received", workers);
	t_destroy(sys);
}

int main(void)
{
	long n = t_scaled(40000);
	run(1, n);
	run(2, n);
	run(4, n / 2);
	return t_done();
}
