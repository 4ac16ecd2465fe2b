/* SPDX-License-Identifier: MIT */
/*
 * The array's lease from sanlock (graid_open_options::lease, docs/REMOTE.md "The lease"):
 * a writable open takes it before it writes anything and holds it until close; while
 * another host holds it the open is refused, naming that host, with nothing written; a
 * handle that loses it (renewals failing, the daemon gone) stops writing at once.
 *
 * Each "host" is a sanlock daemon of its own (SANLOCK_RUN_DIR, unprivileged mode, no
 * watchdog: sanlock's own test set-up) started here; the other host's holder is a child
 * process calling sanlock directly. Needs the sanlock daemon (Debian's `sanlock`): without
 * it the tests skip saying so, and fail where GRAID_TEST_REQUIRE_SANLOCK=1 (CI installs it).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define LS_MEMBER_BYTES (8u << 20)
#define LS_CHUNK (64u * 1024)
#define LS_SANLOCK "/usr/sbin/sanlock"

struct ls_bed {
	struct au_set s;
	char run_a[300], run_b[300], graid_run[300], lease[300], spec_a[400], spec_b[400];
	pid_t daemon_a, daemon_b;
	uint8_t uuid[16];
};

/* sanlock usable here, or the test says why it cannot run (fails where it is required). */
static void ls_need_sanlock(void)
{
	const char *req = getenv("GRAID_TEST_REQUIRE_SANLOCK");

	if (access(LS_SANLOCK, X_OK) == 0)
		return;
	if (req && strcmp(req, "1") == 0)
		cr_assert_fail("sanlock is required here (GRAID_TEST_REQUIRE_SANLOCK=1) but %s "
			       "is missing: install Debian's sanlock", LS_SANLOCK);
	cr_skip_test("no sanlock daemon program (%s): install Debian's sanlock", LS_SANLOCK);
}

/* A sanlock daemon as host @p name, its socket in @p run; its pid once it answers. */
static pid_t ls_daemon(const char *run, const char *name)
{
	char sock[400], log[400];
	pid_t pid;

	mkdir(run, 0755);
	snprintf(log, sizeof(log), "%s/daemon.log", run);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		/* Its own group (the daemon forks a helper: both are stopped), nothing of ours. */
		setpgid(0, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		for (int i = 3; i < 1024; i++)
			close(i);
		setenv("SANLOCK_RUN_DIR", run, 1);
		setenv("SANLOCK_PRIVILEGED", "0", 1);
		execl(LS_SANLOCK, "sanlock", "daemon", "-D", "-w", "0", "-l", "0", "-h", "0", "-e",
		      name, (char *)NULL);
		_exit(127);
	}
	snprintf(sock, sizeof(sock), "%s/sanlock.sock", run);
	for (int i = 0; i < 100 && access(sock, F_OK); i++)
		usleep(50 * 1000);
	cr_assert_eq(access(sock, F_OK), 0, "the sanlock daemon for %s did not start", name);
	return pid;
}

static void ls_daemon_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(-*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

/* The running test's daemons: stopped even when an assertion ends the test early. */
static pid_t ls_daemons[2];

static void ls_fini(void)
{
	ls_daemon_kill(&ls_daemons[0]);
	ls_daemon_kill(&ls_daemons[1]);
}

/* Host A (this process: SANLOCK_RUN_DIR) and host B, an array, its lease area written. */
static void ls_setup(struct ls_bed *b)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	int fd;

	ls_need_sanlock();
	memset(b, 0, sizeof(*b));
	au_make(&b->s, 3, LS_MEMBER_BYTES);
	snprintf(b->run_a, sizeof(b->run_a), "%s/run-a", b->s.dir);
	snprintf(b->run_b, sizeof(b->run_b), "%s/run-b", b->s.dir);
	snprintf(b->lease, sizeof(b->lease), "%s/lease.img", b->s.dir);
	fd = open(b->lease, O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 2u << 20), 0);
	close(fd);
	snprintf(b->spec_a, sizeof(b->spec_a), "sanlock:host-id=1,io-timeout=1:%s", b->lease);
	snprintf(b->spec_b, sizeof(b->spec_b), "sanlock:host-id=2,io-timeout=1:%s", b->lease);
	b->daemon_a = ls_daemons[0] = ls_daemon(b->run_a, "graid-test-host-a");
	b->daemon_b = ls_daemons[1] = ls_daemon(b->run_b, "graid-test-host-b");
	setenv("SANLOCK_RUN_DIR", b->run_a, 1);
	/* Where the kill path's flag files go (made by the library: the daemon's is group-writable). */
	snprintf(b->graid_run, sizeof(b->graid_run), "%s/graid-run", b->s.dir);
	setenv("GRAID_RUN_DIR", b->graid_run, 1);
	cr_assert_eq(au_create(&b->s, 3, 5, LS_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	memcpy(b->uuid, info.uuid, 16);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_lease_init(b->spec_a, b->uuid), 0);
}

