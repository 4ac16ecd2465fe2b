/* SPDX-License-Identifier: MIT */
/* Helpers of the heal suites (tests/test_heal_*.c): patterned fills, checks, new members, ready-made arrays. */
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

void heal_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t round)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = ((off + i) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)round << 40);

		memcpy(p + i, &v, 8);
	}
}

void heal_fill(struct graid_array *a, uint64_t size, uint32_t round)
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
void heal_verify(struct graid_array *a, uint64_t size, const uint32_t *round,
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

char *heal_new_member(struct au_set *s, const char *name)
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

void heal_progress_cb(void *arg, uint64_t done, uint64_t total)
{
	struct heal_progress *p = arg;

	if (done < p->last)
		p->backwards++;
	p->last = done;
	p->total = total;
	p->calls++;
}

/*
 * RAID-5 of 4 members, 4 KiB chunks, filled with pattern 9, role 2 replaced by "new" (not
 * rebuilt yet) and the array closed; @p members: the paths to open it with.
 */
void heal_raid5_role2_replaced_closed(struct au_set *s, const char **members,
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

/* RAID-5 of 4 members, chunks of @p chunk bytes, filled with pattern 9, role 2 failed. */
struct graid_array *heal_raid5_role2_failed(struct au_set *s, uint32_t chunk,
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
void heal_replace_with_failing_writes(struct au_set *s, struct graid_array *a)
{
	char faulty[400];

	snprintf(faulty, sizeof(faulty), "faulty:write-eio-after=1:%s",
		 heal_new_member(s, "new"));
	cr_assert_eq(graid_array_replace_member(a, 2, faulty), 0);
}
