/* SPDX-License-Identifier: MIT */
/* What the library keeps of an NVMe namespace's identity and limits (filled by member_nvme.c). */
#ifndef LIBGRAID_CORE_NVME_ID_H
#define LIBGRAID_CORE_NVME_ID_H

#include <stdbool.h>
#include <stdint.h>

#include "format/nvme_meta.h"

/* What identify said of a member that is an NVMe namespace; all zero for any other member. */
struct member_nvme {
	bool is_nvme;          /* identified as an NVMe namespace */
	bool passthru;         /* I/O through io_uring NVMe passthrough (/dev/ngXnY) */
	bool vwc;              /* Identify Controller VWC bit 0: a volatile write cache */
	bool dsm;              /* ONCS bit 2: Dataset Management supported */
	bool write_zeroes;     /* ONCS bit 3: Write Zeroes supported */
	bool wz_deac;          /* DLFEAT bit 3: Write Zeroes may deallocate */
	bool dealloc_zeroes;   /* DLFEAT bits 2:0 = 001b: deallocated blocks read as zeroes */
	bool blk_discard;      /* block device: the kernel takes discards (BLKDISCARD) */
	uint8_t dlfeat;        /* DLFEAT as reported */
	uint32_t nsid;         /* namespace ID */
	uint32_t lba_bytes;    /* LBA data size of the format in use */
	uint32_t meta_bytes;   /* metadata bytes per LBA of the format in use */
	uint8_t dps;           /* Identify Namespace DPS: PI type (bits 2:0), PI first (bit 3) */
	bool meta_ext;         /* FLBAS bit 4: metadata at the end of each LBA's data */
	struct nvme_meta_fmt meta; /* passthrough: what each command carries (nvme_meta.h) */
	/*
	 * Set by tag_inline_attach() (member/tag_inline.h) while this device holds a role of a
	 * checksummed array in NVME_META_TAG mode: the role's tags are in the blocks' metadata,
	 * and even a synchronous write of the data area carries them.
	 */
	bool tags_inline;
	uint32_t tag_role;     /* the role, for the key */
	uint32_t tag_prefix;   /* tag_crc_prefix() of the array's UUID and the role */
	uint64_t tag_data_off; /* where the data area starts on the member, bytes */
	uint64_t tag_data_end; /* and where it ends */
	uint64_t nsze;         /* namespace size in LBAs */
	uint32_t mdts_bytes;   /* MDTS as bytes (minimum page size assumed 4 KiB); 0 = no limit */
	uint32_t max_xfer;     /* bytes one command may carry here: MDTS and the kernel's limits */
	char ctrl[32];         /* controller name, "nvme0" (a head's: its first controller) */
	char blk[32];          /* the namespace's block device name, "nvme0n1" ("" unknown) */
	bool fabric;           /* reached over a fabric (tcp, rdma, fc, loop), not PCIe */
	uint8_t nguid[16];     /* Identify Namespace NGUID; zero: none */
	uint8_t eui64[8];      /* Identify Namespace EUI-64; zero: none */
	uint8_t uuid[16];      /* namespace UUID (sysfs "uuid"); zero: none */
	char subnqn[224];      /* Identify Controller SUBNQN */
	char model[41], serial[21], firmware[9];
};

#endif
