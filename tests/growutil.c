/* SPDX-License-Identifier: MIT */
/* Helpers of the grow suites (growutil.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arrayutil.h"
#include "growutil.h"
#include "jobs/reshape_grow.h"

#define GU_BLK 4096u

char gu_log_text[65536];
static pthread_mutex_t gu_log_lock = PTHREAD_MUTEX_INITIALIZER;

void gu_log_keep(void *arg, int level, const char *msg)
{
	(void)arg;
	(void)level;
	pthread_mutex_lock(&gu_log_lock);
	if (strlen(gu_log_text) + strlen(msg) + 2 < sizeof(gu_log_text)) {
		strcat(gu_log_text, msg);
		strcat(gu_log_text, "\n");
	}
	pthread_mutex_unlock(&gu_log_lock);
}

void gu_log_clear(void)
{
	pthread_mutex_lock(&gu_log_lock);
	gu_log_text[0] = '\0';
	pthread_mutex_unlock(&gu_log_lock);
}

uint64_t gu_rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

void gu_fill(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i += 8) {
		uint64_t v = gu_rng(&seed);

		memcpy(p + i, &v, 8);
	}
}

uint64_t gu_array_bytes(struct graid_array *a, unsigned *nmembers)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	if (nmembers)
		*nmembers = info.nmembers;
	return info.size;
}

void gu_assert_level(struct graid_array *a, int level, unsigned n, const char *when)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };

	cr_assert_eq(graid_array_info(a, &info), 0);
	cr_assert_eq(info.level, level, "%s: RAID-%d, not %d", when, info.level, level);
	cr_assert_eq(info.nmembers, n, "%s: %u members, not %u", when, info.nmembers, n);
}

uint8_t *gu_make_q_last(struct au_set *s, unsigned nfiles, uint64_t bytes, uint32_t chunk,
			struct graid_array **out, uint64_t *size, uint64_t seed)
{
	uint8_t *model;

	au_make(s, nfiles, bytes);
	cr_assert_eq(au_create(s, 4, 5, chunk, out), 0);
	*size = gu_array_bytes(*out, NULL);
	model = aligned_alloc(4096, *size);
	cr_assert_not_null(model);
	gu_fill(model, *size, seed);
	cr_assert_eq(graid_array_write(*out, model, *size, 0), (ssize_t)*size);
	cr_assert_eq(graid_array_grow(*out, &s->paths[4], 1, GRAID_GROW_RAID6 | GRAID_GROW_WAIT),
		     0, "%s", gu_log_text);
	gu_assert_level(*out, 6, 5, "converted to RAID-6");
	return model;
}

unsigned gu_ndata(int level, unsigned n)
{
	return level == 0 ? n : level == 5 ? n - 1 : n - 2;
}

void gu_check_all(struct graid_array *a, const uint8_t *model, uint64_t size)
{
	uint8_t *got = aligned_alloc(GU_BLK, size);

	cr_assert_not_null(got);
	cr_assert_eq(graid_array_read(a, got, size, 0), (ssize_t)size);
	for (uint64_t at = 0; at < size; at += GU_BLK)
		cr_assert(!memcmp(got + at, model + at, GU_BLK), "block at %llu differs",
			  (unsigned long long)at);
	free(got);
}

void gu_check_but(struct graid_array *a, const uint8_t *model, uint64_t size, uint64_t lost,
		  const char *when)
{
	uint8_t *got = aligned_alloc(GU_BLK, GU_BLK);

	cr_assert_not_null(got);
	for (uint64_t at = 0; at < size; at += GU_BLK) {
		ssize_t n = graid_array_read(a, got, GU_BLK, at);

		if (at == lost) {
			cr_assert_eq(n, -EIO, "%s: the lost block at %llu read %zd", when,
				     (unsigned long long)at, n);
			continue;
		}
		cr_assert_eq(n, (ssize_t)GU_BLK, "%s: read at %llu: %zd", when,
			     (unsigned long long)at, n);
		cr_assert(!memcmp(got, model + at, GU_BLK), "%s: block at %llu differs", when,
			  (unsigned long long)at);
	}
	free(got);
}

void gu_scrub_clean(struct graid_array *a, const char *when)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };

	for (unsigned i = 0; i < 4000; i++) {
		cr_assert_eq(graid_array_info(a, &info), 0);
		if (!info.unclean)
			break;
		usleep(5000);
	}
	cr_assert_eq(info.unclean, 0, "%s: the resync did not end", when);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0, "%s: the scrub failed", when);
	cr_assert_eq(rep.mismatches, 0, "%s: %llu stripes mismatch (first row %llu)", when,
		     (unsigned long long)rep.mismatches, (unsigned long long)rep.stripe[0]);
	cr_assert_gt(rep.stripes_checked, 0, "%s: checked %llu skipped %llu", when,
		     (unsigned long long)rep.stripes_checked, (unsigned long long)rep.skipped);
}

void gu_slow_down(struct graid_array *a, uint64_t bytes_per_sec)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .max_bytes_per_sec = bytes_per_sec };

	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
}

void gu_full_speed_under_load(struct graid_array *a)
{
	struct graid_rebuild_options o = { .struct_size = sizeof(o),
					   .busy_bytes_per_sec = UINT64_MAX };

	cr_assert_eq(graid_array_set_rebuild_options(a, &o), 0);
}

struct gu_waiter {
	struct graid_array *a;
	atomic_bool done;
	int rc;
};

static void *gu_wait_job(void *arg)
{
	struct gu_waiter *w = arg;

	w->rc = reshape_job_wait(w->a);
	atomic_store(&w->done, true);
	return NULL;
}

/* One request of gu_io_during(): a write-zeroes, a write or a read, the model kept. */
static void gu_io_one(struct graid_array *a, uint8_t *model, uint8_t *buf, uint64_t len,
		      uint64_t off, uint64_t *seed, bool zeroes)
{
	if (zeroes && gu_rng(seed) % 8 == 0) {
		cr_assert_eq(graid_array_write_zeroes(a, off, len), 0);
		memset(model + off, 0, len);
	} else if (gu_rng(seed) % 2) {
		gu_fill(buf, len, gu_rng(seed));
		cr_assert_eq(graid_array_write(a, buf, len, off), (ssize_t)len, "write at %llu",
			     (unsigned long long)off);
		memcpy(model + off, buf, len);
	} else {
		cr_assert_eq(graid_array_read(a, buf, len, off), (ssize_t)len);
		cr_assert(!memcmp(buf, model + off, len), "read at %llu +%llu wrong",
			  (unsigned long long)off, (unsigned long long)len);
	}
}

