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
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <json-c/json.h>

#include "fake.h"
#include "hookenv.h"
#include "sysfs.h"
#include "util.h"

#define UA "aaaaaaaa-0000-0000-0000-000000000001"
#define UB "bbbbbbbb-0000-0000-0000-000000000002"
#define UC "cccccccc-0000-0000-0000-000000000003"

static int setup(void **state)
{
	*state = hook_env_new("hook");
	return *state ? 0 : -1;
}

static int teardown(void **state)
{
	hook_env_free(*state);
	return 0;
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : "";
}

/*
 * A ledger entry (JSON, format 3) as lines that the assertions search:
 * "state S", "need SIZE_KB strict|any NODES PAGES", "added SIZE_KB NODE
 * PAGES", "name HEX", "pending ...".  A file that is not such JSON fails
 * the test.
 */
static const char *ledger(struct hook_env *e, const char *uuid)
{
	static char out[65536];
	char p[PATH_MAX + 128];
	json_object *o, *a;
	size_t n = 0;

	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, uuid);
	o = json_tokener_parse(slurp(p));
	assert_non_null(o);
	assert_string_equal(jstr(o, "format"), "hvokit-ledger");
	assert_string_equal(jstr(o, "version"), "3");
	n += (size_t)snprintf(out + n, sizeof(out) - n, "uuid %s\nstate %s\nname ",
			      jstr(o, "uuid"), jstr(o, "state"));
	for (const unsigned char *c = (const unsigned char *)jstr(o, "name"); *c; c++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%02x", *c);
	n += (size_t)snprintf(out + n, sizeof(out) - n, "\n");
	if (json_object_object_get_ex(o, "need", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			json_object *it = json_object_array_get_idx(a, i), *st;

			json_object_object_get_ex(it, "strict", &st);
			n += (size_t)snprintf(out + n, sizeof(out) - n, "need %s %s %s %s\n",
					      jstr(it, "size_kb"),
					      json_object_get_boolean(st) ? "strict" : "any",
					      jstr(it, "nodes"), jstr(it, "pages"));
		}
	if (json_object_object_get_ex(o, "added", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			json_object *it = json_object_array_get_idx(a, i);

			n += (size_t)snprintf(out + n, sizeof(out) - n, "added %s %s %s\n",
					      jstr(it, "size_kb"), jstr(it, "node"),
					      jstr(it, "pages"));
		}
	if (json_object_object_get_ex(o, "pending", &a))
		n += (size_t)snprintf(out + n, sizeof(out) - n, "pending %s %s %s %s\n",
				      jstr(a, "size_kb"), jstr(a, "node"), jstr(a, "before"),
				      jstr(a, "target"));
	json_object_put(o);
	assert_true(n < sizeof(out));
	return out;
}

#define TOTAL(e) fake_total((e)->f, 0)
#define NODE(e, i) fake_node_total((e)->f, 0, (i))

static void t_no_hugepages_fast_path(void **state)
{
	struct hook_env *e = *state;
	char p[PATH_MAX + 32];

	snprintf(p, sizeof(p), "%s/none.xml", TEST_XML_DIR);
	assert_int_equal(hook(e, p, "prepare"), 0);
	assert_string_equal(e->out, "");
	assert_int_equal(access(e->rundir, F_OK), -1); /* not even the lock */
	assert_int_equal(e->f->writes, 0);
}

static void t_prepare_release(void **state)
{
	struct hook_env *e = *state;
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

/* An entry in the line format of hvoctl 0.1 (format 2), as a host upgraded
 * while guests run has them: read, acted on, rewritten as JSON. */
static void t_ledger_format2_upgrade(void **state)
{
	struct hook_env *e = *state;
	char p[PATH_MAX + 128];
	const char *x = guest(e, UA, "web1", 2, NULL);

	mkdir(e->rundir, 0700);
	fake_set_node(e->f, 0, 0, 2, 2);
	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, UA);
	put(p, "hvokit-ledger 2\nuuid " UA "\nname 77656231\ntruncated 0\n"
	       "state preparing\ntime 1\nneed 1048576 any any 2\nadded 1048576 0 2\n");
	assert_int_equal(hook(e, x, "started"), 0);
	assert_int_equal(slurp(p)[0], '{');
	assert_non_null(strstr(ledger(e, UA), "state running"));
	assert_non_null(strstr(ledger(e, UA), "name 77656231"));
	assert_non_null(strstr(ledger(e, UA), "added 1048576 0 2"));
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(TOTAL(e) == 0);
	assert_false(ledger_exists(e, UA));
	/* A released format-2 entry with a pending write is settled. */
	fake_set_node(e->f, 0, 0, 3, 3);
	put(p, "hvokit-ledger 2\nuuid " UA "\nname -\ntruncated 0\nstate released\n"
	       "time 1\nadded 1048576 0 1\npending 1048576 0 1 3\n");
	assert_int_equal(hook(e, guest(e, UB, "other", 1, NULL), "reconnect"), 0);
	assert_true(TOTAL(e) == 0);
	assert_false(ledger_exists(e, UA));
	/* A name that is not UTF-8 (only a format-2 file can hold one) is
	 * kept byte for byte, hex-encoded. */
	fake_set_node(e->f, 0, 0, 1, 1);
	put(p, "hvokit-ledger 2\nuuid " UA "\nname ff41\ntruncated 0\nstate preparing\n"
	       "time 1\nadded 1048576 0 1\n");
	assert_int_equal(hook(e, x, "started"), 0);
	assert_non_null(strstr(slurp(p), "\"name_hex\": \"ff41\""));
	assert_int_equal(hook(e, x, "release"), 0);
	assert_false(ledger_exists(e, UA));
	/* Garbage is ignored, not acted on. */
	put(p, "{\"format\": \"hvokit-ledger\", \"version\": 3, \"uuid\": 7}\n");
	assert_int_equal(hook(e, guest(e, UB, "other", 1, NULL), "reconnect"), 0);
	assert_true(ledger_exists(e, UA));
	assert_non_null(strstr(slurp(e->log), "malformed; ignoring it"));
}

static void t_prepare_suffices(void **state)
{
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	/* B stops while its pages are still in use: none can go; its entry
	 * stays, released, until they are free. */
	assert_int_equal(hook(e, b, "release"), 0);
	assert_true(TOTAL(e) == 3);
	assert_non_null(strstr(ledger(e, UB), "state released"));
	/* Once free, the next reconnect gives them back (C still starting
	 * keeps its one page). */
	fake_set_node(e->f, 0, 0, NODE(e, 0), NODE(e, 0));
	fake_set_node(e->f, 0, 1, NODE(e, 1), NODE(e, 1));
	assert_int_equal(hook(e, guest(e, UC, "c", 1, NULL), "reconnect"), 0);
	assert_true(TOTAL(e) == 1);
	assert_false(ledger_exists(e, UB));
	assert_int_equal(hook(e, guest(e, UC, "c", 1, NULL), "release"), 0);
	assert_true(TOTAL(e) == 0);
}

static void t_release_policy(void **state)
{
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	/* The status file is read as XML: the guest's UUID in a comment or an
	 * attribute of another guest's file does not keep it alive ... */
	b = guest(e, UB, "gone", 2, NULL);
	assert_int_equal(hook(e, b, "prepare"), 0);
	assert_int_equal(hook(e, b, "started"), 0);
	assert_true(ledger_exists(e, UB));
	put(p, "<domstatus><!-- <uuid>" UB "</uuid> --><domain><uuid>" UC "</uuid>"
	       "<description>&lt;uuid&gt;" UB "&lt;/uuid&gt;</description></domain>"
	       "</domstatus>");
	assert_int_equal(hook(e, a, "reconnect"), 0);
	assert_false(ledger_exists(e, UB));
	assert_non_null(strstr(slurp(e->log), "gone.xml belongs to guest " UC));
	/* ... and a file that cannot be parsed keeps it alive (never guess). */
	b = guest(e, UB, "gone", 2, NULL);
	assert_int_equal(hook(e, b, "prepare"), 0);
	assert_int_equal(hook(e, b, "started"), 0);
	put(p, "<domstatus><domain><uuid>" UC "</uuid></domain>");
	assert_int_equal(hook(e, a, "reconnect"), 0);
	assert_true(ledger_exists(e, UB));
	/* Upper-case UUID in the status file: still this guest. */
	put(p, "<domstatus state='running'><domain type='kvm' id='3'><uuid>"
	       "BBBBBBBB-0000-0000-0000-000000000002</uuid></domain></domstatus>");
	assert_int_equal(hook(e, a, "reconnect"), 0);
	assert_true(ledger_exists(e, UB));
	/* Whatever goes wrong, reconnect exits 0. */
	put(p, "not xml at all <");
	assert_int_equal(hook(e, p, "reconnect"), 0);
	snprintf(p, sizeof(p), "%s/nonexistent.xml", e->dir);
	assert_int_equal(hook(e, p, "reconnect"), 0);
	assert_int_equal(hook(e, p, "release"), 0);
}

static void t_contract(void **state)
{
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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
	struct hook_env *e = *state;
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

/* ---------- issue 13: regression tests ---------- */

/* A guest with two NUMA cells, 1G pages, cell 0 strict on host node 0 and
 * cell 1 strict on node 1 (two pool writes per prepare and release). */
static const char *guest_2cells(struct hook_env *e, const char *uuid, unsigned g0, unsigned g1)
{
	static char path[PATH_MAX + 64];
	char xml[2048];

	snprintf(xml, sizeof(xml),
		 "<domain type='kvm'><name>cells</name><uuid>%s</uuid>"
		 "<memory unit='GiB'>%u</memory><memoryBacking><hugepages>"
		 "<page size='1' unit='G'/></hugepages></memoryBacking>"
		 "<cpu><numa><cell id='0' cpus='0' memory='%u' unit='GiB'/>"
		 "<cell id='1' cpus='1' memory='%u' unit='GiB'/></numa></cpu>"
		 "<numatune><memnode cellid='0' mode='strict' nodeset='0'/>"
		 "<memnode cellid='1' mode='strict' nodeset='1'/></numatune></domain>\n",
		 uuid, g0 + g1, g0, g1);
	snprintf(path, sizeof(path), "%s/%s-cells.xml", e->dir, uuid);
	put(path, xml);
	return path;
}

/* Run one hook operation in a child process (a crash, or the fake kernel's
 * kill at pool write kill_at, cannot take the test down).  Returns the
 * exit status, or -signal. */
static int hook_child(struct hook_env *e, const char *xml, const char *op, unsigned kill_at,
		      bool before)
{
	pid_t pid;
	int st;

	e->f->pool_writes = 0;
	e->f->kill_at = 0;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		e->f->kill_before = before;
		e->f->kill_at = kill_at;
		_exit(hook(e, xml, op));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	e->f->kill_at = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
}

struct snap {
	uint64_t t[2][FK_MAX_NODES];
};

static void snap_take(struct hook_env *e, struct snap *s)
{
	memcpy(s->t, e->f->total, sizeof(s->t));
}

/* Pools exactly as in s, node by node, both sizes. */
static void snap_check(struct hook_env *e, const struct snap *s, const char *what)
{
	for (int si = 0; si < 2; si++)
		for (int i = 0; i < e->f->n_nodes; i++)
			if (e->f->total[si][i] != s->t[si][i])
				fail_msg("%s: %s pool node %d has %llu pages, expected %llu",
					 what, si ? "2M" : "1G", i,
					 (unsigned long long)e->f->total[si][i],
					 (unsigned long long)s->t[si][i]);
}

static void wipe_rundir(struct hook_env *e)
{
	char p[PATH_MAX + 64];

	rm_tree(e->rundir);
	snprintf(p, sizeof(p), "%s/alive.xml", e->lvdir);
	unlink(p);
}

/* Bug 1: a strict guest is not refused because an any-node guest is
 * starting: the any-node promise may be met from the other node. */
static void t_strict_after_any(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest_pg(e, UA, "a", "1", "GiB", "2M", NULL);
	const char *b = guest_pg(e, UB, "b", "128", "MiB", "2M", "0");

	e->f->avail[1][0] = e->f->avail[1][1] = 4096;
	assert_int_equal(hook(e, a, "prepare"), 0);
	assert_true(fake_total(e->f, 1) == 512);
	assert_int_equal(hook(e, b, "prepare"), 0);
	assert_null(strstr(e->err, "missing"));
	/* Only node 0 grew, by B's need. */
	assert_true(fake_node_total(e->f, 1, 0) == 256 + 64);
	assert_true(fake_node_total(e->f, 1, 1) == 256);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_int_equal(hook(e, b, "release"), 0);
	assert_true(fake_total(e->f, 1) == 0);
}

/* Bug 1 under load: 32 guests (strict on node 0, strict on node 1, any
 * node; 2M and 1G pages) prepare at once on a host with plenty of memory:
 * none is refused; then all are released at once: pools back to the start
 * (the host's own pages untouched). */
static void t_concurrent_32_mixed(void **state)
{
	struct hook_env *e = *state;
	enum { N = 32 };
	static const char *const place[4] = { "0", NULL, "1", NULL };
	char xml[N][PATH_MAX + 64], uuid[N][40];
	pid_t pid[N];
	struct snap start;
	uint64_t strict2m[2] = { 0, 0 };

	e->f->avail[0][0] = e->f->avail[0][1] = 64;
	e->f->avail[1][0] = e->f->avail[1][1] = 100000;
	fake_set_node(e->f, 1, 0, 40, 30); /* the host's own pages */
	fake_set_node(e->f, 1, 1, 8, 8);
	fake_set_node(e->f, 0, 0, 1, 1);
	snap_take(e, &start);
	for (int i = 0; i < N; i++) {
		char mib[16];

		snprintf(uuid[i], sizeof(uuid[i]), "3200%04x-1111-2222-3333-444444444444", i);
		if (i % 8 >= 6) {
			snprintf(xml[i], sizeof(xml[i]), "%s",
				 guest_pg(e, uuid[i], "g1", "2", "GiB", "1G", place[i % 4]));
			continue;
		}
		snprintf(mib, sizeof(mib), "%u", 64u * (1 + (unsigned)i % 5));
		snprintf(xml[i], sizeof(xml[i]), "%s",
			 guest_pg(e, uuid[i], "g", mib, "MiB", "2M", place[i % 4]));
		if (place[i % 4])
			strict2m[i % 4 == 0 ? 0 : 1] += 32u * (1 + (unsigned)i % 5);
	}
	for (int phase = 0; phase < 2; phase++) {
		for (int i = 0; i < N; i++) {
			pid[i] = fork();
			assert_true(pid[i] >= 0);
			if (pid[i] == 0) {
				char errf[PATH_MAX + 32];
				int r = hook(e, xml[i], phase ? "release" : "prepare");
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
		int status[N];

		/* Reap every child before any check can end the test. */
		for (int i = 0; i < N; i++)
			assert_int_equal(waitpid(pid[i], &status[i], 0), pid[i]);
		for (int i = 0; i < N; i++) {
			char errf[PATH_MAX + 32];
			int st = status[i];

			snprintf(errf, sizeof(errf), "%s/err-%d", e->dir, i);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
				fail_msg("%s of guest %d (%s): status %d: %s",
					 phase ? "release" : "prepare", i,
					 place[i % 4] ? place[i % 4] : "any", st, slurp(errf));
			assert_string_equal(slurp(errf), "");
		}
		if (phase == 0) {
			/* Every strict promise fits in the free pages of its node. */
			assert_true(e->f->free[1][0] >= strict2m[0]);
			assert_true(e->f->free[1][1] >= strict2m[1]);
		}
	}
	print_message("concurrent 32: all granted; after release 2M %llu+%llu, 1G %llu+%llu\n",
		      (unsigned long long)e->f->total[1][0], (unsigned long long)e->f->total[1][1],
		      (unsigned long long)e->f->total[0][0], (unsigned long long)e->f->total[0][1]);
	snap_check(e, &start, "after 32 releases");
	for (int i = 0; i < N; i++)
		assert_false(ledger_exists(e, uuid[i]));
}

/* Bug 2: pages a release had to keep (another guest's promise needed them)
 * are given back later, not orphaned. */
static void t_kept_pages_given_back(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, NULL), *b = guest(e, UB, "b", 2, NULL);

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	assert_int_equal(hook(e, a, "prepare"), 0);
	assert_int_equal(hook(e, a, "started"), 0);
	fake_set_node(e->f, 0, 0, 2, 0); /* A uses its pages */
	fake_set_node(e->f, 0, 1, 2, 0);
	assert_int_equal(hook(e, b, "prepare"), 0); /* grows 2; B starting */
	assert_true(TOTAL(e) == 6);
	/* A stops; a host process holds 2 of the free pages meanwhile. */
	fake_set_node(e->f, 0, 0, 3, 2);
	fake_set_node(e->f, 0, 1, 3, 2);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_non_null(strstr(slurp(e->log), "kept"));
	assert_true(TOTAL(e) == 4); /* 2 kept for B's promise */
	/* B runs and stops, the host process is gone. */
	assert_int_equal(hook(e, b, "started"), 0);
	fake_set_node(e->f, 0, 0, NODE(e, 0), NODE(e, 0));
	fake_set_node(e->f, 0, 1, NODE(e, 1), NODE(e, 1));
	assert_int_equal(hook(e, b, "release"), 0);
	assert_true(TOTAL(e) == 0);
	assert_false(ledger_exists(e, UA));
	assert_false(ledger_exists(e, UB));
}

/* Bug 3: a refused re-prepare of a guest whose entry survived restores the
 * pools it grew, also what it merged into the surviving record. */
static void t_refused_reprepare_restores(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 2, NULL);

	e->f->avail[0][0] = 2;
	e->f->avail[0][1] = 1;
	assert_int_equal(hook(e, a, "prepare"), 0);
	assert_true(NODE(e, 0) == 1 && NODE(e, 1) == 1);
	/* No release (libvirtd died); the guest is started again, larger. */
	a = guest(e, UA, "a", 6, NULL);
	assert_int_equal(hook(e, a, "prepare"), HV_EXIT_PARTIAL);
	assert_non_null(strstr(e->err, "pools restored"));
	assert_true(NODE(e, 0) == 1 && NODE(e, 1) == 1);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(TOTAL(e) == 0);
}

/* Bugs 4 and 5: kill -9 at every pool write of prepare (before and after
 * the kernel applied it), then each way libvirt and the host may go on;
 * pools must end exactly as they started, nothing taken from the host. */
enum { REC_RELEASE, REC_RECONNECT, REC_REPREPARE, REC_N };
static const char *const rec_name[REC_N] = { "release", "reconnect+prepare+release",
	"prepare+release" };

static void recover(struct hook_env *e, int how, const char *xml, int want_prepare)
{
	/* libvirtd restarts and reconnects to another, running guest. */
	if (how == REC_RECONNECT)
		assert_int_equal(hook(e, guest(e, UC, "other", 1, NULL), "reconnect"), 0);
	if (how != REC_RELEASE)
		assert_int_equal(hook(e, xml, "prepare"), want_prepare);
	assert_int_equal(hook(e, xml, "release"), 0);
}

struct kill_case {
	const char *name;
	unsigned g0, g1;      /* 2-cell guest; g1 == 0: any-node guest of g0 pages */
	uint64_t avail0, avail1;
	int want;             /* prepare's exit status without a kill */
};

static const struct kill_case kill_cases[] = {
	{ "any node, granted", 6, 0, 8, 8, 0 },
	{ "two strict cells, granted", 3, 3, 8, 8, 0 },
	{ "two strict cells, refused", 3, 4, 8, 1, HV_EXIT_PARTIAL },
};

static void kill_setup(struct hook_env *e, const struct kill_case *c)
{
	wipe_rundir(e);
	/* The host's own pages: node 0 has 4 (2 in use), node 1 has 1 free. */
	fake_set_node(e->f, 0, 0, 4, 2);
	fake_set_node(e->f, 0, 1, 1, 1);
	e->f->avail[0][0] = c->avail0;
	e->f->avail[0][1] = c->avail1;
}

static const char *kill_xml(struct hook_env *e, const struct kill_case *c)
{
	return c->g1 ? guest_2cells(e, UA, c->g0, c->g1) : guest(e, UA, "k", c->g0, NULL);
}

static void t_kill_prepare(void **state)
{
	struct hook_env *e = *state;
	unsigned kills = 0;

	for (size_t ci = 0; ci < HV_ARRAY_SIZE(kill_cases); ci++) {
		const struct kill_case *c = &kill_cases[ci];

		for (int before = 0; before < 2; before++)
			for (unsigned k = 1;; k++) {
				bool killed = false;

				for (int how = 0; how < REC_N; how++) {
					struct snap start;
					const char *x;
					int r;

					kill_setup(e, c);
					snap_take(e, &start);
					x = kill_xml(e, c);
					r = hook_child(e, x, "prepare", k, before);
					if (r != -SIGKILL) {
						assert_int_equal(r, c->want);
						break;
					}
					killed = true;
					recover(e, how, x, c->want);
					if (e->f->total[0][0] != start.t[0][0] ||
					    e->f->total[0][1] != start.t[0][1])
						fail_msg("%s: killed %s pool write %u of prepare, "
							 "then %s: 1G pools %llu+%llu, expected "
							 "%llu+%llu", c->name, before ? "before" :
							 "after", k, rec_name[how],
							 (unsigned long long)e->f->total[0][0],
							 (unsigned long long)e->f->total[0][1],
							 (unsigned long long)start.t[0][0],
							 (unsigned long long)start.t[0][1]);
					assert_false(ledger_exists(e, UA));
				}
				if (!killed)
					break;
				kills++;
			}
	}
	print_message("kill prepare: %u kill points, each followed by %d recoveries\n",
		      kills, REC_N);
	assert_true(kills >= 8);
}

static void t_kill_release(void **state)
{
	struct hook_env *e = *state;
	unsigned kills = 0;

	for (size_t ci = 0; ci < 2; ci++) {
		const struct kill_case *c = &kill_cases[ci];

		for (int before = 0; before < 2; before++)
			for (unsigned k = 1;; k++) {
				bool killed = false;

				for (int how = 0; how < REC_N; how++) {
					struct snap start;
					const char *x;
					int r;

					kill_setup(e, c);
					x = kill_xml(e, c);
					assert_int_equal(hook(e, x, "prepare"), 0);
					assert_int_equal(hook(e, x, "started"), 0);
					/* The guest stopped; the host's process freed
					 * its pages too: all free now. */
					for (int i = 0; i < 2; i++)
						fake_set_node(e->f, 0, i, NODE(e, i), NODE(e, i));
					start.t[0][0] = 4;
					start.t[0][1] = 1;
					r = hook_child(e, x, "release", k, before);
					if (r != -SIGKILL) {
						assert_int_equal(r, 0);
						assert_true(NODE(e, 0) == 4 && NODE(e, 1) == 1);
						break;
					}
					killed = true;
					recover(e, how, x, 0);
					if (e->f->total[0][0] != start.t[0][0] ||
					    e->f->total[0][1] != start.t[0][1])
						fail_msg("%s: killed %s pool write %u of release, "
							 "then %s: 1G pools %llu+%llu, expected "
							 "%llu+%llu", c->name, before ? "before" :
							 "after", k, rec_name[how],
							 (unsigned long long)e->f->total[0][0],
							 (unsigned long long)e->f->total[0][1],
							 (unsigned long long)start.t[0][0],
							 (unsigned long long)start.t[0][1]);
					assert_false(ledger_exists(e, UA));
				}
				if (!killed)
					break;
				kills++;
			}
	}
	print_message("kill release: %u kill points, each followed by %d recoveries\n",
		      kills, REC_N);
	assert_true(kills >= 4);
}

/* Bug 6: a guest no node could ever hold is refused before any write. */
static void t_oversized_refused(void **state)
{
	struct hook_env *e = *state;
	static const struct {
		const char *amount, *unit, *page, *nodes, *what;
	} big[] = {
		{ "15", "EiB", "1G", NULL, "15E" },
		{ "18446744073709551615", "b", "2M", NULL, "16E" },
		{ "1", "TiB", "1G", NULL, "1T" },
		{ "100", "GiB", "1G", "0", "100G" },
		{ "200", "GiB", "2M", "1", "200G" },
	};
	char p[PATH_MAX + 64];

	e->f->avail[0][0] = e->f->avail[0][1] = 1000000;
	e->f->avail[1][0] = e->f->avail[1][1] = 100000000;
	for (size_t i = 0; i < HV_ARRAY_SIZE(big); i++) {
		const char *x = guest_pg(e, UA, "huge", big[i].amount, big[i].unit, big[i].page,
					 big[i].nodes);

		e->f->writes = 0;
		assert_int_equal(hook_child(e, x, "prepare", 0, false), HV_EXIT_PARTIAL);
		if (e->f->writes != 0)
			fail_msg("%s %s: %u writes before the refusal", big[i].amount,
				 big[i].unit, e->f->writes);
		assert_int_equal(hook_child(e, x, "release", 0, false), 0);
	}
	/* The message names the guest's size and the host's. */
	assert_int_equal(hook(e, guest_pg(e, UA, "huge", "1", "TiB", "1G", NULL), "prepare"),
			 HV_EXIT_PARTIAL);
	assert_non_null(strstr(e->err, "1.0 TiB"));
	assert_non_null(strstr(e->err, "128.0 GiB"));
	assert_false(ledger_exists(e, UA));
	/* HOST_RESERVE counts: 60 GiB strict on a 64 GiB node with 8 GiB kept
	 * for the host is refused, 50 GiB is granted. */
	put(e->conf, "HOST_RESERVE=8G\nPOOL_1G=50%\n");
	assert_int_equal(hook(e, guest_pg(e, UA, "h", "60", "GiB", "1G", "0"), "prepare"),
			 HV_EXIT_PARTIAL);
	assert_non_null(strstr(e->err, "HOST_RESERVE"));
	assert_true(TOTAL(e) == 0);
	assert_int_equal(hook(e, guest_pg(e, UA, "h", "50", "GiB", "1G", "0"), "prepare"), 0);
	assert_true(NODE(e, 0) == 50);
	snprintf(p, sizeof(p), "%s", guest_pg(e, UA, "h", "50", "GiB", "1G", "0"));
	assert_int_equal(hook(e, p, "release"), 0);
	assert_true(TOTAL(e) == 0);
}

/* The bound counts 1G pages taken at boot, which MemTotal leaves out,
 * unless they come from a hugetlb_cma= area (inside MemTotal). */
static void t_capacity_boot_pages(void **state)
{
	struct hook_env *e = *state;
	const char *x = guest_pg(e, UA, "big", "80", "GiB", "1G", "0");

	fake_set_node(e->f, 0, 0, 40, 40); /* boot pages; node MemTotal 64 GiB */
	e->f->avail[0][0] = 40;
	assert_int_equal(hook(e, x, "prepare"), 0);
	assert_true(NODE(e, 0) == 80);
	assert_int_equal(hook(e, x, "release"), 0);
	assert_true(NODE(e, 0) == 40);
	fake_write(e->f, "/proc/cmdline", "root=/dev/vda1 hugetlb_cma=0:40G\n");
	e->f->writes = 0;
	assert_int_equal(hook(e, x, "prepare"), HV_EXIT_PARTIAL);
	assert_non_null(strstr(e->err, "could ever hold 64.0 GiB"));
	assert_int_equal(e->f->writes, 0);
}

/* The real binary, exec'd under the name hvokit as libvirt runs
 * hooks/qemu.d/hvokit: DOMAIN OPERATION SUB-OP EXTRA, XML on stdin. */
static void t_called_as_hvokit(void **state)
{
	struct hook_env *e = *state;
	const char *bin = getenv("HVOCTL_BIN");
	const char *x = guest(e, UA, "web", 2, NULL);
	char link[PATH_MAX + 32], out[PATH_MAX + 32];
	static const char *const ops[] = { "prepare", "started", "release" };

	if (!bin || !*bin)
		skip();
	snprintf(link, sizeof(link), "%s/hvokit", e->dir);
	snprintf(out, sizeof(out), "%s/stdout", e->dir);
	assert_int_equal(symlink(bin, link), 0);
	fake_set_node(e->f, 0, 0, 2, 2); /* the pool suffices: no write */
	for (size_t i = 0; i < HV_ARRAY_SIZE(ops); i++) {
		pid_t pid = fork();
		int st;

		assert_true(pid >= 0);
		if (pid == 0) {
			int in = open(x, O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

			if (in < 0 || o < 0 || dup2(in, 0) < 0 || dup2(o, 1) < 0)
				_exit(99);
			setenv("HVOCTL_SYSROOT", e->f->root, 1);
			setenv("HVOCTL_RUNDIR", e->rundir, 1);
			setenv("HVOCTL_LIBVIRT_RUNDIR", e->lvdir, 1);
			setenv("HVOKIT_CONF", e->conf, 1);
			execl(link, link, "web", ops[i], "begin", "-", (char *)NULL);
			_exit(98);
		}
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		assert_string_equal(slurp(out), "");
		if (i == 0)
			assert_non_null(strstr(ledger(e, UA), "need 1048576 any any 2"));
		if (i == 1)
			assert_non_null(strstr(ledger(e, UA), "state running"));
	}
	assert_false(ledger_exists(e, UA));
	assert_non_null(strstr(slurp(e->log), "granted"));
}

/* Bug 7: an absurd Hugepagesize in /proc/meminfo is not trusted. */
static void t_bad_hugepagesize(void **state)
{
	struct hook_env *e = *state;
	static const char *const bad[] = { "0", "36028797018963968", "3", "18446744073709551615",
		"x" };
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/default-hp.xml", TEST_XML_DIR);
	for (size_t i = 0; i < HV_ARRAY_SIZE(bad); i++) {
		int r;

		fake_write(e->f, "/proc/meminfo", "MemTotal: 16000000 kB\nHugepagesize: %s kB\n",
			   bad[i]);
		r = hook_child(e, p, "prepare", 0, false);
		if (r != HV_EXIT_ERROR)
			fail_msg("Hugepagesize %s: prepare status %d, expected a refusal", bad[i], r);
		r = hook_child(e, p, "release", 0, false);
		if (r != 0)
			fail_msg("Hugepagesize %s: release status %d, expected 0", bad[i], r);
		assert_int_equal(hook_child(e, p, "reconnect", 0, false), 0);
	}
	assert_int_equal(hook(e, p, "prepare"), HV_EXIT_ERROR);
	assert_non_null(strstr(e->err, "Hugepagesize"));
	assert_int_equal(e->f->writes, 0);
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
		cmocka_unit_test_setup_teardown(t_strict_after_any, setup, teardown),
		cmocka_unit_test_setup_teardown(t_concurrent_32_mixed, setup, teardown),
		cmocka_unit_test_setup_teardown(t_kept_pages_given_back, setup, teardown),
		cmocka_unit_test_setup_teardown(t_refused_reprepare_restores, setup, teardown),
		cmocka_unit_test_setup_teardown(t_kill_prepare, setup, teardown),
		cmocka_unit_test_setup_teardown(t_kill_release, setup, teardown),
		cmocka_unit_test_setup_teardown(t_oversized_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(t_capacity_boot_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(t_bad_hugepagesize, setup, teardown),
		cmocka_unit_test_setup_teardown(t_called_as_hvokit, setup, teardown),
		cmocka_unit_test_setup_teardown(t_ledger_format2_upgrade, setup, teardown),
	};

	return cmocka_run_group_tests_name("libvirt-hook", tests, NULL, NULL);
}
