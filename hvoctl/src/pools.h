/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Everything hvoctl knows about the host, read in one go into one struct. */
#ifndef HVOCTL_POOLS_H
#define HVOCTL_POOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "size.h"
#include "sysfs.h"

#define HV_MAX_POOLS 8
#define HV_MAX_MOUNTS 8
#define HV_BASE_PAGE 4096ULL
#define HV_STRUCT_PAGE 64ULL

struct hv_node_pool {
	int node;
	uint64_t total, free, surplus;
	bool has_counters; /* hvokit kernel per-node HVO counters */
	uint64_t optimized, freed;
};

struct hv_pool {
	uint64_t size_kb;
	uint64_t total, free, resv, surplus, overcommit;
	bool has_counters; /* hvokit kernel HVO counters for this size */
	uint64_t optimized, freed, pgtable;
	size_t n_nodes; /* same order as hv_state.nodes */
	struct hv_node_pool nodes[HV_MAX_NODES];
	size_t n_mounts;
	char mounts[HV_MAX_MOUNTS][1024];
};

struct hv_node {
	int id;
	bool has_memtotal;
	uint64_t memtotal_kb;
};

enum { HV_BOOT_ABSENT = -1, HV_BOOT_OFF = 0, HV_BOOT_ON = 1 };

#define HV_MAX_DEVDAX 32
#define HV_DEVDAX_SHOWN_GUESTS 4
#define HV_DAX_DIR "/sys/bus/dax/devices"

/* Where the struct pages of a device-dax instance live. */
enum hv_memmap { HV_MEMMAP_RAM, HV_MEMMAP_DEVICE };

/* A device-dax instance (/sys/bus/dax/devices/daxR.N): guest memory that
 * is no huge page pool's, and whose memmap compound pages can shrink. */
struct hv_devdax {
	char name[32];
	uint64_t size, align;   /* bytes */
	int node;               /* numa_node, -1 unknown */
	enum hv_memmap memmap;  /* the nd device's mode "pmem": in the device */
	bool enabled;           /* bound to a driver (device_dax or kmem) */
	bool has_saved;         /* hvokit kernel: vmemmap_saved */
	uint64_t saved_bytes;   /* from the kernel, else estimated */
	size_t n_guests;        /* running guests whose memory it backs */
	char guests[HV_DEVDAX_SHOWN_GUESTS][64]; /* the first ones, printable */
};

struct hv_state {
	size_t n_pools; /* largest size first */
	struct hv_pool pools[HV_MAX_POOLS];
	size_t n_nodes;
	struct hv_node nodes[HV_MAX_NODES];
	bool numa;                /* /sys/devices/system/node exists */
	uint64_t default_size_kb; /* Hugepagesize: from /proc/meminfo, 0 unknown
				   * or not a huge page size */
	uint64_t memtotal_kb;     /* MemTotal: from /proc/meminfo, 0 unknown */
	bool hvo_supported;       /* vm.hugetlb_optimize_vmemmap exists */
	int hvo_sysctl;           /* 0/1, -1 when absent */
	int hvo_boot;             /* HV_BOOT_* from /proc/cmdline */
	bool has_meminfo_saved;   /* HugetlbVmemmapSaved: present */
	int64_t meminfo_saved_kb;
	char osrelease[128];      /* "" if unknown */
	size_t n_devdax;          /* sorted by name */
	struct hv_devdax devdax[HV_MAX_DEVDAX];
	bool has_meminfo_dev_saved; /* DeviceVmemmapSaved: present */
	uint64_t meminfo_dev_saved_kb;
	bool counts_only;         /* hv_state_read_pools(): no HVO counters,
				   * mounts, device-dax, sysctl or release */
};

/*
 * Fill the guests of st's device-dax instances from libvirt's status XML
 * of the running guests (rundir/NAME.xml, rundir under s's root).  For
 * display: a file that cannot be read or parsed is skipped.
 */
void hv_devdax_read_guests(const struct hv_sys *s, const char *rundir, struct hv_state *st);

