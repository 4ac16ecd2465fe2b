/* SPDX-License-Identifier: MIT */
/* Flip bytes in member files: scrub finds them, names the member, and RAID-6 repair restores them exactly. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define SC_MEMBER_BYTES ((1u << 20) + (2u << 20))
#define SC_DATA_OFFSET (1u << 20)

static void sc_flip(const char *path, uint64_t off, uint8_t mask)
{
	int fd = open(path, O_RDWR);
	uint8_t b;

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &b, 1, (off_t)off), 1);
	b ^= mask;
	cr_assert_eq(pwrite(fd, &b, 1, (off_t)off), 1);
	close(fd);
}

/* A member's data area, to prove repair restores the exact bytes. */
static uint8_t *sc_data_area(const char *path)
{
	uint8_t *x = malloc(2u << 20);
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, x, 2u << 20, SC_DATA_OFFSET), 2u << 20);
	close(fd);
	return x;
}

static struct graid_array *sc_make(struct au_set *s, unsigned n, int level, uint32_t chunk)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ (uint64_t)level;
	struct graid_array *a;
	uint8_t *data;

	au_make(s, n, SC_MEMBER_BYTES);
	cr_assert_eq(au_create(s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	data = malloc(info.size);
	tu_fill(&rng, data, info.size);
	cr_assert_eq(graid_array_write(a, data, info.size, 0), (ssize_t)info.size);
	free(data);
	return a;
}

static void sc_scrub(struct graid_array *a, unsigned flags, struct graid_scrub_report *r)
{
	memset(r, 0, sizeof(*r));
	r->struct_size = sizeof(*r);
	cr_assert_eq(graid_array_scrub(a, flags, r), 0);
}

struct sc_progress {
	uint64_t last, total;
	int calls;
};

static void sc_progress_cb(void *arg, uint64_t done, uint64_t total)
{
	struct sc_progress *p = arg;

	cr_assert_geq(done, p->last, "progress went backwards");
	p->last = done;
	p->total = total;
	p->calls++;
}

Test(scrub, a_clean_array_scrubs_clean_and_reports_progress)
{
	struct sc_progress prog = { 0 };
	struct graid_scrub_report r = { .struct_size = sizeof(r), .progress = sc_progress_cb,
					.progress_arg = &prog };
	struct graid_array *a;
	struct au_set s;

	a = sc_make(&s, 6, 6, 16384);
	cr_assert_eq(graid_array_scrub(a, 0, &r), 0);
	cr_assert_eq(r.stripes_checked, (2u << 20) / 16384);
	cr_assert_eq(r.mismatches, 0);
	cr_assert_gt(prog.calls, 0);
	cr_assert_eq(prog.last, prog.total);
	graid_array_close(a);
	au_remove(&s);
}

/* Rot in three stripes, each on a different member (data, P and Q roles among them). */
Test(scrub, raid6_names_the_rotten_member_and_repair_restores_the_bytes)
{
	const uint32_t chunk = 8192;
	const uint64_t rows[3] = { 3, 10, 77 };
	const unsigned members[3] = { 0, 4, 2 };
	struct graid_scrub_report r;
	uint8_t *before[6];
	struct graid_array *a;
	struct au_set s;

	a = sc_make(&s, 6, 6, chunk);
	graid_array_close(a);
	for (unsigned i = 0; i < 6; i++)
		before[i] = sc_data_area(s.path[i]);
	for (unsigned k = 0; k < 3; k++) {
		sc_flip(s.path[members[k]], SC_DATA_OFFSET + rows[k] * chunk + 100 + k, 0x10);
		sc_flip(s.path[members[k]], SC_DATA_OFFSET + rows[k] * chunk + 5000, 0x81);
	}
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 3);
	cr_assert_eq(r.repaired, 0);
	cr_assert_eq(r.named, 3);
	for (unsigned k = 0; k < 3; k++) {
		cr_assert_eq(r.stripe[k], rows[k]);
		cr_assert_eq(r.member[k], (int32_t)members[k], "stripe %llu: named %d, rot on %u",
			     (unsigned long long)rows[k], r.member[k], members[k]);
	}
	sc_scrub(a, GRAID_SCRUB_REPAIR, &r);
	cr_assert_eq(r.mismatches, 3);
	cr_assert_eq(r.repaired, 3);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 0, "repair left %llu mismatches",
		     (unsigned long long)r.mismatches);
	graid_array_close(a);
	/* The superblocks changed (events); the data areas must be exactly as before the rot. */
	for (unsigned i = 0; i < 6; i++) {
		uint8_t *after = sc_data_area(s.path[i]);

		cr_assert_eq(memcmp(after, before[i], 2u << 20), 0,
			     "member %u's data differs from before the rot", i);
		free(after);
		free(before[i]);
	}
	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), 0);
	/* Losing two healthy members now must still return the original data. */
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 5), 0);
	memset(&r, 0, sizeof(r));
	r.struct_size = sizeof(r);
	cr_assert_eq(graid_array_scrub(a, 0, &r), -EAGAIN, "nothing left to compare");
	graid_array_close(a);
	au_remove(&s);
}

