/* SPDX-License-Identifier: MIT */
/*
 * Distribution (issue 19) against a real Erlang node on loopback: an
 * `erl -sname` node runs tests/dist_peer.erl (compiled here with erlc),
 * started and killed by this test; its epmd is the one erl starts.
 *  - the handshake both ways (Erlang connects to us; we connect to a
 *    node), registered names both ways, 1M messages each way, in order;
 *  - gen_server-like calls from Erlang into a ura actor;
 *  - an Erlang monitor and an Erlang link of ura actors that stop with a
 *    reason (and a value): 'DOWN' and 'EXIT' carry it;
 *  - ura monitoring an Erlang process killed with a reason;
 *  - a wrong cookie, either way: refused and logged, the good connection
 *    unaffected;
 *  - malformed terms from a raw socket that did the handshake: that
 *    connection closes with a log line;
 *  - large messages in fragments, both ways: a small one sent after a
 *    large one to the same process overtakes it, and Erlang's fragments
 *    are put back together;
 *  - a ura actor's 'DOWN' and 'EXIT' reach Erlang after every message
 *    the actor sent the watching process (they go through its proxy);
 *  - a peer that stops reading (a raw peer): its senders are muted, the
 *    output stays bounded, the connection stays up, and once it reads
 *    again every message arrives in order;
 *  - the erl node killed: noconnection to the monitors of its process
 *    and of the node.
 * Skips when erl or erlc is missing, or when built without libei.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ura.h>

#include "tap.h"

#define AT(s) URA_ATOM(s)

/* libei's MD5 (linked in with libura's static archive). */
typedef struct { _Alignas(8) unsigned char b[256]; } md5_ctx;
void ei_MD5Init(md5_ctx *c);
void ei_MD5Update(md5_ctx *c, unsigned char *p, unsigned int n);
void ei_MD5Final(unsigned char out[16], md5_ctx *c);

static const char *COOKIE = "ura_test_cookie";

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static struct {
	ura_ref peer;          /* the Erlang process that said hello */
	long seq_in;           /* seq messages in order so far */
	int seq_bad;
	long recvd, recvd_ok;  /* Erlang's count of our seq messages */
	long called, called_ok;
	int watching, linked;
	ura_atom erldown, erlexit;
	int64_t erldown_v, erlexit_v;
	ura_ref victim;
	ura_mon victim_mon;
	ura_atom victim_reason;
	ura_mon peer_mon, node_mon, tick_mon;
	ura_atom peer_down, node_down, tick_down;
	long echoed;
	long big_len, big_ok, big_smalls;  /* Erlang's view of our large one */
	long bigin_len, bigin_ok;          /* ours of Erlang's */
	int watching2;
	ura_atom erldown2, erlexit2;       /* a spray's end, seen by Erlang */
	long erldown2_n, erlexit2_n;       /* ... and the ticks before it */
	ura_ref linker;
	int lost_lines;
	/* the log */
	int wrong_cookie_lines, malformed_lines, no_tick_lines, fragment_lines;
} R;

static ura_ref uratest, calc, mine1, mine2, mine3, mine4;
#define SPRAY 20000
static ura_ref node_conn;
static long n_msgs;

static void sink(void *ud, int level, const char *msg)
{
	(void)ud;
	pthread_mutex_lock(&mu);
	if (strstr(msg, "wrong cookie"))
		R.wrong_cookie_lines++;
	if (strstr(msg, "malformed"))
		R.malformed_lines++;
	if (strstr(msg, "no tick"))
		R.no_tick_lines++;
	if (strstr(msg, "lost"))
		R.lost_lines++;
	if (strstr(msg, "in fragments (the first in"))
		R.fragment_lines++;
	pthread_mutex_unlock(&mu);
	if (level <= URA_LOG_WARN || getenv("DIST_VERBOSE"))
		printf("# log: %s\n", msg);
}

/* Waits up to `secs` for cond (read under mu). */
#define WAIT_FOR(cond, secs) __extension__({                                              \
	uint64_t end_ = t_now_ns() + (uint64_t)(secs) * URA_SEC;             \
	pthread_mutex_lock(&mu);                                             \
	while (!(cond) && t_now_ns() < end_) {                               \
		struct timespec ts_;                                         \
		clock_gettime(CLOCK_REALTIME, &ts_);                         \
		ts_.tv_nsec += 50 * 1000 * 1000;                             \
		if (ts_.tv_nsec >= 1000000000) { ts_.tv_sec++; ts_.tv_nsec -= 1000000000; } \
		pthread_cond_timedwait(&cv, &mu, &ts_);                      \
	}                                                                    \
	int ok_ = !!(cond);                                                  \
	pthread_mutex_unlock(&mu);                                           \
	ok_; })

