/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hvoctl libvirt-hook: grows huge page pools before a guest with huge page
 * backing starts and gives the pages back after it stopped.
 *
 * Contract with libvirt (hooks/qemu.d/, libvirt >= 6.5): arguments
 * "DOMAIN OPERATION SUB-OPERATION EXTRA", domain XML on standard input.
 *   prepare    grow pools by the shortfall, record the grant in the ledger;
 *              the only operation that may exit non-zero (refuses the start)
 *   started    mark the guest's ledger entry running (its pages are now in
 *              use, no longer a promise on free pages); exit 0
 *   release    give back what the start added (LIBVIRT_RELEASE,
 *              LIBVIRT_WARM_1G); exit 0 whatever happens
 *   reconnect  mark the guest running, release entries of guests whose
 *              libvirt status file is gone; exit 0 whatever happens
 *   others     exit 0, nothing done
 * Nothing is ever written to standard output (for migrate and restore it
 * would replace the domain XML).  libvirt is never called back.
 *
 * What the hook added for which guest is kept in the ledger (ledger.h),
 * under its lock; a release first marks the entry "released", then gives
 * back and settles write by write: repeating it never gives back twice.
 * Pages a release could not give back (in use, reserved, promised to a
 * starting guest) stay recorded in the released entry; every later release
 * and reconnect tries again.  Every call that takes the lock first
 * reconciles the entries with the pools (accounts.h): a give-back never
 * takes more than the guest's start added and the pool still holds beyond
 * the host's floor and the other entries' records.  hvoctl(8), section
 * LIBVIRT HOOK, documents the ledger's format and these rules.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "accounts.h"
#include "avail.h"
#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "ledger.h"
#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "util.h"

/* Pages above this size (4 MiB, the buddy allocator's largest block on
 * x86-64) are gigantic: at boot they come from memblock, outside MemTotal. */
#define HV_MAX_ORDER_KB 4096
struct hk {
	const struct hv_sys *sys;
	const struct hv_hook_opts *o;
	const char *op;
	const char *arg_name; /* argv domain name, messages only */
	struct hv_ledger_dir ld;
	char lvdir[PATH_MAX];
	struct hv_demand d;
	char who[400]; /* "guest 'NAME' (UUID)" for messages */
	/* Under the lock: every entry, reconciled with the pools. */
	struct hv_ledger *all;
	size_t n_all;
	struct hv_accounts *acct;
};

static void fmt_kb(uint64_t kb, char *buf, size_t n)
{
	hv_format_kb(kb, buf, n);
}

/* ---------- prepare ---------- */

static bool cmdline_has_cma(const struct hv_sys *s)
{
	char v[64];

	return hv_cmdline_param(s, "hugetlb_cma", v, sizeof(v));
}

static void load_config(struct hk *h, struct hv_config *c)
{
	const char *path = hv_config_path(h->o->config);

	hv_config_defaults(c);
	if (access(path, F_OK) != 0)
		return;
	if (hv_config_load(c, path) < 0) {
		hv_hlog(LOG_ERR, "%s: invalid; using the defaults (release policy return, "
		     "no HOST_RESERVE)", path);
		hv_config_defaults(c);
	}
}

/*
 * Every entry, repaired (ledger.c) and reconciled with the pools of st
 * (accounts.c), into h->all; the host's floors into h->acct.  Taken with
 * the lock held, on every hook call that takes it.  0 or -1 (out of memory).
 */
static int load_entries(struct hk *h, const struct hv_state *st, const struct hv_config *cfg)
{
	h->all = hv_ledger_load_all(&h->ld, &h->n_all);
	h->acct = calloc(1, sizeof(*h->acct));
	if (!h->acct)
		return -1;
	hv_accounts_reconcile(&h->ld, st, h->all, h->n_all, cfg, h->acct);
	return 0;
}

static void free_entries(struct hk *h)
{
	free(h->all);
	hv_accounts_free(h->acct);
	free(h->acct);
	h->all = NULL;
	h->acct = NULL;
	h->n_all = 0;
}

/* Where (n >= 0) or "any node". */
static void node_str(const struct hv_demand_item *it, char *buf, size_t n)
{
	char ns[256];

	if (!it->strict) {
		snprintf(buf, n, "any node");
		return;
	}
	hv_nodeset_format(&it->nodes, ns, sizeof(ns));
	snprintf(buf, n, "%s %s", strchr(ns, ',') || strchr(ns, '-') ? "nodes" : "node", ns);
}

