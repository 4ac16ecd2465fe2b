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

/*
 * Generations (docs/FORMAT.md, "Generations"): the worked example's tag with generation 5,
 * and with a parity record of generations 1, 2, 3 (S = 6, W = 1 + 4 + 9 = 14).
 */
Test(tag_format, a_generation_and_a_record_sit_in_meta_bits_0_to_30)
{
	static const uint8_t zero[TAG_DATA_BLOCK];
	const uint8_t want_gen[TAG_BYTES] = { 0x36, 0xe4, 0xca, 0x4b, 0x05, 0x00, 0x00, 0x80 };
	const uint8_t want_rec[TAG_BYTES] = { 0x36, 0xe4, 0xca, 0x4b, 0x06, 0x00, 0x07, 0x80 };
	const uint32_t g[3] = { 1, 2, 3 };
	uint32_t crc = tag_crc(uuid_a, 2, 1000, zero);
	struct tag_rec r = tag_rec_make(g, 3);
	uint8_t b[TAG_BYTES];

	tag_encode(tag_make_meta(crc, 5), b);
	cr_assert_eq(memcmp(b, want_gen, sizeof(b)), 0);
	cr_assert_eq(tag_gen(tag_decode(b)), 5);
	cr_assert(tag_holds(tag_decode(b), crc), "readers check the CRC, not the generation");
	cr_assert_eq(r.s, 6);
	cr_assert_eq(r.w, 14);
	cr_assert_eq(tag_rec_encode(r), 6u | 14u << 15);
	tag_encode(tag_make_meta(crc, tag_rec_encode(r)), b);
	cr_assert_eq(memcmp(b, want_rec, sizeof(b)), 0);
	cr_assert(tag_rec_eq(tag_rec_of_tag(tag_decode(b)), r));
	/* Bit 31 of a meta word given is never taken for the generation: the tag stays VALID. */
	cr_assert_eq(tag_make_meta(crc, 0x80000005u), tag_make_meta(crc, 5));
	cr_assert_eq(tag_make_meta(crc, 0), tag_make(crc));
	/* The largest record fits 15 + 15 bits and leaves bit 30 zero. */
	r.s = r.w = TAG_GEN_PRIME - 1;
	cr_assert_eq(tag_rec_encode(r) & ~0x3fffffffu, 0);
	cr_assert(tag_rec_eq(tag_rec_of_tag(tag_make_meta(0, tag_rec_encode(r))), r));
}

Test(tag_format, absent_and_format_1_5_tags_are_generation_0_and_consistent)
{
	const uint32_t zero_g[14] = { 0 };
	struct tag_rec_where w;

	cr_assert_eq(tag_gen(tag_make(0x12345678u)), 0);
	cr_assert_eq(tag_gen(0), 0);
	/* An absent tag's meta bits are not read, whatever they hold. */
	cr_assert_eq(tag_gen((uint64_t)0x7fffffffu << 32 | 0x1234u), 0);
	cr_assert(tag_rec_eq(tag_rec_of_tag(0), (struct tag_rec){ 0, 0 }));
	cr_assert(tag_rec_eq(tag_rec_of_tag(tag_make(0xE3069283u)), (struct tag_rec){ 0, 0 }));
	for (unsigned k = 1; k <= 14; k++) {
		w = tag_rec_locate(tag_rec_of_tag(tag_make(7)), zero_g, k);
		cr_assert_eq(w.verdict, TAG_REC_CONSISTENT, "k %u", k);
		cr_assert_eq(w.ds, 0);
		cr_assert_eq(w.dw, 0);
	}
	cr_assert_eq(tag_gen_next(tag_gen(0)), 1, "a write over an absent tag gives generation 1");
}

Test(tag_format, generations_wrap_at_g_and_compare_serially)
{
	const uint32_t G = TAG_GEN_MOD;

	cr_assert_eq(G, 2146238464u);
	cr_assert_eq(G % TAG_GEN_PRIME, 0);
	cr_assert_eq(tag_gen_next(0), 1);
	cr_assert_eq(tag_gen_next(G - 2), G - 1);
	cr_assert_eq(tag_gen_next(G - 1), 0);
	/* The residue the records count runs on without a jump at the wrap. */
	cr_assert_eq((tag_gen_res(G - 1) + 1) % TAG_GEN_PRIME, tag_gen_res(tag_gen_next(G - 1)));
	cr_assert_eq(tag_gen_ahead(1, 0), 1);
	cr_assert_eq(tag_gen_ahead(0, 1), 0, "behind is not ahead");
	cr_assert_eq(tag_gen_ahead(7, 7), 0);
	cr_assert_eq(tag_gen_ahead(0, G - 1), 1, "across the wrap");
	cr_assert_eq(tag_gen_ahead(5, G - 3), 8);
	cr_assert_eq(tag_gen_ahead(G - 1, 0), 0);
	cr_assert_eq(tag_gen_ahead(G / 2 - 1, 0), G / 2 - 1);
	cr_assert_eq(tag_gen_ahead(G / 2, 0), 0, "half way round is neither");
	cr_assert_eq(tag_gen_ahead(0, G / 2), 0);
	cr_assert_eq(tag_gen_ahead(G / 2 + 1, 0), 0);
	cr_assert_eq(tag_gen_ahead(0, G / 2 + 1), G / 2 - 1);
	/* Out-of-range values (no writer makes them) are taken modulo G. */
	cr_assert_eq(tag_gen(tag_make_meta(0, G + 3)), 3);
	cr_assert_eq(tag_gen_next(G), 1);
	cr_assert_eq(tag_gen_ahead(G + 1, 0), 1);
}