static void wake(void)
{
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

/* ---- the ura actors ---------------------------------------------------- */

typedef struct {
	long sent, acked, goal;
} tester;

static void on_hello(ura_ctx *cx, const ura_msg *m)
{
	pthread_mutex_lock(&mu);
	R.peer = ura_arg_ref(m, 0);
	R.peer_mon = ura_monitor(cx, R.peer);
	wake();
}

static void on_seq(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	if (ura_arg_i64(m, 0) != R.seq_in + 1)
		R.seq_bad++;
	R.seq_in++;
	if (R.seq_in == n_msgs || R.seq_in % 65536 == 0)
		wake();
	else
		pthread_mutex_unlock(&mu);
}

/* Sends our seq messages, at most 20000 ahead of Erlang's acks. */
static void pump(ura_ctx *cx)
{
	tester *t = ura_state(cx);
	while (t->sent < t->goal && t->sent - t->acked < 20000)
		if (ura_send(cx, R.peer, AT("seq"), ++t->sent) < 0)
			break;
}

static void on_go(ura_ctx *cx, const ura_msg *m)
{
	tester *t = ura_state(cx);
	t->goal = ura_arg_i64(m, 0);
	ura_send(cx, R.peer, AT("expect"), ura_self(cx), t->goal);
	pump(cx);
}

static void on_ack(ura_ctx *cx, const ura_msg *m)
{
	tester *t = ura_state(cx);
	t->acked = ura_arg_i64(m, 0);
	pump(cx);
}

static void on_recvd(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.recvd = ura_arg_i64(m, 0);
	R.recvd_ok = ura_arg_i64(m, 1);
	wake();
}

static void on_called(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.called = ura_arg_i64(m, 0);
	R.called_ok = ura_arg_i64(m, 1);
	wake();
}

static void on_watching(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	/* Erlang monitors mine1 now: stop it with a reason and a value. */
	ura_send(cx, mine1, AT("die"), AT("boom"), 42);
	pthread_mutex_lock(&mu);
	R.watching = 1;
	wake();
}

static void on_linked(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	ura_send(cx, mine2, AT("die"), AT("bang"), 7);
	pthread_mutex_lock(&mu);
	R.linked = 1;
	wake();
}

static void on_watching2(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	/* Erlang's loop process monitors mine3: ticks to it, then a stop. */
	ura_send(cx, mine3, AT("spray"), R.peer, (int64_t)SPRAY, AT("sprayed"));
	pthread_mutex_lock(&mu);
	R.watching2 = 1;
	wake();
}

static void on_linked2(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, mine4, AT("spray"), ura_arg_ref(m, 0), (int64_t)SPRAY, AT("sprayed"));
	pthread_mutex_lock(&mu);
	R.linker = ura_arg_ref(m, 0);
	wake();
}

static void on_erldown2(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.erldown2_n = ura_arg_i64(m, 1);
	R.erldown2 = ura_arg_atom(m, 0);
	wake();
}

static void on_erlexit2(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.erlexit2_n = ura_arg_i64(m, 1);
	R.erlexit2 = ura_arg_atom(m, 0);
	wake();
}

static void on_erldown(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.erldown = ura_arg_atom(m, 0);
	R.erldown_v = ura_arg_i64(m, 1);
	wake();
}

static void on_erlexit(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.erlexit = ura_arg_atom(m, 0);
	R.erlexit_v = ura_arg_i64(m, 1);
	wake();
}

static void on_victim(ura_ctx *cx, const ura_msg *m)
{
	ura_ref v = ura_arg_ref(m, 0);
	ura_mon mon = ura_monitor(cx, v);
	pthread_mutex_lock(&mu);
	R.victim = v;
	R.victim_mon = mon;
	wake();
}

static void on_down(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	ura_mon mon = ura_down_monitor(m);
	pthread_mutex_lock(&mu);
	if (mon == R.victim_mon)
		R.victim_reason = ura_exit_reason(m);
	else if (mon == R.peer_mon)
		R.peer_down = ura_exit_reason(m);
	else if (mon == R.node_mon)
		R.node_down = ura_exit_reason(m);
	else if (mon == R.tick_mon)
		R.tick_down = ura_exit_reason(m);
	wake();
}

static void on_watch_node(ura_ctx *cx, const ura_msg *m)
{
	ura_mon mon = ura_monitor(cx, ura_arg_ref(m, 0));
	pthread_mutex_lock(&mu);
	R.node_mon = mon;
	wake();
}

static void on_watch_tick(ura_ctx *cx, const ura_msg *m)
{
	ura_mon mon = ura_monitor(cx, ura_arg_ref(m, 0));
	pthread_mutex_lock(&mu);
	R.tick_mon = mon;
	wake();
}

static void on_echoed(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	(void)m;
	pthread_mutex_lock(&mu);
	R.echoed++;
	wake();
}

/* Large messages: BIG_BLOCKS copies of the bytes 0..250. */
#define BIG_BLOCKS 32768
static int big_pattern_ok(const uint8_t *p, size_t n)
{
	if (n != 251u * BIG_BLOCKS)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (p[i] != i % 251)
			return 0;
	return 1;
}

/* Sends a large message to the peer, then has a helper send 20 small
 * ones to the same process: fragments let them go first. */
