/* SPDX-License-Identifier: MIT */
/* Planning a piece: which blocks the kernel reads in place, which are staged; the block table. */
#include <string.h>

#include "opencl_internal.h"

/*
 * Blocks are arbitrary host pointers, and an OpenCL 1.2 kernel reaches memory only
 * through its buffer arguments. On a device that reads host memory (a CPU, PoCL), runs of
 * blocks that touch or overlap - one caller allocation carved into blocks, a member's
 * buffer holding one chunk per stripe - become "regions": CL_MEM_USE_HOST_PTR buffers
 * over exactly the caller's bytes, used in place. There are OCL_NREG - 1 of them at most;
 * every other block is copied through the engine's staging memory (the last argument),
 * which is also the only path to a discrete device. A region holds only the caller's own
 * bytes, so an implementation that shadows USE_HOST_PTR memory never copies anything the
 * caller does not own back over it.
 *
 * Nothing here calls OpenCL: it is pure bookkeeping on the piece's pointers.
 */

#define PLAN_STAGE ((uint8_t)OCL_STAGE_REG)
#define PLAN_DEAD ((uint8_t)0xfe)

size_t ocl_plan_stride(size_t clen)
{
	/* 16-byte aligned slots keep the kernels' vector loads of staged blocks aligned. */
	return (clen + 15) & ~(size_t)15;
}

static uint8_t *plan_block(const struct ocl_piece *pc, size_t i)
{
	return pc->blocks[i] + pc->coff;
}

/* Join region t into r, leaving t dead and forwarding its blocks to r. */
static void plan_join(struct ocl_region *reg, uint8_t *fwd, unsigned r, unsigned t)
{
	if (reg[t].lo < reg[r].lo)
		reg[r].lo = reg[t].lo;
	if (reg[t].hi > reg[r].hi)
		reg[r].hi = reg[t].hi;
	reg[r].nblocks += reg[t].nblocks;
	reg[r].has_out |= reg[t].has_out;
	reg[t].nblocks = 0;
	fwd[t] = (uint8_t)r;
}

static unsigned plan_resolve(const uint8_t *fwd, unsigned r)
{
	while (fwd[r] != r)
		r = fwd[r];
	return r;
}

/*
 * Greedy, in block order: a block joins the region it touches (trying first the region
 * the same block index used in the previous stripe, the common layout), else opens a new
 * region while an argument is free, else is staged. Then regions smaller than
 * e->inplace_min are staged too.
 */
static void plan_regions(struct graid_engine *e, const struct ocl_job *job,
			 const struct ocl_piece *pc, size_t nb)
{
	struct ocl_region *reg = e->reg;
	uint8_t fwd[OCL_STAGE_REG], keep[OCL_STAGE_REG];
	uint8_t hint[GRAID_GF_MAX_DATA + 2];
	unsigned nreg = 0, live = 0;

	memset(hint, PLAN_STAGE, sizeof(hint));
	for (size_t i = 0; i < nb; i++) {
		unsigned j = (unsigned)(i % job->nblk), r = PLAN_STAGE;
		int out = job->role[j] == OCL_ROLE_OUT;
		uint8_t *lo, *hi;

		if (job->role[j] == OCL_ROLE_UNUSED) {
			e->blk_reg[i] = OCL_REG_NONE;
			continue;
		}
		lo = plan_block(pc, i);
		hi = lo + pc->clen;
		if (hint[j] != PLAN_STAGE) {
			unsigned h = plan_resolve(fwd, hint[j]);

			if (lo <= reg[h].hi && hi >= reg[h].lo)
				r = h;
		}
		for (unsigned t = 0; r == PLAN_STAGE && t < nreg; t++)
			if (fwd[t] == t && lo <= reg[t].hi && hi >= reg[t].lo)
				r = t;
		if (r != PLAN_STAGE) {
			if (lo < reg[r].lo)
				reg[r].lo = lo;
			if (hi > reg[r].hi)
				reg[r].hi = hi;
			reg[r].nblocks++;
			reg[r].has_out |= out;
			/* A grown region may now touch another; keep regions disjoint. */
			for (unsigned t = 0; t < nreg; t++)
				if (t != r && fwd[t] == t && reg[t].lo <= reg[r].hi &&
				    reg[t].hi >= reg[r].lo)
					plan_join(reg, fwd, r, t);
		} else if (nreg < OCL_STAGE_REG) {
			r = nreg++;
			fwd[r] = (uint8_t)r;
			reg[r] = (struct ocl_region){ .lo = lo, .hi = hi, .nblocks = 1, .has_out = out };
		}
		e->blk_reg[i] = (uint8_t)r;
		hint[j] = (uint8_t)r;
	}

	/* Keep the regions worth a buffer object, renumbered from 0; stage the rest. */
	for (unsigned t = 0; t < nreg; t++) {
		keep[t] = PLAN_DEAD;
		if (fwd[t] != t || (size_t)(reg[t].hi - reg[t].lo) < e->inplace_min)
			continue;
		reg[live] = reg[t];
		keep[t] = (uint8_t)live++;
	}
	for (size_t i = 0; i < nb; i++) {
		unsigned r = e->blk_reg[i];

		if (r == OCL_REG_NONE || r == PLAN_STAGE)
			continue;
		r = keep[plan_resolve(fwd, r)];
		e->blk_reg[i] = r == PLAN_DEAD ? PLAN_STAGE : (uint8_t)r;
	}
	e->nreg = live;
}

