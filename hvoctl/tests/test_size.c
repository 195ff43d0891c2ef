/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Parsing and formatting of sizes, counts, percentages and node lists. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "size.h"

static void t_parse_size_ok(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(hv_parse_size("1G", &v), 0);
	assert_true(v == 1ULL << 30);
	assert_int_equal(hv_parse_size("2M", &v), 0);
	assert_true(v == 2ULL << 20);
	assert_int_equal(hv_parse_size("1048576kB", &v), 0);
	assert_true(v == 1ULL << 30);
	assert_int_equal(hv_parse_size("2MiB", &v), 0);
	assert_true(v == 2ULL << 20);
	assert_int_equal(hv_parse_size("4096", &v), 0);
	assert_true(v == 4096);
	assert_int_equal(hv_parse_size("1t", &v), 0);
	assert_true(v == 1ULL << 40);
	assert_int_equal(hv_parse_size("0", &v), 0);
	assert_true(v == 0);
}

static void t_parse_size_bad(void **state)
{
	static const char *const bad[] = { "", "-1G", "+1G", " 1G", "1G ", "1X",
		"G", "1GG", "1.5G", "1Gi", "1iB", "0x10", "1G2", "1,G" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (hv_parse_size(bad[i], &v) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i]);
	}
	assert_int_equal(hv_parse_size(NULL, &v), -EINVAL);
	assert_true(v == 42); /* untouched on error */
}

static void t_parse_size_overflow(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(hv_parse_size("18446744073709551615", &v), 0);
	assert_int_equal(hv_parse_size("18446744073709551616", &v), -ERANGE);
	assert_int_equal(hv_parse_size("17179869184G", &v), -ERANGE); /* 2^34 G */
	assert_int_equal(hv_parse_size("17179869183G", &v), 0);
	assert_int_equal(hv_parse_size("99999999999999999999999K", &v), -ERANGE);
	assert_int_equal(hv_parse_size("16777216T", &v), -ERANGE);
}

static void t_parse_pagesize(void **state)
{
	uint64_t kb;

	(void)state;
	assert_int_equal(hv_parse_pagesize("1G", &kb), 0);
	assert_true(kb == 1048576);
	assert_int_equal(hv_parse_pagesize("2048kB", &kb), 0);
	assert_true(kb == 2048);
	assert_int_equal(hv_parse_pagesize("3M", &kb), -EINVAL);  /* not 2^n */
	assert_int_equal(hv_parse_pagesize("2K", &kb), -EINVAL);  /* < 4K */
	assert_int_equal(hv_parse_pagesize("0", &kb), -EINVAL);
}

