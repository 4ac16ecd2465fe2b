/* SPDX-License-Identifier: MIT */
/*
 * Tags in an NVMe namespace's block metadata, without a drive: the format decision, the
 * command's metadata and PRINFO fields, the tag's place in a metadata buffer, and an
 * inline role of a created array (its write's tags, its read's check, the drive's
 * end-to-end errors, the tag store bypassed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "array/array.h"
#include "arrayutil.h"
#include "format/nvme_cmd.h"
#include "format/nvme_meta.h"
#include "format/tag_format.h"
#include "member/csum_pend.h"
#include "member/tag_inline.h"
#include "member/tag_store.h"
#include "meta/csum_report.h"

#define TI_BLK 4096u
#define TI_MEMBER_BYTES ((1u << 20) + (16u << 20) + (64u << 10))

static int ti_decide(uint32_t lbs, uint32_t ms, bool ext, uint8_t dps, unsigned pif,
		     struct nvme_meta_fmt *f)
{
	const char *why = "unset";
	int rc = nvme_meta_decide(lbs, ms, ext, dps, pif, f, &why);

	if (rc)
		cr_assert(why && *why, "a refusal names its reason");
	else
		cr_assert_null(why);
	return rc;
}

Test(nvme_meta, formats_without_pi)
{
	struct nvme_meta_fmt f;

	cr_assert_eq(ti_decide(4096, 0, false, 0, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_NONE);
	cr_assert_eq(f.prinfo, 0);
	cr_assert_eq(ti_decide(4096, 8, false, 0, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_TAG);
	cr_assert_eq(f.tag_at, 0);
	cr_assert_eq(f.prinfo, 0);
	cr_assert_eq(ti_decide(4096, 64, false, 0, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_TAG);
	/* Too little room, or a tag would cover less than its 4 KiB: zeroes sent along. */
	cr_assert_eq(ti_decide(4096, 4, false, 0, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_ZERO);
	cr_assert_eq(ti_decide(512, 8, false, 0, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_ZERO);
	cr_assert_eq(ti_decide(512, 0, true, 0, 0, &f), 0, "no metadata: FLBAS bit 4 means nothing");
}

Test(nvme_meta, extended_lbas_are_refused_with_the_reason)
{
	struct nvme_meta_fmt f;
	const char *why = NULL;

	cr_assert_eq(nvme_meta_decide(4096, 8, true, 0, 0, &f, &why), -EOPNOTSUPP);
	cr_assert_not_null(strstr(why, "extended LBA"));
	cr_assert_eq(nvme_meta_decide(512, 8, true, 1, 0, &f, &why), -EOPNOTSUPP);
}

Test(nvme_meta, protection_information)
{
	struct nvme_meta_fmt f;
	const char *why = NULL;

	/* The PI is all of it: the drive inserts and strips it, tags stay in the tag area. */
	cr_assert_eq(ti_decide(4096, 8, false, 1, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_PI_STRIP);
	cr_assert_eq(f.pi_type, 1);
	cr_assert_eq(f.prinfo, NVME_META_PRACT | NVME_META_PRCHK_GUARD | NVME_META_PRCHK_REF);
	/* Type 3 has no reference tag to check. */
	cr_assert_eq(ti_decide(4096, 8, false, 3, 0, &f), 0);
	cr_assert_eq(f.prinfo, NVME_META_PRACT | NVME_META_PRCHK_GUARD);
	/* 16 bytes, PI last (DPS bit 3 clear): the tag in bytes 0..7. */
	cr_assert_eq(ti_decide(4096, 16, false, 1, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_TAG);
	cr_assert_eq(f.tag_at, 0);
	cr_assert_eq(f.prinfo, NVME_META_PRACT | NVME_META_PRCHK_GUARD | NVME_META_PRCHK_REF);
	/* PI first: the tag right after it. */
	cr_assert_eq(ti_decide(4096, 16, false, 0x8 | 2, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_TAG);
	cr_assert_eq(f.tag_at, 8);
	/* Room for the PI but not the tag: the drive's check, zeroes for the rest. */
	cr_assert_eq(ti_decide(4096, 12, false, 1, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_ZERO);
	cr_assert_neq(f.prinfo & NVME_META_PRACT, 0);
	cr_assert_eq(ti_decide(512, 16, false, 1, 0, &f), 0);
	cr_assert_eq(f.mode, NVME_META_ZERO);
	/* Other guard formats, types that do not exist, a PI larger than the metadata. */
	cr_assert_eq(nvme_meta_decide(4096, 16, false, 1, 2, &f, &why), -EOPNOTSUPP);
	cr_assert_not_null(strstr(why, "guard"));
	cr_assert_eq(ti_decide(4096, 16, false, 0, 2, &f), 0, "no PI: its format does not matter");
	cr_assert_eq(ti_decide(4096, 16, false, 5, 0, &f), -EOPNOTSUPP);
	cr_assert_eq(ti_decide(4096, 4, false, 1, 0, &f), -EOPNOTSUPP);
}

Test(nvme_meta, the_command_carries_metadata_prinfo_and_reference_tag)
{
	struct nvme_uring_cmd c;
	struct nvme_meta_fmt f;
	uint8_t data[2 * 4096], meta[32];

	cr_assert_eq(ti_decide(4096, 16, false, 1, 0, &f), 0);
	cr_assert_eq(nvme_cmd_build_rw(&c, true, 1, 0x123456789aull, 2, 4096, data, true), 0);
	nvme_meta_cmd(&c, &f, meta);
	cr_assert_eq(c.metadata, (uint64_t)(uintptr_t)meta);
	cr_assert_eq(c.metadata_len, 32);
	cr_assert_eq(c.cdw12, 1u | NVME_CMD_RW_FUA | 0xdu << 26, "NLB, FUA, PRACT|GUARD|REF");
	cr_assert_eq(c.cdw14, 0x3456789au, "the reference tag: the LBA's low 32 bits");
	cr_assert_eq(c.cdw10, 0x3456789au);
	cr_assert_eq(c.cdw11, 0x12u);

	/* PI only: nothing transferred, the drive strips and inserts. */
	cr_assert_eq(ti_decide(4096, 8, false, 1, 0, &f), 0);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 7, 2, 4096, data, false), 0);
	nvme_meta_cmd(&c, &f, NULL);
	cr_assert_eq(c.metadata, 0);
	cr_assert_eq(c.metadata_len, 0);
	cr_assert_eq(c.cdw12 >> 26, 0xdu);
	cr_assert_eq(c.cdw14, 7);

	/* No PI: the buffer and nothing else. */
	cr_assert_eq(ti_decide(512, 8, false, 0, 0, &f), 0);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 7, 8, 512, data, false), 0);
	nvme_meta_cmd(&c, &f, meta);
	cr_assert_eq(c.metadata_len, 64);
	cr_assert_eq(c.cdw12, 7);
	cr_assert_eq(c.cdw14, 0);

	cr_assert_eq(ti_decide(4096, 0, false, 0, 0, &f), 0);
	cr_assert_eq(nvme_cmd_build_rw(&c, false, 1, 7, 1, 4096, data, false), 0);
	nvme_meta_cmd(&c, &f, meta);
	cr_assert_eq(c.metadata, 0);
	cr_assert_eq(c.metadata_len, 0);
	cr_assert_eq(nvme_meta_len(&f, 1 << 20), 0);
}

Test(nvme_meta, a_tag_in_a_metadata_buffer)
{
	struct nvme_meta_fmt f;
	uint8_t meta[3 * 16], want[8];
	tag_t t = tag_make(0xdeadbeef);

	cr_assert_eq(ti_decide(4096, 16, false, 0x8 | 1, 0, &f), 0);
	memset(meta, 0, sizeof(meta));
	nvme_meta_tag_put(meta, &f, 1, t);
	tag_encode(t, want);
	cr_assert_arr_eq(meta + 16 + 8, want, 8, "block 1's tag after its PI");
	for (unsigned i = 0; i < sizeof(meta); i++)
		if (i < 24 || i >= 32)
			cr_assert_eq(meta[i], 0, "byte %u untouched", i);
	cr_assert_eq(nvme_meta_tag_get(meta, &f, 1), t);
	cr_assert_eq(nvme_meta_tag_get(meta, &f, 0), 0, "zeroes: absent");
	/* A deallocated block whose metadata reads all ones (DLFEAT 010b): absent too. */
	memset(meta + 2 * 16, 0xff, 16);
	cr_assert_eq(nvme_meta_tag_get(meta, &f, 2), 0);
	/* All ones but one bit: a tag that holds nothing, never absent. */
	meta[2 * 16 + 8] = 0xfe;
	cr_assert(tag_valid(nvme_meta_tag_get(meta, &f, 2)));
	cr_assert_eq(nvme_meta_len(&f, 3 * 4096), 48);
}

/* An array whose role 1 behaves as a passthrough namespace of 16 metadata bytes with PI. */
static struct au_set ti_set;

static void ti_setup(void)
{
	au_make(&ti_set, 3, TI_MEMBER_BYTES);
}

static void ti_teardown(void)
{
	au_remove(&ti_set);
}

static struct graid_array *ti_array(void)
{
	struct graid_array_config cfg = {
		.struct_size = sizeof(cfg), .level = 5, .chunk_bytes = 65536,
		.backend = "isal", .flags = GRAID_CREATE_CHECKSUMS,
	};
	struct graid_array *a = NULL;
	struct member_nvme *n;

	cr_assert_eq(graid_array_create(ti_set.paths, 3, &cfg, &a), 0);
	n = &a->members[1].dev.nvme;
	cr_assert_eq(ti_decide(4096, 16, false, 1, 0, &n->meta), 0);
	n->passthru = true;
	tag_inline_attach(a, 1);
	cr_assert(tag_inline_role(a, 1));
	cr_assert_not(tag_inline_role(a, 0), "a file keeps its tags in the tag area");
	return a;
}

/* Back to a file before close: the handle's own I/O must not take it for a namespace. */
static void ti_close(struct graid_array *a)
{
	memset(&a->members[1].dev.nvme, 0, sizeof(a->members[1].dev.nvme));
	cr_assert_eq(graid_array_close(a), 0);
}

static void ti_fill(uint8_t *buf, unsigned n, unsigned seed)
{
	for (unsigned i = 0; i < n * TI_BLK; i++)
		buf[i] = (uint8_t)(i * 7 + seed * 31 + i / TI_BLK);
}

/* A write of @p n blocks at block @p blk of role 1 prepared: its metadata (caller frees). */
static void *ti_write_meta(struct graid_array *a, uint64_t blk, uint8_t *buf, unsigned n)
{
	struct member_io_fault mf;

	struct iovec iov = { .iov_base = buf, .iov_len = n * TI_BLK };

	memset(&mf, 0, sizeof(mf));
	mf.off = blk * TI_BLK;
	mf.write = true;
	mf.meta_tags = true; /* as the transfer was kept: an inline role's data area */
	cr_assert_eq(tag_inline_prep(&a->members[1], true, &iov, 1, a->data_offset + blk * TI_BLK,
				     &mf), 0);
	cr_assert_not_null(mf.meta);
	return mf.meta;
}

/* The end of a read of those blocks with @p meta as the drive returned it. */
static int ti_read_end(struct graid_array *a, uint64_t blk, uint8_t *buf, unsigned n,
		       const void *meta, struct member_io_fault *mf)
{
	struct iovec iov = { .iov_base = buf, .iov_len = n * TI_BLK };

	memset(mf, 0, sizeof(*mf));
	mf->off = blk * TI_BLK;
	mf->buf = buf;
	mf->meta_tags = true;
	cr_assert_eq(tag_inline_prep(&a->members[1], false, &iov, 1,
				     a->data_offset + blk * TI_BLK, mf), 0);
	memcpy(mf->meta, meta, (size_t)n * 16);
	tag_inline_end(mf, false, n * TI_BLK, (int)(n * TI_BLK));
	cr_assert(tag_inline_checks(mf));
	return tag_inline_verify(a, 1, mf, n * TI_BLK);
}

TestSuite(tag_inline, .init = ti_setup, .fini = ti_teardown, .timeout = 60);

Test(tag_inline, a_write_carries_each_blocks_tag_and_a_read_checks_it)
{
	struct graid_array *a = ti_array();
	uint8_t buf[3 * TI_BLK];
	struct member_io_fault mf;
	struct csum_pend_entry e[4];
	uint8_t *meta;

	ti_fill(buf, 3, 1);
	meta = ti_write_meta(a, 10, buf, 3);
	for (unsigned i = 0; i < 3; i++) {
		tag_t t = tag_decode(meta + i * 16);

		cr_assert_eq(t, tag_make(tag_crc(a->uuid, 1, 10 + i, buf + i * TI_BLK)),
			     "block %u: the tag area's encoding, key of role 1", i);
		for (unsigned k = 8; k < 16; k++)
			cr_assert_eq(meta[i * 16 + k], 0, "the PI's bytes are the drive's");
	}
	cr_assert_eq(ti_read_end(a, 10, buf, 3, meta, &mf), 3 * TI_BLK);
	cr_assert_null(mf.meta, "freed at the check");

	/* One byte of block 11 changed under the array: that block, as the tag area's check. */
	buf[TI_BLK + 100] ^= 0x40;
	cr_assert_eq(ti_read_end(a, 10, buf, 3, meta, &mf), -EBADMSG);
	cr_assert(mf.csum);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 1);
	cr_assert_eq(csum_pend_take(&a->members[1].role.csum_pend, 0, 1u << 30, e, 4), 1);
	cr_assert_eq(e[0].block, 11);
	{
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

		cr_assert_eq(e[0].fp, csum_pend_fp(&iov, 1, TI_BLK), "the bytes read of block 11");
	}

	/* A racy read that a write overtook ends stale, not as corruption. */
	memset(&mf, 0, sizeof(mf));
	mf.off = 10 * TI_BLK;
	mf.buf = buf;
	mf.meta_tags = true;
	{
		struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };

		cr_assert_eq(tag_inline_prep(&a->members[1], false, &iov, 1,
					     a->data_offset + 10 * TI_BLK, &mf), 0);
	}
	memcpy(mf.meta, meta, 48);
	mf.racy = true;
	mf.wgen = atomic_load(&a->members[1].role.csum_wgen) + 1;
	cr_assert_eq(tag_inline_verify(a, 1, &mf, 3 * TI_BLK), -ESTALE);
	cr_assert(mf.stale);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 1);
	free(meta);
	ti_close(a);
}