Test(tag_format, every_residue_has_its_inverse_modulo_32749)
{
	cr_assert_eq(tag_gen_inverse(0), 0);
	cr_assert_eq(tag_gen_inverse(TAG_GEN_PRIME), 0);
	for (uint32_t x = 1; x < TAG_GEN_PRIME; x++)
		cr_assert_eq((uint64_t)x * tag_gen_inverse(x) % TAG_GEN_PRIME, 1, "x %u", x);
}

/* Generations spread over the whole range, the wrap included, for column @p k, seed @p s. */
static void gens_fill(uint32_t *g, unsigned k, unsigned s)
{
	for (unsigned i = 0; i < k; i++)
		g[i] = (uint32_t)(((uint64_t)(i + 1) * 2654435761u + s * 40503u) % TAG_GEN_MOD);
	g[s % k] = TAG_GEN_MOD - 1 - s % 3; /* one block just below the wrap */
}

static uint32_t gen_back(uint32_t g, uint32_t d)
{
	return g >= d ? g - d : g + (TAG_GEN_MOD - d);
}

Test(tag_format, the_locator_names_every_stale_block_of_k_2_to_14_missed_1_to_3_times)
{
	uint32_t g[14], stale[14];

	for (unsigned k = 2; k <= 14; k++)
		for (unsigned j = 0; j < k; j++)
			for (uint32_t d = 1; d <= 3; d++) {
				struct tag_rec r;
				struct tag_rec_where w;

				gens_fill(g, k, j * 3 + d);
				r = tag_rec_make(g, k);
				cr_assert_eq(tag_rec_locate(r, g, k).verdict, TAG_REC_CONSISTENT);
				/* Data block j lost its last d writes: its tag is d behind. */
				memcpy(stale, g, sizeof(g));
				stale[j] = gen_back(g[j], d);
				w = tag_rec_locate(r, stale, k);
				cr_assert_eq(w.verdict, TAG_REC_DATA_BEHIND, "k %u j %u d %u", k, j, d);
				cr_assert_eq(w.j, j, "k %u j %u d %u", k, j, d);
				cr_assert_eq(w.delta, d);
				cr_assert_eq(w.ds, d);
				cr_assert_eq(w.dw, (j + 1) * d);
				/* The parity lost the last d writes of block j: the data is ahead. */
				memcpy(stale, g, sizeof(g));
				for (uint32_t x = 0; x < d; x++)
					stale[j] = tag_gen_next(stale[j]);
				w = tag_rec_locate(r, stale, k);
				cr_assert_eq(w.verdict, TAG_REC_PARITY_STALE, "k %u j %u d %u", k, j, d);
				cr_assert_eq(w.delta, d);
			}
}

Test(tag_format, a_record_updated_by_differences_equals_the_one_made_from_the_data)
{
	uint32_t g[14];

	for (unsigned k = 2; k <= 14; k++) {
		struct tag_rec r;

		gens_fill(g, k, k);
		r = tag_rec_make(g, k);
		/* A read-modify-write of blocks 0 and k - 1: old out, new in. */
		for (unsigned i = 0; i < k; i += k - 1) {
			tag_rec_sub(&r, i, g[i]);
			g[i] = tag_gen_next(g[i]);
			tag_rec_add(&r, i, g[i]);
		}
		cr_assert(tag_rec_eq(r, tag_rec_make(g, k)), "k %u", k);
		/* A deallocation: the block's g out, its absent tag counts 0. */
		tag_rec_sub(&r, 1, g[1]);
		g[1] = 0;
		cr_assert(tag_rec_eq(r, tag_rec_make(g, k)), "k %u", k);
	}
}

Test(tag_format, a_mismatch_no_single_block_explains_is_not_located)
{
	uint32_t g[4] = { 10, 20, 30, 40 }, s[4];
	struct tag_rec r = tag_rec_make(g, 4);
	struct tag_rec_where w;

	/* One block behind and another ahead: dS = 0, dW not. */
	memcpy(s, g, sizeof(g));
	s[0] -= 1;
	s[2] += 1;
	w = tag_rec_locate(r, s, 4);
	cr_assert_eq(w.verdict, TAG_REC_UNLOCATED);
	cr_assert_eq(w.ds, 0);
	cr_assert_neq(w.dw, 0);
	/* Blocks 1 and 3 behind by one each: dS = 2, dW = 2 + 4, j + 1 = 3: looks like block 2. */
	memcpy(s, g, sizeof(g));
	s[1] -= 1;
	s[3] -= 1;
	w = tag_rec_locate(r, s, 4);
	cr_assert_eq(w.verdict, TAG_REC_DATA_BEHIND);
	cr_assert_eq(w.delta, 2, "a delta of 2 is what tells RAID-5 it may be two blocks");
	/* Blocks 2 and 3 behind by one each: j + 1 = 7 / 2 is no index of 4. */
	memcpy(s, g, sizeof(g));
	s[2] -= 1;
	s[3] -= 1;
	cr_assert_eq(tag_rec_locate(r, s, 4).verdict, TAG_REC_UNLOCATED);
	/* The same against a column of 14: (7/2 mod p) is still past it. */
	cr_assert_eq(tag_rec_locate((struct tag_rec){ 2, 7 }, (uint32_t[14]){ 0 }, 14).verdict,
		     TAG_REC_UNLOCATED);
}
