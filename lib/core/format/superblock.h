/* SPDX-License-Identifier: MIT */
/* The member superblock: its on-disk form (docs/FORMAT.md), encode, decode, UUIDs, CRC32C. */
#ifndef LIBGRAID_CORE_SUPERBLOCK_H
#define LIBGRAID_CORE_SUPERBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid.h>

#define GRAID_SB_SIZE 4096
#define GRAID_SB_MAX_MEMBERS 256

/* The 8 bytes at offset 0 of every member: ASCII "GRAID-SB", no terminator. */
#define GRAID_SB_MAGIC "GRAID-SB"
#define GRAID_SB_MAGIC_LEN 8

/*
 * Major: a reader refuses any other. Minor: compatible additions, read by every reader.
 * A superblock whose array uses a feature an older reader must not write around (an
 * incompatible feature: GRAID_SB_F_INCOMPAT) is written with GRAID_SB_VERSION_MAJOR_INCOMPAT,
 * which every reader before minor 5 refuses; its layout is major 1's (docs/FORMAT.md).
 */
#define GRAID_SB_VERSION_MAJOR 1
#define GRAID_SB_VERSION_MAJOR_INCOMPAT 2
/*
 * Major 3: flag bits 16..31 are incompatible features, and a reader refuses any it does not
 * know, so later ones need no new major. Written exactly while one of them is set (every
 * reader before it refuses major 3); back to 1 or 2 once none is.
 */
#define GRAID_SB_VERSION_MAJOR_FEATURES 3
#define GRAID_SB_VERSION_MINOR 5

/* flags */
#define GRAID_SB_F_CLEAN 0x1u  /* the array was closed cleanly: no resync needed */
/* Minor 5: a tag per 4 KiB data block after the data area (docs/FORMAT.md, "Checksums"). */
#define GRAID_SB_F_CHECKSUMS 0x2u
/* The flags only a reader that knows them may open: they come with the major 2. */
#define GRAID_SB_F_INCOMPAT GRAID_SB_F_CHECKSUMS
/*
 * Major 3's feature bits; a set one that is not in GRAID_SB_F_FEATURES_KNOWN is refused.
 * In majors 1 and 2 they are reserved bits, kept and meaning nothing.
 */
#define GRAID_SB_F_FEATURES 0xffff0000u
/*
 * A reshape is recorded: the superblock's geometry is the new one, and the reshape record
 * (reshape_format.h) at GRAID_SB_RESHAPE_OFFSET says how far the array has moved to it.
 */
#define GRAID_SB_F_RESHAPE 0x00010000u
/*
 * The tags' meta words keep write generations and parity records (docs/FORMAT.md,
 * "Generations"): lost writes are detected. Valid only with GRAID_SB_F_CHECKSUMS. Every
 * checksummed array this version writes has it (create, and an older array's first
 * writable open): a writer that does not know it would write generation 0 and break
 * every record, so it is an incompatible feature.
 */
#define GRAID_SB_F_GENERATIONS 0x00020000u
/*
 * The RAID-6's layout id is 1, Q-last (layout.h LAYOUT_Q_LAST: Q on the last member in every
 * stripe, data and P a RAID-5 over the others), not the rotating one; valid only with level
 * 6. The superblock has no spare bytes for a layout field, and a layout has two ids: this
 * bit is the field. Incompatible: a reader placing P and Q by rotation would read and write
 * the wrong chunks. Set from the start of a RAID-5 -> RAID-6 conversion (the geometry
 * written is then the new one) for as long as the array keeps that layout.
 */
#define GRAID_SB_F_Q_LAST 0x00040000u
#define GRAID_SB_F_FEATURES_KNOWN (GRAID_SB_F_RESHAPE | GRAID_SB_F_GENERATIONS | GRAID_SB_F_Q_LAST)

/*
 * The reshape record's area: fixed, not named by any field (the superblock has no bytes
 * left), in the reserved front area where no libgraid writer has put anything else. A
 * superblock with GRAID_SB_F_RESHAPE must leave it free (docs/FORMAT.md).
 */
#define GRAID_SB_RESHAPE_OFFSET (512u * 1024)
#define GRAID_SB_RESHAPE_BYTES (2u * 4096)

/* slot_flags bits (minor 1) */
#define GRAID_SB_SLOT_CATCHUP 0x1u /* a REBUILDING slot needs only the bitmap's marked regions */

/* Owner host names are kept to this many bytes, NUL included. */
#define GRAID_SB_HOST_BYTES 64

#define GRAID_SB_NVME_ID 0x1u     /* nvme.flags: the identity below was recorded */
#define GRAID_SB_NQN_BYTES 144

