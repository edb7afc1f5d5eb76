/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metadata the tar of a GET brings: every entry's attributes, every
 * directory's listing and small files' contents, put in the cache of
 * struct meta (meta_int.h). Used by meta.c, which decides when a GET is
 * worth it; calls nothing of meta.c.
 */
#ifndef CTRFS_LOADER_H
#define CTRFS_LOADER_H

#include <stdbool.h>
#include <sys/types.h>

struct ctr;
struct meta;
struct tarstream;

/* One GET of dir: caches every entry of the subtree and the listing of
 * every directory in it.  With a cap (a probe), stops once the body passed
 * cap bytes or PROBE_ENTRIES entries: what was seen is cached, listings not
 * seen whole are not. With stop_big, stops the same way before a big file
 * (LIST_BIG_FILE). 0 or -errno; *whole (when not NULL): whether it read
 * all of it. */
int loader_tree(struct meta *m, struct ctr *c, const char *dir, off_t cap,
		bool stop_big, bool *whole);

/* The content of a small file whose header a probe read: the rest of its
 * tar, kept as a listing keeps contents, so that a `cat` or `cp` of a file
 * not listed yet costs one GET, not two. Kept only when the archive ends
 * right after it. t is the probe's, left open. */
void loader_keep_probed(struct meta *m, struct ctr *c, const char *path,
			struct tarstream *t, off_t size, long snapshot);

#endif
