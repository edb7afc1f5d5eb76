// SPDX-License-Identifier: GPL-2.0-or-later
/* Write-back entries without data: a directory or a symlink made, or a
 * directory whose mode, owner or times changed, is a wfile with no spool
 * file (fd -1) that rides in the container's next batch PUT after the
 * files below it, journaled as a file is (docs/design.md, "Directories
 * and symlinks as pending changes"). Lookups below a directory that is
 * pending and not in the container yet are answered here. */
#include "writer.h"
#include "writer_int.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An entry of the writer for path with header st, not listed yet. */
static struct wfile *entry_new(struct writer *w, const struct ctr *c,
			       const char *path, const struct stat *st,
			       const char *link)
{
	struct wfile *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	pthread_mutex_init(&f->lock, NULL);
	f->w = w;
	f->refs = 1;
	f->ctr = *c;
	f->fd = -1;
	f->path = strdup(path);
	f->link = link ? strdup(link) : NULL;
	f->st = *st;
	if (!f->st.st_ino)
		f->st.st_ino = cache_new_ino();
	f->links = 1;
	f->dirty = true;
	f->dir_entry = S_ISDIR(st->st_mode);
	atomic_store(&f->ready, true);
	if (!f->path || (link && !f->link)) {
		writer_wfile_free(f);
		return NULL;
	}
	return f;
}

/* Drops f, a new entry that could not be queued: never tried again. */
static void entry_drop(struct wfile *f)
{
	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&f->w->lock);
	f->unlinked = true;
	pthread_mutex_unlock(&f->w->lock);
	f->dirty = false;
	pthread_mutex_unlock(&f->lock);
	wfile_put(f);
}

