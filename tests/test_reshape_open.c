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
#include "meta/reshape_rec.h"

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

/*
 * A record of the RAID-5 of 3 the array of @p s grew from, written through the open array
 * to every member at generation @p gen, position @p pos; the array then closed.
 */
static void write_record(struct au_set *s, uint64_t gen, uint64_t pos)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r;
	struct graid_array *a;
	struct superblock sb;

	cr_assert_eq(graid_array_open(s->paths, NM, NULL, &a), 0);
	cr_assert_eq(member_read_sb(&a->members[0], &sb), 0);
	memset(&r, 0, sizeof(r));
	memcpy(r.array_uuid, sb.array_uuid, 16);
	r.generation = gen;
	r.position = pos;
	r.phase = RESHAPE_PHASE_COPY;
	/* Backward: a reshape this build does not resume (a RAID-5 growing forward it does). */
	r.direction = RESHAPE_BACKWARD;
	r.old_geo = (struct reshape_geom){ 5, NM - 1, sb.chunk_bytes, 0, sb.data_bytes };
	r.new_geo = (struct reshape_geom){ sb.level, sb.nmembers, sb.chunk_bytes, 0,
					   sb.data_bytes };
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	r.nadded = 1;
	r.added_id[0] = sb.slot_id[NM - 1];
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM);
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
}

/* The refusal's log says where the record says the reshape stands. */
Test(reshape_open, the_refusal_names_the_records_state)
{
	uint64_t before[NM], after[NM];
	struct graid_array *a = NULL;
	char want[128];
	struct au_set s;

	make_array(&s);
	write_record(&s, 9, 3 * 65536);
	for (unsigned i = 0; i < NM; i++)
		sb_mark(s.path[i], true, 0);
	hashes(&s, before);
	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_null(a);
	cr_assert(strstr(log_text, "reshape in progress, this build cannot resume it"), "%s",
		  log_text);
	snprintf(want, sizeof(want), "RAID-5 of 3 -> RAID-5 of 4, at byte %u of ", 3 * 65536);
	cr_assert(strstr(log_text, want), "%s", log_text);
	cr_assert(strstr(log_text, "phase COPY, generation 9"), "%s", log_text);
	cr_assert_null(strstr(log_text, "no valid record"), "%s", log_text);
	hashes(&s, after);
	for (unsigned i = 0; i < NM; i++)
		cr_assert_eq(after[i], before[i], "member %u was written", i);
	au_remove(&s);
}

/*
 * Superblocks that say reshaping with no valid record on any member (never written, or
 * every copy torn): damaged, refused, and the log says so.
 */
Test(reshape_open, reshaping_without_a_valid_record_is_refused_as_damaged)
{
	struct graid_array *a = NULL;
	struct au_set s;

	make_array(&s);
	for (unsigned i = 0; i < NM; i++)
		sb_mark(s.path[i], true, 0);
	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_WARNING);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert_null(a);
	cr_assert(strstr(log_text, "no valid record was found"), "%s", log_text);
	cr_assert(strstr(log_text, "damaged"), "%s", log_text);
	cr_assert(strstr(log_text, "block 0: not used: no reshape record magic"),
		  "each copy's reason is logged: %s", log_text);
	au_remove(&s);
}

/* Record @p r, as written by hand, in block @p b of file @p path. */
static void record_put(const char *path, const struct reshape_record *r, unsigned b)
{
	uint8_t buf[RESHAPE_COPY_BYTES];
	int fd = open(path, O_RDWR);

	reshape_encode(r, buf);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, buf, sizeof(buf), GRAID_SB_RESHAPE_OFFSET + b * RESHAPE_COPY_BYTES),
		     (ssize_t)sizeof(buf));
	close(fd);
}

/* The generation in block 0 of file @p path, 0 if it holds no valid copy. */
static uint64_t record_gen(const char *path)
{
	uint8_t buf[RESHAPE_COPY_BYTES];
	struct reshape_record r;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, buf, sizeof(buf), GRAID_SB_RESHAPE_OFFSET), (ssize_t)sizeof(buf));
	close(fd);
	return reshape_decode(buf, &r, NULL) ? 0 : r.generation;
}

/*
 * A hot spare is no current member: reshape_rec_write() writes only the layout's roles, so
 * any record a spare holds is left from an earlier life as a member (failed, then added
 * back as a spare) and is stale. It must neither outrank the members' newest record nor
 * stand in for a record the members lack (that array is damaged).
 */
