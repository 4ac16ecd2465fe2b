/* SPDX-License-Identifier: MIT */
/* The one GF(2^8) definition: tables, field laws, and the recovery coefficients. */
#include <criterion/criterion.h>

#include <libgraid/graid_gf.h>

static const unsigned char gf_exp[510] = GRAID_GF_EXP_INIT;
static const unsigned char gf_log[256] = GRAID_GF_LOG_INIT;

Test(gf, tables_agree_with_multiplication_by_the_generator)
{
	unsigned char x = 1;

	for (unsigned i = 0; i < 510; i++) {
		cr_assert_eq(gf_exp[i], x, "exp[%u]", i);
		if (i < 255)
			cr_assert_eq(gf_log[x], i, "log[%u]", x);
		x = graid_gf_mul2(x);
	}
}

Test(gf, multiplication_is_a_field_with_inverses)
{
	for (unsigned a = 0; a < 256; a++) {
		cr_assert_eq(graid_gf_mul((unsigned char)a, 1), a);
		cr_assert_eq(graid_gf_mul((unsigned char)a, 0), 0);
		if (a)
			cr_assert_eq(graid_gf_mul((unsigned char)a, graid_gf_inv((unsigned char)a)),
				     1, "inverse of %u", a);
		for (unsigned b = 1; b < 256; b++) {
			unsigned char ab = graid_gf_mul((unsigned char)a, (unsigned char)b);

			cr_assert_eq(ab, graid_gf_mul((unsigned char)b, (unsigned char)a));
			if (a)
				cr_assert_eq(ab, gf_exp[gf_log[a] + gf_log[b]]);
		}
	}
}

Test(gf, powers_of_two_are_distinct_for_255_data_blocks)
{
	unsigned char seen[256] = { 0 };

	for (unsigned k = 0; k < GRAID_GF_MAX_DATA; k++) {
		unsigned char g = graid_gf_exp2(k);

		cr_assert_eq(seen[g], 0, "g^%u repeats", k);
		seen[g] = 1;
	}
	cr_assert_eq(graid_gf_exp2(255), 1);
}

/* D_x = a*Pxy ^ b*Qxy must hold for every pair and every value of the two blocks. */
Test(gf, two_data_coefficients_solve_the_syndromes)
{
	for (unsigned x = 0; x < 40; x++)
		for (unsigned y = x + 1; y < 255; y += 7) {
			unsigned char a, b;

			graid_gf_two_data_coef(x, y, &a, &b);
			for (unsigned dx = 0; dx < 256; dx += 17)
				for (unsigned dy = 0; dy < 256; dy += 23) {
					unsigned char p = (unsigned char)(dx ^ dy);
					unsigned char q = (unsigned char)(
						graid_gf_mul(graid_gf_exp2(x), (unsigned char)dx) ^
						graid_gf_mul(graid_gf_exp2(y), (unsigned char)dy));

					cr_assert_eq(graid_gf_mul(a, p) ^ graid_gf_mul(b, q), dx,
						     "x=%u y=%u", x, y);
				}
		}
}
