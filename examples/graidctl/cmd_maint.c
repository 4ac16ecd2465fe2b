/* SPDX-License-Identifier: MIT */
/* graidctl replace, rebuild, scrub and spare: the maintenance of a degraded or ageing array. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libgraid/graid.h>

#include "gctl.h"
#include "gctl_ctl.h"

void gctl_help_replace(FILE *f)
{
	gctl_print_cmd_usage(f, "replace");
	fprintf(f,
		"\nAssemble the array from MEMBER..., put NEWPATH (a file or block device at least\n"
		"as large as the others) in role IDX, which must be failed, missing or\n"
		"unreachable, then rebuild it whole with a progress report. Role IDX need not be\n"
		"among MEMBER... (no --degraded needed for it). NEWPATH may be the role's own\n"
		"device (a member that failed, or shrank and grew back); a member of this array\n"
		"in another role is refused, naming the role. Give NEWPATH with the members\n"
		"afterwards.\n\n"
		"A sector a survivor cannot read costs that block, not the rebuild: it is rebuilt\n"
		"from the others where redundancy is left, and recorded bad where none is.\n\n"
		"On a served array the holder does it (its control endpoint), rebuilding in\n"
		"the background: graidctl follows its progress; Ctrl-C leaves it running there.\n\n"
		"  -n, --no-rebuild      only put NEWPATH in place; `graidctl rebuild` fills it\n"
		"  -m, --max-rate SIZE   rebuild at most SIZE bytes a second per member\n"
		"  -k, --keep-in-service replace role IDX while it is active, without losing\n"
		"                        redundancy (md's --replace): its member keeps serving it\n"
		"                        while NEWPATH (or, given as 'spare', the array's hot spare)\n"
		"                        takes a copy of it and every write, then takes the role;\n"
		"                        the old member is let go at the array's close\n\n"
		"Exit status: 0; 3 done, but blocks with no redundancy left are recorded bad\n"
		"(`graidctl status` lists them; reads of them fail); 1 failed; 2 usage error;\n"
		"4 the array cannot be assembled; 5 not available in this libgraid.\n");
}

void gctl_help_rebuild(FILE *f)
{
	gctl_print_cmd_usage(f, "rebuild");
	fprintf(f,
		"\nAssemble the array from MEMBER... and rebuild every replaced (rebuilding) member\n"
		"from the others, resuming from the last checkpoint if an earlier rebuild stopped.\n"
		"On a terminal a progress bar shows rate and ETA; otherwise a line a second.\n"
		"A sector a survivor cannot read costs that block, not the rebuild: it is rebuilt\n"
		"from the others where redundancy is left, and recorded bad where none is.\n"
		"On a served array the holder rebuilds (its control endpoint), in the background:\n"
		"graidctl follows its progress; Ctrl-C leaves it running there.\n\n"
		"  -m, --max-rate SIZE   rebuild at most SIZE bytes a second per member\n\n"
		"Exit status: 0; 3 done, but blocks with no redundancy left are recorded bad\n"
		"(`graidctl status` lists them; reads of them fail); 1 failed; 2 usage error;\n"
		"4 the array cannot be assembled; 5 not available in this libgraid.\n");
}

void gctl_help_scrub(FILE *f)
{
	gctl_print_cmd_usage(f, "scrub");
	fprintf(f,
		"\nAssemble the array from MEMBER... and check every stripe's parity against its\n"
		"data (RAID-5/6), or the copies (RAID-1/10). On RAID-6 a stripe with one silently\n"
		"wrong block names that member. A degraded RAID-1/5/6 has nothing to compare: the\n"
		"scrub is refused (rebuild first); on RAID-10 stripes with a member out are skipped.\n"
		"Progress shows as a bar with ETA on a terminal, a line a second otherwise. A scrub\n"
		"records how far it got about once a second; the next one resumes from there.\n"
		"A block a member cannot read (a latent bad sector) is rebuilt from the others and\n"
		"written back, with or without --repair; the member stays.\n"
		"On a served array the scrub runs in the holder (its control endpoint): graidctl\n"
		"follows it and prints its report; Ctrl-C leaves it running there.\n\n"
		"  -r, --repair   rewrite what is wrong: the named block on RAID-6, parity on\n"
		"                 RAID-5, the first copy over the others on RAID-1/10\n"
		"  -s, --restart  start from the first row, not where an earlier scrub stopped\n"
		"      --stop     stop the scrub running in the array's holder, where it can be\n"
		"                 resumed (a graidctl scrub of an unserved array stops at Ctrl-C)\n\n"
		"Exit status: 0 no mismatch left; 3 mismatches found and not repaired, stripes\n"
		"skipped, or blocks recorded bad (no redundancy left for them); 1 failed (or\n"
		"refused on a degraded array); 2 usage error; 4 the array cannot be assembled;\n"
		"5 not available in this libgraid.\n");
}

void gctl_help_spare(FILE *f)
{
	gctl_print_cmd_usage(f, "spare");
	fprintf(f,
		"\nadd: assemble the array from MEMBER... and add PATH as a hot spare: it takes the\n"
		"place of the next member that fails. Give it with the members in later commands.\n"
		"A member of this array is refused, naming its role.\n"
		"remove: take the hot spare PATH off the array's spares (not given with MEMBER...).\n"
		"A spare that took a role is a member: fail and replace it instead.\n"
		"On a served array the holder does either (its control endpoint).\n\n"
		"Exit status: 0; 1 failed; 2 usage error; 4 the array cannot be assembled;\n"
		"5 not available in this libgraid.\n");
}

#ifdef GRAID_SCRUB_REPAIR

/* The rebuild of every role that needs one, with the progress shown as it goes. */
int gctl_rebuild(const char *cmd, struct graid_array *a, uint64_t max_rate)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = max_rate };
	struct gctl_progress p;
	int rc;

	if (max_rate) {
		rc = graid_array_set_rebuild_options(a, &ro);
		if (rc) {
			gctl_err("%s: rate limit: %s", cmd, graid_strerror(rc));
			return GCTL_EXIT_FAILED;
		}
	}
	gctl_progress_init(&p, "rebuild");
	rc = graid_array_rebuild(a, gctl_progress_update, &p);
	gctl_progress_finish(&p, rc == 0);
	if (rc) {
		gctl_err("%s: rebuild: %s%s", cmd, graid_strerror(rc), gctl_level_reason(rc));
		return GCTL_EXIT_FAILED;
	}
	return gctl_report_bad_blocks(cmd, a);
}

