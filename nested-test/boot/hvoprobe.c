// SPDX-License-Identifier: GPL-2.0
/*
 * hvoprobe - in-guest probe of the hvokit QEMU boot test.
 *
 * Runs one scenario inside a freshly booted test kernel, changes huge page
 * pools through sysfs, reads HVO's counters, /proc/meminfo and
 * /proc/kpageflags, and prints one line per finding on the console:
 *
 *   HVOPROBE: ok NAME: details
 *   HVOPROBE: not ok NAME: expected X, got Y
 *   HVOPROBE: value SCENARIO KEY NUMBER        (read by hvoreport)
 *   HVOPROBE: done SCENARIO
 *
 * It is linked statically and runs as root from the initramfs: it never
 * runs on the machine that builds it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KIB_PER_PAGE	4L
#define PAGE_SHIFT	12
#define SZ_2M_KB	2048L
#define SZ_1G_KB	1048576L
/* struct page is 64 bytes: one 4 KiB vmemmap page describes 64 pages */
#define VMEMMAP_PAGES(kb)	((kb) / KIB_PER_PAGE / 64)
/* one vmemmap PMD (2 MiB) maps the struct pages of 128 MiB of memory */
#define PFNS_PER_VMEMMAP_PMD	(32768UL)

#define KPF_COMPOUND_HEAD	15
#define KPF_COMPOUND_TAIL	16
#define KPF_HUGE		17
#define KPF(bit)		(1ULL << (bit))

/* Free memory tolerance: slab and page cache move a little. */
#define MEMFREE_SLACK_KB	1024L

static int failures;

static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("HVOPROBE: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	va_end(ap);
}

static void check(bool cond, const char *name, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!cond)
		failures++;
	say("%s %s: %s", cond ? "ok" : "not ok", name, buf);
}

static void check_eq(long expected, long got, const char *name)
{
	check(expected == got, name, "expected %ld, got %ld", expected, got);
}

static void check_near(long expected, long got, long slack, const char *name)
{
	check(labs(expected - got) <= slack, name,
	      "expected %ld +- %ld, got %ld", expected, slack, got);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("HVOPROBE: not ok probe: ", stdout);
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
	exit(1);
}

/* Returns -1 when the file does not exist (unpatched kernel). */
static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		die("%s: not a number", path);
	fclose(f);
	return v;
}

static void write_long(const char *path, long v)
{
	FILE *f = fopen(path, "we");

	if (!f)
		die("%s: %s", path, strerror(errno));
	fprintf(f, "%ld\n", v);
	/* the kernel may give fewer pages than asked: callers read back */
	if (fclose(f) != 0 && errno != ENOMEM)
		die("write %ld to %s: %s", v, path, strerror(errno));
}

static long hp_read(long size_kb, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%ldkB/%s",
		 size_kb, file);
	return read_long(path);
}

static long hp_node_read(int nid, long size_kb, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path),
		 "/sys/devices/system/node/node%d/hugepages/hugepages-%ldkB/%s",
		 nid, size_kb, file);
	return read_long(path);
}

static long set_pool(long size_kb, long count)
{
	char path[256];
	long got;

	snprintf(path, sizeof(path),
		 "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages", size_kb);
	write_long(path, count);
	got = read_long(path);
	say("info pool %ld kB: asked %ld, have %ld", size_kb, count, got);
	/* what holds the pages a shrink could not free */
	if (got > count)
		say("info pool %ld kB: free %ld, reserved %ld, surplus %ld", size_kb,
		    hp_read(size_kb, "free_hugepages"), hp_read(size_kb, "resv_hugepages"),
		    hp_read(size_kb, "surplus_hugepages"));
	return got;
}

