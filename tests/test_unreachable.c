/* SPDX-License-Identifier: MIT */
/*
 * Members that are unreachable for a while (NVMe-oF path outages), modelled by
 * "faulty:fabric-state=FILE:" members whose one controller's state FILE holds: out of I/O
 * but not failed, caught up from the bitmap when live again, failed (and a spare takes
 * over) when the controller is deleted. The same over real nvme-tcp runs in tests/vm.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define UR_MEMBER_BYTES ((1u << 20) + (8u << 20))
#define UR_CHUNK (64u * 1024)
#define UR_BLOCK 4096u

struct ur_events {
	atomic_int unreachable, returned, failed, rebuild_started, rebuild_done;
};

static void ur_on_event(void *arg, const struct graid_event *ev)
{
	struct ur_events *e = arg;

	switch (ev->type) {
	case GRAID_EVENT_MEMBER_UNREACHABLE: atomic_fetch_add(&e->unreachable, 1); break;
	case GRAID_EVENT_MEMBER_RETURNED: atomic_fetch_add(&e->returned, 1); break;
	case GRAID_EVENT_MEMBER_FAILED: atomic_fetch_add(&e->failed, 1); break;
	case GRAID_EVENT_REBUILD_STARTED: atomic_fetch_add(&e->rebuild_started, 1); break;
	case GRAID_EVENT_REBUILD_DONE: atomic_fetch_add(&e->rebuild_done, 1); break;
	default: break;
	}
}

struct ur_bed {
	struct au_set s;
	char state[320];          /* the modelled controller's state file */
	char spec[700];
	const char *paths[AU_MAX];
	unsigned n, victim;
	uint64_t size;
	struct ur_events ev;
	struct graid_array *a;
};

static void ur_set_state(struct ur_bed *b, const char *state)
{
	if (!state) {
		cr_assert_eq(unlink(b->state), 0);
		return;
	}
	cr_assert_eq(au_ctrl_state(b->state, state), 0, "cannot write %s", b->state);
}

/* Every block of [off, off+len) tagged with its offset and @p round. */
static void ur_pattern(uint8_t *buf, uint64_t off, size_t len, unsigned round)
{
	for (size_t k = 0; k < len; k += 8) {
		uint64_t v = ((off + k) / UR_BLOCK) << 16 | round;

		memcpy(buf + k, &v, 8);
	}
}

static void ur_write(struct graid_array *a, uint64_t off, uint64_t len, unsigned round)
{
	const size_t step = 256 * 1024;
	uint8_t *buf = malloc(step);

	for (uint64_t o = off; o < off + len; o += step) {
		size_t n = off + len - o < step ? (size_t)(off + len - o) : step;

		ur_pattern(buf, o, n, round);
		cr_assert_eq(graid_array_write(a, buf, n, o), (ssize_t)n, "write at %llu",
			     (unsigned long long)o);
	}
	free(buf);
}

/* [0, size) holds round @p base, except [off, off+len) which holds @p round. */
static void ur_verify(struct graid_array *a, uint64_t size, uint64_t off, uint64_t len,
		      unsigned base, unsigned round, const char *what)
{
	const size_t step = 256 * 1024;
	uint8_t *buf = malloc(step), *want = malloc(step);

	for (uint64_t o = 0; o < size; o += step) {
		size_t n = size - o < step ? (size_t)(size - o) : step;

		cr_assert_eq(graid_array_read(a, buf, n, o), (ssize_t)n, "%s: read at %llu", what,
			     (unsigned long long)o);
		for (size_t k = 0; k < n; k += UR_BLOCK) {
			uint64_t at = o + k;

			ur_pattern(want + k, at, UR_BLOCK,
				   at >= off && at < off + len ? round : base);
		}
		cr_assert_eq(memcmp(buf, want, n), 0, "%s: data differ in [%llu, +%zu)", what,
			     (unsigned long long)o, n);
	}
	free(buf);
	free(want);
}

static int ur_state_of(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, idx, &mi), 0);
	return mi.state;
}

