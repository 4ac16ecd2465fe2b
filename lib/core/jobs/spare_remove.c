/* SPDX-License-Identifier: MIT */
/* Taking a registered hot spare off an array: off the members' list, and its own superblock cleared. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "member/member.h"
#include "member/member_path.h"
#include "member/member_pr.h"
#include "meta/array_meta.h"
#include "jobs/jobs.h"

/*
 * The device @p path names, as add_spare's duplicate check knows devices: its device and
 * inode (an identity spec resolved to its node first). -errno when it names nothing here.
 */
static int spare_path_identity(const char *path, dev_t *dev, ino_t *ino)
{
	char node[64];

	if (member_path_is_spec(path)) {
		int rc = graid_member_resolve(path, node, sizeof(node));

		if (rc)
			return rc;
		path = node;
	}
	return member_identity(path, dev, ino);
}

static bool spare_is(const struct member *m, const char *path, bool known, dev_t dev, ino_t ino)
{
	/* The path it was given by matches even when the device is gone from it since. */
	if (!strcmp(m->dev.path, path))
		return true;
	return known && m->dev.fd >= 0 && m->dev.devno == dev && m->dev.ino == ino;
}

/* The spare @p path names, or -1, logged: why it is none (a member in a role says which). */
static int spare_find(struct graid_array *a, const char *path)
{
	dev_t dev = 0;
	ino_t ino = 0;
	bool known = spare_path_identity(path, &dev, &ino) == 0;

	for (unsigned i = 0; i < a->nspares; i++)
		if (spare_is(&a->spares[i], path, known, dev, ino))
			return (int)i;
	for (unsigned r = 0; r < a->nmembers; r++)
		if (spare_is(&a->members[r], path, known, dev, ino)) {
			graid__log(GRAID_LOG_ERR, "remove spare: %s is not a spare: it holds role %u "
						  "(%s); fail or replace the member instead", path, r,
				   member_state_name(atomic_load(&a->members[r].state)));
			return -1;
		}
	graid__log(GRAID_LOG_ERR, "remove spare: %s is not a hot spare of this array", path);
	return -1;
}

/*
 * Its superblock zeroed, so that nothing takes it for this array's spare any more (the
 * members' superblocks, written first, no longer list it either: docs/FORMAT.md).
 */
static void spare_wipe(struct graid_array *a, struct member *m)
{
	int rc = member_zero_range(m, 0, GRAID_SB_SIZE);

	if (rc == 0)
		rc = member_flush(m);
	if (rc)
		graid__log(GRAID_LOG_WARNING, "remove spare: %s: clearing its superblock: %s; the "
					      "array no longer lists it, and an open leaves it out",
			   m->dev.path, graid_strerror(rc));
	if (a->pr_key)
		member_pr_release(m, a->pr_key);
}

GRAID_API int graid_array_remove_spare(struct graid_array *a, const char *path)
{
	struct member gone;
	int rc, i;

	if (!a || !path || !*path)
		return -EINVAL;
	rc = array_may_change(a);
	if (rc)
		return rc;
	pthread_mutex_lock(&a->meta_lock);
	i = spare_find(a, path);
	if (i < 0) {
		pthread_mutex_unlock(&a->meta_lock);
		return -ENOENT;
	}
	gone = a->spares[i];
	/* The others keep their order: slots renumbered, as every superblock is written next. */
	memmove(&a->spares[i], &a->spares[i + 1],
		(a->nspares - (unsigned)i - 1) * sizeof(a->spares[0]));
	a->nspares--;
	a->spares[a->nspares].dev.fd = -1;
	a->spares[a->nspares].dev.fault = NULL;
	a->events++;
	/*
	 * Wiped only while the array is still ours: after another host's takeover (the round
	 * finds it and writes nothing) the device may be that host's spare, or its member now.
	 */
	if (array_write_superblocks(a, 0) != -ESTALE && !array_foreign(a))
		spare_wipe(a, &gone);
	pthread_mutex_unlock(&a->meta_lock);
	graid__log(GRAID_LOG_NOTICE, "%s is no longer a hot spare of this array", gone.dev.path);
	member_close(&gone);
	return array_foreign(a) ? -ESTALE : 0;
}
