/* SPDX-License-Identifier: MIT */
/* An array whose superblocks record a reshape: every open refused, -EOPNOTSUPP, nothing written. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "format/superblock.h"

#define NM 4
#define BYTES (24ull << 20)

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[8192];

static void log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	pthread_mutex_lock(&log_lock);
	if (strlen(log_text) + strlen(msg) + 2 < sizeof(log_text)) {
		strcat(log_text, msg);
		strcat(log_text, "\n");
	}
	pthread_mutex_unlock(&log_lock);
}

/* Rewrite member @p i's superblock as a libgraid that reshapes would: major 3 and the bit. */
static void sb_mark(const char *path, bool reshaping, uint64_t events)
{
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb;
	int fd = open(path, O_RDWR);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	cr_assert_eq(sb_decode(buf, &sb), 0);
	sb.version = reshaping ? GRAID_SB_VERSION_MAJOR_FEATURES : GRAID_SB_VERSION_MAJOR;
	sb.flags = reshaping ? sb.flags | GRAID_SB_F_RESHAPE : sb.flags & ~GRAID_SB_F_RESHAPE;
	if (events)
		sb.events = events;
	sb_encode(&sb, buf);
	cr_assert_eq(sb_decode(buf, &sb), 0, "the marked superblock is a valid one");
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
}

static uint64_t sb_events(const char *path)
{
	uint8_t buf[GRAID_SB_SIZE];
	struct superblock sb;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), 0), (ssize_t)sizeof(buf));
	close(fd);
	cr_assert_eq(sb_decode(buf, &sb), 0);
	return sb.events;
}

/* A RAID-5 of four with data written, closed cleanly. */
static void make_array(struct au_set *s)
{
	struct graid_array *a;
	char data[65536];

	au_make(s, NM, BYTES);
	cr_assert_eq(au_create(s, NM, 5, 65536, &a), 0);
	memset(data, 0x5c, sizeof(data));
	cr_assert_eq(graid_array_write(a, data, sizeof(data), 0), (ssize_t)sizeof(data));
	cr_assert_eq(graid_array_close(a), 0);
}

static void hashes(const struct au_set *s, uint64_t *h)
{
	for (unsigned i = 0; i < NM; i++)
		h[i] = au_file_hash(s->path[i]);
}

Test(reshape_open, a_recorded_reshape_is_refused_by_every_open_and_nothing_is_written)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	uint64_t before[NM], after[NM];
	struct graid_array *a = NULL;
	struct au_set s;

	make_array(&s);
	for (unsigned i = 0; i < NM; i++)
		sb_mark(s.path[i], true, 0);
	hashes(&s, before);
	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), -EOPNOTSUPP);
	cr_assert_null(a);
	cr_assert_eq(graid_array_open(s.paths, NM, &ro, &a), -EOPNOTSUPP, "a look too");
	cr_assert_null(a);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(log_text, "reshape in progress, this build cannot resume it"), "%s",
		  log_text);
	cr_assert(strstr(log_text, "nothing was written"), "%s", log_text);
	hashes(&s, after);
	for (unsigned i = 0; i < NM; i++)
		cr_assert_eq(after[i], before[i], "member %u was written", i);
	/* Without the mark the same members open: the refusal was the reshape's. */
	for (unsigned i = 0; i < NM; i++)
		sb_mark(s.path[i], false, 0);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	au_remove(&s);
}

Test(reshape_open, only_the_freshest_superblock_counts)
{
	struct graid_array *a = NULL;
	struct au_set s;
	uint64_t ev;

	make_array(&s);
	ev = sb_events(s.path[0]);
	/*
	 * A crash in the round that ended a reshape: one member still at the event before,
	 * marked; the others past it, not. The array is no longer reshaping.
	 */
	sb_mark(s.path[2], true, ev - 1);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	/* The other way round: the freshest is marked, so the reshape is not over. */
	ev = sb_events(s.path[0]);
	sb_mark(s.path[1], true, ev + 1);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), -EOPNOTSUPP);
	au_remove(&s);
}
