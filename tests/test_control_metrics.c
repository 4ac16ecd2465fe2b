/* SPDX-License-Identifier: MIT */
/* The control endpoint's metrics op: the holder's graid_metrics_write() text (docs/CONTROL.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"
#include "testutil.h"

static bool ok_of(struct json_object *r)
{
	return json_object_get_boolean(cu_field(r, "ok"));
}

Test(control_metrics, the_op_returns_the_holders_render, .timeout = 60)
{
	struct graid_control_options o = { .struct_size = sizeof(o) };
	char run[300], sock[108];
	struct json_object *r;
	struct graid_array *a;
	struct au_set s;
	const char *text;
	int fd;

	au_make(&s, 4, 8u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	snprintf(run, sizeof(run), "%s/run", s.dir);
	o.run_dir = run;
	cr_assert_eq(graid_array_control_start(a, &o), 0);
	cr_assert_eq(graid_array_control_path(a, run, sock, sizeof(sock)), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	fd = cu_connect(sock);
	cr_assert_geq(fd, 0);

	r = cu_ask(fd, "{\"id\": 1, \"op\": \"metrics\", \"name\": \"vol\"}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	text = json_object_get_string(cu_field(r, "text"));
	cr_assert(strstr(text, "# TYPE graid_state gauge\n"), "%s", text);
	cr_assert(strstr(text, "\ngraid_state{array=\"vol\",state=\"degraded\"} 1\n"), "%s", text);
	cr_assert(strstr(text, "\ngraid_disks{array=\"vol\",state=\"failed\"} 1\n"), "%s", text);
	json_object_put(r);

	/* Without a name: the UUID; without health: no health family at all. */
	r = cu_ask(fd, "{\"op\": \"metrics\", \"health\": false}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	text = json_object_get_string(cu_field(r, "text"));
	cr_assert_null(strstr(text, "array=\"vol\""));
	cr_assert_null(strstr(text, "graid_member_critical_warning"));
	json_object_put(r);

	r = cu_ask(fd, "{\"op\": \"metrics\", \"name\": \"\"}\n");
	cr_assert(!ok_of(r));
	cr_assert_eq(json_object_get_int(cu_field(r, "errno")), EINVAL);
	json_object_put(r);
	r = cu_ask(fd, "{\"op\": \"metrics\", \"health\": 1}\n");
	cr_assert(!ok_of(r));
	cr_assert(strstr(json_object_get_string(cu_field(r, "error")), "health"));
	json_object_put(r);
	r = cu_ask(fd, "{\"op\": \"metrics\", \"format\": \"json\"}\n");
	cr_assert(!ok_of(r));
	cr_assert(strstr(json_object_get_string(cu_field(r, "error")), "format"));
	json_object_put(r);

	close(fd);
	cr_assert_eq(graid_array_close(a), 0);
	rmdir(run);
	au_remove(&s);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * Role 0's drive stops answering its health command (a FIFO nobody writes): the op still
 * answers at once, with the watch's last sample and its age, since it sends no command of
 * its own from the endpoint's only thread.
 */
Test(control_metrics, a_hung_drive_holds_not_the_op, .timeout = 60)
{
	struct graid_health_options ho = { .struct_size = sizeof(ho), .interval_ms = 100,
					   .wear_percent = 90, .media_rising = 2,
					   .media_burst = 25, .media_window_s = 600 };
	struct graid_control_options o = { .struct_size = sizeof(o) };
	char run[300], sock[108], health[320], spec[700];
	const char *paths[AU_MAX], *text = NULL;
	struct json_object *r = NULL;
	struct graid_array *a;
	struct au_set s;
	uint64_t t0;
	int fd, wfd;

	tu_need_fault_injection();
	au_make(&s, 3, 8u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, sizeof(health), "%s/health0", s.dir);
	tu_put_file(health, "available_spare 100\nspare_threshold 10\nmedia_errors 7\n");
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
	/* The watch's first sample shows. */
	for (int i = 0; i < 200; i++) {
		if (text && strstr(text, "graid_member_media_errors_total{"))
			break;
		if (r)
			json_object_put(r);
		usleep(10000);
		r = cu_ask(fd, "{\"op\": \"metrics\", \"name\": \"h\"}\n");
		cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
		text = json_object_get_string(cu_field(r, "text"));
	}
	cr_assert(strstr(text, "graid_member_media_errors_total{"), "%s", text);
	json_object_put(r);

	/* From now on the drive's command hangs: the watch waits in the FIFO's open. */
	cr_assert_eq(unlink(health), 0);
	cr_assert_eq(mkfifo(health, 0600), 0);
	usleep(300 * 1000);
	t0 = ms_now();
	r = cu_ask(fd, "{\"op\": \"metrics\", \"name\": \"h\"}\n");
	cr_assert_lt(ms_now() - t0, 2000, "the op waited on the drive");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	text = json_object_get_string(cu_field(r, "text"));
	cr_assert(strstr(text, "\ngraid_member_media_errors_total{array=\"h\",member=\"0\","),
		  "%s", text);
	cr_assert(strstr(text, "\ngraid_member_health_age_seconds{array=\"h\",member=\"0\","),
		  "%s", text);
	json_object_put(r);

	/* The command answers: a writer for the FIFO, and a plain file for the samples after. */
	wfd = open(health, O_WRONLY);
	cr_assert_geq(wfd, 0);
	tu_put_file(health, "available_spare 100\nspare_threshold 10\n");
	cr_assert_eq(write(wfd, "available_spare 100\n", 20), 20);
	close(wfd);
	close(fd);
	cr_assert_eq(graid_array_control_stop(a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
