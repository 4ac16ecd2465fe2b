/* SPDX-License-Identifier: MIT */
/* graid_array_create(): check everything first, then zero the data areas and write superblocks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meta/badblocks.h"
#include "meta/bitmap.h"
#include "meta/live.h"
#include "meta/journal.h"
#include "api/array_life.h"
#include "jobs/jobs.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "format/tag_format.h"
#include "meta/array_meta.h"

static unsigned create_flags(const struct graid_array_config *cfg)
{
	return cfg->struct_size >= offsetof(struct graid_array_config, flags) + sizeof(cfg->flags)
		       ? cfg->flags : 0;
}

static int create_check_config(const struct graid_array_config *cfg, unsigned nmembers,
			       uint32_t *chunk)
{
	if (cfg->struct_size < offsetof(struct graid_array_config, backend) + sizeof(cfg->backend))
		return -EINVAL;
	*chunk = cfg->chunk_bytes ? cfg->chunk_bytes : ARRAY_DEFAULT_CHUNK;
	if (nmembers == 0 || nmembers > GRAID_MAX_MEMBERS) {
		graid__log(GRAID_LOG_ERR, "create: %u members; 1..%u allowed", nmembers,
			   GRAID_MAX_MEMBERS);
		return -EINVAL;
	}
	if (cfg->level == 5 && nmembers < 3) {
		/*
		 * The layout places a RAID-5 of two (P = its one data chunk): what a RAID-1 of two
		 * becomes by graid_array_convert(), to grow it. Created, it would be a RAID-1 that
		 * computes parity: made as a RAID-1 and converted instead.
		 */
		graid__log(GRAID_LOG_ERR, "create: a RAID-5 needs three members or more (a RAID-5 "
					  "of two is made by converting a RAID-1 of two)");
		return -EINVAL;
	}
	if (cfg->struct_size >= offsetof(struct graid_array_config, flags) + sizeof(cfg->flags) &&
	    (cfg->flags & ~(GRAID_CREATE_FORCE | GRAID_CREATE_JOURNAL | GRAID_CREATE_CHECKSUMS))) {
		graid__log(GRAID_LOG_ERR, "create: unknown flags 0x%x", cfg->flags);
		return -EINVAL;
	}
	if (create_flags(cfg) & GRAID_CREATE_JOURNAL && cfg->level != 5 && cfg->level != 6) {
		graid__log(GRAID_LOG_ERR, "create: the write-hole journal is for RAID-5 and RAID-6, "
					  "not RAID-%d (it has no parity to keep consistent)",
			   cfg->level);
		return -EINVAL;
	}
	if (create_flags(cfg) & GRAID_CREATE_CHECKSUMS && cfg->level != 1 && cfg->level != 5 &&
	    cfg->level != 6 && cfg->level != 10) {
		graid__log(GRAID_LOG_ERR, "create: checksums are for RAID-1, 5, 6 and 10, not "
					  "RAID-%d (it has no other copy to heal a bad block from)",
			   cfg->level);
		return -EINVAL;
	}
	return 0;
}

/* An environment switch set to "0". */
static bool create_env_off(const char *name)
{
	const char *v = getenv(name);

	return v && strcmp(v, "0") == 0;
}

/* Where the data area starts: after the bitmap, and after the journal when there is one. */
static uint64_t create_data_offset(const struct graid_array_config *cfg, uint32_t chunk)
{
	if (!(create_flags(cfg) & GRAID_CREATE_JOURNAL))
		return GRAID_SB_DEFAULT_DATA_OFFSET;
	return GRAID_SB_DEFAULT_DATA_OFFSET + journal_default_bytes(chunk);
}