/*
 * Minor 2: the NVMe namespace this member's superblock was written on (zero for a member
 * that is no NVMe namespace), so a device found under another name can be told from
 * another namespace that holds a copy of it.
 */
struct sb_nvme {
	uint32_t flags;             /* GRAID_SB_NVME_ID */
	uint32_t nsid;
	uint8_t nguid[16];
	uint8_t eui64[8];
	uint8_t uuid[16];
	char subnqn[GRAID_SB_NQN_BYTES]; /* NUL-terminated; longer NQNs keep their first 143 bytes */
};

/*
 * Who last opened the array writable (minor 1): so an opener that finds the members locked
 * can tell a live holder from a dead one. All zero: never recorded.
 */
struct sb_owner {
	uint32_t pid;               /* process id */
	uint64_t start;             /* its start time, clock ticks since boot (/proc/PID/stat) */
	uint64_t since;             /* when it opened the array, seconds since the epoch */
	uint8_t boot_id[16];        /* the kernel's boot id then (/proc/sys/kernel/random/boot_id) */
	char host[GRAID_SB_HOST_BYTES]; /* gethostname(), NUL-terminated */
	/*
	 * Minor 3; zero before. host_id: the first 8 bytes of the host's machine id
	 * (/etc/machine-id), 0 unknown. epoch: the owner epoch, one more at every takeover by
	 * another host (0: unknown, an array written before minor 3).
	 */
	uint64_t host_id;
	uint64_t epoch;
};

/* Where the data area starts unless the creator says otherwise: room for bitmap and log. */
#define GRAID_SB_DEFAULT_DATA_OFFSET (1u << 20)

/*
 * The member states (enum graid_member_state) are public: libgraid/graid.h. In the
 * superblock, layout slots (< nmembers) hold ACTIVE..REBUILDING; slots past the layout hold
 * 0 (empty), FAILED, MISSING or SPARE (docs/FORMAT.md, "Member states").
 */
#define GRAID_MEMBER_STATE_MAX GRAID_MEMBER_SPARE

/* The superblock in host order, as decode returns it and encode takes it. */
struct superblock {
	uint32_t version;           /* major version, GRAID_SB_VERSION_MAJOR */
	uint32_t minor;             /* decode: the writer's minor version; encode ignores it */
	uint8_t array_uuid[16];     /* the same on every member of one array */
	uint8_t member_uuid[16];    /* this device's own, set when it joins the array */
	int32_t level;              /* 0, 1, 5, 6, 10 */
	uint32_t chunk_bytes;       /* power of two, 4 KiB .. 1 MiB */
	uint32_t nmembers;          /* members in the layout (spares not counted) */
	uint32_t role;              /* this member's slot: 0..nmembers-1, or a spare's slot */
	uint32_t block_size;        /* logical block size of the array, 512 or 4096 */
	uint64_t data_offset;       /* bytes from member start to the data area (x 4096) */
	uint64_t data_bytes;        /* usable data bytes per member (x chunk_bytes) */
	uint64_t ctime;             /* creation time, seconds since the epoch */
	uint64_t events;            /* bumped on every state change; highest wins */
	uint32_t flags;             /* GRAID_SB_F_*; unknown bits are kept, not refused */
	uint64_t rebuild_offset;    /* member bytes in sync on a rebuilding member, else 0 */
	uint64_t bitmap_offset, bitmap_bytes; /* write-intent bitmap area, 0/0 = none */
	uint64_t log_offset, log_bytes;       /* write-hole log area, 0/0 = none */
	uint8_t member_state[GRAID_SB_MAX_MEMBERS]; /* every slot's enum graid_member_state */
	/* Minor 1; all zero in a minor-0 superblock (each field says what zero means). */
	uint64_t bitmap_region_stripes; /* stripes per bitmap bit; 0: derived (FORMAT.md) */
	uint64_t history_events;    /* bitmap marks kept since this event; 0: cleared as usual */
	uint64_t scrub_offset;      /* member rows an unfinished scrub has checked; 0: none */
	struct sb_owner owner;
	uint64_t slot_id[GRAID_SB_MAX_MEMBERS]; /* first 8 bytes of each slot's member UUID; 0: unknown */
	uint8_t slot_flags[GRAID_SB_MAX_MEMBERS]; /* GRAID_SB_SLOT_* per slot */
	/* Per slot: low 32 bits of the event that recorded it out (MISSING/FAILED); 0: unknown. */
	uint32_t left_events[GRAID_SB_MAX_MEMBERS];
	/* Minor 2; all zero before (no live-data map: every region counts as used). */
	uint64_t live_offset, live_bytes; /* live-data map area, 0/0 = none */
	uint64_t live_region_stripes; /* stripes per map bit; 0 only when there is no map */
	struct sb_nvme nvme;  /* minor 2; all zero before */
	/* Minor 4; zero before (no bad-block log: docs/FORMAT.md "The bad-block log"). */
	uint64_t bbl_offset, bbl_bytes; /* bad-block log area, 0/0 = none; multiples of 4096 */
	/*
	 * Minor 5, with GRAID_SB_F_CHECKSUMS: the tag area, bytes from member start; 0/0 without.
	 * Not stored: decode derives them from the data area (FORMAT.md "Checksums"), encode
	 * ignores them.
	 */
	uint64_t tag_offset, tag_bytes;
};

