/* SPDX-License-Identifier: MIT */
/*
 * What rebuild, scrub and resync do where a row met bad blocks (docs/ARRAYS.md, "Bad
 * blocks"): reads that failed with a media error narrowed to 4 KiB units, each counted
 * against its member as a foreground read error is; and rows recovered column by column,
 * each 4 KiB column from what the other members still hold there. The rare path, written to
 * be obviously right rather than fast: synchronous, one column at a time.
 */
#ifndef LIBGRAID_CORE_ROW_HEAL_H
#define LIBGRAID_CORE_ROW_HEAL_H

#include "io/member_batch.h"
#include "meta/badblocks.h"

/* 4 KiB units a job's reads could not read, by member. */
struct row_bad {
	unsigned n, cap;
	struct row_bad_unit {
		unsigned member;
		int fd;              /* the descriptor the read failed on */
		uint64_t off;        /* data-area byte, a multiple of BBL_UNIT */
		bool csum;           /* read, its bytes failing their tag (not unreadable) */
	} *u;
};

/* Forget the units (keep the memory). */
static inline void row_bad_reset(struct row_bad *b)
{
	b->n = 0;
}

void row_bad_free(struct row_bad *b);
/* Add one unit. 0 or -ENOMEM. */
int row_bad_add(struct row_bad *b, unsigned member, int fd, uint64_t off);

/* Whether any read of @p ios failed with an error its member kept (mbio.media). */
bool row_heal_any_media(const struct mbio *ios, size_t n);

/*
 * After a batch's reads on @p mb (keep_read_errors set): each read marked media is read
 * again 4 KiB at a time; the units that fail again count against their member
 * (array_member_read_error) and are added to @p bad, and the read's result becomes its
 * length (its buffer holds all the rest). A member past its threshold, or failing another
 * way, is failed. 0; -EAGAIN a member failed or changed device meanwhile (plan the batch
 * again without it); -ENOMEM (@p bad may hold part); -errno the ring broke.
 */
int row_heal_narrow(struct mbatch *mb, struct mbio *ios, size_t n, struct row_bad *bad);

/*
 * OR into @p cols the units of [off, off + len) of @p member listed in @p bad (bit i: the
 * unit at off + i * BBL_UNIT); true if any.
 */
/* Whether @p member's unit at data-area byte @p off is in @p b only for its tag (csum). */
bool row_bad_csum_only(const struct row_bad *b, unsigned member, uint64_t off);
bool row_bad_cols(const struct row_bad *b, unsigned member, uint64_t off, uint32_t len,
		  struct bbl_cols *cols);

/* The descriptor a unit of @p member at @p off failed on, or -1 when @p bad lists none. */
int row_bad_fd(const struct row_bad *b, unsigned member, uint64_t off);

/*
 * Recover a RAID-5/6 row column by column: @p blk the row's chunks in role order (data,
 * then P, Q), @p era per role the 4 KiB columns it lacks. A column with at most nparity
 * erasures is rebuilt in place in every erased role; one with more is left as it is and
 * set in @p lost, as is one set in @p lost already (by the caller). 0, or the engine's -errno.
 */
int row_heal_parity(struct graid_array *a, uint8_t *const *blk, const struct bbl_cols *era,
		    struct bbl_cols *lost);

/* What a write-back did, in 4 KiB units (added to). */
struct row_heal_count {
	uint64_t rewritten;      /* rebuilt and written back */
	uint64_t unrecoverable;  /* in a lost column: left as they are, recorded */
};

/*
 * After row_heal_parity(): write back, 4 KiB at a time and under the row's bitmap mark, the
 * columns it rebuilt for roles read from their member (@p present, per role) that lacked
 * them (a unit that failed to read, or one the member's log records: the write clears the
 * record). A unit that failed to read in a @p lost column cannot be rewritten: it is
 * recorded unreadable in its member's log. A rewrite that fails takes its member out (as
 * any write error does). Sends GRAID_EVENT_BLOCK_REPAIRED per member; @p count (may be
 * NULL) adds up what was done. 0, -ENOMEM or the ring's -errno.
 */
int row_heal_writeback(struct graid_array *a, struct mbatch *mb, uint64_t row,
		       uint8_t *const *blk, const struct bbl_cols *era, const struct bbl_cols *lost,
		       const bool *present, const struct row_bad *bad, struct row_heal_count *count);

/*
 * RAID-1/10: read unit @p u of a chunk (copies @p members at @p moff, @p k of them) into
 * @p dst from a copy other than members @p skip_a and @p skip_b that is readable there and
 * records no bad block there. A copy that fails with a media error counts it (and is
 * failed past the threshold). True if one had it.
 */
bool row_heal_unit_from_copy(struct graid_array *a, struct mbatch *mb, const unsigned *members,
			     const uint64_t *moff, unsigned k, unsigned skip_a, unsigned skip_b,
			     unsigned u, uint8_t *dst);

/* Columns of one chunk. */
static inline unsigned row_heal_cols(const struct graid_array *a)
{
	return a->lay.chunk / BBL_UNIT;
}

#endif /* LIBGRAID_CORE_ROW_HEAL_H */
