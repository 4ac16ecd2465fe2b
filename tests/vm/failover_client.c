/* SPDX-License-Identifier: MIT */
/*
 * The failover suite's client (tests/vm/guest/failover.sh; issue 19): an application on
 * a block device served over NVMe-oF by whichever RAID host owns the array. It writes
 * 4 KiB blocks that carry their block number and a sequence number, flushes every few
 * writes, reads a flushed block back after each flush, and never stops for an error: an
 * error is what the failover must not produce (I/O may pause, not fail).
 *
 *   failover_client DEVICE BLOCKS STOPFILE STATUSFILE
 *
 * First it writes every block once (sequence 1, in 1 MiB writes), so that every block has
 * a known last write. Runs until STOPFILE exists, then flushes and reads every block: each
 * must hold the last write to it that completed (every completed write was on the members
 * before its completion, and a flush after it covers it whichever host served it), so a
 * block that a stale replay or resync overwrote is caught wherever it is. STATUSFILE is
 * rewritten about once a second ("writes N flushes N errors N maxpause_ms N") so the
 * scenario can wait for progress. Prints one summary line; exit 0 when nothing failed,
 * 1 on an I/O error or a block that reads back wrong, 2 on usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLK 4096u
#define FLUSH_EVERY 8u
#define MAGIC UINT64_C(0x6c67666f636c6e74) /* "lgfoclnt" */

static uint64_t rng_state = UINT64_C(0x9e3779b97f4a7c15);

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The block's bytes for (block, seq): a header, then a pattern only they make. */
static void fill(uint64_t *w, uint64_t block, uint64_t seq)
{
	uint64_t x = (block + 1) * UINT64_C(0x9e3779b97f4a7c15) ^ seq;

	w[0] = MAGIC;
	w[1] = block;
	w[2] = seq;
	for (unsigned i = 3; i < BLK / 8; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		w[i] = x;
	}
}

struct client {
	int fd;
	uint64_t nblocks;
	uint64_t *written;  /* seq of the last completed write of each block (1: the prefill) */
	uint64_t *buf, *rbuf;
	uint64_t writes, flushes, errors, bad;
	double maxpause, maxpause_at, t0;
};

static void io_error(struct client *c, const char *what, uint64_t block, int err)
{
	c->errors++;
	printf("ERROR %s of block %" PRIu64 " at %.1f s: %s\n", what, block, now_s() - c->t0,
	       strerror(err));
	fflush(stdout);
}

/* Times one call that may pause; the longest pause is the failover's cost to the client. */
static void pause_seen(struct client *c, double t)
{
	double d = now_s() - t;

	if (d > c->maxpause) {
		c->maxpause = d;
		c->maxpause_at = t - c->t0;
	}
}

/* 0 when block @p b reads back as its last completed write. */
static int check_block(struct client *c, uint64_t b)
{
	uint64_t want = c->written[b];
	double t = now_s();
	ssize_t n = pread(c->fd, c->rbuf, BLK, (off_t)(b * BLK));

	pause_seen(c, t);
	if (n != (ssize_t)BLK) {
		io_error(c, "read", b, n < 0 ? errno : EIO);
		return -1;
	}
	fill(c->buf, b, want);
	if (memcmp(c->buf, c->rbuf, BLK) != 0) {
		c->bad++;
		printf("BAD block %" PRIu64 ": holds block %" PRIu64 " seq %" PRIu64
		       " (magic %s), its last completed write was seq %" PRIu64 "\n",
		       b, c->rbuf[1], c->rbuf[2], c->rbuf[0] == MAGIC ? "ok" : "wrong", want);
		fflush(stdout);
		return -1;
	}
	return 0;
}