Test(tag_inline, absent_tags_pass)
{
	struct graid_array *a = ti_array();
	uint8_t buf[2 * TI_BLK], meta[32];
	struct member_io_fault mf;

	ti_fill(buf, 2, 2);
	memset(meta, 0, 16);
	memset(meta + 16, 0xff, 16);
	cr_assert_eq(ti_read_end(a, 0, buf, 2, meta, &mf), 2 * TI_BLK);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 0);
	ti_close(a);
}

Test(tag_inline, the_drives_end_to_end_errors_are_checksum_failures_of_a_read)
{
	struct graid_array *a = ti_array();
	uint8_t buf[2 * TI_BLK];
	struct member_io_fault mf;
	struct csum_pend_entry e[4];
	void *meta;

	ti_fill(buf, 2, 3);
	meta = ti_write_meta(a, 4, buf, 2);
	memset(&mf, 0, sizeof(mf));
	mf.off = 4 * TI_BLK;
	mf.buf = buf;
	/* Guard, application tag, reference tag (SCT 2, SC 82h..84h); not other media errors. */
	cr_assert_not(tag_inline_e2e(a, 1, &mf, 2 << 8 | 0x81));
	cr_assert_not(tag_inline_e2e(a, 1, &mf, 2 << 8 | 0x85));
	mf.write = true;
	cr_assert_not(tag_inline_e2e(a, 1, &mf, 2 << 8 | 0x82), "a write's: an I/O error");
	mf.write = false;
	mf.off = UINT64_MAX;
	cr_assert_not(tag_inline_e2e(a, 1, &mf, 2 << 8 | 0x82), "outside the data area");
	mf.off = 4 * TI_BLK;
	cr_assert(tag_inline_e2e(a, 1, &mf, 2 << 8 | 0x84 | 1 << 14));
	cr_assert(mf.e2e);
	cr_assert(tag_inline_checks(&mf));
	/* The drive does not say which block: every block of the read, though its tags hold. */
	cr_assert_eq(tag_inline_verify(a, 1, &mf, 2 * TI_BLK), -EBADMSG);
	cr_assert(mf.csum);
	cr_assert_eq(csum_pend_take(&a->members[1].role.csum_pend, 0, 1u << 30, e, 4), 2);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 2);
	free(meta);
	ti_close(a);
}

