/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The libvirt hook's test environment, shared by test_hook and
 * test_accounts: a fake kernel in shared memory (forked hooks update one),
 * the ledger, libvirt's status directory, the config and the log in a
 * temporary directory, guest XML written there, and the hook run through
 * hvoctl's real entry point. */
#ifndef HVOCTL_HOOKENV_H
#define HVOCTL_HOOKENV_H

#include <limits.h>
#include <stdbool.h>

#include "fake.h"

#define GIB_KB (1024ULL * 1024)

struct hook_env {
	struct fake *f;
	char dir[PATH_MAX], rundir[PATH_MAX + 8], lvdir[PATH_MAX + 8];
	char log[PATH_MAX + 8], conf[PATH_MAX + 16];
	char *out, *err;
};

/* Two nodes of 64 GiB, the fake kernel on; @name names the directory. */
struct hook_env *hook_env_new(const char *name);
void hook_env_free(struct hook_env *e);

/* Remove @dir and everything below it, links not followed. */
void rm_tree(const char *dir);
void put(const char *path, const char *text);
/* The file's text (up to 64 KiB, a static buffer); "" when absent. */
const char *slurp(const char *path);

/*
 * Guest XML with @amount @unit of memory backed by @page pages ("1G",
 * "2M"); @nodes: NULL any node, else strict numatune.  The file is named
 * after @uuid and @page: a later call for the same pair rewrites it.
 */
const char *guest_pg(struct hook_env *e, const char *uuid, const char *name,
		     const char *amount, const char *unit, const char *page,
		     const char *nodes);
/* The same with @pages 1G pages. */
const char *guest(struct hook_env *e, const char *uuid, const char *name,
		  unsigned pages, const char *nodes);
/* `hvoctl libvirt-hook -- guest OP begin -` with @xml on stdin. */
int hook(struct hook_env *e, const char *xml, const char *op);
bool ledger_exists(struct hook_env *e, const char *uuid);

#endif
