/* SPDX-License-Identifier: MIT */
/* A role copied onto a new device while its member stays in service (docs/REPLACE.md). */
#ifndef LIBGRAID_CORE_REPLACE_H
#define LIBGRAID_CORE_REPLACE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "array/array.h"
#include "member/member_replace.h"
#include "meta/badblocks.h"

/*
 * Chunk-sized piece [off, off + len) of role @p role into @p buf from the other members
 * (the copies, or the row's other chunks and parity), 4 KiB units listed in @p want (bit
 * i: the unit at off + i * 4 KiB). Units none can give are zeroed and their offsets added
 * to @p r's lost list. 0 or -ENOMEM.
 */
/* 4 KiB units of one chunk at most (chunks are at most 1 MiB). */
#define REPLACE_CSUM_UNITS (BBL_COLS_WORDS * 64u)

/*
 * A checksummed array: the chunk [off, off + len) of the role read into @p buf checked
 * against its tags; units that fail are added to @p want and @p bad, the CRC-32C of what
 * was read into @p fp (by unit). 0, or the tag store's -errno.
 */
int replace_csum_check(struct graid_array *a, struct array_replace *r, uint64_t off,
		       uint32_t len, const uint8_t *buf, struct bbl_cols *want,
		       struct bbl_cols *bad, uint32_t *fp);
/*
 * The units of @p bad once taken from the redundancy into @p buf: their tags set from it
 * (the new device gets them with the tag area at the swap), each an event: CSUM_TAG_ERROR
 * (the same bytes as read), CSUM_ERROR healed, or CSUM_ERROR -EIO (lost to every device).
 */
void replace_csum_settle(struct graid_array *a, struct array_replace *r, uint64_t off,
			 const uint8_t *buf, const struct bbl_cols *bad, const uint32_t *fp);
int replace_from_redundancy(struct graid_array *a, struct array_replace *r, uint64_t off,
			    uint32_t len, const struct bbl_cols *want, uint8_t *buf);

/*
 * The health watch judged role @p role's drive critical: a replace onto the last hot spare
 * starts, where there is one and no other replace runs (logged). meta_lock held.
 */
void replace_auto(struct graid_array *a, unsigned role);
/* Stop the copy (close): the role keeps its member, the new device is let go. */
void replace_stop(struct graid_array *a);
/* The end of the handle: stop, and free every replace it made (array_free). */
void replace_free(struct graid_array *a);
/* The replace fields of graid_array_member_info() for role @p role, without a lock. 0. */
int replace_progress(struct graid_array *a, unsigned role, struct graid_member_info *i);

#endif
