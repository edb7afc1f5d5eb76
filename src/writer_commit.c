// SPDX-License-Identifier: GPL-2.0-or-later
/* A commit of files being written: the tar body of their PUT, piece by
 * piece from the spool; group commit (one PUT for the files of a directory
 * committed together); what a commit that landed records; a PUT of one
 * entry without data. */
#include "writer.h"
#include "writer_int.h"
#include "ctr.h"
#include "engine.h"
#include "journal.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "spool.h"
#include "tarstream.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR_MAX (3 * 4096)

/* The tar body of a group commit, piece by piece as the engine code asks:
 * each file's header, its data as a range of the spool file, padding;
 * then the end of the archive. */
struct body {
	struct item *items;
	struct item *cur;
	char hdr[HDR_MAX];
	size_t hdr_len;
	off_t size;
	enum { B_NEXT, B_HDR, B_DATA, B_PAD, B_TRAILER, B_DONE } step;
	bool started;
};

static const char zeros[2 * TAR_BLOCK];

static int next_item(struct body *b)
{
	struct wfile *f;
	struct tar_entry te;
	struct stat sp;
	ssize_t n;

	b->cur = b->started ? b->cur->next : b->items;
	b->started = true;
	if (!b->cur) {
		b->step = B_TRAILER;
		return 0;
	}
	f = b->cur->f;
	memset(&sp, 0, sizeof(sp));
	if (f->fd >= 0 && fstat(f->fd, &sp) < 0)
		return -errno;
	memset(&te, 0, sizeof(te));
	te.name = b->cur->name;
	te.st = f->st;
	te.st.st_size = sp.st_size;
	if (f->fd >= 0) {
		te.st.st_mode = S_IFREG | (f->st.st_mode & 07777);
		te.xattrs = f->xattrs;
		te.xattrs_len = f->xattrs_len;
		te.atime = f->atime_set;
	} else {
		/* a directory or a symlink: its header only. A directory's
		 * atime always (Docker 20.10 sets 0 for none) */
		te.symlink = f->link;
		te.atime = f->atime_set || S_ISDIR(f->st.st_mode);
		if (!f->atime_set)
			te.st.st_atim = f->st.st_mtim;
	}
	n = tarstream_header(&te, b->hdr, sizeof(b->hdr));
	if (n < 0)
		return (int)n;
	b->hdr_len = (size_t)n;
	b->size = sp.st_size;
	b->step = B_HDR;
	return 0;
}

static int body_next(void *ctx, struct engine_piece *p)
{
	struct body *b = ctx;
	int ret;

	if (!p) { /* again from the start (engine.h) */
		b->step = B_NEXT;
		b->started = false;
		return 0;
	}

	for (;;) {
		switch (b->step) {
		case B_NEXT:
			ret = next_item(b);
			if (ret < 0)
				return ret;
			continue;
		case B_HDR:
			p->buf = b->hdr;
			p->len = b->hdr_len;
			b->step = B_DATA;
			return 1;
		case B_DATA:
			b->step = B_PAD;
			if (b->size == 0)
				continue;
			/* straight from the spool */
			p->buf = NULL;
			p->fd = b->cur->f->fd;
			p->off = 0;
			p->len = (size_t)b->size;
			return 1;
		case B_PAD:
			b->step = B_NEXT;
			p->len = (TAR_BLOCK - (size_t)(b->size % TAR_BLOCK)) %
				 TAR_BLOCK;
			if (p->len == 0)
				continue;
			p->buf = zeros;
			return 1;
		case B_TRAILER:
			b->step = B_DONE;
			p->buf = zeros;
			p->len = sizeof(zeros);
			return 1;
		case B_DONE:
			return 0;
		}
	}
}

