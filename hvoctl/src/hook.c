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
 * Ledger: RUNDIR/guest-UUID.ledger, one text file per guest, replaced
 * atomically, keyed by the canonical domain UUID (never the name).
 * Lock: flock() on RUNDIR/lock around every read-decide-write-verify.
 *
 * Crash safety (kill -9 at any instruction): every pool write is preceded
 * by an intent ("pending" line: pool, count before, target) in the entry
 * and followed by its settlement (the pool's count now against the count
 * before, bounded by the target, added to or taken from the entry's
 * "added" lines).  The file is replaced atomically, so on disk it is always
 * either "intent + the adds before" or "the adds after".  A pending intent
 * or a "growing" entry found by the holder of the lock belongs to a hook
 * that died; the lock holder settles it with the same code.  A release
 * first marks the entry "released", then gives back and settles write by
 * write: repeating it never gives back twice.  Pages a release could not
 * give back (in use, reserved, promised to a starting guest) stay recorded
 * in the released entry; every later release and reconnect tries again.
 * hvoctl(8), section LIBVIRT HOOK, documents the format and these rules.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "domxml.h"
#include "hook.h"
#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "util.h"

#define MAX_ADDS (HV_MAX_NODES * 4)
/* Pages above this size (4 MiB, the buddy allocator's largest block on
 * x86-64) are gigantic: at boot they come from memblock, outside MemTotal. */
#define HV_MAX_ORDER_KB 4096
#define LEDGER_MAX 65536

struct add {
	uint64_t size_kb;
	int node; /* -1: global pool (host without NUMA information) */
	uint64_t pages;
};

/* Entry states.  "growing": a prepare is changing pools for it (was: the
 * state before); under the lock, only a dead hook leaves one behind. */
enum { LS_NONE, LS_PREPARING, LS_RUNNING, LS_RELEASED, LS_GROWING };
static const char *const ls_name[] = { "none", "preparing", "running", "released",
	"growing" };

/* A pool write about to happen (or that happened, not yet settled). */
struct pending {
	bool set;
	uint64_t size_kb;
	int node;             /* -1: the global nr_hugepages */
	uint64_t before, target;
	size_t n_nodes;       /* global growth on a NUMA host: */
	int nodes[HV_MAX_NODES]; /* each node's count before */
	uint64_t node_before[HV_MAX_NODES];
};

struct ledger {
	char uuid[37];
	char name[256];
	bool name_truncated;
	int state, was;
	int64_t time;
	size_t n_need;
	struct hv_demand_item need[HV_DOM_MAX_DEMANDS];
	size_t n_add;
	struct add add[MAX_ADDS];
	struct pending pend;
};

struct hk {
	const struct hv_sys *sys;
	const struct hv_hook_opts *o;
	const char *op;
	const char *arg_name; /* argv domain name, messages only */
	char rundir[PATH_MAX];
	char lvdir[PATH_MAX];
	int dirfd;
	int lockfd;
	struct hv_demand d;
	char who[400]; /* "guest 'NAME' (UUID)" for messages */
};

/* ---------- logging: one line per decision, to syslog/journal ---------- */