static void on_bigtest(ura_ctx *cx, const ura_msg *m)
{
	ura_ref helper = ura_arg_ref(m, 0);
	size_t n = 251u * BIG_BLOCKS;
	uint8_t *b = malloc(n);
	if (!b)
		return;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(i % 251);
	ura_send(cx, R.peer, AT("bigtest"), ura_self(cx));
	ura_send(cx, R.peer, AT("big"), ura_v_bytes(b, n));
	free(b);
	ura_send(cx, helper, AT("smalls"), 20);
}

static void on_bigok(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	pthread_mutex_lock(&mu);
	R.big_len = ura_arg_i64(m, 0);
	R.big_ok = ura_arg_i64(m, 1);
	R.big_smalls = ura_arg_i64(m, 2);
	wake();
}

static void on_bigin(ura_ctx *cx, const ura_msg *m)
{
	(void)cx;
	size_t n;
	const uint8_t *p = ura_arg_bytes(m, 0, &n);
	pthread_mutex_lock(&mu);
	R.bigin_len = (long)n;
	R.bigin_ok = big_pattern_ok(p, n);
	wake();
}

URA_BEHAVIOR(tester_beh,
	URA_ON(AT("hello"), "r", on_hello),
	URA_ON(AT("seq"), "i", on_seq),
	URA_ON(AT("go"), "i", on_go),
	URA_ON(AT("ack"), "i", on_ack),
	URA_ON(AT("recvd"), "ii", on_recvd),
	URA_ON(AT("called"), "ii", on_called),
	URA_ON(AT("watching"), "", on_watching),
	URA_ON(AT("linked"), "", on_linked),
	URA_ON(AT("erldown"), "ai", on_erldown),
	URA_ON(AT("erlexit"), "ai", on_erlexit),
	URA_ON(AT("watching2"), "", on_watching2),
	URA_ON(AT("linked2"), "r", on_linked2),
	URA_ON(AT("erldown2"), "ai", on_erldown2),
	URA_ON(AT("erlexit2"), "ai", on_erlexit2),
	URA_ON(AT("victim"), "r", on_victim),
	URA_ON(AT("watchnode"), "r", on_watch_node),
	URA_ON(AT("watchtick"), "r", on_watch_tick),
	URA_ON_ANY(AT("echoed"), on_echoed),
	URA_ON(AT("bigtest"), "r", on_bigtest),
	URA_ON(AT("bigok"), "iii", on_bigok),
	URA_ON(AT("bigin"), "b", on_bigin),
	URA_ON_ANY(URA_DOWN, on_down));

static void on_smalls(ura_ctx *cx, const ura_msg *m)
{
	for (int64_t i = 1; i <= ura_arg_i64(m, 0); i++)
		ura_send(cx, R.peer, AT("small"), i);
}
URA_BEHAVIOR(helper_beh, URA_ON(AT("smalls"), "i", on_smalls));
static const ura_class helper_class = { .name = "helper", .initial = &helper_beh };

static const ura_class tester_class = {
	.name = "tester", .state_size = sizeof(tester), .initial = &tester_beh,
};

/* calc: {call, From, I, X} -> From ! {reply, I, 2X + 1} */
static void on_call(ura_ctx *cx, const ura_msg *m)
{
	ura_send(cx, ura_arg_ref(m, 0), AT("reply"), ura_arg_i64(m, 1), 2 * ura_arg_i64(m, 2) + 1);
}

URA_BEHAVIOR(calc_beh, URA_ON(AT("call"), "rii", on_call));
static const ura_class calc_class = { .name = "calc", .initial = &calc_beh };

static void on_die(ura_ctx *cx, const ura_msg *m)
{
	ura_exit(cx, ura_arg_atom(m, 0), ura_v_i64(ura_arg_i64(m, 1)));
}

/* Ticks to a process, all in one handler, then a stop: its DOWN or EXIT
 * must not overtake them. */
static void on_spray(ura_ctx *cx, const ura_msg *m)
{
	ura_ref to = ura_arg_ref(m, 0);
	for (int64_t i = 1; i <= ura_arg_i64(m, 1); i++)
		ura_send(cx, to, AT("tick"), i);
	ura_exit(cx, ura_arg_atom(m, 2), URA_NOVALUE);
}

URA_BEHAVIOR(mortal_beh, URA_ON(AT("die"), "ai", on_die), URA_ON(AT("spray"), "ria", on_spray));

/* A producer for a peer that stops reading: bursts of FILL_BURST
 * messages of FILL_BYTES each to `to`, one burst per handler. */
#define FILL_BYTES 1000
#define FILL_BURST 64
static _Atomic long g_filled;
typedef struct {
	ura_ref to;
	long goal, i;
} filler;

