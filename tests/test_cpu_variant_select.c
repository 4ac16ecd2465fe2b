/* SPDX-License-Identifier: MIT */
/* Which CPU routine variant runs: the default, GRAID_CPU_VARIANT, the table's order, GFNI's matrices. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "../lib/backends/isal/cpu_measure.h"
#include "../lib/backends/isal/cpu_pool.h"
#include "../lib/backends/isal/cpu_variants.h"
#include "testutil.h"

/* GF2P8AFFINEQB's matrices: every constant times every byte, as graid_gf_mul says. */
Test(cpu_variant_select, gfni_matrices_multiply_as_the_reference)
{
	cr_assert_eq(graid__cpu_gf_matrix(2), GRAID_CPU_GF_MATRIX_2);
	for (unsigned c = 0; c < 256; c++) {
		const uint64_t m = graid__cpu_gf_matrix((unsigned char)c);

		for (unsigned x = 0; x < 256; x++) {
			unsigned y = 0;

			/* The instruction's definition: bit i = parity(byte 7-i of m AND x). */
			for (unsigned i = 0; i < 8; i++)
				y |= (unsigned)__builtin_parity((unsigned)((m >> (8 * (7 - i))) & x) &
								0xffu)
				     << i;
			cr_assert_eq(y, graid_gf_mul((unsigned char)c, (unsigned char)x),
				     "%u * %u", c, x);
		}
	}
}

/* The warnings selection logs, kept to assert on. */
static char cv_logged[512];

static void cv_log(int level, const char *fmt, ...)
{
	va_list ap;
	size_t used = strlen(cv_logged);

	(void)level;
	va_start(ap, fmt);
	vsnprintf(cv_logged + used, sizeof(cv_logged) - used, fmt, ap);
	va_end(ap);
}

static const struct graid_cpu_variant *cv_best(void)
{
	for (unsigned i = 0; graid__cpu_variants[i]; i++)
		if (graid__cpu_variants[i]->supported())
			return graid__cpu_variants[i];
	return NULL;
}

Test(cpu_variant_select, best_supported_is_the_default)
{
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick(NULL, cv_log), cv_best());
	cr_assert_eq(graid__cpu_variant_pick("", cv_log), cv_best());
	cr_assert_str_empty(cv_logged);
	cr_assert_not_null(cv_best());
}

Test(cpu_variant_select, c_is_always_there)
{
	cr_assert_eq(graid__cpu_variant_pick("c", cv_log), &graid__cpu_variant_swar);
	cr_assert_eq(graid__cpu_variant_find("c"), &graid__cpu_variant_swar);
}

Test(cpu_variant_select, unknown_name_warns_and_takes_the_best)
{
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick("sse9", cv_log), cv_best());
	cr_assert(strstr(cv_logged, "sse9") != NULL, "logged: %s", cv_logged);
}

Test(cpu_variant_select, unsupported_name_warns_and_takes_the_best)
{
	if (graid__cpu_variant_avx2.supported())
		cr_skip_test("this CPU has AVX2: nothing unsupported to ask for");
	cv_logged[0] = 0;
	cr_assert_eq(graid__cpu_variant_pick("avx2", cv_log), cv_best());
	cr_assert(strstr(cv_logged, "not supported") != NULL, "logged: %s", cv_logged);
}

/* Criterion runs each test in its own process, so the once-per-process choice is fresh. */
Test(cpu_variant_select, environment_forces_the_variant)
{
	setenv("GRAID_CPU_VARIANT", "c", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_swar);
	cr_assert_str_eq(graid__cpu_choice(cv_log)->forced, "c");
}

Test(cpu_variant_select, environment_with_avx2_runs_avx2_where_the_cpu_has_it)
{
	if (!graid__cpu_variant_avx2.supported())
		cr_skip_test("this CPU has no AVX2");
	setenv("GRAID_CPU_VARIANT", "avx2", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_avx2);
}

Test(cpu_variant_select, environment_with_ssse3_runs_ssse3_where_the_cpu_has_it)
{
	if (!graid__cpu_variant_ssse3.supported())
		cr_skip_test("this CPU has no SSSE3");
	setenv("GRAID_CPU_VARIANT", "ssse3", 1);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(graid__cpu_choice(NULL)->own[c], &graid__cpu_variant_ssse3);
}

/* Selection takes the first supported entry, so the table must run widest first. */
Test(cpu_variant_select, table_runs_from_widest_to_portable)
{
	unsigned n = 0;

	while (graid__cpu_variants[n])
		n++;
	cr_assert_eq(n, 6);
	cr_assert_eq(graid__cpu_variants[0], &graid__cpu_variant_avx512_gfni);
	cr_assert_eq(graid__cpu_variants[1], &graid__cpu_variant_avx512);
	cr_assert_eq(graid__cpu_variants[2], &graid__cpu_variant_avx2_gfni);
	cr_assert_eq(graid__cpu_variants[3], &graid__cpu_variant_avx2);
	cr_assert_eq(graid__cpu_variants[4], &graid__cpu_variant_ssse3);
	cr_assert_eq(graid__cpu_variants[5], &graid__cpu_variant_swar);
	/* A CPU with GFNI and AVX-512 BW gets the variant that uses both. */
	if (graid__cpu_variant_avx512_gfni.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx512_gfni);
	else if (graid__cpu_variant_avx512.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx512);
	/* A CPU with AVX2 has SSSE3 too, and must get the wider one. */
	else if (graid__cpu_variant_avx2_gfni.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx2_gfni);
	else if (graid__cpu_variant_avx2.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_avx2);
	else if (graid__cpu_variant_ssse3.supported())
		cr_assert_eq(cv_best(), &graid__cpu_variant_ssse3);
}
