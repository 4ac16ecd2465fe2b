/* SPDX-License-Identifier: MIT */
/* Replacing a member that stays in service (graid_array_replace_start): redundancy kept, faults, crashes. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "healutil.h"
#include "testutil.h"

#define BLK 4096u

/* The events seen, by type. */
struct rk_events {
	pthread_mutex_t lock;
	unsigned n[64];
	int member[64];
	int error[64];
};

static void rk_event_cb(void *arg, const struct graid_event *ev)
{
	struct rk_events *e = arg;

	pthread_mutex_lock(&e->lock);
	if (ev->type >= 0 && ev->type < 64) {
		e->n[ev->type]++;
		e->member[ev->type] = ev->member;
		e->error[ev->type] = ev->error;
	}
	pthread_mutex_unlock(&e->lock);
}

static unsigned rk_count(struct rk_events *e, int type)
{
	unsigned n;

	pthread_mutex_lock(&e->lock);
	n = e->n[type];
	pthread_mutex_unlock(&e->lock);
	return n;
}

static void rk_rate(struct graid_array *a, uint64_t bytes_per_sec)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .max_bytes_per_sec = bytes_per_sec };

	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
}

static struct graid_member_info rk_member(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	cr_assert_eq(graid_array_member_info(a, idx, &mi), 0);
	return mi;
}

/* Hot spares listed after the 5 roles. */
static unsigned rk_nspares(struct graid_array *a)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	unsigned k = 0;

	while (graid_array_member_info(a, 5 + k, &mi) == 0)
		k++;
	return k;
}

/* Wait (up to 60 s) until role @p idx is no longer being copied. */
static void rk_wait_done(struct graid_array *a, unsigned idx)
{
	for (int i = 0; i < 6000 && rk_member(a, idx).replacing; i++)
		usleep(10000);
	cr_assert_eq(rk_member(a, idx).replacing, 0, "the replace of role %u did not end", idx);
}

/* Wait (up to 30 s) until the copy of role @p idx has done some, not all. */
static void rk_wait_some(struct graid_array *a, unsigned idx)
{
	struct graid_member_info mi;

	for (int i = 0; i < 3000; i++) {
		mi = rk_member(a, idx);
		if (mi.replacing && mi.replace_done > 0)
			return;
		usleep(10000);
	}
	cr_assert_fail("the copy of role %u made no progress", idx);
}

/* The sampler: graid_array_info every 10 ms until told to stop. */
struct rk_sampler {
	struct graid_array *a;
	atomic_bool stop;
	unsigned samples, bad_nfailed, bad_state;
};

static void *rk_sample(void *arg)
{
	struct rk_sampler *s = arg;

	while (!atomic_load(&s->stop)) {
		struct graid_array_info info = { .struct_size = sizeof(info) };

		cr_assert_eq(graid_array_info(s->a, &info), 0);
		s->samples++;
		if (info.nfailed)
			s->bad_nfailed++;
		for (unsigned m = 0; m < info.nmembers; m++)
			if (info.member_state[m] != GRAID_MEMBER_ACTIVE)
				s->bad_state++;
		usleep(10000);
	}
	return NULL;
}

/* The writer: pattern rounds to random blocks, each read back at once. */
struct rk_writer {
	struct graid_array *a;
	uint64_t size;
	uint32_t *round;  /* per block */
	atomic_bool stop;
	unsigned writes, mismatches, errors;
};

static void *rk_write(void *arg)
{
	struct rk_writer *w = arg;
	const uint64_t nblk = w->size / BLK;
	uint8_t *buf = aligned_alloc(BLK, 4 * BLK), *back = aligned_alloc(BLK, 4 * BLK);
	unsigned seed = 7;

	while (!atomic_load(&w->stop)) {
		uint64_t b = (uint64_t)rand_r(&seed) % (nblk - 3);
		unsigned k = 1 + (unsigned)rand_r(&seed) % 4;
		uint32_t r = 100 + w->writes;

		for (unsigned i = 0; i < k; i++)
			heal_pattern(buf + (size_t)i * BLK, BLK, (b + i) * BLK, r);
		if (graid_array_write(w->a, buf, (size_t)k * BLK, b * BLK) != (ssize_t)(k * BLK)) {
			w->errors++;
			continue;
		}
		for (unsigned i = 0; i < k; i++)
			w->round[b + i] = r;
		if (graid_array_read(w->a, back, (size_t)k * BLK, b * BLK) != (ssize_t)(k * BLK) ||
		    memcmp(buf, back, (size_t)k * BLK))
			w->mismatches++;
		w->writes++;
	}
	free(buf);
	free(back);
	return NULL;
}

