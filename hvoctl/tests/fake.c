/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <signal.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "fake.h"
#include "sysfs.h"
#include "util.h"

static const uint64_t sizes[2] = { FK_1G, FK_2M };

static void die(const char *what, const char *p)
{
	fprintf(stderr, "fake: %s: %s: %s\n", what, p, strerror(errno));
	abort();
}

static void mkdirs(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			die("mkdir", tmp);
		*p = '/';
	}
}

void fake_write(struct fake *f, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	FILE *fp;

	snprintf(path, sizeof(path), "%s%s", f->root, rel);
	mkdirs(path);
	fp = fopen(path, "w");
	if (!fp)
		die("open", path);
	va_start(ap, fmt);
	vfprintf(fp, fmt, ap);
	va_end(ap);
	fclose(fp);
}

void fake_unlink(struct fake *f, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s%s", f->root, rel);
	unlink(path);
}

const char *fake_read(struct fake *f, const char *rel)
{
	static char buf[8192];
	char path[PATH_MAX];
	size_t n;
	FILE *fp;

	snprintf(path, sizeof(path), "%s%s", f->root, rel);
	fp = fopen(path, "r");
	if (!fp)
		die("open", path);
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return buf;
}

uint64_t fake_u64(struct fake *f, const char *rel)
{
	return strtoull(fake_read(f, rel), NULL, 10);
}

static void node_rel(char *buf, size_t n, struct fake *f, int si, int ni,
		     const char *file)
{
	snprintf(buf, n, "/sys/devices/system/node/node%d/hugepages/hugepages-%llukB/%s",
		 f->node_ids[ni], (unsigned long long)sizes[si], file);
}

static void glob_rel(char *buf, size_t n, int si, const char *file)
{
	snprintf(buf, n, "/sys/kernel/mm/hugepages/hugepages-%llukB/%s",
		 (unsigned long long)sizes[si], file);
}

uint64_t fake_node_total(struct fake *f, int si, int ni)
{
	return f->total[si][ni];
}

uint64_t fake_total(struct fake *f, int si)
{
	char rel[256];

	glob_rel(rel, sizeof(rel), si, "nr_hugepages");
	return fake_u64(f, rel);
}

static uint64_t node_free(struct fake *f, int si, int ni)
{
	return f->free[si][ni];
}

static void recompute(struct fake *f, int si)
{
	uint64_t t = 0, fr = 0, sp = 0, exp = si == 0 ? 4095 : 7;
	char rel[256];

	for (int i = 0; i < f->n_nodes; i++) {
		uint64_t nt = fake_node_total(f, si, i);

		t += nt;
		fr += node_free(f, si, i);
		sp += f->surplus[si][i];
		node_rel(rel, sizeof(rel), f, si, i, "surplus_hugepages");
		fake_write(f, rel, "%llu\n", (unsigned long long)f->surplus[si][i]);
		node_rel(rel, sizeof(rel), f, si, i, "nr_hugepages");
		fake_write(f, rel, "%llu\n", (unsigned long long)nt);
		node_rel(rel, sizeof(rel), f, si, i, "free_hugepages");
		fake_write(f, rel, "%llu\n", (unsigned long long)f->free[si][i]);
		if (f->hvo_counters) {
			node_rel(rel, sizeof(rel), f, si, i, "vmemmap_optimized_pages");
			fake_write(f, rel, "%llu\n", (unsigned long long)nt);
			node_rel(rel, sizeof(rel), f, si, i, "vmemmap_freed_pages");
			fake_write(f, rel, "%llu\n", (unsigned long long)(nt * exp));
		}
	}
	glob_rel(rel, sizeof(rel), si, "nr_hugepages");
	fake_write(f, rel, "%llu\n", (unsigned long long)t);
	glob_rel(rel, sizeof(rel), si, "free_hugepages");
	fake_write(f, rel, "%llu\n", (unsigned long long)fr);
	glob_rel(rel, sizeof(rel), si, "surplus_hugepages");
	fake_write(f, rel, "%llu\n", (unsigned long long)sp);
	glob_rel(rel, sizeof(rel), si, "resv_hugepages");
	fake_write(f, rel, "%llu\n", (unsigned long long)f->resv[si]);
	if (f->hvo_counters) {
		glob_rel(rel, sizeof(rel), si, "vmemmap_optimized_pages");
		fake_write(f, rel, "%llu\n", (unsigned long long)t);
		glob_rel(rel, sizeof(rel), si, "vmemmap_freed_pages");
		fake_write(f, rel, "%llu\n", (unsigned long long)(t * exp));
		glob_rel(rel, sizeof(rel), si, "vmemmap_pgtable_pages");
		fake_write(f, rel, "%llu\n",
			   (unsigned long long)(si == 0 ? t * 8 : (t + 63) / 64));
	}
}

