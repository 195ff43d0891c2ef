/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's ledger: one entry file per guest, and pool writes
 * journaled in the entry (the run directory, its lock and log, and the
 * atomic file writes are in rundir.c).  The rules for crash safety are in
 * ledger.h and in hvoctl(8), section LIBVIRT HOOK.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <json-c/json.h>

#include "ledger.h"
#include "util.h"

const char *const hv_ledger_state_name[] = { "none", "preparing", "running",
	"released", "growing" };

/* ---------- entries on disk ---------- */

static void ledger_fname(const char *uuid, char *buf, size_t n)
{
	snprintf(buf, n, "guest-%s.ledger", uuid);
}

static void hex_encode(const char *s, char *out, size_t n)
{
	static const char hx[] = "0123456789abcdef";
	size_t o = 0;

	for (; *s && o + 3 <= n; s++) {
		out[o++] = hx[(unsigned char)*s >> 4];
		out[o++] = hx[(unsigned char)*s & 15];
	}
	out[o < n ? o : n - 1] = '\0';
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int hex_decode(const char *s, char *out, size_t n)
{
	size_t o = 0;

	for (; s[0] && s[1]; s += 2) {
		int a = hexval(s[0]), b = hexval(s[1]);

		if (a < 0 || b < 0 || (a == 0 && b == 0) || o + 1 >= n)
			return -1;
		out[o++] = (char)(a << 4 | b);
	}
	out[o] = '\0';
	return *s ? -1 : 0;
}

static json_object *jnum(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static int add_need(struct hv_ledger *l, uint64_t size_kb, bool strict, const char *nodes,
		    uint64_t pages)
{
	struct hv_demand_item *it;

	if (l->n_need >= HV_DOM_MAX_DEMANDS)
		return -1;
	it = &l->need[l->n_need++];
	memset(it, 0, sizeof(*it));
	it->size_kb = size_kb;
	it->pages = pages;
	it->strict = strict;
	return strict ? hv_nodeset_parse(nodes, &it->nodes) : 0;
}

static int add_pendnode(struct hv_ledger *l, int node, uint64_t before)
{
	struct hv_ledger_pending *pd = &l->pend;

	if (pd->n_nodes >= HV_MAX_NODES)
		return -1;
	pd->nodes[pd->n_nodes] = node;
	pd->node_before[pd->n_nodes++] = before;
	return 0;
}

/* The entry as JSON (format 3). */
static json_object *ledger_json(const struct hv_ledger *l)
{
	const struct hv_ledger_pending *pd = &l->pend;
	json_object *o = json_object_new_object(), *a;
	char nsbuf[1024];
	uint32_t c;
	bool utf8 = true;

	for (size_t i = 0, len = strlen(l->name), k; i < len && utf8; i += k)
		utf8 = (k = hv_utf8_next((const unsigned char *)l->name + i, len - i, &c)) != 0;
	json_object_object_add(o, "format", json_object_new_string("hvokit-ledger"));
	json_object_object_add(o, "version", json_object_new_int(3));
	json_object_object_add(o, "uuid", json_object_new_string(l->uuid));
	if (utf8) {
		json_object_object_add(o, "name", json_object_new_string(l->name));
	} else {
		char hexname[sizeof(l->name) * 2 + 1];

		hex_encode(l->name, hexname, sizeof(hexname));
		json_object_object_add(o, "name_hex", json_object_new_string(hexname));
	}
	json_object_object_add(o, "name_truncated", json_object_new_boolean(l->name_truncated));
	json_object_object_add(o, "state",
			       json_object_new_string(hv_ledger_state_name[l->state]));
	if (l->state == HV_LS_GROWING)
		json_object_object_add(o, "was",
				       json_object_new_string(hv_ledger_state_name[l->was]));
	json_object_object_add(o, "time", json_object_new_int64(l->time));
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_need; i++) {
		json_object *n = json_object_new_object();

		hv_nodeset_format(&l->need[i].nodes, nsbuf, sizeof(nsbuf));
		json_object_object_add(n, "size_kb", jnum(l->need[i].size_kb));
		json_object_object_add(n, "strict", json_object_new_boolean(l->need[i].strict));
		json_object_object_add(n, "nodes", json_object_new_string(nsbuf));
		json_object_object_add(n, "pages", jnum(l->need[i].pages));
		json_object_array_add(a, n);
	}
	json_object_object_add(o, "need", a);
	a = json_object_new_array();
	for (size_t i = 0; i < l->n_add; i++) {
		json_object *n = json_object_new_object();

		json_object_object_add(n, "size_kb", jnum(l->add[i].size_kb));
		json_object_object_add(n, "node", json_object_new_int(l->add[i].node));
		json_object_object_add(n, "pages", jnum(l->add[i].pages));
		json_object_array_add(a, n);
	}
	json_object_object_add(o, "added", a);
	if (pd->set) {
		json_object *pj = json_object_new_object();

		json_object_object_add(pj, "size_kb", jnum(pd->size_kb));
		json_object_object_add(pj, "node", json_object_new_int(pd->node));
		json_object_object_add(pj, "before", jnum(pd->before));
		json_object_object_add(pj, "target", jnum(pd->target));
		a = json_object_new_array();
		for (size_t i = 0; i < pd->n_nodes; i++) {
			json_object *n = json_object_new_object();

			json_object_object_add(n, "node", json_object_new_int(pd->nodes[i]));
			json_object_object_add(n, "before", jnum(pd->node_before[i]));
			json_object_array_add(a, n);
		}
		json_object_object_add(pj, "nodes", a);
		json_object_object_add(o, "pending", pj);
	}
	return o;
}

int hv_ledger_write(struct hv_ledger_dir *ld, const struct hv_ledger *l)
{
	char fn[96];
	json_object *o = ledger_json(l);
	const char *text;
	int r;

	ledger_fname(l->uuid, fn, sizeof(fn));
	text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
					      JSON_C_TO_STRING_SPACED |
					      JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		json_object_put(o);
		hv_herr("%s/%s: out of memory", ld->path, fn);
		return -1;
	}
	r = hv_ledger_put_file(ld, fn, text);
	json_object_put(o);
	return r;
}