Test(scrub, raid5_counts_rot_and_repair_rewrites_parity)
{
	struct graid_scrub_report r;
	struct graid_array *a;
	struct au_set s;

	a = sc_make(&s, 4, 5, 4096);
	graid_array_close(a);
	sc_flip(s.path[1], SC_DATA_OFFSET + 7 * 4096 + 9, 0xff);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 1);
	cr_assert_eq(r.member[0], -1, "RAID-5 cannot name the member");
	cr_assert_eq(r.stripe[0], 7);
	sc_scrub(a, GRAID_SCRUB_REPAIR, &r);
	cr_assert_eq(r.repaired, 1);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 0);
	graid_array_close(a);
	au_remove(&s);
}

Test(scrub, raid1_finds_copies_that_differ_and_repair_makes_them_equal)
{
	struct graid_scrub_report r;
	struct graid_array *a;
	struct au_set s;

	a = sc_make(&s, 3, 1, 4096);
	graid_array_close(a);
	sc_flip(s.path[2], SC_DATA_OFFSET + 12 * 4096 + 1, 0x01);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 1);
	sc_scrub(a, GRAID_SCRUB_REPAIR, &r);
	sc_scrub(a, 0, &r);
	cr_assert_eq(r.mismatches, 0);
	cr_assert_eq(graid_array_scrub(a, 0x8, &r), -EINVAL);
	graid_array_close(a);
	au_remove(&s);
}

Test(scrub, a_degraded_raid5_or_raid6_or_raid1_is_refused_not_reported_clean)
{
	static const int levels[] = { 5, 6, 1 };

	for (unsigned i = 0; i < 3; i++) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
		struct graid_array *a;
		struct au_set s;

		a = sc_make(&s, 4, levels[i], 64 * 1024);
		cr_assert_eq(graid_array_fail_member(a, 2), 0);
		cr_assert_eq(graid_array_scrub(a, 0, &rep), -EAGAIN,
			     "RAID-%d with a member out: nothing can be checked", levels[i]);
		graid_array_close(a);
		au_remove(&s);
	}
}

Test(scrub, a_degraded_raid10_checks_the_pairs_that_are_whole)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct au_set s;

	a = sc_make(&s, 4, 10, 64 * 1024);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_gt(rep.stripes_checked, 0);
	cr_assert_gt(rep.skipped, 0);
	graid_array_close(a);
	au_remove(&s);
}

/* Slow each batch down; leave (as a crash would) at the @p quit-th report. */
static void sc_slow_then_quit(void *arg, uint64_t done, uint64_t total)
{
	static unsigned calls;

	(void)arg;
	(void)done;
	(void)total;
	if (++calls == 6)
		_exit(0);
	usleep(300 * 1000);
}

