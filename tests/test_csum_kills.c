/* SPDX-License-Identifier: MIT */
/*
 * Crashes of a checksummed array (docs/INTEGRITY.md, "Crashes"): a child writes, discards
 * and zeroes known patterns through a deep queue (half the children flushing now and then,
 * so that the bitmap clears regions) and dies by SIGKILL — at a random moment, or
 * (a "faulty:kill-after=N" member) between a stripe's member writes — with and without the
 * write-hole journal. After each reopen (resync in the foreground, or in the background
 * while the test already reads): no checksum error or tag error is reported (nothing was
 * corrupted), "unverified after crash" only in regions the bitmap had marked at the kill,
 * no checksum-lost-write outside them (the arrays keep write generations, as every
 * checksummed array of this version does: a record that disagrees with its data outside
 * the marked regions would be a lost write, and a crash makes none; docs/INTEGRITY.md,
 * "Lost writes", Crashes),
 * every block reads as its last completed write or the one in flight (a block read during a
 * background resync the same after it), a scrub finds nothing, and after a clean close every
 * valid tag on every member is the CRC of its block.
 *
 * GRAID_CSUM_KILLS sets the kills per test (default 12, 4 with GRAID_TEST_SWEEP=short; 1000
 * over the suite's tests for the long run: `meson test --benchmark csum_kills_long`).
 */
#include <errno.h>
#include <fcntl.h>
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
#include "csumutil.h"
#include "testutil.h"

#define KC_DEPTH 8
#define KC_ZERO_ROUND 0x80000000u

/* Shared with the child: per array block, the round of its last completed and in-flight write. */
struct kc_log {
	volatile uint32_t done;
	volatile uint32_t inflight;
};

struct kc_tally {
	uint64_t kills, kill_after, background, unverified, unverified_blocks, dirty_regions,
		 inflight_landed, ring_lost, lost_in_marked;
};

static void kc_pattern(uint8_t *p, uint64_t block, uint32_t round)
{
	if (round & KC_ZERO_ROUND) {
		memset(p, 0, CU_BLOCK);
		return;
	}
	for (unsigned i = 0; i < CU_BLOCK; i += 8) {
		uint64_t v = (block << 32 | round) * 0x9E3779B97F4A7C15ull + i;

		memcpy(p + i, &v, 8);
	}
}

/* Pick a request no other slot overlaps: 1..4 blocks, or with @p discards a third 1..24 zeroed. */
static bool kc_pick(uint64_t *rng, uint64_t nblocks, bool discards, const bool *busy,
		    const uint64_t *soff, const unsigned *slen, uint64_t *b0, unsigned *len,
		    bool *zero)
{
	*zero = discards && tu_rand(rng) % 3 == 0;
	*b0 = tu_rand(rng) % nblocks;
	*len = 1 + (unsigned)(tu_rand(rng) % (*zero ? 24 : 4));
	if (*b0 + *len > nblocks)
		*len = (unsigned)(nblocks - *b0);
	for (unsigned o = 0; o < KC_DEPTH; o++)
		if (busy[o] && *b0 < soff[o] + slen[o] && soff[o] < *b0 + *len)
			return false;
	return true;
}

