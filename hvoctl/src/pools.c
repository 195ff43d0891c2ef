/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "domxml.h"
#include "pools.h"
#include "util.h"

/* Optional counter: false if the file is absent; error if malformed. */
static int read_u64_opt(const struct hv_sys *s, const char *rel, uint64_t *v,
			bool *present)
{
	if (!hv_exists(s, rel)) {
		*present = false;
		*v = 0;
		return 0;
	}
	*present = true;
	return hv_read_u64_report(s, rel, v);
}

void hv_pool_file(char *buf, size_t n, uint64_t size_kb, int node, const char *file)
{
	if (node < 0)
		snprintf(buf, n, HV_HP_DIR "/hugepages-%llukB/%s",
			 (unsigned long long)size_kb, file);
	else
		snprintf(buf, n, HV_NODE_DIR "/node%d/hugepages/hugepages-%llukB/%s",
			 node, (unsigned long long)size_kb, file);
}

int hv_pool_count(const struct hv_sys *s, uint64_t size_kb, int node, uint64_t *v)
{
	char rel[256];

	hv_pool_file(rel, sizeof(rel), size_kb, node, "nr_hugepages");
	return hv_read_u64(s, rel, v);
}

static int parse_size_dir(const char *name, uint64_t *kb)
{
	/* "hugepages-2048kB" */
	char num[32];
	const char *p = name + strlen("hugepages-");
	size_t len = strlen(p);

	if (len < 3 || strcmp(p + len - 2, "kB") || len - 2 >= sizeof(num))
		return -EINVAL;
	memcpy(num, p, len - 2);
	num[len - 2] = '\0';
	return hv_parse_u64(num, kb);
}

