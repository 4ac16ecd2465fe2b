/* SPDX-License-Identifier: MIT */
/* The write-hole journal at run time: log space per member, sequence numbers, checkpoints. */
#include <endian.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "meta/journal.h"
#include "member/member.h"
#include "meta/array_flush.h"
#include "meta/member_fail.h"

/* The run-time state. */
/* Updates that may be in flight at once (claimed and not done). */
#define JOURNAL_INFLIGHT 65536u

/* One entry still holding its place in a member's log. Positions are logical: they only grow. */
struct jent {
	uint64_t seq, start;
};

struct jmember {
	uint64_t head;             /* next free logical position */
	struct jent *ent;          /* FIFO of live entries, oldest first */
	unsigned cap, first, n;
};

struct journal {
	uint64_t offset, bytes;    /* the log area on every member */
	uint64_t ring;             /* bytes for entries: the area less the records */
	pthread_mutex_t lock;
	uint64_t next_seq;         /* the next update's number */
	uint64_t base;             /* lowest number claimed and not done */
	uint64_t durable_tail;     /* below this, updates are durable in place (on disk) */
	uint64_t generation;       /* of the last checkpoint record written */
	bool checkpointing;
	unsigned cap;              /* entries a role's list holds */
	uint8_t *done;             /* JOURNAL_INFLIGHT flags, by seq modulo */
	unsigned nmembers;
	struct jmember m[];
};

void journal_restart(struct journal *j, uint64_t next_seq, uint64_t generation)
{
	pthread_mutex_lock(&j->lock);
	j->next_seq = j->base = j->durable_tail = next_seq;
	j->generation = generation;
	pthread_mutex_unlock(&j->lock);
}

_Static_assert(sizeof(struct journal_entry_disk) == 0x68, "journal entry header layout");
_Static_assert(offsetof(struct journal_entry_disk, geometry) == 0x60, "geometry");
_Static_assert(offsetof(struct journal_entry_disk, participants) == 0x40, "participants");
_Static_assert(sizeof(struct journal_record_disk) == 0x38, "journal record layout");
_Static_assert(offsetof(struct journal_entry_disk, crc) == 8, "entry crc at 8");
_Static_assert(offsetof(struct journal_record_disk, crc) == 8, "record crc at 8");

/* Both block kinds keep their CRC at bytes 8..11 and compute it with those bytes zero. */
#define JOURNAL_CRC_AT 8u

uint32_t journal_block_crc(const void *block)
{
	static const uint8_t zero[4];
	const uint8_t *b = block;
	uint32_t reg = 0xFFFFFFFFu;

	reg = crc32c_update(reg, b, JOURNAL_CRC_AT);
	reg = crc32c_update(reg, zero, sizeof(zero));
	reg = crc32c_update(reg, b + JOURNAL_CRC_AT + 4, JOURNAL_BLOCK - JOURNAL_CRC_AT - 4);
	return reg ^ 0xFFFFFFFFu;
}

void journal_seal(void *block)
{
	uint32_t crc = htole32(journal_block_crc(block));

	memcpy((uint8_t *)block + JOURNAL_CRC_AT, &crc, 4);
}

uint64_t journal_default_bytes(uint32_t chunk)
{
	/* Room for a few hundred updates in flight; see docs/JOURNAL.md for the measurements. */
	uint64_t b = 64ull * chunk;

	return b < (32u << 20) ? (32u << 20) : b;
}

static uint64_t jround(uint64_t n)
{
	return (n + JOURNAL_BLOCK - 1) / JOURNAL_BLOCK * JOURNAL_BLOCK;
}

/* Entry lists for roles [j->nmembers, @p n): 0, or -ENOMEM with none of them added. */
static int jadd_roles(struct journal *j, unsigned n)
{
	unsigned from = j->nmembers;

	for (unsigned i = from; i < n; i++) {
		j->m[i].ent = calloc(j->cap, sizeof(struct jent));
		j->m[i].cap = j->cap;
		j->m[i].head = j->m[i].first = j->m[i].n = 0;
		if (j->m[i].ent)
			continue;
		while (i-- > from) {
			free(j->m[i].ent);
			j->m[i].ent = NULL;
		}
		return -ENOMEM;
	}
	if (n > j->nmembers)
		j->nmembers = n;
	return 0;
}

int journal_add_roles(struct graid_array *a, unsigned nmembers)
{
	struct journal *j = a->journal;
	int rc;

	if (!j)
		return 0;
	if (nmembers > a->member_cap)
		return -EINVAL;
	pthread_mutex_lock(&j->lock);
	rc = jadd_roles(j, nmembers);
	pthread_mutex_unlock(&j->lock);
	return rc;
}

