/* SPDX-License-Identifier: MIT */
/*
 * The write-hole journal (GRAID_CREATE_JOURNAL). The hole: a crash between one member's
 * in-place write and another's leaves a stripe whose parity matches neither its old nor its
 * new data; lose a member before any resync and its chunk is rebuilt from that parity as
 * bytes nobody wrote. These tests kill a writer at every member write of a stripe update,
 * reopen with the members holding *untouched* chunks missing, and check every block reads
 * as its old or its new content — and that without the journal the same kills do expose
 * the hole, so the scenario is one that can fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "meta/journal.h"
#include "format/layout.h"
#include "format/superblock.h"
#include "testutil.h"

#define JT_CHUNK 4096u
#define JT_MEMBER_BYTES (48u << 20)
#define JT_DEPTH 16

static int jt_create(struct au_set *s, unsigned n, int level, uint32_t chunk, unsigned flags,
		     struct graid_array **a)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = level, .chunk_bytes = chunk,
		.backend = "isal", .flags = flags | GRAID_CREATE_FORCE,
	};

	return graid_array_create(s->paths, n, &cfg, a);
}

static void jt_pattern(uint8_t *p, size_t len, uint64_t off, uint32_t gen)
{
	for (size_t i = 0; i < len; i += 8) {
		uint64_t v = ((off + i) << 8 | gen) * 0x9E3779B97F4A7C15ull;

		memcpy(p + i, &v, 8);
	}
}

/*
 * Read data chunks [0, nchunks) of stripe 0 and count those holding bytes nobody wrote:
 * neither generation 1 nor, for the first nwritten chunks, generation 2.
 */
static unsigned jt_count_unwritten(struct graid_array *a, unsigned nchunks, unsigned nwritten)
{
	uint8_t *buf, *want = malloc(JT_CHUNK);
	unsigned bad = 0;

	cr_assert_eq(posix_memalign((void **)&buf, 4096, (size_t)nchunks * JT_CHUNK), 0);
	cr_assert_eq(graid_array_read(a, buf, (size_t)nchunks * JT_CHUNK, 0),
		     (ssize_t)nchunks * JT_CHUNK);
	for (unsigned d = 0; d < nchunks; d++) {
		uint8_t *got = buf + (size_t)d * JT_CHUNK;
		bool ok;

		jt_pattern(want, JT_CHUNK, (uint64_t)d * JT_CHUNK, 1);
		ok = !memcmp(got, want, JT_CHUNK);
		if (!ok && d < nwritten) {
			jt_pattern(want, JT_CHUNK, (uint64_t)d * JT_CHUNK, 2);
			ok = !memcmp(got, want, JT_CHUNK);
		}
		if (!ok)
			cr_log_info("chunk d%u holds bytes never written", d);
		bad += !ok;
	}
	free(want);
	free(buf);
	return bad;
}

static int jt_open_quiet(const char *const *paths, unsigned n, struct graid_array **a)
{
	int rc, tries = 0;

	/* A member still locked would be left out as "in use", not refused: wait for all. */
	au_wait_unlocked(paths, n);
	/* A killed child's ring may hold the members' locks a moment longer. */
	while ((rc = graid_array_open(paths, n, NULL, a)) == -EBUSY && tries++ < 100)
		usleep(20 * 1000);
	return rc;
}

/*
 * One kill: stripe 0 holds generation 1 everywhere; a child rewrites data chunks
 * [0, nwrite) of it with generation 2 and is killed at write k (from 0) to member `victim`.
 * Reopen without the members in `missing` and read the stripe: returns the number of
 * blocks that are neither generation (0 is right).
 */