/* "1.0 TiB" from kB, for any 64-bit count. */
static void human_kb(uint64_t kb, char *buf, size_t n)
{
	static const char *const unit[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB" };
	double v = (double)kb;
	size_t u = 0;

	while (v >= 1024 && u + 1 < HV_ARRAY_SIZE(unit)) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", v, unit[u]);
}

/*
 * What node ni (slot 0 without NUMA) could ever hold, in kB: MemTotal less
 * HOST_RESERVE, plus the gigantic (1G) pool pages, which MemTotal leaves
 * out when they were taken at boot; with hugetlb_cma= they come from the
 * CMA area, inside MemTotal, and are not added.  UINT64_MAX when MemTotal
 * is unknown: no bound.
 */
static uint64_t node_cap_kb(const struct hv_state *st, size_t ni, const struct hv_config *c,
			    bool cma)
{
	uint64_t res = c->host_reserve / 1024, mt, cap;

	if (st->n_nodes ? !st->nodes[ni].has_memtotal : !st->memtotal_kb)
		return UINT64_MAX;
	mt = st->n_nodes ? st->nodes[ni].memtotal_kb : st->memtotal_kb;
	cap = mt > res ? mt - res : 0;
	for (size_t i = 0; i < st->n_pools && !cma; i++) {
		const struct hv_pool *p = &st->pools[i];

		if (p->size_kb > HV_MAX_ORDER_KB)
			cap = hv_add_sat(cap, hv_mul_sat(st->n_nodes ? p->nodes[ni].total :
							 p->total, p->size_kb));
	}
	return cap;
}

/*
 * Refuse, before any write, a demand that the nodes could never hold, even
 * with every other page of the host given to huge pages: each item against
 * its node set, and all items together against the host.
 */
static int check_capacity(struct hk *h, struct hv_state *st, const struct hv_config *c)
{
	const struct hv_demand *d = &h->d;
	size_t nn = st->n_nodes ? st->n_nodes : 1;
	uint64_t all_kb = 0, host_kb = 0;
	char g[32], hs[32], rs[32], where[300], sz[32];
	bool cma = cmdline_has_cma(h->sys);

	for (size_t i = 0; i < nn; i++)
		host_kb = hv_add_sat(host_kb, node_cap_kb(st, i, c, cma));
	hv_format_size(c->host_reserve, rs, sizeof(rs));
	for (size_t k = 0; k < d->n; k++) {
		const struct hv_demand_item *it = &d->items[k];
		uint64_t cap = 0, cap_kb = 0, kb = hv_mul_sat(it->pages, it->size_kb);

		all_kb = hv_add_sat(all_kb, kb);
		for (size_t i = 0; i < nn; i++) {
			uint64_t ck;

			if (st->n_nodes && it->strict &&
			    !hv_nodeset_has(&it->nodes, st->nodes[i].id))
				continue;
			ck = node_cap_kb(st, i, c, cma);
			cap = hv_add_sat(cap, ck / it->size_kb);
			cap_kb = hv_add_sat(cap_kb, ck);
		}
		if (it->pages <= cap)
			continue;
		human_kb(kb, g, sizeof(g));
		human_kb(cap_kb, hs, sizeof(hs));
		fmt_kb(it->size_kb, sz, sizeof(sz));
		node_str(it, where, sizeof(where));
		hv_herr("%s: refused: it needs %s of %s pages (%" PRIu64 " pages) on %s, but "
		     "%s could ever hold %s at most (MemTotal less HOST_RESERVE=%s per "
		     "node%s); no pool was changed", h->who, g, sz, it->pages, where,
		     st->n_nodes ? "those host nodes" : "this host", hs, rs,
		     cma ? "" : ", plus 1G pages taken at boot");
		return -1;
	}
	if (all_kb > host_kb) {
		human_kb(all_kb, g, sizeof(g));
		human_kb(host_kb, hs, sizeof(hs));
		hv_herr("%s: refused: it needs %s of huge pages, but this host could ever hold "
		     "%s at most (MemTotal less HOST_RESERVE=%s per node%s); no pool was "
		     "changed", h->who, g, hs, rs, cma ? "" : ", plus 1G pages taken at boot");
		return -1;
	}
	return 0;
}

/* Grow pools by the shortfall; every page added is recorded in l. */
static int grow(struct hk *h, struct hv_state *st, struct hv_ledger *l,
		const uint64_t *shortfall)
{
	const struct hv_demand *d = &h->d;

	for (int strict = 1; strict >= 0; strict--)
		for (size_t k = 0; k < d->n; k++) {
			const struct hv_demand_item *it = &d->items[k];
			struct hv_pool *p = hv_state_pool(st, it->size_kb);
			uint64_t want = shortfall[k];
			struct hv_reserve_result r;
			char sz[32];

			if (!want || it->strict != (strict != 0) || !p)
				continue;
			fmt_kb(it->size_kb, sz, sizeof(sz));
			if (st->n_nodes == 0 || !it->strict) {
				if (hv_ledger_pool_write(&h->ld, l, st, p, -1, hv_add_sat(p->total, want), &r) < 0)
					return -1;
				hv_hlog(LOG_INFO, "prepare %s: %s pool: %" PRIu64 " -> %" PRIu64
				     " pages (short %" PRIu64 ", any node)", h->who, sz,
				     r.before, r.after, want);
				continue;
			}
			for (size_t i = 0; i < p->n_nodes && want; i++) {
				int node = p->nodes[i].node;
				uint64_t had = hv_ledger_added(l, it->size_kb, node), got;

				if (!hv_nodeset_has(&it->nodes, node))
					continue;
				if (hv_ledger_pool_write(&h->ld, l, st, p, node,
					       hv_add_sat(p->nodes[i].total, want), &r) < 0)
					return -1;
				hv_hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %"
				     PRIu64 " pages (short %" PRIu64 ")", h->who, sz, node,
				     r.before, r.after, want);
				got = hv_ledger_added(l, it->size_kb, node) - had;
				want = got >= want ? 0 : want - got;
			}
		}
	return 0;
}

