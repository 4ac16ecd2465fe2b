/* SPDX-License-Identifier: MIT */
/* A checksummed role whose tags travel in its NVMe device's block metadata: its part of the I/O path. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array/array.h"
#include "format/nvme_cmd.h"
#include "format/nvme_meta.h"
#include "format/tag_format.h"
#include "member/csum_pend.h"
#include "member/member_nvme.h"
#include "member/tag_inline.h"

void tag_inline_attach(struct graid_array *a, unsigned role)
{
	struct member_nvme *n = &a->members[role].dev.nvme;

	n->tag_role = role;
	n->tag_prefix = tag_crc_prefix(a->uuid, role);
	n->tag_data_off = a->data_offset;
	n->tag_data_end = a->data_offset + a->lay.member_bytes;
	n->tags_inline = a->csum && n->passthru && n->meta.mode == NVME_META_TAG;
	if (n->tags_inline)
		graid__log(GRAID_LOG_INFO, "member %u (%s): checksum tags in the blocks' metadata "
					   "(bytes %u..%u of %u)", role, a->members[role].dev.path,
			   n->meta.tag_at, n->meta.tag_at + TAG_BYTES - 1, n->meta.ms);
}

int tag_inline_prep(const struct member *m, bool write, const struct iovec *iov,
		    unsigned iovcnt, uint64_t at, struct member_io_fault *mf)
{
	const struct member_nvme *n = &m->dev.nvme;
	struct tag_iov_cursor c = { .iov = iov, .cnt = iovcnt };
	uint64_t bytes = 0, mlen;

	mf->meta = NULL;
	mf->meta_at = at;
	mf->meta_fmt = n->meta;
	mf->meta_prefix = n->tag_prefix;
	for (unsigned i = 0; i < c.cnt; i++)
		bytes += c.iov[i].iov_len;
	mlen = nvme_meta_len(&n->meta, bytes);
	if (!mlen) {
		mf->meta_tags = false;
		return 0;
	}
	/*
	 * A write's zeroes: what a block outside the data area, or of an array without tags,
	 * keeps. A read's buffer is the drive's to fill (read only when the read succeeded).
	 */
	mf->meta = write ? calloc(1, mlen) : malloc(mlen);
	if (!mf->meta)
		return -ENOMEM;
	if (!write || !mf->meta_tags)
		return 0;
	for (uint64_t i = 0; i < bytes / TAG_DATA_BLOCK; i++) {
		uint64_t block = mf->off / TAG_DATA_BLOCK + i;

		uint32_t crc = tag_iov_crc(&c, tag_crc_begin_at(n->tag_prefix, block));

		/* With generations, the one the tag store gave the block's copy (mio_keep). */
		nvme_meta_tag_put(mf->meta, &n->meta, i,
				  mf->meta_gens ? tag_make_meta(crc, mf->meta_gens[i]) : tag_make(crc));
	}
	return 0;
}

void tag_inline_cmd(struct nvme_uring_cmd *cmd, const struct member *m,
		    const struct member_io_fault *mf, uint64_t at)
{
	const struct nvme_meta_fmt *f = &m->dev.nvme.meta;

	if (f->mode == NVME_META_NONE)
		return;
	nvme_meta_cmd(cmd, f, mf->meta ? (char *)mf->meta + nvme_meta_len(f, at - mf->meta_at)
				       : NULL);
}

bool tag_inline_e2e(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		    int status)
{
	const unsigned sc = nvme_status_sc(status);

	if (status <= 0 || nvme_status_sct(status) != 2 || sc < 0x82 || sc > 0x84 || mf->write ||
	    !a->tags || mf->off == UINT64_MAX || mf->unverified)
		return false;
	graid__log(GRAID_LOG_WARNING, "member %u (%s): NVMe %s in a read of data-area bytes "
				      "from %llu: its blocks count as failing their checksums",
		   member, a->members[member].dev.path, nvme_status_name(status),
		   (unsigned long long)mf->off);
	mf->e2e = true;
	return true;
}

void tag_inline_free(struct member_io_fault *mf)
{
	free(mf->meta);
	mf->meta = NULL;
	free(mf->meta_gens);
	mf->meta_gens = NULL;
	free(mf->meta_stale);
	mf->meta_stale = NULL;
}

void tag_inline_end(struct member_io_fault *mf, bool write, uint32_t len, int res)
{
	if (write || !mf->meta_tags || mf->stale || mf->injected || res != (int)len ||
	    mf->unverified)
		tag_inline_free(mf);
}

/* Whether block @p i of the read holds its tag; *@p fp its bytes' CRC-32C if not. */
static bool ti_block_holds(const struct member_io_fault *mf, struct tag_iov_cursor *c,
			   uint64_t i)
{
	uint64_t block = mf->off / TAG_DATA_BLOCK + i;
	uint32_t crc = tag_iov_crc(c, tag_crc_begin_at(mf->meta_prefix, block));

	/* As the read was issued: the role may have another device, or a half-set one, now. */
	return tag_holds(nvme_meta_tag_get(mf->meta, &mf->meta_fmt, i), crc);
}

/*
 * After the drive's end-to-end check failed a read (it does not say which LBA): each 4 KiB
 * block read again alone, into its place in the read's buffer, and checked; @p bad[i] set
 * for the ones that fail. False, nothing told apart, where that cannot be done here: a
 * vectored read, or one issued to a device the role no longer has.
 */