static unsigned jt_kill_once(int level, unsigned n, unsigned flags, unsigned nwrite,
			     unsigned victim, unsigned k, const unsigned *missing, unsigned nmissing,
			     bool *killed, uint64_t *replayed)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct layout lay;
	struct au_set s;
	struct graid_array *a;
	const char *paths[AU_MAX];
	unsigned np = 0, bad = 0;
	size_t stripe_bytes;
	uint8_t *buf;
	int status;
	pid_t pid;

	au_make(&s, n, JT_MEMBER_BYTES);
	cr_assert_eq(jt_create(&s, n, level, JT_CHUNK, flags, &a), 0);
	cr_assert_eq(layout_init(&lay, level, n, JT_CHUNK, 1u << 20), 0);
	stripe_bytes = (size_t)lay.ndata * JT_CHUNK;
	cr_assert_eq(posix_memalign((void **)&buf, 4096, stripe_bytes), 0);
	jt_pattern(buf, stripe_bytes, 0, 1);
	cr_assert_eq(graid_array_write(a, buf, stripe_bytes, 0), (ssize_t)stripe_bytes);
	cr_assert_eq(graid_array_close(a), 0);

	pid = fork();
	if (pid == 0) {
		char spec[400];

		graid_log_set(NULL, NULL, 0);
		memcpy(paths, s.paths, n * sizeof(*paths));
		snprintf(spec, sizeof(spec), "faulty:kill-after=%u:%s", k, s.paths[victim]);
		paths[victim] = spec;
		if (graid_array_open(paths, n, NULL, &a))
			_exit(3);
		jt_pattern(buf, (size_t)nwrite * JT_CHUNK, 0, 2);
		_exit(graid_array_write(a, buf, (size_t)nwrite * JT_CHUNK, 0) ==
				      (ssize_t)nwrite * JT_CHUNK ? 0 : 4);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	*killed = WIFSIGNALED(status);
	cr_assert(*killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
		  "child failed with status %d", status);
	usleep(150 * 1000); /* the dead ring's last writes land (a power cut has no afterlife) */

	for (unsigned i = 0; i < n; i++) {
		bool gone = false;

		for (unsigned j = 0; j < nmissing; j++)
			gone |= missing[j] == i;
		if (!gone)
			paths[np++] = s.paths[i];
	}
	cr_assert_eq(jt_open_quiet(paths, np, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	*replayed += info.journal_replayed;
	bad = jt_count_unwritten(a, lay.ndata, nwrite);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
	return bad;
}

/*
 * Every kill point of every member, for writes of one chunk (read-modify-write) and of all
 * but one chunk (reconstruct-write); the last data chunk is never written and its member
 * is missing at reopen (RAID-6: with the P member too). Returns the total of bad blocks.
 */
static unsigned jt_kill_matrix(int level, unsigned n, unsigned flags, unsigned *kills)
{
	struct layout lay;
	unsigned bad = 0;
	uint64_t replayed = 0;

	cr_assert_eq(layout_init(&lay, level, n, JT_CHUNK, 1u << 20), 0);
	*kills = 0;
	for (unsigned nwrite = 1; nwrite < lay.ndata; nwrite += lay.ndata - 2) {
		unsigned missing[2] = { layout_data_member(&lay, 0, lay.ndata - 1),
					layout_parity_member(&lay, 0, 0) };

		for (unsigned victim = 0; victim < n; victim++)
			for (unsigned k = 0; k < 4; k++) {
				bool killed;
				unsigned b = jt_kill_once(level, n, flags, nwrite, victim, k, missing,
							  lay.nparity, &killed, &replayed);

				*kills += killed;
				if (b && (flags & GRAID_CREATE_JOURNAL))
					cr_log_error("RAID-%d, %u chunks written, killed at write %u "
						     "of member %u: %u blocks hold bytes never "
						     "written", level, nwrite, k + 1, victim, b);
				bad += b;
			}
		if (lay.ndata <= 2)
			break;
	}
	/* Kills after every entry was logged must have been finished by a replay. */
	if (flags & GRAID_CREATE_JOURNAL)
		cr_assert_gt(replayed, 0, "no kill left an update to replay");
	else
		cr_assert_eq(replayed, 0);
	return bad;
}

Test(journal, raid5_kills_then_a_lost_member_never_read_unwritten_bytes, .timeout = 600)
{
	unsigned kills;

	tu_need_fault_injection();
	cr_assert_eq(jt_kill_matrix(5, 4, GRAID_CREATE_JOURNAL, &kills), 0);
	cr_assert_gt(kills, 8, "only %u of the children were killed mid-update", kills);
}

Test(journal, raid6_kills_then_two_lost_members_never_read_unwritten_bytes, .timeout = 600)
{
	unsigned kills;

	tu_need_fault_injection();
	cr_assert_eq(jt_kill_matrix(6, 5, GRAID_CREATE_JOURNAL, &kills), 0);
	cr_assert_gt(kills, 8, "only %u of the children were killed mid-update", kills);
}

/* The control: the same kills without the journal do return bytes nobody wrote. */
Test(journal, without_it_the_write_hole_is_real, .timeout = 600)
{
	unsigned kills;

	tu_need_fault_injection();
	cr_assert_gt(jt_kill_matrix(5, 4, 0, &kills), 0,
		     "no kill exposed the write hole: the scenario above proves nothing");
}

/* Levels without parity have no hole to close: refused, and nothing is written. */
Test(journal, refused_for_levels_without_parity)
{
	static const int levels[] = { 0, 1, 10 };
	struct au_set s;
	struct graid_array *a = NULL;
	uint64_t before[4];

	au_make(&s, 4, JT_MEMBER_BYTES);
	for (unsigned i = 0; i < 4; i++)
		before[i] = au_file_hash(s.paths[i]);
	for (unsigned i = 0; i < 3; i++)
		cr_assert_eq(jt_create(&s, 4, levels[i], 0, GRAID_CREATE_JOURNAL, &a), -EINVAL,
			     "RAID-%d", levels[i]);
	for (unsigned i = 0; i < 4; i++)
		cr_assert_eq(au_file_hash(s.paths[i]), before[i], "member %u changed", i);
	au_remove(&s);
}

/* Members too small for the log as well as the data are refused up front. */
Test(journal, member_too_small_for_the_log_is_refused)
{
	struct au_set s;
	struct graid_array *a = NULL;

	au_make(&s, 4, 20u << 20);
	cr_assert_eq(jt_create(&s, 4, 6, 0, 0, &a), 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(jt_create(&s, 4, 6, 0, GRAID_CREATE_JOURNAL, &a), -EINVAL);
	au_remove(&s);
}

/*
 * Far more bytes than the log holds, through a deep queue of mixed sizes (the log wraps and
 * checkpoints many times), then a clean reopen and two lost members: all of it reads back,
 * and scrub finds every stripe consistent.
 */
static void jt_wrap(int level, unsigned n, uint32_t chunk)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_completion c[JT_DEPTH];
	uint64_t rng = tu_seed() ^ 0x6a6f75726e616cull, written = 0, goal;
	uint64_t slot_off[JT_DEPTH];
	size_t slot_len[JT_DEPTH] = { 0 };
	struct graid_array *a;
	struct graid_queue *q;
	struct au_set s;
	uint8_t *model, *bufs, *got;
	size_t size, slot_bytes = 1u << 20;
	unsigned inflight = 0, lost = level == 6 ? 2 : 1;

	au_make(&s, n, JT_MEMBER_BYTES + (8u << 20));
	cr_assert_eq(jt_create(&s, n, level, chunk, GRAID_CREATE_JOURNAL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_geq(info.journal_bytes, 32u << 20);
	size = info.size;
	goal = 8 * info.journal_bytes; /* a few laps of every member's log */
	model = calloc(1, size);
	got = malloc(size);
	cr_assert_eq(posix_memalign((void **)&bufs, 4096, JT_DEPTH * slot_bytes), 0);
	cr_assert_eq(graid_queue_create(a, JT_DEPTH, &q), 0);
	while (written < goal || inflight) {
		for (unsigned slot = 0; slot < JT_DEPTH && written < goal; slot++) {
			size_t len = (size_t)(1 + tu_rand(&rng) % (slot_bytes / 4096)) * 4096;
			uint64_t off;
			bool clash;

			if (slot_len[slot])
				continue;
			if (tu_rand(&rng) % 2)
				len = 4096 * (1 + tu_rand(&rng) % 4);
			/* Writes in flight together never overlap: their order is not defined. */
			do {
				off = tu_rand(&rng) % ((size - len) / 4096 + 1) * 4096;
				clash = false;
				for (unsigned o = 0; o < JT_DEPTH; o++)
					clash |= slot_len[o] && off < slot_off[o] + slot_len[o] &&
						 slot_off[o] < off + len;
			} while (clash);
			tu_fill(&rng, bufs + slot * slot_bytes, len);
			memcpy(model + off, bufs + slot * slot_bytes, len);
			cr_assert_eq(graid_queue_write(q, bufs + slot * slot_bytes, len, off, slot), 0);
			slot_off[slot] = off;
			slot_len[slot] = len;
			inflight++;
			written += len;
		}
		int got_n = graid_queue_reap(q, c, JT_DEPTH, 1);

		cr_assert_gt(got_n, 0);
		for (int i = 0; i < got_n; i++) {
			unsigned slot = (unsigned)c[i].user_data;

			cr_assert_eq(c[i].result, (int64_t)slot_len[slot]);
			slot_len[slot] = 0;
			inflight--;
		}
	}
	graid_queue_destroy(q);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0);
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s.paths + lost, n - lost, NULL, &a), 0);
	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.journal_replayed, 0, "a clean close leaves nothing to replay");
	cr_assert_eq(graid_array_read(a, got, size, 0), (ssize_t)size);
	cr_assert(!memcmp(got, model, size), "degraded read-back differs from what was written");
	cr_assert_eq(graid_array_close(a), 0);
	free(model);
	free(got);
	free(bufs);
	au_remove(&s);
}