uint64_t gu_io_during(struct graid_array *a, uint8_t *model, uint64_t size, uint64_t *seed,
		      const struct gu_io_opts *o)
{
	struct gu_waiter w = { .a = a };
	uint64_t ops = 0, during = 0;
	uint8_t *buf = aligned_alloc(GU_BLK, o->max_len);
	pthread_t t;

	cr_assert_not_null(buf);
	cr_assert_eq(pthread_create(&t, NULL, gu_wait_job, &w), 0);
	while (!atomic_load(&w.done) || ops < 64) {
		uint64_t len = (1 + gu_rng(seed) % (o->max_len / GU_BLK)) * GU_BLK;
		uint64_t off = gu_rng(seed) % ((size - len) / GU_BLK + 1) * GU_BLK;

		gu_io_one(a, model, buf, len, off, seed, o->zeroes);
		ops++;
		during += !atomic_load(&w.done);
		if (o->unslow_after && ops == o->unslow_after)
			gu_slow_down(a, 0);
	}
	pthread_join(t, NULL);
	free(buf);
	cr_assert_eq(w.rc, 0, "the reshape's job ended %d", w.rc);
	cr_log_info("%llu requests, %llu of them while the reshape ran",
		    (unsigned long long)ops, (unsigned long long)during);
	return during;
}

void gu_grow_with_io(struct graid_array *a, struct au_set *s, unsigned nold, uint8_t *model,
		     uint64_t size, uint64_t seed, uint64_t max_len)
{
	uint64_t during;

	gu_slow_down(a, 4u << 20);
	cr_assert_eq(graid_array_grow(a, &s->paths[nold], 1, 0), 0);
	during = gu_io_during(a, model, size, &seed,
			      &(struct gu_io_opts){ .max_len = max_len, .zeroes = true });
	cr_assert_gt(during, 20, "too few requests ran during the reshape");
	gu_check_all(a, model, size);
	gu_scrub_clean(a, "after I/O during the grow");
	cr_assert_eq(graid_array_close(a), 0);
	cr_assert_eq(graid_array_open(s->paths, nold + 1, NULL, &a), 0);
	gu_check_all(a, model, size);
	cr_assert_eq(graid_array_close(a), 0);
}
