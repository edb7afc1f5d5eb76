// SPDX-License-Identifier: GPL-2.0-or-later
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
#include "tarstream.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CACHE_MAX_ENTRIES 100000
/* seconds a container's shell for the tools stays when unused */
#define AGENT_IDLE 10.0
/* bytes of file content kept (in the spool) from listings */
#define CACHE_DATA_BUDGET ((off_t)1 << 30)

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
int resolve(struct fs *fs, const char *path, struct ctr **c, const char **inner)
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
	struct wfile *w = writer_find(fs->writer, c->id, inner);

	if (w) {
		wfile_stat(w, st);
		wfile_put(w);
		return 0;
	}
	return meta_getattr(fs->meta, c, inner, st, NULL, 0);
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
		return 0;
	}
	ret = stat_path(fs, c, inner, st);
	/* write-back: a directory's mtime as its pending entries leave it
	 * (rsync -a checks the times it set once its files are in) */
	if (ret == 0 && S_ISDIR(st->st_mode) &&
	    writer_settle(fs->writer, c->id, inner, false))
		ret = stat_path(fs, c, inner, st);
	if (ret == 0 && S_ISLNK(st->st_mode)) {
		char raw[PATH_MAX];

		/* its target too (known with it, unless it was listed by
		 * exec: then a GET, which the readlink to come saves) */
		ret = meta_getattr(fs->meta, c, inner, st, raw, sizeof(raw));
		if (ret == 0)
			link_size(inner, raw, st);
	}
	if (ret == 0 && !st->st_ino) /* not kept in the cache */
		st->st_ino = cache_new_ino();
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

/* The file being written that a change applies to, referenced, or NULL:
 * the handle's own (even if its name is gone), else the one open by path. */
static struct wfile *open_wfile(struct fs *fs, struct ctr *c, const char *inner,
				struct fuse_file_info *fi)
{
	struct handle *h = fi ? handle_of(fi) : NULL;
	int err;
	struct wfile *w = h ? handle_wfile(h, NULL, false, &err) : NULL;

	if (w)
		return wfile_get(w);
	return writer_find(fs->writer, c->id, inner);
}

