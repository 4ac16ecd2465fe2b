/* SPDX-License-Identifier: MIT */
/*
 * Metadata-only level changes (docs/RESHAPE.md, "Metadata-only level changes, as built"):
 * a Q-last RAID-6 of five (a RAID-5 of four grown with GRAID_GROW_RAID6) back to the RAID-5
 * of four by graid_array_convert(), on member files: every byte back, a scrub clean, the
 * dropped device's superblock cleared and never assembled back, a reopen; writes running
 * across the change; the Q member failed before it; a crash (fault_writes_cut_after) at
 * each member write of the change's superblock round; bad input refused with every member
 * file as it was; the dropped device grown back in as a fifth RAID-5 member.
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

#include "arrayutil.h"
#include "cututil.h"
#include "growutil.h"
#include "testutil.h"
#include "array/array.h"
#include "format/layout.h"
#include "jobs/reshape_grow.h"

#define CHUNK (16u * 1024)
#define BYTES (4ull << 20)
#define BLK 4096u

static void setup(void)
{
	graid_log_set(gu_log_keep, NULL, GRAID_LOG_INFO);
	gu_log_clear();
}

TestSuite(reshape_level, .init = setup, .timeout = 300);


/* gu_make_q_last() over five files, checked to be Q-last. */
static uint8_t *make_q_last(struct au_set *s, struct graid_array **out, uint64_t *size,
			    uint64_t seed)
{
	uint8_t *model = gu_make_q_last(s, 5, BYTES, CHUNK, out, size, seed);

	cr_assert_eq((*out)->lay.layout_id, LAYOUT_Q_LAST);
	return model;
}

/* No member of @p a is file @p path. */
static void assert_not_member(struct graid_array *a, const char *path, const char *when)
{
	for (unsigned r = 0; r < a->nmembers; r++)
		cr_assert_str_neq(a->members[r].dev.path, path, "%s: the dropped device is role %u",
				  when, r);
}

/*
 * The whole way: RAID-5(4) -> GRAID_GROW_RAID6 -> RAID-6 Q-last(5) -> convert -> RAID-5(4),
 * every byte back, a scrub clean, reopened (also given the dropped device: left out), then
 * the dropped device grown back in (a RAID-5 of five).
 */
Test(reshape_level, raid6_q_last_back_to_raid5_and_grown_again)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, &a, &size, 1);

	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "converted back");
	cr_assert_eq(a->lay.layout_id, LAYOUT_ROTATING);
	cr_assert_eq(gu_array_bytes(a, NULL), size, "the size is kept");
	cr_assert(au_sb_cleared(s.paths[4]), "the dropped device's superblock is cleared");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "converted back");
	cr_assert_eq(graid_array_close(a), 0);

	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "reopened");
	assert_not_member(a, s.paths[4], "reopened");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "reopened");

	/* The dropped device is free: a grow takes it as a fifth RAID-5 member. */
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_WAIT), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 5, "grown");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* The Q member failed first (the usual reason to drop it): the change is allowed. */
Test(reshape_level, a_failed_q_member_is_dropped)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_q_last(&s, &a, &size, 2);

	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "converted back");
	cr_assert_eq(a->nfailed, 0u, "no role is out of the RAID-5");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "converted back");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "reopened");
	assert_not_member(a, s.paths[4], "reopened");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* Writes during the change. */
struct writer {
	struct graid_array *a;
	uint8_t *model;
	uint64_t size, seed;
	atomic_bool stop;
	atomic_ulong done;
};

static void *writer_run(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = aligned_alloc(BLK, BLK);

	cr_assert_not_null(buf);
	while (!atomic_load(&w->stop) || atomic_load(&w->done) < 64) {
		uint64_t off = gu_rng(&w->seed) % (w->size / BLK) * BLK;

		gu_fill(buf, BLK, gu_rng(&w->seed));
		if (graid_array_write(w->a, buf, BLK, off) == (ssize_t)BLK)
			memcpy(w->model + off, buf, BLK); /* acknowledged: must read back */
		atomic_fetch_add(&w->done, 1);
	}
	free(buf);
	return NULL;
}

