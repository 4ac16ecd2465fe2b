/* SPDX-License-Identifier: MIT */
/* An array handle's life: allocation, engine, free (array_life.c). */
#ifndef LIBGRAID_CORE_ARRAY_LIFE_H
#define LIBGRAID_CORE_ARRAY_LIFE_H

#include "array/array.h"

/*
 * A handle for @p nmembers roles, with room for @p room more that a reshape may add
 * (ARRAY_GROW_ROOM for the levels that grow, else 0; capped at GRAID_MAX_MEMBERS).
 */
struct graid_array *array_alloc(unsigned nmembers, unsigned room);
/* Everything the handle holds: worker, queues, members, locks, maps, journal. */
void array_free(struct graid_array *a);
/*
 * The parity engine @p name (NULL: GRAID_BACKEND, else the fastest) for the array's level,
 * none for a level without parity; the name kept either way (a->be_name) for a later level
 * change. 0; -ENOMEM; graid_backend_open()'s errors.
 */
int array_open_engine(struct graid_array *a, const char *name);

#endif /* LIBGRAID_CORE_ARRAY_LIFE_H */
