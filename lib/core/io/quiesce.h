/* SPDX-License-Identifier: MIT */
/*
 * Quiescing an array: every foreground request drained and new ones held, for a change of
 * state that the I/O path reads without a lock (a RAID-10 grow coarsening its region maps;
 * a metadata-only level conversion, jobs/reshape_level.c). docs/ARCHITECTURE.md, "Quiescing an array".
 */
#ifndef LIBGRAID_CORE_QUIESCE_H
#define LIBGRAID_CORE_QUIESCE_H

#include <stdint.h>

#include "array/array.h"

/* How long array_quiesce() waits for the requests in flight by default: 10 s. */
#define QUIESCE_DRAIN_NS (10ull * 1000 * 1000 * 1000)

/*
 * Hold new requests of @p a (every graid_queue of it, the synchronous calls too: queue_add
 * waits in quiesce_enter) and the worker's jobs (jobs.h array_reshape_holds_jobs), then wait
 * up to @p drain_ns for the foreground requests in flight to end. Call it holding no lock a
 * request may need (meta_lock, a stripe lock). On 0 the caller changes what it must and
 * calls array_unquiesce(). @return 0; -EBUSY another quiesce holds the array, or requests
 * still in flight after @p drain_ns (a queue whose owner does not reap it: released, nothing
 * held); -ECANCELED the array is closing; -EIO it broke.
 */
int array_quiesce(struct graid_array *a, uint64_t drain_ns);
/* Let the held requests go on (the worker's jobs wake at its next look). */
void array_unquiesce(struct graid_array *a);

/*
 * A request entering queue @p q (queue_add): counted in fg_inflight, then let in unless the
 * array is quiesced. Quiesced: a queue with requests of its own (@p queued) answers -EAGAIN
 * (its owner reaps them, which the drain needs, and tries again, as for a full queue); an
 * empty one (a synchronous call's) waits until the quiesce ends. 0: counted (undo with
 * quiesce_leave() if the request is not queued after all); -EAGAIN; -ECANCELED closing.
 */
int quiesce_enter(struct graid_array *a, unsigned queued);
/* A request counted by quiesce_enter() that was not queued after all. */
void quiesce_leave(struct graid_array *a);

#endif /* LIBGRAID_CORE_QUIESCE_H */
