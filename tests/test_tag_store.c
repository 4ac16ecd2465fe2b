/* SPDX-License-Identifier: MIT */
/*
 * The checksums' tag store over a created array's member files: verify, writes in flight,
 * write-back and its place on disk, eviction under a small budget, reset; and create's
 * and info's side of the CHECKSUMS flag.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "array/array.h"
#include "arrayutil.h"
#include "format/superblock.h"
#include "format/tag_format.h"
#include "member/tag_store.h"

/* 1 MiB of metadata, 16 MiB of data (8 tag blocks' worth) and its tags, per member. */
#define TS_MEMBER_BYTES ((1u << 20) + (16u << 20) + (64u << 10))
#define TS_BLK 4096u

static struct au_set ts_set;

static void ts_setup(void)
{
	au_make(&ts_set, 3, TS_MEMBER_BYTES);
}

static void ts_teardown(void)
{
	au_remove(&ts_set);
}

static int ts_create(int level, unsigned flags, struct graid_array **out)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = level, .chunk_bytes = 65536,
		.backend = "isal", .flags = flags,
	};

	return graid_array_create(ts_set.paths, 3, &cfg, out);
}

static struct graid_array *ts_open(void)
{
	struct graid_array *a = NULL;

	cr_assert_eq(graid_array_open(ts_set.paths, 3, NULL, &a), 0);
	return a;
}

static struct graid_array *ts_created(void)
{
	struct graid_array *a = NULL;

	cr_assert_eq(ts_create(5, GRAID_CREATE_CHECKSUMS, &a), 0);
	cr_assert(a->csum);
	cr_assert_not_null(a->tags);
	return a;
}

/* Data for block @p blk, different for every block and @p seed. */
static void ts_fill(uint8_t *buf, uint64_t blk, unsigned n, unsigned seed)
{
	for (unsigned b = 0; b < n; b++)
		for (unsigned i = 0; i < TS_BLK; i++)
			buf[(size_t)b * TS_BLK + i] = (uint8_t)((blk + b) * 131 + i * 7 + seed * 29);
}

static int ts_verify(struct graid_array *a, unsigned role, uint64_t blk, const void *buf,
		     unsigned n, struct tag_bad *bad, unsigned max, unsigned *nbad)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = (size_t)n * TS_BLK };

	return tag_store_verify(a, role, blk * TS_BLK, &iov, 1, bad, max, nbad);
}

static int ts_set_tags(struct graid_array *a, unsigned role, uint64_t blk, const void *buf,
		       unsigned n)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = (size_t)n * TS_BLK };

	return tag_store_set(a, role, blk * TS_BLK, &iov, 1);
}

static int ts_begin(struct graid_array *a, unsigned role, uint64_t blk, const void *buf)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = TS_BLK };

	return tag_store_write_begin(a, role, blk * TS_BLK, &iov, 1);
}

/* The tag of @p role's block @p blk as its member file holds it now. */
static tag_t ts_disk_tag(struct graid_array *a, unsigned role, uint64_t blk)
{
	uint8_t b[TAG_BYTES];
	int fd = open(ts_set.paths[role], O_RDONLY);
	off_t at = (off_t)(a->tag_offset + tag_block_index(blk) * TAG_BLOCK_BYTES +
			   tag_slot(blk) * TAG_BYTES);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, b, sizeof(b), at), (ssize_t)sizeof(b));
	close(fd);
	return tag_decode(b);
}

static bool ts_disk_zero(const char *path, uint64_t off, uint64_t len)
{
	uint8_t *b = malloc(len);
	int fd = open(path, O_RDONLY);
	bool zero = true;

	cr_assert(b && fd >= 0);
	cr_assert_eq(pread(fd, b, len, (off_t)off), (ssize_t)len);
	for (uint64_t i = 0; i < len; i++)
		zero &= b[i] == 0;
	close(fd);
	free(b);
	return zero;
}

TestSuite(tag_store, .init = ts_setup, .fini = ts_teardown, .timeout = 120);