/* Wait (up to 30 s) for role @p idx to reach @p state. */
static void ur_wait_state(struct graid_array *a, unsigned idx, int state)
{
	for (int i = 0; i < 3000 && ur_state_of(a, idx) != state; i++)
		usleep(10000);
	cr_assert_eq(ur_state_of(a, idx), state, "member %u: state %d, waited for %d", idx,
		     ur_state_of(a, idx), state);
}

/*
 * An array of @p n members at @p level filled with round 1, reopened with member @p victim
 * behind a modelled controller that is live, and a spare when @p spare.
 */
static void ur_setup(struct ur_bed *b, unsigned n, int level, unsigned victim, bool spare)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	tu_need_fault_injection(); /* the controller is modelled by a faulty: member */
	memset(b, 0, sizeof(*b));
	au_make(&b->s, n + 1, UR_MEMBER_BYTES);
	b->n = n;
	b->victim = victim;
	cr_assert_eq(au_create(&b->s, n, level, UR_CHUNK, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	b->size = info.size;
	ur_write(a, 0, b->size, 1);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(b->state, sizeof(b->state), "%s/ctrl-state", b->s.dir);
	ur_set_state(b, "live");
	memcpy(b->paths, b->s.paths, sizeof(b->paths));
	snprintf(b->spec, sizeof(b->spec), "faulty:fabric-state=%s:%s", b->state,
		 b->s.path[victim]);
	b->paths[victim] = b->spec;
	cr_assert_eq(graid_array_open(b->paths, n, NULL, &b->a), 0);
	graid_array_set_event_callback(b->a, ur_on_event, &b->ev);
	if (spare)
		cr_assert_eq(graid_array_add_spare(b->a, b->s.path[n]), 0);
}

static void ur_teardown(struct ur_bed *b)
{
	if (b->a)
		graid_array_close(b->a);
	au_remove(&b->s);
}

static void ur_scrub_clean(struct graid_array *a)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "scrub: %llu mismatches",
		     (unsigned long long)rep.mismatches);
	cr_assert_eq(rep.skipped, 0);
}

/* Fail every role but @p keep's partners as far as the level allows, so reads need @p keep. */
static void ur_lean_on(struct ur_bed *b, int level)
{
	unsigned other = (b->victim + 1) % b->n;

	if (level == 10)
		other = b->victim ^ 1u; /* its mirror: the copy left is the one that came back */
	cr_assert_eq(graid_array_fail_member(b->a, other), 0);
	if (level == 6)
		cr_assert_eq(graid_array_fail_member(b->a, (b->victim + 2) % b->n), 0);
}

/*
 * A status look (read-only open, as graidctl status does) at the array while the holder
 * has it: role @p idx as the holder sees it, and its outage count.
 */
static void ur_look_from_outside(struct ur_bed *b, unsigned idx, int state)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *look;

	cr_assert_eq(graid_array_open(b->s.paths, b->n, &ro, &look), 0);
	cr_assert_eq(graid_array_member_info(look, idx, &mi), 0);
	cr_assert_eq(mi.state, state, "status says %d, the holder has %d", mi.state, state);
	cr_assert_eq(mi.outages, 1);
	cr_assert_eq(graid_array_info(look, &info), 0);
	cr_assert_eq(info.member_state[idx], state);
	cr_assert_eq(info.nfailed, state == GRAID_MEMBER_ACTIVE ? 0u : 1u);
	cr_assert_eq(graid_array_close(look), 0);
}

