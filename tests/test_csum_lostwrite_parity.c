/* SPDX-License-Identifier: MIT */
/*
 * Lost writes on RAID-5/6 (docs/INTEGRITY.md, "Lost writes"), with generations turned on by
 * hand (a->csum_gens; nothing in production sets it yet): a data block and its tag put back
 * on a member as they were before a write (a lost write of both) are found by the parity's
 * record and healed on read; a lost write of P is rewritten; two stale blocks of one RAID-5
 * or RAID-6 column fail that column's reads -EIO until a write covers the column; and every
 * write path leaves each column's parity records equal to its data's generations, checked
 * from the member files.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdatomic.h>
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
#include "format/tag_format.h"
#include "member/tag_store.h"
#include "meta/bitmap.h"

#ifdef GRAID_CREATE_CHECKSUMS

#define LP_CHUNK (16u * 1024)
#define LP_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define LP_BLOCK 37u /* the array block the tests make stale */
#define LP_FAR_BLOCK 2400u /* one in a later bitmap region than block 0's */

/* The lost-write events one handle sent. */
static pthread_mutex_t lp_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cu_ev lp_ev[64];
static unsigned lp_nev;
/* The checksum-error events, apart. */
static struct cu_ev lp_cev[64];
static unsigned lp_ncev;

static void lp_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_CSUM_ERROR) {
		pthread_mutex_lock(&lp_mu);
		if (lp_ncev < 64)
			lp_cev[lp_ncev] = (struct cu_ev){ .type = ev->type, .member = ev->member,
							  .error = ev->error, .block = ev->stripe,
							  .count = ev->count };
		lp_ncev++;
		pthread_mutex_unlock(&lp_mu);
		return;
	}
	if (ev->type != GRAID_EVENT_CSUM_LOST_WRITE)
		return;
	pthread_mutex_lock(&lp_mu);
	if (lp_nev < 64)
		lp_ev[lp_nev] = (struct cu_ev){ .type = ev->type, .member = ev->member,
						.error = ev->error, .block = ev->stripe,
						.count = ev->count };
	lp_nev++;
	pthread_mutex_unlock(&lp_mu);
}

static void lp_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

struct lp_bed {
	struct au_set s;
	struct cu_geom g;
	int level;
	unsigned n;
	uint64_t size;
	const char *role_path[8]; /* a role's file when it is not s.path[role] (a spare) */
};

static void lp_rw(const struct lp_bed *b, unsigned m, uint64_t at, void *buf, size_t len,
		  bool write)
{
	int fd = open(b->role_path[m] ? b->role_path[m] : b->s.path[m], O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write ? pwrite(fd, buf, len, (off_t)at) : pread(fd, buf, len, (off_t)at),
		     (ssize_t)len);
	close(fd);
}

/* Member @p m's block @p k and its tag, as its file holds them (or put back). */
static void lp_block(const struct lp_bed *b, unsigned m, uint64_t k, uint8_t *blk, uint8_t *tag,
		     bool write)
{
	lp_rw(b, m, b->g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, write);
	lp_rw(b, m, cu_tag_pos(&b->g, k), tag, 8, write);
}

static struct graid_array *lp_open(struct lp_bed *b)
{
	struct graid_array *a;

	cr_assert_eq(graid_array_open(b->s.paths, b->n, NULL, &a), 0);
	a->csum_gens = true; /* the switch the lead turns on with the feature bit */
	graid_array_set_event_callback(a, lp_on_event, NULL);
	return a;
}

/*
 * A checksummed array of @p level (and @p flags: the journal), generations on, filled with
 * round 1 and closed.
 */
static void lp_setup_flags(struct lp_bed *b, int level, unsigned flags)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = LP_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS | flags };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	uint8_t *buf;

	memset(b, 0, sizeof(*b));
	b->level = level;
	b->n = level == 6 ? 5u : 4u;
	/* The journal's log takes its room from each member (as test_csum_read's beds give). */
	au_make(&b->s, b->n, LP_MEMBER_BYTES + (flags & GRAID_CREATE_JOURNAL ? 40u << 20 : 0));
	cr_assert_eq(graid_array_create(b->s.paths, b->n, &cfg, &a), 0);
	a->csum_gens = true;
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	cu_geom_read(&b->g, a, b->s.path[0]);
	buf = malloc(b->size);
	lp_pattern(buf, 0, b->size, 1);
	cr_assert_eq(graid_array_write(a, buf, b->size, 0), (ssize_t)b->size);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	pthread_mutex_lock(&lp_mu);
	lp_nev = 0;
	lp_ncev = 0;
	pthread_mutex_unlock(&lp_mu);
}

static void lp_setup(struct lp_bed *b, int level)
{
	lp_setup_flags(b, level, 0);
}

/* Where array block @p blk lives: its member and member block. */
static void lp_find(const struct lp_bed *b, uint64_t blk, unsigned *m, uint64_t *k)
{
	for (unsigned i = 0; i < b->n; i++)
		for (uint64_t j = 0; j < b->g.mblocks; j++)
			if (cu_map(&b->g, i, j) == (int64_t)blk) {
				*m = i;
				*k = j;
				return;
			}
	cr_assert_fail("array block %llu not found", (unsigned long long)blk);
}

/* The member holding @p what (CU_P, CU_Q) of member block @p k's column. */
static unsigned lp_parity(const struct lp_bed *b, uint64_t k, int64_t what)
{
	for (unsigned i = 0; i < b->n; i++)
		if (cu_map(&b->g, i, k) == what)
			return i;
	cr_assert_fail("no parity");
	return 0;
}

/*
 * A read checks generations against the tags the cache holds (no tag I/O of its own): read
 * one block of another column on every member, so that each member's tag block covering
 * member block @p k is cached, as a running array's would be.
 */
static void lp_warm(const struct lp_bed *b, struct graid_array *a, uint64_t k)
{
	uint8_t buf[CU_BLOCK];

	for (unsigned i = 0; i < b->n; i++) {
		uint64_t mb = k - k % 512;
		int64_t ab = -1;

		for (; mb < k - k % 512 + 512 && mb < b->g.mblocks; mb++)
			if (mb / b->g.bpc != k / b->g.bpc && (ab = cu_map(&b->g, i, mb)) >= 0)
				break;
		cr_assert_geq(ab, 0);
		cr_assert_eq(graid_array_read(a, buf, CU_BLOCK, (uint64_t)ab * CU_BLOCK),
			     (ssize_t)CU_BLOCK);
	}
}

static void lp_write_block(struct graid_array *a, uint64_t blk, unsigned round)
{
	uint8_t buf[CU_BLOCK];

	lp_pattern(buf, blk * CU_BLOCK, CU_BLOCK, round);
	cr_assert_eq(graid_array_write(a, buf, CU_BLOCK, blk * CU_BLOCK), (ssize_t)CU_BLOCK);
}

/* Array block @p blk reads as round @p round (0: the read is to fail -EIO). */
static void lp_expect(struct graid_array *a, uint64_t blk, unsigned round)
{
	uint8_t got[CU_BLOCK], want[CU_BLOCK];
	ssize_t n = graid_array_read(a, got, CU_BLOCK, blk * CU_BLOCK);

	if (!round) {
		cr_assert_eq(n, -EIO, "block %llu read %zd, not -EIO", (unsigned long long)blk, n);
		return;
	}
	cr_assert_eq(n, (ssize_t)CU_BLOCK, "block %llu read %zd", (unsigned long long)blk, n);
	lp_pattern(want, blk * CU_BLOCK, CU_BLOCK, round);
	cr_assert_eq(memcmp(got, want, CU_BLOCK), 0, "block %llu does not read as round %u",
		     (unsigned long long)blk, round);
}

/* The generation and meta word of a tag as its member file holds it. */
static tag_t lp_tag(const struct lp_bed *b, unsigned m, uint64_t k)
{
	uint8_t t[8];

	lp_rw(b, m, cu_tag_pos(&b->g, k), t, 8, false);
	return tag_decode(t);
}

