/* SPDX-License-Identifier: MIT */
/* graid_array_member_health(): a member's drive health, here from a scripted source. */
#include <errno.h>
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
