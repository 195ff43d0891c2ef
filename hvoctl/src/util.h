/* SPDX-License-Identifier: GPL-2.0-or-later */
/* hvoctl: small shared helpers (diagnostics, checked arithmetic). */
#ifndef HVOCTL_UTIL_H
#define HVOCTL_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HV_PROG "hvoctl"

/* Exit codes, documented in hvoctl(8); keep stable. */
enum {
	HV_EXIT_OK = 0,
	HV_EXIT_ERROR = 1,   /* bad usage, bad config, I/O error */
	HV_EXIT_PARTIAL = 2, /* a pool could not be brought to the asked size */
	HV_EXIT_VERIFY = 3,  /* verify: HVO not in effect as configured */
};

/* Diagnostics go to this stream (stderr by default; tests redirect it). */
void hv_log_set(FILE *f);
FILE *hv_log(void);
/* Prints "hvoctl: <formatted>\n" to the diagnostic stream. */
void hv_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sleep ms milliseconds, resuming after signals. */
void hv_sleep_ms(unsigned long ms);
/* Milliseconds on the monotonic clock. */
long hv_now_ms(void);

/* Length (1-4) of the well-formed UTF-8 sequence at s (len bytes left),
 * its code point in *c; 0 if it is not one (overlong forms and surrogates
 * are not). */
size_t hv_utf8_next(const unsigned char *s, size_t len, uint32_t *c);
/* Copy of s with every byte that is not part of well-formed UTF-8
 * replaced by U+FFFD, truncated to fit n (whole characters only). */
void hv_utf8_clean(const char *s, char *out, size_t n);

/* Checked arithmetic: return false on overflow (result then unspecified). */
static inline bool hv_add(uint64_t a, uint64_t b, uint64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}
static inline bool hv_mul(uint64_t a, uint64_t b, uint64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}
/* Saturating variants for figures that are only displayed. */
static inline uint64_t hv_add_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return hv_add(a, b, &r) ? r : UINT64_MAX;
}
static inline uint64_t hv_mul_sat(uint64_t a, uint64_t b)
{
	uint64_t r;
	return hv_mul(a, b, &r) ? r : UINT64_MAX;
}

#define HV_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
