/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Growing and shrinking pools against a fake kernel: partial 1G
 * allocation, compaction retries, pages in use, reserved pages, and the
 * sysfs layer's read-back. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake.h"
#include "reserve.h"
#include "sysfs.h"
#include "util.h"

#define GIB_KB (1024ULL * 1024)
#define N0_1G "/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"

struct env {
	struct fake f;
	struct hv_sys sys;
	struct hv_reserve_opts o;
	struct hv_reserve_result r;
	char *msg;
	size_t len;
	FILE *log;
};

static int setup(void **state)
{
	static const uint64_t mem[] = { 64 * GIB_KB, 64 * GIB_KB };
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	fake_init(&e->f, 2, NULL, mem, true);
	fake_kernel_on(&e->f);
	if (hv_sys_init(&e->sys, e->f.root) < 0)
		return -1;
	e->o = (struct hv_reserve_opts){ .retries = 3, .compact = true, .delay_ms = 0 };
	e->log = open_memstream(&e->msg, &e->len);
	hv_log_set(e->log);
	*state = e;
	return 0;
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

static const char *log_text(struct env *e)
{
	fflush(e->log);
	return e->msg;
}

static void t_grow_global_ok(void **state)
{
	struct env *e = *state;

	e->f.avail[0][0] = e->f.avail[0][1] = 8;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, -1, 4, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_OK);
	assert_true(e->r.before == 0 && e->r.after == 4);
	assert_true(fake_total(&e->f, 0) == 4);
	assert_true(fake_node_total(&e->f, 0, 0) == 2); /* kernel interleaves */
	assert_int_equal(e->f.compactions, 0);
	/* Same target again: nothing written. */
	e->f.writes = 0;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, -1, 4, &e->o, &e->r), 0);
	assert_int_equal(e->f.writes, 0);
}

static void t_grow_partial(void **state)
{
	struct env *e = *state;

	/* Only 3 1G pages can be found on node 0, compaction finds none. */
	e->f.avail[0][0] = 3;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, 0, 5, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_PARTIAL);
	assert_true(e->r.after == 3);
	assert_true(e->r.asked == 5);
	assert_int_equal(e->r.attempts, 4); /* 1 + 3 retries */
	assert_int_equal(e->f.compactions, 3);
	assert_true(fake_node_total(&e->f, 0, 0) == 3);
	assert_true(fake_node_total(&e->f, 0, 1) == 0); /* other node untouched */
	assert_non_null(strstr(log_text(e), "reserve: 1G pool node 0: got 3 of 5 pages; "
				"compacting memory and retrying (1/3)"));
}

static void t_grow_after_compaction(void **state)
{
	struct env *e = *state;

	/* 1 page now, each compaction of node 1 frees 1 more. */
	e->f.avail[0][1] = 1;
	e->f.compact_gain[0][1] = 1;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, 1, 3, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_OK);
	assert_true(e->r.after == 3);
	assert_int_equal(e->f.compactions, 2);
	assert_true(fake_node_total(&e->f, 0, 1) == 3);
}

static void t_no_compact(void **state)
{
	struct env *e = *state;

	e->o.compact = false;
	e->o.retries = 1;
	e->f.compact_gain[0][0] = 5;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, -1, 2, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_PARTIAL);
	assert_true(e->r.after == 0);
	assert_int_equal(e->f.compactions, 0);
	assert_int_equal(e->r.attempts, 2);
}

/* A misbehaving "kernel" that hands out one page more than asked. */
static int greedy_hook(const char *path, const char *value, void *ctx)
{
	FILE *f;

	(void)ctx;
	if (!strstr(path, "/nr_hugepages"))
		return 0;
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%llu\n", strtoull(value, NULL, 10) + (*(int *)ctx)--);
	fclose(f);
	return 0;
}

static void t_never_more_than_asked(void **state)
{
	struct env *e = *state;
	int extra = 1;

	hv_sys_set_write_hook(greedy_hook, &extra);
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, -1, 2, &e->o, &e->r), 0);
	assert_true(e->r.after == 2);
	assert_int_equal(e->r.status, HV_RES_OK);
	assert_int_equal(e->r.attempts, 2);
}

