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
#define LEDGER_MAX 65536

struct add {
	uint64_t size_kb;
	int node; /* -1: global pool (host without NUMA information) */
	uint64_t pages;
};

struct ledger {
	char uuid[37];
	char name[256];
	bool name_truncated;
	bool running;
	int64_t time;
	size_t n_need;
	struct hv_demand_item need[HV_DOM_MAX_DEMANDS];
	size_t n_add;
	struct add add[MAX_ADDS];
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
	fprintf(f, "hvokit-ledger 1\nuuid %s\nname %s\ntruncated %d\nstate %s\ntime %" PRId64 "\n",
		l->uuid, hexname[0] ? hexname : "-", l->name_truncated,
		l->running ? "running" : "preparing", l->time);
	for (size_t i = 0; i < l->n_need; i++) {
		hv_nodeset_format(&l->need[i].nodes, nsbuf, sizeof(nsbuf));
		fprintf(f, "need %" PRIu64 " %s %s %" PRIu64 "\n", l->need[i].size_kb,
			l->need[i].strict ? "strict" : "any", nsbuf, l->need[i].pages);
	}
	for (size_t i = 0; i < l->n_add; i++)
		fprintf(f, "added %" PRIu64 " %d %" PRIu64 "\n", l->add[i].size_kb,
			l->add[i].node, l->add[i].pages);
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

/* 1: read, 0: no entry, -1: unreadable or malformed (logged). */
static int ledger_read(struct hk *h, const char *uuid, struct ledger *l)
{
	char fn[96], buf[LEDGER_MAX + 1], *line, *save = NULL;
	ssize_t n;
	size_t len = 0;
	int fd;

	memset(l, 0, sizeof(*l));
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
		char a[1100], b[1100], c[1100], d[64];
		unsigned long long x, y;
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
			l->running = !strcmp(d, "running");
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
		} else if (strcmp(line, "hvokit-ledger 1")) {
			goto bad;
		}
		(void)b;
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

/* Other guests' entries that still hold a promise on free pages. */
static struct ledger *load_promises(struct hk *h, const char *self, size_t *n_out)
{
	char (*ids)[37];
	size_t n = ledger_list(h, &ids), k = 0;
	struct ledger *v = n ? calloc(n, sizeof(*v)) : NULL;
	int64_t now = (int64_t)time(NULL);