static void on_fill(ura_ctx *cx, const ura_msg *m)
{
	(void)m;
	filler *f = ura_state(cx);
	static uint8_t blob[FILL_BYTES];
	for (int k = 0; k < FILL_BURST && f->i < f->goal; k++) {
		if (ura_send(cx, f->to, AT("fill"), ura_v_bytes(blob, sizeof blob), f->i + 1) < 0)
			return;
		f->i++;
		atomic_store(&g_filled, f->i);
	}
	if (f->i < f->goal)
		ura_send(cx, ura_self(cx), AT("fill"));
}
URA_BEHAVIOR(filler_beh, URA_ON(AT("fill"), "", on_fill));
static const ura_class filler_class = { .name = "filler", .state_size = sizeof(filler),
					.initial = &filler_beh };

static int read_n(int fd, unsigned char *p, size_t n);

/* A raw peer that does not read still ticks, as a node whose process is
 * slow does: a tick (an empty frame) once a second at most, or the
 * connection would be lost for net_ticktime (8 s) of silence, which a
 * loaded machine under ASan reached while the test read (CI, 2026-12-06). */
static void raw_tick(int fd, uint64_t *last)
{
	static const unsigned char tick[4] = { 0 };
	uint64_t now = t_now_ns();
	if (now - *last < URA_SEC)
		return;
	*last = now;
	if (write(fd, tick, sizeof tick) != (ssize_t)sizeof tick)
		t_diag("raw peer: a tick was not written");
}

/* Reads frames from fd until `want` messages came (ticks are empty
 * frames), checking that their last term, the i64 sequence, goes up by
 * one. The count read, or -1 on a gap or an error. */
static long read_fills(int fd, long want)
{
	long got = 0;
	uint64_t last_tick = 0;
	static unsigned char b[1 << 16];
	while (got < want) {
		raw_tick(fd, &last_tick);
		unsigned char l[4];
		if (read_n(fd, l, 4) < 0)
			return got;
		size_t n = (size_t)l[0] << 24 | (size_t)l[1] << 16 | (size_t)l[2] << 8 | l[3];
		if (n > sizeof b || read_n(fd, b, n) < 0)
			return -1;
		if (!n)
			continue;
		long seq = -1;
		if (n >= 5 && b[n - 5] == 98)
			seq = (long)b[n - 4] << 24 | (long)b[n - 3] << 16 | (long)b[n - 2] << 8 | b[n - 1];
		else if (n >= 2 && b[n - 2] == 97)
			seq = b[n - 1];
		if (seq != got + 1)
			return -1;
		got++;
	}
	return got;
}
static const ura_class mortal_class = { .name = "mortal", .initial = &mortal_beh };

/* ---- the Erlang side --------------------------------------------------- */

static char tmpdir[64];

