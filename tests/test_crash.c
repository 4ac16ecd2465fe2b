/* SPDX-License-Identifier: MIT */
/*
 * Crash tests: a child writes known patterns through a deep queue and dies by SIGKILL many
 * times: at random moments, and (through a "faulty:kill-after=N" member) in the middle of a
 * stripe's member writes, like a power cut between the data and the parity reaching disk. After each reopen (resync of the dirty regions) — and in some rounds
 * after failing two members right away — every block must read back as its last completed
 * write or, for a write in flight at the kill, its old or its new content.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "testutil.h"

#define CR_MEMBER_BYTES ((1u << 20) + (4u << 20))
#define CR_BLOCK 4096u
#define CR_DEPTH 8

/* Shared with the child: per block, the round of the last completed and in-flight write. */
struct cr_log {
	volatile uint32_t done;
	volatile uint32_t inflight;
};

/* A round with this bit was a discard (or write-zeroes): its blocks read as zeroes. */
#define CR_ZERO_ROUND 0x80000000u

static void cr_pattern(uint8_t *p, uint64_t block, uint32_t round)
{
	if (round & CR_ZERO_ROUND) {
		memset(p, 0, CR_BLOCK);
		return;
	}
	for (unsigned i = 0; i < CR_BLOCK; i += 8) {
		uint64_t v = (block << 32 | round) * 0x9E3779B97F4A7C15ull + i;

		memcpy(p + i, &v, 8);
	}
}

/*
 * The child: write until killed. Each request covers 1..4 blocks nobody else has in flight;
 * with @p discards, a third of them are discards or write-zeroes of 1..24 blocks instead
 * (often whole stripes: the members deallocate them).
 */
static void cr_child(const char *const *given, unsigned n, struct cr_log *log,
		     uint64_t nblocks, uint64_t seed, bool discards)
{
	const char *paths[AU_MAX];
	char spec[400];
	struct graid_completion c[CR_DEPTH];
	struct graid_array *a;
	struct graid_queue *q;
	uint8_t *bufs;
	uint64_t rng = seed, slot_off[CR_DEPTH];
	unsigned slot_len[CR_DEPTH];
	uint32_t slot_round[CR_DEPTH];
	/* Rounds never repeat across children: the counter lives in the shared log, after the blocks. */
	volatile uint32_t *round_ctr = &log[nblocks].done;
	bool busy[CR_DEPTH] = { false };

	graid_log_set(NULL, NULL, 0);
	memcpy(paths, given, n * sizeof(*paths));
	if (GRAID_FAULT_INJECTION && (seed & 1)) {
		/*
		 * Die in the middle of a stripe update: this member's write never happens. (A
		 * build without fault injection has only the kills at random moments.)
		 */
		unsigned m = (unsigned)(tu_rand(&rng) % n);

		snprintf(spec, sizeof(spec), "faulty:kill-after=%u:%s",
			 (unsigned)(3 + tu_rand(&rng) % 40), given[m]);
		paths[m] = spec;
	}
	if (graid_array_open(paths, n, NULL, &a) || graid_queue_create(a, CR_DEPTH, &q) ||
	    posix_memalign((void **)&bufs, 4096, CR_DEPTH * 4 * CR_BLOCK))
		_exit(3);
	for (;;) {
		for (unsigned s = 0; s < CR_DEPTH; s++) {
			uint64_t b0;
			unsigned len;
			bool clash = false, zero;

			if (busy[s])
				continue;
			zero = discards && tu_rand(&rng) % 3 == 0;
			b0 = tu_rand(&rng) % nblocks;
			len = 1 + (unsigned)(tu_rand(&rng) % (zero ? 24 : 4));
			if (zero && tu_rand(&rng) % 2)
				b0 -= b0 % 12; /* whole stripes of the test arrays (12 blocks) */
			if (b0 + len > nblocks)
				len = (unsigned)(nblocks - b0);
			for (unsigned o = 0; o < CR_DEPTH; o++)
				if (busy[o] && b0 < slot_off[o] + slot_len[o] && slot_off[o] < b0 + len)
					clash = true;
			if (clash)
				continue;
			uint32_t round = ++*round_ctr | (zero ? CR_ZERO_ROUND : 0);
			int rc;

			for (unsigned k = 0; k < len; k++) {
				if (!zero)
					cr_pattern(bufs + (s * 4 + k) * CR_BLOCK, b0 + k, round);
				log[b0 + k].inflight = round;
			}
			__sync_synchronize();
			if (!zero)
				rc = graid_queue_write(q, bufs + s * 4 * CR_BLOCK, len * CR_BLOCK,
						       b0 * CR_BLOCK, s);
			else if (round & 1)
				rc = graid_queue_discard(q, b0 * CR_BLOCK, len * CR_BLOCK, s);
			else
				rc = graid_queue_write_zeroes(q, b0 * CR_BLOCK, len * CR_BLOCK, s);
			if (rc)
				_exit(4);
			busy[s] = true;
			slot_off[s] = b0;
			slot_len[s] = len;
			slot_round[s] = round;
		}
		int got = graid_queue_reap(q, c, CR_DEPTH, 1);

		for (int i = 0; i < got; i++) {
			unsigned s = (unsigned)c[i].user_data;

			if (c[i].result < 0)
				_exit(5);
			for (unsigned k = 0; k < slot_len[s]; k++)
				log[slot_off[s] + k].done = slot_round[s];
			__sync_synchronize();
			busy[s] = false;
		}
	}
}

