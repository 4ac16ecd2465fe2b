/* SPDX-License-Identifier: MIT */
/* The reshape record on member files: written durably to every member, the newest read back. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "meta/reshape_rec.h"
#include "testutil.h"

#define NM 4
#define CHUNK 65536u
#define BYTES (24ull << 20)

/* A record of a RAID-5 of 3 growing into the array @p a is (a RAID-5 of 4), at @p gen. */
static struct reshape_record rr_record(struct graid_array *a, uint64_t gen, uint64_t pos)
{
	struct reshape_record r;
	struct superblock sb;

	cr_assert_eq(member_read_sb(&a->members[0], &sb), 0);
	memset(&r, 0, sizeof(r));
	memcpy(r.array_uuid, sb.array_uuid, 16);
	r.generation = gen;
	r.position = pos;
	r.phase = RESHAPE_PHASE_COPY;
	r.direction = RESHAPE_FORWARD;
	r.old_geo = (struct reshape_geom){ 5, NM - 1, CHUNK, RESHAPE_LAYOUT_DEFAULT,
					   sb.data_bytes };
	r.new_geo = (struct reshape_geom){ sb.level, sb.nmembers, sb.chunk_bytes,
					   RESHAPE_LAYOUT_DEFAULT, sb.data_bytes };
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	r.nadded = 1;
	r.added_id[0] = sb.slot_id[NM - 1];
	return r;
}

/* What reshape_rec_read() makes of the members of @p a; 0 and *@p out, or its error. */
static int rr_read(struct graid_array *a, struct reshape_record *out)
{
	struct member *m[NM];
	struct superblock sb;
	const char *why = NULL;

	cr_assert_eq(member_read_sb(&a->members[0], &sb), 0);
	for (unsigned i = 0; i < NM; i++)
		m[i] = &a->members[i];
	return reshape_rec_read(m, NM, &sb, out, &why);
}

/* Block @p b of the record area of file @p path: its first byte past the CRC flipped. */
static void rr_tear(const char *path, unsigned b)
{
	uint64_t off = GRAID_SB_RESHAPE_OFFSET + b * RESHAPE_COPY_BYTES + 0x20;
	int fd = open(path, O_RDWR);
	uint8_t c;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0xff;
	cr_assert_eq(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

/* The generation in block @p b of file @p path, 0 if it holds no valid copy. */
static uint64_t rr_gen_at(const char *path, unsigned b)
{
	uint8_t buf[RESHAPE_COPY_BYTES];
	struct reshape_record r;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), GRAID_SB_RESHAPE_OFFSET + b * RESHAPE_COPY_BYTES),
		     (ssize_t)sizeof(buf));
	close(fd);
	return reshape_decode(buf, &r, NULL) ? 0 : r.generation;
}

Test(reshape_rec, the_first_record_goes_to_both_blocks_then_each_to_its_generations, .timeout = 60)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r, back;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, NM, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, CHUNK, &a), 0);
	cr_assert_eq(rr_read(a, &back), -ENOENT, "nothing recorded yet");
	r = rr_record(a, 7, 0);
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM);
	for (unsigned i = 0; i < NM; i++) {
		cr_assert_eq(rr_gen_at(s.paths[i], 0), 7, "member %u block 0", i);
		cr_assert_eq(rr_gen_at(s.paths[i], 1), 7, "member %u block 1", i);
	}
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(memcmp(&back, &r, sizeof(r)), 0, "read back as written");
	r = rr_record(a, 8, 4 * CHUNK);
	cr_assert_eq(reshape_rec_write(a, &io, &r, false), NM);
	for (unsigned i = 0; i < NM; i++) {
		cr_assert_eq(rr_gen_at(s.paths[i], 0), 8, "generation 8, block 0, member %u", i);
		cr_assert_eq(rr_gen_at(s.paths[i], 1), 7, "generation 7 kept on member %u", i);
	}
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(back.generation, 8);
	cr_assert_eq(back.position, 4 * CHUNK);
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Generations 1, 2, 3 written; then copies torn (a bad CRC) and one member left stale (an
 * older generation in both blocks): the newest valid copy on any member is the one read.
 */
