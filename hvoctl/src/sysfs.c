/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "size.h"
#include "sysfs.h"
#include "util.h"

static hv_write_hook_fn write_hook;
static void *write_hook_ctx;

void hv_sys_set_write_hook(hv_write_hook_fn fn, void *ctx)
{
	write_hook = fn;
	write_hook_ctx = ctx;
}

int hv_sys_init(struct hv_sys *s, const char *root)
{
	struct stat st;
	size_t len;

	if (!root)
		root = getenv("HVOCTL_SYSROOT");
	if (!root)
		root = "";
	len = strlen(root);
	while (len > 0 && root[len - 1] == '/')
		len--;
	if (len >= sizeof(s->root))
		return -ENAMETOOLONG;
	memcpy(s->root, root, len);
	s->root[len] = '\0';
	if (len > 0 && (stat(s->root, &st) != 0 || !S_ISDIR(st.st_mode)))
		return -ENOENT;
	return 0;
}

int hv_path(const struct hv_sys *s, char *buf, size_t n, const char *rel)
{
	int r;

	if (rel[0] != '/')
		return -EINVAL;
	r = snprintf(buf, n, "%s%s", s->root, rel);
	if (r < 0 || (size_t)r >= n)
		return -ENAMETOOLONG;
	return 0;
}

bool hv_exists(const struct hv_sys *s, const char *rel)
{
	char p[PATH_MAX];

	if (hv_path(s, p, sizeof(p), rel) < 0)
		return false;
	return access(p, F_OK) == 0;
}

int hv_read_str(const struct hv_sys *s, const char *rel, char *buf, size_t n)
{
	char p[PATH_MAX];
	size_t len = 0;
	int fd, r;

	if (n == 0)
		return -EINVAL;
	r = hv_path(s, p, sizeof(p), rel);
	if (r < 0)
		return r;
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t got;

		if (len + 1 >= n) {
			char c;

			/* Buffer full: too big unless we are at EOF. */
			got = read(fd, &c, 1);
			if (got == 0)
				break;
			close(fd);
			return got < 0 ? -errno : -EFBIG;
		}
		got = read(fd, buf + len, n - 1 - len);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return r;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	return 0;
}

int hv_read_u64(const struct hv_sys *s, const char *rel, uint64_t *v)
{
	char buf[64];
	int r = hv_read_str(s, rel, buf, sizeof(buf));

	if (r < 0)
		return r;
	return hv_parse_u64(buf, v);
}

int hv_read_s64(const struct hv_sys *s, const char *rel, int64_t *v)
{
	char buf[64];
	int r = hv_read_str(s, rel, buf, sizeof(buf));

	if (r < 0)
		return r;
	return hv_parse_s64(buf, v);
}

int hv_write_str(const struct hv_sys *s, const char *rel, const char *val)
{
	char p[PATH_MAX];
	size_t len = strlen(val), done = 0;
	int fd, r;

	r = hv_path(s, p, sizeof(p), rel);
	if (r < 0)
		return r;
	/* O_TRUNC matters for fake trees; sysfs and procfs ignore it. */
	fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (done < len) {
		ssize_t w = write(fd, val + done, len - done);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return r;
		}
		done += (size_t)w;
	}
	if (close(fd) != 0)
		return -errno;
	if (write_hook)
		return write_hook(p, val, write_hook_ctx);
	return 0;
}

int hv_write_u64(const struct hv_sys *s, const char *rel, uint64_t val,
		 uint64_t *readback)
{
	char buf[32];
	int r;

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)val);
	r = hv_write_str(s, rel, buf);
	if (r < 0)
		return r;
	return hv_read_u64(s, rel, readback);
}

static int cmp_names(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;

	/* Natural order so that node10 sorts after node9. */
	while (*x && *x == *y && !isdigit((unsigned char)*x)) {
		x++;
		y++;
	}
	if (isdigit((unsigned char)*x) && isdigit((unsigned char)*y)) {
		unsigned long long nx = strtoull(x, NULL, 10);
		unsigned long long ny = strtoull(y, NULL, 10);

		if (nx != ny)
			return nx < ny ? -1 : 1;
	}
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void hv_free_names(char **names)
{
	if (!names)
		return;
	for (size_t i = 0; names[i]; i++)
		free(names[i]);
	free(names);
}

int hv_list_dir(const struct hv_sys *s, const char *rel, const char *prefix,
		char ***names, size_t *count)
{
	char p[PATH_MAX];
	char **v = NULL;
	size_t n = 0, cap = 0, plen = strlen(prefix);
	struct dirent *de;
	DIR *d;
	int r;

	*names = NULL;
	*count = 0;
	r = hv_path(s, p, sizeof(p), rel);
	if (r < 0)
		return r;
	d = opendir(p);
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strncmp(de->d_name, prefix, plen))
			continue;
		if (n + 2 > cap) {
			size_t ncap = cap ? cap * 2 : 8;
			char **nv = realloc(v, ncap * sizeof(*nv));

			if (!nv)
				goto oom;
			v = nv;
			cap = ncap;
		}
		{
			char *dup = strdup(de->d_name);

			if (!dup)
				goto oom;
			v[n++] = dup;
			v[n] = NULL;
		}
	}
	closedir(d);
	if (!v) {
		v = calloc(1, sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	qsort(v, n, sizeof(*v), cmp_names);
	*names = v;
	*count = n;
	return 0;
oom:
	closedir(d);
	if (v) {
		v[n] = NULL;
		hv_free_names(v);
	}
	return -ENOMEM;
}

int hv_read_u64_report(const struct hv_sys *s, const char *rel, uint64_t *v)
{
	char full[PATH_MAX];
	int e = hv_read_u64(s, rel, v);

	if (e < 0) {
		hv_path(s, full, sizeof(full), rel);
		hv_err("read: %s: %s", full, e == -EINVAL ? "not a number" : strerror(-e));
	}
	return e;
}

int hv_write_u64_report(const struct hv_sys *s, const char *rel, uint64_t val,
			uint64_t *readback)
{
	char full[PATH_MAX];
	int e = hv_write_u64(s, rel, val, readback);

	if (e < 0) {
		hv_path(s, full, sizeof(full), rel);
		hv_err("write: %s: %llu: %s", full, (unsigned long long)val,
		       e == -EINVAL ? "read back is not a number" : strerror(-e));
	}
	return e;
}
