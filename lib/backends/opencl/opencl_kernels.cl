/* SPDX-License-Identifier: MIT */
/* OpenCL C kernels of the OpenCL engine: parity generation, recovery and check over a batch. */

/*
 * graid_gf.h tells OpenCL C apart by __OPENCL_VERSION__, which OpenCL runtimes define; a
 * bare clang (as in an offline syntax check of this file) defines only the C version.
 */
#if !defined(__OPENCL_VERSION__) && defined(__OPENCL_C_VERSION__)
#define __OPENCL_VERSION__ __OPENCL_C_VERSION__
#endif

/*
 * The build replaces this one #include with the text of the header (embed_cl.py), so the
 * program built at run time includes nothing and computes from the same GF(2^8)
 * definitions as every other engine.
 */
#include <libgraid/graid_gf.h>

/*
 * Addressing. Every launch covers a whole batch piece as a 2-D range: dimension 0 walks
 * the bytes of a block in steps of GRAID_CL_VPI uchar16 vectors, dimension 1 the stripes.
 * Blocks live in up to GRAID_CL_NREG buffers ("regions"): caller memory used in place,
 * or the engine's staging buffer. tab[] holds one entry per block, stripe after stripe:
 * the region index in the top byte, the byte offset in that region below it.
 */
#ifndef GRAID_CL_VPI
#define GRAID_CL_VPI 4
#endif
#define GRAID_CL_NREG 16
#define GRAID_CL_REG_SHIFT 56
#define GRAID_CL_OFF_MASK 0x00ffffffffffffffUL

/* Recovery modes; the host (opencl_engine.c) keeps the same numbers. */
#define GRAID_CL_MODE_D 0   /* one data block, from P */
#define GRAID_CL_MODE_P 1   /* P alone (also: generate P) */
#define GRAID_CL_MODE_Q 2   /* Q alone */
#define GRAID_CL_MODE_PQ 3  /* P and Q (also: generate P and Q) */
#define GRAID_CL_MODE_DP 4  /* data x and P: x from Q */
#define GRAID_CL_MODE_DQ 5  /* data x and Q: x from P */
#define GRAID_CL_MODE_DD 6  /* data x and y, from P and Q */

/* Check flags, OR-ed per stripe into res[3 * stripe]. */
#define GRAID_CL_BAD_P 1u     /* a byte where only P disagrees */
#define GRAID_CL_BAD_Q 2u     /* a byte where only Q disagrees */
#define GRAID_CL_BAD_DATA 4u  /* a byte where both disagree (one data block wrong) */
#define GRAID_CL_BAD_ANY 8u   /* RAID-5: P disagrees */

__constant uchar graid_cl_log[256] = GRAID_GF_LOG_INIT;

typedef uchar16 graid_v16;

/*
 * Helpers are called with literal flags (whole vectors or a tail, with or without Q) and
 * only pay off once inlined and specialised; left to itself, LLVM calls them instead.
 */
#define GRAID_CL_INLINE static inline __attribute__((always_inline))

/*
 * Blocks have no alignment guarantee. A packed struct is OpenCL C's defined way to load
 * a vector from any address, and PoCL turns it into one unaligned vector load, where its
 * vload16/vstore16 on an unknown alignment became byte-by-byte stores.
 */
typedef struct __attribute__((packed)) {
	graid_v16 v;
} graid_cl_u16;

#define GRAID_CL_REGION_PARAMS                                                            \
	__global uchar *r0, __global uchar *r1, __global uchar *r2, __global uchar *r3,  \
	__global uchar *r4, __global uchar *r5, __global uchar *r6, __global uchar *r7,  \
	__global uchar *r8, __global uchar *r9, __global uchar *r10, __global uchar *r11, \
	__global uchar *r12, __global uchar *r13, __global uchar *r14, __global uchar *r15
#define GRAID_CL_REGION_ARGS r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15

/*
 * A region's base from its index. A private array of the 16 pointers would be indexed
 * through the stack on every block; a tree of selects stays in registers.
 */
