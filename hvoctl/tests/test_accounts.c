/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Issue 36: the libvirt hook never takes pages that are not its guest's.
 * Pages that leave a pool by another route (the administrator shrinks it,
 * a node's pool is dissolved, an absurd count in an old entry) must not
 * make a later release or reconnect take the host's pages; a .tmp entry
 * that is a link or no regular file is removed, never followed.  Run
 * through the hook's entry point against the fake kernel of fake.c.
 */
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
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fake.h"
#include "hookenv.h"
#include "sysfs.h"
#include "util.h"

#define UA "aaaaaaaa-0000-0000-0000-000000000001"
#define UB "bbbbbbbb-0000-0000-0000-000000000002"
#define UN "eeeeeeee-0000-0000-0000-000000000005"

/* A guest without huge pages, for "an unrelated reconnect". */
static const char *nohp(struct hook_env *e)
{
	static char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/nohp.xml", e->dir);
	return path;
}

static int setup(void **state)
{
	struct hook_env *e = hook_env_new("acct");

	if (!e)
		return -1;
	put(nohp(e), "<domain type='kvm'><name>plain</name><uuid>" UN "</uuid>"
		     "<memory unit='GiB'>1</memory></domain>\n");
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	hook_env_free(*state);
	return 0;
}

/* An unrelated guest (no huge pages) after a libvirtd restart. */
static void reconnect_other(struct hook_env *e)
{
	assert_int_equal(hook(e, nohp(e), "reconnect"), 0);
	assert_string_equal(e->out, "");
}

#define NODE(e, i) fake_node_total((e)->f, 0, (i))

/* Guest 'a' (UA) started through the hook, libvirt's status file for it
 * written, and all its pages (the whole node's pool) in use. */
static void start_and_use(struct hook_env *e, const char *xml, int ni)
{
	char p[PATH_MAX + 16];

	assert_int_equal(hook(e, xml, "prepare"), 0);
	assert_int_equal(hook(e, xml, "started"), 0);
	snprintf(p, sizeof(p), "%s/a.xml", e->lvdir);
	put(p, "<domstatus><domain><name>a</name><uuid>" UA "</uuid></domain></domstatus>");
	fake_set_node(e->f, 0, ni, NODE(e, ni), 0);
}

/* Guest 'a' stopped: libvirt's status file gone (its release follows). */
static void stopped(struct hook_env *e)
{
	char p[PATH_MAX + 16];

	snprintf(p, sizeof(p), "%s/a.xml", e->lvdir);
	unlink(p);
}

/*
 * The administrator shrinks node 0's pool to 0 while guest A runs (its
 * 4 pages become surplus: in use, counted, no longer persistent).  A stops
 * (the kernel frees the surplus pages), its release runs, then the
 * administrator sets 40 pages aside for the host: an unrelated reconnect
 * must leave them.
 */
static void t_admin_shrink_then_release(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	assert_true(NODE(e, 0) == 4);
	fake_set_node_surplus(e->f, 0, 0, 4, 0, 4); /* echo 0 > nr_hugepages */
	fake_set_node_surplus(e->f, 0, 0, 0, 0, 0); /* A stops */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 0);
	assert_false(ledger_exists(e, UA)); /* nothing of it can come back */
	fake_set_node(e->f, 0, 0, 40, 40); /* the host's own pages */
	reconnect_other(e);
	assert_true(NODE(e, 0) == 40);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 40);
}

/*
 * The same while A still runs, seen by an unrelated hook call in between:
 * shrink to 0 (A's pages surplus), a reconnect, the administrator sets 40
 * (the kernel turns A's 4 surplus pages back into persistent ones and adds
 * 36), A stops: its release must leave the 40.
 */
static void t_admin_shrink_regrow_while_running(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	fake_set_node_surplus(e->f, 0, 0, 4, 0, 4);
	reconnect_other(e);
	fake_set_node_surplus(e->f, 0, 0, 40, 36, 0);
	fake_set_node(e->f, 0, 0, 40, 40); /* A stops */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 40);
	assert_false(ledger_exists(e, UA));
	reconnect_other(e);
	assert_true(NODE(e, 0) == 40);
}

/* Pages the administrator added while a guest runs are the host's; the
 * guest's own still go back (the accounts are not simply dropped). */
static void t_admin_grow_keeps_guest_pages(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	fake_set_node(e->f, 0, 0, 14, 10); /* echo 14 > nr_hugepages */
	reconnect_other(e);
	fake_set_node(e->f, 0, 0, 14, 14); /* A stops */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 10);
	assert_false(ledger_exists(e, UA));
}

