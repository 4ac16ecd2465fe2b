/* SPDX-License-Identifier: MIT */
/* The checksums' tag format: the CRC convention, the key, the 8-byte form, absent tags. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "format/superblock.h"
#include "format/tag_format.h"

static const uint8_t uuid_a[16] = { 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x46, 0x77,
				     0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff };

Test(tag_format, the_crc_is_standard_crc32c_by_its_check_value)
{
	uint32_t reg = tag_crc_feed(0xFFFFFFFFu, "123456789", 9);

	cr_assert_eq(tag_crc_end(reg), 0xE3069283u);
	/* In pieces, the same. */
	reg = tag_crc_feed(0xFFFFFFFFu, "1234", 4);
	reg = tag_crc_feed(reg, "56789", 5);
	cr_assert_eq(tag_crc_end(reg), 0xE3069283u);
}

Test(tag_format, the_key_is_uuid_role_zero_and_block_little_endian)
{
	uint8_t key[TAG_KEY_BYTES], want[TAG_KEY_BYTES] = { 0 };

	memset(key, 0xee, sizeof(key));
	tag_key(uuid_a, 0x01020304u, 0x1122334455667788ull, key);
	memcpy(want, uuid_a, 16);
	want[16] = 0x04; want[17] = 0x03; want[18] = 0x02; want[19] = 0x01;
	want[24] = 0x88; want[25] = 0x77; want[26] = 0x66; want[27] = 0x55;
	want[28] = 0x44; want[29] = 0x33; want[30] = 0x22; want[31] = 0x11;
	cr_assert_eq(memcmp(key, want, sizeof(key)), 0);
}

/* The CRC over key then data, computed the plain way: what a second reader would write. */
static uint32_t crc_plain(const uint8_t *uuid, uint32_t role, uint64_t block, const uint8_t *data)
{
	static uint8_t buf[TAG_KEY_BYTES + TAG_DATA_BLOCK];

	tag_key(uuid, role, block, buf);
	memcpy(buf + TAG_KEY_BYTES, data, TAG_DATA_BLOCK);
	return crc32c(buf, sizeof(buf));
}

Test(tag_format, the_tag_crc_covers_key_then_data_and_changes_with_each)
{
	static uint8_t data[TAG_DATA_BLOCK];
	uint8_t uuid_b[16];
	uint32_t base;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	base = tag_crc(uuid_a, 2, 1000, data);
	cr_assert_eq(base, crc_plain(uuid_a, 2, 1000, data));
	cr_assert_neq(base, tag_crc(uuid_a, 3, 1000, data), "role is in the key");
	cr_assert_neq(base, tag_crc(uuid_a, 2, 1001, data), "block is in the key");
	cr_assert_neq(base, tag_crc(uuid_a, 2, 1000ull | 1ull << 40, data), "all 64 bits");
	memcpy(uuid_b, uuid_a, 16);
	uuid_b[15] ^= 1;
	cr_assert_neq(base, tag_crc(uuid_b, 2, 1000, data), "uuid is in the key");
	data[4095] ^= 0x80;
	cr_assert_neq(base, tag_crc(uuid_a, 2, 1000, data), "every data bit counts");
}

/*
 * The store's two-step key (the role's register after uuid and role, then the block number
 * without ISA-L) against the plain CRC of the whole 32-byte key, for every byte of the block
 * number in play: a wrong table row or byte order shows in one of these.
 */