void fake_set_node(struct fake *f, int si, int ni, uint64_t total, uint64_t free)
{
	f->total[si][ni] = total;
	f->free[si][ni] = free;
	f->used[si][ni] = total - free;
	recompute(f, si);
}

void fake_set_node_surplus(struct fake *f, int si, int ni, uint64_t total, uint64_t free,
			   uint64_t surplus)
{
	f->surplus[si][ni] = surplus;
	fake_set_node(f, si, ni, total, free);
}

void fake_init(struct fake *f, int n, const int *ids, const uint64_t *memtotal_kb,
	       bool hvo_counters)
{
	char online[256] = "", rel[256];
	size_t len = 0;

	memset(f, 0, sizeof(*f));
	snprintf(f->root, sizeof(f->root), "%s/hvoctl-test.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->root))
		die("mkdtemp", f->root);
	f->n_nodes = n;
	f->hvo_counters = hvo_counters;
	for (int i = 0; i < n; i++) {
		f->node_ids[i] = ids ? ids[i] : i;
		len += (size_t)snprintf(online + len, sizeof(online) - len, "%s%d",
					i ? "," : "", f->node_ids[i]);
		snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/meminfo",
			 f->node_ids[i]);
		fake_write(f, rel,
			   "Node %d MemTotal:       %llu kB\nNode %d MemFree:        1000 kB\n",
			   f->node_ids[i], (unsigned long long)memtotal_kb[i], f->node_ids[i]);
		snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/compact",
			 f->node_ids[i]);
		fake_write(f, rel, "%s", "");
		for (int si = 0; si < 2; si++) {
			node_rel(rel, sizeof(rel), f, si, i, "nr_hugepages");
			fake_write(f, rel, "0\n");
			node_rel(rel, sizeof(rel), f, si, i, "free_hugepages");
			fake_write(f, rel, "0\n");
			node_rel(rel, sizeof(rel), f, si, i, "surplus_hugepages");
			fake_write(f, rel, "0\n");
		}
	}
	fake_write(f, "/sys/devices/system/node/online", "%s\n", online);
	for (int si = 0; si < 2; si++) {
		static const char *const z[] = { "surplus_hugepages",
			"nr_overcommit_hugepages", "nr_hugepages_mempolicy" };

		for (size_t k = 0; k < 3; k++) {
			glob_rel(rel, sizeof(rel), si, z[k]);
			fake_write(f, rel, "0\n");
		}
		recompute(f, si);
	}
	fake_write(f, "/proc/sys/vm/hugetlb_optimize_vmemmap", "1\n");
	fake_write(f, "/proc/sys/vm/compact_memory", "%s", "");
	fake_write(f, "/proc/sys/kernel/osrelease", "6.1.0-hvokit\n");
	fake_write(f, "/proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/vda1 hugetlb_free_vmemmap=on\n");
	fake_write(f, "/proc/meminfo",
		   "MemTotal:       16000000 kB\nHugepagesize:       2048 kB\n%s",
		   hvo_counters ? "HugetlbVmemmapSaved:       0 kB\n" : "");
	fake_write(f, "/proc/self/mounts",
		   "proc /proc proc rw 0 0\n"
		   "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n"
		   "none /dev/hugepages1G hugetlbfs rw,relatime,pagesize=1024M 0 0\n");
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void fake_free(struct fake *f)
{
	hv_sys_set_write_hook(NULL, NULL);
	if (f->root[0])
		nftw(f->root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	f->root[0] = '\0';
}

/* kill -9 of the writer at the kill_at-th pool write (see fake.h). */
static void maybe_kill(struct fake *f, int si, bool before)
{
	if (!f->kill_at || f->pool_writes != f->kill_at || f->kill_before != before)
		return;
	f->kill_at = 0;
	if (before)
		recompute(f, si); /* the write never reached the kernel */
	raise(SIGKILL);
}

/* The fake kernel: hugetlb's reaction to a write of a node's count, which
 * the kernel reads as the node's persistent pages (total less surplus):
 * growing turns surplus pages back into persistent ones first, then
 * allocates; shrinking frees free pages first, then makes pages in use
 * surplus (they leave when freed). */
static void grow_node(struct fake *f, int si, int ni, uint64_t want)
{
	uint64_t cur = fake_node_total(f, si, ni), fr = node_free(f, si, ni);
	uint64_t sp = f->surplus[si][ni], pers = cur - sp;

	if (want > pers) {
		uint64_t conv = sp < want - pers ? sp : want - pers, add;

		sp -= conv;
		pers += conv;
		add = want - pers;
		if (add > f->avail[si][ni])
			add = f->avail[si][ni];
		f->avail[si][ni] -= add;
		cur += add;
		fr += add;
	} else {
		/* Only free, unreserved pages go. */
		uint64_t used = f->used[si][ni];
		uint64_t keep = want < used ? used : want, gone;

		gone = pers > keep ? pers - keep : 0;
		if (gone > fr)
			gone = fr;
		f->avail[si][ni] += gone;
		fr -= gone;
		cur -= gone;
		pers -= gone;
		if (pers > want)
			sp += pers - want;
	}
	f->total[si][ni] = cur;
	f->free[si][ni] = fr;
	f->surplus[si][ni] = sp;
}

static int hook(const char *path, const char *value, void *ctx)
{
	struct fake *f = ctx;
	size_t rl = strlen(f->root);
	const char *rel = path + rl;
	uint64_t v = strtoull(value, NULL, 10);
	int ni, si;
	unsigned long long kb;
	char file[64];

	if (strncmp(path, f->root, rl))
		return 0;
	f->writes++;
	if (!strcmp(rel, "/proc/sys/vm/compact_memory")) {
		f->compactions++;
		for (si = 0; si < 2; si++)
			for (ni = 0; ni < f->n_nodes; ni++)
				f->avail[si][ni] += f->compact_gain[si][ni];
		return 0;
	}
	int end = 0;

	if (sscanf(rel, "/sys/devices/system/node/node%d/compact%n", &ni, &end) == 1 &&
	    end > 0 && rel[end] == '\0') {
		f->compactions++;
		for (int i = 0; i < f->n_nodes; i++)
			if (f->node_ids[i] == ni)
				for (si = 0; si < 2; si++)
					f->avail[si][i] += f->compact_gain[si][i];
		return 0;
	}
	if (sscanf(rel, "/sys/devices/system/node/node%d/hugepages/hugepages-%llukB/%63s",
		   &ni, &kb, file) == 3) {
		if (strcmp(file, "nr_hugepages"))
			return -EACCES;
		si = kb == FK_1G ? 0 : 1;
		f->pool_writes++;
		maybe_kill(f, si, true);
		for (int i = 0; i < f->n_nodes; i++)
			if (f->node_ids[i] == ni)
				grow_node(f, si, i, v);
		recompute(f, si);
		maybe_kill(f, si, false);
		return 0;
	}
	if (sscanf(rel, "/sys/kernel/mm/hugepages/hugepages-%llukB/%63s", &kb, file) == 2) {
		uint64_t cur;

		if (strcmp(file, "nr_hugepages") && strcmp(file, "nr_overcommit_hugepages"))
			return -EACCES;
		si = kb == FK_1G ? 0 : 1;
		if (!strcmp(file, "nr_hugepages")) {
			f->pool_writes++;
			maybe_kill(f, si, true);
		}
		cur = 0;
		for (int i = 0; i < f->n_nodes; i++)
			cur += fake_node_total(f, si, i);
		/* Interleave one page at a time over nodes, like the kernel. */
		while (cur < v) {
			bool any = false;

			for (int i = 0; i < f->n_nodes && cur < v; i++)
				if (f->avail[si][i]) {
					grow_node(f, si, i, fake_node_total(f, si, i) + 1);
					cur++;
					any = true;
				}
			if (!any)
				break;
		}
		while (cur > v) {
			bool any = false;
			uint64_t gfree = 0;

			for (int i = 0; i < f->n_nodes; i++)
				gfree += node_free(f, si, i);
			for (int i = f->n_nodes - 1; i >= 0 && cur > v; i--)
				if (node_free(f, si, i) > 0 && gfree > f->resv[si]) {
					grow_node(f, si, i, fake_node_total(f, si, i) - 1);
					cur--;
					gfree--;
					any = true;
				}
			if (!any)
				break;
		}
		recompute(f, si);
		if (!strcmp(file, "nr_hugepages"))
			maybe_kill(f, si, false);
		return 0;
	}
	return 0;
}

void fake_kernel_on(struct fake *f)
{
	f->kernel = true;
	hv_sys_set_write_hook(hook, f);
}

int fake_run(char **out, char **err, ...)
{
	char *argv[32];
	int argc = 0, r;
	size_t ol = 0, el = 0;
	FILE *o = open_memstream(out, &ol), *e = open_memstream(err, &el);
	va_list ap;

	if (!o || !e)
		abort();
	argv[argc++] = (char *)"hvoctl";
	va_start(ap, err);
	for (;;) {
		char *a = va_arg(ap, char *);

		if (!a || argc >= 31)
			break;
		argv[argc++] = a;
	}
	va_end(ap);
	argv[argc] = NULL;
	hv_log_set(e);
	r = hv_main(argc, argv, o);
	hv_log_set(NULL);
	fclose(o);
	fclose(e);
	return r;
}

const char *fake_config(struct fake *f, const char *text)
{
	static char path[PATH_MAX + 32];

	fake_write(f, "/etc/hvokit/hvokit.conf", "%s", text);
	snprintf(path, sizeof(path), "%s/etc/hvokit/hvokit.conf", f->root);
	return path;
}
