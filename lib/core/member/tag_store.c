/* SPDX-License-Identifier: MIT */
/* A checksummed array's tags: per role, a cache of tag blocks read and written through member.c. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "array/array.h"
#include "format/nvme_meta.h"
#include "format/tag_format.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "member/tag_inline.h"

#define TAG_STORE_BUDGET_DEFAULT (64ull << 20)
/* Blocks whose CRCs are computed before the role's lock is taken, at most. */
#define TAG_STORE_BATCH 64u
/* Distinct new tags held for one block under overlapping writes; past that, any is accepted. */
#define TAG_PEND_TAGS 3u
/* Cache lines of tags tag_store_prefetch() asks for, at most (64 tags: a batch's). */
#define TAG_PREFETCH_LINES 8u
/* Idle pending arrays a role keeps for reuse (each TAGS_PER_BLOCK slots, 20 KiB). */
#define TAG_PEND_SPARES 4u

/* The writes in flight over one data block. */
struct tag_pend {
	uint32_t n;             /* begun, not ended */
	uint32_t nok;           /* ended well since the block was last idle */
	uint32_t ntags;         /* distinct new tags in tag[] */
	bool many;              /* more than TAG_PEND_TAGS: every CRC accepted until idle */
	tag_t tag[TAG_PEND_TAGS];
};

/*
 * One cached tag block: 512 tags as on disk. What a lookup and a verify that passes read
 * comes first, on one cache line (the struct is allocated line-aligned): a random read
 * finds it cold, and each line more is one more wait on memory.
 */
struct tag_cblock {
	uint64_t index;             /* tag block number in the role's tag area */
	struct tag_cblock *hnext;   /* hash chain */
	uint8_t *img;               /* its 4096 bytes, aligned for O_DIRECT */
	bool ref;                   /* used since eviction last passed it (second chance) */
	bool dirty;                 /* img differs from the member's copy */
	/*
	 * Generations: every block of the span was compared with its peers since this entry was
	 * loaded (tag_store_span_mark(); docs/INTEGRITY.md, "The span flag"). A new entry (a
	 * load from the member) starts clear.
	 */
	bool checked;
	uint64_t load;              /* the role's load count when this entry was made */
	unsigned npend;             /* slots with writes in flight: pinned while > 0 */
	struct tag_pend *pend;      /* per slot, allocated while npend > 0 */
	struct tag_cblock *prev, *next; /* LRU, most recent at head */
};

#define TAG_CBLOCK_ALLOC ((sizeof(struct tag_cblock) + 63u) / 64u * 64u)

/*
 * One role's cache. Everything below is guarded by lock. Each role on lines of its own: two
 * threads working on two roles do not pass one line back and forth.
 */
struct tag_role {
	alignas(64) pthread_mutex_t lock;
	struct tag_cblock **bucket;
	unsigned nbuckets;          /* a power of two */
	struct tag_cblock *head, *tail;
	size_t nblocks, max_blocks; /* cached, and the budget's share (pins may exceed it) */
	/*
	 * Per-slot pending arrays of blocks whose writes all ended, kept for the next block that
	 * gets a write (all zero, as tag_pend_end leaves them): sequential writes move from tag
	 * block to tag block, and would otherwise allocate and clear one at every step.
	 */
	struct tag_pend *spare[TAG_PEND_SPARES];
	unsigned nspare;
	/* Entries made so far: each one's load, so that a span mark finds the entry it checked. */
	uint64_t loads;
};

struct tag_store {
	/*
	 * Roles in use: the array's members. A grow adds roles up to cap (the open's
	 * member_cap, each made at open so that adding one allocates nothing and moves no
	 * role another thread uses): tag_store_add_role().
	 */
	unsigned nroles;
	unsigned cap;
	/*
	 * Per role, tag_crc_prefix() of the array's uuid and the role: set at open, read only
	 * after, apart from the roles' locks and lists that every I/O writes.
	 */
	uint32_t *prefix;
	struct tag_role role[];
};

/* The budget: GRAID_TAG_CACHE_BYTES (docs/ARRAYS.md) or 64 MiB, per array. */
static uint64_t tag_store_budget(void)
{
	const char *v = getenv("GRAID_TAG_CACHE_BYTES");
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return TAG_STORE_BUDGET_DEFAULT;
	n = strtoull(v, &end, 0);
	return *end || n == 0 ? TAG_STORE_BUDGET_DEFAULT : n;
}

