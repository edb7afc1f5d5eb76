// SPDX-License-Identifier: GPL-2.0-or-later
#include "meta.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "pathmap.h"
#include "pathstat.h"
#include "spool.h"
#include "tarstream.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Files up to this size have their content kept from a listing's tar. */
#define PREFETCH_MAX ((off_t)64 << 20)
/* Bytes of a directory's tar read when only its owner was asked for: a
 * small subtree comes whole, with its listings and contents, so that a
 * walk of it needs no second GET. Past the cap the GET is aborted. */
#define PROBE_TREE ((off_t)8 << 20)
/* ... and at most this many entries: the engine's work is per file, so a
 * subtree of countless tiny files is not read far for its owner either */
#define PROBE_ENTRIES 2048
/* A file whose owner was asked for: up to this size its content, which
 * the GET brings with the header, is read and kept as well. */
#define PROBE_FILE ((off_t)1 << 20)
/* The size of the spool file such contents share before another is begun */
#define PROBE_BLOB ((off_t)32 << 20)
/* Entries past half their TTL in a small subtree that make it worth one
 * GET rather than a HEAD each once a walk stats them (relist_worth()):
 * that many below the directory, and some of them its own children. */
#define RELIST_DOCKER	    128
#define RELIST_DOCKER_CHILD 8
#define RELIST_PODMAN	    8
#define RELIST_PODMAN_CHILD 1
/* Siblings revalidated ahead of a walk, after the one asked for. */
#define AHEAD 64
/* A full listing stops before a file of LIST_BIG_FILE or more that would
 * take its tar past LIST_BIG_TOTAL, and lists the directory by exec
 * instead (list_by_exec()): an exec costs what 20-85 MiB of streamed
 * tar do (45 ms against 460 MiB/s on the dev engine, 327 ms against
 * 256 MiB/s in ENGINE.md), and a listing has no use for the data; the
 * bound leaves room for slower execs. */
#define LIST_BIG_FILE  PREFETCH_MAX
#define LIST_BIG_TOTAL ((off_t)256 << 20)
/* Containers remembered to lack `find` or `stat`. */
#define NO_EXEC_MAX 16
/* A walk through a directory too big to list again with a GET has the
 * entries below it confirmed by one exec of find and stat instead of a
 * HEAD each (confirm_by_exec()) when the cache knows at most CONFIRM_MAX
 * of them and at least this many are past half their TTL: an exec costs
 * 45-330 ms on Docker, a HEAD about 1 ms (56 ms on Podman). */
#define CONFIRM_MAX    20000
#define CONFIRM_DOCKER 256
#define CONFIRM_PODMAN 8

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

static void dirref_set(struct dirref *r, const struct ctr *c, const char *dir)
{
	snprintf(r->ns, sizeof(r->ns), "%s", c->id);
	snprintf(r->dir, sizeof(r->dir), "%s", dir);
}

static bool dirref_is(const struct dirref *r, const struct ctr *c,
		      const char *dir)
{
	return strcmp(r->ns, c->id) == 0 && strcmp(r->dir, dir) == 0;
}

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
	/* list_by_exec() found no find or stat in them: the oldest goes */
	char no_exec[NO_EXEC_MAX][sizeof(((struct ctr *)0)->id)];
	size_t no_exec_next;
	/* the spool file the contents probes keep go to, and its end */
	pthread_mutex_t probe_lock;
	struct cache_blob *probe_blob;
	off_t probe_off;
};

struct meta *meta_new(struct engine *e, struct cache *c, double ttl,
		      meta_busy_fn busy, struct spool *spool)
{
	struct meta *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->e = e;
	m->c = c;
	m->ttl = ttl;
	m->busy = busy;
	m->spool = spool;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->cond, NULL);
	pthread_mutex_init(&m->probe_lock, NULL);
	return m;
}

