/* SPDX-License-Identifier: MIT */
/* Replace and rebuild online, hot spares, resumed rebuilds, and scrub that finds and heals rot. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define HEAL_MEMBER_BYTES ((1u << 20) + (4u << 20))

static void heal_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t round)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = ((off + i) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)round << 40);

		memcpy(p + i, &v, 8);
	}
}

static void heal_fill(struct graid_array *a, uint64_t size, uint32_t round)
{
	uint8_t *buf = malloc(1 << 20);

	for (uint64_t off = 0; off < size; off += 1 << 20) {
		size_t n = size - off < (1 << 20) ? (size_t)(size - off) : (1 << 20);

		heal_pattern(buf, n, off, round);
		cr_assert_eq(graid_array_write(a, buf, n, off), (ssize_t)n);
	}
	free(buf);
}

/* Every 4 KiB block holds the pattern of round[block] (NULL: all `round0`). */
static void heal_verify(struct graid_array *a, uint64_t size, const uint32_t *round,
			uint32_t round0, const char *when)
{
	uint8_t *got = malloc(4096), *want = malloc(4096);

	for (uint64_t b = 0; b < size / 4096; b++) {
		heal_pattern(want, 4096, b * 4096, round ? round[b] : round0);
		cr_assert_eq(graid_array_read(a, got, 4096, b * 4096), 4096, "%s: read", when);
		cr_assert_eq(memcmp(got, want, 4096), 0, "%s: block %llu wrong", when,
			     (unsigned long long)b);
	}
	free(got);
	free(want);
}

static char *heal_new_member(struct au_set *s, const char *name)
{
	static char path[AU_MAX][320];
	static unsigned n;
	char *p = path[n++ % AU_MAX];
	int fd;

	snprintf(p, 320, "%s/%s", s->dir, name);
	fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, HEAL_MEMBER_BYTES), 0);
	close(fd);
	return p;
}

struct heal_writer {
	struct graid_array *a;
	uint64_t size;
	unsigned id;
	uint32_t *round;
	volatile bool *stop;
	int failures;
};

/* Rewrites its own blocks (b % 2 == id) again and again while the rebuild runs. */
static void *heal_writer_main(void *arg)
{
	struct heal_writer *w = arg;
	uint8_t *buf = malloc(4096);
	uint32_t r = 100;

	while (!*w->stop) {
		for (uint64_t b = w->id; b < w->size / 4096 && !*w->stop; b += 2 * 7) {
			heal_pattern(buf, 4096, b * 4096, r);
			if (graid_array_write(w->a, buf, 4096, b * 4096) != 4096)
				w->failures++;
			else
				w->round[b] = r;
		}
		r++;
	}
	free(buf);
	return NULL;
}

struct heal_progress {
	uint64_t last, total;
	int calls, backwards;
};

static void heal_progress_cb(void *arg, uint64_t done, uint64_t total)
{
	struct heal_progress *p = arg;

	if (done < p->last)
		p->backwards++;
	p->last = done;
	p->total = total;
	p->calls++;
}

static void heal_rebuild_under_writes(int level, unsigned n, uint32_t chunk, unsigned victim,
				      const unsigned *lose_after, unsigned nlose_after)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_progress prog = { 0 };
	struct heal_writer w[2];
	volatile bool stop = false;
	pthread_t th[2];
	struct graid_array *a;
	struct au_set s;
	uint32_t *round;

	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	round = calloc(info.size / 4096, sizeof(*round));
	heal_fill(a, info.size, 7);
	for (uint64_t b = 0; b < info.size / 4096; b++)
		round[b] = 7;
	cr_assert_eq(graid_array_fail_member(a, victim), 0);
	cr_assert_eq(graid_array_replace_member(a, victim, heal_new_member(&s, "new")), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[victim], GRAID_MEMBER_REBUILDING);
	for (unsigned i = 0; i < 2; i++) {
		w[i] = (struct heal_writer){ .a = a, .size = info.size, .id = i, .round = round,
					     .stop = &stop };
		pthread_create(&th[i], NULL, heal_writer_main, &w[i]);
	}
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	cr_assert_gt(prog.calls, 1);
	cr_assert_eq(prog.backwards, 0, "progress went backwards");
	cr_assert_eq(prog.last, prog.total, "progress ended at %llu of %llu",
		     (unsigned long long)prog.last, (unsigned long long)prog.total);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[victim], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(info.nfailed, 0);
	/* The rebuilt member must now carry its share: lose members other than it. */
	for (unsigned i = 0; i < nlose_after; i++)
		cr_assert_eq(graid_array_fail_member(a, lose_after[i]), 0);
	heal_verify(a, info.size, round, 0, "after rebuild and losing others");
	cr_assert_eq(graid_array_close(a), 0);
	free(round);
	au_remove(&s);
}

