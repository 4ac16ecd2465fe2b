/* SPDX-License-Identifier: MIT */
/*
 * Persistent reservations (GRAID_OPEN_RESERVE, docs/REMOTE.md "Reservations") against
 * modelled drives: `faulty:pr=FILE:PATH` members whose reservation holder is the key in
 * FILE, shared by every handle that names it (lib/core/member/fault.c). A test that writes
 * FILE itself is another host taking the drive. The real thing, through the kernel's PR
 * ioctls on SCSI disks of two initiators, is the VM bed's `reserve` suite.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "takeover_util.h"
#include "testutil.h"

#define RS_BYTES (16u << 20)
#define RS_CHUNK (64u * 1024)
#define RS_LEN (3u * RS_CHUNK) /* one full RAID-5 stripe of four members: every member */
#define RS_N 4

/* The recorded other host of takeover_util.h (tko_write_owner). */
#define RS_OTHER_KEY 0x0123456789abcdefull

struct rs_set {
	struct au_set s;
	char pr[RS_N + 1][320];     /* each member's modelled reservation file */
	char spec[RS_N + 1][800];   /* faulty:pr=FILE:PATH */
	const char *paths[RS_N + 1];
};

static atomic_int rs_foreign_err, rs_foreign_member;

static void rs_on_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type == GRAID_EVENT_ARRAY_FOREIGN) {
		atomic_store(&rs_foreign_member, ev->member);
		atomic_store(&rs_foreign_err, ev->error);
	}
}

/* This host's reservation key: the first 16 hex digits of its machine id. */
static uint64_t rs_own_key(void)
{
	char buf[64] = "";
	FILE *f = fopen("/etc/machine-id", "r");
	uint64_t key = 0;

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = '\0';
		fclose(f);
	}
	if (strlen(buf) < 16 || sscanf(buf, "%16" SCNx64, &key) != 1 || !key)
		cr_skip_test("no /etc/machine-id here: reservations need this host's key");
	return key;
}

static uint64_t rs_holder(const struct rs_set *r, unsigned i)
{
	unsigned long long key = 0;
	FILE *f = fopen(r->pr[i], "r");

	if (f) {
		if (fscanf(f, "%llx", &key) != 1)
			key = 0;
		fclose(f);
	}
	return key;
}

/* Another host takes member @p i's drive (0: nobody holds it). */
static void rs_set_holder(const struct rs_set *r, unsigned i, uint64_t key)
{
	FILE *f = fopen(r->pr[i], "w");

	cr_assert_not_null(f);
	if (key)
		fprintf(f, "%016llx\n", (unsigned long long)key);
	cr_assert_eq(fclose(f), 0);
}

/* A RAID-5 of four members created and closed; the paths name modelled drives. */
static void rs_make(struct rs_set *r)
{
	struct graid_array *a;

	tu_need_fault_injection(); /* faulty: members (a release build has none) */
	au_make(&r->s, RS_N + 1, RS_BYTES);
	cr_assert_eq(au_create(&r->s, RS_N, 5, RS_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i <= RS_N; i++) {
		snprintf(r->pr[i], sizeof(r->pr[i]), "%s/pr%u", r->s.dir, i);
		snprintf(r->spec[i], sizeof(r->spec[i]), "faulty:pr=%s:%s", r->pr[i],
			 r->s.paths[i]);
		r->paths[i] = r->spec[i];
	}
}

/* Another host took the array over and holds every drive: its owner epoch, now recorded. */
static uint64_t rs_other_host_owns(struct rs_set *r)
{
	for (unsigned i = 0; i < RS_N; i++) {
		tko_write_owner(r->s.paths[i], true);
		rs_set_holder(r, i, RS_OTHER_KEY);
	}
	return tko_sb(r->s.paths[0]).owner.epoch;
}

static int rs_open(struct rs_set *r, unsigned flags, struct graid_array **a)
{
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = flags };
	int rc = graid_array_open(r->paths, RS_N, &o, a);

	if (rc == 0)
		graid_array_set_event_callback(*a, rs_on_event, NULL);
	atomic_store(&rs_foreign_err, 0);
	atomic_store(&rs_foreign_member, -2);
	return rc;
}

