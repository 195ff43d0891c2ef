/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt domain XML -> huge page demand.  See domxml.h.
 *
 * Parsed by the small strict parser below into a minimal element tree: no
 * XML library, so the hook binary loads nothing but libc (libxml2 pulled
 * ICU and libstdc++ into every hook call and every initramfs).  Hardening:
 * the input is size-limited and checked to be UTF-8 made of XML characters
 * before parsing; any markup declaration other than comments and CDATA
 * ("<!DOCTYPE", "<!ENTITY", ...) is refused, before parsing and by the
 * parser; the only references are the five predefined entities and
 * character references; nothing external is ever read; elements nest at
 * most 256 deep, without recursion, and the tree is bounded in memory;
 * errors are collected, never printed.  Fuzzed by tests/fuzz_domxml.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"
#include "util.h"

/* ---------- node sets ---------- */

bool hv_nodeset_has(const struct hv_nodeset *ns, int id)
{
	if (id < 0 || id > HV_MAX_NODE_ID)
		return false;
	return (ns->w[id / 64] >> (id % 64)) & 1;
}

void hv_nodeset_add(struct hv_nodeset *ns, int id)
{
	if (id >= 0 && id <= HV_MAX_NODE_ID)
		ns->w[id / 64] |= 1ULL << (id % 64);
}

static void nodeset_del(struct hv_nodeset *ns, int id)
{
	if (id >= 0 && id <= HV_MAX_NODE_ID)
		ns->w[id / 64] &= ~(1ULL << (id % 64));
}

bool hv_nodeset_empty(const struct hv_nodeset *ns)
{
	for (size_t i = 0; i < HV_NODESET_WORDS; i++)
		if (ns->w[i])
			return false;
	return true;
}

bool hv_nodeset_equal(const struct hv_nodeset *a, const struct hv_nodeset *b)
{
	return memcmp(a->w, b->w, sizeof(a->w)) == 0;
}

static bool nodeset_overlap(const struct hv_nodeset *a, const struct hv_nodeset *b)
{
	for (size_t i = 0; i < HV_NODESET_WORDS; i++)
		if (a->w[i] & b->w[i])
			return true;
	return false;
}

void hv_nodeset_format(const struct hv_nodeset *ns, char *buf, size_t n)
{
	size_t len = 0;
	bool first = true;

	if (n == 0)
		return;
	buf[0] = '\0';
	if (hv_nodeset_empty(ns)) {
		snprintf(buf, n, "any");
		return;
	}
	for (int i = 0; i <= HV_MAX_NODE_ID; i++) {
		int j = i;
		int r;

		if (!hv_nodeset_has(ns, i))
			continue;
		while (j + 1 <= HV_MAX_NODE_ID && hv_nodeset_has(ns, j + 1))
			j++;
		if (j == i)
			r = snprintf(buf + len, n - len, "%s%d", first ? "" : ",", i);
		else
			r = snprintf(buf + len, n - len, "%s%d-%d", first ? "" : ",", i, j);
		if (r < 0 || (size_t)r >= n - len) {
			if (n >= 4)
				memcpy(buf + n - 4, "...", 4);
			return;
		}
		len += (size_t)r;
		first = false;
		i = j;
	}
}

static const char *skip_blank(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static int node_num(const char **pp, int *v)
{
	const char *p = *pp;
	long n = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p)) {
		n = n * 10 + (*p - '0');
		if (n > HV_MAX_NODE_ID)
			return -ERANGE;
		p++;
	}
	*pp = p;
	*v = (int)n;
	return 0;
}

int hv_nodeset_parse(const char *s, struct hv_nodeset *ns)
{
	const char *p = s;
	int e;

	memset(ns, 0, sizeof(*ns));
	if (!s)
		return -EINVAL;
	for (;;) {
		bool neg = false;
		int a, b;

		p = skip_blank(p);
		if (*p == '^') {
			neg = true;
			p++;
		}
		if ((e = node_num(&p, &a)) < 0)
			return e;
		b = a;
		if (!neg && *p == '-') {
			p++;
			if ((e = node_num(&p, &b)) < 0)
				return e;
			if (b < a)
				return -EINVAL;
		}
		for (int i = a; i <= b; i++) {
			if (neg)
				nodeset_del(ns, i);
			else
				hv_nodeset_add(ns, i);
		}
		p = skip_blank(p);
		if (*p == '\0')
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	return hv_nodeset_empty(ns) ? -EINVAL : 0;
}

/* ---------- numbers ---------- */

int hv_dom_scale(const char *num, const char *unit, uint64_t default_scale,
		 uint64_t *bytes)
{
	uint64_t v, scale = 1, base;
	int e;

	e = hv_parse_u64(num, &v);
	if (e < 0)
		return e;
	if (!unit || !*unit) {
		scale = default_scale;
	} else if (!strcasecmp(unit, "b") || !strcasecmp(unit, "byte") ||
		   !strcasecmp(unit, "bytes")) {
		scale = 1;
	} else {
		unsigned shift;

		if (!unit[1] || !strcasecmp(unit + 1, "iB"))
			base = 1024;
		else if ((unit[1] == 'b' || unit[1] == 'B') && !unit[2])
			base = 1000;
		else
			return -EINVAL;
		switch (tolower((unsigned char)unit[0])) {
		case 'k': shift = 1; break;
		case 'm': shift = 2; break;
		case 'g': shift = 3; break;
		case 't': shift = 4; break;
		case 'p': shift = 5; break;
		case 'e': shift = 6; break;
		default: return -EINVAL;
		}
		while (shift--)
			scale *= base;
	}
	if (!hv_mul(v, scale, bytes))
		return -ERANGE;
	return 0;
}

int hv_uuid_canon(const char *in, char out[37])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[16];
	size_t nd = 0;
	const char *p = skip_blank(in);

	for (; *p; p++) {
		int v;

		if (*p == '-')
			continue;
		if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
			if (*skip_blank(p) != '\0')
				return -EINVAL;
			break;
		}
		if (*p >= '0' && *p <= '9')
			v = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			v = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			v = *p - 'A' + 10;
		else
			return -EINVAL;
		if (nd >= 32)
			return -EINVAL;
		if (nd % 2 == 0)
			b[nd / 2] = (unsigned char)(v << 4);
		else
			b[nd / 2] |= (unsigned char)v;
		nd++;
	}
	if (nd != 32)
		return -EINVAL;
	for (size_t i = 0, o = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[b[i] >> 4];
		out[o++] = hex[b[i] & 15];
	}
	out[36] = '\0';
	return 0;
}

/* ---------- the parse ---------- */

/* ---------- the element tree ---------- */

static void safe_copy(char *dst, size_t n, const char *src);

#define MAX_DEPTH 256            /* as libxml2's default limit */
#define MAX_TREE (32u << 20)     /* bytes the tree may take */

/* One element: its name as written, attributes (name, value pairs, NULL
 * terminated), its own character data (not its children's), and whether
 * it is in a namespace (prefixed, or under a default xmlns): only elements
 * outside any namespace are libvirt's. */
struct xel {
	char *name;
	bool ns, default_ns;
	char **attrs;
	char *text;
	size_t text_len, text_cap;
	struct xel *children, *last, *next, *parent;
};

