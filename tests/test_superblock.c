/* SPDX-License-Identifier: MIT */
/* The member superblock: byte layout, CRC32C, corruption detection, validation, UUIDs. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <isa-l/crc.h>

#include "format/layout.h"
#include "format/superblock.h"

/* A valid superblock with a distinct value in every field, so a swapped field shows. */
static struct superblock sb_sample(void)
{
	struct superblock sb;

	memset(&sb, 0, sizeof(sb));
	sb.version = GRAID_SB_VERSION_MAJOR;
	for (unsigned i = 0; i < 16; i++) {
		sb.array_uuid[i] = (uint8_t)(0x10 + i);
		sb.member_uuid[i] = (uint8_t)(0xe0 + i);
	}
	sb.level = 6;
	sb.chunk_bytes = 65536;
	sb.nmembers = 6;
	sb.role = 4;
	sb.block_size = 4096;
	sb.data_offset = 1u << 20;
	sb.data_bytes = 0x123450000ull;
	sb.ctime = 0x0102030405060708ull;
	sb.events = 0x1112131415161718ull;
	sb.flags = GRAID_SB_F_CLEAN;
	sb.rebuild_offset = 0x20000;
	sb.bitmap_offset = 8192;
	sb.bitmap_bytes = 65536;
	sb.log_offset = 131072;
	sb.log_bytes = 262144;
	sb.member_state[0] = GRAID_MEMBER_ACTIVE;
	sb.member_state[1] = GRAID_MEMBER_FAILED;
	sb.member_state[2] = GRAID_MEMBER_MISSING;
	sb.member_state[3] = GRAID_MEMBER_REBUILDING;
	sb.member_state[7] = GRAID_MEMBER_SPARE;
	/* Minor 1. */
	sb.minor = GRAID_SB_VERSION_MINOR; /* what decode reports of this encoder's output */
	sb.bitmap_region_stripes = 0x21;
	sb.history_events = 0x1112131415161710ull;
	sb.scrub_offset = 0x77;
	sb.owner.pid = 0x31323334;
	sb.owner.start = 0x4142434445464748ull;
	sb.owner.since = 0x5152535455565758ull;
	for (unsigned i = 0; i < 16; i++)
		sb.owner.boot_id[i] = (uint8_t)(0x60 + i);
	strcpy(sb.owner.host, "storage-host-7");
	/* Minor 3: the owner epoch and host id. */
	sb.owner.epoch = 0x0a0b0c0d0e0f1011ull;
	sb.owner.host_id = 0x8182838485868788ull;
	for (unsigned i = 0; i < 8; i++)
		sb.slot_id[i] = 0x0101010101010101ull * (i + 1);
	sb.slot_flags[3] = GRAID_SB_SLOT_CATCHUP;
	sb.left_events[2] = 0x15161714u;
	/* Minor 2: the live-data map, between the log and the data area. */
	sb.live_offset = 524288;
	sb.live_bytes = 65536;
	sb.live_region_stripes = 0x9;
	sb.nvme.flags = GRAID_SB_NVME_ID;
	sb.nvme.nsid = 0x71727374;
	for (unsigned i = 0; i < 16; i++) {
		sb.nvme.nguid[i] = (uint8_t)(0x80 + i);
		sb.nvme.uuid[i] = (uint8_t)(0xa0 + i);
	}
	for (unsigned i = 0; i < 8; i++)
		sb.nvme.eui64[i] = (uint8_t)(0x90 + i);
	strcpy(sb.nvme.subnqn, "nqn.2014-08.org.example:storage-host-7");
	/* Minor 4: the bad-block log, two 4 KiB copies after the live-data map. */
	sb.bbl_offset = 655360;
	sb.bbl_bytes = 8192;
	return sb;
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Recompute the stored CRC after a test edits the raw bytes, the way FORMAT.md says. */
static void reseal(uint8_t *buf)
{
	put_le32(buf + 0x0c, sb_checksum(buf));
}

/* Bitwise CRC32C straight from the definition: reflected polynomial 0x82F63B78. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = 0xFFFFFFFFu;

	for (size_t i = 0; i < len; i++) {
		crc ^= p[i];
		for (unsigned k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc ^ 0xFFFFFFFFu;
}

Test(crc32c, matches_the_standard_check_value)
{
	cr_assert_eq(crc32c("123456789", 9), 0xE3069283u);
	cr_assert_eq(crc32c_bitwise((const uint8_t *)"123456789", 9), 0xE3069283u);
	cr_assert_eq(crc32c("", 0), 0);
}

Test(crc32c, is_isal_crc32_iscsi_seeded_and_inverted_with_all_ones)
{
	unsigned char msg[] = "123456789";

	/* The convention FORMAT.md tells other implementations about. */
	cr_assert_eq(crc32_iscsi(msg, 9, 0xFFFFFFFFu) ^ 0xFFFFFFFFu, 0xE3069283u);
}

