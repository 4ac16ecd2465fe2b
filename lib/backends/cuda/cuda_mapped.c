/* SPDX-License-Identifier: MIT */
/*
 * The mapped path: kernels read and write the caller's blocks in place over PCIe, with no
 * staging copy. The pages of the batch are pinned and mapped for the call and released
 * after it; memory the caller has already pinned (cudaHostAlloc, cudaHostRegister) is used
 * as it is. Per-call pins are never kept across calls: the caller may free its buffers, and a
 * page that stayed pinned would then no longer be the page at that address. Buffers the
 * caller registers (graid_backend_register_memory) stay pinned until it unregisters them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_engine.h"

/*
 * Held from cuda_mapped_begin to cuda_mapped_end, across engines: otherwise one engine could
 * take another's registration for the caller's, use it, and see it released under its kernel.
 */
static pthread_mutex_t mapped_lock = PTHREAD_MUTEX_INITIALIZER;

static int mapped_cmp(const void *a, const void *b)
{
	const struct cuda_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/*
 * The range holding p in a sorted array of disjoint ranges, each the first member of an
 * element of elem bytes (struct cuda_range, or struct cuda_reg).
 */
static const struct cuda_range *mapped_search(const void *arr, size_t n, size_t elem,
					      uintptr_t p)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		const size_t mid = lo + (hi - lo) / 2;
		const struct cuda_range *r =
			(const struct cuda_range *)((const char *)arr + mid * elem);

		if (p < r->lo)
			hi = mid;
		else if (p >= r->hi)
			lo = mid + 1;
		else
			return r;
	}
	return NULL;
}

/* The merged range of this call holding p. */
static const struct cuda_range *mapped_find(const struct graid_engine *e, uintptr_t p)
{
	return mapped_search(e->ranges, e->nranges, sizeof(*e->ranges), p);
}

static int mapped_grow(struct graid_engine *e, size_t n)
{
	struct cuda_range *r;

	if (n <= e->ranges_cap)
		return 0;
	r = realloc(e->ranges, n * sizeof(*r));
	if (!r)
		return -ENOMEM;
	e->ranges = r;
	e->ranges_cap = n;
	return 0;
}

static void mapped_unpin(struct graid_engine *e)
{
	for (size_t i = 0; i < e->nranges; i++)
		if (e->ranges[i].mine)
			cuda_rt_host_unregister(e->rt, (void *)e->ranges[i].lo);
	e->nranges = 0;
}

/* Whether [p, p + n) lies in the pages of a registered buffer. */
/*
 * Inside a registration that pinned its pages itself. One that found them pinned already
 * (another engine's registration, the caller's cudaHostRegister) is not trusted: that pin
 * may go away under it, so its batches pin per call like any others.
 */
static bool mapped_registered(const struct graid_engine *e, uintptr_t p, size_t n)
{
	const struct cuda_range *r = mapped_search(e->regs, e->nregs, sizeof(*e->regs), p);

	return r && r->mine && p + n <= r->hi;
}

static int mapped_pin(struct graid_engine *e, const struct cuda_job *job)
{
	const struct graid_stripe_batch *b = job->b;
	const struct cuda_kparams *kp = &job->kp;
	const uintptr_t page = e->page;
	bool foreign = false;
	size_t n = 0;
	int rc;

	e->nranges = 0;
	rc = mapped_grow(e, b->nstripes * kp->nblk);
	if (rc)
		return rc;
	for (size_t s = 0; s < b->nstripes; s++) {
		for (unsigned j = 0; j < kp->nblk; j++) {
			const uintptr_t p = (uintptr_t)b->blocks[s * kp->nblk + j];

			if (kp->map[j] == CUDA_MAP_NONE)
				continue;
			/* Full vectors are single 16-byte loads: they need aligned blocks. */
			if (p % CUDA_VEC)
				return -EINVAL;
			/* Registered by the caller: pinned already, nothing to do per call. */
			if (mapped_registered(e, p, b->len))
				continue;
			e->ranges[n].lo = p / page * page;
			e->ranges[n].hi = (p + b->len + page - 1) / page * page;
			e->ranges[n].mine = false;
			n++;
		}
	}
	qsort(e->ranges, n, sizeof(*e->ranges), mapped_cmp);
	/* Merge overlapping ranges: a page can be registered only once. */
	for (size_t i = 0; i < n; i++) {
		if (e->nranges && e->ranges[i].lo < e->ranges[e->nranges - 1].hi) {
			if (e->ranges[i].hi > e->ranges[e->nranges - 1].hi)
				e->ranges[e->nranges - 1].hi = e->ranges[i].hi;
			continue;
		}
		e->ranges[e->nranges++] = e->ranges[i];
	}
	for (size_t i = 0; i < e->nranges; i++) {
		struct cuda_range *r = &e->ranges[i];

		rc = cuda_rt_host_register(e->rt, (void *)r->lo, r->hi - r->lo, &r->mine);
		if (rc) {
			mapped_unpin(e);
			return rc;
		}
		foreign |= !r->mine;
	}
	if (!foreign)
		return 0;
	/* Someone else's registration covers part of the batch: use it only if it covers
	 * every block that lies there. */
	for (size_t s = 0; s < b->nstripes; s++) {
		for (unsigned j = 0; j < kp->nblk; j++) {
			uint8_t *p = b->blocks[s * kp->nblk + j];
			const struct cuda_range *r = mapped_find(e, (uintptr_t)p);

			if (kp->map[j] == CUDA_MAP_NONE || !r || r->mine ||
			    mapped_registered(e, (uintptr_t)p, b->len))
				continue;
			if (!cuda_rt_host_is_mapped(e->rt, p, b->len)) {
				mapped_unpin(e);
				return -EFAULT;
			}
		}
	}
	return 0;
}

