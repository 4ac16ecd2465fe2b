/* SPDX-License-Identifier: MIT */
/*
 * Checksummed arrays on read: a member block changed behind the array's back (a pwrite
 * into its file) is caught by its tag, rebuilt from the others, returned right, written
 * back and reported once; a wrong tag over right data is told apart; more bad blocks than
 * the redundancy covers give -EIO, never wrong bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#ifdef GRAID_CREATE_CHECKSUMS

#define CR_DATA_OFF (1u << 20)
#define CR_MEMBER_BYTES (CR_DATA_OFF + (4u << 20))
#define CR_CHUNK (64u * 1024)
#define CR_EVENTS 256

static pthread_mutex_t cr_lock = PTHREAD_MUTEX_INITIALIZER;
static struct graid_event cr_ev[CR_EVENTS];
static unsigned cr_nev;

static void cr_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	pthread_mutex_lock(&cr_lock);
	if (ev->type == GRAID_EVENT_CSUM_ERROR || ev->type == GRAID_EVENT_CSUM_TAG_ERROR ||
	    ev->type == GRAID_EVENT_CSUM_UNVERIFIED)
		if (cr_nev < CR_EVENTS)
			cr_ev[cr_nev++] = *ev;
	pthread_mutex_unlock(&cr_lock);
}

static void cr_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

struct cr_bed {
	struct au_set s;
	unsigned n;
	int level;
	uint64_t size;
	struct graid_array *a;
};

/* Created with checksums (and @p flags), filled with round 1, closed (tags on the members). */
static void cr_setup_flags(struct cr_bed *b, int level, unsigned n, unsigned flags)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = CR_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS | flags };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *buf;

	memset(b, 0, sizeof(*b));
	b->n = n;
	b->level = level;
	/* The journal's log comes before the data area (33 MiB with the defaults). */
	au_make(&b->s, n, CR_MEMBER_BYTES + (flags & GRAID_CREATE_JOURNAL ? 40u << 20 : 0));
	cr_assert_eq(graid_array_create(b->s.paths, n, &cfg, &b->a), 0);
	cr_assert_eq(graid_array_info(b->a, &info), 0);
	b->size = info.size;
	buf = malloc(b->size);
	cr_pattern(buf, 0, b->size, 1);
	cr_assert_eq(graid_array_write(b->a, buf, b->size, 0), (ssize_t)b->size);
	free(buf);
	cr_assert_eq(graid_array_close(b->a), 0);
	b->a = NULL;
	cr_nev = 0;
}

static void cr_setup(struct cr_bed *b, int level, unsigned n)
{
	cr_setup_flags(b, level, n, 0);
}

static void cr_open(struct cr_bed *b)
{
	cr_assert_eq(graid_array_open(b->s.paths, b->n, NULL, &b->a), 0);
	graid_array_set_event_callback(b->a, cr_on_event, NULL);
}

/* Where array block @p blk (4 KiB) lives: the member and data-area block holding its bytes. */
static void cr_find(const struct cr_bed *b, uint64_t blk, unsigned *member, uint64_t *mblk)
{
	uint8_t want[8], got[8];

	cr_pattern(want, blk * 4096, 8, 1);
	for (unsigned m = 0; m < b->n; m++) {
		int fd = open(b->s.path[m], O_RDONLY);

		for (uint64_t k = 0; k < (CR_MEMBER_BYTES - CR_DATA_OFF) / 4096; k++) {
			cr_assert_eq(pread(fd, got, 8, CR_DATA_OFF + k * 4096), 8);
			if (memcmp(got, want, 8) == 0) {
				*member = m;
				*mblk = k;
				close(fd);
				return;
			}
		}
		close(fd);
	}
	cr_assert_fail("array block %llu found on no member", (unsigned long long)blk);
}

static void cr_member_rw(const struct cr_bed *b, unsigned m, uint64_t at, void *buf,
			 size_t len, bool write)
{
	int fd = open(b->s.path[m], O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write ? pwrite(fd, buf, len, (off_t)at) : pread(fd, buf, len, (off_t)at),
		     (ssize_t)len);
	close(fd);
}

/* Flip a byte in data-area block @p mblk of member @p m; returns the block as it was. */
static void cr_corrupt(const struct cr_bed *b, unsigned m, uint64_t mblk, uint8_t *old)
{
	uint8_t blk[4096];

	cr_member_rw(b, m, CR_DATA_OFF + mblk * 4096, blk, 4096, false);
	if (old)
		memcpy(old, blk, 4096);
	blk[100] ^= 0x5a;
	cr_member_rw(b, m, CR_DATA_OFF + mblk * 4096, blk, 4096, true);
}

