/* SPDX-License-Identifier: MIT */
/*
 * cuda_rt.h on the CPU, for testing the CUDA engine's host logic without a GPU. Work queued
 * on a stream runs only when an event after it is waited for, as late as a real device
 * could run it: a pipeline that reads results before waiting, or refills a staging buffer
 * that a queued copy still reads, gets wrong bytes and fails the test. Kernels run the
 * engine's own item function (cuda_item.h) on the host.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_item.h"
#include "cuda_rt.h"
#include "cuda_rt_emul.h"

struct cuda_emul_knobs cuda_emul_knobs = { .fail_launch_after = -1, .sticky_fault_after = -1 };
struct cuda_emul_stats cuda_emul_stats;

enum emul_kind { EMUL_H2D, EMUL_D2H, EMUL_LAUNCH, EMUL_RECORD };

struct emul_op {
	enum emul_kind kind;
	void *dst;
	const void *src;
	size_t n;
	struct cuda_kparams kp;       /* copied at launch, as the real runtime does */
	uint64_t seq;                 /* launch: how many launches came before it */
	struct cuda_rt_event *ev;
};

struct cuda_rt_stream {
	struct emul_op *ops;
	size_t n, cap;
};

struct cuda_rt_event {
	struct cuda_rt_stream *s;     /* stream recorded on; NULL if never recorded */
};

struct cuda_rt {
	cuda_log_fn log;
	struct cuda_rt_stream *streams[16];
	unsigned nstreams;
};

/* Registered host ranges, the caller's and the engine's. */
struct emul_reg {
	uintptr_t lo, hi;
	bool caller;
};
static struct emul_reg emul_regs[4096];
static unsigned emul_nregs;

/* The device's one context in the process, shared by every engine, as CUDA's primary one. */
static bool emul_lost;
static _Thread_local int emul_current;

void cuda_emul_reset(void)
{
	memset(&cuda_emul_knobs, 0, sizeof(cuda_emul_knobs));
	cuda_emul_knobs.fail_launch_after = -1;
	cuda_emul_knobs.sticky_fault_after = -1;
	memset(&cuda_emul_stats, 0, sizeof(cuda_emul_stats));
	emul_nregs = 0;
	emul_lost = false;
}

int cuda_emul_current_device(void)
{
	return emul_current;
}

void cuda_emul_set_current_device(int device)
{
	emul_current = device;
}

/* Every runtime call starts here: counted, and failing once the context is lost. */
static int emul_call(void)
{
	__atomic_add_fetch(&cuda_emul_stats.calls, 1, __ATOMIC_RELAXED);
	return emul_lost ? -EIO : 0;
}

const char *cuda_rt_lost(const struct cuda_rt *rt)
{
	(void)rt;
	return emul_lost ? "kernel: an illegal memory access was encountered "
			   "(cudaErrorIllegalAddress, 700; emulated)" : NULL;
}

void cuda_emul_caller_pinned(void *p, uint64_t n)
{
	emul_regs[emul_nregs++] = (struct emul_reg){ (uintptr_t)p, (uintptr_t)p + n, true };
}

static const struct emul_reg *emul_reg_find(uintptr_t lo, uintptr_t hi)
{
	static const struct emul_reg everything = { 0, UINTPTR_MAX, true };

	if (cuda_emul_knobs.all_pinned)
		return &everything;
	for (unsigned i = 0; i < emul_nregs; i++)
		if (lo >= emul_regs[i].lo && hi <= emul_regs[i].hi)
			return &emul_regs[i];
	return NULL;
}

static bool emul_reg_overlaps(uintptr_t lo, uintptr_t hi)
{
	for (unsigned i = 0; i < emul_nregs; i++)
		if (lo < emul_regs[i].hi && emul_regs[i].lo < hi)
			return true;
	return false;
}

