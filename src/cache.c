// SPDX-License-Identifier: GPL-2.0-or-later
#include "cache.h"
#include "cache_int.h"
#include "pathmap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* numbers handed out so far, process-wide: never one twice */
static _Atomic uint64_t last_ino = 1; /* 1: the mount's root */

ino_t cache_new_ino(void)
{
	return (ino_t)atomic_fetch_add(&last_ino, 1) + 1;
}

struct cache *cache_new(size_t max_entries)
{
	struct cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->nbuckets = 1024;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return NULL;
	}
	c->inos = calloc(INO_BUCKETS, sizeof(*c->inos));
	if (!c->inos) {
		free(c->buckets);
		free(c);
		return NULL;
	}
	c->max = max_entries;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void cache_set_clock(struct cache *c, cache_clock_fn clock, void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->clock = clock;
	c->clock_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

static void node_free(struct node *n)
{
	cache_blob_put(n->data);
	free(n->key);
	free(n->link);
	free(n->names);
	free(n);
}

static void clear_locked(struct cache *c)
{
	c->data_bytes = 0;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct node *n = c->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			node_free(n);
		}
		c->buckets[i] = NULL;
	}
	memset(c->inos, 0, INO_BUCKETS * sizeof(*c->inos));
	c->count = 0;
}

void cache_free(struct cache *c)
{
	if (!c)
		return;
	clear_locked(c);
	free(c->buckets);
	free(c->inos);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void grow(struct cache *c)
{
	size_t nb = c->nbuckets * 2;
	struct node **b = calloc(nb, sizeof(*b));

	if (!b)
		return;
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct node *n = c->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			n->next = b[n->hash % nb];
			b[n->hash % nb] = n;
		}
	}
	free(c->buckets);
	c->buckets = b;
	c->nbuckets = nb;
}

