// SPDX-License-Identifier: GPL-2.0-or-later
/* The mount's engines, a struct site each (docs/design.md, "Past one
 * host"): their set-up and teardown, start and stop (with the event
 * stream that keeps each one's container table current); which engine
 * and which container a mount path lies in (resolve()); the root's and
 * the engines' directories; the status and the sync of all of them. */
#include "config.h"

/* FUSE_USE_VERSION (config.h) first; fs_int.h uses the FUSE types */
#include <fuse.h>

#include "fs_int.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "events.h"
#include "journal.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "reader.h"
#include "spool.h"
#include "writer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_MAX_ENTRIES 100000
/* bytes of file content kept (in the spool) from listings, in all */
#define CACHE_DATA_BUDGET ((off_t)1 << 30)
/* seconds between the pings of an engine down since the start: the first
 * wait, doubled up to the last (as the event stream's backoff) */
#define WAIT_FIRST 0.5
#define WAIT_LAST  5.0

static void on_ctr_gone(void *ctx, const char *id)
{
	struct site *s = ctx;

	cache_drop_ns(s->cache, id);
}

/* One engine's cache, meta, container table, spool and writer, with its
 * share (1/n) of the mount's memory budgets. */
static int site_open(struct site *s, const struct fs_config *cfg, size_t n)
{
	if (spool_new(NULL, cfg->mem_spool > 0, &s->spool) < 0) {
		log_err("cannot create the spool directory: %s",
			strerror(errno));
		return -EIO;
	}
	s->cache = cache_new(CACHE_MAX_ENTRIES);
	if (!s->cache)
		return -ENOMEM;
	/* Podman's tar rounds a time to the second, Docker's cuts it */
	cache_set_tar_rounding(s->cache,
			       engine_quirks(s->e)->tar_rounds_seconds);
	cache_set_data_budget(s->cache, CACHE_DATA_BUDGET / (off_t)n);
	s->meta = meta_new(s->e, s->cache, cfg->attr_timeout, reader_ctr_busy,
			   s->spool);
	s->ctrs = ctr_table_new(s->e, cfg->all, cfg->attr_timeout / 2,
				on_ctr_gone, s);
	if (!s->meta || !s->ctrs)
		return -ENOMEM;
	log_dbg("%s%sspool: %s; in memory: %s, up to %lld MiB in all", s->name,
		*s->name ? ": " : "", spool_dir(s->spool),
		*spool_mem_dir(s->spool) ? spool_mem_dir(s->spool) : "none",
		(cfg->mem_spool / (long long)n) >> 20);
	s->writer =
	    writer_new(s->e, s->meta, s->spool, cfg->mem_spool / (long long)n);
	if (!s->writer)
		return -ENOMEM;
	writer_set_journal(s->writer, s->journal);
	return 0;
}

