/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The one layer through which hvoctl touches sysfs and procfs.  Every path
 * is given as an absolute path of the running system ("/sys/...",
 * "/proc/...") and resolved below a root directory, so tests run on fake
 * trees built in a temporary directory (--sysroot DIR, HVOCTL_SYSROOT).
 */
#ifndef HVOCTL_SYSFS_H
#define HVOCTL_SYSFS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hv_sys {
	char root[PATH_MAX]; /* "" means the real root */
};

/*
 * Test hook, called after every successful write with the full path and
 * the value written.  A fake "kernel" can rewrite the file to simulate what
 * the kernel would do (e.g. obtain fewer huge pages than asked).
 * Returns 0, or a negative errno that the write then reports.
 */
typedef int (*hv_write_hook_fn)(const char *path, const char *value,
				void *ctx);
void hv_sys_set_write_hook(hv_write_hook_fn fn, void *ctx);

/* root NULL: use $HVOCTL_SYSROOT if set, else the real root.
 * Returns 0 or -ENAMETOOLONG / -ENOENT (root is not a directory). */
int hv_sys_init(struct hv_sys *s, const char *root);

/* Full path of an absolute system path below the root, for messages too. */
int hv_path(const struct hv_sys *s, char *buf, size_t n, const char *rel);

bool hv_exists(const struct hv_sys *s, const char *rel);

/* Read a whole small file; trailing whitespace stripped.  0 or -errno
 * (-EFBIG if it does not fit). */
int hv_read_str(const struct hv_sys *s, const char *rel, char *buf, size_t n);
/* Read a file holding one unsigned / signed decimal number.
 * -EINVAL if the content is not such a number, -ERANGE on overflow. */
int hv_read_u64(const struct hv_sys *s, const char *rel, uint64_t *v);
int hv_read_s64(const struct hv_sys *s, const char *rel, int64_t *v);

/* hv_read_u64() that reports a failure ("read: PATH: not a number") on
 * the diagnostic stream; same return values. */
int hv_read_u64_report(const struct hv_sys *s, const char *rel, uint64_t *v);

/* Write a string (no newline added).  0 or -errno. */
int hv_write_str(const struct hv_sys *s, const char *rel, const char *val);
/* Write a number and read the file back into *readback.  The caller
 * decides whether a different read-back value is an error (nr_hugepages
 * legitimately reads back less than asked; a sysctl must not). */
int hv_write_u64(const struct hv_sys *s, const char *rel, uint64_t val,
		 uint64_t *readback);

/* hv_write_u64() that reports a failure ("write: PATH: VALUE: why"). */
int hv_write_u64_report(const struct hv_sys *s, const char *rel, uint64_t val,
			uint64_t *readback);

/* Names of entries in a directory that start with prefix, sorted,
 * returned in a NULL-terminated malloc'ed array (free with hv_free_names).
 * 0 or -errno. */
int hv_list_dir(const struct hv_sys *s, const char *rel, const char *prefix,
		char ***names, size_t *count);
void hv_free_names(char **names);

#endif