/* Lists f (a new entry) unless path has a wfile already: 0 or -EEXIST. */
static int entry_list(struct writer *w, struct wfile *f)
{
	int ret = 0;

	pthread_mutex_lock(&w->lock);
	if (writer_find_locked(w, f->ctr.id, f->path)) {
		ret = -EEXIST;
	} else {
		writer_list_locked(w, f);
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int writer_mkentry(struct writer *w, const struct ctr *c, const char *path,
		   const struct stat *st, const char *link)
{
	struct wfile *f = entry_new(w, c, path, st, link);
	int ret;

	if (!f)
		return -ENOMEM;
	if (S_ISLNK(st->st_mode))
		f->st.st_size = (off_t)strlen(link);
	if (S_ISDIR(st->st_mode))
		f->st.st_nlink = 2;
	ret = entry_list(w, f);
	if (ret < 0) {
		writer_wfile_free(f);
		return ret;
	}
	/* journaled and queued as a closed file; when the journal fails,
	 * made at once (its PUT) */
	ret = wfile_queue(f);
	if (ret < 0) {
		entry_drop(f);
		return ret;
	}
	log_dbg("write-back: '%s' in container '%s' is a pending %s", path,
		c->name, S_ISDIR(st->st_mode) ? "directory" : "symlink");
	wfile_put(f); /* it stays, pending */
	writer_touch_parent(w, c->id, path);
	return 0;
}

/* Whether something is pending directly in dir. */
static bool holds_pending(struct writer *w, const char *ctr_id, const char *dir)
{
	size_t dlen = strlen(dir);
	bool found = false;

	pthread_mutex_lock(&w->lock);
	for (struct wfile *f = w->files; f && !found; f = f->next)
		found = !f->unlinked && (f->pending || f->flushing) &&
			strcmp(f->ctr.id, ctr_id) == 0 &&
			strncmp(f->path, dir, dlen) == 0 &&
			f->path[dlen] == '/' &&
			!strchr(f->path + dlen + 1, '/');
	pthread_mutex_unlock(&w->lock);
	return found;
}

struct wfile *writer_dir_entry(struct writer *w, struct ctr *c,
			       const char *path)
{
	struct wfile *f;
	struct stat st;

	/* Podman reports every owner as 0:0: an entry would put that back
	 * (fs_change.c asks the container's stat instead, at once) */
	if (!writer_writeback(w) || engine_quirks(w->e)->owners_zero)
		return NULL;
	/* the cached type first: no HEAD for what is no directory */
	if (meta_getattr(w->m, c, path, &st, NULL, 0) < 0 ||
	    !S_ISDIR(st.st_mode))
		return NULL;
	/* all of its attributes go back in the entry: as they are now */
	if (meta_getattr_now(w->m, c, path, &st) < 0 || !S_ISDIR(st.st_mode))
		return NULL;
	f = entry_new(w, c, path, &st, NULL);
	if (!f)
		return NULL;
	f->in_container = true;
	if (holds_pending(w, c->id, path))
		/* what lands in it before its entry moves its mtime: as the
		 * names were made, not as the container had it before */
		engine_clock(w->e, &f->st.st_mtim);
	if (entry_list(w, f) < 0) {
		writer_wfile_free(f);
		return writer_find(w, c->id, path); /* made meanwhile */
	}
	if (wfile_queue(f) < 0) {
		/* not journaled: the change goes at once instead */
		entry_drop(f);
		return NULL;
	}
	log_dbg("write-back: the attributes of directory '%s' in container "
		"'%s' are pending",
		path, c->name);
	return f; /* the caller's reference */
}

bool writer_absent(struct writer *w, const char *ctr_id, const char *path)
{
	char parent[PATH_MAX];
	bool absent;

	if (!w->flusher_started ||
	    pathmap_parent(path, parent, sizeof(parent)) < 0)
		return false;
	pthread_mutex_lock(&w->lock);
	absent = writer_new_dir_locked(w, ctr_id, parent) &&
		 !writer_find_locked(w, ctr_id, path);
	pthread_mutex_unlock(&w->lock);
	return absent;
}

int writer_listing(struct writer *w, const char *ctr_id, const char *dir,
		   struct cache_listing *out)
{
	size_t n = 0, dlen = strlen(dir), names = 0, off = 0, k = 0;
	struct wfile **list = NULL;
	bool fresh, *keep = NULL;

	if (!w->flusher_started)
		return 0;
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&w->lock);
	fresh = writer_new_dir_locked(w, ctr_id, dir);
	if (fresh)
		list = writer_collect_locked(w, ctr_id, dir, dlen, false, false,
					     true, &n);
	/* the names under w->lock, which guards a path and unlinked */
	for (size_t i = 0; fresh && i < n; i++)
		names += strlen(list[i]->path + dlen + 1) + 1;
	if (fresh) {
		out->ents = calloc(n ? n : 1, sizeof(*out->ents));
		out->names = malloc(names ? names : 1);
		keep = calloc(n ? n : 1, sizeof(*keep));
	}
	for (size_t i = 0; out->ents && out->names && keep && i < n; i++) {
		const char *name = list[i]->path + dlen + 1;
		size_t len = strlen(name) + 1;

		if (list[i]->unlinked)
			continue;
		keep[i] = true;
		memcpy(out->names + off, name, len);
		out->ents[out->n++].name = out->names + off;
		off += len;
	}
	pthread_mutex_unlock(&w->lock);
	if (!fresh)
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (keep && keep[i])
			wfile_stat(list[i], &out->ents[k++].st);
		wfile_put(list[i]);
	}
	free(keep);
	free(list);
	if (!out->ents || !out->names || !keep) {
		cache_listing_free(out);
		return -ENOMEM;
	}
	return 1;
}

int wfile_readlink(struct wfile *f, char *buf, size_t len)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (!S_ISLNK(f->st.st_mode) || !f->link)
		ret = -EINVAL;
	else if (strlen(f->link) >= len)
		ret = -ENAMETOOLONG;
	else
		memcpy(buf, f->link, strlen(f->link) + 1);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void writer_touch_parent(struct writer *w, const char *ctr_id, const char *path)
{
	char parent[PATH_MAX];
	struct wfile *d;

	if (!w->flusher_started ||
	    pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    !(d = writer_find(w, ctr_id, parent)))
		return;
	pthread_mutex_lock(&d->lock);
	/* as a name made in it moves it; not journaled (a replay puts the
	 * times the last change recorded) */
	if (wfile_is_dir(d) && d->dirty && !d->unlinked) {
		engine_clock(w->e, &d->st.st_ctim);
		d->st.st_mtim = d->st.st_ctim;
	}
	pthread_mutex_unlock(&d->lock);
	wfile_put(d);
}
