/* SPDX-License-Identifier: MIT */
/* The "ref" engine: plain byte-wise C, always built, the oracle every engine is tested against. */
#include <stdio.h>

#include "common/internal.h"
#include "engine/engine.h"

static int ref_probe(struct graid_backend_info *info)
{
	snprintf(info->device, sizeof(info->device), "portable C, byte at a time");
	info->flags = GRAID_BACKEND_F_HOST_MEMORY;
	return 0;
}

/* The engine is stateless; a non-NULL token lets the core tell "open" from "not open". */
static int ref_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	static char token;

	(void)cfg;
	*out = (struct graid_engine *)&token;
	return 0;
}

static void ref_close(struct graid_engine *e)
{
	(void)e;
}

static uint8_t *const *ref_stripe(const struct graid_stripe_batch *b, size_t s)
{
	return b->blocks + s * (b->ndata + b->nparity);
}

static int ref_gen(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	(void)e;
	for (size_t s = 0; s < b->nstripes; s++)
		graid_gf_ref_gen(b->ndata, b->nparity, 0, b->len, ref_stripe(b, s));
	return 0;
}

static int ref_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	(void)e;
	for (size_t s = 0; s < b->nstripes; s++)
		graid_gf_ref_recover(b->ndata, b->nparity, 0, b->len, ref_stripe(b, s),
				     b->nlost, b->lost);
	return 0;
}

static long ref_check(struct graid_engine *e, const struct graid_stripe_batch *b,
		      int32_t *result)
{
	long bad = 0;

	(void)e;
	for (size_t s = 0; s < b->nstripes; s++) {
		int v = graid_gf_ref_check(b->ndata, b->nparity, b->len, ref_stripe(b, s));

		if (result)
			result[s] = v;
		bad += v != GRAID_CHECK_CLEAN;
	}
	return bad;
}

static const struct graid_backend_ops ref_ops = {
	GRAID_BACKEND_OPS_HEADER,
	.name = "ref",
	.description = "reference engine: plain C, the test oracle",
	.probe = ref_probe,
	.open = ref_open,
	.close = ref_close,
	.gen = ref_gen,
	.recover = ref_recover,
	.check = ref_check,
};

const struct graid_backend_ops *graid__ref_ops(void)
{
	return &ref_ops;
}