Test(tag_store, a_created_array_has_its_tag_area_after_the_data_area_all_absent)
{
	struct graid_array *a = ts_created();
	struct superblock sb;
	uint8_t buf[GRAID_SB_SIZE];
	int fd = open(ts_set.paths[1], O_RDONLY);

	cr_assert_eq(a->block_size, 4096);
	cr_assert_eq(a->tag_offset, a->data_offset + a->lay.member_bytes);
	cr_assert_eq(a->tag_bytes, tag_area_bytes(a->lay.member_bytes));
	cr_assert_leq(a->tag_offset + a->tag_bytes, TS_MEMBER_BYTES);
	cr_assert_eq(a->lay.member_bytes % a->lay.chunk, 0);
	cr_assert(ts_disk_zero(ts_set.paths[1], a->tag_offset, a->tag_bytes));
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(buf[0x08], GRAID_SB_VERSION_MAJOR_FEATURES,
		     "major 3: readers before generations refuse it");
	cr_assert_eq(sb_decode(buf, &sb), 0);
	cr_assert(sb.flags & GRAID_SB_F_CHECKSUMS);
	cr_assert(sb.flags & GRAID_SB_F_GENERATIONS);
	cr_assert(sb_generations(&sb));
	cr_assert(a->csum_gens);
	cr_assert_eq(sb.tag_offset, a->tag_offset);
	cr_assert_eq(sb.tag_bytes, a->tag_bytes);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, verify_accepts_right_data_and_names_the_block_with_a_flipped_bit)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[8 * TS_BLK];
	struct tag_bad bad[4];
	unsigned nbad = 99;

	ts_fill(buf, 100, 8, 1);
	cr_assert_eq(ts_set_tags(a, 1, 100, buf, 8), 0);
	cr_assert_eq(ts_verify(a, 1, 100, buf, 8, bad, 4, &nbad), 0);
	cr_assert_eq(nbad, 0);
	buf[5 * TS_BLK + 17] ^= 0x10;
	cr_assert_eq(ts_verify(a, 1, 100, buf, 8, bad, 4, &nbad), -EBADMSG);
	cr_assert_eq(nbad, 1);
	cr_assert_eq(bad[0].block, 105);
	/* The same bytes under another role or place are not the same block. */
	buf[5 * TS_BLK + 17] ^= 0x10;
	cr_assert_eq(ts_set_tags(a, 2, 100, buf, 8), 0);
	cr_assert_eq(ts_verify(a, 2, 101, buf, 1, bad, 4, &nbad), -EBADMSG);
	cr_assert_eq(ts_verify(a, 0, 100, buf, 8, bad, 4, &nbad), 0, "role 0: absent tags");
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, verify_walks_blocks_split_across_iovec_pieces)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[3 * TS_BLK];
	struct iovec iov[3];
	struct tag_bad bad[4];
	unsigned nbad;

	ts_fill(buf, 7, 3, 2);
	cr_assert_eq(ts_set_tags(a, 0, 7, buf, 3), 0);
	iov[0] = (struct iovec){ .iov_base = buf, .iov_len = 1000 };
	iov[1] = (struct iovec){ .iov_base = buf + 1000, .iov_len = 2 * TS_BLK };
	iov[2] = (struct iovec){ .iov_base = buf + 1000 + 2 * TS_BLK, .iov_len = TS_BLK - 1000 };
	cr_assert_eq(tag_store_verify(a, 0, 7 * TS_BLK, iov, 3, bad, 4, &nbad), 0);
	buf[2 * TS_BLK + 3000] ^= 1;
	cr_assert_eq(tag_store_verify(a, 0, 7 * TS_BLK, iov, 3, bad, 4, &nbad), -EBADMSG);
	cr_assert_eq(nbad, 1);
	cr_assert_eq(bad[0].block, 9);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, more_bad_blocks_than_room_fill_the_room_and_say_so)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[6 * TS_BLK];
	struct tag_bad bad[2];
	unsigned nbad;

	ts_fill(buf, 0, 6, 3);
	cr_assert_eq(ts_set_tags(a, 0, 0, buf, 6), 0);
	for (unsigned b = 1; b < 6; b++)
		buf[b * TS_BLK] ^= 1;
	cr_assert_eq(ts_verify(a, 0, 0, buf, 6, bad, 2, &nbad), -EBADMSG);
	cr_assert_eq(nbad, 2);
	cr_assert_eq(bad[0].block, 1);
	cr_assert_eq(bad[1].block, 2);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, absent_tags_accept_any_data)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[4 * TS_BLK];

	ts_fill(buf, 0, 4, 9);
	for (unsigned r = 0; r < 3; r++)
		cr_assert_eq(ts_verify(a, r, 2000, buf, 4, NULL, 0, NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, ranges_outside_the_data_area_or_not_whole_blocks_are_refused)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];
	struct iovec iov = { .iov_base = buf, .iov_len = TS_BLK };
	uint64_t blocks = a->lay.member_bytes / TS_BLK;

	cr_assert_eq(ts_verify(a, 0, blocks, buf, 1, NULL, 0, NULL), -EINVAL);
	cr_assert_eq(ts_verify(a, 3, 0, buf, 1, NULL, 0, NULL), -EINVAL);
	cr_assert_eq(tag_store_verify(a, 0, 512, &iov, 1, NULL, 0, NULL), -EINVAL);
	iov.iov_len = 512;
	cr_assert_eq(tag_store_set(a, 0, 0, &iov, 1), -EINVAL);
	cr_assert_eq(tag_store_forget(a, 0, blocks * TS_BLK, TS_BLK), -EINVAL);
	cr_assert_eq(ts_verify(a, 0, blocks - 1, buf, 1, NULL, 0, NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, during_a_write_old_and_new_data_both_verify_and_the_end_decides)
{
	struct graid_array *a = ts_created();
	static uint8_t old[TS_BLK], new[TS_BLK], other[TS_BLK];

	ts_fill(old, 40, 1, 1);
	ts_fill(new, 40, 1, 2);
	ts_fill(other, 40, 1, 3);
	cr_assert_eq(ts_set_tags(a, 2, 40, old, 1), 0);
	cr_assert_eq(ts_begin(a, 2, 40, new), 0);
	cr_assert_eq(ts_verify(a, 2, 40, old, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 2, 40, new, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 2, 40, other, 1, NULL, 0, NULL), -EBADMSG);
	tag_store_write_end(a, 2, 40 * TS_BLK, TS_BLK, true);
	cr_assert_eq(ts_verify(a, 2, 40, new, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 2, 40, old, 1, NULL, 0, NULL), -EBADMSG);

	/* A failed write leaves the tag it found. */
	cr_assert_eq(ts_begin(a, 2, 40, other), 0);
	tag_store_write_end(a, 2, 40 * TS_BLK, TS_BLK, false);
	cr_assert_eq(ts_verify(a, 2, 40, new, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 2, 40, other, 1, NULL, 0, NULL), -EBADMSG);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, two_overlapping_writes_keep_every_candidate_until_both_end)
{
	struct graid_array *a = ts_created();
	static uint8_t old[TS_BLK], n1[TS_BLK], n2[TS_BLK], other[TS_BLK];

	ts_fill(old, 3, 1, 1);
	ts_fill(n1, 3, 1, 2);
	ts_fill(n2, 3, 1, 3);
	ts_fill(other, 3, 1, 4);
	cr_assert_eq(ts_set_tags(a, 0, 3, old, 1), 0);
	cr_assert_eq(ts_begin(a, 0, 3, n1), 0);
	cr_assert_eq(ts_begin(a, 0, 3, n2), 0);
	tag_store_write_end(a, 0, 3 * TS_BLK, TS_BLK, true);
	/* One ended, which one is unknown: the disk may hold old, n1 or n2. */
	cr_assert_eq(ts_verify(a, 0, 3, old, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 3, n1, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 3, n2, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 3, other, 1, NULL, 0, NULL), -EBADMSG);
	tag_store_write_end(a, 0, 3 * TS_BLK, TS_BLK, true);
	/* Which landed last is unknown: the block is left unverified, never failed. */
	cr_assert_eq(ts_verify(a, 0, 3, n1, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 3, n2, 1, NULL, 0, NULL), 0);

	/* Two writes of the same bytes: that is the tag once both end. */
	cr_assert_eq(ts_set_tags(a, 0, 3, old, 1), 0);
	cr_assert_eq(ts_begin(a, 0, 3, n1), 0);
	cr_assert_eq(ts_begin(a, 0, 3, n1), 0);
	tag_store_write_end(a, 0, 3 * TS_BLK, TS_BLK, true);
	tag_store_write_end(a, 0, 3 * TS_BLK, TS_BLK, false);
	cr_assert_eq(ts_verify(a, 0, 3, n1, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 3, old, 1, NULL, 0, NULL), -EBADMSG);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, flush_writes_the_tags_where_the_format_says_and_a_reopen_reads_them)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[4 * TS_BLK];
	uint8_t uuid[16];
	uint64_t blk = 2 * TAGS_PER_BLOCK + 510; /* across tag blocks 2 and 3 */

	memcpy(uuid, a->uuid, 16);
	ts_fill(buf, blk, 4, 5);
	cr_assert_eq(ts_set_tags(a, 1, blk, buf, 4), 0);
	cr_assert_eq(ts_disk_tag(a, 1, blk), 0, "cached, not written yet");
	cr_assert_eq(tag_store_flush(a), 0);
	for (unsigned b = 0; b < 4; b++) {
		tag_t t = ts_disk_tag(a, 1, blk + b);

		cr_assert(tag_valid(t));
		cr_assert_eq(tag_crc_of(t), tag_crc(uuid, 1, blk + b, buf + b * TS_BLK));
	}
	cr_assert_eq(graid_array_close(a), 0);
	a = ts_open();
	cr_assert(a->csum);
	cr_assert_eq(ts_verify(a, 1, blk, buf, 4, NULL, 0, NULL), 0);
	buf[3 * TS_BLK] ^= 4;
	cr_assert_eq(ts_verify(a, 1, blk, buf, 4, NULL, 0, NULL), -EBADMSG);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, a_clean_close_writes_the_tags_before_it_says_clean)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];
	uint8_t uuid[16];
	struct superblock sb;
	uint8_t sbuf[GRAID_SB_SIZE];
	int fd;

	memcpy(uuid, a->uuid, 16);
	ts_fill(buf, 77, 1, 6);
	cr_assert_eq(ts_set_tags(a, 0, 77, buf, 1), 0);
	cr_assert_eq(graid_array_close(a), 0);
	fd = open(ts_set.paths[0], O_RDONLY);
	cr_assert_eq(pread(fd, sbuf, sizeof(sbuf), 0), (ssize_t)sizeof(sbuf));
	close(fd);
	cr_assert_eq(sb_decode(sbuf, &sb), 0);
	cr_assert(sb.flags & GRAID_SB_F_CLEAN);
	{
		uint8_t b[TAG_BYTES];
		tag_t t;

		fd = open(ts_set.paths[0], O_RDONLY);
		cr_assert_eq(pread(fd, b, sizeof(b), (off_t)(sb.tag_offset + 77 * TAG_BYTES)), 8);
		close(fd);
		t = tag_decode(b);
		cr_assert(tag_valid(t));
		cr_assert_eq(tag_crc_of(t), tag_crc(uuid, 0, 77, buf));
	}
}

