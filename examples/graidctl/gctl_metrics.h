/* SPDX-License-Identifier: MIT */
/* graidctl metrics: exposition texts merged family by family (gctl_metrics_merge.c). */
#ifndef GCTL_METRICS_H
#define GCTL_METRICS_H

#include <stdio.h>

#include "gctl_scan.h"

struct gctl_metrics_merge;

struct gctl_metrics_merge *gctl_metrics_merge_new(void);
/* Take one exposition text's families and samples; 0, -ENOMEM, or -EINVAL a line of no metric. */
int gctl_metrics_merge_add(struct gctl_metrics_merge *m, const char *text);
/* Every family once, in the order first seen: HELP, TYPE, then its samples; 0 or -EIO. */
int gctl_metrics_merge_write(const struct gctl_metrics_merge *m, FILE *out);
void gctl_metrics_merge_free(struct gctl_metrics_merge *m);

/*
 * gctl_metrics_sb.c: the array series of @p a from the scan alone, for an array the read-only
 * look refused with @p look_rc (graid_state failed where that was -EIO with a role lacking).
 */
int gctl_metrics_superblocks(struct gctl_metrics_merge *m, const struct gctl_scan_array *a,
			     int look_rc);
/* graid_up{array=@p uuid_text} @p up: whether graidctl read the array's metrics. */
int gctl_metrics_up(struct gctl_metrics_merge *m, const char *uuid_text, int up);

#endif /* GCTL_METRICS_H */
