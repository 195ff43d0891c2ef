/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's accounts per pool slot: the host's floor beside the
 * ledger's records, reconciled with the pools' counts on every hook call.
 * The rules are in accounts.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <json-c/json.h>

#include "accounts.h"
#include "hook.h"
#include "plan.h"
#include "util.h"

uint64_t hv_accounts_persistent(const struct hv_pool *p, int ni)
{
	uint64_t t = ni >= 0 ? p->nodes[ni].total : p->total;
	uint64_t s = ni >= 0 ? p->nodes[ni].surplus : p->surplus;

	return t > s ? t - s : 0;
}

void hv_accounts_free(struct hv_accounts *a)
{
	if (!a)
		return;
	free(a->s);
	a->s = NULL;
	a->n = a->cap = 0;
}

/* Room for one more slot; false when full or out of memory. */
static bool slot_room(struct hv_accounts *a)
{
	void *v;

	if (a->n < a->cap)
		return true;
	if (a->cap >= HV_ACCOUNTS_MAX ||
	    !(v = realloc(a->s, (a->cap ? a->cap * 2 : 16) * sizeof(*a->s))))
		return false;
	a->s = v;
	a->cap = a->cap ? a->cap * 2 : 16;
	return true;
}

static struct hv_acct_slot *slot_find(struct hv_accounts *a, uint64_t size_kb, int node)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->s[i].size_kb == size_kb && a->s[i].node == node)
			return &a->s[i];
	return NULL;
}

static const struct hv_acct_slot *slot_get(const struct hv_accounts *a, uint64_t size_kb,
					   int node)
{
	return slot_find((struct hv_accounts *)a, size_kb, node);
}

/* ---------- RUNDIR/host.pools ---------- */

/* Missing: empty.  Malformed: logged, empty (every slot is seen anew). */
static void load(struct hv_ledger_dir *ld, struct hv_accounts *a)
{
	char buf[HV_LEDGER_MAX_BYTES + 1];
	json_object *o = NULL, *v, *arr;
	size_t len = 0;
	ssize_t n;
	int fd;

	a->n = 0;
	fd = openat(ld->dirfd, HV_ACCOUNTS_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno != ENOENT)
			hv_hlog(LOG_ERR, "%s/%s: %s; the host's pages are counted anew",
				ld->path, HV_ACCOUNTS_FILE, strerror(errno));
		return;
	}
	while (len < HV_LEDGER_MAX_BYTES && (n = read(fd, buf + len, HV_LEDGER_MAX_BYTES - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	o = json_tokener_parse(buf);
	if (!o || !json_object_object_get_ex(o, "format", &v) ||
	    strcmp(json_object_get_string(v), "hvokit-host-pools") ||
	    !json_object_object_get_ex(o, "pools", &arr) ||
	    !json_object_is_type(arr, json_type_array))
		goto bad;
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		json_object *e = json_object_array_get_idx(arr, i), *sz, *nd, *fl;
		int64_t size, node, floor;

		if (!json_object_object_get_ex(e, "size_kb", &sz) ||
		    !json_object_object_get_ex(e, "node", &nd) ||
		    !json_object_object_get_ex(e, "floor", &fl) ||
		    !json_object_is_type(sz, json_type_int) ||
		    !json_object_is_type(nd, json_type_int) || !json_object_is_type(fl, json_type_int))
			goto bad;
		size = json_object_get_int64(sz);
		node = json_object_get_int64(nd);
		floor = json_object_get_int64(fl);
		if (size <= 0 || node < -1 || node > HV_MAX_NODE_ID || floor < 0 ||
		    !slot_room(a))
			goto bad;
		a->s[a->n++] = (struct hv_acct_slot){ (uint64_t)size, (int)node, (uint64_t)floor };
	}
	json_object_put(o);
	return;
bad:
	hv_hlog(LOG_ERR, "%s/%s: malformed; the host's pages are counted anew from the pools "
		"and hvokit.conf", ld->path, HV_ACCOUNTS_FILE);
	json_object_put(o);
	a->n = 0;
}

static int save(struct hv_ledger_dir *ld, const struct hv_accounts *a)
{
	json_object *o = json_object_new_object(), *arr = json_object_new_array();
	int r;

	json_object_object_add(o, "format", json_object_new_string("hvokit-host-pools"));
	json_object_object_add(o, "version", json_object_new_int(1));
	for (size_t i = 0; i < a->n; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "size_kb", json_object_new_int64((int64_t)a->s[i].size_kb));
		json_object_object_add(e, "node", json_object_new_int(a->s[i].node));
		json_object_object_add(e, "floor", json_object_new_int64(
			a->s[i].floor > INT64_MAX ? INT64_MAX : (int64_t)a->s[i].floor));
		json_object_array_add(arr, e);
	}
	json_object_object_add(o, "pools", arr);
	r = hv_ledger_put_file(ld, HV_ACCOUNTS_FILE,
			       json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
							      JSON_C_TO_STRING_SPACED));
	json_object_put(o);
	return r;
}