Test(heal, raid6_rebuild_under_writes_then_losing_two_others, .timeout = 300)
{
	unsigned lose[2] = { 0, 4 };

	heal_rebuild_under_writes(6, 6, 16384, 2, lose, 2);
}

Test(heal, raid5_rebuild_under_writes_then_losing_another, .timeout = 300)
{
	unsigned lose[1] = { 3 };

	heal_rebuild_under_writes(5, 4, 4096, 1, lose, 1);
}

Test(heal, raid1_rebuild_under_writes_then_losing_the_old_copy, .timeout = 300)
{
	unsigned lose[1] = { 0 };

	heal_rebuild_under_writes(1, 2, 8192, 1, lose, 1);
}

Test(heal, raid10_rebuild_under_writes_then_losing_its_partner, .timeout = 300)
{
	unsigned lose[1] = { 1 };

	heal_rebuild_under_writes(10, 4, 4096, 0, lose, 1);
}

Test(heal, replace_refuses_active_roles_and_foreign_members)
{
	struct graid_array *a, *b;
	struct au_set s, t;
	char *fresh;

	au_make(&s, 4, HEAL_MEMBER_BYTES);
	au_make(&t, 2, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 4, 5, 4096, &a), 0);
	cr_assert_eq(au_create(&t, 2, 1, 4096, &b), 0);
	graid_array_close(b);
	fresh = heal_new_member(&s, "fresh");
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), -EBUSY);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_replace_member(a, 1, t.paths[0]), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, s.paths[2]), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, "/nonexistent"), -ENOENT);
	cr_assert_eq(graid_array_replace_member(a, 9, fresh), -EINVAL);
	cr_assert_eq(graid_array_replace_member(a, 1, fresh), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	graid_array_close(a);
	au_remove(&s);
	au_remove(&t);
}

Test(heal, a_hot_spare_takes_over_a_failed_member, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array *a;
	struct au_set s;
	char *spare;

	au_make(&s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 8192, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 3);
	spare = heal_new_member(&s, "spare");
	cr_assert_eq(graid_array_add_spare(a, spare), 0);
	cr_assert_eq(graid_array_member_info(a, 5, &mi), 0, "the spare is listed after the roles");
	cr_assert_eq(mi.state, GRAID_MEMBER_SPARE);
	cr_assert_str_eq(mi.path, spare);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	/* The spare is rebuilding in the background; this waits for it (or does it). */
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[3], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_member_info(a, 3, &mi), 0);
	cr_assert_str_eq(mi.path, spare);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	heal_verify(a, info.size, NULL, 3, "after the spare took over and two more failed");
	graid_array_close(a);
	au_remove(&s);
}

static volatile uint64_t heal_kill_at;

static void heal_kill_cb(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	(void)total;
	if (done >= heal_kill_at)
		kill(getpid(), SIGKILL);
}

/*
 * RAID-5 of 4 members, 4 KiB chunks, filled with pattern 9, role 2 replaced by "new" (not
 * rebuilt yet) and the array closed; @p members: the paths to open it with.
 */
static void heal_raid5_role2_replaced_closed(struct au_set *s, const char **members,
					     char *newpath, size_t len)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;

	au_make(s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(s, 4, 5, 4096, &a), 0);
	memcpy(members, s->paths, 4 * sizeof(*members));
	cr_assert_eq(graid_array_info(a, &info), 0);
	heal_fill(a, info.size, 9);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(s, "new")), 0);
	graid_array_close(a);
	snprintf(newpath, len, "%s/new", s->dir);
	members[2] = newpath;
}