int gctl_report_bad_blocks(const char *cmd, struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	uint64_t blocks = 0;

	if (graid_array_info(a, &info))
		return GCTL_EXIT_OK;
	for (unsigned r = 0; r < info.nmembers; r++) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		if (graid_array_member_info(a, r, &mi) == 0)
			blocks += mi.bad_blocks;
	}
	return gctl_report_bad_block_count(cmd, blocks);
}

int gctl_report_bad_block_count(const char *cmd, uint64_t blocks)
{
	if (!blocks)
		return GCTL_EXIT_OK;
	gctl_err("%s: %llu block%s of 4 KiB hold nothing valid (no redundancy was left for "
		 "them: lost on a rebuilt member, or unreadable): reads of them fail with EIO "
		 "until written; 'graidctl status' lists where", cmd, (unsigned long long)blocks,
		 blocks == 1 ? "" : "s");
	return GCTL_EXIT_DEGRADED;
}

/* Plain commands take no options; this rejects any, and --help was handled by main. */
static int maint_no_options(const char *cmd, int argc, char **argv)
{
	if (getopt(argc, argv, "") != -1) {
		fprintf(stderr, "Try 'graidctl %s --help'.\n", cmd);
		return GCTL_EXIT_USAGE;
	}
	return GCTL_EXIT_OK;
}

int gctl_parse_rate(const char *cmd, const char *s, uint64_t *rate)
{
	if (gctl_size_parse(s, rate) || *rate == 0)
		return gctl_usage_err(cmd, "bad --max-rate '%s' (bytes a second, K/M/G)", s);
	return GCTL_EXIT_OK;
}

/* Follows a replace in service of role @p idx (graidctl replace -k) until it ends. */
struct keep_follow {
	struct graid_array *a;
	unsigned idx;
	volatile int stop;
	struct gctl_progress p;
};

static void *keep_follow_thread(void *arg)
{
	struct keep_follow *f = arg;

	while (!f->stop) {
		struct graid_member_info mi = { .struct_size = sizeof(mi) };

		if (graid_array_member_info(f->a, f->idx, &mi) == 0 && mi.replacing &&
		    mi.replace_total)
			gctl_progress_update(&f->p, mi.replace_done, mi.replace_total);
		usleep(200000);
	}
	return NULL;
}

