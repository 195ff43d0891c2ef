/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libvirt hook's parts (hook.c: entry and what every operation
 * shares; hook_prepare.c; hook_release.c: release, started, reconnect).
 * Private to them. */
#ifndef HVOCTL_HOOK_INT_H
#define HVOCTL_HOOK_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "accounts.h"
#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "ledger.h"
#include "pools.h"

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

/* hvokit.conf, or the defaults when it is missing or invalid (logged). */
void hk_load_config(struct hk *h, struct hv_config *c);
/* Every entry, repaired and reconciled with the pools of st, into h->all
 * and h->acct (the lock held).  0 or -1 (out of memory). */
int hk_load_entries(struct hk *h, const struct hv_state *st, const struct hv_config *cfg);
void hk_free_entries(struct hk *h);
/* The pools (*st, malloc'ed), then hk_load_entries().  false (logged)
 * when the pools cannot be read. */
bool hk_locked_view(struct hk *h, struct hv_state **st, const struct hv_config *cfg);

/* The operations, with h filled by hv_libvirt_hook(); exit codes. */
int hk_prepare(struct hk *h);
int hk_release(struct hk *h);
int hk_started(struct hk *h);
int hk_reconnect(struct hk *h);

#endif
