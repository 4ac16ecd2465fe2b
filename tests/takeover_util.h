/* SPDX-License-Identifier: MIT */
/* What the takeover suites share: a member's superblock, and another host's takeover record on it. */
#ifndef LIBGRAID_TESTS_TAKEOVER_UTIL_H
#define LIBGRAID_TESTS_TAKEOVER_UTIL_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "format/superblock.h"

/* The superblock of member @p path, decoded. */
static inline struct superblock tko_sb(const char *path)
{
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(sb_decode(buf, &sb), 0);
	return sb;
}

/*
 * Another host's record on member @p path, at the epoch above (@p bump) or at the same one:
 * what its takeover leaves there (or what a second host taking over at the same moment does).
 */
static inline void tko_write_owner(const char *path, bool bump)
{
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb = tko_sb(path);
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	sb.owner.epoch += bump;
	sb.owner.pid = 4242;
	sb.owner.host_id = 0x0123456789abcdefull;
	for (unsigned i = 0; i < 16; i++)
		sb.owner.boot_id[i] = (uint8_t)(0xb0 + i);
	snprintf(sb.owner.host, sizeof(sb.owner.host), "graid-test-host-b");
	sb.events += 10;
	sb_encode(&sb, buf);
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(fsync(fd), 0);
	close(fd);
}

/* What another host's takeover leaves on member @p path: a higher epoch, its name and ids. */
static inline void tko_write_takeover(const char *path)
{
	tko_write_owner(path, true);
}

#endif
