// SPDX-License-Identifier: GPL-2.0-or-later
/* Write-back: files closed after writing wait in a queue that one thread,
 * the flusher, sends in batches (one PUT per container at the files'
 * common directory); failed ones are tried again with a growing delay,
 * then kept by the rescue; settle, sync, status and drain wait for it or
 * report on it. The last reference to a file (wfile_put()) hands it to
 * the queue or to a commit. */
#include "writer.h"
#include "writer_int.h"
#include "ctr.h"
#include "engine.h"
#include "journal.h"
#include "log.h"
#include "pathmap.h"
#include "spool.h"
#include "wbstatus.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

/* The wait before the next write-back try of a file that failed
 * attempts times, with write-back delay wb. */
static double wb_delay(double wb, int attempts)
{
	double d = wb, cap = wb > WB_RETRY_MAX ? wb : WB_RETRY_MAX;

	for (int i = 0; i < attempts && d < cap; i++)
		d *= 2;
	return d < cap ? d : cap;
}

/* Whether a batch may leave out what changed a moment ago (not on Podman:
 * quirk batch_whole). */
static bool holds_back(const struct writer *w)
{
	return !engine_quirks(w->e)->batch_whole;
}

/* w->lock held: when pending f may go. A file never tried waits, beyond
 * its due, until it has not changed for half the delay (one delay past its
 * due at most: one that keeps changing still lands): rsync and cp -p
 * change a file right after its close (times, mode, its final name), and
 * in a batch each change would wait for its PUT, then need a commit of
 * its own (a rename, the container's mv). A directory's entry waits for
 * what is held back below it (keep_dirs_last()). */
static double ready_at(const struct writer *w, const struct wfile *f)
{
	double settled = atomic_load(&f->changed) + w->writeback / 2;

	if (settled > f->due + w->writeback)
		settled = f->due + w->writeback;

	return holds_back(w) && atomic_load(&f->attempts) == 0 &&
		       settled > f->due
		   ? settled
		   : f->due;
}

/* w->lock held: queues f for write-back if it has data to send (dirty:
 * changed since its last commit) and write-back has not given up on it;
 * one already queued or being sent keeps its place. Whether it waits for
 * write-back now. */
bool writer_wb_queue_locked(struct writer *w, struct wfile *f, bool dirty)
{
	if (w->writeback <= 0 || !dirty || f->error || f->unlinked ||
	    atomic_load(&f->attempts) >= WB_ATTEMPTS ||
	    (w->draining && atomic_load(&f->attempts) > 0))
		return false;
	if (!f->pending && !f->flushing) {
		int tries = atomic_load(&f->attempts);

		f->pending = true;
		if (tries > 0 || f->first_due == 0)
			f->first_due =
			    now_mono() + wb_delay(w->writeback, tries);
		f->due = f->first_due;
		if (ready_at(w, f) < w->flusher_until)
			pthread_cond_broadcast(&w->flush_cond);
	}
	return true;
}

int wfile_queue(struct wfile *f)
{
	int ret = 0;

	pthread_mutex_lock(&f->lock);
	/* in the journal before the close returns */
	if (f->dirty && !f->error && !f->unlinked)
		ret = writer_journal_locked(f);
	if (ret == 0) {
		atomic_store(&f->changed, now_mono()); /* closed now */
		pthread_mutex_lock(&f->w->lock);
		writer_wb_queue_locked(f->w, f, f->dirty);
		pthread_mutex_unlock(&f->w->lock);
	}
	pthread_mutex_unlock(&f->lock);
	if (ret < 0) {
		/* it would not outlive the daemon: the close waits for it */
		log_err("cannot keep '%s' in container '%s' in the journal: "
			"%s; committing it at once",
			f->path, f->ctr.name, strerror(-ret));
		ret = wfile_commit(f);
	}
	return ret;
}

/* f->lock held: write-back gives up on f's data, whose close succeeded
 * long ago, after its tries (at unmount, after one): the data is kept
 * outside the spool, or the log says it is lost. Once: f is clean then. */
