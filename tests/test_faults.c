/* SPDX-License-Identifier: MIT */
/* Faulty members (EIO on a schedule, torn writes, stalls, vanishing): no acknowledged write is lost. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define FT_MEMBER_BYTES ((1u << 20) + (2u << 20))

struct ft_events {
	int failed[GRAID_MAX_MEMBERS];
	int array_failed;
	int total;
};

static void ft_on_event(void *arg, const struct graid_event *ev)
{
	struct ft_events *e = arg;

	e->total++;
	if (ev->type == GRAID_EVENT_MEMBER_FAILED && ev->member >= 0)
		e->failed[ev->member]++;
	if (ev->type == GRAID_EVENT_ARRAY_FAILED)
		e->array_failed++;
}

/* Create on plain paths, reopen with one member behind a fault schedule. */
static struct graid_array *ft_open_faulty(struct au_set *s, unsigned n, int level,
					  unsigned victim, const char *opts,
					  struct ft_events *ev)
{
	char spec[512];
	const char *paths[AU_MAX];
	struct graid_array *a;

	au_make(s, n, FT_MEMBER_BYTES);
	cr_assert_eq(au_create(s, n, level, 4096, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s->paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:%s:%s", opts, s->path[victim]);
	paths[victim] = spec;
	cr_assert_eq(graid_array_open(paths, n, NULL, &a), 0);
	memset(ev, 0, sizeof(*ev));
	graid_array_set_event_callback(a, ft_on_event, ev);
	return a;
}

/* Random writes and reads against a model; returns how many writes were refused. */
static int ft_workload(struct graid_array *a, uint8_t *model, uint64_t size, int ops,
		       uint64_t *rng)
{
	uint8_t *buf = malloc(16 * 4096);
	int refused = 0;

	for (int i = 0; i < ops; i++) {
		uint64_t off = (tu_rand(rng) % (size / 4096)) * 4096;
		size_t len = (1 + tu_rand(rng) % 16) * 4096;
		ssize_t r;

		if (len > size - off)
			len = size - off;
		if (tu_rand(rng) % 3) {
			tu_fill(rng, buf, len);
			r = graid_array_write(a, buf, len, off);
			if (r == (ssize_t)len)
				memcpy(model + off, buf, len); /* acknowledged: must survive */
			else
				refused++;
		} else if (graid_array_read(a, buf, len, off) == (ssize_t)len) {
			cr_assert_eq(memcmp(buf, model + off, len), 0, "read %llu+%zu (seed %llu)",
				     (unsigned long long)off, len, (unsigned long long)tu_seed());
		}
	}
	free(buf);
	return refused;
}

static void ft_verify(struct graid_array *a, const uint8_t *model, uint64_t size)
{
	uint8_t *buf = malloc(size);

	cr_assert_eq(graid_array_read(a, buf, size, 0), (ssize_t)size);
	cr_assert_eq(memcmp(buf, model, size), 0, "an acknowledged write was lost (seed %llu)",
		     (unsigned long long)tu_seed());
	free(buf);
}

static void ft_case(int level, unsigned n, unsigned victim, const char *opts,
		    int extra_fail)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint64_t rng = tu_seed() ^ (uint64_t)(level * 131 + victim);
	struct ft_events ev;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;

	a = ft_open_faulty(&s, n, level, victim, opts, &ev);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	cr_assert_eq(ft_workload(a, model, info.size, 400, &rng), 0,
		     "writes were refused while the level could bear the loss");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[victim], GRAID_MEMBER_FAILED, "%s: member not failed",
		     opts);
	cr_assert_eq(ev.failed[victim], 1, "one MEMBER_FAILED event for the victim");
	cr_assert_eq(graid_array_member_info(a, victim, &mi), 0);
	cr_assert_geq(mi.errors, 1);
	if (extra_fail >= 0)
		cr_assert_eq(graid_array_fail_member(a, (unsigned)extra_fail), 0);
	ft_verify(a, model, info.size);
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	au_remove(&s);
}

Test(faults, raid6_read_errors_take_the_member_out)
{
	tu_need_fault_injection();
	ft_case(6, 6, 2, "read-eio-after=30", 4);
}

Test(faults, raid6_write_errors_lose_no_acknowledged_write)
{
	tu_need_fault_injection();
	ft_case(6, 6, 1, "write-eio-after=40", 3);
}

Test(faults, raid5_a_torn_write_then_a_dead_member_loses_nothing)
{
	tu_need_fault_injection();
	ft_case(5, 4, 0, "tear-after=25", -1);
}

Test(faults, raid1_a_vanishing_member_is_survived)
{
	tu_need_fault_injection();
	ft_case(1, 2, 1, "vanish-after=60", -1);
}

