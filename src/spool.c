// SPDX-License-Identifier: GPL-2.0-or-later
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct spool {
	char dir[PATH_MAX];
};

int spool_new(const char *base, struct spool **out)
{
	struct spool *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/var/tmp";
	if ((size_t)snprintf(s->dir, sizeof(s->dir), "%s/ctrfs-spool.XXXXXX",
			     base) >= sizeof(s->dir) ||
	    !mkdtemp(s->dir)) {
		int ret = errno ? -errno : -ENAMETOOLONG;

		free(s);
		return ret;
	}
	chmod(s->dir, 0700);
	*out = s;
	return 0;
}

void spool_free(struct spool *s)
{
	if (!s)
		return;
	rmdir(s->dir);
	free(s);
}

const char *spool_dir(const struct spool *s)
{
	return s->dir;
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