static void ur_outage_and_return(int level, unsigned n)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const uint64_t off = 3u << 20, len = 2u << 20;
	struct ur_bed b;

	ur_setup(&b, n, level, 1, true);
	ur_set_state(&b, "connecting");
	ur_write(b.a, off, len, 2); /* every write is acknowledged: the array runs degraded */
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_UNREACHABLE);
	cr_assert_eq(ur_state_of(b.a, n), GRAID_MEMBER_SPARE, "a spare took an unreachable role");
	cr_assert_eq(atomic_load(&b.ev.unreachable), 1);
	cr_assert_eq(atomic_load(&b.ev.failed), 0);
	cr_assert_eq(atomic_load(&b.ev.rebuild_started), 0);
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_assert_str_eq(mi.nvme_ctrl_state, "connecting");
	cr_assert_str_eq(mi.nvme_transport, "tcp");
	cr_assert_eq(mi.outages, 1);
	ur_verify(b.a, b.size, off, len, 1, 2, "degraded, member unreachable");

	ur_look_from_outside(&b, 1, GRAID_MEMBER_UNREACHABLE);

	ur_set_state(&b, "live");
	ur_wait_state(b.a, 1, GRAID_MEMBER_ACTIVE);
	ur_look_from_outside(&b, 1, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(atomic_load(&b.ev.returned), 1);
	cr_assert_eq(atomic_load(&b.ev.rebuild_done), 1);
	cr_assert_eq(atomic_load(&b.ev.rebuild_started), 0, "a spare was rebuilt");
	cr_assert_eq(graid_array_member_info(b.a, 1, &mi), 0);
	cr_log_info("RAID-%d: %llu bytes written to the array during the outage, %llu copied to "
		    "the member that came back (of %llu it holds)", level,
		    (unsigned long long)len, (unsigned long long)mi.catchup_done,
		    (unsigned long long)(UR_MEMBER_BYTES - (1u << 20)));
	cr_assert_gt(mi.catchup_done, 0);
	cr_assert_eq(mi.catchup_done, mi.catchup_total);
	/* Only the marked regions (1 MiB of member rows each, two or three of them). */
	cr_assert_leq(mi.catchup_done, 4u << 20, "%llu bytes copied",
		      (unsigned long long)mi.catchup_done);
	ur_scrub_clean(b.a);
	ur_lean_on(&b, level);
	ur_verify(b.a, b.size, off, len, 1, 2, "read through the member that came back");
	ur_teardown(&b);
}

Test(unreachable, raid5_outage_starts_no_rebuild_and_copies_only_what_was_written,
     .timeout = 120)
{
	ur_outage_and_return(5, 4);
}

Test(unreachable, raid6_outage_starts_no_rebuild_and_copies_only_what_was_written,
     .timeout = 120)
{
	ur_outage_and_return(6, 5);
}

Test(unreachable, raid10_outage_starts_no_rebuild_and_copies_only_what_was_written,
     .timeout = 120)
{
	ur_outage_and_return(10, 4);
}

Test(unreachable, a_deleted_controller_fails_the_member_and_a_spare_takes_over,
     .timeout = 120)
{
	const uint64_t off = 1u << 20, len = 1u << 20;
	struct ur_bed b;

	ur_setup(&b, 4, 5, 2, true);
	ur_set_state(&b, "connecting");
	ur_write(b.a, off, len, 2);
	cr_assert_eq(ur_state_of(b.a, 2), GRAID_MEMBER_UNREACHABLE);
	ur_set_state(&b, NULL); /* ctrl_loss_tmo passed: the kernel deleted the controller */
	/* The spare takes role 2 and is rebuilt in the background. */
	for (int i = 0; i < 3000 && atomic_load(&b.ev.rebuild_done) == 0; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&b.ev.failed), 1);
	cr_assert_eq(atomic_load(&b.ev.rebuild_started), 1);
	cr_assert_eq(atomic_load(&b.ev.rebuild_done), 1);
	cr_assert_eq(ur_state_of(b.a, 2), GRAID_MEMBER_ACTIVE);
	ur_scrub_clean(b.a);
	ur_verify(b.a, b.size, off, len, 1, 2, "after the spare's rebuild");
	ur_teardown(&b);
}

