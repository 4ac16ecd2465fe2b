/* SPDX-License-Identifier: MIT */
/*
 * A rebuild's rows that met bad blocks: a survivor's unreadable sector or a block its log
 * records. What redundancy still covers is rebuilt and written back to the survivor too;
 * what it does not is zeroed on the new member and recorded lost there, and the rebuild
 * goes on (docs/ARRAYS.md, "Bad blocks").
 */
#ifndef LIBGRAID_CORE_REBUILD_HEAL_H
#define LIBGRAID_CORE_REBUILD_HEAL_H

#include "io/row_heal.h"

/*
 * Whether RAID-5/6 row @p row needs the column path: a member it reads (@p have, per
 * member) has units in @p bad or in its log there, or (generations kept) the records of a
 * column disagree with its data beside the role out (lwc_rebuild_suspect()).
 */
bool rebuild_heal_parity_needed(struct graid_array *a, uint64_t row, const bool *have,
				const struct row_bad *bad);

/*
 * Rebuild RAID-5/6 row @p row column by column: @p blk its chunks in role order, members
 * not read (@p have false) lacking every column. Stale blocks the records locate are made
 * erasures first (lwc_rebuild_erasures()), and written back rebuilt. Survivors get back
 * what they lacked; in columns past redundancy (or whose records mismatch unplaced) the
 * chunks of the targets (@p target, @p ntarget members) are zeroed and their units added
 * to @p lost. 0 or -errno (engine, ring, memory).
 */
int rebuild_heal_parity_row(struct graid_array *a, struct mbatch *mb, uint64_t row,
			    uint8_t *const *blk, const bool *have, const unsigned *target,
			    unsigned ntarget, const struct row_bad *bad, struct row_bad *lost);

/*
 * RAID-1/10: target @p target's chunk at @p target_off was read into @p buf from member
 * @p src at @p src_off. Units @p src could not read (in @p bad) or records are read from
 * another live copy (and written back to @p src); those no copy has are zeroed in @p buf
 * and added to @p lost. 0 or -errno.
 */
int rebuild_heal_mirror_chunk(struct graid_array *a, struct mbatch *mb, unsigned target,
			      uint64_t target_off, uint8_t *buf, unsigned src, uint64_t src_off,
			      const struct row_bad *bad, struct row_bad *lost);

/*
 * The targets' writes of the units in @p lost landed (@p failed, per member: its writes
 * did not): record them lost in each target's log. A target whose log cannot take them is
 * failed (its zeroes would read as data). Empties @p lost.
 */
void rebuild_heal_record_lost(struct graid_array *a, struct row_bad *lost, const bool *failed);

#endif /* LIBGRAID_CORE_REBUILD_HEAL_H */
