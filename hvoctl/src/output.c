/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include "output.h"
#include "size.h"
#include "util.h"

static const char *boot_str(int b)
{
	return b == HV_BOOT_ON ? "on" : b == HV_BOOT_OFF ? "off" : NULL;
}

static bool hvo_enabled(const struct hv_state *st)
{
	return st->hvo_sysctl == 1;
}

/* ---------- table ---------- */

void hv_print_table(FILE *f, const struct hv_state *st)
{
	struct hv_savings tot;
	char sz[32], h[32];
	const char *b = boot_str(st->hvo_boot);

	fprintf(f, "%-5s %-5s %10s %10s %10s %10s  %s\n", "SIZE", "NODE",
		"TOTAL", "FREE", "RESERVED", "SURPLUS", "MOUNTS");
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct hv_pool *p = &st->pools[i];

		hv_format_kb(p->size_kb, sz, sizeof(sz));
		fprintf(f, "%-5s %-5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64
			" %10" PRIu64 "  ", sz, "all", p->total, p->free, p->resv,
			p->surplus);
		if (p->n_mounts == 0)
			fputs("-", f);
		for (size_t m = 0; m < p->n_mounts; m++)
			fprintf(f, "%s%s", m ? "," : "", p->mounts[m]);
		fputc('\n', f);
		for (size_t n = 0; n < p->n_nodes; n++) {
			const struct hv_node_pool *np = &p->nodes[n];

			fprintf(f, "%-5s %-5d %10" PRIu64 " %10" PRIu64 " %10s %10"
				PRIu64 "\n", sz, np->node, np->total, np->free, "-",
				np->surplus);
		}
	}
	if (st->n_pools == 0)
		fputs("(no huge page sizes: kernel without hugetlb support?)\n", f);

	fprintf(f, "\nHVO: %s; boot parameter %s%s; vm.hugetlb_optimize_vmemmap %s\n",
		st->hvo_supported ? "supported" : "not supported by this kernel",
		b ? "hugetlb_free_vmemmap=" : "", b ? b : "not set",
		st->hvo_sysctl < 0 ? "absent" : st->hvo_sysctl ? "= 1 (on)" : "= 0 (off)");
	fprintf(f, "%-5s %10s %10s %10s %12s  %s\n", "SIZE", "OPTIMIZED", "FREED",
		"PGTABLE", "SAVED", "SOURCE");
	for (size_t i = 0; i < st->n_pools; i++) {
		struct hv_savings sv;

		hv_pool_savings(st, &st->pools[i], &sv);
		hv_format_kb(st->pools[i].size_kb, sz, sizeof(sz));
		hv_format_human(sv.saved_bytes, h, sizeof(h));
		fprintf(f, "%-5s %10" PRIu64 " %10" PRIu64 " %10" PRIu64 " %12s  %s\n",
			sz, sv.optimized, sv.freed, sv.pgtable, h,
			sv.from_kernel ? "kernel" : "estimate");
	}
	hv_total_savings(st, &tot);
	hv_format_human(tot.saved_bytes, h, sizeof(h));
	fprintf(f, "Saved: %s (%s)\n", h,
		st->has_meminfo_saved ? "kernel, HugetlbVmemmapSaved" :
		tot.from_kernel ? "kernel counters" :
		"estimate: assumes all pages were allocated with HVO on");
}

/* ---------- JSON ---------- */

void hv_json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void json_savings(FILE *f, const struct hv_savings *sv, uint64_t expected)
{
	fprintf(f, "{\"source\": \"%s\", \"optimized_pages\": %" PRIu64
		", \"freed_pages\": %" PRIu64 ", \"pgtable_pages\": %" PRIu64
		", \"saved_bytes\": %" PRId64,
		sv->from_kernel ? "kernel" : "estimate", sv->optimized, sv->freed,
		sv->pgtable, sv->saved_bytes);
	if (expected != UINT64_MAX)
		fprintf(f, ", \"expected_freed_per_page\": %" PRIu64, expected);
	fputc('}', f);
}