Test(superblock, checksum_is_crc32c_of_the_block_with_the_crc_field_zeroed)
{
	uint8_t buf[GRAID_SB_SIZE], copy[GRAID_SB_SIZE];

	srand(7);
	for (unsigned round = 0; round < 8; round++) {
		for (size_t i = 0; i < sizeof(buf); i++)
			buf[i] = (uint8_t)rand();
		memcpy(copy, buf, sizeof(buf));
		memset(copy + 0x0c, 0, 4);
		cr_assert_eq(sb_checksum(buf), crc32c_bitwise(copy, sizeof(copy)));
		cr_assert_eq(sb_checksum(buf), crc32c(copy, sizeof(copy)));
	}
}

Test(superblock, every_field_survives_a_round_trip)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	memset(&back, 0x5a, sizeof(back));
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
	cr_assert_eq(back.version, 1);
	cr_assert_eq(back.level, 6);
	cr_assert_eq(back.events, 0x1112131415161718ull);
	cr_assert_eq(back.member_state[7], GRAID_MEMBER_SPARE);
}

Test(superblock, fields_sit_at_the_documented_offsets_in_little_endian)
{
	struct superblock sb = sb_sample();
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	cr_assert_eq(memcmp(buf, "GRAID-SB", 8), 0);
	cr_assert_eq(buf[0x08], 1);
	cr_assert_eq(buf[0x09], 0);
	cr_assert_eq(buf[0x0a] | buf[0x0b] << 8, GRAID_SB_VERSION_MINOR);
	cr_assert_eq(get_le32(buf + 0x0c), sb_checksum(buf));
	cr_assert_eq(get_le32(buf + 0x10), 4096);
	cr_assert_eq(get_le32(buf + 0x14), GRAID_SB_F_CLEAN);
	cr_assert_eq(memcmp(buf + 0x18, sb.array_uuid, 16), 0);
	cr_assert_eq(memcmp(buf + 0x28, sb.member_uuid, 16), 0);
	cr_assert_eq(get_le32(buf + 0x38), 6);
	cr_assert_eq(get_le32(buf + 0x3c), 65536);
	cr_assert_eq(get_le32(buf + 0x40), 6);
	cr_assert_eq(get_le32(buf + 0x44), 4);
	cr_assert_eq(get_le32(buf + 0x48), 4096);
	cr_assert_eq(get_le32(buf + 0x4c), 655360 / 4096); /* minor 4: the bad-block log's block */
	cr_assert_eq(get_le64(buf + 0x50), 1u << 20);
	cr_assert_eq(get_le64(buf + 0x58), 0x123450000ull);
	cr_assert_eq(get_le64(buf + 0x60), 0x0102030405060708ull);
	cr_assert_eq(buf[0x60], 0x08, "little-endian: low byte first");
	cr_assert_eq(get_le64(buf + 0x68), 0x1112131415161718ull);
	cr_assert_eq(get_le64(buf + 0x70), 0x20000);
	cr_assert_eq(get_le64(buf + 0x78), 8192);
	cr_assert_eq(get_le64(buf + 0x80), 65536);
	cr_assert_eq(get_le64(buf + 0x88), 131072);
	cr_assert_eq(get_le64(buf + 0x90), 262144);
	/* Minor 1. */
	cr_assert_eq(get_le64(buf + 0x98), 0x21);
	cr_assert_eq(get_le64(buf + 0xa0), 0x1112131415161710ull);
	cr_assert_eq(get_le64(buf + 0xa8), 0x77);
	cr_assert_eq(get_le32(buf + 0xb0), 0x31323334);
	cr_assert_eq(get_le32(buf + 0xb4), 2);            /* minor 4: its length in blocks */
	cr_assert_eq(get_le64(buf + 0xb8), 0x4142434445464748ull);
	cr_assert_eq(get_le64(buf + 0xc0), 0x5152535455565758ull);
	cr_assert_eq(memcmp(buf + 0xc8, sb.owner.boot_id, 16), 0);
	/* Minor 2. */
	cr_assert_eq(get_le64(buf + 0xd8), 524288);
	cr_assert_eq(get_le64(buf + 0xe0), 65536);
	cr_assert_eq(get_le64(buf + 0xe8), 0x9);
	/* Minor 3. */
	cr_assert_eq(get_le64(buf + 0xf0), 0x0a0b0c0d0e0f1011ull);
	cr_assert_eq(get_le64(buf + 0xf8), 0x8182838485868788ull);
	cr_assert_eq(memcmp(buf + 0x100, sb.member_state, 256), 0);
	for (unsigned i = 0; i < 256; i++)
		cr_assert_eq(get_le64(buf + 0x200 + 8 * i), sb.slot_id[i], "slot_id[%u]", i);
	cr_assert_eq(memcmp(buf + 0xa00, sb.slot_flags, 256), 0);
	cr_assert_eq(buf[0xa03], GRAID_SB_SLOT_CATCHUP);
	cr_assert_str_eq((const char *)buf + 0xb00, "storage-host-7");
	cr_assert_eq(get_le32(buf + 0xb40 + 4 * 2), 0x15161714u);
	cr_assert_eq(memcmp(buf + 0xf40, sb.nvme.nguid, 16), 0);
	cr_assert_eq(memcmp(buf + 0xf50, sb.nvme.eui64, 8), 0);
	cr_assert_eq(get_le32(buf + 0xf58), 0x71727374u);
	cr_assert_eq(get_le32(buf + 0xf5c), GRAID_SB_NVME_ID);
	cr_assert_eq(memcmp(buf + 0xf60, sb.nvme.uuid, 16), 0);
	cr_assert_str_eq((const char *)buf + 0xf70, "nqn.2014-08.org.example:storage-host-7");
	for (unsigned i = 0xf70 + 39; i < GRAID_SB_SIZE; i++)
		cr_assert_eq(buf[i], 0, "NQN padding byte %#x", i);
}

