/* SPDX-License-Identifier: MIT */
/*
 * The bad-block log at its edges: logs an older writer dropped from the superblocks, a
 * member away when the logs were set up or whose log cannot be read, read-only handles
 * (nothing written back), writes beside a column past redundancy, wide chunks, two
 * targets, a dead survivor, odd RAID-10, and writes racing a rebuild past bad sectors.
 * Linked statically to rewrite superblocks as an older writer would.
 */
#include <errno.h>
#include <stddef.h>
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
	struct superblock sb;
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, 4096, 0), 4096);
	cr_assert_eq(sb_decode(buf, &sb), 0);
	cr_assert_neq(sb.bbl_bytes, 0, "%s: no log recorded to drop", path);
	sb.bbl_offset = sb.bbl_bytes = 0;
	sb_encode(&sb, buf);
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
Test(bad_block_edges, a_log_dropped_by_an_older_writer_is_not_wiped_at_the_next_open,
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
 * A member whose own superblock names no log while the others' do (a crash between the
 * superblock writes of the open that took dropped logs back, or a member that comes back
 * from before) still holds its log: the open reads it, and only a member without one gets
 * an empty log.
 */
Test(bad_block_edges, a_member_whose_own_superblock_names_no_log_keeps_its_records,
     .timeout = 120)
{
	const uint64_t lost = 4 * RV_CHUNK + 4096; /* role 0's block, recorded lost */
	uint8_t *got = malloc(4096), *want = malloc(4096);
	const char *order[4];
	struct rv_bed b;
	ssize_t r;


	rv_rebuild_past(&b, 5, 4, 1, "bad-block-sticky=69632", 0);
	cr_assert_eq(graid_array_close(b.a), 0);
	rv_drop_bbl_fields(b.plain[0]);
	/* Given last: another member's superblock (which names the log) is the freshest. */
	for (unsigned i = 0; i < 4; i++)
		order[i] = b.plain[(i + 1) % 4];
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(graid_array_open(order, 4, NULL, &b.a), 0);
		cr_assert_eq(graid_array_bad_blocks(b.a, 0, NULL, 0), 1,
			     "open %d: role 0's records were wiped", round);
		r = graid_array_read(b.a, got, 4096, lost);
		heal_pattern(want, 4096, lost, 1);
		cr_assert_eq(r, -EIO, "open %d: a block recorded lost read %zd bytes", round, r);
		cr_assert_eq(graid_array_close(b.a), 0);
	}
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
Test(bad_block_edges, raid5_a_healthy_block_beside_a_lost_column_can_still_be_written,
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

/* Every block reads back round @p round, except those at @p lost (n_lost), which fail -EIO. */
static void rv_verify(struct graid_array *a, uint64_t size, uint32_t round, const uint64_t *lost,
		      unsigned n_lost, const char *when)
{
	uint8_t *got = malloc(4096), *want = malloc(4096);

	for (uint64_t off = 0; off < size; off += 4096) {
		bool is_lost = false;
		ssize_t r = graid_array_read(a, got, 4096, off);

		for (unsigned i = 0; i < n_lost; i++)
			is_lost |= lost[i] == off;
		if (is_lost) {
			cr_assert_eq(r, -EIO, "%s: lost block at %llu read %zd", when,
				     (unsigned long long)off, r);
			continue;
		}
		heal_pattern(want, 4096, off, round);
		cr_assert_eq(r, 4096, "%s: read at %llu: %zd", when, (unsigned long long)off, r);
		cr_assert_eq(memcmp(got, want, 4096), 0, "%s: block at %llu wrong", when,
			     (unsigned long long)off);
	}
	free(got);
	free(want);
}

/*
 * RAID-6 of 5 with two roles replaced at once (two targets) and one survivor that cannot
 * read one 4 KiB block: three erasures in that column; 1 MiB chunks and the block in the
 * last column of its chunk (column 255: the last word of a column bitmap).
 */
Test(bad_block_edges, raid6_two_targets_1mib_chunks_last_column, .timeout = 300)
{
	const uint32_t chunk = 1u << 20;
	/* Member 1, row 1, last 4 KiB of the chunk. */
	const uint64_t moff = chunk + chunk - 4096;
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_bad_block bb[4];
	char spec[400], *p0, *p3;
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint64_t lost[3];
	unsigned nl = 0;

	tu_need_fault_injection();
	au_make(&s, 5, (1u << 20) + 8 * chunk);
	cr_assert_eq(au_create(&s, 5, 6, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:bad-block-sticky=%llu:%s", (unsigned long long)moff,
		 s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	p0 = heal_new_member(&s, "n0");
	p3 = heal_new_member(&s, "n3");
	cr_assert_eq(ftruncate(open(p0, O_RDWR), (1u << 20) + 8 * chunk), 0);
	cr_assert_eq(ftruncate(open(p3, O_RDWR), (1u << 20) + 8 * chunk), 0);
	cr_assert_eq(graid_array_replace_member(a, 0, p0), 0);
	cr_assert_eq(graid_array_replace_member(a, 3, p3), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	for (unsigned r = 0; r < 5; r++) {
		int n = graid_array_bad_blocks(a, r, bb, 4);

		if (r == 2 || r == 4) {
			cr_assert_eq(n, 0, "role %u: %d ranges", r, n);
			continue;
		}
		cr_assert_eq(n, 1, "role %u: %d ranges", r, n);
		cr_assert_eq(bb[0].member_offset, moff, "role %u at %llu", r,
			     (unsigned long long)bb[0].member_offset);
		cr_assert_eq(bb[0].flags, r == 1 ? GRAID_BAD_BLOCK_UNREADABLE : GRAID_BAD_BLOCK_LOST);
		if (bb[0].array_offset != UINT64_MAX)
			lost[nl++] = bb[0].array_offset;
	}
	rv_verify(a, info.size, 1, lost, nl, "after the rebuild");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A survivor every read of which fails (a dead drive) during a RAID-6 rebuild: it is taken
 * out past the threshold, the rebuild finishes from the others, and nothing is recorded.
 */
Test(bad_block_edges, raid6_rebuild_with_a_dead_survivor_fails_it_and_finishes, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct rv_bed b;

	rv_rebuild_past(&b, 6, 5, 2, "read-eio-after=0", 0);
	cr_assert_eq(graid_array_info(b.a, &info), 0);
	cr_assert_eq(graid_array_member_info(b.a, 2, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED, "the dead member: state %d", mi.state);
	cr_assert_eq(graid_array_member_info(b.a, 0, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the rebuilt member: state %d", mi.state);
	for (unsigned r = 0; r < 5; r++)
		cr_assert_eq(graid_array_bad_blocks(b.a, r, NULL, 0), 0, "role %u has records", r);
	rv_verify(b.a, b.size, 1, NULL, 0, "after the rebuild");
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
}

/* RAID-10 of 3 members (odd: chunk copies wrap around): a rebuild past a bad sector. */
Test(bad_block_edges, raid10_odd_members_rebuild_past_an_unreadable_sector, .timeout = 120)
{
	struct graid_bad_block bb[4];
	uint64_t lost[2];
	unsigned nl = 0;
	struct rv_bed b;

	/* Member 1's chunk in row 1, 4 KiB in. */
	rv_rebuild_past(&b, 10, 3, 1, "bad-block-sticky=69632", 2);
	cr_assert_eq(graid_array_bad_blocks(b.a, 2, NULL, 0), 1, "the new member records nothing");
	for (unsigned r = 0; r < 3; r++) {
		int n = graid_array_bad_blocks(b.a, r, bb, 4);

		cr_assert_geq(n, 0);
		for (int i = 0; i < n; i++) {
			cr_log_info("role %u: %llu +%llu flags %u array %llu", r,
				    (unsigned long long)bb[i].member_offset,
				    (unsigned long long)bb[i].len, bb[i].flags,
				    (unsigned long long)bb[i].array_offset);
			if (bb[i].flags & GRAID_BAD_BLOCK_LOST && nl < 2)
				lost[nl++] = bb[i].array_offset;
		}
	}
	rv_verify(b.a, b.size, 1, lost, nl, "after the rebuild");
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
}

/*
 * graid.h, graid_array_scrub: a block a member cannot read is rebuilt and written back and
 * "the member stays (counted in rewritten; not on a read-only array)"; plain scrubs are
 * allowed on a read-only open. A look that scrubs a RAID-5 with one latent sector keeps
 * the member and completes.
 */
Test(bad_block_edges, a_read_only_scrub_keeps_a_member_with_a_latent_sector, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const char *paths[AU_MAX];
	struct graid_array *a;
	char spec[400];
	struct au_set s;
	int rc;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:bad-block=69632:%s", s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, &o, &a), 0);
	rc = graid_array_scrub(a, 0, &rep);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the look's scrub took member 1 out (rc %d)",
		     rc);
	cr_assert_eq(rc, 0, "scrub: %d", rc);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* ---- foreground I/O racing a rebuild past bad sectors --------------------------------- */

#include <pthread.h>
#include <stdatomic.h>

#define RACE_BLOCKS 3072u /* 12 MiB of a RAID-5 of 4 with 4 MiB data members */

struct race {
	struct graid_array *a;
	atomic_bool stop;
	/* Per 4 KiB block: the last round written and acknowledged, and one that may be. */
	uint32_t acked[RACE_BLOCKS], maybe[RACE_BLOCKS];
	unsigned seed;
	unsigned writes, write_eio, bad_reads;
	char why[200];
};

static void *race_writer(void *arg)
{
	struct race *r = arg;
	uint8_t *buf = aligned_alloc(4096, RV_CHUNK * 3);
	uint32_t round = 100;

	while (!atomic_load(&r->stop)) {
		unsigned k = (unsigned)rand_r(&r->seed);
		/* Single blocks mostly; now and then a whole chunk, or a whole stripe. */
		unsigned blocks = k % 8 == 0 ? RV_CHUNK / 4096 : k % 8 == 1 ? 3 * RV_CHUNK / 4096 : 1;
		uint64_t b0 = (uint64_t)(k >> 4) % (RACE_BLOCKS / blocks) * blocks;
		ssize_t n;

		round++;
		for (unsigned i = 0; i < blocks; i++) {
			heal_pattern(buf + (size_t)i * 4096, 4096, (b0 + i) * 4096, round);
			r->maybe[b0 + i] = round;
		}
		n = graid_array_write(r->a, buf, (size_t)blocks * 4096, b0 * 4096);
		r->writes++;
		if (n == (ssize_t)blocks * 4096) {
			for (unsigned i = 0; i < blocks; i++)
				r->acked[b0 + i] = round;
		} else {
			r->write_eio++;
		}
	}
	free(buf);
	return NULL;
}

/*
 * Writes racing a RAID-5 rebuild whose survivor cannot read a few blocks (a drive that
 * remaps on write): afterwards every block reads what was last acknowledged there (or a
 * write that failed may have landed), or -EIO where a log records it. Never other bytes.
 */
Test(bad_block_edges, raid5_writes_racing_a_rebuild_past_bad_sectors_never_read_wrong,
     .timeout = 300)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro), .max_bytes_per_sec = 4u << 20 };
	struct race *r = calloc(1, sizeof(*r));
	uint8_t *got = malloc(4096), *want = malloc(4096), *old = malloc(4096);
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX];
	char spec[700], *newpath;
	struct graid_array *a;
	struct au_set s;
	pthread_t t;
	unsigned eio = 0;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.size, (uint64_t)RACE_BLOCKS * 4096);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < RACE_BLOCKS; i++)
		r->acked[i] = r->maybe[i] = 1;
	memcpy(paths, s.paths, sizeof(paths));
	/* Member 1: bad 4 KiB blocks spread over the member, remapped by a covering write. */
	snprintf(spec, sizeof(spec),
		 "faulty:bad-block=69632,bad-block=401408,bad-block=1052672,bad-block=1642496,"
		 "bad-block=2101248,bad-block=2699264,bad-block=3280896,bad-block=4005888:%s",
		 s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	newpath = heal_new_member(&s, "new");
	cr_assert_eq(graid_array_replace_member(a, 0, newpath), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	r->a = a;
	r->seed = getenv("RV_SEED") ? (unsigned)atoi(getenv("RV_SEED")) : 12345;
	cr_assert_eq(pthread_create(&t, NULL, race_writer, r), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	atomic_store(&r->stop, true);
	pthread_join(t, NULL);
	cr_log_info("%u writes, %u failed", r->writes, r->write_eio);
	for (unsigned b = 0; b < RACE_BLOCKS; b++) {
		ssize_t n = graid_array_read(a, got, 4096, (uint64_t)b * 4096);

		if (n == -EIO) {
			eio++;
			continue;
		}
		cr_assert_eq(n, 4096, "block %u: %zd", b, n);
		heal_pattern(want, 4096, (uint64_t)b * 4096, r->acked[b]);
		heal_pattern(old, 4096, (uint64_t)b * 4096, r->maybe[b]);
		cr_assert(!memcmp(got, want, 4096) || !memcmp(got, old, 4096),
			  "block %u holds neither round %u (acknowledged) nor %u", b, r->acked[b],
			  r->maybe[b]);
	}
	cr_log_info("%u blocks read -EIO", eio);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	free(r);
	free(got);
	free(want);
	free(old);
}

/*
 * An array made before the log (format 1.3: the superblocks name none) gets one at a
 * writable open, on the members present. One absent then comes back later: ARRAYS.md's
 * table says an absent member catches up from the bitmap. Its reserved area was never
 * written by libgraid (FORMAT.md: unused, "should be zero"; create never zeroed it): here
 * it holds what a reused disk had there. It must come back, not be failed for a "log".
 */
Test(bad_block_edges, a_member_absent_at_the_log_upgrade_catches_up_when_it_returns,
     .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint8_t junk[8192];
	struct graid_array *a;
	struct au_set s;
	int fd;

	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	/* As format 1.3 left it: no log named; member 3's reserved area as the disk had it. */
	for (unsigned i = 0; i < 4; i++)
		rv_drop_bbl_fields(s.path[i]);
	memset(junk, 0xa5, sizeof(junk));
	fd = open(s.path[3], O_RDWR);
	cr_assert_eq(pwrite(fd, junk, sizeof(junk), 256 * 1024), (ssize_t)sizeof(junk));
	close(fd);
	/* Upgraded while member 3 is away. */
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* It comes back. */
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_member_info(a, 3, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE,
		     "member 3, absent at the upgrade, came back %s (state %d)",
		     mi.state == GRAID_MEMBER_FAILED ? "failed" : "otherwise", mi.state);
	heal_verify(a, info.size, NULL, 1, "after the return");
	cr_assert_eq(graid_array_close(a), 0);
	/* And it stays in at the next open. */
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_member_info(a, 3, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE,
		     "member 3, absent at the upgrade, was taken out at the open after its "
		     "return (state %d)", mi.state);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * badblocks.h / open_bad_blocks: "a member whose log cannot be read cannot be trusted (a
 * block it recorded lost would read as data), so it is failed and rebuilt whole". A
 * member holding a lost block is absent for one open (nothing written meanwhile), and its
 * log cannot be read when it returns (a bad sector there, or both copies torn): it must
 * not serve the lost block's zeroes as data.
 */
Test(bad_block_edges, a_returning_member_whose_log_cannot_be_read_does_not_serve_lost_blocks,
     .timeout = 120)
{
	const uint64_t lost = 4 * RV_CHUNK + 4096; /* role 0's block, recorded lost */
	uint8_t *got = malloc(4096), *want = malloc(4096), junk[8192];
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct rv_bed b;
	ssize_t r;
	int fd;

	rv_rebuild_past(&b, 5, 4, 1, "bad-block-sticky=69632", 0);
	cr_assert_eq(graid_array_read(b.a, got, 4096, lost), -EIO);
	cr_assert_eq(graid_array_close(b.a), 0);
	/* Role 0 absent for one open; nothing is written. */
	cr_assert_eq(graid_array_open(b.plain + 1, 3, NULL, &b.a), 0);
	cr_assert_eq(graid_array_close(b.a), 0);
	/* Its log's two copies unreadable as a log now. */
	memset(junk, 0x5a, sizeof(junk));
	fd = open(b.plain[0], O_RDWR);
	cr_assert_eq(pwrite(fd, junk, sizeof(junk), 256 * 1024), (ssize_t)sizeof(junk));
	close(fd);
	cr_assert_eq(graid_array_open(b.plain, 4, NULL, &b.a), 0);
	cr_assert_eq(graid_array_member_info(b.a, 0, &mi), 0);
	r = graid_array_read(b.a, got, 4096, lost);
	heal_pattern(want, 4096, lost, 1);
	cr_assert(r == -EIO || (r == 4096 && !memcmp(got, want, 4096)),
		  "role 0 (state %d, its log unreadable) served the lost block: %zd bytes of "
		  "wrong data", mi.state, r);
	cr_assert_eq(graid_array_close(b.a), 0);
	au_remove(&b.s);
	free(got);
	free(want);
}

/*
 * graid.h, graid_array_given_info: "-EINVAL ... struct_size smaller than the struct up to
 * and including @c why": a caller whose struct ends at @c why (built before @c writable was
 * appended) is served what it has room for.
 */
Test(bad_block_edges, given_info_serves_a_struct_that_ends_at_why, .timeout = 60)
{
	struct graid_given_info gi;
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	memset(&gi, 0x77, sizeof(gi));
	gi.struct_size = offsetof(struct graid_given_info, why) + sizeof(gi.why);
	cr_assert_eq(graid_array_given_info(a, 0, &gi), 0,
		     "a struct up to and including why was refused");
	cr_assert_eq(gi.verdict, GRAID_GIVEN_MEMBER);
	cr_assert_eq(gi.writable, 0x77777777, "written past the caller's struct_size");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * graid.h, GRAID_OPEN_READ_ONLY: "open without writing anything to any member"; graidctl(1):
 * a look "never takes a member out of the array". A RAID-1 whose copy on member 1 is
 * recorded unreadable while member 0's holds the data (a record too many: its clearing
 * did not reach the disk before a crash, which badblocks.h accepts) is read through a
 * look: the read takes member 0's copy, and must neither write member 1 nor take it out.
 */
Test(bad_block_edges, a_read_only_look_reading_a_recorded_copy_writes_nothing, .timeout = 120)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint8_t *got = malloc(4096), *want = malloc(4096), area[8192];
	uint64_t h0, h1;
	struct rv_bed b;
	int fd;

	/* RAID-1 of 2: role 0 rebuilt past member 1's unreadable block 8 KiB into chunk 0. */
	rv_rebuild_past(&b, 1, 2, 1, "bad-block=8192", 0);
	cr_assert_eq(graid_array_bad_blocks(b.a, 1, NULL, 0), 1);
	/* Member 1's log as it is now (the record), then the block written: records cleared. */
	fd = open(b.plain[1], O_RDONLY);
	cr_assert_eq(pread(fd, area, sizeof(area), 256 * 1024), (ssize_t)sizeof(area));
	close(fd);
	heal_pattern(want, 4096, 8192, 3);
	cr_assert_eq(graid_array_write(b.a, want, 4096, 8192), 4096);
	cr_assert_eq(graid_array_bad_blocks(b.a, 1, NULL, 0), 0);
	cr_assert_eq(graid_array_close(b.a), 0);
	/* The clear of member 1's record did not reach its disk (a crash before the sync). */
	fd = open(b.plain[1], O_WRONLY);
	cr_assert_eq(pwrite(fd, area, sizeof(area), 256 * 1024), (ssize_t)sizeof(area));
	close(fd);
	h0 = au_file_hash(b.plain[0]);
	h1 = au_file_hash(b.plain[1]);
	cr_assert_eq(graid_array_open(b.plain, 2, &o, &b.a), 0);
	cr_assert_eq(graid_array_bad_blocks(b.a, 1, NULL, 0), 1);
	cr_assert_eq(graid_array_read(b.a, got, 4096, 8192), 4096);
	cr_assert_eq(memcmp(got, want, 4096), 0);
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the look took member 1 out (state %d)",
		     mi.state);
	cr_assert_eq(graid_array_close(b.a), 0);
	cr_assert_eq(au_file_hash(b.plain[0]), h0);
	cr_assert_eq(au_file_hash(b.plain[1]), h1);
	au_remove(&b.s);
	free(got);
	free(want);
}
