/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Mapping between paths of the mount and paths inside containers. Pure code.
 */
#ifndef CTRFS_PATHMAP_H
#define CTRFS_PATHMAP_H

#include <stddef.h>

/*
 * Splits a mount path "/name/in/side" into the container name ("name",
 * copied into name) and the path inside it ("/in/side", pointing into a
 * static "/" or into fusepath). The mount root "/" gives name "" and
 * inner NULL. Returns 0 or -ENAMETOOLONG (the container name too long for
 * name, a name inside longer than NAME_MAX, the inner path PATH_MAX or
 * longer).
 */
int pathmap_split(const char *fusepath, char *name, size_t namelen,
		  const char **inner);

/*
 * Rewrites the target of the symlink at linkpath (absolute, inside the
 * container) into a relative path that, followed from the link's directory
 * on the host, stays inside the container's directory of the mount: an
 * absolute target is taken from the container root, and ".." never climbs
 * above it. Returns 0, or -ENAMETOOLONG when out is too small.
 */
int pathmap_link(const char *linkpath, const char *target, char *out,
		 size_t outlen);

/*
 * Copies the directory of an absolute path into out ("/a/b" -> "/a",
 * "/a" -> "/", "/" -> "/"). 0, or -ENAMETOOLONG when out is too small.
 */
int pathmap_parent(const char *path, char *out, size_t outlen);

/*
 * Copies the deepest directory that holds the entries a and b (absolute
 * paths, neither below the other) into out: "/x/y" and "/x/z" give "/x",
 * "/a" and "/b" give "/". Truncated to outlen - 1 bytes.
 */
void pathmap_common(const char *a, const char *b, char *out, size_t outlen);

/*
 * Copies the path of entry name of directory dir into out ("/a" + "b" ->
 * "/a/b", "/" + "b" -> "/b"). 0, or -ENAMETOOLONG when out is too small.
 */
int pathmap_child(const char *dir, const char *name, char *out, size_t outlen);

/*
 * Returns 1 when path equals prefix or lies below it ("/a/b" is below
 * "/a", "/ab" is not), else 0.
 */
int pathmap_is_under(const char *path, const char *prefix);

#endif
