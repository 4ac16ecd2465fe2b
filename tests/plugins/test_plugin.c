/* SPDX-License-Identifier: MIT */
/*
 * A plugin engine built only for the tests, in several variants chosen at compile time:
 * a good one that can be told to fail (failover), and broken ones the loader must refuse.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <libgraid/graid_backend.h>

#ifndef TP_NAME
#error "TP_NAME must name the variant"
#endif

/*
 * testfault: fails every batch after GRAID_TESTFAULT_AFTER successful ones (default never);
 * after GRAID_TESTFAULT_GONE_AFTER ones, loses its "device": -ENODEV for every later batch,
 * as the CUDA engine does after a lost context.
 */
struct graid_engine {
	atomic_long calls;
	long fail_after;
	long gone_after;
	void (*log)(int level, const char *fmt, ...);
};

static int tp_probe(struct graid_backend_info *info)
{
#ifdef TP_NO_DEVICE
	/* The reason travels out in the device field (graid_backend.h). */
	snprintf(info->device, sizeof(info->device), "test plugin %s: no device on purpose",
		 TP_NAME);
	return -ENODEV;
#else
	snprintf(info->device, sizeof(info->device), "test plugin %s", TP_NAME);
	/* Claim to be an accelerator so the core wires a CPU fallback, as for a GPU. */
	info->flags = GRAID_BACKEND_F_ACCELERATOR;
	return 0;
#endif
}

static int tp_open(struct graid_engine **out, const struct graid_backend_config *cfg)
{
	struct graid_engine *e = calloc(1, sizeof(*e));
	const char *env = getenv("GRAID_TESTFAULT_AFTER");

	if (!e)
		return -ENOMEM;
	e->fail_after = env ? atol(env) : -1;
	env = getenv("GRAID_TESTFAULT_GONE_AFTER");
	e->gone_after = env ? atol(env) : -1;
	e->log = cfg->log;
	*out = e;
	return 0;
}

static void tp_close(struct graid_engine *e)
{
	free(e);
}

/* 0, or the error this batch fails with. */
static int tp_should_fail(struct graid_engine *e)
{
	long n = atomic_fetch_add(&e->calls, 1);

	if (e->gone_after >= 0 && n >= e->gone_after) {
		/* Logged on every call: a core that keeps calling a gone engine shows in the log. */
		e->log(GRAID_LOG_ERR, n == e->gone_after ? "testfault: device lost on batch %ld" :
			"testfault: batch %ld given to an engine whose device is gone", n);
		return -ENODEV;
	}
	if (e->fail_after >= 0 && n >= e->fail_after) {
		e->log(GRAID_LOG_ERR, "testfault: injected failure on batch %ld", n);
		return -EIO;
	}
	return 0;
}

__attribute__((unused)) static int tp_gen(struct graid_engine *e,
					  const struct graid_stripe_batch *b)
{
	int rc = tp_should_fail(e);

	if (rc) {
		/* Scribble on the parity first: a failing device may leave anything behind. */
		for (size_t s = 0; s < b->nstripes; s++)
			b->blocks[s * (b->ndata + b->nparity) + b->ndata][0] ^= 0xff;
		return rc;
	}
	for (size_t s = 0; s < b->nstripes; s++)
		graid_gf_ref_gen(b->ndata, b->nparity, 0, b->len,
				 b->blocks + s * (b->ndata + b->nparity));
	return 0;
}

static int tp_recover(struct graid_engine *e, const struct graid_stripe_batch *b)
{
	int rc = tp_should_fail(e);

	if (rc)
		return rc;
	for (size_t s = 0; s < b->nstripes; s++)
		graid_gf_ref_recover(b->ndata, b->nparity, 0, b->len,
				     b->blocks + s * (b->ndata + b->nparity), b->nlost, b->lost);
	return 0;
}

static const struct graid_backend_ops tp_ops = {
	GRAID_BACKEND_OPS_HEADER,
#ifdef TP_BAD_ABI
	.abi_version = 99,
#endif
	.name = TP_NAME,
	.description = "test plugin",
	.probe = tp_probe,
	.open = tp_open,
	.close = tp_close,
#ifndef TP_MISSING_GEN
	.gen = tp_gen,
#endif
	.recover = tp_recover,
};

#ifdef TP_NO_SYMBOL
__attribute__((visibility("default"))) const struct graid_backend_ops *not_the_entry(void);
__attribute__((visibility("default"))) const struct graid_backend_ops *not_the_entry(void)
#else
__attribute__((visibility("default"))) const struct graid_backend_ops *graid_backend_plugin(void);
__attribute__((visibility("default"))) const struct graid_backend_ops *graid_backend_plugin(void)
#endif
{
	return &tp_ops;
}
