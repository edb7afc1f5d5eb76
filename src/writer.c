// SPDX-License-Identifier: GPL-2.0-or-later
#include "writer.h"
#include "writer_int.h"
#include "agent.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "journal.h"
#include "jrecord.h"
#include "log.h"
#include "meta.h"
#include "reader.h"
#include "spool.h"
#include "wbstatus.h"
#include "xattrs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>

struct writer *writer_new(struct engine *e, struct meta *m, struct spool *s,
			  long long mem_cap)
{
	struct writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->status = wbstatus_new();
	if (!w->status) {
		free(w);
		return NULL;
	}
	w->e = e;
	w->m = m;
	w->spool = s;
	w->mem_cap = mem_cap;
	w->nslots = 256;
	w->slots = calloc(w->nslots, sizeof(*w->slots));
	if (!w->slots) {
		wbstatus_free(w->status);
		free(w);
		return NULL;
	}
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	pthread_cond_init(&w->flush_cond, NULL);
	return w;
}

void writer_free(struct writer *w)
{
	if (!w)
		return;
	writer_drain(w);
	free(w->busy);
	free(w->slots);
	pthread_cond_destroy(&w->flush_cond);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	wbstatus_free(w->status);
	free(w);
}

/* One piece, though long: the wfile is listed before its content is copied
 * in and under its lock until then, and each later failure undoes what the
 * steps before it did (shared with an open that came first, unlisted). */
