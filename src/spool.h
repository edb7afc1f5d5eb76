/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The spool: a private directory (mode 0700) on the host that holds the
 * data of files being written until they are committed. Spool files are
 * unlinked from the start (O_TMPFILE), so a daemon that is killed leaves
 * only the empty directory, which the next spool_new() under the same base
 * removes (its name holds the pid, its open fd a lock that says in use).
 */
#ifndef CTRFS_SPOOL_H
#define CTRFS_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct spool;

/* Creates the directory under base ($TMPDIR, else /var/tmp, when NULL),
 * and with mem the memory spool's too (see spool_file_mem()). */
int spool_new(const char *base, bool mem, struct spool **out);
void spool_free(struct spool *s);
const char *spool_dir(const struct spool *s);
/* The memory spool's directory, or "" when there is none. */
const char *spool_mem_dir(const struct spool *s);

/* A new empty spool file: an fd, or -errno. */
int spool_file(struct spool *s);

/*
 * The same in memory: a file in a private directory on the tmpfs at
 * /dev/shm, made by spool_new() when there is one (else -ENOENT). Writing
 * it costs no disk writeback; its pages are the machine's memory, so the
 * caller bounds what it keeps there.
 */
int spool_file_mem(struct spool *s);

/* Copies all of from (its size from fstat) to the start of to: 0 or
 * -errno. */
int spool_copy(int to, int from);
/* Copies len bytes of from at off to to (at its offset): 0 or -errno
 * (-EIO when from ends before). */
int spool_copy_range(int to, int from, off_t off, off_t len);

/*
 * Keeps the data of fd, which could not be written to path in container
 * ctr, in BASE/ctrfs-rescue/CTR/PATH (a name taken gets .1, .2, ...),
 * synced to disk, and puts that path into out. BASE is the spool's base
 * directory; ctrfs-rescue there is used only if it is a directory owned
 * by this user and closed to others, else (and when an earlier copy holds
 * a name this one needs as a directory) a new BASE/ctrfs-rescue.XXXXXX.
 * 0 or -errno.
 */
int spool_rescue(struct spool *s, int fd, const char *ctr, const char *path,
		 char *out, size_t outlen);

#endif