/* A /proc/meminfo field in kB; LONG_MIN when absent. */
static long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "re");
	char line[256];
	size_t len = strlen(key);
	long v = LONG_MIN;

	if (!f)
		die("/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * Free memory in kB, counting the pages that wait on the per-cpu free lists:
 * MemFree only counts pages in the buddy lists, and freed vmemmap pages and
 * huge pages go through the per-cpu lists first.
 */
static long free_kb(void)
{
	FILE *f = fopen("/proc/zoneinfo", "re");
	char line[256];
	long pcp = 0, v;

	if (!f)
		die("/proc/zoneinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, " count: %ld", &v) == 1)
			pcp += v;
	fclose(f);
	return meminfo("MemFree") + pcp * KIB_PER_PAGE;
}

struct hvo {
	long nr, free, optimized, freed, pgtables;
};

static struct hvo hvo_read(long size_kb)
{
	struct hvo s = {
		.nr		= hp_read(size_kb, "nr_hugepages"),
		.free		= hp_read(size_kb, "free_hugepages"),
		.optimized	= hp_read(size_kb, "vmemmap_optimized_pages"),
		.freed		= hp_read(size_kb, "vmemmap_freed_pages"),
		.pgtables	= hp_read(size_kb, "vmemmap_pgtable_pages"),
	};

	if (s.optimized < 0 || s.freed < 0 || s.pgtables < 0)
		die("hugepages-%ldkB has no vmemmap_* counters: is this the patched kernel?",
		    size_kb);
	return s;
}

static void values(const char *scenario, const char *label, long size_kb)
{
	struct hvo s = hvo_read(size_kb);

	say("value %s %s.%ld.nr %ld", scenario, label, size_kb, s.nr);
	say("value %s %s.%ld.optimized %ld", scenario, label, size_kb, s.optimized);
	say("value %s %s.%ld.freed %ld", scenario, label, size_kb, s.freed);
	say("value %s %s.%ld.pgtables %ld", scenario, label, size_kb, s.pgtables);
}

static void meminfo_values(const char *scenario, const char *label)
{
	say("value %s %s.MemTotal %ld", scenario, label, meminfo("MemTotal"));
	say("value %s %s.MemFree %ld", scenario, label, meminfo("MemFree"));
	say("value %s %s.Free %ld", scenario, label, free_kb());
	say("value %s %s.HugetlbVmemmapSaved %ld", scenario, label,
	    meminfo("HugetlbVmemmapSaved"));
}

/* Per-node counters must add up to the global ones. */
static void check_nodes(long size_kb, const char *when)
{
	struct hvo g = hvo_read(size_kb);
	long opt = 0, freed = 0, nr = 0, v;
	char name[128];
	int nid;

	for (nid = 0; nid < 64; nid++) {
		v = hp_node_read(nid, size_kb, "vmemmap_optimized_pages");
		if (v < 0)
			continue;
		opt += v;
		freed += hp_node_read(nid, size_kb, "vmemmap_freed_pages");
		nr += hp_node_read(nid, size_kb, "nr_hugepages");
	}
	snprintf(name, sizeof(name), "%s.%ldkB.nodes-sum-optimized", when, size_kb);
	check_eq(g.optimized, opt, name);
	snprintf(name, sizeof(name), "%s.%ldkB.nodes-sum-freed", when, size_kb);
	check_eq(g.freed, freed, name);
	snprintf(name, sizeof(name), "%s.%ldkB.nodes-sum-nr", when, size_kb);
	check_eq(g.nr, nr, name);
}

/* HugetlbVmemmapSaved must equal the sum of freed less page tables. */
static void check_meminfo_line(const char *when)
{
	long sizes[] = { SZ_2M_KB, SZ_1G_KB };
	long net = 0;
	char name[128];
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct hvo s = hvo_read(sizes[i]);

		net += s.freed - s.pgtables;
	}
	snprintf(name, sizeof(name), "%s.meminfo-HugetlbVmemmapSaved", when);
	check_eq(net * KIB_PER_PAGE, meminfo("HugetlbVmemmapSaved"), name);
}

/* All of /proc/kpageflags, one uint64_t per pfn; *n gets the count. */
static uint64_t *kpageflags_all(size_t *n)
{
	uint64_t *flags = NULL;
	size_t cap = 0;
	ssize_t r;
	int fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("/proc/kpageflags: %s", strerror(errno));
	*n = 0;
	for (;;) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 1 << 20;
			flags = realloc(flags, cap * sizeof(*flags));
			if (!flags)
				die("out of memory reading /proc/kpageflags");
		}
		r = read(fd, flags + *n, (cap - *n) * sizeof(*flags));
		if (r < 0)
			die("/proc/kpageflags: %s", strerror(errno));
		if (r == 0)
			break;
		*n += r / sizeof(*flags);
	}
	close(fd);
	return flags;
}