Test(tag_format, the_two_step_key_crc_equals_the_plain_one)
{
	static uint8_t data[TAG_DATA_BLOCK];
	const uint64_t blocks[] = { 0, 1, 511, 512, 1000, 0xFFull << 8, 0xA5ull << 24,
				    0x5Aull << 32, 0xC3ull << 48, 0x80ull << 56, ~0ull,
				    0x1122334455667788ull };

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13 + 1);
	for (uint32_t role = 0; role < 3; role++) {
		const uint32_t prefix = tag_crc_prefix(uuid_a, role);

		for (unsigned k = 0; k < sizeof(blocks) / sizeof(blocks[0]); k++) {
			uint64_t b = blocks[k];
			uint32_t two = tag_crc_end(tag_crc_feed(tag_crc_begin_at(prefix, b), data,
								  sizeof(data)));

			cr_assert_eq(tag_crc_begin_at(prefix, b), tag_crc_begin(uuid_a, role, b),
				     "role %u block 0x%llx", role, (unsigned long long)b);
			cr_assert_eq(two, crc_plain(uuid_a, role, b, data), "role %u block 0x%llx",
				     role, (unsigned long long)b);
		}
		/* Every single bit of the block number, one at a time. */
		for (unsigned bit = 0; bit < 64; bit++)
			cr_assert_eq(tag_crc_begin_at(prefix, 1ull << bit),
				     tag_crc_begin(uuid_a, role, 1ull << bit), "bit %u", bit);
	}
	/* The worked example of docs/FORMAT.md, through the two steps. */
	memset(data, 0, sizeof(data));
	cr_assert_eq(tag_crc_end(tag_crc_feed(tag_crc_begin_at(tag_crc_prefix(uuid_a, 2), 1000),
					      data, sizeof(data))), 0x4BCAE436u);
}

Test(tag_format, a_tag_is_crc_then_meta_little_endian_with_the_valid_bit)
{
	uint8_t b[TAG_BYTES];
	const uint8_t want[TAG_BYTES] = { 0x83, 0x92, 0x06, 0xe3, 0x00, 0x00, 0x00, 0x80 };
	tag_t t = tag_make(0xE3069283u);

	tag_encode(t, b);
	cr_assert_eq(memcmp(b, want, sizeof(b)), 0);
	cr_assert_eq(tag_decode(b), t);
	cr_assert(tag_valid(t));
	cr_assert_eq(tag_crc_of(t), 0xE3069283u);
	cr_assert(tag_holds(t, 0xE3069283u));
	cr_assert_not(tag_holds(t, 0xE3069282u));
	/* A generation in bits 0-30 of meta is ignored by readers. */
	b[4] = 0x05;
	cr_assert(tag_valid(tag_decode(b)));
	cr_assert(tag_holds(tag_decode(b), 0xE3069283u));
}

Test(tag_format, a_tag_without_the_valid_bit_is_absent_and_accepts_anything)
{
	uint8_t b[TAG_BYTES] = { 0x83, 0x92, 0x06, 0xe3, 0xff, 0xff, 0xff, 0x7f };

	cr_assert_not(tag_valid(tag_decode(b)));
	cr_assert(tag_holds(tag_decode(b), 0x12345678u));
	cr_assert(tag_holds(0, 0));
	cr_assert_not(tag_valid(0));
}

Test(tag_format, the_tag_area_holds_512_tags_per_block_rounded_up)
{
	cr_assert_eq(tag_area_bytes(0), 0);
	cr_assert_eq(tag_area_bytes(4096), 4096);
	cr_assert_eq(tag_area_bytes(512ull * 4096), 4096);
	cr_assert_eq(tag_area_bytes(513ull * 4096), 8192);
	cr_assert_eq(tag_area_bytes(1ull << 40), (1ull << 40) / 512);
	cr_assert_eq(tag_block_index(511), 0);
	cr_assert_eq(tag_block_index(512), 1);
	cr_assert_eq(tag_slot(513), 1);
}

/* docs/FORMAT.md's worked example, byte for byte. */
Test(tag_format, the_worked_example_of_format_md_holds)
{
	static const uint8_t zero[TAG_DATA_BLOCK];
	const uint8_t want[TAG_BYTES] = { 0x36, 0xe4, 0xca, 0x4b, 0x00, 0x00, 0x00, 0x80 };
	uint8_t b[TAG_BYTES];
	uint64_t tag_offset, tag_bytes;

	cr_assert_eq(tag_crc(uuid_a, 2, 1000, zero), 0x4BCAE436u);
	tag_encode(tag_make(tag_crc(uuid_a, 2, 1000, zero)), b);
	cr_assert_eq(memcmp(b, want, sizeof(b)), 0);
	sb_tag_area(GRAID_SB_F_CHECKSUMS, 1u << 20, 16u << 20, &tag_offset, &tag_bytes);
	cr_assert_eq(tag_offset, 17u << 20);
	cr_assert_eq(tag_bytes, 32768);
	cr_assert_eq(tag_offset + tag_block_index(1000) * TAG_BLOCK_BYTES + tag_slot(1000) * TAG_BYTES,
		     0x1101f40);
}
