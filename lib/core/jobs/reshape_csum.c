/* SPDX-License-Identifier: MIT */
/*
 * Checksums across a RAID-5/6 grow (docs/RESHAPE.md, "Checksums across a grow"). A moved
 * block is a new write at its new place: its tag there is made from the bytes the job
 * writes, which are the ones it verified at the old place (or rebuilt from the old row's
 * parity where that failed), never from bytes no tag vouched for.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "format/nvme_meta.h"
#include "format/tag_format.h"
#include "io/lost_write_column.h"
#include "jobs/reshape_csum.h"
#include "jobs/reshape_job.h"
#include "member/tag_store.h"
#include "meta/bitmap.h"
#include "meta/csum_report.h"

/* The never-written tags written at a time: 1 MiB of tag area (the tags of 512 MiB of data). */
#define RESHAPE_CSUM_PREP_BYTES (1u << 20)

/*
 * The tag an added device's every block gets before the grow names it: present, generation
 * 0, CRC 0 (docs/RESHAPE.md, "Checksums across a grow", "The added roles"). Present, so that
 * the lost-write judgement weighs it: a job's write lost with its tag leaves this tag, one
 * write behind the parity's record (an absent tag says nothing and would be passed over).
 * CRC 0 vouches for no bytes: the device's old bytes under it fail their check (a CRC of 0
 * over them by chance still leaves the generation behind the record).
 */
static tag_t reshape_csum_never_written(void)
{
	return tag_make(0);
}

/* Member @p m's tag area [a->tag_offset, + a->tag_bytes) all never-written tags, flushed. */
static int reshape_csum_prep_one(struct graid_array *a, struct member *m)
{
	size_t len = a->tag_bytes < RESHAPE_CSUM_PREP_BYTES ? (size_t)a->tag_bytes
							     : RESHAPE_CSUM_PREP_BYTES;
	uint8_t *buf = aligned_alloc(TAG_BLOCK_BYTES, len);
	int rc = 0;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < len; i += TAG_BYTES)
		tag_encode(reshape_csum_never_written(), buf + i);
	for (uint64_t at = 0; rc == 0 && at < a->tag_bytes; at += len) {
		size_t n = a->tag_bytes - at < len ? (size_t)(a->tag_bytes - at) : len;

		rc = member_pio(m, buf, n, a->tag_offset + at, true);
	}
	/* Durable before the start's record names the device (a crash leaves no old tags). */
	if (rc == 0)
		rc = member_flush(m);
	free(buf);
	return rc;
}

/*
 * Whether added device @p m would keep its tags inline, in its blocks' NVMe metadata (the
 * rule of tag_inline_attach(), which decides it when the role is installed): the metadata
 * is then the authoritative tag and the tag area only a copy. What the device's metadata
 * holds is nobody's (deallocated: zeroes, absent tags), and nothing here writes never-written
 * tags into it, so a lost write of the job's there would go unseen (review finding 1 of the
 * switch-on): such a grow is refused before anything is written.
 */
static bool reshape_csum_inline(const struct graid_array *a, const struct member *m)
{
	return a->csum && m->dev.nvme.passthru && m->dev.nvme.meta.mode == NVME_META_TAG;
}

int reshape_csum_prep_added(struct graid_array *a, struct member *m, unsigned n)
{
	int rc = 0;

	if (!a->csum)
		return 0;
	for (unsigned i = 0; i < n; i++)
		if (reshape_csum_inline(a, &m[i])) {
			graid__log(GRAID_LOG_ERR,
				   "grow: %s would keep its checksum tags in its blocks' NVMe "
				   "metadata, which a checksummed grow does not prepare (docs/"
				   "RESHAPE.md, \"The added roles\"): add its block device, or "
				   "format it without metadata; nothing written",
				   m[i].dev.path);
			return -EOPNOTSUPP;
		}
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		/* Without generations nothing compares them: absent (zeroed) is as good. */
		rc = a->csum_gens ? reshape_csum_prep_one(a, &m[i])
				  : member_zero_range(&m[i], a->tag_offset, a->tag_bytes);
		if (rc)
			graid__log(GRAID_LOG_ERR, "grow: writing the tag area of %s: %s",
				   m[i].dev.path, graid_strerror(rc));
	}
	return rc;
}

int reshape_csum_install(struct graid_array *a, unsigned base, unsigned n)
{
	int rc = 0;

	for (unsigned i = 0; rc == 0 && i < n; i++)
		rc = tag_store_add_role(a, base + i);
	return rc;
}

int reshape_csum_forget(struct graid_array *a, unsigned m, uint64_t off, uint64_t len)
{
	int rc;

	if (!a->tags || len == 0)
		return 0;
	rc = tag_store_forget(a, m, off, len);
	if (rc == 0)
		rc = tag_store_write_back(a);
	if (rc)
		graid__log(GRAID_LOG_ERR, "reshape: clearing the tags of the added space on "
					  "member %u (%s): %s", m, a->members[m].dev.path,
			   graid_strerror(rc));
	return rc;
}