Test(unreachable, a_member_that_flaps_20_times_settles_without_a_full_rebuild,
     .timeout = 240)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const uint64_t len = 256u * 1024;
	struct ur_bed b;
	unsigned round;

	ur_setup(&b, 5, 6, 3, true);
	for (round = 2; round < 22; round++) {
		ur_set_state(&b, "connecting");
		ur_write(b.a, (round % 8) * len, len, round);
		cr_assert_eq(ur_state_of(b.a, 3), GRAID_MEMBER_UNREACHABLE);
		ur_set_state(&b, "live");
		/* Every other time it drops again before its catch-up is over. */
		if (round % 2)
			ur_wait_state(b.a, 3, GRAID_MEMBER_ACTIVE);
		else
			usleep(300 * 1000);
		ur_write(b.a, (round % 8) * len, len, round + 100);
		while (ur_state_of(b.a, 3) == GRAID_MEMBER_UNREACHABLE &&
		       atomic_load(&b.ev.returned) < atomic_load(&b.ev.unreachable))
			usleep(10000); /* a write that met it still out: wait for it to return */
	}
	ur_wait_state(b.a, 3, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_member_info(b.a, 3, &mi), 0);
	cr_log_info("20 flaps: %d outages, %d returns, %d catch-ups done, %llu bytes copied by "
		    "the last", atomic_load(&b.ev.unreachable), atomic_load(&b.ev.returned),
		    atomic_load(&b.ev.rebuild_done), (unsigned long long)mi.catchup_done);
	cr_assert_eq(atomic_load(&b.ev.rebuild_started), 0, "a spare was taken");
	cr_assert_eq(atomic_load(&b.ev.failed), 0);
	cr_assert_eq(atomic_load(&b.ev.unreachable), atomic_load(&b.ev.returned));
	cr_assert_geq(atomic_load(&b.ev.unreachable), 20);
	cr_assert_eq(mi.outages, (uint64_t)atomic_load(&b.ev.unreachable));
	cr_assert_eq(ur_state_of(b.a, 5), GRAID_MEMBER_SPARE);
	ur_scrub_clean(b.a);
	/* What the flaps wrote, last round first: each 256 KiB piece holds its latest round. */
	{
		uint8_t *buf = malloc(len), *want = malloc(len);

		for (unsigned piece = 0; piece < 8; piece++) {
			unsigned last = 0;

			for (unsigned r = 2; r < 22; r++)
				if (r % 8 == piece)
					last = r + 100;
			if (!last)
				continue;
			ur_pattern(want, piece * len, len, last);
			cr_assert_eq(graid_array_read(b.a, buf, len, piece * len), (ssize_t)len);
			cr_assert_eq(memcmp(buf, want, len), 0, "piece %u", piece);
		}
		free(buf);
		free(want);
	}
	ur_teardown(&b);
}

Test(unreachable, an_unreachable_member_failed_by_hand_stays_failed_and_can_be_replaced,
     .timeout = 120)
{
	struct au_set n;
	struct ur_bed b;

	ur_setup(&b, 4, 5, 0, false);
	ur_set_state(&b, "connecting");
	ur_write(b.a, 0, 1u << 20, 2);
	cr_assert_eq(ur_state_of(b.a, 0), GRAID_MEMBER_UNREACHABLE);
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	cr_assert_eq(ur_state_of(b.a, 0), GRAID_MEMBER_FAILED);
	ur_set_state(&b, "live");
	usleep(800 * 1000); /* three looks of the worker: a failed member does not come back */
	cr_assert_eq(ur_state_of(b.a, 0), GRAID_MEMBER_FAILED);
	cr_assert_eq(atomic_load(&b.ev.returned), 0);
	au_make(&n, 1, UR_MEMBER_BYTES);
	cr_assert_eq(graid_array_replace_member(b.a, 0, n.paths[0]), 0);
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	ur_verify(b.a, b.size, 0, 1u << 20, 1, 2, "after the replacement");
	ur_teardown(&b);
	au_remove(&n);
}

Test(unreachable, an_unreachable_member_can_be_replaced_without_failing_it_first,
     .timeout = 120)
{
	struct au_set n;
	struct ur_bed b;

	ur_setup(&b, 4, 5, 1, false);
	ur_set_state(&b, "connecting");
	ur_write(b.a, 0, 1u << 20, 2);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_UNREACHABLE);
	au_make(&n, 1, UR_MEMBER_BYTES);
	cr_assert_eq(graid_array_replace_member(b.a, 1, n.paths[0]), 0);
	ur_set_state(&b, "live"); /* the old device answers again: it is not the role's now */
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	usleep(600 * 1000);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_ACTIVE);
	cr_assert_eq(atomic_load(&b.ev.returned), 0);
	ur_scrub_clean(b.a);
	ur_verify(b.a, b.size, 0, 1u << 20, 1, 2, "after the replacement");
	ur_teardown(&b);
	au_remove(&n);
}

