/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Planning pool targets and kernel parameters on fake NUMA topologies. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "config.h"
#include "fake.h"
#include "plan.h"
#include "pools.h"
#include "util.h"

#define GIB_KB (1024ULL * 1024)

struct env {
	struct fake f;
	struct hv_sys sys;
	struct hv_state st;
	struct hv_config cfg;
	struct hv_plan plan;
	char *msg;
	FILE *log;
	size_t len;
};

static struct env *setup_env(int n, const int *ids, const uint64_t *mem)
{
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(e);
	fake_init(&e->f, n, ids, mem, true);
	assert_int_equal(hv_sys_init(&e->sys, e->f.root), 0);
	e->log = open_memstream(&e->msg, &e->len);
	hv_log_set(e->log);
	return e;
}

static int teardown(void **state)
{
	struct env *e = *state;

	hv_log_set(NULL);
	fclose(e->log);
	free(e->msg);
	fake_free(&e->f);
	free(e);
	return 0;
}

static void load(struct env *e, const char *conf)
{
	assert_int_equal(hv_config_parse(&e->cfg, "test.conf", conf), 0);
	assert_int_equal(hv_state_read(&e->sys, &e->st), 0);
}

static const char *log_text(struct env *e)
{
	fflush(e->log);
	return e->msg;
}

static void t_share_pages(void **state)
{
	uint64_t p;

	(void)state;
	/* 64 GiB node, 4 GiB reserve, 50% of 1G pages = 30 */
	assert_int_equal(hv_share_pages(64 * GIB_KB, 4ULL << 30, 50, GIB_KB, &p), 0);
	assert_true(p == 30);
	/* rounding down: 10.5 GiB usable * 100% = 10 pages */
	assert_int_equal(hv_share_pages(10 * GIB_KB + GIB_KB / 2, 0, 100, GIB_KB, &p), 0);
	assert_true(p == 10);
	/* remainders add up: 3 x 1/3 GiB... 1.5 GiB at 100% of 2M pages */
	assert_int_equal(hv_share_pages(GIB_KB + GIB_KB / 2, 0, 100, 2048, &p), 0);
	assert_true(p == 768);
	/* reserve bigger than the node: 0, no underflow */
	assert_int_equal(hv_share_pages(GIB_KB, 8ULL << 30, 50, GIB_KB, &p), 0);
	assert_true(p == 0);
	/* huge figures: no overflow */
	assert_int_equal(hv_share_pages(UINT64_MAX, 0, 100, 2048, &p), 0);
	assert_true(p == UINT64_MAX / 2048);
	assert_int_equal(hv_share_pages(UINT64_MAX, 0, 99, 4, &p), 0);
	assert_int_equal(hv_share_pages(GIB_KB, 0, 101, GIB_KB, &p), -ERANGE);
}

static void t_expected(void **state)
{
	(void)state;
	assert_true(hv_expected_freed(GIB_KB) == 4095);
	assert_true(hv_expected_freed(2048) == 7);
	assert_true(hv_expected_freed(64) == 0);
	assert_true(hv_estimated_pgtable(GIB_KB, 4) == 32);
	assert_true(hv_estimated_pgtable(2048, 1) == 1);
	assert_true(hv_estimated_pgtable(2048, 64) == 1);
	assert_true(hv_estimated_pgtable(2048, 65) == 2);
	assert_true(hv_estimated_pgtable(2048, 0) == 0);
	assert_true(hv_estimated_pgtable(GIB_KB, UINT64_MAX) == UINT64_MAX);
}

static void t_one_node_count(void **state)
{
	uint64_t mem[] = { 32 * GIB_KB };
	struct env *e = *state = setup_env(1, NULL, mem);
	char buf[512];

	load(e, "POOL_1G=4\nPOOL_2M=0\nDEFAULT_HUGEPAGESZ=1G\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), 0);
	assert_true(e->plan.t[0].managed);
	assert_false(e->plan.t[0].per_node);
	assert_true(e->plan.t[0].global == 4);
	assert_true(e->plan.t[1].managed);
	assert_true(e->plan.t[1].global == 0);
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=on default_hugepagesz=1G "
				 "hugepagesz=1G hugepages=4");
}

static void t_two_nodes_percent(void **state)
{
	uint64_t mem[] = { 64 * GIB_KB, 32 * GIB_KB };
	struct env *e = *state = setup_env(2, NULL, mem);
	char buf[512];

	load(e, "HOST_RESERVE=4G\nPOOL_1G=50%\nPOOL_2M=10%\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), 0);
	assert_true(e->plan.t[0].per_node);
	assert_true(e->plan.t[0].node[0] == 30); /* (64-4)/2 */
	assert_true(e->plan.t[0].node[1] == 14); /* (32-4)/2 */
	assert_true(e->plan.t[0].global == 44);
	assert_true(e->plan.t[1].node[0] == 3072); /* 60 GiB * 10% / 2M */
	assert_true(e->plan.t[1].node[1] == 1433); /* 28 GiB * 10% / 2M = 1433.6 */
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=on hugepagesz=1G hugepages=0:30,1:14 "
				 "hugepagesz=2M hugepages=0:3072,1:1433");
}