Test(journal, raid6_log_wraps_and_everything_reads_back, .timeout = 600)
{
	jt_wrap(6, 6, 64 * 1024);
}

Test(journal, raid5_log_wraps_with_small_chunks, .timeout = 600)
{
	jt_wrap(5, 4, 4096);
}

/* ---- a crash between two members' checkpoint records ------------------------------------ */

/* Read member `path`'s log area: its log offset, the highest record generation, the highest entry seq. */
static void jr_scan(const char *path, uint64_t *log_off, uint8_t uuid[16], uint64_t *max_gen,
		    uint64_t *max_seq)
{
	uint8_t sb[4096], blk[4096];
	uint64_t log_bytes;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	memcpy(uuid, sb + 0x18, 16);
	memcpy(log_off, sb + 0x88, 8);
	memcpy(&log_bytes, sb + 0x90, 8);
	cr_assert_gt(log_bytes, 0);
	*max_gen = 0;
	*max_seq = 0;
	for (uint64_t at = 0; at < log_bytes; at += 4096) {
		uint64_t v;

		cr_assert_eq(pread(fd, blk, 4096, (off_t)(*log_off + at)), 4096);
		if (at < JOURNAL_FIRST_ENTRY && !memcmp(blk, JOURNAL_RECORD_MAGIC, 8)) {
			memcpy(&v, blk + 0x20, 8);
			if (v > *max_gen)
				*max_gen = v;
		} else if (at >= JOURNAL_FIRST_ENTRY && !memcmp(blk, JOURNAL_ENTRY_MAGIC, 8)) {
			memcpy(&v, blk + 0x20, 8);
			if (v > *max_seq)
				*max_seq = v;
		}
	}
	close(fd);
}

