/* SPDX-License-Identifier: MIT */
/* What a passthrough member does with its namespace's metadata and protection information: pure. */
#ifndef LIBGRAID_CORE_NVME_META_H
#define LIBGRAID_CORE_NVME_META_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/nvme_ioctl.h>

#include "format/tag_format.h"

/* Read/Write CDW12 bits 29:26, PRINFO: PRACT and the three checks (NVM Command Set). */
#define NVME_META_PRACT (1u << 29)
#define NVME_META_PRCHK_GUARD (1u << 28)
#define NVME_META_PRCHK_APP (1u << 27)
#define NVME_META_PRCHK_REF (1u << 26)

/* The protection information tuple of the 16-bit guard format: guard, application, reference. */
#define NVME_META_PI_BYTES 8u

/* How a passthrough member's commands carry metadata (docs/NVME.md, "Metadata"). */
enum nvme_meta_mode {
	NVME_META_NONE = 0, /* the format has no metadata: nothing sent */
	/*
	 * Metadata the array does not use (too little room, or LBAs other than 4 KiB): every
	 * command carries a buffer of zeroes (written) or of bytes thrown away (read).
	 */
	NVME_META_ZERO,
	/* The metadata is the PI tuple alone: PRACT makes the drive insert and strip it. */
	NVME_META_PI_STRIP,
	/* A checksummed array's 8-byte tag in each 4 KiB block's metadata, at tag_at. */
	NVME_META_TAG,
};

/* The decision for one namespace format, made at identify. */
struct nvme_meta_fmt {
	uint8_t mode;     /* enum nvme_meta_mode */
	uint8_t pi_type;  /* DPS bits 2:0: 0 none, 1..3 the PI type */
	uint16_t tag_at;  /* NVME_META_TAG: the tag's first byte in a block's metadata */
	uint32_t ms;      /* metadata bytes per LBA */
	uint32_t lbs;     /* LBA data bytes */
	uint32_t prinfo;  /* CDW12 bits every Read and Write carries (PRACT, PRCHK) */
};

/*
 * Decide for a format of @p lbs data and @p ms metadata bytes per LBA; @p extended the FLBAS
 * bit 4 (metadata at the end of each LBA's data, not a separate buffer), @p dps the DPS
 * byte, @p pif the format's protection information format (ELBAF bits 8:7; 0 the 16-bit
 * guard). 0 with @p out filled, or -EOPNOTSUPP with *@p why naming what cannot be used.
 */
int nvme_meta_decide(uint32_t lbs, uint32_t ms, bool extended, uint8_t dps, unsigned pif,
		     struct nvme_meta_fmt *out, const char **why);

/* Bytes of metadata a transfer of @p bytes carries (0 for NONE and PI_STRIP). */
static inline uint64_t nvme_meta_len(const struct nvme_meta_fmt *f, uint64_t bytes)
{
	if (f->mode != NVME_META_ZERO && f->mode != NVME_META_TAG)
		return 0;
	return bytes / f->lbs * f->ms;
}

/*
 * Complete a Read or Write @p cmd built by nvme_cmd_build_rw(): the PRINFO bits, the
 * reference tag the checks and the insertion use (the starting LBA's low 32 bits, as PI
 * types 1 and 2 want), and @p meta (nvme_meta_len() of its data) as its metadata buffer.
 */
void nvme_meta_cmd(struct nvme_uring_cmd *cmd, const struct nvme_meta_fmt *f, void *meta);

/*
 * Block @p i's (a 4 KiB block, NVME_META_TAG) tag in a metadata buffer, put and got. A tag
 * read as all 0xff bytes (a deallocated block where DLFEAT says so) is absent (0).
 */
void nvme_meta_tag_put(void *meta, const struct nvme_meta_fmt *f, uint64_t i, tag_t t);
tag_t nvme_meta_tag_get(const void *meta, const struct nvme_meta_fmt *f, uint64_t i);

#endif /* LIBGRAID_CORE_NVME_META_H */