Test(superblock, every_single_bit_flip_is_detected)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	for (unsigned bit = 0; bit < GRAID_SB_SIZE * 8; bit++) {
		int err;

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		err = sb_decode(buf, &back);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		/* A flip in the magic makes it "not ours"; anywhere else the CRC catches it. */
		cr_assert_eq(err, bit < 64 ? -EINVAL : -EBADMSG, "bit %u: %d", bit, err);
	}
	cr_assert_eq(sb_decode(buf, &back), 0);
}

Test(superblock, a_block_without_the_magic_is_not_a_member)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	memset(buf, 0, sizeof(buf));
	cr_assert_eq(sb_decode(buf, &back), -EINVAL);
	memset(buf, 0xff, sizeof(buf));
	cr_assert_eq(sb_decode(buf, &back), -EINVAL);
	sb_encode(&sb, buf);
	memcpy(buf, "GRAID-SC", 8);
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), -EINVAL);
	cr_assert_eq(sb_decode(NULL, &back), -EINVAL);
	cr_assert_eq(sb_decode(buf, NULL), -EINVAL);
}

Test(superblock, a_wrong_crc_is_corruption)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	put_le32(buf + 0x0c, get_le32(buf + 0x0c) + 1);
	cr_assert_eq(sb_decode(buf, &back), -EBADMSG);
	put_le32(buf + 0x0c, 0);
	cr_assert_eq(sb_decode(buf, &back), -EBADMSG);
}

