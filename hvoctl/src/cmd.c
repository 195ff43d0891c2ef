/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "accounts.h"
#include "cmd.h"
#include "config.h"
#include "hook.h"
#include "output.h"
#include "plan.h"
#include "pools.h"
#include "reserve.h"
#include "size.h"
#include "sysfs.h"
#include "util.h"

struct ctx {
	FILE *out;
	const char *sub;
	const char *sysroot;
	const char *config;
	struct hv_sys sys;
	struct hv_reserve_opts ropts;
	bool json, dry_run, pools;
	const char *kver;
	const char *output;
	int node; /* -1: none */
	const char *rundir, *libvirt_rundir, *xml_file;
	long lock_timeout_ms; /* -1: default */
};

static const char usage_main[] =
	"Usage: hvoctl [--sysroot DIR] [--config FILE] COMMAND [OPTIONS]\n"
	"\n"
	"Huge page pools and HugeTLB Vmemmap Optimization (HVO) on this host.\n"
	"\n"
	"Commands:\n"
	"  status    pools per size and NUMA node, mounts, HVO state and savings\n"
	"  reserve   grow or shrink a huge page pool\n"
	"  apply     bring the host to the state the config file describes\n"
	"  cmdline   kernel parameters that realise the config at boot\n"
	"  metrics   the status figures in Prometheus text format\n"
	"  verify    exit 0 only if HVO is in effect for the configured pools\n"
	"  libvirt-hook  libvirt qemu hook: size pools for guests with huge pages\n"
	"\n"
	"Options:\n"
	"  --sysroot DIR   read and write sysfs/procfs below DIR (also HVOCTL_SYSROOT)\n"
	"  --config FILE   config file (default " HV_DEFAULT_CONFIG ", also HVOKIT_CONF)\n"
	"  -h, --help      this help; COMMAND --help for a command\n"
	"  -V, --version   print the version\n"
	"\n"
	"Exit status: 0 ok, 1 error, 2 pool not at the asked size, 3 verify failed.\n"
	"See hvoctl(8) and hvokit.conf(5).\n";

static const struct sub {
	const char *name;
	const char *opts; /* allowed option letters besides R, c, h */
	const char *usage;
	int (*run)(struct ctx *, int, char **);
} *find_sub(const char *name);

static int cmd_libvirt_hook(struct ctx *x, int argc, char **argv);

/* ---------- helpers ---------- */

static int load_config(struct ctx *x, struct hv_config *c)
{
	return hv_config_load(c, hv_config_path(x->config)) < 0 ? -1 : 0;
}

static struct hv_state *read_state(struct ctx *x)
{
	struct hv_state *st = calloc(1, sizeof(*st));

	if (!st) {
		hv_err("%s: out of memory", x->sub);
		return NULL;
	}
	if (hv_state_read(&x->sys, st) < 0) {
		free(st);
		return NULL;
	}
	return st;
}

/* Config and host state for a command that takes no argument; errors
 * printed.  The caller frees *c and *st in every case. */
static int load_inputs(struct ctx *x, int argc, char **argv, struct hv_config **c,
		       struct hv_state **st)
{
	*c = NULL;
	*st = NULL;
	if (argc > 0) {
		hv_err("%s: unexpected argument '%s'; see hvoctl %s --help", x->sub, argv[0],
		       x->sub);
		return -1;
	}
	*c = malloc(sizeof(**c));
	if (!*c) {
		hv_err("%s: out of memory", x->sub);
		return -1;
	}
	if (load_config(x, *c) < 0 || !(*st = read_state(x)))
		return -1;
	return 0;
}

static const char *where(char *buf, size_t n, uint64_t size_kb, int node)
{
	char sz[32];

	hv_format_kb(size_kb, sz, sizeof(sz));
	if (node < 0)
		snprintf(buf, n, "%s pool", sz);
	else
		snprintf(buf, n, "%s pool node %d", sz, node);
	return buf;
}