int cuda_mapped_begin(struct graid_engine *e, const struct cuda_job *job)
{
	int rc;

	pthread_mutex_lock(&mapped_lock);
	rc = mapped_pin(e, job);
	if (rc)
		pthread_mutex_unlock(&mapped_lock);
	return rc;
}

void cuda_mapped_end(struct graid_engine *e)
{
	mapped_unpin(e);
	pthread_mutex_unlock(&mapped_lock);
}

int cuda_mapped_devptr(struct graid_engine *e, uint8_t *p, uint8_t **out)
{
	if (cuda_rt_host_ptr_is_device_ptr(e->rt)) {
		*out = p;
		return 0;
	}
	return cuda_rt_host_devptr(e->rt, p, out);
}

int cuda_mapped_register(struct graid_engine *e, void *addr, size_t len)
{
	const uintptr_t lo = (uintptr_t)addr / e->page * e->page;
	const uintptr_t hi = ((uintptr_t)addr + len + e->page - 1) / e->page * e->page;
	struct cuda_reg r = { .pages = { .lo = lo, .hi = hi }, .addr = addr };
	size_t at = 0;
	int rc = 0;

	if ((uintptr_t)addr + len < (uintptr_t)addr)
		return -EINVAL;
	while (at < e->nregs && e->regs[at].pages.lo < lo)
		at++;
	if ((at > 0 && e->regs[at - 1].pages.hi > lo) ||
	    (at < e->nregs && e->regs[at].pages.lo < hi))
		return -EINVAL;
	if (e->nregs == e->regs_cap) {
		const size_t cap = e->regs_cap ? 2 * e->regs_cap : 8;
		struct cuda_reg *n = realloc(e->regs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		e->regs = n;
		e->regs_cap = cap;
	}
	/* Mapped batches of every engine take turns with registrations, as with each other. */
	pthread_mutex_lock(&mapped_lock);
	rc = cuda_rt_host_register(e->rt, (void *)lo, hi - lo, &r.pages.mine);
	/* Pinned by someone else already: usable only if all of it is. */
	if (!rc && !r.pages.mine && !cuda_rt_host_is_mapped(e->rt, addr, len))
		rc = -EINVAL;
	pthread_mutex_unlock(&mapped_lock);
	if (rc)
		return rc;
	memmove(&e->regs[at + 1], &e->regs[at], (e->nregs - at) * sizeof(*e->regs));
	e->regs[at] = r;
	e->nregs++;
	return 0;
}

static void mapped_release(struct graid_engine *e, size_t i)
{
	if (e->regs[i].pages.mine)
		cuda_rt_host_unregister(e->rt, (void *)e->regs[i].pages.lo);
	memmove(&e->regs[i], &e->regs[i + 1], (e->nregs - i - 1) * sizeof(*e->regs));
	e->nregs--;
}

int cuda_mapped_unregister(struct graid_engine *e, void *addr)
{
	for (size_t i = 0; i < e->nregs; i++) {
		if (e->regs[i].addr == addr) {
			pthread_mutex_lock(&mapped_lock);
			mapped_release(e, i);
			pthread_mutex_unlock(&mapped_lock);
			return 0;
		}
	}
	return -EINVAL;
}

void cuda_mapped_unregister_all(struct graid_engine *e)
{
	pthread_mutex_lock(&mapped_lock);
	while (e->nregs)
		mapped_release(e, e->nregs - 1);
	pthread_mutex_unlock(&mapped_lock);
	free(e->regs);
	e->regs = NULL;
	e->regs_cap = 0;
}
