/* SPDX-License-Identifier: MIT */
/* Helpers for the array suites: member files in a scratch folder, snapshots, the in-memory model. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sys/file.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"

void au_make(struct au_set *s, unsigned n, uint64_t bytes)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(s->dir, sizeof(s->dir), "%s/graid-test-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->dir))
		abort();
	s->n = n;
	for (unsigned i = 0; i < n; i++) {
		int fd;

		snprintf(s->path[i], sizeof(s->path[i]), "%s/m%u", s->dir, i);
		fd = open(s->path[i], O_CREAT | O_RDWR | O_TRUNC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)bytes))
			abort();
		close(fd);
		s->paths[i] = s->path[i];
	}
}

static int au_remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	if (type == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0; /* go on: remove what can be removed */
}

/*
 * The member files and whatever else a test made beside them (a second set's files, the
 * controller state of emulated drives, lease files, a run folder): the scratch folder goes
 * whole, so passing suites leave nothing in /tmp.
 */
void au_remove(struct au_set *s)
{
	nftw(s->dir, au_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

void au_wait_unlocked(const char *const *paths, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int fd = open(paths[i], O_RDONLY);

		if (fd < 0)
			continue;
		for (int t = 0; t < 500 && flock(fd, LOCK_EX | LOCK_NB); t++)
			usleep(10 * 1000);
		close(fd); /* and with it the lock, if it was taken */
	}
}

int au_ctrl_state(const char *state_file, const char *state)
{
	char tmp[4200];
	FILE *f;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", state_file) >= sizeof(tmp))
		return -ENAMETOOLONG;
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "%s\n", state);
	if (fclose(f) || rename(tmp, state_file))
		return -errno;
	return 0;
}

bool au_sb_cleared(const char *path)
{
	uint8_t b[4096];
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, b, sizeof(b), 0), (ssize_t)sizeof(b));
	close(fd);
	for (size_t i = 0; i < sizeof(b); i++)
		if (b[i])
			return false;
	return true;
}

uint64_t au_file_hash(const char *path)
{
	uint64_t h = 1469598103934665603ull;
	unsigned char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

int au_create(struct au_set *s, unsigned n, int level, uint32_t chunk, struct graid_array **out)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = level, .chunk_bytes = chunk,
		.backend = getenv("GRAID_TEST_ARRAY_BACKEND") ? getenv("GRAID_TEST_ARRAY_BACKEND")
							      : "isal",
	};

	return graid_array_create(s->paths, n, &cfg, out);
}
