// SPDX-License-Identifier: GPL-2.0-or-later
#include "wbstatus.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the files given up that the status lists (the oldest make room) */
#define GAVE_UP_MAX 1000

/* A container with a failure not yet told to its two kinds of caller. */
struct latch {
	char *ctr_id;
	int err;
	bool tell_sync, tell_close;
	struct latch *next;
};

struct gave_up {
	char *line; /* "failed\tCTR\tPATH\tREASON\tCOPY\n" */
	struct gave_up *next;
};

struct wbstatus {
	pthread_mutex_t lock;
	struct latch *latches;
	struct gave_up *first, *last;
	size_t ngave_up;
	unsigned long dropped; /* given up and no longer listed */
};

struct wbstatus *wbstatus_new(void)
{
	struct wbstatus *s = calloc(1, sizeof(*s));

	if (s)
		pthread_mutex_init(&s->lock, NULL);
	return s;
}

void wbstatus_free(struct wbstatus *s)
{
	if (!s)
		return;
	while (s->latches) {
		struct latch *l = s->latches;

		s->latches = l->next;
		free(l->ctr_id);
		free(l);
	}
	while (s->first) {
		struct gave_up *g = s->first;

		s->first = g->next;
		free(g->line);
		free(g);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void wbstatus_failed(struct wbstatus *s, const char *ctr_id, int err)
{
	struct latch *l;

	pthread_mutex_lock(&s->lock);
	for (l = s->latches; l; l = l->next)
		if (strcmp(l->ctr_id, ctr_id) == 0)
			break;
	if (!l) {
		l = calloc(1, sizeof(*l));
		if (l)
			l->ctr_id = strdup(ctr_id);
		if (l && !l->ctr_id) {
			free(l);
			l = NULL;
		}
		if (l) {
			l->next = s->latches;
			s->latches = l;
		}
	}
	if (l) {
		l->err = err < 0 ? err : -EIO;
		l->tell_sync = l->tell_close = true;
	}
	pthread_mutex_unlock(&s->lock);
}

int wbstatus_take(struct wbstatus *s, const char *ctr_id, bool sync)
{
	struct latch **pl;
	int ret = 0;

	pthread_mutex_lock(&s->lock);
	for (pl = &s->latches; *pl && !ret;) {
		struct latch *l = *pl;
		bool *tell = sync ? &l->tell_sync : &l->tell_close;

		if ((!ctr_id || strcmp(l->ctr_id, ctr_id) == 0) && *tell) {
			ret = l->err;
			*tell = false;
		}
		if (!l->tell_sync && !l->tell_close) {
			*pl = l->next;
			free(l->ctr_id);
			free(l);
		} else {
			pl = &l->next;
		}
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

/* A field of a status line: tabs and newlines would split it. */
static void clean_field(char *s)
{
	for (; *s; s++)
		if (*s == '\t' || *s == '\n' || *s == '\r')
			*s = ' ';
}

void wbstatus_gave_up(struct wbstatus *s, const char *ctr_name,
		      const char *path, const char *reason, const char *rescue)
{
	struct gave_up *g = calloc(1, sizeof(*g));
	char *f[4] = {strdup(ctr_name), strdup(path), strdup(reason),
		      strdup(rescue ? rescue : "-")};

	for (int i = 0; i < 4; i++)
		if (f[i])
			clean_field(f[i]);
	if (!g || !f[0] || !f[1] || !f[2] || !f[3] ||
	    asprintf(&g->line, "failed\t%s\t%s\t%s\t%s\n", f[0], f[1], f[2],
		     f[3]) < 0) {
		free(g);
		g = NULL;
	}
	for (int i = 0; i < 4; i++)
		free(f[i]);
	pthread_mutex_lock(&s->lock);
	if (!g) {
		s->dropped++;
	} else {
		if (s->last)
			s->last->next = g;
		else
			s->first = g;
		s->last = g;
		s->ngave_up++;
	}
	if (s->ngave_up > GAVE_UP_MAX) {
		struct gave_up *old = s->first;

		s->first = old->next;
		free(old->line);
		free(old);
		s->ngave_up--;
		s->dropped++;
	}
	pthread_mutex_unlock(&s->lock);
}

bool wbstatus_lines(struct wbstatus *s, char *buf, size_t *len, size_t len_max)
{
	bool any;

	pthread_mutex_lock(&s->lock);
	any = s->first || s->dropped;
	for (struct gave_up *g = s->first; g; g = g->next) {
		size_t n = strlen(g->line);

		if (*len + n >= len_max)
			break;
		memcpy(buf + *len, g->line, n + 1);
		*len += n;
	}
	if (s->dropped && *len + 64 < len_max)
		*len += (size_t)snprintf(
		    buf + *len, len_max - *len,
		    "failed\t-\t-\t%lu more, not listed\t-\n", s->dropped);
	pthread_mutex_unlock(&s->lock);
	return any;
}
