/* SPDX-License-Identifier: MIT */
/*
 * fuzz_snapshot: ura_restore on snapshot files (lib/snap/FORMAT.md).
 *
 * A snapshot file is read back after a crash, maybe from damaged storage,
 * maybe from elsewhere: restore must refuse a bad one with nothing made,
 * never crash. The checksums would stop almost every mutation at the
 * door, so the input is the file's body (the records) and this target
 * frames it with a valid header and trailer (snap_classes.h), CRCs
 * recomputed. An input that itself starts with the magic "URASNAP\0" is
 * taken as a whole file instead, so the header checks are fuzzed too.
 *
 * Each input is restored into a new system (ura_restore takes only a
 * fresh, never-started one), created paused with one worker and a silent
 * log, with the classes of snap_classes.h registered; then the system is
 * destroyed, unless the restore failed before making anything: then the
 * system is still new and serves the next input (see fresh_system). Besides what ASan and UBSan catch, it checks that restore
 * returns only the errors ura.h lists, that a successful one maps refs
 * without crashing, that destroy reports only 0 or -EBUSY, and that every
 * actor whose load callback succeeded is destroyed exactly once (by the
 * rollback of a restore that fails later, or by the destroy).
 *
 * The file goes to a memfd, named by /proc/self/fd/N: no disk, no cleanup.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "snap_classes.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) do {                                                       \
	fprintf(stderr, "fuzz_snapshot: " __VA_ARGS__);                      \
	fputc('\n', stderr);                                                 \
	abort();                                                             \
} while (0)

static int fd = -1;
static char path[64];

static void quiet(void *ud, int level, const char *msg)
{
	(void)ud;
	(void)level;
	(void)msg;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fd = memfd_create("fuzz_snapshot", MFD_CLOEXEC);
	if (fd < 0) {
		perror("fuzz_snapshot: memfd_create");
		exit(1);
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return 0;
}

static void put_file(const void *p, size_t n)
{
	if (ftruncate(fd, 0) < 0)
		FAIL("ftruncate: %s", strerror(errno));
	for (size_t off = 0; off < n;) {
		ssize_t k = pwrite(fd, (const char *)p + off, n - off, (off_t)off);
		if (k <= 0)
			FAIL("pwrite: %s", strerror(errno));
		off += (size_t)k;
	}
}

/* A new system, paused, one worker, silent, the classes registered. Made
 * once for many inputs: ura_system_destroy frees each of its 65536 slot
 * chunk pointers, which under ASan (a stack trace per free, NULL or not)
 * takes ~10 ms, 20 times the rest of a restore. */
static ura_system *kept;
static ura_system *fresh_system(void)
{
	if (kept)
		return kept;
	ura_config cfg = { .workers = 1, .paused = 1, .no_pinning = 1, .log = quiet };
	int rc = ura_system_new(&kept, &cfg);
	if (rc < 0)
		FAIL("ura_system_new: %s", ura_strerror(rc));
	if ((rc = snap_register_all(kept)) < 0)
		FAIL("ura_snap_register: %s", ura_strerror(rc));
	return kept;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int rc;
	if (fd < 0)
		LLVMFuzzerInitialize(NULL, NULL);
	if (size >= 8 && !memcmp(data, "URASNAP", 8)) {
		put_file(data, size);
	} else {
		unsigned char *file = malloc(size + SNAP_HDR + SNAP_TRAILER);
		if (!file)
			return 0;
		put_file(file, snap_frame(file, data, size));
		free(file);
	}

	ura_system *sys = fresh_system();
	atomic_store(&snap_loads, 0);
	atomic_store(&snap_destroys, 0);

	ura_snap_map *map = NULL;
	long n = ura_restore(sys, path, &map);
	if (n >= 0) {
		if (!map)
			FAIL("ura_restore restored %ld actors and gave no map", n);
		/* Refs a snapshot might hold: slot 1, generation 0 and 1 */
		static const uint64_t olds[] = { 0, 1, 0x100000001u, UINT64_MAX };
		for (size_t i = 0; i < sizeof olds / sizeof olds[0]; i++)
			(void)ura_snap_map_ref(map, (ura_ref){ olds[i] });
		ura_snap_map_free(map);
	} else {
		if (map)
			FAIL("ura_restore failed (%ld) and gave a map", n);
		/* -EINVAL: the file; -EIO: counter_load's own failure. */
		if (n != -EINVAL && n != -EIO && n != -ENOMEM)
			FAIL("ura_restore returned %ld (%s)", n, ura_strerror((int)n));
		if (atomic_load(&snap_destroys) != atomic_load(&snap_loads))
			FAIL("a failed restore destroyed %ld of the %ld actors it loaded",
			     atomic_load(&snap_destroys), atomic_load(&snap_loads));
		/* Nothing made, so the system is still new (its first check
		 * is that, before it opens the file): keep it for the next
		 * input. A restore that rolled back is not: destroy it here,
		 * so that anything wrong with it shows up on this input. */
		long probe = ura_restore(sys, "/nonexistent/fuzz_snapshot", NULL);
		if (probe == -ENOENT)
			return 0;
		if (probe != -EBUSY)
			FAIL("probing the system after a failed restore: %ld", probe);
	}
	rc = ura_system_destroy(sys);
	kept = NULL;
	if (rc != 0 && rc != -EBUSY)
		FAIL("ura_system_destroy: %s", ura_strerror(rc));
	if (atomic_load(&snap_destroys) != atomic_load(&snap_loads))
		FAIL("%ld destroy callbacks for %ld loaded actors", atomic_load(&snap_destroys),
		     atomic_load(&snap_loads));
	return 0;
}
