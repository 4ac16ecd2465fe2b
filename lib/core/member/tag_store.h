/* SPDX-License-Identifier: MIT */
/* The tags of a checksummed array's members: cached tag blocks, verify, update, write-back. */
#ifndef LIBGRAID_CORE_TAG_STORE_H
#define LIBGRAID_CORE_TAG_STORE_H

#include <stdbool.h>
#include <stdint.h>

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
 * A write of [off, off + len) of @p role about to be issued with the data in @p iov: the new
 * tags are computed and held as pending (verify accepts the old tag or the new one) until
 * tag_store_write_end(). 0 or -errno (-ENOMEM, or a tag block unreadable).
 */
int tag_store_write_begin(struct graid_array *a, unsigned role, uint64_t off,
			  const struct iovec *iov, unsigned iovcnt);

/* Its end: @p ok true, the new tags become the tags (dirty); false, the old ones stay. */
void tag_store_write_end(struct graid_array *a, unsigned role, uint64_t off, uint64_t len,
			 bool ok);

/* [off, off + len) deallocated or of unknown content: its tags become absent (dirty). */
int tag_store_forget(struct graid_array *a, unsigned role, uint64_t off, uint64_t len);

/* Set the tags of [off, off + len) from @p iov now (resync, a write done outside the ring). */
int tag_store_set(struct graid_array *a, unsigned role, uint64_t off,
		  const struct iovec *iov, unsigned iovcnt);

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