int journal_init(struct graid_array *a, uint64_t offset, uint64_t bytes)
{
	struct journal *j;
	uint64_t ring = bytes > JOURNAL_FIRST_ENTRY ? bytes - JOURNAL_FIRST_ENTRY : 0;
	unsigned cap = (unsigned)(ring / (2 * JOURNAL_BLOCK) + 2);

	/* Four of the largest single-stripe entries must fit, or the log would stall. */
	if (ring < 4 * (JOURNAL_BLOCK + (uint64_t)a->lay.chunk) || ring % JOURNAL_BLOCK) {
		graid__log(GRAID_LOG_ERR, "journal: a %llu-byte log is too small for %u-byte chunks",
			   (unsigned long long)bytes, a->lay.chunk);
		return -EINVAL;
	}
	/* Slots for every role a grow of this open may add; their entries when it does. */
	j = calloc(1, sizeof(*j) + a->member_cap * sizeof(struct jmember));
	if (!j)
		return -ENOMEM;
	pthread_mutex_init(&j->lock, NULL);
	j->cap = cap;
	j->done = calloc(JOURNAL_INFLIGHT, 1);
	if (!j->done || jadd_roles(j, a->nmembers)) {
		a->journal = j;
		journal_free(a);
		return -ENOMEM;
	}
	j->offset = offset;
	j->bytes = bytes;
	a->log_area.offset = offset;
	a->log_area.bytes = bytes;
	j->ring = ring;
	j->next_seq = j->base = j->durable_tail = 1;
	a->journal = j;
	return 0;
}

void journal_free(struct graid_array *a)
{
	struct journal *j = a->journal;

	if (!j)
		return;
	for (unsigned i = 0; i < j->nmembers; i++)
		free(j->m[i].ent);
	free(j->done);
	pthread_mutex_destroy(&j->lock);
	free(j);
	a->journal = NULL;
}

unsigned journal_max_run(const struct graid_array *a)
{
	uint64_t fit = (a->journal->ring / 4 - JOURNAL_BLOCK) / a->lay.chunk;

	return fit < 1 ? 1 : fit > SOP_RUN_MAX ? SOP_RUN_MAX : (unsigned)fit;
}

/* ---- checkpoint records ------------------------------------------------------------- */

/* Through @p fd, loaded once by the caller, so that a failure is the device's it names. */
static int journal_write_record(struct graid_array *a, struct member *m, int fd, uint64_t gen,
				uint64_t tail, uint64_t durable)
{
	struct journal *j = a->journal;
	struct journal_record_disk r;
	void *buf;
	int rc;

	/* Taken over by another host: its records, not ours, from now on. */
	if (array_foreign(a))
		return -ESTALE;

	if (posix_memalign(&buf, ARRAY_ALIGN, JOURNAL_BLOCK))
		return -ENOMEM;
	memset(buf, 0, JOURNAL_BLOCK);
	memset(&r, 0, sizeof(r));
	memcpy(r.magic, JOURNAL_RECORD_MAGIC, 8);
	r.version = htole32(JOURNAL_VERSION);
	memcpy(r.array_uuid, a->uuid, 16);
	r.generation = htole64(gen);
	r.tail = htole64(tail);
	r.durable = htole64(durable);
	memcpy(buf, &r, sizeof(r));
	journal_seal(buf);
	rc = member_pio_fd(m, fd, buf, JOURNAL_BLOCK,
			   j->offset + (gen % JOURNAL_RECORDS) * JOURNAL_BLOCK, true);
	if (rc == 0)
		rc = member_flush_fd(m, fd);
	free(buf);
	return rc;
}

/*
 * Write a record with @p tail as both tail and durable mark on every writable member (all
 * of them were just flushed); failures take the member out. A crash part-way leaves some
 * members with the new mark: recovery takes the highest, which is true for all.
 */
static void journal_write_records(struct graid_array *a, uint64_t tail)
{
	struct journal *j = a->journal;
	uint64_t gen;

	pthread_mutex_lock(&j->lock);
	gen = ++j->generation;
	pthread_mutex_unlock(&j->lock);
	for (unsigned r = 0; r < a->nmembers; r++) {
		/* A late error of a device a replace took the role from is not its new one's. */
		int fd = a->members[r].dev.fd, rc;

		if (!array_role_writable(a, r))
			continue;
		rc = journal_write_record(a, &a->members[r], fd, gen, tail, tail);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "journal: member %u (%s): checkpoint write failed: %s",
				   r, a->members[r].dev.path, graid_strerror(rc));
			array_member_io_failed(a, r, fd, rc);
		}
	}
}