/* RAID-6 of 5 members, 64 KiB chunks, filled with round 3; the events recorded. */
static struct graid_array *rk_raid6(struct au_set *s, struct rk_events *ev, uint64_t *size)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	au_make(s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(s, 5, 6, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	*size = info.size;
	if (ev) {
		memset(ev, 0, sizeof(*ev));
		pthread_mutex_init(&ev->lock, NULL);
		cr_assert_eq(graid_array_set_event_callback(a, rk_event_cb, ev), 0);
	}
	return a;
}

Test(replace_keep, redundancy_stays_while_a_member_is_replaced_under_writes, .timeout = 300)
{
	struct rk_events ev;
	struct rk_sampler smp = { 0 };
	struct rk_writer w = { 0 };
	pthread_t ts, tw;
	struct graid_member_info mi;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *newp;

	a = rk_raid6(&s, &ev, &size);
	newp = heal_new_member(&s, "new");
	/* 4 MiB per member at 2 MiB/s: the copy takes about two seconds. */
	rk_rate(a, 2u << 20);
	w.a = a;
	w.size = size;
	w.round = calloc(size / BLK, sizeof(*w.round));
	for (uint64_t b = 0; b < size / BLK; b++)
		w.round[b] = 3;
	smp.a = a;
	cr_assert_eq(pthread_create(&ts, NULL, rk_sample, &smp), 0);
	cr_assert_eq(pthread_create(&tw, NULL, rk_write, &w), 0);
	usleep(100000);
	cr_assert_eq(graid_array_replace_start(a, 2, newp, 0), 0);
	mi = rk_member(a, 2);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the role stays active");
	cr_assert_str_eq(mi.path, s.paths[2], "the old member serves the role meanwhile");
	cr_assert_eq(mi.replacing, 1);
	cr_assert_str_eq(mi.replace_path, newp);
	cr_assert_eq(graid_array_replace_start(a, 3, heal_new_member(&s, "second"), 0), -EALREADY);
	rk_wait_done(a, 2);
	atomic_store(&w.stop, true);
	atomic_store(&smp.stop, true);
	pthread_join(tw, NULL);
	pthread_join(ts, NULL);
	cr_assert_gt(smp.samples, 50, "only %u samples", smp.samples);
	cr_assert_eq(smp.bad_nfailed, 0, "nfailed was not 0 in %u samples", smp.bad_nfailed);
	cr_assert_eq(smp.bad_state, 0, "a role left ACTIVE in %u samples", smp.bad_state);
	cr_assert_gt(w.writes, 20);
	cr_assert_eq(w.errors, 0);
	cr_assert_eq(w.mismatches, 0);
	mi = rk_member(a, 2);
	cr_assert_str_eq(mi.path, newp, "the new device has the role");
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_STARTED), 1);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_DONE), 1);
	cr_assert_eq(ev.member[GRAID_EVENT_REBUILD_DONE], 2);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_STOPPED), 0);
	cr_assert_geq(rk_count(&ev, GRAID_EVENT_REBUILD_PROGRESS), 1);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_MEMBER_FAILED), 0);
	/* The new device alone holds the role's data: two others out, and all is read. */
	heal_verify(a, size, w.round, 0, "after the replace");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	heal_verify(a, size, w.round, 0, "after the replace, with two other members out");
	graid_array_close(a);

	/* And at the next open: the new device in the role, the old one not. */
	{
		const char *paths[5] = { s.paths[0], s.paths[1], newp, s.paths[3], s.paths[4] };
		struct graid_array_info info = { .struct_size = sizeof(info) };

		cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
		cr_assert_eq(graid_array_info(a, &info), 0);
		cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
		cr_assert_str_eq(rk_member(a, 2).path, newp);
		graid_array_close(a);
	}
	free(w.round);
	au_remove(&s);
}

Test(replace_keep, a_hot_spare_is_taken_when_no_path_is_given, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *spare;

	a = rk_raid6(&s, &ev, &size);
	cr_assert_eq(graid_array_replace_start(a, 1, NULL, GRAID_REPLACE_WAIT), -ENOENT,
		     "no hot spare");
	spare = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	cr_assert_eq(graid_array_replace_start(a, 1, NULL, GRAID_REPLACE_WAIT), 0);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED), 1);
	cr_assert_eq(ev.member[GRAID_EVENT_SPARE_ACTIVATED], 1);
	cr_assert_str_eq(rk_member(a, 1).path, spare);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(rk_nspares(a), 0, "the spare is in the role now");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	heal_verify(a, size, NULL, 3, "after the spare took the role in service");
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, refusals_name_what_is_wrong_and_change_nothing, .timeout = 120)
{
	struct graid_array *a, *r0;
	struct au_set s, s0;
	uint64_t size, h;
	char *newp;

	a = rk_raid6(&s, NULL, &size);
	newp = heal_new_member(&s, "new");
	h = au_file_hash(s.paths[1]);
	cr_assert_eq(graid_array_replace_start(NULL, 1, newp, 0), -EINVAL);
	cr_assert_eq(graid_array_replace_start(a, 5, newp, 0), -EINVAL);
	cr_assert_eq(graid_array_replace_start(a, 1, newp, 0x80), -EINVAL);
	cr_assert_eq(graid_array_replace_start(a, 1, s.paths[3], 0), -EEXIST);
	cr_assert_eq(graid_array_replace_start(a, 1, "/nonexistent/dev", 0), -ENOENT);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_replace_start(a, 1, newp, 0), -EBUSY, "a failed role");
	cr_assert_eq(au_file_hash(s.paths[1]), h);
	graid_array_close(a);
	au_remove(&s);

	au_make(&s0, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s0, 2, 0, 65536, &r0), 0);
	cr_assert_eq(graid_array_replace_start(r0, 0, heal_new_member(&s0, "n"), 0), -EOPNOTSUPP);
	graid_array_close(r0);
	au_remove(&s0);
}