/* Sends items (same container and directory) in one PUT. */
int writer_commit_put_batch(struct writer *w, struct item *items)
{
	struct body b = {.items = items, .step = B_NEXT};
	struct wfile *f0 = items->f;
	off_t bulk = 0;
	char msg[512];
	size_t n = 0;
	int ret;

	for (struct item *it = items; it; it = it->next) {
		struct stat sp;

		if (it->f->fd >= 0 && fstat(it->f->fd, &sp) == 0)
			bulk += sp.st_size;
		n++;
	}
	ret = engine_archive_put(w->e, f0->ctr.id, items->parent, body_next, &b,
				 bulk, msg, sizeof(msg));
	if (ret < 0) {
		/* the engine may have unpacked part of the tar (it died in
		 * the middle, say): what ctrfs knew of these names and their
		 * directory no longer holds, the next lookup asks */
		for (struct item *it = items; it; it = it->next) {
			log_err("cannot write '%s' in container '%s': %s",
				it->f->path, it->f->ctr.name, msg);
			meta_forget(w->m, &it->f->ctr, it->f->path);
		}
	} else if (n > 1) {
		log_dbg("committed %zu files in '%s' with one PUT", n,
			items->parent);
	}
	return ret;
}

static bool busy_has(struct writer *w, const char *key)
{
	for (size_t i = 0; i < w->nbusy; i++)
		if (strcmp(w->busy[i], key) == 0)
			return true;
	return false;
}

static void busy_del(struct writer *w, const char *key)
{
	for (size_t i = 0; i < w->nbusy; i++) {
		if (w->busy[i] == key) {
			w->busy[i] = w->busy[--w->nbusy];
			return;
		}
	}
}

/* Group commit: the first committer of a (container, directory) sends
 * every item queued for it; the others wait for their result. */
