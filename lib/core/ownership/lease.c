/* SPDX-License-Identifier: MIT */
/* The lease interface (lease.h): which lock manager a spec names, and the common calls. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "ownership/lease.h"

static const struct lease_ops *const lease_managers[] = { &lease_sanlock_ops };

int lease_open(const char *spec, const uint8_t uuid[16], struct array_lease **out)
{
	const struct lease_ops *ops = NULL;
	struct array_lease *l;
	const char *colon = spec ? strchr(spec, ':') : NULL;
	int rc;

	if (!colon) {
		graid__log(GRAID_LOG_ERR, "lease '%s': not NAME:OPTIONS:PATH (NAME: sanlock)",
			   spec ? spec : "(null)");
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(lease_managers) / sizeof(lease_managers[0]); i++)
		if (strlen(lease_managers[i]->name) == (size_t)(colon - spec) &&
		    !strncmp(spec, lease_managers[i]->name, (size_t)(colon - spec)))
			ops = lease_managers[i];
	if (!ops) {
		graid__log(GRAID_LOG_ERR, "lease '%s': unknown lock manager '%.*s' (known: sanlock)",
			   spec, (int)(colon - spec), spec);
		return -EINVAL;
	}
	if (strlen(spec) >= sizeof(l->spec)) {
		graid__log(GRAID_LOG_ERR, "lease '%.64s...': longer than %zu bytes", spec,
			   sizeof(l->spec) - 1);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->ops = ops;
	memcpy(l->uuid, uuid, 16);
	strcpy(l->spec, spec);
	rc = ops->parse(l, colon + 1);
	if (rc) {
		lease_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

void lease_close(struct array_lease *l)
{
	if (!l)
		return;
	lease_drop(l);
	l->ops->free(l);
	free(l);
}