Test(reshape_level, writes_running_across_the_change)
{
	struct au_set s;
	struct writer w = { .seed = 77 };
	pthread_t t;
	unsigned long before;

	w.model = make_q_last(&s, &w.a, &w.size, 3);
	cr_assert_eq(pthread_create(&t, NULL, writer_run, &w), 0);
	while (atomic_load(&w.done) < 32)
		usleep(1000);
	before = atomic_load(&w.done);
	cr_assert_eq(graid_array_convert(w.a, 5, 0), 0, "%s", gu_log_text);
	while (atomic_load(&w.done) < before + 32)
		usleep(1000);
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	cr_log_info("writes: %lu before the change, %lu in all", before, atomic_load(&w.done));
	gu_assert_level(w.a, 5, 4, "converted back");
	gu_check_all(w.a, w.model, w.size);
	gu_scrub_clean(w.a, "converted back under writes");
	cr_assert_eq(graid_array_close(w.a), 0);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &w.a), 0, "%s", gu_log_text);
	gu_check_all(w.a, w.model, w.size);
	cr_assert_eq(graid_array_close(w.a), 0);
	free(w.model);
	au_remove(&s);
}

/*
 * A crash at each member write of the change (the round's four superblocks, the dropped
 * device's clearing, and beyond): the open is one level or the other, every byte reads
 * back, a scrub is clean, and the dropped device is never a member of the RAID-5.
 */
Test(reshape_level, a_crash_at_each_write_of_the_change)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	unsigned as5 = 0, as6 = 0;

	for (long k = 0; k < 8; k++) {
		struct au_set s;
		struct graid_array *a;
		uint64_t size;
		uint8_t *model = make_q_last(&s, &a, &size, 10 + (uint64_t)k);
		struct graid_array_info info = { .struct_size = sizeof(info) };
		int rc;

		fault_writes_cut_after(k);
		rc = graid_array_convert(a, 5, 0);
		graid_array_close(a);
		fault_writes_cut_after(-1);
		cr_log_info("cut after write %ld: convert %d", k, rc);

		cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0,
			     "cut after write %ld: the open failed: %s", k, gu_log_text);
		cr_assert_eq(graid_array_info(a, &info), 0);
		cr_assert((info.level == 5 && info.nmembers == 4) ||
			  (info.level == 6 && info.nmembers == 5),
			  "cut after write %ld: RAID-%d of %u", k, info.level, info.nmembers);
		if (info.level == 5) {
			as5++;
			assert_not_member(a, s.paths[4], "after the cut");
		} else {
			as6++;
		}
		gu_check_all(a, model, size);
		gu_scrub_clean(a, "after the cut");
		if (info.level == 6)
			cr_assert_eq(graid_array_convert(a, 5, 0), 0, "cut after write %ld: "
				     "converting again: %s", k, gu_log_text);
		gu_assert_level(a, 5, 4, "after the cut, converted");
		gu_check_all(a, model, size);
		cr_assert_eq(graid_array_close(a), 0);
		cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0, "%s", gu_log_text);
		gu_assert_level(a, 5, 4, "reopened");
		assert_not_member(a, s.paths[4], "reopened");
		cr_assert_eq(graid_array_close(a), 0);
		free(model);
		au_remove(&s);
	}
	cr_log_info("cuts that left the RAID-6: %u, the RAID-5: %u", as6, as5);
	cr_assert_gt(as6, 0u);
	cr_assert_gt(as5, 0u);
}

/* Every member file's hash, to show a refused call wrote nothing. */
static void hashes(const struct au_set *s, unsigned n, uint64_t *h)
{
	for (unsigned i = 0; i < n; i++)
		h[i] = au_file_hash(s->paths[i]);
}

