/* SPDX-License-Identifier: MIT */
/*
 * The window between another host's takeover and the old owner stopping, and the false
 * alarms to avoid (found by review of the first takeover change; each failed before its mend):
 * a takeover that missed a member, a close inside the window, a long background resync, a
 * member coming back to a foreign handle, a renamed host, and the owner look's side effects.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <sched.h>
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

#define RV_BYTES (16u << 20)
#define RV_CHUNK (64u * 1024)
#define RV_LEN (1u << 20)

/* B took the array over but could not reach member 0: A reads only member 0. */
Test(takeover_window, a_takeover_that_missed_member_0_is_never_seen, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	ssize_t n = 0;
	int rc;

	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	memset(buf, 1, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 1; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	for (unsigned i = 0; i < 60; i++) {
		n = graid_array_write(a, buf, RV_LEN, 0);
		if (n == -ESTALE)
			break;
		usleep(50000);
	}
	cr_expect_eq(n, -ESTALE, "old owner still writing 3 s after a takeover of members 1..3");
	rc = graid_array_close(a);
	cr_expect_eq(rc, -ESTALE, "close returned %d", rc);
	for (unsigned i = 1; i < 4; i++)
		cr_expect_eq(tko_sb(s.paths[i]).owner.epoch, 2,
			     "member %u: the new owner's epoch-2 record was overwritten (now %llu, "
			     "host %s)", i, (unsigned long long)tko_sb(s.paths[i]).owner.epoch,
			     tko_sb(s.paths[i]).owner.host);
	free(buf);
	au_remove(&s);
}

static uint64_t rv_hash_range(const char *path, uint64_t off, uint64_t len)
{
	uint8_t *b = malloc(len);
	uint64_t h = 1469598103934665603ull;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, b, len, (off_t)off), (ssize_t)len);
	close(fd);
	for (uint64_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	free(b);
	return h;
}

static void rv_fill_range(const char *path, uint64_t off, uint64_t len, int c)
{
	uint8_t *b = malloc(len);
	int fd = open(path, O_RDWR);

	memset(b, c, len);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, b, len, (off_t)off), (ssize_t)len);
	fsync(fd);
	close(fd);
	free(b);
}

/*
 * Another host takes over (its record and its bitmap marks on every member); the old owner
 * closes before its worker looked. Close must write nothing of its own.
 */
Test(takeover_window, close_right_after_a_takeover_writes_nothing, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = RV_CHUNK, .backend = "isal",
					  .flags = GRAID_CREATE_JOURNAL };
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	uint64_t bm[4], lg[4];
	struct superblock sb;
	int rc;

	au_make(&s, 4, 128u << 20);
	cr_assert_eq(graid_array_create(s.paths, 4, &cfg, &a), 0);
	memset(buf, 1, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	cr_assert_eq(graid_array_flush(a), 0); /* HOT cleared: the next sweep clears DIRTY */
	sb = tko_sb(s.paths[0]);
	cr_assert(sb.bitmap_bytes && sb.log_bytes);
	for (unsigned i = 0; i < 4; i++) {
		tko_write_takeover(s.paths[i]);
		rv_fill_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes, 0xff); /* B's marks */
		bm[i] = rv_hash_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes);
		lg[i] = rv_hash_range(s.paths[i], sb.log_offset, sb.log_bytes);
	}
	rc = graid_array_close(a);
	cr_expect_eq(rc, -ESTALE, "close returned %d", rc);
	for (unsigned i = 0; i < 4; i++) {
		cr_expect_eq(rv_hash_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes), bm[i],
			     "member %u: the old owner's close rewrote the new owner's bitmap", i);
		cr_expect_eq(rv_hash_range(s.paths[i], sb.log_offset, sb.log_bytes), lg[i],
			     "member %u: the old owner's close rewrote the new owner's journal", i);
	}
	free(buf);
	au_remove(&s);
}

static char rv_empty[300];

/* Same machine (same boot), no machine id, another host name: 0 or an errno. */
static int rv_as(const char *name)
{
	if (unshare(CLONE_NEWUTS | CLONE_NEWNS))
		return errno;
	if (sethostname(name, strlen(name)))
		return errno;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return errno;
	/* No machine id anywhere it is kept. */
	if (!access("/etc/machine-id", F_OK) &&
	    mount(rv_empty, "/etc/machine-id", NULL, MS_BIND, NULL))
		return errno;
	if (!access("/var/lib/dbus/machine-id", F_OK) &&
	    mount(rv_empty, "/var/lib/dbus/machine-id", NULL, MS_BIND, NULL))
		return errno;
	return 0;
}