static const char *base_of(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* Creates one data-less entry at inner with one PUT to its directory. */
static int put_entry(struct fs *fs, struct ctr *c, const char *inner,
		     const struct stat *st, const char *symlink)
{
	char parent[PATH_MAX];
	struct tar_entry te = {
	    .name = base_of(inner), .st = *st, .symlink = symlink};
	long t0 = engine_now(fs->e);
	int ret;

	pathmap_parent(inner, parent, sizeof(parent));
	if (symlink) {
		/* the engine refuses a link whose target climbs above the
		 * directory of the PUT: put it at the root by its full path */
		parent[0] = '/';
		parent[1] = '\0';
		te.name = inner + 1;
	}
	ret = writer_put_entry(fs->writer, c, parent, &te);
	if (ret == 0) {
		struct stat cst = *st;

		if (symlink)
			cst.st_size = (off_t)strlen(symlink);
		meta_committed(fs->meta, c, inner, &cst, t0);
	} else {
		/* the engine may have made it before the failure (a reply
		 * lost): the next lookup asks */
		meta_forget(fs->meta, c, inner);
	}
	return ret;
}

/* set while a caller has another way when the tool cannot run */
static __thread bool tool_optional;

/* Runs a standard tool in the container: argv, each word quoted for the
 * container's shell (agent.c), or an exec of its own. */
static int run_tool(struct fs *fs, struct ctr *c, const char *const *argv,
		    const char *path)
{
	char msg[512];
	int status = 0;
	/* a line to the container's shell, else an exec of its own */
	int ret = agent_run(fs->e, c->id, argv, &status, msg, sizeof(msg));

	if (ret == 1)
		ret =
		    engine_exec(fs->e, c->id, argv, &status, msg, sizeof(msg));

	if (ret == -EOPNOTSUPP && tool_optional)
		log_dbg("no '%s' to run in container '%s': another way",
			argv[0], c->name);
	else if (ret == -EOPNOTSUPP && (status == 126 || status == 127))
		log_err("cannot %s '%s' in container '%s': needs '%s' run "
			"inside it, and the container lacks it",
			argv[0], path, c->name, argv[0]);
	else if (ret == -EOPNOTSUPP) /* stopped, paused */
		log_err("cannot %s '%s' in container '%s': needs '%s' run "
			"inside it: %s",
			argv[0], path, c->name, argv[0], msg);
	else if (ret < 0 && ret != -ENOENT && ret != -ENOTEMPTY &&
		 ret != -EEXIST && ret != -EALREADY)
		log_err("cannot %s '%s' in container '%s': %s", argv[0], path,
			c->name, msg[0] ? msg : strerror(-ret));
	return ret;
}

/* A run_tool() to be made under a wfile's lock (writer_rename,
 * wfile_unlink). */
struct tool_call {
	struct fs *fs;
	struct ctr *c;
	const char *const *argv;
	const char *path;
};

static int call_tool(void *arg)
{
	struct tool_call *t = arg;

	return run_tool(t->fs, t->c, t->argv, t->path);
}

/* Resolves path for a change: a container and a path inside it. */
static int resolve_change(struct fs *fs, const char *path, struct ctr **c,
			  const char **inner)
{
	int ret = resolve(fs, path, c, inner);

	if (ret == 0 && !*c)
		ret =
		    -EACCES; /* the mount root: containers are not made here */
	if (ret == 0 && strcmp(*inner, "/") == 0) {
		ctr_put(fs->ctrs, *c);
		*c = NULL;
		ret = -EBUSY; /* a container's root cannot change */
	}
	return ret;
}

/* Makes a data-less entry (a directory, a symlink) owned by the caller. */
static int create_entry(const char *path, mode_t mode, const char *symlink,
			dev_t rdev)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct stat st;
	struct ctr *c;
	int ret = resolve_change(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	caller_stat(&st, mode);
	st.st_rdev = rdev;
	ret = put_entry(fs, c, inner, &st, symlink);
	ctr_put(fs->ctrs, c);
	return ret;
}

int ctrfs_mkdir(const char *path, mode_t mode)
{
	return create_entry(path, S_IFDIR | (mode & 07777), NULL, 0);
}

int ctrfs_symlink(const char *target, const char *path)
{
	return create_entry(path, S_IFLNK | 0777, target, 0);
}

/* FIFOs and devices: a tar entry of their type, which the engine makes
 * with mknod (a device needs the engine's privileges, as a local mknod
 * needs root). A socket has no tar type; a regular file comes by create. */
int ctrfs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	if (!S_ISFIFO(mode) && !S_ISCHR(mode) && !S_ISBLK(mode))
		return -EOPNOTSUPP;
	return create_entry(path, (mode & S_IFMT) | (mode & 07777), NULL,
			    S_ISFIFO(mode) ? 0 : rdev);
}

