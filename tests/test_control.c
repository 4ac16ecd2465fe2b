/* SPDX-License-Identifier: MIT */
/* The control endpoint (docs/CONTROL.md): its requests over the socket, its peers, its limits. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "ctlutil.h"
#include "healutil.h"

struct ctl_env {
	struct au_set s;
	struct graid_array *a;
	char run[300];
	char sock[108];
};

/* RAID-6 of 5 members, its endpoint served from a run directory of the test's own. */
static void env_up(struct ctl_env *e, const struct graid_control_options *o)
{
	struct graid_control_options d = { .struct_size = sizeof(d) };

	au_make(&e->s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&e->s, 5, 6, 8192, &e->a), 0);
	snprintf(e->run, sizeof(e->run), "%s/run", e->s.dir);
	d = o ? *o : d;
	d.run_dir = e->run;
	cr_assert_eq(graid_array_control_start(e->a, &d), 0);
	cr_assert_eq(graid_array_control_path(e->a, e->run, e->sock, sizeof(e->sock)), 0);
}

static void env_down(struct ctl_env *e)
{
	if (e->a)
		cr_assert_eq(graid_array_close(e->a), 0);
	e->a = NULL;
	rmdir(e->run);
	au_remove(&e->s);
}

static bool ok_of(struct json_object *r)
{
	return json_object_get_boolean(cu_field(r, "ok"));
}

static void assert_error(struct json_object *r, int err, const char *words)
{
	cr_assert(!ok_of(r), "expected a refusal: %s", json_object_to_json_string(r));
	cr_assert_eq(json_object_get_int(cu_field(r, "errno")), err, "%s",
		     json_object_to_json_string(r));
	cr_assert(strstr(json_object_get_string(cu_field(r, "error")), words), "'%s' not in %s",
		  words, json_object_to_json_string(r));
}

/* After the server closed: EOF (or a reset) within 10 s, whatever it had sent read first. */
static bool closed_by_peer(int fd)
{
	uint64_t until = cu_now_ms() + 10000;
	char buf[4096];

	while (cu_now_ms() < until) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			continue;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return true;
	}
	return false;
}

static const char *state_name(int st)
{
	static const char *const names[] = {
		[GRAID_MEMBER_ACTIVE] = "active", [GRAID_MEMBER_FAILED] = "failed",
		[GRAID_MEMBER_MISSING] = "missing", [GRAID_MEMBER_REBUILDING] = "rebuilding",
		[GRAID_MEMBER_SPARE] = "spare", [GRAID_MEMBER_UNREACHABLE] = "unreachable",
	};

	return names[st];
}

Test(control, status_over_the_socket_is_what_the_library_reports, .timeout = 120)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct json_object *r, *members;
	struct ctl_env e;
	int fd;

	env_up(&e, NULL);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	heal_fill(e.a, info.size / 4, 1);
	cr_assert_eq(graid_array_fail_member(e.a, 3), 0);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0, "connect: %s", strerror(-fd));
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	cr_assert_eq(json_object_get_int(cu_field(r, "id")), 1);
	cr_assert_eq(json_object_get_int(cu_field(r, "protocol")), GRAID_CONTROL_PROTOCOL);
	json_object_put(r);

	r = cu_ask(fd, "{\"id\": 7, \"op\": \"status\"}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	cr_assert_eq(json_object_get_int(cu_field(r, "id")), 7);
	cr_assert_eq(json_object_get_int(cu_field(r, "level")), 6);
	cr_assert_eq(json_object_get_uint64(cu_field(r, "size")), info.size);
	cr_assert_eq(json_object_get_uint64(cu_field(r, "nfailed")), 1);
	cr_assert_str_eq(json_object_get_string(cu_field(r, "state")), "degraded");
	cr_assert_eq(json_object_get_int(cu_field(r, "holder_pid")), (int)getpid());
	cr_assert_eq(json_object_get_uint64(cu_field(r, "bad_block_bytes")), 0);
	members = cu_field(r, "members");
	cr_assert_eq(json_object_array_length(members), 5);
	for (unsigned i = 0; i < 5; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };
		struct json_object *m = json_object_array_get_idx(members, i);

		/* Nothing ran on the array since the reply: the counters are the same. */
		cr_assert_eq(graid_array_member_info(e.a, i, &mi), 0);
		cr_assert_eq(json_object_get_int(cu_field(m, "role")), (int)i);
		cr_assert_str_eq(json_object_get_string(cu_field(m, "state")), state_name(mi.state));
		cr_assert_str_eq(json_object_get_string(cu_field(m, "path")), mi.path);
		cr_assert_str_eq(json_object_get_string(cu_field(m, "identity")), mi.identity);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "writes")), mi.writes);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "write_bytes")), mi.write_bytes);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "reads")), mi.reads);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "errors")), mi.errors);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "bad_block_units")), mi.bad_blocks);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "checksum_errors")),
			     mi.checksum_errors);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "checksum_tag_errors")),
			     mi.checksum_tag_errors);
		cr_assert_eq(json_object_get_uint64(cu_field(m, "checksum_lost_writes")),
			     mi.checksum_lost_writes);
		cr_assert_eq(json_object_array_length(cu_field(m, "bad_blocks")), mi.bad_blocks);
		cr_assert(json_object_is_type(cu_field(m, "left_out"), json_type_null));
		if (i != 3)
			cr_assert_gt(mi.writes, 0, "the fill wrote to role %u", i);
	}
	json_object_put(r);
	close(fd);
	env_down(&e);
}

