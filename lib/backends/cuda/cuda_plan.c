/* SPDX-License-Identifier: MIT */
/* Planning of CUDA pieces: the recovery case of a batch, piece geometry and layout, verdicts. */
#include <errno.h>
#include <string.h>

#include <libgraid/graid_gf.h>

#include "cuda_plan.h"

/* Regions of a piece buffer start on this boundary: 16 for uint4 loads, 256 for DMA. */
#define PLAN_ALIGN 256u

static size_t plan_align(size_t x)
{
	return (x + PLAN_ALIGN - 1) & ~(size_t)(PLAN_ALIGN - 1);
}

enum plan_role { ROLE_NONE, ROLE_IN, ROLE_OUT };

static void plan_map(struct cuda_kparams *kp, const enum plan_role *role)
{
	unsigned nin = 0, nout = 0;

	for (unsigned j = 0; j < CUDA_MAX_BLOCKS; j++)
		kp->map[j] = CUDA_MAP_NONE;
	for (unsigned j = 0; j < kp->nblk; j++) {
		if (role[j] == ROLE_IN)
			kp->map[j] = (uint16_t)nin++;
		else if (role[j] == ROLE_OUT)
			kp->map[j] = (uint16_t)(CUDA_MAP_OUT | nout++);
	}
	kp->nin = (uint16_t)nin;
	kp->nout = (uint16_t)nout;
}

int cuda_plan_case(struct cuda_kparams *kp, enum cuda_op op, unsigned ndata, unsigned nparity,
		   unsigned nlost, const unsigned *lost)
{
	enum plan_role role[CUDA_MAX_BLOCKS];
	const unsigned pj = ndata, qj = ndata + 1;
	unsigned x, y;

	if (ndata < 1 || ndata > GRAID_GF_MAX_DATA || nparity < 1 || nparity > 2)
		return -EINVAL;
	memset(kp, 0, sizeof(*kp));
	kp->ndata = ndata;
	kp->nparity = nparity;
	kp->nblk = ndata + nparity;
	kp->lost_x = kp->lost_y = CUDA_NO_BLOCK;
	/* By default every data block is read, parity untouched; cases adjust below. */
	for (unsigned j = 0; j < CUDA_MAX_BLOCKS; j++)
		role[j] = j < ndata ? ROLE_IN : ROLE_NONE;

	if (op == CUDA_OP_CHECK) {
		kp->kcase = CUDA_CASE_CHECK;
		kp->need_q = nparity > 1;
		for (unsigned j = ndata; j < kp->nblk; j++)
			role[j] = ROLE_IN;
		plan_map(kp, role);
		return 0;
	}
	if (op == CUDA_OP_GEN) {
		/* Generating parity is recovering all of it. */
		x = pj;
		y = nparity > 1 ? qj : CUDA_NO_BLOCK;
		nlost = nparity;
	} else if (op != CUDA_OP_RECOVER || nlost < 1 || nlost > nparity || !lost) {
		return -EINVAL;
	} else {
		x = lost[0];
		y = nlost > 1 ? lost[1] : CUDA_NO_BLOCK;
		if (x >= kp->nblk || (nlost > 1 && (y >= kp->nblk || y <= x)))
			return -EINVAL;
	}

	if (nlost == 1) {
		role[x] = ROLE_OUT;
		if (x < ndata) {
			kp->kcase = CUDA_CASE_D_FROM_P;
			kp->lost_x = x;
			role[pj] = ROLE_IN;
		} else if (x == pj) {
			kp->kcase = CUDA_CASE_P;
		} else {
			kp->kcase = CUDA_CASE_Q;
			kp->need_q = 1;
		}
	} else if (x == pj) {
		/* x < y, so y is Q. */
		kp->kcase = CUDA_CASE_PQ;
		kp->need_q = 1;
		role[pj] = role[qj] = ROLE_OUT;
	} else if (y == pj) {
		kp->kcase = CUDA_CASE_D_AND_P;
		kp->need_q = 1;
		kp->lost_x = x;
		kp->c1 = graid_gf_exp2(255u - x);   /* g^-x */
		role[x] = role[pj] = ROLE_OUT;
		role[qj] = ROLE_IN;
	} else if (y == qj) {
		kp->kcase = CUDA_CASE_D_AND_Q;
		kp->need_q = 1;
		kp->lost_x = x;
		kp->c1 = graid_gf_exp2(x);          /* g^x */
		role[x] = role[qj] = ROLE_OUT;
		role[pj] = ROLE_IN;
	} else {
		unsigned char a, b;

		kp->kcase = CUDA_CASE_DD;
		kp->need_q = 1;
		kp->lost_x = x;
		kp->lost_y = y;
		graid_gf_two_data_coef(x, y, &a, &b);
		kp->c1 = a;
		kp->c2 = b;
		role[x] = role[y] = ROLE_OUT;
		role[pj] = role[qj] = ROLE_IN;
	}
	plan_map(kp, role);
	return 0;
}

