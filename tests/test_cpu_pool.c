/* SPDX-License-Identifier: MIT */
/* The CPU engines' worker pool alone: every piece runs once and an error comes back. */
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
#include "cpuvarutil.h"

/* The pool alone: every piece once, an error from any piece comes back. */
struct cv_pieces {
	atomic_int ran[1000];
	size_t fail_at;
};

static int cv_piece(void *arg, size_t i)
{
	struct cv_pieces *p = arg;

	atomic_fetch_add(&p->ran[i], 1);
	return i == p->fail_at ? -EIO : 0;
}

Test(cpu_pool, every_piece_runs_once_and_an_error_comes_back)
{
	static struct cv_pieces p;
	struct graid_cpu_pool *pool;

	cr_assert_eq(graid__cpu_pool_create(&pool, 1, NULL), 0);
	cr_assert_null(pool, "one thread needs no pool");
	cr_assert_eq(graid__cpu_pool_threads(pool), 1);
	cr_assert_eq(graid__cpu_pool_create(&pool, 4, NULL), 0);
	cr_assert_eq(graid__cpu_pool_threads(pool), 4);
	for (size_t fail = 0; fail < 1000; fail += 97) {
		memset(&p, 0, sizeof(p));
		p.fail_at = fail == 0 ? 1000 : fail;
		cr_assert_eq(graid__cpu_pool_run(pool, 1000, cv_piece, &p), fail == 0 ? 0 : -EIO);
		for (size_t i = 0; i < 1000; i++)
			cr_assert_eq(atomic_load(&p.ran[i]), 1, "piece %zu ran %d times", i,
				     atomic_load(&p.ran[i]));
	}
	graid__cpu_pool_destroy(pool);
}