int ctrfs_link(const char *from, const char *to)
{
	struct fs *fs = fs_get();
	const char *ifrom, *ito;
	struct ctr *c, *c2;
	char dir[PATH_MAX];
	struct tar_entry te;
	struct stat st;
	long t0 = engine_now(fs->e);
	size_t dlen;
	int ret = resolve_change(fs, from, &c, &ifrom);

	if (ret < 0)
		return ret;
	ret = resolve_change(fs, to, &c2, &ito);
	if (ret < 0)
		goto out_put;
	if (c != c2)
		ret = -EXDEV;
	ctr_put(fs->ctrs, c2);
	if (ret == 0)
		ret = stat_path(fs, c, ifrom, &st);
	if (ret == 0 && !S_ISREG(st.st_mode))
		ret = -EPERM;
	if (ret < 0)
		goto out_put;
	/* the engine resolves a hard link's target inside the PUT's dir. It
	 * then chowns the link, which clears a setuid or setgid bit, and
	 * restores the mode only when it finds the target by the entry's
	 * link name from the container's root (Docker 20.10 looks it up
	 * from there, not from the PUT's dir): such a file goes by a PUT at
	 * the root, with both paths in full */
	if (st.st_mode & (S_ISUID | S_ISGID))
		snprintf(dir, sizeof(dir), "/");
	else
		pathmap_common(ifrom, ito, dir, sizeof(dir));
	dlen = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
	memset(&te, 0, sizeof(te));
	te.name = ito + dlen;
	te.hardlink = ifrom + dlen;
	te.st = st;
	ret = writer_put_entry(fs->writer, c, dir, &te);
	if (ret == 0) {
		st.st_nlink++; /* both names: one file (one number), one
				* more link */
		meta_update(fs->meta, c, ifrom, &st);
		meta_committed(fs->meta, c, ito, &st, t0);
		/* the kernel holds the old name's attributes as another
		 * inode (paths, not inodes, here): tell it they moved */
		fuse_invalidate_path(fuse_get_context()->fuse, from);
	} else if (ret < 0) {
		meta_forget(fs->meta, c, ito); /* perhaps made, reply lost */
	}
out_put:
	ctr_put(fs->ctrs, c);
	return ret;
}

static int remove_path(const char *path, const char *tool)
{
	struct fs *fs = fs_get();
	long t0 = engine_now(fs->e);
	const char *inner;
	struct wfile *w;
	struct ctr *c;
	int ret = resolve_change(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	{
		const char *argv[] = {tool, "--", inner, NULL};
		struct tool_call rm = {fs, c, argv, inner};

		/* one never committed has nothing to remove in the container;
		 * a directory holding one is not empty, whatever it shows */
		w = writer_find(fs->writer, c->id, inner);
		if (w)
			ret = wfile_unlink(w, call_tool, &rm);
		else if (strcmp(tool, "rmdir") == 0 &&
			 writer_holds_below(fs->writer, c->id, inner))
			ret = -ENOTEMPTY;
		else
			ret = call_tool(&rm);
	}
	if (w)
		wfile_put(w);
	if (ret == 0 || ret == -ENOENT)
		meta_committed(fs->meta, c, inner, NULL, t0);
	else
		meta_forget(fs->meta, c, inner); /* perhaps removed */
	ctr_put(fs->ctrs, c);
	return ret;
}

int ctrfs_unlink(const char *path)
{
	return remove_path(path, "rm");
}

int ctrfs_rmdir(const char *path)
{
	return remove_path(path, "rmdir");
}

int ctrfs_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs *fs = fs_get();
	long t0 = engine_now(fs->e);
	const char *ifrom, *ito;
	struct ctr *c, *c2;
	struct wfile *w, *t;
	struct stat st;
	int ret;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;
	ret = resolve_change(fs, from, &c, &ifrom);
	if (ret < 0)
		return ret;
	ret = resolve_change(fs, to, &c2, &ito);
	if (ret < 0)
		goto out_put;
	if (c != c2)
		ret = -EXDEV;
	ctr_put(fs->ctrs, c2);
	if (ret == 0 && (flags & RENAME_NOREPLACE)) {
		ret = stat_path(fs, c, ito, &st);
		ret = ret == 0 ? -EEXIST : ret == -ENOENT ? 0 : ret;
	}
	if (ret < 0)
		goto out_put;
	/* a directory's pending files go in under its old name first */
	writer_settle(fs->writer, c->id, ifrom, true);
	w = writer_find(fs->writer, c->id, ifrom);
	t = writer_find(fs->writer, c->id, ito);
	{
		const char *argv[] = {"mv", "-f", "-T", "--", ifrom, ito, NULL};
		struct tool_call mv = {fs, c, argv, ifrom};
		/* for a wfile perhaps not committed yet: the file it will
		 * replace at ito (the kernel just looked it up: cached) */
		bool there = w && !t && stat_path(fs, c, ito, &st) == 0;

		/* one never committed is committed as ito, no mv; one open
		 * at ito is replaced, never committed again; a directory it
		 * replaces must be empty of files still to come too */
		if (w || t)
			ret = writer_rename(fs->writer, w, t, ito, there,
					    call_tool, &mv);
		else if (writer_holds_below(fs->writer, c->id, ito))
			ret = -ENOTEMPTY;
		else
			ret = call_tool(&mv);
		if (ret == -EALREADY && !w && !t) {
			/* two names of one file: rename(2) would leave both,
			 * but the kernel, told 0, takes the old one for gone */
			const char *rmv[] = {"rm", "-f", "--", ifrom, NULL};
			struct tool_call rm = {fs, c, rmv, ifrom};

			ret = call_tool(&rm);
		} else if (ret == -EALREADY) {
			log_err("cannot mv '%s' in container '%s': '%s' is "
				"another name of the same file",
				ifrom, c->name, ito);
			ret = -EIO;
		}
	}
	if (ret < 0) { /* the tool may have run: the next lookups ask */
		meta_forget(fs->meta, c, ifrom);
		meta_forget(fs->meta, c, ito);
	}
	/* a directory: what is open below follows (libfuse's path locks
	 * keep operations on paths below out until the rename returns) */
	if (ret == 0 && !w)
		writer_repath(fs->writer, c->id, ifrom, ito);
	if (t)
		wfile_put(t);
	if (w)
		wfile_put(w);
	if (ret == 0 && w) {
		/* the wfile is the truth of ito now */
		meta_committed(fs->meta, c, ifrom, NULL, t0);
		meta_appeared(fs->meta, c, ito, t0);
	} else if (ret == 0) {
		meta_moved(fs->meta, c, ifrom, ito, t0);
	}
out_put:
	ctr_put(fs->ctrs, c);
	return ret;
}

