/* SPDX-License-Identifier: MIT */
/* graid_version(): the version the library was built as. */
#include "common/internal.h"

GRAID_API const char *graid_version(void)
{
	return GRAID_VERSION;
}
