/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hvokit.conf parsing: every key, defaults, and rejected input with
 * file, line and the expected form in the message. */
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
#include "util.h"

static struct hv_config cfg;

/* Parse text; returns the result, *msg gets the diagnostics. */
static int parse(const char *text, char **msg)
{
	size_t len;
	FILE *f = open_memstream(msg, &len);
	int r;

	assert_non_null(f);
	hv_log_set(f);
	r = hv_config_parse(&cfg, "hvokit.conf", text);
	hv_log_set(NULL);
	fclose(f);
	return r;
}

static void expect_error(const char *text, const char *needle)
{
	char *msg = NULL;
	int r = parse(text, &msg);

	if (r != -1 || !strstr(msg, needle))
		fail_msg("config:\n%s\nresult %d, message:\n%s\nexpected to contain: %s",
			 text, r, msg, needle);
	free(msg);
}

static void t_defaults(void **state)
{
	char *msg = NULL;

	(void)state;
	assert_int_equal(parse("# nothing\n\n   # indented comment\n", &msg), 0);
	assert_string_equal(msg, "");
	free(msg);
	assert_true(cfg.hvo);
	assert_int_equal(cfg.pool[0].kind, HV_POOL_UNSET);
	assert_int_equal(cfg.pool[1].kind, HV_POOL_UNSET);
	assert_true(cfg.host_reserve == 0);
	assert_true(cfg.default_hugepagesz_kb == 0);
	assert_true(cfg.cma_1g == 0);
	assert_int_equal(cfg.libvirt_release, HV_RELEASE_RETURN);
}

static void t_all_keys(void **state)
{
	char *msg = NULL;

	(void)state;
	assert_int_equal(parse("HVO=off\n"
			       "POOL_1G=0:2,1:3   # per node\n"
			       "POOL_2M=25%\n"
			       "HOST_RESERVE=\"4G\"\n"
			       "DEFAULT_HUGEPAGESZ=1G\n"
			       "CMA_1G=8G\r\n"
			       "LIBVIRT_RELEASE=keep\n"
			       "LIBVIRT_WARM_1G=2", &msg), 0);
	assert_string_equal(msg, "");
	free(msg);
	assert_false(cfg.hvo);
	assert_int_equal(cfg.pool[0].kind, HV_POOL_PER_NODE);
	assert_int_equal(cfg.pool[0].n_nodes, 2);
	assert_true(cfg.pool[0].nodes[1].val == 3);
	assert_int_equal(cfg.pool[1].kind, HV_POOL_PERCENT);
	assert_int_equal(cfg.pool[1].percent, 25);
	assert_true(cfg.host_reserve == 4ULL << 30);
	assert_true(cfg.default_hugepagesz_kb == 1048576);
	assert_true(cfg.cma_1g == 8ULL << 30);
	assert_int_equal(cfg.libvirt_release, HV_RELEASE_KEEP);
	assert_true(cfg.libvirt_warm_1g == 2);
}

static void t_count_and_empty(void **state)
{
	char *msg = NULL;

	(void)state;
	assert_int_equal(parse("POOL_1G=4\nPOOL_2M=\nCMA_1G=0:2G,1:4G\n", &msg), 0);
	free(msg);
	assert_int_equal(cfg.pool[0].kind, HV_POOL_COUNT);
	assert_true(cfg.pool[0].count == 4);
	assert_int_equal(cfg.pool[1].kind, HV_POOL_UNSET);
	assert_int_equal(cfg.n_cma_nodes, 2);
	assert_true(cfg.cma_nodes[1].val == 4ULL << 30);
}

