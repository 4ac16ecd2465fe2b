/* SPDX-License-Identifier: MIT */
/*
 * RAID-5/6 growing's staging (docs/RESHAPE.md, "RAID-5/6 growing, as built"): the first
 * rows, whose new places overwrite their own sources, copied to the added member and moved
 * from there, phases STAGING and STAGED of the record (docs/FORMAT.md, "The reshape record").
 */
#ifndef LIBGRAID_CORE_RESHAPE_STAGE_H
#define LIBGRAID_CORE_RESHAPE_STAGE_H

#include "array/array.h"
#include "jobs/reshape_job.h"

/*
 * Run the staging of job @p j from the phase of its record (STAGING or STAGED), under the
 * locks of every row it touches in either geometry: STAGING: copy array bytes
 * [0, stage_bytes) to the added member's rows past the new geometry's, their tags and the
 * member flushed, record STAGED; STAGED: write their new rows from that copy, flush (tags
 * first), record COPY at stage_bytes and advance @p rs's position. A resume in STAGING copies
 * again (the old rows were not written); in STAGED writes the new rows again from the copy.
 * @p rs's fence covers [0, stage_bytes) while the record says STAGED. The caller checked that
 * the copy's member is in (a paused job does not come here).
 * Each step's member I/O is batched on the job's ring (or, at an open, before the job's thread
 * has one, a ring of its size opened for the step): the copy's reads at once then its writes
 * (a buffer's worth at a time), the new rows a batch at a time (grow56_staged_rows), with the
 * same durability steps and fault handling as the windows'. With checksums, the reads are
 * verified against their tags (a block failing its tag is unreadable: recovered from parity),
 * the writes carry their meta words (reshape_csum.h), and the tags are written back before
 * each record.
 * @return 0; -ENOMEM; -errno the ring (opening one, or it broke); -EIO the array broke;
 * -ENODEV the copy's member is out or went out (a staging write failing takes it out);
 * grow56_recover_old()'s, grow56_staged_rows()'s, grow56_flush()'s, the copy member's
 * flush's, tag_store_write_back()'s, reshape_csum_next_meta()'s, badblocks_sync()'s and
 * grow_record_next()'s errors (the record keeps its phase).
 */
int grow56_stage_run(struct graid_array *a, struct reshape_job *j, struct array_reshape *rs);

#endif
