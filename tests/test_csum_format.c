/* SPDX-License-Identifier: MIT */
/*
 * The checksummed format's edges at create and assembly: member sizes that are no multiple
 * of a chunk, a member short of its tag area only, a member that disagrees on the flag, a
 * spare too small for the tag area, and a member verified by the rule in docs/FORMAT.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "array/array.h"
#include "arrayutil.h"
#include "format/superblock.h"
#include "format/tag_format.h"

#define CF_CHUNK 65536u
#define CF_BLK 4096u

static struct au_set cf_set;

static void cf_teardown(void)
{
	au_remove(&cf_set);
}

static int cf_create(unsigned n, int level, uint32_t chunk, struct graid_array **out)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = level, .chunk_bytes = chunk,
		.backend = "isal", .flags = GRAID_CREATE_CHECKSUMS,
	};

	return graid_array_create(cf_set.paths, n, &cfg, out);
}

static uint64_t cf_size(unsigned i)
{
	struct stat st;

	cr_assert_eq(stat(cf_set.path[i], &st), 0);
	return (uint64_t)st.st_size;
}

static void cf_pread(unsigned i, void *buf, size_t len, uint64_t off)
{
	int fd = open(cf_set.path[i], O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, len, (off_t)off), (ssize_t)len);
	close(fd);
}

static struct superblock cf_sb(unsigned i)
{
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb;

	cf_pread(i, buf, sizeof(buf), 0);
	cr_assert_eq(sb_decode(buf, &sb), 0, "member %u's superblock", i);
	return sb;
}

static struct graid_given_info cf_given(struct graid_array *a, unsigned idx)
{
	struct graid_given_info g = { .struct_size = sizeof(g) };

	cr_assert_eq(graid_array_given_info(a, idx, &g), 0);
	return g;
}

static int cf_state(struct graid_array *a, unsigned role)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, role, &mi), 0);
	return mi.state;
}

static void cf_fill(uint8_t *p, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = (seed + i) * 0x9E3779B97F4A7C15ull;

		memcpy(p + i, &v, 8);
	}
}

TestSuite(csum_format, .fini = cf_teardown, .timeout = 120);

/*
 * Members of unequal sizes, none a multiple of 4096, a chunk or 2 MiB: the data area is
 * whole chunks, its tag area follows it and ends inside the smallest member, and the
 * superblock's derivation gives the same place.
 */
Test(csum_format, odd_member_sizes_keep_the_tag_area_inside_the_smallest)
{
	static const uint64_t sizes[] = { (9u << 20) + 12345, (10u << 20) + 4097,
					  (11u << 20) - 1, (9u << 20) + 777777 };
	uint64_t smallest = UINT64_MAX;
	struct graid_array *a = NULL;

	au_make(&cf_set, 4, 1u << 20);
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(truncate(cf_set.path[i], (off_t)sizes[i]), 0);
		smallest = sizes[i] < smallest ? sizes[i] : smallest;
	}
	cr_assert_eq(cf_create(4, 6, CF_CHUNK, &a), 0);
	cr_assert_eq(a->lay.member_bytes % CF_CHUNK, 0);
	cr_assert_eq(a->tag_offset, a->data_offset + a->lay.member_bytes);
	cr_assert_eq(a->tag_bytes, tag_area_bytes(a->lay.member_bytes));
	cr_assert_leq(a->tag_offset + a->tag_bytes, smallest);
	/* Not more than one chunk and one tag block given up to the tags. */
	cr_assert_gt(a->tag_offset + a->tag_bytes + CF_CHUNK + CF_BLK, smallest - 4095,
		     "data area %llu of %llu usable", (unsigned long long)a->lay.member_bytes,
		     (unsigned long long)(smallest - a->data_offset));
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 4; i++) {
		struct superblock sb = cf_sb(i);

		cr_assert_eq(sb.version, 3); /* GRAID_SB_VERSION_MAJOR_FEATURES: GENERATIONS */
		cr_assert(sb.flags & GRAID_SB_F_GENERATIONS);
		cr_assert_eq(sb.tag_offset + sb.tag_bytes, sb_member_end(&sb));
		cr_assert_leq(sb_member_end(&sb), cf_size(i));
	}
}