/* Fill e->blk_reg, e->reg[0..nreg) and the staged counts for a piece. */
void ocl_plan_piece(struct graid_engine *e, const struct ocl_job *job,
		    const struct ocl_piece *pc)
{
	size_t nb = pc->nstripes * job->nblk;

	e->nreg = 0;
	if (e->memory == OCL_MEM_AUTO || e->memory == OCL_MEM_INPLACE) {
		plan_regions(e, job, pc, nb);
	} else {
		for (size_t i = 0; i < nb; i++)
			e->blk_reg[i] = job->role[i % job->nblk] == OCL_ROLE_UNUSED ? OCL_REG_NONE
										 : PLAN_STAGE;
	}
	e->nout = 0;
	e->nin = 0;
	for (size_t i = 0; i < nb; i++) {
		if (e->blk_reg[i] != PLAN_STAGE)
			continue;
		if (job->role[i % job->nblk] == OCL_ROLE_OUT)
			e->nout++;
		else
			e->nin++;
	}
}

/*
 * The block table and the staging slots, in one walk so that both agree: staged outputs
 * take slots [0, nout), staged inputs [nout, nout + nin), each in block order.
 */
void ocl_plan_table(const struct graid_engine *e, const struct ocl_job *job,
		    const struct ocl_piece *pc, cl_ulong *tab)
{
	size_t nb = pc->nstripes * job->nblk, stride = ocl_plan_stride(pc->clen);
	size_t out_slot = 0, in_slot = e->nout;

	for (size_t i = 0; i < nb; i++) {
		unsigned r = e->blk_reg[i];
		cl_ulong off = 0;

		if (r == OCL_REG_NONE) {
			r = OCL_STAGE_REG; /* never read; any valid encoding will do */
		} else if (r == OCL_STAGE_REG) {
			if (job->role[i % job->nblk] == OCL_ROLE_OUT)
				off = (cl_ulong)(out_slot++ * stride);
			else
				off = (cl_ulong)(in_slot++ * stride);
		} else {
			off = (cl_ulong)(plan_block(pc, i) - e->reg[r].lo);
		}
		tab[i] = ((cl_ulong)r << OCL_REG_SHIFT) | off;
	}
}

/* Copy the staged inputs (to_stage) or outputs (from stage) between caller and stage. */
void ocl_plan_copy(const struct graid_engine *e, const struct ocl_job *job,
		   const struct ocl_piece *pc, uint8_t *stage, int to_stage)
{
	size_t nb = pc->nstripes * job->nblk, stride = ocl_plan_stride(pc->clen), slot = 0;
	enum ocl_role want = to_stage ? OCL_ROLE_IN : OCL_ROLE_OUT;

	for (size_t i = 0; i < nb; i++) {
		if (e->blk_reg[i] != PLAN_STAGE || job->role[i % job->nblk] != want)
			continue;
		if (to_stage)
			memcpy(stage + slot++ * stride, plan_block(pc, i), pc->clen);
		else
			memcpy(plan_block(pc, i), stage + slot++ * stride, pc->clen);
	}
}
