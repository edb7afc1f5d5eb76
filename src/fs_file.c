// SPDX-License-Identifier: GPL-2.0-or-later
/* Open files: open and create (by a reader, a file being written, or the
 * status file), read, write, flush, fsync and release; fsyncdir. */
#include "config.h"

/* FUSE_USE_VERSION (config.h) first; fs_int.h uses the FUSE types */
#include <fuse.h>

#include "fs_int.h"
#include "agent.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "reader.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* the most of the status file (STATUS_PATH) that an open copies */
#define STATUS_MAX (256 * 1024)

static int open_read(struct fs *fs, struct ctr *c, const char *inner,
		     struct handle *h)
{
	struct stat st;
	int ret;

	h->w = writer_find(SITE(c)->writer, c->id, inner);
	if (h->w)
		return 0; /* being written: read what is written */
	ret = meta_getattr(SITE(c)->meta, c, inner, &st, NULL, 0);
	if (ret == 0 && S_ISDIR(st.st_mode))
		ret = -EISDIR;
	else if (ret == 0 && !S_ISREG(st.st_mode))
		ret = -EOPNOTSUPP; /* devices, fifos: no content to stream */
	if (ret == 0)
		ret = reader_new(SITE(c)->e, SITE(c)->meta, SITE(c)->spool, c,
				 inner, &h->r);
	return ret;
}

void caller_stat(struct ctr *c, struct stat *st, mode_t mode)
{
	struct fuse_context *ctx = fuse_get_context();

	memset(st, 0, sizeof(*st));
	st->st_mode = mode;
	st->st_uid = ctx->uid;
	st->st_gid = ctx->gid;
	st->st_nlink = 1;
	engine_clock(SITE(c)->e, &st->st_mtim);
}

/* A new entry in a setgid directory takes the directory's group, and a
 * new directory there the setgid bit too, as Linux's inode_init_owner()
 * does (the kernel has already cleared a new file's S_ISGID where its
 * caller may not keep it). */
void parent_sgid(struct fs *fs, struct ctr *c, const char *inner,
		 struct stat *st)
{
	char parent[PATH_MAX];
	struct stat pst;

	struct wfile *w;

	if (pathmap_parent(inner, parent, sizeof(parent)) < 0)
		return;
	/* the directory as last known, however old, when it is not pending:
	 * a PUT into it (the file before this one) left it to be asked
	 * again, and a HEAD per new file for a bit that changes by chmod
	 * alone cost `cp -r` one call per file (the kernel checked this
	 * create against attributes up to attr_timeout old too) */
	w = writer_find(SITE(c)->writer, c->id, parent);
	if (w)
		wfile_put(w);
	if ((w || meta_cached(SITE(c)->meta, c, parent, &pst) < 0) &&
	    stat_path(fs, c, parent, &pst) < 0)
		return;
	if (!(pst.st_mode & S_ISGID))
		return;
	st->st_gid = pst.st_gid;
	/* Podman's archive API reports every owner as 0:0: the group as
	 * the container's stat says (where none runs, the caller's) */
	if (engine_quirks(SITE(c)->e)->owners_zero &&
	    agent_owner(SITE(c)->e, c->id, parent, &pst.st_uid, &pst.st_gid) <
		0)
		st->st_gid = fuse_get_context()->gid;
	else if (engine_quirks(SITE(c)->e)->owners_zero)
		st->st_gid = pst.st_gid;
	if (S_ISDIR(st->st_mode))
		st->st_mode |= S_ISGID;
}

/* Opens for writing; mode is used when creating. */
static void kill_priv(struct wfile *w);

static int open_write(struct fs *fs, struct ctr *c, const char *inner,
		      int flags, bool create, mode_t mode, struct handle *h)
{
	struct stat st, cst;
	int ret = 0;

	if (create) {
		caller_stat(c, &cst, S_IFREG | (mode & 07777));
		parent_sgid(fs, c, inner, &cst);
		return writer_open(SITE(c)->writer, c, inner, flags | O_TRUNC,
				   NULL, &cst, &h->w);
	}
	h->w = writer_reopen(SITE(c)->writer, c->id, inner);
	if (h->w) {
		if (flags & O_TRUNC)
			ret = wfile_truncate(h->w, 0);
		if (ret == 0 && (flags & O_TRUNC))
			kill_priv(h->w);
		if (ret < 0) {
			wfile_put(h->w);
			h->w = NULL;
		}
		return ret;
	}
	ret = meta_getattr(SITE(c)->meta, c, inner, &st, NULL, 0);
	if (ret == 0 && S_ISDIR(st.st_mode))
		ret = -EISDIR;
	else if (ret == 0 && !S_ISREG(st.st_mode))
		ret = -EOPNOTSUPP;
	if (ret == 0 && (flags & O_ACCMODE) == O_WRONLY && !(flags & O_TRUNC) &&
	    !h->deferred) {
		h->deferred = true; /* writer_open() at the first write */
		h->flags = flags;
		return 0;
	}
	if (ret == 0)
		ret = writer_open(SITE(c)->writer, c, inner, flags, &st, NULL,
				  &h->w);
	/* O_TRUNC is a write (FUSE's atomic_o_trunc: the kernel leaves the
	 * truncate, and so the mode change it would make, to us) */
	if (ret == 0 && (flags & O_TRUNC))
		kill_priv(h->w);
	return ret;
}