Test(control, fail_over_the_socket_fails_the_member, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct json_object *r;
	struct ctl_env e;
	int fd;

	env_up(&e, NULL);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	r = cu_ask(fd, "{\"id\": 2, \"op\": \"fail\", \"role\": 2}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(graid_array_member_info(e.a, 2, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_FAILED);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	cr_assert_eq(info.nfailed, 1);
	/* RAID-6 carries two out; a third is refused, and the array says why. */
	json_object_put(cu_ask(fd, "{\"id\": 3, \"op\": \"fail\", \"role\": 0}\n"));
	r = cu_ask(fd, "{\"id\": 4, \"op\": \"fail\", \"role\": 1}\n");
	assert_error(r, EBUSY, "fail role 1");
	cr_assert_eq(json_object_get_int(cu_field(r, "id")), 4);
	json_object_put(r);
	cr_assert_eq(graid_array_member_info(e.a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE);
	r = cu_ask(fd, "{\"id\": 5, \"op\": \"fail\", \"role\": 9}\n");
	assert_error(r, EINVAL, "fail role 9");
	json_object_put(r);
	r = cu_ask(fd, "{\"id\": 6, \"op\": \"fail\", \"role\": -1}\n");
	assert_error(r, EINVAL, "'role'");
	json_object_put(r);
	close(fd);
	env_down(&e);
}

Test(control, replace_and_spare_add_over_the_socket, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct json_object *r, *m;
	char line[1024];
	struct ctl_env e;
	char *fresh, *spare;
	int fd;

	env_up(&e, NULL);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	fresh = heal_new_member(&e.s, "fresh");
	snprintf(line, sizeof(line), "{\"id\": 1, \"op\": \"replace\", \"role\": 1, \"path\": "
		 "\"%s\"}\n", fresh);
	r = cu_ask(fd, line);
	assert_error(r, EBUSY, "replace role 1");
	json_object_put(r);
	cr_assert_eq(graid_array_fail_member(e.a, 1), 0);
	r = cu_ask(fd, line);
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(graid_array_member_info(e.a, 1, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_REBUILDING);
	cr_assert_str_eq(mi.path, fresh);
	cr_assert_eq(graid_array_rebuild(e.a, NULL, NULL), 0);

	spare = heal_new_member(&e.s, "spare");
	snprintf(line, sizeof(line), "{\"id\": 2, \"op\": \"spare-add\", \"path\": \"%s\"}\n",
		 spare);
	r = cu_ask(fd, line);
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(graid_array_member_info(e.a, 5, &mi), 0, "the spare is listed after the roles");
	cr_assert_eq(mi.state, GRAID_MEMBER_SPARE);
	cr_assert_str_eq(mi.path, spare);
	/* Listed after the roles, as graidctl status --json lists it. */
	r = cu_ask(fd, "{\"id\": 3, \"op\": \"status\"}\n");
	cr_assert_eq(json_object_array_length(cu_field(r, "members")), 6);
	m = json_object_array_get_idx(cu_field(r, "members"), 5);
	cr_assert_str_eq(json_object_get_string(cu_field(m, "path")), spare);
	cr_assert_str_eq(json_object_get_string(cu_field(m, "state")), "spare");
	cr_assert_eq(json_object_get_int(cu_field(m, "role")), 5);
	json_object_put(r);
	r = cu_ask(fd, line);
	assert_error(r, EEXIST, "spare-add");
	json_object_put(r);
	r = cu_ask(fd, "{\"id\": 4, \"op\": \"spare-add\", \"path\": \"/nonexistent/x\"}\n");
	assert_error(r, ENOENT, "spare-add");
	json_object_put(r);
	r = cu_ask(fd, "{\"id\": 5, \"op\": \"rebuild-rate\", \"bytes_per_s\": 1048576}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	cr_assert_eq(json_object_get_uint64(cu_field(r, "bytes_per_s")), 1048576);
	json_object_put(r);
	close(fd);
	env_down(&e);
}

/* In a child: connect as uid 65534, send hello; 0 refused as expected, else a failure code. */
static int other_user_child(const char *sock)
{
	char buf[4096];
	ssize_t n;
	size_t len = 0;
	int fd;

	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 10;
	fd = cu_connect(sock);
	if (fd < 0)
		return 11;
	if (send(fd, "{\"id\":1,\"op\":\"fail\",\"role\":0}\n", 30, MSG_NOSIGNAL) != 30 &&
	    errno != EPIPE && errno != ECONNRESET)
		return 12;
	/* The refusal, then EOF: the server closed the connection. */
	while ((n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	if (!strstr(buf, "\"ok\":false") || !strstr(buf, "\"errno\":13"))
		return 13;
	return n == 0 || errno == ECONNRESET ? 0 : 14;
}

static int run_as_other_user(const char *sock)
{
	int status;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(other_user_child(sock));
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

Test(control, a_peer_of_another_user_is_refused, .timeout = 120)
{
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct stat st;
	struct ctl_env e;

	if (geteuid() != 0)
		cr_skip_test("needs root: the peer of another user is a child that setresuid()s "
			     "to 65534");
	env_up(&e, NULL);
	cr_assert_eq(stat(e.sock, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "the socket is 0600: %o", st.st_mode & 0777);
	cr_assert(S_ISSOCK(st.st_mode));
	/*
	 * The file's mode keeps others out already; opened up here as a mistake would, the
	 * peer's credentials still do.
	 */
	cr_assert_eq(chmod(e.s.dir, 0755), 0);
	cr_assert_eq(chmod(e.run, 0755), 0);
	cr_assert_eq(chmod(e.sock, 0666), 0);
	cr_assert_eq(run_as_other_user(e.sock), 0, "the other user's request was not refused");
	cr_assert_eq(graid_array_member_info(e.a, 0, &mi), 0);
	cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "the refused request changed nothing");
	env_down(&e);
}

Test(control, garbage_gets_an_error_and_the_connection_still_answers, .timeout = 120)
{
	static const struct {
		const char *line;
		int err;
		const char *words;
	} bad[] = {
		{ "this is not json\n", EINVAL, "bad JSON" },
		{ "{\"id\": 1, \"op\": \n", EINVAL, "bad JSON" },
		{ "[1, 2, 3]\n", EINVAL, "JSON object" },
		{ "{\"id\": 1} {\"id\": 2}\n", EINVAL, "text after" },
		{ "{\"id\": 1}\n", EINVAL, "'op'" },
		{ "{\"id\": 1, \"op\": 5}\n", EINVAL, "'op'" },
		{ "{\"id\": 1, \"op\": \"format-everything\"}\n", EOPNOTSUPP, "format-everything" },
		{ "{\"id\": 1, \"op\": \"fail\"}\n", EINVAL, "'role'" },
		{ "{\"id\": 1, \"op\": \"fail\", \"role\": \"two\"}\n", EINVAL, "'role'" },
		{ "{\"id\": 1, \"op\": \"fail\", \"role\": 1, \"force\": true}\n", EINVAL, "'force'" },
		{ "{\"id\": 1, \"op\": \"spare-add\", \"path\": 3}\n", EINVAL, "'path'" },
		{ "{\"id\": 1, \"op\": \"replace\", \"role\": 1}\n", EINVAL, "'path'" },
		{ "{\"id\": 1, \"op\": \"rebuild-rate\", \"bytes_per_s\": -5}\n", EINVAL,
		  "'bytes_per_s'" },
		/* json-c saturates these to UINT64_MAX: never taken as that. */
		{ "{\"id\": 1, \"op\": \"rebuild-rate\", \"bytes_per_s\": "
		  "100000000000000000000000}\n", EINVAL, "'bytes_per_s'" },
		{ "{\"id\": 1, \"op\": \"rebuild-rate\", \"bytes_per_s\": "
		  "18446744073709551616}\n", EINVAL, "'bytes_per_s'" },
		/* A string json-c would give cut at its \u0000. */
		{ "{\"id\": 1, \"op\": \"hello\\u0000junk\"}\n", EINVAL, "'op'" },
		{ "{\"id\": 1, \"op\": \"spare-add\", \"path\": \"/dev/null\\u0000junk\"}\n",
		  EINVAL, "'path'" },
	};
	struct json_object *r;
	struct ctl_env e;
	int fd;

	env_up(&e, NULL);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = cu_ask(fd, bad[i].line);
		assert_error(r, bad[i].err, bad[i].words);
		json_object_put(r);
	}
	r = cu_ask(fd, "{\"id\": \"after\", \"op\": \"hello\"}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	cr_assert_str_eq(json_object_get_string(cu_field(r, "id")), "after");
	json_object_put(r);
	for (unsigned i = 0; i < 5; i++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_member_info(e.a, i, &mi), 0);
		cr_assert_eq(mi.state, GRAID_MEMBER_ACTIVE, "garbage changed role %u", i);
	}
	close(fd);
	env_down(&e);
}

Test(control, a_request_longer_than_the_limit_closes_the_client, .timeout = 120)
{
	size_t n = GRAID_CONTROL_REQUEST_MAX + 4096;
	char *big = malloc(n);
	struct json_object *r;
	struct ctl_env e;
	int fd, other;

	env_up(&e, NULL);
	fd = cu_connect(e.sock);
	other = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	cr_assert_geq(other, 0);
	/* A line just at the limit (newline included) is read whole and answered. */
	memset(big, ' ', GRAID_CONTROL_REQUEST_MAX);
	memcpy(big, "{\"id\":1,\"op\":\"hello\"}", 21);
	big[GRAID_CONTROL_REQUEST_MAX - 1] = '\n';
	cu_send_all(fd, big, GRAID_CONTROL_REQUEST_MAX);
	r = cu_read_reply(fd);
	cr_assert_not_null(r, "a request of the limit's length is served");
	cr_assert(ok_of(r));
	json_object_put(r);
	/* One byte more: closed. */
	memset(big, 'x', n);
	big[n - 1] = '\n';
	send(fd, big, n, MSG_NOSIGNAL);
	cr_assert(closed_by_peer(fd), "the client of an overlong request was not closed");
	r = cu_ask(other, "{\"id\": 2, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r), "another client is still served");
	json_object_put(r);
	close(fd);
	close(other);
	free(big);
	env_down(&e);
}

struct flood {
	const char *sock;
	int fd;
	atomic_bool dropped;
	size_t sent;
};

/* Send status requests and never read a reply, until the server drops the connection. */
static void *flood_main(void *arg)
{
	static const char req[] = "{\"op\":\"status\"}\n";
	struct flood *f = arg;
	uint64_t until = cu_now_ms() + 60000;

	while (cu_now_ms() < until) {
		ssize_t k = send(f->fd, req, sizeof(req) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (k < 0 && (errno == EPIPE || errno == ECONNRESET)) {
			atomic_store(&f->dropped, true);
			break;
		}
		if (k < 0) {
			struct pollfd p = { .fd = f->fd, .events = POLLOUT };

			poll(&p, 1, 50);
			continue;
		}
		f->sent += (size_t)k;
	}
	return NULL;
}

/*
 * Dropped by whichever comes first, as docs/CONTROL.md says: its queued replies passing the
 * limit (a fast server reads a burst of requests at once), or the idle timeout once its
 * socket is full and nothing moves (a server that keeps up, reply by reply). Which one
 * depends on the machine's speed; the bound holds for both.
 */
Test(control, a_client_that_never_reads_stalls_no_io_and_is_dropped, .timeout = 180)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .idle_timeout_ms = 1000 };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct flood f = { 0 };
	uint64_t worst = 0, start, took;
	struct json_object *r;
	struct ctl_env e;
	pthread_t t;
	uint8_t *buf = malloc(65536);
	unsigned writes = 0;
	int fd;

	env_up(&e, &o);
	cr_assert_eq(graid_array_info(e.a, &info), 0);
	memset(buf, 0x5a, 65536);
	f.fd = cu_connect(e.sock);
	cr_assert_geq(f.fd, 0);
	cr_assert_eq(pthread_create(&t, NULL, flood_main, &f), 0);
	start = cu_now_ms();
	/* I/O keeps completing while the endpoint is flooded, each write within a bound. */
	while (!atomic_load(&f.dropped) && cu_now_ms() - start < 60000) {
		uint64_t t0 = cu_now_ms();

		cr_assert_eq(graid_array_write(e.a, buf, 65536,
					       (writes * 65536ull) % (info.size - 65536)), 65536);
		took = cu_now_ms() - t0;
		worst = took > worst ? took : worst;
		writes++;
	}
	took = cu_now_ms() - start;
	pthread_join(t, NULL);
	/* The socket fills within a few hundred replies: seconds even on a loaded ASan build. */
	cr_assert(f.dropped, "the client that never read was not dropped in %" PRIu64 " ms (%zu "
			     "bytes sent)", took, f.sent);
	cr_assert_lt(took, 30000, "dropped only after %" PRIu64 " ms", took);
	/* A stall would last as long as the client: the bound leaves room for a busy machine. */
	cr_assert_lt(worst, 5000, "a write took %" PRIu64 " ms while the endpoint was flooded",
		     worst);
	cr_assert_gt(writes, 0);
	close(f.fd);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"status\"}\n");
	cr_assert(ok_of(r), "the endpoint still serves others");
	json_object_put(r);
	close(fd);
	free(buf);
	env_down(&e);
}

Test(control, an_idle_client_is_closed_and_a_talking_one_is_not, .timeout = 120)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .idle_timeout_ms = 300 };
	struct json_object *r;
	struct ctl_env e;
	uint64_t t0;
	int idle, busy;

	env_up(&e, &o);
	idle = cu_connect(e.sock);
	busy = cu_connect(e.sock);
	cr_assert_geq(idle, 0);
	cr_assert_geq(busy, 0);
	/* The silent one half-way through a request: a partial line is no activity later on. */
	cu_send_all(idle, "{\"id\": 1,", 10);
	t0 = cu_now_ms();
	while (cu_now_ms() - t0 < 1500) {
		r = cu_ask(busy, "{\"id\": 2, \"op\": \"hello\"}\n");
		cr_assert(ok_of(r), "the client that keeps talking is served");
		json_object_put(r);
		usleep(100000);
	}
	cr_assert(closed_by_peer(idle), "the idle client was not closed");
	r = cu_ask(busy, "{\"id\": 3, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	json_object_put(r);
	close(idle);
	close(busy);
	env_down(&e);
}

Test(control, close_with_clients_connected_returns_promptly, .timeout = 120)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .max_clients = 3 };
	struct json_object *r;
	struct ctl_env e;
	uint64_t t0;
	struct stat st;
	int fd[4];

	env_up(&e, &o);
	for (unsigned i = 0; i < 4; i++)
		fd[i] = cu_connect(e.sock);
	/* The fourth is over max_clients: refused, with the reason. */
	r = cu_read_reply(fd[3]);
	cr_assert_not_null(r);
	assert_error(r, EUSERS, "too many clients");
	json_object_put(r);
	cr_assert(closed_by_peer(fd[3]));
	/* One mid-request, one with a reply it does not read. */
	cu_send_all(fd[0], "{\"id\": 1, \"op\": \"sta", 20);
	cu_send_all(fd[1], "{\"id\": 1, \"op\": \"status\"}\n", 26);
	usleep(100000);
	t0 = cu_now_ms();
	cr_assert_eq(graid_array_close(e.a), 0);
	e.a = NULL;
	cr_assert_lt(cu_now_ms() - t0, 3000, "close took %" PRIu64 " ms", cu_now_ms() - t0);
	for (unsigned i = 0; i < 3; i++) {
		cr_assert(closed_by_peer(fd[i]), "client %u still connected after close", i);
		close(fd[i]);
	}
	close(fd[3]);
	cr_assert_eq(stat(e.sock, &st), -1, "the socket is removed at close");
	env_down(&e);
}

Test(control, the_socket_path_stale_live_and_read_only, .timeout = 120)
{
	struct graid_open_options ro = { .struct_size = sizeof(ro), .flags = GRAID_OPEN_READ_ONLY };
	struct graid_control_options o = { .struct_size = sizeof(o) };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct graid_array *b = NULL;
	struct json_object *r;
	struct ctl_env e;
	int fd, l;

	env_up(&e, NULL);
	o.run_dir = e.run;
	cr_assert_eq(graid_array_control_start(e.a, &o), -EALREADY);
	cr_assert_eq(graid_array_open(e.s.paths, 5, &ro, &b), 0);
	cr_assert_eq(graid_array_control_start(b, &o), -EROFS);
	cr_assert_eq(graid_array_close(b), 0);
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	cr_assert_eq(access(e.sock, F_OK), -1, "stop removes the socket");
	/* A socket left by a holder that died (bound, never unlinked): replaced. */
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e.sock);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(l);
	cr_assert_eq(graid_array_control_start(e.a, &o), 0);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	json_object_put(r);
	close(fd);
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	/* One a live process serves: left alone. */
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 4), 0);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EBUSY);
	cr_assert_eq(access(e.sock, F_OK), 0, "the live socket is still there");
	close(l);
	unlink(e.sock);
	/* Not a socket at all: not ours to replace. */
	l = open(e.sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	cr_assert_geq(l, 0);
	close(l);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EEXIST);
	cr_assert_eq(access(e.sock, F_OK), 0, "the file is still there");
	unlink(e.sock);
	env_down(&e);
}

