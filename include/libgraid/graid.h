/* SPDX-License-Identifier: MIT */
/**
 * @file graid.h
 * @brief libgraid's public API: parity engines, parity math on batches of stripes, logging.
 *
 * Conventions, for every function here:
 * - A return of 0 (or a count) is success; a negative errno is failure, and
 *   graid_strerror() names it. Nothing exits, aborts or prints to stdout.
 * - Structures that cross the API start with a `struct_size` that the caller sets to the
 *   sizeof it was compiled with, so they can grow at the end without breaking the ABI.
 * - Handles are opaque. An engine handle may be used from many threads at once.
 *
 * Parity is that of Linux md RAID-6 and ISA-L's pq_gen: P = XOR of the data blocks,
 * Q = sum of g^k * D_k over GF(2^8) with polynomial 0x11d, g = 2, k the data block's
 * index in its stripe (see graid_gf.h).
 */
#ifndef LIBGRAID_GRAID_H
#define LIBGRAID_GRAID_H

#include <stddef.h>
#include <stdint.h>

#include <libgraid/graid_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Marks the functions libgraid exports (everything else is hidden). */
#if defined(__GNUC__)
#define GRAID_API __attribute__((visibility("default")))
#else
#define GRAID_API
#endif

/** @brief An open parity engine. */
struct graid_backend;

/**
 * @brief Open a parity engine.
 *
 * @param name "auto", "ref", "isal", "cuda", "opencl", or the name of a plugin found on the
 *   plugin path; NULL means the GRAID_BACKEND environment variable, else "auto". "auto"
 *   probes every engine present, times each on a short fixed workload (once per process)
 *   and opens the fastest; the figures are logged and can be read with
 *   graid_backend_list().
 * @param out where the handle is stored; untouched on failure.
 * @return 0 on success;
 *   -EINVAL @p out is NULL, or @p name names no engine known here;
 *   -ENODEV the engine is known but not usable on this machine (no device, no driver, or
 *           its plugin is not installed);
 *   -ENOEXEC the engine's plugin was found but refused (wrong ABI, missing operation; the
 *           log says which);
 *   -ENOMEM out of memory; or another negative errno from the engine's own open.
 */
GRAID_API int graid_backend_open(const char *name, struct graid_backend **out);

/**
 * @brief Close an engine opened with graid_backend_open(). NULL is ignored.
 * @param be the engine; no call on it may be in progress.
 */
GRAID_API void graid_backend_close(struct graid_backend *be);

/**
 * @brief The name of the engine behind a handle ("isal", "opencl", ...; never "auto").
 * @param be the engine.
 * @return a string that lives as long as @p be; "(null)" for NULL.
 */
GRAID_API const char *graid_backend_name(const struct graid_backend *be);

/**
 * @brief Compute parity for a batch of stripes.
 *
 * @param be the engine.
 * @param ndata data blocks per stripe, 1..255.
 * @param nparity 1 (P, RAID-5) or 2 (P and Q, RAID-6).
 * @param len bytes in every block, >= 1. Any length works; multiples of 64 are fastest.
 * @param nstripes stripes in the batch, >= 1.
 * @param blocks nstripes * (ndata + nparity) pointers, stripe after stripe: the data
 *   blocks in logical order, then P, then Q. No pointer may be NULL. Any alignment
 *   works; 64-byte aligned blocks take the fast paths.
 * @return 0 on success, P (and Q) written;
 *   -EINVAL a NULL @p be or @p blocks or block pointer, @p ndata 0 or > 255, @p nparity
 *           not 1 or 2, @p len or @p nstripes 0 (nothing is written);
 *   -ENOMEM out of memory; -EIO the engine and its CPU fallback both failed.
 */
GRAID_API int graid_parity_gen(struct graid_backend *be, unsigned ndata, unsigned nparity,
			       size_t len, size_t nstripes, uint8_t *const *blocks);

/**
 * @brief Rebuild lost blocks, in place, for a batch of stripes.
 *
 * Every case RAID-6 survives is covered: one data block, two data blocks, data + P,
 * data + Q, P + Q, P alone, Q alone (and with nparity 1: one data block, or P).
 *
 * @param be the engine.
 * @param ndata, nparity, len, nstripes, blocks as for graid_parity_gen().
 * @param nlost how many blocks are lost in each stripe, 0..nparity (0 does nothing).
 * @param lost their indices in the stripe, 0..ndata+nparity-1 (ndata is P, ndata+1 is
 *   Q), in any order; the same for every stripe of the batch.
 * @return 0 on success, the lost blocks rewritten;
 *   -EINVAL any graid_parity_gen() argument error, @p lost NULL with @p nlost > 0,
 *           more lost blocks than parity blocks, or a repeated or out-of-range index
 *           (nothing is written);
 *   -ENOMEM out of memory; -EIO the engine and its CPU fallback both failed.
 */