/* Re-applies a directory's mode, owner and mtime with a PUT of its entry
 * (the engine merges an existing directory and takes the entry's). */
static int put_dir_attrs(struct fs *fs, struct ctr *c, const char *inner,
			 const struct stat *st)
{
	char parent[PATH_MAX];
	struct tar_entry te = {.name = base_of(inner), .st = *st};

	pathmap_parent(inner, parent, sizeof(parent));
	return writer_put_entry(fs->writer, c, parent, &te);
}

/* A metadata change: folded into an open file, a PUT for a directory, a
 * tool in the container otherwise. */
static int apply_utimens(struct fs *fs, struct ctr *c, const char *inner,
			 struct wfile *w, struct stat *st, void *arg);

/* A file's times where no `touch` runs (a shell-less container): the file
 * is copied in and put back with them, a GET and a PUT of all of it, which
 * is what `touch` cost everywhere before write-only opens were deferred. */
static int utimens_by_copy(struct fs *fs, struct ctr *c, const char *inner,
			   void *tv)
{
	struct wfile *w;
	struct stat st;
	int ret = meta_getattr(fs->meta, c, inner, &st, NULL, 0);

	if (ret < 0)
		return ret;
	if (!S_ISREG(st.st_mode)) {
		log_err("cannot set the times of '%s' in container '%s': needs "
			"'touch' run inside it",
			inner, c->name);
		return -EOPNOTSUPP;
	}
	log_dbg("'%s' in container '%s': times set with a copy (no 'touch')",
		inner, c->name);
	ret = writer_open(fs->writer, c, inner, O_WRONLY, &st, NULL, &w);
	if (ret < 0)
		return ret;
	ret = apply_utimens(fs, c, inner, w, NULL, tv);
	if (ret == 0)
		ret = wfile_commit(w);
	wfile_put(w);
	return ret;
}