/* Write the record a checkpoint would write (generation gen, tail and durable mark). */
static void jr_write_record(const char *path, uint64_t log_off, const uint8_t uuid[16],
			    uint64_t gen, uint64_t tail)
{
	uint8_t blk[4096] = { 0 };
	uint32_t ver = JOURNAL_VERSION, crc;
	int fd = open(path, O_WRONLY);

	memcpy(blk, JOURNAL_RECORD_MAGIC, 8);
	memcpy(blk + 0x0c, &ver, 4);
	memcpy(blk + 0x10, uuid, 16);
	memcpy(blk + 0x20, &gen, 8);
	memcpy(blk + 0x28, &tail, 8);
	memcpy(blk + 0x30, &tail, 8);
	crc = crc32c(blk, 4096);
	memcpy(blk + 0x08, &crc, 4);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, blk, 4096, (off_t)(log_off + (gen % 2) * 4096)), 4096);
	close(fd);
}

/*
 * A journalled RAID-5 on the first 4 of @p nfiles files (the 5th, if any, its hot spare),
 * with generation 1 written over its first 3 chunks (row 0), then closed. Returns the
 * 3-chunk buffer, aligned, for the caller's later generations.
 */
static uint8_t *jr_first_row_closed(struct au_set *s, unsigned nfiles)
{
	struct graid_array *a;
	uint8_t *buf;

	au_make(s, nfiles, JT_MEMBER_BYTES);
	cr_assert_eq(jt_create(s, 4, 5, JT_CHUNK, GRAID_CREATE_JOURNAL, &a), 0);
	if (nfiles > 4)
		cr_assert_eq(graid_array_add_spare(a, s->paths[4]), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 3 * JT_CHUNK), 0);
	jt_pattern(buf, 3 * JT_CHUNK, 0, 1);
	cr_assert_eq(graid_array_write(a, buf, 3 * JT_CHUNK, 0), 3 * JT_CHUNK);
	cr_assert_eq(graid_array_close(a), 0);
	return buf;
}

/*
 * Two updates of stripe 0 (RAID-5, 4 members: d0 on m0, d1 on m1, d2 on m2, P on m3): s
 * rewrites d1 (participants m1, P), s2 rewrites d0 (m0, P). Both finish and are flushed.
 * Then a checkpoint (or the records of graid_array_close) starts: journal_write_records()
 * writes the record with the new tail to role 0 first, and the process dies before role 1.
 * Reopen without m2: d2 must read as generation 1.
 */
