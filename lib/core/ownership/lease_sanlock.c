/* SPDX-License-Identifier: MIT */
/*
 * The array's lease from sanlock (Debian's `sanlock` daemon, `libsanlock-dev`): disk
 * leases on a small area every RAID host can reach (a shared namespace, or a file on
 * shared storage), no network service. The area holds a lockspace (delta leases: which
 * hosts are alive, one slot per host id) and one resource lease (paxos: who owns the
 * array). docs/REMOTE.md ("The lease") has the spec, the timeouts and what each costs.
 *
 * sanlock tells a holder that its lease cannot be renewed by killing it, unless the
 * holder names a "kill path" program: here /usr/bin/touch on a flag file of this open,
 * which the worker looks for (lease_lost), so the library stops writing instead of the
 * application being killed. A sanlock daemon that dies closes the registration socket,
 * which the worker sees too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "common/signals.h"
#include "format/superblock.h"
#include "ownership/lease.h"

#if GRAID_HAVE_SANLOCK
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/fs.h>

#include <sanlock.h>
#include <sanlock_admin.h>
#include <sanlock_resource.h>
#include <sanlock_rv.h>

#define SL_KILL_PATH "/usr/bin/touch"
#define SL_RUN_DIR "/run/graid"

static atomic_uint sl_opens; /* makes each open's flag file name its own */

struct sl_lease {
	uint64_t host_id;
	uint32_t io_timeout;
	uint64_t offset;
	char path[SANLK_PATH_LEN];
	int sock;                         /* registration with the daemon, -1 none */
	bool daemon_gone;                 /* the daemon closed that connection */
	char flag[SANLK_HELPER_ARGS_LEN]; /* the kill path touches this file */
	struct sanlk_lockspace ls;
	struct {
		struct sanlk_resource r;
		struct sanlk_disk d;
	} res;
};

static unsigned long long sl_number(const char *s, const char **end)
{
	char *e;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &e, 10);
	if (errno || e == s)
		v = ~0ull;
	*end = e;
	return v;
}

/* "host-id=N[,io-timeout=S][,offset=BYTES]:PATH" */
static int sl_parse(struct array_lease *l, const char *rest)
{
	struct sl_lease *s = calloc(1, sizeof(*s));
	const char *p = rest, *colon = strchr(rest, ':');

	if (!s)
		return -ENOMEM;
	l->impl = s;
	s->sock = -1;
	s->io_timeout = 10;
	if (!colon || !colon[1]) {
		graid__log(GRAID_LOG_ERR, "lease '%s': not sanlock:OPTIONS:PATH", l->spec);
		return -EINVAL;
	}
	while (p < colon) {
		const char *end;
		unsigned long long v;

		if (!strncmp(p, "host-id=", 8)) {
			v = sl_number(p + 8, &end);
			if (v < 1 || v > 2000)
				goto bad;
			s->host_id = v;
		} else if (!strncmp(p, "io-timeout=", 11)) {
			v = sl_number(p + 11, &end);
			if (v < 1 || v > 60)
				goto bad;
			s->io_timeout = (uint32_t)v;
		} else if (!strncmp(p, "offset=", 7)) {
			v = sl_number(p + 7, &end);
			if (v == ~0ull || v % (1u << 20))
				goto bad;
			s->offset = v;
		} else {
			goto bad;
		}
		if (end != colon && *end != ',')
			goto bad;
		p = end + (end != colon);
	}
	if (!s->host_id) {
		graid__log(GRAID_LOG_ERR, "lease '%s': host-id=N (1..2000, unique to this host "
					  "among the hosts that share the array) is required", l->spec);
		return -EINVAL;
	}
	if (strlen(colon + 1) >= sizeof(s->path)) {
		graid__log(GRAID_LOG_ERR, "lease '%s': path too long", l->spec);
		return -EINVAL;
	}
	strcpy(s->path, colon + 1);
	return 0;
bad:
	graid__log(GRAID_LOG_ERR, "lease '%s': bad option at '%.*s' (host-id=1..2000, "
				  "io-timeout=1..60 seconds, offset=a multiple of 1 MiB)",
		   l->spec, (int)(colon - p), p);
	return -EINVAL;
}

/*
 * Sector and alignment of the area: 512-byte sectors and 1 MiB per lease, or, on a device
 * of 4 KiB logical blocks (which cannot do 512-byte I/O), 4 KiB and 8 MiB; either way
 * 2000 host ids. Fills the lockspace and resource records; -errno (logged).
 */