Test(unreachable, closed_while_unreachable_it_catches_up_at_the_next_open, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	const uint64_t off = 2u << 20, len = 1u << 20;
	struct ur_bed b;

	ur_setup(&b, 5, 6, 4, false);
	ur_set_state(&b, "connecting");
	ur_write(b.a, off, len, 2);
	cr_assert_eq(ur_state_of(b.a, 4), GRAID_MEMBER_UNREACHABLE);
	cr_assert_eq(graid_array_close(b.a), 0);
	b.a = NULL;
	cr_assert_eq(graid_array_open(b.s.paths, 5, NULL, &b.a), 0);
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	cr_assert_eq(ur_state_of(b.a, 4), GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_member_info(b.a, 4, &mi), 0);
	cr_assert_gt(mi.write_bytes, 0);
	cr_assert_leq(mi.write_bytes, 3u << 20, "%llu bytes copied: more than the marked regions",
		      (unsigned long long)mi.write_bytes);
	cr_assert_eq(graid_array_fail_member(b.a, 0), 0);
	cr_assert_eq(graid_array_fail_member(b.a, 1), 0);
	ur_verify(b.a, b.size, off, len, 1, 2, "read through the member that caught up");
	ur_teardown(&b);
}

/*
 * A fabric member whose namespace comes back smaller than before the outage (resized on
 * its storage host): what it lost is in no bitmap, so it is failed, not caught up. Before,
 * it caught up the marked regions and was declared in sync over its lost tail.
 */
Test(unreachable, a_member_back_smaller_after_an_outage_is_failed_not_caught_up,
     .timeout = 120)
{
	const uint64_t off = 1u << 20, len = 1u << 20;
	struct ur_bed b;

	ur_setup(&b, 4, 5, 1, false);
	ur_set_state(&b, "connecting");
	ur_write(b.a, off, len, 2);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_UNREACHABLE);
	cr_assert_eq(truncate(b.s.path[1], UR_MEMBER_BYTES / 2), 0);
	ur_set_state(&b, "live");
	ur_wait_state(b.a, 1, GRAID_MEMBER_FAILED);
	/* The state is stored before the event is sent: wait for the event too. */
	for (int i = 0; i < 3000 && atomic_load(&b.ev.failed) == 0; i++)
		usleep(10000);
	cr_assert_eq(atomic_load(&b.ev.returned), 0, "it came back to catch up");
	cr_assert_eq(atomic_load(&b.ev.failed), 1);
	ur_verify(b.a, b.size, off, len, 1, 2, "with the shrunk member out");
	ur_teardown(&b);
}

