/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
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

size_t hv_utf8_next(const unsigned char *s, size_t len, uint32_t *c)
{
	size_t n;

	if (len == 0)
		return 0;
	if (s[0] < 0x80) {
		*c = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		*c = s[0] & 0x1f;
		n = 2;
	} else if ((s[0] & 0xf0) == 0xe0) {
		*c = s[0] & 0x0f;
		n = 3;
	} else if ((s[0] & 0xf8) == 0xf0) {
		*c = s[0] & 0x07;
		n = 4;
	} else {
		return 0;
	}
	if (n > len)
		return 0;
	for (size_t k = 1; k < n; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		*c = *c << 6 | (s[k] & 0x3f);
	}
	if ((n == 2 && *c < 0x80) || (n == 3 && *c < 0x800) || (n == 4 && *c < 0x10000) ||
	    *c > 0x10ffff || (*c >= 0xd800 && *c <= 0xdfff))
		return 0;
	return n;
}

void hv_utf8_clean(const char *s, char *out, size_t n)
{
	static const char repl[] = "\xef\xbf\xbd"; /* U+FFFD */
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;

	if (n == 0)
		return;
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t k = hv_utf8_next(p + i, len - i, &c);
		const char *src = k ? s + i : repl;
		size_t w = k ? k : 3;

		if (o + w >= n)
			break;
		memcpy(out + o, src, w);
		o += w;
		i += k ? k : 1;
	}
	out[o] = '\0';
}