/* A rebuild killed half way resumes from its checkpoint, not from the start. */
Test(heal, a_killed_rebuild_resumes_from_its_checkpoint, .timeout = 300)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 2u << 20 };
	struct heal_progress prog = { 0 };
	const char *members[4];
	char newpath[320];
	struct graid_array *a;
	struct au_set s;
	pid_t pid;
	int status;

	heal_raid5_role2_replaced_closed(&s, members, newpath, sizeof(newpath));

	pid = fork();
	if (pid == 0) {
		/* 4 MiB at 2 MiB/s: the 1 s checkpoint lands before the kill at 3 MiB. */
		if (graid_array_open(members, 4, NULL, &a) ||
		    graid_array_replace_member(a, 2, heal_new_member(&s, "new2")) != -EBUSY)
			_exit(3);
		graid_array_set_rebuild_options(a, &ro);
		heal_kill_at = 3u << 20;
		graid_array_rebuild(a, heal_kill_cb, NULL);
		_exit(4); /* never reached */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
	au_wait_unlocked(members, 4); /* the dead child's ring lets go of its files */
	cr_assert_eq(graid_array_open(members, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_REBUILDING);
	{
		/*
		 * Below its checkpoint the rebuilding member is in sync, and reads use it (as md
		 * does) instead of reconstructing its chunks: the rebuild only writes to it, so
		 * every byte read from it here is a foreground read.
		 */
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		heal_verify(a, 3u << 20, NULL, 9, "below the checkpoint, before resuming");
		cr_assert_eq(graid_array_member_info(a, 2, &mi), 0);
		cr_assert_gt(mi.read_bytes, 0, "reads below the checkpoint avoided member 2");
	}
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	cr_assert_lt(prog.total, 4u << 20, "resumed rebuild redid %llu bytes of 4 MiB",
		     (unsigned long long)prog.total);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "after a resumed rebuild");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * The pipelined rebuild keeps one batch's writes in flight while it locks and reads the
 * next. Writers race it with runs of 1-4 blocks at random places (each writer owns every
 * other 16 KiB group, so the in-memory copy knows each block's last write), a scrubber
 * takes its own stripe locks all along, then members other than the rebuilt ones are lost
 * and everything must read back as last written.
 */
struct heal_racer {
	struct graid_array *a;
	uint64_t size;
	unsigned id;
	uint32_t *round;
	volatile bool *stop;
	uint64_t seed;
	int failures;
	unsigned writes;
};

static uint64_t heal_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *heal_racer_main(void *arg)
{
	struct heal_racer *w = arg;
	uint8_t *buf = malloc(4 * 4096);
	uint64_t groups = w->size / (4 * 4096), s = w->seed;
	uint32_t r = 1000 + w->id;

	while (!*w->stop) {
		uint64_t g = heal_rand(&s) % groups / 2 * 2 + w->id;
		unsigned first = (unsigned)(heal_rand(&s) % 4);
		unsigned nb = 1 + (unsigned)(heal_rand(&s) % (4 - first));
		uint64_t b0 = g * 4 + first;

		if (g >= groups)
			continue;
		for (unsigned k = 0; k < nb; k++)
			heal_pattern(buf + k * 4096, 4096, (b0 + k) * 4096, r);
		if (graid_array_write(w->a, buf, nb * 4096, b0 * 4096) != (ssize_t)nb * 4096) {
			w->failures++;
		} else {
			for (unsigned k = 0; k < nb; k++)
				w->round[b0 + k] = r;
			w->writes++;
		}
		r += 2;
	}
	free(buf);
	return NULL;
}

struct heal_scrubber {
	struct graid_array *a;
	volatile bool *stop;
	int failures;
	unsigned runs;
};

static void *heal_scrubber_main(void *arg)
{
	struct heal_scrubber *sc = arg;

	while (!*sc->stop) {
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		if (graid_array_scrub(sc->a, 0, &rep))
			sc->failures++;
		sc->runs++;
	}
	return NULL;
}

static void heal_pipelined(int level, unsigned n, uint32_t chunk, const unsigned *victims,
			   unsigned nvictims, const unsigned *lose, unsigned nlose)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_progress prog = { 0 };
	struct heal_racer w[2];
	struct heal_scrubber sc = { 0 };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	volatile bool stop = false;
	uint64_t seed = tu_seed();
	pthread_t th[3];
	struct graid_array *a;
	struct au_set s;
	uint32_t *round;
	char name[32];

	cr_log_info("seed %llu", (unsigned long long)seed);
	au_make(&s, n, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	round = calloc(info.size / 4096, sizeof(*round));
	heal_fill(a, info.size, 5);
	for (uint64_t b = 0; b < info.size / 4096; b++)
		round[b] = 5;
	for (unsigned i = 0; i < nvictims; i++)
		cr_assert_eq(graid_array_fail_member(a, victims[i]), 0);
	for (unsigned i = 0; i < nvictims; i++) {
		snprintf(name, sizeof(name), "new%u", i);
		cr_assert_eq(graid_array_replace_member(a, victims[i], heal_new_member(&s, name)),
			     0);
	}
	/* About a second of rebuilding: many batches, each raced by many writes. */
	ro.max_bytes_per_sec = 4u << 20;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	sc = (struct heal_scrubber){ .a = a, .stop = &stop };
	for (unsigned i = 0; i < 2; i++) {
		w[i] = (struct heal_racer){ .a = a, .size = info.size, .id = i, .round = round,
					    .stop = &stop, .seed = seed * 2 + i + 1 };
		pthread_create(&th[i], NULL, heal_racer_main, &w[i]);
	}
	pthread_create(&th[2], NULL, heal_scrubber_main, &sc);
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(w[i].failures, 0);
	}
	pthread_join(th[2], NULL);
	cr_assert_eq(sc.failures, 0, "scrub failed while the rebuild ran");
	cr_log_info("racing writes %u + %u, scrubs %u", w[0].writes, w[1].writes, sc.runs);
	cr_assert_eq(prog.backwards, 0, "progress went backwards");
	cr_assert_eq(prog.last, prog.total);
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (unsigned i = 0; i < nvictims; i++)
		cr_assert_eq(info.member_state[victims[i]], GRAID_MEMBER_ACTIVE);
	/* Rebuilt data and parity must agree before anything else is lost. */
	{
		struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

		cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
		cr_assert_eq(rep.mismatches, 0, "scrub after the rebuild: %llu mismatches",
			     (unsigned long long)rep.mismatches);
	}
	for (unsigned i = 0; i < nlose; i++)
		cr_assert_eq(graid_array_fail_member(a, lose[i]), 0);
	heal_verify(a, info.size, round, 0, "after a pipelined rebuild and losing others");
	cr_assert_eq(graid_array_close(a), 0);
	free(round);
	au_remove(&s);
}

Test(heal, raid6_two_rebuilt_at_once_under_racing_writes_and_scrubs_then_two_others_lost,
     .timeout = 300)
{
	unsigned victims[2] = { 1, 4 }, lose[2] = { 0, 5 };

	heal_pipelined(6, 6, 4096, victims, 2, lose, 2);
}

Test(heal, raid5_large_chunks_rebuilt_under_racing_writes_and_scrubs_then_another_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 2 }, lose[1] = { 0 };

	heal_pipelined(5, 5, 65536, victims, 1, lose, 1);
}

