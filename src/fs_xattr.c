// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Extended attributes, as far as the engine's tar carries them: a GET's
 * tar says a file's security.capability (pax SCHILY.xattr.*) and nothing
 * else, a PUT's sets what it is given. So that one name is read from the
 * tar headers (xattrs.h, meta_xattrs()) and set or removed in the header
 * of the file's next PUT; every other name is refused, not pretended.
 */
#include "config.h"
#include <fuse.h>
#include "fs_int.h"
#include "ctr.h"
#include "log.h"
#include "meta.h"
#include "writer.h"
#include "xattrs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A file not open is put again whole (a GET and a PUT) for a change of its
 * attributes up to this size; past it the change is refused. */
#define XATTR_COPY_MAX ((off_t)64 << 20)

/* The names refused so far, each logged once: `cp -a` and `rsync -aX`
 * try system.posix_acl_access on every file (125 lines for a 100-file
 * tree when each refusal was logged). Past REFUSED_MAX names, each is
 * logged every time. */
#define REFUSED_MAX 32
static struct {
	pthread_mutex_t lock;
	size_t n;
	char *names[REFUSED_MAX];
} refused = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* true the first time name is refused (then it is remembered). */
static bool first_refusal(const char *name)
{
	bool first = true;

	pthread_mutex_lock(&refused.lock);
	for (size_t i = 0; i < refused.n && first; i++)
		first = strcmp(refused.names[i], name) != 0;
	if (first && refused.n < REFUSED_MAX) {
		refused.names[refused.n] = strdup(name);
		if (refused.names[refused.n])
			refused.n++;
	}
	pthread_mutex_unlock(&refused.lock);
	return first;
}

void fs_xattr_free(void)
{
	pthread_mutex_lock(&refused.lock);
	while (refused.n > 0)
		free(refused.names[--refused.n]);
	pthread_mutex_unlock(&refused.lock);
}

static bool kept(const char *name)
{
	return strcmp(name, XATTRS_CAP) == 0;
}

/* getxattr of name, or listxattr when name is NULL. */
static int get_or_list(const char *path, const char *name, char *value,
		       size_t size)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct wfile *w;
	struct stat st;
	struct ctr *c;
	char *pack = NULL;
	size_t len = 0;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	if (!c)
		return name ? -ENODATA : 0; /* the mount root */
	if (name && !kept(name)) {
		ret = -ENODATA; /* no tar of the engine carries it */
		goto out_put;
	}
	/* a file being written answers from memory: the kernel asks for
	 * security.capability before each write() to it */
	w = writer_find(SITE(c)->writer, c->id, inner);
	if (w) {
		ret = (int)wfile_getxattr(w, name, value, size);
		wfile_put(w);
		goto out_put;
	}
	ret = meta_getattr(SITE(c)->meta, c, inner, &st, NULL, 0);
	if (ret < 0)
		goto out_put;
	if (!S_ISREG(st.st_mode)) {
		ret = name ? -ENODATA : 0;
		goto out_put;
	}
	ret = meta_xattrs(SITE(c)->meta, c, inner, &st, &pack, &len);
	if (ret == 0)
		ret = name ? (int)xattrs_value(pack, len, name, value, size)
			   : (int)xattrs_names(pack, len, value, size);
	free(pack);
out_put:
	ctr_put(SITE(c)->ctrs, c);
	return ret;
}

int ctrfs_getxattr(const char *path, const char *name, char *value, size_t size)
{
	return get_or_list(path, name, value, size);
}

int ctrfs_listxattr(const char *path, char *list, size_t size)
{
	return get_or_list(path, NULL, list, size);
}

/* A file not open: the set it has now is checked against the change (no
 * copy for a change that fails), then the file is copied in and put back
 * with the new set, as a shell-less container's utimens is. */
static int change_by_copy(struct fs *fs, struct ctr *c, const char *inner,
			  const char *name, const char *value, size_t size,
			  int flags)
{
	struct wfile *w;
	struct stat st;
	char *pack = NULL;
	size_t len = 0;
	int ret = meta_getattr(SITE(c)->meta, c, inner, &st, NULL, 0);

	if (ret < 0)
		return ret;
	if (!S_ISREG(st.st_mode)) {
		log_err("cannot set '%s' of '%s' in container '%s': the "
			"engine keeps it for regular files only",
			name, inner, c->name);
		return -EOPNOTSUPP;
	}
	ret = meta_xattrs(SITE(c)->meta, c, inner, &st, &pack, &len);
	if (ret == 0)
		ret = xattrs_edit(&pack, &len, name, value, size, flags);
	free(pack);
	if (ret < 0)
		return ret;
	if (st.st_size > XATTR_COPY_MAX) {
		log_err("cannot set '%s' of '%s' in container '%s': a file of "
			"more than %lld MiB is not put again whole for it",
			name, inner, c->name,
			(long long)(XATTR_COPY_MAX >> 20));
		return -EOPNOTSUPP;
	}
	log_dbg("'%s' in container '%s': '%s' set with a copy", inner, c->name,
		name);
	ret = writer_open(SITE(c)->writer, c, inner, O_WRONLY, &st, NULL, &w);
	if (ret < 0)
		return ret;
	ret = wfile_setxattr(w, name, value, size, flags);
	if (ret == 0)
		ret = wfile_commit(w);
	wfile_put(w);
	return ret;
}

/* setxattr (value not NULL) or removexattr. */
static int change(const char *path, const char *name, const char *value,
		  size_t size, int flags)
{
	struct fs *fs = fs_get();
	const char *inner;
	struct wfile *w;
	struct ctr *c;
	int ret = resolve(fs, path, &c, &inner);

	if (ret < 0)
		return ret;
	if (!c || !kept(name)) {
		if (!c)
			log_err("cannot set '%s' of the mount root", name);
		else if (first_refusal(name))
			log_err("cannot set '%s' of '%s' in container '%s': "
				"the engine's archive carries only %s (said "
				"once for each name)",
				name, inner, c->name, XATTRS_CAP);
		ret = -EOPNOTSUPP;
		goto out_put;
	}
	w = writer_find(SITE(c)->writer, c->id, inner);
	if (w) {
		ret = wfile_setxattr(w, name, value, size, flags);
		wfile_put(w);
	} else {
		ret = change_by_copy(fs, c, inner, name, value, size, flags);
	}
out_put:
	ctr_put(SITE(c)->ctrs, c);
	return ret;
}

int ctrfs_setxattr(const char *path, const char *name, const char *value,
		   size_t size, int flags)
{
	return change(path, name, value ? value : "", size, flags);
}

int ctrfs_removexattr(const char *path, const char *name)
{
	return change(path, name, NULL, 0, 0);
}
