// SPDX-License-Identifier: GPL-2.0-or-later
/* The mount: fs_main() with its set-up and teardown, init and destroy, the
 * idle reaper, FUSE's operations table, and the callbacks about a path's
 * attributes (getattr, readlink, statfs), the mount's root and its status file
 * among them. */
#include "config.h"

/* FUSE_USE_VERSION (config.h) first; fs_int.h uses the FUSE types */
#include <fuse.h>

#include "fs.h"
#include "fs_int.h"
#include "agent.h"
#include "cache.h"
#include "ctr.h"
#include "dfree.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "reader.h"
#include "spool.h"
#include "writer.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* seconds a container's shell for the tools stays when unused */
#define AGENT_IDLE 10.0

static void root_stat(struct fs *fs, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFDIR | 0555;
	st->st_ino = 1;
	st->st_nlink = 2;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = st->st_mtim = st->st_ctim = fs->mounted;
}

/* A symlink's size is the length of what readlink gives through the
 * mount, which pathmap_link() rewrites from raw (longer or shorter than
 * it): tools size their readlink buffer by it (GNU cpio cuts the target
 * there). */
void link_size(const char *inner, const char *raw, struct stat *st)
{
	char buf[PATH_MAX];

	if (pathmap_link(inner, raw, buf, sizeof(buf)) == 0)
		st->st_size = (off_t)strlen(buf);
}

/* Attributes of a path: an open file being written says them itself. */
int stat_path(struct fs *fs, struct ctr *c, const char *inner, struct stat *st)
{
	struct wfile *w = writer_find(SITE(c)->writer, c->id, inner);

	if (w) {
		wfile_stat(w, st);
		wfile_put(w);
		return 0;
	}
	/* below a directory that is pending and new: nothing else there */
	if (writer_absent(SITE(c)->writer, c->id, inner))
		return -ENOENT;
	return meta_getattr(SITE(c)->meta, c, inner, st, NULL, 0);
}

/* A symlink's raw target: a pending one's, else the cache's or the
 * engine's (with its attributes in st). */
static int raw_link(struct fs *fs, struct ctr *c, const char *inner,
		    struct stat *st, char *raw, size_t len)
{
	struct wfile *w = writer_find(SITE(c)->writer, c->id, inner);
	int ret;

	if (!w)
		return meta_getattr(SITE(c)->meta, c, inner, st, raw, len);
	ret = wfile_readlink(w, raw, len);
	if (ret == 0)
		wfile_stat(w, st);
	wfile_put(w);
	return ret;
}

/* Whether inner is a pending entry (its times are put after the files
 * pending below it: nothing to settle for a look at it). */
static bool pending_entry(struct fs *fs, struct ctr *c, const char *inner)
{
	struct wfile *w = writer_find(SITE(c)->writer, c->id, inner);
	bool entry = w && wfile_is_entry(w);

	if (w)
		wfile_put(w);
	return entry;
}

static int ctrfs_getattr(const char *path, struct stat *st,
			 struct fuse_file_info *fi)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct ctr *c;
	int ret;

	if (strcmp(path, STATUS_PATH) == 0) {
		root_stat(fs, st);
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_ino = 2;
		st->st_size = 0; /* read with direct I/O: no size needed */
		return 0;
	}
	ret = resolve(fs, path, &c, &inner);
	if (ret < 0)
		return ret;
	if (!c) {
		root_stat(fs, st);
		st->st_ino = sites_ino(fs, path);
		return 0;
	}
	ret = stat_path(fs, c, inner, st);
	/* write-back: a directory's mtime as its pending entries leave it
	 * (rsync -a checks the times it set once its files are in) */
	if (ret == 0 && S_ISDIR(st->st_mode) && !pending_entry(fs, c, inner) &&
	    writer_settle(SITE(c)->writer, c->id, inner, false))
		ret = stat_path(fs, c, inner, st);
	if (ret == 0 && S_ISLNK(st->st_mode)) {
		char raw[PATH_MAX];

		/* its target too (known with it, unless it was listed by
		 * exec: then a GET, which the readlink to come saves) */
		ret = raw_link(fs, c, inner, st, raw, sizeof(raw));
		if (ret == 0)
			link_size(inner, raw, st);
	}
	if (ret == 0 && !st->st_ino) /* not kept in the cache */
		st->st_ino = cache_new_ino();
	ctr_put(SITE(c)->ctrs, c);
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
	ret = raw_link(fs, c, inner, &st, raw, sizeof(raw));
	if (ret == 0)
		ret = pathmap_link(inner, raw, buf, size);
	ctr_put(SITE(c)->ctrs, c);
	return ret;
}

