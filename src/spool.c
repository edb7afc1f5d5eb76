// SPDX-License-Identifier: GPL-2.0-or-later
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MEM_BASE   "/dev/shm"
#define RESCUE_DIR "ctrfs-rescue"

struct spool {
	char base[PATH_MAX];
	char dir[PATH_MAX];
	char mem[PATH_MAX]; /* the directory on a tmpfs, or "" */
};

/* A private directory ctrfs-spool.XXXXXX under base into buf. */
static int make_dir(const char *base, char *buf, size_t len)
{
	if ((size_t)snprintf(buf, len, "%s/ctrfs-spool.XXXXXX", base) >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(buf))
		return -errno;
	chmod(buf, 0700);
	return 0;
}

int spool_new(const char *base, bool mem, struct spool **out)
{
	struct spool *s = calloc(1, sizeof(*s));
	struct statfs fs;
	int ret;

	if (!s)
		return -ENOMEM;
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/var/tmp";
	if ((size_t)snprintf(s->base, sizeof(s->base), "%s", base) >=
	    sizeof(s->base)) {
		free(s);
		return -ENAMETOOLONG;
	}
	ret = make_dir(base, s->dir, sizeof(s->dir));
	if (ret < 0) {
		free(s);
		return ret;
	}
	if (!mem || statfs(MEM_BASE, &fs) < 0 || fs.f_type != TMPFS_MAGIC ||
	    make_dir(MEM_BASE, s->mem, sizeof(s->mem)) < 0)
		s->mem[0] = '\0'; /* files are written to disk only */
	*out = s;
	return 0;
}

void spool_free(struct spool *s)
{
	if (!s)
		return;
	rmdir(s->dir);
	if (s->mem[0])
		rmdir(s->mem);
	free(s);
}

const char *spool_dir(const struct spool *s)
{
	return s->dir;
}

const char *spool_mem_dir(const struct spool *s)
{
	return s->mem;
}

int spool_file(struct spool *s)
{
	char path[PATH_MAX + 32];
	int fd = open(s->dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR))
		return fd >= 0 ? fd : -errno;
	/* filesystems without O_TMPFILE: create and unlink at once */
	snprintf(path, sizeof(path), "%s/f.XXXXXX", s->dir);
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	unlink(path);
	return fd;
}

int spool_file_mem(struct spool *s)
{
	int fd;

	if (!s->mem[0])
		return -ENOENT;
	fd = open(s->mem, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	return fd >= 0 ? fd : -errno;
}

int spool_copy(int to, int from)
{
	struct stat st;
	off_t off = 0;

	if (fstat(from, &st) < 0)
		return -errno;
	while (off < st.st_size) {
		ssize_t n =
		    sendfile(to, from, &off, (size_t)(st.st_size - off));

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

/* The directory name in dfd, made if missing; a new fd (consumes dfd)
 * or -errno. Never follows a link. */
static int sub_dir(int dfd, const char *name)
{
	int fd;

	if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
		fd = -errno;
	} else {
		fd = openat(dfd, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			fd = -errno;
	}
	close(dfd);
	return fd;
}

/* The rescue directory under base: ours alone, or -EPERM. */
static int rescue_root(const struct spool *s)
{
	int dfd = open(s->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (dfd < 0)
		return -errno;
	dfd = sub_dir(dfd, RESCUE_DIR);
	if (dfd < 0)
		return dfd;
	if (fstat(dfd, &st) < 0 || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

/* rel names something below a directory: no "." or "..", not ending in
 * a slash. */
static bool names_only(const char *rel)
{
	const char *c = rel;

	for (;;) {
		size_t n = strcspn(c, "/");

		if ((n == 1 && c[0] == '.') ||
		    (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!c[n])
			return n > 0;
		c += n + 1;
	}
}

int spool_rescue(struct spool *s, int fd, const char *ctr, const char *path,
		 char *out, size_t outlen)
{
	char rel[PATH_MAX], name[NAME_MAX + 1], *comp, *next;
	int dfd, to = -1, ret;

	while (*path == '/')
		path++;
	snprintf(out, outlen, "%s/%s", s->base, RESCUE_DIR);
	if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", ctr, path) >=
		sizeof(rel) ||
	    (size_t)snprintf(out, outlen, "%s/%s/%s", s->base, RESCUE_DIR,
			     rel) >= outlen)
		return -ENAMETOOLONG;
	if (!names_only(rel))
		return -EINVAL;
	dfd = rescue_root(s);
	/* every component but the last is a directory under it */
	for (comp = rel; dfd >= 0 && (next = strchr(comp, '/')); comp = next) {
		*next++ = '\0';
		if (*comp)
			dfd = sub_dir(dfd, comp);
	}
	if (dfd < 0)
		return dfd;
	for (int i = 0; i < 100 && to < 0; i++) {
		ret = i ? snprintf(name, sizeof(name), "%s.%d", comp, i)
			: snprintf(name, sizeof(name), "%s", comp);
		if ((size_t)ret >= sizeof(name) ||
		    (i && strlen(out) + 4 >= outlen)) {
			close(dfd);
			return -ENAMETOOLONG;
		}
		to = openat(
		    dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (to < 0 && errno != EEXIST) {
			ret = -errno;
			close(dfd);
			return ret;
		}
	}
	if (to < 0) {
		close(dfd);
		return -EEXIST;
	}
	if (strcmp(name, comp)) /* "PATH.N" */
		strcat(out, name + strlen(comp));
	ret = spool_copy(to, fd);
	if (ret == 0 && fsync(to) < 0)
		ret = -errno;
	if (ret < 0) /* half a copy would pass for the file */
		unlinkat(dfd, name, 0);
	close(to);
	close(dfd);
	return ret;
}
