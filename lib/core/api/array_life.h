/* SPDX-License-Identifier: MIT */
/* An array handle's life: allocation, engine, free (array_life.c). */
#ifndef LIBGRAID_CORE_ARRAY_LIFE_H
#define LIBGRAID_CORE_ARRAY_LIFE_H

#include "array/array.h"

struct graid_array *array_alloc(unsigned nmembers);
/* Everything the handle holds: worker, queues, members, locks, maps, journal. */
void array_free(struct graid_array *a);
int array_open_engine(struct graid_array *a, const char *name);

#endif /* LIBGRAID_CORE_ARRAY_LIFE_H */
