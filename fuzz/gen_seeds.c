/* SPDX-License-Identifier: MIT */
/*
 * gen_seeds: makes the seed corpora of fuzz_guard and fuzz_snapshot with
 * the library itself, so that every seed is something ura really writes.
 *
 *   gen_seeds DIR     writes DIR/fuzz_guard/<name> (guards serialized with
 *                     ura_guard_serialize) and DIR/fuzz_snapshot/<name>
 *                     (the bodies of snapshots of small running systems,
 *                     plus one whole file); DIR is usually fuzz/corpus
 *   gen_seeds --check makes one snapshot and checks that fuzz_snapshot's
 *                     frame (snap_classes.h) gives the very header and
 *                     trailer checksums ura wrote, and that the framed
 *                     body restores with the fuzzer's classes; scripts/fuzz
 *                     runs it first, so that a change of the format makes
 *                     the fuzz step fail rather than fuzz a dead end
 *
 * (The HTTP seeds are written by hand: fuzz/corpus/fuzz_http_parse.)
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "guard_syms.h"
#include "snap_classes.h"

static const char *outdir;
static int failed;

static void die(const char *what, int rc)
{
	fprintf(stderr, "gen_seeds: %s: %s\n", what, ura_strerror(rc));
	exit(1);
}

#define MUST(x) do { int rc_ = (int)(x); if (rc_ < 0) die(#x, rc_); } while (0)

static void write_seed(const char *target, const char *name, const void *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", outdir, target);
	mkdir(path, 0755);
	snprintf(path, sizeof path, "%s/%s/%s", outdir, target, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "gen_seeds: cannot write %s\n", path);
		exit(1);
	}
	printf("%s (%zu bytes)\n", path, n);
}

/* ---- guards ------------------------------------------------------------- */

typedef struct { int64_t done; double level; const char *who; } gstate;

static void guard_seed(const char *name, const ura_guard_node *g)
{
	unsigned char buf[4096];
	long n = ura_guard_serialize(g, syms, NSYMS, buf, sizeof buf);
	if (n < 0 || (size_t)n > sizeof buf)
		die(name, n < 0 ? (int)n : -E2BIG);
	ura_guard_node *back;
	MUST(ura_guard_deserialize(buf, (size_t)n, syms, NSYMS, &back));
	ura_guard_free(back);
	write_seed("fuzz_guard", name, buf, (size_t)n);
}

static void guards(void)
{
	static const unsigned char bytes[] = { 0, 1, 2, 0xff };
	guard_seed("mod_eq", URA_G_EQ(URA_G_MOD(URA_X(1), URA_GI(2)), URA_GI(0)));
	guard_seed("ref_and_cmp", URA_G_AND(URA_G_EQ(URA_X(1), URA_G_REF(&v_i32)),
					    URA_G_GT(URA_X(2), URA_GD(3.5))));
	guard_seed("strings", URA_G_OR(URA_G_STARTS_WITH(URA_X(1), URA_GS("he")),
				       URA_G_GE(URA_G_SIZE(URA_X(2)), URA_GI(3)),
				       URA_G_LT(URA_X(3), URA_GS("zz"))));
	guard_seed("in_ints", URA_G_IN(URA_X(1), URA_GI(1), URA_GI(2), URA_GI(-3)));
	guard_seed("not_in_strs", URA_G_NOT_IN(URA_X(2), URA_GS("a"), URA_GS(""),
					       URA_GS("hello")));
	guard_seed("in_atoms", URA_G_IN(URA_X(1), URA_G_ATOM("put"), URA_G_ATOM("get")));
	guard_seed("call_len", URA_G_EQ(URA_G_CALL(f_len, URA_X(1)), URA_GI(5)));
	guard_seed("call_sum", URA_G_GT(URA_G_CALL(f_sum, URA_X(1), URA_X(2), URA_GI(7)),
					URA_G_NEG(URA_G_REF(&v_u32))));
	guard_seed("call0", URA_G_AND(URA_G_EQ(URA_G_CALL(f_word, URA_GI(1)), URA_GS("word")),
				      URA_G_NOT(URA_G_EQ(URA_G_CALL0(f_none), URA_GI(0)))));
	guard_seed("front", URA_G_AND(URA_G_NOT_EMPTY(URA_X(1)),
				      URA_G_EQ(URA_G_FRONT(URA_X(1)), URA_GI('h')),
				      URA_G_NOT(URA_G_EMPTY(URA_X(1)))));
	guard_seed("neg_ref", URA_G_LT(URA_G_NEG(URA_X(1)), URA_G_REF(&v_i64)));
	guard_seed("bound_atom", URA_G_EQ(URA_G_BOUND, URA_G_ATOM("put")));
	guard_seed("bytes", URA_G_EQ(URA_X(1), URA_GB(bytes, sizeof bytes)));
	guard_seed("field", URA_G_AND(URA_G_FIELD(gstate, done),
				      URA_G_LT(URA_G_FIELD(gstate, level), URA_GD(0.5)),
				      URA_G_EQ(URA_G_FIELD(gstate, who), URA_GS("me"))));
	guard_seed("flag", URA_G_REF(&v_flag));
	guard_seed("str_ref", URA_G_OR(URA_G_EQ(URA_G_REF(&v_str), URA_GS("hello")),
				       URA_G_EQ(URA_G_REF(&v_null), URA_X(1))));
	guard_seed("arith", URA_G_EQ(URA_G_DIV(URA_X(1), URA_X(2)),
				     URA_G_SUB(URA_G_MUL(URA_G_REF(&v_u64), URA_GI(3)),
					       URA_G_ADD(URA_X(3), URA_GI(INT64_MIN)))));
	guard_seed("doubles", URA_G_LE(URA_G_REF(&v_f64),
				       URA_G_MUL(URA_X(1), URA_GD(1e300))));
	guard_seed("atom_value", URA_G_NE(URA_X(4), URA_GA(URA_ATOM("abcdefghij"))));
	guard_seed("and8", URA_G_AND(URA_X(1), URA_X(2), URA_X(3), URA_X(4), URA_X(5),
				     URA_X(6), URA_X(7), URA_X(9)));
	/* As deep as a guard may nest (URA_GUARD_MAX_DEPTH). */
	const ura_guard_node *deep = URA_X(1);
	ura_guard_node chain[URA_GUARD_MAX_DEPTH];
	for (int i = 0; i < URA_GUARD_MAX_DEPTH; i++) {
		chain[i] = (ura_guard_node){ .op = URA__G_NOT, .u.a = deep };
		deep = &chain[i];
	}
	guard_seed("deep", deep);
}

