/* SPDX-License-Identifier: MIT */
/* The public parity calls: argument checks, dispatch to the engine, failover to the CPU. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* Everything the engines are promised by graid_backend.h is established here, once. */
static int parity_check_args(const struct graid_backend *be, unsigned ndata,
			     unsigned nparity, size_t len, size_t nstripes,
			     uint8_t *const *blocks)
{
	size_t nblocks;

	if (!be || !blocks || len == 0 || nstripes == 0)
		return -EINVAL;
	if (ndata < 1 || ndata > GRAID_GF_MAX_DATA || (nparity != 1 && nparity != 2))
		return -EINVAL;
	if (nstripes > SIZE_MAX / (ndata + nparity))
		return -EINVAL;
	nblocks = nstripes * (ndata + nparity);
	for (size_t i = 0; i < nblocks; i++)
		if (!blocks[i])
			return -EINVAL;
	return 0;
}

static void parity_count(struct graid_backend *be, const struct graid_stripe_batch *b)
{
	atomic_fetch_add_explicit(&be->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&be->stripes, b->nstripes, memory_order_relaxed);
	atomic_fetch_add_explicit(&be->bytes,
				  (uint64_t)b->nstripes * (b->ndata + b->nparity) * b->len,
				  memory_order_relaxed);
}

/* An accelerator failing is not a data failure: the batch is redone on the CPU engine. */
static bool parity_should_fail_over(const struct graid_backend *be, long rc, const char *op)
{
	if (rc >= 0 || rc == -EINVAL || !be->fallback)
		return false;
	atomic_fetch_add_explicit((atomic_uint_fast64_t *)&be->failovers, 1,
				  memory_order_relaxed);
	graid__log(GRAID_LOG_WARNING, "engine %s failed %s (%s); batch redone on %s",
		   be->ops->name, op, graid_strerror((int)rc), be->fallback->ops->name);
	return true;
}

/* A fallback that fails too has no better answer than "the parity could not be computed". */
static long parity_fallback_result(long rc)
{
	return rc < 0 && rc != -EINVAL && rc != -ENOMEM ? -EIO : rc;
}

GRAID_API int graid_parity_gen(struct graid_backend *be, unsigned ndata, unsigned nparity,
			       size_t len, size_t nstripes, uint8_t *const *blocks)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks,
	};
	int rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	rc = be->ops->gen(be->engine, &b);
	if (parity_should_fail_over(be, rc, "gen"))
		rc = (int)parity_fallback_result(
			be->fallback->ops->gen(be->fallback->engine, &b));
	if (rc == 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API int graid_parity_recover(struct graid_backend *be, unsigned ndata,
				   unsigned nparity, size_t len, size_t nstripes,
				   uint8_t *const *blocks, unsigned nlost,
				   const unsigned *lost)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks, .nlost = nlost,
	};
	int rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	if (nlost > nparity || (nlost && !lost))
		return -EINVAL;
	for (unsigned i = 0; i < nlost; i++) {
		if (lost[i] >= ndata + nparity)
			return -EINVAL;
		b.lost[i] = lost[i];
	}
	if (nlost == 2) {
		if (b.lost[0] == b.lost[1])
			return -EINVAL;
		if (b.lost[0] > b.lost[1]) {
			unsigned t = b.lost[0];

			b.lost[0] = b.lost[1];
			b.lost[1] = t;
		}
	}
	if (nlost == 0)
		return 0;
	rc = be->ops->recover(be->engine, &b);
	if (parity_should_fail_over(be, rc, "recover"))
		rc = (int)parity_fallback_result(
			be->fallback->ops->recover(be->fallback->engine, &b));
	if (rc == 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API long graid_parity_check(struct graid_backend *be, unsigned ndata,
				  unsigned nparity, size_t len, size_t nstripes,
				  uint8_t *const *blocks, int32_t *result)
{
	struct graid_stripe_batch b = {
		.struct_size = sizeof(b), .ndata = ndata, .nparity = nparity,
		.len = len, .nstripes = nstripes, .blocks = blocks,
	};
	const struct graid_backend *cpu;
	long rc = parity_check_args(be, ndata, nparity, len, nstripes, blocks);

	if (rc)
		return rc;
	if (be->ops->check) {
		rc = be->ops->check(be->engine, &b, result);
		if (parity_should_fail_over(be, rc, "check") && be->fallback->ops->check)
			rc = parity_fallback_result(
				be->fallback->ops->check(be->fallback->engine, &b, result));
	} else {
		/* check is optional in the ABI: an engine without it is served by the CPU. */
		cpu = be->fallback;
		rc = cpu && cpu->ops->check ? cpu->ops->check(cpu->engine, &b, result)
					    : graid__ref_ops()->check(NULL, &b, result);
	}
	if (rc >= 0)
		parity_count(be, &b);
	return rc;
}

GRAID_API int graid_backend_stats(const struct graid_backend *be,
				  struct graid_backend_stats *stats)
{
	struct graid_backend_stats s = { .struct_size = sizeof(s) };

	if (!be || !stats || stats->struct_size < offsetof(struct graid_backend_stats, failovers) +
							  sizeof(stats->failovers))
		return -EINVAL;
	s.batches = atomic_load(&((struct graid_backend *)be)->batches);
	s.stripes = atomic_load(&((struct graid_backend *)be)->stripes);
	s.bytes = atomic_load(&((struct graid_backend *)be)->bytes);
	s.failovers = atomic_load(&((struct graid_backend *)be)->failovers);
	s.struct_size = stats->struct_size < sizeof(s) ? stats->struct_size : sizeof(s);
	memcpy(stats, &s, s.struct_size);
	return 0;
}