Test(replace_keep, a_failing_replacement_leaves_the_member_in_its_role, .timeout = 120)
{
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400];

	tu_need_fault_injection();
	a = rk_raid6(&s, &ev, &size);
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=20:%s", heal_new_member(&s, "bad"));
	cr_assert_eq(graid_array_replace_start(a, 3, spec, GRAID_REPLACE_WAIT), -EIO);
	cr_assert_eq(rk_member(a, 3).state, GRAID_MEMBER_ACTIVE);
	cr_assert_str_eq(rk_member(a, 3).path, s.paths[3]);
	cr_assert_eq(rk_member(a, 3).replacing, 0);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_STOPPED), 1);
	cr_assert_eq(ev.error[GRAID_EVENT_REBUILD_STOPPED], -EIO);
	cr_assert_eq(ev.member[GRAID_EVENT_REBUILD_STOPPED], 3);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_DONE), 0);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_MEMBER_FAILED), 0);
	heal_fill(a, size, 5); /* writes after it reach the member only, and are whole */
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, size, NULL, 5, "after the replacement failed");
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, the_member_failing_mid_copy_hands_the_role_to_the_replacement, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *newp, *spare;

	a = rk_raid6(&s, &ev, &size);
	newp = heal_new_member(&s, "new");
	spare = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	rk_rate(a, 1u << 20);
	cr_assert_eq(graid_array_replace_start(a, 2, newp, 0), 0);
	rk_wait_some(a, 2);
	heal_fill(a, size / 2, 6);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	rk_rate(a, 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	cr_assert_str_eq(rk_member(a, 2).path, newp, "the replacement took the role");
	cr_assert_eq(rk_nspares(a), 1, "no spare was taken");
	cr_assert_eq(rk_member(a, 2).replacing, 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 4), 0);
	{
		uint32_t *round = malloc(size / BLK * sizeof(*round));

		for (uint64_t b = 0; b < size / BLK; b++)
			round[b] = b < size / 2 / BLK ? 6 : 3;
		heal_verify(a, size, round, 0, "after the member failed during its replace");
		free(round);
	}
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, a_block_the_member_cannot_read_comes_from_parity, .timeout = 120)
{
	const char *paths[5];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400], *newp;

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	graid_array_close(a);
	/* Two bad sectors on role 1: one in the first row, one further on. */
	snprintf(spec, sizeof(spec), "faulty:bad-block=4096,bad-block=1118208:%s", s.paths[1]);
	for (unsigned i = 0; i < 5; i++)
		paths[i] = i == 1 ? spec : s.paths[i];
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	newp = heal_new_member(&s, "new");
	cr_assert_eq(graid_array_replace_start(a, 1, newp, GRAID_REPLACE_WAIT), 0);
	cr_assert_str_eq(rk_member(a, 1).path, newp);
	cr_assert_eq(rk_member(a, 1).bad_blocks, 0, "nothing was lost");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	heal_verify(a, size, NULL, 3, "the blocks the old member could not read");
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, a_close_mid_copy_keeps_the_member_and_the_spare, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rk_events ev;
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *spare;

	a = rk_raid6(&s, &ev, &size);
	spare = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	rk_rate(a, 512u << 10);
	cr_assert_eq(graid_array_replace_start(a, 4, NULL, 0), 0);
	rk_wait_some(a, 4);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_STOPPED), 1);
	cr_assert_eq(ev.error[GRAID_EVENT_REBUILD_STOPPED], -ECANCELED);
	for (unsigned i = 0; i < 5; i++)
		paths[i] = s.paths[i];
	paths[5] = spare;
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert_str_eq(rk_member(a, 4).path, s.paths[4]);
	cr_assert_eq(rk_nspares(a), 1, "the spare is a spare again");
	heal_verify(a, size, NULL, 3, "after a close mid-copy");
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, a_crash_mid_copy_keeps_the_member_in_its_role, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400], *newp;
	int status;
	pid_t pid;

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	graid_array_close(a);
	newp = heal_new_member(&s, "new");
	/* The child dies at the new device's 30th write, in the middle of the copy. */
	snprintf(spec, sizeof(spec), "faulty:kill-after=30:%s", newp);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, 5, NULL, &a))
			_exit(2);
		graid_array_replace_start(a, 0, spec, GRAID_REPLACE_WAIT);
		_exit(3); /* not reached: the kill comes first */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the child was to die mid-copy (status %d)", status);
	au_wait_unlocked(s.paths, 5);
	au_wait_unlocked((const char *const *)&newp, 1);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert_str_eq(rk_member(a, 0).path, s.paths[0]);
	heal_verify(a, size, NULL, 3, "after a crash mid-copy");
	/* And the device can be used again. */
	cr_assert_eq(graid_array_replace_start(a, 0, newp, GRAID_REPLACE_WAIT), 0);
	cr_assert_str_eq(rk_member(a, 0).path, newp);
	graid_array_close(a);
	au_remove(&s);
}

/* @p text into @p path whole, through a rename, as the scripted drive is read at any time. */
static void rk_put(const char *path, const char *text)
{
	char tmp[400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0);
}

/*
 * The RAID-6 above with role 1's drive health scripted (healthy at first), a hot spare,
 * the events recorded and the watch every 100 ms; @p off: auto_replace_off.
 */
static struct graid_array *rk_scripted(struct au_set *s, struct rk_events *ev, char *health,
				       char **spare, uint64_t *size, uint32_t off)
{
	struct graid_health_options o = { .struct_size = sizeof(o), .interval_ms = 100,
					  .wear_percent = 90, .media_rising = 2,
					  .media_burst = 25, .media_window_s = 600,
					  .auto_replace_off = off };
	static char spec[700];
	const char *paths[5];
	struct graid_array *a;

	tu_need_fault_injection();
	a = rk_raid6(s, NULL, size);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health, 320, "%s/health1", s->dir);
	rk_put(health, "available_spare 100\nspare_threshold 10\n");
	snprintf(spec, sizeof(spec), "faulty:health=%s:%s", health, s->paths[1]);
	for (unsigned i = 0; i < 5; i++)
		paths[i] = i == 1 ? spec : s->paths[i];
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	memset(ev, 0, sizeof(*ev));
	pthread_mutex_init(&ev->lock, NULL);
	cr_assert_eq(graid_array_set_event_callback(a, rk_event_cb, ev), 0);
	*spare = heal_new_member(s, "spare");
	cr_assert_eq(graid_array_add_spare(a, *spare), 0);
	cr_assert_eq(graid_array_set_health_options(a, &o), 0);
	return a;
}

Test(replace_keep, a_critical_drive_is_replaced_onto_the_hot_spare_in_service, .timeout = 120)
{
	struct rk_sampler smp = { 0 };
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	char health[320], *spare;
	uint64_t size;
	pthread_t ts;

	a = rk_scripted(&s, &ev, health, &spare, &size, 0);
	usleep(300000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED), 0, "a healthy drive replaced");
	smp.a = a;
	cr_assert_eq(pthread_create(&ts, NULL, rk_sample, &smp), 0);
	rk_put(health, "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	for (int i = 0; i < 200 && !rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED); i++)
		usleep(10000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL), 1);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED), 1,
		     "no replace within 2 s of the critical verdict");
	cr_assert_eq(ev.member[GRAID_EVENT_SPARE_ACTIVATED], 1);
	rk_wait_done(a, 1);
	atomic_store(&smp.stop, true);
	pthread_join(ts, NULL);
	cr_assert_eq(smp.bad_nfailed, 0);
	cr_assert_eq(smp.bad_state, 0);
	cr_assert_str_eq(rk_member(a, 1).path, spare, "the spare has the role");
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_DONE), 1);
	cr_assert_eq(rk_nspares(a), 0);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	heal_verify(a, size, NULL, 3, "after the critical drive was replaced");
	graid_array_close(a);
	au_remove(&s);
}

Test(replace_keep, auto_replace_off_leaves_a_critical_drive_in_its_role, .timeout = 60)
{
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	char health[320], *spare;
	uint64_t size;

	a = rk_scripted(&s, &ev, health, &spare, &size, 1);
	rk_put(health, "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	for (int i = 0; i < 200 && !rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL); i++)
		usleep(10000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL), 1);
	usleep(500000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED), 0);
	cr_assert_eq(rk_member(a, 1).replacing, 0);
	cr_assert_eq(rk_nspares(a), 1);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * Each level with redundancy: role 1 replaced while its device has two sectors it cannot
 * read; afterwards the array is read with the new device standing alone for the role (the
 * copies or the parity it would have been read from taken out).
 */
