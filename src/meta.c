// SPDX-License-Identifier: GPL-2.0-or-later
/* The metadata rules: getattr from the cache and when to ask the engine
 * again (meta_head.c asks), listings, and what ctrfs's own changes do to
 * the cache (meta_committed(), meta_moved(), ...). */
#include "meta.h"
#include "meta_int.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "execlist.h"
#include "loader.h"
#include "log.h"
#include "pathmap.h"
#include "xattrs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

/* The cache's clock: a change seen in an answer gets the engine's time. */
static void cache_clock(void *arg, struct timespec *now)
{
	engine_clock(arg, now);
}

struct meta *meta_new(struct engine *e, struct cache *c, double ttl,
		      meta_busy_fn busy, struct spool *spool)
{
	struct meta *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->e = e;
	m->c = c;
	m->ttl = ttl;
	m->busy = busy;
	m->spool = spool;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	pthread_mutex_init(&m->probe_lock, NULL);
	m->xa = xattrs_new(XATTRS_ENTRIES, XATTRS_BYTES);
	if (!m->xa) {
		free(m);
		return NULL;
	}
	cache_set_clock(c, cache_clock, e);
	return m;
}

void meta_free(struct meta *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (m->started)
		pthread_join(m->ahead, NULL);
	free(m->claim);
	cache_blob_put(m->probe_blob);
	xattrs_free(m->xa);
	pthread_mutex_destroy(&m->probe_lock);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void meta_touch(struct meta *m, struct ctr *c, const char *path)
{
	cache_touch(m->c, c->id, path, now_mono());
}

/* Whether a cached entry confirmed at validated must be asked again. */
bool meta_stale(struct meta *m, struct ctr *c, double validated)
{
	if (now_mono() - validated < m->ttl)
		return false;
	return !(m->busy && m->busy(m->e, c->id));
}

/* ctrfs changed an entry of path's directory in a change that began at
 * wall-clock second since (see cache_dir_changed()). */
static void parent_changed(struct meta *m, struct ctr *c, const char *path,
			   long since)
{
	char parent[PATH_MAX];

	if (pathmap_parent(path, parent, sizeof(parent)) == 0 &&
	    strcmp(parent, path) != 0)
		cache_dir_changed(m->c, c->id, parent, since - 1,
				  engine_now(m->e) + 1, now_mono());
}

/* A PUT to path's directory landed: the engine resolved every directory
 * above it, so those stand validated as of now without a HEAD each once
 * their TTL is over (see docs/design.md, Writes, for the staleness this
 * allows). Not path's own directory: its mtime has just moved, and only
 * a HEAD tells to what. */
static void ancestors_proven(struct meta *m, struct ctr *c, const char *path)
{
	char p[PATH_MAX], parent[PATH_MAX];
	double now = now_mono();

	if (pathmap_parent(path, p, sizeof(p)) < 0)
		return;
	while (pathmap_parent(p, parent, sizeof(parent)) == 0 &&
	       strcmp(parent, p) != 0) {
		cache_proven(m->c, c->id, parent, now);
		memcpy(p, parent, strlen(parent) + 1);
	}
}

void meta_committed(struct meta *m, struct ctr *c, const char *path,
		    const struct stat *st, long since)
{
	meta_committed_link(m, c, path, st, NULL, since);
}

void meta_committed_link(struct meta *m, struct ctr *c, const char *path,
			 const struct stat *st, const char *link, long since)
{
	cache_forget(m->c, c->id, path, !st || S_ISDIR(st->st_mode));
	if (st) {
		struct cache_attr a = {.st = *st,
				       .validated = now_mono(),
				       .flags = CACHE_OWNER | CACHE_TIMES};

		engine_clock(m->e, &a.st.st_ctim); /* a new file there */
		fill_defaults(&a.st);
		cache_put(m->c, c->id, path, &a, link);
		cache_listing_add(m->c, c->id, path);
		if (S_ISDIR(st->st_mode)) { /* made by us: empty */
			cache_set_listing(m->c, c->id, path, "", 0, 0,
					  engine_now(m->e));
			/* its mtime is of our making, like a change in it */
			cache_dir_changed(m->c, c->id, path, since - 1,
					  engine_now(m->e) + 1, now_mono());
			cache_touch(m->c, c->id, path, now_mono());
		}
	}
	parent_changed(m, c, path, since);
	ancestors_proven(m, c, path);
}

void meta_moved(struct meta *m, struct ctr *c, const char *from, const char *to,
		long since)
{
	struct cache_attr a, b;
	char lbuf[PATH_MAX];
	/* `mv` keeps a file's number, type, mode, owner, size and mtime:
	 * what was whole under the old name is so under the new one (a
	 * default-mode `rsync -a` renames every file it writes, and asking
	 * the new name again cost a HEAD and a GET for its owner each) */
	bool keep = cache_get(m->c, c->id, from, &a, lbuf, sizeof(lbuf)) == 0 &&
		    (a.flags & CACHE_OWNER);

	/* two names of one file: one of them went */
	if (keep && cache_get(m->c, c->id, to, &b, NULL, 0) == 0 &&
	    b.st.st_ino == a.st.st_ino && a.st.st_nlink > 1)
		a.st.st_nlink--;
	meta_committed(m, c, from, NULL, since);
	if (!keep) {
		meta_appeared(m, c, to, since);
		return;
	}
	cache_forget(m->c, c->id, to, true);
	/* a directory comes without its listing, and is asked again: moved
	 * to another parent, its `..` changed */
	if (S_ISDIR(a.st.st_mode))
		a.validated = 0;
	engine_clock(m->e, &a.st.st_ctim); /* as rename(2) does */
	a.flags |= CACHE_TIMES;
	cache_put(m->c, c->id, to, &a, (a.flags & CACHE_LINK) ? lbuf : NULL);
	cache_listing_add(m->c, c->id, to);
	parent_changed(m, c, to, since);
}

void meta_appeared(struct meta *m, struct ctr *c, const char *path, long since)
{
	cache_forget(m->c, c->id, path, true);
	cache_listing_add(m->c, c->id, path);
	parent_changed(m, c, path, since);
}

int meta_content(struct meta *m, const struct ctr *c, const char *path, int *fd,
		 off_t *off, off_t *len)
{
	return cache_get_data(m->c, c->id, path, fd, off, len);
}

int meta_content_now(struct meta *m, const struct ctr *c, const char *path,
		     int *fd, off_t *off, off_t *len)
{
	struct ctr cc = *c;
	struct cache_attr a;
	off_t o, l;

	/* nothing to confirm without content: no HEAD then */
	if (cache_get_data(m->c, c->id, path, NULL, &o, &l) < 0)
		return -1;
	if (cache_get(m->c, c->id, path, &a, NULL, 0) < 0 ||
	    !S_ISREG(a.st.st_mode) ||
	    meta_revalidate(m, &cc, path, &a, true) < 0)
		return -1;
	return cache_get_data(m->c, c->id, path, fd, off, len);
}

void meta_update(struct meta *m, struct ctr *c, const char *path,
		 const struct stat *st)
{
	/* mode, owner or times changed; a directory's entries did not */
	struct cache_attr a = {.st = *st,
			       .validated = now_mono(),
			       .flags = CACHE_OWNER | CACHE_SAME_ENTRIES |
					CACHE_TIMES};

	engine_clock(m->e, &a.st.st_ctim);
	fill_defaults(&a.st);
	cache_put(m->c, c->id, path, &a, NULL);
}

void meta_changed(struct meta *m, struct ctr *c, const char *path)
{
	struct cache_attr a;

	if (cache_get(m->c, c->id, path, &a, NULL, 0) < 0)
		return;
	engine_clock(m->e, &a.st.st_ctim);
	a.flags |= CACHE_TIMES | CACHE_SAME_ENTRIES;
	cache_put(m->c, c->id, path, &a, NULL);
}

void meta_forget(struct meta *m, struct ctr *c, const char *path)
{
	cache_remove(m->c, c->id, path);
}

/*
 * Whether path's directory has a listing, whole as of less than the TTL
 * ago, that lacks it. A listing past the TTL is confirmed with one HEAD of
 * the directory (an unchanged mtime, or one of ctrfs's own changes, keeps
 * it): a tool creating files asks for many names that are not there yet,
 * and one HEAD per directory and TTL answers them all.
 */
static bool absent(struct meta *m, struct ctr *c, const char *path)
{
	char parent[PATH_MAX];
	struct cache_attr a;
	int in = cache_in_listing(m->c, c->id, path, now_mono() - m->ttl);

	if (in >= 0)
		return in == 0;
	if (cache_in_listing(m->c, c->id, path, -1.0) != 0 ||
	    pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    strcmp(parent, path) == 0 ||
	    cache_get(m->c, c->id, parent, &a, NULL, 0) < 0 ||
	    !meta_stale(m, c, a.validated) ||
	    meta_revalidate(m, c, parent, &a, true) < 0)
		return false;
	return cache_in_listing(m->c, c->id, path, now_mono() - m->ttl) == 0;
}

/*
 * path's HEAD or GET met a symlink loop. Most likely path is a link in it
 * (the kernel walks a path itself, so what reaches us has no link above
 * its last name, unless the container changed since): then the tar of its
 * directory holds its header, as a tar never follows a link. A loop above
 * path fails that GET too, with ELOOP, as a local walk would.
 */
static int loop_link(struct meta *m, struct ctr *c, const char *path)
{
	char parent[PATH_MAX];
	struct cache_attr a;
	bool whole = false;
	int ret;

	if (pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    strcmp(parent, path) == 0)
		return -ELOOP;
	/* capped, as a probe; if that stops before path, the directory's
	 * listing as readdir would read it */
	ret = loader_tree(m, c, parent, PROBE_TREE, false, &whole);
	if (ret == 0 && !whole && cache_get(m->c, c->id, path, &a, NULL, 0) < 0)
		ret = loader_tree(m, c, parent, 0, true, &whole);
	if (ret < 0)
		return ret;
	if (cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    (a.flags & CACHE_OWNER) && !meta_stale(m, c, a.validated))
		return 0;
	if (whole)
		return -ENOENT;
	log_fail(c, "stat", path,
		 "a symlink (in a loop, or on Podman) whose directory's "
		 "listing stopped before it");
	return -EIO;
}

int meta_getattr_now(struct meta *m, struct ctr *c, const char *path,
		     struct stat *st)
{
	struct cache_attr a;
	int ret;

	if (cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    S_ISDIR(a.st.st_mode) && !(m->busy && m->busy(m->e, c->id))) {
		ret = meta_revalidate(m, c, path, &a, true);
		if (ret < 0)
			return ret;
	}
	return meta_getattr(m, c, path, st, NULL, 0);
}

int meta_getattr(struct meta *m, struct ctr *c, const char *path,
		 struct stat *st, char *link, size_t linklen)
{
	struct cache_attr a;
	char lbuf[PATH_MAX];
	bool have;
	int ret;

	have = cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) == 0;
	if (!have && absent(m, c, path))
		return -ENOENT; /* its directory's listing lacks it */
	/* a walk's second stale step, before the thread HEADs its window */
	if (have && meta_stale(m, c, a.validated) &&
	    meta_relist_parent(m, c, path) &&
	    cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0) {
		if (absent(m, c, path))
			return -ENOENT; /* gone from the new listing */
		have = false;
	}
	if (have && meta_stale(m, c, a.validated) &&
	    meta_wait_claim(m, c, path) &&
	    cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
		have = false; /* the thread found it gone: ask again */
	if (!have || meta_stale(m, c, a.validated)) {
		if (have)
			meta_hint_walk(m, c, path);
		ret = meta_revalidate(m, c, path, &a, have);
		if (ret == -ELOOP)
			ret = loop_link(m, c, path);
		if (ret < 0)
			return ret;
		if (cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
			return -EIO;
	}
	if (!(a.flags & CACHE_OWNER) ||
	    (link && S_ISLNK(a.st.st_mode) && !(a.flags & CACHE_LINK))) {
		/* a directory's owner comes with the start of its tar, and
		 * a small subtree with its listings for little more */
		/* Podman's GET of a link gives its target's file: a link's
		 * header comes from its directory's tar, as for a loop */
		ret = S_ISDIR(a.st.st_mode)
			  ? loader_tree(m, c, path, PROBE_TREE, false, NULL)
		      : S_ISLNK(a.st.st_mode) &&
			      engine_quirks(m->e)->get_follows_links
			  ? loop_link(m, c, path)
			  : meta_probe(m, c, path);
		if (ret == -ELOOP && !S_ISDIR(a.st.st_mode))
			ret = loop_link(m, c, path);
		if (ret < 0)
			return ret;
		if (cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
			return -EIO;
	}
	*st = a.st;
	if (link && linklen) {
		if (!S_ISLNK(a.st.st_mode) || !(a.flags & CACHE_LINK))
			return -EINVAL;
		if (strlen(lbuf) >= linklen)
			return -ENAMETOOLONG;
		memcpy(link, lbuf, strlen(lbuf) + 1);
	}
	return 0;
}

int meta_listing(struct meta *m, struct ctr *c, const char *dir,
		 struct cache_listing *out)
{
	struct cache_attr a;
	bool by_exec = execlist_ok(m, c), whole, loaded = false;
	int ret, tries = 0, status;
	double t0;

	for (;;) {
		bool have = cache_get(m->c, c->id, dir, &a, NULL, 0) == 0;

		/* not after a load of its own: a GET longer than the TTL
		 * left dir stale, and a HEAD would drop a listing younger
		 * than dir's mtime second, so that none was ever served */
		if (have && !loaded && meta_stale(m, c, a.validated)) {
			ret = meta_revalidate(m, c, dir, &a, true);
			if (ret < 0)
				return ret;
		}
		ret = cache_listing(m->c, c->id, dir, out);
		if (ret == 0)
			return 0;
		if (tries++ == 2)
			break;
		t0 = now_mono();
		ret = loader_tree(m, c, dir, 0, by_exec, &whole);
		if (ret < 0)
			return ret;
		loaded = true;
		if (!whole && by_exec &&
		    (ret = execlist_list(m, c, dir, t0, &status)) < 0) {
			/* not counted: it could not give a listing */
			if (status == 126 || status == 127) /* no such tool */
				execlist_no_tools(m, c);
			by_exec = false;
			tries--;
		}
	}
	log_fail(c, "list", dir, "the cache cannot hold the listing");
	return -EIO;
}

int meta_xattrs(struct meta *m, struct ctr *c, const char *path,
		const struct stat *st, char **pack, size_t *len)
{
	struct cache_attr a;
	int ret = xattrs_get(m->xa, c->id, path, st, pack, len);

	if (ret != -ENOENT)
		return ret;
	if (S_ISLNK(st->st_mode) && engine_quirks(m->e)->get_follows_links) {
		/* Podman's GET of a link gives its target's file, whose
		 * header must not stand for the link: none known */
		*pack = NULL;
		*len = 0;
		return 0;
	}
	/* a tar header says them: the first entry of a GET of the file */
	ret = meta_probe(m, c, path);
	if (ret < 0)
		return ret;
	if (cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    xattrs_get(m->xa, c->id, path, &a.st, pack, len) == 0)
		return 0;
	*pack = NULL; /* not kept (no memory): none known */
	*len = 0;
	return 0;
}

int meta_cached(struct meta *m, const struct ctr *c, const char *path,
		struct stat *st)
{
	struct cache_attr a;

	if (cache_get(m->c, c->id, path, &a, NULL, 0) < 0 ||
	    !(a.flags & CACHE_OWNER))
		return -ENOENT;
	*st = a.st;
	return 0;
}

void meta_keep_content(struct meta *m, const struct ctr *c, const char *path,
		       int fd, off_t size)
{
	struct cache_blob *b = cache_blob_new(fd);

	if (!b) {
		close(fd);
		return;
	}
	/* (cache_set_data() checks that the size is the cached one) */
	cache_set_data(m->c, c->id, path, b, 0, size, engine_now(m->e));
	cache_blob_put(b);
}

void meta_xattrs_put(struct meta *m, const struct ctr *c, const char *path,
		     const struct stat *st, const char *pack, size_t len)
{
	xattrs_put(m->xa, c->id, path, st, pack, len);
}
