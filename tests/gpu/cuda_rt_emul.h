/* SPDX-License-Identifier: MIT */
/* Knobs and counters of the emulated CUDA runtime (cuda_rt_emul.c), for the CPU-only test. */
#ifndef GRAID_CUDA_RT_EMUL_H
#define GRAID_CUDA_RT_EMUL_H

#include <stdbool.h>
#include <stdint.h>

struct cuda_emul_stats {
	uint64_t pinned_allocs;   /* cudaHostAlloc calls that succeeded */
	uint64_t device_allocs;   /* cudaMalloc calls that succeeded */
	uint64_t launches;        /* kernel launches */
	uint64_t items;           /* kernel items run */
	uint64_t registers;       /* cudaHostRegister calls that pinned memory */
	uint64_t register_calls;  /* cudaHostRegister calls, pinning or finding it pinned */
	uint64_t unregisters;     /* cudaHostUnregister calls */
	uint64_t max_in_flight;   /* most streams holding queued work at once */
	uint64_t calls;           /* runtime calls of any kind (a dead engine makes none) */
	uint64_t queued;          /* copies and launches queued and not yet run or dropped */
};

/* What the emulated device does; reset with cuda_emul_reset(). */
struct cuda_emul_knobs {
	bool no_device;           /* probe and open say -ENODEV */
	int64_t fail_launch_after; /* launches that succeed before one fails (-1: never) */
	bool fail_pinned_alloc;   /* cudaHostAlloc says out of memory */
	bool fail_register;       /* cudaHostRegister fails (e.g. read-only memory) */
	bool translate_ptrs;      /* the device cannot use host pointers as they are */
	bool all_pinned;          /* every host address is already registered by the caller */
	/* launches that run before one hits an illegal address and loses the context, which
	 * then fails every later call as CUDA's sticky errors do (-1: never) */
	int64_t sticky_fault_after;
	bool old_device;          /* the device has compute capability 7.0 */
};

extern struct cuda_emul_knobs cuda_emul_knobs;
extern struct cuda_emul_stats cuda_emul_stats;

/* Default knobs, zero counters. */
void cuda_emul_reset(void);
/* The calling thread's current device, as cudaGetDevice/cudaSetDevice see it. */
int cuda_emul_current_device(void);
void cuda_emul_set_current_device(int device);
/* Mark [p, p + n) as registered by "the caller", as cudaHostAlloc'd memory would be. */
void cuda_emul_caller_pinned(void *p, uint64_t n);

#endif /* GRAID_CUDA_RT_EMUL_H */
