/* SPDX-License-Identifier: MIT */
/* The reshape record and the superblock's RESHAPE feature: layout, round trip, every refusal. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "format/reshape_format.h"
#include "format/superblock.h"

#define MiB (1024ull * 1024)

/* RAID-5 of 4 growing to 5, 64 KiB chunks, 64 MiB a member, staged on the new member. */
static struct reshape_record rec_sample(void)
{
	struct reshape_record r;

	memset(&r, 0, sizeof(r));
	for (unsigned i = 0; i < 16; i++)
		r.array_uuid[i] = (uint8_t)(0x30 + i);
	r.generation = 0x0102030405060708ull;
	r.old_geo = (struct reshape_geom){ 5, 4, 65536, RESHAPE_LAYOUT_DEFAULT, 64 * MiB };
	r.new_geo = (struct reshape_geom){ 5, 5, 65536, RESHAPE_LAYOUT_DEFAULT, 64 * MiB };
	r.phase = RESHAPE_PHASE_STAGED;
	r.direction = RESHAPE_FORWARD;
	r.stage_array_off = 0;
	r.stage_bytes = 12 * 65536;
	r.position = 4 * 65536;
	r.stage_role[0] = 4;
	r.stage_role[1] = RESHAPE_ROLE_NONE;
	/* Old array: 3 x 64 MiB; the new geometry fills 48 MiB a member with it. */
	r.stage_member_off[0] = 60 * MiB;
	r.nadded = 1;
	r.added_id[0] = 0x1112131415161718ull;
	return r;
}

