/* SPDX-License-Identifier: MIT */
/*
 * The math of one kernel item (16 bytes of one stripe), written once for the GPU and for
 * the host, so the CPU tests run exactly the code the kernel runs.
 *
 * Compiled three ways: by nvcc for the device (__CUDA_ARCH__ set: uint4 loads, atomics,
 * the log table in __constant__ memory), by nvcc's host pass, and by a plain C compiler
 * (the emulated runtime of tests/gpu). Bytes are packed four to a 32-bit word; GF(2^8)
 * arithmetic on packed words follows graid_gf.h's definitions byte for byte.
 */
#ifndef GRAID_CUDA_ITEM_H
#define GRAID_CUDA_ITEM_H

#include <stdint.h>
#include <string.h>

#include <libgraid/graid_backend.h>
#include <libgraid/graid_gf.h>

#include "cuda_kparams.h"

#if defined(__CUDACC__)
#define CUDA_HD static __host__ __device__ __forceinline__
#else
#define CUDA_HD static inline
#endif
/* Full unrolling keeps the small fixed arrays in registers on the device. */
#if defined(__CUDA_ARCH__)
#define CUDA_UNROLL _Pragma("unroll")
#else
#define CUDA_UNROLL
#endif

/*
 * log_g, for locating a wrong block from its syndromes. The device reads it from the
 * constant cache; both copies are placed from graid_gf.h's one initialiser.
 */
#if defined(__CUDACC__)
static __constant__ uint8_t cuda_gf_log_dev[256] = GRAID_GF_LOG_INIT;
#endif
static const uint8_t cuda_gf_log_host[256] = GRAID_GF_LOG_INIT;

/* Sixteen bytes as four little-endian words (byte i of the vector is byte i % 4 of w[i / 4]). */
struct cuda_v16 {
	uint32_t w[4];
};

/* graid_gf_mul2() on four bytes at once: shift each byte, reduce those whose top bit fell out. */
CUDA_HD uint32_t cuda_gf_mul2_w(uint32_t x)
{
	const uint32_t top = (x >> 7) & 0x01010101u;

	return ((x & 0x7f7f7f7fu) << 1) ^ (top * GRAID_GF_POLY_LOW);
}

/* graid_gf_mul(byte, c) on four bytes at once; c is the same for every thread, so no divergence. */
CUDA_HD uint32_t cuda_gf_mulc_w(uint32_t x, uint8_t c)
{
	uint32_t r = 0;

	CUDA_UNROLL
	for (int i = 0; i < 8; i++) {
		if (c & (1u << i))
			r ^= x;
		x = cuda_gf_mul2_w(x);
	}
	return r;
}

CUDA_HD struct cuda_v16 cuda_v16_zero(void)
{
	struct cuda_v16 v = { { 0, 0, 0, 0 } };

	return v;
}

CUDA_HD struct cuda_v16 cuda_v16_xor(struct cuda_v16 a, struct cuda_v16 b)
{
	CUDA_UNROLL
	for (int i = 0; i < 4; i++)
		a.w[i] ^= b.w[i];
	return a;
}

CUDA_HD struct cuda_v16 cuda_v16_mul2(struct cuda_v16 a)
{
	CUDA_UNROLL
	for (int i = 0; i < 4; i++)
		a.w[i] = cuda_gf_mul2_w(a.w[i]);
	return a;
}

CUDA_HD struct cuda_v16 cuda_v16_mulc(struct cuda_v16 a, uint8_t c)
{
	CUDA_UNROLL
	for (int i = 0; i < 4; i++)
		a.w[i] = cuda_gf_mulc_w(a.w[i], c);
	return a;
}

CUDA_HD int cuda_v16_nonzero(struct cuda_v16 a)
{
	return (a.w[0] | a.w[1] | a.w[2] | a.w[3]) != 0;
}

CUDA_HD uint32_t cuda_v16_byte(struct cuda_v16 a, int i)
{
	return (a.w[i >> 2] >> (8 * (i & 3))) & 0xffu;
}

/*
 * Load n (1..16) bytes. A full vector is one 16-byte load: the caller guarantees 16-byte
 * alignment then (staged pieces by construction, mapped batches by a check on the host).
 * A tail is read byte by byte and zero-padded, and zero is neutral for every case below
 * (it adds nothing to P, Q or a syndrome), so the tail needs no math of its own.
 */
CUDA_HD struct cuda_v16 cuda_v16_load(const uint8_t *p, unsigned n)
{
	struct cuda_v16 v;

	if (n == CUDA_VEC) {
#if defined(__CUDA_ARCH__)
		/* Streaming load: every byte is read once, so keep it from evicting others. */
		const uint4 u = __ldcs((const uint4 *)p);

		v.w[0] = u.x;
		v.w[1] = u.y;
		v.w[2] = u.z;
		v.w[3] = u.w;
#else
		memcpy(v.w, p, CUDA_VEC);
#endif
		return v;
	}
	v = cuda_v16_zero();
	/* Unrolled with constant indices so that v stays in registers on the device. */
	CUDA_UNROLL
	for (int i = 0; i < (int)CUDA_VEC; i++)
		if ((unsigned)i < n)
			v.w[i >> 2] |= (uint32_t)p[i] << (8 * (i & 3));
	return v;
}

