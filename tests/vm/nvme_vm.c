/* SPDX-License-Identifier: MIT */
/*
 * NVMe suites for the test VM (tests/vm/suites), through the public API only:
 *   nvme_vm identify NVME0..5 NG0..5   identify (libnvme) against sysfs, on both device kinds,
 *                                      and graid_member_probe() on each
 *   nvme_vm fastinit NVME0..5 NG0..5   fast init by deallocate: the log says so, the array
 *                                      reads zeroes where old data was, scrub finds nothing;
 *                                      a member without the guarantee falls back to zeroing
 *   nvme_vm pull NG0..5                a member pulled out mid-I/O (injected errors, then the
 *                                      controller removed through sysfs), replaced, rebuilt
 *   nvme_vm health NVME0..2            a drive's critical warning raised from outside the
 *                                      guest (QEMU's smart_critical_warning, asked of the
 *                                      host by a "VM: HOST" line: tests/vm/run) reaches the
 *                                      array's health watch as one event per crossing
 * Prints PASS/FAIL/SKIP lines; exit 0 when nothing failed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libgraid/graid.h>

#define MIB (1u << 20)

static int failed;
static char why[512];
static char logbuf[16384];
static size_t loglen;
static pthread_mutex_t loglock = PTHREAD_MUTEX_INITIALIZER;

static void log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "  libgraid[%d]: %s\n", level, msg);
	pthread_mutex_lock(&loglock);
	int n = snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%s\n", msg);
	if (n > 0 && loglen + (size_t)n < sizeof(logbuf))
		loglen += (size_t)n;
	pthread_mutex_unlock(&loglock);
}

static void log_reset(void)
{
	pthread_mutex_lock(&loglock);
	loglen = 0;
	logbuf[0] = '\0';
	pthread_mutex_unlock(&loglock);
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;
	if (why[0])
		return -1;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return -1;
}

static void result(const char *name)
{
	if (why[0]) {
		printf("FAIL %s: %s\n", name, why);
		failed = 1;
	} else {
		printf("PASS %s\n", name);
	}
	fflush(stdout);
	why[0] = '\0';
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A sysfs file's first line, trailing blanks removed; "" if unreadable. */
static void sysfs_str(char *out, size_t len, const char *fmt, const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), fmt, name);
	out[0] = '\0';
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	if (!fgets(out, (int)len, f))
		out[0] = '\0';
	fclose(f);
	size_t n = strlen(out);
	while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
		out[--n] = '\0';
}

static uint64_t sysfs_u64(const char *fmt, const char *name)
{
	char s[64];
	sysfs_str(s, sizeof(s), fmt, name);
	return strtoull(s, NULL, 10);
}

/* "nvme3n1" for /dev/nvme3n1 and for /dev/ng3n1. */
static void block_name(const char *path, char *out, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (!strncmp(b, "ng", 2))
		snprintf(out, len, "nvme%s", b + 2);
	else
		snprintf(out, len, "%s", b);
}

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void fill(uint8_t *p, size_t len, uint64_t off, unsigned gen)
{
	uint64_t *w = (uint64_t *)p;
	for (size_t i = 0; i < len / 8; i++)
		w[i] = gen ? splitmix(((off + i * 8) << 8) ^ gen) : 0;
}

static int check(struct graid_array *a, uint8_t *buf, uint8_t *want, uint64_t off, size_t len,
		 unsigned gen, const char *what)
{
	ssize_t r = graid_array_read(a, buf, len, off);
	if (r != (ssize_t)len)
		return bad("%s: read at %" PRIu64 ": %s", what, off,
			   r < 0 ? graid_strerror((int)r) : "short");
	fill(want, len, off, gen);
	if (memcmp(buf, want, len))
		return bad("%s: data at %" PRIu64 " is not generation %u", what, off, gen);
	return 0;
}

static int write_gen(struct graid_array *a, uint8_t *buf, uint64_t off, size_t len,
		     unsigned gen)
{
	fill(buf, len, off, gen);
	ssize_t r = graid_array_write(a, buf, len, off);
	if (r != (ssize_t)len)
		return bad("write at %" PRIu64 ": %s", off, r < 0 ? graid_strerror((int)r) : "short");
	return 0;
}

