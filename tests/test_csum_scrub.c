/* SPDX-License-Identifier: MIT */
/*
 * Scrub on a checksummed RAID-6: the syndrome vote rewrites only blocks without a tag, a
 * block whose tag holds is kept (parity made from the data), and rows still to resync after
 * a crash are left to the resync, not compared.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "csumutil.h"
#include "testutil.h"
#include "array/array.h"

#ifdef GRAID_CREATE_CHECKSUMS

#define CS_N 5u
#define CS_CHUNK (16u * 1024)
#define CS_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define CS_BLOCK 37u /* the array block the tests make stale or bad */
#define CS_FAR_BLOCK 2400u /* one in a later bitmap region */

static atomic_uint cs_csum, cs_mismatch;

static void cs_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_CSUM_ERROR || ev->type == GRAID_EVENT_CSUM_TAG_ERROR ||
	    ev->type == GRAID_EVENT_CSUM_UNVERIFIED)
		atomic_fetch_add(&cs_csum, 1);
	if (ev->type == GRAID_EVENT_SCRUB_MISMATCH)
		atomic_fetch_add(&cs_mismatch, 1);
}

static void cs_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

struct cs_bed {
	struct au_set s;
	struct cu_geom g;
	uint64_t size;
	uint64_t blk;    /* the array block (4 KiB) the test is about */
	unsigned m;      /* the member holding it */
	uint64_t k;      /* and its 4 KiB block in that member's data area */
};

static void cs_rw(const struct cs_bed *b, unsigned m, uint64_t at, void *buf, size_t len,
		  bool write)
{
	int fd = open(b->s.path[m], O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write ? pwrite(fd, buf, len, (off_t)at) : pread(fd, buf, len, (off_t)at),
		     (ssize_t)len);
	close(fd);
}

/* The block's member block and its tag (8 bytes) as the member file holds them. */
static void cs_get(const struct cs_bed *b, uint8_t *blk, uint8_t *tag)
{
	if (blk)
		cs_rw(b, b->m, b->g.data_offset + b->k * CU_BLOCK, blk, CU_BLOCK, false);
	if (tag)
		cs_rw(b, b->m, cu_tag_pos(&b->g, b->k), tag, 8, false);
}

static void cs_put(const struct cs_bed *b, uint8_t *blk, uint8_t *tag)
{
	if (blk)
		cs_rw(b, b->m, b->g.data_offset + b->k * CU_BLOCK, blk, CU_BLOCK, true);
	if (tag)
		cs_rw(b, b->m, cu_tag_pos(&b->g, b->k), tag, 8, true);
}

/* A checksummed RAID-6 filled with round 1 and closed; array block @p blk located. */
static void cs_setup(struct cs_bed *b, uint64_t blk)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = CS_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint8_t *buf;
	bool found = false;

	memset(b, 0, sizeof(*b));
	b->blk = blk;
	au_make(&b->s, CS_N, CS_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(b->s.paths, CS_N, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	cu_geom_read(&b->g, a, b->s.path[0]);
	buf = malloc(b->size);
	cs_pattern(buf, 0, b->size, 1);
	cr_assert_eq(graid_array_write(a, buf, b->size, 0), (ssize_t)b->size);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned m = 0; m < CS_N && !found; m++)
		for (uint64_t k = 0; k < b->g.mblocks && !found; k++)
			if (cu_map(&b->g, m, k) == (int64_t)blk) {
				b->m = m;
				b->k = k;
				found = true;
			}
	cr_assert(found);
	atomic_store(&cs_csum, 0);
	atomic_store(&cs_mismatch, 0);
}

static struct graid_array *cs_open(struct cs_bed *b, const struct graid_open_options *opt)
{
	struct graid_array *a;

	cr_assert_eq(graid_array_open(b->s.paths, CS_N, opt, &a), 0);
	graid_array_set_event_callback(a, cs_on_event, NULL);
	return a;
}