Test(superblock, decode_reads_unaligned_buffers_and_leaves_sb_alone_on_failure)
{
	struct superblock sb = sb_sample(), back, before;
	static uint8_t raw[GRAID_SB_SIZE + 3];

	sb_encode(&sb, raw + 3);
	cr_assert_eq(sb_decode(raw + 3, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);

	memset(&back, 0x77, sizeof(back));
	before = back;
	raw[3 + 100] ^= 1;
	cr_assert_eq(sb_decode(raw + 3, &back), -EBADMSG);
	cr_assert_eq(memcmp(&back, &before, sizeof(back)), 0);
}

/* One field made nonsensical per case; the CRC is right, so only validation can refuse. */
static void break_field(struct superblock *sb, unsigned which)
{
	switch (which) {
	case 0: sb->level = 4; break;
	case 1: sb->level = -6; break;
	case 2: sb->nmembers = 0; break;
	case 3: sb->nmembers = 257; break;
	case 4: sb->nmembers = 3; sb->role = 1; break;        /* RAID-6 needs 4 */
	case 5: sb->role = 6; break;                          /* == nmembers, not a spare */
	case 6: sb->role = 300; break;
	case 7: sb->role = 8; break;                          /* slot 8 is empty, not spare */
	case 8: sb->chunk_bytes = 65536 + 4096; break;
	case 9: sb->chunk_bytes = 2048; break;
	case 10: sb->chunk_bytes = 2u << 20; break;
	case 11: sb->chunk_bytes = 0; break;
	case 12: sb->data_offset = (1u << 20) + 512; break;
	case 13: sb->data_offset = 0; break;                  /* overlaps the superblock */
	case 14: sb->data_offset = UINT64_MAX - 4095; break;  /* offset + bytes overflows */
	case 15: sb->data_bytes = 0x123450000ull + 4096; break;  /* not whole chunks */
	case 16: sb->data_bytes = 4096; break;                /* less than a chunk */
	case 17: sb->block_size = 1024; break;
	case 18: sb->block_size = 0; break;
	case 19: sb->rebuild_offset = sb->data_bytes + 1; break;
	case 20: sb->bitmap_offset = 0; break;                /* overlaps the superblock */
	case 21: sb->bitmap_offset = 8192 + 512; break;
	case 22: sb->bitmap_bytes = 1000; break;
	case 23: sb->log_offset = (1u << 20) - 131072; break;  /* runs into the data area */
	case 24: sb->log_offset = 32768; break;               /* overlaps the bitmap */
	case 25: sb->log_bytes = 0; break;                    /* offset without a length */
	case 26: sb->bitmap_offset = UINT64_MAX - 4095; break;
	case 27: sb->member_state[0] = 5; break;
	case 28: sb->member_state[2] = GRAID_MEMBER_SPARE; break;  /* a layout slot */
	case 29: sb->member_state[200] = GRAID_MEMBER_REBUILDING; break;
	case 30: sb->member_state[255] = 0xff; break;
	case 31: sb->version = 2; break;
	case 32: sb->version = 0; break;
	case 33: sb->level = 1; sb->nmembers = 1; sb->role = 0; break;
	case 34: sb->live_region_stripes = 0; break;          /* a map without a region size */
	case 35: sb->live_bytes = 0; sb->live_offset = 0; break; /* a region size, no map */
	case 36: sb->live_offset = 196608; break;             /* overlaps the log */
	case 37: sb->live_offset = 49152; break;              /* overlaps the bitmap */
	case 38: sb->live_offset = (1u << 20) - 4096; break;  /* runs into the data area */
	case 39: sb->live_bytes = 1000; break;
	case 40: sb->bbl_bytes = 4096; break;                 /* room for one copy, not two */
	case 41: sb->bbl_offset = 528384; break;              /* overlaps the live-data map */
	case 42: sb->bbl_offset = (1u << 20) - 4096; break;   /* runs into the data area */
	case 43: sb->bbl_bytes = 0; break;                    /* an offset without a length */
	case 44: sb->bbl_offset = 0; break;                   /* overlaps the superblock */
	}
}

#define BAD_FIELD_CASES 45

Test(superblock, nonsensical_fields_are_a_protocol_error)
{
	uint8_t buf[GRAID_SB_SIZE];

	for (unsigned i = 0; i < BAD_FIELD_CASES; i++) {
		struct superblock sb = sb_sample(), back;

		break_field(&sb, i);
		sb_encode(&sb, buf);
		cr_assert_eq(sb_decode(buf, &back), -EPROTO, "case %u", i);
	}
}

Test(superblock, every_level_and_both_block_sizes_are_accepted)
{
	static const struct { int level; uint32_t n; } ok[] = {
		{ 0, 2 }, { 1, 2 }, { 5, 3 }, { 6, 4 }, { 10, 2 }, { 10, 3 }, { 6, 256 },
	};
	uint8_t buf[GRAID_SB_SIZE];

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		for (uint32_t bs = 512; bs <= 4096; bs *= 8) {
			struct superblock sb = sb_sample(), back;

			sb.level = ok[i].level;
			sb.nmembers = ok[i].n;
			sb.role = ok[i].n - 1;
			sb.block_size = bs;
			memset(sb.member_state, 0, sizeof(sb.member_state));
			sb_encode(&sb, buf);
			cr_assert_eq(sb_decode(buf, &back), 0, "level %d n %u", sb.level,
				     sb.nmembers);
			cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
		}
	}
}

