/* SPDX-License-Identifier: MIT */
/*
 * RAID-1/10 after a crash, with the resync in the background (GRAID_OPEN_RESYNC_BACKGROUND):
 * the copies of chunks written at the crash differ (one copy is overwritten behind the
 * array's back), and a read before the resync reaches them must return what every copy
 * holds after it. The worker's resync is held back by the read seam while the test reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "array/array.h"
#include "format/layout.h"

#define MR_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define MR_CHUNK (64u * 1024)
#define MR_CHUNKS 4 /* chunks 4..7 written at the crash: two of each parity of the stripe */
#define MR_FIRST 4
#define MR_READS 8

#if GRAID_FAULT_INJECTION
static pthread_t mr_main;
static atomic_bool mr_hold;
static _Atomic time_t mr_until;

/* Reads of other threads (the worker's resync) wait while mr_hold, till 20 s from the open. */
static void mr_seam(struct graid_array *a, unsigned member)
{
	(void)a;
	(void)member;
	while (atomic_load(&mr_hold) && !pthread_equal(pthread_self(), mr_main) &&
	       time(NULL) < atomic_load(&mr_until))
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
}

static void mr_fill(uint8_t *buf, size_t len, uint8_t round)
{
	for (size_t k = 0; k < len; k++)
		buf[k] = (uint8_t)(round * 37 + k / 4096);
}

/* Overwrite copy @p copy of array chunk @p chunk in its member file, around the array. */
static void mr_poke(const struct au_set *s, const struct layout *l, uint64_t data_off,
		   uint64_t chunk, unsigned copy, const uint8_t *buf)
{
	unsigned members[GRAID_MAX_MEMBERS];
	uint64_t moff[GRAID_MAX_MEMBERS];
	unsigned k = layout_copies(l, chunk * l->chunk, members, moff);
	int fd;

	cr_assert_gt(k, copy);
	fd = open(s->paths[members[copy]], O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, buf, l->chunk, (off_t)(data_off + moff[copy])), (ssize_t)l->chunk);
	cr_assert_eq(close(fd), 0);
}

static void mr_run(int level, unsigned n)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_open_options opt = { .struct_size = sizeof(opt),
					  .flags = GRAID_OPEN_RESYNC_BACKGROUND };
	const size_t span = (size_t)MR_CHUNKS * MR_CHUNK;
	uint8_t *buf = aligned_alloc(4096, span), *first = aligned_alloc(4096, span);
	uint8_t *again = aligned_alloc(4096, span);
	struct graid_array *a;
	struct layout lay;
	uint64_t data_off;
	struct au_set s;
	int status;
	pid_t pid;

	au_make(&s, n, MR_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, n, level, MR_CHUNK, &a), 0);
	lay = a->lay;
	data_off = a->data_offset;
	cr_assert_eq(graid_array_info(a, &info), 0);
	mr_fill(buf, span, 1);
	cr_assert_eq(graid_array_write(a, buf, span, MR_FIRST * MR_CHUNK), (ssize_t)span);
	cr_assert_eq(graid_array_close(a), 0);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		/* Written, and the process dies before its close: the array is left unclean. */
		if (graid_array_open(s.paths, n, NULL, &a))
			_exit(2);
		mr_fill(buf, span, 2);
		_exit(graid_array_write(a, buf, span, MR_FIRST * MR_CHUNK) == (ssize_t)span ? 0 : 3);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
	au_wait_unlocked(s.paths, n);
	/* As if the crash came between the copies' writes: the second copy of each chunk differs. */
	for (unsigned c = 0; c < MR_CHUNKS; c++) {
		mr_fill(buf, MR_CHUNK, (uint8_t)(3 + c));
		mr_poke(&s, &lay, data_off, MR_FIRST + c, 1, buf);
	}

	mr_main = pthread_self();
	atomic_store(&mr_hold, true);
	atomic_store(&mr_until, time(NULL) + 20);
	graid__test_before_read = mr_seam;
	cr_assert_eq(graid_array_open(s.paths, n, &opt, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert(info.unclean, "the open found nothing to resync");
	/* Chunk by chunk (each read its own stripe, so a balancer would pick per chunk), often. */
	for (unsigned r = 0; r < MR_READS; r++)
		for (unsigned c = 0; c < MR_CHUNKS; c++) {
			uint8_t *to = r ? again : first;

			cr_assert_eq(graid_array_read(a, to + (size_t)c * MR_CHUNK, MR_CHUNK,
						      (MR_FIRST + c) * (uint64_t)MR_CHUNK),
				     MR_CHUNK);
			cr_assert(r == 0 || memcmp(again + (size_t)c * MR_CHUNK,
						   first + (size_t)c * MR_CHUNK, MR_CHUNK) == 0,
				  "chunk %u read differently before the resync", MR_FIRST + c);
		}
	atomic_store(&mr_hold, false);
	for (int w = 0; w < 1000; w++) {
		cr_assert_eq(graid_array_info(a, &info), 0);
		if (!info.unclean)
			break;
		usleep(10 * 1000);
	}
	cr_assert(!info.unclean, "the resync did not end");
	graid__test_before_read = NULL;
	for (unsigned c = 0; c < MR_CHUNKS; c++) {
		cr_assert_eq(graid_array_read(a, again, MR_CHUNK, (MR_FIRST + c) * (uint64_t)MR_CHUNK),
			     MR_CHUNK);
		cr_assert_eq(memcmp(again, first + (size_t)c * MR_CHUNK, MR_CHUNK), 0,
			     "RAID-%d chunk %u: read as one copy's value before the resync and as "
			     "another's after it", level, MR_FIRST + c);
	}
	cr_assert_eq(graid_array_close(a), 0);

	/* Every copy holds it now: a fresh open reads it from whichever copy it picks. */
	cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
	cr_assert_eq(graid_array_read(a, again, span, MR_FIRST * MR_CHUNK), (ssize_t)span);
	cr_assert_eq(memcmp(again, first, span), 0);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(first);
	free(again);
	au_remove(&s);
}
#endif

Test(mirror_resync, raid1_reads_before_a_background_resync_hold_after_it, .timeout = 120)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	mr_run(1, 2);
#endif
}

Test(mirror_resync, raid1_three_copies_reads_before_a_background_resync_hold_after_it,
     .timeout = 120)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	mr_run(1, 3);
#endif
}

Test(mirror_resync, raid10_reads_before_a_background_resync_hold_after_it, .timeout = 120)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("the read seam exists only with -Dfault_injection");
#else
	mr_run(10, 4);
#endif
}