Test(faults, raid10_a_vanishing_member_is_survived)
{
	tu_need_fault_injection();
	ft_case(10, 4, 2, "vanish-after=60", 1);
}

Test(faults, a_stalling_member_is_slow_but_correct)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x7374;
	struct ft_events ev;
	struct graid_array *a;
	struct au_set s;
	uint8_t *model;

	tu_need_fault_injection();
	a = ft_open_faulty(&s, 5, 6, 3, "stall-us=500", &ev);
	cr_assert_eq(graid_array_info(a, &info), 0);
	model = calloc(1, info.size);
	cr_assert_eq(ft_workload(a, model, info.size, 100, &rng), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "a slow member is not a failed one");
	ft_verify(a, model, info.size);
	cr_assert_eq(ev.total, 0);
	graid_array_close(a);
	free(model);
	au_remove(&s);
}

Test(faults, raid0_losing_a_member_fails_io_and_says_so)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct ft_events ev;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = calloc(1, 65536);
	int eio = 0;

	tu_need_fault_injection();
	a = ft_open_faulty(&s, 3, 0, 1, "write-eio-after=5", &ev);
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (int i = 0; i < 40; i++)
		eio += graid_array_write(a, buf, 65536, (uint64_t)i * 65536) == -EIO;
	cr_assert_gt(eio, 0);
	cr_assert_eq(ev.array_failed, 1);
	cr_assert_eq(graid_array_read(a, buf, 4096, 0), -EIO);
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

Test(faults, bad_fault_options_are_refused)
{
	const char *paths[2] = { "faulty:frobnicate=1:/tmp/x", "faulty:/tmp/y" };
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1 };
	struct graid_array *a;

	tu_need_fault_injection();
	cr_assert_eq(graid_array_create(paths, 2, &cfg, &a), -EINVAL);
}

Test(faults, a_member_that_cannot_flush_makes_the_flush_return_eio)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct ft_events ev = { 0 };
	uint8_t *buf = calloc(1, 1 << 16);
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	/*
	 * graid.h: "-EIO a member failed to flush (it is marked failed)". Its first flush is
	 * the open's superblock write; every one after that fails.
	 */
	a = ft_open_faulty(&s, 4, 5, 1, "flush-eio-after=1", &ev);
	cr_assert_eq(graid_array_write(a, buf, 1 << 16, 0), 1 << 16);
	cr_assert_eq(graid_array_flush(a), -EIO);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED);
	cr_assert_eq(ev.failed[1], 1);
	/* The survivors made it durable: the next flush has nothing to report. */
	cr_assert_eq(graid_array_flush(a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 1);
	cr_assert_eq(graid_array_read(a, buf, 1 << 16, 0), 1 << 16);
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/*
 * A release build (-Dbuildtype=release leaves fault injection out unless it is asked for)
 * carries no test machinery: "faulty:OPTIONS:PATH" is a path like any other, which does not
 * exist, even where PATH names a member file and the options would kill the process at its
 * first write. The create fails with -ENOENT and leaves that file's bytes as they were.
 * tools/bootstrap's build-clang is such a build; the others compile fault injection in.
 */
Test(faults, without_fault_injection_a_faulty_path_is_a_missing_file)
{
#if GRAID_FAULT_INJECTION
	cr_skip_test("fault injection is compiled into this build; a release build "
		     "(tools/bootstrap's build-clang) runs this");
#else
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = 4096 };
	const char *paths[AU_MAX];
	struct graid_array *a = NULL;
	uint64_t before[3];
	char spec[512];
	struct au_set s;

	au_make(&s, 3, FT_MEMBER_BYTES);
	for (unsigned i = 0; i < 3; i++)
		before[i] = au_file_hash(s.path[i]);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:kill-after=0:%s", s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_create(paths, 3, &cfg, &a), -ENOENT);
	cr_assert_null(a);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(s.path[i]), before[i], "member file %u changed", i);
	au_remove(&s);
#endif
}

/* Every line the library logs, joined, for the test below to search. */
static char ft_log[1 << 16];

static void ft_log_keep(void *arg, int level, const char *msg)
{
	size_t at = strlen(ft_log);

	(void)arg, (void)level;
	snprintf(ft_log + at, sizeof(ft_log) - at, "%s\n", msg);
}

/*
 * RAID-0 cannot run degraded: a member that fails takes the array down, and the log must
 * not say "array continues degraded"; forced back, it must not advise a scrub with repair
 * (refused for RAID-0: there is nothing to resync).
 */