/* Shrink every pool this prepare grew back by what it added (l's records
 * beyond those of snap, the entry as it was before).  0 if all went back. */
static int rollback(struct hk *h, struct hv_state *st, struct hv_ledger *l,
		    const struct hv_ledger *snap)
{
	struct hv_ledger_add adds[HV_LEDGER_MAX_ADDS];
	size_t n = l->n_add;
	int ret = 0;

	memcpy(adds, l->add, n * sizeof(adds[0]));
	for (size_t i = 0; i < n; i++) {
		const struct hv_ledger_add *a = &adds[i];
		uint64_t before = hv_ledger_added(snap, a->size_kb, a->node), extra, cur;
		struct hv_pool *p = hv_state_pool(st, a->size_kb);
		int ni = a->node >= 0 ? hv_state_node_index(st, a->node) : -1;
		struct hv_reserve_result r;
		char sz[32];

		if (a->pages <= before)
			continue;
		extra = a->pages - before;
		fmt_kb(a->size_kb, sz, sizeof(sz));
		if (!p || (a->node >= 0 && ni < 0) || hv_pool_reread(h->sys, st, p) < 0) {
			ret = -1;
			continue;
		}
		cur = a->node >= 0 ? p->nodes[ni].total : p->total;
		if (hv_ledger_pool_write(&h->ld, l, st, p, a->node, cur > extra ? cur - extra : 0, &r) < 0) {
			hv_hlog(LOG_ERR, "prepare %s: %s pool node %d: could not restore", h->who,
			     sz, a->node);
			return -1;
		}
		hv_hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
		     " pages (restored after failure)", h->who, sz, a->node, r.before, r.after);
		if (hv_ledger_added(l, a->size_kb, a->node) > hv_ledger_added(snap, a->size_kb, a->node))
			ret = -1;
	}
	return ret;
}

/* After a refused prepare: the entry as it was, or, when it is new, gone
 * (or released, if some pages could not be taken back). */
static void undo_entry(struct hk *h, struct hv_ledger *l, bool had)
{
	if (had) {
		l->state = l->was;
	} else if (l->n_add == 0 && !l->pend.set) {
		hv_ledger_remove(&h->ld, l->uuid);
		return;
	} else {
		l->state = HV_LS_RELEASED;
		l->n_need = 0;
	}
	l->was = HV_LS_NONE;
	if (!l->pend.set)
		hv_ledger_write(&h->ld, l);
}

static int check_host(struct hk *h, struct hv_state *st)
{
	const struct hv_demand *d = &h->d;

	for (size_t k = 0; k < d->n; k++) {
		const struct hv_demand_item *it = &d->items[k];
		char sz[32];

		fmt_kb(it->size_kb, sz, sizeof(sz));
		if (!hv_state_pool(st, it->size_kb)) {
			hv_herr("%s: refused: needs %s huge pages but this host has no %s pool "
			     "(" HV_HP_DIR "/hugepages-%" PRIu64 "kB)", h->who, sz, sz, it->size_kb);
			return -1;
		}
		if (!it->strict)
			continue;
		if (st->n_nodes == 0) {
			hv_herr("%s: refused: strict NUMA placement but this host shows no NUMA "
			     "nodes (" HV_NODE_DIR ")", h->who);
			return -1;
		}
		for (int n = 0; n <= HV_MAX_NODE_ID; n++)
			if (hv_nodeset_has(&it->nodes, n) && hv_state_node_index(st, n) < 0) {
				hv_herr("%s: refused: strict placement on host NUMA node %d, which "
				     "is not online", h->who, n);
				return -1;
			}
	}
	return 0;
}

static void refusal_message(struct hk *h, const uint64_t *shortfall, bool restored)
{
	const struct hv_demand *d = &h->d;
	char msg[1536], where[300], sz[32];
	size_t len = 0;
	bool big = false;

	msg[0] = '\0';
	for (size_t k = 0; k < d->n; k++) {
		if (!shortfall[k])
			continue;
		fmt_kb(d->items[k].size_kb, sz, sizeof(sz));
		node_str(&d->items[k], where, sizeof(where));
		big = big || d->items[k].size_kb >= 1048576;
		len += (size_t)snprintf(msg + len, sizeof(msg) - len,
					"%s%s %s: %" PRIu64 " of %" PRIu64 " pages",
					len ? "; " : "", sz, where, shortfall[k],
					d->items[k].pages);
		if (len >= sizeof(msg))
			break;
	}
	hv_herr("%s: refused: not enough huge pages, missing %s; %s", h->who, msg,
	     restored ? "pools restored to their previous size" :
	     "pools not all restored: the ledger keeps what is left, the next release "
	     "or reconnect gives it back");
	if (big && !cmdline_has_cma(h->sys))
		hv_herr("no hugetlb_cma= area was reserved at boot: growing 1G pools at "
		     "runtime is not dependable; set CMA_1G in hvokit.conf and boot "
		     "with the parameters 'hvoctl cmdline' prints");
}

