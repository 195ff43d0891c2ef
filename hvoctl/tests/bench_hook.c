/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench_hook HVOCTL XMLDIR RUNS [WRAPPER]: latency of "hvoctl libvirt-hook
 * prepare" when the pool already suffices, measured as libvirt runs a hook
 * (fork + exec, domain XML on stdin), on a fake sysfs tree with 2 NUMA
 * nodes in a temporary directory ($TMPDIR or /tmp: on a host /run/hvokit
 * is a tmpfs, so TMPDIR=/dev/shm measures what a host does; on ext4 each
 * ledger rename costs a data flush).  Also the no-huge-page fast path, the
 * binary exec'd directly as hooks/qemu.d/hvokit (a symbolic link named
 * hvokit, as the Debian package installs it and libvirt runs it), the path through the /bin/sh wrapper WRAPPER
 * (libvirt-hooks/hvokit) if given, and two baselines: /bin/true and
 * "hvoctl --version" (process start plus loading hvoctl's libraries).
 * With BENCH_OTHER=PATH (another hvoctl build), both builds run as
 * qemu.d/hvokit call by call in turn, with /bin/true, so that they are
 * compared under the same load.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[256], rundir[300], logf[300];

static void put(const char *rel, const char *text)
{
	char p[1024];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	f = fopen(p, "w");
	if (!f) {
		perror(p);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static void tree(void)
{
	static const char *const g[] = { "nr_hugepages", "free_hugepages", "resv_hugepages",
		"surplus_hugepages", "nr_overcommit_hugepages" };
	char rel[256];

	put("/sys/devices/system/node/online", "0-1\n");
	for (int n = 0; n < 2; n++) {
		snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/meminfo", n);
		put(rel, "Node 0 MemTotal:       67108864 kB\n");
		for (int s = 0; s < 2; s++) {
			const char *kb = s ? "2048" : "1048576";

			snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/hugepages/"
				 "hugepages-%skB/nr_hugepages", n, kb);
			put(rel, s ? "0\n" : "4\n");
			snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/hugepages/"
				 "hugepages-%skB/free_hugepages", n, kb);
			put(rel, s ? "0\n" : "4\n");
			snprintf(rel, sizeof(rel), "/sys/devices/system/node/node%d/hugepages/"
				 "hugepages-%skB/surplus_hugepages", n, kb);
			put(rel, "0\n");
		}
	}
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 5; i++) {
			snprintf(rel, sizeof(rel), "/sys/kernel/mm/hugepages/hugepages-%skB/%s",
				 s ? "2048" : "1048576", g[i]);
			put(rel, !s && i < 2 ? "8\n" : "0\n");
		}
	put("/proc/meminfo", "MemTotal: 134217728 kB\nHugepagesize:       2048 kB\n");
	put("/proc/cmdline", "root=/dev/vda1 hugetlb_cma=0:8G,1:8G\n");
	put("/proc/sys/vm/hugetlb_optimize_vmemmap", "1\n");
	put("/proc/sys/kernel/osrelease", "6.1.0\n");
	put("/proc/self/mounts", "proc /proc proc rw 0 0\n");
}