int tag_store_open(struct graid_array *a)
{
	struct tag_store *s;
	uint64_t per_role;
	unsigned nb = 16;
	const unsigned cap = a->member_cap > a->nmembers ? a->member_cap : a->nmembers;

	a->tags = NULL;
	if (!a->csum)
		return 0;
	s = aligned_alloc(alignof(struct tag_store),
			  (sizeof(*s) + cap * sizeof(s->role[0]) + alignof(struct tag_store) - 1) /
				  alignof(struct tag_store) * alignof(struct tag_store));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s) + cap * sizeof(s->role[0]));
	s->prefix = calloc(cap, sizeof(*s->prefix));
	if (!s->prefix) {
		free(s);
		return -ENOMEM;
	}
	for (unsigned r = 0; r < cap; r++)
		s->prefix[r] = tag_crc_prefix(a->uuid, r);
	per_role = tag_store_budget() / TAG_BLOCK_BYTES / a->nmembers;
	if (per_role == 0)
		per_role = 1;
	while (nb < per_role && nb < (1u << 16))
		nb <<= 1;
	s->nroles = a->nmembers;
	s->cap = cap;
	for (unsigned r = 0; r < s->cap; r++) {
		struct tag_role *tr = &s->role[r];

		pthread_mutex_init(&tr->lock, NULL);
		tr->max_blocks = (size_t)per_role;
		tr->nbuckets = nb;
		tr->bucket = calloc(nb, sizeof(*tr->bucket));
		if (!tr->bucket) {
			a->tags = s;
			tag_store_close(a);
			return -ENOMEM;
		}
	}
	a->tags = s;
	for (unsigned r = 0; r < s->nroles; r++)
		tag_inline_attach(a, r);
	return 0;
}

static void tag_cblock_free(struct tag_cblock *cb)
{
	free(cb->img);
	free(cb->pend);
	free(cb);
}

/* Drop every cached block of @p tr, written or not. Lock held (or no other user). */
static void tag_role_drop(struct tag_role *tr)
{
	struct tag_cblock *cb = tr->head;

	while (cb) {
		struct tag_cblock *next = cb->next;

		tag_cblock_free(cb);
		cb = next;
	}
	tr->head = tr->tail = NULL;
	tr->nblocks = 0;
	while (tr->nspare)
		free(tr->spare[--tr->nspare]);
	if (tr->bucket)
		memset(tr->bucket, 0, tr->nbuckets * sizeof(*tr->bucket));
}

void tag_store_close(struct graid_array *a)
{
	struct tag_store *s = a ? a->tags : NULL;

	if (!s)
		return;
	for (unsigned r = 0; r < s->cap; r++) {
		tag_role_drop(&s->role[r]);
		free(s->role[r].bucket);
		pthread_mutex_destroy(&s->role[r].lock);
	}
	free(s->prefix);
	free(s);
	a->tags = NULL;
}

/*
 * Tag block numbers are small and dense (0 up to the tag area's blocks): taken as they are,
 * neighbouring tag blocks share the bucket array's lines, where a scrambling hash gave each
 * its own line to miss. Only blocks nbuckets apart share a chain.
 */
static struct tag_cblock **tag_bucket(struct tag_role *tr, uint64_t index)
{
	return &tr->bucket[index & (tr->nbuckets - 1)];
}

static void tag_lru_unlink(struct tag_role *tr, struct tag_cblock *cb)
{
	if (cb->prev)
		cb->prev->next = cb->next;
	else
		tr->head = cb->next;
	if (cb->next)
		cb->next->prev = cb->prev;
	else
		tr->tail = cb->prev;
	cb->prev = cb->next = NULL;
}

static void tag_lru_push(struct tag_role *tr, struct tag_cblock *cb)
{
	cb->next = tr->head;
	cb->prev = NULL;
	if (tr->head)
		tr->head->prev = cb;
	tr->head = cb;
	if (!tr->tail)
		tr->tail = cb;
}

static struct tag_cblock *tag_find(struct tag_role *tr, uint64_t index)
{
	for (struct tag_cblock *cb = *tag_bucket(tr, index); cb; cb = cb->hnext)
		if (cb->index == index)
			return cb;
	return NULL;
}

static uint64_t tag_block_off(const struct graid_array *a, uint64_t index)
{
	return a->tag_offset + index * TAG_BLOCK_BYTES;
}

/*
 * Whether this store keeps @p role's tags: a tag-area role's always; an inline role's (tags
 * in NVMe metadata) only with generations, as the copy their lost writes are told by
 * (docs/INTEGRITY.md, "Lost writes", decision 4): filled by writes, not by reads, written
 * back as any role's. Verification of an inline role stays the metadata's either way.
 */
static bool tag_store_keeps(const struct graid_array *a, unsigned role)
{
	return !tag_inline_role(a, role) || a->csum_gens;
}

static int tag_block_write(struct graid_array *a, unsigned role, struct tag_cblock *cb)
{
	int rc = member_pio(&a->members[role], cb->img, TAG_BLOCK_BYTES,
			    tag_block_off(a, cb->index), true);

	if (rc)
		graid__log(GRAID_LOG_WARNING, "checksums: writing tag block %llu of role %u (%s): %s",
			   (unsigned long long)cb->index, role, a->members[role].dev.path,
			   graid_strerror(rc));
	else
		cb->dirty = false;
	return rc;
}

