/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What cache.c shares with cache_node.c, cache_links.c and cache_listing.c,
 * and with no one else: the entries (struct node), the cache itself, and
 * the helpers they call, each under the cache's lock. Not part of the
 * cache's API (cache.h).
 */
#ifndef CTRFS_CACHE_INT_H
#define CTRFS_CACHE_INT_H

#include "cache.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/types.h>

struct node {
	struct node *next;
	uint64_t hash;
	char *key; /* ns '\0' path '\0' */
	size_t keylen;
	struct cache_attr attr;
	char *link;
	char *names; /* listing: packed names, or NULL */
	size_t nnames;
	size_t names_bytes;
	long snapshot;
	double listed_at; /* now_mono() when the listing was last known whole */
	long own_from, own_until; /* wall seconds of our own last change */
	double own_settled; /* now_mono() when no other change can share them */
	double changed_at;  /* now_mono() when ctrfs last said it moved */
	struct cache_blob *data; /* where the content is, or NULL */
	off_t dataoff;
	off_t datalen;
	long data_snapshot; /* wall-clock second its GET began */
	/* c->inos: the entries that share a number, by number (hooked) */
	struct node *ino_next;
	ino_t hooked; /* 0: not in c->inos */
};

struct cache {
	pthread_mutex_t lock;
	struct node **buckets;
	size_t nbuckets;
	size_t count;
	size_t max;
	off_t data_bytes;
	off_t data_budget;
	struct node **inos; /* INO_BUCKETS: names of hard-linked files */
	bool tar_rounds;    /* cache_set_tar_rounding() */
	/* the time a change seen in an answer is given (cache_set_clock()) */
	cache_clock_fn clock;
	void *clock_arg;
};

#define INO_BUCKETS 1024

/* cache_node.c: the hash table's keys (ns '\0' path '\0', into buf: its
 * length, 0 when it does not fit), a key's hash, its slot (where its node
 * is, or the NULL at a bucket's end to hook a new one in) */
size_t cache_key(char *buf, size_t buflen, const char *ns, const char *path);
uint64_t cache_hash(const char *s, size_t len);
struct node **cache_find_slot(struct cache *c, const char *key, size_t len,
			      uint64_t h);
/* The entry of (ns, path), or NULL. */
struct node *cache_lookup(struct cache *c, const char *ns, const char *path);
/* Whether n's content is the content of a file that now has st. */
bool cache_data_holds(const struct cache *c, const struct node *n,
		      const struct stat *st);
/* Lets go of n's content. */
void cache_drop_data(struct cache *c, struct node *n);

/* Drops n's listing (its children's entries stay). */
void cache_drop_listing(struct node *n);

/* cache_listing.c: path's parent (into parent, len bytes) and last name */
void cache_split(const char *path, char *parent, size_t len, const char **base);
/* Takes name out of dir's listing, if it has one; whether it did. */
bool cache_listing_del(struct node *dir, const char *name);

/* cache_links.c: the names of one file, the link counts of directories */
/* Takes n out of c->inos. */
void cache_ino_unhook(struct cache *c, struct node *n);
/* Puts n into c->inos under its number while it shares it, else out. */
void cache_ino_hook(struct cache *c, struct node *n);
/* Gives every other name of n's file what n's entry says of the file. */
void cache_sync_names(struct cache *c, struct node *n);
/* n's name is gone (ctrfs removed it): the other names of its file count
 * one link less. */
void cache_name_gone(struct cache *c, struct node *n);
/* Sets a directory's link count from its listing. */
void cache_dir_nlink(struct cache *c, struct node *dir);
/* dir's listing gained (add) or lost one child, a directory (child_dir
 * 1) or not (0), or not cached (-1): its count moves by that child alone
 * when it was whole, and is counted again otherwise, so a tree written
 * into a directory costs no walk of its listing per name. */
void cache_dir_nlink_step(struct cache *c, struct node *dir, int child_dir,
			  bool add);

#endif