/* Review: the names in the run directory besides the array's socket. */
static unsigned run_dir_leftovers(const char *run, const char *sock)
{
	const char *base = strrchr(sock, '/') + 1;
	unsigned n = 0;
	struct dirent *d;
	DIR *dir = opendir(run);

	cr_assert_not_null(dir);
	while ((d = readdir(dir)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") && strcmp(d->d_name, base))
			n++;
	closedir(dir);
	return n;
}

Test(control, a_refused_start_leaves_nothing_in_the_run_dir, .timeout = 120)
{
	struct graid_control_options o = { .struct_size = sizeof(o) };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ctl_env e;
	int l;

	env_up(&e, NULL);
	o.run_dir = e.run;
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e.sock);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 4), 0);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EBUSY);
	close(l);
	unlink(e.sock);
	l = open(e.sock, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	close(l);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EEXIST);
	cr_assert_eq(run_dir_leftovers(e.run, e.sock), 0,
		     "a refused start left its private directory behind in %s", e.run);
	unlink(e.sock);
	env_down(&e);
}

Test(control, a_forked_child_stopping_its_copy_leaves_the_parents_endpoint, .timeout = 120)
{
	struct json_object *r;
	struct ctl_env e;
	int status, fd;
	pid_t pid;

	env_up(&e, NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(20);
		graid_array_control_stop(e.a);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0, "the parent's socket is gone after its child stopped its copy: %s",
		      strerror(-fd));
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	json_object_put(r);
	close(fd);
	env_down(&e);
}

