/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "util.h"

const struct hv_pool_key hv_pool_keys[HV_NPOOLS] = {
	{ "POOL_1G", "1G", 1048576 },
	{ "POOL_2M", "2M", 2048 },
};

void hv_config_defaults(struct hv_config *c)
{
	memset(c, 0, sizeof(*c));
	c->hvo = true;
	c->libvirt_release = HV_RELEASE_RETURN;
}

struct ctx {
	struct hv_config *c;
	const char *name;
	unsigned line;
	unsigned seen[16]; /* line where each key was set, 0 = not yet */
};

static int bad(struct ctx *x, const char *key, const char *val,
	       const char *what, const char *expected)
{
	hv_err("%s:%u: %s: '%s' %s; expected %s", x->name, x->line, key, val,
	       what, expected);
	return -1;
}

static int parse_count_val(const char *s, uint64_t *v)
{
	return hv_parse_u64(s, v);
}

static int parse_pool(struct ctx *x, const char *key, const char *val,
		      struct hv_pool_spec *p)
{
	static const char exp[] = "N (pages), NODE:N,NODE:N,... or P% (0-100)";
	size_t len = strlen(val);
	int e;

	memset(p, 0, sizeof(*p));
	if (len > 0 && val[len - 1] == '%') {
		e = hv_parse_percent(val, &p->percent);
		if (e < 0)
			return bad(x, key, val, e == -ERANGE ?
				   "is more than 100%" : "is not a percentage", exp);
		p->kind = HV_POOL_PERCENT;
		return 0;
	}
	if (strchr(val, ':')) {
		e = hv_parse_node_vals(val, parse_count_val, p->nodes,
				       HV_MAX_NODES, &p->n_nodes);
		if (e < 0)
			return bad(x, key, val, e == -ERANGE ?
				   "has a node or count out of range" :
				   "is not a per-node page count list", exp);
		p->kind = HV_POOL_PER_NODE;
		return 0;
	}
	e = hv_parse_u64(val, &p->count);
	if (e < 0)
		return bad(x, key, val, e == -ERANGE ? "is too large" :
			   "is not a page count", exp);
	p->kind = HV_POOL_COUNT;
	return 0;
}

static int parse_onoff(struct ctx *x, const char *key, const char *val, bool *b)
{
	if (!strcmp(val, "on") || !strcmp(val, "yes") || !strcmp(val, "1"))
		*b = true;
	else if (!strcmp(val, "off") || !strcmp(val, "no") || !strcmp(val, "0"))
		*b = false;
	else
		return bad(x, key, val, "is not on or off", "on or off");
	return 0;
}

static int parse_bytes(struct ctx *x, const char *key, const char *val,
		       uint64_t *v)
{
	int e = hv_parse_size(val, v);

	if (e < 0)
		return bad(x, key, val, e == -ERANGE ? "is too large" :
			   "is not a size", "a size such as 4G, 512M or 1048576K");
	return 0;
}

static int parse_cma(struct ctx *x, const char *key, const char *val)
{
	static const char exp[] = "a size per node in whole GiB (4G) or NODE:SIZE,... (0:2G,1:4G)";
	struct hv_config *c = x->c;
	int e;

	if (strchr(val, ':')) {
		e = hv_parse_node_vals(val, hv_parse_size, c->cma_nodes,
				       HV_MAX_NODES, &c->n_cma_nodes);
		if (e < 0)
			return bad(x, key, val, "is not a per-node size list", exp);
		for (size_t i = 0; i < c->n_cma_nodes; i++)
			if (c->cma_nodes[i].val % (1ULL << 30))
				return bad(x, key, val, "is not a multiple of 1G", exp);
		return 0;
	}
	e = hv_parse_size(val, &c->cma_1g);
	if (e < 0)
		return bad(x, key, val, e == -ERANGE ? "is too large" : "is not a size", exp);
	if (c->cma_1g % (1ULL << 30))
		return bad(x, key, val, "is not a multiple of 1G", exp);
	return 0;
}

