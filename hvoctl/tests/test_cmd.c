/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The subcommands end to end on fake trees: exit codes, apply
 * idempotence, partial reservation, verify, cmdline, --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake.h"
#include "util.h"

#define GIB_KB (1024ULL * 1024)

static int setup(void **state)
{
	static const uint64_t mem[] = { 64 * GIB_KB, 64 * GIB_KB };
	struct fake *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	fake_init(f, 2, NULL, mem, true);
	fake_kernel_on(f);
	for (int n = 0; n < 2; n++) {
		f->avail[0][n] = 16;
		f->avail[1][n] = 100000;
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fake_free(*state);
	free(*state);
	return 0;
}

static void expect_in(const char *what, const char *text, const char *needle)
{
	if (!strstr(text, needle))
		fail_msg("%s:\n%s\ndoes not contain:\n%s", what, text, needle);
}

/* Run and check exit code and (optional) substrings of stdout/stderr. */
static void run(int rc, const char *in_out, const char *in_err, ...)
{
	char *argv[16], *out = NULL, *err = NULL;
	int n = 0, r;
	va_list ap;

	va_start(ap, in_err);
	while (n < 15 && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	r = fake_run(&out, &err, argv[0], argv[1], argv[2], argv[3], argv[4], argv[5],
		     argv[6], argv[7], argv[8], argv[9], argv[10], NULL);
	if (r != rc)
		fail_msg("exit %d, expected %d; stdout:\n%s\nstderr:\n%s", r, rc, out, err);
	if (in_out)
		expect_in("stdout", out, in_out);
	if (in_err)
		expect_in("stderr", err, in_err);
	free(out);
	free(err);
}

static void t_usage(void **state)
{
	struct fake *f = *state;
	static const char *const subs[] = { "status", "reserve", "apply", "cmdline",
					    "metrics", "verify" };

	(void)f;
	run(0, "Usage: hvoctl [--sysroot DIR]", NULL, "--help", NULL);
	run(0, "hvoctl 0.2.0", NULL, "--version", NULL);
	for (size_t i = 0; i < 6; i++) {
		char want[64];

		snprintf(want, sizeof(want), "Usage: hvoctl %s", subs[i]);
		run(0, want, NULL, subs[i], "--help", NULL);
		run(0, want, NULL, subs[i], "-h", NULL);
	}
	run(1, NULL, "Usage: hvoctl", NULL);
	run(1, NULL, "hvoctl: 'frob' is not a command; expected status, reserve", "frob", NULL);
	run(1, NULL, "hvoctl: status: --bogus: unknown option", "status", "--bogus", NULL);
	run(1, NULL, "status: --node is not an option of this command", "status", "--node", "1", NULL);
	run(1, NULL, "status: --sysroot: /nonexistent: not a directory",
	    "--sysroot", "/nonexistent", "status", NULL);
	run(1, NULL, "status: unexpected argument 'x'", "--sysroot", f->root, "status", "x", NULL);
}

static void t_sysroot_env(void **state)
{
	struct fake *f = *state;

	setenv("HVOCTL_SYSROOT", f->root, 1);
	run(0, "\"kernel\": \"6.1.0-hvokit\"", NULL, "status", "--json", NULL);
	unsetenv("HVOCTL_SYSROOT");
}

static void t_reserve(void **state)
{
	struct fake *f = *state;

	run(0, "1G pool: 0 -> 4 pages (asked 4)", NULL,
	    "--sysroot", f->root, "reserve", "1G", "4", "--retry-delay", "0", NULL);
	assert_true(fake_total(f, 0) == 4);
	run(0, "1G pool node 1: 2 -> 5 pages (asked 5)", NULL,
	    "--sysroot", f->root, "reserve", "1G", "5", "--node", "1", NULL);
	/* Per-node form: shrink node 1 first, then grow node 0. */
	run(0, "1G pool node 0: 2 -> 3 pages", "",
	    "--sysroot", f->root, "reserve", "1048576kB", "0:3,1:1", NULL);
	assert_true(fake_node_total(f, 0, 0) == 3);
	assert_true(fake_node_total(f, 0, 1) == 1);
	/* Partial: exit 2, exactly what was obtained. */
	f->avail[0][0] = 2;
	run(2, "1G pool node 0: 3 -> 5 pages (asked 8)",
	    "reserve: 1G pool node 0: obtained 5 of 8 pages after 4 attempt(s) with compaction",
	    "--sysroot", f->root, "reserve", "1G", "8", "--node", "0", "--retry-delay", "0", NULL);
	assert_int_equal(f->compactions, 3);
	/* Shrink with pages in use: exit 2, in-use pages stay. */
	fake_set_node(f, 1, 0, 10, 4);
	run(2, "2M pool node 0: 10 -> 6 pages (asked 0)",
	    "reserve: 2M pool node 0: 6 pages are in use or reserved; left 6 instead of 0",
	    "--sysroot", f->root, "reserve", "2M", "0", "--node", "0", NULL);
	/* Bad input. */
	run(1, NULL, "reserve: SIZE: '3M' is not a huge page size; expected e.g. 1G or 2M",
	    "--sysroot", f->root, "reserve", "3M", "1", NULL);
	run(1, NULL, "reserve: '-1': negative numbers are not accepted",
	    "--sysroot", f->root, "reserve", "2M", "-1", NULL);
	run(1, NULL, "reserve: COUNT: '99999999999999999999' is too large",
	    "--sysroot", f->root, "reserve", "2M", "99999999999999999999", NULL);
	run(1, NULL, "reserve: COUNT: '0:1,x' is not a per-node count list",
	    "--sysroot", f->root, "reserve", "2M", "0:1,x", NULL);
	run(1, NULL, "reserve: node 5: not an online NUMA node",
	    "--sysroot", f->root, "reserve", "2M", "1", "--node", "5", NULL);
	run(1, NULL, "reserve: 64K: this kernel has no such huge page size",
	    "--sysroot", f->root, "reserve", "64K", "1", NULL);
	run(1, NULL, "reserve: --retries: 'many' is not a number from 0 to 100",
	    "--sysroot", f->root, "reserve", "2M", "1", "--retries", "many", NULL);
	run(1, NULL, "reserve: expected SIZE and COUNT",
	    "--sysroot", f->root, "reserve", "2M", NULL);
}

static void t_apply_idempotent(void **state)
{
	struct fake *f = *state;
	const char *conf = fake_config(f, "HVO=on\nPOOL_1G=0:2,1:2\nPOOL_2M=0:64,1:0\n");

	fake_write(f, "/proc/sys/vm/hugetlb_optimize_vmemmap", "0\n");
	run(0, "would change 1G pool node 0: 0 -> 2 pages", NULL,
	    "--sysroot", f->root, "--config", conf, "apply", "--dry-run", NULL);
	assert_true(fake_total(f, 0) == 0);
	assert_true(fake_u64(f, "/proc/sys/vm/hugetlb_optimize_vmemmap") == 0);
	run(0, "vm.hugetlb_optimize_vmemmap: 0 -> 1\n", NULL,
	    "--sysroot", f->root, "--config", conf, "apply", NULL);
	assert_true(fake_u64(f, "/proc/sys/vm/hugetlb_optimize_vmemmap") == 1);
	assert_true(fake_node_total(f, 0, 0) == 2 && fake_node_total(f, 0, 1) == 2);
	assert_true(fake_node_total(f, 1, 0) == 64 && fake_node_total(f, 1, 1) == 0);
	/* Second run: no change, no write. */
	f->writes = 0;
	run(0, "nothing to change\n", "", "--sysroot", f->root, "--config", conf, "apply", NULL);
	assert_int_equal(f->writes, 0);
	/* verify passes now */
	run(0, "ok: HVO is in effect", "", "--sysroot", f->root, "--config", conf, "verify", NULL);
}

static void t_apply_partial_and_errors(void **state)
{
	struct fake *f = *state;
	const char *conf;

	f->avail[0][0] = f->avail[0][1] = 1;
	conf = fake_config(f, "POOL_1G=6\n");
	run(2, "1G pool: 0 -> 2 pages (asked 6)", "obtained 2 of 6 pages",
	    "--sysroot", f->root, "--config", conf, "apply", "--retries", "1",
	    "--retry-delay", "0", NULL);
	assert_true(fake_total(f, 0) == 2);
	conf = fake_config(f, "POOL_1G=3x\n");
	run(1, NULL, "hvokit.conf:1: POOL_1G: '3x' is not a page count",
	    "--sysroot", f->root, "--config", conf, "apply", NULL);
	run(1, NULL, "config: /nonexistent.conf: No such file or directory",
	    "--sysroot", f->root, "--config", "/nonexistent.conf", "apply", NULL);
	/* HVO=on on a kernel without HVO: error, pools still applied. */
	fake_unlink(f, "/proc/sys/vm/hugetlb_optimize_vmemmap");
	conf = fake_config(f, "HVO=on\nPOOL_2M=8\n");
	run(1, "2M pool: 0 -> 8 pages", "apply: HVO=on: this kernel does not support HVO",
	    "--sysroot", f->root, "--config", conf, "apply", NULL);
}

static void t_verify(void **state)
{
	struct fake *f = *state;
	const char *conf = fake_config(f, "HVO=on\nPOOL_1G=4\n");
	const char *opt = "/sys/kernel/mm/hugepages/hugepages-1048576kB/vmemmap_optimized_pages";

	run(0, NULL, NULL, "--sysroot", f->root, "reserve", "1G", "4", NULL);
	run(0, "ok: 1G pool: 4 pages optimized, 16380 vmemmap pages freed (4095 per page)", "",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	/* Pages allocated while HVO was off. */
	fake_write(f, opt, "3\n");
	run(3, NULL, "verify: 1G pool: 3 of 4 pages have an optimized vmemmap",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	fake_write(f, opt, "4\n");
	fake_write(f, "/sys/kernel/mm/hugepages/hugepages-1048576kB/vmemmap_freed_pages", "100\n");
	run(3, NULL, "verify: 1G pool: vmemmap_freed_pages = 100, expected 16380",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	fake_write(f, "/sys/kernel/mm/hugepages/hugepages-1048576kB/vmemmap_freed_pages", "16380\n");
	fake_write(f, "/sys/devices/system/node/node1/hugepages/hugepages-1048576kB/"
		   "vmemmap_optimized_pages", "0\n");
	run(3, NULL, "verify: 1G pool node 1: 0 of 2 pages have an optimized vmemmap",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	/* Stock kernel: no counters, cannot prove it. */
	fake_unlink(f, opt);
	run(3, NULL, "the kernel has no HVO counters",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	/* sysctl off */
	fake_write(f, "/proc/sys/vm/hugetlb_optimize_vmemmap", "0\n");
	run(3, NULL, "verify: vm.hugetlb_optimize_vmemmap = 0; run hvoctl apply",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
	/* HVO=off configured and off: fine. */
	conf = fake_config(f, "HVO=off\n");
	run(0, "ok: HVO is off, as configured", "",
	    "--sysroot", f->root, "--config", conf, "verify", NULL);
}

/* verify --pools: short pools (global and per node) fail it, with the
 * count and the key; without --pools they do not. */
static void t_verify_pools(void **state)
{
	struct fake *f = *state;
	const char *conf = fake_config(f, "HVO=on\nPOOL_1G=6\n");

	run(0, NULL, NULL, "--sysroot", f->root, "reserve", "1G", "4", NULL);
	run(0, "ok: HVO is in effect", "", "--sysroot", f->root, "--config", conf, "verify",
	    NULL);
	run(3, "ok: HVO is in effect", "verify: 1G pool: 4 of 6 pages (POOL_1G in ",
	    "--sysroot", f->root, "--config", conf, "verify", "--pools", NULL);
	conf = fake_config(f, "HVO=on\nPOOL_1G=4\n");
	run(0, "ok: 1G pool: 4 pages, 4 configured", "",
	    "--sysroot", f->root, "--config", conf, "verify", "--pools", NULL);
	conf = fake_config(f, "HVO=on\nPOOL_1G=0:1,1:3\n");
	run(3, "ok: 1G pool node 0: 2 pages, 1 configured",
	    "verify: 1G pool node 1: 2 of 3 pages",
	    "--sysroot", f->root, "--config", conf, "verify", "--pools", NULL);
	/* HVO=off: the pools are still checked. */
	fake_write(f, "/proc/sys/vm/hugetlb_optimize_vmemmap", "0\n");
	conf = fake_config(f, "HVO=off\nPOOL_1G=5\n");
	run(3, "ok: HVO is off, as configured", "verify: 1G pool: 4 of 5 pages",
	    "--sysroot", f->root, "--config", conf, "verify", "--pools", NULL);
	/* --pools belongs to verify only. */
	run(1, NULL, "--pools", "--sysroot", f->root, "--config", conf, "status", "--pools",
	    NULL);
}

static void t_cmdline_and_metrics_file(void **state)
{
	struct fake *f = *state;
	const char *conf = fake_config(f, "POOL_1G=25%\nHOST_RESERVE=8G\n"
				       "DEFAULT_HUGEPAGESZ=2M\n");
	char path[PATH_MAX + 16];

	run(0, "hugetlb_free_vmemmap=on default_hugepagesz=2M hugepagesz=1G "
	       "hugepages=0:14,1:14\n", "",
	    "--sysroot", f->root, "--config", conf, "cmdline", NULL);
	run(0, "hugepagesz=1G hugepages=28\n", "per-node hugepages= needs 5.19",
	    "--sysroot", f->root, "--config", conf, "cmdline", "--kernel", "5.10.0-28-amd64", NULL);
	snprintf(path, sizeof(path), "%s/hvokit.prom", f->root);
	run(0, NULL, "", "--sysroot", f->root, "metrics", "--output", path, NULL);
	expect_in("metrics file", fake_read(f, "/hvokit.prom"), "hvokit_hvo_enabled 1\n");
	snprintf(path, sizeof(path), "%s/nodir/x.prom", f->root);
	run(1, NULL, "metrics: ", "--sysroot", f->root, "metrics", "--output", path, NULL);
}

int main(void)
{
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(t_usage),
		T(t_sysroot_env),
		T(t_reserve),
		T(t_apply_idempotent),
		T(t_apply_partial_and_errors),
		T(t_verify),
		T(t_verify_pools),
		T(t_cmdline_and_metrics_file),
	};

	return cmocka_run_group_tests_name("cmd", tests, NULL, NULL);
}