static struct graid_array *create(int level, const char *const *m, unsigned n)
{
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = 64 * 1024, .flags = GRAID_CREATE_FORCE };
	struct graid_array *a = NULL;
	int r = graid_array_create(m, n, &cfg, &a);
	if (r) {
		bad("create RAID-%d over %s..: %s", level, m[0], graid_strerror(r));
		return NULL;
	}
	return a;
}

static int scrub_clean(struct graid_array *a, const char *what)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	int r = graid_array_scrub(a, 0, &rep);
	if (r)
		return bad("%s: scrub: %s", what, graid_strerror(r));
	/* Rows of regions never written (the live-data map) are zeroes by construction, unread. */
	if (rep.mismatches || rep.stripes_checked + rep.unused == 0)
		return bad("%s: scrub checked %" PRIu64 " stripes (%" PRIu64 " unused), %" PRIu64
			   " mismatches", what, rep.stripes_checked, rep.unused, rep.mismatches);
	fprintf(stderr, "  %s: scrub of %" PRIu64 " stripes (%" PRIu64 " rows unused): clean\n",
		what, rep.stripes_checked, rep.unused);
	return 0;
}

/* ---- identify -------------------------------------------------------------------------- */

static int identify_one(const struct graid_member_info *mi, const char *path, int ng)
{
	char blk[64], s[128], ctrl[64], link[256];
	block_name(path, blk, sizeof(blk));
	if (!mi->nvme)
		return bad("%s: not identified as NVMe", path);
	if (mi->nvme_passthrough != ng)
		return bad("%s: passthrough %d, expected %d", path, mi->nvme_passthrough, ng);
	sysfs_str(s, sizeof(s), "/sys/block/%s/device/model", blk);
	if (strcmp(s, mi->nvme_model))
		return bad("%s: model '%s', sysfs '%s'", path, mi->nvme_model, s);
	sysfs_str(s, sizeof(s), "/sys/block/%s/device/serial", blk);
	if (strcmp(s, mi->nvme_serial))
		return bad("%s: serial '%s', sysfs '%s'", path, mi->nvme_serial, s);
	sysfs_str(s, sizeof(s), "/sys/block/%s/device/firmware_rev", blk);
	if (strcmp(s, mi->nvme_firmware))
		return bad("%s: firmware '%s', sysfs '%s'", path, mi->nvme_firmware, s);
	if (sysfs_u64("/sys/block/%s/nsid", blk) != mi->nvme_nsid)
		return bad("%s: nsid %u, sysfs %" PRIu64, path, mi->nvme_nsid,
			   sysfs_u64("/sys/block/%s/nsid", blk));
	if (sysfs_u64("/sys/block/%s/queue/logical_block_size", blk) != mi->nvme_lba_bytes)
		return bad("%s: LBA %u bytes, sysfs %" PRIu64, path, mi->nvme_lba_bytes,
			   sysfs_u64("/sys/block/%s/queue/logical_block_size", blk));
	if (sysfs_u64("/sys/block/%s/size", blk) * 512 != mi->nvme_capacity)
		return bad("%s: capacity %" PRIu64 ", sysfs %" PRIu64, path, mi->nvme_capacity,
			   sysfs_u64("/sys/block/%s/size", blk) * 512);
	sysfs_str(s, sizeof(s), "/sys/block/%s/queue/write_cache", blk);
	if (!strcmp(s, "write back") != !!mi->nvme_volatile_write_cache)
		return bad("%s: volatile write cache %d, sysfs '%s'", path,
			   mi->nvme_volatile_write_cache, s);
	uint64_t hw = sysfs_u64("/sys/block/%s/queue/max_hw_sectors_kb", blk) * 1024;
	if (mi->nvme_mdts_bytes && hw > mi->nvme_mdts_bytes)
		return bad("%s: MDTS %u bytes, but the kernel takes %" PRIu64, path,
			   mi->nvme_mdts_bytes, hw);
	if (!mi->nvme_max_transfer || (hw && mi->nvme_max_transfer > hw))
		return bad("%s: %u bytes per command, kernel limit %" PRIu64, path,
			   mi->nvme_max_transfer, hw);
	snprintf(link, sizeof(link), "/sys/block/%s/device", blk);
	ssize_t n = readlink(link, ctrl, sizeof(ctrl) - 1);
	ctrl[n > 0 ? n : 0] = '\0';
	const char *c = strrchr(ctrl, '/') ? strrchr(ctrl, '/') + 1 : ctrl;
	if (strcmp(c, mi->nvme_ctrl))
		return bad("%s: controller '%s', sysfs '%s'", path, mi->nvme_ctrl, c);
	fprintf(stderr, "  %s: %s nsid %u '%s' serial %s fw %s, %u+%u-byte LBAs, %" PRIu64
		" bytes, MDTS %u, %u per command, VWC %d, DLFEAT 0x%x (dealloc zeroes %d)\n",
		path, mi->nvme_ctrl, mi->nvme_nsid, mi->nvme_model, mi->nvme_serial,
		mi->nvme_firmware, mi->nvme_lba_bytes, mi->nvme_meta_bytes, mi->nvme_capacity,
		mi->nvme_mdts_bytes, mi->nvme_max_transfer, mi->nvme_volatile_write_cache,
		mi->nvme_dlfeat, mi->nvme_dealloc_zeroes);
	return 0;
}

