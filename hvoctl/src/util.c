/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>

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
