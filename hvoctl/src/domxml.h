/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt domain XML -> huge page demand, per page size and host NUMA
 * node set.  The only file of hvoctl that parses XML (its own strict
 * parser, no library).  Pure function: no I/O besides parsing the given
 * buffer, so it is unit-tested on fixtures and fuzzed (tests/fuzz_domxml.c).
 */
#ifndef HVOCTL_DOMXML_H
#define HVOCTL_DOMXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "size.h"

#define HV_DOM_MAX_XML (1024 * 1024) /* larger input is refused unparsed */
#define HV_DOM_MAX_DEMANDS 32
#define HV_DOM_MAX_CELLS 128         /* guest NUMA cells */
#define HV_NODESET_WORDS ((HV_MAX_NODE_ID + 1) / 64)

/* A set of node ids 0..HV_MAX_NODE_ID (host nodes or guest cells). */
struct hv_nodeset {
	uint64_t w[HV_NODESET_WORDS];
};

/* libvirt's node set syntax: "0-3,^2,5" (ranges, exclusions, blanks).
 * 0, -EINVAL or -ERANGE (id above HV_MAX_NODE_ID).  Empty result: -EINVAL. */
int hv_nodeset_parse(const char *s, struct hv_nodeset *ns);
bool hv_nodeset_has(const struct hv_nodeset *ns, int id);
void hv_nodeset_add(struct hv_nodeset *ns, int id);
bool hv_nodeset_empty(const struct hv_nodeset *ns);
bool hv_nodeset_equal(const struct hv_nodeset *a, const struct hv_nodeset *b);
/* "0,2-3"; "any" for the empty set.  Truncated output ends in "..." */
void hv_nodeset_format(const struct hv_nodeset *ns, char *buf, size_t n);

/* libvirt's scaled integer: digits and a unit as libvirt accepts it
 * (case-insensitive): b, byte(s); k, KiB = 1024; KB = 1000; M, MiB, MB;
 * G...; T...; P...; E...  An empty unit means default_scale. */
int hv_dom_scale(const char *num, const char *unit, uint64_t default_scale,
		 uint64_t *bytes);

struct hv_demand_item {
	uint64_t size_kb;
	bool strict;            /* pages must come from nodes (never spill) */
	struct hv_nodeset nodes; /* host nodes when strict, else empty */
	uint64_t pages;
};

struct hv_demand {
	char uuid[37];  /* canonical lower-case UUID, "" if none */
	char name[256]; /* domain name as given (any bytes but NUL); never
			 * used in paths except after hv_dom_name_ok() */
	bool name_truncated;
	bool hugepages; /* the guest uses huge pages at all */
	size_t n;
	struct hv_demand_item items[HV_DOM_MAX_DEMANDS];
};

/* Parse domain XML (len bytes, not NUL-terminated necessarily).
 * default_kb: the host's default huge page size (for <hugepages/> without
 * <page>).  Returns 0 or -1 with a one-line reason in err.  Items with the
 * same size and node set are merged; 4 KiB "huge" pages are normal memory
 * and produce no item. */
int hv_dom_demand(const char *xml, size_t len, uint64_t default_kb,
		  struct hv_demand *d, char *err, size_t errlen);

/* The domain UUID in libvirt's status XML of a running guest
 * (<domstatus ...><domain ...><uuid>), canonical.  0, or -1 when the
 * document is not such XML. */
int hv_dom_status_uuid(const char *xml, size_t len, char uuid[37]);

/*
 * The device-dax instances a guest's memory uses: nvdimm and virtio-pmem
 * devices whose <source><path> is /dev/daxR.N, and memory-backend-file
 * objects given with mem-path=/dev/daxR.N in <qemu:commandline> (QEMU's
 * key=value and JSON forms).  That memory is the device's, never HugeTLB:
 * hv_dom_demand() counts none of it.
 */
#define HV_DOM_MAX_DAX 16
struct hv_dom_dax {
	char name[256];         /* domain name, "" if none */
	size_t n;
	char dax[HV_DOM_MAX_DAX][32]; /* "daxR.N", each once */
};

/* Fill u from domain XML or libvirt's status XML (<domstatus><domain>).
 * 0, or -1 when the document is not such XML. */
int hv_dom_dax_uses(const char *xml, size_t len, struct hv_dom_dax *u);

/* Printable copy of a name for messages (non-printables become '?'). */
void hv_dom_safe_name(const char *name, char *out, size_t n);

/* Canonicalise a UUID string (32 hex digits, dashes optional, blanks
 * around).  0 or -EINVAL. */
int hv_uuid_canon(const char *in, char out[37]);

#endif
