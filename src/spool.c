// SPDX-License-Identifier: GPL-2.0-or-later
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MEM_BASE   "/dev/shm"
#define RESCUE_DIR "ctrfs-rescue"
#define SPOOL_PFX  "ctrfs-spool."

struct spool {
	char base[PATH_MAX];
	char dir[PATH_MAX];
	char mem[PATH_MAX]; /* the directory on a tmpfs, or "" */
	int dir_fd, mem_fd; /* held open with a shared flock: "in use" */
};

/*
 * A private directory ctrfs-spool.PID.XXXXXX under base into buf, opened
 * and share-locked into *fd for as long as the spool lives (the lock
 * passes to the daemon across its fork: the open file is shared). Its
 * files are unlinked from the start, so a daemon that is killed leaves it
 * empty; spool_sweep() removes such directories.
 */
static int make_dir(const char *base, char *buf, size_t len, int *fd)
{
	if ((size_t)snprintf(buf, len, "%s/" SPOOL_PFX "%ld.XXXXXX", base,
			     (long)getpid()) >= len)
		return -ENAMETOOLONG;
	if (!mkdtemp(buf))
		return -errno;
	chmod(buf, 0700);
	*fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0 || flock(*fd, LOCK_SH) < 0) {
		int err = errno;

		if (*fd >= 0)
			close(*fd);
		rmdir(buf);
		return -err;
	}
	return 0;
}

/*
 * Removes the spool directories under base that a dead daemon left: the
 * name says a pid that is not running here, and no one holds its lock
 * (so a daemon of another pid namespace sharing base keeps its own).
 * Only empty directories go (rmdir); names of another form (an older
 * ctrfs's) are left alone.
 */
static void spool_sweep(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		char *end;
		long pid;
		struct stat st;
		int fd;

		if (strncmp(name, SPOOL_PFX, strlen(SPOOL_PFX)) != 0)
			continue;
		errno = 0;
		pid = strtol(name + strlen(SPOOL_PFX), &end, 10);
		if (errno || end == name + strlen(SPOOL_PFX) || *end != '.' ||
		    pid <= 0 || pid == (long)getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		fd = openat(dirfd(d), name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0)
			unlinkat(dirfd(d), name, AT_REMOVEDIR);
		close(fd);
	}
	closedir(d);
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
	s->mem_fd = -1;
	spool_sweep(base);
	ret = make_dir(base, s->dir, sizeof(s->dir), &s->dir_fd);
	if (ret < 0) {
		free(s);
		return ret;
	}
	if (statfs(MEM_BASE, &fs) < 0 || fs.f_type != TMPFS_MAGIC)
		mem = false;
	else
		spool_sweep(MEM_BASE);
	if (!mem || make_dir(MEM_BASE, s->mem, sizeof(s->mem), &s->mem_fd) < 0)
		s->mem[0] = '\0'; /* files are written to disk only */
	*out = s;
	return 0;
}