static int sl_describe(struct array_lease *l)
{
	struct sl_lease *s = l->impl;
	uint64_t align = 1u << 20;
	uint32_t lsf = SANLK_LSF_SECTOR512 | SANLK_LSF_ALIGN1M;
	uint32_t resf = SANLK_RES_SECTOR512 | SANLK_RES_ALIGN1M;
	char uuid[37];
	struct stat st;
	int lbs = 512;

	if (stat(s->path, &st)) {
		int rc = -errno;

		graid__log(GRAID_LOG_ERR, "lease '%s': %s: %s", l->spec, s->path,
			   graid_strerror(rc));
		return rc;
	}
	if (S_ISBLK(st.st_mode)) {
		int fd = open(s->path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0 && ioctl(fd, BLKSSZGET, &lbs))
			lbs = 512;
		if (fd >= 0)
			close(fd);
	}
	if (lbs == 4096) {
		align = 8u << 20;
		lsf = SANLK_LSF_SECTOR4K | SANLK_LSF_ALIGN8M;
		resf = SANLK_RES_SECTOR4K | SANLK_RES_ALIGN8M;
	}
	if (s->offset % align) {
		graid__log(GRAID_LOG_ERR, "lease '%s': offset %" PRIu64 " is not a multiple of "
					  "%" PRIu64 " (this device's lease size)", l->spec,
			   s->offset, align);
		return -EINVAL;
	}
	memset(&s->ls, 0, sizeof(s->ls));
	sb_uuid_format(l->uuid, uuid);
	snprintf(s->ls.name, sizeof(s->ls.name), "graid_%s", uuid); /* 42 of 48 bytes */
	s->ls.host_id = s->host_id;
	s->ls.flags = lsf;
	snprintf(s->ls.host_id_disk.path, sizeof(s->ls.host_id_disk.path), "%s", s->path);
	s->ls.host_id_disk.offset = s->offset;
	memset(&s->res, 0, sizeof(s->res));
	memcpy(s->res.r.lockspace_name, s->ls.name, sizeof(s->ls.name));
	snprintf(s->res.r.name, sizeof(s->res.r.name), "array");
	s->res.r.flags = resf;
	s->res.r.num_disks = 1;
	snprintf(s->res.d.path, sizeof(s->res.d.path), "%s", s->path);
	s->res.d.offset = s->offset + align;
	return 0;
}

static const char *sl_err(int rc)
{
	return rc < -200 ? sanlock_strerror(rc) : graid_strerror(rc);
}

static int sl_init(struct array_lease *l)
{
	struct sl_lease *s = l->impl;
	int rc = sl_describe(l);

	if (rc)
		return rc;
	/*
	 * Hosts stay in the lockspace after a close (sl_release): rewriting the area under
	 * this host's own delta lease would end the next open's lease seconds later.
	 */
	if (sanlock_inq_lockspace(&s->ls, 0) == 0) {
		graid__log(GRAID_LOG_ERR, "lease '%s': this host is in lockspace %s; leave it first "
					  "(`sanlock client rem_lockspace -s %s:%" PRIu64 ":%s:%" PRIu64
					  "`), and never rewrite an area another host is in",
			   l->spec, s->ls.name, s->ls.name, s->host_id, s->path, s->offset);
		return -EBUSY;
	}
	rc = sanlock_write_lockspace(&s->ls, 0, 0, s->io_timeout);
	if (rc == 0)
		rc = sanlock_write_resource(&s->res.r, 0, 0, 0);
	if (rc) {
		graid__log(GRAID_LOG_ERR, "lease '%s': writing the lease area: %s (is the sanlock "
					  "daemon running?)", l->spec, sl_err(rc));
		return rc < -200 ? -EIO : rc;
	}
	graid__log(GRAID_LOG_NOTICE, "lease '%s': lockspace %s and the array's lease written "
				     "(io_timeout %u s)", l->spec, s->ls.name, s->io_timeout);
	return 0;
}

/* Which host holds the resource, as far as sanlock says. */
static void sl_holder(struct sl_lease *s, char *holder, size_t len)
{
	struct sanlk_host *hosts = NULL;
	int n = 0;

	if (sanlock_read_resource_owners(&s->res.r, 0, &hosts, &n) == 0 && n > 0)
		snprintf(holder, len, "sanlock host id %" PRIu64 " (generation %" PRIu64 ")",
			 hosts[0].host_id, hosts[0].generation);
	else
		snprintf(holder, len, "another sanlock host");
	free(hosts);
}