/*
 * Whether pfn heads a HugeTLB page of size_kb (2 MiB or 1 GiB): a 1 GiB
 * page's pfn+512 is still one of its tails, a 2 MiB page's is not.
 */
static bool is_head_of(const uint64_t *flags, size_t n, size_t pfn, long size_kb)
{
	bool tail512;

	if ((flags[pfn] & (KPF(KPF_HUGE) | KPF(KPF_COMPOUND_HEAD))) !=
	    (KPF(KPF_HUGE) | KPF(KPF_COMPOUND_HEAD)))
		return false;
	tail512 = pfn + 512 < n && (flags[pfn + 512] & KPF(KPF_COMPOUND_TAIL));
	return size_kb == SZ_1G_KB ? tail512 : !tail512;
}

/*
 * The number of distinct vmemmap PMDs (128 MiB of memory each) that hold
 * the struct pages of the 2 MiB HugeTLB pages in the pool, found through
 * /proc/kpageflags.  On a fresh boot it is the number of PTE tables the
 * first optimization of those pages has to spend.
 */
static long vmemmap_pmds_of_2m_pages(void)
{
	size_t n, pfn;
	uint64_t *flags = kpageflags_all(&n);
	long pmds = 0;
	unsigned long last = ~0UL;

	for (pfn = 0; pfn + 512 <= n; pfn++) {
		if (!is_head_of(flags, n, pfn, SZ_2M_KB))
			continue;
		if (pfn / PFNS_PER_VMEMMAP_PMD != last) {
			last = pfn / PFNS_PER_VMEMMAP_PMD;
			pmds++;
		}
	}
	free(flags);
	return pmds;
}

/* Expectations for a pool that is fully optimized. */
static void check_optimized(const char *when, long size_kb, long nr)
{
	struct hvo s = hvo_read(size_kb);
	char name[128];

	snprintf(name, sizeof(name), "%s.%ldkB.optimized", when, size_kb);
	check_eq(nr, s.optimized, name);
	snprintf(name, sizeof(name), "%s.%ldkB.freed-per-page", when, size_kb);
	check_eq(VMEMMAP_PAGES(size_kb) - 1,
		 s.optimized ? s.freed / s.optimized : -1, name);
	snprintf(name, sizeof(name), "%s.%ldkB.freed", when, size_kb);
	check_eq(nr * (VMEMMAP_PAGES(size_kb) - 1), s.freed, name);
}

static long need_pool(long size_kb, long count)
{
	long got = set_pool(size_kb, count);
	char name[64];

	snprintf(name, sizeof(name), "pool-%ldkB-allocated", size_kb);
	check_eq(count, got, name);
	return got;
}

/*
 * Boot with N x 1 GiB pages from the command line and HVO on or off, then
 * grow a 2 MiB pool at runtime.  Values go to the report; the off/on
 * comparison is done on the host by hvoreport.
 */