Test(tag_store, a_budget_of_one_block_per_role_evicts_and_stays_right)
{
	struct graid_array *a;
	static uint8_t buf[TS_BLK], pend[TS_BLK];
	uint8_t uuid[16];

	setenv("GRAID_TAG_CACHE_BYTES", "4096", 1); /* below one block per role: one each */
	a = ts_created();
	memcpy(uuid, a->uuid, 16);
	/* A write in flight pins its tag block through the evictions below. */
	ts_fill(pend, 1, 1, 8);
	cr_assert_eq(ts_begin(a, 2, 1, pend), 0);
	for (unsigned k = 0; k < 8; k++) {
		ts_fill(buf, k * TAGS_PER_BLOCK + 5, 1, 7);
		cr_assert_eq(ts_set_tags(a, 2, k * TAGS_PER_BLOCK + 5, buf, 1), 0);
	}
	/* Evicted blocks were written on the way out, with no flush; the pinned one was kept. */
	ts_fill(buf, TAGS_PER_BLOCK + 5, 1, 7);
	cr_assert_eq(tag_crc_of(ts_disk_tag(a, 2, TAGS_PER_BLOCK + 5)),
		     tag_crc(uuid, 2, TAGS_PER_BLOCK + 5, buf));
	cr_assert_eq(ts_disk_tag(a, 2, 5), 0);
	for (unsigned k = 0; k < 8; k++) {
		ts_fill(buf, k * TAGS_PER_BLOCK + 5, 1, 7);
		cr_assert_eq(ts_verify(a, 2, k * TAGS_PER_BLOCK + 5, buf, 1, NULL, 0, NULL), 0);
		buf[100] ^= 2;
		cr_assert_eq(ts_verify(a, 2, k * TAGS_PER_BLOCK + 5, buf, 1, NULL, 0, NULL),
			     -EBADMSG, "tag block %u", k);
	}
	tag_store_write_end(a, 2, TS_BLK, TS_BLK, true);
	cr_assert_eq(ts_verify(a, 2, 1, pend, 1, NULL, 0, NULL), 0);
	pend[0] ^= 1;
	cr_assert_eq(ts_verify(a, 2, 1, pend, 1, NULL, 0, NULL), -EBADMSG);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, forget_makes_tags_absent_and_whole_tag_blocks_zero_on_the_member)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[3 * TAGS_PER_BLOCK * TS_BLK];
	uint64_t n = 3 * TAGS_PER_BLOCK;

	ts_fill(buf, 0, (unsigned)n, 4);
	cr_assert_eq(ts_set_tags(a, 1, 0, buf, (unsigned)n), 0);
	cr_assert_eq(tag_store_flush(a), 0);
	tag_store_close(a);  /* nothing cached: the whole block in the middle goes on disk */
	a->tags = NULL;
	cr_assert_eq(tag_store_open(a), 0);
	/* Blocks 10 .. 2 tag blocks + 20: part of tag block 0, all of 1, part of 2. */
	cr_assert_eq(tag_store_forget(a, 1, 10 * TS_BLK, (2 * TAGS_PER_BLOCK + 10) * TS_BLK), 0);
	cr_assert(ts_disk_zero(ts_set.paths[1], a->tag_offset + TAG_BLOCK_BYTES, TAG_BLOCK_BYTES));
	buf[0] ^= 1;
	for (uint64_t b = 0; b < n; b++)
		buf[b * TS_BLK + 1] ^= 1;
	for (uint64_t b = 0; b < n; b++) {
		bool forgotten = b >= 10 && b < 2 * TAGS_PER_BLOCK + 20;

		cr_assert_eq(ts_verify(a, 1, b, buf + b * TS_BLK, 1, NULL, 0, NULL),
			     forgotten ? 0 : -EBADMSG, "block %llu", (unsigned long long)b);
	}
	cr_assert_eq(tag_store_flush(a), 0);
	cr_assert_not(tag_valid(ts_disk_tag(a, 1, 10)));
	cr_assert(tag_valid(ts_disk_tag(a, 1, 9)));
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, role_reset_zeroes_the_role_tag_area_and_drops_its_cache)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];

	ts_fill(buf, 600, 1, 5);
	cr_assert_eq(ts_set_tags(a, 1, 600, buf, 1), 0);
	cr_assert_eq(ts_set_tags(a, 0, 600, buf, 1), 0);
	cr_assert_eq(tag_store_flush(a), 0);
	cr_assert_eq(ts_set_tags(a, 1, 601, buf, 1), 0); /* dirty, dropped */
	cr_assert_eq(tag_store_role_reset(a, 1), 0);
	cr_assert(ts_disk_zero(ts_set.paths[1], a->tag_offset, a->tag_bytes));
	buf[9] ^= 1;
	cr_assert_eq(ts_verify(a, 1, 600, buf, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, 600, buf, 1, NULL, 0, NULL), -EBADMSG, "other roles kept");
	cr_assert_eq(tag_store_flush(a), 0);
	cr_assert(ts_disk_zero(ts_set.paths[1], a->tag_offset, a->tag_bytes));
	cr_assert_eq(graid_array_close(a), 0);
}