struct builder {
	struct xel *root, *cur;
	unsigned depth;
	size_t bytes;
};

static void *b_alloc(struct builder *b, size_t n)
{
	void *v;

	if (n > MAX_TREE - b->bytes)
		return NULL;
	v = calloc(1, n);
	if (v)
		b->bytes += n;
	return v;
}

/* Free a tree without recursion. */
static void tree_free(struct xel *e)
{
	while (e) {
		struct xel *next;

		if (e->children) {
			next = e->children;
			e->children = NULL;
			e = next;
			continue;
		}
		next = e->next ? e->next : e->parent;
		for (char **a = e->attrs; a && *a; a++)
			free(*a);
		free(e->attrs);
		free(e->name);
		free(e->text);
		free(e);
		e = next;
	}
}

/*
 * A strict parser for the XML that libvirt writes: one pass over input
 * that was checked to be UTF-8 made of XML characters, no recursion, no
 * DTD, no entities but the five predefined ones and character references,
 * no external anything.  Comments and processing instructions are
 * skipped, CDATA sections are text.  What is not well-formed XML 1.0 is
 * refused (some well-formed documents too, none that libvirt writes: names
 * are checked only as far as ASCII goes).
 */
struct xp {
	const char *p, *end;
	unsigned long line;
	const char *err;      /* reason, NULL while fine */
	struct builder b;
	char *buf;            /* text or attribute value being decoded */
	size_t len, cap;
};

static bool xp_fail(struct xp *x, const char *why)
{
	if (!x->err)
		x->err = why;
	return false;
}

static bool starts(const struct xp *x, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(x->end - x->p) >= n && !memcmp(x->p, s, n);
}