GRAID_CL_INLINE __global uchar *graid_cl_pick(GRAID_CL_REGION_PARAMS, uint r)
{
	__global uchar *lo = (r & 4) ? ((r & 2) ? ((r & 1) ? r7 : r6) : ((r & 1) ? r5 : r4))
				     : ((r & 2) ? ((r & 1) ? r3 : r2) : ((r & 1) ? r1 : r0));
	__global uchar *hi = (r & 4) ? ((r & 2) ? ((r & 1) ? r15 : r14) : ((r & 1) ? r13 : r12))
				     : ((r & 2) ? ((r & 1) ? r11 : r10) : ((r & 1) ? r9 : r8));

	return (r & 8) ? hi : lo;
}

/* Block j of the stripe whose first table entry is b0, at this work-item's offset. */
#define GRAID_CL_BLOCK(j)                                                                 \
	(graid_cl_pick(GRAID_CL_REGION_ARGS, (uint)(tab[b0 + (j)] >> GRAID_CL_REG_SHIFT)) + \
	 (tab[b0 + (j)] & GRAID_CL_OFF_MASK) + off)

/* Multiply 16 field elements by g = 2: the sign bit selects the reduction. */
GRAID_CL_INLINE graid_v16 graid_cl_mul2(graid_v16 a)
{
	graid_v16 hi = as_uchar16(as_char16(a) >> (char16)7);

	return (a << (uchar16)1) ^ (hi & (uchar16)GRAID_GF_POLY_LOW);
}

/*
 * Multiply 16 elements by one constant: 8 shift-and-add steps with the constant's bits
 * as masks, so the loop unrolls into straight vector code (recovery's closing step).
 */
GRAID_CL_INLINE graid_v16 graid_cl_mulc(graid_v16 a, uint c)
{
	graid_v16 r = (graid_v16)0;

#pragma unroll
	for (int i = 0; i < 8; i++) {
		r ^= a & (graid_v16)(uchar)(0u - ((c >> i) & 1u));
		a = graid_cl_mul2(a);
	}
	return r;
}

/*
 * Load or store vector v of a block at p. With full set all 16 bytes are there; at the
 * end of a block only n (0..16) are, and bytes past the block read as zero, which keeps
 * every syndrome of the padding at zero.
 */
GRAID_CL_INLINE graid_v16 graid_cl_load(__global const uchar *p, int v, uint n, int full)
{
	uchar t[16];

	if (full)
		return ((__global const graid_cl_u16 *)(p + 16 * v))->v;
	for (uint i = 0; i < 16; i++)
		t[i] = i < n ? p[16 * v + i] : 0;
	return vload16(0, t);
}

GRAID_CL_INLINE void graid_cl_store(graid_v16 x, __global uchar *p, int v, uint n, int full)
{
	uchar t[16];

	if (full) {
		((__global graid_cl_u16 *)(p + 16 * v))->v = x;
		return;
	}
	vstore16(x, 0, t);
	for (uint i = 0; i < n; i++)
		p[16 * v + i] = t[i];
}

/* Valid bytes of each vector of this work-item; all 16 except at the end of a block. */
GRAID_CL_INLINE void graid_cl_lanes(ulong off, ulong len, uint *n)
{
	for (int v = 0; v < GRAID_CL_VPI; v++) {
		ulong o = off + 16u * (ulong)v;

		n[v] = o >= len ? 0u : (len - o >= 16u ? 16u : (uint)(len - o));
	}
}

/*
 * Partial syndromes over the data blocks of a stripe, skipping (if skip) the lost ones x
 * and y (ndata or more: none): p = XOR of D_k, q = sum of g^k D_k by Horner's rule from
 * the last block down. skip, full and want_q are literals at every call, so each call
 * compiles to its own straight loop: no tail tests on whole vectors, a plain XOR for P.
 */
