/* SPDX-License-Identifier: MIT */
/* Drive health in the control endpoint's status op and graid_array_member_health_last(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"
#include "testutil.h"

/* Role @p idx's object of a status reply. */
static struct json_object *member_of(struct json_object *st, unsigned idx)
{
	struct json_object *list = cu_field(st, "members");

	cr_assert_gt(json_object_array_length(list), idx);
	return json_object_array_get_idx(list, idx);
}

static uint64_t u64_of(struct json_object *o, const char *key)
{
	return json_object_get_uint64(cu_field(o, key));
}

/*
 * Role 0 a scripted drive with a critical warning bit, watched every 100 ms: status gives
 * its sample (the watch's, with its time) and the rule holding; role 1, a file, has none.
 */
Test(control_health, status_has_the_watchs_last_sample_and_rules, .timeout = 60)
{
	struct graid_health_options ho = { .struct_size = sizeof(ho), .interval_ms = 100,
					   .wear_percent = 90, .media_rising = 2,
					   .media_burst = 25, .media_window_s = 600,
					   .auto_replace_off = 1 };
	struct graid_control_options o = { .struct_size = sizeof(o) };
	struct graid_member_health h = { .struct_size = sizeof(h) };
	char run[300], sock[108], health[320], spec[700];
	struct json_object *r = NULL, *m = NULL, *hj, *sample, *rules;
	const char *paths[AU_MAX];
	struct graid_array *a;
	struct au_set s;
	uint32_t held = 99;
	int fd;

	tu_need_fault_injection();
	au_make(&s, 3, 8u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, sizeof(health), "%s/health0", s.dir);
	tu_put_file(health, "critical_warning 4\navailable_spare 50\nspare_threshold 10\n"
			    "percent_used 7\ntemperature_c 41\nmedia_errors 3\n");
	snprintf(spec, sizeof(spec), "faulty:health=%s:%s", health, s.path[0]);
	memcpy(paths, s.paths, sizeof(s.paths));
	paths[0] = spec;
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_set_health_options(a, &ho), 0);
	snprintf(run, sizeof(run), "%s/run", s.dir);
	o.run_dir = run;
	cr_assert_eq(graid_array_control_start(a, &o), 0);
	cr_assert_eq(graid_array_control_path(a, run, sock, sizeof(sock)), 0);
	fd = cu_connect(sock);
	cr_assert_geq(fd, 0);
	for (int i = 0; i < 200; i++) {
		if (r)
			json_object_put(r);
		r = cu_ask(fd, "{\"op\": \"status\"}\n");
		cr_assert(json_object_get_boolean(cu_field(r, "ok")), "%s",
			  json_object_to_json_string(r));
		m = member_of(r, 0);
		if (json_object_get_type(cu_field(m, "health")) == json_type_object)
			break;
		usleep(10000);
	}
	hj = cu_field(m, "health");
	cr_assert_eq(json_object_get_type(hj), json_type_object, "%s",
		     json_object_to_json_string(r));
	sample = cu_field(hj, "sample");
	cr_assert_str_eq(json_object_get_string(cu_field(sample, "source")), "scripted");
	cr_assert_eq(u64_of(sample, "critical_warning"), 4);
	cr_assert_eq(u64_of(sample, "available_spare"), 50);
	cr_assert_eq(u64_of(sample, "spare_threshold"), 10);
	cr_assert_eq(u64_of(sample, "percent_used"), 7);
	cr_assert_eq(json_object_get_int(cu_field(sample, "temperature_c")), 41);
	cr_assert_eq(u64_of(sample, "media_errors"), 3);
	cr_assert_gt(u64_of(sample, "sampled_ns"), 0);
	cr_assert_lt(u64_of(sample, "age_ms"), 5000);
	rules = cu_field(hj, "rules");
	cr_assert_eq(json_object_array_length(rules), 1, "%s", json_object_to_json_string(hj));
	cr_assert_str_eq(json_object_get_string(json_object_array_get_idx(rules, 0)),
			 "critical-warning");
	cr_assert_str_eq(json_object_get_string(cu_field(hj, "verdict")), "critical");
	/* A file has no health log, and no I/O of it failed: nothing to say. */
	cr_assert_eq(json_object_get_type(cu_field(member_of(r, 1), "health")), json_type_null);
	json_object_put(r);

	/* The same through the public call, which sends no command either. */
	cr_assert_eq(graid_array_member_health_last(a, 0, &h, &held), 0);
	cr_assert_eq(h.critical_warning, 4);
	cr_assert_eq(h.media_errors, 3);
	cr_assert_gt(h.sampled_ns, 0);
	cr_assert_eq(held, GRAID_HEALTH_RULE_CRITICAL_BIT);
	cr_assert_eq(graid_array_member_health_last(a, 1, &h, &held), -ENODATA);
	cr_assert_eq(held, 0);
	cr_assert_eq(graid_array_member_health_last(a, 3, &h, NULL), -EINVAL);
	h.struct_size = 8;
	cr_assert_eq(graid_array_member_health_last(a, 0, &h, NULL), -EINVAL);

	/* The drive recovers: the next sample holds no rule, and status says so. */
	tu_put_file(health, "available_spare 50\nspare_threshold 10\nmedia_errors 3\n");
	for (int i = 0; i < 200; i++) {
		r = cu_ask(fd, "{\"op\": \"status\"}\n");
		hj = cu_field(member_of(r, 0), "health");
		if (!strcmp(json_object_get_string(cu_field(hj, "verdict")), "ok"))
			break;
		json_object_put(r);
		r = NULL;
		usleep(10000);
	}
	cr_assert_not_null(r, "the verdict stayed critical after the drive recovered");
	cr_assert_eq(json_object_array_length(cu_field(hj, "rules")), 0);
	cr_assert_eq(u64_of(cu_field(hj, "sample"), "critical_warning"), 0);
	json_object_put(r);
	close(fd);
	cr_assert_eq(graid_array_control_stop(a), 0);
	cr_assert_eq(graid_array_close(a), 0);

	/* A read-only open has no watch to ask. */
	{
		struct graid_open_options ro = { .struct_size = sizeof(ro),
						 .flags = GRAID_OPEN_READ_ONLY };

		h.struct_size = sizeof(h);
		cr_assert_eq(graid_array_open(paths, 3, &ro, &a), 0);
		cr_assert_eq(graid_array_member_health_last(a, 0, &h, NULL), -EROFS);
		cr_assert_eq(graid_array_close(a), 0);
	}
	au_remove(&s);
}
