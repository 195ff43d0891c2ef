/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's ledger: what the hook added to which pool for which
 * guest, kept across hook calls and crashes.
 *
 * RUNDIR/guest-UUID.ledger, one file per guest, replaced atomically, keyed
 * by the canonical domain UUID (never the name).  flock() on RUNDIR/lock
 * around every read-decide-write-verify.
 *
 * Crash safety (kill -9 at any instruction): every pool write is preceded
 * by an intent (the "pending" pool, its count before, the target) in the
 * entry and followed by its settlement (the pool's count now against the
 * count before, bounded by the target, added to or taken from the entry's
 * records).  The file is replaced atomically, so on disk it is always
 * either "intent + the records before" or "the records after".  A pending
 * intent or a "growing" entry found by the holder of the lock belongs to a
 * hook that died; hv_ledger_load_all() settles it with the same code.
 * hvoctl(8), section LIBVIRT HOOK, documents the format and these rules.
 */
#ifndef HVOCTL_LEDGER_H
#define HVOCTL_LEDGER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domxml.h"
#include "pools.h"
#include "reserve.h"
#include "sysfs.h"

#define HV_LEDGER_MAX_ADDS (HV_MAX_NODES * 4)
#define HV_LEDGER_MAX_BYTES 65536
/* A guest that has been "preparing" for longer no longer holds a promise
 * on free pages (its start failed without a release, or hangs). */
#define HV_LEDGER_PROMISE_TTL 3600

/* Pages added to one pool for one guest. */
struct hv_ledger_add {
	uint64_t size_kb;
	int node; /* -1: global pool (host without NUMA information) */
	uint64_t pages;
};

/* Entry states.  "growing": a prepare is changing pools for it (was: the
 * state before); under the lock, only a dead hook leaves one behind. */
enum { HV_LS_NONE, HV_LS_PREPARING, HV_LS_RUNNING, HV_LS_RELEASED, HV_LS_GROWING };
extern const char *const hv_ledger_state_name[];

/* A pool write about to happen (or that happened, not yet settled). */
struct hv_ledger_pending {
	bool set;
	uint64_t size_kb;
	int node;             /* -1: the global nr_hugepages */
	uint64_t before, target;
	size_t n_nodes;       /* global growth on a NUMA host: */
	int nodes[HV_MAX_NODES]; /* each node's count before */
	uint64_t node_before[HV_MAX_NODES];
};

struct hv_ledger {
	char uuid[37];
	char name[256];
	bool name_truncated;
	int state, was;
	int64_t time;
	size_t n_need;
	struct hv_demand_item need[HV_DOM_MAX_DEMANDS];
	size_t n_add;
	struct hv_ledger_add add[HV_LEDGER_MAX_ADDS];
	struct hv_ledger_pending pend;
};

/* The run directory and, while held, the lock. */
struct hv_ledger_dir {
	const struct hv_sys *sys;
	char path[PATH_MAX];
	long lock_timeout_ms;
	struct hv_reserve_opts ropts; /* for journaled pool writes */
	int dirfd, lockfd;            /* -1 when not open */
};

/* The hook's log: one line per decision, to syslog (or, for tests, the
 * file $HVOCTL_HOOK_LOG).  hv_herr() also prints to stderr, which libvirt
 * shows when a start is refused. */
void hv_hlog(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hv_herr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Open (create, 0700, owned by us) the run directory and take the lock,
 * waiting up to lock_timeout_ms.  0 or -1 (logged). */
int hv_ledger_lock(struct hv_ledger_dir *ld);
void hv_ledger_unlock(struct hv_ledger_dir *ld);

/* Write file fn of the run directory atomically (fn.tmp, then rename);
 * whatever is at fn.tmp (a link, a directory, ...) is removed first,
 * never followed.  0 or -1 (reported).  The lock must be held. */
int hv_ledger_put_file(struct hv_ledger_dir *ld, const char *fn, const char *text);
/* Entry files; the lock must be held. */
int hv_ledger_write(struct hv_ledger_dir *ld, const struct hv_ledger *l);
/* 1: read, 0: no entry, -1: unreadable or malformed (logged). */
int hv_ledger_read(struct hv_ledger_dir *ld, const char *uuid, struct hv_ledger *l);
void hv_ledger_remove(struct hv_ledger_dir *ld, const char *uuid);
/* Every entry, with what dead hooks left repaired; *n_out entries
 * (malloc'ed, may be NULL). */
struct hv_ledger *hv_ledger_load_all(struct hv_ledger_dir *ld, size_t *n_out);

/* Records of pages added.  hv_ledger_add() is -1 when the entry is full. */
int hv_ledger_add(struct hv_ledger *l, uint64_t size_kb, int node, uint64_t pages);
void hv_ledger_sub(struct hv_ledger *l, uint64_t size_kb, int node, uint64_t pages);
uint64_t hv_ledger_added(const struct hv_ledger *l, uint64_t size_kb, int node);
uint64_t hv_ledger_added_total(const struct hv_ledger *l);

/* A guest still starting: its demand is a promise on free pages. */
bool hv_ledger_is_promise(const struct hv_ledger *l, int64_t now);

/* Bring one pool (node < 0: the global count) to target: intent on disk
 * first, then the write, then the settled records on disk.  Refuses to
 * start while an earlier intent is unsettled.  0, or -1 (logged). */
int hv_ledger_pool_write(struct hv_ledger_dir *ld, struct hv_ledger *l,
			 struct hv_state *st, struct hv_pool *p, int node,
			 uint64_t target, struct hv_reserve_result *r);

#endif
