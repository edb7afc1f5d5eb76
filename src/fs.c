// SPDX-License-Identifier: GPL-2.0-or-later
#include "config.h"

#include "fs.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX_ENTRIES 100000

struct fs {
	struct engine *e;
	struct cache *cache;
	struct meta *meta;
	struct ctr_table *ctrs;
	struct fs_config cfg;
	struct timespec mounted;
	uid_t uid;
	gid_t gid;
	pthread_t reaper;
	bool reaper_started;
	bool stopping;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
};

static struct fs *fs_get(void)
{
	return fuse_get_context()->private_data;
}

static void on_ctr_gone(void *ctx, const char *id)
{
	struct fs *fs = ctx;

	cache_drop_ns(fs->cache, id);
}

/*
 * Resolves a mount path: *c gets a container reference (NULL for the
 * mount root) and *inner the path inside it. Paths on a tmpfs of the
 * container are refused here, once for every operation.
 */
static int resolve(struct fs *fs, const char *path, struct ctr **c,
		   const char **inner)
{
	char name[256];
	int ret = pathmap_split(path, name, sizeof(name), inner);

	*c = NULL;
	if (ret < 0)
		return ret;
	if (!*inner)
		return 0;
	ret = ctr_lookup(fs->ctrs, name, c);
	if (ret < 0)
		return ret;
	ret = ctr_check_path(fs->ctrs, *c, *inner);
	if (ret < 0) {
		ctr_put(fs->ctrs, *c);
		*c = NULL;
	}
	return ret;
}

static void root_stat(struct fs *fs, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFDIR | 0555;
	st->st_nlink = 2;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mounted;
}

static int ctrfs_getattr(const char *path, struct stat *st,
			 struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	if (!c) {
		root_stat(fs, st);
		return 0;
	}
	ret = meta_getattr(fs->meta, c, inner, st, NULL, 0);
	ctr_put(fs->ctrs, c);
	return ret;
}

static int ctrfs_readlink(const char *path, char *buf, size_t size)
{
	struct fs *fs = fs_get();
	char raw[PATH_MAX];
	const char *inner;
	struct stat st;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	if (!c)
		return -EINVAL;
	ret = meta_getattr(fs->meta, c, inner, &st, raw, sizeof(raw));
	if (ret == 0)
		ret = pathmap_link(inner, raw, buf, size);
	ctr_put(fs->ctrs, c);
	return ret;
}

static int fill_root(struct fs *fs, void *buf, fuse_fill_dir_t filler)
{
	char *names, *p;
	size_t n;
	int ret = ctr_names(fs->ctrs, &names, &n);

	if (ret < 0)
		return ret;
	p = names;
	for (size_t i = 0; i < n; i++, p += strlen(p) + 1)
		if (filler(buf, p, NULL, 0, 0))
			break;
	free(names);
	return 0;
}

static int ctrfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
			 off_t offset, struct fuse_file_info *fi,
			 enum fuse_readdir_flags flags)
{
	struct fs *fs = fs_get();
	struct cache_listing l;
	const char *inner;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	filler(buf, ".", NULL, 0, 0);
	filler(buf, "..", NULL, 0, 0);
	if (!c)
		return fill_root(fs, buf, filler);
	ret = meta_listing(fs->meta, c, inner, &l);
	ctr_put(fs->ctrs, c);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < l.n; i++)
		if (filler(buf, l.ents[i].name, &l.ents[i].st, 0,
			   FUSE_FILL_DIR_PLUS))
			break;
	cache_listing_free(&l);
	return 0;
}

static int ctrfs_opendir(const char *path, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct stat st;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0 || !c)
		return ret;
	ret = meta_getattr(fs->meta, c, inner, &st, NULL, 0);
	ctr_put(fs->ctrs, c);
	if (ret == 0 && !S_ISDIR(st.st_mode))
		ret = -ENOTDIR;
	return ret;
}

static int ctrfs_open(const char *path, struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	struct reader *r;
	const char *inner;
	struct stat st;
	struct ctr *c;
	int ret;

	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EROFS;
	ret = resolve(fs, path, &c, &inner);
	if (ret < 0)
		return ret;
	if (!c)
		return -EISDIR;
	ret = meta_getattr(fs->meta, c, inner, &st, NULL, 0);
	if (ret == 0 && S_ISDIR(st.st_mode))
		ret = -EISDIR;
	else if (ret == 0 && !S_ISREG(st.st_mode))
		ret = -EOPNOTSUPP; /* devices, fifos: no content to stream */
	if (ret == 0)
		ret = reader_new(fs->e, fs->meta, c, inner, &r);
	ctr_put(fs->ctrs, c);
	if (ret < 0)
		return ret;
	fi->fh = (uint64_t)(uintptr_t)r;
	return 0;
}

