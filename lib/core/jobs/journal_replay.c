/* SPDX-License-Identifier: MIT */
/* The write-hole journal at open: read the logs, replay complete updates, start afresh. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "meta/journal.h"
#include "jobs/jobs.h"
#include "jobs/reshape_qlast.h"
#include "member/member.h"
#include "member/tag_store.h"
#include "meta/array_flush.h"
#include "meta/member_fail.h"

/* A valid entry found in a member's log. */
struct jfound {
	uint64_t seq;
	uint64_t pos;              /* member byte offset of the header */
	uint64_t member_off;
	uint32_t len;
	unsigned role;
	unsigned geometry;         /* the header's: the member count of the rows' geometry */
	uint8_t participants[32];
};

struct jscan {
	struct jfound *e;
	size_t n, cap;
	uint64_t max_seq;          /* highest valid entry number seen, 0 if none */
};

static bool jusable(const struct graid_array *a, unsigned r)
{
	return a->members[r].dev.fd >= 0 && array_role_writable(a, r);
}

static bool jcrc_ok(const void *block)
{
	uint32_t want;

	memcpy(&want, (const uint8_t *)block + 8, 4);
	return journal_block_crc(block) == le32toh(want);
}

/*
 * The tail of role r's newer valid checkpoint record, 0 (nothing is void) if it has none;
 * raises *durable to its durable mark.
 */
static uint64_t jread_tail(struct graid_array *a, unsigned r, const uint8_t *area,
			   uint64_t *max_gen, uint64_t *durable)
{
	uint64_t best_gen = 0, tail = 0, dur = 0;

	for (unsigned k = 0; k < JOURNAL_RECORDS; k++) {
		const uint8_t *b = area + k * JOURNAL_BLOCK;
		struct journal_record_disk rec;

		memcpy(&rec, b, sizeof(rec));
		if (memcmp(rec.magic, JOURNAL_RECORD_MAGIC, 8) || !jcrc_ok(b) ||
		    le32toh(rec.version) != JOURNAL_VERSION || memcmp(rec.array_uuid, a->uuid, 16))
			continue;
		if (le64toh(rec.generation) >= best_gen) {
			best_gen = le64toh(rec.generation);
			tail = le64toh(rec.tail);
			dur = le64toh(rec.durable);
		}
	}
	if (dur > *durable)
		*durable = dur;
	if (best_gen == 0)
		graid__log(GRAID_LOG_WARNING, "journal: member %u (%s) has no valid checkpoint "
					      "record; all of its entries are considered", r,
			   a->members[r].dev.path);
	if (best_gen > *max_gen)
		*max_gen = best_gen;
	return tail;
}

