/* SPDX-License-Identifier: MIT */
/* The reshape record on the members: written durably to every writable one, read back at open. */
#ifndef LIBGRAID_CORE_META_RESHAPE_REC_H
#define LIBGRAID_CORE_META_RESHAPE_REC_H

#include <stdbool.h>
#include <stddef.h>

#include "array/array.h"
#include "format/reshape_format.h"
#include "member/member.h"

struct meta_ring;

/*
 * What record writes keep between calls: meta_write_all()'s ring and the buffer its writes
 * read (a write given up on after the I/O timeout may read it until the ring is freed).
 * Zero-initialised to begin; its owner serialises use.
 */
struct reshape_rec_io {
	struct meta_ring *ring;
	uint8_t *buf;               /* two copies' room, made at first use */
};

/*
 * Write @p r to every member whose role is writable, durably, before returning. @p start:
 * the first record of a reshape, to both blocks of the area in one write (so no copy of an
 * earlier reshape survives beside it), before any superblock records the reshape (until
 * then a torn write of it loses nothing); else to block generation mod 2 only, leaving the previous
 * generation whole in the other. A member that failed the write, or did not answer within
 * the I/O timeout, is failed as for any metadata write (meta_timed_settle: kept, and
 * logged, when it holds the last copy of something), so no current member is left holding
 * an older record than the one relied on. Call with no array lock held.
 * @return how many members took it durably; -EIO none did (logged: the caller must not rely
 *   on it); -ESTALE the array was taken over (nothing written); -EROFS a read-only handle
 *   (nothing written, no member failed); -ENOMEM.
 */
int reshape_rec_write(struct graid_array *a, struct reshape_rec_io *io,
		      const struct reshape_record *r, bool start);

/* The ring (waiting for writes given up on) and the buffer, freed; before the members close. */
void reshape_rec_io_free(struct graid_array *a, struct reshape_rec_io *io);

/*
 * Read both copies on each of the @p n members @p m (the current members; NULL entries
 * skipped) and take the newest valid one of the array @p sb describes (reshape_newest),
 * which must be the record @p sb announces (reshape_matches_sb). Every copy that does not
 * decode or is another array's, every read that fails, is logged naming the member and why.
 * @return 0 and *@p out filled; -ENOENT no member holds a valid copy of this array's;
 *   -EPROTO the newest one does not match @p sb (*@p why names the field), *@p out filled
 *   with it (a reshape starting goes past its generation); -ENOMEM.
 */
int reshape_rec_read(struct member *const *m, unsigned n, const struct superblock *sb,
		     struct reshape_record *out, const char **why);

/* "RAID-5 of 4 -> RAID-5 of 5, at byte P of E, phase COPY, generation G" into @p buf. */
void reshape_rec_describe(const struct reshape_record *r, char *buf, size_t len);

#endif
