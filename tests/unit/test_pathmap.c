// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * pathmap: splitting mount paths, rewriting symlink targets so they stay
 * inside the container's directory, and path prefix tests.
 */
#include "pathmap.h"

#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void check_split(const char *path, const char *name, const char *inner)
{
	char got[256];
	const char *in = "unset";

	CHECK_INT(pathmap_split(path, got, sizeof(got), &in), 0);
	CHECK_STR(got, name);
	CHECK_STR(in, inner);
}

static void test_split_root(void)
{
	check_split("/", "", NULL);
}

static void test_split_container(void)
{
	check_split("/web", "web", "/");
	check_split("/web/", "web", "/");
}

static void test_split_inner_path(void)
{
	check_split("/web/etc/x", "web", "/etc/x");
	check_split("/web/etc", "web", "/etc");
	check_split("/my-ctr.1/a b/ü", "my-ctr.1", "/a b/ü");
}

static void test_split_inner_points_into_path(void)
{
	const char *path = "/web/etc/x";
	const char *in;
	char name[16];

	CHECK_INT(pathmap_split(path, name, sizeof(name), &in), 0);
	CHECK(in == path + 4);
}

/* Appends "/" and a name of len bytes to path. */
static void append_name(char *path, size_t len)
{
	size_t n = strlen(path);

	path[n] = '/';
	memset(path + n + 1, 'e', len);
	path[n + 1 + len] = '\0';
}

static void test_split_inner_too_long(void)
{
	char path[PATH_MAX + 16], name[16];
	const char *in;
	size_t left;

	/* a name of NAME_MAX bytes passes, one more does not */
	strcpy(path, "/web");
	append_name(path, NAME_MAX);
	CHECK_INT(pathmap_split(path, name, sizeof(name), &in), 0);
	strcpy(path, "/web");
	append_name(path, NAME_MAX + 1);
	append_name(path, 1);
	CHECK_INT(pathmap_split(path, name, sizeof(name), &in), -ENAMETOOLONG);
	/* the path inside: PATH_MAX - 1 bytes pass, PATH_MAX do not */
	strcpy(path, "/web");
	while ((left = PATH_MAX - 1 - (strlen(path) - 4)) > 0)
		append_name(path,
			    (left - 1 < NAME_MAX ? left : NAME_MAX + 1) - 1);
	CHECK_INT((int)(strlen(path) - 4), PATH_MAX - 1);
	CHECK_INT(pathmap_split(path, name, sizeof(name), &in), 0);
	strcat(path, "e");
	CHECK_INT(pathmap_split(path, name, sizeof(name), &in), -ENAMETOOLONG);
}

static void test_split_name_too_long(void)
{
	char name[4];
	const char *in;

	CHECK_INT(pathmap_split("/abcd", name, sizeof(name), &in),
		  -ENAMETOOLONG);
	CHECK_INT(pathmap_split("/abcd/x", name, sizeof(name), &in),
		  -ENAMETOOLONG);
	/* Exactly fitting, with its NUL. */
	CHECK_INT(pathmap_split("/abc/x", name, sizeof(name), &in), 0);
	CHECK_STR(name, "abc");
	CHECK_STR(in, "/x");
}

static void check_link(const char *linkpath, const char *target,
		       const char *want)
{
	char out[256];
	int r;

	memset(out, 'X', sizeof(out));
	r = pathmap_link(linkpath, target, out, sizeof(out));
	if (r != 0 || strcmp(out, want) != 0)
		fprintf(stderr, "pathmap_link(\"%s\", \"%s\")\n", linkpath,
			target);
	CHECK_INT(r, 0);
	CHECK_STR(out, want);
}

static void test_link_absolute(void)
{
	check_link("/a/b/abs", "/usr/bin/x", "../../usr/bin/x");
	check_link("/bin/sh", "/bin/busybox", "busybox");
	check_link("/etc/alternatives/vi", "/usr/bin/vim.basic",
		   "../../usr/bin/vim.basic");
}

static void test_link_relative(void)
{
	check_link("/a/b/rel", "../c", "../c");
	check_link("/bin/sh", "busybox", "busybox");
	check_link("/a/b/l", "c/d", "c/d");
	check_link("/lib64", "usr/lib64", "usr/lib64");
}

static void test_link_escape_clamped(void)
{
	check_link("/a/b/esc", "../../../../etc/passwd", "../../etc/passwd");
	check_link("/l", "../../..", ".");
	check_link("/l", "../etc", "etc");
	check_link("/a/l", "/../../x", "../x");
}

static void test_link_to_root(void)
{
	check_link("/l", "/", ".");
	check_link("/a/b/l", "/", "../..");
	check_link("/a/b/l", "//", "../..");
}

static void test_link_to_own_directory(void)
{
	check_link("/a/l", ".", ".");
	check_link("/a/l", "/a", ".");
	check_link("/a/l", "/a/", ".");
}