struct start_arg {
	struct graid_array *a;
	const struct graid_control_options *o;
	int rc;
};

static void *start_main(void *arg)
{
	struct start_arg *s = arg;

	s->rc = graid_array_control_start(s->a, s->o);
	return NULL;
}

Test(control, a_start_does_not_wait_on_a_listener_that_does_not_accept, .timeout = 120)
{
	struct graid_control_options o = { .struct_size = sizeof(o) };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct start_arg s = { .o = &o, .rc = 1 };
	struct timespec until;
	struct ctl_env e;
	pthread_t t;
	int l, joined;

	env_up(&e, NULL);
	o.run_dir = e.run;
	s.a = e.a;
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", e.sock);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(l, 0), 0);
	/* Its backlog full: a stopped or stuck process's socket. */
	for (int i = 0; i < 4; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		connect(c, (struct sockaddr *)&sa, sizeof(sa));
	}
	cr_assert_eq(pthread_create(&t, NULL, start_main, &s), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	joined = pthread_timedjoin_np(t, NULL, &until);
	/* Let it go either way, so that the test can end: accept what waits until it returns. */
	if (joined) {
		fcntl(l, F_SETFL, O_NONBLOCK);
		for (int k = 0; k < 1000 && pthread_tryjoin_np(t, NULL); k++) {
			int fd = accept(l, NULL, NULL);

			if (fd >= 0)
				close(fd);
			usleep(10000);
		}
	}
	cr_assert_eq(joined, 0, "graid_array_control_start waited 5 s on a listener that does "
				"not accept (and held every array's start/stop lock meanwhile)");
	cr_assert_eq(s.rc, -EBUSY);
	close(l);
	unlink(e.sock);
	env_down(&e);
}

/* An event callback that stops the endpoint from the endpoint's own thread, while a request runs. */
struct self_stop {
	struct graid_array *a;
	pthread_t main;
	int rc;
	bool called;
};

static void self_stop_event(void *arg, const struct graid_event *ev)
{
	struct self_stop *s = arg;

	if (s->called || pthread_equal(pthread_self(), s->main) ||
	    ev->type != GRAID_EVENT_MEMBER_FAILED)
		return;
	s->called = true;
	s->rc = graid_array_control_stop(s->a);
}

Test(control, a_stop_from_the_endpoints_own_thread_is_refused, .timeout = 120)
{
	struct self_stop s = { .main = pthread_self(), .rc = 1 };
	struct json_object *r;
	struct ctl_env e;
	int fd;

	env_up(&e, NULL);
	s.a = e.a;
	cr_assert_eq(graid_array_set_event_callback(e.a, self_stop_event, &s), 0);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"fail\", \"role\": 1}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	json_object_put(r);
	cr_assert_eq(graid_array_set_event_callback(e.a, NULL, NULL), 0);
	cr_assert(s.called, "the request sent no MEMBER_FAILED event");
	cr_assert_eq(s.rc, -EDEADLK);
	/* Still served, and stopped by the array's close as ever. */
	r = cu_ask(fd, "{\"id\": 2, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	json_object_put(r);
	close(fd);
	env_down(&e);
}

/* An event callback that holds the endpoint's request until the test lets it go. */
struct slow_event {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool entered, release;
};

static void slow_event_fn(void *arg, const struct graid_event *ev)
{
	struct slow_event *s = arg;
	struct timespec until;

	(void)ev;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 15;
	pthread_mutex_lock(&s->lock);
	if (!s->entered) {
		s->entered = true;
		pthread_cond_broadcast(&s->cond);
		while (!s->release && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0)
			;
	}
	pthread_mutex_unlock(&s->lock);
}

static void *stop_main(void *arg)
{
	graid_array_control_stop(arg);
	return NULL;
}

Test(control, a_slow_request_holds_up_neither_another_arrays_close_nor_a_fork, .timeout = 120)
{
	struct slow_event s = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false };
	struct ctl_env e, other;
	uint64_t t0, took;
	int fd, status = -1;
	pthread_t stopper;
	pid_t pid;

	env_up(&e, NULL);
	env_up(&other, NULL);
	cr_assert_eq(graid_array_set_event_callback(e.a, slow_event_fn, &s), 0);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0);
	cu_send_all(fd, "{\"id\": 1, \"op\": \"fail\", \"role\": 1}\n", 35);
	pthread_mutex_lock(&s.lock);
	while (!s.entered)
		pthread_cond_wait(&s.cond, &s.lock);
	pthread_mutex_unlock(&s.lock);
	/* A stop of this array waits for its request; give it time to be in that wait. */
	cr_assert_eq(pthread_create(&stopper, NULL, stop_main, e.a), 0);
	usleep(300000);
	t0 = cu_now_ms();
	cr_assert_eq(graid_array_close(other.a), 0);
	other.a = NULL;
	took = cu_now_ms() - t0;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(20);
		graid_array_control_stop(e.a);
		_exit(0);
	}
	for (t0 = cu_now_ms(); cu_now_ms() - t0 < 10000 && waitpid(pid, &status, WNOHANG) != pid;)
		usleep(10000);
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	pthread_mutex_lock(&s.lock);
	s.release = true;
	pthread_cond_broadcast(&s.cond);
	pthread_mutex_unlock(&s.lock);
	pthread_join(stopper, NULL);
	cr_assert_lt(took, 5000, "another array's close waited %" PRIu64 " ms for this one's "
				 "request", took);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "a fork's child hung stopping its copy while the parent's stop waited");
	close(fd);
	env_down(&other);
	env_down(&e);
}

