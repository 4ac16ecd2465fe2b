/* SPDX-License-Identifier: MIT */
/* graidctl grow: add members to an array online (a reshape), served or opened here. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

#define GROW_MAX 16          /* devices in one grow: a handle has room for 16 roles more */
#define GROW_POLL_S 0.5      /* between looks at the holder's status */

void gctl_help_grow(FILE *f)
{
	gctl_print_cmd_usage(f, "grow");
	fprintf(f,
		"\nAssemble the array from MEMBER... and add each DEV (--add, once per device) as a\n"
		"new member, moving the data over all members while the array stays in use (a\n"
		"reshape, docs/RESHAPE.md). RAID-0, 5, 6 and 10 can be grown by this libgraid. Each\n"
		"DEV must be at least as large as the members and belong to no array; nothing is\n"
		"written to any device before every DEV passed. The array keeps its size until\n"
		"every byte has moved, then has the new one. A stop (a crash, a close, Ctrl-C of\n"
		"an unserved grow) is safe at any point: the next writable open of all the\n"
		"members, the new ones included, goes on from where it was.\n\n"
		"On a served array the holder does it (its control endpoint), in the background:\n"
		"graidctl follows its progress; Ctrl-C leaves it running there. Otherwise graidctl\n"
		"holds the array until the move has finished, with a progress report.\n\n"
		"  -a, --add DEV         a device to add (repeat for more)\n"
		"  -l, --level 6         turn a RAID-5 into a RAID-6 instead: the one DEV added\n"
		"                        holds Q in every stripe (Q-last), no data moves, the\n"
		"                        size stays; the superblocks say RAID-6 from the start\n"
		"  -m, --max-rate SIZE   move at most SIZE bytes a second per member written (the\n"
		"                        rebuild's rate limit)\n"
		"  -n, --no-wait         return once the reshape has started; unserved, graidctl\n"
		"                        then closes the array and the next writable open (an\n"
		"                        assemble, a server) goes on with the move\n\n"
		"Exit status: 0; 1 failed; 2 usage error; 4 the array cannot be assembled;\n"
		"5 not available in this libgraid (or the holder's).\n");
}

/* Why a grow was refused, in the words of graid_array_grow()'s errors. */
static void grow_refused(int rc)
{
	const char *why = "";

	if (rc == -EOPNOTSUPP)
		why = " (this libgraid grows RAID-0, 5, 6 and 10 and turns a RAID-5 into a RAID-6, "
		      "not RAID-1, nor a RAID-10 or a conversion with checksums; the log says "
		      "why)";
	else if (rc == -EEXIST)
		why = " (a device is a member of this array, or given twice)";
	else if (rc == -EINVAL)
		why = " (a device is smaller than the members' data area, or not usable; "
		      "--level 6 takes one device)";
	else if (rc == -EBUSY)
		why = " (a reshape runs already, or a device is in use)";
	else if (rc == -E2BIG)
		why = " (more devices than this open has room for: at most 16 more roles)";
	else if (rc == -EIO)
		why = " (every member must be active)";
	gctl_err("grow: %s%s", graid_strerror(rc), why);
}

/* Follows graid_array_info's reshape fields while graid_array_grow() waits. */
struct grow_follow {
	struct graid_array *a;
	volatile int stop;
	struct gctl_progress p;
};

static void *grow_follow_thread(void *arg)
{
	struct grow_follow *f = arg;

	while (!f->stop) {
		struct graid_array_info in = { .struct_size = sizeof(in) };

		if (graid_array_info(f->a, &in) == 0 && in.reshaping && in.reshape_total)
			gctl_progress_update(&f->p, in.reshape_done, in.reshape_total);
		usleep(200000);
	}
	return NULL;
}

