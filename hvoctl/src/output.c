/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stddef.h>
#include <string.h>

#include <json-c/json.h>

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

static const char *memmap_str(enum hv_memmap m)
{
	return m == HV_MEMMAP_DEVICE ? "device" : "ram";
}

/* ---------- table ---------- */

/* How many of an instance's guests are named in d->guests */
static size_t devdax_guests_named(const struct hv_devdax *d)
{
	return d->n_guests < HV_DEVDAX_SHOWN_GUESTS ? d->n_guests : HV_DEVDAX_SHOWN_GUESTS;
}

/* "vm1,vm2 (+3)", or "-" when no running guest uses the instance */
static void print_devdax_guests(FILE *f, const struct hv_devdax *d)
{
	size_t shown = devdax_guests_named(d);

	if (d->n_guests == 0)
		fputs("-", f);
	for (size_t i = 0; i < shown; i++)
		fprintf(f, "%s%s", i ? "," : "", d->guests[i]);
	if (d->n_guests > shown)
		fprintf(f, " (+%zu)", d->n_guests - shown);
	fputc('\n', f);
}

/* Device-dax instances, when the host has any: not huge pages, but their
 * memmap is deduplicated too (compound pages) when it lives in RAM. */
static void print_devdax_table(FILE *f, const struct hv_state *st)
{
	char sz[32], al[32], h[32], node[16];

	if (st->n_devdax == 0)
		return;
	fprintf(f, "\nDevice-DAX:\n%-10s %10s %6s %5s %7s %9s %12s  %-8s  %s\n", "DEVICE",
		"SIZE", "ALIGN", "NODE", "MEMMAP", "STATE", "SAVED", "SOURCE", "GUESTS");
	for (size_t i = 0; i < st->n_devdax; i++) {
		const struct hv_devdax *d = &st->devdax[i];

		hv_format_human((int64_t)(d->size > INT64_MAX ? INT64_MAX : d->size), sz,
				sizeof(sz));
		hv_format_kb(d->align / 1024, al, sizeof(al));
		hv_format_human((int64_t)(d->saved_bytes > INT64_MAX ? INT64_MAX :
					  d->saved_bytes), h, sizeof(h));
		if (d->node < 0)
			snprintf(node, sizeof(node), "-");
		else
			snprintf(node, sizeof(node), "%d", d->node);
		fprintf(f, "%-10s %10s %6s %5s %7s %9s %12s  %-8s  ", d->name, sz, al, node,
			memmap_str(d->memmap), d->enabled ? "enabled" : "disabled", h,
			d->has_saved ? "kernel" : "estimate");
		print_devdax_guests(f, d);
	}
	if (st->has_meminfo_dev_saved) {
		hv_format_human((int64_t)(st->meminfo_dev_saved_kb * 1024), h, sizeof(h));
		fprintf(f, "Saved by device-dax: %s (kernel, DeviceVmemmapSaved)\n", h);
	}
}

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
	print_devdax_table(f, st);
}

/* ---------- JSON (json-c) ---------- */

/* Strings from the host (mount paths, kernel release) may hold any bytes:
 * JSON needs UTF-8, json-c does not check it, so bad bytes become U+FFFD. */
static json_object *jstr(const char *s)
{
	char clean[3 * 1024 + 1];

	hv_utf8_clean(s, clean, sizeof(clean));
	return json_object_new_string(clean);
}

static json_object *ju64(uint64_t v)
{
	/* json-c's integers are int64_t; no page count comes near 2^63. */
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static void jadd(json_object *o, const char *key, json_object *v)
{
	json_object_object_add(o, key, v);
}

static json_object *json_savings(const struct hv_savings *sv, uint64_t expected)
{
	json_object *o = json_object_new_object();

	jadd(o, "source", json_object_new_string(sv->from_kernel ? "kernel" : "estimate"));
	jadd(o, "optimized_pages", ju64(sv->optimized));
	jadd(o, "freed_pages", ju64(sv->freed));
	jadd(o, "pgtable_pages", ju64(sv->pgtable));
	jadd(o, "saved_bytes", json_object_new_int64(sv->saved_bytes));
	if (expected != UINT64_MAX)
		jadd(o, "expected_freed_per_page", ju64(expected));
	return o;
}

static json_object *json_pool(const struct hv_state *st, const struct hv_pool *p)
{
	json_object *o = json_object_new_object(), *mounts, *nodes;
	struct hv_savings sv;
	char sz[32];

	hv_format_kb(p->size_kb, sz, sizeof(sz));
	jadd(o, "size", json_object_new_string(sz));
	jadd(o, "size_kb", ju64(p->size_kb));
	jadd(o, "total", ju64(p->total));
	jadd(o, "free", ju64(p->free));
	jadd(o, "reserved", ju64(p->resv));
	jadd(o, "surplus", ju64(p->surplus));
	jadd(o, "overcommit", ju64(p->overcommit));
	mounts = json_object_new_array();
	for (size_t m = 0; m < p->n_mounts; m++)
		json_object_array_add(mounts, jstr(p->mounts[m]));
	jadd(o, "mounts", mounts);
	nodes = json_object_new_array();
	for (size_t n = 0; n < p->n_nodes; n++) {
		const struct hv_node_pool *np = &p->nodes[n];
		json_object *no = json_object_new_object();

		jadd(no, "node", json_object_new_int(np->node));
		jadd(no, "total", ju64(np->total));
		jadd(no, "free", ju64(np->free));
		jadd(no, "reserved", NULL); /* the kernel has no per-node count */
		jadd(no, "surplus", ju64(np->surplus));
		if (np->has_counters) {
			jadd(no, "vmemmap_optimized_pages", ju64(np->optimized));
			jadd(no, "vmemmap_freed_pages", ju64(np->freed));
		}
		json_object_array_add(nodes, no);
	}
	jadd(o, "nodes", nodes);
	hv_pool_savings(st, p, &sv);
	jadd(o, "hvo", json_savings(&sv, hv_expected_freed(p->size_kb)));
	return o;
}

static json_object *json_devdax(const struct hv_state *st)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < st->n_devdax; i++) {
		const struct hv_devdax *d = &st->devdax[i];
		json_object *o = json_object_new_object(), *g;

		jadd(o, "device", jstr(d->name));
		jadd(o, "size_bytes", ju64(d->size));
		jadd(o, "align_bytes", ju64(d->align));
		jadd(o, "node", d->node < 0 ? NULL : json_object_new_int(d->node));
		jadd(o, "memmap", json_object_new_string(memmap_str(d->memmap)));
		jadd(o, "enabled", json_object_new_boolean(d->enabled));
		jadd(o, "vmemmap_saved_bytes", ju64(d->saved_bytes));
		jadd(o, "source", json_object_new_string(d->has_saved ? "kernel" : "estimate"));
		g = json_object_new_array();
		for (size_t k = 0; k < devdax_guests_named(d); k++)
			json_object_array_add(g, jstr(d->guests[k]));
		jadd(o, "guests", g);
		jadd(o, "guest_count", ju64(d->n_guests));
		json_object_array_add(a, o);
	}
	return a;
}

