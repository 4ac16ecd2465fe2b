/* SPDX-License-Identifier: MIT */
/* rebuild_bench: rebuild speed, reads during a rebuild, reopen after a crash, with baselines. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../bench_util.h"
#include "rb.h"

static void main_header(int argc, char **argv)
{
	char model[272], date[64];
	time_t now = time(NULL);

	bench_cpu_model(model, sizeof(model));
	strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S %Z", localtime(&now));
	printf("# rebuild_bench, libgraid %s, %s\n# CPU: %s, %ld online cores\n# command:",
	       graid_version(), date, model, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 0; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	bench_print_loadavg("at start (1 min)");
}

int main(int argc, char **argv)
{
	struct rb_opts o;
	int rc = rb_opts_parse(&o, argc, argv);

	if (rc)
		return rc > 0 ? 0 : 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_watch_init("rebuild_bench");
	rb_log_install();
	main_header(argc, argv);
	if (o.part[1])
		rc = rb_part_throughput(&o);
	if (rc == 0 && o.part[2])
		rc = rb_part_during(&o);
	if (rc == 0 && o.part[3])
		rc = rb_part_reopen(&o);
	if (rc == 0 && o.part[4])
		rc = rb_part_grow(&o);
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
	bench_print_loadavg("at end (1 min)");
	return 0;
}
