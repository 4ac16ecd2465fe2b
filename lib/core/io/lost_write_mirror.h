/* SPDX-License-Identifier: MIT */
/*
 * RAID-1/10 lost writes (docs/INTEGRITY.md, "Lost writes"): the copies of a block carry one
 * generation; a write gives them all the copies' maximum + 1, a read compares the copy it
 * read with the others' cached tags, and a copy behind is healed from the copy ahead.
 * Everything here does nothing while a->csum_gens is false.
 */
#ifndef LIBGRAID_CORE_LOST_WRITE_MIRROR_H
#define LIBGRAID_CORE_LOST_WRITE_MIRROR_H

#include <stdint.h>

#include "array/array.h"
#include "io/member_batch.h"
#include "io/queue.h"

/*
 * A mirror write of @p s (under its stripe lock) to the @p n copies @p members at @p moff:
 * s->wmeta set to max(generation of the copies) + 1 for each 4 KiB block, read with
 * tag_store_peek_load() (a tag block not cached is read), and s->wmeta_on set so that every
 * copy's write carries them. A copy not writable, or whose tags this store does not hold
 * (NVMe metadata), is not counted. 0, or -ENOMEM (then nothing is set and the write takes
 * each copy's own next generation).
 */
int lost_write_mirror_write_gens(struct graid_array *a, struct sop *s, const unsigned *members,
				 const uint64_t *moff, unsigned n);

/*
 * Whether @p buf (@p len bytes, whole 4 KiB blocks) holds what copy @p role's tags say its
 * data-area range at byte @p off holds: every block's tag present, no write of it in flight,
 * and its CRC matching. False where any block cannot be checked so (tags kept inline, in NVMe
 * metadata; a tag absent: never written, discarded, its tag block lost to a bad sector) or
 * does not match: a heal's source taken from memory the caller owns is checked so before it
 * is written.
 */
bool lost_write_mirror_source_holds(struct graid_array *a, unsigned role, uint64_t off,
				    const uint8_t *buf, size_t len);

/*
 * A heal of @p s (sop_mirror_repair, under the stripe lock) writing copy @p src (its range
 * at data-area byte @p src_off) over others: s->wmeta set to @p src's committed generations,
 * so that the copies healed get the expected generation, not their own + 1. 0 or -errno
 * (-ENOMEM, a tag block unreadable: then nothing is set).
 */
int lost_write_mirror_heal_gens(struct graid_array *a, struct sop *s, unsigned src,
				uint64_t src_off);

/*
 * A mirror read of s->mirror_src ended with its CRCs held: its blocks' generations compared
 * with the other copies' cached tags (no I/O; a block not cached on either side, or under a
 * write in flight on either side, is not compared; nor is an operation in a region still to
 * resync after a crash, where copies may differ by a torn write). Outside the stripe lock a
 * mismatch only sets s->read_failed (the read is done again under the lock). Under it: the
 * copy read behind another is noted bad and s->read_failed set (read again from another
 * copy, which is checked in turn); copies behind the one read are noted bad (the repair
 * writes it over them with its generations) and each stale block kept pending in its role's
 * csum_pend as a lost write (csum_pend_add_lost()): reported by csum_report_lost_write()
 * when the repair's write is done (error 0), or when the operation fails (-EIO); where it
 * cannot be rewritten (a read-only array, more bad copies than the operation holds) it is
 * reported -EIO at once.
 */
void lost_write_mirror_check(struct graid_array *a, struct sop *s);

/*
 * Scrub of one chunk (stripe @p stripe): @p ios[0 .. n) its copies, read whole under the
 * stripe lock, their CRCs held or healed (every buffer holds the copy's right bytes). Each
 * block's generations are compared, the tags read where not cached (tag_store_peek_load: a
 * scrub reads them); a copy behind the latest gets the latest copy's bytes in its buffer,
 * written back under the stripe's bitmap mark with that generation, and is reported with
 * csum_report_lost_write() (-EIO where not rewritten: a read-only array, a failed write).
 * A copy whose tags this store does not hold has no vote. *@p rewritten (may be NULL) adds
 * the blocks rewritten. 0, -ENOMEM, or the bitmap's or the ring's -errno.
 */
int lost_write_mirror_scrub(struct graid_array *a, struct mbatch *mb, struct mbio *ios, size_t n,
			    uint64_t stripe, uint64_t *rewritten);

/*
 * A RAID-1/10 rebuild's writes @p ios[0 .. n) to its targets (whole chunks, the stripe
 * locks held): each write's fault.meta_in set to the generations of the copy it was read
 * from (the first alive copy other than the target, as the rebuild reads), so that the
 * rebuilt copy carries the source's generation, not a new one. The words live in *@p words
 * (*@p cap of them, grown as needed; the caller frees it) until the writes are issued.
 * 0, or -ENOMEM, -EIO (no alive copy), or a tag block's -errno: then some writes may have
 * no words, and take the target's own next generation.
 */
int lost_write_mirror_rebuild_gens(struct graid_array *a, struct mbio *ios, size_t n,
				   uint32_t **words, size_t *cap);

/*
 * The committed generations of @p role's [off, off + len) (4 KiB multiples), one word per
 * block, into *@p out (malloc'd: the caller frees it), for writes that copy that range to
 * other copies (a resync) and must carry them. Tag blocks not cached are read. *@p out NULL
 * and 0 while a->csum_gens is false (or the range is not whole blocks). 0, -ENOMEM, or a tag
 * block's -errno (-EOPNOTSUPP: the role keeps its tags in NVMe metadata); *@p out NULL then.
 */
int lost_write_mirror_gens_of(struct graid_array *a, unsigned role, uint64_t off, uint32_t len,
			      uint32_t **out);

/*
 * Scrub's heal of the 4 KiB block @p at bytes into each of the @p n copies read into @p ios
 * (RAID-1/10, one chunk's copies), @p gone[j] true for the copies that could not read it or
 * whose tag failed (@p tag_only[j]: its bytes read, only their tag failed): the copy to heal
 * them from. Without generations the first copy not
 * gone; with them the copy not gone whose generation is the latest, and none (@p n) when a
 * copy that is gone holds a later generation than every copy that is not: those are then
 * stale (a lost write), and the bytes of the one ahead cannot be verified, so nothing is to
 * be copied (a stale copy written over a copy whose tag alone was bad would make the lost
 * write the block's content, unseen), unless every such copy failed by its tag alone (a
 * checksum failure over the bytes the best copy holds) and two or more copies not gone
 * agree on the latest generation. @p n also when every copy is gone.
 */
size_t lost_write_mirror_heal_source(struct graid_array *a, const struct mbio *ios, size_t n,
				     const bool *gone, const bool *tag_only, size_t at);

#endif
