/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <numa.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/topo.h"
#include "util/util.h"

#define MAX_SIM_CPUS 1024

void ura__topo_free(struct ura__topo *t)
{
	free(t->cpu);
	free(t->node);
	free(t->node_id);
	memset(t, 0, sizeof *t);
}

static int alloc_entries(struct ura__topo *t, int n)
{
	t->cpu = ura__calloc((size_t)n, sizeof *t->cpu);
	t->node = ura__calloc((size_t)n, sizeof *t->node);
	t->node_id = ura__calloc((size_t)n, sizeof *t->node_id);
	if (!t->cpu || !t->node || !t->node_id) {
		ura__topo_free(t);
		return -ENOMEM;
	}
	t->n = n;
	return 0;
}

/* Maps kernel node numbers to dense indices, in order of first use, and
 * sorts entries by node (stable) so a node's workers are adjacent: worker
 * order is then also the nearest-first stealing order. */
static void densify(struct ura__topo *t, const int *raw)
{
	int k = 0;
	for (int i = 0; i < t->n; i++) {
		int d = -1;
		for (int j = 0; j < k; j++)
			if (t->node_id[j] == raw[i])
				d = j;
		if (d < 0) {
			t->node_id[k] = raw[i];
			d = k++;
		}
		t->node[i] = d;
	}
	t->nnodes = k;
	for (int i = 1; i < t->n; i++) {
		int c = t->cpu[i], nd = t->node[i], j = i - 1;
		for (; j >= 0 && t->node[j] > nd; j--) {
			t->cpu[j + 1] = t->cpu[j];
			t->node[j + 1] = t->node[j];
		}
		t->cpu[j + 1] = c;
		t->node[j + 1] = nd;
	}
}

/*
 * URA_TOPOLOGY: either "NxC" (N nodes of C CPUs each, e.g. "2x1") or an
 * explicit list of the node of each CPU, "0,0,1,1" (CPU i is on the i-th
 * node number; numbers may be sparse, e.g. "0,2"). In simulation nothing is
 * pinned or bound: the layout only steers placement, batching and stealing.
 */
int ura__topo_parse(const char *spec, struct ura__topo *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	const char *p = spec;
	char *end;
	if (!spec || !*spec) {
		snprintf(err, errlen, "URA_TOPOLOGY is empty");
		return -EINVAL;
	}
	if (strchr(spec, 'x')) {
		errno = 0;
		long nodes = strtol(p, &end, 10);
		if (end == p || *end != 'x' || errno)
			goto bad;
		p = end + 1;
		long per = strtol(p, &end, 10);
		if (end == p || *end || errno)
			goto bad;
		if (nodes < 1 || per < 1 || nodes * per > MAX_SIM_CPUS) {
			snprintf(err, errlen, "URA_TOPOLOGY=%s: nodes and CPUs per node must be "
				 ">= 1, at most %d CPUs in all", spec, MAX_SIM_CPUS);
			return -EINVAL;
		}
		int rc = alloc_entries(t, (int)(nodes * per));
		if (rc)
			return rc;
		int *raw = ura__calloc((size_t)t->n, sizeof *raw);
		if (!raw) {
			ura__topo_free(t);
			return -ENOMEM;
		}
		for (int i = 0; i < t->n; i++) {
			raw[i] = (int)(i / per);
			t->cpu[i] = -1;
		}
		densify(t, raw);
		free(raw);
		t->simulated = 1;
		return 0;
	}
	int count = 1;
	for (const char *q = spec; *q; q++)
		count += *q == ',';
	if (count > MAX_SIM_CPUS) {
		snprintf(err, errlen, "URA_TOPOLOGY=%s: at most %d CPUs", spec, MAX_SIM_CPUS);
		return -EINVAL;
	}
	int rc = alloc_entries(t, count);
	if (rc)
		return rc;
	int *raw = ura__calloc((size_t)count, sizeof *raw);
	if (!raw) {
		ura__topo_free(t);
		return -ENOMEM;
	}
	for (int i = 0; i < count; i++) {
		if (!isdigit((unsigned char)*p)) {
			free(raw);
			ura__topo_free(t);
			goto bad;
		}
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || v > 1023 || (*end && *end != ',') || (*end == ',' && i == count - 1)) {
			free(raw);
			ura__topo_free(t);
			goto bad;
		}
		raw[i] = (int)v;
		t->cpu[i] = -1;
		p = *end ? end + 1 : end;
	}
	densify(t, raw);
	free(raw);
	t->simulated = 1;
	return 0;
bad:
	snprintf(err, errlen, "URA_TOPOLOGY=%s: expected NODESxCPUS (e.g. 2x1) or the "
		 "node of each CPU (e.g. 0,0,1,1)", spec);
	return -EINVAL;
}

/* libnuma's answer, or sysfs's when libnuma has none (no NUMA support
 * compiled in or reported): both read /sys/devices/system/node. */
static int node_of_cpu(int cpu, int have_numa)
{
	if (have_numa) {
		int n = numa_node_of_cpu(cpu);
		if (n >= 0)
			return n;
	}
	for (int node = 0; node < 1024; node++) {
		char path[96];
		snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpu%d", node, cpu);
		FILE *f = fopen(path, "r");
		if (f) {
			fclose(f);
			return node;
		}
		if (node > 64) /* nodes are dense in practice; stop looking */
			break;
	}
	return 0;
}

int ura__topo_discover(struct ura__topo *t, char *err, size_t errlen)
{
	const char *spec = getenv("URA_TOPOLOGY");
	if (spec && *spec)
		return ura__topo_parse(spec, t, err, errlen);
	memset(t, 0, sizeof *t);
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) < 0)
		return -errno;
	int n = CPU_COUNT(&set);
	if (n <= 0)
		return -ENODEV;
	int rc = alloc_entries(t, n);
	if (rc)
		return rc;
	int *raw = ura__calloc((size_t)n, sizeof *raw);
	if (!raw) {
		ura__topo_free(t);
		return -ENOMEM;
	}
	/* numa_available() < 0: no NUMA support, so one node (sysfs may still
	 * say more on odd kernels; it is asked per CPU below). */
	int have_numa = numa_available() >= 0;
	int k = 0;
	for (int c = 0; c < CPU_SETSIZE && k < n; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		t->cpu[k] = c;
		/* A CPU listed under several nodes (fake NUMA) gets the first;
		 * CPU-less memory nodes never appear here at all. */
		raw[k] = node_of_cpu(c, have_numa);
		k++;
	}
	t->n = k;
	densify(t, raw);
	free(raw);
	return 0;
}

int ura__topo_mem_allowed(int node)
{
	if (numa_available() < 0)
		return 1;
	/* A node whose CPUs we may use but whose memory our cpuset forbids:
	 * binding there would fail, so its workers keep first-touch memory. */
	struct bitmask *m = numa_get_mems_allowed();
	if (!m)
		return 1;
	int ok = node >= 0 && (unsigned)node < m->size && numa_bitmask_isbitset(m, (unsigned)node);
	numa_bitmask_free(m);
	return ok;
}

int ura__node_cpuset(const ura_system *sys, unsigned node, cpu_set_t *set)
{
	CPU_ZERO(set);
	int any = 0;
	for (unsigned i = 0; i < sys->nworkers; i++)
		if (sys->workers[i].node == node && sys->workers[i].cpu >= 0) {
			CPU_SET(sys->workers[i].cpu, set);
			any = 1;
		}
	return any && !sys->simulated;
}