/* The whole array reads as round 1, or (@p fails) the read fails -EIO. */
static void cr_read_all(struct cr_bed *b, bool fails)
{
	uint8_t *buf = malloc(b->size), *want = malloc(b->size);
	ssize_t got = graid_array_read(b->a, buf, b->size, 0);

	cr_pattern(want, 0, b->size, 1);
	if (fails) {
		cr_assert_eq(got, -EIO, "read: %zd", got);
	} else {
		cr_assert_eq(got, (ssize_t)b->size, "read: %zd", got);
		cr_assert_eq(memcmp(buf, want, b->size), 0, "wrong bytes returned");
	}
	free(buf);
	free(want);
}

static unsigned cr_count(int type, int member, uint64_t block, int error)
{
	unsigned k = 0;

	pthread_mutex_lock(&cr_lock);
	for (unsigned i = 0; i < cr_nev; i++)
		if (cr_ev[i].type == type && cr_ev[i].member == member && cr_ev[i].stripe == block &&
		    cr_ev[i].error == error)
			k++;
	pthread_mutex_unlock(&cr_lock);
	return k;
}

static void cr_done(struct cr_bed *b)
{
	if (b->a)
		cr_assert_eq(graid_array_close(b->a), 0);
	au_remove(&b->s);
}

/* One data block corrupted: right bytes, the file fixed, one CSUM_ERROR healed. */
static void cr_one_block(int level, unsigned n)
{
	struct cr_bed b;
	uint8_t good[4096], now[4096];
	unsigned m;
	uint64_t k;

	cr_setup(&b, level, n);
	cr_find(&b, 37, &m, &k);
	cr_corrupt(&b, m, k, good);
	cr_open(&b);
	cr_read_all(&b, false);
	cr_member_rw(&b, m, CR_DATA_OFF + k * 4096, now, 4096, false);
	cr_assert_eq(memcmp(now, good, 4096), 0, "the member's block was not written back");
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m, k, 0), 1, "%u events", cr_nev);
	cr_assert_eq(cr_nev, 1, "%u checksum events", cr_nev);
	cr_done(&b);
}

Test(csum_read, raid1_block_healed) { cr_one_block(1, 2); }
Test(csum_read, raid5_block_healed) { cr_one_block(5, 3); }
Test(csum_read, raid6_block_healed) { cr_one_block(6, 5); }
Test(csum_read, raid10_block_healed) { cr_one_block(10, 4); }

/* The member's tag area: right after its data area (docs/FORMAT.md, "Checksums"). */
static uint64_t cr_tag_at(const struct cr_bed *b, uint64_t mblk)
{
	uint64_t data = b->level == 1 ? b->size
		      : b->level == 10 ? b->size * 2 / b->n
		      : b->size / (b->n - (b->level == 6 ? 2 : 1));

	return CR_DATA_OFF + data + mblk / 512 * 4096 + mblk % 512 * 8;
}

Test(csum_read, wrong_tag_over_right_data_is_a_tag_error)
{
	struct cr_bed b;
	uint8_t tag[8], before[4096], after[4096];
	unsigned m;
	uint64_t k;

	cr_setup(&b, 5, 3);
	cr_find(&b, 9, &m, &k);
	cr_member_rw(&b, m, CR_DATA_OFF + k * 4096, before, 4096, false);
	cr_member_rw(&b, m, cr_tag_at(&b, k), tag, 8, false);
	cr_assert(tag[7] & 0x80, "the block's tag is not valid on the member");
	tag[0] ^= 0xff;
	cr_member_rw(&b, m, cr_tag_at(&b, k), tag, 8, true);
	cr_open(&b);
	cr_read_all(&b, false);
	cr_member_rw(&b, m, CR_DATA_OFF + k * 4096, after, 4096, false);
	cr_assert_eq(memcmp(before, after, 4096), 0, "the data changed");
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_TAG_ERROR, (int)m, k, 0), 1);
	cr_assert_eq(cr_nev, 1);
	cr_done(&b);
}

Test(csum_read, raid6_two_bad_blocks_of_a_stripe_healed)
{
	struct cr_bed b;
	unsigned m[2];
	uint64_t k[2];

	cr_setup(&b, 6, 5);
	for (unsigned i = 0; i < 2; i++) {
		cr_find(&b, i * (CR_CHUNK / 4096), &m[i], &k[i]);
		cr_corrupt(&b, m[i], k[i], NULL);
	}
	cr_open(&b);
	cr_read_all(&b, false);
	for (unsigned i = 0; i < 2; i++)
		cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m[i], k[i], 0), 1);
	cr_done(&b);
}

