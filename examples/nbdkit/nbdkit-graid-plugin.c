/* SPDX-License-Identifier: MIT */
/* nbdkit plugin "graid": serves one libgraid array over NBD, to every client of the server. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include <libgraid/graid.h>

#include "gp.h"
#include "metrics_http.h"

#ifndef GP_VERSION
#define GP_VERSION "unknown"
#endif

/* The array is safe to use from many threads, so nbdkit may run requests in parallel. */
#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

struct gp_state gp = {
	.edge_lock = PTHREAD_RWLOCK_INITIALIZER,
	.lock_fd = -1,
	.report_fd = { -1, -1 },
};

/* The library's log goes where nbdkit's does (gp_log.c): warnings and errors, once each. */
static void gp_load(void)
{
	graid_log_set(gp_log_lib, NULL, GRAID_LOG_INFO);
}

static void gp_unload(void)
{
	for (unsigned i = 0; i < gp.nmembers; i++)
		free(gp.members[i]);
	free(gp.members);
	free(gp.backend);
	free(gp.lease);
	free(gp.run_dir);
	free(gp.metrics);
}

/* A string option given again replaces the earlier value; 0, or -1 (nbdkit told why). */
static int gp_set_string(char **dst, const char *value)
{
	char *v = strdup(value);

	if (!v) {
		nbdkit_error("strdup: %m");
		return -1;
	}
	free(*dst);
	*dst = v;
	return 0;
}

static int gp_config(const char *key, const char *value)
{
	if (strcmp(key, "member") == 0) {
		char **m;

		if (gp.nmembers >= GRAID_MAX_MEMBERS) {
			nbdkit_error("more than %d members", GRAID_MAX_MEMBERS);
			return -1;
		}
		m = realloc(gp.members, (gp.nmembers + 1) * sizeof(*m));
		if (!m) {
			nbdkit_error("realloc: %m");
			return -1;
		}
		gp.members = m;
		/* Absolute: nbdkit changes directory to / when it becomes a daemon. */
		gp.members[gp.nmembers] = nbdkit_absolute_path(value);
		if (!gp.members[gp.nmembers])
			return -1;
		gp.nmembers++;
		return 0;
	}
	if (strcmp(key, "backend") == 0)
		return gp_set_string(&gp.backend, value);
	if (strcmp(key, "rebuild-max-rate") == 0 || strcmp(key, "rebuild-busy-rate") == 0) {
		int64_t rate = nbdkit_parse_size(value);

		if (rate < 0)
			return -1; /* nbdkit said why */
		if (key[8] == 'm')
			gp.rebuild.max_bytes_per_sec = (uint64_t)rate;
		else
			gp.rebuild.busy_bytes_per_sec = (uint64_t)rate;
		gp.rebuild_set = true;
		return 0;
	}
	if (strcmp(key, "lease") == 0)
		return gp_set_string(&gp.lease, value);
	if (strcmp(key, "degraded") == 0) {
		int yes = nbdkit_parse_bool(value);

		if (yes < 0)
			return -1; /* nbdkit said why */
		gp.degraded_ok = yes;
		return 0;
	}
	if (strcmp(key, "control") == 0) {
		int yes = nbdkit_parse_bool(value);

		if (yes < 0)
			return -1; /* nbdkit said why */
		gp.no_control = !yes;
		return 0;
	}
	if (strcmp(key, "run-dir") == 0) {
		char *dir;

		if (!*value) {
			nbdkit_error("run-dir: a directory, not ''");
			return -1;
		}
		/* Absolute, as the members: a server in the background runs in /. */
		dir = nbdkit_absolute_path(value);
		if (!dir)
			return -1;
		free(gp.run_dir);
		gp.run_dir = dir;
		return 0;
	}
	if (strcmp(key, "metrics") == 0) {
		char why[160];

		if (metrics_http_parse(value, why, sizeof(why))) {
			nbdkit_error("%s", why);
			return -1;
		}
		return gp_set_string(&gp.metrics, value);
	}
	if (strcmp(key, "io-timeout") == 0) {
		char *end;
		unsigned long ms;

		errno = 0;
		ms = strtoul(value, &end, 10);
		if (errno || *end || end == value || ms > GRAID_IO_TIMEOUT_MAX_MS) {
			nbdkit_error("io-timeout: milliseconds, 0 .. %u, not '%s'",
				     GRAID_IO_TIMEOUT_MAX_MS, value);
			return -1;
		}
		gp.io_timeout_ms = (unsigned)ms;
		return 0;
	}
	if (strcmp(key, "health-interval") == 0) {
		char *end;
		unsigned long ms;

		/* The library's bounds, checked before nbdkit forks: a bad value opens nothing. */
		errno = 0;
		ms = strtoul(value, &end, 10);
		/* Digits only: strtoul would also take "+500", " 500" and "-1". */
		if (errno || *end || !isdigit((unsigned char)*value) ||
		    (ms != 0 && ms < GRAID_HEALTH_INTERVAL_MIN_MS) ||
		    ms > GP_HEALTH_INTERVAL_MAX_MS) {
			nbdkit_error("health-interval: milliseconds, 0 or %u .. %u, not '%s'",
				     GRAID_HEALTH_INTERVAL_MIN_MS, GP_HEALTH_INTERVAL_MAX_MS, value);
			return -1;
		}
		gp.health_interval_ms = (unsigned)ms;
		gp.health_set = true;
		return 0;
	}
	nbdkit_error("unknown parameter '%s' (member=PATH, backend=NAME, degraded=1, "
		     "rebuild-max-rate=SIZE, rebuild-busy-rate=SIZE, io-timeout=MS, "
		     "health-interval=MS, lease=SPEC, control=off, run-dir=DIR or "
		     "metrics=ADDR:PORT)", key);
	return -1;
}