/* One block's write begun with meta words @p in (NULL: the default), its new meta in *@p out. */
static int ts_begin_meta(struct graid_array *a, unsigned role, uint64_t blk, const void *buf,
			 unsigned n, const uint32_t *in, uint32_t *out)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = (size_t)n * TS_BLK };

	return tag_store_write_begin_meta(a, role, blk * TS_BLK, &iov, 1, in, out);
}

/* A write of @p n blocks begun with the defaults and ended well. */
static void ts_write(struct graid_array *a, unsigned role, uint64_t blk, const void *buf,
		     unsigned n)
{
	cr_assert_eq(ts_begin_meta(a, role, blk, buf, n, NULL, NULL), 0);
	tag_store_write_end(a, role, blk * TS_BLK, (uint64_t)n * TS_BLK, true);
}

/* The cached tag of one block (it must be cached). */
static tag_t ts_peek(struct graid_array *a, unsigned role, uint64_t blk)
{
	struct tag_peek p;

	cr_assert_eq(tag_store_peek(a, role, blk, 1, &p), 0);
	cr_assert(p.cached);
	return p.tag;
}

/* The cache dropped (tags written first): what a reopen finds. */
static void ts_drop_cache(struct graid_array *a)
{
	cr_assert_eq(tag_store_flush(a), 0);
	tag_store_close(a);
	cr_assert_eq(tag_store_open(a), 0);
}