Test(tag_inline, the_tag_store_holds_nothing_for_an_inline_role)
{
	struct graid_array *a = ti_array();
	uint8_t buf[TI_BLK], zero[TI_BLK];
	struct iovec iov = { .iov_base = buf, .iov_len = TI_BLK };
	struct tag_bad bad[1];
	unsigned nbad = 9;
	int fd;

	/* Without generations (as format 1.5 kept them): an inline role has no tag-area copy. */
	a->csum_gens = false;
	ti_fill(buf, 1, 4);
	cr_assert_eq(tag_store_write_begin(a, 1, 0, &iov, 1), 0);
	tag_store_write_end(a, 1, 0, TI_BLK, true);
	cr_assert_eq(tag_store_set(a, 1, TI_BLK, &iov, 1), 0);
	buf[0] ^= 1;
	/* Whatever the bytes: checked as their read ended, not here. */
	cr_assert_eq(tag_store_verify(a, 1, 0, &iov, 1, bad, 1, &nbad), 0);
	cr_assert_eq(nbad, 0);
	cr_assert_eq(tag_store_forget(a, 1, 0, TI_BLK), 0);
	/* The same on role 0 (a file): its tag area's tag holds, and fails the changed bytes. */
	buf[0] ^= 1;
	cr_assert_eq(tag_store_set(a, 0, 0, &iov, 1), 0);
	buf[0] ^= 1;
	cr_assert_eq(tag_store_verify(a, 0, 0, &iov, 1, bad, 1, &nbad), -EBADMSG);
	cr_assert_eq(tag_store_flush(a), 0);
	fd = open(ti_set.paths[1], O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, zero, TI_BLK, (off_t)a->tag_offset), TI_BLK);
	close(fd);
	for (unsigned i = 0; i < TI_BLK; i++)
		cr_assert_eq(zero[i], 0, "role 1's tag area never written");
	ti_close(a);
}

