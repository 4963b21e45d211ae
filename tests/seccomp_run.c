/* SPDX-License-Identifier: MIT */
/*
 * seccomp_run PROGRAM [ARGS...]: runs PROGRAM with io_uring_setup refused
 * by a seccomp filter (tests/seccomp.h), so that the whole suite runs on
 * the fallback the way it would in a default Docker container:
 *	meson test --wrapper build/tests/seccomp_run
 * (scripts/test --seccomp). Not a test itself.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "seccomp.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: seccomp_run PROGRAM [ARGS...]\n");
		return 2;
	}
	int rc = block_io_uring();
	if (rc < 0) {
		fprintf(stderr, "seccomp_run: cannot install the filter: %s\n", strerror(-rc));
		return 1;
	}
	execvp(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
