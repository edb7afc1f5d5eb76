// SPDX-License-Identifier: GPL-2.0-or-later
#include "loader.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta_int.h"
#include "pathmap.h"
#include "spool.h"
#include "tarstream.h"
#include "xattrs.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Files up to this size have their content kept from a listing's tar. */
#define PREFETCH_MAX ((off_t)64 << 20)
/* The size of the spool file the contents probes keep share before another
 * is begun */
#define PROBE_BLOB ((off_t)32 << 20)
/* A full listing stops before a file of LIST_BIG_FILE or more that would
 * take its tar past what an exec costs here in streamed bytes
 * (engine_list_cap(): an exec costs what 20-85 MiB of tar do, 45 ms
 * against 460 MiB/s on one engine, 327 ms against 256 MiB/s in
 * ENGINE.md), and lists the directory by exec instead (execlist_list()):
 * a listing has no use for the data. Until 2026-12-07 the bound was a
 * fixed 256 MiB; `ls -l` of a directory with three 80 MiB files took
 * 0.735 s on Docker 26 and 0.110 s with the bound at 32 MiB
 * (docs/performance-notes.md). */
#define LIST_BIG_FILE PREFETCH_MAX
/* Where a GET of a link gives its target's file (Podman), a link listed by
 * exec has no target to show: such listings stream on to this, the bound
 * before it became a cost. */
#define LIST_BIG_LINKLESS ((off_t)256 << 20)

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
	size_t n, rlen;

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
	/* a directory's name ends in '/': a path of PATH_MAX - 1 bytes
	 * must fit without it */
	rlen = strlen(rel);
	while (rlen > 0 && rel[rlen - 1] == '/')
		rlen--;
	n = (size_t)snprintf(out, outlen, "%s%s%.*s", dir,
			     (rlen && blen) ? "/" : "", (int)rlen, rel);
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
		a.flags = CACHE_OWNER | CACHE_NLINK_COUNTED;
		fill_defaults(&a.st);
		cache_put(l->m->c, l->c->id, path, &a, NULL);
		return 0;
	}
	a.st.st_nlink++; /* and its number goes with it (Inode numbers) */
	a.flags |= CACHE_NLINK_COUNTED;
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
			      0) == 0) {
			a.flags |= CACHE_NLINK_COUNTED;
			cache_put(l->m->c, l->c->id, l->links[i], &a, NULL);
		}
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

void loader_keep_probed(struct meta *m, struct ctr *c, const char *path,
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
				       .flags =
					   CACHE_OWNER | CACHE_NLINK_COUNTED};

		if (te->symlink)
			a.st.st_size = (off_t)strlen(te->symlink);
		fill_defaults(&a.st);
		if (cache_put(l->m->c, l->c->id, path, &a, te->symlink))
			l->shallow = true;
		if (S_ISREG(a.st.st_mode))
			xattrs_put(l->m->xa, l->c->id, path, &a.st, te->xattrs,
				   te->xattrs_len);
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

int loader_tree(struct meta *m, struct ctr *c, const char *dir, off_t cap,
		bool stop_big, bool *whole)
{
	struct loader l = {.m = m, .c = c, .dir = dir, .defer = cap > 0};
	struct engine_stream *s;
	struct tarstream *t;
	struct tar_entry te;
	size_t entries = 0;
	double t0 = now_mono();
	off_t big_total = engine_list_cap(m->e);
	char msg[512];
	int ret;

	if (engine_quirks(m->e)->get_follows_links &&
	    big_total < LIST_BIG_LINKLESS)
		big_total = LIST_BIG_LINKLESS;
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
			   te.st.st_size >= LIST_BIG_FILE && upto > big_total;

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