static void t_parse_count(void **state)
{
	uint64_t v;
	int64_t s;

	(void)state;
	assert_int_equal(hv_parse_u64("4", &v), 0);
	assert_true(v == 4);
	assert_int_equal(hv_parse_u64("", &v), -EINVAL);
	assert_int_equal(hv_parse_u64("-1", &v), -EINVAL);
	assert_int_equal(hv_parse_u64("4x", &v), -EINVAL);
	assert_int_equal(hv_parse_u64("4 ", &v), -EINVAL);
	assert_int_equal(hv_parse_u64("1G", &v), -EINVAL);
	assert_int_equal(hv_parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(hv_parse_s64("-123", &s), 0);
	assert_true(s == -123);
	assert_int_equal(hv_parse_s64("-9223372036854775808", &s), 0);
	assert_true(s == INT64_MIN);
	assert_int_equal(hv_parse_s64("9223372036854775808", &s), -ERANGE);
	assert_int_equal(hv_parse_s64("-9223372036854775809", &s), -ERANGE);
	assert_int_equal(hv_parse_s64("-", &s), -EINVAL);
	assert_int_equal(hv_parse_s64("--1", &s), -EINVAL);
}

static void t_parse_percent(void **state)
{
	unsigned p;

	(void)state;
	assert_int_equal(hv_parse_percent("50%", &p), 0);
	assert_int_equal(p, 50);
	assert_int_equal(hv_parse_percent("0%", &p), 0);
	assert_int_equal(p, 0);
	assert_int_equal(hv_parse_percent("100%", &p), 0);
	assert_int_equal(hv_parse_percent("101%", &p), -ERANGE);
	assert_int_equal(hv_parse_percent("99999999999999999999999%", &p), -ERANGE);
	assert_int_equal(hv_parse_percent("50", &p), -EINVAL);
	assert_int_equal(hv_parse_percent("%", &p), -EINVAL);
	assert_int_equal(hv_parse_percent("-5%", &p), -EINVAL);
	assert_int_equal(hv_parse_percent("5%%", &p), -EINVAL);
	assert_int_equal(hv_parse_percent("5.5%", &p), -EINVAL);
}

static void t_node_list(void **state)
{
	int nodes[HV_MAX_NODES];
	size_t n;

	(void)state;
	assert_int_equal(hv_parse_node_list("0-1,3", nodes, HV_MAX_NODES, &n), 0);
	assert_int_equal(n, 3);
	assert_int_equal(nodes[0], 0);
	assert_int_equal(nodes[1], 1);
	assert_int_equal(nodes[2], 3);
	assert_int_equal(hv_parse_node_list("0", nodes, HV_MAX_NODES, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(hv_parse_node_list("", nodes, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_list("1-0", nodes, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_list("0,0", nodes, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_list("0,", nodes, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_list("0-", nodes, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_list("0-4096", nodes, HV_MAX_NODES, &n), -ERANGE);
	assert_int_equal(hv_parse_node_list("0-64", nodes, HV_MAX_NODES, &n), -ERANGE);
	assert_int_equal(hv_parse_node_list("0-63", nodes, HV_MAX_NODES, &n), 0);
	assert_int_equal(n, 64);
}

static void t_node_vals(void **state)
{
	struct hv_node_val nv[HV_MAX_NODES];
	size_t n;

	(void)state;
	assert_int_equal(hv_parse_node_vals("0:2,1:3", hv_parse_u64, nv, HV_MAX_NODES, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(nv[1].node, 1);
	assert_true(nv[1].val == 3);
	assert_int_equal(hv_parse_node_vals("0:2G,3:4G", hv_parse_size, nv, HV_MAX_NODES, &n), 0);
	assert_true(nv[1].val == 4ULL << 30);
	assert_int_equal(hv_parse_node_vals("0:2,0:3", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("0:", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals(":2", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("0:2,", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("0:2x", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("0:-2", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("a:2", hv_parse_u64, nv, HV_MAX_NODES, &n), -EINVAL);
	assert_int_equal(hv_parse_node_vals("9999:2", hv_parse_u64, nv, HV_MAX_NODES, &n), -ERANGE);
}

static void t_format(void **state)
{
	char b[32];

	(void)state;
	hv_format_kb(1048576, b, sizeof(b));
	assert_string_equal(b, "1G");
	hv_format_kb(2048, b, sizeof(b));
	assert_string_equal(b, "2M");
	hv_format_kb(64, b, sizeof(b));
	assert_string_equal(b, "64K");
	hv_format_size(3ULL << 30, b, sizeof(b));
	assert_string_equal(b, "3G");
	hv_format_size(1536ULL << 20, b, sizeof(b));
	assert_string_equal(b, "1536M");
	hv_format_size(1000, b, sizeof(b));
	assert_string_equal(b, "1000");
	hv_format_human(67010560, b, sizeof(b));
	assert_string_equal(b, "63.9 MiB");
	hv_format_human(-4096, b, sizeof(b));
	assert_string_equal(b, "-4.0 KiB");
	hv_format_human(INT64_MIN, b, sizeof(b));
	assert_string_equal(b, "-8.0 EiB");
	hv_format_human(12, b, sizeof(b));
	assert_string_equal(b, "12 B");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_parse_size_ok),
		cmocka_unit_test(t_parse_size_bad),
		cmocka_unit_test(t_parse_size_overflow),
		cmocka_unit_test(t_parse_pagesize),
		cmocka_unit_test(t_parse_count),
		cmocka_unit_test(t_parse_percent),
		cmocka_unit_test(t_node_list),
		cmocka_unit_test(t_node_vals),
		cmocka_unit_test(t_format),
	};

	return cmocka_run_group_tests_name("size", tests, NULL, NULL);
}
