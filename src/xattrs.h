/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Extended attributes as the engine's tar carries them (pax
 * SCHILY.xattr.NAME records): a file's set packed in one buffer, and a
 * bounded table of the sets learned from tar headers, keyed by (namespace,
 * path) beside the metadata cache. Thread-safe; getters copy out.
 *
 * A packed set is a sequence of records: the name, NUL, the value's length
 * as 4 bytes in host order, the value. An empty set is (NULL, 0).
 */
#ifndef CTRFS_XATTRS_H
#define CTRFS_XATTRS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/* The one name the engine keeps both ways: a GET's tar carries only it
 * (Docker 20.10 and 26 alike), though a PUT sets any name it is given. */
#define XATTRS_CAP "security.capability"

/* Walks a packed set: true and the record at *pos (then past it), false
 * at the end. */
bool xattrs_next(const char *pack, size_t len, size_t *pos, const char **name,
		 const void **value, size_t *vlen);

/* getxattr(2) on a packed set: the value's length (copied when size is
 * not 0), -ENODATA, or -ERANGE. */
ssize_t xattrs_value(const char *pack, size_t len, const char *name,
		     void *value, size_t size);

/* listxattr(2) on a packed set: the names' length, or -ERANGE. */
ssize_t xattrs_names(const char *pack, size_t len, char *list, size_t size);

/*
 * setxattr(2) (value not NULL; flags XATTR_CREATE, XATTR_REPLACE) or
 * removexattr(2) (value NULL) on the packed set *pack (malloc'd, replaced).
 * 0, -EEXIST, -ENODATA or -ENOMEM.
 */
int xattrs_edit(char **pack, size_t *len, const char *name, const void *value,
		size_t vlen, int flags);

struct xattrs;

struct xattrs *xattrs_new(size_t max_entries, size_t max_bytes);
void xattrs_free(struct xattrs *x);

/*
 * Records the set of path (pack, len: copied) as the tar header that said
 * st gave it; it holds while path's type, size and mtime second are those
 * of st. Past the budget an empty set is not recorded and anything else
 * drops the table first (it is only a cache).
 */
void xattrs_put(struct xattrs *x, const char *ns, const char *path,
		const struct stat *st, const char *pack, size_t len);

/* 0 and a malloc'd copy of the set of path (NULL, 0 when empty), or
 * -ENOENT when it is not known for a file that is as st says. */
int xattrs_get(struct xattrs *x, const char *ns, const char *path,
	       const struct stat *st, char **pack, size_t *len);

/* Number of sets recorded, for tests and debug logs. */
size_t xattrs_count(struct xattrs *x);

#endif
