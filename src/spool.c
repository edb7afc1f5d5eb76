// SPDX-License-Identifier: GPL-2.0-or-later
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MEM_BASE "/dev/shm"

struct spool {
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