/*
 * The independent check: in every column of every member file, P's (and Q's) record is
 * the one made from the data blocks' generations, in the layout's data order (the order
 * of the array blocks in the row).
 */
static void lp_records_hold(const struct lp_bed *b)
{
	const unsigned k = b->n - (b->level == 6 ? 2u : 1u);

	for (uint64_t mb = 0; mb < b->g.mblocks; mb++) {
		uint32_t g[GRAID_MAX_MEMBERS];
		struct tag_rec want;
		unsigned seen = 0;

		for (unsigned m = 0; m < b->n; m++) {
			int64_t ab = cu_map(&b->g, m, mb);

			if (ab < 0)
				continue;
			g[(ab / b->g.bpc) % k] = tag_gen(lp_tag(b, m, mb));
			seen++;
		}
		cr_assert_eq(seen, k);
		want = tag_rec_make(g, k);
		for (unsigned m = 0; m < b->n; m++) {
			int64_t what = cu_map(&b->g, m, mb);
			struct tag_rec got;

			if (what != CU_P && what != CU_Q)
				continue;
			got = tag_rec_of_tag(lp_tag(b, m, mb));
			cr_assert(tag_rec_eq(got, want),
				  "member block %llu: %s's record (%u, %u) is not the data's "
				  "(%u, %u)", (unsigned long long)mb, what == CU_P ? "P" : "Q",
				  got.s, got.w, want.s, want.w);
		}
	}
}

static unsigned lp_events(void)
{
	unsigned n;

	pthread_mutex_lock(&lp_mu);
	n = lp_nev;
	pthread_mutex_unlock(&lp_mu);
	return n;
}

/*
 * Write array block LP_BLOCK (round 2), keep member m's block and tag, write it again
 * @p misses times (rounds 3 ..), close, and put the kept ones back: a lost write of both
 * (of @p misses writes). Reopened, a read returns the last round, one event names m and the
 * block (healed), the count is 1, and the member file holds the last round again with the
 * generation the record expects.
 */
static void lp_lost_data_write_at(int level, unsigned misses, bool warm)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const unsigned last = 2 + misses;
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8], want[CU_BLOCK], now[CU_BLOCK], now_tag[8];
	uint32_t g;
	unsigned m;
	uint64_t k;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, false);
	a = lp_open(&b);
	for (unsigned r = 3; r <= last; r++)
		lp_write_block(a, LP_BLOCK, r);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, true);

	a = lp_open(&b);
	if (warm)
		lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, last);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)m, "the event names member %d, not %u", lp_ev[0].member,
		     m);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, 0);
	cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
	cr_assert_eq(mi.checksum_lost_writes, 1);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, now, now_tag, false);
	lp_pattern(want, (uint64_t)LP_BLOCK * CU_BLOCK, CU_BLOCK, last);
	cr_assert_eq(memcmp(now, want, CU_BLOCK), 0, "the member block was not healed");
	g = tag_gen(tag_decode(old_tag));
	for (unsigned i = 0; i < misses; i++)
		g = tag_gen_next(g);
	cr_assert_eq(tag_gen_res(tag_gen(tag_decode(now_tag))), tag_gen_res(g),
		     "the healed block's generation is not the expected one");
	lp_records_hold(&b);
	au_remove(&b.s);
}

static void lp_lost_data_write(int level, unsigned misses)
{
	lp_lost_data_write_at(level, misses, true);
}

/*
 * The first read after the open, nothing cached but what it loads itself: the span check
 * (docs/INTEGRITY.md, "The span flag") reads the column's other tag blocks, so the stale
 * bytes are not returned. Before it the read compared cached tags only and returned them.
 */
Test(csum_lostwrite_parity, raid5_cold_first_read_after_open_heals_a_lost_write)
{
	lp_lost_data_write_at(5, 1, false);
}

Test(csum_lostwrite_parity, raid6_cold_first_read_after_open_heals_a_lost_write)
{
	lp_lost_data_write_at(6, 1, false);
}

Test(csum_lostwrite_parity, raid5_lost_write_of_a_data_block_and_tag_is_healed_on_read)
{
	lp_lost_data_write(5, 1);
}

Test(csum_lostwrite_parity, raid6_lost_write_of_a_data_block_and_tag_is_healed_on_read)
{
	lp_lost_data_write(6, 1);
}

/* RAID-6 locates a block that missed several writes, and Q confirms the rebuild. */
Test(csum_lostwrite_parity, raid6_block_that_missed_three_writes_is_healed_checked_by_q)
{
	lp_lost_data_write(6, 3);
}

/*
 * RAID-6: a lost write of data block LP_BLOCK and its tag (one write behind), and beside it,
 * in the same 4 KiB column, another block whose bytes are wrong under a right tag: another
 * data block (@p which LP_DATA), P or Q (CU_P, CU_Q). Two erasures, within RAID-6's reach once the record has
 * named the stale block, whoever meets them first (@p first): the read of the stale block,
 * the read of the other data block, or a repairing scrub. The reads return the last write
 * and the other block's own bytes, one checksum-lost-write names the stale
 * block and one checksum-error the other, both healed; the member files hold the right
 * bytes, tags and generations again, and the records are the data's.
 */
#define LP_DATA INT64_MAX

enum lp_first { LP_STALE_FIRST, LP_OTHER_FIRST, LP_SCRUB_FIRST };

static void lp_lost_write_beside(int64_t which, enum lp_first first)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8], want[CU_BLOCK], now[CU_BLOCK], now_tag[8];
	uint8_t good[CU_BLOCK], good_tag[8], bad[CU_BLOCK];
	int64_t xab = -1;
	unsigned m, x = 0;
	uint64_t k;
	bool found = false;

	lp_setup(&b, 6);
	lp_find(&b, LP_BLOCK, &m, &k);
	for (unsigned i = 0; i < b.n && !found; i++) {
		int64_t what = cu_map(&b.g, i, k);

		if (i != m && (which == LP_DATA ? what >= 0 : what == which)) {
			x = i;
			xab = what;
			found = true;
		}
	}
	cr_assert(found);
	cr_assert(first != LP_OTHER_FIRST || which == LP_DATA);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, true);
	/* The other block: bytes flipped here and there, its tag kept. */
	lp_block(&b, x, k, good, good_tag, false);
	memcpy(bad, good, CU_BLOCK);
	for (unsigned i = 0; i < CU_BLOCK; i += 509)
		bad[i] ^= 0x5a;
	lp_rw(&b, x, b.g.data_offset + k * CU_BLOCK, bad, CU_BLOCK, true);

	a = lp_open(&b);
	if (first == LP_SCRUB_FIRST) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	}
	if (first == LP_OTHER_FIRST)
		lp_expect(a, (uint64_t)xab, 1);
	lp_expect(a, LP_BLOCK, 3);
	if (which == LP_DATA && first != LP_OTHER_FIRST)
		lp_expect(a, (uint64_t)xab, 1);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)m, "the event names member %d, not %u", lp_ev[0].member,
		     m);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, 0);
	cr_assert_eq(lp_ncev, 1, "%u checksum-error events", lp_ncev);
	cr_assert_eq(lp_cev[0].member, (int)x, "the checksum-error names member %d, not %u",
		     lp_cev[0].member, x);
	cr_assert_eq(lp_cev[0].block, k);
	cr_assert_eq(lp_cev[0].error, 0);
	cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
	cr_assert_eq(mi.checksum_lost_writes, 1);
	cr_assert_eq(graid_array_member_info(a, x, &mi), 0);
	cr_assert_eq(mi.checksum_errors, 1);
	cr_assert_eq(mi.checksum_lost_writes, 0);
	{
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
		cr_assert_eq(rep.mismatches, 0, "%llu mismatches after the heal",
			     (unsigned long long)rep.mismatches);
	}
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, now, now_tag, false);
	lp_pattern(want, (uint64_t)LP_BLOCK * CU_BLOCK, CU_BLOCK, 3);
	cr_assert_eq(memcmp(now, want, CU_BLOCK), 0, "the stale block was not healed");
	cr_assert_eq(tag_gen_res(tag_gen(tag_decode(now_tag))),
		     tag_gen_res(tag_gen_next(tag_gen(tag_decode(old_tag)))),
		     "the healed block's generation is not the expected one");
	lp_block(&b, x, k, now, now_tag, false);
	cr_assert_eq(memcmp(now, good, CU_BLOCK), 0, "the other bad block was not healed");
	cr_assert_eq(memcmp(now_tag, good_tag, 8), 0, "the other block's tag changed");
	lp_records_hold(&b);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid6_lost_write_beside_a_bad_data_block_heals_both)
{
	lp_lost_write_beside(LP_DATA, LP_STALE_FIRST);
}

