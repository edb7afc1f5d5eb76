// SPDX-License-Identifier: GPL-2.0-or-later
#include "execlist.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta_int.h"
#include "pathstat.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool execlist_ok(struct meta *m, const struct ctr *c)
{
	bool ok = c->running;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; ok && i < NO_EXEC_MAX; i++)
		ok = strcmp(m->no_exec[i], c->id) != 0;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

void execlist_no_tools(struct meta *m, const struct ctr *c)
{
	pthread_mutex_lock(&m->lock);
	snprintf(m->no_exec[m->no_exec_next], sizeof(m->no_exec[0]), "%s",
		 c->id);
	m->no_exec_next = (m->no_exec_next + 1) % NO_EXEC_MAX;
	pthread_mutex_unlock(&m->lock);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs find and stat over the children of dir (deep: its whole subtree),
 * as engine_exec_out() does. stat prints a path with a newline in it
 * over two lines, the second of which can read as another path's (a
 * directory named "q\n81a4 5 6 99 0 1 0 0 " holding cb/f makes a line
 * for /cb/f): such a path prints "?", a line no parse takes. */
static int exec_stat(struct meta *m, struct ctr *c, const char *dir, bool deep,
		     int *status, char *msg, size_t msglen, char **out,
		     size_t *outlen)
{
	const char *argv[] = {"find",
			      dir,
			      "-mindepth",
			      "1",
			      "-maxdepth",
			      "1",
			      "-path",
			      "*\n*",
			      "-exec",
			      "stat",
			      "-c",
			      "?",
			      "{}",
			      "+",
			      "-o",
			      "-exec",
			      "stat",
			      "-c",
			      PATHSTAT_STAT_FMT,
			      "{}",
			      "+",
			      NULL};

	if (deep) /* without "-maxdepth 1" */
		memmove(&argv[4], &argv[6],
			(sizeof(argv) / sizeof(argv[0]) - 6) * sizeof(argv[0]));
	*status = 0;
	return engine_exec_out(m->e, c->id, argv, status, msg, msglen, out,
			       outlen);
}

int execlist_list(struct meta *m, struct ctr *c, const char *dir, double since,
		  int *status)
{
	char prefix[PATH_MAX], msg[512];
	char *out, *line, *nl, *names = NULL, **v = NULL;
	size_t outlen, n = 0, cap = 0, bytes = 0;
	long snapshot = engine_now(m->e);
	double t0 = now_mono();
	int ret;

	snprintf(prefix, sizeof(prefix), "%s/", strcmp(dir, "/") ? dir : "");
	ret = exec_stat(m, c, dir, false, status, msg, sizeof(msg), &out,
			&outlen);
	if (ret < 0) {
		log_dbg("no listing of '%s' in '%s' by exec (%s): the whole "
			"tree is read",
			dir, c->name, msg[0] ? msg : strerror(-ret));
		return ret;
	}
	for (line = out; line < out + outlen; line = nl + 1) {
		struct cache_attr a = {.flags = CACHE_OWNER}, old;
		char *path, **nv;

		nl = memchr(line, '\n', (size_t)(out + outlen - line));
		if (!nl) {
			ret = -EIO;
			break;
		}
		*nl = '\0';
		if (pathstat_stat_line(line, prefix, false, &a.st, &path) < 0) {
			ret = -EIO;
			break;
		}
		fill_defaults(&a.st);
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = path + strlen(prefix);
		bytes += strlen(path + strlen(prefix)) + 1;
		if (cache_get(m->c, c->id, path, &old, NULL, 0) == 0 &&
		    (old.flags & CACHE_OWNER) && old.validated >= since)
			continue; /* just read from the tar */
		a.validated = now_mono();
		cache_put(m->c, c->id, path, &a, NULL);
	}
	if (ret == 0) {
		char *p = names = malloc(bytes ? bytes : 1);

		/* the tar's order */
		if (n > 0)
			qsort(v, n, sizeof(*v), cmp_names);
		for (size_t i = 0; names && i < n; i++)
			p = stpcpy(p, v[i]) + 1;
		ret = names ? cache_set_listing(m->c, c->id, dir, names, n,
						bytes, snapshot)
			    : -ENOMEM;
	}
	if (ret < 0)
		log_dbg("no listing of '%s' in '%s' by exec (%s): the whole "
			"tree is read",
			dir, c->name,
			ret == -EIO ? "output not understood" : strerror(-ret));
	else
		log_dbg("listed '%s' in '%s' by exec: %zu entries in %.1f ms",
			dir, c->name, n, (now_mono() - t0) * 1e3);
	free(names);
	free(v);
	free(out);
	return ret;
}

int execlist_confirm(struct meta *m, struct ctr *c, const char *dir)
{
	char prefix[PATH_MAX], msg[512];
	char *out, *line, *nl;
	size_t outlen, seen = 0, same = 0;
	double t0 = now_mono();
	int status, ret;

	if ((size_t)snprintf(prefix, sizeof(prefix), "%s/", dir) >=
	    sizeof(prefix))
		return -ENAMETOOLONG;
	ret = exec_stat(m, c, dir, true, &status, msg, sizeof(msg), &out,
			&outlen);
	if (ret < 0) {
		if (status == 126 || status == 127)
			execlist_no_tools(m, c);
		log_dbg("'%s' in '%s' not confirmed by exec (%s)", dir, c->name,
			msg[0] ? msg : strerror(-ret));
		return ret;
	}
	for (line = out; line < out + outlen; line = nl + 1) {
		struct cache_attr a = {.flags = CACHE_OWNER}, old;
		char *path;

		nl = memchr(line, '\n', (size_t)(out + outlen - line));
		if (!nl)
			break;
		*nl = '\0';
		if (pathstat_stat_line(line, prefix, true, &a.st, &path) < 0 ||
		    cache_get(m->c, c->id, path, &old, NULL, 0) < 0)
			continue;
		fill_defaults(&a.st);
		seen++;
		a.validated = now_mono();
		/* a directory's size is 0 in a tar and 4096 from a HEAD (and
		 * from stat): it says nothing */
		if (S_ISDIR(a.st.st_mode) && S_ISDIR(old.st.st_mode))
			a.st.st_size = old.st.st_size;
		if (same_head(m, &old.st, &a.st) && (old.flags & CACHE_OWNER) &&
		    old.st.st_uid == a.st.st_uid &&
		    old.st.st_gid == a.st.st_gid &&
		    old.st.st_mtim.tv_nsec == 0) {
			cache_confirm(m->c, c->id, path, NULL, a.validated);
			same++;
		} else {
			cache_put(m->c, c->id, path, &a, NULL);
		}
	}
	log_dbg("confirmed '%s' in '%s' by exec: %zu of %zu entries the same "
		"in %.1f ms",
		dir, c->name, same, seen, (now_mono() - t0) * 1e3);
	free(out);
	return 0;
}
