/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's availability model: which pages of a guest's demand
 * the free pages of the pools can serve, given the promises other starting
 * guests hold on them.  Pure: no I/O, state and ledger entries are given.
 */
#include <string.h>

#include "avail.h"
#include "util.h"

/*
 * Free pages per node of one pool, and the promises on them: other
 * guests' (starting, not yet using their pages), the global reserved
 * count, then this guest's demand.  Pages suffice when some placement of
 * all of them exists: strict promises on their nodes (narrowest node set
 * first), any-node promises anywhere.  Other guests' promises go to nodes
 * this guest does not need strictly where they can, so growing this
 * guest's nodes by its shortfall is exactly what the check after growing
 * finds.  Without NUMA information the pool is one slot.
 */
struct model {
	size_t n; /* slots */
	int node[HV_MAX_NODES];
	uint64_t vf[HV_MAX_NODES];
	bool mine[HV_MAX_NODES]; /* node in one of our strict sets */
};

static void model_init(struct model *m, const struct hv_state *st,
		       const struct hv_pool *p, const struct hv_demand *d)
{
	memset(m, 0, sizeof(*m));
	if (st->n_nodes == 0) {
		m->n = 1;
		m->node[0] = -1;
		m->vf[0] = p->free;
		return;
	}
	m->n = p->n_nodes;
	for (size_t i = 0; i < m->n; i++) {
		m->node[i] = p->nodes[i].node;
		m->vf[i] = p->nodes[i].free;
		for (size_t k = 0; k < d->n; k++)
			if (d->items[k].size_kb == p->size_kb && d->items[k].strict &&
			    hv_nodeset_has(&d->items[k].nodes, m->node[i]))
				m->mine[i] = true;
	}
}

static bool in_set(const struct model *m, size_t i, const struct hv_demand_item *it)
{
	return !it->strict || m->node[i] < 0 || hv_nodeset_has(&it->nodes, m->node[i]);
}

static size_t set_width(const struct model *m, const struct hv_demand_item *it)
{
	size_t w = 0;

	for (size_t i = 0; i < m->n; i++)
		w += in_set(m, i, it);
	return w;
}

/* Take up to want pages; with avoid_mine, from other nodes first.
 * Returns what could not be taken. */
static uint64_t take(struct model *m, const struct hv_demand_item *it,
		     uint64_t want, bool avoid_mine)
{
	for (int pass = avoid_mine ? 0 : 1; pass < 2 && want; pass++)
		for (size_t i = 0; i < m->n && want; i++) {
			uint64_t t;

			if (!in_set(m, i, it) || (pass == 0 && m->mine[i]))
				continue;
			t = m->vf[i] < want ? m->vf[i] : want;
			m->vf[i] -= t;
			want -= t;
		}
	return want;
}

/* short_out[k]: pages of d->items[k] (for pool p) that free pages cannot
 * cover.  Returns the total shortfall for this pool. */
static uint64_t model_short(const struct hv_state *st, const struct hv_pool *p,
			    const struct hv_demand *d, const struct hv_ledger *const *others,
			    size_t n_others, uint64_t *short_out)
{
	struct model m;
	struct hv_demand_item any = { .size_kb = p->size_kb };
	uint64_t total = 0;

	model_init(&m, st, p, d);
	for (size_t w = 1; w <= m.n; w++)
		for (size_t o = 0; o < n_others; o++)
			for (size_t k = 0; k < others[o]->n_need; k++) {
				const struct hv_demand_item *it = &others[o]->need[k];

				if (it->size_kb == p->size_kb && it->strict &&
				    set_width(&m, it) == w)
					take(&m, it, it->pages, true);
			}
	for (size_t o = 0; o < n_others; o++)
		for (size_t k = 0; k < others[o]->n_need; k++) {
			const struct hv_demand_item *it = &others[o]->need[k];

			if (it->size_kb == p->size_kb && !it->strict)
				take(&m, it, it->pages, true);
		}
	take(&m, &any, p->resv, true);
	for (size_t w = 0; w <= m.n; w++)
		for (size_t k = 0; k < d->n; k++) {
			const struct hv_demand_item *it = &d->items[k];

			if (it->size_kb != p->size_kb || !it->strict || set_width(&m, it) != w)
				continue;
			short_out[k] = take(&m, it, it->pages, false);
			total = hv_add_sat(total, short_out[k]);
		}
	for (size_t k = 0; k < d->n; k++) {
		const struct hv_demand_item *it = &d->items[k];

		if (it->size_kb != p->size_kb || it->strict)
			continue;
		short_out[k] = take(&m, it, it->pages, false);
		total = hv_add_sat(total, short_out[k]);
	}
	return total;
}

uint64_t hv_avail_shortfall(const struct hv_state *st, const struct hv_demand *d,
			    const struct hv_ledger *const *others, size_t n_others,
			    uint64_t *short_out)
{
	uint64_t total = 0;

	memset(short_out, 0, HV_DOM_MAX_DEMANDS * sizeof(*short_out));
	for (size_t i = 0; i < st->n_pools; i++)
		total = hv_add_sat(total, model_short(st, &st->pools[i], d, others,
						      n_others, short_out));
	return total;
}

uint64_t hv_avail_returnable(const struct hv_pool *p, int ni, const struct hv_ledger_add *a,
			     const struct hv_ledger *const *prom, size_t n_prom,
			     uint64_t warm_1g, const char **limit, bool *warm)
{
	uint64_t k = a->pages, promised = 0, promised_node = 0, lim;

	*limit = NULL;
	*warm = false;
	for (size_t o = 0; o < n_prom; o++)
		for (size_t q = 0; q < prom[o]->n_need; q++) {
			const struct hv_demand_item *it = &prom[o]->need[q];

			if (it->size_kb != a->size_kb)
				continue;
			promised = hv_add_sat(promised, it->pages);
			if (it->strict && hv_nodeset_has(&it->nodes, a->node))
				promised_node = hv_add_sat(promised_node, it->pages);
		}
	/* Free pages beyond reserved ones and other guests' promises. */
	lim = p->free > hv_add_sat(p->resv, promised) ?
	      p->free - hv_add_sat(p->resv, promised) : 0;
	if (k > lim) {
		k = lim;
		*limit = "pages in use, reserved or promised to starting guests";
	}
	if (ni >= 0) {
		uint64_t nf = p->nodes[ni].free;

		lim = nf > promised_node ? nf - promised_node : 0;
		if (k > lim) {
			k = lim;
			*limit = "pages in use or promised on this node";
		}
	}
	if (a->size_kb == 1048576 && warm_1g) {
		lim = p->total > warm_1g ? p->total - warm_1g : 0;
		if (k >= lim) {
			k = lim;
			*warm = true;
			*limit = "LIBVIRT_WARM_1G";
		}
	}
	return k;
}
