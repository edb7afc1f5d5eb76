/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Metadata of container paths: served from the cache while fresh,
 * revalidated with HEAD (cheap) when stale, and learned from tar headers:
 * a directory GET is recursive, so one listing fills the cache for the
 * whole subtree.
 */
#ifndef CTRFS_META_H
#define CTRFS_META_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* st_blksize: cp and stdio size their buffers by it (cp: the least
 * common multiple of its source's and its destination's). A file being
 * written through ctrfs says 1 MiB: each write() is one FUSE request and
 * one trip through ctrfs (NFS reports its 1 MiB wsize the same way). A
 * file as the container has it says 128 KiB: a read of 1 MiB keeps its
 * reader from the socket while it writes that 1 MiB out, long enough to
 * fill the engine's socket buffer and stop the engine; `cp` of 1 GiB out
 * took 4.09 s with 1 MiB reads and 3.10 s with 128 KiB (Docker 26, 10
 * rounds, `docker cp` 2.87 s; docs/performance-notes.md). */
#define CTRFS_WRITE_BLKSIZE (1024 * 1024)
#define CTRFS_READ_BLKSIZE  (128 * 1024)

struct cache;
struct cache_listing;
struct ctr;
struct engine;
struct tar_entry;

struct meta;
struct spool;

/* Tells whether the engine is busy with a transfer of ours on a container:
 * every archive call on it then waits until that transfer ends, so stale
 * cached metadata is served instead of a HEAD that would block. */
typedef bool (*meta_busy_fn)(const struct engine *e, const char *ctr_id);

/* spool: where file contents that ride along with listings are kept
 * (NULL: not kept). */
struct meta *meta_new(struct engine *e, struct cache *c, double ttl,
		      meta_busy_fn busy, struct spool *spool);
void meta_free(struct meta *m);

/* Attributes of path in container c: 0 or -errno (logged unless ENOENT).
 * When link is not NULL and path is a symlink, its raw target is copied
 * there (a GET is made if it is not known yet). */
int meta_getattr(struct meta *m, struct ctr *c, const char *path,
		 struct stat *st, char *link, size_t linklen);

/* The same, but a directory's asked of the engine now (unless a transfer
 * of ours holds the container): a change of its mode, owner or times PUTs
 * them all back, and a stale mtime would hide a change made inside. Other
 * types are changed by a tool that touches one attribute: no HEAD. */
int meta_getattr_now(struct meta *m, struct ctr *c, const char *path,
		     struct stat *st);

/* The complete listing of directory dir, each child with its attributes. */
int meta_listing(struct meta *m, struct ctr *c, const char *dir,
		 struct cache_listing *out);

/* Records what a tar header said of path (e.g. while reading the file). */
void meta_learn(struct meta *m, struct ctr *c, const char *path,
		const struct tar_entry *te);

/* Marks what is cached of path as confirmed now. */
void meta_touch(struct meta *m, struct ctr *c, const char *path);

/* Records that path now has attributes st, as written by ctrfs (owner
 * included), and that its directory changed in a change that began at
 * wall-clock second since. NULL st: it is gone, with everything below. */
void meta_committed(struct meta *m, struct ctr *c, const char *path,
		    const struct stat *st, long since);
/* The same for a symlink ctrfs made, with its raw target: nothing to ask
 * the engine for (Podman's GET of a link gives its target's file). */
void meta_committed_link(struct meta *m, struct ctr *c, const char *path,
			 const struct stat *st, const char *link, long since);

/* Where a file's content kept from a listing lies (see cache_get_data):
 * 0 and a descriptor to close, or -1. Valid for the attributes
 * meta_getattr() gives. */
int meta_content(struct meta *m, const struct ctr *c, const char *path, int *fd,
		 off_t *off, off_t *len);

/* path's content, size bytes at the start of fd (taken: closed when no
 * longer kept), is what ctrfs just put in the container: kept as a
 * listing's is, for the attributes the cache has for it now, within the
 * cache's budget. */
void meta_keep_content(struct meta *m, const struct ctr *c, const char *path,
		       int fd, off_t size);

/* The same as meta_content(), for content to be edited: the cached
 * content is confirmed with one HEAD first (a change made in the container
 * within the TTL would be lost under the edit otherwise), and is not
 * given when the HEAD says the file changed. */
int meta_content_now(struct meta *m, const struct ctr *c, const char *path,
		     int *fd, off_t *off, off_t *len);

/* Records a rename ctrfs made: from is gone, and to has what from had
 * (its number, and its owner when known; a directory without its listing
 * and to be asked again); else to's attributes are to be asked
 * (meta_appeared). */
void meta_moved(struct meta *m, struct ctr *c, const char *from, const char *to,
		long since);

/* Records that path exists now (made by a rename or a link), its
 * attributes to be asked. */
void meta_appeared(struct meta *m, struct ctr *c, const char *path, long since);

/* Records the attributes ctrfs just gave path (owner included, the ctime
 * now); for a directory its listing is kept. meta_committed() and
 * meta_moved() make the ctime now too. */
void meta_update(struct meta *m, struct ctr *c, const char *path,
		 const struct stat *st);

/* ctrfs changed path's file otherwise (a name of it went): its ctime is
 * now, if it is cached. */
void meta_changed(struct meta *m, struct ctr *c, const char *path);

/*
 * The extended attributes of regular file path, whose attributes are st,
 * as its tar header carries them (packed, xattrs.h; the caller frees
 * *pack): from what tars said, else a GET of the file (its header). 0 or
 * -errno.
 */
int meta_xattrs(struct meta *m, struct ctr *c, const char *path,
		const struct stat *st, char **pack, size_t *len);
/* Records the extended attributes ctrfs just put with path, as st. */
void meta_xattrs_put(struct meta *m, const struct ctr *c, const char *path,
		     const struct stat *st, const char *pack, size_t len);

/* Forgets path (after an ENOENT from the engine). */
void meta_forget(struct meta *m, struct ctr *c, const char *path);

/* What the cache holds of path, owner included, however old: 0, or
 * -ENOENT when it holds nothing (or no owner). Asks the engine nothing. */
int meta_cached(struct meta *m, const struct ctr *c, const char *path,
		struct stat *st);

#endif
