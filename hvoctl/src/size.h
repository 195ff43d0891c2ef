/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Strict parsing and formatting of numbers, sizes, percentages, node lists.
 * All parsers reject empty input, signs, whitespace, trailing garbage and
 * overflow; they return 0, -EINVAL (malformed) or -ERANGE (too large). */
#ifndef HVOCTL_SIZE_H
#define HVOCTL_SIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HV_MAX_NODES 64    /* nodes hvoctl handles at once */
#define HV_MAX_NODE_ID 4095 /* highest node id accepted in input */

/* Unsigned decimal number, digits only. */
int hv_parse_u64(const char *s, uint64_t *v);
/* Signed decimal number: optional '-' then digits. */
int hv_parse_s64(const char *s, int64_t *v);
/* Size in bytes: digits with optional binary unit K, M, G, T (any case),
 * optionally followed by "B" or "iB" ("1G", "2M", "1048576kB", "2MiB").
 * A bare number or "B" means bytes. */
int hv_parse_size(const char *s, uint64_t *bytes);
/* Huge page size: like hv_parse_size, result in kB, must be a power of two
 * and at least 4 KiB. */
int hv_parse_pagesize(const char *s, uint64_t *kb);
/* A huge page size in kB the kernel could have: a power of two above the
 * 4 KiB base page, at most 16 GiB.  For sizes read from the host. */
#define HV_MAX_PAGESIZE_KB (16ULL << 20)
bool hv_pagesize_kb_ok(uint64_t kb);
/* Integer percentage "0%".."100%". */
int hv_parse_percent(const char *s, unsigned *pct);

/* Node list as in /sys/devices/system/node/online: "0-1,3".
 * Sorted, duplicates rejected. */
int hv_parse_node_list(const char *s, int *nodes, size_t max, size_t *n);

struct hv_node_val {
	int node;
	uint64_t val;
};
/* "NODE:VALUE,NODE:VALUE,..." where VALUE is parsed by parse_val.
 * Duplicate nodes are rejected. */
int hv_parse_node_vals(const char *s, int (*parse_val)(const char *, uint64_t *),
		       struct hv_node_val *out, size_t max, size_t *n);

/* Compact size for people and the kernel command line: "1G", "2M", "64K",
 * or bytes if not a multiple of 1 KiB. */
void hv_format_size(uint64_t bytes, char *buf, size_t n);
/* Same for a size given in kB. */
void hv_format_kb(uint64_t kb, char *buf, size_t n);
/* Human size with one decimal ("63.9 MiB"), signed. */
void hv_format_human(int64_t bytes, char *buf, size_t n);

#endif
