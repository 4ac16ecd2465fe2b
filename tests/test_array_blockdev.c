/* SPDX-License-Identifier: MIT */
/* Arrays over real block devices (loop devices with 512-byte sectors), where the machine allows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define BD_N 4

static struct au_set files;
static char dev[BD_N][64];
static const char *devs[BD_N];
static unsigned ndev;

/* Attach loop devices over sparse files; skip (never pass) where that is not possible. */
static void bd_setup(void)
{
	if (geteuid() != 0)
		cr_skip_test("loop devices need root; not testing block-device members here");
	if (access("/dev/loop-control", F_OK))
		cr_skip_test("no /dev/loop-control: this kernel has no loop driver");
	au_make(&files, BD_N, (1u << 20) + (4u << 20));
	for (ndev = 0; ndev < BD_N; ndev++) {
		char cmd[400];
		FILE *p;

		snprintf(cmd, sizeof(cmd), "losetup -f --show -b 512 %s 2>/dev/null",
			 files.path[ndev]);
		p = popen(cmd, "r");
		if (!p || !fgets(dev[ndev], sizeof(dev[ndev]), p) || strncmp(dev[ndev], "/dev/", 5)) {
			if (p)
				pclose(p);
			cr_skip_test("losetup could not attach a loop device");
		}
		pclose(p);
		dev[ndev][strcspn(dev[ndev], "\n")] = '\0';
		devs[ndev] = dev[ndev];
	}
}

static void bd_teardown(void)
{
	for (unsigned i = 0; i < ndev; i++) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "losetup -d %s", dev[i]);
		if (system(cmd))
			fprintf(stderr, "could not detach %s\n", dev[i]);
	}
	if (files.n)
		au_remove(&files);
}

TestSuite(array_blockdev, .init = bd_setup, .fini = bd_teardown, .timeout = 300);

Test(array_blockdev, members_with_512_byte_sectors_give_512_byte_blocks)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 5,
					  .chunk_bytes = 4096, .backend = "isal" };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	uint64_t rng = tu_seed() ^ 0x626c6b;
	struct graid_array *a;
	uint8_t *model, *buf;

	cr_assert_eq(graid_array_create(devs, BD_N, &cfg, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.block_size, 512);
	cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
	cr_assert_not_null(strstr(mi.identity, "block"), "identity: %s", mi.identity);
	cr_assert_eq(mi.direct_io, 1);
	model = calloc(1, info.size);
	buf = malloc(8192 + 64);
	/* 512-byte granules: partial sectors of chunks, read-modify-write down to one sector. */
	for (int i = 0; i < 400; i++) {
		uint64_t off = (tu_rand(&rng) % (info.size / 512)) * 512;
		size_t len = (1 + tu_rand(&rng) % 16) * 512;
		uint8_t *p = buf + (tu_rand(&rng) % 2) * 7;

		if (len > info.size - off)
			len = info.size - off;
		if (i % 2) {
			tu_fill(&rng, p, len);
			cr_assert_eq(graid_array_write(a, p, len, off), (ssize_t)len);
			memcpy(model + off, p, len);
		} else {
			cr_assert_eq(graid_array_read(a, p, len, off), (ssize_t)len);
			cr_assert_eq(memcmp(p, model + off, len), 0, "read %llu+%zu (seed %llu)",
				     (unsigned long long)off, len, (unsigned long long)tu_seed());
		}
	}
	cr_assert_eq(graid_array_write(a, buf, 4096, 512 * 3), 4096);
	memcpy(model + 512 * 3, buf, 4096);
	cr_assert_eq(graid_array_fail_member(a, 2), 0);
	for (uint64_t off = 0; off < info.size; off += 8192) {
		cr_assert_eq(graid_array_read(a, buf, 8192, off), 8192);
		cr_assert_eq(memcmp(buf, model + off, 8192), 0, "degraded read at %llu",
			     (unsigned long long)off);
	}
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	free(model);
}

Test(array_blockdev, a_block_device_held_by_an_open_array_cannot_be_taken_again)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
					  .backend = "isal" };
	struct graid_array *a, *b;

	cr_assert_eq(graid_array_create(devs, 2, &cfg, &a), 0);
	cfg.flags = GRAID_CREATE_FORCE;
	cr_assert_eq(graid_array_create(devs, 2, &cfg, &b), -EBUSY);
	cr_assert_eq(graid_array_close(a), 0);
}