void hv_print_json(FILE *f, const struct hv_state *st)
{
	json_object *root = json_object_new_object(), *hvo, *nodes, *pools;
	const char *b = boot_str(st->hvo_boot);
	struct hv_savings tot;

	hvo = json_object_new_object();
	jadd(hvo, "kernel_support", json_object_new_boolean(st->hvo_supported));
	jadd(hvo, "boot_parameter", b ? json_object_new_string(b) : NULL);
	jadd(hvo, "sysctl", st->hvo_sysctl < 0 ? NULL : json_object_new_int(st->hvo_sysctl));
	jadd(hvo, "enabled", json_object_new_boolean(hvo_enabled(st)));
	jadd(root, "hvo", hvo);
	jadd(root, "kernel", jstr(st->osrelease));
	jadd(root, "default_size_kb", st->default_size_kb ? ju64(st->default_size_kb) : NULL);
	nodes = json_object_new_array();
	for (size_t i = 0; i < st->n_nodes; i++) {
		json_object *no = json_object_new_object();

		jadd(no, "node", json_object_new_int(st->nodes[i].id));
		jadd(no, "mem_total_kb", st->nodes[i].has_memtotal ?
		     ju64(st->nodes[i].memtotal_kb) : NULL);
		json_object_array_add(nodes, no);
	}
	jadd(root, "nodes", nodes);
	pools = json_object_new_array();
	for (size_t i = 0; i < st->n_pools; i++)
		json_object_array_add(pools, json_pool(st, &st->pools[i]));
	jadd(root, "pools", pools);
	hv_total_savings(st, &tot);
	jadd(root, "savings", json_savings(&tot, UINT64_MAX));
	jadd(root, "meminfo_saved_kb", st->has_meminfo_saved ?
	     json_object_new_int64(st->meminfo_saved_kb) : NULL);
	jadd(root, "devdax", json_devdax(st));
	jadd(root, "meminfo_device_saved_kb", st->has_meminfo_dev_saved ?
	     ju64(st->meminfo_dev_saved_kb) : NULL);
	fprintf(f, "%s\n", json_object_to_json_string_ext(root,
		JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
		JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
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
	if (st->n_devdax == 0)
		return;
	metric_head(f, "devdax_size_bytes", "Size of a device-dax instance.");
	for (size_t i = 0; i < st->n_devdax; i++)
		fprintf(f, "hvokit_devdax_size_bytes{device=\"%s\",align=\"%" PRIu64
			"\",memmap=\"%s\"} %" PRIu64 "\n", st->devdax[i].name,
			st->devdax[i].align, memmap_str(st->devdax[i].memmap),
			st->devdax[i].size);
	metric_head(f, "devdax_vmemmap_saved_bytes",
		    "Memmap that the compound pages of an enabled device-dax instance save.");
	for (size_t i = 0; i < st->n_devdax; i++)
		fprintf(f, "hvokit_devdax_vmemmap_saved_bytes{device=\"%s\",source=\"%s\"} %"
			PRIu64 "\n", st->devdax[i].name,
			st->devdax[i].has_saved ? "kernel" : "estimate",
			st->devdax[i].saved_bytes);
	metric_head(f, "devdax_guests", "Running libvirt guests whose memory the instance backs.");
	for (size_t i = 0; i < st->n_devdax; i++)
		fprintf(f, "hvokit_devdax_guests{device=\"%s\"} %zu\n", st->devdax[i].name,
			st->devdax[i].n_guests);
}
