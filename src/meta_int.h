/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What meta.c shares with meta_walk.c, loader.c and execlist.c, and with
 * no one else:
 * struct meta, which meta_new() makes and meta_free() frees, the limits
 * more than one of them uses, and the small helpers they all call. Not
 * part of the metadata API (meta.h).
 */
#ifndef CTRFS_META_INT_H
#define CTRFS_META_INT_H

#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Bytes of a directory's tar read when only its owner was asked for: a
 * small subtree comes whole, with its listings and contents, so that a
 * walk of it needs no second GET. Past the cap the GET is aborted. */
#define PROBE_TREE ((off_t)8 << 20)
/* ... and at most this many entries: the engine's work is per file, so a
 * subtree of countless tiny files is not read far for its owner either */
#define PROBE_ENTRIES 2048
/* The xattr table (xattrs.h): regular files whose sets are known (most
 * are empty: 40 bytes and the path each) and bytes of values; the engine
 * carries security.capability alone, 20 or 24 bytes. */
#define XATTRS_ENTRIES 32768
#define XATTRS_BYTES   ((size_t)256 << 10)
/* Containers remembered to lack `find` or `stat`. */
#define NO_EXEC_MAX 16

/* Where a walk through a directory was seen to need a HEAD: the siblings
 * after name, in listing order, are the walk's next steps. */
struct hint {
	struct ctr c;
	char dir[PATH_MAX];
	char name[NAME_MAX + 1];
};

/* A directory of a container. */
struct dirref {
	char ns[sizeof(((struct ctr *)0)->id)];
	char dir[PATH_MAX];
};

/* One per mount: made by meta_new(), freed by meta_free(). lock guards the
 * fields of the revalidate-ahead thread, the memos of relist_parent() and
 * no_exec; probe_lock guards probe_blob, a reference of its own. */
struct meta {
	struct engine *e;
	struct cache *c;
	double ttl;
	meta_busy_fn busy;
	struct spool *spool;
	/* the revalidate-ahead thread, made on first use */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a new hint; a claim done; a window over */
	pthread_t ahead;
	bool started, stop, pending;
	struct hint hint; /* the newest, when pending */
	/* the window the thread works through, in order: claim[0..ndone)
	 * are revalidated; a getattr of a claimed path waits for it rather
	 * than asking the engine a second time */
	char (*claim)[PATH_MAX];
	char claim_ns[sizeof(((struct ctr *)0)->id)];
	size_t nclaim, ndone;
	/* relist_parent(): the directory being listed again for a walk,
	 * the last one found not worth it (when), and the directory of the
	 * last stale entry (which, when); the last directory walked that
	 * was too small (when), and the last directory above two such
	 * found not worth it either (when) */
	bool relisting;
	struct dirref relist, relist_no, seen, small, up_no;
	double relist_no_at, seen_at, small_at, up_no_at;
	char seen_name[NAME_MAX + 1];
	/* execlist_no_tools(): found to lack find or stat; the oldest goes */
	char no_exec[NO_EXEC_MAX][sizeof(((struct ctr *)0)->id)];
	size_t no_exec_next;
	/* the spool file the contents probes keep go to, and its end */
	pthread_mutex_t probe_lock;
	struct cache_blob *probe_blob;
	off_t probe_off;
	/* regular files' extended attributes, from tar headers */
	struct xattrs *xa;
};

static inline ssize_t stream_source(void *ctx, const void **buf)
{
	return engine_stream_read(ctx, buf);
}

static inline void fill_defaults(struct stat *st)
{
	st->st_blksize = CTRFS_READ_BLKSIZE;
	st->st_blocks = (st->st_size + 511) / 512;
	/* a source gives neither (0): the mtime stands for them; ctrfs's
	 * own changes set them */
	if (!st->st_atim.tv_sec && !st->st_atim.tv_nsec)
		st->st_atim = st->st_mtim;
	if (!st->st_ctim.tv_sec && !st->st_ctim.tv_nsec)
		st->st_ctim = st->st_mtim;
	if (st->st_nlink == 0)
		st->st_nlink = 1;
}

static inline void log_fail(struct ctr *c, const char *what, const char *path,
			    const char *reason)
{
	log_err("cannot %s '%s' in container '%s': %s", what, path, c->name,
		reason);
}

static inline bool same_head(const struct meta *m, const struct stat *a,
			     const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_size == b->st_size &&
	       cache_same_second(m->c, &a->st_mtim, &b->st_mtim);
}

/* meta.c: whether a cached entry confirmed at validated must be asked
 * again */
bool meta_stale(struct meta *m, struct ctr *c, double validated);

/* meta_head.c: a HEAD of path merged into the cache (old: what the cache
 * had, when have_old); the full header of path (owner, raw link target)
 * from the first entry of a GET, a small file's content kept with it */
int meta_revalidate(struct meta *m, struct ctr *c, const char *path,
		    const struct cache_attr *old, bool have_old);
int meta_probe(struct meta *m, struct ctr *c, const char *path);

/* meta_walk.c: a walk's fast paths (see there) */
bool meta_relist_parent(struct meta *m, struct ctr *c, const char *path);
bool meta_wait_claim(struct meta *m, const struct ctr *c, const char *path);
void meta_hint_walk(struct meta *m, const struct ctr *c, const char *path);

#endif