static void assert_refused(struct graid_array *a, const struct au_set *s, unsigned n, int level,
			   unsigned flags, int want, const char *says)
{
	uint64_t h0[AU_MAX], h1[AU_MAX];

	cr_assert_eq(graid_array_flush(a), 0);
	hashes(s, n, h0);
	gu_log_clear();
	cr_assert_eq(graid_array_convert(a, level, flags), want, "RAID-%d to %d: %s",
		     a->lay.level, level, gu_log_text);
	if (says)
		cr_assert(strstr(gu_log_text, says), "the log says why: %s", gu_log_text);
	hashes(s, n, h1);
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(h0[i], h1[i], "member file %u changed", i);
}

Test(reshape_level, bad_input_is_refused_with_nothing_written)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model;
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };

	cr_assert_eq(graid_array_convert(NULL, 5, 0), -EINVAL);
	/* A RAID-5, and a RAID-6 with rotating parity: not Q-last. */
	au_make(&s, 5, BYTES);
	cr_assert_eq(au_create(&s, 4, 5, CHUNK, &a), 0);
	assert_refused(a, &s, 5, 5, 0, -EOPNOTSUPP, "RAID-5 to RAID-5 is not built");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	au_make(&s, 5, BYTES);
	cr_assert_eq(au_create(&s, 5, 6, CHUNK, &a), 0);
	assert_refused(a, &s, 5, 5, 0, -EOPNOTSUPP, "rotating parity");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);

	model = make_q_last(&s, &a, &size, 5);
	assert_refused(a, &s, 5, 5, 1, -EINVAL, NULL);
	assert_refused(a, &s, 5, 7, 0, -EINVAL, NULL);
	assert_refused(a, &s, 5, 6, 0, -EOPNOTSUPP, "is not built");
	assert_refused(a, &s, 5, 0, 0, -EOPNOTSUPP, "is not built");
	/* A member that stays is out: the RAID-5 would be degraded. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	assert_refused(a, &s, 5, 5, 0, -EIO, "would be degraded");
	gu_assert_level(a, 6, 5, "refused");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	/* A read-only look. */
	cr_assert_eq(graid_array_open(s.paths, 5, &ro, &a), 0, "%s", gu_log_text);
	assert_refused(a, &s, 5, 5, 0, -EROFS, NULL);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* While the RAID-5 -> RAID-6 conversion runs: -EBUSY, nothing written; after it, done. */
Test(reshape_level, refused_while_a_reshape_runs)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model;

	au_make(&s, 5, BYTES);
	cr_assert_eq(au_create(&s, 4, 5, CHUNK, &a), 0);
	size = gu_array_bytes(a, NULL);
	model = aligned_alloc(BLK, size);
	cr_assert_not_null(model);
	gu_fill(model, size, 6);
	cr_assert_eq(graid_array_write(a, model, size, 0), (ssize_t)size);
	gu_slow_down(a, 256 * 1024);
	cr_assert_eq(graid_array_grow(a, &s.paths[4], 1, GRAID_GROW_RAID6), 0, "%s", gu_log_text);
	gu_log_clear();
	cr_assert_eq(graid_array_convert(a, 5, 0), -EBUSY);
	cr_assert(strstr(gu_log_text, "a reshape is under way"), "%s", gu_log_text);
	gu_slow_down(a, 0);
	cr_assert_eq(reshape_job_wait(a), 0);
	gu_assert_level(a, 6, 5, "converted to RAID-6");
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 4, "back");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* ---- RAID-1 of two <-> RAID-5 of two ----------------------------------------------------- */

/* A RAID-1 of two over files 0-1 (of @p nfiles) holding a model. */
static uint8_t *make_r1(struct au_set *s, unsigned nfiles, struct graid_array **out,
			uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nfiles, BYTES);
	cr_assert_eq(au_create(s, 2, 1, CHUNK, out), 0, "%s", gu_log_text);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(BLK, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	return model;
}

