/* SPDX-License-Identifier: MIT */
/* An array of one level on fresh member files, created and filled with the pattern. */
#include <errno.h>

#include "../bench_util.h"
#include "rb.h"

int rb_array_setup(const struct rb_opts *o, struct rb_dir *d, struct rb_members *m, int level,
		   struct graid_array **out, struct graid_array_info *info)
{
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
	rc = rb_array_fill(*out, 0, info->size, o->seed);
	if (rc) {
		graid_array_close(*out);
		*out = NULL;
		return rc;
	}
	printf("fill: %llu MiB in 1 MiB writes, %.0f MB/s\n", (unsigned long long)(info->size / RB_MIB),
	       (double)info->size * 1e3 / (double)(bench_now_ns() - t0));
	return 0;
}
