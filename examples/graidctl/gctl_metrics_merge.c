/* SPDX-License-Identifier: MIT */
/* Exposition texts from several sources (holders, the local render) merged family by family. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gctl_metrics.h"

/* Prometheus wants each family's lines together, its HELP and TYPE once, before its samples. */
struct gm_family {
	char *name;
	char *help, *type;  /* whole lines, or NULL */
	char *samples;      /* lines, each ending in '\n' */
	size_t len;
};

struct gctl_metrics_merge {
	struct gm_family *f;
	size_t n, cap;
	int oom;
};

struct gctl_metrics_merge *gctl_metrics_merge_new(void)
{
	return calloc(1, sizeof(struct gctl_metrics_merge));
}

static struct gm_family *gm_find(struct gctl_metrics_merge *m, const char *name, size_t nl)
{
	struct gm_family *f;

	for (size_t i = 0; i < m->n; i++)
		if (strlen(m->f[i].name) == nl && !memcmp(m->f[i].name, name, nl))
			return &m->f[i];
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 64;
		struct gm_family *v = realloc(m->f, cap * sizeof(*v));

		if (!v)
			return NULL;
		m->f = v;
		m->cap = cap;
	}
	f = &m->f[m->n];
	memset(f, 0, sizeof(*f));
	f->name = strndup(name, nl);
	if (!f->name)
		return NULL;
	m->n++;
	return f;
}

static int gm_append(char **buf, size_t *len, const char *line, size_t ll)
{
	char *v = realloc(*buf, *len + ll + 2);

	if (!v)
		return -ENOMEM;
	memcpy(v + *len, line, ll);
	v[*len + ll] = '\n';
	*len += ll + 1;
	v[*len] = '\0';
	*buf = v;
	return 0;
}

/* A metric name's length at @p s: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static size_t gm_name_len(const char *s, size_t max)
{
	size_t i = 0;

	while (i < max && (s[i] == '_' || s[i] == ':' || (s[i] >= 'a' && s[i] <= 'z') ||
			   (s[i] >= 'A' && s[i] <= 'Z') || (i && s[i] >= '0' && s[i] <= '9')))
		i++;
	return i;
}

/* A sample of family @p f: its name, or its name and a histogram's or summary's suffix. */
static int gm_of(const struct gm_family *f, const char *name, size_t nl)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t fl = strlen(f->name);

	if (nl == fl)
		return !memcmp(name, f->name, nl);
	for (size_t k = 0; k < sizeof(sfx) / sizeof(sfx[0]); k++)
		if (nl == fl + strlen(sfx[k]) && !memcmp(name, f->name, fl) &&
		    !memcmp(name + fl, sfx[k], nl - fl))
			return 1;
	return 0;
}

static int gm_line(struct gctl_metrics_merge *m, struct gm_family **cur, const char *l, size_t ll)
{
	struct gm_family *f;
	size_t nl;

	if (ll == 0)
		return 0;
	if (l[0] == '#') {
		int help = ll > 7 && !memcmp(l, "# HELP ", 7);
		int type = ll > 7 && !memcmp(l, "# TYPE ", 7);
		char **slot;

		if (!help && !type)
			return 0; /* a comment: nothing of a family */
		nl = gm_name_len(l + 7, ll - 7);
		f = nl ? gm_find(m, l + 7, nl) : NULL;
		if (!f)
			return nl ? -ENOMEM : -EINVAL;
		*cur = f;
		slot = help ? &f->help : &f->type;
		if (!*slot) {
			size_t len = 0;

			return gm_append(slot, &len, l, ll);
		}
		return 0;
	}
	nl = gm_name_len(l, ll);
	if (!nl)
		return -EINVAL;
	f = *cur && gm_of(*cur, l, nl) ? *cur : gm_find(m, l, nl);
	if (!f)
		return -ENOMEM;
	*cur = f;
	return gm_append(&f->samples, &f->len, l, ll);
}

int gctl_metrics_merge_add(struct gctl_metrics_merge *m, const char *text)
{
	struct gm_family *cur = NULL;

	while (*text) {
		const char *nl = strchr(text, '\n');
		size_t ll = nl ? (size_t)(nl - text) : strlen(text);
		int rc = gm_line(m, &cur, text, ll);

		if (rc)
			return rc;
		text += ll + (nl ? 1 : 0);
	}
	return 0;
}

int gctl_metrics_merge_write(const struct gctl_metrics_merge *m, FILE *out)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct gm_family *f = &m->f[i];

		if (f->help)
			fputs(f->help, out);
		if (f->type)
			fputs(f->type, out);
		if (f->samples)
			fputs(f->samples, out);
	}
	return fflush(out) || ferror(out) ? -EIO : 0;
}

void gctl_metrics_merge_free(struct gctl_metrics_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->f[i].name);
		free(m->f[i].help);
		free(m->f[i].type);
		free(m->f[i].samples);
	}
	free(m->f);
	free(m);
}
