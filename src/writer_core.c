// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The writer's table of files being written (struct wfile, writer_int.h):
 * their list and index by container and path, lookups and references,
 * what a file's stat and journal record say, and its free. The rooms of
 * the writer above it (writer.c, writer_pending.c, writer_commit.c,
 * writer_wb.c) use it; it calls none of them.
 */
#include "writer.h"
#include "writer_int.h"
#include "journal.h"
#include "jrecord.h"
#include "meta.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether path lies below dir (dlen bytes, 0 for "/"): anywhere, or as an
 * entry of dir itself. */
bool writer_below(const char *path, const char *dir, size_t dlen, bool deep)
{
	return strncmp(path, dir, dlen) == 0 && path[dlen] == '/' &&
	       (deep || !strchr(path + dlen + 1, '/'));
}

/* FNV-1a of the container id and the path. */
static size_t key_hash(const char *ctr_id, const char *path)
{
	uint64_t h = 14695981039346656037ULL;

	for (const char *p = ctr_id; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	h = (h ^ '\n') * 1099511628211ULL;
	for (const char *p = path; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	return (size_t)h;
}

/* w->lock held: twice the slots once there are more files than slots (a
 * table that cannot grow keeps its slots: longer chains, same answers). */
static void index_grow_locked(struct writer *w)
{
	size_t n = w->nslots * 2;
	struct wfile **slots = calloc(n, sizeof(*slots));

	if (!slots)
		return;
	for (size_t i = 0; i < w->nslots; i++) {
		for (struct wfile *f = w->slots[i], *next; f; f = next) {
			next = f->hnext;
			f->hnext = slots[f->hash & (n - 1)];
			slots[f->hash & (n - 1)] = f;
		}
	}
	free(w->slots);
	w->slots = slots;
	w->nslots = n;
}

static void index_add_locked(struct writer *w, struct wfile *f)
{
	struct wfile **slot;

	if (w->nindexed >= w->nslots)
		index_grow_locked(w);
	f->hash = key_hash(f->ctr.id, f->path);
	slot = &w->slots[f->hash & (w->nslots - 1)];
	f->hnext = *slot;
	*slot = f;
	w->nindexed++;
}

/* Whether f was in the index (it is not now). */
static bool index_del_locked(struct writer *w, struct wfile *f)
{
	for (struct wfile **pp = &w->slots[f->hash & (w->nslots - 1)]; *pp;
	     pp = &(*pp)->hnext) {
		if (*pp == f) {
			*pp = f->hnext;
			w->nindexed--;
			return true;
		}
	}
	return false;
}

/* w->lock held: f's path is p (allocated) from now on; one taken off the
 * list (a failed copy-in that a rename had found before) stays out. */
void writer_repath_locked(struct writer *w, struct wfile *f, char *p)
{
	bool indexed = index_del_locked(w, f);

	free(f->path);
	f->path = p;
	if (indexed)
		index_add_locked(w, f);
}

struct wfile *writer_find_locked(struct writer *w, const char *ctr_id,
				 const char *path)
{
	size_t h = key_hash(ctr_id, path);

	for (struct wfile *f = w->slots[h & (w->nslots - 1)]; f; f = f->hnext)
		if (f->hash == h && !f->unlinked &&
		    strcmp(f->path, path) == 0 &&
		    strcmp(f->ctr.id, ctr_id) == 0)
			return f;
	return NULL;
}

/* A reference to f (w->lock held); reopen takes it out of the write-back
 * queue: it is being written again. */
void writer_take_locked(struct wfile *f, bool reopen)
{
	f->refs++;
	f->opens++;
	if (reopen)
		f->pending = false;
}

static struct wfile *find_ref(struct writer *w, const char *ctr_id,
			      const char *path, bool reopen)
{
	struct wfile *f;

	pthread_mutex_lock(&w->lock);
	f = writer_find_locked(w, ctr_id, path);
	if (f)
		writer_take_locked(f, reopen);
	pthread_mutex_unlock(&w->lock);
	return f;
}

struct wfile *writer_find(struct writer *w, const char *ctr_id,
			  const char *path)
{
	return find_ref(w, ctr_id, path, false);
}

struct wfile *writer_reopen(struct writer *w, const char *ctr_id,
			    const char *path)
{
	return find_ref(w, ctr_id, path, true);
}

void writer_list_locked(struct writer *w, struct wfile *f)
{
	f->next = w->files;
	w->files = f;
	index_add_locked(w, f);
}

void writer_unlist_locked(struct writer *w, struct wfile *f)
{
	for (struct wfile **pp = &w->files; *pp; pp = &(*pp)->next) {
		if (*pp == f) {
			*pp = f->next;
			index_del_locked(w, f);
			return;
		}
	}
}

/* A wfile nobody references any more, or never listed. */
void writer_wfile_free(struct wfile *f)
{
	if (f->jent)
		journal_release(f->w->journal, &f->jent, f->jkeep);
	if (f->in_mem)
		atomic_fetch_sub(&f->w->mem_used, f->mem_bytes);
	if (f->fd >= 0)
		close(f->fd);
	pthread_mutex_destroy(&f->lock);
	free(f->path);
	free(f->link);
	free(f->xattrs);
	free(f);
}

/* f->lock held: writes f's journal entry (its data and what it is to
 * become), so that a daemon that dies before the commit leaves it for the
 * next start. 0 or -errno. */
int writer_journal_locked(struct wfile *f)
{
	struct jrecord *r;
	int ret;

	if (!f->w->journal)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	snprintf(r->ctr_id, sizeof(r->ctr_id), "%s", f->ctr.id);
	snprintf(r->ctr_name, sizeof(r->ctr_name), "%s", f->ctr.name);
	snprintf(r->path, sizeof(r->path), "%s", f->path);
	r->mode = f->st.st_mode & 07777;
	r->uid = f->st.st_uid;
	r->gid = f->st.st_gid;
	r->mtime = f->st.st_mtim;
	r->type = S_ISDIR(f->st.st_mode)   ? 'd'
		  : S_ISLNK(f->st.st_mode) ? 'l'
					   : 'f';
	if (f->link)
		snprintf(r->link, sizeof(r->link), "%s", f->link);
	r->has_atime = f->atime_set;
	r->atime = f->st.st_atim;
	if (f->xattrs_len > sizeof(r->xattrs)) {
		free(r); /* not kept whole: the close commits it at once */
		return -E2BIG;
	}
	if (f->xattrs_len)
		memcpy(r->xattrs, f->xattrs, f->xattrs_len);
	r->xattrs_len = f->xattrs_len;
	ret = journal_put(f->w->journal, &f->jent, f->fd, r);
	free(r);
	return ret;
}

struct wfile *wfile_get(struct wfile *f)
{
	pthread_mutex_lock(&f->w->lock);
	writer_take_locked(f, false);
	pthread_mutex_unlock(&f->w->lock);
	return f;
}

void writer_stat_locked(struct wfile *f, struct stat *st)
{
	struct stat sp;

	*st = f->st;
	if (f->fd >= 0 && fstat(f->fd, &sp) == 0) {
		st->st_size = sp.st_size;
		st->st_blocks = sp.st_blocks;
	}
	/* no atime set: a PUT makes it the mtime (one set before the mtime
	 * is set after the commit, with touch: fs_change.c) */
	if (!f->atime_set)
		st->st_atim = st->st_mtim;
	if (!st->st_ctim.tv_sec && !st->st_ctim.tv_nsec)
		st->st_ctim = st->st_mtim;
	st->st_blksize = CTRFS_WRITE_BLKSIZE;
}

void wfile_stat(struct wfile *f, struct stat *st)
{
	pthread_mutex_lock(&f->lock);
	writer_stat_locked(f, st);
	pthread_mutex_unlock(&f->lock);
}

bool wfile_has_names(struct wfile *f)
{
	bool has;

	pthread_mutex_lock(&f->lock);
	has = f->links > 1;
	pthread_mutex_unlock(&f->lock);
	return has;
}

/*
 * w->lock held: references to the wfiles of container ctr_id (NULL: of
 * every container) below dir
 * (dlen and deep as for writer_below()), only those pending or being sent when
 * queued is set, in a new array of *n (fewer when memory runs out).
 */
struct wfile **writer_collect_locked(struct writer *w, const char *ctr_id,
				     const char *dir, size_t dlen, bool deep,
				     bool queued, bool failed, size_t *n)
{
	struct wfile **list = NULL;
	size_t cap = 0;

	*n = 0;
	for (struct wfile *f = w->files; f; f = f->next) {
		/* queued: in the write-back queue or being sent; without
		 * failed, not waiting for a try after a failure */
		if ((queued && !f->pending && !f->flushing) ||
		    (queued && !failed && f->pending &&
		     atomic_load(&f->attempts) > 0) ||
		    (ctr_id && strcmp(f->ctr.id, ctr_id) != 0) ||
		    (!writer_below(f->path, dir, dlen, deep) &&
		     /* deep: dir's own entry too (a directory pending) */
		     !(deep && f->fd < 0 && S_ISDIR(f->st.st_mode) &&
		       strlen(f->path) == dlen &&
		       strncmp(f->path, dir, dlen) == 0)))
			continue;
		if (*n == cap) {
			size_t ncap = cap ? 2 * cap : 16;
			struct wfile **nl = realloc(list, ncap * sizeof(*nl));

			if (!nl)
				break;
			list = nl;
			cap = ncap;
		}
		writer_take_locked(f, false);
		list[(*n)++] = f;
	}
	return list;
}