static int read_nodes(const struct hv_sys *s, struct hv_state *st)
{
	char buf[4096], rel[128], full[PATH_MAX];
	int ids[HV_MAX_NODES];
	size_t n;
	int e;

	st->numa = hv_exists(s, HV_NODE_DIR);
	if (!st->numa)
		return 0;
	e = hv_read_str(s, HV_NODE_DIR "/online", buf, sizeof(buf));
	if (e < 0) {
		hv_path(s, full, sizeof(full), HV_NODE_DIR "/online");
		hv_err("read: %s: %s", full, strerror(-e));
		return -1;
	}
	e = hv_parse_node_list(buf, ids, HV_MAX_NODES, &n);
	if (e < 0) {
		hv_path(s, full, sizeof(full), HV_NODE_DIR "/online");
		hv_err("read: %s: '%s': %s", full, buf, e == -ERANGE ?
		       "too many nodes (max 64, ids up to 4095)" :
		       "not a node list such as 0-1,3");
		return -1;
	}
	st->n_nodes = n;
	for (size_t i = 0; i < n; i++) {
		struct hv_node *nd = &st->nodes[i];
		char mi[8192], *line, *save = NULL;

		nd->id = ids[i];
		snprintf(rel, sizeof(rel), HV_NODE_DIR "/node%d/meminfo", ids[i]);
		if (hv_read_str(s, rel, mi, sizeof(mi)) < 0)
			continue;
		for (line = strtok_r(mi, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			int node;
			unsigned long long kb;
			char unit[4];

			if (sscanf(line, "Node %d MemTotal: %llu %3s", &node, &kb, unit) == 3 &&
			    node == ids[i] && !strcmp(unit, "kB")) {
				nd->has_memtotal = true;
				nd->memtotal_kb = kb;
			}
		}
	}
	return 0;
}

int hv_pool_reread(const struct hv_sys *s, struct hv_state *st, struct hv_pool *p)
{
	char rel[256];
	bool present;
	int e = 0;

#define G(file, field)                                                  \
	do {                                                            \
		hv_pool_file(rel, sizeof(rel), p->size_kb, -1, file);   \
		if (hv_read_u64_report(s, rel, &p->field) < 0)          \
			e = -1;                                         \
	} while (0)
	G("nr_hugepages", total);
	G("free_hugepages", free);
	G("resv_hugepages", resv);
	G("surplus_hugepages", surplus);
	G("nr_overcommit_hugepages", overcommit);
#undef G
	if (st->counts_only)
		goto nodes;
#define O(file, field)                                                  \
	do {                                                            \
		hv_pool_file(rel, sizeof(rel), p->size_kb, -1, file);   \
		if (read_u64_opt(s, rel, &p->field, &present) < 0)      \
			e = -1;                                         \
	} while (0)
	O("vmemmap_optimized_pages", optimized);
	p->has_counters = present;
	O("vmemmap_freed_pages", freed);
	p->has_counters = p->has_counters && present;
	O("vmemmap_pgtable_pages", pgtable);
#undef O
nodes:
	p->n_nodes = st->n_nodes;
	for (size_t i = 0; i < st->n_nodes; i++) {
		struct hv_node_pool *np = &p->nodes[i];
		bool a = false, b = false;

		memset(np, 0, sizeof(*np));
		np->node = st->nodes[i].id;
#define N(file, field, opt, pres)                                            \
	do {                                                                 \
		hv_pool_file(rel, sizeof(rel), p->size_kb, np->node, file);  \
		if ((opt ? read_u64_opt(s, rel, &np->field, pres)            \
			 : hv_read_u64_report(s, rel, &np->field)) < 0)      \
			e = -1;                                              \
	} while (0)
		N("nr_hugepages", total, 0, NULL);
		N("free_hugepages", free, 0, NULL);
		N("surplus_hugepages", surplus, 0, NULL);
		if (st->counts_only)
			continue;
		N("vmemmap_optimized_pages", optimized, 1, &a);
		N("vmemmap_freed_pages", freed, 1, &b);
#undef N
		np->has_counters = a && b;
	}
	return e;
}

static int cmp_pool(const void *a, const void *b)
{
	const struct hv_pool *x = a, *y = b;

	return x->size_kb < y->size_kb ? 1 : x->size_kb > y->size_kb ? -1 : 0;
}

/* Decode the octal escapes of /proc/mounts ("\040" for space). */
static void unescape(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' &&
		    r[2] <= '7' && r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

static void read_mounts(const struct hv_sys *s, struct hv_state *st)
{
	char path[PATH_MAX], line[4096];
	FILE *f = NULL;

	if (hv_path(s, path, sizeof(path), "/proc/self/mounts") == 0)
		f = fopen(path, "re");
	if (!f && hv_path(s, path, sizeof(path), "/proc/mounts") == 0)
		f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char dev[256], dir[1024], type[64], opts[1024];
		uint64_t kb = st->default_size_kb;
		char *o, *save = NULL;
		struct hv_pool *p;

		if (sscanf(line, "%255s %1023s %63s %1023s", dev, dir, type, opts) != 4 ||
		    strcmp(type, "hugetlbfs"))
			continue;
		for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
			if (!strncmp(o, "pagesize=", 9) && hv_parse_pagesize(o + 9, &kb) < 0)
				kb = 0;
		p = hv_state_pool(st, kb);
		if (!p || p->n_mounts >= HV_MAX_MOUNTS)
			continue;
		unescape(dir);
		snprintf(p->mounts[p->n_mounts++], sizeof(p->mounts[0]), "%s", dir);
	}
	fclose(f);
}

void hv_meminfo_read(const struct hv_sys *s, struct hv_meminfo *mi)
{
	char path[PATH_MAX], line[256];
	FILE *f;

	memset(mi, 0, sizeof(*mi));
	if (hv_path(s, path, sizeof(path), "/proc/meminfo") < 0)
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char num[32];
		long long v;
		uint64_t kb;

		/* Digits only: %llu would wrap "-1" and overflow silently, and
		 * a page size of 0 or 2^60 kB must not reach a division. */
		if (sscanf(line, "Hugepagesize: %31[0-9] kB", num) == 1) {
			if (hv_parse_u64(num, &kb) == 0 && hv_pagesize_kb_ok(kb))
				mi->default_size_kb = kb;
		} else if (sscanf(line, "MemTotal: %31[0-9] kB", num) == 1) {
			if (hv_parse_u64(num, &kb) == 0)
				mi->memtotal_kb = kb;
		} else if (sscanf(line, "HugetlbVmemmapSaved: %lld kB", &v) == 1) {
			mi->has_saved = true;
			mi->saved_kb = v;
		} else if (sscanf(line, "DeviceVmemmapSaved: %31[0-9] kB", num) == 1) {
			if (hv_parse_u64(num, &kb) == 0) {
				mi->has_dev_saved = true;
				mi->dev_saved_kb = kb;
			}
		}
	}
	fclose(f);
}

bool hv_cmdline_param(const struct hv_sys *s, const char *name, char *val, size_t n)
{
	char buf[8192], *tok, *save = NULL;
	size_t len = strlen(name);
	bool found = false;

	if (hv_read_str(s, "/proc/cmdline", buf, sizeof(buf)) < 0)
		return false;
	for (tok = strtok_r(buf, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save)) {
		if (!strcmp(tok, "--"))
			break; /* the rest goes to init */
		if (strncmp(tok, name, len) || tok[len] != '=')
			continue;
		found = true; /* the last one wins, as in the kernel */
		snprintf(val, n, "%s", tok + len + 1);
	}
	return found;
}