static int commit_grouped(struct writer *w, struct item *me)
{
	char key[PATH_MAX + 80];

	snprintf(key, sizeof(key), "%s%s", me->f->ctr.id, me->parent);
	pthread_mutex_lock(&w->lock);
	me->next = w->queue;
	w->queue = me;
	while (!me->done) {
		struct item *batch = NULL, **pp;
		char **nb;

		if (busy_has(w, key)) {
			pthread_cond_wait(&w->cond, &w->lock);
			continue;
		}
		nb = realloc(w->busy, (w->nbusy + 1) * sizeof(*nb));
		if (!nb) {
			/* me lives on the caller's stack */
			for (struct item **q = &w->queue; *q; q = &(*q)->next) {
				if (*q == me) {
					*q = me->next;
					break;
				}
			}
			pthread_mutex_unlock(&w->lock);
			return -ENOMEM;
		}
		w->busy = nb;
		w->busy[w->nbusy++] = key;
		for (pp = &w->queue; *pp;) {
			struct item *it = *pp;

			if (strcmp(it->f->ctr.id, me->f->ctr.id) == 0 &&
			    strcmp(it->parent, me->parent) == 0) {
				*pp = it->next;
				it->next = batch;
				batch = it;
			} else {
				pp = &it->next;
			}
		}
		pthread_mutex_unlock(&w->lock);
		{
			int ret = writer_commit_put_batch(w, batch);

			pthread_mutex_lock(&w->lock);
			for (struct item *it = batch, *next; it; it = next) {
				next = it->next;
				it->result = ret;
				it->done = true;
			}
		}
		busy_del(w, key);
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return me->result;
}

/* f (locked) is in the container now, by a change that began at
 * wall-clock second t0: unlocks it and records what was written. */
void writer_commit_landed(struct wfile *f, long t0)
{
	bool was_there = f->in_container;
	struct stat st;

	f->dirty = false;
	f->in_container = true;
	journal_drop(f->w->journal, f->jent);
	atomic_store(&f->attempts, 0);
	atomic_store(&f->last_err, 0);
	/* a new file in the container, or a change of this one: its ctime
	 * is now (meta_committed() says the same) */
	engine_clock(f->w->e, &f->st.st_ctim);
	writer_stat_locked(f, &st);
	log_dbg("landed '%s' in container '%s' (mode %o, owner %d:%d)", f->path,
		f->ctr.name, (unsigned)(st.st_mode & 07777), (int)st.st_uid,
		(int)st.st_gid);
	/* before a rename or unlink waiting for f can change what it says */
	if (f->links > 1) {
		/* written through its names (writer_through.c): the same
		 * file, all of its names, one record for them */
		meta_update(f->w->m, &f->ctr, f->path, &st);
		meta_xattrs_put(f->w->m, &f->ctr, f->path, &st, f->xattrs,
				f->xattrs_len);
	} else if (f->fd >= 0) {
		if (!was_there)
			writer_note_made(f);
		meta_committed(f->w->m, &f->ctr, f->path, &st, t0);
		meta_xattrs_put(f->w->m, &f->ctr, f->path, &st, f->xattrs,
				f->xattrs_len);
		writer_keep_content(f);
	} else if (S_ISDIR(st.st_mode) && was_there) {
		meta_update(f->w->m, &f->ctr, f->path, &st); /* its listing
							      * stays */
	} else {
		meta_committed_link(f->w->m, &f->ctr, f->path, &st, f->link,
				    t0);
	}
	pthread_mutex_unlock(&f->lock);
}

/* Content copied aside when a file lands: at most this much, a file. */
#define KEEP_CONTENT_MAX ((off_t)256 * 1024)

void writer_keep_content(struct wfile *f)
{
	struct stat sp;
	int fd;

	/* (write-back folds what comes after a close into the pending file:
	 * nothing copies it in) */
	if (f->w->writeback > 0 || f->links > 1 || fstat(f->fd, &sp) < 0 ||
	    sp.st_size == 0 || sp.st_size > KEEP_CONTENT_MAX)
		return;
	/* a copy: the spool file may be written again, and a memory one
	 * is counted against the memory spool's cap */
	fd = spool_file(f->w->spool);
	if (fd < 0)
		return;
	if (spool_copy(fd, f->fd) < 0)
		close(fd);
	else
		meta_keep_content(f->w->m, &f->ctr, f->path, fd, sp.st_size);
}

int wfile_commit(struct wfile *f)
{
	char parent[PATH_MAX];
	struct item me = {.f = f, .parent = parent};
	long t0 = engine_now(f->w->e);
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	if (f->error) {
		ret = f->error;
		goto out;
	}
	if (!f->dirty || f->unlinked)
		goto out;
	pathmap_parent(f->path, parent, sizeof(parent));
	/* above the pending directories that are not made yet: the engine
	 * makes them (0755) as it unpacks, their entries set them later */
	pthread_mutex_lock(&f->w->lock);
	writer_put_dir_locked(f->w, f->ctr.id, parent, parent, sizeof(parent));
	pthread_mutex_unlock(&f->w->lock);
	writer_fit_links(&f, 1, parent, sizeof(parent));
	me.name = f->path + (strcmp(parent, "/") == 0 ? 1 : strlen(parent) + 1);
	ret = writer_commit_through(f);
	if (ret == -EOPNOTSUPP)
		ret = commit_grouped(f->w, &me);
	f->failed = ret < 0;
	if (ret == 0) {
		pthread_mutex_lock(&f->w->lock);
		writer_made_above_locked(f->w, f->ctr.id, parent, f->path, t0);
		pthread_mutex_unlock(&f->w->lock);
		writer_commit_landed(f, t0);
		return 0;
	}
out:
	pthread_mutex_unlock(&f->lock);
	return ret;
}

struct mem_body {
	char buf[HDR_MAX + 3 * TAR_BLOCK];
	size_t len;
	bool sent;
};

static int mem_next(void *ctx, struct engine_piece *p)
{
	struct mem_body *b = ctx;

	if (!p) { /* again from the start (engine.h) */
		b->sent = false;
		return 0;
	}
	if (b->sent)
		return 0;
	b->sent = true;
	p->buf = b->buf;
	p->len = b->len;
	return 1;
}

int writer_put_entry(struct writer *w, const struct ctr *c, const char *dir,
		     const struct tar_entry *te)
{
	struct mem_body *b = calloc(1, sizeof(*b));
	char msg[512];
	ssize_t n;
	int ret;

	if (!b)
		return -ENOMEM;
	n = tarstream_header(te, b->buf, HDR_MAX);
	if (n < 0) {
		free(b);
		return (int)n;
	}
	b->len = (size_t)n + 2 * TAR_BLOCK; /* calloc'd: the trailer */
	ret = engine_archive_put(w->e, c->id, dir, mem_next, b, 0, msg,
				 sizeof(msg));
	if (ret < 0)
		log_err("cannot create '%s' in '%s' of container '%s': %s",
			te->name, dir, c->name, msg);
	free(b);
	return ret;
}
