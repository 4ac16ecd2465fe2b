/* SPDX-License-Identifier: MIT */
/*
 * Lost writes on RAID-5/6 (docs/INTEGRITY.md, "Lost writes"): each 4 KiB column's parity
 * tags (P, and Q) carry a record (S, W) of the column's data generations. This file checks
 * a column's record against its data, names what it finds stale (a data block behind, a
 * parity behind, or nothing it can locate), and chooses the meta words every member write of
 * a RAID-5/6 stripe operation carries. Everything here is a no-op unless a->csum_gens.
 */
#ifndef LIBGRAID_CORE_LOST_WRITE_COLUMN_H
#define LIBGRAID_CORE_LOST_WRITE_COLUMN_H

#include <stdbool.h>
#include <stdint.h>

#include "io/queue.h"
#include "meta/badblocks.h"

/* Whether generations are kept for @p a's stripe operations (RAID-5/6 with tags and gens). */
bool lwc_active(const struct graid_array *a);

/*
 * An unlocked read of @p len bytes at data-area byte @p off of @p member, done and verified
 * against its own tags: does any column it touched look stale from the cached tags alone
 * (tag_store_peek, no I/O)? Columns not all cached, or with a write in flight over any of
 * their blocks, or with a member out, are not judged. True: the read is to be done again
 * under the stripe lock (where lwc_sop_check() decides); never an error by itself.
 */
bool lwc_read_suspect(struct graid_array *a, unsigned member, uint64_t off, uint32_t len);

/* Members one stripe operation can note bad (struct sop's bad[]). */
#define LWC_NOTE_MAX 4u

/*
 * Under @p s's stripe lock, before its plan (RAID-5/6, nrun 1): every 4 KiB column of
 * [s->lo, s->hi) checked (tag blocks read where not cached). The members holding a located
 * stale data block or parity go into @p note (*@p nnote of them, at most LWC_NOTE_MAX less
 * s->nbad), each kept pending in its role's csum_pend as a lost write (settled healed by
 * the write that rewrites it, -EIO if the operation fails; on a read-only handle reported
 * -EIO once): the caller notes them bad in @p s (sop_note_bad), and the plan then rebuilds
 * them and writes them back with the expected generation (lwc_write_meta()). A column whose mismatch is not
 * located: a read ends -EIO (reported with member -1, the column's block); a write goes on,
 * its parity's record updated by differences so that the mismatch stays visible, unless it
 * rewrites every data block of the column. 0, or -EIO (@p s is to end with it).
 */
int lwc_sop_check(struct graid_array *a, const struct sop *s, unsigned *note, unsigned *nnote);

/*
 * The meta words (bits 0-30) of a member write of @p s: @p len bytes at data-area byte
 * @p off of @p member, into @p meta (len / 4096 words): data blocks written by the request
 * the next generation (of the expected one where the block was stale or is missing), data
 * blocks only rewritten (a repair) their expected generation, parity blocks the record of
 * the column's new data generations. @p s NULL: a job's write (rebuild, resync, a heal of
 * scrub or rebuild) that writes nothing anew: data blocks get their expected generation (a
 * block of a role being rebuilt the one the record implies; a stale block beside a role out
 * judged as lwc_rebuild_erasures() judges it), parity the record of the data.
 * 0, or -errno (then the caller writes without meta words: each block's next generation).
 */
int lwc_write_meta(struct graid_array *a, const struct sop *s, unsigned member, uint64_t off,
		   uint32_t len, uint32_t *meta);

/* What lwc_scrub_erasures() found, per 4 KiB column of a row. */
struct lwc_scrub_cols {
	struct bbl_cols lost;  /* past rebuilding: nothing of it to be written */
	struct bbl_cols hold;  /* tags unreadable: not to be rebuilt or written by the scrub */
	struct bbl_cols added; /* a stale block added to the erasures */
};

/* How lwc_scrub_row() writes a 4 KiB column back: the scrub's own write (its ring). */
struct lwc_scrub_io {
	/* NULL: check only, nothing written. 0 or -errno. */
	int (*write_col)(void *arg, uint64_t row, unsigned role, unsigned col, uint8_t *buf);
	void *arg;
};