static void scenario_boot(const char *scenario, bool on, long nr_1g, long nr_2m)
{
	long free0, free1, pmds;
	struct hvo g, m;

	check_eq(nr_1g, hp_read(SZ_1G_KB, "nr_hugepages"), "boot.1G-pool-from-cmdline");
	meminfo_values(scenario, "boot");
	values(scenario, "boot", SZ_1G_KB);
	g = hvo_read(SZ_1G_KB);
	if (on) {
		check_optimized("boot", SZ_1G_KB, nr_1g);
		/* 16 MiB of vmemmap per 1 GiB page spans 8 vmemmap PMDs */
		check_eq(nr_1g * 8, g.pgtables, "boot.1048576kB.pgtables");
	} else {
		check_eq(0, g.optimized, "boot.1048576kB.optimized-off");
		check_eq(0, g.pgtables, "boot.1048576kB.pgtables-off");
	}

	free0 = free_kb();
	need_pool(SZ_2M_KB, nr_2m);
	free1 = free_kb();
	m = hvo_read(SZ_2M_KB);
	say("value %s grow2m.MemFreeDelta %ld", scenario, free1 - free0);
	meminfo_values(scenario, "grown");
	values(scenario, "grown", SZ_2M_KB);
	values(scenario, "grown", SZ_1G_KB);

	if (on) {
		check_optimized("grown", SZ_2M_KB, nr_2m);
		pmds = vmemmap_pmds_of_2m_pages();
		check_eq(pmds, m.pgtables, "grown.2048kB.pgtables-equal-vmemmap-pmds");
		/* the pool takes its pages, HVO gives back 7 of 8 vmemmap pages */
		check_near(-nr_2m * SZ_2M_KB + (m.freed - m.pgtables) * KIB_PER_PAGE,
			   free1 - free0, MEMFREE_SLACK_KB, "grown.MemFree-delta");
	} else {
		check_eq(0, m.optimized, "grown.2048kB.optimized-off");
		check_near(-nr_2m * SZ_2M_KB, free1 - free0, MEMFREE_SLACK_KB,
			   "grown.MemFree-delta-off");
	}
	check_nodes(SZ_2M_KB, "grown");
	check_nodes(SZ_1G_KB, "grown");
	check_meminfo_line("grown");
}

/* HVO off on the command line, switched on through the sysctl. */
static void scenario_runtime(void)
{
	const char *sysctl = "/proc/sys/vm/hugetlb_optimize_vmemmap";
	long before_on, got_1g;
	struct hvo s;

	check_eq(0, read_long(sysctl), "runtime.sysctl-initially-off");
	before_on = need_pool(SZ_2M_KB, 256);
	check_eq(0, hvo_read(SZ_2M_KB).optimized, "runtime.pages-before-sysctl-not-optimized");

	write_long(sysctl, 1);
	check_eq(1, read_long(sysctl), "runtime.sysctl-on");
	/* 1 GiB first: the 2 MiB pages would fragment the free 1 GiB ranges */
	got_1g = need_pool(SZ_1G_KB, 2);
	check_optimized("runtime", SZ_1G_KB, got_1g);
	check_eq(got_1g * 8, hvo_read(SZ_1G_KB).pgtables, "runtime.1048576kB.pgtables");

	need_pool(SZ_2M_KB, 512);
	s = hvo_read(SZ_2M_KB);
	check_eq(512 - before_on, s.optimized, "runtime.2048kB.only-new-pages-optimized");
	check_eq((512 - before_on) * 7, s.freed, "runtime.2048kB.freed");
	meminfo_values("runtime", "grown");
	values("runtime", "grown", SZ_2M_KB);
	values("runtime", "grown", SZ_1G_KB);
	check_nodes(SZ_2M_KB, "runtime");
	check_nodes(SZ_1G_KB, "runtime");
	check_meminfo_line("runtime");
}

/*
 * Boot with 1 GiB pages and HVO on, grow a 2 MiB pool, then shrink both to
 * zero: every vmemmap page must be restored and no page lost.
 */
