/* SPDX-License-Identifier: MIT */
/* How the server starts: the check before nbdkit forks, the array's start lock, the open after. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "gp.h"
#include "metrics_http.h"

/*
 * Why the start is built this way (README.md, "Starting"): nbdkit calls get_ready before it
 * binds its socket and forks into the background, and after_fork in the process that
 * serves, once nbdkit's parent process is on its way to exit 0. So all that can refuse
 * the start is decided in get_ready, while a refusal still leaves nothing behind, and the
 * array is opened for good in after_fork (accelerator runtimes do not survive a fork).
 * Between the two, the start lock keeps every other server of this plugin away from the
 * array, and the parent waits at its exit for after_fork's verdict, so that an open
 * failing there (another program took the array meanwhile) still makes nbdkit exit
 * non-zero.
 */

#define GP_LOCK_PREFIX "libgraid-nbdkit-"

static void gp_uuid_hex(const uint8_t uuid[16], char out[33])
{
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", uuid[i]);
}

/*
 * The start lock: an abstract socket named after the array, bound on a socket that the
 * get_ready process made before the check forked (so the check binds it for nbdkit, and
 * the server inherits it through nbdkit's fork). The kernel frees the name when the last
 * process holding the socket is gone; no file is left behind, whatever killed it.
 */
static int gp_lock_take(int fd, const uint8_t uuid[16])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char hex[33];
	int n;

	gp_uuid_hex(uuid, hex);
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, GP_LOCK_PREFIX "%s", hex);
	if (bind(fd, (struct sockaddr *)&sa,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0)
		return 0;
	if (errno == EADDRINUSE)
		gp_error("another nbdkit graid server is starting or serving the array %s on this "
			 "host; stop it first (nothing was written)", hex);
	else
		gp_error("the array's start lock: %m");
	return -1;
}

/*
 * The array the library will pick (the UUID most members given carry; among equals, the
 * freshest), from the superblocks alone: the lock is taken before anything is opened.
 */
static bool gp_pick_uuid(uint8_t uuid[16])
{
	struct graid_member_probe p[GRAID_MAX_MEMBERS];
	int best = -1;
	unsigned best_count = 0;

	for (unsigned i = 0; i < gp.nmembers; i++) {
		p[i] = (struct graid_member_probe){ .struct_size = sizeof(p[i]) };
		if (graid_member_probe(gp.members[i], &p[i]))
			p[i].has_superblock = 0;
	}
	for (unsigned i = 0; i < gp.nmembers; i++) {
		unsigned count = 0;

		if (!p[i].has_superblock)
			continue;
		for (unsigned j = 0; j < gp.nmembers; j++)
			count += p[j].has_superblock &&
				 !memcmp(p[j].array_uuid, p[i].array_uuid, 16);
		if (best < 0 || count > best_count ||
		    (count == best_count && p[i].events > p[best].events)) {
			best = (int)i;
			best_count = count;
		}
	}
	if (best >= 0)
		memcpy(uuid, p[best].array_uuid, 16);
	return best >= 0;
}

static int gp_open_array(const char *backend, unsigned flags, bool lease,
			 struct graid_array **out)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .backend = backend,
					.flags = flags, .lease = lease ? gp.lease : NULL };
	int rc = graid_array_open((const char *const *)gp.members, gp.nmembers, &o, out);

	if (rc)
		gp_error("cannot assemble the array from %u members: %s", gp.nmembers,
			 graid_strerror(rc));
	return rc;
}

/*
 * Whether the look says the server would run without role @p r: no member given for it, or
 * the one given left out at this open (shrunk or a copy: its role is recorded failed now;
 * stale, diverged, not writable: missing). *@p given: that path's index, or -1.
 */
static bool gp_role_left_out(struct graid_array *a, const struct graid_array_info *info,
			     unsigned r, struct graid_given_info *gi, int *given)
{
	*given = -1;
	for (unsigned i = 0; i < gp.nmembers; i++) {
		struct graid_given_info g = { .struct_size = sizeof(g) };

		if (graid_array_given_info(a, i, &g) || g.role != (int)r ||
		    g.verdict == GRAID_GIVEN_MEMBER || g.verdict == GRAID_GIVEN_SPARE)
			continue;
		*gi = g;
		*given = (int)i;
		break;
	}
	if (info->member_state[r] == GRAID_MEMBER_MISSING)
		return true;
	/* Recorded failed by the others before: out already, and no --degraded brings it in. */
	return info->member_state[r] == GRAID_MEMBER_FAILED && *given >= 0 &&
	       (gi->verdict == GRAID_GIVEN_SHRUNK || gi->verdict == GRAID_GIVEN_IDENTITY);
}

