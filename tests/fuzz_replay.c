/* SPDX-License-Identifier: MIT */
/*
 * fuzz_replay DIR: runs one fuzz target's harness (fuzz/fuzz_*.c, linked
 * in without libFuzzer) on every file of its corpus, one TAP line each,
 * so that the seeds and every input fuzzing once found (fuzz/corpus/)
 * are checked by every build, the sanitizer builds included, without
 * clang. Each file runs in a child: a harness reports a bug by aborting.
 * A file named todo-* is a known, unfixed bug: its line carries a TAP
 * TODO directive, so it is reported without failing the suite.
 */
#include <dirent.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 2;
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap);
	for (size_t k; buf && (k = fread(buf + n, 1, cap - n, f)) > 0;) {
		n += k;
		if (n == cap) {
			unsigned char *nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	fclose(f);
	if (!buf)
		return 2;
	/* An exact-size copy, as libFuzzer gives: a read past the end is
	 * caught by ASan. */
	unsigned char *exact = malloc(n ? n : 1);
	if (!exact)
		return 2;
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	DIR *d = opendir(argv[1]);
	if (!d) {
		printf("Bail out! cannot open %s\n", argv[1]);
		return 1;
	}
	char **names = NULL;
	size_t n = 0;
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		char **nn = realloc(names, (n + 1) * sizeof *names);
		if (!nn || !(nn[n] = strdup(e->d_name))) {
			printf("Bail out! out of memory\n");
			return 1;
		}
		names = nn;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(replay(path));
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid)
			st = -1;
		int ok = st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
		int todo = !strncmp(names[i], "todo-", 5);
		t_count++;
		if (!ok && !todo)
			t_failed++;
		printf("%sok %d - %s%s\n", ok ? "" : "not ", t_count, names[i],
		       todo ? " # TODO a known bug, not fixed yet (fuzz/README.md)" : "");
		if (!ok && st != -1)
			printf("#   %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exit status",
			       WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		free(names[i]);
	}
	free(names);
	return t_done();
}
