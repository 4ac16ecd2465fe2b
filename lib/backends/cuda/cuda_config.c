/* SPDX-License-Identifier: MIT */
/* Parsing of the GRAID_CUDA_* environment variables. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid_backend.h>

#include "cuda_config.h"

/* An unsigned decimal in [lo, hi]; 0, -ENOENT if unset, -EINVAL if malformed. */
static int config_number(const char *name, unsigned long long lo, unsigned long long hi,
			 unsigned long long *out, cuda_log_fn log)
{
	const char *s = getenv(name);
	unsigned long long v;
	char *end;

	if (!s || !*s)
		return -ENOENT;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || s[0] == '-' || v < lo || v > hi) {
		if (log)
			log(GRAID_LOG_ERR, "cuda: %s=\"%s\" is not a number in %llu..%llu", name,
			    s, lo, hi);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

int cuda_config_read(struct cuda_config *cfg, cuda_log_fn log)
{
	const char *path = getenv("GRAID_CUDA_PATH");
	unsigned long long v;
	int rc;

	cfg->device = 0;
	cfg->mapped = false;
	cfg->piece_bytes = CUDA_PIECE_DEFAULT;
	cfg->fail_after = UINT64_MAX;
	/* Four copy threads reach a Gen5 link's rate from DRAM; fewer on a smaller machine. */
	v = (unsigned long long)sysconf(_SC_NPROCESSORS_ONLN);
	cfg->copy_threads = v >= 1 && v < 4 ? (unsigned)v : 4;

	rc = config_number("GRAID_CUDA_DEVICE", 0, 1023, &v, log);
	if (rc == -EINVAL)
		return rc;
	if (!rc)
		cfg->device = (int)v;
	/* Up to 1 GiB: keeps a piece's items within the kernel's 32-bit index. */
	rc = config_number("GRAID_CUDA_PIECE_KB", 1, 1u << 20, &v, log);
	if (rc == -EINVAL)
		return rc;
	if (!rc)
		cfg->piece_bytes = (size_t)v << 10;
	rc = config_number("GRAID_CUDA_FAIL_AFTER", 0, UINT64_MAX - 1, &v, log);
	if (rc == -EINVAL)
		return rc;
	if (!rc)
		cfg->fail_after = v;
	rc = config_number("GRAID_CUDA_COPY_THREADS", 1, 64, &v, log);
	if (rc == -EINVAL)
		return rc;
	if (!rc)
		cfg->copy_threads = (unsigned)v;

	if (path && *path && strcmp(path, "staged") != 0) {
		if (strcmp(path, "mapped") != 0) {
			if (log)
				log(GRAID_LOG_ERR,
				    "cuda: GRAID_CUDA_PATH=\"%s\": expected staged or mapped", path);
			return -EINVAL;
		}
		cfg->mapped = true;
	}
	return 0;
}