static int rv_child_create(struct au_set *s)
{
	struct graid_array *a;

	if (rv_as("box-old"))
		return 10;
	if (au_create(s, 4, 5, RV_CHUNK, &a))
		return 11;
	return graid_array_close(a) ? 12 : 0;
}

static int rv_child_open(struct au_set *s)
{
	struct graid_array *a;
	int rc;

	if (rv_as("box-new"))
		return 10;
	rc = graid_array_open(s->paths, 4, NULL, &a);
	if (rc)
		return rc == -EBUSY ? 20 : 21;
	return graid_array_close(a) ? 22 : 0;
}

static int rv_run(int (*fn)(struct au_set *), struct au_set *s)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(fn(s));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 100;
}

/* A host without /etc/machine-id renamed between two opens, same boot. */
Test(takeover_window, a_renamed_host_without_machine_id_reopens_its_array, .timeout = 60)
{
	struct au_set s;
	int fd, rc;

	au_make(&s, 4, RV_BYTES);
	snprintf(rv_empty, sizeof(rv_empty), "%s/empty-machine-id", s.dir);
	fd = open(rv_empty, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	rc = rv_run(rv_child_create, &s);
	if (rc == 10)
		cr_skip_test("no namespaces here");
	cr_assert_eq(rc, 0, "create step %d", rc);
	cr_assert_eq(tko_sb(s.paths[0]).owner.host_id, 0);
	rc = rv_run(rv_child_open, &s);
	cr_expect_eq(rc, 0, "same machine, same boot, renamed: open failed at step %d (20: "
			    "-EBUSY 'another host')", rc);
	au_remove(&s);
}

static int rv_child_rename_only(struct au_set *s)
{
	struct graid_array *a;
	int rc;

	if (unshare(CLONE_NEWUTS) || sethostname("renamed-box", 11))
		return 10;
	rc = graid_array_open(s->paths, 4, NULL, &a);
	if (rc)
		return rc == -EBUSY ? 20 : 21;
	return graid_array_close(a) ? 22 : 0;
}

/* Control: with a machine id, a renamed host is the same host. */
Test(takeover_window, a_renamed_host_with_machine_id_reopens_its_array, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;

	if (access("/etc/machine-id", F_OK))
		cr_skip_test("no machine id");
	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_expect_eq(rv_run(rv_child_rename_only, &s), 0);
	au_remove(&s);
}

#include <time.h>
static double rv_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}
static double rv_t0;
static void rv_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level <= GRAID_LOG_NOTICE)
		fprintf(stderr, "[%7.3f] %s\n", rv_now() - rv_t0, msg);
}

