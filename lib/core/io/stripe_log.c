/* SPDX-License-Identifier: MIT */
/* The stripe engine's seam to the write-hole journal: stage an update, release it. */
#include <errno.h>
#include <pthread.h>

#include "io/queue_io.h"
#include "io/stripe_log.h"
#include "meta/journal.h"

bool stripe_log_active(const struct graid_array *a)
{
	return a->journal != NULL;
}

/*
 * A member left out of this update may have failed just now: its failure must be on disk
 * (array_member_failed writes it under meta_lock) before anything is written without it,
 * or a crash would bring it back beside parity that skipped it.
 */
static void stripe_log_fence_failures(struct graid_array *a)
{
	bool all_writable = true;

	for (unsigned m = 0; m < a->nmembers; m++)
		all_writable &= array_role_writable(a, m);
	if (!all_writable) {
		pthread_mutex_lock(&a->meta_lock);
		pthread_mutex_unlock(&a->meta_lock);
	}
}

int stripe_log_write(struct graid_queue *q, struct sop *s, const unsigned *cnt,
		     const uint64_t *off)
{
	struct graid_array *a = q->a;
	/*
	 * The members of the geometry the operation is planned in (s->lay): during a grow the
	 * old one's are fewer than the array's, and the roles added take no part in its rows.
	 */
	const unsigned n = s->lay->nmembers;
	uint32_t len[GRAID_MAX_MEMBERS];
	uint8_t participants[32] = { 0 };
	struct journal_claim c = { .pos = s->jpos };
	int rc;

	if (atomic_load(&a->broken))
		return -EIO;
	stripe_log_fence_failures(a);
	for (unsigned m = 0; m < n; m++) {
		const struct iovec *jiov = s->jiov + (size_t)m * (SOP_RUN_MAX + 1);

		len[m] = 0;
		for (unsigned i = 1; i <= cnt[m]; i++)
			len[m] += (uint32_t)jiov[i].iov_len;
	}
	rc = journal_claim(a, n, len, &c);
	if (rc)
		return rc;
	s->jseq = c.seq;
	for (unsigned m = 0; m < n; m++)
		if (s->jpos[m])
			participants[m / 8] |= (uint8_t)(1u << (m % 8));
	s->phase = SOP_LOGGING;
	for (unsigned m = 0; m < n; m++) {
		struct iovec *jiov = s->jiov + (size_t)m * (SOP_RUN_MAX + 1);

		if (!s->jpos[m])
			continue;
		s->jhdr[m] = queue_buf_get(q, JOURNAL_BLOCK);
		if (!s->jhdr[m]) {
			s->err = -ENOMEM;
			break;
		}
		journal_fill_header(a, s->jhdr[m], s->jseq, m, off[m], jiov + 1, cnt[m],
				    participants, n);
		jiov[0].iov_base = s->jhdr[m];
		jiov[0].iov_len = JOURNAL_BLOCK;
		/* An entry missing: its member must leave before anyone writes in place. */
		if (!queue_write_issued(q, m, queue_log_writev(q, s, m, m, jiov, cnt[m] + 1,
							       JOURNAL_BLOCK + len[m], s->jpos[m])))
			s->write_fail++;
	}
	return 0;
}

void stripe_log_done(struct graid_queue *q, struct sop *s)
{
	if (!s->jseq)
		return;
	journal_done(q->a, s->jseq);
	s->jseq = 0;
	for (unsigned m = 0; m < q->a->nmembers; m++)
		if (s->jhdr[m]) {
			queue_buf_put(q, s->jhdr[m], JOURNAL_BLOCK);
			s->jhdr[m] = NULL;
		}
}
