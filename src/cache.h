/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metadata cache: attributes, raw symlink targets and directory listings
 * of container paths, keyed by (namespace, path) where the namespace is the
 * container id. Thread-safe; every getter copies out, so callers never hold
 * pointers into the cache. Bounded: past max_entries everything is dropped
 * (it is only a cache) before the new entry goes in.
 */
#ifndef CTRFS_CACHE_H
#define CTRFS_CACHE_H

#include <limits.h>
#include <stdbool.h>
#include <time.h>
#include <stddef.h>
#include <sys/stat.h>

#include "cache_attr.h"

struct cache_listent {
	const char *name;
	struct stat st;
};

/* A copied-out directory listing; free with cache_listing_free(). */
struct cache_listing {
	size_t n;
	struct cache_listent *ents;
	char *names;
};

struct cache;

/*
 * Inode numbers (docs/design.md, "Inode numbers"): a new one, never handed
 * out before in this process (as libfuse's node ids were). An entry stored
 * with st_ino 0 gets a new number, or keeps the one it has (cache_put()).
 */
ino_t cache_new_ino(void);

/*
 * A tar header's mtime is whole seconds: Docker's cut from the time,
 * Podman's rounded to the nearest (Go's tar writer). Set once per cache,
 * before any entry, for the engine whose cache it is (rounded: true for
 * Podman; each engine of a mount has its own cache, so a Podman engine
 * does not change how a Docker engine's times compare). Two times are the
 * same second when they are equal to the second, or when one is a tar's
 * whole second and the other an exact time that gives it, by c's rule.
 */
void cache_set_tar_rounding(struct cache *c, bool rounded);
bool cache_same_second(const struct cache *c, const struct timespec *a,
		       const struct timespec *b);

struct cache *cache_new(size_t max_entries);
void cache_free(struct cache *c);

/*
 * The clock whose time an answer's change of mode, owner or link count
 * gives the entry's ctime (docs/design.md, "Times"): the engine's. Called
 * with the cache's lock held. Without one, such a change keeps the ctime.
 */
typedef void (*cache_clock_fn)(void *arg, struct timespec *now);
void cache_set_clock(struct cache *c, cache_clock_fn clock, void *arg);

/* 0 and a copy of the entry (and its raw link target, when link is not
 * NULL and CACHE_LINK is set), or -ENOENT. */
int cache_get(struct cache *c, const char *ns, const char *path,
	      struct cache_attr *attr, char *link, size_t linklen);

/*
 * Stores what the engine said of a path. Merges with what was known: an
 * attr's st_ino, when not 0, is the entry's number from now on (shared
 * with other names, CACHE_SHARED_INO, when attr counts more than one);
 * else the entry keeps its number, but takes a new one when its type
 * changed, or when it changed (size, mtime) under a shared one (a link
 * may have broken).
 * An attr without CACHE_OWNER keeps the known owner, a symlink with the same
 * mtime keeps its known target, and a directory keeps its listing only when
 * its mtime is unchanged and older than the listing's snapshot by more than
 * a second (mtimes in whole seconds cannot order changes within one), or
 * within ctrfs's own last change of it, or attr has CACHE_SAME_ENTRIES; a
 * listing kept by the first two is confirmed as of attr's validation.
 * attr->validated is when the question was asked: an answer asked before
 * ctrfs's last change of the entry was over (cache_dir_changed()) is
 * merged but stays to be asked again, as cache_confirm() ignores one.
 * Returns true when the cache is nearly full, so bulk loaders can stop
 * recording what nobody asked for.
 */
bool cache_put(struct cache *c, const char *ns, const char *path,
	       const struct cache_attr *attr, const char *link);

/* A directory that a PUT just resolved exists and is a directory: its
 * attributes stand validated as of now (not its listing, which a PUT
 * does not prove whole). No-op for a path not cached as a directory, or
 * for one whose mtime ctrfs moved since it was last asked
 * (cache_dir_changed()): the PUT does not say what it became. */
void cache_proven(struct cache *c, const char *ns, const char *path,
		  double now);
/* Marks an entry confirmed unchanged at time now; a directory's listing
 * is confirmed too when the rules of cache_put() keep it, else dropped. */
void cache_touch(struct cache *c, const char *ns, const char *path, double now);
/* The same, for an answer st (a HEAD's; NULL: as cache_touch()) that the
 * caller found to be the entry's own (type, size, mtime second) and keeps
 * the entry's attributes for, so that its mtime does not move between a
 * tar's whole second and a HEAD's nanoseconds: the content held for it is
 * kept only when it holds for st under cache_put()'s rule. */
void cache_confirm(struct cache *c, const char *ns, const char *path,
		   const struct stat *st, double now);

