/* SPDX-License-Identifier: MIT */
/*
 * The health watch runs beside the array's worker: a drive whose health command hangs
 * holds neither the worker nor the array's lock, and the watch samples on while the worker
 * rebuilds. The drive is a scripted one (faulty:health=FILE); FILE a FIFO nobody writes
 * models the command that hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define HT_MEMBER_BYTES ((1u << 20) + (8u << 20))

struct ht_seen {
	atomic_int critical, rebuild_done, optimal;
	atomic_bool critical_before_done;
};

static void ht_event(void *arg, const struct graid_event *ev)
{
	struct ht_seen *s = arg;

	if (ev->type == GRAID_EVENT_HEALTH_CRITICAL) {
		atomic_fetch_add(&s->critical, 1);
		if (!atomic_load(&s->rebuild_done))
			atomic_store(&s->critical_before_done, true);
	}
	atomic_fetch_add(&s->rebuild_done, ev->type == GRAID_EVENT_REBUILD_DONE);
	atomic_fetch_add(&s->optimal, ev->type == GRAID_EVENT_OPTIMAL);
}

/* Wait up to @p ms for *@p v to reach @p want. */
static bool ht_wait(atomic_int *v, int want, unsigned ms)
{
	for (unsigned t = 0; t <= ms; t += 10) {
		if (atomic_load(v) >= want)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * A filled RAID-5 of three, reopened with role 0's drive scripted by @p health (made by the
 * caller: a file or a FIFO), a hot spare, the watch every 100 ms.
 */
static struct graid_array *ht_open(struct au_set *s, const char *health, char *spec,
				   struct ht_seen *seen)
{
	struct graid_health_options o = { .struct_size = sizeof(o), .interval_ms = 100,
					  .wear_percent = 90, .media_burst = 25,
					  .media_window_s = 600 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *paths[AU_MAX];
	struct graid_array *a;
	uint8_t *buf = malloc(1u << 20);

	cr_assert_not_null(buf);
	cr_assert_eq(au_create(s, 3, 5, 65536, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	memset(buf, 0x5a, 1u << 20);
	for (uint64_t off = 0; off < info.size; off += 1u << 20)
		cr_assert_eq(graid_array_write(a, buf, 1u << 20, off), 1 << 20);
	free(buf);
	cr_assert_eq(graid_array_close(a), 0);
	snprintf(spec, 700, "faulty:health=%s:%s", health, s->path[0]);
	memcpy(paths, s->paths, sizeof(s->paths));
	paths[0] = spec;
	cr_assert_eq(graid_array_open(paths, 3, NULL, &a), 0);
	cr_assert_eq(graid_array_set_event_callback(a, ht_event, seen), 0);
	cr_assert_eq(graid_array_add_spare(a, s->path[3]), 0);
	cr_assert_eq(graid_array_set_health_options(a, &o), 0);
	return a;
}

/*
 * Role 0's health command hangs (its FIFO has no writer): failing role 1 still returns at
 * once, the worker still gives the spare the role and rebuilds it.
 */
Test(health_thread, a_hung_health_command_holds_neither_the_worker_nor_the_array,
     .timeout = 60)
{
	static struct ht_seen seen;
	char health[320], spec[700];
	struct graid_array *a;
	struct au_set s;
	int fd;

	tu_need_fault_injection();
	au_make(&s, 4, HT_MEMBER_BYTES);
	snprintf(health, sizeof(health), "%s/health-fifo", s.dir);
	tu_put_file(health, "available_spare 100\nspare_threshold 10\n");
	a = ht_open(&s, health, spec, &seen);
	/* From now on the drive's command hangs: the next sample waits in the FIFO's open. */
	cr_assert_eq(unlink(health), 0);
	cr_assert_eq(mkfifo(health, 0600), 0);
	usleep(400 * 1000);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert(ht_wait(&seen.optimal, 1, 20000), "the worker did not rebuild the spare while "
						     "a health command hung");
	/* The command answers: a writer for the FIFO, and a plain file for the samples after. */
	fd = open(health, O_WRONLY);
	cr_assert_geq(fd, 0);
	tu_put_file(health, "available_spare 100\nspare_threshold 10\n");
	cr_assert_eq(write(fd, "available_spare 100\n", 20), 20);
	close(fd);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

/*
 * A rebuild runs (slowed to a few seconds); the drive raises a critical bit meanwhile: the
 * watch reports it within a second, before the rebuild is done.
 */
Test(health_thread, the_watch_samples_during_a_rebuild, .timeout = 60)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = 2u << 20 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	static struct ht_seen seen;
	char health[320], spec[700];
	struct graid_array *a;
	struct au_set s;

	tu_need_fault_injection();
	au_make(&s, 4, HT_MEMBER_BYTES);
	snprintf(health, sizeof(health), "%s/health", s.dir);
	tu_put_file(health, "available_spare 100\nspare_threshold 10\n");
	a = ht_open(&s, health, spec, &seen);
	cr_assert_eq(graid_array_set_rebuild_options(a, &ro), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	usleep(300 * 1000);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert(info.rebuild_running, "the rebuild ended too soon to test anything");
	tu_put_file(health, "critical_warning 4\navailable_spare 100\nspare_threshold 10\n");
	cr_assert(ht_wait(&seen.critical, 1, 1000), "no health event within a second while the "
						    "worker rebuilds");
	cr_assert(atomic_load(&seen.critical_before_done));
	cr_assert(ht_wait(&seen.optimal, 1, 30000));
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}
