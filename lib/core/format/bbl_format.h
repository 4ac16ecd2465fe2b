/* SPDX-License-Identifier: MIT */
/* The bad-block log's on-disk copy (docs/FORMAT.md, "The bad-block log"): encode and decode, pure. */
#ifndef LIBGRAID_CORE_BBL_FORMAT_H
#define LIBGRAID_CORE_BBL_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

/* One copy of the log is one 4 KiB block; the area holds two, written in turn. */
#define BBL_COPY_BYTES 4096u
#define BBL_AREA_BYTES (2u * BBL_COPY_BYTES)
/* The unit a log records: 4 KiB of a member's data area. */
#define BBL_UNIT 4096u
/* Ranges one copy holds: (4096 - 64-byte header) / 16 bytes. */
#define BBL_MAX_RANGES 252u

#define BBL_MAGIC "GRAIDBBL"

/* Range flags: why the blocks hold nothing valid. */
#define BBL_F_LOST 0x1u       /* a rebuild could not compute them (zeroes were written) */
#define BBL_F_UNREADABLE 0x2u /* the device could not read them, and nothing rewrote them */
#define BBL_F_KNOWN (BBL_F_LOST | BBL_F_UNREADABLE)

/* A run of bad units: [start, start + count) in BBL_UNIT blocks of the data area. */
struct bbl_range {
	uint64_t start;
	uint32_t count;
	uint32_t flags;
};

/* One copy of the log, in host order. */
struct bbl_image {
	uint64_t seq;                  /* one more at every write; the higher valid copy wins */
	uint8_t member_uuid[16];       /* the device it belongs to (its superblock's member_uuid) */
	unsigned n;                    /* ranges used, sorted by start, never overlapping */
	struct bbl_range r[BBL_MAX_RANGES];
};

/*
 * The on-disk copy: 4096 bytes, every integer little-endian. Every field at its natural
 * alignment; bbl_format.c pins the offsets docs/FORMAT.md gives.
 */
struct bbl_disk_range {
	uint64_t start;                /* first unit, BBL_UNIT blocks from the data area's start */
	uint32_t count;                /* units, >= 1 */
	uint32_t flags;                /* BBL_F_*; unknown bits are kept */
};

struct bbl_disk {
	uint8_t magic[8];              /* 0x000: "GRAIDBBL" */
	uint32_t crc;                  /* 0x008: CRC32C of the 4096 bytes with this field zero */
	uint32_t count;                /* 0x00c: ranges used, <= 252 */
	uint64_t seq;                  /* 0x010: write sequence, > 0 */
	uint8_t member_uuid[16];       /* 0x018: the member_uuid of the device it describes */
	uint8_t reserved[24];          /* 0x028: zero */
	struct bbl_disk_range range[BBL_MAX_RANGES]; /* 0x040: sorted by start, disjoint */
};

/* Encode @p img into @p buf (BBL_COPY_BYTES bytes, any alignment), CRC included. */
void bbl_encode(const struct bbl_image *img, void *buf);

/*
 * Decode one copy. @return true and @p img filled when @p buf holds a valid copy (magic,
 * CRC, count in range, ranges sorted, disjoint, non-empty and inside 2^52 units); false
 * otherwise, @p img untouched.
 */
bool bbl_decode(const void *buf, struct bbl_image *img);

#endif /* LIBGRAID_CORE_BBL_FORMAT_H */