GRAID_CL_INLINE void graid_cl_syndromes(GRAID_CL_REGION_PARAMS, __global const ulong *tab,
				      size_t b0, ulong off, uint ndata, int skip, uint x, uint y,
				      const uint *n, int full, int want_q, graid_v16 *p,
				      graid_v16 *q)
{
#pragma unroll
	for (int v = 0; v < GRAID_CL_VPI; v++) {
		p[v] = (graid_v16)0;
		q[v] = (graid_v16)0;
	}
	for (uint k = ndata; k-- > 0;) {
		if (skip && (k == x || k == y)) {
			if (want_q) {
#pragma unroll
				for (int v = 0; v < GRAID_CL_VPI; v++)
					q[v] = graid_cl_mul2(q[v]);
			}
			continue;
		}
		__global const uchar *d = GRAID_CL_BLOCK(k);

#pragma unroll
		for (int v = 0; v < GRAID_CL_VPI; v++) {
			graid_v16 a = graid_cl_load(d, v, n[v], full);

			p[v] ^= a;
			if (want_q)
				q[v] = graid_cl_mul2(q[v]) ^ a;
		}
	}
}

/* Vector v of a block, and a loop over this work-item's vectors, in the helpers below. */
#define GRAID_CL_LD(blk, v) graid_cl_load(blk, v, n[v], full)
#define GRAID_CL_ST(x, blk, v) graid_cl_store((x), blk, v, n[v], full)
#define GRAID_CL_EACH_V _Pragma("unroll") for (int v = 0; v < GRAID_CL_VPI; v++)

/*
 * Every recovery in one body: partial syndromes over the surviving data, then the case's
 * few closing operations. ca and cb are the case's GF constants, computed once on the
 * host.
 */
GRAID_CL_INLINE void graid_cl_rebuild(GRAID_CL_REGION_PARAMS, __global const ulong *tab,
				    size_t b0, ulong off, uint ndata, uint mode, uint x, uint y,
				    uint ca, uint cb, const uint *n, int full)
{
	graid_v16 p[GRAID_CL_VPI], q[GRAID_CL_VPI];
	int want_q = mode != GRAID_CL_MODE_D && mode != GRAID_CL_MODE_P;
	/* Only the modes that want Q have one (nparity 2); elsewhere point anywhere valid. */
	__global uchar *P = GRAID_CL_BLOCK(ndata);
	__global uchar *Q = GRAID_CL_BLOCK(want_q ? ndata + 1 : ndata);
	__global uchar *X = GRAID_CL_BLOCK(x < ndata ? x : 0);
	__global uchar *Y = GRAID_CL_BLOCK(y < ndata ? y : 0);

	if (want_q)
		graid_cl_syndromes(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, 1, x, y, n, full, 1,
				   p, q);
	else
		graid_cl_syndromes(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, 1, x, y, n, full, 0,
				   p, q);

	/* One switch outside the vector loops, so that each case is straight code. */
	switch (mode) {
	case GRAID_CL_MODE_D:
		GRAID_CL_EACH_V GRAID_CL_ST(p[v] ^ GRAID_CL_LD(P, v), X, v);
		break;
	case GRAID_CL_MODE_P:
		GRAID_CL_EACH_V GRAID_CL_ST(p[v], P, v);
		break;
	case GRAID_CL_MODE_Q:
		GRAID_CL_EACH_V GRAID_CL_ST(q[v], Q, v);
		break;
	case GRAID_CL_MODE_PQ:
		GRAID_CL_EACH_V {
			GRAID_CL_ST(p[v], P, v);
			GRAID_CL_ST(q[v], Q, v);
		}
		break;
	case GRAID_CL_MODE_DP:
		/* Q ^ q' = g^x D_x, so D_x = (Q ^ q') * g^-x (ca); then P as usual. */
		GRAID_CL_EACH_V {
			graid_v16 d = graid_cl_mulc(q[v] ^ GRAID_CL_LD(Q, v), ca);

			GRAID_CL_ST(d, X, v);
			GRAID_CL_ST(p[v] ^ d, P, v);
		}
		break;
	case GRAID_CL_MODE_DQ:
		/* D_x from P, then Q = q' ^ g^x D_x (ca = g^x). */
		GRAID_CL_EACH_V {
			graid_v16 d = p[v] ^ GRAID_CL_LD(P, v);

			GRAID_CL_ST(d, X, v);
			GRAID_CL_ST(q[v] ^ graid_cl_mulc(d, ca), Q, v);
		}
		break;
	default:
		/* MODE_DD: D_x = ca Pxy ^ cb Qxy (graid_gf_two_data_coef), D_y = Pxy ^ D_x. */
		GRAID_CL_EACH_V {
			graid_v16 pxy = p[v] ^ GRAID_CL_LD(P, v);
			graid_v16 qxy = q[v] ^ GRAID_CL_LD(Q, v);
			graid_v16 d = graid_cl_mulc(pxy, ca) ^ graid_cl_mulc(qxy, cb);

			GRAID_CL_ST(d, X, v);
			GRAID_CL_ST(pxy ^ d, Y, v);
		}
		break;
	}
}

