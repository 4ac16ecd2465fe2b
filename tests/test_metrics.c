/* SPDX-License-Identifier: MIT */
/* graid_metrics_write(): the exposition of arrays' state, health and rebuild progress. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "healutil.h"
#include "testutil.h"

/* The exposition of @p n arrays, malloc'd; *@p rc gets graid_metrics_write()'s result. */
static char *render(struct graid_array *const *a, const char *const *names, unsigned n,
		    unsigned flags, int *rc)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	*rc = graid_metrics_write(f, a, names, n, flags);
	cr_assert_eq(fclose(f), 0);
	return text;
}

/* How many lines of @p text are exactly @p line. */
static unsigned lines(const char *text, const char *line)
{
	size_t l = strlen(line);
	unsigned n = 0;

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, line, l) && (p[l] == '\n' || p[l] == '\0');
	return n;
}

/* The value of the sample whose name and labels are @p series, or -1 when there is none. */
static double value(const char *text, const char *series)
{
	size_t l = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, l) && p[l] == ' ')
			return strtod(p + l + 1, NULL);
	return -1;
}

static void uuid_of(struct graid_array *a, char out[37])
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	const uint8_t *u = in.uuid;

	cr_assert_eq(graid_array_info(a, &in), 0);
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

Test(metrics, two_arrays_one_family_each_and_a_failed_member, .timeout = 60)
{
	const char *names[2] = { "first", NULL };
	struct graid_array *a[2];
	struct au_set s0, s1;
	char u1[37], series[512], *t;
	int rc;

	au_make(&s0, 4, 8u << 20);
	au_make(&s1, 2, 8u << 20);
	cr_assert_eq(au_create(&s0, 4, 5, 65536, &a[0]), 0);
	cr_assert_eq(au_create(&s1, 2, 1, 65536, &a[1]), 0);
	uuid_of(a[1], u1);
	cr_assert_eq(graid_array_fail_member(a[0], 2), 0);

	/* Asked to look for a rebuild with nothing to copy: still active, not recovering. */
	cr_assert_eq(graid_array_rebuild_start(a[1]), 0);
	t = render(a, names, 2, 0, &rc);
	cr_assert_eq(rc, 0);
	/* Each family once, though two arrays have samples in it. */
	cr_assert_eq(lines(t, "# TYPE graid_state gauge"), 1);
	cr_assert_eq(lines(t, "# TYPE graid_member_state gauge"), 1);
	cr_assert_eq(lines(t, "# TYPE graid_events_total counter"), 1);
	cr_assert_eq(value(t, "graid_disks_required{array=\"first\"}"), 4);
	cr_assert_eq(value(t, "graid_disks{array=\"first\",state=\"active\"}"), 3);
	cr_assert_eq(value(t, "graid_disks{array=\"first\",state=\"failed\"}"), 1);
	cr_assert_eq(value(t, "graid_state{array=\"first\",state=\"degraded\"}"), 1);
	cr_assert_eq(value(t, "graid_state{array=\"first\",state=\"active\"}"), 0);
	cr_assert_eq(value(t, "graid_degraded{array=\"first\"}"), 1);
	cr_assert_eq(value(t, "graid_served{array=\"first\"}"), 1, "a handle that may write");
	snprintf(series, sizeof(series), "graid_member_state{array=\"first\",member=\"2\","
		 "device=\"%s\",state=\"failed\"}", s0.path[2]);
	cr_assert_eq(value(t, series), 1, "%s in:\n%s", series, t);
	cr_assert_geq(value(t, "graid_events_total{array=\"first\"}"), 1,
		      "the failure was an event");
	/* The second array has no name: its UUID labels it, and it is whole. */
	snprintf(series, sizeof(series), "graid_state{array=\"%s\",state=\"active\"}", u1);
	cr_assert_eq(value(t, series), 1);
	snprintf(series, sizeof(series), "graid_blocks{array=\"%s\"}", u1);
	cr_assert_gt(value(t, series), 0);
	/* Member files are no NVMe drives: no health sample. */
	cr_assert_null(strstr(t, "graid_member_available_spare_ratio{"));
	free(t);

	/* Without health: those families are left out whole, the others stay. */
	t = render(a, names, 1, GRAID_METRICS_NO_HEALTH, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(value(t, "graid_state{array=\"first\",state=\"degraded\"}"), 1);
	cr_assert_null(strstr(t, "graid_member_critical_warning"), "left out by the flag");
	free(t);

	cr_assert_eq(graid_array_close(a[0]), 0);
	cr_assert_eq(graid_array_close(a[1]), 0);
	au_remove(&s0);
	au_remove(&s1);
}

Test(metrics, bad_arguments_write_nothing, .timeout = 60)
{
	struct graid_array *a[2];
	const char *bad[1] = { "two\nlines" }, *empty[1] = { "" }, *same[2] = { "x", "x" };
	char *text = NULL;
	size_t len = 0;
	struct au_set s, s1;
	FILE *f;

	au_make(&s, 2, 8u << 20);
	au_make(&s1, 2, 8u << 20);
	cr_assert_eq(au_create(&s, 2, 1, 65536, &a[0]), 0);
	cr_assert_eq(au_create(&s1, 2, 1, 65536, &a[1]), 0);
	f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	cr_assert_eq(graid_metrics_write(NULL, a, NULL, 1, 0), -EINVAL);
	cr_assert_eq(graid_metrics_write(f, NULL, NULL, 1, 0), -EINVAL);
	cr_assert_eq(graid_metrics_write(f, a, NULL, 1, 0x80), -EINVAL, "an unknown flag");
	cr_assert_eq(graid_metrics_write(f, a, bad, 1, 0), -EINVAL, "a newline in a name");
	cr_assert_eq(graid_metrics_write(f, a, empty, 1, 0), -EINVAL, "an empty name");
	cr_assert_eq(graid_metrics_write(f, a, same, 2, 0), -EINVAL, "one label twice");
	a[1] = a[0];
	cr_assert_eq(graid_metrics_write(f, a, NULL, 2, 0), -EINVAL, "one handle twice");
	cr_assert_eq(graid_metrics_write(f, a, NULL, 0, 0), 0, "no array: nothing");
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(len, 0, "nothing written: %s", text);
	free(text);
	cr_assert_eq(graid_array_close(a[0]), 0);
	au_remove(&s);
	au_remove(&s1);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

Test(metrics, a_drives_health_as_its_log_says, .timeout = 60)
{
	struct graid_health_options ho = { .struct_size = sizeof(ho), .interval_ms = 3600000,
					   .wear_percent = 90, .media_rising = 2,
					   .media_burst = 25, .media_window_s = 600 };
	const char *paths[AU_MAX], *names[1] = { "h" };
	char health[320], spec[700], series[900], *t;
	struct graid_array *a;
	struct au_set s;
	int rc;

	tu_need_fault_injection();
	au_make(&s, 4, 8u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, sizeof(health), "%s/health1", s.dir);
	tu_put_file(health, "critical_warning 5\navailable_spare 9\nspare_threshold 10\n"
			 "percent_used 91\ntemperature_c 44\nmedia_errors 31\nerror_log_entries 40\n");
	snprintf(spec, sizeof(spec), "faulty:health=%s:%s", health, s.path[1]);
	memcpy(paths, s.paths, sizeof(s.paths));
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	/* A holder shows its health watch's samples: one at once, the next in an hour. */
	cr_assert_eq(graid_array_set_health_options(a, &ho), 0);
	for (int i = 0; i < 500; i++) {
		t = render(&a, names, 1, 0, &rc);
		cr_assert_eq(rc, 0);
		if (strstr(t, "graid_member_media_errors_total{"))
			break;
		free(t);
		t = NULL;
		sleep_ms(10);
	}
	cr_assert_not_null(t, "the watch's first sample never showed");
#define M1(name, extra) (snprintf(series, sizeof(series), "%s{array=\"h\",member=\"1\"," \
				  "device=\"%s\"%s}", name, s.path[1], extra), series)
	cr_assert_eq(value(t, M1("graid_member_critical_warning", ",bit=\"spare\"")), 1, "%s", t);
	cr_assert_eq(value(t, M1("graid_member_critical_warning", ",bit=\"temperature\"")), 0);
	cr_assert_eq(value(t, M1("graid_member_critical_warning", ",bit=\"reliability\"")), 1);
	cr_assert_float_eq(value(t, M1("graid_member_available_spare_ratio", "")), 0.09, 1e-9);
	cr_assert_float_eq(value(t, M1("graid_member_available_spare_threshold_ratio", "")), 0.10,
			   1e-9);
	cr_assert_float_eq(value(t, M1("graid_member_life_used_ratio", "")), 0.91, 1e-9);
	cr_assert_eq(value(t, M1("graid_member_media_errors_total", "")), 31);
	cr_assert_eq(value(t, M1("graid_member_error_log_entries_total", "")), 40);
	cr_assert_eq(value(t, M1("graid_member_temperature_celsius", "")), 44);
	cr_assert_geq(value(t, M1("graid_member_health_age_seconds", "")), 0, "%s", t);
	/* The other members are files: their health is not read, so not reported. */
	snprintf(series, sizeof(series), "graid_member_media_errors_total{array=\"h\","
		 "member=\"0\",device=\"%s\"}", s.path[0]);
	cr_assert_eq(value(t, series), -1);
	free(t);
	/*
	 * The drive's log changes: the metrics do not read it (no admin command on the caller's
	 * thread), they show the watch's sample, older now, until its next round.
	 */
	tu_put_file(health, "critical_warning 5\navailable_spare 9\nspare_threshold 10\n"
			 "percent_used 91\ntemperature_c 44\nmedia_errors 50\n"
			 "error_log_entries 40\n");
	sleep_ms(50);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(value(t, M1("graid_member_media_errors_total", "")), 31, "%s", t);
	cr_assert_geq(value(t, M1("graid_member_health_age_seconds", "")), 0.05, "%s", t);
	free(t);
#undef M1
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* A rebuild paced at 2 MiB/s: its progress, and a remaining time from two renders apart. */
Test(metrics, a_rebuild_shows_its_progress_and_time_left, .timeout = 120)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 2u << 20 };
	const char *names[1] = { "r" };
	char newpath[400], series[900], *t;
	struct graid_array *a;
	struct au_set s;
	double eta, done, total;
	void *buf;
	int rc;

	au_make(&s, 4, 16u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	/* Written whole: a rebuild copies only the regions in use. */
	buf = calloc(1, 1u << 20);
	cr_assert_not_null(buf);
	for (uint64_t off = 0; graid_array_write(a, buf, 1u << 20, off) == (ssize_t)(1u << 20);
	     off += 1u << 20)
		;
	free(buf);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	snprintf(newpath, sizeof(newpath), "%s/new1", s.dir);
	tu_put_file(newpath, "");
	cr_assert_eq(truncate(newpath, 16u << 20), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_member(a, 1, newpath), 0);
	cr_assert_eq(graid_array_rebuild_start(a), 0);
	/* The first look that sees the copy under way: it has nothing to compare with. */
	snprintf(series, sizeof(series), "graid_member_rebuild_done_bytes{array=\"r\","
		 "member=\"1\",device=\"%s\"}", newpath);
	for (int i = 0; i < 100; i++) {
		t = render(&a, names, 1, 0, &rc);
		cr_assert_eq(rc, 0);
		if (value(t, series) > 0)
			break;
		free(t);
		t = NULL;
		sleep_ms(50);
	}
	cr_assert_not_null(t, "the rebuild did not start");
	cr_assert_eq(value(t, "graid_state{array=\"r\",state=\"recovering\"}"), 1, "%s", t);
	snprintf(series, sizeof(series), "graid_member_rebuild_remaining_seconds{array=\"r\","
		 "member=\"1\",device=\"%s\"}", newpath);
	cr_assert_eq(value(t, series), -1, "no estimate from one look");
	free(t);
	/*
	 * A later look, once the copy moved on since the first (the rate limit paces it in
	 * bursts: a look 1.5 s on may find it where the first did, and has no rate then).
	 */
	sleep_ms(1500);
	for (int i = 0;; i++) {
		t = render(&a, names, 1, 0, &rc);
		cr_assert_eq(rc, 0);
		eta = value(t, series);
		if (eta >= 0 || i == 20)
			break;
		free(t);
		sleep_ms(250);
	}
	snprintf(series, sizeof(series), "graid_member_rebuild_done_bytes{array=\"r\","
		 "member=\"1\",device=\"%s\"}", newpath);
	done = value(t, series);
	snprintf(series, sizeof(series), "graid_member_rebuild_total_bytes{array=\"r\","
		 "member=\"1\",device=\"%s\"}", newpath);
	total = value(t, series);
	cr_assert_gt(done, 0, "%s", t);
	cr_assert_gt(total, done);
	/* At 2 MiB/s the rest takes (total - done) / 2 MiB seconds; the estimate within 2x. */
	cr_assert_gt(eta, (total - done) / (2 << 20) / 2, "eta %f, done %f of %f", eta, done,
		     total);
	cr_assert_lt(eta, (total - done) / (2 << 20) * 2, "eta %f, done %f of %f", eta, done,
		     total);
	cr_assert_lt(value(t, "graid_blocks_synced{array=\"r\"}"),
		     value(t, "graid_blocks{array=\"r\"}"));
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A RAID-5 rebuild past a sector another member cannot read (as test_bad_blocks' first
 * case): both roles' bad-block logs get a block, and the metrics count it per role.
 */
Test(metrics, bad_blocks_per_role, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX], *names[1] = { "bb" };
	char spec[400], series[900], *newpath, *t;
	struct graid_array *a;
	struct au_set s;
	int rc;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(s.paths));
	snprintf(spec, sizeof(spec), "faulty:bad-block-sticky=69632:%s", s.path[1]);
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	newpath = heal_new_member(&s, "new");
	cr_assert_eq(graid_array_replace_member(a, 0, newpath), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);

	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	snprintf(series, sizeof(series), "graid_member_bad_blocks{array=\"bb\",member=\"0\","
		 "device=\"%s\"}", newpath);
	cr_assert_eq(value(t, series), 1, "%s", t);
	snprintf(series, sizeof(series), "graid_member_bad_blocks{array=\"bb\",member=\"1\","
		 "device=\"%s\"}", s.path[1]);
	cr_assert_eq(value(t, series), 1, "%s", t);
	snprintf(series, sizeof(series), "graid_member_bad_blocks{array=\"bb\",member=\"2\","
		 "device=\"%s\"}", s.path[2]);
	cr_assert_eq(value(t, series), 0, "%s", t);
	cr_assert_eq(value(t, "graid_state{array=\"bb\",state=\"active\"}"), 1, "%s", t);
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