/* The bed's block read through the array holds round @p round. */
/*
 * The syndrome vote's tests: generations switched off on the handle, as an array of format
 * 1.5 kept them (with them, the lost write below is placed by the records first, and the
 * vote meets only mismatches the generations do not explain:
 * raid6_scrub_heals_a_lost_write_of_a_block_and_its_tag).
 */
static struct graid_array *cs_open_no_gens(struct cs_bed *b)
{
	struct graid_array *a = cs_open(b, NULL);

	cr_assert(a->csum_gens, "a checksummed array keeps generations");
	a->csum_gens = false;
	return a;
}

static void cs_expect_read(const struct cs_bed *b, struct graid_array *a, unsigned round)
{
	uint8_t got[CU_BLOCK], want[CU_BLOCK];

	cr_assert_eq(graid_array_read(a, got, CU_BLOCK, b->blk * CU_BLOCK), (ssize_t)CU_BLOCK);
	cs_pattern(want, b->blk * CU_BLOCK, CU_BLOCK, round);
	cr_assert_eq(memcmp(got, want, CU_BLOCK), 0, "the block does not read as round %u",
		     round);
}

/*
 * A lost write of both a data block and its tag: the member holds the old block under its
 * old, valid tag, while P and Q hold the new write. The syndromes name that member, but its
 * tag holds: the block is kept, P and Q are made from the data, the mismatch is reported
 * with no member blamed, and no checksum event is sent.
 */
Test(csum_scrub, raid6_vote_keeps_a_block_whose_tag_holds)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct cs_bed b;
	struct graid_array *a;
	uint8_t old[CU_BLOCK], old_tag[8], now[CU_BLOCK], buf[CU_BLOCK];

	cs_setup(&b, CS_BLOCK);
	cs_get(&b, old, old_tag);
	a = cs_open(&b, NULL);
	cs_pattern(buf, (uint64_t)CS_BLOCK * CU_BLOCK, CU_BLOCK, 2);
	cr_assert_eq(graid_array_write(a, buf, CU_BLOCK, (uint64_t)CS_BLOCK * CU_BLOCK),
		     (ssize_t)CU_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	cs_put(&b, old, old_tag);

	a = cs_open_no_gens(&b);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(rep.mismatches, 1, "%llu mismatches", (unsigned long long)rep.mismatches);
	cr_assert_eq(rep.repaired, 1);
	cr_assert_eq(rep.named, 1);
	cr_assert_eq(rep.member[0], -1, "the vote blamed member %d, whose tag holds",
		     rep.member[0]);
	cr_assert_eq(atomic_load(&cs_mismatch), 1);
	cr_assert_eq(atomic_load(&cs_csum), 0, "%u checksum events", atomic_load(&cs_csum));
	cs_get(&b, now, NULL);
	cr_assert_eq(memcmp(now, old, CU_BLOCK), 0, "the vote rewrote a block whose tag holds");
	/* What docs/INTEGRITY.md says a lost write of both leaves: the old bytes. */
	cs_expect_read(&b, a, 1);
	/* Parity now follows the data. */
	memset(&rep, 0, sizeof(rep));
	rep.struct_size = sizeof(rep);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

/*
 * With generations (every checksummed array of this version): the same lost write of a block
 * and its tag is placed by P's and Q's records and healed to the last write, reported as a
 * lost write at its member, and no stripe is left to the vote.
 */
Test(csum_scrub, raid6_scrub_heals_a_lost_write_of_a_block_and_its_tag)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct cs_bed b;
	struct graid_array *a;
	uint8_t old[CU_BLOCK], old_tag[8], now[CU_BLOCK], buf[CU_BLOCK];

	cs_setup(&b, CS_BLOCK);
	cs_get(&b, old, old_tag);
	a = cs_open(&b, NULL);
	cr_assert(a->csum_gens);
	cs_pattern(buf, (uint64_t)CS_BLOCK * CU_BLOCK, CU_BLOCK, 2);
	cr_assert_eq(graid_array_write(a, buf, CU_BLOCK, (uint64_t)CS_BLOCK * CU_BLOCK),
		     (ssize_t)CU_BLOCK);
	cr_assert_eq(graid_array_close(a), 0);
	cs_put(&b, old, old_tag);

	a = cs_open(&b, NULL);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "%llu mismatches", (unsigned long long)rep.mismatches);
	cr_assert_geq(rep.rewritten, 1);
	cr_assert_eq(graid_array_member_info(a, b.m, &mi), 0);
	cr_assert_eq(mi.checksum_lost_writes, 1);
	cs_get(&b, now, NULL);
	cr_assert_eq(memcmp(now, buf, CU_BLOCK), 0, "the stale block was not healed");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

