// SPDX-License-Identifier: GPL-2.0-or-later
/* Directories being listed: opendir, readdir (with readdirplus's
 * attributes when they are at hand) and releasedir. */
#include "config.h"

/* FUSE_USE_VERSION (config.h) first; fs_int.h uses the FUSE types */
#include <fuse.h>

#include "fs_int.h"
#include "cache.h"
#include "ctr.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "writer.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An open directory of a container: the names its first readdir took,
 * in order, which the following ones (the kernel asks a page at a time) go
 * on with, so that a change in between neither repeats nor skips a name. */
struct dirh {
	struct cache_listing l;
	bool have;
	char ctr_id[sizeof(((struct ctr *)0)->id)]; /* whose listing */
};

/*
 * The attributes that may go to the kernel with a listed name
 * (readdirplus), which then asks nothing more about it for attr_timeout:
 * only what getattr would serve now without a call, read now (not from the
 * listing's copy, which a commit, chmod or unlink since may have
 * outdated), and in getattr's order: a file being written has the
 * writer's size, so it goes without. So do directories (write-back
 * settles them first in getattr) and entries past the TTL.
 */
static bool plus_attr(struct fs *fs, struct ctr *c, const char *dir,
		      const struct cache_listent *e, struct stat *st)
{
	char path[PATH_MAX], raw[PATH_MAX];
	struct cache_attr a;
	struct wfile *w;

	if (S_ISDIR(e->st.st_mode) ||
	    pathmap_child(dir, e->name, path, sizeof(path)) < 0)
		return false;
	w = writer_find(SITE(c)->writer, c->id, path);
	if (w) {
		wfile_put(w);
		return false;
	}
	if (cache_get(SITE(c)->cache, c->id, path, &a, raw, sizeof(raw)) < 0 ||
	    (a.st.st_mode & S_IFMT) != (e->st.st_mode & S_IFMT) ||
	    !(a.flags & CACHE_OWNER) ||
	    now_mono() - a.validated >= fs->cfg.attr_timeout)
		return false;
	/* a link's size is that of its target as readlink gives it */
	if (S_ISLNK(a.st.st_mode) && !(a.flags & CACHE_LINK))
		return false;
	if (S_ISLNK(a.st.st_mode))
		link_size(path, raw, &a.st);
	*st = a.st;
	return true;
}

/*
 * Entries carry offsets ("." 1, ".." 2, the listing's i-th name i + 3):
 * libfuse hands the kernel a readdirplus entry's attributes only in that
 * mode, and without them `ls -la` or `cp -r` made one LOOKUP per name.
 */
int ctrfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		  off_t offset, struct fuse_file_info *fi,
		  enum fuse_readdir_flags flags)
{
	struct fs *fs = fs_get();
	struct dirh *dh = (struct dirh *)(uintptr_t)fi->fh;
	const char *inner;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	if (!c) {
		filler(buf, ".", NULL, 0, 0);
		filler(buf, "..", NULL, 0, 0);
		return sites_fill(fs, path, buf, filler);
	}
	if (!dh) {
		ctr_put(SITE(c)->ctrs, c);
		return -EIO;
	}
	/* a first read, a rewind, or a container of that name made anew */
	if (offset == 0 || !dh->have || strcmp(dh->ctr_id, c->id) != 0) {
		if (dh->have)
			cache_listing_free(&dh->l);
		dh->have = false;
		/* a pending new directory: what is pending in it */
		ret = writer_listing(SITE(c)->writer, c->id, inner, &dh->l);
		if (ret == 0)
			ret = meta_listing(SITE(c)->meta, c, inner, &dh->l);
		if (ret < 0) {
			ctr_put(SITE(c)->ctrs, c);
			return ret;
		}
		dh->have = true;
		snprintf(dh->ctr_id, sizeof(dh->ctr_id), "%s", c->id);
	}
	if (offset < 1 && filler(buf, ".", NULL, 1, 0))
		goto out;
	if (offset < 2 && filler(buf, "..", NULL, 2, 0))
		goto out;
	for (size_t i = offset > 2 ? (size_t)(offset - 2) : 0; i < dh->l.n;
	     i++) {
		const struct cache_listent *e = &dh->l.ents[i];
		struct stat st;
		bool plus = (flags & FUSE_READDIR_PLUS) &&
			    plus_attr(fs, c, inner, e, &st);

		if (filler(buf, e->name, plus ? &st : &e->st, (off_t)(i + 3),
			   plus ? FUSE_FILL_DIR_PLUS : 0))
			break;
	}
out:
	ctr_put(SITE(c)->ctrs, c);
	return 0;
}

int ctrfs_opendir(const char *path, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct stat st;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	fi->fh = 0;
	if (ret < 0 || !c)
		return ret;
	ret = stat_path(fs, c, inner, &st); /* a pending one too */
	ctr_put(SITE(c)->ctrs, c);
	if (ret == 0 && !S_ISDIR(st.st_mode))
		ret = -ENOTDIR;
	if (ret == 0) {
		struct dirh *dh = calloc(1, sizeof(*dh));

		if (!dh)
			return -ENOMEM;
		fi->fh = (uint64_t)(uintptr_t)dh;
	}
	return ret;
}

int ctrfs_releasedir(const char *path, struct fuse_file_info *fi)
{
	struct dirh *dh = (struct dirh *)(uintptr_t)fi->fh;

	if (dh) {
		if (dh->have)
			cache_listing_free(&dh->l);
		free(dh);
	}
	return 0;
}