Test(replace_keep, every_level_copies_the_role_and_its_unreadable_blocks, .timeout = 300)
{
	static const struct {
		int level;
		unsigned n, out;  /* members, and one to fail after the swap */
	} lv[] = { { 1, 2, 0 }, { 10, 4, 0 }, { 5, 4, 3 } };

	tu_need_fault_injection();
	for (unsigned k = 0; k < sizeof(lv) / sizeof(lv[0]); k++) {
		struct graid_array_info info = { .struct_size = sizeof(info) };
		const char *paths[AU_MAX];
		struct graid_array *a;
		struct au_set s;
		char spec[400], *newp;

		au_make(&s, lv[k].n, HEAL_MEMBER_BYTES);
		cr_assert_eq(au_create(&s, lv[k].n, lv[k].level, 65536, &a), 0);
		cr_assert_eq(graid_array_info(a, &info), 0);
		heal_fill(a, info.size, 4);
		cr_assert_eq(graid_array_close(a), 0);
		snprintf(spec, sizeof(spec), "faulty:bad-block=8192,bad-block=2162688:%s",
			 s.paths[1]);
		for (unsigned i = 0; i < lv[k].n; i++)
			paths[i] = i == 1 ? spec : s.paths[i];
		cr_assert_eq(graid_array_open(paths, lv[k].n, NULL, &a), 0);
		newp = heal_new_member(&s, "new");
		cr_assert_eq(graid_array_replace_start(a, 1, newp, GRAID_REPLACE_WAIT), 0,
			     "RAID-%d", lv[k].level);
		cr_assert_str_eq(rk_member(a, 1).path, newp);
		cr_assert_eq(rk_member(a, 1).bad_blocks, 0, "RAID-%d lost blocks", lv[k].level);
		cr_assert_eq(graid_array_fail_member(a, lv[k].out), 0, "RAID-%d", lv[k].level);
		heal_verify(a, info.size, NULL, 4, "with the new device standing alone");
		graid_array_close(a);
		au_remove(&s);
	}
}

/*
 * A crash in the swap, after the new device's superblock and before the others': role 0's
 * superblock writes stall 3 s in the child, which is killed once the new device's own
 * superblock names it role 2. The next open, given every device, old and new, puts the new
 * device in role 2 (its superblock is the freshest) and leaves the old one out: the role
 * has one device, never none.
 */
Test(replace_keep, a_crash_between_the_swaps_superblocks_leaves_the_new_device, .timeout = 120)
{
	struct graid_member_probe pr = { .struct_size = sizeof(pr) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400], *newp;
	int status, i;
	pid_t pid;

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	graid_array_close(a);
	newp = heal_new_member(&s, "new");
	snprintf(spec, sizeof(spec), "faulty:sb-stall-us=3000000:%s", s.paths[0]);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *cp[5] = { spec, s.paths[1], s.paths[2], s.paths[3], s.paths[4] };

		if (graid_array_open(cp, 5, NULL, &a))
			_exit(2);
		graid_array_replace_start(a, 2, newp, GRAID_REPLACE_WAIT);
		_exit(3);
	}
	for (i = 0; i < 3000; i++) {
		if (graid_member_probe(newp, &pr) == 0 && pr.has_superblock && pr.role == 2)
			break;
		usleep(5000);
	}
	cr_assert_lt(i, 3000, "the new device never got its superblock");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the child ended by itself (status %d): no crash", status);
	au_wait_unlocked(s.paths, 5);
	au_wait_unlocked((const char *const *)&newp, 1);
	/* Caught between the two: the new device's superblock is the only one at the swap's event. */
	{
		uint64_t swap_events;

		cr_assert_eq(graid_member_probe(newp, &pr), 0);
		swap_events = pr.events;
		for (unsigned k = 1; k < 5; k++) {
			cr_assert_eq(graid_member_probe(s.paths[k], &pr), 0);
			cr_assert_lt(pr.events, swap_events, "member %u was written too", k);
		}
	}
	for (unsigned k = 0; k < 5; k++)
		paths[k] = s.paths[k];
	paths[5] = newp;
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0, "a role out after the crash");
	cr_assert_str_eq(rk_member(a, 2).path, newp, "the new device has the role");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, size, NULL, 3, "after a crash in the swap");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A block nothing can give (RAID-5 already degraded, the member unable to read it) costs
 * that block, not the replace: it is recorded lost on the new device, reads of it fail,
 * and the rest of the array reads back.
 */
Test(replace_keep, a_block_no_device_can_give_costs_only_that_block, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_bad_block bb[4];
	const char *paths[4];
	struct graid_array *a;
	struct au_set s;
	char spec[400], *newp;
	uint8_t *buf = aligned_alloc(BLK, BLK);

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 7);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:bad-block=8192:%s", s.paths[1]);
	for (unsigned i = 0; i < 4; i++)
		paths[i] = i == 1 ? spec : s.paths[i];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	newp = heal_new_member(&s, "new");
	cr_assert_eq(graid_array_replace_start(a, 1, newp, GRAID_REPLACE_WAIT), 0);
	cr_assert_str_eq(rk_member(a, 1).path, newp);
	cr_assert_eq(rk_member(a, 1).bad_blocks, 1, "the one block is recorded on the new device");
	cr_assert_eq(graid_array_bad_blocks(a, 1, bb, 4), 1);
	cr_assert_eq(bb[0].member_offset, 8192);
	cr_assert(bb[0].flags & GRAID_BAD_BLOCK_LOST);
	if (bb[0].array_offset != UINT64_MAX)
		cr_assert_lt(graid_array_read(a, buf, BLK, bb[0].array_offset), 0,
			     "a lost block read as data");
	{
		uint8_t *want = aligned_alloc(BLK, BLK);

		for (uint64_t off = 0; off < info.size; off += BLK) {
			if (off == bb[0].array_offset)
				continue;
			cr_assert_eq(graid_array_read(a, buf, BLK, off), BLK, "block at %llu",
				     (unsigned long long)off);
			heal_pattern(want, BLK, off, 7);
			cr_assert(!memcmp(buf, want, BLK), "block at %llu wrong",
				  (unsigned long long)off);
		}
		free(want);
	}
	graid_array_close(a);
	free(buf);
	au_remove(&s);
}

