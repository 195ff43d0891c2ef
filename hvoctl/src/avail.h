/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libvirt hook's availability model (avail.c). */
#ifndef HVOCTL_AVAIL_H
#define HVOCTL_AVAIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domxml.h"
#include "ledger.h"
#include "pools.h"

/*
 * short_out[k] (HV_DOM_MAX_DEMANDS entries): pages of d->items[k] that the
 * free pages of st cannot cover once the promises of others (entries of
 * guests still starting) and the reserved pages are served.  Returns the
 * sum.  Strict items only use their nodes; any-node items use any node.
 */
uint64_t hv_avail_shortfall(const struct hv_state *st, const struct hv_demand *d,
			    const struct hv_ledger *const *others, size_t n_others,
			    uint64_t *short_out);

/*
 * How many of the pages record a added to pool p (node index ni in p, -1:
 * the global count) may go back now: free pages beyond the reserved ones
 * and the promises of starting guests, on that node too, and never below
 * warm_1g pages in the 1G pool.  *limit: why fewer than recorded (NULL if
 * none); *warm: the LIBVIRT_WARM_1G floor was reached.
 */
uint64_t hv_avail_returnable(const struct hv_pool *p, int ni, const struct hv_ledger_add *a,
			     const struct hv_ledger *const *prom, size_t n_prom,
			     uint64_t warm_1g, const char **limit, bool *warm);

#endif
