/* SPDX-License-Identifier: MIT */
/* graid_lease_init(): the lease area an array's opens take their lease from (array/lease.h). */
#include <errno.h>

#include "common/internal.h"
#include "ownership/lease.h"

GRAID_API int graid_lease_init(const char *spec, const uint8_t array_uuid[16])
{
	struct array_lease *l;
	int rc;

	if (!spec || !array_uuid)
		return -EINVAL;
	rc = lease_open(spec, array_uuid, &l);
	if (rc)
		return rc;
	rc = lease_init_area(l);
	lease_close(l);
	return rc;
}