static void hlog(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void hlog(int prio, const char *fmt, ...)
{
	const char *file = getenv("HVOCTL_HOOK_LOG");
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (file && *file) {
		/* Tests and the acceptance test: append, one write per line. */
		int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		size_t len = strlen(line);

		if (fd >= 0) {
			line[len] = '\n';
			if (write(fd, line, len + 1) < 0) {
				/* nowhere else to report */
			}
			close(fd);
		}
		return;
	}
	openlog("hvoctl-libvirt-hook", LOG_PID, LOG_DAEMON);
	syslog(prio, "%s", line);
	closelog();
}

/* Error for the refusal path: stderr (libvirt shows it) and the log. */
static void herr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void herr(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	hv_err("libvirt-hook: %s", line);
	hlog(LOG_ERR, "%s", line);
}

static void fmt_kb(uint64_t kb, char *buf, size_t n)
{
	hv_format_kb(kb, buf, n);
}

/* ---------- run directory, lock ---------- */

static int open_rundir(struct hk *h)
{
	struct stat st;

	if (mkdir(h->rundir, 0700) != 0 && errno != EEXIST) {
		herr("%s: cannot create: %s", h->rundir, strerror(errno));
		return -1;
	}
	h->dirfd = open(h->rundir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (h->dirfd < 0) {
		herr("%s: %s", h->rundir, strerror(errno));
		return -1;
	}
	if (fstat(h->dirfd, &st) != 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		herr("%s: not owned by uid %u or writable by others; refusing to use it",
		     h->rundir, (unsigned)geteuid());
		close(h->dirfd);
		h->dirfd = -1;
		return -1;
	}
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

/* Open the run directory and take the host-wide lock, with a timeout. */
static int lock_acquire(struct hk *h)
{
	long timeout = lock_timeout(h->o), start = now_ms();

	if (open_rundir(h) < 0)
		return -1;
	h->lockfd = openat(h->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (h->lockfd < 0) {
		herr("%s/lock: %s", h->rundir, strerror(errno));
		return -1;
	}
	for (;;) {
		if (flock(h->lockfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			herr("%s/lock: %s", h->rundir, strerror(errno));
			return -1;
		}
		if (now_ms() - start >= timeout) {
			herr("%s/lock: still held by another hvoctl after %ld ms; giving up",
			     h->rundir, timeout);
			return -1;
		}
		sleep_ms(5);
	}
}

static void lock_release(struct hk *h)
{
	if (h->lockfd >= 0)
		close(h->lockfd); /* drops the flock */
	h->lockfd = -1;
	if (h->dirfd >= 0)
		close(h->dirfd);
	h->dirfd = -1;
}

/* ---------- ledger ---------- */

static void ledger_fname(const char *uuid, char *buf, size_t n)
{
	snprintf(buf, n, "guest-%s.ledger", uuid);
}

static void hex_encode(const char *s, char *out, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	size_t o = 0;

	for (; *s && o + 3 <= n; s++) {
		out[o++] = hx[(unsigned char)*s >> 4];
		out[o++] = hx[(unsigned char)*s & 15];
	}
	out[o < n ? o : n - 1] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_decode(const char *s, char *out, size_t n)
{
	size_t o = 0;

	for (; s[0] && s[1]; s += 2) {
		int a = hexval(s[0]), b = hexval(s[1]);

		if (a < 0 || b < 0 || (a == 0 && b == 0) || o + 1 >= n)
			return -1;
		out[o++] = (char)(a << 4 | b);
	}
	out[o] = '\0';
	return *s ? -1 : 0;
}

static int ledger_write(struct hk *h, const struct ledger *l)
{
	char fn[96], tmp[112], nsbuf[1024], hexname[sizeof(l->name) * 2 + 1];
	const struct pending *pd = &l->pend;
	FILE *f;
	int fd;

	ledger_fname(l->uuid, fn, sizeof(fn));
	snprintf(tmp, sizeof(tmp), "%s.tmp", fn);
	fd = openat(h->dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		herr("%s/%s: %s", h->rundir, tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	hex_encode(l->name, hexname, sizeof(hexname));
	fprintf(f, "hvokit-ledger 2\nuuid %s\nname %s\ntruncated %d\nstate %s\n",
		l->uuid, hexname[0] ? hexname : "-", l->name_truncated, ls_name[l->state]);
	if (l->state == LS_GROWING)
		fprintf(f, "was %s\n", ls_name[l->was]);
	fprintf(f, "time %" PRId64 "\n", l->time);
	for (size_t i = 0; i < l->n_need; i++) {
		hv_nodeset_format(&l->need[i].nodes, nsbuf, sizeof(nsbuf));
		fprintf(f, "need %" PRIu64 " %s %s %" PRIu64 "\n", l->need[i].size_kb,
			l->need[i].strict ? "strict" : "any", nsbuf, l->need[i].pages);
	}
	for (size_t i = 0; i < l->n_add; i++)
		fprintf(f, "added %" PRIu64 " %d %" PRIu64 "\n", l->add[i].size_kb,
			l->add[i].node, l->add[i].pages);
	if (pd->set) {
		fprintf(f, "pending %" PRIu64 " %d %" PRIu64 " %" PRIu64 "\n", pd->size_kb,
			pd->node, pd->before, pd->target);
		for (size_t i = 0; i < pd->n_nodes; i++)
			fprintf(f, "pendnode %d %" PRIu64 "\n", pd->nodes[i], pd->node_before[i]);
	}
	if (fflush(f) != 0 || ferror(f) || fclose(f) != 0) {
		herr("%s/%s: write failed", h->rundir, tmp);
		unlinkat(h->dirfd, tmp, 0);
		return -1;
	}
	if (renameat(h->dirfd, tmp, h->dirfd, fn) != 0) {
		herr("%s/%s: %s", h->rundir, fn, strerror(errno));
		unlinkat(h->dirfd, tmp, 0);
		return -1;
	}
	return 0;
}

static int parse_state(const char *s)
{
	for (int i = LS_PREPARING; i <= LS_GROWING; i++)
		if (!strcmp(s, ls_name[i]))
			return i;
	return -1;
}

/* 1: read, 0: no entry, -1: unreadable or malformed (logged). */
static int ledger_read(struct hk *h, const char *uuid, struct ledger *l)
{
	char fn[96], buf[LEDGER_MAX + 1], *line, *save = NULL;
	ssize_t n;
	size_t len = 0;
	int fd;

	memset(l, 0, sizeof(*l));
	l->state = LS_PREPARING;
	ledger_fname(uuid, fn, sizeof(fn));
	fd = openat(h->dirfd, fn, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		hlog(LOG_ERR, "ledger %s/%s: %s", h->rundir, fn, strerror(errno));
		return -1;
	}
	while (len < LEDGER_MAX && (n = read(fd, buf + len, LEDGER_MAX - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char a[1100], c[1100], d[64];
		unsigned long long x, y, z;
		long long t;
		int node;

		if (sscanf(line, "uuid %36s", a) == 1) {
			memcpy(l->uuid, a, sizeof(l->uuid) - 1);
			l->uuid[sizeof(l->uuid) - 1] = '\0';
		} else if (sscanf(line, "name %1099s", a) == 1) {
			if (strcmp(a, "-") && hex_decode(a, l->name, sizeof(l->name)) < 0)
				goto bad;
		} else if (sscanf(line, "truncated %d", &node) == 1) {
			l->name_truncated = node != 0;
		} else if (sscanf(line, "state %63s", d) == 1) {
			if ((l->state = parse_state(d)) < 0)
				goto bad;
		} else if (sscanf(line, "was %63s", d) == 1) {
			if (strcmp(d, "none") && (l->was = parse_state(d)) < 0)
				goto bad;
		} else if (sscanf(line, "time %lld", &t) == 1) {
			l->time = t;
		} else if (sscanf(line, "need %llu %63s %1099s %llu", &x, d, c, &y) == 4) {
			struct hv_demand_item *it;

			if (l->n_need >= HV_DOM_MAX_DEMANDS)
				goto bad;
			it = &l->need[l->n_need++];
			memset(it, 0, sizeof(*it));
			it->size_kb = x;
			it->pages = y;
			it->strict = !strcmp(d, "strict");
			if (it->strict && hv_nodeset_parse(c, &it->nodes) < 0)
				goto bad;
		} else if (sscanf(line, "added %llu %d %llu", &x, &node, &y) == 3) {
			if (l->n_add >= MAX_ADDS)
				goto bad;
			l->add[l->n_add++] = (struct add){ x, node, y };
		} else if (sscanf(line, "pending %llu %d %llu %llu", &x, &node, &y, &z) == 4) {
			l->pend.set = true;
			l->pend.size_kb = x;
			l->pend.node = node;
			l->pend.before = y;
			l->pend.target = z;
		} else if (sscanf(line, "pendnode %d %llu", &node, &y) == 2) {
			if (l->pend.n_nodes >= HV_MAX_NODES)
				goto bad;
			l->pend.nodes[l->pend.n_nodes] = node;
			l->pend.node_before[l->pend.n_nodes++] = y;
		} else if (strcmp(line, "hvokit-ledger 1") && strcmp(line, "hvokit-ledger 2")) {
			goto bad;
		}
	}
	if (strcmp(l->uuid, uuid))
		goto bad;
	return 1;
bad:
	hlog(LOG_ERR, "ledger %s/%s: malformed; ignoring it", h->rundir, fn);
	return -1;
}

static void ledger_remove(struct hk *h, const char *uuid)
{
	char fn[96];

	ledger_fname(uuid, fn, sizeof(fn));
	if (unlinkat(h->dirfd, fn, 0) != 0 && errno != ENOENT)
		hlog(LOG_ERR, "ledger %s/%s: %s", h->rundir, fn, strerror(errno));
}

/* UUIDs of all ledger entries (malloc'ed array of 37-byte strings). */
static size_t ledger_list(struct hk *h, char (**out)[37])
{
	int fd = dup(h->dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	char (*v)[37] = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*out = NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		char u[37];
		size_t len = strlen(de->d_name);

		if (len != 6 + 36 + 7 || strncmp(de->d_name, "guest-", 6) ||
		    strcmp(de->d_name + 42, ".ledger"))
			continue;
		memcpy(u, de->d_name + 6, 36);
		u[36] = '\0';
		if (hv_uuid_canon(u, u) < 0 || strncmp(u, de->d_name + 6, 36))
			continue;
		if (n == cap) {
			void *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		memcpy(v[n++], u, 37);
	}
	closedir(dir);
	*out = v;
	return n;
}

/* ---------- pages added, pool writes with an intent ---------- */

static int add_record(struct ledger *l, uint64_t size_kb, int node, uint64_t pages)
{
	if (pages == 0)
		return 0;
	for (size_t i = 0; i < l->n_add; i++)
		if (l->add[i].size_kb == size_kb && l->add[i].node == node) {
			l->add[i].pages = hv_add_sat(l->add[i].pages, pages);
			return 0;
		}
	if (l->n_add >= MAX_ADDS)
		return -1;
	l->add[l->n_add++] = (struct add){ size_kb, node, pages };
	return 0;
}

static void sub_record(struct ledger *l, uint64_t size_kb, int node, uint64_t pages)
{
	for (size_t i = 0; i < l->n_add; i++) {
		struct add *a = &l->add[i];

		if (a->size_kb != size_kb || a->node != node)
			continue;
		a->pages -= pages < a->pages ? pages : a->pages;
		if (a->pages == 0)
			memmove(a, a + 1, (l->n_add-- - i - 1) * sizeof(*a));
		return;
	}
}

static uint64_t added(const struct ledger *l, uint64_t size_kb, int node)
{
	for (size_t i = 0; i < l->n_add; i++)
		if (l->add[i].size_kb == size_kb && l->add[i].node == node)
			return l->add[i].pages;
	return 0;
}

static uint64_t added_total(const struct ledger *l)
{
	uint64_t t = 0;

	for (size_t i = 0; i < l->n_add; i++)
		t = hv_add_sat(t, l->add[i].pages);
	return t;
}

static void pool_rel(char *buf, size_t n, uint64_t size_kb, int node)
{
	if (node < 0)
		snprintf(buf, n, HV_HP_DIR "/hugepages-%" PRIu64 "kB/nr_hugepages", size_kb);
	else
		snprintf(buf, n, HV_NODE_DIR "/node%d/hugepages/hugepages-%" PRIu64
			 "kB/nr_hugepages", node, size_kb);
}

/*
 * Settle l's pending pool write: what the pool holds now against what it
 * held before, never more than was asked, is added to (growth) or taken
 * from (shrink) the entry's records.  The same code runs right after the
 * write and, for a hook killed around it, in the next holder of the lock,
 * so both reach the same records.  -1 (intent kept) if a count is unreadable.
 */
static int settle(struct hk *h, struct ledger *l)
{
	struct pending *pd = &l->pend;
	uint64_t now[HV_MAX_NODES];
	size_t n = pd->n_nodes ? pd->n_nodes : 1;
	char rel[256];

	if (!pd->set)
		return 0;
	for (size_t i = 0; i < n; i++) {
		pool_rel(rel, sizeof(rel), pd->size_kb, pd->n_nodes ? pd->nodes[i] : pd->node);
		if (hv_read_u64(h->sys, rel, &now[i]) < 0) {
			hlog(LOG_ERR, "ledger of %s: cannot read %s; the pool write stays "
			     "pending", l->uuid, rel);
			return -1;
		}
	}
	if (pd->target > pd->before) {
		uint64_t room = pd->target - pd->before;

		for (size_t i = 0; i < n; i++) {
			uint64_t b = pd->n_nodes ? pd->node_before[i] : pd->before;
			uint64_t got = now[i] > b ? now[i] - b : 0;

			if (got > room)
				got = room;
			room -= got;
			if (add_record(l, pd->size_kb, pd->n_nodes ? pd->nodes[i] : pd->node,
				       got) < 0) {
				hlog(LOG_ERR, "ledger of %s: too many records", l->uuid);
				return -1;
			}
		}
	} else {
		uint64_t gone = now[0] < pd->before ? pd->before - now[0] : 0;

		if (gone > pd->before - pd->target)
			gone = pd->before - pd->target;
		sub_record(l, pd->size_kb, pd->node, gone);
	}
	pd->set = false;
	return 0;
}

/*
 * Bring one pool (node < 0: the global count) to target: intent on disk
 * first, then the write, then the settled records on disk.  Refuses to
 * start while an earlier intent is unsettled (the disk must keep it).
 */
static int pool_write(struct hk *h, struct ledger *l, struct hv_state *st,
		      struct hv_pool *p, int node, uint64_t target,
		      struct hv_reserve_result *r)
{
	struct hv_reserve_opts ro = h->o->ropts;
	struct pending *pd = &l->pend;
	int ni = node >= 0 ? hv_state_node_index(st, node) : -1, rc;

	memset(r, 0, sizeof(*r));
	if (pd->set || (node >= 0 && ni < 0) || hv_pool_reread(h->sys, st, p) < 0)
		return -1;
	memset(pd, 0, sizeof(*pd));
	pd->set = true;
	pd->size_kb = p->size_kb;
	pd->node = node;
	pd->before = node >= 0 ? p->nodes[ni].total : p->total;
	pd->target = target;
	if (node < 0 && target > pd->before)
		for (size_t i = 0; i < p->n_nodes; i++) {
			pd->nodes[pd->n_nodes] = p->nodes[i].node;
			pd->node_before[pd->n_nodes++] = p->nodes[i].total;
		}
	if (ledger_write(h, l) < 0) {
		pd->set = false;
		return -1;
	}
	ro.quiet = true;
	rc = hv_reserve(h->sys, p->size_kb, node, target, &ro, r);
	if (settle(h, l) < 0)
		return -1;
	if (ledger_write(h, l) < 0)
		rc = -1; /* the disk holds the intent: the next hook settles it */
	if (hv_pool_reread(h->sys, st, p) < 0)
		rc = -1;
	return rc;
}

/* ---------- all entries, repaired ---------- */

/* Repair what a dead hook left in l: settle its pending write, and put a
 * "growing" entry back to its state before (a new entry becomes released,
 * so that its pages are given back).  Called with the lock held. */
static void recover_entry(struct hk *h, struct ledger *l)
{
	bool dirty = false;

	if (l->pend.set) {
		if (settle(h, l) < 0)
			return;
		hlog(LOG_WARNING, "ledger of %s: a hook died during a pool write; settled "
		     "(%" PRIu64 " pages recorded as added)", l->uuid, added_total(l));
		dirty = true;
	}
	if (l->state == LS_GROWING) {
		l->state = l->was != LS_NONE ? l->was : LS_RELEASED;
		l->was = LS_NONE;
		if (l->state == LS_RELEASED)
			l->n_need = 0;
		hlog(LOG_WARNING, "ledger of %s: a prepare died; entry %s", l->uuid,
		     ls_name[l->state]);
		dirty = true;
	}
	if (dirty)
		ledger_write(h, l);
}

/* Every entry, repaired; *n_out entries (malloc'ed, may be NULL). */
static struct ledger *ledger_load_all(struct hk *h, size_t *n_out)
{
	char (*ids)[37];
	size_t n = ledger_list(h, &ids), k = 0;
	struct ledger *v = n ? calloc(n, sizeof(*v)) : NULL;

	for (size_t i = 0; v && i < n; i++) {
		if (ledger_read(h, ids[i], &v[k]) != 1)
			continue;
		recover_entry(h, &v[k]);
		k++;
	}
	free(ids);
	*n_out = k;
	return v;
}

static bool is_promise(const struct ledger *l, int64_t now)
{
	return l->state == LS_PREPARING && now - l->time <= HV_HOOK_PROMISE_TTL;
}

/* ---------- availability model ---------- */

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
			    const struct hv_demand *d, const struct ledger *const *others,
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

static uint64_t model_all(const struct hv_state *st, const struct hv_demand *d,
			  const struct ledger *const *others, size_t n_others,
			  uint64_t *short_out)
{
	uint64_t total = 0;

	memset(short_out, 0, HV_DOM_MAX_DEMANDS * sizeof(*short_out));
	for (size_t i = 0; i < st->n_pools; i++)
		total = hv_add_sat(total, model_short(st, &st->pools[i], d, others,
						      n_others, short_out));
	return total;
}

/* ---------- prepare ---------- */

static bool cmdline_has_cma(const struct hv_sys *s)
{
	char buf[8192];

	if (hv_read_str(s, "/proc/cmdline", buf, sizeof(buf)) < 0)
		return false;
	return strstr(buf, "hugetlb_cma=") != NULL;
}

static void load_config(struct hk *h, struct hv_config *c)
{
	const char *path = h->o->config;

	hv_config_defaults(c);
	if (!path)
		path = getenv("HVOKIT_CONF");
	if (!path || !*path)
		path = HV_DEFAULT_CONFIG;
	if (access(path, F_OK) != 0)
		return;
	if (hv_config_load(c, path) < 0) {
		hlog(LOG_ERR, "%s: invalid; using the defaults (release policy return, "
		     "no HOST_RESERVE)", path);
		hv_config_defaults(c);
	}
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
		herr("%s: refused: it needs %s of %s pages (%" PRIu64 " pages) on %s, but "
		     "%s could ever hold %s at most (MemTotal less HOST_RESERVE=%s per "
		     "node%s); no pool was changed", h->who, g, sz, it->pages, where,
		     st->n_nodes ? "those host nodes" : "this host", hs, rs,
		     cma ? "" : ", plus 1G pages taken at boot");
		return -1;
	}
	if (all_kb > host_kb) {
		human_kb(all_kb, g, sizeof(g));
		human_kb(host_kb, hs, sizeof(hs));
		herr("%s: refused: it needs %s of huge pages, but this host could ever hold "
		     "%s at most (MemTotal less HOST_RESERVE=%s per node%s); no pool was "
		     "changed", h->who, g, hs, rs, cma ? "" : ", plus 1G pages taken at boot");
		return -1;
	}
	return 0;
}

/* Grow pools by the shortfall; every page added is recorded in l. */
static int grow(struct hk *h, struct hv_state *st, struct ledger *l,
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
				if (pool_write(h, l, st, p, -1, hv_add_sat(p->total, want), &r) < 0)
					return -1;
				hlog(LOG_INFO, "prepare %s: %s pool: %" PRIu64 " -> %" PRIu64
				     " pages (short %" PRIu64 ", any node)", h->who, sz,
				     r.before, r.after, want);
				continue;
			}
			for (size_t i = 0; i < p->n_nodes && want; i++) {
				int node = p->nodes[i].node;
				uint64_t had = added(l, it->size_kb, node), got;

				if (!hv_nodeset_has(&it->nodes, node))
					continue;
				if (pool_write(h, l, st, p, node,
					       hv_add_sat(p->nodes[i].total, want), &r) < 0)
					return -1;
				hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %"
				     PRIu64 " pages (short %" PRIu64 ")", h->who, sz, node,
				     r.before, r.after, want);
				got = added(l, it->size_kb, node) - had;
				want = got >= want ? 0 : want - got;
			}
		}
	return 0;
}

/* Shrink every pool this prepare grew back by what it added (l's records
 * beyond those of snap, the entry as it was before).  0 if all went back. */
static int rollback(struct hk *h, struct hv_state *st, struct ledger *l,
		    const struct ledger *snap)
{
	struct add adds[MAX_ADDS];
	size_t n = l->n_add;
	int ret = 0;

	memcpy(adds, l->add, n * sizeof(adds[0]));
	for (size_t i = 0; i < n; i++) {
		const struct add *a = &adds[i];
		uint64_t before = added(snap, a->size_kb, a->node), extra, cur;
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
		if (pool_write(h, l, st, p, a->node, cur > extra ? cur - extra : 0, &r) < 0) {
			hlog(LOG_ERR, "prepare %s: %s pool node %d: could not restore", h->who,
			     sz, a->node);
			return -1;
		}
		hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
		     " pages (restored after failure)", h->who, sz, a->node, r.before, r.after);
		if (added(l, a->size_kb, a->node) > added(snap, a->size_kb, a->node))
			ret = -1;
	}
	return ret;
}

/* After a refused prepare: the entry as it was, or, when it is new, gone
 * (or released, if some pages could not be taken back). */
static void undo_entry(struct hk *h, struct ledger *l, bool had)
{
	if (had) {
		l->state = l->was;
	} else if (l->n_add == 0 && !l->pend.set) {
		ledger_remove(h, l->uuid);
		return;
	} else {
		l->state = LS_RELEASED;
		l->n_need = 0;
	}
	l->was = LS_NONE;
	if (!l->pend.set)
		ledger_write(h, l);
}

static int check_host(struct hk *h, struct hv_state *st)
{
	const struct hv_demand *d = &h->d;

	for (size_t k = 0; k < d->n; k++) {
		const struct hv_demand_item *it = &d->items[k];
		char sz[32];

		fmt_kb(it->size_kb, sz, sizeof(sz));
		if (!hv_state_pool(st, it->size_kb)) {
			herr("%s: refused: needs %s huge pages but this host has no %s pool "
			     "(" HV_HP_DIR "/hugepages-%" PRIu64 "kB)", h->who, sz, sz, it->size_kb);
			return -1;
		}
		if (!it->strict)
			continue;
		if (st->n_nodes == 0) {
			herr("%s: refused: strict NUMA placement but this host shows no NUMA "
			     "nodes (" HV_NODE_DIR ")", h->who);
			return -1;
		}
		for (int n = 0; n <= HV_MAX_NODE_ID; n++)
			if (hv_nodeset_has(&it->nodes, n) && hv_state_node_index(st, n) < 0) {
				herr("%s: refused: strict placement on host NUMA node %d, which "
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
	herr("%s: refused: not enough huge pages, missing %s; %s", h->who, msg,
	     restored ? "pools restored to their previous size" :
	     "pools not all restored: the ledger keeps what is left, the next release "
	     "or reconnect gives it back");
	if (big && !cmdline_has_cma(h->sys))
		herr("no hugetlb_cma= area was reserved at boot: growing 1G pools at "
		     "runtime is not dependable; set CMA_1G in hvokit.conf and boot "
		     "with the parameters 'hvoctl cmdline' prints");
}

static int do_prepare(struct hk *h)
{
	struct hv_demand *d = &h->d;
	struct hv_state *st = NULL;
	struct ledger *all = NULL, *l = NULL, *snap = NULL;
	const struct ledger **others = NULL;
	struct hv_config *cfg = NULL;
	size_t n_all = 0, n_others = 0;
	uint64_t shortfall[HV_DOM_MAX_DEMANDS], total_short;
	int64_t now = (int64_t)time(NULL);
	int ret = HV_EXIT_ERROR;
	bool had = false;

	if (lock_acquire(h) < 0) {
		herr("%s: refused: cannot take the hvokit lock", h->who);
		goto out;
	}
	st = calloc(1, sizeof(*st));
	l = calloc(1, sizeof(*l));
	snap = calloc(1, sizeof(*snap));
	cfg = calloc(1, sizeof(*cfg));
	if (!st || !l || !snap || !cfg) {
		herr("out of memory");
		goto out;
	}
	if (hv_state_read(h->sys, st) < 0 || check_host(h, st) < 0)
		goto out;
	all = ledger_load_all(h, &n_all);
	others = calloc(n_all + 1, sizeof(*others));
	if (!others) {
		herr("out of memory");
		goto out;
	}
	/* A previous start of this guest that never reached release: keep
	 * what it added, so release gives everything back. */
	for (size_t i = 0; i < n_all; i++) {
		if (!strcmp(all[i].uuid, d->uuid)) {
			*l = all[i];
			had = true;
		} else if (is_promise(&all[i], now)) {
			others[n_others++] = &all[i];
		}
	}
	total_short = model_all(st, d, others, n_others, shortfall);
	if (total_short) {
		bool failed = false;

		load_config(h, cfg);
		if (check_capacity(h, st, cfg) < 0) {
			ret = HV_EXIT_PARTIAL;
			goto out;
		}
		*snap = *l;
		if (!had) {
			snprintf(l->uuid, sizeof(l->uuid), "%s", d->uuid);
			l->time = now;
		}
		l->was = had ? l->state : LS_NONE;
		l->state = LS_GROWING;
		/* The check after growing uses fresh figures; a second round
		 * covers pages other users took meanwhile. */
		for (int round = 0; round < 3 && total_short && !failed; round++) {
			uint64_t before = added_total(l);

			failed = grow(h, st, l, shortfall) < 0 || hv_state_read(h->sys, st) < 0;
			if (!failed)
				total_short = model_all(st, d, others, n_others, shortfall);
			if (added_total(l) == before)
				break;
		}
		if (failed || total_short) {
			bool restored = !l->pend.set && rollback(h, st, l, snap) == 0;

			undo_entry(h, l, had);
			if (failed)
				herr("%s: refused: I/O error while growing pools; %s", h->who,
				     restored ? "pools restored" : "pools not all restored: the "
				     "ledger keeps what is left, the next release or reconnect "
				     "gives it back");
			else
				refusal_message(h, shortfall, restored);
			ret = failed ? HV_EXIT_ERROR : HV_EXIT_PARTIAL;
			goto out;
		}
	}
	snprintf(l->uuid, sizeof(l->uuid), "%s", d->uuid);
	snprintf(l->name, sizeof(l->name), "%s", d->name);
	l->name_truncated = d->name_truncated;
	l->state = LS_PREPARING;
	l->was = LS_NONE;
	l->time = now;
	l->n_need = d->n;
	memcpy(l->need, d->items, d->n * sizeof(d->items[0]));
	if (ledger_write(h, l) < 0) {
		bool restored = !l->pend.set && rollback(h, st, l, snap) == 0;

		l->state = LS_GROWING;
		undo_entry(h, l, had);
		herr("%s: refused: cannot record the grant; %s", h->who,
		     restored ? "pools restored" : "pools not all restored");
		goto out;
	}
	for (size_t k = 0; k < d->n; k++) {
		char sz[32], where[300];

		fmt_kb(d->items[k].size_kb, sz, sizeof(sz));
		node_str(&d->items[k], where, sizeof(where));
		hlog(LOG_INFO, "prepare %s: %s %s: %" PRIu64 " pages granted", h->who, sz,
		     where, d->items[k].pages);
	}
	ret = HV_EXIT_OK;
out:
	lock_release(h);
	free(others);
	free(all);
	free(cfg);
	free(st);
	free(snap);
	free(l);
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
static void give_back(struct hk *h, struct hv_state *st, struct ledger *l,
		      const struct ledger *const *prom, size_t n_prom,
		      const struct hv_config *cfg, const char *why)
{
	struct add adds[MAX_ADDS];
	size_t n = l->n_add;
	char who[400], nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(who, sizeof(who), "guest '%s' (%s)", nm, l->uuid);
	if (l->pend.set)
		return; /* unsettled (pool unreadable): try again later */
	memcpy(adds, l->add, n * sizeof(adds[0]));
	for (size_t i = 0; i < n; i++) {
		const struct add *a = &adds[i];
		struct hv_pool *p = hv_state_pool(st, a->size_kb);
		uint64_t k = a->pages, promised = 0, promised_node = 0, lim, cur, cur_after;
		int ni = a->node >= 0 ? hv_state_node_index(st, a->node) : -1;
		struct hv_reserve_result r = { 0 };
		const char *limit = NULL;
		bool warm = false;
		char sz[32];

		fmt_kb(a->size_kb, sz, sizeof(sz));
		if (!p || (a->node >= 0 && ni < 0) || hv_pool_reread(h->sys, st, p) < 0) {
			hlog(LOG_ERR, "%s %s: %s pool node %d is gone or unreadable; kept in "
			     "the ledger", why, who, sz, a->node);
			continue;
		}
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
			limit = "pages in use, reserved or promised to starting guests";
		}
		if (ni >= 0) {
			uint64_t nf = p->nodes[ni].free;

			lim = nf > promised_node ? nf - promised_node : 0;
			if (k > lim) {
				k = lim;
				limit = "pages in use or promised on this node";
			}
		}
		if (a->size_kb == 1048576 && cfg->libvirt_warm_1g) {
			lim = p->total > cfg->libvirt_warm_1g ? p->total - cfg->libvirt_warm_1g : 0;
			if (k >= lim) {
				k = lim;
				warm = true;
				limit = "LIBVIRT_WARM_1G";
			}
		}
		cur = ni >= 0 ? p->nodes[ni].total : p->total;
		if (k > 0 && pool_write(h, l, st, p, a->node, cur - k, &r) < 0) {
			hlog(LOG_ERR, "%s %s: %s pool node %d: shrinking failed; kept in the "
			     "ledger", why, who, sz, a->node);
			if (l->pend.set)
				return;
			continue;
		}
		if (k > 0)
			hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
			     " pages (gave back %" PRIu64 " of %" PRIu64 " added%s%s)", why,
			     who, sz, a->node, r.before, r.after, r.before - r.after, a->pages,
			     limit ? "; limited by " : "", limit ? limit : "");
		cur_after = ni >= 0 ? p->nodes[ni].total : p->total;
		if (warm && added(l, a->size_kb, a->node)) {
			hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " pages stay for "
			     "LIBVIRT_WARM_1G", why, who, sz, a->node,
			     added(l, a->size_kb, a->node));
			sub_record(l, a->size_kb, a->node, added(l, a->size_kb, a->node));
		} else if (added(l, a->size_kb, a->node)) {
			hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
			     " pages (kept %" PRIu64 ": %s; a later release or reconnect "
			     "gives them back)", why, who, sz, a->node, cur, cur_after,
			     added(l, a->size_kb, a->node),
			     limit ? limit : "nothing to give");
		}
	}
	if (l->n_add == 0) {
		ledger_remove(h, l->uuid);
		l->state = LS_NONE; /* gone */
	} else {
		ledger_write(h, l);
	}
}

/* Mark entry l released (no promise any more), or, with
 * LIBVIRT_RELEASE=keep, drop it: its pages stay in the pools. */
static void mark_released(struct hk *h, struct ledger *l, const struct hv_config *cfg,
			  const char *why)
{
	char who[400], nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(who, sizeof(who), "guest '%s' (%s)", nm, l->uuid);
	if (l->n_add == 0) {
		hlog(LOG_INFO, "%s %s: nothing was added at its start; nothing to give back",
		     why, who);
		ledger_remove(h, l->uuid);
		l->state = LS_NONE;
		return;
	}
	if (cfg->libvirt_release == HV_RELEASE_KEEP) {
		hlog(LOG_INFO, "%s %s: LIBVIRT_RELEASE=keep: pages stay in the pools", why, who);
		ledger_remove(h, l->uuid);
		l->state = LS_NONE;
		return;
	}
	l->state = LS_RELEASED;
	l->n_need = 0;
	ledger_write(h, l);
}

/* Give back what every released entry holds (self's first). */
static void give_back_all(struct hk *h, struct ledger *all, size_t n_all,
			  const struct hv_config *cfg, const char *why)
{
	const struct ledger **prom = calloc(n_all + 1, sizeof(*prom));
	int64_t now = (int64_t)time(NULL);
	struct hv_state *st = calloc(1, sizeof(*st));
	size_t n_prom = 0;

	if (!prom || !st || cfg->libvirt_release == HV_RELEASE_KEEP)
		goto out;
	if (hv_state_read(h->sys, st) < 0) {
		hlog(LOG_ERR, "%s %s: cannot read the pools; nothing given back", why, h->who);
		goto out;
	}
	for (size_t i = 0; i < n_all; i++)
		if (is_promise(&all[i], now))
			prom[n_prom++] = &all[i];
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n_all; i++) {
			bool self = !strcmp(all[i].uuid, h->d.uuid);

			if (all[i].state != LS_RELEASED || self != (pass == 0))
				continue;
			give_back(h, st, &all[i], prom, n_prom, cfg,
				  self ? why : "released earlier:");
		}
out:
	free(st);
	free(prom);
}

static int do_release(struct hk *h)
{
	struct ledger *all = NULL;
	struct hv_config cfg;
	size_t n_all = 0;

	if (lock_acquire(h) < 0) {
		hlog(LOG_ERR, "release %s: no lock; the ledger entry stays (reconnect or "
		     "the next release cleans up)", h->who);
		goto out;
	}
	load_config(h, &cfg);
	all = ledger_load_all(h, &n_all);
	for (size_t i = 0; i < n_all; i++)
		if (!strcmp(all[i].uuid, h->d.uuid) && all[i].state != LS_RELEASED)
			mark_released(h, &all[i], &cfg, "release");
	give_back_all(h, all, n_all, &cfg, "release");
out:
	lock_release(h);
	free(all);
	return HV_EXIT_OK;
}

/* ---------- started / reconnect ---------- */

/* Is the guest of ledger entry l still known to libvirt as running?
 * libvirt keeps LIBVIRT_RUNDIR/NAME.xml (status XML holding the UUID) while
 * a guest runs.  When the name cannot be used safely as a file name, or the
 * status file is too large to check, the guest counts as alive. */
static bool guest_alive(struct hk *h, const struct ledger *l)
{
	char path[PATH_MAX + 300], needle[64], *buf;
	size_t len = 0, cap = 4 << 20;
	ssize_t n;
	bool found;
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
	buf[len] = '\0';
	snprintf(needle, sizeof(needle), "<uuid>%s</uuid>", l->uuid);
	found = memmem(buf, len, needle, strlen(needle)) != NULL;
	free(buf);
	return found || len >= cap;
}

static int do_started(struct hk *h)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (l && lock_acquire(h) == 0 && ledger_read(h, h->d.uuid, l) == 1 &&
	    l->state == LS_PREPARING && !l->pend.set) {
		l->state = LS_RUNNING;
		if (ledger_write(h, l) == 0)
			hlog(LOG_INFO, "started %s: running; its pages are no longer a "
			     "promise on free pages", h->who);
	}
	lock_release(h);
	free(l);
	return HV_EXIT_OK;
}

static int do_reconnect(struct hk *h)
{
	struct ledger *all = NULL;
	struct hv_config cfg;
	struct stat sb;
	size_t n_all = 0;
	int64_t now = (int64_t)time(NULL);
	bool lv_ok;

	if (lock_acquire(h) < 0) {
		hlog(LOG_ERR, "reconnect %s: no lock; ledger left as it is", h->who);
		goto out;
	}
	load_config(h, &cfg);
	all = ledger_load_all(h, &n_all);
	lv_ok = stat(h->lvdir, &sb) == 0 && S_ISDIR(sb.st_mode);
	if (!lv_ok)
		hlog(LOG_WARNING, "reconnect: %s is not a directory; cannot tell which "
		     "guests run, stale ledger entries kept", h->lvdir);
	for (size_t i = 0; i < n_all; i++) {
		struct ledger *l = &all[i];

		if (h->d.uuid[0] && !strcmp(l->uuid, h->d.uuid)) {
			if (l->state == LS_PREPARING) {
				l->state = LS_RUNNING;
				if (ledger_write(h, l) == 0)
					hlog(LOG_INFO, "reconnect %s: running", h->who);
			}
			continue;
		}
		if (!lv_ok || (l->state != LS_PREPARING && l->state != LS_RUNNING))
			continue;
		/* A guest still preparing may not have a status file yet. */
		if (l->state == LS_PREPARING && now - l->time <= HV_HOOK_PROMISE_TTL)
			continue;
		if (guest_alive(h, l))
			continue;
		mark_released(h, l, &cfg, "reconnect: gone");
	}
	give_back_all(h, all, n_all, &cfg, "reconnect");
out:
	lock_release(h);
	free(all);
	return HV_EXIT_OK;
}

/* ---------- entry ---------- */
static char *read_input(const char *file, size_t *len, bool *too_big)
{
	size_t cap = HV_DOM_MAX_XML + 1;
	char *buf = malloc(cap), scratch[65536];
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
		size_t drained = 0;

		*too_big = true;
		/* Drain libvirt's pipe (bounded) so it never sees EPIPE. */
		while (drained < (64u << 20) && (n = read(fd, scratch, sizeof(scratch))) > 0)
			drained += (size_t)n;
	}
	if (file)
		close(fd);
	return buf;
}

static void resolve_dir(char *dst, size_t n, const char *opt, const char *env,
			const char *def)
{
	const char *v = opt ? opt : getenv(env);

	snprintf(dst, n, "%s", v && *v ? v : def);
}

int hv_libvirt_hook(const struct hv_sys *s, const struct hv_hook_opts *o,
		    int argc, char **argv)
{
	struct hk *h;
	const char *op;
	char *xml, err[512], nm[128];
	size_t len;
	bool too_big, prepare, may_fail;
	int ret = HV_EXIT_OK;

	if (argc < 2) {
		hv_err("libvirt-hook: expected DOMAIN OPERATION [SUB-OPERATION [EXTRA]] "
		       "(as libvirt passes them); see hvoctl libvirt-hook --help");
		return HV_EXIT_ERROR;
	}
	op = argv[1];
	prepare = !strcmp(op, "prepare");
	if (!prepare && strcmp(op, "release") && strcmp(op, "reconnect") &&
	    strcmp(op, "started")) {
		/* migrate, restore, start, stopped, ...: nothing.  Drain the XML
		 * (bounded) so libvirt never writes into a closed pipe. */
		char scratch[65536];
		size_t drained = 0;
		ssize_t n;

		while (!o->xml_file && !isatty(0) && drained < (64u << 20) &&
		       (n = read(0, scratch, sizeof(scratch))) > 0)
			drained += (size_t)n;
		return HV_EXIT_OK;
	}
	may_fail = prepare;
	xml = read_input(o->xml_file, &len, &too_big);
	if (!xml) {
		if (may_fail) {
			herr("cannot read the domain XML%s%s: %s", o->xml_file ? " from " : "",
			     o->xml_file ? o->xml_file : "", strerror(errno));
			return HV_EXIT_ERROR;
		}
		hlog(LOG_ERR, "%s: cannot read the domain XML", op);
		return HV_EXIT_OK;
	}
	/* Fast path: a guest without huge pages is none of hvokit's business.
	 * (reconnect still runs: it also cleans up after other guests.) */
	if (!too_big && strcmp(op, "reconnect") &&
	    !memmem(xml, len, "hugepages", 9) && !memmem(xml, len, "pagesize", 8)) {
		free(xml);
		return HV_EXIT_OK;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		free(xml);
		return may_fail ? HV_EXIT_ERROR : HV_EXIT_OK;
	}
	h->sys = s;
	h->o = o;
	h->op = op;
	h->arg_name = argv[0];
	h->dirfd = h->lockfd = -1;
	resolve_dir(h->rundir, sizeof(h->rundir), o->rundir, "HVOCTL_RUNDIR", HV_HOOK_RUNDIR);
	resolve_dir(h->lvdir, sizeof(h->lvdir), o->libvirt_rundir, "HVOCTL_LIBVIRT_RUNDIR",
		    HV_HOOK_LIBVIRT_RUNDIR);
	if (too_big) {
		snprintf(err, sizeof(err), "domain XML is larger than %d bytes", HV_DOM_MAX_XML);
	} else {
		uint64_t def_kb = 0, v;
		char mi[8192], *p, num[32];

		/* The host's default huge page size, for <hugepages/> alone;
		 * a value that is no huge page size counts as unknown. */
		if (hv_read_str(s, "/proc/meminfo", mi, sizeof(mi)) == 0 &&
		    (p = strstr(mi, "Hugepagesize:")) &&
		    sscanf(p + 13, " %31[0-9] kB", num) == 1 &&
		    hv_parse_u64(num, &v) == 0 && hv_pagesize_kb_ok(v))
			def_kb = v;
		if (hv_dom_demand(xml, len, def_kb, &h->d, err, sizeof(err)) == 0)
			err[0] = '\0';
	}
	free(xml);
	hv_dom_safe_name(h->d.name[0] ? h->d.name : h->arg_name, nm, sizeof(nm));
	snprintf(h->who, sizeof(h->who), "guest '%s' (%s)", nm,
		 h->d.uuid[0] ? h->d.uuid : "no uuid");
	if (err[0]) {
		if (may_fail) {
			herr("%s: refused: %s", h->who, err);
			ret = HV_EXIT_ERROR;
		} else {
			hlog(LOG_ERR, "%s %s: domain XML not understood (%s); nothing done",
			     op, h->who, err);
		}
		free(h);
		return ret;
	}
	if (!strcmp(op, "reconnect"))
		ret = do_reconnect(h);
	else if (!h->d.hugepages || h->d.n == 0)
		ret = HV_EXIT_OK;
	else if (prepare)
		ret = do_prepare(h);
	else if (!strcmp(op, "started"))
		ret = do_started(h);
	else
		ret = do_release(h);
	free(h);
	return ret;
}
