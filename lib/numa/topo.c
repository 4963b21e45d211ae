/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <stdlib.h>

#include "numa/topo.h"

static int node_of(int cpu, int have_numa)
{
	if (!have_numa)
		return 0;
	int n = numa_node_of_cpu(cpu);
	return n < 0 ? 0 : n;
}

int ura__topo_cpus(int **out)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		return -errno;
	int n = CPU_COUNT(&set);
	if (n <= 0)
		return -ENODEV;
	int *cpus = malloc((size_t)n * sizeof *cpus);
	int *nodes = malloc((size_t)n * sizeof *nodes);
	if (!cpus || !nodes) {
		free(cpus);
		free(nodes);
		return -ENOMEM;
	}
	/* numa_available() < 0 means no NUMA support: one node. */
	int have_numa = numa_available() >= 0;
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < n; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		cpus[k] = c;
		nodes[k] = node_of(c, have_numa);
		k++;
	}
	/* Stable insertion sort by node: workers of one node are adjacent,
	 * so worker order is also the nearest-first stealing order. */
	for (int i = 1; i < k; i++) {
		int c = cpus[i], nd = nodes[i], j = i - 1;
		for (; j >= 0 && nodes[j] > nd; j--) {
			cpus[j + 1] = cpus[j];
			nodes[j + 1] = nodes[j];
		}
		cpus[j + 1] = c;
		nodes[j + 1] = nd;
	}
	free(nodes);
	*out = cpus;
	return k;
}
