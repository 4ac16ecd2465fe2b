/* SPDX-License-Identifier: MIT */
/* Layout math: md's left-symmetric tables, near-2 mirrors, and that no two array bytes collide. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "format/layout.h"

#define CHUNK 4096u

static struct layout layout_make(int level, unsigned n, uint64_t rows)
{
	struct layout l;

	cr_assert_eq(layout_init(&l, level, n, CHUNK, rows * CHUNK), 0,
		     "init level %d, %u members", level, n);
	return l;
}

/*
 * md RAID-5 left-symmetric, 4 members, stripes 0..4 (the 5th repeats the 1st). The picture
 * md's documentation draws (array chunk numbers):
 *     D0  D1  D2  P
 *     D4  D5  P   D3
 *     D8  P   D6  D7
 *     P   D9  D10 D11
 */
static const unsigned raid5_n4_p[5] = { 3, 2, 1, 0, 3 };
static const unsigned raid5_n4_data[5][3] = {
	{ 0, 1, 2 }, { 3, 0, 1 }, { 2, 3, 0 }, { 1, 2, 3 }, { 0, 1, 2 },
};

/*
 * md RAID-6 left-symmetric (ALGORITHM_LEFT_SYMMETRIC), 5 members, stripes 0..5:
 *     Q   D0  D1  D2  P
 *     D3  D4  D5  P   Q
 *     D7  D8  P   Q   D6
 *     D11 P   Q   D9  D10
 *     P   Q   D12 D13 D14
 *     Q   D15 D16 D17 P
 */
static const unsigned raid6_n5_p[6] = { 4, 3, 2, 1, 0, 4 };
static const unsigned raid6_n5_q[6] = { 0, 4, 3, 2, 1, 0 };
static const unsigned raid6_n5_data[6][3] = {
	{ 1, 2, 3 }, { 0, 1, 2 }, { 4, 0, 1 }, { 3, 4, 0 }, { 2, 3, 4 }, { 1, 2, 3 },
};

Test(raid5_layout, parity_rotates_left_symmetric)
{
	struct layout l = layout_make(5, 4, 16);

	for (uint64_t s = 0; s < 5; s++) {
		cr_assert_eq(layout_parity_member(&l, s, 0), raid5_n4_p[s], "P, stripe %lu",
			     (unsigned long)s);
		cr_assert_eq(layout_parity_member(&l, s, 1), GRAID_LAYOUT_NONE);
		for (unsigned d = 0; d < 3; d++)
			cr_assert_eq(layout_data_member(&l, s, d), raid5_n4_data[s][d],
				     "stripe %lu data %u", (unsigned long)s, d);
	}
}

Test(raid5_layout, array_chunks_land_where_md_puts_them)
{
	struct layout l = layout_make(5, 4, 16);
	struct layout_pos pos;

	/* D3: second stripe, first data chunk, on the last member. */
	layout_map(&l, 3 * CHUNK + 5, &pos);
	cr_assert_eq(pos.stripe, 1);
	cr_assert_eq(pos.d, 0);
	cr_assert_eq(pos.member, 3);
	cr_assert_eq(pos.chunk_off, 5);
	cr_assert_eq(pos.member_off, CHUNK + 5);
	/* D9: fourth stripe, after P on member 0. */
	layout_map(&l, 9 * CHUNK, &pos);
	cr_assert_eq(pos.stripe, 3);
	cr_assert_eq(pos.member, 1);
	cr_assert_eq(pos.member_off, 3 * CHUNK);
}

Test(raid6_layout, parity_rotates_left_symmetric)
{
	struct layout l = layout_make(6, 5, 16);

	for (uint64_t s = 0; s < 6; s++) {
		cr_assert_eq(layout_parity_member(&l, s, 0), raid6_n5_p[s]);
		cr_assert_eq(layout_parity_member(&l, s, 1), raid6_n5_q[s]);
		cr_assert_eq(layout_parity_member(&l, s, 2), GRAID_LAYOUT_NONE);
		for (unsigned d = 0; d < 3; d++)
			cr_assert_eq(layout_data_member(&l, s, d), raid6_n5_data[s][d],
				     "stripe %lu data %u", (unsigned long)s, d);
		cr_assert_eq(layout_data_member(&l, s, 3), GRAID_LAYOUT_NONE);
	}
}