static int change_attr(const char *path, struct fuse_file_info *fi,
		       int (*apply)(struct fs *, struct ctr *, const char *,
				    struct wfile *, struct stat *, void *),
		       void *arg)
{
	struct fs *fs = fs_get();
	struct handle *h = fi ? handle_of(fi) : NULL;
	bool deferred = h && h->deferred;
	const char *inner;
	struct wfile *w;
	struct stat st;
	struct ctr *c;
	int ret = resolve_change(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	w = open_wfile(fs, c, inner, fi);
	if (!w && deferred) {
		/* ftruncate through a write-only descriptor that wrote
		 * nothing yet (the one change the kernel sends with the
		 * descriptor): the file is copied in now, as at a first
		 * write, so no `truncate` is needed in the container */
		w = handle_wfile(h, path, true, &ret);
		if (!w) {
			ctr_put(fs->ctrs, c);
			return ret < 0 ? ret : -EIO;
		}
		wfile_get(w);
	}
	if (w) {
		ret = apply(fs, c, inner, w, NULL, arg);
		wfile_put(w);
	} else {
		/* a directory's files still to come would move its mtime
		 * again; then fresh (meta_getattr_now): its attributes go
		 * back whole in a PUT */
		writer_settle(fs->writer, c->id, inner, false);
		ret = meta_getattr_now(fs->meta, c, inner, &st);
		tool_optional = apply == apply_utimens;
		if (ret == 0)
			ret = apply(fs, c, inner, NULL, &st, arg);
		tool_optional = false;
		/* apply() left in st what the path is now */
		if (ret == 0)
			meta_update(fs->meta, c, inner, &st);
		else
			meta_forget(fs->meta, c, inner);
		if (ret == -EOPNOTSUPP && apply == apply_utimens)
			ret = utimens_by_copy(fs, c, inner, arg);
	}
	ctr_put(fs->ctrs, c);
	return ret;
}

static int apply_chmod(struct fs *fs, struct ctr *c, const char *inner,
		       struct wfile *w, struct stat *st, void *arg)
{
	mode_t mode = *(mode_t *)arg & 07777;
	char m[16];

	if (w) {
		wfile_chmod(w, mode);
		return 0;
	}
	if (S_ISLNK(st->st_mode))
		return -EOPNOTSUPP;
	if (S_ISDIR(st->st_mode)) {
		st->st_mode = S_IFDIR | mode;
		return put_dir_attrs(fs, c, inner, st);
	}
	st->st_mode = (st->st_mode & S_IFMT) | mode;
	snprintf(m, sizeof(m), "%o", (unsigned)mode);
	{
		const char *argv[] = {"chmod", m, "--", inner, NULL};

		return run_tool(fs, c, argv, inner);
	}
}

int ctrfs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return change_attr(path, fi, apply_chmod, &mode);
}

struct owner {
	uid_t uid;
	gid_t gid;
};

static int apply_chown(struct fs *fs, struct ctr *c, const char *inner,
		       struct wfile *w, struct stat *st, void *arg)
{
	struct owner *o = arg;
	char spec[64];

	if (w) {
		wfile_chown(w, o->uid, o->gid);
		return 0;
	}
	if (S_ISDIR(st->st_mode)) {
		if (o->uid != (uid_t)-1)
			st->st_uid = o->uid;
		if (o->gid != (gid_t)-1)
			st->st_gid = o->gid;
		return put_dir_attrs(fs, c, inner, st);
	}
	if (o->uid != (uid_t)-1)
		st->st_uid = o->uid;
	if (o->gid != (gid_t)-1)
		st->st_gid = o->gid;
	if (o->uid != (uid_t)-1 && o->gid != (gid_t)-1)
		snprintf(spec, sizeof(spec), "%u:%u", o->uid, o->gid);
	else if (o->uid != (uid_t)-1)
		snprintf(spec, sizeof(spec), "%u", o->uid);
	else if (o->gid != (gid_t)-1)
		snprintf(spec, sizeof(spec), ":%u", o->gid);
	else
		return 0;
	{
		const char *argv[] = {"chown", "-h", spec, "--", inner, NULL};

		return run_tool(fs, c, argv, inner);
	}
}

int ctrfs_chown(const char *path, uid_t uid, gid_t gid,
		struct fuse_file_info *fi)
{
	struct owner o = {uid, gid};

	return change_attr(path, fi, apply_chown, &o);
}

