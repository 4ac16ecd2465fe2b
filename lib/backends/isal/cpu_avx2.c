/* SPDX-License-Identifier: MIT */
/* AVX2 parity routines: the pass of cpu_simd_pass.h on 32-byte vectors. */
#include <stdbool.h>

#include "cpu_variants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

/*
 * Function-level targets instead of -mavx2 for the file: nothing here can leak AVX2 into a
 * path that runs before the CPU check, and the build needs no per-file flags.
 */
#define SIMD_PREFIX avx2
#define SIMD_TARGET "avx2"
#include "cpu_avx2_ops.h"

#include "cpu_simd_pass.h"

static bool avx2_supported(void)
{
	/*
	 * GCC's and clang's run-time check also asks the OS whether it saves YMM state. The
	 * init makes it safe even from a constructor that runs before libgcc's own.
	 */
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2");
}

#else /* not x86-64 */

GRAID_CPU_VARIANT_ABSENT(avx2)

#endif

const struct graid_cpu_variant graid__cpu_variant_avx2 = {
	.name = "avx2",
	.supported = avx2_supported,
	.group_size = 8,
	.run = avx2_run,
};