static void run_identify(const char *const *blk, const char *const *ng)
{
	for (int k = 0; k < 2; k++) {
		const char *const *dev = k ? blk : ng;
		struct graid_array *a = create(0, dev, 6);
		struct graid_array_info info = { .struct_size = sizeof(info) };
		if (a && graid_array_info(a, &info))
			bad("graid_array_info failed");
		for (unsigned i = 0; a && !why[0] && i < 6; i++) {
			struct graid_member_info mi = { .struct_size = sizeof(mi) };
			int r = graid_array_member_info(a, i, &mi);
			if (r)
				bad("member_info %u: %s", i, graid_strerror(r));
			else
				identify_one(&mi, dev[i], !k);
		}
		/* Both names of each drive: the superblock just written, seen from either. */
		for (unsigned i = 0; a && !why[0] && i < 6; i++)
			for (int w = 0; w < 2 && !why[0]; w++) {
				struct graid_member_probe p = { .struct_size = sizeof(p) };
				const char *path = w ? blk[i] : ng[i];
				int r = graid_member_probe(path, &p);
				if (r)
					bad("probe %s: %s", path, graid_strerror(r));
				else if (!p.has_superblock || p.role != i || p.nmembers != 6 ||
					 memcmp(p.array_uuid, info.uuid, 16))
					bad("probe %s: superblock %d, role %u of %u", path,
					    p.has_superblock, p.role, p.nmembers);
			}
		if (a) {
			int r = graid_array_close(a);
			if (r)
				bad("close: %s", graid_strerror(r));
		}
		result(k ? "identify-blk" : "identify-ng");
	}
	/* The same namespace under both names is one member. */
	{
		const char *dup[2] = { ng[0], blk[0] };
		struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = 1,
						  .flags = GRAID_CREATE_FORCE };
		struct graid_array *a = NULL;
		int r = graid_array_create(dup, 2, &cfg, &a);
		if (r != -EINVAL) {
			bad("RAID-1 of %s and %s (one namespace) returned %d, expected -EINVAL",
			    ng[0], blk[0], r);
			if (a)
				graid_array_close(a);
		}
		result("identify-same-namespace-refused");
	}
}

/* ---- fast init ------------------------------------------------------------------------- */

static void run_fastinit_one(const char *name, int level, const char *const *dev, unsigned n,
			     uint8_t *buf, uint8_t *want)
{
	const size_t spot = MIB;
	uint64_t offs[6];
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };

	/* 1. Old data everywhere we will look: an array of the same shape, written, closed. */
	struct graid_array *a = create(level, dev, n);
	if (!a || graid_array_info(a, &info)) {
		result(name);
		return;
	}
	for (unsigned i = 0; i < 6; i++)
		offs[i] = (info.size / 6 * i) / spot * spot;
	for (unsigned i = 0; i < 6 && !why[0]; i++)
		write_gen(a, buf, offs[i], spot, 7);
	graid_array_close(a);
	if (why[0]) {
		result(name);
		return;
	}
	/* 2. The new array: fast init or not, by what identify says. */
	log_reset();
	double t0 = now();
	a = create(level, dev, n);
	double took = now() - t0;
	if (!a) {
		result(name);
		return;
	}
	graid_array_member_info(a, 0, &mi);
	int expect_fast = 1;
	for (unsigned i = 0; i < n; i++) {
		struct graid_member_info m = { .struct_size = sizeof(m) };
		graid_array_member_info(a, i, &m);
		expect_fast &= m.nvme_dealloc_zeroes;
	}
	int fast = strstr(logbuf, "fast init") != NULL;
	fprintf(stderr, "  %s: create took %.1f s, %s\n", name, took, fast ? "fast init" : "zeroed");
	if (!expect_fast) {
		graid_array_close(a);
		printf("SKIP %s: the drives do not report that deallocated blocks read as zeroes "
		       "(DLFEAT 0x%x)\n", name, mi.nvme_dlfeat);
		return;
	}
	if (!fast || strstr(logbuf, "zeroing the data areas"))
		bad("create did not take the fast path; log: %.200s", logbuf);
	graid_array_info(a, &info);
	for (unsigned i = 0; i < 6 && !why[0]; i++)
		check(a, buf, want, (info.size / 6 * i) / spot * spot, spot, 0, "after fast init");
	if (!why[0])
		scrub_clean(a, name);
	/* and it works as an array: write, read back, parity still right */
	for (unsigned i = 0; i < 6 && !why[0]; i++)
		write_gen(a, buf, offs[i] % info.size, spot, 3);
	for (unsigned i = 0; i < 6 && !why[0]; i++)
		check(a, buf, want, offs[i] % info.size, spot, 3, "after write");
	if (!why[0])
		scrub_clean(a, name);
	graid_array_close(a);
	result(name);
}