/* Runs one reserve and reports it; returns the exit code contribution. */
static int do_reserve(struct ctx *x, uint64_t size_kb, int node, uint64_t target,
		      bool quiet_if_same)
{
	struct hv_reserve_result r;
	char w[64];

	where(w, sizeof(w), size_kb, node);
	/* Under the libvirt hook's lock: the hook's accounts see this write. */
	if (hv_accounts_admin_reserve(&x->sys, size_kb, node, target, &x->ropts, &r) < 0)
		return HV_EXIT_ERROR;
	if (r.before != r.after || !quiet_if_same)
		fprintf(x->out, "%s: %" PRIu64 " -> %" PRIu64 " pages (asked %" PRIu64 ")\n",
			w, r.before, r.after, r.asked);
	switch (r.status) {
	case HV_RES_OK:
		return HV_EXIT_OK;
	case HV_RES_PARTIAL:
		hv_err("%s: %s: obtained %" PRIu64 " of %" PRIu64 " pages after %u "
		       "attempt(s)%s; free memory%s or reserve at boot (hvoctl cmdline)",
		       x->sub, w, r.after, r.asked, r.attempts,
		       x->ropts.compact ? " with compaction" : "",
		       size_kb >= 1048576 ? ", use a CMA area (CMA_1G)" : "");
		return HV_EXIT_PARTIAL;
	case HV_RES_IN_USE:
		hv_err("%s: %s: %" PRIu64 " pages are in use or reserved; left %" PRIu64
		       " instead of %" PRIu64 "; stop the users of the pages and retry",
		       x->sub, w, r.floor, r.after, r.asked);
		return HV_EXIT_PARTIAL;
	}
	return HV_EXIT_ERROR;
}

static int worst(int a, int b)
{
	/* error beats partial beats ok */
	if (a == HV_EXIT_ERROR || b == HV_EXIT_ERROR)
		return HV_EXIT_ERROR;
	return a > b ? a : b;
}

/* ---------- status / metrics ---------- */

/* Which running guests use which device-dax instance: libvirt's status
 * files under the system root, or in $HVOCTL_LIBVIRT_RUNDIR as given. */
static void read_devdax_guests(struct ctx *x, struct hv_state *st)
{
	const char *env = getenv("HVOCTL_LIBVIRT_RUNDIR");
	struct hv_sys real;

	if (env && env[0] == '/' && hv_sys_init(&real, "") == 0)
		hv_devdax_read_guests(&real, env, st);
	else
		hv_devdax_read_guests(&x->sys, HV_HOOK_LIBVIRT_RUNDIR, st);
}

static int cmd_status(struct ctx *x, int argc, char **argv)
{
	struct hv_state *st;

	(void)argv;
	if (argc > 0) {
		hv_err("status: unexpected argument '%s'; see hvoctl status --help", argv[0]);
		return HV_EXIT_ERROR;
	}
	st = read_state(x);
	if (!st)
		return HV_EXIT_ERROR;
	read_devdax_guests(x, st);
	if (x->json)
		hv_print_json(x->out, st);
	else
		hv_print_table(x->out, st);
	free(st);
	return HV_EXIT_OK;
}

static int cmd_metrics(struct ctx *x, int argc, char **argv)
{
	struct hv_state *st;
	char tmp[PATH_MAX];
	FILE *f = x->out;
	int r = HV_EXIT_OK;

	if (argc > 0) {
		hv_err("metrics: unexpected argument '%s'; see hvoctl metrics --help", argv[0]);
		return HV_EXIT_ERROR;
	}
	st = read_state(x);
	if (!st)
		return HV_EXIT_ERROR;
	read_devdax_guests(x, st);
	if (x->output) {
		/* Atomic replace, as node_exporter's textfile collector needs. */
		if (snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", x->output,
			     (long)getpid()) >= (int)sizeof(tmp)) {
			hv_err("metrics: %s: path too long", x->output);
			free(st);
			return HV_EXIT_ERROR;
		}
		f = fopen(tmp, "we");
		if (!f) {
			hv_err("metrics: %s: %s", tmp, strerror(errno));
			free(st);
			return HV_EXIT_ERROR;
		}
	}
	hv_print_metrics(f, st);
	free(st);
	if (x->output) {
		if (fclose(f) != 0 || rename(tmp, x->output) != 0) {
			hv_err("metrics: %s: %s", x->output, strerror(errno));
			unlink(tmp);
			r = HV_EXIT_ERROR;
		}
	}
	return r;
}

/* ---------- reserve ---------- */

