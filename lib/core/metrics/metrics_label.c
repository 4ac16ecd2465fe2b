/* SPDX-License-Identifier: MIT */
/* A label value written as the text exposition format wants it (every family uses it). */
#include "metrics/metrics.h"

void metrics_label(FILE *out, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', out);
		if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}