Test(reserve, the_flag_holds_every_member_until_close)
{
	uint64_t key = rs_own_key();
	uint8_t *buf = aligned_alloc(4096, RS_LEN);
	struct graid_array *a;
	struct rs_set r;

	rs_make(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(rs_holder(&r, i), key, "member %u: held by %016llx, want this host's",
			     i, (unsigned long long)rs_holder(&r, i));
	memset(buf, 7, RS_LEN);
	cr_assert_eq(graid_array_write(a, buf, RS_LEN, 0), RS_LEN);
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(rs_holder(&r, i), 0, "member %u still reserved after close", i);
	/* A plain open takes no reservation. */
	cr_assert_eq(rs_open(&r, 0, &a), 0);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(rs_holder(&r, i), 0, "member %u reserved by a plain open", i);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&r.s);
	free(buf);
}

/* Every drive taken by another host: the next write lands nowhere and the handle stops. */
Test(reserve, drives_taken_by_another_host_refuse_everything_and_the_handle_stops)
{
	uint8_t *buf = aligned_alloc(4096, RS_LEN);
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct rs_set r;
	uint64_t h[RS_N];

	rs_own_key();
	rs_make(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	memset(buf, 1, RS_LEN);
	cr_assert_eq(graid_array_write(a, buf, RS_LEN, 0), RS_LEN);
	cr_assert_eq(graid_array_flush(a), 0);
	for (unsigned i = 0; i < RS_N; i++) {
		rs_set_holder(&r, i, 0x1111);
		h[i] = au_file_hash(r.s.paths[i]);
	}
	memset(buf, 2, RS_LEN);
	cr_expect_eq(graid_array_write(a, buf, RS_LEN, RS_LEN), -ESTALE);
	cr_expect_eq(atomic_load(&rs_foreign_err), -EBADE, "foreign event error %d",
		     atomic_load(&rs_foreign_err));
	for (unsigned m = 0; m < RS_N; m++) {
		cr_assert_eq(graid_array_member_info(a, m, &mi), 0);
		cr_expect_eq(mi.state, GRAID_MEMBER_ACTIVE, "member %u failed for a conflict", m);
	}
	cr_expect_eq(graid_array_write(a, buf, RS_LEN, 0), -ESTALE);
	cr_expect_eq(graid_array_close(a), -ESTALE);
	for (unsigned i = 0; i < RS_N; i++) {
		cr_expect_eq(au_file_hash(r.s.paths[i]), h[i], "member %u written after the "
			     "other host took its drive", i);
		cr_expect_eq(rs_holder(&r, i), 0x1111, "member %u: the other host's reservation "
			     "was released by the fenced handle", i);
	}
	au_remove(&r.s);
	free(buf);
}

/* One drive taken: the write is not acknowledged, the drive is not failed, nothing follows. */
Test(reserve, one_drive_taken_stops_the_handle_without_failing_the_member)
{
	uint8_t *buf = aligned_alloc(4096, RS_LEN);
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct rs_set r;

	rs_own_key();
	rs_make(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	rs_set_holder(&r, 2, 0x2222);
	memset(buf, 3, RS_LEN);
	cr_expect_eq(graid_array_write(a, buf, RS_LEN, 0), -ESTALE);
	cr_expect_eq(atomic_load(&rs_foreign_err), -EBADE);
	cr_expect_eq(atomic_load(&rs_foreign_member), 2);
	cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
	cr_expect_eq(mi.state, GRAID_MEMBER_ACTIVE);
	cr_expect_eq(graid_array_close(a), -ESTALE);
	/* No member was recorded failed on the others. */
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(tko_sb(r.s.paths[i]).member_state[2], GRAID_MEMBER_ACTIVE,
			     "member %u's superblock records member 2 out", i);
	au_remove(&r.s);
	free(buf);
}

/* A takeover preempts the key of the owner the superblocks record. */
Test(reserve, a_takeover_preempts_the_recorded_owner)
{
	uint64_t key = rs_own_key();
	struct graid_array *a;
	struct rs_set r;
	uint64_t epoch;

	rs_make(&r);
	epoch = rs_other_host_owns(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_TAKEOVER, &a), 0);
	for (unsigned i = 0; i < RS_N; i++) {
		cr_expect_eq(rs_holder(&r, i), key, "member %u still the old owner's", i);
		cr_expect_eq(tko_sb(r.s.paths[i]).owner.epoch, epoch + 1);
	}
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(rs_holder(&r, i), 0, "member %u still reserved after close", i);
	au_remove(&r.s);
}

/* A holder no owner record names: refused before anything is written. */
Test(reserve, a_holder_nobody_recorded_refuses_the_takeover)
{
	struct graid_array *a;
	struct rs_set r;
	uint64_t h[RS_N];

	rs_own_key();
	rs_make(&r);
	for (unsigned i = 0; i < RS_N; i++) {
		tko_write_owner(r.s.paths[i], true);
		rs_set_holder(&r, i, i == 1 ? 0x5555 : RS_OTHER_KEY);
		h[i] = au_file_hash(r.s.paths[i]);
	}
	cr_assert_eq(rs_open(&r, GRAID_OPEN_TAKEOVER, &a), -EBUSY);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(au_file_hash(r.s.paths[i]), h[i], "member %u written", i);
	cr_expect_eq(rs_holder(&r, 1), 0x5555);
	au_remove(&r.s);
}

/* GRAID_OPEN_RESERVE on devices without reservations, and a spare added later. */
Test(reserve, the_flag_wants_reservations_on_every_device)
{
	uint64_t key = rs_own_key();
	struct graid_open_options o = { .struct_size = sizeof(o), .flags = GRAID_OPEN_RESERVE };
	struct graid_array *a;
	struct rs_set r;
	uint64_t h[RS_N];

	rs_make(&r);
	for (unsigned i = 0; i < RS_N; i++)
		h[i] = au_file_hash(r.s.paths[i]);
	/* Plain files have no reservations. */
	cr_assert_eq(graid_array_open(r.s.paths, RS_N, &o, &a), -EOPNOTSUPP);
	for (unsigned i = 0; i < RS_N; i++)
		cr_expect_eq(au_file_hash(r.s.paths[i]), h[i], "member %u written", i);
	o.flags |= GRAID_OPEN_READ_ONLY;
	cr_assert_eq(graid_array_open(r.paths, RS_N, &o, &a), -EINVAL);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	cr_expect_eq(graid_array_add_spare(a, r.s.paths[RS_N]), -EOPNOTSUPP);
	cr_assert_eq(graid_array_add_spare(a, r.paths[RS_N]), 0);
	cr_expect_eq(rs_holder(&r, RS_N), key, "the spare is not reserved");
	cr_assert_eq(graid_array_close(a), 0);
	cr_expect_eq(rs_holder(&r, RS_N), 0, "the spare still reserved after close");
	au_remove(&r.s);
}

/* Found by review: a discard on a fenced handle was acknowledged and went on to other members. */
Test(reserve, a_discard_a_drive_refuses_is_not_acknowledged)
{
	uint8_t *buf = aligned_alloc(4096, RS_LEN);
	struct graid_array *a;
	struct rs_set r;
	uint64_t h3;
	int rc;

	rs_own_key();
	rs_make(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	memset(buf, 9, RS_LEN);
	cr_assert_eq(graid_array_write(a, buf, RS_LEN, 0), RS_LEN);
	cr_assert_eq(graid_array_flush(a), 0);
	rs_set_holder(&r, 2, 0x2222);
	h3 = au_file_hash(r.s.paths[3]);
	rc = graid_array_discard(a, 0, RS_LEN);
	cr_expect_eq(rc, -ESTALE, "discard on a drive another host holds returned %d", rc);
	cr_expect_eq(atomic_load(&rs_foreign_err), -EBADE);
	cr_expect_eq(au_file_hash(r.s.paths[3]), h3,
		     "member 3 was discarded after member 2 refused (handle already foreign)");
	graid_array_close(a);
	au_remove(&r.s);
	free(buf);
}

/* Found by review: a member replaced by a spare kept this host's reservation on its old device. */
Test(reserve, a_replaced_device_is_released_at_close)
{
	uint64_t key = rs_own_key();
	struct graid_array *a;
	struct rs_set r;

	rs_make(&r);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_RESERVE, &a), 0);
	cr_assert_eq(graid_array_add_spare(a, r.paths[RS_N]), 0);
	cr_assert_eq(rs_holder(&r, 1), key);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	for (int i = 0; i < 200 && rs_holder(&r, RS_N) == key; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, 1, &mi), 0);
		if (mi.state == GRAID_MEMBER_ACTIVE)
			break;
		usleep(20000);
	}
	graid_array_close(a);
	for (unsigned i = 0; i <= RS_N; i++)
		cr_expect_eq(rs_holder(&r, i), 0, "device %u still reserved by this host after "
			     "close (held by %016llx)", i, (unsigned long long)rs_holder(&r, i));
	au_remove(&r.s);
}