/*
 * Make room for one more block: the least recently used blocks with no write in flight go,
 * dirty ones written first. One that cannot be written stays (the cache runs over budget).
 * "Least recently used" is approximated by a second chance: a hit only sets the block's ref
 * (a hit that relinked the list wrote three or four other blocks' lines, every I/O), and
 * eviction moves a block with ref set to the head instead, clearing it.
 * A read-only handle writes nothing: what it changed (tags made from data after a crash)
 * is its own view, dropped.
 */
static void tag_evict(struct graid_array *a, unsigned role, struct tag_role *tr)
{
	struct tag_cblock *cb = tr->tail;

	while (cb && tr->nblocks >= tr->max_blocks) {
		struct tag_cblock *prev = cb->prev;

		if (cb->ref) {
			cb->ref = false;
			tag_lru_unlink(tr, cb);
			tag_lru_push(tr, cb);
			/* The head itself: seen again, now without its second chance. */
			cb = prev ? prev : cb;
			continue;
		}
		if (cb->npend == 0 &&
		    (!cb->dirty || a->read_only || tag_block_write(a, role, cb) == 0)) {
			struct tag_cblock **pp = tag_bucket(tr, cb->index);

			while (*pp != cb)
				pp = &(*pp)->hnext;
			*pp = cb->hnext;
			tag_lru_unlink(tr, cb);
			tag_cblock_free(cb);
			tr->nblocks--;
		}
		cb = prev;
	}
}

/* A read error of the medium (the device still answers), not of the device or of memory. */
static bool tag_media_error(int rc)
{
	return rc == -EIO || rc == -EBADMSG || rc == -ENODATA || rc == -EILSEQ;
}

/*
 * Tag block @p index of @p role, cached (a miss reads it from the member, synchronously,
 * under the role's lock; @p fresh: the caller overwrites every tag, so none is read).
 */
static int tag_get(struct graid_array *a, unsigned role, uint64_t index, bool fresh,
		   struct tag_cblock **out)
{
	struct tag_role *tr = &a->tags->role[role];
	struct tag_cblock *cb = tag_find(tr, index);
	int rc;

	if (cb) {
		if (!cb->ref)
			cb->ref = true;
		*out = cb;
		return 0;
	}
	if (tr->nblocks >= tr->max_blocks)
		tag_evict(a, role, tr);
	cb = aligned_alloc(64, TAG_CBLOCK_ALLOC);
	if (!cb)
		return -ENOMEM;
	memset(cb, 0, sizeof(*cb));
	if (posix_memalign((void **)&cb->img, ARRAY_ALIGN, TAG_BLOCK_BYTES)) {
		free(cb);
		return -ENOMEM;
	}
	cb->index = index;
	cb->load = ++tr->loads;
	if (fresh) {
		memset(cb->img, 0, TAG_BLOCK_BYTES);
	} else {
		rc = member_pio(&a->members[role], cb->img, TAG_BLOCK_BYTES,
				tag_block_off(a, index), false);
		if (rc && tag_media_error(rc)) {
			/*
			 * A bad sector under the tags costs their protection, not the member:
			 * every tag of the block absent, and the block rewritten (a drive remaps
			 * the sector then) at the next write-back.
			 */
			graid__log(GRAID_LOG_ERR, "checksums: reading tag block %llu of role %u "
						  "(%s): %s; data-area blocks %llu..%llu go unverified "
						  "until written again", (unsigned long long)index, role,
				   a->members[role].dev.path, graid_strerror(rc),
				   (unsigned long long)index * TAGS_PER_BLOCK,
				   (unsigned long long)(index + 1) * TAGS_PER_BLOCK - 1);
			memset(cb->img, 0, TAG_BLOCK_BYTES);
			cb->dirty = true;
			rc = 0;
		}
		if (rc) {
			graid__log(GRAID_LOG_ERR, "checksums: reading tag block %llu of role %u "
						  "(%s): %s", (unsigned long long)index, role,
				   a->members[role].dev.path, graid_strerror(rc));
			tag_cblock_free(cb);
			return rc;
		}
	}
	cb->hnext = *tag_bucket(tr, index);
	*tag_bucket(tr, index) = cb;
	tag_lru_push(tr, cb);
	tr->nblocks++;
	*out = cb;
	return 0;
}

static tag_t tag_at(const struct tag_cblock *cb, unsigned slot)
{
	return tag_decode(cb->img + (size_t)slot * TAG_BYTES);
}

static void tag_put(struct tag_cblock *cb, unsigned slot, tag_t t)
{
	tag_encode(t, cb->img + (size_t)slot * TAG_BYTES);
	cb->dirty = true;
}