Test(raid6_layout, roles_name_p_and_q_after_the_data)
{
	struct layout l = layout_make(6, 5, 16);

	for (uint64_t s = 0; s < 6; s++) {
		cr_assert_eq(layout_member_role(&l, s, raid6_n5_p[s]), 3);
		cr_assert_eq(layout_member_role(&l, s, raid6_n5_q[s]), 4);
		for (unsigned d = 0; d < 3; d++)
			cr_assert_eq(layout_member_role(&l, s, raid6_n5_data[s][d]), d);
	}
	cr_assert_eq(layout_member_role(&l, 0, 5), GRAID_LAYOUT_NONE);
}

/* The role-to-member call every stripe operation and background job uses: P, Q, data. */
Test(raid6_layout, role_member_names_the_member_of_each_role)
{
	struct layout l = layout_make(6, 5, 16);

	for (uint64_t s = 0; s < 6; s++) {
		cr_assert_eq(layout_role_member(&l, s, 3), raid6_n5_p[s]);
		cr_assert_eq(layout_role_member(&l, s, 4), raid6_n5_q[s]);
		for (unsigned d = 0; d < 3; d++)
			cr_assert_eq(layout_role_member(&l, s, d), raid6_n5_data[s][d]);
	}
	cr_assert_eq(layout_role_member(&l, 0, 5), GRAID_LAYOUT_NONE);
}

Test(raid0_layout, chunks_go_round_robin)
{
	struct layout l = layout_make(0, 3, 16);
	struct layout_pos pos;

	for (uint64_t c = 0; c < 12; c++) {
		layout_map(&l, c * CHUNK + 7, &pos);
		cr_assert_eq(pos.member, c % 3);
		cr_assert_eq(pos.stripe, c / 3);
		cr_assert_eq(pos.d, c % 3);
		cr_assert_eq(pos.member_off, (c / 3) * CHUNK + 7);
		cr_assert_eq(layout_member_role(&l, c / 3, (unsigned)(c % 3)), c % 3);
	}
	cr_assert_eq(layout_parity_member(&l, 0, 0), GRAID_LAYOUT_NONE);
}

Test(raid1_layout, every_member_holds_every_byte_at_the_same_offset)
{
	struct layout l = layout_make(1, 3, 16);
	unsigned members[GRAID_LAYOUT_MAX_MEMBERS];
	uint64_t offs[GRAID_LAYOUT_MAX_MEMBERS];
	struct layout_pos pos;

	cr_assert_eq(l.array_bytes, 16 * CHUNK);
	cr_assert_eq(layout_copies(&l, 5 * CHUNK + 9, members, offs), 3);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_eq(members[i], i);
		cr_assert_eq(offs[i], 5 * CHUNK + 9);
	}
	layout_map(&l, 5 * CHUNK + 9, &pos);
	cr_assert_eq(pos.stripe, 5);
	cr_assert_eq(pos.member, 0);
	cr_assert_eq(pos.member_off, 5 * CHUNK + 9);
}

/* md near-2 on 3 members (odd): chunk i takes slots 2i and 2i+1, laid row by row. */
static const unsigned raid10_n3_members[4][2] = { { 0, 1 }, { 2, 0 }, { 1, 2 }, { 0, 1 } };
static const uint64_t raid10_n3_rows[4][2] = { { 0, 0 }, { 0, 1 }, { 1, 1 }, { 2, 2 } };

Test(raid10_layout, near2_copies_follow_the_slot_rule_with_odd_members)
{
	struct layout l = layout_make(10, 3, 3);
	unsigned members[2];
	uint64_t offs[2], back;
	struct layout_pos pos;

	/* 9 slots hold 4 chunks; the last slot (row 2, member 2) is unused. */
	cr_assert_eq(l.array_bytes, 4 * CHUNK);
	for (uint64_t c = 0; c < 4; c++) {
		cr_assert_eq(layout_copies(&l, c * CHUNK + 1, members, offs), 2);
		for (unsigned k = 0; k < 2; k++) {
			cr_assert_eq(members[k], raid10_n3_members[c][k], "chunk %lu copy %u",
				     (unsigned long)c, k);
			cr_assert_eq(offs[k], raid10_n3_rows[c][k] * CHUNK + 1);
			cr_assert_eq(layout_member_role(&l, c, members[k]), 0);
		}
		layout_map(&l, c * CHUNK + 1, &pos);
		cr_assert_eq(pos.stripe, c);
		cr_assert_eq(pos.member, members[0]);
		cr_assert_eq(pos.member_off, offs[0]);
		cr_assert_eq(layout_data_member(&l, c, 0), members[0]);
	}
	cr_assert_eq(layout_member_role(&l, 0, 2), GRAID_LAYOUT_NONE);
	cr_assert_eq(layout_unmap(&l, 2, 2 * CHUNK, &back), -ENODATA);
}