/*
 * Scrub, under @p row's stripe lock, its chunks read into @p blk (role order, every role
 * present, their tags verified): every 4 KiB column's records against its data's
 * generations. A located stale data block (RAID-5: one write behind; RAID-6: any number,
 * the rebuild checked against Q) is rebuilt in @p blk, a stale parity made from the data;
 * with io->write_col each is written back (a job's write: member_batch.c gives it the
 * expected generation or the record) and reported healed (csum_report_lost_write(member,
 * block, 1, 0); without, -EIO) and counted in *@p healed. A mismatch not located is
 * reported (member -1, -EIO) and sets *@p unlocated, as does a data block whose rebuild
 * is its stale bytes again (its own tag's CRC holds on it: rebuilt beside wrong bytes, or a
 * lost write of the same bytes; reported -EIO, not written): the caller then leaves the row's
 * parity as it is (a syndrome vote would make it follow the stale data and lose what it
 * still knows). Columns set in @p skip (may be NULL: none) are not judged: their stale
 * blocks were settled with the erasures (lwc_scrub_erasures(), its @c added), so that none
 * is reported twice. 0, or -errno of a write or the engine.
 */
int lwc_scrub_row(struct graid_array *a, const struct lwc_scrub_io *io, uint64_t row,
		  uint8_t **blk, const struct bbl_cols *skip, bool *unlocated, uint64_t *healed);

/*
 * Scrub, under @p row's stripe lock, before the erasures @p era of the row (per role, the
 * 4 KiB columns it could not read or that failed their tags) are rebuilt from @p blk (role
 * order, every role present): a block (data or parity) the records of a column with an
 * erasure locate stale, outside the erasures, is added to @p era (rebuilt with the stale
 * block's bytes in place, the erased ones would be written back wrong, under fresh tags,
 * and P and Q made consistent with them: nothing after could tell). A RAID-6 stale data
 * block beside one erasure is added only where Q holds over its rebuild from P with the
 * erased block's bytes as read (its tag alone was bad), or where the two rebuilt together
 * give the erased one bytes its tag holds; else, as where the records mismatch but place
 * nothing, the column is set in @p sc->lost (reported as a column lost write, member -1, -EIO).
 * A column whose erasures then pass the parities is set in @p sc->lost too: nothing of it is to
 * be written (row_heal_writeback() reports it, and reads fail it -EIO). A column whose tags
 * cannot be read is set in @p sc->hold: not to be rebuilt or written by the scrub (nothing
 * places a stale block there; reads check). Each block added is kept pending in its role's
 * csum_pend as a lost write (settled by the rewrite: reported healed; in a lost column
 * -EIO by the write-back; on a read-only handle otherwise reported -EIO now), and its column
 * set in @p sc->added (for lwc_scrub_row()'s @p skip). @p sc is added to, not cleared.
 */
void lwc_scrub_erasures(struct graid_array *a, uint64_t row, uint8_t *const *blk,
			struct bbl_cols *era, struct lwc_scrub_cols *sc);

/*
 * A rebuild's lwc_scrub_erasures() (docs/INTEGRITY.md, "Rebuild, replace and resync"): the
 * same, under @p row's stripe lock, with one role out of the row (the one being rebuilt,
 * erased in every column of @p era) judged too: its generation is the one the records
 * imply, and a stale block beside it is located only where no other block explains the
 * mismatch as well (RAID-6 beside a data role out: exactly one block fits 1 .. 4 writes
 * behind; beside P or Q out: one write behind; P and Q disagreeing: the parity that is not
 * the data's), since nothing is left over to check a rebuild with. RAID-5 beside a data
 * block out: any mismatch sets the column in @p sc->lost (reported with member -1, -EIO); P out: nothing
 * to compare. RAID-6: a located block is added to @p era (the column then rebuilt whole);
 * an unlocated mismatch is lost. Two roles out: not judged. @p sc->hold as for the scrub
 * (the caller may rebuild such columns as before: nothing places a stale block there).
 */
void lwc_rebuild_erasures(struct graid_array *a, uint64_t row, uint8_t *const *blk,
			  struct bbl_cols *era, struct lwc_scrub_cols *sc);

/*
 * Whether @p row (under its stripe lock) has a column lwc_rebuild_erasures() would act on:
 * its tags read where not cached, judged with the role out. False where generations are
 * not kept, and for tags that cannot be read.
 */
bool lwc_rebuild_suspect(struct graid_array *a, uint64_t row);

#endif
