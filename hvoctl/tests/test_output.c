/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status --json (checked with json-c, a real JSON parser), the table and
 * the Prometheus text format, on a fake two-node host. */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "fake.h"
#include "util.h"

#define GIB_KB (1024ULL * 1024)

/* Two nodes; 1G: node0 2 pages (1 free), node1 2 (2 free);
 * 2M: node0 100 (50 free), node1 28 (28 free), 5 reserved. */
static int setup_common(void **state, bool counters)
{
	static const uint64_t mem[] = { 64 * GIB_KB, 32 * GIB_KB };
	struct fake *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	fake_init(f, 2, NULL, mem, counters);
	fake_set_node(f, 0, 0, 2, 1);
	fake_set_node(f, 0, 1, 2, 2);
	f->resv[1] = 5;
	fake_set_node(f, 1, 0, 100, 50);
	fake_set_node(f, 1, 1, 28, 28);
	if (counters) /* (4*4095 + 128*7 - (4*8 + 2)) * 4 kB */
		fake_write(f, "/proc/meminfo", "MemTotal: 100 kB\nHugepagesize:    2048 kB\n"
			   "HugetlbVmemmapSaved:   68968 kB\n");
	*state = f;
	return 0;
}

static int setup_kernel(void **state) { return setup_common(state, true); }
static int setup_stock(void **state) { return setup_common(state, false); }

static int teardown(void **state)
{
	fake_free(*state);
	free(*state);
	return 0;
}

static json_object *get(json_object *o, const char *path)
{
	/* "a.b.2.c": keys and array indexes */
	char buf[256], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
		json_object *n = NULL;
		bool found;

		/* a JSON null is a NULL json_object */
		if (json_object_is_type(o, json_type_array)) {
			n = json_object_array_get_idx(o, (size_t)atoi(k));
			found = n != NULL;
		} else {
			found = o && json_object_object_get_ex(o, k, &n);
		}
		if (!found)
			fail_msg("JSON has no %s (at %s)", path, k);
		o = n;
	}
	return o;
}

static int64_t num(json_object *o, const char *path)
{
	json_object *n = get(o, path);

	if (!json_object_is_type(n, json_type_int))
		fail_msg("%s is not an integer", path);
	return json_object_get_int64(n);
}

static const char *str(json_object *o, const char *path)
{
	json_object *n = get(o, path);

	if (!json_object_is_type(n, json_type_string))
		fail_msg("%s is not a string", path);
	return json_object_get_string(n);
}

static json_object *status_json(struct fake *f)
{
	char *out = NULL, *err = NULL;
	json_tokener *tok = json_tokener_new();
	json_object *j;

	assert_int_equal(fake_run(&out, &err, "--sysroot", f->root, "status", "--json", NULL), 0);
	assert_string_equal(err, "");
	j = json_tokener_parse_ex(tok, out, (int)strlen(out) + 1);
	if (!j || json_tokener_get_error(tok) != json_tokener_success)
		fail_msg("invalid JSON (%s):\n%s",
			 json_tokener_error_desc(json_tokener_get_error(tok)), out);
	json_tokener_free(tok);
	free(out);
	free(err);
	return j;
}