Test(heal, raid10_rebuilt_under_racing_writes_and_scrubs_then_its_partner_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 2 }, lose[1] = { 3 };

	heal_pipelined(10, 4, 4096, victims, 1, lose, 1);
}

Test(heal, raid1_rebuilt_under_racing_writes_and_scrubs_then_the_old_copy_lost,
     .timeout = 300)
{
	unsigned victims[1] = { 0 }, lose[1] = { 1 };

	heal_pipelined(1, 2, 16384, victims, 1, lose, 1);
}

/*
 * The member being rebuilt fails on a foreground write and is replaced (or a spare takes
 * over) while the rebuild runs. The new device starts at row 0: the running pass must not
 * carry on from where the old device was and call the new one in sync (it did once: rows
 * before the swap were never written to the new device, and read back wrong).
 */
struct heal_swap {
	struct graid_array *a;
	struct au_set *s;
	uint64_t size;
	uint32_t row_bytes;
	unsigned victim;
	int done;
	int fail_rc, write_rc, replace_rc;
	struct heal_progress prog;
};

static void heal_swap_cb(void *arg, uint64_t done, uint64_t total)
{
	struct heal_swap *h = arg;
	uint8_t *buf;

	heal_progress_cb(&h->prog, done, total);
	if (h->done || done == 0)
		return;
	h->done = 1;
	h->fail_rc = graid_array_fail_member(h->a, h->victim);
	/* A full-stripe write to the last row, degraded now. */
	buf = malloc(h->row_bytes);
	heal_pattern(buf, h->row_bytes, h->size - h->row_bytes, 9);
	h->write_rc = (int)graid_array_write(h->a, buf, h->row_bytes, h->size - h->row_bytes);
	free(buf);
	h->replace_rc = graid_array_replace_member(h->a, h->victim,
						   heal_new_member(h->s, "new2"));
}

