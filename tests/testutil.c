/* SPDX-License-Identifier: MIT */
/* Helpers shared by the test suites: seeded random data, guarded buffers, stripe sets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "testutil.h"

uint64_t tu_seed(void)
{
	static uint64_t seed;

	if (!seed) {
		const char *env = getenv("GRAID_TEST_SEED");
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = env && *env ? strtoull(env, NULL, 0)
				   : (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^
					     ((uint64_t)getpid() << 40);
		if (!seed)
			seed = 1;
		fprintf(stderr, "test seed: GRAID_TEST_SEED=%llu\n", (unsigned long long)seed);
	}
	return seed;
}

uint64_t tu_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

void tu_fill(uint64_t *state, uint8_t *p, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t r = tu_rand(state);

		memcpy(p + i, &r, 8);
	}
	if (i < n) {
		uint64_t r = tu_rand(state);

		memcpy(p + i, &r, n - i);
	}
}

void tu_block_alloc(struct tu_block *b, size_t len, bool head_guard, size_t misalign)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t data_pages = (len + misalign + pg - 1) / pg;
	uint8_t *m;

	b->map_len = (data_pages + 2) * pg;
	m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		abort();
	mprotect(m, pg, PROT_NONE);
	mprotect(m + (data_pages + 1) * pg, pg, PROT_NONE);
	b->map = m;
	if (head_guard)
		b->p = m + pg + misalign;
	else
		b->p = m + (data_pages + 1) * pg - len;
}

void tu_block_free(struct tu_block *b)
{
	munmap(b->map, b->map_len);
}

/*
 * align_mode 0: every block 64-byte aligned (head-guarded); 1: all blocks equally
 * misaligned; 2: each block misaligned differently; 3: tail-guarded (ends at a page).
 */
void tu_stripes_alloc(struct tu_stripes *s, unsigned ndata, unsigned nparity, size_t len,
		      size_t nstripes, uint64_t *rng, int align_mode)
{
	size_t common = 1 + tu_rand(rng) % 63;

	s->ndata = ndata;
	s->nparity = nparity;
	s->len = len;
	s->nstripes = nstripes;
	s->nblocks = nstripes * (ndata + nparity);
	s->blk = calloc(s->nblocks, sizeof(*s->blk));
	s->ptr = calloc(s->nblocks, sizeof(*s->ptr));
	for (size_t i = 0; i < s->nblocks; i++) {
		switch (align_mode) {
		case 0:
			tu_block_alloc(&s->blk[i], len, true, 0);
			break;
		case 1:
			tu_block_alloc(&s->blk[i], len, true, common);
			break;
		case 2:
			tu_block_alloc(&s->blk[i], len, true, tu_rand(rng) % 64);
			break;
		default:
			tu_block_alloc(&s->blk[i], len, false, 0);
			break;
		}
		s->ptr[i] = s->blk[i].p;
		tu_fill(rng, s->ptr[i], len);
	}
}

void tu_stripes_free(struct tu_stripes *s)
{
	for (size_t i = 0; i < s->nblocks; i++)
		tu_block_free(&s->blk[i]);
	free(s->blk);
	free(s->ptr);
}

void tu_stripes_ref_gen(struct tu_stripes *s)
{
	for (size_t st = 0; st < s->nstripes; st++)
		graid_gf_ref_gen(s->ndata, s->nparity, 0, s->len,
				 s->ptr + st * (s->ndata + s->nparity));
}

uint8_t *tu_stripes_snapshot(const struct tu_stripes *s)
{
	uint8_t *snap = malloc(s->nblocks * s->len);

	for (size_t i = 0; i < s->nblocks; i++)
		memcpy(snap + i * s->len, s->ptr[i], s->len);
	return snap;
}

long tu_stripes_diff(const struct tu_stripes *s, const uint8_t *snap)
{
	for (size_t i = 0; i < s->nblocks; i++)
		if (memcmp(snap + i * s->len, s->ptr[i], s->len))
			return (long)i;
	return -1;
}

uint8_t **tu_snapshot_ptrs(const struct tu_stripes *s, uint8_t *snap)
{
	uint8_t **p = malloc(s->nblocks * sizeof(*p));

	for (size_t i = 0; i < s->nblocks; i++)
		p[i] = snap + i * s->len;
	return p;
}

bool tu_engine_usable(const char *name, int *why)
{
	struct graid_backend *be;
	int rc = graid_backend_open(name, &be);

	if (why)
		*why = rc;
	if (rc)
		return false;
	graid_backend_close(be);
	return true;
}

/* Whether name is an item of a comma-separated list. */
static bool tu_list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

bool tu_engine_selected(const char *name)
{
	const char *sel = getenv("GRAID_TEST_BACKENDS");

	return !sel || !*sel || tu_list_has(sel, name);
}

bool tu_engine_required(const char *name)
{
	return tu_list_has(getenv("GRAID_TEST_REQUIRE_ENGINES"), name);
}

void tu_engine_why(const char *name, char *buf, size_t len)
{
	struct graid_backend_desc d[16];
	int n;

	snprintf(buf, len, "not listed by graid_backend_list()");
	for (unsigned i = 0; i < 16; i++)
		d[i].struct_size = sizeof(d[i]);
	n = graid_backend_list(d, 16, 0);
	for (int i = 0; i < n && i < 16; i++)
		if (!strcmp(d[i].name, name))
			snprintf(buf, len, "%s%s%s", graid_strerror(d[i].status),
				 d[i].device[0] ? ": " : "", d[i].device);
}

void tu_engine_need(const char *name)
{
	char why[256];
	int rc;

	if (tu_engine_usable(name, &rc))
		return;
	tu_engine_why(name, why, sizeof(why));
	if (tu_engine_required(name))
		cr_assert_fail("engine %s is required on this machine (GRAID_TEST_REQUIRE_ENGINES=%s) "
			     "but not usable: %s (open: %s)",
			     name, getenv("GRAID_TEST_REQUIRE_ENGINES"), why, graid_strerror(rc));
	cr_skip_test("engine %s not usable on this machine: %s", name, why);
}

void tu_need_fault_injection(void)
{
#if !GRAID_FAULT_INJECTION
	cr_skip_test("fault injection is compiled out of this build (-Dfault_injection=disabled, "
		     "the default of -Dbuildtype=release): no \"faulty:\" members, no read seam");
#endif
}

int tu_sweep(int full)
{
	const char *e = getenv("GRAID_TEST_SWEEP");

	if (!e || strcmp(e, "short") || full <= 4)
		return full;
	return full / 4 < 4 ? 4 : full / 4;
}

void tu_put_file(const char *path, const char *text)
{
	char tmp[400];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	f = fopen(tmp, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(rename(tmp, path), 0);
}
