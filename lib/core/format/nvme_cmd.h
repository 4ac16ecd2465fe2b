/* SPDX-License-Identifier: MIT */
/* NVMe commands as the library builds them, status codes as errno, transfer-size math: pure, no I/O. */
#ifndef LIBGRAID_CORE_NVME_CMD_H
#define LIBGRAID_CORE_NVME_CMD_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/nvme_ioctl.h>

/* NVM command set opcodes (NVMe base spec, "NVM Command Set"). */
#define NVME_CMD_OP_FLUSH 0x00
#define NVME_CMD_OP_WRITE 0x01
#define NVME_CMD_OP_READ 0x02
#define NVME_CMD_OP_DSM 0x09

/* Read/Write CDW12 bit 30: Force Unit Access. */
#define NVME_CMD_RW_FUA (1u << 30)
/* DSM CDW11 bit 2: Attribute - Deallocate. */
#define NVME_CMD_DSM_AD (1u << 2)
/* One DSM command carries at most 256 ranges. */
#define NVME_CMD_DSM_MAX_RANGES 256u

/* One DSM range as the controller reads it: 16 bytes, little-endian. */
struct nvme_cmd_dsm_range {
	uint8_t bytes[16]; /* 0..3 context attributes, 4..7 length in blocks, 8..15 start LBA */
};

/*
 * Fill @cmd for a read or write of @nblocks blocks at @slba from/to @buf. @nblocks must be
 * 1 .. 65536 (the field is 0's based, 16 bits). Returns 0 or -EINVAL.
 */
int nvme_cmd_build_rw(struct nvme_uring_cmd *cmd, bool write, uint32_t nsid, uint64_t slba,
		uint32_t nblocks, uint32_t lbs, void *buf, bool fua);
/* Fill @cmd for a Flush of namespace @nsid. */
void nvme_cmd_build_flush(struct nvme_uring_cmd *cmd, uint32_t nsid);
/*
 * Fill @cmd for a Dataset Management deallocate of @nranges ranges (1 .. 256) at @ranges.
 * Returns 0 or -EINVAL.
 */
int nvme_cmd_build_dsm(struct nvme_uring_cmd *cmd, uint32_t nsid,
		 const struct nvme_cmd_dsm_range *ranges, unsigned nranges);
/* Encode one DSM range. */
void nvme_cmd_dsm_range_set(struct nvme_cmd_dsm_range *r, uint64_t slba, uint32_t nblocks);

/*
 * The completion status as the kernel returns it for passthrough (CQE DW3 bits 31:17):
 * SC in bits 7:0, SCT in bits 10:8, CRD 12:11, More 13, DNR 14.
 */
static inline unsigned nvme_status_sct(int status)
{
	return ((unsigned)status >> 8) & 0x7;
}

static inline unsigned nvme_status_sc(int status)
{
	return (unsigned)status & 0xff;
}

/* The NVMe status as a negative errno (0 for success); the mapping is in docs/NVME.md. */
int nvme_status_errno(int status);
/* The status code's name from the specification ("LBA Out of Range"), or "Unknown Status". */
const char *nvme_status_name(int status);

/*
 * MDTS from Identify Controller in bytes: 2^mdts units of the minimum memory page size
 * (2^(12 + mpsmin)); 0 means no limit. Saturates at UINT32_MAX.
 */
uint32_t nvme_mdts_bytes(uint8_t mdts, unsigned mpsmin);
/*
 * The largest transfer one command may carry: the smallest of the MDTS limit (0: none), the
 * operating system's limit (0: none), and 65536 blocks, rounded down to whole blocks of
 * @lbs (a power of two). Never below one block.
 */
uint32_t nvme_max_transfer(uint32_t mdts_bytes, uint32_t os_bytes, uint32_t lbs);
/* How many commands a transfer of @len bytes takes at @max bytes each (@max > 0). */
static inline unsigned nvme_split_count(uint64_t len, uint32_t max)
{
	return len ? (unsigned)((len + max - 1) / max) : 0;
}

#endif /* LIBGRAID_CORE_NVME_CMD_H */
