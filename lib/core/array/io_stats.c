/* SPDX-License-Identifier: MIT */
/* I/O statistics: counting an array's requests and its members' I/O, reading them back. */
#include <errno.h>
#include <string.h>

#include "array/array.h"
#include "array/stats_count.h"

/* MEMBER_SLOW: at most one event a member in this long. */
#define STATS_SLOW_EVERY_NS (60ull * 1000000000ull)

#if GRAID_FAULT_INJECTION
uint64_t graid__test_slow_every_ns;
#endif

static uint64_t stats_slow_every(void)
{
#if GRAID_FAULT_INJECTION
	if (graid__test_slow_every_ns)
		return graid__test_slow_every_ns;
#endif
	return STATS_SLOW_EVERY_NS;
}

void io_stats_reset(struct io_stats *st, uint64_t now_ns)
{
	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		struct io_stat_kind *c = &st->io[k];

		atomic_store_explicit(&c->ops, 0, memory_order_relaxed);
		atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
		atomic_store_explicit(&c->errors, 0, memory_order_relaxed);
		atomic_store_explicit(&c->latency_ns_sum, 0, memory_order_relaxed);
		atomic_store_explicit(&c->latency_hist_ns_sum, 0, memory_order_relaxed);
		for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
			atomic_store_explicit(&c->latency[b], 0, memory_order_relaxed);
	}
	atomic_store_explicit(&st->since_ns, now_ns, memory_order_relaxed);
}

void stats_init(struct graid_array *a)
{
	uint64_t now = graid__now_ns();

	io_stats_reset(&a->stats, now);
	for (unsigned i = 0; i < a->nmembers; i++)
		io_stats_reset(&a->members[i].role.stats, now);
	for (unsigned i = 0; i < GRAID_MAX_SPARES; i++)
		io_stats_reset(&a->spares[i].role.stats, now);
	atomic_store(&a->slow_ns, (uint64_t)GRAID_STATS_SLOW_MS_DEFAULT * 1000000ull);
}

static bool stats_histograms(const struct graid_array *a)
{
	return atomic_load_explicit(&a->stats_flags, memory_order_relaxed) & GRAID_STATS_HISTOGRAMS;
}

void stats_request(struct graid_array *a, unsigned kind, uint64_t bytes, bool failed,
		   uint64_t start_ns)
{
	io_stats_add(&a->stats, kind, bytes, failed, graid__now_ns() - start_ns,
		     stats_histograms(a));
}

/* One event a member a minute: the first thread past the limit is told to send it. */
static bool stats_slow_due(struct graid_array *a, unsigned member, uint64_t latency_ns,
			   uint64_t now)
{
	struct member_role *r = &a->members[member].role;
	uint64_t last = atomic_load_explicit(&r->slow_sent_ns, memory_order_relaxed);

	/*
	 * Signed: a thread whose clock reading is older than the last sender's is inside the
	 * interval (unsigned, now - last would wrap and send again). A lost exchange looks again
	 * at what the winner stored.
	 */
	do {
		if (last && (int64_t)(now - last) < (int64_t)stats_slow_every())
			return false;
	} while (!atomic_compare_exchange_weak(&r->slow_sent_ns, &last, now));
	graid__log(GRAID_LOG_WARNING, "member %u (%s): an I/O took %llu ms (slow limit %llu ms)",
		   member, a->members[member].dev.path,
		   (unsigned long long)(latency_ns / 1000000u),
		   (unsigned long long)(atomic_load(&a->slow_ns) / 1000000u));
	return true;
}

uint64_t stats_member(struct graid_array *a, unsigned member, unsigned kind, uint64_t bytes,
		      bool failed, uint64_t start_ns)
{
	uint64_t now = graid__now_ns(), latency = now - start_ns;

	io_stats_add(&a->members[member].role.stats, kind, bytes, failed, latency,
		     stats_histograms(a));
	if (latency > atomic_load_explicit(&a->slow_ns, memory_order_relaxed) &&
	    stats_slow_due(a, member, latency, now))
		return latency / 1000000u ? latency / 1000000u : 1;
	return 0;
}

GRAID_API int graid_array_stats(struct graid_array *a, int member, struct graid_io_stats *out)
{
	const struct io_stats *st;
	struct graid_io_stats s;

	if (!a || !out || out->struct_size < offsetof(struct graid_io_stats, io) + sizeof(out->io))
		return -EINVAL;
	if (member < -1 || member >= (int)(a->nmembers + GRAID_MAX_SPARES))
		return -EINVAL;
	if (member == -1)
		st = &a->stats;
	else if ((unsigned)member < a->nmembers)
		st = &a->members[member].role.stats;
	else if ((unsigned)member - a->nmembers < a->nspares)
		st = &a->spares[(unsigned)member - a->nmembers].role.stats;
	else
		return -EINVAL;
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	for (unsigned k = 0; k < GRAID_IO_KINDS; k++) {
		const struct io_stat_kind *c = &st->io[k];

		s.io[k].ops = atomic_load_explicit(&c->ops, memory_order_relaxed);
		s.io[k].bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
		s.io[k].errors = atomic_load_explicit(&c->errors, memory_order_relaxed);
		s.io[k].latency_ns_sum = atomic_load_explicit(&c->latency_ns_sum,
							      memory_order_relaxed);
		s.io[k].latency_hist_ns_sum = atomic_load_explicit(&c->latency_hist_ns_sum,
								   memory_order_relaxed);
		for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
			s.io[k].latency[b] = atomic_load_explicit(&c->latency[b],
								  memory_order_relaxed);
	}
	s.since_ns = atomic_load_explicit(&st->since_ns, memory_order_relaxed);
	/* The open sets up its members after the handle's counting began: none counted before. */
	if (s.since_ns < atomic_load_explicit(&a->stats.since_ns, memory_order_relaxed))
		s.since_ns = atomic_load_explicit(&a->stats.since_ns, memory_order_relaxed);
	memcpy(out, &s, out->struct_size < sizeof(s) ? out->struct_size : sizeof(s));
	out->struct_size = out->struct_size < sizeof(s) ? out->struct_size : sizeof(s);
	return 0;
}

GRAID_API int graid_array_set_stats_options(struct graid_array *a,
					    const struct graid_stats_options *opts)
{
	unsigned ms;

	if (!a || !opts || opts->struct_size < sizeof(*opts) ||
	    (opts->flags & ~GRAID_STATS_HISTOGRAMS))
		return -EINVAL;
	ms = opts->slow_ms ? opts->slow_ms : GRAID_STATS_SLOW_MS_DEFAULT;
	atomic_store(&a->slow_ns, (uint64_t)ms * 1000000ull);
	atomic_store(&a->stats_flags, opts->flags);
	return 0;
}