static void cr_verify(struct graid_array *a, struct cr_log *log, uint64_t nblocks, int round)
{
	uint8_t *got = malloc(CR_BLOCK), *want = malloc(CR_BLOCK);

	for (uint64_t b = 0; b < nblocks; b++) {
		cr_assert_eq(graid_array_read(a, got, CR_BLOCK, b * CR_BLOCK), CR_BLOCK);
		cr_pattern(want, b, log[b].done);
		if (!memcmp(got, want, CR_BLOCK))
			continue;
		if (log[b].inflight != log[b].done) {
			cr_pattern(want, b, log[b].inflight);
			if (!memcmp(got, want, CR_BLOCK)) {
				log[b].done = log[b].inflight; /* the in-flight write landed */
				continue;
			}
		}
		{
			/* Name what is there instead: the multiplier is odd, so it can be undone. */
			uint64_t x, inv = 0x9E3779B97F4A7C15ull;

			for (int k = 0; k < 5; k++)
				inv *= 2 - 0x9E3779B97F4A7C15ull * inv;
			memcpy(&x, got, 8);
			x *= inv;
			cr_assert_fail("round %d: block %llu is neither its last completed write (%u) "
				       "nor the one in flight (%u); it holds block %llu's round %u "
				       "(seed %llu)", round, (unsigned long long)b, log[b].done,
				       log[b].inflight, (unsigned long long)(x >> 32),
				       (unsigned)x, (unsigned long long)tu_seed());
		}
	}
	for (uint64_t b = 0; b < nblocks; b++)
		log[b].inflight = log[b].done;
	free(got);
	free(want);
}

/*
 * With @p journal the array keeps the write-hole journal, and odd rounds reopen with
 * members *missing* — before any resync could run — instead of failing them after it.
 */