static int gp_config_complete(void)
{
	if (gp.nmembers == 0) {
		nbdkit_error("no members: give member=PATH once for every member");
		return -1;
	}
	return 0;
}

/* After the last connection: flush, mark clean, release the members. */
static void gp_cleanup(void)
{
	/* A scrape reads the array: the endpoint goes first. */
	metrics_http_stop(gp.metrics_http);
	gp.metrics_http = NULL;
	if (gp.array) {
		int rc = graid_array_close(gp.array);

		if (rc)
			nbdkit_error("closing the array: %s", graid_strerror(rc));
		gp.array = NULL;
	}
}

static void *gp_open(int readonly)
{
	/* Never in practice: -r was read from nbdkit's command line (gp_server.c). */
	if (!readonly && gp.srv.readonly)
		nbdkit_debug("a writable connection to an array opened read-only: served "
			     "read-only (can_write 0)");
	return NBDKIT_HANDLE_NOT_NEEDED;
}

/* An array opened read-only takes no write: nbdkit refuses them for it. */
static int gp_can_write(void *handle)
{
	(void)handle;
	return !gp.srv.readonly;
}

static int64_t gp_get_size(void *handle)
{
	(void)handle;
	return (int64_t)gp.info.size;
}

static int gp_block_size(void *handle, uint32_t *minimum, uint32_t *preferred,
			 uint32_t *maximum)
{
	(void)handle;
	*minimum = gp.info.block_size;
	*preferred = gp.info.block_size;
	*maximum = 0xffffffff; /* any length that is a multiple of the minimum */
	return 0;
}

static int gp_can_multi_conn(void *handle)
{
	(void)handle;
	return 1;
}

static int gp_can_flush(void *handle)
{
	(void)handle;
	return 1;
}

/* Array I/O with the error turned into nbdkit's convention (message + errno, -1). */
static int gp_rw(bool write, void *buf, uint64_t len, uint64_t offset)
{
	ssize_t n = write ? graid_array_write(gp.array, buf, len, offset)
			  : graid_array_read(gp.array, buf, len, offset);

	if (n == (ssize_t)len)
		return 0;
	nbdkit_error("%s of %" PRIu64 " bytes at %" PRIu64 ": %s", write ? "write" : "read",
		     len, offset, n < 0 ? graid_strerror((int)n) : "short transfer");
	nbdkit_set_error(n < 0 ? (int)-n : EIO);
	return -1;
}

/*
 * A request not aligned to the array's block size: the whole blocks in the middle go
 * straight to the array, the partial blocks at either end through a bounce block (read;
 * for a write, patched and written back). nbdkit has checked offset + count <= size, and
 * the size is a multiple of the block size, so the edge blocks are inside the array.
 */