static int ctrfs_statfs(const char *path, struct statvfs *sv)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct ctr *c;

	/* the mount's root, or a container that cannot say: unknown (0) */
	memset(sv, 0, sizeof(*sv));
	sv->f_bsize = 4096;
	sv->f_frsize = 4096;
	sv->f_namemax = 255;
	if (resolve(fs, path, &c, &inner) < 0 || !c)
		return 0;
	dfree_get(SITE(c)->e, c, inner, sv);
	ctr_put(SITE(c)->ctrs, c);
	return 0;
}

static void *reaper_main(void *arg)
{
	struct fs *fs = arg;

	pthread_mutex_lock(&fs->stop_lock);
	while (!fs->stopping) {
		struct timespec ts;

		time_after(0.25, &ts);
		pthread_cond_timedwait(&fs->stop_cond, &fs->stop_lock, &ts);
		pthread_mutex_unlock(&fs->stop_lock);
		reader_reap(fs->cfg.idle_close);
		agent_reap(AGENT_IDLE);
		pthread_mutex_lock(&fs->stop_lock);
	}
	pthread_mutex_unlock(&fs->stop_lock);
	return NULL;
}

/*
 * Whether the thread behind this thread's request is being killed. The
 * kernel waits for our answer to a request we have taken even then (its
 * readahead is synchronous, see ctrfs_init), so a GET stalled on the
 * engine would keep a killed `cp` alive until the engine answers or the
 * timeout passes. An interrupt alone is not enough: a handled signal
 * interrupts too, and a read of a regular file must not fail with EINTR
 * for it. A fatal signal (SIGKILL, or one that terminates by default and
 * is not handled) leaves SIGKILL pending on every thread of the process;
 * one that dumps core does not, and such a reader waits as before.
 */
static bool caller_dying(void)
{
	struct fuse_context *cx = fuse_get_context();
	unsigned long long mask;
	char path[64], line[256];
	bool dying = false;
	FILE *f;

	/* no request (pid 0: libfuse clears the context at unmount, when
	 * fuse_interrupted() would follow a NULL request) */
	if (!cx || cx->pid <= 0 || !fuse_interrupted())
		return false;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)cx->pid);
	f = fopen(path, "re");
	if (!f)
		return false; /* another pid namespace, or /proc hidden */
	while (!dying && fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & (1ULL << (SIGKILL - 1))))
			dying = true;
	fclose(f);
	if (dying)
		log_dbg("the process %d of an interrupted request is being "
			"killed: its GET ends",
			(int)cx->pid);
	return dying;
}

