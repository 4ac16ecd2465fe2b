/* SPDX-License-Identifier: MIT */
/*
 * --on-foreign: when the array stops being this host's, the requests that would fail are
 * held by the queue threads while a hook takes this host's export down, and fail only
 * then. Through nvmet, a failed request is a media-class error the client's multipath does
 * not retry elsewhere; a path that goes away (its controller deleted) is one it does: its
 * requests wait for, and go to, the next host's path (docs/REMOTE.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ublk_srv.h"

extern char **environ;

/* How long the hook may take before the held requests fail anyway. */
#define GU_HOOK_WAIT_S 60

/* environ plus the hook's two variables, made before fork (the child only execs). */
static char **gu_hook_env(char *uuid_var, char *dev_var)
{
	size_t n = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0, k = 0; i < n; i++)
		if (strncmp(environ[i], "GRAID_ARRAY_UUID=", 17) &&
		    strncmp(environ[i], "GRAID_UBLK_DEVICE=", 18))
			env[k++] = environ[i];
	for (n = 0; env[n]; n++)
		;
	env[n] = uuid_var;
	env[n + 1] = dev_var;
	return env;
}

/*
 * Run the hook and wait for it, at most GU_HOOK_WAIT_S (then it is killed). posix_spawn,
 * not fork: no copy of this process's mappings (large, and under O_DIRECT reads).
 */
static void gu_hook_run(const struct usrv *s, const uint8_t uuid[16])
{
	char uuid_var[64], dev_var[64], u[37];
	char *argv[] = { "sh", "-c", (char *)s->hook, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char **env;
	sigset_t none;
	pid_t pid;
	int st = 0, rc;

	gu_uuid_str(uuid, u);
	snprintf(uuid_var, sizeof(uuid_var), "GRAID_ARRAY_UUID=%s", u);
	snprintf(dev_var, sizeof(dev_var), "GRAID_UBLK_DEVICE=/dev/ublkb%" PRIu32, s->dev_id);
	env = gu_hook_env(uuid_var, dev_var);
	if (!env) {
		fprintf(stderr, "graid-ublk: --on-foreign: out of memory\n");
		return;
	}
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	/* stdout is this server's answer to whoever started it: the hook writes to stderr. */
	posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	posix_spawnattr_init(&attr);
	/* This process blocks the signals it takes with sigwait(); the hook gets none blocked. */
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
	rc = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, env);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (rc) {
		fprintf(stderr, "graid-ublk: --on-foreign: cannot start the hook: %s\n",
			graid_strerror(-rc));
		return;
	}
	for (int i = 0; i < GU_HOOK_WAIT_S * 10; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid) {
			fprintf(stderr, "graid-ublk: --on-foreign: the hook %s %d\n",
				WIFEXITED(st) ? "exited with" : "was killed by signal",
				WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			return;
		}
		if (w < 0) /* reaped already (SIGCHLD ignored by whoever started us): gone */
			return;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	fprintf(stderr, "graid-ublk: --on-foreign: the hook still ran after %d s: killed; failing "
			"the held requests now\n", GU_HOOK_WAIT_S);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

void gu_foreign_hook(struct usrv *s, const uint8_t uuid[16])
{
	if (!s->park_foreign || atomic_load(&s->released))
		return;
	fprintf(stderr, "graid-ublk: --on-foreign: running '%s' before failing the requests "
			"held since the array stopped being ours\n", s->hook);
	gu_hook_run(s, uuid);
	atomic_store(&s->released, true);
	if (eventfd_write(s->release_fd, 1))
		perror("graid-ublk: eventfd_write");
}