/* ---- snapshots ---------------------------------------------------------- */

struct done {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done, status;
	unsigned long long actors, messages, timers, groups;
};

static void on_done(void *ud, const ura_snap_info *info)
{
	struct done *d = ud;
	pthread_mutex_lock(&d->lock);
	d->status = info->status;
	d->actors = info->actors;
	d->messages = info->messages;
	d->timers = info->timers;
	d->groups = info->groups;
	if (info->status < 0)
		fprintf(stderr, "gen_seeds: snapshot failed: %s\n", info->error ? info->error : "");
	d->done = 1;
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

/* Errors only: destroying a system with stashed messages warns, as it
 * should, and these systems are made to have some. */
static void errors_only(void *ud, int level, const char *msg)
{
	(void)ud;
	if (level == URA_LOG_ERROR)
		fprintf(stderr, "gen_seeds: ura: %s\n", msg);
}

static ura_system *new_system(unsigned workers)
{
	ura_system *sys;
	ura_config cfg = { .workers = workers, .no_pinning = 1, .log = errors_only };
	MUST(ura_system_new(&sys, &cfg));
	MUST(snap_register_all(sys));
	return sys;
}

static unsigned char *read_all(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path, -errno);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *p = malloc(size > 0 ? (size_t)size : 1);
	if (!p || fread(p, 1, (size_t)size, f) != (size_t)size)
		die(path, -EIO);
	fclose(f);
	*n = (size_t)size;
	return p;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Snapshots sys (after `go` lets a napping actor send, if asked), checks
 * the file against snap_frame, and returns it. */
static unsigned char *snapshot(ura_system *sys, const char *name, int with_nap, size_t *n)
{
	char path[256];
	snprintf(path, sizeof path, "/tmp/ura-gen-seeds-%d-%s", (int)getpid(), name);
	struct done d = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
	ura_snap_opts o = { .done = on_done, .ud = &d };
	MUST(ura_snapshot(sys, path, &o));
	if (with_nap)
		atomic_store(&nap_go, 1);
	pthread_mutex_lock(&d.lock);
	while (!d.done)
		pthread_cond_wait(&d.cond, &d.lock);
	pthread_mutex_unlock(&d.lock);
	if (d.status < 0)
		die(name, d.status);
	unsigned char *file = read_all(path, n);
	unlink(path);
	printf("%s: %llu actors, %llu messages in flight, %llu delayed sends, %llu groups\n",
	       name, d.actors, d.messages, d.timers, d.groups);

	/* The fuzzer's own CRC32C and frame against what ura wrote. */
	if (*n < SNAP_HDR + SNAP_TRAILER)
		die(name, -EINVAL);
	size_t blen = *n - SNAP_HDR - SNAP_TRAILER;
	unsigned char *framed = malloc(*n);
	if (!framed)
		die(name, -ENOMEM);
	snap_frame(framed, file + SNAP_HDR, blen);
	/* Bytes 24..55 (id, time, counts) differ, so the header CRC is
	 * checked on ura's own bytes and the frame on everything else. */
	if (snap_crc32c(0, "123456789", 9) != 0xe3069283u ||
	    snap_crc32c(0, file, 56) != le32(file + 56) ||
	    memcmp(framed, file, 24) || memcmp(framed + 60, file + 60, 4) ||
	    memcmp(framed + SNAP_HDR, file + SNAP_HDR, blen + SNAP_TRAILER)) {
		fprintf(stderr, "gen_seeds: %s: fuzz_snapshot's frame or CRC32C differs from "
			"the file ura wrote (did lib/snap/FORMAT.md change?)\n", name);
		failed = 1;
	}
	/* And the framed body restores with the fuzzer's classes. */
	snprintf(path, sizeof path, "/tmp/ura-gen-seeds-%d-%s.framed", (int)getpid(), name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(framed, 1, *n, f) != *n || fclose(f))
		die(path, -EIO);
	ura_system *back;
	ura_config cfg = { .workers = 1, .paused = 1, .log = errors_only };
	MUST(ura_system_new(&back, &cfg));
	MUST(snap_register_all(back));
	long k = ura_restore(back, path, NULL);
	if (k < 0 || (unsigned long long)k != d.actors) {
		fprintf(stderr, "gen_seeds: %s: restoring the framed body gave %ld, want %llu\n",
			name, k, d.actors);
		failed = 1;
	}
	ura_system_destroy(back);
	unlink(path);
	free(framed);
	return file;
}

static void body_seed(const char *name, ura_system *sys, int with_nap)
{
	size_t n;
	unsigned char *file = snapshot(sys, name, with_nap, &n);
	if (outdir)
		write_seed("fuzz_snapshot", name, file + SNAP_HDR, n - SNAP_HDR - SNAP_TRAILER);
	free(file);
}

/* ura_system_await waits for pending delayed sends and receive timeouts
 * too (an hour here), so this waits instead until every message sent but
 * those has been taken and the turns stop. */
static void settle(ura_system *sys)
{
	ura_stats a, b;
	MUST(ura_system_stats(sys, &a));
	for (int i = 0; i < 2000; i++) {
		usleep(5000);
		MUST(ura_system_stats(sys, &b));
		/* A pending delayed send or receive timeout counts as sent. */
		if (b.sent == b.received + b.timers_pending && b.turns == a.turns &&
		    b.received == a.received)
			return;
		a = b;
	}
	fprintf(stderr, "sent %llu received %llu turns %llu pending %llu\n", (unsigned long long)b.sent,
		(unsigned long long)b.received, (unsigned long long)b.turns,
		(unsigned long long)b.timers_pending);
	die("settle", -ETIMEDOUT);
}

static void spawn_n(ura_system *sys, const ura_class *cls, int n, ura_ref *out)
{
	for (int i = 0; i < n; i++)
		MUST(ura_spawn(sys, cls, NULL, &out[i]));
}

static void snapshots(void)
{
	ura_system *sys;
	ura_ref r[8];

	/* One actor saved as its bytes. */
	sys = new_system(1);
	spawn_n(sys, &cell_class, 1, r);
	MUST(ura_send(sys, r[0], A_SET, (int64_t)-12345));
	MUST(ura_system_await(sys));
	body_seed("cell", sys, 0);
	ura_system_destroy(sys);

	/* One of each class. */
	sys = new_system(1);
	spawn_n(sys, &counter_class, 1, r);
	spawn_n(sys, &blob_class, 1, r + 1);
	spawn_n(sys, &cell_class, 1, r + 2);
	spawn_n(sys, &nil_class, 1, r + 3);
	static const unsigned char some[] = "some blob bytes";
	MUST(ura_send(sys, r[0], A_SET, (int64_t)3));
	MUST(ura_send(sys, r[0], A_PEER, r[1]));
	MUST(ura_send(sys, r[1], A_PUT, ura_v_bytes(some, sizeof some)));
	MUST(ura_send(sys, r[2], A_SET, (int64_t)99));
	MUST(ura_system_await(sys));
	body_seed("classes", sys, 0);
	ura_system_destroy(sys);

	/* Counters in every behavior, with bound values, a stash, delayed
	 * sends, a pending receive timeout, and groups. */
	sys = new_system(2);
	spawn_n(sys, &counter_class, 6, r);
	for (int i = 0; i < 6; i++) {
		MUST(ura_send(sys, r[i], A_SET, (int64_t)(i * 100 + 1)));
		MUST(ura_send(sys, r[i], A_PEER, r[(i + 1) % 6]));
	}
	MUST(ura_send(sys, r[0], A_JOIN, "workers"));
	MUST(ura_send(sys, r[1], A_JOIN, "workers"));
	MUST(ura_send(sys, r[2], A_JOIN, "workers"));
	MUST(ura_send(sys, r[3], A_ANON));
	MUST(ura_send(sys, r[0], A_LATER, r[4], (int64_t)(3600 * URA_SEC)));
	MUST(ura_send(sys, r[5], A_LATER, r[5], (int64_t)(60 * URA_SEC)));
	MUST(ura_send(sys, r[1], A_BECOME, (int64_t)0, (int64_t)1));  /* busy, int */
	MUST(ura_send(sys, r[2], A_BECOME, (int64_t)0, (int64_t)4));  /* busy, ref */
	MUST(ura_send(sys, r[3], A_BECOME, (int64_t)2, (int64_t)2));  /* wait, double */
	MUST(ura_send(sys, r[4], A_BECOME, (int64_t)-1, (int64_t)3)); /* idle, atom */
	MUST(ura_send(sys, r[5], A_BECOME, (int64_t)1, (int64_t)0));  /* stash */
	settle(sys);
	MUST(ura_send(sys, r[5], A_SET, (int64_t)5));
	MUST(ura_send(sys, r[5], A_MIX));
	MUST(ura_send(sys, r[5], A_PEER, r[0]));
	settle(sys);
	body_seed("counters", sys, 0);
	ura_system_destroy(sys);

	/* Messages in flight at the cut: r0 naps through the start of the
	 * snapshot, then sends to r1, already saved (it was idle). */
	sys = new_system(2);
	spawn_n(sys, &counter_class, 2, r);
	spawn_n(sys, &blob_class, 1, r + 2);
	MUST(ura_send(sys, r[0], A_PEER, r[1]));
	MUST(ura_send(sys, r[1], A_PEER, r[0]));
	MUST(ura_send(sys, r[1], A_BECOME, (int64_t)1, (int64_t)0)); /* r1 stashes them */
	MUST(ura_system_await(sys));
	atomic_store(&nap_in, 0);
	atomic_store(&nap_go, 0);
	MUST(ura_send(sys, r[0], A_NAP, (int64_t)20000));
	for (int i = 0; i < 10000 && !atomic_load(&nap_in); i++)
		usleep(1000);
	body_seed("in_flight", sys, 1);
	MUST(ura_system_await(sys));
	ura_system_destroy(sys);

	/* Blobs of each length that matters, and the empty state. */
	sys = new_system(1);
	spawn_n(sys, &blob_class, 3, r);
	spawn_n(sys, &nil_class, 2, r + 3);
	static const unsigned char full[60] = { 1, 2, 3 };
	MUST(ura_send(sys, r[1], A_PUT, ura_v_bytes(full, 1)));
	MUST(ura_send(sys, r[2], A_PUT, ura_v_bytes(full, sizeof full)));
	MUST(ura_system_await(sys));
	body_seed("blobs", sys, 0);
	ura_system_destroy(sys);

	/* One whole file, for the header and trailer checks. */
	sys = new_system(1);
	spawn_n(sys, &counter_class, 2, r);
	MUST(ura_send(sys, r[0], A_PEER, r[1]));
	MUST(ura_send(sys, r[1], A_JOIN, "g"));
	MUST(ura_system_await(sys));
	size_t n;
	unsigned char *file = snapshot(sys, "file", 0, &n);
	if (outdir)
		write_seed("fuzz_snapshot", "whole_file", file, n);
	free(file);
	ura_system_destroy(sys);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_seeds DIR | gen_seeds --check\n");
		return 2;
	}
	if (strcmp(argv[1], "--check")) {
		outdir = argv[1];
		guards();
		snapshots();
	} else {
		ura_system *sys = new_system(1);
		ura_ref r[2];
		spawn_n(sys, &counter_class, 2, r);
		MUST(ura_send(sys, r[0], A_PEER, r[1]));
		MUST(ura_send(sys, r[0], A_JOIN, "g"));
		MUST(ura_system_await(sys));
		size_t n;
		free(snapshot(sys, "check", 0, &n));
		ura_system_destroy(sys);
	}
	if (failed)
		return 1;
	printf("gen_seeds: the fuzzer's frame matches ura's files\n");
	return 0;
}
