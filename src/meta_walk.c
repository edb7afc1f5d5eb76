// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * How a walk (cp -r, grep -r, rsync, ls -la) past the TTL is served with
 * few engine calls: a thread that revalidates the next siblings ahead of
 * the walk (meta_hint_walk(), meta_wait_claim()), and the choice to list
 * a directory again with one GET, or confirm a big subtree with one exec,
 * rather than a HEAD per entry (meta_relist_parent()). meta_getattr()
 * (meta.c) calls them; the state is struct meta's (meta_int.h).
 */
#include "meta_int.h"
#include "execlist.h"
#include "loader.h"
#include "pathmap.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A walk's directory is listed again with one GET rather than a HEAD
 * per stale entry when that GET costs less than those HEADs, as measured
 * here (engine_get_pays()), and some of the stale entries are its own
 * children (fewer where a HEAD costs a good part of a GET: the engine's
 * quirk head_dear, Podman). */
#define RELIST_CHILD	  8
#define RELIST_DEAR_CHILD 1
/* Siblings revalidated ahead of a walk, after the one asked for. */
#define AHEAD 64
/* A walk through a directory too big to list again with a GET has the
 * entries below it confirmed by one exec of find and stat instead of a
 * HEAD each (execlist_confirm()) when the cache knows at most CONFIRM_MAX
 * of them and at least this many are past half their TTL: an exec costs
 * 45-330 ms on Docker, a HEAD about 1 ms (56 ms on Podman). */
#define CONFIRM_MAX  20000
#define CONFIRM	     256
#define CONFIRM_DEAR 8 /* head_dear */

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
		if (quit || (m->busy && m->busy(m->e, h->c.id)))
			break; /* busy: a HEAD would wait for our own GET */
		/* m->claim[j] changes only on this thread */
		if (cache_get(m->c, h->c.id, m->claim[j], &a, NULL, 0) == 0 &&
		    worth_ahead(m, a.validated)) {
			meta_revalidate(m, &h->c, m->claim[j], &a, true);
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
bool meta_wait_claim(struct meta *m, const struct ctr *c, const char *path)
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
void meta_hint_walk(struct meta *m, const struct ctr *c, const char *path)
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

/* Sets one of the memos of meta_relist_parent() to dir, as of now. */
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
 * capped) than its entries one HEAD each: when the subtree is small and a
 * GET of it costs less than a HEAD of each entry below it past half its
 * TTL. What the two cost is measured as ctrfs runs (callcost.h): a GET's
 * first byte took 50-150 ms on Docker 20.10 (its helper process) and about
 * what a HEAD takes on 26 (1-2 ms), 381 against 56 ms on Podman. Entries
 * below count too: a walk that stats a directory's children goes on into
 * its subdirectories (rsync, cp -r, find); a few of them must be its own,
 * so that `ls -la` of a directory of one subdirectory stays one HEAD.
 * The answer "no" is remembered for the TTL, so that a walk of a big
 * directory does not count its entries again at every step.
 */
static int relist_worth(struct meta *m, struct ctr *c, const char *dir,
			double now)
{
	bool dear = engine_quirks(m->e)->head_dear;
	size_t need_child = dear ? RELIST_DEAR_CHILD : RELIST_CHILD;
	struct cache_subtree t;
	double head, get;

	if (cache_subtree(m->c, c->id, dir, PROBE_ENTRIES - 1, PROBE_TREE,
			  now - m->ttl / 2, &t) < 0)
		return -1; /* too big, or not all known */
	if (t.stale_children < need_child ||
	    !engine_get_pays(m->e, t.stale, t.bytes, &head, &get))
		return 0;
	log_dbg("'%s' in '%s': %zu entries to ask again, listed again "
		"instead (%zu in all, about %lld KiB; a HEAD costs %.1f ms "
		"here, a GET %.1f ms to its first byte)",
		dir, c->name, t.stale, t.entries, (long long)t.bytes / 1024,
		head * 1e3, get * 1e3);
	return 1;
}

/*
 * Whether the entries below dir, a directory too big to list again with a
 * GET, are better confirmed by one exec (execlist_confirm()) than one HEAD
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
	bool dear = engine_quirks(m->e)->head_dear;
	size_t need = dear ? CONFIRM_DEAR : CONFIRM;
	size_t need_child = !deep  ? need
			    : dear ? RELIST_DEAR_CHILD
				   : RELIST_CHILD;
	struct cache_subtree t;

	if (strcmp(dir, "/") == 0 || !execlist_ok(m, c) ||
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
bool meta_relist_parent(struct meta *m, struct ctr *c, const char *path)
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
		whole = (ret = execlist_confirm(m, c, dir)) == 0;
	else
		ret = loader_tree(m, c, dir, PROBE_TREE, false, &whole);
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
