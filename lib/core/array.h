/* SPDX-License-Identifier: MIT */
/* The array's internal shape, shared by the files that implement arrays and queues. */
#ifndef LIBGRAID_CORE_ARRAY_H
#define LIBGRAID_CORE_ARRAY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#include "internal.h"
#include "layout.h"
#include "superblock.h"

/* Memory alignment and I/O granule for O_DIRECT; also the default array block size. */
#define ARRAY_ALIGN 4096u
#define ARRAY_DEFAULT_CHUNK (64u * 1024)

/* One member role. fd is -1 when the role is missing. */
struct member {
	int fd;
	atomic_int state;              /* enum graid_member_state */
	bool direct;                   /* opened with O_DIRECT */
	bool is_blk;                   /* a block device */
	uint32_t lbs;                  /* logical block size */
	uint64_t size;                 /* bytes */
	dev_t dev;                     /* st_rdev for devices, st_dev for files */
	ino_t ino;                     /* files: inode, for duplicate detection */
	uint8_t uuid[16];              /* member UUID from its superblock */
	char path[256];
	char identity[128];
	atomic_uint_fast64_t reads, writes, read_bytes, write_bytes, errors;
};

/* Stripe locks: a stripe hashes to one of these; a bucket is held by one stripe op. */
#define STRIPE_LOCK_BUCKETS 65536u

struct graid_array {
	struct graid_layout lay;
	struct graid_backend *be;      /* parity engine; NULL for levels 0, 1, 10 */
	uint64_t data_offset;          /* bytes from member start to data area */
	uint32_t block_size;
	uint8_t uuid[16];
	uint64_t ctime;

	pthread_mutex_t meta_lock;     /* state changes and superblock writes */
	uint64_t events;
	atomic_uint nfailed;           /* roles failed or missing */
	atomic_bool broken;            /* more failed than the level tolerates */

	atomic_bool *stripe_busy;      /* STRIPE_LOCK_BUCKETS flags */
	atomic_uint lock_waiters;
	pthread_mutex_t wait_lock;
	pthread_cond_t wait_cond;
	uint64_t wait_seq;

	pthread_mutex_t pool_lock;     /* idle queues used by the synchronous calls */
	struct graid_queue *pool;

	unsigned nmembers;
	struct member members[];
};

/* member.c */
int member_open(struct member *m, const char *path, bool exclusive);
void member_close(struct member *m);
int member_read_sb(struct member *m, struct graid_sb *sb);
int member_write_sb(struct member *m, const struct graid_sb *sb);
int member_zero_range(struct member *m, uint64_t off, uint64_t len);

/* array_meta.c */
unsigned array_tolerance(const struct graid_array *a);
bool array_roles_survivable(const struct graid_array *a, const uint8_t *state);
void array_fill_sb(const struct graid_array *a, unsigned role, struct graid_sb *sb,
		   uint32_t flags);
int array_write_superblocks(struct graid_array *a, uint32_t flags);
/* Recompute nfailed and broken from the member states; meta_lock held. */
void array_recount(struct graid_array *a);
void array_member_failed(struct graid_array *a, unsigned role, int err);
struct graid_array *array_alloc(unsigned nmembers);
void array_free(struct graid_array *a);
int array_open_engine(struct graid_array *a, const char *name);

/* stripe_lock.c */
bool stripe_trylock(struct graid_array *a, uint64_t stripe, unsigned *bucket);
void stripe_unlock(struct graid_array *a, unsigned bucket);
/* Sleep until some stripe lock is released (or a short while passes). */
void stripe_wait_release(struct graid_array *a, uint64_t seen_seq);
uint64_t stripe_release_seq(struct graid_array *a);

/* queue.c: used by the synchronous calls. */
struct graid_queue *array_queue_get(struct graid_array *a);
void array_queue_put(struct graid_array *a, struct graid_queue *q);
void array_queue_pool_free(struct graid_array *a);

static inline bool array_role_alive(const struct graid_array *a, unsigned role)
{
	return atomic_load_explicit(&a->members[role].state, memory_order_acquire) ==
	       GRAID_MEMBER_ACTIVE;
}

#endif /* LIBGRAID_CORE_ARRAY_H */