static int cmd_reserve(struct ctx *x, int argc, char **argv)
{
	struct hv_node_val nv[HV_MAX_NODES];
	size_t n_nv = 0;
	struct hv_state *st;
	uint64_t kb, count = 0;
	bool per_node;
	int e, rc = HV_EXIT_OK;

	if (argc != 2) {
		hv_err("reserve: expected SIZE and COUNT (or NODE:COUNT,...); "
		       "see hvoctl reserve --help");
		return HV_EXIT_ERROR;
	}
	e = hv_parse_pagesize(argv[0], &kb);
	if (e < 0) {
		hv_err("reserve: SIZE: '%s' is not a huge page size; expected e.g. 1G or 2M",
		       argv[0]);
		return HV_EXIT_ERROR;
	}
	per_node = strchr(argv[1], ':') != NULL;
	if (per_node) {
		e = hv_parse_node_vals(argv[1], hv_parse_u64, nv, HV_MAX_NODES, &n_nv);
		if (e < 0) {
			hv_err("reserve: COUNT: '%s' is not a per-node count list; "
			       "expected NODE:COUNT,... such as 0:2,1:2", argv[1]);
			return HV_EXIT_ERROR;
		}
		if (x->node >= 0) {
			hv_err("reserve: --node: not allowed with a NODE:COUNT list");
			return HV_EXIT_ERROR;
		}
	} else {
		e = hv_parse_u64(argv[1], &count);
		if (e < 0) {
			hv_err("reserve: COUNT: '%s' is %s; expected a page count such as 4, "
			       "or NODE:COUNT,...", argv[1],
			       e == -ERANGE ? "too large" : "not a page count");
			return HV_EXIT_ERROR;
		}
	}
	st = read_state(x);
	if (!st)
		return HV_EXIT_ERROR;
	if (!hv_state_pool(st, kb)) {
		hv_err("reserve: %s: this kernel has no such huge page size (%s/hugepages-%" PRIu64
		       "kB missing)", argv[0], HV_HP_DIR, kb);
		free(st);
		return HV_EXIT_ERROR;
	}
	if (!per_node) {
		nv[0].node = x->node;
		nv[0].val = count;
		n_nv = 1;
	}
	for (size_t i = 0; i < n_nv; i++) {
		if (nv[i].node >= 0 && hv_state_node_index(st, nv[i].node) < 0) {
			hv_err("reserve: node %d: not an online NUMA node; see %s/online",
			       nv[i].node, HV_NODE_DIR);
			free(st);
			return HV_EXIT_ERROR;
		}
	}
	free(st);
	/* Shrinks first so that their memory can serve the grows. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n_nv; i++) {
			char rel[256];
			uint64_t cur;

			hv_pool_file(rel, sizeof(rel), kb, nv[i].node, "nr_hugepages");
			if (hv_read_u64(&x->sys, rel, &cur) < 0)
				cur = 0; /* do_reserve reports the error */
			if ((pass == 0) != (nv[i].val < cur))
				continue;
			rc = worst(rc, do_reserve(x, kb, nv[i].node, nv[i].val, false));
		}
	}
	return rc;
}

/* ---------- apply ---------- */

struct op {
	uint64_t size_kb;
	int node;
	uint64_t cur, target;
};

static int cmp_op(const void *a, const void *b)
{
	const struct op *x = a, *y = b;
	bool xs = x->target < x->cur, ys = y->target < y->cur;

	if (xs != ys)
		return xs ? -1 : 1; /* shrinks first */
	if (x->size_kb != y->size_kb)
		return x->size_kb > y->size_kb ? -1 : 1; /* large pages first */
	return x->node - y->node;
}

/* apply, step 1: vm.hugetlb_optimize_vmemmap as the config says.  Counts
 * a change in *changes; returns the exit code contribution. */
static int apply_hvo(struct ctx *x, const struct hv_config *c, const struct hv_state *st,
		     size_t *changes)
{
	uint64_t back = 0;
	char full[PATH_MAX];
	int e = 0;

	if (!st->hvo_supported) {
		if (!c->hvo)
			return HV_EXIT_OK;
		hv_err("apply: HVO=on: this kernel does not support HVO (%s missing); "
		       "it needs CONFIG_HUGETLB_PAGE_OPTIMIZE_VMEMMAP", HV_SYSCTL_HVO);
		return HV_EXIT_ERROR;
	}
	if (st->hvo_sysctl == (c->hvo ? 1 : 0))
		return HV_EXIT_OK;
	hv_path(&x->sys, full, sizeof(full), HV_SYSCTL_HVO);
	if (!x->dry_run)
		e = hv_write_u64(&x->sys, HV_SYSCTL_HVO, c->hvo ? 1 : 0, &back);
	if (e < 0) {
		hv_err("apply: write: %s: %d: %s", full, c->hvo ? 1 : 0, strerror(-e));
		return HV_EXIT_ERROR;
	}
	if (!x->dry_run && back != (c->hvo ? 1u : 0u)) {
		hv_err("apply: write: %s: wrote %d, read back %" PRIu64
		       "; the kernel refused the change", full, c->hvo ? 1 : 0, back);
		return HV_EXIT_ERROR;
	}
	(*changes)++;
	fprintf(x->out, "%svm.hugetlb_optimize_vmemmap: %d -> %d\n",
		x->dry_run ? "would change " : "", st->hvo_sysctl, c->hvo ? 1 : 0);
	for (size_t i = 0; c->hvo && i < st->n_pools; i++)
		if (st->pools[i].total > 0) {
			char w[64];

			hv_err("apply: note: %s: %" PRIu64 " pages were allocated before HVO "
			       "was on and stay unoptimized until freed and allocated again",
			       where(w, sizeof(w), st->pools[i].size_kb, -1), st->pools[i].total);
		}
	return HV_EXIT_OK;
}