/* RAID-5 of 4 members, chunks of @p chunk bytes, filled with pattern 9, role 2 failed. */
static struct graid_array *heal_raid5_role2_failed(struct au_set *s, uint32_t chunk,
						   struct graid_array_info *info)
{
	struct graid_array *a;

	au_make(s, 4, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(s, 4, 5, chunk, &a), 0);
	cr_assert_eq(graid_array_info(a, info), 0);
	heal_fill(a, info->size, 9);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	return a;
}

/* Role 2 of @p a replaced by a new member whose writes fail after the first one. */
static void heal_replace_with_failing_writes(struct au_set *s, struct graid_array *a)
{
	char faulty[400];

	snprintf(faulty, sizeof(faulty), "faulty:write-eio-after=1:%s",
		 heal_new_member(s, "new"));
	cr_assert_eq(graid_array_replace_member(a, 2, faulty), 0);
}

Test(heal, a_member_replaced_during_its_own_rebuild_is_rebuilt_from_the_start, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_swap h = { 0 };
	struct graid_array *a;
	struct au_set s;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	h = (struct heal_swap){ .a = a, .s = &s, .size = info.size, .row_bytes = 3 * 4096,
				.victim = 2 };
	cr_assert_eq(graid_array_rebuild(a, heal_swap_cb, &h), 0);
	cr_assert_eq(h.fail_rc, 0, "failing the member being rebuilt: %d", h.fail_rc);
	cr_assert_eq(h.prog.backwards, 0, "progress went backwards over the second pass");
	cr_assert_eq(h.prog.last, h.prog.total, "progress ended at %llu of %llu",
		     (unsigned long long)h.prog.last, (unsigned long long)h.prog.total);
	cr_assert_eq(h.write_rc, (int)h.row_bytes, "the degraded write: %d", h.write_rc);
	cr_assert_eq(h.replace_rc, 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	heal_verify(a, info.size, NULL, 9, "after the rebuilt member was replaced mid-rebuild");
	graid_array_close(a);
	au_remove(&s);
}

/* The new member fails under its own rebuild: the rebuild stops, the data stays whole. */
Test(heal, a_new_member_failing_during_its_rebuild_stops_it_with_eio, .timeout = 120)
{
	tu_need_fault_injection();
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), -EIO);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_FAILED);
	heal_verify(a, info.size, NULL, 9, "degraded, after the new member failed");
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new2")), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "with the second new member standing in for another");
	graid_array_close(a);
	au_remove(&s);
}

/*
 * A new member whose writes fail while several of its writes are in flight (64 KiB chunks:
 * many writes per batch, two batches' writes at once): a hot spare takes its role at the
 * first failure and must not be failed by the old device's later ones.
 */
Test(heal, a_spare_is_not_blamed_for_late_errors_of_the_member_it_replaced, .timeout = 120)
{
	tu_need_fault_injection();
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct au_set s;

	a = heal_raid5_role2_failed(&s, 64 * 1024, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_add_spare(a, heal_new_member(&s, "spare")), 0);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE,
		     "role 2 is %d after the spare's rebuild", info.member_state[2]);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "with the spare standing in for another");
	graid_array_close(a);
	au_remove(&s);
}

static void *heal_rebuild_main(void *arg)
{
	graid_array_rebuild(arg, NULL, NULL);
	return NULL;
}

/*
 * Power lost during a rebuild, in the middle of a write to a row below the rebuild's
 * checkpoint whose data lies on the member being rebuilt: the data landed, the parity did
 * not. Reopening resyncs that dirty row, reading the rebuilding member there (it is in
 * sync below its checkpoint), so parity agrees with the data again.
 */