/* Whether a write in flight over the block in @p slot would leave data of CRC @p crc. */
static bool tag_pend_accepts(const struct tag_cblock *cb, unsigned slot, uint32_t crc)
{
	const struct tag_pend *p = cb->pend ? &cb->pend[slot] : NULL;

	if (!p || p->n == 0)
		return false;
	if (p->many)
		return true;
	for (unsigned k = 0; k < p->ntags; k++)
		if (tag_crc_of(p->tag[k]) == crc)
			return true;
	return false;
}

/* A byte range of the data area as a run of whole blocks, or -EINVAL. */
static int tag_range(const struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	if (!a->tags || role >= a->tags->nroles || off % TAG_DATA_BLOCK || len % TAG_DATA_BLOCK ||
	    off > a->lay.member_bytes || len > a->lay.member_bytes - off)
		return -EINVAL;
	return 0;
}

static uint64_t tag_iov_bytes(const struct iovec *iov, unsigned iovcnt)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < iovcnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* The CRCs of the next @p n blocks under the cursor, the first block number @p block. */
static void tag_crcs(const struct graid_array *a, unsigned role, uint64_t block, unsigned n,
		     struct tag_iov_cursor *c, uint32_t *crc)
{
	const uint32_t prefix = a->tags->prefix[role];

	for (unsigned j = 0; j < n; j++)
		crc[j] = tag_iov_crc(c, tag_crc_begin_at(prefix, block + j));
}

/*
 * What tag_walk() does with each block of its range: the block's tag block and slot, its
 * CRC; under the role's lock. 0 or -errno, which stops the walk.
 */
typedef int (*tag_walk_fn)(struct tag_cblock *cb, unsigned slot, uint64_t blk, uint32_t crc,
			   void *arg);

/*
 * The blocks of [off, off + len of @p iov) of @p role, TAG_STORE_BATCH at a time: their CRCs
 * computed without the lock, then each handed to @p fn with its tag block (read in if not
 * cached) under the lock. 0 or the first -errno.
 */
static int tag_walk(struct graid_array *a, unsigned role, uint64_t off,
		    const struct iovec *iov, unsigned iovcnt, tag_walk_fn fn, void *arg)
{
	uint64_t len = tag_iov_bytes(iov, iovcnt);
	struct tag_iov_cursor c = { .iov = iov, .cnt = iovcnt };
	uint64_t first = off / TAG_DATA_BLOCK, n = len / TAG_DATA_BLOCK;
	int rc = tag_range(a, role, off, len);

	/*
	 * Inline (the tags in the blocks' NVMe metadata): a read was checked as it ended against
	 * the metadata it brought, and a write's metadata got its tags as its bytes went out;
	 * with generations the copy kept here is set too (tag_store_keeps), never verified.
	 */
	if (rc || !tag_store_keeps(a, role))
		return rc;
	for (uint64_t done = 0; rc == 0 && done < n;) {
		struct tag_role *tr = &a->tags->role[role];
		unsigned b = n - done < TAG_STORE_BATCH ? (unsigned)(n - done) : TAG_STORE_BATCH;
		uint32_t crc[TAG_STORE_BATCH];
		struct tag_cblock *cb = NULL;

		tag_crcs(a, role, first + done, b, &c, crc);
		pthread_mutex_lock(&tr->lock);
		for (unsigned j = 0; j < b && rc == 0; j++) {
			uint64_t blk = first + done + j;

			if (!cb || cb->index != tag_block_index(blk))
				rc = tag_get(a, role, tag_block_index(blk), false, &cb);
			if (rc == 0)
				rc = fn(cb, tag_slot(blk), blk, crc[j], arg);
		}
		pthread_mutex_unlock(&tr->lock);
		done += b;
	}
	return rc;
}

/* tag_store_verify()'s count of bad blocks, and where the first ones go. */
struct tag_verify_arg {
	struct tag_bad *bad;
	unsigned max, found;
};

static int tag_verify_one(struct tag_cblock *cb, unsigned slot, uint64_t blk, uint32_t crc,
			  void *arg)
{
	struct tag_verify_arg *v = arg;

	if (tag_holds(tag_at(cb, slot), crc) || tag_pend_accepts(cb, slot, crc))
		return 0;
	if (v->found < v->max && v->bad)
		v->bad[v->found].block = blk;
	v->found++;
	return 0;
}

int tag_store_verify(struct graid_array *a, unsigned role, uint64_t off,
		     const struct iovec *iov, unsigned iovcnt, struct tag_bad *bad,
		     unsigned max, unsigned *nbad)
{
	struct tag_verify_arg v = { .bad = bad, .max = max };
	int rc;

	if (nbad)
		*nbad = 0;
	/* An inline role's reads are checked against their metadata (its copy here: never). */
	if (tag_inline_role(a, role))
		return tag_range(a, role, off, tag_iov_bytes(iov, iovcnt));
	rc = tag_walk(a, role, off, iov, iovcnt, tag_verify_one, &v);
	if (rc)
		return rc;
	if (!v.found)
		return 0;
	if (nbad)
		*nbad = v.found < max ? v.found : max;
	return -EBADMSG;
}