static atomic_uint accept_logs;

static void accept_log(void *arg, int level, const char *msg)
{
	(void)arg, (void)level;
	if (strstr(msg, "cannot accept"))
		atomic_fetch_add(&accept_logs, 1);
}

static uint64_t cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

Test(control, out_of_descriptors_the_endpoint_does_not_spin, .timeout = 120)
{
	struct rlimit old, low;
	struct json_object *r;
	struct ctl_env e;
	static int fds[4096];
	unsigned n = 0;
	uint64_t cpu;
	int fd;

	env_up(&e, NULL);
	graid_log_set(accept_log, NULL, GRAID_LOG_DEBUG);
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = old.rlim_cur < 1024 ? old.rlim_cur : 1024;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < sizeof(fds) / sizeof(fds[0]) && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
		n++;
	/* One free: the client's; the endpoint's accept then has none. */
	close(fds[--n]);
	fd = cu_connect(e.sock);
	usleep(200000);
	cpu = cpu_ms();
	usleep(1000000);
	cpu = cpu_ms() - cpu;
	while (n)
		close(fds[--n]);
	setrlimit(RLIMIT_NOFILE, &old);
	cr_assert_geq(fd, 0);
	cr_assert_lt(cpu, 300, "%" PRIu64 " ms of CPU in 1 s with a client it cannot accept", cpu);
	/* Once there are descriptors again, the client that waited is served. */
	r = cu_ask(fd, "{\"id\": 1, \"op\": \"hello\"}\n");
	cr_assert(ok_of(r));
	json_object_put(r);
	graid_log_set(NULL, NULL, 0);
	cr_assert_eq(atomic_load(&accept_logs), 1, "the accept failure was logged %u times",
		     atomic_load(&accept_logs));
	close(fd);
	env_down(&e);
}