Test(tag_store, with_generations_each_write_counts_one_from_absent_0)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[3 * TS_BLK];
	uint32_t out[3] = { 9, 9, 9 };
	uint8_t uuid[16];

	memcpy(uuid, a->uuid, 16);
	a->csum_gens = true;
	ts_fill(buf, 100, 3, 1);
	/* Absent tags count 0: the first write gives 1. */
	cr_assert_eq(ts_begin_meta(a, 1, 100, buf, 3, NULL, out), 0);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(out[i], 1, "block %u", i);
	tag_store_write_end(a, 1, 100 * TS_BLK, 3 * TS_BLK, true);
	ts_write(a, 1, 101, buf + TS_BLK, 1);
	ts_write(a, 1, 101, buf + TS_BLK, 1);
	cr_assert_eq(tag_gen(ts_peek(a, 1, 100)), 1);
	cr_assert_eq(tag_gen(ts_peek(a, 1, 101)), 3);
	cr_assert_eq(tag_gen(ts_peek(a, 1, 102)), 1);
	/* A write that failed leaves the generation it found. */
	cr_assert_eq(ts_begin_meta(a, 1, 101, buf, 1, NULL, out), 0);
	cr_assert_eq(out[0], 4);
	tag_store_write_end(a, 1, 101 * TS_BLK, TS_BLK, false);
	cr_assert_eq(tag_gen(ts_peek(a, 1, 101)), 3);
	/* The old entry point is the default path. */
	{
		struct iovec iov = { .iov_base = buf + TS_BLK, .iov_len = TS_BLK };

		cr_assert_eq(tag_store_write_begin(a, 1, 101 * TS_BLK, &iov, 1), 0);
		tag_store_write_end(a, 1, 101 * TS_BLK, TS_BLK, true);
	}
	cr_assert_eq(tag_gen(ts_peek(a, 1, 101)), 4);
	/* Written where the format says, CRC and generation, and read back after a reopen. */
	ts_drop_cache(a);
	cr_assert_eq(ts_disk_tag(a, 1, 101), tag_make_meta(tag_crc(uuid, 1, 101, buf + TS_BLK), 4));
	ts_write(a, 1, 101, buf + TS_BLK, 1);
	cr_assert_eq(tag_gen(ts_peek(a, 1, 101)), 5);
	cr_assert_eq(ts_verify(a, 1, 100, buf, 3, NULL, 0, NULL), 0);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, with_generations_explicit_meta_words_are_honoured)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[2 * TS_BLK];
	const uint32_t g[3] = { 4, 5, 6 };
	uint32_t in[2], out[2];
	struct tag_rec rec = tag_rec_make(g, 3);
	uint8_t uuid[16];

	memcpy(uuid, a->uuid, 16);
	a->csum_gens = true;
	ts_fill(buf, 700, 2, 2);
	ts_write(a, 0, 700, buf, 2); /* both at 1 */
	/* A copy's max + 1, and a parity record; bit 31 of a word given is not the generation. */
	in[0] = 0x80000000u | 41;
	in[1] = tag_rec_encode(rec);
	cr_assert_eq(ts_begin_meta(a, 0, 700, buf, 2, in, out), 0);
	cr_assert_eq(out[0], 41);
	cr_assert_eq(out[1], tag_rec_encode(rec));
	tag_store_write_end(a, 0, 700 * TS_BLK, 2 * TS_BLK, true);
	cr_assert_eq(tag_gen(ts_peek(a, 0, 700)), 41);
	cr_assert(tag_rec_eq(tag_rec_of_tag(ts_peek(a, 0, 701)), rec));
	/* tag_store_set keeps the meta bits by default, and takes them from the caller. */
	cr_assert_eq(ts_set_tags(a, 0, 700, buf, 1), 0);
	cr_assert_eq(tag_gen(ts_peek(a, 0, 700)), 41);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = 2 * TS_BLK };

		in[0] = 17;
		in[1] = 0;
		cr_assert_eq(tag_store_set_meta(a, 0, 700 * TS_BLK, &iov, 1, in), 0);
	}
	cr_assert_eq(tag_gen(ts_peek(a, 0, 700)), 17);
	cr_assert_eq(tag_gen(ts_peek(a, 0, 701)), 0);
	cr_assert(tag_valid(ts_peek(a, 0, 701)));
	ts_drop_cache(a);
	cr_assert_eq(ts_disk_tag(a, 0, 700), tag_make_meta(tag_crc(uuid, 0, 700, buf), 17));
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, without_generations_the_meta_bits_stay_0_whatever_is_passed)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[2 * TS_BLK];
	uint32_t in[2] = { 41, 7 }, out[2] = { 9, 9 };
	uint8_t uuid[16];

	memcpy(uuid, a->uuid, 16);
	cr_assert(a->csum_gens, "a checksummed array keeps generations");
	a->csum_gens = false; /* as an array of format 1.5 opened read-only keeps it */
	ts_fill(buf, 30, 2, 3);
	ts_write(a, 2, 30, buf, 2);
	ts_write(a, 2, 30, buf, 2);
	cr_assert_eq(ts_peek(a, 2, 30), tag_make(tag_crc(uuid, 2, 30, buf)));
	cr_assert_eq(ts_begin_meta(a, 2, 30, buf, 2, in, out), 0);
	cr_assert_eq(out[0], 0);
	cr_assert_eq(out[1], 0);
	tag_store_write_end(a, 2, 30 * TS_BLK, 2 * TS_BLK, true);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = 2 * TS_BLK };

		cr_assert_eq(tag_store_set_meta(a, 2, 30 * TS_BLK, &iov, 1, in), 0);
	}
	ts_drop_cache(a);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(ts_disk_tag(a, 2, 30 + i),
			     tag_make(tag_crc(uuid, 2, 30 + i, buf + i * TS_BLK)), "block %u", i);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(tag_store, peek_answers_from_the_cache_only_and_peek_load_reads_the_tag_block)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK], new[TS_BLK];
	struct tag_peek p[3];
	uint64_t blk = TAGS_PER_BLOCK - 1; /* with the next two: across tag blocks 0 and 1 */
	uint8_t uuid[16];

	memcpy(uuid, a->uuid, 16);
	a->csum_gens = true;
	ts_fill(buf, blk, 1, 4);
	ts_write(a, 0, blk, buf, 1);
	ts_write(a, 0, blk, buf, 1);
	ts_drop_cache(a);
	memset(p, 0x5a, sizeof(p));
	cr_assert_eq(tag_store_peek(a, 0, blk, 3, p), -ENOENT);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert_not(p[i].cached);
		cr_assert_eq(p[i].tag, 0);
		cr_assert_eq(p[i].inflight, 0);
	}
	cr_assert_eq(tag_store_peek(a, 0, blk, 3, p), -ENOENT, "a peek reads nothing in");
	cr_assert_eq(tag_store_peek_load(a, 0, blk, 3, p), 0);
	cr_assert(p[0].cached && p[1].cached && p[2].cached);
	cr_assert_eq(p[0].tag, tag_make_meta(tag_crc(uuid, 0, blk, buf), 2));
	cr_assert_eq(p[1].tag, 0, "absent");
	cr_assert_eq(tag_store_peek(a, 0, blk, 3, p), 0, "now cached");
	cr_assert_eq(tag_gen(p[0].tag), 2);
	/* One tag block cached, the other not. */
	ts_drop_cache(a);
	cr_assert_eq(tag_store_peek_load(a, 0, blk + 1, 1, p), 0);
	cr_assert_eq(tag_store_peek(a, 0, blk, 2, p), -ENOENT);
	cr_assert_not(p[0].cached);
	cr_assert(p[1].cached);
	/* A write in flight: the committed tag, and the one it leaves when it ends well. */
	cr_assert_eq(tag_store_peek_load(a, 0, blk, 1, p), 0);
	ts_fill(new, blk, 1, 5);
	cr_assert_eq(ts_begin_meta(a, 0, blk, new, 1, NULL, NULL), 0);
	cr_assert_eq(tag_store_peek(a, 0, blk, 1, p), 0);
	cr_assert_eq(p[0].inflight, 1);
	cr_assert_eq(tag_gen(p[0].tag), 2);
	cr_assert_eq(p[0].next, tag_make_meta(tag_crc(uuid, 0, blk, new), 3));
	/* Both verify meanwhile, as before generations. */
	cr_assert_eq(ts_verify(a, 0, blk, buf, 1, NULL, 0, NULL), 0);
	cr_assert_eq(ts_verify(a, 0, blk, new, 1, NULL, 0, NULL), 0);
	tag_store_write_end(a, 0, blk * TS_BLK, TS_BLK, true);
	cr_assert_eq(tag_store_peek(a, 0, blk, 1, p), 0);
	cr_assert_eq(p[0].inflight, 0);
	cr_assert_eq(p[0].next, 0);
	cr_assert_eq(tag_gen(p[0].tag), 3);
	/* Outside the data area, or a role that is not there. */
	cr_assert_eq(tag_store_peek(a, 0, a->lay.member_bytes / TS_BLK, 1, p), -EINVAL);
	cr_assert_eq(tag_store_peek(a, 3, 0, 1, p), -EINVAL);
	cr_assert_eq(tag_store_peek_load(a, 0, UINT64_MAX, 1, p), -EINVAL);
	cr_assert_eq(graid_array_close(a), 0);
}