static void scenario_shrink(long nr_1g, long nr_2m)
{
	long free0, free1, free2, pgt2m, pgt1g;

	free0 = free_kb();
	need_pool(SZ_2M_KB, nr_2m);
	check_optimized("shrink-grown", SZ_2M_KB, nr_2m);
	pgt2m = hvo_read(SZ_2M_KB).pgtables;
	pgt1g = hvo_read(SZ_1G_KB).pgtables;

	set_pool(SZ_2M_KB, 0);
	free1 = free_kb();
	check_eq(0, hvo_read(SZ_2M_KB).optimized, "shrunk.2048kB.optimized");
	check_eq(0, hvo_read(SZ_2M_KB).freed, "shrunk.2048kB.freed");
	check_eq(pgt2m, hvo_read(SZ_2M_KB).pgtables, "shrunk.2048kB.pgtables-stay");
	/* the PTE tables stay allocated: that is all that may be missing */
	check_near(free0 - pgt2m * KIB_PER_PAGE, free1, MEMFREE_SLACK_KB,
		   "shrunk.2048kB.MemFree-back");

	set_pool(SZ_1G_KB, 0);
	free2 = free_kb();
	check_eq(0, hvo_read(SZ_1G_KB).nr, "shrunk.1048576kB.nr");
	check_eq(0, hvo_read(SZ_1G_KB).optimized, "shrunk.1048576kB.optimized");
	check_eq(0, hvo_read(SZ_1G_KB).freed, "shrunk.1048576kB.freed");
	check_eq(pgt1g, hvo_read(SZ_1G_KB).pgtables, "shrunk.1048576kB.pgtables-stay");
	/* each page returns 1 GiB to the buddy allocator less its vmemmap */
	check_near(nr_1g * (SZ_1G_KB - (VMEMMAP_PAGES(SZ_1G_KB) - 1) * KIB_PER_PAGE),
		   free2 - free1, MEMFREE_SLACK_KB, "shrunk.1048576kB.MemFree-back");
	check_eq(-(pgt2m + pgt1g) * KIB_PER_PAGE, meminfo("HugetlbVmemmapSaved"),
		 "shrunk.meminfo-only-pgtables-left");
	check_nodes(SZ_2M_KB, "shrunk");
	check_nodes(SZ_1G_KB, "shrunk");
	meminfo_values("shrink", "shrunk");
}

/* ---- stress: pools change from several CPUs at once ---- */

static unsigned int rnd(unsigned int *seed, unsigned int n)
{
	*seed = *seed * 1103515245u + 12345u;
	return (*seed >> 16) % n;
}

static bool before(const struct timespec *end)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec < end->tv_sec;
}

/* Write without dying: a short pool is expected under this load. */
static void poke(const char *path, long v)
{
	FILE *f = fopen(path, "we");

	if (!f)
		return;
	fprintf(f, "%ld\n", v);
	fclose(f);
}

/* What one worker of the stress and walkers scenarios does, over and over. */
enum worker {
	W_RESIZE_2M,		/* resize the 2 MiB pool */
	W_RESIZE_2M_NODE0,	/* resize the 2 MiB pool of node 0 */
	W_RESIZE_1G,		/* resize the 1 GiB pool */
	W_TOGGLE_HVO,		/* toggle vm.hugetlb_optimize_vmemmap: optimized and plain pages mix */
	W_MAP_HUGETLBFS,	/* map, touch and unmap hugetlbfs files */
	W_READ_KPAGE,		/* read /proc/kpageflags and /proc/kpagecount */
	W_PAGE_IDLE,		/* mark every pfn idle: get_page_unless_zero() on LRU pages */
	W_COMPACT,		/* compact all memory: the compaction pfn scanners */
	W_ANON_CHURN,		/* map, touch and unmap 64 MiB of 4 KiB anonymous pages */
	NR_WORKERS
};

static const char *const worker_names[NR_WORKERS] = {
	"resize-2M", "resize-2M-node0", "resize-1G", "toggle-HVO", "map-hugetlbfs",
	"read-kpage", "page-idle", "compact", "anon-churn",
};

#define WORKER_BUF	(1 << 20)

