// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * xattrs: a packed set answers getxattr/listxattr/setxattr/removexattr as
 * the syscalls do; a set put in a tar header by tarstream_header() reads
 * back from the archive's entry; the table serves a set only while the
 * file's type, size and mtime second are those it was recorded with.
 */
#include "tarstream.h"
#include "xattrs.h"

#include "check.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/xattr.h>

static const char cap[20] = {1, 0, 0, 2, 0, 0x20, 0, 0, 0, 0};

static void test_edit(void)
{
	char *p = NULL, buf[64];
	size_t len = 0;

	CHECK_INT(xattrs_value(p, len, "security.capability", buf, 0),
		  -ENODATA);
	CHECK_INT(xattrs_names(p, len, buf, 0), 0);
	CHECK_INT(xattrs_edit(&p, &len, "a", NULL, 0, 0), -ENODATA);
	CHECK_INT(xattrs_edit(&p, &len, "a", "x", 1, XATTR_REPLACE), -ENODATA);
	CHECK_INT(xattrs_edit(&p, &len, "security.capability", cap, sizeof(cap),
			      XATTR_CREATE),
		  0);
	CHECK_INT(xattrs_edit(&p, &len, "user.b", "", 0, 0), 0);
	CHECK_INT(
	    xattrs_edit(&p, &len, "security.capability", cap, 4, XATTR_CREATE),
	    -EEXIST);
	CHECK_INT(xattrs_value(p, len, "security.capability", NULL, 0), 20);
	CHECK_INT(xattrs_value(p, len, "security.capability", buf, 19),
		  -ERANGE);
	CHECK_INT(xattrs_value(p, len, "security.capability", buf, 64), 20);
	CHECK(memcmp(buf, cap, 20) == 0);
	CHECK_INT(xattrs_value(p, len, "user.b", buf, 64), 0);
	CHECK_INT(xattrs_names(p, len, NULL, 0), 27);
	CHECK_INT(xattrs_names(p, len, buf, 26), -ERANGE);
	CHECK_INT(xattrs_names(p, len, buf, 64), 27);
	CHECK(memcmp(buf, "security.capability\0user.b\0", 27) == 0);
	/* replaced: one record of the name, the new value */
	CHECK_INT(xattrs_edit(&p, &len, "security.capability", "abcd", 4,
			      XATTR_REPLACE),
		  0);
	CHECK_INT(xattrs_value(p, len, "security.capability", buf, 64), 4);
	CHECK_INT(xattrs_names(p, len, buf, 64), 27);
	CHECK_INT(xattrs_edit(&p, &len, "security.capability", NULL, 0, 0), 0);
	CHECK_INT(xattrs_edit(&p, &len, "user.b", NULL, 0, 0), 0);
	CHECK(p == NULL);
	CHECK_INT(len, 0);
}

struct mem {
	const char *buf;
	size_t len;
	bool done;
};

static ssize_t mem_read(void *ctx, const void **buf)
{
	struct mem *m = ctx;

	if (m->done)
		return 0;
	m->done = true;
	*buf = m->buf;
	return (ssize_t)m->len;
}

static void test_tar_round_trip(void)
{
	static char ar[16384];
	struct tar_entry e = {.name = "ping"}, got;
	struct mem m = {.buf = ar};
	struct tarstream *t;
	char *p = NULL, v[64];
	size_t len = 0;
	ssize_t n;

	CHECK_INT(
	    xattrs_edit(&p, &len, "security.capability", cap, sizeof(cap), 0),
	    0);
	e.st.st_mode = S_IFREG | 0755;
	e.xattrs = p;
	e.xattrs_len = len;
	n = tarstream_header(&e, ar, sizeof(ar) - 2 * TAR_BLOCK);
	CHECK(n > 0);
	if (n <= 0)
		goto out;
	CHECK(memmem(ar, (size_t)n, "SCHILY.xattr.security.capability=", 33) !=
	      NULL);
	m.len = (size_t)n + 2 * TAR_BLOCK;
	CHECK_INT(tarstream_open(mem_read, &m, &t), 0);
	CHECK_INT(tarstream_next(t, &got), 0);
	CHECK_INT(xattrs_value(got.xattrs, got.xattrs_len,
			       "security.capability", v, sizeof(v)),
		  20);
	CHECK(memcmp(v, cap, 20) == 0);
	CHECK_INT(xattrs_names(got.xattrs, got.xattrs_len, NULL, 0), 20);
	tarstream_free(t);
out:
	free(p);
}

static void test_table(void)
{
	struct xattrs *x = xattrs_new(2, 64);
	struct stat st = {.st_mode = S_IFREG | 0644, .st_size = 5};
	char *p = NULL;
	size_t len = 9;

	st.st_mtim.tv_sec = 100;
	CHECK_INT(xattrs_get(x, "c1", "/f", &st, &p, &len), -ENOENT);
	xattrs_put(x, "c1", "/f", &st, "n\0\x01\0\0\0v", 7);
	xattrs_put(x, "c1", "/e", &st, NULL, 0);
	CHECK_INT(xattrs_get(x, "c1", "/f", &st, &p, &len), 0);
	CHECK_INT(len, 7);
	free(p);
	CHECK_INT(xattrs_get(x, "c1", "/e", &st, &p, &len), 0);
	CHECK(p == NULL && len == 0);
	CHECK_INT(xattrs_get(x, "c2", "/f", &st, &p, &len), -ENOENT);
	st.st_mtim.tv_nsec = 5; /* the same second: still it */
	CHECK_INT(xattrs_get(x, "c1", "/f", &st, &p, &len), 0);
	free(p);
	st.st_size = 6; /* changed since */
	CHECK_INT(xattrs_get(x, "c1", "/f", &st, &p, &len), -ENOENT);
	/* full: an empty set is not recorded, a non-empty one starts over */
	xattrs_put(x, "c1", "/g", &st, NULL, 0);
	CHECK_INT(xattrs_count(x), 2);
	xattrs_put(x, "c1", "/h", &st, "n\0\x01\0\0\0v", 7);
	CHECK_INT(xattrs_count(x), 1);
	xattrs_free(x);
}

int main(void)
{
	test_edit();
	test_tar_round_trip();
	test_table();
	return check_report();
}