Test(csum_read, raid6_three_bad_blocks_of_a_stripe_fail_eio)
{
	struct cr_bed b;
	unsigned m[3];
	uint64_t k[3];

	cr_setup(&b, 6, 5);
	for (unsigned i = 0; i < 3; i++) {
		cr_find(&b, i * (CR_CHUNK / 4096), &m[i], &k[i]);
		cr_corrupt(&b, m[i], k[i], NULL);
	}
	cr_open(&b);
	cr_read_all(&b, true);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m[i], k[i], -EIO), 1,
			     "block %u", i);
	cr_done(&b);
}

Test(csum_read, mirror_both_copies_bad_fail_eio)
{
	struct cr_bed b;
	uint64_t k = 5;

	cr_setup(&b, 1, 2);
	cr_corrupt(&b, 0, k, NULL);
	cr_corrupt(&b, 1, k, NULL);
	cr_open(&b);
	cr_read_all(&b, true);
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, 0, k, -EIO) +
		     cr_count(GRAID_EVENT_CSUM_ERROR, 1, k, -EIO), 2);
	cr_done(&b);
}

Test(csum_read, raid0_create_refused)
{
	struct au_set s;
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 0,
					  .chunk_bytes = CR_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array *a = NULL;

	au_make(&s, 2, CR_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a), -EINVAL);
	au_remove(&s);
}

/* A scrub reads every block: a corrupted one is found, rebuilt and written back. */
Test(csum_read, scrub_heals_a_corrupted_block)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct cr_bed b;
	uint8_t good[4096], now[4096];
	unsigned m;
	uint64_t k;

	cr_setup(&b, 5, 3);
	cr_find(&b, 77, &m, &k);
	cr_corrupt(&b, m, k, good);
	cr_open(&b);
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	cr_member_rw(&b, m, CR_DATA_OFF + k * 4096, now, 4096, false);
	cr_assert_eq(memcmp(now, good, 4096), 0, "the scrub did not write the block back");
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m, k, 0), 1, "%u events", cr_nev);
	cr_read_all(&b, false);
	cr_assert_eq(cr_nev, 1, "%u checksum events", cr_nev);
	cr_done(&b);
}

/* A rebuild onto a spare reads a survivor's corrupted block: healed, not copied. */
Test(csum_read, rebuild_onto_a_spare_heals_a_survivor)
{
	struct cr_bed b;
	struct au_set sp;
	uint8_t good[4096], now[4096];
	unsigned m;
	uint64_t k;

	cr_setup(&b, 6, 5);
	cr_find(&b, 3, &m, &k);
	cr_corrupt(&b, m, k, good);
	cr_open(&b);
	au_make(&sp, 1, CR_MEMBER_BYTES);
	cr_assert_eq(graid_array_fail_member(b.a, (m + 1) % b.n), 0);
	cr_assert_eq(graid_array_add_spare(b.a, sp.path[0]), 0);
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	cr_member_rw(&b, m, CR_DATA_OFF + k * 4096, now, 4096, false);
	cr_assert_eq(memcmp(now, good, 4096), 0, "the survivor's block was not written back");
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m, k, 0), 1, "%u events", cr_nev);
	cr_read_all(&b, false);
	cr_assert_eq(graid_array_close(b.a), 0);
	b.a = NULL;
	au_remove(&sp);
	cr_done(&b);
}

/*
 * A replace in service copies a member whose block is corrupted: the new device gets the
 * right bytes and the right tags (read back after a close and open: no checksum events).
 */
Test(csum_read, replace_in_service_copies_right_bytes_and_tags)
{
	struct cr_bed b;
	struct au_set sp;
	unsigned m;
	uint64_t k;

	cr_setup(&b, 5, 3);
	cr_find(&b, 50, &m, &k);
	cr_corrupt(&b, m, k, NULL);
	cr_open(&b);
	au_make(&sp, 1, CR_MEMBER_BYTES);
	cr_assert_eq(graid_array_replace_start(b.a, m, sp.path[0], GRAID_REPLACE_WAIT), 0);
	cr_assert_eq(cr_count(GRAID_EVENT_CSUM_ERROR, (int)m, k, 0), 1, "%u events", cr_nev);
	cr_assert_eq(graid_array_close(b.a), 0);
	/* The role's device is the new file now. */
	strcpy(b.s.path[m], sp.path[0]);
	b.s.paths[m] = b.s.path[m];
	cr_nev = 0;
	cr_open(&b);
	cr_read_all(&b, false);
	cr_assert_eq(cr_nev, 0, "%u checksum events on the new device", cr_nev);
	cr_done(&b);
	au_remove(&sp);
}

struct cr_race {
	struct graid_array *a;
	uint64_t off;
	atomic_bool stop;
};