void tag_store_prefetch(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	const uint64_t first = off / TAG_DATA_BLOCK;
	struct tag_role *tr;
	const struct tag_cblock *cb;

	if (len == 0 || tag_range(a, role, off, len) || tag_inline_role(a, role))
		return;
	tr = &a->tags->role[role];
	/* A hint: never waits for another thread's verify or write. */
	if (pthread_mutex_trylock(&tr->lock))
		return;
	cb = tag_find(tr, tag_block_index(first));
	if (cb) {
		uint64_t last = (off + len) / TAG_DATA_BLOCK - 1;
		uintptr_t at, end;

		if (tag_block_index(last) != cb->index)
			last = (cb->index + 1) * TAGS_PER_BLOCK - 1;
		at = (uintptr_t)(cb->img + (size_t)tag_slot(first) * TAG_BYTES) & ~(uintptr_t)63;
		end = (uintptr_t)(cb->img + (size_t)tag_slot(last) * TAG_BYTES);
		/* Not loads: the unlock does not wait for them to arrive. */
		for (unsigned k = 0; at <= end && k < TAG_PREFETCH_LINES; at += 64, k++)
			__builtin_prefetch((const void *)at);
	}
	pthread_mutex_unlock(&tr->lock);
}

/* One write over the block in @p slot ended; the tag it leaves once no write is in flight. */
static void tag_pend_end(struct tag_role *tr, struct tag_cblock *cb, unsigned slot, bool ok)
{
	struct tag_pend *p = cb->pend ? &cb->pend[slot] : NULL;

	if (!p || p->n == 0)
		return;
	p->n--;
	p->nok += ok;
	if (p->n)
		return;
	/*
	 * Idle again. One new tag that ended well is the block's; several different ones raced
	 * and which landed last is unknown: the block is left unverified (absent) until its next
	 * write rather than ever failing right data.
	 */
	if (p->nok)
		tag_put(cb, slot, p->ntags == 1 && !p->many ? p->tag[0] : 0);
	memset(p, 0, sizeof(*p));
	if (--cb->npend == 0) {
		if (tr->nspare < TAG_PEND_SPARES)
			tr->spare[tr->nspare++] = cb->pend;
		else
			free(cb->pend);
		cb->pend = NULL;
	}
}

static int tag_pend_begin(struct tag_role *tr, struct tag_cblock *cb, unsigned slot, tag_t t)
{
	struct tag_pend *p;

	if (!cb->pend) {
		cb->pend = tr->nspare ? tr->spare[--tr->nspare]
				      : calloc(TAGS_PER_BLOCK, sizeof(*cb->pend));
		if (!cb->pend)
			return -ENOMEM;
	}
	p = &cb->pend[slot];
	if (p->n++ == 0)
		cb->npend++;
	for (unsigned k = 0; k < p->ntags; k++)
		if (p->tag[k] == t)
			return 0;
	if (p->ntags < TAG_PEND_TAGS)
		p->tag[p->ntags++] = t;
	else
		p->many = true;
	return 0;
}

/* End the pending state of blocks [first, first + n) of @p role. Lock held. */
static void tag_end_locked(struct tag_role *tr, uint64_t first, uint64_t n, bool ok)
{
	struct tag_cblock *cb = NULL;

	for (uint64_t blk = first; blk < first + n; blk++) {
		if (!cb || cb->index != tag_block_index(blk))
			cb = tag_find(tr, tag_block_index(blk));
		if (cb)
			tag_pend_end(tr, cb, tag_slot(blk), ok);
	}
}

/*
 * The new tag of the block in @p slot written (or set) with data of CRC @p crc: without
 * generations meta 0, as format 1.5 writes; with them @p meta_in[i] when given, else
 * @p dflt_next ? the next generation of its tag now : the meta bits it has. The old tag is
 * read only then: without generations a write does not touch the tag block's image.
 */
static tag_t tag_new(const struct graid_array *a, const struct tag_cblock *cb, unsigned slot,
		     uint32_t crc, const uint32_t *meta_in, uint64_t i, bool dflt_next)
{
	tag_t old;

	if (!a->csum_gens)
		return tag_make(crc);
	if (meta_in)
		return tag_make_meta(crc, meta_in[i]);
	old = tag_at(cb, slot);
	return tag_make_meta(crc, dflt_next ? tag_gen_next(tag_gen(old)) : tag_meta_bits(old));
}

int tag_store_write_begin(struct graid_array *a, unsigned role, uint64_t off,
			  const struct iovec *iov, unsigned iovcnt)
{
	return tag_store_write_begin_meta(a, role, off, iov, iovcnt, NULL, NULL);
}