Test(scrub, a_scrub_stopped_midway_resumes_from_its_checkpoint, .timeout = 120)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array *a;
	struct au_set s;
	pid_t pid;
	int st;

	/* 4 KiB chunks: 256 rows a batch, eight batches; the checkpoint comes each second. */
	au_make(&s, 4, (1u << 20) + (8u << 20));
	cr_assert_eq(au_create(&s, 4, 6, 4096, &a), 0);
	{
		/* Written everywhere: rows never written are not read at all (live-data map). */
		struct graid_array_info info = { .struct_size = sizeof(info) };
		uint8_t *all;

		cr_assert_eq(graid_array_info(a, &info), 0);
		all = malloc(info.size);
		memset(all, 0x5a, info.size);
		cr_assert_eq(graid_array_write(a, all, info.size, 0), (ssize_t)info.size);
		free(all);
	}
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct graid_scrub_report r = { .struct_size = sizeof(r),
						.progress = sc_slow_then_quit };

		if (graid_array_open(s.paths, 4, NULL, &a) == 0)
			graid_array_scrub(a, GRAID_SCRUB_RESUME, &r);
		_exit(1); /* the scrub was meant to be cut short */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the scrub was not cut short");
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_RESUME, &rep), 0);
	cr_assert_geq(rep.first_row, 256 * 3, "resumed at row %llu",
		      (unsigned long long)rep.first_row);
	cr_assert_lt(rep.first_row, 256 * 8);
	cr_assert_eq(rep.mismatches, 0);
	/* Finished: the next scrub asked to resume starts at the beginning. */
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_RESUME, &rep), 0);
	cr_assert_eq(rep.first_row, 0);
	graid_array_close(a);
	au_remove(&s);
}

/* Each batch slowed down, so that a stop asked after the first one finds the scrub running. */
static atomic_int sc_batches;

static void sc_slow(void *arg, uint64_t done, uint64_t total)
{
	(void)arg, (void)done, (void)total;
	atomic_fetch_add(&sc_batches, 1);
	usleep(100 * 1000);
}

static void *sc_stopper(void *arg)
{
	while (atomic_load(&sc_batches) < 2)
		usleep(1000);
	cr_assert_eq(graid_array_scrub_stop(arg), 0);
	return NULL;
}

Test(scrub, a_scrub_stopped_from_another_thread_is_cancelled_and_resumes_where_it_stopped,
     .timeout = 120)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep), .progress = sc_slow };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t checked;
	pthread_t t;
	uint8_t *all;

	/* 4 KiB chunks: 2048 rows in batches of a few hundred, every row written. */
	au_make(&s, 4, (1u << 20) + (8u << 20));
	cr_assert_eq(au_create(&s, 4, 6, 4096, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	all = malloc(info.size);
	memset(all, 0x5a, info.size);
	cr_assert_eq(graid_array_write(a, all, info.size, 0), (ssize_t)info.size);
	free(all);
	/* A stop asked while no scrub runs is not kept for the next one. */
	cr_assert_eq(graid_array_scrub_stop(a), 0);
	cr_assert_eq(graid_array_scrub_stop(NULL), -EINVAL);
	atomic_store(&sc_batches, 0);
	cr_assert_eq(pthread_create(&t, NULL, sc_stopper, a), 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), -ECANCELED);
	pthread_join(t, NULL);
	cr_assert_gt(rep.stripes_checked, 0, "the report has what was checked before the stop");
	cr_assert_lt(rep.stripes_checked, 2048);
	cr_assert_eq(rep.first_row, 0);
	checked = rep.stripes_checked;
	/* Closed and opened again: the checkpoint is on the members, at the row it stopped at. */
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	memset(&rep, 0, sizeof(rep));
	rep.struct_size = sizeof(rep);
	cr_assert_eq(graid_array_scrub(a, GRAID_SCRUB_RESUME, &rep), 0);
	cr_assert_gt(rep.first_row, 0, "the resumed scrub started at row 0");
	cr_assert_eq(rep.first_row, checked, "stopped after %llu rows, resumed at %llu",
		     (unsigned long long)checked, (unsigned long long)rep.first_row);
	cr_assert_eq(rep.first_row + rep.stripes_checked, 2048, "resumed at %llu, checked %llu",
		     (unsigned long long)rep.first_row, (unsigned long long)rep.stripes_checked);
	cr_assert_eq(rep.mismatches, 0);
	graid_array_close(a);
	au_remove(&s);
}
