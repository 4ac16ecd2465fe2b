/* SPDX-License-Identifier: MIT */
/* A rebuild cut short by a kill: it resumes from its checkpoint, and a torn write below it is resynced. */
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

#include "healutil.h"

static volatile uint64_t heal_kill_at;

static void heal_kill_cb(void *arg, uint64_t done, uint64_t total)
{
	(void)arg;
	(void)total;
	if (done >= heal_kill_at)
		kill(getpid(), SIGKILL);
}

/* A rebuild killed half way resumes from its checkpoint, not from the start. */
Test(heal_resume, a_killed_rebuild_resumes_from_its_checkpoint, .timeout = 300)
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
	{
		/*
		 * Its progress events count percent of the whole role, as a resumed scrub's:
		 * the first step past the checkpoint, not 10 % of what was left; 100 last.
		 */
		static struct graid_event ev[256];
		uint64_t last;
		int n = graid_array_events(a, 0, ev, 256, &last);
		unsigned first = 0, prev = 0;

		cr_assert_geq(n, 0);
		for (int i = 0; i < n; i++) {
			if (ev[i].type != GRAID_EVENT_REBUILD_PROGRESS)
				continue;
			if (!first)
				first = (unsigned)ev[i].count;
			cr_assert_gt(ev[i].count, prev, "progress went back to %llu%%",
				     (unsigned long long)ev[i].count);
			prev = (unsigned)ev[i].count;
		}
		cr_assert_gt(first, 10, "a resumed rebuild's first step is %u%%", first);
		cr_assert_eq(prev, 100);
	}
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	heal_verify(a, info.size, NULL, 9, "after a resumed rebuild");
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
Test(heal_resume, a_torn_write_below_the_rebuild_checkpoint_is_resynced, .timeout = 300)
{
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

	tu_need_fault_injection();
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
