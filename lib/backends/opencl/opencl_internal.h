/* SPDX-License-Identifier: MIT */
/* Declarations shared by the OpenCL engine's sources; private to the plugin. */
#ifndef GRAID_OPENCL_INTERNAL_H
#define GRAID_OPENCL_INTERNAL_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid_backend.h>

#if defined(__GNUC__)
#define OCL_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define OCL_PRINTF(f, a)
#endif

/* The library's log sink, as graid_backend_config hands it over. */
typedef void (*ocl_log_fn)(int level, const char *fmt, ...) OCL_PRINTF(2, 3);

/* Kernel geometry; opencl_kernels.cl has the same numbers. */
#define OCL_VPI 4                   /* uchar16 vectors per work-item */
#define OCL_ITEM_BYTES (16u * OCL_VPI)
#define OCL_NREG 16                 /* buffer arguments of a kernel */
#define OCL_STAGE_REG (OCL_NREG - 1) /* the one that is the staging buffer */
#define OCL_REG_SHIFT 56
#define OCL_REG_NONE 0xffu          /* plan: block not used by the kernel */
#define OCL_MAX_ROWS 65535u         /* stripes (dimension 1) of one launch */

/* Recovery modes (GRAID_CL_MODE_* in the kernels). */
enum ocl_mode {
	OCL_MODE_D = 0,
	OCL_MODE_P = 1,
	OCL_MODE_Q = 2,
	OCL_MODE_PQ = 3,
	OCL_MODE_DP = 4,
	OCL_MODE_DQ = 5,
	OCL_MODE_DD = 6,
};

/* Check flags (GRAID_CL_BAD_* in the kernels). */
#define OCL_BAD_P 1u
#define OCL_BAD_Q 2u
#define OCL_BAD_DATA 4u
#define OCL_BAD_ANY 8u

/* opencl_errors.c */
const char *ocl_error_name(cl_int err);
int ocl_errno(ocl_log_fn log, cl_int err, const char *call);
int ocl_errno_launched(ocl_log_fn log, cl_int err, const char *call);

/* opencl_device.c: which device, and what it is. */
struct ocl_device {
	cl_platform_id platform;
	cl_device_id device;
	cl_device_type type;
	int host_memory;        /* reads host memory in place (CPU or unified memory) */
	cl_ulong max_alloc;     /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
	size_t max_wg;          /* CL_DEVICE_MAX_WORK_GROUP_SIZE */
	size_t max_item;        /* CL_DEVICE_MAX_WORK_ITEM_SIZES[0]: groups are 1 item deep in dim 1 */
	char name[128];         /* "platform / device" */
};
/* Dimensions CL_DEVICE_MAX_WORK_ITEM_SIZES may report that the engine reads. */
#define OCL_MAX_DIMS 8
int ocl_device_pick(struct ocl_device *d, char *why, size_t why_len);
uint32_t ocl_device_flags(const struct ocl_device *d);

/* What one operation asks of every stripe of a batch. */
enum ocl_role {
	OCL_ROLE_UNUSED = 0,
	OCL_ROLE_IN = 1,
	OCL_ROLE_OUT = 2,
};

enum ocl_op {
	OCL_OP_GEN,
	OCL_OP_RECOVER,
	OCL_OP_CHECK,
};

struct ocl_job {
	enum ocl_op op;
	unsigned ndata, nparity, nblk;
	cl_uint mode, x, y, ca, cb;  /* recover kernel arguments */
	uint8_t role[GRAID_GF_MAX_DATA + 2];
};

/* A piece of a batch: stripes [first, first + n), bytes [coff, coff + clen) of each block. */
struct ocl_piece {
	uint8_t *const *blocks; /* the piece's first stripe */
	size_t nstripes;
	size_t coff, clen;
};

/* One region of caller memory used in place. */
struct ocl_region {
	uint8_t *lo, *hi;
	size_t nblocks;
	int has_out;            /* the kernel writes into it */
	cl_mem mem;
	void *map;              /* mapped for reading the results, until unmapped */
};