Test(csum_lostwrite_parity, raid6_bad_data_block_read_first_beside_a_lost_write_heals_both)
{
	lp_lost_write_beside(LP_DATA, LP_OTHER_FIRST);
}

Test(csum_lostwrite_parity, raid6_lost_write_beside_a_bad_p_heals_both)
{
	lp_lost_write_beside(CU_P, LP_STALE_FIRST);
}

Test(csum_lostwrite_parity, raid6_lost_write_beside_a_bad_q_heals_both)
{
	lp_lost_write_beside(CU_Q, LP_STALE_FIRST);
}

Test(csum_lostwrite_parity, raid6_scrub_heals_a_lost_write_beside_a_bad_data_block)
{
	lp_lost_write_beside(LP_DATA, LP_SCRUB_FIRST);
}

Test(csum_lostwrite_parity, raid6_scrub_heals_a_lost_write_beside_a_bad_p)
{
	lp_lost_write_beside(CU_P, LP_SCRUB_FIRST);
}

/*
 * The other way round: a lost write of P (or Q, @p which) and its tag, and the data block
 * of that column the lost parity write was for wrong under a right tag. The records name
 * the stale parity (the other's is the data's), so the data block is rebuilt from the
 * parity that is current: the read returns the last write, one checksum-lost-write names
 * the parity, one checksum-error the data block, both healed on the member files. With
 * @p scrub_first a repairing scrub meets them before any read.
 */
static void lp_lost_parity_beside(int64_t which, bool scrub_first)
{
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8], cur[CU_BLOCK], cur_tag[8], now[CU_BLOCK], now_tag[8];
	uint8_t good[CU_BLOCK], good_tag[8], bad[CU_BLOCK];
	unsigned m, p;
	uint64_t k;

	lp_setup(&b, 6);
	lp_find(&b, LP_BLOCK, &m, &k);
	p = lp_parity(&b, k, which);
	lp_block(&b, p, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, p, k, cur, cur_tag, false);
	lp_block(&b, p, k, old, old_tag, true);
	lp_block(&b, m, k, good, good_tag, false);
	memcpy(bad, good, CU_BLOCK);
	for (unsigned i = 0; i < CU_BLOCK; i += 509)
		bad[i] ^= 0x5a;
	lp_rw(&b, m, b.g.data_offset + k * CU_BLOCK, bad, CU_BLOCK, true);

	a = lp_open(&b);
	if (scrub_first) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	}
	lp_expect(a, LP_BLOCK, 2);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)p, "the event names member %d, not the parity's %u",
		     lp_ev[0].member, p);
	cr_assert_eq(lp_ev[0].error, 0);
	cr_assert_eq(lp_ncev, 1, "%u checksum-error events", lp_ncev);
	cr_assert_eq(lp_cev[0].member, (int)m);
	cr_assert_eq(lp_cev[0].error, 0);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, p, k, now, now_tag, false);
	cr_assert_eq(memcmp(now, cur, CU_BLOCK), 0, "the stale parity was not rewritten");
	cr_assert_eq(memcmp(now_tag, cur_tag, 8), 0, "the parity's tag is not its last one");
	lp_block(&b, m, k, now, now_tag, false);
	cr_assert_eq(memcmp(now, good, CU_BLOCK), 0, "the bad data block was not healed");
	cr_assert_eq(memcmp(now_tag, good_tag, 8), 0, "the data block's tag changed");
	lp_records_hold(&b);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid6_lost_write_of_p_beside_a_bad_data_block_heals_both)
{
	lp_lost_parity_beside(CU_P, false);
}

Test(csum_lostwrite_parity, raid6_lost_write_of_q_beside_a_bad_data_block_heals_both)
{
	lp_lost_parity_beside(CU_Q, false);
}

Test(csum_lostwrite_parity, raid6_scrub_heals_a_lost_write_of_p_beside_a_bad_data_block)
{
	lp_lost_parity_beside(CU_P, true);
}

/*
 * Past what a column rebuilds (issue #41 review): a lost write of data block LP_BLOCK and
 * its tag (one write behind), and beside it in its 4 KiB column another data block bad
 * (bytes flipped under its tag, or with @p unreadable a sector the drive cannot read) and,
 * on RAID-6, a third block (@p third: another data block, P or Q) with bytes flipped
 * (LP_PQ: P and Q flipped instead, no data block beside the stale one). A
 * repairing scrub meets them first. Rebuilding the bad blocks from parity with the stale
 * bytes in place gives wrong bytes that a fresh tag would then vouch for, and the stale
 * block rebuilt from those is its stale self again: so nothing of the column may be written
 * back. After the scrub no read of the column's data blocks returns a wrong byte (each fails
 * -EIO), no lost-write event says healed, and the scrub counts units unrecoverable.
 */
#define LP_PQ INT64_MIN

static void lp_lost_write_past(int level, bool unreadable, int64_t third)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8], blk[CU_BLOCK], tag[8];
	char spec[512];
	const char *paths[8];
	int64_t ab[GRAID_MAX_MEMBERS];
	unsigned m, x = 0, y = 0, nab = 0;
	uint64_t k;
	bool fx = false, fy = level != 6;

	if (unreadable)
		tu_need_fault_injection(); /* the unreadable sector is a faulty: member's */
	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	for (unsigned i = 0; i < b.n; i++) {
		int64_t what = cu_map(&b.g, i, k);

		if (what >= 0)
			ab[nab++] = what;
		if (i == m)
			continue;
		if (!fx && (third == LP_PQ ? what == CU_P : what >= 0)) {
			x = i;
			fx = true;
		} else if (!fy && (third == LP_DATA ? what >= 0
						    : what == (third == LP_PQ ? CU_Q : third))) {
			y = i;
			fy = true;
		}
	}
	cr_assert(fx && fy);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, true);
	for (unsigned i = 0; i < b.n; i++) {
		if (!(i == x && !unreadable) && !(i == y && level == 6))
			continue;
		lp_block(&b, i, k, blk, tag, false);
		for (unsigned o = 0; o < CU_BLOCK; o += 509)
			blk[o] ^= 0x5a;
		lp_rw(&b, i, b.g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, true);
	}
	for (unsigned i = 0; i < b.n; i++)
		paths[i] = b.s.paths[i];
	if (unreadable) {
		snprintf(spec, sizeof(spec), "faulty:bad-block-sticky=%llu:%s",
			 (unsigned long long)(k * CU_BLOCK), b.s.path[x]);
		paths[x] = spec;
	}
	cr_assert_eq(graid_array_open(paths, b.n, NULL, &a), 0);
	a->csum_gens = true;
	graid_array_set_event_callback(a, lp_on_event, NULL);

	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	for (unsigned i = 0; i < nab; i++) {
		uint8_t got[CU_BLOCK], want[CU_BLOCK];
		ssize_t n = graid_array_read(a, got, CU_BLOCK, (uint64_t)ab[i] * CU_BLOCK);

		lp_pattern(want, (uint64_t)ab[i] * CU_BLOCK, CU_BLOCK, ab[i] == LP_BLOCK ? 3 : 1);
		cr_assert(n == -EIO || (n == (ssize_t)CU_BLOCK && memcmp(got, want, CU_BLOCK) == 0),
			  "array block %lld of the column read %zd%s after the scrub",
			  (long long)ab[i], n, n == (ssize_t)CU_BLOCK ? ", wrong bytes" : "");
		if (ab[i] == LP_BLOCK || ab[i] == cu_map(&b.g, x, k))
			cr_assert_eq(n, -EIO, "array block %lld read %zd, not -EIO",
				     (long long)ab[i], n);
	}
	cr_assert_gt(lp_events(), 0, "no lost-write event");
	for (unsigned i = 0; i < lp_events() && i < 64; i++)
		cr_assert_neq(lp_ev[i].error, 0, "lost-write event %u (member %d) says healed", i,
			      lp_ev[i].member);
	cr_assert_gt(rep.unrecoverable, 0, "the scrub counted nothing unrecoverable");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_scrub_leaves_a_lost_write_beside_a_bad_data_block_unhealed)
{
	lp_lost_write_past(5, false, LP_DATA);
}