static int cmd_apply(struct ctx *x, int argc, char **argv)
{
	struct hv_config *c = NULL;
	struct hv_state *st = NULL;
	struct hv_plan *plan = NULL;
	struct op ops[HV_NPOOLS * (HV_MAX_NODES + 1)];
	size_t n_ops = 0, changes = 0;
	int rc = HV_EXIT_OK;

	if (load_inputs(x, argc, argv, &c, &st) < 0) {
		rc = HV_EXIT_ERROR;
		goto out;
	}
	plan = malloc(sizeof(*plan));
	if (!plan) {
		hv_err("apply: out of memory");
		rc = HV_EXIT_ERROR;
		goto out;
	}
	if (hv_plan_build(c, st, false, plan) < 0) {
		rc = HV_EXIT_ERROR;
		goto out;
	}
	/* HVO first: it applies only to pages allocated while it is on. */
	rc = apply_hvo(x, c, st, &changes);
	for (size_t k = 0; k < HV_NPOOLS; k++) {
		const struct hv_target *t = &plan->t[k];
		struct hv_pool *p;

		if (!t->managed || !(p = hv_state_pool(st, t->size_kb)))
			continue;
		if (!t->per_node) {
			ops[n_ops++] = (struct op){ t->size_kb, -1, p->total, t->global };
			continue;
		}
		for (size_t i = 0; i < st->n_nodes; i++)
			ops[n_ops++] = (struct op){ t->size_kb, st->nodes[i].id,
						    p->nodes[i].total, t->node[i] };
	}
	qsort(ops, n_ops, sizeof(ops[0]), cmp_op);
	for (size_t i = 0; i < n_ops; i++) {
		char w[64];

		if (ops[i].cur == ops[i].target)
			continue;
		changes++;
		if (x->dry_run) {
			fprintf(x->out, "would change %s: %" PRIu64 " -> %" PRIu64 " pages\n",
				where(w, sizeof(w), ops[i].size_kb, ops[i].node),
				ops[i].cur, ops[i].target);
			continue;
		}
		rc = worst(rc, do_reserve(x, ops[i].size_kb, ops[i].node, ops[i].target, true));
	}
	if (changes == 0)
		fprintf(x->out, "nothing to change\n");
out:
	free(c);
	free(st);
	free(plan);
	return rc;
}

/* ---------- cmdline ---------- */

static int cmd_cmdline(struct ctx *x, int argc, char **argv)
{
	struct hv_config *c;
	struct hv_state *st;
	char buf[4096];
	int rc = HV_EXIT_ERROR;

	if (load_inputs(x, argc, argv, &c, &st) == 0 &&
	    hv_cmdline_build(c, st, x->kver, buf, sizeof(buf)) == 0) {
		fprintf(x->out, "%s\n", buf);
		rc = HV_EXIT_OK;
	}
	free(c);
	free(st);
	return rc;
}

/* ---------- verify ---------- */

/* verify --pools: every managed pool (each node of a per-node one) holds
 * at least its configured pages.  Prints each shortfall; returns their
 * number (a plan that cannot be built counts as one). */
