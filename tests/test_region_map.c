/* SPDX-License-Identifier: MIT */
/*
 * The rules the write-intent bitmap and the live-data map share as instances of one region
 * map (lib/core/meta/region_map.c): a read-only handle writes neither map, whoever asks; an
 * open reads the copies of the current members only, never that of a member coming back.
 * Before, the bitmap's write-all wrote on a read-only handle (and failed, its descriptors
 * being read-only), and the live-data map took a returning member's copy.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "testutil.h"

#define RM_MEMBER_BYTES ((1u << 20) + (16u << 20))

static uint64_t rm_used(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.used_bytes;
}

static uint64_t rm_size(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.size;
}

Test(region_map, a_read_only_handle_writes_neither_map, .timeout = 60)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = GRAID_OPEN_READ_ONLY };
	uint8_t buf[65536];
	uint64_t hash[3];
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, RM_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 3; i++)
		hash[i] = au_file_hash(s.paths[i]);

	cr_assert_eq(graid_array_open(s.paths, 3, &o, &a), 0);
	cr_assert(a->bitmap.enabled && a->live, "the array keeps both maps");
	/* In memory every region is marked; on the members nothing may change. */
	cr_assert_eq(bitmap_mark_all(a), 0, "the bitmap's write-all on a read-only handle");
	cr_assert_eq(bitmap_write_all(a), 0);
	cr_assert_eq(live_write_all(a), 0);
	for (unsigned r = 0; r < 3; r++)
		cr_assert_eq(atomic_load(&a->members[r].state), GRAID_MEMBER_ACTIVE,
			     "member %u was failed by a write nobody should have made", r);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), hash[i], "member %u was written", i);
	au_remove(&s);
}

/*
 * Regions written, then the whole array discarded while member 3 was out: the current
 * members record them unused, member 3's own copy still used. When member 3 comes back its
 * copy is not read (it predates the discard), the regions stay unused, and once caught up
 * member 3 reads zeroes there like the others.
 */
Test(region_map, a_member_coming_back_does_not_bring_back_what_was_discarded, .timeout = 120)
{
	const char *three[3];
	uint8_t buf[65536], *got;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 4, RM_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	memset(buf, 0x5a, sizeof(buf));
	for (uint64_t off = 0; off < (4u << 20); off += sizeof(buf))
		cr_assert_eq(graid_array_write(a, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
	cr_assert_gt(rm_used(a), 0);
	cr_assert_eq(graid_array_close(a), 0);

	for (unsigned i = 0; i < 3; i++)
		three[i] = s.paths[i];
	cr_assert_eq(graid_array_open(three, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_discard(a, 0, rm_size(a)), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(rm_used(a), 0, "discarded and flushed: nothing used");
	cr_assert_eq(graid_array_close(a), 0);

	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert(a->members[3].role.rejoined, "member 3 came back");
	cr_assert_eq(rm_used(a), 0, "%llu bytes used again: the returning member's stale copy "
				    "was read", (unsigned long long)rm_used(a));
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(atomic_load(&a->members[3].state), GRAID_MEMBER_ACTIVE);
	/* Every read of the array's first 4 MiB needs member 3's chunks, as the others' own. */
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	got = malloc(4u << 20);
	cr_assert_eq(graid_array_read(a, got, 4u << 20, 0), (ssize_t)(4u << 20));
	for (uint64_t i = 0; i < (4u << 20); i++)
		if (got[i])
			cr_assert_fail("byte %llu reads %u after the discard", (unsigned long long)i,
				       got[i]);
	free(got);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(rm_used(a), 0, "and on disk");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
