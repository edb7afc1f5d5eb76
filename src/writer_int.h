/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the writer's files share with each other, and with no one else. Not
 * part of the writer's API (writer.h):
 *
 *   writer.c         files being written: their state, spool, metadata,
 *                    rename and unlink
 *   writer_pending.c write-back entries without data: directories and
 *                    symlinks made, directories' attributes changed
 *   writer_wb.c      write-back: the flusher thread, its batches, retries
 *                    and rescue, settle, sync, status, drain; the last
 *                    reference (wfile_put())
 *   writer_commit.c  a commit: the tar body, one PUT, group commit
 *   writer_through.c a file with hard links written through its names
 *   writer_tree.c    where pending entries sit in the tree: the directory
 *                    a PUT goes to, links that climb, children first
 *   writer_core.c    the table of files: list, index, lookups, stat,
 *                    journal record, free
 *
 * Each calls only those below it in this list. struct writer is made and
 * freed in writer.c, a struct wfile made there (or in writer_pending.c)
 * and freed in writer_core.c.
 */
#ifndef CTRFS_WRITER_INT_H
#define CTRFS_WRITER_INT_H

#include "ctr.h"
#include "writer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>

struct jentry;
struct wbstatus;

struct wfile {
	struct writer *w;
	pthread_mutex_t lock;
	int refs; /* under w->lock */
	struct ctr ctr;
	char *path;
	int fd;		/* -1: an entry without data (a directory, a symlink) */
	char *link;	/* a symlink entry's target */
	struct stat st; /* the header: mode, uid, gid, mtime */
	char *xattrs;	/* ... and its extended attributes (xattrs.h) */
	size_t xattrs_len;
	bool mtime_set; /* an explicit utimens: keep it */
	bool atime_set; /* st.st_atim set by utimens: put it */
	bool dirty;	/* changed since the last commit */
	/* exists there under path; written under lock, read unlocked by
	 * writer_absent() (under w->lock) */
	atomic_bool in_container;
	/* a directory entry without data: set before it is listed, never
	 * changed (read under w->lock alone) */
	bool dir_entry;
	bool unlinked;
	bool failed;   /* the last commit failed and close said so */
	bool closing;  /* a thread dropped the last reference and tears down */
	bool pending;  /* write-back: closed, to be committed at due */
	bool flushing; /* write-back: in the flusher's PUT now */
	double due;
	/* write-back: the due its first close since the flusher last took it
	 * set; the close after a reopen keeps it (0: none) */
	double first_due;
	/* when its content, attributes or name last changed (now_mono()):
	 * read under w->lock alone, written under f->lock too */
	_Atomic double changed;
	unsigned long opens; /* references taken by lookups and opens */
	atomic_int attempts; /* write-back commits of its data that failed */
	atomic_int last_err; /* the last one's -errno */
	atomic_int error;    /* a failed write: never commit half a file (read
			      * unlocked by wfile_error()) */
	atomic_bool ready;   /* the spool holds the content it started with */
	bool in_mem;	     /* fd is in the memory spool */
	bool stay_in_mem;    /* moving it to disk failed: it stays */
	nlink_t links;	     /* names the container's file had at the open */
	uid_t open_uid;	     /* its owner then: a write through its names */
	gid_t open_gid;	     /* sets the owner only when it changed */
	off_t mem_bytes;     /* what it reserved there (the end it wrote) */
	struct jentry *jent; /* write-back: its journal entry, or NULL */
	bool jkeep; /* the journal holds the only copy of its data: keep it */
	struct wfile *next;
	struct wfile *hnext; /* the index's chain (under w->lock) */
	size_t hash;	     /* of its container id and path, as indexed */
};

/* Write-back's tries of one file's data: after a failure the delay before
 * the next doubles, up to WB_RETRY_MAX seconds; with -o writeback=1 it
 * keeps trying for about two minutes, long enough for an engine restart.
 * Unmount's drain tries once more, at once (not at all once the engine
 * did not answer it), then keeps what failed in the rescue directory
 * (spool_rescue()). */
#define WB_ATTEMPTS  8
#define WB_ALONE     2 /* failures after which a file is sent alone */
#define WB_RETRY_MAX 30.0

/* New files remembered as having one name (struct writer's made). */
#define WRITER_MADE 64

/* One file of a group commit. */
struct item {
	struct wfile *f;
	char *parent;
	const char *name; /* the entry's name, relative to parent */
	int result;
	bool done;
	struct item *next;
};

struct writer {
	struct engine *e;
	struct meta *m;
	struct spool *spool;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct wfile *files;
	/* files by container id and path: a lookup costs no walk of the
	 * list, however many files write-back holds (under lock) */
	struct wfile **slots;
	size_t nslots, nindexed;
	struct item *queue;
	char **busy; /* "ctr id/parent" keys being committed */
	size_t nbusy;
	double writeback; /* seconds a closed file waits, 0: commit at close */
	pthread_t flusher;
	bool flusher_started;
	bool draining; /* commit everything pending now */
	bool inflight; /* the flusher holds a batch (until its files are put) */
	bool drain_gone; /* the drain found the engine gone (flusher only) */
	bool stopping;
	pthread_cond_t flush_cond;
	/* the due the flusher sleeps until (INFINITY: no file is pending;
	 * 0: it is busy and looks again): a file queued later than it needs
	 * no wake-up, so a tree copied in wakes it once, not per file */
	double flusher_until;
	long long mem_cap;     /* bytes the memory spool may hold, in all */
	atomic_llong mem_used; /* what the files in it reserved */
	struct wbstatus
	    *status; /* write-back failures, for fsync and --status */
	struct journal *journal; /* pending files outlive the daemon, or NULL */
	/* the files made here lately (a new file's first commit): one name
	 * each, which no `stat` need count (writer_through.c; under lock) */
	struct made {
		size_t hash;
		double at;
	} made[WRITER_MADE];
	unsigned made_next;
};

