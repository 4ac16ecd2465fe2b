/* SPDX-License-Identifier: MIT */
/* Who holds an array on this host: a lock per array UUID, and owner records to tell live from dead. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/file.h>
#include <sys/stat.h>

#include "ownership/array_own.h"
#include "common/internal.h"

/*
 * root's arrays lock in one directory only root can write; another user's in one of its own
 * (a directory others could write would let them plant a lock file, or a link to a file of
 * root's that the holder would then overwrite with its record).
 */
#define OWN_RUN_LOCK "/run/lock"

static const char *own_lock_dir(char *buf, size_t len)
{
	const char *d = getenv("GRAID_LOCK_DIR");

	if (d && *d)
		return d;
	if (geteuid() == 0)
		return OWN_RUN_LOCK "/libgraid";
	snprintf(buf, len, OWN_RUN_LOCK "/libgraid-%u", (unsigned)geteuid());
	return buf;
}

int array_uuid_file_path(const uint8_t uuid[16], const char *suffix, char *buf, size_t len)
{
	char text[37], dirbuf[64];
	const char *dir = own_lock_dir(dirbuf, sizeof(dirbuf));

	sb_uuid_format(uuid, text);
	return snprintf(buf, len, "%s/%s%s", dir, text, suffix) >= (int)len ? -ENAMETOOLONG : 0;
}

/* The lock directory must be a directory of this user's (or root's) that nobody else writes. */
static int own_make_dir(const char *dir)
{
	mode_t mode = geteuid() == 0 ? 0755 : 0700;
	struct stat st;

	/*
	 * A minimal system (an initramfs, a container) may have /run without /run/lock: root
	 * makes it as the FHS has it, sticky and writable by all.
	 */
	if (mkdir(dir, mode) && errno == ENOENT && geteuid() == 0 &&
	    !strncmp(dir, OWN_RUN_LOCK "/", sizeof(OWN_RUN_LOCK)) &&
	    (mkdir(OWN_RUN_LOCK, 01777) == 0 || errno == EEXIST))
		(void)chmod(OWN_RUN_LOCK, 01777);
	if (mkdir(dir, mode) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (st.st_uid != geteuid() && st.st_uid != 0)
		return -EPERM; /* someone else's: they could plant files in it */
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		/* Ours (made by an older libgraid, or by hand): set it right rather than refuse. */
		if (st.st_uid != geteuid() || chmod(dir, mode))
			return -EPERM;
	}
	return 0;
}

/* The record in a lock file: one line, "pid START SINCE BOOT-ID HOST". */
static void own_record_write(int fd)
{
	struct sb_owner me;
	char line[200], boot[37];
	int n;

	owner_self(&me);
	sb_uuid_format(me.boot_id, boot);
	n = snprintf(line, sizeof(line), "%u %llu %llu %s %s\n", me.pid,
		     (unsigned long long)me.start, (unsigned long long)me.since, boot,
		     me.host[0] ? me.host : "-");
	/* Best effort: without it a contender waits its bounded while instead of failing fast. */
	if (n > 0 && ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) < 0)
		return;
}

static void own_record_read(const char *path, struct sb_owner *o)
{
	char line[200] = "", boot[64] = "", host[GRAID_SB_HOST_BYTES] = "";
	unsigned long long start, since;
	unsigned pid;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(o, 0, sizeof(*o));
	if (fd < 0)
		return;
	n = pread(fd, line, sizeof(line) - 1, 0);
	close(fd);
	if (n <= 0)
		return;
	line[n] = '\0';
	if (sscanf(line, "%u %llu %llu %63s %63s", &pid, &start, &since, boot, host) != 5 ||
	    sb_uuid_parse(boot, o->boot_id))
		return;
	o->pid = pid;
	o->start = start;
	o->since = since;
	snprintf(o->host, sizeof(o->host), "%s", strcmp(host, "-") ? host : "");
}

int array_uuid_holder(const uint8_t uuid[16], struct sb_owner *holder)
{
	char path[256];

	memset(holder, 0, sizeof(*holder));
	if (array_uuid_file_path(uuid, ".lock", path, sizeof(path)))
		return -ENAMETOOLONG;
	own_record_read(path, holder);
	return holder->pid ? 0 : -ENOENT;
}

int array_uuid_lock_take(struct array_uuid_lock *l, const uint8_t uuid[16],
			 struct sb_owner *holder)
{
	char text[37], dirbuf[64];
	const char *dir = own_lock_dir(dirbuf, sizeof(dirbuf));
	int rc;

	l->fd = -1;
	memset(holder, 0, sizeof(*holder));
	sb_uuid_format(uuid, text);
	if (snprintf(l->path, sizeof(l->path), "%s/%s.lock", dir, text) >= (int)sizeof(l->path))
		rc = -ENAMETOOLONG;
	else
		rc = own_make_dir(dir);
	/*
	 * The lock file is removed by its holder at release, so a file opened just before that
	 * may be one nobody else will ever look at: after locking, the name must still lead to
	 * the file locked, else try again with the new one.
	 */
	for (unsigned tries = 0; rc == 0 && tries < 100; tries++) {
		struct stat held, named;
		/* Never through a link, never anything but a plain file of its own. */
		int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);

