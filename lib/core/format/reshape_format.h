/* SPDX-License-Identifier: MIT */
/* The reshape record's on-disk block (docs/FORMAT.md): encode, decode, validate; pure. */
#ifndef LIBGRAID_CORE_RESHAPE_FORMAT_H
#define LIBGRAID_CORE_RESHAPE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "format/superblock.h"

/*
 * One copy is one 4 KiB block; the area holds two, at a fixed place in the reserved front
 * area (GRAID_SB_RESHAPE_OFFSET, superblock.h). Generation g goes to block g mod 2, so a
 * torn write leaves the other copy whole.
 */
#define RESHAPE_COPY_BYTES 4096u
#define RESHAPE_MAGIC "GRAIDRSH"
#define RESHAPE_VERSION 1u
/* Roles a record can name as added; the superblock's slot count. */
#define RESHAPE_MAX_ROLES GRAID_SB_MAX_MEMBERS
/* A staging copy's role when there is none. */
#define RESHAPE_ROLE_NONE UINT32_MAX
#define RESHAPE_STAGE_COPIES 2u

/* Where the reshape stands; each phase says what a resume must do first (RESHAPE.md). */
enum reshape_phase {
	RESHAPE_PHASE_STAGING = 1,  /* the staged copy is being written: not to be trusted */
	RESHAPE_PHASE_STAGED = 2,   /* the staged copy is whole; new rows over it may be torn */
	RESHAPE_PHASE_COPY = 3,     /* windows copied straight from the old rows */
	RESHAPE_PHASE_FINISHING = 4, /* every byte moved; the staging rows to clear, then done */
};

enum reshape_direction {
	RESHAPE_FORWARD = 0,  /* array bytes [0, position) are in the new geometry */
	RESHAPE_BACKWARD = 1, /* array bytes [position, end) are in the new geometry */
};

/* Layout ids: how a level places parity, beyond level and member count. */
enum reshape_layout {
	RESHAPE_LAYOUT_DEFAULT = 0, /* the level's one layout (docs/FORMAT.md "Placement") */
	/*
	 * RAID-6 with Q on the last member (md's left-symmetric-6): data and P as RAID-5
	 * left-symmetric over members 0..n-2, Q on member n-1 in every stripe. What a RAID-5
	 * of n becomes by adding one member without moving any data.
	 */
	RESHAPE_LAYOUT_Q_LAST = 1,
};

/* One geometry: what struct layout needs, plus its layout id. */
struct reshape_geom {
	int32_t level;
	uint32_t nmembers;
	uint32_t chunk_bytes;
	uint32_t layout;            /* enum reshape_layout */
	uint64_t data_bytes;        /* per member, a multiple of chunk_bytes */
};

/* The record, in host order. */
struct reshape_record {
	uint8_t array_uuid[16];
	uint64_t generation;        /* > 0; the valid copy with the highest one wins */
	uint64_t position;          /* array bytes; see enum reshape_direction */
	uint32_t phase;             /* enum reshape_phase */
	uint32_t direction;         /* enum reshape_direction */
	struct reshape_geom old_geo, new_geo;
	/*
	 * The staged copy: array bytes [stage_array_off, stage_array_off + stage_bytes) in
	 * array order, as one run at member offset stage_member_off[i] of role stage_role[i]
	 * (RESHAPE_ROLE_NONE: no such copy). stage_bytes 0: nothing staged.
	 */
	uint64_t stage_array_off, stage_bytes;
	uint32_t stage_role[RESHAPE_STAGE_COPIES];
	uint64_t stage_member_off[RESHAPE_STAGE_COPIES];
	/* Roles added: old_geo.nmembers .. + nadded - 1, each device's slot id (superblock). */
	uint32_t nadded;
	uint64_t added_id[RESHAPE_MAX_ROLES];
};

/*
 * A geometry's struct layout, its layout id included (Q-last on a RAID-6; any other id is
 * placed as the level's default, which the record's validation refuses). @return as
 * layout_init().
 */
struct layout;
int reshape_geom_layout(const struct reshape_geom *g, struct layout *l);

/* The array bytes that exist in both geometries: the bytes a reshape moves. */
uint64_t reshape_end(const struct reshape_record *r);

/* Encode @p r into @p buf (RESHAPE_COPY_BYTES, any alignment), magic and CRC included. */
void reshape_encode(const struct reshape_record *r, void *buf);

/*
 * Decode and validate one copy.
 * @param why set to a sentence naming what was wrong on failure (static text); may be NULL.
 * @return 0 and @p r filled (every byte, so memcmp works); -EINVAL NULL argument or no
 *   magic (never written: not a record); -EBADMSG a wrong CRC (a torn or corrupt copy);
 *   -EPROTO an unknown version or a field that makes no sense (FORMAT.md, "The reshape
 *   record"). @p r is untouched on failure.
 */
int reshape_decode(const void *buf, struct reshape_record *r, const char **why);

/*
 * The copy that counts among @p n decoded copies (NULL entries: copies that did not
 * decode): the one of array @p uuid with the highest generation; between equals, the
 * first. @return its index, or -1 when none is the array's.
 */
int reshape_newest(const struct reshape_record *const *copies, unsigned n,
		   const uint8_t uuid[16]);

/*
 * Whether @p r is the record the superblock @p sb announces: the array's UUID and the new
 * geometry in the superblock's level, nmembers, chunk_bytes and data_bytes.
 * @return 0; -EPROTO otherwise, @p why naming the field (may be NULL).
 */
int reshape_matches_sb(const struct reshape_record *r, const struct superblock *sb,
		       const char **why);

#endif /* LIBGRAID_CORE_RESHAPE_FORMAT_H */
