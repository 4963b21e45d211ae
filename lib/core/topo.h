/* SPDX-License-Identifier: MIT */
/*
 * The CPUs workers run on, grouped by NUMA node: read from libnuma (sysfs
 * when libnuma has nothing), intersected with the process's CPU affinity,
 * or simulated with URA_TOPOLOGY so every cross-node path runs on a
 * one-node machine.
 */
#ifndef URA_CORE_TOPO_H
#define URA_CORE_TOPO_H

#include <stddef.h>

struct ura__topo {
	int n;          /* usable CPUs (simulated ones, with URA_TOPOLOGY) */
	int *cpu;       /* per entry: the CPU to pin to, -1 in simulation */
	int *node;      /* per entry: dense node index 0..nnodes-1 */
	int nnodes;     /* nodes that have usable CPUs */
	int *node_id;   /* per dense node: the kernel's node number */
	int simulated;  /* URA_TOPOLOGY was set */
};

/* Fills t. Returns 0, -EINVAL for a bad URA_TOPOLOGY (why is written to
 * err), or -errno. Free with ura__topo_free. */
int ura__topo_discover(struct ura__topo *t, char *err, size_t errlen);
/* Parses a URA_TOPOLOGY string into t (exposed for tests). */
int ura__topo_parse(const char *spec, struct ura__topo *t, char *err, size_t errlen);
void ura__topo_free(struct ura__topo *t);
/* May this process allocate memory on kernel node `node` (cpuset
 * mems_allowed)? True when libnuma cannot tell. */
int ura__topo_mem_allowed(int node);

#endif