int tag_store_write_begin_meta(struct graid_array *a, unsigned role, uint64_t off,
			       const struct iovec *iov, unsigned iovcnt, const uint32_t *meta_in,
			       uint32_t *meta_out)
{
	uint64_t len = tag_iov_bytes(iov, iovcnt);
	struct tag_iov_cursor c = { .iov = iov, .cnt = iovcnt };
	uint64_t first = off / TAG_DATA_BLOCK, n = len / TAG_DATA_BLOCK, done = 0;
	int rc = tag_range(a, role, off, len);

	if (rc == 0 && !tag_store_keeps(a, role)) {
		/* The write carries its tags in the blocks' metadata, generation 0 (no copy kept). */
		if (meta_out)
			memset(meta_out, 0, n * sizeof(*meta_out));
		return 0;
	}
	while (rc == 0 && done < n) {
		struct tag_role *tr = &a->tags->role[role];
		unsigned b = n - done < TAG_STORE_BATCH ? (unsigned)(n - done) : TAG_STORE_BATCH;
		uint32_t crc[TAG_STORE_BATCH];
		struct tag_cblock *cb = NULL;
		unsigned j = 0;

		tag_crcs(a, role, first + done, b, &c, crc);
		pthread_mutex_lock(&tr->lock);
		for (; j < b && rc == 0; j++) {
			uint64_t blk = first + done + j;

			if (!cb || cb->index != tag_block_index(blk))
				rc = tag_get(a, role, tag_block_index(blk), false, &cb);
			if (rc == 0) {
				tag_t t = tag_new(a, cb, tag_slot(blk), crc[j], meta_in, done + j,
						  true);

				rc = tag_pend_begin(tr, cb, tag_slot(blk), t);
				if (meta_out)
					meta_out[done + j] = tag_meta_bits(t);
			}
		}
		/* A failure takes back what this call began: the write is not issued. */
		if (rc)
			tag_end_locked(tr, first, done + j - 1, false);
		pthread_mutex_unlock(&tr->lock);
		done += b;
	}
	return rc;
}

void tag_store_write_end(struct graid_array *a, unsigned role, uint64_t off, uint64_t len,
			 bool ok)
{
	struct tag_role *tr;

	if (tag_range(a, role, off, len) || !tag_store_keeps(a, role))
		return;
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	tag_end_locked(tr, off / TAG_DATA_BLOCK, len / TAG_DATA_BLOCK, ok);
	pthread_mutex_unlock(&tr->lock);
}

/* tag_store_set_meta()'s meta words, and where its range starts. */
struct tag_set_arg {
	const struct graid_array *a;
	const uint32_t *meta;
	uint64_t first;
};

static int tag_set_one(struct tag_cblock *cb, unsigned slot, uint64_t blk, uint32_t crc,
		       void *arg)
{
	const struct tag_set_arg *sa = arg;

	tag_put(cb, slot, tag_new(sa->a, cb, slot, crc, sa->meta, blk - sa->first, false));
	return 0;
}

int tag_store_set(struct graid_array *a, unsigned role, uint64_t off,
		  const struct iovec *iov, unsigned iovcnt)
{
	return tag_store_set_meta(a, role, off, iov, iovcnt, NULL);
}

int tag_store_set_meta(struct graid_array *a, unsigned role, uint64_t off,
		       const struct iovec *iov, unsigned iovcnt, const uint32_t *meta)
{
	struct tag_set_arg sa = { .a = a, .meta = meta, .first = off / TAG_DATA_BLOCK };

	return tag_walk(a, role, off, iov, iovcnt, tag_set_one, &sa);
}

/* What one block's slot says: its tag, and the writes in flight over it. Lock held. */
static void tag_peek_fill(const struct tag_cblock *cb, unsigned slot, struct tag_peek *out)
{
	const struct tag_pend *p = cb->pend ? &cb->pend[slot] : NULL;

	out->cached = true;
	out->tag = tag_at(cb, slot);
	out->inflight = p ? p->n : 0;
	/* As tag_pend_end() will leave it: one distinct new tag, or absent for several. */
	out->next = out->inflight && p->ntags == 1 && !p->many ? p->tag[0] : 0;
}

static int tag_peek(struct graid_array *a, unsigned role, uint64_t block, unsigned n,
		    struct tag_peek *out, bool load)
{
	struct tag_cblock *cb = NULL;
	struct tag_role *tr;
	bool missed = false;
	int rc;

