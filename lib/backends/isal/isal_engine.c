/* SPDX-License-Identifier: MIT */
/* The "isal" engine: ISA-L's xor/pq routines and erasure coder, with their alignment rules kept inside. */
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isa-l/erasure_code.h>
#include <isa-l/raid.h>

#include <libgraid/graid_backend.h>

/* ISA-L's vector routines want 32-byte aligned pointers and lengths. */
#define ISAL_ALIGN 32u
/* ISA-L takes int lengths: longer blocks go through in pieces of this many bytes. */
#define ISAL_PIECE (1u << 30)
#define ISAL_MAX_BLOCKS (GRAID_GF_MAX_DATA + 2)

/* The engine has no state; one static object so the handle is never NULL. */
struct graid_engine {
	void (*log)(int level, const char *fmt, ...);
	atomic_bool told_unaligned;
};

static struct graid_engine isal_engine;

static int isal_probe(struct graid_backend_info *info)
{
	snprintf(info->device, sizeof(info->device), "CPU, ISA-L %s", "xor/pq/erasure-code");
	info->flags = GRAID_BACKEND_F_HOST_MEMORY;
	return 0;
}

static int isal_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	isal_engine.log = cfg->log;
	*out = &isal_engine;
	return 0;
}

static void isal_close(struct graid_engine *e)
{
	(void)e;
}

/*
 * Split [0, len) of a stripe into a head and tail done byte-wise and a 32-byte aligned body
 * for ISA-L. Returns false when the blocks are not equally misaligned, so no common body
 * exists; the caller then does the whole stripe byte-wise.
 */
static bool isal_split(uint8_t *const *blk, unsigned nblk, size_t len, size_t align,
		       size_t *head, size_t *body)
{
	uintptr_t mis = (uintptr_t)blk[0] & (align - 1);

	for (unsigned i = 1; i < nblk; i++)
		if (((uintptr_t)blk[i] & (align - 1)) != mis)
			return false;
	*head = (align - mis) & (align - 1);
	if (*head > len)
		*head = len;
	*body = (len - *head) & ~(size_t)(align - 1);
	return true;
}

static void isal_note_unaligned(struct graid_engine *e)
{
	if (!atomic_exchange(&e->told_unaligned, true))
		e->log(GRAID_LOG_INFO, "isal: blocks of unequal alignment are done byte-wise "
				       "(slow path); align blocks to 32 bytes for speed");
}

static int isal_gen_body(unsigned ndata, unsigned nparity, size_t off, size_t n,
			 uint8_t *const *blk)
{
	void *v[ISAL_MAX_BLOCKS];
	unsigned nblk = ndata + nparity;

	for (size_t done = 0; done < n;) {
		int piece = (int)(n - done < ISAL_PIECE ? n - done : ISAL_PIECE);

		for (unsigned i = 0; i < nblk; i++)
			v[i] = blk[i] + off + done;
		if (nparity == 1 ? xor_gen((int)nblk, piece, v) : pq_gen((int)nblk, piece, v))
			return -EIO;
		done += (size_t)piece;
	}
	return 0;
}

static int isal_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	const unsigned nblk = b->ndata + b->nparity;
	size_t head, body;

	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;

		if (b->ndata == 1) {
			/* P = D and Q = g^0 * D = D; ISA-L wants at least two sources. */
			for (unsigned p = 1; p < nblk; p++)
				memmove(blk[p], blk[0], b->len);
			continue;
		}
		if (!isal_split(blk, nblk, b->len, ISAL_ALIGN, &head, &body)) {
			isal_note_unaligned(e);
			graid_gf_ref_gen(b->ndata, b->nparity, 0, b->len, blk);
			continue;
		}
		graid_gf_ref_gen(b->ndata, b->nparity, 0, head, blk);
		if (body && isal_gen_body(b->ndata, b->nparity, head, body, blk)) {
			e->log(GRAID_LOG_ERR, "isal: %s refused %u blocks of %zu bytes",
			       b->nparity == 1 ? "xor_gen" : "pq_gen", nblk, body);
			return -EIO;
		}
		graid_gf_ref_gen(b->ndata, b->nparity, head + body, b->len - head - body, blk);
	}
	return 0;
}

/* Row r of the generator matrix: identity for data, all ones for P, g^k for Q. */
static unsigned char isal_gen_coef(unsigned ndata, unsigned r, unsigned k)
{
	if (r < ndata)
		return r == k;
	return r == ndata ? 1 : graid_gf_exp2(k);
}

/*
 * Every lost block is a linear combination of any ndata surviving blocks: invert the
 * survivors' generator rows once per batch, and let ec_encode_data apply the lost rows of
 * (generator x inverse) to each stripe. One path covers every recovery case.
 */