/* Generation: the hot path of every write, so it gets a kernel of its own. */
GRAID_CL_INLINE void graid_cl_generate(GRAID_CL_REGION_PARAMS, __global const ulong *tab,
				     size_t b0, ulong off, uint ndata, const uint *n, int full,
				     int want_q)
{
	graid_v16 p[GRAID_CL_VPI], q[GRAID_CL_VPI];
	__global uchar *P = GRAID_CL_BLOCK(ndata);
	__global uchar *Q = GRAID_CL_BLOCK(want_q ? ndata + 1 : ndata);

	graid_cl_syndromes(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, 0, 0, 0, n, full, want_q,
			   p, q);
	GRAID_CL_EACH_V {
		GRAID_CL_ST(p[v], P, v);
		if (want_q)
			GRAID_CL_ST(q[v], Q, v);
	}
}

/* P (and Q) of every stripe of a piece; nblk is blocks per stripe in tab. */
__kernel void graid_cl_gen(GRAID_CL_REGION_PARAMS, __global const ulong *tab, ulong len,
			   uint ndata, uint nblk, uint nparity)
{
	ulong off = (ulong)get_global_id(0) * (16u * GRAID_CL_VPI);
	size_t b0 = get_global_id(1) * (size_t)nblk;
	uint n[GRAID_CL_VPI];

	if (off >= len)
		return;
	graid_cl_lanes(off, len, n);
	if (off + 16u * GRAID_CL_VPI <= len) {
		if (nparity == 2)
			graid_cl_generate(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, n, 1, 1);
		else
			graid_cl_generate(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, n, 1, 0);
	} else {
		if (nparity == 2)
			graid_cl_generate(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, n, 0, 1);
		else
			graid_cl_generate(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, n, 0, 0);
	}
}

/*
 * Recover lost blocks for every stripe of a piece. nblk is blocks per stripe in tab
 * (ndata + nparity); x and y are the lost data blocks (ndata or more: none).
 */
__kernel void graid_cl_recover(GRAID_CL_REGION_PARAMS, __global const ulong *tab, ulong len,
			       uint ndata, uint nblk, uint mode, uint x, uint y, uint ca,
			       uint cb)
{
	ulong off = (ulong)get_global_id(0) * (16u * GRAID_CL_VPI);
	size_t b0 = get_global_id(1) * (size_t)nblk;
	uint n[GRAID_CL_VPI];

	if (off >= len)
		return;
	graid_cl_lanes(off, len, n);
	if (off + 16u * GRAID_CL_VPI <= len)
		graid_cl_rebuild(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, mode, x, y, ca, cb, n,
				 1);
	else
		graid_cl_rebuild(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, mode, x, y, ca, cb, n,
				 0);
}

/*
 * Classify the syndrome bytes sp = P ^ p', sq = Q ^ q' of one vector. Runs only where
 * some byte disagrees, so the per-byte log lookups cost nothing on clean stripes.
 */
