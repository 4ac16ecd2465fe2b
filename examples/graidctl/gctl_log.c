/* SPDX-License-Identifier: MIT */
/* The library's log on stderr under graidctl's name, each line once: a look's is held back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libgraid/graid.h>

#include "gctl.h"

/* Lines held while a look runs: printed only if what the look found is reported. */
struct gctl_held_line {
	int level;
	char *msg;
};

static struct {
	int holding;
	size_t n, cap;
	struct gctl_held_line *v;
} log_held;

static void log_print(int level, const char *msg)
{
	if (level <= GRAID_LOG_ERR)
		fprintf(stderr, "graidctl: %s\n", msg);
	else if (level == GRAID_LOG_WARNING)
		fprintf(stderr, "graidctl: warning: %s\n", msg);
	else
		fprintf(stderr, "graidctl: (%s) %s\n", level == GRAID_LOG_NOTICE ? "notice" :
			level == GRAID_LOG_INFO ? "info" : "debug", msg);
}

void gctl_log_forward(void *arg, int level, const char *msg)
{
	(void)arg;
	if (!log_held.holding) {
		log_print(level, msg);
		return;
	}
	if (log_held.n == log_held.cap) {
		size_t cap = log_held.cap ? 2 * log_held.cap : 16;
		struct gctl_held_line *v = realloc(log_held.v, cap * sizeof(*v));

		if (!v) {
			log_print(level, msg); /* better twice than never */
			return;
		}
		log_held.v = v;
		log_held.cap = cap;
	}
	log_held.v[log_held.n].level = level;
	log_held.v[log_held.n].msg = strdup(msg);
	if (log_held.v[log_held.n].msg)
		log_held.n++;
}

void gctl_log_hold(void)
{
	log_held.holding = 1;
}

void gctl_log_release(int print)
{
	for (size_t i = 0; i < log_held.n; i++) {
		if (print)
			log_print(log_held.v[i].level, log_held.v[i].msg);
		free(log_held.v[i].msg);
	}
	free(log_held.v);
	memset(&log_held, 0, sizeof(log_held));
}

void gctl_log_take(struct gctl_log_saved *s)
{
	s->n = log_held.n;
	s->v = log_held.v;
	log_held.n = log_held.cap = 0;
	log_held.v = NULL;
}

void gctl_log_restore(struct gctl_log_saved *s, int print)
{
	struct gctl_held_line *v = s->v;

	for (size_t i = 0; i < s->n; i++) {
		if (print)
			log_print(v[i].level, v[i].msg);
		free(v[i].msg);
	}
	free(v);
	s->n = 0;
	s->v = NULL;
}