int sites_new(struct fs *fs, const struct fs_engine *engines, size_t n)
{
	fs->sites = calloc(n, sizeof(*fs->sites));
	if (!fs->sites)
		return -ENOMEM;
	fs->nsites = n;
	for (size_t i = 0; i < n; i++) {
		struct site *s = &fs->sites[i];

		if (n > 1)
			snprintf(s->name, sizeof(s->name), "%s",
				 engines[i].name);
		s->ino = n > 1 ? cache_new_ino() : 1;
		s->e = engines[i].e;
		s->fs = fs;
		s->late = engines[i].down;
		s->late_journal = s->late ? engines[i].journal : NULL;
		atomic_store(&s->ready, !s->late);
		/* without write-back, replayed at start and no more */
		s->journal = fs->cfg.writeback > 0 ? engines[i].journal : NULL;
		if (site_open(s, &fs->cfg, n) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Starts the thread that follows s's event stream and keeps its container
 * table current (after the daemon forked); -1 when it cannot. */
static int site_watch(struct site *s)
{
	ctr_table_name(s->ctrs, s->name);
	if (!s->events)
		s->events = events_start(s->e, s->ctrs, s->name);
	return s->events ? 0 : -1;
}

/* Stops it and waits for it: the table lists again on access. */
static void site_unwatch(struct site *s)
{
	events_stop(s->events);
	s->events = NULL;
	ctr_set_live(s->ctrs, false);
}

void sites_free(struct fs *fs)
{
	for (size_t i = 0; i < fs->nsites; i++) {
		struct site *s = &fs->sites[i];

		writer_free(s->writer);
		if (s->ctrs)
			site_unwatch(s); /* before its table goes */
		ctr_table_free(s->ctrs);
		meta_free(s->meta);
		cache_free(s->cache);
		spool_free(s->spool);
	}
	free(fs->sites);
	fs->sites = NULL;
	fs->nsites = 0;
}

/* Sleeps up to secs or until the mount stops; whether it stops. */
static bool nap_or_stop(struct fs *fs, double secs)
{
	struct timespec ts;
	bool stop;

	time_after(secs, &ts);
	pthread_mutex_lock(&fs->stop_lock);
	if (!fs->stopping)
		pthread_cond_timedwait(&fs->stop_cond, &fs->stop_lock, &ts);
	stop = fs->stopping;
	pthread_mutex_unlock(&fs->stop_lock);
	return stop;
}

/*
 * The thread of an engine that was down at start (a mount of several):
 * pings it until it answers (the ping fixes its API version and says
 * whether it is Podman), replays what its journal holds, and serves it
 * from then on. Its outage was said once at start; the pings that fail
 * say nothing, the answer one line.
 */
static void *site_wait(void *arg)
{
	struct site *s = arg;
	struct fs *fs = s->fs;
	char msg[PATH_MAX + 512];
	double wait = WAIT_FIRST;

	while (engine_ping(s->e, msg, sizeof(msg)) < 0) {
		/* it answered, and what it said will not change */
		if (!engine_down(s->e)) {
			log_err("%s: engine %s stays empty", msg, s->name);
			return NULL;
		}
		if (nap_or_stop(fs, wait))
			return NULL;
		wait = wait * 2 > WAIT_LAST ? WAIT_LAST : wait * 2;
	}
	cache_set_tar_rounding(s->cache,
			       engine_quirks(s->e)->tar_rounds_seconds);
	if (s->late_journal) {
		journal_replay(s->late_journal, s->e);
		if (fs->cfg.writeback > 0 &&
		    journal_start(s->late_journal, msg, sizeof(msg)) < 0)
			log_err("engine %s: %s", s->name, msg);
	}
	atomic_store(&s->ready, true);
	log_info("engine %s answers now: its containers are served", s->name);
	if (engine_quirks(s->e)->owners_zero) /* as main.c says at start */
		log_info("the engine %s is Podman: its archive API reports "
			 "every owner as 0:0, and ctrfs shows what it reports",
			 s->name);
	if (site_watch(s) < 0)
		log_err("cannot follow engine %s's events: the container "
			"list is read again on access",
			s->name);
	return NULL;
}

void sites_start(struct fs *fs)
{
	for (size_t i = 0; i < fs->nsites; i++) {
		struct site *s = &fs->sites[i];

		if (s->late) {
			s->waiter_started =
			    pthread_create(&s->waiter, NULL, site_wait, s) == 0;
			if (!s->waiter_started)
				log_err("engine %s: cannot wait for it: it "
					"stays empty",
					s->name);
		} else if (site_watch(s) < 0)
			log_err("cannot follow %s%s%s events: the "
				"container list is read again on access",
				*s->name ? "engine " : "the engine's", s->name,
				*s->name ? "'s" : "");
		if (writer_set_writeback(s->writer, fs->cfg.writeback) < 0)
			log_err("cannot start write-back: closes commit at "
				"once");
	}
}

void sites_stop(struct fs *fs)
{
	/* fs->stopping is set: a waiter ends at its next nap */
	for (size_t i = 0; i < fs->nsites; i++)
		if (fs->sites[i].waiter_started) {
			pthread_join(fs->sites[i].waiter, NULL);
			fs->sites[i].waiter_started = false;
		}
	for (size_t i = 0; i < fs->nsites; i++)
		site_unwatch(&fs->sites[i]);
	for (size_t i = 0; i < fs->nsites; i++)
		writer_drain(fs->sites[i].writer);
}

int sites_split(struct fs *fs, const char *path, struct site **s,
		const char **rest)
{
	const char *p = path, *end;
	size_t len;

	*rest = path;
	if (fs->nsites == 1) {
		*s = &fs->sites[0];
		return 0;
	}
	*s = NULL;
	while (*p == '/')
		p++;
	if (!*p)
		return 0;
	end = strchr(p, '/');
	len = end ? (size_t)(end - p) : strlen(p);
	for (size_t i = 0; i < fs->nsites; i++)
		if (strlen(fs->sites[i].name) == len &&
		    memcmp(fs->sites[i].name, p, len) == 0) {
			*s = &fs->sites[i];
			*rest = p + len;
			return 0;
		}
	return -ENOENT;
}

/*
 * Resolves a mount path: *c gets a container reference (NULL for the
 * mount root) and *inner the path inside it. Paths on a tmpfs of the
 * container are refused here, once for every operation.
 */
int resolve(struct fs *fs, const char *path, struct ctr **c, const char **inner)
{
	char name[256];
	struct site *s;
	int ret = sites_split(fs, path, &s, &path);

	*c = NULL;
	*inner = NULL;
	if (ret < 0 || !s)
		return ret;
	ret = pathmap_split(path, name, sizeof(name), inner);
	if (ret < 0)
		return ret;
	if (!*inner)
		return 0;
	if (!site_ready(s))
		return -EIO; /* down since the start: asked nothing yet */
	/* below the container's directory, its old name still leads to a
	 * renamed container: the kernel asks so for what it holds open */
	ret = strcmp(*inner, "/") == 0 ? ctr_lookup(s->ctrs, name, c)
				       : ctr_lookup_below(s->ctrs, name, c);
	if (ret < 0)
		return ret;
	ret = ctr_check_path(s->ctrs, *c, *inner);
	if (ret < 0) {
		ctr_put(s->ctrs, *c);
		*c = NULL;
	}
	return ret;
}

ino_t sites_ino(struct fs *fs, const char *path)
{
	struct site *s;
	const char *rest;

	if (sites_split(fs, path, &s, &rest) < 0 || !s)
		return 1;
	return s->ino;
}

int sites_fill(struct fs *fs, const char *path, void *buf,
	       fuse_fill_dir_t filler)
{
	char *names, *p;
	const char *rest;
	struct site *s;
	size_t n;
	int ret = sites_split(fs, path, &s, &rest);

	if (ret < 0)
		return ret;
	if (!s) {
		for (size_t i = 0; i < fs->nsites; i++)
			if (filler(buf, fs->sites[i].name, NULL, 0, 0))
				break;
		return 0;
	}
	if (!site_ready(s))
		return 0; /* down since the start: nothing asked of it yet */
	ret = ctr_names(s->ctrs, &names, &n);
	/* an engine down is an empty directory among the others (its
	 * outage logged once, by the engine), and EIO below it */
	if (ret < 0)
		return fs->nsites > 1 ? 0 : ret;
	p = names;
	for (size_t i = 0; i < n; i++, p += strlen(p) + 1)
		if (filler(buf, p, NULL, 0, 0))
			break;
	free(names);
	return 0;
}

/* Appends src's lines to buf, each line's second field (a container's
 * name) prefixed with "name/". */
static size_t prefix_lines(char *buf, size_t len, size_t max, const char *src,
			   const char *name)
{
	while (*src && len + 1 < max) {
		const char *nl = strchr(src, '\n');
		size_t l = nl ? (size_t)(nl - src) + 1 : strlen(src);
		const char *tab = memchr(src, '\t', l);
		size_t head = tab ? (size_t)(tab - src) + 1 : 0;
		int w = snprintf(buf + len, max - len, "%.*s%s/%.*s", (int)head,
				 src, name, (int)(l - head), src + head);

		if (w < 0 || (size_t)w >= max - len)
			break; /* whole lines only */
		len += (size_t)w;
		src += l;
	}
	return len;
}

size_t sites_status(struct fs *fs, char *buf, size_t max)
{
	size_t len = 0;
	char *one;

	if (fs->nsites == 1)
		return writer_status(fs->sites[0].writer, buf, max);
	buf[0] = '\0';
	one = malloc(max);
	if (!one)
		return 0;
	for (size_t i = 0; i < fs->nsites; i++) {
		writer_status(fs->sites[i].writer, one, max);
		len = prefix_lines(buf, len, max, one, fs->sites[i].name);
	}
	free(one);
	return len;
}

int sites_sync(struct fs *fs)
{
	int ret = 0;

	for (size_t i = 0; i < fs->nsites; i++) {
		int r = writer_sync(fs->sites[i].writer, NULL, "/");

		if (ret == 0)
			ret = r;
	}
	return ret;
}

bool sites_writeback(struct fs *fs)
{
	return writer_writeback(fs->sites[0].writer);
}