int cuda_rt_probe(int device, char *desc, size_t desc_len)
{
	/* The reasons in cuda_rt.c's words, so that the engine's passing them on is tested. */
	if (cuda_emul_knobs.no_device) {
		snprintf(desc, desc_len, "cudaErrorNoDevice (emulated driver 13.0, runtime 13.0): "
			 "no CUDA-capable device is detected");
		return -ENODEV;
	}
	if (device != 0) {
		snprintf(desc, desc_len, "GRAID_CUDA_DEVICE=%d, but the driver lists 1 device",
			 device);
		return -ENODEV;
	}
	if (cuda_emul_knobs.old_device) {
		snprintf(desc, desc_len, "emulated CUDA device (device 0) is sm_70; the engine "
			 "needs sm_80 or newer");
		return -ENODEV;
	}
	snprintf(desc, desc_len, "emulated CUDA device (host memory, deferred streams)");
	return 0;
}

int cuda_rt_open(struct cuda_rt **out, int device, cuda_log_fn log)
{
	struct cuda_rt *rt;

	if (cuda_emul_knobs.no_device || cuda_emul_knobs.old_device || device != 0)
		return -ENODEV;
	if (emul_call())
		return -EIO;
	/* The emulated plugin (tests/gpu/meson.build) is driven through libgraid, which sets
	 * no knob: this one comes from the environment there. */
	if (getenv("GRAID_CUDA_EMUL_STICKY_AFTER"))
		cuda_emul_knobs.sticky_fault_after = atoll(getenv("GRAID_CUDA_EMUL_STICKY_AFTER"));
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->log = log;
	*out = rt;
	return 0;
}

void cuda_rt_close(struct cuda_rt *rt)
{
	free(rt);
}

int cuda_rt_bind(struct cuda_rt *rt, int *prev)
{
	(void)rt;
	*prev = emul_current;
	if (emul_call())
		return -EIO;
	emul_current = 0;
	return 0;
}

void cuda_rt_unbind(struct cuda_rt *rt, int prev)
{
	(void)rt;
	(void)emul_call();
	emul_current = prev;
}

bool cuda_rt_host_ptr_is_device_ptr(const struct cuda_rt *rt)
{
	(void)rt;
	return !cuda_emul_knobs.translate_ptrs;
}

int cuda_rt_stream_create(struct cuda_rt *rt, struct cuda_rt_stream **out)
{
	struct cuda_rt_stream *s;

	if (emul_call())
		return -EIO;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	rt->streams[rt->nstreams++] = s;
	*out = s;
	return 0;
}

void cuda_rt_stream_destroy(struct cuda_rt *rt, struct cuda_rt_stream *s)
{
	(void)rt;
	(void)emul_call();
	if (s && s->n && !emul_lost)
		fprintf(stderr, "emul: stream destroyed with %zu queued operations\n", s->n);
	if (s)
		free(s->ops);
	free(s);
}

int cuda_rt_event_create(struct cuda_rt *rt, struct cuda_rt_event **out)
{
	(void)rt;
	if (emul_call())
		return -EIO;
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void cuda_rt_event_destroy(struct cuda_rt *rt, struct cuda_rt_event *ev)
{
	(void)rt;
	free(ev);
}

int cuda_rt_device_alloc(struct cuda_rt *rt, void **out, size_t n)
{
	(void)rt;
	if (emul_call())
		return -EIO;
	*out = malloc(n);
	if (!*out)
		return -ENOMEM;
	/* Garbage, as fresh device memory may hold: the engine must not rely on zeroes. */
	memset(*out, 0xa5, n);
	cuda_emul_stats.device_allocs++;
	return 0;
}

void cuda_rt_device_free(struct cuda_rt *rt, void *p)
{
	(void)rt;
	free(p);
}

int cuda_rt_pinned_alloc(struct cuda_rt *rt, void **out, size_t n)
{
	(void)rt;
	if (emul_call())
		return -EIO;
	if (cuda_emul_knobs.fail_pinned_alloc)
		return -ENOMEM;
	*out = malloc(n);
	if (!*out)
		return -ENOMEM;
	memset(*out, 0x5a, n);
	cuda_emul_stats.pinned_allocs++;
	return 0;
}

void cuda_rt_pinned_free(struct cuda_rt *rt, void *p)
{
	(void)rt;
	free(p);
}

static int emul_push(struct cuda_rt *rt, struct cuda_rt_stream *s, const struct emul_op *op)
{
	unsigned busy = 0;

	if (emul_call())
		return -EIO;
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		struct emul_op *ops = realloc(s->ops, cap * sizeof(*ops));

		if (!ops)
			return -ENOMEM;
		s->ops = ops;
		s->cap = cap;
	}
	s->ops[s->n++] = *op;
	if (op->kind != EMUL_RECORD)
		cuda_emul_stats.queued++;
	for (unsigned i = 0; i < rt->nstreams; i++)
		busy += rt->streams[i]->n != 0;
	if (busy > cuda_emul_stats.max_in_flight)
		cuda_emul_stats.max_in_flight = busy;
	return 0;
}

