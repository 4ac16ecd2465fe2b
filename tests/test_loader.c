/* SPDX-License-Identifier: MIT */
/* Plugin loading, refusal of broken plugins, auto selection, listing, and CPU failover. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "testutil.h"

Test(loader, loads_a_plugin_from_the_backend_path)
{
	struct graid_backend *be;

	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	cr_assert_str_eq(graid_backend_name(be), "testfault");
	graid_backend_close(be);
}

/*
 * Plugin runtimes (CUDA, OpenCL) do not survive fork(): a forked child may not use a plugin
 * engine its parent started, and "auto" falls back to the CPU there.
 */
Test(loader, a_forked_child_gets_enodev_for_a_plugin_its_parent_started)
{
	struct graid_backend *be;
	int status;
	pid_t pid;

	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	graid_backend_close(be);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct graid_backend *child = NULL;

		graid_log_set(NULL, NULL, 0);
		if (graid_backend_open("testfault", &child) != -ENODEV)
			_exit(1);
		if (graid_backend_open("isal", &child) != 0)
			_exit(2);
		graid_backend_close(child);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	/* The parent that started it keeps using it. */
	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	graid_backend_close(be);
}

Test(loader, refuses_a_plugin_of_another_abi_version)
{
	struct graid_backend *be;

	cr_assert_eq(graid_backend_open("testabi", &be), -ENOEXEC);
}

Test(loader, refuses_a_plugin_lacking_a_required_operation)
{
	struct graid_backend *be;

	cr_assert_eq(graid_backend_open("testmissing", &be), -ENOEXEC);
}

Test(loader, refuses_a_plugin_without_the_entry_symbol)
{
	struct graid_backend *be;

	cr_assert_eq(graid_backend_open("testnosym", &be), -ENOEXEC);
}

Test(loader, a_plugin_whose_probe_finds_nothing_is_enodev)
{
	struct graid_backend *be;

	cr_assert_eq(graid_backend_open("testnodev", &be), -ENODEV);
}

static char loader_log[4096];

static void loader_log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	snprintf(loader_log + strlen(loader_log), sizeof(loader_log) - strlen(loader_log), "%s\n",
		 msg);
}

Test(loader, a_probe_that_finds_nothing_says_why_in_the_log)
{
	struct graid_backend *be;

	graid_log_set(loader_log_keep, NULL, GRAID_LOG_DEBUG);
	cr_assert_eq(graid_backend_open("testnodev", &be), -ENODEV);
	graid_log_set(NULL, NULL, GRAID_LOG_DEBUG);
	cr_assert(strstr(loader_log, "test plugin testnodev: no device on purpose"),
		  "log: %s", loader_log);
}

/* Engines that tools/bootstrap requires on this machine: each must open (else: why not). */
Test(loader, every_engine_required_here_is_usable)
{
	const char *req = getenv("GRAID_TEST_REQUIRE_ENGINES");
	char name[32];

	if (!req || !*req)
		cr_skip_test("GRAID_TEST_REQUIRE_ENGINES is not set: no engine is required here");
	for (const char *p = req; *p;) {
		size_t len = strcspn(p, ",");

		snprintf(name, sizeof(name), "%.*s", (int)len, p);
		tu_engine_need(name); /* fails, with the probe's reason, for a required engine */
		p += len + (p[len] == ',');
	}
}

Test(loader, a_known_engine_not_usable_here_is_enodev_not_einval)
{
	struct graid_backend *be;
	int rc;

	/* Point the search at an empty place so neither built nor installed copies are seen. */
	setenv("GRAID_BACKEND_PATH", "/nonexistent", 1);
	rc = graid_backend_open("cuda", &be);
	if (rc == 0)
		graid_backend_close(be);
	cr_assert(rc == -ENODEV || rc == 0, "cuda: %s", graid_strerror(rc));
	cr_assert_eq(graid_backend_open("nosuchengine", &be), -EINVAL);
}

Test(loader, null_name_follows_the_environment)
{
	struct graid_backend *be;

	setenv("GRAID_BACKEND", "ref", 1);
	cr_assert_eq(graid_backend_open(NULL, &be), 0);
	cr_assert_str_eq(graid_backend_name(be), "ref");
	graid_backend_close(be);
	setenv("GRAID_BACKEND", "nosuchengine", 1);
	cr_assert_eq(graid_backend_open(NULL, &be), -EINVAL);
}

/* Auto's candidates: the built-in CPU engines, and plugins that run on an accelerator. */
static bool auto_candidate(const struct graid_backend_desc *d)
{
	return !strcmp(d->name, "ref") || !strcmp(d->name, "isal") ||
	       (d->flags & GRAID_BACKEND_F_ACCELERATOR);
}

