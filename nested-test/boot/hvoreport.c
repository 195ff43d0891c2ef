// SPDX-License-Identifier: GPL-2.0
/*
 * hvoreport - judge the consoles of the hvokit QEMU boot test and write the
 * savings report.
 *
 * usage: hvoreport OUTDIR SCENARIO=CONSOLE_LOG...
 *
 * Every "HVOPROBE: ok|not ok" line of a console counts as one check; a boot
 * that did not reach "HVOPROBE: end" counts as a failed check.  The boots
 * with hugetlb_free_vmemmap=off and =on are then compared: MemTotal and the
 * MemFree drop of the runtime 2 MiB pool must agree with HVO's counters;
 * a run of other scenarios only (a subset) skips that comparison.
 * The table goes to stdout, OUTDIR/savings.md and OUTDIR/savings.json; the
 * last line is "boot: N passed, N failed".  The "figure" lines of the probe
 * (operations done by the workers, hardware errors injected) are summed
 * into OUTDIR/figures.tsv.
 *
 * usage: hvoreport --compare LABEL=OUTDIR... [--reference LABEL=OUTDIR...]
 *
 * The soak's side-by-side table: the result line, failed checks and figures
 * of each OUTDIR, then "soak: N passed, N failed" over the runs before
 * --reference (ours); the runs after it (stock) are shown, not counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#define MAX_VALUES	512
#define KIB_PER_PAGE	4L

struct value {
	char scenario[32];
	char key[96];
	long v;
};

static struct value values[MAX_VALUES];
static int nr_values, passed, failed;
/* "figure SCENARIO NAME N": summed per scenario and name */
static struct value figures[MAX_VALUES];
static int nr_figures;
/* "hvoctl status --json" as printed in the boot-on guest */
static struct json_object *hvoctl_status;