static void t_json_two_nodes_kernel_counters(void **state)
{
	struct fake *f = *state;
	json_object *j = status_json(f);

	assert_true(json_object_get_boolean(get(j, "hvo.kernel_support")));
	assert_true(json_object_get_boolean(get(j, "hvo.enabled")));
	assert_string_equal(str(j, "hvo.boot_parameter"), "on");
	assert_int_equal(num(j, "hvo.sysctl"), 1);
	assert_string_equal(str(j, "kernel"), "6.1.0-hvokit");
	assert_int_equal(num(j, "default_size_kb"), 2048);
	assert_int_equal(json_object_array_length(get(j, "nodes")), 2);
	assert_int_equal(num(j, "nodes.1.node"), 1);
	assert_int_equal(num(j, "nodes.1.mem_total_kb"), 32 * GIB_KB);
	assert_int_equal(json_object_array_length(get(j, "pools")), 2);
	/* 1G first */
	assert_string_equal(str(j, "pools.0.size"), "1G");
	assert_int_equal(num(j, "pools.0.size_kb"), 1048576);
	assert_int_equal(num(j, "pools.0.total"), 4);
	assert_int_equal(num(j, "pools.0.free"), 3);
	assert_int_equal(num(j, "pools.0.reserved"), 0);
	assert_int_equal(num(j, "pools.0.nodes.0.total"), 2);
	assert_int_equal(num(j, "pools.0.nodes.0.free"), 1);
	assert_true(json_object_is_type(get(j, "pools.0.nodes.0.reserved"), json_type_null));
	assert_int_equal(num(j, "pools.0.nodes.1.free"), 2);
	assert_int_equal(num(j, "pools.0.nodes.1.vmemmap_freed_pages"), 2 * 4095);
	assert_string_equal(str(j, "pools.0.mounts.0"), "/dev/hugepages1G");
	assert_string_equal(str(j, "pools.0.hvo.source"), "kernel");
	assert_int_equal(num(j, "pools.0.hvo.optimized_pages"), 4);
	assert_int_equal(num(j, "pools.0.hvo.freed_pages"), 4 * 4095);
	assert_int_equal(num(j, "pools.0.hvo.pgtable_pages"), 32);
	assert_int_equal(num(j, "pools.0.hvo.saved_bytes"), (4 * 4095 - 32) * 4096LL);
	assert_int_equal(num(j, "pools.0.hvo.expected_freed_per_page"), 4095);
	/* 2M */
	assert_string_equal(str(j, "pools.1.size"), "2M");
	assert_int_equal(num(j, "pools.1.total"), 128);
	assert_int_equal(num(j, "pools.1.free"), 78);
	assert_int_equal(num(j, "pools.1.reserved"), 5);
	assert_int_equal(num(j, "pools.1.nodes.0.total"), 100);
	assert_int_equal(num(j, "pools.1.nodes.1.total"), 28);
	assert_string_equal(str(j, "pools.1.mounts.0"), "/dev/hugepages");
	assert_int_equal(num(j, "pools.1.hvo.pgtable_pages"), 2);
	/* whole host: from HugetlbVmemmapSaved */
	assert_string_equal(str(j, "savings.source"), "kernel");
	assert_int_equal(num(j, "savings.saved_bytes"), 68968 * 1024LL);
	assert_int_equal(num(j, "meminfo_saved_kb"), 68968);
	json_object_put(j);
}

static void t_json_estimate(void **state)
{
	struct fake *f = *state;
	json_object *j;

	/* A stock kernel, with a mount path that needs escaping, and a
	 * negative saving is impossible here; HVO on: estimate. */
	fake_write(f, "/proc/self/mounts",
		   "none /mnt/a\\040\"b hugetlbfs rw 0 0\n"
		   "none /mnt/big hugetlbfs rw,pagesize=1G 0 0\n"
		   "none /mnt/\xff\xc3\xa9t\xc3 hugetlbfs rw 0 0\n");
	j = status_json(f);
	assert_string_equal(str(j, "pools.1.mounts.0"), "/mnt/a \"b"); /* default size */
	/* Bytes that are not UTF-8 become U+FFFD; JSON must be UTF-8. */
	assert_string_equal(str(j, "pools.1.mounts.1"), "/mnt/\xef\xbf\xbd\xc3\xa9t\xef\xbf\xbd");
	assert_string_equal(str(j, "pools.0.mounts.0"), "/mnt/big");
	assert_string_equal(str(j, "pools.0.hvo.source"), "estimate");
	assert_int_equal(num(j, "pools.0.hvo.optimized_pages"), 4);
	assert_int_equal(num(j, "pools.0.hvo.freed_pages"), 4 * 4095);
	assert_int_equal(num(j, "pools.0.hvo.pgtable_pages"), 32);
	assert_int_equal(num(j, "pools.1.hvo.freed_pages"), 128 * 7);
	assert_int_equal(num(j, "pools.1.hvo.pgtable_pages"), 2);
	assert_string_equal(str(j, "savings.source"), "estimate");
	assert_int_equal(num(j, "savings.saved_bytes"), 68968 * 1024LL);
	assert_true(json_object_is_type(get(j, "meminfo_saved_kb"), json_type_null));
	json_object_put(j);
	/* HVO off: nothing saved, and the boot parameter says off. */
	fake_write(f, "/proc/sys/vm/hugetlb_optimize_vmemmap", "0\n");
	fake_write(f, "/proc/cmdline", "ro hugetlb_free_vmemmap=off -- hugetlb_free_vmemmap=on\n");
	j = status_json(f);
	assert_false(json_object_get_boolean(get(j, "hvo.enabled")));
	assert_string_equal(str(j, "hvo.boot_parameter"), "off");
	assert_int_equal(num(j, "savings.saved_bytes"), 0);
	json_object_put(j);
	/* No HVO support at all. */
	fake_unlink(f, "/proc/sys/vm/hugetlb_optimize_vmemmap");
	j = status_json(f);
	assert_false(json_object_get_boolean(get(j, "hvo.kernel_support")));
	assert_true(json_object_is_type(get(j, "hvo.sysctl"), json_type_null));
	json_object_put(j);
}