static int isal_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	const unsigned k = b->ndata, nblk = b->ndata + b->nparity;
	unsigned surv[ISAL_MAX_BLOCKS], nsurv = 0;
	unsigned char *mat, *inv, *coef, *tbls;
	unsigned char *src[ISAL_MAX_BLOCKS], *dst[2];
	int rc = 0;

	for (unsigned i = 0; i < nblk && nsurv < k; i++)
		if (!(b->nlost > 0 && b->lost[0] == i) && !(b->nlost > 1 && b->lost[1] == i))
			surv[nsurv++] = i;
	mat = malloc((size_t)k * k * 2 + (size_t)b->nlost * k + (size_t)32 * k * b->nlost);
	if (!mat)
		return -ENOMEM;
	inv = mat + (size_t)k * k;
	coef = inv + (size_t)k * k;
	tbls = coef + (size_t)b->nlost * k;
	for (unsigned i = 0; i < k; i++)
		for (unsigned j = 0; j < k; j++)
			mat[i * k + j] = isal_gen_coef(k, surv[i], j);
	if (gf_invert_matrix(mat, inv, (int)k)) {
		/* Cannot happen for a valid RAID-6 loss pattern: the code is MDS. */
		e->log(GRAID_LOG_ERR, "isal: gf_invert_matrix failed for %u data blocks", k);
		free(mat);
		return -EIO;
	}
	for (unsigned l = 0; l < b->nlost; l++)
		for (unsigned j = 0; j < k; j++) {
			unsigned char c = 0;

			for (unsigned i = 0; i < k; i++)
				c ^= graid_gf_mul(isal_gen_coef(k, b->lost[l], i), inv[i * k + j]);
			coef[l * k + j] = c;
		}
	ec_init_tables((int)k, (int)b->nlost, coef, tbls);
	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;

		for (size_t done = 0; done < b->len;) {
			int piece = (int)(b->len - done < ISAL_PIECE ? b->len - done : ISAL_PIECE);

			for (unsigned i = 0; i < k; i++)
				src[i] = blk[surv[i]] + done;
			for (unsigned l = 0; l < b->nlost; l++)
				dst[l] = blk[b->lost[l]] + done;
			ec_encode_data(piece, (int)k, (int)b->nlost, tbls, src, dst);
			done += (size_t)piece;
		}
	}
	free(mat);
	return rc;
}

/* True when bytes [off, off+n) of the stripe are consistent, by ISA-L's check routines. */
static bool isal_body_clean(unsigned ndata, unsigned nparity, size_t off, size_t n,
			    uint8_t *const *blk)
{
	void *v[ISAL_MAX_BLOCKS];

	for (size_t done = 0; done < n;) {
		int piece = (int)(n - done < ISAL_PIECE ? n - done : ISAL_PIECE);

		for (unsigned i = 0; i < ndata + nparity; i++)
			v[i] = blk[i] + off + done;
		if (nparity == 1 ? xor_check((int)(ndata + 1), piece, v)
				 : pq_check((int)(ndata + 2), piece, v))
			return false;
		done += (size_t)piece;
	}
	return true;
}

static bool isal_range_clean(unsigned ndata, unsigned nparity, size_t off, size_t n,
			     uint8_t *const *blk)
{
	unsigned char *v[ISAL_MAX_BLOCKS];

	if (n == 0)
		return true;
	for (unsigned i = 0; i < ndata + nparity; i++)
		v[i] = blk[i] + off;
	return graid_gf_ref_check(ndata, nparity, n, v) == GRAID_CHECK_CLEAN;
}

/*
 * The common case (clean) runs at ISA-L's speed; any mismatch is re-examined byte-wise by
 * the reference, which alone can name the wrong block: the rare path is the obvious one.
 */
static long isal_check(struct graid_engine *e, const struct graid_stripe_batch *b,
		       int32_t *result)
{
	const unsigned nblk = b->ndata + b->nparity;
	size_t head, body;
	long bad = 0;

	(void)e;
	for (size_t s = 0; s < b->nstripes; s++) {
		uint8_t *const *blk = b->blocks + s * nblk;
		int v = GRAID_CHECK_CLEAN;
		bool fast = b->ndata >= 2 &&
			    isal_split(blk, nblk, b->len, ISAL_ALIGN, &head, &body) && body;

		if (!fast || !isal_body_clean(b->ndata, b->nparity, head, body, blk) ||
		    !isal_range_clean(b->ndata, b->nparity, 0, head, blk) ||
		    !isal_range_clean(b->ndata, b->nparity, head + body,
				      b->len - head - body, blk))
			v = graid_gf_ref_check(b->ndata, b->nparity, b->len, blk);
		if (result)
			result[s] = v;
		bad += v != GRAID_CHECK_CLEAN;
	}
	return bad;
}

static const struct graid_backend_ops isal_ops = {
	GRAID_BACKEND_OPS_HEADER,
	.name = "isal",
	.description = "CPU engine on ISA-L (SIMD xor/pq, erasure-code recovery)",
	.probe = isal_probe,
	.open = isal_open,
	.close = isal_close,
	.gen = isal_gen,
	.recover = isal_recover,
	.check = isal_check,
};

/* Declared in lib/core/internal.h: the isal engine is built into the core library. */
const struct graid_backend_ops *graid__isal_ops(void);

const struct graid_backend_ops *graid__isal_ops(void)
{
	return &isal_ops;
}