/* Reads a whole file in WORKER_BUF chunks; returns the pfns covered. */
static long read_through(const char *path, char *buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long pfns = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	while ((r = read(fd, buf, WORKER_BUF)) > 0)
		pfns += r / sizeof(uint64_t);
	close(fd);
	return pfns;
}

/*
 * Sets the idle bit of every pfn: the kernel stops at max_pfn (ENXIO).
 * Returns the pfns covered.
 */
static long mark_all_idle(char *buf)
{
	const size_t chunk = 64 << 10;	/* 512 Ki pfns, 2 GiB of memory */
	int fd = open("/sys/kernel/mm/page_idle/bitmap", O_WRONLY | O_CLOEXEC);
	long pfns = 0;
	ssize_t r;

	if (fd < 0)
		return 0;
	memset(buf, 0xff, chunk);
	while ((r = pwrite(fd, buf, chunk, pfns / 8)) > 0)
		pfns += r * 8;
	close(fd);
	return pfns;
}

static void map_hugetlbfs_file(unsigned int *seed)
{
	size_t len = (1 + rnd(seed, 32)) << 21;
	int fd = open("/mnt/huge/stress", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	char *p;
	size_t off;

	if (fd < 0)
		return;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p != MAP_FAILED) {
		for (off = 0; off < len; off += 4096)
			p[off] = (char)off;
		munmap(p, len);
	}
	close(fd);
	unlink("/mnt/huge/stress");
}

static void anon_churn(void)
{
	const size_t len = 64 << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t off;

	if (p == MAP_FAILED)
		return;
	/* 4 KiB pages on the LRU lists, not a THP */
	madvise(p, len, MADV_NOHUGEPAGE);
	for (off = 0; off < len; off += 4096)
		p[off] = (char)off;
	munmap(p, len);
}

/* One worker; returns the number of operations done. */
static long run_worker(const char *scenario, enum worker kind, unsigned int seed,
		       const struct timespec *end)
{
	const char *g2m = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages";
	const char *n2m = "/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages";
	const char *g1g = "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages";
	long ops = 0, max_1g = 0, pfns = 0, v;
	char *buf = NULL, name[96];

	if (kind == W_READ_KPAGE || kind == W_PAGE_IDLE) {
		buf = malloc(WORKER_BUF);
		if (!buf)
			die("out of memory");
	}
	while (before(end)) {
		switch (kind) {
		case W_RESIZE_2M:
			poke(g2m, rnd(&seed, 600));
			break;
		case W_RESIZE_2M_NODE0:
			poke(n2m, rnd(&seed, 600));
			break;
		case W_RESIZE_1G:
			poke(g1g, rnd(&seed, 3));
			v = read_long(g1g);
			if (v > max_1g)
				max_1g = v;
			break;
		case W_TOGGLE_HVO:
			poke("/proc/sys/vm/hugetlb_optimize_vmemmap", rnd(&seed, 2));
			usleep(20000);
			break;
		case W_MAP_HUGETLBFS:
			map_hugetlbfs_file(&seed);
			break;
		case W_READ_KPAGE:
			pfns += read_through(ops % 2 ? "/proc/kpagecount" : "/proc/kpageflags", buf);
			break;
		case W_PAGE_IDLE:
			pfns += mark_all_idle(buf);
			break;
		case W_COMPACT:
			poke("/proc/sys/vm/compact_memory", 1);
			break;
		case W_ANON_CHURN:
			anon_churn();
			break;
		default:
			die("worker kind %d", kind);
		}
		ops++;
	}
	free(buf);
	/* the 1 GiB path must really have been exercised */
	if (kind == W_RESIZE_1G) {
		snprintf(name, sizeof(name), "%s.1G-pool-grew", scenario);
		check(max_1g > 0, name, "largest 1 GiB pool seen: %ld", max_1g);
	}
	/* and the walkers must really have walked */
	if (kind == W_READ_KPAGE || kind == W_PAGE_IDLE) {
		snprintf(name, sizeof(name), "%s.%s-walked", scenario, worker_names[kind]);
		check(ops > 0 && pfns >= ops * 1000, name, "%ld pfns in %ld passes", pfns, ops);
	}
	return ops;
}