static void t_shrink_free(void **state)
{
	struct env *e = *state;

	fake_set_node(&e->f, 1, 0, 100, 100);
	e->f.used[1][0] = 0;
	assert_int_equal(hv_reserve(&e->sys, 2048, -1, 10, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_OK);
	assert_true(e->r.after == 10);
	assert_true(fake_total(&e->f, 1) == 10);
}

static void t_shrink_in_use(void **state)
{
	struct env *e = *state;

	/* Node 0: 8 pages, 5 in use (3 free).  Ask for 0 on node 0. */
	fake_set_node(&e->f, 0, 0, 8, 3);
	e->f.writes = 0;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, 0, 0, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_IN_USE);
	assert_true(e->r.floor == 5);
	assert_true(e->r.after == 5);
	assert_true(fake_node_total(&e->f, 0, 0) == 5);
	/* The tool never asked the kernel for less than the floor. */
	assert_true(fake_u64(&e->f, N0_1G) == 5);
	/* Nothing more to take: no write at all. */
	e->f.writes = 0;
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, 0, 1, &e->o, &e->r), 0);
	assert_int_equal(e->r.status, HV_RES_IN_USE);
	assert_int_equal(e->f.writes, 0);
}

static void t_shrink_keeps_reserved(void **state)
{
	struct env *e = *state;

	/* Global: 10 pages, 2 used, 8 free of which 3 reserved -> floor 5. */
	fake_set_node(&e->f, 1, 0, 6, 4);
	fake_set_node(&e->f, 1, 1, 4, 4);
	e->f.resv[1] = 3;
	fake_set_node(&e->f, 1, 1, 4, 4); /* recompute resv file */
	assert_int_equal(hv_reserve(&e->sys, 2048, -1, 0, &e->o, &e->r), 0);
	assert_true(e->r.floor == 5);
	assert_true(e->r.after == 5);
	assert_int_equal(e->r.status, HV_RES_IN_USE);
	/* Per node: node 1 has 4 free; global free is now 3 = resv: keep all. */
	assert_int_equal(hv_reserve(&e->sys, 2048, 1, 0, &e->o, &e->r), 0);
	assert_true(e->r.floor == fake_node_total(&e->f, 1, 1));
	assert_true(e->r.after == e->r.before);
}

static void t_io_error(void **state)
{
	struct env *e = *state;

	fake_unlink(&e->f, N0_1G);
	assert_int_equal(hv_reserve(&e->sys, GIB_KB, 0, 1, &e->o, &e->r), -1);
	assert_non_null(strstr(log_text(e), "read: "));
	assert_non_null(strstr(log_text(e), "node0/hugepages/hugepages-1048576kB/nr_hugepages: "
				"No such file or directory"));
}

static void t_sysfs_layer(void **state)
{
	struct env *e = *state;
	char buf[8], big[4096];
	uint64_t v;
	int64_t s;
	char **names;
	size_t n;

	/* read-back after write */
	e->f.avail[1][0] = 1;
	assert_int_equal(hv_write_u64(&e->sys, "/sys/devices/system/node/node0/hugepages/"
				      "hugepages-2048kB/nr_hugepages", 7, &v), 0);
	assert_true(v == 1);
	/* malformed and too long content */
	fake_write(&e->f, "/proc/x", "12 kB\n");
	assert_int_equal(hv_read_u64(&e->sys, "/proc/x", &v), -EINVAL);
	fake_write(&e->f, "/proc/x", "-5\n");
	assert_int_equal(hv_read_s64(&e->sys, "/proc/x", &s), 0);
	assert_true(s == -5);
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	fake_write(&e->f, "/proc/x", "%s", big);
	assert_int_equal(hv_read_str(&e->sys, "/proc/x", buf, sizeof(buf)), -EFBIG);
	fake_write(&e->f, "/proc/x", "1234567");
	assert_int_equal(hv_read_str(&e->sys, "/proc/x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "1234567");
	assert_int_equal(hv_read_str(&e->sys, "relative", buf, sizeof(buf)), -EINVAL);
	assert_int_equal(hv_read_u64(&e->sys, "/nope", &v), -ENOENT);
	/* natural sort of node directories */
	fake_write(&e->f, "/d/node10/x", "1");
	fake_write(&e->f, "/d/node9/x", "1");
	fake_write(&e->f, "/d/other/x", "1");
	assert_int_equal(hv_list_dir(&e->sys, "/d", "node", &names, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "node9");
	assert_string_equal(names[1], "node10");
	hv_free_names(names);
	/* root must be a directory */
	assert_int_equal(hv_sys_init(&e->sys, "/nonexistent/root"), -ENOENT);
}

int main(void)
{
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(t_grow_global_ok),
		T(t_grow_partial),
		T(t_grow_after_compaction),
		T(t_no_compact),
		T(t_never_more_than_asked),
		T(t_shrink_free),
		T(t_shrink_in_use),
		T(t_shrink_keeps_reserved),
		T(t_io_error),
		T(t_sysfs_layer),
	};

	return cmocka_run_group_tests_name("reserve", tests, NULL, NULL);
}
