/* SPDX-License-Identifier: MIT */
/* The metrics' snapshot of one array, taken before any text is written (docs/METRICS.md). */
#ifndef LIBGRAID_CORE_METRICS_H
#define LIBGRAID_CORE_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <libgraid/graid.h>

/* One role (idx < nmembers) or hot spare, as graid_array_member_info() numbers them. */
struct metrics_member {
	struct graid_member_info mi;
	struct graid_member_health h;
	bool health;             /* h was read */
	uint64_t health_ns;      /* when h was sampled (CLOCK_MONOTONIC) */
	struct graid_io_stats io; /* the device's I/O as the handle counted it */
	double eta_s;            /* rebuild or catch-up seconds remaining; < 0: no estimate */
};

/* What the families are rendered from: everything read first, so a family never waits. */
struct metrics_snap {
	struct graid_array *a;
	char label[160];         /* the `array` label: the caller's name or the UUID */
	char uuid[37];
	struct graid_array_info info;
	unsigned nall;           /* roles and spares in m */
	struct metrics_member *m;
	bool broken;             /* more roles out than the level survives */
	bool served;             /* a handle that may write (a holder), not a read-only look */
	uint64_t now_ns;         /* when the snapshot was taken */
	uint64_t event_seq;      /* the handle's last event number; 0 none yet */
	unsigned scrubs;         /* graid_array_scrub() calls under way on the handle */
	double scrub_ratio;      /* how far an unfinished scrub's checkpoint is, 0 .. 1 */
	struct graid_io_stats io; /* the callers' I/O (graid_array_stats(), member -1) */
};

/* Fill @p s for @p a (label already set); 0 or a negative errno. metrics_snap_free() after. */
int metrics_snap_take(struct metrics_snap *s, struct graid_array *a, unsigned flags);
void metrics_snap_free(struct metrics_snap *s);

/*
 * The seconds a rebuild or catch-up of role @p role of the array @p uuid has left, from the
 * progress this process saw earlier (any caller's render); < 0 while there is no estimate.
 */
double metrics_eta(const uint8_t uuid[16], unsigned role, uint64_t done, uint64_t total,
		   uint64_t now_ns);

/* Write the families of the latency histograms and I/O counts (metrics_stats.c). */
void metrics_stats_families(FILE *out, const struct metrics_snap *s, unsigned n);

/* Text helpers: a label value escaped as the exposition format wants it. */
void metrics_label(FILE *out, const char *value);

#endif /* LIBGRAID_CORE_METRICS_H */