static int apply_utimens(struct fs *fs, struct ctr *c, const char *inner,
			 struct wfile *w, struct stat *st, void *arg)
{
	const struct timespec *tv = arg;
	struct timespec mt = tv[1];
	char when[64];

	if (mt.tv_nsec == UTIME_OMIT)
		return 0; /* ctrfs keeps no atime */
	if (mt.tv_nsec == UTIME_NOW)
		engine_clock(fs->e, &mt);
	if (w) {
		wfile_utimens(w, &mt);
		return 0;
	}
	if (S_ISDIR(st->st_mode)) {
		st->st_mtim = mt;
		return put_dir_attrs(fs, c, inner, st);
	}
	st->st_mtim.tv_sec = mt.tv_sec;
	st->st_mtim.tv_nsec = 0; /* touch -d @SECS sets whole seconds */
	snprintf(when, sizeof(when), "@%lld", (long long)mt.tv_sec);
	{
		const char *argv[] = {"touch", "-c", "-h",  "-d",
				      when,    "--", inner, NULL};

		return run_tool(fs, c, argv, inner);
	}
}

int ctrfs_utimens(const char *path, const struct timespec tv[2],
		  struct fuse_file_info *fi)
{
	return change_attr(path, fi, apply_utimens, (void *)tv);
}

static int apply_truncate(struct fs *fs, struct ctr *c, const char *inner,
			  struct wfile *w, struct stat *st, void *arg)
{
	off_t size = *(off_t *)arg;
	char n[32];

	if (w)
		return wfile_truncate(w, size);
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (size == 0) {
		/* an empty file of the same name, mode and owner: a PUT */
		engine_clock(fs->e, &st->st_mtim);
		st->st_size = 0;
		return put_entry(fs, c, inner, st, NULL);
	}
	st->st_size = size;
	engine_clock(fs->e, &st->st_mtim);
	snprintf(n, sizeof(n), "%lld", (long long)size);
	{
		const char *argv[] = {"truncate", "-s", n, "--", inner, NULL};

		return run_tool(fs, c, argv, inner);
	}
}

int ctrfs_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	return change_attr(path, fi, apply_truncate, &size);
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
	dfree_get(fs->e, c, inner, sv);
	ctr_put(fs->ctrs, c);
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
	if (writer_set_writeback(fs->writer, fs->cfg.writeback) < 0)
		log_err("cannot start write-back: closes commit at once");
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
	writer_drain(fs->writer);
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
	writer_free(fs->writer);
	agent_free_all();
	ctr_table_free(fs->ctrs);
	meta_free(fs->meta);
	cache_free(fs->cache);
	spool_free(fs->spool);
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
	if (spool_new(NULL, cfg->mem_spool > 0, &fs.spool) < 0) {
		log_err("cannot create the spool directory: %s",
			strerror(errno));
		goto out_teardown;
	}
	fs.cache = cache_new(CACHE_MAX_ENTRIES);
	if (fs.cache)
		cache_set_data_budget(fs.cache, CACHE_DATA_BUDGET);
	fs.meta = fs.cache ? meta_new(e, fs.cache, cfg->attr_timeout,
				      reader_ctr_busy, fs.spool)
			   : NULL;
	fs.ctrs =
	    ctr_table_new(e, cfg->all, cfg->attr_timeout / 2, on_ctr_gone, &fs);
	if (!fs.cache || !fs.meta || !fs.ctrs)
		goto out_teardown;
	log_dbg("spool: %s; in memory: %s, up to %lld MiB in all",
		spool_dir(fs.spool),
		*spool_mem_dir(fs.spool) ? spool_mem_dir(fs.spool) : "none",
		cfg->mem_spool >> 20);
	engine_set_preempt(e, reader_preempt);
	engine_set_abandoned(e, caller_dying);
	reader_set_spool(fs.spool);
	fs.writer = writer_new(e, fs.meta, fs.spool, fs.cfg.mem_spool);
	if (!fs.writer)
		goto out_teardown;

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
