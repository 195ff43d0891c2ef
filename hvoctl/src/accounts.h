/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's accounts per pool: how many pages of each pool (size,
 * host node) are the host's own, beside the pages the ledger records as
 * added for guests.  docs/design/hook-accounting.md gives the reasons,
 * hvoctl(8) section LIBVIRT HOOK the rules.
 *
 * For every pool slot (size, node; node -1 on a host without NUMA
 * information) the hook keeps
 *
 *     persistent pages (nr_hugepages - surplus_hugepages)
 *         == host floor F + sum of the pages all entries record as added R
 *
 * The hook's own pool writes keep it (the ledger's settlement moves R with
 * the count).  Every hook call, under the lock, reconciles it with the
 * pool's counts: pages that came by another route are the host's (F
 * grows); pages that left by another route leave the records first (they
 * can no longer be given back), then F.  A slot seen for the first time
 * starts with F = what the records do not explain, at least the pool
 * hvokit.conf configures there.  So a give-back, bounded by the guest's
 * records, never brings a pool below F plus the other guests' records.
 *
 * F is kept in RUNDIR/host.pools (JSON, replaced atomically).  Only a
 * reconcile writes it, after the entries it shrank, and the rules above
 * reach the same result when run again, so kill -9 between the two writes
 * leaves nothing half applied.
 */
#ifndef HVOCTL_ACCOUNTS_H
#define HVOCTL_ACCOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "ledger.h"
#include "pools.h"
#include "reserve.h"

#define HV_ACCOUNTS_FILE "host.pools"
#define HV_ACCOUNTS_MAX (HV_MAX_POOLS * (HV_MAX_NODES + 1))

struct hv_acct_slot {
	uint64_t size_kb;
	int node;       /* -1: the global pool (host without NUMA information) */
	uint64_t floor; /* pages the host holds for itself */
};

struct hv_accounts {
	size_t n, cap;
	struct hv_acct_slot *s; /* malloc'ed; hv_accounts_free() */
};
void hv_accounts_free(struct hv_accounts *a);

/* Persistent pages of one slot (ni: node index in p, -1 global). */
uint64_t hv_accounts_persistent(const struct hv_pool *p, int ni);

/*
 * Load RUNDIR/host.pools and reconcile it and the records of all n_all
 * entries with the pools of st (read just before, under the lock).
 * Entries whose records shrank are written (a released entry left empty
 * is removed and its state set to HV_LS_NONE), then the host file.  cfg
 * (may be NULL) gives the configured pools for slots seen the first time.
 * Slots with an unsettled pool write are left alone.  0, or -1 when a
 * file could not be written (logged; the next call repeats the work).
 */
int hv_accounts_reconcile(struct hv_ledger_dir *ld, const struct hv_state *st,
			  struct hv_ledger *all, size_t n_all, const struct hv_config *cfg,
			  struct hv_accounts *a);

/*
 * At most how many pages entry self may give back to slot (p, ni) now so
 * that the pool keeps the host's floor and what the other entries record:
 * persistent - F - R(others), bounded by self's own record.
 */
uint64_t hv_accounts_returnable(const struct hv_accounts *a, const struct hv_pool *p, int ni,
				const struct hv_ledger *all, size_t n_all,
				const struct hv_ledger *self);

/*
 * An administrator's pool write (hvoctl reserve, apply): call
 * hv_reserve() under the hook's lock and reconcile right after it, so the
 * setting is the host's even if it is undone before the next hook call
 * (shrinking below the pages in use and growing again leaves counts that
 * look unchanged).  Without the hook's run directory ($HVOCTL_RUNDIR or
 * /run/hvokit: no hook ever ran), or on a --sysroot tree without an
 * explicit $HVOCTL_RUNDIR, it is hv_reserve() alone.  If the lock cannot
 * be had within the hook's timeout, the write goes on without it (said
 * on the diagnostic stream).  Returns what hv_reserve() returns.
 */
int hv_accounts_admin_reserve(const struct hv_sys *s, uint64_t size_kb, int node,
			      uint64_t target, const struct hv_reserve_opts *o,
			      struct hv_reserve_result *res);

#endif