/* Blocks here and there rewritten: a RAID-5 of two's read-modify-write of data and P. */
static void scatter_writes(struct graid_array *a, uint8_t *model, uint64_t size, uint64_t seed)
{
	for (uint64_t off = (seed % 7) * BLK; off < size; off += 37 * BLK) {
		gu_fill(model + off, BLK, seed + off);
		cr_assert_eq(graid_array_write(a, model + off, BLK, off), (ssize_t)BLK);
	}
}

/*
 * A replace in service that has ended does not hold a conversion back: a->replace stays set
 * until close (replace.c), and the check took it for one under way (-EBUSY, "a replace is
 * under way") until the array was closed and opened again.
 */
Test(reshape_level, a_finished_replace_does_not_block_a_conversion)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_r1(&s, 3, &a, &size, 23);

	cr_assert_eq(graid_array_replace_start(a, 1, s.paths[2], GRAID_REPLACE_WAIT), 0, "%s",
		     gu_log_text);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "converted after a replace");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "converted after a replace");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/*
 * RAID-1(2) -> RAID-5(2): every byte, a scrub clean, writes after, reopened; one member
 * failed: every byte still reads (from P), writes go on; then a healthy one back to RAID-1.
 */
Test(reshape_level, raid1_of_two_becomes_raid5_of_two_and_back)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_r1(&s, 2, &a, &size, 21);

	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "RAID-1 converted");
	cr_assert_eq(gu_array_bytes(a, NULL), size, "the size is kept");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "RAID-1 converted");
	scatter_writes(a, model, size, 1);
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "RAID-5 of two written");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "reopened");
	gu_check_all(a, model, size);

	/* Back to RAID-1, then a member failed: the other holds every byte. */
	cr_assert_eq(graid_array_convert(a, 1, 0), 0, "%s", gu_log_text);
	gu_assert_level(a, 1, 2, "back to RAID-1");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "back to RAID-1");
	scatter_writes(a, model, size, 2);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 1, 2, "reopened as RAID-1");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	gu_check_all(a, model, size);

	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);

	/* Converted, then degraded as a RAID-5 of two: half the rows read through P. */
	model = make_r1(&s, 2, &a, &size, 22);
	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	gu_check_all(a, model, size);
	scatter_writes(a, model, size, 3);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 2, "reopened degraded");
	gu_check_all(a, model, size);
	/* A degraded one does not change level: the other could not be written around. */
	cr_assert_eq(graid_array_convert(a, 1, 0), -EIO);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

/* A converted RAID-1 of two grows to a RAID-5 of three (graid_array_grow), every byte kept. */
Test(reshape_level, a_converted_raid1_grows_to_a_raid5_of_three)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model = make_r1(&s, 3, &a, &size, 23);

	cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
	/* A RAID-1 handle has no room for more roles: -E2BIG until it is opened again. */
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_WAIT), -E2BIG, "%s",
		     gu_log_text);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0, "%s", gu_log_text);
	cr_assert_eq(graid_array_grow(a, &s.paths[2], 1, GRAID_GROW_WAIT), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 3, "grown");
	cr_assert_eq(gu_array_bytes(a, NULL), 2 * size, "twice the data members");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "grown");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0, "%s", gu_log_text);
	gu_assert_level(a, 5, 3, "reopened");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(reshape_level, raid1_writes_running_across_the_change)
{
	struct au_set s;
	struct writer w = { .seed = 78 };
	pthread_t t;
	unsigned long before;

	w.model = make_r1(&s, 2, &w.a, &w.size, 24);
	cr_assert_eq(pthread_create(&t, NULL, writer_run, &w), 0);
	while (atomic_load(&w.done) < 32)
		usleep(1000);
	before = atomic_load(&w.done);
	cr_assert_eq(graid_array_convert(w.a, 5, 0), 0, "%s", gu_log_text);
	while (atomic_load(&w.done) < before + 32)
		usleep(1000);
	before = atomic_load(&w.done);
	cr_assert_eq(graid_array_convert(w.a, 1, 0), 0, "%s", gu_log_text);
	while (atomic_load(&w.done) < before + 32)
		usleep(1000);
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	gu_assert_level(w.a, 1, 2, "there and back");
	gu_check_all(w.a, w.model, w.size);
	gu_scrub_clean(w.a, "there and back under writes");
	cr_assert_eq(graid_array_close(w.a), 0);
	free(w.model);
	au_remove(&s);
}

