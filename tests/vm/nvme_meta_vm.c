/* SPDX-License-Identifier: MIT */
/*
 * The nvme-meta suite of the test VM: a checksummed RAID-6 on namespaces formatted with
 * metadata, through their generic devices. Reaches into the handle (lib/core) to find the
 * data and tag areas and to make the tags' key.
 *   nvme_meta_vm MNG0 MNG1 MNG2 MNG3 MNG4 META0 MNG5
 * MNG0..2: 4 KiB LBAs + 8 metadata bytes; MNG3: + 16 bytes with PI type 1; MNG4: + 8 bytes,
 * PI type 1 (the PI is all of it); META0: MNG0's block device; MNG5: extended LBAs.
 * Prints PASS/FAIL lines; exit 0 when nothing failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <linux/nvme_ioctl.h>

#include <libgraid/graid.h>

#include "array/array.h"
#include "format/layout.h"
#include "format/nvme_meta.h"
#include "format/tag_format.h"

#define NM_ROLES 5
#define NM_BLK 4096u
#define NM_BYTES (8u << 20)

static char why[512];
static int failed;

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;

	failed = 1;
	va_start(ap, fmt);
	if (!why[0])
		vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	va_start(ap, fmt);
	fprintf(stderr, "  ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static void result(const char *name)
{
	if (why[0])
		printf("FAIL %s: %s\n", name, why);
	else
		printf("PASS %s\n", name);
	fflush(stdout);
	why[0] = '\0';
}

static atomic_bool log_extended;

static void log_sink(void *arg, int level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "  libgraid[%d]: %s\n", level, msg);
	if (strstr(msg, "extended LBA"))
		atomic_store(&log_extended, true);
}

/* Checksum events: role, block, error. */
static struct {
	atomic_uint n;
	int type[64], member[64], error[64];
	uint64_t block[64];
} ev;

static void on_event(void *arg, const struct graid_event *e)
{
	unsigned i;

	(void)arg;
	if (e->type != GRAID_EVENT_CSUM_ERROR && e->type != GRAID_EVENT_CSUM_TAG_ERROR &&
	    e->type != GRAID_EVENT_CSUM_UNVERIFIED)
		return;
	fprintf(stderr, "  event %d: role %d block %" PRIu64 " count %" PRIu64 " error %d\n",
		e->type, e->member, e->stripe, e->count, e->error);
	i = atomic_fetch_add(&ev.n, 1);
	if (i < 64) {
		ev.type[i] = e->type;
		ev.member[i] = e->member;
		ev.error[i] = e->error;
		ev.block[i] = e->stripe;
	}
}

/* One block of a member through passthrough, its metadata as the drive keeps it. */
struct nm_dev {
	int fd;
	uint32_t nsid, ms;
};

static int nm_io(const struct nm_dev *d, bool write, uint64_t lba, void *data, void *meta,
		 uint32_t prinfo)
{
	struct nvme_passthru_cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.opcode = write ? 0x01 : 0x02;
	c.nsid = d->nsid;
	c.addr = (uint64_t)(uintptr_t)data;
	c.data_len = NM_BLK;
	c.metadata = (uint64_t)(uintptr_t)meta;
	c.metadata_len = meta ? d->ms : 0;
	c.cdw10 = (uint32_t)lba;
	c.cdw11 = (uint32_t)(lba >> 32);
	c.cdw12 = prinfo; /* one block: NLB 0 */
	c.cdw14 = (uint32_t)lba;
	rc = ioctl(d->fd, NVME_IOCTL_IO_CMD, &c);
	return rc < 0 ? -errno : rc;
}

static uint8_t pattern(uint64_t at)
{
	return (uint8_t)(at * 2654435761u >> 13 ^ at >> 12);
}

