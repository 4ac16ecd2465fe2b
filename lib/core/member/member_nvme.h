/* SPDX-License-Identifier: MIT */
/* NVMe members: identify through libnvme, passthrough I/O on the generic char device, deallocate. */
#ifndef LIBGRAID_CORE_MEMBER_NVME_H
#define LIBGRAID_CORE_MEMBER_NVME_H

#include "format/nvme_id.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>


struct member;

/*
 * Identify the member open on m->fd (stat in @st). A block device that is no NVMe namespace
 * and a regular file leave m->nvme zero and return 0. A char device must be an NVMe generic
 * device: then m->nvme.passthru is set and m->size, m->lbs come from identify. Returns 0;
 * -EOPNOTSUPP a char device that is not NVMe, a passthrough member whose format's metadata
 * cannot be carried (nvme_meta_decide(): extended LBAs, a PI format other than the 16-bit
 * guard), or a build without libnvme; -errno from the identify commands.
 */
int member_nvme_identify(struct member *m, const struct stat *st);

/*
 * Synchronous read/write through NVMe passthrough ioctls, split at max_xfer, with the
 * metadata the format wants (zeroes written, what is read thrown away). On a device whose
 * role keeps its tags in the metadata (m->dev.nvme.tags_inline) a write of data-area blocks
 * carries their tags and a read checks them: -EBADMSG for a block whose bytes fail its tag.
 * 0 or -errno.
 */
int member_nvme_rw(struct member *m, void *buf, size_t len, uint64_t off, bool write);
/*
 * The same with @p meta (nvme_meta_len() of @p len bytes; NULL where the format sends none)
 * as the metadata, written or read as it is, no tag made or checked.
 */
int member_nvme_rw_meta(struct member *m, void *buf, size_t len, uint64_t off, bool write,
			void *meta);
/* The NVMe Flush command (skipped, 0, when the controller has no volatile write cache). */
int member_nvme_flush(struct member *m);
/* Dataset Management deallocate of [off, off+len) (whole blocks). 0 or -errno. */
int member_nvme_deallocate(struct member *m, uint64_t off, uint64_t len);

/*
 * The block device (st_rdev) of the namespace a generic char device @path stands for, so that
 * /dev/ng0n1 and /dev/nvme0n1 are known as one device. 0 or -ENOENT.
 */
int member_nvme_blockdev(const char *path, dev_t *dev);

struct graid_member_info;
/* Fill the NVMe fields of graid_array_member_info(); nothing for a member that is not NVMe. */
void member_nvme_info(const struct member_nvme *n, struct graid_member_info *mi);

#endif /* LIBGRAID_CORE_MEMBER_NVME_H */
