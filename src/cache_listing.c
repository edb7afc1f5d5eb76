// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Directory listings in the cache: a directory's entry holds its children's
 * names, packed (struct node's names); each child has an entry of its own.
 * Set whole from a tar or a find, kept in step with ctrfs's own changes
 * (cache_listing_add(), cache_forget()), read back with the children's
 * attributes (cache_listing()) or summed up for a walk's choice of one GET
 * against a HEAD per entry (cache_subtree()).
 */
#include "cache.h"
#include "cache_int.h"
#include "pathmap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int cache_set_listing(struct cache *c, const char *ns, const char *dirpath,
		      const char *names, size_t count, size_t bytes,
		      long snapshot)
{
	struct node *n;
	int ret = -ENOENT;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, dirpath);
	if (n && S_ISDIR(n->attr.st.st_mode)) {
		char *copy = malloc(bytes ? bytes : 1);

		ret = -ENOMEM;
		if (copy) {
			if (bytes)
				memcpy(copy, names, bytes);
			cache_drop_listing(n);
			n->names = copy;
			n->nnames = count;
			n->names_bytes = bytes;
			n->snapshot = snapshot;
			n->listed_at = n->attr.validated;
			cache_dir_nlink(c, n);
			ret = 0;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int cache_listing(struct cache *c, const char *ns, const char *dirpath,
		  struct cache_listing *out)
{
	char child[8192];
	size_t dlen = strlen(dirpath);
	struct node *dir;
	const char *p;
	int ret = -ENOENT;

	memset(out, 0, sizeof(*out));
	if (dlen == 1)
		dlen = 0; /* the root: children are "/name" */
	pthread_mutex_lock(&c->lock);
	dir = cache_lookup(c, ns, dirpath);
	if (!dir || !dir->names)
		goto out_unlock;
	ret = -ENOMEM;
	out->ents = calloc(dir->nnames ? dir->nnames : 1, sizeof(*out->ents));
	out->names = malloc(dir->names_bytes ? dir->names_bytes : 1);
	if (!out->ents || !out->names)
		goto out_unlock;
	memcpy(out->names, dir->names, dir->names_bytes);
	p = out->names;
	for (size_t i = 0; i < dir->nnames; i++) {
		size_t nlen = strlen(p);
		struct node *cn;

		ret = -ESTALE;
		if (dlen + 1 + nlen + 1 > sizeof(child))
			goto out_unlock;
		memcpy(child, dirpath, dlen);
		child[dlen] = '/';
		memcpy(child + dlen + 1, p, nlen + 1);
		cn = cache_lookup(c, ns, child);
		if (!cn)
			goto out_unlock;
		out->ents[i].name = p;
		out->ents[i].st = cn->attr.st;
		p += nlen + 1;
	}
	out->n = dir->nnames;
	ret = 0;
out_unlock:
	pthread_mutex_unlock(&c->lock);
	if (ret < 0)
		cache_listing_free(out);
	return ret;
}

struct subtree {
	struct cache *c;
	const char *ns;
	size_t max_entries, entries;
	off_t max_bytes, bytes;
	double stale_before;
	size_t stale;
};

/* Adds the entries below the directory at path (a buffer of len bytes,
 * PATH_MAX, that it extends and restores) to t. Under the cache lock. */
static int subtree_walk(struct subtree *t, char *path, size_t len)
{
	struct node *dir = cache_lookup(t->c, t->ns, path);
	const char *p;
	size_t base = len == 1 ? 0 : len; /* the root: "/name" */

	if (!dir || !dir->names)
		return -ENOENT;
	p = dir->names;
	for (size_t i = 0; i < dir->nnames; i++, p += strlen(p) + 1) {
		size_t nlen = strlen(p);
		struct node *cn;
		int ret;

		if (base + 1 + nlen + 1 > PATH_MAX)
			return -E2BIG;
		path[base] = '/';
		memcpy(path + base + 1, p, nlen + 1);
		cn = cache_lookup(t->c, t->ns, path);
		if (!cn) {
			path[len] = '\0';
			return -ENOENT;
		}
		if (cn->attr.validated < t->stale_before)
			t->stale++;
		/* a header, maybe a pax header, and the data in blocks */
		t->bytes += 1024;
		if (S_ISREG(cn->attr.st.st_mode))
			t->bytes += (cn->attr.st.st_size + 511) / 512 * 512;
		if (++t->entries > t->max_entries || t->bytes > t->max_bytes) {
			path[len] = '\0';
			return -E2BIG;
		}
		if (S_ISDIR(cn->attr.st.st_mode)) {
			ret = subtree_walk(t, path, base + 1 + nlen);
			if (ret < 0) {
				path[len] = '\0';
				return ret;
			}
		}
	}
	path[len] = '\0';
	return 0;
}

int cache_subtree(struct cache *c, const char *ns, const char *dirpath,
		  size_t max_entries, off_t max_bytes, double stale_before,
		  struct cache_subtree *out)
{
	struct subtree t = {.c = c,
			    .ns = ns,
			    .max_entries = max_entries,
			    .max_bytes = max_bytes,
			    .stale_before = stale_before};
	char path[PATH_MAX];
	size_t len = strlen(dirpath);
	struct node *dir;
	int ret;

	if (len >= sizeof(path))
		return -E2BIG;
	memcpy(path, dirpath, len + 1);
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->lock);
	ret = subtree_walk(&t, path, len);
	dir = ret == 0 ? cache_lookup(c, ns, dirpath) : NULL;
	if (dir) {
		const char *p = dir->names;
		size_t base = len == 1 ? 0 : len;

		for (size_t i = 0; i < dir->nnames; i++, p += strlen(p) + 1) {
			struct node *cn;

			path[base] = '/';
			memcpy(path + base + 1, p, strlen(p) + 1);
			cn = cache_lookup(c, ns, path);
			if (cn && cn->attr.validated < stale_before)
				out->stale_children++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	out->entries = t.entries;
	out->bytes = t.bytes;
	out->stale = t.stale;
	return ret;
}

void cache_listing_free(struct cache_listing *l)
{
	free(l->ents);
	free(l->names);
	memset(l, 0, sizeof(*l));
}

void cache_split(const char *path, char *parent, size_t len, const char **base)
{
	pathmap_parent(path, parent, len);
	*base = strrchr(path, '/') + 1;
}

/* Index of name in a listing, or -1. */
static long listing_find(const struct node *dir, const char *name, size_t *off)
{
	const char *p = dir->names;

	for (size_t i = 0; i < dir->nnames; i++) {
		size_t l = strlen(p) + 1;

		if (strcmp(p, name) == 0) {
			*off = (size_t)(p - dir->names);
			return (long)i;
		}
		p += l;
	}
	return -1;
}

bool cache_listing_del(struct node *dir, const char *name)
{
	size_t off, l;

	if (!dir || !dir->names || listing_find(dir, name, &off) < 0)
		return false;
	l = strlen(dir->names + off) + 1;
	memmove(dir->names + off, dir->names + off + l,
		dir->names_bytes - off - l);
	dir->names_bytes -= l;
	dir->nnames--;
	return true;
}

void cache_listing_add(struct cache *c, const char *ns, const char *path)
{
	char parent[4096];
	const char *base;
	struct node *dir, *cn;
	size_t off;

	cache_split(path, parent, sizeof(parent), &base);
	pthread_mutex_lock(&c->lock);
	dir = cache_lookup(c, ns, parent);
	if (dir && dir->names && listing_find(dir, base, &off) < 0) {
		size_t l = strlen(base) + 1;
		char *nb = realloc(dir->names, dir->names_bytes + l);

		if (nb) {
			memcpy(nb + dir->names_bytes, base, l);
			dir->names = nb;
			dir->names_bytes += l;
			dir->nnames++;
			cn = cache_lookup(c, ns, path);
			cache_dir_nlink_step(
			    c, dir, cn ? S_ISDIR(cn->attr.st.st_mode) : -1,
			    true);
		} else {
			cache_drop_listing(dir);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

int cache_in_listing(struct cache *c, const char *ns, const char *path,
		     double fresh_after)
{
	char parent[4096];
	const char *base;
	struct node *dir;
	size_t off;
	int ret = -1;

	cache_split(path, parent, sizeof(parent), &base);
	if (strcmp(parent, path) == 0)
		return -1;
	pthread_mutex_lock(&c->lock);
	dir = cache_lookup(c, ns, parent);
	if (dir && dir->names && dir->listed_at >= fresh_after)
		ret = listing_find(dir, base, &off) >= 0;
	pthread_mutex_unlock(&c->lock);
	return ret;
}