/* Runs the workers in parallel for that long; all must exit cleanly. */
static void run_workers(const char *scenario, const enum worker *kinds, int nr, int seconds)
{
	struct timespec end;
	int i, status, crashed = 0;
	char name[96];
	pid_t pid[NR_WORKERS];

	if (nr > NR_WORKERS)
		die("%d workers", nr);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += seconds;
	for (i = 0; i < nr; i++) {
		pid[i] = fork();
		if (pid[i] < 0)
			die("fork: %s", strerror(errno));
		if (!pid[i]) {
			long ops = run_worker(scenario, kinds[i], 7919u * (i + 1), &end);

			say("info %s %s: %ld operations", scenario, worker_names[kinds[i]], ops);
			_exit(0);
		}
	}
	for (i = 0; i < nr; i++) {
		if (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			say("info %s %s: exit status %#x", scenario, worker_names[kinds[i]], status);
			crashed++;
		}
	}
	snprintf(name, sizeof(name), "%s.workers-exited-cleanly", scenario);
	check_eq(0, crashed, name);
}

/* Whatever mix of optimized and plain pages a pool holds must add up. */
static void check_adds_up(const char *when, long size_kb)
{
	struct hvo h = hvo_read(size_kb);
	char name[128];

	snprintf(name, sizeof(name), "%s.%ldkB.optimized-le-pool", when, size_kb);
	check(h.optimized >= 0 && h.optimized <= h.nr, name, "%ld optimized of %ld pages",
	      h.optimized, h.nr);
	snprintf(name, sizeof(name), "%s.%ldkB.freed-per-optimized", when, size_kb);
	check_eq(h.optimized * (VMEMMAP_PAGES(size_kb) - 1), h.freed, name);
	check_nodes(size_kb, when);
}

/* Empty a pool: every optimization must have been undone exactly once. */
static void check_emptied(const char *when, long size_kb)
{
	char name[128];

	set_pool(size_kb, 0);
	snprintf(name, sizeof(name), "%s.%ldkB.nr", when, size_kb);
	check_eq(0, hvo_read(size_kb).nr, name);
	snprintf(name, sizeof(name), "%s.%ldkB.optimized", when, size_kb);
	check_eq(0, hvo_read(size_kb).optimized, name);
	snprintf(name, sizeof(name), "%s.%ldkB.freed", when, size_kb);
	check_eq(0, hvo_read(size_kb).freed, name);
	check_nodes(size_kb, when);
}

/*
 * Workers change the pools from several CPUs at once; then the counters
 * must add up and read exactly 0 once the pools are emptied.
 */
static void scenario_workers(const char *scenario, const enum worker *kinds, int nr,
			     int seconds)
{
	long sizes[] = { SZ_2M_KB, SZ_1G_KB };
	char when[64];
	int i;

	run_workers(scenario, kinds, nr, seconds);

	/* Mid-state: whatever mix is left must add up. */
	for (i = 0; i < 2; i++)
		check_adds_up(scenario, sizes[i]);
	check_meminfo_line(scenario);
	meminfo_values(scenario, "mixed");

	snprintf(when, sizeof(when), "%s-emptied", scenario);
	for (i = 0; i < 2; i++)
		check_emptied(when, sizes[i]);
	check_meminfo_line(when);
}

/* Pools resized from several CPUs while a process maps hugetlbfs files. */
static void scenario_stress(int seconds)
{
	static const enum worker kinds[] = {
		W_RESIZE_2M, W_RESIZE_2M_NODE0, W_RESIZE_1G, W_TOGGLE_HVO, W_MAP_HUGETLBFS,
	};

	scenario_workers("stress", kinds, sizeof(kinds) / sizeof(kinds[0]), seconds);
}