Test(csum_lostwrite_parity, raid5_scrub_leaves_a_lost_write_beside_an_unreadable_block_unhealed)
{
	lp_lost_write_past(5, true, LP_DATA);
}

Test(csum_lostwrite_parity, raid6_scrub_leaves_a_lost_write_beside_two_bad_data_blocks_unhealed)
{
	lp_lost_write_past(6, false, LP_DATA);
}

Test(csum_lostwrite_parity, raid6_scrub_leaves_a_lost_write_beside_bad_data_and_q_unhealed)
{
	lp_lost_write_past(6, false, CU_Q);
}

Test(csum_lostwrite_parity, raid6_scrub_leaves_a_lost_write_beside_bad_p_and_q_unhealed)
{
	lp_lost_write_past(6, false, LP_PQ);
}

Test(csum_lostwrite_parity, raid6_scrub_leaves_a_lost_write_beside_an_unreadable_block_and_p_unhealed)
{
	lp_lost_write_past(6, true, CU_P);
}

/*
 * Review (issue #41, finding 2): RAID-6, a lost write of LP_BLOCK and its tag beside a data
 * block with bytes flipped in its column, the array opened read-only and scrubbed. The
 * scrub adds the stale block to the erasures (reported -EIO at once: nothing is written on
 * a read-only open), and the generations check after must not find and report it again:
 * one checksum-lost-write event, -EIO, counted once.
 */
Test(csum_lostwrite_parity, raid6_read_only_scrub_reports_a_lost_write_once)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8], blk[CU_BLOCK], tag[8];
	unsigned m, x = 0;
	uint64_t k;
	bool found = false;

	lp_setup(&b, 6);
	lp_find(&b, LP_BLOCK, &m, &k);
	for (unsigned i = 0; i < b.n && !found; i++)
		if (i != m && cu_map(&b.g, i, k) >= 0) {
			x = i;
			found = true;
		}
	cr_assert(found);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, true);
	lp_block(&b, x, k, blk, tag, false);
	for (unsigned o = 0; o < CU_BLOCK; o += 509)
		blk[o] ^= 0x5a;
	lp_rw(&b, x, b.g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, true);

	cr_assert_eq(graid_array_open(b.s.paths, b.n, &ro, &a), 0);
	a->csum_gens = true;
	graid_array_set_event_callback(a, lp_on_event, NULL);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(lp_events(), 1, "%u lost-write events for one lost write", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)m);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, -EIO);
	cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
	cr_assert_eq(mi.checksum_lost_writes, 1, "counted %llu times",
		     (unsigned long long)mi.checksum_lost_writes);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

/*
 * The scrub's guard (issue #41 review): a data block rebuilt from P that comes out as the
 * stale block itself (its own tag's CRC holds on it) is not reported healed: that is what
 * a rebuild with wrong bytes elsewhere in the column gives. A lost write of the very bytes
 * the block held gives it too: the scrub reports it -EIO and leaves it; a read then judges
 * it under the stripe lock and heals it (the tag's generation), reported healed.
 */
Test(csum_lostwrite_parity, raid5_scrub_refuses_a_heal_that_rebuilds_the_stale_bytes)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8];
	unsigned m;
	uint64_t k;

	lp_setup(&b, 5);
	lp_find(&b, LP_BLOCK, &m, &k);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2); /* the same bytes again: only the generation moves */
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, m, k, old, old_tag, true);

	a = lp_open(&b);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)m);
	cr_assert_eq(lp_ev[0].error, -EIO, "the scrub reported the heal %d", lp_ev[0].error);
	lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, 2);
	cr_assert_eq(lp_events(), 2, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[1].error, 0, "the read did not heal it");
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	au_remove(&b.s);
}

/*
 * A lost write of P (or Q): the data is right, that parity and its record one write behind.
 * A read returns the data, the parity is rewritten (one event naming its member), a scrub
 * then finds nothing.
 */
static void lp_lost_parity_write(int level, int64_t which)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[CU_BLOCK], old_tag[8];
	unsigned m, p;
	uint64_t k;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	p = lp_parity(&b, k, which);
	lp_block(&b, p, k, old, old_tag, false);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(&b, p, k, old, old_tag, true);

	a = lp_open(&b);
	lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, 2);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)p, "the event names member %d, not the parity's %u",
		     lp_ev[0].member, p);
	cr_assert_eq(lp_ev[0].error, 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "%llu mismatches after P was rewritten",
		     (unsigned long long)rep.mismatches);
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_lost_write_of_p_is_rewritten_from_the_data)
{
	lp_lost_parity_write(5, CU_P);
}

Test(csum_lostwrite_parity, raid6_lost_write_of_p_is_rewritten_from_the_data)
{
	lp_lost_parity_write(6, CU_P);
}

/* RAID-6: P's record is the data's, Q's is not: Q is the stale one, rewritten. */
Test(csum_lostwrite_parity, raid6_lost_write_of_q_is_rewritten_from_the_data)
{
	lp_lost_parity_write(6, CU_Q);
}

/*
 * Two data blocks of one column lost their writes: the record cannot name them. That
 * column's reads fail -EIO (an event naming member -1 and the column's block), the other
 * blocks read right, and a write of the whole row brings the column back.
 */