/* How blocks reach the kernel (GRAID_OPENCL_MEMORY). */
enum ocl_memory {
	OCL_MEM_AUTO,     /* in place where contiguous and big enough, else staged */
	OCL_MEM_INPLACE,  /* every run of blocks in place (up to the region limit) */
	OCL_MEM_STAGED,   /* every block through host staging memory, used in place */
	OCL_MEM_COPY,     /* every block copied to and from device buffers (discrete) */
};

/* The engine: one device, context, queue and program, and buffers reused across calls. */
struct graid_engine {
	pthread_mutex_t lock;   /* one operation at a time owns everything below */
	ocl_log_fn log;
	struct ocl_device dev;
	cl_context ctx;
	cl_command_queue queue;
	cl_program prog;
	cl_kernel k_gen, k_recover, k_check;
	size_t local0;          /* work-group size along the bytes of a block */

	enum ocl_memory memory;
	size_t piece_bytes;     /* most block bytes one launch covers */
	size_t max_blocks;      /* most blocks one launch covers (bounds the table) */
	size_t inplace_min;     /* smallest region used in place (OCL_MEM_AUTO) */

	/* Reused across calls, grown on demand, released at close. */
	uint8_t *stage_host;    /* staged blocks, packed (64-byte aligned) */
	size_t stage_host_cap;
	cl_mem stage_dev;       /* OCL_MEM_COPY: the device copy of stage_host */
	size_t stage_dev_cap;
	cl_ulong *tab_host;     /* the block table of a piece */
	size_t tab_host_cap;
	cl_mem tab;             /* OCL_MEM_COPY: the device copy of tab_host */
	size_t tab_cap;
	cl_mem tab_wrap;        /* otherwise: tab_host itself, wrapped for the piece */
	cl_uint *res_host;      /* check words of a piece, 3 per stripe */
	size_t res_host_cap;
	cl_mem res;
	size_t res_cap;
	uint8_t *blk_reg;       /* plan: region of each block of a piece */
	size_t blk_reg_cap;

	/* The piece in flight. */
	struct ocl_region reg[OCL_NREG]; /* [OCL_STAGE_REG]: the staging buffer */
	unsigned nreg;          /* caller regions in reg[0..nreg) */
	size_t nout, nin;       /* staged output and input blocks */

	unsigned long long batches;    /* successful operations */
	unsigned long long fail_after; /* GRAID_OPENCL_FAIL_AFTER, or ULLONG_MAX */
};

/* opencl_program.c */
int ocl_program_build(struct graid_engine *e);

/* opencl_plan.c: where each block of a piece lives for the kernel (no OpenCL calls). */
size_t ocl_plan_stride(size_t clen);
void ocl_plan_piece(struct graid_engine *e, const struct ocl_job *job,
		    const struct ocl_piece *pc);
void ocl_plan_table(const struct graid_engine *e, const struct ocl_job *job,
		    const struct ocl_piece *pc, cl_ulong *tab);
void ocl_plan_copy(const struct graid_engine *e, const struct ocl_job *job,
		   const struct ocl_piece *pc, uint8_t *stage, int to_stage);

/* opencl_piece.c: one piece's buffers, transfers and results around its launch. */
int ocl_piece_prepare(struct graid_engine *e, const struct ocl_job *job,
		      const struct ocl_piece *pc);
int ocl_piece_collect(struct graid_engine *e, const struct ocl_job *job,
		      const struct ocl_piece *pc, size_t nres);
int ocl_piece_release(struct graid_engine *e, int wait);
int ocl_buffer_reserve(struct graid_engine *e, cl_mem *mem, size_t *cap, size_t need,
		       cl_mem_flags flags, const char *what);
int ocl_host_reserve(void **mem, size_t *cap, size_t need);

#endif /* GRAID_OPENCL_INTERNAL_H */
