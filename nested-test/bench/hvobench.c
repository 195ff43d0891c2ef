// SPDX-License-Identifier: GPL-2.0
/*
 * hvobench - how much HVO costs when huge page pools change.
 *
 * In the guest (static, from the bench initramfs):
 *   hvobench pool SIZE_KB COUNT ROUNDS
 *	alternately with vm.hugetlb_optimize_vmemmap off and on, grow the pool
 *	of SIZE_KB pages from 0 to COUNT and shrink it back, ROUNDS times;
 *	prints "HVOBENCH: sample KERNEL METRIC MODE SECONDS" lines.
 *   hvobench uptime METRIC MODE
 *	prints the seconds since boot as one sample (boot to ready pool).
 *   hvobench initcall METRIC MODE FUNCTION
 *	prints the time the initcall FUNCTION took as one sample, from the
 *	"initcall FUNCTION+... returned ... after N usecs" line that
 *	initcall_debug puts in the kernel log (hugetlb_init: gathering the
 *	boot-time pages and optimizing their vmemmap).
 *
 * On the host:
 *   hvobench summarize CONSOLE_LOG...
 *	medians of every (kernel, metric, mode) and the on/off ratios, as a
 *	markdown table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <time.h>
#include <unistd.h>

#define SYSCTL	"/proc/sys/vm/hugetlb_optimize_vmemmap"

static void die(const char *fmt, const char *arg)
{
	printf("HVOBENCH: error ");
	printf(fmt, arg);
	printf("\n");
	exit(1);
}

static void write_long(const char *path, long v)
{
	FILE *f = fopen(path, "we");

	if (!f)
		die("cannot open %s", path);
	fprintf(f, "%ld\n", v);
	fclose(f);	/* a short pool is seen when reading back */
}

static long read_long(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f || fscanf(f, "%ld", &v) != 1)
		die("cannot read %s", path);
	fclose(f);
	return v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Our series adds the vmemmap_* counters: that tells the two kernels apart. */
static const char *kernel_label(void)
{
	return access("/sys/kernel/mm/hugepages/hugepages-2048kB/vmemmap_optimized_pages",
		      F_OK) ? "stock" : "patched";
}

static void pool(long size_kb, long count, int rounds)
{
	char path[128], metric[64];
	const char *kernel = kernel_label();
	int r, i;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages",
		 size_kb);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 2; i++) {
			/* alternate which mode goes first, so that neither is favoured */
			int on = (r + i) % 2;
			double t0, t1, t2;
			long got;

			write_long(SYSCTL, on);
			t0 = now();
			write_long(path, count);
			t1 = now();
			got = read_long(path);
			write_long(path, 0);
			t2 = now();
			if (got != count) {
				printf("HVOBENCH: error %s: asked %ld pages, got %ld\n", path, count, got);
				exit(1);
			}
			snprintf(metric, sizeof(metric), "alloc-%ldx%ldkB", count, size_kb);
			printf("HVOBENCH: sample %s %s %s %.6f\n", kernel, metric, on ? "on" : "off", t1 - t0);
			snprintf(metric, sizeof(metric), "free-%ldx%ldkB", count, size_kb);
			printf("HVOBENCH: sample %s %s %s %.6f\n", kernel, metric, on ? "on" : "off", t2 - t1);
			fflush(stdout);
		}
	}
}

static void uptime(const char *metric, const char *mode)
{
	double up;
	FILE *f = fopen("/proc/uptime", "re");

	if (!f || fscanf(f, "%lf", &up) != 1)
		die("cannot read %s", "/proc/uptime");
	fclose(f);
	printf("HVOBENCH: sample %s %s %s %.6f\n", kernel_label(), metric, mode, up);
}