/*
 * A member one tag block short of its tag area's end, its data area whole (a device that
 * comes back smaller by less than the tag area): its tags are gone, so it is left out as
 * shrunk and its role recorded failed; the array opens degraded and reads right.
 */
Test(csum_format, a_member_short_of_its_tag_area_only_is_left_out_as_shrunk)
{
	struct graid_array *a = NULL;
	uint64_t end, size;
	uint8_t *w = malloc(1u << 20), *r = malloc(1u << 20);

	au_make(&cf_set, 3, (17u << 20) + (64u << 10));
	cr_assert_eq(cf_create(3, 5, CF_CHUNK, &a), 0);
	cf_fill(w, 1u << 20, 5);
	cr_assert_eq(graid_array_write(a, w, 1u << 20, 0), 1 << 20);
	end = a->tag_offset + a->tag_bytes;
	cr_assert_eq(graid_array_close(a), 0);
	size = end - CF_BLK;
	cr_assert_eq(truncate(cf_set.path[1], (off_t)size), 0);
	cr_assert_eq(graid_array_open(cf_set.paths, 3, NULL, &a), 0);
	cr_assert_eq(cf_given(a, 1).verdict, GRAID_GIVEN_SHRUNK);
	cr_assert_eq(cf_state(a, 1), GRAID_MEMBER_FAILED);
	cr_assert_eq(graid_array_read(a, r, 1u << 20, 0), 1 << 20);
	cr_assert_eq(memcmp(r, w, 1u << 20), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Nothing wrote past where it ends now. */
	cr_assert_eq(cf_size(1), size);
	free(w);
	free(r);
}

/* Member @p i's superblock rewritten as major 1 without the flag, its CRC made right. */
static void cf_drop_flag(unsigned i)
{
	uint8_t buf[GRAID_SB_SIZE];
	uint32_t flags, crc;
	int fd = open(cf_set.path[i], O_RDWR);

	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	buf[0x08] = 1;
	buf[0x09] = 0;
	memcpy(&flags, buf + 0x14, 4);
	flags &= ~GRAID_SB_F_CHECKSUMS;
	memcpy(buf + 0x14, &flags, 4);
	crc = sb_checksum(buf);
	memcpy(buf + 0x0c, &crc, 4);
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
}

/*
 * A member that says the array has no checksums, among members that say it has: it is not
 * assembled with them (its role is out); the array keeps its checksums.
 */
Test(csum_format, a_member_without_the_flag_is_not_assembled_with_checksummed_ones)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a = NULL;

	au_make(&cf_set, 3, (17u << 20) + (64u << 10));
	cr_assert_eq(cf_create(3, 5, CF_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cf_drop_flag(2);
	cr_assert_eq(cf_sb(2).flags & GRAID_SB_F_CHECKSUMS, 0);
	cr_assert_eq(graid_array_open(cf_set.paths, 3, NULL, &a), 0);
	cr_assert_eq(cf_given(a, 2).verdict, GRAID_GIVEN_GEOMETRY);
	cr_assert_neq(cf_state(a, 2), GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.checksums, 1);
	cr_assert_eq(graid_array_close(a), 0);
}

/*
 * A spare that holds the data area but not the tag area after it is refused, unchanged;
 * one that holds both is taken.
 */
Test(csum_format, a_spare_short_of_the_tag_area_is_refused_unchanged)
{
	struct graid_array *a = NULL;
	uint8_t before[8192], after[8192];
	uint64_t end;

	au_make(&cf_set, 4, (17u << 20) + (64u << 10));
	cr_assert_eq(cf_create(3, 5, CF_CHUNK, &a), 0);
	end = a->tag_offset + a->tag_bytes;
	cr_assert_eq(truncate(cf_set.path[3], (off_t)(end - CF_BLK)), 0);
	cf_fill(before, sizeof(before), 9);
	{
		int fd = open(cf_set.path[3], O_WRONLY);

		cr_assert_eq(pwrite(fd, before, sizeof(before), 0), (ssize_t)sizeof(before));
		close(fd);
	}
	cr_assert_eq(graid_array_add_spare(a, cf_set.path[3]), -EINVAL);
	cf_pread(3, after, sizeof(after), 0);
	cr_assert_eq(memcmp(before, after, sizeof(before)), 0, "the refused spare was written");
	cr_assert_eq(truncate(cf_set.path[3], (off_t)end), 0);
	cr_assert_eq(graid_array_add_spare(a, cf_set.path[3]), 0);
	cr_assert_eq(graid_array_close(a), 0);
}

/*
 * A member verified without the library, by FORMAT.md's rule alone: after a clean close,
 * every block written has a valid tag at the place the rule gives, holding the CRC of key
 * and data; blocks never written have absent tags.
 */
Test(csum_format, a_clean_member_verifies_by_the_documented_rule)
{
	struct graid_array *a = NULL;
	uint8_t *w = malloc(4u << 20), data[CF_BLK], tagb[TAG_BYTES];
	unsigned valid = 0, absent = 0;
	struct superblock sb;

	au_make(&cf_set, 2, (9u << 20) + 99999);
	cr_assert_eq(cf_create(2, 1, CF_CHUNK, &a), 0);
	cf_fill(w, 4u << 20, 3);
	cr_assert_eq(graid_array_write(a, w, 4u << 20, 0), 4 << 20);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned m = 0; m < 2; m++) {
		sb = cf_sb(m);
		cr_assert(sb.flags & GRAID_SB_F_CLEAN);
		for (uint64_t b = 0; b < sb.data_bytes / CF_BLK; b++) {
			uint64_t at = sb.data_offset + sb.data_bytes + CF_BLK * (b / 512) +
				      8 * (b % 512);
			uint32_t crc, meta;

			cf_pread(m, tagb, sizeof(tagb), at);
			memcpy(&crc, tagb, 4);
			memcpy(&meta, tagb + 4, 4);
			crc = le32toh(crc);
			meta = le32toh(meta);
			if (!(meta & 0x80000000u)) {
				absent++;
				cr_assert_geq(b, (4u << 20) / CF_BLK, "block %llu written, no tag",
					      (unsigned long long)b);
				continue;
			}
			valid++;
			cf_pread(m, data, sizeof(data), sb.data_offset + CF_BLK * b);
			cr_assert_eq(crc, tag_crc(sb.array_uuid, sb.role, b, data),
				     "member %u block %llu", m, (unsigned long long)b);
		}
	}
	cr_assert_eq(valid, 2 * ((4u << 20) / CF_BLK));
	cr_assert_gt(absent, 0);
	free(w);
}

static char cf_log[8][512];
static unsigned cf_nlog;

static void cf_log_fn(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= GRAID_LOG_ERR && cf_nlog < 8)
		snprintf(cf_log[cf_nlog++], sizeof(cf_log[0]), "%s", msg);
}