/* A write of the role failing on the new device after the copy's last batch: no swap. */
Test(replace_keep, review_dup_failure_after_last_batch, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400];
	struct rk_events ev;
	uint32_t *round;
	uint8_t *buf;
	struct graid_member_info mi;
	int i;

	tu_need_fault_injection();
	a = rk_raid6(&s, &ev, &size);
	rk_rate(a, 1u << 20);
	mi = rk_member(a, 3);
	(void)mi;
	snprintf(spec, sizeof(spec), "faulty:write-eio-after=64:%s", heal_new_member(&s, "new"));
	cr_assert_eq(graid_array_replace_start(a, 3, spec, 0), 0);
	for (i = 0; i < 6000; i++) {
		mi = rk_member(a, 3);
		if (!mi.replacing || (mi.replace_total && mi.replace_done == mi.replace_total))
			break;
		usleep(2000);
	}
	cr_log_info("done %llu total %llu replacing %d", (unsigned long long)mi.replace_done,
		    (unsigned long long)mi.replace_total, mi.replacing);
	cr_assert(mi.replacing, "the copy ended before its last batch");
	/* A full stripe at 0: every member written, role 3 too (its dup fails). */
	buf = aligned_alloc(BLK, 3 * 65536);
	heal_pattern(buf, 3 * 65536, 0, 9);
	cr_assert_eq(graid_array_write(a, buf, 3 * 65536, 0), 3 * 65536);
	rk_wait_done(a, 3);
	cr_log_info("path now %s; done=%u stopped=%u err=%d", rk_member(a, 3).path,
		    rk_count(&ev, GRAID_EVENT_REBUILD_DONE), rk_count(&ev, GRAID_EVENT_REBUILD_STOPPED),
		    ev.error[GRAID_EVENT_REBUILD_STOPPED]);
	round = calloc(size / BLK, sizeof(*round));
	for (uint64_t b = 0; b < size / BLK; b++)
		round[b] = b < 3 * 65536 / BLK ? 9 : 3;
	heal_verify(a, size, round, 0, "before failing");
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, size, round, 0, "with roles 0 and 1 failed");
	graid_array_close(a);
	au_remove(&s);
}

/* A block the copy recorded lost, then written after the copy passed it: valid data, not EIO. */
Test(replace_keep, review_lost_block_written_after_the_copy_passed, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[4];
	struct graid_array *a;
	struct au_set s;
	char spec[400], *newp;
	uint8_t *buf = aligned_alloc(BLK, 3 * 65536);
	uint32_t *round;
	int i;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 7);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:bad-block=8192:%s", s.paths[1]);
	for (unsigned k = 0; k < 4; k++)
		paths[k] = k == 1 ? spec : s.paths[k];
	cr_assert_eq(graid_array_open(paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	rk_rate(a, 1u << 20);
	newp = heal_new_member(&s, "new");
	cr_assert_eq(graid_array_replace_start(a, 1, newp, 0), 0);
	for (i = 0; i < 3000 && rk_member(a, 1).replace_done == 0; i++)
		usleep(2000);
	cr_assert(rk_member(a, 1).replacing);
	/* Stripe 0 whole, after the copy passed it: every block valid again. */
	heal_pattern(buf, 3 * 65536, 0, 11);
	cr_assert_eq(graid_array_write(a, buf, 3 * 65536, 0), 3 * 65536);
	rk_wait_done(a, 1);
	cr_log_info("path now %s bad_blocks %llu", rk_member(a, 1).path,
		    (unsigned long long)rk_member(a, 1).bad_blocks);
	round = calloc(info.size / BLK, sizeof(*round));
	for (uint64_t b = 0; b < info.size / BLK; b++)
		round[b] = b < 3 * 65536 / BLK ? 11 : 7;
	heal_verify(a, info.size, round, 0, "after the swap");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * The crash right after the new device's superblock landed, on a reused disk whose
 * bad-block log area held old bytes: the device owns the role now, so its log (and the rest
 * of what the role needs) must have been written before that superblock.
 */
Test(replace_keep, review_crash_after_new_sb_with_old_bytes_in_log_area, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char spec[400], *newp;
	uint32_t *round;
	int status, fd;
	pid_t pid;
	uint8_t junk[8192];

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	graid_array_close(a);
	newp = heal_new_member(&s, "new");
	memset(junk, 0xa5, sizeof(junk));
	fd = open(newp, O_RDWR);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, junk, sizeof(junk), 256 * 1024), (ssize_t)sizeof(junk));
	close(fd);
	/* Its first superblock is the swap's: the process dies the moment it is durable. */
	snprintf(spec, sizeof(spec), "faulty:sb-kill-after=1:%s", newp);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open((const char *const *)s.paths, 5, NULL, &a))
			_exit(2);
		graid_array_replace_start(a, 2, spec, GRAID_REPLACE_WAIT);
		_exit(3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child status %d", status);
	au_wait_unlocked(s.paths, 5);
	au_wait_unlocked((const char *const *)&newp, 1);
	for (unsigned k = 0; k < 5; k++)
		paths[k] = s.paths[k];
	paths[5] = newp;
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_log_info("nfailed %u, role 2 state %d path %s", info.nfailed, rk_member(a, 2).state,
		    rk_member(a, 2).path);
	cr_assert_str_eq(rk_member(a, 2).path, newp, "the new device does not hold the role");
	cr_assert_eq(info.nfailed, 0, "a role out after the crash");
	round = calloc(size / BLK, sizeof(*round));
	for (uint64_t b = 0; b < size / BLK; b++)
		round[b] = 3;
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, size, round, 0, "role 2 from its new device, roles 0 and 1 failed");
	free(round);
	graid_array_close(a);
	au_remove(&s);
}