struct cuda_geom cuda_plan_geom(const struct cuda_kparams *kp, uint64_t len, size_t target)
{
	const uint64_t moved = (uint64_t)kp->nin + kp->nout;
	const uint64_t stride = (len + CUDA_VEC - 1) / CUDA_VEC * CUDA_VEC;
	/* A check moves every block in; count at least one block so nothing divides by 0. */
	const uint64_t per_stripe = (moved ? moved : 1) * stride;
	struct cuda_geom g;

	if (target < CUDA_VEC)
		target = CUDA_VEC;
	if (per_stripe <= target) {
		g.stripes = (size_t)(target / per_stripe);
		g.chunk = len;
		return g;
	}
	/* One stripe is bigger than a piece: cut its blocks into chunks, page-sized where
	 * the target allows, so mapped chunks stay 16-byte aligned. */
	g.stripes = 1;
	g.chunk = target / (moved ? moved : 1);
	if (g.chunk >= 4096)
		g.chunk &= ~(uint64_t)4095;
	else
		g.chunk &= ~(uint64_t)(CUDA_VEC - 1);
	if (g.chunk < CUDA_VEC)
		g.chunk = CUDA_VEC;
	if (g.chunk > len)
		g.chunk = len;
	return g;
}

struct cuda_layout cuda_plan_layout(const struct cuda_kparams *kp, size_t nstripes,
				    uint64_t chunk, bool mapped)
{
	struct cuda_layout l;
	size_t pos = 0;

	memset(&l, 0, sizeof(l));
	l.stride = (chunk + CUDA_VEC - 1) / CUDA_VEC * CUDA_VEC;
	if (mapped) {
		l.table = pos;
		pos = plan_align(pos + nstripes * kp->nblk * sizeof(uint8_t *));
	} else {
		l.in = pos;
		pos = plan_align(pos + nstripes * kp->nin * (size_t)l.stride);
	}
	l.acc = pos;
	if (kp->kcase == CUDA_CASE_CHECK)
		pos += nstripes * 3 * sizeof(uint32_t);
	l.h2d_end = pos;
	pos = plan_align(pos);
	l.out = pos;
	if (!mapped)
		pos += nstripes * kp->nout * (size_t)l.stride;
	l.size = pos;
	return l;
}

int32_t cuda_plan_verdict(const uint32_t acc[3], unsigned ndata, unsigned nparity)
{
	const uint32_t cls = acc[0];

	if (!cls)
		return GRAID_CHECK_CLEAN;
	if (nparity < 2)
		return GRAID_CHECK_UNLOCATED;
	if (cls == CUDA_CLS_P)
		return (int32_t)ndata;
	if (cls == CUDA_CLS_Q)
		return (int32_t)ndata + 1;
	if (cls == CUDA_CLS_D) {
		/* Every differing byte must point at the same data block. */
		const uint32_t zmin = 256u - acc[1], zmax = acc[2] - 1u;

		if (zmin == zmax && zmin < ndata)
			return (int32_t)zmin;
	}
	return GRAID_CHECK_UNLOCATED;
}

void cuda_plan_acc_merge(uint32_t a[3], const uint32_t b[3])
{
	a[0] |= b[0];
	if (a[1] < b[1])
		a[1] = b[1];
	if (a[2] < b[2])
		a[2] = b[2];
}