/* Store n (1..16) bytes; never writes past them (mapped blocks are the caller's memory). */
CUDA_HD void cuda_v16_store(uint8_t *p, unsigned n, struct cuda_v16 v)
{
	if (n == CUDA_VEC) {
#if defined(__CUDA_ARCH__)
		__stcs((uint4 *)p, make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]));
#else
		memcpy(p, v.w, CUDA_VEC);
#endif
		return;
	}
	CUDA_UNROLL
	for (int i = 0; i < (int)CUDA_VEC; i++)
		if ((unsigned)i < n)
			p[i] = (uint8_t)cuda_v16_byte(v, i);
}

/* Block j of stripe s of the piece: a staged region slot, or the mapped pointer table. */
CUDA_HD uint8_t *cuda_blk(const struct cuda_kparams *kp, uint32_t s, uint32_t j)
{
	uint32_t m;

	if (kp->table)
		return kp->table[(uint64_t)s * kp->nblk + j];
	m = kp->map[j];
	if (m & CUDA_MAP_OUT)
		return kp->out_base + ((uint64_t)s * kp->nout + (m & CUDA_MAP_IDX)) * kp->stride;
	return kp->in_base + ((uint64_t)s * kp->nin + m) * kp->stride;
}

/* Fold one vector's syndrome classes into its stripe's accumulator (see cuda_kparams.acc). */
CUDA_HD void cuda_acc_fold(uint32_t *acc, uint32_t cls, uint32_t zlo, uint32_t zhi)
{
#if defined(__CUDA_ARCH__)
	atomicOr(&acc[0], cls);
	atomicMax(&acc[1], zlo);
	atomicMax(&acc[2], zhi);
#else
	acc[0] |= cls;
	if (acc[1] < zlo)
		acc[1] = zlo;
	if (acc[2] < zhi)
		acc[2] = zhi;
#endif
}

/*
 * Classify the 16 syndrome byte pairs of one vector and fold them into acc. Only reached
 * when a syndrome is non-zero, so a clean scrub never touches the log table or an atomic.
 */
CUDA_HD void cuda_check_fold(uint32_t *acc, struct cuda_v16 sp, struct cuda_v16 sq)
{
	uint32_t cls = 0, zlo = 0, zhi = 0;

	CUDA_UNROLL
	for (int i = 0; i < (int)CUDA_VEC; i++) {
		const uint32_t a = cuda_v16_byte(sp, i), b = cuda_v16_byte(sq, i);
		uint32_t z;

		if (!a && !b)
			continue;
		if (!b) {
			cls |= CUDA_CLS_P;
			continue;
		}
		if (!a) {
			cls |= CUDA_CLS_Q;
			continue;
		}
		cls |= CUDA_CLS_D;
#if defined(__CUDA_ARCH__)
		z = (cuda_gf_log_dev[b] + 255u - cuda_gf_log_dev[a]) % 255u;
#else
		z = (cuda_gf_log_host[b] + 255u - cuda_gf_log_host[a]) % 255u;
#endif
		/* Store z so that zero means "none" and max() gives both min and max z. */
		if (256u - z > zlo)
			zlo = 256u - z;
		if (z + 1u > zhi)
			zhi = z + 1u;
	}
	cuda_acc_fold(acc, cls, zlo, zhi);
}

/* Data block k of stripe s, or zero if it is lost (a predicated load, not a branch). */
CUDA_HD struct cuda_v16 cuda_data(const struct cuda_kparams *kp, uint32_t s, uint32_t k,
				  uint64_t off, unsigned n)
{
	if (k == kp->lost_x || k == kp->lost_y)
		return cuda_v16_zero();
	return cuda_v16_load(cuda_blk(kp, s, k) + off, n);
}

/*
 * P and Q of the data blocks of stripe s that are not lost (Ps, Qs), over n bytes at off.
 * Q by Horner's rule from the highest index down; a lost block contributes zero. Four
 * loads are issued before any is used, so each thread keeps several in flight: that is
 * what hides the latency of HBM, and more so of reads over PCIe.
 */
