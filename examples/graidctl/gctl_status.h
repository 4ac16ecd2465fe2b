/* SPDX-License-Identifier: MIT */
/* What graidctl status shows of an array: the look's view, or the holder's live one over it. */
#ifndef GCTL_STATUS_H
#define GCTL_STATUS_H

#include <stdint.h>

#include <libgraid/graid.h>

struct json_object;

struct status_member {
	int ok; /* member_info answered */
	struct graid_member_info mi;
	struct graid_bad_block *bad; /* its bad-block log (graid_array_bad_blocks) */
	unsigned nbad;
	/* HEALTHOBJ (docs/CONTROL.md): the holder's, or a look's own read; NULL: none */
	struct json_object *health;
};

struct status_view {
	struct graid_array_info info;
	struct status_member *m;
	unsigned nroles; /* roles that answered graid_array_member_info, spares included */
	const char *state;
	char **paths;    /* the paths given */
	struct graid_given_info *given; /* what became of each */
	int ngiven;
	uint64_t bad_bytes; /* in every role's bad-block log */
	int live;           /* roles and counters are the holder's, from its control endpoint */
	struct json_object *scrub; /* the holder's scrub (its status reply's), or NULL */
	struct json_object *stats; /* the holder's I/O statistics (its status reply's), or NULL */
};

void gctl_status_free(struct status_view *v);
/*
 * The array is held by a live process: ask it (its endpoint) for the live state and put
 * that over @p v. Without an endpoint the look stands, as it always did; one that is there
 * and fails is said on stderr, and the look stands whole.
 */
void gctl_status_ask_holder(struct graid_array *a, struct status_view *v);
/*
 * gctl_status_health.c. A look (no holder answered): each role's and spare's drive health
 * read from the drive now (graid_array_member_health(), one command each; files and other
 * block devices have none), not judged.
 */
void gctl_status_health_look(struct graid_array *a, struct status_view *v);
/* The health table below the roles' one, where any role or spare has health to show. */
void gctl_status_health_text(const struct status_view *v);

#endif /* GCTL_STATUS_H */