GRAID_CL_INLINE void graid_cl_classify(graid_v16 sp, graid_v16 sq, uint nparity, uint *flags,
				     uint *zmax1, uint *zmin2)
{
	uchar a[16], b[16];

	vstore16(sp, 0, a);
	vstore16(sq, 0, b);
	for (int i = 0; i < 16; i++) {
		if (nparity == 1) {
			if (a[i])
				*flags |= GRAID_CL_BAD_ANY;
		} else if (a[i] && b[i]) {
			/* One data block z wrong by e: sp = e, sq = g^z e. */
			uint z = ((uint)graid_cl_log[b[i]] + 255u - graid_cl_log[a[i]]) % 255u;

			*flags |= GRAID_CL_BAD_DATA;
			*zmax1 = max(*zmax1, z + 1u);
			*zmin2 = max(*zmin2, 256u - z);
		} else if (a[i]) {
			*flags |= GRAID_CL_BAD_P;
		} else if (b[i]) {
			*flags |= GRAID_CL_BAD_Q;
		}
	}
}

GRAID_CL_INLINE void graid_cl_verify(GRAID_CL_REGION_PARAMS, __global const ulong *tab,
				   size_t b0, ulong off, uint ndata, uint nparity, const uint *n,
				   int full, int want_q, uint *flags, uint *zmax1, uint *zmin2)
{
	graid_v16 p[GRAID_CL_VPI], q[GRAID_CL_VPI];
	__global uchar *P = GRAID_CL_BLOCK(ndata);
	__global uchar *Q = GRAID_CL_BLOCK(want_q ? ndata + 1 : ndata);

	graid_cl_syndromes(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, 0, 0, 0, n, full, want_q,
			   p, q);
#pragma unroll
	for (int v = 0; v < GRAID_CL_VPI; v++) {
		graid_v16 sp = p[v] ^ GRAID_CL_LD(P, v);
		graid_v16 sq = want_q ? q[v] ^ GRAID_CL_LD(Q, v) : (graid_v16)0;

		if (any(as_char16(sp | sq) != (char16)0))
			graid_cl_classify(sp, sq, nparity, flags, zmax1, zmin2);
	}
}

/*
 * Check every stripe of a piece. res[] holds three words per stripe, zeroed by the host:
 * OR of GRAID_CL_BAD_* flags, max(z + 1) and max(256 - z) over the bytes that name a
 * data block z. Work-items touch res only where they find a mismatch.
 */
__kernel void graid_cl_check(GRAID_CL_REGION_PARAMS, __global const ulong *tab, ulong len,
			     uint ndata, uint nblk, uint nparity, __global uint *res)
{
	ulong off = (ulong)get_global_id(0) * (16u * GRAID_CL_VPI);
	size_t s = get_global_id(1);
	size_t b0 = s * (size_t)nblk;
	uint n[GRAID_CL_VPI];
	uint flags = 0, zmax1 = 0, zmin2 = 0;

	if (off >= len)
		return;
	graid_cl_lanes(off, len, n);
	if (off + 16u * GRAID_CL_VPI <= len) {
		if (nparity == 2)
			graid_cl_verify(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, nparity, n, 1, 1,
					&flags, &zmax1, &zmin2);
		else
			graid_cl_verify(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, nparity, n, 1, 0,
					&flags, &zmax1, &zmin2);
	} else {
		if (nparity == 2)
			graid_cl_verify(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, nparity, n, 0, 1,
					&flags, &zmax1, &zmin2);
		else
			graid_cl_verify(GRAID_CL_REGION_ARGS, tab, b0, off, ndata, nparity, n, 0, 0,
					&flags, &zmax1, &zmin2);
	}
	if (flags) {
		atomic_or(&res[3 * s], flags);
		if (zmax1) {
			atomic_max(&res[3 * s + 1], zmax1);
			atomic_max(&res[3 * s + 2], zmin2);
		}
	}
}
