/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hvoctl libvirt-hook against a fake kernel, with the ledger and lock in a
 * temporary directory: prepare/started/release/reconnect, refusals,
 * libvirt's contract (no stdout, exit 0 where required), and 16 concurrent
 * prepares racing for too few pages. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake.h"
#include "sysfs.h"
#include "util.h"

#define GIB_KB (1024ULL * 1024)
#define UA "aaaaaaaa-0000-0000-0000-000000000001"
#define UB "bbbbbbbb-0000-0000-0000-000000000002"
#define UC "cccccccc-0000-0000-0000-000000000003"

struct env {
	struct fake *f; /* shared memory: forked hooks update one fake kernel */
	char dir[PATH_MAX], rundir[PATH_MAX + 8], lvdir[PATH_MAX + 8];
	char log[PATH_MAX + 8], conf[PATH_MAX + 16];
	char *out, *err;
};

static int setup(void **state)
{
	static const uint64_t mem[] = { 64 * GIB_KB, 64 * GIB_KB };
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	e->f = mmap(NULL, sizeof(*e->f), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (e->f == MAP_FAILED)
		return -1;
	fake_init(e->f, 2, NULL, mem, true);
	fake_kernel_on(e->f);
	snprintf(e->dir, sizeof(e->dir), "/tmp/hvoctl-hook.XXXXXX");
	if (!mkdtemp(e->dir))
		return -1;
	snprintf(e->rundir, sizeof(e->rundir), "%s/run", e->dir);
	snprintf(e->lvdir, sizeof(e->lvdir), "%s/libvirt", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/log", e->dir);
	snprintf(e->conf, sizeof(e->conf), "%s/hvokit.conf", e->dir);
	mkdir(e->lvdir, 0755);
	setenv("HVOCTL_HOOK_LOG", e->log, 1);
	*state = e;
	return 0;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int teardown(void **state)
{
	struct env *e = *state;

	free(e->out);
	free(e->err);
	fake_free(e->f);
	munmap(e->f, sizeof(*e->f));
	nftw(e->dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	unsetenv("HVOCTL_HOOK_LOG");
	free(e);
	return 0;
}

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *slurp(const char *path)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	buf[0] = '\0';
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* Guest XML with `pages` 1G pages; nodes: NULL any node, else strict. */
static const char *guest(struct env *e, const char *uuid, const char *name,
			 unsigned pages, const char *nodes)
{
	static char paths[8][PATH_MAX + 64];
	static unsigned next;
	char *path = paths[next++ % 8], xml[2048];

	snprintf(xml, sizeof(xml),
		 "<domain type='kvm'><name>%s</name><uuid>%s</uuid>"
		 "<memory unit='GiB'>%u</memory><memoryBacking><hugepages>"
		 "<page size='1' unit='G'/></hugepages></memoryBacking>%s%s%s</domain>\n",
		 name, uuid, pages, nodes ? "<numatune><memory mode='strict' nodeset='" : "",
		 nodes ? nodes : "", nodes ? "'/></numatune>" : "");
	snprintf(path, sizeof(paths[0]), "%s/%s.xml", e->dir, uuid);
	put(path, xml);
	return path;
}

static int hook(struct env *e, const char *xml, const char *op)
{
	free(e->out);
	free(e->err);
	e->out = e->err = NULL;
	return fake_run(&e->out, &e->err, "--sysroot", e->f->root, "--config", e->conf,
			"libvirt-hook", "--rundir", e->rundir, "--libvirt-rundir", e->lvdir,
			"--xml", xml, "--retries", "0", "--retry-delay", "0",
			"--lock-timeout", "10", "--", "guest", op, "begin", "-", NULL);
}

static bool ledger_exists(struct env *e, const char *uuid)
{
	char p[PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, uuid);
	return access(p, F_OK) == 0;
}

static const char *ledger(struct env *e, const char *uuid)
{
	char p[PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, uuid);
	return slurp(p);
}

#define TOTAL(e) fake_total((e)->f, 0)
#define NODE(e, i) fake_node_total((e)->f, 0, (i))

static void t_no_hugepages_fast_path(void **state)
{
	struct env *e = *state;
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/none.xml", TEST_XML_DIR);
	assert_int_equal(hook(e, p, "prepare"), 0);
	assert_string_equal(e->out, "");
	assert_int_equal(access(e->rundir, F_OK), -1); /* not even the lock */
	assert_int_equal(e->f->writes, 0);
}

static void t_prepare_release(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "web1", 4, NULL);

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_string_equal(e->out, "");
	assert_true(TOTAL(e) == 4);
	assert_true(ledger_exists(e, UA));
	assert_non_null(strstr(ledger(e, UA), "need 1048576 any any 4"));
	assert_non_null(strstr(slurp(e->log), "1G pool: 0 -> 4 pages"));
	/* Pool mode 0700 below the rundir. */
	{
		struct stat st;

		assert_int_equal(stat(e->rundir, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0700);
	}
	assert_int_equal(hook(e, x, "started"), 0);
	assert_non_null(strstr(ledger(e, UA), "state running"));
	assert_int_equal(hook(e, x, "release"), 0);
	assert_string_equal(e->out, "");
	assert_true(TOTAL(e) == 0);
	assert_false(ledger_exists(e, UA));
	assert_non_null(strstr(slurp(e->log), "gave back"));
}

static void t_prepare_suffices(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "web1", 4, NULL);

	fake_set_node(e->f, 0, 0, 3, 3);
	fake_set_node(e->f, 0, 1, 3, 3);
	e->f->writes = 0;
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_int_equal(e->f->writes, 0); /* nothing written */
	assert_null(strstr(ledger(e, UA), "added"));
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(TOTAL(e) == 6); /* not ours to give back */
}

static void t_prepare_short_restores(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "big", 4, NULL);

	e->f->avail[0][0] = 1;
	e->f->avail[0][1] = 1;
	assert_int_equal(hook(e, x, "prepare"), HV_EXIT_PARTIAL);
	assert_string_equal(e->out, "");
	assert_true(TOTAL(e) == 0);
	assert_false(ledger_exists(e, UA));
	assert_non_null(strstr(e->err, "missing 1G any node: 2 of 4 pages"));
	assert_non_null(strstr(e->err, "pools restored"));
	assert_non_null(strstr(e->err, "hugetlb_cma="));
	/* With a CMA area the hint is not given. */
	fake_write(e->f, "/proc/cmdline", "root=/dev/vda1 hugetlb_cma=0:4G\n");
	assert_int_equal(hook(e, x, "prepare"), HV_EXIT_PARTIAL);
	assert_null(strstr(e->err, "no hugetlb_cma"));
}

static void t_strict_never_spills(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "db", 2, "0");

	e->f->avail[0][0] = 1;
	e->f->avail[0][1] = 8;
	fake_set_node(e->f, 0, 1, 5, 5); /* plenty free on node 1 */
	assert_int_equal(hook(e, x, "prepare"), HV_EXIT_PARTIAL);
	assert_non_null(strstr(e->err, "1G node 0: 1 of 2 pages"));
	assert_true(NODE(e, 0) == 0 && NODE(e, 1) == 5);
	/* Node 0 can grow: only node 0 changes. */
	e->f->avail[0][0] = 4;
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_true(NODE(e, 0) == 2 && NODE(e, 1) == 5);
	assert_non_null(strstr(ledger(e, UA), "added 1048576 0 2"));
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(NODE(e, 0) == 0 && NODE(e, 1) == 5);
}

static void t_promises(void **state)
{
	struct env *e = *state;
	const char *a = guest(e, UA, "a", 4, NULL), *b;

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	assert_int_equal(hook(e, a, "prepare"), 0);
	assert_true(TOTAL(e) == 4);
	/* A has not started: its 4 free pages are promised; B must grow. */
	b = guest(e, UB, "b", 2, NULL);
	assert_int_equal(hook(e, b, "prepare"), 0);
	assert_true(TOTAL(e) == 6);
	/* A releases while B is still starting: B's pages stay. */
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(TOTAL(e) == 2);
	/* B started and uses its pages; C needs 1 more: grows by 1. */
	fake_set_node(e->f, 0, 0, NODE(e, 0), 0);
	fake_set_node(e->f, 0, 1, NODE(e, 1), 0);
	assert_int_equal(hook(e, b, "started"), 0);
	assert_int_equal(hook(e, guest(e, UC, "c", 1, NULL), "prepare"), 0);
	assert_true(TOTAL(e) == 3);
	/* B stops while its pages are still in use: none can go. */
	assert_int_equal(hook(e, b, "release"), 0);
	assert_true(TOTAL(e) == 3);
	assert_false(ledger_exists(e, UB));
}

static void t_release_policy(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "a", 4, NULL);

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	put(e->conf, "LIBVIRT_RELEASE=keep\n");
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(TOTAL(e) == 4);
	assert_false(ledger_exists(e, UA));
	assert_non_null(strstr(slurp(e->log), "LIBVIRT_RELEASE=keep"));

	put(e->conf, "LIBVIRT_RELEASE=return\nLIBVIRT_WARM_1G=5\n");
	fake_set_node(e->f, 0, 0, 0, 0);
	fake_set_node(e->f, 0, 1, 0, 0);
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_true(TOTAL(e) == 4);
	x = guest(e, UB, "b", 3, NULL);
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_true(TOTAL(e) == 7);
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(TOTAL(e) == 5); /* warm floor */
	assert_non_null(strstr(slurp(e->log), "LIBVIRT_WARM_1G"));

	/* A broken config: default policy (return), still exit 0. */
	put(e->conf, "LIBVIRT_RELEASE=maybe\n");
	assert_int_equal(hook(e, guest(e, UA, "a", 4, NULL), "release"), 0);
	assert_true(TOTAL(e) == 1);
}

