/* SPDX-License-Identifier: MIT */
/* The control endpoint's metrics op: the holder's graid_metrics_write() text (docs/CONTROL.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"

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
