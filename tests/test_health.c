/* SPDX-License-Identifier: MIT */
/*
 * graid_array_member_health(): a member's drive health, here from a scripted source; and the
 * health watch's verdicts, on scripted drives and on failed I/Os of plain member files.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

/*
 * A RAID-5 of four member files, opened again with role @p role's drive scripted by the
 * file @p name in the set's folder, first holding @p log. @p health (320 bytes) gets that
 * file's path, @p spec (700) the faulty: path, @p paths the open's member list.
 */
static struct graid_array *scripted_open(struct au_set *s, unsigned role, const char *name,
					 const char *log, char *health, char *spec,
					 const char **paths)
{
	struct graid_array *a;

	tu_need_fault_injection();
	au_make(s, 4, 8u << 20);
	cr_assert_eq(au_create(s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, 320, "%s/%s", s->dir, name);
	tu_put_file(health, log);
	snprintf(spec, 700, "faulty:health=%s:%s", health, s->path[role]);
	memcpy(paths, s->paths, sizeof(s->paths));
	paths[role] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	return a;
}

Test(health, a_scripted_drive_reports_what_its_log_says, .timeout = 60)
{
	struct graid_member_health h = { .struct_size = sizeof(h) };
	char health[320], spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;

	a = scripted_open(&s, 1, "health1", "critical_warning 0\navailable_spare 100\n"
			  "spare_threshold 10\npercent_used 3\ntemperature_c 41\nmedia_errors 0\n",
			  health, spec, paths);

	cr_assert_eq(graid_array_member_health(a, 1, &h), 0);
	cr_assert_str_eq(h.source, "scripted");
	cr_assert_eq(h.available_spare, 100);
	cr_assert_eq(h.spare_threshold, 10);
	cr_assert_eq(h.percent_used, 3);
	cr_assert_eq(h.temperature_c, 41);
	cr_assert_eq(h.media_errors, 0);
	cr_assert_neq(h.sampled_ns, 0);

	/* The drive goes bad: the next read says so. */
	tu_put_file(health, "critical_warning 4\navailable_spare 9\nspare_threshold 10\n"
			 "media_errors 31\nerror_log_entries 40\n");
	cr_assert_eq(graid_array_member_health(a, 1, &h), 0);
	cr_assert_eq(h.critical_warning, GRAID_HEALTH_CRIT_RELIABILITY);
	cr_assert_eq(h.available_spare, 9);
	cr_assert_eq(h.media_errors, 31);
	cr_assert_eq(h.error_log_entries, 40);
	cr_assert_eq(h.percent_used, 0, "a field the log leaves out reads 0");

	/* A member file is no NVMe drive: nothing to read. */
	cr_assert_eq(graid_array_member_health(a, 0, &h), -EOPNOTSUPP);
	cr_assert_eq(graid_array_member_health(a, 4, &h), -EINVAL, "past the roles and spares");
	cr_assert_eq(graid_array_member_health(NULL, 0, &h), -EINVAL);
	h.struct_size = 8;
	cr_assert_eq(graid_array_member_health(a, 1, &h), -EINVAL, "struct_size too small");
	h.struct_size = sizeof(h);

	tu_put_file(health, "media_errors many\n");
	cr_assert_eq(graid_array_member_health(a, 1, &h), -EINVAL, "a bad line");
	tu_put_file(health, "no_such_field 1\n");
	cr_assert_eq(graid_array_member_health(a, 1, &h), -EINVAL, "an unknown field");
	cr_assert_eq(graid_array_close(a), 0);

	/* A role without a device. */
	paths[1] = s.path[1];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_close(a), 0);
	paths[2] = paths[3]; /* role 2's member not given: it is missing */
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_member_health(a, 2, &h), -ENODEV);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

struct hw_seen {
	pthread_mutex_t lock;
	unsigned n;
	struct graid_event ev[16];
};

static void hw_event(void *arg, const struct graid_event *ev)
{
	struct hw_seen *s = arg;

	if (ev->type != GRAID_EVENT_HEALTH_CRITICAL && ev->type != GRAID_EVENT_HEALTH_WARNING)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->n < 16)
		s->ev[s->n] = *ev;
	s->n++;
	pthread_mutex_unlock(&s->lock);
}