static void kc_child(const struct au_set *s, struct kc_log *log, uint64_t nblocks, uint64_t seed,
		     bool discards, bool kill_after)
{
	const char *paths[AU_MAX];
	char spec[400];
	struct graid_completion c[KC_DEPTH];
	struct graid_array *a;
	struct graid_queue *q;
	uint8_t *bufs;
	uint64_t rng = seed, soff[KC_DEPTH];
	unsigned slen[KC_DEPTH];
	uint32_t sround[KC_DEPTH];
	volatile uint32_t *ctr = &log[nblocks].done; /* rounds never repeat across children */
	bool busy[KC_DEPTH] = { false };
	/*
	 * Half the writers flush every few dozen completions, as a file system does: the
	 * flushes let the bitmap clear quiet regions, whose tags must then be on the members.
	 */
	unsigned flush_every = seed & 2 ? 8 + (unsigned)(tu_rand(&rng) % 56) : 0, since = 0;

	graid_log_set(NULL, NULL, 0);
	memcpy(paths, s->paths, s->n * sizeof(*paths));
	if (kill_after) {
		unsigned m = (unsigned)(tu_rand(&rng) % s->n);

		snprintf(spec, sizeof(spec), "faulty:kill-after=%u:%s",
			 (unsigned)(3 + tu_rand(&rng) % 60), s->paths[m]);
		paths[m] = spec;
	}
	if (graid_array_open(paths, s->n, NULL, &a) || graid_queue_create(a, KC_DEPTH, &q) ||
	    posix_memalign((void **)&bufs, 4096, KC_DEPTH * 4 * CU_BLOCK))
		_exit(3);
	for (;;) {
		for (unsigned sl = 0; sl < KC_DEPTH; sl++) {
			uint64_t b0;
			unsigned len;
			bool zero;
			uint32_t round;
			int rc;

			if (busy[sl] || !kc_pick(&rng, nblocks, discards, busy, soff, slen, &b0, &len,
						 &zero))
				continue;
			round = ++*ctr | (zero ? KC_ZERO_ROUND : 0);
			for (unsigned k = 0; k < len; k++) {
				if (!zero)
					kc_pattern(bufs + (sl * 4 + k) * CU_BLOCK, b0 + k, round);
				log[b0 + k].inflight = round;
			}
			__sync_synchronize();
			if (!zero)
				rc = graid_queue_write(q, bufs + sl * 4 * CU_BLOCK, len * CU_BLOCK,
						       b0 * CU_BLOCK, sl);
			else if (round & 1)
				rc = graid_queue_discard(q, b0 * CU_BLOCK, len * CU_BLOCK, sl);
			else
				rc = graid_queue_write_zeroes(q, b0 * CU_BLOCK, len * CU_BLOCK, sl);
			if (rc)
				_exit(4);
			busy[sl] = true;
			soff[sl] = b0;
			slen[sl] = len;
			sround[sl] = round;
		}
		int got = graid_queue_reap(q, c, KC_DEPTH, 1);

		for (int i = 0; i < got; i++) {
			unsigned sl = (unsigned)c[i].user_data;

			if (c[i].result < 0)
				_exit(5);
			for (unsigned k = 0; k < slen[sl]; k++)
				log[soff[sl] + k].done = sround[sl];
			__sync_synchronize();
			busy[sl] = false;
		}
		since += got > 0 ? (unsigned)got : 0;
		if (flush_every && since >= flush_every) {
			if (graid_array_flush(a))
				_exit(6);
			since = 0;
		}
	}
}

/* The regions the members' bitmaps mark (OR of the copies), and the stripes a region holds. */
struct kc_bitmap {
	uint8_t *bits;
	uint64_t bytes, region_stripes;
};

static uint64_t kc_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void kc_bitmap_read(struct kc_bitmap *bm, const struct au_set *s)
{
	memset(bm, 0, sizeof(*bm));
	for (unsigned m = 0; m < s->n; m++) {
		uint8_t sb[4096], *b;
		int fd = open(s->paths[m], O_RDONLY);

		cr_assert_geq(fd, 0);
		cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
		if (!bm->bits) {
			bm->bytes = kc_le64(sb + 0x80);
			bm->region_stripes = kc_le64(sb + 0x98);
			cr_assert(bm->bytes && bm->region_stripes, "no write-intent bitmap to compare with");
			bm->bits = calloc(1, bm->bytes);
		}
		b = malloc(bm->bytes);
		cr_assert_eq(pread(fd, b, bm->bytes, (off_t)kc_le64(sb + 0x78)), (ssize_t)bm->bytes);
		for (uint64_t i = 0; i < bm->bytes; i++)
			bm->bits[i] |= b[i];
		free(b);
		close(fd);
	}
}

static bool kc_bitmap_marked(const struct kc_bitmap *bm, uint64_t stripe)
{
	uint64_t r = stripe / bm->region_stripes;

	return r / 8 < bm->bytes && (bm->bits[r / 8] >> (r % 8) & 1);
}

static uint64_t kc_dirty_regions(const struct kc_bitmap *bm)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < bm->bytes; i++)
		n += (uint64_t)__builtin_popcount(bm->bits[i]);
	return n;
}

/* The bitmap's stripe of a member block: a member row, or for RAID-10 an array chunk. */
static uint64_t kc_stripe(const struct cu_geom *g, unsigned m, uint64_t mb)
{
	if (g->level == 10)
		return (uint64_t)cu_map(g, m, mb) / g->bpc;
	return mb / g->bpc;
}

/*
 * A value read during the background resync stays after it: no write came between, so a
 * block read as one of its two values must not read as the other once the resync copied
 * or recomputed its stripe (a mirror read from a copy other than the resync's source did).
 */
static void kc_unchanged(uint64_t b, unsigned r, const uint8_t *before, uint8_t now)
{
	if (before)
		cr_assert_eq(before[b], now, "kill %u: block %llu read as its %s write during the "
			     "background resync and as its %s one after it (seed %llu)", r,
			     (unsigned long long)b, before[b] ? "in-flight" : "last completed",
			     now ? "in-flight" : "last completed", (unsigned long long)tu_seed());
}

