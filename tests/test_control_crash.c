/* SPDX-License-Identifier: MIT */
/* A holder killed while the control endpoint serves a request leaves the array as any crash does. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <libgraid/graid.h>

#include "arrayutil.h"
#include "healutil.h"
#include "testutil.h"

#define CC_BLOCKS 512u         /* the writer's blocks: 2 MiB at the array's start */
#define CC_SB_STALL_US 3000000 /* each superblock write of the new spare: the request's length */

/* What the holder acknowledged, shared with the test across its death. */
struct cc_shared {
	_Atomic uint64_t acked[CC_BLOCKS]; /* generation of the last write of each block returned */
	_Atomic uint64_t writes;
};

/* Block @p i at generation @p gen: its number and generation, then bytes derived from both. */
static void cc_fill(uint8_t *b, uint64_t i, uint64_t gen)
{
	memcpy(b, &i, 8);
	memcpy(b + 8, &gen, 8);
	for (size_t k = 16; k < 4096; k++)
		b[k] = (uint8_t)(i * 31 + gen * 7 + k);
}

/* The generation a block read back holds, or 0 when it is not one cc_fill() wrote whole. */
static uint64_t cc_gen_of(const uint8_t *b, uint64_t i)
{
	uint8_t want[4096];
	uint64_t bi, gen;

	memcpy(&bi, b, 8);
	memcpy(&gen, b + 8, 8);
	if (bi != i || !gen)
		return 0;
	cc_fill(want, i, gen);
	return memcmp(want, b, 4096) ? 0 : gen;
}

struct cc_writer {
	struct graid_array *a;
	struct cc_shared *sh;
};

static void *cc_write_loop(void *arg)
{
	struct cc_writer *w = arg;
	static uint8_t buf[4096] __attribute__((aligned(4096)));

	for (uint64_t gen = 1;; gen++)
		for (uint64_t i = 0; i < CC_BLOCKS; i++) {
			cc_fill(buf, i, gen);
			if (graid_array_write(w->a, buf, 4096, i * 4096) != 4096)
				_exit(30);
			atomic_store(&w->sh->acked[i], gen);
			atomic_fetch_add(&w->sh->writes, 1);
		}
	return NULL;
}

/* The holder: open, serve the endpoint, write for ever; says "ready" on @p ready_fd. */
static void cc_holder(const char *const *paths, const char *run, struct cc_shared *sh,
		      int ready_fd)
{
	struct graid_control_options o = { .struct_size = sizeof(o), .run_dir = run };
	struct cc_writer w = { .sh = sh };
	pthread_t t;

	if (graid_array_open(paths, 5, NULL, &w.a))
		_exit(20);
	if (graid_array_control_start(w.a, &o))
		_exit(21);
	if (pthread_create(&t, NULL, cc_write_loop, &w))
		_exit(22);
	while (atomic_load(&sh->writes) < 2 * CC_BLOCKS)
		usleep(1000);
	if (write(ready_fd, "r", 1) != 1)
		_exit(23);
	for (;;)
		pause();
}

static int cc_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect %s: %s", path,
		     strerror(errno));
	return fd;
}

/*
 * RAID-6 of five, its holder writing without pause and serving the endpoint; a client asks
 * it to add a hot spare, and the holder is killed with SIGKILL while that request is being
 * served (no reply yet), its superblock round stalled on @p stall (5: the new spare's
 * superblock, before it is written; 0..4: that member's, after the members before it took
 * the new record and before the ones after it did). The next open must find the array as
 * after any crash: every write the holder acknowledged reads back whole; once any catch-up
 * the open started has run, a scrub finds nothing and every role is active; the spare is
 * either registered or not at all.
 */
