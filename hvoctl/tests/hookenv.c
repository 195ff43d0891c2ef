/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "hookenv.h"

struct hook_env *hook_env_new(const char *name)
{
	static const uint64_t mem[] = { 64 * GIB_KB, 64 * GIB_KB };
	struct hook_env *e = calloc(1, sizeof(*e));
	char dir[PATH_MAX];

	if (!e)
		return NULL;
	/* shared memory: forked hooks update one fake kernel */
	e->f = mmap(NULL, sizeof(*e->f), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (e->f == MAP_FAILED) {
		free(e);
		return NULL;
	}
	fake_init(e->f, 2, NULL, mem, true);
	fake_kernel_on(e->f);
	snprintf(dir, sizeof(dir), "/tmp/hvoctl-%s.XXXXXX", name);
	if (!mkdtemp(dir)) {
		hook_env_free(e);
		return NULL;
	}
	memcpy(e->dir, dir, sizeof(dir));
	snprintf(e->rundir, sizeof(e->rundir), "%s/run", e->dir);
	snprintf(e->lvdir, sizeof(e->lvdir), "%s/libvirt", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/log", e->dir);
	snprintf(e->conf, sizeof(e->conf), "%s/hvokit.conf", e->dir);
	mkdir(e->lvdir, 0755);
	setenv("HVOCTL_HOOK_LOG", e->log, 1);
	return e;
}

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

void rm_tree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void hook_env_free(struct hook_env *e)
{
	free(e->out);
	free(e->err);
	fake_free(e->f);
	munmap(e->f, sizeof(*e->f));
	if (e->dir[0])
		rm_tree(e->dir);
	unsetenv("HVOCTL_HOOK_LOG");
	free(e);
}

void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

const char *slurp(const char *path)
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

const char *guest_pg(struct hook_env *e, const char *uuid, const char *name,
		     const char *amount, const char *unit, const char *page,
		     const char *nodes)
{
	static char paths[8][PATH_MAX + 64];
	static unsigned next;
	char *path = paths[next++ % 8], xml[2048];

	snprintf(xml, sizeof(xml),
		 "<domain type='kvm'><name>%s</name><uuid>%s</uuid>"
		 "<memory unit='%s'>%s</memory><memoryBacking><hugepages>"
		 "<page size='%.1s' unit='%s'/></hugepages></memoryBacking>%s%s%s</domain>\n",
		 name, uuid, unit, amount, page, page + 1,
		 nodes ? "<numatune><memory mode='strict' nodeset='" : "",
		 nodes ? nodes : "", nodes ? "'/></numatune>" : "");
	snprintf(path, sizeof(paths[0]), "%s/%s-%s.xml", e->dir, uuid, page);
	put(path, xml);
	return path;
}

const char *guest(struct hook_env *e, const char *uuid, const char *name,
		  unsigned pages, const char *nodes)
{
	char amount[16];

	snprintf(amount, sizeof(amount), "%u", pages);
	return guest_pg(e, uuid, name, amount, "GiB", "1G", nodes);
}

/*
 * The lock is waited for long enough that 32 hooks under ASan queued on a
 * loaded 2-core machine all get it (10 s was not): these tests are about
 * what the hooks decide, not how fast.  The timeout itself is tested with
 * --lock-timeout 0.
 */
int hook(struct hook_env *e, const char *xml, const char *op)
{
	free(e->out);
	free(e->err);
	e->out = e->err = NULL;
	return fake_run(&e->out, &e->err, "--sysroot", e->f->root, "--config", e->conf,
			"libvirt-hook", "--rundir", e->rundir, "--libvirt-rundir", e->lvdir,
			"--xml", xml, "--retries", "0", "--retry-delay", "0",
			"--lock-timeout", "300", "--", "guest", op, "begin", "-", NULL);
}

bool ledger_exists(struct hook_env *e, const char *uuid)
{
	char p[PATH_MAX + 128];

	snprintf(p, sizeof(p), "%s/guest-%s.ledger", e->rundir, uuid);
	return access(p, F_OK) == 0;
}
