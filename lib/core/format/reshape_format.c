/* SPDX-License-Identifier: MIT */
/* Encode, decode and validate one copy of the reshape record (docs/FORMAT.md). */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "format/layout.h"
#include "format/reshape_format.h"

/* One geometry on disk: 32 bytes. */
struct reshape_disk_geom {
	uint32_t level;             /* +0x00: two's-complement int32 */
	uint32_t nmembers;          /* +0x04 */
	uint32_t chunk_bytes;       /* +0x08 */
	uint32_t layout;            /* +0x0c: enum reshape_layout */
	uint64_t data_bytes;        /* +0x10 */
	uint64_t reserved;          /* +0x18: zero */
};

/* The on-disk copy: 4096 bytes, every integer little-endian, every field naturally aligned. */
struct reshape_disk {
	uint8_t magic[8];           /* 0x000: "GRAIDRSH" */
	uint32_t crc;               /* 0x008: CRC32C of the 4096 bytes with this field zero */
	uint32_t version;           /* 0x00c: RESHAPE_VERSION */
	uint8_t array_uuid[16];     /* 0x010 */
	uint64_t generation;        /* 0x020: > 0 */
	uint64_t position;          /* 0x028: array bytes */
	uint32_t phase;             /* 0x030 */
	uint32_t direction;         /* 0x034 */
	uint32_t nadded;            /* 0x038 */
	uint32_t reserved0;         /* 0x03c: zero */
	struct reshape_disk_geom old_geo; /* 0x040 */
	struct reshape_disk_geom new_geo; /* 0x060 */
	uint64_t stage_array_off;   /* 0x080 */
	uint64_t stage_bytes;       /* 0x088 */
	uint32_t stage_role[2];     /* 0x090 */
	uint64_t stage_member_off[2]; /* 0x098 */
	uint8_t reserved1[0x58];    /* 0x0a8: zero */
	uint64_t added_id[256];     /* 0x100 */
	uint8_t reserved2[0x700];   /* 0x900: zero */
};

_Static_assert(sizeof(struct reshape_disk) == RESHAPE_COPY_BYTES, "one copy is 4096 bytes");
_Static_assert(sizeof(struct reshape_disk_geom) == 32, "a geometry is 32 bytes");
_Static_assert(offsetof(struct reshape_disk, generation) == 0x020, "generation at 0x020");
_Static_assert(offsetof(struct reshape_disk, phase) == 0x030, "phase at 0x030");
_Static_assert(offsetof(struct reshape_disk, old_geo) == 0x040, "old geometry at 0x040");
_Static_assert(offsetof(struct reshape_disk, new_geo) == 0x060, "new geometry at 0x060");
_Static_assert(offsetof(struct reshape_disk, stage_array_off) == 0x080, "staging at 0x080");
_Static_assert(offsetof(struct reshape_disk, stage_role) == 0x090, "stage roles at 0x090");
_Static_assert(offsetof(struct reshape_disk, stage_member_off) == 0x098, "stage offs at 0x098");
_Static_assert(offsetof(struct reshape_disk, added_id) == 0x100, "added ids at 0x100");
_Static_assert(sizeof(RESHAPE_MAGIC) - 1 == 8, "8-byte magic");

static uint32_t reshape_checksum(const struct reshape_disk *d)
{
	struct reshape_disk tmp;

	memcpy(&tmp, d, sizeof(tmp));
	tmp.crc = 0;
	return crc32c(&tmp, sizeof(tmp));
}

int reshape_geom_layout(const struct reshape_geom *g, struct layout *l)
{
	/* The ids are layout.h's; one a level does not have is geom_check()'s to refuse. */
	unsigned id = g->layout == RESHAPE_LAYOUT_Q_LAST && g->level == 6 ? LAYOUT_Q_LAST
									  : LAYOUT_ROTATING;

	return layout_init_id(l, g->level, g->nmembers, g->chunk_bytes, g->data_bytes, id);
}

static uint64_t reshape_geom_bytes(const struct reshape_geom *g)
{
	struct layout l;

	return reshape_geom_layout(g, &l) ? 0 : l.array_bytes;
}

uint64_t reshape_end(const struct reshape_record *r)
{
	uint64_t o = reshape_geom_bytes(&r->old_geo), n = reshape_geom_bytes(&r->new_geo);

	return o < n ? o : n;
}

static void geom_encode(const struct reshape_geom *g, struct reshape_disk_geom *d)
{
	d->level = htole32((uint32_t)g->level);
	d->nmembers = htole32(g->nmembers);
	d->chunk_bytes = htole32(g->chunk_bytes);
	d->layout = htole32(g->layout);
	d->data_bytes = htole64(g->data_bytes);
}

static void geom_decode(const struct reshape_disk_geom *d, struct reshape_geom *g)
{
	uint32_t level = le32toh(d->level);

	/* Only small values are levels: anything else reads as -1, which no check accepts. */
	g->level = level > 10 ? -1 : (int32_t)level;
	g->nmembers = le32toh(d->nmembers);
	g->chunk_bytes = le32toh(d->chunk_bytes);
	g->layout = le32toh(d->layout);
	g->data_bytes = le64toh(d->data_bytes);
}