CUDA_HD void cuda_partial_pq(const struct cuda_kparams *kp, uint32_t s, uint64_t off,
			     unsigned n, struct cuda_v16 *ps, struct cuda_v16 *qs)
{
	struct cuda_v16 p = cuda_v16_zero(), q = cuda_v16_zero();
	uint32_t k = kp->ndata;

	for (; k >= 4; k -= 4) {
		const struct cuda_v16 d3 = cuda_data(kp, s, k - 1, off, n);
		const struct cuda_v16 d2 = cuda_data(kp, s, k - 2, off, n);
		const struct cuda_v16 d1 = cuda_data(kp, s, k - 3, off, n);
		const struct cuda_v16 d0 = cuda_data(kp, s, k - 4, off, n);

		p = cuda_v16_xor(p, cuda_v16_xor(cuda_v16_xor(d3, d2), cuda_v16_xor(d1, d0)));
		if (kp->need_q) {
			q = cuda_v16_xor(cuda_v16_mul2(q), d3);
			q = cuda_v16_xor(cuda_v16_mul2(q), d2);
			q = cuda_v16_xor(cuda_v16_mul2(q), d1);
			q = cuda_v16_xor(cuda_v16_mul2(q), d0);
		}
	}
	while (k-- > 0) {
		const struct cuda_v16 d = cuda_data(kp, s, k, off, n);

		p = cuda_v16_xor(p, d);
		if (kp->need_q)
			q = cuda_v16_xor(cuda_v16_mul2(q), d);
	}
	*ps = p;
	*qs = q;
}

/* One item: vector v of stripe s of the piece, every case of enum cuda_case. */
CUDA_HD void cuda_item(const struct cuda_kparams *kp, uint32_t s, uint32_t v)
{
	const uint64_t off = (uint64_t)v * CUDA_VEC;
	const unsigned n = kp->len - off < CUDA_VEC ? (unsigned)(kp->len - off) : CUDA_VEC;
	const uint32_t pj = kp->ndata, qj = kp->ndata + 1;
	struct cuda_v16 ps, qs, dx, sp, sq;

	cuda_partial_pq(kp, s, off, n, &ps, &qs);
	switch (kp->kcase) {
	case CUDA_CASE_P:
		cuda_v16_store(cuda_blk(kp, s, pj) + off, n, ps);
		break;
	case CUDA_CASE_Q:
		cuda_v16_store(cuda_blk(kp, s, qj) + off, n, qs);
		break;
	case CUDA_CASE_PQ:
		cuda_v16_store(cuda_blk(kp, s, pj) + off, n, ps);
		cuda_v16_store(cuda_blk(kp, s, qj) + off, n, qs);
		break;
	case CUDA_CASE_D_FROM_P:
		sp = cuda_v16_load(cuda_blk(kp, s, pj) + off, n);
		cuda_v16_store(cuda_blk(kp, s, kp->lost_x) + off, n, cuda_v16_xor(sp, ps));
		break;
	case CUDA_CASE_D_AND_P:
		sq = cuda_v16_load(cuda_blk(kp, s, qj) + off, n);
		dx = cuda_v16_mulc(cuda_v16_xor(sq, qs), kp->c1);
		cuda_v16_store(cuda_blk(kp, s, kp->lost_x) + off, n, dx);
		cuda_v16_store(cuda_blk(kp, s, pj) + off, n, cuda_v16_xor(ps, dx));
		break;
	case CUDA_CASE_D_AND_Q:
		sp = cuda_v16_load(cuda_blk(kp, s, pj) + off, n);
		dx = cuda_v16_xor(sp, ps);
		cuda_v16_store(cuda_blk(kp, s, kp->lost_x) + off, n, dx);
		cuda_v16_store(cuda_blk(kp, s, qj) + off, n,
			       cuda_v16_xor(qs, cuda_v16_mulc(dx, kp->c1)));
		break;
	case CUDA_CASE_DD:
		sp = cuda_v16_xor(cuda_v16_load(cuda_blk(kp, s, pj) + off, n), ps);
		sq = cuda_v16_xor(cuda_v16_load(cuda_blk(kp, s, qj) + off, n), qs);
		dx = cuda_v16_xor(cuda_v16_mulc(sp, kp->c1), cuda_v16_mulc(sq, kp->c2));
		cuda_v16_store(cuda_blk(kp, s, kp->lost_x) + off, n, dx);
		cuda_v16_store(cuda_blk(kp, s, kp->lost_y) + off, n, cuda_v16_xor(sp, dx));
		break;
	case CUDA_CASE_CHECK:
		sp = cuda_v16_xor(cuda_v16_load(cuda_blk(kp, s, pj) + off, n), ps);
		sq = kp->nparity > 1 ?
			cuda_v16_xor(cuda_v16_load(cuda_blk(kp, s, qj) + off, n), qs) :
			cuda_v16_zero();
		if (cuda_v16_nonzero(sp) || cuda_v16_nonzero(sq))
			cuda_check_fold(kp->acc + 3 * (uint64_t)s, sp, sq);
		break;
	default:
		break;
	}
}

#endif /* GRAID_CUDA_ITEM_H */