struct scrub_look {
	struct graid_array *a;
	double running, check, ratio; /* what the render inside the scrub saw */
	int calls;
};

/* The scrub's progress callback (no lock held there): render, then ask the scrub to stop. */
static void scrub_look_cb(void *arg, uint64_t done, uint64_t total)
{
	struct scrub_look *l = arg;
	const char *names[1] = { "sc" };
	char *t;
	int rc;

	(void)done;
	(void)total;
	if (l->calls++)
		return;
	t = render(&l->a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	l->running = value(t, "graid_scrub_running{array=\"sc\"}");
	l->check = value(t, "graid_state{array=\"sc\",state=\"check\"}");
	free(t);
	cr_assert_eq(graid_array_scrub_stop(l->a), 0);
}

Test(metrics, a_scrub_under_way_and_its_checkpoint, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	const char *names[1] = { "sc" };
	struct scrub_look l = { 0 };
	struct au_set s;
	char *t;
	int rc;

	/* Mirrors are scrubbed a row at a time: the callback comes before the last row. */
	au_make(&s, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 2, 1, 65536, &l.a), 0);
	cr_assert_eq(graid_array_info(l.a, &info), 0);
	heal_fill(l.a, info.size, 1);
	t = render(&l.a, names, 1, 0, &rc);
	cr_assert_eq(value(t, "graid_scrub_running{array=\"sc\"}"), 0);
	cr_assert_eq(value(t, "graid_scrub_checkpoint_ratio{array=\"sc\"}"), 0);
	free(t);

	rep.progress = scrub_look_cb;
	rep.progress_arg = &l;
	cr_assert_eq(graid_array_scrub(l.a, 0, &rep), -ECANCELED);
	cr_assert_eq(l.running, 1, "the render inside the scrub saw it running");
	cr_assert_eq(l.check, 1, "and the array in state check");

	/* Stopped: not running, and its checkpoint part of the way. */
	t = render(&l.a, names, 1, 0, &rc);
	cr_assert_eq(value(t, "graid_scrub_running{array=\"sc\"}"), 0, "%s", t);
	l.ratio = value(t, "graid_scrub_checkpoint_ratio{array=\"sc\"}");
	cr_assert(l.ratio > 0 && l.ratio < 1, "checkpoint ratio %f", l.ratio);
	cr_assert_eq(value(t, "graid_state{array=\"sc\",state=\"active\"}"), 1, "%s", t);
	free(t);
	cr_assert_eq(graid_array_close(l.a), 0);
	au_remove(&s);
}

