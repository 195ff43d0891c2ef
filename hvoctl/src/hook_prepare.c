/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hvoctl libvirt-hook, prepare: grow the pools by the guest's shortfall
 * under the lock, record the grant, or give back what was added and
 * refuse the start.  The contract and the rules are in hook.c's header and
 * hvoctl(8), section LIBVIRT HOOK.
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
#include "hook_int.h"
#include "ledger.h"
#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "util.h"

static bool cmdline_has_cma(const struct hv_sys *s)
{
	char v[64];

	return hv_cmdline_param(s, "hugetlb_cma", v, sizeof(v));
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
		hv_format_kb(it->size_kb, sz, sizeof(sz));
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
			hv_format_kb(it->size_kb, sz, sizeof(sz));
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
		hv_format_kb(a->size_kb, sz, sizeof(sz));
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

		hv_format_kb(it->size_kb, sz, sizeof(sz));
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
		hv_format_kb(d->items[k].size_kb, sz, sizeof(sz));
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

	hk_load_config(h, &cfg);
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

		hv_format_kb(d->items[k].size_kb, sz, sizeof(sz));
		node_str(&d->items[k], where, sizeof(where));
		hv_hlog(LOG_INFO, "prepare %s: %s %s: %" PRIu64 " pages granted", h->who, sz,
			where, d->items[k].pages);
	}
	return HV_EXIT_OK;
}

int hk_prepare(struct hk *h)
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
	hk_load_config(h, &cfg);
	p.others = NULL;
	if (hk_load_entries(h, p.st, &cfg) == 0)
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
	hk_free_entries(h);
	free(p.st);
	free(p.snap);
	free(p.l);
	return ret;
}