/* graidctl replace --keep-in-service on an array this process opened. */
static int replace_keep(struct graid_array *a, unsigned idx, const char *newpath, uint64_t rate)
{
	struct graid_rebuild_options ro = { .struct_size = sizeof(ro),
					    .max_bytes_per_sec = rate };
	struct graid_member_info mi = { .struct_size = sizeof(mi) };
	struct keep_follow f = { .a = a, .idx = idx };
	const char *path = strcmp(newpath, "spare") ? newpath : NULL;
	pthread_t t;
	int rc, started;

	if (rate && (rc = graid_array_set_rebuild_options(a, &ro))) {
		gctl_err("replace: rate limit: %s", graid_strerror(rc));
		return GCTL_EXIT_FAILED;
	}
	gctl_progress_init(&f.p, "replace");
	started = pthread_create(&t, NULL, keep_follow_thread, &f) == 0;
	rc = graid_array_replace_start(a, idx, path, GRAID_REPLACE_WAIT);
	f.stop = 1;
	if (started)
		pthread_join(t, NULL);
	gctl_progress_finish(&f.p, rc == 0);
	if (rc == -EBUSY) {
		gctl_err("replace: member %u is not active; a failed or missing role is replaced "
			 "without --keep-in-service", idx);
		return GCTL_EXIT_FAILED;
	}
	if (rc) {
		gctl_err("replace: member %u with %s, in service: %s%s", idx, newpath,
			 graid_strerror(rc), rc == -ENOENT && !path ? " (the array has no hot spare)"
								   : gctl_level_reason(rc));
		return GCTL_EXIT_FAILED;
	}
	if (graid_array_member_info(a, idx, &mi) == 0 && mi.state == GRAID_MEMBER_REBUILDING) {
		/* Its member failed during the copy: the new device is rebuilt into the role. */
		printf("member %u failed during the copy: %s takes the role, rebuilding\n", idx,
		       mi.path);
		return gctl_rebuild("replace", a, rate);
	}
	printf("%s is member %u; the old member is let go\n", mi.path, idx);
	return gctl_report_bad_blocks("replace", a);
}