static unsigned jr_mixed_tails(bool crash_between_records)
{
	struct au_set s;
	struct graid_array *a;
	const char *paths[4];
	uint8_t *buf, uuid[16];
	uint64_t log_off, gen, seq, g2, s2;
	unsigned bad = 0;
	int status;
	pid_t pid;

	buf = jr_first_row_closed(&s, 4);

	pid = fork();
	if (pid == 0) {
		graid_log_set(NULL, NULL, 0);
		if (graid_array_open(s.paths, 4, NULL, &a))
			_exit(3);
		jt_pattern(buf, 3 * JT_CHUNK, 0, 2);
		if (graid_array_write(a, buf + JT_CHUNK, JT_CHUNK, JT_CHUNK) != JT_CHUNK) /* s: d1 */
			_exit(4);
		if (graid_array_write(a, buf, JT_CHUNK, 0) != JT_CHUNK) /* s2: d0 */
			_exit(5);
		if (graid_array_flush(a))
			_exit(6);
		_exit(0); /* killed: no close */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);

	jr_scan(s.paths[3], &log_off, uuid, &gen, &seq);
	jr_scan(s.paths[0], &log_off, uuid, &g2, &s2);
	cr_assert_geq(seq, 2, "no entries on the parity member");
	if (crash_between_records)
		jr_write_record(s.paths[0], log_off, uuid, (gen > g2 ? gen : g2) + 1, seq + 1);

	paths[0] = s.paths[0];
	paths[1] = s.paths[1];
	paths[2] = s.paths[3];
	cr_assert_eq(jt_open_quiet(paths, 3, &a), 0);
	bad = jt_count_unwritten(a, 3, 2);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
	return bad;
}

Test(journal, unclean_exit_after_flush_reads_back)
{
	cr_assert_eq(jr_mixed_tails(false), 0);
}

Test(journal, crash_between_two_members_checkpoint_records_replays_nothing_stale)
{
	cr_assert_eq(jr_mixed_tails(true), 0);
}

/*
 * A member that fails during an update's in-place writes hands its role to a hot spare at
 * once (REBUILDING, usable at the next open), and the spare has no entry for the update.
 * RAID-5, 4 members + spare; the update rewrites d0 (m0) and d1 (m1), P on m3. m0's in-place
 * write fails, m3's is slow, the process dies before it lands: d1 is new, P old. Reopen with
 * the spare in role 0: d0 is rebuilt from P, so the update must be replayed.
 */
static void *jr_die_later(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
	raise(SIGKILL);
	return NULL;
}

Test(journal, spare_taking_over_mid_update_does_not_block_its_replay, .timeout = 120)
{
	struct au_set s;
	struct graid_array *a;
	const char *paths[5];
	char spec0[400], spec3[400];
	uint8_t *buf;
	unsigned bad = 0;
	int status;
	pid_t pid;

	tu_need_fault_injection();
	buf = jr_first_row_closed(&s, 5);

	pid = fork();
	if (pid == 0) {
		pthread_t t;

		snprintf(spec0, sizeof(spec0), "faulty:write-eio-after=1:%s", s.paths[0]);
		snprintf(spec3, sizeof(spec3), "faulty:stall-us=600000:%s", s.paths[3]);
		paths[0] = spec0;
		paths[1] = s.paths[1];
		paths[2] = s.paths[2];
		paths[3] = spec3;
		paths[4] = s.paths[4];
		if (graid_array_open(paths, 5, NULL, &a))
			_exit(3);
		jt_pattern(buf, 2 * JT_CHUNK, 0, 2);
		/* logs land at ~0.6 s, m3's in-place write at ~1.2 s: die in between. */
		pthread_create(&t, NULL, jr_die_later, (void *)(uintptr_t)900000);
		graid_array_write(a, buf, 2 * JT_CHUNK, 0);
		_exit(4); /* not reached if the write is as slow as planned */
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "child was not killed mid-update: status %d", status);
	usleep(150 * 1000);

	paths[0] = s.paths[4]; /* the spare, now role 0 */
	paths[1] = s.paths[1];
	paths[2] = s.paths[2];
	paths[3] = s.paths[3];
	cr_assert_eq(jt_open_quiet(paths, 4, &a), 0);
	{
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(a, 0, &mi), 0);
		cr_log_info("role 0 state %d (3 = rebuilding)", mi.state);
	}
	bad = jt_count_unwritten(a, 3, 2);
	cr_assert_eq(graid_array_close(a), 0);
	free(buf);
	au_remove(&s);
	cr_assert_eq(bad, 0);
}