static void read_cmdline(const struct hv_sys *s, struct hv_state *st)
{
	char v[64];

	st->hvo_boot = HV_BOOT_ABSENT;
	if (!hv_cmdline_param(s, "hugetlb_free_vmemmap", v, sizeof(v)))
		return;
	/* kstrtobool() semantics, as the kernel parses it. */
	if (!strcmp(v, "on") || v[0] == 'y' || v[0] == 'Y' || v[0] == '1')
		st->hvo_boot = HV_BOOT_ON;
	else if (!strcmp(v, "off") || v[0] == 'n' || v[0] == 'N' || v[0] == '0')
		st->hvo_boot = HV_BOOT_OFF;
}

uint64_t hv_devdax_estimated_saved(uint64_t size, uint64_t align, enum hv_memmap memmap)
{
	uint64_t pages = size / HV_BASE_PAGE, per = align / HV_BASE_PAGE, vmemmap, tables;

	if (memmap != HV_MEMMAP_RAM || per == 0)
		return 0;
	vmemmap = per * HV_STRUCT_PAGE / HV_BASE_PAGE; /* per compound page */
	if (vmemmap <= 2)
		return 0;
	/* one PTE table maps 2 MiB of vmemmap: the struct pages of 32768 pages */
	tables = (pages * HV_STRUCT_PAGE + (2ULL << 20) - 1) / (2ULL << 20);
	if (pages / per * (vmemmap - 2) <= tables)
		return 0;
	return (pages / per * (vmemmap - 2) - tables) * HV_BASE_PAGE;
}

/* /sys/bus/dax/devices/NAME/FILE */
static const char *dax_file(char *buf, size_t n, const char *name, const char *file)
{
	snprintf(buf, n, HV_DAX_DIR "/%s/%s", name, file);
	return buf;
}

/*
 * /sys/bus/dax/devices/daxR.N: size, align, numa_node, the driver link, and
 * the vmemmap_saved of an hvokit kernel.  The memmap lives in the device
 * when the nd device above has mode "pmem" (ndctl --map=dev); other
 * instances (--map=mem, soft-reserved or CXL memory) have it in RAM.
 * No dax bus is no error: most hosts have no device-dax.
 */
static int read_devdax(const struct hv_sys *s, struct hv_state *st)
{
	char **names = NULL, rel[PATH_MAX], mode[32];
	size_t n = 0;
	int64_t node;
	int e, ret = 0;

	e = hv_list_dir(s, HV_DAX_DIR, "dax", &names, &n);
	if (e == -ENOENT)
		return 0;
	if (e < 0) {
		hv_path(s, rel, sizeof(rel), HV_DAX_DIR);
		hv_err("read: %s: %s", rel, strerror(-e));
		return -1;
	}
	for (size_t i = 0; i < n && st->n_devdax < HV_MAX_DEVDAX; i++) {
		struct hv_devdax *d = &st->devdax[st->n_devdax];

		memset(d, 0, sizeof(*d));
		if (strlen(names[i]) >= sizeof(d->name))
			continue;
		strcpy(d->name, names[i]);
		if (hv_read_u64_report(s, dax_file(rel, sizeof(rel), d->name, "size"),
				       &d->size) < 0) {
			ret = -1;
			continue;
		}
		if (hv_read_u64(s, dax_file(rel, sizeof(rel), d->name, "align"), &d->align) < 0)
			d->align = HV_BASE_PAGE; /* before 5.13: no align, 4 KiB pages */
		d->node = hv_read_s64(s, dax_file(rel, sizeof(rel), d->name, "numa_node"),
				      &node) == 0 && node >= 0 && node < INT32_MAX ? (int)node : -1;
		d->memmap = hv_read_str(s, dax_file(rel, sizeof(rel), d->name, "../mode"), mode,
					sizeof(mode)) == 0 &&
			    !strcmp(mode, "pmem") ? HV_MEMMAP_DEVICE : HV_MEMMAP_RAM;
		d->enabled = hv_exists(s, dax_file(rel, sizeof(rel), d->name, "driver"));
		d->has_saved = hv_read_u64(s, dax_file(rel, sizeof(rel), d->name, "vmemmap_saved"),
					   &d->saved_bytes) == 0;
		if (!d->has_saved)
			d->saved_bytes = d->enabled ?
				hv_devdax_estimated_saved(d->size, d->align, d->memmap) : 0;
		st->n_devdax++;
	}
	hv_free_names(names);
	return ret;
}