Test(reshape_open, a_spares_stale_record_is_not_read)
{
	struct reshape_rec_io io = { 0 };
	struct reshape_record r;
	struct graid_array *a = NULL;
	struct superblock sb;
	struct au_set s;
	char data[65536];

	au_make(&s, NM + 1, BYTES);
	cr_assert_eq(au_create(&s, NM, 5, 65536, &a), 0);
	memset(data, 0x5c, sizeof(data));
	cr_assert_eq(graid_array_write(a, data, sizeof(data), 0), (ssize_t)sizeof(data));
	cr_assert_eq(graid_array_add_spare(a, s.paths[NM]), 0);
	cr_assert_eq(member_read_sb(&a->members[0], &sb), 0);
	memset(&r, 0, sizeof(r));
	memcpy(r.array_uuid, sb.array_uuid, 16);
	r.generation = 9;
	r.position = 3 * 65536;
	r.phase = RESHAPE_PHASE_COPY;
	/* Backward: a reshape this build does not resume (a RAID-5 growing forward it does). */
	r.direction = RESHAPE_BACKWARD;
	r.old_geo = (struct reshape_geom){ 5, NM - 1, sb.chunk_bytes, 0, sb.data_bytes };
	r.new_geo = (struct reshape_geom){ sb.level, sb.nmembers, sb.chunk_bytes, 0,
					   sb.data_bytes };
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	r.nadded = 1;
	r.added_id[0] = sb.slot_id[NM - 1];
	cr_assert_eq(reshape_rec_write(a, &io, &r, true), NM, "the layout's roles only");
	reshape_rec_io_free(a, &io);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(record_gen(s.path[NM]), 0, "reshape_rec_write never writes a spare");
	r.generation = 12;
	r.position = 5 * 65536;
	record_put(s.path[NM], &r, 0);
	for (unsigned i = 0; i < NM + 1; i++)
		sb_mark(s.path[i], true, 0);

	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(s.paths, NM + 1, NULL, &a), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(log_text, "phase COPY, generation 9"), "the members' record: %s",
		  log_text);
	cr_assert_null(strstr(log_text, "generation 12"), "the spare's record: %s", log_text);

	/* The members' copies gone: the spare's must not stand in for them. */
	memset(data, 0, sizeof(data));
	for (unsigned i = 0; i < NM; i++) {
		int fd = open(s.path[i], O_RDWR);

		cr_assert_geq(fd, 0);
		cr_assert_eq(pwrite(fd, data, 2 * RESHAPE_COPY_BYTES, GRAID_SB_RESHAPE_OFFSET),
			     (ssize_t)(2 * RESHAPE_COPY_BYTES));
		close(fd);
	}
	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_ERR);
	cr_assert_eq(graid_array_open(s.paths, NM + 1, NULL, &a), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(log_text, "no valid record was found"), "%s", log_text);
	au_remove(&s);
}

/*
 * Every copy not used is logged naming the member, the block and why (FORMAT.md): a valid
 * copy of another array's record too, not only one that does not decode.
 */
Test(reshape_open, a_copy_of_another_arrays_record_is_logged_as_not_used)
{
	struct graid_array *a = NULL;
	struct reshape_record r;
	struct superblock sb;
	struct au_set s;
	char want[400];

	make_array(&s);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), 0);
	cr_assert_eq(member_read_sb(&a->members[0], &sb), 0);
	cr_assert_eq(graid_array_close(a), 0);
	memset(&r, 0, sizeof(r));
	memcpy(r.array_uuid, sb.array_uuid, 16);
	r.array_uuid[0] ^= 0xff; /* another array's */
	r.generation = 3;
	r.phase = RESHAPE_PHASE_COPY;
	/* Backward: a reshape this build does not resume (a RAID-5 growing forward it does). */
	r.direction = RESHAPE_BACKWARD;
	r.old_geo = (struct reshape_geom){ 5, NM - 1, sb.chunk_bytes, 0, sb.data_bytes };
	r.new_geo = (struct reshape_geom){ sb.level, sb.nmembers, sb.chunk_bytes, 0,
					   sb.data_bytes };
	r.stage_role[0] = r.stage_role[1] = RESHAPE_ROLE_NONE;
	r.nadded = 1;
	r.added_id[0] = sb.slot_id[NM - 1];
	for (unsigned i = 0; i < NM; i++) {
		record_put(s.path[i], &r, 0);
		record_put(s.path[i], &r, 1);
		sb_mark(s.path[i], true, 0);
	}
	log_text[0] = '\0';
	graid_log_set(log_keep, NULL, GRAID_LOG_WARNING);
	cr_assert_eq(graid_array_open(s.paths, NM, NULL, &a), -EOPNOTSUPP);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	cr_assert(strstr(log_text, "no valid record was found"), "%s", log_text);
	snprintf(want, sizeof(want), "reshape record: %s, block 1: not used: the record belongs "
		 "to another array", s.path[2]);
	cr_assert(strstr(log_text, want), "%s", log_text);
	au_remove(&s);
}