/*
 * A member with room for the metadata and one chunk but not the chunk's tags: refused by
 * the size check, whose message gives the size a checksummed member needs (the chunk's tag
 * block included); with that size the create succeeds.
 */
Test(csum_format, a_member_too_small_for_one_chunk_and_its_tags_is_named_with_the_size_needed)
{
	const uint64_t data_offset = 1u << 20, need = data_offset + CF_CHUNK + CF_BLK;
	struct graid_array *a = NULL;
	char want[64];
	bool named = false;

	au_make(&cf_set, 2, need - CF_BLK);
	cf_nlog = 0;
	graid_log_set(cf_log_fn, NULL, GRAID_LOG_ERR);
	cr_assert_eq(cf_create(2, 1, CF_CHUNK, &a), -EINVAL);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_null(a);
	snprintf(want, sizeof(want), "at least %llu bytes", (unsigned long long)need);
	for (unsigned i = 0; i < cf_nlog; i++)
		named |= strstr(cf_log[i], want) && strstr(cf_log[i], "too small") &&
			 strstr(cf_log[i], "tag");
	cr_assert(named, "no log line says the member is too small, needing %s with tags "
		  "(first: %s)", want, cf_nlog ? cf_log[0] : "none");
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(truncate(cf_set.path[i], (off_t)need), 0);
	cr_assert_eq(cf_create(2, 1, CF_CHUNK, &a), 0);
	cr_assert_eq(a->lay.member_bytes, CF_CHUNK);
	cr_assert_eq(graid_array_close(a), 0);
}