Test(loader, auto_opens_the_fastest_measured_candidate)
{
	struct graid_backend_desc d[8];
	struct graid_backend *be;
	double best = 0;
	int n;

	for (int i = 0; i < 8; i++)
		d[i].struct_size = sizeof(d[i]);
	cr_assert_eq(graid_backend_open("auto", &be), 0);
	n = graid_backend_list(d, 8, 0);
	cr_assert_geq(n, 4);
	for (int i = 0; i < n && i < 8; i++) {
		if (d[i].status == 0)
			cr_assert_gt(d[i].gen_gbps, 0, "%s usable but not measured", d[i].name);
		if (auto_candidate(&d[i]) && d[i].gen_gbps > best)
			best = d[i].gen_gbps;
	}
	for (int i = 0; i < n && i < 8; i++)
		if (!strcmp(d[i].name, graid_backend_name(be))) {
			cr_assert(auto_candidate(&d[i]),
				  "auto chose %s, a plugin on the host CPU (flags %#x)", d[i].name,
				  d[i].flags);
			cr_assert_eq(d[i].gen_gbps, best, "auto chose %s, not the fastest",
				     d[i].name);
		}
	graid_backend_close(be);
}

Test(loader, list_reports_ref_and_isal_usable)
{
	struct graid_backend_desc d[8];
	int n, seen = 0;

	for (int i = 0; i < 8; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 8, 0);
	for (int i = 0; i < n && i < 8; i++)
		if (!strcmp(d[i].name, "ref") || !strcmp(d[i].name, "isal")) {
			cr_assert_eq(d[i].status, 0);
			cr_assert_str_neq(d[i].device, "");
			seen++;
		}
	cr_assert_eq(seen, 2);
	cr_assert_eq(graid_backend_list(NULL, 0, 0), n);
	cr_assert_eq(graid_backend_list(NULL, 1, 0), -EINVAL);
	d[0].struct_size = 4;
	cr_assert_eq(graid_backend_list(d, 1, 0), -EINVAL);
}

/* An accelerator that fails mid-stream: the caller still gets correct parity. */
Test(failover, a_failing_engine_is_redone_on_the_cpu_and_counted)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	uint64_t rng = tu_seed() ^ 0x666f;
	struct graid_backend *be;
	struct tu_stripes s;
	uint8_t *expect;
	unsigned lost[2] = { 1, 4 };

	setenv("GRAID_TESTFAULT_AFTER", "2", 1);
	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	tu_stripes_alloc(&s, 4, 2, 4096 + 5, 8, &rng, 1);
	for (int i = 0; i < 4; i++) {
		tu_stripes_ref_gen(&s);
		expect = tu_stripes_snapshot(&s);
		for (size_t b = 0; b < s.nblocks; b += 6)
			s.ptr[b + 4][0] ^= 1; /* stale P everywhere */
		cr_assert_eq(graid_parity_gen(be, 4, 2, s.len, s.nstripes, s.ptr), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "round %d: wrong parity", i);
		for (size_t b = 0; b < s.nblocks; b += 6)
			memset(s.ptr[b + 1], 0, s.len);
		cr_assert_eq(graid_parity_recover(be, 4, 2, s.len, s.nstripes, s.ptr, 2, lost), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "round %d: wrong recovery", i);
		free(expect);
	}
	cr_assert_eq(graid_backend_stats(be, &st), 0);
	cr_assert_eq(st.batches, 8);
	cr_assert_eq(st.failovers, 6, "failovers %llu", (unsigned long long)st.failovers);
	tu_stripes_free(&s);
	graid_backend_close(be);
}

static void loader_count_lines(void *arg, int level, const char *msg)
{
	(void)msg;
	if (level <= GRAID_LOG_WARNING)
		(*(unsigned *)arg)++;
}

/*
 * An engine whose device is gone (-ENODEV from a batch: a lost CUDA context) is asked
 * once: that batch and every later one run on the CPU, correct, counted, with one line from
 * the core and none per batch.
 */
