/* SPDX-License-Identifier: MIT */
/* The tags of a checksummed array's members: cached tag blocks, verify, update, write-back. */
#ifndef LIBGRAID_CORE_TAG_STORE_H
#define LIBGRAID_CORE_TAG_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "format/tag_format.h"

struct graid_array;
struct iovec;

/* One 4 KiB block whose data failed its tag. */
struct tag_bad {
	uint64_t block;     /* 4 KiB block number in the role's data area */
};

/*
 * Open the store of every role of @p a (a->csum, a->tag_offset and a->tag_bytes set from the
 * superblock), into a->tags. 0 or -errno.
 */
int tag_store_open(struct graid_array *a);

/* Free it (dirty tag blocks are NOT written: tag_store_flush() first). NULL-safe. */
void tag_store_close(struct graid_array *a);

/*
 * Verify [off, off + len) of @p role's data area (4 KiB multiples) held in @p iov. Returns 0
 * (every block's tag holds, or is absent), -EBADMSG (the first @p max bad blocks in @p bad,
 * their count in *@p nbad), or -errno when a tag block could not be read for a reason other
 * than its medium (the caller fails the read with it: the tag area is part of the member).
 * A tag block the member fails with a media error (-EIO, -EBADMSG, -ENODATA, -EILSEQ) reads
 * as all absent and is rewritten at the next write-back: a bad sector there costs the
 * protection of its 512 blocks until they are written again, not the member. The same holds
 * for every call below that reads a tag block.
 */
int tag_store_verify(struct graid_array *a, unsigned role, uint64_t off,
		     const struct iovec *iov, unsigned iovcnt, struct tag_bad *bad,
		     unsigned max, unsigned *nbad);

/*
 * A read of [off, off + len) of @p role's data area ended and is about to be verified: the
 * cached tags tag_store_verify() will check it against are asked into the CPU's cache, so
 * that a caller with several reads to verify asks for all of their tags first and waits
 * on memory once rather than once a read. A hint only: it reads nothing from the member,
 * changes nothing, and does nothing when the role's lock is busy, the tags are not cached,
 * or the range is not one tag_store_verify() takes.
 */
