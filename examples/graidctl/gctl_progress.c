/* SPDX-License-Identifier: MIT */
/* Progress of long operations: a bar with rate and ETA on a terminal, plain lines otherwise. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "gctl.h"

#define PROGRESS_BAR_WIDTH 30
#define PROGRESS_TTY_PERIOD 0.25  /* s between bar redraws: a few a second, no flicker */
#define PROGRESS_LINE_PERIOD 1.0  /* s between lines in a log: one a second, not a flood */

/* The header promises reports from the calling thread; the lock keeps the bar whole if not. */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;

void gctl_progress_init(struct gctl_progress *p, const char *what)
{
	p->what = what;
	p->tty = isatty(STDOUT_FILENO);
	p->t0 = gctl_now();
	p->last = 0;
	p->printed = 0;
	p->started = 0;
	p->base = 0;
	p->t1 = p->t0;
}

static void progress_eta(double s, char *buf, size_t len)
{
	unsigned long t = (unsigned long)(s + 0.5);

	if (s < 0 || s > 99.0 * 3600)
		snprintf(buf, len, "--:--");
	else if (t >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	else
		snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
}

static void progress_print(struct gctl_progress *p, uint64_t done, uint64_t total, double now)
{
	/* The rate counts this run's work only: a resumed job starts with some done. */
	double elapsed = now - p->t1, frac = total ? (double)done / (double)total : 1.0;
	double rate = elapsed > 0 ? (double)(done - p->base) / elapsed : 0;
	char sdone[32], stotal[32], srate[32], eta[32];

	if (frac > 1.0)
		frac = 1.0;
	gctl_size_format(done, sdone, sizeof(sdone));
	gctl_size_format(total, stotal, sizeof(stotal));
	gctl_size_format((uint64_t)rate, srate, sizeof(srate));
	progress_eta(rate > 0 ? (double)(total - (done < total ? done : total)) / rate : -1, eta,
		     sizeof(eta));
	if (p->tty) {
		int fill = (int)(frac * PROGRESS_BAR_WIDTH);

		/* \r and erase-to-end redraw one line in place. */
		printf("\r%s [", p->what);
		for (int i = 0; i < PROGRESS_BAR_WIDTH; i++)
			putchar(i < fill ? '#' : '.');
		printf("] %5.1f%%  %s / %s  %s/s  ETA %s\033[K", frac * 100, sdone, stotal, srate,
		       eta);
		p->printed = 1;
	} else {
		printf("%s: %.1f%% (%s of %s), %s/s, ETA %s\n", p->what, frac * 100, sdone, stotal,
		       srate, eta);
	}
	fflush(stdout);
}

/* A graid_progress_fn: called with the work done so far, in bytes, and the total. */
void gctl_progress_update(void *arg, uint64_t done, uint64_t total)
{
	struct gctl_progress *p = arg;
	double now;

	if (pthread_mutex_trylock(&progress_lock) != 0)
		return;
	now = gctl_now();
	if (!p->started) {
		p->started = 1;
		p->base = done;
		p->t1 = now;
	}
	/* The last report always shows, so a log ends on 100% rather than on the last tick. */
	if (now - p->last >= (p->tty ? PROGRESS_TTY_PERIOD : PROGRESS_LINE_PERIOD) ||
	    done >= total) {
		p->last = now;
		progress_print(p, done, total, now);
	}
	pthread_mutex_unlock(&progress_lock);
}

void gctl_progress_finish(struct gctl_progress *p, int ok)
{
	double elapsed = gctl_now() - p->t0;

	pthread_mutex_lock(&progress_lock);
	if (p->printed)
		putchar('\n');
	p->printed = 0;
	printf("%s %s in %.1f s\n", p->what, ok ? "finished" : "stopped", elapsed);
	fflush(stdout);
	pthread_mutex_unlock(&progress_lock);
}
