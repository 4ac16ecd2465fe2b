/* SPDX-License-Identifier: MIT */
/* Plugin engines: find libgraid-backend-<name>.so, dlopen it, and refuse a table we can't trust. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include "common/internal.h"
#include "engine/engine.h"

/* The size of the version-1 table: a plugin built against a newer header may be larger. */
#define LOADER_OPS_V1_SIZE (offsetof(struct graid_backend_ops, check) + sizeof(void *))

int graid__ops_validate(const struct graid_backend_ops *ops, const char *where)
{
	const char *missing = NULL;

	if (!ops) {
		graid__log(GRAID_LOG_ERR, "plugin %s: returned no operations table", where);
		return -ENOEXEC;
	}
	if (ops->abi_version != GRAID_BACKEND_ABI_VERSION) {
		uint32_t head[2];

		/*
		 * Version 1 began with two 32-bit fields (struct_size, abi_version): its version
		 * sits where version 2's 64-bit struct_size has its upper half, always 0.
		 */
		memcpy(head, ops, sizeof(head));
		graid__log(GRAID_LOG_ERR, "plugin %s: speaks ABI version %u, this library %u "
					  "(rebuild it against this libgraid's graid_backend.h)",
			   where, head[1] == 1 ? 1u : ops->abi_version, GRAID_BACKEND_ABI_VERSION);
		return -ENOEXEC;
	}
	if (ops->struct_size < LOADER_OPS_V1_SIZE) {
		graid__log(GRAID_LOG_ERR, "plugin %s: operations table of %zu bytes, need %zu",
			   where, ops->struct_size, (size_t)LOADER_OPS_V1_SIZE);
		return -ENOEXEC;
	}
	if (!ops->name)
		missing = "name";
	else if (!ops->probe)
		missing = "probe";
	else if (!ops->open)
		missing = "open";
	else if (!ops->close)
		missing = "close";
	else if (!ops->gen)
		missing = "gen";
	else if (!ops->recover)
		missing = "recover";
	else if (GRAID_OPS_HAS(ops, unregister_memory) && ops->register_memory &&
		 !ops->unregister_memory)
		missing = "unregister_memory";
	if (missing) {
		graid__log(GRAID_LOG_ERR, "plugin %s: lacks required operation '%s'", where,
			   missing);
		return -ENOEXEC;
	}
	return 0;
}

/*
 * Plugins next to the library that is running: a library in the build tree uses the build
 * tree's plugins (so tests and examples never pick up a stale installed copy), an installed
 * library uses the installed ones.
 */
static const char *loader_default_dir(const char *name, char *buf, size_t len)
{
	Dl_info self;

	if (dladdr((void *)graid__ops_validate, &self) && self.dli_fname &&
	    !strncmp(self.dli_fname, GRAID_BUILD_ROOT "/", strlen(GRAID_BUILD_ROOT) + 1)) {
		snprintf(buf, len, "%s/lib/backends/%s", GRAID_BUILD_ROOT, name);
		return buf;
	}
	return GRAID_PLUGIN_DIR;
}

static int loader_try(const char *dir, size_t dirlen, const char *name,
		      const struct graid_backend_ops **ops, void **dl)
{
	graid_backend_plugin_fn entry;
	char path[4096];
	void *h;
	int rc;

	if (dirlen == 0 || dirlen >= sizeof(path) - 64)
		return -EINVAL;
	snprintf(path, sizeof(path), "%.*s/libgraid-backend-%s.so", (int)dirlen, dir, name);
	if (access(path, F_OK))
		return -EINVAL;
	/* NODELETE: a plugin's runtime (CUDA's static one, an OpenCL ICD) is set up once per
	 * process; unloading it at every close and loading it again at the next open costs a
	 * driver start-up each time and leaves the runtime's atexit work pointing nowhere. */
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		/* Most often a library it needs (a GPU runtime) is absent: not usable here. */
		graid__log(GRAID_LOG_INFO, "plugin %s: cannot load: %s", path, dlerror());
		return -ENODEV;
	}
	*(void **)&entry = dlsym(h, GRAID_BACKEND_PLUGIN_SYMBOL);
	if (!entry) {
		graid__log(GRAID_LOG_ERR, "plugin %s: does not export %s", path,
			   GRAID_BACKEND_PLUGIN_SYMBOL);
		dlclose(h);
		return -ENOEXEC;
	}
	*ops = entry();
	rc = graid__ops_validate(*ops, path);
	if (rc == 0 && strcmp((*ops)->name, name)) {
		graid__log(GRAID_LOG_ERR, "plugin %s: calls itself \"%s\"", path, (*ops)->name);
		rc = -ENOEXEC;
	}
	if (rc) {
		dlclose(h);
		return rc;
	}
	*dl = h;
	return 0;
}

int graid__plugin_load(const char *name, const struct graid_backend_ops **ops, void **dl)
{
	const char *path = getenv("GRAID_BACKEND_PATH");
	char buf[4096];
	const char *dir;
	int rc;

	/* GRAID_BACKEND_PATH first, a colon-separated list, as LD_LIBRARY_PATH. */
	while (path && *path) {
		const char *end = strchr(path, ':');
		size_t n = end ? (size_t)(end - path) : strlen(path);

		rc = loader_try(path, n, name, ops, dl);
		if (rc != -EINVAL)
			return rc;
		path = end ? end + 1 : NULL;
	}
	dir = loader_default_dir(name, buf, sizeof(buf));
	return loader_try(dir, strlen(dir), name, ops, dl);
}
