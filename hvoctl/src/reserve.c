/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "util.h"

static void compact(const struct hv_sys *s, int node)
{
	char rel[128], full[PATH_MAX];
	int e;

	if (node < 0)
		snprintf(rel, sizeof(rel), "/proc/sys/vm/compact_memory");
	else
		snprintf(rel, sizeof(rel), HV_NODE_DIR "/node%d/compact", node);
	e = hv_write_str(s, rel, "1");
	if (e < 0) {
		/* Not fatal: the retry may still succeed. */
		hv_path(s, full, sizeof(full), rel);
		hv_err("compact: %s: %s; retrying without compaction", full, strerror(-e));
	}
}

int hv_reserve(const struct hv_sys *s, uint64_t size_kb, int node,
	       uint64_t target, const struct hv_reserve_opts *o,
	       struct hv_reserve_result *res)
{
	char nr[256], fr[256], gfree[256], gresv[256], name[32], where[64];
	uint64_t total, free, used, back;

	memset(res, 0, sizeof(*res));
	res->asked = target;
	hv_format_kb(size_kb, name, sizeof(name));
	if (node < 0)
		snprintf(where, sizeof(where), "%s pool", name);
	else
		snprintf(where, sizeof(where), "%s pool node %d", name, node);
	hv_pool_file(nr, sizeof(nr), size_kb, node, "nr_hugepages");
	hv_pool_file(fr, sizeof(fr), size_kb, node, "free_hugepages");
	hv_pool_file(gfree, sizeof(gfree), size_kb, -1, "free_hugepages");
	hv_pool_file(gresv, sizeof(gresv), size_kb, -1, "resv_hugepages");
	if (hv_read_u64_report(s, nr, &total) < 0 || hv_read_u64_report(s, fr, &free) < 0)
		return -1;
	res->before = res->after = total;
	/* Pages in use can never go; reserved pages are promised to a
	 * mapping and are counted as free, so keep them too. */
	used = free <= total ? total - free : total;
	res->floor = used;
	{
		uint64_t gf, gr;

		if (hv_read_u64_report(s, gresv, &gr) < 0 ||
		    hv_read_u64_report(s, gfree, &gf) < 0)
			return -1;
		if (node < 0) {
			res->floor = hv_add_sat(used, gr);
		} else {
			/* Taking k pages from this node lowers the global free
			 * count by k; it must stay >= reserved. */
			uint64_t spare = gf > gr ? gf - gr : 0;
			uint64_t lim = total > spare ? total - spare : 0;

			if (lim > res->floor)
				res->floor = lim;
		}
		if (res->floor > total)
			res->floor = total;
	}
	if (target == total)
		return 0;
	if (target < total) {
		uint64_t want = target < res->floor ? res->floor : target;

		if (want == total) {
			res->status = HV_RES_IN_USE;
			return 0;
		}
		res->attempts++;
		if (hv_write_u64_report(s, nr, want, &back) < 0)
			return -1;
		res->after = back;
		if (back > target)
			res->status = HV_RES_IN_USE;
		return 0;
	}
	/* Grow. */
	for (unsigned attempt = 0;; attempt++) {
		res->attempts++;
		if (hv_write_u64_report(s, nr, target, &back) < 0)
			return -1;
		res->after = back;
		if (back >= target || attempt >= o->retries)
			break;
		if (!o->quiet)
			hv_err("reserve: %s: got %llu of %llu pages; %s and retrying (%u/%u)",
			       where, (unsigned long long)back,
			       (unsigned long long)target,
			       o->compact ? "compacting memory" : "waiting",
			       attempt + 1, o->retries);
		if (o->compact)
			compact(s, node);
		hv_sleep_ms(o->delay_ms);
	}
	if (res->after > target) {
		/* Never leave more than asked (e.g. a racing writer). */
		res->attempts++;
		if (hv_write_u64_report(s, nr, target, &back) < 0)
			return -1;
		res->after = back;
	}
	if (res->after < target)
		res->status = HV_RES_PARTIAL;
	return 0;
}
