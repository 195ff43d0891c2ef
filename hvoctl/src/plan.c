/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "util.h"

int hv_share_pages(uint64_t memtotal_kb, uint64_t reserve_bytes,
		   unsigned percent, uint64_t size_kb, uint64_t *pages)
{
	uint64_t reserve_kb = reserve_bytes / 1024 + (reserve_bytes % 1024 ? 1 : 0);
	uint64_t avail = memtotal_kb > reserve_kb ? memtotal_kb - reserve_kb : 0;
	uint64_t whole, part, q, r, num, den, extra;

	if (size_kb == 0 || percent > 100)
		return -ERANGE;
	/*
	 * floor(avail * percent / 100 / size) without computing avail * percent:
	 * avail = whole * size + part and whole = q * 100 + r, so the result is
	 * q * percent + floor((r * percent * size + part * percent) / (100 * size)),
	 * where the last numerator is below 10100 * size.
	 */
	whole = avail / size_kb;
	part = avail % size_kb;
	q = whole / 100;
	r = whole % 100;
	if (!hv_mul(r * percent, size_kb, &num) || !hv_mul(part, percent, &extra) ||
	    !hv_add(num, extra, &num) || !hv_mul(100, size_kb, &den))
		return -ERANGE;
	if (!hv_add(q * percent, num / den, pages))
		return -ERANGE;
	return 0;
}

static int node_sum(struct hv_target *t, size_t n)
{
	t->global = 0;
	for (size_t i = 0; i < n; i++)
		if (!hv_add(t->global, t->node[i], &t->global))
			return -ERANGE;
	return 0;
}

int hv_plan_build(const struct hv_config *c, const struct hv_state *st,
		  bool next_boot, struct hv_plan *plan)
{
	int ret = 0;

	memset(plan, 0, sizeof(*plan));
	plan->hvo = c->hvo;
	for (size_t k = 0; k < HV_NPOOLS; k++) {
		const struct hv_pool_spec *sp = &c->pool[k];
		struct hv_target *t = &plan->t[k];
		const char *key = hv_pool_keys[k].key;
		bool have_size;

		t->size_kb = hv_pool_keys[k].size_kb;
		t->name = hv_pool_keys[k].name;
		if (sp->kind == HV_POOL_UNSET)
			continue;
		t->managed = true;
		have_size = hv_state_pool((struct hv_state *)st, t->size_kb);
		if (!have_size && !next_boot) {
			hv_err("%s: %s: this kernel has no %s huge pages (%s/hugepages-%llukB missing)",
			       c->path, key, t->name, HV_HP_DIR,
			       (unsigned long long)t->size_kb);
			ret = -1;
			continue;
		}
		/* Kernel parameters are for the next boot, maybe of another
		 * kernel or machine (an image built in a chroot). */
		if (!have_size)
			hv_err("note: %s: %s: the running kernel has no %s huge pages "
			       "(%s/hugepages-%llukB missing); the next boot needs a "
			       "kernel and CPU that have them",
			       c->path, key, t->name, HV_HP_DIR,
			       (unsigned long long)t->size_kb);
		if (sp->kind == HV_POOL_COUNT) {
			t->global = sp->count;
			continue;
		}
		if (st->n_nodes == 0) {
			hv_err("%s: %s: per-node and P%% pools need NUMA information; "
			       "%s is missing", c->path, key, HV_NODE_DIR);
			ret = -1;
			continue;
		}
		t->per_node = true;
		if (sp->kind == HV_POOL_PER_NODE) {
			for (size_t i = 0; i < sp->n_nodes; i++) {
				int idx = hv_state_node_index(st, sp->nodes[i].node);

				if (idx < 0) {
					hv_err("%s: %s: node %d is not online; use an online node "
					       "(see %s/online)", c->path, key,
					       sp->nodes[i].node, HV_NODE_DIR);
					ret = -1;
					continue;
				}
				t->node[idx] = sp->nodes[i].val;
			}
		} else {
			for (size_t i = 0; i < st->n_nodes; i++) {
				const struct hv_node *nd = &st->nodes[i];

				if (!nd->has_memtotal) {
					hv_err("%s: %s: node %d: MemTotal unknown "
					       "(%s/node%d/meminfo); cannot compute %u%%",
					       c->path, key, nd->id, HV_NODE_DIR, nd->id,
					       sp->percent);
					ret = -1;
					continue;
				}
				if (hv_share_pages(nd->memtotal_kb, c->host_reserve,
						   sp->percent, t->size_kb, &t->node[i]) < 0) {
					hv_err("%s: %s: node %d: page count overflows",
					       c->path, key, nd->id);
					ret = -1;
				}
			}
		}
		if (node_sum(t, st->n_nodes) < 0) {
			hv_err("%s: %s: total page count overflows", c->path, key);
			ret = -1;
		}
	}
	return ret;
}

struct sbuf {
	char *buf;
	size_t n, len;
	bool overflow;
};