/*
 * The other names cached for path's file (entries that share its number,
 * CACHE_SHARED_INO): up to max of them copied into names. Returns how
 * many. Every name of such a file shows one record: storing one entry
 * copies the file's attributes to the others (docs/design.md, "One
 * record for all names of a file").
 */
size_t cache_names_of(struct cache *c, const char *ns, const char *path,
		      char (*names)[PATH_MAX], size_t max);

/* Forgets a path (a directory with everything below it) and the listing
 * of its parent directory. */
void cache_remove(struct cache *c, const char *ns, const char *path);

/*
 * For changes ctrfs made itself: forgets path (and everything below it
 * when tree is set and path is a cached directory: nothing is cached
 * below any other path) and removes or adds its name in the parent's listing,
 * which stays valid (and the parent's link count with it). The other
 * names of a forgotten path's file count one link less.
 */
void cache_forget(struct cache *c, const char *ns, const char *path, bool tree);
void cache_listing_add(struct cache *c, const char *ns, const char *path);

/*
 * ctrfs changed an entry of directory dir between wall-clock seconds from
 * and until: its attributes are asked again (the mtime moved), answers to
 * questions asked before now are not taken as confirming them, and its
 * listing, which ctrfs edited, survives an mtime within that window.
 * A change by someone else within the same seconds cannot be told apart:
 * the first confirmation once they are over (now + 3 s) drops the listing,
 * so that it is taken again.
 */
void cache_dir_changed(struct cache *c, const char *ns, const char *dir,
		       long from, long until, double now);

/*
 * Whether the listing of path's directory, confirmed at or after
 * fresh_after, names it: 1 yes, 0 no, -1 when no such listing is known.
 */
int cache_in_listing(struct cache *c, const char *ns, const char *path,
		     double fresh_after);

/*
 * File contents learned from a tar (a directory GET carries them anyway)
 * live in a spool file, a blob, shared by the entries whose content is in
 * it and closed when the last lets go. cache_blob_new() takes fd and hands
 * the caller one reference, dropped with cache_blob_put().
 */
struct cache_blob;
struct cache_blob *cache_blob_new(int fd);
void cache_blob_put(struct cache_blob *b);
/* Another reference to b, for cache_blob_put(). */
struct cache_blob *cache_blob_get(struct cache_blob *b);
int cache_blob_fd(const struct cache_blob *b);

/*
 * Records that path's content, learned from a tar whose GET began at
 * wall-clock second snapshot, lies at [off, off + len) of blob b. It is
 * kept while the attributes stay the same (by the rule listings follow)
 * and while the total stays within the budget; false when it is spent.
 */
bool cache_set_data(struct cache *c, const char *ns, const char *path,
		    struct cache_blob *b, off_t off, off_t len, long snapshot);

/* 0 with a new descriptor of the blob (close it) and where the content
 * lies in it, or -1 when it is not known; fd NULL: only whether it is. */
int cache_get_data(struct cache *c, const char *ns, const char *path, int *fd,
		   off_t *off, off_t *len);

/* Total bytes of content kept (on disk). */
void cache_set_data_budget(struct cache *c, off_t bytes);

/* Forgets everything of a namespace (a container that went away). */
void cache_drop_ns(struct cache *c, const char *ns);

/*
 * Stores the complete listing of dirpath (which must be cached already):
 * count names packed one after another, each NUL-terminated, in names.
 * snapshot is the wall-clock second when the engine began to produce it.
 */
int cache_set_listing(struct cache *c, const char *ns, const char *dirpath,
		      const char *names, size_t count, size_t bytes,
		      long snapshot);

/* Copies out the listing of dirpath with each child's attributes: 0,
 * -ENOENT when no complete listing is cached, -ESTALE when a child has been
 * evicted since. */
int cache_listing(struct cache *c, const char *ns, const char *dirpath,
		  struct cache_listing *out);
void cache_listing_free(struct cache_listing *l);

/* What a GET of a directory would carry, as far as the cache knows. */
struct cache_subtree {
	size_t entries;	       /* below it */
	off_t bytes;	       /* an estimate of the tar's size */
	size_t stale;	       /* entries below it confirmed before ... */
	size_t stale_children; /* ... and those of them that are its own */
};

/*
 * Fills out for dirpath, walking the cached listings: 0, -E2BIG past
 * max_entries or max_bytes, or -ENOENT when the listing of dirpath or of a
 * directory below is unknown. Stale: confirmed before stale_before.
 */
int cache_subtree(struct cache *c, const char *ns, const char *dirpath,
		  size_t max_entries, off_t max_bytes, double stale_before,
		  struct cache_subtree *out);

/* Number of entries, for tests and debug logs. */
size_t cache_count(struct cache *c);

#endif