/* What a prepare works on, under the lock. */
struct prep {
	struct hv_state *st;
	struct hv_ledger *l;     /* this guest's entry (new or earlier) */
	struct hv_ledger *snap;  /* the entry before this prepare */
	bool had;                /* the entry existed */
	const struct hv_ledger **others; /* promises of other starting guests */
	size_t n_others;
	uint64_t shortfall[HV_DOM_MAX_DEMANDS];
	int64_t now;
};

/*
 * Grow the pools by the shortfall, recording every page in the entry
 * (state growing while it runs).  The check after growing uses fresh
 * figures; further rounds cover pages other users took meanwhile.  When
 * the demand still does not fit, every page this prepare added goes back
 * and the refusal is printed.  Returns the exit code.
 */
static int grow_to_fit(struct hk *h, struct prep *p, uint64_t total_short)
{
	struct hv_ledger *l = p->l;
	struct hv_config cfg;
	bool failed = false, restored;

	load_config(h, &cfg);
	if (check_capacity(h, p->st, &cfg) < 0)
		return HV_EXIT_PARTIAL;
	*p->snap = *l;
	if (!p->had) {
		snprintf(l->uuid, sizeof(l->uuid), "%s", h->d.uuid);
		l->time = p->now;
	}
	l->was = p->had ? l->state : HV_LS_NONE;
	l->state = HV_LS_GROWING;
	for (int round = 0; round < 3 && total_short && !failed; round++) {
		uint64_t before = hv_ledger_added_total(l);

		failed = grow(h, p->st, l, p->shortfall) < 0 ||
			 hv_state_read_pools(h->sys, p->st) < 0;
		if (!failed)
			total_short = hv_avail_shortfall(p->st, &h->d, p->others, p->n_others,
							 p->shortfall);
		if (hv_ledger_added_total(l) == before)
			break;
	}
	if (!failed && !total_short)
		return HV_EXIT_OK;
	restored = !l->pend.set && rollback(h, p->st, l, p->snap) == 0;
	undo_entry(h, l, p->had);
	if (!failed) {
		refusal_message(h, p->shortfall, restored);
		return HV_EXIT_PARTIAL;
	}
	hv_herr("%s: refused: I/O error while growing pools; %s", h->who,
		restored ? "pools restored" : "pools not all restored: the ledger keeps "
		"what is left, the next release or reconnect gives it back");
	return HV_EXIT_ERROR;
}

/* The grant: the entry with the guest's needs, state preparing (a promise
 * on free pages until "started").  Undone if it cannot be written. */
static int record_grant(struct hk *h, struct prep *p)
{
	const struct hv_demand *d = &h->d;
	struct hv_ledger *l = p->l;

	snprintf(l->uuid, sizeof(l->uuid), "%s", d->uuid);
	snprintf(l->name, sizeof(l->name), "%s", d->name);
	l->name_truncated = d->name_truncated;
	l->state = HV_LS_PREPARING;
	l->was = HV_LS_NONE;
	l->time = p->now;
	l->n_need = d->n;
	memcpy(l->need, d->items, d->n * sizeof(d->items[0]));
	if (hv_ledger_write(&h->ld, l) < 0) {
		bool restored = !l->pend.set && rollback(h, p->st, l, p->snap) == 0;

		l->state = HV_LS_GROWING;
		undo_entry(h, l, p->had);
		hv_herr("%s: refused: cannot record the grant; %s", h->who,
			restored ? "pools restored" : "pools not all restored");
		return HV_EXIT_ERROR;
	}
	for (size_t k = 0; k < d->n; k++) {
		char sz[32], where[300];

		fmt_kb(d->items[k].size_kb, sz, sizeof(sz));
		node_str(&d->items[k], where, sizeof(where));
		hv_hlog(LOG_INFO, "prepare %s: %s %s: %" PRIu64 " pages granted", h->who, sz,
			where, d->items[k].pages);
	}
	return HV_EXIT_OK;
}