Test(raid10_layout, copies_land_on_different_members)
{
	for (unsigned n = 2; n <= 9; n++) {
		struct layout l = layout_make(10, n, 7);
		unsigned members[2];
		uint64_t offs[2];

		cr_assert_eq(l.array_bytes, (n * 7 / 2) * (uint64_t)CHUNK);
		for (uint64_t off = 0; off < l.array_bytes; off += CHUNK / 2) {
			layout_copies(&l, off, members, offs);
			cr_assert_neq(members[0], members[1], "n %u off %lu", n,
				      (unsigned long)off);
		}
	}
}

Test(raid10_layout, even_members_pair_up_like_raid0_over_mirrors)
{
	struct layout l = layout_make(10, 4, 8);
	unsigned members[2];
	uint64_t offs[2];

	cr_assert_eq(l.array_bytes, 16 * CHUNK);
	layout_copies(&l, 5 * CHUNK, members, offs);
	cr_assert_eq(members[0], 2);
	cr_assert_eq(members[1], 3);
	cr_assert_eq(offs[0], 2 * CHUNK);
	cr_assert_eq(offs[1], 2 * CHUNK);
}

/* Every role 0..n-1 once per stripe, and each look-up the inverse of the other. */
static void check_roles_biject(const struct layout *l)
{
	for (uint64_t s = 0; s < 3 * l->nmembers; s++) {
		unsigned seen[GRAID_LAYOUT_MAX_MEMBERS] = { 0 };

		for (unsigned m = 0; m < l->nmembers; m++) {
			unsigned r = layout_member_role(l, s, m);

			cr_assert_lt(r, l->ndata + l->nparity, "level %d n %u stripe %lu member %u",
				     l->level, l->nmembers, (unsigned long)s, m);
			cr_assert_eq(seen[r]++, 0, "role %u twice", r);
			if (r < l->ndata)
				cr_assert_eq(layout_data_member(l, s, r), m);
			else
				cr_assert_eq(layout_parity_member(l, s, r - l->ndata), m);
		}
	}
}

Test(layout, roles_are_a_bijection_in_every_stripe)
{
	for (unsigned n = 2; n <= 17; n++) {
		{
			struct layout l = layout_make(0, n, 4);
			check_roles_biject(&l);
		}
		if (n >= 3) {
			struct layout l = layout_make(5, n, 4);
			check_roles_biject(&l);
		}
		if (n >= 4) {
			struct layout l = layout_make(6, n, 4);
			check_roles_biject(&l);
		}
	}
	{
		struct layout l = layout_make(6, 256, 4);
		check_roles_biject(&l);
	}
}

/*
 * Map every byte of a small array and mark where it lands: nothing lands outside a member's
 * data area, no two bytes (or copies) share a place, and unmap goes back. What is left
 * unmarked must be parity (RAID-5/6) or the one spare RAID-10 slot.
 */
static void check_exhaustive(int level, unsigned n, uint64_t rows)
{
	struct layout l = layout_make(level, n, rows);
	uint64_t mb = l.member_bytes;
	uint8_t *used = calloc(n, mb);
	unsigned members[GRAID_LAYOUT_MAX_MEMBERS];
	uint64_t offs[GRAID_LAYOUT_MAX_MEMBERS];
	uint64_t marked = 0;

	cr_assert_not_null(used);
	for (uint64_t a = 0; a < l.array_bytes; a++) {
		struct layout_pos pos;
		unsigned nc;

		layout_map(&l, a, &pos);
		cr_assert_lt(pos.member, n);
		cr_assert_lt(pos.member_off, mb);
		cr_assert_eq(pos.chunk_off, a % CHUNK);
		cr_assert_lt(pos.d, l.ndata);
		nc = layout_copies(&l, a, members, offs);
		cr_assert_eq(nc, level == 1 ? n : level == 10 ? 2u : 1u);
		cr_assert_eq(members[0], pos.member);
		cr_assert_eq(offs[0], pos.member_off);
		for (unsigned k = 0; k < nc; k++) {
			uint64_t back = UINT64_MAX;

			cr_assert_lt(members[k], n);
			cr_assert_lt(offs[k], mb);
			cr_assert_eq(used[members[k] * mb + offs[k]]++, 0,
				     "level %d n %u: array byte %lu collides on member %u at %lu",
				     level, n, (unsigned long)a, members[k],
				     (unsigned long)offs[k]);
			cr_assert_eq(layout_unmap(&l, members[k], offs[k], &back), 0);
			cr_assert_eq(back, a);
			marked++;
		}
	}
	for (unsigned m = 0; m < n; m++) {
		for (uint64_t off = 0; off < mb; off++) {
			uint64_t back;
			unsigned role;

			if (used[m * mb + off])
				continue;
			cr_assert_eq(layout_unmap(&l, m, off, &back), -ENODATA);
			if (level == 5 || level == 6) {
				role = layout_member_role(&l, off / CHUNK, m);
				cr_assert_geq(role, l.ndata, "unused byte holds data");
			} else {
				/* Only RAID-10 with n * rows odd leaves a slot: the last one. */
				cr_assert_eq(level, 10);
				cr_assert_eq(m, n - 1);
				cr_assert_eq(off / CHUNK, rows - 1);
			}
		}
	}
	cr_assert_eq(marked, (uint64_t)n * mb -
			     (level == 5 || level == 6 ? l.nparity * mb :
			      level == 10 && (n * rows) % 2 ? CHUNK : 0));
	free(used);
}

