/* SPDX-License-Identifier: MIT */
/*
 * The seam between the CUDA engine's host logic and the CUDA runtime: every runtime call the
 * engine makes, each returning 0 or a negative errno with the CUDA error already logged.
 *
 * cuda_rt.c implements it on the CUDA runtime; tests/gpu/cuda_rt_emul.c implements it on
 * host memory with deferred, per-stream execution, so the pipeline's ordering and layout are
 * tested on machines without a GPU.
 */
#ifndef GRAID_CUDA_RT_H
#define GRAID_CUDA_RT_H

#include <stdbool.h>
#include <stddef.h>

#include "cuda_kparams.h"

/* The engine's sink, as graid_backend_config.log. */
typedef void (*cuda_log_fn)(int level, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

struct cuda_rt;          /* one device, as used by one engine */
struct cuda_rt_stream;   /* a cudaStream_t */
struct cuda_rt_event;    /* a cudaEvent_t */

/*
 * Is device `device` usable (present, compute capability 8.0 or newer)? 0 and a
 * description in desc, or -ENODEV and the reason in desc (CUDA's name for the error, the
 * driver's and the runtime's versions); logs nothing either way. desc_len >= 1.
 */
int cuda_rt_probe(int device, char *desc, size_t desc_len);

/* 0; -ENODEV no device, no driver, or no kernel image this device can run; -EIO. */
int cuda_rt_open(struct cuda_rt **out, int device, cuda_log_fn log);
void cuda_rt_close(struct cuda_rt *rt);
/*
 * Make the device current for the calling thread (the runtime keeps it per thread), saving
 * the thread's current device in *prev; cuda_rt_unbind(rt, *prev) puts it back, so that an
 * application's own CUDA work on another device does not move. Bind's failure needs no unbind.
 */
int cuda_rt_bind(struct cuda_rt *rt, int *prev);
void cuda_rt_unbind(struct cuda_rt *rt, int prev);
/*
 * NULL while the device's context is usable; once an error that leaves it unusable has been
 * seen (illegal address, launch failure, uncorrectable ECC, device lost), CUDA's name and
 * words for it. From then on every call fails, and errors are logged only at debug level:
 * the engine logs the loss once.
 */
const char *cuda_rt_lost(const struct cuda_rt *rt);
/* Kernels read registered host memory at its host address (no translation needed). */
bool cuda_rt_host_ptr_is_device_ptr(const struct cuda_rt *rt);

int cuda_rt_stream_create(struct cuda_rt *rt, struct cuda_rt_stream **out);
void cuda_rt_stream_destroy(struct cuda_rt *rt, struct cuda_rt_stream *s);
int cuda_rt_event_create(struct cuda_rt *rt, struct cuda_rt_event **out);
void cuda_rt_event_destroy(struct cuda_rt *rt, struct cuda_rt_event *ev);

int cuda_rt_device_alloc(struct cuda_rt *rt, void **out, size_t n);
void cuda_rt_device_free(struct cuda_rt *rt, void *p);
/* Page-locked host memory, the source and target of asynchronous copies. */
int cuda_rt_pinned_alloc(struct cuda_rt *rt, void **out, size_t n);
void cuda_rt_pinned_free(struct cuda_rt *rt, void *p);

int cuda_rt_h2d(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s);
int cuda_rt_d2h(struct cuda_rt *rt, void *dst, const void *src, size_t n,
		struct cuda_rt_stream *s);
/* One launch covering every item of the piece kp describes. */
int cuda_rt_launch(struct cuda_rt *rt, const struct cuda_kparams *kp, struct cuda_rt_stream *s);
int cuda_rt_record(struct cuda_rt *rt, struct cuda_rt_event *ev, struct cuda_rt_stream *s);
/* Wait until everything before the event's record has finished (blocking, not spinning). */
int cuda_rt_wait(struct cuda_rt *rt, struct cuda_rt_event *ev);
/* Wait until the stream is idle: nothing queued on it can touch memory afterwards. */
int cuda_rt_stream_sync(struct cuda_rt *rt, struct cuda_rt_stream *s);

/*
 * Pin and map [p, p + n) for kernels to read in place. *mine is true if this call pinned it
 * (undo with cuda_rt_host_unregister), false if it was already registered by someone else.
 */
int cuda_rt_host_register(struct cuda_rt *rt, void *p, size_t n, bool *mine);
void cuda_rt_host_unregister(struct cuda_rt *rt, void *p);
/* Whether [p, p + n) is registered host memory a kernel can reach. */
bool cuda_rt_host_is_mapped(struct cuda_rt *rt, const void *p, size_t n);
/* The device address of registered host memory. */
int cuda_rt_host_devptr(struct cuda_rt *rt, void *p, uint8_t **out);

/*
 * cuda_kernels.cu, returning raw cudaError_t values that cuda_rt.c translates: the launch of
 * one piece on a grid of at most max_blocks blocks, and how many of the kernel's blocks fit
 * on one multiprocessor at once (a grid of exactly that many per multiprocessor gives every
 * block the same share of a grid-stride loop).
 */
#ifdef __cplusplus
extern "C" {
#endif
int cuda_kernels_launch(const struct cuda_kparams *kp, unsigned max_blocks, void *stream);
int cuda_kernels_blocks_per_sm(int *blocks);
#ifdef __cplusplus
}
#endif

#endif /* GRAID_CUDA_RT_H */
