// SPDX-License-Identifier: GPL-2.0-or-later
/* The names of one hard-linked file, which share one record, and the link
 * counts of directories (docs/design.md, "One record for all names of a
 * file"). Every function runs under the cache's lock but
 * cache_names_of(). */
#include "cache.h"
#include "cache_int.h"

#include <limits.h>
#include <pthread.h>
#include <string.h>

/* Takes n out of c->inos. */
void cache_ino_unhook(struct cache *c, struct node *n)
{
	struct node **pp = &c->inos[n->hooked % INO_BUCKETS];

	for (; n->hooked && *pp; pp = &(*pp)->ino_next) {
		if (*pp == n) {
			*pp = n->ino_next;
			break;
		}
	}
	n->hooked = 0;
}

/* Puts n into c->inos under its number while it shares it, else out. */
void cache_ino_hook(struct cache *c, struct node *n)
{
	ino_t ino = n->attr.st.st_ino;
	bool shares =
	    (n->attr.flags & CACHE_SHARED_INO) && !S_ISDIR(n->attr.st.st_mode);

	if (n->hooked == ino && shares)
		return;
	cache_ino_unhook(c, n);
	if (!shares)
		return;
	n->hooked = ino;
	n->ino_next = c->inos[ino % INO_BUCKETS];
	c->inos[ino % INO_BUCKETS] = n;
}

/* Gives every other name of n's file (docs/design.md, "One record for all
 * names of a file") what n's entry says of the file, but the latest ctime
 * any of them has: a ctime never goes back (an answer for one name says
 * none, and a change seen through another has moved it). */
void cache_sync_names(struct cache *c, struct node *n)
{
	const struct stat *st = &n->attr.st;

	for (struct node *o = c->inos[n->hooked % INO_BUCKETS]; n->hooked && o;
	     o = o->ino_next)
		if (o != n && o->hooked == n->hooked &&
		    timespec_before(&n->attr.st.st_ctim, &o->attr.st.st_ctim))
			n->attr.st.st_ctim = o->attr.st.st_ctim;
	for (struct node *o = c->inos[n->hooked % INO_BUCKETS]; n->hooked && o;
	     o = o->ino_next) {
		if (o == n || o->hooked != n->hooked)
			continue;
		if (o->data && !cache_data_holds(c, o, st))
			cache_drop_data(c, o);
		o->attr.st.st_mode = st->st_mode;
		o->attr.st.st_uid = st->st_uid;
		o->attr.st.st_gid = st->st_gid;
		o->attr.st.st_nlink = st->st_nlink;
		o->attr.st.st_size = st->st_size;
		o->attr.st.st_blocks = st->st_blocks;
		o->attr.st.st_rdev = st->st_rdev;
		o->attr.st.st_atim = st->st_atim;
		o->attr.st.st_mtim = st->st_mtim;
		o->attr.st.st_ctim = st->st_ctim;
		o->attr.flags |= n->attr.flags & CACHE_OWNER;
	}
}

/* n's name is gone (ctrfs removed it): the other names of its file count
 * one link less, and one left alone no longer shares its number. */
void cache_name_gone(struct cache *c, struct node *n)
{
	ino_t ino = n->hooked;

	cache_ino_unhook(c, n);
	/* one left alone stays hooked: a rename forgets its old name before
	 * it stores the new one, which gives the count back to all */
	for (struct node *o = c->inos[ino % INO_BUCKETS]; ino && o;
	     o = o->ino_next)
		if (o->hooked == ino && o->attr.st.st_nlink > 1)
			o->attr.st.st_nlink--;
}

size_t cache_names_of(struct cache *c, const char *ns, const char *path,
		      char (*names)[PATH_MAX], size_t max)
{
	size_t nslen = strlen(ns) + 1, k = 0;
	struct node *n;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	for (struct node *o = n && n->hooked ? c->inos[n->hooked % INO_BUCKETS]
					     : NULL;
	     o && k < max; o = o->ino_next) {
		if (o == n || o->hooked != n->hooked ||
		    o->keylen - nslen > PATH_MAX ||
		    memcmp(o->key, ns, nslen) != 0)
			continue;
		memcpy(names[k++], o->key + nslen, o->keylen - nslen);
	}
	pthread_mutex_unlock(&c->lock);
	return k;
}

/* Sets a directory's link count from its listing: 2, and one for each
 * child that is a directory; 1 (cannot count) when a child is not cached. */
void cache_dir_nlink(struct cache *c, struct node *dir)
{
	char child[PATH_MAX];
	size_t nslen = strlen(dir->key) + 1;
	size_t base = dir->keylen - nslen - 1; /* the path's length */
	const char *p = dir->names;
	nlink_t nl = 2;

	base = base == 1 ? 0 : base; /* the root: children are "/name" */
	for (size_t i = 0; i < dir->nnames; i++, p += strlen(p) + 1) {
		size_t l = strlen(p);
		struct node *cn = NULL;

		if (base + 1 + l + 1 <= sizeof(child)) {
			memcpy(child, dir->key + nslen, base);
			child[base] = '/';
			memcpy(child + base + 1, p, l + 1);
			cn = cache_lookup(c, dir->key, child);
		}
		if (!cn) {
			nl = 1;
			break;
		}
		nl += S_ISDIR(cn->attr.st.st_mode);
	}
	dir->attr.st.st_nlink = nl;
}

void cache_dir_nlink_step(struct cache *c, struct node *dir, int child_dir,
			  bool add)
{
	nlink_t *nl = &dir->attr.st.st_nlink;

	if (*nl < 2 || child_dir < 0) /* could not count, or cannot now */
		cache_dir_nlink(c, dir);
	else if (child_dir)
		*nl = add ? *nl + 1 : *nl - 1;
}
