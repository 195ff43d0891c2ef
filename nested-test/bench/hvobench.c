// SPDX-License-Identifier: GPL-2.0
/*
 * hvobench - how much HVO costs when huge page pools change.
 *
 * In the guest (static, from the bench initramfs):
 *   hvobench pool SIZE_KB COUNT ROUNDS [off]
 *	alternately with vm.hugetlb_optimize_vmemmap off and on, grow the pool
 *	of SIZE_KB pages from 0 to COUNT and shrink it back, ROUNDS times;
 *	prints "HVOBENCH: sample KERNEL METRIC MODE SECONDS" lines.  With
 *	"off", HVO stays off: the metrics get a "-never-on" suffix, because a
 *	kernel that never optimized a page is not in the state that the
 *	alternating rounds leave (vmemmap PMDs split, see the README).
 *   hvobench uptime METRIC MODE
 *	prints the seconds since boot as one sample (boot to ready pool).
 *   hvobench initcall METRIC MODE FUNCTION
 *	prints the time the initcall FUNCTION took as one sample, from the
 *	"initcall FUNCTION+... returned ... after N usecs" line that
 *	initcall_debug puts in the kernel log (hugetlb_init: gathering the
 *	boot-time pages and optimizing their vmemmap).
 *
 * On the host:
 *   hvobench summarize [--chart-data FILE] CONSOLE_LOG...
 *	medians and spread (min-max) of every (kernel, metric, mode), the
 *	on/off ratios and ours against stock with HVO off, as a markdown
 *	table; FILE gets the same figures relative to stock's HVO-off median,
 *	for bench-chart.gp.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
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

static void pool(long size_kb, long count, int rounds, bool only_off)
{
	const char *suffix = only_off ? "-never-on" : "";
	char path[128], metric[64];
	const char *kernel = kernel_label();
	int r, i;

	snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/hugepages-%ldkB/nr_hugepages",
		 size_kb);
	for (r = 0; r < rounds; r++) {
		for (i = 0; i < 2; i++) {
			/* alternate which mode goes first, so that neither is favoured */
			int on = only_off ? 0 : (r + i) % 2;
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
			snprintf(metric, sizeof(metric), "alloc-%ldx%ldkB%s", count, size_kb, suffix);
			printf("HVOBENCH: sample %s %s %s %.6f\n", kernel, metric, on ? "on" : "off", t1 - t0);
			snprintf(metric, sizeof(metric), "free-%ldx%ldkB%s", count, size_kb, suffix);
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
#define MAX_METRICS 32

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

/* Median, minimum and maximum of the samples of one (kernel, metric, mode). */
struct stats {
	int n;
	double median, min, max;
};

static struct stats stats_of(const char *kernel, const char *metric, const char *mode)
{
	static double v[MAX_SAMPLES];
	struct stats st = { 0 };
	int i;

	for (i = 0; i < nr_samples; i++)
		if (!strcmp(samples[i].kernel, kernel) && !strcmp(samples[i].metric, metric) &&
		    !strcmp(samples[i].mode, mode))
			v[st.n++] = samples[i].v;
	if (!st.n)
		return st;
	qsort(v, st.n, sizeof(v[0]), cmp_double);
	st.median = st.n % 2 ? v[st.n / 2] : (v[st.n / 2 - 1] + v[st.n / 2]) / 2;
	st.min = v[0];
	st.max = v[st.n - 1];
	return st;
}

static double ratio(double a, double b)
{
	return b > 0 ? a / b : 0.0;
}

static int read_samples(int argc, char **argv, char metrics[][48], int *nr_metrics)
{
	char line[512];
	int i, m;

	for (i = 0; i < argc; i++) {
		FILE *f = fopen(argv[i], "re");

		if (!f) {
			fprintf(stderr, "hvobench: %s: %s\n", argv[i], strerror(errno));
			return -1;
		}
		while (fgets(line, sizeof(line), f)) {
			struct sample *s = &samples[nr_samples];
			char *p = strstr(line, "HVOBENCH: sample ");

			if (!p || nr_samples == MAX_SAMPLES)
				continue;
			if (sscanf(p + 17, "%15s %47s %3s %lf", s->kernel, s->metric, s->mode, &s->v) != 4)
				continue;
			nr_samples++;
			for (m = 0; m < *nr_metrics && strcmp(metrics[m], s->metric); m++)
				;
			if (m == *nr_metrics && *nr_metrics < MAX_METRICS)
				strcpy(metrics[(*nr_metrics)++], s->metric);
		}
		fclose(f);
	}
	if (!nr_samples) {
		fprintf(stderr, "hvobench: no samples in the consoles given\n");
		return -1;
	}
	return 0;
}

