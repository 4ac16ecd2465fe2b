/* SPDX-License-Identifier: MIT */
/* The log goes where the caller says, filtered by level, and never to stdout. */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

struct log_seen {
	int count;
	int worst;
	char last[512];
};

static void log_capture(void *arg, int level, const char *msg)
{
	struct log_seen *seen = arg;

	seen->count++;
	if (!seen->worst || level < seen->worst)
		seen->worst = level;
	strncpy(seen->last, msg, sizeof(seen->last) - 1);
}

Test(log, a_refused_plugin_is_logged_with_the_reason)
{
	struct log_seen seen = { 0 };
	struct graid_backend *be;

	graid_log_set(log_capture, &seen, GRAID_LOG_DEBUG);
	cr_assert_eq(graid_backend_open("testmissing", &be), -ENOEXEC);
	cr_assert_gt(seen.count, 0);
	cr_assert_eq(seen.worst, GRAID_LOG_ERR);
	cr_assert_not_null(strstr(seen.last, "'gen'"), "log: %s", seen.last);
	graid_log_set(NULL, NULL, 0);
}

Test(log, messages_above_the_chosen_level_are_dropped)
{
	struct log_seen seen = { 0 };
	struct graid_backend *be;

	graid_log_set(log_capture, &seen, GRAID_LOG_ERR);
	cr_assert_eq(graid_backend_open("ref", &be), 0); /* logs at INFO only */
	graid_backend_close(be);
	cr_assert_eq(seen.count, 0);
	graid_log_set(NULL, NULL, 0);
}