/*
 * The on-disk superblock: 4096 bytes at byte 0 of every member, every integer little-endian.
 * Every field sits at its natural alignment, so the compiler adds no padding: the size and
 * offset asserts in superblock.c pin the layout that docs/FORMAT.md describes. Never read or
 * write it through a cast of an I/O buffer: copy it (alignment, strict aliasing).
 */
struct sb_disk {
	uint8_t magic[8];           /* 0x000: "GRAID-SB" */
	uint16_t major;             /* 0x008: GRAID_SB_VERSION_MAJOR; any other is refused */
	uint16_t minor;             /* 0x00a: GRAID_SB_VERSION_MINOR of the writer */
	uint32_t crc;               /* 0x00c: CRC32C of all 4096 bytes with this field zero */
	uint32_t sb_bytes;          /* 0x010: size of this superblock, 4096 */
	uint32_t flags;             /* 0x014: GRAID_SB_F_* */
	uint8_t array_uuid[16];     /* 0x018: array UUID, same on every member */
	uint8_t member_uuid[16];    /* 0x028: this member's UUID */
	uint32_t level;             /* 0x038: RAID level as a two's-complement int32 */
	uint32_t chunk_bytes;       /* 0x03c: chunk size in bytes */
	uint32_t nmembers;          /* 0x040: members in the layout */
	uint32_t role;              /* 0x044: this member's slot */
	uint32_t block_size;        /* 0x048: logical block size, 512 or 4096 */
	uint32_t bbl_block;         /* 0x04c: minor 4: bad-block log, 4 KiB blocks from member start */
	uint64_t data_offset;       /* 0x050: data area start, bytes from member start */
	uint64_t data_bytes;        /* 0x058: data area length in bytes */
	uint64_t ctime;             /* 0x060: creation time, seconds since the epoch */
	uint64_t events;            /* 0x068: event counter */
	uint64_t rebuild_offset;    /* 0x070: rebuild checkpoint, bytes of the data area */
	uint64_t bitmap_offset;     /* 0x078: write-intent bitmap, bytes from member start */
	uint64_t bitmap_bytes;      /* 0x080: its length, 0 = none */
	uint64_t log_offset;        /* 0x088: write-hole log, bytes from member start */
	uint64_t log_bytes;         /* 0x090: its length, 0 = none */
	uint64_t bitmap_region_stripes; /* 0x098: stripes per bitmap bit; 0 = derived (minor 0) */
	uint64_t history_events;    /* 0x0a0: bitmap marks kept since this event; 0 = none kept */
	uint64_t scrub_offset;      /* 0x0a8: member rows an unfinished scrub checked; 0 = none */
	uint32_t owner_pid;         /* 0x0b0: last writable opener's process id; 0 = unknown */
	uint32_t bbl_blocks;        /* 0x0b4: minor 4: its length in 4 KiB blocks, 0 = none */
	uint64_t owner_start;       /* 0x0b8: its start time, clock ticks since boot */
	uint64_t owner_since;       /* 0x0c0: when it opened, seconds since the epoch */
	uint8_t owner_boot_id[16];  /* 0x0c8: the kernel boot id of its host then */
	uint64_t live_offset;       /* 0x0d8: live-data map, bytes from member start (minor 2) */
	uint64_t live_bytes;        /* 0x0e0: its length, 0 = none (every region used) */
	uint64_t live_region_stripes; /* 0x0e8: stripes per map bit; 0 = no map */
	uint64_t owner_epoch;       /* 0x0f0: minor 3: owner epoch, +1 at each takeover; 0 = unknown */
	uint64_t owner_host_id;     /* 0x0f8: minor 3: first 8 bytes of the owner's machine id */
	uint8_t member_state[256];  /* 0x100: state of slot i, enum graid_member_state */
	uint64_t slot_id[256];      /* 0x200: first 8 bytes of slot i's member UUID; 0 = unknown */
	uint8_t slot_flags[256];    /* 0xa00: GRAID_SB_SLOT_* of slot i */
	char owner_host[64];        /* 0xb00: the last writable opener's host name, NUL-terminated */
	uint32_t left_events[256];  /* 0xb40: low 32 bits of the event slot i was recorded out */
	uint8_t nvme_nguid[16];     /* 0xf40: minor 2: NGUID of the namespace written on */
	uint8_t nvme_eui64[8];      /* 0xf50: its EUI-64 */
	uint32_t nvme_nsid;         /* 0xf58: its namespace ID */
	uint32_t nvme_flags;        /* 0xf5c: GRAID_SB_NVME_ID when the identity is recorded */
	uint8_t nvme_uuid[16];      /* 0xf60: its namespace UUID */
	char nvme_subnqn[GRAID_SB_NQN_BYTES]; /* 0xf70: its subsystem NQN, NUL-terminated */
};