/*
 * Every block its last completed write or the one in flight. With @p seen, only checked, and
 * which of the two each block held noted there (1: the one in flight); without, the log
 * updated to what landed, and @p before (a first pass's seen, or NULL) compared.
 */
static void kc_verify(struct graid_array *a, struct kc_log *log, uint64_t nblocks,
		      struct kc_tally *t, unsigned r, uint8_t *seen, const uint8_t *before)
{
	uint8_t *got = malloc(CU_BLOCK), *want = malloc(CU_BLOCK);

	for (uint64_t b = 0; b < nblocks; b++) {
		ssize_t rc = graid_array_read(a, got, CU_BLOCK, b * CU_BLOCK);

		cr_assert_eq(rc, CU_BLOCK, "kill %u: block %llu read: %s (seed %llu)", r,
			     (unsigned long long)b, rc < 0 ? graid_strerror((int)rc) : "short",
			     (unsigned long long)tu_seed());
		kc_pattern(want, b, log[b].done);
		if (!memcmp(got, want, CU_BLOCK)) {
			if (seen)
				seen[b] = 0;
			kc_unchanged(b, r, before, 0);
			continue;
		}
		kc_pattern(want, b, log[b].inflight);
		if (log[b].inflight == log[b].done || memcmp(got, want, CU_BLOCK)) {
			/* Name what is there instead: the multiplier is odd, so it can be undone. */
			uint64_t x, inv = 0x9E3779B97F4A7C15ull, nz = 0;

			for (int i = 0; i < 5; i++)
				inv *= 2 - 0x9E3779B97F4A7C15ull * inv;
			memcpy(&x, got, 8);
			x *= inv;
			for (unsigned i = 0; i < CU_BLOCK; i++)
				nz += got[i] != 0;
			cr_assert_fail("kill %u: block %llu is neither its last completed write (%u) "
				       "nor the one in flight (%u); it holds %s block %llu's round %u "
				       "(%llu bytes not zero) (seed %llu)", r, (unsigned long long)b,
				       log[b].done, log[b].inflight, nz ? "" : "zeroes, not",
				       (unsigned long long)(x >> 32), (unsigned)x, (unsigned long long)nz,
				       (unsigned long long)tu_seed());
		}
		if (seen) {
			seen[b] = 1;
			continue;
		}
		kc_unchanged(b, r, before, 1);
		log[b].done = log[b].inflight;
		t->inflight_landed++;
	}
	for (uint64_t b = 0; !seen && b < nblocks; b++)
		log[b].inflight = log[b].done;
	free(got);
	free(want);
}

/* After a clean close: every VALID tag is the CRC of its block (the resync left none wrong). */
static void kc_check_tags(const struct au_set *s, const struct cu_geom *g, unsigned r)
{
	uint64_t region = g->data_bytes + g->tag_bytes;
	uint8_t *buf = malloc(region);

	for (unsigned m = 0; m < g->n; m++) {
		int fd = open(s->paths[m], O_RDONLY);

		cr_assert_eq(pread(fd, buf, region, (off_t)g->data_offset), (ssize_t)region);
		close(fd);
		for (uint64_t b = 0; b < g->mblocks; b++) {
			const uint8_t *tag = buf + (cu_tag_pos(g, b) - g->data_offset);
			uint32_t crc = (uint32_t)tag[0] | (uint32_t)tag[1] << 8 |
				       (uint32_t)tag[2] << 16 | (uint32_t)tag[3] << 24;

			if (!(tag[7] & 0x80))
				continue; /* absent: deallocated, not verified */
			cr_assert_eq(crc, cu_tag_crc(g, m, b, buf + b * CU_BLOCK), "kill %u: member "
				     "%u block %llu: a valid tag that does not hold after the "
				     "recovery", r, m, (unsigned long long)b);
		}
	}
	free(buf);
}

/*
 * The events of the open (the handle's ring: those before the callback was set) and every
 * later one (the callback); returns how many of the open's the ring no longer held.
 */
static uint64_t kc_events_follow(struct graid_array *a, struct cu_events *ev)
{
	struct graid_event *v = calloc(256, sizeof(*v));
	uint64_t last = 0, lost;
	int got;

	cu_events_reset(ev);
	cr_assert_eq(graid_array_set_event_callback(a, cu_events_cb, ev), 0);
	got = graid_array_events(a, 0, v, 256, &last);
	cr_assert_geq(got, 0);
	cu_events_merge_ring(ev, v, (unsigned)got);
	lost = got ? v[0].seq - 1 : 0;
	free(v);
	return lost;
}

