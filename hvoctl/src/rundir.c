/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The libvirt hook's run directory (declared in ledger.h): its log, the
 * directory and its host-wide lock, and files replaced atomically, with
 * whatever sits at a NAME.tmp removed, never followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "ledger.h"
#include "util.h"

/* ---------- logging: one line per decision, to syslog/journal ---------- */

void hv_hlog(int prio, const char *fmt, ...)
{
	const char *file = getenv("HVOCTL_HOOK_LOG");
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (file && *file) {
		/* Tests and the acceptance test: append, one write per line. */
		int fd = open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		size_t len = strlen(line);

		if (fd >= 0) {
			line[len] = '\n';
			if (write(fd, line, len + 1) < 0) {
				/* nowhere else to report */
			}
			close(fd);
		}
		return;
	}
	openlog("hvoctl-libvirt-hook", LOG_PID, LOG_DAEMON);
	syslog(prio, "%s", line);
	closelog();
}

void hv_herr(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	hv_err("libvirt-hook: %s", line);
	hv_hlog(LOG_ERR, "%s", line);
}

/* ---------- run directory, lock ---------- */

static int open_rundir(struct hv_ledger_dir *ld)
{
	struct stat st;

	if (mkdir(ld->path, 0700) != 0 && errno != EEXIST) {
		hv_herr("%s: cannot create: %s", ld->path, strerror(errno));
		return -1;
	}
	ld->dirfd = open(ld->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ld->dirfd < 0) {
		hv_herr("%s: %s", ld->path, strerror(errno));
		return -1;
	}
	if (fstat(ld->dirfd, &st) != 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 022) != 0) {
		hv_herr("%s: not owned by uid %u or writable by others; refusing to use it",
		     ld->path, (unsigned)geteuid());
		close(ld->dirfd);
		ld->dirfd = -1;
		return -1;
	}
	return 0;
}

/* Open the run directory and take the host-wide lock, with a timeout. */
int hv_ledger_lock(struct hv_ledger_dir *ld)
{
	long timeout = ld->lock_timeout_ms, start = hv_now_ms();

	if (open_rundir(ld) < 0)
		return -1;
	ld->lockfd = openat(ld->dirfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (ld->lockfd < 0) {
		hv_herr("%s/lock: %s", ld->path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (flock(ld->lockfd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			hv_herr("%s/lock: %s", ld->path, strerror(errno));
			return -1;
		}
		if (hv_now_ms() - start >= timeout) {
			hv_herr("%s/lock: still held by another hvoctl after %ld ms; giving up",
			     ld->path, timeout);
			return -1;
		}
		hv_sleep_ms(5);
	}
}

void hv_ledger_unlock(struct hv_ledger_dir *ld)
{
	if (ld->lockfd >= 0)
		close(ld->lockfd); /* drops the flock */
	ld->lockfd = -1;
	if (ld->dirfd >= 0)
		close(ld->dirfd);
	ld->dirfd = -1;
}

/* ---------- atomic files ---------- */

/*
 * Clear the way for NAME.tmp: whatever is there (a stale file, a symbolic
 * link, a directory, a FIFO, a hard link to another file) is removed, never
 * followed or written through.  0, or -1 (reported, with the fix).
 */
static int clear_tmp(struct hv_ledger_dir *ld, const char *tmp)
{
	struct stat sb;
	const char *what;

	if (fstatat(ld->dirfd, tmp, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return 0;
		hv_herr("%s/%s: %s; remove it by hand", ld->path, tmp, strerror(errno));
		return -1;
	}
	if (S_ISLNK(sb.st_mode))
		what = "a symbolic link";
	else if (S_ISDIR(sb.st_mode))
		what = "a directory";
	else if (S_ISFIFO(sb.st_mode))
		what = "a FIFO";
	else if (!S_ISREG(sb.st_mode))
		what = "not a regular file";
	else if (sb.st_nlink > 1)
		what = "a file with other links";
	else
		what = NULL; /* a stale .tmp of a dead hook */
	if (unlinkat(ld->dirfd, tmp, S_ISDIR(sb.st_mode) ? AT_REMOVEDIR : 0) != 0 &&
	    errno != ENOENT) {
		hv_herr("%s/%s is %s and cannot be removed (%s); remove it by hand "
			"(rm -r '%s/%s'), nothing in it is hvokit's", ld->path, tmp,
			what ? what : "a stale file", strerror(errno), ld->path, tmp);
		return -1;
	}
	if (what)
		hv_hlog(LOG_WARNING, "%s/%s was %s: removed, not followed", ld->path, tmp, what);
	return 0;
}

int hv_ledger_put_file(struct hv_ledger_dir *ld, const char *fn, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", fn) >= (int)sizeof(tmp) || clear_tmp(ld, tmp) < 0)
		return -1;
	fd = openat(ld->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		hv_herr("%s/%s: %s; %s must be a directory root can write to", ld->path, tmp,
			strerror(errno), ld->path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (fprintf(f, "%s\n", text) < 0 || fflush(f) != 0 || ferror(f)) {
		fclose(f);
		hv_herr("%s/%s: write failed; is %s full?", ld->path, tmp, ld->path);
		unlinkat(ld->dirfd, tmp, 0);
		return -1;
	}
	if (fclose(f) != 0) {
		hv_herr("%s/%s: write failed; is %s full?", ld->path, tmp, ld->path);
		unlinkat(ld->dirfd, tmp, 0);
		return -1;
	}
	if (renameat(ld->dirfd, tmp, ld->dirfd, fn) != 0) {
		hv_herr("%s/%s: cannot replace it: %s; if it is a directory, remove it by hand",
			ld->path, fn, strerror(errno));
		unlinkat(ld->dirfd, tmp, 0);
		return -1;
	}
	return 0;
}