Test(control, max_clients_past_the_cap_is_refused, .timeout = 120)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .max_clients = 1025 };
	struct ctl_env e;

	env_up(&e, NULL);
	o.run_dir = e.run;
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EINVAL);
	o.max_clients = 1024;
	cr_assert_eq(graid_array_control_start(e.a, &o), 0);
	o.struct_size = offsetof(struct graid_control_options, idle_timeout_ms);
	cr_assert_eq(graid_array_control_stop(e.a), 0);
	cr_assert_eq(graid_array_control_start(e.a, &o), -EINVAL);
	env_down(&e);
}

/* One kind's counters in a stats reply against graid_array_stats()'s. */
static void stats_kind_is(struct json_object *o, const char *kind, const struct graid_io_counts *c)
{
	struct json_object *k = cu_field(o, kind);

	cr_assert_eq(json_object_get_uint64(cu_field(k, "ops")), c->ops, "%s ops", kind);
	cr_assert_eq(json_object_get_uint64(cu_field(k, "bytes")), c->bytes, "%s bytes", kind);
	cr_assert_eq(json_object_get_uint64(cu_field(k, "errors")), c->errors, "%s errors", kind);
	cr_assert_eq(json_object_get_uint64(cu_field(k, "latency_ns_sum")), c->latency_ns_sum,
		     "%s latency", kind);
}