/*
 * A read issued to role 1's device ends after another device took the role (a replace's
 * swap does not wait for reads): its metadata is laid out as the old device's format, and
 * must be read so, not as the new device's.
 */
Test(tag_inline, a_read_of_a_replaced_device_is_checked_by_its_own_format)
{
	struct graid_array *a = ti_array();
	struct member_nvme *n = &a->members[1].dev.nvme;
	uint8_t buf[3 * TI_BLK];
	struct member_io_fault mf;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	uint8_t *meta;

	ti_fill(buf, 3, 5);
	meta = ti_write_meta(a, 20, buf, 3);
	memset(&mf, 0, sizeof(mf));
	mf.off = 20 * TI_BLK;
	mf.buf = buf;
	mf.meta_tags = true;
	cr_assert_eq(tag_inline_prep(&a->members[1], false, &iov, 1,
				     a->data_offset + 20 * TI_BLK, &mf), 0);
	memcpy(mf.meta, meta, 48);
	tag_inline_end(&mf, false, sizeof(buf), (int)sizeof(buf));
	/* The swap: the new device is a file (its tags in the tag area, no metadata). */
	memset(n, 0, sizeof(*n));
	tag_inline_attach(a, 1);
	cr_assert_not(tag_inline_role(a, 1));
	cr_assert(tag_inline_checks(&mf));
	cr_assert_eq(tag_inline_verify(a, 1, &mf, sizeof(buf)), (int)sizeof(buf),
		     "the bytes hold the tags their device's metadata brought");
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 0);
	free(meta);
	ti_close(a);
}

