/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Grow or shrink one huge page pool (global or one node), safely. */
#ifndef HVOCTL_RESERVE_H
#define HVOCTL_RESERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "sysfs.h"

struct hv_reserve_opts {
	unsigned retries;     /* extra attempts when growing falls short */
	bool compact;         /* compact memory before each retry */
	unsigned delay_ms;    /* pause before each retry */
	bool quiet;           /* no progress messages */
};
#define HV_RESERVE_OPTS_DEFAULT { .retries = 3, .compact = true, .delay_ms = 200 }

enum hv_reserve_status {
	HV_RES_OK = 0,      /* pool is at the target */
	HV_RES_PARTIAL,     /* grow obtained fewer pages than asked */
	HV_RES_IN_USE,      /* shrink stopped at pages in use or reserved */
};

struct hv_reserve_result {
	uint64_t before;    /* pages before */
	uint64_t asked;     /* target */
	uint64_t after;     /* pages now (read back) */
	uint64_t floor;     /* lowest count that leaves used/reserved pages */
	unsigned attempts;  /* writes of nr_hugepages */
	enum hv_reserve_status status;
};

/* Bring the pool of size_kb (node < 0: global pool, else that node) to
 * target pages.  Growing retries with compaction and never leaves more than
 * target; shrinking never asks below total - free (+ reserved).
 * Progress goes to the diagnostic stream.  Returns 0 (see res->status) or
 * -1 on an I/O error (printed). */
int hv_reserve(const struct hv_sys *s, uint64_t size_kb, int node,
	       uint64_t target, const struct hv_reserve_opts *o,
	       struct hv_reserve_result *res);

#endif
