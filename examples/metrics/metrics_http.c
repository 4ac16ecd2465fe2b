/* SPDX-License-Identifier: MIT */
/* GET /metrics over HTTP with libmicrohttpd, for the programs that serve an array. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "metrics_http.h"

#ifdef GRAID_HAVE_MICROHTTPD
#include <microhttpd.h>
#endif

/* What a scrape may cost the server: a few at once, and none that stalls for long. */
#define MH_CONNECTIONS 8
#define MH_TIMEOUT_S 10

struct metrics_http {
#ifdef GRAID_HAVE_MICROHTTPD
	struct MHD_Daemon *d;
#endif
	struct graid_array *a;
	char where[80];          /* "127.0.0.1:9750", "[::1]:9750": what is served */
};

static int mh_addr(const char *spec, struct sockaddr_storage *ss, char *why, size_t size)
{
	const char *colon = strrchr(spec, ':');
	char host[64];
	const char *port_s = colon ? colon + 1 : spec;
	char *end;
	unsigned long port;
	size_t hl = colon ? (size_t)(colon - spec) : 0;

	memset(ss, 0, sizeof(*ss));
	errno = 0;
	port = strtoul(port_s, &end, 10);
	if (!*port_s || *end || errno || port == 0 || port > 65535 || *port_s == '-' ||
	    *port_s == '+') {
		snprintf(why, size, "metrics address '%s': a port 1 .. 65535 (PORT, HOST:PORT or "
			 "[IPV6]:PORT) expected", spec);
		return -EINVAL;
	}
	if (hl >= sizeof(host)) {
		snprintf(why, size, "metrics address '%s': host too long", spec);
		return -EINVAL;
	}
	memcpy(host, spec, hl);
	host[hl] = '\0';
	if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		host[hl - 1] = '\0';
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1)
			return 0;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		/* Only a port: loopback, so nothing is exposed that was not asked for. */
		if (!colon && inet_pton(AF_INET, "127.0.0.1", &s4->sin_addr) == 1)
			return 0;
		if (colon && inet_pton(AF_INET, host, &s4->sin_addr) == 1)
			return 0;
	}
	snprintf(why, size, "metrics address '%s': '%s' is no IPv4 address nor [IPv6] address",
		 spec, host);
	return -EINVAL;
}

/* @p ss as "ADDR:PORT" (IPv6 in brackets). */
static void mh_where(const struct sockaddr_storage *ss, char *out, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(out, size, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(out, size, "%s:%u", host, ntohs(s4->sin_port));
	}
}

int metrics_http_parse(const char *spec, char *why, size_t size)
{
	struct sockaddr_storage ss;

	return mh_addr(spec, &ss, why, size);
}

#ifdef GRAID_HAVE_MICROHTTPD

static enum MHD_Result mh_reply(struct MHD_Connection *c, unsigned status, char *text,
				size_t len, const char *type)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result mh_text(struct MHD_Connection *c, unsigned status, const char *msg)
{
	char *t = strdup(msg);

	return t ? mh_reply(c, status, t, strlen(t), "text/plain; charset=utf-8") : MHD_NO;
}

static enum MHD_Result mh_handle(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload,
				 size_t *upload_size, void **state)
{
	struct metrics_http *h = cls;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	(void)version;
	(void)upload;
	(void)state;
	if (*upload_size)
		return mh_text(c, MHD_HTTP_BAD_REQUEST, "no request body expected\n");
	if (strcmp(url, "/metrics"))
		return mh_text(c, MHD_HTTP_NOT_FOUND, "only /metrics is served here\n");
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return mh_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics\n");
	f = open_memstream(&text, &len);
	if (!f)
		return mh_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	rc = graid_metrics_write(f, &h->a, NULL, 1, 0);
	if (fclose(f) && !rc)
		rc = -ENOMEM;
	if (rc) {
		char msg[128];

		free(text);
		snprintf(msg, sizeof(msg), "graid_metrics_write: %s\n", graid_strerror(rc));
		return mh_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	}
	return mh_reply(c, MHD_HTTP_OK, text, len, "text/plain; version=0.0.4; charset=utf-8");
}

int metrics_http_start(struct metrics_http **out, const char *spec, struct graid_array *a,
		       char *why, size_t size)
{
	struct sockaddr_storage ss;
	struct metrics_http *h;
	/* No MHD_USE_ERROR_LOG: its bind message names port 0 (the address is given whole). */
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
	int rc = mh_addr(spec, &ss, why, size);

	if (rc)
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h) {
		snprintf(why, size, "metrics: out of memory");
		return -ENOMEM;
	}
	h->a = a;
	mh_where(&ss, h->where, sizeof(h->where));
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	errno = 0;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, mh_handle, h,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned)MH_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MH_TIMEOUT_S,
				MHD_OPTION_END);
	if (!h->d) {
		/* libmicrohttpd leaves bind's errno behind; say something when it did not. */
		rc = errno ? -errno : -EADDRNOTAVAIL;
		snprintf(why, size, "metrics: cannot serve http://%s/metrics: %s", h->where,
			 strerror(-rc));
		free(h);
		return rc;
	}
	*out = h;
	return 0;
}

const char *metrics_http_where(const struct metrics_http *h)
{
	return h->where;
}

void metrics_http_stop(struct metrics_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}

#else

int metrics_http_start(struct metrics_http **out, const char *spec, struct graid_array *a,
		       char *why, size_t size)
{
	(void)out;
	(void)a;
	snprintf(why, size, "metrics address '%s': this build has no HTTP server (libgraid was "
		 "built without libmicrohttpd)", spec);
	return -EOPNOTSUPP;
}

const char *metrics_http_where(const struct metrics_http *h)
{
	(void)h;
	return "";
}

void metrics_http_stop(struct metrics_http *h)
{
	(void)h;
}

#endif
