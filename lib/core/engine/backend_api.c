/* SPDX-License-Identifier: MIT */
/*
 * The public engine calls that need the measurement above the registry: open by name or
 * "auto" (the fastest measured), and the list with each engine's measured rate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "engine/engine.h"

GRAID_API int graid_backend_open(const char *name, struct graid_backend **out)
{
	char chosen[32];
	int rc;

	if (!out)
		return -EINVAL;
	graid__fork_safe();
	if (!name) {
		name = getenv("GRAID_BACKEND");
		if (!name || !*name)
			name = "auto";
	}
	if (strcmp(name, "auto"))
		return graid__backend_open_named(name, out);
	rc = graid__select_auto(chosen, sizeof(chosen));
	if (rc)
		return rc;
	rc = graid__backend_open_named(chosen, out);
	if (rc == -ENODEV && strcmp(chosen, "isal") && strcmp(chosen, "ref")) {
		/* Measured usable, but not now (a forked child, a device gone): the CPU. */
		graid__log(GRAID_LOG_NOTICE, "auto: %s cannot be opened now; using the CPU engine",
			   chosen);
		rc = graid__backend_open_named("isal", out);
		if (rc)
			rc = graid__backend_open_named("ref", out);
	}
	/* An accelerator picked by auto shares work with the CPU by batch size. */
	if (rc == 0 && ((*out)->flags & GRAID_BACKEND_F_ACCELERATOR) && (*out)->fallback)
		graid__route_measure(*out);
	return rc;
}

GRAID_API int graid_backend_list(struct graid_backend_desc *descs, unsigned max,
				 unsigned flags)
{
	unsigned n = 0;

	if ((max && !descs) || (flags & ~GRAID_LIST_MEASURE))
		return -EINVAL;
	for (unsigned i = 0; i < max; i++)
		if (descs[i].struct_size < sizeof(struct graid_backend_desc))
			return -EINVAL;
	if (flags & GRAID_LIST_MEASURE)
		graid__measure_all();
	for (const char *const *k = graid__known_engines; *k; k++, n++)
		if (n < max) {
			graid__backend_describe(*k, &descs[n]);
			descs[n].gen_gbps = graid__measured_gbps(*k);
		}
	return (int)n;
}
