// SPDX-License-Identifier: GPL-2.0-or-later
#include "pathmap.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a path of PATH_MAX bytes has at most 2048 components; a link's
 * directory and its target together twice that */
#define MAX_COMPONENTS 4096

struct comp {
	const char *s;
	size_t len;
};

/* The container's kernel refuses a name of more than NAME_MAX bytes and a
 * path of PATH_MAX or more; the engine then answers a PUT or a HEAD with
 * a 500 that says only "file name too long" in its text. FUSE passes
 * names of up to 1024 bytes and paths of any length. */
static int check_inner(const char *inner)
{
	const char *p = inner;

	if (strlen(inner) >= PATH_MAX)
		return -ENAMETOOLONG;
	while (*p) {
		size_t len = strcspn(p, "/");

		if (len > NAME_MAX)
			return -ENAMETOOLONG;
		p += len;
		p += strspn(p, "/");
	}
	return 0;
}

int pathmap_split(const char *fusepath, char *name, size_t namelen,
		  const char **inner)
{
	const char *p = fusepath;
	const char *slash;
	size_t n;

	while (*p == '/')
		p++;
	if (!*p) {
		name[0] = '\0';
		*inner = NULL;
		return 0;
	}
	slash = strchr(p, '/');
	n = slash ? (size_t)(slash - p) : strlen(p);
	if (n >= namelen)
		return -ENAMETOOLONG;
	memcpy(name, p, n);
	name[n] = '\0';
	*inner = (slash && slash[1]) ? slash : "/";
	return check_inner(*inner);
}

/* Appends the components of path to c, resolving "." and ".." lexically. */
static int push_path(struct comp *c, size_t *n, const char *path)
{
	const char *p = path;

	while (*p) {
		const char *end;
		size_t len;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len == 1 && p[0] == '.') {
			/* nothing */
		} else if (len == 2 && p[0] == '.' && p[1] == '.') {
			if (*n > 0)
				(*n)--;
		} else {
			if (*n >= MAX_COMPONENTS)
				return -ENAMETOOLONG;
			c[*n].s = p;
			c[*n].len = len;
			(*n)++;
		}
		p += len;
	}
	return 0;
}

static int emit(char *out, size_t outlen, size_t *pos, const char *s,
		size_t len)
{
	if (*pos + len >= outlen)
		return -ENAMETOOLONG;
	memcpy(out + *pos, s, len);
	*pos += len;
	out[*pos] = '\0';
	return 0;
}

static int link_rel(struct comp *dir, struct comp *res, const char *linkpath,
		    const char *target, char *out, size_t outlen)
{
	size_t ndir = 0, nres = 0, common = 0, pos = 0;
	int ret;

	ret = push_path(dir, &ndir, linkpath);
	if (ret < 0)
		return ret;
	if (ndir > 0)
		ndir--; /* the link's own name */
	if (target[0] != '/') {
		memcpy(res, dir, ndir * sizeof(*dir));
		nres = ndir;
	}
	ret = push_path(res, &nres, target);
	if (ret < 0)
		return ret;

	while (common < ndir && common < nres &&
	       dir[common].len == res[common].len &&
	       memcmp(dir[common].s, res[common].s, dir[common].len) == 0)
		common++;
	for (size_t i = common; i < ndir; i++) {
		ret = emit(out, outlen, &pos, i > common ? "/.." : "..",
			   i > common ? 3 : 2);
		if (ret < 0)
			return ret;
	}
	for (size_t i = common; i < nres; i++) {
		if (pos > 0) {
			ret = emit(out, outlen, &pos, "/", 1);
			if (ret < 0)
				return ret;
		}
		ret = emit(out, outlen, &pos, res[i].s, res[i].len);
		if (ret < 0)
			return ret;
	}
	if (pos == 0)
		return emit(out, outlen, &pos, ".", 1);
	return 0;
}

int pathmap_link(const char *linkpath, const char *target, char *out,
		 size_t outlen)
{
	struct comp *dir, *res;
	int ret;

	if (outlen == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	dir = malloc(2 * MAX_COMPONENTS * sizeof(*dir));
	if (!dir)
		return -ENOMEM;
	res = dir + MAX_COMPONENTS;
	ret = link_rel(dir, res, linkpath, target, out, outlen);
	free(dir);
	return ret;
}

int pathmap_parent(const char *path, char *out, size_t outlen)
{
	const char *slash = strrchr(path, '/');
	size_t n = (!slash || slash == path) ? 1 : (size_t)(slash - path);

	if (n >= outlen)
		return -ENAMETOOLONG;
	memcpy(out, slash ? path : "/", n);
	out[n] = '\0';
	return 0;
}

void pathmap_common(const char *a, const char *b, char *out, size_t outlen)
{
	size_t n = 0, last = 0;

	while (a[n] && a[n] == b[n]) {
		if (a[n] == '/')
			last = n;
		n++;
	}
	if (last == 0)
		last = 1;
	if (last >= outlen)
		last = outlen - 1;
	memcpy(out, a, last);
	out[last] = '\0';
}

int pathmap_child(const char *dir, const char *name, char *out, size_t outlen)
{
	int n =
	    snprintf(out, outlen, "%s/%s", strcmp(dir, "/") ? dir : "", name);

	return n < 0 || (size_t)n >= outlen ? -ENAMETOOLONG : 0;
}

int pathmap_is_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (n == 1 && prefix[0] == '/')
		return path[0] == '/';
	if (strncmp(path, prefix, n) != 0)
		return 0;
	return path[n] == '\0' || path[n] == '/';
}
