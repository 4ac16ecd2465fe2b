/* SPDX-License-Identifier: MIT */
/*
 * nvme_smoke: an array of each level over real block devices (the emulated NVMe drives of the
 * test VM, tests/vm/run), driven through the public API only.
 *
 * usage: nvme_smoke [--levels 0,1,5,6,10] [--chunk BYTES] [--seed N] [--allow-files]
 *                   DEV0 DEV1 ... (>= 6)
 *
 * For each level: create (forced: the drives are reused level after level), write a pattern
 * (sync and through an async queue), read it back; fail one member (two for RAID-6), read
 * back degraded, write degraded; replace the failed roles with the spare drives, rebuild,
 * read back; scrub (no mismatch expected); close, reopen from the superblocks, read back;
 * then fail members that were never rebuilt so that reads must come from the rebuilt ones.
 * Regions never written must read as zeroes throughout.
 *
 * Prints one line per level, "PASS raidN (T s)" or "FAIL raidN: reason", and exits 1 if
 * any level failed, 0 otherwise. The library's warnings and errors go to stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define UNIT 4096u      /* granularity of the pattern map */
#define MAXDEV 16

static uint64_t seed = 0x5eed1234abcd0001ull;
static int allow_files; /* --allow-files: members may be regular files (debugging on a host) */

struct plan {
	int level;
	unsigned nmembers;  /* drives 0..nmembers-1 are the members */
	unsigned nfail;     /* roles failed, replaced and rebuilt */
	unsigned fail[2];   /* those roles */
	unsigned spare[2];  /* the drives that replace them */
	unsigned later[2];  /* roles failed after the rebuild, so reads use the rebuilt ones */
	unsigned nlater;
};

struct ctx {
	const char *name;
	struct graid_array *a;
	uint64_t size;
	uint32_t bs;
	uint8_t *gen;       /* pattern generation of each UNIT of the array, 0 = zeroes */
	uint64_t nunits;
	uint8_t *buf;       /* I/O buffer */
	size_t buflen;
	char why[512];
	unsigned ev_failed, ev_rebuild_done;
};

static void log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "  libgraid[%d]: %s\n", level, msg);
}

static void on_event(void *arg, const struct graid_event *ev)
{
	struct ctx *c = arg;
	if (ev->type == GRAID_EVENT_MEMBER_FAILED)
		c->ev_failed++;
	else if (ev->type == GRAID_EVENT_REBUILD_DONE)
		c->ev_rebuild_done++;
}

