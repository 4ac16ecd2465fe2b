/* SPDX-License-Identifier: MIT */
/* Engine handles: open by name (built-in or plugin), close, list, with CPU failover wiring. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include "common/internal.h"
#include "engine/engine.h"

const char *const graid__known_engines[] = { "ref", "isal", "cuda", "opencl", NULL };

/* Plugins log through the library's sink, whichever the caller chose. */
static void registry_engine_log(int level, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	graid__log(level, "%s", msg);
}

const struct graid_backend_config graid__engine_config = {
	.struct_size = sizeof(struct graid_backend_config),
	.log = registry_engine_log,
};

static bool registry_is_known(const char *name)
{
	for (const char *const *k = graid__known_engines; *k; k++)
		if (!strcmp(*k, name))
			return true;
	return false;
}

/* Names become file names: only [a-z0-9_-] so a name can never reach outside a plugin dir. */
static bool registry_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* Find an engine's table: built in, or from its plugin. */
static int registry_find(const char *name, const struct graid_backend_ops **ops, void **dl)
{
	int rc;

	*dl = NULL;
	if (!strcmp(name, "ref")) {
		*ops = graid__ref_ops();
		return 0;
	}
	if (!strcmp(name, "isal")) {
		*ops = graid__isal_ops();
		return 0;
	}
	rc = graid__plugin_load(name, ops, dl);
	/* A known engine whose plugin is not here was not built or installed: not usable. */
	if (rc == -EINVAL && registry_is_known(name)) {
		graid__log(GRAID_LOG_INFO, "engine %s: plugin not found (not built or installed)",
			   name);
		rc = -ENODEV;
	} else if (rc == -EINVAL) {
		graid__log(GRAID_LOG_ERR, "no engine named \"%s\" (built in: ref, isal; plugins: "
					  "cuda, opencl, or libgraid-backend-%s.so on GRAID_BACKEND_PATH)",
			   name, name);
	}
	return rc;
}

static void registry_release(const struct graid_backend_ops *ops, void *dl)
{
	(void)ops;
	if (dl)
		dlclose(dl);
}

/*
 * Plugin engines drive runtimes (CUDA, OpenCL) that do not survive fork(): a child that
 * touches one its parent started can hang (PoCL did, in the SQLite VFS crash test). The
 * process that first started each plugin engine is remembered here, in the library, which
 * stays loaded when plugins are unloaded.
 */
#define REGISTRY_STARTED_MAX 16

static struct {
	char name[32];
	pid_t pid;
} registry_started[REGISTRY_STARTED_MAX];

/* 0 when this process may start @p name; -ENODEV when a parent process already did. */
static int registry_fork_check(const char *name, bool record)
{
	pid_t self = getpid();
	int rc = 0;

	graid__lock(&graid__registry_lock);
	for (unsigned i = 0; i < REGISTRY_STARTED_MAX; i++) {
		if (!registry_started[i].name[0]) {
			if (record) {
				snprintf(registry_started[i].name, sizeof(registry_started[i].name),
					 "%s", name);
				registry_started[i].pid = self;
			}
			break;
		}
		if (!strcmp(registry_started[i].name, name)) {
			rc = registry_started[i].pid == self ? 0 : -ENODEV;
			break;
		}
	}
	graid__unlock(&graid__registry_lock);
	return rc;
}

int graid__backend_open_ops(const struct graid_backend_ops *ops, void *dl,
			    struct graid_backend **out)
{
	struct graid_backend_info info = { .struct_size = sizeof(info) };
	struct graid_backend *be;
	int rc;

