/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

/*
 * Run under a name containing "hvokit" (the Debian package's symbolic link
 * /etc/libvirt/hooks/qemu.d/hvokit -> /usr/sbin/hvoctl, or a copy of this
 * binary under that name), hvoctl is the libvirt hook itself:
 * libvirt execs it with "DOMAIN OPERATION SUB-OP EXTRA", which run as
 * "hvoctl libvirt-hook -- DOMAIN OPERATION SUB-OP EXTRA" without a shell
 * in between.
 */
static bool called_as_hook(const char *argv0)
{
	const char *base = argv0 ? strrchr(argv0, '/') : NULL;

	base = base ? base + 1 : argv0;
	return base && strstr(base, "hvokit") != NULL;
}

int main(int argc, char **argv)
{
	char *hook_argv[16];
	int r;

	/* libvirt passes four arguments; more are a usage error below. */
	if (argc >= 1 && argc + 3 <= (int)(sizeof(hook_argv) / sizeof(hook_argv[0])) &&
	    called_as_hook(argv[0])) {
		hook_argv[0] = argv[0];
		hook_argv[1] = (char *)"libvirt-hook";
		hook_argv[2] = (char *)"--";
		for (int i = 1; i <= argc; i++)
			hook_argv[i + 2] = argv[i];
		argc += 2;
		argv = hook_argv;
	}
	r = hv_main(argc, argv, stdout);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("hvoctl: write: stdout");
		return 1;
	}
	return r;
}