/*
 * A block without a tag (its VALID bit cleared on the member) changed behind the array's
 * back: nothing verifies it, so the syndrome vote is what names it, and it is rebuilt.
 */
Test(csum_scrub, raid6_vote_heals_a_block_without_a_tag)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct cs_bed b;
	struct graid_array *a;
	uint8_t good[CU_BLOCK], bad[CU_BLOCK], now[CU_BLOCK], tag[8] = { 0 };
	uint32_t crc;

	cs_setup(&b, CS_BLOCK);
	cs_get(&b, good, NULL);
	memcpy(bad, good, CU_BLOCK);
	bad[100] ^= 0x5a;
	cs_put(&b, bad, tag);

	a = cs_open_no_gens(&b);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(rep.mismatches, 1, "%llu mismatches", (unsigned long long)rep.mismatches);
	cr_assert_eq(rep.repaired, 1);
	cr_assert_eq(rep.member[0], (int32_t)b.m, "the vote named %d, not member %u",
		     rep.member[0], b.m);
	cr_assert_eq(atomic_load(&cs_mismatch), 1);
	cr_assert_eq(atomic_load(&cs_csum), 0, "%u checksum events", atomic_load(&cs_csum));
	cs_get(&b, now, NULL);
	cr_assert_eq(memcmp(now, good, CU_BLOCK), 0, "the block without a tag was not rebuilt");
	cs_expect_read(&b, a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	/* Its rewrite gave it a tag again. */
	cs_get(&b, NULL, tag);
	memcpy(&crc, tag, 4);
	cr_assert_eq(crc, cu_tag_crc(&b.g, b.m, b.k, good));
	cr_assert(tag[7] & 0x80, "the rewritten block's tag is not VALID");
	au_remove(&b.s);
}

#if GRAID_FAULT_INJECTION
static pthread_t cs_main;
static atomic_uint cs_log_failed, cs_log_unverified;

/* Counts the lines about blocks failing their tags, by what they call them. */
static void cs_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (strstr(msg, "failed their checksums"))
		atomic_fetch_add(&cs_log_failed, 1);
	if (strstr(msg, "unverified after crash") && level >= GRAID_LOG_INFO)
		atomic_fetch_add(&cs_log_unverified, 1);
}
static atomic_bool cs_hold;
static _Atomic time_t cs_until;

/* Reads of other threads (the worker's resync) wait while cs_hold, till 10 s from the open. */
static void cs_seam(struct graid_array *a, unsigned member)
{
	(void)a;
	(void)member;
	while (atomic_load(&cs_hold) && !pthread_equal(pthread_self(), cs_main) &&
	       time(NULL) < atomic_load(&cs_until))
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}
#endif

/*
 * A crash after a write reached P and Q but not the data member (its old bytes put back):
 * the stripe looks exactly like one bad member. Before the resync reaches it, a scrub leaves
 * it alone: not compared, nothing rewritten, nothing reported. The resync then keeps the
 * data (its rule), and a scrub after it finds the array consistent.
 */
