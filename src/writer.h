/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files being written: each is a wfile, its data in a spool file and its
 * tar header (mode, owner, mtime) in memory. A commit sends the file with
 * one tar PUT to its directory; commits that happen together in the same
 * directory of a container go in one PUT (group commit: the first
 * committer sends everything queued meanwhile). Metadata changes of an open
 * file fold into its header at no engine call.
 *
 * The pending state is the wfile itself, so a later write-back mode only
 * has to delay wfile_commit() and batch more.
 */
#ifndef CTRFS_WRITER_H
#define CTRFS_WRITER_H

#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

struct ctr;
struct engine;
struct journal;
struct meta;
struct spool;
struct tar_entry;
struct writer;
struct wfile;

/*
 * mem_cap: bytes of written data that the files being written may keep in
 * the memory spool (spool_file_mem()) in all; a file that would pass it
 * moves to a disk spool file and goes on there (0: disk only).
 */
struct writer *writer_new(struct engine *e, struct meta *m, struct spool *s,
			  long long mem_cap);

/* Commits what is pending and frees. */
void writer_free(struct writer *w);

/*
 * Opt-in write-back: a file closed after writing waits delay seconds, then
 * every such file of the container goes in one PUT (at the files' common
 * directory). close() then returns before the data is in the container;
 * failures are tried again with a doubling delay (eight tries, about two
 * minutes) and logged. fsync still commits at once.
 */
int writer_set_writeback(struct writer *w, double delay);

/* Write-back: each file closed before its commit gets an entry in j
 * (journal.h), which the commit, or the rescue copy, removes. j is
 * borrowed, and outlives the writer. */
void writer_set_journal(struct writer *w, struct journal *j);
bool writer_writeback(const struct writer *w);

/* Write-back: commits the files of container ctr_id pending below directory
 * dir (deep) or in it now and waits for them (and for those being sent),
 * so that a look at dir or a change of it (its times, its name) comes after
 * them, each for one try; not for files closed meanwhile, nor (unless
 * deep: a rename) for files waiting for a try after a failed one (they
 * keep their delay). Whether there were any. */
bool writer_settle(struct writer *w, const char *ctr_id, const char *dir,
		   bool deep);

/* fsync of a directory: commits the files of container ctr_id (NULL:
 * of every container) pending below dir now, failed ones too, and waits
 * for each one try; the first error of those that did not land, else a
 * write-back failure in that container no fsync was told of
 * (wbstatus_take()), else 0. */
int writer_sync(struct writer *w, const char *ctr_id, const char *dir);

/* The write-back failure in f's container that this fsync (sync) or close
 * (!sync) must report, once per failure, or 0. */
int wfile_take_failure(struct wfile *f, bool sync);

/* The status that `ctrfs --status` prints (docs/design.md, Write-back):
 * "pending", "retrying" and "failed" lines, tab-separated, in buf (max
 * bytes, NUL-terminated, cut at max); its length. */
size_t writer_status(struct writer *w, char *buf, size_t max);

/* Commits every pending file now and stops the write-back thread. */
void writer_drain(struct writer *w);

/*
 * Opens path (inside container c) for writing. existing: the file's current
 * attributes, or NULL to create it with the mode and owner in create.
 * Without O_TRUNC the spool starts with the current content. The wfile is
 * referenced once for the caller; an already open wfile of the same path
 * is shared.
 */
int writer_open(struct writer *w, const struct ctr *c, const char *path,
		int flags, const struct stat *existing,
		const struct stat *create, struct wfile **out);

/* The open (or write-back pending) wfile of path, referenced, or NULL.
 * writer_reopen() is for writing to it again: it leaves the write-back
 * queue until its last reference is dropped. */
struct wfile *writer_find(struct writer *w, const char *ctr_id,
			  const char *path);
struct wfile *writer_reopen(struct writer *w, const char *ctr_id,
			    const char *path);

/* Another reference to f, for wfile_put(). */
struct wfile *wfile_get(struct wfile *f);

ssize_t wfile_write(struct wfile *f, const char *buf, size_t size, off_t off);
ssize_t wfile_read(struct wfile *f, char *buf, size_t size, off_t off);
void wfile_stat(struct wfile *f, struct stat *st);
/* Whether f's file has other names in the container (hard links), which
 * its commit writes through. */
bool wfile_has_names(struct wfile *f);

/* Sends the file to the container when it changed since the last commit;
 * 0 when it is there, else -errno. */
int wfile_commit(struct wfile *f);

/* The error that poisoned the file (a failed spool write), or 0. */
int wfile_error(struct wfile *f);