/*
 * The same read ending while the swap has put the new device's identity in the role but not
 * yet decided where its tags are (its key fields still the new device's own, unset).
 */
Test(tag_inline, a_read_ending_inside_a_swap_is_checked_with_the_roles_key)
{
	struct graid_array *a = ti_array();
	struct member_nvme *n = &a->members[1].dev.nvme;
	uint8_t buf[2 * TI_BLK];
	struct member_io_fault mf;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	uint8_t *meta;

	ti_fill(buf, 2, 6);
	meta = ti_write_meta(a, 30, buf, 2);
	memset(&mf, 0, sizeof(mf));
	mf.off = 30 * TI_BLK;
	mf.buf = buf;
	mf.meta_tags = true;
	cr_assert_eq(tag_inline_prep(&a->members[1], false, &iov, 1,
				     a->data_offset + 30 * TI_BLK, &mf), 0);
	memcpy(mf.meta, meta, 32);
	tag_inline_end(&mf, false, sizeof(buf), (int)sizeof(buf));
	memset(n, 0, sizeof(*n)); /* m->dev = the new device's, before tag_inline_attach() */
	cr_assert_eq(tag_inline_verify(a, 1, &mf, sizeof(buf)), (int)sizeof(buf));
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 0);
	free(meta);
	ti_close(a);
}