static int fail_msg(struct ctx *c, const char *fmt, ...)
{
	va_list ap;
	if (c->why[0])
		return -1; /* keep the first reason */
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The content of one UNIT at array unit index u for generation g (g 0: zeroes). */
static void fill_unit(uint8_t *p, uint64_t u, uint8_t g)
{
	uint64_t *w = (uint64_t *)p;
	if (g == 0) {
		memset(p, 0, UNIT);
		return;
	}
	uint64_t base = splitmix(seed ^ (u << 8) ^ g);
	for (unsigned i = 0; i < UNIT / 8; i++)
		w[i] = splitmix(base + i);
}

/* A spare that carried an earlier level's array is refused by replace: zero its superblock
 * (member bytes 0..4095, docs/FORMAT.md), as an administrator wipes a drive before reuse. */
static int wipe_superblock(struct ctx *c, const char *path)
{
	void *z = aligned_alloc(4096, 4096);
	char blk[64];
	/* A generic device (/dev/ngXnY) takes no pwrite: its block device is the same drive. */
	if (!strncmp(path, "/dev/ng", 7)) {
		snprintf(blk, sizeof(blk), "/dev/nvme%s", path + 7);
		path = blk;
	}
	int fd = open(path, O_WRONLY | O_DIRECT);
	int ok = z && fd >= 0;
	if (z)
		memset(z, 0, 4096);
	if (ok)
		ok = pwrite(fd, z, 4096, 0) == 4096 && fsync(fd) == 0;
	int err = errno;
	if (fd >= 0)
		close(fd);
	free(z);
	return ok ? 0 : fail_msg(c, "wiping the superblock of %s: %s", path, strerror(err));
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd_state;
static uint64_t rnd(void)
{
	rnd_state = splitmix(rnd_state);
	return rnd_state;
}

/* Write generation g over [off, off+len) (UNIT multiples), synchronously. */
static int do_write(struct ctx *c, uint64_t off, uint64_t len, uint8_t g)
{
	while (len) {
		size_t n = len < c->buflen ? len : c->buflen;
		for (size_t i = 0; i < n; i += UNIT)
			fill_unit(c->buf + i, (off + i) / UNIT, g);
		ssize_t r = graid_array_write(c->a, c->buf, n, off);
		if (r != (ssize_t)n)
			return fail_msg(c, "write of %zu bytes at %" PRIu64 ": %s", n, off,
					r < 0 ? graid_strerror((int)r) : "short");
		memset(c->gen + off / UNIT, g, n / UNIT);
		off += n;
		len -= n;
	}
	return 0;
}

/* Read [off, off+len) and compare with the pattern map. */
static int do_check(struct ctx *c, uint64_t off, uint64_t len, const char *phase)
{
	static uint8_t want[UNIT] __attribute__((aligned(64)));
	while (len) {
		size_t n = len < c->buflen ? len : c->buflen;
		ssize_t r = graid_array_read(c->a, c->buf, n, off);
		if (r != (ssize_t)n)
			return fail_msg(c, "%s: read of %zu bytes at %" PRIu64 ": %s", phase, n, off,
					r < 0 ? graid_strerror((int)r) : "short");
		for (size_t i = 0; i < n; i += UNIT) {
			uint64_t u = (off + i) / UNIT;
			fill_unit(want, u, c->gen[u]);
			if (memcmp(want, c->buf + i, UNIT))
				return fail_msg(c, "%s: data mismatch at array offset %" PRIu64
						" (generation %u)", phase, off + i, c->gen[u]);
		}
		off += n;
		len -= n;
	}
	return 0;
}

/* The ranges written and checked: the start, a stretch across stripe boundaries in the
 * middle, the end, and two stretches never written (zeroes). */
struct range { uint64_t off, len; };
static unsigned ranges(const struct ctx *c, struct range *r)
{
	uint64_t mid = (c->size / 2 / UNIT) * UNIT - 25 * UNIT;
	unsigned n = 0;
	r[n++] = (struct range){0, 4u << 20};
	r[n++] = (struct range){mid, (3u << 20) + 3 * UNIT};
	r[n++] = (struct range){c->size - (2u << 20), 2u << 20};
	return n;
}
static unsigned zero_ranges(const struct ctx *c, struct range *r)
{
	r[0] = (struct range){(c->size / 4 / UNIT) * UNIT, 1u << 20};
	r[1] = (struct range){(c->size * 3 / 4 / UNIT) * UNIT, 1u << 20};
	return 2;
}

/* Small random writes through an async queue (io_uring underneath), then reaped. */
static int queue_writes(struct ctx *c, unsigned count, uint8_t g)
{
	struct graid_queue *q;
	int r = graid_queue_create(c->a, 32, &q);
	if (r)
		return fail_msg(c, "graid_queue_create: %s", graid_strerror(r));
	struct range rs[4];
	unsigned nr = ranges(c, rs);
	size_t bytes = (size_t)count * 16 * UNIT;
	/* Twice: the writes' sources, then the read-back's destinations. */
	uint8_t *bufs = aligned_alloc(4096, 2 * bytes);
	struct { uint64_t off, len; } *req = calloc(count, sizeof(*req));
	if (!bufs || !req) {
		free(bufs), free(req), graid_queue_destroy(q);
		return fail_msg(c, "out of memory");
	}
	/*
	 * Registered with the queue: its member I/O uses fixed buffers (on /dev/ng*, NVMe
	 * commands with IORING_URING_CMD_FIXED).
	 */
	struct iovec reg = { .iov_base = bufs, .iov_len = 2 * bytes };
	r = graid_queue_register_buffers(q, &reg, 1);
	if (r) {
		free(bufs), free(req), graid_queue_destroy(q);
		return fail_msg(c, "graid_queue_register_buffers: %s", graid_strerror(r));
	}
	/* Offsets inside the checked ranges, non-overlapping within the batch (unit slots). */
	unsigned inflight = 0, done = 0;
	for (unsigned i = 0; i < count; i++) {
		struct range *rg = &rs[rnd() % nr];
		uint64_t units = 1 + rnd() % 16;
		uint64_t slot = rnd() % (rg->len / UNIT / 16);
		req[i].off = rg->off + slot * 16 * UNIT;
		req[i].len = units * UNIT;
		for (unsigned j = 0; j < i; j++)
			if (req[j].off == req[i].off)
				req[i].len = 0; /* same slot twice in a batch: drop, order is not defined */
		if (!req[i].len) {
			done++;
			continue;
		}
		uint8_t *p = bufs + (size_t)i * 16 * UNIT;
		for (uint64_t k = 0; k < units; k++)
			fill_unit(p + k * UNIT, req[i].off / UNIT + k, g);
		for (;;) {
			r = graid_queue_write(q, p, req[i].len, req[i].off, i);
			if (r != -EAGAIN)
				break;
			graid_queue_submit(q);
			struct graid_completion cq[32];
			int got = graid_queue_reap(q, cq, 32, 1);
			for (int k = 0; k < got; k++, done++, inflight--)
				if (cq[k].result != (int64_t)req[cq[k].user_data].len)
					fail_msg(c, "queued write at %" PRIu64 ": %s",
						 req[cq[k].user_data].off,
						 graid_strerror((int)cq[k].result));
		}
		if (r) {
			fail_msg(c, "graid_queue_write: %s", graid_strerror(r));
			break;
		}
		inflight++;
	}
	graid_queue_submit(q);
	while (inflight) {
		struct graid_completion cq[32];
		int got = graid_queue_reap(q, cq, 32, 1);
		if (got <= 0) {
			fail_msg(c, "graid_queue_reap: %s", graid_strerror(got ? got : -EIO));
			break;
		}
		for (int k = 0; k < got; k++, done++, inflight--)
			if (cq[k].result != (int64_t)req[cq[k].user_data].len)
				fail_msg(c, "queued write at %" PRIu64 ": %s",
					 req[cq[k].user_data].off, graid_strerror((int)cq[k].result));
	}
	/*
	 * Read back through the same queue, into the registered memory's second half. With no
	 * member failed the reads are plain member reads, and the destination is made
	 * read-only for the process (below); degraded, the library rebuilds data into it.
	 */
	struct graid_array_info ai = { .struct_size = sizeof(ai) };
	bool whole = graid_array_info(c->a, &ai) == 0 && ai.nfailed == 0;

	for (unsigned i = 0; i < count && !c->why[0]; i++) {
		struct graid_completion cq;
		uint8_t *src = bufs + (size_t)i * 16 * UNIT, *dst = src + bytes;
		uint8_t want[UNIT];

		if (!req[i].len)
			continue;
		memset(dst, 0xa5, req[i].len);
		/*
		 * Read-only for the process: only the pages pinned at registration can take the
		 * data (a fixed buffer); a read through ordinary memory would fail (EFAULT).
		 */
		if (whole && mprotect(dst, req[i].len, PROT_READ)) {
			fail_msg(c, "mprotect: %s", strerror(errno));
			break;
		}
		if ((r = graid_queue_read(q, dst, req[i].len, req[i].off, i)) != 0 ||
		    (r = graid_queue_submit(q)) < 0 || (r = graid_queue_reap(q, &cq, 1, 1)) != 1) {
			mprotect(dst, req[i].len, PROT_READ | PROT_WRITE);
			fail_msg(c, "queued read-back: %s", graid_strerror(r < 0 ? r : -EIO));
			break;
		}
		mprotect(dst, req[i].len, PROT_READ | PROT_WRITE);
		if (cq.result != (int64_t)req[i].len) {
			fail_msg(c, "queued read-back at %" PRIu64 ": %s", req[i].off,
				 graid_strerror((int)cq.result));
			break;
		}
		for (uint64_t k = 0; k < req[i].len / UNIT; k++) {
			/* A later write of the batch to the same slot is dropped above: ours. */
			fill_unit(want, req[i].off / UNIT + k, g);
			if (memcmp(dst + k * UNIT, want, UNIT)) {
				fail_msg(c, "queued read-back at %" PRIu64 ": wrong data",
					 req[i].off + k * UNIT);
				break;
			}
		}
	}
	graid_queue_destroy(q);
	for (unsigned i = 0; i < count; i++)
		if (req[i].len)
			memset(c->gen + req[i].off / UNIT, g, req[i].len / UNIT);
	free(bufs);
	free(req);
	return c->why[0] ? -1 : 0;
}

static int check_all(struct ctx *c, const char *phase)
{
	struct range rs[4], zs[2];
	unsigned nr = ranges(c, rs), nz = zero_ranges(c, zs);
	for (unsigned i = 0; i < nr; i++)
		if (do_check(c, rs[i].off, rs[i].len, phase))
			return -1;
	for (unsigned i = 0; i < nz; i++)
		if (do_check(c, zs[i].off, zs[i].len, phase))
			return -1;
	return 0;
}

static int expect_state(struct ctx *c, const char *phase, unsigned nfailed)
{
	struct graid_array_info info = {.struct_size = sizeof(info)};
	int r = graid_array_info(c->a, &info);
	if (r)
		return fail_msg(c, "%s: graid_array_info: %s", phase, graid_strerror(r));
	if (info.nfailed != nfailed)
		return fail_msg(c, "%s: %u roles failed, expected %u", phase, info.nfailed, nfailed);
	return 0;
}

static int run_level(const struct plan *p, const char *const *dev, unsigned ndev,
		     uint32_t chunk, const char **why)
{
	static struct ctx c;
	char name[16];
	const char *members[MAXDEV];
	int r;

	free(c.gen);
	free(c.buf);
	memset(&c, 0, sizeof(c));
	snprintf(name, sizeof(name), "raid%d", p->level);
	c.name = name;
	*why = c.why;
	if (p->nmembers > ndev || (p->nfail && p->spare[p->nfail - 1] >= ndev))
		return fail_msg(&c, "needs more drives than the %u given", ndev);
	for (unsigned i = 0; i < p->nmembers; i++)
		members[i] = dev[i];

	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = p->level, .chunk_bytes = chunk,
		.backend = NULL, .flags = GRAID_CREATE_FORCE,
	};
	r = graid_array_create(members, p->nmembers, &cfg, &c.a);
	if (r)
		return fail_msg(&c, "graid_array_create: %s", graid_strerror(r));
	graid_array_set_event_callback(c.a, on_event, &c);

	struct graid_array_info info = {.struct_size = sizeof(info)};
	if ((r = graid_array_info(c.a, &info))) {
		fail_msg(&c, "graid_array_info: %s", graid_strerror(r));
		goto out;
	}
	c.size = info.size;
	c.bs = info.block_size;
	if (!c.bs || UNIT % c.bs || c.size < (64u << 20)) {
		fail_msg(&c, "unexpected geometry: block size %u, size %" PRIu64, c.bs, c.size);
		goto out;
	}
	c.nunits = c.size / UNIT;
	c.gen = calloc(c.nunits, 1);
	c.buflen = 1u << 20;
	c.buf = aligned_alloc(4096, c.buflen);
	if (!c.gen || !c.buf) {
		fail_msg(&c, "out of memory");
		goto out;
	}
	/* Members really are the NVMe block devices, opened O_DIRECT, or the generic devices
	 * (/dev/ngXnY), driven through io_uring NVMe passthrough. */
	for (unsigned i = 0; i < p->nmembers; i++) {
		struct graid_member_info mi = {.struct_size = sizeof(mi)};
		int ng = !strncmp(members[i], "/dev/ng", 7);
		if (graid_array_member_info(c.a, i, &mi) ||
		    (!allow_files && strncmp(mi.identity, ng ? "nvme-generic " : "block ",
					      ng ? 13 : 6)) ||
		    (ng && !mi.nvme_passthrough)) {
			fail_msg(&c, "member %u is not reported as a %s (\"%s\")", i,
				 ng ? "passthrough NVMe generic device" : "block device", mi.identity);
			goto out;
		}
	}

	/* 1. write, read back (and the untouched regions read as zeroes) */
	struct range rs[4];
	unsigned nr = ranges(&c, rs);
	for (unsigned i = 0; i < nr; i++)
		if (do_write(&c, rs[i].off, rs[i].len, 1))
			goto out;
	if (queue_writes(&c, 200, 2) || check_all(&c, "after write"))
		goto out;
	if ((r = graid_array_flush(c.a))) {
		fail_msg(&c, "graid_array_flush: %s", graid_strerror(r));
		goto out;
	}

	if (p->level == 0) {
		struct graid_scrub_report rep = {.struct_size = sizeof(rep)};
		r = graid_array_scrub(c.a, 0, &rep);
		if (r != -EOPNOTSUPP) {
			fail_msg(&c, "scrub of RAID-0 returned %d, expected -EOPNOTSUPP", r);
			goto out;
		}
		r = graid_array_fail_member(c.a, 1);
		if (r != -EBUSY) {
			fail_msg(&c, "failing a RAID-0 member returned %d, expected -EBUSY", r);
			goto out;
		}
	}

	/* 2. fail, read degraded, write degraded */
	for (unsigned i = 0; i < p->nfail; i++)
		if ((r = graid_array_fail_member(c.a, p->fail[i]))) {
			fail_msg(&c, "graid_array_fail_member(%u): %s", p->fail[i], graid_strerror(r));
			goto out;
		}
	if (p->nfail) {
		if (expect_state(&c, "after fail", p->nfail) || check_all(&c, "degraded read"))
			goto out;
		if (c.ev_failed < p->nfail) {
			fail_msg(&c, "%u MEMBER_FAILED events for %u failed members", c.ev_failed,
				 p->nfail);
			goto out;
		}
		if (do_write(&c, rs[1].off + 8 * UNIT, 1u << 20, 3) || queue_writes(&c, 64, 4) ||
		    check_all(&c, "degraded read after degraded write"))
			goto out;

		/* 3. replace with the spares, rebuild */
		for (unsigned i = 0; i < p->nfail; i++)
			if (wipe_superblock(&c, dev[p->spare[i]]))
				goto out;
		for (unsigned i = 0; i < p->nfail; i++)
			if ((r = graid_array_replace_member(c.a, p->fail[i], dev[p->spare[i]]))) {
				fail_msg(&c, "graid_array_replace_member(%u, %s): %s", p->fail[i],
					 dev[p->spare[i]], graid_strerror(r));
				goto out;
			}
		double t0 = now();
		if ((r = graid_array_rebuild(c.a, NULL, NULL))) {
			fail_msg(&c, "graid_array_rebuild: %s", graid_strerror(r));
			goto out;
		}
		fprintf(stderr, "  %s: rebuild of %u member(s) took %.1f s\n", name, p->nfail,
			now() - t0);
		if (expect_state(&c, "after rebuild", 0) || check_all(&c, "after rebuild"))
			goto out;
		if (c.ev_rebuild_done < 1) {
			fail_msg(&c, "no REBUILD_DONE event after the rebuild");
			goto out;
		}
		for (unsigned i = 0; i < p->nfail; i++)
			members[p->fail[i]] = dev[p->spare[i]];
	}

	/* 4. scrub: nothing may be found wrong */
	if (p->level != 0) {
		struct graid_scrub_report rep = {.struct_size = sizeof(rep)};
		double t0 = now();
		if ((r = graid_array_scrub(c.a, 0, &rep))) {
			fail_msg(&c, "graid_array_scrub: %s", graid_strerror(r));
			goto out;
		}
		fprintf(stderr, "  %s: scrub of %" PRIu64 " stripes took %.1f s\n", name,
			rep.stripes_checked, now() - t0);
		if (rep.mismatches || rep.skipped || !rep.stripes_checked) {
			fail_msg(&c, "scrub: %" PRIu64 " checked, %" PRIu64 " mismatches, %" PRIu64
				 " skipped", rep.stripes_checked, rep.mismatches, rep.skipped);
			goto out;
		}
	}

	/* 5. close, reassemble from the superblocks (members in reverse order), read back */
	r = graid_array_close(c.a);
	c.a = NULL;
	if (r) {
		fail_msg(&c, "graid_array_close: %s", graid_strerror(r));
		goto out;
	}
	const char *rev[MAXDEV];
	for (unsigned i = 0; i < p->nmembers; i++)
		rev[i] = members[p->nmembers - 1 - i];
	if ((r = graid_array_open(rev, p->nmembers, NULL, &c.a))) {
		fail_msg(&c, "graid_array_open: %s", graid_strerror(r));
		goto out;
	}
	if (expect_state(&c, "after reopen", 0) || check_all(&c, "after reopen"))
		goto out;

	/* 6. fail members never rebuilt: the rebuilt ones must now serve the data */
	for (unsigned i = 0; i < p->nlater; i++)
		if ((r = graid_array_fail_member(c.a, p->later[i]))) {
			fail_msg(&c, "graid_array_fail_member(%u) after rebuild: %s", p->later[i],
				 graid_strerror(r));
			goto out;
		}
	if (p->nlater && check_all(&c, "read from rebuilt members"))
		goto out;

out:
	if (c.a) {
		r = graid_array_close(c.a);
		if (r)
			fail_msg(&c, "graid_array_close: %s", graid_strerror(r));
	}
	c.a = NULL;
	return c.why[0] ? -1 : 0;
}

int main(int argc, char **argv)
{
	const char *levels = "0,1,5,6,10";
	uint32_t chunk = 64 * 1024;
	const char *dev[MAXDEV];
	unsigned ndev = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--levels") && i + 1 < argc)
			levels = argv[++i];
		else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
			chunk = (uint32_t)strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--allow-files"))
			allow_files = 1;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: nvme_smoke [--levels L,..] [--chunk BYTES] [--seed N] "
				"[--allow-files] DEV0 .. DEV5\n");
			return 2;
		} else if (ndev < MAXDEV)
			dev[ndev++] = argv[i];
	}
	if (ndev < 6) {
		fprintf(stderr, "nvme_smoke: needs six devices (members and spares), got %u\n", ndev);
		return 2;
	}
	graid_log_set(log_sink, NULL, GRAID_LOG_WARNING);
	rnd_state = seed;
	fprintf(stderr, "  nvme_smoke: libgraid %s, seed %#" PRIx64 ", chunk %u\n",
		graid_version(), seed, chunk);

	static const struct plan plans[] = {
		{.level = 0, .nmembers = 5},
		{.level = 1, .nmembers = 2, .nfail = 1, .fail = {1}, .spare = {5},
		 .later = {0}, .nlater = 1},
		{.level = 5, .nmembers = 5, .nfail = 1, .fail = {2}, .spare = {5},
		 .later = {0}, .nlater = 1},
		{.level = 6, .nmembers = 4, .nfail = 2, .fail = {1, 3}, .spare = {4, 5},
		 .later = {0, 2}, .nlater = 2},
		{.level = 10, .nmembers = 4, .nfail = 1, .fail = {1}, .spare = {5},
		 .later = {0}, .nlater = 1},
	};
	int failed = 0;
	for (size_t i = 0; i < sizeof(plans) / sizeof(plans[0]); i++) {
		char want[8];
		snprintf(want, sizeof(want), "%d", plans[i].level);
		/* is this level in the comma-separated list? */
		int in = 0;
		for (const char *s = levels; *s;) {
			size_t n = strcspn(s, ",");
			if (n == strlen(want) && !strncmp(s, want, n))
				in = 1;
			s += n + (s[n] == ',');
		}
		if (!in)
			continue;
		const char *why;
		double t0 = now();
		if (run_level(&plans[i], dev, ndev, chunk, &why)) {
			printf("FAIL raid%d: %s\n", plans[i].level, why);
			failed = 1;
		} else {
			printf("PASS raid%d (%.1f s)\n", plans[i].level, now() - t0);
		}
		fflush(stdout);
	}
	return failed;
}
