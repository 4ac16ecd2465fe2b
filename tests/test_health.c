/* SPDX-License-Identifier: MIT */
/* graid_array_member_health(): a member's drive health, here from a scripted source. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

/* Write @p text to @p path whole, through a rename, as a drive's log changes at once. */
static void put_file(const char *path, const char *text)
{
	char tmp[400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0);
}

Test(health, a_scripted_drive_reports_what_its_log_says, .timeout = 60)
{
	struct graid_member_health h = { .struct_size = sizeof(h) };
	char health[320], spec[700];
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	au_make(&s, 4, 8u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, sizeof(health), "%s/health1", s.dir);
	put_file(health, "critical_warning 0\navailable_spare 100\nspare_threshold 10\n"
			 "percent_used 3\ntemperature_c 41\nmedia_errors 0\n");
	snprintf(spec, sizeof(spec), "faulty:health=%s:%s", health, s.path[1]);
	memcpy(paths, s.paths, sizeof(paths));
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);

	cr_assert_eq(graid_array_member_health(a, 1, &h), 0);
	cr_assert_str_eq(h.source, "scripted");
	cr_assert_eq(h.available_spare, 100);
	cr_assert_eq(h.spare_threshold, 10);
	cr_assert_eq(h.percent_used, 3);
	cr_assert_eq(h.temperature_c, 41);
	cr_assert_eq(h.media_errors, 0);
	cr_assert_neq(h.sampled_ns, 0);

	/* The drive goes bad: the next read says so. */
	put_file(health, "critical_warning 4\navailable_spare 9\nspare_threshold 10\n"
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

	put_file(health, "media_errors many\n");
	cr_assert_eq(graid_array_member_health(a, 1, &h), -EINVAL, "a bad line");
	put_file(health, "no_such_field 1\n");
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