int journal_reset(struct graid_array *a)
{
	struct journal *j = a->journal;
	uint64_t tail;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	tail = j->next_seq;
	pthread_mutex_unlock(&j->lock);
	journal_write_records(a, tail);
	pthread_mutex_lock(&j->lock);
	/* Nothing is in flight here (create, open): every place in every log is free again. */
	for (unsigned r = 0; r < j->nmembers; r++)
		j->m[r].head = j->m[r].first = j->m[r].n = 0;
	if (j->durable_tail < tail)
		j->durable_tail = tail;
	pthread_mutex_unlock(&j->lock);
	return atomic_load(&a->broken) ? -EIO : 0;
}

int journal_reset_member(struct graid_array *a, struct member *m)
{
	struct journal *j = a->journal;
	uint64_t tail, gen, durable;
	int rc;

	if (!j)
		return 0;
	/* Two fresh generations: a checkpoint running now takes later ones and wins. */
	pthread_mutex_lock(&j->lock);
	tail = j->next_seq;
	durable = j->durable_tail;
	gen = j->generation + 1;
	j->generation += 2;
	pthread_mutex_unlock(&j->lock);
	/* Both slots, so that no older record with a lower tail is left to win. */
	rc = journal_write_record(a, m, m->dev.fd, gen, tail, durable);
	if (rc == 0)
		rc = journal_write_record(a, m, m->dev.fd, gen + 1, tail, durable);
	return rc;
}

int journal_checkpoint(struct graid_array *a)
{
	struct journal *j = a->journal;
	uint64_t tail;
	int rc;

	pthread_mutex_lock(&j->lock);
	if (j->checkpointing) {
		pthread_mutex_unlock(&j->lock);
		return 0; /* another thread is at it; the caller waits for space as usual */
	}
	j->checkpointing = true;
	tail = j->base; /* every update below has completed in place */
	pthread_mutex_unlock(&j->lock);
	rc = array_flush_members(a, NULL);
	if (rc == 0)
		journal_write_records(a, tail);
	pthread_mutex_lock(&j->lock);
	if (rc == 0 && j->durable_tail < tail)
		j->durable_tail = tail;
	j->checkpointing = false;
	pthread_mutex_unlock(&j->lock);
	graid__log(GRAID_LOG_DEBUG, "journal: checkpoint: updates below %llu are durable in place%s",
		   (unsigned long long)tail, rc ? " (flush failed)" : "");
	return rc;
}

uint64_t journal_claimed(struct graid_array *a)
{
	struct journal *j = a->journal;
	uint64_t next;

	if (!j)
		return 0;
	pthread_mutex_lock(&j->lock);
	next = j->next_seq;
	pthread_mutex_unlock(&j->lock);
	return next;
}

int journal_void_below(struct graid_array *a, uint64_t want)
{
	struct journal *j = a->journal;
	bool ended, voided;
	int rc;

	if (!j)
		return 0;
	if (atomic_load(&a->broken))
		return -EIO;
	pthread_mutex_lock(&j->lock);
	ended = j->base >= want;
	voided = j->durable_tail >= want;
	pthread_mutex_unlock(&j->lock);
	if (voided)
		return 0;
	if (!ended)
		return 1;
	rc = journal_checkpoint(a);
	if (rc)
		return rc;
	/* Another thread's checkpoint, under way, may have taken a lower mark: call again. */
	pthread_mutex_lock(&j->lock);
	voided = j->durable_tail >= want;
	pthread_mutex_unlock(&j->lock);
	return voided ? 0 : 1;
}

/* ---- claiming log space --------------------------------------------------------------- */

#if GRAID_FAULT_INJECTION
/*
 * Test seam (tests/test_reshape_grow_journal.c): while positive, each claim takes one off
 * and answers -EAGAIN, as a log full of updates in flight does.
 */
_Atomic int graid__test_journal_full;
#endif

/*
 * Where an entry of @p size bytes would start on member @p jm, or UINT64_MAX if it does not
 * fit now. *blocked_done is set when the space is held by finished, not yet durable updates.
 */
static uint64_t jplace(struct journal *j, struct jmember *jm, uint64_t size, bool *blocked_done)
{
	uint64_t start = jm->head, phys = start % j->ring;

	while (jm->n && jm->ent[jm->first].seq < j->durable_tail) {
		jm->first = (jm->first + 1) % jm->cap;
		jm->n--;
	}
	if (phys + size > j->ring)
		start += j->ring - phys; /* entries never wrap: skip the tail of the ring */
	if (jm->n == jm->cap) {
		*blocked_done |= jm->ent[jm->first].seq < j->base;
		return UINT64_MAX;
	}
	if (jm->n && start + size - jm->ent[jm->first].start > j->ring) {
		*blocked_done |= jm->ent[jm->first].seq < j->base;
		return UINT64_MAX;
	}
	return start;
}

