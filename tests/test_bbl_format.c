/* SPDX-License-Identifier: MIT */
/* The bad-block log's on-disk copy: byte layout, round trip, and every way a copy is refused. */
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "format/bbl_format.h"
#include "format/superblock.h"

static struct bbl_image bbl_sample(void)
{
	struct bbl_image img;

	memset(&img, 0, sizeof(img));
	img.seq = 0x0102030405060708ull;
	for (unsigned i = 0; i < 16; i++)
		img.member_uuid[i] = (uint8_t)(0xc0 + i);
	img.n = 3;
	img.r[0] = (struct bbl_range){ .start = 7, .count = 1, .flags = BBL_F_LOST };
	img.r[1] = (struct bbl_range){ .start = 9, .count = 16, .flags = BBL_F_UNREADABLE };
	img.r[2] = (struct bbl_range){ .start = 0x123456789ull, .count = 2, .flags = 3 };
	return img;
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
	return (uint32_t)le64_at(p) & 0xffffffffu;
}

static void reseal(uint8_t *buf)
{
	uint32_t crc;

	memset(buf + 8, 0, 4);
	crc = crc32c(buf, BBL_COPY_BYTES);
	for (unsigned i = 0; i < 4; i++)
		buf[8 + i] = (uint8_t)(crc >> (8 * i));
}

Test(bbl_format, fields_sit_at_the_documented_offsets)
{
	struct bbl_image img = bbl_sample();
	uint8_t buf[BBL_COPY_BYTES], copy[BBL_COPY_BYTES];

	bbl_encode(&img, buf);
	cr_assert_eq(memcmp(buf, "GRAIDBBL", 8), 0);
	memcpy(copy, buf, sizeof(copy));
	memset(copy + 8, 0, 4);
	cr_assert_eq(le32_at(buf + 0x08), crc32c(copy, sizeof(copy)));
	cr_assert_eq(le32_at(buf + 0x0c), 3);
	cr_assert_eq(le64_at(buf + 0x10), 0x0102030405060708ull);
	cr_assert_eq(memcmp(buf + 0x18, img.member_uuid, 16), 0);
	for (unsigned i = 0x28; i < 0x40; i++)
		cr_assert_eq(buf[i], 0, "reserved byte %#x", i);
	cr_assert_eq(le64_at(buf + 0x40 + 16 * 2), 0x123456789ull);
	cr_assert_eq(le32_at(buf + 0x48 + 16 * 1), 16);
	cr_assert_eq(le32_at(buf + 0x4c + 16 * 0), BBL_F_LOST);
	for (unsigned i = 0x40 + 16 * 3; i < BBL_COPY_BYTES; i++)
		cr_assert_eq(buf[i], 0, "unused range byte %#x", i);
}

Test(bbl_format, a_copy_decodes_to_what_was_encoded)
{
	struct bbl_image img = bbl_sample(), back;
	uint8_t buf[BBL_COPY_BYTES];

	bbl_encode(&img, buf);
	cr_assert(bbl_decode(buf, &back));
	cr_assert_eq(memcmp(&img, &back, sizeof(img)), 0);
}

Test(bbl_format, a_full_log_round_trips)
{
	struct bbl_image img, back;
	uint8_t buf[BBL_COPY_BYTES];

	memset(&img, 0, sizeof(img));
	img.seq = 1;
	img.n = BBL_MAX_RANGES;
	for (unsigned i = 0; i < BBL_MAX_RANGES; i++)
		img.r[i] = (struct bbl_range){ .start = 2ull * i, .count = 1, .flags = BBL_F_LOST };
	bbl_encode(&img, buf);
	cr_assert(bbl_decode(buf, &back));
	cr_assert_eq(memcmp(&img, &back, sizeof(img)), 0);
}

/* One thing wrong per case, the CRC made right again: only validation can refuse. */
Test(bbl_format, a_copy_that_breaks_a_rule_is_refused)
{
	for (unsigned which = 0; which < 7; which++) {
		struct bbl_image img = bbl_sample(), back;
		uint8_t buf[BBL_COPY_BYTES];

		bbl_encode(&img, buf);
		switch (which) {
		case 0: buf[0] = 'X'; break;                        /* no magic */
		case 1: buf[0x0c] = (uint8_t)(BBL_MAX_RANGES + 1); break; /* count too large */
		case 2: memset(buf + 0x10, 0, 8); break;            /* sequence 0 */
		case 3: memset(buf + 0x48, 0, 4); break;            /* an empty range */
		case 4: buf[0x40 + 16] = 7; break;                  /* overlaps the one before */
		case 5: buf[0x40 + 16] = 3; break;                  /* out of order */
		case 6: buf[0x40 + 16 * 2 + 7] = 0xff; break;       /* past 2^52 units */
		}
		if (which)
			reseal(buf);
		cr_assert_not(bbl_decode(buf, &back), "case %u", which);
	}
}

Test(bbl_format, every_bit_flip_is_caught_by_the_crc)
{
	struct bbl_image img = bbl_sample(), back;
	uint8_t buf[BBL_COPY_BYTES];

	bbl_encode(&img, buf);
	for (unsigned bit = 64; bit < BBL_COPY_BYTES * 8; bit += 7) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		cr_assert_not(bbl_decode(buf, &back), "bit %u", bit);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	cr_assert(bbl_decode(buf, &back));
}
