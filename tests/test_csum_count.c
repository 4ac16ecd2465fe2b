/* SPDX-License-Identifier: MIT */
/*
 * Checksum mismatches counted per role in graid_member_info: wrong data and wrong tags, healed
 * or lost, by reads and by a scrub, each once, since the open; a caller's older, shorter
 * struct left as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "csumutil.h"

#define CC_CHUNK (16u * 1024)
#define CC_MEMBER_BYTES ((1u << 20) + (4u << 20))

struct cc_bed {
	struct au_set s;
	struct cu_geom g;
	unsigned n;
	uint64_t size;
	struct graid_array *a;
	struct cu_events ev;
};

static void cc_pattern(uint8_t *buf, uint64_t off, size_t len)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / 4096) << 16 | 0x5a;

		memcpy(buf + k, &v, 8);
	}
}

static void cc_rw(const struct cc_bed *b, unsigned m, uint64_t at, void *buf, size_t len,
		  bool write)
{
	int fd = open(b->s.path[m], O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write ? pwrite(fd, buf, len, (off_t)at) : pread(fd, buf, len, (off_t)at),
		     (ssize_t)len);
	close(fd);
}

/* A checksummed array filled with the pattern (every block tagged) and closed. */
static void cc_setup(struct cc_bed *b, int level, unsigned n)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = CC_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint8_t *buf;

	memset(b, 0, sizeof(*b));
	b->n = n;
	cu_events_init(&b->ev);
	au_make(&b->s, n, CC_MEMBER_BYTES);
	cr_assert_eq(graid_array_create(b->s.paths, n, &cfg, &b->a), 0);
	cr_assert_eq(graid_array_info(b->a, &info), 0);
	b->size = info.size;
	cu_geom_read(&b->g, b->a, b->s.path[0]);
	buf = malloc(b->size);
	cr_assert_not_null(buf);
	cc_pattern(buf, 0, b->size);
	cr_assert_eq(graid_array_write(b->a, buf, b->size, 0), (ssize_t)b->size);
	free(buf);
	cr_assert_eq(graid_array_close(b->a), 0);
	b->a = NULL;
}

static void cc_open(struct cc_bed *b)
{
	cr_assert_eq(graid_array_open(b->s.paths, b->n, NULL, &b->a), 0);
	cu_events_reset(&b->ev);
	graid_array_set_event_callback(b->a, cu_events_cb, &b->ev);
}

static void cc_close(struct cc_bed *b)
{
	cr_assert_eq(graid_array_close(b->a), 0);
	b->a = NULL;
}

static void cc_done(struct cc_bed *b)
{
	if (b->a)
		cc_close(b);
	cu_events_free(&b->ev);
	au_remove(&b->s);
}

/* Any data block of member @p m from its block @p from on. */
static uint64_t cc_data_on(const struct cc_bed *b, unsigned m, uint64_t from)
{
	for (uint64_t k = from; k < b->g.mblocks; k++)
		if (cu_map(&b->g, m, k) >= 0)
			return k;
	cr_assert_fail("no data block on member %u", m);
	return 0;
}

/* A byte of member @p m's data-area block @p k changed behind the array. */
static void cc_bad_data(const struct cc_bed *b, unsigned m, uint64_t k)
{
	uint8_t blk[CU_BLOCK];

	cc_rw(b, m, b->g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, false);
	blk[123] ^= 0xa5;
	cc_rw(b, m, b->g.data_offset + k * CU_BLOCK, blk, CU_BLOCK, true);
}

/* The tag of member @p m's block @p k changed (its VALID bit kept), the data left right. */
static void cc_bad_tag(const struct cc_bed *b, unsigned m, uint64_t k)
{
	uint8_t tag[8];

	cc_rw(b, m, cu_tag_pos(&b->g, k), tag, 8, false);
	cr_assert(tag[7] & 0x80, "the tag of member %u block %llu is not valid", m,
		  (unsigned long long)k);
	tag[1] ^= 0xff;
	cc_rw(b, m, cu_tag_pos(&b->g, k), tag, 8, true);
}

static void cc_info(const struct cc_bed *b, unsigned m, struct graid_member_info *mi)
{
	memset(mi, 0, sizeof(*mi));
	mi->struct_size = sizeof(*mi);
	cr_assert_eq(graid_array_member_info(b->a, m, mi), 0);
}

/* Every role's counts are these (@p data: mismatches, @p tag: of them wrong tags). */
static void cc_expect(const struct cc_bed *b, const uint64_t *data, const uint64_t *tag,
		      const char *when)
{
	for (unsigned m = 0; m < b->n; m++) {
		struct graid_member_info mi;

		cc_info(b, m, &mi);
		cr_assert_eq(mi.checksum_errors, data[m], "%s: role %u counts %llu mismatches, "
			     "wanted %llu", when, m, (unsigned long long)mi.checksum_errors,
			     (unsigned long long)data[m]);
		cr_assert_eq(mi.checksum_tag_errors, tag[m], "%s: role %u counts %llu tag errors, "
			     "wanted %llu", when, m, (unsigned long long)mi.checksum_tag_errors,
			     (unsigned long long)tag[m]);
		cr_assert_eq(mi.errors, 0, "%s: role %u: a mismatch counted as an I/O error", when,
			     m);
		cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "%s: role %u taken out", when, m);
	}
}

static void cc_read_all(struct cc_bed *b, ssize_t want)
{
	uint8_t *buf = malloc(b->size), *right = malloc(b->size);
	ssize_t got;

	cr_assert(buf && right);
	got = graid_array_read(b->a, buf, b->size, 0);
	cr_assert_eq(got, want, "read: %zd, wanted %zd", got, want);
	cc_pattern(right, 0, b->size);
	if (want == (ssize_t)b->size)
		cr_assert_eq(memcmp(buf, right, b->size), 0, "wrong bytes returned");
	free(buf);
	free(right);
}