/*
 * Pools resized while the kernel's speculative pfn walkers run: they take
 * references on, and read the flags of, struct pages that HVO may be
 * remapping read-only at that moment.
 */
static void scenario_walkers(int seconds)
{
	static const enum worker kinds[] = {
		W_RESIZE_2M, W_RESIZE_2M_NODE0, W_TOGGLE_HVO,
		W_READ_KPAGE, W_PAGE_IDLE, W_COMPACT, W_ANON_CHURN,
	};

	scenario_workers("walkers", kinds, sizeof(kinds) / sizeof(kinds[0]), seconds);
}

/* The kernel log ring buffer, NUL-terminated (free it). */
static char *klog_read(void)
{
	int len = klogctl(10, NULL, 0);		/* SYSLOG_ACTION_SIZE_BUFFER */
	char *buf;

	if (len <= 0)
		die("klogctl: %s", strerror(errno));
	buf = calloc(1, len + 1);
	if (!buf)
		die("out of memory");
	len = klogctl(3, buf, len);		/* SYSLOG_ACTION_READ_ALL */
	if (len < 0)
		die("klogctl: %s", strerror(errno));
	buf[len] = '\0';
	return buf;
}

/*
 * No WARN, BUG, Oops, stall, lockup or hung task in the kernel log, and no
 * memory failure that could not be handled ("Memory failure: 0x...:
 * recovery action for ...: Recovered" is what the fault scenario expects).
 * The first bad line comes with the 40 lines that follow it, so that the
 * console shows the backtrace whatever the console log level.
 */
static void scenario_dmesg(void)
{
	static const char *const bad[] = {
		"WARNING:", "BUG:", "Oops", "Call Trace:", "general protection",
		"kernel BUG at", "detected stall", "LOCKUP",
		"blocked for more than", "csd: ", "Kernel panic",
	};
	char *buf = klog_read(), *line, *save;
	unsigned int i;
	int hits = 0, context = -1;
	bool hit;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		hit = strstr(line, "Memory failure: ") && strstr(line, ": Failed");
		for (i = 0; !hit && i < sizeof(bad) / sizeof(bad[0]); i++)
			hit = strstr(line, bad[i]) != NULL;
		if (hit) {
			hits++;
			if (context < 0)
				context = 40;
		}
		if (hit || context > 0)
			say("info dmesg%s %s", hit ? ":" : "|", line);
		if (context > 0)
			context--;
	}
	check(hits == 0, "dmesg-clean", "%d WARN/BUG/Oops/stall/failed-recovery lines", hits);
	free(buf);
}

static long arg_long(int argc, char **argv, int i, long def)
{
	char *end;
	long v;

	if (i >= argc)
		return def;
	v = strtol(argv[i], &end, 10);
	if (*end || v < 0)
		die("'%s' is not a page count", argv[i]);
	return v;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	long nr_1g = arg_long(argc, argv, 2, 2);
	long nr_2m = arg_long(argc, argv, 3, 512);

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(s, "boot-on"))
		scenario_boot(s, true, nr_1g, nr_2m);
	else if (!strcmp(s, "boot-off"))
		scenario_boot(s, false, nr_1g, nr_2m);
	else if (!strcmp(s, "runtime"))
		scenario_runtime();
	else if (!strcmp(s, "shrink"))
		scenario_shrink(nr_1g, nr_2m);
	else if (!strcmp(s, "stress"))
		scenario_stress(nr_1g ? (int)nr_1g : 20);
	else if (!strcmp(s, "walkers"))
		scenario_walkers(nr_1g ? (int)nr_1g : 20);
	else if (!strcmp(s, "dmesg"))
		scenario_dmesg();
	else
		die("usage: hvoprobe boot-on|boot-off|runtime|shrink [NR_1G [NR_2M]] | "
		    "stress|walkers [SECONDS] | dmesg");

	say("done %s (%d failed)", s, failures);
	return failures ? 1 : 0;
}