static uint64_t kc_kills(void)
{
	const char *e = getenv("GRAID_CSUM_KILLS");

	return e && *e ? strtoull(e, NULL, 10) : (uint64_t)tu_sweep(12);
}

struct kc {
	struct au_set s;
	struct cu_geom g;
	struct kc_log *log;
	uint64_t nblocks, rng;
	bool discards;
	struct cu_events ev;
	struct kc_tally t;
};

/*
 * After the recovery: nothing reported as corruption, "unverified" and "lost write" only where
 * the bitmap marked (the crash rule: a mismatch of generations there is a torn write).
 */
static void kc_check_events(struct kc *k, const struct kc_bitmap *bm, unsigned r)
{
	struct cu_events *ev = &k->ev;

	cr_assert_eq(ev->by_type[GRAID_EVENT_CSUM_ERROR], 0, "kill %u: %llu checksum errors "
		     "reported after a crash, where nothing was corrupted (seed %llu)", r,
		     (unsigned long long)ev->by_type[GRAID_EVENT_CSUM_ERROR],
		     (unsigned long long)tu_seed());
	cr_assert_eq(ev->by_type[GRAID_EVENT_CSUM_TAG_ERROR], 0, "kill %u: %llu tag errors "
		     "reported after a crash (seed %llu)", r,
		     (unsigned long long)ev->by_type[GRAID_EVENT_CSUM_TAG_ERROR],
		     (unsigned long long)tu_seed());
	for (size_t i = 0; i < ev->n; i++) {
		bool lost = ev->v[i].type == GRAID_EVENT_CSUM_LOST_WRITE;
		/* A lost write no member is named for (-1): RAID-5/6, whose rows are mb / bpc. */
		unsigned m = ev->v[i].member < 0 ? 0 : (unsigned)ev->v[i].member;

		for (uint64_t b = ev->v[i].block; b < ev->v[i].block + ev->v[i].count; b++)
			cr_assert(kc_bitmap_marked(bm, kc_stripe(&k->g, m, b)),
				  "kill %u: \"%s\" at member %d block %llu, outside the regions the "
				  "bitmap marked (seed %llu)", r,
				  lost ? "checksum-lost-write" : "unverified", ev->v[i].member,
				  (unsigned long long)b, (unsigned long long)tu_seed());
		if (lost)
			k->t.lost_in_marked += ev->v[i].count;
		else
			k->t.unverified_blocks += ev->v[i].count;
	}
	k->t.unverified += ev->by_type[GRAID_EVENT_CSUM_UNVERIFIED];
}

/* One kill: a child writing until SIGKILL, the bitmap as it left it, then the recovery checked. */
static void kc_kill(struct kc *k, unsigned r)
{
	uint64_t seed = tu_rand(&k->rng);
	bool kill_after = GRAID_FAULT_INJECTION && seed % 3 == 0, background = seed % 4 == 1;
	struct graid_open_options oo = { .struct_size = sizeof(oo),
					 .flags = background ? GRAID_OPEN_RESYNC_BACKGROUND : 0 };
	struct timespec ts = { 0, (long)(kill_after ? 900 : 2 + tu_rand(&k->rng) % 60) * 1000000L };
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_array *a;
	struct kc_bitmap bm;
	uint8_t *seen = malloc(k->nblocks);
	pid_t pid = fork();
	int status, rc, tries = 0;

	if (pid == 0)
		kc_child(&k->s, k->log, k->nblocks, seed, k->discards, kill_after);
	nanosleep(&ts, NULL);
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "kill %u: the child exited %d first", r, WEXITSTATUS(status));
	/* A killed process's ring is torn down after waitpid(): let its writes land. */
	usleep(150 * 1000);
	au_wait_unlocked(k->s.paths, k->s.n);
	kc_bitmap_read(&bm, &k->s);
	k->t.dirty_regions += kc_dirty_regions(&bm);
	while ((rc = graid_array_open(k->s.paths, k->s.n, &oo, &a)) == -EBUSY && tries++ < 100)
		usleep(20 * 1000);
	cr_assert_eq(rc, 0, "kill %u: reopen: %s", r, graid_strerror(rc));
	k->t.ring_lost += kc_events_follow(a, &k->ev);
	/*
	 * Read while the resync runs in the background too (a mismatch there is "unverified"),
	 * then again once it ended: the value that stays is the second read's.
	 */
	if (background)
		kc_verify(a, k->log, k->nblocks, &k->t, r, seen, NULL);
	for (int w = 0; background && w < 500; w++) {
		cr_assert_eq(graid_array_info(a, &info), 0);
		if (!info.unclean)
			break;
		usleep(10 * 1000);
	}
	kc_verify(a, k->log, k->nblocks, &k->t, r, NULL, background ? seen : NULL);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "kill %u: %llu stripes inconsistent after the recovery",
		     r, (unsigned long long)rep.mismatches);
	cr_assert_eq(graid_array_close(a), 0);
	kc_check_events(k, &bm, r);
	kc_check_tags(&k->s, &k->g, r);
	k->t.kills++;
	k->t.kill_after += kill_after;
	k->t.background += background;
	free(bm.bits);
	free(seen);
}