/* The lost-write events of a handle (the callback runs as the event is sent). */
struct ti_events {
	unsigned n;
	struct graid_event last;
};

static void ti_on_event(void *arg, const struct graid_event *ev)
{
	struct ti_events *e = arg;

	if (ev->type != GRAID_EVENT_CSUM_LOST_WRITE)
		return;
	e->n++;
	e->last = *ev;
}

/*
 * A write of one block at @p blk of role 1 through the member I/O path (its tags made ready
 * as a ring's write's are, its metadata made, its end), @p meta_in its meta word or NULL:
 * the metadata it sent (caller frees).
 */
static uint8_t *ti_gwrite(struct graid_array *a, uint64_t blk, uint8_t *buf,
			  const uint32_t *meta_in, struct member_io_fault *mf)
{
	struct iovec iov = { .iov_base = buf, .iov_len = TI_BLK };
	uint8_t *meta = malloc(16);

	cr_assert_not_null(meta);
	memset(mf, 0, sizeof(*mf));
	mf->meta_in = meta_in;
	cr_assert_eq(member_io_now_begin(a, 1, true, buf, TI_BLK, NULL, 0, blk * TI_BLK, mf), 0);
	cr_assert(mf->meta_tags);
	cr_assert_eq(tag_inline_prep(&a->members[1], true, &iov, 1, a->data_offset + blk * TI_BLK,
				     mf), 0);
	memcpy(meta, mf->meta, 16);
	cr_assert_eq(member_io_done(a, 1, true, TI_BLK, mf, TI_BLK), TI_BLK);
	cr_assert_null(mf->meta_gens, "freed at its end");
	return meta;
}

/*
 * A read of one block at @p blk of role 1 through the member I/O path, @p meta as the drive
 * returned it: what member_io_done() ends it with.
 */
static int ti_gread(struct graid_array *a, uint64_t blk, uint8_t *buf, const uint8_t *meta,
		    struct member_io_fault *mf)
{
	struct iovec iov = { .iov_base = buf, .iov_len = TI_BLK };