Test(superblock, a_hot_spare_takes_a_slot_past_the_layout)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb.role = 7;  /* member_state[7] is SPARE in the sample */
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(back.role, 7);
}

Test(superblock, optional_areas_may_be_absent_and_unknown_flags_are_kept)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb.bitmap_offset = sb.bitmap_bytes = sb.bitmap_region_stripes = 0;
	sb.log_offset = sb.log_bytes = 0;
	sb.rebuild_offset = 0;
	sb.flags = 0x80000001u;
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(back.flags, 0x80000001u);
	cr_assert_eq(back.bitmap_bytes, 0);
}

Test(superblock, a_newer_minor_version_is_read_and_its_additions_ignored)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	buf[0x0a] = 7;
	buf[0x0b] = 1;           /* minor 263 */
	buf[GRAID_SB_SIZE - 1] = 0xdd; /* the NQN's terminator, which readers force */
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(back.minor, 263);
	sb.minor = 263;
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
}

Test(superblock, an_unknown_major_version_or_size_is_refused)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	buf[0x08] = 2;
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), -EPROTO);
	buf[0x08] = 1;
	buf[0x09] = 1;           /* major 257 */
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), -EPROTO);
	buf[0x09] = 0;
	put_le32(buf + 0x10, 8192);  /* never trusted as a length */
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), -EPROTO);
	put_le32(buf + 0x10, 4096);  /* restored: valid again */
	reseal(buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
}

Test(uuid, generated_uuids_are_version_4_and_differ)
{
	uint8_t a[16], b[16];

	sb_uuid_generate(a);
	sb_uuid_generate(b);
	cr_assert_neq(memcmp(a, b, 16), 0);
	cr_assert_eq(a[6] >> 4, 4);
	cr_assert_eq(a[8] >> 6, 2);
	cr_assert_eq(b[6] >> 4, 4);
	cr_assert_eq(b[8] >> 6, 2);
}

Test(uuid, format_and_parse_are_inverses)
{
	static const uint8_t u[16] = { 0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3,
				       0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00 };
	char s[37];
	uint8_t back[16];

	sb_uuid_format(u, s);
	cr_assert_str_eq(s, "123e4567-e89b-12d3-a456-426614174000");
	cr_assert_eq(sb_uuid_parse(s, back), 0);
	cr_assert_eq(memcmp(u, back, 16), 0);
	cr_assert_eq(sb_uuid_parse("123E4567-E89B-12D3-A456-426614174000", back), 0);
	cr_assert_eq(memcmp(u, back, 16), 0);
}

Test(uuid, parse_rejects_anything_else)
{
	static const char *const bad[] = {
		"", "123e4567", "123e4567-e89b-12d3-a456-42661417400",
		"123e4567-e89b-12d3-a456-4266141740000", "123e4567-e89b-12d3-a456_426614174000",
		"123e4567e89b-12d3-a456-4266141740000", "123g4567-e89b-12d3-a456-426614174000",
		"{23e4567-e89b-12d3-a456-426614174000",
	};
	uint8_t u[16];

	memset(u, 0x11, sizeof(u));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(sb_uuid_parse(bad[i], u), -EINVAL, "\"%s\"", bad[i]);
	cr_assert_eq(u[0], 0x11);
	cr_assert_eq(sb_uuid_parse(NULL, u), -EINVAL);
}

/* Format 1.5: CHECKSUMS comes with major 2 and its own rules; the tag area is derived. */
Test(superblock, checksums_round_trip_as_major_2_with_the_tag_area_derived)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb.version = GRAID_SB_VERSION_MAJOR_INCOMPAT;
	sb.flags |= GRAID_SB_F_CHECKSUMS;
	sb.tag_offset = sb.data_offset + sb.data_bytes;
	sb.tag_bytes = (sb.data_bytes / 4096 + 511) / 512 * 4096;
	sb_encode(&sb, buf);
	cr_assert_eq(get_le32(buf + 0x08) & 0xffff, 2);
	cr_assert_eq(get_le32(buf + 0x14), GRAID_SB_F_CLEAN | GRAID_SB_F_CHECKSUMS);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
	cr_assert_eq(sb_member_end(&back), back.tag_offset + back.tag_bytes);
}

