/* SPDX-License-Identifier: MIT */
/* The CPU engine's one-time timing: every kind of work gets a routine this CPU runs. */
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

/* The timing gives every class a variant this CPU runs, and ISA-L only where it has one. */
Test(cpu_measure, every_class_gets_a_routine_this_cpu_runs)
{
	struct graid_cpu_choice ch;

	graid__cpu_measure(&ch, NULL);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++) {
		cr_assert_not_null(ch.own[c]);
		cr_assert(ch.own[c]->supported(), "class %u: %s", c, ch.own[c]->name);
		cr_assert(ch.gbps[c][0] > 0 || !ch.isal[c], "class %u: ISA-L not timed", c);
	}
	cr_assert_not(ch.isal[GRAID_CPU_C_REC2]);
	cr_assert(ch.usec > 0);
}

Test(cpu_measure, a_forced_variant_is_the_only_own_candidate)
{
	struct graid_cpu_choice ch;
	char desc[128];

	graid__cpu_measure(&ch, &graid__cpu_variant_swar);
	for (unsigned c = 0; c < GRAID_CPU_NCLASS; c++)
		cr_assert_eq(ch.own[c], &graid__cpu_variant_swar);
	graid__cpu_choice_describe(&ch, desc, sizeof(desc));
	cr_assert(strstr(desc, "own c routines (forced)"), "%s", desc);
}
