/* SPDX-License-Identifier: MIT */
/* A background job's rows in memory: how many fit its budget, and their buffers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/row_job.h"

unsigned row_job_rows(const struct graid_array *a, size_t budget)
{
	size_t per_row = (size_t)a->nmembers * a->lay.chunk;
	size_t rows = budget / per_row;

	return rows < 1 ? 1 : rows > ROW_JOB_ROWS_MAX ? ROW_JOB_ROWS_MAX : (unsigned)rows;
}

#if GRAID_FAULT_INJECTION
bool graid__test_row_bufs_fail;
#endif

int row_bufs_alloc(struct row_bufs *b, const struct graid_array *a, unsigned rows,
		   bool with_ptrs)
{
	size_t n = (size_t)rows * a->nmembers;

	memset(b, 0, sizeof(*b));
#if GRAID_FAULT_INJECTION
	if (graid__test_row_bufs_fail)
		return -ENOMEM;
#endif
	if (rows < 1 || rows > ROW_JOB_ROWS_MAX)
		return -EINVAL;
	b->rows_max = rows;
	if (posix_memalign((void **)&b->data, ARRAY_ALIGN, n * a->lay.chunk))
		b->data = NULL;
	b->ios = malloc(n * sizeof(*b->ios));
	if (with_ptrs)
		b->ptrs = malloc(n * sizeof(*b->ptrs));
	if (!b->data || !b->ios || (with_ptrs && !b->ptrs)) {
		row_bufs_free(b);
		return -ENOMEM;
	}
	return 0;
}

void row_bufs_free(struct row_bufs *b)
{
	free(b->data);
	free(b->ptrs);
	free(b->ios);
	memset(b, 0, sizeof(*b));
}