/* Every block at sequence 1, 256 blocks a write, then flushed; 0 or -1 (printed). */
static int prefill(struct client *c)
{
	const uint64_t per = 256;
	uint64_t *big;

	if (posix_memalign((void **)&big, BLK, per * BLK)) {
		fprintf(stderr, "failover_client: out of memory\n");
		return -1;
	}
	for (uint64_t b0 = 0; b0 < c->nblocks; b0 += per) {
		uint64_t n = c->nblocks - b0 < per ? c->nblocks - b0 : per;

		for (uint64_t i = 0; i < n; i++)
			fill(big + i * (BLK / 8), b0 + i, 1);
		if (pwrite(c->fd, big, n * BLK, (off_t)(b0 * BLK)) != (ssize_t)(n * BLK)) {
			fprintf(stderr, "failover_client: prefill at block %" PRIu64 ": %s\n", b0,
				strerror(errno ? errno : EIO));
			free(big);
			return -1;
		}
		for (uint64_t i = 0; i < n; i++)
			c->written[b0 + i] = 1;
	}
	free(big);
	if (fdatasync(c->fd)) {
		fprintf(stderr, "failover_client: prefill flush: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static void write_status(struct client *c, const char *path)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "writes %" PRIu64 " flushes %" PRIu64 " errors %" PRIu64 " bad %" PRIu64
		   " maxpause_ms %.0f\n",
		c->writes, c->flushes, c->errors, c->bad, c->maxpause * 1000);
	fclose(f);
	rename(tmp, path);
}

int main(int argc, char **argv)
{
	struct client c = { 0 };
	uint64_t seq = 0, pending = 0, checked = 0;
	double last_status = 0;
	char *end;

	if (argc != 5) {
		fprintf(stderr, "usage: failover_client DEVICE BLOCKS STOPFILE STATUSFILE\n");
		return 2;
	}
	c.nblocks = strtoull(argv[2], &end, 10);
	if (*end || c.nblocks == 0) {
		fprintf(stderr, "failover_client: BLOCKS: a count, not '%s'\n", argv[2]);
		return 2;
	}
	c.fd = open(argv[1], O_RDWR | O_DIRECT);
	if (c.fd < 0) {
		fprintf(stderr, "failover_client: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	c.written = calloc(c.nblocks, sizeof(*c.written));
	if (!c.written || posix_memalign((void **)&c.buf, BLK, BLK) ||
	    posix_memalign((void **)&c.rbuf, BLK, BLK)) {
		fprintf(stderr, "failover_client: out of memory\n");
		return 1;
	}
	c.t0 = now_s();
	if (prefill(&c))
		return 1;
	seq = 1;
	while (access(argv[3], F_OK) != 0) {
		uint64_t b = rng() % c.nblocks;
		double t = now_s();

		fill(c.buf, b, ++seq);
		if (pwrite(c.fd, c.buf, BLK, (off_t)(b * BLK)) != (ssize_t)BLK)
			io_error(&c, "write", b, errno ? errno : EIO);
		else
			c.written[b] = seq, c.writes++;
		pause_seen(&c, t);
		if (++pending == FLUSH_EVERY) {
			pending = 0;
			t = now_s();
			if (fdatasync(c.fd))
				io_error(&c, "flush", 0, errno);
			else
				c.flushes++;
			pause_seen(&c, t);
			/* A block written before that flush, read back at once. */
			check_block(&c, b);
		}
		if (now_s() - last_status >= 1.0) {
			last_status = now_s();
			write_status(&c, argv[4]);
		}
	}
	if (fdatasync(c.fd))
		io_error(&c, "final flush", 0, errno);
	for (uint64_t b = 0; b < c.nblocks; b++) {
		checked++;
		check_block(&c, b);
	}
	write_status(&c, argv[4]);
	printf("client: %" PRIu64 " writes, %" PRIu64 " flushes in %.1f s; %" PRIu64
	       " blocks checked at the end; %" PRIu64 " I/O errors; %" PRIu64
	       " blocks wrong; longest pause %.0f ms (at %.1f s)\n",
	       c.writes, c.flushes, now_s() - c.t0, checked, c.errors, c.bad, c.maxpause * 1000,
	       c.maxpause_at);
	close(c.fd);
	return c.errors || c.bad ? 1 : 0;
}
