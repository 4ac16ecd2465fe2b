/* SPDX-License-Identifier: MIT */
/* Replays files (or every file in directories) through the fuzz target, for non-clang builds. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs longer than this are cut, as libFuzzer's -max_len would: decode reads 4096 bytes. */
#define REPLAY_MAX (64u * 1024)

static int replay_file(const char *path)
{
	static uint8_t buf[REPLAY_MAX];
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned files = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		DIR *dir;
		struct dirent *de;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (replay_file(argv[i]))
				return 1;
			files++;
			continue;
		}
		dir = opendir(argv[i]);
		if (!dir) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(dir)) != NULL) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;
			if (replay_file(path)) {
				closedir(dir);
				return 1;
			}
			files++;
		}
		closedir(dir);
	}
	/* An empty or missing corpus is a broken test, not a pass. */
	if (files == 0) {
		fprintf(stderr, "fuzz_replay: no input files\n");
		return 1;
	}
	printf("fuzz_replay: %u inputs, no failure\n", files);
	return 0;
}