void hv_print_json(FILE *f, const struct hv_state *st)
{
	struct hv_savings tot;
	const char *b = boot_str(st->hvo_boot);
	char sz[32];

	fputs("{\n  \"hvo\": {", f);
	fprintf(f, "\"kernel_support\": %s, \"boot_parameter\": ",
		st->hvo_supported ? "true" : "false");
	if (b)
		hv_json_string(f, b);
	else
		fputs("null", f);
	fputs(", \"sysctl\": ", f);
	if (st->hvo_sysctl < 0)
		fputs("null", f);
	else
		fprintf(f, "%d", st->hvo_sysctl);
	fprintf(f, ", \"enabled\": %s},\n", hvo_enabled(st) ? "true" : "false");
	fputs("  \"kernel\": ", f);
	hv_json_string(f, st->osrelease);
	fputs(",\n  \"default_size_kb\": ", f);
	if (st->default_size_kb)
		fprintf(f, "%" PRIu64, st->default_size_kb);
	else
		fputs("null", f);
	fputs(",\n  \"nodes\": [", f);
	for (size_t i = 0; i < st->n_nodes; i++) {
		fprintf(f, "%s{\"node\": %d, \"mem_total_kb\": ", i ? ", " : "",
			st->nodes[i].id);
		if (st->nodes[i].has_memtotal)
			fprintf(f, "%" PRIu64 "}", st->nodes[i].memtotal_kb);
		else
			fputs("null}", f);
	}
	fputs("],\n  \"pools\": [", f);
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct hv_pool *p = &st->pools[i];
		struct hv_savings sv;

		hv_format_kb(p->size_kb, sz, sizeof(sz));
		fprintf(f, "%s\n    {\"size\": \"%s\", \"size_kb\": %" PRIu64
			", \"total\": %" PRIu64 ", \"free\": %" PRIu64
			", \"reserved\": %" PRIu64 ", \"surplus\": %" PRIu64
			", \"overcommit\": %" PRIu64 ",\n     \"mounts\": [",
			i ? "," : "", sz, p->size_kb, p->total, p->free, p->resv,
			p->surplus, p->overcommit);
		for (size_t m = 0; m < p->n_mounts; m++) {
			if (m)
				fputs(", ", f);
			hv_json_string(f, p->mounts[m]);
		}
		fputs("],\n     \"nodes\": [", f);
		for (size_t n = 0; n < p->n_nodes; n++) {
			const struct hv_node_pool *np = &p->nodes[n];

			fprintf(f, "%s\n       {\"node\": %d, \"total\": %" PRIu64
				", \"free\": %" PRIu64 ", \"reserved\": null, \"surplus\": %"
				PRIu64, n ? "," : "", np->node, np->total, np->free,
				np->surplus);
			if (np->has_counters)
				fprintf(f, ", \"vmemmap_optimized_pages\": %" PRIu64
					", \"vmemmap_freed_pages\": %" PRIu64,
					np->optimized, np->freed);
			fputc('}', f);
		}
		fputs("],\n     \"hvo\": ", f);
		hv_pool_savings(st, p, &sv);
		json_savings(f, &sv, hv_expected_freed(p->size_kb));
		fputc('}', f);
	}
	fputs("],\n  \"savings\": ", f);
	hv_total_savings(st, &tot);
	json_savings(f, &tot, UINT64_MAX);
	fputs(",\n  \"meminfo_saved_kb\": ", f);
	if (st->has_meminfo_saved)
		fprintf(f, "%" PRId64, st->meminfo_saved_kb);
	else
		fputs("null", f);
	fputs("\n}\n", f);
}

/* ---------- Prometheus ---------- */

static void metric_head(FILE *f, const char *name, const char *help)
{
	fprintf(f, "# HELP hvokit_%s %s\n# TYPE hvokit_%s gauge\n", name, help, name);
}

/* One savings figure (a uint64_t of struct hv_savings at @off) per pool. */
static void metric_savings(FILE *f, const struct hv_state *st, const char *name,
			   const char *help, size_t off)
{
	char sz[32];

	metric_head(f, name, help);
	for (size_t i = 0; i < st->n_pools; i++) {
		struct hv_savings sv;
		uint64_t v;

		hv_pool_savings(st, &st->pools[i], &sv);
		memcpy(&v, (const char *)&sv + off, sizeof(v));
		hv_format_kb(st->pools[i].size_kb, sz, sizeof(sz));
		fprintf(f, "hvokit_%s{size=\"%s\",source=\"%s\"} %" PRIu64 "\n", name, sz,
			sv.from_kernel ? "kernel" : "estimate", v);
	}
}

static void pool_metric(FILE *f, const struct hv_state *st, const char *name,
			const char *help, size_t off)
{
	char sz[32];

	metric_head(f, name, help);
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct hv_pool *p = &st->pools[i];
		uint64_t v;

		memcpy(&v, (const char *)p + off, sizeof(v));
		hv_format_kb(p->size_kb, sz, sizeof(sz));
		fprintf(f, "hvokit_%s{size=\"%s\"} %" PRIu64 "\n", name, sz, v);
	}
}

