/* SPDX-License-Identifier: MIT */
/* Parity engines inside the library: the handle behind struct graid_backend, registry, loader, auto's measurement. */
#ifndef LIBGRAID_CORE_ENGINE_H
#define LIBGRAID_CORE_ENGINE_H

#include "common/internal.h"
#include "engine/route.h"

/* An open engine: the public handle behind struct graid_backend. */
struct graid_backend {
	const struct graid_backend_ops *ops;
	struct graid_engine *engine;
	void *dl;                        /* dlopen handle of a plugin, NULL if built in */
	struct graid_backend *fallback;  /* CPU engine that redoes failed batches, or NULL */
	uint32_t flags;                  /* GRAID_BACKEND_F_* from the probe */
	atomic_uint_fast64_t batches;
	atomic_uint_fast64_t stripes;
	atomic_uint_fast64_t bytes;
	atomic_uint_fast64_t failovers;
	/* the engine answered -ENODEV to a batch: its device is gone, the CPU takes the rest */
	atomic_bool gone;
	atomic_uint_fast64_t cpu_routed;     /* batches routed whole to the CPU engine */
	atomic_uint_fast64_t split;          /* batches split between CPU and accelerator */
	struct route route;              /* auto mode with an accelerator: who takes what */
	struct split_worker *worker;     /* runs the CPU share of split batches, or NULL */
	pthread_mutex_t worker_lock;     /* creating the worker */
};

/* Built-in engines (ref_engine.c, backends/isal/isal_engine.c). */
const struct graid_backend_ops *graid__ref_ops(void);
const struct graid_backend_ops *graid__isal_ops(void);

/* backend_loader.c: find, load and validate a plugin; -EINVAL if no file of that name. */
int graid__plugin_load(const char *name, const struct graid_backend_ops **ops, void **dl);
int graid__ops_validate(const struct graid_backend_ops *ops, const char *where);

/* backend_registry.c */
extern const struct graid_backend_config graid__engine_config;
int graid__backend_open_ops(const struct graid_backend_ops *ops, void *dl,
			    struct graid_backend **out);
/* Every engine name this build knows, NULL-terminated ("ref", "isal", plugins...). */
extern const char *const graid__known_engines[];
/* Open a named engine (built in or a plugin; not "auto"). 0 or -errno, as graid_backend_open. */
int graid__backend_open_named(const char *name, struct graid_backend **out);
/* Fill @p d for engine @p name: description, device or why not usable, flags; not the rate. */
void graid__backend_describe(const char *name, struct graid_backend_desc *d);

/* backend_select.c: time an engine on the fixed selection workload (GB/s of data). */
int graid__backend_measure(struct graid_backend *be, double *gbps);
/* Measure every usable engine once per process; fills the cache below. */
int graid__select_auto(char *name, size_t name_len);
double graid__measured_gbps(const char *name);
void graid__measure_all(void);
/* Auto mode picked an accelerator: time it against its CPU fallback to fill be->route. */
int graid__route_measure(struct graid_backend *be);
/* parity.c: stop the split worker of a handle being closed. */
void graid__split_worker_stop(struct graid_backend *be);

#endif /* LIBGRAID_CORE_ENGINE_H */
