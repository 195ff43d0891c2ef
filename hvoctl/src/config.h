/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hvokit.conf: KEY=value lines, documented in hvokit.conf(5). */
#ifndef HVOCTL_CONFIG_H
#define HVOCTL_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "size.h"

#define HV_DEFAULT_CONFIG "/etc/hvokit/hvokit.conf"

enum hv_pool_kind {
	HV_POOL_UNSET = 0, /* hvoctl leaves this pool alone */
	HV_POOL_COUNT,     /* absolute count, kernel spreads it over nodes */
	HV_POOL_PER_NODE,  /* explicit count per node; other nodes get 0 */
	HV_POOL_PERCENT,   /* share of each node's memory after HOST_RESERVE */
};

struct hv_pool_spec {
	enum hv_pool_kind kind;
	uint64_t count;
	unsigned percent;
	size_t n_nodes;
	struct hv_node_val nodes[HV_MAX_NODES];
};

/* The pool sizes hvokit.conf knows (x86-64). */
#define HV_NPOOLS 2
extern const struct hv_pool_key {
	const char *key;  /* "POOL_1G" */
	const char *name; /* "1G" */
	uint64_t size_kb;
} hv_pool_keys[HV_NPOOLS];

enum hv_release { HV_RELEASE_RETURN = 0, HV_RELEASE_KEEP };

struct hv_config {
	char path[PATH_MAX];
	bool hvo;                       /* HVO=on|off, default on */
	struct hv_pool_spec pool[HV_NPOOLS]; /* indexed like hv_pool_keys */
	uint64_t host_reserve;          /* bytes per node, default 0 */
	uint64_t default_hugepagesz_kb; /* 0: not set */
	/* CMA_1G: either one size for every node, or explicit per node. */
	uint64_t cma_1g;                /* bytes per node, 0: none */
	size_t n_cma_nodes;
	struct hv_node_val cma_nodes[HV_MAX_NODES];
	enum hv_release libvirt_release;
	uint64_t libvirt_warm_1g;
};

void hv_config_defaults(struct hv_config *c);
/* Parse a config file.  On error prints "hvoctl: FILE:LINE: KEY: ..." and
 * returns -1; returns -ENOENT (after printing) if the file is missing. */
int hv_config_load(struct hv_config *c, const char *path);
/* The config file to use: path if given, else $HVOKIT_CONF if set and not
 * empty, else HV_DEFAULT_CONFIG. */
const char *hv_config_path(const char *path);
/* Parse from a string (for tests); name is used in messages. */
int hv_config_parse(struct hv_config *c, const char *name, const char *text);

#endif
