/* SPDX-License-Identifier: MIT */
/* The CPUs workers run on, grouped by NUMA node. */
#ifndef URA_TOPO_H
#define URA_TOPO_H

/* Fills *cpus (malloc'd, free it) with the CPUs this process may run on,
 * node by node (libnuma when it reports NUMA, otherwise affinity order).
 * Returns the count (>= 1) or -errno. */
int ura__topo_cpus(int **cpus);

#endif