Test(layout, every_array_byte_maps_to_exactly_one_place)
{
	for (unsigned n = 2; n <= 7; n++) {
		check_exhaustive(0, n, 5);
		check_exhaustive(1, n, 3);
		check_exhaustive(10, n, 5);
		check_exhaustive(10, n, 6);
		if (n >= 3)
			check_exhaustive(5, n, n + 1);
		if (n >= 4)
			check_exhaustive(6, n, n + 1);
	}
}

Test(layout, unmap_rejects_places_outside_the_data_area)
{
	struct layout l = layout_make(5, 4, 4);
	uint64_t back;

	cr_assert_eq(layout_unmap(&l, 4, 0, &back), -EINVAL);
	cr_assert_eq(layout_unmap(&l, 0, 4 * CHUNK, &back), -EINVAL);
	/* Stripe 0 keeps P on member 3. */
	cr_assert_eq(layout_unmap(&l, 3, 10, &back), -ENODATA);
}

Test(layout, geometry_follows_the_level)
{
	struct layout l;

	cr_assert_eq(layout_init(&l, 0, 4, CHUNK, 10 * CHUNK + 100), 0);
	cr_assert_eq(l.member_bytes, 10 * CHUNK, "member_bytes rounds down to whole chunks");
	cr_assert_eq(l.nstripes, 10);
	cr_assert_eq(l.ndata, 4);
	cr_assert_eq(l.nparity, 0);
	cr_assert_eq(l.array_bytes, 40 * CHUNK);

	cr_assert_eq(layout_init(&l, 1, 3, CHUNK, 10 * CHUNK), 0);
	cr_assert_eq(l.ndata, 1);
	cr_assert_eq(l.array_bytes, 10 * CHUNK);

	cr_assert_eq(layout_init(&l, 5, 4, 65536, 1 << 30), 0);
	cr_assert_eq(l.ndata, 3);
	cr_assert_eq(l.nparity, 1);
	cr_assert_eq(l.nstripes, (1 << 30) / 65536);
	cr_assert_eq(l.array_bytes, 3ull << 30);

	cr_assert_eq(layout_init(&l, 6, 6, CHUNK, 1 << 20), 0);
	cr_assert_eq(l.ndata, 4);
	cr_assert_eq(l.nparity, 2);
	cr_assert_eq(l.array_bytes, 4ull << 20);

	cr_assert_eq(layout_init(&l, 10, 5, CHUNK, 3 * CHUNK), 0);
	cr_assert_eq(l.ndata, 1);
	cr_assert_eq(l.nparity, 0);
	cr_assert_eq(l.array_bytes, 7 * CHUNK, "15 slots hold 7 chunks");
}

Test(layout, large_arrays_map_without_overflow)
{
	struct layout l;
	struct layout_pos pos;
	uint64_t back;

	/* 256 members of 16 TiB each, 1 MiB chunks: 4 PiB of array. */
	cr_assert_eq(layout_init(&l, 6, 256, 1u << 20, 16ull << 40), 0);
	layout_map(&l, l.array_bytes - 1, &pos);
	cr_assert_eq(pos.stripe, l.nstripes - 1);
	cr_assert_eq(pos.d, l.ndata - 1);
	cr_assert_eq(pos.member_off, l.member_bytes - 1);
	cr_assert_eq(layout_unmap(&l, pos.member, pos.member_off, &back), 0);
	cr_assert_eq(back, l.array_bytes - 1);

	cr_assert_eq(layout_init(&l, 10, 255, 4096, (1ull << 50) + 4096), 0);
	layout_map(&l, l.array_bytes - 1, &pos);
	cr_assert_lt(pos.member_off, l.member_bytes);
	cr_assert_eq(layout_unmap(&l, pos.member, pos.member_off, &back), 0);
	cr_assert_eq(back, l.array_bytes - 1);

	cr_assert_eq(layout_init(&l, 10, 255, 4096, 1ull << 60), -EOVERFLOW);

	cr_assert_eq(layout_init(&l, 0, 256, 4096, UINT64_MAX / 128), -EOVERFLOW);
}

