/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * hvoctl libvirt-hook, release, started and reconnect: give back what
 * released entries hold, within the accounts (accounts.h), and find the
 * guests libvirt no longer runs.  The contract and the rules are in
 * hook.c's header and hvoctl(8), section LIBVIRT HOOK.
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

		hv_format_kb(a->size_kb, sz, sizeof(sz));
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

int hk_release(struct hk *h)
{
	struct hv_state *st = NULL;
	struct hv_config cfg;

	if (hv_ledger_lock(&h->ld) < 0) {
		hv_hlog(LOG_ERR, "release %s: no lock; the ledger entry stays (reconnect or "
		     "the next release cleans up)", h->who);
		goto out;
	}
	hk_load_config(h, &cfg);
	if (!hk_locked_view(h, &st, &cfg))
		goto out;
	for (size_t i = 0; i < h->n_all; i++)
		if (!strcmp(h->all[i].uuid, h->d.uuid) && h->all[i].state != HV_LS_RELEASED &&
		    h->all[i].state != HV_LS_NONE)
			mark_released(h, &h->all[i], &cfg, "release");
	give_back_all(h, st, &cfg, "release");
out:
	hv_ledger_unlock(&h->ld);
	hk_free_entries(h);
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

int hk_started(struct hk *h)
{
	struct hv_state *st = NULL;
	struct hv_config cfg;

	if (hv_ledger_lock(&h->ld) < 0)
		goto out;
	hk_load_config(h, &cfg);
	if (!hk_locked_view(h, &st, &cfg))
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
	hk_free_entries(h);
	free(st);
	return HV_EXIT_OK;
}

int hk_reconnect(struct hk *h)
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
	hk_load_config(h, &cfg);
	if (!hk_locked_view(h, &st, &cfg))
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
	hk_free_entries(h);
	free(st);
	return HV_EXIT_OK;
}