Test(unreachable, a_local_members_error_still_fails_it)
{
	struct au_set s;
	struct graid_array *a;
	char spec[400];
	const char *paths[4];
	uint8_t buf[4096] = { 0 };

	tu_need_fault_injection();
	au_make(&s, 4, UR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, UR_CHUNK, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memcpy(paths, s.paths, sizeof(paths));
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=0:%s", s.path[0]);
	paths[0] = spec;
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_write(a, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(ur_state_of(a, 0), GRAID_MEMBER_FAILED);
	graid_array_close(a);
	au_remove(&s);
}

Test(member_spec, identity_specs_are_told_from_paths)
{
	cr_assert_eq(graid_member_is_spec("nguid=00112233445566778899aabbccddeeff"), 1);
	cr_assert_eq(graid_member_is_spec("nqn=nqn.2014-08.org.example:a,nsid=1"), 1);
	cr_assert_eq(graid_member_is_spec("eui64=0011223344556677"), 1);
	cr_assert_eq(graid_member_is_spec("uuid=00112233-4455-6677-8899-aabbccddeeff"), 1);
	cr_assert_eq(graid_member_is_spec("/dev/nvme0n1"), 0);
	cr_assert_eq(graid_member_is_spec("nguid"), 0);
	cr_assert_eq(graid_member_is_spec(NULL), 0);
}

Test(member_spec, malformed_specs_are_refused_and_absent_ones_not_found)
{
	char path[64];

	cr_assert_eq(graid_member_resolve("nguid=0011", path, sizeof(path)), -EINVAL);
	cr_assert_eq(graid_member_resolve("nguid=zz112233445566778899aabbccddeeff", path,
					  sizeof(path)), -EINVAL);
	cr_assert_eq(graid_member_resolve("eui64=00112233445566778899", path, sizeof(path)),
		     -EINVAL);
	cr_assert_eq(graid_member_resolve("nqn=nqn.2014-08.org.example:a", path, sizeof(path)),
		     -EINVAL);
	cr_assert_eq(graid_member_resolve("nqn=nqn.2014-08.org.example:a,nsid=0", path,
					  sizeof(path)), -EINVAL);
	cr_assert_eq(graid_member_resolve("wwid=1", path, sizeof(path)), -EINVAL);
	cr_assert_eq(graid_member_resolve(NULL, path, sizeof(path)), -EINVAL);
	/* Well formed, and no namespace has it (no NVMe at all on the build machines). */
	cr_assert_eq(graid_member_resolve("nguid=f00dfeedf00dfeedf00dfeedf00dfeed", path,
					  sizeof(path)), -ENOENT);
	cr_assert_eq(graid_member_resolve("nqn=nqn.2014-08.org.example:none,nsid=7", path,
					  sizeof(path)), -ENOENT);
}

Test(member_spec, an_array_on_a_spec_nobody_has_is_not_created_and_writes_nothing)
{
	struct au_set s;
	struct graid_array *a = NULL;
	const char *paths[3];
	uint64_t h[2];

	au_make(&s, 2, UR_MEMBER_BYTES);
	h[0] = au_file_hash(s.path[0]);
	h[1] = au_file_hash(s.path[1]);
	paths[0] = s.paths[0];
	paths[1] = "nguid=f00dfeedf00dfeedf00dfeedf00dfeed";
	paths[2] = s.paths[1];
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5 };

	cr_assert_eq(graid_array_create(paths, 3, &cfg, &a), -ENOENT);
	cr_assert_null(a);
	cr_assert_eq(au_file_hash(s.path[0]), h[0]);
	cr_assert_eq(au_file_hash(s.path[1]), h[1]);
	au_remove(&s);
}

/* ---- cases an adversarial review found ----------------------------------------------- */

struct ur_rebuild {
	struct graid_array *a;
	atomic_ullong done;
	atomic_int rc;
};

static void ur_rebuild_progress(void *arg, uint64_t done, uint64_t total)
{
	(void)total;
	atomic_store(&((struct ur_rebuild *)arg)->done, done);
}

static void *ur_rebuild_main(void *arg)
{
	struct ur_rebuild *r = arg;

	atomic_store(&r->rc, graid_array_rebuild(r->a, ur_rebuild_progress, r));
	return NULL;
}

/*
 * A rebuild the caller runs, paused by its rate limit, while the member it rebuilds is out
 * for a moment and written around behind the pass: the pass must start that member over,
 * not declare it in sync with rows that missed those writes.
 */
Test(unreachable, a_rebuild_paced_across_an_outage_starts_that_member_over, .timeout = 120)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 1000000 };
	struct ur_rebuild r = { 0 };
	struct ur_bed b, spare;
	pthread_t t;

	/* The bed's own faulty member stays live; the replacement has a controller of its own. */
	ur_setup(&b, 4, 5, 0, false);
	memset(&spare, 0, sizeof(spare));
	au_make(&spare.s, 1, UR_MEMBER_BYTES);
	snprintf(spare.state, sizeof(spare.state), "%s/ctrl-state", spare.s.dir);
	ur_set_state(&spare, "live");
	snprintf(spare.spec, sizeof(spare.spec), "faulty:fabric-state=%s:%s", spare.state,
		 spare.s.path[0]);
	cr_assert_eq(graid_array_fail_member(b.a, 1), 0);
	cr_assert_eq(graid_array_replace_member(b.a, 1, spare.spec), 0);
	cr_assert_eq(graid_array_set_rebuild_options(b.a, &ro), 0);
	r.a = b.a;
	cr_assert_eq(pthread_create(&t, NULL, ur_rebuild_main, &r), 0);
	for (int i = 0; i < 2000 && atomic_load(&r.done) == 0; i++)
		usleep(1000); /* the first batch is copied; the pass now waits for its rate */
	cr_assert_gt(atomic_load(&r.done), 0);
	ur_set_state(&spare, "connecting");
	ur_write(b.a, 0, 1u << 20, 2); /* rows the pass has copied already */
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_UNREACHABLE);
	ur_set_state(&spare, "live");
	for (int i = 0; i < 200 && ur_state_of(b.a, 1) == GRAID_MEMBER_UNREACHABLE; i++)
		usleep(5000); /* back: the pass, still waiting for its rate, goes on after this */
	cr_assert_eq(pthread_join(t, NULL), 0);
	ur_wait_state(b.a, 1, GRAID_MEMBER_ACTIVE);
	ur_scrub_clean(b.a);
	cr_assert_eq(graid_array_fail_member(b.a, 2), 0);
	ur_verify(b.a, b.size, 0, 1u << 20, 1, 2, "through the member rebuilt across an outage");
	ur_teardown(&b);
	au_remove(&spare.s);
}