/* ---------- reconcile ---------- */

/* The pool hvokit.conf configures for slot (p, ni), 0 if none is known
 * per slot (a global count on a NUMA host is spread by the kernel). */
static uint64_t configured(const struct hv_config *cfg, const struct hv_state *st,
			   const struct hv_pool *p, int ni)
{
	struct hv_plan *plan;
	uint64_t v = 0;
	FILE *quiet, *was = hv_log();

	if (!cfg || !(plan = calloc(1, sizeof(*plan))))
		return 0;
	/* Complaints about the config belong to hvoctl apply, not here. */
	quiet = fopen("/dev/null", "w");
	hv_log_set(quiet);
	if (hv_plan_build(cfg, st, false, plan) == 0)
		for (size_t k = 0; k < HV_NPOOLS; k++) {
			const struct hv_target *t = &plan->t[k];

			if (t->size_kb != p->size_kb || !t->managed)
				continue;
			if (ni >= 0 && t->per_node)
				v = t->node[ni];
			else if (ni < 0)
				v = t->global;
		}
	hv_log_set(was);
	if (quiet)
		fclose(quiet);
	free(plan);
	return v;
}

static bool live(const struct hv_ledger *l)
{
	return l->state != HV_LS_NONE;
}

static void who(const struct hv_ledger *l, char *buf, size_t n)
{
	char nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(buf, n, "guest '%s' (%s)", nm, l->uuid);
}

/* Take up to want pages from the records of slot (size_kb, node):
 * released entries first (their pages are free, the first to go), then
 * starting ones, then running ones.  Returns what was taken. */
static uint64_t shrink_records(struct hv_ledger *all, size_t n_all, bool *dirty,
			       uint64_t size_kb, int node, uint64_t want, const char *why)
{
	static const int order[] = { HV_LS_RELEASED, HV_LS_GROWING, HV_LS_PREPARING,
		HV_LS_RUNNING };
	uint64_t taken = 0;

	for (size_t o = 0; o < HV_ARRAY_SIZE(order) && taken < want; o++)
		for (size_t i = 0; i < n_all && taken < want; i++) {
			struct hv_ledger *l = &all[i];
			uint64_t had = hv_ledger_added(l, size_kb, node), t;
			char w[400], sz[32];

			if (!live(l) || l->state != order[o] || !had)
				continue;
			t = had < want - taken ? had : want - taken;
			hv_ledger_sub(l, size_kb, node, t);
			taken += t;
			dirty[i] = true;
			who(l, w, sizeof(w));
			hv_format_kb(size_kb, sz, sizeof(sz));
			hv_hlog(LOG_WARNING, "accounts: %s: %s pool node %d: %" PRIu64 " of the %"
				PRIu64 " pages recorded as added are no longer there (%s); "
				"record now %" PRIu64, w, sz, node, t, had, why, had - t);
		}
	return taken;
}

static uint64_t recorded(const struct hv_ledger *all, size_t n_all, uint64_t size_kb, int node)
{
	uint64_t r = 0;

	for (size_t i = 0; i < n_all; i++)
		if (live(&all[i]))
			r = hv_add_sat(r, hv_ledger_added(&all[i], size_kb, node));
	return r;
}

static bool pending_on(const struct hv_ledger *all, size_t n_all, uint64_t size_kb)
{
	for (size_t i = 0; i < n_all; i++)
		if (live(&all[i]) && all[i].pend.set && all[i].pend.size_kb == size_kb)
			return true;
	return false;
}

