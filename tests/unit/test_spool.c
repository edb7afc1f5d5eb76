// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * spool: the copy that keeps data write-back could not land
 * (spool_rescue) and the whole-file copy under it (spool_copy, also of
 * each size around a sector and a MiB, from disk and from tmpfs).
 */
#include "spool.h"

#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char base[256]; /* short: paths built on it fit PATH_MAX */

/* The content of path, up to len - 1 bytes, as a string. */
static const char *content(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	if (fd >= 0)
		close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

static int data_fd(struct spool *s, const char *text)
{
	int fd = spool_file(s);

	CHECK(fd >= 0);
	CHECK_INT(write(fd, text, strlen(text)), strlen(text));
	return fd;
}

/* The copy lands at BASE/ctrfs-rescue/CTR/PATH, mode 0600 in 0700
 * directories; a second one of the same path gets ".1". */
static void test_rescue_where_and_what(struct spool *s)
{
	char out[PATH_MAX + 64], want[PATH_MAX], buf[64];
	struct stat st;
	int fd = data_fd(s, "first\n");

	CHECK_INT(spool_rescue(s, fd, "web", "/srv/app/conf", out, sizeof(out)),
		  0);
	snprintf(want, sizeof(want), "%s/ctrfs-rescue/web/srv/app/conf", base);
	CHECK_STR(out, want);
	CHECK_STR(content(out, buf, sizeof(buf)), "first\n");
	CHECK(stat(out, &st) == 0 && (st.st_mode & 0777) == 0600);
	snprintf(want, sizeof(want), "%s/ctrfs-rescue/web/srv", base);
	CHECK(stat(want, &st) == 0 && (st.st_mode & 0777) == 0700);
	close(fd);

	fd = data_fd(s, "second\n");
	CHECK_INT(spool_rescue(s, fd, "web", "/srv/app/conf", out, sizeof(out)),
		  0);
	snprintf(want, sizeof(want), "%s/ctrfs-rescue/web/srv/app/conf.1",
		 base);
	CHECK_STR(out, want);
	CHECK_STR(content(out, buf, sizeof(buf)), "second\n");
	close(fd);
}

/* An empty file is kept too (it is what the user wrote). */
static void test_rescue_empty(struct spool *s)
{
	char out[PATH_MAX + 64], buf[8];
	int fd = spool_file(s);

	CHECK_INT(spool_rescue(s, fd, "web", "/empty", out, sizeof(out)), 0);
	CHECK_STR(content(out, buf, sizeof(buf)), "");
	close(fd);
}

/* Names that would leave the directory are refused. */
static void test_rescue_odd_paths(struct spool *s)
{
	char out[PATH_MAX + 64], root[PATH_MAX];
	int fd = data_fd(s, "x");

	CHECK_INT(spool_rescue(s, fd, "web", "/a/../../b", out, sizeof(out)),
		  -EINVAL);
	CHECK_INT(spool_rescue(s, fd, "web", "/a/..", out, sizeof(out)),
		  -EINVAL);
	CHECK_INT(spool_rescue(s, fd, "..", "/b", out, sizeof(out)), -EINVAL);
	CHECK_INT(spool_rescue(s, fd, "web", "/d/", out, sizeof(out)), -EINVAL);
	snprintf(root, sizeof(root), "%s/ctrfs-rescue/web/a", base);
	CHECK(access(root, F_OK) < 0); /* nothing made on the way */
	close(fd);
}

/* A top directory open to others, or someone else's, is not used: it sits
 * in a shared place (/var/tmp) where anyone could have made it. The copy
 * goes to a new BASE/ctrfs-rescue.XXXXXX instead, and nothing into it. */
static void check_elsewhere(struct spool *s, const char *root)
{
	char out[PATH_MAX + 64], prefix[PATH_MAX], inside[PATH_MAX], buf[8];
	int fd = data_fd(s, "y");

	snprintf(prefix, sizeof(prefix), "%s/ctrfs-rescue.", base);
	CHECK_INT(spool_rescue(s, fd, "web", "/g", out, sizeof(out)), 0);
	CHECK(strncmp(out, prefix, strlen(prefix)) == 0);
	CHECK(strlen(out) == strlen(prefix) + 6 + strlen("/web/g"));
	CHECK_STR(content(out, buf, sizeof(buf)), "y");
	snprintf(inside, sizeof(inside), "%s/web/g", root);
	CHECK(access(inside, F_OK) < 0);
	close(fd);
}

static void test_rescue_root_not_ours(struct spool *s)
{
	char root[PATH_MAX];

	snprintf(root, sizeof(root), "%s/ctrfs-rescue", base);
	CHECK(chmod(root, 0777) == 0);
	check_elsewhere(s, root);
	CHECK(chmod(root, 0700) == 0);
	if (geteuid() == 0) {
		CHECK(chown(root, 65534, 65534) == 0);
		check_elsewhere(s, root);
		CHECK(chown(root, 0, 0) == 0);
	}
}

/* An earlier copy holds a name this one needs as a directory (/a, then
 * /a/b): the copy goes to a fresh root instead of being lost. */
static void test_rescue_name_taken_by_a_file(struct spool *s)
{
	char out[PATH_MAX + 64], prefix[PATH_MAX], buf[8];
	int fd = data_fd(s, "z");

	CHECK_INT(spool_rescue(s, fd, "web", "/n", out, sizeof(out)), 0);
	CHECK_INT(spool_rescue(s, fd, "web", "/n/b", out, sizeof(out)), 0);
	snprintf(prefix, sizeof(prefix), "%s/ctrfs-rescue.", base);
	CHECK(strncmp(out, prefix, strlen(prefix)) == 0);
	CHECK(strlen(out) == strlen(prefix) + 6 + strlen("/web/n/b"));
	CHECK_STR(content(out, buf, sizeof(buf)), "z");
	close(fd);
}

/* Fills fd with n bytes of a pattern that differs at every offset of a
 * sector (seeded, so that source and copy are told apart from a stale
 * block), leaving its offset at the end. */
static void fill(int fd, unsigned char *buf, size_t n, unsigned seed)
{
	size_t done = 0;

	for (size_t i = 0; i < n; i++)
		buf[i] = (unsigned char)((i * 131u + seed * 7u + (i >> 9)) ^
					 (i >> 17));
	while (done < n) {
		ssize_t w = write(fd, buf + done, n - done);

		if (w <= 0)
			break;
		done += (size_t)w;
	}
	CHECK_INT(done, n);
}

/* spool_copy() of each size, from a file whose offset is at its end (as
 * the spool leaves it after writing) to a fresh one: the copy is the
 * source byte for byte, and the source's offset is not moved. */
static void test_copy_sizes(struct spool *s, int mem)
{
	static const size_t sizes[] = {
	    0, 1, 511, 512, 513, (1 << 20) - 1, 1 << 20, (1 << 20) + 1};
	size_t max = (1 << 20) + 1;
	unsigned char *want = malloc(max), *got = malloc(max + 1);

	CHECK(want && got);
	if (!want || !got)
		goto out;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		size_t n = sizes[k];
		int from = mem ? spool_file_mem(s) : spool_file(s);
		int to = spool_file(s);
		struct stat st;

		CHECK(from >= 0 && to >= 0);
		if (from < 0 || to < 0)
			continue;
		fill(from, want, n, (unsigned)k + 1);
		CHECK_INT(spool_copy(to, from), 0);
		CHECK(fstat(to, &st) == 0);
		CHECK_INT(st.st_size, n);
		CHECK_INT(pread(to, got, max + 1, 0), n);
		if (memcmp(got, want, n) != 0) {
			fprintf(stderr,
				"spool_copy of %zu bytes (%s): not the "
				"same bytes\n",
				n, mem ? "tmpfs" : "disk");
			CHECK(!"bytes differ");
		}
		CHECK_INT(lseek(from, 0, SEEK_CUR), n);
		close(from);
		close(to);
	}
out:
	free(want);
	free(got);
}

/* Open descriptors of this process: spool_rescue() must leave none. */
static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int main(void)
{
	struct spool *s;

	const char *tmp = getenv("TMPDIR");

	snprintf(base, sizeof(base), "%s/ctrfs-test-spool.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	CHECK_INT(spool_new(base, false, &s), 0);
	int fds = open_fds();

	test_rescue_where_and_what(s);
	test_rescue_empty(s);
	test_rescue_odd_paths(s);
	test_rescue_root_not_ours(s);
	test_rescue_name_taken_by_a_file(s);
	test_copy_sizes(s, 0);
	{
		int fd = spool_file_mem(s);

		if (fd >= 0) {
			close(fd);
			test_copy_sizes(s, 1);
		}
	}
	CHECK_INT(open_fds(), fds);
	spool_free(s);
	{
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", base);
	}
	return check_report();
}