/* The handle's file being written; for a deferred open, opened now when
 * open is set (its content copied in), else NULL until then. */
struct wfile *handle_wfile(struct handle *h, const char *path, bool open,
			   int *err)
{
	struct fs *fs = fs_get();
	struct wfile *w;
	const char *inner;
	struct ctr *c;
	int ret;

	*err = 0;
	if (!h->deferred)
		return h->w;
	pthread_mutex_lock(&h->lock);
	if (!h->w && open) {
		/* by the name it has now: libfuse passes the current one */
		ret = path ? resolve(fs, path, &c, &inner) : -ENOENT;
		if (ret == 0 && !c)
			ret = -EISDIR;
		if (ret == 0) {
			ret = open_write(fs, c, inner, h->flags, false, 0, h);
			ctr_put(SITE(c)->ctrs, c);
		}
		if (ret == -ENOENT) {
			/* removed in the container since the open: write(2)
			 * has no ENOENT to say it with */
			log_err("cannot write '%s': it was removed since it "
				"was opened",
				path ? path : "(unknown)");
			ret = -EIO;
		}
		*err = ret;
	}
	w = h->w;
	pthread_mutex_unlock(&h->lock);
	return w;
}

/* The status file: its text taken once, at the open, and read from that
 * copy with direct I/O (its size is not known before). */
static int open_status(struct fs *fs, struct fuse_file_info *fi)
{
	struct handle *h;

	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	h = calloc(1, sizeof(*h));
	if (h)
		h->status = malloc(STATUS_MAX);
	if (!h || !h->status) {
		free(h);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->status_len = sites_status(fs, h->status, STATUS_MAX);
	fi->direct_io = 1;
	fi->noflush = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

static int do_open(const char *path, struct fuse_file_info *fi, bool create,
		   mode_t mode)
{
	struct fs *fs = fs_get();
	struct handle *h;
	const char *inner;
	struct ctr *c;
	int ret;

	if (strcmp(path, STATUS_PATH) == 0)
		return create ? -EEXIST : open_status(fs, fi);
	ret = resolve(fs, path, &c, &inner);
	if (ret < 0)
		return ret;
	if (!c)
		return create ? -EACCES : -EISDIR;
	h = calloc(1, sizeof(*h));
	if (!h) {
		ctr_put(SITE(c)->ctrs, c);
		return -ENOMEM;
	}
	pthread_mutex_init(&h->lock, NULL);
	h->writes = create || (fi->flags & O_ACCMODE) != O_RDONLY;
	if (h->writes)
		ret = open_write(fs, c, inner, fi->flags, create, mode, h);
	else
		ret = open_read(fs, c, inner, h);
	ctr_put(SITE(c)->ctrs, c);
	if (ret < 0) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return ret;
	}
	/* A write-only open cannot be mapped, so nothing needs its pages in
	 * the kernel's cache: direct I/O hands the caller's buffer to us
	 * instead of copying it into page cache pages first (the data is
	 * spooled here anyway). Written through the cache, 1 GiB took ~7 s
	 * after a cache drop; direct, ~4 s (docs/performance-notes.md). */
	if ((fi->flags & O_ACCMODE) == O_WRONLY)
		fi->direct_io = 1;
	/* a reader has nothing to do at close: spare the kernel's FLUSH
	 * (one round trip per file of a cp -r) */
	if (!h->writes)
		fi->noflush = 1;
	fi->fh = (uint64_t)(uintptr_t)h;
	return 0;
}

int ctrfs_open(const char *path, struct fuse_file_info *fi)
{
	return do_open(path, fi, false, 0);
}

int ctrfs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return do_open(path, fi, true, mode);
}