#if GRAID_FAULT_INJECTION
/*
 * Tests (test_reshape_grow_csum.c): the job's looks at the tags of member
 * graid__test_csum_peek_member over 4 KiB block graid__test_csum_peek_block fail with
 * graid__test_csum_peek_err (a -errno; 0: none) until it is cleared, each counted in
 * graid__test_csum_peek_hits: a tag block that cannot be read for a reason other than its
 * medium (tag_store_peek_load() answers those all absent itself). With
 * graid__test_csum_peek_dest only the looks at the places the job writes fail.
 */
_Atomic int graid__test_csum_peek_err;
bool graid__test_csum_peek_dest;
_Atomic unsigned graid__test_csum_peek_hits;
unsigned graid__test_csum_peek_member;
uint64_t graid__test_csum_peek_block;
#endif

/*
 * tag_store_peek_load() of the job's: its error is never taken for absent tags. @p dest: of
 * a place the job writes (else of an old row it judges).
 */
static int reshape_csum_peek(struct graid_array *a, unsigned m, uint64_t block, unsigned n,
			     struct tag_peek *pk, bool dest)
{
#if GRAID_FAULT_INJECTION
	if (m == graid__test_csum_peek_member && graid__test_csum_peek_block >= block &&
	    graid__test_csum_peek_block < block + n && (dest || !graid__test_csum_peek_dest)) {
		int err = atomic_load(&graid__test_csum_peek_err);

		if (err) {
			atomic_fetch_add(&graid__test_csum_peek_hits, 1);
			return err;
		}
	}
#else
	(void)dest;
#endif
	return tag_store_peek_load(a, m, block, n, pk);
}

