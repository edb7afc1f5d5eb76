// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Where pending entries sit in the tree, for the batches that carry them
 * and the lookups below them: which are entries without data and
 * directories, which pending directories are not in the container yet, the
 * directory a PUT goes to and what it made on the way, links that climb
 * out of it, and the order of names in a tar (children first). Stands on
 * writer_core.c alone.
 */
#include "writer.h"
#include "writer_int.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "meta.h"
#include "pathmap.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* w->lock held: whether path is a pending directory not in the
 * container yet (new: nothing but what is pending is in it). */
bool writer_new_dir_locked(struct writer *w, const char *ctr_id,
			   const char *path)
{
	struct wfile *d = writer_find_locked(w, ctr_id, path);

	/* not d->st or d->fd: those change under d->lock alone */
	return d && d->dir_entry && !atomic_load(&d->in_container);
}

bool wfile_is_entry(struct wfile *f)
{
	return f->fd < 0 && !S_ISREG(f->st.st_mode);
}

bool wfile_is_dir(struct wfile *f)
{
	return wfile_is_entry(f) && S_ISDIR(f->st.st_mode);
}

void writer_put_dir_locked(struct writer *w, const char *ctr_id,
			   const char *dir, char *out, size_t len)
{
	if (out != dir)
		snprintf(out, len, "%s", dir);
	while (strcmp(out, "/") != 0 && writer_new_dir_locked(w, ctr_id, out))
		pathmap_parent(out, out, len);
}

void writer_made_above_locked(struct writer *w, const char *ctr_id,
			      const char *dir, const char *path, long t0)
{
	char up[PATH_MAX];
	size_t len = strlen(dir), at;

	if (strcmp(dir, "/") == 0)
		len = 0;
	if (strncmp(path, dir, len) != 0 || path[len] != '/')
		return;
	snprintf(up, sizeof(up), "%s", path);
	/* from the top down: one made in a directory made too lands in
	 * its listing */
	for (at = len + 1; up[at]; at++) {
		struct wfile *d;

		if (up[at] != '/')
			continue;
		up[at] = '\0';
		d = writer_find_locked(w, ctr_id, up);
		/* one landing in the same PUT says so itself */
		if (d && d->dir_entry && !d->flushing &&
		    !atomic_load(&d->in_container)) {
			/* as the engine made it, empty but for what lands
			 * now: the cache answers for its names as the
			 * writer did (a HEAD per name of an rsync
			 * otherwise); the pending entry shows until it
			 * lands (not d->st: under d->lock alone) */
			struct stat st = {.st_mode = S_IFDIR | 0755,
					  .st_nlink = 2};

			engine_clock(w->e, &st.st_mtim);
			st.st_atim = st.st_ctim = st.st_mtim;
			meta_committed(w->m, &d->ctr, up, &st, t0);
			atomic_store(&d->in_container, true);
		}
		up[at] = '/';
	}
}

/* Whether a symlink at name (relative to the PUT's directory) to the
 * relative target climbs above that directory: the engine refuses such a
 * link (a breakout), and with it the whole PUT. */
static bool climbs(const char *name, const char *target)
{
	long depth = 0;

	if (target[0] == '/')
		return false;
	for (const char *p = name; (p = strchr(p, '/')); p++)
		depth++;
	for (const char *p = target; *p;) {
		size_t len = strcspn(p, "/");

		if (len == 2 && p[0] == '.' && p[1] == '.')
			depth--;
		else if (len && !(len == 1 && p[0] == '.'))
			depth++;
		if (depth < 0)
			return true;
		p += len;
		p += *p == '/';
	}
	return false;
}

void writer_fit_links(struct wfile **fs, size_t n, char *dir, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		size_t dlen;

		if (!fs[i]->link)
			continue;
		dlen = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
		while (strcmp(dir, "/") != 0 &&
		       climbs(fs[i]->path + dlen, fs[i]->link)) {
			pathmap_parent(dir, dir, len);
			dlen = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
		}
	}
}

/* A name sorts before its own prefix: "a/b" before "a" (the end of a name
 * weighs more than any byte). */
static int children_first(const void *a, const void *b)
{
	const unsigned char *x =
	    (const unsigned char *)(*(struct wfile *const *)a)->path;
	const unsigned char *y =
	    (const unsigned char *)(*(struct wfile *const *)b)->path;

	while (*x && *x == *y)
		x++, y++;
	if (!*x || !*y)
		return *x ? -1 : *y ? 1 : 0;
	return *x < *y ? -1 : 1;
}

void writer_sort_children_first(struct wfile **fs, size_t n)
{
	qsort(fs, n, sizeof(*fs), children_first);
}