static void lp_two_stale(int level)
{
	struct graid_array *a;
	struct lp_bed b;
	uint8_t old[2][CU_BLOCK], old_tag[2][8], *row;
	unsigned m, sm[2], ns = 0;
	uint64_t k, blk[2], rowlen, row0;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	/*
	 * Data indices 0 and 2, each one write behind: dS = 2, dW = 1 + 3, which the locator
	 * reads as index 1 two writes behind. RAID-5 heals one write only; RAID-6 asks Q.
	 */
	for (unsigned want = 0; want <= 2; want += 2)
		for (unsigned i = 0; i < b.n; i++) {
			int64_t ab = cu_map(&b.g, i, k);

			if (ab >= 0 && (uint64_t)ab / b.g.bpc % 3 == want) {
				sm[ns] = i;
				blk[ns++] = (uint64_t)ab;
			}
		}
	cr_assert_eq(ns, 2);
	a = lp_open(&b);
	for (unsigned i = 0; i < 2; i++)
		lp_write_block(a, blk[i], 2);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 2; i++)
		lp_block(&b, sm[i], k, old[i], old_tag[i], false);
	a = lp_open(&b);
	for (unsigned i = 0; i < 2; i++)
		lp_write_block(a, blk[i], 3);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < 2; i++)
		lp_block(&b, sm[i], k, old[i], old_tag[i], true);

	a = lp_open(&b);
	lp_warm(&b, a, k);
	lp_expect(a, blk[0], 0);
	cr_assert_geq(lp_events(), 1);
	cr_assert_eq(lp_ev[0].member, -1, "the event names member %d", lp_ev[0].member);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, -EIO);
	lp_expect(a, blk[1], 0);
	/* A scrub reports the column and leaves its parity alone (no vote over stale data). */
	{
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
		uint8_t p0[CU_BLOCK], p0_tag[8], p1[CU_BLOCK], p1_tag[8];
		unsigned pm = lp_parity(&b, k, CU_P);
		unsigned before = lp_events();

		lp_block(&b, pm, k, p0, p0_tag, false);
		cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
		lp_block(&b, pm, k, p1, p1_tag, false);
		cr_assert_eq(memcmp(p0, p1, CU_BLOCK), 0, "the scrub rewrote P over stale data");
		cr_assert_eq(lp_events(), before + 1);
		cr_assert_eq(lp_ev[before].member, -1);
		cr_assert_eq(lp_ev[before].error, -EIO);
	}
	lp_expect(a, blk[0], 0);
	/* The next block of the same chunks is another column: right. */
	lp_expect(a, blk[0] + 1, 1);
	lp_expect(a, blk[1] + 1, 1);
	/* A write of the whole row covers the column. */
	rowlen = (uint64_t)(b.n - (level == 6 ? 2u : 1u)) * LP_CHUNK;
	row0 = blk[0] * CU_BLOCK / rowlen * rowlen;
	row = malloc(rowlen);
	lp_pattern(row, row0, rowlen, 4);
	cr_assert_eq(graid_array_write(a, row, rowlen, row0), (ssize_t)rowlen);
	free(row);
	lp_expect(a, blk[0], 4);
	lp_expect(a, blk[1], 4);
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_two_stale_blocks_of_a_column_fail_it_until_rewritten)
{
	lp_two_stale(5);
}

Test(csum_lostwrite_parity, raid6_two_stale_blocks_of_a_column_fail_it_until_rewritten)
{
	lp_two_stale(6);
}

static void lp_random_writes(const struct lp_bed *b, struct graid_array *a, unsigned *seed,
			     unsigned n, unsigned round);

/*
 * Full-stripe, read-modify-write and reconstruct-write, unaligned spans, discards and
 * zeroes (whole rows deallocated, parts written): each leaves every column's records equal
 * to its data's (checked from the member files).
 */
static void lp_paths(int level, unsigned flags)
{
	struct graid_array *a;
	struct lp_bed b;
	uint8_t *buf;
	unsigned seed = 41;

	lp_setup_flags(&b, level, flags);
	lp_records_hold(&b); /* the full-stripe fill */
	a = lp_open(&b);
	buf = malloc(8 * LP_CHUNK);
	for (unsigned i = 0; i < 200; i++) {
		uint64_t blocks = 1 + rand_r(&seed) % (8 * LP_CHUNK / CU_BLOCK);
		uint64_t at = rand_r(&seed) % (b.size / CU_BLOCK - blocks);

		lp_pattern(buf, at * CU_BLOCK, blocks * CU_BLOCK, 10 + i);
		cr_assert_eq(graid_array_write(a, buf, blocks * CU_BLOCK, at * CU_BLOCK),
			     (ssize_t)(blocks * CU_BLOCK));
	}
	free(buf);
	/* Discards and zeroes, whole rows (deallocated) and parts of rows (written). */
	for (unsigned i = 0; i < 20; i++) {
		uint64_t blocks = 1 + rand_r(&seed) % (24 * LP_CHUNK / CU_BLOCK);
		uint64_t at = rand_r(&seed) % (b.size / CU_BLOCK - blocks);

		cr_assert_eq((i % 2 ? graid_array_discard
				    : graid_array_write_zeroes)(a, at * CU_BLOCK, blocks * CU_BLOCK),
			     0);
	}
	lp_random_writes(&b, a, &seed, 50, 500);
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	cr_assert_eq(lp_events(), 0, "%u lost-write events without a lost write", lp_events());
	au_remove(&b.s);
}

/*
 * Member @p m's block of array block @p blk put back as it was before the last @p misses
 * writes of it (a lost write of data and tag): saved after round 2, rounds 3 .. 2 + misses
 * written, closed, put back.
 */
static void lp_lose(struct lp_bed *b, uint64_t blk, unsigned m, uint64_t k, unsigned misses)
{
	uint8_t old[CU_BLOCK], old_tag[8];
	struct graid_array *a = lp_open(b);

	lp_write_block(a, blk, 2);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(b, m, k, old, old_tag, false);
	a = lp_open(b);
	for (unsigned r = 3; r <= 2 + misses; r++)
		lp_write_block(a, blk, r);
	cr_assert_eq(graid_array_close(a), 0);
	lp_block(b, m, k, old, old_tag, true);
}

/*
 * A scrub (no read before it) finds the lost write by the records: the block rebuilt and
 * written back (one event naming its member, healed), the syndromes then clean.
 */
static void lp_scrub_heals(int level, unsigned misses, bool parity)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct lp_bed b;
	unsigned m, who;
	uint64_t k;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	who = parity ? lp_parity(&b, k, CU_P) : m;
	lp_lose(&b, LP_BLOCK, who, k, misses);
	a = lp_open(&b);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_REPAIR, &rep), 0);
	cr_assert_eq(lp_events(), 1, "%u lost-write events", lp_events());
	cr_assert_eq(lp_ev[0].member, (int)who, "the event names member %d, not %u",
		     lp_ev[0].member, who);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, 0);
	cr_assert_eq(rep.mismatches, 0, "%llu syndrome mismatches left to the vote",
		     (unsigned long long)rep.mismatches);
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	a = lp_open(&b);
	lp_expect(a, LP_BLOCK, 2 + misses);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(lp_events(), 1);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_scrub_heals_a_lost_write_of_a_data_block)
{
	lp_scrub_heals(5, 1, false);
}

Test(csum_lostwrite_parity, raid6_scrub_heals_a_block_that_missed_two_writes)
{
	lp_scrub_heals(6, 2, false);
}

Test(csum_lostwrite_parity, raid5_scrub_rewrites_a_stale_p)
{
	lp_scrub_heals(5, 1, true);
}

Test(csum_lostwrite_parity, raid6_scrub_rewrites_a_stale_p)
{
	lp_scrub_heals(6, 1, true);
}

/*
 * RAID-6 with one member out (@p which: CU_Q, or a data member other than the stale one's)
 * and a lost write of a data block: the remaining records see it but cannot check a rebuild,
 * so that column's reads fail -EIO (an event naming member -1); other columns read right.
 */
static void lp_degraded_detects(int64_t which)
{
	struct graid_array *a;
	struct lp_bed b;
	unsigned m, out = 0;
	uint64_t k;

	lp_setup(&b, 6);
	lp_find(&b, LP_BLOCK, &m, &k);
	lp_lose(&b, LP_BLOCK, m, k, 1);
	for (unsigned i = 0; i < b.n; i++)
		if (i != m && (which == CU_Q ? cu_map(&b.g, i, k) == CU_Q : cu_map(&b.g, i, k) >= 0))
			out = i;
	a = lp_open(&b);
	cr_assert_eq(graid_array_fail_member(a, out), 0);
	lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, 0);
	cr_assert_geq(lp_events(), 1);
	cr_assert_eq(lp_ev[0].member, -1, "the event names member %d", lp_ev[0].member);
	cr_assert_eq(lp_ev[0].block, k);
	cr_assert_eq(lp_ev[0].error, -EIO);
	lp_expect(a, LP_BLOCK + 1, 1);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid6_without_q_detects_a_lost_write_and_fails_the_column)
{
	lp_degraded_detects(CU_Q);
}

Test(csum_lostwrite_parity, raid6_without_a_data_member_detects_a_lost_write)
{
	lp_degraded_detects(0);
}