int writer_open(struct writer *w, const struct ctr *c, const char *path,
		int flags, const struct stat *existing,
		const struct stat *create, struct wfile **out)
{
	struct wfile *f, *other;
	struct stat owned;
	int ret;

	f = writer_reopen(w, c->id, path);
	if (f && !S_ISREG(f->st.st_mode)) { /* a pending directory, link */
		wfile_put(f);
		return S_ISDIR(f->st.st_mode) ? -EISDIR : -EOPNOTSUPP;
	}
	if (f)
		goto shared;
	if (existing && engine_quirks(w->e)->owners_zero) {
		/* the PUT puts the owner back: the container's, not the 0:0
		 * Podman's archive API reports */
		owned = *existing;
		ret = agent_owner(w->e, c->id, path, &owned.st_uid,
				  &owned.st_gid);
		if (ret < 0) {
			log_err("cannot write '%s' in container '%s': Podman's "
				"archive API reports every owner as 0:0, and "
				"'stat' does not run there to keep the file's",
				path, c->name);
			return -EOPNOTSUPP;
		}
		existing = &owned;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	pthread_mutex_init(&f->lock, NULL);
	f->w = w;
	f->refs = 1;
	f->ctr = *c;
	f->path = strdup(path);
	f->fd = -1;
	if (w->mem_cap > 0 &&
	    (!existing || (flags & O_TRUNC) || existing->st_size == 0)) {
		/* written from the start: in memory until the cap (content
		 * copied in, for an edit in place, goes to disk) */
		f->fd = spool_file_mem(w->spool);
		f->in_mem = f->fd >= 0;
	}
	if (f->fd < 0)
		f->fd = spool_file(w->spool);
	if (!f->path || f->fd < 0) {
		ret = f->fd < 0 ? f->fd : -ENOMEM;
		log_err("cannot write '%s' in container '%s': spool: %s", path,
			c->name, strerror(-ret));
		goto out_free;
	}
	f->st = existing ? *existing : *create;
	f->links = f->st.st_nlink;
	f->open_uid = f->st.st_uid;
	f->open_gid = f->st.st_gid;
	/* a file with other names keeps its number and count: it is written
	 * through them (writer_through.c; where it cannot be, its commit
	 * gives it a number of its own) */
	if (f->links <= 1)
		f->st.st_nlink = 1;
	if (!f->st.st_ino)
		f->st.st_ino = cache_new_ino();
	f->in_container = existing != NULL;
	f->dirty = !existing || (flags & O_TRUNC);
	if (!existing || (flags & O_TRUNC))
		engine_clock(w->e, &f->st.st_mtim);
	/* listed before its content is copied in, locked until then: an
	 * unlink, rename or open of the path meanwhile finds it and waits,
	 * as on a file open before they came */
	pthread_mutex_lock(&f->lock);
	pthread_mutex_lock(&w->lock);
	other = writer_find_locked(w, c->id, path);
	if (other) {
		writer_take_locked(other, true);
	} else {
		writer_list_locked(w, f);
	}
	pthread_mutex_unlock(&w->lock);
	if (other) {
		pthread_mutex_unlock(&f->lock);
		writer_wfile_free(f); /* never listed */
		f = other;
		goto shared;
	}
	if (existing && !(flags & O_TRUNC) && existing->st_size > 0) {
		ret = reader_copy(w->e, w->m, c, path, f->fd);
		if (ret < 0) {
			/* an open that shared it meanwhile fails at close */
			f->error = ret;
			pthread_mutex_lock(&w->lock);
			writer_unlist_locked(w, f); /* no new open finds it */
			pthread_mutex_unlock(&w->lock);
			atomic_store(&f->ready, true);
			pthread_mutex_unlock(&f->lock);
			wfile_put(f);
			return ret;
		}
	}
	/* an edit in place keeps the file's extended attributes (a write
	 * then drops a capability: the kernel removes it) */
	if (existing && !(flags & O_TRUNC) && S_ISREG(existing->st_mode) &&
	    (ret = meta_xattrs(w->m, &f->ctr, path, existing, &f->xattrs,
			       &f->xattrs_len)) < 0)
		log_warn("'%s' in container '%s': its extended attributes are "
			 "not known (%s): written without them",
			 path, c->name, strerror(-ret));
	atomic_store(&f->ready, true);
	pthread_mutex_unlock(&f->lock);
	if (!existing)
		writer_touch_parent(w, c->id, path);
	*out = f;
	return 0;
shared:
	if ((flags & O_TRUNC) && (ret = wfile_truncate(f, 0)) < 0) {
		wfile_put(f);
		return ret;
	}
	*out = f;
	return 0;
out_free:
	writer_wfile_free(f);
	return ret;
}

/* f->lock held: f changed, and is to be committed (again). */
static void mark_dirty(struct wfile *f)
{
	engine_clock(f->w->e, &f->st.st_ctim);
	atomic_store(&f->changed, now_mono());
	f->dirty = true;
	f->failed = false; /* the next close tries it, whatever the last did */
	atomic_store(&f->attempts, 0); /* new content: tried anew */
}

/* f->lock held, after a change of f's header or name: a record of it
 * (a pending file) says so too. */
static void rejournal_locked(struct wfile *f)
{
	int ret;

	if (!journal_recorded(f->jent) || f->unlinked || f->error)
		return;
	ret = writer_journal_locked(f);
	if (ret < 0)
		log_err("cannot update the journal entry of '%s' in container "
			"'%s': %s; a restart after a crash would commit it as "
			"it was at its close",
			f->path, f->ctr.name, strerror(-ret));
}

static void touch_mtime(struct wfile *f)
{
	mark_dirty(f);
	if (!f->mtime_set)
		f->st.st_mtim = f->st.st_ctim; /* one time, as write(2) */
}

/* f->lock held, f in memory: reserves the memory spool up to end. False
 * when that would pass the cap. */
static bool reserve_locked(struct wfile *f, off_t end)
{
	struct writer *w = f->w;
	long long grow = end - f->mem_bytes;

	if (grow <= 0)
		return true;
	if (atomic_fetch_add(&w->mem_used, grow) + grow > w->mem_cap) {
		atomic_fetch_sub(&w->mem_used, grow);
		return false;
	}
	f->mem_bytes = end;
	return true;
}

/* f->lock held, f in memory: moves its data to a disk spool file, which
 * takes over f's fd number (dup3), so a read that does not take the lock
 * reads the same bytes before and after. 0 or -errno. */
static int spill_locked(struct wfile *f)
{
	struct stat st;
	int fd = spool_file(f->w->spool), ret;

	if (fd < 0)
		return fd;
	ret = spool_copy(fd, f->fd);
	if (ret == 0 && fstat(fd, &st) < 0)
		ret = -errno;
	if (ret == 0 && dup3(fd, f->fd, O_CLOEXEC) < 0)
		ret = -errno;
	close(fd);
	if (ret < 0) {
		log_err("cannot move '%s' in container '%s' to the disk "
			"spool: %s; it stays in memory",
			f->path, f->ctr.name, strerror(-ret));
		f->stay_in_mem = true;
		return ret;
	}
	atomic_fetch_sub(&f->w->mem_used, f->mem_bytes);
	f->mem_bytes = 0;
	f->in_mem = false;
	log_dbg("spool: '%s' in container '%s' goes on on disk after %lld "
		"bytes in memory",
		f->path, f->ctr.name, (long long)st.st_size);
	return 0;
}

ssize_t wfile_write(struct wfile *f, const char *buf, size_t size, off_t off)
{
	ssize_t n;

	pthread_mutex_lock(&f->lock);
	if (f->in_mem && !f->stay_in_mem &&
	    !reserve_locked(f, off + (off_t)size))
		spill_locked(f); /* failing, it goes on in memory */
	n = pwrite(f->fd, buf, size, off);
	if (n < 0 && errno == ENOSPC && f->in_mem && !f->stay_in_mem &&
	    spill_locked(f) == 0)
		n = pwrite(f->fd, buf, size, off); /* the tmpfs was full */
	if (n < 0) {
		n = -errno;
		f->error = (int)n;
		log_err("cannot write '%s' in container '%s': spool: %s",
			f->path, f->ctr.name, strerror(errno));
	} else {
		/* the next PUT sets the atime to the new mtime */
		f->mtime_set = f->atime_set = false;
		touch_mtime(f);
	}
	pthread_mutex_unlock(&f->lock);
	return n;
}

ssize_t wfile_read(struct wfile *f, char *buf, size_t size, off_t off)
{
	ssize_t n;

	if (!atomic_load(&f->ready)) {
		/* its opener copies the content in, under the lock */
		pthread_mutex_lock(&f->lock);
		pthread_mutex_unlock(&f->lock);
	}
	n = pread(f->fd, buf, size, off);
	return n < 0 ? -errno : n;
}

int wfile_truncate(struct wfile *f, off_t size)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	/* grown past the memory spool's cap: on to the disk spool, as a
	 * write does (a sparse file in memory would take any size, where
	 * the disk's filesystem says EFBIG, and the commit would then send
	 * it whole) */
	if (f->in_mem && !f->stay_in_mem && !reserve_locked(f, size))
		spill_locked(f); /* failing, it goes on in memory */
	if (ftruncate(f->fd, size) < 0) {
		ret = -errno;
	} else {
		touch_mtime(f);
		if (f->in_mem && size < f->mem_bytes) { /* given back */
			atomic_fetch_sub(&f->w->mem_used, f->mem_bytes - size);
			f->mem_bytes = size;
		}
		rejournal_locked(f);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void wfile_chmod(struct wfile *f, mode_t mode)
{
	pthread_mutex_lock(&f->lock);
	f->st.st_mode = (f->st.st_mode & S_IFMT) | (mode & 07777);
	mark_dirty(f);
	rejournal_locked(f);
	pthread_mutex_unlock(&f->lock);
}

void wfile_chown(struct wfile *f, uid_t uid, gid_t gid)
{
	pthread_mutex_lock(&f->lock);
	if (uid != (uid_t)-1)
		f->st.st_uid = uid;
	if (gid != (gid_t)-1)
		f->st.st_gid = gid;
	mark_dirty(f);
	rejournal_locked(f);
	pthread_mutex_unlock(&f->lock);
}

void wfile_utimens(struct wfile *f, const struct timespec *atime,
		   const struct timespec *mtime)
{
	pthread_mutex_lock(&f->lock);
	if (mtime) {
		f->st.st_mtim = *mtime;
		f->mtime_set = true;
	}
	if (atime) {
		f->st.st_atim = *atime;
		f->atime_set = true;
	}
	mark_dirty(f);
	rejournal_locked(f);
	pthread_mutex_unlock(&f->lock);
}

ssize_t wfile_getxattr(struct wfile *f, const char *name, void *value,
		       size_t size)
{
	ssize_t n;

	pthread_mutex_lock(&f->lock);
	n = name ? xattrs_value(f->xattrs, f->xattrs_len, name, value, size)
		 : xattrs_names(f->xattrs, f->xattrs_len, value, size);
	pthread_mutex_unlock(&f->lock);
	return n;
}

int wfile_setxattr(struct wfile *f, const char *name, const void *value,
		   size_t size, int flags)
{
	int ret;

	pthread_mutex_lock(&f->lock);
	/* a pending directory or symlink: tars carry capabilities of files */
	ret = f->fd < 0 ? -EOPNOTSUPP
			: xattrs_edit(&f->xattrs, &f->xattrs_len, name, value,
				      size, flags);
	if (ret == 0) {
		mark_dirty(f);
		rejournal_locked(f);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* f->lock held: f's name is newpath from now on (p, allocated). */
static void set_path_locked(struct wfile *f, char *p)
{
	pthread_mutex_lock(&f->w->lock); /* writer_find() reads the path */
	writer_repath_locked(f->w, f, p);
	pthread_mutex_unlock(&f->w->lock);
}

/* Takes the locks of two wfiles (either may be NULL or both the same) in
 * the order of their addresses, the order flush_batch() takes a batch in. */
static void lock_two(struct wfile *a, struct wfile *b)
{
	if (a && b && (uintptr_t)b < (uintptr_t)a) {
		struct wfile *x = a;

		a = b;
		b = x;
	}
	if (a)
		pthread_mutex_lock(&a->lock);
	if (b && b != a)
		pthread_mutex_lock(&b->lock);
}

static void unlock_two(struct wfile *a, struct wfile *b)
{
	if (a)
		pthread_mutex_unlock(&a->lock);
	if (b && b != a)
		pthread_mutex_unlock(&b->lock);
}

int writer_rename(struct writer *w, struct wfile *f, struct wfile *t,
		  const char *newpath, bool target_there, int (*move)(void *),
		  void *arg)
{
	bool moved = false;
	char *p = NULL;
	int ret = 0;

	if (t == f)
		t = NULL; /* the same name: nothing is replaced */
	if (f && !(p = strdup(newpath)))
		return -ENOMEM;
	lock_two(f, t);
	if (!f || f->in_container) {
		ret = move(arg);
		moved = true;
	}
	if (ret == 0) {
		pthread_mutex_lock(&w->lock); /* writer_find() reads these */
		if (f) {
			writer_repath_locked(w, f, p);
			p = NULL;
			/* not moved: what the container holds at newpath
			 * stays until f's commit replaces it, so an unlink
			 * or rename of f before that must reach it */
			if (!moved)
				f->in_container =
				    t ? t->in_container : target_there;
		}
		if (t)
			t->unlinked = true;
		pthread_mutex_unlock(&w->lock);
		if (t) {
			t->dirty = false;
			journal_drop(w->journal, t->jent);
		}
		if (f)
			rejournal_locked(f);
	}
	unlock_two(f, t);
	free(p);
	return ret;
}

int wfile_error(struct wfile *f)
{
	return f->error;
}

int wfile_unlink(struct wfile *f, int (*remove)(void *), void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (f->in_container)
		ret = remove(arg);
	if (ret == -ENOENT)
		ret = 0; /* gone in the container meanwhile: f was the file */
	if (ret == 0) {
		pthread_mutex_lock(&f->w->lock); /* find_locked() reads it */
		f->unlinked = true;
		pthread_mutex_unlock(&f->w->lock);
		f->dirty = false;
		journal_drop(f->w->journal, f->jent);
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

void writer_repath(struct writer *w, const char *ctr_id, const char *from,
		   const char *to)
{
	size_t flen = strlen(from), n;
	struct wfile **list;

	pthread_mutex_lock(&w->lock);
	list =
	    writer_collect_locked(w, ctr_id, from, flen, true, false, true, &n);
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++) {
		struct wfile *f = list[i];
		char p[PATH_MAX];

		pthread_mutex_lock(&f->lock);
		if (writer_below(f->path, from, flen, true) &&
		    (size_t)snprintf(p, sizeof(p), "%s%s", to, f->path + flen) <
			sizeof(p)) {
			char *np = strdup(p);

			if (np) {
				set_path_locked(f, np);
				rejournal_locked(f);
			}
		}
		pthread_mutex_unlock(&f->lock);
		wfile_put(f);
	}
	free(list);
}

bool writer_holds_below(struct writer *w, const char *ctr_id, const char *dir)
{
	size_t dlen = strlen(dir);
	bool found = false;

	pthread_mutex_lock(&w->lock);
	for (struct wfile *f = w->files; f && !found; f = f->next)
		found = !f->unlinked && strcmp(f->ctr.id, ctr_id) == 0 &&
			writer_below(f->path, dir, dlen, true);
	pthread_mutex_unlock(&w->lock);
	return found;
}