/* The health events seen so far, waiting up to @p ms for there to be @p want of them. */
static unsigned hw_wait(struct hw_seen *s, unsigned want, unsigned ms)
{
	unsigned n = 0;

	for (unsigned t = 0; t <= ms; t += 10) {
		pthread_mutex_lock(&s->lock);
		n = s->n;
		pthread_mutex_unlock(&s->lock);
		if (n >= want)
			break;
		usleep(10000);
	}
	return n;
}

/*
 * The worker watches a scripted drive every 100 ms: a critical bit raised is one
 * HEALTH_CRITICAL event for that member within a second, and no second one while it stays;
 * a burst of media errors is one HEALTH_WARNING; the options are checked.
 */
Test(health, the_worker_reports_each_rule_once_when_it_begins_to_hold, .timeout = 60)
{
	struct graid_health_options o = { .struct_size = sizeof(o), .interval_ms = 100,
					  .wear_percent = 90, .media_rising = 0,
					  .media_burst = 25, .media_window_s = 600 };
	struct hw_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	char health[320], spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;

	a = scripted_open(&s, 2, "health2", "available_spare 100\nspare_threshold 10\n", health,
			  spec, paths);
	cr_assert_eq(graid_array_set_event_callback(a, hw_event, &seen), 0);
	cr_assert_eq(graid_array_set_health_options(a, &o), 0);
	usleep(300000);
	cr_assert_eq(hw_wait(&seen, 1, 0), 0, "a healthy drive gave an event");

	tu_put_file(health, "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	cr_assert_eq(hw_wait(&seen, 1, 1000), 1, "no event within a second of the warning");
	cr_assert_eq(seen.ev[0].type, GRAID_EVENT_HEALTH_CRITICAL);
	cr_assert_eq(seen.ev[0].member, 2);
	cr_assert_eq(seen.ev[0].count, GRAID_HEALTH_RULE_CRITICAL_BIT);
	usleep(500000);
	cr_assert_eq(hw_wait(&seen, 2, 0), 1, "the warning that stays was reported again");

	tu_put_file(health, "critical_warning 4\navailable_spare 100\nspare_threshold 10\n"
			 "media_errors 40\n");
	cr_assert_eq(hw_wait(&seen, 2, 1000), 2, "no event for 40 media errors at once");
	cr_assert_eq(seen.ev[1].type, GRAID_EVENT_HEALTH_WARNING);
	cr_assert_eq(seen.ev[1].member, 2);
	cr_assert_eq(seen.ev[1].count, GRAID_HEALTH_RULE_MEDIA_BURST);
	usleep(500000);
	cr_assert_eq(hw_wait(&seen, 3, 0), 2, "a burst that stays was reported again");

	/* Watching off: a new warning goes unreported. */
	o.interval_ms = 0;
	cr_assert_eq(graid_array_set_health_options(a, &o), 0);
	tu_put_file(health, "critical_warning 5\navailable_spare 100\nspare_threshold 10\n"
			 "media_errors 40\n");
	usleep(300000);
	cr_assert_eq(hw_wait(&seen, 3, 0), 2, "reported with the watch off");

	o.interval_ms = GRAID_HEALTH_INTERVAL_MIN_MS - 1;
	cr_assert_eq(graid_array_set_health_options(a, &o), -EINVAL, "an interval too short");
	o.interval_ms = 0;
	o.wear_percent = 256;
	cr_assert_eq(graid_array_set_health_options(a, &o), -EINVAL);
	o.wear_percent = 90;
	o.struct_size = 8;
	cr_assert_eq(graid_array_set_health_options(a, &o), -EINVAL);
	cr_assert_eq(graid_array_set_health_options(NULL, &o), -EINVAL);
	cr_assert_eq(graid_array_close(a), 0);

	{
		struct graid_open_options ro = { .struct_size = sizeof(ro),
						 .flags = GRAID_OPEN_READ_ONLY };

		o.struct_size = sizeof(o);
		cr_assert_eq(graid_array_open(s.paths, 4, &ro, &a), 0);
		cr_assert_eq(graid_array_set_health_options(a, &o), -EROFS);
		cr_assert_eq(graid_array_close(a), 0);
	}
	au_remove(&s);
}

/*
 * A RAID-5 of four member files (64 KiB chunks), opened again with role @p role given as
 * "faulty:@p fault:" its file, its health events counted in @p seen, watched every 100 ms
 * with @p o (the I/O-error fields the caller's).
 */
static struct graid_array *ioerr_open(struct au_set *s, unsigned role, const char *fault,
				      struct hw_seen *seen, struct graid_health_options *o)
{
	static char spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;

	tu_need_fault_injection();
	au_make(s, 4, 8u << 20);
	cr_assert_eq(au_create(s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:%s:%s", fault, s->path[role]);
	memcpy(paths, s->paths, sizeof(s->paths));
	paths[role] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_set_event_callback(a, hw_event, seen), 0);
	o->struct_size = sizeof(*o);
	o->interval_ms = 100;
	o->wear_percent = 90;
	o->media_rising = 2;
	o->media_burst = 25;
	o->media_window_s = 600;
	cr_assert_eq(graid_array_set_health_options(a, o), 0);
	return a;
}

static struct graid_member_info ioerr_info(struct graid_array *a, unsigned idx)
{
	struct graid_member_info i = { .struct_size = sizeof(i) };

	cr_assert_eq(graid_array_member_info(a, idx, &i), 0);
	return i;
}

/*
 * Read the array a stripe at a time from its start until role 1 (whose reads all fail) has
 * @p n errors: every read served whole. A stripe whose parity role 1 holds reads nothing of it.
 */
static void ioerr_fail_reads(struct graid_array *a, unsigned n)
{
	static uint8_t buf[3 * 65536];

	for (unsigned i = 0; i < 64 && ioerr_info(a, 1).errors < n; i++)
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), (uint64_t)i * sizeof(buf)),
			     (ssize_t)sizeof(buf), "read %u", i);
	cr_assert_eq(ioerr_info(a, 1).errors, n);
}