/* The registration closed (the daemon frees what it held) and this open's flag file gone. */
static void sl_disconnect(struct sl_lease *s)
{
	if (s->sock >= 0)
		close(s->sock);
	s->sock = -1;
	if (s->flag[0])
		unlink(s->flag);
}

static void sl_release(struct array_lease *l)
{
	struct sl_lease *s = l->impl;
	struct sanlk_resource *rp[1] = { &s->res.r };

	/*
	 * The host stays in the lockspace, as lvmlockd's hosts do: leaving it takes seconds,
	 * and an open in the meantime would join a lockspace being removed, whose removal
	 * then kills the holder (found by review). Joined, the next open takes the lease in
	 * milliseconds; `sanlock client rem_lockspace` leaves it by hand.
	 */
	if (s->sock >= 0) {
		struct sigpipe_guard g;

		/*
		 * Nobody to tell when the daemon is gone; and libsanlock_client sends without
		 * MSG_NOSIGNAL, so a send on a connection the daemon just closed must not raise
		 * SIGPIPE in the caller's thread (found by review: the application was killed).
		 */
		if (!s->daemon_gone) {
			sigpipe_guard_begin_always(&g);
			sanlock_release(s->sock, -1, 0, 1, rp);
			sigpipe_guard_end(&g);
		}
	}
	sl_disconnect(s);
}

/*
 * The directory of the kill path's flag files: sanlock's helper, as root, touches a file
 * there, so nobody but this user (or root) may create files in it. Made 0700 if missing.
 */
static int sl_run_dir(struct array_lease *l, const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		graid__log(GRAID_LOG_ERR, "lease '%s': cannot make %s (GRAID_RUN_DIR): %s", l->spec,
			   dir, graid_strerror(-errno));
		return -ENOLCK;
	}
	/*
	 * This user's own: the flag files the helper leaves there (as root) must be this
	 * user's to delete, or a stale one would end the next open's lease at once.
	 */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		graid__log(GRAID_LOG_ERR, "lease '%s': %s (GRAID_RUN_DIR) must be a directory of "
					  "this user's own that nobody else can write", l->spec, dir);
		return -ENOLCK;
	}
	return 0;
}

