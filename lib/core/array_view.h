/* SPDX-License-Identifier: MIT */
/*
 * The holder's view: what the writable holder of an array sees now (member states, catch-up
 * progress, outages), published beside its lock file so that a read-only open on the same
 * host (graidctl status) reports the holder's view rather than the superblocks' last word.
 */
#ifndef LIBGRAID_CORE_ARRAY_VIEW_H
#define LIBGRAID_CORE_ARRAY_VIEW_H

#include <stdbool.h>
#include <stdint.h>

struct graid_array;

struct array_holder_role {
	int state;              /* enum graid_member_state, as the holder has it */
	uint64_t copied, total; /* its catch-up or rebuild, bytes */
	uint64_t outages;
	bool passthru;          /* an NVMe generic device */
	char blk[32], ctrl[32]; /* an NVMe member's block device and controller ("" if not) */
	char path[256];         /* the path the holder opened it by ("" if none) */
};

struct array_holder_view {
	bool valid;             /* loaded from a live holder at this read-only open */
	uint32_t pid;
	unsigned nroles;
	struct array_holder_role *role;
};

/* Holder: write the view now (every state change, rebuild checkpoints); meta_lock held. */
void array_view_publish(struct graid_array *a);
/* Holder, at close: remove it. */
void array_view_withdraw(struct graid_array *a);
/* Read-only open: load the view of a live holder on this host, if there is one. */
void array_view_load(struct graid_array *a);
void array_view_free(struct graid_array *a);

#endif