/*
 * RAID-5 with a member out judges no column (nothing to compare the missing block's record
 * with), so its spans are never marked and every read of them runs the span check again. It
 * must not read the other members' tag blocks for a verdict that cannot be "consistent": on
 * a member larger than the cache's reach each random read would pay a synchronous 4 KiB
 * read per other member, on the queue's completion path, for nothing.
 */
Test(csum_lostwrite_parity, raid5_degraded_read_reads_no_other_tag_blocks)
{
	struct tag_peek pk;
	struct graid_array *a;
	struct lp_bed b;
	unsigned m, out;
	uint64_t k;

	lp_setup(&b, 5);
	lp_find(&b, LP_BLOCK, &m, &k);
	out = (m + 1) % b.n;
	a = lp_open(&b);
	cr_assert_eq(graid_array_fail_member(a, out), 0);
	lp_expect(a, LP_BLOCK, 1);
	for (unsigned p = 0; p < b.n; p++)
		if (p != m && p != out)
			cr_assert_eq(tag_store_peek(a, p, k, 1, &pk), -ENOENT,
				     "member %u's tag block was read for a span check that cannot "
				     "pass", p);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&b.s);
}

#if GRAID_FAULT_INJECTION
static pthread_t lp_main;
static atomic_bool lp_hold;
static _Atomic time_t lp_until;

/* Reads of other threads (the worker's resync) wait while lp_hold, till 10 s from the open. */
static void lp_seam(struct graid_array *a, unsigned member)
{
	(void)a;
	(void)member;
	while (atomic_load(&lp_hold) && !pthread_equal(pthread_self(), lp_main) &&
	       time(NULL) < atomic_load(&lp_until))
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}
#endif

/*
 * A lost write of a block, then a crash while other blocks of its region (and block 0's,
 * where the held resync waits) were written: the region is still to resync when the block
 * is read. There a mismatch is the crash's (docs/INTEGRITY.md, "Crashes"): no lost-write
 * event, the data kept as it is; the resync then makes the records from the data.
 */
Test(csum_lostwrite_parity, raid5_no_lost_write_inside_a_region_still_to_resync)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_RESYNC_BACKGROUND };
	struct graid_array *a;
	struct lp_bed b;
	uint8_t buf[CU_BLOCK];
	int status;
	unsigned m;
	uint64_t k;
	pid_t pid;

	lp_setup(&b, 5);
	lp_find(&b, LP_FAR_BLOCK, &m, &k);
	lp_lose(&b, LP_FAR_BLOCK, m, k, 1);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Other columns of the block's row, and block 0: marked, never closed. */
		a = NULL;
		if (graid_array_open(b.s.paths, b.n, NULL, &a))
			_exit(2);
		a->csum_gens = true;
		lp_pattern(buf, 0, CU_BLOCK, 9);
		if (graid_array_write(a, buf, CU_BLOCK, 0) != CU_BLOCK)
			_exit(3);
		lp_pattern(buf, (LP_FAR_BLOCK + 1) * CU_BLOCK, CU_BLOCK, 9);
		_exit(graid_array_write(a, buf, CU_BLOCK, (LP_FAR_BLOCK + 1) * CU_BLOCK) ==
			      CU_BLOCK ? 0 : 4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(b.s.paths, b.n);

	lp_main = pthread_self();
	atomic_store(&lp_hold, true);
	atomic_store(&lp_until, time(NULL) + 10);
	graid__test_before_read = lp_seam;
	cr_assert_eq(graid_array_open(b.s.paths, b.n, &opt, &a), 0);
	a->csum_gens = true;
	graid_array_set_event_callback(a, lp_on_event, NULL);
	cr_assert(bitmap_unresynced(a, k / b.g.bpc), "the block's row is not still to resync");
	lp_warm(&b, a, k);
	lp_expect(a, LP_FAR_BLOCK, 2); /* the data is the truth there: the old bytes */
	cr_assert_eq(lp_events(), 0, "%u lost-write events inside a region to resync",
		     lp_events());
	atomic_store(&lp_hold, false);
	graid__test_before_read = NULL;
	cr_assert_eq(graid_array_close(a), 0);
	/* The resync (at this open, if the close stopped it) makes the records from the data. */
	a = lp_open(&b);
	lp_expect(a, LP_FAR_BLOCK, 2);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(lp_events(), 0);
	lp_records_hold(&b);
	au_remove(&b.s);
#endif
}

/* The racers: writes and reads of the same few stripes, till stop. */
struct lp_race {
	const struct lp_bed *b;
	struct graid_array *a;
	atomic_bool stop;
	atomic_uint reads, writes, failed;
};

#define LP_RACE_BLOCKS 96u /* the first 8 rows of the bed's RAID-5/6 (3 data chunks of 4) */

static void *lp_race_writer(void *arg)
{
	struct lp_race *r = arg;
	uint8_t buf[8 * CU_BLOCK];
	unsigned seed = 5, round = 100;

	while (!atomic_load(&r->stop)) {
		uint64_t n = 1 + rand_r(&seed) % 8, at = rand_r(&seed) % (LP_RACE_BLOCKS - n);

		lp_pattern(buf, at * CU_BLOCK, n * CU_BLOCK, round++);
		if (graid_array_write(r->a, buf, n * CU_BLOCK, at * CU_BLOCK) !=
		    (ssize_t)(n * CU_BLOCK))
			atomic_fetch_add(&r->failed, 1);
		atomic_fetch_add(&r->writes, 1);
	}
	return NULL;
}

static void *lp_race_reader(void *arg)
{
	struct lp_race *r = arg;
	uint8_t buf[4 * CU_BLOCK];
	unsigned seed = 9;

	while (!atomic_load(&r->stop)) {
		uint64_t n = 1 + rand_r(&seed) % 4, at = rand_r(&seed) % (LP_RACE_BLOCKS - n);

		if (graid_array_read(r->a, buf, n * CU_BLOCK, at * CU_BLOCK) !=
		    (ssize_t)(n * CU_BLOCK))
			atomic_fetch_add(&r->failed, 1);
		atomic_fetch_add(&r->reads, 1);
	}
	return NULL;
}

/*
 * Reads racing writes of the same columns (every read's tags cached, so each is checked
 * against records that writes keep changing): never a lost-write event, never a failed
 * read, and the records hold after.
 */
static void lp_race(int level)
{
	struct lp_race r = { 0 };
	struct lp_bed b;
	pthread_t tw, tr[2];

	lp_setup(&b, level);
	r.b = &b;
	r.a = lp_open(&b);
	cr_assert_eq(pthread_create(&tw, NULL, lp_race_writer, &r), 0);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&tr[i], NULL, lp_race_reader, &r), 0);
	sleep(2);
	atomic_store(&r.stop, true);
	pthread_join(tw, NULL);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(tr[i], NULL);
	cr_log_info("RAID-%d: %u writes and %u reads raced", level, atomic_load(&r.writes),
		    atomic_load(&r.reads));
	cr_assert_eq(atomic_load(&r.failed), 0);
	cr_assert_gt(atomic_load(&r.writes), 10);
	cr_assert_eq(lp_events(), 0, "%u lost-write events from reads racing writes", lp_events());
	cr_assert_eq(graid_array_close(r.a), 0);
	lp_records_hold(&b);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_reads_racing_writes_of_their_columns_report_nothing)
{
	lp_race(5);
}

Test(csum_lostwrite_parity, raid6_reads_racing_writes_of_their_columns_report_nothing)
{
	lp_race(6);
}

static void lp_random_writes(const struct lp_bed *b, struct graid_array *a, unsigned *seed,
			     unsigned n, unsigned round)
{
	uint8_t *buf = malloc(8 * LP_CHUNK);

	for (unsigned i = 0; i < n; i++) {
		uint64_t blocks = 1 + rand_r(seed) % (8 * LP_CHUNK / CU_BLOCK);
		uint64_t at = rand_r(seed) % (b->size / CU_BLOCK - blocks);

		lp_pattern(buf, at * CU_BLOCK, blocks * CU_BLOCK, round + i);
		cr_assert_eq(graid_array_write(a, buf, blocks * CU_BLOCK, at * CU_BLOCK),
			     (ssize_t)(blocks * CU_BLOCK));
	}
	free(buf);
}