static void t_negative_savings(void **state)
{
	struct fake *f = *state;
	json_object *j;

	fake_write(f, "/proc/meminfo", "Hugepagesize: 2048 kB\nHugetlbVmemmapSaved:   -32 kB\n");
	j = status_json(f);
	assert_int_equal(num(j, "savings.saved_bytes"), -32768);
	assert_int_equal(num(j, "meminfo_saved_kb"), -32);
	json_object_put(j);
}

static void expect_in(const char *out, const char *needle)
{
	if (!strstr(out, needle))
		fail_msg("output:\n%s\ndoes not contain:\n%s", out, needle);
}

static void expect_not_in(const char *out, const char *needle)
{
	if (strstr(out, needle))
		fail_msg("output:\n%s\ncontains:\n%s", out, needle);
}

static void t_table(void **state)
{
	struct fake *f = *state;
	char *out = NULL, *err = NULL;

	assert_int_equal(fake_run(&out, &err, "status", "--sysroot", f->root, NULL), 0);
	expect_in(out, "1G    all            4          3          0          0  /dev/hugepages1G\n");
	expect_in(out, "2M    0            100         50          -          0\n");
	expect_in(out, "HVO: supported; boot parameter hugetlb_free_vmemmap=on; "
				"vm.hugetlb_optimize_vmemmap = 1 (on)");
	expect_in(out, "1G             4      16380         32     63.8 MiB  kernel\n");
	expect_in(out, "Saved: 67.3 MiB (kernel, HugetlbVmemmapSaved)");
	free(out);
	free(err);
}

static void t_metrics(void **state)
{
	struct fake *f = *state;
	char *out = NULL, *err = NULL, *save = NULL, typed[64][64];
	size_t n_typed = 0, samples = 0;
	regex_t sample, comment;

	assert_int_equal(fake_run(&out, &err, "--sysroot", f->root, "metrics", NULL), 0);
	assert_int_equal(regcomp(&sample,
		"^(hvokit_[a-z_]+)(\\{[a-z_]+=\"[^\"\\\\]*\"(,[a-z_]+=\"[^\"\\\\]*\")*\\})? -?[0-9]+$",
		REG_EXTENDED), 0);
	assert_int_equal(regcomp(&comment, "^# (HELP|TYPE) (hvokit_[a-z_]+) .+$", REG_EXTENDED), 0);
	assert_int_equal(out[strlen(out) - 1], '\n');
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		regmatch_t m[3];

		if (regexec(&comment, l, 3, m, 0) == 0) {
			if (!strncmp(l, "# TYPE", 6)) {
				assert_true(n_typed < 64);
				snprintf(typed[n_typed++], 64, "%.*s",
					 (int)(m[2].rm_eo - m[2].rm_so), l + m[2].rm_so);
				assert_non_null(strstr(l, " gauge"));
			}
			continue;
		}
		if (regexec(&sample, l, 3, m, 0) != 0)
			fail_msg("not a Prometheus sample line: '%s'", l);
		/* its family was declared just before */
		assert_true(n_typed > 0);
		if (strncmp(l + m[1].rm_so, typed[n_typed - 1], strlen(typed[n_typed - 1])) ||
		    (size_t)(m[1].rm_eo - m[1].rm_so) != strlen(typed[n_typed - 1]))
			fail_msg("sample '%s' outside its TYPE block '%s'", l, typed[n_typed - 1]);
		samples++;
	}
	/* no family declared twice */
	for (size_t i = 0; i < n_typed; i++)
		for (size_t k = i + 1; k < n_typed; k++)
			assert_string_not_equal(typed[i], typed[k]);
	assert_true(samples > 20);
	regfree(&sample);
	regfree(&comment);
	free(out);
	free(err);
	/* and the values */
	assert_int_equal(fake_run(&out, &err, "--sysroot", f->root, "metrics", NULL), 0);
	expect_in(out, "\nhvokit_hvo_enabled 1\n");
	expect_in(out, "\nhvokit_hugepages_pool{size=\"1G\"} 4\n");
	/* gauges only: "_total" is the suffix of counters */
	expect_not_in(out, "_total");
	expect_in(out, "\nhvokit_hugepages_reserved{size=\"2M\"} 5\n");
	expect_in(out, "\nhvokit_node_hugepages_free{size=\"2M\",node=\"0\"} 50\n");
	expect_in(out, "\nhvokit_node_vmemmap_freed_pages{size=\"1G\",node=\"1\"} 8190\n");
	expect_in(out, "\nhvokit_vmemmap_freed_pages{size=\"1G\",source=\"kernel\"} 16380\n");
	expect_in(out, "\nhvokit_vmemmap_saved_bytes{source=\"kernel\"} 70623232\n");
	expect_in(out, "\nhvokit_hugetlbfs_mounts{size=\"2M\"} 1\n");
	free(out);
	free(err);
}