/*
 * The span flag (docs/INTEGRITY.md, "The span flag"): a load, a verify and a write leave it
 * clear; only tag_store_span_mark() sets it, for every block of the tag block's span and only
 * on the entry its token names; writes keep it; a tag block evicted and read again is a new
 * entry, clear, which an old token no longer marks.
 */
Test(tag_store, the_span_flag_is_set_by_a_mark_only_and_cleared_by_a_reload)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];
	struct tag_span sp, again;
	uint64_t old;

	a->csum_gens = true;
	ts_fill(buf, 5, 1, 7);
	ts_drop_cache(a);
	cr_assert_eq(tag_store_span(a, 0, 5, false, &sp), -ENOENT, "not cached, not loaded");
	cr_assert_eq(tag_store_span(a, 0, 5, true, &sp), 0);
	cr_assert_not(sp.checked, "a load leaves it clear");
	ts_write(a, 0, 5, buf, 1);
	cr_assert_eq(ts_verify(a, 0, 5, buf, 1, NULL, 0, NULL), 0);
	cr_assert_eq(tag_store_span(a, 0, 5, false, &again), 0);
	cr_assert_not(again.checked, "a write and a verify leave it clear");
	cr_assert_eq(again.token, sp.token, "the same entry");
	cr_assert(tag_store_span_mark(a, 0, 300, sp.token), "any block of the span marks it");
	cr_assert_eq(tag_store_span(a, 0, 0, false, &again), 0);
	cr_assert(again.checked);
	cr_assert_eq(tag_store_span(a, 0, TAGS_PER_BLOCK - 1, false, &again), 0);
	cr_assert(again.checked, "the whole span");
	cr_assert_eq(tag_store_span(a, 0, TAGS_PER_BLOCK, true, &again), 0);
	cr_assert_not(again.checked, "the next span is another tag block");
	cr_assert_eq(tag_store_span(a, 1, 5, true, &again), 0);
	cr_assert_not(again.checked, "another role's");
	ts_write(a, 0, 5, buf, 1);
	cr_assert_eq(tag_store_span(a, 0, 5, false, &again), 0);
	cr_assert(again.checked, "a write keeps it (it keeps the generations consistent)");

	/* One tag block a role: the next load evicts the entry, a reload is a new one. */
	setenv("GRAID_TAG_CACHE_BYTES", "1", 1);
	ts_drop_cache(a);
	cr_assert_eq(tag_store_span(a, 0, 5, true, &sp), 0);
	cr_assert_not(sp.checked, "reloaded from the member: clear (the flag is never stored)");
	old = sp.token;
	cr_assert_eq(tag_store_span(a, 0, TAGS_PER_BLOCK, true, &again), 0);
	cr_assert_eq(tag_store_span(a, 0, 5, false, &again), -ENOENT, "evicted");
	cr_assert_not(tag_store_span_mark(a, 0, 5, old), "nothing cached to mark");
	cr_assert_eq(tag_store_span(a, 0, 5, true, &sp), 0);
	cr_assert_not(sp.checked);
	cr_assert_neq(sp.token, old, "a new entry, a new token");
	cr_assert_not(tag_store_span_mark(a, 0, 5, old), "a check of the old entry marks nothing");
	cr_assert_eq(tag_store_span(a, 0, 5, false, &again), 0);
	cr_assert_not(again.checked);
	cr_assert(tag_store_span_mark(a, 0, 5, sp.token));
	cr_assert_eq(tag_store_span(a, 0, 5, false, &again), 0);
	cr_assert(again.checked);
	unsetenv("GRAID_TAG_CACHE_BYTES");
	ts_drop_cache(a);

	/* Outside the data area; without generations there is no flag. */
	cr_assert_eq(tag_store_span(a, 0, a->lay.member_bytes / TS_BLK, true, &sp), -EINVAL);
	cr_assert_not(tag_store_span_mark(a, 0, a->lay.member_bytes / TS_BLK, 1));
	a->csum_gens = false;
	cr_assert_eq(tag_store_span(a, 0, 5, true, &sp), -EOPNOTSUPP);
	cr_assert_eq(graid_array_close(a), 0);
}

TestSuite(checksums_create, .init = ts_setup, .fini = ts_teardown, .timeout = 120);

Test(checksums_create, raid0_with_checksums_is_refused_and_nothing_is_written)
{
	struct graid_array *a = NULL;
	uint64_t h[3];

	for (unsigned i = 0; i < 3; i++)
		h[i] = au_file_hash(ts_set.paths[i]);
	cr_assert_eq(ts_create(0, GRAID_CREATE_CHECKSUMS, &a), -EINVAL);
	cr_assert_null(a);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(ts_set.paths[i]), h[i], "member %u changed", i);
}

static uint32_t ts_info_checksums(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info), .checksums = 7 };

	cr_assert_eq(graid_array_info(a, &info), 0);
	return info.checksums;
}