/* Roles the array would run without; each named, with why, when degraded=1 is not given. */
static unsigned gp_roles_missing(struct graid_array *a, const struct graid_array_info *info,
				 bool explain)
{
	unsigned out = 0;

	for (unsigned r = 0; r < info->nmembers && r < GRAID_MAX_MEMBERS; r++) {
		struct graid_given_info g;
		int i;

		if (!gp_role_left_out(a, info, r, &g, &i))
			continue;
		out++;
		if (!explain)
			continue;
		if (i >= 0)
			gp_error("role %u of the array has no member: %s, given for it, was left "
				 "out (%s); give a member in sync for it, or add degraded=1 to serve "
				 "without it (nothing was written)", r, gp.members[i], g.why);
		else
			gp_error("role %u of the array is not among the members given; give its "
				 "member, or add degraded=1 to serve without it (nothing was "
				 "written)", r);
	}
	return out;
}

/*
 * The check, in a process of its own that exits after it (no accelerator is initialised in
 * nbdkit's process, which is about to fork: CUDA cannot be used in a child forked after
 * its initialisation). A look first, read-only, which writes nothing: an open that may
 * write records missing roles missing and lets a hot spare take them, which only
 * degraded=1 allows. Then the open the server will make (its engine, writable unless -r),
 * so a holder or a missing engine shows here. Returns the exit status.
 */
static int gp_check(int lock_fd)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	unsigned ro = gp.srv.readonly ? GRAID_OPEN_READ_ONLY : 0, missing;
	struct graid_array *a;
	uint8_t uuid[16];
	int rc;

	if (lock_fd >= 0 && gp_pick_uuid(uuid) && gp_lock_take(lock_fd, uuid))
		return 1;
	/* The look computes no parity: the reference engine, so "auto" is not measured twice. */
	if (gp_open_array("ref", GRAID_OPEN_READ_ONLY, false, &a))
		return 1;
	rc = graid_array_info(a, &info);
	if (rc) {
		graid_array_close(a);
		gp_error("graid_array_info: %s", graid_strerror(rc));
		return 1;
	}
	missing = gp.degraded_ok ? 0 : gp_roles_missing(a, &info, true);
	graid_array_close(a);
	if (missing)
		return 1;
	/* A lease taken and given back here would cost its lockspace join twice. */
	if (gp_open_array(gp.backend, ro, false, &a))
		return 1;
	rc = graid_array_close(a);
	if (rc) {
		gp_error("closing the array after the check: %s", graid_strerror(rc));
		return 1;
	}
	return 0;
}

/* The get_ready process, as it exits: did the server it forked off open the array? */
static void gp_ready_exit(void)
{
	char buf[4096], *msg = NULL;
	size_t len = 0;

	if (getpid() != gp.ready_pid || !gp.forked || gp.report_fd[0] < 0)
		return;
	close(gp.report_fd[1]);
	for (;;) {
		ssize_t r = read(gp.report_fd[0], buf, sizeof(buf));
		char *m;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		m = realloc(msg, len + (size_t)r + 1);
		if (!m)
			break;
		msg = m;
		memcpy(msg + len, buf, (size_t)r);
		len += (size_t)r;
		msg[len] = '\0';
	}
	if (msg && strncmp(msg, "ok\n", 3) == 0) {
		free(msg);
		return;
	}
	/* The server logged to syslog; its reasons are told here too, where it was started. */
	if (gp_sink_of(true) == GP_SINK_STDERR && msg && strncmp(msg, "failed\n", 7) == 0)
		for (char *line = msg + 7, *nl; *line; line = nl + 1) {
			nl = strchr(line, '\n');
			if (!nl)
				break;
			*nl = '\0';
			nbdkit_error("%s", line);
		}
	nbdkit_error("the server did not start: %s", msg ? "it could not open the array"
							: "it exited before it was ready");
	free(msg);
	fflush(NULL);
	_exit(EXIT_FAILURE);
}