int cuda_rt_h2d(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s)
{
	return emul_push(rt, s, &(struct emul_op){ .kind = EMUL_H2D, .dst = dst, .src = src,
						  .n = n });
}

int cuda_rt_d2h(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s)
{
	return emul_push(rt, s, &(struct emul_op){ .kind = EMUL_D2H, .dst = dst, .src = src,
						  .n = n });
}

int cuda_rt_launch(struct cuda_rt *rt, const struct cuda_kparams *kp, struct cuda_rt_stream *s)
{
	if (cuda_emul_knobs.fail_launch_after >= 0 &&
	    cuda_emul_stats.launches >= (uint64_t)cuda_emul_knobs.fail_launch_after) {
		(void)emul_call();
		rt->log(GRAID_LOG_ERR, "cuda: kernel launch failed: emulated failure");
		return -EIO;
	}
	return emul_push(rt, s, &(struct emul_op){ .kind = EMUL_LAUNCH, .kp = *kp,
						  .seq = cuda_emul_stats.launches++ });
}

int cuda_rt_record(struct cuda_rt *rt, struct cuda_rt_event *ev, struct cuda_rt_stream *s)
{
	ev->s = s;
	return emul_push(rt, s, &(struct emul_op){ .kind = EMUL_RECORD, .ev = ev });
}

/* A mapped piece may only reach registered memory: check it as the IOMMU would. */
static int emul_check_table(const struct cuda_kparams *kp)
{
	for (uint64_t i = 0; i < (uint64_t)kp->nstripes * kp->nblk; i++) {
		const uintptr_t p = (uintptr_t)kp->table[i];

		if (p && !emul_reg_find(p, p + kp->len)) {
			fprintf(stderr, "emul: kernel reads unregistered host memory %p\n",
				(void *)p);
			return -EIO;
		}
	}
	return 0;
}

static int emul_run(const struct emul_op *op)
{
	if (op->kind != EMUL_RECORD)
		cuda_emul_stats.queued--;
	/* After a sticky error the device runs nothing more: queued work is dropped. */
	if (emul_lost)
		return -EIO;
	switch (op->kind) {
	case EMUL_H2D:
	case EMUL_D2H:
		memcpy(op->dst, op->src, op->n);
		return 0;
	case EMUL_LAUNCH: {
		const uint64_t items = (uint64_t)op->kp.nstripes * op->kp.nvec;

		if (items >= (1ull << 31) || op->kp.nvec != (op->kp.len + 15) / 16) {
			fprintf(stderr, "emul: bad launch geometry\n");
			return -EIO;
		}
		if (op->kp.table && emul_check_table(&op->kp))
			return -EIO;
		if (cuda_emul_knobs.sticky_fault_after >= 0 &&
		    op->seq >= (uint64_t)cuda_emul_knobs.sticky_fault_after) {
			/* Half the items ran before the fault: outputs are part written. */
			for (uint64_t i = 0; i < items / 2; i++)
				cuda_item(&op->kp, (uint32_t)(i / op->kp.nvec),
					  (uint32_t)(i % op->kp.nvec));
			emul_lost = true;
			return -EIO;
		}
		for (uint64_t i = 0; i < items; i++)
			cuda_item(&op->kp, (uint32_t)(i / op->kp.nvec), (uint32_t)(i % op->kp.nvec));
		cuda_emul_stats.items += items;
		return 0;
	}
	case EMUL_RECORD:
		return 0;
	}
	return -EIO;
}