static int do_prepare(struct hk *h)
{
	struct prep p = { .now = (int64_t)time(NULL) };
	struct hv_ledger *all;
	struct hv_config cfg;
	size_t n_all;
	uint64_t total_short;
	int ret = HV_EXIT_ERROR;

	if (hv_ledger_lock(&h->ld) < 0) {
		hv_herr("%s: refused: cannot take the hvokit lock", h->who);
		goto out;
	}
	p.st = calloc(1, sizeof(*p.st));
	p.l = calloc(1, sizeof(*p.l));
	p.snap = calloc(1, sizeof(*p.snap));
	if (!p.st || !p.l || !p.snap) {
		hv_herr("out of memory");
		goto out;
	}
	if (hv_state_read_pools(h->sys, p.st) < 0 || check_host(h, p.st) < 0)
		goto out;
	load_config(h, &cfg);
	p.others = NULL;
	if (load_entries(h, p.st, &cfg) == 0)
		p.others = calloc(h->n_all + 1, sizeof(*p.others));
	all = h->all;
	n_all = h->n_all;
	if (!p.others) {
		hv_herr("out of memory");
		goto out;
	}
	/* A previous start of this guest that never reached release: keep
	 * what it added, so release gives everything back. */
	for (size_t i = 0; i < n_all; i++) {
		if (all[i].state == HV_LS_NONE)
			continue;
		if (!strcmp(all[i].uuid, h->d.uuid)) {
			*p.l = all[i];
			p.had = true;
		} else if (hv_ledger_is_promise(&all[i], p.now)) {
			p.others[p.n_others++] = &all[i];
		}
	}
	total_short = hv_avail_shortfall(p.st, &h->d, p.others, p.n_others, p.shortfall);
	ret = total_short ? grow_to_fit(h, &p, total_short) : HV_EXIT_OK;
	if (ret == HV_EXIT_OK)
		ret = record_grant(h, &p);
out:
	hv_ledger_unlock(&h->ld);
	free(p.others);
	free_entries(h);
	free(p.st);
	free(p.snap);
	free(p.l);
	return ret;
}

/* ---------- release ---------- */

/*
 * Give back what released entry l still holds, as far as free pages that
 * are neither reserved nor promised to starting guests (prom) allow, and
 * not below LIBVIRT_WARM_1G (pages kept for that floor leave the ledger:
 * they stay by policy).  What cannot go now stays recorded in l, for the
 * next release or reconnect.  The entry is removed once empty.
 */
static void give_back(struct hk *h, struct hv_state *st, struct hv_ledger *l,
		      const struct hv_ledger *const *prom, size_t n_prom,
		      const struct hv_config *cfg, const char *why)
{
	struct hv_ledger_add adds[HV_LEDGER_MAX_ADDS];
	size_t n = l->n_add;
	char who[400], nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(who, sizeof(who), "guest '%s' (%s)", nm, l->uuid);
	if (l->pend.set)
		return; /* unsettled (pool unreadable): try again later */
	memcpy(adds, l->add, n * sizeof(adds[0]));
	for (size_t i = 0; i < n; i++) {
		const struct hv_ledger_add *a = &adds[i];
		struct hv_pool *p = hv_state_pool(st, a->size_kb);
		uint64_t k, cur, cur_after;
		int ni = a->node >= 0 ? hv_state_node_index(st, a->node) : -1;
		struct hv_reserve_result r = { 0 };
		const char *limit = NULL;
		bool warm = false;
		char sz[32];

		fmt_kb(a->size_kb, sz, sizeof(sz));
		if (!p || (a->node >= 0 && ni < 0) || hv_pool_reread(h->sys, st, p) < 0) {
			hv_hlog(LOG_ERR, "%s %s: %s pool node %d is gone or unreadable; kept in "
			     "the ledger", why, who, sz, a->node);
			continue;
		}
		k = hv_avail_returnable(p, ni, a, prom, n_prom, cfg->libvirt_warm_1g, &limit,
					&warm);
		if (k > 0 && (ni >= 0 ? p->nodes[ni].surplus : p->surplus) > 0) {
			/* Shrunk below its pages in use: a write now would turn
			 * surplus pages back into pool pages. */
			k = 0;
			limit = "surplus pages in the pool (shrunk below its pages in use)";
		}
		if (k > 0) {
			uint64_t ok = hv_accounts_returnable(h->acct, p, ni, h->all, h->n_all, l);

			if (ok < k) {
				k = ok;
				limit = "the host's own pages and other guests' records";
			}
		}
		cur = ni >= 0 ? p->nodes[ni].total : p->total;
		if (k > 0 && hv_ledger_pool_write(&h->ld, l, st, p, a->node, cur - k, &r) < 0) {
			hv_hlog(LOG_ERR, "%s %s: %s pool node %d: shrinking failed; kept in the "
			     "ledger", why, who, sz, a->node);
			if (l->pend.set)
				return;
			continue;
		}
		if (k > 0)
			hv_hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
			     " pages (gave back %" PRIu64 " of %" PRIu64 " added%s%s)", why,
			     who, sz, a->node, r.before, r.after, r.before - r.after, a->pages,
			     limit ? "; limited by " : "", limit ? limit : "");
		cur_after = ni >= 0 ? p->nodes[ni].total : p->total;
		if (warm && hv_ledger_added(l, a->size_kb, a->node)) {
			hv_hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " pages stay for "
			     "LIBVIRT_WARM_1G", why, who, sz, a->node,
			     hv_ledger_added(l, a->size_kb, a->node));
			hv_ledger_sub(l, a->size_kb, a->node, hv_ledger_added(l, a->size_kb, a->node));
		} else if (hv_ledger_added(l, a->size_kb, a->node)) {
			hv_hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
			     " pages (kept %" PRIu64 ": %s; a later release or reconnect "
			     "gives them back)", why, who, sz, a->node, cur, cur_after,
			     hv_ledger_added(l, a->size_kb, a->node),
			     limit ? limit : "nothing to give");
		}
	}
	if (l->n_add == 0) {
		hv_ledger_remove(&h->ld, l->uuid);
		l->state = HV_LS_NONE; /* gone */
	} else {
		hv_ledger_write(&h->ld, l);
	}
}