/*
 * More roles out than the level carries (RAID-0's one, RAID-5's second on the same storage
 * host): those fail as before, so that once the path is healed a forced open takes them
 * back with every byte, where a plain open refuses.
 */
static void ur_too_many_out(int level, unsigned nout, bool close_during_outage)
{
	struct graid_open_options force = { .struct_size = sizeof(force),
					    .flags = GRAID_OPEN_FORCE };
	const unsigned n = 4;
	char specs[2][700];
	const char *paths[AU_MAX];
	uint8_t buf[4096];
	struct ur_bed b;
	int rc;

	ur_setup(&b, n, level, 1, false);
	if (nout == 2) {
		/* A second member behind the same controller state: one storage host. */
		graid_array_close(b.a);
		memcpy(paths, b.s.paths, sizeof(paths));
		for (unsigned i = 0; i < 2; i++) {
			snprintf(specs[i], sizeof(specs[i]), "faulty:fabric-state=%s:%s", b.state,
				 b.s.path[1 + i]);
			paths[1 + i] = specs[i];
		}
		cr_assert_eq(graid_array_open(paths, n, NULL, &b.a), 0);
	}
	ur_set_state(&b, "connecting");
	ur_pattern(buf, 0, sizeof(buf), 2);
	for (uint64_t off = 0; off < (1u << 20); off += UR_CHUNK)
		graid_array_write(b.a, buf, sizeof(buf), off); /* refused once the array stops */
	if (!close_during_outage) {
		ur_set_state(&b, "live");
		usleep(800 * 1000);
	}
	graid_array_close(b.a); /* -EIO: the members out could not be updated */
	b.a = NULL;
	ur_set_state(&b, "live");
	rc = graid_array_open(b.s.paths, n, NULL, &b.a);
	cr_assert_eq(rc, -EIO, "a plain open takes back members recorded failed: %d", rc);
	cr_assert_eq(graid_array_open(b.s.paths, n, &force, &b.a), 0,
		     "the forced open that the log and docs/REMOTE.md point to");
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	/* Every block outside the refused writes holds what it held. */
	{
		uint8_t *got = malloc(b.size), want[4096];

		cr_assert_eq(graid_array_read(b.a, got, b.size, 0), (ssize_t)b.size);
		for (uint64_t at = 0; at < b.size; at += 4096) {
			if (at < (1u << 20) && at % UR_CHUNK == 0)
				continue; /* a write that failed: either content is allowed */
			ur_pattern(want, at, 4096, 1);
			cr_assert_eq(memcmp(got + at, want, 4096), 0, "block at %llu",
				     (unsigned long long)at);
		}
		free(got);
	}
	if (level != 0)
		ur_scrub_clean(b.a);
	ur_teardown(&b);
}

Test(unreachable, raid0_a_member_out_fails_it_and_a_forced_open_takes_it_back, .timeout = 60)
{
	ur_too_many_out(0, 1, false);
}

Test(unreachable, raid5_two_out_at_once_come_back_by_a_forced_open, .timeout = 60)
{
	ur_too_many_out(5, 2, false);
}