/* A crash mid-copy from the hot spare after any superblock round: the spare is a spare again. */
Test(replace_keep, review_crash_mid_copy_from_spare_after_a_sb_round, .timeout = 120)
{
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *sp;
	int status;
	pid_t pid;

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	sp = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, sp), 0);
	graid_array_close(a);
	for (unsigned k = 0; k < 5; k++)
		paths[k] = s.paths[k];
	paths[5] = sp;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(paths, 6, NULL, &a))
			_exit(2);
		{
			struct graid_rebuild_options o = { .struct_size = sizeof(o),
							   .max_bytes_per_sec = 1u << 20 };
			graid_array_set_rebuild_options(a, &o);
		}
		if (graid_array_replace_start(a, 3, NULL, 0))
			_exit(4);
		usleep(300000);
		graid_array_fail_member(a, 0); /* any superblock round */
		usleep(300000);
		raise(SIGKILL);
		_exit(3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child status %d", status);
	au_wait_unlocked(s.paths, 5);
	au_wait_unlocked((const char *const *)&sp, 1);
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_log_info("spares after the crash: %u; role 0 on %s", rk_nspares(a), rk_member(a, 0).path);
	/* A spare again: the open may give it role 0 at once, the role failed by that round. */
	cr_assert(rk_nspares(a) == 1 || strcmp(rk_member(a, 0).path, sp) == 0,
		  "the hot spare is not a spare again");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A hot spare taken by a copy that stops for another reason than a cancel (here: more blocks
 * lost than a replace records) is healthy: it goes back to the spares, in memory and on disk.
 */
Test(replace_keep, a_spare_whose_copy_stopped_is_a_spare_again, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[5];
	struct graid_array *a;
	struct au_set s;
	char spec[2][400], *sp;

	tu_need_fault_injection();
	au_make(&s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 7);
	sp = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, sp), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* Members 1 and 3 read nothing: the copy can give no block of role 1. */
	for (unsigned k = 0; k < 4; k++) {
		paths[k] = s.paths[k];
		if (k == 1 || k == 3) {
			snprintf(spec[k / 2], sizeof(spec[0]), "faulty:read-eio-after=0:%s",
				 s.paths[k]);
			paths[k] = spec[k / 2];
		}
	}
	paths[4] = sp;
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), 0, "the spare is not a spare at open");
	cr_assert_eq(graid_array_replace_start(a, 1, NULL, GRAID_REPLACE_WAIT), -ENOSPC);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), 0, "the spare was let go");
	cr_assert_str_eq(mi.path, sp);
	cr_assert_str_neq(rk_member(a, 1).path, sp, "member 1 lost its role");
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned k = 0; k < 4; k++)
		paths[k] = s.paths[k];
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_member_info(a, 4, &mi), 0, "not a spare on disk");
	cr_assert_str_eq(mi.path, sp);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * graid_array_flush() during a copy reaches the new device too: a flush the new device
 * fails ends the copy there and then (its writes may not be durable), not at the swap.
 */
Test(replace_keep, a_flush_reaches_the_new_device, .timeout = 120)
{
	struct graid_array *a;
	struct au_set s;
	struct rk_events ev;
	uint64_t size;
	char spec[400], *newp;
	int i;

	tu_need_fault_injection();
	a = rk_raid6(&s, &ev, &size);
	rk_rate(a, 1u << 20);
	newp = heal_new_member(&s, "new");
	snprintf(spec, sizeof(spec), "faulty:flush-eio-after=0:%s", newp);
	cr_assert_eq(graid_array_replace_start(a, 2, spec, 0), 0);
	rk_wait_some(a, 2);
	cr_assert_eq(graid_array_flush(a), 0, "the caller's flush failed for the new device");
	/* The copy of 4 MiB at 1 MiB/s has seconds to go: it must stop at its next batch. */
	for (i = 0; i < 1500 && rk_member(a, 2).replacing; i++)
		usleep(1000);
	cr_assert(!rk_member(a, 2).replacing, "the copy went on after its device failed a flush");
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_REBUILD_STOPPED), 1);
	cr_assert_eq(ev.error[GRAID_EVENT_REBUILD_STOPPED], -EIO);
	cr_assert_str_neq(rk_member(a, 2).path, spec);
	cr_assert_str_neq(rk_member(a, 2).path, newp);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * The member failing mid-copy from the hot spare: the spare takes the role, and the
 * superblocks record it in the role only, no longer in a spare's slot too (after a reopen).
 */
Test(replace_keep, a_spare_taking_the_role_mid_copy_is_no_spare_on_disk, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint64_t size;
	char *sp;

	a = rk_raid6(&s, NULL, &size);
	sp = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, sp), 0);
	rk_rate(a, 1u << 20);
	cr_assert_eq(graid_array_replace_start(a, 2, NULL, 0), 0);
	rk_wait_some(a, 2);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	rk_rate(a, 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_str_eq(rk_member(a, 2).path, sp, "the spare took the role");
	cr_assert_eq(graid_array_close(a), 0);
	for (unsigned k = 0; k < 5; k++)
		paths[k] = s.paths[k];
	paths[5] = sp;
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_str_eq(rk_member(a, 2).path, sp, "the role is not the spare's on disk");
	cr_assert_eq(info.nfailed, 0);
	cr_assert_eq(rk_nspares(a), 0, "the device is a spare too");
	graid_array_close(a);
	au_remove(&s);
}

/* A critical verdict on a role does not move it onto a hot spare whose own drive is critical. */
Test(replace_keep, a_critical_spare_is_not_taken_for_a_critical_role, .timeout = 60)
{
	struct graid_health_options o = { .struct_size = sizeof(o), .interval_ms = 100,
					  .wear_percent = 90, .media_rising = 2,
					  .media_burst = 25, .media_window_s = 600 };
	char health[2][320], spec[2][700], *spare;
	const char *paths[5];
	struct rk_events ev;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;

	tu_need_fault_injection();
	a = rk_raid6(&s, NULL, &size);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(health[0], sizeof(health[0]), "%s/health1", s.dir);
	snprintf(health[1], sizeof(health[1]), "%s/health-spare", s.dir);
	rk_put(health[0], "available_spare 100\nspare_threshold 10\n");
	rk_put(health[1], "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	snprintf(spec[0], sizeof(spec[0]), "faulty:health=%s:%s", health[0], s.paths[1]);
	for (unsigned i = 0; i < 5; i++)
		paths[i] = i == 1 ? spec[0] : s.paths[i];
	cr_assert_eq(graid_array_open(paths, 5, NULL, &a), 0);
	memset(&ev, 0, sizeof(ev));
	pthread_mutex_init(&ev.lock, NULL);
	cr_assert_eq(graid_array_set_event_callback(a, rk_event_cb, &ev), 0);
	spare = heal_new_member(&s, "spare");
	snprintf(spec[1], sizeof(spec[1]), "faulty:health=%s:%s", health[1], spare);
	cr_assert_eq(graid_array_add_spare(a, spec[1]), 0);
	cr_assert_eq(graid_array_set_health_options(a, &o), 0);
	for (int i = 0; i < 200 && !rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL); i++)
		usleep(10000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL), 1, "the spare was not judged");
	cr_assert_eq(ev.member[GRAID_EVENT_HEALTH_CRITICAL], 5);
	rk_put(health[0], "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	for (int i = 0; i < 200 && rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL) < 2; i++)
		usleep(10000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_HEALTH_CRITICAL), 2, "role 1 was not judged");
	usleep(500000);
	cr_assert_eq(rk_count(&ev, GRAID_EVENT_SPARE_ACTIVATED), 0, "the critical spare was taken");
	cr_assert_eq(rk_member(a, 1).replacing, 0);
	cr_assert_eq(rk_nspares(a), 1);
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A journalled array: the new device's journal is the role's after the swap (the checkpoint
 * it took when the copy began, every entry since), so an unclean end after the swap replays
 * with it in the role and every byte reads back with it standing alone for the role.
 */
