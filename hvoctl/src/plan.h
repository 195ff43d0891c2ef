/* SPDX-License-Identifier: GPL-2.0-or-later */
/* From config + host state to pool targets and kernel parameters. */
#ifndef HVOCTL_PLAN_H
#define HVOCTL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "pools.h"

struct hv_target {
	uint64_t size_kb;
	const char *name;       /* "1G" */
	bool managed;           /* false: config leaves this size alone */
	bool per_node;          /* node[] valid, else global */
	uint64_t global;        /* total pages (sum of node[] if per_node) */
	uint64_t node[HV_MAX_NODES]; /* indexed like hv_state.nodes */
};

struct hv_plan {
	bool hvo;
	struct hv_target t[HV_NPOOLS]; /* indexed like hv_pool_keys */
};

/* Pages a P% share of a node gives: floor((memtotal - reserve) * P% / size).
 * Returns 0 or -ERANGE. */
int hv_share_pages(uint64_t memtotal_kb, uint64_t reserve_bytes,
		   unsigned percent, uint64_t size_kb, uint64_t *pages);

/* Compute targets.  Prints errors (unknown node, missing pool size, no
 * NUMA info); returns 0 or -1.  next_boot: the targets are for kernel
 * parameters, so a page size the running kernel lacks is only a note. */
int hv_plan_build(const struct hv_config *c, const struct hv_state *st,
		  bool next_boot, struct hv_plan *plan);

/* Kernel parameters for the config, for a kernel of release kver (NULL:
 * the running one from the state).  Warnings about older kernels go to the
 * diagnostic stream.  Returns 0 or -1. */
int hv_cmdline_build(const struct hv_config *c, const struct hv_state *st,
		     const char *kver, char *buf, size_t n);

#endif