		if (fd < 0) {
			rc = -errno;
			break;
		}
		if (fstat(fd, &held) || !S_ISREG(held.st_mode) || held.st_nlink != 1) {
			close(fd);
			rc = -EPERM;
			break;
		}
		if (flock(fd, LOCK_EX | LOCK_NB)) {
			rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			if (rc == -EBUSY) {
				own_record_read(l->path, holder);
				return rc;
			}
			break;
		}
		if (fstat(fd, &held) == 0 && stat(l->path, &named) == 0 &&
		    held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
			l->fd = fd;
			own_record_write(fd);
			return 0;
		}
		close(fd);
	}
	if (rc == 0)
		rc = -EAGAIN;
	/*
	 * Without this lock an opener given other members than a holder's could write too: a
	 * writable open does not go on without it.
	 */
	graid__log(GRAID_LOG_ERR, "array lock %s: %s (the lock directory must be a directory of "
				  "this user's or root's that nobody else can write; GRAID_LOCK_DIR "
				  "names another)", l->path, graid_strerror(rc));
	return -ENOLCK;
}

void array_uuid_lock_release(struct array_uuid_lock *l)
{
	if (l->fd < 0)
		return;
	struct stat held, named;

	/*
	 * Removed while still locked: whoever opened the old file sees that and tries again.
	 * Only if the name still leads to the file held (someone may have removed it by hand,
	 * and another holder made a new one since).
	 */
	if (fstat(l->fd, &held) == 0 && stat(l->path, &named) == 0 &&
	    held.st_dev == named.st_dev && held.st_ino == named.st_ino)
		unlink(l->path);
	close(l->fd);
	l->fd = -1;
}

/* Field 22 of /proc/PID/stat (start time in clock ticks) and field 3 (state); -1 if gone. */
static int own_proc_stat(uint32_t pid, uint64_t *start, char *state)
{
	char path[64], buf[1024], *p;
	unsigned field = 2;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count from its end. */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	for (p++; *p && field < 22; field++) {
		while (*p == ' ')
			p++;
		if (field + 1 == 3)
			*state = *p;
		if (field + 1 == 22) {
			*start = strtoull(p, NULL, 10);
			return 0;
		}
		while (*p && *p != ' ')
			p++;
	}
	return -1;
}

static void own_boot_id(uint8_t id[16])
{
	char buf[64] = "";
	ssize_t n;
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	memset(id, 0, 16);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n >= 36) {
		buf[36] = '\0';
		sb_uuid_parse(buf, id);
	}
}

/*
 * The first 8 bytes of this host's machine id (32 hex digits in /etc/machine-id, or where
 * D-Bus keeps it); 0: none.
 */
static uint64_t own_host_id(void)
{
	char buf[64] = "";
	uint64_t id = 0;
	ssize_t n = 0;
	const char *const where[] = { "/etc/machine-id", "/var/lib/dbus/machine-id" };

	/* An empty or "uninitialized" /etc/machine-id (first boot) falls through to D-Bus's. */
	for (unsigned w = 0; w < 2; w++) {
		int fd = open(where[w], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n >= 16 && buf[0] != 'u')
			break;
		n = 0;
	}
	if (n < 16)
		return 0;
	for (unsigned i = 0; i < 16; i++) {
		char c = buf[i];
		unsigned v = c >= '0' && c <= '9' ? (unsigned)(c - '0')
			   : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) : 16;

		if (v == 16)
			return 0;
		id = id << 4 | v;
	}
	return id;
}

bool owner_same_host(const struct sb_owner *a, const struct sb_owner *b)
{
	static const uint8_t zero[16];

	/* Machine ids tell hosts apart where both are known (containers on one kernel too). */
	if (a->host_id && b->host_id)
		return a->host_id == b->host_id;
	/* Else one boot of one kernel is one host, whatever it is called now. */
	if (memcmp(a->boot_id, zero, 16) && !memcmp(a->boot_id, b->boot_id, 16))
		return true;
	/* Names alone may collide: the last resort. */
	return !strcmp(a->host, b->host);
}

void owner_self(struct sb_owner *o)
{
	char state = 0;

	memset(o, 0, sizeof(*o));
	o->pid = (uint32_t)getpid();
	if (own_proc_stat(o->pid, &o->start, &state))
		o->start = 0;
	o->since = (uint64_t)time(NULL);
	own_boot_id(o->boot_id);
	if (gethostname(o->host, sizeof(o->host) - 1))
		o->host[0] = '\0';
	o->host[sizeof(o->host) - 1] = '\0';
	o->host_id = own_host_id();
}

enum owner_liveness owner_liveness(const struct sb_owner *o)
{
	static const uint8_t zero[16];
	struct sb_owner me;
	uint64_t start = 0;
	char state = 0;

	if (o->pid == 0)
		return OWNER_UNKNOWN;
	owner_self(&me);
	if (!owner_same_host(o, &me))
		return OWNER_UNKNOWN; /* another host's: not ours to judge */
	if (memcmp(o->boot_id, zero, 16) && memcmp(me.boot_id, zero, 16) &&
	    memcmp(o->boot_id, me.boot_id, 16))
		return OWNER_DEAD; /* recorded before this host last booted */
	if (own_proc_stat(o->pid, &start, &state))
		return OWNER_DEAD;
	if (o->start && start != o->start)
		return OWNER_DEAD; /* the pid was reused */
	return state == 'Z' || state == 'X' ? OWNER_DEAD : OWNER_ALIVE;
}

void owner_describe(const struct sb_owner *o, char *buf, size_t len)
{
	char comm[64] = "", path[64], when[32] = "?";
	time_t t = (time_t)o->since;
	struct tm tm;
	int fd;

	if (o->pid == 0) {
		snprintf(buf, len, "an unknown holder");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/comm", o->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, comm, sizeof(comm) - 1);

		close(fd);
		comm[n > 0 ? n : 0] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
	}
	if (o->since && gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	snprintf(buf, len, "pid %u%s%s%s on host %s since %s", o->pid, *comm ? " (" : "", comm,
		 *comm ? ")" : "", o->host[0] ? o->host : "?", when);
}