int ctrfs_read(const char *path, char *buf, size_t size, off_t off,
	       struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	bool was;
	ssize_t n;

	if (h->status) {
		if (off < 0 || (size_t)off >= h->status_len)
			return 0;
		n = (ssize_t)(h->status_len - (size_t)off);
		if ((size_t)n > size)
			n = (ssize_t)size;
		memcpy(buf, h->status + off, (size_t)n);
		return (int)n;
	}
	if (h->w)
		return (int)wfile_read(h->w, buf, size, off);
	/* this GET is for this caller alone: it may end if the caller dies */
	was = engine_set_abortable(true);
	n = reader_read(h->r, buf, size, off);
	engine_set_abortable(was);
	return (int)n;
}

/* The caller's group or one of its supplementary groups. */
static bool in_group(gid_t gid)
{
	gid_t list[64];
	int n;

	if (fuse_get_context()->gid == gid)
		return true;
	n = fuse_getgroups(64, list);
	for (int i = 0; i < n && i < 64; i++)
		if (list[i] == gid)
			return true;
	return false;
}

/*
 * A write by a caller without CAP_FSETID (taken as: not root) clears
 * setuid, and setgid with group execute or where the caller is not in the
 * file's group, as Linux's setattr_should_drop_suidgid() does. The kernel does
 * it itself (a SETATTR) for a write through its page cache, not for the direct
 * I/O of a write-only open (do_open()), which left a root-owned 04777 file
 * setuid with another user's content.
 */
static void kill_priv(struct wfile *w)
{
	mode_t kill = S_ISUID;
	struct stat st;

	if (fuse_get_context()->uid == 0)
		return;
	wfile_stat(w, &st);
	/* (without group execute: older kernels kept it; 6.18's ext4 here
	 * clears it) */
	if ((st.st_mode & S_ISGID) &&
	    ((st.st_mode & S_IXGRP) || !in_group(st.st_gid)))
		kill |= S_ISGID;
	if (st.st_mode & kill)
		wfile_chmod(w, st.st_mode & ~kill & 07777);
}

int ctrfs_write(const char *path, const char *buf, size_t size, off_t off,
		struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	int err;
	struct wfile *w = handle_wfile(h, path, true, &err);
	ssize_t n;

	if (!w)
		return err < 0 ? err : -EBADF;
	n = wfile_write(w, buf, size, off);
	if (n > 0)
		kill_priv(w);
	return (int)n;
}

/* A file written through its other names: the kernel asks for theirs
 * again (it keeps attributes per name). */
static void others_changed(struct fs *fs, const char *path)
{
	struct names nm = {0};
	const char *inner;
	struct ctr *c;

	if (resolve(fs, path, &c, &inner) < 0 || !c)
		return;
	names_of(fs, c, inner, &nm);
	names_changed(c, &nm);
	ctr_put(SITE(c)->ctrs, c);
}

int ctrfs_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct handle *h = handle_of(fi);
	int err;
	struct wfile *w = handle_wfile(h, path, false, &err);

	/* a reader of a file being written commits nothing at its close:
	 * the writer's close does (and reports the writer's errors); nor
	 * does a deferred open that wrote nothing */
	if (!w || !h->writes)
		return 0;
	if (sites_writeback(fs)) {
		/* queued at this close, committed by write-back; a commit of
		 * another file of the container that failed since the last
		 * close said so is said here */
		err = wfile_queue(w);
		if (err == 0)
			err = wfile_error(w);
		return err < 0 ? err : wfile_take_failure(w, false);
	}
	err = wfile_commit(w);
	if (err == 0 && wfile_has_names(w))
		others_changed(fs, path);
	return err;
}

int ctrfs_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct handle *h = handle_of(fi);
	int err;
	struct wfile *w = handle_wfile(h, path, false, &err);

	if (!w)
		return 0;
	err = wfile_commit(w);
	if (sites_writeback(fs)) {
		int told = wfile_take_failure(w, true);

		err = err < 0 ? err : told;
	}
	return err;
}

/* fsync of a directory (`sync DIR`): what write-back holds below it goes
 * now, and its first error is the answer (docs/design.md, Write-back). */
int ctrfs_fsyncdir(const char *path, int datasync, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	ret = c ? writer_sync(SITE(c)->writer, c->id, inner) : sites_sync(fs);
	if (c)
		ctr_put(SITE(c)->ctrs, c);
	return ret;
}

int ctrfs_release(const char *path, struct fuse_file_info *fi)
{
	struct handle *h = handle_of(fi);
	int err;
	struct wfile *w = handle_wfile(h, NULL, false, &err);

	if (w)
		wfile_put(w);
	free(h->status);
	reader_free(h->r);
	pthread_mutex_destroy(&h->lock);
	free(h);
	return 0;
}