int cache_get(struct cache *c, const char *ns, const char *path,
	      struct cache_attr *attr, char *link, size_t linklen)
{
	struct node *n;
	int ret = -ENOENT;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	if (n) {
		*attr = n->attr;
		if (link && linklen) {
			link[0] = '\0';
			size_t l = n->link ? strlen(n->link) : 0;

			if (n->link && l < linklen)
				memcpy(link, n->link, l + 1);
			else
				attr->flags &= ~CACHE_LINK;
		}
		ret = 0;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* Whether n's listing is still whole for a directory mtime (in seconds)
 * the engine reports now: unchanged and older than the listing by more than
 * a second, or within a change ctrfs made itself. */
static bool listing_holds(const struct node *n, long mtime, bool same_mtime)
{
	return (same_mtime && mtime + 1 < n->snapshot) ||
	       (mtime >= n->own_from && mtime <= n->own_until);
}

/*
 * A listing that holds for mtime because of a change of ours may miss a
 * change someone else made in the same seconds: it stayed until the
 * directory changed again, however long that took (a file made in the
 * container a second after ctrfs wrote to its directory was not seen at
 * all). Confirmed at now, once those seconds are over, it is to be listed
 * again, once: true then, and the window is closed (the caller drops the
 * listing).
 */
static bool own_window_over(struct node *n, long mtime, double now)
{
	if (!n->own_settled || now < n->own_settled || mtime < n->own_from ||
	    mtime > n->own_until)
		return false;
	n->own_from = 1;
	n->own_until = 0;
	n->own_settled = 0;
	return true;
}

/* Whether an answer about the same file (type, size, mtime) says what
 * only a ctime would: another mode, owner or link count (a chmod, chown or
 * link inside the container). Owners and counts only where both say them;
 * a directory's count is ctrfs's own (its listing's subdirectories). */
static bool inode_changed(const struct cache_attr *old,
			  const struct cache_attr *attr)
{
	const struct stat *o = &old->st, *s = &attr->st;

	if (o->st_mode != s->st_mode)
		return true;
	if (!(old->flags & CACHE_OWNER) || !(attr->flags & CACHE_OWNER))
		return false;
	return o->st_uid != s->st_uid || o->st_gid != s->st_gid ||
	       (!S_ISDIR(s->st_mode) && !(attr->flags & CACHE_NLINK_COUNTED) &&
		o->st_nlink != s->st_nlink);
}

/* merge()'s times: what the old entry knew finer or the new source does
 * not say is kept (n->attr is already the new answer). */
static void merge_times(struct cache *c, struct node *n,
			const struct cache_attr *old,
			const struct cache_attr *attr, bool same_type,
			bool same_mtime)
{
	/* a tar header's mtime has whole seconds: the same second from it,
	 * same type and size, is the time a HEAD or our own commit gave to
	 * the nanosecond; a time never changes unless the file did (vim
	 * warns of a file changed since it was read otherwise) */
	if (same_type && same_mtime && attr->st.st_mtim.tv_nsec == 0 &&
	    old->st.st_mtim.tv_nsec != 0 && old->st.st_size == attr->st.st_size)
		n->attr.st.st_mtim = old->st.st_mtim; /* Podman: a second on */
	n->attr.flags &= ~CACHE_TIMES;
	if (same_type) {
		bool same =
		    old->st.st_size == attr->st.st_size &&
		    old->st.st_mtim.tv_sec == n->attr.st.st_mtim.tv_sec &&
		    old->st.st_mtim.tv_nsec == n->attr.st.st_mtim.tv_nsec;
		bool ours = attr->flags & CACHE_TIMES;
		struct stat *st = &n->attr.st;

		/* no source says an atime or a ctime: the file's own stay
		 * while it is the same file, and a change moves them only
		 * forward; ctrfs's own change never moves a ctime back */
		if (!ours &&
		    (same || !timespec_before(&old->st.st_atim, &st->st_atim)))
			st->st_atim = old->st.st_atim;
		if ((!ours && same) ||
		    timespec_before(&st->st_ctim, &old->st.st_ctim))
			st->st_ctim = old->st.st_ctim;
		/* changed inside, seen now: the ctime is when we saw it */
		if (!ours && same && c->clock && inode_changed(old, attr)) {
			struct timespec now;

			c->clock(c->clock_arg, &now);
			if (timespec_before(&st->st_ctim, &now))
				st->st_ctim = now;
		}
	}
}

/* Applies the merge rules of cache_put() to an existing node. */
static void merge(struct cache *c, struct node *n,
		  const struct cache_attr *attr, const char *link)
{
	struct cache_attr old = n->attr;
	bool same_type =
	    (old.st.st_mode & S_IFMT) == (attr->st.st_mode & S_IFMT);
	bool same_mtime =
	    cache_same_second(c, &old.st.st_mtim, &attr->st.st_mtim);
	bool same_entries = attr->flags & CACHE_SAME_ENTRIES;
	bool holds;

	if (n->data && !cache_data_holds(c, n, &attr->st))
		cache_drop_data(c, n);
	n->attr = *attr;
	n->attr.flags &= ~(CACHE_SAME_ENTRIES | CACHE_NLINK_COUNTED);
	merge_times(c, n, &old, attr, same_type, same_mtime);
	if (!attr->st.st_ino) {
		bool changed = !same_type || !same_mtime ||
			       old.st.st_size != attr->st.st_size;

		n->attr.st.st_ino = old.st.st_ino;
		n->attr.flags |= old.flags & CACHE_SHARED_INO;
		/* another type is another file; a shared number whose
		 * file changed may be a link that broke */
		if (!same_type || (changed && (old.flags & CACHE_SHARED_INO))) {
			n->attr.st.st_ino = cache_new_ino();
			n->attr.flags &= ~CACHE_SHARED_INO;
		}
	} else {
		n->attr.flags &= ~CACHE_SHARED_INO;
		if (attr->st.st_nlink > 1 && !S_ISDIR(attr->st.st_mode))
			n->attr.flags |= CACHE_SHARED_INO;
	}
	if (!(attr->flags & CACHE_OWNER) && (old.flags & CACHE_OWNER) &&
	    same_type) {
		n->attr.st.st_uid = old.st.st_uid;
		n->attr.st.st_gid = old.st.st_gid;
		n->attr.st.st_nlink = old.st.st_nlink;
		n->attr.flags |= CACHE_OWNER;
	}
	if (link) {
		free(n->link);
		n->link = strdup(link);
		n->attr.flags |= n->link ? CACHE_LINK : 0;
	} else if (n->link && same_type && same_mtime &&
		   S_ISLNK(attr->st.st_mode)) {
		n->attr.flags |= CACHE_LINK;
	} else {
		free(n->link);
		n->link = NULL;
		n->attr.flags &= ~CACHE_LINK;
	}
	if (!n->names)
		return;
	holds = listing_holds(n, attr->st.st_mtim.tv_sec, same_mtime);
	if (!same_type || !(holds || same_entries) ||
	    (!same_entries &&
	     own_window_over(n, attr->st.st_mtim.tv_sec, attr->validated)))
		cache_drop_listing(n);
	else if (holds && attr->validated > n->listed_at)
		n->listed_at = attr->validated; /* whole as of this answer */
	/* same_entries alone keeps the names as confirmed before: ctrfs
	 * changed no entry, but cannot tell that nobody else did */
}

bool cache_put(struct cache *c, const char *ns, const char *path,
	       const struct cache_attr *attr, const char *link)
{
	char key[8192];
	size_t len = cache_key(key, sizeof(key), ns, path);
	uint64_t h = cache_hash(key, len);
	struct node **pp, *n;
	bool full;

	if (!len)
		return true;
	pthread_mutex_lock(&c->lock);
	pp = cache_find_slot(c, key, len, h);
	if (*pp) {
		struct cache_attr now = *attr;

		n = *pp;
		/* asked before ctrfs's last change of it was over: the
		 * answer may be from before that change (a stat racing a
		 * rename in the directory), so it is asked again */
		if (now.validated <= n->changed_at)
			now.validated = 0;
		merge(c, n, &now, link);
		goto out_sync;
	}
	if (c->count >= c->max) {
		clear_locked(c);
		pp = cache_find_slot(c, key, len, h);
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		goto out;
	n->key = malloc(len);
	if (!n->key) {
		free(n);
		goto out;
	}
	memcpy(n->key, key, len);
	n->keylen = len;
	n->hash = h;
	n->attr = *attr;
	n->attr.flags &= ~(CACHE_LINK | CACHE_SAME_ENTRIES | CACHE_SHARED_INO |
			   CACHE_TIMES | CACHE_NLINK_COUNTED);
	if (!n->attr.st.st_ino)
		n->attr.st.st_ino = cache_new_ino();
	else if (attr->st.st_nlink > 1 && !S_ISDIR(attr->st.st_mode))
		n->attr.flags |= CACHE_SHARED_INO;
	n->own_from = 1; /* no change of ours yet: an empty window */
	if (link) {
		n->link = strdup(link);
		if (n->link)
			n->attr.flags |= CACHE_LINK;
	}
	*pp = n;
	c->count++;
	if (c->count > c->nbuckets)
		grow(c);
out_sync:
	cache_ino_hook(c, n);
	cache_sync_names(c, n);
	if (S_ISDIR(n->attr.st.st_mode) && n->names)
		cache_dir_nlink(c, n);
out:
	full = c->count >= c->max - c->max / 8;
	pthread_mutex_unlock(&c->lock);
	return full;
}

void cache_confirm(struct cache *c, const char *ns, const char *path,
		   const struct stat *st, double now)
{
	struct node *n;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	if (n) {
		if (st && n->data && !cache_data_holds(c, n, st))
			cache_drop_data(c, n);
		if (now <= n->changed_at)
			goto out; /* asked before our change of it was over */
		n->attr.validated = now;
		if (n->names &&
		    (!listing_holds(n, n->attr.st.st_mtim.tv_sec, true) ||
		     own_window_over(n, n->attr.st.st_mtim.tv_sec, now)))
			cache_drop_listing(
			    n); /* cannot be confirmed: list again */
		else if (n->names && now > n->listed_at)
			n->listed_at = now; /* confirmed whole */
	}
out:
	pthread_mutex_unlock(&c->lock);
}

void cache_proven(struct cache *c, const char *ns, const char *path, double now)
{
	struct node *n;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	/* not one whose mtime ctrfs moved since (validated 0, by
	 * cache_dir_changed()): the PUT proves it is there, not what its
	 * mtime is now */
	if (n && S_ISDIR(n->attr.st.st_mode) && n->attr.validated > 0 &&
	    now > n->attr.validated)
		n->attr.validated = now;
	pthread_mutex_unlock(&c->lock);
}

void cache_touch(struct cache *c, const char *ns, const char *path, double now)
{
	cache_confirm(c, ns, path, NULL, now);
}

static void unlink_node(struct cache *c, struct node *victim)
{
	struct node **pp = &c->buckets[victim->hash % c->nbuckets];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == victim) {
			*pp = victim->next;
			cache_ino_unhook(c, victim);
			c->data_bytes -= victim->datalen;
			node_free(victim);
			c->count--;
			return;
		}
	}
}

/* Forgets everything strictly below path. */
static void remove_below_locked(struct cache *c, const char *ns,
				const char *path)
{
	size_t nslen = strlen(ns) + 1, plen = strlen(path);

	if (plen == 1)
		plen = 0; /* the root: everything is below */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct node **pp = &c->buckets[i];

		while (*pp) {
			struct node *n = *pp;
			const char *p = n->key + nslen;

			if (n->keylen > nslen &&
			    memcmp(n->key, ns, nslen) == 0 &&
			    strncmp(p, path, plen) == 0 && p[plen] == '/') {
				*pp = n->next;
				cache_ino_unhook(c,
						 n); /* moved or gone with it */
				c->data_bytes -= n->datalen;
				node_free(n);
				c->count--;
			} else {
				pp = &n->next;
			}
		}
	}
}