/* The array keeps write generations: its superblock is major 3 with GENERATIONS (bit 17). */
static void kc_expect_generations(const char *member)
{
	uint8_t sb[64];
	int fd = open(member, O_RDONLY);

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, sb, sizeof(sb), 0), (ssize_t)sizeof(sb));
	close(fd);
	cr_assert_eq(sb[0x08] | sb[0x09] << 8, 3, "a checksummed array is major 3");
	cr_assert(sb[0x16] & 0x02, "a checksummed array has GENERATIONS (flags bit 17)");
}

static void kc_run(int level, unsigned n, uint32_t chunk, bool journal, bool discards,
		   const char *name)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = chunk, .backend = "isal",
					  .flags = GRAID_CREATE_CHECKSUMS |
						   (journal ? GRAID_CREATE_JOURNAL : 0) };
	uint64_t kills = kc_kills();
	struct graid_array *a;
	uint8_t *buf = malloc(CU_BLOCK);
	struct kc k = { .rng = tu_seed() ^ (uint64_t)level << 8 ^ journal, .discards = discards };

	au_make(&k.s, n, (1u << 20) + (4u << 20) + (journal ? 32u << 20 : 0) + (128u << 10));
	cr_assert_eq(graid_array_create(k.s.paths, n, &cfg, &a), 0);
	cu_geom_read(&k.g, a, k.s.paths[0]);
	kc_expect_generations(k.s.paths[0]);
	k.nblocks = k.g.ablocks;
	k.log = mmap(NULL, (k.nblocks + 1) * sizeof(*k.log), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(k.log, MAP_FAILED);
	for (uint64_t b = 0; b < k.nblocks; b++) {
		kc_pattern(buf, b, 0);
		cr_assert_eq(graid_array_write(a, buf, CU_BLOCK, b * CU_BLOCK), CU_BLOCK);
	}
	cr_assert_eq(graid_array_close(a), 0);
	cu_events_init(&k.ev);
	for (unsigned r = 0; r < kills; r++)
		kc_kill(&k, r);
	fprintf(stderr, "%s: %llu kills (%llu between a stripe's member writes, %llu reopened "
		"with the resync in the background), %llu bitmap regions marked at the kills, "
		"%llu in-flight writes found landed, 0 checksum or tag errors, %llu unverified "
		"events (%llu blocks) and %llu checksum-lost-write blocks, all in marked regions "
		"(0 outside); %llu events of the opens not checked (past the ring's 256); every "
		"block read during a background resync held the same value after it (seed %llu)\n",
		name, (unsigned long long)k.t.kills, (unsigned long long)k.t.kill_after,
		(unsigned long long)k.t.background, (unsigned long long)k.t.dirty_regions,
		(unsigned long long)k.t.inflight_landed, (unsigned long long)k.t.unverified,
		(unsigned long long)k.t.unverified_blocks, (unsigned long long)k.t.lost_in_marked,
		(unsigned long long)k.t.ring_lost,
		(unsigned long long)tu_seed());
	cu_events_free(&k.ev);
	munmap(k.log, (k.nblocks + 1) * sizeof(*k.log));
	free(buf);
	au_remove(&k.s);
}

Test(csum_kills, raid6_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(6, 6, 4096, false, false, "RAID-6");
}

Test(csum_kills, raid6_journal_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(6, 6, 4096, true, false, "RAID-6, journal");
}

Test(csum_kills, raid5_discards_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(5, 4, 8192, false, true, "RAID-5, discards");
}

Test(csum_kills, raid5_journal_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(5, 4, 8192, true, true, "RAID-5, journal, discards");
}

Test(csum_kills, raid1_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(1, 2, 4096, false, false, "RAID-1");
}

Test(csum_kills, raid10_discards_kills_report_no_corruption, .timeout = 1800)
{
	kc_run(10, 4, 4096, false, true, "RAID-10, discards");
}