static void ls_teardown(struct ls_bed *b)
{
	ls_daemon_kill(&b->daemon_a);
	ls_daemon_kill(&b->daemon_b);
	ls_daemons[0] = ls_daemons[1] = 0;
	au_remove(&b->s);
}

static int ls_open(struct ls_bed *b, const char *spec, struct graid_array **a)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .lease = spec };

	return graid_array_open(b->s.paths, 3, &o, a);
}

/*
 * Host B's holder: tests/lease_holder (a program of its own: libsanlock_client reads
 * SANLOCK_RUN_DIR once per process) takes the array's lease through host B's daemon. Once
 * *@p ready_fd reads "held" it holds it; closing *@p go_fd makes it give it back and exit.
 */
static pid_t ls_host_b_holds(struct ls_bed *b, int *go_fd, int *ready_fd)
{
	char name[64], holder[400];
	int go[2], ready[2];
	pid_t pid;

	/* The lockspace name as docs/REMOTE.md gives it: "graid_" and the dashed array UUID. */
	snprintf(name, sizeof(name), "graid_");
	for (unsigned i = 0, at = 6; i < 16; i++)
		at += (unsigned)snprintf(name + at, sizeof(name) - at, "%s%02x",
					 i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b->uuid[i]);
	snprintf(holder, sizeof(holder), "%s/lease_holder", GRAID_TEST_BUILD_DIR);
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(go[0], 0);
		dup2(ready[1], 1);
		for (int i = 3; i < 1024; i++)
			close(i);
		setenv("SANLOCK_RUN_DIR", b->run_b, 1);
		execl(holder, "lease_holder", name, "2", b->lease, (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	close(ready[1]);
	*go_fd = go[1];
	*ready_fd = ready[0];
	return pid;
}

/* Wait until the holder says it holds the lease. */
static void ls_held(int ready_fd)
{
	char buf[8] = "";

	cr_assert_eq(read(ready_fd, buf, 5), 5, "host B could not take the lease (its status "
		     "names the step, tests/lease_holder.c)");
	cr_assert_eq(strncmp(buf, "held", 4), 0);
}

static void ls_wait_child(pid_t pid, const char *what)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", what, st);
}

/* Captures the library's log, to see what a refusal names. */
static char ls_log[8192];
static void ls_log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= GRAID_LOG_ERR && strlen(ls_log) + strlen(msg) + 2 < sizeof(ls_log)) {
		strcat(ls_log, msg);
		strcat(ls_log, "\n");
	}
}