Test(checksums_create, info_says_checksums_on_a_checksummed_array_only)
{
	struct graid_array *a = NULL;
	struct graid_array_info old = { .struct_size = offsetof(struct graid_array_info,
								 checksums) };

	cr_assert_eq(ts_create(5, GRAID_CREATE_CHECKSUMS, &a), 0);
	cr_assert_eq(ts_info_checksums(a), 1);
	/* A caller built before the field gets no byte past its struct. */
	cr_assert_eq(graid_array_info(a, &old), 0);
	cr_assert_eq(old.struct_size, offsetof(struct graid_array_info, checksums));
	cr_assert_eq(graid_array_close(a), 0);
	a = ts_open();
	cr_assert_eq(ts_info_checksums(a), 1);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(ts_create(5, GRAID_CREATE_FORCE, &a), 0);
	cr_assert_eq(ts_info_checksums(a), 0);
	cr_assert_null(a->tags);
	cr_assert_eq(graid_array_close(a), 0);
}

/* Member @p i's superblock, its major and minor rewritten and the CRC made right again. */
static void ts_patch_version(unsigned i, uint16_t major, uint16_t minor, uint32_t clear_flags)
{
	uint8_t buf[GRAID_SB_SIZE];
	uint32_t flags, crc;
	int fd = open(ts_set.paths[i], O_RDWR);

	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	buf[0x08] = (uint8_t)major;
	buf[0x09] = (uint8_t)(major >> 8);
	buf[0x0a] = (uint8_t)minor;
	buf[0x0b] = (uint8_t)(minor >> 8);
	memcpy(&flags, buf + 0x14, 4);
	flags &= ~clear_flags;
	memcpy(buf + 0x14, &flags, 4);
	crc = sb_checksum(buf);
	memcpy(buf + 0x0c, &crc, 4);
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
}

Test(checksums_create, an_array_without_checksums_stays_major_1_and_a_minor_4_one_opens)
{
	struct graid_array *a = NULL;
	uint8_t buf[16];
	int fd;

	cr_assert_eq(ts_create(5, 0, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	fd = open(ts_set.paths[0], O_RDONLY);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(buf[0x08] | buf[0x09] << 8, 1);
	cr_assert_eq(buf[0x0a] | buf[0x0b] << 8, GRAID_SB_VERSION_MINOR);
	/* As a writer of format 1.4 left them. */
	for (unsigned i = 0; i < 3; i++)
		ts_patch_version(i, 1, 4, 0);
	a = ts_open();
	cr_assert_eq(ts_info_checksums(a), 0);
	cr_assert_null(a->tags);
	cr_assert_eq(graid_array_close(a), 0);
}

Test(checksums_create, a_checksummed_superblock_claiming_major_1_is_refused)
{
	struct graid_array *a = NULL;
	struct superblock sb;
	uint8_t buf[GRAID_SB_SIZE];
	int fd;

	cr_assert_eq(ts_create(5, GRAID_CREATE_CHECKSUMS, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	ts_patch_version(0, 1, 5, 0);
	fd = open(ts_set.paths[0], O_RDONLY);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(sb_decode(buf, &sb), -EPROTO);
	/* Major 2 without the flag that needs it: nonsense too. */
	ts_patch_version(1, 2, 5, GRAID_SB_F_CHECKSUMS);
	fd = open(ts_set.paths[1], O_RDONLY);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(sb_decode(buf, &sb), -EPROTO);
}

/*
 * Tag blocks whose numbers are the bucket count apart share a hash chain (tag_store.c takes
 * the number as it is): more tag blocks than buckets, fewer cached than there are, so that
 * blocks are found down a chain, evicted from its middle and read back in.
 */
#define TS_CHAIN_BLOCKS 20u /* tag blocks touched per role: 16 buckets, chains of two */
#define TS_CHAIN_MEMBER_BYTES ((1u << 20) + (TS_CHAIN_BLOCKS * 2u << 20) + (128u << 10))

static void ts_chain_setup(void)
{
	au_make(&ts_set, 3, TS_CHAIN_MEMBER_BYTES);
	/* 16 blocks per role: 16 buckets, and eviction before all 20 are in. */
	setenv("GRAID_TAG_CACHE_BYTES", "196608", 1);
}

static void ts_chain_teardown(void)
{
	unsetenv("GRAID_TAG_CACHE_BYTES");
	au_remove(&ts_set);
}

TestSuite(tag_store_chains, .init = ts_chain_setup, .fini = ts_chain_teardown, .timeout = 120);

Test(tag_store_chains, tag_blocks_sharing_a_bucket_are_kept_apart_through_eviction)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK], pend[TS_BLK];
	/* A data block in tag block k, at a slot that differs from k's neighbours'. */
#define TS_CHAIN_BLK(k) ((uint64_t)(k) * TAGS_PER_BLOCK + 7u + (k))

	/* Meta words 0 on disk below, as the test compares with tag_make(): no generations. */
	a->csum_gens = false;
	cr_assert_geq(a->lay.member_bytes, (TS_CHAIN_BLK(TS_CHAIN_BLOCKS - 1) + 1) * TS_BLK);
	/* Tag block 16 (bucket 0's second) pinned by a write in flight through all below. */
	ts_fill(pend, TS_CHAIN_BLK(16), 1, 4);
	cr_assert_eq(ts_begin(a, 1, TS_CHAIN_BLK(16), pend), 0);
	for (unsigned round = 0; round < 2; round++)
		for (unsigned k = 0; k < TS_CHAIN_BLOCKS; k++) {
			if (k == 16)
				continue;
			ts_fill(buf, TS_CHAIN_BLK(k), 1, 3);
			cr_assert_eq(ts_set_tags(a, 1, TS_CHAIN_BLK(k), buf, 1), 0);
		}
	/* Each block answers with its own tag, not its chain neighbour's, in either order. */
	for (unsigned i = 0; i < 2 * TS_CHAIN_BLOCKS; i++) {
		unsigned k = i % 2 ? TS_CHAIN_BLOCKS - 1 - i / 2 : i / 2;

		if (k == 16)
			continue;
		ts_fill(buf, TS_CHAIN_BLK(k), 1, 3);
		cr_assert_eq(ts_verify(a, 1, TS_CHAIN_BLK(k), buf, 1, NULL, 0, NULL), 0,
			     "tag block %u", k);
		/* Checked, not passed as absent: a neighbour's tag block has no tag there. */
		buf[100] ^= 2;
		cr_assert_eq(ts_verify(a, 1, TS_CHAIN_BLK(k), buf, 1, NULL, 0, NULL), -EBADMSG,
			     "tag block %u", k);
	}
	/* The pinned block kept its pending tag through it all; its end makes it the tag. */
	tag_store_write_end(a, 1, TS_CHAIN_BLK(16) * TS_BLK, TS_BLK, true);
	cr_assert_eq(ts_verify(a, 1, TS_CHAIN_BLK(16), pend, 1, NULL, 0, NULL), 0);
	pend[9] ^= 4;
	cr_assert_eq(ts_verify(a, 1, TS_CHAIN_BLK(16), pend, 1, NULL, 0, NULL), -EBADMSG);
	/* Each tag where the format puts it: the cache did not file one under another block. */
	cr_assert_eq(tag_store_flush(a), 0);
	for (unsigned k = 0; k < TS_CHAIN_BLOCKS; k++) {
		ts_fill(buf, TS_CHAIN_BLK(k), 1, k == 16 ? 4 : 3);
		cr_assert_eq(ts_disk_tag(a, 1, TS_CHAIN_BLK(k)),
			     tag_make(tag_crc(a->uuid, 1, TS_CHAIN_BLK(k), buf)), "tag block %u",
			     k);
	}
	/* What eviction wrote out and a reopen reads back is the same. */
	cr_assert_eq(graid_array_close(a), 0);
	a = ts_open();
	for (unsigned k = 0; k < TS_CHAIN_BLOCKS; k++) {
		if (k == 16)
			continue;
		ts_fill(buf, TS_CHAIN_BLK(k), 1, 3);
		cr_assert_eq(ts_verify(a, 1, TS_CHAIN_BLK(k), buf, 1, NULL, 0, NULL), 0,
			     "tag block %u after reopen", k);
	}
	cr_assert_eq(graid_array_close(a), 0);
#undef TS_CHAIN_BLK
}

/*
 * tag_store_prefetch() is a hint: it finds a cached tag block and asks for its lines, and
 * nothing else. Sixteen blocks cached per role (the chain suite's budget), each put in by a
 * miss, so none has its second chance: the next miss evicts the oldest, whose dirty tags
 * then appear on disk. A prefetch that counted as a use (the reference bit) or that read a
 * tag block in (a miss, evicting another) shows as a different block written out.
 */
#define TS_PF_BLK(k) ((uint64_t)(k) * TAGS_PER_BLOCK + 3u)

static void ts_pf_fill_cache(struct graid_array *a, uint8_t *buf)
{
	for (unsigned k = 0; k < 16; k++) {
		ts_fill(buf, TS_PF_BLK(k), 1, 3);
		cr_assert_eq(ts_set_tags(a, 1, TS_PF_BLK(k), buf, 1), 0);
	}
	for (unsigned k = 0; k < 16; k++)
		cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(k)), 0, "tag block %u cached, not written",
			     k);
}

