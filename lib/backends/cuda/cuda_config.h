/* SPDX-License-Identifier: MIT */
/* The CUDA engine's settings, read from the environment when an engine is probed or opened. */
#ifndef GRAID_CUDA_CONFIG_H
#define GRAID_CUDA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_rt.h"

/* Default bytes a piece moves (inputs plus outputs); see docs/CUDA.md. */
#define CUDA_PIECE_DEFAULT (8u << 20)

struct cuda_config {
	int device;           /* GRAID_CUDA_DEVICE: device index, default 0 */
	bool mapped;          /* GRAID_CUDA_PATH: "staged" (default) or "mapped" */
	size_t piece_bytes;   /* GRAID_CUDA_PIECE_KB: piece size, default 8 MiB */
	uint64_t fail_after;  /* GRAID_CUDA_FAIL_AFTER: fail batches after N; UINT64_MAX never */
	unsigned copy_threads; /* GRAID_CUDA_COPY_THREADS: staged copy threads, default <= 4 */
};

/*
 * Read the settings. 0, or -EINVAL for a malformed variable, which is logged through log
 * when log is not NULL (probe passes NULL: it must stay silent).
 */
int cuda_config_read(struct cuda_config *cfg, cuda_log_fn log);

#endif /* GRAID_CUDA_CONFIG_H */