Test(lease, another_host_holding_it_refuses_the_open_and_its_release_lets_it, .timeout = 120, .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;
	uint64_t hash[3];
	int go, ready, rc;
	pid_t holder;

	ls_setup(&b);
	holder = ls_host_b_holds(&b, &go, &ready);
	ls_held(ready);
	for (unsigned i = 0; i < 3; i++)
		hash[i] = au_file_hash(b.s.paths[i]);
	ls_log[0] = '\0';
	graid_log_set(ls_log_sink, NULL, GRAID_LOG_ERR);
	rc = ls_open(&b, b.spec_a, &a);
	graid_log_set(NULL, NULL, GRAID_LOG_WARNING);
	cr_assert_eq(rc, -EBUSY, "opened while another host holds the lease: %d (%s)", rc, ls_log);
	cr_assert(strstr(ls_log, "sanlock host id 2"), "the refusal does not name host B: %s",
		  ls_log);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(b.s.paths[i]), hash[i], "the refused open wrote member %u",
			     i);
	/* A look needs no lease. */
	{
		struct graid_open_options ro = { .struct_size = sizeof(ro), .lease = b.spec_a,
						 .flags = GRAID_OPEN_READ_ONLY };

		cr_assert_eq(graid_array_open(b.s.paths, 3, &ro, &a), 0);
		cr_assert_eq(graid_array_close(a), 0);
	}
	/* Host B lets go: now this host's open takes it. */
	close(go);
	close(ready);
	ls_wait_child(holder, "host B's holder");
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* And gave it back at close: host B takes it again at once. */
	holder = ls_host_b_holds(&b, &go, &ready);
	ls_held(ready);
	close(go);
	close(ready);
	ls_wait_child(holder, "host B's second holder");
	ls_teardown(&b);
}

static atomic_int ls_lost_events, ls_lost_err;
static void ls_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_ARRAY_FOREIGN) {
		atomic_store(&ls_lost_err, ev->error);
		atomic_fetch_add(&ls_lost_events, 1);
	}
}

/* After the handle lost its lease: it writes nothing more, its calls fail with ESTALE. */
static void ls_expect_stopped(struct ls_bed *b, struct graid_array *a, int seconds)
{
	uint8_t *buf = calloc(1, 65536);
	uint64_t hash[3];

	for (int i = 0; i < seconds * 10 && !atomic_load(&ls_lost_events); i++)
		usleep(100 * 1000);
	cr_assert_eq(atomic_load(&ls_lost_events), 1, "no ARRAY_FOREIGN event within %d s",
		     seconds);
	cr_assert_eq(atomic_load(&ls_lost_err), -ENOLCK);
	for (unsigned i = 0; i < 3; i++)
		hash[i] = au_file_hash(b->s.paths[i]);
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), -ESTALE);
	cr_assert_eq(graid_array_close(a), -ESTALE);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(au_file_hash(b->s.paths[i]), hash[i],
			     "member %u written after the lease was lost", i);
	free(buf);
}

Test(lease, a_handle_whose_lease_cannot_be_renewed_stops_writing, .timeout = 120, .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;
	uint8_t *buf = calloc(1, 65536);

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	atomic_store(&ls_lost_events, 0);
	graid_array_set_event_callback(a, ls_on_event, NULL);
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536);
	/* The lease area stops answering: renewals fail; after 8 x io-timeout sanlock gives up. */
	cr_assert_eq(truncate(b.lease, 0), 0);
	ls_expect_stopped(&b, a, 30);
	free(buf);
	ls_teardown(&b);
}

Test(lease, a_handle_whose_sanlock_daemon_dies_stops_writing, .timeout = 60, .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	atomic_store(&ls_lost_events, 0);
	graid_array_set_event_callback(a, ls_on_event, NULL);
	ls_daemon_kill(&b.daemon_a);
	ls_daemons[0] = 0;
	ls_expect_stopped(&b, a, 10);
	ls_teardown(&b);
}

Test(lease, bad_specs_and_no_daemon_are_refused_saying_why, .timeout = 60, .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;
	char spec[400];

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, "sanlock", &a), -EINVAL);
	cr_assert_eq(ls_open(&b, "flock:x:/tmp/x", &a), -EINVAL);
	snprintf(spec, sizeof(spec), "sanlock:io-timeout=1:%s", b.lease);
	cr_assert_eq(ls_open(&b, spec, &a), -EINVAL, "no host-id");
	snprintf(spec, sizeof(spec), "sanlock:host-id=2001:%s", b.lease);
	cr_assert_eq(ls_open(&b, spec, &a), -EINVAL, "host-id out of range");
	snprintf(spec, sizeof(spec), "sanlock:host-id=1,offset=4096:%s", b.lease);
	cr_assert_eq(ls_open(&b, spec, &a), -EINVAL, "offset not a lease size");
	cr_assert_eq(graid_lease_init("sanlock:host-id=1", b.uuid), -EINVAL);
	ls_daemon_kill(&b.daemon_a);
	ls_daemons[0] = 0;
	cr_assert_eq(ls_open(&b, b.spec_a, &a), -ENOLCK, "no daemon answers");
	ls_teardown(&b);
}

