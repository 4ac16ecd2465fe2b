/* SPDX-License-Identifier: MIT */
/* The parameters of one kernel launch (one piece of a batch), shared by C host code and CUDA. */
#ifndef GRAID_CUDA_KPARAMS_H
#define GRAID_CUDA_KPARAMS_H

#include <stdint.h>

#include <libgraid/graid_gf.h>

/* Bytes one thread handles per item: one 16-byte vector (a uint4 load on the device). */
#define CUDA_VEC 16u

/* Most blocks in a stripe: 255 data, P, Q. */
#define CUDA_MAX_BLOCKS (GRAID_GF_MAX_DATA + 2)

/* map[] entries: where block j of a stripe lives in a staged piece. */
#define CUDA_MAP_OUT 0x8000u  /* in the output region (else the input region) */
#define CUDA_MAP_IDX 0x7fffu  /* index of the block inside its region's stripe row */
#define CUDA_MAP_NONE 0xffffu /* not transferred: the kernel never touches it */

/* "No such data block" for lost_x / lost_y. */
#define CUDA_NO_BLOCK 0xffffu

/*
 * What one item computes. Generating parity is recovering lost parity, so gen and recover
 * share the cases; Ps/Qs below are P and Q of the surviving data blocks only.
 */
enum cuda_case {
	CUDA_CASE_P = 0,       /* P = Ps                                     */
	CUDA_CASE_Q,           /* Q = Qs                                     */
	CUDA_CASE_PQ,          /* P = Ps, Q = Qs                             */
	CUDA_CASE_D_FROM_P,    /* Dx = P ^ Ps                                */
	CUDA_CASE_D_AND_P,     /* Dx = (Q ^ Qs) * c1 (g^-x), P = Ps ^ Dx     */
	CUDA_CASE_D_AND_Q,     /* Dx = P ^ Ps, Q = Qs ^ c1 (g^x) * Dx        */
	CUDA_CASE_DD,          /* Dx = c1*(P^Ps) ^ c2*(Q^Qs), Dy = P^Ps^Dx   */
	CUDA_CASE_CHECK,       /* syndromes P^Ps, Q^Qs into acc[]            */
};

/* Classes of a check's syndrome byte pair (sp = P ^ Ps, sq = Q ^ Qs), ORed into acc[0]. */
#define CUDA_CLS_P 1u    /* sp != 0, sq == 0: P alone is off */
#define CUDA_CLS_Q 2u    /* sp == 0, sq != 0: Q alone is off */
#define CUDA_CLS_D 4u    /* both != 0: data block z = log(sq) - log(sp) is off */

/*
 * Passed by value to the kernel (a __grid_constant__ parameter, so it is read from the
 * constant bank and never copied); well under the 4 KiB parameter limit.
 */
struct cuda_kparams {
	uint32_t kcase;        /* enum cuda_case */
	uint32_t ndata;        /* data blocks per stripe, 1..255 */
	uint32_t nparity;      /* 1 or 2 */
	uint32_t nblk;         /* ndata + nparity */
	uint32_t nstripes;     /* stripes in this piece */
	uint32_t nvec;         /* vectors per block: ceil(len / CUDA_VEC) */
	uint64_t len;          /* bytes per block in this piece */
	uint32_t need_q;       /* whether Qs is needed (the Horner chain can be skipped) */
	uint32_t lost_x;       /* first lost data block, or CUDA_NO_BLOCK */
	uint32_t lost_y;       /* second lost data block, or CUDA_NO_BLOCK */
	uint8_t c1, c2;        /* GF(2^8) coefficients of the case (see enum cuda_case) */
	uint16_t nin, nout;    /* staged: blocks per stripe in the input and output regions */
	uint64_t stride;       /* staged: bytes from one block to the next, a multiple of 16 */
	uint8_t *in_base;      /* staged: device address of the input region */
	uint8_t *out_base;     /* staged: device address of the output region */
	/* mapped: nstripes * nblk device addresses of the blocks (already offset to this
	 * piece's bytes); NULL for a staged piece, which uses map[] instead. */
	uint8_t *const *table;
	/* check: three words per stripe, zero on entry: OR of byte classes, max(256 - z),
	 * max(z + 1), z being the block a syndrome byte pair points at. */
	uint32_t *acc;
	uint16_t map[CUDA_MAX_BLOCKS];
};

#endif /* GRAID_CUDA_KPARAMS_H */