/* Mark entry l released (no promise any more), or, with
 * LIBVIRT_RELEASE=keep, drop it: its pages stay in the pools. */
static void mark_released(struct hk *h, struct hv_ledger *l, const struct hv_config *cfg,
			  const char *why)
{
	char who[400], nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(who, sizeof(who), "guest '%s' (%s)", nm, l->uuid);
	if (l->n_add == 0) {
		hv_hlog(LOG_INFO, "%s %s: nothing was added at its start; nothing to give back",
		     why, who);
		hv_ledger_remove(&h->ld, l->uuid);
		l->state = HV_LS_NONE;
		return;
	}
	if (cfg->libvirt_release == HV_RELEASE_KEEP) {
		hv_hlog(LOG_INFO, "%s %s: LIBVIRT_RELEASE=keep: pages stay in the pools", why, who);
		hv_ledger_remove(&h->ld, l->uuid);
		l->state = HV_LS_NONE;
		return;
	}
	l->state = HV_LS_RELEASED;
	l->n_need = 0;
	hv_ledger_write(&h->ld, l);
}

/* Give back what every released entry holds (self's first); st was read
 * under the lock. */
static void give_back_all(struct hk *h, struct hv_state *st, const struct hv_config *cfg,
			  const char *why)
{
	struct hv_ledger *all = h->all;
	size_t n_all = h->n_all;
	const struct hv_ledger **prom = calloc(n_all + 1, sizeof(*prom));
	int64_t now = (int64_t)time(NULL);
	size_t n_prom = 0;

	if (!prom || cfg->libvirt_release == HV_RELEASE_KEEP)
		goto out;
	for (size_t i = 0; i < n_all; i++)
		if (hv_ledger_is_promise(&all[i], now))
			prom[n_prom++] = &all[i];
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n_all; i++) {
			bool self = !strcmp(all[i].uuid, h->d.uuid);

			if (all[i].state != HV_LS_RELEASED || self != (pass == 0))
				continue;
			give_back(h, st, &all[i], prom, n_prom, cfg,
				  self ? why : "released earlier:");
		}
out:
	free(prom);
}

/* Under the lock: the pools, then every entry reconciled with them.
 * false (logged) when the pools cannot be read: nothing is given back. */
static bool locked_view(struct hk *h, struct hv_state **st, const struct hv_config *cfg)
{
	*st = calloc(1, sizeof(**st));
	if (!*st || hv_state_read_pools(h->sys, *st) < 0) {
		hv_hlog(LOG_ERR, "%s %s: cannot read the pools; the ledger is left as it is "
			"(the next hook call tries again)", h->op, h->who);
		return false;
	}
	return load_entries(h, *st, cfg) == 0;
}

static int do_release(struct hk *h)
{
	struct hv_state *st = NULL;
	struct hv_config cfg;

	if (hv_ledger_lock(&h->ld) < 0) {
		hv_hlog(LOG_ERR, "release %s: no lock; the ledger entry stays (reconnect or "
		     "the next release cleans up)", h->who);
		goto out;
	}
	load_config(h, &cfg);
	if (!locked_view(h, &st, &cfg))
		goto out;
	for (size_t i = 0; i < h->n_all; i++)
		if (!strcmp(h->all[i].uuid, h->d.uuid) && h->all[i].state != HV_LS_RELEASED &&
		    h->all[i].state != HV_LS_NONE)
			mark_released(h, &h->all[i], &cfg, "release");
	give_back_all(h, st, &cfg, "release");
out:
	hv_ledger_unlock(&h->ld);
	free_entries(h);
	free(st);
	return HV_EXIT_OK;
}

/* ---------- started / reconnect ---------- */

/* Is the guest of ledger entry l still known to libvirt as running?
 * libvirt keeps LIBVIRT_RUNDIR/NAME.xml, the status XML
 * (<domstatus><domain><uuid>), while a guest runs.  Gone: no such file, or
 * it belongs to another guest of that name.  When the name cannot be used
 * safely as a file name, or the file cannot be read or parsed, the guest
 * counts as alive: its pages are never given back by guessing. */