static unsigned verify_pools(struct ctx *x, const struct hv_config *c, struct hv_state *st)
{
	struct hv_plan *plan = malloc(sizeof(*plan));
	unsigned short_pools = 0;
	char w[64];

	if (!plan || hv_plan_build(c, st, false, plan) < 0) {
		hv_err("verify: the pools of %s cannot be planned on this host", c->path);
		free(plan);
		return 1;
	}
	for (size_t k = 0; k < HV_NPOOLS; k++) {
		const struct hv_target *t = &plan->t[k];
		const struct hv_pool *p;

		if (!t->managed || !(p = hv_state_pool(st, t->size_kb)))
			continue;
		for (size_t i = 0; i < (t->per_node ? st->n_nodes : 1); i++) {
			int node = t->per_node ? st->nodes[i].id : -1;
			uint64_t have = t->per_node ? p->nodes[i].total : p->total;
			uint64_t want = t->per_node ? t->node[i] : t->global;

			where(w, sizeof(w), t->size_kb, node);
			if (have < want) {
				short_pools++;
				hv_err("verify: %s: %" PRIu64 " of %" PRIu64 " pages (POOL_%s in %s); "
				       "run hvoctl apply, or reserve them at boot (hvoctl cmdline)",
				       w, have, want, t->name, c->path);
			} else {
				fprintf(x->out, "ok: %s: %" PRIu64 " pages, %" PRIu64 " configured\n",
					w, have, want);
			}
		}
	}
	free(plan);
	return short_pools;
}

static int cmd_verify(struct ctx *x, int argc, char **argv)
{
	struct hv_config *c;
	struct hv_state *st;
	unsigned problems = 0, checked = 0;
	bool any_managed = false;
	int rc = HV_EXIT_ERROR;

#define PROBLEM(...) do { problems++; hv_err("verify: " __VA_ARGS__); } while (0)
	if (load_inputs(x, argc, argv, &c, &st) < 0)
		goto out;
	if (!c->hvo) {
		if (st->hvo_sysctl == 1)
			PROBLEM("HVO=off in %s but vm.hugetlb_optimize_vmemmap = 1; run hvoctl apply",
				c->path);
		else
			fprintf(x->out, "ok: HVO is off, as configured\n");
		if (x->pools)
			problems += verify_pools(x, c, st);
		rc = problems ? HV_EXIT_VERIFY : HV_EXIT_OK;
		goto out;
	}
	if (!st->hvo_supported)
		PROBLEM("this kernel does not support HVO (%s missing); it needs "
			"CONFIG_HUGETLB_PAGE_OPTIMIZE_VMEMMAP", HV_SYSCTL_HVO);
	else if (st->hvo_sysctl != 1)
		PROBLEM("vm.hugetlb_optimize_vmemmap = 0; run hvoctl apply (and boot with "
			"hugetlb_free_vmemmap=on, see hvoctl cmdline)");
	for (size_t k = 0; k < HV_NPOOLS; k++)
		any_managed = any_managed || c->pool[k].kind != HV_POOL_UNSET;
	for (size_t i = 0; i < st->n_pools; i++) {
		const struct hv_pool *p = &st->pools[i];
		uint64_t exp = hv_expected_freed(p->size_kb), want;
		bool managed = false;
		char w[64];

		for (size_t k = 0; k < HV_NPOOLS; k++)
			if (hv_pool_keys[k].size_kb == p->size_kb &&
			    c->pool[k].kind != HV_POOL_UNSET)
				managed = true;
		if (any_managed ? !managed : p->total == 0)
			continue;
		if (exp == 0)
			continue; /* HVO cannot optimize this size */
		where(w, sizeof(w), p->size_kb, -1);
		checked++;
		if (!p->has_counters) {
			PROBLEM("%s: the kernel has no HVO counters (%s/hugepages-%" PRIu64
				"kB/vmemmap_optimized_pages); cannot prove HVO is in effect; "
				"boot the hvokit kernel", w, HV_HP_DIR, p->size_kb);
			continue;
		}
		if (p->optimized != p->total)
			PROBLEM("%s: %" PRIu64 " of %" PRIu64 " pages have an optimized vmemmap; "
				"pages allocated while HVO was off stay unoptimized: shrink the "
				"pool to 0 and apply again", w, p->optimized, p->total);
		want = hv_mul_sat(p->optimized, exp);
		if (p->freed != want)
			PROBLEM("%s: vmemmap_freed_pages = %" PRIu64 ", expected %" PRIu64
				" (%" PRIu64 " optimized pages x %" PRIu64 ")", w, p->freed,
				want, p->optimized, exp);
		for (size_t n = 0; n < p->n_nodes; n++) {
			const struct hv_node_pool *np = &p->nodes[n];

			if (!np->has_counters)
				continue;
			where(w, sizeof(w), p->size_kb, np->node);
			if (np->optimized != np->total)
				PROBLEM("%s: %" PRIu64 " of %" PRIu64 " pages have an optimized vmemmap",
					w, np->optimized, np->total);
			want = hv_mul_sat(np->optimized, exp);
			if (np->freed != want)
				PROBLEM("%s: vmemmap_freed_pages = %" PRIu64 ", expected %" PRIu64,
					w, np->freed, want);
		}
		if (!problems)
			fprintf(x->out, "ok: %s: %" PRIu64 " pages optimized, %" PRIu64
				" vmemmap pages freed (%" PRIu64 " per page)\n",
				where(w, sizeof(w), p->size_kb, -1),
				p->optimized, p->freed, exp);
	}
	if (!problems)
		fprintf(x->out, "ok: HVO is in effect%s\n",
			checked ? "" : " (no huge pages to check)");
	if (x->pools)
		problems += verify_pools(x, c, st);
	rc = problems ? HV_EXIT_VERIFY : HV_EXIT_OK;
#undef PROBLEM
out:
	free(c);
	free(st);
	return rc;
}