/*
 * Degraded writes (a data member out: its blocks' generations are the ones the records
 * imply), a rebuild onto a spare (data blocks get the implied generation, P and Q the
 * record of the data), writes after it, a scrub: the records still hold, no event.
 */
static void lp_degraded_and_rebuild(int level)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct au_set sp;
	struct lp_bed b;
	unsigned seed = 7, out = 1;

	lp_setup(&b, level);
	a = lp_open(&b);
	au_make(&sp, 1, LP_MEMBER_BYTES);
	cr_assert_eq(graid_array_fail_member(a, out), 0);
	lp_random_writes(&b, a, &seed, 100, 100);
	cr_assert_eq(graid_array_add_spare(a, sp.path[0]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	lp_random_writes(&b, a, &seed, 50, 300);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_close(a), 0);
	b.role_path[out] = sp.path[0];
	lp_records_hold(&b);
	cr_assert_eq(lp_events(), 0, "%u lost-write events without a lost write", lp_events());
	au_remove(&sp);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_degraded_writes_and_a_rebuild_keep_the_records)
{
	lp_degraded_and_rebuild(5);
}

Test(csum_lostwrite_parity, raid6_degraded_writes_and_a_rebuild_keep_the_records)
{
	lp_degraded_and_rebuild(6);
}

Test(csum_lostwrite_parity, raid5_every_write_path_keeps_the_records_of_the_data)
{
	lp_paths(5, 0);
}

Test(csum_lostwrite_parity, raid6_every_write_path_keeps_the_records_of_the_data)
{
	lp_paths(6, 0);
}

/*
 * Review (issue #41): a write of several whole stripes (PLAN_RUN, nrun > 1) over a RAID-5
 * column whose data block missed one write. The run is not checked before it
 * (lwc_sop_check() returns for nrun != 1), so the stale block's member is not noted bad and
 * its write takes its own generation + 1 (lwc_own_meta()); P's record is made by
 * lwc_column_meta(), whose judge still names the block stale and counts the *expected*
 * generation + 1 for it. Every data block is written anew, so the column must come out
 * consistent: the records hold, and a read reports no lost write of a block just written.
 */
Test(csum_lostwrite_parity, raid5_a_multi_stripe_write_over_a_stale_block_keeps_the_records)
{
	const unsigned k_data = 3, row_blocks = LP_CHUNK / CU_BLOCK * k_data;
	struct graid_array *a;
	struct lp_bed b;
	uint64_t row0, k;
	uint8_t *buf;
	size_t len;
	unsigned m;

	lp_setup(&b, 5);
	lp_find(&b, LP_BLOCK, &m, &k);
	lp_lose(&b, LP_BLOCK, m, k, 1);
	a = lp_open(&b);
	/* Two whole stripes from the stale block's row: one run of nrun 2. */
	row0 = LP_BLOCK / row_blocks * row_blocks;
	len = (size_t)2 * row_blocks * CU_BLOCK;
	buf = malloc(len);
	cr_assert(buf);
	lp_pattern(buf, row0 * CU_BLOCK, len, 7);
	cr_assert_eq(graid_array_write(a, buf, len, row0 * CU_BLOCK), (ssize_t)len);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	lp_records_hold(&b);
	a = lp_open(&b);
	lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, 7);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(lp_events(), 0, "%u lost-write events after the column was written whole",
		     lp_events());
	au_remove(&b.s);
}

/*
 * Review (issue #41): a bad sector under a data member's tags. The tag store answers a tag
 * block it cannot read with every tag absent, and writes the block back so (tag_store.c
 * tag_get(): "costs their protection, not the member ... unverified until written again").
 * Member m's tag block is put in that state (zeroed) after block LP_BLOCK was written
 * twice more (generation 3). The data is right on every member; only its tags are gone. A
 * read must return it; no lost write is to be reported: an absent tag says nothing about
 * the block's generation (docs/INTEGRITY.md's table: "a block whose tag was absent ... not
 * caught"), and RAID-5's locator then either "heals" a right block or, its generation
 * above 1, fails the column -EIO.
 */
Test(csum_lostwrite_parity, raid5_a_data_members_tag_block_lost_to_a_bad_sector_fails_no_read)
{
	static const uint8_t zero[8];
	struct graid_array *a;
	struct lp_bed b;
	unsigned m;
	uint64_t k;

	lp_setup(&b, 5);
	lp_find(&b, LP_BLOCK, &m, &k);
	a = lp_open(&b);
	lp_write_block(a, LP_BLOCK, 2);
	lp_write_block(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_close(a), 0);
	for (uint64_t j = k - k % 512; j < k - k % 512 + 512 && j < b.g.mblocks; j++)
		lp_rw(&b, m, cu_tag_pos(&b.g, j), (void *)zero, 8, true);
	a = lp_open(&b);
	lp_warm(&b, a, k);
	lp_expect(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(lp_events(), 0, "%u lost-write events for a tag block that was unreadable",
		     lp_events());
	au_remove(&b.s);
}

/*
 * Review (issue #41): RAID-6 loses two members, both data in most rows, and gets them back
 * on spares (@p together: both spares added before one rebuild; else one rebuild each). No
 * write was lost, every block is read back, no lost write is reported. The rebuild gives a
 * data block out "the generation the record implies" (lwc_column_meta(): only with one
 * block missing; two missing both get 0), so a one-after-the-other rebuild leaves the first
 * at 0 and the second at S - the others (both their generations): S holds, W does not, and
 * the column is a mismatch no single block explains (its reads fail -EIO); rebuilt together
 * the locator names the weighted mean of the two (a false heal, or -EIO out of range).
 */
static void lp_double_rebuild(bool together)
{
	struct graid_array *a;
	struct au_set sp;
	struct lp_bed b;
	unsigned failed = 0;

	lp_setup(&b, 6);
	a = lp_open(&b);
	au_make(&sp, 2, LP_MEMBER_BYTES);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_add_spare(a, sp.path[0]), 0);
	if (!together)
		cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_add_spare(a, sp.path[1]), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	for (unsigned pass = 0; pass < 2; pass++)
		for (uint64_t blk = 0; blk < b.size / CU_BLOCK; blk++) {
			uint8_t got[CU_BLOCK], want[CU_BLOCK];

			lp_pattern(want, blk * CU_BLOCK, CU_BLOCK, 1);
			ssize_t n = graid_array_read(a, got, CU_BLOCK, blk * CU_BLOCK);

			if (n != CU_BLOCK || memcmp(got, want, CU_BLOCK) != 0) {
				if (!failed)
					cr_log_info("block %llu: read %zd", (unsigned long long)blk, n);
				failed++;
			}
		}
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(failed, 0, "%u block reads failed or were wrong after the rebuilds", failed);
	cr_assert_eq(lp_events(), 0, "%u lost-write events without a lost write", lp_events());
	au_remove(&sp);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid6_two_data_members_rebuilt_one_after_the_other_read_back)
{
	lp_double_rebuild(false);
}

Test(csum_lostwrite_parity, raid6_two_data_members_rebuilt_together_read_back)
{
	lp_double_rebuild(true);
}

/*
 * Review (issue #41): a lost write read on a read-only handle (nothing is written back).
 * Each read rebuilds the block from the others and returns it; the lost write is one lost
 * write, of one block: it is to be counted once, not once per read (a checksum mismatch
 * there waits in csum_pend and is counted once), and its event not "healed" (error 0) when
 * nothing was written back.
 */
