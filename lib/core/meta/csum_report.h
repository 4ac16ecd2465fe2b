/* SPDX-License-Identifier: MIT */
/* Checksum mismatches settled: healed (data or tag wrong), given up on, or unverified after a crash. */
#ifndef LIBGRAID_CORE_CSUM_REPORT_H
#define LIBGRAID_CORE_CSUM_REPORT_H

#include "array/array.h"
#include "member/member_io.h"

/*
 * A write of @p len bytes of @p role's data area completed (@p mf as member_io_done() left
 * it): the mismatches it covers are healed. Each is a GRAID_EVENT_CSUM_TAG_ERROR when the
 * bytes written are those the member had returned (its tag was wrong), else a
 * GRAID_EVENT_CSUM_ERROR with error 0. Cheap when no mismatch is pending.
 */
void csum_report_written(struct graid_array *a, unsigned role, const struct member_io_fault *mf,
			 uint32_t len);

/*
 * [off, off + len) of @p role's data area could not be rebuilt: its pending mismatches end
 * as GRAID_EVENT_CSUM_ERROR with error -EIO.
 */
void csum_report_lost(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/*
 * A lost write found by generations (docs/INTEGRITY.md, "Lost writes"): @p nblocks blocks
 * from @p block of @p role's data area were stale (their own tags held, their generations
 * behind what the other members of their write record), healed (@p err 0: the caller has
 * rewritten them with the expected generation) or not (@p err -EIO). One
 * GRAID_EVENT_CSUM_LOST_WRITE each, counted in the role's checksum_errors and
 * checksum_lost_writes, logged at warning (error when not healed). @p role -1: the stale
 * block of a column could not be located; @p block then names the column (the block number
 * on its data members), one event, nothing counted (no role to count it on). The caller
 * reports the block here only, not also through csum_pend (which would count it twice).
 */
void csum_report_lost_write(struct graid_array *a, int role, uint64_t block, unsigned nblocks,
			    int err);

/*
 * A read of @p len bytes ended -EBADMSG from its tags (@p mf->csum). True when it lies in a
 * region still to be resynced after an unclean open: its bytes are taken as they are, their
 * tags made from them, and each mismatch a GRAID_EVENT_CSUM_UNVERIFIED (not counted as an
 * error, logged at info as "unverified after crash"); the caller then treats the read as
 * done. False: a mismatch to heal, logged at warning as failing its checksums. Every reader
 * of member_io_done() calls it on -EBADMSG: it is where such a read is logged.
 */
bool csum_report_unresynced(struct graid_array *a, unsigned role, struct member_io_fault *mf,
			    uint32_t len);

#endif
