/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <time.h>

#include "util.h"

static FILE *log_stream;

void hv_log_set(FILE *f)
{
	log_stream = f;
}

FILE *hv_log(void)
{
	return log_stream ? log_stream : stderr;
}

void hv_err(const char *fmt, ...)
{
	va_list ap;
	FILE *f = hv_log();

	fputs(HV_PROG ": ", f);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fflush(f);
}

void hv_sleep_ms(unsigned long ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000),
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (ms && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

long hv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