Test(control, stats_is_what_the_library_counts, .timeout = 120)
{
	struct graid_io_stats s = { .struct_size = sizeof(s) };
	struct json_object *r, *members, *read, *h;
	uint8_t *buf = aligned_alloc(4096, 8192);
	uint64_t sum = 0;
	struct ctl_env e;
	int fd;

	env_up(&e, NULL);
	heal_fill(e.a, 1 << 20, 1);
	fd = cu_connect(e.sock);
	cr_assert_geq(fd, 0, "connect: %s", strerror(-fd));
	r = cu_ask(fd, "{\"id\": 3, \"op\": \"stats\"}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	cr_assert_not(json_object_get_boolean(cu_field(r, "histograms")));
	cr_assert_eq(json_object_get_uint64(cu_field(r, "slow_ms")), GRAID_STATS_SLOW_MS_DEFAULT);
	/* Nothing ran on the array since the reply: the counters are the same. */
	cr_assert_eq(graid_array_stats(e.a, -1, &s), 0);
	cr_assert_gt(s.io[GRAID_IO_WRITE].bytes, 0, "the fill wrote");
	stats_kind_is(cu_field(r, "array"), "write", &s.io[GRAID_IO_WRITE]);
	stats_kind_is(cu_field(r, "array"), "read", &s.io[GRAID_IO_READ]);
	cr_assert_not(json_object_object_get_ex(cu_field(cu_field(r, "array"), "write"), "latency",
						NULL), "no buckets while histograms are off");
	members = cu_field(r, "members");
	cr_assert_eq(json_object_array_length(members), 5);
	for (int i = 0; i < 5; i++) {
		struct json_object *m = json_object_array_get_idx(members, (size_t)i);

		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		cr_assert_eq(graid_array_stats(e.a, i, &s), 0);
		cr_assert_eq(graid_array_member_info(e.a, (unsigned)i, &mi), 0);
		cr_assert_str_eq(json_object_get_string(cu_field(m, "path")), mi.path);
		cr_assert_eq(json_object_get_int(cu_field(m, "role")), i);
		cr_assert_not(json_object_get_boolean(cu_field(m, "spare")));
		stats_kind_is(m, "write", &s.io[GRAID_IO_WRITE]);
		stats_kind_is(m, "flush", &s.io[GRAID_IO_FLUSH]);
	}
	json_object_put(r);

	/* "histograms": true turns them on; a read after it lands in the buckets. */
	r = cu_ask(fd, "{\"id\": 4, \"op\": \"stats\", \"histograms\": true}\n");
	cr_assert(ok_of(r), "%s", json_object_to_json_string(r));
	cr_assert(json_object_get_boolean(cu_field(r, "histograms")));
	json_object_put(r);
	cr_assert_eq(graid_array_read(e.a, buf, 8192, 0), 8192);
	r = cu_ask(fd, "{\"id\": 5, \"op\": \"stats\"}\n");
	read = cu_field(cu_field(r, "array"), "read");
	h = cu_field(read, "latency");
	cr_assert_eq(json_object_array_length(h), GRAID_LATENCY_BUCKETS);
	for (unsigned b = 0; b < GRAID_LATENCY_BUCKETS; b++)
		sum += json_object_get_uint64(json_object_array_get_idx(h, b));
	cr_assert_eq(sum, 1, "the one read since they were turned on");
	/* Their latency sum is that read's alone, the library's number. */
	cr_assert_eq(graid_array_stats(e.a, -1, &s), 0);
	cr_assert_gt(s.io[GRAID_IO_READ].latency_hist_ns_sum, 0);
	cr_assert_eq(json_object_get_uint64(cu_field(read, "latency_hist_ns_sum")),
		     s.io[GRAID_IO_READ].latency_hist_ns_sum);
	json_object_put(r);

	r = cu_ask(fd, "{\"id\": 6, \"op\": \"stats\", \"histograms\": 1}\n");
	assert_error(r, EINVAL, "histograms");
	json_object_put(r);
	/* The status carries the same object. */
	r = cu_ask(fd, "{\"id\": 7, \"op\": \"status\"}\n");
	cr_assert(ok_of(r));
	cr_assert(json_object_get_boolean(cu_field(cu_field(r, "stats"), "histograms")));
	json_object_put(r);
	close(fd);
	free(buf);
	env_down(&e);
}
