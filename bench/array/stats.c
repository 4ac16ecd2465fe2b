/* SPDX-License-Identifier: MIT */
/* Latency histogram and the figures derived from one run. */
#include "ab.h"

/* 64 exact buckets, then 32 per power of two: about 3% resolution at any latency, in 16 KiB. */
static unsigned hist_index(uint64_t ns)
{
	unsigned msb, shift;

	if (ns < 64)
		return (unsigned)ns;
	msb = 63u - (unsigned)__builtin_clzll(ns);
	shift = msb - 5;
	return 64 + (msb - 6) * 32 + (unsigned)((ns >> shift) - 32);
}

/* The midpoint of bucket @p i, in ns. */
static double hist_value(unsigned i)
{
	unsigned msb, shift;
	uint64_t lo;

	if (i < 64)
		return i;
	msb = (i - 64) / 32 + 6;
	shift = msb - 5;
	lo = ((uint64_t)((i - 64) % 32 + 32)) << shift;
	return (double)lo + (double)(1ull << shift) / 2;
}

void ab_hist_add(struct ab_hist *h, uint64_t ns)
{
	h->count++;
	h->sum_ns += ns;
	h->b[hist_index(ns)]++;
}

void ab_hist_merge(struct ab_hist *dst, const struct ab_hist *src)
{
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	for (unsigned i = 0; i < AB_HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
}

double ab_hist_pct_us(const struct ab_hist *h, double pct)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)((double)h->count * pct / 100.0);
	if (want >= h->count)
		want = h->count - 1;
	for (unsigned i = 0; i < AB_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen > want)
			return hist_value(i) / 1e3;
	}
	return 0;
}

void ab_result_finish(struct ab_result *r, const struct ab_hist *h)
{
	double gb = (double)r->bytes / 1e9;

	r->iops = r->secs > 0 ? (double)r->ios / r->secs : 0;
	r->gbps = r->secs > 0 ? gb / r->secs : 0;
	r->avg_us = h->count ? (double)h->sum_ns / (double)h->count / 1e3 : 0;
	r->p99_us = ab_hist_pct_us(h, 99.0);
	r->cpu_s_per_gb = gb > 0 ? r->cpu_secs / gb : 0;
}

