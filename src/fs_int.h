/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What fs.c shares with fs_dir.c, fs_file.c and fs_change.c, and with no
 * one else: struct fs, one per mount, which fs_main() sets up and tears
 * down; struct handle, one per open file, which fs_file.c's opens make and
 * ctrfs_release() frees; the helpers more than one of them calls; and the
 * FUSE callbacks that fs.c's operations table names. Not part of the
 * filesystem's API (fs.h).
 *
 * Only fs*.c files may include the FUSE headers: each includes config.h
 * (for FUSE_USE_VERSION) and <fuse.h> before this header, which uses the
 * FUSE types without including them.
 */
#ifndef CTRFS_FS_INT_H
#define CTRFS_FS_INT_H

#include "fs.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

struct cache;
struct ctr;
struct ctr_table;
struct engine;
struct events;
struct journal;
struct meta;
struct reader;
struct spool;
struct wfile;
struct writer;

/* the hidden file of the root that `ctrfs --status` reads: no container
 * can have this name (Docker's start with a letter or a digit) */
#define STATUS_PATH "/" CTRFS_STATUS_NAME

/*
 * One engine of the mount and what is its own (fs_sites.c): with several,
 * a directory of the root named name. Every container its table lists
 * points back to it (c->owner): SITE(c) is the site of a container that
 * resolve() handed out, and the callbacks reach the engine, cache, meta
 * and writer of a path through it alone.
 */
struct site {
	char name[256];
	ino_t ino; /* its directory's, with several */
	struct engine *e;
	struct cache *cache;
	struct meta *meta;
	struct ctr_table *ctrs;
	struct spool *spool;
	struct writer *writer;
	struct journal *journal; /* borrowed, or NULL */
	struct events *events;	 /* its event stream (events.c), or NULL */
	struct fs *fs;
	/* Down at start (fs_engine's down): no call goes to it, its
	 * directory lists empty and is EIO below, until the thread waiter
	 * gets an answer to its ping (replays its journal, then sets ready
	 * and starts its event stream). late_journal: the journal to replay
	 * then (borrowed, or NULL). */
	atomic_bool ready;
	bool late;
	struct journal *late_journal;
	pthread_t waiter;
	bool waiter_started;
};

#define SITE(c) ((struct site *)(c)->owner)

struct fs {
	struct site *sites; /* nsites; more than one: a directory each */
	size_t nsites;
	struct fs_config cfg;
	struct timespec mounted;
	uid_t uid;
	gid_t gid;
	pthread_t reaper;
	bool reaper_started;
	bool stopping;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
};

/* What an open file handle is: a reader, or a file being written. */
struct handle {
	struct reader *r;
	struct wfile *w;
	char *status; /* the status file's text, as it was at the open */
	size_t status_len;
	bool writes; /* opened for writing (a flush's fi has no flags) */
	/* a write-only open of an existing file takes its content in at its
	 * first write, not at the open: `touch F` opens F and sets its mtime
	 * through the descriptor, and a copy in (a GET) then a commit (a PUT
	 * of the whole file, a new inode) for that cost as much as the file
	 * is big and split its hard links. Until then w is NULL, changes
	 * through the handle go by path, and lock guards w. */
	bool deferred;
	int flags;
	pthread_mutex_t lock;
};

static inline struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

static inline struct fs *fs_get(void)
{
	return fuse_get_context()->private_data;
}

/* fs.c */
/* Sets a symlink's st_size to the length of its target through the mount. */
void link_size(const char *inner, const char *raw, struct stat *st);
/* Attributes of a path: an open file being written says them itself. */
int stat_path(struct fs *fs, struct ctr *c, const char *inner, struct stat *st);

/* fs_sites.c */
/* Resolves a mount path: *c gets a container reference (NULL for the
 * mount root, else the caller's to ctr_put()) and *inner the path inside
 * it; a path on a tmpfs of the container is refused. */
int resolve(struct fs *fs, const char *path, struct ctr **c,
	    const char **inner);
/* Sets up the mount's sites, one per engine, in fs->sites (the engines
 * borrowed); 0 or -errno, with what was made torn down by sites_free(). */
int sites_new(struct fs *fs, const struct fs_engine *engines, size_t n);
void sites_free(struct fs *fs);
/* At init (after the fork), at destroy: the event streams and write-back
 * of every site started, stopped and drained. */
void sites_start(struct fs *fs);
void sites_stop(struct fs *fs);
/* The site a mount path lies in and the path below its directory: with
 * one engine, the only site and path itself; with several, *s is NULL
 * for the mount's root, and -ENOENT for a name no engine has. */