/* A whole file of at most HV_DOM_MAX_XML bytes (malloc'ed), or NULL */
static char *read_small_file(const char *path, size_t *len)
{
	char *buf = malloc(HV_DOM_MAX_XML + 1);
	ssize_t r = 0;
	int fd;

	*len = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while (*len <= HV_DOM_MAX_XML &&
	       (r = read(fd, buf + *len, HV_DOM_MAX_XML + 1 - *len)) > 0)
		*len += (size_t)r;
	close(fd);
	if (r < 0 || *len > HV_DOM_MAX_XML) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void devdax_add_guest(struct hv_devdax *d, const char *name)
{
	if (d->n_guests < HV_DEVDAX_SHOWN_GUESTS)
		hv_dom_safe_name(name, d->guests[d->n_guests], sizeof(d->guests[0]));
	d->n_guests++;
}

void hv_devdax_read_guests(const struct hv_sys *s, const char *rundir, struct hv_state *st)
{
	char **names = NULL, rel[PATH_MAX], path[PATH_MAX];
	struct hv_dom_dax *u;
	size_t n = 0;

	if (st->n_devdax == 0 || hv_list_dir(s, rundir, "", &names, &n) < 0)
		return;
	u = malloc(sizeof(*u));
	for (size_t i = 0; u && i < n; i++) {
		size_t len = strlen(names[i]), xlen;
		char *xml;

		if (len < 5 || strcmp(names[i] + len - 4, ".xml") ||
		    snprintf(rel, sizeof(rel), "%s/%s", rundir, names[i]) >= (int)sizeof(rel) ||
		    hv_path(s, path, sizeof(path), rel) < 0)
			continue;
		xml = read_small_file(path, &xlen);
		if (xml && hv_dom_dax_uses(xml, xlen, u) == 0)
			for (size_t j = 0; j < u->n; j++)
				for (size_t k = 0; k < st->n_devdax; k++)
					if (!strcmp(u->dax[j], st->devdax[k].name))
						devdax_add_guest(&st->devdax[k], u->name);
		free(xml);
	}
	free(u);
	hv_free_names(names);
}

static int state_read(const struct hv_sys *s, struct hv_state *st, bool counts_only)
{
	char **names = NULL;
	size_t n = 0;
	uint64_t v;
	int e, ret = 0;

	memset(st, 0, sizeof(*st));
	st->hvo_sysctl = -1;
	st->counts_only = counts_only;
	if (read_nodes(s, st) < 0)
		return -1;
	{
		struct hv_meminfo mi;

		hv_meminfo_read(s, &mi);
		st->default_size_kb = mi.default_size_kb;
		st->memtotal_kb = mi.memtotal_kb;
		st->has_meminfo_saved = mi.has_saved;
		st->meminfo_saved_kb = mi.saved_kb;
		st->has_meminfo_dev_saved = mi.has_dev_saved;
		st->meminfo_dev_saved_kb = mi.dev_saved_kb;
	}
	if (counts_only)
		goto pools;
	read_cmdline(s, st);
	if (hv_read_str(s, "/proc/sys/kernel/osrelease", st->osrelease,
			sizeof(st->osrelease)) < 0)
		st->osrelease[0] = '\0';
	if (hv_exists(s, HV_SYSCTL_HVO)) {
		st->hvo_supported = true;
		if (hv_read_u64_report(s, HV_SYSCTL_HVO, &v) < 0)
			ret = -1;
		else
			st->hvo_sysctl = v ? 1 : 0;
	}
pools:
	e = hv_list_dir(s, HV_HP_DIR, "hugepages-", &names, &n);
	if (e < 0 && e != -ENOENT) {
		char full[PATH_MAX];

		hv_path(s, full, sizeof(full), HV_HP_DIR);
		hv_err("read: %s: %s", full, strerror(-e));
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t kb;

		if (parse_size_dir(names[i], &kb) < 0 || !hv_pagesize_kb_ok(kb))
			continue;
		if (st->n_pools >= HV_MAX_POOLS)
			break;
		st->pools[st->n_pools++].size_kb = kb;
	}
	hv_free_names(names);
	qsort(st->pools, st->n_pools, sizeof(st->pools[0]), cmp_pool);
	for (size_t i = 0; i < st->n_pools; i++)
		if (hv_pool_reread(s, st, &st->pools[i]) < 0)
			ret = -1;
	if (counts_only)
		return ret;
	read_mounts(s, st);
	if (read_devdax(s, st) < 0)
		ret = -1;
	return ret;
}

int hv_state_read(const struct hv_sys *s, struct hv_state *st)
{
	return state_read(s, st, false);
}

int hv_state_read_pools(const struct hv_sys *s, struct hv_state *st)
{
	return state_read(s, st, true);
}

struct hv_pool *hv_state_pool(struct hv_state *st, uint64_t size_kb)
{
	for (size_t i = 0; i < st->n_pools; i++)
		if (st->pools[i].size_kb == size_kb)
			return &st->pools[i];
	return NULL;
}

int hv_state_node_index(const struct hv_state *st, int node)
{
	for (size_t i = 0; i < st->n_nodes; i++)
		if (st->nodes[i].id == node)
			return (int)i;
	return -1;
}

static uint64_t vmemmap_bytes(uint64_t size_kb)
{
	/* struct pages per huge page * sizeof(struct page) */
	return hv_mul_sat(size_kb / (HV_BASE_PAGE / 1024), HV_STRUCT_PAGE);
}

uint64_t hv_expected_freed(uint64_t size_kb)
{
	uint64_t vb = vmemmap_bytes(size_kb);

	if (vb <= HV_BASE_PAGE)
		return 0; /* vmemmap fits in one page: nothing to free */
	return vb / HV_BASE_PAGE - 1;
}

uint64_t hv_estimated_pgtable(uint64_t size_kb, uint64_t n)
{
	const uint64_t pmd = 2ULL << 20;
	uint64_t vb = vmemmap_bytes(size_kb), total;

	if (hv_expected_freed(size_kb) == 0 || n == 0)
		return 0;
	if (vb >= pmd)
		return hv_mul_sat(n, vb / pmd);
	/* Several huge pages share one vmemmap PMD: ceil(n / (pmd / vb)). */
	total = pmd / vb;
	return n / total + (n % total ? 1 : 0);
}

static int64_t saved(uint64_t freed, uint64_t pgtable)
{
	uint64_t d;

	if (freed >= pgtable) {
		d = freed - pgtable;
		return d > (uint64_t)INT64_MAX / HV_BASE_PAGE ? INT64_MAX :
			(int64_t)(d * HV_BASE_PAGE);
	}
	d = pgtable - freed;
	return d > (uint64_t)INT64_MAX / HV_BASE_PAGE ? INT64_MIN :
		-(int64_t)(d * HV_BASE_PAGE);
}

void hv_pool_savings(const struct hv_state *st, const struct hv_pool *p,
		     struct hv_savings *sv)
{
	memset(sv, 0, sizeof(*sv));
	if (p->has_counters) {
		sv->from_kernel = true;
		sv->optimized = p->optimized;
		sv->freed = p->freed;
		sv->pgtable = p->pgtable;
	} else if (st->hvo_sysctl == 1 && hv_expected_freed(p->size_kb)) {
		/* Assumes every page was allocated while HVO was on. */
		sv->optimized = p->total;
		sv->freed = hv_mul_sat(p->total, hv_expected_freed(p->size_kb));
		sv->pgtable = hv_estimated_pgtable(p->size_kb, p->total);
	}
	sv->saved_bytes = saved(sv->freed, sv->pgtable);
}

void hv_total_savings(const struct hv_state *st, struct hv_savings *sv)
{
	bool all_kernel = st->n_pools > 0;

	memset(sv, 0, sizeof(*sv));
	for (size_t i = 0; i < st->n_pools; i++) {
		struct hv_savings p;

		hv_pool_savings(st, &st->pools[i], &p);
		all_kernel = all_kernel && p.from_kernel;
		sv->optimized = hv_add_sat(sv->optimized, p.optimized);
		sv->freed = hv_add_sat(sv->freed, p.freed);
		sv->pgtable = hv_add_sat(sv->pgtable, p.pgtable);
	}
	sv->saved_bytes = saved(sv->freed, sv->pgtable);
	sv->from_kernel = all_kernel;
	if (st->has_meminfo_saved) {
		sv->from_kernel = true;
		if (st->meminfo_saved_kb > INT64_MAX / 1024)
			sv->saved_bytes = INT64_MAX;
		else if (st->meminfo_saved_kb < INT64_MIN / 1024)
			sv->saved_bytes = INT64_MIN;
		else
			sv->saved_bytes = st->meminfo_saved_kb * 1024;
	}
}

bool hv_kernel_at_least(const char *release, unsigned major, unsigned minor)
{
	unsigned a, b;

	if (!release || sscanf(release, "%u.%u", &a, &b) != 2)
		return true;
	return a > major || (a == major && b >= minor);
}