/*
 * Device-dax as sysfs shows it: daxR.N is a link to the dax device under
 * its nd device, whose "mode" says where the memmap lives.  dax0.0: 2 GiB
 * at 2 MiB, memmap in RAM, enabled, the kernel counts 24512 KiB saved...
 * the figures of the QEMU boot test (nested-test/boot, devdax).
 */
static void fake_devdax(struct fake *f, const char *name, int region, uint64_t size,
			uint64_t align, const char *mode, bool enabled, long saved)
{
	char dir[256], rel[320], target[PATH_MAX + 512], link[PATH_MAX + 64];

	snprintf(dir, sizeof(dir), "/sys/devices/platform/e820_pmem/ndbus0/region%d/%s", region,
		 name);
	snprintf(rel, sizeof(rel), "%s/mode", dir);
	fake_write(f, rel, "%s\n", mode);
	snprintf(rel, sizeof(rel), "%s/%s/size", dir, name);
	fake_write(f, rel, "%llu\n", (unsigned long long)size);
	snprintf(rel, sizeof(rel), "%s/%s/align", dir, name);
	fake_write(f, rel, "%llu\n", (unsigned long long)align);
	snprintf(rel, sizeof(rel), "%s/%s/numa_node", dir, name);
	fake_write(f, rel, "0\n");
	if (enabled) {
		snprintf(rel, sizeof(rel), "%s/%s/driver/bind", dir, name);
		fake_write(f, rel, "\n");
	}
	if (saved >= 0) {
		snprintf(rel, sizeof(rel), "%s/%s/vmemmap_saved", dir, name);
		fake_write(f, rel, "%ld\n", saved);
	}
	fake_write(f, "/sys/bus/dax/devices/.keep", "\n");
	snprintf(target, sizeof(target), "%s%s/%s", f->root, dir, name);
	snprintf(link, sizeof(link), "%s/sys/bus/dax/devices/%s", f->root, name);
	if (symlink(target, link))
		fail_msg("symlink %s: %s", link, strerror(errno));
}

