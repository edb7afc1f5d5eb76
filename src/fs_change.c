// SPDX-License-Identifier: GPL-2.0-or-later
/* Changes: names made (mkdir, mknod, symlink, link), removed (unlink,
 * rmdir) and renamed, attributes changed (chmod, chown, utimens,
 * truncate); by a PUT of a tar entry, a tool run in the container, or
 * through an open file being written. */
#include "config.h"

/* FUSE_USE_VERSION (config.h) first; fs_int.h uses the FUSE types */
#include <fuse.h>

#include "fs_int.h"
#include "agent.h"
#include "cache.h"
#include "ctr.h"
#include "engine.h"
#include "log.h"
#include "meta.h"
#include "pathmap.h"
#include "tarstream.h"
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

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
	return writer_find(SITE(c)->writer, c->id, inner);
}

void names_of(struct fs *fs, struct ctr *c, const char *inner, struct names *nm)
{
	nm->n += cache_names_of(SITE(c)->cache, c->id, inner, nm->path + nm->n,
				NAMES_MAX - nm->n);
}

void names_changed(struct ctr *c, const struct names *nm)
{
	char mp[PATH_MAX + 512];

	for (size_t i = 0; i < nm->n; i++) {
		if (snprintf(mp, sizeof(mp), "%s%s/%s%s",
			     *SITE(c)->name ? "/" : "", SITE(c)->name, c->name,
			     nm->path[i]) < (int)sizeof(mp))
			fuse_invalidate_path(fuse_get_context()->fuse, mp);
	}
}

static const char *base_of(const char *path)
{
	return strrchr(path, '/') + 1;
}

/* Creates one data-less entry at inner with one PUT to its directory (its
 * atime too when atime is set). */
static int put_entry(struct fs *fs, struct ctr *c, const char *inner,
		     const struct stat *st, const char *symlink, bool atime)
{
	char parent[PATH_MAX];
	struct tar_entry te = {.name = base_of(inner),
			       .st = *st,
			       .symlink = symlink,
			       .atime = atime};
	long t0 = engine_now(SITE(c)->e);
	int ret;

	pathmap_parent(inner, parent, sizeof(parent));
	if (symlink) {
		/* the engine refuses a link whose target climbs above the
		 * directory of the PUT: put it at the root by its full path */
		parent[0] = '/';
		parent[1] = '\0';
		te.name = inner + 1;
	}
	ret = writer_put_entry(SITE(c)->writer, c, parent, &te);
	if (ret == 0) {
		struct stat cst = *st;

		if (symlink)
			cst.st_size = (off_t)strlen(symlink);
		meta_committed_link(SITE(c)->meta, c, inner, &cst, symlink, t0);
	} else {
		/* the engine may have made it before the failure (a reply
		 * lost): the next lookup asks */
		meta_forget(SITE(c)->meta, c, inner);
	}
	return ret;
}

/* set while a caller has another way when the tool cannot run */
static __thread bool tool_optional;
/* set by run_tool(): the last tool could not run (-EOPNOTSUPP) */
static __thread bool tool_missing;
static __thread bool tool_fraction;

/* Runs a standard tool in the container: argv, each word quoted for the
 * container's shell (agent.c), or an exec of its own. */
static int run_tool(struct fs *fs, struct ctr *c, const char *const *argv,
		    const char *path)
{
	/* room for a tool's line that names two whole paths: the reason
	 * that decides the errno comes last (errmap_tool()) */
	char msg[2 * PATH_MAX + 256];
	int status = 0;
	/* a line to the container's shell, else an exec of its own */
	int ret = agent_run(SITE(c)->e, c->id, argv, &status, msg, sizeof(msg));

	if (ret == 1)
		ret = engine_exec(SITE(c)->e, c->id, argv, &status, msg,
				  sizeof(msg));

	tool_missing = ret == -EOPNOTSUPP;
	if (ret == -EINVAL && tool_fraction)
		agent_set_touch_whole(SITE(c)->e, c->id);
	if (ret == -EINVAL && tool_fraction)
		log_dbg("'%s' in container '%s' takes no fraction: %s", argv[0],
			c->name, msg);
	else if (ret == -EOPNOTSUPP && tool_optional)
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
		ctr_put(SITE(*c)->ctrs, *c);
		*c = NULL;
		ret = -EBUSY; /* a container's root cannot change */
	}
	return ret;
}