Test(heal, a_torn_write_below_the_rebuild_checkpoint_is_resynced, .timeout = 300)
{
	tu_need_fault_injection();
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 1u << 20 };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct heal_progress prog = { 0 };
	const char *members[4];
	char newpath[320], faulty[400];
	struct graid_array *a;
	struct au_set s;
	int status;
	pid_t pid;

	heal_raid5_role2_replaced_closed(&s, members, newpath, sizeof(newpath));

	pid = fork();
	if (pid == 0) {
		const char *cm[4] = { members[0], members[1], members[2], faulty };
		uint8_t *buf = malloc(4096);
		pthread_t th;

		/* Member 3 holds row 0's parity; its first data-path write kills us. */
		snprintf(faulty, sizeof(faulty), "faulty:kill-after=0:%s", members[3]);
		if (graid_array_open(cm, 4, NULL, &a))
			_exit(3);
		graid_array_set_rebuild_options(a, &ro);
		pthread_create(&th, NULL, heal_rebuild_main, a);
		/*
		 * 4 MiB at 1 MiB/s in 1 MiB batches, the last unpaced: about 3 s in all, and a
		 * checkpoint past row 0 on disk after about a second.
		 */
		usleep(1700 * 1000);
		/* Row 0's third data chunk, on member 2: data to member 2, parity to member 3. */
		heal_pattern(buf, 4096, 8192, 10);
		graid_array_write(a, buf, 4096, 8192);
		_exit(4); /* never reached */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
	au_wait_unlocked(members, 4); /* the dead child's ring lets go of its files */
	cr_assert_eq(graid_array_open(members, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_REBUILDING, "states %d %d %d %d",
		     info.member_state[0], info.member_state[1], info.member_state[2],
		     info.member_state[3]);
	/* Resumed from a checkpoint past row 0, or this test would prove nothing. */
	cr_assert_eq(graid_array_rebuild(a, heal_progress_cb, &prog), 0);
	cr_assert_lt(prog.total, 4u << 20, "no checkpoint before the kill: the rebuild redid "
		     "%llu bytes", (unsigned long long)prog.total);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "%llu stripes with parity out of step after the resync",
		     (unsigned long long)rep.mismatches);
	graid_array_close(a);
	au_remove(&s);
}

struct heal_late_writer {
	struct graid_array *a;
	uint64_t size;
	int rc;
};

static void *heal_late_writer_main(void *arg)
{
	struct heal_late_writer *w = arg;
	uint8_t *buf = malloc(3 * 4096);

	usleep(500 * 1000); /* the rebuild has written its first batch and is pacing */
	heal_pattern(buf, 3 * 4096, w->size - 3 * 4096, 9);
	w->rc = (int)graid_array_write(w->a, buf, 3 * 4096, w->size - 3 * 4096);
	free(buf);
	return NULL;
}

/* The same with no call from the callback: a hot spare takes over from a paced rebuild. */
Test(heal, a_spare_taking_over_the_member_being_rebuilt_is_rebuilt_from_the_start,
     .timeout = 120)
{
	tu_need_fault_injection();
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 1u << 20 };
	struct heal_late_writer w;
	struct graid_array *a;
	struct au_set s;
	pthread_t th;
	int rc;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	heal_replace_with_failing_writes(&s, a);
	cr_assert_eq(graid_array_add_spare(a, heal_new_member(&s, "spare")), 0);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	w = (struct heal_late_writer){ .a = a, .size = info.size };
	pthread_create(&th, NULL, heal_late_writer_main, &w);
	rc = graid_array_rebuild(a, NULL, NULL);
	pthread_join(th, NULL);
	cr_assert_eq(rc, 0, "rebuild: %s", graid_strerror(rc));
	cr_assert_eq(w.rc, 3 * 4096, "the write during the rebuild: %d", w.rc);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0); /* nothing left: returns at once */
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_ACTIVE);
	heal_verify(a, info.size, NULL, 9, "after a spare took over the member being rebuilt");
	graid_array_close(a);
	au_remove(&s);
}

/* A reader that keeps foreground I/O in flight until told to stop. */
struct heal_reader {
	struct graid_array *a;
	uint64_t size;
	volatile bool *stop;
	unsigned reads, failures;
};

static void *heal_reader_main(void *arg)
{
	struct heal_reader *r = arg;
	uint8_t *buf = malloc(4096);
	uint64_t x = 88172645463325252ull;

	while (!*r->stop) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (graid_array_read(r->a, buf, 4096, x % (r->size / 4096) * 4096) != 4096)
			r->failures++;
		r->reads++;
	}
	free(buf);
	return NULL;
}