static double run(char *const argv[], const char *xml)
{
	struct timespec a, b;
	int st, fd;
	pid_t p;

	clock_gettime(CLOCK_MONOTONIC, &a);
	p = fork();
	if (p == 0) {
		fd = open(xml, O_RDONLY);
		dup2(fd, 0);
		fd = open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	waitpid(p, &st, 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench_hook: %s exited with %d\n", argv[0], WEXITSTATUS(st));
		exit(1);
	}
	return (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static void report(const char *what, double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	printf("bench-hook: %-44s runs %d  min %.2f  median %.2f  p95 %.2f  max %.2f ms\n",
	       what, n, v[0], v[n / 2], v[(n * 95) / 100], v[n - 1]);
}

int main(int argc, char **argv)
{
	char x1g[1024], xnone[1024];
	int n;
	double *t;

	if (argc < 4) {
		fprintf(stderr, "usage: bench_hook HVOCTL XMLDIR RUNS [WRAPPER]\n");
		return 2;
	}
	n = atoi(argv[3]);
	if (n < 1 || !(t = calloc((size_t)n, sizeof(*t))))
		return 2;
	snprintf(root, sizeof(root), "%s/hvoctl-bench.XXXXXX",
		 getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 200 ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	snprintf(rundir, sizeof(rundir), "%s/run", root);
	snprintf(logf, sizeof(logf), "%s/log", root);
	tree();
	setenv("HVOCTL_SYSROOT", root, 1);
	setenv("HVOCTL_RUNDIR", rundir, 1);
	setenv("HVOCTL_LIBVIRT_RUNDIR", root, 1);
	setenv("HVOCTL_HOOK_LOG", logf, 1);
	setenv("HVOKIT_CONF", "/nonexistent", 1);
	setenv("HVOCTL", argv[1], 1);
	snprintf(x1g, sizeof(x1g), "%s/simple-1g.xml", argv[2]);
	snprintf(xnone, sizeof(xnone), "%s/none.xml", argv[2]);
	{
		char *prep[] = { argv[1], "libvirt-hook", "--", "web1", "prepare", "begin", "-", NULL };
		char *rel[] = { argv[1], "libvirt-hook", "--", "web1", "release", "end", "-", NULL };

		for (int i = 0; i < n; i++) {
			t[i] = run(prep, x1g);
			run(rel, x1g);
		}
		report("prepare, 4x1G, pool suffices (exec hvoctl)", t, n);
		for (int i = 0; i < n; i++)
			t[i] = run(prep, xnone);
		report("prepare, no huge pages (fast path)", t, n);
	}
	{
		char hookbin[400], cmd[1200];
		char *d[] = { hookbin, "web1", "prepare", "begin", "-", NULL };
		char *rel[] = { argv[1], "libvirt-hook", "--", "web1", "release", "end", "-", NULL };
		char *tru[] = { "/bin/true", NULL };
		char *ver[] = { argv[1], "--version", NULL };

		snprintf(hookbin, sizeof(hookbin), "%s/qemu.d/hvokit", root);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/qemu.d && ln -s %s %s", root, argv[1], hookbin);
		if (system(cmd) != 0)
			return 1;
		for (int i = 0; i < n; i++) {
			t[i] = run(d, x1g);
			run(rel, x1g);
		}
		report("prepare, via the link qemu.d/hvokit", t, n);
		for (int i = 0; i < n; i++)
			t[i] = run(tru, xnone);
		report("baseline: /bin/true", t, n);
		for (int i = 0; i < n; i++)
			t[i] = run(ver, xnone);
		report("baseline: hvoctl --version", t, n);
	}
	if (getenv("BENCH_OTHER")) {
		/* Paired with another build, call by call, so that both see the
		 * same load: this binary, the other, /bin/true, in turn. */
		const char *other = getenv("BENCH_OTHER");
		char a[400], b[400], cmd[4096];
		char *da[] = { a, "web1", "prepare", "begin", "-", NULL };
		char *db[] = { b, "web1", "prepare", "begin", "-", NULL };
		char *ra[] = { a, "web1", "release", "end", "-", NULL };
		char *rb[] = { b, "web1", "release", "end", "-", NULL };
		char *tru[] = { "/bin/true", NULL };
		double *u = calloc((size_t)n, sizeof(*u)), *v = calloc((size_t)n, sizeof(*v));

		if (!u || !v)
			return 2;
		snprintf(a, sizeof(a), "%s/qemu.d-a/hvokit", root);
		snprintf(b, sizeof(b), "%s/qemu.d-b/hvokit", root);
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/qemu.d-a %s/qemu.d-b && ln -s %s %s && ln -s %s %s",
			 root, root, argv[1], a, other, b);
		if (system(cmd) != 0)
			return 1;
		for (int i = 0; i < n; i++) {
			t[i] = run(da, x1g);
			run(ra, x1g);
			u[i] = run(db, x1g);
			run(rb, x1g);
			v[i] = run(tru, xnone);
		}
		report("paired: prepare, this build as qemu.d/hvokit", t, n);
		report("paired: prepare, BENCH_OTHER as qemu.d/hvokit", u, n);
		report("paired: /bin/true", v, n);
		free(u);
		free(v);
	}
	if (argc > 4) {
		char *w[] = { "/bin/sh", argv[4], "web1", "prepare", "begin", "-", NULL };
		char *rel[] = { argv[1], "libvirt-hook", "--", "web1", "release", "end", "-", NULL };

		for (int i = 0; i < n; i++) {
			t[i] = run(w, x1g);
			run(rel, x1g);
		}
		report("prepare via libvirt-hooks/hvokit (sh + exec)", t, n);
	}
	{
		char cmd[1200];

		fflush(stdout);
		snprintf(cmd, sizeof(cmd), "grep -c 'granted' %s | sed 's/^/bench-hook: grants logged: /';"
			 " rm -rf %s", logf, root);
		if (system(cmd) != 0)
			return 1;
	}
	return 0;
}