/* A background resync runs in the worker: no owner look while it lasts. */
Test(takeover_window, the_worker_looks_during_a_background_resync, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	char fp[4][400];
	const char *paths[4];
	struct graid_open_options o = { .struct_size = sizeof(o),
					.flags = GRAID_OPEN_RESYNC_BACKGROUND };
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	ssize_t n = 0;
	pid_t pid;
	int st;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&s, 4, 64u << 20);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct graid_array *c;

		if (graid_array_open(s.paths, 4, NULL, &c))
			_exit(1);
		memset(buf, 3, RV_LEN);
		for (uint64_t off = 0; off + RV_LEN <= (180u << 20); off += RV_LEN)
			if (graid_array_write(c, buf, RV_LEN, off) != RV_LEN)
				_exit(2);
		_exit(0); /* unclean: every region written stays dirty */
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	au_wait_unlocked(s.paths, 4);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(fp[i], sizeof(fp[i]), "faulty:mbps=2:%s", s.paths[i]);
		paths[i] = fp[i];
	}
	rv_t0 = rv_now();
	graid_log_set(rv_log, NULL, GRAID_LOG_NOTICE);
	cr_assert_eq(graid_array_open(paths, 4, &o, &a), 0);
	usleep(200000);
	fprintf(stderr, "[%7.3f] takeover records written\n", rv_now() - rv_t0);
	for (unsigned i = 0; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	for (unsigned i = 0; i < 100; i++) {
		n = graid_array_read(a, buf, 4096, 0);
		if (n == -ESTALE) {
			fprintf(stderr, "[%7.3f] REVIEW: detected after %u polls\n", rv_now() - rv_t0, i);
			break;
		}
		usleep(50000);
	}
	cr_expect_eq(n, -ESTALE, "still serving 5 s after a takeover (background resync running)");
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/* The worker's once-a-second look counts nowhere in graid_member_info. */
Test(takeover_window, the_owner_look_is_not_counted_in_member_stats, .timeout = 30)
{
	struct graid_array *a;
	struct au_set s;
	struct graid_member_info m0 = { .struct_size = sizeof(m0) }, m1 = { .struct_size = sizeof(m1) };

	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_member_info(a, 0, &m0), 0);
	usleep(3500000);
	cr_assert_eq(graid_array_member_info(a, 0, &m1), 0);
	cr_expect_eq(m1.reads, m0.reads, "reads %llu -> %llu", (unsigned long long)m0.reads,
		     (unsigned long long)m1.reads);
	cr_expect_eq(m1.read_bytes, m0.read_bytes);
	cr_expect_eq(m1.errors, m0.errors);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/* The look does not consume a faulty: member's schedule. */
Test(takeover_window, the_owner_look_leaves_fault_schedules_alone, .timeout = 30)
{
	struct graid_array *a;
	struct au_set s;
	char f0[400];
	const char *paths[4];
	uint8_t *buf = aligned_alloc(4096, RV_CHUNK);
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(f0, sizeof(f0), "faulty:read-eio-after=1:%s", s.paths[0]);
	paths[0] = f0;
	for (unsigned i = 1; i < 4; i++)
		paths[i] = s.paths[i];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	usleep(3500000);
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_expect_eq(mi.state, GRAID_MEMBER_ACTIVE);
	cr_expect_eq(mi.reads, 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

static void rv_state(const char *file, const char *st)
{
	cr_assert_eq(au_ctrl_state(file, st), 0, "cannot write %s", file);
}

static int rv_returned;
static void rv_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_MEMBER_RETURNED)
		__atomic_add_fetch(&rv_returned, 1, __ATOMIC_SEQ_CST);
}

/* A foreign array writes nothing more, even when an unreachable member returns. */
Test(takeover_window, a_foreign_array_writes_nothing_when_a_member_returns, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	char state[400], spec[800];
	const char *paths[4];
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	struct superblock sb;
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint64_t h[4];
	ssize_t n = 0;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(state, sizeof(state), "%s/ctrl-state", s.dir);
	rv_state(state, "live");
	snprintf(spec, sizeof(spec), "faulty:fabric-state=%s:%s", state, s.paths[1]);
	for (unsigned i = 0; i < 4; i++)
		paths[i] = s.paths[i];
	paths[1] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	graid_array_set_event_callback(a, rv_on_event, NULL);
	rv_state(state, "connecting");
	memset(buf, 5, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_UNREACHABLE);
	for (unsigned i = 0; i < 4; i++)
		tko_write_takeover(s.paths[i]);
	for (unsigned i = 0; i < 100 && n != -ESTALE; i++) {
		n = graid_array_read(a, buf, 4096, 0);
		usleep(50000);
	}
	cr_assert_eq(n, -ESTALE, "not foreign yet");
	sb = tko_sb(s.paths[0]);
	for (unsigned i = 0; i < 4; i++) {
		rv_fill_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes, 0xff); /* B's marks */
		h[i] = rv_hash_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes);
	}
	rv_state(state, "live");
	usleep(1500000);
	for (unsigned i = 0; i < 4; i++)
		cr_expect_eq(rv_hash_range(s.paths[i], sb.bitmap_offset, sb.bitmap_bytes), h[i],
			     "member %u: the foreign handle rewrote the bitmap when role 1 returned",
			     i);
	cr_expect_eq(__atomic_load_n(&rv_returned, __ATOMIC_SEQ_CST), 0,
		     "RETURNED sent by a foreign handle");
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/* One member's superblock goes bad (a flipped bit): one member's fault, no takeover. */
Test(takeover_window, one_corrupt_superblock_does_not_stop_the_array, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	uint8_t sb[4096];
	ssize_t n = 0;
	int fd;

	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	memset(buf, 1, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	fd = open(s.paths[2], O_RDWR);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	sb[300] ^= 0x01; /* bit rot in member 2's superblock */
	cr_assert_eq(pwrite(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	fsync(fd);
	close(fd);
	for (unsigned i = 0; i < 50; i++) {
		n = graid_array_write(a, buf, RV_LEN, 0);
		if (n != RV_LEN)
			break;
		usleep(50000);
	}
	cr_expect_eq(n, RV_LEN, "array stopped (%zd) after one member's superblock went bad", n);
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

static atomic_bool tw_stop;
static const char *tw_path;
static uint8_t tw_va[4096], tw_vb[4096];

/*
 * This handle's own superblock being rewritten (events E, E+1; its record on both), as a
 * device without atomic 4 KiB writes lands it: a look may read it torn. No takeover.
 */
static void *tw_rewriter(void *arg)
{
	int fd = open(tw_path, O_RDWR);

	(void)arg;
	while (!atomic_load(&tw_stop)) {
		/* A 4 KiB write landing sector by sector (512-byte LBAs): emulated as 8 pieces. */
		for (unsigned k = 0; k < 8; k++)
			pwrite(fd, tw_va + k * 512, 512, k * 512);
		for (unsigned k = 0; k < 8; k++)
			pwrite(fd, tw_vb + k * 512, 512, k * 512);
	}
	close(fd);
	return NULL;
}

Test(takeover_window, a_torn_read_of_its_own_superblock_is_no_takeover, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	struct superblock sb;
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	pthread_t t;
	ssize_t n = RV_LEN;
	int fd;

	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	memset(buf, 1, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	fd = open(s.paths[1], O_RDONLY);
	cr_assert_eq(pread(fd, tw_va, 4096, 0), 4096);
	close(fd);
	cr_assert_eq(sb_decode(tw_va, &sb), 0);
	sb.events++;
	sb.rebuild_offset = 0;
	memset(sb.nvme.subnqn, 0x5a, sizeof(sb.nvme.subnqn) - 1); /* differ all over the block */
	sb_encode(&sb, tw_vb);
	cr_assert_eq(sb_decode(tw_vb, &sb), 0);
	tw_path = s.paths[1];
	cr_assert_eq(pthread_create(&t, NULL, tw_rewriter, NULL), 0);
	for (unsigned i = 0; i < 200 && n == RV_LEN; i++) {
		n = graid_array_write(a, buf, 4096 * 16, 0) == 4096 * 16 ? (ssize_t)RV_LEN : -ESTALE;
		usleep(50000);
	}
	atomic_store(&tw_stop, true);
	pthread_join(t, NULL);
	cr_expect_eq(n, RV_LEN, "foreign although every superblock written was this handle's");
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/* A spare promoted and rebuilt, then looked at as an active member: still ours. */
Test(takeover_window, a_promoted_spare_does_not_trip_the_look, .timeout = 60)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, RV_LEN);

	au_make(&s, 5, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, s.paths[4]), 0);
	memset(buf, 1, RV_LEN);
	cr_assert_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	usleep(2500000);
	cr_expect_eq(graid_array_write(a, buf, RV_LEN, 0), RV_LEN);
	cr_expect_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
}

/*
 * A second host's record at the same epoch on a member where this handle wrote its own
 * (two takeovers at once, that one landing last there): this handle stops.
 */
Test(takeover_window, another_owner_at_the_same_epoch_stops_this_one, .timeout = 30)
{
	struct graid_array *a;
	struct au_set s;
	uint8_t *buf = aligned_alloc(4096, RV_LEN);
	ssize_t n = 0;

	au_make(&s, 4, RV_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, RV_CHUNK, &a), 0);
	memset(buf, 2, RV_LEN);
	tko_write_owner(s.paths[2], false);
	for (unsigned i = 0; i < 60; i++) {
		n = graid_array_write(a, buf, RV_LEN, 0);
		if (n == -ESTALE)
			break;
		usleep(50000);
	}
	cr_assert_eq(n, -ESTALE, "another owner's record at the same epoch went unseen");
	cr_assert_eq(graid_array_close(a), -ESTALE);
	free(buf);
	au_remove(&s);
}