/*
 * One line per (metric, kernel, mode) for gnuplot: every figure relative
 * to stock's HVO-off median of the same metric, so that metrics of
 * milliseconds and of seconds share one axis.
 */
static int write_chart_data(const char *path, char metrics[][48], int nr_metrics)
{
	static const char *const kernels[] = { "stock", "patched" }, *const modes[] = { "off", "on" };
	FILE *f = fopen(path, "we");
	int m, k, o;

	if (!f) {
		fprintf(stderr, "hvobench: %s: %s\n", path, strerror(errno));
		return -1;
	}
	fprintf(f, "# metric stock-off min max stock-on min max patched-off min max patched-on min max"
		" (relative to the median of stock, HVO off)\n");
	for (m = 0; m < nr_metrics; m++) {
		struct stats base = stats_of("stock", metrics[m], "off");

		if (!base.n || base.median <= 0)
			continue;
		fprintf(f, "%s", metrics[m]);
		for (k = 0; k < 2; k++)
			for (o = 0; o < 2; o++) {
				struct stats st = stats_of(kernels[k], metrics[m], modes[o]);

				fprintf(f, " %.4f %.4f %.4f", st.median / base.median,
					st.min / base.median, st.max / base.median);
			}
		fprintf(f, "\n");
	}
	return fclose(f) ? -1 : 0;
}

/* "median [min-max]", or "-" for a mode that was not measured */
static void stats_cell(char *buf, size_t size, const struct stats *st)
{
	if (st->n)
		snprintf(buf, size, "%.4f [%.4f-%.4f]", st->median, st->min, st->max);
	else
		snprintf(buf, size, "-");
}

/*
 * The markdown table: medians with the spread (min-max) of the rounds, the
 * on/off ratio of each kernel, and for ours its HVO-off median against
 * stock's (what the series costs users who keep HVO off).
 */
static int summarize(int argc, char **argv)
{
	static const char *const kernels[] = { "stock", "patched" };
	static char metrics[MAX_METRICS][48];
	const char *data = NULL;
	int k, m, nr_metrics = 0;

	if (argc >= 2 && !strcmp(argv[0], "--chart-data")) {
		data = argv[1];
		argc -= 2;
		argv += 2;
	}
	if (read_samples(argc, argv, metrics, &nr_metrics))
		return 1;

	printf("| metric | kernel | rounds | HVO off (s): median [min-max] | "
	       "HVO on (s): median [min-max] | on/off | off vs stock off |\n");
	printf("|---|---|---|---|---|---|---|\n");
	for (m = 0; m < nr_metrics; m++) {
		struct stats stock_off = stats_of("stock", metrics[m], "off");

		for (k = 0; k < 2; k++) {
			struct stats off = stats_of(kernels[k], metrics[m], "off");
			struct stats on = stats_of(kernels[k], metrics[m], "on");
			char vs[16] = "-", ratio_s[16] = "-", off_s[64], on_s[64];

			if (!off.n && !on.n)
				continue;
			if (k && stock_off.n && off.n)
				snprintf(vs, sizeof(vs), "%.2fx", ratio(off.median, stock_off.median));
			if (off.n && on.n)
				snprintf(ratio_s, sizeof(ratio_s), "%.2fx", ratio(on.median, off.median));
			stats_cell(off_s, sizeof(off_s), &off);
			stats_cell(on_s, sizeof(on_s), &on);
			printf("| %s | %s | %d | %s | %s | %s | %s |\n", metrics[m], kernels[k],
			       off.n > on.n ? off.n : on.n, off_s, on_s, ratio_s, vs);
		}
	}
	if (data && write_chart_data(data, metrics, nr_metrics))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((argc == 5 || (argc == 6 && !strcmp(argv[5], "off"))) && !strcmp(argv[1], "pool"))
		pool(atol(argv[2]), atol(argv[3]), atoi(argv[4]), argc == 6);
	else if (argc == 4 && !strcmp(argv[1], "uptime"))
		uptime(argv[2], argv[3]);
	else if (argc == 5 && !strcmp(argv[1], "initcall"))
		initcall(argv[2], argv[3], argv[4]);
	else if (argc >= 3 && !strcmp(argv[1], "summarize"))
		return summarize(argc - 2, argv + 2);
	else {
		fprintf(stderr, "usage: hvobench pool SIZE_KB COUNT ROUNDS [off] | uptime METRIC MODE | "
			"initcall METRIC MODE FUNCTION | summarize [--chart-data FILE] LOG...\n");
		return 2;
	}
	return 0;
}