static uint64_t le64_at(const uint8_t *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static uint32_t le32_at(const uint8_t *p)
{
	return (uint32_t)le64_at(p);
}

/* Encode, then decode with the reason; the error, or 0. */
static int rec_try(const struct reshape_record *r, const char **why)
{
	uint8_t buf[RESHAPE_COPY_BYTES];
	struct reshape_record back;

	*why = "";
	reshape_encode(r, buf);
	return reshape_decode(buf, &back, why);
}

Test(reshape_format, fields_sit_at_the_documented_offsets)
{
	struct reshape_record r = rec_sample();
	uint8_t buf[RESHAPE_COPY_BYTES], copy[RESHAPE_COPY_BYTES];

	reshape_encode(&r, buf);
	cr_assert_eq(memcmp(buf, "GRAIDRSH", 8), 0);
	memcpy(copy, buf, sizeof(copy));
	memset(copy + 8, 0, 4);
	cr_assert_eq(le32_at(buf + 0x08), crc32c(copy, sizeof(copy)));
	cr_assert_eq(le32_at(buf + 0x0c), 1);
	cr_assert_eq(memcmp(buf + 0x10, r.array_uuid, 16), 0);
	cr_assert_eq(le64_at(buf + 0x20), r.generation);
	cr_assert_eq(le64_at(buf + 0x28), r.position);
	cr_assert_eq(le32_at(buf + 0x30), RESHAPE_PHASE_STAGED);
	cr_assert_eq(le32_at(buf + 0x34), RESHAPE_FORWARD);
	cr_assert_eq(le32_at(buf + 0x38), 1);
	cr_assert_eq(le32_at(buf + 0x40), 5);
	cr_assert_eq(le32_at(buf + 0x44), 4);
	cr_assert_eq(le32_at(buf + 0x48), 65536);
	cr_assert_eq(le32_at(buf + 0x4c), 0);
	cr_assert_eq(le64_at(buf + 0x50), 64 * MiB);
	cr_assert_eq(le32_at(buf + 0x64), 5);
	cr_assert_eq(le64_at(buf + 0x70), 64 * MiB);
	cr_assert_eq(le64_at(buf + 0x80), 0);
	cr_assert_eq(le64_at(buf + 0x88), 12 * 65536);
	cr_assert_eq(le32_at(buf + 0x90), 4);
	cr_assert_eq(le32_at(buf + 0x94), UINT32_MAX);
	cr_assert_eq(le64_at(buf + 0x98), 60 * MiB);
	cr_assert_eq(le64_at(buf + 0xa0), 0);
	cr_assert_eq(le64_at(buf + 0x100), 0x1112131415161718ull);
	for (unsigned i = 0xa8; i < 0x100; i++)
		cr_assert_eq(buf[i], 0, "reserved byte 0x%x", i);
	for (unsigned i = 0x900; i < RESHAPE_COPY_BYTES; i++)
		cr_assert_eq(buf[i], 0, "reserved byte 0x%x", i);
}

Test(reshape_format, round_trip_keeps_every_field)
{
	struct reshape_record r = rec_sample(), back;
	uint8_t buf[RESHAPE_COPY_BYTES];
	const char *why = NULL;

	r.added_id[1] = 7; /* past nadded: kept as written, not checked */
	reshape_encode(&r, buf);
	cr_assert_eq(reshape_decode(buf, &back, &why), 0, "%s", why ? why : "");
	cr_assert_eq(memcmp(&r, &back, sizeof(r)), 0);
	/* RAID-5 of 4 to RAID-6 of 5, Q on the new member: nothing staged. */
	memset(&r.stage_role, 0, sizeof(r.stage_role));
	r.new_geo = (struct reshape_geom){ 6, 5, 65536, RESHAPE_LAYOUT_Q_LAST, 64 * MiB };
	r.phase = RESHAPE_PHASE_COPY;
	r.stage_bytes = 0;
	r.stage_member_off[0] = 0;
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	reshape_encode(&r, buf);
	cr_assert_eq(reshape_decode(buf, &back, &why), 0, "%s", why);
	cr_assert_eq(memcmp(&r, &back, sizeof(r)), 0);
	cr_assert_eq(reshape_end(&back), 3 * 64 * MiB);
}

Test(reshape_format, no_magic_is_not_a_record_and_a_wrong_crc_is_corrupt)
{
	struct reshape_record r = rec_sample(), back;
	uint8_t buf[RESHAPE_COPY_BYTES];
	const char *why = NULL;

	memset(&back, 0xa5, sizeof(back));
	memset(buf, 0, sizeof(buf));
	cr_assert_eq(reshape_decode(buf, &back, &why), -EINVAL, "a zeroed area");
	cr_assert_str_eq(why, "no reshape record magic");
	reshape_encode(&r, buf);
	buf[0x29] ^= 0x10; /* the position, one bit */
	cr_assert_eq(reshape_decode(buf, &back, &why), -EBADMSG);
	cr_assert_str_eq(why, "wrong CRC (a torn or corrupt copy)");
	reshape_encode(&r, buf);
	buf[0] = 'X';
	cr_assert_eq(reshape_decode(buf, &back, &why), -EINVAL);
	cr_assert_eq(back.generation, 0xa5a5a5a5a5a5a5a5ull, "untouched on failure");
	cr_assert_eq(reshape_decode(NULL, &back, NULL), -EINVAL);
	cr_assert_eq(reshape_decode(buf, NULL, NULL), -EINVAL);
}

/* One invalid record per case, each refused -EPROTO with the reason that names it. */
Test(reshape_format, every_invalid_field_is_refused_and_named)
{
	static const struct {
		const char *why;
	} want[] = {
		{ "unknown record version" },
		{ "generation 0" },
		{ "unknown phase" },
		{ "unknown direction" },
		{ "impossible old geometry" },
		{ "impossible new geometry" },
		{ "impossible new geometry" },
		{ "a layout id the new geometry's level does not have" },
		{ "a layout id the old geometry's level does not have" },
		{ "the old and the new geometry are the same" },
		{ "the added roles do not match the member counts" },
		{ "the position is beyond the end of the bytes being moved" },
		{ "the position is not on a chunk boundary" },
		{ "phase FINISHING before the position reached the end" },
		{ "nothing is staged, but a staging place is named" },
		{ "phase STAGED without a staged copy" },
		{ "the staged range is not whole chunks" },
		{ "the staged range reaches past the bytes being moved" },
		{ "a staging copy is on a role the reshape did not add" },
		{ "a staging copy lies outside the added member's unused rows" },
		{ "a staging copy lies outside the added member's unused rows" },
		{ "a staging copy without a role has an offset" },
		{ "both staging copies are on one role" },
		{ "a staged range with no staging copy" },
		{ "phase STAGED with the position outside the staged range" },
		{ "impossible new geometry" },
	};
	for (unsigned c = 0; c < sizeof(want) / sizeof(want[0]); c++) {
		struct reshape_record r = rec_sample();
		uint8_t buf[RESHAPE_COPY_BYTES];
		struct reshape_record back;
		const char *why = "";
		int rc;

		switch (c) {
		case 0: break; /* the version: patched in the encoded block below */
		case 1: r.generation = 0; break;
		case 2: r.phase = 5; break;
		case 3: r.direction = 2; break;
		case 4: r.old_geo.level = 4; break;
		case 5: r.new_geo.nmembers = 1; break;            /* RAID-5 needs 2 */
		case 6: r.new_geo.data_bytes += 4096; break;      /* not whole chunks */
		case 7: r.new_geo.layout = RESHAPE_LAYOUT_Q_LAST; break; /* Q-last on RAID-5 */
		case 8: r.old_geo.layout = 9; break;
		case 9: r.new_geo = r.old_geo; r.nadded = 0; break;
		case 10: r.nadded = 2; break;
		case 11: r.phase = RESHAPE_PHASE_COPY; r.stage_bytes = 0;
			 r.stage_member_off[0] = 0; r.stage_role[0] = RESHAPE_ROLE_NONE;
			 r.position = 3 * 64 * MiB + 65536; break;
		case 12: r.position += 4096; break;
		case 13: r.phase = RESHAPE_PHASE_FINISHING; break;
		case 14: r.phase = RESHAPE_PHASE_COPY; r.stage_bytes = 0; break;
		case 15: r.stage_bytes = 0; r.stage_member_off[0] = 0;
			 r.stage_role[0] = RESHAPE_ROLE_NONE; break;
		case 16: r.stage_bytes += 4096; break;
		case 17: r.phase = RESHAPE_PHASE_STAGING; r.stage_array_off = 3 * 64 * MiB - 65536;
			 break;
		case 18: r.stage_role[0] = 3; break;              /* an old member holds data */
		case 19: r.stage_member_off[0] = 32 * MiB; break; /* the new rows will fill it */
		case 20: r.stage_member_off[0] = 64 * MiB - 65536; break; /* past the data area */
		case 21: r.stage_member_off[1] = 65536; break;
		case 22: r.new_geo.nmembers = 6; r.nadded = 2; r.stage_role[1] = 4;
			 r.stage_member_off[1] = 62 * MiB; break;
		case 23: r.stage_role[0] = RESHAPE_ROLE_NONE; r.stage_member_off[0] = 0; break;
		case 24: r.position = 12 * 65536; break;
		case 25: r.new_geo.chunk_bytes = 3 * 4096; break;
		}
		reshape_encode(&r, buf);
		if (c == 0) {
			buf[0x0c] = 2;
			memset(buf + 8, 0, 4);
			uint32_t crc = crc32c(buf, sizeof(buf));

			for (unsigned i = 0; i < 4; i++)
				buf[8 + i] = (uint8_t)(crc >> (8 * i));
		}
		memset(&back, 0x5a, sizeof(back));
		rc = reshape_decode(buf, &back, &why);
		cr_assert_eq(rc, -EPROTO, "case %u: %d", c, rc);
		cr_assert_str_eq(why, want[c].why, "case %u", c);
		cr_assert_eq(back.generation, 0x5a5a5a5a5a5a5a5aull, "case %u: untouched", c);
	}
}

Test(reshape_format, the_sample_and_its_neighbours_are_valid)
{
	struct reshape_record r = rec_sample();
	const char *why;

	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
	/* The last chunk of the staged range, and the end itself once finishing. */
	r.position = 11 * 65536;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
	r = rec_sample();
	r.phase = RESHAPE_PHASE_FINISHING;
	r.position = 3 * 64 * MiB;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
	/* Staging right above the rows the new geometry fills (48 MiB), and to the very end. */
	r = rec_sample();
	r.stage_member_off[0] = 48 * MiB;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
	r.stage_member_off[0] = 64 * MiB - 12 * 65536;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
	r.stage_member_off[0] = 48 * MiB - 65536;
	cr_assert_eq(rec_try(&r, &why), -EPROTO, "one row too low");
	/* A backward record (a shrink): the new geometry from the position to the end. */
	r = rec_sample();
	r.old_geo.nmembers = 5;
	r.new_geo.nmembers = 4;
	r.nadded = 0;
	r.direction = RESHAPE_BACKWARD;
	r.phase = RESHAPE_PHASE_COPY;
	r.stage_bytes = 0;
	r.stage_member_off[0] = 0;
	r.stage_role[0] = RESHAPE_ROLE_NONE;
	r.position = 3 * 64 * MiB - 65536;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
}

/*
 * A resume reads a staged range from the first copy alone (FORMAT.md: "whole only in the
 * first staged copy"), so a record naming only the second one names no copy it could read.
 */
Test(reshape_format, a_staged_range_without_its_first_copy_is_refused)
{
	struct reshape_record r = rec_sample();
	const char *why;

	r.new_geo.nmembers = 6;
	r.nadded = 2;
	r.stage_role[0] = RESHAPE_ROLE_NONE;
	r.stage_member_off[0] = 0;
	r.stage_role[1] = 5;
	r.stage_member_off[1] = 60 * MiB;
	cr_assert_eq(rec_try(&r, &why), -EPROTO, "accepted: %s", why);
	cr_assert_str_eq(why, "a staged range without its first staging copy");
	/* The same copy named first is a record a resume can use. */
	r.stage_role[0] = 5;
	r.stage_member_off[0] = 60 * MiB;
	r.stage_role[1] = RESHAPE_ROLE_NONE;
	r.stage_member_off[1] = 0;
	cr_assert_eq(rec_try(&r, &why), 0, "%s", why);
}

Test(reshape_format, the_newest_copy_of_the_array_wins)
{
	struct reshape_record a = rec_sample(), b = a, c = a, other = a;
	const struct reshape_record *copies[6];
	uint8_t uuid[16];

	memcpy(uuid, a.array_uuid, 16);
	a.generation = 7;
	b.generation = 9;
	c.generation = 8;
	other.generation = 100;
	other.array_uuid[3] ^= 1; /* another array's record on a reused device */
	copies[0] = &a;
	copies[1] = NULL; /* a copy that did not decode */
	copies[2] = &other;
	copies[3] = &b;
	copies[4] = &c;
	cr_assert_eq(reshape_newest(copies, 5, uuid), 3);
	cr_assert_eq(reshape_newest(copies, 3, uuid), 0);
	copies[5] = &b; /* equals: the first given */
	cr_assert_eq(reshape_newest(copies, 6, uuid), 3);
	cr_assert_eq(reshape_newest(copies + 1, 2, uuid), -1);
}

/* A superblock of the sample's new geometry, as a reshaping member would carry it. */
static struct superblock sb_reshaping(void)
{
	struct reshape_record r = rec_sample();
	struct superblock sb;

	memset(&sb, 0, sizeof(sb));
	sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
	sb.minor = GRAID_SB_VERSION_MINOR;
	memcpy(sb.array_uuid, r.array_uuid, 16);
	sb.level = 5;
	sb.chunk_bytes = 65536;
	sb.nmembers = 5;
	sb.role = 4;
	sb.block_size = 4096;
	sb.data_offset = 1 * MiB;
	sb.data_bytes = 64 * MiB;
	sb.events = 12;
	sb.flags = GRAID_SB_F_RESHAPE;
	/* libgraid's own areas: bitmap at 4 KiB, live map at 128 KiB, bad-block log at 256 KiB. */
	sb.bitmap_offset = 4096;
	sb.bitmap_bytes = 65536;
	sb.live_offset = 128 * 1024;
	sb.live_bytes = 65536;
	sb.live_region_stripes = 4;
	sb.bbl_offset = 256 * 1024;
	sb.bbl_bytes = 8192;
	return sb;
}

static int sb_try(const struct superblock *sb, struct superblock *back)
{
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(sb, buf);
	return sb_decode(buf, back);
}

Test(reshape_superblock, major_3_with_the_reshape_bit_round_trips_and_counts_as_reshaping)
{
	struct superblock sb = sb_reshaping(), back;
	struct reshape_record r = rec_sample();
	uint8_t buf[GRAID_SB_SIZE];
	const char *why = NULL;

	sb_encode(&sb, buf);
	cr_assert_eq(le32_at(buf + 0x08) & 0xffff, 3);
	cr_assert_eq(le32_at(buf + 0x14), 0x10000);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
	cr_assert(sb_reshape_recorded(&back));
	cr_assert(sb_reshape_area_free(&back));
	cr_assert_eq(reshape_matches_sb(&r, &back, &why), 0, "%s", why ? why : "");
	/* With checksums too. */
	sb.flags |= GRAID_SB_F_CHECKSUMS;
	sb_tag_area(sb.flags, sb.data_offset, sb.data_bytes, &sb.tag_offset, &sb.tag_bytes);
	cr_assert_eq(sb_try(&sb, &back), 0);
	cr_assert(sb_reshape_recorded(&back));
	/* The record must be the superblock's: its new geometry, its array. */
	back.nmembers = 4;
	cr_assert_eq(reshape_matches_sb(&r, &back, &why), -EPROTO);
	cr_assert_str_eq(why, "the record's new geometry is not the superblock's");
	back.nmembers = 5;
	back.array_uuid[0] ^= 1;
	cr_assert_eq(reshape_matches_sb(&r, &back, &why), -EPROTO);
	cr_assert_str_eq(why, "the record belongs to another array");
}

Test(reshape_superblock, bit_16_means_nothing_below_major_3)
{
	struct superblock sb = sb_reshaping(), back;

	/* Majors 1 and 2 keep the bit as a reserved one, as readers before major 3 did. */
	sb.version = GRAID_SB_VERSION_MAJOR;
	cr_assert_eq(sb_try(&sb, &back), 0);
	cr_assert_eq(back.flags, GRAID_SB_F_RESHAPE);
	cr_assert_not(sb_reshape_recorded(&back));
	sb.version = GRAID_SB_VERSION_MAJOR_INCOMPAT;
	sb.flags |= GRAID_SB_F_CHECKSUMS;
	sb_tag_area(sb.flags, sb.data_offset, sb.data_bytes, &sb.tag_offset, &sb.tag_bytes);
	cr_assert_eq(sb_try(&sb, &back), 0);
	cr_assert_not(sb_reshape_recorded(&back));
}

Test(reshape_superblock, major_3_is_refused_without_a_known_feature_or_room_for_the_record)
{
	struct superblock good = sb_reshaping(), sb, back;

	for (unsigned c = 0; c < 7; c++) {
		sb = good;
		switch (c) {
		case 0: sb.flags = GRAID_SB_F_CLEAN; break;              /* major 3 for nothing */
		case 1: sb.flags |= GRAID_SB_F_GENERATIONS; break; /* known, but no checksums */
		case 2: sb.data_offset = 516 * 1024; break;      /* the record ends past it */
		case 3: sb.bitmap_bytes = 512 * 1024;            /* a bitmap over it */
			sb.live_offset = sb.live_bytes = 0;
			sb.live_region_stripes = sb.bbl_offset = sb.bbl_bytes = 0; break;
		case 4: sb.log_offset = 512 * 1024; sb.log_bytes = 4096; break;
		case 5: sb.bbl_offset = 516 * 1024; break;       /* the log over its copy 1 */
		case 6: sb.live_offset = 384 * 1024; sb.live_bytes = 132 * 1024; break;
		}
		cr_assert_eq(sb_try(&sb, &back), -EPROTO, "case %u", c);
		/* Only the reshape makes it wrong: the same areas without one are valid. */
		sb.version = GRAID_SB_VERSION_MAJOR;
		sb.flags = 0;
		cr_assert_eq(sb_try(&sb, &back), 0, "case %u without the reshape", c);
	}
	/* Right up against it on both sides is fine. */
	sb = good;
	sb.live_offset = 384 * 1024;
	sb.live_bytes = 128 * 1024;
	sb.bbl_offset = 520 * 1024;
	cr_assert_eq(sb_try(&sb, &back), 0);
	sb = good;
	sb.data_offset = 520 * 1024;
	sb.live_offset = sb.live_bytes = sb.live_region_stripes = 0;
	sb.bbl_offset = sb.bbl_bytes = 0;
	cr_assert_eq(sb_try(&sb, &back), 0);
	/* A 1.5 array's areas at any place: valid as before, the record's area free or not. */
	sb = good;
	sb.version = GRAID_SB_VERSION_MAJOR;
	sb.flags = 0;
	sb.bitmap_bytes = 600 * 1024;
	sb.live_offset = sb.live_bytes = sb.live_region_stripes = 0;
	sb.bbl_offset = sb.bbl_bytes = 0;
	cr_assert_eq(sb_try(&sb, &back), 0);
	cr_assert_not(sb_reshape_area_free(&back));
}