void cache_remove(struct cache *c, const char *ns, const char *path)
{
	char parent[4096];
	struct node *n;

	pathmap_parent(path, parent, sizeof(parent));
	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	if (n && S_ISDIR(n->attr.st.st_mode))
		remove_below_locked(c, ns, path); /* gone with it */
	if (n)
		unlink_node(c, n);
	if (strcmp(parent, path) != 0) {
		n = cache_lookup(c, ns, parent);
		if (n)
			cache_drop_listing(n);
	}
	pthread_mutex_unlock(&c->lock);
}

void cache_drop_ns(struct cache *c, const char *ns)
{
	size_t nslen = strlen(ns) + 1;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct node **pp = &c->buckets[i];

		while (*pp) {
			struct node *n = *pp;

			if (n->keylen > nslen &&
			    memcmp(n->key, ns, nslen) == 0) {
				*pp = n->next;
				cache_ino_unhook(c, n);
				c->data_bytes -= n->datalen;
				node_free(n);
				c->count--;
			} else {
				pp = &n->next;
			}
		}
	}
	pthread_mutex_unlock(&c->lock);
}

size_t cache_count(struct cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->count;
	pthread_mutex_unlock(&c->lock);
	return n;
}

void cache_forget(struct cache *c, const char *ns, const char *path, bool tree)
{
	char parent[4096];
	const char *base;
	struct node *n;
	int was_dir = -1; /* not cached */

	cache_split(path, parent, sizeof(parent), &base);
	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	/* only a cached directory has entries below it: what is below one
	 * goes with it (here and in cache_remove()), so a file's rename or
	 * removal walks no cache however big */
	if (tree && n && S_ISDIR(n->attr.st.st_mode))
		remove_below_locked(c, ns, path);
	if (n) {
		was_dir = S_ISDIR(n->attr.st.st_mode);
		cache_name_gone(c, n);
		unlink_node(c, n);
	}
	n = cache_lookup(c, ns, parent);
	if (n && strcmp(parent, path) != 0 && n->names &&
	    cache_listing_del(n, base))
		cache_dir_nlink_step(c, n, was_dir, false);
	pthread_mutex_unlock(&c->lock);
}