static int sl_acquire(struct array_lease *l, char *holder, size_t len)
{
	struct sl_lease *s = l->impl;
	struct sanlk_resource *rp[1] = { &s->res.r };
	const char *dir = getenv("GRAID_RUN_DIR");
	uint64_t t_acquire = 0;
	int rc = sl_describe(l);

	if (rc)
		return rc == -EINVAL || rc == -ENOMEM ? rc : -ENOLCK; /* graid.h's open errors */
	dir = dir && *dir ? dir : SL_RUN_DIR;
	rc = sl_run_dir(l, dir);
	if (rc)
		return rc;
	/* One name per open: a flag left by an earlier one (or another process) is not ours. */
	if ((size_t)snprintf(s->flag, sizeof(s->flag), "%s/lease-lost-%s-%ld-%u", dir,
			     s->ls.name, (long)getpid(),
			     atomic_fetch_add(&sl_opens, 1)) >= sizeof(s->flag)) {
		graid__log(GRAID_LOG_ERR, "lease '%s': run directory %s too long (GRAID_RUN_DIR)",
			   l->spec, dir);
		s->flag[0] = '\0';
		return -ENOLCK;
	}
	if (unlink(s->flag) && errno != ENOENT) {
		graid__log(GRAID_LOG_ERR, "lease '%s': cannot remove the stale flag file %s: %s",
			   l->spec, s->flag, graid_strerror(-errno));
		return -ENOLCK;
	}
	s->daemon_gone = false;
	s->sock = sanlock_register();
	if (s->sock < 0) {
		rc = s->sock;
		s->sock = -1;
		graid__log(GRAID_LOG_ERR, "lease '%s': no sanlock daemon answers (%s); start it "
					  "(`sanlock daemon`, docs/REMOTE.md)", l->spec, sl_err(rc));
		return -ENOLCK;
	}
	/*
	 * The daemon frees the lease when this connection closes: a child the application
	 * forks and execs must not keep it (and the lease) after this process died.
	 */
	fcntl(s->sock, F_SETFD, FD_CLOEXEC);
	rc = sanlock_killpath(s->sock, 0, SL_KILL_PATH, s->flag);
	if (rc == 0) {
		rc = sanlock_add_lockspace_timeout(&s->ls, 0, s->io_timeout);
		if (rc == -EEXIST)
			rc = 0; /* this host has joined it already */
		if (rc)
			graid__log(GRAID_LOG_ERR, "lease '%s': joining lockspace %s as host id %" PRIu64
						  ": %s (is the area written by graidctl lease-init? or is "
						  "this host in the lockspace already with another host id, "
						  "path or offset: `sanlock client status`, then "
						  "`sanlock client rem_lockspace -s NAME:ID:PATH:OFFSET`)",
				   l->spec, s->ls.name, s->host_id, sl_err(rc));
	}
	if (rc == 0) {
		/*
		 * sanlock refuses while the holder's host renews its delta lease, and waits
		 * inside this call once that host has stopped renewing, until it counts it dead
		 * (8 x io-timeout + 60 s from when this daemon first saw the renewals stop):
		 * a takeover's wait is here.
		 */
		t_acquire = graid__now_ns();
		rc = sanlock_acquire(s->sock, -1, 0, 1, rp, NULL);
		t_acquire = graid__now_ns() - t_acquire;
		if (rc == SANLK_ACQUIRE_IDLIVE || rc == SANLK_ACQUIRE_OWNED ||
		    rc == SANLK_ACQUIRE_OTHER || rc == SANLK_ACQUIRE_OWNED_RETRY || rc == -EAGAIN) {
			sl_holder(s, holder, len);
			sl_disconnect(s);
			return -EBUSY;
		}
		if (rc)
			graid__log(GRAID_LOG_ERR, "lease '%s': acquiring the array's lease: %s",
				   l->spec, sl_err(rc));
	}
	if (rc) {
		sl_disconnect(s);
		return rc == -ENOMEM ? rc : -ENOLCK; /* graid.h: the lease could not be taken */
	}
	graid__log(GRAID_LOG_NOTICE, "lease '%s': held (lockspace %s, host id %" PRIu64
				     "), acquired in %.1f s%s",
		   l->spec, s->ls.name, s->host_id, (double)t_acquire / 1e9,
		   t_acquire > UINT64_C(2000000000) ? " (probably a last holder's host that had "
						      "stopped renewing: sanlock waits until it "
						      "counts it dead)"
						    : "");
	return 0;
}

static bool sl_lost(struct array_lease *l, char *why, size_t len)
{
	struct sl_lease *s = l->impl;
	struct pollfd p = { .fd = s->sock, .events = POLLIN };
	struct stat st;

	if (s->sock >= 0 && poll(&p, 1, 0) == 1 && p.revents) {
		s->daemon_gone = true;
		snprintf(why, len, "the sanlock daemon went away");
		return true;
	}
	if (s->flag[0] && stat(s->flag, &st) == 0) {
		snprintf(why, len, "sanlock could not renew it (the lease area did not answer "
				   "within its timeouts)");
		return true;
	}
	return false;
}

static void sl_free(struct array_lease *l)
{
	free(l->impl);
	l->impl = NULL;
}

#else /* built without libsanlock_client */

static int sl_parse(struct array_lease *l, const char *rest)
{
	(void)rest;
	graid__log(GRAID_LOG_ERR, "lease '%s': this libgraid was built without sanlock "
				  "(libsanlock-dev)", l->spec);
	return -EOPNOTSUPP;
}

static int sl_init(struct array_lease *l)
{
	(void)l;
	return -EOPNOTSUPP;
}

static int sl_acquire(struct array_lease *l, char *holder, size_t len)
{
	(void)l, (void)holder, (void)len;
	return -EOPNOTSUPP;
}

static bool sl_lost(struct array_lease *l, char *why, size_t len)
{
	(void)l, (void)why, (void)len;
	return false;
}

static void sl_release(struct array_lease *l)
{
	(void)l;
}

static void sl_free(struct array_lease *l)
{
	(void)l;
}
#endif

const struct lease_ops lease_sanlock_ops = {
	.name = "sanlock",
	.parse = sl_parse,
	.init = sl_init,
	.acquire = sl_acquire,
	.lost = sl_lost,
	.release = sl_release,
	.free = sl_free,
};
