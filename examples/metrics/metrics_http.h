/* SPDX-License-Identifier: MIT */
/* GET /metrics over HTTP for a served array (graid-ublk --metrics, the nbdkit plugin's metrics=). */
#ifndef GRAID_METRICS_HTTP_H
#define GRAID_METRICS_HTTP_H

#include <stddef.h>

#include <libgraid/graid.h>

struct metrics_http;

/*
 * Check an address as --metrics takes it: "PORT" (loopback, 127.0.0.1), "HOST:PORT" with
 * HOST an IPv4 address, or "[IPV6]:PORT". 0; -EINVAL with @p why said.
 */
int metrics_http_parse(const char *spec, char *why, size_t size);

/*
 * Serve graid_metrics_write() of @p a at http://SPEC/metrics from a thread of libmicrohttpd's
 * own until metrics_http_stop(). 0; -EOPNOTSUPP built without libmicrohttpd; -EINVAL a bad
 * @p spec; -EADDRINUSE or another errno binding; @p why says which.
 */
int metrics_http_start(struct metrics_http **out, const char *spec, struct graid_array *a,
		       char *why, size_t size);

/* The address served, as "127.0.0.1:9750" or "[::1]:9750". */
const char *metrics_http_where(const struct metrics_http *h);

/* Stop serving (before the array is closed); NULL is a no-op. */
void metrics_http_stop(struct metrics_http *h);

#endif /* GRAID_METRICS_HTTP_H */