/* Returns the index of the key for duplicate detection, or -1 if unknown. */
static int set_key(struct ctx *x, const char *key, const char *val)
{
	struct hv_config *c = x->c;

	for (size_t i = 0; i < HV_NPOOLS; i++)
		if (!strcmp(key, hv_pool_keys[i].key))
			return parse_pool(x, key, val, &c->pool[i]);
	if (!strcmp(key, "HVO"))
		return parse_onoff(x, key, val, &c->hvo);
	if (!strcmp(key, "HOST_RESERVE"))
		return parse_bytes(x, key, val, &c->host_reserve);
	if (!strcmp(key, "DEFAULT_HUGEPAGESZ")) {
		for (size_t i = 0; i < HV_NPOOLS; i++) {
			uint64_t kb;

			if (hv_parse_pagesize(val, &kb) == 0 &&
			    kb == hv_pool_keys[i].size_kb) {
				c->default_hugepagesz_kb = kb;
				return 0;
			}
		}
		return bad(x, key, val, "is not a supported huge page size", "1G or 2M");
	}
	if (!strcmp(key, "CMA_1G"))
		return parse_cma(x, key, val);
	if (!strcmp(key, "LIBVIRT_RELEASE")) {
		if (!strcmp(val, "return"))
			c->libvirt_release = HV_RELEASE_RETURN;
		else if (!strcmp(val, "keep"))
			c->libvirt_release = HV_RELEASE_KEEP;
		else
			return bad(x, key, val, "is not a release policy", "return or keep");
		return 0;
	}
	if (!strcmp(key, "LIBVIRT_WARM_1G")) {
		int e = hv_parse_u64(val, &c->libvirt_warm_1g);

		if (e < 0)
			return bad(x, key, val, e == -ERANGE ? "is too large" :
				   "is not a page count", "N (1G pages)");
		return 0;
	}
	return -2;
}

static const char *const known_keys[] = {
	"HVO", "POOL_1G", "POOL_2M", "HOST_RESERVE", "DEFAULT_HUGEPAGESZ",
	"CMA_1G", "LIBVIRT_RELEASE", "LIBVIRT_WARM_1G",
};

static int key_index(const char *key)
{
	for (size_t i = 0; i < HV_ARRAY_SIZE(known_keys); i++)
		if (!strcmp(key, known_keys[i]))
			return (int)i;
	return -1;
}

static int is_key_char(char ch, bool first)
{
	return (ch >= 'A' && ch <= 'Z') || ch == '_' ||
	       (!first && ch >= '0' && ch <= '9');
}

static int parse_line(struct ctx *x, char *line)
{
	char *p = line, *key, *val, *end;
	int idx;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || *p == '#')
		return 0;
	key = p;
	while (is_key_char(*p, p == key))
		p++;
	if (*p != '=' || p == key) {
		char *eq = strchr(key, '=');

		if (eq && eq > key && (eq[-1] == ' ' || eq[-1] == '\t'))
			hv_err("%s:%u: '%s': no spaces allowed around '='; expected KEY=value",
			       x->name, x->line, key);
		else
			hv_err("%s:%u: '%s': not a setting; expected KEY=value "
			       "with an upper-case KEY, or a # comment",
			       x->name, x->line, key);
		return -1;
	}
	*p = '\0';
	val = p + 1;
	/* Optional plain double quotes, no escapes or expansions inside. */
	if (*val == '"') {
		end = strchr(val + 1, '"');
		if (!end) {
			hv_err("%s:%u: %s: unterminated '\"'; expected KEY=value or KEY=\"value\"",
			       x->name, x->line, key);
			return -1;
		}
		*end = '\0';
		val++;
		p = end + 1;
	} else {
		p = val;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		end = p;
		if (*p)
			p++;
		*end = '\0';
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p && *p != '#') {
		hv_err("%s:%u: %s: unexpected text after the value: '%s'; "
		       "expected one value per line, then optionally '# comment'",
		       x->name, x->line, key, p);
		return -1;
	}
	if (strpbrk(val, "\"'`$\\ \t;&|<>(){}*?[]~")) {
		hv_err("%s:%u: %s: '%s' contains shell special characters; "
		       "expected a plain value", x->name, x->line, key, val);
		return -1;
	}
	idx = key_index(key);
	if (idx < 0) {
		hv_err("%s:%u: %s: unknown key; expected one of HVO, POOL_1G, POOL_2M, "
		       "HOST_RESERVE, DEFAULT_HUGEPAGESZ, CMA_1G, LIBVIRT_RELEASE, "
		       "LIBVIRT_WARM_1G (see hvokit.conf(5))", x->name, x->line, key);
		return -1;
	}
	if (x->seen[idx]) {
		hv_err("%s:%u: %s: already set on line %u; expected each key once",
		       x->name, x->line, key, x->seen[idx]);
		return -1;
	}
	x->seen[idx] = x->line;
	if (*val == '\0')
		return 0; /* KEY= keeps the default */
	return set_key(x, key, val) < 0 ? -1 : 0;
}

