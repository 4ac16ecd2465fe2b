/* SPDX-License-Identifier: MIT */
/* The write-intent bitmap read back from member bytes by docs/FORMAT.md alone, not by libgraid. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

static uint64_t bf_le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* What FORMAT.md says a reader needs, from the superblock bytes. */
struct bf_sb {
	uint64_t chunk, nmembers, level, data_bytes, bitmap_offset, bitmap_bytes, region, history;
	uint64_t live_offset, live_bytes, live_region;
};

static struct bf_sb bf_read_sb(const char *path, uint8_t **bitmap)
{
	uint8_t sb[4096];
	struct bf_sb s;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	cr_assert_eq(memcmp(sb, "GRAID-SB", 8), 0);
	cr_assert_eq(bf_le(sb + 0x0a, 2), 5, "format minor 5 written");
	s.level = bf_le(sb + 0x38, 4);
	s.chunk = bf_le(sb + 0x3c, 4);
	s.nmembers = bf_le(sb + 0x40, 4);
	s.data_bytes = bf_le(sb + 0x58, 8);
	s.bitmap_offset = bf_le(sb + 0x78, 8);
	s.bitmap_bytes = bf_le(sb + 0x80, 8);
	s.region = bf_le(sb + 0x98, 8);
	s.history = bf_le(sb + 0xa0, 8);
	s.live_offset = bf_le(sb + 0xd8, 8);
	s.live_bytes = bf_le(sb + 0xe0, 8);
	s.live_region = bf_le(sb + 0xe8, 8);
	*bitmap = malloc(s.bitmap_bytes);
	cr_assert_eq(pread(fd, *bitmap, s.bitmap_bytes, (off_t)s.bitmap_offset),
		     (ssize_t)s.bitmap_bytes);
	close(fd);
	return s;
}

Test(bitmap_format, marks_decode_from_the_documented_layout_alone, .timeout = 60)
{
	const uint64_t off = 9u << 20, len = 2u << 20;
	const char *four[4];
	struct graid_array *a;
	uint8_t *bm, *buf = aligned_alloc(4096, len);
	struct bf_sb s;
	uint64_t row_data, first, last, nstripes;
	struct au_set set;

	/* RAID-5 of 5, 64 KiB chunks; member 4 absent, so the marks are kept as history. */
	au_make(&set, 5, (1u << 20) + (16u << 20));
	cr_assert_eq(au_create(&set, 5, 5, 64 * 1024, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 4; i++)
		four[i] = set.paths[i];
	cr_assert_eq(graid_array_open(four, 4, NULL, &a), 0);
	memset(buf, 0x33, len);
	cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len);
	cr_assert_eq(graid_array_close(a), 0);

	s = bf_read_sb(set.paths[0], &bm);
	cr_assert_eq(s.level, 5);
	cr_assert_neq(s.history, 0, "history_events is set while a role is out");
	cr_assert_neq(s.region, 0, "the region size is recorded");
	nstripes = s.data_bytes / s.chunk; /* RAID-5: a stripe is a member row */
	row_data = (s.nmembers - 1) * s.chunk;
	first = off / row_data / s.region;
	last = (off + len - 1) / row_data / s.region;
	for (uint64_t r = 0; r < (nstripes + s.region - 1) / s.region; r++) {
		bool marked = bm[r / 8] >> (r % 8) & 1;

		cr_assert_eq(marked, r >= first && r <= last,
			     "region %llu is %smarked; the write covered regions %llu..%llu",
			     (unsigned long long)r, marked ? "" : "not ", (unsigned long long)first,
			     (unsigned long long)last);
	}
	for (uint64_t r = (nstripes + s.region - 1) / s.region; r < s.bitmap_bytes * 8; r++)
		cr_assert_eq(bm[r / 8] >> (r % 8) & 1, 0, "bit %llu past the last region",
			     (unsigned long long)r);
	free(bm);
	free(buf);
	au_remove(&set);
}

/* Bit @p r of the area at @p area_off in the member file @p path, as on disk now. */
static bool bf_bit(const char *path, uint64_t area_off, uint64_t r)
{
	uint8_t byte;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &byte, 1, (off_t)(area_off + r / 8)), 1);
	close(fd);
	return byte >> (r % 8) & 1;
}

/*
 * The first write to a region marks it in the bitmap and in the live-data map of every
 * member before the write returns (the marks go to all members at once, meta_write.c), and
 * only that region: read from each member's bytes while the array is still open.
 */
Test(bitmap_format, a_first_write_marks_every_member_before_it_returns, .timeout = 60)
{
	const uint64_t off = 7u << 20;
	uint8_t *bm, *buf = aligned_alloc(4096, 4096);
	struct graid_array *a;
	struct au_set set;
	struct bf_sb s;
	uint64_t row;

	au_make(&set, 5, 24u << 20);
	cr_assert_eq(au_create(&set, 5, 6, 64 * 1024, &a), 0);
	s = bf_read_sb(set.paths[0], &bm);
	cr_assert_neq(s.bitmap_bytes, 0, "a RAID-6 keeps a bitmap");
	cr_assert_neq(s.live_bytes, 0, "and a live-data map");
	row = off / ((s.nmembers - 2) * s.chunk);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_not(bf_bit(set.paths[i], s.bitmap_offset, row / s.region));
		cr_assert_not(bf_bit(set.paths[i], s.live_offset, row / s.live_region));
	}
	memset(buf, 0x5a, 4096);
	cr_assert_eq(graid_array_write(a, buf, 4096, off), 4096);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert(bf_bit(set.paths[i], s.bitmap_offset, row / s.region),
			  "member %u: the bitmap region of the write is marked", i);
		cr_assert(bf_bit(set.paths[i], s.live_offset, row / s.live_region),
			  "member %u: the live-data map region of the write is marked", i);
		cr_assert_not(bf_bit(set.paths[i], s.bitmap_offset, row / s.region + 1),
			      "member %u: the next bitmap region is not", i);
		cr_assert_not(bf_bit(set.paths[i], s.live_offset, row / s.live_region + 1),
			      "member %u: the next map region is not", i);
	}
	cr_assert_eq(graid_array_close(a), 0);
	free(bm);
	free(buf);
	au_remove(&set);
}
