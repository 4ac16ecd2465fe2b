/* SPDX-License-Identifier: MIT */
/* The log goes where the caller says, filtered by level, and never to stdout. */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/*
 * The library holds its locks across fork(), but not one the forking thread holds itself:
 * a sink that forks (to run a helper, say) runs under the log lock, and waiting for that
 * lock in the fork handler would hang it for good.
 */
static void log_forking_sink(void *arg, int level, const char *msg)
{
	int *status = arg;
	pid_t pid;

	(void)level;
	(void)msg;
	if (*status != -1)
		return; /* once */
	pid = fork();
	if (pid == 0)
		_exit(7);
	if (pid < 0 || waitpid(pid, status, 0) != pid)
		*status = -2;
}

Test(log, a_sink_that_forks_does_not_hang, .timeout = 30)
{
	struct graid_backend *be;
	int status = -1;

	graid_log_set(log_forking_sink, &status, GRAID_LOG_DEBUG);
	/* Opening an engine logs (at info), and takes the locks the fork handler holds. */
	cr_assert_eq(graid_backend_open("ref", &be), 0);
	graid_backend_close(be);
	graid_log_set(NULL, NULL, GRAID_LOG_WARNING);
	cr_assert(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 7,
		  "the sink's child: status %d", status);
}