static int parse_state(const char *s)
{
	for (int i = HV_LS_PREPARING; i <= HV_LS_GROWING; i++)
		if (!strcmp(s, hv_ledger_state_name[i]))
			return i;
	return -1;
}

/* Format 1 and 2, the line format of hvoctl before 0.2: read so that an
 * upgrade while guests run keeps their entries.  0 or -1 (malformed). */
static int ledger_parse_text(char *buf, struct hv_ledger *l)
{
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char a[1100], c[1100], d[64];
		unsigned long long x, y, z;
		long long t;
		int node;

		if (sscanf(line, "uuid %36s", a) == 1) {
			memcpy(l->uuid, a, sizeof(l->uuid) - 1);
			l->uuid[sizeof(l->uuid) - 1] = '\0';
		} else if (sscanf(line, "name %1099s", a) == 1) {
			if (strcmp(a, "-") && hex_decode(a, l->name, sizeof(l->name)) < 0)
				return -1;
		} else if (sscanf(line, "truncated %d", &node) == 1) {
			l->name_truncated = node != 0;
		} else if (sscanf(line, "state %63s", d) == 1) {
			if ((l->state = parse_state(d)) < 0)
				return -1;
		} else if (sscanf(line, "was %63s", d) == 1) {
			if (strcmp(d, "none") && (l->was = parse_state(d)) < 0)
				return -1;
		} else if (sscanf(line, "time %lld", &t) == 1) {
			l->time = t;
		} else if (sscanf(line, "need %llu %63s %1099s %llu", &x, d, c, &y) == 4) {
			if (add_need(l, x, !strcmp(d, "strict"), c, y) < 0)
				return -1;
		} else if (sscanf(line, "added %llu %d %llu", &x, &node, &y) == 3) {
			if (l->n_add >= HV_LEDGER_MAX_ADDS)
				return -1;
			l->add[l->n_add++] = (struct hv_ledger_add){ x, node, y };
		} else if (sscanf(line, "pending %llu %d %llu %llu", &x, &node, &y, &z) == 4) {
			l->pend.set = true;
			l->pend.size_kb = x;
			l->pend.node = node;
			l->pend.before = y;
			l->pend.target = z;
		} else if (sscanf(line, "pendnode %d %llu", &node, &y) == 2) {
			if (add_pendnode(l, node, y) < 0)
				return -1;
		} else if (strcmp(line, "hvokit-ledger 1") && strcmp(line, "hvokit-ledger 2")) {
			return -1;
		}
	}
	return 0;
}

/* Typed members of a JSON object; false if absent or of another type. */
static bool jget(json_object *o, const char *key, json_type t, json_object **v)
{
	return json_object_object_get_ex(o, key, v) && json_object_is_type(*v, t);
}

static bool ju64(json_object *o, const char *key, uint64_t *v)
{
	json_object *n;

	if (!jget(o, key, json_type_int, &n) || json_object_get_int64(n) < 0)
		return false;
	*v = (uint64_t)json_object_get_int64(n);
	return true;
}