/* writer_core.c. Whether path lies below dir (dlen bytes, 0 for "/"):
 * anywhere (deep), or as an entry of dir itself. */
bool writer_below(const char *path, const char *dir, size_t dlen, bool deep);
/* writer_core.c. w->lock held: a reference to f; reopen takes it out of
 * the write-back queue (it is being written again). */
void writer_take_locked(struct wfile *f, bool reopen);
/* writer_core.c. w->lock held: f's path is p (allocated) from now on; one
 * taken off the list (a failed copy-in that a rename had found before)
 * stays out. */
void writer_repath_locked(struct writer *w, struct wfile *f, char *p);
/* writer_core.c. w->lock held: the wfile of path (not removed), or NULL. */
struct wfile *writer_find_locked(struct writer *w, const char *ctr_id,
				 const char *path);
/* writer.c. w->lock held: puts f on the list (and in the index). */
void writer_list_locked(struct writer *w, struct wfile *f);
/* writer.c. w->lock held: takes f off the list (if it is there). */
void writer_unlist_locked(struct writer *w, struct wfile *f);
/* writer_core.c. Frees a wfile nobody references any more, or never listed. */
void writer_wfile_free(struct wfile *f);
/* writer_core.c. f->lock held: f's attributes as a stat reports them, its
 * size that of its spool file. */
void writer_stat_locked(struct wfile *f, struct stat *st);
/* writer_core.c. f->lock held: writes f's journal entry (journal.h); 0 or
 * -errno. */
int writer_journal_locked(struct wfile *f);
/* writer_core.c. w->lock held: referenced wfiles below dir (wfile_put() each,
 * free() the array). */
struct wfile **writer_collect_locked(struct writer *w, const char *ctr_id,
				     const char *dir, size_t dlen, bool deep,
				     bool queued, bool failed, size_t *n);

/* writer_commit.c. Sends items (same container and directory) in one PUT;
 * 0 or -errno, the failure logged. */
int writer_commit_put_batch(struct writer *w, struct item *items);
/* writer_commit.c. f (locked) is in the container now, by a change that
 * began at wall-clock second t0: unlocks it and records what was written. */
void writer_commit_landed(struct wfile *f, long t0);

/* writer_through.c. f (locked) is committed through its names when it
 * is in the container with other names (its count asked of the
 * container's stat unless the mount made it a moment ago): 0 (f->links
 * still above 1), -EOPNOTSUPP when that does not apply or cannot be done
 * (no shell, no `head -c`, a file the container's user may not write:
 * then f takes a number of its own and count 1, logged, and the caller
 * PUTs), or -errno, logged. */
int writer_commit_through(struct wfile *f);

/* writer_through.c. f (locked), a new file, has just landed: for a moment
 * its one name needs no counting. */
void writer_note_made(struct wfile *f);

/* writer_commit.c. f (locked) just landed as its spool holds it: in the
 * default mode a small file's content is copied aside into the cache, for
 * a read or a copy-in right after (rsync's times set by a copy where the
 * container's touch takes no fraction) with no GET. */
void writer_keep_content(struct wfile *f);

/* writer_tree.c. w->lock held: whether path is a pending directory not
 * in the container yet (new: nothing but what is pending is in it). */
bool writer_new_dir_locked(struct writer *w, const char *ctr_id,
			   const char *path);
/* writer_tree.c. w->lock held: the directory of the container that a
 * PUT of entries below dir goes to: dir, or the nearest directory above
 * it that is not a pending entry not made yet; into out (len bytes, may
 * be dir). */
void writer_put_dir_locked(struct writer *w, const char *ctr_id,
			   const char *dir, char *out, size_t len);

/* writer_tree.c. w->lock held: a PUT at directory dir, begun at
 * wall-clock second t0, landed path: the engine made each pending
 * directory between them that was not made yet (0755, its entry, still
 * to come, sets it). Each is in the container now, and its names are no
 * longer only the pending ones: the cache holds it as made by ctrfs, its
 * listing empty but for what lands. */
void writer_made_above_locked(struct writer *w, const char *ctr_id,
			      const char *dir, const char *path, long t0);
/* writer_tree.c. Moves dir (len bytes) up until no symlink entry
 * among the n wfiles below it has a target that climbs above it (the
 * engine refuses those). */
void writer_fit_links(struct wfile **fs, size_t n, char *dir, size_t len);
/* writer_tree.c. Orders n wfiles as their entries go in a tar: every
 * name after those below it (children first). */
void writer_sort_children_first(struct wfile **fs, size_t n);
/* writer_pending.c. A file or entry was made below dir (the path of a new
 * one): a pending directory there takes the time as its mtime. */
void writer_touch_parent(struct writer *w, const char *ctr_id,
			 const char *path);

/* writer_wb.c. w->lock held: queues f for write-back when it is to wait
 * for it; whether it does. */
bool writer_wb_queue_locked(struct writer *w, struct wfile *f, bool dirty);
/* writer_wb.c. f->lock held: write-back gives up on f's data: a copy kept,
 * or the loss logged. */
void writer_wb_rescue_locked(struct wfile *f);

#endif