static void t_reconnect(void **state)
{
	struct env *e = *state;
	const char *a = guest(e, UA, "alive", 2, NULL);
	const char *b = guest(e, UB, "gone", 2, NULL);
	const char *c = guest(e, UC, "../../escape", 2, NULL);
	char p[PATH_MAX + 64];

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	assert_int_equal(hook(e, a, "prepare"), 0);
	assert_int_equal(hook(e, b, "prepare"), 0);
	assert_int_equal(hook(e, c, "prepare"), 0);
	assert_int_equal(hook(e, a, "started"), 0);
	assert_int_equal(hook(e, b, "started"), 0);
	assert_int_equal(hook(e, c, "started"), 0);
	assert_true(TOTAL(e) == 6);
	/* libvirtd restarts; only "alive" has a status file. */
	snprintf(p, sizeof(p), "%s/alive.xml", e->lvdir);
	put(p, "<domstatus><domain><name>alive</name><uuid>" UA "</uuid></domain></domstatus>");
	/* A status file of another guest with the same name does not count. */
	snprintf(p, sizeof(p), "%s/gone.xml", e->lvdir);
	put(p, "<domstatus><domain><uuid>" UC "</uuid></domain></domstatus>");
	assert_int_equal(hook(e, a, "reconnect"), 0);
	assert_string_equal(e->out, "");
	assert_true(ledger_exists(e, UA));
	assert_false(ledger_exists(e, UB));
	assert_true(ledger_exists(e, UC)); /* name unusable as a path: kept */
	assert_true(TOTAL(e) == 4);
	/* Whatever goes wrong, reconnect exits 0. */
	put(p, "not xml at all <");
	assert_int_equal(hook(e, p, "reconnect"), 0);
	snprintf(p, sizeof(p), "%s/nonexistent.xml", e->dir);
	assert_int_equal(hook(e, p, "reconnect"), 0);
	assert_int_equal(hook(e, p, "release"), 0);
}

