// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * One entry asked of the engine: a HEAD merged into the cache
 * (meta_revalidate()), the first tar header of a GET for what a HEAD does
 * not say, an owner or a link's raw target (meta_probe()), and what a tar
 * entry says of a path (meta_learn()). meta.c's rules and meta_walk.c's
 * thread call them; they call nothing of either.
 */
#include "meta.h"
#include "meta_int.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "errmap.h"
#include "loader.h"
#include "log.h"
#include "pathmap.h"
#include "pathstat.h"
#include "tarstream.h"
#include "xattrs.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* A file whose owner was asked for: up to this size its content, which
 * the GET brings with the header, is read and kept as well. Measured on
 * both engines (docs/performance-notes.md, 2026-12-07): a `cat` after
 * the probe saved 48 ms a file on 20.10 and 1 ms on 26, where a `stat`
 * alone of a 1 MiB file lost 7 and 3 ms; a read is what usually follows
 * (`cp`, `cat` of one path), so it stays 1 MiB on both. */
#define PROBE_FILE ((off_t)1 << 20)

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
	if (S_ISREG(a.st.st_mode))
		xattrs_put(m->xa, c->id, path, &a.st, te->xattrs,
			   te->xattrs_len);
}

/* Learns the full header of path (owner, raw link target) from the first
 * tar entry of s, a GET of it begun at engine second snapshot, then aborts
 * the transfer (s freed); a small file's content, which comes with it, is
 * kept. */
static int probe_stream(struct meta *m, struct ctr *c, const char *path,
			struct engine_stream *s, long snapshot)
{
	struct tarstream *t;
	struct tar_entry te;
	int ret = tarstream_open(stream_source, s, &t);

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
		loader_keep_probed(m, c, path, t, te.st.st_size, snapshot);
	if (ret == 1)
		ret = -EIO;
	tarstream_free(t);
out_stream:
	engine_stream_free(s);
	return ret;
}

int meta_probe(struct meta *m, struct ctr *c, const char *path)
{
	struct engine_stream *s;
	long snapshot = engine_now(m->e);
	char msg[512];
	int ret = engine_archive_get(m->e, c->id, path, &s, msg, sizeof(msg));

	if (ret < 0) {
		if (ret != -ENOENT && ret != -ELOOP) /* loop_link() goes on */
			log_fail(c, "stat", path, msg);
		return ret;
	}
	return probe_stream(m, c, path, s, snapshot);
}

/* A HEAD refused has no body to say why: a GET of the path does. The
 * reason that matters is a symlink loop (-ELOOP): the engine resolves a
 * link's target for the stat header of either call, and a link in a loop
 * has none. When the GET works, the first header of another answers the
 * stat. Docker 20.10 refuses both (500, no reason) for a path that its
 * host's own path to the container's root takes past PATH_MAX: the GET of
 * its directory, a shorter path, has its header then. */
static int head_refused(struct meta *m, struct ctr *c, const char *path)
{
	struct engine_stream *s;
	struct cache_attr a;
	char msg[512], parent[PATH_MAX];
	double asked = now_mono();
	long snapshot = engine_now(m->e);
	int ret = engine_archive_get(m->e, c->id, path, &s, msg, sizeof(msg));

	if (ret == 0) /* the GET works: its first header answers */
		return probe_stream(m, c, path, s, snapshot);
	if (ret == -ENOENT || ret == -ELOOP)
		return ret;
	if (pathmap_parent(path, parent, sizeof(parent)) == 0 &&
	    strcmp(parent, path) != 0 &&
	    loader_tree(m, c, parent, PROBE_TREE, true, NULL) == 0 &&
	    cache_get(m->c, c->id, path, &a, NULL, 0) == 0 &&
	    a.validated >= asked) {
		log_dbg("'%s' in '%s': the engine refused a HEAD and a GET of "
			"it; the GET of its directory answered",
			path, c->name);
		return 0;
	}
	log_fail(c, "stat", path, msg);
	return ret;
}

/* Podman answers a HEAD of a symlink whose target is missing with 404,
 * and with the link's own stat header all the same: the link is there. */
static bool dangling_link(struct meta *m, const struct engine_reply *r)
{
	struct pathstat ps;

	return engine_quirks(m->e)->head_dangling_404 && r->stat[0] &&
	       pathstat_decode(r->stat, &ps) == 0 && S_ISLNK(ps.mode);
}

/* Asks the engine (HEAD) and merges the answer into the cache. */
int meta_revalidate(struct meta *m, struct ctr *c, const char *path,
		    const struct cache_attr *old, bool have_old)
{
	struct engine_reply r;
	struct cache_attr a = {0};
	struct pathstat ps;
	char msg[512];
	/* the answer is as of the question: one that a change of ours
	 * overtook is not kept as confirmed (cache_dir_changed()) */
	double asked = now_mono();
	int ret;

	ret = engine_archive_head(m->e, c->id, path, &r);
	if (ret == -EOPNOTSUPP) {
		log_fail(c, "stat", path, ENGINE_PATTERN_MSG);
		return ret;
	}
	if (ret < 0) {
		log_fail(c, "stat", path, "engine not reachable");
		return -EIO;
	}
	ret = errmap_http(r.status, NULL, 0);
	if (ret == -ENOENT && dangling_link(m, &r))
		ret = 0;
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
	a.validated = asked;
	/* the same: the attributes stay as they are (a tar's whole second
	 * does not turn into this answer's nanoseconds and back), and a
	 * file's content held here stays only if it holds for this answer
	 * (a whole second and the same size also fit content changed within
	 * that second). Nanoseconds held that differ say it changed. */
	if (have_old && same_head(m, &old->st, &a.st) &&
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