static void test_link_dots_and_slashes(void)
{
	check_link("/a/l", "./x/./y//z", "x/y/z");
	check_link("/a/l", "x/../y", "y");
	check_link("/a/l", "x/", "x");
	check_link("/a/b/l", "/a/b/c/../../d", "../d");
}

static void test_link_out_too_small(void)
{
	char out[16];

	/* "busybox" needs 8 bytes with its NUL. */
	CHECK_INT(pathmap_link("/bin/sh", "busybox", out, 8), 0);
	CHECK_STR(out, "busybox");
	CHECK_INT(pathmap_link("/bin/sh", "busybox", out, 7), -ENAMETOOLONG);
	CHECK_INT(pathmap_link("/a/b/abs", "/usr/bin/x", out, sizeof(out)), 0);
	CHECK_STR(out, "../../usr/bin/x");
	CHECK_INT(pathmap_link("/a/b/abs", "/usr/bin/x", out, 15),
		  -ENAMETOOLONG);
	CHECK_INT(pathmap_link("/a/b/abs", "/usr/bin/x", out, 3),
		  -ENAMETOOLONG);
	CHECK_INT(pathmap_link("/l", "/", out, 2), 0);
	CHECK_STR(out, ".");
	CHECK_INT(pathmap_link("/l", "/", out, 1), -ENAMETOOLONG);
	CHECK_INT(pathmap_link("/l", "/", out, 0), -ENAMETOOLONG);
}

static void test_link_longest_target(void)
{
	/* The longest target readlink can return: 4095 bytes, 2048 names. */
	size_t n = 2048;
	char *target = malloc(n * 2);
	char *out = malloc(n * 2);

	for (size_t i = 0; i < n; i++)
		memcpy(target + 2 * i, "a/", 2);
	target[n * 2 - 1] = '\0';
	CHECK_INT(pathmap_link("/x/l", target, out, n * 2), 0);
	CHECK(strcmp(out, target) == 0);
	CHECK_INT(pathmap_link("/x/l", target, out, n * 2 - 1), -ENAMETOOLONG);
	free(target);
	free(out);
}

static void test_link_hostile_target(void)
{
	/* Far more components than any real link: an error, not a crash. */
	size_t n = 100000;
	char *target = malloc(n * 3 + 1);
	char out[64];

	for (size_t i = 0; i < n; i++)
		memcpy(target + 3 * i, i % 2 ? "../" : "ab/", 3);
	target[n * 3] = '\0';
	CHECK_INT(pathmap_link("/l", target, out, sizeof(out)), 0);
	CHECK_STR(out, ".");
	for (size_t i = 0; i < n; i++)
		memcpy(target + 3 * i, "ab/", 3);
	CHECK_INT(pathmap_link("/l", target, out, sizeof(out)), -ENAMETOOLONG);
	free(target);
}

/*
 * The property test's reference: lexical resolution of path (absolute, or
 * relative to the components already in c), with ".." stopping at the
 * root. Returns the number of times ".." had to be clamped.
 */
struct ref_path {
	size_t n;
	char comp[64][8];
};

static int ref_resolve(struct ref_path *c, const char *path)
{
	const char *p = path;
	int clamped = 0;

	if (*p == '/')
		c->n = 0;
	while (*p) {
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (c->n > 0)
				c->n--;
			else
				clamped++;
		} else if (c->n < 64 && len < 8) {
			memcpy(c->comp[c->n], p, len);
			c->comp[c->n][len] = '\0';
			c->n++;
		}
		p += len;
	}
	return clamped;
}

static int ref_equal(const struct ref_path *a, const struct ref_path *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->comp[i], b->comp[i]) != 0)
			return 0;
	return 1;
}

/* Joins count random components from set with "/"; abs adds a leading one. */
static void random_path(char *buf, size_t len, const char *const *set,
			size_t nset, int count, int abs, unsigned *seed)
{
	size_t o = 0;

	buf[0] = '\0';
	if (abs)
		buf[o++] = '/';
	for (int i = 0; i < count; i++) {
		const char *s = set[rand_r(seed) % nset];

		o +=
		    (size_t)snprintf(buf + o, len - o, "%s%s", i ? "/" : "", s);
	}
	buf[o] = '\0';
}

