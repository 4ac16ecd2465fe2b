/* SPDX-License-Identifier: MIT */
/* A checksummed role whose tags travel in its NVMe device's block metadata: its part of the I/O path. */
#ifndef LIBGRAID_CORE_TAG_INLINE_H
#define LIBGRAID_CORE_TAG_INLINE_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/nvme_ioctl.h>

#include "array/array.h"
#include "member/member_io.h"

/*
 * Whether @p role's tags are in its device's metadata (docs/INTEGRITY.md, "Tags in the
 * drive's metadata"): then the tag store holds nothing for it and does no I/O for it.
 */
static inline bool tag_inline_role(const struct graid_array *a, unsigned role)
{
	return a->members[role].dev.nvme.tags_inline;
}

/*
 * Decide for the device @p role has now: inline when @p a is checksummed and the device is a
 * passthrough namespace in NVME_META_TAG mode (the synchronous path's context set too), else
 * not. Called when the tag store opens and when a new device takes the role.
 */
void tag_inline_attach(struct graid_array *a, unsigned role);

/*
 * At prep of an I/O of @p iov at @p at bytes of passthrough member @p m: the metadata
 * buffer into @p mf (kept to the I/O's end) where the format sends one, for a write whose
 * mf->meta_tags is set (an inline role's data area, set as the transfer was kept) filled
 * with the blocks' tags made from the data. 0 or -ENOMEM.
 */
int tag_inline_prep(const struct member *m, bool write, const struct iovec *iov,
		    unsigned iovcnt, uint64_t at, struct member_io_fault *mf);

/* One command of that I/O, at member byte @p at: its metadata and PRINFO (nvme_meta_cmd). */
void tag_inline_cmd(struct nvme_uring_cmd *cmd, const struct member *m,
		    const struct member_io_fault *mf, uint64_t at);

/*
 * A piece of a passthrough read ended with NVMe @p status: true when it is an end-to-end
 * guard, application or reference tag check error of a checksummed array's data area,
 * which is then the read's checksum failure (at tag_inline_verify(): the blocks that fail
 * again when read one by one, or every block where that cannot be done), not an I/O error.
 */
bool tag_inline_e2e(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		    int status);

/*
 * At the start of member_io_done(): the metadata buffer freed unless a whole read of an
 * inline role's data area is to be checked against it (tag_inline_verify() frees it then).
 */
void tag_inline_end(struct member_io_fault *mf, bool write, uint32_t len, int res);

/*
 * Whether member_io_done()'s check of a read starts with tag_inline_verify() (the tags in
 * the metadata, or the drive's end-to-end error); the tag store's check follows where the
 * role's tags are in the tag area (mf->meta_tags clear).
 */
static inline bool tag_inline_checks(const struct member_io_fault *mf)
{
	return mf->meta || mf->e2e;
}

/*
 * A whole read of @p len bytes checked against the tags its metadata brought, or after the
 * drive's end-to-end check failed it (each block read again alone, synchronously, into its
 * place: those that fail again are the bad ones): @p len, -EBADMSG with mf->csum set and
 * the bad blocks in the role's csum_pend, as the tag store's check ends, or -ESTALE for a
 * racy read that a write overtook. With generations, where every CRC held, the blocks
 * mf->meta_stale names (behind their tag-area copy: tag_store_behind(), which the caller
 * ran) end it -EBADMSG the same way, as lost writes (csum_pend_add_lost(): counted when
 * settled); it takes mf->meta_stale (freed).
 */
int tag_inline_verify(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		      uint32_t len);

/* An I/O never issued (member_io_abandon): its metadata buffer freed. */
void tag_inline_free(struct member_io_fault *mf);

/*
 * tag_store_absent() for an inline role: the metadata of the @p nblocks blocks from @p off
 * read now, and bit i of @p absent set for a block whose tag is absent. 0 or -errno.
 */
int tag_inline_absent(struct graid_array *a, unsigned role, uint64_t off, unsigned nblocks,
		      uint64_t *absent);

#endif /* LIBGRAID_CORE_TAG_INLINE_H */