static bool ti_e2e_narrow(struct member *m, const struct member_io_fault *mf, uint32_t len,
			  bool *bad)
{
	/* As the read was issued (tag_inline_prep): a swap may be half done on m->dev now. */
	const struct nvme_meta_fmt *f = &mf->meta_fmt;
	uint64_t mlen = nvme_meta_len(f, TAG_DATA_BLOCK);
	void *meta;

	if (mf->iov || mf->fd != m->dev.fd || !(meta = calloc(1, mlen + 1)))
		return false;
	for (uint32_t i = 0; i < len / TAG_DATA_BLOCK; i++) {
		uint8_t *data = (uint8_t *)mf->buf + (size_t)i * TAG_DATA_BLOCK;
		uint64_t block = mf->off / TAG_DATA_BLOCK + i;

		bad[i] = member_nvme_rw_meta(m, data, TAG_DATA_BLOCK,
					     mf->meta_at + (uint64_t)i * TAG_DATA_BLOCK, false, meta) ||
			 (mf->meta_tags &&
			  !tag_holds(nvme_meta_tag_get(meta, f, 0),
				     tag_crc_end(tag_crc_feed(tag_crc_begin_at(mf->meta_prefix, block),
							      data, TAG_DATA_BLOCK))));
	}
	free(meta);
	return true;
}

int tag_inline_verify(struct graid_array *a, unsigned member, struct member_io_fault *mf,
		      uint32_t len)
{
	struct member *m = &a->members[member];
	struct iovec one = { .iov_base = mf->buf, .iov_len = len };
	const struct iovec *iov = mf->iov ? mf->iov : &one;
	const unsigned iovcnt = mf->iov ? mf->iovcnt : 1;
	struct tag_iov_cursor c = { .iov = iov, .cnt = iovcnt };
	const uint64_t nblocks = len / TAG_DATA_BLOCK;
	uint64_t *bad = NULL, nbad = 0, fresh = 0;
	bool *e2e_bad = NULL, *stale = NULL;
	int rc = 0;

	if (mf->unverified) {
		/* Resync: nothing to set, the device keeps each block's tag with its bytes. */
		tag_inline_free(mf);
		return mf->e2e ? -EIO : (int)len;
	}
	if (mf->e2e) {
		e2e_bad = calloc(nblocks, sizeof(*e2e_bad));
		if (!e2e_bad)
			rc = -ENOMEM;
		else if (!ti_e2e_narrow(m, mf, len, e2e_bad))
			memset(e2e_bad, 1, nblocks * sizeof(*e2e_bad)); /* every block of it, then */
	}
	for (uint64_t i = 0; rc == 0 && i < nblocks; i++) {
		if (mf->e2e ? !e2e_bad[i] : ti_block_holds(mf, &c, i))
			continue;
		/* Only a mismatch allocates: the success path is the check alone. */
		if (!bad && !(bad = malloc(nblocks * sizeof(*bad))))
			rc = -ENOMEM;
		else
			bad[nbad++] = i;
	}
	/* Every CRC held: blocks behind their tag-area copy (member_io_done found them). */
	if (rc == 0 && !nbad && !mf->e2e) {
		stale = mf->meta_stale;
		mf->meta_stale = NULL;
	}
	free(e2e_bad);
	tag_inline_free(mf);
	if (rc || (!nbad && !stale)) {
		free(bad);
		free(stale);
		return rc ? rc : (int)len;
	}
	/* As the tag store's check: a write that overtook a racy read is no corruption. */
	if (!mf->e2e && mf->racy &&
	    (atomic_load(&m->role.csum_wgen) != mf->wgen || mf->wbusy ||
	     atomic_load(&m->role.csum_wbegun) != mf->wbegun)) {
		free(bad);
		free(stale);
		mf->stale = true;
		return -ESTALE;
	}
	for (uint64_t k = 0; k < nbad; k++)
		fresh += csum_pend_add(&m->role.csum_pend, mf->off / TAG_DATA_BLOCK + bad[k],
				       csum_pend_fp(iov, iovcnt, bad[k] * TAG_DATA_BLOCK));
	atomic_fetch_add_explicit(&m->role.csum_errors, fresh, memory_order_relaxed);
	/* Counted when settled (csum_report_lost_write), not here. */
	for (uint64_t i = 0; stale && i < nblocks; i++)
		if (stale[i])
			csum_pend_add_lost(&m->role.csum_pend, mf->off / TAG_DATA_BLOCK + i,
					   csum_pend_fp(iov, iovcnt, i * TAG_DATA_BLOCK));
	free(stale);
	free(bad);
	mf->csum = true;
	return -EBADMSG;
}

int tag_inline_absent(struct graid_array *a, unsigned role, uint64_t off, unsigned nblocks,
		      uint64_t *absent)
{
	struct member *m = &a->members[role];
	const struct nvme_meta_fmt *f = &m->dev.nvme.meta;
	uint64_t len = (uint64_t)nblocks * TAG_DATA_BLOCK;
	void *buf, *meta;
	int rc;

	if (off % TAG_DATA_BLOCK || off + len > a->lay.member_bytes)
		return -EINVAL;
	memset(absent, 0, (nblocks + 63u) / 64u * sizeof(*absent));
	if (posix_memalign(&buf, 4096, len ? len : 4096))
		return -ENOMEM;
	meta = calloc(1, nvme_meta_len(f, len) + 1);
	if (!meta) {
		free(buf);
		return -ENOMEM;
	}
	rc = member_nvme_rw_meta(m, buf, len, a->data_offset + off, false, meta);
	for (unsigned i = 0; rc == 0 && i < nblocks; i++)
		if (!tag_valid(nvme_meta_tag_get(meta, f, i)))
			absent[i / 64] |= 1ull << (i % 64);
	free(meta);
	free(buf);
	return rc;
}