void tag_store_prefetch(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/*
 * Locking, for every call here: each role's cache has its own lock, taken and released
 * inside each call (never held on return). A call may read a tag block from the member,
 * synchronously, under that lock (those that say so). What a caller must hold besides is the
 * I/O's own: a write's tags begin and end under whatever keeps other writes of its blocks
 * out (a write path's stripe lock).
 *
 * Generations (docs/INTEGRITY.md, "Lost writes"): with a->csum_gens false (every
 * array of this build) every tag this store makes has meta bits 0-30 zero, as format 1.5
 * writes, and the meta words callers pass below are ignored. With it true, the tags made
 * carry a generation (a data block, a mirror's copy) or a record (a parity block) there.
 * Verification compares CRCs only, either way; while a write is pending, the old and the new
 * tag (generation included) both stand, and tag_store_peek() shows both.
 * With generations an inline role (tags in NVMe metadata) has its tags kept here too, as a
 * copy: written by its writes (and tag_store_set(), tag_store_forget()), written back as any
 * role's, never filled by its reads nor used to verify them (the metadata does that);
 * tag_store_behind() compares a read's metadata with it. Without them nothing is kept.
 */

/*
 * A write of [off, off + len) of @p role about to be issued with the data in @p iov: the new
 * tags are computed and held as pending (verify accepts the old tag or the new one) until
 * tag_store_write_end(). With generations each block's new tag gets tag_gen_next() of the
 * generation its tag has now (absent: 0, so 1); tag_store_write_begin_meta(..., NULL, NULL).
 * 0 or -errno (-EINVAL a range outside the data area or not whole 4 KiB blocks, -ENOMEM, or
 * a tag block unreadable); on an error nothing is left pending.
 */
int tag_store_write_begin(struct graid_array *a, unsigned role, uint64_t off,
			  const struct iovec *iov, unsigned iovcnt);

/*
 * tag_store_write_begin() with the meta words chosen by the caller: block i of the range
 * (i = 0 .. len / 4096 - 1) gets meta bits 0-30 = @p meta_in[i] (bit 31 ignored: the tag
 * is always present) where @p meta_in is not NULL: a mirror write's max + 1 over the copies
 * (tag_gen_next() of it), a parity block's record (tag_rec_encode()), a heal's expected
 * generation. @p meta_in NULL: the default, the next generation of each block as it stands
 * in the cache (its committed tag: a write already in flight over the block is not counted;
 * a caller that keeps generations holds the stripe lock, which keeps such writes out).
 * @p meta_out (NULL or len / 4096 words): the meta bits 0-30 each block's new tag carries,
 * filled on success (without generations all 0). A role whose tags are in NVMe metadata
 * is kept here only with generations (the copy of decision 4): without them this call
 * holds nothing for it (meta_out all 0); with them it is as any role's, and its caller
 * puts the words returned in the metadata (member_io.c, tag_inline_prep()).
 * Both are ignored / zero while a->csum_gens is false. Reads the tag blocks it needs (under
 * the role's lock). Errors as tag_store_write_begin().
 */
int tag_store_write_begin_meta(struct graid_array *a, unsigned role, uint64_t off,
			       const struct iovec *iov, unsigned iovcnt, const uint32_t *meta_in,
			       uint32_t *meta_out);

/* Its end: @p ok true, the new tags become the tags (dirty); false, the old ones stay. */
void tag_store_write_end(struct graid_array *a, unsigned role, uint64_t off, uint64_t len,
			 bool ok);

/* [off, off + len) deallocated or of unknown content: its tags become absent (dirty). */
int tag_store_forget(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/*
 * Set the tags of [off, off + len) from @p iov now (resync, a write done outside the ring).
 * With generations each block keeps the meta bits its tag has (absent: 0): re-tagging data in
 * place is not a new write; a caller for which it is one passes the generation it means to
 * tag_store_set_meta(). 0 or -errno (-EINVAL a bad range, -ENOMEM, a tag block unreadable).
 */
int tag_store_set(struct graid_array *a, unsigned role, uint64_t off,
		  const struct iovec *iov, unsigned iovcnt);

/*
 * tag_store_set() with block i's meta bits 0-30 = @p meta[i] (@p meta NULL: kept, as
 * tag_store_set()). Ignored while a->csum_gens is false (meta 0). Errors as tag_store_set().
 */
int tag_store_set_meta(struct graid_array *a, unsigned role, uint64_t off,
		       const struct iovec *iov, unsigned iovcnt, const uint32_t *meta);

/* What tag_store_peek() says of one block. */
struct tag_peek {
	bool cached;       /* its tag block is in the cache; else every field below is 0 */
	tag_t tag;         /* its tag as committed (tag_gen(), tag_rec_of_tag() read it) */
	unsigned inflight; /* writes over it begun and not ended */
	/*
	 * inflight > 0: the tag the block gets when they end well, if they all carry one new
	 * tag; 0 when they carry several (the block is then left absent). Until they end,
	 * either @p tag or this may be what the member holds.
	 */
	tag_t next;
};

/*
 * The tags of the @p n blocks from @p block (4 KiB block numbers) of @p role as the cache
 * holds them, into @p out[0 .. n - 1], without verifying anything and without I/O; the cache
 * is not changed (not even its recency). Without the stripe lock over those blocks the answer
 * is a snapshot that a write may change at once; under it, no write of them begins or ends.
 * Returns 0 (every block's tag block cached), -ENOENT (some were not: those have
 * cached false), -EINVAL (no tag store, a role or range outside the data area),
 * -EOPNOTSUPP (@p role keeps its tags in NVMe metadata and generations are off: this store
 * holds none of them).
 */
int tag_store_peek(struct graid_array *a, unsigned role, uint64_t block, unsigned n,
		   struct tag_peek *out);

/*
 * tag_store_peek() reading the tag blocks that are not cached (synchronously, under the role's
 * lock, as a write's begin does): for a write path that already holds the stripe lock.
 * 0 (every out[] cached), -EINVAL, -EOPNOTSUPP as tag_store_peek(), -ENOMEM, or the -errno
 * of a tag block that could not be read (a media error reads as all absent, as above).
 */
int tag_store_peek_load(struct graid_array *a, unsigned role, uint64_t block, unsigned n,
			struct tag_peek *out);

/*
 * The span flag (docs/INTEGRITY.md, "Lost writes", "The span flag"). A span is the 512 data
 * blocks one tag block of a role covers. Its cached tag block carries a flag, "checked":
 * every block of the span was compared with its peers (RAID-1/10 the other copies, RAID-5/6
 * the column at the same member offset) since the tag block was loaded, and found consistent.
 * Only tag_store_span_mark() sets it; a load from the member makes a new entry, clear. Writes
 * and heals do not clear it: they keep generations and records consistent under the stripe
 * lock (the locked paths check before they write).
 */
struct tag_span {
	uint64_t token;  /* the entry's load count: what tag_store_span_mark() checks */
	bool checked;    /* the flag */
};

/*
 * The span flag of the tag block holding @p block (a 4 KiB block number) of @p role, and the
 * entry's token. @p load: read the tag block when not cached (synchronously, under the role's
 * lock); else -ENOENT when not cached. 0, -ENOENT, -EINVAL (no tag store, a block outside the
 * data area), -EOPNOTSUPP (generations off, or an inline role: its entries are the tag-area
 * copy that only writes fill, and carry no flag), or a tag block's read error.
 */
int tag_store_span(struct graid_array *a, unsigned role, uint64_t block, bool load,
		   struct tag_span *out);

/*
 * Set the span flag of the tag block holding @p block of @p role, if the entry cached now is
 * the one tag_store_span() gave @p token for (not evicted and loaded again since: a new
 * load's image was not the one checked). Returns whether it was set.
 */
bool tag_store_span_mark(struct graid_array *a, unsigned role, uint64_t block, uint64_t token);

struct nvme_meta_fmt;

/*
 * With generations, a read of @p n blocks from @p block of inline @p role ended with the
 * metadata @p meta (laid out as @p fmt): *@p out (allocated, one flag per block, the caller
 * frees it; NULL when none) the blocks whose metadata tag is behind the copy this store
 * keeps (docs/INTEGRITY.md, "Lost writes", decision 4). The copy is looked at only where it
 * is cached (no I/O: reads do not fill it) and no write is in flight over the block (a
 * pending write accepts old and new); an absent metadata tag, or copy, is not compared.
 * 0 (also with nothing kept to compare: generations off, a tag-area role) or -ENOMEM.
 */
int tag_store_behind(struct graid_array *a, unsigned role, uint64_t block, uint64_t n,
		     const void *meta, const struct nvme_meta_fmt *fmt, bool **out);

/*
 * A grow added @p role (the next one: the store's role count, below the open's member_cap),
 * its device installed in a->members[role] and its tag area already written on it (with
 * generations every tag present at generation 0, else absent: reshape_csum_prep_added(); the
 * grow's writes give the blocks theirs): the role's tags kept from now on, in
 * its tag area or its NVMe metadata as its device decides. 0; -EINVAL a role that is not
 * the next one or past the room the store was made with at open. Called under meta_lock
 * before the member count shows the role.
 */
int tag_store_add_role(struct graid_array *a, unsigned role);

/*
 * Which of the @p nblocks 4 KiB blocks from @p off of @p role's data area have an absent tag
 * (not verified: a read of them passes whatever it returns). Bit i of @p absent (an array of
 * (nblocks + 63) / 64 words, cleared first) is set for block i. A block under a write in
 * flight is answered from the tag it had before the write. 0, -EINVAL a range outside the
 * data area, or -errno when a tag block could not be read.
 */
int tag_store_absent(struct graid_array *a, unsigned role, uint64_t off, unsigned nblocks,
		     uint64_t *absent);

/* Every dirty tag block written to its member and the member flushed; 0 or the first -errno. */
int tag_store_flush(struct graid_array *a);

/*
 * The same without the members' flush, for a caller that flushes every writable member
 * right after (array_flush_members): one flush per member, not two.
 */
int tag_store_write_back(struct graid_array *a);

/*
 * A new device took @p role (role_install): that role's cache dropped, the tag area zeroed on
 * the new device (every tag absent until a rebuild writes them). 0 or -errno.
 */
int tag_store_role_reset(struct graid_array *a, unsigned role);

#endif