static void node_metric(FILE *f, const struct hv_state *st, const char *name,
			const char *help, size_t off, bool counters)
{
	char sz[32];
	bool head = false;

	for (size_t i = 0; i < st->n_pools; i++) {
		const struct hv_pool *p = &st->pools[i];

		hv_format_kb(p->size_kb, sz, sizeof(sz));
		for (size_t n = 0; n < p->n_nodes; n++) {
			const struct hv_node_pool *np = &p->nodes[n];
			uint64_t v;

			if (counters && !np->has_counters)
				continue;
			if (!head) {
				metric_head(f, name, help);
				head = true;
			}
			memcpy(&v, (const char *)np + off, sizeof(v));
			fprintf(f, "hvokit_%s{size=\"%s\",node=\"%d\"} %" PRIu64 "\n",
				name, sz, np->node, v);
		}
	}
}

void hv_print_metrics(FILE *f, const struct hv_state *st)
{
	struct hv_savings tot;
	char sz[32];

	metric_head(f, "hvo_supported", "1 if the kernel supports HugeTLB Vmemmap Optimization.");
	fprintf(f, "hvokit_hvo_supported %d\n", st->hvo_supported ? 1 : 0);
	metric_head(f, "hvo_enabled", "Value of vm.hugetlb_optimize_vmemmap (0 if absent).");
	fprintf(f, "hvokit_hvo_enabled %d\n", hvo_enabled(st) ? 1 : 0);
	metric_head(f, "hvo_boot_parameter", "hugetlb_free_vmemmap= on the kernel command line: 1 on, 0 off, -1 not set.");
	fprintf(f, "hvokit_hvo_boot_parameter %d\n", st->hvo_boot);
	pool_metric(f, st, "hugepages_pool", "Huge pages in the pool.",
		    offsetof(struct hv_pool, total));
	pool_metric(f, st, "hugepages_free", "Free huge pages in the pool.",
		    offsetof(struct hv_pool, free));
	pool_metric(f, st, "hugepages_reserved", "Reserved (promised, not yet faulted) huge pages.",
		    offsetof(struct hv_pool, resv));
	pool_metric(f, st, "hugepages_surplus", "Surplus (overcommitted) huge pages.",
		    offsetof(struct hv_pool, surplus));
	node_metric(f, st, "node_hugepages_pool", "Huge pages in the pool of a NUMA node.",
		    offsetof(struct hv_node_pool, total), false);
	node_metric(f, st, "node_hugepages_free", "Free huge pages of a NUMA node.",
		    offsetof(struct hv_node_pool, free), false);
	node_metric(f, st, "node_hugepages_surplus", "Surplus huge pages of a NUMA node.",
		    offsetof(struct hv_node_pool, surplus), false);
	node_metric(f, st, "node_vmemmap_optimized_pages",
		    "Huge pages of a NUMA node whose vmemmap is optimized (kernel counter).",
		    offsetof(struct hv_node_pool, optimized), true);
	node_metric(f, st, "node_vmemmap_freed_pages",
		    "Base vmemmap pages HVO gives back on a NUMA node (kernel counter).",
		    offsetof(struct hv_node_pool, freed), true);
	metric_head(f, "hugetlbfs_mounts", "hugetlbfs mounts per page size.");
	for (size_t i = 0; i < st->n_pools; i++) {
		hv_format_kb(st->pools[i].size_kb, sz, sizeof(sz));
		fprintf(f, "hvokit_hugetlbfs_mounts{size=\"%s\"} %zu\n", sz,
			st->pools[i].n_mounts);
	}
	metric_savings(f, st, "vmemmap_optimized_pages",
		       "Huge pages whose vmemmap is optimized; source=estimate without kernel counters.",
		       offsetof(struct hv_savings, optimized));
	metric_savings(f, st, "vmemmap_freed_pages", "Base 4 KiB vmemmap pages given back by HVO.",
		       offsetof(struct hv_savings, freed));
	metric_savings(f, st, "vmemmap_pgtable_pages",
		       "Page-table pages allocated to split vmemmap PMDs.",
		       offsetof(struct hv_savings, pgtable));
	hv_total_savings(st, &tot);
	metric_head(f, "vmemmap_saved_bytes", "Memory HVO saves now, net of page tables (may be negative).");
	fprintf(f, "hvokit_vmemmap_saved_bytes{source=\"%s\"} %" PRId64 "\n",
		tot.from_kernel ? "kernel" : "estimate", tot.saved_bytes);
}