static void run_fastinit(const char *const *blk, const char *const *ng)
{
	uint8_t *buf = aligned_alloc(4096, MIB), *want = aligned_alloc(4096, MIB);
	run_fastinit_one("fastinit-ng-raid6", 6, ng, 4, buf, want);
	run_fastinit_one("fastinit-blk-raid5", 5, blk, 4, buf, want);
	/* A member without the guarantee (an injected-fault wrapper): zeroing, as before. */
	{
		char f[96];
		snprintf(f, sizeof(f), "faulty:read-eio-after=100000000:%s", ng[0]);
		const char *dev[3] = { f, ng[1], ng[2] };
		log_reset();
		struct graid_array *a = create(5, dev, 3);
		if (a) {
			if (!strstr(logbuf, "zeroing the data areas") || strstr(logbuf, "fast init"))
				bad("expected zeroing; log: %.200s", logbuf);
			if (!why[0])
				scrub_clean(a, "fastinit-fallback");
			graid_array_close(a);
		}
		result("fastinit-fallback-zeroes");
	}
	free(buf);
	free(want);
}

/* ---- a member pulled out mid-I/O ------------------------------------------------------- */

struct writer {
	struct graid_array *a;
	uint64_t len;
	atomic_bool stop;
	atomic_int err;
	atomic_uint rounds;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint8_t *buf = aligned_alloc(4096, MIB);
	while (!atomic_load(&w->stop)) {
		for (uint64_t off = 0; off < w->len && !atomic_load(&w->stop); off += MIB) {
			fill(buf, MIB, off, 2);
			ssize_t r = graid_array_write(w->a, buf, MIB, off);
			if (r != MIB && !atomic_load(&w->err))
				atomic_store(&w->err, r < 0 ? (int)r : -EIO);
		}
		atomic_fetch_add(&w->rounds, 1);
	}
	free(buf);
	return NULL;
}

/* Wipe a superblock through the drive's block device (the generic one takes no pwrite). */
static int wipe(const char *ngpath)
{
	char blk[64], p[80];
	block_name(ngpath, blk, sizeof(blk));
	snprintf(p, sizeof(p), "/dev/%s", blk);
	void *z = aligned_alloc(4096, 4096);
	memset(z, 0, 4096);
	int fd = open(p, O_WRONLY | O_DIRECT);
	int ok = fd >= 0 && pwrite(fd, z, 4096, 0) == 4096 && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	free(z);
	return ok ? 0 : bad("wiping %s: %s", p, strerror(errno));
}

static unsigned nfailed(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	graid_array_info(a, &info);
	return info.nfailed;
}

