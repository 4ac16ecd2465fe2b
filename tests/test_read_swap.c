/* SPDX-License-Identifier: MIT */
/*
 * A read planned while its member was readable, whose member then fails and is replaced
 * before the read takes its descriptor (in use a window of microseconds; here forced by
 * the queue's test seam). The replacement holds bytes nobody wrote (0xEE) until it is
 * rebuilt, so a read it served would return them: every read must still return the data.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"
#include "io/queue.h"

/* The library's read seam exists only in builds with fault injection; each test skips without it. */
#if GRAID_FAULT_INJECTION
#define RS_SEAM(fn) (graid__test_before_read = (fn))
#else
#define RS_SEAM(fn) ((void)(fn))
#endif

#define RS_MEMBER_BYTES (16u << 20)
#define RS_CHUNK (64u * 1024u)
#define RS_DATA (1u << 20)

static struct au_set rs_set;
static const char *rs_spare;
static int rs_fired = -1; /* the member swapped by the seam, once; -1 before */

/* Fail the member a read is about to go to, and put the unrebuilt spare in its place. */
static void rs_swap(struct graid_array *a, unsigned member)
{
	if (rs_fired >= 0)
		return;
	rs_fired = (int)member;
	cr_assert_eq(graid_array_fail_member(a, member), 0);
	cr_assert_eq(graid_array_replace_member(a, member, rs_spare), 0);
}

static void rs_fill_garbage(const char *path)
{
	uint8_t *buf = malloc(1u << 20);
	int fd = open(path, O_WRONLY);

	cr_assert_not_null(buf);
	cr_assert_geq(fd, 0);
	memset(buf, 0xEE, 1u << 20);
	for (uint64_t off = 0; off < RS_MEMBER_BYTES; off += 1u << 20)
		cr_assert_eq(pwrite(fd, buf, 1u << 20, (off_t)off), 1 << 20);
	close(fd);
	free(buf);
}

/*
 * Level @p level over @p n members (one more file is the spare), RS_DATA bytes written,
 * then read back at @p off for @p len with the seam armed: the bytes must be the data.
 */
static void rs_case(int level, unsigned n, uint64_t off, size_t len)
{
	struct graid_array *a;
	uint8_t *data = malloc(RS_DATA), *back = malloc(len);

	cr_assert(data && back);
	au_make(&rs_set, n + 1, RS_MEMBER_BYTES);
	rs_spare = rs_set.path[n];
	rs_fill_garbage(rs_spare);
	cr_assert_eq(au_create(&rs_set, n, level, RS_CHUNK, &a), 0);
	for (size_t i = 0; i < RS_DATA; i++)
		data[i] = (uint8_t)(i * 131 + i / 4096 + 7);
	cr_assert_eq(graid_array_write(a, data, RS_DATA, 0), (ssize_t)RS_DATA);

	rs_fired = -1;
	RS_SEAM(rs_swap);
	cr_assert_eq(graid_array_read(a, back, len, off), (ssize_t)len);
	RS_SEAM(NULL);
	cr_assert_geq(rs_fired, 0, "no read went through the seam");
	cr_assert(memcmp(back, data + off, len) == 0,
		  "RAID-%d: a read served by member %d's unrebuilt replacement (first byte "
		  "0x%02x)", level, rs_fired, back[0]);
	/* And once more, the way the array reads now (degraded for that member). */
	memset(back, 0, len);
	cr_assert_eq(graid_array_read(a, back, len, off), (ssize_t)len);
	cr_assert(memcmp(back, data + off, len) == 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&rs_set);
	free(data);
	free(back);
}

/* Members on disk, every I/O through the ring: the read is prepared, then found stale. */
Test(read_swap, ring_read_of_a_replaced_member_is_done_again)
{
	tu_need_fault_injection();
	setenv("GRAID_INLINE_IO", "0", 1);
	rs_case(5, 4, 0, RS_CHUNK);
}

Test(read_swap, ring_partial_chunk_read_raid6)
{
	tu_need_fault_injection();
	setenv("GRAID_INLINE_IO", "0", 1);
	rs_case(6, 6, 3 * RS_CHUNK + 4096, 8192);
}

Test(read_swap, ring_mirror_read_goes_to_the_other_copy)
{
	tu_need_fault_injection();
	setenv("GRAID_INLINE_IO", "0", 1);
	rs_case(1, 2, 2 * RS_CHUNK, RS_CHUNK);
}

/*
 * The same window in the background: a rebuild about to read a survivor whose member then
 * fails and takes the unrebuilt spare. Reading the spare would rebuild the target from
 * 0xEE bytes; the batch must be planned again without that survivor (RAID-6 has parity for
 * both), and after the rebuild every byte must read back, with the target's chunks direct.
 */
Test(read_swap, rebuild_does_not_rebuild_from_a_replaced_survivor, .timeout = 300)
{
	const size_t len = 3 * RS_DATA;
	struct graid_array *a;
	uint8_t *data = malloc(len), *back = malloc(len);
	char target_path[300];

	tu_need_fault_injection();
	cr_assert(data && back);
	au_make(&rs_set, 8, RS_MEMBER_BYTES);
	rs_spare = rs_set.path[7];
	rs_fill_garbage(rs_spare);
	/* The target's replacement: zeroes where it is not yet rebuilt, never mistaken for data. */
	snprintf(target_path, sizeof(target_path), "%s", rs_set.path[6]);
	cr_assert_eq(au_create(&rs_set, 6, 6, RS_CHUNK, &a), 0);
	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 29 + i / 4096 + 3);
	cr_assert_eq(graid_array_write(a, data, len, 0), (ssize_t)len);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_replace_member(a, 0, target_path), 0);

	rs_fired = -1;
	RS_SEAM(rs_swap);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	RS_SEAM(NULL);
	cr_assert_geq(rs_fired, 1, "no survivor read went through the seam");
	/* The swapped survivor is rebuilt too (by this call, or the next one). */
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_read(a, back, len, 0), (ssize_t)len);
	cr_assert(memcmp(back, data, len) == 0,
		  "data rebuilt from survivor %d's unrebuilt replacement", rs_fired);
	/* Direct reads of every member now: fail two others and read through P and Q. */
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	cr_assert_eq(graid_array_fail_member(a, 3), 0);
	memset(back, 0, len);
	cr_assert_eq(graid_array_read(a, back, len, 0), (ssize_t)len);
	cr_assert(memcmp(back, data, len) == 0, "member 0 or %d holds wrong bytes", rs_fired);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&rs_set);
	free(data);
	free(back);
}

/* Members in RAM: the read is done in the calling thread, checked before it runs. */
Test(read_swap, in_place_read_of_a_replaced_member_is_done_again)
{
	tu_need_fault_injection();
	if (access("/dev/shm", W_OK))
		cr_skip_test("no writable /dev/shm: no members in RAM");
	setenv("TMPDIR", "/dev/shm", 1);
	rs_case(5, 4, RS_CHUNK, RS_CHUNK);
}

Test(read_swap, in_place_mirror_read)
{
	tu_need_fault_injection();
	if (access("/dev/shm", W_OK))
		cr_skip_test("no writable /dev/shm: no members in RAM");
	setenv("TMPDIR", "/dev/shm", 1);
	rs_case(10, 4, 5 * RS_CHUNK, 3 * RS_CHUNK);
}
