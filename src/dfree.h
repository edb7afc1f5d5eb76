/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * dfree: the free space of a path in a container, asked of the container
 * (`stat -f` there) and kept for 2 s (docs/design.md, "Free space").
 */
#ifndef CTRFS_DFREE_H
#define CTRFS_DFREE_H

#include <sys/statvfs.h>

struct ctr;
struct engine;

/* Fills sv for inner in container c; leaves sv as it is (the caller's
 * "unknown") when the container cannot say. */
void dfree_get(struct engine *e, const struct ctr *c, const char *inner,
	       struct statvfs *sv);

#endif
