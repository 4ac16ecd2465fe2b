/* SPDX-License-Identifier: MIT */
/* Growing a RAID-0 online (docs/RESHAPE.md): the start, the job that moves chunks, resume. */
#ifndef LIBGRAID_CORE_RESHAPE_GROW_H
#define LIBGRAID_CORE_RESHAPE_GROW_H

#include <stdbool.h>

#include "array/array.h"
#include "format/reshape_format.h"

/*
 * Add the @p n devices @p paths as new members of the open, writable RAID-0, 5 or 6 @p a
 * (RAID-5/6: docs/RESHAPE.md, "RAID-5/6 growing, as built") and start
 * moving its data to the new geometry in the background (reshape_job_wait() waits for it).
 * In order: every device opened and checked (nothing is written to any of them or to a
 * member before all pass); the first reshape record, both blocks, to the new devices and
 * then to every member, its generation one above any copy of this array's found; then,
 * under meta_lock, the new roles installed, the routing state set, the added roles'
 * superblocks (RESHAPE, major 3, the new member count) at the members' event E, and one
 * round to every role at E + 1 (docs/RESHAPE.md says what each crash between leaves). The
 * job waits for requests queued before the routing was set, then moves windows of chunks.
 * @p wait: return only when the job has ended, with its result (reshape_job_wait()'s),
 * the job held from its start so that no later grow or close frees it under the wait.
 * @return 0 started (with @p wait: finished); -EINVAL bad arguments, a device too small (named in the log) or
 *   refused by member_attach; -EEXIST a device that is a member already, or given twice;
 *   -EOPNOTSUPP RAID-1/10 (the level named in the log), a Q-last RAID-6
 *   (reshape_qlast_no_grow), a RAID-5/6 with a journal or
 *   checksums, or the record's area is not free; -ENOSPC no room for the staged copy;
 *   -E2BIG more roles than this handle has room for (ARRAY_GROW_ROOM); -EBUSY a reshape
 *   runs already; -EIO a member is out, or the record or the superblock round failed;
 *   -EROFS a read-only handle; -ESTALE taken over; -ENOMEM.
 */
int reshape_grow_start(struct graid_array *a, const char *const *paths, unsigned n, bool wait);

/*
 * At open, before anything is written: the array's superblocks record a reshape and @p rec
 * is its newest record, one this build resumes (reshape_grow_resumable()). a->lay becomes
 * the old geometry and the routing state is set at the record's position, so the open's
 * superblock round keeps RESHAPE. @p start_job: a writable open (reshape_job_launch() then
 * starts the job once the open is done). @return 0; -ENOMEM; -EINVAL a geometry the layout
 * cannot place.
 */
int reshape_grow_resume(struct graid_array *a, const struct reshape_record *rec,
			bool start_job);

/*
 * Whether this build resumes @p rec: a RAID-0 (not staged, COPY or FINISHING) or RAID-5/6
 * (any phase) growing forward, rotating layout, chunk and data_bytes kept; a RAID-5/6 one
 * of an array with checksums (@p csum: the superblock's GRAID_SB_F_CHECKSUMS) only where
 * this build grows those (grow_csum_allowed(); else logged).
 */
bool reshape_grow_resumable(const struct reshape_record *rec, bool csum);

/* Start the job reshape_grow_resume() prepared, if any. @return 0; -errno of the thread. */
int reshape_job_launch(struct graid_array *a);

/*
 * Wait until the job has ended. @return 0 the reshape finished (the array has its new size);
 * -ENOENT no job; -ECANCELED stopped (closing): the record says where, the next open goes
 * on; another -errno: the job failed (logged) and stopped, the record holding its position.
 */
int reshape_job_wait(struct graid_array *a);

/* Stop the job between two windows and wait for it (close); no retry starts it after. */
void reshape_job_stop(struct graid_array *a);

/*
 * The worker's look (meta_lock held): a RAID-5/6 job that stopped on an error (not a close,
 * another host, a broken array, or -EPROTO) is started again from its record when a role
 * of the new geometry went out since (it goes on degraded around it: the redundancy work
 * held for the reshape then runs once it has finished) or when its retry time came (5 s
 * after the first stop, doubling up to 5 min). docs/RESHAPE.md, "Failures mid-way".
 */
void reshape_job_retry_due(struct graid_array *a);

/* Free what the job held (array_free, after the members' last write). */
void reshape_job_free(struct graid_array *a);

#endif
