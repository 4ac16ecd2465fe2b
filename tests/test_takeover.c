/* SPDX-License-Identifier: MIT */
/*
 * A second host (issue 19, docs/REMOTE.md "A second host"): an array whose superblocks name
 * another host as its owner is never opened writable without GRAID_OPEN_TAKEOVER; a
 * takeover raises the owner epoch; the old owner, seeing the higher epoch, stops writing.
 *
 * "Another host" is a child process in its own UTS and mount namespaces, with another host
 * name and (where /etc/machine-id exists) another machine id bound over it. That needs
 * CAP_SYS_ADMIN: without it (not root) the tests say so and skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "takeover_util.h"
#include "testutil.h"

#define TK_MEMBER_BYTES (16u << 20)
#define TK_CHUNK (64u * 1024)
#define TK_LEN (1u << 20)

static char tk_machine_id[300], tk_boot_id[300];

/* Write @p text to @p file and bind it over @p target; 0 or an errno. */
static int tk_bind_text(const char *file, const char *text, const char *target)
{
	size_t len = strlen(text);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		return EIO;
	close(fd);
	return mount(file, target, NULL, MS_BIND, NULL) ? errno : 0;
}

/* Become host "graid-test-host-b" in this process; 0, or why not as an errno. */
static int tk_become_other_host(void)
{
	int rc;

	if (unshare(CLONE_NEWUTS | CLONE_NEWNS))
		return errno;
	if (sethostname("graid-test-host-b", strlen("graid-test-host-b")))
		return errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return errno;
	/* Another kernel boot: one boot id is one host, whatever its name. */
	rc = tk_bind_text(tk_boot_id, "6c696267-7261-6964-2d68-6f73742d6221\n",
			  "/proc/sys/kernel/random/boot_id");
	/* Another machine id wherever one is kept (none: the boot id tells hosts apart). */
	if (rc == 0 && access("/etc/machine-id", F_OK) == 0)
		rc = tk_bind_text(tk_machine_id, "0123456789abcdef0123456789abcdef\n",
				  "/etc/machine-id");
	if (rc == 0 && access("/var/lib/dbus/machine-id", F_OK) == 0)
		rc = tk_bind_text(tk_machine_id, "0123456789abcdef0123456789abcdef\n",
				  "/var/lib/dbus/machine-id");
	return rc;
}

/* Whether this process may make another host; the reason when not. */
static void tk_need_namespaces(void)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(tk_become_other_host());
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		cr_skip_test("another host cannot be made here: unshare/sethostname/mount need "
			     "CAP_SYS_ADMIN (%s)", strerror(WEXITSTATUS(st)));
}

static void tk_fill(uint8_t *buf, unsigned seed)
{
	for (size_t i = 0; i < TK_LEN; i++)
		buf[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 12));
}

static int tk_open(struct au_set *s, unsigned flags, struct graid_array **a)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = flags };

	return graid_array_open(s->paths, 4, &o, a);
}

/* In the other host: open (refused, then read-only, then taken over), verify; the step
 * that failed as the exit status. */
static int tk_host_b(struct au_set *s, unsigned seed, bool scrub)
{
	struct graid_array *a = NULL;
	uint8_t *want = malloc(TK_LEN), *got = malloc(TK_LEN);
	uint64_t hash[4];
	int rc;

	if (!want || !got || tk_become_other_host())
		return 10;
	for (unsigned i = 0; i < 4; i++)
		hash[i] = au_file_hash(s->paths[i]);
	if (tk_open(s, 0, &a) != -EBUSY)
		return 11; /* another host's array opened writable without a takeover */
	for (unsigned i = 0; i < 4; i++)
		if (au_file_hash(s->paths[i]) != hash[i])
			return 12; /* the refused open wrote something */
	if (tk_open(s, GRAID_OPEN_READ_ONLY, &a) || graid_array_close(a))
		return 13; /* a look needs no takeover */
	if (tk_open(s, GRAID_OPEN_READ_ONLY | GRAID_OPEN_TAKEOVER, &a) != -EINVAL)
		return 14;
	rc = tk_open(s, GRAID_OPEN_TAKEOVER, &a);
	if (rc)
		return 15;
	tk_fill(want, seed);
	if (graid_array_read(a, got, TK_LEN, 0) != TK_LEN || memcmp(want, got, TK_LEN))
		return 16; /* what the first host wrote and flushed is there */
	if (scrub) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		if (graid_array_scrub(a, 0, &rep) || rep.mismatches)
			return 17;
	}
	if (graid_array_close(a))
		return 18;
	free(want);
	free(got);
	return 0;
}