static int have(const char *prog)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static pid_t erl_start(const char *sname, const char *cookie, const char *eval, const char *out)
{
	pid_t pid = fork();
	if (pid == 0) {
		if (out) {
			FILE *f = freopen(out, "w", stdout);
			(void)f;
		}
		execlp("erl", "erl", "-sname", sname, "-setcookie", cookie, "-noshell", "-noinput",
		       "-kernel", "net_ticktime", "8", "-pa", tmpdir, "-eval", eval, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* ---- a raw peer: our own initiator handshake, then garbage ------------- */

static int epmd_port(const char *alive)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(4369),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	size_t al = strlen(alive);
	unsigned char b[300] = { (unsigned char)((al + 1) >> 8), (unsigned char)(al + 1), 122 };
	memcpy(b + 3, alive, al);
	int port = -1;
	if (write(fd, b, al + 3) == (ssize_t)(al + 3) && read(fd, b, 4) == 4 && b[0] == 119 && !b[1])
		port = b[2] << 8 | b[3];
	close(fd);
	return port;
}

static int read_n(int fd, unsigned char *p, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, p + got, n - got);
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}

static int hs_read(int fd, unsigned char *p, size_t cap)
{
	unsigned char l[2];
	if (read_n(fd, l, 2) < 0)
		return -1;
	size_t n = (size_t)l[0] << 8 | l[1];
	if (n > cap || read_n(fd, p, n) < 0)
		return -1;
	return (int)n;
}

static void hs_send(int fd, const unsigned char *p, size_t n)
{
	unsigned char l[2] = { (unsigned char)(n >> 8), (unsigned char)n };
	if (write(fd, l, 2) != 2 || write(fd, p, n) != (ssize_t)n)
		t_diag("raw peer: short write");
}

static void digest(uint32_t ch, unsigned char out[16])
{
	char num[16];
	int n = snprintf(num, sizeof num, "%u", ch);
	md5_ctx c;
	ei_MD5Init(&c);
	ei_MD5Update(&c, (unsigned char *)(uintptr_t)COOKIE, (unsigned)strlen(COOKIE));
	ei_MD5Update(&c, (unsigned char *)num, (unsigned)n);
	ei_MD5Final(out, &c);
}

/* Connects to port as node `name`, completes the handshake; the fd or -1. */
static int raw_peer(int port, const char *name)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = { .tv_sec = 20 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	uint64_t flags = 0x4 | 0x8 | 0x10 | 0x20 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 |
			 0x10000 | 0x20000 | 0x40000 | 0x800000 /* fragments */ | 0x1000000;
	unsigned char b[512];
	size_t nl = strlen(name), k = 0;
	b[k++] = 'N';
	for (int i = 7; i >= 0; i--)
		b[k++] = (unsigned char)(flags >> (8 * i));
	b[k++] = 0; b[k++] = 0; b[k++] = 0; b[k++] = 1; /* creation */
	b[k++] = (unsigned char)(nl >> 8); b[k++] = (unsigned char)nl;
	memcpy(b + k, name, nl);
	hs_send(fd, b, k + nl);
	int n = hs_read(fd, b, sizeof b);
	if (n != 3 || memcmp(b, "sok", 3))
		goto fail;
	n = hs_read(fd, b, sizeof b);
	if (n < 19 || b[0] != 'N')
		goto fail;
	uint32_t ch = (uint32_t)b[9] << 24 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 8 | b[12];
	unsigned char r[21] = { 'r', 1, 2, 3, 4 };
	digest(ch, r + 5);
	hs_send(fd, r, 21);
	n = hs_read(fd, b, sizeof b);
	if (n != 17 || b[0] != 'a')
		goto fail;
	unsigned char want[16];
	digest(0x01020304u, want);
	if (memcmp(want, b + 1, 16))
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Sends a frame and waits for the peer to close: 1 if it did. */
static int closes_after(int fd, const unsigned char *p, size_t n)
{
	unsigned char l[4] = { (unsigned char)(n >> 24), (unsigned char)(n >> 16),
			       (unsigned char)(n >> 8), (unsigned char)n };
	if (write(fd, l, 4) != 4 || write(fd, p, n) != (ssize_t)n)
		return 0;
	unsigned char b[256];
	for (;;) {
		ssize_t r = read(fd, b, sizeof b);
		if (r == 0)
			return 1;
		if (r < 0)
			return errno == ECONNRESET;
		/* ticks, or nothing else: keep reading */
	}
}

int main(void)
{
	if (!have("erl") || !have("erlc")) {
		printf("1..0 # SKIP erl or erlc not installed (Debian: apt-get install erlang-base)\n");
		return 0;
	}
	ura_log_fn *lf = sink;
	ura_system *sys;
	ura_config cfg = { .workers = 2, .log = lf, .log_level = URA_LOG_INFO };
	t_must(ura_system_new(&sys, &cfg));
	ura_dist *d;
	char uname[64], ename[64], bname[64], eval[256], bad_out[128];
	snprintf(uname, sizeof uname, "urat%d", (int)getpid());
	snprintf(ename, sizeof ename, "erlt%d", (int)getpid());
	snprintf(bname, sizeof bname, "badt%d", (int)getpid());

	/* Probe: a build without libei says so. */
	int rc = ura_dist_start(sys, &(ura_dist_opts){ .name = "x", .cookie = "c",
			.reserved_[0] = 1 }, &d);
	if (rc == -ENOTSUP) {
		printf("1..0 # SKIP built without libei (erlang-dev)\n");
		ura_system_destroy(sys);
		return 0;
	}
	t_rc(rc, -EINVAL, "reserved words set: -EINVAL");
	t_rc(ura_dist_start(sys, &(ura_dist_opts){ .name = "bad name", .cookie = "c" }, &d), -EINVAL,
	     "a bad node name: -EINVAL");

	snprintf(tmpdir, sizeof tmpdir, "/tmp/ura_dist.XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	char cmd[512];
	snprintf(cmd, sizeof cmd, "erlc -o %s %s/dist_peer.erl", tmpdir, SRCDIR);
	t_must(system(cmd) == 0 ? 0 : -EIO);

	t_must(ura_spawn(sys, &tester_class, NULL, &uratest));
	t_must(ura_spawn(sys, &calc_class, NULL, &calc));
	t_must(ura_spawn(sys, &mortal_class, NULL, &mine1));
	t_must(ura_spawn(sys, &mortal_class, NULL, &mine2));
	t_must(ura_spawn(sys, &mortal_class, NULL, &mine3));
	t_must(ura_spawn(sys, &mortal_class, NULL, &mine4));
	t_must(ura_register(sys, AT("uratest"), uratest));
	t_must(ura_register(sys, AT("calc"), calc));

	/* erl starts epmd; our registration waits for it. */
	char host[64];
	gethostname(host, sizeof host);
	host[strcspn(host, ".")] = 0;
	snprintf(eval, sizeof eval, "dist_peer:start('%s@%s')", uname, host);
	pid_t erl = erl_start(ename, COOKIE, eval, NULL);
	uint64_t until = t_now_ns() + 30 * URA_SEC;
	do {
		rc = ura_dist_start(sys, &(ura_dist_opts){ .name = uname, .cookie = COOKIE,
				.tick_ns = 8 * URA_SEC }, &d);
		if (rc == -ECONNREFUSED)
			usleep(100 * 1000);
	} while (rc == -ECONNREFUSED && t_now_ns() < until);
	t_rc(rc, 0, "ura_dist_start: registered with erl's epmd");
	if (rc < 0)
		goto out_erl;
	t_diag("node %s", ura_dist_name(d));

	/* 1. Erlang connects (handshake as acceptor) and says hello by name. */
	t_ok(WAIT_FOR(!ura_ref_null(R.peer), 60), "{uratest, Ura} ! {hello, self()} arrived: "
	     "handshake, registered name, pid -> ref");
	if (ura_ref_null(R.peer))
		goto out_erl;
	char enode[128];
	snprintf(enode, sizeof enode, "%s@%s", ename, host);
	node_conn = ura_dist_node_ref(d, enode);
	t_ok(!ura_ref_null(node_conn), "ura_dist_node_ref: the connection actor");
	ura_send(sys, uratest, AT("watchnode"), node_conn);
	t_ok(WAIT_FOR(R.node_mon > 0, 10), "monitor_node: a monitor of the connection");
	t_rc(ura_dist_connect(d, enode, 0), 0, "ura_dist_connect to a connected node: 0");

	/* 2. 1M messages each way, in order. */
	n_msgs = t_scaled(1000000);
	uint64_t t0 = t_now_ns();
	ura_send(sys, R.peer, AT("burst"), uratest, n_msgs);
	t_ok(WAIT_FOR(R.seq_in == n_msgs, 300), "Erlang -> ura: %ld messages", n_msgs);
	t_eq(R.seq_bad, 0, "... each once, in order");
	double in_s = (double)(t_now_ns() - t0) / 1e9;
	t0 = t_now_ns();
	ura_send(sys, uratest, AT("go"), n_msgs);
	t_ok(WAIT_FOR(R.recvd == n_msgs, 300), "ura -> Erlang: %ld messages", n_msgs);
	t_eq(R.recvd_ok, 1, "... each once, in order (Erlang checked)");
	double out_s = (double)(t_now_ns() - t0) / 1e9;
	t_diag("Erlang->ura %.0f msg/s, ura->Erlang %.0f msg/s (not a benchmark)", n_msgs / in_s,
	       n_msgs / out_s);

	/* 3. gen_server-like calls into calc, by name. */
	ura_send(sys, R.peer, AT("calls"), uratest, 1000);
	t_ok(WAIT_FOR(R.called == 1000, 60), "Erlang made 1000 calls to {calc, Ura}");
	t_eq(R.called_ok, 1, "... each answered right");

	/* 4. An Erlang monitor of mine1, which stops with {boom, 42}. */
	ura_send(sys, R.peer, AT("watch"), mine1, uratest);
	t_ok(WAIT_FOR(R.erldown != 0, 30), "Erlang's monitor of a ura actor fired");
	t_ok(R.erldown == AT("boom") && R.erldown_v == 42, "... 'DOWN' with the real reason {boom, 42}");

	/* 5. An Erlang link to mine2, which stops with {bang, 7}. */
	ura_send(sys, R.peer, AT("linkto"), mine2, uratest);
	t_ok(WAIT_FOR(R.erlexit != 0, 30), "Erlang's link to a ura actor fired");
	t_ok(R.erlexit == AT("bang") && R.erlexit_v == 7, "... 'EXIT' with the real reason {bang, 7}");
	{
		char an[URA_ATOM_MAX + 1];
		t_diag("erlexit: %s, %lld", ura_atom_name(R.erlexit, an), (long long)R.erlexit_v);
	}

	/* 5a. A DOWN and an EXIT after the dead actor's messages: mine3 and
	 * mine4 send SPRAY ticks to their watchers in one handler, then stop;
	 * the watchers count the ticks that came before the signal. */
	ura_send(sys, R.peer, AT("watchcount"), mine3, uratest);
	t_ok(WAIT_FOR(R.erldown2 != 0, 60), "Erlang's monitor of a spraying ura actor fired");
	t_ok(R.erldown2 == AT("sprayed") && R.erldown2_n == SPRAY,
	     "... 'DOWN' after all %d of its messages (%ld before it)", SPRAY, R.erldown2_n);
	ura_send(sys, R.peer, AT("linkcount"), mine4, uratest);
	t_ok(WAIT_FOR(R.erlexit2 != 0, 60), "Erlang's link to a spraying ura actor fired");
	t_ok(R.erlexit2 == AT("sprayed") && R.erlexit2_n == SPRAY,
	     "... 'EXIT' after all %d of its messages (%ld before it)", SPRAY, R.erlexit2_n);

	/* 5b. Large messages in fragments (8 MiB: 126 fragments of 64 KiB). */
	ura_ref helper;
	t_must(ura_spawn(sys, &helper_class, NULL, &helper));
	ura_send(sys, uratest, AT("bigtest"), helper);
	t_ok(WAIT_FOR(R.big_len != 0, 60), "ura -> Erlang: an 8 MiB message arrived");
	t_ok(R.big_len == 251L * BIG_BLOCKS && R.big_ok == 1, "... whole, every byte right (%ld)",
	     R.big_len);
	t_ok(R.big_smalls > 0, "... after %ld of the 20 small messages sent to the same process "
	     "after it: they went between its fragments", R.big_smalls);
	ura_send(sys, R.peer, AT("bigto"), uratest, (int64_t)BIG_BLOCKS);
	t_ok(WAIT_FOR(R.bigin_len != 0, 60), "Erlang -> ura: an 8 MiB message arrived");
	t_ok(R.bigin_ok == 1, "... whole, every byte right (%ld)", R.bigin_len);
	t_ok(WAIT_FOR(R.fragment_lines > 0, 10), "... in fragments (logged once)");

	/* 6. ura monitors an Erlang process, which Erlang kills with a reason. */
	ura_send(sys, R.peer, AT("mkvictim"), uratest);
	t_ok(WAIT_FOR(!ura_ref_null(R.victim), 30), "an Erlang process's pid arrived as a ref");
	ura_send(sys, R.peer, AT("kill"), R.victim, AT("shot"));
	t_ok(WAIT_FOR(R.victim_reason != 0, 30), "ura's monitor of the Erlang process fired");
	t_ok(R.victim_reason == AT("shot"), "... DOWN with the real reason: shot");

	/* 7. A wrong cookie, both ways: refused, logged, nothing else hit. */
	snprintf(eval, sizeof eval, "dist_peer:start_bad('%s@%s')", uname, host);
	snprintf(bad_out, sizeof bad_out, "%s/bad.out", tmpdir);
	pid_t bad = erl_start(bname, "not_the_cookie", eval, bad_out);
	t_ok(WAIT_FOR(R.wrong_cookie_lines >= 1, 60), "a peer with a wrong cookie: refused, logged");
	char bnode[128];
	snprintf(bnode, sizeof bnode, "%s@%s", bname, host);
	rc = -EAGAIN;
	for (int i = 0; i < 100 && rc != -EACCES; i++) {
		rc = ura_dist_connect(d, bnode, 5 * URA_SEC);
		if (rc == -EHOSTUNREACH || rc == -ECONNREFUSED)
			usleep(100 * 1000); /* not registered with epmd yet */
		else
			break;
	}
	t_rc(rc, -EACCES, "ura_dist_connect to a node with another cookie: -EACCES");
	t_ok(WAIT_FOR(R.wrong_cookie_lines >= 2, 10), "... logged");
	/* Its ping gives up in its own time: wait for its answer. */
	char line[128] = "";
	for (uint64_t end = t_now_ns() + 60 * URA_SEC; !line[0] && t_now_ns() < end;) {
		FILE *bf = fopen(bad_out, "r");
		if (bf) {
			if (!fgets(line, sizeof line, bf))
				line[0] = 0;
			fclose(bf);
		}
		if (!line[0])
			usleep(100 * 1000);
	}
	kill(bad, SIGKILL);
	waitpid(bad, NULL, 0);
	t_ok(strstr(line, "pang") != NULL, "the bad node's ping: pang (%s)", strtok(line, "\n"));
	ura_send(sys, R.peer, AT("echo"), uratest, 1);
	t_ok(WAIT_FOR(R.echoed == 1, 30), "the good connection still works");

	/* 8. Malformed terms from a raw peer after the handshake. */
	int port = epmd_port(uname);
	t_ok(port > 0, "epmd knows our port");
	/* The raw peer offers fragments: headers (131, 68/69/70) are taken
	 * from it, and checked. */
	static const struct { const char *what; unsigned char f[24]; size_t n; } bad_frames[] = {
		{ "a truncated tuple", { 112, 131, 104, 3, 97, 2 }, 6 },
		{ "a binary longer than its frame", { 112, 131, 104, 2, 97, 2, 109, 0x7f, 0xff, 0xff, 0xff, 1 }, 12 },
		{ "an unknown tag", { 112, 131, 200, 1, 2, 3 }, 6 },
		{ "no pass-through byte", { 7, 131, 106 }, 3 },
		{ "a header with an atom cache reference", { 131, 68, 1, 8, 0, 104, 1, 97, 2 }, 9 },
		{ "a fragment of no sequence", { 131, 70, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 1,
						 104, 1, 97, 2 }, 22 },
		{ "a first fragment numbered 0", { 131, 69, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0,
						   0, 104, 1, 97, 2 }, 23 },
	};
	for (size_t i = 0; i < sizeof bad_frames / sizeof bad_frames[0]; i++) {
		char rname[160];
		snprintf(rname, sizeof rname, "raw%zu@%s", i, host);
		int before;
		pthread_mutex_lock(&mu);
		before = R.malformed_lines;
		pthread_mutex_unlock(&mu);
		int fd = raw_peer(port, rname);
		t_ok(fd >= 0, "raw peer %zu: handshake with the right cookie", i);
		if (fd < 0)
			continue;
		t_ok(closes_after(fd, bad_frames[i].f, bad_frames[i].n),
		     "%s: the connection is closed", bad_frames[i].what);
		close(fd);
		t_ok(WAIT_FOR(R.malformed_lines > before, 10), "... with a log line");
	}
	R.echoed = 0;
	ura_send(sys, R.peer, AT("echo"), uratest, 2);
	t_ok(WAIT_FOR(R.echoed == 1, 30), "the Erlang connection still works after them");

	/* 8b. A peer that stops reading: a producer of 40 MB for a process
	 * there is muted once the link backs up (the output held stays near
	 * the socket buffers plus 1 MiB, far below the 64 MiB that would drop
	 * the link), the connection stays up; once the peer reads, all of it
	 * arrives, in order. */
	{
		char rname[160];
		snprintf(rname, sizeof rname, "rawslow@%s", host);
		int fd = raw_peer(port, rname);
		t_ok(fd >= 0, "a raw peer that will not read: handshake");
		uint64_t last_tick = 0;
		ura_ref to = URA_NOREF;
		for (int i = 0; fd >= 0 && i < 100; i++) {
			if (ura_dist_whereis(d, rname, "sink", &to) == 0)
				break;
			raw_tick(fd, &last_tick);
			usleep(50 * 1000);
		}
		t_ok(!ura_ref_null(to), "... {sink, Node} as a ref");
		long goal = 40000, lost0;
		pthread_mutex_lock(&mu);
		lost0 = R.lost_lines;
		pthread_mutex_unlock(&mu);
		ura_stats st0 = stats(sys);
		ura_ref fr;
		filler f = { .to = to, .goal = goal };
		t_must(ura_spawn(sys, &filler_class, &f, &fr));
		t_must(ura_send(sys, fr, AT("fill")));
		/* Until the producer stalls: muted, and no progress for 500 ms
		 * (a producer merely not scheduled is not muted). */
		long last = -1, now;
		for (int i = 0, still = 0; i < 240 && still < 2; i++) {
			now = atomic_load(&g_filled);
			if (now == goal)
				break;
			int muted = stats(sys).mb_mutes > st0.mb_mutes;
			still = muted && now == last ? still + 1 : 0;
			last = now;
			if (fd >= 0)
				raw_tick(fd, &last_tick);
			usleep(250 * 1000);
		}
		ura_stats st1 = stats(sys);
		t_ok(last < goal / 2, "... the producer stalled at %ld of %ld messages (%ld KB)", last,
		     goal, last * FILL_BYTES / 1000);
		t_ok(st1.mb_mutes > st0.mb_mutes, "... muted (%llu mutes)",
		     (unsigned long long)(st1.mb_mutes - st0.mb_mutes));
		pthread_mutex_lock(&mu);
		int lost = R.lost_lines - lost0;
		pthread_mutex_unlock(&mu);
		t_eq(lost, 0, "... the connection is still up");
		long got = fd >= 0 ? read_fills(fd, goal) : -1;
		t_eq(got, goal, "... and once it reads, every message arrives, in order");
		t_eq(atomic_load(&g_filled), goal, "... the producer finished");
		if (fd >= 0)
			close(fd);
	}

	/* 9. A peer that goes silent after the handshake (no ticks): lost
	 * after tick_ns, with noconnection to the monitor of its node. */
	{
		char rname[160];
		snprintf(rname, sizeof rname, "rawtick@%s", host);
		int fd = raw_peer(port, rname);
		t_ok(fd >= 0, "a silent raw peer: handshake");
		ura_ref rn = ura_dist_node_ref(d, rname);
		t_ok(!ura_ref_null(rn), "... its connection actor");
		ura_send(sys, uratest, AT("watchtick"), rn);
		t_ok(WAIT_FOR(R.tick_down != 0, 60), "... lost once it sent nothing for net_ticktime");
		t_ok(R.tick_down == URA_NOCONNECTION, "... noconnection");
		t_ok(WAIT_FOR(R.no_tick_lines > 0, 5), "... and the log says why");
		if (fd >= 0)
			close(fd);
	}

	/* 10. The erl node killed: noconnection. */
	kill(erl, SIGKILL);
	waitpid(erl, NULL, 0);
	erl = 0;
	t_ok(WAIT_FOR(R.peer_down != 0 && R.node_down != 0, 60), "node loss reached the monitors");
	t_ok(R.peer_down == URA_NOCONNECTION, "... of the Erlang process: noconnection");
	t_ok(R.node_down == URA_NOCONNECTION, "... of the node (monitor_node): noconnection");
	rc = ura_send(sys, R.peer, AT("echo"), uratest, 3);
	t_rc(rc, -ESRCH, "the process's proxy is gone: a send fails");

	t_rc(ura_dist_stop(d), 0, "ura_dist_stop");
out_erl:
	if (erl > 0) {
		kill(erl, SIGKILL);
		waitpid(erl, NULL, 0);
	}
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		t_diag("could not remove %s", tmpdir);
	ura_kill(sys, uratest, URA_KILL);
	ura_kill(sys, calc, URA_KILL);
	t_rc(ura_system_await_for(sys, 30 * URA_SEC), 0, "quiescent once stopped");
	t_destroy(sys);
	return t_done();
}