/* Open every member and refuse the set before anything is written. */
static int create_open_members(struct graid_array *a, const char *const *paths, bool force,
			       uint64_t data_offset, uint32_t chunk, bool journal, bool tags)
{
	/* With checksums one chunk needs one tag block after it (a chunk is at most 256 blocks). */
	const uint64_t need = data_offset + chunk + (tags ? tag_area_bytes(chunk) : 0);
	struct superblock sb;

	/* Duplicates first: opening the second copy would only say "busy". */
	for (unsigned i = 0; i < a->nmembers; i++) {
		dev_t di, dj;
		ino_t ii, ij;

		if (!paths[i])
			return -EINVAL;
		if (member_identity(paths[i], &di, &ii))
			continue; /* member_open below names the problem */
		for (unsigned j = 0; j < i; j++)
			if (!member_identity(paths[j], &dj, &ij) && di == dj && ii == ij) {
				graid__log(GRAID_LOG_ERR, "create: member %u (%s) is member %u (%s) "
							  "again", i, paths[i], j, paths[j]);
				return -EINVAL;
			}
	}
	for (unsigned i = 0; i < a->nmembers; i++) {
		struct member *m = &a->members[i];
		int rc;

		rc = member_open(m, paths[i], true);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "create: member %u (%s): %s", i, paths[i],
				   graid_strerror(rc));
			return rc;
		}
		for (unsigned j = 0; j < i; j++)
			if (a->members[j].dev.devno == m->dev.devno && a->members[j].dev.ino == m->dev.ino) {
				graid__log(GRAID_LOG_ERR, "create: member %u (%s) is member %u (%s) "
							  "again", i, paths[i], j, a->members[j].dev.path);
				return -EINVAL;
			}
		/* The metadata (and the log) before the data area, and one chunk of data. */
		if (m->dev.size < need) {
			graid__log(GRAID_LOG_ERR, "create: member %u (%s): %llu bytes is too small: "
						  "each member needs at least %llu bytes (%.1f MiB): "
						  "%llu KiB of superblock, bitmap%s before the data area, "
						  "and one %u KiB chunk of data%s", i, paths[i],
				   (unsigned long long)m->dev.size, (unsigned long long)need,
				   (double)need / (1 << 20),
				   (unsigned long long)(data_offset >> 10),
				   journal ? ", live-data map and write-hole journal"
					   : " and live-data map", chunk >> 10,
				   tags ? " with its 4 KiB block of checksum tags" : "");
			return -EINVAL;
		}
		rc = member_read_sb(m, &sb);
		if ((rc == 0 || rc == -EBADMSG || rc == -EPROTO) && !force) {
			graid__log(GRAID_LOG_ERR, "create: member %u (%s) carries a libgraid "
						  "superblock%s; use the force flag to overwrite it",
				   i, paths[i], rc ? " (damaged)" : "");
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * The layout the members opened allow (the smallest one's room past the metadata) and the
 * engine, opened before the first byte is written: its failure changes nothing.
 */
static int create_layout(struct graid_array *a, const struct graid_array_config *cfg,
			 uint32_t chunk, uint64_t data_offset)
{
	uint64_t member_bytes = UINT64_MAX;
	uint32_t bs = 512;
	int rc;

	for (unsigned i = 0; i < a->nmembers; i++) {
		uint64_t usable = a->members[i].dev.size - data_offset;

		if (usable < member_bytes)
			member_bytes = usable;
		if (a->members[i].dev.lbs > bs)
			bs = a->members[i].dev.lbs;
	}
	/*
	 * Checksums: the tag area follows the data area. Room for the tags of the whole space
	 * first; the data area then rounds down to chunks, which only shrinks its tags.
	 */
	if (create_flags(cfg) & GRAID_CREATE_CHECKSUMS) {
		uint64_t tags = tag_area_bytes(member_bytes);

		member_bytes = member_bytes > tags ? member_bytes - tags : 0;
		a->csum = true;
		a->csum_gens = true; /* lost writes detected: major 3 with GENERATIONS */
		bs = 4096;
	}
	rc = layout_init(&a->lay, cfg->level, a->nmembers, chunk, member_bytes);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "create: RAID-%d over %u members with %u-byte chunks of "
					  "%llu bytes each is not a valid layout", cfg->level,
			   a->nmembers, chunk, (unsigned long long)member_bytes);
		return rc;
	}
	rc = array_open_engine(a, cfg->backend);
	if (rc)
		return rc;
	a->block_size = bs < 4096 ? bs : 4096;
	a->data_offset = data_offset;
	sb_tag_area(a->csum ? GRAID_SB_F_CHECKSUMS : 0, data_offset, a->lay.member_bytes,
		    &a->tag_offset, &a->tag_bytes);
	return 0;
}

/* The new array's identity: UUIDs, the first event, every member active. */
static void create_identity(struct graid_array *a)
{
	a->ctime = (uint64_t)time(NULL);
	a->events = 1;
	sb_uuid_generate(a->uuid);
	for (unsigned i = 0; i < a->nmembers; i++) {
		sb_uuid_generate(a->members[i].dev.uuid);
		a->members[i].role.slot_id = member_slot_id(a->members[i].dev.uuid);
		atomic_store(&a->members[i].state, GRAID_MEMBER_ACTIVE);
	}
}

/*
 * Everything written, superblocks last: the data areas zeroed, the bitmap, the live-data
 * map and the bad-block logs empty, the journal reset.
 */