void writer_wb_rescue_locked(struct wfile *f)
{
	char where[PATH_MAX + 64];
	int n = atomic_load(&f->attempts), err = atomic_load(&f->last_err);
	int ret;

	if (f->fd < 0) { /* a directory or a symlink: no data to keep */
		wbstatus_gave_up(f->w->status, f->ctr.name, f->path,
				 strerror(err < 0 ? -err : EIO), NULL);
		log_err("gave up making '%s' in container '%s' after %d %s: "
			"%s",
			f->path, f->ctr.name, n, n == 1 ? "try" : "tries",
			strerror(err < 0 ? -err : EIO));
		journal_drop(f->w->journal, f->jent);
		f->dirty = false;
		return;
	}
	ret = spool_rescue(f->w->spool, f->fd, f->ctr.name, f->path, where,
			   sizeof(where));

	wbstatus_gave_up(f->w->status, f->ctr.name, f->path,
			 strerror(err < 0 ? -err : EIO),
			 ret == 0 ? where : NULL);

	if (ret == 0) {
		log_err("gave up writing '%s' in container '%s' after %d "
			"%s: its data is kept in %s",
			f->path, f->ctr.name, n, n == 1 ? "try" : "tries",
			where);
		journal_drop(f->w->journal, f->jent);
	} else if (journal_recorded(f->jent)) {
		/* the next start tries it again */
		log_err("gave up writing '%s' in container '%s' after %d "
			"%s: cannot keep a copy in %s: %s; its data stays in "
			"the journal (%s)",
			f->path, f->ctr.name, n, n == 1 ? "try" : "tries",
			where, strerror(-ret), journal_path(f->w->journal));
		f->jkeep = true;
	} else {
		log_err("gave up writing '%s' in container '%s' after %d "
			"%s: its data is lost (cannot keep a copy in %s: %s)",
			f->path, f->ctr.name, n, n == 1 ? "try" : "tries",
			where, strerror(-ret));
	}
	f->dirty = false;
}

/* The longest common directory of the parents of n paths. */
static void common_parent(struct wfile **fs, size_t n, char *out, size_t len)
{
	size_t l;

	pathmap_parent(fs[0]->path, out, len);
	for (size_t i = 1; i < n; i++) {
		while (strcmp(out, "/") != 0) {
			l = strlen(out);
			if (strncmp(fs[i]->path, out, l) == 0 &&
			    fs[i]->path[l] == '/')
				break;
			pathmap_parent(out, out, len);
		}
	}
}

/* Write-back: commits n closed files of one container with one PUT at
 * their common directory, names relative to it. */
static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (struct wfile *const *)a;
	uintptr_t y = (uintptr_t) * (struct wfile *const *)b;

	return x < y ? -1 : x > y;
}

/* Locks the n files of a batch, from here to writer_commit_landed(): their
 * names hold still. One removed, rewritten (and committed) or broken since
 * it was queued is left out: fs is reordered, the live ones first, and
 * their count returned (the caller puts all n). Locked in the order of
 * their addresses, as writer_rename() takes two. */
static size_t lock_live(struct wfile **fs, size_t n)
{
	size_t k = 0;

	qsort(fs, n, sizeof(*fs), by_address);
	for (size_t i = 0; i < n; i++) {
		struct wfile *f = fs[i];

		pthread_mutex_lock(&f->lock);
		if (!f->dirty || f->unlinked || f->error) {
			pthread_mutex_unlock(&f->lock);
			continue;
		}
		fs[i] = fs[k];
		fs[k++] = f;
	}
	return k;
}

/* The files of a batch (locked) that have other names in the container
 * are written through them first, each alone (writer_through.c), and
 * leave the batch: moved past its end, the rest first; their number
 * returned. One whose container has no tools for it stays, for the PUT. */
static size_t through_first(struct writer *w, struct wfile **fs, size_t n,
			    long t0)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct wfile *f = fs[i];
		/* the drain found the engine gone: no exec either */
		int ret = w->draining && w->drain_gone
			      ? -EOPNOTSUPP
			      : writer_commit_through(f);
		if (ret == -EOPNOTSUPP) {
			fs[i] = fs[k];
			fs[k++] = f;
			continue;
		}
		if (ret == 0) {
			writer_commit_landed(f, t0);
			continue;
		}
		atomic_fetch_add(&f->attempts, 1);
		atomic_store(&f->last_err, ret);
		pthread_mutex_unlock(&f->lock);
		wbstatus_failed(w->status, f->ctr.id, ret);
	}
	return k;
}

