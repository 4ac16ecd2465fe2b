/* SPDX-License-Identifier: MIT */
/* Writes the seed corpus in corpus/: valid superblocks and crafted bad ones, one per flaw. */
/*
 * Run once by hand from the repository root, and commit what it writes:
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude -Ilib/core tests/fuzz/gen_corpus.c lib/core/format/superblock.c \
 *      lib/core/format/layout.c lib/core/format/tag_format.c -lisal -o /tmp/gen_corpus && /tmp/gen_corpus tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "format/superblock.h"

static const char *gen_dir;

static struct superblock gen_valid(void)
{
	struct superblock sb;

	memset(&sb, 0, sizeof(sb));
	sb.version = GRAID_SB_VERSION_MAJOR;
	for (unsigned i = 0; i < 16; i++) {
		sb.array_uuid[i] = (uint8_t)(0xa0 + i);
		sb.member_uuid[i] = (uint8_t)(0x50 + i);
	}
	sb.array_uuid[6] = 0x4a;
	sb.member_uuid[6] = 0x45;
	sb.level = 6;
	sb.chunk_bytes = 65536;
	sb.nmembers = 6;
	sb.role = 2;
	sb.block_size = 4096;
	sb.data_offset = GRAID_SB_DEFAULT_DATA_OFFSET;
	sb.data_bytes = 1ull << 34;
	sb.ctime = 1700000000;
	sb.events = 42;
	sb.flags = GRAID_SB_F_CLEAN;
	sb.bitmap_offset = 8192;
	sb.bitmap_bytes = 65536;
	sb.log_offset = 131072;
	sb.log_bytes = 262144;
	sb.member_state[5] = GRAID_MEMBER_REBUILDING;
	sb.rebuild_offset = 1ull << 30;
	return sb;
}

static int gen_write(const char *name, const void *buf, size_t len)
{
	char path[1024];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", gen_dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		return 1;
	}
	return 0;
}

static int gen_sb(const char *name, const struct superblock *sb)
{
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(sb, buf);
	return gen_write(name, buf, sizeof(buf));
}

/* Patch raw bytes of a valid superblock, then make the CRC right again (or not). */
static int gen_raw(const char *name, size_t at, const void *bytes, size_t n, int reseal)
{
	struct superblock sb = gen_valid();
	uint8_t buf[GRAID_SB_SIZE];

	sb_encode(&sb, buf);
	memcpy(buf + at, bytes, n);
	if (reseal) {
		uint32_t crc = sb_checksum(buf);

		for (unsigned i = 0; i < 4; i++)
			buf[0x0c + i] = (uint8_t)(crc >> (8 * i));
	}
	return gen_write(name, buf, sizeof(buf));
}

int main(int argc, char **argv)
{
	struct superblock sb;
	uint8_t buf[GRAID_SB_SIZE];
	int err = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	gen_dir = argv[1];

	sb = gen_valid();
	err |= gen_sb("valid_raid6.bin", &sb);
	sb = gen_valid();
	sb.level = 1;
	sb.nmembers = 2;
	sb.role = 3;
	sb.member_state[3] = GRAID_MEMBER_SPARE;
	sb.member_state[5] = 0;
	err |= gen_sb("valid_raid1_spare.bin", &sb);
	sb = gen_valid();
	sb.level = 10;
	sb.nmembers = 3;
	sb.chunk_bytes = 4096;
	sb.block_size = 512;
	sb.member_state[5] = 0;
	sb.bitmap_offset = sb.bitmap_bytes = sb.log_offset = sb.log_bytes = 0;
	err |= gen_sb("valid_raid10_odd.bin", &sb);
	/* Major 3: a reshape recorded; its record's area at 512 KiB must stay free. */
	sb = gen_valid();
	sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
	sb.flags |= GRAID_SB_F_RESHAPE;
	err |= gen_sb("valid_reshape.bin", &sb);
	sb.log_bytes = 524288;
	err |= gen_sb("reshape_area_taken.bin", &sb);
	/* Major 3 with GENERATIONS: valid with CHECKSUMS (its tag area derived), not without. */
	sb = gen_valid();
	sb.version = GRAID_SB_VERSION_MAJOR_FEATURES;
	sb.flags |= GRAID_SB_F_CHECKSUMS | GRAID_SB_F_GENERATIONS;
	sb.block_size = 4096;
	sb_tag_area(sb.flags, sb.data_offset, sb.data_bytes, &sb.tag_offset, &sb.tag_bytes);
	err |= gen_sb("valid_generations.bin", &sb);
	sb.flags &= ~GRAID_SB_F_CHECKSUMS;
	sb.tag_offset = sb.tag_bytes = 0;
	err |= gen_sb("generations_no_checksums.bin", &sb);

	err |= gen_raw("bad_crc.bin", 0x0c, "\x00\x00\x00\x00", 4, 0);
	err |= gen_raw("bad_magic.bin", 0, "GRAIDSB1", 8, 1);
	err |= gen_raw("major_2.bin", 0x08, "\x02\x00", 2, 1);
	err |= gen_raw("major_3_no_feature.bin", 0x08, "\x03\x00", 2, 1);
	err |= gen_raw("minor_future.bin", 0x0a, "\x09\x00", 2, 1);  /* valid */
	err |= gen_raw("sb_bytes_8192.bin", 0x10, "\x00\x20\x00\x00", 4, 1);
	err |= gen_raw("level_minus1.bin", 0x38, "\xff\xff\xff\xff", 4, 1);
	err |= gen_raw("chunk_not_pow2.bin", 0x3c, "\x00\x30\x00\x00", 4, 1);
	err |= gen_raw("nmembers_0.bin", 0x40, "\x00\x00\x00\x00", 4, 1);
	err |= gen_raw("nmembers_300.bin", 0x40, "\x2c\x01\x00\x00", 4, 1);
	err |= gen_raw("role_ge_nmembers.bin", 0x44, "\x06\x00\x00\x00", 4, 1);
	err |= gen_raw("block_size_1024.bin", 0x48, "\x00\x04\x00\x00", 4, 1);
	err |= gen_raw("data_offset_unaligned.bin", 0x50, "\x00\x02\x10\x00", 4, 1);
	err |= gen_raw("data_offset_overflow.bin", 0x50,
		       "\x00\xf0\xff\xff\xff\xff\xff\xff", 8, 1);
	err |= gen_raw("rebuild_past_end.bin", 0x70, "\x00\x00\x00\x00\x08", 5, 1);
	err |= gen_raw("bitmap_into_data.bin", 0x80, "\x00\x00\x20\x00", 4, 1);
	err |= gen_raw("log_overlaps_bitmap.bin", 0x88, "\x00\x40\x00\x00", 4, 1);
	err |= gen_raw("member_state_9.bin", 0x100, "\x09", 1, 1);
	err |= gen_raw("spare_in_layout_slot.bin", 0x101, "\x04", 1, 1);

	memset(buf, 0xff, sizeof(buf));
	err |= gen_write("all_ff.bin", buf, sizeof(buf));
	sb_encode(&(struct superblock){ 0 }, buf);
	err |= gen_write("zero_fields.bin", buf, sizeof(buf));
	sb = gen_valid();
	sb_encode(&sb, buf);
	err |= gen_write("truncated_100.bin", buf, 100);
	return err;
}