/* The reads of the three members of array "io" that @p t shows, added up. */
static double member_reads(const char *t, const struct au_set *s)
{
	char series[512];
	double sum = 0;

	for (int m = 0; m < 3; m++) {
		snprintf(series, sizeof(series), "graid_member_io_ops_total{array=\"io\","
			 "member=\"%d\",device=\"%s\",kind=\"read\"}", m, s->path[m]);
		double v = value(t, series);
		cr_assert_geq(v, 0, "%s missing", series);
		sum += v;
	}
	return sum;
}

Test(metrics, io_counts_and_latency_histograms, .timeout = 60)
{
	const char *names[1] = { "io" };
	struct graid_stats_options so = { .struct_size = sizeof(so),
					  .flags = GRAID_STATS_HISTOGRAMS };
	struct graid_array *a;
	struct au_set s;
	char *t, *buf;
	int rc;

	au_make(&s, 3, 8u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	/* Histograms off: counted, but no histogram series (it would read as no I/O). */
	buf = calloc(1, 65536);
	cr_assert_not_null(buf);
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(value(t, "graid_io_ops_total{array=\"io\",kind=\"write\"}"), 1, "%s", t);
	cr_assert_eq(value(t, "graid_io_bytes_total{array=\"io\",kind=\"write\"}"), 65536);
	cr_assert_null(strstr(t, "graid_io_latency_seconds_count{"), "%s", t);
	double reads_before = member_reads(t, &s);
	free(t);
	/* On: 8 reads land in the buckets; the cumulative +Inf bucket is their count. */
	cr_assert_eq(graid_array_set_stats_options(a, &so), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(graid_array_read(a, buf, 4096, (uint64_t)i * 4096), 4096);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(lines(t, "# TYPE graid_io_latency_seconds histogram"), 1);
	cr_assert_eq(value(t, "graid_io_ops_total{array=\"io\",kind=\"read\"}"), 8, "%s", t);
	cr_assert_eq(value(t, "graid_io_latency_seconds_count{array=\"io\",kind=\"read\"}"), 8);
	cr_assert_eq(value(t, "graid_io_latency_seconds_bucket{array=\"io\",kind=\"read\","
			      "le=\"+Inf\"}"), 8);
	cr_assert_gt(value(t, "graid_io_latency_seconds_sum{array=\"io\",kind=\"read\"}"), 0);
	/* The write before the histograms: counted, in no bucket. */
	cr_assert_null(strstr(t, "graid_io_latency_seconds_count{array=\"io\",kind=\"write\"}"));
	/* Each read is one 4 KiB read of one member: the members' reads grew by 8. */
	cr_assert_eq(member_reads(t, &s) - reads_before, 8, "%s", t);
	double sum = value(t, "graid_io_latency_seconds_sum{array=\"io\",kind=\"read\"}");
	free(t);
	/*
	 * Off again, more reads: the histogram is what it was, _sum included (a counter never
	 * goes down, and it is the sum of the 8 reads the buckets hold, not of all reads).
	 */
	so.flags = 0;
	cr_assert_eq(graid_array_set_stats_options(a, &so), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(graid_array_read(a, buf, 4096, (uint64_t)i * 4096), 4096);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(value(t, "graid_io_ops_total{array=\"io\",kind=\"read\"}"), 16);
	cr_assert_eq(value(t, "graid_io_latency_seconds_count{array=\"io\",kind=\"read\"}"), 8);
	cr_assert_eq(value(t, "graid_io_latency_seconds_sum{array=\"io\",kind=\"read\"}"), sum,
		     "%s", t);
	free(t);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(metrics, a_replace_in_service_shows_its_copy, .timeout = 120)
{
	const char *names[1] = { "k" };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 2u << 20,
					    .busy_bytes_per_sec = 2u << 20 };
	struct graid_array *a;
	struct au_set s;
	char newpath[300], series[512], *t = NULL, *buf;
	int rc;

	au_make(&s, 3, 16u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	buf = calloc(1, 1u << 20);
	cr_assert_not_null(buf);
	for (uint64_t off = 0; graid_array_write(a, buf, 1u << 20, off) == (ssize_t)(1u << 20);
	     off += 1u << 20)
		;
	free(buf);
	snprintf(newpath, sizeof(newpath), "%s/new2", s.dir);
	tu_put_file(newpath, "");
	cr_assert_eq(truncate(newpath, 16u << 20), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_start(a, 2, newpath, 0), 0);
	snprintf(series, sizeof(series), "graid_member_replacing{array=\"k\",member=\"2\","
		 "device=\"%s\"}", s.path[2]);
	for (int i = 0; i < 100; i++) {
		t = render(&a, names, 1, 0, &rc);
		cr_assert_eq(rc, 0);
		if (value(t, series) == 1)
			break;
		free(t);
		t = NULL;
		sleep_ms(20);
	}
	cr_assert_not_null(t, "no replace under way in the metrics");
	/* The role stays active: not degraded, not recovering. */
	cr_assert_eq(value(t, "graid_degraded{array=\"k\"}"), 0, "%s", t);
	cr_assert_eq(value(t, "graid_state{array=\"k\",state=\"active\"}"), 1, "%s", t);
	snprintf(series, sizeof(series), "graid_member_replace_total_bytes{array=\"k\","
		 "member=\"2\",device=\"%s\"}", s.path[2]);
	cr_assert_gt(value(t, series), 0, "%s", t);
	snprintf(series, sizeof(series), "graid_member_replacing{array=\"k\",member=\"0\","
		 "device=\"%s\"}", s.path[0]);
	cr_assert_eq(value(t, series), 0, "%s", t);
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Whether @p t is well-formed UTF-8 throughout (what a Prometheus parser asks of the text). */
static bool utf8_valid(const char *t)
{
	const unsigned char *p = (const unsigned char *)t;

	while (*p) {
		unsigned n = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 :
			     (*p & 0xf8) == 0xf0 ? 4 : 0;

		if (!n || (n == 2 && *p < 0xc2))
			return false;
		for (unsigned i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				return false;
		p += n;
	}
	return true;
}

Test(metrics, a_device_path_of_invalid_utf8_keeps_the_text_valid, .timeout = 60)
{
	const char *names[1] = { "odd" };
	struct graid_array *a;
	struct au_set s;
	char odd[320], series[768], *t;
	int rc;

	au_make(&s, 2, 8u << 20);
	/* A Latin-1 'e-acute' (not UTF-8), a lone continuation byte, and a real UTF-8 one. */
	snprintf(odd, sizeof(odd), "%s-caf\xe9-\x80-\xc3\xa9", s.path[1]);
	cr_assert_lt(strlen(odd), sizeof(s.path[1]));
	cr_assert_eq(rename(s.path[1], odd), 0);
	snprintf(series, sizeof(series), "graid_member_state{array=\"odd\",member=\"1\","
		 "device=\"%s-caf\xef\xbf\xbd-\xef\xbf\xbd-\xc3\xa9\",state=\"active\"}",
		 s.path[1]);
	memcpy(s.path[1], odd, strlen(odd) + 1);
	cr_assert_eq(au_create(&s, 2, 1, 65536, &a), 0);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert(utf8_valid(t), "the exposition holds bytes that are not UTF-8");
	/* Each bad byte is U+FFFD; the well-formed sequence stays as it was. */
	cr_assert_eq(value(t, series), 1, "%s in:\n%s", series, t);
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(metrics, a_read_only_look_is_not_served, .timeout = 60)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro),
					 .flags = GRAID_OPEN_READ_ONLY };
	const char *names[1] = { "look" };
	struct graid_array *a;
	struct au_set s;
	char *t;
	int rc;

	au_make(&s, 3, 8u << 20);
	cr_assert_eq(au_create(&s, 3, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths, 3, &ro, &a), 0);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(value(t, "graid_served{array=\"look\"}"), 0, "%s", t);
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* Bytes of @p path at @p at, 8 of them little-endian (a superblock field). */
static uint64_t le64_at(const char *path, off_t at)
{
	uint8_t b[8];
	uint64_t v = 0;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, b, 8, at), 8);
	close(fd);
	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

/*
 * A checksummed RAID-1 whose block 5 is wrong on both copies: each role counts one mismatch,
 * no tag error; an array without checksums has no such series.
 */
Test(metrics, checksum_errors_per_role, .timeout = 60)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .chunk_bytes = 65536, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS };
	const char *names[2] = { "csum", "plain" };
	struct graid_array *a[2];
	struct au_set s, p;
	char series[900], *t;
	uint8_t *buf = malloc(1u << 20), blk[4096];
	int rc;

	cr_assert_not_null(buf);
	au_make(&s, 2, 8u << 20);
	au_make(&p, 2, 8u << 20);
	cr_assert_eq(graid_array_create(s.paths, 2, &cfg, &a[0]), 0);
	memset(buf, 0x3c, 1u << 20);
	cr_assert_eq(graid_array_write(a[0], buf, 1u << 20, 0), 1 << 20);
	cr_assert_eq(graid_array_close(a[0]), 0);
	for (unsigned m = 0; m < 2; m++) {
		/* Block 5 of the data area (its offset at 0x50 of the superblock) changed. */
		uint64_t at = le64_at(s.path[m], 0x50) + 5 * 4096;
		int fd = open(s.path[m], O_RDWR);

		cr_assert_geq(fd, 0);
		cr_assert_eq(pread(fd, blk, 4096, (off_t)at), 4096);
		blk[7] ^= 0x81;
		cr_assert_eq(pwrite(fd, blk, 4096, (off_t)at), 4096);
		close(fd);
	}
	cr_assert_eq(graid_array_open(s.paths, 2, NULL, &a[0]), 0);
	cr_assert_eq(au_create(&p, 2, 1, 65536, &a[1]), 0);
	cr_assert_eq(graid_array_read(a[0], buf, 1u << 20, 0), -EIO);
	cr_assert_eq(graid_array_read(a[1], buf, 1u << 20, 0), 1 << 20);

	t = render(a, names, 2, 0, &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(lines(t, "# TYPE graid_member_checksum_errors_total counter"), 1, "%s", t);
	cr_assert_eq(lines(t, "# TYPE graid_member_checksum_tag_errors_total counter"), 1, "%s", t);
	cr_assert_eq(lines(t, "# TYPE graid_member_checksum_lost_writes_total counter"), 1, "%s",
		     t);
	for (unsigned m = 0; m < 2; m++) {
		/* A bit flip is not a lost write: the generations agree. */
		snprintf(series, sizeof(series), "graid_member_checksum_lost_writes_total{array="
			 "\"csum\",member=\"%u\",device=\"%s\"}", m, s.path[m]);
		cr_assert_eq(value(t, series), 0, "%s in:\n%s", series, t);
		snprintf(series, sizeof(series), "graid_member_checksum_errors_total{array="
			 "\"csum\",member=\"%u\",device=\"%s\"}", m, s.path[m]);
		cr_assert_eq(value(t, series), 1, "%s in:\n%s", series, t);
		snprintf(series, sizeof(series), "graid_member_checksum_tag_errors_total{array="
			 "\"csum\",member=\"%u\",device=\"%s\"}", m, s.path[m]);
		cr_assert_eq(value(t, series), 0, "%s in:\n%s", series, t);
	}
	snprintf(series, sizeof(series), "graid_member_errors_total{array=\"csum\",member=\"0\","
		 "device=\"%s\"}", s.path[0]);
	cr_assert_eq(value(t, series), 0, "a mismatch is no I/O error:\n%s", t);
	cr_assert_null(strstr(t, "graid_member_checksum_errors_total{array=\"plain\""), "%s", t);
	cr_assert_null(strstr(t, "graid_member_checksum_tag_errors_total{array=\"plain\""), "%s",
		       t);
	cr_assert_null(strstr(t, "graid_member_checksum_lost_writes_total{array=\"plain\""),
		       "%s", t);
	free(t);
	free(buf);
	cr_assert_eq(graid_array_close(a[0]), 0);
	cr_assert_eq(graid_array_close(a[1]), 0);
	au_remove(&s);
	au_remove(&p);
}

Test(metrics, a_grow_shows_its_progress_and_time_left, .timeout = 120)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 256u << 10 };
	const char *names[1] = { "g" };
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct graid_array *a;
	struct au_set s;
	double eta = -1, done = -1, total;
	char *t = NULL;
	int rc;

	au_make(&s, 4, 3u << 20);
	cr_assert_eq(au_create(&s, 3, 0, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &in), 0);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(value(t, "graid_reshape_running{array=\"g\"}"), 0, "%s", t);
	cr_assert_eq(value(t, "graid_reshape_total_bytes{array=\"g\"}"), -1, "none recorded");
	free(t);
	/* 3 MiB over four members at 256 KiB/s each: about three seconds. */
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_grow(a, &s.paths[3], 1, 0), 0);
	for (int i = 0; i < 100 && eta < 0; i++) {
		sleep_ms(50);
		t = render(&a, names, 1, 0, &rc);
		cr_assert_eq(rc, 0);
		eta = value(t, "graid_reshape_remaining_seconds{array=\"g\"}");
		done = value(t, "graid_reshape_done_bytes{array=\"g\"}");
		total = value(t, "graid_reshape_total_bytes{array=\"g\"}");
		if (eta < 0)
			free(t);
	}
	cr_assert_geq(eta, 0, "no estimate while it moves");
	cr_assert_eq(value(t, "graid_reshape_running{array=\"g\"}"), 1, "%s", t);
	cr_assert_eq(value(t, "graid_reshape_error{array=\"g\"}"), 0);
	cr_assert_eq(total, (double)in.size, "%s", t);
	cr_assert_lt(done, total);
	cr_assert_lt(eta, 60);
	free(t);
	/* Done: no amounts, not running, the new size. */
	for (int i = 0; i < 600; i++) {
		cr_assert_eq(graid_array_info(a, &in), 0);
		if (!in.reshaping)
			break;
		sleep_ms(50);
	}
	cr_assert_eq(in.reshaping, 0);
	t = render(&a, names, 1, 0, &rc);
	cr_assert_eq(value(t, "graid_reshape_running{array=\"g\"}"), 0, "%s", t);
	cr_assert_eq(value(t, "graid_reshape_done_bytes{array=\"g\"}"), -1);
	cr_assert_eq(value(t, "graid_reshape_remaining_seconds{array=\"g\"}"), -1);
	cr_assert_eq(value(t, "graid_size_bytes{array=\"g\"}"), (double)in.size);
	free(t);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
