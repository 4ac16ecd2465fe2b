/* SPDX-License-Identifier: MIT */
/* An array of one level on fresh member files, created and filled with the pattern. */
#include <errno.h>

#include "../bench_util.h"
#include "rb.h"

int rb_used_next(uint64_t size, unsigned pct, uint64_t *off, uint64_t *len)
{
	uint64_t stride = pct >= 100 ? size : RB_USED_RUN * 100 / pct / (1u << 20) * (1u << 20);
	uint64_t at = (*off + stride - 1) / stride * stride;

	if (at >= size)
		return 1;
	*off = at;
	*len = pct >= 100 ? size : (size - at < RB_USED_RUN ? size - at : RB_USED_RUN);
	return 0;
}

int rb_array_setup(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m, int level,
		   struct graid_array **out, struct graid_array_info *info)
{
	return rb_array_setup_used(o, d, m, level, 100, out, info);
}

int rb_array_setup_used(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m,
			int level, unsigned pct, struct graid_array **out,
			struct graid_array_info *info)
{
	uint64_t off = 0, len, filled = 0;
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = level,
					  .chunk_bytes = o->chunk, .backend = o->backend,
					  .flags = GRAID_CREATE_FORCE };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	unsigned n = rb_level_members(o, level);
	uint64_t t0;
	int rc = rb_members_create(m, d, n, RB_META_BYTES + o->data_bytes, o);

	if (rc)
		return rc;
	bench_watch("graid_array_create", 10);
	rc = graid_array_create(m->paths, n, &cfg, out);
	if (rc) {
		fprintf(stderr, "rebuild_bench: RAID-%d create: %s\n", level, graid_strerror(rc));
		return rc;
	}
	info->struct_size = sizeof(*info);
	graid_array_info(*out, info);
	graid_array_member_info(*out, 0, &mi);
	printf("\n== RAID-%d: %u members x %llu MiB data, chunk %u KiB, %llu MiB usable, engine %s, "
	       "member I/O %s\n",
	       level, n, (unsigned long long)(o->data_bytes / RB_MIB), info->chunk_bytes >> 10,
	       (unsigned long long)(info->size / RB_MIB), info->engine,
	       mi.direct_io ? "O_DIRECT" : "buffered");
	if (m->prefix[0])
		printf("every member emulates a drive of its own: \"%s<file>\"\n", m->prefix);
	bench_watch("fill", (double)info->size / 1e8);
	t0 = bench_now_ns();
	for (; rc == 0 && !rb_used_next(info->size, pct, &off, &len); off += len, filled += len)
		rc = rb_array_fill(*out, off, len, o->seed);
	if (rc) {
		graid_array_close(*out);
		*out = NULL;
		return rc;
	}
	printf("fill: %llu MiB in 1 MiB writes, %.0f MB/s\n", (unsigned long long)(filled / RB_MIB),
	       (double)filled * 1e3 / (double)(bench_now_ns() - t0));
	return 0;
}
