/* SPDX-License-Identifier: MIT */
/*
 * Fault injection for tests, like md's faulty personality: a member given as
 * "faulty:OPTIONS:PATH" behaves as PATH until its schedule says otherwise. OPTIONS, comma
 * separated: read-eio-after=N, write-eio-after=N (I/Os of that kind fail with EIO after N
 * succeed), tear-after=N (the N+1th write lands only its first half and fails, and every
 * I/O after it fails: a device dying mid-write), stall-us=N (every I/O waits N
 * microseconds first), vanish-after=N (after N I/Os of any kind, all fail), kill-after=N
 * (at this member's N+1th write the process sends what it has queued and dies by SIGKILL:
 * power lost between the writes of one stripe, for crash tests).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

struct member_fault {
	long read_eio_after, write_eio_after, tear_after, vanish_after, kill_after;
	uint64_t stall_ns;
	atomic_long reads, writes, ios;
	atomic_bool dead;
};

static bool fault_opt(const char *opt, size_t n, const char *name, long *val)
{
	size_t k = strlen(name);
	char *end;

	if (n <= k + 1 || strncmp(opt, name, k) || opt[k] != '=')
		return false;
	*val = strtol(opt + k + 1, &end, 10);
	return end == opt + n && *val >= 0;
}

int fault_parse(const char *spec, struct member_fault **out, const char **path)
{
	const char *p = spec + strlen("faulty:"), *colon = strchr(p, ':');
	struct member_fault *f;

	if (!colon)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->read_eio_after = f->write_eio_after = f->tear_after = f->vanish_after = -1;
	f->kill_after = -1;
	while (p < colon) {
		const char *end = memchr(p, ',', (size_t)(colon - p));
		size_t n = (size_t)((end ? end : colon) - p);
		long v;

		if (fault_opt(p, n, "read-eio-after", &v))
			f->read_eio_after = v;
		else if (fault_opt(p, n, "write-eio-after", &v))
			f->write_eio_after = v;
		else if (fault_opt(p, n, "tear-after", &v))
			f->tear_after = v;
		else if (fault_opt(p, n, "vanish-after", &v))
			f->vanish_after = v;
		else if (fault_opt(p, n, "kill-after", &v))
			f->kill_after = v;
		else if (fault_opt(p, n, "stall-us", &v))
			f->stall_ns = (uint64_t)v * 1000;
		else {
			graid__log(GRAID_LOG_ERR, "faulty member: unknown option '%.*s'", (int)n, p);
			free(f);
			return -EINVAL;
		}
		p += n + (end ? 1 : 0);
	}
	*out = f;
	*path = colon + 1;
	return 0;
}

void fault_free(struct member_fault *f)
{
	free(f);
}

enum fault_action fault_decide(struct member_fault *f, bool write, uint64_t *stall_ns)
{
	long n = atomic_fetch_add(&f->ios, 1);
	long k = write ? atomic_fetch_add(&f->writes, 1) : atomic_fetch_add(&f->reads, 1);

	if (atomic_load(&f->dead))
		return FAULT_FAIL;
	if (f->vanish_after >= 0 && n >= f->vanish_after) {
		atomic_store(&f->dead, true);
		return FAULT_FAIL;
	}
	if (write && f->kill_after >= 0 && k >= f->kill_after)
		return FAULT_KILL;
	if (write && f->tear_after >= 0 && k >= f->tear_after) {
		atomic_store(&f->dead, true);
		return FAULT_TEAR;
	}
	if ((write ? f->write_eio_after : f->read_eio_after) >= 0 &&
	    k >= (write ? f->write_eio_after : f->read_eio_after))
		return FAULT_FAIL;
	if (f->stall_ns) {
		*stall_ns = f->stall_ns;
		return FAULT_STALL;
	}
	return FAULT_NONE;
}