static void flush_batch(struct writer *w, struct wfile **fs, size_t n,
			bool draining)
{
	char dir[PATH_MAX];
	struct item *items = calloc(n, sizeof(*items));
	long t0 = engine_now(w->e);
	size_t dlen;
	int ret;

	if (!items)
		return;
	n = lock_live(fs, n);
	n = through_first(w, fs, n, t0);
	if (n == 0) {
		free(items);
		return;
	}
	/* a directory's entry after what is below it (its times last), at
	 * a directory the container has */
	writer_sort_children_first(fs, n);
	common_parent(fs, n, dir, sizeof(dir));
	pthread_mutex_lock(&w->lock);
	writer_put_dir_locked(w, fs[0]->ctr.id, dir, dir, sizeof(dir));
	pthread_mutex_unlock(&w->lock);
	writer_fit_links(fs, n, dir, sizeof(dir));
	dlen = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
	for (size_t i = 0; i < n; i++) {
		items[i].f = fs[i];
		items[i].parent = dir;
		items[i].name = fs[i]->path + dlen;
		items[i].next = i + 1 < n ? &items[i + 1] : NULL;
	}
	if (draining && w->drain_gone) {
		/* unmount: the engine did not answer the drain's first PUT;
		 * each file counts that as its try, no timeout more */
		log_err("write-back: %zu file(s) in '%s' of container '%s' not "
			"sent at unmount: the engine is gone",
			n, dir, fs[0]->ctr.name);
		ret = -EIO;
	} else {
		ret = writer_commit_put_batch(w, items);
		if (ret < 0 && draining &&
		    (ret == -ETIMEDOUT || engine_down(w->e)))
			w->drain_gone = true;
	}
	if (ret == 0) {
		pthread_mutex_lock(&w->lock);
		for (size_t i = 0; i < n; i++)
			writer_made_above_locked(w, fs[0]->ctr.id, dir,
						 fs[i]->path, t0);
		pthread_mutex_unlock(&w->lock);
	}
	for (size_t i = n; i-- > 0;) {
		/* parents first: a new directory's listing, then its names */
		struct wfile *f = fs[i];

		if (ret == 0) {
			writer_commit_landed(f, t0);
		} else {
			atomic_fetch_add(&f->attempts, 1);
			atomic_store(&f->last_err, ret);
			pthread_mutex_unlock(&f->lock);
		}
	}
	if (ret < 0) /* the closes returned long ago: the next caller hears */
		wbstatus_failed(w->status, fs[0]->ctr.id, ret);
	if (ret == 0)
		log_dbg("write-back: %zu files in '%s' with one PUT", n, dir);
	free(items);
}

/* w->lock held: f goes in the PUT of first, which is due. It waits for
 * write-back in the same container, and is not a failed file whose next
 * try is not due yet. A file that failed WB_ALONE times goes alone, and
 * alone with it: one file that cannot land (its directory replaced in the
 * container, say) then fails no other; a batch that failed for the
 * engine's sake (down, restarting) goes together once more first.
 * Unmount's drain keeps these batches; each gets one try there, and once
 * the engine has not answered one of them the rest are not sent
 * (flush_batch()): an engine that is gone costs one timeout, not one per
 * file. */
static bool batchable(const struct writer *w, const struct wfile *f,
		      const struct wfile *first, double now)
{
	if (f == first)
		return true;
	if (!f->pending || strcmp(f->ctr.id, first->ctr.id) != 0 ||
	    atomic_load(&f->attempts) >= WB_ALONE ||
	    atomic_load(&first->attempts) >= WB_ALONE)
		return false;
	/* one never tried joins early, unless it changed a moment ago */
	return w->draining || ready_at(w, f) <= now ||
	       (atomic_load(&f->attempts) == 0 &&
		(!holds_back(w) ||
		 atomic_load(&f->changed) <= now - w->writeback / 2));
}

/* Whether path p is below directory d. */
static bool is_below(const char *p, const char *d)
{
	size_t l = strlen(d);

	if (strcmp(d, "/") == 0)
		return p[0] == '/' && p[1] != '\0';
	return strncmp(p, d, l) == 0 && p[l] == '/';
}