/* Records on pools or nodes the host no longer has end. */
static void end_orphans(const struct hv_state *st, struct hv_ledger *all, size_t n_all,
			bool *dirty)
{
	for (size_t i = 0; i < n_all; i++) {
		struct hv_ledger *l = &all[i];

		for (size_t k = 0; live(l) && !l->pend.set && k < l->n_add;) {
			const struct hv_ledger_add *ad = &l->add[k];
			bool have = false;
			char w[400], sz[32];

			for (size_t q = 0; q < st->n_pools && !have; q++)
				have = st->pools[q].size_kb == ad->size_kb;
			/* A node record on a host without NUMA information, or
			 * a global one on a host with it, has no pool either. */
			if (have && (st->n_nodes ? ad->node >= 0 &&
					hv_state_node_index(st, ad->node) >= 0 : ad->node < 0)) {
				k++;
				continue;
			}
			who(l, w, sizeof(w));
			hv_format_kb(ad->size_kb, sz, sizeof(sz));
			hv_hlog(LOG_WARNING, "accounts: %s: %s pool node %d is gone from the host; "
				"its %" PRIu64 " pages recorded as added end", w, sz, ad->node,
				ad->pages);
			hv_ledger_sub(l, ad->size_kb, ad->node, ad->pages);
			dirty[i] = true;
		}
	}
}

/* One slot: persistent == F + R, with F first seen as what R does not
 * explain (at least the configured pool, at most the pool). */
static void reconcile_slot(struct hv_accounts *a, struct hv_accounts *next,
			   const struct hv_state *st, const struct hv_pool *p, int ni,
			   struct hv_ledger *all, size_t n_all, bool *dirty,
			   const struct hv_config *cfg)
{
	int node = ni >= 0 ? p->nodes[ni].node : -1;
	uint64_t P = hv_accounts_persistent(p, ni), R = recorded(all, n_all, p->size_kb, node);
	const struct hv_acct_slot *old = slot_find(a, p->size_kb, node);
	uint64_t F;
	char sz[32];

	hv_format_kb(p->size_kb, sz, sizeof(sz));
	if (old) {
		F = old->floor;
	} else {
		uint64_t c = configured(cfg, st, p, ni);

		F = P > R ? P - R : 0;
		if (c > F)
			F = c > P ? P : c;
	}
	if (R <= P && P - R >= F) {
		if (old && P - R != F)
			hv_hlog(LOG_INFO, "accounts: %s pool node %d: %" PRIu64 " pages came by "
				"another route (the administrator or the kernel): the host's, "
				"which now holds %" PRIu64, sz, node, P - R - F, P - R);
		F = P - R;
	} else {
		/* Pages left by another route: the records first (they can no
		 * longer be given back), then the host's floor. */
		uint64_t keep = P > F ? P - F : 0;

		shrink_records(all, n_all, dirty, p->size_kb, node, R - keep,
			       old ? "the pool shrank by another route" :
			       "more than the pool holds beyond the host's own");
		if (F > P)
			F = P;
	}
	if (slot_room(next))
		next->s[next->n++] = (struct hv_acct_slot){ p->size_kb, node, F };
}

int hv_accounts_reconcile(struct hv_ledger_dir *ld, const struct hv_state *st,
			  struct hv_ledger *all, size_t n_all, const struct hv_config *cfg,
			  struct hv_accounts *a)
{
	struct hv_accounts *next = calloc(1, sizeof(*next));
	bool *dirty = calloc(n_all + 1, sizeof(*dirty)), changed;
	int ret = 0;