/* A crash at each member write of RAID-1 -> RAID-5 and back: one level or the other, whole. */
Test(reshape_level, raid1_a_crash_at_each_write_of_the_change)
{
	tu_need_fault_injection(); /* faulty: members, the member-write cut */
	unsigned as1 = 0, as5 = 0;

	for (long k = 0; k < 8; k++) {
		struct au_set s;
		struct graid_array *a;
		uint64_t size;
		uint8_t *model = make_r1(&s, 2, &a, &size, 30 + (uint64_t)k);
		struct graid_array_info info = { .struct_size = sizeof(info) };
		int to = k < 4 ? 5 : 1, from = k < 4 ? 1 : 5;

		if (to == 1)
			cr_assert_eq(graid_array_convert(a, 5, 0), 0, "%s", gu_log_text);
		fault_writes_cut_after(k % 4);
		cr_log_info("cut after write %ld: RAID-%d to %d: %d", k % 4, from, to,
			    graid_array_convert(a, to, 0));
		graid_array_close(a);
		fault_writes_cut_after(-1);
		cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a), 0,
			     "cut after write %ld: the open failed: %s", k, gu_log_text);
		cr_assert_eq(graid_array_info(a, &info), 0);
		cr_assert(info.nmembers == 2 && (info.level == 1 || info.level == 5),
			  "cut %ld: RAID-%d of %u", k, info.level, info.nmembers);
		for (unsigned r = 0; r < 2; r++)
			cr_assert_eq(atomic_load(&a->members[r].state), GRAID_MEMBER_ACTIVE,
				     "cut %ld: member %u out", k, r);
		as1 += info.level == 1;
		as5 += info.level == 5;
		gu_check_all(a, model, size);
		gu_scrub_clean(a, "after the cut");
		cr_assert_eq(graid_array_close(a), 0);
		free(model);
		au_remove(&s);
	}
	cr_log_info("cuts that left the RAID-1: %u, the RAID-5: %u", as1, as5);
	cr_assert_gt(as1, 0u);
	cr_assert_gt(as5, 0u);
}

Test(reshape_level, raid1_bad_input_is_refused_with_nothing_written)
{
	struct au_set s;
	struct graid_array *a;
	uint64_t size;
	uint8_t *model;
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .chunk_bytes = CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };

	/* A RAID-5 of two is made by conversion only. */
	au_make(&s, 3, BYTES);
	cr_assert_eq(au_create(&s, 2, 5, CHUNK, &a), -EINVAL);
	/* A RAID-1 of three. */
	cr_assert_eq(au_create(&s, 3, 1, CHUNK, &a), 0);
	assert_refused(a, &s, 3, 5, 0, -EOPNOTSUPP, "only a RAID-1 of two");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	/* A RAID-5 of three to RAID-1. */
	au_make(&s, 3, BYTES);
	cr_assert_eq(au_create(&s, 3, 5, CHUNK, &a), 0);
	assert_refused(a, &s, 3, 1, 0, -EOPNOTSUPP, "only a RAID-5 of two");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	/* Checksums: tags mean something else in each level. */
	au_make(&s, 2, BYTES);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a), 0, "%s", gu_log_text);
	assert_refused(a, &s, 2, 5, 0, -EOPNOTSUPP, "checksums");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
	/* To a level the RAID-1 is not converted to; degraded. */
	model = make_r1(&s, 2, &a, &size, 25);
	assert_refused(a, &s, 2, 6, 0, -EOPNOTSUPP, "not built");
	assert_refused(a, &s, 2, 10, 0, -EOPNOTSUPP, "not built");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_flush(a), 0);
	assert_refused(a, &s, 2, 5, 0, -EIO, "would be degraded");
	gu_assert_level(a, 1, 2, "refused");
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}
