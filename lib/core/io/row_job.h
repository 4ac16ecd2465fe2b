/* SPDX-License-Identifier: MIT */
/*
 * What rebuild, scrub and resync share: how many rows a batch of a background job holds in
 * memory, and the buffers for them (every member's chunk of each row, the engine's pointer
 * table, the member I/O records).
 */
#ifndef LIBGRAID_CORE_ROW_JOB_H
#define LIBGRAID_CORE_ROW_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/member_batch.h"

/* The most rows one batch holds; the jobs size their per-row stack arrays by it. */
#define ROW_JOB_ROWS_MAX 256u

struct row_bufs {
	unsigned rows_max;
	uint8_t *data;    /* rows_max * nmembers chunks, ARRAY_ALIGN-aligned */
	uint8_t **ptrs;   /* rows_max * nmembers pointers for the engine, or NULL if not asked */
	struct mbio *ios; /* rows_max * nmembers member I/O records */
};

/* Rows whose chunks on every member fit @p budget bytes: 1 .. ROW_JOB_ROWS_MAX. */
unsigned row_job_rows(const struct graid_array *a, size_t budget);

/*
 * Buffers for @p rows rows (1 .. ROW_JOB_ROWS_MAX); the engine's pointer table too when
 * @p with_ptrs. 0, or -ENOMEM with nothing held.
 */
int row_bufs_alloc(struct row_bufs *b, const struct graid_array *a, unsigned rows,
		   bool with_ptrs);
void row_bufs_free(struct row_bufs *b);

#if GRAID_FAULT_INJECTION
/* Test seam, false in use: row_bufs_alloc() answers -ENOMEM, as with no memory left. */
extern bool graid__test_row_bufs_fail;
#endif

#endif /* LIBGRAID_CORE_ROW_JOB_H */
