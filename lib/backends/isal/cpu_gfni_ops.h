/* SPDX-License-Identifier: MIT */
/*
 * GFNI for cpu_simd_pass.h, over the vector primitives already defined (cpu_avx2_ops.h
 * or cpu_avx512_ops.h): GF2P8AFFINEQB multiplies every byte by an 8x8 bit matrix, and
 * multiplication by a constant c in GF(2^8) under any polynomial is such a matrix
 * (graid__cpu_gf_matrix()). So q * g is one instruction instead of four, and c * v one
 * instead of five (two shuffles of nibble tables). GF2P8MULB is no use: its polynomial is
 * AES's 0x11b, not RAID-6's 0x11d. The includer defines SIMD_AFFINE(v, m) and
 * SIMD_SET1_64(x) for its width.
 */
#define SIMD_MUL2(q) SIMD_AFFINE((q), SIMD_SET1_64(GRAID_CPU_GF_MATRIX_2))
#define SIMD_MULC(v, lo, hi) SIMD_AFFINE((v), (lo))
#define SIMD_KLO(pl, i) SIMD_SET1_64((pl)->gfm[i])
#define SIMD_KHI(pl, i) SIMD_ZERO()