Test(csum_scrub, scrub_leaves_rows_still_to_resync_alone)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_RESYNC_BACKGROUND };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct cs_bed b;
	struct graid_array *a;
	uint8_t old[CU_BLOCK], now[CU_BLOCK], buf[CU_BLOCK];
	uint64_t row, rs;
	int status;
	pid_t pid;

	cs_setup(&b, CS_FAR_BLOCK);
	cs_get(&b, old, NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/*
		 * The writes land on every member; their regions stay marked, their tags
		 * unwritten. Block 0's region is where the held resync will wait.
		 */
		if (graid_array_open(b.s.paths, CS_N, NULL, &a))
			_exit(2);
		cs_pattern(buf, 0, CU_BLOCK, 2);
		if (graid_array_write(a, buf, CU_BLOCK, 0) != CU_BLOCK)
			_exit(3);
		cs_pattern(buf, b.blk * CU_BLOCK, CU_BLOCK, 2);
		_exit(graid_array_write(a, buf, CU_BLOCK, b.blk * CU_BLOCK) == CU_BLOCK ? 0 : 4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(b.s.paths, CS_N);
	/* ...but the data member's write never did. */
	cs_put(&b, old, NULL);

	cs_main = pthread_self();
	atomic_store(&cs_hold, true);
	atomic_store(&cs_until, time(NULL) + 10);
	graid__test_before_read = cs_seam;
	graid_log_set(cs_log, NULL, GRAID_LOG_DEBUG);
	a = cs_open(&b, &opt);
	/*
	 * Block 0's new bytes under their old tag, read before the resync reaches them: a
	 * crash's doing, logged as such (not at warning as corruption) and reported
	 * CSUM_UNVERIFIED (docs/INTEGRITY.md, "Crashes").
	 */
	cr_assert_eq(graid_array_read(a, buf, CU_BLOCK, 0), (ssize_t)CU_BLOCK);
	cs_pattern(now, 0, CU_BLOCK, 2);
	cr_assert_eq(memcmp(buf, now, CU_BLOCK), 0);
	graid_log_set(NULL, NULL, GRAID_LOG_WARNING);
	cr_assert_eq(atomic_load(&cs_log_failed), 0, "logged as failing its checksum");
	cr_assert_geq(atomic_load(&cs_log_unverified), 1);
	cr_assert_geq(atomic_load(&cs_csum), 1);
	atomic_store(&cs_csum, 0);
	/*
	 * The resync waits in block 0's region, holding its stripe locks: the scrub begins at
	 * the region of the block (as if resuming there), which is still to resync.
	 */
	row = b.k / b.g.bpc;
	rs = a->bitmap.map.region_stripes;
	cr_assert_gt(row / rs, 0, "the block shares block 0's region (%llu stripes)",
		     (unsigned long long)rs);
	pthread_mutex_lock(&a->meta_lock);
	a->scrub_offset = row / rs * rs;
	pthread_mutex_unlock(&a->meta_lock);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR | GRAID_SCRUB_RESUME, &rep), 0);
	cr_assert_eq(rep.first_row, row / rs * rs);
	cr_assert_eq(rep.mismatches, 0, "%llu mismatches inside a region still to resync",
		     (unsigned long long)rep.mismatches);
	cr_assert_geq(rep.skipped, 1);
	cr_assert_eq(atomic_load(&cs_mismatch), 0);
	cr_assert_eq(atomic_load(&cs_csum), 0, "the scrub read the row: %u checksum events",
		     atomic_load(&cs_csum));
	cs_get(&b, now, NULL);
	cr_assert_eq(memcmp(now, old, CU_BLOCK), 0, "the scrub rewrote a row still to resync");
	atomic_store(&cs_hold, false);
	graid__test_before_read = NULL;
	cr_assert_eq(graid_array_close(a), 0);

	/* The resync kept the data; everything agrees now. */
	a = cs_open(&b, NULL);
	memset(&rep, 0, sizeof(rep));
	rep.struct_size = sizeof(rep);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(rep.skipped, 0);
	cs_expect_read(&b, a, 1);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
#endif
}

#else

Test(csum_scrub, needs_the_checksum_format)
{
	cr_skip_test("this libgraid has no GRAID_CREATE_CHECKSUMS");
}

#endif
