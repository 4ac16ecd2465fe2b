/* SPDX-License-Identifier: MIT */
/* What a passthrough member does with its namespace's metadata and protection information: pure. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "format/nvme_meta.h"

int nvme_meta_decide(uint32_t lbs, uint32_t ms, bool extended, uint8_t dps, unsigned pif,
		     struct nvme_meta_fmt *out, const char **why)
{
	const unsigned type = dps & 0x7;
	/* DPS bit 3: the PI in the metadata's first bytes; else in its last. */
	const bool pi_first = dps & 0x8;

	memset(out, 0, sizeof(*out));
	out->ms = ms;
	out->lbs = lbs;
	*why = NULL;
	if (ms == 0)
		return 0;
	if (extended) {
		*why = "the LBA format interleaves metadata with the data (extended LBA); "
		       "passthrough takes it only as a separate buffer: use the block device or "
		       "format the namespace with separate metadata";
		return -EOPNOTSUPP;
	}
	if (type > 3) {
		*why = "the namespace reports a protection information type that does not exist";
		return -EOPNOTSUPP;
	}
	if (type && pif != 0) {
		*why = "protection information with a 32- or 64-bit guard; only the 16-bit guard "
		       "format is supported";
		return -EOPNOTSUPP;
	}
	if (type && ms < NVME_META_PI_BYTES) {
		*why = "protection information in fewer than 8 metadata bytes";
		return -EOPNOTSUPP;
	}
	out->pi_type = (uint8_t)type;
	if (type) {
		/* The drive makes and checks the guard; the reference tag where the type has one. */
		out->prinfo = NVME_META_PRACT | NVME_META_PRCHK_GUARD |
			      (type != 3 ? NVME_META_PRCHK_REF : 0);
	}
	if (type && ms == NVME_META_PI_BYTES) {
		out->mode = NVME_META_PI_STRIP;
		return 0;
	}
	if (lbs == TAG_DATA_BLOCK && ms - (type ? NVME_META_PI_BYTES : 0) >= TAG_BYTES) {
		out->mode = NVME_META_TAG;
		out->tag_at = type && pi_first ? NVME_META_PI_BYTES : 0;
		return 0;
	}
	out->mode = NVME_META_ZERO;
	return 0;
}

void nvme_meta_cmd(struct nvme_uring_cmd *cmd, const struct nvme_meta_fmt *f, void *meta)
{
	cmd->cdw12 |= f->prinfo;
	if (f->prinfo)
		cmd->cdw14 = cmd->cdw10; /* EILBRT / ILBRT: the first LBA's low 32 bits */
	if (f->mode == NVME_META_ZERO || f->mode == NVME_META_TAG) {
		cmd->metadata = (uint64_t)(uintptr_t)meta;
		cmd->metadata_len = (uint32_t)nvme_meta_len(f, cmd->data_len);
	}
}

void nvme_meta_tag_put(void *meta, const struct nvme_meta_fmt *f, uint64_t i, tag_t t)
{
	tag_encode(t, (uint8_t *)meta + i * f->ms + f->tag_at);
}

tag_t nvme_meta_tag_get(const void *meta, const struct nvme_meta_fmt *f, uint64_t i)
{
	const uint8_t *p = (const uint8_t *)meta + i * f->ms + f->tag_at;
	static const uint8_t ones[TAG_BYTES] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

	/* Never written by the array: its generation bits are written 0. */
	if (!memcmp(p, ones, sizeof(ones)))
		return 0;
	return tag_decode(p);
}