int reshape_csum_row_meta(struct graid_array *a, const struct layout *l, uint64_t row,
			  uint32_t *meta)
{
	const unsigned per = reshape_csum_words(l), k = l->ndata;
	const uint64_t block0 = row * l->chunk / 4096u;
	struct tag_peek *pk;
	uint32_t g[GRAID_MAX_MEMBERS];
	int rc = 0;

	if (!a->tags || !a->csum_gens)
		return 1;
	pk = malloc(per * sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	for (unsigned r = 0; rc == 0 && r < k; r++) {
		unsigned m = layout_role_member(l, row, r);

		/*
		 * The tag the place has now (the old geometry's block there, never written on an
		 * added role, or an earlier try of this row): the next generation differs from the
		 * one the member holds, so a lost write of the job's reads as one write behind. A
		 * role out has none to read: the record then defines the block's generation, as
		 * for a degraded write. A tag block of a role in that cannot be read (other than
		 * by its medium, which the store answers absent and rewrites) stops the row: its
		 * generation unknown, any word chosen could be the one the member holds, and a
		 * lost write of the job's would then match the record.
		 */
		if (!array_role_alive(a, m)) {
			memset(pk, 0, per * sizeof(*pk));
		} else if ((rc = reshape_csum_peek(a, m, block0, per, pk, true)) != 0) {
			graid__log(GRAID_LOG_ERR,
				   "reshape: the tags of new row %" PRIu64 " on member %u (%s) "
				   "cannot be read: %s; stopped",
				   row, m, a->members[m].dev.path, graid_strerror(rc));
			break;
		}
		for (unsigned c = 0; c < per; c++)
			meta[(size_t)r * per + c] = tag_gen_next(pk[c].cached ? tag_gen(pk[c].tag) : 0);
	}
	for (unsigned c = 0; rc == 0 && c < per; c++) {
		for (unsigned r = 0; r < k; r++)
			g[r] = meta[(size_t)r * per + c];
		for (unsigned p = 0; p < l->nparity; p++)
			meta[(size_t)(k + p) * per + c] = tag_rec_encode(tag_rec_make(g, k));
	}
	free(pk);
	return rc;
}

int reshape_csum_next_meta(struct graid_array *a, unsigned m, uint64_t off, unsigned n,
			   uint32_t *meta)
{
	struct tag_peek *pk;
	int rc;

	if (!a->tags || !a->csum_gens)
		return 1;
	pk = malloc(n * sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	/* As tag_new() with no words: the next generation of the committed tag (lock held). */
	rc = reshape_csum_peek(a, m, off / 4096u, n, pk, true);
	for (unsigned i = 0; rc == 0 && i < n; i++)
		meta[i] = tag_gen_next(pk[i].cached ? tag_gen(pk[i].tag) : 0);
	free(pk);
	return rc;
}

/* How many roles of row @p row of @p l are out. */
static unsigned reshape_csum_out(struct graid_array *a, const struct layout *l, uint64_t row)
{
	unsigned out = 0;

	for (unsigned r = 0; r < l->ndata + l->nparity; r++)
		out += !array_role_alive(a, layout_role_member(l, row, r));
	return out;
}

/*
 * Review finding 3: a RAID-6 old row @p row of @p l with two roles out (its lock held), which
 * the column judgements (lost_write_column.c) leave unjudged. Per 4 KiB column, from the
 * records left (docs/RESHAPE.md, "Checksums across a grow"):
 * - a data role and a parity out: the other parity's S implies the missing block's
 *   generation and its W must then be the data's; a mismatch is a stale block (or parity)
 *   that nothing can place nor rebuild: the column set in @p bad;
 * - two data roles out: S and W give their two generations whatever they are; only P's and Q's
 *   records checked against each other (a stale parity would rebuild both wrong): differing,
 *   set in @p bad;
 * - both parities out: no record; nothing checked.
 * A column with an absent tag on a role in is not judged (an absent tag says nothing of its
 * generation, as lwc_judge() rules), nor a row still to resync (a torn write, not a lost
 * one). @p report: each column set reported (checksum-lost-write, member -1, -EIO).
 * 0, or the -errno of a tag block that cannot be read (never taken for absent tags).
 */
static int reshape_csum_two_out(struct graid_array *a, const struct layout *l, uint64_t row,
				struct bbl_cols *bad, bool report)
{
	const unsigned per = reshape_csum_words(l), k = l->ndata, nroles = k + l->nparity;
	const uint64_t block0 = row * l->chunk / 4096u;
	struct tag_peek *pk;
	bool in[GRAID_MAX_MEMBERS];
	unsigned dout = 0, gone = 0, pin = 0, npin = 0;
	int rc = 0;

	if (bitmap_unresynced(a, row))
		return 0;
	for (unsigned r = 0; r < nroles; r++) {
		in[r] = array_role_alive(a, layout_role_member(l, row, r));
		if (!in[r] && r < k) {
			dout++;
			gone = r;
		} else if (in[r] && r >= k) {
			pin = r - k;
			npin++;
		}
	}
	if (npin == 0)
		return 0; /* both parities out: no record to check */
	pk = calloc((size_t)nroles * per, sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	for (unsigned r = 0; rc == 0 && r < nroles; r++)
		if (in[r])
			rc = reshape_csum_peek(a, layout_role_member(l, row, r), block0, per,
					       pk + (size_t)r * per, false);
	for (unsigned c = 0; rc == 0 && c < per; c++) {
		uint32_t g[GRAID_MAX_MEMBERS] = { 0 };
		struct tag_rec rec[2] = { { 0, 0 }, { 0, 0 } }, r;
		bool absent = false, mismatch;

		for (unsigned x = 0; x < nroles; x++) {
			tag_t t = pk[(size_t)x * per + c].tag;

			if (!in[x])
				continue;
			absent |= !tag_valid(t);
			if (x < k)
				g[x] = tag_gen(t);
			else
				rec[x - k] = tag_rec_of_tag(t);
		}
		if (absent)
			continue;
		if (dout == 2) {
			mismatch = !tag_rec_eq(rec[0], rec[1]);
		} else {
			/* The missing block's generation as the parity left implies it. */
			r = rec[pin];
			for (unsigned d = 0; d < k; d++)
				if (d != gone)
					tag_rec_sub(&r, 0, g[d]);
			g[gone] = r.s;
			mismatch = !tag_rec_eq(tag_rec_make(g, k), rec[pin]);
		}
		if (mismatch && report)
			csum_report_lost_write(a, -1, block0 + c, 1, -EIO);
		if (mismatch)
			bbl_cols_set(bad, c);
	}
	free(pk);
	if (rc)
		graid__log(GRAID_LOG_ERR,
			   "reshape: the tags of old row %" PRIu64 " cannot be read: %s; stopped",
			   row, graid_strerror(rc));
	return rc;
}

/*
 * Whether the tags of every role in of old row @p row of @p l can be read (finding 2: the
 * column judgements pass over a row whose tags cannot be loaded, which the job must not:
 * it would move a stale block under a fresh tag unjudged). 0 or the first -errno, logged.
 */
static int reshape_csum_row_loadable(struct graid_array *a, const struct layout *l,
				     uint64_t row)
{
	const unsigned per = reshape_csum_words(l);
	struct tag_peek *pk = calloc(per, sizeof(*pk));
	int rc = pk ? 0 : -ENOMEM;

	for (unsigned r = 0; rc == 0 && r < l->ndata + l->nparity; r++) {
		unsigned m = layout_role_member(l, row, r);

		if (array_role_alive(a, m))
			rc = reshape_csum_peek(a, m, row * l->chunk / 4096u, per, pk, false);
	}
	free(pk);
	if (rc)
		graid__log(GRAID_LOG_ERR,
			   "reshape: the tags of old row %" PRIu64 " cannot be read: %s; stopped",
			   row, graid_strerror(rc));
	return rc;
}

bool reshape_csum_row_suspect(struct graid_array *a, uint64_t row)
{
	const struct layout *l = &a->lay; /* the old geometry until the finish */
	struct bbl_cols bad = { { 0 } };

	if (!a->tags || !a->csum_gens)
		return false;
	if (l->nparity == 2 && reshape_csum_out(a, l, row) == 2) {
		/* Unreadable tags: suspect; reshape_csum_judge_old() then stops the job. */
		if (reshape_csum_two_out(a, l, row, &bad, false))
			return true;
		for (unsigned w = 0; w < BBL_COLS_WORDS; w++)
			if (bad.w[w])
				return true;
		return false;
	}
	/* Unreadable tags: suspect; reshape_csum_judge_old() then stops the job. */
	return reshape_csum_row_loadable(a, l, row) != 0 || lwc_rebuild_suspect(a, row);
}

/* A located stale block rebuilt in the job's buffer: its write is the move itself. */
static int reshape_csum_moved(void *arg, uint64_t row, unsigned role, unsigned col,
			      uint8_t *buf)
{
	(void)arg;
	(void)row;
	(void)role;
	(void)col;
	(void)buf;
	return 0;
}

int reshape_csum_judge_old(struct graid_array *a, const struct layout *l, uint64_t row,
			   uint8_t **blk, struct bbl_cols *era, struct bbl_cols *lost_cols)
{
	const struct lwc_scrub_io io = { .write_col = reshape_csum_moved };
	struct lwc_scrub_cols sc;
	unsigned out = 0;
	bool unlocated = false;
	uint64_t healed = 0;
	int rc = 0;

	if (!a->tags || !a->csum_gens)
		return 0;
	memset(&sc, 0, sizeof(sc));
	out = reshape_csum_out(a, l, row);
	/* Tags that cannot be read: nothing judged, nothing moved (the job stops). */
	if (out < 2 && (rc = reshape_csum_row_loadable(a, l, row)) != 0)
		return rc;
	if (out == 0)
		lwc_scrub_erasures(a, row, blk, era, &sc);
	else if (out == 1)
		lwc_rebuild_erasures(a, row, blk, era, &sc);
	/*
	 * RAID-6 with two out: a mismatch moves the column as a loss (nothing rebuilds it),
	 * reported once for the row, not once per data chunk recovered from it (finding 4 of
	 * the switch-on's review: the job's thread only calls this).
	 */
	else if (out == 2 && l->nparity == 2) {
		struct reshape_job *j = a->reshape_job;
		bool report = !j || j->csum_reported_row != row + 1;

		rc = reshape_csum_two_out(a, l, row, &sc.lost, report);
		if (rc == 0 && j)
			j->csum_reported_row = row + 1;
	}
	for (unsigned w = 0; w < BBL_COLS_WORDS; w++)
		lost_cols->w[w] |= sc.lost.w[w];
	/* Columns without an erasure: a located stale block rebuilt in blk (every role in). */
	if (out == 0)
		rc = lwc_scrub_row(a, &io, row, blk, &sc.added, &unlocated, &healed);
	if (rc == 0 && unlocated)
		for (unsigned c = 0; c < l->chunk / BBL_UNIT; c++)
			bbl_cols_set(lost_cols, c);
	return rc;
}

int reshape_csum_pio(struct graid_array *a, unsigned m, bool write, void *buf, size_t len,
		     uint64_t off, const uint32_t *meta, struct member_io_fault *mf)
{
	int rc;

	memset(mf, 0, sizeof(*mf));
	mf->fd = a->members[m].dev.fd;
	if (!a->tags)
		return member_data_pio(a, &a->members[m], write, false, buf, len, off);
	/* As the ring's prep: the transfer kept, a write's tags pending (mio_keep). */
	mf->meta_in = meta;
	rc = member_io_now_begin(a, m, write, buf, (unsigned)len, NULL, 0, off, mf);
	if (rc)
		return rc;
	rc = member_data_pio(a, &a->members[m], write, false, buf, len, off);
	/* As the ring's completion: a write's tags kept or dropped, a read verified. */
	rc = member_io_done(a, m, write, (uint32_t)len, mf, rc ? rc : (int)len);
	if (rc == -EBADMSG && csum_report_unresynced(a, m, mf, (uint32_t)len))
		rc = (int)len;
	if (rc == (int)len && write)
		csum_report_written(a, m, mf, (uint32_t)len);
	return rc == (int)len ? 0 : rc < 0 ? rc : -EIO;
}