	if (block > UINT64_MAX / TAG_DATA_BLOCK)
		return -EINVAL;
	rc = tag_range(a, role, block * TAG_DATA_BLOCK, (uint64_t)n * TAG_DATA_BLOCK);
	if (rc)
		return rc;
	if (!tag_store_keeps(a, role))
		return -EOPNOTSUPP;
	memset(out, 0, n * sizeof(*out));
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	for (unsigned i = 0; rc == 0 && i < n; i++) {
		uint64_t blk = block + i;

		if (!cb || cb->index != tag_block_index(blk)) {
			if (load)
				rc = tag_get(a, role, tag_block_index(blk), false, &cb);
			else
				cb = tag_find(tr, tag_block_index(blk));
		}
		if (rc == 0 && cb)
			tag_peek_fill(cb, tag_slot(blk), &out[i]);
		else
			missed = true;
	}
	pthread_mutex_unlock(&tr->lock);
	return rc ? rc : missed ? -ENOENT : 0;
}

int tag_store_peek(struct graid_array *a, unsigned role, uint64_t block, unsigned n,
		   struct tag_peek *out)
{
	return tag_peek(a, role, block, n, out, false);
}

int tag_store_peek_load(struct graid_array *a, unsigned role, uint64_t block, unsigned n,
			struct tag_peek *out)
{
	return tag_peek(a, role, block, n, out, true);
}

int tag_store_span(struct graid_array *a, unsigned role, uint64_t block, bool load,
		   struct tag_span *out)
{
	struct tag_role *tr;
	struct tag_cblock *cb;
	int rc;

	memset(out, 0, sizeof(*out));
	if (block > UINT64_MAX / TAG_DATA_BLOCK)
		return -EINVAL;
	rc = tag_range(a, role, block * TAG_DATA_BLOCK, TAG_DATA_BLOCK);
	if (rc)
		return rc;
	/* An inline role's entries are its tag-area copy, filled by writes only: no flag. */
	if (tag_inline_role(a, role) || !a->csum_gens)
		return -EOPNOTSUPP;
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	if (load)
		rc = tag_get(a, role, tag_block_index(block), false, &cb);
	else
		cb = tag_find(tr, tag_block_index(block));
	if (rc == 0 && cb) {
		out->token = cb->load;
		out->checked = cb->checked;
	}
	pthread_mutex_unlock(&tr->lock);
	return rc ? rc : cb ? 0 : -ENOENT;
}

bool tag_store_span_mark(struct graid_array *a, unsigned role, uint64_t block, uint64_t token)
{
	struct tag_role *tr;
	struct tag_cblock *cb;
	bool set = false;

	if (block > UINT64_MAX / TAG_DATA_BLOCK ||
	    tag_range(a, role, block * TAG_DATA_BLOCK, TAG_DATA_BLOCK) || tag_inline_role(a, role))
		return false;
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	cb = tag_find(tr, tag_block_index(block));
	/* The entry checked, not one loaded again since (its check is of another image). */
	if (cb && cb->load == token) {
		cb->checked = true;
		set = true;
	}
	pthread_mutex_unlock(&tr->lock);
	return set;
}

int tag_store_behind(struct graid_array *a, unsigned role, uint64_t block, uint64_t n,
		     const void *meta, const struct nvme_meta_fmt *fmt, bool **out)
{
	struct tag_peek pk[64];

	*out = NULL;
	if (!a->csum_gens || !tag_inline_role(a, role))
		return 0;
	for (uint64_t i = 0; i < n; i += 64) {
		unsigned k = n - i < 64 ? (unsigned)(n - i) : 64;
		int rc = tag_peek(a, role, block + i, k, pk, false);

		if (rc && rc != -ENOENT)
			return 0; /* a range it does not take: nothing to compare */
		for (unsigned j = 0; j < k; j++) {
			tag_t t = nvme_meta_tag_get(meta, fmt, i + j);

			if (!pk[j].cached || pk[j].inflight || !tag_valid(pk[j].tag) ||
			    !tag_valid(t) || !tag_gen_ahead(tag_gen(pk[j].tag), tag_gen(t)))
				continue;
			if (!*out && !(*out = calloc(n, sizeof(**out))))
				return -ENOMEM;
			(*out)[i + j] = true;
		}
	}
	return 0;
}

/*
 * Whole tag blocks nobody has cached are zeroed on the member at once (an absent tag is
 * never wrong, so this needs no ordering with the data); the rest change in the cache.
 */