/* Write while a member goes away; then replace it with @newpath() and rebuild. */
static int pull_and_rebuild(struct graid_array *a, unsigned role, uint64_t len,
			    int (*pull)(void *), void *pull_arg,
			    const char *(*newpath)(void *), void *np_arg, uint8_t *buf,
			    uint8_t *want)
{
	struct writer w = { .a = a, .len = len };
	pthread_t t;
	pthread_create(&t, NULL, writer_main, &w);
	while (atomic_load(&w.rounds) < 1)
		usleep(10000);
	int pr = pull ? pull(pull_arg) : 0;
	double t0 = now();
	while (nfailed(a) == 0 && now() - t0 < 60)
		usleep(50000);
	/* a few more rounds, degraded */
	unsigned r0 = atomic_load(&w.rounds);
	while (atomic_load(&w.rounds) < r0 + 2 && now() - t0 < 120)
		usleep(50000);
	atomic_store(&w.stop, true);
	pthread_join(t, NULL);
	if (pr)
		return -1;
	if (nfailed(a) != 1)
		return bad("%u members failed after the pull, expected 1", nfailed(a));
	if (atomic_load(&w.err))
		return bad("a write failed while the array was degraded: %s",
			   graid_strerror(atomic_load(&w.err)));
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	graid_array_member_info(a, role, &mi);
	if (mi.state != GRAID_MEMBER_FAILED)
		return bad("role %u is in state %d, not failed", role, mi.state);
	for (uint64_t off = 0; off < len && !why[0]; off += MIB)
		check(a, buf, want, off, MIB, 2, "degraded read");
	const char *np = newpath(np_arg);
	if (!np)
		return -1;
	int r = graid_array_replace_member(a, role, np);
	if (r)
		return bad("replace role %u with %s: %s", role, np, graid_strerror(r));
	t0 = now();
	r = graid_array_rebuild(a, NULL, NULL);
	if (r)
		return bad("rebuild: %s", graid_strerror(r));
	fprintf(stderr, "  rebuild onto %s took %.1f s\n", np, now() - t0);
	if (nfailed(a))
		return bad("%u members failed after the rebuild", nfailed(a));
	for (uint64_t off = 0; off < len && !why[0]; off += MIB)
		check(a, buf, want, off, MIB, 2, "after rebuild");
	return why[0] ? -1 : scrub_clean(a, "after rebuild");
}

static const char *newpath_spare(void *arg)
{
	const char *p = arg;
	return wipe(p) ? NULL : p;
}

struct sysfs_pull {
	char ctrl[32], serial[32];
	char newpath[64];
};

static int sysfs_write(const char *path, const char *v)
{
	int fd = open(path, O_WRONLY);
	int ok = fd >= 0 && write(fd, v, strlen(v)) == (ssize_t)strlen(v);
	int err = errno;
	if (fd >= 0)
		close(fd);
	return ok ? 0 : bad("writing %s to %s: %s", v, path, strerror(err));
}

static int pull_sysfs(void *arg)
{
	struct sysfs_pull *p = arg;
	char path[128];
	snprintf(path, sizeof(path), "/sys/class/nvme/%s/device/remove", p->ctrl);
	fprintf(stderr, "  removing %s (serial %s) through %s\n", p->ctrl, p->serial, path);
	return sysfs_write(path, "1");
}

/* Bring the drive back (PCI rescan) and find its generic device again, by serial. */
static const char *newpath_rescan(void *arg)
{
	struct sysfs_pull *p = arg;
	if (sysfs_write("/sys/bus/pci/rescan", "1"))
		return NULL;
	double t0 = now();
	while (now() - t0 < 120) {
		/* The generic device is named after its controller, which is new now. */
		DIR *d = opendir("/sys/class/nvme-generic");
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char s[64];
			if (strncmp(e->d_name, "ng", 2))
				continue;
			sysfs_str(s, sizeof(s), "/sys/class/nvme-generic/%s/device/serial", e->d_name);
			if (strcmp(s, p->serial))
				continue;
			snprintf(p->newpath, sizeof(p->newpath), "/dev/%.50s", e->d_name);
			if (access(p->newpath, R_OK | W_OK) == 0) {
				closedir(d);
				fprintf(stderr, "  %s is back as %s\n", p->serial, p->newpath);
				return p->newpath;
			}
		}
		if (d)
			closedir(d);
		usleep(100000);
	}
	bad("serial %s did not come back after the PCI rescan", p->serial);
	/* What the guest sees, for whoever reads the console. */
	if (system("ls /sys/class/nvme /sys/bus/pci/devices >&2; dmesg | tail -n 40 >&2"))
		fprintf(stderr, "  (no diagnostics)\n");
	return NULL;
}