static bool guest_alive(struct hk *h, const struct hv_ledger *l)
{
	char path[PATH_MAX + 300], uuid[37], *buf;
	size_t len = 0, cap = 4 << 20;
	ssize_t n;
	bool alive;
	int fd;

	if (l->name_truncated || !l->name[0] || strchr(l->name, '/') ||
	    l->name[0] == '.' || strlen(l->name) > 200)
		return true;
	if (snprintf(path, sizeof(path), "%s/%s.xml", h->lvdir, l->name) >= (int)sizeof(path))
		return true;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return errno != ENOENT;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return true;
	}
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	alive = len >= cap || hv_dom_status_uuid(buf, len, uuid) < 0 ||
		!strcmp(uuid, l->uuid);
	if (!alive)
		hv_hlog(LOG_INFO, "reconnect: %s belongs to guest %s, not to %s", path, uuid,
			l->uuid);
	free(buf);
	return alive;
}

static int do_started(struct hk *h)
{
	struct hv_state *st = NULL;
	struct hv_config cfg;

	if (hv_ledger_lock(&h->ld) < 0)
		goto out;
	load_config(h, &cfg);
	if (!locked_view(h, &st, &cfg))
		goto out;
	for (size_t i = 0; i < h->n_all; i++) {
		struct hv_ledger *l = &h->all[i];

		if (strcmp(l->uuid, h->d.uuid) || l->state != HV_LS_PREPARING || l->pend.set)
			continue;
		l->state = HV_LS_RUNNING;
		if (hv_ledger_write(&h->ld, l) == 0)
			hv_hlog(LOG_INFO, "started %s: running; its pages are no longer a "
			     "promise on free pages", h->who);
	}
out:
	hv_ledger_unlock(&h->ld);
	free_entries(h);
	free(st);
	return HV_EXIT_OK;
}

static int do_reconnect(struct hk *h)
{
	struct hv_state *st = NULL;
	struct hv_config cfg;
	struct stat sb;
	int64_t now = (int64_t)time(NULL);
	bool lv_ok;

	if (hv_ledger_lock(&h->ld) < 0) {
		hv_hlog(LOG_ERR, "reconnect %s: no lock; ledger left as it is", h->who);
		goto out;
	}
	load_config(h, &cfg);
	if (!locked_view(h, &st, &cfg))
		goto out;
	lv_ok = stat(h->lvdir, &sb) == 0 && S_ISDIR(sb.st_mode);
	if (!lv_ok)
		hv_hlog(LOG_WARNING, "reconnect: %s is not a directory; cannot tell which "
		     "guests run, stale ledger entries kept", h->lvdir);
	for (size_t i = 0; i < h->n_all; i++) {
		struct hv_ledger *l = &h->all[i];

		if (l->state == HV_LS_NONE)
			continue;
		if (h->d.uuid[0] && !strcmp(l->uuid, h->d.uuid)) {
			if (l->state == HV_LS_PREPARING) {
				l->state = HV_LS_RUNNING;
				if (hv_ledger_write(&h->ld, l) == 0)
					hv_hlog(LOG_INFO, "reconnect %s: running", h->who);
			}
			continue;
		}
		if (!lv_ok || (l->state != HV_LS_PREPARING && l->state != HV_LS_RUNNING))
			continue;
		/* A guest still preparing may not have a status file yet. */
		if (l->state == HV_LS_PREPARING && now - l->time <= HV_LEDGER_PROMISE_TTL)
			continue;
		if (guest_alive(h, l))
			continue;
		mark_released(h, l, &cfg, "reconnect: gone");
	}
	give_back_all(h, st, &cfg, "reconnect");
out:
	hv_ledger_unlock(&h->ld);
	free_entries(h);
	free(st);
	return HV_EXIT_OK;
}

/* ---------- entry ---------- */
/* Read (bounded) and discard the rest of fd, so that libvirt never writes
 * into a closed pipe. */
static void drain(int fd)
{
	char scratch[65536];
	size_t drained = 0;
	ssize_t n;

	while (drained < (64u << 20) && (n = read(fd, scratch, sizeof(scratch))) > 0)
		drained += (size_t)n;
}