static bool nm_zero(const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The tags in the first @p n data-area blocks of role @p r, the PI's reference tag too. */
static void nm_check_tags(struct graid_array *a, const struct nm_dev *d, unsigned r,
			  unsigned n)
{
	const struct nvme_meta_fmt *f = &a->members[r].dev.nvme.meta;
	uint8_t *data = aligned_alloc(4096, NM_BLK), meta[64];

	for (unsigned b = 0; b < n && data; b++) {
		uint64_t lba = (a->data_offset + (uint64_t)b * NM_BLK) / NM_BLK;
		int rc = nm_io(d, false, lba, data, meta, 0);

		if (rc) {
			bad("role %u: read of LBA %" PRIu64 " with metadata: %d", r, lba, rc);
			break;
		}
		/* Its CRC, whatever generation (data) or record (parity) its meta word holds. */
		if (f->mode == NVME_META_TAG &&
		    !tag_holds(nvme_meta_tag_get(meta, f, 0), tag_crc(a->uuid, r, b, data))) {
			bad("role %u: block %u's metadata does not hold its tag", r, b);
			break;
		}
		/* PI type 1 in the last 8 bytes: the reference tag is the LBA's low 32 bits. */
		if (f->pi_type && be32(meta + d->ms - 4) != (uint32_t)lba) {
			bad("role %u: block %u's PI reference tag 0x%x, LBA %" PRIu64, r, b,
			    be32(meta + d->ms - 4), lba);
			break;
		}
	}
	free(data);
}

/*
 * Whether the first 64 KiB of role @p r's tag area reads as zeroes. With generations an
 * inline role keeps a copy of its tags there (docs/INTEGRITY.md, "Lost writes"): written.
 */
static bool nm_tag_area_zero(struct graid_array *a, const struct nm_dev *d)
{
	uint8_t *data = aligned_alloc(4096, NM_BLK), meta[64];
	uint64_t n = a->tag_bytes < 65536 ? a->tag_bytes / NM_BLK : 16;
	bool zero = true;

	for (uint64_t b = 0; b < n && zero && data; b++)
		zero = nm_io(d, false, a->tag_offset / NM_BLK + b, data, meta, 0) == 0 &&
		       nm_zero(data, NM_BLK);
	free(data);
	return zero;
}

/* A data block of role @p r at or after chunk row @p row, inside what was written. */
static uint64_t nm_pick(struct graid_array *a, unsigned r, uint64_t row)
{
	for (uint64_t off = row * a->lay.chunk; off < a->lay.member_bytes; off += a->lay.chunk) {
		uint64_t at;

		if (layout_unmap(&a->lay, r, off, &at) == 0 && at + NM_BLK <= NM_BYTES)
			return off / NM_BLK;
	}
	return UINT64_MAX;
}

int main(int argc, char **argv)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = 6, .chunk_bytes = 64 * 1024,
		.flags = GRAID_CREATE_FORCE | GRAID_CREATE_CHECKSUMS,
	};
	static const unsigned want_ms[NM_ROLES] = { 8, 8, 8, 16, 8 };
	static const unsigned victim_role[3] = { 1, 3, 4 };
	const char *paths[NM_ROLES];
	struct nm_dev dev[NM_ROLES];
	uint8_t *buf, *back, *blk, meta[64], *orig[3];
	uint64_t victim[3];
	struct graid_array *a = NULL;
	int rc;

	if (argc != 8) {
		fprintf(stderr, "usage: nvme_meta_vm MNG0..MNG4 META0 MNG5\n");
		return 2;
	}
	graid_log_set(log_sink, NULL, GRAID_LOG_INFO);
	cfg.backend = getenv("GRAID_BACKEND");
	for (unsigned r = 0; r < NM_ROLES; r++) {
		paths[r] = argv[1 + r];
		dev[r].fd = open(paths[r], O_RDWR);
		dev[r].ms = want_ms[r];
		rc = dev[r].fd < 0 ? -errno : ioctl(dev[r].fd, NVME_IOCTL_ID);
		if (rc <= 0) {
			printf("FAIL meta-create: %s: %s\n", paths[r], strerror(rc ? -rc : EINVAL));
			return 1;
		}
		dev[r].nsid = (uint32_t)rc;
	}
	buf = aligned_alloc(4096, NM_BYTES);
	back = aligned_alloc(4096, NM_BYTES);
	blk = aligned_alloc(4096, NM_BLK);
	if (!buf || !back || !blk)
		return 2;
	for (uint64_t i = 0; i < NM_BYTES; i++)
		buf[i] = pattern(i);

	/* Create, each role's metadata mode as its format says, a pattern written. */
	rc = graid_array_create(paths, NM_ROLES, &cfg, &a);
	if (rc) {
		printf("FAIL meta-create: create RAID-6: %s\n", graid_strerror(rc));
		return 1;
	}
	graid_array_set_event_callback(a, on_event, NULL);
	for (unsigned r = 0; r < NM_ROLES; r++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };
		const struct member_nvme *n = &a->members[r].dev.nvme;

		if (graid_array_member_info(a, r, &mi) || !mi.nvme_passthrough ||
		    mi.nvme_meta_bytes != want_ms[r] || mi.nvme_lba_bytes != NM_BLK)
			bad("role %u: not passthrough with 4096+%u-byte LBAs (%u+%u)", r, want_ms[r],
			    mi.nvme_lba_bytes, mi.nvme_meta_bytes);
		if (n->tags_inline != (r < 4) ||
		    n->meta.mode != (r < 4 ? NVME_META_TAG : NVME_META_PI_STRIP))
			bad("role %u: metadata mode %u, inline %d", r, n->meta.mode, n->tags_inline);
	}
	if (graid_array_write(a, buf, NM_BYTES, 0) != (ssize_t)NM_BYTES || graid_array_flush(a))
		bad("writing the pattern failed");
	result("meta-create");

	/*
	 * The tags are in the metadata; the tag area of those roles holds their copy (the
	 * generations a lost write of data and metadata together is told by).
	 */
	for (unsigned r = 0; r < NM_ROLES; r++)
		nm_check_tags(a, &dev[r], r, 16);
	for (unsigned r = 0; r < 4; r++)
		if (nm_tag_area_zero(a, &dev[r]))
			bad("role %u: its tag area holds no copy of its tags", r);
	if (nm_tag_area_zero(a, &dev[4]))
		bad("role 4 (PI only): its tag area holds no tag");
	result("meta-tags");

	/*
	 * Under the array: role 1's block with other bytes and its old metadata (its tag no longer
	 * holds); role 3's with other bytes written with PRACT (the drive's PI made anew, the tag
	 * old); role 4's with other bytes and its old PI, unchecked (the drive's guard fails).
	 */
	for (unsigned v = 0; v < 3; v++) {
		unsigned r = victim_role[v];
		const uint32_t chk = NVME_META_PRACT;
		uint64_t lba;

		victim[v] = nm_pick(a, r, 2 * v);
		orig[v] = aligned_alloc(4096, NM_BLK);
		if (victim[v] == UINT64_MAX || !orig[v]) {
			bad("role %u: no data block to corrupt", r);
			continue;
		}
		lba = (a->data_offset + victim[v] * NM_BLK) / NM_BLK;
		if (nm_io(&dev[r], false, lba, orig[v], meta, 0)) {
			bad("role %u: read of LBA %" PRIu64 " failed", r, lba);
			continue;
		}
		memcpy(blk, orig[v], NM_BLK);
		for (unsigned i = 0; i < NM_BLK; i += 64)
			blk[i] ^= 0x5a;
		rc = nm_io(&dev[r], true, lba, blk, meta, r == 3 ? chk : 0);
		if (rc)
			bad("role %u: the corrupting write failed: %d", r, rc);
		fprintf(stderr, "  role %u: data-area block %" PRIu64 " (LBA %" PRIu64 ") corrupted\n",
			r, victim[v], lba);
	}
	atomic_store(&ev.n, 0);
	memset(back, 0, NM_BYTES);
	if (graid_array_read(a, back, NM_BYTES, 0) != (ssize_t)NM_BYTES)
		bad("reading the array back failed");
	else if (memcmp(back, buf, NM_BYTES))
		bad("the array reads other bytes than were written");
	graid_array_flush(a);
	for (unsigned v = 0; v < 3; v++) {
		bool seen = false;

		for (unsigned i = 0; i < atomic_load(&ev.n) && i < 64; i++)
			seen |= ev.type[i] == GRAID_EVENT_CSUM_ERROR &&
				ev.member[i] == (int)victim_role[v] && ev.block[i] == victim[v] &&
				ev.error[i] == 0;
		if (!seen)
			bad("no healed CSUM_ERROR event for role %u block %" PRIu64, victim_role[v],
			    victim[v]);
	}
	/* The drive's guard error names no block: the ones read again alone are told apart. */
	if (atomic_load(&ev.n) != 3)
		bad("%u checksum events for 3 corrupted blocks", atomic_load(&ev.n));
	result("meta-heal-read");

	/* Written back: the right bytes, their tag (and the drive's PI) with them. */
	for (unsigned v = 0; v < 3; v++) {
		unsigned r = victim_role[v];
		uint64_t lba = (a->data_offset + victim[v] * NM_BLK) / NM_BLK;
		const struct nvme_meta_fmt *f = &a->members[r].dev.nvme.meta;
		uint32_t chk = f->pi_type ? NVME_META_PRCHK_GUARD | NVME_META_PRCHK_REF : 0;

		if (!orig[v])
			continue;
		rc = nm_io(&dev[r], false, lba, blk, meta, chk);
		if (rc)
			bad("role %u: the healed block reads with status %d", r, rc);
		else if (memcmp(blk, orig[v], NM_BLK))
			bad("role %u: block %" PRIu64 " was not written back", r, victim[v]);
		else if (f->mode == NVME_META_TAG &&
			 !tag_holds(nvme_meta_tag_get(meta, f, 0),
				    tag_crc(a->uuid, r, victim[v], blk)))
			bad("role %u: block %" PRIu64 " written back without its tag", r, victim[v]);
	}
	result("meta-written-back");

	/* Again through the block device of role 0: the kernel's metadata, the tag area's tags. */
	if (graid_array_close(a))
		bad("close failed");
	a = NULL;
	paths[0] = argv[6];
	rc = graid_array_open(paths, NM_ROLES, NULL, &a);
	if (rc) {
		bad("open with %s: %s", paths[0], graid_strerror(rc));
	} else {
		graid_array_set_event_callback(a, on_event, NULL);
		atomic_store(&ev.n, 0);
		if (a->members[0].dev.nvme.tags_inline || !a->members[1].dev.nvme.tags_inline)
			bad("role 0 on its block device inline, or role 1 not");
		memset(back, 0, NM_BYTES);
		if (graid_array_read(a, back, NM_BYTES, 0) != (ssize_t)NM_BYTES ||
		    memcmp(back, buf, NM_BYTES))
			bad("the array reads wrong with role 0 on its block device");
		if (atomic_load(&ev.n))
			bad("%u checksum events with role 0 on its block device", atomic_load(&ev.n));
		graid_array_close(a);
	}
	result("meta-blockdev");

	/* Extended LBAs through passthrough: refused, the reason logged, MNG2 left as it was. */
	{
		const char *two[2] = { argv[7], argv[3] };
		struct graid_array_config c1 = {
			.struct_size = sizeof(c1), .level = 1, .chunk_bytes = 64 * 1024,
			.flags = GRAID_CREATE_FORCE | GRAID_CREATE_CHECKSUMS,
		};
		struct graid_member_probe p = { .struct_size = sizeof(p) };

		c1.backend = cfg.backend;
		a = NULL;
		rc = graid_array_create(two, 2, &c1, &a);
		if (rc != -EOPNOTSUPP) {
			bad("create over %s (extended LBAs): %d, expected -EOPNOTSUPP", argv[7], rc);
			if (!rc)
				graid_array_close(a);
		}
		if (!atomic_load(&log_extended))
			bad("the refusal does not say the format has extended LBAs");
		if (graid_member_probe(argv[3], &p) || !p.has_superblock || p.level != 6)
			bad("%s no longer carries its RAID-6 superblock", argv[3]);
	}
	result("meta-extended-refused");
	for (unsigned r = 0; r < NM_ROLES; r++)
		close(dev[r].fd);
	return failed;
}