	if (!next || !dirty) {
		free(next);
		free(dirty);
		hv_hlog(LOG_ERR, "accounts: out of memory; pools not reconciled");
		a->n = 0;
		return -1;
	}
	load(ld, a);
	end_orphans(st, all, n_all, dirty);
	for (size_t q = 0; q < st->n_pools; q++) {
		const struct hv_pool *p = &st->pools[q];
		size_t nn = st->n_nodes ? p->n_nodes : 1;

		for (size_t i = 0; i < nn; i++) {
			int ni = st->n_nodes ? (int)i : -1;
			const struct hv_acct_slot *old =
				slot_find(a, p->size_kb, ni >= 0 ? p->nodes[ni].node : -1);

			if (pending_on(all, n_all, p->size_kb)) {
				/* An unsettled write: leave the slot as it was. */
				if (old && slot_room(next))
					next->s[next->n++] = *old;
				continue;
			}
			reconcile_slot(a, next, st, p, ni, all, n_all, dirty, cfg);
		}
	}
	for (size_t i = 0; i < n_all; i++) {
		if (!dirty[i])
			continue;
		if (all[i].state == HV_LS_RELEASED && all[i].n_add == 0) {
			hv_ledger_remove(ld, all[i].uuid);
			all[i].state = HV_LS_NONE;
		} else if (hv_ledger_write(ld, &all[i]) < 0) {
			ret = -1;
		}
	}
	changed = next->n != a->n;
	for (size_t i = 0; i < next->n && !changed; i++)
		changed = next->s[i].size_kb != a->s[i].size_kb ||
			  next->s[i].node != a->s[i].node || next->s[i].floor != a->s[i].floor;
	hv_accounts_free(a);
	*a = *next;
	if (changed && ret == 0 && save(ld, a) < 0)
		ret = -1;
	free(next);
	free(dirty);
	return ret;
}

uint64_t hv_accounts_returnable(const struct hv_accounts *a, const struct hv_pool *p, int ni,
				const struct hv_ledger *all, size_t n_all,
				const struct hv_ledger *self)
{
	int node = ni >= 0 ? p->nodes[ni].node : -1;
	const struct hv_acct_slot *s = slot_get(a, p->size_kb, node);
	uint64_t P = hv_accounts_persistent(p, ni), keep, own = hv_ledger_added(self, p->size_kb,
										  node);

	if (!s)
		return 0; /* never reconciled: nothing is known to be the guest's */
	keep = s->floor;
	for (size_t i = 0; i < n_all; i++)
		if (live(&all[i]) && &all[i] != self && strcmp(all[i].uuid, self->uuid))
			keep = hv_add_sat(keep, hv_ledger_added(&all[i], p->size_kb, node));
	if (P <= keep)
		return 0;
	return P - keep < own ? P - keep : own;
}

/* ---------- the administrator's writes ---------- */

/* Under the lock: the pools and every entry, reconciled (no config: a
 * slot first seen here starts with what the records do not explain). */
static void reconcile_now(struct hv_ledger_dir *ld, const struct hv_sys *s)
{
	struct hv_accounts a = { 0 };
	struct hv_state *st = calloc(1, sizeof(*st));
	struct hv_ledger *all;
	size_t n_all;

	if (st && hv_state_read_pools(s, st) == 0) {
		all = hv_ledger_load_all(ld, &n_all);
		hv_accounts_reconcile(ld, st, all, n_all, NULL, &a);
		hv_accounts_free(&a);
		free(all);
	}
	free(st);
}

int hv_accounts_admin_reserve(const struct hv_sys *s, uint64_t size_kb, int node,
			      uint64_t target, const struct hv_reserve_opts *o,
			      struct hv_reserve_result *res)
{
	const char *env = getenv("HVOCTL_RUNDIR");
	struct hv_ledger_dir ld = { .sys = s, .dirfd = -1, .lockfd = -1,
				    .lock_timeout_ms = HV_HOOK_LOCK_TIMEOUT_MS };
	struct stat sb;
	int rc;

	snprintf(ld.path, sizeof(ld.path), "%s", env && *env ? env : HV_HOOK_RUNDIR);
	if ((s->root[0] && !(env && *env)) || stat(ld.path, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return hv_reserve(s, size_kb, node, target, o, res);
	if (hv_ledger_lock(&ld) < 0) {
		hv_err("the libvirt hook's lock (%s/lock) is busy; writing the pool "
		       "without it: the hook sees the change at its next call", ld.path);
		hv_ledger_unlock(&ld);
		return hv_reserve(s, size_kb, node, target, o, res);
	}
	/* Before: what changed since the last hook call is not this write's;
	 * after: this write's change is the administrator's. */
	reconcile_now(&ld, s);
	rc = hv_reserve(s, size_kb, node, target, o, res);
	reconcile_now(&ld, s);
	hv_ledger_unlock(&ld);
	return rc;
}