/*
 * Found by review: an open without the flag (here a takeover) leaves a device whose reservation
 * commands fail to the lease and the owner epoch; a spare whose commands fail the same way
 * (EPERM: a partition) is refused instead. Modelled: a pr file that cannot be written.
 */
Test(reserve, without_the_flag_a_spare_without_working_reservations_is_taken)
{
	char bad[900];
	struct graid_array *a;
	struct rs_set r;

	rs_own_key();
	rs_make(&r);
	for (unsigned i = 0; i < RS_N; i++)
		tko_write_owner(r.s.paths[i], true);
	cr_assert_eq(rs_open(&r, GRAID_OPEN_TAKEOVER, &a), 0);
	snprintf(bad, sizeof(bad), "faulty:pr=%s/nodir/pr:%s", r.s.dir, r.s.paths[RS_N]);
	cr_expect_eq(graid_array_add_spare(a, bad), 0, "a spare whose PR commands fail was "
		     "refused by a non-strict array");
	graid_array_close(a);
	au_remove(&r.s);
}

/*
 * Found by review: a takeover whose second assembly fails (the old owner's record came back
 * during the fence wait: -EBUSY before the array is allocated) gave up its reservations,
 * against the failed-open rule ("but not a takeover's").
 */
struct rs_bg {
	struct rs_set *r;
	int rc;
};

