/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer target: domain XML -> huge page demand (make fuzz). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domxml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hv_demand d;
	char err[512];
	char u[37];
	struct hv_nodeset ns;
	char *s;

	if (hv_dom_demand((const char *)data, size, 2048, &d, err, sizeof(err)) == 0) {
		/* Invariants of a successful parse. */
		if (d.n > HV_DOM_MAX_DEMANDS)
			abort();
		for (size_t i = 0; i < d.n; i++)
			if (d.items[i].pages == 0 || d.items[i].size_kb <= 4 ||
			    (d.items[i].strict && hv_nodeset_empty(&d.items[i].nodes)))
				abort();
		if (d.hugepages && d.n && strlen(d.uuid) != 36)
			abort();
	} else if (!err[0]) {
		abort(); /* a refusal always says why */
	}
	{
		static struct hv_dom_dax x;

		if (hv_dom_dax_uses((const char *)data, size, &x) == 0)
			for (size_t i = 0; i < x.n; i++)
				if (x.n > HV_DOM_MAX_DAX || strncmp(x.dax[i], "dax", 3) ||
				    !strchr(x.dax[i], '.'))
					abort();
	}
	/* The small parsers on the same bytes. */
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	hv_uuid_canon(s, u);
	if (hv_nodeset_parse(s, &ns) == 0) {
		char buf[64];

		hv_nodeset_format(&ns, buf, sizeof(buf));
	}
	free(s);
	return 0;
}
