/* SPDX-License-Identifier: MIT */
/* Every bad argument is -EINVAL and leaves every block as it was. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "testutil.h"

static struct graid_backend *be;
static struct tu_stripes s;
static uint8_t *before;

static void args_setup(void)
{
	uint64_t rng = tu_seed();

	cr_assert_eq(graid_backend_open("isal", &be), 0);
	tu_stripes_alloc(&s, 4, 2, 4096, 2, &rng, 0);
	before = tu_stripes_snapshot(&s);
}

static void args_teardown(void)
{
	cr_assert_eq(tu_stripes_diff(&s, before), -1, "a refused call wrote to a block");
	free(before);
	tu_stripes_free(&s);
	graid_backend_close(be);
}

TestSuite(args, .init = args_setup, .fini = args_teardown);

Test(args, gen_refuses_null_engine_blocks_and_zero_sizes)
{
	cr_assert_eq(graid_parity_gen(NULL, 4, 2, 4096, 2, s.ptr), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 4, 2, 4096, 2, NULL), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 4, 2, 0, 2, s.ptr), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 4, 2, 4096, 0, s.ptr), -EINVAL);
}

Test(args, gen_refuses_bad_data_and_parity_counts)
{
	cr_assert_eq(graid_parity_gen(be, 0, 2, 4096, 1, s.ptr), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 256, 2, 4096, 1, s.ptr), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 4, 0, 4096, 1, s.ptr), -EINVAL);
	cr_assert_eq(graid_parity_gen(be, 4, 3, 4096, 1, s.ptr), -EINVAL);
}

Test(args, gen_refuses_a_null_block_pointer_anywhere)
{
	uint8_t *saved = s.ptr[9];

	s.ptr[9] = NULL; /* the Q of the second stripe */
	cr_assert_eq(graid_parity_gen(be, 4, 2, 4096, 2, s.ptr), -EINVAL);
	s.ptr[9] = saved;
}

Test(args, recover_refuses_bad_loss_lists)
{
	unsigned dup[2] = { 1, 1 }, range[2] = { 0, 6 }, three[3] = { 0, 1, 2 };

	cr_assert_eq(graid_parity_recover(be, 4, 2, 4096, 2, s.ptr, 2, dup), -EINVAL);
	cr_assert_eq(graid_parity_recover(be, 4, 2, 4096, 2, s.ptr, 2, range), -EINVAL);
	cr_assert_eq(graid_parity_recover(be, 4, 2, 4096, 2, s.ptr, 3, three), -EINVAL);
	cr_assert_eq(graid_parity_recover(be, 4, 2, 4096, 2, s.ptr, 1, NULL), -EINVAL);
	cr_assert_eq(graid_parity_recover(be, 4, 1, 4096, 2, s.ptr, 2, three), -EINVAL);
	cr_assert_eq(graid_parity_recover(be, 0, 2, 4096, 2, s.ptr, 1, three), -EINVAL);
	/* Nothing lost is a successful no-op. */
	cr_assert_eq(graid_parity_recover(be, 4, 2, 4096, 2, s.ptr, 0, NULL), 0);
}

Test(args, flags_calls_refuse_unknown_hints_and_what_the_plain_calls_refuse)
{
	unsigned one[1] = { 2 };

	cr_assert_eq(graid_parity_gen_flags(be, 4, 2, 4096, 2, s.ptr, 0x2u), -EINVAL);
	cr_assert_eq(graid_parity_gen_flags(be, 4, 2, 4096, 2, s.ptr, 1u << 31), -EINVAL);
	cr_assert_eq(graid_parity_gen_flags(be, 4, 2, 0, 2, s.ptr, GRAID_BATCH_F_STREAM),
		     -EINVAL);
	cr_assert_eq(graid_parity_recover_flags(be, 4, 2, 4096, 2, s.ptr, 1, one, 0x2u), -EINVAL);
	cr_assert_eq(graid_parity_recover_flags(be, 4, 2, 4096, 2, s.ptr, 1, NULL,
						GRAID_BATCH_F_STREAM),
		     -EINVAL);
}

Test(args, check_refuses_what_gen_refuses)
{
	cr_assert_eq(graid_parity_check(NULL, 4, 2, 4096, 2, s.ptr, NULL), -EINVAL);
	cr_assert_eq(graid_parity_check(be, 4, 5, 4096, 2, s.ptr, NULL), -EINVAL);
	cr_assert_eq(graid_parity_check(be, 4, 2, 0, 2, s.ptr, NULL), -EINVAL);
}

Test(args, open_refuses_unknown_and_malformed_names)
{
	struct graid_backend *x = (struct graid_backend *)0x1;

	cr_assert_eq(graid_backend_open("no-such-engine", &x), -EINVAL);
	cr_assert_eq(graid_backend_open("../../etc/passwd", &x), -EINVAL);
	cr_assert_eq(graid_backend_open("", &x), -EINVAL);
	cr_assert_eq(graid_backend_open("isal", NULL), -EINVAL);
	cr_assert_eq(x, (struct graid_backend *)0x1, "out was written on failure");
}

Test(args, strerror_names_every_error_the_library_returns)
{
	static const int errs[] = { EINVAL, ENOMEM, EIO, ENODEV, ENOEXEC, EOPNOTSUPP, EAGAIN };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		cr_assert_not_null(graid_strerror(-errs[i]));
		cr_assert_str_neq(graid_strerror(-errs[i]), "");
	}
	cr_assert_str_eq(graid_strerror(0), "Success");
}