static int gp_unaligned(bool write, uint8_t *buf, uint32_t count, uint64_t offset)
{
	uint64_t bs = gp.info.block_size, end = offset + count;
	uint8_t *bounce = malloc(bs);
	int rc = 0;

	if (!bounce) {
		nbdkit_error("malloc: %m");
		nbdkit_set_error(ENOMEM);
		return -1;
	}
	while (rc == 0 && offset < end) {
		uint64_t blk = offset & ~(bs - 1), skip = offset - blk;
		uint64_t n = end - offset;

		if (skip == 0 && n >= bs) {
			/* The aligned middle, in one call. */
			n &= ~(bs - 1);
			rc = gp_rw(write, buf, n, offset);
		} else {
			if (n > bs - skip)
				n = bs - skip;
			rc = gp_rw(false, bounce, bs, blk);
			if (rc == 0 && write) {
				memcpy(bounce + skip, buf, n);
				rc = gp_rw(true, bounce, bs, blk);
			} else if (rc == 0) {
				memcpy(buf, bounce + skip, n);
			}
		}
		buf += n;
		offset += n;
	}
	free(bounce);
	return rc;
}

static int gp_pread(void *handle, void *buf, uint32_t count, uint64_t offset, uint32_t flags)
{
	(void)handle, (void)flags;
	if (((offset | count) & (gp.info.block_size - 1)) == 0)
		return gp_rw(false, buf, count, offset);
	return gp_unaligned(false, buf, count, offset);
}

static int gp_pwrite(void *handle, const void *buf, uint32_t count, uint64_t offset,
		     uint32_t flags)
{
	bool aligned = ((offset | count) & (gp.info.block_size - 1)) == 0;
	int rc;

	(void)handle, (void)flags; /* FUA is emulated by nbdkit with a flush */
	if (aligned)
		pthread_rwlock_rdlock(&gp.edge_lock);
	else
		pthread_rwlock_wrlock(&gp.edge_lock);
	/* The cast: gp_unaligned writes through `buf` only when reading. */
	rc = aligned ? gp_rw(true, (void *)buf, count, offset)
		     : gp_unaligned(true, (uint8_t *)buf, count, offset);
	pthread_rwlock_unlock(&gp.edge_lock);
	return rc;
}

static int gp_flush(void *handle, uint32_t flags)
{
	int rc;

	(void)handle, (void)flags;
	rc = graid_array_flush(gp.array);
	if (rc) {
		nbdkit_error("flush: %s", graid_strerror(rc));
		nbdkit_set_error(-rc);
		return -1;
	}
	return 0;
}

/* Discards read back as zeroes on every level: trim and zero are both offered. */
static int gp_can_trim(void *handle)
{
	(void)handle;
	return 1;
}

static int gp_can_zero(void *handle)
{
	(void)handle;
	return 1;
}

/* The block-aligned part of [offset, offset+count): [*a0, *a1), possibly empty. */
static void gp_inner(uint32_t count, uint64_t offset, uint64_t *a0, uint64_t *a1)
{
	uint64_t bs = gp.info.block_size;

	*a0 = (offset + bs - 1) & ~(bs - 1);
	*a1 = (offset + count) & ~(bs - 1);
	if (*a1 < *a0)
		*a1 = *a0;
}

/*
 * Zeroes written as data, for a client that asked for no hole (NBD_CMD_FLAG_NO_HOLE: the
 * range must stay provisioned): graid_array_write_zeroes() may deallocate.
 */
static int gp_write_zero_data(uint64_t len, uint64_t offset)
{
	const size_t piece = 1u << 20;
	void *z;
	int rc = 0;

	if (posix_memalign(&z, 4096, piece))
		return -ENOMEM;
	memset(z, 0, piece);
	for (uint64_t done = 0; rc == 0 && done < len; done += piece) {
		size_t n = len - done < piece ? (size_t)(len - done) : piece;
		ssize_t w = graid_array_write(gp.array, z, n, offset + done);

		rc = w < 0 ? (int)w : 0;
	}
	free(z);
	return rc;
}

static int gp_zero_call(bool discard, uint64_t len, uint64_t offset, bool may_trim)
{
	int rc = len == 0 ? 0
		 : discard   ? graid_array_discard(gp.array, offset, len)
		 : may_trim  ? graid_array_write_zeroes(gp.array, offset, len)
			     : gp_write_zero_data(len, offset);

	if (rc == 0)
		return 0;
	nbdkit_error("%s of %" PRIu64 " bytes at %" PRIu64 ": %s",
		     discard ? "discard" : "write-zeroes", len, offset, graid_strerror(rc));
	nbdkit_set_error(-rc);
	return -1;
}

/*
 * Trim is advisory in NBD: the whole blocks inside the range are discarded (they then read as
 * zeroes), partial blocks at the edges are left as they are.
 */