Test(faults, raid0_a_failed_member_is_not_called_degraded_nor_forced_back_with_scrub_advice)
{
	struct graid_open_options force = { .struct_size = sizeof(force),
					    .flags = GRAID_OPEN_FORCE };
	struct ft_events ev;
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = calloc(1, 65536);

	tu_need_fault_injection();
	a = ft_open_faulty(&s, 3, 0, 1, "write-eio-after=5", &ev);
	graid_log_set(ft_log_keep, NULL, GRAID_LOG_DEBUG);
	for (int i = 0; i < 40 && !ev.array_failed; i++)
		graid_array_write(a, buf, 65536, (uint64_t)i * 65536);
	cr_assert_eq(ev.array_failed, 1);
	graid_array_close(a);
	cr_assert(strstr(ft_log, "member 1 ("), "no failure logged:\n%s", ft_log);
	cr_assert(strstr(ft_log, "more than RAID-0 tolerates"), "%s", ft_log);
	cr_assert_null(strstr(ft_log, "continues degraded"), "RAID-0 called degraded:\n%s", ft_log);
	ft_log[0] = '\0';
	cr_assert_eq(graid_array_open(s.paths, 3, &force, &a), 0);
	cr_assert(strstr(ft_log, "forcing "), "%s", ft_log);
	cr_assert_null(strstr(ft_log, "scrub"), "a forced RAID-0 was told to scrub:\n%s", ft_log);
	graid_array_close(a);
	graid_log_set(NULL, NULL, GRAID_LOG_WARNING);
	free(buf);
	au_remove(&s);
}

/*
 * A member that cannot take its superblock is failed, as md fails a device whose superblock
 * write failed: its record of the array's state would be stale, and a later assembly could
 * trust it. Unless the array needs it: then it stays, and the log says why.
 */
Test(faults, a_member_whose_superblock_write_fails_is_failed)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct ft_events ev;
	struct au_set s;
	struct graid_array *a;

	tu_need_fault_injection();
	/* The open's own superblock write succeeds; the next one fails. */
	a = ft_open_faulty(&s, 5, 6, 1, "sb-eio-after=1", &ev);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the open's superblock write already failed");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED, "a member without the new superblock stays in");
	cr_assert_eq(ev.failed[1], 1);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 2);
	cr_assert_eq(graid_array_close(a), 0);
	/* The survivors recorded it out: it is not taken back as in sync. */
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_neq(info.member_state[1], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(faults, a_member_the_array_needs_is_kept_when_its_superblock_write_fails)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct ft_events ev;
	struct au_set s;
	struct graid_array *a;
	uint8_t buf[4096] = { 7 };

	tu_need_fault_injection();
	a = ft_open_faulty(&s, 4, 5, 1, "sb-eio-after=1", &ev);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "RAID-5 lost its last redundancy for it");
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(graid_array_read(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(buf[0], 7);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A write acknowledged degraded must survive the next open: its member's failure has to be
 * on the members that carry the write before the write is acknowledged. RAID-5 of three:
 * the data member's write fails, the parity lands, and no survivor takes the superblock
 * that records the failure (their superblock writes fail, as in a power blip of the
 * enclosure). Acknowledged then, the next open takes the data member back as current, and
 * its old bytes (and, after the resync, old parity) replace the write.
 */
Test(faults, a_degraded_write_whose_failure_is_not_recorded_is_not_acknowledged)
{
	char spec[3][512];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint8_t *old = aligned_alloc(4096, 4096), *neu = aligned_alloc(4096, 4096);
	uint8_t *got = aligned_alloc(4096, 4096);
	ssize_t w;

	tu_need_fault_injection();
	au_make(&s, 3, FT_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 4096, &a), 0);
	memset(old, 0x11, 4096);
	cr_assert_eq(graid_array_write(a, old, 4096, 0), 4096);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	/* Block 0 is on member 0 (row 0's data 0): its write fails; the others' records too. */
	snprintf(spec[0], sizeof(spec[0]), "faulty:write-eio-after=0:%s", s.path[0]);
	snprintf(spec[1], sizeof(spec[1]), "faulty:sb-eio-after=1:%s", s.path[1]);
	snprintf(spec[2], sizeof(spec[2]), "faulty:sb-eio-after=1:%s", s.path[2]);
	for (unsigned i = 0; i < 3; i++)
		paths[i] = spec[i];
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	memset(neu, 0x22, 4096);
	w = graid_array_write(a, neu, 4096, 0);
	graid_array_close(a);
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_read(a, got, 4096, 0), 4096);
	if (w == 4096)
		cr_assert(!memcmp(got, neu, 4096), "an acknowledged write read back as the old "
						   "bytes (got %#x)", got[0]);
	else
		cr_assert(!memcmp(got, neu, 4096) || !memcmp(got, old, 4096));
	cr_log_info("the write returned %zd; read back %#x", w, got[0]);
	cr_assert_eq(graid_array_close(a), 0);
	free(old);
	free(neu);
	free(got);
	au_remove(&s);
}
