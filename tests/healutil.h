/* SPDX-License-Identifier: MIT */
/* Helpers of the heal suites (tests/test_heal_*.c): patterned fills, checks, new members, ready-made arrays. */
#ifndef LIBGRAID_HEALUTIL_H
#define LIBGRAID_HEALUTIL_H

#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

/* Each member: 1 MiB of superblock and bitmap area, 4 MiB of data. */
#define HEAL_MEMBER_BYTES ((1u << 20) + (4u << 20))

/* The pattern of round @p round for @p len bytes at array offset @p off. */
void heal_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t round);
/* Write round @p round's pattern over the first @p size bytes of @p a. */
void heal_fill(struct graid_array *a, uint64_t size, uint32_t round);
/* Every 4 KiB block holds the pattern of round[block] (NULL: all `round0`). */
void heal_verify(struct graid_array *a, uint64_t size, const uint32_t *round,
		 uint32_t round0, const char *when);
/* A new, empty member file @p name in @p s's folder; its path (one of AU_MAX buffers in turn). */
char *heal_new_member(struct au_set *s, const char *name);

/* What a rebuild's progress callback saw. */
struct heal_progress {
	uint64_t last, total;
	int calls, backwards;
};
/* A graid_progress_fn filling a struct heal_progress. */
void heal_progress_cb(void *arg, uint64_t done, uint64_t total);

/*
 * RAID-5 of 4 members, 4 KiB chunks, filled with pattern 9, role 2 replaced by "new" (not
 * rebuilt yet) and the array closed; @p members: the paths to open it with.
 */
void heal_raid5_role2_replaced_closed(struct au_set *s, const char **members,
				      char *newpath, size_t len);
/* RAID-5 of 4 members, chunks of @p chunk bytes, filled with pattern 9, role 2 failed. */
struct graid_array *heal_raid5_role2_failed(struct au_set *s, uint32_t chunk,
					    struct graid_array_info *info);
/* Role 2 of @p a replaced by a new member whose writes fail after the first one. */
void heal_replace_with_failing_writes(struct au_set *s, struct graid_array *a);

#endif