	if (dl && registry_fork_check(ops->name, false)) {
		graid__log(GRAID_LOG_WARNING, "engine %s: its runtime was started by a parent of "
					      "this forked process and cannot be used here; open "
					      "plugin engines after fork()", ops->name);
		return -ENODEV;
	}
	rc = ops->probe(&info);
	if (dl && rc == 0)
		registry_fork_check(ops->name, true);
	if (rc) {
		graid__log(GRAID_LOG_INFO, "engine %s: not usable here (%s%s%s)", ops->name,
			   graid_strerror(rc), info.device[0] ? ": " : "", info.device);
		return rc;
	}
	be = calloc(1, sizeof(*be));
	if (!be)
		return -ENOMEM;
	be->ops = ops;
	be->dl = dl;
	be->flags = info.flags;
	pthread_mutex_init(&be->worker_lock, NULL);
	rc = ops->open(&be->engine, &graid__engine_config);
	if (rc) {
		graid__log(GRAID_LOG_WARNING, "engine %s: open failed on %s: %s", ops->name,
			   info.device, graid_strerror(rc));
		pthread_mutex_destroy(&be->worker_lock);
		free(be);
		return rc;
	}
	if ((info.flags & GRAID_BACKEND_F_ACCELERATOR) || dl) {
		/*
		 * The failover engine, behind accelerators and every plugin (a plugin's bug or
		 * its device's fault is not a data failure): isal where it can run, else ref.
		 */
		if (graid__backend_open_ops(graid__isal_ops(), NULL, &be->fallback))
			graid__backend_open_ops(graid__ref_ops(), NULL, &be->fallback);
	}
	graid__log(GRAID_LOG_INFO, "engine %s opened on %s", ops->name, info.device);
	*out = be;
	return 0;
}

int graid__backend_open_named(const char *name, struct graid_backend **out)
{
	const struct graid_backend_ops *ops;
	void *dl;
	int rc;

	if (!registry_name_ok(name)) {
		graid__log(GRAID_LOG_ERR, "engine name \"%s\" is not a valid engine name", name);
		return -EINVAL;
	}
	rc = registry_find(name, &ops, &dl);
	if (rc)
		return rc;
	rc = graid__backend_open_ops(ops, dl, out);
	if (rc)
		registry_release(ops, dl);
	return rc;
}

GRAID_API void graid_backend_close(struct graid_backend *be)
{
	if (!be)
		return;
	graid__split_worker_stop(be);
	pthread_mutex_destroy(&be->worker_lock);
	graid_backend_close(be->fallback);
	be->ops->close(be->engine);
	registry_release(be->ops, be->dl);
	free(be);
}

/*
 * The table reaches the memory operations (a plugin built before them has a shorter one);
 * the loader refused a table with register and no unregister.
 */
static bool registry_has_memory_ops(const struct graid_backend_ops *ops)
{
	return GRAID_OPS_HAS(ops, unregister_memory) && ops->register_memory;
}

GRAID_API int graid_backend_register_memory(struct graid_backend *be, void *addr, size_t len)
{
	if (!be || !addr || len == 0)
		return -EINVAL;
	if (!registry_has_memory_ops(be->ops))
		return 0;
	return be->ops->register_memory(be->engine, addr, len);
}

GRAID_API int graid_backend_unregister_memory(struct graid_backend *be, void *addr)
{
	if (!be)
		return -EINVAL;
	if (!registry_has_memory_ops(be->ops))
		return 0;
	return be->ops->unregister_memory(be->engine, addr);
}

GRAID_API const char *graid_backend_name(const struct graid_backend *be)
{
	return be ? be->ops->name : "(null)";
}

void graid__backend_describe(const char *name, struct graid_backend_desc *d)
{
	struct graid_backend_info info = { .struct_size = sizeof(info) };
	const struct graid_backend_ops *ops;
	void *dl;

	snprintf(d->name, sizeof(d->name), "%s", name);
	d->description[0] = d->device[0] = '\0';
	d->flags = 0;
	d->status = registry_find(name, &ops, &dl);
	if (d->status == 0) {
		snprintf(d->description, sizeof(d->description), "%s",
			 ops->description ? ops->description : "");
		d->status = ops->probe(&info);
		/* Usable: the device; not: why, where the probe said (graid_backend.h). */
		snprintf(d->device, sizeof(d->device), "%s", info.device);
		if (d->status == 0)
			d->flags = info.flags;
		registry_release(ops, dl);
	} else if (d->status == -ENODEV) {
		snprintf(d->device, sizeof(d->device),
			 "plugin libgraid-backend-%s.so not found (not built or not installed)",
			 name);
	}
}