int gctl_cmd_replace(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "no-rebuild", no_argument, NULL, 'n' },
		{ "max-rate", required_argument, NULL, 'm' },
		{ "keep-in-service", no_argument, NULL, 'k' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_array_info info = { .struct_size = sizeof(info) };
	bool keep = false;
	struct graid_array *a;
	struct gctl_ctl ctl;
	bool rebuild = true;
	uint64_t rate = 0;
	const char *newpath;
	unsigned idx;
	int c, rc, ex;

	while ((c = getopt_long(argc, argv, "nm:k", opts, NULL)) != -1) {
		if (c == 'k') {
			keep = true;
		} else if (c == 'n') {
			rebuild = false;
		} else if (c == 'm') {
			if (gctl_parse_rate("replace", optarg, &rate))
				return GCTL_EXIT_USAGE;
		} else {
			fprintf(stderr, "Try 'graidctl replace --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (argc - optind < 3)
		return gctl_usage_err("replace", "need IDX, NEWPATH and the array's members");
	if (gctl_parse_index(argv[optind], &idx))
		return gctl_usage_err("replace", "bad member index '%s'", argv[optind]);
	newpath = argv[optind + 1];
	/*
	 * The role being replaced is out by definition: it never needs --degraded. Kept in
	 * service, it is in, and is opened as any member.
	 */
	ex = gctl_open_served("replace", argv + optind + 2, argc - optind - 2,
			      keep ? -1 : (int)idx, keep ? NULL : newpath, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a && keep) {
		ex = gctl_served_replace_keep(&ctl, idx, newpath, rate);
		gctl_ctl_close(&ctl);
		return ex;
	}
	if (!a) {
		ex = gctl_served_replace(&ctl, idx, newpath, rebuild, rate);
		gctl_ctl_close(&ctl);
		return ex;
	}
	if (graid_array_info(a, &info) == 0 && idx >= info.nmembers) {
		gctl_err("replace: member index %u is out of range: the array has roles 0..%u",
			 idx, info.nmembers - 1);
		gctl_close("replace", a);
		return GCTL_EXIT_USAGE;
	}
	if (keep) {
		ex = replace_keep(a, idx, newpath, rate);
		if (gctl_close("replace", a) != GCTL_EXIT_OK)
			return GCTL_EXIT_FAILED;
		return ex;
	}
	rc = graid_array_replace_member(a, idx, newpath);
	if (rc == -EBUSY) {
		gctl_err("replace: member %u with %s: role %u is %s; only a failed or missing role "
			 "can be replaced (graidctl fail %u first)", idx, newpath, idx,
			 gctl_state_name(info.member_state[idx]), idx);
		gctl_close("replace", a);
		return GCTL_EXIT_FAILED;
	}
	if (rc == -EEXIST) {
		gctl_err("replace: member %u with %s: refused: %s is a member of this array (the "
			 "line above names its role), not a new device; it was not written", idx,
			 newpath, newpath);
		gctl_close("replace", a);
		return GCTL_EXIT_FAILED;
	}
	if (rc) {
		gctl_err("replace: member %u with %s: %s%s", idx, newpath, graid_strerror(rc),
			 gctl_level_reason(rc));
		gctl_close("replace", a);
		return GCTL_EXIT_FAILED;
	}
	printf("%s is member %u%s\n", newpath, idx, rebuild ? ", rebuilding" : "");
	ex = rebuild ? gctl_rebuild("replace", a, rate) : GCTL_EXIT_OK;
	if (gctl_close("replace", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}

int gctl_cmd_rebuild(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "max-rate", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_array *a;
	struct gctl_ctl ctl;
	uint64_t rate = 0;
	int c, ex;

	while ((c = getopt_long(argc, argv, "m:", opts, NULL)) != -1) {
		if (c != 'm') {
			fprintf(stderr, "Try 'graidctl rebuild --help'.\n");
			return GCTL_EXIT_USAGE;
		}
		if (gctl_parse_rate("rebuild", optarg, &rate))
			return GCTL_EXIT_USAGE;
	}
	if (argc - optind < 1)
		return gctl_usage_err("rebuild", "no members given");
	ex = gctl_open_served("rebuild", argv + optind, argc - optind, -1, NULL, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = gctl_served_rebuild(&ctl, "rebuild", rate);
		gctl_ctl_close(&ctl);
		return ex;
	}
	ex = gctl_rebuild("rebuild", a, rate);
	if (gctl_close("rebuild", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}

void gctl_scrub_degraded(void)
{
	gctl_err("scrub: the array is degraded: no stripe has every member to compare, so "
		 "nothing can be checked; rebuild it first");
}

void gctl_scrub_print(const struct graid_scrub_report *rep, int repair, double secs)
{
	if (rep->first_row)
		printf("resumed at member row %llu, where an earlier scrub stopped (--restart "
		       "checks from row 0)\n", (unsigned long long)rep->first_row);
	printf("scrub %s in %.1f s: %llu stripes checked, %llu skipped, %llu mismatches, "
	       "%llu repaired\n", repair ? "with repair" : "(check only)", secs,
	       (unsigned long long)rep->stripes_checked, (unsigned long long)rep->skipped,
	       (unsigned long long)rep->mismatches, (unsigned long long)rep->repaired);
	if (rep->rewritten)
		printf("  %llu block%s of 4 KiB a member could not read (or read wrong: a "
		       "checksum) rebuilt from the others and written back (the member stays)\n",
		       (unsigned long long)rep->rewritten, rep->rewritten == 1 ? "" : "s");
	if (rep->skipped)
		printf("  %llu stripes could not be checked: a member they use is out, or a block "
		       "in them has no redundancy left\n", (unsigned long long)rep->skipped);
	for (unsigned i = 0; i < rep->named && i < GRAID_SCRUB_NAMED; i++) {
		if (rep->member[i] >= 0)
			printf("  stripe %llu: member %d wrong\n",
			       (unsigned long long)rep->stripe[i], rep->member[i]);
		else
			printf("  stripe %llu: inconsistent (no single member to blame)\n",
			       (unsigned long long)rep->stripe[i]);
	}
	if (rep->named < rep->mismatches)
		printf("  (%llu more; the library's log names each)\n",
		       (unsigned long long)(rep->mismatches - rep->named));
}

int gctl_scrub_exit(const struct graid_scrub_report *rep)
{
	return rep->mismatches > rep->repaired || rep->skipped ? GCTL_EXIT_DEGRADED : GCTL_EXIT_OK;
}

/*
 * scrub --stop: a scrub runs in the process that holds the array, so only a holder with an
 * endpoint can be asked to stop one; a graidctl scrub is stopped where it runs (Ctrl-C).
 */
static int scrub_stop(char **members, int n)
{
	struct gctl_look l;
	struct gctl_ctl ctl;
	char why[256];
	int rc, ex;

	rc = gctl_look_open(members, n, &l);
	if (rc) {
		gctl_err("scrub: cannot look at the array: %s", graid_strerror(rc));
		return rc == -EIO ? GCTL_EXIT_BROKEN : GCTL_EXIT_FAILED;
	}
	if (!l.info.holder_pid) {
		gctl_err("scrub: no scrub is running on this array: no process holds it (a scrub "
			 "of an array nobody serves runs in the graidctl that started it, holding "
			 "the array, and is stopped there with Ctrl-C)");
		gctl_look_free(&l);
		return GCTL_EXIT_FAILED;
	}
	gctl_ctl_init(&ctl);
	rc = l.ctl_path[0] ? gctl_ctl_connect(&ctl, l.ctl_path, why, sizeof(why)) : -ENOENT;
	if (rc) {
		if (rc == -ENOENT || rc == -ECONNREFUSED)
			gctl_err("scrub: %s holds the array and serves no control endpoint (nothing "
				 "listens at %s): if it is a graidctl scrub, stop it there with Ctrl-C "
				 "(kill -INT %u)", l.info.holder, l.ctl_path, l.info.holder_pid);
		else
			gctl_err("scrub: %s holds the array, and its control endpoint %s cannot be "
				 "used: %s", l.info.holder, l.ctl_path, why);
		gctl_look_free(&l);
		return rc == -EPROTO ? GCTL_EXIT_UNSUPPORTED : GCTL_EXIT_FAILED;
	}
	ctl.holder_pid = l.info.holder_pid;
	snprintf(ctl.holder, sizeof(ctl.holder), "%s", l.info.holder);
	gctl_look_free(&l);
	ex = gctl_served_scrub_stop(&ctl);
	gctl_ctl_close(&ctl);
	return ex;
}

int gctl_cmd_scrub(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "repair", no_argument, NULL, 'r' },
		{ "restart", no_argument, NULL, 's' },
		{ "stop", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_scrub_report rep = { .struct_size = sizeof(rep) };
	unsigned flags = GRAID_SCRUB_RESUME;
	struct gctl_progress p;
	struct graid_array *a;
	struct gctl_ctl ctl;
	bool stop = false;
	double t0;
	int c, rc, ex;

	while ((c = getopt_long(argc, argv, "rs", opts, NULL)) != -1) {
		if (c == 'r') {
			flags |= GRAID_SCRUB_REPAIR;
		} else if (c == 's') {
			flags &= ~GRAID_SCRUB_RESUME;
		} else if (c == 'S') {
			stop = true;
		} else {
			fprintf(stderr, "Try 'graidctl scrub --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (argc - optind < 1)
		return gctl_usage_err("scrub", "no members given");
	if (stop && (flags & GRAID_SCRUB_REPAIR || !(flags & GRAID_SCRUB_RESUME)))
		return gctl_usage_err("scrub", "--stop takes no --repair or --restart");
	if (stop)
		return scrub_stop(argv + optind, argc - optind);
	ex = gctl_open_served("scrub", argv + optind, argc - optind, -1, NULL, &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = gctl_served_scrub(&ctl, !!(flags & GRAID_SCRUB_REPAIR),
				       !!(flags & GRAID_SCRUB_RESUME));
		gctl_ctl_close(&ctl);
		return ex;
	}
	t0 = gctl_now();
	gctl_progress_init(&p, "scrub");
	rep.progress = gctl_progress_update;
	rep.progress_arg = &p;
	rc = graid_array_scrub(a, flags, &rep);
	if (rc != -EAGAIN)
		gctl_progress_finish(&p, rc == 0);
	if (rc) {
		if (rc == -EAGAIN)
			gctl_scrub_degraded();
		else
			gctl_err("scrub: %s%s", graid_strerror(rc), gctl_level_reason(rc));
		gctl_close("scrub", a);
		return GCTL_EXIT_FAILED;
	}
	gctl_scrub_print(&rep, !!(flags & GRAID_SCRUB_REPAIR), gctl_now() - t0);
	ex = gctl_scrub_exit(&rep);
	if (gctl_report_bad_blocks("scrub", a) != GCTL_EXIT_OK)
		ex = GCTL_EXIT_DEGRADED;
	if (gctl_close("scrub", a) != GCTL_EXIT_OK)
		return GCTL_EXIT_FAILED;
	return ex;
}

void gctl_spare_remove_err(const char *path, int rc)
{
	if (rc == -ENOENT)
		gctl_err("spare: removing %s: no hot spare of this array has that path or identity "
			 "(a spare that took a role is a member now: fail and replace it instead)",
			 path);
	else
		gctl_err("spare: removing %s: %s", path, graid_strerror(rc));
}

/* spare remove on an array nobody serves: the library takes it off the list. */
static int spare_remove(struct graid_array *a, const char *path)
{
	/* Until graid_array_remove_spare() is in this tree; the guard goes at the merge. */
	int rc = graid_array_remove_spare(a, path);

	if (rc) {
		gctl_spare_remove_err(path, rc);
		return GCTL_EXIT_FAILED;
	}
	printf("%s removed from the hot spares\n", path);
	return GCTL_EXIT_OK;
}

int gctl_cmd_spare(int argc, char **argv)
{
	struct graid_array *a;
	struct gctl_ctl ctl;
	const char *verb, *path;
	bool add;
	int rc, ex = maint_no_options("spare", argc, argv);

	if (ex != GCTL_EXIT_OK)
		return ex;
	verb = argc - optind >= 1 ? argv[optind] : "";
	if (strcmp(verb, "add") != 0 && strcmp(verb, "remove") != 0)
		return gctl_usage_err("spare", "the verbs are 'add' and 'remove'");
	add = strcmp(verb, "add") == 0;
	if (argc - optind < 3)
		return gctl_usage_err("spare", "need PATH and the array's members");
	path = argv[optind + 1];
	/* A spare being removed is no member: it is not given with them, nor checked. */
	ex = gctl_open_served("spare", argv + optind + 2, argc - optind - 2, -1, add ? path : NULL,
			      &a, &ctl);
	if (ex != GCTL_EXIT_OK)
		return ex;
	if (!a) {
		ex = add ? gctl_served_spare_add(&ctl, path) : gctl_served_spare_remove(&ctl, path);
		gctl_ctl_close(&ctl);
		return ex;
	}
	if (!add) {
		ex = spare_remove(a, path);
		if (gctl_close("spare", a) != GCTL_EXIT_OK)
			return GCTL_EXIT_FAILED;
		return ex;
	}
	rc = graid_array_add_spare(a, path);
	if (rc == -EEXIST) {
		gctl_err("spare: adding %s: refused: it is a member of this array (the line above "
			 "names its role); it was not written", path);
		gctl_close("spare", a);
		return GCTL_EXIT_FAILED;
	}
	if (rc) {
		gctl_err("spare: adding %s: %s%s", path, graid_strerror(rc), gctl_level_reason(rc));
		gctl_close("spare", a);
		return GCTL_EXIT_FAILED;
	}
	printf("%s added as a hot spare\n", path);
	return gctl_close("spare", a);
}

#else /* this libgraid has no replace, rebuild, scrub or spares yet */

static int maint_unavailable(const char *cmd)
{
	gctl_err("%s: not available in this libgraid (%s)", cmd, graid_version());
	return GCTL_EXIT_UNSUPPORTED;
}

int gctl_cmd_replace(int argc, char **argv)
{
	(void)argc, (void)argv;
	return maint_unavailable("replace");
}

int gctl_cmd_rebuild(int argc, char **argv)
{
	(void)argc, (void)argv;
	return maint_unavailable("rebuild");
}

int gctl_cmd_scrub(int argc, char **argv)
{
	(void)argc, (void)argv;
	return maint_unavailable("scrub");
}

int gctl_cmd_spare(int argc, char **argv)
{
	(void)argc, (void)argv;
	return maint_unavailable("spare");
}

#endif