/*
 * Node 0's memory goes offline while strict guest A runs there: its pool
 * pages are dissolved.  A's release finds nothing; the node comes back and
 * the host reserves 100 pages there: later hook calls leave them, and A's
 * entry has ended instead of recording pages that no longer exist.
 */
static void t_node_dissolved(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 12, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	assert_true(NODE(e, 0) == 12);
	fake_set_node(e->f, 0, 0, 0, 0); /* offline: dissolved */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	fake_set_node(e->f, 0, 0, 100, 100); /* back; the host reserves 100 */
	reconnect_other(e);
	assert_true(NODE(e, 0) == 100);
	assert_false(ledger_exists(e, UA));
	assert_int_equal(hook(e, a, "release"), 0);
	reconnect_other(e);
	assert_true(NODE(e, 0) == 100);
}

/* The same with the node gone from the host (hot-removed) while the
 * release runs, then back. */
static void t_node_removed(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 12, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	fake_write(e->f, "/sys/devices/system/node/online", "1\n");
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	fake_write(e->f, "/sys/devices/system/node/online", "0-1\n");
	fake_set_node(e->f, 0, 0, 100, 100);
	reconnect_other(e);
	assert_true(NODE(e, 0) == 100);
	assert_false(ledger_exists(e, UA));
}

/* An entry of the old line format with an absurd count (2^64-1 pages
 * added): what it gives back is bounded by what the hook can have added,
 * never the host's own pages. */
static void absurd_entry(struct hook_env *e, const char *state)
{
	char p[PATH_MAX + 128], text[512];

	mkdir(e->rundir, 0700);
	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, UA);
	snprintf(text, sizeof(text), "hvokit-ledger 2\nuuid " UA "\nname 61\ntruncated 0\n"
		 "state %s\ntime 1\nadded 1048576 0 18446744073709551615\n", state);
	put(p, text);
}

static void t_absurd_count_seen_host(void **state)
{
	struct hook_env *e = *state;

	fake_set_node(e->f, 0, 0, 40, 40); /* the host's own */
	reconnect_other(e);                 /* a hook call sees them */
	absurd_entry(e, "released");
	reconnect_other(e);
	assert_true(NODE(e, 0) == 40);
	assert_false(ledger_exists(e, UA));
	reconnect_other(e);
	assert_true(NODE(e, 0) == 40);
}

static void t_absurd_count_configured(void **state)
{
	struct hook_env *e = *state;

	/* An upgrade: no hook call has seen the pool, hvokit.conf says what
	 * the host holds for itself. */
	put(e->conf, "POOL_1G=0:40,1:0\n");
	fake_set_node(e->f, 0, 0, 40, 40);
	absurd_entry(e, "released");
	reconnect_other(e);
	assert_true(NODE(e, 0) == 40);
	assert_false(ledger_exists(e, UA));
}

/* A guest that runs, with an absurd count: its release gives back at most
 * the pages the pool holds beyond the host's. */
static void t_absurd_count_running(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 2, "0");

	fake_set_node(e->f, 0, 0, 40, 40);
	reconnect_other(e);
	absurd_entry(e, "running");
	fake_set_node(e->f, 0, 0, 42, 42); /* 2 pages more: at most those */
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) >= 40);
	assert_false(ledger_exists(e, UA));
}

/* guest-UUID.ledger.tmp as a symbolic link (to a file elsewhere, or
 * dangling), a directory or a FIFO: removed, never followed, and the
 * prepare goes on. */
static void t_tmp_not_regular(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 2, NULL);
	char tmp[PATH_MAX + 128], target[PATH_MAX + 16];
	struct stat st;

	e->f->avail[0][0] = e->f->avail[0][1] = 8;
	mkdir(e->rundir, 0700);
	snprintf(tmp, sizeof(tmp), "%s/guest-%s.ledger.tmp", e->rundir, UA);
	snprintf(target, sizeof(target), "%s/victim", e->dir);
	put(target, "keep me\n");
	for (int kind = 0; kind < 4; kind++) {
		if (kind == 0)
			assert_int_equal(symlink(target, tmp), 0);
		else if (kind == 1)
			assert_int_equal(symlink("/nonexistent/hvokit", tmp), 0);
		else if (kind == 2)
			assert_int_equal(mkdir(tmp, 0700), 0);
		else
			assert_int_equal(mkfifo(tmp, 0600), 0);
		assert_int_equal(hook(e, a, "prepare"), 0);
		assert_true(ledger_exists(e, UA));
		assert_true(lstat(tmp, &st) != 0 || S_ISREG(st.st_mode));
		assert_string_equal(slurp(target), "keep me\n");
		assert_int_equal(hook(e, a, "release"), 0);
		assert_false(ledger_exists(e, UA));
		assert_true(fake_total(e->f, 0) == 0);
	}
}

