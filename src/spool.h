/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The spool: a private directory (mode 0700) on the host that holds the
 * data of files being written until they are committed. Spool files are
 * unlinked from the start (O_TMPFILE), so nothing is left behind even if
 * the daemon is killed.
 */
#ifndef CTRFS_SPOOL_H
#define CTRFS_SPOOL_H

struct spool;

/* Creates the directory under base ($TMPDIR, else /var/tmp, when NULL). */
int spool_new(const char *base, struct spool **out);
void spool_free(struct spool *s);
const char *spool_dir(const struct spool *s);

/* A new empty spool file: an fd, or -errno. */
int spool_file(struct spool *s);

#endif
