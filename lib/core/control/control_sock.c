/* SPDX-License-Identifier: MIT */
/* The control endpoint's socket: its path, made race-free with mode 0600, a stale one replaced. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/internal.h"
#include "control/control.h"
#include "format/superblock.h"

#define CONTROL_RUN_DIR "/run/graid"

static const char *run_dir_of(const char *dir)
{
	if (!dir || !*dir)
		/* Not from a set-user-ID caller's environment: the socket is made there. */
		dir = secure_getenv("GRAID_RUN_DIR");
	return dir && *dir ? dir : CONTROL_RUN_DIR;
}

int control_sock_path(const uint8_t uuid[16], const char *dir, char *path, size_t size)
{
	struct sockaddr_un sa;
	char u[37];
	int n;

	sb_uuid_format(uuid, u);
	n = snprintf(path, size, "%s/%s.ctl", run_dir_of(dir), u);
	if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	return 0;
}

int control_run_dir(const char *dir)
{
	struct stat st;

	dir = run_dir_of(dir);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		int err = -errno;

		graid__log(GRAID_LOG_ERR, "control: cannot make the run directory %s: %s", dir,
			   graid_strerror(err));
		return err;
	}
	/* Nobody else may create or swap names in it: the socket is renamed into place there. */
	if (lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022)) {
		graid__log(GRAID_LOG_ERR, "control: the run directory %s (GRAID_RUN_DIR) must be a "
					  "directory of this user's own that nobody else can write", dir);
		return -ENOTDIR;
	}
	return 0;
}

static int sock_address(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path, path, strlen(path));
	return 0;
}

/* 1: a process accepts connections at @p path; 0: nobody does (stale, or no socket there). */
static int sock_live(const char *path)
{
	struct sockaddr_un sa;
	int fd, live;

	if (sock_address(&sa, path))
		return 0;
	/* Non-blocking: a listener whose backlog is full (a stopped process) is not waited on. */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 1; /* cannot tell: leave it */
	live = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
	       (errno != ECONNREFUSED && errno != ENOENT);
	close(fd);
	return live;
}

/* The directory part of @p path into @p dir. */
static void dir_of(const char *path, char *dir, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 1;

	if (!slash)
		path = ".";
	snprintf(dir, size, "%.*s", (int)(n ? n : 1), path);
}

/* Bound in a fresh 0700 directory beside @p path, so that nobody sees it before it is 0600. */
static int sock_bind_private(int fd, const char *path, char *tmpdir, char *tmp, size_t size)
{
	struct sockaddr_un sa;
	char dir[108];
	int rc;

	dir_of(path, dir, sizeof(dir));
	if ((size_t)snprintf(tmpdir, size, "%s/.ctl-XXXXXX", dir) >= size)
		return -ENAMETOOLONG;
	if (!mkdtemp(tmpdir))
		return -errno;
	if ((size_t)snprintf(tmp, size, "%s/s", tmpdir) >= size || sock_address(&sa, tmp)) {
		rmdir(tmpdir);
		return -ENAMETOOLONG;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(tmp, 0600)) {
		rc = -errno;
		unlink(tmp);
		rmdir(tmpdir);
		return rc;
	}
	return 0;
}

/* Move the bound socket to @p path: beside none, or over a stale one; never over a live one. */
static int sock_place(const char *tmp, const char *path)
{
	struct stat st;

	if (link(tmp, path) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	/* Only a socket is ever ours to replace: anything else there was put by someone else. */
	if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
		return -EEXIST;
	if (sock_live(path))
		return -EBUSY;
	graid__log(GRAID_LOG_NOTICE, "control: replacing the stale socket %s of a holder that is "
				     "gone", path);
	return rename(tmp, path) ? -errno : 1;
}

int control_sock_open(struct control_sock *s, const char *path)
{
	char tmpdir[120], tmp[124];
	struct stat st;
	int rc;

	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0)
		rc = -errno;
	else
		rc = sock_bind_private(s->fd, path, tmpdir, tmp, sizeof(tmpdir));
	if (rc == 0) {
		rc = sock_place(tmp, path);
		/* Linked, or refused: the private name goes (renamed: it is gone already). */
		if (rc <= 0)
			unlink(tmp);
		rmdir(tmpdir);
		rc = rc > 0 ? 0 : rc;
	}
	if (rc == 0 && (stat(path, &st) || listen(s->fd, 16))) {
		rc = -errno;
		unlink(path);
	}
	if (rc) {
		graid__log(GRAID_LOG_ERR, "control: cannot serve %s: %s", path,
			   rc == -EBUSY ? "a live process serves it" :
			   rc == -EEXIST ? "something that is not a socket is there" :
			   graid_strerror(rc));
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		return rc;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	return 0;
}

void control_sock_close(struct control_sock *s)
{
	struct stat st;

	if (s->fd < 0)
		return;
	/* A later holder may have replaced it (ours looked stale to it): that one stays. */
	if (stat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
		unlink(s->path);
	close(s->fd);
	s->fd = -1;
}