static bool jint(json_object *o, const char *key, int *v)
{
	json_object *n;
	int64_t x;

	if (!jget(o, key, json_type_int, &n))
		return false;
	x = json_object_get_int64(n);
	if (x < -1 || x > HV_MAX_NODE_ID)
		return false;
	*v = (int)x;
	return true;
}

static bool jstate(json_object *o, const char *key, int *v)
{
	json_object *n;

	return jget(o, key, json_type_string, &n) &&
	       (*v = parse_state(json_object_get_string(n))) >= 0;
}

/* Format 3: JSON.  0 or -1 (malformed). */
static int ledger_parse_json(const char *buf, struct hv_ledger *l)
{
	json_object *o = json_tokener_parse(buf), *v, *a;
	int ret = -1;

	if (!o || !json_object_is_type(o, json_type_object) ||
	    !jget(o, "format", json_type_string, &v) ||
	    strcmp(json_object_get_string(v), "hvokit-ledger") ||
	    !jget(o, "version", json_type_int, &v) || json_object_get_int(v) != 3 ||
	    !jget(o, "uuid", json_type_string, &v) ||
	    json_object_get_string_len(v) != 36)
		goto out;
	memcpy(l->uuid, json_object_get_string(v), 37);
	if (jget(o, "name", json_type_string, &v)) {
		if ((size_t)json_object_get_string_len(v) >= sizeof(l->name))
			goto out;
		memcpy(l->name, json_object_get_string(v),
		       (size_t)json_object_get_string_len(v) + 1);
	} else if (jget(o, "name_hex", json_type_string, &v) &&
		   hex_decode(json_object_get_string(v), l->name, sizeof(l->name)) < 0) {
		goto out;
	}
	if (jget(o, "name_truncated", json_type_boolean, &v))
		l->name_truncated = json_object_get_boolean(v);
	if (!jstate(o, "state", &l->state))
		goto out;
	if (jget(o, "was", json_type_string, &v) && strcmp(json_object_get_string(v), "none") &&
	    !jstate(o, "was", &l->was))
		goto out;
	if (!jget(o, "time", json_type_int, &v))
		goto out;
	l->time = json_object_get_int64(v);
	if (jget(o, "need", json_type_array, &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			json_object *n = json_object_array_get_idx(a, i), *strict, *nodes;
			uint64_t kb, pages;

			if (!ju64(n, "size_kb", &kb) || !ju64(n, "pages", &pages) ||
			    !jget(n, "strict", json_type_boolean, &strict) ||
			    !jget(n, "nodes", json_type_string, &nodes) ||
			    add_need(l, kb, json_object_get_boolean(strict),
				     json_object_get_string(nodes), pages) < 0)
				goto out;
		}
	if (jget(o, "added", json_type_array, &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			json_object *n = json_object_array_get_idx(a, i);
			struct hv_ledger_add ad;

			if (l->n_add >= HV_LEDGER_MAX_ADDS || !ju64(n, "size_kb", &ad.size_kb) ||
			    !jint(n, "node", &ad.node) || !ju64(n, "pages", &ad.pages))
				goto out;
			l->add[l->n_add++] = ad;
		}
	if (json_object_object_get_ex(o, "pending", &v)) {
		struct hv_ledger_pending *pd = &l->pend;

		if (!ju64(v, "size_kb", &pd->size_kb) || !jint(v, "node", &pd->node) ||
		    !ju64(v, "before", &pd->before) || !ju64(v, "target", &pd->target))
			goto out;
		pd->set = true;
		if (jget(v, "nodes", json_type_array, &a))
			for (size_t i = 0; i < json_object_array_length(a); i++) {
				json_object *n = json_object_array_get_idx(a, i);
				uint64_t before;
				int node;

				if (!jint(n, "node", &node) || !ju64(n, "before", &before) ||
				    add_pendnode(l, node, before) < 0)
					goto out;
			}
	}
	ret = 0;
out:
	json_object_put(o);
	return ret;
}

/* 1: read, 0: no entry, -1: unreadable or malformed (logged). */
int hv_ledger_read(struct hv_ledger_dir *ld, const char *uuid, struct hv_ledger *l)
{
	char fn[96], buf[HV_LEDGER_MAX_BYTES + 1];
	ssize_t n;
	size_t len = 0;
	int fd, e;

	memset(l, 0, sizeof(*l));
	l->state = HV_LS_PREPARING;
	ledger_fname(uuid, fn, sizeof(fn));
	fd = openat(ld->dirfd, fn, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		hv_hlog(LOG_ERR, "ledger %s/%s: %s", ld->path, fn, strerror(errno));
		return -1;
	}
	while (len < HV_LEDGER_MAX_BYTES &&
	       (n = read(fd, buf + len, HV_LEDGER_MAX_BYTES - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	e = buf[0] == '{' ? ledger_parse_json(buf, l) : ledger_parse_text(buf, l);
	if (e < 0 || strcmp(l->uuid, uuid)) {
		hv_hlog(LOG_ERR, "ledger %s/%s: malformed; ignoring it", ld->path, fn);
		return -1;
	}
	return 1;
}

void hv_ledger_remove(struct hv_ledger_dir *ld, const char *uuid)
{
	char fn[96];

	ledger_fname(uuid, fn, sizeof(fn));
	if (unlinkat(ld->dirfd, fn, 0) != 0 && errno != ENOENT)
		hv_hlog(LOG_ERR, "ledger %s/%s: %s", ld->path, fn, strerror(errno));
}

/* UUIDs of all ledger entries (malloc'ed array of 37-byte strings). */
static size_t ledger_list(struct hv_ledger_dir *ld, char (**out)[37])
{
	int fd = dup(ld->dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	char (*v)[37] = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;

	*out = NULL;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		char u[37];
		size_t len = strlen(de->d_name);

		if (len != 6 + 36 + 7 || strncmp(de->d_name, "guest-", 6) ||
		    strcmp(de->d_name + 42, ".ledger"))
			continue;
		memcpy(u, de->d_name + 6, 36);
		u[36] = '\0';
		if (hv_uuid_canon(u, u) < 0 || strncmp(u, de->d_name + 6, 36))
			continue;
		if (n == cap) {
			void *nv = realloc(v, (cap = cap ? cap * 2 : 16) * sizeof(*v));

			if (!nv)
				break;
			v = nv;
		}
		memcpy(v[n++], u, 37);
	}
	closedir(dir);
	*out = v;
	return n;
}

/* ---------- pages added, pool writes with an intent ---------- */

int hv_ledger_add(struct hv_ledger *l, uint64_t size_kb, int node, uint64_t pages)
{
	if (pages == 0)
		return 0;
	for (size_t i = 0; i < l->n_add; i++)
		if (l->add[i].size_kb == size_kb && l->add[i].node == node) {
			l->add[i].pages = hv_add_sat(l->add[i].pages, pages);
			return 0;
		}
	if (l->n_add >= HV_LEDGER_MAX_ADDS)
		return -1;
	l->add[l->n_add++] = (struct hv_ledger_add){ size_kb, node, pages };
	return 0;
}

void hv_ledger_sub(struct hv_ledger *l, uint64_t size_kb, int node, uint64_t pages)
{
	for (size_t i = 0; i < l->n_add; i++) {
		struct hv_ledger_add *a = &l->add[i];

		if (a->size_kb != size_kb || a->node != node)
			continue;
		a->pages -= pages < a->pages ? pages : a->pages;
		if (a->pages == 0)
			memmove(a, a + 1, (l->n_add-- - i - 1) * sizeof(*a));
		return;
	}
}

uint64_t hv_ledger_added(const struct hv_ledger *l, uint64_t size_kb, int node)
{
	for (size_t i = 0; i < l->n_add; i++)
		if (l->add[i].size_kb == size_kb && l->add[i].node == node)
			return l->add[i].pages;
	return 0;
}

uint64_t hv_ledger_added_total(const struct hv_ledger *l)
{
	uint64_t t = 0;

	for (size_t i = 0; i < l->n_add; i++)
		t = hv_add_sat(t, l->add[i].pages);
	return t;
}

/*
 * Settle l's pending pool write: what the pool holds now against what it
 * held before, never more than was asked, is added to (growth) or taken
 * from (shrink) the entry's records.  The same code runs right after the
 * write and, for a hook killed around it, in the next holder of the lock,
 * so both reach the same records.  -1 (intent kept) if a count is unreadable.
 */
static int settle(struct hv_ledger_dir *ld, struct hv_ledger *l)
{
	struct hv_ledger_pending *pd = &l->pend;
	uint64_t now[HV_MAX_NODES];
	size_t n = pd->n_nodes ? pd->n_nodes : 1;

	if (!pd->set)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int node = pd->n_nodes ? pd->nodes[i] : pd->node;

		if (hv_pool_count(ld->sys, pd->size_kb, node, &now[i]) < 0) {
			hv_hlog(LOG_ERR, "ledger of %s: cannot read the %" PRIu64 " kB pool "
				"(node %d); the pool write stays pending", l->uuid, pd->size_kb,
				node);
			return -1;
		}
	}
	if (pd->target > pd->before) {
		uint64_t room = pd->target - pd->before;

		for (size_t i = 0; i < n; i++) {
			uint64_t b = pd->n_nodes ? pd->node_before[i] : pd->before;
			uint64_t got = now[i] > b ? now[i] - b : 0;

			if (got > room)
				got = room;
			room -= got;
			if (hv_ledger_add(l, pd->size_kb, pd->n_nodes ? pd->nodes[i] : pd->node,
				       got) < 0) {
				hv_hlog(LOG_ERR, "ledger of %s: too many records", l->uuid);
				return -1;
			}
		}
	} else {
		uint64_t gone = now[0] < pd->before ? pd->before - now[0] : 0;

		if (gone > pd->before - pd->target)
			gone = pd->before - pd->target;
		hv_ledger_sub(l, pd->size_kb, pd->node, gone);
	}
	pd->set = false;
	return 0;
}

/*
 * Bring one pool (node < 0: the global count) to target: intent on disk
 * first, then the write, then the settled records on disk.  Refuses to
 * start while an earlier intent is unsettled (the disk must keep it).
 */
int hv_ledger_pool_write(struct hv_ledger_dir *ld, struct hv_ledger *l,
			 struct hv_state *st, struct hv_pool *p, int node,
			 uint64_t target, struct hv_reserve_result *r)
{
	struct hv_reserve_opts ro = ld->ropts;
	struct hv_ledger_pending *pd = &l->pend;
	int ni = node >= 0 ? hv_state_node_index(st, node) : -1, rc;

	memset(r, 0, sizeof(*r));
	if (pd->set || (node >= 0 && ni < 0) || hv_pool_reread(ld->sys, st, p) < 0)
		return -1;
	memset(pd, 0, sizeof(*pd));
	pd->set = true;
	pd->size_kb = p->size_kb;
	pd->node = node;
	pd->before = node >= 0 ? p->nodes[ni].total : p->total;
	pd->target = target;
	if (node < 0 && target > pd->before)
		for (size_t i = 0; i < p->n_nodes; i++) {
			pd->nodes[pd->n_nodes] = p->nodes[i].node;
			pd->node_before[pd->n_nodes++] = p->nodes[i].total;
		}
	if (hv_ledger_write(ld, l) < 0) {
		pd->set = false;
		return -1;
	}
	ro.quiet = true;
	rc = hv_reserve(ld->sys, p->size_kb, node, target, &ro, r);
	if (settle(ld, l) < 0)
		return -1;
	if (hv_ledger_write(ld, l) < 0)
		rc = -1; /* the disk holds the intent: the next hook settles it */
	if (hv_pool_reread(ld->sys, st, p) < 0)
		rc = -1;
	return rc;
}

/* ---------- all entries, repaired ---------- */

/* Repair what a dead hook left in l: settle its pending write, and put a
 * "growing" entry back to its state before (a new entry becomes released,
 * so that its pages are given back).  Called with the lock held. */
static void recover_entry(struct hv_ledger_dir *ld, struct hv_ledger *l)
{
	bool dirty = false;

	if (l->pend.set) {
		if (settle(ld, l) < 0)
			return;
		hv_hlog(LOG_WARNING, "ledger of %s: a hook died during a pool write; settled "
		     "(%" PRIu64 " pages recorded as added)", l->uuid, hv_ledger_added_total(l));
		dirty = true;
	}
	if (l->state == HV_LS_GROWING) {
		l->state = l->was != HV_LS_NONE ? l->was : HV_LS_RELEASED;
		l->was = HV_LS_NONE;
		if (l->state == HV_LS_RELEASED)
			l->n_need = 0;
		hv_hlog(LOG_WARNING, "ledger of %s: a prepare died; entry %s", l->uuid,
		     hv_ledger_state_name[l->state]);
		dirty = true;
	}
	if (dirty)
		hv_ledger_write(ld, l);
}

/* Every entry, repaired; *n_out entries (malloc'ed, may be NULL). */
struct hv_ledger *hv_ledger_load_all(struct hv_ledger_dir *ld, size_t *n_out)
{
	char (*ids)[37];
	size_t n = ledger_list(ld, &ids), k = 0;
	struct hv_ledger *v = n ? calloc(n, sizeof(*v)) : NULL;

	if (!v) {
		free(ids);
		*n_out = 0;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (hv_ledger_read(ld, ids[i], &v[k]) != 1)
			continue;
		recover_entry(ld, &v[k]);
		k++;
	}
	free(ids);
	*n_out = k;
	return v;
}

bool hv_ledger_is_promise(const struct hv_ledger *l, int64_t now)
{
	return l->state == HV_LS_PREPARING && now - l->time <= HV_LEDGER_PROMISE_TTL;
}