static void cr_run(int level, unsigned n, uint32_t chunk, int rounds, bool journal,
		   bool discards)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t rng = tu_seed() ^ 0x63726173;
	struct graid_array *a;
	struct au_set s;
	struct cr_log *log;
	uint64_t nblocks;
	uint8_t *buf = malloc(CR_BLOCK);

	rounds = tu_sweep(rounds);
	au_make(&s, n, CR_MEMBER_BYTES + (journal ? 32u << 20 : 0));
	if (journal) {
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
						  .chunk_bytes = chunk, .backend = "isal",
						  .flags = GRAID_CREATE_JOURNAL };

		cr_assert_eq(graid_array_create(s.paths, n, &cfg, &a), 0);
	} else {
		cr_assert_eq(au_create(&s, n, level, chunk, &a), 0);
	}
	cr_assert_eq(graid_array_info(a, &info), 0);
	nblocks = info.size / CR_BLOCK;
	log = mmap(NULL, (nblocks + 1) * sizeof(*log), PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(log, MAP_FAILED);
	for (uint64_t b = 0; b < nblocks; b++) {
		cr_pattern(buf, b, 0);
		cr_assert_eq(graid_array_write(a, buf, CR_BLOCK, b * CR_BLOCK), CR_BLOCK);
	}
	cr_assert_eq(graid_array_close(a), 0);
	for (int r = 0; r < rounds; r++) {
		uint64_t seed = tu_rand(&rng);
		/* A child with a kill-after member gets time to reach it; others die at random. */
		struct timespec ts = { 0, (long)((seed & 1) ? 900 : 2 + tu_rand(&rng) % 60) * 1000000L };
		pid_t pid = fork();
		int status;

		if (pid == 0)
			cr_child(s.paths, n, log, nblocks, seed, discards);
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFSIGNALED(status), "round %d: child exited %d before the kill", r,
			  WEXITSTATUS(status));
		/*
		 * A killed process's io_uring is torn down asynchronously: writes it had issued can
		 * land after waitpid() returns. A power cut has no such afterlife, so let them
		 * settle before the "reboot".
		 */
		usleep(150 * 1000);
		{
			/* The dead child's files stay locked until its ring is gone: wait for that. */
			int rc, tries = 0;

			const char *paths[AU_MAX];
			unsigned np = 0, lose = journal && r % 2 ? (level == 6 ? 2 : 1) : 0;

			/* Journal rounds lose members before anything could resync them. */
			for (unsigned i = 0; i < n; i++)
				if (!lose || (i != (unsigned)r % n && (lose < 2 || i != (unsigned)(r + 3) % n)))
					paths[np++] = s.paths[i];
			/* One member still locked would be left out, not refused: wait for all. */
			au_wait_unlocked(paths, np);
			while ((rc = graid_array_open(paths, np, NULL, &a)) == -EBUSY && tries++ < 100)
				usleep(20 * 1000);
			cr_assert_eq(rc, 0, "round %d: reopen: %s", r, graid_strerror(rc));
		}
		if (journal && r % 2) {
			/* Degraded from the start: the replay alone must have settled every stripe. */
		} else {
			/* The resync on open must have left no stripe inconsistent. */
			struct graid_scrub_report rep = { .struct_size = sizeof(rep) };

			cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
			cr_assert_eq(rep.mismatches, 0, "round %d: %llu stripes inconsistent after "
				     "the resync (first: stripe %llu)", r,
				     (unsigned long long)rep.mismatches,
				     (unsigned long long)rep.stripe[0]);
		}
		if (journal) {
			/* Members were lost at the reopen above. */
		} else if (r % 2 && level == 6) {
			/* Lose two members right after the resync: parity must already be right. */
			cr_assert_eq(graid_array_fail_member(a, (unsigned)(r % n)), 0);
			cr_assert_eq(graid_array_fail_member(a, (unsigned)((r + 3) % n)), 0);
		} else if (r % 2) {
			cr_assert_eq(graid_array_fail_member(a, (unsigned)(r % n)), 0);
		}
		cr_verify(a, log, nblocks, r);
		cr_assert_eq(graid_array_close(a), 0);
		if (r % 2) {
			/* Bring the failed members back for the next round: recreate from the data. */
			struct graid_array_config cfg = { .struct_size = sizeof(cfg) };
			uint8_t *all = malloc(info.size);

			cr_assert_eq(graid_array_open(s.paths, n, NULL, &a), 0);
			cr_assert_eq(graid_array_read(a, all, info.size, 0), (ssize_t)info.size);
			graid_array_close(a);
			cfg.level = level;
			cfg.chunk_bytes = chunk;
			cfg.backend = "isal";
			cfg.flags = GRAID_CREATE_FORCE | (journal ? GRAID_CREATE_JOURNAL : 0);
			cr_assert_eq(graid_array_create(s.paths, n, &cfg, &a), 0);
			cr_assert_eq(graid_array_write(a, all, info.size, 0), (ssize_t)info.size);
			graid_array_close(a);
			free(all);
		}
	}
	munmap(log, (nblocks + 1) * sizeof(*log));
	free(buf);
	au_remove(&s);
}

Test(crash, raid6_survives_kills_then_losing_two_members, .timeout = 900)
{
	cr_run(6, 6, 4096, 40, false, false);
}

Test(crash, raid5_survives_kills_then_losing_a_member, .timeout = 900)
{
	cr_run(5, 4, 8192, 30, false, false);
}

Test(crash, raid1_survives_kills_then_losing_a_copy, .timeout = 900)
{
	cr_run(1, 2, 4096, 20, false, false);
}

Test(crash, raid6_journal_survives_kills_then_two_members_missing_at_once, .timeout = 900)
{
	cr_run(6, 6, 4096, 30, true, false);
}

Test(crash, raid5_journal_survives_kills_then_a_member_missing_at_once, .timeout = 900)
{
	cr_run(5, 4, 8192, 24, true, false);
}

/* Killed in the middle of discards (deallocating whole stripes) and writes, then a loss. */
Test(crash, raid6_discards_survive_kills_then_losing_two_members, .timeout = 900)
{
	cr_run(6, 6, 4096, 30, false, true);
}

Test(crash, raid5_discards_survive_kills_then_losing_a_member, .timeout = 900)
{
	cr_run(5, 4, 16384, 24, false, true);
}

Test(crash, raid10_discards_survive_kills_then_losing_a_copy, .timeout = 900)
{
	cr_run(10, 4, 4096, 16, false, true);
}

Test(crash, raid5_journal_discards_survive_kills_then_a_member_missing, .timeout = 900)
{
	cr_run(5, 4, 8192, 16, true, true);
}