Test(csum_lostwrite_parity, raid5_a_lost_write_read_on_a_read_only_handle_counts_once)
{
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_READ_ONLY };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct lp_bed b;
	unsigned m;
	uint64_t k;

	lp_setup(&b, 5);
	lp_find(&b, LP_BLOCK, &m, &k);
	lp_lose(&b, LP_BLOCK, m, k, 1);
	cr_assert_eq(graid_array_open(b.s.paths, b.n, &opt, &a), 0);
	a->csum_gens = true;
	graid_array_set_event_callback(a, lp_on_event, NULL);
	lp_warm(&b, a, k);
	for (unsigned i = 0; i < 3; i++)
		lp_expect(a, LP_BLOCK, 3);
	cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(mi.checksum_lost_writes, 1, "one lost write counted %llu times",
		     (unsigned long long)mi.checksum_lost_writes);
	cr_assert_neq(lp_ev[0].error, 0, "reported healed though nothing was written back");
	au_remove(&b.s);
}

/*
 * Issue #41 review (rebuild): a lost write of array block LP_BLOCK (member m, one write
 * behind; data index 0 of its row), then the member x holding array block @p xblock of its
 * column fails, unread, and a spare is rebuilt in its role. Rebuilt from the others with
 * the stale block in place, x's block would come out x ^ j_new ^ j_old and be written under
 * a fresh tag. With @p heals (RAID-6, x the next data index: no other block explains the
 * records' mismatch) x's block is rebuilt right, the stale one written back (one event
 * naming m, healed), both read right and the records hold. Else (RAID-5: past its parity;
 * RAID-6 with x two data indexes off, where a block between them two writes behind would
 * explain the mismatch as well): x's unit is recorded lost on the spare, both blocks read
 * -EIO (also after a reopen), no event says healed: never wrong bytes. @p xblock
 * LP_P_ROLE: P's member fails instead (RAID-6: Q's record places the stale block, healed
 * with P's rebuild; before the fix P was rebuilt from the stale data and the block's reads
 * failed -EIO after).
 */
#define LP_P_ROLE UINT64_MAX /* lp_lost_write_then_rebuild(): fail P's member instead */

static void lp_lost_write_then_rebuild(int level, uint64_t xblock, bool heals)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set sp;
	struct lp_bed b;
	unsigned m, x;
	uint64_t k, kx;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	if (xblock == LP_P_ROLE) {
		x = lp_parity(&b, k, CU_P);
	} else {
		lp_find(&b, xblock, &x, &kx);
		cr_assert_eq(kx, k, "array block %llu is not in LP_BLOCK's column",
			     (unsigned long long)xblock);
	}
	lp_lose(&b, LP_BLOCK, m, k, 1);
	au_make(&sp, 1, LP_MEMBER_BYTES);
	for (int pass = 0; pass < 2; pass++) {
		a = lp_open(&b);
		if (pass == 0) {
			cr_assert_eq(graid_array_fail_member(a, x), 0);
			cr_assert_eq(graid_array_add_spare(a, sp.path[0]), 0);
			cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
			b.role_path[x] = sp.path[0];
			for (unsigned i = 0; i < b.n; i++)
				b.s.paths[i] = b.role_path[i] ? b.role_path[i] : b.s.path[i];
		}
		if (xblock != LP_P_ROLE)
			lp_expect(a, xblock, heals ? 1 : 0);
		lp_expect(a, LP_BLOCK, heals ? 3 : 0);
		if (!heals) {
			cr_assert_eq(graid_array_member_info(a, x, &mi), 0);
			cr_assert_gt(mi.bad_blocks, 0, "the spare records no block lost");
		}
		cr_assert_eq(graid_array_close(a), 0);
	}
	cr_assert_gt(lp_events(), 0, "no lost-write event");
	for (unsigned i = 0; i < lp_events() && i < 64; i++)
		if (!heals)
			cr_assert_neq(lp_ev[i].error, 0, "lost-write event %u (member %d) says "
				      "healed", i, lp_ev[i].member);
	if (heals) {
		cr_assert_eq(lp_ev[0].member, (int)m);
		cr_assert_eq(lp_ev[0].error, 0);
		lp_records_hold(&b);
	}
	au_remove(&sp);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_rebuild_beside_a_lost_write_records_the_column_lost)
{
	lp_lost_write_then_rebuild(5, LP_BLOCK + LP_CHUNK / CU_BLOCK, false);
}

Test(csum_lostwrite_parity, raid6_rebuild_beside_a_lost_write_heals_both)
{
	lp_lost_write_then_rebuild(6, LP_BLOCK + LP_CHUNK / CU_BLOCK, true);
}

Test(csum_lostwrite_parity, raid6_rebuild_of_p_beside_a_lost_write_heals_it)
{
	lp_lost_write_then_rebuild(6, LP_P_ROLE, true);
}

Test(csum_lostwrite_parity, raid6_rebuild_beside_a_lost_write_it_cannot_place_records_it_lost)
{
	lp_lost_write_then_rebuild(6, LP_BLOCK + 2 * LP_CHUNK / CU_BLOCK, false);
}

/*
 * Issue #41 review (replace in service): a lost write of array block LP_BLOCK (member m),
 * and the block of another data member x of its column failing its tag (bytes flipped):
 * x is replaced in service, its failing block rebuilt from the others for the new device.
 * Rebuilt with the stale block in place it would come out wrong under a fresh tag. RAID-5:
 * past its parity: the unit recorded lost on the new device, both blocks read -EIO, no
 * event says healed. RAID-6: x's block copied right, the stale block read right after.
 */
static void lp_lost_write_then_replace(int level)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set sp;
	struct lp_bed b;
	uint8_t blk[CU_BLOCK], tag[8];
	unsigned m, x = 0;
	uint64_t k;
	int64_t xb = -1;

	lp_setup(&b, level);
	lp_find(&b, LP_BLOCK, &m, &k);
	for (unsigned i = 0; i < b.n && xb < 0; i++)
		if (i != m && cu_map(&b.g, i, k) >= 0) {
			x = i;
			xb = cu_map(&b.g, i, k);
		}
	cr_assert_geq(xb, 0);
	lp_lose(&b, LP_BLOCK, m, k, 1);
	lp_block(&b, x, k, blk, tag, false);
	for (unsigned o = 0; o < CU_BLOCK; o += 509)
		blk[o] ^= 0x5a;
	lp_rw(&b, x, b.g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, true);
	au_make(&sp, 1, LP_MEMBER_BYTES);
	a = lp_open(&b);
	cr_assert_eq(graid_array_replace_start(a, x, sp.path[0], GRAID_REPLACE_WAIT), 0);
	lp_expect(a, (uint64_t)xb, level == 6 ? 1 : 0);
	lp_expect(a, LP_BLOCK, level == 6 ? 3 : 0);
	if (level == 5) {
		cr_assert_eq(graid_array_member_info(a, x, &mi), 0);
		cr_assert_gt(mi.bad_blocks, 0, "the new device records no block lost");
		for (unsigned i = 0; i < lp_events() && i < 64; i++)
			cr_assert_neq(lp_ev[i].error, 0, "lost-write event %u (member %d) says "
				      "healed", i, lp_ev[i].member);
	}
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&sp);
	au_remove(&b.s);
}

Test(csum_lostwrite_parity, raid5_replace_beside_a_lost_write_records_the_column_lost)
{
	lp_lost_write_then_replace(5);
}

Test(csum_lostwrite_parity, raid6_replace_beside_a_lost_write_copies_right)
{
	lp_lost_write_then_replace(6);
}

/* The same through the write-hole journal (logged first, then in place). */
Test(csum_lostwrite_parity, raid6_journaled_writes_keep_the_records_of_the_data)
{
	lp_paths(6, GRAID_CREATE_JOURNAL);
}

#else

Test(csum_lostwrite_parity, skipped_without_checksums)
{
	cr_log_info("this build's graid.h has no GRAID_CREATE_CHECKSUMS");
}

#endif