static void *rs_bg_open(void *arg)
{
	struct rs_bg *b = arg;
	struct graid_array *a = NULL;

	b->rc = rs_open(b->r, GRAID_OPEN_TAKEOVER, &a);
	if (b->rc == 0)
		graid_array_close(a);
	return NULL;
}

Test(reserve, a_takeover_whose_second_pass_fails_keeps_its_reservations)
{
	uint64_t key = rs_own_key();
	struct rs_set r;
	struct rs_bg b = { .r = &r };
	pthread_t t;
	uint64_t epoch;
	int i;

	rs_make(&r);
	epoch = rs_other_host_owns(&r);
	cr_assert_eq(pthread_create(&t, NULL, rs_bg_open, &b), 0);
	/* Wait for the fence record (ours, epoch + 1), then the old owner writes again. */
	for (i = 0; i < 200 && tko_sb(r.s.paths[RS_N - 1]).owner.epoch != epoch + 1; i++)
		usleep(10000);
	cr_assert_lt(i, 200, "no fence record");
	for (unsigned m = 0; m < RS_N; m++)
		tko_write_owner(r.s.paths[m], true);
	pthread_join(t, NULL);
	cr_assert_eq(b.rc, -EBUSY, "open: %d", b.rc);
	for (unsigned m = 0; m < RS_N; m++)
		cr_expect_eq(rs_holder(&r, m), key, "member %u: the failed takeover released its "
			     "reservation (held by %016llx)", m, (unsigned long long)rs_holder(&r, m));
	au_remove(&r.s);
}