/* ---------- dispatch ---------- */

static const struct sub subs[] = {
	{ "status", "j",
	  "Usage: hvoctl status [--json]\n\n"
	  "Huge page pools for each size and NUMA node (total, free, reserved,\n"
	  "surplus), hugetlbfs mounts, HVO state and the memory HVO saves.\n"
	  "Savings come from the kernel's HVO counters where it has them,\n"
	  "otherwise they are estimated from the pools and marked so.\n\n"
	  "  --json   machine-readable output\n", cmd_status },
	{ "reserve", "nrCd",
	  "Usage: hvoctl reserve SIZE COUNT [--node N]\n"
	  "       hvoctl reserve SIZE NODE:COUNT[,NODE:COUNT...]\n\n"
	  "Grow or shrink the SIZE (1G, 2M, ...) pool to COUNT pages, globally or\n"
	  "on one node.  Growing retries with memory compaction; what was obtained\n"
	  "is reported, never more than asked is kept.  Shrinking never frees\n"
	  "pages that are in use or reserved.\n\n"
	  "  --node N          act on NUMA node N only\n"
	  "  --retries N       extra attempts when short of pages (default 3)\n"
	  "  --no-compact      do not compact memory between attempts\n"
	  "  --retry-delay MS  pause before each retry (default 200)\n\n"
	  "Exit status 2 if a pool could not be brought to COUNT.\n", cmd_reserve },
	{ "apply", "NrCd",
	  "Usage: hvoctl apply [--config FILE] [--dry-run]\n\n"
	  "Bring the host to the state the config describes: HVO on or off, then\n"
	  "each configured pool (shrinks first, then grows, 1G before 2M).\n"
	  "Idempotent; prints each change, or \"nothing to change\".\n\n"
	  "  --dry-run         print what would change, change nothing\n"
	  "  --retries N, --no-compact, --retry-delay MS   as for reserve\n\n"
	  "Exit status 2 if a pool could not be brought to its target.\n", cmd_apply },
	{ "cmdline", "k",
	  "Usage: hvoctl cmdline [--config FILE] [--kernel RELEASE]\n\n"
	  "Print the kernel parameters that realise the config at boot:\n"
	  "hugetlb_free_vmemmap=, default_hugepagesz=, hugepagesz=/hugepages=\n"
	  "(per node on 5.19+), hugetlb_cma= for CMA_1G.  P% pools are computed\n"
	  "from this host's node memory.\n\n"
	  "  --kernel RELEASE  syntax for this kernel release (default: running)\n", cmd_cmdline },
	{ "metrics", "o",
	  "Usage: hvoctl metrics [--output FILE]\n\n"
	  "The status figures in Prometheus text format.\n\n"
	  "  --output FILE  write FILE atomically (for node_exporter's textfile\n"
	  "                 collector), instead of standard output\n", cmd_metrics },
	{ "verify", "P",
	  "Usage: hvoctl verify [--config FILE] [--pools]\n\n"
	  "Exit 0 only if HVO is in effect for the configured pools (or, without\n"
	  "POOL_ keys, for every non-empty pool): vm.hugetlb_optimize_vmemmap is 1\n"
	  "and the kernel counters show every page optimized with the expected\n"
	  "number of vmemmap pages freed.  Otherwise print each problem, exit 3.\n\n"
	  "  --pools  also require every configured pool (and node) to hold at\n"
	  "           least the pages the config asks for\n", cmd_verify },
	{ "libvirt-hook", "DXTLrCd",
	  "Usage: hvoctl libvirt-hook [OPTIONS] -- DOMAIN OPERATION SUB-OP EXTRA\n\n"
	  "libvirt qemu hook (hooks/qemu.d/), domain XML on standard input.\n"
	  "prepare grows the huge page pools a guest needs (exit non-zero and\n"
	  "restore the pools if they cannot grow enough), started and reconnect\n"
	  "update the ledger, release gives back what the start added.  Other\n"
	  "operations do nothing.  Never writes to standard output.\n\n"
	  "  --rundir DIR          ledger and lock (default " HV_HOOK_RUNDIR ",\n"
	  "                        also HVOCTL_RUNDIR)\n"
	  "  --libvirt-rundir DIR  libvirt's status files (default " HV_HOOK_LIBVIRT_RUNDIR ",\n"
	  "                        also HVOCTL_LIBVIRT_RUNDIR)\n"
	  "  --xml FILE            read the domain XML from FILE, not standard input\n"
	  "  --lock-timeout SEC    wait at most SEC for the lock (default 30,\n"
	  "                        also HVOCTL_LOCK_TIMEOUT)\n"
	  "  --retries N, --no-compact, --retry-delay MS   as for reserve\n\n"
	  "Decisions are logged to syslog (or appended to $HVOCTL_HOOK_LOG).\n"
	  "Run under the name hvokit (the package's link hooks/qemu.d/hvokit ->\n"
	  "hvoctl, or a copy), hvoctl is this hook: libvirt execs it with DOMAIN\n"
	  "OPERATION SUB-OP EXTRA directly.  hvoctl(8), LIBVIRT HOOK, Accounts:\n"
	  "a give-back never takes the host's pages or other guests'.\n", cmd_libvirt_hook },
};