static void run_pull(const char *const *ng)
{
	uint8_t *buf = aligned_alloc(4096, MIB), *want = aligned_alloc(4096, MIB);
	const uint64_t len = 16 * MIB;

	/* 1. An injected error stream: member 1 of a RAID-6 fails mid-I/O; the spare takes it. */
	{
		char f[96];
		snprintf(f, sizeof(f), "faulty:write-eio-after=40:%s", ng[1]);
		const char *dev[4] = { ng[0], f, ng[2], ng[3] };
		struct graid_array *a = create(6, dev, 4);
		if (a) {
			pull_and_rebuild(a, 1, len, NULL, NULL, newpath_spare, (void *)ng[4], buf,
					 want);
			graid_array_close(a);
		}
		result("pull-injected-raid6");
	}
	/* 2. The controller removed through sysfs mid-I/O; back by PCI rescan; rebuilt. */
	{
		const char *dev[4] = { ng[0], ng[2], ng[3], ng[5] };
		struct graid_array *a = create(5, dev, 4);
		struct sysfs_pull p = { 0 };
		struct graid_member_info mi = { .struct_size = sizeof(mi) };
		if (a && !graid_array_member_info(a, 2, &mi)) {
			snprintf(p.ctrl, sizeof(p.ctrl), "%s", mi.nvme_ctrl);
			snprintf(p.serial, sizeof(p.serial), "%s", mi.nvme_serial);
			if (!p.ctrl[0])
				bad("no controller name for %s", ng[3]);
			else
				pull_and_rebuild(a, 2, len, pull_sysfs, &p, newpath_rescan, &p, buf,
						 want);
		}
		if (a)
			graid_array_close(a);
		result("pull-sysfs-raid5");
	}
	free(buf);
	free(want);
}

/* ---- drive health ------------------------------------------------------------------------ */

static struct {
	atomic_uint critical[3];	/* HEALTH_CRITICAL events per role (2: the spare) */
	atomic_uint rules;		/* the rules of the last one */
	atomic_uint other;		/* HEALTH_* events for anyone else */
} health_seen;

static void health_event(void *arg, const struct graid_event *ev)
{
	(void)arg;
	if (ev->type != GRAID_EVENT_HEALTH_CRITICAL && ev->type != GRAID_EVENT_HEALTH_WARNING)
		return;
	if (ev->type == GRAID_EVENT_HEALTH_CRITICAL && ev->member >= 0 && ev->member < 3) {
		atomic_fetch_add(&health_seen.critical[ev->member], 1);
		atomic_store(&health_seen.rules, (unsigned)ev->count);
	} else {
		atomic_fetch_add(&health_seen.other, 1);
	}
}

/*
 * Ask the host to set controller k's smart_critical_warning (tests/vm/run reads the line
 * off the console and sets the property through QEMU's monitor; QEMU then reports it in
 * the SMART log page and by an asynchronous event). Straight to the console: the suite's
 * output reaches it through /init's pipes, which hold lines back.
 */
static void host_set_critical(unsigned k, unsigned bits)
{
	FILE *con = fopen("/dev/console", "w");

	fprintf(con ? con : stdout, "VM: HOST qom-set nvmectl%u smart_critical_warning %u\n",
		k, bits);
	if (con)
		fclose(con);
	else
		fflush(stdout);
}

/* Wait up to @p s seconds for role @p role's critical events to reach @p want. */
static int wait_critical(unsigned role, unsigned want, double s)
{
	double end = now() + s;
	while (atomic_load(&health_seen.critical[role]) < want && now() < end)
		usleep(20000);
	return atomic_load(&health_seen.critical[role]) >= want;
}

/* Wait up to @p s seconds for the drive of role @p role to report @p bits in its log. */
static int wait_log(struct graid_array *a, unsigned role, unsigned bits, double s)
{
	struct graid_member_health h = { .struct_size = sizeof(h) };
	double end = now() + s;
	int r;
	do {
		r = graid_array_member_health(a, role, &h);
		if (!r && h.critical_warning == bits)
			return 1;
		usleep(50000);
	} while (now() < end);
	fprintf(stderr, "  role %u's log: %s, critical warning 0x%x (waited for 0x%x)\n", role,
		r ? graid_strerror(r) : "read", h.critical_warning, bits);
	return 0;
}