/* The grow on an array this process opened. */
static int grow_here(struct graid_array *a, const char *const *devs, unsigned n, bool wait,
		     unsigned level)
{
	struct graid_array_info in = { .struct_size = sizeof(in) };
	struct grow_follow f = { .a = a };
	pthread_t t;
	int rc, started = 0;

	unsigned before;

	graid_array_info(a, &in);
	before = in.nmembers;
	if (wait) {
		gctl_progress_init(&f.p, "grow");
		started = pthread_create(&t, NULL, grow_follow_thread, &f) == 0;
	}
	rc = graid_array_grow(a, devs, n,
			      (wait ? GRAID_GROW_WAIT : 0) | (level == 6 ? GRAID_GROW_RAID6 : 0));
	f.stop = 1;
	if (started)
		pthread_join(t, NULL);
	if (wait && f.p.started)
		gctl_progress_finish(&f.p, rc == 0);
	graid_array_info(a, &in);
	if (rc && in.reshaping && in.nmembers > before) {
		/* This call's devices joined, then the move stopped (GRAID_GROW_WAIT). */
		gctl_err("grow: the move stopped at %llu of %llu bytes: %s; the log says why, and "
			 "the next writable open of all the members (the new ones too) goes on "
			 "from there", (unsigned long long)in.reshape_done,
			 (unsigned long long)in.reshape_total, graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	if (rc) {
		grow_refused(rc);
		return GCTL_EXIT_FAILED;
	}
	if (wait && level == 6)
		printf("converted: RAID-%d, %u members, %llu bytes\n", in.level, in.nmembers,
		       (unsigned long long)in.size);
	else if (wait)
		printf("grown: %u members, %llu bytes\n", in.nmembers, (unsigned long long)in.size);
	else
		printf("growing to %u members; graidctl closes the array now and its next writable "
		       "open goes on with the move\n", in.nmembers);
	return GCTL_EXIT_OK;
}

/* A device path as the holder must see it (its cwd is not ours): made absolute. */
static const char *grow_abs(const char *path, char *buf, size_t size)
{
	if (graid_member_is_spec(path) || path[0] == '/' || !realpath(path, buf) ||
	    strlen(buf) >= size)
		return path;
	return buf;
}

/* The holder's status, *@p rs its reshape object; NULL (said) with *@p ex. */
static struct json_object *grow_status(struct gctl_ctl *c, struct json_object **rs, int *ex)
{
	struct json_object *req = json_object_new_object(), *st;
	char why[256];
	int rc;

	json_object_object_add(req, "op", json_object_new_string("status"));
	rc = gctl_ctl_call(c, req, &st, why, sizeof(why));
	json_object_put(req);
	if (rc) {
		/* Ctrl-C during the call: the caller detaches. */
		if (rc != -EINTR)
			gctl_err("grow: the holder's status: %s", why);
		*ex = rc == -EINTR ? GCTL_EXIT_OK : GCTL_EXIT_FAILED;
		return NULL;
	}
	if (!json_object_object_get_ex(st, "reshape", rs) ||
	    !json_object_is_type(*rs, json_type_object)) {
		json_object_put(st);
		gctl_err("grow: the holder's status says nothing of a reshape");
		*ex = GCTL_EXIT_UNSUPPORTED;
		return NULL;
	}
	return st;
}

/* The bar's line ended and where the move goes on said (Ctrl-C while following). */
static void grow_detach(struct gctl_progress *p, const struct gctl_ctl *c)
{
	if (p->printed)
		putchar('\n');
	printf("detached: the grow goes on in the holder (pid %u); 'graidctl status' shows it\n",
	       c->holder_pid);
}

/* Follow the holder's reshape until it is done or stops; Ctrl-C detaches. */
static int grow_follow_served(struct gctl_ctl *c)
{
	struct gctl_progress p;
	int ex = GCTL_EXIT_OK;

	gctl_progress_init(&p, "grow");
	gctl_ctl_interrupted = 0;
	gctl_ctl_catch_sigint(1);
	for (;;) {
		struct json_object *rs, *st = grow_status(c, &rs, &ex);
		int err;

		if (!st) {
			if (gctl_ctl_interrupted && ex == GCTL_EXIT_OK)
				grow_detach(&p, c);
			break;
		}
		if (!gctl_ctl_bool(rs, "reshaping")) {
			gctl_progress_finish(&p, 1);
			printf("grown: %llu members, %llu bytes\n",
			       (unsigned long long)gctl_ctl_u64(st, "nmembers"),
			       (unsigned long long)gctl_ctl_u64(st, "size"));
			json_object_put(st);
			break;
		}
		if (gctl_ctl_u64(rs, "total_bytes"))
			gctl_progress_update(&p, gctl_ctl_u64(rs, "done_bytes"),
					     gctl_ctl_u64(rs, "total_bytes"));
		err = (int)gctl_ctl_u64(rs, "errno");
		if (!gctl_ctl_bool(rs, "running") && err) {
			json_object_put(st);
			gctl_progress_finish(&p, 0);
			gctl_err("grow: the holder (pid %u) stopped the reshape: %s; the holder's log "
				 "says why, its next writable open resumes it", c->holder_pid,
				 graid_strerror(-err));
			ex = GCTL_EXIT_FAILED;
			break;
		}
		json_object_put(st);
		if (gctl_ctl_sleep(GROW_POLL_S)) {
			grow_detach(&p, c);
			break;
		}
	}
	gctl_ctl_catch_sigint(0);
	fflush(stdout);
	return ex;
}

/*
 * The grow op sent to the holder, with the rate limit of --max-rate (@p rate, 0 none: the
 * holder sets it for the move, and puts its own back if the grow is refused), then
 * followed (or not, with --no-wait).
 */
static int grow_served(struct gctl_ctl *c, const char *const *devs, unsigned n, bool wait,
		       uint64_t rate, unsigned level)
{
	struct json_object *req = json_object_new_object(), *list = json_object_new_array(), *r;
	char abs[GROW_MAX][PATH_MAX], why[256];
	int rc;

	json_object_object_add(req, "op", json_object_new_string("grow"));
	for (unsigned i = 0; i < n; i++)
		json_object_array_add(list, json_object_new_string(grow_abs(devs[i], abs[i],
									  sizeof(abs[i]))));
	json_object_object_add(req, "paths", list);
	if (rate)
		json_object_object_add(req, "bytes_per_s", json_object_new_uint64(rate));
	if (level)
		json_object_object_add(req, "level", json_object_new_uint64(level));
	rc = gctl_ctl_call(c, req, &r, why, sizeof(why));
	json_object_put(req);
	if (rc) {
		if (c->broken) {
			gctl_err("grow: the holder's control endpoint %s: %s", c->path, why);
			return GCTL_EXIT_FAILED;
		}
		if (gctl_ctl_unknown_op(rc, why)) {
			gctl_err("grow: the holder, %s, runs libgraid %s, which has no 'grow' "
				 "operation: update its libgraid and restart it, or stop it and run "
				 "this command on the members", c->holder,
				 c->version[0] ? c->version : "(unknown)");
			return GCTL_EXIT_UNSUPPORTED;
		}
		grow_refused(rc);
		return GCTL_EXIT_FAILED;
	}
	printf("growing to %llu members in the holder (pid %u)\n",
	       (unsigned long long)gctl_ctl_u64(r, "nmembers"), c->holder_pid);
	fflush(stdout);
	json_object_put(r);
	return wait ? grow_follow_served(c) : GCTL_EXIT_OK;
}

int gctl_cmd_grow(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "add", required_argument, NULL, 'a' },
		{ "level", required_argument, NULL, 'l' },
		{ "max-rate", required_argument, NULL, 'm' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *devs[GROW_MAX];
	struct graid_array *a;
	struct gctl_ctl ctl;
	unsigned ndev = 0, level = 0;
	uint64_t rate = 0;
	bool wait = true;
	int c, ex;

	while ((c = getopt_long(argc, argv, "a:l:m:n", opts, NULL)) != -1) {
		if (c == 'a') {
			if (ndev == GROW_MAX)
				return gctl_usage_err("grow", "at most %d devices at once", GROW_MAX);
			devs[ndev++] = optarg;
		} else if (c == 'l') {
			if (strcmp(optarg, "6") != 0)
				return gctl_usage_err("grow", "--level takes 6 (a RAID-5 becoming "
							      "a RAID-6), not '%s'", optarg);
			level = 6;
		} else if (c == 'm') {
			if (gctl_parse_rate("grow", optarg, &rate))
				return GCTL_EXIT_USAGE;
		} else if (c == 'n') {
			wait = false;
		} else {
			fprintf(stderr, "Try 'graidctl grow --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (!ndev)
		return gctl_usage_err("grow", "no device to add (--add DEV)");
	if (argc - optind < 1)
		return gctl_usage_err("grow", "no members given");
	if (level && ndev != 1)
		return gctl_usage_err("grow", "--level 6 adds exactly one device (Q's)");
	ex = gctl_open_served("grow", argv + optind, argc - optind, -1, NULL, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = grow_served(&ctl, devs, ndev, wait, rate, level);
		gctl_ctl_close(&ctl);
		return ex;
	}
	if (rate) {
		struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
						    .max_bytes_per_sec = rate };
		int rc = graid_array_set_rebuild_options(a, &ro);

		if (rc) {
			gctl_err("grow: rate limit: %s", graid_strerror(rc));
			gctl_close("grow", a);
			return GCTL_EXIT_FAILED;
		}
	}
	ex = grow_here(a, devs, ndev, wait, level);
	if (gctl_close("grow", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}