static void adv(struct xp *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x->line += x->p[i] == '\n';
	x->p += n;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(struct xp *x)
{
	while (x->p < x->end && is_space(*x->p))
		adv(x, 1);
}

static bool name_start(unsigned char c)
{
	return isalpha(c) || c == '_' || c == ':' || c >= 0x80;
}

static bool name_char(unsigned char c)
{
	return name_start(c) || isdigit(c) || c == '-' || c == '.';
}

/* A name at x->p, copied (malloc'ed) or NULL. */
static char *xp_name(struct xp *x)
{
	const char *s = x->p;
	char *n;

	if (x->p >= x->end || !name_start((unsigned char)*x->p)) {
		xp_fail(x, "a name was expected");
		return NULL;
	}
	while (x->p < x->end && name_char((unsigned char)*x->p))
		x->p++;
	n = strndup(s, (size_t)(x->p - s));
	if (!n)
		xp_fail(x, "out of memory");
	return n;
}

static bool buf_add(struct xp *x, const char *s, size_t n)
{
	if (x->len + n + 1 > x->cap) {
		size_t cap = (x->len + n + 1) * 2;
		char *b;

		if (cap > MAX_TREE)
			return xp_fail(x, "the document is too large as a tree");
		b = realloc(x->buf, cap);
		if (!b)
			return xp_fail(x, "out of memory");
		x->buf = b;
		x->cap = cap;
	}
	memcpy(x->buf + x->len, s, n);
	x->len += n;
	x->buf[x->len] = '\0';
	return true;
}

/* Code point c as UTF-8 into out; returns the length. */
static size_t utf8_put(uint32_t c, char *out)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

static bool xml_char(uint32_t c)
{
	return c == 0x9 || c == 0xa || c == 0xd || (c >= 0x20 && c <= 0xd7ff) ||
	       (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);
}

/* "&...;" at x->p: the predefined entities and character references. */
static bool xp_ref(struct xp *x)
{
	static const struct { const char *name; char c; } pre[] = {
		{ "&lt;", '<' }, { "&gt;", '>' }, { "&amp;", '&' }, { "&apos;", '\'' },
		{ "&quot;", '"' },
	};
	uint32_t c = 0;
	char out[4];
	bool hex;
	const char *s;

	for (size_t i = 0; i < HV_ARRAY_SIZE(pre); i++)
		if (starts(x, pre[i].name)) {
			adv(x, strlen(pre[i].name));
			return buf_add(x, &pre[i].c, 1);
		}
	if (!starts(x, "&#"))
		return xp_fail(x, "undefined entity (only &lt; &gt; &amp; &apos; &quot; "
			       "and character references)");
	adv(x, 2);
	hex = x->p < x->end && *x->p == 'x';
	if (hex)
		adv(x, 1);
	for (s = x->p; x->p < x->end && *x->p != ';'; adv(x, 1)) {
		int d = hex ? (isxdigit((unsigned char)*x->p) ?
			       (isdigit((unsigned char)*x->p) ? *x->p - '0' :
				(tolower((unsigned char)*x->p) - 'a' + 10)) : -1) :
			      (isdigit((unsigned char)*x->p) ? *x->p - '0' : -1);

		if (d < 0)
			return xp_fail(x, "malformed character reference");
		c = c * (hex ? 16 : 10) + (uint32_t)d;
		if (c > 0x10ffff)
			return xp_fail(x, "character reference out of range");
	}
	if (x->p >= x->end || x->p == s || !xml_char(c))
		return xp_fail(x, "malformed character reference");
	adv(x, 1);
	return buf_add(x, out, utf8_put(c, out));
}

/* Append text to the current element; raw: straight from the document,
 * so line ends become "\n" (XML 1.0, 2.11), unlike referenced characters. */
static bool el_text(struct xp *x, const char *s, size_t len, bool raw)
{
	struct xel *e = x->b.cur;
	size_t need;

	if (!e) {
		for (size_t i = 0; i < len; i++)
			if (!is_space(s[i]))
				return xp_fail(x, "text outside the root element");
		return true;
	}
	need = e->text_len + len + 1;
	if (need > e->text_cap) {
		size_t cap = need * 2;
		char *t;

		if (cap - e->text_cap > MAX_TREE - x->b.bytes)
			return xp_fail(x, "the document is too large as a tree");
		t = realloc(e->text, cap);
		if (!t)
			return xp_fail(x, "out of memory");
		x->b.bytes += cap - e->text_cap;
		e->text = t;
		e->text_cap = cap;
	}
	for (size_t i = 0; i < len; i++) {
		if (raw && s[i] == '\r') {
			if (i + 1 < len && s[i + 1] == '\n')
				continue;
			e->text[e->text_len++] = '\n';
		} else {
			e->text[e->text_len++] = s[i];
		}
	}
	e->text[e->text_len] = '\0';
	return true;
}

/* Start tag at x->p (after '<'): element with its attributes. */
/* A new element named name (taken over), linked under the current one at
 * once, so that it is freed with the tree whatever comes; NULL on error. */
static struct xel *el_open(struct xp *x, char *name)
{
	struct builder *b = &x->b;
	struct xel *e;

	if (b->depth >= MAX_DEPTH) {
		free(name);
		xp_fail(x, "elements nested deeper than 256");
		return NULL;
	}
	if (!b->cur && b->root) {
		free(name);
		xp_fail(x, "more than one root element");
		return NULL;
	}
	e = b_alloc(b, sizeof(*e));
	if (!e) {
		free(name);
		xp_fail(x, "the document is too large as a tree");
		return NULL;
	}
	e->name = name;
	e->parent = b->cur;
	e->default_ns = b->cur && b->cur->default_ns;
	if (!b->cur)
		b->root = e;
	else if (b->cur->last)
		b->cur->last = b->cur->last->next = e;
	else
		b->cur->children = b->cur->last = e;
	b->cur = e;
	b->depth++;
	return e;
}

/* A quoted attribute value, references resolved and white space
 * normalised, into x->buf (x->len bytes). */
static bool xp_attr_value(struct xp *x)
{
	char quote;

	if (x->p >= x->end || (*x->p != '"' && *x->p != '\''))
		return xp_fail(x, "a quoted attribute value was expected");
	quote = *x->p;
	adv(x, 1);
	x->len = 0;
	if (!buf_add(x, "", 0))
		return false;
	while (x->p < x->end && *x->p != quote) {
		if (*x->p == '<')
			return xp_fail(x, "'<' in an attribute value");
		if (*x->p == '&') {
			if (!xp_ref(x))
				return false;
			continue;
		}
		/* Line ends are one "\n", then every white space character
		 * becomes ' ' (XML 1.0, 2.11 and 3.3.3). */
		if (*x->p == '\r' && x->p + 1 < x->end && x->p[1] == '\n')
			adv(x, 1);
		if (!buf_add(x, is_space(*x->p) ? " " : x->p, 1))
			return false;
		adv(x, 1);
	}
	if (x->p >= x->end)
		return xp_fail(x, "unterminated attribute value");
	adv(x, 1);
	return true;
}

static bool xp_start_tag(struct xp *x)
{
	struct builder *b = &x->b;
	struct xel *e;
	char **at = NULL, *name;
	size_t n = 0, cap = 0;

	if (!(name = xp_name(x)) || !(e = el_open(x, name)))
		return false;
	for (;;) {
		const char *before = x->p;
		char *an;

		skip_space(x);
		if (starts(x, "/>") || starts(x, ">"))
			break;
		if (x->p == before)
			return xp_fail(x, "a space, '>' or '/>' was expected in a tag");
		if (!(an = xp_name(x)))
			return false;
		for (size_t i = 0; i < n; i += 2)
			if (!strcmp(at[i], an)) {
				free(an);
				return xp_fail(x, "an attribute is given twice");
			}
		if (n + 3 > cap) {
			size_t nc = cap ? cap * 2 : 8;
			char **v = nc * sizeof(char *) <= MAX_TREE - b->bytes ?
				   realloc(at, nc * sizeof(char *)) : NULL;

			if (!v) {
				free(an);
				return xp_fail(x, "the document is too large as a tree");
			}
			b->bytes += (nc - cap) * sizeof(char *);
			at = e->attrs = v;
			memset(at + n, 0, (nc - n) * sizeof(char *));
			cap = nc;
		}
		at[n++] = an;
		skip_space(x);
		if (!starts(x, "="))
			return xp_fail(x, "'=' was expected after an attribute name");
		adv(x, 1);
		skip_space(x);
		if (!xp_attr_value(x))
			return false;
		if (x->len + 1 > MAX_TREE - b->bytes || !(at[n++] = strdup(x->buf)))
			return xp_fail(x, "the document is too large as a tree");
		b->bytes += x->len + 1;
		if (!strcmp(an, "xmlns"))
			e->default_ns = x->buf[0] != '\0';
	}
	if (!at && !(e->attrs = calloc(1, sizeof(char *))))
		return xp_fail(x, "out of memory");
	e->ns = e->default_ns || strchr(e->name, ':') != NULL;
	if (starts(x, "/>")) {
		adv(x, 2);
		b->cur = e->parent;
		b->depth--;
	} else {
		adv(x, 1);
	}
	return true;
}

/* End tag at x->p (after "</"). */
static bool xp_end_tag(struct xp *x)
{
	struct builder *b = &x->b;
	const char *s = x->p;

	while (x->p < x->end && name_char((unsigned char)*x->p))
		x->p++;
	if (!b->cur || (size_t)(x->p - s) != strlen(b->cur->name) ||
	    memcmp(s, b->cur->name, (size_t)(x->p - s)))
		return xp_fail(x, "an end tag does not match its start tag");
	skip_space(x);
	if (!starts(x, ">"))
		return xp_fail(x, "'>' was expected");
	adv(x, 1);
	b->cur = b->cur->parent;
	b->depth--;
	return true;
}

/* Skip from x->p past the terminator; false if there is none. */
static bool skip_past(struct xp *x, const char *term, const char *what)
{
	const char *t = memmem(x->p, (size_t)(x->end - x->p), term, strlen(term));

	if (!t)
		return xp_fail(x, what);
	adv(x, (size_t)(t - x->p) + strlen(term));
	return true;
}

/* One pseudo-attribute of the XML declaration: S name Eq quoted value;
 * the value's characters must satisfy ok(). */
static bool decl_attr(struct xp *x, const char *name, bool (*ok)(const char *, size_t))
{
	const char *v, *before = x->p;
	char q;

	skip_space(x);
	if (!starts(x, name))
		return false;
	if (x->p == before)
		return xp_fail(x, "malformed XML declaration");
	adv(x, strlen(name));
	skip_space(x);
	if (!starts(x, "="))
		return xp_fail(x, "malformed XML declaration");
	adv(x, 1);
	skip_space(x);
	if (x->p >= x->end || (*x->p != '\'' && *x->p != '"'))
		return xp_fail(x, "malformed XML declaration");
	q = *x->p;
	v = ++x->p;
	while (x->p < x->end && *x->p != q)
		x->p++;
	if (x->p >= x->end || !ok(v, (size_t)(x->p - v)))
		return xp_fail(x, "malformed XML declaration");
	x->p++;
	return true;
}

static bool version_ok(const char *v, size_t n)
{
	if (n < 3 || memcmp(v, "1.", 2))
		return false;
	for (size_t i = 2; i < n; i++)
		if (!isdigit((unsigned char)v[i]))
			return false;
	return true;
}

static bool encname_ok(const char *v, size_t n)
{
	if (n == 0 || !isalpha((unsigned char)v[0]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && !strchr("._-", v[i]))
			return false;
	return true;
}

static bool standalone_ok(const char *v, size_t n)
{
	return (n == 3 && !memcmp(v, "yes", 3)) || (n == 2 && !memcmp(v, "no", 2));
}

/* "<?xml" S version [S encoding] [S standalone] S? "?>" at x->p.  The
 * declared encoding is not used: the input must be UTF-8 whatever it says. */
static bool xp_xml_decl(struct xp *x)
{
	adv(x, 5);
	if (!decl_attr(x, "version", version_ok))
		return xp_fail(x, "malformed XML declaration");
	if (!decl_attr(x, "encoding", encname_ok) && x->err)
		return false;
	if (!decl_attr(x, "standalone", standalone_ok) && x->err)
		return false;
	skip_space(x);
	if (!starts(x, "?>"))
		return xp_fail(x, "malformed XML declaration");
	adv(x, 2);
	return true;
}

static bool xp_document(struct xp *x)
{
	if (starts(x, "\xef\xbb\xbf"))
		adv(x, 3);
	if (starts(x, "<?xml") && x->p + 5 < x->end && (is_space(x->p[5]) || x->p[5] == '?') &&
	    !xp_xml_decl(x))
		return false;
	while (x->p < x->end && !x->err) {
		const char *s = x->p;

		if (*x->p != '<') {
			/* Character data up to the next markup or reference. */
			while (x->p < x->end && *x->p != '<' && *x->p != '&')
				adv(x, 1);
			if (memmem(s, (size_t)(x->p - s), "]]>", 3))
				return xp_fail(x, "']]>' in text");
			if (!el_text(x, s, (size_t)(x->p - s), true))
				return false;
			if (x->p < x->end && *x->p == '&') {
				if (!x->b.cur)
					return xp_fail(x, "a reference outside the root element");
				x->len = 0;
				if (!xp_ref(x) || !el_text(x, x->buf, x->len, false))
					return false;
			}
			continue;
		}
		if (starts(x, "<!--")) {
			adv(x, 4);
			if (!skip_past(x, "--", "unterminated comment"))
				return false;
			if (!starts(x, ">"))
				return xp_fail(x, "'--' inside a comment");
			adv(x, 1);
		} else if (starts(x, "<![CDATA[")) {
			const char *t;

			if (!x->b.cur)
				return xp_fail(x, "CDATA outside the root element");
			adv(x, 9);
			t = memmem(x->p, (size_t)(x->end - x->p), "]]>", 3);
			if (!t)
				return xp_fail(x, "unterminated CDATA section");
			if (!el_text(x, x->p, (size_t)(t - x->p), true))
				return false;
			adv(x, (size_t)(t - x->p) + 3);
		} else if (starts(x, "<?")) {
			/* The XML declaration (read above) only first; other
			 * processing instructions are skipped. */
			if ((size_t)(x->end - x->p) >= 6 && !strncasecmp(x->p + 2, "xml", 3) &&
			    (is_space(x->p[5]) || x->p[5] == '?'))
				return xp_fail(x, "an XML declaration not at the start");
			adv(x, 2);
			free(xp_name(x)); /* the target must be a name */
			if (x->err)
				return false;
			if (!starts(x, "?>") && (x->p >= x->end || !is_space(*x->p)))
				return xp_fail(x, "a space or '?>' was expected after a target");
			if (!skip_past(x, "?>", "unterminated processing instruction"))
				return false;
		} else if (starts(x, "<!")) {
			return xp_fail(x, "a markup declaration (DOCTYPE, ENTITY, ...)");
		} else if (starts(x, "</")) {
			adv(x, 2);
			if (!xp_end_tag(x))
				return false;
		} else {
			adv(x, 1);
			if (!xp_start_tag(x))
				return false;
		}
	}
	if (x->err)
		return false;
	if (!x->b.root)
		return xp_fail(x, "no element found");
	if (x->b.cur)
		return xp_fail(x, "unclosed element at the end of the document");
	return true;
}

/* UTF-8 made of XML characters; *line: where it is not. */
static bool valid_utf8(const char *xml, size_t len, unsigned long *line)
{
	const unsigned char *s = (const unsigned char *)xml;

	*line = 1;
	for (size_t i = 0; i < len;) {
		uint32_t c;
		size_t n = hv_utf8_next(s + i, len - i, &c);

		if (!n || !xml_char(c))
			return false;
		*line += c == '\n';
		i += n;
	}
	return true;
}

/* Parse into a tree; NULL with a reason in err. */
static struct xel *tree_parse(const char *xml, size_t len, char *err, size_t errlen)
{
	struct xp x = { .p = xml, .end = xml + len, .line = 1 };
	char m[160];

	if (!valid_utf8(xml, len, &x.line)) {
		snprintf(err, errlen, "domain XML is not well-formed UTF-8 XML: line %lu: "
			 "not UTF-8, or a character XML does not allow", x.line);
		return NULL;
	}
	if (!xp_document(&x)) {
		safe_copy(m, sizeof(m), x.err ? x.err : "parse error");
		snprintf(err, errlen, "domain XML is not well-formed UTF-8 XML: line %lu: %s",
			 x.line, m);
		free(x.buf);
		tree_free(x.b.root);
		return NULL;
	}
	free(x.buf);
	return x.b.root;
}

struct page {
	uint64_t size_kb; /* 4: normal memory */
	bool has_nodeset;
	struct hv_nodeset cells;
};

struct tune {
	bool set;
	bool strict;
	struct hv_nodeset nodes;
};

struct cell {
	int id;
	uint64_t bytes;
	struct tune tune; /* memnode */
};

struct st {
	char *err;
	size_t errlen;
	uint64_t default_kb;
	struct hv_demand *d;
	struct xel *memory, *hugepages, *numa, *numatune, *devices;
	size_t n_pages;
	struct page pages[HV_DOM_MAX_DEMANDS];
	int default_page; /* index or -1 */
	size_t n_cells;
	struct cell cells[HV_DOM_MAX_CELLS];
	bool implicit_cell;
	struct tune global;
};

static int fail(struct st *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct st *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err, s->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_el(const struct xel *n, const char *name)
{
	return !n->ns && !strcmp(n->name, name);
}

/* Message-safe copy: printable ASCII only, at most n-1 bytes. */
static void safe_copy(char *dst, size_t n, const char *src)
{
	size_t o = 0;

	for (; src && *src && o + 1 < n; src++)
		dst[o++] = (*src >= 0x20 && *src < 0x7f) ? *src : '?';
	dst[o] = '\0';
}

void hv_dom_safe_name(const char *name, char *out, size_t n)
{
	safe_copy(out, n, name);
}

/* Trimmed text of an element (malloc'ed) or NULL on OOM. */
static char *text_of(struct xel *n)
{
	const char *start = n->text ? n->text : "", *end;

	while (*start && strchr(" \t\r\n", *start))
		start++;
	end = start + strlen(start);
	while (end > start && strchr(" \t\r\n", end[-1]))
		end--;
	return strndup(start, (size_t)(end - start));
}

/* Copy of an attribute without namespace prefix (malloc'ed), or NULL. */
static char *attr(struct xel *n, const char *name)
{
	for (char **a = n->attrs; a && a[0]; a += 2)
		if (!strcmp(a[0], name))
			return strdup(a[1]);
	return NULL;
}

static int scaled(struct st *s, const char *what, const char *num, const char *unit,
		  uint64_t *bytes)
{
	char u[64], v[64];
	int e = hv_dom_scale(num, unit, 1024, bytes);

	if (e == 0)
		return 0;
	safe_copy(v, sizeof(v), num);
	safe_copy(u, sizeof(u), unit ? unit : "");
	if (e == -ERANGE)
		return fail(s, "%s: '%s %s' is too large", what, v, u);
	if (hv_parse_u64(num, &(uint64_t){ 0 }) < 0)
		return fail(s, "%s: '%s' is not a non-negative whole number", what, v);
	return fail(s, "%s: unit '%s' is not one libvirt accepts "
		    "(b, bytes, KB, k, KiB, MB, M, MiB, GB, G, GiB, TB, T, TiB, "
		    "PB, P, PiB, EB, E, EiB)", what, u);
}

/* Element text as a scaled value, unit attribute "unit", default KiB. */
static int elem_scaled(struct st *s, const char *what, struct xel *n, uint64_t *bytes)
{
	char *t = text_of(n), *u = attr(n, "unit");
	int r;

	if (!t)
		r = fail(s, "out of memory");
	else
		r = scaled(s, what, t, u, bytes);
	free(t);
	free(u);
	return r;
}

static int nodeset_attr(struct st *s, const char *what, const char *val,
			struct hv_nodeset *ns)
{
	char v[64];
	int e = hv_nodeset_parse(val, ns);

	if (e == 0)
		return 0;
	safe_copy(v, sizeof(v), val);
	if (e == -ERANGE)
		return fail(s, "%s: '%s': node id above %d", what, v, HV_MAX_NODE_ID);
	return fail(s, "%s: '%s' is not a node set (e.g. 0-3,^2)", what, v);
}

static int page_size(struct st *s, const char *what, const char *num,
		     const char *unit, uint64_t *kb)
{
	uint64_t b;

	if (!num)
		return fail(s, "%s: no size", what);
	if (scaled(s, what, num, unit, &b) < 0)
		return -1;
	if (b < 4096 || (b & (b - 1)) != 0)
		return fail(s, "%s: %llu bytes is not a page size (a power of two, "
			    "at least 4 KiB)", what, (unsigned long long)b);
	*kb = b / 1024;
	return 0;
}

static int parse_pages(struct st *s)
{
	s->default_page = -1;
	for (struct xel *n = s->hugepages->children; n; n = n->next) {
		struct page *p;
		char *sz, *unit, *ns;
		int r = 0;

		if (!is_el(n, "page"))
			continue;
		if (s->n_pages >= HV_DOM_MAX_DEMANDS)
			return fail(s, "<hugepages>: more than %d <page> elements",
				    HV_DOM_MAX_DEMANDS);
		p = &s->pages[s->n_pages];
		sz = attr(n, "size");
		unit = attr(n, "unit");
		ns = attr(n, "nodeset");
		r = page_size(s, "<hugepages><page size>", sz, unit, &p->size_kb);
		if (r == 0 && ns) {
			p->has_nodeset = true;
			r = nodeset_attr(s, "<hugepages><page nodeset>", ns, &p->cells);
		}
		free(sz);
		free(unit);
		free(ns);
		if (r < 0)
			return -1;
		if (!p->has_nodeset) {
			if (s->default_page >= 0)
				return fail(s, "<hugepages>: more than one <page> without nodeset");
			s->default_page = (int)s->n_pages;
		}
		for (size_t i = 0; i < s->n_pages; i++)
			if (s->pages[i].has_nodeset && p->has_nodeset &&
			    nodeset_overlap(&s->pages[i].cells, &p->cells))
				return fail(s, "<hugepages>: <page> nodesets overlap");
		s->n_pages++;
	}
	if (s->n_pages == 0) {
		if (s->default_kb == 0)
			return fail(s, "<hugepages/> without <page>: the host's default "
				    "huge page size is unknown (no valid Hugepagesize in "
				    "/proc/meminfo)");
		s->pages[0].size_kb = s->default_kb;
		s->default_page = 0;
		s->n_pages = 1;
	}
	return 0;
}

static int parse_cells(struct st *s)
{
	size_t idx = 0;

	for (struct xel *n = s->numa->children; n; n = n->next) {
		struct cell *c;
		char *id, *mem, *unit;
		int r = 0;

		if (!is_el(n, "cell"))
			continue;
		if (s->n_cells >= HV_DOM_MAX_CELLS)
			return fail(s, "<numa>: more than %d cells", HV_DOM_MAX_CELLS);
		c = &s->cells[s->n_cells];
		id = attr(n, "id");
		mem = attr(n, "memory");
		unit = attr(n, "unit");
		c->id = (int)idx;
		if (id) {
			uint64_t v = 0;

			if (hv_parse_u64(id, &v) < 0 || v > HV_MAX_NODE_ID)
				r = fail(s, "<numa><cell>: id is not a number from 0 to %d",
					 HV_MAX_NODE_ID);
			c->id = (int)v;
		}
		if (r == 0 && !mem)
			r = fail(s, "<numa><cell id='%d'>: no memory attribute", c->id);
		if (r == 0)
			r = scaled(s, "<numa><cell memory>", mem, unit, &c->bytes);
		free(id);
		free(mem);
		free(unit);
		if (r < 0)
			return -1;
		for (size_t i = 0; i < s->n_cells; i++)
			if (s->cells[i].id == c->id)
				return fail(s, "<numa>: cell id %d given twice", c->id);
		s->n_cells++;
		idx++;
	}
	return 0;
}

static int parse_mode(struct st *s, const char *what, const char *mode, bool *strict)
{
	char v[64];

	if (!mode || !strcmp(mode, "strict") || !strcmp(mode, "restrictive")) {
		*strict = true;
		return 0;
	}
	if (!strcmp(mode, "preferred") || !strcmp(mode, "interleave")) {
		*strict = false;
		return 0;
	}
	safe_copy(v, sizeof(v), mode);
	return fail(s, "%s: mode '%s' is not strict, restrictive, preferred or "
		    "interleave", what, v);
}

static struct cell *find_cell(struct st *s, int id)
{
	for (size_t i = 0; i < s->n_cells; i++)
		if (s->cells[i].id == id)
			return &s->cells[i];
	return NULL;
}

static int parse_numatune(struct st *s)
{
	bool seen_memory = false;

	for (struct xel *n = s->numatune->children; n; n = n->next) {
		char *mode, *ns, *pl, *cid;
		int r = 0;

		if (is_el(n, "memory")) {
			if (seen_memory)
				return fail(s, "<numatune>: more than one <memory>");
			seen_memory = true;
			mode = attr(n, "mode");
			ns = attr(n, "nodeset");
			pl = attr(n, "placement");
			r = parse_mode(s, "<numatune><memory>", mode, &s->global.strict);
			if (r == 0 && pl && strcmp(pl, "static")) {
				if (!strcmp(pl, "auto"))
					r = fail(s, "<numatune><memory placement='auto'>: numad "
						 "picks the nodes when the guest starts; hvokit "
						 "cannot size pools for it (use a static nodeset)");
				else
					r = fail(s, "<numatune><memory>: placement is not "
						 "static or auto");
			}
			if (r == 0 && !ns)
				r = fail(s, "<numatune><memory>: no nodeset");
			if (r == 0)
				r = nodeset_attr(s, "<numatune><memory nodeset>", ns,
						 &s->global.nodes);
			s->global.set = true;
			free(mode);
			free(ns);
			free(pl);
			if (r < 0)
				return -1;
		} else if (is_el(n, "memnode")) {
			struct cell *c = NULL;
			uint64_t v = 0;

			mode = attr(n, "mode");
			ns = attr(n, "nodeset");
			cid = attr(n, "cellid");
			if (!cid || hv_parse_u64(cid, &v) < 0 || v > HV_MAX_NODE_ID)
				r = fail(s, "<numatune><memnode>: cellid is not a number "
					 "from 0 to %d", HV_MAX_NODE_ID);
			if (r == 0 && !(c = find_cell(s, (int)v)))
				r = fail(s, "<numatune><memnode cellid='%llu'>: no such guest "
					 "NUMA cell", (unsigned long long)v);
			if (r == 0 && c->tune.set)
				r = fail(s, "<numatune>: memnode cellid %d given twice", c->id);
			if (r == 0)
				r = parse_mode(s, "<numatune><memnode>", mode, &c->tune.strict);
			if (r == 0 && !ns)
				r = fail(s, "<numatune><memnode cellid='%d'>: no nodeset", c->id);
			if (r == 0)
				r = nodeset_attr(s, "<numatune><memnode nodeset>", ns,
						 &c->tune.nodes);
			if (r == 0)
				c->tune.set = true;
			free(mode);
			free(ns);
			free(cid);
			if (r < 0)
				return -1;
		}
	}
	return 0;
}

/* The huge page size backing guest cell id (4 = normal memory). */
static uint64_t cell_page(struct st *s, int id)
{
	for (size_t i = 0; i < s->n_pages; i++)
		if (s->pages[i].has_nodeset && hv_nodeset_has(&s->pages[i].cells, id))
			return s->pages[i].size_kb;
	if (s->default_page >= 0)
		return s->pages[s->default_page].size_kb;
	return 4;
}

static const struct tune *cell_tune(struct st *s, int id)
{
	struct cell *c = find_cell(s, id);

	if (c && c->tune.set)
		return &c->tune;
	return &s->global;
}

static int add_item(struct st *s, uint64_t size_kb, const struct tune *t,
		    uint64_t bytes)
{
	struct hv_demand *d = s->d;
	struct hv_demand_item it = { .size_kb = size_kb };
	uint64_t page = size_kb * 1024;

	if (size_kb <= 4 || bytes == 0)
		return 0;
	if (size_kb > HV_MAX_PAGESIZE_KB)
		return fail(s, "a %llu kB page is larger than any huge page size",
			    (unsigned long long)size_kb);
	it.pages = bytes / page + (bytes % page != 0);
	if (t && t->set && t->strict) {
		it.strict = true;
		it.nodes = t->nodes;
	}
	for (size_t i = 0; i < d->n; i++) {
		struct hv_demand_item *o = &d->items[i];

		if (o->size_kb == it.size_kb && o->strict == it.strict &&
		    hv_nodeset_equal(&o->nodes, &it.nodes)) {
			if (!hv_add(o->pages, it.pages, &o->pages))
				return fail(s, "huge page demand is too large");
			return 0;
		}
	}
	if (d->n >= HV_DOM_MAX_DEMANDS)
		return fail(s, "more than %d distinct huge page demands", HV_DOM_MAX_DEMANDS);
	d->items[d->n++] = it;
	return 0;
}

/*
 * Memory devices (<devices><memory>).  DIMMs and virtio-mem devices are
 * backed like guest RAM: libvirt (9.0, as since 7.9) takes the page size
 * from <source><pagesize>, else from the <hugepages> page of the target
 * cell, else the default page; virtio-mem counts with its whole
 * <target><size>, the most the guest can plug without another prepare.
 */
struct memdev {
	struct xel *psz, *nmask, *tsize, *tnode;
	char *model;          /* malloc'ed, NULL if absent */
	bool backed;          /* dimm or virtio-mem: backed like guest RAM */
	bool hp;              /* on huge pages */
};

static void memdev_read(struct st *s, struct xel *n, struct memdev *m)
{
	struct xel *src = NULL, *tgt = NULL;

	memset(m, 0, sizeof(*m));
	for (struct xel *c = n->children; c; c = c->next) {
		if (is_el(c, "source"))
			src = c;
		else if (is_el(c, "target"))
			tgt = c;
	}
	for (struct xel *c = src ? src->children : NULL; c; c = c->next) {
		if (is_el(c, "pagesize"))
			m->psz = c;
		else if (is_el(c, "nodemask"))
			m->nmask = c;
	}
	for (struct xel *c = tgt ? tgt->children : NULL; c; c = c->next) {
		if (is_el(c, "size"))
			m->tsize = c;
		else if (is_el(c, "node"))
			m->tnode = c;
	}
	m->model = attr(n, "model");
	m->backed = m->model && (!strcmp(m->model, "dimm") || !strcmp(m->model, "virtio-mem"));
	m->hp = m->psz != NULL || (m->backed && s->hugepages);
}

#define for_each_memdev(s, n) \
	for (struct xel *n = (s)->devices ? (s)->devices->children : NULL; n; n = n->next) \
		if (is_el(n, "memory"))

/* Does any memory device use huge pages?  Never fails: a guest without
 * huge pages is not refused for a device hvokit does not understand. */
static bool devices_use_hugepages(struct st *s)
{
	bool hp = false;

	for_each_memdev(s, n) {
		struct memdev m;

		memdev_read(s, n, &m);
		hp = hp || m.hp;
		free(m.model);
	}
	return hp;
}

/* Check a device's model and <pagesize> against what libvirt accepts. */
static int memdev_check(struct st *s, const struct memdev *m)
{
	static const char *const models[] = { "dimm", "nvdimm", "virtio-pmem",
		"virtio-mem", "sgx-epc" };
	char name[64];
	bool known = false;

	if (!m->model)
		return fail(s, "<devices><memory>: no model");
	for (size_t i = 0; i < HV_ARRAY_SIZE(models); i++)
		known = known || !strcmp(m->model, models[i]);
	safe_copy(name, sizeof(name), m->model);
	if (!known)
		return fail(s, "<devices><memory model='%s'>: unknown memory device model",
			    name);
	if (!m->backed && m->psz)
		return fail(s, "<devices><memory model='%s'> with <pagesize>: huge pages "
			    "are only supported for model='dimm' and 'virtio-mem'", name);
	if (!m->tsize)
		return fail(s, "<devices><memory>: no <target><size>");
	return 0;
}

/* Validate every device and sum the sizes of all of them (they are part
 * of <memory>, not of the initial memory of cell 0). */
static int devices_sum(struct st *s, uint64_t *sum)
{
	*sum = 0;
	for_each_memdev(s, n) {
		struct memdev m;
		uint64_t bytes;
		int r;

		memdev_read(s, n, &m);
		r = memdev_check(s, &m);
		free(m.model);
		if (r < 0 || elem_scaled(s, "<devices><memory><target><size>", m.tsize,
					 &bytes) < 0)
			return -1;
		if (!hv_add(*sum, bytes, sum))
			return fail(s, "<devices><memory>: sizes are too large");
	}
	return 0;
}

/* The guest cell a device plugs into (<target><node>, default 0). */
static int memdev_cell(struct st *s, const struct memdev *m, int *cell)
{
	char *t;
	uint64_t v = 0;
	int r = 0;

	*cell = 0;
	if (!m->tnode)
		return 0;
	if (!(t = text_of(m->tnode)))
		return fail(s, "out of memory");
	if (hv_parse_u64(t, &v) < 0 || v > HV_MAX_NODE_ID)
		r = fail(s, "<devices><memory><target><node>: not a number from 0 to %d",
			 HV_MAX_NODE_ID);
	free(t);
	if (r < 0)
		return -1;
	*cell = (int)v;
	if (!s->implicit_cell && !find_cell(s, *cell))
		return fail(s, "<devices><memory><target><node>%d: no such guest NUMA cell",
			    *cell);
	return 0;
}

/* The demand of one device that is backed by huge pages.  Called after
 * devices_sum() validated them all. */
static int memdev_demand(struct st *s, const struct memdev *m)
{
	uint64_t bytes = 0, kb = 0;
	int cell, r;

	if (!m->backed)
		return 0;
	if (elem_scaled(s, "<devices><memory><target><size>", m->tsize, &bytes) < 0 ||
	    memdev_cell(s, m, &cell) < 0)
		return -1;
	if (m->psz) {
		char *t = text_of(m->psz), *u = attr(m->psz, "unit");

		r = t ? page_size(s, "<devices><memory><source><pagesize>", t, u, &kb)
		      : fail(s, "out of memory");
		free(t);
		free(u);
		if (r < 0)
			return -1;
	} else if (s->hugepages) {
		kb = cell_page(s, cell);
	} else {
		return 0;
	}
	if (m->nmask) {
		struct tune t = { .set = true, .strict = true };
		char *v = text_of(m->nmask);

		r = v ? nodeset_attr(s, "<devices><memory><source><nodemask>", v, &t.nodes)
		      : fail(s, "out of memory");
		free(v);
		return r < 0 ? -1 : add_item(s, kb, &t, bytes);
	}
	return add_item(s, kb, cell_tune(s, cell), bytes);
}

static int devices_demand(struct st *s)
{
	for_each_memdev(s, n) {
		struct memdev m;
		int r;

		memdev_read(s, n, &m);
		r = memdev_demand(s, &m);
		free(m.model);
		if (r < 0)
			return -1;
	}
	return 0;
}

/* The top-level elements: name and UUID into the demand, the others into
 * their slots (each at most once); <hugepages> of <memoryBacking>. */
struct top {
	struct xel *mb, *cpu, *cur, *maxm;
};

static int read_top(struct st *s, struct xel *root, struct top *t)
{
	struct hv_demand *d = s->d;

	memset(t, 0, sizeof(*t));
	for (struct xel *n = root->children; n; n = n->next) {
		struct xel **slot = NULL;

		if (is_el(n, "name")) {
			char *v = text_of(n);

			if (!v)
				return fail(s, "out of memory");
			d->name_truncated = strlen(v) >= sizeof(d->name);
			snprintf(d->name, sizeof(d->name), "%s", v);
			free(v);
		} else if (is_el(n, "uuid")) {
			char *v = text_of(n);
			int e = v ? hv_uuid_canon(v, d->uuid) : -ENOMEM;

			free(v);
			if (e < 0)
				return fail(s, "<uuid>: not a UUID");
		} else if (is_el(n, "memory")) {
			slot = &s->memory;
		} else if (is_el(n, "currentMemory")) {
			slot = &t->cur;
		} else if (is_el(n, "maxMemory")) {
			slot = &t->maxm;
		} else if (is_el(n, "memoryBacking")) {
			slot = &t->mb;
		} else if (is_el(n, "cpu")) {
			slot = &t->cpu;
		} else if (is_el(n, "numatune")) {
			slot = &s->numatune;
		} else if (is_el(n, "devices")) {
			slot = &s->devices;
		}
		if (slot) {
			if (*slot)
				return fail(s, "<%s> given twice", (const char *)n->name);
			*slot = n;
		}
	}
	for (struct xel *n = t->mb ? t->mb->children : NULL; n; n = n->next)
		if (is_el(n, "hugepages")) {
			if (s->hugepages)
				return fail(s, "<memoryBacking>: <hugepages> given twice");
			s->hugepages = n;
		}
	return 0;
}

/* <memory> into *mem, with <currentMemory> and <maxMemory> checked. */
static int read_sizes(struct st *s, const struct top *t, uint64_t *mem)
{
	uint64_t b;

	if (!s->d->uuid[0])
		return fail(s, "no <uuid>");
	if (!s->memory)
		return fail(s, "no <memory>");
	if (elem_scaled(s, "<memory>", s->memory, mem) < 0)
		return -1;
	if (t->cur && elem_scaled(s, "<currentMemory>", t->cur, &b) < 0)
		return -1;
	if (t->cur && b > *mem)
		return fail(s, "<currentMemory> is larger than <memory>");
	if (t->maxm && elem_scaled(s, "<maxMemory>", t->maxm, &b) < 0)
		return -1;
	return 0;
}

/* Guest NUMA cells (or one implicit cell 0 with the initial memory: <memory>
 * less the memory devices), their pages and their host placement. */
static int read_cells(struct st *s, const struct top *t, uint64_t mem, uint64_t dev_sum)
{
	for (struct xel *n = t->cpu ? t->cpu->children : NULL; n; n = n->next)
		if (is_el(n, "numa")) {
			if (s->numa)
				return fail(s, "<cpu>: <numa> given twice");
			s->numa = n;
		}
	if (s->hugepages && parse_pages(s) < 0)
		return -1;
	if (s->numa && parse_cells(s) < 0)
		return -1;
	if (s->n_cells == 0) {
		if (mem < dev_sum)
			return fail(s, "<memory> is smaller than the memory devices");
		s->implicit_cell = true;
		s->cells[0].id = 0;
		s->cells[0].bytes = mem - dev_sum;
		s->n_cells = 1;
	}
	for (size_t i = 0; i < s->n_pages; i++)
		for (int id = 0; s->pages[i].has_nodeset && id <= HV_MAX_NODE_ID; id++)
			if (hv_nodeset_has(&s->pages[i].cells, id) && !find_cell(s, id))
				return fail(s, "<hugepages><page nodeset>: guest NUMA cell %d "
					    "does not exist", id);
	if (!s->numatune)
		return 0;
	if (s->implicit_cell)
		for (struct xel *n = s->numatune->children; n; n = n->next)
			if (is_el(n, "memnode"))
				return fail(s, "<numatune><memnode> without guest NUMA cells");
	return parse_numatune(s);
}

static int walk(struct st *s, struct xel *root)
{
	struct top t;
	uint64_t mem = 0, dev_sum = 0;

	if (read_top(s, root, &t) < 0)
		return -1;
	s->d->hugepages = s->hugepages || devices_use_hugepages(s);
	if (!s->d->hugepages)
		return 0; /* nothing for hvokit; the rest is libvirt's business */
	if (devices_sum(s, &dev_sum) < 0 || read_sizes(s, &t, &mem) < 0 ||
	    read_cells(s, &t, mem, dev_sum) < 0)
		return -1;
	for (size_t i = 0; i < s->n_cells; i++) {
		const struct cell *c = &s->cells[i];

		if (s->hugepages &&
		    add_item(s, cell_page(s, c->id), cell_tune(s, c->id), c->bytes) < 0)
			return -1;
	}
	return devices_demand(s);
}

/* Refuse any markup declaration but comments and CDATA sections (whose
 * contents, like those of processing instructions, are skipped). */
static bool has_declaration(const char *xml, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		const char *end = NULL;

		if (xml[i] != '<')
			continue;
		if (xml[i + 1] == '?')
			end = memmem(xml + i + 2, len - i - 2, "?>", 2);
		else if (xml[i + 1] != '!')
			continue;
		else if (len - i >= 4 && !memcmp(xml + i, "<!--", 4))
			end = memmem(xml + i + 4, len - i - 4, "-->", 3);
		else if (len - i >= 9 && !memcmp(xml + i, "<![CDATA[", 9))
			end = memmem(xml + i + 9, len - i - 9, "]]>", 3);
		else
			return true;
		if (!end)
			return false; /* unterminated: the parser refuses it */
		i = (size_t)(end - xml);
	}
	return false;
}

int hv_dom_demand(const char *xml, size_t len, uint64_t default_kb,
		  struct hv_demand *d, char *err, size_t errlen)
{
	struct st *s;
	struct xel *root;
	int r;

	memset(d, 0, sizeof(*d));
	if (errlen)
		err[0] = '\0';
	if (len == 0) {
		snprintf(err, errlen, "empty domain XML");
		return -1;
	}
	if (len > HV_DOM_MAX_XML) {
		snprintf(err, errlen, "domain XML is larger than %d bytes", HV_DOM_MAX_XML);
		return -1;
	}
	if (has_declaration(xml, len)) {
		snprintf(err, errlen, "domain XML has a DOCTYPE or markup declaration; "
			 "libvirt never sends one");
		return -1;
	}
	root = tree_parse(xml, len, err, errlen);
	if (!root)
		return -1;
	if (!is_el(root, "domain")) {
		snprintf(err, errlen, "the root element is not <domain>");
		tree_free(root);
		return -1;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		tree_free(root);
		return -1;
	}
	s->err = err;
	s->errlen = errlen;
	s->default_kb = default_kb;
	s->d = d;
	s->default_page = -1;
	r = walk(s, root);
	free(s);
	tree_free(root);
	if (r < 0) {
		d->n = 0;
		return -1;
	}
	return 0;
}

/* The <domain> of libvirt's status XML (<domstatus><domain>), or NULL */
static struct xel *status_domain(struct xel *root)
{
	if (!is_el(root, "domstatus"))
		return NULL;
	for (struct xel *n = root->children; n; n = n->next)
		if (is_el(n, "domain"))
			return n;
	return NULL;
}

/* "daxR.N" from a path /dev/daxR.N into out (32 bytes); false otherwise */
static bool dax_name(const char *path, size_t len, char out[32])
{
	static const char dev[] = "/dev/";
	size_t i = sizeof(dev) - 1, d1 = 0, d2 = 0;

	if (len < i + 6 || len - i >= 32 || strncmp(path, dev, i) || strncmp(path + i, "dax", 3))
		return false;
	for (i += 3; i < len && isdigit((unsigned char)path[i]); i++)
		d1++;
	if (i >= len || path[i++] != '.')
		return false;
	for (; i < len && isdigit((unsigned char)path[i]); i++)
		d2++;
	if (i != len || !d1 || !d2)
		return false;
	memcpy(out, path + 5, len - 5);
	out[len - 5] = '\0';
	return true;
}

static void dax_add(struct hv_dom_dax *u, const char *path, size_t len)
{
	char name[32];

	if (!dax_name(path, len, name))
		return;
	for (size_t i = 0; i < u->n; i++)
		if (!strcmp(u->dax[i], name))
			return;
	if (u->n < HV_DOM_MAX_DAX)
		strcpy(u->dax[u->n++], name);
}

/*
 * The mem-path of one QEMU argument: "memory-backend-file,id=m0,
 * mem-path=/dev/dax0.0,size=4G" or {"qom-type":"memory-backend-file",
 * "mem-path":"/dev/dax0.0",...}.  Other arguments have none.
 */
static void dax_from_arg(struct hv_dom_dax *u, const char *v)
{
	static const char kv[] = "mem-path=", js[] = "\"mem-path\"";
	const char *p;

	for (p = v; (p = strstr(p, kv)); p += sizeof(kv) - 1)
		if (p == v || p[-1] == ',')
			dax_add(u, p + sizeof(kv) - 1, strcspn(p + sizeof(kv) - 1, ","));
	for (p = v; (p = strstr(p, js)); ) {
		p += sizeof(js) - 1;
		p += strspn(p, " \t\r\n");
		if (*p != ':')
			continue;
		p++;
		p += strspn(p, " \t\r\n");
		if (*p++ != '"')
			continue;
		dax_add(u, p, strcspn(p, "\""));
	}
}

/* <memory model='nvdimm'|'virtio-pmem'><source><path>/dev/daxR.N */
static void dax_from_memdev(struct hv_dom_dax *u, struct xel *m)
{
	char *model = attr(m, "model");
	bool file = model && (!strcmp(model, "nvdimm") || !strcmp(model, "virtio-pmem"));

	free(model);
	for (struct xel *c = file ? m->children : NULL; c; c = c->next) {
		if (!is_el(c, "source"))
			continue;
		for (struct xel *p = c->children; p; p = p->next) {
			char *t = is_el(p, "path") ? text_of(p) : NULL;

			if (t)
				dax_add(u, t, strlen(t));
			free(t);
		}
	}
}

static void dax_from_domain(struct hv_dom_dax *u, struct xel *dom)
{
	for (struct xel *n = dom->children; n; n = n->next) {
		if (is_el(n, "name") && !u->name[0]) {
			char *t = text_of(n);

			if (t)
				snprintf(u->name, sizeof(u->name), "%s", t);
			free(t);
		} else if (is_el(n, "devices")) {
			for (struct xel *m = n->children; m; m = m->next)
				if (is_el(m, "memory"))
					dax_from_memdev(u, m);
		} else if (n->ns && !strcmp(n->name, "qemu:commandline")) {
			for (struct xel *a = n->children; a; a = a->next) {
				char *v = a->ns && !strcmp(a->name, "qemu:arg") ?
					  attr(a, "value") : NULL;

				if (v)
					dax_from_arg(u, v);
				free(v);
			}
		}
	}
}

int hv_dom_dax_uses(const char *xml, size_t len, struct hv_dom_dax *u)
{
	struct xel *root, *dom = NULL;
	char err[256];

	memset(u, 0, sizeof(*u));
	if (len == 0 || len > HV_DOM_MAX_XML || has_declaration(xml, len))
		return -1;
	root = tree_parse(xml, len, err, sizeof(err));
	if (!root)
		return -1;
	dom = is_el(root, "domain") ? root : status_domain(root);
	if (dom)
		dax_from_domain(u, dom);
	tree_free(root);
	return dom ? 0 : -1;
}

int hv_dom_status_uuid(const char *xml, size_t len, char uuid[37])
{
	struct xel *root, *dom = NULL, *u = NULL;
	char err[256], *t;
	int r = -1;

	uuid[0] = '\0';
	if (len == 0 || has_declaration(xml, len))
		return -1;
	root = tree_parse(xml, len, err, sizeof(err));
	if (!root)
		return -1;
	dom = status_domain(root);
	for (struct xel *n = dom ? dom->children : NULL; n && !u; n = n->next)
		if (is_el(n, "uuid"))
			u = n;
	if (u && (t = text_of(u))) {
		r = hv_uuid_canon(t, uuid) < 0 ? -1 : 0;
		free(t);
	}
	tree_free(root);
	return r;
}