Test(reshape_rec, a_torn_or_stale_copy_never_hides_the_newest_valid_one, .timeout = 60)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r, back;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, NM, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, CHUNK, &a), 0);
	r = rr_record(a, 1, 0);
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM);
	r = rr_record(a, 2, CHUNK);
	cr_assert_eq(reshape_rec_write(a, &io, &r, false), NM);
	r = rr_record(a, 3, 2 * CHUNK);
	cr_assert_eq(reshape_rec_write(a, &io, &r, false), NM);
	/* Member 0's newest copy torn: the others still have generation 3. */
	rr_tear(s.paths[0], 1);
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(back.generation, 3);
	cr_assert_eq(back.position, 2 * CHUNK);
	/* Generation 3 torn everywhere (a crash in its round): generation 2, whole, wins. */
	for (unsigned i = 1; i < NM; i++)
		rr_tear(s.paths[i], 1);
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(back.generation, 2);
	cr_assert_eq(back.position, CHUNK);
	/* Generation 4 on member 2 alone; members 0, 1, 3 stale: the newest still wins. */
	r = rr_record(a, 4, 3 * CHUNK);
	{
		uint8_t buf[RESHAPE_COPY_BYTES];
		int fd = open(s.paths[2], O_RDWR);

		reshape_encode(&r, buf);
		cr_assert_geq(fd, 0);
		cr_assert_eq(pwrite(fd, buf, sizeof(buf), GRAID_SB_RESHAPE_OFFSET),
			     (ssize_t)sizeof(buf));
		close(fd);
	}
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(back.generation, 4, "the highest generation across members");
	cr_assert_eq(back.position, 3 * CHUNK);
	/* Every block 0 torn, member 0's block 1 mended (a second flip): it alone is whole. */
	for (unsigned i = 0; i < NM; i++)
		rr_tear(s.paths[i], 0);
	rr_tear(s.paths[0], 1);
	cr_assert_eq(rr_read(a, &back), 0);
	cr_assert_eq(back.generation, 3, "member 0's copy alone is whole");
	rr_tear(s.paths[0], 1);
	cr_assert_eq(rr_read(a, &back), -ENOENT, "no valid copy anywhere");
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A record whose new geometry is not the superblock's is not taken. */
Test(reshape_rec, a_record_for_another_geometry_is_refused, .timeout = 60)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r, back;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, NM, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, CHUNK, &a), 0);
	r = rr_record(a, 1, 0);
	r.new_geo.level = 6;
	r.old_geo.nmembers = NM - 1;
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM);
	cr_assert_eq(rr_read(a, &back), -EPROTO);
	cr_assert_eq(back.generation, 1, "the newest is given, for a start to go past it");
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A member whose record write fails is failed, as for any metadata write (the array can do
 * without it), so that no current member holds an older record than the one relied on; the
 * others hold the record. With every member failing it, the write is refused (-EIO).
 */
Test(reshape_rec, a_member_that_fails_the_write_is_failed, .timeout = 60)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r;
	struct graid_array *a;
	char fp[NM][400];
	const char *paths[NM];
	struct au_set s;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&s, NM, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < NM; i++) {
		snprintf(fp[i], sizeof(fp[i]), "faulty:meta-eio-after=0:%s", s.paths[i]);
		paths[i] = i == 2 ? fp[i] : s.paths[i];
	}
	cr_assert_eq(graid_array_open(paths, NM, NULL, &a), 0);
	r = rr_record(a, 1, 0);
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM - 1);
	cr_assert_eq(atomic_load(&a->members[2].state), GRAID_MEMBER_FAILED,
		     "a member without the record was left in");
	cr_assert_eq(rr_gen_at(s.paths[2], 0), 0);
	for (unsigned i = 0; i < NM; i++)
		if (i != 2)
			cr_assert_eq(rr_gen_at(s.paths[i], 1), 1, "member %u", i);
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);

	for (unsigned i = 0; i < NM; i++)
		paths[i] = fp[i];
	cr_assert_eq(graid_array_open(paths, NM, NULL, &a), 0);
	r = rr_record(a, 2, CHUNK);
	cr_assert_eq(reshape_rec_write(a, &io, &r, false), -EIO, "no member took it");
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A read-only handle (a look) writes nothing: a record write is refused at once, and no
 * member is failed for writes its read-only descriptors could never take.
 */
Test(reshape_rec, a_read_only_handle_refuses_the_write_and_fails_no_member, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct reshape_rec_io io = { 0 };
	struct reshape_record r;
	struct graid_array *a;
	struct au_set s;
	int rc;

	au_make(&s, NM, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, NM, &ro, &a), 0);
	r = rr_record(a, 1, 0);
	rc = reshape_rec_write(a, &io, &r, true);
	cr_expect_eq(rc, -EROFS, "%d", rc);
	for (unsigned i = 0; i < NM; i++) {
		cr_expect_eq(atomic_load(&a->members[i].state), GRAID_MEMBER_ACTIVE, "member %u",
			     i);
		cr_assert_eq(rr_gen_at(s.paths[i], 0), 0, "member %u written", i);
	}
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