/* Both paths of a link or a rename, in one container (else -EXDEV): *c
 * referenced for the caller on success only. */
static int resolve_pair(struct fs *fs, const char *from, const char *to,
			struct ctr **c, const char **ifrom, const char **ito)
{
	struct ctr *c2;
	int ret = resolve_change(fs, from, c, ifrom);

	if (ret < 0)
		return ret;
	ret = resolve_change(fs, to, &c2, ito);
	if (ret == 0) {
		if (*c != c2)
			ret = -EXDEV;
		ctr_put(SITE(c2)->ctrs, c2);
	}
	if (ret < 0) {
		ctr_put(SITE(*c)->ctrs, *c);
		*c = NULL;
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
	caller_stat(c, &st, mode);
	parent_sgid(fs, c, inner, &st);
	st.st_rdev = rdev;
	/* a directory's entry without an atime gets atime 0 from Docker
	 * 20.10 (26 leaves it): give it the mtime */
	st.st_atim = st.st_mtim;
	if (writer_writeback(SITE(c)->writer) && (S_ISDIR(mode) || symlink))
		/* pending: in the next batch PUT, after its files */
		ret = writer_mkentry(SITE(c)->writer, c, inner, &st, symlink);
	else
		ret = put_entry(fs, c, inner, &st, symlink, S_ISDIR(mode));
	ctr_put(SITE(c)->ctrs, c);
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
	struct ctr *c;
	char dir[PATH_MAX];
	struct tar_entry te;
	struct names nm = {0};
	struct stat st;
	long t0;
	size_t dlen;
	int ret = resolve_pair(fs, from, to, &c, &ifrom, &ito);

	if (ret < 0)
		return ret;
	t0 = engine_now(SITE(c)->e);
	ret = stat_path(fs, c, ifrom, &st);
	/* a tar hard link names any entry but a directory, as link(2) does
	 * (a symlink itself, a fifo, a device node) */
	if (ret == 0 && S_ISDIR(st.st_mode))
		ret = -EPERM;
	/* Podman's PUT of a hard link to a symlink fails (with ENOENT's
	 * words): refused, as documented */
	if (ret == 0 && S_ISLNK(st.st_mode) &&
	    engine_quirks(SITE(c)->e)->hardlink_to_target)
		ret = -EOPNOTSUPP;
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
	/* write-back: the file and the directories the PUT needs first */
	writer_settle(SITE(c)->writer, c->id, dir, true);
	dlen = strcmp(dir, "/") == 0 ? 1 : strlen(dir) + 1;
	memset(&te, 0, sizeof(te));
	te.name = ito + dlen;
	te.hardlink = ifrom + dlen;
	te.st = st;
	ret = writer_put_entry(SITE(c)->writer, c, dir, &te);
	if (ret == 0) {
		st.st_nlink++; /* both names: one file (one number), one
				* more link */
		meta_update(SITE(c)->meta, c, ifrom, &st);
		meta_committed(SITE(c)->meta, c, ito, &st, t0);
		/* the kernel holds the old names' attributes as other
		 * inodes (paths, not inodes, here): tell it they moved */
		fuse_invalidate_path(fuse_get_context()->fuse, from);
		names_of(fs, c, ifrom, &nm);
		names_changed(c, &nm);
	} else if (ret < 0) {
		meta_forget(SITE(c)->meta, c,
			    ito); /* perhaps made, reply lost */
	}
out_put:
	ctr_put(SITE(c)->ctrs, c);
	return ret;
}

static int remove_path(const char *path, const char *tool)
{
	struct fs *fs = fs_get();
	long t0;
	const char *inner;
	struct names nm = {0};
	struct wfile *w;
	struct ctr *c;
	int ret = resolve_change(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	t0 = engine_now(SITE(c)->e);
	names_of(fs, c, inner, &nm);
	{
		const char *argv[] = {tool, "--", inner, NULL};
		struct tool_call rm = {fs, c, argv, inner};

		/* one never committed has nothing to remove in the container;
		 * a directory holding one is not empty, whatever it shows */
		w = writer_find(SITE(c)->writer, c->id, inner);
		if (strcmp(tool, "rmdir") == 0 &&
		    writer_holds_below(SITE(c)->writer, c->id, inner))
			ret = -ENOTEMPTY;
		else if (w)
			ret = wfile_unlink(w, call_tool, &rm);
		else
			ret = call_tool(&rm);
	}
	if (w)
		wfile_put(w);
	if (ret == 0 || ret == -ENOENT)
		meta_committed(SITE(c)->meta, c, inner, NULL, t0);
	else
		meta_forget(SITE(c)->meta, c, inner); /* perhaps removed */
	if (ret == 0 && nm.n > 0) {
		/* one link less, and its ctime moved (every name shows it) */
		meta_changed(SITE(c)->meta, c, nm.path[0]);
		names_changed(c, &nm);
	}
	ctr_put(SITE(c)->ctrs, c);
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

/* Two names of one file, as far as the cache knows (a listing showed
 * them with one number). */
static bool same_file(struct fs *fs, struct ctr *c, const char *a,
		      const char *b)
{
	struct stat sa, sb;

	return stat_path(fs, c, a, &sa) == 0 && stat_path(fs, c, b, &sb) == 0 &&
	       !S_ISDIR(sa.st_mode) && sa.st_nlink > 1 &&
	       sa.st_ino == sb.st_ino;
}

/*
 * rename(2) by `mv` in the container, or by the writer for a file being
 * written at either name. Longer than a screen: one sequence of the two
 * names resolved, the NOREPLACE check, the pending files settled, the
 * rename itself with its cases (a file being written at from or to, two
 * names of one file) and the cache told the outcome, which share the
 * references (c, w, t) released at the end.
 */
int ctrfs_rename(const char *from, const char *to, unsigned int flags)
{
	struct fs *fs = fs_get();
	long t0;
	const char *ifrom, *ito;
	struct names nm = {0};
	struct ctr *c;
	struct wfile *w, *t;
	struct stat st;
	bool same = false;
	int ret;

	if (flags & ~RENAME_NOREPLACE)
		return -EINVAL;
	ret = resolve_pair(fs, from, to, &c, &ifrom, &ito);
	if (ret < 0)
		return ret;
	t0 = engine_now(SITE(c)->e);
	if (flags & RENAME_NOREPLACE) {
		ret = stat_path(fs, c, ito, &st);
		ret = ret == 0 ? -EEXIST : ret == -ENOENT ? 0 : ret;
	}
	if (ret < 0)
		goto out_put;
	/* a directory's pending files go in under its old name first */
	writer_settle(SITE(c)->writer, c->id, ifrom, true);
	names_of(fs, c, ifrom, &nm);
	names_of(fs, c, ito, &nm); /* the file replaced loses a link */
	w = writer_find(SITE(c)->writer, c->id, ifrom);
	t = writer_find(SITE(c)->writer, c->id, ito);
	/* rename(2) of two names of one file does nothing and succeeds
	 * (the kernel, told 0, asks for the old name again) */
	same = !w && !t && same_file(fs, c, ifrom, ito);
	{
		const char *argv[] = {"mv", "-f", "-T", "--", ifrom, ito, NULL};
		struct tool_call mv = {fs, c, argv, ifrom};
		/* for a wfile perhaps not committed yet: the file it will
		 * replace at ito (the kernel just looked it up: cached) */
		bool there = w && !t && stat_path(fs, c, ito, &st) == 0;

		/* one never committed is committed as ito, no mv; one open
		 * at ito is replaced, never committed again; a directory it
		 * replaces must be empty of files still to come too */
		if (same)
			ret = 0;
		else if (w || t)
			ret = writer_rename(SITE(c)->writer, w, t, ito, there,
					    call_tool, &mv);
		else if (writer_holds_below(SITE(c)->writer, c->id, ito))
			ret = -ENOTEMPTY;
		else
			ret = call_tool(&mv);
		if (ret == -EALREADY && !w && !t) {
			/* GNU mv: "are the same file", where the cache did
			 * not know: nothing to do */
			same = true;
			ret = 0;
		} else if (ret == -EALREADY) {
			log_err("cannot mv '%s' in container '%s': '%s' is "
				"another name of the same file",
				ifrom, c->name, ito);
			ret = -EIO;
		}
	}
	if (ret < 0 || same) { /* the tool may have run: the next lookups
				* ask */
		meta_forget(SITE(c)->meta, c, ifrom);
		meta_forget(SITE(c)->meta, c, ito);
	}
	/* a directory: what is open below follows (libfuse's path locks
	 * keep operations on paths below out until the rename returns) */
	if (ret == 0 && !same && (!w || wfile_is_dir(w)))
		writer_repath(SITE(c)->writer, c->id, ifrom, ito);
	if (t)
		wfile_put(t);
	if (w)
		wfile_put(w);
	if (ret == 0 && w) {
		/* the wfile is the truth of ito now */
		meta_committed(SITE(c)->meta, c, ifrom, NULL, t0);
		meta_appeared(SITE(c)->meta, c, ito, t0);
	} else if (ret == 0 && !same) {
		meta_moved(SITE(c)->meta, c, ifrom, ito, t0);
	}
	if (ret == 0)
		names_changed(c, &nm);
out_put:
	ctr_put(SITE(c)->ctrs, c);
	return ret;
}

/* Re-applies a directory's mode, owner and mtime with a PUT of its entry
 * (the engine merges an existing directory and takes the entry's). */
static int put_dir_attrs(struct fs *fs, struct ctr *c, const char *inner,
			 const struct stat *st)
{
	char parent[PATH_MAX];
	/* with its atime: Docker 20.10 sets 0 for none */
	struct tar_entry te = {
	    .name = base_of(inner), .st = *st, .atime = true};

	/* Podman's archive API reports every owner as 0:0: the owner goes
	 * back as the container's `stat` says, never as 0:0 unasked */
	if (engine_quirks(SITE(c)->e)->owners_zero &&
	    agent_owner(SITE(c)->e, c->id, inner, &te.st.st_uid,
			&te.st.st_gid) < 0) {
		log_err(
		    "cannot change '%s' in container '%s': Podman's archive "
		    "API reports every owner as 0:0, and 'stat' does not "
		    "run there to keep the directory's",
		    inner, c->name);
		return -EOPNOTSUPP;
	}
	pathmap_parent(inner, parent, sizeof(parent));
	return writer_put_entry(SITE(c)->writer, c, parent, &te);
}

/* A metadata change: folded into an open file, a PUT for a directory, a
 * tool in the container otherwise. */
static int apply_utimens(struct fs *fs, struct ctr *c, const char *inner,
			 struct wfile *w, struct stat *st, void *arg);
static int apply_truncate(struct fs *fs, struct ctr *c, const char *inner,
			  struct wfile *w, struct stat *st, void *arg);

static void resolve_times(struct ctr *c, const struct timespec *tv,
			  const struct timespec *cur_a,
			  const struct timespec *cur_m, bool round,
			  struct timespec *at, struct timespec *mt);

/* A file's times where no `touch` runs (a shell-less container): the file
 * is copied in and put back with them, a GET and a PUT of all of it, which
 * is what `touch` cost everywhere before write-only opens were deferred. */
static int utimens_by_copy(struct fs *fs, struct ctr *c, const char *inner,
			   const struct timespec *tv, bool has_touch)
{
	struct timespec at, mt;
	char link[PATH_MAX];
	struct wfile *w;
	struct stat st;
	int ret = meta_getattr(SITE(c)->meta, c, inner, &st, NULL, 0);

	if (ret == 0 && S_ISLNK(st.st_mode)) /* its raw target too */
		ret = meta_getattr(SITE(c)->meta, c, inner, &st, link,
				   sizeof(link));
	if (ret < 0)
		return ret;
	resolve_times(c, tv, &st.st_atim, &st.st_mtim, false, &at, &mt);
	if (timespec_before(&at, &mt) || (st.st_nlink > 1 && has_touch)) {
		/* a PUT sets the later of the two; and it would split the
		 * file from its other names, where touch keeps them */
		log_err("cannot set the times of '%s' in container '%s': %s",
			inner, c->name,
			timespec_before(&at, &mt)
			    ? "an atime before the mtime needs 'touch' run "
			      "inside it, and whole seconds there"
			    : "to the nanosecond, a file with hard links: "
			      "its 'touch' takes whole seconds");
		return -EOPNOTSUPP;
	}
	log_dbg("'%s' in container '%s': times set with a copy (no 'touch')",
		inner, c->name);
	if (!S_ISREG(st.st_mode)) {
		/* a symlink, fifo or device node: its entry again, as it
		 * is (a link that cannot be read is EIO there) */
		st.st_atim = at;
		st.st_mtim = mt;
		return put_entry(fs, c, inner, &st,
				 S_ISLNK(st.st_mode) ? link : NULL, true);
	}
	ret = writer_open(SITE(c)->writer, c, inner, O_WRONLY, &st, NULL, &w);
	if (ret < 0)
		return ret;
	{
		/* both given: an atime left as it is goes in the PUT too */
		struct timespec both[2] = {at, mt};

		ret = apply_utimens(fs, c, inner, w, NULL, both);
	}
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
	struct names nm = {0};
	struct wfile *w;
	struct stat st;
	struct ctr *c;
	int ret = resolve_change(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	w = open_wfile(fs, c, inner, fi);
	if (!w && !deferred && apply != apply_truncate)
		/* write-back: a directory's attributes ride in a batch */
		w = writer_dir_entry(SITE(c)->writer, c, inner);
	if (!w && deferred) {
		/* ftruncate through a write-only descriptor that wrote
		 * nothing yet (the one change the kernel sends with the
		 * descriptor): the file is copied in now, as at a first
		 * write, so no `truncate` is needed in the container */
		w = handle_wfile(h, path, true, &ret);
		if (!w) {
			ctr_put(SITE(c)->ctrs, c);
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
		writer_settle(SITE(c)->writer, c->id, inner, false);
		ret = meta_getattr_now(SITE(c)->meta, c, inner, &st);
		tool_optional = apply == apply_utimens;
		if (ret == 0)
			ret = apply(fs, c, inner, NULL, &st, arg);
		tool_optional = false;
		/* apply() left in st what the path is now, and what its
		 * other names are */
		if (ret == 0) {
			meta_update(SITE(c)->meta, c, inner, &st);
			names_of(fs, c, inner, &nm);
			names_changed(c, &nm);
		} else if (!(ret == -EOPNOTSUPP && apply == apply_utimens)) {
			/* (times no tool could set changed nothing) */
			meta_forget(SITE(c)->meta, c, inner);
		}
		if (ret == -EOPNOTSUPP && apply == apply_utimens)
			ret = utimens_by_copy(fs, c, inner, arg, !tool_missing);
	}
	ctr_put(SITE(c)->ctrs, c);
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
	/* (on Podman put_dir_attrs() puts back the owner the container's
	 * stat says: its chown instead) */
	if (S_ISDIR(st->st_mode) && !engine_quirks(SITE(c)->e)->owners_zero) {
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

/* "@SECS" or "@SECS.NNNNNNNNN" for `touch -d` (GNU's takes the fraction,
 * busybox's refuses it as an invalid date) */
/* `touch -c -h [-a|-m] -d DATE -- P`: which is "-a", "-m" or NULL (both).
 * -EINVAL: the tool took no fraction. */
static int touch_tool(struct fs *fs, struct ctr *c, const char *inner,
		      const char *which, const struct timespec *t)
{
	char when[64];
	const char *argv[9];
	int i = 0, ret;

	/* its touch refused a fraction before: it would again */
	if (t->tv_nsec && agent_touch_whole(SITE(c)->e, c->id))
		return -EINVAL;
	agent_touch_date(when, sizeof(when), t);
	argv[i++] = "touch";
	argv[i++] = "-c";
	argv[i++] = "-h";
	if (which)
		argv[i++] = which;
	argv[i++] = "-d";
	argv[i++] = when;
	argv[i++] = "--";
	argv[i++] = inner;
	argv[i] = NULL;
	tool_fraction = t->tv_nsec != 0;
	ret = run_tool(fs, c, argv, inner);
	tool_fraction = false;
	return ret;
}

/* The times utimensat asked for, UTIME_NOW and UTIME_OMIT resolved
 * against now and the file's own (cur). round: NOW in whole seconds (a
 * tool whose `touch` may take no fraction; any second of now is now). */
static void resolve_times(struct ctr *c, const struct timespec *tv,
			  const struct timespec *cur_a,
			  const struct timespec *cur_m, bool round,
			  struct timespec *at, struct timespec *mt)
{
	struct timespec now;

	engine_clock(SITE(c)->e, &now);
	if (round)
		now.tv_nsec = 0;
	*at = tv[0].tv_nsec == UTIME_NOW    ? now
	      : tv[0].tv_nsec == UTIME_OMIT ? *cur_a
					    : tv[0];
	*mt = tv[1].tv_nsec == UTIME_NOW    ? now
	      : tv[1].tv_nsec == UTIME_OMIT ? *cur_m
					    : tv[1];
	/* Podman keeps microseconds, rounded up: what it will hold */
	engine_time_fit(SITE(c)->e, at);
	engine_time_fit(SITE(c)->e, mt);
}

/* An open file's times go with its commit. A PUT sets a file's atime to
 * the later of the two (moby's createTarFile): an atime before the mtime
 * is set after it with `touch -a`, the file committed first. */
static int utimens_wfile(struct fs *fs, struct ctr *c, const char *inner,
			 struct wfile *w, const struct timespec *tv)
{
	struct timespec at, mt;
	struct stat cur;
	int ret;

	wfile_stat(w, &cur);
	resolve_times(c, tv, &cur.st_atim, &cur.st_mtim, false, &at, &mt);
	wfile_utimens(w, tv[0].tv_nsec == UTIME_OMIT ? NULL : &at,
		      tv[1].tv_nsec == UTIME_OMIT ? NULL : &mt);
	/* (a directory's entry puts both as given) */
	if (tv[0].tv_nsec == UTIME_OMIT || !timespec_before(&at, &mt) ||
	    wfile_is_dir(w))
		return 0;
	ret = wfile_commit(w);
	if (ret < 0)
		return ret;
	ret = touch_tool(fs, c, inner, "-a", &at);
	if (ret == -EINVAL && at.tv_nsec) {
		/* busybox's touch takes whole seconds, and a PUT cannot put
		 * an atime before the mtime: the second, said once per file
		 * (cp -p of a file just written has one) */
		log_warn("'%s' in container '%s': atime set to the second "
			 "(its 'touch' takes no fraction)",
			 inner, c->name);
		at.tv_nsec = 0;
		/* the file says so too (committed again: not dirty) */
		wfile_utimens(w, &at, NULL);
		ret = wfile_commit(w);
		if (ret == 0)
			ret = touch_tool(fs, c, inner, "-a", &at);
	}
	if (ret == 0) {
		wfile_stat(w, &cur);
		cur.st_atim = at;
		meta_update(SITE(c)->meta, c, inner, &cur);
	} else {
		if (ret == -EINVAL || ret == -EOPNOTSUPP)
			log_err("cannot set the atime of '%s' in container "
				"'%s' before its mtime: a PUT sets the later "
				"of the two, and no 'touch' there takes %s",
				inner, c->name,
				ret == -EINVAL ? "a fraction" : "it");
		meta_forget(SITE(c)->meta, c, inner);
		ret = -EOPNOTSUPP;
	}
	return ret;
}

static int apply_utimens(struct fs *fs, struct ctr *c, const char *inner,
			 struct wfile *w, struct stat *st, void *arg)
{
	const struct timespec *tv = arg;
	struct timespec at, mt, kept[2];
	bool same;
	int ret = 0;

	if (tv[0].tv_nsec == UTIME_OMIT && tv[1].tv_nsec == UTIME_OMIT)
		return 0;
	if (w)
		return utimens_wfile(fs, c, inner, w, tv);
	if (S_ISDIR(st->st_mode)) {
		/* the engine applies both of a directory's entry as given */
		resolve_times(c, tv, &st->st_atim, &st->st_mtim, false,
			      &st->st_atim, &st->st_mtim);
		return put_dir_attrs(fs, c, inner, st);
	}
	/* a time given as it already is (rsync gives the atime back) is
	 * left alone: no fraction for a busybox touch to refuse */
	memcpy(kept, tv, sizeof(kept));
	for (int i = 0; i < 2; i++) {
		const struct timespec *cur = i ? &st->st_mtim : &st->st_atim;

		if (kept[i].tv_sec == cur->tv_sec &&
		    kept[i].tv_nsec == cur->tv_nsec)
			kept[i].tv_nsec = UTIME_OMIT;
	}
	if (kept[0].tv_nsec == UTIME_OMIT && kept[1].tv_nsec == UTIME_OMIT)
		return 0;
	tv = kept;
	resolve_times(c, tv, &st->st_atim, &st->st_mtim, true, &at, &mt);
	same = at.tv_sec == mt.tv_sec && at.tv_nsec == mt.tv_nsec &&
	       tv[0].tv_nsec != UTIME_OMIT && tv[1].tv_nsec != UTIME_OMIT;
	if (same) {
		ret = touch_tool(fs, c, inner, NULL, &mt);
	} else {
		/* one with a fraction first: refused, nothing has changed */
		bool a = tv[0].tv_nsec != UTIME_OMIT;
		bool m = tv[1].tv_nsec != UTIME_OMIT;
		bool m_first = m && mt.tv_nsec;

		if (m_first)
			ret = touch_tool(fs, c, inner, "-m", &mt);
		if (ret == 0 && a)
			ret = touch_tool(fs, c, inner, "-a", &at);
		if (ret == 0 && m && !m_first)
			ret = touch_tool(fs, c, inner, "-m", &mt);
	}
	if (ret == -EINVAL && (at.tv_nsec || mt.tv_nsec))
		ret = -EOPNOTSUPP; /* a fraction: the copy may carry it */
	st->st_atim = at;
	st->st_mtim = mt;
	return ret;
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
	if (size == 0 && st->st_nlink <= 1) {
		/* an empty file of the same name, mode and owner: a PUT,
		 * a new file (which would leave the name's hard links
		 * their content: those go by the tool) */
		engine_clock(SITE(c)->e, &st->st_mtim);
		st->st_size = 0;
		st->st_ino = 0;
		st->st_nlink = 1;
		return put_entry(fs, c, inner, st, NULL, false);
	}
	st->st_size = size;
	engine_clock(SITE(c)->e, &st->st_mtim);
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