static void result(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	ok ? passed++ : failed++;
	printf("%s %s: ", ok ? "ok" : "not ok", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static bool lookup(const char *scenario, const char *key, long *v)
{
	int i;

	for (i = 0; i < nr_values; i++) {
		if (!strcmp(values[i].scenario, scenario) && !strcmp(values[i].key, key)) {
			*v = values[i].v;
			return true;
		}
	}
	return false;
}

/* A value every later step depends on: a missing one is a failed check. */
static long need(const char *scenario, const char *key)
{
	long v;

	if (lookup(scenario, key, &v) && v != LONG_MIN)
		return v;
	result(false, "value-present", "%s did not report %s", scenario, key);
	return 0;
}

static const struct value *lookup_in(const struct value *tab, int nr,
				     const char *scenario, const char *key)
{
	int i;

	for (i = 0; i < nr; i++)
		if (!strcmp(tab[i].scenario, scenario) && !strcmp(tab[i].key, key))
			return &tab[i];
	return NULL;
}

static struct value *figure_slot(struct value *tab, int *nr, const char *scenario,
				  const char *key)
{
	int i;

	for (i = 0; i < *nr; i++)
		if (!strcmp(tab[i].scenario, scenario) && !strcmp(tab[i].key, key))
			return &tab[i];
	if (*nr == MAX_VALUES)
		return NULL;
	tab = &tab[(*nr)++];
	snprintf(tab->scenario, sizeof(tab->scenario), "%s", scenario);
	snprintf(tab->key, sizeof(tab->key), "%s", key);
	tab->v = 0;
	return tab;
}

static void add_figure(const char *line)
{
	char scenario[32], key[96];
	struct value *f;
	long v;

	if (sscanf(line, "%31s %95s %ld", scenario, key, &v) != 3)
		return;
	f = figure_slot(figures, &nr_figures, scenario, key);
	if (f)
		f->v += v;
}

static void write_figures(const char *outdir)
{
	char path[PATH_MAX];
	FILE *f;
	int i;

	if (!nr_figures)
		return;
	snprintf(path, sizeof(path), "%s/figures.tsv", outdir);
	f = fopen(path, "we");
	if (!f) {
		result(false, "figures", "cannot write %s: %s", path, strerror(errno));
		return;
	}
	for (i = 0; i < nr_figures; i++)
		fprintf(f, "%s\t%s\t%ld\n", figures[i].scenario, figures[i].key, figures[i].v);
	fclose(f);
}

#define MAX_RUNS	4

/* hvoreport --compare LABEL=OUTDIR...: the soak's side-by-side table */
static int compare(int argc, char **argv)
{
	static struct value tab[MAX_RUNS][MAX_VALUES];
	int nr[MAX_RUNS] = { 0 }, runs = 0, ours = -1, a, r, i, k;
	long total_passed = 0, total_failed = 0;
	const char *label[MAX_RUNS];
	char *dir[MAX_RUNS];
	static char line[4096];

	for (a = 0; a < argc; a++) {
		if (!strcmp(argv[a], "--reference") && ours < 0) {
			ours = runs;
			continue;
		}
		dir[runs] = strchr(argv[a], '=');
		if (!dir[runs] || runs == MAX_RUNS) {
			fprintf(stderr, "hvoreport: '%s': expected at most %d LABEL=OUTDIR\n",
				argv[a], MAX_RUNS);
			return 2;
		}
		*dir[runs]++ = '\0';
		label[runs++] = argv[a];
	}
	if (ours < 0)
		ours = runs;
	if (!ours) {
		fprintf(stderr, "hvoreport: --compare needs a LABEL=OUTDIR before --reference\n");
		return 2;
	}
	for (r = 0; r < runs; r++) {
		char path[PATH_MAX];
		long p = -1, f = -1, v;
		char sc[32], key[96];
		FILE *in;

		snprintf(path, sizeof(path), "%s/figures.tsv", dir[r]);
		in = fopen(path, "re");
		if (in) {
			while (fscanf(in, "%31s %95s %ld", sc, key, &v) == 3) {
				struct value *slot = figure_slot(tab[r], &nr[r], sc, key);

				if (slot)
					slot->v += v;
			}
			fclose(in);
		}
		snprintf(path, sizeof(path), "%s/check.log", dir[r]);
		in = fopen(path, "re");
		while (in && fgets(line, sizeof(line), in)) {
			sscanf(line, "boot: %ld passed, %ld failed", &p, &f);
			if (!strncmp(line, "not ok ", 7))
				printf("%s: %s", label[r], line);
		}
		if (in)
			fclose(in);
		if (p < 0) {
			printf("%s: no result line in %s (the run did not finish)\n", label[r], path);
			f = 1;
			p = 0;
		}
		printf("%s: %ld passed, %ld failed%s\n", label[r], p, f,
		       r < ours ? "" : " (reference, not counted)");
		if (r < ours) {
			total_passed += p;
			total_failed += f;
		}
	}

	printf("\n| scenario | figure |");
	for (r = 0; r < runs; r++)
		printf(" %s |", label[r]);
	printf("\n|---|---|");
	for (r = 0; r < runs; r++)
		printf("---|");
	putchar('\n');
	/* every figure any run reported, in the order of the first that did */
	for (r = 0; r < runs; r++) {
		for (i = 0; i < nr[r]; i++) {
			struct value *v = &tab[r][i];
			const struct value *o;
			bool seen = false;

			for (k = 0; k < r; k++)
				seen |= lookup_in(tab[k], nr[k], v->scenario, v->key) != NULL;
			if (seen)
				continue;
			printf("| %s | %s |", v->scenario, v->key);
			for (k = 0; k < runs; k++) {
				o = lookup_in(tab[k], nr[k], v->scenario, v->key);
				if (o)
					printf(" %ld |", o->v);
				else
					printf(" - |");
			}
			putchar('\n');
		}
	}
	printf("\nsoak: %ld passed, %ld failed\n", total_passed, total_failed);
	return total_failed ? 1 : 0;
}

static void read_console(const char *scenario, const char *path)
{
	FILE *f = fopen(path, "re");
	static char line[65536];
	char name[256];
	bool ended = false;

	if (!f) {
		result(false, scenario, "cannot read console %s: %s", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "HVOPROBE: ");
		struct value *val;

		if (!p)
			continue;
		p += strlen("HVOPROBE: ");
		p[strcspn(p, "\n")] = '\0';
		if (!strncmp(p, "ok ", 3) || !strncmp(p, "not ok ", 7)) {
			bool ok = p[0] == 'o';
			char *what = p + (ok ? 3 : 7);

			snprintf(name, sizeof(name), "%s/%.*s", scenario,
				 (int)strcspn(what, ":"), what);
			result(ok, name, "%s", what + strcspn(what, ":") + (what[strcspn(what, ":")] ? 2 : 0));
		} else if (!strncmp(p, "value ", 6) && nr_values < MAX_VALUES) {
			val = &values[nr_values];
			if (sscanf(p + 6, "%31s %95s %ld", val->scenario, val->key, &val->v) == 3)
				nr_values++;
		} else if (!strncmp(p, "figure ", 7)) {
			add_figure(p + 7);
		} else if (!strncmp(p, "json hvoctl-status ", 19)) {
			if (hvoctl_status)
				json_object_put(hvoctl_status);
			hvoctl_status = json_tokener_parse(p + 19);
			result(hvoctl_status != NULL, "hvoctl-status-json-parses",
			       "%zu bytes of JSON", strlen(p + 19));
		} else if (!strncmp(p, "end ", 4)) {
			ended = true;
		}
	}
	fclose(f);
	result(ended, scenario, ended ? "boot completed" : "boot did not complete (see %s)", path);
}

struct row {
	const char *label;
	long size_kb, pages, freed, pgtables;
};

static void report(const char *outdir, struct row *rows, int n,
		   long memtotal_delta, long memfree_delta)
{
	char path[PATH_MAX];
	FILE *md, *js;
	int i;

	snprintf(path, sizeof(path), "%s/savings.md", outdir);
	md = fopen(path, "we");
	snprintf(path, sizeof(path), "%s/savings.json", outdir);
	js = fopen(path, "we");
	if (!md || !js) {
		result(false, "report", "cannot write %s: %s", path, strerror(errno));
		if (md)
			fclose(md);
		if (js)
			fclose(js);
		return;
	}

	fprintf(md, "| page size | pages | vmemmap freed per page | PTE tables | net KiB saved per page | MiB saved per TiB of pool |\n");
	fprintf(md, "|---|---|---|---|---|---|\n");
	fprintf(js, "{\n  \"sizes\": [\n");
	for (i = 0; i < n; i++) {
		struct row *r = &rows[i];
		double per_page = r->pages ? (double)r->freed / r->pages : 0;
		double net_kib = r->pages ?
			(double)(r->freed - r->pgtables) * KIB_PER_PAGE / r->pages : 0;
		double per_tib = net_kib * (1024.0 * 1024 * 1024 / r->size_kb) / 1024;

		fprintf(md, "| %s | %ld | %.0f | %ld | %.2f | %.0f |\n", r->label,
			r->pages, per_page, r->pgtables, net_kib, per_tib);
		fprintf(js, "    {\"page_size_kb\": %ld, \"pages\": %ld, \"vmemmap_freed_pages\": %ld, "
			"\"vmemmap_freed_per_page\": %.0f, \"pgtable_pages\": %ld, "
			"\"net_kib_per_page\": %.4f, \"net_mib_per_tib\": %.1f}%s\n",
			r->size_kb, r->pages, r->freed, per_page, r->pgtables, net_kib,
			per_tib, i + 1 < n ? "," : "");
	}
	fprintf(md, "\nMemTotal on - off (1 GiB pages from the command line): %ld kB\n",
		memtotal_delta);
	fprintf(md, "MemFree drop of the 2 MiB pool, off - on: %ld kB\n", memfree_delta);
	fprintf(js, "  ],\n  \"memtotal_on_minus_off_kb\": %ld,\n"
		"  \"memfree_2m_pool_off_minus_on_kb\": %ld\n}\n",
		memtotal_delta, memfree_delta);
	fclose(md);
	fclose(js);

	snprintf(path, sizeof(path), "%s/savings.md", outdir);
	md = fopen(path, "re");
	if (md) {
		char line[512];

		putchar('\n');
		while (fgets(line, sizeof(line), md))
			fputs(line, stdout);
		putchar('\n');
		fclose(md);
	}
}

static long json_long(struct json_object *o, const char *a, const char *b)
{
	struct json_object *x;

	if (b) {
		if (!json_object_object_get_ex(o, a, &o))
			return LONG_MIN;
		a = b;
	}
	if (!json_object_object_get_ex(o, a, &x) || !json_object_is_type(x, json_type_int))
		return LONG_MIN;
	return json_object_get_int64(x);
}

/* hvoctl must show, as the kernel's own figures, what the probe read. */
static void check_hvoctl_status(void)
{
	static const long sizes[] = { 1048576, 2048 };
	struct json_object *pools, *pool, *hvo, *src;
	char key[64], name[96];
	size_t i, j;

	if (!hvoctl_status) {
		result(false, "hvoctl-status", "boot-on printed no hvoctl status --json");
		return;
	}
	if (!json_object_object_get_ex(hvoctl_status, "pools", &pools)) {
		result(false, "hvoctl-status", "no \"pools\" array");
		return;
	}
	for (i = 0; i < 2; i++) {
		pool = NULL;
		for (j = 0; j < json_object_array_length(pools); j++) {
			struct json_object *p = json_object_array_get_idx(pools, j);

			if (json_long(p, "size_kb", NULL) == sizes[i])
				pool = p;
		}
		snprintf(name, sizeof(name), "hvoctl-status/%ldkB", sizes[i]);
		if (!pool || !json_object_object_get_ex(pool, "hvo", &hvo)) {
			result(false, name, "pool missing in hvoctl's JSON");
			continue;
		}
		src = json_object_object_get(hvo, "source");
		result(src && !strcmp(json_object_get_string(src), "kernel"),
		       strcat(name, ".source"), "hvoctl reads the kernel counters (source %s)",
		       src ? json_object_get_string(src) : "missing");
		snprintf(key, sizeof(key), "grown.%ld.nr", sizes[i]);
		snprintf(name, sizeof(name), "hvoctl-status/%ldkB.total", sizes[i]);
		result(json_long(pool, "total", NULL) == need("boot-on", key), name,
		       "hvoctl %ld, sysfs %ld", json_long(pool, "total", NULL), need("boot-on", key));
		snprintf(key, sizeof(key), "grown.%ld.optimized", sizes[i]);
		snprintf(name, sizeof(name), "hvoctl-status/%ldkB.optimized", sizes[i]);
		result(json_long(hvo, "optimized_pages", NULL) == need("boot-on", key), name,
		       "hvoctl %ld, sysfs %ld", json_long(hvo, "optimized_pages", NULL),
		       need("boot-on", key));
		snprintf(key, sizeof(key), "grown.%ld.freed", sizes[i]);
		snprintf(name, sizeof(name), "hvoctl-status/%ldkB.freed", sizes[i]);
		result(json_long(hvo, "freed_pages", NULL) == need("boot-on", key), name,
		       "hvoctl %ld, sysfs %ld", json_long(hvo, "freed_pages", NULL),
		       need("boot-on", key));
		snprintf(key, sizeof(key), "grown.%ld.pgtables", sizes[i]);
		snprintf(name, sizeof(name), "hvoctl-status/%ldkB.pgtables", sizes[i]);
		result(json_long(hvo, "pgtable_pages", NULL) == need("boot-on", key), name,
		       "hvoctl %ld, sysfs %ld", json_long(hvo, "pgtable_pages", NULL),
		       need("boot-on", key));
	}
	result(json_long(hvoctl_status, "meminfo_saved_kb", NULL) ==
	       need("boot-on", "grown.HugetlbVmemmapSaved"), "hvoctl-status/meminfo_saved_kb",
	       "hvoctl %ld, /proc/meminfo %ld", json_long(hvoctl_status, "meminfo_saved_kb", NULL),
	       need("boot-on", "grown.HugetlbVmemmapSaved"));
}

static void compare_off_on(const char *outdir)
{
	long on_total, off_total, freed_1g, pgt_1g, freed_2m, pgt_2m, d_on, d_off;
	long nr_1g, nr_2m, want;
	struct row rows[2];

	if (!lookup("boot-on", "boot.MemTotal", &on_total) ||
	    !lookup("boot-off", "boot.MemTotal", &off_total)) {
		result(false, "off-vs-on", "needs both the boot-off and boot-on consoles");
		return;
	}
	nr_1g = need("boot-on", "grown.1048576.nr");
	freed_1g = need("boot-on", "grown.1048576.freed");
	pgt_1g = need("boot-on", "grown.1048576.pgtables");
	nr_2m = need("boot-on", "grown.2048.nr");
	freed_2m = need("boot-on", "grown.2048.freed");
	pgt_2m = need("boot-on", "grown.2048.pgtables");
	d_on = need("boot-on", "grow2m.MemFreeDelta");
	d_off = need("boot-off", "grow2m.MemFreeDelta");

	/* vmemmap of boot-time pages comes from memblock: freeing it raises MemTotal */
	want = freed_1g * KIB_PER_PAGE;
	result(on_total - off_total == want, "off-vs-on/MemTotal-equals-1G-counters",
	       "MemTotal on - off = %ld kB, counters say %ld kB", on_total - off_total, want);
	/* the runtime 2 MiB pool costs less MemFree with HVO by freed - PTE tables */
	want = (freed_2m - pgt_2m) * KIB_PER_PAGE;
	result(labs((d_on - d_off) - want) <= 1024, "off-vs-on/MemFree-drop-equals-2M-counters",
	       "MemFree drop off - on = %ld kB, counters say %ld kB (+- 1024)",
	       d_on - d_off, want);
	result(nr_1g && (freed_1g - pgt_1g) * KIB_PER_PAGE / nr_1g >= 16340,
	       "net-per-1G-page", "%ld kB saved per 1 GiB page (>= 16340)",
	       nr_1g ? (freed_1g - pgt_1g) * KIB_PER_PAGE / nr_1g : 0);

	rows[0] = (struct row){ "1 GiB", 1048576, nr_1g, freed_1g, pgt_1g };
	rows[1] = (struct row){ "2 MiB", 2048, nr_2m, freed_2m, pgt_2m };
	report(outdir, rows, 2, on_total - off_total, d_on - d_off);
}

int main(int argc, char **argv)
{
	bool off_on = false, on = false;
	int i;

	if (argc > 1 && !strcmp(argv[1], "--compare"))
		return compare(argc - 2, argv + 2);
	if (argc < 3) {
		fprintf(stderr, "usage: hvoreport OUTDIR SCENARIO=CONSOLE_LOG...\n"
			"       hvoreport --compare LABEL=OUTDIR...\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq) {
			fprintf(stderr, "hvoreport: '%s': expected SCENARIO=CONSOLE_LOG\n", argv[i]);
			return 2;
		}
		*eq = '\0';
		read_console(argv[i], eq + 1);
		on |= !strcmp(argv[i], "boot-on");
		off_on |= !strcmp(argv[i], "boot-on") || !strcmp(argv[i], "boot-off");
	}
	if (off_on)
		compare_off_on(argv[1]);
	if (on && getenv("HVOREPORT_HVOCTL"))
		check_hvoctl_status();
	write_figures(argv[1]);
	printf("boot: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
