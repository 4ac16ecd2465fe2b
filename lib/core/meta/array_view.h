/* SPDX-License-Identifier: MIT */
/*
 * The holder's view of an array (array_view.c): published beside its lock by a writable
 * open, loaded by a read-only open of the same array. The types are in array/array.h.
 */
#ifndef LIBGRAID_CORE_ARRAY_VIEW_H
#define LIBGRAID_CORE_ARRAY_VIEW_H

struct graid_array;

/* Holder: write the view now (every state change, rebuild checkpoints); meta_lock held. */
void array_view_publish(struct graid_array *a);
/* Holder, at close: remove it. */
void array_view_withdraw(struct graid_array *a);
/* Read-only open: load the view of a live holder on this host, if there is one. */
void array_view_load(struct graid_array *a);
void array_view_free(struct graid_array *a);

#endif