/*
 * Encode @p sb into @p buf (GRAID_SB_SIZE bytes, any alignment), magic and CRC included.
 * Fields are written as given, without validation, so a test can craft a bad superblock
 * (version is written as the 16-bit major); the minor written is GRAID_SB_VERSION_MINOR and
 * reserved bytes are zero. Decode what you encode to check it.
 */
void sb_encode(const struct superblock *sb, void *buf);

/*
 * Decode and validate the GRAID_SB_SIZE bytes at @p buf (any alignment); reads nothing
 * beyond them and trusts no length field.
 * @return 0 and @p sb filled (every byte of it, padding zeroed, so memcmp works);
 *   -EINVAL NULL argument, or no libgraid magic: not a member;
 *   -EBADMSG the magic is there but the CRC is wrong: a corrupt superblock;
 *   -EPROTO an unknown major version or a field that makes no sense (see FORMAT.md).
 *   @p sb is untouched on failure.
 */
int sb_decode(const void *buf, struct superblock *sb);

/*
 * Whether the reshape record's area (GRAID_SB_RESHAPE_OFFSET) is free in the superblock's
 * reserved front area: inside [4096, data_offset), clear of every area it names.
 */
bool sb_reshape_area_free(const struct superblock *sb);

/*
 * Whether a decoded superblock records a reshape: major 3 with GRAID_SB_F_RESHAPE (in
 * majors 1 and 2 the bit is a reserved one and means nothing).
 */
bool sb_reshape_recorded(const struct superblock *sb);

/*
 * The layout id (layout.h enum layout_id) of a decoded superblock's geometry: LAYOUT_Q_LAST
 * for a major 3 with GRAID_SB_F_Q_LAST, else LAYOUT_ROTATING.
 */
unsigned sb_layout_id(const struct superblock *sb);

/*
 * Whether a decoded superblock's array keeps write generations: major 3 with
 * GRAID_SB_F_GENERATIONS (in majors 1 and 2 the bit is a reserved one and means nothing).
 */
bool sb_generations(const struct superblock *sb);

/*
 * The tag area of a checksummed array's member (FORMAT.md "Checksums"): right after the data
 * area, one 4 KiB tag block per 512 data blocks. Without GRAID_SB_F_CHECKSUMS in @p flags
 * both are 0.
 */
void sb_tag_area(uint32_t flags, uint64_t data_offset, uint64_t data_bytes, uint64_t *offset,
		 uint64_t *bytes);

/* The member bytes the superblock's array needs: data area, and tag area when there is one. */
uint64_t sb_member_end(const struct superblock *sb);

/* The CRC a superblock in @p buf should carry: CRC32C of the 4096 bytes, crc field zeroed. */
uint32_t sb_checksum(const void *buf);

/*
 * Standard CRC32C (Castagnoli, reflected, init and final XOR 0xFFFFFFFF; the iSCSI/ext4/
 * NVMe one): crc32c("123456789", 9) == 0xE3069283. @p len may be 0.
 */
uint32_t crc32c(const void *buf, size_t len);

/*
 * A running CRC32C: start with reg 0xFFFFFFFF, feed pieces, XOR the end with 0xFFFFFFFF:
 * the same as crc32c() over the pieces joined.
 */
uint32_t crc32c_update(uint32_t reg, const void *buf, size_t len);

/* A random (version 4, RFC 9562) UUID from getrandom(). */
void sb_uuid_generate(uint8_t uuid[16]);

/* Format as 36 lowercase characters, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", plus NUL. */
void sb_uuid_format(const uint8_t uuid[16], char out[37]);

/*
 * Parse the 36-character form (either case; nothing may follow it).
 * @return 0; -EINVAL @p s is not a UUID (@p uuid untouched).
 */
int sb_uuid_parse(const char *s, uint8_t uuid[16]);

#endif /* LIBGRAID_CORE_SUPERBLOCK_H */