/* pthread_atfork's parent handler: nbdkit forks the server off (into the background). */
static void gp_forked_off(void)
{
	if (getpid() == gp.ready_pid)
		gp.forked = true;
}

int gp_start_check(void)
{
	int relay[2], status = 0, rc;
	char *records = NULL;
	size_t len = 0;
	pid_t pid;

	if (gp_server_read(&gp.srv))
		return -1;
	gp.ready_pid = getpid();
	/* Read-only opens take no lock: any number of them may serve beside each other. */
	if (!gp.srv.readonly) {
		gp.lock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (gp.lock_fd < 0) {
			nbdkit_error("socket: %m");
			return -1;
		}
	}
	if (pipe2(relay, O_CLOEXEC)) {
		nbdkit_error("pipe2: %m");
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		nbdkit_error("fork: %m");
		close(relay[0]);
		close(relay[1]);
		return -1;
	}
	if (pid == 0) {
		close(relay[0]);
		gp_log_relay(relay[1]);
		_exit(gp_check(gp.lock_fd));
	}
	close(relay[1]);
	for (;;) {
		char buf[4096], *m;
		ssize_t r = read(relay[0], buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		m = realloc(records, len + (size_t)r + 1);
		if (!m)
			break;
		records = m;
		memcpy(records + len, buf, (size_t)r);
		len += (size_t)r;
	}
	close(relay[0]);
	while ((rc = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
		;
	if (records)
		gp_log_replay(records, len);
	free(records);
	if (rc != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		if (rc == pid && WIFSIGNALED(status))
			nbdkit_error("the check of the array died (signal %d)", WTERMSIG(status));
		return -1; /* the check said why */
	}
	/*
	 * --run waits for the server itself and exits with its client's status; otherwise the
	 * get_ready process is the one whose exit status the caller sees.
	 */
	if (!gp.srv.run) {
		if (pipe2(gp.report_fd, O_CLOEXEC)) {
			nbdkit_error("pipe2: %m");
			return -1;
		}
		if (pthread_atfork(NULL, gp_forked_off, NULL) || atexit(gp_ready_exit)) {
			nbdkit_error("pthread_atfork/atexit failed");
			return -1;
		}
	}
	return 0;
}

/* In the server, at the end of after_fork: tell the get_ready process how it went. */
static void gp_report(bool ok)
{
	char *errors = gp_log_started();

	if (gp.report_fd[1] >= 0 && getpid() != gp.ready_pid) {
		const char *head = ok ? "ok\n" : "failed\n";
		size_t n = strlen(head), e = ok ? 0 : strlen(errors);

		/* nbdkit ignores SIGPIPE: a parent gone is a failed write, nothing more. */
		if (write(gp.report_fd[1], head, n) == (ssize_t)n && e)
			(void)!write(gp.report_fd[1], errors, e);
	}
	free(errors);
	for (int i = 0; i < 2; i++)
		if (gp.report_fd[i] >= 0) {
			close(gp.report_fd[i]);
			gp.report_fd[i] = -1;
		}
}

static int gp_configure(void)
{
	unsigned out = gp.degraded_ok ? 0 : gp_roles_missing(gp.array, &gp.info, false);
	int rc;

	if (out) {
		/* The array changed since the check: a member went away meanwhile. */
		gp_error("%u role%s of the array lost %s member since the check; give %s, or "
			 "add degraded=1 to serve without %s", out, out > 1 ? "s" : "",
			 out > 1 ? "their" : "its", out > 1 ? "them" : "it",
			 out > 1 ? "them" : "it");
		return -1;
	}
	if (gp.rebuild_set) {
		/* For rebuilds started here: a hot spare taking over a member that fails. */
		gp.rebuild.struct_size = sizeof(gp.rebuild);
		rc = graid_array_set_rebuild_options(gp.array, &gp.rebuild);
		if (rc) {
			gp_error("rebuild rates: %s", graid_strerror(rc));
			return -1;
		}
		nbdkit_debug("rebuild at most %" PRIu64 " B/s per member, %" PRIu64
			     " B/s while serving requests (0: no limit)",
			     gp.rebuild.max_bytes_per_sec, gp.rebuild.busy_bytes_per_sec);
	}
	if (gp.io_timeout_ms) {
		rc = graid_array_set_io_timeout(gp.array, gp.io_timeout_ms);
		if (rc) {
			gp_error("io-timeout: %s", graid_strerror(rc));
			return -1;
		}
		nbdkit_debug("a member I/O older than %u ms is given up on where the others carry "
			     "the array", gp.io_timeout_ms);
	}
	if (gp.health_set && !gp.srv.readonly) {
		/* The interval asked for, the policy at graid.h's documented defaults. */
		struct graid_health_options ho = {
			.struct_size = sizeof(ho),
			.interval_ms = gp.health_interval_ms,
			.wear_percent = 90,
			.media_rising = 2,
			.media_burst = 25,
			.media_window_s = 600,
		};

		rc = graid_array_set_health_options(gp.array, &ho);
		if (rc) {
			gp_error("health-interval: %s", graid_strerror(rc));
			return -1;
		}
		nbdkit_debug("drive health sampled every %u ms (0: not watched)",
			     gp.health_interval_ms);
	} else if (gp.health_set) {
		nbdkit_debug("health-interval: a read-only array is not watched");
	}
	/* A rebuild left pending (a spare taken at open, a stopped one) goes on while serving. */
	if (!gp.srv.readonly) {
		rc = graid_array_rebuild_start(gp.array);
		if (rc) {
			gp_error("starting the pending rebuild: %s", graid_strerror(rc));
			return -1;
		}
	}
	nbdkit_debug("RAID-%d, %u members (%u failed), %" PRIu64 " bytes, block %u, engine %s, %s",
		     gp.info.level, gp.info.nmembers, gp.info.nfailed, gp.info.size,
		     gp.info.block_size, gp.info.engine,
		     gp.srv.readonly ? "read-only (nothing is written to any member)" : "writable");
	return 0;
}

/*
 * The control endpoint, in the process that serves (its thread would not survive nbdkit's
 * fork), once the array is open writable; graid_array_close() in cleanup stops it. A
 * failure is told and the server goes on: the endpoint manages the array, the clients
 * reach its data without it (README.md, "The control endpoint").
 */
static void gp_control_start(void)
{
	struct graid_control_options co = { .struct_size = sizeof(co), .run_dir = gp.run_dir };
	char path[128];
	int rc;

	if (gp.no_control || gp.srv.readonly)
		return;
	if (graid_array_control_path(gp.array, gp.run_dir, path, sizeof(path)))
		snprintf(path, sizeof(path), "(a path too long for a socket)");
	rc = graid_array_control_start(gp.array, &co);
	if (rc == 0)
		nbdkit_debug("control endpoint %s (graidctl manages the array through it)", path);
	else
		gp_warning("no control endpoint at %s: %s; serving without one (graidctl cannot "
			   "change the array while it is served)", path, graid_strerror(rc));
}

/*
 * The metrics endpoint, in the process that serves (as the control endpoint). Asked for by
 * address, so a failure to serve it fails the start: a scrape that finds nothing there
 * would otherwise be the only sign.
 */
static int gp_metrics_start(void)
{
	char why[256];
	int rc;

	if (!gp.metrics)
		return 0;
	rc = metrics_http_start(&gp.metrics_http, gp.metrics, gp.array, why, sizeof(why));
	if (rc) {
		gp_error("%s", why);
		return rc;
	}
	nbdkit_debug("metrics at http://%s/metrics", metrics_http_where(gp.metrics_http));
	return 0;
}

int gp_start_serve(void)
{
	int rc;

	/*
	 * What the check printed is not printed again where it goes to the same place; a
	 * server in the background logs elsewhere (syslog), and there everything is new.
	 */
	if (gp_sink_of(false) != gp_sink_of(true))
		free(gp_log_started());
	gp_log_start(gp.report_fd[1] >= 0 && getpid() != gp.ready_pid);
	rc = gp_open_array(gp.backend, gp.srv.readonly ? GRAID_OPEN_READ_ONLY : 0, true,
			   &gp.array);
	if (rc == 0) {
		gp.info.struct_size = sizeof(gp.info);
		rc = graid_array_info(gp.array, &gp.info);
		if (rc)
			gp_error("graid_array_info: %s", graid_strerror(rc));
	}
	if (rc == 0)
		rc = gp_configure();
	if (rc == 0)
		gp_control_start();
	if (rc == 0)
		rc = gp_metrics_start();
	if (rc && gp.array) {
		graid_array_close(gp.array);
		gp.array = NULL;
	}
	gp_report(rc == 0);
	return rc ? -1 : 0;
}