	memset(mf, 0, sizeof(*mf));
	cr_assert_eq(member_io_now_begin(a, 1, false, buf, TI_BLK, NULL, 0, blk * TI_BLK, mf), 0);
	cr_assert(mf->meta_tags);
	cr_assert_eq(tag_inline_prep(&a->members[1], false, &iov, 1,
				     a->data_offset + blk * TI_BLK, mf), 0);
	memcpy(mf->meta, meta, 16);
	return member_io_done(a, 1, false, TI_BLK, mf, TI_BLK);
}

/*
 * With generations (docs/INTEGRITY.md, "Lost writes", decision 4) an inline role keeps a
 * copy of its tags in the tag area: filled by writes (not by reads), written back; a read
 * whose metadata tag holds its CRC but is behind the copy is a lost write of block and
 * metadata together, healed and reported as checksum-lost-write.
 */
Test(tag_inline, with_generations_a_metadata_tag_behind_its_tag_area_copy_is_a_lost_write)
{
	struct graid_array *a = ti_array();
	struct member_nvme *n = &a->members[1].dev.nvme;
	uint8_t v1[TI_BLK], v2[TI_BLK], area[8], *m1, *m2, *m3;
	const uint32_t expect = 2;
	struct member_io_fault mf;
	struct ti_events ev = { 0 };
	struct tag_peek pk;
	tag_t t;
	int fd;

	a->csum_gens = true;
	n->passthru = false; /* the fake device's tag area is its file: the store reads it so */
	graid_array_set_event_callback(a, ti_on_event, &ev);
	ti_fill(v1, 1, 7);
	ti_fill(v2, 1, 8);
	/* A read does not fill the copy (no tag-area read on an inline role's read path). */
	m1 = ti_write_meta(a, 41, v1, 1);
	cr_assert_eq(ti_gread(a, 41, v1, m1, &mf), TI_BLK);
	free(m1);
	cr_assert_eq(tag_store_peek(a, 1, 41, 1, &pk), -ENOENT, "a read filled the copy");

	m1 = ti_gwrite(a, 40, v1, NULL, &mf);
	cr_assert_eq(tag_decode(m1), tag_make_meta(tag_crc(a->uuid, 1, 40, v1), 1),
		     "the first write's metadata carries generation 1");
	m2 = ti_gwrite(a, 40, v2, NULL, &mf);
	cr_assert_eq(tag_decode(m2), tag_make_meta(tag_crc(a->uuid, 1, 40, v2), 2));
	cr_assert_eq(tag_store_peek(a, 1, 40, 1, &pk), 0, "the copy is kept");
	cr_assert_eq(pk.tag, tag_decode(m2));
	cr_assert_eq(ti_gread(a, 40, v2, m2, &mf), TI_BLK, "the current block reads");

	/* Block and metadata as the first write left them: their CRC holds, generation 1 < 2. */
	cr_assert_eq(ti_gread(a, 40, v1, m1, &mf), -EBADMSG);
	cr_assert(mf.csum);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 0, "counted when settled");
	cr_assert_eq(ev.n, 0);
	/* The heal writes the right bytes back with the expected generation: reported then. */
	m3 = ti_gwrite(a, 40, v2, &expect, &mf);
	csum_report_written(a, 1, &mf, TI_BLK);
	cr_assert_eq(tag_decode(m3), tag_decode(m2), "healed with generation 2, not 3");
	cr_assert_eq(ev.n, 1, "%u checksum-lost-write events", ev.n);
	cr_assert_eq(ev.last.member, 1);
	cr_assert_eq(ev.last.stripe, 40);
	cr_assert_eq(ev.last.error, 0);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_errors), 1);
	cr_assert_eq(atomic_load(&a->members[1].role.csum_lost_writes), 1);

	/* Written back like a tag-area role's tags. */
	cr_assert_eq(tag_store_flush(a), 0);
	fd = open(ti_set.paths[1], O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, area, 8, (off_t)(a->tag_offset + 40 * 8)), 8);
	close(fd);
	t = tag_decode(area);
	cr_assert_eq(t, tag_decode(m2), "the tag area's copy: 0x%llx", (unsigned long long)t);
	free(m1);
	free(m2);
	free(m3);
	ti_close(a);
}