static char *read_input(const char *file, size_t *len, bool *too_big)
{
	size_t cap = HV_DOM_MAX_XML + 1;
	char *buf = malloc(cap);
	int fd = 0;
	ssize_t n;

	*len = 0;
	*too_big = false;
	if (!buf)
		return NULL;
	if (file && (fd = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
		free(buf);
		return NULL;
	}
	while (*len < cap && (n = read(fd, buf + *len, cap - *len)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		*len += (size_t)n;
	}
	if (*len > HV_DOM_MAX_XML) {
		*too_big = true;
		drain(fd);
	}
	if (file)
		close(fd);
	return buf;
}

static long lock_timeout(const struct hv_hook_opts *o)
{
	const char *e = getenv("HVOCTL_LOCK_TIMEOUT");
	uint64_t v;

	if (o->lock_timeout_ms >= 0)
		return o->lock_timeout_ms;
	if (e && hv_parse_u64(e, &v) == 0 && v <= 3600)
		return (long)v * 1000;
	return HV_HOOK_LOCK_TIMEOUT_MS;
}

static void resolve_dir(char *dst, size_t n, const char *opt, const char *env,
			const char *def)
{
	const char *v = opt ? opt : getenv(env);

	snprintf(dst, n, "%s", v && *v ? v : def);
}

/* The domain XML into h->d and h->who.  false when there is nothing more
 * to do: *rc is then the exit code (a failure is reported: refused for
 * prepare, logged otherwise; a guest without huge pages exits 0). */
static bool read_demand(struct hk *h, bool may_fail, int *rc)
{
	const struct hv_hook_opts *o = h->o;
	struct hv_meminfo mi;
	char *xml, err[512], nm[128];
	size_t len;
	bool too_big;

	*rc = HV_EXIT_OK;
	xml = read_input(o->xml_file, &len, &too_big);
	if (!xml) {
		if (may_fail) {
			hv_herr("cannot read the domain XML%s%s: %s", o->xml_file ? " from " : "",
				o->xml_file ? o->xml_file : "", strerror(errno));
			*rc = HV_EXIT_ERROR;
		} else {
			hv_hlog(LOG_ERR, "%s: cannot read the domain XML", h->op);
		}
		return false;
	}
	/* Fast path: a guest without huge pages is none of hvokit's business.
	 * (reconnect still runs: it also cleans up after other guests.) */
	if (!too_big && strcmp(h->op, "reconnect") &&
	    !memmem(xml, len, "hugepages", 9) && !memmem(xml, len, "pagesize", 8)) {
		free(xml);
		return false;
	}
	err[0] = '\0';
	if (too_big) {
		snprintf(err, sizeof(err), "domain XML is larger than %d bytes", HV_DOM_MAX_XML);
	} else {
		/* The host's default huge page size, for <hugepages/> alone. */
		hv_meminfo_read(h->sys, &mi);
		if (hv_dom_demand(xml, len, mi.default_size_kb, &h->d, err, sizeof(err)) == 0)
			err[0] = '\0';
	}
	free(xml);
	hv_dom_safe_name(h->d.name[0] ? h->d.name : h->arg_name, nm, sizeof(nm));
	snprintf(h->who, sizeof(h->who), "guest '%s' (%s)", nm,
		 h->d.uuid[0] ? h->d.uuid : "no uuid");
	if (!err[0])
		return true;
	if (may_fail) {
		hv_herr("%s: refused: %s", h->who, err);
		*rc = HV_EXIT_ERROR;
	} else {
		hv_hlog(LOG_ERR, "%s %s: domain XML not understood (%s); nothing done",
			h->op, h->who, err);
	}
	return false;
}

int hv_libvirt_hook(const struct hv_sys *s, const struct hv_hook_opts *o,
		    int argc, char **argv)
{
	struct hk *h;
	const char *op;
	int ret;

	if (argc < 2) {
		hv_err("libvirt-hook: expected DOMAIN OPERATION [SUB-OPERATION [EXTRA]] "
		       "(as libvirt passes them); see hvoctl libvirt-hook --help");
		return HV_EXIT_ERROR;
	}
	op = argv[1];
	if (strcmp(op, "prepare") && strcmp(op, "release") && strcmp(op, "reconnect") &&
	    strcmp(op, "started")) {
		/* migrate, restore, start, stopped, ...: nothing. */
		if (!o->xml_file && !isatty(0))
			drain(0);
		return HV_EXIT_OK;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return strcmp(op, "prepare") ? HV_EXIT_OK : HV_EXIT_ERROR;
	h->sys = s;
	h->o = o;
	h->op = op;
	h->arg_name = argv[0];
	h->ld.sys = s;
	h->ld.dirfd = h->ld.lockfd = -1;
	h->ld.lock_timeout_ms = lock_timeout(o);
	h->ld.ropts = o->ropts;
	resolve_dir(h->ld.path, sizeof(h->ld.path), o->rundir, "HVOCTL_RUNDIR",
		    HV_HOOK_RUNDIR);
	resolve_dir(h->lvdir, sizeof(h->lvdir), o->libvirt_rundir, "HVOCTL_LIBVIRT_RUNDIR",
		    HV_HOOK_LIBVIRT_RUNDIR);
	if (!read_demand(h, !strcmp(op, "prepare"), &ret)) {
		free(h);
		return ret;
	}
	if (!strcmp(op, "reconnect"))
		ret = do_reconnect(h);
	else if (!h->d.hugepages || h->d.n == 0)
		ret = HV_EXIT_OK;
	else if (!strcmp(op, "prepare"))
		ret = do_prepare(h);
	else if (!strcmp(op, "started"))
		ret = do_started(h);
	else
		ret = do_release(h);
	free(h);
	return ret;
}