/* Write-back: a close of a handle that wrote f queues it now, not at the
 * release that the kernel sends later and on its own: a look at or a
 * change of its directory right after the close (cp -a's utimens) finds
 * it queued, and waits for it. Its journal entry is written first; when
 * that fails it is committed at once. 0, or that commit's -errno. */
int wfile_queue(struct wfile *f);

/* Folded metadata changes; each marks the file changed. */
int wfile_truncate(struct wfile *f, off_t size);
void wfile_chmod(struct wfile *f, mode_t mode);
void wfile_chown(struct wfile *f, uid_t uid, gid_t gid);
/* Sets the times the commit puts (NULL: not this one). The engine sets a
 * file's atime to the later of the two. */
void wfile_utimens(struct wfile *f, const struct timespec *atime,
		   const struct timespec *mtime);
/* getxattr(2) of name, or listxattr(2) when name is NULL, on the set the
 * file is to be put with. */
ssize_t wfile_getxattr(struct wfile *f, const char *name, void *value,
		       size_t size);
/* setxattr(2) (value not NULL) or removexattr(2) on that set: 0 or
 * -errno (xattrs_edit()). */
int wfile_setxattr(struct wfile *f, const char *name, const void *value,
		   size_t size, int flags);

/*
 * A rename of from to newpath, in the container and in the writer as one
 * step. f is the wfile at from (or NULL: a path not open, a directory), t
 * the one at newpath (or NULL), which is replaced: never committed again.
 * move(arg) makes the change in the container (an exec) unless f is not
 * in the container yet, in which case its commit simply goes to newpath
 * (and what the container holds there, t's file or, without t, a file
 * when target_there says so, is f's to remove or move until then);
 * move's error is returned and then nothing changes. The locks of f and t are
 * held throughout, so commits of either in flight are waited for and none
 * comes between the change in the container and the change of the writer,
 * and no moment has two wfiles at newpath.
 */
int writer_rename(struct writer *w, struct wfile *f, struct wfile *t,
		  const char *newpath, bool target_there, int (*move)(void *),
		  void *arg);

/* Marks f removed, never to be committed again; when it is in the
 * container, remove(arg) removes it there first, under f's lock as in
 * writer_rename(). */
int wfile_unlink(struct wfile *f, int (*remove)(void *), void *arg);

/* After a directory from was renamed to to: the wfiles below it follow. */
void writer_repath(struct writer *w, const char *ctr_id, const char *from,
		   const char *to);

/* Whether a file is being written (or waits for write-back) below dir:
 * the container's dir may look empty while it is not. */
bool writer_holds_below(struct writer *w, const char *ctr_id, const char *dir);

/*
 * Write-back entries without data (writer_pending.c): mkdir or symlink in
 * write-back mode makes path (a directory, or a symlink to link) with
 * attributes st as an entry that rides in the container's next batch PUT,
 * journaled before this returns: 0, -EEXIST (path is being written or
 * pending), or -errno.
 */
int writer_mkentry(struct writer *w, const struct ctr *c, const char *path,
		   const struct stat *st, const char *link);
/* Write-back: a pending entry for directory path of the container, its
 * attributes as they are now, for a chmod, chown or utimens to change
 * (referenced), or NULL (not write-back, not a directory, Podman). */
struct wfile *writer_dir_entry(struct writer *w, struct ctr *c,
			       const char *path);
/* Whether path is known absent with no engine call: its parent is a
 * pending directory not in the container yet, and path is not pending. */
bool writer_absent(struct writer *w, const char *ctr_id, const char *path);
struct cache_listing;
/* The listing of dir when it is a pending directory not in the container
 * yet (what is pending in it): 1, 0 when it is not one, or -errno. */
int writer_listing(struct writer *w, const char *ctr_id, const char *dir,
		   struct cache_listing *out);
/* A pending symlink's target into buf (len bytes): 0 or -errno. */
int wfile_readlink(struct wfile *f, char *buf, size_t len);
/* Whether f is an entry without data (a directory, a symlink), and a
 * directory. */
bool wfile_is_entry(struct wfile *f);
bool wfile_is_dir(struct wfile *f);

/* Sends one entry without data (a directory, a symlink, a hard link, an
 * empty file) to directory dir of the container with one PUT. */
int writer_put_entry(struct writer *w, const struct ctr *c, const char *dir,
		     const struct tar_entry *te);

/* Drops a reference; the last one commits a changed file (logging any
 * failure: nobody is left to tell) and frees it. */
void wfile_put(struct wfile *f);

#endif
