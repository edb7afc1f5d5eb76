/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the cache says of one path (struct cache_attr) and its flags: the
 * words of cache.h that every room of the cache uses (cache_node.c,
 * cache_links.c and cache_listing.c below cache.c among them), apart so
 * that using them is not a call into cache.c.
 */
#ifndef CTRFS_CACHE_ATTR_H
#define CTRFS_CACHE_ATTR_H

#include <stdbool.h>
#include <sys/stat.h>
#include <time.h>

#define CACHE_OWNER 1u /* uid, gid and nlink come from a tar header */
#define CACHE_LINK  2u /* the raw symlink target is known */
/* The entry's st_ino is shared with other names (a hard link) */
#define CACHE_SHARED_INO 8u
/* For cache_put() of ctrfs's own change of a directory's attributes: its
 * entries are as ctrfs left them, so its listing stays, as confirmed
 * before (a new mtime does not drop it). Not kept in the stored flags. */
#define CACHE_SAME_ENTRIES 4u
/* The attr's atime and ctime are what ctrfs set (utimens, a commit, a
 * change it made): stored as given, but a ctime never goes back. Without
 * it, no source has said them (HEAD, tar headers and find's stat carry
 * neither): the entry keeps the ones it has while the file is the same
 * (type, size, mtime), else the later of each and the new mtime. Not kept
 * in the stored flags. */
#define CACHE_TIMES 16u
/* The attr's link count is ctrfs's count of the names a tar holds (no
 * tar header says one), which the next names of the tar may raise: not a
 * change of the file's (cache_put() moves no ctime for it). Not kept in
 * the stored flags. */
#define CACHE_NLINK_COUNTED 32u

static inline bool timespec_before(const struct timespec *a,
				   const struct timespec *b)
{
	return a->tv_sec < b->tv_sec ||
	       (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

struct cache_attr {
	struct stat st;
	double validated; /* now_mono() of the last confirmation */
	unsigned flags;
};

#endif
