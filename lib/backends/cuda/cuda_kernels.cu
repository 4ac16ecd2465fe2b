/* SPDX-License-Identifier: MIT */
/* The CUDA parity kernel and its launch wrapper: one launch per piece, every case and stripe. */
#include <cuda_runtime.h>

#include "cuda_item.h"
#include "cuda_rt.h"

/* Enough warps per multiprocessor to keep 16-byte loads in flight from HBM or over PCIe. */
#define KERNEL_THREADS 256

/*
 * A grid-stride loop over (stripe, vector) items. Consecutive threads take consecutive
 * vectors of a block, so a warp reads 512 contiguous bytes of each block it touches. The
 * item count fits 32 bits: the host caps a piece well below 2^31 vectors.
 */
__global__ void __launch_bounds__(KERNEL_THREADS)
cuda_parity_kernel(const __grid_constant__ struct cuda_kparams kp)
{
	const uint32_t items = kp.nstripes * kp.nvec;
	const uint32_t step = gridDim.x * blockDim.x;

	for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < items; i += step)
		cuda_item(&kp, i / kp.nvec, i % kp.nvec);
}

extern "C" int cuda_kernels_blocks_per_sm(int *blocks)
{
	return (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, cuda_parity_kernel,
								  KERNEL_THREADS, 0);
}

extern "C" int cuda_kernels_launch(const struct cuda_kparams *kp, unsigned max_blocks,
				   void *stream)
{
	const uint64_t items = (uint64_t)kp->nstripes * kp->nvec;
	uint64_t blocks = (items + KERNEL_THREADS - 1) / KERNEL_THREADS;

	if (blocks > max_blocks)
		blocks = max_blocks;
	if (blocks == 0)
		blocks = 1;
	cuda_parity_kernel<<<(unsigned)blocks, KERNEL_THREADS, 0, (cudaStream_t)stream>>>(*kp);
	return (int)cudaGetLastError();
}