int sites_split(struct fs *fs, const char *path, struct site **s,
		const char **rest);
/* The inode number of a path that resolve() gave no container for: the
 * mount's root (1), or an engine's directory. */
ino_t sites_ino(struct fs *fs, const char *path);
/* Fills a listing of such a path: the containers of its engine (an
 * engine down: none, with several), or the engines' names. */
int sites_fill(struct fs *fs, const char *path, void *buf,
	       fuse_fill_dir_t filler);
/* Every site's write-back status, the container fields prefixed with the
 * engine's name when there are several; the length written. */
size_t sites_status(struct fs *fs, char *buf, size_t max);
/* Write-back's sync of every site (the mount's root, an engine's
 * directory): 0 or the first -errno. */
int sites_sync(struct fs *fs);
/* Whether closes queue for write-back (the same for every site). */
bool sites_writeback(struct fs *fs);
/* Whether s is served: false while an engine down at start has not
 * answered yet (then nothing below its directory is asked of it). */
static inline bool site_ready(struct site *s)
{
	return atomic_load(&s->ready);
}

/* fs_file.c */
/* A new entry's attributes: mode, the caller's owner, c's engine's now. */
void caller_stat(struct ctr *c, struct stat *st, mode_t mode);
/* Group (and a directory's setgid bit) from a setgid parent directory. */
void parent_sgid(struct fs *fs, struct ctr *c, const char *inner,
		 struct stat *st);
/* The handle's file being written (not referenced for the caller); for a
 * deferred open, opened now when open is set, -errno in *err if that
 * fails; else NULL until then. */
struct wfile *handle_wfile(struct handle *h, const char *path, bool open,
			   int *err);

/* fs_change.c. The other names of files that a change touches (hard
 * links) that the cache knows: the kernel keeps attributes per name (a
 * node per path), so a change through one name must drop them at the
 * others, whose entries the cache has changed with it (docs/design.md,
 * "One record for all names of a file"). */
#define NAMES_MAX 8
struct names {
	size_t n;
	char path[NAMES_MAX][PATH_MAX];
};
/* Adds the other names of inner's file to nm. */
void names_of(struct fs *fs, struct ctr *c, const char *inner,
	      struct names *nm);
/* The change is made: the kernel asks for the names' attributes again
 * (by their mount paths: below the engine's directory with several). */
void names_changed(struct ctr *c, const struct names *nm);

/* The callbacks of fs.c's operations table, by the file they are in. */
/* fs_dir.c: directories being listed */
int ctrfs_opendir(const char *path, struct fuse_file_info *fi);
int ctrfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		  off_t offset, struct fuse_file_info *fi,
		  enum fuse_readdir_flags flags);
int ctrfs_releasedir(const char *path, struct fuse_file_info *fi);

/* fs_file.c: open files, read and written */
int ctrfs_open(const char *path, struct fuse_file_info *fi);
int ctrfs_create(const char *path, mode_t mode, struct fuse_file_info *fi);
int ctrfs_read(const char *path, char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi);
int ctrfs_write(const char *path, const char *buf, size_t size, off_t off,
		struct fuse_file_info *fi);
int ctrfs_flush(const char *path, struct fuse_file_info *fi);
int ctrfs_fsync(const char *path, int datasync, struct fuse_file_info *fi);
int ctrfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi);
int ctrfs_release(const char *path, struct fuse_file_info *fi);

/* fs_change.c: names made, removed and renamed, attributes changed */
int ctrfs_mkdir(const char *path, mode_t mode);
int ctrfs_mknod(const char *path, mode_t mode, dev_t rdev);
int ctrfs_symlink(const char *target, const char *path);
int ctrfs_link(const char *from, const char *to);
int ctrfs_unlink(const char *path);
int ctrfs_rmdir(const char *path);
int ctrfs_rename(const char *from, const char *to, unsigned int flags);
int ctrfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi);
int ctrfs_chown(const char *path, uid_t uid, gid_t gid,
		struct fuse_file_info *fi);
int ctrfs_utimens(const char *path, const struct timespec tv[2],
		  struct fuse_file_info *fi);
int ctrfs_truncate(const char *path, off_t size, struct fuse_file_info *fi);

/* fs_xattr.c: extended attributes, as the engine's tar carries them */
int ctrfs_getxattr(const char *path, const char *name, char *value,
		   size_t size);
int ctrfs_listxattr(const char *path, char *list, size_t size);
int ctrfs_setxattr(const char *path, const char *name, const char *value,
		   size_t size, int flags);
int ctrfs_removexattr(const char *path, const char *name);
/* Forgets the names whose refusal was logged (at teardown). */
void fs_xattr_free(void);

#endif
