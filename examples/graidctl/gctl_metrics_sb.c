/* SPDX-License-Identifier: MIT */
/* graidctl metrics: an array no look can open, as its superblocks describe it (docs/METRICS.md). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "gctl_metrics.h"

/*
 * The array series the alerting rules read, from the scan alone: a role with a device found
 * is active, one the members record failed is failed, the rest are down. Failed is the
 * state where the look said the roles left cannot be assembled (-EIO with a role lacking);
 * any other refusal (a permission, a read error) says nothing of the state: only graid_up 0
 * and the role counts then. Both GraidArrayFailed and GraidArrayDegraded keep firing
 * through the file while the array stays unreadable.
 */
int gctl_metrics_superblocks(struct gctl_metrics_merge *m, const struct gctl_scan_array *a,
			     int look_rc)
{
	static const char *const states[] = { "active", "degraded", "recovering", "resync",
					      "check", "failed" };
	unsigned active = 0, failed = 0, down;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -ENOMEM;
	for (unsigned r = 0; r < a->nmembers && r < GRAID_MAX_MEMBERS; r++) {
		if (a->found[r])
			active++;
		else if (a->out_already[r])
			failed++;
	}
	down = a->nmembers - active - failed;
	fprintf(f, "# HELP graid_disks_required Member roles of the array (as "
		"node_md_disks_required).\n# TYPE graid_disks_required gauge\n"
		"graid_disks_required{array=\"%s\"} %u\n",
		a->uuid_text, a->nmembers);
	fprintf(f, "# HELP graid_disks Member roles by state (as node_md_disks): active, failed, "
		"spare, down.\n# TYPE graid_disks gauge\n");
	fprintf(f, "graid_disks{array=\"%s\",state=\"active\"} %u\n", a->uuid_text, active);
	fprintf(f, "graid_disks{array=\"%s\",state=\"failed\"} %u\n", a->uuid_text, failed);
	fprintf(f, "graid_disks{array=\"%s\",state=\"spare\"} %u\n", a->uuid_text, a->nspares);
	fprintf(f, "graid_disks{array=\"%s\",state=\"down\"} %u\n", a->uuid_text, down);
	fprintf(f, "# HELP graid_degraded Member roles not active (md's degraded).\n"
		"# TYPE graid_degraded gauge\ngraid_degraded{array=\"%s\"} %u\n", a->uuid_text,
		a->nmembers - active);
	if (look_rc == -EIO && active < a->nmembers) {
		fprintf(f, "# HELP graid_state 1 for the array's state (as node_md_state).\n"
			"# TYPE graid_state gauge\n");
		for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			fprintf(f, "graid_state{array=\"%s\",state=\"%s\"} %d\n", a->uuid_text,
				states[i], i + 1 == sizeof(states) / sizeof(states[0]));
	}
	fprintf(f, "# HELP graid_served 1 when a holder that may write rendered the array, 0 "
		"for a read-only look or the superblocks alone.\n# TYPE graid_served gauge\n"
		"graid_served{array=\"%s\"} 0\n", a->uuid_text);
	rc = fclose(f) ? -ENOMEM : 0;
	if (rc == 0)
		rc = gctl_metrics_merge_add(m, text);
	free(text);
	return rc;
}

/* graid_up: 1 for an array whose metrics were read (holder or look), 0 for one that was not. */
int gctl_metrics_up(struct gctl_metrics_merge *m, const char *uuid_text, int up)
{
	char text[512];

	snprintf(text, sizeof(text), "# HELP graid_up 1 when graidctl read the array's metrics "
		 "(from its holder or a read-only look), 0 when only its superblocks.\n"
		 "# TYPE graid_up gauge\ngraid_up{array=\"%s\"} %d\n", uuid_text, up);
	return gctl_metrics_merge_add(m, text);
}