	for (size_t i = 0; v && i < n; i++) {
		if (!strcmp(ids[i], self))
			continue;
		if (ledger_read(h, ids[i], &v[k]) != 1)
			continue;
		if (v[k].running || now - v[k].time > HV_HOOK_PROMISE_TTL)
			continue;
		k++;
	}
	free(ids);
	*n_out = k;
	return v;
}

/* ---------- availability model ---------- */

/*
 * Free pages per node of one pool, minus reserved pages and pages promised
 * to other guests that are starting, then this guest's demand taken from
 * what is left.  Pessimistic where the kernel's choice is unknown: other
 * guests' "any node" promises and the global reserved count are taken from
 * the nodes this guest needs strictly first.  Without NUMA information the
 * pool is one slot.
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

/* Take up to want pages; pass 0 over our strict nodes when prefer_mine.
 * Returns what could not be taken. */
static uint64_t take(struct model *m, const struct hv_demand_item *it,
		     uint64_t want, bool prefer_mine)
{
	for (int pass = prefer_mine ? 0 : 1; pass < 2 && want; pass++)
		for (size_t i = 0; i < m->n && want; i++) {
			uint64_t t;

			if (!in_set(m, i, it) || (pass == 0 && !m->mine[i]))
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
			    const struct hv_demand *d, const struct ledger *others,
			    size_t n_others, uint64_t *short_out)
{
	struct model m;
	struct hv_demand_item any = { .size_kb = p->size_kb };
	uint64_t total = 0;

	model_init(&m, st, p, d);
	for (int strict = 1; strict >= 0; strict--)
		for (size_t o = 0; o < n_others; o++)
			for (size_t k = 0; k < others[o].n_need; k++) {
				const struct hv_demand_item *it = &others[o].need[k];

				if (it->size_kb == p->size_kb && it->strict == (strict != 0))
					take(&m, it, it->pages, true);
			}
	take(&m, &any, p->resv, true);
	for (int strict = 1; strict >= 0; strict--)
		for (size_t k = 0; k < d->n; k++) {
			const struct hv_demand_item *it = &d->items[k];

			if (it->size_kb != p->size_kb || it->strict != (strict != 0))
				continue;
			short_out[k] = take(&m, it, it->pages, false);
			total += short_out[k];
		}
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

/* Grow pools by the shortfall.  Records every page added in l. */
static int grow(struct hk *h, struct hv_state *st, struct ledger *l,
		const uint64_t *shortfall)
{
	struct hv_reserve_opts ro = h->o->ropts;
	const struct hv_demand *d = &h->d;

	ro.quiet = true;
	for (int strict = 1; strict >= 0; strict--)
		for (size_t k = 0; k < d->n; k++) {
			const struct hv_demand_item *it = &d->items[k];
			struct hv_pool *p = hv_state_pool(st, it->size_kb);
			uint64_t want = shortfall[k];
			char sz[32];

			if (!want || it->strict != (strict != 0))
				continue;
			fmt_kb(it->size_kb, sz, sizeof(sz));
			if (st->n_nodes == 0 || !it->strict) {
				struct hv_reserve_result r;
				uint64_t before[HV_MAX_NODES];

				for (size_t i = 0; i < p->n_nodes; i++)
					before[i] = p->nodes[i].total;
				if (hv_reserve(h->sys, it->size_kb, -1,
					       hv_add_sat(p->total, want), &ro, &r) < 0)
					return -1;
				if (hv_pool_reread(h->sys, st, p) < 0)
					return -1;
				hlog(LOG_INFO, "prepare %s: %s pool: %" PRIu64 " -> %" PRIu64
				     " pages (short %" PRIu64 ", any node)", h->who, sz,
				     r.before, r.after, want);
				if (st->n_nodes == 0) {
					if (r.after > r.before)
						add_record(l, it->size_kb, -1, r.after - r.before);
					continue;
				}
				for (size_t i = 0; i < p->n_nodes; i++)
					if (p->nodes[i].total > before[i] &&
					    add_record(l, it->size_kb, p->nodes[i].node,
						       p->nodes[i].total - before[i]) < 0)
						return -1;
				continue;
			}
			for (size_t i = 0; i < p->n_nodes && want; i++) {
				struct hv_reserve_result r;
				int node = p->nodes[i].node;

				if (!hv_nodeset_has(&it->nodes, node))
					continue;
				if (hv_reserve(h->sys, it->size_kb, node,
					       hv_add_sat(p->nodes[i].total, want), &ro, &r) < 0)
					return -1;
				if (hv_pool_reread(h->sys, st, p) < 0)
					return -1;
				hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %"
				     PRIu64 " pages (short %" PRIu64 ")", h->who, sz, node,
				     r.before, r.after, want);
				if (r.after > r.before) {
					uint64_t got = r.after - r.before;

					if (add_record(l, it->size_kb, node, got) < 0)
						return -1;
					want = got >= want ? 0 : want - got;
				}
			}
		}
	return 0;
}

/* Put every pool this start changed back to its size before. */
static void rollback(struct hk *h, const struct ledger *l, size_t first_add)
{
	struct hv_reserve_opts ro = h->o->ropts;

	ro.quiet = true;
	for (size_t i = first_add; i < l->n_add; i++) {
		const struct add *a = &l->add[i];
		struct hv_reserve_result r;
		char rel[256], sz[32];
		uint64_t cur;

		if (a->node < 0)
			snprintf(rel, sizeof(rel), HV_HP_DIR "/hugepages-%" PRIu64 "kB/nr_hugepages",
				 a->size_kb);
		else
			snprintf(rel, sizeof(rel), HV_NODE_DIR "/node%d/hugepages/hugepages-%"
				 PRIu64 "kB/nr_hugepages", a->node, a->size_kb);
		fmt_kb(a->size_kb, sz, sizeof(sz));
		if (hv_read_u64(h->sys, rel, &cur) < 0 ||
		    hv_reserve(h->sys, a->size_kb, a->node,
			       cur > a->pages ? cur - a->pages : 0, &ro, &r) < 0) {
			hlog(LOG_ERR, "prepare %s: %s pool node %d: could not restore", h->who,
			     sz, a->node);
			continue;
		}
		hlog(LOG_INFO, "prepare %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
		     " pages (restored after failure)", h->who, sz, a->node, r.before, r.after);
	}
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

static int do_prepare(struct hk *h)
{
	struct hv_demand *d = &h->d;
	struct hv_state *st = NULL;
	struct ledger *others = NULL, *l = NULL;
	size_t n_others = 0, first_add;
	uint64_t shortfall[HV_DOM_MAX_DEMANDS] = { 0 }, total_short = 0;
	int ret = HV_EXIT_ERROR, had;

	if (lock_acquire(h) < 0) {
		herr("%s: refused: cannot take the hvokit lock", h->who);
		goto out;
	}
	st = calloc(1, sizeof(*st));
	l = calloc(1, sizeof(*l));
	if (!st || !l) {
		herr("out of memory");
		goto out;
	}
	if (hv_state_read(h->sys, st) < 0 || check_host(h, st) < 0)
		goto out;
	/* A previous start of this guest that never reached release: keep
	 * what it added, so release gives everything back. */
	had = ledger_read(h, d->uuid, l);
	if (had != 1)
		memset(l, 0, sizeof(*l));
	first_add = l->n_add;
	others = load_promises(h, d->uuid, &n_others);
	for (size_t i = 0; i < st->n_pools; i++)
		total_short += model_short(st, &st->pools[i], d, others, n_others, shortfall);
	if (total_short && grow(h, st, l, shortfall) < 0) {
		rollback(h, l, first_add);
		herr("%s: refused: I/O error while growing pools; pools restored", h->who);
		goto out;
	}
	if (total_short) {
		/* Verify with fresh figures. */
		total_short = 0;
		memset(shortfall, 0, sizeof(shortfall));
		if (hv_state_read(h->sys, st) < 0) {
			rollback(h, l, first_add);
			goto out;
		}
		for (size_t i = 0; i < st->n_pools; i++)
			total_short += model_short(st, &st->pools[i], d, others, n_others,
						   shortfall);
	}
	if (total_short) {
		char msg[1536], where[300], sz[32];
		size_t len = 0;
		bool big = false;

		rollback(h, l, first_add);
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
		herr("%s: refused: not enough huge pages, missing %s; pools restored to "
		     "their previous size", h->who, msg);
		if (big && !cmdline_has_cma(h->sys))
			herr("no hugetlb_cma= area was reserved at boot: growing 1G pools at "
			     "runtime is not dependable; set CMA_1G in hvokit.conf and boot "
			     "with the parameters 'hvoctl cmdline' prints");
		ret = HV_EXIT_PARTIAL;
		goto out;
	}
	snprintf(l->uuid, sizeof(l->uuid), "%s", d->uuid);
	snprintf(l->name, sizeof(l->name), "%s", d->name);
	l->name_truncated = d->name_truncated;
	l->running = false;
	l->time = (int64_t)time(NULL);
	l->n_need = d->n;
	memcpy(l->need, d->items, d->n * sizeof(d->items[0]));
	if (ledger_write(h, l) < 0) {
		rollback(h, l, first_add);
		herr("%s: refused: cannot record the grant; pools restored", h->who);
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
	free(st);
	free(l);
	return ret;
}

/* ---------- release ---------- */

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
		hlog(LOG_ERR, "%s: invalid; using the default release policy", path);
		hv_config_defaults(c);
	}
}

/* Give back what entry l added.  Called under the lock. */
static void release_entry(struct hk *h, const struct ledger *l, const char *why)
{
	struct hv_config cfg;
	struct hv_state *st;
	struct ledger *others;
	size_t n_others = 0;
	struct hv_reserve_opts ro = h->o->ropts;
	char who[400], nm[128];

	hv_dom_safe_name(l->name, nm, sizeof(nm));
	snprintf(who, sizeof(who), "guest '%s' (%s)", nm, l->uuid);
	load_config(h, &cfg);
	if (l->n_add == 0) {
		hlog(LOG_INFO, "%s %s: nothing was added at its start; nothing to give back",
		     why, who);
		return;
	}
	if (cfg.libvirt_release == HV_RELEASE_KEEP) {
		hlog(LOG_INFO, "%s %s: LIBVIRT_RELEASE=keep: pages stay in the pools", why, who);
		return;
	}
	st = calloc(1, sizeof(*st));
	if (!st || hv_state_read(h->sys, st) < 0) {
		hlog(LOG_ERR, "%s %s: cannot read the pools; nothing given back", why, who);
		free(st);
		return;
	}
	others = load_promises(h, l->uuid, &n_others);
	ro.quiet = true;
	for (size_t i = 0; i < l->n_add; i++) {
		const struct add *a = &l->add[i];
		struct hv_pool *p = hv_state_pool(st, a->size_kb);
		uint64_t k = a->pages, promised = 0, promised_node = 0, lim, cur;
		struct hv_reserve_result r;
		int ni = a->node >= 0 ? hv_state_node_index(st, a->node) : -1;
		char sz[32];
		const char *limit = NULL;

		fmt_kb(a->size_kb, sz, sizeof(sz));
		if (!p || (a->node >= 0 && ni < 0)) {
			hlog(LOG_ERR, "%s %s: %s pool node %d is gone; skipped", why, who, sz,
			     a->node);
			continue;
		}
		for (size_t o = 0; o < n_others; o++)
			for (size_t q = 0; q < others[o].n_need; q++) {
				const struct hv_demand_item *it = &others[o].need[q];

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
		if (a->size_kb == 1048576 && cfg.libvirt_warm_1g) {
			lim = p->total > cfg.libvirt_warm_1g ? p->total - cfg.libvirt_warm_1g : 0;
			if (k > lim) {
				k = lim;
				limit = "LIBVIRT_WARM_1G";
			}
		}
		cur = ni >= 0 ? p->nodes[ni].total : p->total;
		if (k == 0) {
			hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
			     " pages (kept %" PRIu64 ": %s)", why, who, sz, a->node, cur, cur,
			     a->pages, limit ? limit : "nothing to give");
			continue;
		}
		if (hv_reserve(h->sys, a->size_kb, a->node, cur - k, &ro, &r) < 0) {
			hlog(LOG_ERR, "%s %s: %s pool node %d: shrinking failed", why, who, sz,
			     a->node);
			continue;
		}
		hlog(LOG_INFO, "%s %s: %s pool node %d: %" PRIu64 " -> %" PRIu64
		     " pages (gave back %" PRIu64 " of %" PRIu64 " added%s%s)", why, who, sz,
		     a->node, r.before, r.after, r.before - r.after, a->pages,
		     limit ? "; limited by " : "", limit ? limit : "");
		hv_pool_reread(h->sys, st, p);
	}
	free(others);
	free(st);
}

static int do_release(struct hk *h)
{
	struct ledger *l = calloc(1, sizeof(*l));

	if (!l || lock_acquire(h) < 0) {
		hlog(LOG_ERR, "release %s: no lock; the ledger entry stays (reconnect or "
		     "the next release cleans up)", h->who);
		goto out;
	}
	if (ledger_read(h, h->d.uuid, l) == 1) {
		release_entry(h, l, "release");
		ledger_remove(h, h->d.uuid);
	}
out:
	lock_release(h);
	free(l);
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

	if (l && lock_acquire(h) == 0 && ledger_read(h, h->d.uuid, l) == 1 && !l->running) {
		l->running = true;
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
	struct ledger *l = calloc(1, sizeof(*l));
	struct stat sb;
	char (*ids)[37] = NULL;
	size_t n;
	int64_t now = (int64_t)time(NULL);

	if (!l || lock_acquire(h) < 0) {
		hlog(LOG_ERR, "reconnect %s: no lock; ledger left as it is", h->who);
		goto out;
	}
	if (h->d.uuid[0] && ledger_read(h, h->d.uuid, l) == 1 && !l->running) {
		l->running = true;
		if (ledger_write(h, l) == 0)
			hlog(LOG_INFO, "reconnect %s: running", h->who);
	}
	if (stat(h->lvdir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
		hlog(LOG_WARNING, "reconnect: %s is not a directory; cannot tell which "
		     "guests run, stale ledger entries kept", h->lvdir);
		goto out;
	}
	n = ledger_list(h, &ids);
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(ids[i], h->d.uuid) || ledger_read(h, ids[i], l) != 1)
			continue;
		/* A guest still preparing may not have a status file yet. */
		if (!l->running && now - l->time <= HV_HOOK_PROMISE_TTL)
			continue;
		if (guest_alive(h, l))
			continue;
		release_entry(h, l, "reconnect: gone");
		ledger_remove(h, ids[i]);
	}
out:
	free(ids);
	lock_release(h);
	free(l);
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
		uint64_t def_kb = 0;
		char mi[8192], *p;

		/* The host's default huge page size, for <hugepages/> alone. */
		if (hv_read_str(s, "/proc/meminfo", mi, sizeof(mi)) == 0 &&
		    (p = strstr(mi, "Hugepagesize:")))
			def_kb = strtoull(p + 13, NULL, 10);
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
