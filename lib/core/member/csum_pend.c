/* SPDX-License-Identifier: MIT */
/* A role's checksum mismatches found by reads and not yet settled by a repair or a give-up. */
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>

#include "format/superblock.h"
#include "member/csum_pend.h"

static void csum_pend_lock(struct csum_pend *p)
{
	while (atomic_exchange_explicit(&p->lock, 1, memory_order_acquire))
		;
}

static void csum_pend_unlock(struct csum_pend *p)
{
	atomic_store_explicit(&p->lock, 0, memory_order_release);
}

static bool csum_pend_put(struct csum_pend *p, uint64_t block, uint32_t fp, bool lost)
{
	unsigned n;

	csum_pend_lock(p);
	n = atomic_load_explicit(&p->n, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++)
		if (p->e[i].block == block) {
			p->e[i].fp = fp;
			p->e[i].lost = lost;
			csum_pend_unlock(p);
			return false;
		}
	if (n == CSUM_PEND_MAX) {
		/* Oldest first: the entries are kept in the order they came. */
		memmove(&p->e[0], &p->e[1], (n - 1) * sizeof(p->e[0]));
		n--;
	}
	p->e[n].block = block;
	p->e[n].fp = fp;
	p->e[n].lost = lost;
	atomic_store_explicit(&p->n, n + 1, memory_order_release);
	csum_pend_unlock(p);
	return true;
}

bool csum_pend_add(struct csum_pend *p, uint64_t block, uint32_t fp)
{
	return csum_pend_put(p, block, fp, false);
}

bool csum_pend_add_lost(struct csum_pend *p, uint64_t block, uint32_t fp)
{
	return csum_pend_put(p, block, fp, true);
}

unsigned csum_pend_take(struct csum_pend *p, uint64_t off, uint64_t len,
			struct csum_pend_entry *out, unsigned max)
{
	const uint64_t first = off / 4096u, end = (off + len + 4095u) / 4096u;
	unsigned n, k = 0, got = 0;

	if (!atomic_load_explicit(&p->n, memory_order_acquire))
		return 0;
	csum_pend_lock(p);
	n = atomic_load_explicit(&p->n, memory_order_relaxed);
	for (unsigned i = 0; i < n; i++) {
		if (p->e[i].block >= first && p->e[i].block < end && got < max) {
			out[got].block = p->e[i].block;
			out[got].lost = p->e[i].lost;
			out[got++].fp = p->e[i].fp;
			continue;
		}
		p->e[k++] = p->e[i];
	}
	atomic_store_explicit(&p->n, k, memory_order_release);
	csum_pend_unlock(p);
	return got;
}

uint32_t csum_pend_fp(const struct iovec *iov, unsigned iovcnt, uint64_t at)
{
	uint32_t reg = 0xFFFFFFFFu;
	size_t want = 4096;

	for (unsigned i = 0; i < iovcnt && want; i++) {
		size_t n;

		if (at >= iov[i].iov_len) {
			at -= iov[i].iov_len;
			continue;
		}
		n = iov[i].iov_len - at < want ? iov[i].iov_len - (size_t)at : want;
		reg = crc32c_update(reg, (const char *)iov[i].iov_base + at, n);
		want -= n;
		at = 0;
	}
	return ~reg;
}