void reshape_encode(const struct reshape_record *r, void *buf)
{
	struct reshape_disk d;

	memset(&d, 0, sizeof(d));
	memcpy(d.magic, RESHAPE_MAGIC, sizeof(d.magic));
	d.version = htole32(RESHAPE_VERSION);
	memcpy(d.array_uuid, r->array_uuid, sizeof(d.array_uuid));
	d.generation = htole64(r->generation);
	d.position = htole64(r->position);
	d.phase = htole32(r->phase);
	d.direction = htole32(r->direction);
	d.nadded = htole32(r->nadded);
	geom_encode(&r->old_geo, &d.old_geo);
	geom_encode(&r->new_geo, &d.new_geo);
	d.stage_array_off = htole64(r->stage_array_off);
	d.stage_bytes = htole64(r->stage_bytes);
	for (unsigned i = 0; i < RESHAPE_STAGE_COPIES; i++) {
		d.stage_role[i] = htole32(r->stage_role[i]);
		d.stage_member_off[i] = htole64(r->stage_member_off[i]);
	}
	for (unsigned i = 0; i < RESHAPE_MAX_ROLES; i++)
		d.added_id[i] = htole64(r->added_id[i]);
	d.crc = htole32(reshape_checksum(&d));
	memcpy(buf, &d, sizeof(d));
}

static int bad(const char **why, const char *text)
{
	if (why)
		*why = text;
	return -EPROTO;
}

/* One geometry on its own: a layout libgraid can place, with a layout id its level has. */
static int geom_check(const struct reshape_geom *g, const char **why, const char *impossible,
		      const char *layout)
{
	struct layout l;

	if (reshape_geom_layout(g, &l) || l.member_bytes != g->data_bytes)
		return bad(why, impossible);
	if (g->layout == RESHAPE_LAYOUT_DEFAULT)
		return 0;
	if (g->layout == RESHAPE_LAYOUT_Q_LAST && g->level == 6)
		return 0;
	return bad(why, layout);
}

/*
 * The rows (from the data area's start) that the new geometry fills with the bytes being
 * moved, on every member: staging must lie above them, or the reshape would write over it.
 */
static uint64_t new_rows_used(const struct reshape_record *r, uint64_t end)
{
	unsigned members[2];
	uint64_t off[2], rows = 0;
	struct layout l;
	unsigned n;

	if (end == 0 || reshape_geom_layout(&r->new_geo, &l))
		return 0;
	if (l.level == 1)
		return l.nstripes; /* every member holds every byte */
	n = layout_copies(&l, end - 1, members, off);
	for (unsigned i = 0; i < n; i++)
		if (off[i] / l.chunk + 1 > rows)
			rows = off[i] / l.chunk + 1;
	return rows;
}

static int stage_check(const struct reshape_record *r, uint64_t end, uint64_t unit,
		       const char **why)
{
	uint64_t floor_off = new_rows_used(r, end) * r->new_geo.chunk_bytes;
	unsigned copies = 0;

	if (r->stage_bytes == 0) {
		if (r->stage_array_off || r->stage_role[0] != RESHAPE_ROLE_NONE ||
		    r->stage_role[1] != RESHAPE_ROLE_NONE || r->stage_member_off[0] ||
		    r->stage_member_off[1])
			return bad(why, "nothing is staged, but a staging place is named");
		if (r->phase == RESHAPE_PHASE_STAGED)
			return bad(why, "phase STAGED without a staged copy");
		return 0;
	}
	if (r->stage_bytes % unit || r->stage_array_off % unit)
		return bad(why, "the staged range is not whole chunks");
	if (r->stage_array_off > end || r->stage_bytes > end - r->stage_array_off)
		return bad(why, "the staged range reaches past the bytes being moved");
	for (unsigned i = 0; i < RESHAPE_STAGE_COPIES; i++) {
		uint32_t role = r->stage_role[i];
		uint64_t off = r->stage_member_off[i];

		if (role == RESHAPE_ROLE_NONE) {
			if (off)
				return bad(why, "a staging copy without a role has an offset");
			continue;
		}
		copies++;
		/* Only a member added by the reshape holds nothing of the old geometry. */
		if (role < r->old_geo.nmembers || role >= r->new_geo.nmembers)
			return bad(why, "a staging copy is on a role the reshape did not add");
		if (i == 1 && role == r->stage_role[0])
			return bad(why, "both staging copies are on one role");
		if (off % r->new_geo.chunk_bytes || off < floor_off ||
		    off > r->new_geo.data_bytes || r->stage_bytes > r->new_geo.data_bytes - off)
			return bad(why,
				   "a staging copy lies outside the added member's unused rows");
	}
	if (copies == 0)
		return bad(why, "a staged range with no staging copy");
	/* A resume reads the staged range from the first copy alone (reshape_map.c). */
	if (r->stage_role[0] == RESHAPE_ROLE_NONE)
		return bad(why, "a staged range without its first staging copy");
	if (r->phase == RESHAPE_PHASE_STAGED &&
	    (r->direction != RESHAPE_FORWARD || r->position < r->stage_array_off ||
	     r->position >= r->stage_array_off + r->stage_bytes))
		return bad(why, "phase STAGED with the position outside the staged range");
	return 0;
}

