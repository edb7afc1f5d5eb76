/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Directories listed or confirmed by exec: one `find ... -exec stat` in
 * the container in place of a tar too big to read or a HEAD per entry,
 * its answer put in the cache of struct meta (meta_int.h). Used by meta.c,
 * which decides when an exec is worth it; calls nothing of meta.c.
 */
#ifndef CTRFS_EXECLIST_H
#define CTRFS_EXECLIST_H

#include <stdbool.h>

struct ctr;
struct meta;

/* Whether c may be listed by exec: it runs, and has not been found to
 * lack find or stat. */
bool execlist_ok(struct meta *m, const struct ctr *c);

/* Remembers that c lacks find or stat (an exec's status 126 or 127); of
 * NO_EXEC_MAX such containers the oldest is forgotten. */
void execlist_no_tools(struct meta *m, const struct ctr *c);

/*
 * Lists dir by exec, for a listing that stopped before a big file:
 * `find DIR -mindepth 1 -maxdepth 1 -exec stat -c ... {} +` (busybox and
 * GNU alike) gives each child's type, mode, owner, size, mtime, link
 * count and device. Children the stopped GET has just cached (since)
 * stay as its tar said, contents included; a symlink's target is asked
 * when read. 0, or -errno (the caller then reads the whole tree), and
 * the tool's exit status in *status (126 or 127: no find or stat).
 */
int execlist_list(struct meta *m, struct ctr *c, const char *dir, double since,
		  int *status);

/*
 * Confirms what the cache holds below dir with one exec of find and stat
 * over its subtree (CONFIRM_*, confirm_worth() in meta_walk.c). Each entry is
 * judged as a HEAD's answer is (meta_revalidate() in meta_head.c): the same
 * type, size and mtime second, with the same owner known, confirms it;
 * anything else replaces it, owner included, and the content held for it
 * goes with the old attributes. Paths the cache does not hold are left out (a
 * listing brings them: their directory's mtime moved), and entries the exec
 * does not show stay stale: their next getattr asks, and a 404 drops them. A
 * line that does not parse (a name with a newline) is skipped the same way.
 */
int execlist_confirm(struct meta *m, struct ctr *c, const char *dir);

#endif