static void run_health(const char *const *dev)
{
	struct graid_member_health h = { .struct_size = sizeof(h) };
	/*
	 * No replace onto the spare: the crossings below are counted on role 1's own drive,
	 * which a replace would swap out (the watch suite, guest/watch.sh, tests the replace).
	 */
	struct graid_health_options ho = { .struct_size = sizeof(ho), .interval_ms = 200,
					   .wear_percent = 90, .media_rising = 2,
					   .media_burst = 25, .media_window_s = 600,
					   .auto_replace_off = 1 };
	struct graid_array *a = create(1, dev, 2);
	int r;

	if (!a) {
		result("health-critical-event");
		return;
	}
	if ((r = graid_array_add_spare(a, dev[2])))
		bad("add spare %s: %s", dev[2], graid_strerror(r));
	graid_array_set_event_callback(a, health_event, NULL);
	if (!why[0] && (r = graid_array_member_health(a, 1, &h)))
		bad("health of %s: %s", dev[1], graid_strerror(r));
	else if (!why[0] && (strcmp(h.source, "nvme") || h.critical_warning))
		bad("health of %s before: source '%s', critical warning 0x%x (expected nvme, 0)",
		    dev[1], h.source, h.critical_warning);
	if (!why[0] && (r = graid_array_set_health_options(a, &ho)))
		bad("health options: %s", graid_strerror(r));
	/* A few rounds of samples with nothing to report first. */
	usleep(600000);
	if (!why[0] && atomic_load(&health_seen.critical[1]))
		bad("a critical event before any warning was raised");

	if (!why[0]) {
		host_set_critical(1, GRAID_HEALTH_CRIT_RELIABILITY);
		if (!wait_log(a, 1, GRAID_HEALTH_CRIT_RELIABILITY, 20))
			bad("%s's log never showed the critical warning the host set (is the "
			    "host's monitor hook working?)", dev[1]);
		else if (!wait_critical(1, 1, 10))
			bad("no HEALTH_CRITICAL event for role 1 within 10 s of its drive's "
			    "warning");
		else if (!(atomic_load(&health_seen.rules) & GRAID_HEALTH_RULE_CRITICAL_BIT))
			bad("the event's rules 0x%x lack CRITICAL_BIT",
			    atomic_load(&health_seen.rules));
	}
	/* The bit stays set: samples go on, and no second event comes for the same crossing. */
	if (!why[0]) {
		usleep(1500000);
		if (atomic_load(&health_seen.critical[1]) != 1)
			bad("%u critical events for one crossing",
			    atomic_load(&health_seen.critical[1]));
	}
	/* Cleared, then raised again: a second crossing, a second event. */
	if (!why[0]) {
		host_set_critical(1, 0);
		if (!wait_log(a, 1, 0, 20))
			bad("%s's warning never cleared", dev[1]);
		usleep(1000000);
		host_set_critical(1, GRAID_HEALTH_CRIT_SPARE);
		if (!wait_critical(1, 2, 20))
			bad("no second HEALTH_CRITICAL event after the warning was cleared and "
			    "raised again (%u seen)", atomic_load(&health_seen.critical[1]));
	}
	if (!why[0] && (atomic_load(&health_seen.critical[0]) ||
			atomic_load(&health_seen.critical[2]) || atomic_load(&health_seen.other)))
		bad("health events for drives whose health did not change (role 0: %u, spare: "
		    "%u, other: %u)", atomic_load(&health_seen.critical[0]),
		    atomic_load(&health_seen.critical[2]), atomic_load(&health_seen.other));
	host_set_critical(1, 0);
	wait_log(a, 1, 0, 20);
	graid_array_set_event_callback(a, NULL, NULL);
	if ((r = graid_array_close(a)))
		bad("close: %s", graid_strerror(r));
	result("health-critical-event");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nvme_vm identify|fastinit NVME0..5 NG0..5 | pull NG0..5 | "
				"health NVME0..2\n");
		return 2;
	}
	graid_log_set(log_sink, NULL, GRAID_LOG_NOTICE);
	const char *const *dev = (const char *const *)argv + 2;
	int n = argc - 2;
	if (!strcmp(argv[1], "identify") && n == 12)
		run_identify(dev, dev + 6);
	else if (!strcmp(argv[1], "fastinit") && n == 12)
		run_fastinit(dev, dev + 6);
	else if (!strcmp(argv[1], "pull") && n == 6)
		run_pull(dev);
	else if (!strcmp(argv[1], "health") && n == 3)
		run_health(dev);
	else {
		fprintf(stderr, "nvme_vm: bad arguments\n");
		return 2;
	}
	return failed;
}
