/* SPDX-License-Identifier: MIT */
/* NVMe members: identify through libnvme, passthrough I/O on the generic char device, deallocate. */
#ifndef LIBGRAID_CORE_MEMBER_NVME_H
#define LIBGRAID_CORE_MEMBER_NVME_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

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

struct member;

/*
 * Identify the member open on m->fd (stat in @st). A block device that is no NVMe namespace
 * and a regular file leave m->nvme zero and return 0. A char device must be an NVMe generic
 * device: then m->nvme.passthru is set and m->size, m->lbs come from identify. Returns 0;
 * -EOPNOTSUPP a char device that is not NVMe, a format with metadata on a passthrough member,
 * or a build without libnvme; -errno from the identify commands.
 */
int member_nvme_identify(struct member *m, const struct stat *st);

/* Synchronous read/write through NVMe passthrough ioctls, split at max_xfer. 0 or -errno. */
int member_nvme_rw(struct member *m, void *buf, size_t len, uint64_t off, bool write);
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