static void tk_run_host_b(struct au_set *s, unsigned seed, bool scrub)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(tk_host_b(s, seed, scrub));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "host B's process died (signal %d)", WTERMSIG(st));
	cr_assert_eq(WEXITSTATUS(st), 0, "host B failed at step %d (tests/test_takeover.c)",
		     WEXITSTATUS(st));
}

static void tk_setup(struct au_set *s)
{
	au_make(s, 4, TK_MEMBER_BYTES);
	snprintf(tk_machine_id, sizeof(tk_machine_id), "%s/machine-id", s->dir);
	snprintf(tk_boot_id, sizeof(tk_boot_id), "%s/boot_id", s->dir);
}

Test(takeover, another_hosts_clean_array_needs_a_takeover_which_raises_the_epoch)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = malloc(TK_LEN);
	struct sb_owner before, after;

	tk_setup(&s);
	tk_need_namespaces();
	cr_assert_eq(au_create(&s, 4, 5, TK_CHUNK, &a), 0);
	tk_fill(buf, 1);
	cr_assert_eq(graid_array_write(a, buf, TK_LEN, 0), TK_LEN);
	cr_assert_eq(graid_array_close(a), 0);
	before = tko_sb(s.paths[0]).owner;
	cr_assert_eq(before.epoch, 1, "a new array's first owner has epoch 1");
	tk_run_host_b(&s, 1, false);
	after = tko_sb(s.paths[0]).owner;
	cr_assert_eq(after.epoch, 2, "the takeover raised the owner epoch");
	cr_assert_str_eq(after.host, "graid-test-host-b");
	/* A look from here says whose it is now. */
	{
		struct graid_array_info info = { .struct_size = sizeof(info) };

		cr_assert_eq(tk_open(&s, GRAID_OPEN_READ_ONLY, &a), 0);
		cr_assert_eq(graid_array_info(a, &info), 0);
		cr_assert_eq(info.owner_epoch, 2);
		cr_assert_str_eq(info.owner_host, "graid-test-host-b");
		cr_assert_eq(graid_array_close(a), 0);
	}
	/* Now this host is the other one: the same rule, the other way. */
	cr_assert_eq(tk_open(&s, 0, &a), -EBUSY);
	cr_assert_eq(tk_open(&s, GRAID_OPEN_TAKEOVER, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(tko_sb(s.paths[3]).owner.epoch, 3);
	free(buf);
	au_remove(&s);
}

/* The first host dies holding the array: the second refuses it, then takes it over. */
Test(takeover, an_array_left_open_by_a_dead_host_is_taken_over_with_its_data, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	pid_t pid;
	int st;

	tk_setup(&s);
	tk_need_namespaces();
	cr_assert_eq(au_create(&s, 4, 6, TK_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		uint8_t *buf = malloc(TK_LEN);

		if (!buf || tk_open(&s, 0, &a))
			_exit(1);
		tk_fill(buf, 2);
		if (graid_array_write(a, buf, TK_LEN, 0) != TK_LEN || graid_array_flush(a))
			_exit(2);
		_exit(0); /* no close: the array stays recorded open on this host */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	au_wait_unlocked(s.paths, 4);
	tk_run_host_b(&s, 2, true);
	au_remove(&s);
}

static int tk_events_foreign;

static void tk_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_ARRAY_FOREIGN)
		__atomic_add_fetch(&tk_events_foreign, 1, __ATOMIC_SEQ_CST);
}

/*
 * The old owner, still open, finds a higher epoch on its members: within a few seconds
 * every call returns -ESTALE, the event says why, and nothing it does afterwards (close
 * included) overwrites the new owner's records.
 */
Test(takeover, the_old_owner_stops_when_it_sees_a_higher_epoch, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = malloc(TK_LEN);
	ssize_t n = 0;

	tk_setup(&s);
	cr_assert_eq(au_create(&s, 4, 5, TK_CHUNK, &a), 0);
	cr_assert_eq(graid_array_set_event_callback(a, tk_on_event, NULL), 0);
	tk_fill(buf, 3);
	cr_assert_eq(graid_array_write(a, buf, TK_LEN, 0), TK_LEN);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	for (unsigned i = 0; i < 100; i++) {
		n = graid_array_write(a, buf, TK_LEN, 0);
		if (n == -ESTALE)
			break;
		usleep(50000);
	}
	cr_assert_eq(n, -ESTALE, "writes still accepted 5 s after another host's takeover");
	/* The worker marks the array before it sends the event: wait for the event too. */
	for (unsigned i = 0; i < 100 && !__atomic_load_n(&tk_events_foreign, __ATOMIC_SEQ_CST); i++)
		usleep(10000);
	cr_assert_eq(__atomic_load_n(&tk_events_foreign, __ATOMIC_SEQ_CST), 1);
	cr_assert_eq(graid_array_read(a, buf, TK_LEN, 0), -ESTALE);
	cr_assert_eq(graid_array_flush(a), -ESTALE);
	cr_assert_eq(graid_array_fail_member(a, 1), -ESTALE);
	cr_assert_eq(graid_array_close(a), -ESTALE);
	for (unsigned i = 0; i < 4; i++) {
		struct sb_owner o = tko_sb(s.paths[i]).owner;

		cr_assert_eq(o.epoch, 2, "member %u: the new owner's epoch was overwritten", i);
		cr_assert_str_eq(o.host, "graid-test-host-b");
	}
	free(buf);
	au_remove(&s);
}

/* A state change before the worker looks: the superblock write itself refuses. */
Test(takeover, a_superblock_write_never_goes_over_a_higher_epoch)
{
	struct graid_array *a;
	struct au_set s;

	tk_setup(&s);
	cr_assert_eq(au_create(&s, 4, 5, TK_CHUNK, &a), 0);
	for (unsigned i = 0; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	/* Failing a member writes the superblocks at once: refused, and the array is foreign. */
	cr_assert_eq(graid_array_fail_member(a, 2), -ESTALE);
	cr_assert_eq(graid_array_write(a, "x", 0, 0), -ESTALE);
	graid_array_close(a);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(tko_sb(s.paths[i]).owner.epoch, 2, "member %u overwritten", i);
	au_remove(&s);
}

/*
 * Another host took the array over (its records on every member and the spare) before
 * this handle noticed: removing the spare is refused with -ESTALE and writes nothing, not
 * even the wipe of the spare, which may be the new owner's now.
 */
Test(takeover, remove_spare_after_a_takeover_writes_nothing, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	const char *spare;

	au_make(&s, 5, 8u << 20);
	cr_assert_eq(au_create(&s, 4, 5, 8192, &a), 0);
	spare = s.path[4];
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	for (unsigned i = 0; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	tko_write_takeover(spare);
	cr_assert_eq(graid_array_remove_spare(a, spare), -ESTALE);
	cr_assert(!au_sb_cleared(spare), "a foreign handle wiped the new owner's spare");
	graid_array_close(a);
	au_remove(&s);
}
