/* SPDX-License-Identifier: MIT */
/* graidctl create: check the command line, optionally make member files, create the array. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libgraid/graid.h>

#include "gctl.h"

void gctl_help_create(FILE *f)
{
	gctl_print_cmd_usage(f, "create");
	fprintf(f,
		"\nCreate an array on MEMBER... (files or block devices); a member's role is its\n"
		"position on the command line. The new array reads as zeroes.\n\n"
		"  -l, --level N        RAID level: 0, 1, 5, 6 or 10 (required)\n"
		"  -c, --chunk SIZE     chunk size, a power of two from 4K to 1M (default 64K)\n"
		"  -b, --backend NAME   parity engine: auto, ref, isal, opencl, cuda (default:\n"
		"                       $GRAID_BACKEND, else auto)\n"
		"  -f, --force          overwrite members that already carry a libgraid superblock\n"
		"  -j, --journal        RAID-5/6: keep a write-hole journal on every member, so a\n"
		"                       crash followed by a lost member never returns data nobody\n"
		"                       wrote (docs/JOURNAL.md); every write is logged first\n"
		"  -k, --checksums      RAID-1/5/6/10: a CRC-32C tag per 4 KiB block of every\n"
		"                       member, verified on every read; a bad block is healed\n"
		"                       from the other members, never returned (docs/INTEGRITY.md);\n"
		"                       block size 4096, about 0.2%% of each member for the tags\n"
		"  -s, --file-size SIZE create each MEMBER that does not exist as a sparse file of\n"
		"                       SIZE bytes (removed again if the create fails)\n\n"
		"Exit status: 0 created; 1 refused or failed (no member modified when refused);\n"
		"2 usage error.\n");
}

/* Levels as numbers or as "raidN", which is how people write them. */
static int create_parse_level(const char *s, int *level)
{
	static const int levels[] = { 0, 1, 5, 6, 10 };
	char *end;
	long v;

	if (strncasecmp(s, "raid", 4) == 0)
		s += 4;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	v = strtol(s, &end, 10);
	if (*end)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (v == levels[i]) {
			*level = (int)v;
			return 0;
		}
	}
	return -EINVAL;
}

/* Make the missing member files; remembers which so a failed create can take them back. */
static int create_make_files(char **paths, int n, uint64_t size, bool *made)
{
	for (int i = 0; i < n; i++) {
		int fd;

		made[i] = false;
		if (access(paths[i], F_OK) == 0)
			continue;
		fd = open(paths[i], O_RDWR | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			gctl_err("create: %s: %s", paths[i], strerror(errno));
			return -1;
		}
		made[i] = true;
		if (ftruncate(fd, (off_t)size) != 0) {
			gctl_err("create: %s: cannot size it to %llu bytes: %s", paths[i],
				 (unsigned long long)size, strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
	}
	return 0;
}

static void create_remove_files(char **paths, int n, const bool *made)
{
	for (int i = 0; i < n; i++)
		if (made[i])
			unlink(paths[i]);
}

static void create_report(struct graid_array *a)
{
	struct graid_array_info info = { .struct_size = sizeof(info) };
	char uuid[37], size[32], chunk[32];

	if (graid_array_info(a, &info) != 0)
		return;
	gctl_uuid_format(info.uuid, uuid);
	gctl_size_format(info.size, size, sizeof(size));
	gctl_size_format(info.chunk_bytes, chunk, sizeof(chunk));
	printf("created RAID-%d array %s: %u members, chunk %s, %s (%llu bytes), engine %s\n",
	       info.level, uuid, info.nmembers, chunk, size, (unsigned long long)info.size,
	       info.engine);
}

/* The fewest members each level takes (graid_array_create() says the same). */
static int create_min_members(int level)
{
	return level == 5 ? 3 : level == 6 ? 4 : 2;
}

int gctl_cmd_create(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "backend", required_argument, NULL, 'b' },
		{ "force", no_argument, NULL, 'f' },
		{ "journal", no_argument, NULL, 'j' },
		{ "checksums", no_argument, NULL, 'k' },
		{ "file-size", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	struct graid_array_config cfg = { .struct_size = sizeof(cfg), .level = -1 };
	uint64_t chunk = 64 * 1024, file_size = 0;
	struct graid_array *a;
	bool *made;
	int c, n, rc;

	while ((c = getopt_long(argc, argv, "l:c:b:fjks:", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			if (create_parse_level(optarg, &cfg.level))
				return gctl_usage_err("create",
						      "unsupported RAID level '%s' (choose 0, 1, 5, 6 or 10)",
						      optarg);
			break;
		case 'c':
			if (gctl_size_parse(optarg, &chunk) || chunk < 4096 || chunk > (1u << 20) ||
			    (chunk & (chunk - 1)))
				return gctl_usage_err("create",
						      "bad chunk size '%s' (a power of two from 4K to 1M)",
						      optarg);
			break;
		case 'b':
			cfg.backend = optarg;
			break;
		case 'f':
			cfg.flags |= GRAID_CREATE_FORCE;
			break;
		case 'j':
			cfg.flags |= GRAID_CREATE_JOURNAL;
			break;
		case 'k':
			cfg.flags |= GRAID_CREATE_CHECKSUMS;
			break;
		case 's':
			if (gctl_size_parse(optarg, &file_size) || file_size == 0)
				return gctl_usage_err("create", "bad file size '%s'", optarg);
			break;
		default:
			fprintf(stderr, "Try 'graidctl create --help'.\n");
			return GCTL_EXIT_USAGE;
		}
	}
	if (cfg.level < 0)
		return gctl_usage_err("create", "--level is required");
	n = argc - optind;
	if (n < 1)
		return gctl_usage_err("create", "no members given");
	if (n > GRAID_MAX_MEMBERS)
		return gctl_usage_err("create", "%d members given; at most %d", n,
				      GRAID_MAX_MEMBERS);
	if (n < create_min_members(cfg.level))
		return gctl_usage_err("create", "RAID-%d needs at least %d members; %d given",
				      cfg.level, create_min_members(cfg.level), n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(argv[optind + i], argv[optind + j]) == 0)
				return gctl_usage_err("create", "member %s given twice",
						      argv[optind + i]);
	cfg.chunk_bytes = (uint32_t)chunk;

	made = calloc((size_t)n, sizeof(*made));
	if (!made) {
		gctl_err("create: out of memory");
		return GCTL_EXIT_FAILED;
	}
	if (file_size && create_make_files(argv + optind, n, file_size, made)) {
		create_remove_files(argv + optind, n, made);
		free(made);
		return GCTL_EXIT_FAILED;
	}
	rc = graid_array_create((const char *const *)(argv + optind), (unsigned)n, &cfg, &a);
	if (rc) {
		if (rc == -ENOENT || rc == -EACCES || rc == -EPERM)
			gctl_explain_paths("create", argv + optind, n, 0);
		if (rc == -EINVAL || rc == -ENODEV)
			gctl_explain_backend("create", cfg.backend);
		gctl_err("create: RAID-%d on %d member%s: %s", cfg.level, n, n == 1 ? "" : "s",
			 graid_strerror(rc));
		create_remove_files(argv + optind, n, made);
		free(made);
		return GCTL_EXIT_FAILED;
	}
	free(made);
	create_report(a);
	return gctl_close("create", a);
}