/*
 * A member file whose reads all fail: three in a row are one HEALTH_CRITICAL for that role
 * with the I/O-error bit (no health log needed), while the array serves every read from
 * parity and keeps the member; further errors while the rule holds send nothing more.
 */
Test(health, three_failed_reads_in_a_row_are_one_critical_verdict, .timeout = 60)
{
	struct graid_health_options o = { .auto_replace_off = 1 };
	struct hw_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct graid_array *a;
	struct au_set s;

	a = ioerr_open(&s, 1, "read-eio-after=0", &seen, &o);
	usleep(300000);
	cr_assert_eq(hw_wait(&seen, 1, 0), 0, "an event before any error");
	ioerr_fail_reads(a, 3);
	cr_assert_eq(hw_wait(&seen, 1, 1000), 1, "no event within a second of 3 errors");
	cr_assert_eq(seen.ev[0].type, GRAID_EVENT_HEALTH_CRITICAL);
	cr_assert_eq(seen.ev[0].member, 1);
	cr_assert_eq(seen.ev[0].count, GRAID_HEALTH_RULE_IO_ERRORS);
	cr_assert_eq(ioerr_info(a, 1).state, GRAID_MEMBER_ACTIVE, "the member was taken out");
	ioerr_fail_reads(a, 6);
	usleep(400000);
	cr_assert_eq(hw_wait(&seen, 2, 0), 1, "the rule that stays was reported again");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Bad blocks on a member file, each read error followed by good reads of that member: never
 * two in a row. Below the burst nothing is sent; the burst-th error within the window is one
 * HEALTH_CRITICAL. The burst here is 5 (the fault model keeps 8 bad blocks at most).
 */
Test(health, failed_reads_between_successes_count_only_as_a_burst, .timeout = 60)
{
	struct graid_health_options o = { .auto_replace_off = 1, .io_errors_burst = 5 };
	struct hw_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	static uint8_t buf[65536];
	char fault[200];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	unsigned n = 0;

	/* Bad 4 KiB blocks of role 1 four chunks apart: its chunks between them read well. */
	snprintf(fault, sizeof(fault), "bad-block=%u,bad-block=%u,bad-block=%u,bad-block=%u,"
		 "bad-block=%u", 0u, 4u * 65536, 8u * 65536, 12u * 65536, 16u * 65536);
	a = ioerr_open(&s, 1, fault, &seen, &o);
	size = 64ull * 65536;
	for (uint64_t off = 0; off < size; off += sizeof(buf)) {
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
		n = (unsigned)ioerr_info(a, 1).errors;
		if (n == 4)
			break;
	}
	cr_assert_eq(n, 4, "%u read errors", n);
	usleep(400000);
	cr_assert_eq(hw_wait(&seen, 1, 0), 0, "4 errors between successes gave an event");
	for (uint64_t off = 0; off < 2 * size && n < 5; off += sizeof(buf)) {
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), off), (ssize_t)sizeof(buf));
		n = (unsigned)ioerr_info(a, 1).errors;
	}
	cr_assert_eq(n, 5, "%u read errors", n);
	cr_assert_eq(hw_wait(&seen, 1, 1000), 1, "no event within a second of the burst");
	cr_assert_eq(seen.ev[0].type, GRAID_EVENT_HEALTH_CRITICAL);
	cr_assert_eq(seen.ev[0].member, 1);
	cr_assert_eq(seen.ev[0].count, GRAID_HEALTH_RULE_IO_ERRORS);
	cr_assert_eq(ioerr_info(a, 1).state, GRAID_MEMBER_ACTIVE);

	o.io_errors_burst = GRAID_HEALTH_IO_BURST_MAX + 1;
	cr_assert_eq(graid_array_set_health_options(a, &o), -EINVAL, "a burst past the ring");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * Role 1's reads all fail. One stripe read five times fails on one area of role 1 five
 * times: retries of one bad area, counted once, so no verdict. Two more stripes are two
 * more areas: three in a row, one verdict.
 */
