/* SPDX-License-Identifier: MIT */
/**
 * @file graid_backend.h
 * @brief The parity-engine plugin ABI: what a backend (in this tree or out of it) fills in.
 *
 * A backend is a table of operations, ::graid_backend_ops, that works on batches of
 * independent stripes. Engines other than the built-in "ref" and "isal" live in shared
 * objects named `libgraid-backend-<name>.so` that export one function,
 * ::GRAID_BACKEND_PLUGIN_SYMBOL, returning their table. The loader refuses a table whose
 * ABI version it does not speak, whose size is smaller than version 1's, or that lacks a
 * required operation, and logs which.
 *
 * Rules every backend follows:
 * - Every operation returns 0 or a negative errno. Foreign error codes (cudaError_t,
 *   cl_int, ISA-L's non-zero) are translated at the boundary and the original is logged
 *   through ::graid_backend_config::log.
 * - Arguments are validated by the core before an operation is called: ndata is 1..255,
 *   nparity 1 or 2, len >= 1, nstripes >= 1, blocks non-NULL, lost indices valid, distinct
 *   and sorted. A backend may assume all of this.
 * - Block pointers have no alignment guarantee; a backend that needs alignment handles the
 *   unaligned case itself.
 * - `probe` returning -ENODEV means "not on this machine"; it is never fatal.
 * - Operations may be called from several threads at once on one engine.
 * - An engine error other than -EINVAL makes the core redo the batch on the CPU engine
 *   (failover); the caller still gets correct parity.
 * - -ENODEV from gen, recover or check says the engine's device is gone for the rest of the
 *   process (a lost CUDA context): the engine logs why, once; the core logs one line and
 *   sends that batch and every later one to the CPU engine without calling the engine again.
 */
#ifndef LIBGRAID_GRAID_BACKEND_H
#define LIBGRAID_GRAID_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid_gf.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The ABI version this header describes. 2: every struct_size is a size_t (it was a
 * uint32_t here and a size_t in graid.h's structs); the loader refuses version-1 plugins.
 */
#define GRAID_BACKEND_ABI_VERSION 2u

/** Name of the function a plugin shared object exports (see ::graid_backend_plugin_fn). */
#define GRAID_BACKEND_PLUGIN_SYMBOL "graid_backend_plugin"

/** Log levels, as syslog's. */
enum graid_log_level {
	GRAID_LOG_ERR = 3,     /**< an operation failed */
	GRAID_LOG_WARNING = 4, /**< something degraded or fell back */
	GRAID_LOG_NOTICE = 5,  /**< a noteworthy event (an engine selected, a failover) */
	GRAID_LOG_INFO = 6,    /**< informational detail */
	GRAID_LOG_DEBUG = 7,   /**< debugging detail */
};

/** A batch of independent stripes of identical shape. */
struct graid_stripe_batch {
	size_t struct_size;         /**< sizeof(struct graid_stripe_batch) as built */
	unsigned ndata;             /**< data blocks per stripe, 1..255 */
	unsigned nparity;           /**< 1 (P) or 2 (P and Q) */
	size_t len;                 /**< bytes per block, >= 1 */
	size_t nstripes;            /**< stripes in the batch, >= 1 */
	/**
	 * nstripes * (ndata + nparity) pointers, stripe after stripe; inside a stripe the data
	 * blocks in logical order, then P, then Q.
	 */
	uint8_t *const *blocks;
	unsigned nlost;             /**< recover: how many blocks are lost, 1..nparity */
	unsigned lost[2];           /**< recover: lost block indices, ascending */
	/**
	 * GRAID_BATCH_F_* hints, 0 for none; no hint changes the bytes computed. Added after
	 * the first release of ABI version 2: an engine reads it only where struct_size
	 * covers it. 64 bits so that the struct grows past the padding that ended batches
	 * built before it (a 32-bit field would have fitted there, and their struct_size
	 * would have seemed to cover it).
	 */
	uint64_t flags;
};

/**
 * Batch hint: the results go to the drives and the CPU will not read them soon (a rebuild's
 * recovered blocks, a resync's parity). A CPU engine may write them by streaming stores,
 * past its caches, which saves reading each output line in first; engines that have no
 * use for the hint ignore it.
 */