/* Everything a resume relies on without checking again; FORMAT.md "The reshape record". */
static int reshape_validate(const struct reshape_record *r, const char **why)
{
	uint64_t end, unit;
	int rc;

	if (r->generation == 0)
		return bad(why, "generation 0");
	if (r->phase < RESHAPE_PHASE_STAGING || r->phase > RESHAPE_PHASE_FINISHING)
		return bad(why, "unknown phase");
	if (r->direction != RESHAPE_FORWARD && r->direction != RESHAPE_BACKWARD)
		return bad(why, "unknown direction");
	rc = geom_check(&r->old_geo, why, "impossible old geometry",
			"a layout id the old geometry's level does not have");
	if (rc == 0)
		rc = geom_check(&r->new_geo, why, "impossible new geometry",
				"a layout id the new geometry's level does not have");
	if (rc)
		return rc;
	if (!memcmp(&r->old_geo, &r->new_geo, sizeof(r->old_geo)))
		return bad(why, "the old and the new geometry are the same");
	if (r->nadded != (r->new_geo.nmembers > r->old_geo.nmembers
				  ? r->new_geo.nmembers - r->old_geo.nmembers : 0))
		return bad(why, "the added roles do not match the member counts");
	end = reshape_end(r);
	unit = r->old_geo.chunk_bytes > r->new_geo.chunk_bytes ? r->old_geo.chunk_bytes
							      : r->new_geo.chunk_bytes;
	if (r->position > end)
		return bad(why, "the position is beyond the end of the bytes being moved");
	if (r->position % unit)
		return bad(why, "the position is not on a chunk boundary");
	if (r->phase == RESHAPE_PHASE_FINISHING &&
	    r->position != (r->direction == RESHAPE_FORWARD ? end : 0))
		return bad(why, "phase FINISHING before the position reached the end");
	return stage_check(r, end, unit, why);
}

int reshape_decode(const void *buf, struct reshape_record *r, const char **why)
{
	struct reshape_disk d;
	struct reshape_record out;
	int rc;

	if (!buf || !r)
		return -EINVAL;
	memcpy(&d, buf, sizeof(d));
	if (memcmp(d.magic, RESHAPE_MAGIC, sizeof(d.magic))) {
		if (why)
			*why = "no reshape record magic";
		return -EINVAL;
	}
	if (le32toh(d.crc) != reshape_checksum(&d)) {
		if (why)
			*why = "wrong CRC (a torn or corrupt copy)";
		return -EBADMSG;
	}
	if (le32toh(d.version) != RESHAPE_VERSION)
		return bad(why, "unknown record version");
	memset(&out, 0, sizeof(out));
	memcpy(out.array_uuid, d.array_uuid, sizeof(out.array_uuid));
	out.generation = le64toh(d.generation);
	out.position = le64toh(d.position);
	out.phase = le32toh(d.phase);
	out.direction = le32toh(d.direction);
	out.nadded = le32toh(d.nadded);
	geom_decode(&d.old_geo, &out.old_geo);
	geom_decode(&d.new_geo, &out.new_geo);
	out.stage_array_off = le64toh(d.stage_array_off);
	out.stage_bytes = le64toh(d.stage_bytes);
	for (unsigned i = 0; i < RESHAPE_STAGE_COPIES; i++) {
		out.stage_role[i] = le32toh(d.stage_role[i]);
		out.stage_member_off[i] = le64toh(d.stage_member_off[i]);
	}
	for (unsigned i = 0; i < RESHAPE_MAX_ROLES; i++)
		out.added_id[i] = le64toh(d.added_id[i]);
	rc = reshape_validate(&out, why);
	if (rc)
		return rc;
	memcpy(r, &out, sizeof(out));
	return 0;
}

int reshape_newest(const struct reshape_record *const *copies, unsigned n,
		   const uint8_t uuid[16])
{
	int best = -1;

	for (unsigned i = 0; i < n; i++) {
		if (!copies[i] || memcmp(copies[i]->array_uuid, uuid, 16))
			continue;
		if (best < 0 || copies[i]->generation > copies[best]->generation)
			best = (int)i;
	}
	return best;
}

int reshape_matches_sb(const struct reshape_record *r, const struct superblock *sb,
		       const char **why)
{
	if (memcmp(r->array_uuid, sb->array_uuid, 16))
		return bad(why, "the record belongs to another array");
	if (r->new_geo.level != sb->level || r->new_geo.nmembers != sb->nmembers ||
	    r->new_geo.chunk_bytes != sb->chunk_bytes || r->new_geo.data_bytes != sb->data_bytes ||
	    r->new_geo.layout != sb_layout_id(sb)) /* the ids are layout.h's: Q-last is 1 in both */
		return bad(why, "the record's new geometry is not the superblock's");
	return 0;
}