/*
 * kill -9 between a reconcile's entry writes and its host.pools write:
 * the next call, finding the entries changed and the old host.pools,
 * reaches the same floors and records as an uninterrupted run.
 */
static void t_reconcile_repeatable(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, "0");
	char hp[PATH_MAX + 32], before[4096], after[4096];

	e->f->avail[0][0] = 100;
	fake_set_node(e->f, 0, 0, 6, 0); /* 6 pages of the host's own, in use */
	reconnect_other(e);
	start_and_use(e, a, 0);
	assert_true(NODE(e, 0) == 10);
	snprintf(hp, sizeof(hp), "%s/host.pools", e->rundir);
	snprintf(before, sizeof(before), "%s", slurp(hp));
	fake_set_node_surplus(e->f, 0, 0, 10, 0, 7); /* echo 3 > nr_hugepages */
	reconnect_other(e);
	snprintf(after, sizeof(after), "%s", slurp(hp));
	assert_string_not_equal(before, after);
	/* As if killed before host.pools was replaced. */
	put(hp, before);
	reconnect_other(e);
	assert_string_equal(slurp(hp), after);
	/* And nothing of A can go back: its pages left the pool. */
	fake_set_node(e->f, 0, 0, 3, 3); /* A stops, surplus freed */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 3);
	assert_false(ledger_exists(e, UA));
}

/* hvoctl reserve, as the administrator's tool */
static int reserve(struct hook_env *e, const char *size, const char *count)
{
	int r;

	free(e->out);
	free(e->err);
	e->out = e->err = NULL;
	setenv("HVOCTL_RUNDIR", e->rundir, 1);
	r = fake_run(&e->out, &e->err, "--sysroot", e->f->root, "reserve", size, count,
		     "--retries", "0", NULL);
	unsetenv("HVOCTL_RUNDIR");
	return r;
}

/*
 * The administrator shrinks node 0's pool through sysfs below the pages a
 * running guest uses (no hook call sees it), then sets 40 pages aside with
 * hvoctl reserve: the kernel turns the surplus pages back into pool pages,
 * so the counts look as if the 40 were 36 more.  hvoctl reserve writes
 * under the hook's lock and reconciles before and after its write, so the
 * 40 are the host's and A's release leaves them.
 */
static void t_reserve_after_sysfs_shrink(void **state)
{
	struct hook_env *e = *state;
	const char *a = guest(e, UA, "a", 4, "0");

	e->f->avail[0][0] = 100;
	start_and_use(e, a, 0);
	assert_true(NODE(e, 0) == 4);
	fake_set_node_surplus(e->f, 0, 0, 4, 0, 4); /* echo 0 > nr_hugepages */
	assert_int_equal(reserve(e, "1G", "0:40,1:0"), 0);
	assert_true(NODE(e, 0) == 40 && e->f->surplus[0][0] == 0);
	fake_set_node(e->f, 0, 0, 40, 40); /* A stops */
	stopped(e);
	assert_int_equal(hook(e, a, "release"), 0);
	assert_true(NODE(e, 0) == 40);
	assert_false(ledger_exists(e, UA));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(t_admin_shrink_then_release, setup, teardown),
		cmocka_unit_test_setup_teardown(t_admin_shrink_regrow_while_running, setup,
						teardown),
		cmocka_unit_test_setup_teardown(t_admin_grow_keeps_guest_pages, setup, teardown),
		cmocka_unit_test_setup_teardown(t_node_dissolved, setup, teardown),
		cmocka_unit_test_setup_teardown(t_node_removed, setup, teardown),
		cmocka_unit_test_setup_teardown(t_absurd_count_seen_host, setup, teardown),
		cmocka_unit_test_setup_teardown(t_absurd_count_configured, setup, teardown),
		cmocka_unit_test_setup_teardown(t_absurd_count_running, setup, teardown),
		cmocka_unit_test_setup_teardown(t_tmp_not_regular, setup, teardown),
		cmocka_unit_test_setup_teardown(t_reconcile_repeatable, setup, teardown),
		cmocka_unit_test_setup_teardown(t_reserve_after_sysfs_shrink, setup, teardown),
	};

	return cmocka_run_group_tests_name("hook accounts", tests, NULL, NULL);
}
