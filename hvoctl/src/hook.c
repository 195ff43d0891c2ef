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

#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "hook_int.h"
#include "ledger.h"
#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "util.h"

/* ---------- shared by the operations ---------- */

void hk_load_config(struct hk *h, struct hv_config *c)
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
int hk_load_entries(struct hk *h, const struct hv_state *st, const struct hv_config *cfg)
{
	h->all = hv_ledger_load_all(&h->ld, &h->n_all);
	h->acct = calloc(1, sizeof(*h->acct));
	if (!h->acct)
		return -1;
	hv_accounts_reconcile(&h->ld, st, h->all, h->n_all, cfg, h->acct);
	return 0;
}

void hk_free_entries(struct hk *h)
{
	free(h->all);
	hv_accounts_free(h->acct);
	free(h->acct);
	h->all = NULL;
	h->acct = NULL;
	h->n_all = 0;
}

/* Under the lock: the pools, then every entry reconciled with them.
 * false (logged) when the pools cannot be read: nothing is given back. */
bool hk_locked_view(struct hk *h, struct hv_state **st, const struct hv_config *cfg)
{
	*st = calloc(1, sizeof(**st));
	if (!*st || hv_state_read_pools(h->sys, *st) < 0) {
		hv_hlog(LOG_ERR, "%s %s: cannot read the pools; the ledger is left as it is "
			"(the next hook call tries again)", h->op, h->who);
		return false;
	}
	return hk_load_entries(h, *st, cfg) == 0;
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
		ret = hk_reconnect(h);
	else if (!h->d.hugepages || h->d.n == 0)
		ret = HV_EXIT_OK;
	else if (!strcmp(op, "prepare"))
		ret = hk_prepare(h);
	else if (!strcmp(op, "started"))
		ret = hk_started(h);
	else
		ret = hk_release(h);
	free(h);
	return ret;
}