static int cmd_libvirt_hook(struct ctx *x, int argc, char **argv)
{
	struct hv_hook_opts o = {
		.rundir = x->rundir, .libvirt_rundir = x->libvirt_rundir,
		.xml_file = x->xml_file, .config = x->config,
		.lock_timeout_ms = x->lock_timeout_ms, .ropts = x->ropts,
	};

	if (x->out == stdout) {
		/* Whatever reaches stdout would replace the domain XML at
		 * migrate/restore: make that impossible. */
		int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

		fflush(stdout);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			close(fd);
		}
	}
	return hv_libvirt_hook(&x->sys, &o, argc, argv);
}

static const struct sub *find_sub(const char *name)
{
	for (size_t i = 0; i < HV_ARRAY_SIZE(subs); i++)
		if (!strcmp(subs[i].name, name))
			return &subs[i];
	return NULL;
}

static const struct option long_opts[] = {
	{ "sysroot", required_argument, NULL, 'R' },
	{ "config", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ "json", no_argument, NULL, 'j' },
	{ "node", required_argument, NULL, 'n' },
	{ "retries", required_argument, NULL, 'r' },
	{ "no-compact", no_argument, NULL, 'C' },
	{ "retry-delay", required_argument, NULL, 'd' },
	{ "dry-run", no_argument, NULL, 'N' },
	{ "kernel", required_argument, NULL, 'k' },
	{ "output", required_argument, NULL, 'o' },
	{ "rundir", required_argument, NULL, 'D' },
	{ "xml", required_argument, NULL, 'X' },
	{ "lock-timeout", required_argument, NULL, 'T' },
	{ "libvirt-rundir", required_argument, NULL, 'L' },
	{ "pools", no_argument, NULL, 'P' },
	{ NULL, 0, NULL, 0 },
};

static const char *opt_name(int ch)
{
	static char buf[32];

	for (const struct option *o = long_opts; o->name; o++)
		if (o->val == ch) {
			snprintf(buf, sizeof(buf), "--%s", o->name);
			return buf;
		}
	snprintf(buf, sizeof(buf), "-%c", ch);
	return buf;
}

static int u_opt(const char *sub, const char *opt, const char *val, uint64_t max,
		 uint64_t *v)
{
	int e = hv_parse_u64(val, v);

	if (e < 0 || *v > max) {
		hv_err("%s: --%s: '%s' is not a number from 0 to %" PRIu64, sub, opt, val, max);
		return -1;
	}
	return 0;
}