static int ctrfs_read(const char *path, char *buf, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct reader *r = (struct reader *)(uintptr_t)fi->fh;

	return (int)reader_read(r, buf, size, off);
}

static int ctrfs_release(const char *path, struct fuse_file_info *fi)
{
	reader_free((struct reader *)(uintptr_t)fi->fh);
	return 0;
}

static int ctrfs_statfs(const char *path, struct statvfs *sv)
{
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_namemax = 255;
	return 0;
}

static void *reaper_main(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->stop_lock);
	while (!fs->stopping) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 250 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&fs->stop_cond, &fs->stop_lock, &ts);
		pthread_mutex_unlock(&fs->stop_lock);
		reader_reap(fs->cfg.idle_close);
		pthread_mutex_lock(&fs->stop_lock);
	}
	pthread_mutex_unlock(&fs->stop_lock);
	return NULL;
}

static void *ctrfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct fs *fs = fuse_get_context()->private_data;

	cfg->entry_timeout = fs->cfg.attr_timeout;
	cfg->attr_timeout = fs->cfg.attr_timeout;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->nullpath_ok = 0;
	if (pthread_create(&fs->reaper, NULL, reaper_main, fs) == 0)
		fs->reaper_started = true;
	else
		log_err("cannot start the idle-transfer reaper");
	return fs;
}

static void ctrfs_destroy(void *data)
{
	struct fs *fs = data;

	pthread_mutex_lock(&fs->stop_lock);
	fs->stopping = true;
	pthread_cond_signal(&fs->stop_cond);
	pthread_mutex_unlock(&fs->stop_lock);
	if (fs->reaper_started)
		pthread_join(fs->reaper, NULL);
	fs->reaper_started = false;
}

static const struct fuse_operations ctrfs_ops = {
    .init = ctrfs_init,
    .destroy = ctrfs_destroy,
    .getattr = ctrfs_getattr,
    .readlink = ctrfs_readlink,
    .opendir = ctrfs_opendir,
    .readdir = ctrfs_readdir,
    .open = ctrfs_open,
    .read = ctrfs_read,
    .release = ctrfs_release,
    .statfs = ctrfs_statfs,
};

void fs_lib_help(void)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);

	fuse_opt_add_arg(&args, "ctrfs");
	fuse_lib_help(&args);
	fuse_opt_free_args(&args);
}

static void fs_teardown(struct fs *fs)
{
	ctr_table_free(fs->ctrs);
	meta_free(fs->meta);
	cache_free(fs->cache);
	pthread_mutex_destroy(&fs->stop_lock);
	pthread_cond_destroy(&fs->stop_cond);
}

int fs_main(int argc, char **argv, const char *mountpoint, bool foreground,
	    bool debug, bool single_thread, unsigned max_idle_threads,
	    struct engine *e, const struct fs_config *cfg)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_loop_config *lc = NULL;
	struct fs fs = {.e = e, .cfg = *cfg};
	struct fuse *f;
	int ret = 3;

	fs.uid = getuid();
	fs.gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs.mounted);
	pthread_mutex_init(&fs.stop_lock, NULL);
	pthread_cond_init(&fs.stop_cond, NULL);
	fs.cache = cache_new(CACHE_MAX_ENTRIES);
	fs.meta =
	    fs.cache ? meta_new(e, fs.cache, cfg->attr_timeout, reader_ctr_busy)
		     : NULL;
	fs.ctrs =
	    ctr_table_new(e, cfg->all, cfg->attr_timeout / 2, on_ctr_gone, &fs);
	if (!fs.cache || !fs.meta || !fs.ctrs)
		goto out_teardown;

	f = fuse_new(&args, &ctrfs_ops, sizeof(ctrfs_ops), &fs);
	if (!f)
		goto out_teardown;
	if (fuse_mount(f, mountpoint) != 0)
		goto out_destroy;
	if (fuse_set_signal_handlers(fuse_get_session(f)) != 0)
		goto out_unmount;
	if (fuse_daemonize(foreground) != 0)
		goto out_signals;
	log_init(foreground, debug);
	if (single_thread) {
		ret = fuse_loop(f) ? 1 : 0;
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc)
			goto out_signals;
		fuse_loop_cfg_set_max_threads(lc, 32);
		if (max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(lc, max_idle_threads);
		ret = fuse_loop_mt(f, lc) ? 1 : 0;
		fuse_loop_cfg_destroy(lc);
	}
out_signals:
	fuse_remove_signal_handlers(fuse_get_session(f));
out_unmount:
	fuse_unmount(f);
out_destroy:
	fuse_destroy(f);
out_teardown:
	fs_teardown(&fs);
	fuse_opt_free_args(&args);
	return ret;
}
