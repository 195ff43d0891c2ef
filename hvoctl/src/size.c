/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "size.h"
#include "util.h"

/* Parse leading digits; *end points after them. */
static int parse_digits(const char *s, uint64_t *v, const char **end)
{
	uint64_t r = 0;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	while (*p >= '0' && *p <= '9') {
		if (!hv_mul(r, 10, &r) || !hv_add(r, (uint64_t)(*p - '0'), &r))
			return -ERANGE;
		p++;
	}
	*v = r;
	*end = p;
	return 0;
}

int hv_parse_u64(const char *s, uint64_t *v)
{
	const char *end;
	uint64_t r;
	int e = parse_digits(s, &r, &end);

	if (e < 0)
		return e;
	if (*end)
		return -EINVAL;
	*v = r;
	return 0;
}

int hv_parse_s64(const char *s, int64_t *v)
{
	bool neg = false;
	uint64_t u;
	int e;

	if (s && *s == '-') {
		neg = true;
		s++;
	}
	e = hv_parse_u64(s, &u);
	if (e < 0)
		return e;
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*v = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > (uint64_t)INT64_MAX)
			return -ERANGE;
		*v = (int64_t)u;
	}
	return 0;
}

int hv_parse_size(const char *s, uint64_t *bytes)
{
	const char *end;
	uint64_t r, mult = 1;
	int e = parse_digits(s, &r, &end);

	if (e < 0)
		return e;
	switch (*end) {
	case 'k': case 'K': mult = 1ULL << 10; end++; break;
	case 'm': case 'M': mult = 1ULL << 20; end++; break;
	case 'g': case 'G': mult = 1ULL << 30; end++; break;
	case 't': case 'T': mult = 1ULL << 40; end++; break;
	default: break;
	}
	if (*end && strcasecmp(end, "B") != 0 &&
	    !(mult > 1 && strcasecmp(end, "iB") == 0))
		return -EINVAL;
	if (!hv_mul(r, mult, &r))
		return -ERANGE;
	*bytes = r;
	return 0;
}

int hv_parse_pagesize(const char *s, uint64_t *kb)
{
	uint64_t b;
	int e = hv_parse_size(s, &b);

	if (e < 0)
		return e;
	if (b < 4096 || (b & (b - 1)))
		return -EINVAL;
	*kb = b >> 10;
	return 0;
}

int hv_parse_percent(const char *s, unsigned *pct)
{
	const char *end;
	uint64_t r;
	int e = parse_digits(s, &r, &end);

	if (e < 0)
		return e;
	if (strcmp(end, "%") != 0)
		return -EINVAL;
	if (r > 100)
		return -ERANGE;
	*pct = (unsigned)r;
	return 0;
}

static int add_node(int *nodes, size_t max, size_t *n, uint64_t id)
{
	if (id > HV_MAX_NODE_ID)
		return -ERANGE;
	if (*n > 0 && (uint64_t)nodes[*n - 1] >= id)
		return -EINVAL; /* unsorted or duplicate */
	if (*n >= max)
		return -ERANGE;
	nodes[(*n)++] = (int)id;
	return 0;
}

int hv_parse_node_list(const char *s, int *nodes, size_t max, size_t *n)
{
	const char *p = s, *end;
	int e;

	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		uint64_t a, b;

		e = parse_digits(p, &a, &end);
		if (e < 0)
			return e;
		b = a;
		if (*end == '-') {
			e = parse_digits(end + 1, &b, &end);
			if (e < 0)
				return e;
			if (b < a)
				return -EINVAL;
		}
		if (b > HV_MAX_NODE_ID)
			return -ERANGE;
		for (uint64_t i = a; i <= b; i++) {
			e = add_node(nodes, max, n, i);
			if (e < 0)
				return e;
		}
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

int hv_parse_node_vals(const char *s, int (*parse_val)(const char *, uint64_t *),
		       struct hv_node_val *out, size_t max, size_t *n)
{
	char item[128];
	const char *p = s;

	*n = 0;
	if (!s || !*s)
		return -EINVAL;
	for (;;) {
		const char *comma = strchr(p, ','), *end;
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		char *colon;
		uint64_t node, val;
		int e;

		if (len == 0 || len >= sizeof(item))
			return -EINVAL;
		memcpy(item, p, len);
		item[len] = '\0';
		colon = strchr(item, ':');
		if (!colon)
			return -EINVAL;
		*colon = '\0';
		e = parse_digits(item, &node, &end);
		if (e < 0)
			return e;
		if (*end)
			return -EINVAL;
		if (node > HV_MAX_NODE_ID)
			return -ERANGE;
		e = parse_val(colon + 1, &val);
		if (e < 0)
			return e;
		for (size_t i = 0; i < *n; i++)
			if (out[i].node == (int)node)
				return -EINVAL;
		if (*n >= max)
			return -ERANGE;
		out[*n].node = (int)node;
		out[*n].val = val;
		(*n)++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

void hv_format_size(uint64_t bytes, char *buf, size_t n)
{
	static const struct {
		unsigned shift;
		char unit;
	} u[] = { { 40, 'T' }, { 30, 'G' }, { 20, 'M' }, { 10, 'K' } };

	for (size_t i = 0; i < HV_ARRAY_SIZE(u); i++) {
		uint64_t m = 1ULL << u[i].shift;

		if (bytes >= m && bytes % m == 0) {
			snprintf(buf, n, "%llu%c",
				 (unsigned long long)(bytes / m), u[i].unit);
			return;
		}
	}
	snprintf(buf, n, "%llu", (unsigned long long)bytes);
}

bool hv_pagesize_kb_ok(uint64_t kb)
{
	return kb > 4 && kb <= HV_MAX_PAGESIZE_KB && (kb & (kb - 1)) == 0;
}

void hv_format_kb(uint64_t kb, char *buf, size_t n)
{
	if (kb > UINT64_MAX >> 10) {
		snprintf(buf, n, "%lluK", (unsigned long long)kb);
		return;
	}
	hv_format_size(kb << 10, buf, n);
}

void hv_format_human(int64_t bytes, char *buf, size_t n)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
	bool neg = bytes < 0;
	uint64_t u = neg ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
	size_t i = 0;
	uint64_t div = 1;

	while (i + 1 < HV_ARRAY_SIZE(units) && u / div >= 1024) {
		div *= 1024;
		i++;
	}
	if (i == 0) {
		snprintf(buf, n, "%s%llu B", neg ? "-" : "", (unsigned long long)u);
		return;
	}
	/* One decimal, computed without floating point overflow concerns. */
	uint64_t whole = u / div, frac = (u % div) * 10 / div;
	snprintf(buf, n, "%s%llu.%llu %s", neg ? "-" : "",
		 (unsigned long long)whole, (unsigned long long)frac, units[i]);
}
