/* SPDX-License-Identifier: MIT */
/*
 * A RAID-5/6 grow of an array with per-block checksums (docs/RESHAPE.md, "Checksums across
 * a grow"; docs/INTEGRITY.md, "Growing"): the added roles' tags, the write generations and
 * parity records of the new rows the job writes, and the job's synchronous member I/O
 * through the same tag path as the ring's (reads verified, writes tagged).
 */
#ifndef LIBGRAID_CORE_RESHAPE_CSUM_H
#define LIBGRAID_CORE_RESHAPE_CSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "array/array.h"
#include "format/layout.h"
#include "member/member.h"
#include "member/member_io.h"
#include "meta/badblocks.h"

/*
 * The @p n added devices' tag areas written, and flushed, before anything names them (what
 * the device held there is nobody's): with generations every tag "never written" (present,
 * generation 0, CRC 0: a write of the job's lost with its tag is then one write behind the
 * parity's record, and the device's old bytes fail their CRC), without them zeroed (absent).
 * 0 (also without checksums), -EOPNOTSUPP where an added device would keep its tags in its
 * blocks' NVMe metadata (a passthrough namespace in tag mode: nothing written, logged), or
 * the -errno of a write or flush.
 */
int reshape_csum_prep_added(struct graid_array *a, struct member *m, unsigned n);

/*
 * The added roles [@p base, @p base + @p n) kept by the tag store from now on; meta_lock
 * held, their devices installed, before the member count shows them. 0 or -errno
 * (tag_store_add_role()).
 */
int reshape_csum_install(struct graid_array *a, unsigned base, unsigned n);

/*
 * [@p off, @p off + @p len) of @p m's data area is about to be zeroed under its tags (the
 * space a grow adds): its tags made absent and written back first, so that no crash leaves
 * zeroes under the tags of the bytes that were there (absent: read unverified, generation
 * and record 0, which zeroes are consistent with). 0 (also without checksums) or -errno.
 */
int reshape_csum_forget(struct graid_array *a, unsigned m, uint64_t off, uint64_t len);

/*
 * Words (meta bits 0-30) per 4 KiB block of a chunk: how many reshape_csum_row_meta() fills
 * per role.
 */
static inline unsigned reshape_csum_words(const struct layout *l)
{
	return l->chunk / 4096u;
}

/*
 * The meta words of new row @p row of @p l written whole by the job (every role; a role out
 * is counted as written, its block's generation the one the record then implies): a full
 * stripe write's (docs/INTEGRITY.md, "Each write path"): each data block the next generation
 * of the tag its place has now (so that a lost write of the job's is caught as any lost
 * write), P and Q the record of those. Into @p meta, role r's words at
 * r * reshape_csum_words(l). The caller holds the row's lock (no other write of it).
 * 1: no words to give (no generations kept), @p meta untouched; 0; or -errno (a tag block
 * unreadable other than by its medium, -ENOMEM).
 */
int reshape_csum_row_meta(struct graid_array *a, const struct layout *l, uint64_t row,
			  uint32_t *meta);

/*
 * The meta words of a write by the job of @p n 4 KiB blocks at data-area byte @p off of member
 * @p m outside any row it judges by a geometry (the staged copy, reshape_stage.c): each
 * block's next generation of the tag it has now (absent: 0, so 1), what a synchronous write
 * without words gets (reshape_csum_pio() with NULL). On the job's ring a write without words
 * is given them by its column in the array's geometry (member_batch.c), which the staged
 * copy's place is not in: it carries these. 1: no words to give (no generations kept),
 * @p meta untouched; 0; or -errno of tag_store_peek_load() (-ENOMEM, a tag block unreadable).
 */
int reshape_csum_next_meta(struct graid_array *a, unsigned m, uint64_t off, unsigned n,
			   uint32_t *meta);

/*
 * Whether old row @p row of a grow (its lock held) has a column whose parity records
 * disagree with its data's write generations: a lost write (docs/INTEGRITY.md, "Lost
 * writes") that moving the row's chunks as they read would bless with fresh tags. The
 * caller then moves them through reshape_csum_judge_old(). False without generations.
 */
bool reshape_csum_row_suspect(struct graid_array *a, uint64_t row);

/*
 * Old row @p row of @p l read into @p blk (role order; @p era per role: the 4 KiB units
 * that hold nothing valid, a role out all of them), before its erasures are rebuilt: the
 * records judged as a scrub (every role in) or a rebuild (one out) judges them. A stale
 * block the records locate beside an erasure is added to @p era (rebuilt with it); one in
 * a column without an erasure rebuilt in @p blk now (a lost write healed by the move: its
 * right bytes go to the new place, reported healed); a column past the parities, or a
 * mismatch nothing locates, set in @p lost_cols (what the caller's chunk then carries as
 * lost: reads of it fail -EIO at the new place as they did at the old, never the stale
 * bytes under a fresh tag). A mismatch not located marks every unit of the row lost in
 * @p lost_cols (the column is not told apart: a chunk's worth lost, never a stale byte).
 * 0 or -errno of the engine.
 */
int reshape_csum_judge_old(struct graid_array *a, const struct layout *l, uint64_t row,
			   uint8_t **blk, struct bbl_cols *era, struct bbl_cols *lost_cols);

/*
 * The job's synchronous I/O of @p len bytes at data-area byte @p off of member @p m, through
 * member_data_pio() with the tags of the ring's I/O (member_io.c): a write's tags made
 * pending before it (with @p meta: its words, reshape_csum_row_meta(); NULL: each block's
 * next generation) and kept or dropped after; a read verified against its tags, -EBADMSG
 * with @p mf's csum set (array_member_read_error() then takes it as a medium error), its
 * mismatches pending in the role's csum_pend and logged (csum_report_unresynced()).
 * Without checksums: member_data_pio() alone. 0 or -errno; @p mf (its fd set by the call)
 * as member_io_done() leaves it.
 */
int reshape_csum_pio(struct graid_array *a, unsigned m, bool write, void *buf, size_t len,
		     uint64_t off, const uint32_t *meta, struct member_io_fault *mf);

#endif