/* The checksum events of one type the handle sent, in blocks. */
static uint64_t cc_events(struct cc_bed *b, int type, int member)
{
	uint64_t n = 0;

	pthread_mutex_lock(&b->ev.mu);
	for (size_t i = 0; i < b->ev.n; i++)
		if (b->ev.v[i].type == type && b->ev.v[i].member == member)
			n += b->ev.v[i].count;
	pthread_mutex_unlock(&b->ev.mu);
	return n;
}

/*
 * RAID-5: two blocks of wrong data on one role, a wrong tag on another. Read: each counted
 * once on its role, the tag apart; read again: nothing more (healed); wrong again after
 * the repair: counted again; after a close and open: 0.
 */
Test(csum_count, raid5_data_and_tag_errors_per_role, .timeout = 120)
{
	const uint64_t none[3] = { 0 };
	uint64_t data[3] = { 0 }, tag[3] = { 0 };
	struct cc_bed b;
	uint64_t k0, k1, kt;

	cc_setup(&b, 5, 3);
	k0 = cc_data_on(&b, 0, 0);
	k1 = cc_data_on(&b, 0, k0 + 1);
	kt = cc_data_on(&b, 2, 3 * b.g.bpc);
	cc_bad_data(&b, 0, k0);
	cc_bad_data(&b, 0, k1);
	cc_bad_tag(&b, 2, kt);
	cc_open(&b);
	cc_expect(&b, none, none, "opened, nothing read");

	cc_read_all(&b, (ssize_t)b.size);
	data[0] = 2;
	data[2] = tag[2] = 1;
	cc_expect(&b, data, tag, "read once");
	/* The counts and the events tell the same story. */
	cr_assert_eq(cc_events(&b, GRAID_EVENT_CSUM_ERROR, 0), 2);
	cr_assert_eq(cc_events(&b, GRAID_EVENT_CSUM_TAG_ERROR, 2), 1);

	cc_read_all(&b, (ssize_t)b.size);
	cc_expect(&b, data, tag, "read again after the repairs");

	cc_bad_data(&b, 0, k0);
	cc_read_all(&b, (ssize_t)b.size);
	data[0] = 3;
	cc_expect(&b, data, tag, "the repaired block wrong again, read");

	cc_close(&b);
	cc_open(&b);
	cc_expect(&b, none, none, "reopened");
	cc_read_all(&b, (ssize_t)b.size);
	cc_expect(&b, none, none, "reopened and read: every block right");
	cc_done(&b);
}

/* A scrub finds a wrong parity block that no read reaches: counted on the parity's role. */
Test(csum_count, raid6_scrub_counts_a_parity_block, .timeout = 120)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	uint64_t data[5] = { 0 }, tag[5] = { 0 };
	struct cc_bed b;
	unsigned pm = 5;

	cc_setup(&b, 6, 5);
	for (unsigned m = 0; m < b.n && pm == b.n; m++)
		if (cu_map(&b.g, m, 0) == CU_P)
			pm = m;
	cr_assert_lt(pm, b.n, "no P block in row 0");
	cc_bad_data(&b, pm, 0);
	cc_open(&b);
	cc_read_all(&b, (ssize_t)b.size);
	cc_expect(&b, data, tag, "read: parity is not read");
	cr_assert_eq(graid_array_scrub(b.a, 0, &rep), 0);
	data[pm] = 1;
	cc_expect(&b, data, tag, "scrubbed");
	cc_done(&b);
}

/* Both copies of a RAID-1 block wrong: the read fails -EIO, and each role counts its block. */
Test(csum_count, raid1_lost_block_counted_on_both_roles, .timeout = 120)
{
	const uint64_t data[2] = { 1, 1 }, tag[2] = { 0 };
	struct cc_bed b;

	cc_setup(&b, 1, 2);
	cc_bad_data(&b, 0, 5);
	cc_bad_data(&b, 1, 5);
	cc_open(&b);
	cc_read_all(&b, -EIO);
	cc_expect(&b, data, tag, "both copies wrong, read");
	cr_assert_eq(cc_events(&b, GRAID_EVENT_CSUM_ERROR, 0) +
		     cc_events(&b, GRAID_EVENT_CSUM_ERROR, 1), 2);
	cc_done(&b);
}

/* A caller built before the fields were appended gets what it has room for, no more. */
Test(csum_count, an_older_struct_is_left_as_it_was, .timeout = 120)
{
	const size_t old = offsetof(struct graid_member_info, checksum_errors);
	struct graid_member_info mi;
	struct cc_bed b;

	cc_setup(&b, 5, 3);
	cc_bad_data(&b, 0, cc_data_on(&b, 0, 0));
	cc_open(&b);
	cc_read_all(&b, (ssize_t)b.size);
	memset(&mi, 0xee, sizeof(mi));
	mi.struct_size = old;
	cr_assert_eq(graid_array_member_info(b.a, 0, &mi), 0);
	cr_assert_eq(mi.struct_size, old);
	cr_assert_eq(mi.role, 0);
	cr_assert_eq(mi.checksum_errors, 0xeeeeeeeeeeeeeeeeull, "written past struct_size");
	cr_assert_eq(mi.checksum_tag_errors, 0xeeeeeeeeeeeeeeeeull, "written past struct_size");
	cr_assert_eq(mi.checksum_lost_writes, 0xeeeeeeeeeeeeeeeeull, "written past struct_size");
	cc_info(&b, 0, &mi);
	cr_assert_eq(mi.checksum_errors, 1);
	cc_done(&b);
}
