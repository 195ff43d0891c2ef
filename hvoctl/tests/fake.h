/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Fake sysfs/procfs trees in temporary directories, and a fake "kernel"
 * that reacts to writes like hugetlb does (partial allocation, pages in
 * use, compaction), for hvoctl's unit tests. */
#ifndef HVOCTL_FAKE_H
#define HVOCTL_FAKE_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define FK_MAX_NODES 8
#define FK_1G 1048576ULL
#define FK_2M 2048ULL

struct fake {
	char root[PATH_MAX];
	int n_nodes;
	int node_ids[FK_MAX_NODES];
	/* fake kernel, per size index (0: 1G, 1: 2M) and node index */
	bool kernel;                        /* hook installed */
	bool hvo_counters;                  /* maintain vmemmap_* counters */
	uint64_t avail[2][FK_MAX_NODES];    /* pages still obtainable */
	uint64_t compact_gain[2][FK_MAX_NODES]; /* added to avail per compaction */
	uint64_t used[2][FK_MAX_NODES];     /* pages in use (not free) */
	uint64_t resv[2];                   /* global reserved pages */
	uint64_t total[2][FK_MAX_NODES];    /* kernel's view, files mirror it */
	uint64_t free[2][FK_MAX_NODES];
	uint64_t surplus[2][FK_MAX_NODES];  /* in total, not persistent */
	unsigned writes, compactions;
	/* Pool writes (nr_hugepages, any node or global) seen so far.  When
	 * kill_at is reached, the writing process gets SIGKILL: after the
	 * kernel applied the write, or before (kill_before: file restored). */
	unsigned pool_writes;
	unsigned kill_at;
	bool kill_before;
};

/* New tree with nodes 0..n-1 (or the given ids), memtotal per node in kB,
 * 1G and 2M pools empty, HVO sysctl 1, kernel 6.1.0. */
void fake_init(struct fake *f, int n_nodes, const int *ids,
	       const uint64_t *memtotal_kb, bool hvo_counters);
void fake_free(struct fake *f);
/* Install the write hook that simulates the kernel. */
void fake_kernel_on(struct fake *f);

void fake_write(struct fake *f, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void fake_unlink(struct fake *f, const char *rel);
const char *fake_read(struct fake *f, const char *rel); /* static buffer */
uint64_t fake_u64(struct fake *f, const char *rel);
/* Node pool figures (size index 0 = 1G, 1 = 2M), globals recomputed. */
void fake_set_node(struct fake *f, int size_idx, int node_idx, uint64_t total,
		   uint64_t free);
/* The same with surplus pages (counted in total, as the kernel's
 * nr_hugepages counts them; they leave the pool when freed). */
void fake_set_node_surplus(struct fake *f, int size_idx, int node_idx, uint64_t total,
			   uint64_t free, uint64_t surplus);
uint64_t fake_node_total(struct fake *f, int size_idx, int node_idx);
uint64_t fake_total(struct fake *f, int size_idx);

/* Run hvoctl's hv_main with these args (NULL-terminated), capturing stdout
 * and diagnostics into malloc'ed strings (free them). */
int fake_run(char **out, char **err, ...);

/* Write a file anywhere (config files). Returns a static path. */
const char *fake_config(struct fake *f, const char *text);

#endif
