/* SPDX-License-Identifier: MIT */
/*
 * The OpenCL engine on a device that reports what broke it elsewhere: run with
 * tests/plugins/cl_quirks.c preloaded, which lengthens every name and version string past
 * any fixed buffer, bounds work-groups along dimension 1 as NVIDIA does, and can report a
 * kernel fault from the wait after a launch.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "testutil.h"

/* One of the layer's counters; fails the test when the layer is not preloaded. */
static atomic_size_t *oq_counter(const char *name)
{
	atomic_size_t *c = dlsym(RTLD_DEFAULT, name);

	cr_assert_not_null(c, "%s: tests/plugins/cl_quirks.c is not preloaded (LD_PRELOAD)",
			   name);
	return c;
}

/*
 * Open the engine. A device the layer was asked about exists, so it must be usable; where
 * no device was even found (no PoCL), skip or fail as tu_engine_need() says.
 */
static struct graid_backend *oq_open(void)
{
	atomic_size_t *queries = oq_counter("clq_string_queries");
	struct graid_backend *be;
	char why[256];
	int rc;

	rc = graid_backend_open("opencl", &be);
	if (rc && !atomic_load(queries))
		tu_engine_need("opencl");
	tu_engine_why("opencl", why, sizeof(why));
	cr_assert_eq(rc, 0, "a device was found, but with long strings the engine is %s (%s)",
		     graid_strerror(rc), why);
	return be;
}

Test(opencl_quirks, strings_longer_than_any_buffer_are_read_and_names_truncated)
{
	struct graid_backend_desc d[16];
	struct graid_backend *be = oq_open();
	int n;

	graid_backend_close(be);
	for (int i = 0; i < 16; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 16, 0);
	for (int i = 0; i < n && i < 16; i++) {
		if (strcmp(d[i].name, "opencl"))
			continue;
		cr_assert_eq(d[i].status, 0, "%s", d[i].device);
		/* Cut to the field, not dropped: both names are there, each in part. */
		cr_assert_eq(strlen(d[i].device), sizeof(d[i].device) - 1, "\"%s\"", d[i].device);
		cr_assert(!strncmp(d[i].device, "LONGPLATFORM-xx", 15), "\"%s\"", d[i].device);
		cr_assert(strstr(d[i].device, "x / LONGDEVICE-xx"), "\"%s\"", d[i].device);
		return;
	}
	cr_assert_fail("opencl not listed");
}

/*
 * Generate a batch on the engine, check it against the reference and return the failovers
 * so far. One flat buffer: tu_stripes' guarded blocks would need a mapping each, and a
 * process may have only some 65,000.
 */
static unsigned long long oq_gen(struct graid_backend *be, unsigned ndata, size_t len,
				 size_t nstripes)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	const unsigned nblk = ndata + 2;
	uint64_t rng = tu_seed() ^ 0x717569;
	uint8_t *buf = malloc(nstripes * nblk * len), *expect = malloc(2 * len);
	uint8_t **ptr = calloc(nstripes * nblk, sizeof(*ptr));

	cr_assert(buf && expect && ptr);
	tu_fill(&rng, buf, nstripes * nblk * len);
	for (size_t b = 0; b < nstripes * nblk; b++)
		ptr[b] = buf + b * len;
	cr_assert_eq(graid_parity_gen(be, ndata, 2, len, nstripes, ptr), 0);
	for (size_t st_i = 0; st_i < nstripes; st_i++) {
		uint8_t **blk = ptr + st_i * nblk;

		memcpy(expect, blk[ndata], len);
		memcpy(expect + len, blk[ndata + 1], len);
		graid_gf_ref_gen(ndata, 2, 0, len, blk);
		cr_assert(!memcmp(expect, blk[ndata], len) && !memcmp(expect + len, blk[ndata + 1], len),
			  "stripe %zu of %zu: parity differs from the reference (seed %llu)", st_i,
			  nstripes, (unsigned long long)tu_seed());
	}
	free(ptr);
	free(expect);
	free(buf);
	cr_assert_eq(graid_backend_stats(be, &st), 0);
	return (unsigned long long)st.failovers;
}

Test(opencl_quirks, a_batch_of_more_stripes_than_a_gpu_launch_takes_is_cut, .timeout = 300)
{
	atomic_size_t *max_groups = oq_counter("clq_max_groups_1");
	atomic_size_t *launches = oq_counter("clq_launches");
	struct graid_backend *be = oq_open();
	size_t before = atomic_load(launches);

	/* 70,000 stripes of 64-byte blocks: one piece's worth, past 65,535 rows. */
	cr_assert_eq(oq_gen(be, 4, 64, 70000), 0, "the batch failed over to the CPU");
	cr_assert_leq(atomic_load(max_groups), 65535, "a launch had %zu groups along dim 1",
		      atomic_load(max_groups));
	cr_assert_geq(atomic_load(launches) - before, 2);
	graid_backend_close(be);
}

static char oq_log[8192];

static void oq_log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	snprintf(oq_log + strlen(oq_log), sizeof(oq_log) - strlen(oq_log), "%s\n", msg);
}

Test(opencl_quirks, a_kernel_fault_is_an_io_error_not_out_of_memory)
{
	atomic_int *fault = dlsym(RTLD_DEFAULT, "clq_fault_next_finish");
	struct graid_backend *be = oq_open();

	cr_assert_not_null(fault);
	graid_log_set(oq_log_keep, NULL, GRAID_LOG_WARNING);
	atomic_store(fault, 1);
	/* The batch is redone on the CPU, right; the engine said -EIO. */
	cr_assert_eq(oq_gen(be, 6, 4096, 4), 1);
	graid_log_set(NULL, NULL, GRAID_LOG_WARNING);
	cr_assert(strstr(oq_log, "CL_OUT_OF_RESOURCES"), "log: %s", oq_log);
	cr_assert(strstr(oq_log, graid_strerror(-EIO)), "log: %s", oq_log);
	cr_assert_null(strstr(oq_log, graid_strerror(-ENOMEM)), "log: %s", oq_log);
	graid_backend_close(be);
}
