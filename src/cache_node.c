// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The cache's floor: the hash table's keys and lookup, the content blobs
 * and what they hold, and how a tar's whole second compares with an exact
 * time. cache.c, cache_links.c and cache_listing.c stand on it; it calls
 * none of them.
 */
#include "cache.h"
#include "cache_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

uint64_t cache_hash(const char *s, size_t len)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* Builds the key in buf; returns its length or 0 when it does not fit. */
size_t cache_key(char *buf, size_t buflen, const char *ns, const char *path)
{
	size_t a = strlen(ns) + 1, b = strlen(path) + 1;

	if (a + b > buflen)
		return 0;
	memcpy(buf, ns, a);
	memcpy(buf + a, path, b);
	return a + b;
}

void cache_set_tar_rounding(struct cache *c, bool rounded)
{
	c->tar_rounds = rounded;
}

/* The whole second c's engine's tar header gives for the exact time t. */
static time_t tar_second(const struct cache *c, const struct timespec *t)
{
	return c->tar_rounds && t->tv_nsec >= 500000000 ? t->tv_sec + 1
							: t->tv_sec;
}

bool cache_same_second(const struct cache *c, const struct timespec *a,
		       const struct timespec *b)
{
	if (a->tv_nsec == 0 && b->tv_nsec != 0)
		return a->tv_sec == tar_second(c, b);
	if (b->tv_nsec == 0 && a->tv_nsec != 0)
		return b->tv_sec == tar_second(c, a);
	return a->tv_sec == b->tv_sec;
}

struct cache_blob {
	int fd;
	int refs; /* atomic */
};

struct cache_blob *cache_blob_new(int fd)
{
	struct cache_blob *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->fd = fd;
	b->refs = 1;
	return b;
}

void cache_blob_put(struct cache_blob *b)
{
	if (b && __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		close(b->fd);
		free(b);
	}
}

struct cache_blob *cache_blob_get(struct cache_blob *b)
{
	__atomic_add_fetch(&b->refs, 1, __ATOMIC_ACQ_REL);
	return b;
}

int cache_blob_fd(const struct cache_blob *b)
{
	return b->fd;
}

struct node **cache_find_slot(struct cache *c, const char *key, size_t len,
			      uint64_t h)
{
	struct node **pp = &c->buckets[h % c->nbuckets];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && (*pp)->keylen == len &&
		    memcmp((*pp)->key, key, len) == 0)
			return pp;
	return pp;
}

struct node *cache_lookup(struct cache *c, const char *ns, const char *path)
{
	char key[8192];
	size_t len = cache_key(key, sizeof(key), ns, path);

	if (!len)
		return NULL;
	return *cache_find_slot(c, key, len, cache_hash(key, len));
}

void cache_drop_listing(struct node *n)
{
	free(n->names);
	n->names = NULL;
	n->nnames = 0;
	n->names_bytes = 0;
}

void cache_drop_data(struct cache *c, struct node *n)
{
	c->data_bytes -= n->datalen;
	cache_blob_put(n->data);
	n->data = NULL;
	n->datalen = 0;
}

/*
 * Whether n's content (data) is the content of a file that now has the
 * attributes st. Tar mtimes are whole seconds: an equal second is trusted
 * only when it lies before the second the content was read in (equal
 * nanoseconds say more only when there are some: a tar header has none).
 */
bool cache_data_holds(const struct cache *c, const struct node *n,
		      const struct stat *st)
{
	const struct stat *old = &n->attr.st;

	return (old->st_mode & S_IFMT) == (st->st_mode & S_IFMT) &&
	       cache_same_second(c, &old->st_mtim, &st->st_mtim) &&
	       old->st_size == st->st_size &&
	       ((old->st_mtim.tv_nsec == st->st_mtim.tv_nsec &&
		 st->st_mtim.tv_nsec != 0) ||
		(old->st_mtim.tv_nsec == 0 &&
		 st->st_mtim.tv_sec + 1 < n->data_snapshot));
}