static void test_link_property(void)
{
	static const char *const comps[] = {"a", "b", "..", ".", ""};
	static const char *const names[] = {"a", "b", "c"};
	unsigned seed = 12345;
	int bad = 0;

	for (int iter = 0; iter < 20000 && bad < 5; iter++) {
		char dir[256], linkpath[300], target[256], out[512];
		struct ref_path d = {0}, want = {0}, got = {0};
		int leading = 0, clamped;
		const char *p;

		random_path(dir, sizeof(dir), comps, 5, rand_r(&seed) % 6, 1,
			    &seed);
		snprintf(linkpath, sizeof(linkpath), "%s/%s",
			 strcmp(dir, "/") ? dir : "", names[rand_r(&seed) % 3]);
		random_path(target, sizeof(target), comps, 5,
			    1 + rand_r(&seed) % 8, rand_r(&seed) % 2, &seed);

		if (pathmap_link(linkpath, target, out, sizeof(out)) != 0) {
			CHECK(!"pathmap_link failed");
			bad++;
			continue;
		}
		/* The link's directory, as the kernel would walk it. */
		ref_resolve(&d, dir);
		/* Where the target points, clamped at the container root. */
		want = d;
		ref_resolve(&want, target);
		for (p = out; !strncmp(p, "..", 2) && (!p[2] || p[2] == '/');
		     p += p[2] ? 3 : 2)
			leading++;
		/* Where the rewritten link points, followed on the host. */
		got = d;
		clamped = ref_resolve(&got, out);

		if (out[0] == '/' || leading > (int)d.n || clamped ||
		    !ref_equal(&got, &want)) {
			fprintf(stderr,
				"pathmap_link(\"%s\", \"%s\") = \"%s\": "
				"depth %zu, %d leading \"..\", resolves %s "
				"the target\n",
				linkpath, target, out, d.n, leading,
				ref_equal(&got, &want) ? "to" : "away from");
			bad++;
		}
		CHECK(out[0] != '/');
		CHECK(leading <= (int)d.n);
		CHECK_INT(clamped, 0);
		CHECK(ref_equal(&got, &want));
	}
}

static void test_is_under(void)
{
	CHECK_INT(pathmap_is_under("/a/b", "/a"), 1);
	CHECK_INT(pathmap_is_under("/ab", "/a"), 0);
	CHECK_INT(pathmap_is_under("/a", "/a"), 1);
	CHECK_INT(pathmap_is_under("/a", "/a/"), 1);
	CHECK_INT(pathmap_is_under("/x", "/"), 1);
	CHECK_INT(pathmap_is_under("/", "/"), 1);
	CHECK_INT(pathmap_is_under("/a/b/c", "/a/b"), 1);
	CHECK_INT(pathmap_is_under("/a/bc", "/a/b"), 0);
	CHECK_INT(pathmap_is_under("/a", "/a/b"), 0);
	CHECK_INT(pathmap_is_under("/b", "/a"), 0);
}

static void test_parent(void)
{
	char out[16];

	CHECK_INT(pathmap_parent("/a/b", out, sizeof(out)), 0);
	CHECK_STR(out, "/a");
	CHECK_INT(pathmap_parent("/a", out, sizeof(out)), 0);
	CHECK_STR(out, "/");
	CHECK_INT(pathmap_parent("/", out, sizeof(out)), 0);
	CHECK_STR(out, "/");
	CHECK_INT(pathmap_parent("/dir with space/x y", out, sizeof(out)), 0);
	CHECK_STR(out, "/dir with space");
	CHECK_INT(pathmap_parent("/0123456789abcdef/x", out, sizeof(out)),
		  -ENAMETOOLONG);
}

static void test_common(void)
{
	char out[64];

	pathmap_common("/x/y", "/x/z", out, sizeof(out));
	CHECK_STR(out, "/x");
	pathmap_common("/x/a", "/x/a2", out, sizeof(out));
	CHECK_STR(out, "/x");
	pathmap_common("/u/s/doc/a", "/u/s/doc/b/c", out, sizeof(out));
	CHECK_STR(out, "/u/s/doc");
	pathmap_common("/a", "/b", out, sizeof(out));
	CHECK_STR(out, "/");
	pathmap_common("/ab", "/ac", out, sizeof(out));
	CHECK_STR(out, "/");
}

static void test_child(void)
{
	char out[8];

	CHECK_INT(pathmap_child("/a", "b", out, sizeof(out)), 0);
	CHECK_STR(out, "/a/b");
	CHECK_INT(pathmap_child("/", "b", out, sizeof(out)), 0);
	CHECK_STR(out, "/b");
	CHECK_INT(pathmap_child("/abc", "def", out, sizeof(out)),
		  -ENAMETOOLONG);
	CHECK_INT(pathmap_child("/abc", "de", out, sizeof(out)), 0);
	CHECK_STR(out, "/abc/de");
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8");

	test_split_root();
	test_split_container();
	test_split_inner_path();
	test_split_inner_points_into_path();
	test_split_name_too_long();
	test_split_inner_too_long();
	test_link_absolute();
	test_link_relative();
	test_link_escape_clamped();
	test_link_to_root();
	test_link_to_own_directory();
	test_link_dots_and_slashes();
	test_link_out_too_small();
	test_link_longest_target();
	test_link_hostile_target();
	test_link_property();
	test_is_under();
	test_parent();
	test_common();
	test_child();
	return check_report();
}