static int jscan_add(struct jscan *sc, const struct jfound *f)
{
	if (sc->n == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 256;
		struct jfound *e = realloc(sc->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		sc->e = e;
		sc->cap = cap;
	}
	sc->e[sc->n++] = *f;
	return 0;
}

/* Collect role r's entries numbered tail or higher whose header and payload are intact. */
static int jscan_member(struct graid_array *a, unsigned r, const uint8_t *area, uint64_t tail,
			struct jscan *sc)
{
	uint64_t at = JOURNAL_FIRST_ENTRY;

	while (at + JOURNAL_BLOCK <= a->log_area.bytes) {
		const uint8_t *b = area + at;
		struct journal_entry_disk e;
		struct jfound f;
		uint64_t len;

		memcpy(&e, b, sizeof(e));
		len = le32toh(e.len);
		if (memcmp(e.magic, JOURNAL_ENTRY_MAGIC, 8) || !jcrc_ok(b) ||
		    (le32toh(e.version) != JOURNAL_VERSION &&
		     le32toh(e.version) != JOURNAL_VERSION_GROW) ||
		    memcmp(e.array_uuid, a->uuid, 16) ||
		    le32toh(e.role) != r || len == 0 || len > a->log_area.bytes - at - JOURNAL_BLOCK ||
		    len % a->block_size || le64toh(e.member_off) % a->block_size ||
		    len > a->lay.member_bytes ||
		    le64toh(e.member_off) > a->lay.member_bytes - len ||
		    crc32c(b + JOURNAL_BLOCK, len) != le32toh(e.payload_crc)) {
			at += JOURNAL_BLOCK;
			continue;
		}
		f.seq = le64toh(e.seq);
		if (f.seq > sc->max_seq)
			sc->max_seq = f.seq;
		if (f.seq >= tail) {
			int rc;

			f.pos = a->log_area.offset + at;
			f.member_off = le64toh(e.member_off);
			f.len = (uint32_t)len;
			f.role = r;
			f.geometry = le32toh(e.geometry);
			memcpy(f.participants, e.participants, 32);
			rc = jscan_add(sc, &f);
			if (rc)
				return rc;
		}
		at += JOURNAL_BLOCK + (len + JOURNAL_BLOCK - 1) / JOURNAL_BLOCK * JOURNAL_BLOCK;
	}
	return 0;
}

static int jfound_cmp(const void *x, const void *y)
{
	const struct jfound *a = x, *b = y;

	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	return a->role < b->role ? -1 : a->role > b->role;
}

/*
 * Entries [i, k) share one seq: complete when every usable participant logged its part. A
 * participant whose own tail is above the update joined the array after it (a spare or a
 * replacement taking over the role mid-update): it has no entry and needs none, its chunk is
 * rebuilt from the others.
 */
static bool jcomplete(struct graid_array *a, const struct jfound *e, size_t i, size_t k,
		      const uint64_t *tail)
{
	uint8_t have[32] = { 0 };

	for (size_t x = i; x < k; x++)
		have[e[x].role / 8] |= (uint8_t)(1u << (e[x].role % 8));
	for (unsigned r = 0; r < a->nmembers && r < 256; r++) {
		bool part = e[i].participants[r / 8] & (1u << (r % 8));

		if (part && jusable(a, r) && tail[r] <= e[i].seq &&
		    !(have[r / 8] & (1u << (r % 8))))
			return false;
	}
	return true;
}

/*
 * The bytes at the front of entry @p f that replay must not write (f->len: all of them):
 * those whose rows a grow may have written over since (docs/JOURNAL.md, "Across a grow").
 * A grow's copying window writes new rows only over old rows whose every byte lies below
 * the position it then records, and only once the updates in them have ended (it holds
 * their locks), having read and moved what those updates wrote: an entry of such an old
 * row is spent, and replaying it would put old-geometry bytes over new rows. Old rows with
 * a byte at or past the recorded position are replayed: no copying window has written
 * them (a skipping one zeroes in place only rows whose data there the live-data map
 * records unused: a write marks its region first, and a discard, on a journaled array a
 * logged write of zeroes, is replayed after it; the STAGED step's first rows are rewritten
 * from the staged copy after the replay), and an update's new rows lie below the position it was routed by, which
 * only grows. An entry of a geometry neither the array's nor its grow's (the old one of a
 * grow that has ended) is spent the same way.
 */
static uint32_t jspent_front(const struct graid_array *a, const struct jfound *f)
{
	const struct array_reshape *rs = atomic_load(&a->reshape);
	uint64_t unit, live_off;

	if (!rs)
		return f->geometry == 0 || f->geometry == a->lay.nmembers ? 0 : f->len;
	if (f->geometry == rs->new_lay.nmembers)
		return 0;
	/* 0: written before entries named their geometry, which was the array's (the old). */
	if (f->geometry != 0 && f->geometry != rs->old_lay.nmembers)
		return f->len;
	/*
	 * Rows kept where they were (a RAID-5 becoming a Q-last RAID-6: the same data and P
	 * in both, Q added): no row moves, so nothing is spent. The conversion computed a
	 * row's Q from what the updates wrote; replaying their data and P restores exactly
	 * that, also where a member lost a write it had not flushed. (Rows it zeroes in place,
	 * unused ones, are safe as in a grow: a write marks its region first, and a discard is
	 * a logged write of zeroes, replayed after it.)
	 */
	if (reshape_qlast_rows_kept(rs))
		return 0;
	/* The first old row with a byte at or past the position, as a member offset. */
	unit = (uint64_t)rs->old_lay.ndata * rs->old_lay.chunk;
	live_off = atomic_load(&rs->position) / unit * rs->old_lay.chunk;
	if (f->member_off >= live_off)
		return 0;
	return live_off - f->member_off >= f->len ? f->len : (uint32_t)(live_off - f->member_off);
}

/*
 * Copy one entry's payload, but for the first @p skip bytes (jspent_front), from the log to
 * its place in the member's data area.
 */
static int jreplay_entry(struct graid_array *a, const struct jfound *f, uint32_t skip,
			 uint8_t *buf)
{
	struct member *m = &a->members[f->role];
	size_t len = f->len - skip;
	uint64_t to = f->member_off + skip;
	int rc = member_pio(m, buf, len, f->pos + JOURNAL_BLOCK + skip, false);

	if (rc == 0)
		rc = member_pio(m, buf, len, a->data_offset + to, true);
	/* The blocks now hold the logged bytes: their tags follow (the log holds none). */
	if (rc == 0 && a->tags) {
		struct iovec iov = { .iov_base = buf, .iov_len = len };

		rc = tag_store_set(a, f->role, to, &iov, 1);
	}
	if (rc) {
		graid__log(GRAID_LOG_ERR, "journal: member %u (%s): replay failed: %s", f->role,
			   m->dev.path, graid_strerror(rc));
		array_member_failed(a, f->role, rc);
	}
	return rc;
}

static int jreplay_all(struct graid_array *a, struct jscan *sc, const uint64_t *tail,
		       uint64_t durable, uint64_t *replayed)
{
	uint8_t *buf = NULL;
	uint32_t biggest = 0;
	uint64_t done = 0, torn = 0, spent = 0;

	if (sc->n) /* qsort may not take the NULL of an empty list */
		qsort(sc->e, sc->n, sizeof(*sc->e), jfound_cmp);
	for (size_t i = 0; i < sc->n; i++)
		if (sc->e[i].len > biggest)
			biggest = sc->e[i].len;
	if (sc->n && posix_memalign((void **)&buf, ARRAY_ALIGN, biggest))
		return -ENOMEM;
	for (size_t i = 0, k; i < sc->n; i = k) {
		bool any = false;

		for (k = i + 1; k < sc->n && sc->e[k].seq == sc->e[i].seq;)
			k++;
		if (sc->e[i].seq < durable)
			continue; /* on stable storage in place everywhere: nothing to do */
		if (!jcomplete(a, sc->e, i, k, tail)) {
			/* Its log writes did not all finish: no member was written in place. */
			torn++;
			continue;
		}
		/* Entry by entry: each has its own rows, the parts a grow moved left. */
		for (size_t x = i; x < k; x++) {
			uint32_t skip = jspent_front(a, &sc->e[x]);

			if (skip == sc->e[x].len)
				continue;
			any = true;
			if (jusable(a, sc->e[x].role))
				jreplay_entry(a, &sc->e[x], skip, buf);
		}
		/* Every row it wrote moved by a grow since: what it wrote went with them. */
		if (any)
			done++;
		else
			spent++;
	}
	free(buf);
	graid__log(GRAID_LOG_NOTICE, "journal: %llu updates replayed, %llu dropped (their log "
				     "writes had not all finished, so none of them was written in "
				     "place), %llu spent (a grow had moved their rows)",
		   (unsigned long long)done, (unsigned long long)torn, (unsigned long long)spent);
	if (replayed)
		*replayed = done;
	return atomic_load(&a->broken) ? -EIO : 0;
}

int journal_recover(struct graid_array *a, bool clean, uint64_t *replayed)
{
	struct journal *j = a->journal;
	struct jscan sc = { 0 };
	uint64_t next = 1, max_gen = 0, durable = 0, tail[GRAID_MAX_MEMBERS] = { 0 };
	bool any_record = false;
	uint8_t *area = NULL;
	int rc = 0;

	if (replayed)
		*replayed = 0;
	if (posix_memalign((void **)&area, ARRAY_ALIGN, clean ? JOURNAL_FIRST_ENTRY : a->log_area.bytes))
		return -ENOMEM;
	for (unsigned r = 0; rc == 0 && r < a->nmembers; r++) {
		uint64_t gen_before = max_gen;

		if (!jusable(a, r))
			continue;
		rc = member_pio(&a->members[r], area, clean ? JOURNAL_FIRST_ENTRY : a->log_area.bytes,
				a->log_area.offset, false);
		if (rc) {
			graid__log(GRAID_LOG_ERR, "journal: member %u (%s): log read failed: %s", r,
				   a->members[r].dev.path, graid_strerror(rc));
			array_member_failed(a, r, rc);
			rc = atomic_load(&a->broken) ? -EIO : 0;
			continue;
		}
		tail[r] = jread_tail(a, r, area, &max_gen, &durable);
		any_record |= max_gen > gen_before || tail[r] > 0;
		if (tail[r] > next)
			next = tail[r];
		if (!clean)
			rc = jscan_member(a, r, area, tail[r], &sc);
	}
	free(area);
	if (rc == 0 && clean && !any_record)
		return journal_recover(a, false, replayed); /* no record to trust: read it all */
	if (rc == 0 && !clean)
		rc = jreplay_all(a, &sc, tail, durable, replayed);
	free(sc.e);
	if (rc)
		return rc;
	if (sc.max_seq + 1 > next)
		next = sc.max_seq + 1;
	journal_restart(j, next, max_gen);
	/* What was replayed must be on disk before the records that void its entries. */
	if (!clean)
		rc = array_flush_members(a, NULL);
	return rc ? rc : journal_reset(a);
}