static void t_contract(void **state)
{
	struct env *e = *state;
	static const char *const ops[] = { "prepare", "start", "started", "stopped",
		"release", "migrate", "restore", "reconnect", "attach", "bogus" };
	const char *x = guest(e, UA, "a", 2, NULL);

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		assert_int_equal(hook(e, x, ops[i]), 0);
		assert_string_equal(e->out, "");
	}
	/* migrate/restore/start/stopped/attach changed nothing: released. */
	assert_true(TOTAL(e) == 0);
	/* Too few arguments: usage error. */
	free(e->out);
	free(e->err);
	assert_int_equal(fake_run(&e->out, &e->err, "libvirt-hook", "--", "guest", NULL), 1);
	free(e->out);
	free(e->err);
	e->out = e->err = NULL;
}

static void t_refusals(void **state)
{
	struct env *e = *state;
	static const char *const bad[] = { "billion-laughs.xml", "external-dtd.xml",
		"xxe.xml", "huge-size.xml", "overflow.xml", "unit-bad.xml", "negative.xml",
		"non-utf8.xml", "auto-placement.xml" };
	char p[PATH_MAX + 64];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", TEST_XML_DIR, bad[i]);
		assert_int_equal(hook(e, p, "prepare"), HV_EXIT_ERROR);
		assert_non_null(strstr(e->err, "refused"));
		assert_string_equal(e->out, "");
		assert_int_equal(hook(e, p, "release"), 0);
		assert_int_equal(hook(e, p, "reconnect"), 0);
	}
	/* Empty input. */
	snprintf(p, sizeof(p), "%s/empty.xml", e->dir);
	put(p, "");
	assert_int_equal(hook(e, p, "prepare"), 0); /* no huge pages mentioned */
	/* No 2M... 1G pool at all on this host. */
	assert_int_equal(e->f->writes, 0);
	/* Strict placement on a node the host does not have. */
	assert_int_equal(hook(e, guest(e, UA, "a", 1, "7"), "prepare"), HV_EXIT_ERROR);
	assert_non_null(strstr(e->err, "node 7"));
}

