/* SPDX-License-Identifier: MIT */
/* A test's client of the control endpoint (docs/CONTROL.md): connect, send, one reply line. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "ctlutil.h"

uint64_t cu_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int cu_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

void cu_send_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

		cr_assert_gt(k, 0, "send: %s", strerror(errno));
		s += k;
		n -= (size_t)k;
	}
}

struct json_object *cu_read_reply(int fd)
{
	static char buf[1 << 20];
	size_t len = 0;
	uint64_t until = cu_now_ms() + 10000;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;
		char *nl;

		cr_assert_gt(poll(&p, 1, (int)(until - cu_now_ms())), 0, "no reply within 10 s");
		n = recv(fd, buf + len, 1, 0);
		if (n <= 0)
			return NULL;
		len += (size_t)n;
		cr_assert_lt(len, sizeof(buf));
		nl = memchr(buf, '\n', len);
		if (nl) {
			struct json_object *r;

			*nl = '\0';
			r = json_tokener_parse(buf);
			cr_assert_not_null(r, "a reply that is not JSON: %s", buf);
			return r;
		}
	}
}

struct json_object *cu_ask(int fd, const char *line)
{
	struct json_object *r;

	cu_send_all(fd, line, strlen(line));
	r = cu_read_reply(fd);
	cr_assert_not_null(r, "no reply to %s", line);
	return r;
}

struct json_object *cu_field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	cr_assert(json_object_object_get_ex(o, key, &v), "no field '%s' in %s", key,
		  json_object_to_json_string(o));
	return v;
}