Test(layout, bad_geometry_is_rejected_and_leaves_the_layout_untouched)
{
	static const struct {
		int level;
		unsigned n;
		uint32_t chunk;
		uint64_t member_bytes;
	} bad[] = {
		{ 2, 4, CHUNK, 1 << 20 },   { 3, 4, CHUNK, 1 << 20 },  { 4, 4, CHUNK, 1 << 20 },
		{ -1, 4, CHUNK, 1 << 20 },  { 7, 4, CHUNK, 1 << 20 },  { 11, 4, CHUNK, 1 << 20 },
		{ 0, 4, 0, 1 << 20 },       { 0, 4, 2048, 1 << 20 },   { 0, 4, 4097, 1 << 20 },
		{ 0, 4, 12288, 1 << 20 },   { 0, 4, 2u << 20, 4u << 20 },
		{ 0, 1, CHUNK, 1 << 20 },   { 1, 1, CHUNK, 1 << 20 },  { 5, 1, CHUNK, 1 << 20 },
		{ 6, 3, CHUNK, 1 << 20 },   { 10, 1, CHUNK, 1 << 20 }, { 0, 0, CHUNK, 1 << 20 },
		{ 5, 257, CHUNK, 1 << 20 }, { 1, 1000, CHUNK, 1 << 20 },
		{ 5, 4, CHUNK, CHUNK - 1 }, { 6, 4, CHUNK, 0 },
	};
	struct layout l, before;

	memset(&l, 0xa5, sizeof(l));
	before = l;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(layout_init(&l, bad[i].level, bad[i].n, bad[i].chunk,
					       bad[i].member_bytes),
			     -EINVAL, "case %zu", i);
		cr_assert_eq(memcmp(&l, &before, sizeof(l)), 0, "case %zu wrote the layout", i);
	}
	cr_assert_eq(layout_init(NULL, 5, 4, CHUNK, 1 << 20), -EINVAL);
}

Test(layout, limits_are_accepted)
{
	struct layout l;

	cr_assert_eq(layout_init(&l, 0, 2, 4096, 4096), 0);
	cr_assert_eq(layout_init(&l, 5, 3, 1u << 20, 1u << 20), 0);
	cr_assert_eq(layout_init(&l, 6, 4, CHUNK, CHUNK), 0);
	cr_assert_eq(layout_init(&l, 6, 256, CHUNK, CHUNK), 0);
	cr_assert_eq(l.ndata, 254);
	cr_assert_eq(layout_init(&l, 1, 256, CHUNK, CHUNK), 0);
	cr_assert_eq(layout_init(&l, 10, 2, CHUNK, CHUNK), 0);
	cr_assert_eq(l.array_bytes, CHUNK);
}

/* RAID-6 Q-last over 5 members: docs/FORMAT.md's picture (members 0..3 the RAID-5 of 4). */
Test(raid6_layout, q_last_keeps_q_on_the_last_member_and_the_rest_as_raid5)
{
	struct layout l;

	cr_assert_eq(layout_init_id(&l, 6, 5, 4096, 16 * 4096, LAYOUT_Q_LAST), 0);
	cr_assert_eq(l.ndata, 3);
	cr_assert_eq(l.array_bytes, 3ull * 16 * 4096);
	for (uint64_t s = 0; s < 5; s++) {
		cr_assert_eq(layout_parity_member(&l, s, 0), raid5_n4_p[s]);
		cr_assert_eq(layout_parity_member(&l, s, 1), 4);
		cr_assert_eq(layout_member_role(&l, s, raid5_n4_p[s]), 3);
		cr_assert_eq(layout_member_role(&l, s, 4), 4);
		for (unsigned d = 0; d < 3; d++) {
			cr_assert_eq(layout_data_member(&l, s, d), raid5_n4_data[s][d],
				     "stripe %lu data %u", (unsigned long)s, d);
			cr_assert_eq(layout_member_role(&l, s, raid5_n4_data[s][d]), d);
		}
	}
	check_roles_biject(&l);
}