static void cc_kill_mid_spare_add(unsigned stall)
{
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	struct graid_array_info info = { .struct_size = sizeof(info) };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	char run[300], sock[108], line[1024], spec[700];
	struct pollfd p;
	struct cc_shared *sh;
	struct graid_array *a;
	const char *paths[AU_MAX];
	struct au_set s;
	uint8_t *buf;
	char *spare, stalled[700];
	const char *hold[AU_MAX];
	int pipefd[2], fd, status;
	char c;
	pid_t pid;

	tu_need_fault_injection();
	au_make(&s, 5, HEAL_MEMBER_BYTES);
	cr_assert_eq(au_create(&s, 5, 6, 8192, &a), 0);
	snprintf(run, sizeof(run), "%s/run", s.dir);
	cr_assert_eq(graid_array_control_path(a, run, sock, sizeof(sock)), 0);
	cr_assert_eq(graid_array_close(a), 0);
	spare = heal_new_member(&s, "spare");
	memcpy(hold, s.paths, sizeof(hold));
	if (stall < 5) {
		snprintf(stalled, sizeof(stalled), "faulty:sb-stall-us=%d:%s", CC_SB_STALL_US,
			 s.path[stall]);
		hold[stall] = stalled;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(sh, MAP_FAILED);
	cr_assert_eq(pipe(pipefd), 0);

	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(pipefd[0]);
		cc_holder(hold, run, sh, pipefd[1]);
	}
	close(pipefd[1]);
	cr_assert_eq(read(pipefd[0], &c, 1), 1, "the holder did not get ready");
	close(pipefd[0]);

	fd = cc_connect(sock);
	if (stall == 5)
		snprintf(spec, sizeof(spec), "faulty:sb-stall-us=%d:%s", CC_SB_STALL_US, spare);
	else
		snprintf(spec, sizeof(spec), "%s", spare);
	snprintf(line, sizeof(line), "{\"id\": 1, \"op\": \"spare-add\", \"path\": \"%s\"}\n",
		 spec);
	cr_assert_eq(send(fd, line, strlen(line), MSG_NOSIGNAL), (ssize_t)strlen(line));
	/* Half a second in, the request is still being served: no reply has come. */
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 500), 0, "the request ended before the kill: nothing tested");
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFSIGNALED(status), "the holder ended on its own (status %d)", status);
	close(fd);
	au_wait_unlocked(s.paths, 5);

	/* The spare offered with the members: taken as a spare if it was registered. */
	memcpy(paths, s.paths, sizeof(paths));
	paths[5] = spare;
	cr_assert_eq(graid_array_open(paths, 6, NULL, &a), 0);
	cr_assert_eq(posix_memalign((void **)&buf, 4096, 4096), 0);
	for (uint64_t i = 0; i < CC_BLOCKS; i++) {
		uint64_t want = atomic_load(&sh->acked[i]), got;

		cr_assert_eq(graid_array_read(a, buf, 4096, i * 4096), 4096);
		got = cc_gen_of(buf, i);
		cr_assert(got >= want && got,
			  "block %" PRIu64 ": acknowledged at generation %" PRIu64 ", reads %s %" PRIu64,
			  i, want, got ? "generation" : "torn or foreign data, generation field",
			  got);
	}
	free(buf);
	cr_assert_eq(graid_array_rebuild(a, NULL, NULL), 0);
	cr_assert_eq(graid_array_scrub(a, 0, &rep), 0);
	cr_assert_eq(rep.mismatches, 0, "%" PRIu64 " stripes inconsistent after the crash",
		     rep.mismatches);
	cr_assert_eq(graid_array_info(a, &info), 0);
	for (unsigned r = 0; r < info.nmembers; r++)
		cr_assert_eq(info.member_state[r], GRAID_MEMBER_ACTIVE, "role %u", r);
	/* The spare: registered whole (its superblock and the others' agree) or not at all. */
	if (graid_array_member_info(a, info.nmembers, &mi) == 0) {
		cr_assert_eq(mi.state, GRAID_MEMBER_SPARE);
		cr_assert(strstr(mi.path, "spare"), "listed: %s", mi.path);
	}
	cr_assert_eq(graid_array_close(a), 0);
	munmap(sh, sizeof(*sh));
	au_remove(&s);
}

Test(control_crash, killed_before_the_new_spares_superblock, .timeout = 180)
{
	cc_kill_mid_spare_add(5);
}

Test(control_crash, killed_with_the_round_half_written, .timeout = 180)
{
	cc_kill_mid_spare_add(3);
}