static void t_hostile_name(void **state)
{
	struct env *e = *state;
	char p[PATH_MAX + 64];
	struct stat st;

	e->f->avail[0][0] = 4;
	snprintf(p, sizeof(p), "%s/dotdot-name.xml", TEST_XML_DIR);
	assert_int_equal(hook(e, p, "prepare"), 0);
	assert_true(ledger_exists(e, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"));
	snprintf(p, sizeof(p), "%s/etc", e->dir);
	assert_int_equal(stat(p, &st), -1);
	assert_int_equal(stat("/etc/evil", &st), -1);
	assert_null(strstr(ledger(e, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"), "../"));
}

static void t_lock_and_rundir(void **state)
{
	struct env *e = *state;
	const char *x = guest(e, UA, "a", 1, NULL);
	char p[PATH_MAX + 16];
	int fd;

	e->f->avail[0][0] = 4;
	mkdir(e->rundir, 0700);
	snprintf(p, sizeof(p), "%s/lock", e->rundir);
	fd = open(p, O_RDWR | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(fake_run(&e->out, &e->err, "--sysroot", e->f->root, "libvirt-hook",
				  "--rundir", e->rundir, "--xml", x, "--lock-timeout", "0",
				  "--", "a", "prepare", "begin", "-", NULL), HV_EXIT_ERROR);
	assert_non_null(strstr(e->err, "lock"));
	free(e->out);
	free(e->err);
	assert_int_equal(fake_run(&e->out, &e->err, "--sysroot", e->f->root, "libvirt-hook",
				  "--rundir", e->rundir, "--xml", x, "--lock-timeout", "0",
				  "--", "a", "reconnect", "begin", "-", NULL), 0);
	close(fd);
	assert_true(TOTAL(e) == 0);
	/* A run directory others can write to is refused. */
	chmod(e->rundir, 0777);
	assert_int_equal(hook(e, x, "prepare"), HV_EXIT_ERROR);
	assert_non_null(strstr(e->err, "writable by others"));
	assert_int_equal(hook(e, x, "release"), 0);
	chmod(e->rundir, 0700);
	assert_int_equal(hook(e, x, "prepare"), 0);
}

/* 16 guests start at once, each a forked process running the hook entry
 * against one fake kernel in shared memory, with room for only some. */
static void t_concurrent_16(void **state)
{
	struct env *e = *state;
	enum { N = 16 };
	static const char *const place[4] = { "0", "1", NULL, NULL };
	unsigned need[N];
	pid_t pid[N];
	uint64_t sum_ok = 0, strict_ok[2] = { 0, 0 };
	int ok = 0, failed = 0;
	char xml[N][PATH_MAX + 64];

	e->f->avail[0][0] = 10;
	e->f->avail[0][1] = 6;
	for (int i = 0; i < N; i++) {
		char uuid[40];

		need[i] = 1 + (unsigned)i % 3;
		snprintf(uuid, sizeof(uuid), "0000%04x-1111-2222-3333-444444444444", i);
		snprintf(xml[i], sizeof(xml[i]), "%s", guest(e, uuid, "g", need[i], place[i % 4]));
	}
	for (int i = 0; i < N; i++) {
		pid[i] = fork();
		assert_true(pid[i] >= 0);
		if (pid[i] == 0) {
			char errf[PATH_MAX + 32];
			int r = hook(e, xml[i], "prepare");
			FILE *f;

			snprintf(errf, sizeof(errf), "%s/err-%d", e->dir, i);
			f = fopen(errf, "w");
			if (f) {
				fputs(e->err ? e->err : "", f);
				fputs(e->out && *e->out ? "STDOUT-WRITTEN" : "", f);
				fclose(f);
			}
			_exit(r);
		}
	}
	for (int i = 0; i < N; i++) {
		int st;
		char errf[PATH_MAX + 32], uuid[40];
		const char *msg;

		assert_int_equal(waitpid(pid[i], &st, 0), pid[i]);
		assert_true(WIFEXITED(st));
		snprintf(errf, sizeof(errf), "%s/err-%d", e->dir, i);
		msg = slurp(errf);
		assert_null(strstr(msg, "STDOUT-WRITTEN"));
		snprintf(uuid, sizeof(uuid), "0000%04x-1111-2222-3333-444444444444", i);
		if (WEXITSTATUS(st) == 0) {
			ok++;
			sum_ok += need[i];
			if (place[i % 4])
				strict_ok[i % 4] += need[i];
			assert_true(ledger_exists(e, uuid));
			assert_string_equal(msg, "");
		} else {
			failed++;
			assert_int_equal(WEXITSTATUS(st), HV_EXIT_PARTIAL);
			assert_false(ledger_exists(e, uuid));
			assert_non_null(strstr(msg, "missing 1G"));
		}
	}
	print_message("concurrent: %d succeeded, %d refused, pool %llu = sum %llu\n", ok,
		      failed, (unsigned long long)TOTAL(e), (unsigned long long)sum_ok);
	assert_true(ok > 0 && failed > 0);
	assert_true(TOTAL(e) == sum_ok);
	assert_true(NODE(e, 0) >= strict_ok[0]);
	assert_true(NODE(e, 1) >= strict_ok[1]);
	assert_true(NODE(e, 0) + NODE(e, 1) == sum_ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_no_hugepages_fast_path, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prepare_release, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prepare_suffices, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prepare_short_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(t_strict_never_spills, setup, teardown),
		cmocka_unit_test_setup_teardown(t_promises, setup, teardown),
		cmocka_unit_test_setup_teardown(t_release_policy, setup, teardown),
		cmocka_unit_test_setup_teardown(t_reconnect, setup, teardown),
		cmocka_unit_test_setup_teardown(t_contract, setup, teardown),
		cmocka_unit_test_setup_teardown(t_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(t_hostile_name, setup, teardown),
		cmocka_unit_test_setup_teardown(t_lock_and_rundir, setup, teardown),
		cmocka_unit_test_setup_teardown(t_concurrent_16, setup, teardown),
	};

	return cmocka_run_group_tests_name("libvirt-hook", tests, NULL, NULL);
}