void spool_free(struct spool *s)
{
	if (!s)
		return;
	rmdir(s->dir);
	close(s->dir_fd);
	if (s->mem[0]) {
		rmdir(s->mem);
		close(s->mem_fd);
	}
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

int spool_copy_range(int to, int from, off_t off, off_t len)
{
	off_t end = off + len;

	while (off < end) {
		ssize_t n = sendfile(to, from, &off, (size_t)(end - off));

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
	}
	return 0;
}

int spool_copy(int to, int from)
{
	struct stat st;

	if (fstat(from, &st) < 0)
		return -errno;
	return spool_copy_range(to, from, 0, st.st_size);
}

/* The directory name in dfd, made if missing (its entry synced): a new
 * fd, or -errno. Never follows a link. */
static int sub_dir(int dfd, const char *name)
{
	int fd;

	if (mkdirat(dfd, name, 0700) == 0)
		fsync(dfd);
	else if (errno != EEXIST)
		return -errno;
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* BASE/ctrfs-rescue when it is a directory of this user's, closed to
 * others; else (it sits in a shared place, where anyone may have made it),
 * or when fresh, a new BASE/ctrfs-rescue.XXXXXX. An fd, its path in root,
 * or -errno. */
static int rescue_root(const struct spool *s, char *root, size_t len,
		       bool fresh)
{
	int bfd = open(s->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd;
	struct stat st;

	if (bfd < 0)
		return -errno;
	if (!fresh) {
		dfd = sub_dir(bfd, RESCUE_DIR);
		if (dfd >= 0 && fstat(dfd, &st) == 0 &&
		    st.st_uid == geteuid() && !(st.st_mode & 077) &&
		    (size_t)snprintf(root, len, "%s/%s", s->base, RESCUE_DIR) <
			len) {
			close(bfd);
			return dfd;
		}
		if (dfd >= 0)
			close(dfd);
	}
	if ((size_t)snprintf(root, len, "%s/%s.XXXXXX", s->base, RESCUE_DIR) >=
	    len) {
		close(bfd);
		return -ENAMETOOLONG;
	}
	dfd = mkdtemp(root) ? 0 : -errno;
	if (dfd == 0) {
		fsync(bfd); /* its entry, as sub_dir() does */
		dfd =
		    open(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			dfd = -errno;
	}
	close(bfd);
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

/* The i-th name tried for comp: comp itself, then comp.1, comp.2, ...;
 * false when it does not fit. */
static bool nth_name(char *name, size_t len, const char *comp, int i)
{
	int n = i ? snprintf(name, len, "%s.%d", comp, i)
		  : snprintf(name, len, "%s", comp);

	return (size_t)n < len;
}

/* Gives the unnamed file fd the name comp in dfd, or comp.1, comp.2, ...
 * when taken; the name used into name. 0 or -errno. */
static int link_free_name(int fd, int dfd, const char *comp, char *name,
			  size_t len)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	for (int i = 0; i < 100; i++) {
		if (!nth_name(name, len, comp, i))
			return -ENAMETOOLONG;
		/* AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc does not */
		if (linkat(fd, "", dfd, name, AT_EMPTY_PATH) == 0 ||
		    (errno != EEXIST &&
		     linkat(AT_FDCWD, proc, dfd, name, AT_SYMLINK_FOLLOW) == 0))
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

/* Appends ".N" to the path in out (spool_rescue() keeps room for it). */
static void add_suffix(char *out, size_t outlen, const char *suffix)
{
	size_t used = strlen(out);

	snprintf(out + used, outlen - used, "%s", suffix);
}

/* spool_rescue() where the filesystem has no O_TMPFILE: the copy is made
 * under its final name, and removed again when it fails. Consumes dfd. */
static int named_copy(int fd, int dfd, const char *comp, char *out,
		      size_t outlen)
{
	char name[NAME_MAX + 1];
	int to = -1, ret = -EEXIST;

	for (int i = 0; i < 100 && to < 0; i++) {
		if (!nth_name(name, sizeof(name), comp, i)) {
			ret = -ENAMETOOLONG;
			break;
		}
		to = openat(
		    dfd, name,
		    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		ret = to < 0 ? -errno : 0;
		if (to < 0 && errno != EEXIST)
			break;
	}
	if (to >= 0) {
		ret = spool_copy(to, fd);
		if (ret == 0 && fsync(to) < 0)
			ret = -errno;
		if (ret == 0 && fsync(dfd) < 0)
			ret = -errno;
		if (ret < 0)
			unlinkat(dfd, name, 0);
		else if (strcmp(name, comp))
			add_suffix(out, outlen, name + strlen(comp));
		close(to);
	}
	close(dfd);
	return ret;
}

/* The directory for rel's last component under a rescue root: an fd,
 * with *last pointing to that component in rel (cut at its slashes), and
 * the whole path in out; or -errno. */
static int rescue_dir(struct spool *s, char *rel, bool fresh, char **last,
		      char *out, size_t outlen)
{
	char root[PATH_MAX], *comp, *next;
	int dfd = rescue_root(s, root, sizeof(root), fresh);

	if (dfd < 0)
		return dfd;
	/* with room for a suffix ".99" */
	if ((size_t)snprintf(out, outlen, "%s/%s", root, rel) + 3 >= outlen) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	/* every component but the last is a directory under it */
	for (comp = rel; dfd >= 0 && (next = strchr(comp, '/')); comp = next) {
		*next++ = '\0';
		if (*comp) {
			int sub = sub_dir(dfd, comp);

			close(dfd);
			dfd = sub;
		}
	}
	*last = comp;
	return dfd;
}

int spool_rescue(struct spool *s, int fd, const char *ctr, const char *path,
		 char *out, size_t outlen)
{
	char rel[PATH_MAX], name[NAME_MAX + 1], *comp = NULL;
	int dfd = -ENOTDIR, to, ret;

	while (*path == '/')
		path++;
	snprintf(out, outlen, "%s/%s", s->base, RESCUE_DIR);
	/* a name on the way taken by an earlier copy (a file where this one
	 * needs a directory): then all of it in a fresh root */
	for (int fresh = 0; fresh < 2 && dfd == -ENOTDIR; fresh++) {
		if ((size_t)snprintf(rel, sizeof(rel), "%s/%s", ctr, path) >=
		    sizeof(rel))
			return -ENAMETOOLONG;
		if (!names_only(rel))
			return -EINVAL;
		dfd = rescue_dir(s, rel, fresh, &comp, out, outlen);
	}
	if (dfd < 0)
		return dfd;
	/* named only once complete: a copy cut short (a crash) leaves no
	 * file that would pass for the data */
	to = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (to < 0 && (errno == EOPNOTSUPP || errno == EISDIR))
		return named_copy(fd, dfd, comp, out, outlen);
	if (to < 0)
		ret = -errno;
	else if ((ret = spool_copy(to, fd)) == 0 && fsync(to) < 0)
		ret = -errno;
	if (ret == 0) {
		ret = link_free_name(to, dfd, comp, name, sizeof(name));
		if (ret < 0 && ret != -EEXIST && ret != -ENAMETOOLONG) {
			/* neither way of naming it works here (no privilege
			 * for AT_EMPTY_PATH, no /proc): under the name itself
			 */
			close(to);
			return named_copy(fd, dfd, comp, out, outlen);
		}
	}
	if (to >= 0)
		close(to);
	if (ret == 0) {
		fsync(dfd); /* the data is there and synced either way */
		if (strcmp(name, comp)) /* "PATH.N" */
			add_suffix(out, outlen, name + strlen(comp));
	}
	close(dfd);
	return ret;
}