static void *cr_race_writer(void *arg)
{
	struct cr_race *r = arg;
	uint8_t *buf = aligned_alloc(4096, 4096);

	for (unsigned i = 0; !atomic_load(&r->stop); i++) {
		cr_pattern(buf, r->off, 4096, 1 + i % 2);
		if (graid_array_write(r->a, buf, 4096, r->off) != 4096)
			break;
	}
	free(buf);
	return NULL;
}

/* A read racing writes of the same block: old or new bytes, never a checksum failure. */
static void cr_race(int level, unsigned n)
{
	struct cr_bed b;
	struct cr_race r;
	pthread_t t;
	uint8_t *buf = aligned_alloc(4096, 4096), one[4096], two[4096];

	cr_setup(&b, level, n);
	cr_open(&b);
	r.a = b.a;
	r.off = 12 * 4096;
	atomic_init(&r.stop, false);
	cr_pattern(one, r.off, 4096, 1);
	cr_pattern(two, r.off, 4096, 2);
	cr_assert_eq(pthread_create(&t, NULL, cr_race_writer, &r), 0);
	for (unsigned i = 0; i < 20000; i++) {
		ssize_t got = graid_array_read(b.a, buf, 4096, r.off);

		cr_assert_eq(got, 4096, "read %u: %zd", i, got);
		cr_assert(memcmp(buf, one, 4096) == 0 || memcmp(buf, two, 4096) == 0,
			  "read %u: neither the old nor the new bytes", i);
	}
	atomic_store(&r.stop, true);
	pthread_join(t, NULL);
	free(buf);
	cr_assert_eq(cr_nev, 0, "%u checksum events", cr_nev);
	cr_done(&b);
}

Test(csum_read, raid5_read_racing_a_write_sees_old_or_new) { cr_race(5, 3); }
Test(csum_read, raid1_read_racing_a_write_sees_old_or_new) { cr_race(1, 2); }

/*
 * Random writes, discards, write-zeroes and reads (a model of the contents beside them):
 * right bytes always, and no checksum event, before and after a close.
 */
static void cr_random(int level, unsigned n, unsigned flags)
{
	struct cr_bed b;
	uint8_t *buf, *want;
	unsigned seed = 12345 + (unsigned)level;

	cr_setup_flags(&b, level, n, flags);
	cr_open(&b);
	buf = aligned_alloc(4096, 256 * 1024);
	want = malloc(b.size);
	cr_pattern(want, 0, b.size, 1);
	for (unsigned i = 0; i < 2000; i++) {
		size_t len = (size_t)(1 + rand_r(&seed) % 64) * 4096;
		uint64_t off = (uint64_t)(rand_r(&seed) % ((b.size - len) / 4096 + 1)) * 4096;
		unsigned op = (unsigned)rand_r(&seed) % 10;

		if (op < 4) {
			cr_pattern(buf, off, len, 2 + i);
			cr_assert_eq(graid_array_write(b.a, buf, len, off), (ssize_t)len);
			memcpy(want + off, buf, len);
		} else if (op == 4) {
			cr_assert_eq(graid_array_discard(b.a, off, len), 0);
			memset(want + off, 0, len);
		} else if (op == 5) {
			cr_assert_eq(graid_array_write_zeroes(b.a, off, len), 0);
			memset(want + off, 0, len);
		} else {
			cr_assert_eq(graid_array_read(b.a, buf, len, off), (ssize_t)len);
			cr_assert_eq(memcmp(buf, want + off, len), 0, "op %u: wrong bytes", i);
		}
		if (i % 500 == 0)
			cr_assert_eq(graid_array_flush(b.a), 0);
	}
	cr_assert_eq(graid_array_close(b.a), 0);
	b.a = NULL;
	cr_open(&b);
	for (uint64_t off = 0; off < b.size; off += 256 * 1024) {
		size_t len = b.size - off < 256 * 1024 ? (size_t)(b.size - off) : 256 * 1024;

		cr_assert_eq(graid_array_read(b.a, buf, len, off), (ssize_t)len);
		cr_assert_eq(memcmp(buf, want + off, len), 0, "after reopen: wrong bytes");
	}
	free(buf);
	free(want);
	cr_assert_eq(cr_nev, 0, "%u checksum events", cr_nev);
	cr_done(&b);
}

Test(csum_read, raid5_no_false_positives_under_random_io) { cr_random(5, 3, 0); }
Test(csum_read, raid6_journal_no_false_positives_under_random_io)
{
	cr_random(6, 4, GRAID_CREATE_JOURNAL);
}
Test(csum_read, raid10_no_false_positives_under_random_io) { cr_random(10, 4, 0); }

#else

Test(csum_read, needs_the_checksum_format)
{
	cr_skip_test("GRAID_CREATE_CHECKSUMS is not in this tree yet (the tag store's branch)");
}

#endif