int tag_store_forget(struct graid_array *a, unsigned role, uint64_t off, uint64_t len)
{
	uint64_t first = off / TAG_DATA_BLOCK, end = first + len / TAG_DATA_BLOCK;
	uint64_t run = 0, nrun = 0; /* uncached whole tag blocks waiting to be zeroed */
	struct tag_role *tr;
	int rc = tag_range(a, role, off, len);

	/*
	 * Inline: a zeroed block reads with zeroed (absent) metadata (docs/INTEGRITY.md); with
	 * generations its copy here is made absent too.
	 */
	if (rc || len == 0 || !tag_store_keeps(a, role))
		return rc;
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	for (uint64_t blk = first; rc == 0 && blk < end;) {
		uint64_t index = tag_block_index(blk);
		uint64_t stop = (index + 1) * TAGS_PER_BLOCK < end ? (index + 1) * TAGS_PER_BLOCK
								  : end;
		bool whole = tag_slot(blk) == 0 && stop - blk == TAGS_PER_BLOCK;
		struct tag_cblock *cb = tag_find(tr, index);

		if (whole && !cb) {
			if (nrun && run + nrun != index) {
				rc = member_zero_range(&a->members[role], tag_block_off(a, run),
						       nrun * TAG_BLOCK_BYTES);
				nrun = 0;
			}
			if (nrun++ == 0)
				run = index;
			blk = stop;
			continue;
		}
		if (!cb)
			rc = tag_get(a, role, index, false, &cb);
		for (; rc == 0 && blk < stop; blk++)
			tag_put(cb, tag_slot(blk), 0);
	}
	if (rc == 0 && nrun)
		rc = member_zero_range(&a->members[role], tag_block_off(a, run),
				       nrun * TAG_BLOCK_BYTES);
	pthread_mutex_unlock(&tr->lock);
	return rc;
}

/* Write @p role's dirty blocks; whether any was written in *@p wrote. 0 or the first -errno. */
static int tag_role_flush(struct graid_array *a, unsigned role, bool *wrote)
{
	struct tag_role *tr = &a->tags->role[role];
	int rc = 0;

	pthread_mutex_lock(&tr->lock);
	for (struct tag_cblock *cb = tr->head; cb; cb = cb->next) {
		int err;

		if (!cb->dirty)
			continue;
		err = tag_block_write(a, role, cb);
		if (err && !rc)
			rc = err;
		*wrote |= !err;
	}
	pthread_mutex_unlock(&tr->lock);
	return rc;
}

/* Every writable role's dirty tag blocks written; with @p flush, each role written to flushed. */
static int tag_store_write(struct graid_array *a, bool flush)
{
	int rc = 0;

	if (!a->tags)
		return 0;
	for (unsigned r = 0; r < a->tags->nroles; r++) {
		bool wrote = false;
		int err;

		/* A role out has no device to write to; its tags are reset when it gets one. */
		if (!array_role_writable(a, r))
			continue;
		err = tag_role_flush(a, r, &wrote);
		if (wrote && flush) {
			int ferr = member_flush(&a->members[r]);

			if (!err)
				err = ferr;
		}
		if (err && !rc)
			rc = err;
	}
	return rc;
}

int tag_store_flush(struct graid_array *a)
{
	return tag_store_write(a, true);
}

int tag_store_write_back(struct graid_array *a)
{
	return tag_store_write(a, false);
}

int tag_store_role_reset(struct graid_array *a, unsigned role)
{
	struct tag_role *tr;
	int rc;

	if (!a->tags)
		return 0;
	if (role >= a->tags->nroles)
		return -EINVAL;
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	tag_role_drop(tr);
	rc = member_zero_range(&a->members[role], a->tag_offset, a->tag_bytes);
	pthread_mutex_unlock(&tr->lock);
	tag_inline_attach(a, role);
	if (rc)
		graid__log(GRAID_LOG_ERR, "checksums: zeroing the tag area of role %u (%s): %s",
			   role, a->members[role].dev.path, graid_strerror(rc));
	return rc;
}

int tag_store_add_role(struct graid_array *a, unsigned role)
{
	struct tag_store *s = a->tags;

	if (!s)
		return 0;
	if (role >= s->cap || role < s->nroles)
		return -EINVAL;
	tag_inline_attach(a, role);
	/* Readers look without a lock, and only at roles below the array's member count. */
	atomic_thread_fence(memory_order_release);
	s->nroles = role + 1;
	return 0;
}

int tag_store_absent(struct graid_array *a, unsigned role, uint64_t off, unsigned nblocks,
		     uint64_t *absent)
{
	const uint64_t first = off / TAG_DATA_BLOCK;
	struct tag_cblock *cb = NULL;
	struct tag_role *tr;
	int rc = tag_range(a, role, off, (uint64_t)nblocks * TAG_DATA_BLOCK);

	if (rc == 0 && tag_inline_role(a, role))
		return tag_inline_absent(a, role, off, nblocks, absent);
	if (rc)
		return rc;
	memset(absent, 0, (nblocks + 63u) / 64u * sizeof(*absent));
	tr = &a->tags->role[role];
	pthread_mutex_lock(&tr->lock);
	for (unsigned i = 0; rc == 0 && i < nblocks; i++) {
		uint64_t blk = first + i;

		if (!cb || cb->index != tag_block_index(blk))
			rc = tag_get(a, role, tag_block_index(blk), false, &cb);
		if (rc == 0 && !tag_valid(tag_at(cb, tag_slot(blk))))
			absent[i / 64] |= 1ull << (i % 64);
	}
	pthread_mutex_unlock(&tr->lock);
	return rc;
}