#define HV_SYSCTL_HVO "/proc/sys/vm/hugetlb_optimize_vmemmap"
#define HV_HP_DIR "/sys/kernel/mm/hugepages"
#define HV_NODE_DIR "/sys/devices/system/node"

/* Path of a file of one pool: node < 0 the global pool
 * (/sys/kernel/mm/hugepages/hugepages-SIZEkB/FILE), else that node's. */
void hv_pool_file(char *buf, size_t n, uint64_t size_kb, int node, const char *file);

/* The page count of one pool (node < 0: the global nr_hugepages), read
 * without a message.  0 or -errno. */
int hv_pool_count(const struct hv_sys *s, uint64_t size_kb, int node, uint64_t *v);

/* The figures of /proc/meminfo that hvoctl uses. */
struct hv_meminfo {
	uint64_t default_size_kb; /* Hugepagesize:, 0 unknown or no huge page size */
	uint64_t memtotal_kb;     /* MemTotal:, 0 unknown */
	bool has_saved;           /* HugetlbVmemmapSaved: present */
	int64_t saved_kb;
	bool has_dev_saved;       /* DeviceVmemmapSaved: present */
	uint64_t dev_saved_kb;
};
/* Unreadable /proc/meminfo leaves everything unknown (zero). */
void hv_meminfo_read(const struct hv_sys *s, struct hv_meminfo *mi);

/* The value of the last "name=value" on the kernel command line before
 * "--" (the kernel's rule; a bare "name" is ignored).  true if found. */
bool hv_cmdline_param(const struct hv_sys *s, const char *name, char *val, size_t n);

/* Read the whole state.  Prints errors; returns 0 or -1. */
int hv_state_read(const struct hv_sys *s, struct hv_state *st);
/* Only what the libvirt hook uses, with fewer system calls on its
 * latency-bound path: nodes and their MemTotal, /proc/meminfo, and each
 * pool's page counts (st->counts_only is set; hv_pool_reread() then reads
 * counts only too).  Prints errors; returns 0 or -1. */
int hv_state_read_pools(const struct hv_sys *s, struct hv_state *st);
/* Re-read only the counts of one pool (after a reserve). */
int hv_pool_reread(const struct hv_sys *s, struct hv_state *st, struct hv_pool *p);

struct hv_pool *hv_state_pool(struct hv_state *st, uint64_t size_kb);
int hv_state_node_index(const struct hv_state *st, int node); /* -1 if not */

/* Vmemmap pages HVO frees per huge page of this size (x86-64: 64-byte
 * struct page, 4 KiB base pages; keeps one page): 2M -> 7, 1G -> 4095. */
uint64_t hv_expected_freed(uint64_t size_kb);
/* Estimated page-table pages for n huge pages: one PTE table per 2 MiB of
 * vmemmap that is split (1G: 8 per page; 2M: 1 per 64 pages). */
uint64_t hv_estimated_pgtable(uint64_t size_kb, uint64_t n);

struct hv_savings {
	bool from_kernel; /* false: estimate */
	uint64_t optimized, freed, pgtable;
	int64_t saved_bytes; /* (freed - pgtable) * 4 KiB, saturated */
};
void hv_pool_savings(const struct hv_state *st, const struct hv_pool *p,
		     struct hv_savings *sv);
/* Whole host: from HugetlbVmemmapSaved when present, else sum of pools. */
void hv_total_savings(const struct hv_state *st, struct hv_savings *sv);

/* What the compound pagemap of an enabled device-dax instance of @size
 * bytes saves, as the hvokit kernel counts it (vmemmap pages not allocated,
 * 2 kept per compound page, less one PTE table per 2 MiB of vmemmap);
 * 0 for a memmap in the device or an alignment of 256 KiB or less. */
uint64_t hv_devdax_estimated_saved(uint64_t size, uint64_t align, enum hv_memmap memmap);

/* True if the kernel release (e.g. "6.1.0-13-amd64") is >= major.minor.
 * Unknown releases count as new enough. */
bool hv_kernel_at_least(const char *release, unsigned major, unsigned minor);

#endif
