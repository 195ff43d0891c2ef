/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hvoctl libvirt-hook: size huge page pools for libvirt guests.
 * Documented in hvoctl(8), section LIBVIRT HOOK. */
#ifndef HVOCTL_HOOK_H
#define HVOCTL_HOOK_H

#include "reserve.h"
#include "sysfs.h"

#define HV_HOOK_RUNDIR "/run/hvokit"
#define HV_HOOK_LIBVIRT_RUNDIR "/run/libvirt/qemu"
#define HV_HOOK_LOCK_TIMEOUT_MS 30000

struct hv_hook_opts {
	const char *rundir;         /* ledger and lock; NULL: $HVOCTL_RUNDIR or default */
	const char *libvirt_rundir; /* libvirt's status files; NULL: $HVOCTL_LIBVIRT_RUNDIR */
	const char *xml_file;       /* NULL: standard input */
	const char *config;         /* NULL: $HVOKIT_CONF or default */
	long lock_timeout_ms;       /* < 0: $HVOCTL_LOCK_TIMEOUT (seconds) or default */
	struct hv_reserve_opts ropts;
};

/* argv: DOMAIN OPERATION SUB-OPERATION EXTRA, as libvirt passes them.
 * Never writes to standard output.  Returns the exit code: non-zero only
 * for a refused prepare or a usage error. */
int hv_libvirt_hook(const struct hv_sys *s, const struct hv_hook_opts *o,
		    int argc, char **argv);

#endif