static void t_sparse_nodes_per_node(void **state)
{
	int ids[] = { 0, 2, 3, 7 };
	uint64_t mem[] = { 16 * GIB_KB, 16 * GIB_KB, 16 * GIB_KB, 16 * GIB_KB };
	struct env *e = *state = setup_env(4, ids, mem);
	char buf[512];

	load(e, "POOL_1G=2:3,7:1\nCMA_1G=4G\nHVO=off\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), 0);
	assert_true(e->plan.t[0].node[0] == 0);
	assert_true(e->plan.t[0].node[1] == 3);
	assert_true(e->plan.t[0].node[2] == 0);
	assert_true(e->plan.t[0].node[3] == 1);
	assert_true(e->plan.t[0].global == 4);
	assert_false(e->plan.t[1].managed);
	/* with a CMA area the kernel takes no 1G pages at boot: hvoctl apply does */
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=off hugetlb_cma=0:4G,2:4G,3:4G,7:4G");
	load(e, "POOL_1G=2:3,7:1\nHVO=off\n");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=off hugepagesz=1G hugepages=0:0,2:3,3:0,7:1");
	/* Before 5.19 there is no per-node syntax: totals, with a warning. */
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, "5.15.0-91-generic", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=off hugepagesz=1G hugepages=4");
	assert_non_null(strstr(log_text(e), "per-node hugepages= needs 5.19"));
}

static void t_cma_per_node(void **state)
{
	uint64_t mem[] = { 16 * GIB_KB, 16 * GIB_KB };
	struct env *e = *state = setup_env(2, NULL, mem);
	char buf[512];

	load(e, "CMA_1G=0:2G,1:6G\n");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=on hugetlb_cma=0:2G,1:6G");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, "5.10.0", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=on hugetlb_cma=8G");
	/* the kernel ignores hugepages= for 1G pages when hugetlb_cma= is set */
	load(e, "CMA_1G=4G\nPOOL_1G=2\nPOOL_2M=8\n");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "hugetlb_free_vmemmap=on hugepagesz=2M hugepages=8 hugetlb_cma=0:4G,1:4G");
	load(e, "CMA_1G=0:2G,5:6G\n");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), -1);
	assert_non_null(strstr(log_text(e), "CMA_1G: node 5 is not online"));
}

static void t_errors(void **state)
{
	uint64_t mem[] = { 16 * GIB_KB, 16 * GIB_KB };
	struct env *e = *state = setup_env(2, NULL, mem);
	char buf[16];

	load(e, "POOL_1G=0:1,4:2\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), -1);
	assert_non_null(strstr(log_text(e), "test.conf: POOL_1G: node 4 is not online"));
	/* A kernel without 1G pages. */
	fake_unlink(&e->f, "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages");
	{
		char p[PATH_MAX + 64];

		snprintf(p, sizeof(p), "rm -rf '%s/sys/kernel/mm/hugepages/hugepages-1048576kB'",
			 e->f.root);
		assert_int_equal(system(p), 0);
	}
	load(e, "POOL_1G=2\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), -1);
	assert_non_null(strstr(log_text(e), "this kernel has no 1G huge pages"));
	/* ... but kernel parameters are for the next boot (an image built in
	 * a chroot on another machine): only a note. */
	{
		char cl[512];

		assert_int_equal(hv_plan_build(&e->cfg, &e->st, true, &e->plan), 0);
		assert_int_equal(e->plan.t[0].global + e->plan.t[1].global, 2);
		assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, cl, sizeof(cl)), 0);
		assert_non_null(strstr(cl, "hugepagesz=1G hugepages=2"));
		assert_non_null(strstr(log_text(e), "note: test.conf: POOL_1G: the running kernel has no 1G"));
	}
	/* Too small a buffer is an error, not a truncated command line. */
	load(e, "POOL_2M=0:100000,1:100000\n");
	assert_int_equal(hv_cmdline_build(&e->cfg, &e->st, NULL, buf, sizeof(buf)), -1);
	assert_non_null(strstr(log_text(e), "cmdline: result longer than"));
}

static void t_count_overflow(void **state)
{
	uint64_t mem[] = { 16 * GIB_KB, 16 * GIB_KB };
	struct env *e = *state = setup_env(2, NULL, mem);

	load(e, "POOL_2M=0:18446744073709551615,1:1\n");
	assert_int_equal(hv_plan_build(&e->cfg, &e->st, false, &e->plan), -1);
	assert_non_null(strstr(log_text(e), "POOL_2M: total page count overflows"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_share_pages),
		cmocka_unit_test(t_expected),
		cmocka_unit_test_teardown(t_one_node_count, teardown),
		cmocka_unit_test_teardown(t_two_nodes_percent, teardown),
		cmocka_unit_test_teardown(t_sparse_nodes_per_node, teardown),
		cmocka_unit_test_teardown(t_cma_per_node, teardown),
		cmocka_unit_test_teardown(t_errors, teardown),
		cmocka_unit_test_teardown(t_count_overflow, teardown),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