int hv_config_parse(struct hv_config *c, const char *name, const char *text)
{
	struct ctx x = { .c = c, .name = name, .line = 0 };
	const char *p = text;
	unsigned pct = 0;
	int errors = 0;

	hv_config_defaults(c);
	snprintf(c->path, sizeof(c->path), "%s", name);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[1024];

		x.line++;
		if (len >= sizeof(line)) {
			hv_err("%s:%u: line too long (max %zu characters)", name,
			       x.line, sizeof(line) - 1);
			errors++;
		} else {
			memcpy(line, p, len);
			line[len] = '\0';
			if (len > 0 && line[len - 1] == '\r')
				line[len - 1] = '\0';
			if (parse_line(&x, line) < 0)
				errors++;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	if (errors)
		return -1;
	for (size_t i = 0; i < HV_NPOOLS; i++)
		if (c->pool[i].kind == HV_POOL_PERCENT)
			pct += c->pool[i].percent;
	if (pct > 100) {
		hv_err("%s: POOL_1G and POOL_2M shares add up to %u%%; expected at most 100%%",
		       name, pct);
		return -1;
	}
	/* HOST_RESERVE without a P% pool still bounds the libvirt hook. */
	return 0;
}

int hv_config_load(struct hv_config *c, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	f = fopen(path, "re");
	if (!f) {
		int e = errno;

		hv_err("config: %s: %s%s", path, strerror(e),
		       e == ENOENT ? "; create it (see hvokit.conf(5)) or pass --config FILE" : "");
		return e == ENOENT ? -ENOENT : -1;
	}
	for (;;) {
		char chunk[4096];
		size_t got = fread(chunk, 1, sizeof(chunk), f);
		char *nb;

		if (got == 0)
			break;
		if (len + got > (1u << 20)) {
			hv_err("config: %s: file too large (max 1 MiB)", path);
			free(buf);
			fclose(f);
			return -1;
		}
		nb = realloc(buf, len + got + 1);
		if (!nb) {
			free(buf);
			fclose(f);
			hv_err("config: %s: out of memory", path);
			return -1;
		}
		buf = nb;
		memcpy(buf + len, chunk, got);
		len += got;
	}
	if (ferror(f)) {
		hv_err("config: %s: read error", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (buf)
		buf[len] = '\0';
	if (buf && memchr(buf, '\0', len)) {
		hv_err("config: %s: contains NUL bytes; expected a text file", path);
		free(buf);
		return -1;
	}
	r = hv_config_parse(c, path, buf ? buf : "");
	free(buf);
	return r;
}

const char *hv_config_path(const char *path)
{
	if (!path)
		path = getenv("HVOKIT_CONF");
	return path && *path ? path : HV_DEFAULT_CONFIG;
}