static int create_write(struct graid_array *a, uint64_t data_offset)
{
	/*
	 * Zeroed data areas make parity consistent from the start: P and Q of zeroes are zero.
	 * Fast init where every member reads deallocated blocks as zeroes (member.c).
	 */
	int rc = member_init_data_areas(a);

	if (rc == 0)
		rc = bitmap_init(a, BITMAP_DEFAULT_OFFSET, BITMAP_DEFAULT_BYTES, 0);
	if (rc == 0)
		rc = bitmap_write_all(a); /* a reused device may hold an old bitmap */
	/*
	 * Nothing written yet: every region unused. RAID-0 has nothing to rebuild: no map.
	 * GRAID_LIVE_MAP=0 makes an array without one (as format 1.1 made them), so a benchmark
	 * can time the full rebuild beside the one the map allows (docs/ARRAYS.md).
	 */
	if (rc == 0 && a->lay.level != 0 && !create_env_off("GRAID_LIVE_MAP") &&
	    data_offset >= (uint64_t)LIVE_DEFAULT_OFFSET + LIVE_DEFAULT_BYTES)
		rc = live_init(a, LIVE_DEFAULT_OFFSET, LIVE_DEFAULT_BYTES, 0);
	if (rc == 0)
		rc = live_write_all(a);
	/* Levels that rebuild get a bad-block log per member, empty (docs/FORMAT.md). */
	if (rc == 0 && a->lay.level != 0 &&
	    data_offset >= (uint64_t)BBL_DEFAULT_OFFSET + BBL_AREA_BYTES)
		rc = badblocks_init(a, BBL_DEFAULT_OFFSET, BBL_AREA_BYTES);
	for (unsigned i = 0; rc == 0 && i < a->nmembers; i++)
		rc = badblocks_reset(a, i);
	if (rc == 0)
		rc = journal_reset(a); /* a reused device may hold an old log */
	/* Every tag absent: nothing is verified until written (docs/FORMAT.md "Checksums"). */
	for (unsigned i = 0; rc == 0 && a->csum && i < a->nmembers; i++) {
		rc = member_zero_range(&a->members[i], a->tag_offset, a->tag_bytes);
		if (rc)
			graid__log(GRAID_LOG_ERR, "create: zeroing the tag area of member %u (%s): %s",
				   i, a->members[i].dev.path, graid_strerror(rc));
	}
	if (rc == 0)
		rc = tag_store_open(a);
	if (rc == 0)
		rc = array_write_superblocks(a, 0);
	return rc;
}

GRAID_API int graid_array_create(const char *const *members, unsigned nmembers,
				 const struct graid_array_config *cfg, struct graid_array **out)
{
	struct graid_array *a;
	uint64_t data_offset;
	uint32_t chunk;
	int rc;

	if (!members || !cfg || !out)
		return -EINVAL;
	rc = create_check_config(cfg, nmembers, &chunk);
	if (rc)
		return rc;
	a = array_alloc(nmembers, ARRAY_GROW_ROOM_FOR(cfg->level));
	if (!a)
		return -ENOMEM;
	data_offset = create_data_offset(cfg, chunk);
	rc = create_open_members(a, members, create_flags(cfg) & GRAID_CREATE_FORCE, data_offset,
				 chunk, create_flags(cfg) & GRAID_CREATE_JOURNAL,
				 create_flags(cfg) & GRAID_CREATE_CHECKSUMS);
	if (rc == 0)
		rc = create_layout(a, cfg, chunk, data_offset);
	if (rc == 0 && create_flags(cfg) & GRAID_CREATE_JOURNAL)
		rc = journal_init(a, GRAID_SB_DEFAULT_DATA_OFFSET,
				  data_offset - GRAID_SB_DEFAULT_DATA_OFFSET);
	if (rc)
		goto fail;
	create_identity(a);
	/* A new UUID: nobody else can hold it, but the lock makes later openers wait. */
	rc = array_uuid_lock_take(&a->uuid_lock, a->uuid, &a->owner);
	if (rc)
		goto fail; /* -ENOLCK (an unusable lock directory): nothing written yet */
	owner_self(&a->owner);
	a->owner.epoch = 1; /* the first owner; each takeover by another host adds one */
	/*
	 * The worker (worker.c: spares, catch-ups, unreachable members' controllers), before
	 * anything is written: a create that cannot start it leaves every member as it was.
	 */
	pthread_mutex_lock(&a->meta_lock);
	rc = array_worker_start(a);
	pthread_mutex_unlock(&a->meta_lock);
	if (rc == 0)
		rc = create_write(a, data_offset);
	if (rc)
		goto fail;
	graid__log(GRAID_LOG_NOTICE, "created RAID-%d of %u members, %llu bytes, chunk %u",
		   a->lay.level, nmembers, (unsigned long long)a->lay.array_bytes, chunk);
	*out = a;
	return 0;
fail:
	array_free(a);
	return rc;
}