static tag_t ts_pf_tag(struct graid_array *a, uint8_t *buf, unsigned k)
{
	ts_fill(buf, TS_PF_BLK(k), 1, 3);
	return tag_make(tag_crc(a->uuid, 1, TS_PF_BLK(k), buf));
}

Test(tag_store_chains, a_prefetch_neither_reads_a_tag_block_in_nor_gives_one_a_second_chance)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];

	ts_pf_fill_cache(a, buf);
	/* The oldest block, a range into the next tag block, an uncached one, and nonsense. */
	tag_store_prefetch(a, 1, TS_PF_BLK(0) * TS_BLK, TS_BLK);
	tag_store_prefetch(a, 1, TS_PF_BLK(0) * TS_BLK, (uint64_t)TAGS_PER_BLOCK * TS_BLK);
	tag_store_prefetch(a, 1, TS_PF_BLK(17) * TS_BLK, 8 * TS_BLK);
	tag_store_prefetch(a, 1, TS_PF_BLK(0) * TS_BLK, 0);
	tag_store_prefetch(a, 1, TS_PF_BLK(0) * TS_BLK + 512, TS_BLK);
	tag_store_prefetch(a, 7, 0, TS_BLK);
	tag_store_prefetch(a, 1, a->lay.member_bytes, TS_BLK);
	/* Nothing was read in: nothing was evicted to make room. */
	for (unsigned k = 0; k < 16; k++)
		cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(k)), 0, "tag block %u, prefetches", k);
	/* The next miss evicts the oldest block, prefetched or not. */
	ts_fill(buf, TS_PF_BLK(16), 1, 3);
	cr_assert_eq(ts_set_tags(a, 1, TS_PF_BLK(16), buf, 1), 0);
	cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(0)), ts_pf_tag(a, buf, 0));
	cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(1)), 0);
	/* And its tags are still checked as ever. */
	ts_fill(buf, TS_PF_BLK(0), 1, 3);
	cr_assert_eq(ts_verify(a, 1, TS_PF_BLK(0), buf, 1, NULL, 0, NULL), 0);
	buf[5] ^= 1;
	cr_assert_eq(ts_verify(a, 1, TS_PF_BLK(0), buf, 1, NULL, 0, NULL), -EBADMSG);
	cr_assert_eq(graid_array_close(a), 0);
}

/* The same with a verify where the prefetch was: a use, so the block after it goes instead. */
Test(tag_store_chains, a_verify_where_the_prefetch_was_gives_the_block_its_second_chance)
{
	struct graid_array *a = ts_created();
	static uint8_t buf[TS_BLK];

	ts_pf_fill_cache(a, buf);
	ts_fill(buf, TS_PF_BLK(0), 1, 3);
	cr_assert_eq(ts_verify(a, 1, TS_PF_BLK(0), buf, 1, NULL, 0, NULL), 0);
	ts_fill(buf, TS_PF_BLK(16), 1, 3);
	cr_assert_eq(ts_set_tags(a, 1, TS_PF_BLK(16), buf, 1), 0);
	cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(0)), 0);
	cr_assert_eq(ts_disk_tag(a, 1, TS_PF_BLK(1)), ts_pf_tag(a, buf, 1));
	cr_assert_eq(graid_array_close(a), 0);
}
#undef TS_PF_BLK
