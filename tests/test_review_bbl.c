/* SPDX-License-Identifier: MIT */
/*
 * Review of the bad-block log (format 1.4): scenarios that break a promise of graid.h,
 * docs/ARRAYS.md or docs/FORMAT.md. Each test asserts the promised behaviour; a failing
 * one is a finding. Linked statically to rewrite superblocks as an older writer would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "healutil.h"
#include "testutil.h"

#include "format/superblock.h"

#define RV_CHUNK (64u * 1024)

struct rv_bed {
	struct au_set s;
	char spec[4][400];
	const char *paths[AU_MAX];
	const char *plain[AU_MAX];
	uint64_t size;
	unsigned n;
	struct graid_array *a;
};

/*
 * RAID-@p level of @p n members, 64 KiB chunks, round 1 everywhere; reopened with member
 * @p faulty given @p opt; role @p role failed, replaced by a new file and rebuilt.
 */
static void rv_rebuild_past(struct rv_bed *b, int level, unsigned n, unsigned faulty,
			    const char *opt, unsigned role)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	char *newpath;

	tu_need_fault_injection();
	memset(b, 0, sizeof(*b));
	b->n = n;
	au_make(&b->s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&b->s, n, level, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	heal_fill(a, b->size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(b->paths, b->s.paths, sizeof(b->paths));
	snprintf(b->spec[0], sizeof(b->spec[0]), "faulty:%s:%s", opt, b->s.path[faulty]);
	b->paths[faulty] = b->spec[0];
	cr_assert_eq(graid_array_open(b->paths, n, NULL, &b->a), 0);
	cr_assert_eq(graid_array_fail_member(b->a, role), 0);
	newpath = heal_new_member(&b->s, "new");
	cr_assert_eq(graid_array_replace_member(b->a, role, newpath), 0);
	cr_assert_eq(graid_array_rebuild(b->a, NULL, NULL), 0);
	memcpy(b->plain, b->s.paths, sizeof(b->plain));
	b->plain[role] = newpath;
}

/* Rewrite the superblock of @p path as a writer of format 1.3 would: no bad-block log. */
static void rv_drop_bbl_fields(const char *path)
{
	uint8_t *buf = aligned_alloc(4096, 4096);
	struct graid_sb sb;
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, 4096, 0), 4096);
	cr_assert_eq(graid_sb_decode(buf, &sb), 0);
	cr_assert_neq(sb.bbl_bytes, 0, "%s: no log recorded to drop", path);
	sb.bbl_offset = sb.bbl_bytes = 0;
	graid_sb_encode(&sb, buf);
	cr_assert_eq(pwrite(fd, buf, 4096, 0), 4096);
	close(fd);
	free(buf);
}

/*
 * FORMAT.md: "An older writer rewriting such a superblock writes its own minor and zeroes
 * the reserved space, so a minor feature must tolerate being dropped that way." A 1.3
 * writer that opened the array once drops bbl_block/bbl_blocks; the log itself is still on
 * every member. The next 1.4 open must not serve a block recorded lost as data: it finds
 * the logs where they are (or refuses), instead of writing empty ones over them.
 */
Test(review_bbl, a_log_dropped_by_an_older_writer_is_not_wiped_at_the_next_open,
     .timeout = 120)
{
	/* RAID-5 of 4: member 1 cannot read row 1 + 4 KiB; role 0 rebuilt: that column lost. */
	const uint64_t lost = 4 * RV_CHUNK + 4096; /* role 0's block, recorded lost */
	uint8_t *got = malloc(4096), *want = malloc(4096);
	struct graid_bad_block bb[4];
	struct rv_bed b;
	ssize_t r;

	rv_rebuild_past(&b, 5, 4, 1, "bad-block-sticky=69632", 0);
	cr_assert_eq(graid_array_bad_blocks(b.a, 0, bb, 4), 1);
	cr_assert_eq(graid_array_read(b.a, got, 4096, lost), -EIO);
	cr_assert_eq(graid_array_close(b.a), 0);
	for (unsigned i = 0; i < 4; i++)
		rv_drop_bbl_fields(b.plain[i]);
	/* The sector of member 1 is readable now (a plain path): only the log says "lost". */
	cr_assert_eq(graid_array_open(b.plain, 4, NULL, &b.a), 0);
	r = graid_array_read(b.a, got, 4096, lost);
	heal_pattern(want, 4096, lost, 1);
	cr_assert(r == -EIO || (r == 4096 && !memcmp(got, want, 4096)),
		  "a block recorded lost (zeroes on the member) read back %zd bytes of %s: the "
		  "open wrote empty logs over the records", r,
		  r == 4096 ? "wrong data" : "something");
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
	free(got);
	free(want);
}

/*
 * DESIGN.md: "a bad block costs that block ... -EIO for that stripe only when no redundancy
 * is left"; graid.h (graid_array_bad_blocks): "a write that rewrites the whole block ...
 * clears it". After a RAID-5 rebuild lost one 4 KiB column of row 1 (roles on members 0
 * and 1), member 3's block in that column still holds data and its stripe's parity covers
 * it: writing it must work (read-modify-write needs neither lost block).
 */
Test(review_bbl, raid5_a_healthy_block_beside_a_lost_column_can_still_be_written,
     .timeout = 120)
{
	/* Row 1: data 0 on member 3 (array chunk 3), data 1 on 0, data 2 on 1, P on 2. */
	const uint64_t healthy = 3 * RV_CHUNK + 4096;
	uint8_t *buf = malloc(4096), *got = malloc(4096);
	struct rv_bed b;

	rv_rebuild_past(&b, 5, 4, 1, "bad-block-sticky=69632", 0);
	cr_assert_eq(graid_array_read(b.a, got, 4096, healthy), 4096, "it reads");
	heal_pattern(buf, 4096, healthy, 7);
	cr_assert_eq(graid_array_write(b.a, buf, 4096, healthy), 4096,
		     "a write of a block no log records, in a column two others lost, failed");
	cr_assert_eq(graid_array_read(b.a, got, 4096, healthy), 4096);
	cr_assert_eq(memcmp(got, buf, 4096), 0);
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
	free(buf);
	free(got);
}