GRAID_API int graid_parity_recover(struct graid_backend *be, unsigned ndata,
				   unsigned nparity, size_t len, size_t nstripes,
				   uint8_t *const *blocks, unsigned nlost,
				   const unsigned *lost);

/**
 * @brief Check the parity of a batch of stripes (the scrub primitive), and name the wrong
 * block where the math can.
 *
 * With two parity blocks a stripe in which exactly one block (data, P or Q) is wrong is
 * located from the P and Q syndromes; with one parity block, or with several blocks
 * wrong, the mismatch is reported as ::GRAID_CHECK_UNLOCATED. Nothing is written to any
 * block: repair is the caller's choice.
 *
 * @param be the engine.
 * @param ndata, nparity, len, nstripes, blocks as for graid_parity_gen().
 * @param result nstripes entries, one verdict per stripe: ::GRAID_CHECK_CLEAN, the index
 *   of the one wrong block (0..ndata+nparity-1), or ::GRAID_CHECK_UNLOCATED. May be NULL
 *   when only the count is wanted.
 * @return the number of stripes whose parity does not match (a result, not an error);
 *   -EINVAL as for graid_parity_gen(); -ENOMEM; -EIO the engine and its fallback failed.
 */
GRAID_API long graid_parity_check(struct graid_backend *be, unsigned ndata,
				  unsigned nparity, size_t len, size_t nstripes,
				  uint8_t *const *blocks, int32_t *result);

/** @brief What graid_backend_list() reports of one engine. */
struct graid_backend_desc {
	uint32_t struct_size;    /**< set by the caller, in every element */
	char name[32];           /**< the engine's name */
	char description[96];    /**< one line on what it is */
	/** 0 usable; -ENODEV not on this machine; -ENOEXEC plugin refused; other errno */
	int status;
	char device[128];        /**< what the probe found, in words (empty if none) */
	uint32_t flags;          /**< GRAID_BACKEND_F_* from the probe */
	/** RAID-6 8+2 P+Q generation speed in GB/s of data, 0 if not measured */
	double gen_gbps;
};

/** graid_backend_list() flag: time every usable engine now (as "auto" does) */
#define GRAID_LIST_MEASURE 0x1u

/**
 * @brief List the engines this build knows, with what their probes found.
 *
 * @param descs array of @p max entries, each with struct_size set; may be NULL if
 *   @p max is 0.
 * @param max entries in @p descs.
 * @param flags 0, or ::GRAID_LIST_MEASURE to time every usable engine (tens of
 *   milliseconds each; the figures are kept for the process and reused by "auto").
 * @return the number of engines known (may exceed @p max; only @p max are filled);
 *   -EINVAL @p descs NULL with @p max > 0, a struct_size too small, or unknown flags.
 */
GRAID_API int graid_backend_list(struct graid_backend_desc *descs, unsigned max,
				 unsigned flags);

/** @brief Counters of one open engine. */
struct graid_backend_stats {
	uint32_t struct_size;    /**< set by the caller */
	uint64_t batches;        /**< gen, recover and check calls that succeeded */
	uint64_t stripes;        /**< stripes in those calls */
	uint64_t bytes;          /**< data and parity bytes in those calls */
	uint64_t failovers;      /**< batches redone on the CPU engine after an engine error */
};

/**
 * @brief Read an engine's counters.
 * @param be the engine.
 * @param stats filled up to its struct_size.
 * @return 0; -EINVAL @p be or @p stats NULL or struct_size too small.
 */
GRAID_API int graid_backend_stats(const struct graid_backend *be,
				  struct graid_backend_stats *stats);

/**
 * @brief Where log messages go.
 * @param arg the value given to graid_log_set().
 * @param level a ::graid_log_level.
 * @param msg one line, without a trailing newline.
 */
typedef void (*graid_log_fn)(void *arg, int level, const char *msg);

/**
 * @brief Send the library's log to @p fn, for messages at @p max_level or more severe.
 *
 * Until this is called, messages at GRAID_LOG_WARNING or more severe go to stderr (the
 * level can be set with the GRAID_LOG_LEVEL environment variable, 3..7). Passing NULL
 * for @p fn silences the log. Process-wide; safe to call at any time.
 *
 * @param fn the sink, called with a lock held (it must not call back into the log);
 *   NULL for silence.
 * @param arg passed to @p fn unchanged.
 * @param max_level the least severe ::graid_log_level delivered.
 */
GRAID_API void graid_log_set(graid_log_fn fn, void *arg, int max_level);

/**
 * @brief Name an error returned by this library.
 * @param err a negative errno (a positive one is accepted too).
 * @return a static string; never NULL.
 */
GRAID_API const char *graid_strerror(int err);

/**
 * @brief The library's version.
 * @return "MAJOR.MINOR.PATCH", a static string.
 */
GRAID_API const char *graid_version(void);

#ifdef __cplusplus
}
#endif

#endif /* LIBGRAID_GRAID_H */