Test(health, one_bad_area_read_again_counts_once, .timeout = 60)
{
	struct graid_health_options o = { .auto_replace_off = 1 };
	struct hw_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	static uint8_t buf[3 * 65536];
	struct graid_array *a;
	struct au_set s;
	uint64_t row = 0;
	unsigned n;

	a = ioerr_open(&s, 1, "read-eio-after=0", &seen, &o);
	/* The first stripe with a chunk of role 1's in it (not its parity). */
	while (ioerr_info(a, 1).errors == 0) {
		cr_assert_lt(row, 8);
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), row * sizeof(buf)),
			     (ssize_t)sizeof(buf));
		row++;
	}
	row--;
	for (unsigned i = 1; i < 5; i++)
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), row * sizeof(buf)),
			     (ssize_t)sizeof(buf));
	cr_assert_eq(ioerr_info(a, 1).errors, 5, "the stripe's reads did not all fail on role 1");
	usleep(400000);
	cr_assert_eq(hw_wait(&seen, 1, 0), 0, "5 failed reads of one area gave a verdict");
	for (row++, n = 5; n < 7; row++) {
		cr_assert_lt(row, 16);
		cr_assert_eq(graid_array_read(a, buf, sizeof(buf), row * sizeof(buf)),
			     (ssize_t)sizeof(buf));
		n = (unsigned)ioerr_info(a, 1).errors;
	}
	cr_assert_eq(n, 7);
	cr_assert_eq(hw_wait(&seen, 1, 1000), 1, "no verdict within a second of 3 areas");
	cr_assert_eq(seen.ev[0].type, GRAID_EVENT_HEALTH_CRITICAL);
	cr_assert_eq(seen.ev[0].member, 1);
	cr_assert_eq(seen.ev[0].count, GRAID_HEALTH_RULE_IO_ERRORS);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* The I/O-error verdict, as any critical one, starts a replace of the role onto a hot spare. */
Test(health, failed_reads_in_a_row_start_a_replace_onto_the_spare, .timeout = 120)
{
	struct graid_health_options o = { 0 };
	struct hw_seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct graid_array *a;
	struct au_set s;
	char spare[300];
	bool started = false;
	int fd;

	a = ioerr_open(&s, 1, "read-eio-after=0", &seen, &o);
	snprintf(spare, sizeof(spare), "%s/spare", s.dir);
	fd = open(spare, O_CREAT | O_RDWR, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8 << 20), 0);
	close(fd);
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	ioerr_fail_reads(a, 3);
	cr_assert_eq(hw_wait(&seen, 1, 1000), 1, "no event within a second of 3 errors");
	cr_assert_eq(seen.ev[0].count, GRAID_HEALTH_RULE_IO_ERRORS);
	/* The replace copies while the member serves; it started, or already ended. */
	for (unsigned t = 0; t < 200 && !started; t++) {
		struct graid_member_info i = ioerr_info(a, 1);

		started = i.replacing || strcmp(i.path, spare) == 0;
		if (!started)
			usleep(10000);
	}
	cr_assert(started, "no replace of role 1 onto the spare started");
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