static void t_devdax(void **state)
{
	struct fake *f = *state;
	char *out = NULL, *err = NULL;
	json_object *j;

	fake_devdax(f, "dax0.0", 0, 2ULL << 30, 2ULL << 20, "ram", true, 24512L << 10);
	fake_devdax(f, "dax1.0", 1, 2ULL << 30, 1ULL << 30, "ram", true, -1);
	fake_devdax(f, "dax2.0", 2, 4ULL << 30, 2ULL << 20, "pmem", true, -1);
	fake_devdax(f, "dax3.0", 3, 2ULL << 30, 4096, "ram", false, -1);
	fake_write(f, "/proc/meminfo", "MemTotal: 33554432 kB\nHugepagesize: 2048 kB\n"
		   "DeviceVmemmapSaved:    24512 kB\n");
	/* running guests (libvirt's status files): two on dax0.0, one on dax1.0 */
	for (int g = 0; g < 3; g++)
		fake_write(f, g == 2 ? "/run/libvirt/qemu/vm2.xml" : g ? "/run/libvirt/qemu/vm1.xml" :
			   "/run/libvirt/qemu/vm0.xml",
			   "<domstatus state='running'><domain type='kvm'><name>vm%d</name>"
			   "<devices><memory model='nvdimm'><source><path>/dev/dax%d.0</path>"
			   "</source></memory></devices></domain></domstatus>", g, g == 2);
	fake_write(f, "/run/libvirt/qemu/vm3.xml", "<domstatus><domain><name>vm3");
	fake_write(f, "/run/libvirt/qemu/vm0.pid", "42\n");
	j = status_json(f);
	assert_int_equal(json_object_array_length(get(j, "devdax")), 4);
	assert_string_equal(str(j, "devdax.0.device"), "dax0.0");
	assert_int_equal(num(j, "devdax.0.size_bytes"), 2LL << 30);
	assert_int_equal(num(j, "devdax.0.align_bytes"), 2LL << 20);
	assert_string_equal(str(j, "devdax.0.memmap"), "ram");
	assert_true(json_object_get_boolean(get(j, "devdax.0.enabled")));
	assert_int_equal(num(j, "devdax.0.vmemmap_saved_bytes"), 24512LL << 10);
	assert_string_equal(str(j, "devdax.0.source"), "kernel");
	/* without the counter: 2 GiB at 1 GiB keeps 2 pages per page and 16 PTE tables */
	assert_string_equal(str(j, "devdax.1.source"), "estimate");
	assert_int_equal(num(j, "devdax.1.vmemmap_saved_bytes"), (2LL * 4094 - 16) << 12);
	/* memmap in the device (--map=dev): nothing saved in RAM */
	assert_string_equal(str(j, "devdax.2.memmap"), "device");
	assert_int_equal(num(j, "devdax.2.vmemmap_saved_bytes"), 0);
	assert_false(json_object_get_boolean(get(j, "devdax.3.enabled")));
	assert_int_equal(num(j, "devdax.3.vmemmap_saved_bytes"), 0);
	assert_int_equal(num(j, "meminfo_device_saved_kb"), 24512);
	assert_int_equal(num(j, "devdax.0.guest_count"), 2);
	assert_int_equal(json_object_array_length(get(j, "devdax.0.guests")), 2);
	assert_int_equal(num(j, "devdax.1.guest_count"), 1);
	assert_string_equal(str(j, "devdax.1.guests.0"), "vm2");
	assert_int_equal(num(j, "devdax.3.guest_count"), 0);
	json_object_put(j);

	assert_int_equal(fake_run(&out, &err, "status", "--sysroot", f->root, NULL), 0);
	expect_in(out, "\nDevice-DAX:\n");
	expect_in(out, "dax1.0        2.0 GiB     1G     0     ram   enabled     31.9 MiB  estimate  vm2\n");
	expect_in(out, "dax2.0        4.0 GiB     2M     0  device   enabled          0 B  estimate  -\n");
	expect_in(out, "dax3.0        2.0 GiB     4K     0     ram  disabled          0 B  estimate  -\n");
	expect_in(out, "dax0.0        2.0 GiB     2M     0     ram   enabled     23.9 MiB  kernel    vm");
	expect_in(out, "Saved by device-dax: 23.9 MiB (kernel, DeviceVmemmapSaved)\n");
	free(out);
	free(err);
	assert_int_equal(fake_run(&out, &err, "--sysroot", f->root, "metrics", NULL), 0);
	expect_in(out, "hvokit_devdax_vmemmap_saved_bytes{device=\"dax0.0\",source=\"kernel\"} 25100288\n");
	expect_in(out, "hvokit_devdax_size_bytes{device=\"dax2.0\",align=\"2097152\",memmap=\"device\"} 4294967296\n");
	expect_in(out, "hvokit_devdax_guests{device=\"dax0.0\"} 2\n");
	expect_in(out, "hvokit_devdax_guests{device=\"dax2.0\"} 0\n");
	free(out);
	free(err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_json_two_nodes_kernel_counters, setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(t_json_estimate, setup_stock, teardown),
		cmocka_unit_test_setup_teardown(t_negative_savings, setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(t_table, setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(t_metrics, setup_kernel, teardown),
		cmocka_unit_test_setup_teardown(t_devdax, setup_kernel, teardown),
	};

	return cmocka_run_group_tests_name("output", tests, NULL, NULL);
}
