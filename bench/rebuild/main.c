/* SPDX-License-Identifier: MIT */
/* rebuild_bench: rebuild speed, reads during a rebuild, reopen after a crash, with baselines. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rb.h"

static void main_header(int argc, char **argv)
{
	char model[272] = "unknown", line[256], date[64];
	FILE *f = fopen("/proc/cpuinfo", "r");
	time_t now = time(NULL);

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');

			snprintf(model, sizeof(model), "%s", p ? p + 2 : line);
			model[strcspn(model, "\n")] = 0;
			break;
		}
	if (f)
		fclose(f);
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	printf("# rebuild_bench, libgraid %s, %s\n# CPU: %s, %ld online cores\n# command:",
	       graid_version(), date, model, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	rb_loadavg("at start (1 min)");
}

int main(int argc, char **argv)
{
	struct rb_opts o;
	int rc = rb_opts_parse(&o, argc, argv);

	if (rc)
		return rc > 0 ? 0 : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	rb_watch_init();
	rb_log_install();
	main_header(argc, argv);
	if (o.part[1])
		rc = rb_part_throughput(&o);
	if (rc == 0 && o.part[2])
		rc = rb_part_during(&o);
	if (rc == 0 && o.part[3])
		rc = rb_part_reopen(&o);
	alarm(0);
	if (rc == -ENOSYS || rc == -EPERM) {
		printf("rebuild_bench: io_uring is not available here (%s): skipped\n",
		       graid_strerror(rc));
		return 77;
	}
	if (rc) {
		fprintf(stderr, "rebuild_bench: FAILED: %s\n", graid_strerror(rc));
		return 1;
	}
	rb_loadavg("at end (1 min)");
	return 0;
}