/* Format 1.6: GENERATIONS comes with major 3 (bit 17), and only with CHECKSUMS. */
Test(superblock, generations_round_trip_as_major_3_only_with_checksums)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
	sb.flags |= GRAID_SB_F_CHECKSUMS | GRAID_SB_F_GENERATIONS;
	sb_tag_area(sb.flags, sb.data_offset, sb.data_bytes, &sb.tag_offset, &sb.tag_bytes);
	sb_encode(&sb, buf);
	cr_assert_eq(get_le32(buf + 0x08) & 0xffff, 3);
	cr_assert_eq(get_le32(buf + 0x14),
		     GRAID_SB_F_CLEAN | GRAID_SB_F_CHECKSUMS | 0x00020000u, "bit 17");
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
	cr_assert(sb_generations(&back));
	/* Without CHECKSUMS there are no tags to keep generations in: refused. */
	sb.flags &= ~GRAID_SB_F_CHECKSUMS;
	sb.tag_offset = sb.tag_bytes = 0;
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), -EPROTO);
	/* In major 2 bit 17 is a reserved bit: kept, meaning nothing. */
	sb.version = GRAID_SB_VERSION_MAJOR_INCOMPAT;
	sb.flags |= GRAID_SB_F_CHECKSUMS;
	sb_tag_area(sb.flags, sb.data_offset, sb.data_bytes, &sb.tag_offset, &sb.tag_bytes);
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert(back.flags & GRAID_SB_F_GENERATIONS);
	cr_assert_not(sb_generations(&back));
}

/* Q_LAST (bit 18) is the RAID-6's layout id 1 in major 3; any other level is refused. */
Test(superblock, q_last_round_trips_as_major_3_on_a_raid6_only)
{
	struct superblock sb = sb_sample(), back;
	uint8_t buf[GRAID_SB_SIZE];

	sb.level = 6;
	sb.nmembers = 5;
	sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
	sb.flags |= GRAID_SB_F_Q_LAST;
	sb_encode(&sb, buf);
	cr_assert_eq(get_le32(buf + 0x14), GRAID_SB_F_CLEAN | 0x00040000u, "bit 18");
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(memcmp(&sb, &back, sizeof(sb)), 0);
	cr_assert_eq(sb_layout_id(&back), LAYOUT_Q_LAST);
	sb.level = 5;
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), -EPROTO, "Q-last on a RAID-5");
	/* In major 1 bit 18 is a reserved bit: kept, meaning nothing (the rotating layout). */
	sb.level = 6;
	sb.version = GRAID_SB_VERSION_MAJOR;
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert(back.flags & GRAID_SB_F_Q_LAST);
	cr_assert_eq(sb_layout_id(&back), LAYOUT_ROTATING);
}

Test(superblock, checksums_with_a_wrong_major_level_or_block_size_are_refused)
{
	struct superblock good = sb_sample(), sb, back;
	uint8_t buf[GRAID_SB_SIZE];

	good.version = GRAID_SB_VERSION_MAJOR_INCOMPAT;
	good.flags |= GRAID_SB_F_CHECKSUMS;
	for (unsigned c = 0; c < 5; c++) {
		sb = good;
		switch (c) {
		case 0: sb.version = GRAID_SB_VERSION_MAJOR; break;     /* an old major claims it */
		case 1: sb.flags &= ~GRAID_SB_F_CHECKSUMS; break;       /* major 2 for nothing */
		case 2: sb.level = 0; sb.nmembers = 6; sb.role = 4; break; /* nothing to heal from */
		case 3: sb.block_size = 512; break;
		case 4: sb.data_offset = UINT64_MAX - sb.data_bytes - 4095; break; /* tags past 2^64 */
		}
		sb_encode(&sb, buf);
		cr_assert_eq(sb_decode(buf, &back), -EPROTO, "case %u", c);
	}
	/* Without the flag nothing is derived: a 1.x superblock as before. */
	sb = sb_sample();
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &back), 0);
	cr_assert_eq(back.tag_offset, 0);
	cr_assert_eq(back.tag_bytes, 0);
	cr_assert_eq(sb_member_end(&back), back.data_offset + back.data_bytes);
}
