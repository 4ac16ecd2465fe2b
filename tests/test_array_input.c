/* SPDX-License-Identifier: MIT */
/* Every refused array call names what was wrong and leaves every member byte-identical. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"

#define IN_MEMBER_BYTES ((1u << 20) + (1u << 20))

static struct au_set s;
static uint64_t before[AU_MAX];

static void in_snapshot(void)
{
	for (unsigned i = 0; i < s.n; i++)
		before[i] = au_file_hash(s.path[i]);
}

static void in_unchanged(const char *what)
{
	for (unsigned i = 0; i < s.n; i++)
		cr_assert_eq(au_file_hash(s.path[i]), before[i], "%s modified member %u", what, i);
}

static void in_setup(void)
{
	au_make(&s, 6, IN_MEMBER_BYTES);
	in_snapshot();
}

static void in_teardown(void)
{
	au_remove(&s);
}

TestSuite(array_input, .init = in_setup, .fini = in_teardown);

static int in_create(const char **paths, unsigned n, int level, uint32_t chunk, unsigned flags)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = chunk, .backend = "isal", .flags = flags };
	struct graid_array *a = NULL;
	int rc = graid_array_create(paths, n, &cfg, &a);

	if (rc == 0)
		graid_array_close(a);
	return rc;
}

Test(array_input, create_refuses_bad_levels_chunks_and_counts)
{
	cr_assert_eq(in_create(s.paths, 6, 4, 0, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 6, 6, 3000, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 6, 6, 2048, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 6, 6, 2u << 20, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 3, 6, 0, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 2, 5, 0, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 0, 1, 0, 0), -EINVAL);
	cr_assert_eq(in_create(s.paths, 6, 6, 0, 0x80), -EINVAL);
	in_unchanged("a refused create");
}

Test(array_input, create_refuses_duplicates_missing_paths_and_small_members)
{
	const char *dup[4] = { s.paths[0], s.paths[1], s.paths[2], s.paths[1] };
	const char *missing[4] = { s.paths[0], s.paths[1], s.paths[2], "/nonexistent/m9" };
	char small[300];
	const char *with_small[4] = { s.paths[0], s.paths[1], s.paths[2], small };
	FILE *f;

	cr_assert_eq(in_create(dup, 4, 5, 0, 0), -EINVAL);
	cr_assert_eq(in_create(missing, 4, 5, 0, 0), -ENOENT);
	snprintf(small, sizeof(small), "%s/small", s.dir);
	f = fopen(small, "w");
	fputs("tiny", f);
	fclose(f);
	cr_assert_eq(in_create(with_small, 4, 5, 0, 0), -EINVAL);
	unlink(small);
	in_unchanged("a refused create");
}

Test(array_input, create_refuses_members_of_an_array_without_force)
{
	cr_assert_eq(in_create(s.paths, 4, 5, 0, 0), 0);
	in_snapshot();
	cr_assert_eq(in_create(s.paths + 2, 4, 6, 0, 0), -EINVAL);
	in_unchanged("create over existing members");
	cr_assert_eq(in_create(s.paths + 2, 4, 6, 0, GRAID_CREATE_FORCE), 0);
}

Test(array_input, open_refuses_members_without_superblocks)
{
	struct graid_array *a = NULL;

	cr_assert_eq(graid_array_open(s.paths, 6, NULL, &a), -EINVAL);
	cr_assert_null(a);
	in_unchanged("a refused open");
}

Test(array_input, open_refuses_too_many_missing_and_writes_nothing)
{
	struct graid_array *a = NULL;

	cr_assert_eq(in_create(s.paths, 6, 6, 0, 0), 0);
	in_snapshot();
	cr_assert_eq(graid_array_open(s.paths, 3, NULL, &a), -EIO);
	cr_assert_null(a);
	in_unchanged("a refused open");
}

Test(array_input, open_leaves_out_a_member_with_a_corrupt_superblock)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a = NULL;
	FILE *f;

	cr_assert_eq(in_create(s.paths, 5, 5, 0, 0), 0);
	f = fopen(s.path[2], "r+");
	fseek(f, 100, SEEK_SET);
	fputc(0x42, f);
	fclose(f);
	cr_assert_eq(graid_array_open(s.paths, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.nfailed, 1);
	cr_assert_eq(info.member_state[2], GRAID_MEMBER_MISSING);
	graid_array_close(a);
}

Test(array_input, open_leaves_out_a_member_of_another_array)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	const char *mixed[5] = { s.paths[0], s.paths[1], s.paths[2], s.paths[3], s.paths[5] };
	const char *other[2] = { s.paths[4], s.paths[5] };
	struct graid_array *a = NULL;

	cr_assert_eq(in_create(s.paths, 4, 5, 0, 0), 0);
	cr_assert_eq(in_create(other, 2, 1, 0, 0), 0);
	cr_assert_eq(graid_array_open(mixed, 5, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.level, 5);
	cr_assert_eq(info.nfailed, 0);
	graid_array_close(a);
}

Test(array_input, misaligned_or_out_of_range_io_is_einval)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a = NULL;
	uint8_t *buf = calloc(1, 16384);

	cr_assert_eq(in_create(s.paths, 4, 6, 0, 0), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(graid_array_write(a, buf, 4096, 512), -EINVAL);
	cr_assert_eq(graid_array_write(a, buf, 1000, 0), -EINVAL);
	cr_assert_eq(graid_array_read(a, buf, 4096, info.size), -EINVAL);
	cr_assert_eq(graid_array_read(a, buf, 8192, info.size - 4096), -EINVAL);
	cr_assert_eq(graid_array_read(NULL, buf, 4096, 0), -EINVAL);
	cr_assert_eq(graid_array_fail_member(a, 9), -EINVAL);
	cr_assert_eq(graid_array_fail_member(a, 0), 0);
	cr_assert_eq(graid_array_fail_member(a, 1), 0);
	cr_assert_eq(graid_array_fail_member(a, 2), -EBUSY, "a third failure would lose data");
	graid_array_close(a);
	free(buf);
}

Test(array_input, a_second_open_of_an_open_array_is_busy_but_a_read_only_look_works)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a = NULL, *b = NULL;
	uint8_t *buf = calloc(1, 4096);
	uint64_t events;

	cr_assert_eq(in_create(s.paths, 4, 6, 0, 0), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &a), 0);
	cr_assert_eq(graid_array_open(s.paths, 4, NULL, &b), -EBUSY);
	cr_assert_eq(graid_array_info(a, &info), 0);
	events = info.events;
	in_snapshot();
	cr_assert_eq(graid_array_open(s.paths, 4, &ro, &b), 0);
	cr_assert_eq(graid_array_info(b, &info), 0);
	cr_assert_eq(info.events, events);
	cr_assert_eq(graid_array_read(b, buf, 4096, 0), 4096);
	cr_assert_eq(graid_array_write(b, buf, 4096, 0), -EROFS);
	cr_assert_eq(graid_array_fail_member(b, 1), -EROFS);
	cr_assert_eq(graid_array_close(b), 0);
	in_unchanged("a read-only open and close");
	graid_array_close(a);
	free(buf);
}