/* Run op unless an earlier one of its stream failed (rc), as a device skips the rest. */
static int emul_run_after(const struct emul_op *op, int rc)
{
	if (!rc)
		return emul_run(op);
	if (op->kind != EMUL_RECORD)
		cuda_emul_stats.queued--;
	return rc;
}

int cuda_rt_wait(struct cuda_rt *rt, struct cuda_rt_event *ev)
{
	struct cuda_rt_stream *s = ev->s;
	size_t upto = 0;
	int rc = 0;

	(void)rt;
	if (emul_call())
		rc = -EIO;
	if (!s)
		return rc;
	/* Run the stream's work up to and including this event's (last) record. */
	for (size_t i = 0; i < s->n; i++)
		if (s->ops[i].kind == EMUL_RECORD && s->ops[i].ev == ev)
			upto = i + 1;
	for (size_t i = 0; i < upto; i++)
		rc = emul_run_after(&s->ops[i], rc);
	memmove(s->ops, s->ops + upto, (s->n - upto) * sizeof(*s->ops));
	s->n -= upto;
	return rc;
}

int cuda_rt_stream_sync(struct cuda_rt *rt, struct cuda_rt_stream *s)
{
	int rc = emul_call();

	(void)rt;
	for (size_t i = 0; i < s->n; i++)
		rc = emul_run_after(&s->ops[i], rc);
	s->n = 0;
	return rc;
}

int cuda_rt_host_register(struct cuda_rt *rt, void *p, size_t n, bool *mine)
{
	const uintptr_t lo = (uintptr_t)p, hi = lo + n;

	(void)rt;
	*mine = false;
	if (emul_call())
		return -EIO;
	cuda_emul_stats.register_calls++;
	if (cuda_emul_knobs.fail_register)
		return -EIO;
	if (cuda_emul_knobs.all_pinned || emul_reg_overlaps(lo, hi))
		return 0;   /* cudaErrorHostMemoryAlreadyRegistered */
	if (emul_nregs == sizeof(emul_regs) / sizeof(emul_regs[0]))
		return -ENOMEM;
	emul_regs[emul_nregs++] = (struct emul_reg){ lo, hi, false };
	cuda_emul_stats.registers++;
	*mine = true;
	return 0;
}

void cuda_rt_host_unregister(struct cuda_rt *rt, void *p)
{
	/* Counted even on a lost context: the engine still gives back what it pinned. */
	(void)emul_call();
	for (unsigned i = 0; i < emul_nregs; i++) {
		if (!emul_regs[i].caller && emul_regs[i].lo == (uintptr_t)p) {
			emul_regs[i] = emul_regs[--emul_nregs];
			cuda_emul_stats.unregisters++;
			return;
		}
	}
	rt->log(GRAID_LOG_ERR, "cuda: cudaHostUnregister of %p: not registered", p);
}

bool cuda_rt_host_is_mapped(struct cuda_rt *rt, const void *p, size_t n)
{
	(void)rt;
	return emul_reg_find((uintptr_t)p, (uintptr_t)p + n) != NULL;
}

int cuda_rt_host_devptr(struct cuda_rt *rt, void *p, uint8_t **out)
{
	(void)rt;
	if (!emul_reg_find((uintptr_t)p, (uintptr_t)p + 1))
		return -EIO;
	*out = p;
	return 0;
}
