/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Renderers for the host state: human table, JSON (json-c), Prometheus text. */
#ifndef HVOCTL_OUTPUT_H
#define HVOCTL_OUTPUT_H

#include <stdio.h>

#include "pools.h"

void hv_print_table(FILE *f, const struct hv_state *st);
void hv_print_json(FILE *f, const struct hv_state *st);
void hv_print_metrics(FILE *f, const struct hv_state *st);

#endif
