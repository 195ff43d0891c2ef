// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hvosnap - one-line snapshot of the 1 GiB pool, the hvokit kernel's HVO
 * counters and /proc/meminfo, for the nested acceptance test (runs in L1).
 *
 *   hvosnap LABEL
 *
 * prints
 *
 *   HVOACC snap LABEL nr=N free=N rsvd=N surplus=N optimized=N freed=N
 *     pgtable=N saved_kb=N memtotal_kb=N memfree_kb=N hvo=N
 *     node0_optimized=N node0_freed=N
 *
 * on one line.  A value the kernel does not have is printed as -1, so the
 * host side can tell "missing" from "zero".  Exit 0.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define H1G "/sys/kernel/mm/hugepages/hugepages-1048576kB/"
#define N1G "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/"

static long long read_num(const char *path)
{
	FILE *f = fopen(path, "r");
	long long v;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* "Key:   123 kB" from /proc/meminfo; -1 if absent. */
static long long meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	size_t n = strlen(key);
	long long v = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, n) == 0 && line[n] == ':') {
			v = strtoll(line + n + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	if (argc != 2 || strchr(argv[1], ' ')) {
		fprintf(stderr, "usage: hvosnap LABEL (no blanks)\n");
		return 1;
	}
	printf("HVOACC snap %s nr=%lld free=%lld rsvd=%lld surplus=%lld "
	       "optimized=%lld freed=%lld pgtable=%lld saved_kb=%lld "
	       "memtotal_kb=%lld memfree_kb=%lld hvo=%lld "
	       "node0_optimized=%lld node0_freed=%lld\n",
	       argv[1],
	       read_num(H1G "nr_hugepages"), read_num(H1G "free_hugepages"),
	       read_num(H1G "resv_hugepages"), read_num(H1G "surplus_hugepages"),
	       read_num(H1G "vmemmap_optimized_pages"),
	       read_num(H1G "vmemmap_freed_pages"),
	       read_num(H1G "vmemmap_pgtable_pages"),
	       meminfo("HugetlbVmemmapSaved"), meminfo("MemTotal"),
	       meminfo("MemFree"),
	       read_num("/proc/sys/vm/hugetlb_optimize_vmemmap"),
	       read_num(N1G "vmemmap_optimized_pages"),
	       read_num(N1G "vmemmap_freed_pages"));
	return 0;
}