void cache_set_data_budget(struct cache *c, off_t bytes)
{
	pthread_mutex_lock(&c->lock);
	c->data_budget = bytes;
	pthread_mutex_unlock(&c->lock);
}

bool cache_set_data(struct cache *c, const char *ns, const char *path,
		    struct cache_blob *b, off_t off, off_t len, long snapshot)
{
	struct node *n;
	bool ok = false;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	if (n && S_ISREG(n->attr.st.st_mode) && len == n->attr.st.st_size &&
	    c->data_bytes - n->datalen + len <= c->data_budget) {
		cache_drop_data(c, n);
		n->data = cache_blob_get(b);
		n->dataoff = off;
		n->datalen = len;
		n->data_snapshot = snapshot;
		c->data_bytes += len;
		ok = true;
	}
	pthread_mutex_unlock(&c->lock);
	return ok;
}

int cache_get_data(struct cache *c, const char *ns, const char *path, int *fd,
		   off_t *off, off_t *len)
{
	struct node *n;
	int ret = -1;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, path);
	if (n && n->data) {
		*off = n->dataoff;
		*len = n->datalen;
		ret = 0;
		if (fd) {
			*fd = dup(cache_blob_fd(n->data));
			ret = *fd >= 0 ? 0 : -1;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

void cache_dir_changed(struct cache *c, const char *ns, const char *dir,
		       long from, long until, double now)
{
	struct node *n;

	pthread_mutex_lock(&c->lock);
	n = cache_lookup(c, ns, dir);
	if (n) {
		n->attr.validated = 0; /* its mtime moved: ask again */
		n->changed_at = now;   /* and what was asked before, too */
		n->own_from = from;
		n->own_until = until;
		/* until is a second past the engine's now, whose lag ctrfs
		 * knows to a second */
		n->own_settled = now + 3.0;
		if (n->names) {
			/* our edits keep it whole, as of the end of our change
			 */
			n->snapshot = until + 2;
			n->listed_at = now;
		}
	}
	pthread_mutex_unlock(&c->lock);
}