static void t_errors(void **state)
{
	(void)state;
	expect_error("HVO=on\n\n\n\n\n\nPOOL_1G=3x\n",
		     "hvokit.conf:7: POOL_1G: '3x' is not a page count; expected N (pages), NODE:N,NODE:N,... or P%");
	expect_error("POOL_2M=-1\n", "hvokit.conf:1: POOL_2M: '-1' is not a page count");
	expect_error("POOL_2M=101%\n", "hvokit.conf:1: POOL_2M: '101%' is more than 100%");
	expect_error("POOL_2M=x%\n", "POOL_2M: 'x%' is not a percentage");
	expect_error("POOL_1G=99999999999999999999\n", "POOL_1G: '99999999999999999999' is too large");
	expect_error("POOL_1G=0:2,0:3\n", "POOL_1G: '0:2,0:3' is not a per-node page count list");
	expect_error("POOL_1G=0:2,\n", "is not a per-node page count list");
	expect_error("HVO=maybe\n", "hvokit.conf:1: HVO: 'maybe' is not on or off; expected on or off");
	expect_error("HOST_RESERVE=4Q\n", "HOST_RESERVE: '4Q' is not a size; expected a size such as 4G");
	expect_error("DEFAULT_HUGEPAGESZ=4M\n", "DEFAULT_HUGEPAGESZ: '4M' is not a supported huge page size; expected 1G or 2M");
	expect_error("CMA_1G=1536M\n", "CMA_1G: '1536M' is not a multiple of 1G");
	expect_error("LIBVIRT_RELEASE=sometimes\n", "expected return or keep");
	expect_error("LIBVIRT_WARM_1G=two\n", "LIBVIRT_WARM_1G: 'two' is not a page count");
	expect_error("# c\nPOOL_4G=1\n", "hvokit.conf:2: POOL_4G: unknown key; expected one of HVO,");
	expect_error("HVO = on\n", "hvokit.conf:1: 'HVO = on': no spaces allowed around '='");
	expect_error("hvo=on\n", "not a setting; expected KEY=value");
	expect_error("just words\n", "not a setting");
	expect_error("POOL_1G=4 5\n", "POOL_1G: unexpected text after the value: '5'");
	expect_error("POOL_1G=$N\n", "POOL_1G: '$N' contains shell special characters");
	expect_error("POOL_1G=\"4\n", "POOL_1G: unterminated '\"'");
	expect_error("HVO=on\nHVO=off\n", "hvokit.conf:2: HVO: already set on line 1");
	expect_error("POOL_1G=60%\nPOOL_2M=50%\n", "shares add up to 110%; expected at most 100%");
}

static void t_all_errors_reported(void **state)
{
	char *msg = NULL;

	(void)state;
	/* Every bad line is reported, not just the first. */
	assert_int_equal(parse("HVO=x\nPOOL_1G=y\nFOO=1\n", &msg), -1);
	assert_non_null(strstr(msg, "hvokit.conf:1:"));
	assert_non_null(strstr(msg, "hvokit.conf:2:"));
	assert_non_null(strstr(msg, "hvokit.conf:3:"));
	free(msg);
}

static void t_load_file(void **state)
{
	struct fake f;
	uint64_t mem[1] = { 1 << 20 };
	const char *p;
	char *msg = NULL;
	size_t len;
	FILE *m;

	(void)state;
	fake_init(&f, 1, NULL, mem, false);
	p = fake_config(&f, "POOL_2M=16\n");
	assert_int_equal(hv_config_load(&cfg, p), 0);
	assert_true(cfg.pool[1].count == 16);
	assert_string_equal(cfg.path, p);
	m = open_memstream(&msg, &len);
	hv_log_set(m);
	assert_int_equal(hv_config_load(&cfg, "/nonexistent/hvokit.conf"), -ENOENT);
	hv_log_set(NULL);
	fclose(m);
	assert_non_null(strstr(msg, "config: /nonexistent/hvokit.conf: No such file or directory; create it"));
	free(msg);
	fake_free(&f);
}

static void t_example_config_is_valid(void **state)
{
	(void)state;
	/* The shipped example must parse (run from hvoctl/). */
	assert_int_equal(hv_config_load(&cfg, "hvokit.conf"), 0);
	assert_true(cfg.hvo);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_defaults),
		cmocka_unit_test(t_all_keys),
		cmocka_unit_test(t_count_and_empty),
		cmocka_unit_test(t_errors),
		cmocka_unit_test(t_all_errors_reported),
		cmocka_unit_test(t_load_file),
		cmocka_unit_test(t_example_config_is_valid),
	};

	return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