static int by_path(const void *a, const void *b)
{
	return strcmp((*(struct wfile *const *)a)->path,
		      (*(struct wfile *const *)b)->path);
}

static int deepest_first(const void *a, const void *b)
{
	size_t x = strlen((*(struct wfile *const *)a)->path);
	size_t y = strlen((*(struct wfile *const *)b)->path);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Whether sorted held[0..n) has a path below directory d: those sort
 * together from the first not before "d/". */
static bool held_below(struct wfile **held, size_t n, const char *d)
{
	char key[PATH_MAX + 2];
	size_t lo = 0, hi = n;

	if (strcmp(d, "/") == 0)
		snprintf(key, sizeof(key), "/");
	else
		snprintf(key, sizeof(key), "%s/", d);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(held[mid]->path, key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && is_below(held[lo]->path, d);
}

/* w->lock held: whether pending f is left out of first's batch for having
 * changed a moment ago, and not for another reason (failed before, another
 * container, first alone). */
static bool held_back(const struct writer *w, const struct wfile *f,
		      const struct wfile *first, double now)
{
	return f->pending && atomic_load(&f->attempts) == 0 &&
	       strcmp(f->ctr.id, first->ctr.id) == 0 && ready_at(w, f) > now &&
	       !batchable(w, f, first, now);
}

/* w->lock held: takes out of batch (n entries, with first) each directory
 * entry with something held back below it (a pending entry of the same
 * container that changed a moment ago), and then each one above those:
 * every PUT that makes a name in a directory moves the directory's mtime
 * in the container, so its entry, which sets its times, must land with or
 * after all that is below it. Returns the new count; *wake is when the
 * first of those held below is ready, for a batch left empty. */
static size_t keep_dirs_last(struct writer *w, struct wfile **batch, size_t n,
			     const struct wfile *first, double now,
			     double *wake)
{
	struct wfile **held = NULL, **dirs;
	size_t nheld = 0, cap = 0, ndirs = 0, k = 0;

	*wake = INFINITY;
	for (size_t i = 0; i < n; i++)
		ndirs += batch[i]->dir_entry;
	if (ndirs == 0 || w->draining || !holds_back(w))
		return n;
	/* one walk; held keeps room for the directories inserted below */
	for (struct wfile *f = w->files; f; f = f->next) {
		if (!held_back(w, f, first, now))
			continue;
		if (nheld + ndirs >= cap) {
			size_t ncap = cap ? 2 * cap : 64 + ndirs;
			struct wfile **nh = realloc(held, ncap * sizeof(*nh));

			if (!nh) { /* send them all: times maybe late */
				free(held);
				return n;
			}
			held = nh;
			cap = ncap;
		}
		held[nheld++] = f;
		if (ready_at(w, f) < *wake)
			*wake = ready_at(w, f);
	}
	if (nheld == 0)
		return n;
	dirs = malloc(ndirs * sizeof(*dirs));
	if (!dirs) {
		free(held);
		return n;
	}
	qsort(held, nheld, sizeof(*held), by_path);
	for (size_t i = 0; i < n; i++)
		if (batch[i]->dir_entry)
			dirs[k++] = batch[i];
	/* the deepest first: one taken out holds back those above it */
	qsort(dirs, ndirs, sizeof(*dirs), deepest_first);
	for (size_t i = 0; i < ndirs; i++) {
		struct wfile *d = dirs[i];
		size_t at = 0;

		if (!held_below(held, nheld, d->path)) {
			dirs[i] = NULL;
			continue;
		}
		while (at < nheld && strcmp(held[at]->path, d->path) < 0)
			at++;
		memmove(&held[at + 1], &held[at], (nheld - at) * sizeof(*held));
		held[at] = d;
		nheld++;
	}
	/* those left in dirs go: found by address, not a walk per entry */
	k = 0;
	for (size_t i = 0; i < ndirs; i++)
		if (dirs[i])
			dirs[k++] = dirs[i];
	ndirs = k;
	qsort(dirs, ndirs, sizeof(*dirs), by_address);
	k = 0;
	for (size_t i = 0; i < n; i++)
		if (!bsearch(&batch[i], dirs, ndirs, sizeof(*dirs), by_address))
			batch[k++] = batch[i];
	free(held);
	free(dirs);
	return k;
}

/* w->lock held: the flusher sleeps until when (monotonic), or until a
 * file due sooner wakes it. */
static void flusher_sleep(struct writer *w, double when, double now)
{
	struct timespec ts;

	time_after(when > now ? when - now : 0.01, &ts);
	w->flusher_until = when;
	pthread_cond_timedwait(&w->flush_cond, &w->lock, &ts);
	w->flusher_until = 0;
}

/* w->lock held: the batch of first, which is due, its n files marked as
 * being sent and referenced; NULL when none can go yet, *wake saying when
 * to look again. */
static struct wfile **take_batch(struct writer *w, struct wfile *first,
				 double now, size_t *np, double *wake)
{
	struct wfile **batch;
	size_t n = 0;

	*wake = now + 0.1; /* out of memory: a moment later */
	for (struct wfile *f = w->files; f; f = f->next)
		n += batchable(w, f, first, now);
	batch = malloc(n * sizeof(*batch));
	if (!batch)
		return NULL;
	n = 0;
	for (struct wfile *f = w->files; f; f = f->next)
		if (batchable(w, f, first, now))
			batch[n++] = f;
	n = keep_dirs_last(w, batch, n, first, now, wake);
	if (n == 0) { /* only directories, held for what is below */
		free(batch);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		batch[i]->pending = false;
		batch[i]->flushing = true;
		batch[i]->first_due = 0; /* what changes now is due anew */
		batch[i]->refs++;
	}
	*np = n;
	return batch;
}

static void *flusher_main(void *arg)
{
	struct writer *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stopping) {
		struct wfile *first = NULL, **batch;
		double now = now_mono(), wake;
		size_t n = 0;
		bool draining;

		for (struct wfile *f = w->files; f; f = f->next)
			if (f->pending &&
			    (!first || ready_at(w, f) < ready_at(w, first)))
				first = f;
		if (!first) {
			pthread_cond_broadcast(&w->flush_cond); /* drained */
			w->flusher_until = INFINITY;
			pthread_cond_wait(&w->flush_cond, &w->lock);
			w->flusher_until = 0;
			continue;
		}
		if (ready_at(w, first) > now && !w->draining) {
			flusher_sleep(w, ready_at(w, first), now);
			continue;
		}
		batch = take_batch(w, first, now, &n, &wake);
		if (!batch) {
			flusher_sleep(w, wake, now);
			continue;
		}
		w->inflight = true;
		draining = w->draining;
		pthread_mutex_unlock(&w->lock);
		flush_batch(w, batch, n, draining);
		pthread_mutex_lock(&w->lock);
		for (size_t i = 0; i < n; i++)
			batch[i]->flushing = false;
		pthread_mutex_unlock(&w->lock);
		/* a failed one is queued again by its put */
		for (size_t i = 0; i < n; i++)
			wfile_put(batch[i]);
		free(batch);
		pthread_mutex_lock(&w->lock);
		w->inflight = false;
		pthread_cond_broadcast(&w->flush_cond); /* settled */
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int writer_set_writeback(struct writer *w, double delay)
{
	int ret;

	if (delay <= 0 || w->flusher_started)
		return 0;
	ret = pthread_create(&w->flusher, NULL, flusher_main, w);
	if (ret != 0)
		return -ret; /* closes commit at once */
	pthread_mutex_lock(&w->lock);
	w->writeback = delay;
	w->flusher_started = true;
	pthread_mutex_unlock(&w->lock);
	return 0;
}

void writer_set_journal(struct writer *w, struct journal *j)
{
	w->journal = j;
}

bool writer_writeback(const struct writer *w)
{
	return w->writeback > 0;
}

/* w->lock held, dropped: makes the n files of list due now and waits until
 * each has had its try (our references keep a failed one out of the queue
 * until its put); returns the first error of those that did not land when
 * errors is set, and puts them. */
static int settle_list(struct writer *w, struct wfile **list, size_t n,
		       bool errors)
{
	int ret = 0;

	for (size_t i = 0; i < n; i++) {
		list[i]->due = 0; /* now */
		atomic_store(&list[i]->changed, 0.0);
	}
	for (;;) {
		bool any = false;

		for (size_t i = 0; i < n && !any; i++)
			any = list[i]->pending || list[i]->flushing;
		if (!any)
			break;
		pthread_cond_broadcast(&w->flush_cond);
		pthread_cond_wait(&w->flush_cond, &w->lock);
	}
	pthread_mutex_unlock(&w->lock);
	for (size_t i = 0; i < n; i++) {
		struct wfile *f = list[i];

		if (errors && !ret) {
			pthread_mutex_lock(&f->lock);
			if (f->error)
				ret = f->error;
			else if (f->dirty && !f->unlinked)
				/* its try failed; dirty with no failure is a
				 * change made since its try (a chmod or touch
				 * that met the PUT), queued again: no error */
				ret = atomic_load(&f->last_err);
			pthread_mutex_unlock(&f->lock);
		}
		wfile_put(f); /* a failed one is queued again here */
	}
	return ret;
}

bool writer_settle(struct writer *w, const char *ctr_id, const char *dir,
		   bool deep)
{
	size_t dlen = strcmp(dir, "/") == 0 ? 0 : strlen(dir), n, skip = 0;
	struct wfile **list;

	if (!w->flusher_started)
		return false;
	/* the files pending now, not those closed while we wait: a writer
	 * that keeps closing files there must not hold us up for good */
	pthread_mutex_lock(&w->lock);
	/* a rename (deep) takes the failed ones too: they would land under
	 * the old name; a look at a directory or a change of its attributes
	 * leaves them their delay */
	list =
	    writer_collect_locked(w, ctr_id, dir, dlen, deep, true, deep, &n);
	if (!deep) {
		/* directories and symlinks pending in dir are left to their
		 * batch: a look at dir (the kernel's, after each mkdir in it)
		 * would else send every pending thing of the container */
		size_t k = 0;

		for (size_t i = 0; i < n; i++) {
			struct wfile *f = list[i];

			/* the entries to the end, put after */
			if (!wfile_is_entry(f)) {
				list[i] = list[k];
				list[k++] = f;
			}
		}
		skip = n - k;
		n = k;
	}
	settle_list(w, list, n, false);
	for (size_t i = n; i < n + skip; i++)
		wfile_put(list[i]);
	free(list);
	return n > 0;
}

int writer_sync(struct writer *w, const char *ctr_id, const char *dir)
{
	size_t dlen = strcmp(dir, "/") == 0 ? 0 : strlen(dir), n;
	struct wfile **list;
	int ret = 0, told;

	if (w->flusher_started) {
		pthread_mutex_lock(&w->lock);
		/* pending ones, failed ones waiting for their next try too */
		list = writer_collect_locked(w, ctr_id, dir, dlen, true, true,
					     true, &n);
		ret = settle_list(w, list, n, true);
		free(list);
	}
	told = wbstatus_take(w->status, ctr_id, true);
	return ret < 0 ? ret : told;
}

int wfile_take_failure(struct wfile *f, bool sync)
{
	return wbstatus_take(f->w->status, f->ctr.id, sync);
}

/* One container's line of the status: its pending files and bytes. */
struct pend {
	char name[sizeof(((struct ctr *)0)->name)];
	size_t files;
	long long bytes;
};

static void status_add(char *buf, size_t *len, size_t max, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void status_add(char *buf, size_t *len, size_t max, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len >= max)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *len, max - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len = (size_t)n < max - *len ? *len + (size_t)n : max - 1;
}

/* A path or name as a field of a status line: no tab or newline. */
static const char *field(const char *s, char *out, size_t len)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++)
		out[i] = s[i] == '\t' || s[i] == '\n' ? ' ' : s[i];
	out[i] = '\0';
	return out;
}

size_t writer_status(struct writer *w, char *buf, size_t max)
{
	struct pend *pends = NULL;
	size_t n = 0, npend = 0, len = 0;
	struct wfile **list = NULL;

	buf[0] = '\0';
	pthread_mutex_lock(&w->lock);
	if (w->flusher_started)
		list =
		    writer_collect_locked(w, NULL, "", 0, true, true, true, &n);
	pthread_mutex_unlock(&w->lock);
	pends = n ? calloc(n, sizeof(*pends)) : NULL;
	for (size_t i = 0; i < n; i++) {
		struct wfile *f = list[i];
		char p[PATH_MAX], c[sizeof(pends->name)];
		struct stat st;
		size_t k;
		int err;

		pthread_mutex_lock(&f->lock);
		err = atomic_load(&f->last_err);
		if (f->dirty && !f->unlinked && pends) {
			for (k = 0; k < npend; k++)
				if (strcmp(pends[k].name, f->ctr.name) == 0)
					break;
			if (k == npend)
				snprintf(pends[npend++].name,
					 sizeof(pends->name), "%s",
					 f->ctr.name);
			writer_stat_locked(f, &st);
			pends[k].files++;
			if (S_ISREG(st.st_mode)) /* entries have no data */
				pends[k].bytes += (long long)st.st_size;
			if (err < 0)
				status_add(buf, &len, max,
					   "retrying\t%s\t%s\t%s\n",
					   field(f->ctr.name, c, sizeof(c)),
					   field(f->path, p, sizeof(p)),
					   strerror(-err));
		}
		pthread_mutex_unlock(&f->lock);
		wfile_put(f);
	}
	for (size_t k = 0; k < npend; k++) {
		char c[sizeof(pends->name)];

		status_add(buf, &len, max, "pending\t%s\t%zu\t%lld\n",
			   field(pends[k].name, c, sizeof(c)), pends[k].files,
			   pends[k].bytes);
	}
	free(pends);
	free(list);
	wbstatus_lines(w->status, buf, &len, max);
	return len;
}

void writer_drain(struct writer *w)
{
	if (!w->flusher_started)
		return;
	pthread_mutex_lock(&w->lock);
	w->draining = true;
	for (;;) {
		bool any = false;

		for (struct wfile *f = w->files; f; f = f->next)
			any = any || f->pending;
		if (!any && !w->inflight)
			break;
		pthread_cond_broadcast(&w->flush_cond);
		pthread_cond_wait(&w->flush_cond, &w->lock);
	}
	w->stopping = true;
	pthread_cond_broadcast(&w->flush_cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->flusher, NULL);
	w->flusher_started = false;
}

/* The last reference to f decides: the write-back queue takes it while
 * write-back holds it back; else a file with changes is committed now (or,
 * after WB_ATTEMPTS failed tries, or one at unmount, rescued), and it
 * leaves the table. Here, not in writer.c: the flusher drops its
 * references with it, and it queues, commits and rescues. */
void wfile_put(struct wfile *f)
{
	struct writer *w = f->w;
	unsigned long opens;
	bool give_up, told, draining;
	int tries;

	pthread_mutex_lock(&w->lock);
	if (--f->refs > 0 || f->closing) {
		/* still used; or revived and dropped while another thread
		 * closes it: that thread looks again */
		pthread_mutex_unlock(&w->lock);
		return;
	}
	for (;;) {
		if (writer_wb_queue_locked(w, f, f->dirty)) {
			pthread_mutex_unlock(
			    &w->lock); /* a lookup keeps the due */
			return;
		}
		f->closing = true;
		opens = f->opens;
		draining = w->draining;
		pthread_mutex_unlock(&w->lock);
		pthread_mutex_lock(&f->lock); /* its path may change else */
		tries = atomic_load(&f->attempts);
		/* unmount does not wait out the delays of an engine that is
		 * gone: one try there */
		give_up = f->dirty && !f->unlinked && !f->error &&
			  (tries >= WB_ATTEMPTS || (draining && tries > 0));
		if (give_up)
			writer_wb_rescue_locked(f);
		told = f->failed; /* a failed close was told already */
		pthread_mutex_unlock(&f->lock);
		if (!give_up && !told) {
			int err = wfile_commit(f); /* failures are logged */

			if (err < 0 && w->writeback > 0) /* and told next */
				wbstatus_failed(w->status, f->ctr.id, err);
		}
		pthread_mutex_lock(&w->lock);
		f->closing = false;
		if (f->refs > 0) { /* reopened: its last put decides */
			pthread_mutex_unlock(&w->lock);
			return;
		}
		if (f->opens == opens)
			break;
		/* reopened, maybe written, and dropped meanwhile: again */
	}
	writer_unlist_locked(w, f);
	pthread_mutex_unlock(&w->lock);
	writer_wfile_free(f);
}