static void sb_add(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (b->overflow)
		return;
	va_start(ap, fmt);
	r = vsnprintf(b->buf + b->len, b->n - b->len, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= b->n - b->len) {
		b->overflow = true;
		return;
	}
	b->len += (size_t)r;
}

/* " hugepagesz=SIZE hugepages=..." for every managed pool with pages. */
static void cmdline_pools(struct sbuf *b, const struct hv_config *c,
			  const struct hv_state *st, const struct hv_plan *plan,
			  const char *kver, bool per_node_ok)
{
	for (size_t k = 0; k < HV_NPOOLS; k++) {
		const struct hv_target *t = &plan->t[k];

		if (!t->managed || t->global == 0)
			continue;
		/*
		 * With hugetlb_cma= the kernel skips the boot-time allocation of
		 * 1 GiB pages ("hugetlb_cma is enabled, skip boot time
		 * allocation"): the pool is taken from the CMA area by hvoctl
		 * apply in the initramfs and by hvokit.service instead.
		 */
		if (t->size_kb == 1048576 && (c->cma_1g || c->n_cma_nodes))
			continue;
		sb_add(b, " hugepagesz=%s hugepages=", t->name);
		if (t->per_node && per_node_ok) {
			for (size_t i = 0; i < st->n_nodes; i++)
				sb_add(b, "%s%d:%llu", i ? "," : "", st->nodes[i].id,
				       (unsigned long long)t->node[i]);
			continue;
		}
		if (t->per_node)
			hv_err("cmdline: kernel %s: per-node hugepages= needs 5.19 or later; "
			       "using the total %llu for %s, spread by the kernel",
			       kver, (unsigned long long)t->global, t->name);
		sb_add(b, "%llu", (unsigned long long)t->global);
	}
}

/* " hugetlb_cma=..." for CMA_1G, per node where the kernel can. */
static int cmdline_cma(struct sbuf *b, const struct hv_config *c,
		       const struct hv_state *st, const char *kver, bool per_node_ok)
{
	uint64_t total = 0;
	char sz[32];

	if (!c->cma_1g && !c->n_cma_nodes)
		return 0;
	for (size_t i = 0; i < c->n_cma_nodes; i++) {
		if (hv_state_node_index(st, c->cma_nodes[i].node) < 0) {
			hv_err("%s: CMA_1G: node %d is not online; use an online node "
			       "(see %s/online)", c->path, c->cma_nodes[i].node, HV_NODE_DIR);
			return -1;
		}
		if (!hv_add(total, c->cma_nodes[i].val, &total))
			return -1;
	}
	if (!c->n_cma_nodes && !hv_mul(c->cma_1g, st->n_nodes ? st->n_nodes : 1, &total)) {
		hv_err("%s: CMA_1G: total size overflows", c->path);
		return -1;
	}
	if (!per_node_ok || (!c->n_cma_nodes && st->n_nodes == 0)) {
		if (c->n_cma_nodes)
			hv_err("cmdline: kernel %s: per-node hugetlb_cma= needs 5.19 or later; "
			       "using the total, spread by the kernel", kver);
		hv_format_size(total, sz, sizeof(sz));
		sb_add(b, " hugetlb_cma=%s", sz);
		return 0;
	}
	sb_add(b, " hugetlb_cma=");
	for (size_t i = 0; i < c->n_cma_nodes; i++) {
		hv_format_size(c->cma_nodes[i].val, sz, sizeof(sz));
		sb_add(b, "%s%d:%s", i ? "," : "", c->cma_nodes[i].node, sz);
	}
	hv_format_size(c->cma_1g, sz, sizeof(sz));
	for (size_t i = 0; !c->n_cma_nodes && i < st->n_nodes; i++)
		sb_add(b, "%s%d:%s", i ? "," : "", st->nodes[i].id, sz);
	return 0;
}

int hv_cmdline_build(const struct hv_config *c, const struct hv_state *st,
		     const char *kver, char *buf, size_t n)
{
	struct sbuf b = { buf, n, 0, false };
	struct hv_plan plan;
	bool per_node_ok;
	char sz[32];

	if (n == 0)
		return -1;
	buf[0] = '\0';
	if (!kver)
		kver = st->osrelease;
	/* hugepages=N:C,... and hugetlb_cma=N:S,... appeared in 5.19. */
	per_node_ok = hv_kernel_at_least(kver, 5, 19);
	if (hv_plan_build(c, st, true, &plan) < 0)
		return -1;
	sb_add(&b, "hugetlb_free_vmemmap=%s", c->hvo ? "on" : "off");
	if (c->default_hugepagesz_kb) {
		hv_format_kb(c->default_hugepagesz_kb, sz, sizeof(sz));
		sb_add(&b, " default_hugepagesz=%s", sz);
	}
	cmdline_pools(&b, c, st, &plan, kver, per_node_ok);
	if (cmdline_cma(&b, c, st, kver, per_node_ok) < 0)
		return -1;
	if (b.overflow) {
		hv_err("cmdline: result longer than %zu characters", n - 1);
		return -1;
	}
	return 0;
}
