/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef HVOCTL_CMD_H
#define HVOCTL_CMD_H

#include <stdio.h>

#define HVOCTL_VERSION "0.2.0"

/* The whole program: parses argv, runs a subcommand, writes results to out
 * and diagnostics to hv_log().  Returns the exit code (HV_EXIT_*). */
int hv_main(int argc, char **argv, FILE *out);

#endif