Test(failover, an_engine_whose_device_is_gone_is_bypassed_with_one_line)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	uint64_t rng = tu_seed() ^ 0x676f6e;
	struct graid_backend *be;
	struct tu_stripes s;
	unsigned lines = 0, lost[1] = { 2 };
	uint8_t *expect;

	unsetenv("GRAID_TESTFAULT_AFTER");
	setenv("GRAID_TESTFAULT_GONE_AFTER", "1", 1);
	graid_log_set(loader_count_lines, &lines, GRAID_LOG_DEBUG);
	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	tu_stripes_alloc(&s, 5, 2, 3000, 6, &rng, 1);
	tu_stripes_ref_gen(&s);
	expect = tu_stripes_snapshot(&s);
	for (int i = 0; i < 4; i++) {
		for (size_t b = 5; b < s.nblocks; b += 7)
			memset(s.ptr[b], 0, s.len); /* P of every stripe */
		cr_assert_eq(graid_parity_gen(be, 5, 2, s.len, s.nstripes, s.ptr), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "round %d: wrong parity", i);
		for (size_t b = 2; b < s.nblocks; b += 7)
			memset(s.ptr[b], 0xee, s.len);
		cr_assert_eq(graid_parity_recover(be, 5, 2, s.len, s.nstripes, s.ptr, 1, lost), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "round %d: wrong recovery", i);
	}
	cr_assert_eq(graid_backend_stats(be, &st), 0);
	cr_assert_eq(st.failovers, 7, "failovers %llu", (unsigned long long)st.failovers);
	/* The engine's own line when it lost the device, and the core's; nothing per batch. */
	cr_assert_eq(lines, 2, "%u warning or error lines, want 2", lines);
	graid_log_set(NULL, NULL, GRAID_LOG_ERR);
	free(expect);
	tu_stripes_free(&s);
	graid_backend_close(be);
	unsetenv("GRAID_TESTFAULT_GONE_AFTER");
}

/* Registering memory is a no-op where the engine has nothing to prepare; arguments checked. */
Test(loader, registering_memory_is_a_no_op_for_engines_without_it)
{
	struct graid_backend *be;
	static uint8_t buf[8192];

	unsetenv("GRAID_TESTFAULT_AFTER");
	unsetenv("GRAID_TESTFAULT_GONE_AFTER");
	cr_assert_eq(graid_backend_register_memory(NULL, buf, sizeof(buf)), -EINVAL);
	cr_assert_eq(graid_backend_unregister_memory(NULL, buf), -EINVAL);
	cr_assert_eq(graid_backend_open("isal", &be), 0);
	cr_assert_eq(graid_backend_register_memory(be, NULL, 1), -EINVAL);
	cr_assert_eq(graid_backend_register_memory(be, buf, 0), -EINVAL);
	cr_assert_eq(graid_backend_register_memory(be, buf, sizeof(buf)), 0);
	cr_assert_eq(graid_backend_unregister_memory(be, buf), 0);
	graid_backend_close(be);
	/* A plugin built without the operations (a shorter table would be the same). */
	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	cr_assert_eq(graid_backend_register_memory(be, buf, sizeof(buf)), 0);
	cr_assert_eq(graid_backend_unregister_memory(be, buf), 0);
	graid_backend_close(be);
}

/* check is optional in the ABI; an engine without it is served by the CPU. */
Test(failover, an_engine_without_check_is_checked_on_the_cpu)
{
	uint64_t rng = tu_seed() ^ 0x6e63;
	struct graid_backend *be;
	struct tu_stripes s;
	int32_t res[3];

	unsetenv("GRAID_TESTFAULT_AFTER");
	cr_assert_eq(graid_backend_open("testfault", &be), 0);
	tu_stripes_alloc(&s, 5, 2, 1000, 3, &rng, 0);
	tu_stripes_ref_gen(&s);
	s.ptr[7 + 2][10] ^= 0x80;
	cr_assert_eq(graid_parity_check(be, 5, 2, 1000, 3, s.ptr, res), 1);
	cr_assert_eq(res[0], GRAID_CHECK_CLEAN);
	cr_assert_eq(res[1], 2);
	cr_assert_eq(res[2], GRAID_CHECK_CLEAN);
	tu_stripes_free(&s);
	graid_backend_close(be);
}

/* A plugin engine that fails mid-stream (OpenCL's debug switch) is redone on the CPU too. */
Test(failover, a_failing_opencl_batch_is_redone_on_the_cpu)
{
	struct graid_backend_stats st = { .struct_size = sizeof(st) };
	uint64_t rng = tu_seed() ^ 0x6f636c;
	struct graid_backend *be;
	struct tu_stripes s;
	uint8_t *expect;

	setenv("GRAID_OPENCL_FAIL_AFTER", "1", 1);
	tu_engine_need("opencl");
	cr_assert_eq(graid_backend_open("opencl", &be), 0);
	tu_stripes_alloc(&s, 6, 2, 8192, 4, &rng, 0);
	tu_stripes_ref_gen(&s);
	expect = tu_stripes_snapshot(&s);
	for (int i = 0; i < 3; i++) {
		for (size_t b = 6; b < s.nblocks; b += 8)
			memset(s.ptr[b], 0, s.len); /* P of every stripe */
		cr_assert_eq(graid_parity_gen(be, 6, 2, s.len, s.nstripes, s.ptr), 0);
		cr_assert_eq(tu_stripes_diff(&s, expect), -1, "round %d", i);
	}
	cr_assert_eq(graid_backend_stats(be, &st), 0);
	cr_assert_eq(st.failovers, 2, "batches after the first failed over: %llu",
		     (unsigned long long)st.failovers);
	free(expect);
	tu_stripes_free(&s);
	graid_backend_close(be);
}