static int jclaim_locked(struct journal *j, unsigned nmembers, const uint32_t *len,
			 struct journal_claim *c, bool *blocked_done)
{
	uint64_t start[GRAID_MAX_MEMBERS];
	bool fits = true;

	if (nmembers > j->nmembers)
		return -EINVAL; /* a geometry with roles the journal was not given: a bug */
	if (j->next_seq - j->base >= JOURNAL_INFLIGHT)
		return -EAGAIN;
	for (unsigned r = 0; r < nmembers; r++) {
		if (!len[r])
			continue;
		start[r] = jplace(j, &j->m[r], JOURNAL_BLOCK + jround(len[r]), blocked_done);
		fits &= start[r] != UINT64_MAX;
	}
	if (!fits)
		return -EAGAIN;
	c->seq = j->next_seq++;
	for (unsigned r = 0; r < nmembers; r++) {
		struct jmember *jm = &j->m[r];

		c->pos[r] = 0;
		if (!len[r])
			continue;
		jm->ent[(jm->first + jm->n) % jm->cap] = (struct jent){ c->seq, start[r] };
		jm->n++;
		jm->head = start[r] + JOURNAL_BLOCK + jround(len[r]);
		c->pos[r] = j->offset + JOURNAL_FIRST_ENTRY + start[r] % j->ring;
	}
	return 0;
}

int journal_claim(struct graid_array *a, unsigned nmembers, const uint32_t *len,
		  struct journal_claim *c)
{
	struct journal *j = a->journal;

#if GRAID_FAULT_INJECTION
	/* Read first: no write to the shared line while the seam is off (benchmarks). */
	if (atomic_load_explicit(&graid__test_journal_full, memory_order_relaxed) > 0 &&
	    atomic_fetch_sub(&graid__test_journal_full, 1) > 0)
		return -EAGAIN;
#endif
	for (int attempt = 0;; attempt++) {
		bool blocked_done = false;
		int rc;

		pthread_mutex_lock(&j->lock);
		rc = jclaim_locked(j, nmembers, len, c, &blocked_done);
		pthread_mutex_unlock(&j->lock);
		if (rc == 0 || attempt || !blocked_done)
			return rc;
		/* Finished updates hold the space: make them durable and take it back. */
		rc = journal_checkpoint(a);
		if (rc)
			return rc; /* the array broke: waiting for space would never end */
	}
}

void journal_done(struct graid_array *a, uint64_t seq)
{
	struct journal *j = a->journal;

	pthread_mutex_lock(&j->lock);
	j->done[seq % JOURNAL_INFLIGHT] = 1;
	while (j->base < j->next_seq && j->done[j->base % JOURNAL_INFLIGHT]) {
		j->done[j->base % JOURNAL_INFLIGHT] = 0;
		j->base++;
	}
	pthread_mutex_unlock(&j->lock);
}

/* ---- entries ------------------------------------------------------------------------ */

void journal_fill_header(const struct graid_array *a, void *hdr, uint64_t seq, unsigned role,
			 uint64_t member_off, const struct iovec *iov, unsigned iovcnt,
			 const uint8_t participants[32], unsigned geometry)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);
	struct journal_entry_disk e;
	uint32_t crc = 0xFFFFFFFFu, len = 0;
	unsigned np = 0;

	for (unsigned i = 0; i < iovcnt; i++) {
		crc = crc32c_update(crc, iov[i].iov_base, iov[i].iov_len);
		len += (uint32_t)iov[i].iov_len;
	}
	for (unsigned b = 0; b < 32; b++)
		np += (unsigned)__builtin_popcount(participants[b]);
	memset(hdr, 0, JOURNAL_BLOCK);
	memset(&e, 0, sizeof(e));
	memcpy(e.magic, JOURNAL_ENTRY_MAGIC, 8);
	/* A grow's old geometry while it runs: not for a reader of version 1 (journal.h). */
	e.version = htole32(rs && geometry != rs->new_lay.nmembers ? JOURNAL_VERSION_GROW
								 : JOURNAL_VERSION);
	memcpy(e.array_uuid, a->uuid, 16);
	e.seq = htole64(seq);
	e.member_off = htole64(member_off);
	e.len = htole32(len);
	e.role = htole32(role);
	e.payload_crc = htole32(crc ^ 0xFFFFFFFFu);
	e.nparticipants = htole32(np);
	memcpy(e.participants, participants, 32);
	e.geometry = htole32(geometry);
	memcpy(hdr, &e, sizeof(e));
	journal_seal(hdr);
}
