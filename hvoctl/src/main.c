/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>

#include "cmd.h"

int main(int argc, char **argv)
{
	int r = hv_main(argc, argv, stdout);

	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("hvoctl: write: stdout");
		return 1;
	}
	return r;
}