static void *ctrfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	struct fs *fs = fuse_get_context()->private_data;

	/* 1 MiB writes: a quarter of the requests, and of their cost,
	 * when a big file is copied in */
	if (conn->max_write < 1024 * 1024)
		conn->max_write = 1024 * 1024;
	/* readdirplus on every page of a listing, not only the first: the
	 * attributes come from the cache, free, and spare a LOOKUP each */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* readahead from the reading task itself, one request after the
	 * other: a file's transfer is one forward stream, and async readahead
	 * let libfuse's threads overtake each other by more than the reader's
	 * history holds, each time restarting the GET from byte 0 (with
	 * read_ahead_kb raised to 1 MiB, 1 GiB took 40 GETs and 37 s); the
	 * same for an O_DIRECT read, which the kernel otherwise splits into
	 * 1 MiB requests all sent at once */
	conn->want &= ~(FUSE_CAP_ASYNC_READ | FUSE_CAP_ASYNC_DIO);
	cfg->entry_timeout = fs->cfg.attr_timeout;
	cfg->attr_timeout = fs->cfg.attr_timeout;
	cfg->negative_timeout = 0;
	cfg->kernel_cache = 0;
	cfg->nullpath_ok = 0;
	cfg->use_ino = 1; /* the cache's numbers: one per hard-linked file */
	/* threads start here, after fuse_daemonize() forked */
	if (pthread_create(&fs->reaper, NULL, reaper_main, fs) == 0)
		fs->reaper_started = true;
	else
		log_err("cannot start the idle-transfer reaper");
	sites_start(fs);
	return fs;
}

static void ctrfs_destroy(void *data)
{
	struct fs *fs = data;

	pthread_mutex_lock(&fs->stop_lock);
	fs->stopping = true;
	pthread_cond_broadcast(&fs->stop_cond); /* the reaper, the waiters */
	pthread_mutex_unlock(&fs->stop_lock);
	if (fs->reaper_started)
		pthread_join(fs->reaper, NULL);
	fs->reaper_started = false;
	sites_stop(fs);
}

static const struct fuse_operations ctrfs_ops = {
    .init = ctrfs_init,
    .destroy = ctrfs_destroy,
    .getattr = ctrfs_getattr,
    .readlink = ctrfs_readlink,
    .opendir = ctrfs_opendir,
    .readdir = ctrfs_readdir,
    .releasedir = ctrfs_releasedir,
    .open = ctrfs_open,
    .create = ctrfs_create,
    .read = ctrfs_read,
    .write = ctrfs_write,
    .flush = ctrfs_flush,
    .fsync = ctrfs_fsync,
    .fsyncdir = ctrfs_fsyncdir,
    .release = ctrfs_release,
    .truncate = ctrfs_truncate,
    .chmod = ctrfs_chmod,
    .chown = ctrfs_chown,
    .utimens = ctrfs_utimens,
    .getxattr = ctrfs_getxattr,
    .listxattr = ctrfs_listxattr,
    .setxattr = ctrfs_setxattr,
    .removexattr = ctrfs_removexattr,
    .mkdir = ctrfs_mkdir,
    .mknod = ctrfs_mknod,
    .symlink = ctrfs_symlink,
    .link = ctrfs_link,
    .unlink = ctrfs_unlink,
    .rmdir = ctrfs_rmdir,
    .rename = ctrfs_rename,
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
	sites_free(fs);
	agent_free_all();
	fs_xattr_free();
	pthread_mutex_destroy(&fs->stop_lock);
	pthread_cond_destroy(&fs->stop_cond);
}

int fs_main(int argc, char **argv, const char *mountpoint, bool foreground,
	    bool debug, bool single_thread, unsigned max_idle_threads,
	    const struct fs_engine *engines, size_t n,
	    const struct fs_config *cfg)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_loop_config *lc = NULL;
	struct fs fs = {.cfg = *cfg};
	struct fuse *f;
	int ret = 3;

	fs.uid = getuid();
	fs.gid = getgid();
	clock_gettime(CLOCK_REALTIME, &fs.mounted);
	pthread_mutex_init(&fs.stop_lock, NULL);
	pthread_cond_init(&fs.stop_cond, NULL);
	if (sites_new(&fs, engines, n) < 0)
		goto out_teardown;
	for (size_t i = 0; i < n; i++) {
		engine_set_preempt(engines[i].e, reader_preempt);
		engine_set_abandoned(engines[i].e, caller_dying);
	}

	f = fuse_new(&args, &ctrfs_ops, sizeof(ctrfs_ops), &fs);
	if (!f) {
		ret = 1; /* options FUSE does not know: a usage error */
		goto out_teardown;
	}
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