Test(unreachable, raid5_two_out_closed_during_the_outage_come_back_by_a_forced_open,
     .timeout = 60)
{
	ur_too_many_out(5, 2, true);
}

/*
 * Close the bed's array with role 1 unreachable and its superblock unreadable (as while
 * its controller reconnects; the emulation's synchronous reads ignore the state, so the
 * superblock is zeroed), and copy the member paths for the next open into @p paths.
 */
static void ur_close_role1_unreadable(struct ur_bed *b, const char **paths)
{
	static uint8_t z[4096];
	FILE *f;

	cr_assert_eq(graid_array_close(b->a), 0);
	b->a = NULL;
	ur_set_state(b, "connecting");
	f = fopen(b->s.path[1], "r+");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(z, 1, sizeof(z), f), sizeof(z));
	cr_assert_eq(fclose(f), 0);
	memcpy(paths, b->paths, sizeof(b->paths));
}

/*
 * A member given at open but unreachable leaves its role MISSING, and the open promises
 * that no spare takes it at this open. A later rebuild call (or another member's failure,
 * which wakes the worker's takeover) must not hand the spare to it (review finding: the
 * worker's first takeover took every role down).
 */
Test(unreachable, an_unreachable_given_role_keeps_the_spare_away, .timeout = 60)
{
	struct ur_bed b;
	const char *paths[AU_MAX];

	ur_setup(&b, 4, 5, 1, true);
	ur_close_role1_unreadable(&b, paths);
	paths[4] = b.s.path[4]; /* the spare */
	cr_assert_eq(graid_array_open(paths, 5, NULL, &b.a), 0);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING, "role 1 at open");
	usleep(300000);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING, "role 1 after the worker ran");
	/* Nothing is being rebuilt: this call must find nothing to do. */
	cr_assert_eq(graid_array_rebuild(b.a, NULL, NULL), 0);
	cr_expect_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING,
		     "a rebuild call gave the spare to the role of the unreachable member "
		     "(state %d)", ur_state_of(b.a, 1));
	ur_teardown(&b);
}

/* Another role fails by I/O error: the spare goes to it, not to the unreachable one's. */
Test(unreachable, the_failed_role_gets_the_spare_not_the_unreachable_one, .timeout = 60)
{
	struct ur_bed b;
	const char *paths[AU_MAX];
	char bad[400];
	uint8_t *buf;

	ur_setup(&b, 5, 6, 1, true);
	ur_close_role1_unreadable(&b, paths);
	snprintf(bad, sizeof(bad), "faulty:write-eio-after=0:%s", b.s.path[3]);
	paths[3] = bad;
	paths[5] = b.s.path[5]; /* the spare */
	cr_assert_eq(graid_array_open(paths, 6, NULL, &b.a), 0);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING);
	buf = aligned_alloc(4096, 1u << 20);
	memset(buf, 7, 1u << 20);
	cr_assert_eq(graid_array_write(b.a, buf, 1u << 20, 0), (ssize_t)(1u << 20));
	free(buf);
	usleep(500000);
	cr_expect_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING,
		     "the spare went to the unreachable member's role");
	cr_expect_neq(ur_state_of(b.a, 3), GRAID_MEMBER_FAILED, "the failed role has no spare");
	ur_teardown(&b);
}

/* A spare added after such an open keeps away from the unreachable member's role too. */
Test(unreachable, a_spare_added_later_keeps_away_from_the_unreachable_role, .timeout = 60)
{
	struct ur_bed b;
	const char *paths[AU_MAX];

	ur_setup(&b, 4, 5, 1, true);
	ur_close_role1_unreadable(&b, paths);
	cr_assert_eq(graid_array_open(paths, 4, NULL, &b.a), 0);
	cr_assert_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING, "role 1 at open");
	cr_assert_eq(graid_array_add_spare(b.a, b.s.path[4]), 0);
	cr_expect_eq(ur_state_of(b.a, 1), GRAID_MEMBER_MISSING,
		     "add_spare gave the spare to the unreachable member's role (state %d)",
		     ur_state_of(b.a, 1));
	ur_teardown(&b);
}