#define GRAID_BATCH_F_STREAM UINT64_C(0x1)
/** Every batch hint this header defines. */
#define GRAID_BATCH_F_ALL GRAID_BATCH_F_STREAM

/** Check verdict: the stripe's parity matches its data. */
#define GRAID_CHECK_CLEAN (-1)
/**
 * Check verdict: the parity does not match, and the wrong block cannot be named (RAID-5,
 * or more than one block wrong on RAID-6).
 */
#define GRAID_CHECK_UNLOCATED (-2)

/** What a probe found. */
struct graid_backend_info {
	size_t struct_size;         /**< set by the caller of probe */
	char device[128];           /**< the device the engine would use, in words */
	uint32_t flags;             /**< GRAID_BACKEND_F_* */
};

/** The engine reads host memory in place (a CPU, or a device sharing host memory). */
#define GRAID_BACKEND_F_HOST_MEMORY 0x1u
/** The engine runs on an accelerator (its batches cross a bus). */
#define GRAID_BACKEND_F_ACCELERATOR 0x2u

/** What the core gives an engine when it opens it. */
struct graid_backend_config {
	size_t struct_size;         /**< sizeof(struct graid_backend_config) as built */
	/** Log through the library's sink; printf-style. Never NULL. */
	void (*log)(int level, const char *fmt, ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 2, 3)))
#endif
		;
};

/** A backend's private state; each backend defines it in its own source. */
struct graid_engine;

/** The table of operations of one backend. */
struct graid_backend_ops {
	size_t struct_size;         /**< sizeof(struct graid_backend_ops) as built */
	uint32_t abi_version;       /**< GRAID_BACKEND_ABI_VERSION as built */
	const char *name;           /**< "ref", "isal", "cuda", "opencl", ... */
	const char *description;    /**< one line, for listings */

	/**
	 * Required. 0 if usable here (fills info), -ENODEV if not, and then info->device may
	 * say why in words (the core logs it and graid_backend_list() reports it). Cheap and
	 * side-effect free.
	 */
	int (*probe)(struct graid_backend_info *info);
	/** Required. Open an engine; 0, -ENODEV, -ENOMEM, or another negative errno. */
	int (*open)(struct graid_engine **out, const struct graid_backend_config *cfg);
	/** Required. Release everything open acquired. */
	void (*close)(struct graid_engine *e);
	/** Required. Compute P (and Q) of every stripe of the batch from its data blocks. */
	int (*gen)(struct graid_engine *e, const struct graid_stripe_batch *b);
	/** Required. Rebuild batch->lost blocks of every stripe, in place, from the others. */
	int (*recover)(struct graid_engine *e, const struct graid_stripe_batch *b);
	/**
	 * Optional (NULL: the core uses the CPU engine). Check parity of every stripe; write
	 * one verdict per stripe to result[]: GRAID_CHECK_CLEAN, the index of the one block
	 * found wrong, or GRAID_CHECK_UNLOCATED. Returns the number of stripes that are not
	 * clean, or a negative errno.
	 */
	long (*check)(struct graid_engine *e, const struct graid_stripe_batch *b,
		      int32_t *result);

	/* Appended after ABI version 1's first table: read only where struct_size covers it. */

	/**
	 * Optional (NULL: registering is a no-op for this engine). Prepare [addr, addr + len)
	 * of host memory once for batches to come, as graid_backend_register_memory()
	 * describes: 0, -EINVAL (overlaps a registration of this engine), -ENOMEM, -ENODEV,
	 * -EIO. The core has checked addr non-NULL and len >= 1.
	 */
	int (*register_memory)(struct graid_engine *e, void *addr, size_t len);
	/**
	 * Required if register_memory is set. Undo the registration that starts at addr: 0,
	 * or -EINVAL if none does.
	 */
	int (*unregister_memory)(struct graid_engine *e, void *addr);
};

/** The function a plugin exports under ::GRAID_BACKEND_PLUGIN_SYMBOL. */
typedef const struct graid_backend_ops *(*graid_backend_plugin_fn)(void);

/** Fill the fixed header fields of a backend table in a designated initializer. */
#define GRAID_BACKEND_OPS_HEADER                                                        \
	.struct_size = sizeof(struct graid_backend_ops),                                \
	.abi_version = GRAID_BACKEND_ABI_VERSION

#ifdef __cplusplus
}
#endif

#endif /* LIBGRAID_GRAID_BACKEND_H */