void meta_free(struct meta *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = true;
	pthread_cond_signal(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (m->started)
		pthread_join(m->ahead, NULL);
	free(m->claim);
	cache_blob_put(m->probe_blob);
	pthread_mutex_destroy(&m->probe_lock);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static ssize_t stream_source(void *ctx, const void **buf)
{
	return engine_stream_read(ctx, buf);
}

static void fill_defaults(struct stat *st)
{
	st->st_blksize = CTRFS_BLKSIZE;
	st->st_blocks = (st->st_size + 511) / 512;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	if (st->st_nlink == 0)
		st->st_nlink = 1;
}

void meta_learn(struct meta *m, struct ctr *c, const char *path,
		const struct tar_entry *te)
{
	struct cache_attr a = {
	    .st = te->st, .validated = now_mono(), .flags = CACHE_OWNER};

	struct cache_attr old;

	if (te->symlink)
		a.st.st_size = (off_t)strlen(te->symlink);
	fill_defaults(&a.st);
	/* the tar of one path cannot count its other names: keep the count
	 * a listing or a link made through ctrfs found */
	if (cache_get(m->c, c->id, path, &old, NULL, 0) == 0 &&
	    (old.flags & CACHE_OWNER) &&
	    (old.st.st_mode & S_IFMT) == (a.st.st_mode & S_IFMT))
		a.st.st_nlink = old.st.st_nlink;
	cache_put(m->c, c->id, path, &a, te->symlink);
}

void meta_touch(struct meta *m, struct ctr *c, const char *path)
{
	cache_touch(m->c, c->id, path, now_mono());
}

/* Whether a cached entry confirmed at validated must be asked again. */
static bool stale(struct meta *m, struct ctr *c, double validated)
{
	if (now_mono() - validated < m->ttl)
		return false;
	return !(m->busy && m->busy(c->id));
}

/* ctrfs changed an entry of path's directory in a change that began at
 * wall-clock second since (see cache_dir_changed()). */
static void parent_changed(struct meta *m, struct ctr *c, const char *path,
			   long since)
{
	char parent[PATH_MAX];

	if (pathmap_parent(path, parent, sizeof(parent)) == 0 &&
	    strcmp(parent, path) != 0)
		cache_dir_changed(m->c, c->id, parent, since - 1,
				  engine_now(m->e) + 1, now_mono());
}

void meta_committed(struct meta *m, struct ctr *c, const char *path,
		    const struct stat *st, long since)
{
	cache_forget(m->c, c->id, path, !st || S_ISDIR(st->st_mode));
	if (st) {
		struct cache_attr a = {
		    .st = *st, .validated = now_mono(), .flags = CACHE_OWNER};

		fill_defaults(&a.st);
		cache_put(m->c, c->id, path, &a, NULL);
		cache_listing_add(m->c, c->id, path);
		if (S_ISDIR(st->st_mode)) { /* made by us: empty */
			cache_set_listing(m->c, c->id, path, "", 0, 0,
					  engine_now(m->e));
			/* its mtime is of our making, like a change in it */
			cache_dir_changed(m->c, c->id, path, since - 1,
					  engine_now(m->e) + 1, now_mono());
			cache_touch(m->c, c->id, path, now_mono());
		}
	}
	parent_changed(m, c, path, since);
}

void meta_moved(struct meta *m, struct ctr *c, const char *from, const char *to,
		long since)
{
	struct cache_attr a;
	char lbuf[PATH_MAX];
	/* `mv` keeps a file's type, mode, owner, size and mtime: what was
	 * fresh and whole under the old name is so under the new one (a
	 * default-mode `rsync -a` renames every file it writes, and asking
	 * the new name again cost a HEAD and a GET for its owner each) */
	bool keep = cache_get(m->c, c->id, from, &a, lbuf, sizeof(lbuf)) == 0 &&
		    S_ISREG(a.st.st_mode) && (a.flags & CACHE_OWNER) &&
		    !stale(m, c, a.validated);

	meta_committed(m, c, from, NULL, since);
	if (keep)
		meta_committed(m, c, to, &a.st, since);
	else
		meta_appeared(m, c, to, since);
}

void meta_appeared(struct meta *m, struct ctr *c, const char *path, long since)
{
	cache_forget(m->c, c->id, path, true);
	cache_listing_add(m->c, c->id, path);
	parent_changed(m, c, path, since);
}

int meta_content(struct meta *m, const struct ctr *c, const char *path, int *fd,
		 off_t *off, off_t *len)
{
	return cache_get_data(m->c, c->id, path, fd, off, len);
}

void meta_update(struct meta *m, struct ctr *c, const char *path,
		 const struct stat *st)
{
	/* mode, owner or times changed; a directory's entries did not */
	struct cache_attr a = {.st = *st,
			       .validated = now_mono(),
			       .flags = CACHE_OWNER | CACHE_SAME_ENTRIES};

	fill_defaults(&a.st);
	cache_put(m->c, c->id, path, &a, NULL);
}

void meta_forget(struct meta *m, struct ctr *c, const char *path)
{
	cache_remove(m->c, c->id, path);
}

static void log_fail(struct ctr *c, const char *what, const char *path,
		     const char *reason)
{
	log_err("cannot %s '%s' in container '%s': %s", what, path, c->name,
		reason);
}

static void keep_probed(struct meta *m, struct ctr *c, const char *path,
			struct tarstream *t, off_t size, long snapshot);

/* Learns the full header of path (owner, raw link target) from the first
 * tar entry of a GET, then aborts the transfer; a small file's content,
 * which comes with it, is kept. */
static int probe(struct meta *m, struct ctr *c, const char *path)
{
	struct engine_stream *s;
	struct tarstream *t;
	struct tar_entry te;
	long snapshot = engine_now(m->e);
	char msg[512];
	int ret;

	ret = engine_archive_get(m->e, c->id, path, &s, msg, sizeof(msg));
	if (ret < 0) {
		if (ret != -ENOENT && ret != -ELOOP) /* loop_link() goes on */
			log_fail(c, "stat", path, msg);
		return ret;
	}
	ret = tarstream_open(stream_source, s, &t);
	if (ret < 0)
		goto out_stream;
	ret = tarstream_next(t, &te);
	if (ret == 0)
		meta_learn(m, c, path, &te);
	else
		log_fail(c, "stat", path,
			 ret == 1 ? "empty archive" : tarstream_error(t));
	if (ret == 0 && S_ISREG(te.st.st_mode) && !te.hardlink &&
	    te.st.st_size <= PROBE_FILE)
		keep_probed(m, c, path, t, te.st.st_size, snapshot);
	if (ret == 1)
		ret = -EIO;
	tarstream_free(t);
out_stream:
	engine_stream_free(s);
	return ret;
}

static bool same_head(const struct stat *a, const struct stat *b)
{
	return a->st_mode == b->st_mode && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec;
}

/* A HEAD refused has no body to say why: a GET of the path does. The
 * reason that matters is a symlink loop (-ELOOP): the engine resolves a
 * link's target for the stat header of either call, and a link in a loop
 * has none. */
static int head_refused(struct meta *m, struct ctr *c, const char *path)
{
	struct engine_stream *s;
	char msg[512];
	int ret = engine_archive_get(m->e, c->id, path, &s, msg, sizeof(msg));

	if (ret == 0) {
		engine_stream_free(s); /* aborted: the HEAD's answer stands */
		snprintf(msg, sizeof(msg), "the engine refused a HEAD of it");
		ret = -EIO;
	}
	if (ret != -ENOENT && ret != -ELOOP)
		log_fail(c, "stat", path, msg);
	return ret;
}

/* Asks the engine (HEAD) and merges the answer into the cache. */
static int revalidate(struct meta *m, struct ctr *c, const char *path,
		      const struct cache_attr *old, bool have_old)
{
	struct engine_reply r;
	struct cache_attr a = {0};
	struct pathstat ps;
	char msg[512];
	int ret;

	ret = engine_archive_head(m->e, c->id, path, &r);
	if (ret < 0) {
		log_fail(c, "stat", path, "engine not reachable");
		return -EIO;
	}
	ret = engine_status_errno(r.status);
	if (ret < 0) {
		if (ret == -ENOENT)
			cache_remove(m->c, c->id, path);
		else if (r.status >= 500)
			ret = head_refused(m, c, path);
		else
			log_fail(c, "stat", path,
				 engine_reply_message(&r, msg, sizeof(msg)));
		goto out;
	}
	if (pathstat_decode(r.stat, &ps) < 0) {
		log_fail(c, "stat", path, "malformed stat header");
		ret = -EIO;
		goto out;
	}
	a.st.st_mode = ps.mode;
	a.st.st_size = ps.size;
	a.st.st_mtim = ps.mtime;
	a.st.st_nlink = 1;
	fill_defaults(&a.st);
	a.validated = now_mono();
	/* the same: the attributes stay as they are (a tar's whole second
	 * does not turn into this answer's nanoseconds and back), and a
	 * file's content held here stays only if it holds for this answer
	 * (a whole second and the same size also fit content changed within
	 * that second). Nanoseconds held that differ say it changed. */
	if (have_old && same_head(&old->st, &a.st) &&
	    (old->flags & CACHE_OWNER) &&
	    (old->st.st_mtim.tv_nsec == 0 ||
	     old->st.st_mtim.tv_nsec == a.st.st_mtim.tv_nsec)) {
		cache_confirm(m->c, c->id, path, &a.st, a.validated);
		goto out;
	}
	cache_put(m->c, c->id, path, &a, NULL);
out:
	engine_reply_free(&r);
	return ret;
}

/* Whether an entry confirmed at validated is worth confirming now: stale,
 * or past half its TTL (the walk will be there soon). */
static bool worth_ahead(const struct meta *m, double validated)
{
	return now_mono() - validated >= m->ttl / 2;
}

/* Claims the window: the siblings after h->name that are worth a HEAD, up
 * to AHEAD of them, in listing order. Returns their number. */
static size_t claim_window(struct meta *m, const struct hint *h)
{
	struct cache_listing l;
	size_t i, n = 0;

	if (cache_listing(m->c, h->c.id, h->dir, &l) < 0)
		return 0;
	for (i = 0; i < l.n && strcmp(l.ents[i].name, h->name) != 0; i++)
		;
	pthread_mutex_lock(&m->lock);
	for (i++; i < l.n && n < AHEAD; i++) {
		char *path = m->claim[n];
		struct cache_attr a;

		if (pathmap_child(h->dir, l.ents[i].name, path, PATH_MAX) < 0 ||
		    cache_get(m->c, h->c.id, path, &a, NULL, 0) < 0 ||
		    !worth_ahead(m, a.validated))
			continue;
		n++;
	}
	snprintf(m->claim_ns, sizeof(m->claim_ns), "%s", h->c.id);
	m->nclaim = n;
	m->ndone = 0;
	pthread_mutex_unlock(&m->lock);
	cache_listing_free(&l);
	return n;
}

/* Revalidates the claimed window in order, marking each path done; stops
 * early for a newer hint (the walk went elsewhere) or at unmount. */
static void revalidate_ahead(struct meta *m, struct hint *h)
{
	size_t n = claim_window(m, h), j, asked = 0;

	for (j = 0; j < n; j++) {
		struct cache_attr a;
		bool quit;

		pthread_mutex_lock(&m->lock);
		quit = m->stop || m->pending;
		pthread_mutex_unlock(&m->lock);
		if (quit || (m->busy && m->busy(h->c.id)))
			break; /* busy: a HEAD would wait for our own GET */
		/* m->claim[j] changes only on this thread */
		if (cache_get(m->c, h->c.id, m->claim[j], &a, NULL, 0) == 0 &&
		    worth_ahead(m, a.validated)) {
			revalidate(m, &h->c, m->claim[j], &a, true);
			asked++;
		}
		pthread_mutex_lock(&m->lock);
		m->ndone = j + 1;
		pthread_cond_broadcast(&m->cond);
		pthread_mutex_unlock(&m->lock);
	}
	pthread_mutex_lock(&m->lock);
	m->nclaim = m->ndone = 0;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (n)
		log_dbg("revalidated ahead in '%s' of '%s': %zu HEADs for %zu "
			"of %zu claimed siblings",
			h->dir, h->c.name, asked, j, n);
}

static void *ahead_main(void *arg)
{
	struct meta *m = arg;
	struct hint *h = malloc(sizeof(*h));

	pthread_mutex_lock(&m->lock);
	while (h && !m->stop) {
		if (!m->pending) {
			pthread_cond_wait(&m->cond, &m->lock);
			continue;
		}
		*h = m->hint;
		m->pending = false;
		pthread_mutex_unlock(&m->lock);
		revalidate_ahead(m, h);
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	free(h);
	return NULL;
}

/*
 * When path is in the thread's window and not done yet, waits until it is
 * (or the window ends): true when the thread has just asked the engine
 * about it, so the caller need not ask again.
 */
static bool wait_claim(struct meta *m, const struct ctr *c, const char *path)
{
	bool done = false;

	pthread_mutex_lock(&m->lock);
	for (;;) {
		size_t i;

		if (m->nclaim == 0 || strcmp(m->claim_ns, c->id) != 0)
			break;
		for (i = 0; i < m->nclaim && strcmp(m->claim[i], path); i++)
			;
		if (i == m->nclaim)
			break;
		if (i < m->ndone) {
			done = true;
			break;
		}
		pthread_cond_wait(&m->cond, &m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return done;
}

/*
 * A walk (cp -r, grep -r, rsync) reaches each entry of a directory in
 * listing order; once the TTL has passed, every step would wait for a HEAD
 * of its own.  Hands the walk's position to a thread that revalidates the
 * next siblings meanwhile: the HEADs overlap the walk's own work, and a
 * step that reaches a sibling still in the thread's window waits for the
 * thread's answer instead of asking twice.
 */
static void hint_walk(struct meta *m, const struct ctr *c, const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) : 0;

	if (!slash || dlen >= sizeof(m->hint.dir) ||
	    strlen(slash + 1) >= sizeof(m->hint.name))
		return;
	pthread_mutex_lock(&m->lock);
	if (!m->started && !m->stop) {
		m->claim = malloc(AHEAD * sizeof(*m->claim));
		/* first use is after the mount, so after fuse_daemonize() */
		m->started = m->claim && pthread_create(&m->ahead, NULL,
							ahead_main, m) == 0;
		if (!m->started) {
			free(m->claim);
			m->claim = NULL;
			m->stop = true; /* do not try again */
		}
	}
	if (m->started) {
		m->hint.c = *c;
		snprintf(m->hint.dir, sizeof(m->hint.dir), "%.*s",
			 dlen ? (int)dlen : 1, dlen ? path : "/");
		snprintf(m->hint.name, sizeof(m->hint.name), "%s", slash + 1);
		m->pending = true;
		pthread_cond_broadcast(&m->cond);
	}
	pthread_mutex_unlock(&m->lock);
}

static int load_tree(struct meta *m, struct ctr *c, const char *dir, off_t cap,
		     bool stop_big, bool *whole);
static bool exec_listing_ok(struct meta *m, const struct ctr *c);
static int confirm_by_exec(struct meta *m, struct ctr *c, const char *dir);

/*
 * Whether path's directory has a listing, whole as of less than the TTL
 * ago, that lacks it. A listing past the TTL is confirmed with one HEAD of
 * the directory (an unchanged mtime, or one of ctrfs's own changes, keeps
 * it): a tool creating files asks for many names that are not there yet,
 * and one HEAD per directory and TTL answers them all.
 */
static bool absent(struct meta *m, struct ctr *c, const char *path)
{
	char parent[PATH_MAX];
	struct cache_attr a;
	int in = cache_in_listing(m->c, c->id, path, now_mono() - m->ttl);

	if (in >= 0)
		return in == 0;
	if (cache_in_listing(m->c, c->id, path, -1.0) != 0 ||
	    pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    strcmp(parent, path) == 0 ||
	    cache_get(m->c, c->id, parent, &a, NULL, 0) < 0 ||
	    !stale(m, c, a.validated) || revalidate(m, c, parent, &a, true) < 0)
		return false;
	return cache_in_listing(m->c, c->id, path, now_mono() - m->ttl) == 0;
}

/* Sets one of the memos of relist_parent() to dir, as of now. */
static void memo(struct meta *m, struct dirref *r, double *at, struct ctr *c,
		 const char *dir, double now)
{
	pthread_mutex_lock(&m->lock);
	*at = now;
	dirref_set(r, c, dir);
	pthread_mutex_unlock(&m->lock);
}

/* Remembers that dir is not worth listing again, for the TTL. */
static void relist_no(struct meta *m, struct ctr *c, const char *dir,
		      double now)
{
	memo(m, &m->relist_no, &m->relist_no_at, c, dir, now);
}

/*
 * Whether dir's listing is better asked again whole (one GET of dir, probe
 * capped) than its entries one HEAD each: when many entries below it are
 * past half their TTL and the subtree is small. A HEAD costs about 1 ms on
 * Docker against a GET's 60-150 ms (56 against 381 on Podman). Entries
 * below count too: a walk that stats a directory's children goes on into
 * its subdirectories (rsync, cp -r, find); a few of them must be its own,
 * so that `ls -la` of a directory of one subdirectory stays one HEAD.
 * The answer "no" is remembered for the TTL, so that a walk of a big
 * directory does not count its entries again at every step.
 */
static int relist_worth(struct meta *m, struct ctr *c, const char *dir,
			double now)
{
	bool podman = engine_is_podman(m->e);
	size_t need = podman ? RELIST_PODMAN : RELIST_DOCKER;
	size_t need_child = podman ? RELIST_PODMAN_CHILD : RELIST_DOCKER_CHILD;
	struct cache_subtree t;

	if (cache_subtree(m->c, c->id, dir, PROBE_ENTRIES - 1, PROBE_TREE,
			  now - m->ttl / 2, &t) < 0)
		return -1; /* too big, or not all known */
	if (t.stale < need || t.stale_children < need_child)
		return 0;
	log_dbg("'%s' in '%s': %zu entries to ask again, listed again "
		"instead (%zu in all, about %lld KiB)",
		dir, c->name, t.stale, t.entries, (long long)t.bytes / 1024);
	return 1;
}

/*
 * Whether the entries below dir, a directory too big to list again with a
 * GET, are better confirmed by one exec (confirm_by_exec()) than one HEAD
 * each: many of them past half their TTL, and not too many in all. As
 * many must be its own children when dir is the walked directory itself
 * (deep false): `ls -la /usr` stats its 14 children, for which 14 HEADs
 * (15 ms) beat a find through the 6,000 entries below (150 ms). A walk
 * seen going through two small directories below dir (relist_above())
 * needs only some (as relist_worth() does). Not for the root, whose find
 * would go through /proc and /sys.
 */
static bool confirm_worth(struct meta *m, struct ctr *c, const char *dir,
			  bool deep, double now)
{
	bool podman = engine_is_podman(m->e);
	size_t need = podman ? CONFIRM_PODMAN : CONFIRM_DOCKER;
	size_t need_child = !deep    ? need
			    : podman ? RELIST_PODMAN_CHILD
				     : RELIST_DOCKER_CHILD;
	struct cache_subtree t;

	if (strcmp(dir, "/") == 0 || !exec_listing_ok(m, c) ||
	    cache_subtree(m->c, c->id, dir, CONFIRM_MAX, (off_t)1 << 62,
			  now - m->ttl / 2, &t) < 0 ||
	    t.stale < need || t.stale_children < need_child)
		return false;
	log_dbg("'%s' in '%s': %zu entries to ask again, confirmed by exec "
		"instead (%zu in all)",
		dir, c->name, t.stale, t.entries);
	return true;
}

/*
 * dir, walked, was too small to be worth a GET. A depth-first walk (cp -r,
 * grep -r) through many small directories meets each of them that way,
 * and none is worth a GET of its own: their parent may be. Once a second
 * small directory is walked within the TTL, the directory above both
 * (into up) is asked instead: a tree of small directories then costs one
 * GET, not a HEAD per entry. Two are needed, so that `ls -la` of one
 * small directory stays a HEAD per entry. True when up is worth it: a GET,
 * or when it is too big for one, an exec (*confirm, confirm_worth()).
 */
static bool relist_above(struct meta *m, struct ctr *c, const char *dir,
			 double now, char *up, size_t uplen, bool *confirm)
{
	bool have;
	int worth;

	pthread_mutex_lock(&m->lock);
	have = now - m->small_at < m->ttl && strcmp(m->small.ns, c->id) == 0 &&
	       strcmp(m->small.dir, dir) != 0;
	if (have && pathmap_is_under(dir, m->small.dir))
		snprintf(up, uplen, "%s", m->small.dir);
	else if (have && pathmap_is_under(m->small.dir, dir))
		snprintf(up, uplen, "%s", dir);
	else if (have)
		pathmap_common(m->small.dir, dir, up, uplen);
	m->small_at = now;
	dirref_set(&m->small, c, dir);
	if (have && now - m->up_no_at < m->ttl && dirref_is(&m->up_no, c, up))
		have = false; /* found not worth it within the TTL */
	pthread_mutex_unlock(&m->lock);
	if (!have)
		return false;
	worth = relist_worth(m, c, up, now);
	if (worth == 1)
		return true;
	if (worth < 0 && confirm_worth(m, c, up, true, now)) {
		*confirm = true;
		return true;
	}
	memo(m, &m->up_no, &m->up_no_at, c, up, now);
	return false;
}

/*
 * A walk that stats every entry of a directory (ls -la, cp -r, rsync)
 * past the TTL: once a second entry of the same directory is found stale
 * within the TTL (one alone is a `stat` or a `tail -f`, which a HEAD
 * serves best), and the directory is worth listing again (above), lists
 * it with one GET, once: another step of the walk that comes meanwhile
 * waits for that GET. A directory too big for a GET may have its subtree
 * confirmed by one exec instead (confirm_worth()). True when path may now
 * be fresh in the cache, so the caller looks again before asking the
 * engine.
 */
static bool relist_parent(struct meta *m, struct ctr *c, const char *path)
{
	const char *name = strrchr(path, '/') + 1;
	char parent[PATH_MAX], up[PATH_MAX];
	const char *dir = parent;
	double now = now_mono();
	bool walk, whole = false, confirm = false;
	int ret;

	if (m->ttl <= 0 || pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    strcmp(parent, path) == 0)
		return false;
	pthread_mutex_lock(&m->lock);
	if (m->relisting && dirref_is(&m->relist, c, parent)) {
		while (m->relisting && dirref_is(&m->relist, c, parent))
			pthread_cond_wait(&m->cond, &m->lock);
		pthread_mutex_unlock(&m->lock);
		return true;
	}
	if (m->relisting || (now - m->relist_no_at < m->ttl &&
			     dirref_is(&m->relist_no, c, parent))) {
		pthread_mutex_unlock(&m->lock); /* another one, or not worth */
		return false;
	}
	/* the first stale entry of a directory is remembered, a second one
	 * (another name, within the TTL) is a walk */
	walk = now - m->seen_at < m->ttl && dirref_is(&m->seen, c, parent) &&
	       strcmp(m->seen_name, name);
	if (!walk) {
		m->seen_at = now;
		dirref_set(&m->seen, c, parent);
		snprintf(m->seen_name, sizeof(m->seen_name), "%s", name);
	}
	pthread_mutex_unlock(&m->lock);
	if (!walk)
		return false;
	ret = relist_worth(m, c, parent, now);
	if (ret < 1)
		relist_no(m, c, parent, now);
	if (ret < 0) {
		/* too big for a GET: what is above it is bigger still */
		if (!confirm_worth(m, c, parent, false, now))
			return false;
		confirm = true;
	} else if (ret == 0) {
		if (!relist_above(m, c, parent, now, up, sizeof(up), &confirm))
			return false;
		dir = up;
	}
	pthread_mutex_lock(&m->lock);
	if (m->relisting) { /* someone began meanwhile: ask as usual */
		pthread_mutex_unlock(&m->lock);
		return false;
	}
	m->relisting = true;
	dirref_set(&m->relist, c, dir);
	pthread_mutex_unlock(&m->lock);
	if (confirm)
		whole = (ret = confirm_by_exec(m, c, dir)) == 0;
	else
		ret = load_tree(m, c, dir, PROBE_TREE, false, &whole);
	/* stopped at a cap (the estimate was short) or failed: not again
	 * for the TTL; the entries not reached are asked one by one */
	if ((ret < 0 || !whole) && dir == parent)
		relist_no(m, c, dir, now);
	else if (ret < 0 || !whole)
		memo(m, &m->up_no, &m->up_no_at, c, dir, now);
	pthread_mutex_lock(&m->lock);
	m->relisting = false;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	return true;
}

/*
 * path's HEAD or GET met a symlink loop. Most likely path is a link in it
 * (the kernel walks a path itself, so what reaches us has no link above
 * its last name, unless the container changed since): then the tar of its
 * directory holds its header, as a tar never follows a link. A loop above
 * path fails that GET too, with ELOOP, as a local walk would.
 */
static int loop_link(struct meta *m, struct ctr *c, const char *path)
{
	char parent[PATH_MAX];
	struct cache_attr a;
	bool whole = false;
	int ret;

	if (pathmap_parent(path, parent, sizeof(parent)) < 0 ||
	    strcmp(parent, path) == 0)
		return -ELOOP;
	/* capped, as a probe; if that stops before path, the directory's
	 * listing as readdir would read it */
	ret = load_tree(m, c, parent, PROBE_TREE, false, &whole);
	if (ret == 0 && !whole && cache_get(m->c, c->id, path, &a, NULL, 0) < 0)
		ret = load_tree(m, c, parent, 0, true, &whole);
	if (ret < 0)
		return ret;
	if (cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    (a.flags & CACHE_OWNER) && !stale(m, c, a.validated))
		return 0;
	if (whole)
		return -ENOENT;
	log_fail(c, "stat", path,
		 "a symlink loop, and the listing of its directory stopped "
		 "before it");
	return -EIO;
}

int meta_getattr_now(struct meta *m, struct ctr *c, const char *path,
		     struct stat *st)
{
	struct cache_attr a;
	int ret;

	if (cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    S_ISDIR(a.st.st_mode) && !(m->busy && m->busy(c->id))) {
		ret = revalidate(m, c, path, &a, true);
		if (ret < 0)
			return ret;
	}
	return meta_getattr(m, c, path, st, NULL, 0);
}

int meta_getattr(struct meta *m, struct ctr *c, const char *path,
		 struct stat *st, char *link, size_t linklen)
{
	struct cache_attr a;
	char lbuf[PATH_MAX];
	bool have;
	int ret;

	have = cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) == 0;
	if (!have && absent(m, c, path))
		return -ENOENT; /* its directory's listing lacks it */
	/* a walk's second stale step, before the thread HEADs its window */
	if (have && stale(m, c, a.validated) && relist_parent(m, c, path) &&
	    cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0) {
		if (absent(m, c, path))
			return -ENOENT; /* gone from the new listing */
		have = false;
	}
	if (have && stale(m, c, a.validated) && wait_claim(m, c, path) &&
	    cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
		have = false; /* the thread found it gone: ask again */
	if (!have || stale(m, c, a.validated)) {
		if (have)
			hint_walk(m, c, path);
		ret = revalidate(m, c, path, &a, have);
		if (ret == -ELOOP)
			ret = loop_link(m, c, path);
		if (ret < 0)
			return ret;
		if (cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
			return -EIO;
	}
	if (!(a.flags & CACHE_OWNER) ||
	    (link && S_ISLNK(a.st.st_mode) && !(a.flags & CACHE_LINK))) {
		/* a directory's owner comes with the start of its tar, and
		 * a small subtree with its listings for little more */
		ret = S_ISDIR(a.st.st_mode)
			  ? load_tree(m, c, path, PROBE_TREE, false, NULL)
			  : probe(m, c, path);
		if (ret == -ELOOP && !S_ISDIR(a.st.st_mode))
			ret = loop_link(m, c, path);
		if (ret < 0)
			return ret;
		if (cache_get(m->c, c->id, path, &a, lbuf, sizeof(lbuf)) < 0)
			return -EIO;
	}
	*st = a.st;
	if (link && linklen) {
		if (!S_ISLNK(a.st.st_mode) || !(a.flags & CACHE_LINK))
			return -EINVAL;
		if (strlen(lbuf) >= linklen)
			return -ENAMETOOLONG;
		memcpy(link, lbuf, strlen(lbuf) + 1);
	}
	return 0;
}

/* One directory of the tree being loaded, whose listing is being built. */
struct frame {
	char *path;
	char *names;
	size_t bytes, cap, count;
};

struct loader {
	struct meta *m;
	struct ctr *c;
	const char *dir;
	long snapshot;
	bool shallow; /* the cache is nearly full: only depth one */
	struct tarstream *t;
	struct cache_blob *blob; /* the spool file contents go to */
	off_t blob_off;		 /* where the next content goes in it */
	bool no_data;		 /* a probe, or the budget (or disk) is spent */
	struct frame *stack;
	size_t depth, maxdepth;
	char **links; /* hard links: pairs (path, target path) */
	size_t nlinks, caplinks;
	/* a probe records the contents it kept only once it has read the
	 * subtree whole: one stopped at its cap is followed by a full GET
	 * (the listing is not whole), and its blob would be dead weight */
	bool defer;
	struct pend {
		char *path;
		off_t off, len;
	} * pend;
	size_t npend, cappend;
};

static int frame_push(struct loader *l, const char *path)
{
	struct frame *f;

	if (l->depth == l->maxdepth) {
		size_t n = l->maxdepth ? l->maxdepth * 2 : 16;
		struct frame *ns = realloc(l->stack, n * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		l->stack = ns;
		l->maxdepth = n;
	}
	f = &l->stack[l->depth];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return -ENOMEM;
	l->depth++;
	return 0;
}

static int frame_add(struct frame *f, const char *name)
{
	size_t n = strlen(name) + 1;

	if (f->bytes + n > f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 1024;
		char *nb;

		while (cap < f->bytes + n)
			cap *= 2;
		nb = realloc(f->names, cap);
		if (!nb)
			return -ENOMEM;
		f->names = nb;
		f->cap = cap;
	}
	memcpy(f->names + f->bytes, name, n);
	f->bytes += n;
	f->count++;
	return 0;
}

static void frame_pop(struct loader *l, bool complete)
{
	struct frame *f = &l->stack[--l->depth];

	if (complete)
		cache_set_listing(l->m->c, l->c->id, f->path, f->names,
				  f->count, f->bytes, l->snapshot);
	free(f->path);
	free(f->names);
}

/*
 * Maps a name of the tar of a GET of dir to the container path: a GET of
 * "/etc" names its entries "etc/", "etc/x"; a GET of "/" names them "/",
 * "/bin/". Returns 0 or -EIO when the name does not belong to dir.
 */
static int entry_path(const char *dir, const char *name, char *out,
		      size_t outlen)
{
	const char *base = strrchr(dir, '/') + 1;
	size_t blen = strlen(base);
	const char *rel;
	size_t n;

	if (blen == 0) {
		rel = name;
	} else {
		while (*name == '/')
			name++;
		if (strncmp(name, base, blen) != 0 ||
		    (name[blen] != '/' && name[blen] != '\0'))
			return -EIO;
		rel = name + blen;
	}
	while (*rel == '/')
		rel++;
	n = (size_t)snprintf(out, outlen, "%s%s%s", dir,
			     (*rel && blen) ? "/" : "", rel);
	if (n >= outlen)
		return -ENAMETOOLONG;
	while (n > 1 && out[n - 1] == '/')
		out[--n] = '\0';
	return 0;
}

static int add_hardlink(struct loader *l, const char *path, const char *target,
			const struct tar_entry *te)
{
	struct cache_attr a;

	if (cache_get(l->m->c, l->c->id, target, &a, NULL, 0) < 0) {
		/* target not seen: a plain file, whose size a HEAD tells */
		memset(&a, 0, sizeof(a));
		a.st = te->st;
		a.flags = CACHE_OWNER;
		fill_defaults(&a.st);
		cache_put(l->m->c, l->c->id, path, &a, NULL);
		return 0;
	}
	a.st.st_nlink++; /* and its number goes with it (Inode numbers) */
	cache_put(l->m->c, l->c->id, target, &a, NULL);
	cache_put(l->m->c, l->c->id, path, &a, NULL);
	if (l->nlinks + 2 > l->caplinks) {
		size_t n = l->caplinks ? l->caplinks * 2 : 32;
		char **nl = realloc(l->links, n * sizeof(*nl));

		if (!nl)
			return -ENOMEM;
		l->links = nl;
		l->caplinks = n;
	}
	l->links[l->nlinks++] = strdup(path);
	l->links[l->nlinks++] = strdup(target);
	return 0;
}

/* Gives every name of a hard-linked file the final link count. */
static void fix_hardlinks(struct loader *l)
{
	for (size_t i = 0; i + 1 < l->nlinks; i += 2) {
		struct cache_attr a;

		if (l->links[i] && l->links[i + 1] &&
		    cache_get(l->m->c, l->c->id, l->links[i + 1], &a, NULL,
			      0) == 0)
			cache_put(l->m->c, l->c->id, l->links[i], &a, NULL);
		free(l->links[i]);
		free(l->links[i + 1]);
	}
	free(l->links);
}

/* Keeps a file's content, which the listing's tar carries anyway, in a
 * spool file, so that reading the file later needs no GET of its own. */
static int prefetch(struct loader *l, const char *path, off_t size)
{
	off_t got = 0, base;

	if (l->no_data)
		return 0;
	if (!l->blob) {
		int fd = l->m->spool ? spool_file(l->m->spool) : -1;

		l->blob = fd >= 0 ? cache_blob_new(fd) : NULL;
		if (!l->blob) {
			if (fd >= 0)
				close(fd);
			l->no_data = true;
			return 0;
		}
	}
	base = l->blob_off;
	while (got <= size) {
		const void *b;
		off_t off;
		ssize_t n = tarstream_data(l->t, &b, &off);

		if (n < 0)
			return (int)n;
		if (n == 0)
			break;
		if (off != got || got + n > size)
			return 0; /* not plain data: leave it */
		if (pwrite(cache_blob_fd(l->blob), b, (size_t)n, base + got) !=
		    n) {
			l->no_data = true; /* the spool is full: stop */
			return 0;
		}
		got += n;
	}
	if (got != size)
		return 0;
	l->blob_off += size;
	if (l->defer) {
		if (l->npend == l->cappend) {
			size_t n = l->cappend ? l->cappend * 2 : 64;
			struct pend *np = realloc(l->pend, n * sizeof(*np));

			if (!np) {
				l->no_data = true;
				return 0;
			}
			l->pend = np;
			l->cappend = n;
		}
		l->pend[l->npend].path = strdup(path);
		if (!l->pend[l->npend].path) {
			l->no_data = true;
			return 0;
		}
		l->pend[l->npend].off = base;
		l->pend[l->npend++].len = size;
		return 0;
	}
	if (!cache_set_data(l->m->c, l->c->id, path, l->blob, base, size,
			    l->snapshot))
		l->no_data = true;
	return 0;
}

/* Records the contents a probe kept, if it read its subtree whole. */
static void settle_pending(struct loader *l, bool whole)
{
	bool room = whole;

	for (size_t i = 0; i < l->npend; i++) {
		if (room)
			room = cache_set_data(
			    l->m->c, l->c->id, l->pend[i].path, l->blob,
			    l->pend[i].off, l->pend[i].len, l->snapshot);
		free(l->pend[i].path);
	}
	free(l->pend);
}

/* Room for size bytes of a probe's content: a reference to the spool file
 * all probes share (a new one once PROBE_BLOB is passed; a descriptor per
 * probed file would run the daemon out of them) and the offset in it;
 * NULL when there is no spool file. */
static struct cache_blob *probe_room(struct meta *m, off_t size, off_t *off)
{
	struct cache_blob *b = NULL;

	pthread_mutex_lock(&m->probe_lock);
	if (m->probe_blob && m->probe_off + size > PROBE_BLOB) {
		cache_blob_put(m->probe_blob); /* its contents keep it */
		m->probe_blob = NULL;
	}
	if (!m->probe_blob && m->spool) {
		int fd = spool_file(m->spool);

		m->probe_blob = fd >= 0 ? cache_blob_new(fd) : NULL;
		if (!m->probe_blob && fd >= 0)
			close(fd);
		m->probe_off = 0;
	}
	if (m->probe_blob) {
		b = cache_blob_get(m->probe_blob);
		*off = m->probe_off;
		m->probe_off += size;
	}
	pthread_mutex_unlock(&m->probe_lock);
	return b;
}

/* The content of a small file whose header a probe read: the rest of its
 * tar, kept as a listing keeps contents, so that a `cat` or `cp` of a file
 * not listed yet costs one GET, not two. Kept only when the archive ends
 * right after it. */
static void keep_probed(struct meta *m, struct ctr *c, const char *path,
			struct tarstream *t, off_t size, long snapshot)
{
	struct loader l = {.m = m,
			   .c = c,
			   .dir = path,
			   .snapshot = snapshot,
			   .t = t,
			   .defer = true};
	struct tar_entry te;
	bool whole;

	l.blob = probe_room(m, size, &l.blob_off);
	if (!l.blob)
		return;
	whole = prefetch(&l, path, size) == 0 && l.npend == 1 &&
		tarstream_next(t, &te) == 1;
	settle_pending(&l, whole);
	cache_blob_put(l.blob);
}

static int load_entry(struct loader *l, const struct tar_entry *te)
{
	char path[PATH_MAX], parent[PATH_MAX], target[PATH_MAX];
	bool is_top;
	int ret;

	ret = entry_path(l->dir, te->name, path, sizeof(path));
	if (ret < 0)
		return ret;
	is_top = strcmp(path, l->dir) == 0;
	if (is_top) {
		if (l->depth != 0)
			return -EIO;
	} else {
		pathmap_parent(path, parent, sizeof(parent));
		while (l->depth > 0 &&
		       strcmp(l->stack[l->depth - 1].path, parent) != 0)
			frame_pop(l, !l->shallow || l->depth == 1);
		if (l->depth == 0)
			return -EIO; /* not depth-first: do not guess */
		if (l->shallow && l->depth > 1)
			return 0;
	}
	if (te->hardlink) {
		ret = entry_path(l->dir, te->hardlink, target, sizeof(target));
		if (ret == 0)
			ret = add_hardlink(l, path, target, te);
	} else {
		struct cache_attr a = {.st = te->st,
				       .validated = now_mono(),
				       .flags = CACHE_OWNER};

		if (te->symlink)
			a.st.st_size = (off_t)strlen(te->symlink);
		fill_defaults(&a.st);
		if (cache_put(l->m->c, l->c->id, path, &a, te->symlink))
			l->shallow = true;
		if (S_ISREG(te->st.st_mode) && te->st.st_size <= PREFETCH_MAX)
			ret = prefetch(l, path, te->st.st_size);
	}
	if (ret < 0)
		return ret;
	if (!is_top) {
		const char *base = strrchr(path, '/') + 1;

		ret = frame_add(&l->stack[l->depth - 1], base);
		if (ret < 0)
			return ret;
	}
	if (S_ISDIR(te->st.st_mode) && !te->hardlink)
		ret = frame_push(l, path);
	return ret;
}

/* One GET of dir: caches every entry of the subtree and the listing of
 * every directory in it.  With a cap (a probe), stops once the body passed
 * cap bytes or PROBE_ENTRIES entries: what was seen is cached, listings not
 * seen whole are not. With stop_big, stops the same way before a big file
 * (LIST_BIG_FILE). *whole (when not NULL): whether it read all of it. */
static int load_tree(struct meta *m, struct ctr *c, const char *dir, off_t cap,
		     bool stop_big, bool *whole)
{
	struct loader l = {.m = m, .c = c, .dir = dir, .defer = cap > 0};
	struct engine_stream *s;
	struct tarstream *t;
	struct tar_entry te;
	size_t entries = 0;
	double t0 = now_mono();
	char msg[512];
	int ret;

	l.snapshot = engine_now(m->e);
	ret = engine_archive_get(m->e, c->id, dir, &s, msg, sizeof(msg));
	if (ret < 0) {
		if (ret != -ENOENT)
			log_fail(c, "list", dir, msg);
		return ret;
	}
	ret = tarstream_open(stream_source, s, &t);
	if (ret < 0)
		goto out_stream;
	l.t = t;
	while ((ret = tarstream_next(t, &te)) == 0) {
		/* past the cap (or about to be, with this entry's data):
		 * keep this header, read no further */
		off_t upto = engine_stream_bytes(s) + te.st.st_size;
		bool last = cap && (upto > cap || entries >= PROBE_ENTRIES);
		bool big = stop_big && S_ISREG(te.st.st_mode) && !te.hardlink &&
			   te.st.st_size >= LIST_BIG_FILE &&
			   upto > LIST_BIG_TOTAL;

		entries++;
		if (last || big)
			l.no_data = true;
		ret = load_entry(&l, &te);
		if (ret < 0) {
			log_fail(c, "list", dir, "unexpected archive layout");
			break;
		}
		if (last || big) {
			ret = last ? 2 : 3;
			break;
		}
	}
	if (ret < 0 && ret != -EIO)
		log_fail(c, "list", dir, strerror(-ret));
	else if (ret < 0 && entries > 0)
		log_fail(c, "list", dir, tarstream_error(t));
	while (l.depth > 0)
		frame_pop(&l, ret == 1 && (!l.shallow || l.depth == 1));
	free(l.stack);
	settle_pending(&l, ret == 1);
	cache_blob_put(l.blob);
	fix_hardlinks(&l);
	log_dbg("listed '%s' in '%s': %zu entries in %.1f ms%s", dir, c->name,
		entries, (now_mono() - t0) * 1e3,
		ret == 2    ? " (stopped at the cap)"
		: ret == 3  ? " (stopped before a big file)"
		: l.shallow ? " (cache full: depth one kept)"
			    : "");
	if (whole)
		*whole = ret == 1;
	ret = ret >= 1 && ret <= 3 ? 0 : ret;
	tarstream_free(t);
out_stream:
	engine_stream_free(s);
	return ret;
}

static bool exec_listing_ok(struct meta *m, const struct ctr *c)
{
	bool ok = c->running;

	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; ok && i < NO_EXEC_MAX; i++)
		ok = strcmp(m->no_exec[i], c->id) != 0;
	pthread_mutex_unlock(&m->lock);
	return ok;
}

static void no_exec_listing(struct meta *m, const struct ctr *c)
{
	pthread_mutex_lock(&m->lock);
	snprintf(m->no_exec[m->no_exec_next], sizeof(m->no_exec[0]), "%s",
		 c->id);
	m->no_exec_next = (m->no_exec_next + 1) % NO_EXEC_MAX;
	pthread_mutex_unlock(&m->lock);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs find and stat over the children of dir (deep: its whole subtree),
 * as engine_exec_out() does. */
static int exec_stat(struct meta *m, struct ctr *c, const char *dir, bool deep,
		     int *status, char *msg, size_t msglen, char **out,
		     size_t *outlen)
{
	const char *argv[] = {
	    "find", dir,  "-mindepth",	     "1",  "-maxdepth", "1", "-exec",
	    "stat", "-c", PATHSTAT_STAT_FMT, "{}", "+",		NULL};

	if (deep) /* without "-maxdepth 1" */
		memmove(&argv[4], &argv[6], 7 * sizeof(argv[0]));
	*status = 0;
	return engine_exec_out(m->e, c->id, argv, status, msg, msglen, out,
			       outlen);
}

/*
 * Lists dir by exec, for a listing that stopped before a big file:
 * `find DIR -mindepth 1 -maxdepth 1 -exec stat -c ... {} +` (busybox and
 * GNU alike) gives each child's type, mode, owner, size, mtime, link
 * count and device. Children the stopped GET has just cached (since)
 * stay as its tar said, contents included; a symlink's target is asked
 * when read. 0, or -errno (the caller then reads the whole tree), and
 * the tool's exit status in *status (126 or 127: no find or stat).
 */
static int list_by_exec(struct meta *m, struct ctr *c, const char *dir,
			double since, int *status)
{
	char prefix[PATH_MAX], msg[512];
	char *out, *line, *nl, *names = NULL, **v = NULL;
	size_t outlen, n = 0, cap = 0, bytes = 0;
	long snapshot = engine_now(m->e);
	double t0 = now_mono();
	int ret;

	snprintf(prefix, sizeof(prefix), "%s/", strcmp(dir, "/") ? dir : "");
	ret = exec_stat(m, c, dir, false, status, msg, sizeof(msg), &out,
			&outlen);
	if (ret < 0) {
		log_dbg("no listing of '%s' in '%s' by exec (%s): the whole "
			"tree is read",
			dir, c->name, msg[0] ? msg : strerror(-ret));
		return ret;
	}
	for (line = out; line < out + outlen; line = nl + 1) {
		struct cache_attr a = {.flags = CACHE_OWNER}, old;
		char *path, **nv;

		nl = memchr(line, '\n', (size_t)(out + outlen - line));
		if (!nl) {
			ret = -EIO;
			break;
		}
		*nl = '\0';
		if (pathstat_stat_line(line, prefix, false, &a.st, &path) < 0) {
			ret = -EIO;
			break;
		}
		fill_defaults(&a.st);
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*nv));
			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			v = nv;
		}
		v[n++] = path + strlen(prefix);
		bytes += strlen(path + strlen(prefix)) + 1;
		if (cache_get(m->c, c->id, path, &old, NULL, 0) == 0 &&
		    (old.flags & CACHE_OWNER) && old.validated >= since)
			continue; /* just read from the tar */
		a.validated = now_mono();
		cache_put(m->c, c->id, path, &a, NULL);
	}
	if (ret == 0) {
		char *p = names = malloc(bytes ? bytes : 1);

		/* the tar's order */
		if (n > 0)
			qsort(v, n, sizeof(*v), cmp_names);
		for (size_t i = 0; names && i < n; i++)
			p = stpcpy(p, v[i]) + 1;
		ret = names ? cache_set_listing(m->c, c->id, dir, names, n,
						bytes, snapshot)
			    : -ENOMEM;
	}
	if (ret < 0)
		log_dbg("no listing of '%s' in '%s' by exec (%s): the whole "
			"tree is read",
			dir, c->name,
			ret == -EIO ? "output not understood" : strerror(-ret));
	else
		log_dbg("listed '%s' in '%s' by exec: %zu entries in %.1f ms",
			dir, c->name, n, (now_mono() - t0) * 1e3);
	free(names);
	free(v);
	free(out);
	return ret;
}

/*
 * Confirms what the cache holds below dir with one exec of find and stat
 * over its subtree (CONFIRM_*, confirm_worth()). Each entry is judged as a
 * HEAD's answer is (revalidate()): the same type, size and mtime second,
 * with the same owner known, confirms it; anything else replaces it,
 * owner included, and the content held for it goes with the old
 * attributes. Paths the cache does not hold are left out (a listing brings
 * them: their directory's mtime moved), and entries the exec does not show
 * stay stale: their next getattr asks, and a 404 drops them. A line that
 * does not parse (a name with a newline) is skipped the same way.
 */
static int confirm_by_exec(struct meta *m, struct ctr *c, const char *dir)
{
	char prefix[PATH_MAX], msg[512];
	char *out, *line, *nl;
	size_t outlen, seen = 0, same = 0;
	double t0 = now_mono();
	int status, ret;

	if ((size_t)snprintf(prefix, sizeof(prefix), "%s/", dir) >=
	    sizeof(prefix))
		return -ENAMETOOLONG;
	ret = exec_stat(m, c, dir, true, &status, msg, sizeof(msg), &out,
			&outlen);
	if (ret < 0) {
		if (status == 126 || status == 127)
			no_exec_listing(m, c);
		log_dbg("'%s' in '%s' not confirmed by exec (%s)", dir, c->name,
			msg[0] ? msg : strerror(-ret));
		return ret;
	}
	for (line = out; line < out + outlen; line = nl + 1) {
		struct cache_attr a = {.flags = CACHE_OWNER}, old;
		char *path;

		nl = memchr(line, '\n', (size_t)(out + outlen - line));
		if (!nl)
			break;
		*nl = '\0';
		if (pathstat_stat_line(line, prefix, true, &a.st, &path) < 0 ||
		    cache_get(m->c, c->id, path, &old, NULL, 0) < 0)
			continue;
		fill_defaults(&a.st);
		seen++;
		a.validated = now_mono();
		/* a directory's size is 0 in a tar and 4096 from a HEAD (and
		 * from stat): it says nothing */
		if (S_ISDIR(a.st.st_mode) && S_ISDIR(old.st.st_mode))
			a.st.st_size = old.st.st_size;
		if (same_head(&old.st, &a.st) && (old.flags & CACHE_OWNER) &&
		    old.st.st_uid == a.st.st_uid &&
		    old.st.st_gid == a.st.st_gid &&
		    old.st.st_mtim.tv_nsec == 0) {
			cache_confirm(m->c, c->id, path, NULL, a.validated);
			same++;
		} else {
			cache_put(m->c, c->id, path, &a, NULL);
		}
	}
	log_dbg("confirmed '%s' in '%s' by exec: %zu of %zu entries the same "
		"in %.1f ms",
		dir, c->name, same, seen, (now_mono() - t0) * 1e3);
	free(out);
	return 0;
}

int meta_listing(struct meta *m, struct ctr *c, const char *dir,
		 struct cache_listing *out)
{
	struct cache_attr a;
	bool by_exec = exec_listing_ok(m, c), whole, loaded = false;
	int ret, tries = 0, status;
	double t0;

	for (;;) {
		bool have = cache_get(m->c, c->id, dir, &a, NULL, 0) == 0;

		/* not after a load of its own: a GET longer than the TTL
		 * left dir stale, and a HEAD would drop a listing younger
		 * than dir's mtime second, so that none was ever served */
		if (have && !loaded && stale(m, c, a.validated)) {
			ret = revalidate(m, c, dir, &a, true);
			if (ret < 0)
				return ret;
		}
		ret = cache_listing(m->c, c->id, dir, out);
		if (ret == 0)
			return 0;
		if (tries++ == 2)
			break;
		t0 = now_mono();
		ret = load_tree(m, c, dir, 0, by_exec, &whole);
		if (ret < 0)
			return ret;
		loaded = true;
		if (!whole && by_exec &&
		    (ret = list_by_exec(m, c, dir, t0, &status)) < 0) {
			/* not counted: it could not give a listing */
			if (status == 126 || status == 127) /* no such tool */
				no_exec_listing(m, c);
			by_exec = false;
			tries--;
		}
	}
	log_fail(c, "list", dir, "the cache cannot hold the listing");
	return -EIO;
}