static void initcall(const char *metric, const char *mode, const char *func)
{
	int len = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *line, *save, want[96];
	long usecs = -1;

	if (len <= 0 || !(buf = calloc(1, (size_t)len + 1)))
		die("cannot size the kernel log%s", "");
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, len);
	if (len < 0)
		die("cannot read the kernel log%s", "");
	snprintf(want, sizeof(want), "initcall %s+", func);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = strstr(line, want), *a;

		if (p && strstr(p, " returned ") && (a = strstr(p, " after ")))
			usecs = atol(a + 7);
	}
	free(buf);
	if (usecs < 0)
		die("no 'returned' line of initcall %s: is initcall_debug on?", func);
	printf("HVOBENCH: sample %s %s %s %.6f\n", kernel_label(), metric, mode, usecs / 1e6);
}

/* ---- host side ---- */

#define MAX_SAMPLES 4096

struct sample {
	char kernel[16], metric[48], mode[4];
	double v;
};

static struct sample samples[MAX_SAMPLES];
static int nr_samples;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median of the samples of one (kernel, metric, mode); count in *n. */
static double median(const char *kernel, const char *metric, const char *mode, int *n)
{
	static double v[MAX_SAMPLES];
	int i;

	*n = 0;
	for (i = 0; i < nr_samples; i++)
		if (!strcmp(samples[i].kernel, kernel) && !strcmp(samples[i].metric, metric) &&
		    !strcmp(samples[i].mode, mode))
			v[(*n)++] = samples[i].v;
	if (!*n)
		return 0;
	qsort(v, *n, sizeof(v[0]), cmp_double);
	return *n % 2 ? v[*n / 2] : (v[*n / 2 - 1] + v[*n / 2]) / 2;
}

static int summarize(int argc, char **argv)
{
	static const char *const kernels[] = { "stock", "patched" };
	char line[512], metrics[32][48];
	int i, k, m, nr_metrics = 0;

	for (i = 0; i < argc; i++) {
		FILE *f = fopen(argv[i], "re");

		if (!f) {
			fprintf(stderr, "hvobench: %s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		while (fgets(line, sizeof(line), f)) {
			struct sample *s = &samples[nr_samples];
			char *p = strstr(line, "HVOBENCH: sample ");

			if (!p || nr_samples == MAX_SAMPLES)
				continue;
			if (sscanf(p + 17, "%15s %47s %3s %lf", s->kernel, s->metric, s->mode, &s->v) != 4)
				continue;
			nr_samples++;
			for (m = 0; m < nr_metrics && strcmp(metrics[m], s->metric); m++)
				;
			if (m == nr_metrics && nr_metrics < 32)
				strcpy(metrics[nr_metrics++], s->metric);
		}
		fclose(f);
	}
	if (!nr_samples) {
		fprintf(stderr, "hvobench: no samples in the consoles given\n");
		return 1;
	}

	printf("| metric | kernel | rounds | HVO off (s, median) | HVO on (s, median) | on/off |\n");
	printf("|---|---|---|---|---|---|\n");
	for (m = 0; m < nr_metrics; m++) {
		for (k = 0; k < 2; k++) {
			int n_off, n_on;
			double off = median(kernels[k], metrics[m], "off", &n_off);
			double on = median(kernels[k], metrics[m], "on", &n_on);

			if (!n_off && !n_on)
				continue;
			printf("| %s | %s | %d | %.4f | %.4f | %.2fx |\n", metrics[m], kernels[k],
			       n_off < n_on ? n_off : n_on, off, on, off > 0 ? on / off : 0.0);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 5 && !strcmp(argv[1], "pool"))
		pool(atol(argv[2]), atol(argv[3]), atoi(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "uptime"))
		uptime(argv[2], argv[3]);
	else if (argc == 5 && !strcmp(argv[1], "initcall"))
		initcall(argv[2], argv[3], argv[4]);
	else if (argc >= 3 && !strcmp(argv[1], "summarize"))
		return summarize(argc - 2, argv + 2);
	else {
		fprintf(stderr, "usage: hvobench pool SIZE_KB COUNT ROUNDS | uptime METRIC MODE | "
			"initcall METRIC MODE FUNCTION | summarize LOG...\n");
		return 2;
	}
	return 0;
}