static double heal_secs(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* busy_bytes_per_sec holds the rebuild back while foreground I/O is in flight. */
Test(heal, the_busy_rate_limits_a_rebuild_under_foreground_reads, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	const uint64_t busy = 2u << 20; /* the 4 MiB member in about 2 s */
	volatile bool stop = false;
	struct heal_reader r[2];
	pthread_t th[2];
	struct graid_array *a;
	struct au_set s;
	double t0, secs;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	ro.busy_bytes_per_sec = busy;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	for (unsigned i = 0; i < 2; i++) {
		r[i] = (struct heal_reader){ .a = a, .size = info.size, .stop = &stop };
		pthread_create(&th[i], NULL, heal_reader_main, &r[i]);
	}
	usleep(20 * 1000);
	t0 = heal_secs();
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	secs = heal_secs() - t0;
	stop = true;
	for (unsigned i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		cr_assert_eq(r[i].failures, 0);
	}
	cr_log_info("rebuild under reads: %.2f s, reads %u + %u", secs, r[0].reads, r[1].reads);
	/*
	 * Unlimited, the 4 MiB rebuild takes tens of ms in RAM; at the busy rate about 2 s, less
	 * the last of its four 1 MiB batches, which nothing paces.
	 */
	cr_assert_geq(secs, 0.5 * (double)(HEAL_MEMBER_BYTES - (1u << 20)) / (double)busy,
		      "rebuilt in %.2f s under foreground reads: the busy rate was not applied",
		      secs);
	heal_verify(a, info.size, NULL, 9, "after a rebuild at the busy rate");
	graid_array_close(a);
	au_remove(&s);
}

struct heal_rebuilder {
	struct graid_array *a;
	int rc;
	double secs; /* from start to end */
};

static void *heal_rebuilder_main(void *arg)
{
	struct heal_rebuilder *b = arg;
	double t0 = heal_secs();

	b->rc = graid_array_rebuild(b->a, NULL, NULL);
	b->secs = heal_secs() - t0;
	return NULL;
}

/*
 * A pause taken at the busy rate ends when the foreground goes quiet: at 64 KiB/s the 4 MiB
 * member would take a minute, and one pause after three 1 MiB batches would sleep 48 s;
 * once the readers stop, the rest must go at full speed (tens of ms in RAM).
 */
Test(heal, a_busy_rate_pause_ends_when_the_foreground_stops, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro) };
	volatile bool stop = false;
	struct heal_reader r;
	struct heal_rebuilder b;
	pthread_t th, tb;
	struct graid_array *a;
	struct au_set s;
	double t_stop;

	a = heal_raid5_role2_failed(&s, 4096, &info);
	ro.busy_bytes_per_sec = 64u << 10;
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_replace_member(a, 2, heal_new_member(&s, "new")), 0);
	r = (struct heal_reader){ .a = a, .size = info.size, .stop = &stop };
	pthread_create(&th, NULL, heal_reader_main, &r);
	usleep(20 * 1000);
	b = (struct heal_rebuilder){ .a = a };
	pthread_create(&tb, NULL, heal_rebuilder_main, &b);
	usleep(300 * 1000); /* the rebuild is held back, in a pause by now */
	stop = true;
	pthread_join(th, NULL);
	t_stop = heal_secs();
	pthread_join(tb, NULL);
	cr_assert_eq(b.rc, 0, "rebuild: %s", graid_strerror(b.rc));
	cr_assert_eq(r.failures, 0);
	cr_log_info("rebuild: %.2f s in all, %.2f s after the readers stopped", b.secs,
		    heal_secs() - t_stop);
	cr_assert_lt(heal_secs() - t_stop, 10.0,
		     "the rebuild went on at the busy rate for %.1f s after the foreground stopped",
		     heal_secs() - t_stop);
	heal_verify(a, info.size, NULL, 9, "after a rebuild whose pause ended early");
	graid_array_close(a);
	au_remove(&s);
}

/* A caller compiled before busy_bytes_per_sec existed passes the shorter struct. */
Test(heal, rebuild_options_accept_the_struct_without_the_busy_rate)
{
	struct graid_rebuild_options ro = { .busy_bytes_per_sec = 1 };
	struct graid_array *a;
	struct au_set s;

	au_make(&s, 3, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 3, 5, 4096, &a), 0);
	ro.struct_size = offsetof(struct graid_rebuild_options, busy_bytes_per_sec);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	ro.struct_size = offsetof(struct graid_rebuild_options, foreground_yield_us);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), -EINVAL);
	ro.struct_size = sizeof(ro);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	graid_array_close(a);
	au_remove(&s);
}