/* Parse options for sub (NULL: global options before the command).
 * Returns -1 on error, 1 if help/version was printed, else 0. */
static int parse_opts(struct ctx *x, const struct sub *sub, int argc, char **argv)
{
	const char *name = sub ? sub->name : "hvoctl";
	int ch;

	optind = 0; /* full re-initialisation (glibc); tests call us repeatedly */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, sub ? "hj" : "+hV", long_opts, NULL)) != -1) {
		uint64_t v;

		if (ch != '?' && ch != ':' && ch != 'R' && ch != 'c' && ch != 'h' &&
		    (sub ? !strchr(sub->opts, ch) : ch != 'V')) {
			hv_err("%s: %s is not an option of this command; see hvoctl %s%s--help",
			       name, opt_name(ch), sub ? name : "", sub ? " " : "");
			return -1;
		}
		switch (ch) {
		case 'R': x->sysroot = optarg; break;
		case 'c': x->config = optarg; break;
		case 'h':
			fputs(sub ? sub->usage : usage_main, x->out);
			return 1;
		case 'V':
			fprintf(x->out, "hvoctl %s\n", HVOCTL_VERSION);
			return 1;
		case 'j': x->json = true; break;
		case 'n':
			if (u_opt(name, "node", optarg, HV_MAX_NODE_ID, &v) < 0)
				return -1;
			x->node = (int)v;
			break;
		case 'r':
			if (u_opt(name, "retries", optarg, 100, &v) < 0)
				return -1;
			x->ropts.retries = (unsigned)v;
			break;
		case 'C': x->ropts.compact = false; break;
		case 'd':
			if (u_opt(name, "retry-delay", optarg, 60000, &v) < 0)
				return -1;
			x->ropts.delay_ms = (unsigned)v;
			break;
		case 'N': x->dry_run = true; break;
		case 'P': x->pools = true; break;
		case 'k': x->kver = optarg; break;
		case 'o': x->output = optarg; break;
		case 'D': x->rundir = optarg; break;
		case 'X': x->xml_file = optarg; break;
		case 'L': x->libvirt_rundir = optarg; break;
		case 'T':
			if (u_opt(name, "lock-timeout", optarg, 3600, &v) < 0)
				return -1;
			x->lock_timeout_ms = (long)v * 1000;
			break;
		default:
			if (optind > 0 && optind <= argc && argv[optind - 1][0] == '-' &&
			    argv[optind - 1][1] >= '0' && argv[optind - 1][1] <= '9') {
				hv_err("%s: '%s': negative numbers are not accepted; "
				       "expected a number >= 0", name, argv[optind - 1]);
				return -1;
			}
			hv_err("%s: %s: unknown option or missing value; see hvoctl %s%s--help",
			       name, argv[optind - 1], sub ? name : "", sub ? " " : "");
			return -1;
		}
	}
	return 0;
}

int hv_main(int argc, char **argv, FILE *out)
{
	struct ctx x = { .out = out, .node = -1, .lock_timeout_ms = -1,
			 .ropts = HV_RESERVE_OPTS_DEFAULT };
	const struct sub *sub;
	int r, e;

	r = parse_opts(&x, NULL, argc, argv);
	if (r != 0)
		return r < 0 ? HV_EXIT_ERROR : HV_EXIT_OK;
	if (optind >= argc) {
		fputs(usage_main, hv_log());
		return HV_EXIT_ERROR;
	}
	sub = find_sub(argv[optind]);
	if (!sub) {
		hv_err("'%s' is not a command; expected status, reserve, apply, cmdline, "
		       "metrics, verify or libvirt-hook (see hvoctl --help)", argv[optind]);
		return HV_EXIT_ERROR;
	}
	x.sub = sub->name;
	argc -= optind;
	argv += optind;
	/* Options may follow the command and its arguments (permuting). */
	r = parse_opts(&x, sub, argc, argv);
	if (r != 0)
		return r < 0 ? HV_EXIT_ERROR : HV_EXIT_OK;
	e = hv_sys_init(&x.sys, x.sysroot);
	if (e < 0) {
		hv_err("%s: --sysroot: %s: %s", sub->name,
		       x.sysroot ? x.sysroot : getenv("HVOCTL_SYSROOT"),
		       e == -ENOENT ? "not a directory" : strerror(-e));
		return HV_EXIT_ERROR;
	}
	return sub->run(&x, argc - optind, argv + optind);
}
