/* SPDX-License-Identifier: MIT */
/* The README's first command: the parity engines side by side, then a RAID-6 array losing two members. */
#include <stdio.h>

#include <libgraid/graid.h>

#include "demo.h"

int main(void)
{
	int rc;

	/* The demo reports what happens itself; the library's own log would repeat it. */
	graid_log_set(NULL, NULL, 0);
	printf("libgraid %s demo (no GPU or NVMe needed)\n\n", graid_version());
	rc = demo_engines();
	printf("\n");
	rc |= demo_array();
	return rc ? 1 : 0;
}