Test(replace_keep, a_journalled_role_replaced_then_an_unclean_end_replays, .timeout = 300)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = 65536, .backend = "isal",
					  .flags = GRAID_CREATE_JOURNAL | GRAID_CREATE_FORCE };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	uint32_t *round;
	int status;
	pid_t pid;

	au_make(&s, 6, 40u << 20);
	cr_assert_eq(graid_array_create(s.paths, 5, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	cr_assert_eq(graid_array_close(a), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (graid_array_open(s.paths, 5, NULL, &a))
			_exit(2);
		if (graid_array_replace_start(a, 2, s.paths[5], GRAID_REPLACE_WAIT))
			_exit(4);
		heal_fill(a, info.size / 2, 8);
		if (graid_array_flush(a))
			_exit(5);
		raise(SIGKILL);
		_exit(3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child status %d", status);
	au_wait_unlocked(s.paths, 6);
	for (unsigned k = 0; k < 6; k++)
		paths[k] = s.paths[k];
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	cr_assert_str_eq(rk_member(a, 2).path, s.paths[5]);
	round = calloc(info.size / BLK, sizeof(*round));
	for (uint64_t b = 0; b < info.size / BLK; b++)
		round[b] = b < info.size / 2 / BLK ? 8 : 3;
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, info.size, round, 0, "role 2 on its new device, after the replay");
	free(round);
	graid_array_close(a);
	au_remove(&s);
}

struct rk_waiter {
	struct graid_array *a;
	char *path;
	int rc;
	atomic_bool returned;
};

static void *rk_replace_waiting(void *arg)
{
	struct rk_waiter *w = arg;

	w->rc = graid_array_replace_start(w->a, 2, w->path, GRAID_REPLACE_WAIT);
	atomic_store(&w->returned, true);
	return NULL;
}

/* A close while another thread's GRAID_REPLACE_WAIT copy runs stops it and waits for that call. */
Test(replace_keep, a_close_waits_for_a_waiting_replace_on_another_thread, .timeout = 120)
{
	struct rk_waiter w = { 0 };
	struct au_set s;
	uint64_t size;
	pthread_t t;
	int i;

	w.a = rk_raid6(&s, NULL, &size);
	rk_rate(w.a, 1u << 20);
	w.path = heal_new_member(&s, "new");
	cr_assert_eq(pthread_create(&t, NULL, rk_replace_waiting, &w), 0);
	for (i = 0; i < 3000 && rk_member(w.a, 2).replace_done == 0; i++)
		usleep(2000);
	cr_assert(rk_member(w.a, 2).replacing, "the copy did not start");
	graid_array_close(w.a);
	cr_assert(atomic_load(&w.returned), "the close returned before the waiting replace did");
	pthread_join(t, NULL);
	cr_assert_eq(w.rc, -ECANCELED);
	au_remove(&s);
}

/* The percents of the REBUILD_PROGRESS events of one role, in order. */
struct rk_progress {
	unsigned pct[128];
	unsigned n;
	int member;
};

static void rk_progress_cb(void *arg, const struct graid_event *ev)
{
	struct rk_progress *p = arg;

	if (ev->type != GRAID_EVENT_REBUILD_PROGRESS || p->n >= 128)
		return;
	p->member = ev->member;
	p->pct[p->n++] = (unsigned)ev->count;
}

/* Its progress events at the step graid_event_options set, ending at 100; none at 0. */
Test(replace_keep, progress_follows_the_event_options, .timeout = 120)
{
	struct graid_event_options eo = { .struct_size = sizeof(eo), .progress_percent = 30 };
	static struct rk_progress p;
	struct graid_array *a;
	struct au_set s;
	uint64_t size;

	a = rk_raid6(&s, NULL, &size);
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	cr_assert_eq(graid_array_set_event_callback(a, rk_progress_cb, &p), 0);
	cr_assert_eq(graid_array_replace_start(a, 2, heal_new_member(&s, "new"),
					       GRAID_REPLACE_WAIT), 0);
	cr_assert_eq(p.n, 4, "%u progress events", p.n);
	cr_expect_eq(p.pct[0], 30);
	cr_expect_eq(p.pct[1], 60);
	cr_expect_eq(p.pct[2], 90);
	cr_expect_eq(p.pct[3], 100);
	cr_expect_eq(p.member, 2);
	/* No progress events at all. */
	eo.progress_percent = 0;
	cr_assert_eq(graid_array_set_event_options(a, &eo), 0);
	p.n = 0;
	cr_assert_eq(graid_array_replace_start(a, 3, heal_new_member(&s, "newer"),
					       GRAID_REPLACE_WAIT), 0);
	cr_expect_eq(p.n, 0, "%u progress events with progress_percent 0", p.n);
	graid_array_close(a);
	au_remove(&s);
}

static atomic_ullong rk_dropped = ULLONG_MAX;

/* Keeps the count of updates the journal replay dropped, from its summary line. */
static void rk_replay_log(void *arg, int level, const char *msg)
{
	const char *p = strstr(msg, "updates replayed, ");
	unsigned long long n;

	(void)arg;
	(void)level;
	if (p && sscanf(p, "updates replayed, %llu dropped", &n) == 1)
		atomic_store(&rk_dropped, n);
}

struct rk_jwriter {
	struct graid_array *a;
	atomic_bool stop;
};

/* Small writes across the stripes, one journal entry each, until told to stop. */
static void *rk_jwrite_on(void *arg)
{
	struct rk_jwriter *w = arg;
	uint8_t *b = aligned_alloc(4096, 4096);

	memset(b, 0x5a, 4096);
	while (!atomic_load(&w->stop))
		for (uint64_t off = 0; off < (8u << 20) && !atomic_load(&w->stop);
		     off += 65536 * 3 + 4096)
			if (graid_array_write(w->a, b, 4096, off) != 4096)
				break;
	free(b);
	return NULL;
}

/*
 * Journal entries logged while the new device's flushes stall (its journal checkpoint among
 * them) reach it as well: after a crash past the swap, the replay drops no finished update.
 */
Test(replace_keep, journal_entries_around_the_new_devices_checkpoint_reach_it, .timeout = 300)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 6,
					  .chunk_bytes = 65536, .backend = "isal",
					  .flags = GRAID_CREATE_JOURNAL | GRAID_CREATE_FORCE };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[6];
	struct graid_array *a;
	struct au_set s;
	char spec[PATH_MAX + 64];
	int status;
	pid_t pid;

	tu_need_fault_injection();
	au_make(&s, 6, 40u << 20);
	cr_assert_eq(graid_array_create(s.paths, 5, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:flush-stall-us=300000:%s", s.paths[5]);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct rk_jwriter w = { 0 };
		pthread_t t;
		int rc;

		if (graid_array_open(s.paths, 5, NULL, &w.a))
			_exit(2);
		if (pthread_create(&t, NULL, rk_jwrite_on, &w))
			_exit(3);
		usleep(20000);
		rc = graid_array_replace_start(w.a, 2, spec, GRAID_REPLACE_WAIT);
		atomic_store(&w.stop, true);
		pthread_join(t, NULL);
		if (rc)
			_exit(4);
		raise(SIGKILL);
		_exit(5);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child status %d", status);
	au_wait_unlocked(s.paths, 6);
	for (unsigned k = 0; k < 6; k++)
		paths[k] = s.paths[k];
	graid_log_set(rk_replay_log, NULL, GRAID_LOG_DEBUG);
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	graid_log_set(NULL, NULL, 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_str_eq(rk_member(a, 2).path, s.paths[5]);
	cr_assert_gt(info.journal_replayed, 0);
	cr_assert_eq(atomic_load(&rk_dropped), 0, "the replay dropped %llu updates",
		     atomic_load(&rk_dropped));
	graid_array_close(a);
	au_remove(&s);
}

struct rk_replacer {
	struct graid_array *a;
	unsigned role;
	const char *path;
	int rc;
};

static void *rk_replace_on(void *arg)
{
	struct rk_replacer *r = arg;

	r->rc = graid_array_replace_start(r->a, r->role, r->path, GRAID_REPLACE_WAIT);
	return NULL;
}

/*
 * A write-zeroes whose zeroing of the old device is held past the swap still reaches the
 * new device: read from the new device alone, the range is zeroes.
 */
Test(replace_keep, write_zeroes_straddling_the_swap_reach_the_new_device, .timeout = 120)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .max_bytes_per_sec = 4u << 20 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rk_replacer rp = { 0 };
	const char *paths[2];
	uint8_t *buf, *zero;
	struct graid_array *a;
	char spec[PATH_MAX + 64];
	struct au_set s;
	pthread_t t;

	tu_need_fault_injection();
	au_make(&s, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 2, 1, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, sizeof(spec), "faulty:zero-stall-us=3000000:%s", s.paths[0]);
	paths[0] = spec;
	paths[1] = s.paths[1];
	cr_assert_eq(graid_array_open(paths, 2, NULL, &a), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
	rp.a = a;
	rp.path = heal_new_member(&s, "new");
	cr_assert_eq(pthread_create(&t, NULL, rk_replace_on, &rp), 0);
	usleep(400000); /* the copy is past the range, not yet at its end */
	cr_assert_eq(graid_array_write_zeroes(a, 0, 65536), 0);
	pthread_join(t, NULL);
	cr_assert_eq(rp.rc, 0);
	cr_assert_str_eq(rk_member(a, 0).path, rp.path);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	buf = aligned_alloc(4096, 65536);
	zero = calloc(1, 65536);
	cr_assert_eq(graid_array_read(a, buf, 65536, 0), 65536);
	cr_assert(!memcmp(buf, zero, 65536), "the new device missed the zeroes");
	free(buf);
	free(zero);
	graid_array_close(a);
	au_remove(&s);
}

/* Flushes of each member from graid_array_open() to its return (an unclean end flushes more). */
#define RK_OPEN_FLUSHES 2

static atomic_int rk_late_errors;

static void rk_late_log(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	if (strstr(msg, "a late error of the device it replaced"))
		atomic_fetch_add(&rk_late_errors, 1);
}

/*
 * A flush that began on the old device before the swap and fails after it is that device's
 * late error: the role, on its new device now, stays active.
 */
Test(replace_keep, a_late_flush_error_of_the_old_device_spares_the_new_one, .timeout = 120)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .max_bytes_per_sec = 4u << 20 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct rk_replacer rp = { 0 };
	const char *paths[2];
	struct graid_array *a;
	char spec[PATH_MAX + 64];
	struct au_set s;
	pthread_t t;

	tu_need_fault_injection();
	au_make(&s, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 2, 1, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	cr_assert_eq(graid_array_close(a), 0);
	/*
	 * The open's flushes pass; the next, the one below, takes 2 s and fails: it outlasts
	 * the copy and the swap.
	 */
	snprintf(spec, sizeof(spec), "faulty:flush-eio-stall-us=2000000,flush-eio-after=%d:%s",
		 RK_OPEN_FLUSHES, s.paths[0]);
	paths[0] = spec;
	paths[1] = s.paths[1];
	cr_assert_eq(graid_array_open(paths, 2, NULL, &a), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
	rp.a = a;
	rp.path = heal_new_member(&s, "new");
	graid_log_set(rk_late_log, NULL, GRAID_LOG_DEBUG);
	cr_assert_eq(pthread_create(&t, NULL, rk_replace_on, &rp), 0);
	usleep(300000);
	(void)graid_array_flush(a);
	pthread_join(t, NULL);
	cr_assert_eq(rp.rc, 0);
	cr_assert_str_eq(rk_member(a, 0).path, rp.path);
	cr_assert_eq(rk_member(a, 0).state, GRAID_MEMBER_ACTIVE, "the new device was failed");
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 0);
	graid_log_set(NULL, NULL, 0);
	cr_assert_geq(atomic_load(&rk_late_errors), 1, "the old device's flush did not fail late");
	graid_array_close(a);
	au_remove(&s);
}