static int gp_trim(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t a0, a1;
	int rc;

	(void)handle, (void)flags;
	gp_inner(count, offset, &a0, &a1);
	pthread_rwlock_rdlock(&gp.edge_lock);
	rc = gp_zero_call(true, a1 - a0, a0, true);
	pthread_rwlock_unlock(&gp.edge_lock);
	return rc;
}

/* Zero must zero every byte: whole blocks by write-zeroes, the edges read-modify-written. */
static int gp_zero(void *handle, uint32_t count, uint64_t offset, uint32_t flags)
{
	uint64_t a0, a1;
	uint8_t *z = NULL;
	int rc = 0;

	/* Without MAY_TRIM the client asked for no hole: zeroes are written as data. */
	(void)handle;
	gp_inner(count, offset, &a0, &a1);
	if (a0 != offset || a1 != offset + count) {
		z = calloc(1, gp.info.block_size);
		if (!z) {
			nbdkit_error("calloc: %m");
			nbdkit_set_error(ENOMEM);
			return -1;
		}
	}
	if (z)
		pthread_rwlock_wrlock(&gp.edge_lock);
	else
		pthread_rwlock_rdlock(&gp.edge_lock);
	/* Inside one block, touching neither of its edges: no aligned middle at all. */
	if (a0 >= offset + count) {
		rc = gp_unaligned(true, z, count, offset);
	} else {
		if (a0 > offset)
			rc = gp_unaligned(true, z, (uint32_t)(a0 - offset), offset);
		if (rc == 0)
			rc = gp_zero_call(false, a1 - a0, a0, flags & NBDKIT_FLAG_MAY_TRIM);
		if (rc == 0 && offset + count > a1)
			rc = gp_unaligned(true, z, (uint32_t)(offset + count - a1), a1);
	}
	pthread_rwlock_unlock(&gp.edge_lock);
	free(z);
	return rc;
}

static struct nbdkit_plugin plugin = {
	.name = "graid",
	.longname = "libgraid RAID array",
	.version = GP_VERSION,
	.description = "Serve a libgraid RAID-0/1/5/6/10 array of member files or devices",
	.load = gp_load,
	.unload = gp_unload,
	.config = gp_config,
	.config_complete = gp_config_complete,
	.config_help = "member=PATH   a member of the array (once per member, any order)\n"
		       "backend=NAME  parity engine: auto, ref, isal, opencl, cuda\n"
		       "degraded=1    serve even with roles that have no member among those\n"
		       "              given (without it such a start fails, naming them)\n"
		       "rebuild-max-rate=SIZE   rebuilds (a hot spare taking over) move at most\n"
		       "                        SIZE bytes a second per member\n"
		       "rebuild-busy-rate=SIZE  ... and at most SIZE while requests are in flight\n"
		       "io-timeout=MS  give up on a member I/O after MS milliseconds where the\n"
		       "              other members carry the array (0: never, the default)\n"
		       "health-interval=MS  sample the NVMe members' health every MS ms (at\n"
		       "              least 100; 0: never; default 60000)\n"
		       "lease=SPEC    hold the array's lease while serving (graidctl lease-init)\n"
		       "control=off   no control endpoint (default on: graidctl manages the\n"
		       "              array through RUN_DIR/UUID.ctl while it is served)\n"
		       "run-dir=DIR   the endpoint's run directory (default $GRAID_RUN_DIR,\n"
		       "              else /run/graid)\n"
		       "metrics=ADDR:PORT  serve Prometheus metrics at http://ADDR:PORT/metrics\n"
		       "              (PORT alone: 127.0.0.1; [IPV6]:PORT)",
	.magic_config_key = "member",
	/* The check before nbdkit forks; the array, in the process that serves (gp_start.c). */
	.get_ready = gp_start_check,
	.after_fork = gp_start_serve,
	.cleanup = gp_cleanup,
	.open = gp_open,
	.get_size = gp_get_size,
	.block_size = gp_block_size,
	.can_write = gp_can_write,
	.can_multi_conn = gp_can_multi_conn,
	.can_flush = gp_can_flush,
	.can_trim = gp_can_trim,
	.can_zero = gp_can_zero,
	.pread = gp_pread,
	.pwrite = gp_pwrite,
	.flush = gp_flush,
	.trim = gp_trim,
	.zero = gp_zero,
};

/* nbdkit's header defines plugin_init() without declaring it; -Wmissing-prototypes would warn. */
struct nbdkit_plugin *plugin_init(void);
NBDKIT_REGISTER_PLUGIN(plugin)