/*
 * Open, close, open again at once, as graidctl commands and a server started one after
 * another do. The host stays in the lockspace after a close: an open while sanlock was
 * still leaving it joined a lockspace being removed, and the removal then killed the
 * process (found by review: exit 137 within a second).
 */
Test(lease, a_quick_reopen_after_close_keeps_its_lease_and_its_process, .timeout = 60,
     .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;
	uint8_t *buf = calloc(1, 65536);

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0, "a reopen right after the close");
	atomic_store(&ls_lost_events, 0);
	graid_array_set_event_callback(a, ls_on_event, NULL);
	sleep(4); /* past any removal the close could have started */
	cr_assert_eq(graid_array_write(a, buf, 65536, 0), 65536);
	cr_assert_eq(atomic_load(&ls_lost_events), 0, "the lease was lost after the reopen");
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	ls_teardown(&b);
}

/* The sockets this process has: inode numbers of /proc/self/fd entries "socket:[N]". */
static unsigned ls_sockets(int *fds, unsigned max)
{
	unsigned n = 0;

	for (int fd = 0; fd < 1024 && n < max; fd++) {
		char link[64], target[64];
		ssize_t len;

		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		len = readlink(link, target, sizeof(target) - 1);
		if (len > 0 && !strncmp(target, "socket:", 7))
			fds[n++] = fd;
	}
	return n;
}

/*
 * The daemon frees the lease when the holder's connection closes: a child the
 * application forks and execs must not inherit it, or a killed holder keeps the lease
 * until the child exits (found by review: host B refused for 16 s).
 */
Test(lease, the_lease_connection_is_not_inherited_by_programs_the_application_runs,
     .timeout = 60, .fini = ls_fini)
{
	int before[256], after[256];
	unsigned nb, na, fresh = 0;
	struct graid_array *a;
	struct ls_bed b;

	ls_setup(&b);
	nb = ls_sockets(before, 256);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	na = ls_sockets(after, 256);
	for (unsigned i = 0; i < na; i++) {
		bool old = false;

		for (unsigned k = 0; k < nb; k++)
			old = old || before[k] == after[i];
		if (old)
			continue;
		fresh++;
		cr_assert(fcntl(after[i], F_GETFD) & FD_CLOEXEC,
			  "socket fd %d of the open is inherited across exec", after[i]);
	}
	cr_assert_geq(fresh, 1, "no sanlock connection found");
	cr_assert_eq(graid_array_close(a), 0);
	ls_teardown(&b);
}

/*
 * The daemon dies and the application's own thread is the first to notice (its close):
 * giving the lease back must not send on the dead connection with SIGPIPE's default
 * action (found by review: the process was killed by SIGPIPE).
 */
Test(lease, a_close_right_after_the_daemon_died_does_not_kill_the_application,
     .timeout = 60, .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	ls_daemon_kill(&b.daemon_a);
	ls_daemons[0] = 0;
	usleep(20 * 1000);
	cr_assert_eq(graid_array_close(a), -ESTALE, "a close without its lease wrote");
	ls_teardown(&b);
}

/* Hosts stay in the lockspace after a close: rewriting the area then would end the next lease. */
Test(lease, the_area_is_not_rewritten_while_this_host_is_in_its_lockspace, .timeout = 60,
     .fini = ls_fini)
{
	struct graid_array *a;
	struct ls_bed b;

	ls_setup(&b);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_lease_init(b.spec_a, b.uuid), -EBUSY);
	cr_assert_eq(ls_open(&b, b.spec_a, &a), 0, "the lease after the refused rewrite");
	cr_assert_eq(graid_array_close(a), 0);
	ls_teardown(&b);
}
